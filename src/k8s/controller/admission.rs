//! The controller's side of admission checks (a child module of `controller.rs`): the
//! `Active` condition of ProvisioningRequest AdmissionChecks, Kueue's ProvisioningRequest
//! check run for every Workload ([`super::provisioning`]), and what the check states of a
//! Workload holding quota mean — all Ready: Admitted; one in Retry: evicted (reason
//! `AdmissionCheck`), its quota released and the Workload queued again after the backoff; one
//! Rejected: deactivated (`spec.active: false`, Evicted `DeactivatedDueToAdmissionCheck`).
//! The pod templates get the checks' podSet updates when the job starts.

use std::collections::BTreeMap;

use serde_json::json;

use super::{Controller, is_admitted, workload_key};
use crate::api::Workload;
use crate::api::checks::{ADMISSION_CHECK_ACTIVE, PROVISIONING_REQUEST_CONTROLLER};
use crate::api::jobs::{AdmittedPodSet, FlavorPlacement};
use crate::cluster::Millis;
use crate::cluster::checks::{CheckDef, Outcome};
use crate::k8s::Error;
use crate::k8s::client::writer::workload_ref;
use crate::k8s::controller::provisioning;
use crate::k8s::schema::kinds::KueueKind;
use crate::k8s::status::admission_checks as checks;
use crate::k8s::status::conditions::{self as cond, ADMITTED, EVICTED, QUOTA_RESERVED, REQUEUED};
use crate::k8s::sync::core::{has_quota_reservation, is_evicted, is_finished};
use crate::k8s::sync::keys::key_of;
use crate::k8s::sync::mirror::{Observed, Source};

/// An eviction whose Workload is queued again after a backoff.
pub(super) struct RetryEviction<'a> {
    /// The Evicted reason (`AdmissionCheck`, `PodsReadyTimeout`).
    pub reason: &'a str,
    pub message: String,
    /// Queued again at this time (no backoff when not after the eviction).
    pub requeue_at: Millis,
    /// `requeueState.count` to write (PodsReady timeouts count their requeues).
    pub count: Option<i32>,
    /// The metric's underlying cause.
    pub cause: &'a str,
}

const ACTIVE_MESSAGE: &str = "The admission check is active";

/// What the API server said about a failed request (its Status message).
fn api_message(e: &Error) -> String {
    match e {
        Error::Kube(kube::Error::Api(s)) => s.message.clone(),
        e => e.to_string(),
    }
}

impl Controller {
    /// Kueue's AdmissionCheck reconciler for `kueue.x-k8s.io/provisioning-request` checks:
    /// `Active=True` when its parameters resolve, else `False` / `BadParametersRef`; written
    /// only when the status differs, and only when the cluster serves ProvisioningRequests.
    pub(super) async fn write_check_statuses(&mut self, now: Millis) {
        // Without the ProvisioningRequest API no such controller runs (Kueue does not start
        // it): nothing is written, and the core treats the checks as inactive.
        if !self.provisioning {
            return;
        }
        let configs: Vec<_> = self.mirror.provisioning_configs.values().cloned().collect();
        let mut writes = Vec::new();
        for (name, ac) in &self.mirror.admission_checks {
            if ac.spec.controller_name != PROVISIONING_REQUEST_CONTROLLER {
                continue;
            }
            let mut bare = ac.clone();
            bare.status = None;
            let params = crate::cluster::checks::CheckParameters {
                provisioning: &configs,
                ..Default::default()
            };
            let def = CheckDef::of(&bare, params);
            let (status, reason, message) = match &def.inactive {
                None => (true, "Active", ACTIVE_MESSAGE.to_string()),
                Some(m) => (false, "BadParametersRef", m.clone()),
            };
            // The AdmissionCheck carries metav1 Conditions: same JSON as the core's.
            let mut conditions: Vec<crate::api::Condition> = ac
                .status
                .as_ref()
                .and_then(|s| serde_json::to_value(&s.conditions).ok())
                .and_then(|v| serde_json::from_value(v).ok())
                .unwrap_or_default();
            let current = cond::find(&conditions, ADMISSION_CHECK_ACTIVE);
            if current.is_some_and(|c| (c.status == "True") == status) {
                continue;
            }
            let mut c = cond::condition(ADMISSION_CHECK_ACTIVE, status, reason, &message, now);
            c.observed_generation = ac.metadata.generation;
            cond::set(&mut conditions, c);
            writes.push((name.clone(), json!({ "conditions": conditions })));
        }
        for (name, status) in writes {
            match self
                .writer
                .patch_queue_status(KueueKind::AdmissionCheck, None, &name, &status)
                .await
            {
                Ok(obj) => {
                    if let Ok(o) = self
                        .mirror
                        .decode(Source::Kueue(KueueKind::AdmissionCheck), &obj)
                    {
                        self.mirror.put(o, true);
                    }
                    // Whether a check is active decides whether its ClusterQueues are.
                    self.dirty = true;
                }
                Err(e) => {
                    tracing::warn!(admission_check = %name, error = %e, "cannot write the AdmissionCheck status");
                    self.write_failed("admission-check-status");
                }
            }
        }
    }

