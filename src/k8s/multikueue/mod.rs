//! MultiKueue's manager side against real worker clusters: what Kueue's
//! `pkg/controller/admissionchecks/multikueue` does with remote clients.
//!
//! - [`kubeconfig`]: a MultiKueueCluster's kubeconfig read (Secret or path), validated and
//!   turned into a [`kube::Client`] (Kueue's `loadClientConfig`, `validateKubeconfig`).
//! - [`connection`]: a worker's connection state (sessions, backoff, time lost) and the
//!   MultiKueueCluster `Active` condition it implies.
//! - [`session`]: one connection, as a task reporting on a channel: the worker's copies,
//!   remote jobs, pods and sets, and its queues, listed and watched.
//!
//! [`MultiKueue`] holds one [`Remote`] per MultiKueueCluster the controller reconciles
//! (`crate::k8s::controller`): its connection, what the manager sees there (the copies, and
//! every other object watched by kind and key, while connected) and a writer for them.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kube::config::Kubeconfig;
use kube::core::{ApiResource, DynamicObject};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::AbortHandle;

use crate::api::Workload;
use crate::api::jobs::JobKind;
use crate::api::pods::LWS_NAME_LABEL;
use crate::cluster::Millis;
use crate::k8s::client::writer::Writer;
use crate::k8s::schema::kinds::KueueKind;
use crate::k8s::sync::keys::key_of;
use crate::policy::dispatch::{WorkerQueue, WorkerResource};

pub mod connection;
pub mod kubeconfig;
pub mod session;

use connection::Connection;
use session::{Outcome, RemoteKind, Report};

/// The field manager of MultiKueue's writes (Kueue's controller name).
pub const FIELD_MANAGER: &str = crate::api::multikueue::MULTIKUEUE_CONTROLLER;
/// Kueue's default `multiKueue.origin`.
pub const DEFAULT_ORIGIN: &str = "multikueue";
/// Kueue's default namespace, where the kubeconfig Secrets are.
pub const DEFAULT_NAMESPACE: &str = "kueue-system";
/// How often, by the controller's clock, a `locationType: Path` kubeconfig is read again to
/// see a rotation (there is no file watcher in this first cut; Secrets are watched).
pub const REREAD_MS: Millis = 1_000;

/// The manager's MultiKueue options.
#[derive(Debug, Clone)]
pub struct Options {
    /// `multiKueue.origin`: the label value on the manager's copies.
    pub origin: String,
    /// Kueue's namespace: where `locationType: Secret` kubeconfigs are.
    pub namespace: String,
    /// Where `locationType: Path` kubeconfigs must be ([`kubeconfig::default_dir`]).
    pub kubeconfig_dir: PathBuf,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            origin: DEFAULT_ORIGIN.into(),
            namespace: DEFAULT_NAMESPACE.into(),
            kubeconfig_dir: kubeconfig::default_dir(),
        }
    }
}

/// One worker cluster: its connection and the session task running for it.
#[derive(Default)]
pub struct Remote {
    pub conn: Connection,
    task: Option<(u64, AbortHandle)>,
    /// When its kubeconfig was last read, and what it was read from then (the
    /// resourceVersions of the MultiKueueCluster and its Secret).
    read: Option<(Millis, String)>,
    /// A session reported since the last reconcile.
    reported: bool,
    /// Writes to the worker, with the current session's client (while connected).
    writer: Option<Arc<Writer>>,
    /// The manager's Workload copies there, by key (while connected).
    pub copies: BTreeMap<String, Workload>,
    /// Everything else it watches there, by kind and key (while connected): the remote jobs,
    /// pods and sets the manager made, and its ClusterQueues (by name) and LocalQueues when
    /// the manager may read them.
    pub objects: BTreeMap<(RemoteKind, String), DynamicObject>,
}

impl Remote {
    /// Whether the cluster must be reconciled at `now`: never read, what it is read from
    /// changed (`stamp`), a session reported, the backoff ended, or (`poll`: a file) a reread
    /// is due.
    pub fn due(&self, stamp: &str, poll: bool, now: Millis) -> bool {
        let Some((at, read)) = &self.read else {
            return true;
        };
        self.reported
            || read != stamp
            || self.conn.wake_at().is_some_and(|t| t <= now)
            || (poll && now >= at + REREAD_MS)
    }

    /// Records a reconcile at `now` of what `stamp` says.
    pub fn reconciled(&mut self, stamp: String, now: Millis) {
        self.read = Some((now, stamp));
        self.reported = false;
    }

    /// The writer to the worker, while connected.
    pub fn writer(&self) -> Option<Arc<Writer>> {
        self.writer.clone().filter(|_| self.conn.connected())
    }

