//! The domain tree of one TAS ResourceFlavor (Kueue's `topologyTree` and the capacity part of
//! `TASFlavorSnapshot`): which nodes count, their domains level by level, and each leaf's
//! allocatable capacity.
//!
//! A node counts when it is schedulable and Ready, carries every level's label and matches the
//! flavor's `nodeLabels` (Kueue's `NodeMatchesFlavor`). A leaf is a node when the lowest level
//! is `kubernetes.io/hostname`, else a lowest-level domain whose capacity is the sum of its
//! nodes'.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{Node, NodeCondition, Taint};

use super::LeafTable;
use crate::api::Quantity;
use crate::api::topology::HOSTNAME_LABEL;

/// The resource every pod also requests once (Kueue's `OnePodRequest`).
pub const PODS: &str = "pods";

/// Index of a domain in its tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DomainId(pub u32);

impl DomainId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One topology domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domain {
    /// 0 = the highest level.
    pub level: usize,
    pub parent: Option<DomainId>,
    pub children: Vec<DomainId>,
    /// Its value at each level from the highest down to its own.
    pub values: Vec<String>,
    /// The leaf index of a lowest-level domain.
    pub leaf: Option<usize>,
}

/// What placement needs of a leaf's node, when leaves are nodes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LeafNode {
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
}

/// The domains of one Topology for one flavor, with each leaf's allocatable capacity.
#[derive(Debug, Clone, PartialEq)]
pub struct DomainTree {
    /// The Topology's name (as Kueue's messages name it).
    pub topology: String,
    /// Level labels, highest first.
    pub levels: Vec<String>,
    pub domains: Vec<Domain>,
    /// Domains per level, each level sorted by values.
    pub per_level: Vec<Vec<DomainId>>,
    /// The capacity columns: resource names, `pods` among them.
    pub resources: Vec<String>,
    /// Per leaf (in `per_level.last()` order): the leaf's domain and allocatable capacity in
    /// milli-units per column.
    pub leaves: Vec<DomainId>,
    pub capacity: LeafTable,
    /// Per leaf, its node's labels and taints when leaves are nodes.
    pub nodes: Vec<LeafNode>,
    /// The leaf each node of the tree belongs to (what the usage of pods outside TAS, reported
    /// per node, is charged to).
    pub node_leaf: HashMap<String, usize>,
}

fn ready_and_schedulable(n: &Node) -> bool {
    if n.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
        return false;
    }
    // Kueue's `schedulableAndReady`: a node counts only when it reports `Ready=True`, in the
    // simulator as in a cluster (a scenario's node says so in `status.conditions`).
    is_ready(n)
}

/// The condition of a node that is ready (`Ready=True`), for nodes made by the simulator.
pub fn ready_condition() -> NodeCondition {
    NodeCondition {
        type_: "Ready".into(),
        status: "True".into(),
        ..NodeCondition::default()
    }
}

/// Whether a node reports the condition `Ready=True`.
pub fn is_ready(n: &Node) -> bool {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|c| c.status == "True")
}

/// Kueue's `NodeMatchesFlavor`: every level label present and the flavor's node labels matched.
pub fn node_matches_flavor(
    labels: &BTreeMap<String, String>,
    node_labels: &BTreeMap<String, String>,
    levels: &[String],
) -> bool {
    node_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
        && levels.iter().all(|l| labels.contains_key(l))
}

