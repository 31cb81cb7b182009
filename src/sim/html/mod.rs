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
pub use model::RunModel;
pub use page::render;

use super::Simulation;
use super::report::Report;

/// The page for one finished run.
pub fn single(sim: &Simulation, report: &Report) -> Result<String, ChartError> {
    render(&[RunModel::build("run", sim, report)], None)
}

/// The page for two runs of one scenario, A and B, labelled by their bindings.
pub fn compared(
    a: (&str, &Simulation, &Report),
    b: (&str, &Simulation, &Report),
) -> Result<String, ChartError> {
    let runs = [
        RunModel::build(&format!("A ({})", a.0), a.1, a.2),
        RunModel::build(&format!("B ({})", b.0), b.1, b.2),
    ];
    render(&runs, Some(&differences(a.2, b.2)))
}
