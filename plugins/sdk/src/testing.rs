//! Builders for native unit tests of plugins: a [`CatalogBuilder`] that derives subtree and
//! guaranteed quotas the way the host does, and small constructors for requests.
//!
//! Nothing here calls the host, so it works in `cargo test` on the build machine.

use crate::catalog::Catalog;
use crate::identity::{Identity, NO_STRING};
use crate::kueue::{self, default_fungibility, default_preemption};
use crate::ordering::Head;
use crate::preemption::{Candidate, CandidateKind};
use crate::quota::QuotaView;
use crate::types::{
    self, AdmissionFairSharing, Annotation, ClusterQueue, ClusterQueueId, Entry, FairSharing,
    FairSharingStrategy, FlavorResource, FrAmount, FrId, Fungibility, LocalQueue, LocalQueueId,
    LocalQueueUsage, Millis, Node, NodeId, NodeKind, NodeUsage, Owner, PreemptionConfig, Quantity,
    QueueingStrategy, Quota, RequeueReason, Setting, StringId, Workload,
};

/// Builds a [`Catalog`] node by node. Nodes get ids in the order they are added; every
/// ClusterQueue node also gets a ClusterQueue entry (ids in order too), with Kueue's default
/// preemption and fungibility settings.
#[derive(Debug, Clone)]
pub struct CatalogBuilder {
    raw: types::Catalog,
    /// Declared quotas per node.
    declared: Vec<Vec<Declared>>,
}

impl Default for CatalogBuilder {
    fn default() -> CatalogBuilder {
        CatalogBuilder::new()
    }
}

/// A declared quota: (fr, nominal, borrowing limit, lending limit).
type Declared = (FrId, i64, Option<i64>, Option<i64>);

impl CatalogBuilder {
    /// An empty catalog at generation 1.
    pub fn new() -> CatalogBuilder {
        let mut raw = Catalog::empty().raw().clone();
        raw.generation = 1;
        CatalogBuilder {
            raw,
            declared: Vec::new(),
        }
    }

    /// Adds `n` flavor-resources: flavor `i` (named `f<i>`) with resource 0 (`cpu`).
    pub fn flavor_resources(mut self, n: u32) -> CatalogBuilder {
        if self.raw.resources.is_empty() {
            self.raw.resources.push("cpu".into());
        }
        for _ in 0..n {
            let flavor = self.raw.flavors.len() as u32;
            self.raw.flavors.push(types::Flavor {
                name: format!("f{flavor}"),
                annotations: Vec::new(),
            });
            self.raw.flavor_resources.push(FlavorResource {
                flavor,
                resource: 0,
            });
        }
        self
    }

    fn resource_id(&mut self, name: &str) -> u32 {
        match self.raw.resources.iter().position(|r| r == name) {
            Some(i) => i as u32,
            None => {
                self.raw.resources.push(name.into());
                (self.raw.resources.len() - 1) as u32
            }
        }
    }

    /// Adds a flavor (named `f<i>`) with one flavor-resource per resource name, in order
    /// (resources are added by name where new): `resource_flavors(&["cpu", "gpu"])` on an empty
    /// builder gives flavor-resources 0 = (f0, cpu) and 1 = (f0, gpu).
    pub fn resource_flavors(mut self, resources: &[&str]) -> CatalogBuilder {
        let flavor = self.raw.flavors.len() as u32;
        self.raw.flavors.push(types::Flavor {
            name: format!("f{flavor}"),
            annotations: Vec::new(),
        });
        for name in resources {
            let resource = self.resource_id(name);
            self.raw
                .flavor_resources
                .push(FlavorResource { flavor, resource });
        }
        self
    }

    /// Turns fair sharing on with these preemption strategies.
    pub fn fair_sharing(mut self, strategies: &[FairSharingStrategy]) -> CatalogBuilder {
        self.raw.fair_sharing = Some(FairSharing {
            strategies: strategies.to_vec(),
        });
        self
    }

