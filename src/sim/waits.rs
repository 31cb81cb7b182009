//! How long each workload waited, read from the event log at the end of a run: every stretch it
//! spent pending — from its arrival to its first admission, and from each eviction (preempted,
//! or evicted by an admission check or the PodsReady timeout) to its next admission — until it
//! was admitted, finished, deactivated or the run ended. A workload still pending at the end
//! counts with its wait so far (right-censored): a policy that never admits a workload is not
//! credited with a short wait for it.
//!
//! "Admitted" is Kueue's `Admitted` (quota reserved and every admission check Ready), as for
//! the time to first admission the report always gave.

use std::collections::BTreeMap;

use super::Simulation;
use super::report::EventType;

/// What the event log says of one workload.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Fate {
    /// Seconds spent pending (censored at the end of the run).
    pub wait: f64,
    /// When it finished, in seconds on the virtual clock.
    pub finished: Option<f64>,
    /// Pending when the run ended (arrived, neither admitted, finished nor deactivated).
    pub pending_at_end: bool,
    /// Times evicted, by reason (`InCohortReclamation`, `PodsReadyTimeout`, ...).
    pub evictions: BTreeMap<String, u32>,
}

/// Each workload's [`Fate`], by workload index; `None` for a workload that had not arrived when
/// the run ended.
pub(crate) fn fates(sim: &Simulation) -> Vec<Option<Fate>> {
    let t0 = sim.t0();
    let end = (sim.now() - t0) as f64 / 1000.0;
    let mut pending_since: Vec<Option<f64>> = Vec::with_capacity(sim.lives.len());
    let mut fates: Vec<Option<Fate>> = Vec::with_capacity(sim.lives.len());
    for life in &sim.lives {
        let arrival = (life.arrival - t0) as f64 / 1000.0;
        let arrived = arrival <= end;
        pending_since.push(arrived.then_some(arrival));
        fates.push(arrived.then(Fate::default));
    }
    let events = &sim.events;
    for r in &events.records {
        let i = r.workload.index();
        let Some(fate) = fates[i].as_mut() else {
            continue;
        };
        let (t, _) = events.at(r);
        let since = &mut pending_since[i];
        match r.kind {
            EventType::Admitted | EventType::Deactivated | EventType::Finished => {
                if let Some(s) = since.take() {
                    fate.wait += (t - s).max(0.0);
                }
                if r.kind == EventType::Finished {
                    fate.finished = Some(t);
                }
            }
            EventType::Preempted | EventType::Evicted => {
                let reason = events.reason(r).unwrap_or("Evicted");
                // `AdmissionCheck: message` and `PodsReadyTimeout: message`: the reason.
                let reason = reason.split(':').next().unwrap_or(reason).trim();
                *fate.evictions.entry(reason.to_string()).or_default() += 1;
                since.get_or_insert(t);
            }
            _ => {}
        }
    }
    for (fate, since) in fates.iter_mut().zip(pending_since) {
        if let (Some(fate), Some(s)) = (fate.as_mut(), since) {
            fate.wait += (end - s).max(0.0);
            fate.pending_at_end = true;
        }
    }
    fates
}
