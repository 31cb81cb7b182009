//! The HTML page: one self-contained file (inline SVG and CSS, no script, no font or network
//! access). It opens with the headline table ([`super::headline`]), then a section per
//! question — backlog, usage, waits, admissions and preemptions, fair sharing, policies — each
//! chart with its numbers in a table beneath it; the shadow policies, when a run has any, come
//! right after the headline. With two runs, what differs comes first: the headline tables side
//! by side with their differences (then each run's shadows), the workloads whose fate differs,
//! then some charts of both runs overlaid (A solid, B dashed), then each section side by side.

use std::fmt::Write as _;

use super::charts::{ChartError, Line, LineChart, Reference, StackedChart, stacked_chart};
use super::diff::Difference;
use super::markup::{escape, figure, line_figure, num, optional, table, top_of};
use super::model::{MAX_POINTS, RunModel, Series};
use super::overlay;
use super::stack::Stacked;
use super::usage::OwnQuota;
use super::waits::{Waits, quantile};

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:2000px;color:#111}\
h2{border-bottom:1px solid #999;margin-top:2em}.runs{display:flex;flex-wrap:wrap;gap:2em}\
.run{flex:1 1 760px;min-width:0}.overlay{max-width:960px}svg{max-width:100%;height:auto}\
figure{margin:1em 0}figcaption{font-weight:bold}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:2px 8px;\
text-align:right}td:first-child,th:first-child{text-align:left}th{background:#f2f2f2}\
.headline{max-height:36em;overflow:auto}.headline td.delta{background:#f7f7f7}\
.headline td,.headline th.run,.headline th[scope=row]{white-space:nowrap}\
.decisions td,.decisions th{text-align:left}";

/// One run as a section draws it: its figures' titles begin with `prefix` (nothing for a
/// single run; `A: `, `B: ` side by side).
pub(super) struct Run<'a> {
    pub model: &'a RunModel,
    pub prefix: String,
}

impl Run<'_> {
    fn title(&self, what: &str) -> String {
        format!("{}{what}", self.prefix)
    }
}

/// The first word of a run's label (`A`, `B`).
pub(super) fn short(label: &str) -> &str {
    label.split_whitespace().next().unwrap_or(label)
}

/// The empirical distribution of each group's waits: the share of workloads that waited at
/// most `x` seconds.
pub(super) fn cdf(waits: &[&Waits]) -> Vec<Series> {
    waits
        .iter()
        .map(|w| {
            let n = w.seconds.len() as f64;
            let mut points = vec![(0.0, 0.0)];
            points.extend(
                w.seconds
                    .iter()
                    .enumerate()
                    .map(|(k, &s)| (s, (k + 1) as f64 / n)),
            );
            Series {
                name: w.name.clone(),
                points: super::downsample::min_max(&points, MAX_POINTS),
                colour: w.colour,
            }
        })
        .collect()
}

fn stacked_figure(out: &mut String, run: &Run<'_>, s: &Stacked) -> Result<(), ChartError> {
    let shown = top_of(s.layers.len(), s.of, "peak");
    let title = run.title(&format!(
        "Usage of {} in {}, stacked per {}{shown}, against the nominal quota",
        s.resource, s.group, s.member
    ));
    let y = format!("{} ({})", s.resource, s.unit);
    let svg = stacked_chart(&StackedChart {
        title: &title,
        x_label: "virtual time",
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
            .map(|r| vec![r.name.clone(), num(r.value), String::new(), String::new()]),
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

fn own_quota_figure(out: &mut String, run: &Run<'_>, q: &OwnQuota) -> Result<(), ChartError> {
    let drawn = q.rows.len();
    let shown = if q.of > drawn {
        format!(" (top {drawn} of {} by peak against it)", q.of)
    } else {
        String::new()
    };
    let title = run.title(&format!(
        "Usage of {} per ClusterQueue of {}, against its own nominal quota{shown}",
        q.resource, q.tree
    ));
    let y = format!("{} ({})", q.resource, q.unit);
    let rows: Vec<Vec<String>> = q
        .rows
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                num(r.nominal),
                optional(r.borrowing_limit),
                num(r.peak),
                num(r.peak_borrowed),
                super::axis::duration(r.at_limit),
            ]
        })
        .collect();
    let unit = |what: &str| format!("{what} ({})", q.unit);
    line_figure(
        out,
        &LineChart {
            title: &title,
            x_label: "virtual time",
            y_label: &y,
            series: &q.series,
            references: &q.references,
            paired: q.paired,
        },
        &[
            "ClusterQueue",
            &unit("nominal quota"),
            &unit("borrowing limit"),
            &unit("peak usage"),
            &unit("peak borrowed"),
            "time at the borrowing limit",
        ],
        &rows,
    )
}