    /// Turns admission fair sharing on (`resource_weights` indexed by resource, 1.0 beyond).
    pub fn admission_fair_sharing(
        mut self,
        half_life: Millis,
        sampling_interval: Millis,
        resource_weights: &[f64],
    ) -> CatalogBuilder {
        let mut weights = resource_weights.to_vec();
        weights.resize(weights.len().max(self.raw.resources.len()), 1.0);
        self.raw.admission_fair_sharing = Some(AdmissionFairSharing {
            half_life,
            sampling_interval,
            resource_weights: weights,
        });
        self
    }

    /// Sets the last added ClusterQueue's `admission-fair-sharing` flag.
    pub fn queue_admission_fair_sharing(mut self, on: bool) -> CatalogBuilder {
        if let Some(cq) = self.raw.cluster_queues.last_mut() {
            cq.admission_fair_sharing = on;
        }
        self
    }

    /// Sets a node's `fair-weight` (milli-units; 1000 by default).
    pub fn fair_weight(mut self, node: NodeId, weight_milli: Quantity) -> CatalogBuilder {
        self.raw.nodes[node as usize].fair_weight = weight_milli;
        self
    }

    /// Adds a LocalQueue `namespace/name` of a ClusterQueue with a `fair-weight` (milli-units).
    /// LocalQueues get ids in the order they are added.
    pub fn local_queue(
        mut self,
        namespace: &str,
        name: &str,
        cluster_queue: Option<ClusterQueueId>,
        fair_weight: Quantity,
    ) -> CatalogBuilder {
        self.raw.local_queues.push(LocalQueue {
            namespace: namespace.into(),
            name: name.into(),
            cluster_queue,
            fair_weight,
        });
        self
    }

    /// Adds an annotation key to the exposed keys (its index is the order of addition).
    pub fn annotation_key(mut self, key: &str) -> CatalogBuilder {
        self.raw.annotation_keys.push(key.into());
        self
    }

    fn key(&mut self, key: &str) -> u32 {
        match self.raw.annotation_keys.iter().position(|k| k == key) {
            Some(i) => i as u32,
            None => {
                self.raw.annotation_keys.push(key.into());
                (self.raw.annotation_keys.len() - 1) as u32
            }
        }
    }

    /// Sets an annotation on a flavor (adding the key if needed).
    pub fn flavor_annotation(mut self, flavor: u32, key: &str, value: &str) -> CatalogBuilder {
        let key = self.key(key);
        self.raw.flavors[flavor as usize]
            .annotations
            .push(Annotation {
                key,
                value: value.into(),
            });
        self
    }

    /// Sets an annotation on a node (adding the key if needed).
    pub fn node_annotation(mut self, node: NodeId, key: &str, value: &str) -> CatalogBuilder {
        let key = self.key(key);
        self.raw.nodes[node as usize].annotations.push(Annotation {
            key,
            value: value.into(),
        });
        self
    }

    /// Adds a plugin setting.
    pub fn setting(mut self, key: &str, value: &str) -> CatalogBuilder {
        self.raw.settings.push(Setting {
            key: key.into(),
            value: value.into(),
        });
        self
    }

    fn node(mut self, name: &str, kind: NodeKind, parent: Option<NodeId>) -> CatalogBuilder {
        self.raw.nodes.push(Node {
            name: name.into(),
            kind,
            parent,
            height: 0,
            fair_weight: 1000,
            quotas: Vec::new(),
            annotations: Vec::new(),
        });
        self.declared.push(Vec::new());
        self
    }

    /// Adds a Cohort node.
    pub fn cohort(self, name: &str, parent: Option<NodeId>) -> CatalogBuilder {
        self.node(name, NodeKind::Cohort, parent)
    }

    /// Adds a ClusterQueue node and its ClusterQueue entry.
    pub fn cluster_queue(mut self, name: &str, parent: Option<NodeId>) -> CatalogBuilder {
        let node = self.raw.nodes.len() as u32;
        self.raw.cluster_queues.push(ClusterQueue {
            name: name.into(),
            node,
            preemption: default_preemption(),
            fungibility: default_fungibility(),
            queueing_strategy: QueueingStrategy::BestEffortFifo,
            resource_groups: Vec::new(),
            admission_fair_sharing: false,
        });
        self.node(name, NodeKind::ClusterQueue, parent)
    }

