//! Host data → WIT records: the catalog (names, quota tree, queues; built once per cluster
//! configuration) and the per-call records (workloads, candidates, flavor options, usage).
//! Only integers and interned indices cross per call; strings only in the catalog and, once per
//! plugin instance, in its string table (`new-strings`: workloads' namespaces, owners, labels
//! and annotations).

use std::collections::{BTreeMap, HashMap};

use super::bindings::types as t;
use super::plugin::{Exposure, exposed_keys};
use super::strings::{Ident, Pairs, StringTable};
use crate::api::config::PreemptionStrategy;
use crate::api::{
    BorrowWithinCohortPolicy, FungibilityPolicy, FungibilityPreference, QueueingStrategy,
    ReclaimWithinCohort, WithinClusterQueue,
};
use crate::cluster::{Cluster, CqId, EvictionReason, LqId, Millis, StrMap, WorkloadId};
use crate::quota::{FrIdx, NodeId, NodeKind};

/// The WIT catalog plus the host-side index of its annotation keys and the plugin's
/// allow-list.
pub struct Catalog {
    pub wit: t::Catalog,
    keys: HashMap<String, u32>,
    exposure: Exposure,
}

impl Catalog {
    /// A workload's identity as ids of the instance's string table (interned the first time;
    /// cached per instance and cluster configuration).
    pub fn ident(&self, strings: &mut StringTable, cluster: &Cluster, id: WorkloadId) -> Ident {
        strings.ident(cluster.config_id, id.index(), |strings| {
            let wl = cluster.workload(id);
            (
                strings.intern(&wl.namespace),
                wl.owner.as_ref().map(|o| {
                    [
                        strings.intern(&o.kind),
                        strings.intern(&o.api_version),
                        strings.intern(&o.name),
                    ]
                }),
                entries(strings, &wl.labels, |k| self.exposure.exposes_label(k)),
                entries(strings, &wl.annotations, |k| self.exposure.exposes(k)),
            )
        })
    }

    /// Exposed annotations of a catalog object's `map`, keys interned in the catalog. Keys the
    /// catalog does not know are left out.
    pub fn annotations(&self, map: &BTreeMap<String, String>) -> Vec<t::Annotation> {
        if self.keys.is_empty() {
            return Vec::new();
        }
        map.iter()
            .filter_map(|(k, v)| {
                self.keys.get(k).map(|&key| t::Annotation {
                    key,
                    value: v.clone(),
                })
            })
            .collect()
    }
}

