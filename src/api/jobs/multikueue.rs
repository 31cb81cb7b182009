//! Kueue's MultiKueue adapters (`pkg/controller/jobs/*/*_multikueue_adapter.go`, main branch),
//! written once over a kind's configuration ([`MultiKueueAdapter`]): whether the manager's job
//! is MultiKueue's, the job created on the worker that admitted its Workload, and the status the
//! manager's job takes from it. `batch/v1` Job has Kueue's extra rules (no selector, no
//! controller-uid labels, the status held while the manager's Job is suspended).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

use super::JobKind;
use super::kind::MultiKueueAdapter;
use super::workload::JOB_UID_LABEL;
use crate::api::multikueue::{
    MULTIKUEUE_CONTROLLER, ORIGIN_LABEL, ORIGIN_UID_ANNOTATION, PREBUILT_WORKLOAD,
};
use crate::api::pods::SCHEDULING_GATE;

/// The kind with Kueue's extra rules.
pub const API_VERSION: &str = "batch/v1";
pub const KIND: &str = "Job";

/// The longest label value; a longer prebuilt Workload name goes in the annotation only.
const LABEL_VALUE_MAX: usize = 63;

/// The pod template labels the Job controller manages, which the remote Job must not carry
/// (Kueue's `cleanLabels`; `batch.kubernetes.io/job-name` is kept).
const MANAGED_TEMPLATE_LABELS: [&str; 3] = [
    "job-name",
    "controller-uid",
    "batch.kubernetes.io/controller-uid",
];

/// Whether `kind` is `batch/v1` Job.
pub fn is_batch_job(kind: &JobKind) -> bool {
    kind.spec.api_version == API_VERSION && kind.spec.kind == KIND
}

/// Go's `schema.GroupVersionKind.String()` of an owner: `batch/v1, Kind=Job`, `/v1, Kind=Pod`.
pub fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// The job's `managedBy` (empty when unset).
pub fn managed_by<'a>(adapter: &MultiKueueAdapter, job: &'a Value) -> &'a str {
    (adapter.managed_by.as_deref())
        .and_then(|p| job.pointer(p))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Kueue's `IsJobManagedByKueue`: `None` when the job is MultiKueue's (always, for a kind
/// without `managedBy`), else why not.
pub fn not_managed_reason(adapter: &MultiKueueAdapter, job: &Value) -> Option<String> {
    adapter.managed_by.as_ref()?;
    let managed_by = managed_by(adapter, job);
    (managed_by != MULTIKUEUE_CONTROLLER).then(|| {
        format!(
            "Expecting {} to be {MULTIKUEUE_CONTROLLER:?} not {managed_by:?}",
            adapter.managed_by_field
        )
    })
}

/// Kueue's `CanDefaultManagedBy`: whether a manager's webhook hands the job to MultiKueue
/// (its `managedBy` unset or its own controller's).
pub fn can_default_managed_by(adapter: &MultiKueueAdapter, job: &Value) -> bool {
    let Some(pointer) = &adapter.managed_by else {
        return false;
    };
    match job.pointer(pointer) {
        None | Some(Value::Null) => true,
        Some(v) => v.as_str() == Some(adapter.own_controller.as_str()),
    }
}

/// The JSON Patch that sets the job's `managedBy` to MultiKueue's (its parent present).
pub fn managed_by_ops(adapter: &MultiKueueAdapter, job: &Value) -> Vec<Value> {
    let mut ops = Vec::new();
    let mut path = String::new();
    let Some(pointer) = &adapter.managed_by else {
        return ops;
    };
    let tokens: Vec<&str> = pointer.split('/').skip(1).collect();
    for (i, token) in tokens.iter().enumerate() {
        path.push('/');
        path.push_str(token);
        if i + 1 == tokens.len() {
            ops.push(json!({"op": "add", "path": path, "value": MULTIKUEUE_CONTROLLER}));
        } else if job.pointer(&path).is_none_or(Value::is_null) {
            ops.push(json!({"op": "add", "path": path, "value": {}}));
        }
    }
    ops
}

/// The prebuilt Workload a job names (annotation first, then label, as Kueue's
/// `PrebuiltWorkloadNameFor` with `WorkloadIdentifierAnnotations` on): on a MultiKueue
/// worker, the manager's copy its job runs under.
pub fn prebuilt_name(meta: &ObjectMeta) -> Option<&str> {
    fn get(m: &Option<BTreeMap<String, String>>) -> Option<&str> {
        m.as_ref()
            .and_then(|m| m.get(PREBUILT_WORKLOAD))
            .filter(|n| !n.is_empty())
            .map(String::as_str)
    }
    get(&meta.annotations).or(get(&meta.labels))
}

fn remove_pointer(value: &mut Value, pointer: &str) {
    if let Some((parent, last)) = pointer.rsplit_once('/')
        && let Some(Value::Object(m)) = value.pointer_mut(parent)
    {
        m.remove(&last.replace("~1", "/").replace("~0", "~"));
    }
}

/// Kueue's `SyncJob` create branch: the job made on the worker from the manager's `local` —
/// name, namespace, labels, annotations and spec; no `managedBy` (so that the worker's
/// controller runs it); the origin label and the prebuilt Workload `workload` (annotation, and
/// label when it fits, so that workers of either generation of Kueue find it). A `batch/v1`
/// Job also loses its selector and the controller-managed template labels.
pub fn remote_job(kind: &JobKind, local: &Value, workload: &str, origin: &str) -> Value {
    let mut job = remote_object(
        &kind.spec.api_version,
        &kind.spec.kind,
        local,
        workload,
        origin,
    );
    if let Some(l) = job["metadata"]["labels"].as_object_mut() {
        l.remove(JOB_UID_LABEL);
    }
    if let Some(pointer) = kind
        .spec
        .multi_kueue
        .as_ref()
        .and_then(|a| a.managed_by.as_ref())
    {
        remove_pointer(&mut job, pointer);
    }
    if is_batch_job(kind) {
        remove_pointer(&mut job, "/spec/selector");
        if let Some(l) = job["spec"]["template"]["metadata"]["labels"].as_object_mut() {
            for k in MANAGED_TEMPLATE_LABELS {
                l.remove(k);
            }
        }
    }
    job
}

/// Kueue's `CloneObjectMetaForCreation` and `SetMultiKueueMeta`: `local`'s name, namespace,
/// labels, annotations and spec, with the origin label and the prebuilt Workload `workload`
/// (annotation, and label when it fits).
fn remote_object(
    api_version: &str,
    kind: &str,
    local: &Value,
    workload: &str,
    origin: &str,
) -> Value {
    let meta = &local["metadata"];
    let mut labels = meta["labels"].as_object().cloned().unwrap_or_default();
    let mut annotations = meta["annotations"].as_object().cloned().unwrap_or_default();
    labels.insert(ORIGIN_LABEL.into(), json!(origin));
    annotations.insert(PREBUILT_WORKLOAD.into(), json!(workload));
    if workload.len() <= LABEL_VALUE_MAX {
        labels.insert(PREBUILT_WORKLOAD.into(), json!(workload));
    }
    json!({"apiVersion": api_version, "kind": kind,
        "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": labels,
                     "annotations": annotations},
        "spec": local["spec"].clone()})
}

