//! The HTML page: one self-contained file (inline SVG and CSS, no script, no font or network
//! access), a section per question — usage, time to admit, admissions, preemptions and
//! admission-check waits, fair sharing, policies — each chart with its numbers in a table
//! beneath it. With two runs: each section side by side, the time-to-admit distributions,
//! admissions and preemptions, and Jain's index also overlaid on the same axes (A solid, B
//! dashed), and the workloads whose fate differs.

use std::fmt::Write as _;

use super::charts::{ChartError, LineChart, StackedChart, line_chart, stacked_chart};
use super::diff::Difference;
use super::model::{MAX_POINTS, RunModel, Series};
use super::overlay;
use super::usage::{Borrowing, Stacked};
use super::waits::{Waits, quantile};

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

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:2000px;color:#111}\
h2{border-bottom:1px solid #999;margin-top:2em}.runs{display:flex;flex-wrap:wrap;gap:2em}\
.run{flex:1 1 760px;min-width:0}.overlay{max-width:960px}svg{max-width:100%;height:auto}figure{margin:1em 0}figcaption{font-weight:bold}\
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

/// A chart's `<svg>` in a figure, with its numbers in a table behind a disclosure.
fn figure(out: &mut String, title: &str, svg: &str, header: &[&str], rows: &[Vec<String>]) {
    let _ = write!(
        out,
        "<figure><figcaption>{}</figcaption>{svg}<details><summary>The numbers</summary>",
        escape(title)
    );
    table(out, title, header, rows);
    out.push_str("</details></figure>");
}

/// A line chart with its table.
pub(super) fn line_figure(
    out: &mut String,
    chart: &LineChart<'_>,
    header: &[&str],
    rows: &[Vec<String>],
) -> Result<(), ChartError> {
    let svg = line_chart(chart)?;
    figure(out, chart.title, &svg, header, rows);
    Ok(())
}

fn optional(x: Option<f64>) -> String {
    x.map_or_else(|| "none".to_string(), num)
}

/// The empirical distribution of each group's waits, as drawable series (steps: the share
/// admitted within `x` seconds holds until the next wait).
pub(super) fn cdf(waits: &[&Waits]) -> Vec<Series> {
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
                points: super::downsample::steps(&super::downsample::min_max(&points, MAX_POINTS)),
            }
        })
        .collect()
}

/// A step function as the line that draws it.
fn stepped(s: &Series) -> Series {
    Series {
        name: s.name.clone(),
        points: super::downsample::steps(&s.points),
    }
}

fn stacked_figure(out: &mut String, label: &str, s: &Stacked) -> Result<(), ChartError> {
    let shown = top_of(s.layers.len(), s.of, "peak");
    let title = format!(
        "{label}: usage of {} in {}, stacked per {}{shown}",
        s.resource, s.group, s.member
    );
    let y = format!("{} ({})", s.resource, s.unit);
    let svg = stacked_chart(&StackedChart {
        title: &title,
        x_label: "virtual time (s)",
        y_label: &y,
        times: &s.times,
        layers: &s.layers,
        references: &s.references,
    })?;
    let mut rows: Vec<Vec<String>> = s
        .rows
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                num(r.nominal),
                optional(r.borrowing_limit),
                num(r.peak),
            ]
        })
        .collect();
    rows.extend(
        s.references
            .iter()
            .map(|(name, v)| vec![name.clone(), num(*v), String::new(), String::new()]),
    );
    let unit = |what: &str| format!("{what} ({})", s.unit);
    figure(
        out,
        &title,
        &svg,
        &[
            s.member,
            &unit("nominal quota"),
            &unit("borrowing limit"),
            &unit("peak usage"),
        ],
        &rows,
    );
    Ok(())
}

fn borrowing_figure(out: &mut String, label: &str, b: &Borrowing) -> Result<(), ChartError> {
    let shown = if b.of > b.series.len() {
        format!(" (top {} of {} by peak)", b.series.len(), b.of)
    } else {
        String::new()
    };
    let title = format!(
        "{label}: {} borrowed beyond nominal quota, ClusterQueues of {}{shown}",
        b.resource, b.tree
    );
    let y = format!("borrowed {} ({})", b.resource, b.unit);
    let drawn: Vec<Series> = b.series.iter().map(stepped).collect();
    let references: Vec<(String, f64)> = b
        .limit
        .map(|l| ("borrowing limit".to_string(), l))
        .into_iter()
        .collect();
    let rows: Vec<Vec<String>> = b
        .rows
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                num(r.nominal),
                optional(r.borrowing_limit),
                num(r.peak_borrowed),
                num(r.at_limit),
            ]
        })
        .collect();
    let unit = |what: &str| format!("{what} ({})", b.unit);
    line_figure(
        out,
        &LineChart {
            title: &title,
            x_label: "virtual time (s)",
            y_label: &y,
            series: &drawn,
            references: &references,
            paired: false,
        },
        &[
            "ClusterQueue",
            &unit("nominal quota"),
            &unit("borrowing limit"),
            &unit("peak borrowed"),
            "at the limit (s)",
        ],
        &rows,
    )
}