pub fn catalog(cluster: &Cluster, exposure: &Exposure, settings: &[(String, String)]) -> Catalog {
    let keys: Vec<String> = exposed_keys(cluster, exposure).into_iter().collect();
    let index: HashMap<String, u32> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.clone(), i as u32))
        .collect();
    let mut catalog =
        Catalog {
            wit: t::Catalog {
                generation: cluster.config_id,
                resources: Vec::new(),
                flavors: Vec::new(),
                flavor_resources: Vec::new(),
                nodes: Vec::new(),
                cluster_queues: Vec::new(),
                local_queues: Vec::new(),
                annotation_keys: keys,
                settings: settings
                    .iter()
                    .map(|(k, v)| t::Setting {
                        key: k.clone(),
                        value: v.clone(),
                    })
                    .collect(),
                fair_sharing: cluster.settings.fair_sharing.as_ref().map(|strategies| {
                    t::FairSharing {
                        strategies: strategies
                            .iter()
                            .map(|s| match s {
                                PreemptionStrategy::LessThanOrEqualToFinalShare => {
                                    t::FairSharingStrategy::LessThanOrEqualToFinalShare
                                }
                                PreemptionStrategy::LessThanInitialShare => {
                                    t::FairSharingStrategy::LessThanInitialShare
                                }
                            })
                            .collect(),
                    }
                }),
                admission_fair_sharing: cluster.settings.admission_fair_sharing.as_ref().map(
                    |afs| t::AdmissionFairSharing {
                        half_life: afs.half_life,
                        sampling_interval: afs.sampling_interval,
                        resource_weights: cluster
                            .names
                            .resources()
                            .map(|(r, _)| afs.weight(r))
                            .collect(),
                    },
                ),
            },
            keys: index,
            exposure: exposure.clone(),
        };
    let names = &cluster.names;
    catalog.wit.resources = names.resources().map(|(_, n)| n.to_string()).collect();
    catalog.wit.flavors = names
        .flavors()
        .map(|(id, n)| t::Flavor {
            name: n.to_string(),
            annotations: cluster
                .flavor(id)
                .map(|f| catalog.annotations(&f.annotations))
                .unwrap_or_default(),
        })
        .collect();
    catalog.wit.flavor_resources = (0..names.n_fr())
        .map(|i| {
            let (f, r) = names.fr_parts(FrIdx(i as u32));
            t::FlavorResource {
                flavor: f.0,
                resource: r.0,
            }
        })
        .collect();
    let tree = &cluster.tree;
    catalog.wit.nodes = tree
        .nodes()
        .map(|(id, node)| t::Node {
            name: node.name.clone(),
            kind: match node.kind {
                NodeKind::ClusterQueue => t::NodeKind::ClusterQueue,
                NodeKind::Cohort => t::NodeKind::Cohort,
            },
            parent: node.parent.map(|p| p.0),
            height: node.height,
            fair_weight: cluster
                .node_meta
                .get(id.index())
                .map_or(1000, |m| m.fair_weight),
            quotas: (0..tree.n_fr())
                .map(|i| FrIdx(i as u32))
                .filter(|&fr| {
                    tree.quota(id, fr) != Default::default() || tree.subtree_quota(id, fr) != 0
                })
                .map(|fr| {
                    let q = tree.quota(id, fr);
                    t::Quota {
                        fr: fr.0,
                        nominal: q.nominal,
                        borrowing_limit: q.borrowing_limit,
                        lending_limit: q.lending_limit,
                        subtree: tree.subtree_quota(id, fr),
                        guaranteed: tree.local_quota(id, fr),
                    }
                })
                .collect(),
            annotations: cluster
                .node_meta
                .get(id.index())
                .map(|m| catalog.annotations(&m.annotations))
                .unwrap_or_default(),
        })
        .collect();
    catalog.wit.cluster_queues = cluster
        .cluster_queues
        .iter()
        .map(|cq| t::ClusterQueue {
            name: cq.name.clone(),
            node: cq.node.0,
            preemption: t::PreemptionConfig {
                within_cluster_queue: match cq.preemption.within_cluster_queue {
                    WithinClusterQueue::Never => t::WithinClusterQueue::Never,
                    WithinClusterQueue::LowerPriority => t::WithinClusterQueue::LowerPriority,
                    WithinClusterQueue::LowerOrNewerEqualPriority => {
                        t::WithinClusterQueue::LowerOrNewerEqualPriority
                    }
                },
                reclaim_within_cohort: match cq.preemption.reclaim_within_cohort {
                    ReclaimWithinCohort::Never => t::ReclaimWithinCohort::Never,
                    ReclaimWithinCohort::LowerPriority => t::ReclaimWithinCohort::LowerPriority,
                    ReclaimWithinCohort::Any => t::ReclaimWithinCohort::Any,
                },
                borrow_within_cohort: match cq.preemption.borrow_within_cohort {
                    BorrowWithinCohortPolicy::Never => t::BorrowWithinCohort::Never,
                    BorrowWithinCohortPolicy::LowerPriority => t::BorrowWithinCohort::LowerPriority,
                },
                max_priority_threshold: cq.preemption.max_priority_threshold,
            },
            fungibility: t::Fungibility {
                when_can_borrow: policy(cq.fungibility.when_can_borrow),
                when_can_preempt: policy(cq.fungibility.when_can_preempt),
                preference: match cq.fungibility.preference {
                    FungibilityPreference::BorrowingOverPreemption => {
                        t::FungibilityPreference::BorrowingOverPreemption
                    }
                    FungibilityPreference::PreemptionOverBorrowing => {
                        t::FungibilityPreference::PreemptionOverBorrowing
                    }
                },
            },
            queueing_strategy: match cq.strategy {
                QueueingStrategy::StrictFIFO => t::QueueingStrategy::StrictFifo,
                QueueingStrategy::BestEffortFIFO => t::QueueingStrategy::BestEffortFifo,
            },
            resource_groups: cq
                .resource_groups
                .iter()
                .map(|g| t::ResourceGroup {
                    covered: g.covered.iter().map(|r| r.0).collect(),
                    flavors: g.flavors.iter().map(|f| f.0).collect(),
                })
                .collect(),
            admission_fair_sharing: cq.admission_fair_sharing,
        })
        .collect();
    catalog.wit.local_queues = cluster
        .local_queues
        .iter()
        .map(|lq| t::LocalQueue {
            namespace: lq.namespace.clone(),
            name: lq.name.clone(),
            cluster_queue: lq.cluster_queue.map(|c| c.0),
            fair_weight: lq.fair_weight,
        })
        .collect();
    catalog
}

