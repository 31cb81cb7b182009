//! `wasq simulate --report FILE.html`: one self-contained HTML file with SVG charts (plotters'
//! SVG backend) of a run, or of two runs compared (`--compare A B`). It opens with a headline
//! table per ClusterQueue (admitted, pending at the end, waits, preemptions, usage, borrowing),
//! then the backlog per ClusterQueue over time, usage over time stacked per cohort tree against
//! its nominal quota and per ClusterQueue against its own, wait distributions per workload
//! class and per LocalQueue, admissions, preemptions and admission-check waits over time, share
//! against weighted entitlement and Jain's index over time, and which policies decided and
//! their fallbacks; right after the headline, the shadow policies of a run that has any (how
//! often each agreed with what was enforced, and where it parted). With two runs what differs
//! comes first: both headline tables side by side with their differences, the workloads whose
//! fate differs, then charts of both overlaid. A queue has one colour on every chart. No
//! script, no network, no external font: it opens from disk.
//!
//! - `model.rs`: what is drawn of one run, gathered from the parts below;
//! - `headline.rs`: the table per ClusterQueue, of one run or two side by side;
//! - `shadow.rs`: the shadow policies, and their first differing decisions;
//! - `backlog.rs`: pending workloads per ClusterQueue over time;
//! - `usage.rs`: usage stacked per cohort tree, and per ClusterQueue against its own quota;
//! - `waits.rs`: waits per class and per LocalQueue;
//! - `timeline.rs`: admissions, preemptions and admission-check waits over time;
//! - `sharing.rs`: share vs weighted entitlement and Jain's index over time;
//! - `stack.rs`: stacks of step functions, the highest peaks one by one and the rest summed;
//! - `downsample.rs`: a few hundred points per series, extremes kept;
//! - `palette.rs`: one colour per queue;
//! - `axis.rs`: padded ranges, ticks at round times and values, lengths of time for a person;
//! - `charts.rs`: the SVG charts (step lines, stacked areas);
//! - `diff.rs`: the workloads whose fate differs between two runs;
//! - `overlay.rs`: two runs on the same axes;
//! - `markup.rs`: escaping, tables and figures;
//! - `page.rs`: the HTML page, in the order a reader asks.

mod axis;
mod backlog;
mod charts;
mod diff;
mod downsample;
mod headline;
mod markup;
mod model;
mod overlay;
mod page;
mod palette;
mod shadow;
mod sharing;
mod stack;
mod timeline;
mod usage;
mod waits;

pub use backlog::{Backlog, BacklogRow};
pub use charts::{ChartError, Line, Reference};
pub use diff::{Difference, differences};
pub use downsample::{min_max, min_max_indices};
pub use headline::{Headline, Kind};
pub use model::{Prepared, RunModel, Series};
pub use page::render;
pub use palette::{Colour, Palette};
pub use sharing::{ShareChart, ShareRow};
pub use stack::{Layer, MemberRow, Stacked};
pub use timeline::CheckWaitModel;
pub use usage::{OwnQuota, QueueUsage, Usage};
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
