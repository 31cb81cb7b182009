//! The keys objects are known by in memory (`namespace/name`, a pod's group), and the order of
//! their resourceVersions: shared by the mirror, what it keeps of Nodes and Pods, and the job
//! integrations.

use crate::api::labels;
use crate::api::pods::single_pod_workload_name;

/// `namespace/name`, or `name` for cluster-scoped objects.
pub fn key_of(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

/// Whether `new` is not older than `old`. Resource versions are opaque, but the API server's
/// are etcd revisions; when both parse as integers they order events.
pub fn not_older(old: Option<&str>, new: Option<&str>) -> bool {
    match (
        old.and_then(|o| o.parse::<u64>().ok()),
        new.and_then(|n| n.parse::<u64>().ok()),
    ) {
        (Some(o), Some(n)) => n >= o,
        _ => true,
    }
}

/// The group (`namespace/name`) a pod belongs to: its pod-group label, or the Workload name
/// of a lone queued pod. `None` for pods that are not Kueue's.
pub fn group_key(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<String> {
    let label = |key: &str| meta.labels.as_ref().and_then(|l| l.get(key));
    let namespace = meta.namespace.as_deref().unwrap_or("default");
    match label(labels::POD_GROUP_NAME) {
        Some(g) => Some(key_of(Some(namespace), g)),
        None if label(labels::QUEUE_NAME).is_some() => {
            Some(key_of(Some(namespace), &single_pod_workload_name(meta)))
        }
        None => None,
    }
}
