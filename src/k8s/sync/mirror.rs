//! The controller's copy of the cluster: every object the watchers report, decoded into the
//! `api` types the core understands, with stale events (older resourceVersions) ignored.
//!
//! It also records what changed since the controller last looked ([`Dirty`]): the
//! configuration (the core is rebuilt), Workloads changed by others (the core takes them in
//! one by one), and the Workloads, jobs and pod groups the reconcile pass must look at again.
//! A pass costs what changed, not what exists.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::core::DynamicObject;

use crate::api::checks::{AdmissionCheck, ProvisioningRequestConfig};
use crate::api::decode::Object;
use crate::api::multikueue::{MultiKueueCluster, MultiKueueConfig};
use crate::api::{
    ClusterQueue, Cohort, LocalQueue, ResourceFlavor, Workload, WorkloadPriorityClass,
};
use crate::k8s::Error;
use crate::k8s::schema::kinds::KueueKind;
use crate::k8s::schema::prune::Schemas;
use crate::k8s::sync::keys::{group_key, key_of, not_older};

/// Where an observed object comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    Kueue(KueueKind),
    Namespace,
    /// Pods of pod groups.
    Pod,
    /// Objects of the job integration with this index.
    Job(usize),
    /// `v1` Nodes (topology-aware scheduling's capacity).
    Node,
    /// Every Pod: usage outside TAS per node, and the TAS pods the ungater releases.
    TasPod,
    /// `autoscaling.x-k8s.io/v1` ProvisioningRequests (when the cluster serves them).
    ProvisioningRequest,
    /// `v1` Secrets of Kueue's namespace: MultiKueue's kubeconfigs (when the controller is
    /// the MultiKueue manager).
    Secret,
}

/// What a watcher reports.
#[derive(Debug, Clone)]
pub enum Observed {
    Applied(Source, DynamicObject),
    Deleted(Source, DynamicObject),
    /// A complete (re)list: the objects replace everything known from this source.
    Listed(Source, Vec<DynamicObject>),
}

fn dyn_key(o: &DynamicObject) -> String {
    key_of(
        o.metadata.namespace.as_deref(),
        o.metadata.name.as_deref().unwrap_or_default(),
    )
}

/// What changed since the controller last drained it ([`Mirror::take_dirty`]).
#[derive(Debug, Clone, Default)]
pub struct Dirty {
    /// Configuration the core is built from (flavors, cohorts, queues, priority classes,
    /// namespaces, admission checks): the core is rebuilt.
    pub config: bool,
    /// Workloads changed by someone else (or deleted): the core reads them again.
    pub workloads: BTreeSet<String>,
    /// Workloads changed in any way, wasq's own writes included: their job or pod group,
    /// admission checks and readiness are looked at again.
    pub touched: BTreeSet<String>,
    /// Jobs per integration (index as in [`Source::Job`]).
    pub jobs: BTreeMap<usize, BTreeSet<String>>,
    /// Pod groups (`namespace/name`) whose pods changed.
    pub pod_groups: BTreeSet<String>,
    /// Owners (apiVersion, kind, `namespace/name`) of Workloads that changed or went away:
    /// their jobs are synced again (a deleted Workload is made again).
    pub owners: BTreeSet<(String, String, String)>,
    /// Nodes came, went, or changed what TAS reads: the TAS trees are rebuilt.
    pub nodes: bool,
    /// Nodes whose usage by pods outside TAS changed.
    pub node_usage: BTreeSet<String>,
    /// Workloads whose TAS pods changed: the ungater looks at them again.
    pub tas_pods: BTreeSet<String>,
}

impl Dirty {
    pub fn is_empty(&self) -> bool {
        !self.config
            && self.workloads.is_empty()
            && self.touched.is_empty()
            && self.jobs.is_empty()
            && self.pod_groups.is_empty()
            && self.owners.is_empty()
            && !self.nodes
            && self.node_usage.is_empty()
            && self.tas_pods.is_empty()
    }
}