/// Kueue's StatefulSet and LeaderWorkerSet adapters, create branch: the set made on the worker
/// from the manager's `local` for its Workload `workload`, with the origin label and the
/// manager's UID (`kueue.x-k8s.io/multikueue-origin-uid`). A kind with one Workload per group
/// (LeaderWorkerSet) names no prebuilt Workload: its groups' Workloads are named as on the
/// manager. Its status is never mirrored back (its own controller on the manager owns it).
pub fn remote_parent(kind: &JobKind, local: &Value, workload: &str, origin: &str) -> Value {
    let mut set = remote_object(
        &kind.spec.api_version,
        &kind.spec.kind,
        local,
        workload,
        origin,
    );
    if kind.spec.groups.is_some() {
        for part in ["labels", "annotations"] {
            if let Some(m) = set["metadata"][part].as_object_mut() {
                m.remove(PREBUILT_WORKLOAD);
            }
        }
    }
    set["metadata"]["annotations"][ORIGIN_UID_ANNOTATION] = local["metadata"]["uid"].clone();
    set
}

/// The Workloads a StatefulSet or LeaderWorkerSet `set` is admitted as (its pod groups, one per
/// LeaderWorkerSet group), by name, in group order.
pub fn parent_workloads(kind: &JobKind, set: &Value) -> Vec<String> {
    let name = set["metadata"]["name"].as_str().unwrap_or_default();
    match kind.spec.groups {
        None => vec![kind.workload_name(name, "", None)],
        Some(_) => (0..kind.group_count(set).unwrap_or(1))
            .map(|i| kind.workload_name(name, "", Some(i)))
            .collect(),
    }
}

