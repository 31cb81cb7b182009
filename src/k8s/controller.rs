//! The reconcile pass: jobs → Workloads, the core rebuilt when the cluster changed, scheduling
//! cycles, decisions written back, then jobs started or stopped to match their Workloads, and
//! queue status and metrics refreshed.
//!
//! Writes happen in decision order and each answer from the API server updates the mirror. A
//! status write carries the resourceVersion it was computed from; on a conflict the Workload is
//! read again and the write recomputed (at most [`MAX_ATTEMPTS`] times). An admission that
//! cannot be written is released and requeued in memory, so memory never holds quota the
//! cluster does not show.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde_json::{Value, json};

use super::Error;
use super::checks;
use super::conditions::{
    self as cond, ADMITTED, EVICTED, FINISHED, PREEMPTED, QUOTA_RESERVED, REQUEUED,
};
use super::core::{self, Configure, has_quota_reservation, is_evicted, is_finished};
use super::integration::api_resource;
use super::metrics::Metrics;
use super::mirror::{Mirror, Observed, Source, key_of};
use super::podgroup::{self, Group};
use super::resources::KueueKind;
use super::status::{self, carry_transition_times};
use super::visibility::Snapshot;
use super::writer::{Writer, workload_ref};
use crate::api::jobs::{
    AdmittedPodSet, FlavorPlacement, JOB_UID_LABEL, JobKind, attribution, problems_text,
};
use crate::api::{self, Workload, WorkloadStatus};
use crate::cluster::{Admission, Cluster, CqId, Millis, WorkloadId};
use crate::scheduler::{Decision, Scheduler};

#[path = "admission.rs"]
mod admission;
#[path = "pods_ready.rs"]
pub mod pods_ready;

/// Attempts per status write when the API server reports conflicts.
pub const MAX_ATTEMPTS: usize = 3;
/// Cycles per pass at most (each cycle admits at most one workload per ClusterQueue).
const MAX_CYCLES_PER_PASS: usize = 1000;

pub type Clock = Arc<dyn Fn() -> Millis + Send + Sync>;

/// What the HTTP endpoints read.
#[derive(Debug, Default)]
pub struct Shared {
    /// Every watched source was listed and a pass ran.
    pub ready: bool,
    pub visibility: Snapshot,
    /// The webhooks are starting (certificate, CA bundle): not ready yet.
    pub webhooks_pending: bool,
    /// This replica schedules (it holds the Lease, or runs without election). A standby
    /// replica keeps its mirror and the webhooks' view current, and is ready once every source
    /// is listed, so that the webhooks are answered while the leader changes.
    pub leading: bool,
    /// What the admission webhooks read, refreshed after each pass.
    pub webhook: Arc<super::webhook::View>,
}

pub struct Controller {
    pub mirror: Mirror,
    scheduler: Option<Scheduler>,
    dirty: bool,
    kinds: Vec<JobKind>,
    pod_groups: bool,
    writer: Writer,
    pub metrics: Arc<Metrics>,
    clock: Clock,
    configure: Configure,
    /// Preemptions decided whose eviction is not written yet: workload key → (reason, message).
    evictions: BTreeMap<String, (String, String)>,
    /// A write failed during this pass: stop cycling until the next pass.
    write_failed: bool,
    /// LocalQueue label keys copied onto Workloads and, at admission, into pod templates.
    attribution: Vec<String>,
    pub shared: Arc<RwLock<Shared>>,
    /// The cluster serves ProvisioningRequests: they are watched and Kueue's check runs.
    provisioning: bool,
    /// Workloads evicted by a check in `Retry`: queued again at this time.
    requeue_at: BTreeMap<String, Millis>,
}

impl Controller {
    pub fn new(
        writer: Writer,
        kinds: Vec<JobKind>,
        pod_groups: bool,
        metrics: Arc<Metrics>,
        clock: Clock,
        configure: Configure,
    ) -> Controller {
        Controller {
            mirror: Mirror::new(kinds.len()),
            scheduler: None,
            dirty: true,
            kinds,
            pod_groups,
            writer,
            metrics,
            clock,
            configure,
            evictions: BTreeMap::new(),
            write_failed: false,
            attribution: Vec::new(),
            shared: Arc::new(RwLock::new(Shared::default())),
            provisioning: false,
            requeue_at: BTreeMap::new(),
        }
    }

    /// The cluster serves `autoscaling.x-k8s.io/v1` ProvisioningRequests: watch them and run
    /// Kueue's ProvisioningRequest admission check.
    pub fn set_provisioning_requests(&mut self, served: bool) {
        self.provisioning = served;
        self.mirror.provisioning_served = served;
    }

    /// Every source that must be listed before the first cycle.
    pub fn sources(&self) -> Vec<Source> {
        let mut s: Vec<Source> = KueueKind::ALL.into_iter().map(Source::Kueue).collect();
        s.push(Source::Namespace);
        if self.pod_groups {
            s.push(Source::Pod);
        }
        s.extend((0..self.kinds.len()).map(Source::Job));
        if self.provisioning {
            s.push(Source::ProvisioningRequest);
        }
        s
    }