impl DomainTree {
    /// The tree of the nodes that count for a flavor with `node_labels` on `topology`'s
    /// `levels`.
    pub fn build(
        topology: &str,
        levels: &[String],
        node_labels: &BTreeMap<String, String>,
        nodes: &[Node],
    ) -> DomainTree {
        let lowest_is_node = levels.last().is_some_and(|l| l == HOSTNAME_LABEL);
        let mut members: BTreeMap<Vec<String>, Vec<&Node>> = BTreeMap::new();
        let empty = BTreeMap::new();
        for n in nodes {
            let labels = n.metadata.labels.as_ref().unwrap_or(&empty);
            if !ready_and_schedulable(n) || !node_matches_flavor(labels, node_labels, levels) {
                continue;
            }
            let path: Vec<String> = levels.iter().map(|l| labels[l].clone()).collect();
            members.entry(path).or_default().push(n);
        }
        let mut resources = vec![PODS.to_string()];
        for n in members.values().flatten() {
            for r in n
                .status
                .as_ref()
                .and_then(|s| s.allocatable.as_ref())
                .into_iter()
                .flat_map(|a| a.keys())
            {
                if !resources.contains(r) {
                    resources.push(r.clone());
                }
            }
        }
        resources[1..].sort();
        let columns = resources.len();
        let mut tree = DomainTree {
            topology: topology.to_string(),
            levels: levels.to_vec(),
            domains: Vec::new(),
            per_level: vec![Vec::new(); levels.len()],
            resources,
            leaves: Vec::new(),
            capacity: LeafTable::zeroed(0, columns),
            nodes: Vec::new(),
            node_leaf: HashMap::new(),
        };
        let mut by_values: HashMap<Vec<String>, DomainId> = HashMap::new();
        for (path, nodes) in &members {
            let mut parent = None;
            for level in 0..levels.len() {
                let values = path[..=level].to_vec();
                let id = match by_values.get(&values) {
                    Some(&id) => id,
                    None => {
                        let id = DomainId(tree.domains.len() as u32);
                        tree.domains.push(Domain {
                            level,
                            parent,
                            children: Vec::new(),
                            values: values.clone(),
                            leaf: None,
                        });
                        if let Some(p) = parent {
                            tree.domains[DomainId::index(p)].children.push(id);
                        }
                        tree.per_level[level].push(id);
                        by_values.insert(values, id);
                        id
                    }
                };
                parent = Some(id);
            }
            let leaf = parent.expect("at least one level");
            let mut capacity = vec![0; tree.resources.len()];
            for n in nodes {
                let alloc = n.status.as_ref().and_then(|s| s.allocatable.as_ref());
                for (r, q) in alloc.into_iter().flatten() {
                    let i = tree
                        .resources
                        .iter()
                        .position(|x| x == r)
                        .expect("collected");
                    let milli = q.0.parse::<Quantity>().map(|q| q.milli()).unwrap_or(0);
                    capacity[i] += milli;
                }
            }
            for n in nodes {
                if let Some(name) = &n.metadata.name {
                    tree.node_leaf.insert(name.clone(), tree.leaves.len());
                }
            }
            tree.domains[leaf.index()].leaf = Some(tree.leaves.len());
            tree.leaves.push(leaf);
            tree.capacity.push_row(&capacity);
            tree.nodes.push(if lowest_is_node {
                LeafNode {
                    labels: nodes[0].metadata.labels.clone().unwrap_or_default(),
                    taints: nodes[0]
                        .spec
                        .as_ref()
                        .and_then(|s| s.taints.clone())
                        .unwrap_or_default(),
                }
            } else {
                LeafNode::default()
            });
        }
        tree
    }

    /// Whether leaves are single nodes (the lowest level is `kubernetes.io/hostname`).
    pub fn lowest_is_node(&self) -> bool {
        self.levels.last().is_some_and(|l| l == HOSTNAME_LABEL)
    }

    pub fn domain(&self, id: DomainId) -> &Domain {
        &self.domains[id.index()]
    }

    /// The index of a level label.
    pub fn level_index(&self, key: &str) -> Option<usize> {
        self.levels.iter().position(|l| l == key)
    }

    /// The column of a resource, if any node declares it.
    pub fn resource_index(&self, name: &str) -> Option<usize> {
        self.resources.iter().position(|r| r == name)
    }

    /// The ancestor of `id` at `level` (itself at its own level).
    pub fn ancestor_at(&self, mut id: DomainId, level: usize) -> DomainId {
        while self.domain(id).level > level {
            id = self
                .domain(id)
                .parent
                .expect("a parent above the lowest level");
        }
        id
    }
}