    /// Declares a node's quota for a flavor-resource.
    pub fn quota(
        mut self,
        node: NodeId,
        fr: FrId,
        nominal: i64,
        borrowing_limit: Option<i64>,
        lending_limit: Option<i64>,
    ) -> CatalogBuilder {
        self.declared[node as usize].push((fr, nominal, borrowing_limit, lending_limit));
        self
    }

    /// Sets the last added ClusterQueue's preemption settings.
    pub fn preemption(mut self, config: PreemptionConfig) -> CatalogBuilder {
        if let Some(cq) = self.raw.cluster_queues.last_mut() {
            cq.preemption = config;
        }
        self
    }

    /// Sets the last added ClusterQueue's flavor fungibility.
    pub fn fungibility(mut self, fungibility: Fungibility) -> CatalogBuilder {
        if let Some(cq) = self.raw.cluster_queues.last_mut() {
            cq.fungibility = fungibility;
        }
        self
    }

    /// Derives subtree and guaranteed quotas and heights (as the host does) and builds.
    pub fn build(mut self) -> Catalog {
        let n = self.raw.nodes.len();
        let n_fr = self.raw.flavor_resources.len().max(
            self.declared
                .iter()
                .flatten()
                .map(|d| d.0 as usize + 1)
                .max()
                .unwrap_or(0),
        );
        let mut nominal = vec![vec![0i64; n_fr]; n];
        let mut borrowing = vec![vec![None; n_fr]; n];
        let mut lending = vec![vec![None; n_fr]; n];
        let mut declared = vec![vec![false; n_fr]; n];
        for (i, list) in self.declared.iter().enumerate() {
            for &(fr, nom, b, l) in list {
                let f = fr as usize;
                nominal[i][f] = nom;
                borrowing[i][f] = b;
                lending[i][f] = l;
                declared[i][f] = true;
            }
        }
        let mut subtree = nominal.clone();
        let mut local = vec![vec![0i64; n_fr]; n];
        let mut height = vec![0u32; n];
        // Children before parents: process by depth, deepest first.
        let depth = |mut i: usize| {
            let mut d = 0;
            while let Some(p) = self.raw.nodes[i].parent {
                i = p as usize;
                d += 1;
            }
            d
        };
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(depth(i)));
        for &i in &order {
            for f in 0..n_fr {
                local[i][f] = match lending[i][f] {
                    Some(limit) => (subtree[i][f] - limit).max(0),
                    None => 0,
                };
            }
            if let Some(p) = self.raw.nodes[i].parent {
                let p = p as usize;
                for f in 0..n_fr {
                    subtree[p][f] += subtree[i][f] - local[i][f];
                }
                let child_height = match self.raw.nodes[i].kind {
                    NodeKind::Cohort => height[i] + 1,
                    NodeKind::ClusterQueue => 1,
                };
                height[p] = height[p].max(child_height);
            }
        }
        for (i, node) in self.raw.nodes.iter_mut().enumerate() {
            node.height = height[i];
            node.quotas = (0..n_fr)
                .filter(|&f| declared[i][f] || subtree[i][f] != 0)
                .map(|f| Quota {
                    fr: f as FrId,
                    nominal: nominal[i][f],
                    borrowing_limit: borrowing[i][f],
                    lending_limit: lending[i][f],
                    subtree: subtree[i][f],
                    guaranteed: local[i][f],
                })
                .collect();
        }
        Catalog::new(self.raw)
    }
}

/// A workload of a ClusterQueue with one empty podSet.
pub fn workload(id: u32, cluster_queue: u32, priority: i64, created: i64) -> Workload {
    Workload {
        id,
        cluster_queue,
        local_queue: None,
        priority,
        created,
        queued: created,
        requeue_count: 0,
        requeue_reason: None,
        pod_sets: Some(vec![types::PodSet {
            count: 1,
            min_count: None,
            per_pod: Vec::new(),
        }]),
        identity: None,
    }
}

