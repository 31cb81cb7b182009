//! What the HTML report draws of one run. The part read from the simulation itself (usage
//! over time from its log of reservations and releases, times to admit, admission-check
//! waits) is taken before the simulation is turned into its report ([`RunModel::prepare`]),
//! so that a large run's timeline is never held twice; the rest (admissions and preemptions,
//! fair sharing, policies, shadows) comes from the report ([`Prepared::finish`]). Every series
//! is downsampled ([`super::downsample`]): a chart holds a few hundred points whatever the run.

use std::collections::BTreeMap;

use crate::policy::shadow::Figures;
use crate::sim::Simulation;
use crate::sim::report::Report;

use super::backlog::Backlog;
use super::headline::Headline;
use super::palette::{Colour, Palette};
use super::sharing::{ShareChart, jain_over_time, shares};
use super::timeline::{CheckWaitModel, check_waits, events};
use super::usage::Usage;
use super::waits::WaitsChart;

/// Points per drawn series.
pub const MAX_POINTS: usize = 300;

/// A named step function: (x, y) points, x sorted, each y holding until the next point.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub colour: Colour,
}

/// One policy that decided, as the report names it.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyRow {
    pub plugin: String,
    pub digest: String,
    pub kind: String,
    pub calls: u64,
    pub failures: u64,
    pub quarantined: bool,
}

/// Fallbacks to the built-in, per extension point and reason.
#[derive(Debug, Clone, PartialEq)]
pub struct FallbackRow {
    pub plugin: String,
    pub extension: String,
    pub reason: String,
    pub count: u64,
}

/// One run, ready to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct RunModel {
    pub label: String,
    /// Virtual seconds the run lasted.
    pub duration: f64,
    /// Each queue's colour.
    pub palette: Palette,
    /// Per ClusterQueue: admitted, pending, waits, preemptions, usage, borrowing.
    pub headline: Headline,
    /// Pending workloads over time per ClusterQueue.
    pub backlog: Backlog,
    /// Usage over time, stacked per cohort tree.
    pub usage: Usage,
    /// Waits by workload class and by LocalQueue (each when the run has one).
    pub waits: Vec<WaitsChart>,
    /// Admissions over time: cumulative count.
    pub admissions: Series,
    /// Preemptions over time per reason: cumulative count (none when there were none).
    pub preemptions: Vec<Series>,
    /// Every preemption over time: cumulative count.
    pub all_preemptions: Series,
    /// The waits for admission checks, when there were any.
    pub checks: Option<CheckWaitModel>,
    /// Share vs weighted entitlement over time, per flavor/resource.
    pub shares: Vec<ShareChart>,
    /// Jain's index over the ClusterQueues with demand, per flavor/resource, over time.
    pub jain: Vec<Series>,
    pub policies: Vec<PolicyRow>,
    pub fallbacks: Vec<FallbackRow>,
    /// The shadow policies, by name (the report's `summary.shadow`).
    pub shadows: BTreeMap<String, Figures>,
}

/// The unit a resource is drawn in, and the milli-units per unit.
pub fn unit_of(resource: &str) -> (&'static str, f64) {
    match resource.rsplit('/').next().unwrap_or(resource) {
        "cpu" => ("cores", 1000.0),
        "memory" | "ephemeral-storage" => ("GiB", 1000.0 * 1024.0 * 1024.0 * 1024.0),
        "pods" => ("pods", 1000.0),
        "gpu" => ("GPUs", 1000.0),
        _ => ("units", 1000.0),
    }
}

/// The part of a [`RunModel`] read from the simulation itself, taken before the simulation
/// is turned into its report.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    label: String,
    duration: f64,
    palette: Palette,
    backlog: Backlog,
    usage: Usage,
    waits: Vec<WaitsChart>,
    checks: Option<CheckWaitModel>,
}

impl RunModel {
    /// The model of `sim` (run) and its `report`.
    pub fn build(label: &str, sim: &Simulation, report: &Report) -> RunModel {
        RunModel::prepare(label, sim).finish(report)
    }

    /// What is read from the simulation; [`Prepared::finish`] adds what its report holds.
    pub fn prepare(label: &str, sim: &Simulation) -> Prepared {
        let duration = (sim.now().max(sim.t0()) - sim.t0()) as f64 / 1000.0;
        let palette = Palette::of(sim);
        Prepared {
            label: label.to_string(),
            duration,
            backlog: super::backlog::build(sim, duration, &palette),
            usage: super::usage::build(sim, duration, &palette),
            waits: super::waits::build(sim, &palette),
            palette,
            checks: check_waits(sim, duration),
        }
    }
}

impl Prepared {
    /// The whole model, with the admissions, preemptions, fairness samples and policies of
    /// the run's `report`.
    pub fn finish(self, report: &Report) -> RunModel {
        let duration = self.duration;
        let (admissions, preemptions, all_preemptions) = events(report, duration);
        RunModel {
            label: self.label,
            duration,
            headline: super::headline::build(report, &self.usage.queues),
            shares: shares(&report.fairness, duration, &self.palette),
            palette: self.palette,
            backlog: self.backlog,
            usage: self.usage,
            waits: self.waits,
            admissions,
            preemptions,
            all_preemptions,
            checks: self.checks,
            jain: jain_over_time(&report.fairness),
            policies: report
                .summary
                .plugins
                .iter()
                .map(|p| PolicyRow {
                    plugin: p.plugin.clone(),
                    digest: p.digest.clone(),
                    kind: p.kind.clone(),
                    calls: p.calls,
                    failures: p.failures.values().sum(),
                    quarantined: p.quarantined,
                })
                .collect(),
            fallbacks: report
                .summary
                .fallbacks
                .iter()
                .map(|f| FallbackRow {
                    plugin: f.plugin.clone(),
                    extension: f.extension.clone(),
                    reason: f.reason.clone(),
                    count: f.count,
                })
                .collect(),
            shadows: report.summary.shadow.clone(),
        }
    }
}