    /// Sets the LocalQueue label keys for cost attribution (`--cost-attribution-labels`).
    pub fn set_attribution_labels(&mut self, keys: Vec<String>) {
        self.attribution = keys;
    }

    /// A new Workload with its LocalQueue's attribution labels.
    fn attributed(&self, mut wl: Workload) -> Workload {
        let queue = wl.spec.queue_name.clone().unwrap_or_default();
        let lq = self
            .mirror
            .local_queues
            .get(&key_of(wl.metadata.namespace.as_deref(), &queue));
        attribution::copy_local_queue_labels(
            &mut wl,
            lq.and_then(|q| q.metadata.labels.as_ref()),
            &self.attribution,
        );
        wl
    }

    pub fn kinds(&self) -> &[JobKind] {
        &self.kinds
    }

    pub fn scheduler(&self) -> Option<&Scheduler> {
        self.scheduler.as_ref()
    }

    pub fn observe(&mut self, ev: Observed) {
        if self.mirror.observe(ev).core {
            self.dirty = true;
        }
    }

    /// A standby replica's pass: once every source is listed, the webhooks' view is published
    /// and the replica is ready; nothing is scheduled or written.
    pub fn stand_by(&mut self) {
        if !self.mirror.is_synced(&self.sources()) {
            return;
        }
        let view = Arc::new(super::webhook::View::of(&self.mirror));
        if let Ok(mut shared) = self.shared.write() {
            shared.webhook = view;
            shared.ready = true;
        }
    }

    /// One reconcile pass. Does nothing until every source has been listed: quota usage is
    /// always rebuilt from the cluster's admitted Workloads before the first cycle.
    pub async fn step(&mut self) {
        if !self.mirror.is_synced(&self.sources()) {
            return;
        }
        let now = (self.clock)();
        self.write_check_statuses(now).await;
        for _ in 0..2 {
            self.sync_jobs(now).await;
            if self.dirty || self.scheduler.is_none() {
                self.rebuild(now);
            }
            self.retry_evictions(now).await;
            self.requeue_due(now).await;
            self.run_cycles(now).await;
            self.sync_checks(now).await;
            self.sync_pods_ready(now).await;
            self.sync_jobs(now).await;
            if !self.dirty {
                break;
            }
        }
        self.write_queue_statuses(now).await;
        if let Some(s) = &self.scheduler {
            self.metrics.observe_state(s);
            let snapshot = Snapshot::of(s);
            let view = Arc::new(super::webhook::View::of(&self.mirror));
            if let Ok(mut shared) = self.shared.write() {
                shared.visibility = snapshot;
                shared.webhook = view;
                shared.ready = true;
                shared.leading = true;
            }
        }
    }

    fn rebuild(&mut self, now: Millis) {
        let mut s = core::build(&self.mirror, now, &self.configure);
        // Admission fair sharing's history lives in the scheduler: keep it across rebuilds.
        if let Some(old) = &self.scheduler {
            s.cluster.carry_lq_usage_from(&old.cluster);
            // So do the preemption budgets' recent evictions.
            s.carry_budgets_from(old);
        }
        tracing::info!(
            workloads = s.cluster.workloads.len(),
            cluster_queues = s.cluster.cluster_queues.len(),
            "core rebuilt from the cluster"
        );
        self.scheduler = Some(s);
        self.dirty = false;
        // Backoffs of check evictions survive a restart in `status.requeueState`.
        for (key, wl) in &self.mirror.workloads {
            if let Some(t) = core::requeue_at(wl)
                && t > now
                && !has_quota_reservation(wl)
            {
                self.requeue_at.entry(key.clone()).or_insert(t);
            }
        }
    }

    fn id_of(&self, key: &str) -> Option<WorkloadId> {
        self.scheduler.as_ref()?.cluster.by_key.get(key).copied()
    }

    async fn run_cycles(&mut self, now: Millis) {
        self.write_failed = false;
        for _ in 0..MAX_CYCLES_PER_PASS {
            // waitForPodsReady.blockAdmission: nothing is admitted while a Workload holding
            // quota is not PodsReady (as the simulator, the cycles are skipped).
            if self.admission_blocked() {
                break;
            }
            let Some(s) = self.scheduler.as_mut() else {
                return;
            };
            // Picks up reloaded plugins between cycles (cheap when nothing changed).
            (self.configure)(s);
            let started = std::time::Instant::now();
            let outcome = s.schedule(now);
            let elapsed = started.elapsed().as_secs_f64();
            for f in s.take_fallbacks() {
                self.metrics
                    .plugin_fallbacks
                    .get_or_create(&self.metrics.labels(vec![
                        ("plugin", f.policy.name.to_string()),
                        ("extension", f.extension.to_string()),
                        ("reason", f.error.reason().to_string()),
                    ]))
                    .inc();
            }
            let progress = outcome.made_progress();
            for d in &outcome.decisions {
                let result = match d {
                    Decision::Admitted { .. } => "success",
                    Decision::NotAdmitted { .. } => "inadmissible",
                    Decision::Preempted { .. } => continue,
                };
                let labels = self.metrics.labels(vec![("result", result.into())]);
                self.metrics.admission_attempts.get_or_create(&labels).inc();
                self.metrics
                    .admission_attempt_duration
                    .get_or_create(&labels)
                    .observe(elapsed);
            }
            for d in outcome.decisions {
                self.apply(d, now).await;
            }
            // After a failed write, wait for the next pass rather than spin on the API server.
            if !progress || self.write_failed {
                break;
            }
        }
    }

