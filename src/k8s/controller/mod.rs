//! The reconcile pass: jobs → Workloads, changes taken into the live core, scheduling cycles,
//! decisions written back, then jobs started or stopped to match their Workloads, and queue
//! status and metrics refreshed.
//!
//! A pass costs what changed: the mirror records which Workloads, jobs and pod groups changed
//! ([`crate::k8s::sync::mirror::Dirty`]); a Workload changed by someone else is taken into the live core
//! alone ([`core::sync_workload`]), so parking, sticky preemptors, requeue history and
//! admission fair sharing's ledger survive. Only a configuration change (queues, cohorts,
//! flavors, namespaces, priority classes, checks) rebuilds the core, through the restart
//! path ([`core::build`]). Readiness (`waitForPodsReady`) is looked at for the Workloads whose
//! Workload, job or pod group changed, and again when a not-ready one's timeout comes; the
//! admission-check pass walks the Workloads holding quota but reads further only those with
//! checks or ProvisioningRequests.
//!
//! A cycle's status writes go out in the background ([`inflight`]): the next cycle is
//! scheduled while they are in flight, and the pass lands them all before it looks at
//! anything else. Each Workload's writes happen in decision order and each answer from the API
//! server updates the mirror. A status write carries the resourceVersion it was computed from;
//! on a conflict the Workload is read again and the write recomputed (at most
//! [`MAX_ATTEMPTS`] times). An admission that cannot be written is released and requeued in
//! memory when its answer lands, so once the writes have landed memory holds no quota the
//! cluster does not show.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, RwLock};

use futures::StreamExt;
use serde_json::{Value, json};

use super::Error;
use crate::api::jobs::{AdmittedPodSet, FlavorPlacement, JobKind, attribution, problems_text};
use crate::api::{self, Workload, WorkloadStatus, topology};
use crate::cluster::{Admission, Cluster, CqId, EvictionReason, Millis, WorkloadId};
use crate::k8s::client::writer::{Writer, workload_ref};
use crate::k8s::jobs::integration::api_resource;
use crate::k8s::jobs::pod_groups::{self, Group};
use crate::k8s::schema::kinds::KueueKind;
use crate::k8s::serve::Shared;
use crate::k8s::serve::metrics::Metrics;
use crate::k8s::serve::visibility::Snapshot;
use crate::k8s::status::admission_checks as checks;
use crate::k8s::status::conditions::{
    self as cond, ADMITTED, EVICTED, FINISHED, QUOTA_RESERVED, REQUEUED,
};
use crate::k8s::status::queues::{self as status, carry_transition_times};
use crate::k8s::sync::core::{
    self, Configure, has_quota_reservation, is_admitted, is_evicted, is_finished,
};
use crate::k8s::sync::keys::key_of;
use crate::k8s::sync::mirror::{Mirror, Observed, Source};
use crate::scheduler::{Decision, Scheduler};

mod admission;
pub mod dashboard;
mod decisions;
mod event_loop;
mod inflight;
mod multikueue_clusters;
mod multikueue_workloads;
pub mod pods_ready;
pub mod provisioning;

pub use event_loop::spawn_watchers;
mod tas_sync;

/// Attempts per status write when the API server reports conflicts.
pub const MAX_ATTEMPTS: usize = 3;
/// Cycles per pass at most (each cycle admits at most one workload per ClusterQueue).
const MAX_CYCLES_PER_PASS: usize = 1000;

pub type Clock = Arc<dyn Fn() -> Millis + Send + Sync>;

/// What the next pass must look at, drained from the mirror's [`crate::k8s::sync::mirror::Dirty`] and
/// consumed part by part.
#[derive(Debug, Default)]
struct Work {
    /// Workloads the core must take in.
    core: BTreeSet<String>,
    /// Jobs per integration.
    jobs: BTreeMap<usize, BTreeSet<String>>,
    /// Owners of changed Workloads (apiVersion, kind, key).
    owners: BTreeSet<(String, String, String)>,
    /// Pod groups, and Workloads that may be a pod group's.
    pod_groups: BTreeSet<String>,
    /// Workloads whose admission checks (and ProvisioningRequests) must be looked at.
    checks: BTreeSet<String>,
    /// Nodes changed what TAS reads: the live core's trees are rebuilt.
    nodes: bool,
    /// Nodes whose usage outside TAS changed.
    node_usage: BTreeSet<String>,
    /// Workloads whose TAS pods may need ungating.
    ungate: BTreeSet<String>,
    /// Workloads whose pods' readiness is looked at again: the Workload, its job or its pod
    /// group changed.
    readiness: BTreeSet<String>,
    /// Every running Workload's readiness is looked at (after a rebuild).
    readiness_all: bool,
    /// When a running Workload that is not ready times out: it is looked at again then.
    readiness_due: BTreeSet<(Millis, String)>,
    /// Workloads carrying Kueue's resource-in-use finalizer that changed.
    finalizers: BTreeSet<String>,
    /// Workloads whose eviction completed (their quota released) since the last MultiKueue
    /// pass.
    released: BTreeSet<String>,
}