    /// Takes in `object` as the worker now has it (`None`: gone), as the session or the
    /// answer to a write reports it. An older resourceVersion than the one held is ignored.
    pub fn observe(&mut self, kind: RemoteKind, key: String, object: Option<DynamicObject>) {
        let held = match kind {
            RemoteKind::Workload => self
                .copies
                .get(&key)
                .and_then(|w| w.metadata.resource_version.clone()),
            _ => self
                .object(kind, &key)
                .and_then(|o| o.metadata.resource_version.clone()),
        };
        let newer = |o: &DynamicObject| {
            let rv = |v: Option<&String>| v.and_then(|v| v.parse::<u64>().ok());
            match (rv(held.as_ref()), rv(o.metadata.resource_version.as_ref())) {
                (Some(h), Some(n)) => n >= h,
                _ => true,
            }
        };
        match (kind, object) {
            (_, Some(o)) if !newer(&o) => {}
            (RemoteKind::Workload, Some(o)) => match decode_copy(&o) {
                Ok(w) => {
                    self.copies.insert(key, w);
                }
                Err(e) => {
                    tracing::warn!(workload = %key, error = %e, "MultiKueue: a remote Workload does not decode");
                }
            },
            (RemoteKind::Workload, None) => {
                self.copies.remove(&key);
            }
            (_, Some(o)) => {
                self.objects.insert((kind, key), o);
            }
            (_, None) => {
                self.objects.remove(&(kind, key));
            }
        }
    }

    /// The object of `kind` (not a copy) at `key`, as the worker last showed it.
    pub fn object(&self, kind: RemoteKind, key: &str) -> Option<&DynamicObject> {
        self.objects.get(&(kind, key.to_string()))
    }

    /// Forgets everything seen there.
    fn forget(&mut self) {
        self.copies.clear();
        self.objects.clear();
    }

    /// What the manager sees of the worker's ClusterQueue that LocalQueue `namespace/name`
    /// feeds: Kueue's status there (pending and admitted Workloads, each flavor's usage) and
    /// its nominal quotas. `None` while not connected, or when the queues cannot be read.
    pub fn worker_queue(&self, namespace: &str, local_queue: &str) -> Option<WorkerQueue> {
        if !self.conn.connected() {
            return None;
        }
        let lq = self.object(
            RemoteKind::LocalQueue,
            &key_of(Some(namespace), local_queue),
        )?;
        let name = lq.data["spec"]["clusterQueue"].as_str()?;
        let cq = &self.object(RemoteKind::ClusterQueue, name)?.data;
        let milli = |v: &serde_json::Value| {
            v.as_str()
                .map(str::to_string)
                .or_else(|| v.as_i64().map(|n| n.to_string()))
                .and_then(|s| s.parse::<crate::api::Quantity>().ok())
                .map(|q| q.milli())
        };
        let usage = |flavor: &str, resource: &str| {
            (cq["status"]["flavorsUsage"]
                .as_array()
                .into_iter()
                .flatten())
            .find(|f| f["name"] == flavor)
            .and_then(|f| {
                (f["resources"].as_array().into_iter().flatten())
                    .find(|r| r["name"] == resource)
                    .and_then(|r| milli(&r["total"]))
            })
            .unwrap_or(0)
        };
        let mut resources = Vec::new();
        for group in cq["spec"]["resourceGroups"]
            .as_array()
            .into_iter()
            .flatten()
        {
            for flavor in group["flavors"].as_array().into_iter().flatten() {
                let f = flavor["name"].as_str().unwrap_or_default();
                for r in flavor["resources"].as_array().into_iter().flatten() {
                    let resource = r["name"].as_str().unwrap_or_default();
                    resources.push(WorkerResource {
                        flavor: f.to_string(),
                        resource: resource.to_string(),
                        nominal: milli(&r["nominalQuota"]).unwrap_or(0),
                        usage: usage(f, resource),
                    });
                }
            }
        }
        let count = |k: &str| cq["status"][k].as_u64().unwrap_or(0) as u32;
        Some(WorkerQueue {
            name: name.to_string(),
            pending: count("pendingWorkloads"),
            admitted: count("admittedWorkloads"),
            resources,
        })
    }

    /// Stops the session task unless it is the connection's current session.
    fn stop_stale(&mut self) {
        if let Some((generation, handle)) = &self.task
            && Some(*generation) != self.conn.session()
        {
            handle.abort();
            self.task = None;
        }
    }
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("conn", &self.conn)
            .field("copies", &self.copies.keys().collect::<Vec<_>>())
            .field("objects", &self.objects.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        if let Some((_, handle)) = self.task.take() {
            handle.abort();
        }
    }
}

