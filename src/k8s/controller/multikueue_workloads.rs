//! Kueue's MultiKueue workload reconciler (`workload.go`, main branch) when the controller
//! runs as a manager: for each Workload behind a `kueue.x-k8s.io/multikueue` check, what the
//! shared decision ([`cluster::multikueue::reconcile`]) says, done against the workers —
//! copies created on the nominated workers, the remote Job created on the worker that admitted
//! its copy and its status mirrored onto the manager's Job, the other copies removed, the
//! check `Ready` with `status.clusterName`, the Workload finished as its copy did, the check
//! `Retry` when the copy was evicted there or its worker is lost; and, once the Workload no
//! longer holds quota, finished or is deleted, its copies and remote jobs removed.
//!
//! What the manager knows of a worker comes from its session ([`crate::k8s::multikueue`]):
//! the copies, remote jobs, pods and sets it lists and watches there, by the origin label.
//! What is dispatched ([`Owner`], [`crate::api::jobs::multikueue`]): a job of a kind with a
//! MultiKueue adapter (`batch/v1` Job, JobSet, Ray, the Kubeflow jobs, MPIJob) whose
//! `managedBy` is `kueue.x-k8s.io/multikueue`; a pod group's pods (kept gated here); the
//! StatefulSet or LeaderWorkerSet a pod group belongs to. A Workload of any other owner is
//! `Rejected` as Kueue rejects it (`No multikueue adapter found …`).

use std::collections::BTreeSet;

use serde_json::{Value, json};

use k8s_openapi::api::core::v1::Pod;

use super::{Controller, OUT_OF_SYNC, to_value, workload_key};
use crate::api::Workload;
use crate::api::config::MultiKueueSettings;
use crate::api::jobs::multikueue as job_adapter;
use crate::api::multikueue::{
    MULTIKUEUE_CONTROLLER, SPEC_HASH_ANNOTATION, remote_workload, spec_hash,
};
use crate::cluster::Millis;
use crate::cluster::checks::CheckState;
use crate::cluster::multikueue::{self as mk, Action, Why};
use crate::k8s::Error;
use crate::k8s::client::writer::workload_ref;
use crate::k8s::jobs::pod_groups;
use crate::k8s::multikueue::connection::rfc3339;
use crate::k8s::multikueue::session::RemoteKind;
use crate::k8s::multikueue::{FIELD_MANAGER, MultiKueue};
use crate::k8s::schema::kinds::KueueKind;
use crate::k8s::status::admission_checks as checks;
use crate::k8s::status::conditions::{self as cond, EVICTED, FINISHED};
use crate::k8s::sync::core::{has_quota_reservation, is_evicted, is_finished};
use crate::k8s::sync::keys::key_of;
use crate::k8s::sync::mirror::{Observed, Source};
use crate::policy::dispatch::{self, DispatchRequest, DispatchedWorkload, WorkerCluster};

/// Kueue's finalizer on the Workloads it creates (a worker's Kueue puts it on the copies).
const RESOURCE_IN_USE: &str = "kueue.x-k8s.io/resource-in-use";

/// What the manager dispatches for a Workload: Kueue's adapter for its owner.
enum Owner {
    /// The job `name` of the controller's job kind `kind`, dispatched whole.
    Job { kind: usize, name: String },
    /// Its pods (a pod group, a lone pod, a Deployment's replica), each one dispatched.
    Pods,
    /// The StatefulSet or LeaderWorkerSet `name` its pods belong to (`kind`: the index in
    /// [`MultiKueue::parents`]), dispatched whole.
    Parent { kind: usize, name: String },
}

/// Where a component Workload (a LeaderWorkerSet group's) may go.
enum Component {
    /// Not yet: not all its set's Workloads exist, or the first group's is not placed yet.
    Wait,
    /// It is the first group's: dispatched as any Workload.
    Primary,
    /// Where another group's was admitted.
    On(String),
}

/// The MultiKueue check of a Workload and the clusters of its MultiKueueConfig.
struct Dispatch {
    check: String,
    state: CheckState,
    clusters: Vec<String>,
}

