//! The mutating webhooks, as Kueue's defaulters (`jobframework.BaseWebhook.Default`,
//! `PodWebhook.Default`, `WorkloadWebhook.Default` and the Deployment, StatefulSet and
//! LeaderWorkerSet webhooks): a queued job is created suspended; the pod templates of a queued
//! Deployment, StatefulSet or LeaderWorkerSet are labelled so that their pods are queued; a
//! queued pod (alone or in a group) is created gated and labelled managed; a Workload gets its
//! defaults. Every change is a JSON Patch op; an object that needs none gets no patch.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

use super::review::{AdmissionRequest, Verdict};
use super::validate::Schemas;
use super::view::View;
use crate::api::catalog::DEFAULT_LOCAL_QUEUE;
use crate::api::decode::Object;
use crate::api::defaults::default_workload;
use crate::api::jobs::JobKind;
use crate::api::jobs::multikueue;
use crate::api::jobs::patch::metadata_ops;
use crate::api::labels;
use crate::api::topology::TOPOLOGY_SCHEDULING_GATE;
use crate::k8s::jobs::pod_groups::SCHEDULING_GATE;

use crate::k8s::schema::kinds::KueueKind;

/// Kueue's label on the pods it manages (`constants.ManagedByKueueLabelKey`).
pub const MANAGED_LABEL: &str = "kueue.x-k8s.io/managed";
/// Its only allowed value.
pub const MANAGED_VALUE: &str = "true";

/// The object's metadata, or empty metadata when it has none that decodes.
pub fn metadata_of(object: &Value) -> ObjectMeta {
    object
        .get("metadata")
        .cloned()
        .and_then(|m| serde_json::from_value(m).ok())
        .unwrap_or_default()
}

pub fn label<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

pub fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// The namespace of the object under review.
pub fn namespace_of<'a>(req: &'a AdmissionRequest, meta: &'a ObjectMeta) -> &'a str {
    req.namespace
        .as_deref()
        .or(meta.namespace.as_deref())
        .filter(|n| !n.is_empty())
        .unwrap_or("default")
}

/// Whether the object's controller is a job kind wasq manages: Kueue leaves such children to
/// their parent's Workload.
pub fn owned_by_managed_kind(meta: &ObjectMeta, kinds: &[JobKind]) -> bool {
    JobKind::controlled_by_any(meta, kinds)
}

/// The queue the object names, and the ops labelling it `default` when it names none and its
/// namespace has a LocalQueue `default` (Kueue's `LocalQueueDefaulting`).
fn queue_with_default(
    object: &Value,
    meta: &ObjectMeta,
    namespace: &str,
    view: &View,
) -> (Option<String>, Vec<Value>) {
    if let Some(q) = label(meta, labels::QUEUE_NAME) {
        return (Some(q.to_string()), Vec::new());
    }
    if view.catalog.has_default_queue(namespace) {
        let default = [(
            labels::QUEUE_NAME.to_string(),
            DEFAULT_LOCAL_QUEUE.to_string(),
        )];
        let ops = metadata_ops(object, "", &default, &[]);
        return (Some(DEFAULT_LOCAL_QUEUE.to_string()), ops);
    }
    (None, Vec::new())
}

/// A job of a managed kind: on CREATE, a queued job is suspended through the kind's suspend
/// path; a job sent to a ClusterQueue with a MultiKueue check, its `managedBy` unset or its own
/// controller's, is handed to MultiKueue (Kueue's `ApplyDefaultForManagedBy`).
pub fn job(kind: &JobKind, kinds: &[JobKind], req: &AdmissionRequest, view: &View) -> Verdict {
    let Some(object) = req.object.as_ref().filter(|_| req.is_create()) else {
        return Verdict::allow();
    };
    let meta = metadata_of(object);
    if owned_by_managed_kind(&meta, kinds) {
        return Verdict::allow();
    }
    let namespace = namespace_of(req, &meta);
    let (queue, mut ops) = queue_with_default(object, &meta, namespace, view);
    if queue.is_some() && !kind.is_suspended(object) {
        ops.extend(kind.suspend_ops(object));
    }
    if let Some(adapter) = &kind.spec.multi_kueue
        && multikueue::can_default_managed_by(adapter, object)
        && queue.is_some_and(|q| view.multikueue_queues.contains(&format!("{namespace}/{q}")))
    {
        // Against the job as the ops so far leave it (a Kubeflow job's `runPolicy` may be new).
        let mut patched = object.clone();
        if let Ok(p) = serde_json::from_value::<json_patch::Patch>(Value::Array(ops.clone())) {
            let _ = json_patch::patch(&mut patched, &p);
        }
        ops.extend(multikueue::managed_by_ops(adapter, &patched));
    }
    Verdict::patch(ops)
}