    /// Workloads whose check backoff has passed are queued again.
    pub(super) async fn requeue_due(&mut self, now: Millis) {
        let due: Vec<String> = self
            .requeue_at
            .iter()
            .filter(|&(_, &t)| t <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            let reserved = self
                .mirror
                .workloads
                .get(&key)
                .is_none_or(|wl| has_quota_reservation(wl));
            if reserved {
                // Not yet back from its eviction (the job is stopping): wait.
                if self.mirror.workloads.contains_key(&key) {
                    continue;
                }
                self.requeue_at.remove(&key);
                continue;
            }
            let written = self
                .write_status(&key, |wl| {
                    if has_quota_reservation(wl) {
                        return None;
                    }
                    let mut st = wl.status.as_deref().cloned().unwrap_or_default();
                    let requeued = cond::find(&st.conditions, REQUEUED);
                    if requeued.is_none_or(|c| c.status == "True")
                        && crate::k8s::sync::core::requeue_at(wl).is_none()
                    {
                        return None;
                    }
                    cond::set(
                        &mut st.conditions,
                        cond::condition(
                            REQUEUED,
                            true,
                            "BackoffFinished",
                            "The workload backoff was finished",
                            now,
                        ),
                    );
                    // Kueue clears `requeueAt` and keeps the count (PodsReady timeouts').
                    let count = st
                        .requeue_state
                        .as_ref()
                        .and_then(|v| v.get("count"))
                        .filter(|c| !c.is_null())
                        .cloned();
                    st.requeue_state =
                        count.map(|count| json!({ "count": count, "requeueAt": null }));
                    Some(st)
                })
                .await;
            if let Err(e) = written {
                tracing::warn!(workload = %key, error = %e, "cannot record the end of the backoff; will retry");
                self.write_failed("requeue");
                continue;
            }
            self.requeue_at.remove(&key);
            if let (Some(id), Some(s)) = (self.id_of(&key), self.scheduler.as_mut())
                && !s.is_pending(id)
                && s.cluster.admission(id).is_none()
                && let Err(e) = s.submit(id)
            {
                tracing::debug!(workload = %key, reason = %e, "not queued");
            }
        }
    }

