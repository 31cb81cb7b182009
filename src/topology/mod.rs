//! Topology-aware scheduling (Kueue's TAS): per TAS ResourceFlavor a domain tree built from
//! the nodes (`tree.rs`), the free capacity of every leaf next to quota, and placement — pods
//! per leaf domain — as a pluggable decision (`placement.rs`).
//!
//! **Invariant:** capacity changes only through [`Topologies::add`], called by the cluster's
//! `reserve` / `release` with what the admission placed, so a leaf's usage is always the sum
//! of the placements admitted on it and never exceeds its allocatable capacity (placements are
//! verified against free capacity before they are admitted).

pub mod placement;
pub mod tree;

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::Toleration;

use crate::api::Manifests;
use crate::quota::FlavorId;

pub use placement::{
    Constraint, Exclusions, KueueBestFit, Placement, PlacementPolicy, PlacementRequest, verify,
};
pub use tree::{DomainId, DomainTree};

/// What a podSet was placed on: its flavor's tree, pods per leaf and one pod's request per
/// resource column (kept so that a release gives back exactly what was taken).
#[derive(Debug, Clone, PartialEq, Eq)]
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
    usage: Vec<Vec<Vec<i64>>>,
}

/// Per-leaf usage of every TAS flavor, cloned as a cycle's snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TasUsage(Vec<Vec<Vec<i64>>>);

/// Why the topologies could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    #[error("ResourceFlavor {flavor}: topology {topology:?} not found")]
    MissingTopology { flavor: String, topology: String },
}

impl Topologies {
    /// The trees of the flavors with a `topologyName`. `flavor_id` interns a flavor name.
    pub fn build(
        m: &Manifests,
        mut flavor_id: impl FnMut(&str) -> Option<FlavorId>,
    ) -> Result<Topologies, Vec<TopologyError>> {
        let mut out = Topologies::default();
        let mut errors = Vec::new();
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
                errors.push(TopologyError::MissingTopology {
                    flavor: name,
                    topology: topology.to_string(),
                });
                continue;
            };
            let Some(flavor) = flavor_id(&name) else {
                continue;
            };
            let tree = DomainTree::build(topology, &t.level_keys(), &rf.spec.node_labels, &m.nodes);
            out.by_flavor.insert(flavor, out.flavors.len());
            out.usage
                .push(vec![vec![0; tree.resources.len()]; tree.leaves.len()]);
            out.flavors.push(TasFlavor {
                flavor,
                tree,
                tolerations: rf.spec.tolerations.clone(),
            });
        }
        if errors.is_empty() {
            Ok(out)
        } else {
            Err(errors)
        }
    }

    /// The TAS flavor, if `flavor` has a topology.
    pub fn get(&self, flavor: FlavorId) -> Option<&TasFlavor> {
        self.by_flavor.get(&flavor).map(|&i| &self.flavors[i])
    }

    pub fn is_empty(&self) -> bool {
        self.flavors.is_empty()
    }

    /// The usage as it is now (a cycle's snapshot).
    pub fn snapshot(&self) -> TasUsage {
        TasUsage(self.usage.clone())
    }

    /// Adds (`sign` = 1) or removes (`sign` = -1) a placement's usage.
    pub fn add(&mut self, p: &PodSetPlacement, sign: i64) {
        if let Some(&i) = self.by_flavor.get(&p.flavor) {
            add_to(&mut self.usage[i], p, sign);
        }
    }

    /// Free capacity per leaf and column of a flavor under `usage`.
    pub fn free(&self, flavor: FlavorId, usage: &TasUsage) -> Option<Vec<Vec<i64>>> {
        let i = *self.by_flavor.get(&flavor)?;
        let tree = &self.flavors[i].tree;
        Some(
            tree.capacity
                .iter()
                .zip(&usage.0[i])
                .map(|(cap, used)| cap.iter().zip(used).map(|(c, u)| c - u).collect())
                .collect(),
        )
    }

    /// Adds a placement's usage to a snapshot.
    pub fn add_to_snapshot(&self, usage: &mut TasUsage, p: &PodSetPlacement) {
        if let Some(&i) = self.by_flavor.get(&p.flavor) {
            add_to(&mut usage.0[i], p, 1);
        }
    }

    /// Per flavor, per domain of every level: used and allocatable milli-units per resource
    /// (the report's utilisation).
    pub fn utilisation(&self) -> Vec<DomainUtilisation> {
        let mut out = Vec::new();
        for (i, f) in self.flavors.iter().enumerate() {
            let tree = &f.tree;
            let mut per_domain: BTreeMap<DomainId, (Vec<i64>, Vec<i64>)> = BTreeMap::new();
            for (leaf, &d) in tree.leaves.iter().enumerate() {
                let mut at = Some(d);
                while let Some(id) = at {
                    let e = per_domain.entry(id).or_insert_with(|| {
                        (vec![0; tree.resources.len()], vec![0; tree.resources.len()])
                    });
                    for c in 0..tree.resources.len() {
                        e.0[c] += self.usage[i][leaf][c];
                        e.1[c] += tree.capacity[leaf][c];
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

fn add_to(usage: &mut [Vec<i64>], p: &PodSetPlacement, sign: i64) {
    for &(leaf, n) in &p.leaves {
        for (u, per) in usage[leaf as usize].iter_mut().zip(&p.per_pod) {
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
