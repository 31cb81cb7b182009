//! Plain Pods in a group (Kueue's pod integration): pods labelled
//! `kueue.x-k8s.io/pod-group-name` with a `kueue.x-k8s.io/pod-group-total-count` annotation form
//! one Workload once all of them exist. Each pod is held by the `kueue.x-k8s.io/admission`
//! scheduling gate until the Workload is admitted; admission removes the gate and adds the
//! flavors' node labels and tolerations. Pods cannot be suspended, so eviction deletes them.
//! A gated pod with a queue label and no group (a lone pod, a Deployment's replica) is a group
//! of one.

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::api::core::v1::Pod;
use kube::core::ApiResource;
use serde_json::{Value, json};

use crate::api::catalog::Catalog;
use crate::api::jobs::multikueue::prebuilt_name;
use crate::api::jobs::patch::metadata_ops;
use crate::api::jobs::{AdmittedPodSet, inject_ops};
use crate::api::multikueue::ORIGIN_LABEL;
use crate::api::pods::{PodDoc, role_hash, single_pod_workload_name, workloads_for_pods};
use crate::api::topology::TOPOLOGY_SCHEDULING_GATE;
use crate::api::{Origin, Workload, labels};
use crate::k8s::sync::keys::key_of;
use crate::k8s::sync::mirror::Mirror;

pub use crate::api::pods::SCHEDULING_GATE;

/// A pod group as the mirror sees it.
#[derive(Debug, Clone)]
pub struct Group {
    pub namespace: String,
    pub name: String,
    /// Pods of the group, by name.
    pub pods: Vec<Pod>,
    pub total: Option<usize>,
}

pub fn pod_resource() -> ApiResource {
    ApiResource::erase::<Pod>(&())
}

/// Every pod group in the mirror. A pod that names a queue but no group (a lone pod, or a
/// Deployment's replica) is a group of its own, named as Kueue names its Workload
/// (`pod-<name>-<hash>`), while it is gated or once that Workload exists.
pub fn groups(mirror: &Mirror) -> Vec<Group> {
    let mut out: BTreeMap<(String, String), Group> = BTreeMap::new();
    for pod in mirror.pods.values() {
        let meta = &pod.metadata;
        let label = |key: &str| meta.labels.as_ref().and_then(|l| l.get(key));
        let group = match label(labels::POD_GROUP_NAME) {
            Some(g) => g,
            None if label(labels::QUEUE_NAME).is_some() => {
                // A MultiKueue worker's pod runs under the manager's copy.
                let name = prebuilt_name(meta)
                    .map(str::to_string)
                    .unwrap_or_else(|| single_pod_workload_name(meta));
                let namespace = meta.namespace.clone().unwrap_or_else(|| "default".into());
                // Gated and waiting, or released and owning its Workload: a pod that was
                // never gated is not Kueue's.
                if !is_gated(pod)
                    && !mirror
                        .workloads
                        .contains_key(&key_of(Some(&namespace), &name))
                {
                    continue;
                }
                out.insert(
                    (namespace.clone(), name.clone()),
                    Group {
                        namespace,
                        name,
                        pods: vec![pod.clone()],
                        total: Some(1),
                    },
                );
                continue;
            }
            None => continue,
        };
        let namespace = meta.namespace.clone().unwrap_or_else(|| "default".into());
        let total = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(labels::POD_GROUP_TOTAL_COUNT))
            .and_then(|v| v.trim().parse().ok());
        let g = out
            .entry((namespace.clone(), group.clone()))
            .or_insert_with(|| Group {
                namespace,
                name: group.clone(),
                pods: Vec::new(),
                total,
            });
        g.total = g.total.or(total);
        g.pods.push(pod.clone());
    }
    out.into_values().collect()
}

pub fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

pub fn is_gated(pod: &Pod) -> bool {
    gate_index(pod).is_some()
}

fn gate_index(pod: &Pod) -> Option<usize> {
    pod.spec
        .as_ref()?
        .scheduling_gates
        .as_ref()?
        .iter()
        .position(|g| g.name == SCHEDULING_GATE)
}

impl Group {
    /// Whether its pods run under a MultiKueue manager's copy (they name a prebuilt Workload,
    /// or carry the origin label from their StatefulSet's or LeaderWorkerSet's template): its
    /// Workload is never made here.
    pub fn under_manager_copy(&self) -> bool {
        self.pods.iter().any(|p| {
            prebuilt_name(&p.metadata).is_some()
                || (p.metadata.labels.as_ref()).is_some_and(|l| l.contains_key(ORIGIN_LABEL))
        })
    }

    /// Whether all the group's pods exist.
    pub fn is_complete(&self) -> bool {
        self.total.is_some_and(|t| self.pods.len() >= t)
    }