    /// Runs the ProvisioningRequest check, then acts on every reserved Workload's checks.
    pub(super) async fn sync_checks(&mut self, now: Millis) {
        let Some(s) = &self.scheduler else { return };
        let defs = s.cluster.admission_checks.clone();
        // Workloads holding quota, and those that changed (a stale ProvisioningRequest of a
        // Workload that lost its reservation is deleted).
        let mut keys = std::mem::take(&mut self.work.checks);
        keys.extend(self.mirror.reserved.iter().cloned());
        for key in keys {
            let Some(wl) = self.mirror.workloads.get(&key) else {
                continue;
            };
            // A deactivation asked by someone else (a MultiKueue manager evicted its
            // original: `EvictedOnManagerCluster` on this copy), done as Kueue's workload
            // controller does it.
            if has_quota_reservation(wl)
                && !is_evicted(wl)
                && let Some(target) = (wl.status.as_ref())
                    .and_then(|s| cond::find(&s.conditions, checks::DEACTIVATION_TARGET))
                    .filter(|c| c.status == "True")
            {
                let (reason, message) = (target.reason.clone(), target.message.clone());
                if let Err(e) = self.deactivate(&key, &reason, &message, None, now).await {
                    tracing::warn!(workload = %key, error = %e, "cannot deactivate the Workload; will retry");
                    self.write_failed("workload");
                }
                continue;
            }
            // Most Workloads have no checks and no ProvisioningRequest: nothing to do, and
            // nothing copied.
            let prs = &self.mirror.provisioning_requests;
            if checks::states(wl).is_empty() && !prs.values().any(|p| provisioning::owns(p, wl)) {
                continue;
            }
            let wl = wl.clone();
            if let Err(e) = self.sync_provisioning(&wl, &defs, now).await {
                tracing::warn!(workload = %key, error = %e, "ProvisioningRequest check failed; will retry");
                self.write_failed("provisioning-request");
            }
            let Some(wl) = self.mirror.workloads.get(&key).cloned() else {
                continue;
            };
            if !has_quota_reservation(&wl) || is_evicted(&wl) || is_finished(&wl) {
                continue;
            }
            let states = checks::states(&wl);
            if states.is_empty() {
                continue;
            }
            let result = match checks::to_core(states).outcome() {
                Outcome::Waiting => Ok(()),
                Outcome::Admitted if is_admitted(&wl) => Ok(()),
                Outcome::Admitted => self.admit_checked(&key, now).await,
                Outcome::Evict {
                    message,
                    requeue_at,
                } => {
                    self.evict_for_check_retry(&key, &message, requeue_at, now)
                        .await
                }
                Outcome::Deactivate { message } => {
                    self.deactivate_rejected(&key, &message, now).await
                }
            };
            if let Err(e) = result {
                tracing::warn!(workload = %key, error = %e, "cannot act on the admission checks; will retry");
                self.write_failed("admission-checks");
            }
        }
    }