/// A catalog with nothing in it (for the smoke test of a newly loaded plugin).
pub fn empty_catalog() -> t::Catalog {
    t::Catalog {
        generation: 0,
        resources: Vec::new(),
        flavors: Vec::new(),
        flavor_resources: Vec::new(),
        nodes: Vec::new(),
        cluster_queues: Vec::new(),
        local_queues: Vec::new(),
        annotation_keys: Vec::new(),
        settings: Vec::new(),
        fair_sharing: None,
        admission_fair_sharing: None,
    }
}

fn policy(p: FungibilityPolicy) -> t::FungibilityPolicy {
    match p {
        FungibilityPolicy::MayStopSearch => t::FungibilityPolicy::MayStopSearch,
        FungibilityPolicy::TryNextFlavor => t::FungibilityPolicy::TryNextFlavor,
    }
}

/// The entries of `map` whose keys pass, interned (in key order).
fn entries(strings: &mut StringTable, map: &StrMap, pass: impl Fn(&str) -> bool) -> Pairs {
    map.iter()
        .filter(|(k, _)| pass(k))
        .map(|(k, v)| (strings.intern(k), strings.intern(v)))
        .collect()
}

/// `no-string`: a `string-id` that names no string (the job columns of a workload without an
/// owner).
pub use super::strings::NONE as NO_STRING;

/// A `workload` record with nothing in it, to be filled by [`fill_workload`].
pub fn empty_workload() -> t::Workload {
    t::Workload {
        id: 0,
        identity: None,
        cluster_queue: 0,
        local_queue: None,
        priority: 0,
        created: 0,
        queued: 0,
        requeue_count: 0,
        requeue_reason: None,
        pod_sets: None,
    }
}

/// A workload as plugins see it; with `identity`, who it is, its strings interned in
/// `strings`.
pub fn workload(
    cluster: &Cluster,
    catalog: &Catalog,
    strings: &mut StringTable,
    id: WorkloadId,
    cq: CqId,
    queued: Millis,
    identity: bool,
) -> t::Workload {
    let mut out = empty_workload();
    fill_workload(&mut out, cluster, id, cq, queued, true);
    fill_identity(&mut out.identity, identity, cluster, catalog, strings, id);
    out
}

/// [`workload`] but its identity, written over `out`, whose lists are refilled in place (a
/// record kept from an earlier call allocates nothing for a workload no larger than the one
/// it held); its podSets only with `pod_sets` (else `none`). [`fill_identity`] writes the
/// rest.
pub fn fill_workload(
    out: &mut t::Workload,
    cluster: &Cluster,
    id: WorkloadId,
    cq: CqId,
    queued: Millis,
    pod_sets: bool,
) {
    let wl = cluster.workload(id);
    out.id = id.0;
    out.cluster_queue = cq.0;
    out.local_queue = wl.lq.map(|l| l.0);
    out.priority = wl.effective_priority();
    out.created = wl.created;
    out.queued = queued;
    out.requeue_count = wl.requeue_count;
    out.requeue_reason = wl.requeue_reason.map(requeue_reason);
    if !pod_sets {
        out.pod_sets = None;
        return;
    }
    fill_pod_sets(out.pod_sets.get_or_insert_with(Vec::new), cluster, id);
}