pub struct Controller {
    pub mirror: Mirror,
    scheduler: Option<Scheduler>,
    /// The configuration changed: the core is rebuilt at the next pass.
    dirty: bool,
    /// Priority classes and LocalQueues, as of the last rebuild.
    catalog: crate::api::catalog::Catalog,
    work: Work,
    kinds: Vec<JobKind>,
    pod_groups: bool,
    /// Shared with the writes in flight.
    writer: Arc<Writer>,
    /// Decisions' status writes in flight, and those waiting behind them.
    inflight: inflight::InFlight,
    pub metrics: Arc<Metrics>,
    clock: Clock,
    configure: Configure,
    /// Preemptions decided whose eviction is not written yet, by workload key.
    evictions: BTreeMap<String, decisions::Eviction>,
    /// A write failed during this pass: stop cycling until the next pass.
    write_failed: bool,
    /// LocalQueue label keys copied onto Workloads and, at admission, into pod templates.
    attribution: Vec<String>,
    pub shared: Arc<RwLock<Shared>>,
    /// The cluster serves ProvisioningRequests: they are watched and Kueue's check runs.
    provisioning: bool,
    /// Workloads evicted by a check in `Retry`: queued again at this time.
    requeue_at: BTreeMap<String, Millis>,
    /// Queue statuses, gauges and published views: refreshed at most this often.
    refresh_interval: std::time::Duration,
    refreshed: Option<std::time::Instant>,
    /// A pending Workload's condition is rewritten for a new message at most this often.
    pub(super) pending_interval: Millis,
    /// When each pending Workload's condition was last written by wasq (entries older than
    /// the interval are dropped at each refresh).
    pub(super) pending_written: HashMap<WorkloadId, Millis>,
    /// `--record-trace`: every Workload's run, as a simulator trace.
    recorder: Option<crate::k8s::sync::trace_recorder::TraceRecorder>,
    /// `--dashboard-listen`: where the views go.
    dashboard: Option<dashboard::Feed>,
    /// Running as a MultiKueue manager: the worker clusters' connections.
    multikueue: Option<crate::k8s::multikueue::MultiKueue>,
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
        // Events tell the time the decisions' conditions tell.
        let mut writer = writer;
        writer.set_clock(clock.clone());
        Controller {
            mirror: Mirror::new(kinds.len()),
            scheduler: None,
            dirty: true,
            catalog: Default::default(),
            work: Work::default(),
            kinds,
            pod_groups,
            writer: Arc::new(writer),
            inflight: inflight::InFlight::default(),
            metrics,
            clock,
            configure,
            evictions: BTreeMap::new(),
            write_failed: false,
            attribution: Vec::new(),
            shared: Arc::new(RwLock::new(Shared::default())),
            provisioning: false,
            requeue_at: BTreeMap::new(),
            refresh_interval: std::time::Duration::ZERO,
            refreshed: None,
            pending_interval: 0,
            pending_written: HashMap::new(),
            recorder: None,
            dashboard: None,
            multikueue: None,
        }
    }

    /// Publishes the scheduler's state to the dashboard at every refresh, and each Workload's
    /// Events as its history (`wasq controller --dashboard-listen`).
    pub fn set_dashboard(&mut self, feed: dashboard::Feed) {
        self.writer
            .record_history(feed.history.clone(), self.clock.clone());
        self.dashboard = Some(feed);
    }

    /// Records every Workload's run into a simulator trace (`wasq controller --record-trace`).
    pub fn set_trace_recorder(
        &mut self,
        recorder: crate::k8s::sync::trace_recorder::TraceRecorder,
    ) {
        self.recorder = Some(recorder);
    }

    /// Rewrites a pending Workload's `QuotaReserved=False` condition when only its message
    /// changed at most this often (default: every change, as Kueue; `wasq controller
    /// --pending-status-interval`: 10 s, as Kueue's issue #8095 asks). A new reason is always
    /// written at once.
    pub fn set_pending_status_interval(&mut self, every: std::time::Duration) {
        self.pending_interval = Millis::try_from(every.as_millis()).unwrap_or(Millis::MAX);
    }

    /// Refreshes queue statuses, gauges, the visibility snapshot and the webhooks' view at
    /// most this often (default: every pass). They cost O(pending workloads); `wasq
    /// controller` refreshes them once per second.
    pub fn set_refresh_interval(&mut self, every: std::time::Duration) {
        self.refresh_interval = every;
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
        s.extend([Source::Node, Source::TasPod]);
        if self.pod_groups {
            s.push(Source::Pod);
        }
        s.extend((0..self.kinds.len()).map(Source::Job));
        if self.provisioning {
            s.push(Source::ProvisioningRequest);
        }
        if self.multikueue.is_some() {
            s.push(Source::Secret);
        }
        s
    }

    /// Sets the LocalQueue label keys for cost attribution (`--cost-attribution-labels`).
    pub fn set_attribution_labels(&mut self, keys: Vec<String>) {
        self.attribution = keys;
    }

    /// Creates a job's new Workload, with its LocalQueue's attribution labels, and takes in
    /// what the server stored.
    async fn create_workload(&mut self, wl: Workload) -> Result<(), Error> {
        let wl = self.attributed(wl);
        let created = self.writer.create_workload(&wl).await?;
        self.observe(Observed::Applied(
            Source::Kueue(KueueKind::Workload),
            created,
        ));
        Ok(())
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
        if let Some(r) = self.recorder.as_mut() {
            r.observe(&ev, (self.clock)());
        }
        self.mirror.observe(ev);
    }

    /// Moves what the mirror recorded as changed into the pass's work lists.
    fn absorb(&mut self) {
        let d = self.mirror.take_dirty();
        // A job's readiness is its Workload's; a pod group's Workload is named after it.
        let this = &*self;
        let made: Vec<String> = (d.jobs.iter())
            .flat_map(|(&i, keys)| keys.iter().filter_map(move |k| this.job_workload_key(i, k)))
            .collect();
        self.work.readiness.extend(made);
        self.work.readiness.extend(d.pod_groups.iter().cloned());
        self.dirty |= d.config;
        self.work.core.extend(d.workloads);
        for (i, keys) in d.jobs {
            self.work.jobs.entry(i).or_default().extend(keys);
        }
        self.work.owners.extend(d.owners);
        self.work.pod_groups.extend(d.pod_groups);
        self.work.nodes |= d.nodes;
        self.work.node_usage.extend(d.node_usage);
        self.work.ungate.extend(d.tas_pods);
        self.work.readiness.extend(d.touched.iter().cloned());
        // A Workload admitted since its pods appeared: they are ungated now.
        let tas_pods = &self.mirror.tas.tas_pods;
        self.work.ungate.extend(
            d.touched
                .iter()
                .filter(|k| tas_pods.contains_key(k.as_str()))
                .cloned(),
        );
        // A pod group's Workload is named after the group: a changed Workload may be one.
        if self.pod_groups && !self.mirror.pods.is_empty() {
            self.work.pod_groups.extend(d.touched.iter().cloned());
        }
        let workloads = &self.mirror.workloads;
        self.work.finalizers.extend(
            d.touched
                .iter()
                .filter(|k| {
                    workloads
                        .get(k.as_str())
                        .is_some_and(|w| holds_finalizer(w))
                })
                .cloned(),
        );
        self.work.checks.extend(d.touched);
    }

    /// Brings the core up to date: rebuilt after a configuration change (or at start), else
    /// every changed Workload taken in alone.
    fn update_core(&mut self, now: Millis) {
        self.absorb();
        if self.dirty || self.scheduler.is_none() {
            let reason = if self.scheduler.is_none() {
                "start"
            } else {
                "configuration"
            };
            self.rebuild(now, reason);
            self.work.core.clear();
            return;
        }
        self.update_nodes();
        let keys = std::mem::take(&mut self.work.core);
        let Some(s) = self.scheduler.as_mut() else {
            return;
        };
        for key in keys {
            let synced = core::sync_workload(s, &self.mirror, &self.catalog, &key, now);
            let (outcome, backoff) = match synced {
                core::Synced::Unchanged => ("unchanged", None),
                core::Synced::Added(b) => ("added", b),
                core::Synced::Updated(b) => ("updated", b),
                core::Synced::Removed => ("removed", None),
            };
            if let Some(t) = backoff {
                self.requeue_at.entry(key).or_insert(t);
            }
            self.metrics
                .core_workload_deltas
                .get_or_create(&self.metrics.labels(vec![("outcome", outcome.into())]))
                .inc();
        }
    }

    /// A standby replica's pass: once every source is listed, the webhooks' view is published
    /// and the replica is ready; nothing is scheduled or written.
    pub fn stand_by(&mut self) {
        // A standby has no core to bring up to date; its first pass as leader builds it from
        // the mirror.
        let _ = self.mirror.take_dirty();
        if !self.mirror.is_synced(&self.sources()) || !self.refresh_due() {
            return;
        }
        self.refreshed = Some(std::time::Instant::now());
        let view = Arc::new(crate::k8s::serve::webhook::View::of(&self.mirror));
        if let Ok(mut shared) = self.shared.write() {
            shared.webhook = view;
            shared.ready = true;
        }
    }

    /// Whether the refresh interval has passed since the last refresh (or none happened).
    fn refresh_due(&self) -> bool {
        self.refreshed
            .is_none_or(|t| t.elapsed() >= self.refresh_interval)
    }

    /// One reconcile pass. Does nothing until every source has been listed: quota usage is
    /// always rebuilt from the cluster's admitted Workloads before the first cycle.
    pub async fn step(&mut self) {
        if !self.mirror.is_synced(&self.sources()) {
            return;
        }
        let now = (self.clock)();
        self.reconcile_clusters(now).await;
        self.write_multikueue_check_statuses(now).await;
        self.write_check_statuses(now).await;
        for _ in 0..2 {
            self.update_core(now);
            self.sync_jobs(now).await;
            // Workloads the jobs made are in the core before the cycles.
            self.update_core(now);
            self.retry_evictions(now).await;
            self.requeue_due(now).await;
            self.run_cycles(now).await;
            // The cycles ran while their writes were in flight; the rest of the pass reads
            // what they wrote.
            self.land_all().await;
            // MultiKueue's check before the checks are acted on: a copy admitted on a worker
            // admits here in the same pass.
            self.sync_multikueue(now).await;
            self.sync_checks(now).await;
            self.sync_pods_ready(now).await;
            self.sync_jobs(now).await;
            self.release_finalizers().await;
            self.ungate().await;
            // Again only when someone else changed what the core holds meanwhile; what wasq's
            // own writes touched waits for the next pass.
            self.absorb();
            if !self.dirty && self.work.core.is_empty() {
                break;
            }
        }
        // What costs O(pending) — queue statuses, gauges, the visibility snapshot and the
        // webhooks' view — is refreshed at most once per refresh interval.
        let due = self.refresh_due();
        if due {
            self.write_queue_statuses(now).await;
        }
        self.writer.flush_events();
        if !due {
            return;
        }
        self.refreshed = Some(std::time::Instant::now());
        let interval = self.pending_interval;
        self.pending_written.retain(|_, t| now - *t < interval);
        self.metrics
            .set_events_dropped(self.writer.events_dropped());
        if let Some(s) = &self.scheduler {
            self.metrics.observe_state(s);
            if let Some(feed) = &self.dashboard {
                dashboard::publish(feed, s, &self.mirror, now);
            }
            let snapshot = Snapshot::of(s);
            let view = Arc::new(crate::k8s::serve::webhook::View::of(&self.mirror));
            if let Ok(mut shared) = self.shared.write() {
                shared.visibility = snapshot;
                shared.webhook = view;
                shared.ready = true;
                shared.leading = true;
            }
        }
    }

    /// Waits until the Events of past passes are published (they go out in the background).
    pub async fn settled(&self) {
        self.writer.events_settled().await;
    }

    /// Events dropped because too many were waiting to be published.
    pub fn events_dropped(&self) -> u64 {
        self.writer.events_dropped()
    }

    /// The restart path: the core built from every object of the mirror.
    fn rebuild(&mut self, now: Millis, reason: &str) {
        // Handles are renumbered by a rebuild.
        self.pending_written.clear();
        self.catalog = core::catalog(&self.mirror);
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
            reason,
            "core rebuilt from the cluster"
        );
        self.metrics
            .core_rebuilds
            .get_or_create(&self.metrics.labels(vec![("reason", reason.into())]))
            .inc();
        self.scheduler = Some(s);
        self.dirty = false;
        // The readiness timeouts come from a configuration that may have changed.
        self.work.readiness_all = true;
        // The build read every node and pod; every Workload with TAS pods is looked at.
        self.work.nodes = false;
        self.work.node_usage.clear();
        self.work
            .ungate
            .extend(self.mirror.tas.tas_pods.keys().cloned());
        // Backoffs of check evictions survive a restart in `status.requeueState`.
        for (key, wl) in &self.mirror.workloads {
            if let Some(t) = core::requeue_at(wl)
                && t > now
                && !has_quota_reservation(wl)
            {
                self.requeue_at.entry(key.clone()).or_insert(t);
            }
        }
        // A new configuration may change what a job's Workload looks like (a priority class,
        // a LocalQueue): every job and pod group is looked at again.
        for (i, jobs) in self.mirror.jobs.iter().enumerate() {
            self.work
                .jobs
                .entry(i)
                .or_default()
                .extend(jobs.keys().cloned());
        }
        if self.pod_groups {
            for g in pod_groups::groups(&self.mirror) {
                self.work
                    .pod_groups
                    .insert(key_of(Some(&g.namespace), &g.name));
            }
        }
    }

    fn id_of(&self, key: &str) -> Option<WorkloadId> {
        self.scheduler.as_ref()?.cluster.find_workload(key)
    }

    async fn run_cycles(&mut self, now: Millis) {
        self.write_failed = false;
        // Admission fair sharing samples on its own clock (every pass), not only when a cycle
        // admits.
        if let Some(s) = self.scheduler.as_mut() {
            s.sample_local_queue_usage_until(now);
        }
        for _ in 0..MAX_CYCLES_PER_PASS {
            // Writes of earlier cycles that have landed: admissions confirmed, or undone and
            // queued again.
            self.land_ready().await;
            if self.write_failed {
                break;
            }
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
            let mut outcome = s.schedule(now);
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
            self.apply(&mut outcome.decisions, now).await;
            if let Some(s) = self.scheduler.as_mut() {
                s.recycle(outcome);
            }
            // After a failed write, wait for the next pass rather than spin on the API server.
            if !progress || self.write_failed {
                break;
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

    fn put_own_workload(&mut self, obj: &kube::core::DynamicObject) -> Option<Workload> {
        match self.mirror.decode(Source::Kueue(KueueKind::Workload), obj) {
            Ok(object) => {
                self.mirror.put(object, true);
                let key = key_of(
                    obj.metadata.namespace.as_deref(),
                    obj.metadata.name.as_deref().unwrap_or_default(),
                );
                self.mirror.workloads.get(&key).map(|wl| (**wl).clone())
            }
            Err(e) => {
                tracing::warn!(error = %e, "the API server returned a Workload that does not decode");
                self.dirty = true;
                None
            }
        }
    }

    // ---- Job side --------------------------------------------------------------------------

    /// Syncs the jobs and pod groups that changed, and those of Workloads that changed.
    async fn sync_jobs(&mut self, now: Millis) {
        self.absorb();
        let mut jobs = std::mem::take(&mut self.work.jobs);
        for (api_version, kind, key) in std::mem::take(&mut self.work.owners) {
            if let Some(i) = self
                .kinds
                .iter()
                .position(|k| k.spec.api_version == api_version && k.spec.kind == kind)
            {
                jobs.entry(i).or_default().insert(key);
            }
        }
        // Admitted jobs to start: their patches go out together (the common case at scale);
        // every other job is synced one by one.
        let mut starts = Vec::new();
        let mut rest = Vec::new();
        for (i, keys) in jobs {
            for key in keys {
                match self.start_patch(i, &key) {
                    Some(ops) => starts.push((i, key, ops)),
                    None => rest.push((i, key)),
                }
            }
        }
        self.start_jobs(starts).await;
        for (i, key) in rest {
            if let Err(e) = self.sync_job(i, &key, now).await {
                tracing::warn!(kind = %self.kinds[i].spec.kind, job = %key, error = %e, "job sync failed; will retry");
                self.write_failed("job");
                self.mirror.touch_job(i, &key);
            }
        }
        let groups = std::mem::take(&mut self.work.pod_groups);
        if self.pod_groups && !groups.is_empty() {
            for group in pod_groups::groups(&self.mirror) {
                let key = key_of(Some(&group.namespace), &group.name);
                if !groups.contains(&key) {
                    continue;
                }
                if let Err(e) = self.sync_pod_group(&group, now).await {
                    tracing::warn!(group = %key, error = %e, "pod group sync failed; will retry");
                    self.write_failed("pod-group");
                    self.mirror.touch_pod_group(&key);
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
        owned.then(|| (**wl).clone())
    }

    /// The JSON Patch that starts job `key` of kind `i`, when it is suspended, not a managed
    /// job's child, and its Workload admitted (not evicted, not finished, checks' podSet
    /// updates applicable). `None` otherwise: [`Controller::sync_job`] decides.
    fn start_patch(&self, i: usize, key: &str) -> Option<Vec<Value>> {
        let kind = &self.kinds[i];
        let job = self.mirror.jobs[i].get(key)?;
        if job.metadata.deletion_timestamp.is_some()
            || JobKind::controlled_by_any(&job.metadata, &self.kinds)
        {
            return None;
        }
        let value = to_value(job);
        if !kind.is_suspended(&value) || kind.finished(&value).is_some() {
            return None;
        }
        let wl = self.job_workload(kind, job)?;
        if !has_quota_reservation(&wl)
            || is_evicted(&wl)
            || !is_admitted(&wl)
            || is_finished(&wl)
            || wl.metadata.deletion_timestamp.is_some()
        {
            return None;
        }
        self.start_ops(kind, &value, &wl).ok()
    }

    /// The Workload a job owns (the name its kind gives it, or the prebuilt Workload it
    /// names, owned by the job's UID).
    fn job_workload(&self, kind: &JobKind, job: &kube::core::DynamicObject) -> Option<Workload> {
        let name = job.metadata.name.as_deref().unwrap_or_default();
        let uid = job.metadata.uid.as_deref();
        let namespace = job.metadata.namespace.as_deref().unwrap_or("default");
        if let Some(prebuilt) = api::jobs::multikueue::prebuilt_name(&job.metadata) {
            return self.owned_workload(namespace, prebuilt, uid);
        }
        self.owned_workload(
            namespace,
            &kind.workload_name(name, uid.unwrap_or_default(), None),
            uid,
        )
    }

    /// Kueue's `ensureOneWorkload` for a job naming a prebuilt Workload (a MultiKueue
    /// worker's remote job): the Workload is adopted (the job its controller, the job-uid
    /// label), and finished `OutOfSync` when its podSets are not the job's. `false`: the job
    /// waits — its Workload missing (the job is kept suspended), or another's.
    async fn adopt_prebuilt(
        &mut self,
        i: usize,
        job: &kube::core::DynamicObject,
        prebuilt: &str,
        now: Millis,
    ) -> Result<bool, Error> {
        let kind = self.kinds[i].clone();
        let ns = job
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let name = job.metadata.name.clone().unwrap_or_default();
        let uid = job.metadata.uid.clone().unwrap_or_default();
        let value = to_value(job);
        let Some(wl) = self
            .mirror
            .workloads
            .get(&key_of(Some(&ns), prebuilt))
            .cloned()
        else {
            if !kind.is_suspended(&value) {
                self.patch_job(i, Some(&ns), &name, kind.suspend_ops(&value), false)
                    .await?;
            }
            return Ok(false);
        };
        let owners = wl.metadata.owner_references.clone().unwrap_or_default();
        match owners.iter().find(|o| o.controller == Some(true)) {
            Some(o) if o.uid != uid => {
                tracing::warn!(workload = %workload_key(&wl), job = %key_of(Some(&ns), &name),
                    "the prebuilt Workload is already controlled by another object");
                return Ok(false);
            }
            Some(_) => {}
            None => {
                let mut owners = owners;
                owners.push(
                    k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                        api_version: kind.spec.api_version.clone(),
                        kind: kind.spec.kind.clone(),
                        name: name.clone(),
                        uid: uid.clone(),
                        controller: Some(true),
                        block_owner_deletion: Some(true),
                    },
                );
                let body = json!({"metadata": {
                    "resourceVersion": wl.metadata.resource_version,
                    "ownerReferences": owners,
                    "labels": {api::jobs::JOB_UID_LABEL: uid},
                }});
                let obj = self.writer.patch_workload(&ns, prebuilt, &body).await?;
                self.put_own_workload(&obj);
            }
        }
        // Kueue's `EquivalentToWorkload`, on what both sides keep as they are: the podSets'
        // names and counts (a worker's API server may default the templates) — those of the
        // Workload's spec, or, once admitted, of its admission (a partially admitted job runs
        // fewer pods); a suspended job may match either.
        let expected: Option<Vec<(String, i32)>> = kind
            .pod_sets(&value)
            .ok()
            .map(|ps| ps.into_iter().map(|p| (p.name, p.count)).collect());
        let written: Vec<(String, i32)> = (wl.spec.pod_sets.iter())
            .map(|p| (p.name.clone(), p.count))
            .collect();
        let running: Option<Vec<(String, i32)>> = is_admitted(&wl)
            .then(|| wl.status.as_ref().and_then(|s| s.admission.as_ref()))
            .flatten()
            .map(|a| {
                (wl.spec.pod_sets.iter())
                    .map(|p| {
                        let admitted = (a.pod_set_assignments.iter())
                            .find(|psa| psa.name == p.name)
                            .and_then(|psa| psa.count);
                        (p.name.clone(), admitted.unwrap_or(p.count))
                    })
                    .collect()
            });
        let in_sync = expected.is_some_and(|e| match &running {
            Some(r) => *r == e || (kind.is_suspended(&value) && e == written),
            None => e == written,
        });
        if !in_sync {
            if !is_finished(&wl) {
                self.finish_with(
                    &wl,
                    OUT_OF_SYNC,
                    "The prebuilt workload is out of sync with its user job",
                    now,
                )
                .await?;
            }
            return Ok(false);
        }
        Ok(true)
    }

    /// The JSON Patch that starts a job on its admitted Workload: flavors, counts, the checks'
    /// podSet updates and the attribution labels.
    fn start_ops(
        &self,
        kind: &JobKind,
        value: &Value,
        wl: &Workload,
    ) -> Result<Vec<Value>, StartError> {
        let mut admitted = self.admitted_pod_sets(wl);
        self.add_check_updates(wl, &mut admitted)
            .map_err(StartError::CheckUpdates)?;
        let labels = attribution::attribution_labels(wl, &self.attribution);
        kind.start_ops(value, &admitted, &labels)
            .map_err(StartError::Template)
    }

    /// Sends the start patches of admitted jobs, at most [`crate::k8s::client::MAX_IN_FLIGHT`] at
    /// once; a failed one is synced again by the next pass.
    async fn start_jobs(&mut self, starts: Vec<(usize, String, Vec<Value>)>) {
        if starts.is_empty() {
            return;
        }
        let writer = &self.writer;
        let kinds = &self.kinds;
        let answers: Vec<_> = futures::stream::iter(starts)
            .map(|(i, key, ops)| async move {
                let (ns, name) = match key.split_once('/') {
                    Some((ns, name)) => (Some(ns.to_string()), name.to_string()),
                    None => (None, key.clone()),
                };
                let r = writer
                    .json_patch(&api_resource(&kinds[i]), ns.as_deref(), &name, ops, false)
                    .await;
                (i, key, r)
            })
            .buffer_unordered(crate::k8s::client::MAX_IN_FLIGHT)
            .collect()
            .await;
        for (i, key, answer) in answers {
            match answer {
                Ok(obj) => self.observe(Observed::Applied(Source::Job(i), obj)),
                Err(e) => {
                    tracing::warn!(kind = %self.kinds[i].spec.kind, job = %key, error = %e, "cannot start the job; will retry");
                    self.write_failed("job");
                    self.mirror.touch_job(i, &key);
                }
            }
        }
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
        if let Some(prebuilt) =
            api::jobs::multikueue::prebuilt_name(&job.metadata).map(str::to_string)
            && kind.finished(&to_value(&job)).is_none()
            && !self.adopt_prebuilt(i, &job, &prebuilt, now).await?
        {
            return Ok(());
        }
        let namespace = job.metadata.namespace.clone();
        let ns = namespace.as_deref();
        let name = job.metadata.name.clone().unwrap_or_default();
        let value = to_value(&job);
        let wl = self.job_workload(&kind, &job);
        if let Some((success, message)) = kind.finished(&value) {
            if let Some(wl) = wl.filter(|w| !is_finished(w)) {
                self.finish(&wl, success, &message, now).await?;
            }
            return Ok(());
        }
        let Some(wl) = wl else {
            // A prebuilt Workload is never made here.
            if api::jobs::multikueue::prebuilt_name(&job.metadata).is_some() {
                return Ok(());
            }
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
            return self.create_workload(new).await;
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
        } else if reserved && is_admitted(&wl) && wl.metadata.deletion_timestamp.is_none() {
            if kind.is_suspended(&value) {
                let ops = match self.start_ops(&kind, &value, &wl) {
                    Ok(ops) => ops,
                    Err(StartError::CheckUpdates(m)) => {
                        // A permanent error in Kueue: the Workload finishes, `FailedToStart`.
                        tracing::warn!(workload = %workload_key(&wl), error = %m, "cannot start the job");
                        return self.finish_with(&wl, "FailedToStart", &m, now).await;
                    }
                    Err(StartError::Template(m)) => return Err(integration_error(&kind, key, m)),
                };
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

    /// Removes Kueue's resource-in-use finalizer where Kueue's job reconciler removes it: from a
    /// finished Workload, and from a Workload being deleted once its job is stopped. Kueue puts
    /// it on every Workload it creates; after a switch to wasq, such a Workload would otherwise
    /// hang in deletion, its quota held. (wasq's own Workloads do not carry it.)
    async fn release_finalizers(&mut self) {
        for key in std::mem::take(&mut self.work.finalizers) {
            let Some(wl) = self.mirror.workloads.get(&key).map(|w| (**w).clone()) else {
                continue;
            };
            let deleting = wl.metadata.deletion_timestamp.is_some();
            if !holds_finalizer(&wl) || !(deleting || is_finished(&wl)) {
                continue;
            }
            if deleting
                && !is_finished(&wl)
                && let Err(e) = self.stop_owner(&wl).await
            {
                tracing::warn!(workload = %key, error = %e, "cannot stop the job of a deleted Workload; will retry");
                self.write_failed("job");
                self.work.finalizers.insert(key);
                continue;
            }
            let finalizers: Vec<&String> = wl.metadata.finalizers.iter().flatten().collect();
            let kept: Vec<&&String> = finalizers
                .iter()
                .filter(|f| ***f != RESOURCE_IN_USE)
                .collect();
            // The test makes a concurrent change to the list fail the patch rather than be lost.
            let ops = vec![
                json!({"op": "test", "path": "/metadata/finalizers", "value": finalizers}),
                json!({"op": "replace", "path": "/metadata/finalizers", "value": kept}),
            ];
            let name = wl.metadata.name.as_deref().unwrap_or_default();
            let ar = KueueKind::Workload.api_resource();
            match self
                .writer
                .json_patch(&ar, wl.metadata.namespace.as_deref(), name, ops, false)
                .await
            {
                // Its last finalizer gone, a Workload being deleted is gone.
                Ok(_) if deleting && kept.is_empty() => self.mirror.forget_workload(&key),
                Ok(obj) => self.observe(Observed::Applied(Source::Kueue(KueueKind::Workload), obj)),
                Err(e) if e.is_not_found() => self.mirror.forget_workload(&key),
                Err(e) => {
                    tracing::warn!(workload = %key, error = %e, "cannot remove Kueue's finalizer; will retry");
                    self.write_failed("workload");
                    self.mirror.resync(&key);
                }
            }
        }
    }

    /// Suspends the running job that owns `wl` (as Kueue's `stopJob` when its Workload is
    /// deleted).
    async fn stop_owner(&mut self, wl: &Workload) -> Result<(), Error> {
        let Some(owner) = wl
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true))
        else {
            return Ok(());
        };
        let Some(i) = self
            .kinds
            .iter()
            .position(|k| k.spec.api_version == owner.api_version && k.spec.kind == owner.kind)
        else {
            return Ok(());
        };
        let ns = wl.metadata.namespace.as_deref();
        let Some(job) = self.mirror.jobs[i].get(&key_of(ns, &owner.name)) else {
            return Ok(());
        };
        let value = to_value(job);
        let kind = &self.kinds[i];
        if kind.is_suspended(&value) || kind.finished(&value).is_some() {
            return Ok(());
        }
        let ops = kind.suspend_ops(&value);
        self.patch_job(i, ns, &owner.name, ops, false).await?;
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
            // Pods naming a prebuilt Workload (a MultiKueue manager's) wait for it.
            if !group.is_complete() || group.under_manager_copy() {
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
            return self.create_workload(new).await;
        };
        let reserved = has_quota_reservation(&wl);
        let pod_ar = pod_groups::pod_resource();
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
        } else if reserved && is_admitted(&wl) && !self.runs_elsewhere(&wl) {
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
                // A pod placed by TAS is the ungater's next: both mirrors take the answer.
                self.observe(Observed::Applied(Source::TasPod, obj.clone()));
                self.observe(Observed::Applied(Source::Pod, obj));
            }
        }
        Ok(())
    }

    /// Kueue's `ShouldSkipLocalExecution`: a Workload behind a MultiKueue check runs on a
    /// worker, so its pods stay gated here.
    fn runs_elsewhere(&self, wl: &Workload) -> bool {
        self.multikueue_check(wl).is_some()
    }

    /// The state of `wl`'s MultiKueue admission check, when it has one.
    fn multikueue_check<'a>(&self, wl: &'a Workload) -> Option<&'a api::AdmissionCheckState> {
        checks::states(wl).iter().find(|st| {
            (self.mirror.admission_checks.get(&st.name)).is_some_and(|ac| {
                ac.spec.controller_name == crate::api::multikueue::MULTIKUEUE_CONTROLLER
            })
        })
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
            // A podSet placed by topology-aware scheduling, as Kueue's
            // `getPodSetsInfoFromStatus`: its pods carry the podSet label, the Workload's name
            // and the topology gate the ungater releases; an implicit request is marked
            // unconstrained. (Kueue labels and annotates every admitted podSet so; wasq only
            // those the ungater needs, so other jobs' templates are left as they were.)
            let mut labels = BTreeMap::new();
            let mut annotations = BTreeMap::new();
            let mut scheduling_gates = Vec::new();
            if psa.topology_assignment.is_some() {
                labels.insert(api::labels::POD_SET.to_string(), psa.name.clone());
                annotations.insert(
                    topology::WORKLOAD_ANNOTATION.to_string(),
                    wl.metadata.name.clone().unwrap_or_default(),
                );
                scheduling_gates.push(topology::TOPOLOGY_SCHEDULING_GATE.to_string());
                let explicit = wl
                    .spec
                    .pod_sets
                    .iter()
                    .find(|p| p.name == psa.name)
                    .and_then(|p| p.topology_request.as_ref())
                    .is_some_and(|r| {
                        r.required.is_some() || r.preferred.is_some() || r.unconstrained.is_some()
                    });
                if !explicit {
                    annotations.insert(topology::UNCONSTRAINED_TOPOLOGY.to_string(), "true".into());
                }
            }
            out.insert(
                psa.name.clone(),
                AdmittedPodSet {
                    flavors: infos,
                    count: count.unwrap_or_default(),
                    labels,
                    annotations,
                    scheduling_gates,
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
                let mut st = wl.status.as_deref().cloned().unwrap_or_default();
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
            // A MultiKueue manager ends the dispatch of that reservation (taken in by the
            // next `sync_multikueue`, even if the Workload reserves quota again meanwhile).
            self.work.released.insert(key.clone());
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
                EvictionReason::PodsReadyTimeout
            } else {
                EvictionReason::AdmissionCheck
            };
            match (self.id_of(&key), self.scheduler.as_mut()) {
                (Some(id), Some(s)) if inactive => s.deactivate(id),
                (Some(id), Some(s)) if backoff => s.release_for_retry(id, queued_at, reason),
                (Some(id), Some(s)) => s.complete_eviction(id),
                _ => self.mirror.resync(&key),
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
                let mut st = wl.status.as_deref().cloned().unwrap_or_default();
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
                (Some(id), Some(s)) => s.remove(id),
                _ => self.mirror.resync(&key),
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
        // Different objects: written concurrently.
        let writer = &self.writer;
        let answers: Vec<_> = futures::stream::iter(writes)
            .map(|(kind, namespace, name, st)| async move {
                let r = writer
                    .patch_queue_status(kind, namespace.as_deref(), &name, &st)
                    .await;
                (kind, name, r)
            })
            .buffer_unordered(crate::k8s::client::MAX_IN_FLIGHT)
            .collect()
            .await;
        for (kind, name, answer) in answers {
            match answer {
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

/// Why an admitted job cannot be started.
enum StartError {
    /// The admission checks' podSet updates conflict (Kueue: `FailedToStart`).
    CheckUpdates(String),
    /// The job's templates cannot take the admission.
    Template(String),
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

/// Kueue's `Finished` reason for a prebuilt Workload whose job no longer matches it.
pub(super) const OUT_OF_SYNC: &str = "OutOfSync";

/// Kueue's finalizer on the Workloads it creates.
const RESOURCE_IN_USE: &str = "kueue.x-k8s.io/resource-in-use";

fn holds_finalizer(wl: &Workload) -> bool {
    wl.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == RESOURCE_IN_USE)
}

fn workload_key(wl: &Workload) -> String {
    let (ns, name) = ns_name(wl);
    format!("{ns}/{name}")
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
/// `admissionChecks`, `requeueState` and MultiKueue's `clusterName` and
/// `nominatedClusterNames` are written when they change (`null` clears them).
pub fn status_patch(wl: &Workload, status: &WorkloadStatus) -> Value {
    let mut body = json!({
        "metadata": {"resourceVersion": wl.metadata.resource_version},
        "status": {
            "admission": status.admission,
            "conditions": status.conditions,
        }
    });
    let old = wl.status.as_deref().cloned().unwrap_or_default();
    if old.admission_checks != status.admission_checks {
        body["status"]["admissionChecks"] = json!(status.admission_checks);
    }
    if old.requeue_state != status.requeue_state {
        body["status"]["requeueState"] = json!(status.requeue_state);
    }
    if old.cluster_name != status.cluster_name {
        body["status"]["clusterName"] = json!(status.cluster_name);
    }
    if old.nominated_cluster_names != status.nominated_cluster_names {
        body["status"]["nominatedClusterNames"] = if status.nominated_cluster_names.is_empty() {
            Value::Null
        } else {
            json!(status.nominated_cluster_names)
        };
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
                name: psa.name.to_string(),
                flavors,
                resource_usage,
                count: Some(psa.count),
                topology_assignment: psa.topology.as_ref().and_then(|p| c.tas.assignment(p)),
                delayed_topology_request: None,
            }
        })
        .collect();
    api::Admission {
        cluster_queue: c.cq(a.cluster_queue).name.clone(),
        pod_set_assignments,
    }
}