impl Controller {
    /// Kueue's workload reconciler over every Workload that holds quota or has a copy on a
    /// worker (see the module).
    pub(super) async fn sync_multikueue(&mut self, now: Millis) {
        let released = std::mem::take(&mut self.work.released);
        let Some(mut mk) = self.multikueue.take() else {
            return;
        };
        let settings = (self.mirror.configuration.as_ref())
            .map(|c| c.multi_kueue().into_owned())
            .unwrap_or_default();
        // Without a MultiKueue check nothing is dispatched: the pass costs nothing more.
        let checks = (self.mirror.admission_checks.values())
            .any(|ac| ac.spec.controller_name == MULTIKUEUE_CONTROLLER);
        let mut keys: BTreeSet<String> = if checks {
            self.mirror.reserved.iter().cloned().collect()
        } else {
            BTreeSet::new()
        };
        keys.extend(released.iter().cloned());
        // Kueue's garbage collector, every `gcInterval` (`0`: never): copies whose Workload
        // this manager neither has nor dispatched (deleted while it was away) go. A Workload
        // deleted while dispatched takes its copies along at once.
        let gc_every = settings.gc_interval_ms();
        let gc_due = gc_every > 0 && mk.last_gc.is_none_or(|t| now >= t.saturating_add(gc_every));
        if gc_due {
            mk.last_gc = Some(now);
        }
        for (_, remote) in mk.remotes() {
            keys.extend(
                (remote.copies.keys())
                    .filter(|k| {
                        gc_due
                            || mk.dispatch.contains_key(*k)
                            || self.mirror.workloads.contains_key(*k)
                    })
                    .cloned(),
            );
        }
        keys.extend(mk.dispatch.keys().cloned());
        for key in keys {
            let span = tracing::debug_span!("multikueue", workload = %key);
            let _enter = span.enter();
            let released = released.contains(&key);
            if let Err(e) = self
                .sync_dispatched(&mut mk, &key, released, &settings, now)
                .await
            {
                tracing::warn!(workload = %key, error = %e, "MultiKueue: cannot sync the Workload with its workers; will retry");
                self.write_failed("multikueue");
            }
        }
        self.multikueue = Some(mk);
    }

    /// The MultiKueue check of `wl`, when it has one with a known MultiKueueConfig.
    fn dispatch_of(&self, wl: &Workload) -> Option<Dispatch> {
        let s = self.scheduler.as_ref()?;
        let st = self.multikueue_check(wl)?;
        let def = s.cluster.admission_checks.get(&st.name)?;
        Some(Dispatch {
            check: st.name.clone(),
            state: checks::to_core(std::slice::from_ref(st)).checks[0].state,
            clusters: def.multikueue.as_ref()?.clusters.clone(),
        })
    }

    /// One Workload; `released`: its quota was released since the last pass.
    async fn sync_dispatched(
        &mut self,
        mk: &mut MultiKueue,
        key: &str,
        released: bool,
        settings: &MultiKueueSettings,
        now: Millis,
    ) -> Result<(), Error> {
        let wl =
            (self.mirror.workloads.get(key)).filter(|w| w.metadata.deletion_timestamp.is_none());
        // Most reserved Workloads have no MultiKueue check: nothing copied for them.
        if wl.is_some_and(|w| self.dispatch_of(w).is_none()) && !released {
            return Ok(());
        }
        let Some(wl) = wl.map(|w| (**w).clone()) else {
            // Deleted: its copies go from every worker the manager reaches (those left on
            // the others are the garbage collector's).
            mk.dispatch.remove(key);
            let clusters: Vec<String> = mk.remotes().map(|(c, _)| c.clone()).collect();
            for cluster in clusters {
                self.remove_remote(mk, &cluster, key).await?;
            }
            return Ok(());
        };
        let Some(d) = self.dispatch_of(&wl) else {
            return Ok(());
        };
        if d.state == CheckState::Rejected {
            return Ok(());
        }
        // Kueue's adapter: the Workload's owner must be a Job MultiKueue manages.
        let Some(owner) = self.adapter_of(mk, &wl, &d, now).await? else {
            return Ok(());
        };
        // Its quota was released since the last pass (and perhaps reserved again): that
        // dispatch is over, its copies go (Kueue's first step, which it would have seen).
        if released {
            mk.dispatch.remove(key);
            for cluster in &d.clusters {
                self.remove_remote(mk, cluster, key).await?;
            }
        }
        let evicted_message = (has_quota_reservation(&wl) && is_evicted(&wl))
            .then(|| {
                wl.status
                    .as_ref()
                    .and_then(|s| cond::find(&s.conditions, EVICTED))
                    .map(|c| c.message.clone())
            })
            .flatten();
        let states = checks::states(&wl);
        let local = mk::Local {
            check: d.state,
            holds_quota: has_quota_reservation(&wl),
            finished: is_finished(&wl),
            evicted: evicted_message.as_deref(),
            cluster_name: wl.status.as_ref().and_then(|s| s.cluster_name.as_deref()),
            others_ready: states
                .iter()
                .all(|s| s.name == d.check || s.state == CheckState::Ready.as_str()),
        };
        let views = worker_views(mk, &d.clusters, &wl);
        let plan = mk::reconcile(&local, &views, now, settings.worker_lost_timeout_ms());
        if local.finished || !local.holds_quota {
            mk.dispatch.remove(key);
        }
        let mut check: Option<(CheckState, String, Why)> = None;
        let mut admitted_on = None;
        for action in plan.actions {
            match action {
                Action::Remove { worker, .. } => {
                    self.remove_remote(mk, &d.clusters[worker], key).await?;
                }
                Action::SyncJob { worker } => {
                    let cluster = &d.clusters[worker];
                    match &owner {
                        Owner::Job { kind, name } => {
                            self.sync_remote_job(mk, cluster, *kind, &wl, name, settings, now)
                                .await?;
                        }
                        Owner::Pods => {
                            self.sync_remote_pods(mk, cluster, &wl, settings).await?;
                        }
                        Owner::Parent { kind, name } => {
                            self.sync_remote_parent(mk, cluster, *kind, &wl, name, settings)
                                .await?;
                        }
                    }
                }
                Action::Deactivate { worker, message } => {
                    deactivate_copy(mk, &d.clusters[worker], key, &message, now).await?;
                }
                Action::UpdatePriority { worker } => {
                    update_priority(mk, &d.clusters[worker], &wl).await?;
                }
                Action::Finish { worker } => {
                    let copy = mk
                        .remote(&d.clusters[worker])
                        .and_then(|r| r.copies.get(key))
                        .and_then(|c| c.status.as_ref())
                        .and_then(|s| cond::find(&s.conditions, FINISHED))
                        .cloned();
                    if let Some(c) = copy {
                        self.finish_with(&wl, &c.reason, &c.message, now).await?;
                    }
                }
                Action::Check {
                    state,
                    message,
                    why,
                } => check = Some((state, message, why)),
                Action::Admitted { worker } => admitted_on = Some(d.clusters[worker].clone()),
                Action::Dispatch => {
                    self.nominate(mk, &wl, &d, &owner, settings, now).await?;
                }
                Action::CompleteEviction => {
                    // Once its job is stopped here (the pass that evicted it suspends it);
                    // evicted pods are deleted, and their group completes the eviction.
                    if let Owner::Job { kind, name } = &owner
                        && (self.local_job(*kind, &wl, name))
                            .is_some_and(|j| self.kinds[*kind].is_suspended(&to_value(j)))
                    {
                        self.complete_eviction(&wl, now).await?;
                    }
                }
            }
        }
        if let Some((state, message, why)) = check {
            self.write_check(&wl, &d.check, state, &message, admitted_on, now)
                .await?;
            // Kueue's Events: Normal for these two, Warning for a copy out of sync.
            if matches!(why, Why::Admitted | Why::EvictedOnWorker | Why::OutOfSync) {
                let warning = why == Why::OutOfSync;
                self.writer
                    .event(
                        &workload_ref(&wl),
                        warning,
                        "MultiKueue",
                        "MultiKueue",
                        message,
                    )
                    .await;
            }
        }
        Ok(())
    }

