//! `wasq simulate --report FILE.html`: one self-contained HTML file with SVG charts (plotters'
//! SVG backend) of a run, or of two runs compared (`--compare A B`): usage over time against
//! nominal quota, time-to-admit distributions, admissions and preemptions over time, Jain's
//! index over time, which policies decided and their fallbacks, and with two runs the
//! workloads whose fate differs. No script, no network, no external font: it opens from disk.
//!
//! - `model.rs`: what is drawn, taken from a finished simulation and its report;
//! - `downsample.rs`: a few hundred points per series, extremes kept;
//! - `charts.rs`: the SVG line charts;
//! - `diff.rs`: the workloads whose fate differs between two runs;
//! - `page.rs`: the HTML page, a table of numbers behind every chart.

mod charts;
mod diff;
mod downsample;
mod model;
mod page;

pub use charts::ChartError;
pub use diff::{Difference, differences};
pub use downsample::min_max;
pub use model::{Prepared, RunModel};
pub use page::render;

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
