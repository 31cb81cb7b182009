//! The simulator's side of two-phase admission and of waitForPodsReady: a reservation becomes an
//! admission once its admission checks are Ready ([`super::checks`] decides when), and an
//! admitted workload whose pods are not ready in time is evicted or deactivated
//! ([`super::readiness`]), through the core's state machine
//! ([`crate::cluster::checks`]) and the scheduler (`release_for_retry`, `deactivate`).

use super::{EventType, Simulation, readiness};
use crate::cluster::checks::Outcome;
use crate::cluster::{EvictionReason, Millis, WorkloadId};
use crate::policy::PolicyRef;

impl Simulation {
    /// Every applicable check is `Ready` (or there is none): the workload is admitted and starts.
    pub(super) fn admit(&mut self, workload: WorkloadId, policy: PolicyRef, ordered_by: PolicyRef) {
        let life = &mut self.lives[workload.index()];
        life.admitted(self.now);
        let (duration, ready_after) = (life.duration(), life.ready_after());
        self.checks.admitted(workload);
        // Admitted through a MultiKueue check: it runs on a worker, which says when it ends.
        let here = !self.checks.runs_elsewhere(workload);
        // The job runs its duration once its pods are ready; pods never ready never finish.
        if here && let (Some(dur), Some(after)) = (duration, ready_after) {
            self.schedule_finish(workload, self.now.saturating_add(after).saturating_add(dur));
        }
        self.push_event(EventType::Admitted, workload, None, None, Some(policy));
        self.events.set_last_ordered_by(ordered_by);
        if let Some(admission) = self.scheduler.cluster.admission_shared(workload) {
            self.events.set_last_admission(admission.clone());
        }
        if here && let Some(w) = &self.scheduler.cluster.settings.wait_for_pods_ready {
            self.readiness.admitted(workload, self.now, ready_after, w);
        }
    }

    /// The workload stops holding quota (finished, evicted, deactivated): every timer of its
    /// admission is dropped.
    pub(super) fn stopped(&mut self, workload: WorkloadId) {
        self.checks.released(workload);
        self.readiness.released(workload);
        if self.reserved_by.remove(&workload).is_some() {
            self.check_waits.ended(workload, self.now, false);
        }
    }

    /// Pods that became ready, and PodsReady timeouts: eviction with reason `PodsReadyTimeout`
    /// and a requeue after Kueue's backoff, or deactivation past the requeue limit.
    pub(super) fn settle_readiness(&mut self) {
        let Some(w) = self.scheduler.cluster.settings.wait_for_pods_ready.clone() else {
            return;
        };
        for (wl, fired) in self.readiness.due(self.now) {
            if fired == readiness::Fired::Ready {
                self.push_event(EventType::PodsReady, wl, None, None, None);
                continue;
            }
            let i = wl.index();
            let count = self.readiness.timeouts.get(&wl).copied().unwrap_or(0);
            self.cancel_finish(wl);
            self.log_release(wl);
            self.stopped(wl);
            self.wl_checks[i].reset_on_eviction(self.now);
            if w.backoff_limit_count.is_some_and(|l| count + 1 > l) {
                self.push_event(
                    EventType::Deactivated,
                    wl,
                    Some(
                        "DeactivatedDueToRequeuingLimitExceeded: The workload is deactivated due \
                         to exceeding the maximum number of re-queuing retries",
                    ),
                    None,
                    None,
                );
                self.scheduler.deactivate(wl);
                self.lives[i].deactivated = true;
                continue;
            }
            self.readiness.timeouts.insert(wl, count + 1);
            let key = self.scheduler.cluster.workload(wl).key.clone();
            self.push_event(
                EventType::Evicted,
                wl,
                Some(&format!(
                    "PodsReadyTimeout: Exceeded the PodsReady timeout {key}"
                )),
                None,
                None,
            );
            let queued_at = if w.by_eviction_time {
                self.now
            } else {
                self.scheduler.cluster.workload(wl).created
            };
            self.scheduler
                .release_for_retry(wl, queued_at, EvictionReason::PodsReadyTimeout);
            let wait = crate::cluster::checks::backoff_seconds(
                w.backoff_base_seconds,
                w.backoff_max_seconds,
                count + 1,
            );
            self.arrivals
                .entry(self.now.saturating_add(Millis::from(wait) * 1000))
                .or_default()
                .push(wl);
        }
    }