fn usage_section(out: &mut String, run: &RunModel) -> Result<(), ChartError> {
    let u = &run.usage;
    if u.trees.is_empty() {
        out.push_str("<p>No quota was used.</p>");
        return Ok(());
    }
    for s in &u.overall {
        stacked_figure(out, &run.label, s)?;
    }
    if u.tree_count > super::usage::MAX_TREE_CHARTS {
        let _ = write!(
            out,
            "<p>Per ClusterQueue: the {} cohort trees (of {}) with the highest peaks of each \
             flavor/resource; every tree is in the chart above.</p>",
            super::usage::MAX_TREE_CHARTS,
            u.tree_count
        );
    }
    for s in &u.trees {
        stacked_figure(out, &run.label, s)?;
        if let Some(b) = u
            .borrowing
            .iter()
            .find(|b| b.tree == s.group && b.resource == s.resource)
        {
            borrowing_figure(out, &run.label, b)?;
        } else {
            let _ = write!(
                out,
                "<p>No ClusterQueue of {} borrowed {}.</p>",
                escape(&s.group),
                escape(&s.resource)
            );
        }
    }
    Ok(())
}

pub(super) fn waits_rows(waits: &[&Waits], run: Option<&str>) -> Vec<Vec<String>> {
    waits
        .iter()
        .map(|w| {
            let mut row = vec![w.name.clone()];
            row.extend(run.map(str::to_string));
            row.extend([
                w.seconds.len().to_string(),
                num(quantile(&w.seconds, 0.5)),
                num(quantile(&w.seconds, 0.9)),
                num(quantile(&w.seconds, 0.95)),
                num(w.seconds.last().copied().unwrap_or(f64::NAN)),
            ]);
            row
        })
        .collect()
}

pub(super) const WAIT_COLUMNS: [&str; 5] =
    ["workloads", "p50 (s)", "p90 (s)", "p95 (s)", "max (s)"];

fn waits_section(out: &mut String, run: &RunModel) -> Result<(), ChartError> {
    if run.waits.is_empty() {
        out.push_str("<p>No workload arrived.</p>");
        return Ok(());
    }
    for chart in &run.waits {
        let shown = top_of(chart.groups.len(), chart.of, "p95");
        let title = format!(
            "{}: wait by {}{shown} (time pending, censored at the end), cumulative",
            run.label, chart.by
        );
        let groups: Vec<&Waits> = chart.groups.iter().collect();
        let mut header = vec![chart.by];
        header.extend(WAIT_COLUMNS);
        line_figure(
            out,
            &LineChart {
                title: &title,
                x_label: "wait (s)",
                y_label: "share of admitted workloads",
                series: &cdf(&groups),
                references: &[],
                paired: false,
            },
            &header,
            &waits_rows(&groups, None),
        )?;
    }
    Ok(())
}

/// Cumulative counts over time (`paired`: two runs, A solid and B dashed), with each series'
/// total in the table.
pub(super) fn counts_figure(
    out: &mut String,
    title: &str,
    series: &[Series],
    paired: bool,
) -> Result<(), ChartError> {
    let rows: Vec<Vec<String>> = series
        .iter()
        .map(|s| {
            let total = s.points.last().map_or(0.0, |p| p.1);
            vec![s.name.clone(), format!("{total:.0}")]
        })
        .collect();
    line_figure(
        out,
        &LineChart {
            title,
            x_label: "virtual time (s)",
            y_label: "count so far",
            series,
            references: &[],
            paired,
        },
        &["event", "total"],
        &rows,
    )
}

/// What a title says when a chart draws only the top `kept - 1` of `of` (the last one pooling
/// the rest), ranked `by`; nothing when it draws them all.
fn top_of(kept: usize, of: usize, by: &str) -> String {
    if of > kept {
        format!(" (top {} of {of} by {by}, the rest together)", kept - 1)
    } else {
        String::new()
    }
}

