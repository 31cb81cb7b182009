//! MultiKueue in the simulator: a manager cluster and its worker clusters on one virtual clock,
//! each with wasq's core of its own.
//!
//! The manager's scenario names each worker's manifests on its MultiKueueCluster
//! ([`SIM_WORKER_MANIFESTS`]); [`LOST`] takes a worker away for a time. The manager plays
//! Kueue's MultiKueue workload controller for every Workload that reserves quota behind a
//! MultiKueue check, acting on the decision both drivers share ([`crate::cluster::multikueue`]):
//!
//! 1. once its other checks are Ready, the dispatcher (the built-in the Configuration names,
//!    or a dispatch plugin; [`crate::policy::dispatch::ask`]) nominates workers; each
//!    connected nominee receives a copy (same namespace, name and spec, the origin label);
//! 2. the first copy a worker admits wins: the other copies are removed, the check becomes
//!    `Ready` (`The workload was admitted on "w1"`) and the Workload is admitted on the manager;
//! 3. it finishes when its copy finishes; a copy evicted on its worker, or a worker lost for
//!    longer than `workerLostTimeout`, puts the check in `Retry`: the manager evicts and
//!    requeues the Workload, removes its copies and dispatches it again once it reserves again.
//!
//! A lost worker is down, not merely unreachable: what the manager's Workloads ran or queued
//! there is gone (as Kueue's garbage collection would remove it once the worker is back), its
//! own workloads are evicted and wait until it returns, and it schedules nothing meanwhile. So a
//! Workload runs in at most one worker at any instant.

mod copies;
pub mod report;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant as WallClock;

use crate::api::duration::parse_millis;
use crate::api::multikueue::{MultiKueueCluster, SIM_WORKER_MANIFESTS, remote_workload};
use crate::cluster::checks::CheckState;
use crate::cluster::multikueue as mk;
use crate::cluster::{Millis, WorkloadId};
use crate::policy::dispatch::{
    self, DispatchPolicy, DispatchRequest, DispatchedWorkload, WorkerCluster, WorkerQueue,
    WorkerResource,
};

use super::scenario::{ManagerParts, Scenario, ScenarioError};
use super::{Limits, Progress, Settle, Simulation};

/// Annotation on a MultiKueueCluster: when the worker is lost, comma-separated windows of
/// virtual time, e.g. `10m-25m` or `2h-` (until the end).
pub const LOST: &str = "sim.wasq.dev/lost";

/// Rounds of settling at one instant (every cluster, then the manager's controller) after which
/// the clock moves on even if the manager still changes something.
const MAX_ROUNDS_PER_INSTANT: u32 = 1_000;

/// One worker cluster.
pub struct Worker {
    /// Its MultiKueueCluster's name.
    pub name: String,
    labels: BTreeMap<String, String>,
    pub sim: Simulation,
    /// When it is lost: [from, to) in absolute virtual time.
    outages: Vec<(Millis, Millis)>,
    down_since: Option<Millis>,
    /// The copy each manager Workload has (or had) here.
    copies: HashMap<WorkloadId, WorkloadId>,
    pub(crate) stats: report::WorkerStats,
}

/// What the manager knows of one Workload's dispatch, from its reservation on.
struct Dispatch {
    /// Its MultiKueue check.
    check: String,
    reserved_at: Millis,
    /// The config's clusters in order: the worker each is, if any.
    clusters: Vec<(String, Option<usize>)>,
    /// Nominees (indices into `clusters`), in nomination order.
    nominated: Vec<u32>,
    last_nominated: Option<Millis>,
    /// When the dispatcher asked to be asked again.
    retry_at: Option<Millis>,
    /// The workers' connections when last asked (`None`: never asked).
    asked_at: Option<u64>,
    /// Live copies: worker → (copy, since).
    live: BTreeMap<usize, (WorkloadId, Millis)>,
    winner: Option<usize>,
    /// When Kueue would look again though nothing changed (a lost worker's timeout).
    wake_at: Option<Millis>,
    /// Where the attempt is recorded in the report.
    attempt: usize,
}