/// A Workload from a worker, decoded as the controller decodes its own: pruned to the CRD
/// schema wasq serves (a worker's Kueue may know fields wasq does not model).
fn decode_copy(o: &DynamicObject) -> Result<Workload, String> {
    static SCHEMAS: std::sync::LazyLock<crate::k8s::schema::prune::Schemas> =
        std::sync::LazyLock::new(Default::default);
    let value = serde_json::to_value(o).map_err(|e| e.to_string())?;
    match SCHEMAS.decode(Some(KueueKind::Workload), value, "<worker>") {
        Ok(crate::api::decode::Object::Workload(w)) => Ok(w),
        Ok(_) => Err("not a Workload".into()),
        Err(e) => Err(crate::api::jobs::problems_text(&e.problems)),
    }
}

/// The manager's remote clusters (see the module).
pub struct MultiKueue {
    pub options: Options,
    remotes: BTreeMap<String, Remote>,
    tx: UnboundedSender<Report>,
    rx: UnboundedReceiver<Report>,
    /// The job kinds MultiKueue dispatches (the controller's index, and the resource).
    job_kinds: Vec<(usize, kube::api::ApiResource)>,
    /// Whether plain pods are dispatched (the controller manages pod groups).
    pods: bool,
    /// The kinds dispatched whole while the manager admits their pods as pod groups
    /// (StatefulSet, LeaderWorkerSet: built-in kinds with a MultiKueue adapter and no suspend
    /// flag), with their resources; only when pods are dispatched.
    pub parents: Vec<(JobKind, kube::api::ApiResource)>,
    /// Signalled on every report: the controller's loop runs a pass.
    wake: Arc<tokio::sync::Notify>,
    /// Per Workload key: when its nominees last changed, and when to ask its dispatcher again
    /// (in memory, as Kueue's dispatchers keep their rounds).
    pub dispatch: HashMap<String, Dispatched>,
    /// When the garbage collector last looked for orphaned copies.
    pub last_gc: Option<Millis>,
}

/// What the manager remembers of one Workload's dispatch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dispatched {
    /// When its nominees last changed (an incremental dispatcher's round).
    pub last_nominated: Option<Millis>,
    /// When to ask its dispatcher again, as it asked.
    pub retry_at: Option<Millis>,
    /// Which of its clusters were connected when its dispatcher was last asked: asked again
    /// when that changes.
    pub asked: Option<Vec<bool>>,
    /// A LeaderWorkerSet group's: every group's Workload name, in group order.
    pub members: Option<Vec<String>>,
}

impl MultiKueue {
    pub fn new(
        options: Options,
        job_kinds: Vec<(usize, kube::api::ApiResource)>,
        pods: bool,
    ) -> MultiKueue {
        let (tx, rx) = unbounded_channel();
        MultiKueue {
            options,
            remotes: BTreeMap::new(),
            tx,
            rx,
            job_kinds,
            pods,
            parents: if pods {
                (crate::api::jobs::builtin().into_iter())
                    .filter(|k| !k.has_suspend() && k.spec.multi_kueue.is_some())
                    .map(|k| {
                        let ar = crate::k8s::jobs::integration::api_resource(&k);
                        (k, ar)
                    })
                    .collect()
            } else {
                Vec::new()
            },
            wake: Arc::new(tokio::sync::Notify::new()),
            dispatch: HashMap::new(),
            last_gc: None,
        }
    }

    /// Signalled whenever a session reported (see [`MultiKueue::drain`]).
    pub fn wake(&self) -> Arc<tokio::sync::Notify> {
        self.wake.clone()
    }

    /// Takes in the sessions' reports; returns the clusters whose connection changed.
    pub fn drain(&mut self, now: Millis) -> BTreeSet<String> {
        let mut changed = BTreeSet::new();
        while let Ok(r) = self.rx.try_recv() {
            let Some(remote) = self.remotes.get_mut(&r.cluster) else {
                continue;
            };
            // Reports of an older session are dropped.
            if remote.conn.session() != Some(r.generation) {
                continue;
            }
            match r.outcome {
                Outcome::Changed {
                    kind,
                    object,
                    deleted,
                } => {
                    let key = key_of(
                        object.metadata.namespace.as_deref(),
                        object.metadata.name.as_deref().unwrap_or_default(),
                    );
                    remote.observe(kind, key, (!deleted).then_some(*object));
                    continue;
                }
                Outcome::Synced { client, listed } => {
                    remote.conn.synced(r.generation);
                    remote.writer = Some(Arc::new(Writer::new(client, None)));
                    remote.forget();
                    for (kind, objects) in listed {
                        for o in objects {
                            let key = key_of(
                                o.metadata.namespace.as_deref(),
                                o.metadata.name.as_deref().unwrap_or_default(),
                            );
                            remote.observe(kind, key, Some(o));
                        }
                    }
                }
                Outcome::Ended(e) => {
                    tracing::info!(cluster = %r.cluster, generation = r.generation, error = %e,
                        "MultiKueue: connection to the worker ended");
                    remote.conn.ended(r.generation, e, now);
                    // What the manager saw there is no longer known.
                    remote.writer = None;
                    remote.forget();
                }
            }
            remote.reported = true;
            remote.stop_stale();
            changed.insert(r.cluster);
        }
        changed
    }