    async fn apply(&mut self, d: Decision, now: Millis) {
        match d {
            Decision::Admitted {
                workload,
                admission,
                ..
            } => self.admit(workload, admission, now).await,
            Decision::Preempted {
                workload,
                preemptor,
                reason,
                ..
            } => self.preempt(workload, preemptor, reason, now).await,
            Decision::NotAdmitted {
                workload,
                reason,
                message,
                ..
            } => self.pending(workload, &reason, &message, now).await,
        }
    }

    // ---- Decisions -------------------------------------------------------------------------

    async fn admit(&mut self, id: WorkloadId, admission: Admission, now: Millis) {
        let Some(s) = &self.scheduler else { return };
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
        let result = self
            .write_status(&key, |wl| {
                if has_quota_reservation(wl) || is_finished(wl) {
                    return None;
                }
                let mut st = wl.status.clone().unwrap_or_default();
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
                    cond::condition(
                        QUOTA_RESERVED,
                        true,
                        "QuotaReserved",
                        &cond::quota_reserved_message(&cq),
                        now,
                    ),
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
            })
            .await;
        match result {
            Ok(Some(wl)) => {
                let waited = (now - queued_at(&wl)).max(0) as f64 / 1000.0;
                let labels = self.metrics.labels(vec![
                    ("cluster_queue", cq.clone()),
                    ("priority_class", priority_class(&wl)),
                ]);
                self.metrics
                    .quota_reserved_workloads
                    .get_or_create(&labels)
                    .inc();
                self.metrics
                    .quota_reserved_wait_time
                    .get_or_create(&labels)
                    .observe(waited);
                let r = workload_ref(&wl);
                self.writer
                    .event(&r, false, "QuotaReserved", "QuotaReserved", format!(
                        "Quota reserved in ClusterQueue {cq}, wait time since queued was {waited:.0}s"
                    ))
                    .await;
                if two_phase {
                    return;
                }
                self.metrics.admitted_workloads.get_or_create(&labels).inc();
                self.metrics
                    .admission_wait_time
                    .get_or_create(&labels)
                    .observe(waited);
                self.writer
                    .event(
                        &r,
                        false,
                        "Admitted",
                        "Admitted",
                        format!(
                            "Admitted by ClusterQueue {cq}, wait time since reservation was 0s"
                        ),
                    )
                    .await;
            }
            Ok(None) => {
                tracing::info!(workload = %key, "admission no longer applies; releasing it");
                self.undo_admission(id);
                self.dirty = true;
            }
            Err(e) => {
                tracing::warn!(workload = %key, error = %e, "cannot write the admission; releasing it");
                self.write_failed("admission");
                self.undo_admission(id);
            }
        }
    }

    fn undo_admission(&mut self, id: WorkloadId) {
        if let Some(s) = self.scheduler.as_mut() {
            s.complete_eviction(id);
        }
    }

    async fn preempt(
        &mut self,
        id: WorkloadId,
        preemptor: WorkloadId,
        reason: &'static str,
        _now: Millis,
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
            .map(priority_class)
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
        self.evictions.insert(key, (reason.to_string(), message));
        self.retry_evictions(_now).await;
    }

    /// Writes the evictions decided but not yet recorded in the cluster.
    async fn retry_evictions(&mut self, now: Millis) {
        let pending: Vec<(String, (String, String))> = self
            .evictions
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (key, (reason, message)) in pending {
            let result = self
                .write_status(&key, |wl| {
                    if !has_quota_reservation(wl) || is_evicted(wl) || is_finished(wl) {
                        return None;
                    }
                    let mut st = wl.status.clone().unwrap_or_default();
                    cond::set(
                        &mut st.conditions,
                        cond::condition(EVICTED, true, cond::EVICTED_BY_PREEMPTION, &message, now),
                    );
                    cond::set(
                        &mut st.conditions,
                        cond::condition(PREEMPTED, true, &reason, &message, now),
                    );
                    // Every eviction resets the admission checks (Kueue's evict.Evict).
                    if !checks::states(wl).is_empty() {
                        st.admission_checks = Some(checks::reset_states(checks::states(wl), now));
                    }
                    Some(st)
                })
                .await;
            match result {
                Ok(written) => {
                    self.evictions.remove(&key);
                    if let Some(wl) = written {
                        self.writer
                            .event(
                                &workload_ref(&wl),
                                false,
                                "Preempted",
                                "Preempted",
                                message.clone(),
                            )
                            .await;
                    }
                }
                Err(e) => {
                    tracing::warn!(workload = %key, error = %e, "cannot write the eviction; will retry");
                    self.write_failed("eviction");
                }
            }
        }
    }