/// `workload`'s identity, made empty (in no namespace, without owner, labels or annotations)
/// if it has none: what the host sends a plugin whose `needs` include `identity`.
fn identity_of(workload: &mut Workload) -> &mut types::WorkloadIdentity {
    workload
        .identity
        .get_or_insert_with(|| types::WorkloadIdentity {
            namespace: NO_STRING,
            owner: None,
            labels: Vec::new(),
            annotations: Vec::new(),
        })
}

/// The id of `value` in the catalog's string table, adding it if new (the host interns a
/// plugin's strings; tests build them with this).
pub fn intern(catalog: &mut Catalog, value: &str) -> StringId {
    catalog.intern(value)
}

/// `workload` in `namespace`, owned by the job `(kind, api_version, name)` (`None`: a bare
/// Workload), its strings interned in `catalog`.
pub fn with_identity(
    catalog: &mut Catalog,
    mut workload: Workload,
    namespace: &str,
    owner: Option<(&str, &str, &str)>,
) -> Workload {
    let namespace = catalog.intern(namespace);
    let owner = owner.map(|(kind, api_version, name)| Owner {
        kind: catalog.intern(kind),
        api_version: catalog.intern(api_version),
        name: catalog.intern(name),
    });
    let identity = identity_of(&mut workload);
    identity.namespace = namespace;
    identity.owner = owner;
    workload
}

/// Adds the label `key=value` to `workload`, interned in `catalog`.
pub fn with_label(
    catalog: &mut Catalog,
    mut workload: Workload,
    key: &str,
    value: &str,
) -> Workload {
    let entry = Entry {
        key: catalog.intern(key),
        value: catalog.intern(value),
    };
    identity_of(&mut workload).labels.push(entry);
    workload
}

/// Adds the annotation `key=value` to `workload`, interned in `catalog`.
pub fn with_annotation(
    catalog: &mut Catalog,
    mut workload: Workload,
    key: &str,
    value: &str,
) -> Workload {
    let entry = Entry {
        key: catalog.intern(key),
        value: catalog.intern(value),
    };
    identity_of(&mut workload).annotations.push(entry);
    workload
}

/// A candidate of `cluster_queue` as Kueue lists its own queue's (`same-queue`), admitted at
/// `admitted`, holding nothing; identity as [`with_identity`] gives a workload (a namespace
/// and job of `workload`'s). Set the fields a test needs.
pub fn candidate(workload: &Workload, priority: i64, admitted: Millis) -> Candidate {
    Candidate {
        workload: workload.id,
        cluster_queue: workload.cluster_queue,
        local_queue: workload.local_queue,
        namespace: workload.namespace_id(),
        owner: Identity::owner(workload),
        labels: workload.label_entries().to_vec(),
        kind: CandidateKind::SameQueue,
        lca: None,
        priority,
        created: workload.created,
        admitted,
        requeue_count: workload.requeue_count,
        requeue_reason: workload.requeue_reason,
        evicting: false,
        usage: Vec::new(),
        annotations: workload.annotation_entries().to_vec(),
        local_queue_usage: None,
    }
}

/// A cycle head of a ClusterQueue: first pass, within nominal quota, queued at creation under
/// Kueue's key `(-priority, created, 0)`. Set `key` to a policy's own key to test
/// `order_heads` against it.
pub fn head(workload: u32, cluster_queue: u32, priority: i64, created: i64) -> Head {
    Head {
        workload,
        cluster_queue,
        local_queue: None,
        has_reservation: false,
        borrow_level: 0,
        priority,
        created,
        queued: created,
        requeue_count: 0,
        requeue_reason: None,
        key: kueue::sort_key_with_priority(priority, created),
        usage: Vec::new(),
        namespace: NO_STRING,
        owner: None,
        labels: Vec::new(),
        annotations: Vec::new(),
    }
}

/// `head` with the identity of `workload` (namespace, owner, labels, annotations, LocalQueue).
pub fn head_of(mut head: Head, workload: &Workload) -> Head {
    head.local_queue = workload.local_queue;
    head.namespace = workload.namespace_id();
    head.owner = Identity::owner(workload);
    head.labels = workload.label_entries().to_vec();
    head.annotations = workload.annotation_entries().to_vec();
    head
}