#[derive(Debug, Clone, Default)]
pub struct Mirror {
    /// The cluster serves `autoscaling.x-k8s.io/v1` ProvisioningRequests (Kueue's
    /// ProvisioningRequest check can run).
    pub provisioning_served: bool,
    /// This controller is the MultiKueue manager (unless `--no-multikueue`): a MultiKueueCluster
    /// without an `Active` condition counts as inactive, as in Kueue, not as connected.
    pub multikueue_manager: bool,
    pub flavors: BTreeMap<String, ResourceFlavor>,
    pub cohorts: BTreeMap<String, Cohort>,
    pub cluster_queues: BTreeMap<String, ClusterQueue>,
    pub local_queues: BTreeMap<String, LocalQueue>,
    pub priority_classes: BTreeMap<String, WorkloadPriorityClass>,
    pub namespaces: BTreeMap<String, Namespace>,
    /// Boxed: a map node holds eleven entries, and a `Workload` inline is 768 bytes; boxed,
    /// the half-empty slots of the nodes cost 8 bytes each, not 768.
    pub workloads: BTreeMap<String, Box<Workload>>,
    pub admission_checks: BTreeMap<String, AdmissionCheck>,
    pub provisioning_configs: BTreeMap<String, ProvisioningRequestConfig>,
    /// MultiKueue's worker clusters and configs: whether a MultiKueue check is active.
    pub multikueue_clusters: BTreeMap<String, MultiKueueCluster>,
    pub multikueue_configs: BTreeMap<String, MultiKueueConfig>,
    pub jobs: Vec<BTreeMap<String, DynamicObject>>,
    pub pods: BTreeMap<String, Pod>,
    pub provisioning_requests: BTreeMap<String, DynamicObject>,
    /// Secrets of Kueue's namespace ([`Source::Secret`]), by `namespace/name`.
    pub secrets: BTreeMap<String, DynamicObject>,
    pub topologies: BTreeMap<String, crate::api::topology::Topology>,
    /// Nodes and what pods use on them, for topology-aware scheduling.
    pub tas: crate::k8s::sync::tas_nodes::NodeMirror,
    /// Kueue's controller configuration (`--kueue-config`): fair sharing and admission fair
    /// sharing.
    pub configuration: Option<crate::api::config::Configuration>,
    /// Keys of the Workloads holding quota (`status.admission` set), kept with every change:
    /// what the passes over running Workloads iterate, instead of every Workload.
    pub reserved: BTreeSet<String>,
    /// Workloads' pod templates, one shared copy of each.
    templates: crate::api::TemplateInterner,
    dirty: Dirty,
    listed: BTreeSet<Source>,
    schemas: Schemas,
}

impl Mirror {
    pub fn new(job_kinds: usize) -> Mirror {
        Mirror {
            jobs: vec![BTreeMap::new(); job_kinds],
            ..Mirror::default()
        }
    }

    /// What changed since the last call.
    pub fn take_dirty(&mut self) -> Dirty {
        std::mem::take(&mut self.dirty)
    }

