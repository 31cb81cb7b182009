//! Kueue's `waitForPodsReady` in the controller (a child module of `controller.rs`), the same
//! semantics as the simulator's `settle_readiness`: every Admitted Workload's `PodsReady`
//! condition follows its job's readiness (the kind's `podsReady` rule) or its pod group's (every
//! pod Ready or Succeeded); a Workload not ready within the timeout is evicted with reason
//! `PodsReadyTimeout` and queued again after Kueue's backoff (the admission checks' retry path),
//! or deactivated past `requeuingStrategy.backoffLimitCount`. `blockAdmission` is decided in
//! [`Controller::admission_blocked`].

use std::collections::BTreeMap;

use super::admission::RetryEviction;
use super::{Controller, is_admitted, to_value};
use crate::api::Workload;
use crate::api::jobs::JobKind;
use crate::cluster::EvictionReason;
use crate::cluster::checks::backoff_seconds;
use crate::cluster::{Millis, WaitForPodsReady};
use crate::k8s::jobs::pod_groups;
use crate::k8s::status::conditions::{self as cond, ADMITTED, PODS_READY};
use crate::k8s::sync::core::{has_quota_reservation, is_evicted, is_finished, requeue_at};
use crate::k8s::sync::keys::key_of;

pub const STARTED: &str = "Started";
pub const RECOVERED: &str = "Recovered";
pub const WAIT_FOR_START: &str = "WaitForStart";
pub const WAIT_FOR_RECOVERY: &str = "WaitForRecovery";
pub const READY_MESSAGE: &str = "All pods reached readiness and the workload is running";
pub const WAIT_FOR_START_MESSAGE: &str = "Not all pods are ready or succeeded";
pub const WAIT_FOR_RECOVERY_MESSAGE: &str = "At least one pod has failed, waiting for recovery";
pub const EVICTED_BY_PODS_READY_TIMEOUT: &str = EvictionReason::PodsReadyTimeout.as_str();
pub const REQUEUING_LIMIT_EXCEEDED: &str = "RequeuingLimitExceeded";
pub const REQUEUING_LIMIT_MESSAGE: &str = "exceeding the maximum number of re-queuing retries";

/// Kueue's `generatePodsReadyCondition` for an Admitted Workload: (status, reason, message).
pub fn pods_ready_condition(
    previous: Option<&crate::api::Condition>,
    ready: bool,
) -> (bool, &'static str, &'static str) {
    let previous_reason = previous.map(|c| c.reason.as_str());
    if ready {
        let reason = match previous_reason {
            Some(WAIT_FOR_RECOVERY | RECOVERED) => RECOVERED,
            _ => STARTED,
        };
        return (true, reason, READY_MESSAGE);
    }
    let recovering =
        previous.is_some_and(|c| c.status == "True") || previous_reason == Some(WAIT_FOR_RECOVERY);
    if recovering {
        (false, WAIT_FOR_RECOVERY, WAIT_FOR_RECOVERY_MESSAGE)
    } else {
        (false, WAIT_FOR_START, WAIT_FOR_START_MESSAGE)
    }
}

/// Whether the Workload's `PodsReady` condition is True.
pub fn is_pods_ready(wl: &Workload) -> bool {
    wl.status
        .as_ref()
        .is_some_and(|s| cond::is_true(&s.conditions, PODS_READY))
}

/// When a not-ready Workload's timeout expires, and its cause (`WaitForStart`,
/// `WaitForRecovery`): Kueue's `admittedNotReadyWorkload`.
fn deadline(wl: &Workload, w: &WaitForPodsReady) -> Option<(Millis, &'static str)> {
    let st = wl.status.as_ref()?;
    let since = |type_: &str| {
        cond::find(&st.conditions, type_)
            .and_then(|c| c.last_transition_time.as_ref())
            .map(|t| t.0.as_millisecond())
    };
    match cond::find(&st.conditions, PODS_READY) {
        Some(c) if c.status == "True" => None,
        Some(c) if c.reason == WAIT_FOR_RECOVERY => (w.recovery_timeout > 0)
            .then(|| since(PODS_READY))
            .flatten()
            .map(|t| (t + w.recovery_timeout, WAIT_FOR_RECOVERY)),
        _ => since(ADMITTED).map(|t| (t + w.timeout, WAIT_FOR_START)),
    }
}

