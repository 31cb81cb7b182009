//! What topology-aware scheduling reads of the cluster's Nodes and Pods, kept by the mirror:
//! - Nodes stripped to what Kueue's TAS cache keeps (`tas_nodes_cache.go`: name, labels,
//!   taints, allocatable, `spec.unschedulable`, and whether `Ready` is true). Other changes
//!   (heartbeats, images, addresses) are not changes here.
//! - Per node, the requests of the running pods bound to it that TAS did not place (Kueue's
//!   non-TAS usage, `tas_non_tas_pod_cache.go`): terminated pods and TAS pods do not count.
//! - Per Workload, its TAS pods (annotated with `kueue.x-k8s.io/workload`), what the
//!   topology ungater reads: podSet, whether still gated, node selector and labels.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeSpec, NodeStatus, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::api::labels::POD_SET;
use crate::api::topology::{TOPOLOGY_SCHEDULING_GATE, WORKLOAD_ANNOTATION, is_tas_pod};
use crate::cluster::pod_requests;
use crate::k8s::sync::keys::{key_of, not_older};
use crate::topology::tree::PODS;

/// A TAS pod, as the ungater reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TasPod {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub pod_set: String,
    /// Where the topology gate is in `spec.schedulingGates` (`None`: ungated).
    pub gate: Option<usize>,
    pub node_selector: BTreeMap<String, String>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default)]
struct PodEntry {
    resource_version: Option<String>,
    /// The node and requests of a running pod outside TAS.
    usage: Option<(String, BTreeMap<String, i64>)>,
    /// The Workload key of a TAS pod.
    workload: Option<String>,
}

/// What one observed Pod changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changed {
    /// Nodes whose usage outside TAS changed.
    pub usage: Vec<String>,
    /// Workloads whose TAS pods changed (the ungater looks at them again).
    pub workloads: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct NodeMirror {
    pub nodes: BTreeMap<String, Node>,
    pods: HashMap<String, PodEntry>,
    /// Per node: what its running pods outside TAS request (milli-units; `pods` counts 1000
    /// per pod, as Kueue adds one pod per pod).
    pub node_usage: BTreeMap<String, BTreeMap<String, i64>>,
    /// Per Workload key: its TAS pods by pod key.
    pub tas_pods: BTreeMap<String, BTreeMap<String, TasPod>>,
}

/// A node as Kueue's TAS cache keeps it. A node without a `Ready` condition gets one with
/// status `Unknown`, so that only nodes reporting `Ready=True` count (Kueue's
/// `schedulableAndReady`).
pub fn strip_node(node: &Node) -> Node {
    let spec = node.spec.as_ref();
    let status = node.status.as_ref();
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .map_or("Unknown", |c| c.status.as_str());
    Node {
        metadata: ObjectMeta {
            name: node.metadata.name.clone(),
            labels: node.metadata.labels.clone(),
            resource_version: node.metadata.resource_version.clone(),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec {
            taints: spec.and_then(|s| s.taints.clone()),
            unschedulable: spec.and_then(|s| s.unschedulable),
            ..NodeSpec::default()
        }),
        status: Some(NodeStatus {
            allocatable: status.and_then(|s| s.allocatable.clone()),
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: ready.into(),
                ..NodeCondition::default()
            }]),
            ..NodeStatus::default()
        }),
    }
}

/// Whether two stripped nodes differ in what TAS reads.
fn same_for_tas(a: &Node, b: &Node) -> bool {
    a.metadata.labels == b.metadata.labels && a.spec == b.spec && a.status == b.status
}