    /// Whether anything changed since the last [`Mirror::take_dirty`].
    pub fn has_changes(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// Marks Workloads to be looked at again by the next pass (a write that failed and will
    /// be retried, a time that came).
    pub fn touch(&mut self, key: &str) {
        self.dirty.touched.insert(key.to_string());
    }

    /// Makes the core read a Workload again at the next pass (memory and cluster may differ).
    pub fn resync(&mut self, key: &str) {
        self.dirty.workloads.insert(key.to_string());
        self.dirty.touched.insert(key.to_string());
    }

    /// Forgets a Workload the API server no longer has (a write answered 404).
    pub fn forget_workload(&mut self, key: &str) {
        self.delete(Source::Kueue(KueueKind::Workload), None, key);
    }

    /// Marks a job to be synced again by the next pass (its sync failed).
    pub fn touch_job(&mut self, kind: usize, key: &str) {
        self.dirty
            .jobs
            .entry(kind)
            .or_default()
            .insert(key.to_string());
    }

    /// Marks a pod group to be synced again by the next pass.
    pub fn touch_pod_group(&mut self, key: &str) {
        self.dirty.pod_groups.insert(key.to_string());
    }

    /// Records the owners of a stored Workload as changed.
    fn note_owners(&mut self, key: &str) {
        let Some(wl) = self.workloads.get(key) else {
            return;
        };
        let ns = wl.metadata.namespace.as_deref();
        for o in wl.metadata.owner_references.iter().flatten() {
            self.dirty
                .owners
                .insert((o.api_version.clone(), o.kind.clone(), key_of(ns, &o.name)));
        }
    }

    fn note_workload(&mut self, key: &str, own_write: bool) {
        self.note_owners(key);
        let reserved = self
            .workloads
            .get(key)
            .and_then(|w| w.status.as_ref())
            .is_some_and(|s| s.admission.is_some());
        if reserved {
            self.reserved.insert(key.to_string());
        } else {
            self.reserved.remove(key);
        }
        self.dirty.touched.insert(key.to_string());
        if !own_write {
            self.dirty.workloads.insert(key.to_string());
        }
    }

    /// The Workload a ProvisioningRequest belongs to (its owner of kind Workload).
    fn note_owner_workload(
        &mut self,
        meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    ) {
        let ns = meta.namespace.as_deref();
        if let Some(o) = meta
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.kind == "Workload")
        {
            self.dirty.touched.insert(key_of(ns, &o.name));
        }
    }

    /// Whether every source has been listed once.
    pub fn is_synced(&self, sources: &[Source]) -> bool {
        sources.iter().all(|s| self.listed.contains(s))
    }

    /// Takes in what a watcher reports; what changed is recorded in [`Dirty`].
    pub fn observe(&mut self, ev: Observed) {
        match ev {
            Observed::Applied(src, obj) => self.apply(src, obj),
            Observed::Deleted(src, obj) => self.delete(src, Some(&obj), &dyn_key(&obj)),
            Observed::Listed(src, objs) => {
                self.listed.insert(src);
                let fresh: BTreeSet<String> = objs.iter().map(dyn_key).collect();
                for key in self.keys(src) {
                    if !fresh.contains(&key) {
                        self.delete(src, None, &key);
                    }
                }
                for o in objs {
                    self.apply(src, o);
                }
            }
        }
    }

    fn keys(&self, src: Source) -> Vec<String> {
        fn k<V>(m: &BTreeMap<String, V>) -> Vec<String> {
            m.keys().cloned().collect()
        }
        match src {
            Source::Kueue(KueueKind::ResourceFlavor) => k(&self.flavors),
            Source::Kueue(KueueKind::Cohort) => k(&self.cohorts),
            Source::Kueue(KueueKind::ClusterQueue) => k(&self.cluster_queues),
            Source::Kueue(KueueKind::LocalQueue) => k(&self.local_queues),
            Source::Kueue(KueueKind::WorkloadPriorityClass) => k(&self.priority_classes),
            Source::Kueue(KueueKind::Workload) => k(&self.workloads),
            Source::Kueue(KueueKind::AdmissionCheck) => k(&self.admission_checks),
            Source::Kueue(KueueKind::ProvisioningRequestConfig) => k(&self.provisioning_configs),
            Source::Kueue(KueueKind::MultiKueueCluster) => k(&self.multikueue_clusters),
            Source::Kueue(KueueKind::MultiKueueConfig) => k(&self.multikueue_configs),
            Source::Namespace => k(&self.namespaces),
            Source::Pod => k(&self.pods),
            Source::Job(i) => self.jobs.get(i).map(k).unwrap_or_default(),
            Source::ProvisioningRequest => k(&self.provisioning_requests),
            Source::Secret => k(&self.secrets),
            Source::Kueue(KueueKind::Topology) => k(&self.topologies),
            Source::Node => self.tas.node_keys(),
            Source::TasPod => self.tas.pod_keys(),
        }
    }

