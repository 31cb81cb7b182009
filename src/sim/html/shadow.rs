//! The shadow policies of a run (`--shadow EXT=NAME`, or `QueuePolicy` objects in `Shadow`
//! mode): one row per shadow — its extension point, how many decisions it was asked, how many
//! agreed with what was enforced, differed, were refused as invalid, failed (the enforced side
//! would have fallen back), were skipped for the cycle's budget, and its agreement — then,
//! per shadow, the first differing decisions the report keeps: the workload, what was
//! enforced, what the shadow would have done.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::policy::shadow::{Figures, KEPT_DIFFERENCES};

use super::markup::{escape, table};

/// The columns of the table of shadows.
pub const COLUMNS: [&str; 9] = [
    "shadow",
    "extension point",
    "decisions",
    "agree",
    "differ",
    "invalid",
    "fallback",
    "skipped",
    "agreement",
];

/// `agree / decisions` as a percentage with one decimal; `—` before any decision.
pub fn agreement(agree: u64, decisions: u64) -> String {
    if decisions == 0 {
        return "—".to_string();
    }
    format!("{:.1}%", agree as f64 * 100.0 / decisions as f64)
}

/// One row of the table of shadows.
pub fn row(name: &str, f: &Figures) -> Vec<String> {
    let mut row = vec![name.to_string(), f.extension.to_string()];
    row.extend(
        [
            f.decisions,
            f.agree,
            f.differ,
            f.invalid,
            f.fallback,
            f.skipped,
        ]
        .map(|n| n.to_string()),
    );
    row.push(agreement(f.agree, f.decisions));
    row
}

/// The shadows of one run: `prefix` begins each table's caption (`A: ` side by side).
pub fn section(out: &mut String, prefix: &str, shadows: &BTreeMap<String, Figures>) {
    if shadows.is_empty() {
        let _ = write!(out, "<p>{}No shadow policy.</p>", escape(prefix));
        return;
    }
    out.push_str(
        "<p>Each shadow was asked the questions the enforced policy was asked, its answers \
         verified the same way and never acted on. Agreement: agree / decisions (a skipped \
         decision, past the cycle's shadow budget, is not one).</p>",
    );
    let rows: Vec<Vec<String>> = shadows.iter().map(|(name, f)| row(name, f)).collect();
    table(out, &format!("{prefix}Shadow policies"), &COLUMNS, &rows);
    for (name, f) in shadows.iter().filter(|(_, f)| !f.differences.is_empty()) {
        let listed = f.differences.len().min(KEPT_DIFFERENCES);
        let of = if f.differ > listed as u64 {
            format!(" (the first {listed} of {})", f.differ)
        } else {
            String::new()
        };
        let rows: Vec<Vec<String>> = f
            .differences
            .iter()
            .take(KEPT_DIFFERENCES)
            .map(|d| vec![d.workload.clone(), d.enforced.clone(), d.shadow.clone()])
            .collect();
        out.push_str("<div class=\"decisions\">");
        table(
            out,
            &format!("{prefix}{name}: where it differs from the enforced policy{of}"),
            &["workload", "enforced", &format!("{name} would have")],
            &rows,
        );
        out.push_str("</div>");
    }
}
