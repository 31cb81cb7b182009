//! Two runs of one scenario on the same axes, where that reads better than side by side: the
//! time-to-admit distributions (per group both runs have), admissions and preemptions over
//! time, and Jain's index over time — run A solid, run B dashed, in one colour per series.

use super::charts::{ChartError, LineChart};
use super::model::{RunModel, Series};
use super::page::{WAIT_COLUMNS, cdf, counts_figure, jain_rows, line_figure, waits_rows};
use super::waits::Waits;

/// Series of run A and run B interleaved (A's first), each named after its run.
fn interleave(a: &[Series], b: &[Series], labels: (&str, &str)) -> Vec<Series> {
    let named = |s: &Series, run: &str| Series {
        name: format!("{} ({run})", s.name),
        points: s.points.clone(),
    };
    a.iter()
        .filter_map(|x| Some((x, b.iter().find(|y| y.name == x.name)?)))
        .flat_map(|(x, y)| [named(x, labels.0), named(y, labels.1)])
        .collect()
}

/// The first word of a run's label (`A`, `B`).
fn short(label: &str) -> &str {
    label.split_whitespace().next().unwrap_or(label)
}

pub fn waits(out: &mut String, a: &RunModel, b: &RunModel) -> Result<(), ChartError> {
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
        let title = format!(
            "Wait by {}, {} (solid) and {} (dashed) overlaid, cumulative",
            x.by, labels.0, labels.1
        );
        let mut rows = waits_rows(&ga, Some(labels.0));
        rows.extend(waits_rows(&gb, Some(labels.1)));
        rows.sort_by(|p, q| p[0].cmp(&q[0]).then_with(|| p[1].cmp(&q[1])));
        let mut header = vec![x.by, "run"];
        header.extend(WAIT_COLUMNS);
        line_figure(
            out,
            &LineChart {
                title: &title,
                x_label: "wait (s)",
                y_label: "share of admitted workloads",
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

pub fn timeline(out: &mut String, a: &RunModel, b: &RunModel) -> Result<(), ChartError> {
    let labels = (short(&a.label), short(&b.label));
    let series = interleave(
        &[a.admissions.clone(), a.all_preemptions.clone()],
        &[b.admissions.clone(), b.all_preemptions.clone()],
        labels,
    );
    let title = format!(
        "Admissions and preemptions over time, {} (solid) and {} (dashed) overlaid",
        labels.0, labels.1
    );
    counts_figure(out, &title, &series, true)
}

pub fn fairness(out: &mut String, a: &RunModel, b: &RunModel) -> Result<(), ChartError> {
    let labels = (short(&a.label), short(&b.label));
    let series = interleave(&a.jain, &b.jain, labels);
    if series.is_empty() {
        return Ok(());
    }
    let title = format!(
        "Jain's index of the ClusterQueues' shares over time, {} (solid) and {} (dashed) \
         overlaid",
        labels.0, labels.1
    );
    let mut rows = jain_rows(&a.jain, Some(labels.0));
    rows.extend(jain_rows(&b.jain, Some(labels.1)));
    rows.sort_by(|p, q| p[0].cmp(&q[0]).then_with(|| p[1].cmp(&q[1])));
    line_figure(
        out,
        &LineChart {
            title: &title,
            x_label: "virtual time (s)",
            y_label: "Jain's index",
            series: &series,
            references: &[],
            paired: true,
        },
        &["flavor/resource", "run", "lowest", "at the end"],
        &rows,
    )
}