    /// Kueue's `adapter` and `IsJobManagedByKueue`: what the manager dispatches for `wl`
    /// (its job, or its pods), or `None` — then the check is `Rejected` when the owner cannot
    /// be dispatched, or left as it is while the job is not known yet.
    async fn adapter_of(
        &mut self,
        mk: &MultiKueue,
        wl: &Workload,
        d: &Dispatch,
        now: Millis,
    ) -> Result<Option<Owner>, Error> {
        let owners = wl.metadata.owner_references.as_deref().unwrap_or_default();
        let owner = owners
            .iter()
            .find(|o| o.controller == Some(true))
            .or(owners.first());
        // Kueue's pod adapter: plain pods, a pod group, a Deployment's replica; the
        // StatefulSet and LeaderWorkerSet adapters for their pods' groups.
        if let Some(o) = owner
            && o.api_version == "v1"
            && o.kind == "Pod"
            && self.pod_groups
        {
            let pod = (self.mirror.pods).get(&key_of(wl.metadata.namespace.as_deref(), &o.name));
            return Ok(Some(match pod.and_then(|p| mk.parent_of(p)) {
                Some((kind, name)) => Owner::Parent { kind, name },
                None => Owner::Pods,
            }));
        }
        let kind = owner.and_then(|o| {
            self.kinds.iter().position(|k| {
                k.spec.api_version == o.api_version
                    && k.spec.kind == o.kind
                    && k.spec.multi_kueue.is_some()
            })
        });
        let rejection = match (owner, kind) {
            (None, _) => "No multikueue adapter found".to_string(),
            (Some(o), None) => format!(
                "No multikueue adapter found for owner kind {:?}",
                job_adapter::gvk_string(&o.api_version, &o.kind)
            ),
            (Some(o), Some(i)) => {
                let Some(job) = self.local_job(i, wl, &o.name) else {
                    return Ok(None);
                };
                let adapter = self.kinds[i].spec.multi_kueue.as_ref();
                match adapter.and_then(|a| job_adapter::not_managed_reason(a, &to_value(job))) {
                    None => {
                        return Ok(Some(Owner::Job {
                            kind: i,
                            name: o.name.clone(),
                        }));
                    }
                    Some(reason) => format!("The owner is not managed by Kueue: {reason}"),
                }
            }
        };
        let message = mk::previously(&rejection, d.state);
        self.write_check(wl, &d.check, CheckState::Rejected, &message, None, now)
            .await?;
        Ok(None)
    }

