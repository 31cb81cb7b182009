//! What the webhooks read of the controller's state: a snapshot of the [`Mirror`] taken after
//! each reconcile pass and shared behind an `Arc` (the webhooks never lock the mirror).

use std::collections::BTreeMap;

use crate::api::catalog::Catalog;
use crate::api::labels;
use crate::k8s::sync::core::{catalog, has_quota_reservation};
use crate::k8s::sync::keys::key_of;
use crate::k8s::sync::mirror::Mirror;

/// A pod of a group, as far as the webhooks care.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupPod {
    pub name: String,
    /// Its `kueue.x-k8s.io/pod-group-total-count` annotation, as written.
    pub total_count: Option<String>,
}

/// See the module docs. `Default` is the view before the first pass: nothing known.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct View {
    /// Priority classes and namespaces holding a LocalQueue `default`.
    pub catalog: Catalog,
    /// Pods of each group, by `(namespace, group name)`.
    pub groups: BTreeMap<(String, String), Vec<GroupPod>>,
    /// Workloads holding quota (`namespace/name`) → the UIDs of their owners.
    pub reserved: BTreeMap<String, Vec<String>>,
    /// As a MultiKueue manager: the LocalQueues (`namespace/name`) whose ClusterQueue has a
    /// `kueue.x-k8s.io/multikueue` check (their Jobs are defaulted to MultiKueue's).
    pub multikueue_queues: std::collections::BTreeSet<String>,
}

impl View {
    pub fn of(mirror: &Mirror) -> View {
        let mut groups: BTreeMap<(String, String), Vec<GroupPod>> = BTreeMap::new();
        for pod in mirror.pods.values() {
            let meta = &pod.metadata;
            let Some(group) = meta
                .labels
                .as_ref()
                .and_then(|l| l.get(labels::POD_GROUP_NAME))
            else {
                continue;
            };
            let namespace = meta.namespace.clone().unwrap_or_else(|| "default".into());
            groups
                .entry((namespace, group.clone()))
                .or_default()
                .push(GroupPod {
                    name: meta.name.clone().unwrap_or_default(),
                    total_count: meta
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get(labels::POD_GROUP_TOTAL_COUNT))
                        .cloned(),
                });
        }
        let reserved = mirror
            .workloads
            .values()
            .filter(|wl| has_quota_reservation(wl))
            .map(|wl| {
                let key = key_of(
                    wl.metadata.namespace.as_deref(),
                    wl.metadata.name.as_deref().unwrap_or_default(),
                );
                let owners = wl
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .map(|o| o.uid.clone())
                    .collect();
                (key, owners)
            })
            .collect();
        View {
            catalog: catalog(mirror),
            groups,
            reserved,
            multikueue_queues: multikueue_queues(mirror),
        }
    }

    /// Whether the Workload `namespace/name`, owned by `owner_uid` when given, holds quota.
    pub fn holds_quota(&self, namespace: &str, name: &str, owner_uid: Option<&str>) -> bool {
        self.reserved
            .get(&key_of(Some(namespace), name))
            .is_some_and(|owners| owner_uid.is_none_or(|uid| owners.iter().any(|o| o == uid)))
    }

    /// The other pods known in a group (`except` excluded).
    pub fn group_pods<'a>(
        &'a self,
        namespace: &str,
        group: &str,
        except: &'a str,
    ) -> impl Iterator<Item = &'a GroupPod> + 'a {
        self.groups
            .get(&(namespace.to_string(), group.to_string()))
            .into_iter()
            .flatten()
            .filter(move |p| p.name != except)
    }
}

/// Kueue's `ApplyDefaultForManagedBy` looks up: the LocalQueues feeding a ClusterQueue with a
/// MultiKueue check — when this controller is the manager.
fn multikueue_queues(mirror: &Mirror) -> std::collections::BTreeSet<String> {
    if !mirror.multikueue_manager {
        return Default::default();
    }
    let multikueue = |cq: &str| {
        mirror
            .cluster_queues
            .get(cq)
            .and_then(|cq| cq.spec.admission_checks_strategy.as_ref())
            .is_some_and(|s| {
                s.admission_checks.iter().any(|rule| {
                    mirror.admission_checks.get(&rule.name).is_some_and(|ac| {
                        ac.spec.controller_name == crate::api::multikueue::MULTIKUEUE_CONTROLLER
                    })
                })
            })
    };
    mirror
        .local_queues
        .values()
        .filter(|lq| multikueue(&lq.spec.cluster_queue))
        .map(|lq| {
            key_of(
                lq.metadata.namespace.as_deref(),
                lq.metadata.name.as_deref().unwrap_or_default(),
            )
        })
        .collect()
}