/// A workload's podSets written over `out` (lists refilled in place).
pub fn fill_pod_sets(out: &mut Vec<t::PodSet>, cluster: &Cluster, id: WorkloadId) {
    let wl = cluster.workload(id);
    out.truncate(wl.pod_sets.len());
    for (i, ps) in wl.pod_sets.iter().enumerate() {
        let count = ps.count.max(0) as u32;
        let min_count = ps.min_count.map(|m| m.max(0) as u32);
        let per_pod = ps.requests.iter().map(|&(r, amount)| t::ResourceAmount {
            resource: r.0,
            amount,
        });
        match out.get_mut(i) {
            Some(p) => {
                p.count = count;
                p.min_count = min_count;
                p.per_pod.clear();
                p.per_pod.extend(per_pod);
            }
            None => out.push(t::PodSet {
                count,
                min_count,
                per_pod: per_pod.collect(),
            }),
        }
    }
}

/// A workload's `identity` written over `slot` (lists refilled in place) when the plugin
/// reads identity, else `none`.
pub fn fill_identity(
    slot: &mut Option<t::WorkloadIdentity>,
    identity: bool,
    cluster: &Cluster,
    catalog: &Catalog,
    strings: &mut StringTable,
    id: WorkloadId,
) {
    if !identity {
        *slot = None;
        return;
    }
    let ident = catalog.ident(strings, cluster, id);
    let out = slot.get_or_insert_with(|| t::WorkloadIdentity {
        namespace: NO_STRING,
        owner: None,
        labels: Vec::new(),
        annotations: Vec::new(),
    });
    out.namespace = ident.namespace;
    out.owner = ident.owner();
    fill_entries(&mut out.labels, strings.labels(ident));
    fill_entries(&mut out.annotations, strings.annotations(ident));
}

/// Interned pairs as WIT entries, written over `out`.
fn fill_entries(out: &mut Vec<t::Entry>, pairs: &[(u32, u32)]) {
    out.clear();
    out.extend(pairs.iter().map(|&(key, value)| t::Entry { key, value }));
}

/// The WIT case of a `WorkloadInfo::requeue_reason` (the reason of the eviction that requeued
/// the workload, as the scheduler records it).
pub fn requeue_reason(reason: EvictionReason) -> t::RequeueReason {
    match reason {
        EvictionReason::Preempted => t::RequeueReason::Preempted,
        EvictionReason::AdmissionCheck => t::RequeueReason::AdmissionCheck,
        EvictionReason::PodsReadyTimeout => t::RequeueReason::PodsReadyTimeout,
    }
}

/// The preemptor's requests as WIT amounts, written over `out`.
pub fn fill_fr_amounts(out: &mut Vec<t::FrAmount>, v: &[(FrIdx, i64)]) {
    out.clear();
    out.extend(
        v.iter()
            .map(|&(fr, amount)| t::FrAmount { fr: fr.0, amount }),
    );
}

/// Every node of the trees rooted at `roots`, each with its usage of every flavor-resource
/// it uses, written over `out` (entries and their lists refilled in place).
pub fn fill_tree_usage(
    out: &mut Vec<t::NodeUsage>,
    cluster: &Cluster,
    usage: &crate::quota::Usage,
    roots: impl IntoIterator<Item = NodeId>,
) {
    let mut n = 0;
    let mut seen_roots: Vec<NodeId> = Vec::new();
    for root in roots {
        if seen_roots.contains(&root) {
            continue;
        }
        seen_roots.push(root);
        let mut stack = vec![root];
        while let Some(node) = stack.pop() {
            let amounts = usage.of(node).iter().enumerate().filter(|(_, a)| **a != 0);
            let fr_amounts = amounts.map(|(fr, &amount)| t::FrAmount {
                fr: fr as u32,
                amount,
            });
            match out.get_mut(n) {
                Some(entry) => {
                    entry.node = node.0;
                    entry.usage.clear();
                    entry.usage.extend(fr_amounts);
                }
                None => out.push(t::NodeUsage {
                    node: node.0,
                    usage: fr_amounts.collect(),
                }),
            }
            n += 1;
            // Children in tree order after their parent (depth first).
            stack.extend(cluster.tree.node(node).children.iter().rev().copied());
        }
    }
    out.truncate(n);
}