    /// The manager's job `name` of kind `i` in `wl`'s namespace.
    fn local_job(&self, i: usize, wl: &Workload, name: &str) -> Option<&kube::core::DynamicObject> {
        self.mirror.jobs[i].get(&key_of(wl.metadata.namespace.as_deref(), name))
    }

    /// Writes the MultiKueue check's state (Kueue's `updateACS` and
    /// `syncAdmittingRemoteState`), with `status.clusterName` set and the nominations
    /// cleared when a worker admitted the Workload.
    async fn write_check(
        &mut self,
        wl: &Workload,
        check: &str,
        state: CheckState,
        message: &str,
        admitted_on: Option<String>,
        now: Millis,
    ) -> Result<(), Error> {
        let message = cond::truncate(message, 32768);
        let before = checks::states(wl).to_vec();
        self.write_status_as(&workload_key(wl), MULTIKUEUE_CONTROLLER, |w| {
            if checks::states(w) != before.as_slice() {
                return None;
            }
            let mut st = w.status.as_deref().cloned().unwrap_or_default();
            let mut wc = checks::to_core(&before);
            wc.set(check, state, &message, None, Vec::new(), now);
            st.admission_checks = Some(checks::from_core(&wc, &before));
            if let Some(c) = &admitted_on {
                st.cluster_name.get_or_insert_with(|| c.clone());
                st.nominated_cluster_names.clear();
            }
            Some(st)
        })
        .await?;
        Ok(())
    }

    /// Kueue's `nominateAndSynchronizeWorkers`: the dispatcher (the plugin bound to the
    /// Workload's ClusterQueue, else the Configuration's built-in) names the workers to hold a
    /// copy, `status.nominatedClusterNames` records them, and the copies follow. Under an
    /// external dispatcher with no plugin, the nominations are those it wrote.
    async fn nominate(
        &mut self,
        mk: &mut MultiKueue,
        wl: &Workload,
        d: &Dispatch,
        owner: &Owner,
        settings: &MultiKueueSettings,
        now: Millis,
    ) -> Result<(), Error> {
        let key = workload_key(wl);
        let written = wl
            .status
            .as_ref()
            .map(|s| s.nominated_cluster_names.clone())
            .unwrap_or_default();
        let index = |name: &String| d.clusters.iter().position(|c| c == name);
        let nominated: Vec<usize> = written.iter().filter_map(index).collect();
        let pinned = match owner {
            Owner::Parent { kind, name } if mk.parents[*kind].0.spec.groups.is_some() => {
                match self.component_cluster(mk, wl, *kind, name).await? {
                    Component::Wait => return Ok(()),
                    Component::Primary => None,
                    Component::On(cluster) => match index(&cluster) {
                        Some(i) => Some(i),
                        None => {
                            tracing::info!(workload = %key, "assigned worker cluster {cluster:?} is not available");
                            return Ok(());
                        }
                    },
                }
            }
            _ => None,
        };
        let builtin = dispatch::configured(settings);
        let plugin = self.dispatch_plugin(&key);
        let connected: Vec<bool> = (d.clusters.iter())
            .map(|c| mk.remote(c).is_some_and(|r| r.conn.connected()))
            .collect();
        let memory = mk.dispatch.entry(key.clone()).or_default();
        let nominees = if let Some(i) = pinned {
            vec![i]
        } else if plugin.is_none() && builtin.is_none() {
            for name in &written {
                if !d.clusters.contains(name) || !connected[index(name).unwrap_or_default()] {
                    tracing::info!(workload = %key, "cluster {name}: no remote client for nominated cluster");
                }
            }
            nominated
        } else {
            let due = memory.asked.as_ref() != Some(&connected)
                || memory.retry_at.is_some_and(|t| t <= now);
            if !due {
                nominated
            } else {
                let Some(req) = self.dispatch_request(mk, wl, d, nominated.clone(), now) else {
                    return Ok(());
                };
                let (answer, _, failure) =
                    dispatch::ask(plugin.as_deref(), builtin.as_deref(), &req);
                if let (Some(e), Some(p)) = (&failure, &plugin) {
                    let id = p.id();
                    tracing::warn!(plugin = %id.name, error = %e, "MultiKueue: the dispatch plugin's answer was not taken");
                    self.metrics
                        .plugin_fallbacks
                        .get_or_create(&self.metrics.labels(vec![
                            ("plugin", id.name.to_string()),
                            ("extension", "dispatch".into()),
                            ("reason", e.reason().to_string()),
                        ]))
                        .inc();
                }
                let memory = mk.dispatch.entry(key.clone()).or_default();
                memory.asked = Some(connected.clone());
                memory.retry_at = answer.retry_after.map(|r| now.saturating_add(r));
                let mut nominees: Vec<usize> =
                    answer.nominate.iter().map(|&i| i as usize).collect();
                nominees.sort_unstable();
                nominees.dedup();
                nominees
            }
        };
        let names: Vec<String> = nominees.iter().map(|&i| d.clusters[i].clone()).collect();
        let as_set = |v: &[String]| v.iter().cloned().collect::<BTreeSet<_>>();
        if as_set(&names) != as_set(&written) {
            mk.dispatch.entry(key.clone()).or_default().last_nominated = Some(now);
            let names = names.clone();
            self.write_status_as(&key, MULTIKUEUE_CONTROLLER, move |w| {
                let mut st = w.status.as_deref().cloned().unwrap_or_default();
                if st.cluster_name.is_some() {
                    return None;
                }
                st.nominated_cluster_names = names.clone();
                Some(st)
            })
            .await?;
        }
        let views = worker_views(mk, &d.clusters, wl);
        let (create, remove) = mk::sync_nominees(&nominees, &views);
        for action in remove {
            if let Action::Remove { worker, .. } = action {
                self.remove_remote(mk, &d.clusters[worker], &key).await?;
            }
        }
        for worker in create {
            create_copy(mk, &d.clusters[worker], wl, settings.origin()).await?;
        }
        Ok(())
    }