    fn delete(&mut self, src: Source, obj: Option<&DynamicObject>, key: &str) {
        // Whom the object's going concerns: a pod's group, a ProvisioningRequest's Workload, a
        // Workload's job. The stored object says, else the event's.
        match src {
            Source::Pod => {
                let meta = self.pods.get(key).map(|p| &p.metadata);
                if let Some(g) = meta.or(obj.map(|o| &o.metadata)).and_then(group_key) {
                    self.dirty.pod_groups.insert(g);
                }
            }
            Source::ProvisioningRequest => {
                if let Some(meta) = self
                    .provisioning_requests
                    .get(key)
                    .or(obj)
                    .map(|o| o.metadata.clone())
                {
                    self.note_owner_workload(&meta);
                }
            }
            Source::Kueue(KueueKind::Workload) => self.note_owners(key),
            Source::Node => {
                self.dirty.nodes |= self.tas.delete_node(key);
                return;
            }
            Source::TasPod => {
                let changed = self.tas.delete_pod(key);
                self.note_tas(changed);
                return;
            }
            _ => {}
        }
        let removed = match src {
            Source::Kueue(KueueKind::ResourceFlavor) => self.flavors.remove(key).is_some(),
            Source::Kueue(KueueKind::Cohort) => self.cohorts.remove(key).is_some(),
            Source::Kueue(KueueKind::ClusterQueue) => self.cluster_queues.remove(key).is_some(),
            Source::Kueue(KueueKind::LocalQueue) => self.local_queues.remove(key).is_some(),
            Source::Kueue(KueueKind::WorkloadPriorityClass) => {
                self.priority_classes.remove(key).is_some()
            }
            Source::Kueue(KueueKind::Workload) => self.workloads.remove(key).is_some(),
            Source::Kueue(KueueKind::AdmissionCheck) => self.admission_checks.remove(key).is_some(),
            Source::Kueue(KueueKind::ProvisioningRequestConfig) => {
                self.provisioning_configs.remove(key).is_some()
            }
            Source::Kueue(KueueKind::MultiKueueCluster) => {
                self.multikueue_clusters.remove(key).is_some()
            }
            Source::Kueue(KueueKind::MultiKueueConfig) => {
                self.multikueue_configs.remove(key).is_some()
            }
            Source::Namespace => self.namespaces.remove(key).is_some(),
            Source::Pod => self.pods.remove(key).is_some(),
            Source::Job(i) => self.jobs.get_mut(i).and_then(|m| m.remove(key)).is_some(),
            Source::ProvisioningRequest => self.provisioning_requests.remove(key).is_some(),
            Source::Kueue(KueueKind::Topology) => self.topologies.remove(key).is_some(),
            Source::Secret => self.secrets.remove(key).is_some(),
            Source::Node | Source::TasPod => false,
        };
        if removed {
            match src {
                Source::Kueue(KueueKind::Workload) => self.note_workload(key, false),
                Source::Job(i) => self.touch_job(i, key),
                Source::Pod
                | Source::ProvisioningRequest
                | Source::Secret
                | Source::Node
                | Source::TasPod => {}
                _ => self.dirty.config = true,
            }
        }
    }

