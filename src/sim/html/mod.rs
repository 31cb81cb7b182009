//! `wasq simulate --report FILE.html`: one self-contained HTML file with SVG charts (plotters'
//! SVG backend) of a run, or of two runs compared (`--compare A B`): usage over time stacked
//! per cohort tree against nominal quota and borrowing limits, time-to-admit distributions per
//! workload class and per LocalQueue, admissions, preemptions and admission-check waits over
//! time, share against weighted entitlement and Jain's index over time, which policies
//! decided and their fallbacks, and with two runs some of it overlaid and the workloads whose
//! fate differs. No script, no network, no external font: it opens from disk.
//!
//! - `model.rs`: what is drawn of one run, gathered from the parts below;
//! - `usage.rs`: usage stacked per cohort tree, and borrowing per ClusterQueue;
//! - `waits.rs`: waits per class and per LocalQueue;
//! - `timeline.rs`: admissions, preemptions and admission-check waits over time;
//! - `sharing.rs`: share vs weighted entitlement and Jain's index over time;
//! - `downsample.rs`: a few hundred points per series, extremes kept;
//! - `charts.rs`: the SVG charts (lines, stacked areas);
//! - `diff.rs`: the workloads whose fate differs between two runs;
//! - `overlay.rs`: two runs on the same axes;
//! - `page.rs`: the HTML page, a table of numbers behind every chart.

mod charts;
mod diff;
mod downsample;
mod model;
mod overlay;
mod page;
mod sharing;
mod timeline;
mod usage;
mod waits;

pub use charts::ChartError;
pub use diff::{Difference, differences};
pub use downsample::{min_max, min_max_indices};
pub use model::{Prepared, RunModel, Series};
pub use page::render;
pub use sharing::{ShareChart, ShareRow};
pub use timeline::CheckWaitModel;
pub use usage::{Borrowing, Layer, Stacked, Usage};
pub use waits::{Waits, WaitsChart};

use super::report::Report;

/// The page for one run: `prepared` from the simulation before its `report` was made.
pub fn single(prepared: Prepared, report: &Report) -> Result<String, ChartError> {
    render(&[prepared.finish(report)], None)
}

/// The page for two runs of one scenario, A and B (each prepared from its simulation, then its
/// report), with the workloads whose fate differs.
pub fn compared(a: (Prepared, &Report), b: (Prepared, &Report)) -> Result<String, ChartError> {
    let differences = differences(a.1, b.1);
    render(&[a.0.finish(a.1), b.0.finish(b.1)], Some(&differences))
}

#[cfg(test)]
mod tests;
