//! The headline: what a reader asks first, one row per ClusterQueue (and one for all of them
//! together) — admitted, pending at the end, never admitted, the mean and p95 wait (everyone
//! who arrived counted, a workload still pending with its wait so far: the report's summary),
//! workloads preempted, usage as % of nominal quota averaged over time, and the peak borrowed
//! beyond nominal quota, per flavor/resource. With two runs, one table of both side by side
//! with the difference B − A of each figure.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::sim::report::{Report, mean, p95};

use super::axis::duration;
use super::markup::{escape, num};
use super::usage::QueueUsage;

/// What a column holds, and so how it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Count,
    /// Seconds, read as a length of time.
    Seconds,
    Percent,
    /// An amount of a resource.
    Amount,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// A ClusterQueue, or [`ALL`].
    pub name: String,
    /// One per column; `None` where the figure does not apply.
    pub values: Vec<Option<f64>>,
}

/// The first row's name.
pub const ALL: &str = "all ClusterQueues";

/// The headline table of one run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Headline {
    pub columns: Vec<Column>,
    /// [`ALL`] first, then every ClusterQueue by name.
    pub rows: Vec<Row>,
}

impl Headline {
    /// The value of `column` in the row of `name`.
    pub fn value(&self, name: &str, column: &str) -> Option<f64> {
        let c = self.columns.iter().position(|c| c.name == column)?;
        self.rows.iter().find(|r| r.name == name)?.values[c]
    }
}

fn column(name: impl Into<String>, kind: Kind) -> Column {
    Column {
        name: name.into(),
        kind,
    }
}

/// The headline of `report`, with the peak borrowed of `queues` (from the usage log).
pub fn build(report: &Report, queues: &[QueueUsage]) -> Headline {
    let summary = &report.summary.cluster_queues;
    let resources: BTreeSet<&str> = summary
        .values()
        .flat_map(|q| q.usage_percent.keys().map(String::as_str))
        .chain(queues.iter().map(|q| q.resource.as_str()))
        .collect();
    let unit = |fr: &str| queues.iter().find(|q| q.resource == fr).map(|q| q.unit);
    let mut columns = vec![
        column("admitted", Kind::Count),
        column("pending at end", Kind::Count),
        column("never admitted", Kind::Count),
        column("mean wait", Kind::Seconds),
        column("p95 wait", Kind::Seconds),
        column("preempted", Kind::Count),
    ];
    for fr in &resources {
        columns.push(column(
            format!("usage % of nominal, time-averaged: {fr}"),
            Kind::Percent,
        ));
    }
    for fr in &resources {
        let unit = unit(fr).map_or_else(String::new, |u| format!(" ({u})"));
        columns.push(column(format!("peak borrowed: {fr}{unit}"), Kind::Amount));
    }
    // Per ClusterQueue and flavor/resource: (nominal quota, peak borrowed).
    let quota: BTreeMap<(&str, &str), (f64, f64)> = queues
        .iter()
        .map(|q| {
            (
                (q.name.as_str(), q.resource.as_str()),
                (q.nominal, q.peak_borrowed),
            )
        })
        .collect();
    let mut rows: Vec<Row> = summary
        .iter()
        .map(|(cq, q)| {
            let mut values = vec![
                Some(q.admitted as f64),
                Some(q.pending_at_end as f64),
                Some(q.never_admitted as f64),
                q.mean_wait_seconds,
                q.p95_wait_seconds,
                Some(q.preemptions as f64),
            ];
            values.extend(resources.iter().map(|fr| q.usage_percent.get(*fr).copied()));
            values.extend(
                resources
                    .iter()
                    .map(|fr| quota.get(&(cq.as_str(), *fr)).map(|q| q.1)),
            );
            Row {
                name: cq.clone(),
                values,
            }
        })
        .collect();
    let sum = |f: fn(&crate::sim::report::QueueSummary) -> u64| {
        Some(summary.values().map(f).sum::<u64>() as f64)
    };
    let mut waits: Vec<f64> = report
        .workloads
        .iter()
        .filter(|w| w.cluster_queue.is_some())
        .filter_map(|w| w.wait_seconds)
        .collect();
    let mut all = vec![
        sum(|q| q.admitted),
        sum(|q| q.pending_at_end),
        sum(|q| q.never_admitted),
        mean(&waits),
        p95(&mut waits),
        sum(|q| q.preemptions),
    ];
    // Usage of every ClusterQueue together: their percentages weighted by nominal quota.
    all.extend(resources.iter().map(|fr| {
        let (mut used, mut nominal) = (0.0, 0.0);
        for (cq, q) in summary {
            if let (Some(pct), Some((n, _))) = (q.usage_percent.get(*fr), quota.get(&(cq, fr))) {
                used += pct * n;
                nominal += n;
            }
        }
        (nominal > 0.0).then(|| used / nominal)
    }));
    all.extend(resources.iter().map(|_| None));
    rows.insert(
        0,
        Row {
            name: ALL.to_string(),
            values: all,
        },
    );
    Headline { columns, rows }
}