    /// Pods that may still run (not terminated, not being deleted).
    pub fn live_pods(&self) -> impl Iterator<Item = &Pod> {
        self.pods
            .iter()
            .filter(|p| !is_terminal(p) && p.metadata.deletion_timestamp.is_none())
    }

    /// Whether every pod of the complete group is Ready (condition `Ready` True) or Succeeded,
    /// as Kueue's pod group `PodsReady()`.
    pub fn pods_ready(&self) -> bool {
        self.is_complete()
            && self.pods.iter().all(|p| {
                let Some(st) = p.status.as_ref() else {
                    return false;
                };
                st.phase.as_deref() == Some("Succeeded")
                    || st
                        .conditions
                        .iter()
                        .flatten()
                        .any(|c| c.type_ == "Ready" && c.status == "True")
            })
    }

    pub fn is_active(&self) -> bool {
        self.pods.iter().any(|p| !is_terminal(p))
    }

    /// `Some((success, message))` once every pod of a complete group terminated.
    pub fn finished(&self) -> Option<(bool, String)> {
        if !self.is_complete() || self.pods.iter().any(|p| !is_terminal(p)) {
            return None;
        }
        let failed = self
            .pods
            .iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed"))
            .count();
        Some(if failed == 0 {
            (true, "Pods succeeded".to_string())
        } else {
            (false, format!("{failed} pods failed"))
        })
    }

    /// The group's Workload (the same conversion `wasq simulate` uses).
    pub fn workload(&self, catalog: &Catalog) -> Result<Option<Workload>, String> {
        let origin = Origin {
            file: PathBuf::from("<api-server>"),
            doc: 0,
        };
        let docs: Vec<PodDoc<'_>> = self
            .pods
            .iter()
            .map(|pod| PodDoc {
                origin: &origin,
                pod,
            })
            .collect();
        let (mut made, errors) = workloads_for_pods(&docs, catalog);
        if let Some(e) = errors.first() {
            return Err(e.to_string());
        }
        Ok(made.pop().map(|w| w.workload))
    }

    /// JSON Patch ungating `pod` with its podSet's flavors; empty if it is not gated.
    pub fn ungate_ops(
        pod: &Pod,
        admitted: &BTreeMap<String, AdmittedPodSet>,
        workload: &Workload,
        labels: &BTreeMap<String, String>,
    ) -> Vec<Value> {
        let Some(i) = gate_index(pod) else {
            return Vec::new();
        };
        let pod_set = if workload.spec.pod_sets.len() == 1 {
            workload.spec.pod_sets[0].name.clone()
        } else {
            role_hash(pod.spec.as_ref())
        };
        let admitted = admitted.get(&pod_set);
        let assigned = admitted.map(|a| a.flavors.as_slice()).unwrap_or_default();
        let template = k8s_openapi::api::core::v1::PodTemplateSpec {
            metadata: None,
            spec: pod.spec.clone(),
        };
        let mut ops = vec![
            json!({"op": "test", "path": format!("/spec/schedulingGates/{i}/name"), "value": SCHEDULING_GATE}),
            json!({"op": "remove", "path": format!("/spec/schedulingGates/{i}")}),
        ];
        // Kueue's `prepare`: the topology gate stays for the ungater only when the podSet was
        // placed by topology-aware scheduling.
        let placed_by_tas = admitted.is_some_and(|a| {
            a.scheduling_gates
                .iter()
                .any(|g| g == TOPOLOGY_SCHEDULING_GATE)
        });
        if !placed_by_tas
            && let Some(j) = pod
                .spec
                .iter()
                .flat_map(|s| s.scheduling_gates.iter().flatten())
                .position(|g| g.name == TOPOLOGY_SCHEDULING_GATE)
        {
            let j = if j > i { j - 1 } else { j };
            ops.extend([
                json!({"op": "test", "path": format!("/spec/schedulingGates/{j}/name"), "value": TOPOLOGY_SCHEDULING_GATE}),
                json!({"op": "remove", "path": format!("/spec/schedulingGates/{j}")}),
            ]);
        }
        ops.extend(inject_ops("", &template, assigned));
        // Attribution labels, then what the admission checks add (their podSet updates).
        let pairs = |m: &BTreeMap<String, String>| -> Vec<(String, String)> {
            m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        let mut labels = pairs(labels);
        let mut annotations = Vec::new();
        if let Some(a) = admitted {
            labels.extend(pairs(&a.labels));
            annotations = pairs(&a.annotations);
        }
        let value = serde_json::to_value(&pod.metadata).unwrap_or_default();
        ops.extend(metadata_ops(
            &json!({"metadata": value}),
            "",
            &labels,
            &annotations,
        ));
        ops
    }
}