    /// Applies the check states the simulated controllers decided by now, and what they mean:
    /// admission, eviction with a requeue after the backoff, or deactivation.
    pub(super) fn settle_checks(&mut self) {
        let wl_checks = &self.wl_checks;
        let (cluster, reserved_by) = (&self.scheduler.cluster, &self.reserved_by);
        let changes = self.checks.due(
            &self.scheduler.cluster,
            self.now,
            &|w, c| {
                wl_checks[w.index()]
                    .get(c)
                    .and_then(|s| s.retry_count)
                    .unwrap_or(0)
            },
            &|w| cluster.admission(w).is_some() && !reserved_by.contains_key(&w),
        );
        // All of a workload's changes at this instant are applied before its outcome is
        // decided, once (two checks failing together evict it once, Rejected wins).
        let mut touched: Vec<WorkloadId> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for c in changes {
            let w = c.workload;
            let i = w.index();
            let before = self.wl_checks[i].get(&c.check).map(|s| s.state);
            self.wl_checks[i].set(
                &c.check,
                c.state,
                &c.message,
                c.requeue_after_seconds,
                c.pod_set_updates,
                self.now,
            );
            if before != Some(c.state) {
                let reason = if c.message.is_empty() {
                    format!("{}: {}", c.check, c.state.as_str())
                } else {
                    format!("{}: {} ({})", c.check, c.state.as_str(), c.message)
                };
                self.push_event(EventType::AdmissionCheck, w, Some(&reason), None, None);
            }
            if seen.insert(w) {
                touched.push(w);
            }
        }
        for w in touched {
            let i = w.index();
            if self.scheduler.cluster.admission(w).is_none() {
                continue;
            }
            // A check may also change once the workload is admitted (a MultiKueue check whose
            // worker lost it): Retry evicts it, Rejected deactivates it, as in Kueue.
            let waiting = self.reserved_by.contains_key(&w);
            match self.wl_checks[i].outcome() {
                Outcome::Waiting => {}
                Outcome::Admitted if !waiting => {}
                Outcome::Admitted => {
                    let (policy, ordered_by) = self
                        .reserved_by
                        .remove(&w)
                        .unwrap_or_else(|| (PolicyRef::builtin(), PolicyRef::builtin()));
                    self.check_waits.ended(w, self.now, true);
                    self.admit(w, policy, ordered_by);
                }
                Outcome::Evict {
                    message,
                    requeue_at,
                } => {
                    self.cancel_finish(w);
                    self.push_event(
                        EventType::Evicted,
                        w,
                        Some(&format!("AdmissionCheck: {message}")),
                        None,
                        None,
                    );
                    self.log_release(w);
                    self.scheduler
                        .release_for_retry(w, self.now, EvictionReason::AdmissionCheck);
                    self.stopped(w);
                    self.wl_checks[i].reset_on_eviction(self.now);
                    self.arrivals
                        .entry(requeue_at.max(self.now))
                        .or_default()
                        .push(w);
                }
                Outcome::Deactivate { message } => {
                    self.cancel_finish(w);
                    self.push_event(
                        EventType::Deactivated,
                        w,
                        Some(&format!(
                            "AdmissionCheckRejected: Deactivated due to {message}"
                        )),
                        None,
                        None,
                    );
                    self.log_release(w);
                    self.scheduler.deactivate(w);
                    self.stopped(w);
                    self.wl_checks[i].reset_on_eviction(self.now);
                    self.lives[i].deactivated = true;
                }
            }
        }
    }
}