    async fn pending(&mut self, id: WorkloadId, reason: &str, message: &str, now: Millis) {
        let Some(s) = &self.scheduler else { return };
        let key = s.cluster.workload(id).key.clone();
        let unchanged = self.mirror.workloads.get(&key).is_some_and(|wl| {
            wl.status
                .as_ref()
                .and_then(|st| cond::find(&st.conditions, QUOTA_RESERVED))
                .is_some_and(|c| c.status == "False" && c.reason == reason && c.message == message)
        });
        if unchanged {
            return;
        }
        let result = self
            .write_status(&key, |wl| {
                if has_quota_reservation(wl) || is_finished(wl) {
                    return None;
                }
                let mut st = wl.status.clone().unwrap_or_default();
                cond::set(
                    &mut st.conditions,
                    cond::condition(QUOTA_RESERVED, false, reason, message, now),
                );
                Some(st)
            })
            .await;
        match result {
            Ok(Some(wl)) => {
                self.writer
                    .event(
                        &workload_ref(&wl),
                        true,
                        reason,
                        reason,
                        message.to_string(),
                    )
                    .await;
            }
            Ok(None) => {}
            Err(e) => {
                tracing::debug!(workload = %key, error = %e, "cannot record why the workload is pending");
                self.write_failed("pending");
            }
        }
    }

    fn write_failed(&mut self, what: &str) {
        self.write_failed = true;
        self.metrics
            .write_failures
            .get_or_create(&self.metrics.labels(vec![("write", what.into())]))
            .inc();
    }

    /// Writes a Workload status computed by `build` from the latest known object, with
    /// `metadata.resourceVersion` as a precondition. On a conflict the Workload is read again
    /// and `build` runs again. `Ok(None)`: `build` found the write no longer applies.
    async fn write_status(
        &mut self,
        key: &str,
        build: impl Fn(&Workload) -> Option<WorkloadStatus>,
    ) -> Result<Option<Workload>, Error> {
        self.write_status_as(key, super::writer::SCHEDULER_MANAGER, build)
            .await
    }

    /// [`Controller::write_status`] as another field manager (a check controller).
    async fn write_status_as(
        &mut self,
        key: &str,
        manager: &str,
        build: impl Fn(&Workload) -> Option<WorkloadStatus>,
    ) -> Result<Option<Workload>, Error> {
        for attempt in 1..=MAX_ATTEMPTS {
            let Some(wl) = self.mirror.workloads.get(key).cloned() else {
                return Ok(None);
            };
            let Some(status) = build(&wl) else {
                return Ok(None);
            };
            let (namespace, name) = ns_name(&wl);
            let body = status_patch(&wl, &status);
            match self
                .writer
                .patch_workload_status_as(&namespace, &name, &body, manager)
                .await
            {
                Ok(obj) => return Ok(self.put_own_workload(&obj)),
                Err(e) if e.is_conflict() && attempt < MAX_ATTEMPTS => {
                    tracing::info!(workload = %key, attempt, "conflict writing status; reading the workload again");
                    let fresh = self.writer.get_workload(&namespace, &name).await?;
                    self.observe(Observed::Applied(Source::Kueue(KueueKind::Workload), fresh));
                }
                Err(e) if e.is_not_found() => {
                    self.mirror.workloads.remove(key);
                    self.dirty = true;
                    return Ok(None);
                }
                Err(e) => return Err(e),
            }
        }
        unreachable!("the last attempt returns")
    }

    fn put_own_workload(&mut self, obj: &kube::core::DynamicObject) -> Option<Workload> {
        match self.mirror.decode(Source::Kueue(KueueKind::Workload), obj) {
            Ok(object) => {
                self.mirror.put(object, true);
                let key = key_of(
                    obj.metadata.namespace.as_deref(),
                    obj.metadata.name.as_deref().unwrap_or_default(),
                );
                self.mirror.workloads.get(&key).cloned()
            }
            Err(e) => {
                tracing::warn!(error = %e, "the API server returned a Workload that does not decode");
                self.dirty = true;
                None
            }
        }
    }

    // ---- Job side --------------------------------------------------------------------------

    async fn sync_jobs(&mut self, now: Millis) {
        for i in 0..self.kinds.len() {
            let keys: Vec<String> = self.mirror.jobs[i].keys().cloned().collect();
            for key in keys {
                if let Err(e) = self.sync_job(i, &key, now).await {
                    tracing::warn!(kind = %self.kinds[i].spec.kind, job = %key, error = %e, "job sync failed; will retry");
                    self.write_failed("job");
                }
            }
        }
        if self.pod_groups {
            for group in podgroup::groups(&self.mirror) {
                if let Err(e) = self.sync_pod_group(&group, now).await {
                    tracing::warn!(group = %format!("{}/{}", group.namespace, group.name), error = %e, "pod group sync failed; will retry");
                    self.write_failed("pod-group");
                }
            }
        }
    }

