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

use crate::cluster::{Millis, StrMap, WaitForPodsReady, WorkloadId};

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
    /// The same timers by workload, so that a release drops its own in O(log n).
    by_workload: BTreeSet<(WorkloadId, Millis, u64, Fired)>,
    /// Admission number per workload id (grown on demand; a timer of an older admission is
    /// stale).
    admission: Vec<u64>,
    /// Admitted workloads whose pods are not all ready (for `blockAdmission`).
    not_ready: BTreeSet<WorkloadId>,
    /// PodsReady timeouts so far per workload (Kueue's `requeueState.count`).
    pub timeouts: BTreeMap<WorkloadId, i32>,
}

/// When the pods of a workload with these annotations are ready after admission: `None` =
/// never.
pub fn ready_after(annotations: &StrMap) -> Option<Millis> {
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
        let a = self.bump(wl);
        let (at, fired) = match ready_after {
            Some(0) => return,
            Some(d) if d < config.timeout => (now + d, Fired::Ready),
            _ => (now + config.timeout, Fired::Timeout),
        };
        self.timers.insert((at, wl, a, fired));
        self.by_workload.insert((wl, at, a, fired));
        self.not_ready.insert(wl);
    }

    /// Starts the workload's next admission; returns its number.
    fn bump(&mut self, wl: WorkloadId) -> u64 {
        if self.admission.len() <= wl.index() {
            self.admission.resize(wl.index() + 1, 0);
        }
        let a = &mut self.admission[wl.index()];
        *a += 1;
        *a
    }

    /// `wl` no longer runs (finished, evicted): its timers are dropped.
    pub fn released(&mut self, wl: WorkloadId) {
        self.bump(wl);
        self.not_ready.remove(&wl);
        let next = WorkloadId(wl.0.wrapping_add(1));
        let mine: Vec<_> = if next.0 == 0 {
            self.by_workload
                .range((wl, Millis::MIN, 0, Fired::Ready)..)
                .copied()
                .collect()
        } else {
            self.by_workload
                .range((wl, Millis::MIN, 0, Fired::Ready)..(next, Millis::MIN, 0, Fired::Ready))
                .copied()
                .collect()
        };
        for (w, at, a, fired) in mine {
            self.by_workload.remove(&(w, at, a, fired));
            self.timers.remove(&(at, w, a, fired));
        }
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
            self.by_workload.remove(&(wl, at, a, fired));
            if self.admission.get(wl.index()) != Some(&a) {
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