fn timeline_section(out: &mut String, run: &RunModel) -> Result<(), ChartError> {
    let title = format!(
        "{}: admissions, preemptions (by reason) and admission-check waits over time",
        run.label
    );
    let mut series = vec![run.admissions.clone()];
    series.extend(run.preemptions.iter().cloned());
    series.extend(run.checks.as_ref().map(|c| c.begun.clone()));
    counts_figure(out, &title, &series, false)?;
    let Some(checks) = &run.checks else {
        out.push_str("<p>No workload waited for admission checks.</p>");
        return Ok(());
    };
    let title = format!(
        "{}: workloads waiting for their admission checks",
        run.label
    );
    let s = &checks.seconds;
    line_figure(
        out,
        &LineChart {
            title: &title,
            x_label: "virtual time (s)",
            y_label: "workloads waiting",
            series: &[stepped(&checks.waiting)],
            references: &[],
            paired: false,
        },
        &[
            "waits",
            "ended admitted",
            "ended otherwise",
            "still waiting",
            "p50 (s)",
            "p95 (s)",
            "max (s)",
        ],
        &[vec![
            (checks.admitted + checks.released + checks.open).to_string(),
            checks.admitted.to_string(),
            checks.released.to_string(),
            checks.open.to_string(),
            num(quantile(s, 0.5)),
            num(quantile(s, 0.95)),
            num(s.last().copied().unwrap_or(f64::NAN)),
        ]],
    )
}

fn fairness_section(out: &mut String, run: &RunModel) -> Result<(), ChartError> {
    if run.jain.is_empty() {
        out.push_str("<p>No ClusterQueue had demand.</p>");
        return Ok(());
    }
    for chart in &run.shares {
        let shown = if chart.of > chart.rows.len() {
            format!(", {} of {} furthest from it", chart.rows.len(), chart.of)
        } else {
            String::new()
        };
        let title = format!(
            "{}: share of the tree's {} (solid) vs weighted entitlement (dashed), per \
             ClusterQueue{shown}",
            run.label, chart.resource
        );
        let drawn: Vec<Series> = chart.series.iter().map(stepped).collect();
        let rows: Vec<Vec<String>> = chart
            .rows
            .iter()
            .map(|r| {
                vec![
                    r.name.clone(),
                    r.tree.clone(),
                    num(r.weight),
                    num(r.entitlement),
                    num(r.average),
                    num(r.peak),
                    optional(r.ratio),
                ]
            })
            .collect();
        line_figure(
            out,
            &LineChart {
                title: &title,
                x_label: "virtual time (s)",
                y_label: "fraction of the tree's nominal quota",
                series: &drawn,
                references: &[],
                paired: true,
            },
            &[
                "ClusterQueue",
                "cohort tree",
                "weight",
                "entitlement",
                "average share",
                "peak share",
                "average / entitlement",
            ],
            &rows,
        )?;
    }
    let title = format!(
        "{}: Jain's index of the ClusterQueues' shares over time (1 = equal)",
        run.label
    );
    line_figure(
        out,
        &LineChart {
            title: &title,
            x_label: "virtual time (s)",
            y_label: "Jain's index",
            series: &run.jain,
            references: &[],
            paired: false,
        },
        &["flavor/resource", "lowest", "at the end"],
        &jain_rows(&run.jain, None),
    )
}

pub(super) fn jain_rows(series: &[Series], run: Option<&str>) -> Vec<Vec<String>> {
    series
        .iter()
        .map(|s| {
            let min = s.points.iter().map(|p| p.1).fold(f64::NAN, f64::min);
            let last = s.points.last().map_or(f64::NAN, |p| p.1);
            let mut row = vec![s.name.clone()];
            row.extend(run.map(str::to_string));
            row.extend([num(min), num(last)]);
            row
        })
        .collect()
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

/// What a section draws of one run.
type Body = fn(&mut String, &RunModel) -> Result<(), ChartError>;

/// What a section draws of two runs on the same axes.
type Overlay = fn(&mut String, &RunModel, &RunModel) -> Result<(), ChartError>;

/// A section with one column per run, and with two runs what reads better overlaid.
fn section(
    out: &mut String,
    title: &str,
    runs: &[RunModel],
    body: Body,
    overlay: Option<Overlay>,
) -> Result<(), ChartError> {
    let _ = write!(out, "<section><h2>{}</h2>", escape(title));
    if let (Some(overlay), [a, b]) = (overlay, runs) {
        out.push_str("<div class=\"overlay\">");
        overlay(out, a, b)?;
        out.push_str("</div>");
    }
    out.push_str("<div class=\"runs\">");
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
    section(&mut out, "Usage over time", runs, usage_section, None)?;
    section(&mut out, "Waits", runs, waits_section, Some(overlay::waits))?;
    section(
        &mut out,
        "Admissions, preemptions and admission-check waits",
        runs,
        timeline_section,
        Some(overlay::timeline),
    )?;
    section(
        &mut out,
        "Fair sharing",
        runs,
        fairness_section,
        Some(overlay::fairness),
    )?;
    section(
        &mut out,
        "Which policies decided",
        runs,
        |out, run| {
            policies_section(out, run);
            Ok(())
        },
        None,
    )?;
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