    /// Kueue's component workloads (a LeaderWorkerSet's groups, `kind` `name` in
    /// [`MultiKueue::parents`]) all go to one worker: once every group's Workload exists, the
    /// first group's is dispatched as any other, and the others follow it to the worker that
    /// admitted one of them.
    async fn component_cluster(
        &mut self,
        mk: &mut MultiKueue,
        wl: &Workload,
        kind: usize,
        name: &str,
    ) -> Result<Component, Error> {
        let key = workload_key(wl);
        let ns = wl.metadata.namespace.as_deref().unwrap_or("default");
        let members = match mk.dispatch.get(&key).and_then(|m| m.members.clone()) {
            Some(m) => m,
            None => {
                let Some(set) = self.local_parent(mk, kind, ns, name).await? else {
                    return Ok(Component::Wait);
                };
                let m = job_adapter::parent_workloads(&mk.parents[kind].0, &set);
                mk.dispatch.entry(key.clone()).or_default().members = Some(m.clone());
                m
            }
        };
        let own = wl.metadata.name.as_deref().unwrap_or_default();
        let others: Vec<_> = (members.iter().filter(|m| *m != own))
            .map(|m| self.mirror.workloads.get(&key_of(Some(ns), m)))
            .collect();
        if others.iter().any(Option::is_none) {
            tracing::debug!(workload = %key, "MultiKueue: waiting for all component workloads to exist");
            return Ok(Component::Wait);
        }
        let assigned: BTreeSet<String> = (others.iter().flatten())
            .filter_map(|w| w.status.as_ref()?.cluster_name.clone())
            .collect();
        Ok(match assigned.len() {
            0 if members.first().map(String::as_str) == Some(own) => Component::Primary,
            0 => Component::Wait,
            1 => Component::On(assigned.into_iter().next().unwrap_or_default()),
            _ => {
                tracing::warn!(workload = %key, clusters = ?assigned, "MultiKueue: component workloads assigned to different clusters");
                Component::Wait
            }
        })
    }

    /// The manager's StatefulSet or LeaderWorkerSet `name` (`kind` in
    /// [`MultiKueue::parents`]), read from its API server (the controller does not watch
    /// them); `None` when it is gone.
    async fn local_parent(
        &self,
        mk: &MultiKueue,
        kind: usize,
        ns: &str,
        name: &str,
    ) -> Result<Option<Value>, Error> {
        let api: kube::Api<kube::core::DynamicObject> =
            kube::Api::namespaced_with(self.writer.client().clone(), ns, &mk.parents[kind].1);
        Ok(api.get_opt(name).await?.map(|o| to_value(&o)))
    }

