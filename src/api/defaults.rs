//! The defaulting Kueue applies to a Workload when it is created, before validation:
//! - `spec.priority` from the referenced WorkloadPriorityClass when not given;
//! - `spec.queueName` = `default` when not given and the namespace has a LocalQueue `default`
//!   (Kueue's `LocalQueueDefaulting` does this for jobs; wasq extends it to written Workloads);
//! - container (and init container, and pod-level) `requests` taken from `limits` for resources
//!   that only have a limit (`workload.UseLimitsAsMissingRequestsInPod`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;

use super::Quantity;
use super::catalog::{Catalog, DEFAULT_LOCAL_QUEUE};
use super::types::{GROUP, WORKLOAD_PRIORITY_CLASS_KIND, Workload};

/// Applies every default above to `wl`.
pub fn default_workload(wl: &mut Workload, catalog: &Catalog) {
    if wl.spec.priority.is_none()
        && let Some(r) = &wl.spec.priority_class_ref
        && r.group == GROUP
        && r.kind == WORKLOAD_PRIORITY_CLASS_KIND
    {
        wl.spec.priority = catalog.priority_of(&r.name);
    }
    if wl.spec.queue_name.as_deref().is_none_or(str::is_empty) {
        let namespace = wl.metadata.namespace.as_deref().unwrap_or("default");
        wl.spec.queue_name = catalog
            .has_default_queue(namespace)
            .then(|| DEFAULT_LOCAL_QUEUE.to_string());
    }
    for ps in &mut wl.spec.pod_sets {
        if let Some(spec) = &mut std::sync::Arc::make_mut(&mut ps.template).spec {
            use_limits_as_missing_requests(spec);
        }
    }
}

/// Copies each limit into `requests` where that resource has no request. Limits that are not
/// valid non-negative quantities are left for validation to report once, at the limit.
pub fn use_limits_as_missing_requests(spec: &mut PodSpec) {
    let containers = spec
        .init_containers
        .iter_mut()
        .flatten()
        .chain(&mut spec.containers);
    for c in containers {
        if let Some(r) = &mut c.resources {
            fill_requests(r);
        }
    }
    if let Some(r) = &mut spec.resources {
        fill_requests(r);
    }
}

fn fill_requests(r: &mut ResourceRequirements) {
    let Some(limits) = &r.limits else { return };
    let missing: BTreeMap<String, KubeQuantity> = limits
        .iter()
        .filter(|(k, v)| {
            r.requests.as_ref().is_none_or(|req| !req.contains_key(*k))
                && v.0.parse::<Quantity>().is_ok_and(|q| q >= Quantity::ZERO)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !missing.is_empty() {
        r.requests.get_or_insert_with(BTreeMap::new).extend(missing);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::strict::decode;

    #[test]
    fn limits_stand_in_for_missing_requests() {
        let mut spec: PodSpec = decode(&serde_json::json!({
            "containers": [{"name": "c", "resources": {
                "requests": {"cpu": "1"},
                "limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "x"}
            }}]
        }))
        .unwrap();
        use_limits_as_missing_requests(&mut spec);
        let requests = spec.containers[0]
            .resources
            .as_ref()
            .unwrap()
            .requests
            .as_ref()
            .unwrap();
        let got: Vec<(&str, &str)> = requests
            .iter()
            .map(|(k, v)| (k.as_str(), v.0.as_str()))
            .collect();
        assert_eq!(got, [("cpu", "1"), ("memory", "1Gi")]);
    }

    #[test]
    fn default_queue_and_priority() {
        let mut wl: Workload = decode(&serde_json::json!({
            "metadata": {"name": "w", "namespace": "ns"},
            "spec": {"podSets": [], "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}}
        }))
        .unwrap();
        let mut catalog = Catalog::default();
        catalog.priority_classes.insert("high".into(), 9);
        catalog.namespaces_with_default_queue.insert("ns".into());
        default_workload(&mut wl, &catalog);
        assert_eq!(wl.spec.priority, Some(9));
        assert_eq!(wl.spec.queue_name.as_deref(), Some("default"));
    }
}
