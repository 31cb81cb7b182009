//! A cycle's decisions written back (a child module of `controller.rs`): evictions of the
//! preempted, admissions, and why the others wait — as Workload status writes sent in the
//! background ([`super::inflight`]: at most [`MAX_IN_FLIGHT`] at once, one per Workload in
//! flight, so each object's writes stay in order), each computed from the latest known object
//! and carrying its resourceVersion. A conflict re-reads the Workload and computes the write
//! again (at most [`MAX_ATTEMPTS`] times). An admission that cannot be written is released in
//! memory and the Workload queued again when its answer lands, so once the writes have landed
//! memory holds no quota the cluster does not show. Writes of other controllers' passes
//! (checks, readiness) go out as batches awaited at once ([`Controller::write_batch`]).

use futures::StreamExt;

use super::inflight::DecisionWrite;
use super::{
    Controller, Error, MAX_ATTEMPTS, api_admission, checks, cq_path, priority_class, queued_at,
};
use crate::api::jobs::JOB_UID_LABEL;
use crate::api::{Workload, WorkloadStatus};
use crate::cluster::{Admission, Millis, WorkloadId};
use crate::k8s::client::MAX_IN_FLIGHT;
use crate::k8s::client::events::decided_by::{self, Annotations};
use crate::k8s::client::writer::{SCHEDULER_MANAGER, workload_ref};
use crate::k8s::schema::kinds::KueueKind;
use crate::k8s::status::conditions::{self as cond, ADMITTED, EVICTED, PREEMPTED, QUOTA_RESERVED};
use crate::k8s::sync::core::{has_quota_reservation, is_evicted, is_finished};
use crate::k8s::sync::mirror::{Observed, Source};
use crate::policy::PolicyRef;
use crate::scheduler::Decision;

/// Computes a Workload's new status from the latest known object; `None`: the write no longer
/// applies.
pub(super) type BuildStatus<'a> = Box<dyn Fn(&Workload) -> Option<WorkloadStatus> + Send + 'a>;

/// One Workload status write of a batch.
pub(super) struct StatusWrite<'a> {
    pub key: String,
    pub manager: &'static str,
    pub build: BuildStatus<'a>,
}

/// What to do once a decision's write is answered. `decided_by`: the annotations of the
/// decision's Events, naming the policies behind it.
pub(super) enum After {
    Admit {
        id: WorkloadId,
        cq: String,
        two_phase: bool,
        decided_by: Annotations,
    },
    Evict {
        message: String,
        decided_by: Annotations,
    },
    Pending {
        id: WorkloadId,
        reason: String,
        message: String,
        decided_by: Annotations,
    },
}

/// A preemption decided whose eviction is not written yet.
pub(super) struct Eviction {
    /// Kueue's preemption reason (`InClusterQueue`, ...).
    reason: String,
    message: String,
    decided_by: Annotations,
}