    fn owned_workload(
        &self,
        namespace: &str,
        name: &str,
        owner_uid: Option<&str>,
    ) -> Option<Workload> {
        let wl = self.mirror.workloads.get(&key_of(Some(namespace), name))?;
        let owned = owner_uid.is_none_or(|uid| {
            wl.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.uid == uid)
        });
        owned.then(|| wl.clone())
    }

    async fn sync_job(&mut self, i: usize, key: &str, now: Millis) -> Result<(), Error> {
        let kind = self.kinds[i].clone();
        let Some(mut job) = self.mirror.jobs[i].get(key).cloned() else {
            return Ok(());
        };
        // A child of another managed job (a RayJob's RayCluster, a JobSet's Jobs) runs under
        // its parent's Workload, as Kueue's IsOwnerManagedByKueue.
        if job.metadata.deletion_timestamp.is_some()
            || JobKind::controlled_by_any(&job.metadata, &self.kinds)
        {
            return Ok(());
        }
        let namespace = job.metadata.namespace.clone();
        let ns = namespace.as_deref();
        let name = job.metadata.name.clone().unwrap_or_default();
        let value = to_value(&job);
        let wl = self.owned_workload(
            ns.unwrap_or("default"),
            &kind.workload_name(&name, job.metadata.uid.as_deref().unwrap_or_default(), None),
            job.metadata.uid.as_deref(),
        );
        if let Some((success, message)) = kind.finished(&value) {
            if let Some(wl) = wl.filter(|w| !is_finished(w)) {
                self.finish(&wl, success, &message, now).await?;
            }
            return Ok(());
        }
        let Some(wl) = wl else {
            let catalog = core::catalog(&self.mirror);
            let new = match kind.workloads(&job.metadata, &value, &catalog) {
                Ok(mut made) if made.len() == 1 => made.remove(0),
                Ok(_) => return Ok(()),
                Err(problems) => {
                    return Err(Error::Integration {
                        kind: kind.spec.kind.clone(),
                        message: format!("{key}: {}", problems_text(&problems)),
                    });
                }
            };
            if !kind.is_suspended(&value) {
                self.patch_job(i, ns, &name, kind.suspend_ops(&value), false)
                    .await?;
            }
            let new = self.attributed(new);
            let created = self.writer.create_workload(&new).await?;
            self.observe(Observed::Applied(
                Source::Kueue(KueueKind::Workload),
                created,
            ));
            return Ok(());
        };
        let reserved = has_quota_reservation(&wl);
        if reserved && is_evicted(&wl) {
            if !kind.is_suspended(&value) {
                job = self
                    .patch_job(i, ns, &name, kind.suspend_ops(&value), false)
                    .await?;
            }
            let ops = kind.clear_status_ops(&to_value(&job));
            if !ops.is_empty() {
                job = self.patch_job(i, ns, &name, ops, true).await?;
            }
            let ops = kind
                .restore_ops(&to_value(&job), &wl)
                .map_err(|m| integration_error(&kind, key, m))?;
            if !ops.is_empty() {
                job = self.patch_job(i, ns, &name, ops, false).await?;
            }
            if !kind.is_active(&to_value(&job)) {
                self.complete_eviction(&wl, now).await?;
            }
        } else if reserved && is_admitted(&wl) {
            if kind.is_suspended(&value) {
                let mut admitted = self.admitted_pod_sets(&wl);
                if let Err(m) = self.add_check_updates(&wl, &mut admitted) {
                    // A permanent error in Kueue: the Workload finishes, `FailedToStart`.
                    tracing::warn!(workload = %workload_key(&wl), error = %m, "cannot start the job");
                    return self.finish_with(&wl, "FailedToStart", &m, now).await;
                }
                let labels = attribution::attribution_labels(&wl, &self.attribution);
                let ops = kind
                    .start_ops(&value, &admitted, &labels)
                    .map_err(|m| integration_error(&kind, key, m))?;
                self.patch_job(i, ns, &name, ops, false).await?;
            }
        } else if !reserved && !kind.is_suspended(&value) {
            job = self
                .patch_job(i, ns, &name, kind.suspend_ops(&value), false)
                .await?;
            let ops = kind
                .restore_ops(&to_value(&job), &wl)
                .map_err(|m| integration_error(&kind, key, m))?;
            if !ops.is_empty() {
                self.patch_job(i, ns, &name, ops, false).await?;
            }
        }
        Ok(())
    }

    async fn patch_job(
        &mut self,
        i: usize,
        namespace: Option<&str>,
        name: &str,
        ops: Vec<Value>,
        status: bool,
    ) -> Result<kube::core::DynamicObject, Error> {
        let resource = api_resource(&self.kinds[i]);
        let obj = self
            .writer
            .json_patch(&resource, namespace, name, ops, status)
            .await?;
        self.observe(Observed::Applied(Source::Job(i), obj.clone()));
        Ok(obj)
    }

    async fn sync_pod_group(&mut self, group: &Group, now: Millis) -> Result<(), Error> {
        let wl = self.owned_workload(&group.namespace, &group.name, None);
        if let Some((success, message)) = group.finished() {
            if let Some(wl) = wl.filter(|w| !is_finished(w)) {
                self.finish(&wl, success, &message, now).await?;
            }
            return Ok(());
        }
        let Some(wl) = wl else {
            if !group.is_complete() {
                return Ok(());
            }
            let catalog = core::catalog(&self.mirror);
            let new = match group.workload(&catalog) {
                Ok(Some(w)) => w,
                Ok(None) => return Ok(()),
                Err(message) => {
                    return Err(Error::Integration {
                        kind: "Pod".into(),
                        message: format!("{}/{}: {message}", group.namespace, group.name),
                    });
                }
            };
            let new = self.attributed(new);
            let created = self.writer.create_workload(&new).await?;
            self.observe(Observed::Applied(
                Source::Kueue(KueueKind::Workload),
                created,
            ));
            return Ok(());
        };
        let reserved = has_quota_reservation(&wl);
        let pod_ar = podgroup::pod_resource();
        if reserved && is_evicted(&wl) {
            for pod in group.live_pods() {
                let name = pod.metadata.name.clone().unwrap_or_default();
                self.writer
                    .delete(&pod_ar, Some(&group.namespace), &name)
                    .await?;
            }
            if group.live_pods().next().is_none() && !group.is_active() {
                self.complete_eviction(&wl, now).await?;
            }
        } else if reserved && is_admitted(&wl) {
            let mut admitted = self.admitted_pod_sets(&wl);
            if let Err(m) = self.add_check_updates(&wl, &mut admitted) {
                tracing::warn!(workload = %workload_key(&wl), error = %m, "cannot start the pod group");
                return self.finish_with(&wl, "FailedToStart", &m, now).await;
            }
            let labels = attribution::attribution_labels(&wl, &self.attribution);
            for pod in &group.pods {
                let ops = Group::ungate_ops(pod, &admitted, &wl, &labels);
                if ops.is_empty() {
                    continue;
                }
                let name = pod.metadata.name.clone().unwrap_or_default();
                let obj = self
                    .writer
                    .json_patch(&pod_ar, Some(&group.namespace), &name, ops, false)
                    .await?;
                self.observe(Observed::Applied(Source::Pod, obj));
            }
        }
        Ok(())
    }

    /// The flavors and pod count admitted for each podSet of an admitted Workload.
    fn admitted_pod_sets(&self, wl: &Workload) -> BTreeMap<String, AdmittedPodSet> {
        let mut out = BTreeMap::new();
        let Some(admission) = wl.status.as_ref().and_then(|s| s.admission.as_ref()) else {
            return out;
        };
        for psa in &admission.pod_set_assignments {
            let mut names: Vec<&String> = psa.flavors.values().collect();
            names.sort();
            names.dedup();
            let infos = names
                .into_iter()
                .filter_map(|f| self.mirror.flavors.get(f))
                .map(|rf| FlavorPlacement {
                    node_labels: rf.spec.node_labels.clone(),
                    tolerations: rf.spec.tolerations.clone(),
                })
                .collect();
            let count = psa.count.or_else(|| {
                wl.spec
                    .pod_sets
                    .iter()
                    .find(|p| p.name == psa.name)
                    .map(|p| p.count)
            });
            out.insert(
                psa.name.clone(),
                AdmittedPodSet {
                    flavors: infos,
                    count: count.unwrap_or_default(),
                    ..AdmittedPodSet::default()
                },
            );
        }
        out
    }

    /// The job is stopped: the Workload gives its quota back and is queued again.
    async fn complete_eviction(&mut self, wl: &Workload, now: Millis) -> Result<(), Error> {
        let key = workload_key(wl);
        let written = self
            .write_status(&key, |wl| {
                if !has_quota_reservation(wl) || !is_evicted(wl) {
                    return None;
                }
                let mut st = wl.status.clone().unwrap_or_default();
                let ev = cond::find(&st.conditions, EVICTED).cloned()?;
                let requeued = ev.reason == cond::EVICTED_BY_PREEMPTION;
                let c = &mut st.conditions;
                cond::set(
                    c,
                    cond::condition(REQUEUED, requeued, &ev.reason, &ev.message, now),
                );
                cond::set(
                    c,
                    cond::condition(
                        QUOTA_RESERVED,
                        false,
                        cond::PENDING_EVALUATION,
                        &ev.message,
                        now,
                    ),
                );
                cond::set(
                    c,
                    cond::condition(
                        ADMITTED,
                        false,
                        cond::NO_RESERVATION,
                        cond::NO_RESERVATION_MESSAGE,
                        now,
                    ),
                );
                // Kueue's job reconciler: a Workload not admitted is `WaitForStart`, so that
                // its next admission waits for a start, not a recovery.
                if c.iter().any(|c| c.type_ == cond::PODS_READY) {
                    cond::set(
                        c,
                        cond::condition(
                            cond::PODS_READY,
                            false,
                            pods_ready::WAIT_FOR_START,
                            pods_ready::WAIT_FOR_START_MESSAGE,
                            now,
                        ),
                    );
                }
                st.admission = None;
                Some(st)
            })
            .await?;
        if let Some(written) = written {
            let inactive = written.spec.active == Some(false);
            let evicted_at = wl
                .status
                .as_ref()
                .and_then(|s| cond::find(&s.conditions, EVICTED))
                .and_then(|c| c.last_transition_time.as_ref())
                .map_or(now, |t| t.0.as_millisecond());
            // Evicted to be retried (a check in Retry, a PodsReady timeout): `requeue_due`
            // queues it again once its backoff has passed.
            let backoff = self.requeue_at.contains_key(&key);
            let reason = wl
                .status
                .as_ref()
                .and_then(|s| cond::find(&s.conditions, EVICTED))
                .map(|c| c.reason.clone())
                .unwrap_or_default();
            let by_creation = reason == pods_ready::EVICTED_BY_PODS_READY_TIMEOUT
                && self
                    .scheduler
                    .as_ref()
                    .and_then(|s| s.cluster.settings.wait_for_pods_ready.as_ref())
                    .is_some_and(|w| !w.by_eviction_time);
            // `requeuingStrategy.timestamp: Creation`: back in the queue at its creation time.
            let queued_at = match wl.metadata.creation_timestamp.as_ref() {
                Some(t) if by_creation => t.0.as_millisecond(),
                _ => evicted_at,
            };
            let reason = if reason == pods_ready::EVICTED_BY_PODS_READY_TIMEOUT {
                pods_ready::EVICTED_BY_PODS_READY_TIMEOUT
            } else {
                checks::EVICTED_BY_ADMISSION_CHECK
            };
            match (self.id_of(&key), self.scheduler.as_mut()) {
                (Some(id), Some(s)) if inactive => s.deactivate(id),
                (Some(id), Some(s)) if backoff => s.release_for_retry(id, queued_at, reason),
                (Some(id), Some(s)) => s.complete_eviction(id),
                _ => self.dirty = true,
            }
        }
        Ok(())
    }

    async fn finish(
        &mut self,
        wl: &Workload,
        success: bool,
        message: &str,
        now: Millis,
    ) -> Result<(), Error> {
        let reason = if success {
            cond::FINISHED_SUCCEEDED
        } else {
            cond::FINISHED_FAILED
        };
        self.finish_with(wl, reason, message, now).await
    }

    /// Declares the Workload finished with `reason` (also Kueue's `FailedToStart`).
    async fn finish_with(
        &mut self,
        wl: &Workload,
        reason: &str,
        message: &str,
        now: Millis,
    ) -> Result<(), Error> {
        let key = workload_key(wl);
        let written = self
            .write_status(&key, |wl| {
                if is_finished(wl) {
                    return None;
                }
                let mut st = wl.status.clone().unwrap_or_default();
                cond::set(
                    &mut st.conditions,
                    cond::condition(FINISHED, true, reason, message, now),
                );
                Some(st)
            })
            .await?;
        if let Some(wl) = written {
            let cq = admitted_cluster_queue(&wl);
            self.metrics
                .finished_workloads
                .get_or_create(&self.metrics.labels(vec![
                    ("cluster_queue", cq),
                    ("priority_class", priority_class(&wl)),
                ]))
                .inc();
            self.writer
                .event(
                    &workload_ref(&wl),
                    false,
                    "Finished",
                    "Finished",
                    format!("Workload '{key}' is declared finished"),
                )
                .await;
            match (self.id_of(&key), self.scheduler.as_mut()) {
                (Some(id), Some(s)) => s.finish(id),
                _ => self.dirty = true,
            }
        }
        Ok(())
    }

    // ---- Queue status ----------------------------------------------------------------------

    async fn write_queue_statuses(&mut self, now: Millis) {
        let Some(s) = &self.scheduler else { return };
        let mut writes: Vec<(KueueKind, Option<String>, String, Value)> = Vec::new();
        for (name, cq) in &self.mirror.cluster_queues {
            let Some(&id) = s.cluster.cq_by_name.get(name) else {
                continue;
            };
            let mut st = status::cluster_queue_status(s, id, now);
            let previous: Option<status::ClusterQueueStatus> = cq
                .status
                .clone()
                .and_then(|v| serde_json::from_value(v).ok());
            if let Some(p) = &previous {
                carry_transition_times(&mut st.conditions, &p.conditions);
            }
            if previous.as_ref() != Some(&st) {
                writes.push((KueueKind::ClusterQueue, None, name.clone(), json!(st)));
            }
        }
        // Cohorts that have an object (implicit ones have nowhere to write to), unless on a
        // cycle: Kueue refuses those and writes nothing.
        let cohort_nodes: BTreeMap<&str, crate::quota::NodeId> = s
            .cluster
            .tree
            .nodes()
            .filter(|&(id, n)| {
                n.kind == crate::quota::NodeKind::Cohort
                    && !s.cluster.node_meta[id.index()].in_cycle
            })
            .map(|(id, n)| (n.name.as_str(), id))
            .collect();
        for (name, co) in &self.mirror.cohorts {
            let Some(&node) = cohort_nodes.get(name.as_str()) else {
                continue;
            };
            let st = status::cohort_status(&s.cluster, node);
            let previous: status::CohortStatus = co
                .status
                .clone()
                .and_then(|v| serde_json::from_value(v).ok())
                .unwrap_or_default();
            if previous != st {
                writes.push((KueueKind::Cohort, None, name.clone(), json!(st)));
            }
        }
        for lq in self.mirror.local_queues.values() {
            let namespace = lq.metadata.namespace.clone().unwrap_or_default();
            let name = lq.metadata.name.clone().unwrap_or_default();
            let mut st =
                status::local_queue_status(s, &namespace, &name, &lq.spec.cluster_queue, now);
            let previous: Option<status::LocalQueueStatus> = lq
                .status
                .clone()
                .and_then(|v| serde_json::from_value(v).ok());
            if let Some(p) = &previous {
                carry_transition_times(&mut st.conditions, &p.conditions);
            }
            if previous.as_ref() != Some(&st) {
                writes.push((KueueKind::LocalQueue, Some(namespace), name, json!(st)));
            }
        }
        for (kind, namespace, name, st) in writes {
            match self
                .writer
                .patch_queue_status(kind, namespace.as_deref(), &name, &st)
                .await
            {
                Ok(obj) => {
                    if let Ok(object) = self.mirror.decode(Source::Kueue(kind), &obj) {
                        self.mirror.put(object, true);
                    }
                }
                Err(e) => {
                    tracing::warn!(kind = kind.kind(), %name, error = %e, "cannot write queue status");
                    self.write_failed("queue-status");
                }
            }
        }
    }
}