    fn apply(&mut self, src: Source, obj: DynamicObject) {
        let key = dyn_key(&obj);
        match src {
            Source::Job(i) => {
                let Some(jobs) = self.jobs.get_mut(i) else {
                    return;
                };
                let changed = upsert(
                    jobs,
                    key.clone(),
                    obj,
                    |o| o.metadata.resource_version.clone(),
                    |a, b| a == b,
                );
                if changed {
                    self.touch_job(i, &key);
                }
            }
            Source::ProvisioningRequest => {
                self.note_owner_workload(&obj.metadata);
                upsert(
                    &mut self.provisioning_requests,
                    key,
                    obj,
                    |o| o.metadata.resource_version.clone(),
                    |a, b| a == b,
                );
            }
            Source::Pod => match serde_json::to_value(&obj).and_then(serde_json::from_value::<Pod>)
            {
                Ok(pod) => {
                    if let Some(g) = group_key(&pod.metadata) {
                        self.dirty.pod_groups.insert(g);
                    }
                    upsert(
                        &mut self.pods,
                        key,
                        pod,
                        |p| p.metadata.resource_version.clone(),
                        |a, b| a == b,
                    );
                }
                Err(e) => {
                    tracing::warn!(pod = %key, error = %e, "ignoring a Pod that does not decode");
                }
            },
            Source::Secret => {
                upsert(
                    &mut self.secrets,
                    key,
                    obj,
                    |o| o.metadata.resource_version.clone(),
                    |a, b| a == b,
                );
            }
            Source::Node | Source::TasPod => self.apply_tas(src, &key, &obj),
            Source::Kueue(KueueKind::Topology) => match self.decode(src, &obj) {
                Ok(object) => self.put_topology(object),
                Err(e) => {
                    tracing::warn!(error = %e, "ignoring a Topology that does not decode");
                }
            },
            Source::Namespace | Source::Kueue(_) => match self.decode(src, &obj) {
                Ok(object) => self.put(object, false),
                Err(e) => {
                    tracing::warn!(error = %e, "ignoring an object that does not decode");
                }
            },
        }
    }

    /// Decodes an object of a Kueue kind (pruned to wasq's schema first) or a Namespace.
    pub fn decode(&self, src: Source, obj: &DynamicObject) -> Result<Object, Error> {
        let value = serde_json::to_value(obj).map_err(|e| Error::Decode {
            object: dyn_key(obj),
            message: e.to_string(),
        })?;
        let kind = match src {
            Source::Kueue(kind) => Some(kind),
            _ => None,
        };
        self.schemas
            .decode(kind, value, "<api-server>")
            .map_err(|e| Error::Decode {
                object: e.object.unwrap_or_else(|| dyn_key(obj)),
                message: crate::api::jobs::problems_text(&e.problems),
            })
    }