impl Controller {
    /// Writes a batch of Workload statuses (at most [`MAX_IN_FLIGHT`] in flight), answering
    /// each with the Workload as written, `None` when its build found nothing to write (or it
    /// is gone), or the error. Keys must be distinct.
    pub(super) async fn write_batch(
        &mut self,
        writes: &[StatusWrite<'_>],
    ) -> Vec<Result<Option<Workload>, Error>> {
        // A decision's write of one of these Workloads may still be in flight: land them all
        // first, so that each object's writes stay in order.
        if writes.iter().any(|w| self.inflight.busy(&w.key)) {
            self.land_all().await;
        }
        let mut results: Vec<Option<Result<Option<Workload>, Error>>> =
            writes.iter().map(|_| None).collect();
        let mut todo: Vec<usize> = (0..writes.len()).collect();
        for attempt in 1..=MAX_ATTEMPTS {
            let mut sends = Vec::new();
            for &i in &todo {
                let w = &writes[i];
                let body = self
                    .mirror
                    .workloads
                    .get(&w.key)
                    .and_then(|wl| Some((wl, (w.build)(wl)?)))
                    .map(|(wl, status)| {
                        let (ns, name) = super::ns_name(wl);
                        (ns, name, super::status_patch(wl, &status))
                    });
                match body {
                    Some((ns, name, body)) => sends.push((i, ns, name, body)),
                    None => results[i] = Some(Ok(None)),
                }
            }
            for (i, ..) in &sends {
                self.count_status_write(writes[*i].manager);
            }
            let writer = &self.writer;
            let answers: Vec<_> = futures::stream::iter(sends)
                .map(|(i, ns, name, body)| async move {
                    let r = writer
                        .patch_workload_status_as(&ns, &name, &body, writes[i].manager)
                        .await;
                    (i, ns, name, r)
                })
                .buffer_unordered(MAX_IN_FLIGHT)
                .collect()
                .await;
            todo.clear();
            for (i, ns, name, answer) in answers {
                let key = &writes[i].key;
                results[i] = match answer {
                    Ok(obj) => Some(Ok(self.put_own_workload(&obj))),
                    Err(e) if e.is_conflict() && attempt < MAX_ATTEMPTS => {
                        tracing::info!(workload = %key, attempt, "conflict writing status; reading the workload again");
                        match self.writer.get_workload(&ns, &name).await {
                            Ok(fresh) => {
                                self.observe(Observed::Applied(
                                    Source::Kueue(KueueKind::Workload),
                                    fresh,
                                ));
                                todo.push(i);
                                None
                            }
                            Err(e) => Some(Err(e)),
                        }
                    }
                    Err(e) if e.is_not_found() => {
                        self.mirror.forget_workload(key);
                        Some(Ok(None))
                    }
                    Err(e) => Some(Err(e)),
                };
            }
            if todo.is_empty() {
                break;
            }
        }
        results.into_iter().map(|r| r.unwrap_or(Ok(None))).collect()
    }

    /// Counts one Workload status patch sent (`wasq_workload_status_writes_total{write}`).
    pub(super) fn count_status_write(&self, what: &str) {
        self.metrics
            .workload_status_writes
            .get_or_create(&self.metrics.labels(vec![("write", what.to_string())]))
            .inc();
    }

    /// Writes a Workload status computed by `build` from the latest known object (a batch of
    /// one, as the scheduler's field manager).
    pub(super) async fn write_status(
        &mut self,
        key: &str,
        build: impl Fn(&Workload) -> Option<WorkloadStatus> + Send,
    ) -> Result<Option<Workload>, Error> {
        self.write_status_as(key, SCHEDULER_MANAGER, build).await
    }

    /// [`Controller::write_status`] as another field manager (a check controller).
    pub(super) async fn write_status_as(
        &mut self,
        key: &str,
        manager: &'static str,
        build: impl Fn(&Workload) -> Option<WorkloadStatus> + Send,
    ) -> Result<Option<Workload>, Error> {
        let write = StatusWrite {
            key: key.to_string(),
            manager,
            build: Box::new(build),
        };
        self.write_batch(std::slice::from_ref(&write))
            .await
            .pop()
            .unwrap_or(Ok(None))
    }

    /// Sends one cycle's decisions' writes without waiting for them: the evictions still to
    /// write (this cycle's victims and any earlier ones that failed), the admissions, and the
    /// pending reasons.
    /// The list is emptied (the caller hands it back to the scheduler for the next cycle).
    pub(super) async fn apply(&mut self, decisions: &mut Vec<Decision>, now: Millis) {
        let mut writes = Vec::new();
        let mut after = Vec::new();
        for d in decisions.drain(..) {
            match d {
                Decision::Admitted {
                    workload,
                    admission,
                    policy,
                    ordered_by,
                    placed_by,
                } => {
                    let decided = decided_by::admission(&ordered_by, &policy, &placed_by);
                    let (w, a) = self.admission_write(workload, admission, decided, now);
                    writes.push(w);
                    after.push(a);
                }
                Decision::Preempted {
                    workload,
                    preemptor,
                    reason,
                    policy,
                } => self.preempt(workload, preemptor, reason, &policy),
                Decision::NotAdmitted {
                    workload,
                    reason,
                    message,
                    policy,
                    ..
                } => {
                    if let Some((w, a)) =
                        self.pending_write(workload, &reason, &message, &policy, now)
                    {
                        writes.push(w);
                        after.push(a);
                    }
                }
            }
        }
        let (ew, ea) = self.eviction_writes(now);
        writes.splice(0..0, ew);
        after.splice(0..0, ea);
        for (write, after) in writes.into_iter().zip(after) {
            self.dispatch(DecisionWrite { write, after, now }).await;
        }
    }

    /// Sends the evictions decided but not yet recorded in the cluster (landed with the
    /// pass's cycles).
    pub(super) async fn retry_evictions(&mut self, now: Millis) {
        let (writes, after) = self.eviction_writes(now);
        for (write, after) in writes.into_iter().zip(after) {
            self.dispatch(DecisionWrite { write, after, now }).await;
        }
    }

    /// Acts on the answer to a decision's write: metrics and Events, or the admission undone.
    pub(super) async fn after_write(
        &mut self,
        key: &str,
        after: After,
        result: Result<Option<Workload>, Error>,
        now: Millis,
    ) {
        match (after, result) {
            (
                After::Admit {
                    cq,
                    two_phase,
                    decided_by,
                    ..
                },
                Ok(Some(wl)),
            ) => self.admitted(&wl, &cq, two_phase, decided_by, now).await,
            (After::Admit { id, .. }, Ok(None)) => {
                tracing::info!(workload = %key, "admission no longer applies; releasing it");
                self.undo_admission(id);
                self.mirror.resync(key);
            }
            (After::Admit { id, .. }, Err(e)) => {
                tracing::warn!(workload = %key, error = %e, "cannot write the admission; releasing it");
                self.write_failed("admission");
                self.undo_admission(id);
            }
            (
                After::Evict {
                    message,
                    decided_by,
                },
                Ok(written),
            ) => {
                self.evictions.remove(key);
                if let Some(wl) = written {
                    self.writer
                        .decision_event(
                            &workload_ref(&wl),
                            false,
                            "Preempted",
                            "Preempted",
                            message,
                            decided_by,
                        )
                        .await;
                }
            }
            (After::Evict { .. }, Err(e)) => {
                tracing::warn!(workload = %key, error = %e, "cannot write the eviction; will retry");
                self.write_failed("eviction");
            }
            (
                After::Pending {
                    id,
                    reason,
                    message,
                    decided_by,
                },
                Ok(Some(wl)),
            ) => {
                self.pending_written.insert(id, now);
                self.writer
                    .decision_event(
                        &workload_ref(&wl),
                        true,
                        &reason,
                        &reason,
                        message,
                        decided_by,
                    )
                    .await;
            }
            (After::Pending { .. }, Ok(None)) => {}
            (After::Pending { .. }, Err(e)) => {
                tracing::debug!(workload = %key, error = %e, "cannot record why the workload is pending");
                self.write_failed("pending");
            }
        }
    }

    // ---- Admission ---------------------------------------------------------------------------

    fn admission_write(
        &self,
        id: WorkloadId,
        admission: std::sync::Arc<Admission>,
        decided_by: Annotations,
        now: Millis,
    ) -> (StatusWrite<'static>, After) {
        let s = self
            .scheduler
            .as_ref()
            .expect("a decision comes from the core");
        let key = s.cluster.workload(id).key.clone();
        let api_admission = api_admission(&s.cluster, id, &admission);
        let cq = api_admission.cluster_queue.clone();
        let assigned: Vec<crate::quota::FlavorId> = admission
            .pod_sets
            .iter()
            .flat_map(|p| p.flavors.iter().map(|&(_, f)| f))
            .collect();
        let check_names = crate::cluster::checks::applicable(
            &s.cluster.cq(admission.cluster_queue).admission_checks,
            &assigned,
        );
        let two_phase = !check_names.is_empty();
        let message = cond::quota_reserved_message(&cq);
        let build = move |wl: &Workload| {
            if has_quota_reservation(wl) || is_finished(wl) {
                return None;
            }
            let mut st = wl.status.as_deref().cloned().unwrap_or_default();
            st.admission = Some(api_admission.clone());
            if two_phase {
                st.admission_checks = Some(checks::reserved_states(
                    &check_names,
                    checks::states(wl),
                    now,
                ));
                st.requeue_state = None;
            } else if st.admission_checks.is_some() {
                // No check applies to this assignment: states of an earlier one go, as
                // Kueue's syncAdmissionCheckConditions leaves none.
                st.admission_checks = None;
            }
            let c = &mut st.conditions;
            cond::set(
                c,
                cond::condition(QUOTA_RESERVED, true, "QuotaReserved", &message, now),
            );
            cond::reset_active(c, EVICTED, "QuotaReserved", now);
            cond::reset_active(c, PREEMPTED, "QuotaReserved", now);
            if two_phase {
                cond::set(
                    c,
                    cond::condition(
                        ADMITTED,
                        false,
                        checks::UNSATISFIED_CHECKS,
                        checks::UNSATISFIED_CHECKS_MESSAGE,
                        now,
                    ),
                );
            } else {
                cond::set(
                    c,
                    cond::condition(ADMITTED, true, "Admitted", cond::ADMITTED_MESSAGE, now),
                );
            }
            Some(st)
        };
        (
            StatusWrite {
                key,
                manager: SCHEDULER_MANAGER,
                build: Box::new(build),
            },
            After::Admit {
                id,
                cq,
                two_phase,
                decided_by,
            },
        )
    }

    /// Metrics and Events of a written admission (the reservation, and the admission itself
    /// when no check applies), the Events annotated with the policies that decided it.
    async fn admitted(
        &mut self,
        wl: &Workload,
        cq: &str,
        two_phase: bool,
        decided_by: Annotations,
        now: Millis,
    ) {
        let waited = (now - queued_at(wl)).max(0) as f64 / 1000.0;
        let labels = self.metrics.labels(vec![
            ("cluster_queue", cq.to_string()),
            ("priority_class", priority_class(wl)),
        ]);
        self.metrics
            .quota_reserved_workloads
            .get_or_create(&labels)
            .inc();
        self.metrics
            .quota_reserved_wait_time
            .get_or_create(&labels)
            .observe(waited);
        let r = workload_ref(wl);
        // The Admitted Event of the same decision carries the same annotations.
        let (reserved, admitted) = if two_phase {
            (decided_by, None)
        } else {
            (decided_by.clone(), Some(decided_by))
        };
        self.writer
            .decision_event(
                &r,
                false,
                "QuotaReserved",
                "QuotaReserved",
                format!(
                    "Quota reserved in ClusterQueue {cq}, wait time since queued was {waited:.0}s"
                ),
                reserved,
            )
            .await;
        let Some(decided_by) = admitted else {
            return;
        };
        self.metrics.admitted_workloads.get_or_create(&labels).inc();
        self.metrics
            .admission_wait_time
            .get_or_create(&labels)
            .observe(waited);
        self.writer
            .decision_event(
                &r,
                false,
                "Admitted",
                "Admitted",
                format!("Admitted by ClusterQueue {cq}, wait time since reservation was 0s"),
                decided_by,
            )
            .await;
    }

    /// Releases an admission the cluster never recorded and queues the workload again where
    /// it was (not an eviction: no requeue is counted).
    pub(super) fn undo_admission(&mut self, id: WorkloadId) {
        if let Some(s) = self.scheduler.as_mut() {
            s.release(id);
            let _ = s.submit(id);
        }
    }

    // ---- Preemption --------------------------------------------------------------------------

    /// Records a victim's eviction (written with the cycle's batch) and its metrics; `policy`
    /// chose the victims.
    fn preempt(
        &mut self,
        id: WorkloadId,
        preemptor: WorkloadId,
        reason: &'static str,
        policy: &PolicyRef,
    ) {
        let Some(s) = &self.scheduler else { return };
        let c = &s.cluster;
        let key = c.workload(id).key.clone();
        let preemptor_info = c.workload(preemptor);
        let preemptor_wl = self.mirror.workloads.get(&preemptor_info.key);
        let uid = preemptor_wl
            .and_then(|w| w.metadata.uid.clone())
            .unwrap_or_default();
        let job_uid = preemptor_wl
            .and_then(|w| w.metadata.labels.as_ref())
            .and_then(|l| l.get(JOB_UID_LABEL).cloned())
            .unwrap_or_default();
        let preemptor_path = preemptor_info
            .cluster_queue
            .map(|q| cq_path(c, q))
            .unwrap_or_default();
        let victim_path = c
            .admission(id)
            .map(|a| cq_path(c, a.cluster_queue))
            .unwrap_or_default();
        let message =
            cond::preemption_message(&uid, &job_uid, reason, &preemptor_path, &victim_path);
        let victim_cq = c
            .admission(id)
            .map(|a| c.cq(a.cluster_queue).name.clone())
            .unwrap_or_default();
        let preempting_cq = preemptor_path
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string();
        self.metrics
            .preempted_workloads
            .get_or_create(&self.metrics.labels(vec![
                ("preempting_cluster_queue", preempting_cq),
                ("reason", reason.into()),
            ]))
            .inc();
        let pc = self
            .mirror
            .workloads
            .get(&key)
            .map(|wl| priority_class(wl))
            .unwrap_or_default();
        self.metrics
            .evicted_workloads
            .get_or_create(&self.metrics.labels(vec![
                ("cluster_queue", victim_cq),
                ("reason", cond::EVICTED_BY_PREEMPTION.into()),
                ("underlying_cause", String::new()),
                ("priority_class", pc),
            ]))
            .inc();
        let decided_by = decided_by::preemption(policy, &preemptor_info.key);
        self.evictions.insert(
            key,
            Eviction {
                reason: reason.to_string(),
                message,
                decided_by,
            },
        );
    }

    /// The writes of every eviction decided but not yet recorded in the cluster.
    fn eviction_writes(&self, now: Millis) -> (Vec<StatusWrite<'static>>, Vec<After>) {
        let mut writes = Vec::new();
        let mut after = Vec::new();
        for (key, eviction) in &self.evictions {
            if self.inflight.evicting(key) {
                continue;
            }
            let (reason, m) = (eviction.reason.clone(), eviction.message.clone());
            let build = move |wl: &Workload| {
                if !has_quota_reservation(wl) || is_evicted(wl) || is_finished(wl) {
                    return None;
                }
                let mut st = wl.status.as_deref().cloned().unwrap_or_default();
                cond::set(
                    &mut st.conditions,
                    cond::condition(EVICTED, true, cond::EVICTED_BY_PREEMPTION, &m, now),
                );
                cond::set(
                    &mut st.conditions,
                    cond::condition(PREEMPTED, true, &reason, &m, now),
                );
                // Every eviction resets the admission checks (Kueue's evict.Evict).
                if !checks::states(wl).is_empty() {
                    st.admission_checks = Some(checks::reset_states(checks::states(wl), now));
                }
                checks::clear_dispatch(&mut st);
                Some(st)
            };
            writes.push(StatusWrite {
                key: key.clone(),
                manager: SCHEDULER_MANAGER,
                build: Box::new(build),
            });
            after.push(After::Evict {
                message: eviction.message.clone(),
                decided_by: eviction.decided_by.clone(),
            });
        }
        (writes, after)
    }

    // ---- Pending -----------------------------------------------------------------------------

    /// The write of why a workload waits, unless its condition already says so — or says so
    /// with another message only and was written less than the pending-status interval ago
    /// (`--pending-status-interval`; 0: Kueue's behaviour, every change written).
    fn pending_write(
        &self,
        id: WorkloadId,
        reason: &str,
        message: &str,
        policy: &PolicyRef,
        now: Millis,
    ) -> Option<(StatusWrite<'static>, After)> {
        let s = self.scheduler.as_ref()?;
        let key = s.cluster.workload(id).key.clone();
        let current = self.mirror.workloads.get(&key).and_then(|wl| {
            wl.status
                .as_ref()
                .and_then(|st| cond::find(&st.conditions, QUOTA_RESERVED))
                .filter(|c| c.status == "False" && c.reason == reason)
                .map(|c| c.message == message)
        });
        let recent = || {
            self.pending_written
                .get(&id)
                .is_some_and(|t| now - t < self.pending_interval)
        };
        match current {
            Some(true) => return None,
            Some(false) if recent() => return None,
            _ => {}
        }
        let (r, m) = (reason.to_string(), message.to_string());
        let build = move |wl: &Workload| {
            if has_quota_reservation(wl) || is_finished(wl) {
                return None;
            }
            let mut st = wl.status.as_deref().cloned().unwrap_or_default();
            cond::set(
                &mut st.conditions,
                cond::condition(QUOTA_RESERVED, false, &r, &m, now),
            );
            Some(st)
        };
        Some((
            StatusWrite {
                key,
                manager: SCHEDULER_MANAGER,
                build: Box::new(build),
            },
            After::Pending {
                id,
                reason: reason.to_string(),
                message: message.to_string(),
                decided_by: decided_by::pending(policy),
            },
        ))
    }
}
