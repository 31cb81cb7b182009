//! The page's HTML pieces: escaping, numbers for reading, tables (a caption, a header row, the
//! cells escaped) and figures (a chart's `<svg>` under its caption, its numbers in a table
//! behind a disclosure).

use std::fmt::Write as _;

use super::charts::{ChartError, LineChart, line_chart};

/// `s` with HTML's special characters escaped.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A value for a table cell, rounded for reading.
pub fn num(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

/// A value that may be missing.
pub fn optional(x: Option<f64>) -> String {
    x.map_or_else(|| "none".to_string(), num)
}

/// A table: a header row and rows of cells (escaped here).
pub fn table(out: &mut String, caption: &str, header: &[&str], rows: &[Vec<String>]) {
    let _ = write!(out, "<table><caption>{}</caption><tr>", escape(caption));
    for h in header {
        let _ = write!(out, "<th scope=\"col\">{}</th>", escape(h));
    }
    out.push_str("</tr>");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{}</td>", escape(cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}

/// A chart's `<svg>` in a figure under its caption, with its numbers in a table behind a
/// disclosure.
pub fn figure(out: &mut String, title: &str, svg: &str, header: &[&str], rows: &[Vec<String>]) {
    let _ = write!(
        out,
        "<figure><figcaption>{}</figcaption>{svg}<details><summary>The numbers</summary>",
        escape(title)
    );
    table(out, title, header, rows);
    out.push_str("</details></figure>");
}

/// A line chart with its table.
pub fn line_figure(
    out: &mut String,
    chart: &LineChart<'_>,
    header: &[&str],
    rows: &[Vec<String>],
) -> Result<(), ChartError> {
    let svg = line_chart(chart)?;
    figure(out, chart.title, &svg, header, rows);
    Ok(())
}

/// What a title says when a chart draws only the top `kept - 1` of `of` (the last one pooling
/// the rest), ranked `by`; nothing when it draws them all.
pub fn top_of(kept: usize, of: usize, by: &str) -> String {
    if of > kept {
        format!(" (top {} of {of} by {by}, the rest together)", kept - 1)
    } else {
        String::new()
    }
}
