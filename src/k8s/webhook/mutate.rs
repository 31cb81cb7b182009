//! The mutating webhooks, as Kueue's defaulters (`jobframework.BaseWebhook.Default`,
//! `PodWebhook.Default`, `WorkloadWebhook.Default`): a queued job is created suspended, a queued
//! pod of a group is created gated and labelled managed, a Workload gets its defaults. Every
//! change is a JSON Patch op; an object that needs none gets no patch.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

use super::review::{AdmissionRequest, Verdict, set_in_metadata_map};
use super::validate::Schemas;
use super::view::View;
use crate::api::catalog::DEFAULT_LOCAL_QUEUE;
use crate::api::decode::Object;
use crate::api::defaults::default_workload;
use crate::api::jobs::JobKind;
use crate::api::labels;
use crate::k8s::podgroup::SCHEDULING_GATE;
use crate::k8s::resources::KueueKind;

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

/// Whether the object's controller (ownerReference with `controller: true`) is a job kind wasq
/// manages: Kueue leaves such children to their parent's Workload.
pub fn owned_by_managed_kind(meta: &ObjectMeta, kinds: &[JobKind]) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .filter(|o| o.controller == Some(true))
        .any(|o| {
            kinds
                .iter()
                .any(|k| k.spec.api_version == o.api_version && k.spec.kind == o.kind)
        })
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
        let ops = set_in_metadata_map(object, "labels", labels::QUEUE_NAME, DEFAULT_LOCAL_QUEUE);
        return (Some(DEFAULT_LOCAL_QUEUE.to_string()), ops);
    }
    (None, Vec::new())
}

/// A job of a managed kind: on CREATE, a queued job is suspended through the kind's suspend
/// path.
pub fn job(kind: &JobKind, kinds: &[JobKind], req: &AdmissionRequest, view: &View) -> Verdict {
    let Some(object) = req.object.as_ref().filter(|_| req.is_create()) else {
        return Verdict::allow();
    };
    let meta = metadata_of(object);
    if owned_by_managed_kind(&meta, kinds) {
        return Verdict::allow();
    }
    let (queue, mut ops) = queue_with_default(object, &meta, namespace_of(req, &meta), view);
    if queue.is_some() && !kind.is_suspended(object) {
        ops.extend(kind.suspend_ops());
    }
    Verdict::patch(ops)
}

/// A plain Pod: on CREATE, a queued pod of a group gets the `kueue.x-k8s.io/admission`
/// scheduling gate and the managed label. No finalizer: wasq's pod groups never remove one.
pub fn pod(kinds: &[JobKind], req: &AdmissionRequest, view: &View) -> Verdict {
    let Some(object) = req.object.as_ref().filter(|_| req.is_create()) else {
        return Verdict::allow();
    };
    let meta = metadata_of(object);
    if owned_by_managed_kind(&meta, kinds) {
        return Verdict::allow();
    }
    if label(&meta, labels::POD_GROUP_NAME).is_none() {
        if label(&meta, labels::QUEUE_NAME).is_some() {
            return Verdict::allow().with_warning(format!(
                "wasq manages plain Pods in groups only (label {}); this Pod is not held for admission",
                labels::POD_GROUP_NAME
            ));
        }
        return Verdict::allow();
    }
    let (queue, mut ops) = queue_with_default(object, &meta, namespace_of(req, &meta), view);
    if queue.is_none() {
        return Verdict::allow();
    }
    ops.extend(set_in_metadata_map(
        object,
        "labels",
        MANAGED_LABEL,
        MANAGED_VALUE,
    ));
    ops.extend(gate_ops(object));
    Verdict::patch(ops)
}

/// Ops adding the admission scheduling gate, unless it is there.
fn gate_ops(pod: &Value) -> Vec<Value> {
    let gate = json!({"name": SCHEDULING_GATE});
    match pod
        .pointer("/spec/schedulingGates")
        .and_then(Value::as_array)
    {
        Some(gates) if gates.iter().any(|g| g["name"] == SCHEDULING_GATE) => Vec::new(),
        Some(_) => vec![json!({"op": "add", "path": "/spec/schedulingGates/-", "value": gate})],
        None => vec![json!({"op": "add", "path": "/spec/schedulingGates", "value": [gate]})],
    }
}

/// A Workload on CREATE: each podSet's name (`main`) and count (1) when missing, and the
/// defaults of [`default_workload`] for `spec.queueName` and `spec.priority`.
pub fn workload(schemas: &Schemas, req: &AdmissionRequest, view: &View) -> Verdict {
    let Some(object) = req.object.as_ref().filter(|_| req.is_create()) else {
        return Verdict::allow();
    };
    // An object that does not decode is left for the validating webhook to report.
    let Ok(Object::Workload(mut wl)) = schemas.decode(KueueKind::Workload, object) else {
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