fn integration_error(kind: &JobKind, key: &str, message: String) -> Error {
    Error::Integration {
        kind: kind.spec.kind.clone(),
        message: format!("{key}: {message}"),
    }
}

fn to_value(obj: &kube::core::DynamicObject) -> Value {
    serde_json::to_value(obj).unwrap_or(Value::Null)
}

fn ns_name(wl: &Workload) -> (String, String) {
    (
        wl.metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into()),
        wl.metadata.name.clone().unwrap_or_default(),
    )
}

fn workload_key(wl: &Workload) -> String {
    let (ns, name) = ns_name(wl);
    format!("{ns}/{name}")
}

fn is_admitted(wl: &Workload) -> bool {
    wl.status
        .as_ref()
        .is_some_and(|s| cond::is_true(&s.conditions, ADMITTED))
}

/// The ClusterQueue of a Workload's admission (empty without one), for metric labels.
pub(super) fn admitted_cluster_queue(wl: &Workload) -> String {
    wl.status
        .as_ref()
        .and_then(|s| s.admission.as_ref())
        .map(|a| a.cluster_queue.clone())
        .unwrap_or_default()
}

fn priority_class(wl: &Workload) -> String {
    wl.spec
        .priority_class_ref
        .as_ref()
        .map(|r| r.name.clone())
        .unwrap_or_default()
}