fn usage_section(out: &mut String, run: &Run<'_>) -> Result<(), ChartError> {
    let u = &run.model.usage;
    if u.trees.is_empty() {
        out.push_str("<p>No quota was used.</p>");
        return Ok(());
    }
    for s in &u.overall {
        stacked_figure(out, run, s)?;
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
    for (s, own) in u.trees.iter().zip(&u.own) {
        stacked_figure(out, run, s)?;
        own_quota_figure(out, run, own)?;
    }
    Ok(())
}

fn backlog_section(out: &mut String, run: &Run<'_>) -> Result<(), ChartError> {
    let b = &run.model.backlog;
    let Some(s) = &b.stacked else {
        out.push_str("<p>No workload was pending: each was admitted as it arrived.</p>");
        return Ok(());
    };
    let title = run.title(&format!(
        "Pending workloads, stacked per ClusterQueue{}",
        top_of(s.layers.len(), s.of, "peak")
    ));
    let svg = stacked_chart(&StackedChart {
        title: &title,
        x_label: "virtual time",
        y_label: "pending workloads",
        times: &s.times,
        layers: &s.layers,
        references: &[],
    })?;
    let rows: Vec<Vec<String>> = b
        .rows
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                format!("{:.0}", r.peak),
                num(r.average),
                format!("{:.0}", r.at_end),
            ]
        })
        .collect();
    figure(
        out,
        &title,
        &svg,
        &["ClusterQueue", "peak", "time-averaged", "at the end"],
        &rows,
    );
    Ok(())
}

pub(super) fn waits_rows(waits: &[&Waits], run: Option<&str>) -> Vec<Vec<String>> {
    let time = super::axis::duration;
    waits
        .iter()
        .map(|w| {
            let mut row = vec![w.name.clone()];
            row.extend(run.map(str::to_string));
            row.extend([
                w.seconds.len().to_string(),
                time(quantile(&w.seconds, 0.5)),
                time(quantile(&w.seconds, 0.9)),
                time(quantile(&w.seconds, 0.95)),
                time(w.seconds.last().copied().unwrap_or(f64::NAN)),
            ]);
            row
        })
        .collect()
}

pub(super) const WAIT_COLUMNS: [&str; 5] = ["workloads", "p50", "p90", "p95", "max"];

/// The y axis of a distribution of waits.
pub(super) const WAIT_SHARE: &str = "share of workloads that waited at most";