/// A figure as it reads.
fn shown(kind: Kind, v: Option<f64>) -> String {
    match (kind, v) {
        (_, None) => "–".to_string(),
        (Kind::Count, Some(x)) => format!("{x:.0}"),
        (Kind::Seconds, Some(x)) => duration(x),
        (Kind::Percent, Some(x)) => format!("{x:.1}%"),
        (Kind::Amount, Some(x)) => num(x),
    }
}

/// A difference as it reads: signed, `0` when there is none.
fn delta(kind: Kind, a: Option<f64>, b: Option<f64>) -> String {
    let (Some(a), Some(b)) = (a, b) else {
        return "–".to_string();
    };
    let d = b - a;
    if d.abs() < 1e-9 {
        return "0".to_string();
    }
    let text = shown(kind, Some(d.abs()));
    format!("{}{text}", if d > 0.0 { "+" } else { "−" })
}

/// The opening of a headline table: its caption and a scrolling frame when it is long.
fn open(out: &mut String, caption: &str) {
    let _ = write!(
        out,
        "<div class=\"headline\" tabindex=\"0\"><table><caption>{}</caption>",
        escape(caption)
    );
}

/// What the headline's figures mean.
const MEANING: &str = "Waits count every workload that arrived, one still pending with its \
                       wait so far; usage is averaged over the run; peak borrowed is the most \
                       held beyond nominal quota at once.";

/// The headline table of one run.
pub fn single(out: &mut String, h: &Headline) {
    open(out, MEANING);
    out.push_str("<tr><th scope=\"col\">ClusterQueue</th>");
    for c in &h.columns {
        let _ = write!(out, "<th scope=\"col\">{}</th>", escape(&c.name));
    }
    out.push_str("</tr>");
    for r in &h.rows {
        let _ = write!(out, "<tr><th scope=\"row\">{}</th>", escape(&r.name));
        for (c, v) in h.columns.iter().zip(&r.values) {
            let _ = write!(out, "<td>{}</td>", escape(&shown(c.kind, *v)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table></div>");
}

/// The headline tables of runs `a` and `b` side by side: per figure A, B and B − A.
pub fn compared(out: &mut String, a: &Headline, b: &Headline, labels: (&str, &str)) {
    open(
        out,
        &format!(
            "{} and {}, and the difference B − A. {MEANING}",
            labels.0, labels.1
        ),
    );
    out.push_str("<tr><th scope=\"col\" rowspan=\"2\">ClusterQueue</th>");
    for c in &a.columns {
        let _ = write!(
            out,
            "<th scope=\"colgroup\" colspan=\"3\">{}</th>",
            escape(&c.name)
        );
    }
    out.push_str("</tr><tr>");
    for _ in &a.columns {
        out.push_str(
            "<th scope=\"col\" class=\"run\">A</th><th scope=\"col\" class=\"run\">B</th>\
             <th scope=\"col\" class=\"run\">B − A</th>",
        );
    }
    out.push_str("</tr>");
    for r in &a.rows {
        let _ = write!(out, "<tr><th scope=\"row\">{}</th>", escape(&r.name));
        for (c, va) in a.columns.iter().zip(&r.values) {
            let vb = b.value(&r.name, &c.name);
            let _ = write!(
                out,
                "<td>{}</td><td>{}</td><td class=\"delta\">{}</td>",
                escape(&shown(c.kind, *va)),
                escape(&shown(c.kind, vb)),
                escape(&delta(c.kind, *va, vb))
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</table></div>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_read_signed_in_the_columns_unit() {
        assert_eq!(delta(Kind::Seconds, Some(0.0), Some(1200.0)), "+20m");
        assert_eq!(delta(Kind::Count, Some(5.0), Some(3.0)), "−2");
        assert_eq!(delta(Kind::Percent, Some(50.0), Some(50.0)), "0");
        assert_eq!(delta(Kind::Amount, None, Some(1.0)), "–");
        assert_eq!(shown(Kind::Percent, Some(85.25)), "85.2%");
    }
}