/// When the workload last entered its queue: its last requeue, else its creation.
fn queued_at(wl: &Workload) -> Millis {
    wl.status
        .as_ref()
        .and_then(|s| cond::find(&s.conditions, REQUEUED))
        .and_then(|c| c.last_transition_time.as_ref())
        .or(wl.metadata.creation_timestamp.as_ref())
        .map(|t| t.0.as_millisecond())
        .unwrap_or(0)
}

/// The merge patch of a Workload's status, preconditioned on the resourceVersion it was
/// computed from. `admission: null` removes an admission.
/// `admissionChecks` and `requeueState` are written when they change.
pub fn status_patch(wl: &Workload, status: &WorkloadStatus) -> Value {
    let mut body = json!({
        "metadata": {"resourceVersion": wl.metadata.resource_version},
        "status": {
            "admission": status.admission,
            "conditions": status.conditions,
        }
    });
    let old = wl.status.clone().unwrap_or_default();
    if old.admission_checks != status.admission_checks {
        body["status"]["admissionChecks"] = json!(status.admission_checks);
    }
    if old.requeue_state != status.requeue_state {
        body["status"]["requeueState"] = json!(status.requeue_state);
    }
    body
}

/// Kueue's `/root/.../cq` path of a ClusterQueue in its cohort tree.
pub fn cq_path(c: &Cluster, cq: CqId) -> String {
    let node = c.cq(cq).node;
    let mut parts: Vec<String> = c
        .tree
        .ancestors(node)
        .map(|n| c.tree.node(n).name.clone())
        .collect();
    parts.reverse();
    parts.push(c.cq(cq).name.clone());
    format!("/{}", parts.join("/"))
}

