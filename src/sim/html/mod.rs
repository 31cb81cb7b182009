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

use super::multikueue::report::FederationReport;
use super::report::Report;

/// The page for one run: `prepared` from the simulation before its `report` was made.
pub fn single(prepared: Prepared, report: &Report) -> Result<String, ChartError> {
    render(&[prepared.finish(report)], None)
}

/// The page of a MultiKueue run (`wasq simulate --report` of a manager scenario): the
/// manager's run and each worker's, each prepared from its simulation before `report` was
/// made, with MultiKueue's summary, workers and Workloads first.
pub fn federation(
    manager: Prepared,
    workers: Vec<Prepared>,
    report: &FederationReport,
) -> Result<String, ChartError> {
    let mut runs = vec![manager.finish(&report.manager)];
    for (prepared, worker) in workers.into_iter().zip(&report.workers) {
        runs.push(prepared.finish(&worker.report));
    }
    page::render_clusters(&runs, &multikueue_section(report))
}

/// MultiKueue's part of [`federation`]'s page, as the text report gives it.
fn multikueue_section(r: &FederationReport) -> String {
    use super::multikueue::report::seconds;
    use markup::{escape, table};
    let s = &r.summary;
    let mut out = format!(
        "<section><h2>MultiKueue</h2><p>Dispatcher {}: {} workloads, {} admitted on a worker, {} \
         dispatched again; dispatch (quota reserved on the manager to admitted on a worker) mean \
         {}, p90 {}, max {}; {:.2} copies per workload; {} dispatcher calls, {} answers not \
         taken.</p>",
        escape(&s.dispatcher),
        s.workloads,
        s.admitted_on_a_worker,
        s.dispatched_again,
        seconds(s.mean_dispatch_seconds),
        seconds(s.p90_dispatch_seconds),
        seconds(s.max_dispatch_seconds),
        s.copies_per_workload,
        s.dispatcher_calls,
        s.fallbacks
    );
    let workers: Vec<Vec<String>> = (r.workers.iter())
        .map(|w| {
            vec![
                w.name.clone(),
                w.ran.to_string(),
                w.copies.to_string(),
                w.copies_removed.to_string(),
                w.lost(),
            ]
        })
        .collect();
    table(
        &mut out,
        "Per worker",
        &["worker", "ran", "copies", "removed", "lost"],
        &workers,
    );
    const SHOWN: usize = 500;
    let workloads: Vec<Vec<String>> = (r.workloads.iter().take(SHOWN))
        .map(|w| {
            let last = w.attempts.last();
            vec![
                w.workload.clone(),
                w.ran_on.clone().unwrap_or_else(|| "-".into()),
                seconds(w.dispatch_seconds),
                w.attempts.len().to_string(),
                last.map(|a| a.copied_to.join(", ")).unwrap_or_default(),
                last.and_then(|a| a.outcome).unwrap_or("-").to_string(),
            ]
        })
        .collect();
    let caption = if r.workloads.len() > SHOWN {
        format!(
            "Per workload (the first {SHOWN} of {}; -o json has all)",
            r.workloads.len()
        )
    } else {
        "Per workload".to_string()
    };
    table(
        &mut out,
        &caption,
        &[
            "workload",
            "ran on",
            "dispatch",
            "attempts",
            "last copied to",
            "last outcome",
        ],
        &workloads,
    );
    out.push_str("</section>");
    out
}

/// The page for two runs of one scenario, A and B (each prepared from its simulation, then its
/// report), with the workloads whose fate differs.
pub fn compared(a: (Prepared, &Report), b: (Prepared, &Report)) -> Result<String, ChartError> {
    let differences = differences(a.1, b.1);
    render(&[a.0.finish(a.1), b.0.finish(b.1)], Some(&differences))
}

#[cfg(test)]
mod tests;
