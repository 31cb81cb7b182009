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

/// What the event log says of a workload, in order, for [`walk`]'s reader.
pub(crate) enum Happening<'a> {
    /// A stretch it spent pending, from `from` until `to` seconds; `open` when it was still
    /// pending when the run ended (`to` is then the end).
    Pending { from: f64, to: f64, open: bool },
    /// Evicted or preempted, for `reason` (its first word).
    Evicted(&'a str),
    /// Finished at that second.
    Finished(f64),
}

/// Reads the event log once, telling `on` what happened to each workload that arrived (by
/// workload index): every stretch it spent pending — from its arrival, and from each eviction,
/// until admitted, finished or deactivated, or the end of the run — its evictions and its
/// finish.
pub(crate) fn walk(sim: &Simulation, mut on: impl FnMut(usize, Happening<'_>)) {
    let t0 = sim.t0();
    let end = (sim.now() - t0) as f64 / 1000.0;
    // Per workload: `None` before its arrival (or never), then since when it is pending.
    let mut pending_since: Vec<Option<f64>> = Vec::with_capacity(sim.lives.len());
    let mut arrived: Vec<bool> = Vec::with_capacity(sim.lives.len());
    for life in &sim.lives {
        let arrival = (life.arrival - t0) as f64 / 1000.0;
        arrived.push(arrival <= end);
        pending_since.push((arrival <= end).then_some(arrival));
    }
    let events = &sim.events;
    for r in &events.records {
        let i = r.workload.index();
        if !arrived[i] {
            continue;
        }
        let (t, _) = events.at(r);
        let since = &mut pending_since[i];
        match r.kind {
            EventType::Admitted
            | EventType::Deactivated
            | EventType::Finished
            | EventType::Removed => {
                if let Some(s) = since.take() {
                    on(
                        i,
                        Happening::Pending {
                            from: s,
                            to: t.max(s),
                            open: false,
                        },
                    );
                }
                if r.kind == EventType::Finished {
                    on(i, Happening::Finished(t));
                }
            }
            EventType::Preempted | EventType::Evicted => {
                let reason = events.reason(r).unwrap_or("Evicted");
                // `AdmissionCheck: message` and `PodsReadyTimeout: message`: the reason.
                let reason = reason.split(':').next().unwrap_or(reason).trim();
                on(i, Happening::Evicted(reason));
                since.get_or_insert(t);
            }
            _ => {}
        }
    }
    for (i, since) in pending_since.into_iter().enumerate() {
        if let Some(s) = since {
            on(
                i,
                Happening::Pending {
                    from: s,
                    to: end.max(s),
                    open: true,
                },
            );
        }
    }
}

/// Each workload's [`Fate`], by workload index; `None` for a workload that had not arrived when
/// the run ended.
pub(crate) fn fates(sim: &Simulation) -> Vec<Option<Fate>> {
    let end = (sim.now() - sim.t0()) as f64 / 1000.0;
    let mut fates: Vec<Option<Fate>> = sim
        .lives
        .iter()
        .map(|life| ((life.arrival - sim.t0()) as f64 / 1000.0 <= end).then(Fate::default))
        .collect();
    walk(sim, |i, happening| {
        let Some(fate) = fates[i].as_mut() else {
            return;
        };
        match happening {
            Happening::Pending { from, to, open } => {
                fate.wait += to - from;
                fate.pending_at_end |= open;
            }
            Happening::Evicted(reason) => {
                *fate.evictions.entry(reason.to_string()).or_default() += 1;
            }
            Happening::Finished(t) => fate.finished = Some(t),
        }
    });
    fates
}