/// Admission fair sharing's figures for `lqs` (each once, in the order given).
pub fn local_queue_usage(
    cluster: &Cluster,
    lqs: impl IntoIterator<Item = LqId>,
) -> Vec<t::LocalQueueUsage> {
    let Some(afs) = &cluster.settings.admission_fair_sharing else {
        return Vec::new();
    };
    let mut out: Vec<t::LocalQueueUsage> = Vec::new();
    for lq in lqs {
        if out.iter().any(|u| u.local_queue == lq.0) {
            continue;
        }
        let weight = cluster.local_queues[lq.index()].fair_weight;
        let n = cluster.names.resources().count();
        let padded = |v: &[f64]| {
            let mut v = v.to_vec();
            v.resize(n, 0.0);
            v
        };
        out.push(t::LocalQueueUsage {
            local_queue: lq.0,
            consumed: padded(cluster.lq_usage.consumed(lq)),
            penalty: padded(cluster.lq_usage.penalty(lq)),
            weighted: cluster.lq_usage.weighted(lq, afs, weight),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFESTS: &str = "
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources:
      - {name: cpu, nominalQuota: 4}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: prod, name: main}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  namespace: prod
  name: nb
  labels: {team: ml, kueue.x-k8s.io/tier: gold}
  annotations: {example.com/ckpt: 5m, wasq.dev/cost: '3'}
  ownerReferences:
  - {apiVersion: kubeflow.org/v1, kind: Notebook, name: explore, uid: u1, controller: true}
  - {apiVersion: v1, kind: ConfigMap, name: other, uid: u2}
spec:
  queueName: main
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers:
        - {name: c, image: pause, resources: {requests: {cpu: '1'}}}
";

    fn cluster() -> Cluster {
        let m = crate::api::load::load_str(std::path::Path::new("t.yaml"), MANIFESTS)
            .expect("valid manifests");
        crate::cluster::build_cluster(&m, &|_| 0, 0).expect("builds")
    }

    #[test]
    fn a_workload_carries_its_identity_filtered_by_the_allow_list() {
        let cluster = cluster();
        let id = WorkloadId(0);
        let owner = cluster
            .workload(id)
            .owner
            .as_deref()
            .expect("controller owner");
        assert_eq!(
            (
                owner.kind.as_str(),
                owner.api_version.as_str(),
                owner.name.as_str()
            ),
            ("Notebook", "kubeflow.org/v1", "explore")
        );
        let strings_of = |exposure: &Exposure| {
            let catalog = catalog(&cluster, exposure, &[]);
            let mut table = StringTable::default();
            table.begin();
            let wl = workload(&cluster, &catalog, &mut table, id, CqId(0), 0, true);
            let wl = wl.identity.expect("identity asked for");
            let sent = table.take().expect("the identity's strings");
            assert_eq!(sent.first, 0);
            let s = |i: u32| sent.values[i as usize].clone();
            let pairs = |e: &[t::Entry]| {
                e.iter()
                    .map(|e| format!("{}={}", s(e.key), s(e.value)))
                    .collect::<Vec<_>>()
            };
            let o = wl.owner.expect("owner");
            (
                s(wl.namespace),
                [s(o.kind), s(o.api_version), s(o.name)],
                pairs(&wl.labels),
                pairs(&wl.annotations),
            )
        };
        // The default allow-list: Kueue's and wasq's keys only.
        let (ns, owner, labels, annotations) = strings_of(&Exposure::default());
        assert_eq!(ns, "prod");
        assert_eq!(owner, ["Notebook", "kubeflow.org/v1", "explore"]);
        assert_eq!(labels, ["kueue.x-k8s.io/tier=gold"]);
        assert_eq!(annotations, ["wasq.dev/cost=3"]);
        // A plugin's own keys on top.
        let own = Exposure::default().with(Some(&Exposure {
            annotations: vec!["example.com/".into()],
            labels: vec!["team".into()],
        }));
        let (_, _, labels, annotations) = strings_of(&own);
        assert_eq!(labels, ["kueue.x-k8s.io/tier=gold", "team=ml"]);
        assert_eq!(annotations, ["example.com/ckpt=5m", "wasq.dev/cost=3"]);
    }

    /// A second Workload: no owner, no labels or annotations the plugins see, two podSets.
    const PLAIN: &str = "
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {namespace: prod, name: plain, labels: {team: ml}}
spec:
  queueName: main
  podSets:
  - name: a
    count: 2
    template:
      spec:
        containers:
        - {name: c, image: pause, resources: {requests: {cpu: '1'}}}
  - name: b
    count: 3
    template:
      spec:
        containers:
        - {name: c, image: pause, resources: {requests: {cpu: '2'}}}
";

    #[test]
    fn refilled_records_hold_only_what_the_latest_call_sends() {
        let m = crate::api::load::load_str(
            std::path::Path::new("t.yaml"),
            &format!("{MANIFESTS}{PLAIN}"),
        )
        .expect("valid manifests");
        let cluster = crate::cluster::build_cluster(&m, &|_| 0, 0).expect("builds");
        let id = |key: &str| {
            (0..cluster.workloads.len() as u32)
                .map(WorkloadId)
                .find(|&w| cluster.workload(w).key == key)
                .expect("loaded")
        };
        let (nb, plain) = (id("prod/nb"), id("prod/plain"));
        let catalog = catalog(&cluster, &Exposure::default(), &[]);
        let mut strings = StringTable::default();
        strings.begin();
        // A workload record refilled over one with more podSets, labels and an owner.
        let mut record = workload(&cluster, &catalog, &mut strings, plain, CqId(0), 5, true);
        assert_eq!(record.pod_sets.as_ref().map(Vec::len), Some(2));
        let refill = |record: &mut t::Workload, strings: &mut StringTable, id, queued, identity| {
            fill_workload(record, &cluster, id, CqId(0), queued, true);
            fill_identity(
                &mut record.identity,
                identity,
                &cluster,
                &catalog,
                strings,
                id,
            );
        };
        refill(&mut record, &mut strings, nb, 7, true);
        let expected = workload(&cluster, &catalog, &mut strings, nb, CqId(0), 7, true);
        assert_eq!(format!("{record:?}"), format!("{expected:?}"));
        assert_eq!(record.pod_sets.as_ref().map(Vec::len), Some(1));
        refill(&mut record, &mut strings, plain, 5, true);
        let expected = workload(&cluster, &catalog, &mut strings, plain, CqId(0), 5, true);
        assert_eq!(format!("{record:?}"), format!("{expected:?}"));
        let identity = record.identity.as_ref().expect("identity");
        assert!(identity.labels.is_empty() && identity.owner.is_none());
        // Without identity the record says nothing of who the workload is.
        refill(&mut record, &mut strings, nb, 7, false);
        let expected = workload(&cluster, &catalog, &mut strings, nb, CqId(0), 7, false);
        assert_eq!(format!("{record:?}"), format!("{expected:?}"));
        assert!(record.identity.is_none());
        // Without podSets (a plugin whose `needs` lack `pod-sets`) the record has none, the
        // rest as before; asked again, they are back.
        fill_workload(&mut record, &cluster, nb, CqId(0), 7, false);
        assert!(record.pod_sets.is_none());
        assert_eq!(
            format!(
                "{:?}",
                t::Workload {
                    pod_sets: expected.pod_sets.clone(),
                    ..record.clone()
                }
            ),
            format!("{expected:?}")
        );
        fill_workload(&mut record, &cluster, plain, CqId(0), 5, true);
        assert_eq!(record.pod_sets.as_ref().map(Vec::len), Some(2));
    }

    #[test]
    fn requeue_reasons_are_the_wit_cases() {
        // The reasons the scheduler records (`complete_eviction`, `release_for_retry`), and
        // the names Kueue gives them.
        let all = [
            EvictionReason::Preempted,
            EvictionReason::AdmissionCheck,
            EvictionReason::PodsReadyTimeout,
        ];
        assert_eq!(
            all.map(requeue_reason),
            [
                t::RequeueReason::Preempted,
                t::RequeueReason::AdmissionCheck,
                t::RequeueReason::PodsReadyTimeout,
            ]
        );
        assert_eq!(
            all.map(EvictionReason::as_str),
            ["Preempted", "AdmissionCheck", "PodsReadyTimeout"]
        );
        assert_eq!(
            all.map(|r| EvictionReason::of_kueue(r.as_str())),
            all.map(Some)
        );
        assert_eq!(EvictionReason::of_kueue("InactiveWorkload"), None);
    }
}