/// A manager and its workers.
pub struct Federation {
    pub manager: Simulation,
    pub workers: Vec<Worker>,
    parts: ManagerParts,
    worker_lost_timeout: Millis,
    /// The dispatcher the Configuration names; `None` for an external one.
    builtin: Option<Arc<dyn DispatchPolicy>>,
    dispatches: BTreeMap<WorkloadId, Dispatch>,
    /// Changes whenever a worker is lost or comes back: dispatchers are asked again.
    connections: u64,
    pub(crate) history: report::History,
}

impl Federation {
    /// The manager's scenario (with [`Scenario::multikueue`]) and each worker's, loaded from
    /// the paths its MultiKueueCluster names, on the manager's clock.
    pub fn new(mut scenario: Scenario) -> Result<Federation, ScenarioError> {
        let parts = scenario.multikueue.take().ok_or_else(|| {
            ScenarioError::Annotations(vec![format!(
                "no MultiKueueCluster names its worker's manifests \
                 (metadata.annotations.{SIM_WORKER_MANIFESTS})"
            )])
        })?;
        let mut problems = Vec::new();
        let mut loaded = Vec::new();
        for c in &parts.clusters {
            let name = c.metadata.name.clone().unwrap_or_default();
            let annotations = c.metadata.annotations.clone().unwrap_or_default();
            let outages = match annotations.get(LOST).map(|v| parse_outages(v)) {
                None => Vec::new(),
                Some(Ok(o)) => o,
                Some(Err(e)) => {
                    problems.push(format!(
                        "MultiKueueCluster {name}: metadata.annotations.{LOST}: {e}"
                    ));
                    Vec::new()
                }
            };
            let Some(paths) = annotations.get(SIM_WORKER_MANIFESTS) else {
                problems.push(format!(
                    "MultiKueueCluster {name}: metadata.annotations.{SIM_WORKER_MANIFESTS}: \
                     required: the simulator plays every worker from its manifests"
                ));
                continue;
            };
            let paths: Vec<std::path::PathBuf> = paths.split(',').map(Into::into).collect();
            match Scenario::load(&paths) {
                Ok(worker) => loaded.push((c, name, worker, outages)),
                Err(e) => problems.push(format!(
                    "MultiKueueCluster {name}: the worker's manifests ({}): {e}",
                    paths
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        }
        if !problems.is_empty() {
            return Err(ScenarioError::Annotations(problems));
        }
        // One clock: virtual time 0 is the latest of the clusters' own.
        let t0 = loaded
            .iter()
            .map(|(_, _, w, _)| w.t0)
            .fold(scenario.t0, Millis::max);
        rebase(&mut scenario, t0);
        let mut manager = Simulation::new(scenario);
        manager.checks.play_multikueue_elsewhere();
        let workers = loaded
            .into_iter()
            .map(|(c, name, mut w, outages)| {
                rebase(&mut w, t0);
                Worker {
                    name,
                    labels: labels_of(c),
                    sim: Simulation::new(w),
                    outages: outages
                        .into_iter()
                        .map(|(a, b)| (t0 + a, b.map_or(Millis::MAX, |b| t0 + b)))
                        .collect(),
                    down_since: None,
                    copies: HashMap::new(),
                    stats: Default::default(),
                }
            })
            .collect();
        let builtin = dispatch::configured(&parts.settings);
        Ok(Federation {
            manager,
            workers,
            worker_lost_timeout: parts.settings.worker_lost_timeout_ms(),
            parts,
            builtin,
            dispatches: BTreeMap::new(),
            connections: 0,
            history: Default::default(),
        })
    }

    /// Binds policies on the manager (dispatch among them) and on each worker.
    pub fn use_policies(
        &mut self,
        mut bindings: impl FnMut() -> crate::wasm::LiveBindings,
    ) -> Result<(), crate::wasm::BindError> {
        self.manager.use_policies(bindings())?;
        for w in &mut self.workers {
            w.sim.use_policies(bindings())?;
        }
        Ok(())
    }

    /// Why the manager could not dispatch a Workload of ClusterQueue `cq`: an external
    /// dispatcher names no plugin the simulator can run.
    pub fn unplayable_dispatcher(&self) -> Option<String> {
        if self.builtin.is_some() {
            return None;
        }
        let cluster = self.manager.cluster();
        let uncovered = cluster.cluster_queues.iter().find(|cq| {
            self.manager
                .scheduler
                .policies_for(cq.id)
                .dispatch
                .is_none()
                && cq.admission_checks.iter().any(|r| {
                    cluster
                        .admission_checks
                        .get(&r.name)
                        .is_some_and(|d| d.multikueue.is_some())
                })
        })?;
        Some(format!(
            "multiKueue.dispatcherName {:?} names an external dispatcher and ClusterQueue {} \
             has no dispatch plugin: bind one (--policy dispatch=NAME, a QueuePolicy, or the \
             ClusterQueue annotation policy.wasq.dev/dispatch)",
            self.parts.settings.dispatcher_name(),
            uncovered.name
        ))
    }

    /// Runs every cluster until nothing more can change or a limit is reached.
    pub fn run(&mut self, limits: &Limits, mut progress: Option<Progress<'_>>) {
        let until = limits.until.map(|u| self.manager.t0() + u);
        let mut quiet: Option<Progress<'_>> = None;
        loop {
            let mut stopped = false;
            let mut rounds = 0;
            loop {
                stopped |= self.manager.settle_instant(limits, &mut progress) == Settle::Stopped;
                for w in self.workers.iter_mut().filter(|w| w.down_since.is_none()) {
                    stopped |= w.sim.settle_instant(limits, &mut quiet) == Settle::Stopped;
                }
                if stopped || !self.sync() {
                    break;
                }
                rounds += 1;
                if rounds >= MAX_ROUNDS_PER_INSTANT {
                    tracing::warn!(
                        time = self.manager.seconds(self.manager.now()),
                        "MultiKueue: no steady state at this instant; advancing the clock"
                    );
                    break;
                }
            }
            if stopped {
                break;
            }
            let controller = self.next_time();
            let next = [self.manager.next_time(), controller]
                .into_iter()
                .chain(
                    self.workers
                        .iter_mut()
                        .filter(|w| w.down_since.is_none())
                        .map(|w| w.sim.next_time()),
                )
                .flatten()
                .min();
            let Some(next) = next else {
                break;
            };
            if let Some(u) = until.filter(|&u| next > u) {
                self.advance_to(u);
                break;
            }
            self.advance_to(next);
        }
        self.history.close(self.manager.now());
    }

    fn advance_to(&mut self, to: Millis) {
        self.manager.advance_to(to);
        for w in &mut self.workers {
            w.sim.integrate(to);
        }
    }

    /// When the manager's controller next has something to do: a worker lost or back, a
    /// dispatcher's retry, a lost worker's timeout.
    fn next_time(&self) -> Option<Millis> {
        let now = self.manager.now();
        let outages = self.workers.iter().flat_map(|w| {
            w.outages
                .iter()
                .flat_map(|&(a, b)| [a, b])
                .filter(move |&t| t > now && t != Millis::MAX)
        });
        let dispatches = self
            .dispatches
            .values()
            .flat_map(|d| [d.wake_at, d.retry_at.filter(|_| d.winner.is_none())])
            .flatten();
        outages.chain(dispatches).filter(|&t| t > now).min()
    }

    /// The manager's MultiKueue controller at this instant; whether it changed anything.
    fn sync(&mut self) -> bool {
        let now = self.manager.now();
        let mut changed = self.sync_connections(now);
        for (wl, check) in self.manager.checks.take_multikueue_reservations() {
            // Evicted and admitted again at one instant: the last reservation's copies go
            // first.
            if self.dispatches.contains_key(&wl) {
                self.end_dispatch(wl, now);
            }
            let clusters = self.config_clusters(&check);
            let attempt = self.history.reserved(wl, now);
            self.dispatches.insert(
                wl,
                Dispatch {
                    check,
                    reserved_at: now,
                    clusters,
                    nominated: Vec::new(),
                    last_nominated: None,
                    retry_at: None,
                    asked_at: None,
                    live: BTreeMap::new(),
                    winner: None,
                    wake_at: None,
                    attempt,
                },
            );
            changed = true;
        }
        let ids: Vec<WorkloadId> = self.dispatches.keys().copied().collect();
        for wl in ids {
            changed |= self.sync_workload(wl, now);
        }
        changed || self.manager.checks.has_posted()
    }

    /// Workers lost or back at `now`.
    fn sync_connections(&mut self, now: Millis) -> bool {
        let mut changed = false;
        for w in 0..self.workers.len() {
            let worker = &mut self.workers[w];
            let lost = worker.outages.iter().any(|&(a, b)| a <= now && now < b);
            match (lost, worker.down_since) {
                (true, None) => {
                    worker.down_since = Some(now);
                    worker.stats.losses += 1;
                    // What the manager's Workloads had there is gone with it.
                    // A copy that finished just before stays: the manager learns of it.
                    for d in self.dispatches.values_mut() {
                        if let Some(&(copy, _)) = d.live.get(&w)
                            && !worker.sim.finished(copy)
                        {
                            d.live.remove(&w);
                            worker.sim.remove_copy(copy, "the worker cluster was lost");
                            worker.stats.removed += 1;
                        }
                    }
                    worker
                        .sim
                        .go_down(&format!("{LOST}: the worker cluster was lost"));
                    tracing::info!(worker = %worker.name, "MultiKueue: worker lost");
                }
                (false, Some(since)) => {
                    worker.stats.lost_ms += now - since;
                    worker.down_since = None;
                    tracing::info!(worker = %worker.name, "MultiKueue: worker back");
                }
                _ => continue,
            }
            self.connections += 1;
            changed = true;
        }
        changed
    }

    /// The clusters of check `check`'s MultiKueueConfig, in order, each with its worker.
    fn config_clusters(&self, check: &str) -> Vec<(String, Option<usize>)> {
        let names = self
            .manager
            .cluster()
            .admission_checks
            .get(check)
            .and_then(|d| d.multikueue.as_ref())
            .map(|m| m.clusters.clone())
            .unwrap_or_default();
        names
            .into_iter()
            .map(|n| {
                let w = self.workers.iter().position(|w| w.name == n);
                (n, w)
            })
            .collect()
    }

    /// What the manager knows of the workers of `wl`'s config: reachable or not, its copy.
    fn views<'a>(&'a self, d: &'a Dispatch) -> Vec<mk::Worker<'a>> {
        d.clusters
            .iter()
            .map(|(name, w)| {
                let worker = w.map(|w| &self.workers[w]);
                mk::Worker {
                    name: name.as_str(),
                    reachable: worker.is_some_and(|w| w.down_since.is_none()),
                    lost_since: worker.and_then(|w| w.down_since),
                    copy: w.and_then(|w| {
                        d.live
                            .get(&w)
                            .map(|&(copy, _)| self.workers[w].sim.copy_state(copy))
                    }),
                }
            })
            .collect()
    }

    /// One Workload's step of Kueue's `reconcileGroup` ([`mk::reconcile`]), acted on; whether
    /// anything changed.
    fn sync_workload(&mut self, wl: WorkloadId, now: Millis) -> bool {
        let Some(d) = self.dispatches.get(&wl) else {
            return false;
        };
        let holds_quota = self.manager.cluster().admission(wl).is_some();
        let finished = self.manager.finished(wl);
        let local = mk::Local {
            check: self
                .manager
                .check_state(wl, &d.check)
                .unwrap_or(CheckState::Pending),
            holds_quota,
            finished,
            evicted: None,
            cluster_name: d.winner.map(|w| self.workers[w].name.as_str()),
            others_ready: self.manager.others_ready(wl, &d.check),
        };
        let views = self.views(d);
        let plan = mk::reconcile(&local, &views, now, self.worker_lost_timeout);
        let removals = removals(&plan.actions, &views);
        let ended = !holds_quota || finished;
        if let Some(d) = self.dispatches.get_mut(&wl) {
            d.wake_at = plan.wake_at;
        }
        let mut changed = self.remove_copies(wl, removals);
        if ended {
            let d = self
                .dispatches
                .remove(&wl)
                .unwrap_or_else(|| unreachable!());
            self.history.ended(d.attempt, now, finished);
            return true;
        }
        let mut dispatch = false;
        for action in plan.actions {
            let d = self
                .dispatches
                .get_mut(&wl)
                .unwrap_or_else(|| unreachable!());
            match action {
                mk::Action::Remove { .. } => {}
                mk::Action::Finish { worker } => {
                    let Some(w) = d.clusters[worker].1 else {
                        continue;
                    };
                    self.workers[w].stats.ran += 1;
                    let reason = format!("finished on worker cluster {:?}", self.workers[w].name);
                    self.manager.finish_elsewhere(wl, &reason);
                    changed = true;
                }
                mk::Action::Check {
                    state,
                    message,
                    why,
                } => {
                    match why {
                        mk::Why::Admitted => {}
                        mk::Why::EvictedOnWorker => self.history.evicted_on_worker(d.attempt),
                        mk::Why::WorkerLost
                        | mk::Why::CopyGone
                        | mk::Why::NoClusterRecorded
                        | mk::Why::OutOfSync => self.history.worker_lost(d.attempt),
                    }
                    self.manager.post_check(wl, &d.check, state, message);
                    changed = true;
                }
                mk::Action::Admitted { worker } => {
                    let Some(w) = d.clusters[worker].1 else {
                        continue;
                    };
                    d.winner = Some(w);
                    d.nominated.clear();
                    self.history.admitted(d.attempt, &self.workers[w].name, now);
                    changed = true;
                }
                mk::Action::Dispatch => dispatch = true,
                // The simulator has no jobs to sync, and its manager releases an evicted
                // Workload's quota at once (see `Local::evicted`).
                mk::Action::SyncJob { .. }
                | mk::Action::Deactivate { .. }
                | mk::Action::CompleteEviction
                | mk::Action::UpdatePriority { .. } => {}
            }
        }
        let Some(d) = self.dispatches.get(&wl) else {
            return changed;
        };
        let due = d.asked_at != Some(self.connections) || d.retry_at.is_some_and(|t| t <= now);
        if dispatch && due {
            changed |= self.dispatch(wl, now);
        }
        changed
    }

    /// The reservation `wl` dispatched is over (evicted and reserved again at one instant): its
    /// copies are removed.
    fn end_dispatch(&mut self, wl: WorkloadId, now: Millis) {
        let Some(d) = self.dispatches.remove(&wl) else {
            return;
        };
        for (w, (copy, _)) in d.live {
            let worker = &mut self.workers[w];
            if !worker.sim.finished(copy) {
                worker
                    .sim
                    .remove_copy(copy, &mk::Removal::NoQuota.describe(&[]));
                worker.stats.removed += 1;
            }
        }
        self.history
            .ended(d.attempt, now, self.manager.finished(wl));
    }

    /// Removes `wl`'s copies on the workers `removals` name (indices into its config's
    /// clusters), each with why; whether any was there.
    fn remove_copies(&mut self, wl: WorkloadId, removals: Vec<(usize, String)>) -> bool {
        let Some(d) = self.dispatches.get_mut(&wl) else {
            return false;
        };
        let mut changed = false;
        for (i, why) in removals {
            if let Some(w) = d.clusters[i].1
                && let Some((copy, _)) = d.live.remove(&w)
            {
                self.workers[w].sim.remove_copy(copy, &why);
                self.workers[w].stats.removed += 1;
                changed = true;
            }
        }
        changed
    }

    /// Asks the dispatcher and makes its nominees' copies; whether anything changed.
    fn dispatch(&mut self, wl: WorkloadId, now: Millis) -> bool {
        let req = self.request(wl, now);
        let cq = self
            .manager
            .cluster()
            .admission(wl)
            .map(|a| a.cluster_queue);
        let plugin = cq.and_then(|cq| self.manager.scheduler.policies_for(cq).dispatch.clone());
        let started = WallClock::now();
        let (answer, by, failure) = dispatch::ask(plugin.as_deref(), self.builtin.as_deref(), &req);
        self.history
            .asked(started.elapsed(), failure.is_some(), &by);
        if let (Some(e), Some(plugin)) = (&failure, &plugin) {
            let asked = plugin.id();
            tracing::warn!(plugin = %asked.name, error = %e, "MultiKueue: the dispatch plugin's answer was not taken");
            self.manager.count_fallback(&asked, "dispatch", e);
        }
        let Some(d) = self.dispatches.get_mut(&wl) else {
            return false;
        };
        d.asked_at = Some(self.connections);
        d.retry_at = answer.retry_after.map(|r| now.saturating_add(r));
        if answer.nominate != d.nominated {
            d.nominated = answer.nominate.clone();
            d.last_nominated = Some(now);
        }
        let d = &self.dispatches[&wl];
        let nominees: Vec<usize> = d.nominated.iter().map(|&i| i as usize).collect();
        let views = self.views(d);
        let (create, remove) = mk::sync_nominees(&nominees, &views);
        let removals = removals(&remove, &views);
        let mut changed = self.remove_copies(wl, removals);
        let d = self
            .dispatches
            .get_mut(&wl)
            .unwrap_or_else(|| unreachable!());
        let key = self.manager.cluster().workload(wl).key.clone();
        let duration = self.manager.duration_of(wl);
        for i in create {
            let Some(w) = d.clusters[i].1 else { continue };
            let worker = &mut self.workers[w];
            let Some(original) = self.parts.workloads.get(&key) else {
                tracing::warn!(workload = %key, "MultiKueue: only Workloads written in manifests are copied");
                continue;
            };
            let copy = remote_workload(original, self.parts.settings.origin());
            let previous = worker.copies.get(&wl).copied();
            let id = worker.sim.add_copy(&copy, previous, duration);
            worker.copies.insert(wl, id);
            worker.stats.copies += 1;
            d.live.insert(w, (id, now));
            self.history.copied(d.attempt, &worker.name);
            changed = true;
        }
        changed
    }

    /// What the dispatcher is asked for `wl` now.
    fn request(&self, wl: WorkloadId, now: Millis) -> DispatchRequest {
        let d = &self.dispatches[&wl];
        let workload = DispatchedWorkload::of(self.manager.cluster(), wl, d.reserved_at);
        let clusters = d
            .clusters
            .iter()
            .map(|(name, w)| {
                let worker = w.map(|w| &self.workers[w]);
                let connected = worker.is_some_and(|w| w.down_since.is_none());
                WorkerCluster {
                    name: name.clone(),
                    labels: worker.map(|w| w.labels.clone()).unwrap_or_default(),
                    connected,
                    lost_since: worker.and_then(|w| w.down_since),
                    queue: worker
                        .filter(|_| connected)
                        .and_then(|w| worker_queue(&w.sim, &workload)),
                    copy_since: w.and_then(|w| d.live.get(&w)).map(|&(_, since)| since),
                }
            })
            .collect();
        DispatchRequest {
            now,
            workload,
            clusters,
            nominated: d.nominated.clone(),
            last_nominated: d.last_nominated,
        }
    }

    /// The report of every cluster and of each Workload's dispatch.
    pub fn report(&self) -> report::FederationReport {
        report::build(self)
    }
}

/// The copies `actions` remove: (index into the config's clusters, why in words). A finished
/// copy stays in its worker's report as it ended.
fn removals(actions: &[mk::Action], views: &[mk::Worker<'_>]) -> Vec<(usize, String)> {
    actions
        .iter()
        .filter_map(|a| match a {
            mk::Action::Remove { worker, because }
                if !views[*worker].copy.is_some_and(|c| c.finished) =>
            {
                Some((*worker, because.describe(views)))
            }
            _ => None,
        })
        .collect()
}

/// The worker's ClusterQueue that the workload's LocalQueue feeds, as the manager sees it.
fn worker_queue(sim: &Simulation, wl: &DispatchedWorkload) -> Option<WorkerQueue> {
    let cluster = sim.cluster();
    let cq_name = cluster
        .lookup
        .lq_target
        .get(&(wl.namespace.clone(), wl.local_queue.clone()))?;
    let &cq = cluster.cq_by_name.get(cq_name)?;
    let queue = sim.scheduler.queues.queue(cq);
    let node = cluster.cq(cq).node;
    let resources = (0..cluster.tree.n_fr())
        .map(|i| crate::quota::FrIdx(i as u32))
        .filter_map(|fr| {
            let nominal = cluster.tree.quota(node, fr).nominal;
            let usage = cluster.usage.get(node, fr);
            if nominal == 0 && usage == 0 {
                return None;
            }
            let (flavor, resource) = cluster.names.fr_parts(fr);
            Some(WorkerResource {
                flavor: cluster.names.flavor_name(flavor).to_string(),
                resource: cluster.names.resource_name(resource).to_string(),
                nominal,
                usage,
            })
        })
        .collect();
    Some(WorkerQueue {
        name: cq_name.clone(),
        pending: (queue.active_len() + queue.inadmissible_len()) as u32,
        admitted: cluster.admitted_in(cq).len() as u32,
        resources,
    })
}

fn labels_of(c: &MultiKueueCluster) -> BTreeMap<String, String> {
    c.metadata
        .labels
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// Moves a scenario onto a clock whose time 0 is `t0`: arrivals keep their offsets.
fn rebase(s: &mut Scenario, t0: Millis) {
    let shift = t0 - s.t0;
    for a in &mut s.arrival {
        *a += shift;
    }
    s.t0 = t0;
}

/// `10m-25m, 2h-`: windows of virtual time, `to` `None` for "until the end".
fn parse_outages(v: &str) -> Result<Vec<(Millis, Option<Millis>)>, String> {
    v.split(',')
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .map(|w| {
            let (from, to) = w.split_once('-').ok_or_else(|| {
                format!("{w:?} is not FROM-TO (e.g. 10m-25m, or 2h- until the end)")
            })?;
            let from = parse_millis(from).map_err(|e| format!("{w:?}: {e}"))?;
            let to = match to.trim() {
                "" => None,
                t => Some(parse_millis(t).map_err(|e| format!("{w:?}: {e}"))?),
            };
            if from < 0 || to.is_some_and(|t| t <= from) {
                return Err(format!(
                    "{w:?}: the window must start at 0 or later and end after it starts"
                ));
            }
            Ok((from, to))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outage_windows_are_read_and_refused_with_the_reason() {
        assert_eq!(
            parse_outages("10m-25m, 2h-").unwrap(),
            vec![(600_000, Some(1_500_000)), (7_200_000, None)]
        );
        assert!(parse_outages("10m").unwrap_err().contains("FROM-TO"));
        assert!(parse_outages("25m-10m").unwrap_err().contains("end after"));
        assert!(parse_outages("x-10m").unwrap_err().contains("\"x-10m\""));
    }
}