    /// The StatefulSet or LeaderWorkerSet the manager's `pod` belongs to, when its kind is
    /// dispatched whole: the kind's index in [`MultiKueue::parents`] and the object's name. A
    /// LeaderWorkerSet's pods carry its name label (their controllers are its StatefulSets);
    /// a StatefulSet's pod is controlled by it.
    pub fn parent_of(&self, pod: &Pod) -> Option<(usize, String)> {
        let meta = &pod.metadata;
        let find = |kind: &str| self.parents.iter().position(|(k, _)| k.spec.kind == kind);
        if let Some(set) = meta.labels.as_ref().and_then(|l| l.get(LWS_NAME_LABEL)) {
            return Some((find("LeaderWorkerSet")?, set.clone()));
        }
        let owner = (meta.owner_references.iter().flatten()).find(|o| {
            o.controller == Some(true) && o.api_version == "apps/v1" && o.kind == "StatefulSet"
        })?;
        Some((find("StatefulSet")?, owner.name.clone()))
    }

    /// The resource of what a session watches as `kind`, besides copies and queues.
    pub fn resource_of(&self, kind: RemoteKind) -> Option<ApiResource> {
        match kind {
            RemoteKind::Job(i) => self.job_resource(i).cloned(),
            RemoteKind::Pod => Some(ApiResource::erase::<Pod>(&())),
            RemoteKind::Parent(i) => self.parents.get(i).map(|(_, ar)| ar.clone()),
            _ => None,
        }
    }

    /// The resource of job kind `i`, when MultiKueue dispatches it.
    pub fn job_resource(&self, i: usize) -> Option<&kube::api::ApiResource> {
        self.job_kinds
            .iter()
            .find(|(k, _)| *k == i)
            .map(|(_, ar)| ar)
    }

    pub fn remote(&self, cluster: &str) -> Option<&Remote> {
        self.remotes.get(cluster)
    }

    /// Every remote, by cluster name.
    pub fn remotes(&self) -> impl Iterator<Item = (&String, &Remote)> {
        self.remotes.iter()
    }

    /// The cluster's remote, when there is one.
    pub fn remote_mut_if(&mut self, cluster: &str) -> Option<&mut Remote> {
        self.remotes.get_mut(cluster)
    }

    /// The cluster's remote and a writer to it, while it is connected.
    pub fn connected_mut(&mut self, cluster: &str) -> Option<(&mut Remote, Arc<Writer>)> {
        let remote = self.remotes.get_mut(cluster)?;
        let writer = remote.writer()?;
        Some((remote, writer))
    }

    /// The cluster's remote, made when missing.
    pub fn remote_mut(&mut self, cluster: &str) -> &mut Remote {
        self.remotes.entry(cluster.to_string()).or_default()
    }

    /// Drops every remote whose cluster `keep` refuses, stopping its session (Kueue's
    /// `stopAndRemoveCluster`).
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.remotes.retain(|name, _| keep(name.as_str()));
    }

    /// Starts session `generation` of `cluster` with `config`, and stops any other.
    /// Needs a tokio runtime.
    pub fn start(&mut self, cluster: &str, generation: u64, config: Kubeconfig) {
        let kinds = [
            (RemoteKind::Workload, KueueKind::Workload.api_resource()),
            (
                RemoteKind::ClusterQueue,
                KueueKind::ClusterQueue.api_resource(),
            ),
            (RemoteKind::LocalQueue, KueueKind::LocalQueue.api_resource()),
        ]
        .into_iter()
        .chain((self.job_kinds.iter()).map(|(i, ar)| (RemoteKind::Job(*i), ar.clone())))
        .chain(
            self.pods
                .then(|| (RemoteKind::Pod, ApiResource::erase::<Pod>(&()))),
        )
        .chain(
            (self.parents.iter().enumerate())
                .map(|(i, (_, ar))| (RemoteKind::Parent(i), ar.clone())),
        )
        .collect();
        let task = tokio::spawn(session::run(
            cluster.to_string(),
            generation,
            config,
            kinds,
            self.options.origin.clone(),
            self.tx.clone(),
            self.wake.clone(),
        ));
        let remote = self.remote_mut(cluster);
        if let Some((_, old)) = remote.task.replace((generation, task.abort_handle())) {
            old.abort();
        }
        remote.stop_stale();
    }

    /// Stops the cluster's session if the connection dropped it.
    pub fn stop_stale(&mut self, cluster: &str) {
        if let Some(r) = self.remotes.get_mut(cluster) {
            r.stop_stale();
        }
    }
}
