//! The HTML page: one self-contained file (inline SVG and CSS, no script, no font or network
//! access), a section per question — usage, time to admit, admissions and preemptions, fair
//! sharing, policies — each chart with its numbers in a table beneath it, and with two runs
//! the workloads whose fate differs.

use std::fmt::Write as _;

use super::charts::{ChartError, LineChart, line_chart};
use super::diff::Difference;
use super::model::{RunModel, Series, Waits};

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

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:1600px;color:#111}\
h2{border-bottom:1px solid #999;margin-top:2em}.runs{display:flex;flex-wrap:wrap;gap:2em}\
.run{flex:1 1 760px}figure{margin:1em 0}figcaption{font-weight:bold}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:2px 8px;\
text-align:right}td:first-child,th:first-child{text-align:left}";

/// A value for a table cell, rounded for reading.
fn num(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

/// A table: a header row and rows of cells (escaped here).
fn table(out: &mut String, caption: &str, header: &[&str], rows: &[Vec<String>]) {
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

/// A chart with its numbers behind a disclosure.
fn figure(
    out: &mut String,
    chart: &LineChart<'_>,
    header: &[&str],
    rows: &[Vec<String>],
) -> Result<(), ChartError> {
    let svg = line_chart(chart)?;
    let _ = write!(
        out,
        "<figure><figcaption>{}</figcaption>{svg}<details><summary>The numbers</summary>",
        escape(chart.title)
    );
    table(out, chart.title, header, rows);
    out.push_str("</details></figure>");
    Ok(())
}

/// Per series: its largest value and its value at the end.
fn extremes(series: &[Series]) -> Vec<Vec<String>> {
    series
        .iter()
        .map(|s| {
            let max = s.points.iter().map(|p| p.1).fold(f64::NAN, f64::max);
            let last = s.points.last().map_or(f64::NAN, |p| p.1);
            vec![s.name.clone(), num(max), num(last)]
        })
        .collect()
}

/// The quantile `q` of sorted values (nearest rank).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The empirical distribution of each class's waits, as drawable series.
fn cdf(waits: &[Waits]) -> Vec<Series> {
    waits
        .iter()
        .map(|w| {
            let n = w.seconds.len() as f64;
            let points: Vec<(f64, f64)> = w
                .seconds
                .iter()
                .enumerate()
                .map(|(k, &s)| (s, (k + 1) as f64 / n))
                .collect();
            Series {
                name: w.name.clone(),
                points: super::downsample::min_max(&points, super::model::MAX_POINTS),
            }
        })
        .collect()
}

fn usage_section(out: &mut String, run: &RunModel) -> Result<(), ChartError> {
    if run.usage.is_empty() {
        out.push_str("<p>No quota was used.</p>");
    }
    for u in &run.usage {
        let shown = if u.of > u.groups.len() {
            format!(
                " (the {} of {} with the highest peaks)",
                u.groups.len(),
                u.of
            )
        } else {
            String::new()
        };
        let title = format!(
            "{}: usage of {} {}{shown}, against nominal quota",
            run.label, u.resource, run.grouping
        );
        let y = format!("{} ({})", u.resource, u.unit);
        let drawn: Vec<Series> = u
            .groups
            .iter()
            .chain(std::iter::once(&u.total))
            .map(|s| Series {
                name: s.name.clone(),
                points: super::downsample::steps(&s.points),
            })
            .collect();
        figure(
            out,
            &LineChart {
                title: &title,
                x_label: "virtual time (s)",
                y_label: &y,
                series: &drawn,
                reference: Some(("nominal quota, all together", u.nominal)),
            },
            &["group", &format!("peak ({})", u.unit), "at the end"],
            &extremes(&drawn),
        )?;
    }
    Ok(())
}

fn waits_section(out: &mut String, run: &RunModel) -> Result<(), ChartError> {
    if run.waits.is_empty() {
        out.push_str("<p>Nothing was admitted.</p>");
        return Ok(());
    }
    let title = format!(
        "{}: time to admit by {} (cumulative share)",
        run.label, run.waits_by
    );
    let rows: Vec<Vec<String>> = run
        .waits
        .iter()
        .map(|w| {
            vec![
                w.name.clone(),
                w.seconds.len().to_string(),
                num(quantile(&w.seconds, 0.5)),
                num(quantile(&w.seconds, 0.9)),
                num(quantile(&w.seconds, 0.95)),
                num(w.seconds.last().copied().unwrap_or(f64::NAN)),
            ]
        })
        .collect();
    figure(
        out,
        &LineChart {
            title: &title,
            x_label: "time to admit (s)",
            y_label: "share of admitted workloads",
            series: &cdf(&run.waits),
            reference: None,
        },
        &[
            run.waits_by,
            "admitted",
            "p50 (s)",
            "p90 (s)",
            "p95 (s)",
            "max (s)",
        ],
        &rows,
    )
}

fn timeline_section(out: &mut String, run: &RunModel) -> Result<(), ChartError> {
    let title = format!(
        "{}: admissions and preemptions (by reason) over time",
        run.label
    );
    let mut series = vec![run.admissions.clone()];
    series.extend(run.preemptions.iter().cloned());
    let rows: Vec<Vec<String>> = series
        .iter()
        .map(|s| {
            let total = s.points.last().map_or(0.0, |p| p.1);
            vec![s.name.clone(), format!("{total:.0}")]
        })
        .collect();
    figure(
        out,
        &LineChart {
            title: &title,
            x_label: "virtual time (s)",
            y_label: "count so far",
            series: &series,
            reference: None,
        },
        &["event", "total"],
        &rows,
    )
}

fn fairness_section(out: &mut String, run: &RunModel) -> Result<(), ChartError> {
    if run.jain.is_empty() {
        out.push_str("<p>No ClusterQueue had demand.</p>");
        return Ok(());
    }
    let title = format!(
        "{}: Jain's index of the ClusterQueues' shares over time (1 = equal)",
        run.label
    );
    let rows: Vec<Vec<String>> = run
        .jain
        .iter()
        .map(|s| {
            let min = s.points.iter().map(|p| p.1).fold(f64::NAN, f64::min);
            let last = s.points.last().map_or(f64::NAN, |p| p.1);
            vec![s.name.clone(), num(min), num(last)]
        })
        .collect();
    figure(
        out,
        &LineChart {
            title: &title,
            x_label: "virtual time (s)",
            y_label: "Jain's index",
            series: &run.jain,
            reference: None,
        },
        &["flavor/resource", "lowest", "at the end"],
        &rows,
    )
}

fn policies_section(out: &mut String, run: &RunModel) {
    let rows: Vec<Vec<String>> = run
        .policies
        .iter()
        .map(|p| {
            vec![
                p.plugin.clone(),
                p.kind.clone(),
                p.digest.clone(),
                p.calls.to_string(),
                p.failures.to_string(),
                if p.quarantined { "yes" } else { "no" }.to_string(),
            ]
        })
        .collect();
    if rows.is_empty() {
        let _ = write!(
            out,
            "<p>{}: the built-in (Kueue's) policies decided everything.</p>",
            escape(&run.label)
        );
    } else {
        table(
            out,
            &format!("{}: plugins", run.label),
            &[
                "plugin",
                "extension point",
                "digest",
                "calls",
                "failures",
                "quarantined",
            ],
            &rows,
        );
    }
    let rows: Vec<Vec<String>> = run
        .fallbacks
        .iter()
        .map(|f| {
            vec![
                f.extension.clone(),
                f.plugin.clone(),
                f.reason.clone(),
                f.count.to_string(),
            ]
        })
        .collect();
    if !rows.is_empty() {
        table(
            out,
            &format!("{}: fallbacks to the built-in", run.label),
            &["extension point", "plugin", "reason", "count"],
            &rows,
        );
    }
}

/// A section with one column per run.
fn section(
    out: &mut String,
    title: &str,
    runs: &[RunModel],
    body: impl Fn(&mut String, &RunModel) -> Result<(), ChartError>,
) -> Result<(), ChartError> {
    let _ = write!(
        out,
        "<section><h2>{}</h2><div class=\"runs\">",
        escape(title)
    );
    for run in runs {
        out.push_str("<div class=\"run\">");
        body(out, run)?;
        out.push_str("</div>");
    }
    out.push_str("</div></section>");
    Ok(())
}

/// The whole page for one run, or two compared (with the workloads whose fate differs).
pub fn render(runs: &[RunModel], differences: Option<&[Difference]>) -> Result<String, ChartError> {
    let mut out = String::new();
    let title = match runs {
        [a, b] => format!("wasq simulation: {} vs {}", a.label, b.label),
        _ => "wasq simulation".to_string(),
    };
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{0}</title>\
         <style>{STYLE}</style></head><body><h1>{0}</h1>",
        escape(&title)
    );
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            vec![
                r.label.clone(),
                num(r.duration),
                format!("{:.0}", r.admissions.points.last().map_or(0.0, |p| p.1)),
            ]
        })
        .collect();
    table(
        &mut out,
        "Runs",
        &["run", "virtual seconds", "admissions"],
        &rows,
    );
    section(&mut out, "Usage over time", runs, usage_section)?;
    section(&mut out, "Time to admit", runs, waits_section)?;
    section(
        &mut out,
        "Admissions and preemptions",
        runs,
        timeline_section,
    )?;
    section(&mut out, "Fair sharing", runs, fairness_section)?;
    section(&mut out, "Which policies decided", runs, |out, run| {
        policies_section(out, run);
        Ok(())
    })?;
    if let Some(diffs) = differences {
        out.push_str("<section><h2>Workloads whose fate differs</h2>");
        if diffs.is_empty() {
            out.push_str("<p>None: every workload ended the same way in both runs.</p>");
        } else {
            let rows: Vec<Vec<String>> = diffs
                .iter()
                .map(|d| vec![d.workload.clone(), d.a.clone(), d.b.clone()])
                .collect();
            let (a, b) = (&runs[0].label, &runs[1].label);
            table(
                &mut out,
                &format!("{} workload(s)", diffs.len()),
                &["workload", a, b],
                &rows,
            );
        }
        out.push_str("</section>");
    }
    out.push_str("</body></html>\n");
    Ok(out)
}
