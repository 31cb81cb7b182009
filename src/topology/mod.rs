//! Topology-aware scheduling (Kueue's TAS): per TAS ResourceFlavor a domain tree built from
//! the nodes (`tree.rs`), the free capacity of every leaf next to quota, and placement — pods
//! per leaf domain — as a pluggable decision (`placement.rs`).
//!
//! **Invariant:** capacity changes only through [`Topologies::add`], called by the cluster's
//! `reserve` / `release` with what the admission placed, so a leaf's usage is always the sum
//! of the placements admitted on it and never exceeds its allocatable capacity (placements are
//! verified against free capacity before they are admitted).
//!
//! **Nodes shared by flavors.** Two TAS flavors may select the same nodes (the same
//! `nodeLabels`, one with `nodeTaints`; or one flavor's nodes a subset of another's). Usage is
//! kept per flavor, but the free capacity of a flavor's leaf that is a node also subtracts what
//! every other flavor placed on that node (Kueue's `TASHandleOverlappingFlavors`), in the
//! cluster and in a cycle's snapshot alike: no node is given out twice. Kueue aggregates by
//! domain (the values of every level), so only flavors of one Topology share; wasq matches
//! nodes by name, so flavors of different Topologies whose lowest level is
//! `kubernetes.io/hostname` share their nodes too. Leaves that are not nodes (a lowest level
//! above the hostname) are not shared, as in Kueue.

mod leaf_table;
mod non_tas;
pub mod placement;
pub mod tree;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::Toleration;

use crate::api::Manifests;
use crate::api::topology::{DomainAssignment, TopologyAssignment};
use crate::quota::FlavorId;

pub use leaf_table::LeafTable;
pub use placement::{
    Constraint, Exclusions, KueueBestFit, Placement, PlacementPolicy, PlacementRequest,
    ResolveConstraint, verify,
};
pub use tree::{DomainId, DomainTree};

/// What a podSet was placed on: its flavor's tree, pods per leaf and one pod's request per
/// resource column (kept so that a release gives back exactly what was taken).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PodSetPlacement {
    pub flavor: FlavorId,
    pub leaves: Vec<(u32, i32)>,
    pub per_pod: Vec<i64>,
}

/// One TAS flavor: its tree, its tolerations and the usage of each leaf.
#[derive(Debug, Clone)]
pub struct TasFlavor {
    pub flavor: FlavorId,
    pub tree: DomainTree,
    pub tolerations: Vec<Toleration>,
}

/// Every TAS flavor's tree and the capacity admitted workloads use on it.
#[derive(Debug, Clone, Default)]
pub struct Topologies {
    pub flavors: Vec<TasFlavor>,
    by_flavor: HashMap<FlavorId, usize>,
    /// Per TAS flavor, per leaf, per resource column: milli-units in use.
    usage: TasUsage,
    /// The same for pods that run outside TAS (`non_tas.rs`; the controller reports them per
    /// node, the simulator has none).
    non_tas: TasUsage,
    /// What pods outside TAS use per node, by resource (milli-units, 1000 per pod in `pods`).
    node_usage: HashMap<String, BTreeMap<String, i64>>,
    /// Per TAS flavor, the nodes it shares with each other flavor.
    shared: Vec<Vec<SharedNodes>>,
}

/// The node leaves one TAS flavor shares with another: what either places on them counts
/// against both.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SharedNodes {
    /// The other flavor (its index in [`Topologies::flavors`]).
    other: usize,
    /// (leaf of this flavor, the same node's leaf in the other), by leaf.
    leaves: Vec<(usize, usize)>,
    /// (column of this flavor, the same resource's column in the other).
    columns: Vec<(usize, usize)>,
}

/// Per-leaf usage of every TAS flavor, cloned as a cycle's snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TasUsage(Vec<LeafTable>);

