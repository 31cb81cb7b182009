//! Two runs of one scenario on the same axes, where that reads better than side by side: the
//! backlog of every ClusterQueue together, the wait distributions (per group both runs have),
//! admissions, preemptions, and Jain's index over time — run A solid, run B dashed, each
//! series in its colour in both.

use super::charts::{ChartError, LineChart};
use super::markup::line_figure;
use super::model::{RunModel, Series};
use super::page::{WAIT_COLUMNS, WAIT_SHARE, cdf, counts_figure, jain_rows, short, waits_rows};
use super::waits::Waits;

/// Series of run A and run B interleaved (A's first), each named after its run.
fn interleave(a: &[Series], b: &[Series], labels: (&str, &str)) -> Vec<Series> {
    let named = |s: &Series, run: &str| Series {
        name: format!("{} ({run})", s.name),
        points: s.points.clone(),
        colour: s.colour,
    };
    a.iter()
        .filter_map(|x| Some((x, b.iter().find(|y| y.name == x.name)?)))
        .flat_map(|(x, y)| [named(x, labels.0), named(y, labels.1)])
        .collect()
}

/// "`what`, A (solid) and B (dashed)".
fn overlaid(what: &str, labels: (&str, &str)) -> String {
    format!("{what}, {} (solid) and {} (dashed)", labels.0, labels.1)
}

fn waits(out: &mut String, a: &RunModel, b: &RunModel) -> Result<(), ChartError> {
    let labels = (short(&a.label), short(&b.label));
    for x in &a.waits {
        let Some(y) = b.waits.iter().find(|y| y.by == x.by) else {
            continue;
        };
        let pairs: Vec<(&Waits, &Waits)> = x
            .groups
            .iter()
            .filter(|g| !g.name.starts_with("the other "))
            .filter_map(|g| Some((g, y.groups.iter().find(|h| h.name == g.name)?)))
            .take(super::waits::MAX_GROUPS / 2 + 1)
            .collect();
        if pairs.is_empty() {
            continue;
        }
        let (ga, gb): (Vec<&Waits>, Vec<&Waits>) = pairs.iter().copied().unzip();
        let series = interleave(&cdf(&ga), &cdf(&gb), labels);
        let title = overlaid(&format!("Wait by {}, cumulative", x.by), labels);
        let mut rows = waits_rows(&ga, Some(labels.0));
        rows.extend(waits_rows(&gb, Some(labels.1)));
        rows.sort_by(|p, q| p[0].cmp(&q[0]).then_with(|| p[1].cmp(&q[1])));
        let mut header = vec![x.by, "run"];
        header.extend(WAIT_COLUMNS);
        line_figure(
            out,
            &LineChart {
                title: &title,
                x_label: "wait",
                y_label: WAIT_SHARE,
                series: &series,
                references: &[],
                paired: true,
            },
            &header,
            &rows,
        )?;
    }
    Ok(())
}

/// One count of both runs (`pick` from each), on one chart.
fn counts(
    out: &mut String,
    (a, b): (&RunModel, &RunModel),
    what: &str,
    y: &str,
    pick: fn(&RunModel) -> &Series,
) -> Result<(), ChartError> {
    let labels = (short(&a.label), short(&b.label));
    let series = interleave(
        std::slice::from_ref(pick(a)),
        std::slice::from_ref(pick(b)),
        labels,
    );
    counts_figure(out, &overlaid(what, labels), y, &series, true)
}

fn jain(out: &mut String, a: &RunModel, b: &RunModel) -> Result<(), ChartError> {
    let labels = (short(&a.label), short(&b.label));
    let series = interleave(&a.jain, &b.jain, labels);
    if series.is_empty() {
        return Ok(());
    }
    let title = overlaid(
        "Jain's index of the ClusterQueues' shares over time",
        labels,
    );
    let mut rows = jain_rows(&a.jain, Some(labels.0));
    rows.extend(jain_rows(&b.jain, Some(labels.1)));
    rows.sort_by(|p, q| p[0].cmp(&q[0]).then_with(|| p[1].cmp(&q[1])));
    line_figure(
        out,
        &LineChart {
            title: &title,
            x_label: "virtual time",
            y_label: "Jain's index",
            series: &series,
            references: &[],
            paired: true,
        },
        &["flavor/resource", "run", "lowest", "at the end"],
        &rows,
    )
}

/// Every overlay of runs `a` and `b`.
pub fn all(out: &mut String, a: &RunModel, b: &RunModel) -> Result<(), ChartError> {
    counts(
        out,
        (a, b),
        "Pending workloads, every ClusterQueue together",
        "pending workloads",
        |r| &r.backlog.total,
    )?;
    waits(out, a, b)?;
    counts(out, (a, b), "Admissions so far", "admissions", |r| {
        &r.admissions
    })?;
    counts(
        out,
        (a, b),
        "Preemptions so far",
        "workloads preempted",
        |r| &r.all_preemptions,
    )?;
    jain(out, a, b)
}