/// The `status.admission` of a core admission.
pub fn api_admission(c: &Cluster, id: WorkloadId, a: &Admission) -> api::Admission {
    let info = c.workload(id);
    let pod_set_assignments = a
        .pod_sets
        .iter()
        .map(|psa| {
            let requests = info
                .pod_sets
                .iter()
                .find(|p| p.name == psa.name)
                .map(|p| c.pod_set_total(p, psa.count))
                .unwrap_or_default();
            let flavors: BTreeMap<String, String> = psa
                .flavors
                .iter()
                .map(|&(r, f)| {
                    (
                        c.names.resource_name(r).to_string(),
                        c.names.flavor_name(f).to_string(),
                    )
                })
                .collect();
            let resource_usage = requests
                .into_iter()
                .map(|(r, v)| (c.names.resource_name(r).to_string(), api::Quantity(v)))
                .filter(|(r, _)| flavors.contains_key(r))
                .collect();
            api::PodSetAssignment {
                name: psa.name.clone(),
                flavors,
                resource_usage,
                count: Some(psa.count),
                topology_assignment: None,
                delayed_topology_request: None,
            }
        })
        .collect();
    api::Admission {
        cluster_queue: c.cq(a.cluster_queue).name.clone(),
        pod_set_assignments,
    }
}