/// Kueue's `TopologyNotFound` inactive reason for a ClusterQueue using `flavors`: every TAS
/// flavor among them whose Topology does not exist.
pub fn missing_topologies(
    m: &Manifests,
    flavors: &[FlavorId],
    names: &crate::quota::Names,
) -> Option<String> {
    let mut missing = Vec::new();
    for rf in &m.flavors {
        let name = rf.metadata.name.as_deref().unwrap_or_default();
        let Some(topology) = rf.spec.topology_name.as_deref() else {
            continue;
        };
        let used = names
            .find_flavor(name)
            .is_some_and(|f| flavors.contains(&f));
        let exists = m
            .topologies
            .iter()
            .any(|t| t.metadata.name.as_deref() == Some(topology));
        if used && !exists && !missing.iter().any(|(f, _)| *f == name) {
            missing.push((name, topology));
        }
    }
    (!missing.is_empty()).then(|| {
        missing
            .iter()
            .map(|(f, t)| format!("there is no Topology {t:?} for TAS flavor {f:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    })
}

impl Topologies {
    /// The trees of the flavors with a `topologyName` whose Topology exists (a ClusterQueue
    /// using one whose Topology is missing is inactive: [`missing_topologies`]). `flavor_id`
    /// finds a flavor's interned id.
    pub fn build(m: &Manifests, mut flavor_id: impl FnMut(&str) -> Option<FlavorId>) -> Topologies {
        let mut out = Topologies::default();
        for rf in &m.flavors {
            let Some(topology) = rf.spec.topology_name.as_deref() else {
                continue;
            };
            let name = rf.metadata.name.clone().unwrap_or_default();
            let Some(t) = m
                .topologies
                .iter()
                .find(|t| t.metadata.name.as_deref() == Some(topology))
            else {
                continue;
            };
            let Some(flavor) = flavor_id(&name) else {
                continue;
            };
            let tree = DomainTree::build(topology, &t.level_keys(), &rf.spec.node_labels, &m.nodes);
            out.by_flavor.insert(flavor, out.flavors.len());
            let zeroed = LeafTable::zeroed(tree.leaves.len(), tree.resources.len());
            out.usage.0.push(zeroed.clone());
            out.non_tas.0.push(zeroed);
            out.flavors.push(TasFlavor {
                flavor,
                tree,
                tolerations: rf.spec.tolerations.clone(),
            });
        }
        out.shared = shared_nodes(&out.flavors);
        out
    }

    /// The TAS flavor, if `flavor` has a topology.
    pub fn get(&self, flavor: FlavorId) -> Option<&TasFlavor> {
        self.by_flavor.get(&flavor).map(|&i| &self.flavors[i])
    }

    pub fn is_empty(&self) -> bool {
        self.flavors.is_empty()
    }

    /// The usage as it is now (cloned: a cycle's snapshot).
    pub fn current(&self) -> &TasUsage {
        &self.usage
    }

    /// A usage with nothing placed (placing on empty capacity).
    pub fn unused(&self) -> TasUsage {
        TasUsage(
            self.flavors
                .iter()
                .map(|f| LeafTable::zeroed(f.tree.leaves.len(), f.tree.resources.len()))
                .collect(),
        )
    }

    /// Adds (`sign` = 1) or removes (`sign` = -1) a placement's usage.
    pub fn add(&mut self, p: &PodSetPlacement, sign: i64) {
        if let Some(&i) = self.by_flavor.get(&p.flavor) {
            add_to(&mut self.usage.0[i], p, sign);
        }
    }

    /// The usage of the `i`-th TAS flavor (in [`Topologies::flavors`] order): per leaf, per
    /// column.
    pub fn leaf_usage(&self, i: usize) -> &LeafTable {
        &self.usage.0[i]
    }

    /// Free capacity per leaf and column of a flavor under `usage`, less what pods outside
    /// TAS use and what other flavors placed on the nodes it shares with them.
    pub fn free(&self, flavor: FlavorId, usage: &TasUsage) -> Option<LeafTable> {
        let i = *self.by_flavor.get(&flavor)?;
        let tree = &self.flavors[i].tree;
        Some(LeafTable::minus(
            &tree.capacity,
            &self.used(i, usage),
            &self.non_tas.0[i],
        ))
    }

    /// `flavor` and every TAS flavor that shares nodes with it.
    pub fn sharing_nodes_with(&self, flavor: FlavorId) -> Vec<FlavorId> {
        let mut out = vec![flavor];
        if let Some(&i) = self.by_flavor.get(&flavor) {
            out.extend(self.shared[i].iter().map(|s| self.flavors[s.other].flavor));
        }
        out
    }

    /// What TAS placements use on the `i`-th flavor's leaves under `usage`: its own, plus, on
    /// nodes it shares, every other flavor's.
    fn used<'a>(&self, i: usize, usage: &'a TasUsage) -> Cow<'a, LeafTable> {
        let shared = &self.shared[i];
        if shared.is_empty() {
            return Cow::Borrowed(&usage.0[i]);
        }
        let mut used = usage.0[i].clone();
        for s in shared {
            let other = &usage.0[s.other];
            for &(mine, theirs) in &s.leaves {
                let (row, from) = (used.row_mut(mine), other.row(theirs));
                for &(c, d) in &s.columns {
                    row[c] += from[d];
                }
            }
        }
        Cow::Owned(used)
    }

    /// Adds a placement's usage to a snapshot.
    pub fn add_to_snapshot(&self, usage: &mut TasUsage, p: &PodSetPlacement) {
        if let Some(&i) = self.by_flavor.get(&p.flavor) {
            add_to(&mut usage.0[i], p, 1);
        }
    }

    /// Takes a placement's usage out of a snapshot (a victim's, in a preemption simulation).
    pub fn remove_from_snapshot(&self, usage: &mut TasUsage, p: &PodSetPlacement) {
        if let Some(&i) = self.by_flavor.get(&p.flavor) {
            add_to(&mut usage.0[i], p, -1);
        }
    }

    /// Per flavor, per domain of every level: used and allocatable milli-units per resource
    /// (the report's utilisation; a node shared with other flavors counts their use too).
    pub fn utilisation(&self) -> Vec<DomainUtilisation> {
        let mut out = Vec::new();
        for (i, f) in self.flavors.iter().enumerate() {
            let tree = &f.tree;
            let used = self.used(i, &self.usage);
            let mut per_domain: BTreeMap<DomainId, (Vec<i64>, Vec<i64>)> = BTreeMap::new();
            for (leaf, &d) in tree.leaves.iter().enumerate() {
                let mut at = Some(d);
                while let Some(id) = at {
                    let e = per_domain.entry(id).or_insert_with(|| {
                        (vec![0; tree.resources.len()], vec![0; tree.resources.len()])
                    });
                    for c in 0..tree.resources.len() {
                        e.0[c] += used.row(leaf)[c];
                        e.1[c] += tree.capacity.row(leaf)[c];
                    }
                    at = tree.domain(id).parent;
                }
            }
            for (d, (used, capacity)) in per_domain {
                let dom = tree.domain(d);
                out.push(DomainUtilisation {
                    flavor: f.flavor,
                    level: tree.levels[dom.level].clone(),
                    domain: dom.values.join("/"),
                    resources: tree
                        .resources
                        .iter()
                        .enumerate()
                        .map(|(c, r)| (r.clone(), used[c], capacity[c]))
                        .collect(),
                });
            }
        }
        out
    }
}

impl Topologies {
    /// A placement as Kueue writes it in `status.admission.podSetAssignments[].topologyAssignment`:
    /// the hostname level alone when leaves are nodes, else every level.
    pub fn assignment(&self, p: &PodSetPlacement) -> Option<TopologyAssignment> {
        let tree = &self.get(p.flavor)?.tree;
        let from = if tree.lowest_is_node() {
            tree.levels.len() - 1
        } else {
            0
        };
        let domains: Vec<DomainAssignment> = p
            .leaves
            .iter()
            .map(|&(leaf, count)| DomainAssignment {
                values: tree.domain(tree.leaves[leaf as usize]).values[from..].to_vec(),
                count,
            })
            .collect();
        Some(TopologyAssignment::from_domains(
            tree.levels[from..].to_vec(),
            &domains,
        ))
    }

    /// The placement an admission written in the manifests carries (`topologyAssignment`),
    /// with one pod's request per column from `requests` (resource name, milli-units), on
    /// the domains still in the tree; `None` when the levels differ or no domain is left.
    pub fn restore(
        &self,
        flavor: FlavorId,
        requests: &[(&str, i64)],
        ta: &TopologyAssignment,
    ) -> Option<PodSetPlacement> {
        let tree = &self.get(flavor)?.tree;
        let from = tree.levels.len().checked_sub(ta.levels.len())?;
        if tree.levels[from..] != ta.levels[..] {
            return None;
        }
        // A domain no longer in the tree (its node failed or went away) holds nothing to
        // charge; the others stay charged, so their capacity is never handed out twice.
        let mut leaves = Vec::new();
        for d in ta.domains()? {
            if let Some(leaf) = tree
                .leaves
                .iter()
                .position(|&l| tree.domain(l).values[from..] == d.values[..])
            {
                leaves.push((leaf as u32, d.count));
            }
        }
        if leaves.is_empty() {
            return None;
        }
        let mut per_pod = vec![0; tree.resources.len()];
        for &(r, v) in requests {
            if let Some(c) = tree.resource_index(r) {
                per_pod[c] += v;
            }
        }
        if let Some(c) = tree.resource_index(tree::PODS) {
            per_pod[c] += 1000;
        }
        Some(PodSetPlacement {
            flavor,
            leaves,
            per_pod,
        })
    }

    /// How many domains of each level a placement spans, highest level first.
    pub fn spans(&self, p: &PodSetPlacement) -> Vec<(String, usize)> {
        let Some(f) = self.get(p.flavor) else {
            return Vec::new();
        };
        let tree = &f.tree;
        (0..tree.levels.len())
            .map(|level| {
                let mut at: Vec<DomainId> = p
                    .leaves
                    .iter()
                    .map(|&(l, _)| tree.ancestor_at(tree.leaves[l as usize], level))
                    .collect();
                at.sort();
                at.dedup();
                (tree.levels[level].clone(), at.len())
            })
            .collect()
    }
}

/// For each flavor, the nodes it shares with each other flavor, when both flavors' leaves are
/// nodes (their lowest level is `kubernetes.io/hostname`).
fn shared_nodes(flavors: &[TasFlavor]) -> Vec<Vec<SharedNodes>> {
    let mut out = vec![Vec::new(); flavors.len()];
    for (i, a) in flavors.iter().enumerate() {
        let a = &a.tree;
        if !a.lowest_is_node() {
            continue;
        }
        for (j, b) in flavors.iter().enumerate() {
            let b = &b.tree;
            if i == j || !b.lowest_is_node() {
                continue;
            }
            let mut leaves: Vec<(usize, usize)> = a
                .node_leaf
                .iter()
                .filter_map(|(node, &mine)| b.node_leaf.get(node).map(|&theirs| (mine, theirs)))
                .collect();
            if leaves.is_empty() {
                continue;
            }
            leaves.sort_unstable();
            leaves.dedup();
            let columns = a
                .resources
                .iter()
                .enumerate()
                .filter_map(|(c, r)| b.resource_index(r).map(|d| (c, d)))
                .collect();
            out[i].push(SharedNodes {
                other: j,
                leaves,
                columns,
            });
        }
    }
    out
}

fn add_to(usage: &mut LeafTable, p: &PodSetPlacement, sign: i64) {
    for &(leaf, n) in &p.leaves {
        for (u, per) in usage.row_mut(leaf as usize).iter_mut().zip(&p.per_pod) {
            *u += sign * i64::from(n) * per;
        }
    }
}

/// One domain's use of its capacity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainUtilisation {
    pub flavor: FlavorId,
    pub level: String,
    /// Its values from the highest level down, joined by `/`.
    pub domain: String,
    /// (resource, used, allocatable) in milli-units.
    pub resources: Vec<(String, i64, i64)>,
}