    /// Kueue's StatefulSet and LeaderWorkerSet adapters' `SyncJob` against `cluster`: the set
    /// created there when missing (only ever on the worker that admitted the copy); its
    /// status is not mirrored.
    async fn sync_remote_parent(
        &mut self,
        mk: &mut MultiKueue,
        cluster: &str,
        kind: usize,
        wl: &Workload,
        name: &str,
        settings: &MultiKueueSettings,
    ) -> Result<(), Error> {
        let ns = wl.metadata.namespace.as_deref().unwrap_or("default");
        let key = key_of(Some(ns), name);
        let Some(remote) = mk.remote(cluster).filter(|r| r.conn.connected()) else {
            return Ok(());
        };
        if remote.object(RemoteKind::Parent(kind), &key).is_some() {
            return Ok(());
        }
        let Some(local) = self.local_parent(mk, kind, ns, name).await? else {
            return Ok(());
        };
        let wl_name = wl.metadata.name.as_deref().unwrap_or_default();
        let set =
            job_adapter::remote_parent(&mk.parents[kind].0, &local, wl_name, settings.origin());
        let ar = mk.parents[kind].1.clone();
        let Some((remote, writer)) = mk.connected_mut(cluster) else {
            return Ok(());
        };
        match writer.create(&ar, ns, &set, FIELD_MANAGER).await {
            Ok(obj) => remote.observe(RemoteKind::Parent(kind), key, Some(obj)),
            // Another group's Workload made it (a LeaderWorkerSet's), or its event is on its way.
            Err(e) if e.is_already_exists() => {}
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// The dispatch plugin bound to the ClusterQueue the Workload reserved quota in.
    fn dispatch_plugin(&self, key: &str) -> Option<std::sync::Arc<dyn dispatch::DispatchPolicy>> {
        let s = self.scheduler.as_ref()?;
        let id = self.id_of(key)?;
        let cq = s.cluster.admission(id)?.cluster_queue;
        s.policies_for(cq).dispatch.clone()
    }

    /// What the dispatcher is asked for `wl` now.
    fn dispatch_request(
        &self,
        mk: &MultiKueue,
        wl: &Workload,
        d: &Dispatch,
        nominated: Vec<usize>,
        now: Millis,
    ) -> Option<DispatchRequest> {
        let key = workload_key(wl);
        let s = self.scheduler.as_ref()?;
        let id = self.id_of(&key)?;
        let reserved = wl
            .status
            .as_ref()
            .and_then(|s| cond::find(&s.conditions, cond::QUOTA_RESERVED))
            .and_then(|c| c.last_transition_time.as_ref())
            .map_or(now, |t| t.0.as_millisecond());
        let clusters = d
            .clusters
            .iter()
            .map(|name| {
                let remote = mk.remote(name);
                let connected = remote.is_some_and(|r| r.conn.connected());
                WorkerCluster {
                    name: name.clone(),
                    labels: (self.mirror.multikueue_clusters.get(name))
                        .and_then(|c| c.metadata.labels.clone())
                        .unwrap_or_default(),
                    connected,
                    lost_since: remote.and_then(|r| r.conn.disconnected_since()),
                    queue: remote
                        .zip(wl.spec.queue_name.as_deref())
                        .and_then(|(r, lq)| {
                            let ns = wl.metadata.namespace.as_deref().unwrap_or("default");
                            r.worker_queue(ns, lq)
                        }),
                    copy_since: remote
                        .filter(|_| connected)
                        .and_then(|r| r.copies.get(&key))
                        .and_then(|c| c.metadata.creation_timestamp.as_ref())
                        .map(|t| t.0.as_millisecond()),
                }
            })
            .collect();
        Some(DispatchRequest {
            now,
            workload: DispatchedWorkload::of(&s.cluster, id, reserved),
            clusters,
            nominated: nominated.into_iter().map(|i| i as u32).collect(),
            last_nominated: mk.dispatch.get(&key).and_then(|m| m.last_nominated),
        })
    }

    /// Kueue's `SyncJob` against `cluster`: the remote job created when missing (only ever on
    /// the worker that admitted the copy), else its status taken onto the manager's job.
    #[allow(clippy::too_many_arguments)]
    async fn sync_remote_job(
        &mut self,
        mk: &mut MultiKueue,
        cluster: &str,
        i: usize,
        wl: &Workload,
        job_name: &str,
        settings: &MultiKueueSettings,
        now: Millis,
    ) -> Result<(), Error> {
        let Some(local) = self.local_job(i, wl, job_name).cloned() else {
            return Ok(());
        };
        let Some(ar) = mk.job_resource(i).cloned() else {
            return Ok(());
        };
        let Some((remote, writer)) = mk.connected_mut(cluster) else {
            return Ok(());
        };
        let kind = self.kinds[i].clone();
        let key = key_of(local.metadata.namespace.as_deref(), job_name);
        let ns = local.metadata.namespace.clone();
        let local_value = to_value(&local);
        match remote.object(RemoteKind::Job(i), &key) {
            None => {
                let name = wl.metadata.name.as_deref().unwrap_or_default();
                let job = job_adapter::remote_job(&kind, &local_value, name, settings.origin());
                let created = writer
                    .create(&ar, ns.as_deref().unwrap_or("default"), &job, FIELD_MANAGER)
                    .await;
                match created {
                    Ok(obj) => remote.observe(RemoteKind::Job(i), key, Some(obj)),
                    // Its watch event is on its way.
                    Err(e) if e.is_already_exists() => {}
                    Err(e) => return Err(e),
                }
            }
            Some(r) => {
                let update =
                    job_adapter::status_update(&kind, &local_value, &to_value(r), &rfc3339(now));
                if let Some(status) = update.status {
                    let ops = vec![json!({"op": "add", "path": "/status", "value": status})];
                    self.patch_job(i, ns.as_deref(), job_name, ops, true)
                        .await?;
                }
            }
        }
        Ok(())
    }

    /// Kueue's pod adapter `SyncJob` against `cluster`: each of `wl`'s pods created there
    /// when missing (only ever on the worker that admitted the copy), else its status taken
    /// onto the manager's pod.
    async fn sync_remote_pods(
        &mut self,
        mk: &mut MultiKueue,
        cluster: &str,
        wl: &Workload,
        settings: &MultiKueueSettings,
    ) -> Result<(), Error> {
        let Some((remote, writer)) = mk.connected_mut(cluster) else {
            return Ok(());
        };
        let ns = wl.metadata.namespace.as_deref().unwrap_or("default");
        let name = wl.metadata.name.as_deref().unwrap_or_default();
        let ar = pod_groups::pod_resource();
        for pod in self.local_pods(wl) {
            let pod_name = pod.metadata.name.clone().unwrap_or_default();
            let key = key_of(Some(ns), &pod_name);
            let local = serde_json::to_value(&pod).unwrap_or_default();
            match remote.object(RemoteKind::Pod, &key) {
                None => {
                    let created = writer
                        .create(
                            &ar,
                            ns,
                            &job_adapter::remote_pod(&local, name, settings.origin()),
                            FIELD_MANAGER,
                        )
                        .await;
                    match created {
                        Ok(obj) => remote.observe(RemoteKind::Pod, key, Some(obj)),
                        Err(e) if e.is_already_exists() => {}
                        Err(e) => return Err(e),
                    }
                }
                Some(r) => {
                    let Some(status) = job_adapter::pod_status_update(&local, &to_value(r)) else {
                        continue;
                    };
                    let ops = vec![json!({"op": "add", "path": "/status", "value": status})];
                    match self
                        .writer
                        .json_patch(&ar, Some(ns), &pod_name, ops, true)
                        .await
                    {
                        Ok(obj) => self.observe(Observed::Applied(Source::Pod, obj)),
                        Err(e) if e.is_not_found() => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Ok(())
    }

    /// The manager's pods `wl` was made from (its owners), as the mirror has them.
    fn local_pods(&self, wl: &Workload) -> Vec<Pod> {
        let ns = wl.metadata.namespace.as_deref();
        (wl.metadata.owner_references.iter().flatten())
            .filter(|o| o.api_version == "v1" && o.kind == "Pod")
            .filter_map(|o| self.mirror.pods.get(&key_of(ns, &o.name)))
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .cloned()
            .collect()
    }

    /// Kueue's `RemoveRemoteObjects`: what the manager made there for the Workload — the
    /// remote job or pods naming it as their prebuilt Workload, the StatefulSet or
    /// LeaderWorkerSet one of whose Workloads it is (Kueue deletes a LeaderWorkerSet with any
    /// of its groups' copies) — then the copy, Kueue's finalizer removed first.
    async fn remove_remote(
        &mut self,
        mk: &mut MultiKueue,
        cluster: &str,
        key: &str,
    ) -> Result<(), Error> {
        let (ns, name) = key.split_once('/').unwrap_or(("default", key));
        let Some(writer) = mk.remote(cluster).and_then(|r| r.writer()) else {
            return Ok(());
        };
        let made: Vec<(RemoteKind, String)> = (mk.remote(cluster).into_iter())
            .flat_map(|r| r.objects.iter())
            .filter(|((kind, _), o)| {
                o.metadata.namespace.as_deref() == Some(ns)
                    && match kind {
                        RemoteKind::Job(_) | RemoteKind::Pod => {
                            job_adapter::prebuilt_name(&o.metadata) == Some(name)
                        }
                        RemoteKind::Parent(i) => {
                            job_adapter::parent_workloads(&mk.parents[*i].0, &to_value(o))
                                .iter()
                                .any(|w| w == name)
                        }
                        _ => false,
                    }
            })
            .map(|(k, _)| k.clone())
            .collect();
        for (kind, object) in made {
            let Some(ar) = mk.resource_of(kind) else {
                continue;
            };
            let object_name = object.split_once('/').map_or(object.as_str(), |(_, n)| n);
            writer.delete(&ar, Some(ns), object_name).await?;
            if let Some(remote) = mk.remote_mut_if(cluster) {
                remote.observe(kind, object, None);
            }
        }
        let Some(remote) = mk.remote_mut_if(cluster) else {
            return Ok(());
        };
        let Some(copy) = remote.copies.get(key) else {
            return Ok(());
        };
        let ar = KueueKind::Workload.api_resource();
        let finalizers: Vec<String> = copy.metadata.finalizers.clone().unwrap_or_default();
        if finalizers.iter().any(|f| f == RESOURCE_IN_USE) {
            let kept: Vec<&String> = finalizers
                .iter()
                .filter(|f| *f != RESOURCE_IN_USE)
                .collect();
            let ops = vec![
                json!({"op": "test", "path": "/metadata/finalizers", "value": finalizers}),
                json!({"op": "replace", "path": "/metadata/finalizers", "value": kept}),
            ];
            match writer.json_patch(&ar, Some(ns), name, ops, false).await {
                Ok(_) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
        }
        writer.delete(&ar, Some(ns), name).await?;
        remote.observe(RemoteKind::Workload, key.to_string(), None);
        Ok(())
    }
}

/// What the manager knows of `wl`'s copy on each of `clusters`.
fn worker_views<'a>(
    mk: &'a MultiKueue,
    clusters: &'a [String],
    wl: &Workload,
) -> Vec<mk::Worker<'a>> {
    let key = workload_key(wl);
    clusters
        .iter()
        .map(|name| {
            let remote = mk.remote(name);
            let reachable = remote.is_some_and(|r| r.conn.connected());
            let copy = remote
                .filter(|_| reachable)
                .and_then(|r| r.copies.get(&key))
                .map(|c| copy_state(c, wl));
            mk::Worker {
                name,
                reachable,
                lost_since: remote.and_then(|r| r.conn.disconnected_since()),
                copy,
            }
        })
        .collect()
}

/// A copy's state from its conditions, and whether its priority is still `wl`'s.
fn copy_state(copy: &Workload, wl: &Workload) -> mk::Copy {
    let conditions = copy
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    mk::Copy {
        admitted_at: cond::find(conditions, cond::ADMITTED)
            .filter(|c| c.status == "True")
            .map(|c| {
                c.last_transition_time
                    .as_ref()
                    .map_or(0, |t| t.0.as_millisecond())
            }),
        finished: cond::is_true(conditions, FINISHED),
        out_of_sync: cond::find(conditions, FINISHED)
            .is_some_and(|c| c.status == "True" && c.reason == OUT_OF_SYNC),
        evicted: cond::is_true(conditions, EVICTED),
        // What the manager's Workload sets (a worker may default what it leaves unset).
        // Only a copy the manager made from another spec (one made by another manager is
        // left as it is).
        stale_spec: (copy.metadata.annotations.as_ref())
            .and_then(|a| a.get(SPEC_HASH_ANNOTATION))
            .is_some_and(|h| *h != spec_hash(&wl.spec)),
        stale_priority: (wl.spec.priority.is_some() && copy.spec.priority != wl.spec.priority)
            || (wl.spec.priority_class_ref.is_some()
                && copy.spec.priority_class_ref != wl.spec.priority_class_ref),
    }
}

/// Kueue's `PriorityChanged` update: the copy on `cluster` takes `wl`'s priority class and
/// value.
async fn update_priority(mk: &mut MultiKueue, cluster: &str, wl: &Workload) -> Result<(), Error> {
    let Some((remote, writer)) = mk.connected_mut(cluster) else {
        return Ok(());
    };
    let key = workload_key(wl);
    let (ns, name) = key.split_once('/').unwrap_or(("default", key.as_str()));
    let body = json!({"spec": {"priority": wl.spec.priority,
                               "priorityClassRef": wl.spec.priority_class_ref}});
    let written = writer.patch_workload(ns, name, &body).await?;
    remote.observe(RemoteKind::Workload, key.clone(), Some(written));
    Ok(())
}

/// Creates `wl`'s copy on `cluster` (Kueue's `cloneForCreate`).
async fn create_copy(
    mk: &mut MultiKueue,
    cluster: &str,
    wl: &Workload,
    origin: &str,
) -> Result<(), Error> {
    let Some((remote, writer)) = mk.connected_mut(cluster) else {
        return Ok(());
    };
    let mut copy = serde_json::to_value(remote_workload(wl, origin)).unwrap_or(Value::Null);
    copy["apiVersion"] = json!(crate::api::V1BETA2);
    copy["kind"] = json!("Workload");
    let ns = wl.metadata.namespace.as_deref().unwrap_or("default");
    let ar = KueueKind::Workload.api_resource();
    match writer.create(&ar, ns, &copy, FIELD_MANAGER).await {
        Ok(obj) => {
            remote.observe(RemoteKind::Workload, workload_key(wl), Some(obj));
            Ok(())
        }
        Err(e) if e.is_already_exists() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Sets `DeactivationTarget=True` (reason `EvictedOnManagerCluster`) on the copy on
/// `cluster`, unless it is already set: its worker then evicts it.
async fn deactivate_copy(
    mk: &mut MultiKueue,
    cluster: &str,
    key: &str,
    message: &str,
    now: Millis,
) -> Result<(), Error> {
    let Some((remote, writer)) = mk.connected_mut(cluster) else {
        return Ok(());
    };
    let Some(copy) = remote.copies.get(key) else {
        return Ok(());
    };
    let mut conditions = copy
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    if cond::is_true(&conditions, checks::DEACTIVATION_TARGET) {
        return Ok(());
    }
    cond::set(
        &mut conditions,
        cond::condition(
            checks::DEACTIVATION_TARGET,
            true,
            mk::EVICTED_ON_MANAGER_CLUSTER,
            &cond::truncate(message, 32768),
            now,
        ),
    );
    let (ns, name) = key.split_once('/').unwrap_or(("default", key));
    let written = writer
        .patch_status_as(
            KueueKind::Workload,
            Some(ns),
            name,
            &json!({ "conditions": conditions }),
            FIELD_MANAGER,
        )
        .await?;
    remote.observe(RemoteKind::Workload, key.to_string(), Some(written));
    Ok(())
}
