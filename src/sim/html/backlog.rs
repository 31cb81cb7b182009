//! The backlog: how many workloads were pending in each ClusterQueue over time (from their
//! arrival, and from each eviction, until admitted, finished or deactivated: the stretches
//! [`crate::sim::waits::walk`] reads from the event log, the ones the waits add up), stacked
//! per ClusterQueue ([`super::stack`]: the highest peaks one by one, the others together), so
//! that the top of the stack is every pending workload. Every ClusterQueue together is also
//! kept as one series, for the two runs of a `--compare` on one chart.

use std::collections::BTreeMap;

use crate::sim::Simulation;
use crate::sim::waits::{Happening, walk};

use super::downsample::min_max;
use super::model::{MAX_POINTS, Series};
use super::palette::{Colour, Palette};
use super::stack::{Member, Stacked, Steps, peak, set, stack};

/// One ClusterQueue's backlog, for the chart's table.
#[derive(Debug, Clone, PartialEq)]
pub struct BacklogRow {
    pub name: String,
    pub peak: f64,
    /// Time-averaged pending workloads.
    pub average: f64,
    pub at_end: f64,
}

/// Pending workloads over time.
#[derive(Debug, Clone, PartialEq)]
pub struct Backlog {
    /// Stacked per ClusterQueue (none when no workload was ever pending).
    pub stacked: Option<Stacked>,
    /// Every ClusterQueue together.
    pub total: Series,
    /// Every ClusterQueue that had a workload pending, highest peak first.
    pub rows: Vec<BacklogRow>,
}

/// The step function over `[0, duration]` of a count that changes by `(second, ±1)`.
fn counted(mut changes: Vec<(f64, i64)>, duration: f64) -> Steps {
    changes.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut steps = vec![(0.0, 0)];
    let mut now = 0;
    for (t, delta) in changes {
        now += delta;
        if steps
            .last()
            .is_some_and(|last| last.0 != t && last.1 == now)
        {
            continue;
        }
        set(&mut steps, t, now);
    }
    if steps.last().is_some_and(|last| last.0 < duration) {
        steps.push((duration, now));
    }
    steps
}

/// The row of `steps` over `[0, duration]`.
fn row(name: &str, steps: &[(f64, i64)], duration: f64) -> BacklogRow {
    let area: f64 = steps
        .windows(2)
        .map(|w| (w[1].0 - w[0].0) * w[0].1 as f64)
        .sum();
    BacklogRow {
        name: name.to_string(),
        peak: peak(steps) as f64,
        average: if duration > 0.0 { area / duration } else { 0.0 },
        at_end: steps.last().map_or(0.0, |s| s.1 as f64),
    }
}

/// The backlog of `sim`, a run of `duration` seconds, each ClusterQueue in its colour of
/// `palette`.
pub fn build(sim: &Simulation, duration: f64, palette: &Palette) -> Backlog {
    let cluster = sim.cluster();
    let mut per_cq: BTreeMap<&str, Vec<(f64, i64)>> = BTreeMap::new();
    walk(sim, |i, happening| {
        let Happening::Pending { from, to, open } = happening else {
            return;
        };
        if to == from && !open {
            // Admitted as it arrived: never in the backlog.
            return;
        }
        let wl = &cluster.workloads[i];
        let Some(cq) = wl
            .cluster_queue
            .or_else(|| cluster.admission(wl.id).map(|a| a.cluster_queue))
        else {
            return;
        };
        let changes = per_cq.entry(&cluster.cq(cq).name).or_default();
        changes.push((from, 1));
        if !open {
            changes.push((to, -1));
        }
    });
    let total = counted(per_cq.values().flatten().copied().collect(), duration);
    let queues: Vec<(&str, Steps)> = per_cq
        .into_iter()
        .map(|(cq, changes)| (cq, counted(changes, duration)))
        .collect();
    let mut rows: Vec<BacklogRow> = queues
        .iter()
        .map(|(cq, steps)| row(cq, steps, duration))
        .collect();
    rows.sort_by(|a, b| b.peak.total_cmp(&a.peak).then_with(|| a.name.cmp(&b.name)));
    let members: Vec<Member<'_>> = queues
        .iter()
        .map(|(cq, steps)| Member {
            name: cq.to_string(),
            colour: palette.cluster_queue(cq),
            steps,
            nominal: 0,
            borrowing_limit: None,
        })
        .collect();
    let stacked = (!members.is_empty()).then(|| {
        stack(
            "every ClusterQueue".into(),
            "ClusterQueue",
            ("pending workloads", "workloads", 1.0),
            &total,
            members,
            Vec::new(),
        )
    });
    let points: Vec<(f64, f64)> = total.iter().map(|&(t, v)| (t, v as f64)).collect();
    Backlog {
        stacked,
        total: Series {
            name: "pending workloads".into(),
            points: min_max(&points, MAX_POINTS),
            colour: Colour::Nth(0),
        },
        rows,
    }
}