    /// Stores a decoded object. `own_write`: the object is the API server's answer to a
    /// write of wasq's, which the core already reflects.
    pub fn put(&mut self, object: Object, own_write: bool) {
        fn rv<T>(
            meta: impl Fn(&T) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
        ) -> impl Fn(&T) -> Option<String> {
            move |o| meta(o).resource_version.clone()
        }
        let key = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
            key_of(
                m.namespace.as_deref(),
                m.name.as_deref().unwrap_or_default(),
            )
        };
        // Configuration changes matter to the core only through spec, labels or value.
        let workload_key = match &object {
            Object::Workload(o) => Some(key(&o.metadata)),
            _ => None,
        };
        let changed = match object {
            Object::Flavor(o) => upsert(
                &mut self.flavors,
                key(&o.metadata),
                o,
                rv(|o: &ResourceFlavor| &o.metadata),
                |a, b| a.spec == b.spec,
            ),
            Object::Cohort(o) => upsert(
                &mut self.cohorts,
                key(&o.metadata),
                o,
                rv(|o: &Cohort| &o.metadata),
                // Annotations: a policy may read a Cohort's exposed annotations.
                |a, b| a.spec == b.spec && a.metadata.annotations == b.metadata.annotations,
            ),
            Object::ClusterQueue(o) => upsert(
                &mut self.cluster_queues,
                key(&o.metadata),
                o,
                rv(|o: &ClusterQueue| &o.metadata),
                |a, b| a.spec == b.spec && a.metadata.annotations == b.metadata.annotations,
            ),
            Object::LocalQueue(o) => upsert(
                &mut self.local_queues,
                key(&o.metadata),
                o,
                rv(|o: &LocalQueue| &o.metadata),
                |a, b| a.spec == b.spec,
            ),
            Object::PriorityClass(o) => upsert(
                &mut self.priority_classes,
                key(&o.metadata),
                o,
                rv(|o: &WorkloadPriorityClass| &o.metadata),
                |a, b| a.value == b.value,
            ),
            Object::Namespace(o) => upsert(
                &mut self.namespaces,
                key(&o.metadata),
                o,
                rv(|o: &Namespace| &o.metadata),
                |a, b| a.metadata.labels == b.metadata.labels,
            ),
            Object::Workload(mut o) => {
                self.templates.intern_workload(&mut o);
                upsert(
                    &mut self.workloads,
                    key(&o.metadata),
                    Box::new(o),
                    |o| o.metadata.resource_version.clone(),
                    // Deletion and finalizers too: a Workload being deleted is let go (its
                    // job stopped, Kueue's finalizer removed).
                    |a, b| {
                        a.spec == b.spec
                            && a.status == b.status
                            && a.metadata.annotations == b.metadata.annotations
                            && a.metadata.deletion_timestamp == b.metadata.deletion_timestamp
                            && a.metadata.finalizers == b.metadata.finalizers
                    },
                )
            }
            // The core reads an AdmissionCheck's spec and whether it is active.
            Object::AdmissionCheck(o) => upsert(
                &mut self.admission_checks,
                key(&o.metadata),
                o,
                rv(|o: &AdmissionCheck| &o.metadata),
                |a, b| a.spec == b.spec && a.status == b.status,
            ),
            Object::ProvisioningRequestConfig(o) => upsert(
                &mut self.provisioning_configs,
                key(&o.metadata),
                o,
                rv(|o: &ProvisioningRequestConfig| &o.metadata),
                |a, b| a.spec == b.spec,
            ),
            // A cluster's `Active` condition decides whether the checks listing it are.
            Object::MultiKueueCluster(o) => upsert(
                &mut self.multikueue_clusters,
                key(&o.metadata),
                o,
                rv(|o: &MultiKueueCluster| &o.metadata),
                |a, b| a.spec == b.spec && a.active() == b.active(),
            ),
            Object::MultiKueueConfig(o) => upsert(
                &mut self.multikueue_configs,
                key(&o.metadata),
                o,
                rv(|o: &MultiKueueConfig| &o.metadata),
                |a, b| a.spec == b.spec,
            ),
            Object::Job(_) | Object::Pod(_) | Object::Extension(_) | Object::Configuration(_) => {
                false
            }
        };
        if changed {
            match &workload_key {
                Some(k) => self.note_workload(k, own_write),
                None if !own_write => self.dirty.config = true,
                None => {}
            }
        }
    }
}

impl Mirror {
    /// A Node or Pod observed: what TAS reads of it.
    fn apply_tas(&mut self, src: Source, key: &str, obj: &DynamicObject) {
        let value = serde_json::to_value(obj);
        match src {
            Source::Node => match value.and_then(serde_json::from_value::<Node>) {
                Ok(node) => self.dirty.nodes |= self.tas.apply_node(&node),
                Err(e) => {
                    tracing::warn!(node = %key, error = %e, "ignoring a Node that does not decode")
                }
            },
            _ => match value.and_then(serde_json::from_value::<Pod>) {
                Ok(pod) => {
                    let changed = self.tas.apply_pod(&pod);
                    self.note_tas(changed);
                }
                Err(e) => {
                    tracing::warn!(pod = %key, error = %e, "ignoring a Pod that does not decode")
                }
            },
        }
    }

    fn note_tas(&mut self, changed: crate::k8s::sync::tas_nodes::Changed) {
        self.dirty.node_usage.extend(changed.usage);
        self.dirty.tas_pods.extend(changed.workloads);
    }