fn terminated(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

impl NodeMirror {
    pub fn node_keys(&self) -> Vec<String> {
        self.nodes.keys().cloned().collect()
    }

    pub fn pod_keys(&self) -> Vec<String> {
        self.pods.keys().cloned().collect()
    }

    /// Takes in a Node; whether what TAS reads of it changed.
    pub fn apply_node(&mut self, node: &Node) -> bool {
        let stripped = strip_node(node);
        let name = stripped.metadata.name.clone().unwrap_or_default();
        match self.nodes.get(&name) {
            Some(old)
                if !not_older(
                    old.metadata.resource_version.as_deref(),
                    stripped.metadata.resource_version.as_deref(),
                ) =>
            {
                false
            }
            Some(old) => {
                let changed = !same_for_tas(old, &stripped);
                self.nodes.insert(name, stripped);
                changed
            }
            None => {
                self.nodes.insert(name, stripped);
                true
            }
        }
    }

    /// Forgets a Node; whether it was known.
    pub fn delete_node(&mut self, name: &str) -> bool {
        self.nodes.remove(name).is_some()
    }

    /// Takes in a Pod (any Pod of the cluster).
    pub fn apply_pod(&mut self, pod: &Pod) -> Changed {
        let meta = &pod.metadata;
        let namespace = meta.namespace.clone().unwrap_or_default();
        let name = meta.name.clone().unwrap_or_default();
        let key = key_of(Some(&namespace), &name);
        if let Some(old) = self.pods.get(&key)
            && !not_older(
                old.resource_version.as_deref(),
                meta.resource_version.as_deref(),
            )
        {
            return Changed::default();
        }
        let mut changed = self.forget_pod(&key);
        let empty = BTreeMap::new();
        let annotations = meta.annotations.as_ref().unwrap_or(&empty);
        let spec = pod.spec.clone().unwrap_or_default();
        let tas = is_tas_pod(annotations);
        let node = spec.node_name.clone().filter(|n| !n.is_empty());
        let mut entry = PodEntry {
            resource_version: meta.resource_version.clone(),
            ..PodEntry::default()
        };
        if !tas
            && !terminated(pod)
            && let Some(node) = node
        {
            let mut usage = pod_requests(&spec);
            *usage.entry(PODS.to_string()).or_default() += 1000;
            self.charge(&node, &usage, 1);
            if !changed.usage.contains(&node) {
                changed.usage.push(node.clone());
            }
            entry.usage = Some((node, usage));
        }
        if let Some(workload) = annotations.get(WORKLOAD_ANNOTATION)
            && tas
            && !terminated(pod)
        {
            let wl_key = key_of(Some(&namespace), workload);
            let gate = spec
                .scheduling_gates
                .iter()
                .flatten()
                .position(|g| g.name == TOPOLOGY_SCHEDULING_GATE);
            let labels = meta.labels.clone().unwrap_or_default();
            let tas_pod = TasPod {
                namespace,
                name,
                uid: meta.uid.clone().unwrap_or_default(),
                pod_set: labels.get(POD_SET).cloned().unwrap_or_default(),
                gate,
                node_selector: spec.node_selector.clone().unwrap_or_default(),
                labels,
                annotations: annotations.clone(),
            };
            self.tas_pods
                .entry(wl_key.clone())
                .or_default()
                .insert(key.clone(), tas_pod);
            if !changed.workloads.contains(&wl_key) {
                changed.workloads.push(wl_key.clone());
            }
            entry.workload = Some(wl_key);
        }
        self.pods.insert(key, entry);
        changed
    }

    /// Forgets a Pod.
    pub fn delete_pod(&mut self, key: &str) -> Changed {
        self.forget_pod(key)
    }

    fn forget_pod(&mut self, key: &str) -> Changed {
        let mut changed = Changed::default();
        let Some(entry) = self.pods.remove(key) else {
            return changed;
        };
        if let Some((node, usage)) = entry.usage {
            self.charge(&node, &usage, -1);
            changed.usage.push(node);
        }
        if let Some(wl) = entry.workload {
            if let Some(pods) = self.tas_pods.get_mut(&wl) {
                pods.remove(key);
                if pods.is_empty() {
                    self.tas_pods.remove(&wl);
                }
            }
            changed.workloads.push(wl);
        }
        changed
    }

    fn charge(&mut self, node: &str, usage: &BTreeMap<String, i64>, sign: i64) {
        let total = self.node_usage.entry(node.to_string()).or_default();
        for (r, v) in usage {
            *total.entry(r.clone()).or_default() += sign * v;
        }
        total.retain(|_, v| *v != 0);
        if total.is_empty() {
            self.node_usage.remove(node);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(rv: &str, node: Option<&str>, phase: &str, annotations: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": rv,
                         "annotations": annotations, "labels": {"kueue.x-k8s.io/podset": "main"}},
            "spec": {"nodeName": node, "containers": [{"name": "c",
                "resources": {"requests": {"cpu": "2"}}}],
                "schedulingGates": [{"name": "other"}, {"name": "kueue.x-k8s.io/topology"}]},
            "status": {"phase": phase}
        }))
        .unwrap()
    }

    #[test]
    fn running_pods_outside_tas_are_charged_to_their_node_until_they_end() {
        let mut m = NodeMirror::default();
        assert_eq!(
            m.apply_pod(&pod("1", None, "Pending", json!({}))),
            Changed::default()
        );
        let c = m.apply_pod(&pod("2", Some("n1"), "Running", json!({})));
        assert_eq!(c.usage, ["n1"]);
        assert_eq!(
            m.node_usage["n1"],
            BTreeMap::from([("cpu".to_string(), 2000), ("pods".to_string(), 1000)])
        );
        // A stale event changes nothing.
        assert_eq!(
            m.apply_pod(&pod("1", None, "Pending", json!({}))),
            Changed::default()
        );
        let c = m.apply_pod(&pod("3", Some("n1"), "Succeeded", json!({})));
        assert_eq!(c.usage, ["n1"]);
        assert!(m.node_usage.is_empty());
    }

    #[test]
    fn tas_pods_are_indexed_by_workload_and_not_charged() {
        let mut m = NodeMirror::default();
        let annotations = json!({"kueue.x-k8s.io/workload": "wl",
            "kueue.x-k8s.io/podset-required-topology": "rack"});
        let c = m.apply_pod(&pod("1", Some("n1"), "Running", annotations));
        assert_eq!(c.workloads, ["ns/wl"]);
        assert!(c.usage.is_empty() && m.node_usage.is_empty());
        let p = &m.tas_pods["ns/wl"]["ns/p"];
        assert_eq!((p.pod_set.as_str(), p.gate), ("main", Some(1)));
        assert_eq!(m.delete_pod("ns/p").workloads, ["ns/wl"]);
        assert!(m.tas_pods.is_empty());
    }

    #[test]
    fn only_what_tas_reads_of_a_node_is_a_change() {
        let node = |rv: &str, ready: &str, heartbeat: &str| -> Node {
            serde_json::from_value(json!({
                "metadata": {"name": "n1", "resourceVersion": rv, "labels": {"rack": "r1"}},
                "status": {"allocatable": {"cpu": "8"}, "conditions": [
                    {"type": "Ready", "status": ready, "lastHeartbeatTime": heartbeat}]}
            }))
            .unwrap()
        };
        let mut m = NodeMirror::default();
        assert!(m.apply_node(&node("1", "True", "2026-01-01T00:00:00Z")));
        assert!(!m.apply_node(&node("2", "True", "2026-01-01T00:01:00Z")));
        assert!(m.apply_node(&node("3", "False", "2026-01-01T00:02:00Z")));
        assert!(
            !m.apply_node(&node("2", "True", "2026-01-01T00:01:00Z")),
            "stale"
        );
        let unknown =
            strip_node(&serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap());
        assert_eq!(
            unknown.status.unwrap().conditions.unwrap()[0].status,
            "Unknown"
        );
    }
}