/// `workload` after `count` evictions, the last one for `reason` (`count` = 0: never requeued,
/// no reason).
pub fn requeued(mut workload: Workload, count: u32, reason: RequeueReason) -> Workload {
    workload.requeue_count = count;
    workload.requeue_reason = (count > 0).then_some(reason);
    workload
}

/// The `tree-usage` the host would send for the trees rooted at `roots`: each node of them,
/// breadth first, with its usage of every flavor-resource it uses (as the host, it leaves out
/// amounts of 0), after adding each `(node, fr, amount)` of `adds` in turn with Kueue's
/// bubbling (so cohorts hold what their children use beyond their guaranteed quota). Read it
/// with [`QuotaView::from_usage_table`].
pub fn usage_table(
    catalog: &Catalog,
    roots: &[NodeId],
    adds: &[(NodeId, FrId, Quantity)],
) -> Vec<NodeUsage> {
    let all: Vec<FrId> = (0..catalog.flavor_resources.len() as FrId).collect();
    let mut view = QuotaView::new(catalog, &all);
    for &(node, fr, amount) in adds {
        view.add_usage(node, fr, amount);
    }
    let mut nodes: Vec<NodeId> = Vec::new();
    for &root in roots {
        if nodes.contains(&root) {
            continue;
        }
        let mut i = nodes.len();
        nodes.push(root);
        while i < nodes.len() {
            nodes.extend_from_slice(catalog.children(nodes[i]));
            i += 1;
        }
    }
    nodes
        .into_iter()
        .map(|node| NodeUsage {
            node,
            usage: all
                .iter()
                .map(|&fr| FrAmount {
                    fr,
                    amount: view.usage(node, fr),
                })
                .filter(|u| u.amount != 0)
                .collect(),
        })
        .collect()
}

/// No usage: the `tree-usage` of a request to a plugin that does not need it.
pub fn no_usage_table() -> Vec<NodeUsage> {
    Vec::new()
}

/// Admission fair sharing's figures for a LocalQueue with the given weighted usage (and no
/// per-resource detail).
pub fn local_queue_usage(local_queue: LocalQueueId, weighted: f64) -> LocalQueueUsage {
    LocalQueueUsage {
        local_queue,
        consumed: Vec::new(),
        penalty: Vec::new(),
        weighted,
    }
}

/// A node's usage of flavor-resources, as `(fr, amount)` pairs: an entry of a preemption
/// request's `usage` (`Request { usage: vec![node_usage(0, &[(0, 10)])], .. }`) or of a
/// `tree-usage`.
pub fn node_usage(node: NodeId, pairs: &[(FrId, Quantity)]) -> NodeUsage {
    NodeUsage {
        node,
        usage: amounts(pairs),
    }
}

/// Amounts of single flavor-resources, as `(fr, amount)` pairs.
pub fn amounts(pairs: &[(FrId, Quantity)]) -> Vec<FrAmount> {
    pairs
        .iter()
        .map(|&(fr, amount)| FrAmount { fr, amount })
        .collect()
}

/// A dispatch cluster named `name`, connected or not, without labels, queue or copy.
pub fn dispatch_cluster(name: &str, connected: bool) -> crate::dispatch::Cluster {
    crate::dispatch::Cluster {
        name: name.into(),
        labels: Vec::new(),
        connected,
        lost_since: None,
        queue: None,
        copy_since: None,
    }
}

/// A dispatch request at `now` over `clusters` for a workload `ns/w` (LocalQueue `lq`, no
/// podSets or labels), nothing nominated yet.
pub fn dispatch_request(
    now: Millis,
    clusters: Vec<crate::dispatch::Cluster>,
) -> crate::dispatch::Request {
    crate::dispatch::Request {
        now,
        workload: crate::dispatch::Workload {
            namespace: "ns".into(),
            name: "w".into(),
            local_queue: "lq".into(),
            priority: 0,
            created: 0,
            reserved: 0,
            pod_sets: Vec::new(),
            labels: Vec::new(),
        },
        clusters,
        nominated: Vec::new(),
        last_nominated: None,
    }
}