    /// A Topology decoded (the loader's strict reading); a change of its levels is a
    /// configuration change.
    fn put_topology(&mut self, object: Object) {
        let typed = match object {
            Object::Extension(e) => crate::api::topology::typed_tas_object(&e),
            _ => return,
        };
        match typed {
            Ok(crate::api::topology::TasObject::Topology(t)) => {
                let key = t.metadata.name.clone().unwrap_or_default();
                if upsert(
                    &mut self.topologies,
                    key,
                    *t,
                    |o| o.metadata.resource_version.clone(),
                    |a, b| a.spec == b.spec,
                ) {
                    self.dirty.config = true;
                }
            }
            Ok(_) => {}
            Err(p) => {
                tracing::warn!(problems = %crate::api::jobs::problems_text(&p), "ignoring a Topology that does not decode");
            }
        }
    }
}

/// Inserts `obj` unless an object with a newer resourceVersion is already there. Returns
/// whether the stored object changed in a way `same` does not consider equal.
fn upsert<T>(
    map: &mut BTreeMap<String, T>,
    key: String,
    obj: T,
    rv: impl Fn(&T) -> Option<String>,
    same: impl Fn(&T, &T) -> bool,
) -> bool {
    match map.get(&key) {
        Some(old) => {
            let (old_rv, new_rv) = (rv(old), rv(&obj));
            if old_rv.is_some() && old_rv == new_rv {
                return false;
            }
            if !not_older(old_rv.as_deref(), new_rv.as_deref()) {
                tracing::debug!(object = %key, ?old_rv, ?new_rv, "ignoring a stale event");
                return false;
            }
            let changed = !same(old, &obj);
            map.insert(key, obj);
            changed
        }
        None => {
            map.insert(key, obj);
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Observes `ev` and says whether the core must take something in (a configuration change
    /// or a Workload changed by someone else).
    fn reaches_core(m: &mut Mirror, ev: Observed) -> bool {
        m.observe(ev);
        let d = m.take_dirty();
        d.config || !d.workloads.is_empty()
    }

    fn wl(rv: &str, queue: &str) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "ns", "resourceVersion": rv,
                         "managedFields": [{"manager": "x"}]},
            "spec": {"queueName": queue, "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]},
            "status": {"unknownKueueField": 1}
        }))
        .unwrap()
    }

    fn cohort(
        rv: &str,
        annotations: serde_json::Value,
        status: serde_json::Value,
    ) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
            "metadata": {"name": "team", "resourceVersion": rv, "annotations": annotations},
            "spec": {"parentName": "org"},
            "status": status
        }))
        .unwrap()
    }

    #[test]
    fn a_cohort_annotation_change_reaches_the_core_and_a_status_change_does_not() {
        let mut m = Mirror::new(0);
        let src = Source::Kueue(KueueKind::Cohort);
        let none = serde_json::json!({});
        assert!(reaches_core(
            &mut m,
            Observed::Applied(src, cohort("1", none.clone(), none.clone()))
        ));
        // Policies may read a Cohort's exposed annotations.
        let team = serde_json::json!({"example.com/team": "ml"});
        assert!(reaches_core(
            &mut m,
            Observed::Applied(src, cohort("2", team.clone(), none))
        ));
        // The status the controller writes is kept (the schema has it) but changes nothing.
        let share = serde_json::json!({"fairSharing": {"weightedShare": 167}});
        assert!(!reaches_core(
            &mut m,
            Observed::Applied(src, cohort("3", team, share.clone()))
        ));
        assert_eq!(m.cohorts["team"].status, Some(share));
    }

    #[test]
    fn stale_events_are_ignored_and_unknown_fields_pruned() {
        let mut m = Mirror::new(0);
        let src = Source::Kueue(KueueKind::Workload);
        assert!(reaches_core(&mut m, Observed::Applied(src, wl("10", "a"))));
        assert!(!reaches_core(&mut m, Observed::Applied(src, wl("9", "b"))));
        assert_eq!(m.workloads["ns/w"].spec.queue_name.as_deref(), Some("a"));
        assert!(reaches_core(&mut m, Observed::Applied(src, wl("11", "b"))));
        assert!(reaches_core(&mut m, Observed::Listed(src, vec![])));
        assert!(m.workloads.is_empty());
        assert!(m.is_synced(&[src]));
    }
}