/// The pod count admitted for the Workload (what a job's `readyCount` reaches by default).
fn admitted_pods(wl: &Workload) -> i64 {
    let Some(a) = wl.status.as_ref().and_then(|s| s.admission.as_ref()) else {
        return 0;
    };
    a.pod_set_assignments
        .iter()
        .map(|psa| {
            psa.count
                .or_else(|| {
                    wl.spec
                        .pod_sets
                        .iter()
                        .find(|p| p.name == psa.name)
                        .map(|p| p.count)
                })
                .unwrap_or_default() as i64
        })
        .sum()
}

/// Whether the Workload runs (Admitted, holding quota, not evicted, finished or inactive).
fn running(wl: &Workload) -> bool {
    is_admitted(wl)
        && has_quota_reservation(wl)
        && !is_evicted(wl)
        && !is_finished(wl)
        && wl.spec.active != Some(false)
}

impl Controller {
    /// Readiness of the running Workloads among `keys` whose job or pod group is known, by
    /// Workload key. Only Workloads holding quota can run.
    fn readiness<'k>(&self, keys: impl Iterator<Item = &'k String>) -> BTreeMap<String, bool> {
        let mut out = BTreeMap::new();
        let mut groups: Option<BTreeMap<String, pod_groups::Group>> = None;
        for key in keys {
            let Some(wl) = self.mirror.workloads.get(key) else {
                continue;
            };
            if !running(wl) {
                continue;
            }
            // Pod-based kinds (no suspend flag): their pods are groups.
            let job = self
                .job_of(wl)
                .filter(|&(i, _)| self.kinds[i].has_suspend());
            if let Some((i, job)) = job {
                let kind = &self.kinds[i];
                if job.metadata.deletion_timestamp.is_some()
                    || JobKind::controlled_by_any(&job.metadata, &self.kinds)
                {
                    continue;
                }
                let value = to_value(job);
                let ready =
                    !kind.is_suspended(&value) && kind.pods_ready(&value, admitted_pods(wl));
                out.insert(key.clone(), ready);
            } else if self.pod_groups {
                // Pod groups are computed once per pass, and only when a running Workload
                // has no job.
                let groups = groups.get_or_insert_with(|| {
                    pod_groups::groups(&self.mirror)
                        .into_iter()
                        .map(|g| (key_of(Some(&g.namespace), &g.name), g))
                        .collect()
                });
                if let Some(g) = groups.get(key) {
                    out.insert(key.clone(), g.pods_ready());
                }
            }
        }
        out
    }

    /// The key of the Workload a job makes (its kind's name for it, in the job's namespace),
    /// if the mirror has the job.
    pub(super) fn job_workload_key(&self, kind: usize, job_key: &str) -> Option<String> {
        let job = self.mirror.jobs.get(kind)?.get(job_key)?;
        let name = job.metadata.name.as_deref().unwrap_or_default();
        let uid = job.metadata.uid.as_deref().unwrap_or_default();
        let made = self.kinds.get(kind)?.workload_name(name, uid, None);
        Some(key_of(job.metadata.namespace.as_deref(), &made))
    }

    /// The job that owns a Workload (its owner of a managed kind, with the Workload name that
    /// job would make), if the mirror has it.
    pub(super) fn job_of(&self, wl: &Workload) -> Option<(usize, &kube::core::DynamicObject)> {
        let ns = wl.metadata.namespace.as_deref().unwrap_or("default");
        wl.metadata.owner_references.iter().flatten().find_map(|o| {
            let i = self
                .kinds
                .iter()
                .position(|k| k.spec.api_version == o.api_version && k.spec.kind == o.kind)?;
            let job = self.mirror.jobs[i].get(&key_of(Some(ns), &o.name))?;
            let uid = job.metadata.uid.as_deref();
            let made = self.kinds[i].workload_name(&o.name, uid.unwrap_or_default(), None);
            (uid.is_none_or(|u| u == o.uid) && Some(&made) == wl.metadata.name.as_ref())
                .then_some((i, job))
        })
    }

    /// `kueue_ready_wait_time_seconds` and `kueue_admitted_until_ready_wait_time_seconds` when
    /// a Workload first becomes ready (not when it recovers), as Kueue.
    fn observe_ready(&self, wl: &Workload, now: Millis) {
        let cq = super::admitted_cluster_queue(wl);
        let admitted_at = wl
            .status
            .as_ref()
            .and_then(|s| cond::find(&s.conditions, ADMITTED))
            .and_then(|c| c.last_transition_time.as_ref())
            .map_or(now, |t| t.0.as_millisecond());
        let labels = self.metrics.labels(vec![
            ("cluster_queue", cq),
            ("priority_class", super::priority_class(wl)),
        ]);
        let seconds = |since: Millis| (now - since).max(0) as f64 / 1000.0;
        self.metrics
            .ready_wait_time
            .get_or_create(&labels)
            .observe(seconds(super::queued_at(wl)));
        self.metrics
            .admitted_until_ready_wait_time
            .get_or_create(&labels)
            .observe(seconds(admitted_at));
    }

    /// `blockAdmission`: no cycle admits while a Workload holding quota is not PodsReady.
    pub(super) fn admission_blocked(&self) -> bool {
        let blocking = self
            .scheduler
            .as_ref()
            .and_then(|s| s.cluster.settings.wait_for_pods_ready.as_ref())
            .is_some_and(|w| w.block_admission);
        blocking
            && (self.inflight.admitting()
                || self
                    .mirror
                    .reserved
                    .iter()
                    .filter_map(|k| self.mirror.workloads.get(k))
                    .any(|wl| has_quota_reservation(wl) && !is_finished(wl) && !is_pods_ready(wl)))
    }

    /// Writes the `PodsReady` conditions that changed, and acts on expired timeouts.
    pub(super) async fn sync_pods_ready(&mut self, now: Millis) {
        let Some(w) = self
            .scheduler
            .as_ref()
            .and_then(|s| s.cluster.settings.wait_for_pods_ready.clone())
        else {
            // Off: nothing is kept for it. A configuration that turns it on rebuilds the core,
            // and the pass after a rebuild looks at every running Workload.
            self.work.readiness.clear();
            self.work.readiness_due.clear();
            self.work.readiness_all = false;
            return;
        };
        // What changed (the writes that just landed included), and the timeouts that came;
        // every running Workload after a rebuild.
        self.absorb();
        let mut keys = std::mem::take(&mut self.work.readiness);
        let due = &mut self.work.readiness_due;
        let readiness = if std::mem::take(&mut self.work.readiness_all) {
            due.clear();
            self.readiness(self.mirror.reserved.iter())
        } else {
            while due.first().is_some_and(|(at, _)| *at <= now) {
                keys.extend(due.pop_first().map(|(_, key)| key));
            }
            self.readiness(keys.iter())
        };
        for (key, ready) in readiness {
            match self.sync_workload_readiness(&key, ready, &w, now).await {
                Ok(Some(at)) => {
                    self.work.readiness_due.insert((at, key));
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(workload = %key, error = %e, "cannot act on the pods' readiness; will retry");
                    self.write_failed("pods-ready");
                    self.mirror.touch(&key);
                }
            }
        }
    }

    /// Writes one Workload's `PodsReady` condition and acts on its timeout; returns when it
    /// times out if that is still to come.
    async fn sync_workload_readiness(
        &mut self,
        key: &str,
        ready: bool,
        w: &WaitForPodsReady,
        now: Millis,
    ) -> Result<Option<Millis>, crate::k8s::Error> {
        // Kueue's job reconciler writes it, as the job controller.
        let written = self
            .write_status_as(key, crate::k8s::client::writer::JOB_MANAGER, |wl| {
                if !running(wl) {
                    return None;
                }
                let mut st = wl.status.as_deref().cloned().unwrap_or_default();
                let previous = cond::find(&st.conditions, PODS_READY);
                let (status, reason, message) = pods_ready_condition(previous, ready);
                if previous.is_some_and(|c| (c.status == "True") == status && c.reason == reason) {
                    return None;
                }
                let mut c = cond::condition(PODS_READY, status, reason, message, now);
                c.observed_generation = wl.metadata.generation;
                cond::set(&mut st.conditions, c);
                Some(st)
            })
            .await?;
        if let Some(wl) = &written
            && wl
                .status
                .as_ref()
                .and_then(|s| cond::find(&s.conditions, PODS_READY))
                .is_some_and(|c| c.status == "True" && c.reason == STARTED)
        {
            self.observe_ready(wl, now);
        }
        if ready {
            return Ok(None);
        }
        let Some(wl) = self.mirror.workloads.get(key).cloned() else {
            return Ok(None);
        };
        if !running(&wl) {
            return Ok(None);
        }
        let Some((at, cause)) = deadline(&wl, w) else {
            return Ok(None);
        };
        if now < at {
            return Ok(Some(at));
        }
        let state = wl.status.as_ref().and_then(|s| s.requeue_state.as_ref());
        let count = state
            .and_then(|v| v.get("count"))
            .and_then(serde_json::Value::as_i64)
            .unwrap_or(0) as i32;
        if w.backoff_limit_count.is_some_and(|l| count + 1 > l) {
            return self
                .deactivate(
                    key,
                    REQUEUING_LIMIT_EXCEEDED,
                    REQUEUING_LIMIT_MESSAGE,
                    None,
                    now,
                )
                .await
                .map(|()| None);
        }
        let n = count + 1;
        let wait = backoff_seconds(w.backoff_base_seconds, w.backoff_max_seconds, n);
        // metav1.Time has second precision; Kueue keeps a later requeueAt already set.
        let at = (now + i64::from(wait) * 1000) / 1000 * 1000;
        let requeue = requeue_at(&wl).map_or(at, |t| t.max(at));
        let eviction = RetryEviction {
            reason: EVICTED_BY_PODS_READY_TIMEOUT,
            message: format!("Exceeded the PodsReady timeout {key}"),
            requeue_at: requeue,
            count: Some(n),
            cause,
        };
        self.evict_for_retry(key, &eviction, now)
            .await
            .map(|()| None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(status: &str, reason: &str) -> crate::api::Condition {
        let mut c = cond::condition(PODS_READY, status == "True", reason, "", 0);
        c.status = status.into();
        c
    }

    #[test]
    fn the_condition_follows_kueue() {
        assert_eq!(
            pods_ready_condition(None, false),
            (false, WAIT_FOR_START, WAIT_FOR_START_MESSAGE)
        );
        assert_eq!(
            pods_ready_condition(Some(&c("False", WAIT_FOR_START)), true),
            (true, STARTED, READY_MESSAGE)
        );
        assert_eq!(
            pods_ready_condition(Some(&c("True", STARTED)), false),
            (false, WAIT_FOR_RECOVERY, WAIT_FOR_RECOVERY_MESSAGE)
        );
        assert_eq!(
            pods_ready_condition(Some(&c("False", WAIT_FOR_RECOVERY)), true),
            (true, RECOVERED, READY_MESSAGE)
        );
    }
}