use crate::api::multikueue::ORIGIN_LABEL;
use crate::api::pods::{LWS_GROUP_INDEX_LABEL, LWS_NAME_LABEL};

/// A plain Pod: on CREATE, a queued pod — alone, in a group, or made by a kind without a
/// suspend flag (a Deployment's replica, a StatefulSet's or LeaderWorkerSet's pod, whose
/// templates [`parent`] labelled) — gets the `kueue.x-k8s.io/admission` scheduling gate and
/// the managed label; a LeaderWorkerSet's pod also gets its group's name (the group's Workload
/// name as the simulator gives it to a LeaderWorkerSet without a UID: the webhook never sees
/// the set's UID). No finalizer: wasq's pod groups never remove one.
pub fn pod(kinds: &[JobKind], req: &AdmissionRequest, view: &View) -> Verdict {
    let Some(object) = req.object.as_ref().filter(|_| req.is_create()) else {
        return Verdict::allow();
    };
    let meta = metadata_of(object);
    if owned_by_managed_kind(&meta, kinds) {
        return Verdict::allow();
    }
    let (Some(queue), _) = queue_with_default(object, &meta, namespace_of(req, &meta), view) else {
        return Verdict::allow();
    };
    let mut added = vec![
        (labels::QUEUE_NAME.to_string(), queue),
        (MANAGED_LABEL.to_string(), MANAGED_VALUE.to_string()),
    ];
    // A LeaderWorkerSet's group of one pod (size 1) carries no total: a lone pod.
    if label(&meta, labels::POD_GROUP_NAME).is_none()
        && annotation(&meta, labels::POD_GROUP_TOTAL_COUNT).is_some()
        && let Some(group) = lws_group(&meta)
    {
        added.push((labels::POD_GROUP_NAME.to_string(), group));
    }
    let mut ops = metadata_ops(object, "", &added, &[]);
    ops.extend(gate_ops(object));
    Verdict::patch(ops)
}

/// The group of a LeaderWorkerSet's pod: its group's Workload name, from the set's name and
/// the group index the LeaderWorkerSet controller labels its pods with.
fn lws_group(meta: &ObjectMeta) -> Option<String> {
    let set = label(meta, LWS_NAME_LABEL)?;
    let index = label(meta, LWS_GROUP_INDEX_LABEL)?.parse::<i32>().ok()?;
    let lws = crate::api::jobs::builtin_kind("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet")?;
    Some(lws.workload_name(set, "", Some(index)))
}

