//! Pod readiness in the simulator, for Kueue's `waitForPodsReady`: when an admitted workload's
//! pods become ready, and when its PodsReady timeout fires. A workload's pods are ready at once
//! unless it says otherwise:
//!
//! - `sim.wasq.dev/ready-after: 2m`: ready two minutes after admission;
//! - `sim.wasq.dev/never-ready: "true"`: never ready (an image that does not pull, a crash loop).
//!
//! What a timeout does (eviction with reason `PodsReadyTimeout` and a requeue after Kueue's
//! backoff, or deactivation past `requeuingStrategy.backoffLimitCount`) is decided in
//! [`super::Simulation`] with the core's backoff.

use std::collections::{BTreeMap, BTreeSet};

use crate::cluster::{Millis, WaitForPodsReady, WorkloadId};

use super::duration::parse_millis;

pub const READY_AFTER: &str = "sim.wasq.dev/ready-after";
pub const NEVER_READY: &str = "sim.wasq.dev/never-ready";

/// A readiness timer's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fired {
    /// The pods are ready.
    Ready,
    /// The PodsReady timeout passed with pods not ready.
    Timeout,
}

/// The timers and the admitted workloads whose pods are not ready yet.
#[derive(Debug, Default)]
pub struct Readiness {
    /// (time, workload, admission number, what).
    timers: BTreeSet<(Millis, WorkloadId, u64, Fired)>,
    admission: BTreeMap<WorkloadId, u64>,
    /// Admitted workloads whose pods are not all ready (for `blockAdmission`).
    not_ready: BTreeSet<WorkloadId>,
    /// PodsReady timeouts so far per workload (Kueue's `requeueState.count`).
    pub timeouts: BTreeMap<WorkloadId, i32>,
}

/// When the pods of a workload with these annotations are ready after admission: `None` =
/// never.
pub fn ready_after(annotations: &BTreeMap<String, String>) -> Option<Millis> {
    if annotations.get(NEVER_READY).map(|v| v.trim()) == Some("true") {
        return None;
    }
    Some(
        annotations
            .get(READY_AFTER)
            .and_then(|v| parse_millis(v).ok())
            .unwrap_or(0)
            .max(0),
    )
}

/// Problems with the readiness annotations of one workload's annotations.
pub fn validate(annotations: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(v) = annotations.get(READY_AFTER)
        && let Err(e) = parse_millis(v)
    {
        out.push(format!("metadata.annotations.{READY_AFTER}: {e}"));
    }
    if let Some(v) = annotations.get(NEVER_READY)
        && !matches!(v.trim(), "true" | "false")
    {
        out.push(format!(
            "metadata.annotations.{NEVER_READY}: {v:?} must be \"true\" or \"false\""
        ));
    }
    out
}

impl Readiness {
    /// `wl` was admitted at `now`: its pods become ready after `ready_after` (never: `None`),
    /// and the timeout of `config` starts.
    pub fn admitted(
        &mut self,
        wl: WorkloadId,
        now: Millis,
        ready_after: Option<Millis>,
        config: &WaitForPodsReady,
    ) {
        let a = self.admission.entry(wl).or_default();
        *a += 1;
        let a = *a;
        match ready_after {
            Some(0) => return,
            Some(d) if d < config.timeout => {
                self.timers.insert((now + d, wl, a, Fired::Ready));
            }
            _ => {
                self.timers
                    .insert((now + config.timeout, wl, a, Fired::Timeout));
            }
        }
        self.not_ready.insert(wl);
    }

    /// `wl` no longer runs (finished, evicted): its timers are dropped.
    pub fn released(&mut self, wl: WorkloadId) {
        *self.admission.entry(wl).or_default() += 1;
        self.not_ready.remove(&wl);
        self.timers.retain(|t| t.1 != wl);
    }

    /// Whether an admitted workload's pods are not all ready.
    pub fn any_not_ready(&self) -> bool {
        !self.not_ready.is_empty()
    }

    pub fn next_time(&self) -> Option<Millis> {
        self.timers.first().map(|t| t.0)
    }

    /// The timers due at or before `now`, in time order.
    pub fn due(&mut self, now: Millis) -> Vec<(WorkloadId, Fired)> {
        let mut out = Vec::new();
        while let Some(&(at, wl, a, fired)) = self.timers.first() {
            if at > now {
                break;
            }
            self.timers.pop_first();
            if self.admission.get(&wl) != Some(&a) {
                continue;
            }
            if fired == Fired::Ready {
                self.not_ready.remove(&wl);
            }
            out.push((wl, fired));
        }
        out
    }
}