fn waits_section(out: &mut String, run: &Run<'_>) -> Result<(), ChartError> {
    if run.model.waits.is_empty() {
        out.push_str("<p>No workload arrived.</p>");
        return Ok(());
    }
    for chart in &run.model.waits {
        let shown = top_of(chart.groups.len(), chart.of, "p95");
        let title = run.title(&format!(
            "Wait by {}{shown} (time pending, censored at the end), cumulative",
            chart.by
        ));
        let groups: Vec<&Waits> = chart.groups.iter().collect();
        let mut header = vec![chart.by];
        header.extend(WAIT_COLUMNS);
        line_figure(
            out,
            &LineChart {
                title: &title,
                x_label: "wait",
                y_label: WAIT_SHARE,
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

/// Cumulative counts over time, `y` of them (`paired`: two runs, A solid and B dashed), with
/// each series' total in the table.
pub(super) fn counts_figure(
    out: &mut String,
    title: &str,
    y: &str,
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
            x_label: "virtual time",
            y_label: y,
            series,
            references: &[],
            paired,
        },
        &["series", "at the end"],
        &rows,
    )
}

fn timeline_section(out: &mut String, run: &Run<'_>) -> Result<(), ChartError> {
    let m = run.model;
    counts_figure(
        out,
        &run.title("Admissions so far"),
        "admissions",
        std::slice::from_ref(&m.admissions),
        false,
    )?;
    if m.preemptions.is_empty() {
        out.push_str("<p>No workload was preempted.</p>");
    } else {
        counts_figure(
            out,
            &run.title("Preemptions so far, by reason"),
            "workloads preempted",
            &m.preemptions,
            false,
        )?;
    }
    let Some(checks) = &m.checks else {
        out.push_str("<p>No workload waited for admission checks.</p>");
        return Ok(());
    };
    let title = run.title("Workloads waiting for their admission checks, and waits begun so far");
    let s = &checks.seconds;
    let time = super::axis::duration;
    line_figure(
        out,
        &LineChart {
            title: &title,
            x_label: "virtual time",
            y_label: "workloads",
            series: &[checks.waiting.clone(), checks.begun.clone()],
            references: &[],
            paired: false,
        },
        &[
            "waits",
            "ended admitted",
            "ended otherwise",
            "still waiting",
            "p50",
            "p95",
            "max",
        ],
        &[vec![
            (checks.admitted + checks.released + checks.open).to_string(),
            checks.admitted.to_string(),
            checks.released.to_string(),
            checks.open.to_string(),
            time(quantile(s, 0.5)),
            time(quantile(s, 0.95)),
            time(s.last().copied().unwrap_or(f64::NAN)),
        ]],
    )
}

fn fairness_section(out: &mut String, run: &Run<'_>) -> Result<(), ChartError> {
    let m = run.model;
    if m.jain.is_empty() {
        out.push_str("<p>No ClusterQueue had demand.</p>");
        return Ok(());
    }
    for chart in &m.shares {
        let shown = if chart.of > chart.rows.len() {
            format!(", {} of {} furthest from it", chart.rows.len(), chart.of)
        } else {
            String::new()
        };
        let title = run.title(&format!(
            "Share of the tree's {} (solid) vs weighted entitlement (dashed), per \
             ClusterQueue{shown}",
            chart.resource
        ));
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
                x_label: "virtual time",
                y_label: "fraction of the tree's nominal quota",
                series: &chart.series,
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
    line_figure(
        out,
        &LineChart {
            title: &run.title("Jain's index of the ClusterQueues' shares over time (1 = equal)"),
            x_label: "virtual time",
            y_label: "Jain's index",
            series: &m.jain,
            references: &[Reference::new("equal shares", 1.0, Line::Dotted)],
            paired: false,
        },
        &["flavor/resource", "lowest", "at the end"],
        &jain_rows(&m.jain, None),
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

fn policies_section(out: &mut String, run: &Run<'_>) -> Result<(), ChartError> {
    let m = run.model;
    let rows: Vec<Vec<String>> = m
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
            "<p>{}The built-in (Kueue's) policies decided everything.</p>",
            escape(&run.prefix)
        );
    } else {
        table(
            out,
            &run.title("Plugins"),
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
    let rows: Vec<Vec<String>> = m
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
            &run.title("Fallbacks to the built-in"),
            &["extension point", "plugin", "reason", "count"],
            &rows,
        );
    }
    Ok(())
}

/// What a section draws of one run.
type Body = fn(&mut String, &Run<'_>) -> Result<(), ChartError>;

/// The sections, in page order.
const SECTIONS: [(&str, Body); 6] = [
    ("Backlog", backlog_section),
    ("Usage over time", usage_section),
    ("Waits", waits_section),
    ("Admissions and preemptions", timeline_section),
    ("Fair sharing", fairness_section),
    ("Which policies decided", policies_section),
];

/// A section with one column per run (headed by its label when there are two).
fn section(out: &mut String, title: &str, runs: &[Run<'_>], body: Body) -> Result<(), ChartError> {
    let _ = write!(
        out,
        "<section><h2>{}</h2><div class=\"runs\">",
        escape(title)
    );
    for run in runs {
        out.push_str("<div class=\"run\">");
        if runs.len() > 1 {
            let _ = write!(out, "<h3>{}</h3>", escape(&run.model.label));
        }
        body(out, run)?;
        out.push_str("</div>");
    }
    out.push_str("</div></section>");
    Ok(())
}

/// The shadow policies, one column per run, when any run has one.
fn shadows_section(out: &mut String, runs: &[Run<'_>]) -> Result<(), ChartError> {
    if runs.iter().all(|r| r.model.shadows.is_empty()) {
        return Ok(());
    }
    section(out, "Shadow policies", runs, |out, run| {
        super::shadow::section(out, &run.prefix, &run.model.shadows);
        Ok(())
    })
}

/// How long a run lasted and how much it admitted, in a sentence.
fn lede(run: &RunModel) -> String {
    let admissions = run.admissions.points.last().map_or(0.0, |p| p.1);
    let preempted = run.all_preemptions.points.last().map_or(0.0, |p| p.1);
    let count = |n: f64, what: &str| format!("{n:.0} {what}{}", if n == 1.0 { "" } else { "s" });
    format!(
        "{} of virtual time, {}, {}",
        super::axis::duration(run.duration),
        count(admissions, "admission"),
        count(preempted, "preemption")
    )
}

/// The workloads whose fate differs between `a` and `b`.
fn differences_section(out: &mut String, a: &RunModel, b: &RunModel, diffs: &[Difference]) {
    out.push_str("<section><h2>Workloads whose fate differs</h2>");
    if diffs.is_empty() {
        out.push_str("<p>None: every workload ended the same way in both runs.</p>");
    } else {
        let rows: Vec<Vec<String>> = diffs
            .iter()
            .map(|d| vec![d.workload.clone(), d.a.clone(), d.b.clone()])
            .collect();
        table(
            out,
            &format!("{} workload(s)", diffs.len()),
            &["workload", &a.label, &b.label],
            &rows,
        );
    }
    out.push_str("</section>");
}

/// Every section with a column per run, and the page's end.
fn close(mut out: String, columns: &[Run<'_>]) -> Result<String, ChartError> {
    for (title, body) in SECTIONS {
        section(&mut out, title, columns, body)?;
    }
    out.push_str("</body></html>\n");
    Ok(out)
}

/// The page's head and title.
fn open(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{0}</title>\
         <style>{STYLE}</style></head><body><h1>{0}</h1>",
        escape(title)
    );
}

/// The page of a MultiKueue run: the manager's run and each worker's (`runs`, manager first),
/// what MultiKueue did between them (`multikueue`, a section of markup), then each section
/// with a column per cluster.
pub fn render_clusters(runs: &[RunModel], multikueue: &str) -> Result<String, ChartError> {
    let mut out = String::new();
    open(
        &mut out,
        &format!(
            "wasq simulation: a MultiKueue manager and {} worker(s)",
            runs.len().saturating_sub(1)
        ),
    );
    let columns: Vec<Run<'_>> = (runs.iter())
        .map(|model| Run {
            model,
            prefix: format!("{}: ", model.label),
        })
        .collect();
    for run in runs {
        let _ = write!(out, "<p>{}: {}.</p>", escape(&run.label), lede(run));
    }
    out.push_str(multikueue);
    for run in runs {
        let _ = write!(
            out,
            "<section><h2>Per ClusterQueue: {}</h2>",
            escape(&run.label)
        );
        super::headline::single(&mut out, &run.headline);
        out.push_str("</section>");
    }
    shadows_section(&mut out, &columns)?;
    close(out, &columns)
}

/// The whole page for one run, or two compared (with the workloads whose fate differs).
pub fn render(runs: &[RunModel], differences: Option<&[Difference]>) -> Result<String, ChartError> {
    let mut out = String::new();
    let title = match runs {
        [a, b] => format!("wasq simulation: {} vs {}", a.label, b.label),
        _ => "wasq simulation".to_string(),
    };
    open(&mut out, &title);
    let columns: Vec<Run<'_>> = match runs {
        [a, b] => [a, b]
            .into_iter()
            .map(|model| Run {
                model,
                prefix: format!("{}: ", short(&model.label)),
            })
            .collect(),
        _ => runs
            .iter()
            .map(|model| Run {
                model,
                prefix: String::new(),
            })
            .collect(),
    };
    match runs {
        [a, b] => {
            for run in [a, b] {
                let _ = write!(out, "<p>{}: {}.</p>", escape(&run.label), lede(run));
            }
            out.push_str("<section><h2>Per ClusterQueue, A and B</h2>");
            super::headline::compared(&mut out, &a.headline, &b.headline, (&a.label, &b.label));
            out.push_str("</section>");
            shadows_section(&mut out, &columns)?;
            differences_section(&mut out, a, b, differences.unwrap_or_default());
            out.push_str("<section><h2>A and B overlaid</h2><div class=\"overlay\">");
            overlay::all(&mut out, a, b)?;
            out.push_str("</div></section>");
        }
        _ => {
            for run in runs {
                let _ = write!(out, "<p>{}.</p>", lede(run));
                out.push_str("<section><h2>Per ClusterQueue</h2>");
                super::headline::single(&mut out, &run.headline);
                out.push_str("</section>");
            }
            shadows_section(&mut out, &columns)?;
        }
    }
    close(out, &columns)
}