/// Kueue's pod adapter (`pod_multikueue_adapter.go`), create branch: the pod made on the
/// worker from the manager's pod `local`, its spec whole (scheduling gates included: the
/// worker's Kueue releases them once the copy is admitted there).
pub fn remote_pod(local: &Value, workload: &str, origin: &str) -> Value {
    remote_object("v1", "Pod", local, workload, origin)
}

/// Kueue's pod adapter, status branch: the status the manager's pod takes from the worker's
/// (`None` when it already has it, or the manager's pod is being deleted). The manager's pod
/// stays gated, so while the worker's pod is not scheduled yet it keeps its own
/// `PodScheduled` condition (`SchedulingGated`, which autoscalers ignore) instead of the
/// worker's `Unschedulable`.
pub fn pod_status_update(local: &Value, remote: &Value) -> Option<Value> {
    if !local["metadata"]["deletionTimestamp"].is_null() {
        return None;
    }
    let scheduled = |pod: &Value| {
        (pod["status"]["conditions"].as_array().into_iter().flatten())
            .find(|c| c["type"] == "PodScheduled")
            .cloned()
    };
    let gated = (local["spec"]["schedulingGates"].as_array())
        .is_some_and(|g| g.iter().any(|g| g["name"] == SCHEDULING_GATE));
    let mut status = remote["status"].clone();
    let remote_scheduled = scheduled(remote).is_some_and(|c| c["status"] == "True");
    if gated
        && !remote_scheduled
        && let Some(own) = scheduled(local)
    {
        if !status.is_object() {
            status = json!({});
        }
        let mut conditions = status["conditions"].as_array().cloned().unwrap_or_default();
        match conditions.iter_mut().find(|c| c["type"] == "PodScheduled") {
            Some(c) => *c = own,
            None => conditions.push(own),
        }
        status["conditions"] = json!(conditions);
    }
    let current = &local["status"];
    (status != *current && !(status.is_null() && current == &json!({}))).then_some(status)
}

fn suspended(job: &Value) -> bool {
    job["spec"]["suspend"].as_bool().unwrap_or(false)
}