/// A kind without a suspend flag (Deployment, StatefulSet, LeaderWorkerSet), as Kueue's
/// parent webhooks: on CREATE, a queued object's pod templates get the queue label and the
/// managed label, so that the pod webhook gates every pod it makes. A kind whose pods form one
/// gang (StatefulSet) also names the group (its Workload's name) and its total count; a kind
/// with one gang per group of several pods (LeaderWorkerSet) gives each template the group's
/// size, and the pod webhook names each pod's group; one pod per group (Deployment) makes each
/// replica a Workload of its own. Objects owned by another such kind (a LeaderWorkerSet's
/// StatefulSets) are left to their owner.
pub fn parent(kind: &JobKind, parents: &[JobKind], req: &AdmissionRequest, view: &View) -> Verdict {
    let Some(object) = req.object.as_ref().filter(|_| req.is_create()) else {
        return Verdict::allow();
    };
    let meta = metadata_of(object);
    // A LeaderWorkerSet's StatefulSets (the leaders' is owned by the set, each group's workers'
    // by its leader pod; both carry the set's name label) are left to the LeaderWorkerSet.
    if owned_by_managed_kind(&meta, parents) || label(&meta, LWS_NAME_LABEL).is_some() {
        return Verdict::allow();
    }
    let (queue, mut ops) = queue_with_default(object, &meta, namespace_of(req, &meta), view);
    let Some(queue) = queue else {
        return Verdict::allow();
    };
    // A template that does not read is left for the API server's own validation.
    let Ok(sets) = kind.pod_sets(object) else {
        return Verdict::patch(ops);
    };
    let per_group: i32 = sets.iter().map(|p| p.count).sum();
    for ps in &sets {
        let mut labels_added = vec![
            (labels::QUEUE_NAME.to_string(), queue.clone()),
            (MANAGED_LABEL.to_string(), MANAGED_VALUE.to_string()),
        ];
        // A MultiKueue manager's set, on a worker: its pods run under the manager's copies.
        if let Some(origin) = label(&meta, ORIGIN_LABEL) {
            labels_added.push((ORIGIN_LABEL.to_string(), origin.to_string()));
        }
        let mut annotations = Vec::new();
        if kind.spec.groups.is_none() {
            let name = meta.name.as_deref().unwrap_or_default();
            labels_added.push((
                labels::POD_GROUP_NAME.to_string(),
                kind.workload_name(name, "", None),
            ));
        }
        if kind.spec.groups.is_none() || per_group > 1 {
            annotations.push((
                labels::POD_GROUP_TOTAL_COUNT.to_string(),
                per_group.to_string(),
            ));
        }
        ops.extend(metadata_ops(object, &ps.path, &labels_added, &annotations));
    }
    Verdict::patch(ops)
}

/// Ops adding the admission scheduling gate and, as Kueue's pod webhook with topology-aware
/// scheduling on, the topology gate (released per pod by the topology ungater when the pod is
/// placed by TAS, removed with the admission gate otherwise), unless they are there.
fn gate_ops(pod: &Value) -> Vec<Value> {
    let gates = pod
        .pointer("/spec/schedulingGates")
        .and_then(Value::as_array)
        .cloned();
    let mut merged = gates.clone().unwrap_or_default();
    for name in [SCHEDULING_GATE, TOPOLOGY_SCHEDULING_GATE] {
        if !merged.iter().any(|g| g["name"] == name) {
            merged.push(json!({"name": name}));
        }
    }
    if Some(&merged) == gates.as_ref() {
        return Vec::new();
    }
    vec![json!({"op": "add", "path": "/spec/schedulingGates", "value": merged})]
}

/// A Workload on CREATE: each podSet's name (`main`) and count (1) when missing, and the
/// defaults of [`default_workload`] for `spec.queueName` and `spec.priority`.
pub fn workload(schemas: &Schemas, req: &AdmissionRequest, view: &View) -> Verdict {
    let Some(object) = req.object.as_ref().filter(|_| req.is_create()) else {
        return Verdict::allow();
    };
    // An object that does not decode is left for the validating webhook to report.
    let Ok(Object::Workload(mut wl)) =
        super::validate::decode(schemas, KueueKind::Workload, object)
    else {
        return Verdict::allow();
    };
    if wl.metadata.namespace.is_none() {
        wl.metadata.namespace = req.namespace.clone();
    }
    default_workload(&mut wl, &view.catalog);
    let mut ops = Vec::new();
    let raw_sets = object.pointer("/spec/podSets").and_then(Value::as_array);
    for (i, (raw, ps)) in raw_sets
        .into_iter()
        .flatten()
        .zip(&wl.spec.pod_sets)
        .enumerate()
    {
        if raw.get("name").is_none() {
            ops.push(
                json!({"op": "add", "path": format!("/spec/podSets/{i}/name"), "value": ps.name}),
            );
        }
        if raw.get("count").is_none() {
            ops.push(
                json!({"op": "add", "path": format!("/spec/podSets/{i}/count"), "value": ps.count}),
            );
        }
    }
    let raw_queue = object.pointer("/spec/queueName").and_then(Value::as_str);
    if let Some(q) = &wl.spec.queue_name
        && raw_queue != Some(q.as_str())
    {
        ops.push(json!({"op": "add", "path": "/spec/queueName", "value": q}));
    }
    if let Some(p) = wl.spec.priority
        && object.pointer("/spec/priority").is_none()
    {
        ops.push(json!({"op": "add", "path": "/spec/priority", "value": p}));
    }
    Verdict::patch(ops)
}