    /// Kueue's ProvisioningRequest controller for one Workload.
    async fn sync_provisioning(
        &mut self,
        wl: &Workload,
        defs: &BTreeMap<String, CheckDef>,
        now: Millis,
    ) -> Result<(), Error> {
        let has_check = checks::states(wl).iter().any(|s| {
            defs.get(&s.name)
                .is_some_and(|d| d.controller == PROVISIONING_REQUEST_CONTROLLER)
        });
        let owned: Vec<kube::core::DynamicObject> = self
            .mirror
            .provisioning_requests
            .values()
            .filter(|p| provisioning::owns(p, wl))
            .cloned()
            .collect();
        if !has_check && owned.is_empty() {
            return Ok(());
        }
        let inputs = provisioning::Inputs {
            checks: defs,
            flavors: &self.mirror.flavors,
            owned: owned.iter().collect(),
            served: self.provisioning,
            now,
        };
        let plan = provisioning::plan(
            wl,
            &provisioning::Status {
                reserved: has_quota_reservation(wl),
                evicted: is_evicted(wl),
                finished: is_finished(wl),
                admitted: is_admitted(wl),
                active: wl.spec.active != Some(false),
            },
            &inputs,
        );
        let namespace = wl
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let pr = provisioning::resource();
        let template_ar =
            kube::core::ApiResource::erase::<k8s_openapi::api::core::v1::PodTemplate>(&());
        for name in &plan.deletes {
            self.writer.delete(&pr, Some(&namespace), name).await?;
            self.mirror
                .provisioning_requests
                .remove(&key_of(Some(&namespace), name));
            // Its PodTemplates go with it (they are owned by the Workload, so nothing else
            // would remove them before the Workload is gone, and a later request of the same
            // name must not find a stale one).
            for ps in &wl.spec.pod_sets {
                let t = provisioning::template_name(name, &ps.name);
                self.writer
                    .delete(&template_ar, Some(&namespace), &t)
                    .await?;
            }
        }
        for new in &plan.creates {
            let name = new.request["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let mut failure = None;
            for t in &new.templates {
                match self
                    .writer
                    .create(&template_ar, &namespace, t, provisioning::FIELD_MANAGER)
                    .await
                {
                    Ok(_) => {}
                    Err(e) if e.is_already_exists() => {
                        // A template left from an earlier request of this name (another
                        // flavor, another count): replaced, never reused.
                        let t_name = t["metadata"]["name"].as_str().unwrap_or_default();
                        self.writer
                            .delete(&template_ar, Some(&namespace), t_name)
                            .await?;
                        if let Err(e) = self
                            .writer
                            .create(&template_ar, &namespace, t, provisioning::FIELD_MANAGER)
                            .await
                        {
                            failure = Some(format!(
                                "Error creating PodTemplate {t_name:?}: {}",
                                api_message(&e)
                            ));
                            break;
                        }
                    }
                    Err(e) => {
                        let t = t["metadata"]["name"].as_str().unwrap_or_default();
                        failure = Some(format!(
                            "Error creating PodTemplate {t:?}: {}",
                            api_message(&e)
                        ));
                        break;
                    }
                }
            }
            if failure.is_none() {
                match self
                    .writer
                    .create(&pr, &namespace, &new.request, provisioning::FIELD_MANAGER)
                    .await
                {
                    Ok(obj) => {
                        self.mirror
                            .observe(Observed::Applied(Source::ProvisioningRequest, obj));
                        self.writer
                            .event(
                                &workload_ref(wl),
                                false,
                                "ProvisioningRequestCreated",
                                "Created",
                                format!("Created ProvisioningRequest: {name:?}"),
                            )
                            .await;
                    }
                    Err(e) if e.is_already_exists() => {}
                    Err(e) => {
                        failure = Some(format!(
                            "Error creating ProvisioningRequest {name:?}: {}",
                            api_message(&e)
                        ))
                    }
                }
            }
            if let Some(message) = failure {
                // Kueue's handleError: a Warning Event and the check's message.
                self.write_failed("provisioning-request");
                self.writer
                    .event(
                        &workload_ref(wl),
                        true,
                        "FailedCreate",
                        "FailedCreate",
                        message.clone(),
                    )
                    .await;
                let check = new.check.clone();
                // Written only when the message changes: a create failing pass after pass
                // does not rewrite the Workload every pass.
                self.write_status_as(&workload_key(wl), provisioning::FIELD_MANAGER, |w| {
                    let mut st = w.status.as_deref().cloned().unwrap_or_default();
                    let states = st.admission_checks.as_mut()?;
                    let s = states.iter_mut().find(|s| s.name == check)?;
                    if s.message == message {
                        return None;
                    }
                    s.message = message.clone();
                    s.last_transition_time = Some(cond::time(now));
                    Some(st)
                })
                .await?;
                // The other checks' states are still written below.
                continue;
            }
        }
        if let Some(states) = plan.states {
            let before = checks::states(wl).to_vec();
            let key = workload_key(wl);
            let written = self
                .write_status_as(&key, provisioning::FIELD_MANAGER, |w| {
                    if checks::states(w) != before.as_slice() {
                        return None;
                    }
                    let mut st = w.status.as_deref().cloned().unwrap_or_default();
                    st.admission_checks = Some(states.clone());
                    Some(st)
                })
                .await?;
            if written.is_some() {
                for e in plan.events {
                    self.writer
                        .event(
                            &workload_ref(wl),
                            false,
                            "AdmissionCheckUpdated",
                            "AdmissionCheckUpdated",
                            e,
                        )
                        .await;
                }
            }
        }
        Ok(())
    }

    /// Every check is Ready: Admitted.
    async fn admit_checked(&mut self, key: &str, now: Millis) -> Result<(), Error> {
        let written = self
            .write_status(key, |wl| {
                if !has_quota_reservation(wl) || is_evicted(wl) || is_admitted(wl) {
                    return None;
                }
                let mut st = wl.status.as_deref().cloned().unwrap_or_default();
                cond::set(
                    &mut st.conditions,
                    cond::condition(ADMITTED, true, "Admitted", cond::ADMITTED_MESSAGE, now),
                );
                Some(st)
            })
            .await?;
        let Some(wl) = written else { return Ok(()) };
        let st = wl.status.as_deref().cloned().unwrap_or_default();
        let cq = st
            .admission
            .as_ref()
            .map(|a| a.cluster_queue.clone())
            .unwrap_or_default();
        let reserved_at = cond::find(&st.conditions, QUOTA_RESERVED)
            .and_then(|c| c.last_transition_time.as_ref())
            .map_or(now, |t| t.0.as_millisecond());
        let waited = (now - reserved_at).max(0) as f64 / 1000.0;
        let labels = self.metrics.labels(vec![
            ("cluster_queue", cq.clone()),
            ("priority_class", super::priority_class(&wl)),
        ]);
        self.metrics.admitted_workloads.get_or_create(&labels).inc();
        self.writer
            .event(
                &workload_ref(&wl),
                false,
                "Admitted",
                "Admitted",
                format!(
                    "Admitted by ClusterQueue {cq}, wait time since reservation was {waited:.0}s"
                ),
            )
            .await;
        Ok(())
    }

    /// A check in Retry: evicted with reason `AdmissionCheck`, the checks reset, and the
    /// Workload held back until `requeue_at`.
    async fn evict_for_check_retry(
        &mut self,
        key: &str,
        message: &str,
        requeue_at: Millis,
        now: Millis,
    ) -> Result<(), Error> {
        let eviction = RetryEviction {
            reason: checks::EVICTED_BY_ADMISSION_CHECK,
            message: message.to_string(),
            requeue_at,
            count: None,
            cause: "",
        };
        self.evict_for_retry(key, &eviction, now).await
    }

    /// An eviction to be retried (a check in Retry, a PodsReady timeout): Evicted with the
    /// reason, the checks reset, `requeueState` written, and the Workload held back until
    /// `requeue_at` (then `Requeued=True BackoffFinished` in [`Controller::requeue_due`]).
    pub(super) async fn evict_for_retry(
        &mut self,
        key: &str,
        e: &RetryEviction<'_>,
        now: Millis,
    ) -> Result<(), Error> {
        let message = cond::truncate(&e.message, 32768);
        let written = self
            .write_status(key, |wl| {
                if !has_quota_reservation(wl) || is_evicted(wl) {
                    return None;
                }
                let mut st = wl.status.as_deref().cloned().unwrap_or_default();
                cond::set(
                    &mut st.conditions,
                    cond::condition(EVICTED, true, e.reason, &message, now),
                );
                if !checks::states(wl).is_empty() {
                    st.admission_checks = Some(checks::reset_states(checks::states(wl), now));
                }
                checks::clear_dispatch(&mut st);
                let mut state = serde_json::Map::new();
                if let Some(n) = e.count {
                    state.insert("count".into(), json!(n));
                }
                if e.requeue_at > now {
                    state.insert("requeueAt".into(), json!(cond::time(e.requeue_at)));
                }
                if !state.is_empty() {
                    st.requeue_state = Some(serde_json::Value::Object(state));
                }
                Some(st)
            })
            .await?;
        if let Some(wl) = written {
            // Queued again by `requeue_due` (at once without a backoff), once the job stopped.
            self.requeue_at
                .insert(key.to_string(), e.requeue_at.max(now));
            self.count_eviction(&wl, e.reason, e.cause);
            let event = format!("EvictedDueTo{}", e.reason);
            self.writer
                .event(&workload_ref(&wl), false, &event, &event, message.clone())
                .await;
        }
        Ok(())
    }

    /// A check Rejected: Kueue's deactivation with reason `AdmissionCheck`.
    async fn deactivate_rejected(
        &mut self,
        key: &str,
        message: &str,
        now: Millis,
    ) -> Result<(), Error> {
        let event = (
            "AdmissionCheckRejected",
            format!("Deactivated due to {message}"),
        );
        self.deactivate(
            key,
            checks::EVICTED_BY_ADMISSION_CHECK,
            message,
            Some(event),
            now,
        )
        .await
    }

    /// Kueue's deactivation: `DeactivationTarget` (`reason`, `message`), `spec.active: false`,
    /// then Evicted `DeactivatedDueTo<reason>` with the checks reset. `event`: a Warning Event
    /// (reason, message) when the target is set.
    pub(super) async fn deactivate(
        &mut self,
        key: &str,
        reason: &str,
        message: &str,
        event: Option<(&str, String)>,
        now: Millis,
    ) -> Result<(), Error> {
        let target = self
            .write_status(key, |wl| {
                if !has_quota_reservation(wl) || is_evicted(wl) {
                    return None;
                }
                let mut st = wl.status.as_deref().cloned().unwrap_or_default();
                if cond::is_true(&st.conditions, checks::DEACTIVATION_TARGET) {
                    return None;
                }
                cond::set(
                    &mut st.conditions,
                    cond::condition(checks::DEACTIVATION_TARGET, true, reason, message, now),
                );
                Some(st)
            })
            .await?;
        if let (Some(wl), Some((event_reason, event_message))) = (&target, event) {
            self.writer
                .event(
                    &workload_ref(wl),
                    true,
                    event_reason,
                    event_reason,
                    event_message,
                )
                .await;
        }
        let Some(wl) = self.mirror.workloads.get(key).cloned() else {
            return Ok(());
        };
        if wl.spec.active != Some(false) {
            let (namespace, name) = super::ns_name(&wl);
            let obj = self
                .writer
                .patch_workload(&namespace, &name, &json!({"spec": {"active": false}}))
                .await?;
            self.put_own_workload(&obj);
        }
        let evicted_reason = format!("DeactivatedDueTo{reason}");
        let evicted_message = format!("The workload is deactivated due to {message}");
        let written = self
            .write_status(key, |wl| {
                if !has_quota_reservation(wl) || is_evicted(wl) {
                    return None;
                }
                let mut st = wl.status.as_deref().cloned().unwrap_or_default();
                st.conditions
                    .retain(|c| c.type_ != checks::DEACTIVATION_TARGET);
                cond::set(
                    &mut st.conditions,
                    cond::condition(EVICTED, true, &evicted_reason, &evicted_message, now),
                );
                if !checks::states(wl).is_empty() {
                    st.admission_checks = Some(checks::reset_states(checks::states(wl), now));
                }
                checks::clear_dispatch(&mut st);
                st.requeue_state = None;
                Some(st)
            })
            .await?;
        if let Some(wl) = written {
            self.count_eviction(&wl, &evicted_reason, "");
            let event = format!("EvictedDueTo{evicted_reason}");
            self.writer
                .event(
                    &workload_ref(&wl),
                    false,
                    &event,
                    &event,
                    evicted_message.clone(),
                )
                .await;
        }
        Ok(())
    }

    /// `kueue_evicted_workloads_total` for an eviction decided by a check or a PodsReady
    /// timeout (`cause`: Kueue's underlying cause, `WaitForStart` or `WaitForRecovery`).
    fn count_eviction(&self, wl: &Workload, reason: &str, cause: &str) {
        let cq = super::admitted_cluster_queue(wl);
        self.metrics
            .evicted_workloads
            .get_or_create(&self.metrics.labels(vec![
                ("cluster_queue", cq),
                ("reason", reason.to_string()),
                ("underlying_cause", cause.to_string()),
                ("priority_class", super::priority_class(wl)),
            ]))
            .inc();
    }

    /// The checks' podSet updates added to what admission gives each podSet (Kueue's
    /// `getPodSetsInfoFromStatus`); a conflict is an error naming the check.
    pub(super) fn add_check_updates(
        &self,
        wl: &Workload,
        admitted: &mut BTreeMap<String, AdmittedPodSet>,
    ) -> Result<(), String> {
        let states = checks::states(wl);
        if states.iter().all(|s| s.pod_set_updates.is_empty()) {
            return Ok(());
        }
        let mut base: BTreeMap<String, checks::Merged> = BTreeMap::new();
        for ps in &wl.spec.pod_sets {
            let meta = ps.template.metadata.clone().unwrap_or_default();
            let mut node_selector = ps
                .template
                .spec
                .as_ref()
                .and_then(|s| s.node_selector.clone())
                .unwrap_or_default();
            if let Some(a) = admitted.get(&ps.name) {
                for f in &a.flavors {
                    node_selector.extend(f.node_labels.clone());
                }
            }
            base.insert(
                ps.name.clone(),
                checks::Merged {
                    labels: meta.labels.unwrap_or_default(),
                    annotations: meta.annotations.unwrap_or_default(),
                    node_selector,
                    tolerations: Vec::new(),
                },
            );
        }
        for (name, m) in checks::merged_updates(states, &base)? {
            let Some(a) = admitted.get_mut(&name) else {
                continue;
            };
            a.labels.extend(m.labels);
            a.annotations.extend(m.annotations);
            if !m.node_selector.is_empty() || !m.tolerations.is_empty() {
                a.flavors.push(FlavorPlacement {
                    node_labels: m.node_selector,
                    tolerations: m.tolerations,
                });
            }
        }
        Ok(())
    }
}