fn condition_true(job: &Value, type_: &str) -> bool {
    job["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == type_ && c["status"] == "True")
}

/// What the manager's job's status becomes: the remote's (Kueue's adapters copy it whole).
/// For a `batch/v1` Job, Kueue's `determineStatusUpdate`: not while the manager's Job is still
/// suspended and the remote runs — then it waits (`deferred`), only marked
/// `JobSuspended=True` (reason `MultiKueueAdapter`) so that its spec can still change.
/// `status` is `None` when nothing is to be written; `now` is RFC 3339.
pub fn status_update(kind: &JobKind, local: &Value, remote: &Value, now: &str) -> StatusUpdate {
    let current = &local["status"];
    let take = |status: Value, deferred| StatusUpdate {
        status: (status != *current && !(status.is_null() && current == &json!({})))
            .then_some(status),
        deferred,
    };
    if !is_batch_job(kind)
        || !suspended(local)
        || suspended(remote)
        || kind.finished(remote).is_some()
    {
        return take(remote["status"].clone(), false);
    }
    if condition_true(local, "Suspended") {
        return take(current.clone(), true);
    }
    let mut status = if current.is_object() {
        current.clone()
    } else {
        json!({})
    };
    let suspended = json!({"type": "Suspended", "status": "True", "reason": "MultiKueueAdapter",
        "message": "Set by MultiKueue adapter", "lastTransitionTime": now, "lastProbeTime": now});
    let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
    let mut conditions: Vec<Value> = conditions
        .into_iter()
        .filter(|c| c["type"] != "Suspended")
        .collect();
    conditions.push(suspended);
    status["conditions"] = json!(conditions);
    take(status, true)
}

/// See [`status_update`].
#[derive(Debug, Clone, PartialEq)]
pub struct StatusUpdate {
    /// The status to write, when it differs from the manager's job's.
    pub status: Option<Value>,
    /// The remote's status was not taken yet: look again shortly.
    pub deferred: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(api_version: &str, kind: &str) -> JobKind {
        crate::api::jobs::builtin_kind(api_version, kind).unwrap()
    }

    fn adapter(api_version: &str, k: &str) -> MultiKueueAdapter {
        kind(api_version, k).spec.multi_kueue.unwrap()
    }

    fn job(suspend: bool) -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                "labels": {"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/job-uid": "u1"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "x"}]},
            "spec": {"suspend": suspend, "parallelism": 2, "managedBy": "kueue.x-k8s.io/multikueue",
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
                "template": {"metadata": {"labels": {"job-name": "j", "controller-uid": "u1",
                    "batch.kubernetes.io/controller-uid": "u1", "batch.kubernetes.io/job-name": "j", "app": "a"}},
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}},
            "status": {}})
    }

    #[test]
    fn the_remote_job_is_the_local_one_for_the_workers_job_controller() {
        let batch = kind("batch/v1", "Job");
        let r = remote_job(&batch, &job(true), "job-j-1", "multikueue");
        assert_eq!(r["metadata"]["name"], "j");
        assert!(r["metadata"].get("uid").is_none());
        assert!(r["metadata"].get("resourceVersion").is_none());
        assert!(r["metadata"].get("ownerReferences").is_none());
        let labels = &r["metadata"]["labels"];
        assert_eq!(labels[ORIGIN_LABEL], "multikueue");
        assert_eq!(labels[PREBUILT_WORKLOAD], "job-j-1");
        assert_eq!(labels["kueue.x-k8s.io/queue-name"], "lq");
        assert!(labels.get(JOB_UID_LABEL).is_none());
        assert_eq!(r["metadata"]["annotations"][PREBUILT_WORKLOAD], "job-j-1");
        assert!(r["spec"].get("managedBy").is_none());
        assert!(r["spec"].get("selector").is_none());
        assert_eq!(r["spec"]["suspend"], true);
        assert_eq!(
            r["spec"]["template"]["metadata"]["labels"],
            json!({"batch.kubernetes.io/job-name": "j", "app": "a"})
        );
        assert!(r.get("status").is_none());
        // A name too long for a label goes in the annotation only.
        let long = "w".repeat(64);
        let r = remote_job(&batch, &job(true), &long, "multikueue");
        assert!(r["metadata"]["labels"].get(PREBUILT_WORKLOAD).is_none());
        let meta: ObjectMeta = serde_json::from_value(r["metadata"].clone()).unwrap();
        assert_eq!(prebuilt_name(&meta), Some(long.as_str()));
    }

    #[test]
    fn only_a_job_managed_by_multikueue_is_dispatched() {
        let a = adapter("batch/v1", "Job");
        assert_eq!(not_managed_reason(&a, &job(true)), None);
        let mut j = job(true);
        j["spec"].as_object_mut().unwrap().remove("managedBy");
        assert_eq!(
            not_managed_reason(&a, &j).as_deref(),
            Some("Expecting spec.managedBy to be \"kueue.x-k8s.io/multikueue\" not \"\"")
        );
        assert!(can_default_managed_by(&a, &j));
        j["spec"]["managedBy"] = json!("kubernetes.io/job-controller");
        assert!(can_default_managed_by(&a, &j));
        j["spec"]["managedBy"] = json!("example.com/other");
        assert!(!can_default_managed_by(&a, &j));
        // MPIJob's is under runPolicy, and so says Kueue's message.
        let mpi = adapter("kubeflow.org/v2beta1", "MPIJob");
        let m = json!({"spec": {"runPolicy": {"managedBy": "kubeflow.org/mpi-operator"}}});
        assert_eq!(
            not_managed_reason(&mpi, &m).as_deref(),
            Some(
                "Expecting spec.runPolicy.managedBy to be \"kueue.x-k8s.io/multikueue\" not \
                 \"kubeflow.org/mpi-operator\""
            )
        );
        // A PyTorchJob without a runPolicy gets one.
        let pt = adapter("kubeflow.org/v1", "PyTorchJob");
        assert_eq!(
            managed_by_ops(&pt, &json!({"spec": {}})),
            [
                json!({"op": "add", "path": "/spec/runPolicy", "value": {}}),
                json!({"op": "add", "path": "/spec/runPolicy/managedBy",
                       "value": "kueue.x-k8s.io/multikueue"})
            ]
        );
        assert_eq!(gvk_string("batch/v1", "Job"), "batch/v1, Kind=Job");
        assert_eq!(gvk_string("v1", "Pod"), "/v1, Kind=Pod");
    }

    #[test]
    fn the_status_follows_the_remote_unless_the_local_job_still_waits() {
        let mut remote = job(false);
        remote["status"] = json!({"active": 2, "startTime": "2026-01-01T00:00:00Z"});
        // Local started: the remote's status.
        let batch = kind("batch/v1", "Job");
        let u = status_update(&batch, &job(false), &remote, "t");
        assert_eq!(u.status, Some(remote["status"].clone()));
        assert!(!u.deferred);
        // Local suspended, remote running: deferred, marked Suspended once.
        let u = status_update(&batch, &job(true), &remote, "t");
        assert!(u.deferred);
        let status = u.status.unwrap();
        assert_eq!(status["conditions"][0]["reason"], "MultiKueueAdapter");
        assert!(status.get("active").is_none());
        let mut marked = job(true);
        marked["status"] = status;
        assert_eq!(
            status_update(&batch, &marked, &remote, "t2"),
            StatusUpdate {
                status: None,
                deferred: true
            }
        );
        // Remote finished: taken even while the local job is suspended.
        remote["status"]["conditions"] = json!([{"type": "Complete", "status": "True"}]);
        let u = status_update(&batch, &job(true), &remote, "t");
        assert_eq!(u.status, Some(remote["status"].clone()));
        // The same status: nothing to write.
        let mut same = job(false);
        same["status"] = remote["status"].clone();
        assert_eq!(status_update(&batch, &same, &remote, "t").status, None);
    }

    #[test]
    fn another_kinds_remote_job_drops_its_managed_by_and_takes_the_status_whole() {
        let js = kind("jobset.x-k8s.io/v1alpha2", "JobSet");
        let local = json!({"metadata": {"name": "js", "namespace": "ns"},
            "spec": {"suspend": true, "managedBy": "kueue.x-k8s.io/multikueue",
                     "replicatedJobs": [{"name": "w", "template": {"spec": {"selector": {}}}}]}});
        let r = remote_job(&js, &local, "jobset-js-1", "multikueue");
        assert_eq!(r["kind"], "JobSet");
        assert!(r["spec"].get("managedBy").is_none(), "{r}");
        assert_eq!(r["spec"]["replicatedJobs"], local["spec"]["replicatedJobs"]);
        let pt = kind("kubeflow.org/v1", "PyTorchJob");
        let local = json!({"metadata": {"name": "p", "namespace": "ns"},
            "spec": {"runPolicy": {"suspend": true, "managedBy": "kueue.x-k8s.io/multikueue"}}});
        let r = remote_job(&pt, &local, "pytorchjob-p-1", "multikueue");
        assert_eq!(r["spec"]["runPolicy"], json!({"suspend": true}));
        // Suspended here, running there: taken at once (only batch/v1 Job waits).
        let remote = json!({"spec": {"suspend": false}, "status": {"replicatedJobsStatus": []}});
        let u = status_update(&js, &json!({"spec": {"suspend": true}}), &remote, "t");
        assert_eq!(u.status, Some(remote["status"].clone()));
    }

    fn pod(gated: bool, status: Value) -> Value {
        let gates = if gated {
            json!([{"name": "kueue.x-k8s.io/admission"}])
        } else {
            json!([])
        };
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "3",
                "labels": {"kueue.x-k8s.io/pod-group-name": "g"},
                "annotations": {"kueue.x-k8s.io/pod-group-total-count": "2"}},
            "spec": {"schedulingGates": gates, "containers": [{"name": "c", "image": "i"}]},
            "status": status})
    }

    #[test]
    fn the_remote_pod_is_the_local_one_labelled_for_its_workers_kueue() {
        let r = remote_pod(&pod(true, json!({"phase": "Pending"})), "g", "multikueue");
        assert_eq!(r["kind"], "Pod");
        assert!(r["metadata"].get("uid").is_none());
        assert!(r.get("status").is_none());
        assert_eq!(r["metadata"]["labels"][ORIGIN_LABEL], "multikueue");
        assert_eq!(r["metadata"]["labels"][PREBUILT_WORKLOAD], "g");
        assert_eq!(
            r["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"],
            "g"
        );
        assert_eq!(r["spec"], pod(true, json!({}))["spec"]);
    }

    #[test]
    fn a_gated_pod_keeps_its_scheduling_condition_until_its_remote_is_scheduled() {
        let gated = json!({"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"});
        let local = pod(true, json!({"phase": "Pending", "conditions": [gated]}));
        let unschedulable = json!({"phase": "Pending", "qosClass": "BestEffort", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]});
        let u = pod_status_update(&local, &pod(false, unschedulable)).unwrap();
        assert_eq!(u["qosClass"], "BestEffort");
        assert_eq!(u["conditions"], json!([gated]));
        // Once scheduled there, the remote's condition whole.
        let running = json!({"phase": "Running", "conditions": [
            {"type": "PodScheduled", "status": "True"}]});
        let u = pod_status_update(&local, &pod(false, running.clone())).unwrap();
        assert_eq!(u, running);
        // Nothing new, or the local pod being deleted: nothing to write.
        assert_eq!(
            pod_status_update(&pod(true, running.clone()), &pod(false, running.clone())),
            None
        );
        let mut deleting = local.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(pod_status_update(&deleting, &pod(false, running)), None);
    }
}
