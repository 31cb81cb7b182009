//! Kueue's MultiKueue adapter for `batch/v1` Jobs (`job_multikueue_adapter.go`, main branch):
//! whether the manager's Job is MultiKueue's, the Job created on the worker that admitted its
//! Workload, and the status the manager's Job takes from it.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

use super::workload::JOB_UID_LABEL;
use crate::api::multikueue::{MULTIKUEUE_CONTROLLER, ORIGIN_LABEL, PREBUILT_WORKLOAD};

/// The kind this adapter handles.
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

/// Go's `schema.GroupVersionKind.String()` of an owner: `batch/v1, Kind=Job`, `/v1, Kind=Pod`.
pub fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// Kueue's `IsJobManagedByKueue`: `None` when the Job is MultiKueue's, else why not.
pub fn not_managed_reason(job: &Value) -> Option<String> {
    let managed_by = job["spec"]["managedBy"].as_str().unwrap_or_default();
    (managed_by != MULTIKUEUE_CONTROLLER).then(|| {
        format!("Expecting spec.managedBy to be {MULTIKUEUE_CONTROLLER:?} not {managed_by:?}")
    })
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

/// Kueue's `SyncJob` create branch: the Job made on the worker from the manager's `local` —
/// name, namespace, labels, annotations and spec; no selector, no controller-managed template
/// labels, no `managedBy` (so that the worker's Job controller runs it); the origin label and
/// the prebuilt Workload `workload` (annotation, and label when it fits, so that workers of
/// either generation of Kueue find it).
pub fn remote_job(local: &Value, workload: &str, origin: &str) -> Value {
    let meta = &local["metadata"];
    let mut labels = meta["labels"].as_object().cloned().unwrap_or_default();
    let mut annotations = meta["annotations"].as_object().cloned().unwrap_or_default();
    labels.remove(JOB_UID_LABEL);
    labels.insert(ORIGIN_LABEL.into(), json!(origin));
    annotations.insert(PREBUILT_WORKLOAD.into(), json!(workload));
    if workload.len() <= LABEL_VALUE_MAX {
        labels.insert(PREBUILT_WORKLOAD.into(), json!(workload));
    }
    let mut spec = local["spec"].clone();
    if let Some(s) = spec.as_object_mut() {
        s.remove("selector");
        s.remove("managedBy");
    }
    if let Some(l) = spec["template"]["metadata"]["labels"].as_object_mut() {
        for k in MANAGED_TEMPLATE_LABELS {
            l.remove(k);
        }
    }
    let mut metadata =
        json!({"name": meta["name"], "namespace": meta["namespace"], "labels": labels});
    if !annotations.is_empty() {
        metadata["annotations"] = json!(annotations);
    }
    json!({"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec})
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

/// A Job finished: `Complete` or `Failed`.
pub fn finished(job: &Value) -> bool {
    condition_true(job, "Complete") || condition_true(job, "Failed")
}

/// What the manager's Job's status becomes (Kueue's `determineStatusUpdate`): the remote's,
/// unless the manager's Job is still suspended while the remote runs — then it waits
/// (`deferred`), only marked `JobSuspended=True` (reason `MultiKueueAdapter`) so that the
/// Job's spec can still change. `status` is `None` when nothing is to be written; `now` is
/// RFC 3339.
pub fn status_update(local: &Value, remote: &Value, now: &str) -> StatusUpdate {
    let current = &local["status"];
    let take = |status: Value, deferred| StatusUpdate {
        status: (status != *current && !(status.is_null() && current == &json!({})))
            .then_some(status),
        deferred,
    };
    if !suspended(local) || suspended(remote) || finished(remote) {
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
    /// The status to write, when it differs from the manager's Job's.
    pub status: Option<Value>,
    /// The remote's status was not taken yet: look again shortly.
    pub deferred: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let r = remote_job(&job(true), "job-j-1", "multikueue");
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
        let r = remote_job(&job(true), &long, "multikueue");
        assert!(r["metadata"]["labels"].get(PREBUILT_WORKLOAD).is_none());
        let meta: ObjectMeta = serde_json::from_value(r["metadata"].clone()).unwrap();
        assert_eq!(prebuilt_name(&meta), Some(long.as_str()));
    }

    #[test]
    fn only_a_job_managed_by_multikueue_is_dispatched() {
        assert_eq!(not_managed_reason(&job(true)), None);
        let mut j = job(true);
        j["spec"].as_object_mut().unwrap().remove("managedBy");
        assert_eq!(
            not_managed_reason(&j).as_deref(),
            Some("Expecting spec.managedBy to be \"kueue.x-k8s.io/multikueue\" not \"\"")
        );
        assert_eq!(gvk_string("batch/v1", "Job"), "batch/v1, Kind=Job");
        assert_eq!(gvk_string("v1", "Pod"), "/v1, Kind=Pod");
    }

    #[test]
    fn the_status_follows_the_remote_unless_the_local_job_still_waits() {
        let mut remote = job(false);
        remote["status"] = json!({"active": 2, "startTime": "2026-01-01T00:00:00Z"});
        // Local started: the remote's status.
        let u = status_update(&job(false), &remote, "t");
        assert_eq!(u.status, Some(remote["status"].clone()));
        assert!(!u.deferred);
        // Local suspended, remote running: deferred, marked Suspended once.
        let u = status_update(&job(true), &remote, "t");
        assert!(u.deferred);
        let status = u.status.unwrap();
        assert_eq!(status["conditions"][0]["reason"], "MultiKueueAdapter");
        assert!(status.get("active").is_none());
        let mut marked = job(true);
        marked["status"] = status;
        assert_eq!(
            status_update(&marked, &remote, "t2"),
            StatusUpdate {
                status: None,
                deferred: true
            }
        );
        // Remote finished: taken even while the local job is suspended.
        remote["status"]["conditions"] = json!([{"type": "Complete", "status": "True"}]);
        let u = status_update(&job(true), &remote, "t");
        assert_eq!(u.status, Some(remote["status"].clone()));
        // The same status: nothing to write.
        let mut same = job(false);
        same["status"] = remote["status"].clone();
        assert_eq!(status_update(&same, &remote, "t").status, None);
    }
}
