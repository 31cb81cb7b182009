//! The workloads whose fate differs between two runs of one scenario, each side in one line:
//! where it was admitted (ClusterQueue and flavors), or who preempted it last and why, or that
//! it stayed pending.

use crate::sim::report::{EventType, Report, WorkloadReport};

/// One workload that ended differently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// `namespace/name`.
    pub workload: String,
    /// What happened to it in run A, then in run B.
    pub a: String,
    pub b: String,
}

/// Every workload whose final state, ClusterQueue or flavors differ between `a` and `b` (two
/// runs of the same scenario: the same workloads in the same order).
pub fn differences(a: &Report, b: &Report) -> Vec<Difference> {
    a.workloads
        .iter()
        .zip(&b.workloads)
        .filter(|(x, y)| fate(x) != fate(y))
        .map(|(x, y)| {
            let key = format!("{}/{}", x.namespace, x.name);
            Difference {
                a: why(a, x, &key),
                b: why(b, y, &key),
                workload: key,
            }
        })
        .collect()
}

/// What decides whether two runs treated a workload alike.
fn fate(w: &WorkloadReport) -> (&str, Option<&str>, Option<String>) {
    (
        w.state,
        w.cluster_queue.as_deref().filter(|_| w.admission.is_some()),
        w.admission.as_ref().map(|a| a.describe()),
    )
}

/// One line: admitted where, or preempted by whom, or the state it ended in.
fn why(report: &Report, w: &WorkloadReport, key: &str) -> String {
    if let (Some(cq), Some(a)) = (&w.cluster_queue, &w.admission) {
        return format!("{} to {cq} ({})", w.state, a.describe());
    }
    let preempted = report
        .events
        .refs()
        .rev()
        .find(|e| e.kind() == EventType::Preempted && e.workload() == key);
    match preempted {
        Some(e) => format!(
            "{} after being preempted at {:.1}s by {} ({})",
            w.state,
            e.time(),
            e.preemptor().unwrap_or("another workload"),
            e.reason().unwrap_or("no reason given"),
        ),
        None => w.state.to_string(),
    }
}
