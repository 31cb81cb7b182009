//! Placement: how many pods of a podSet go to each leaf domain, the fourth decision.
//!
//! [`PlacementRequest`] carries the domain tree as columns (per domain: level, parent; per leaf:
//! free capacity per resource, eligibility) and what the podSet asks; a [`PlacementPolicy`]
//! answers pod counts per leaf; [`verify`] checks any answer: every pod placed, on eligible
//! leaves within their free capacity, inside one domain of a required level, whole slices per
//! slice domain. [`KueueBestFit`] is Kueue's default algorithm — the `wasq-bestfit` crate
//! (`crates/bestfit`), which the plugin SDK compiles in too, reading the request through
//! `wasq_bestfit::Question` (`findTopologyAssignment` in
//! `pkg/cache/scheduler/tas_flavor_snapshot.go`: BestFit by domain, then the lowest level's
//! tightest fit; unconstrained requests take the least free capacity first, Kueue's
//! `TASProfileMixed`, on by default), with a podSet group's leader placed with its workers
//! (`PlacementRequest::leader`) and multi-layer slices (`Constraint::inner`). Not translated:
//! balanced placement and preferred node affinity (Kueue alpha, off by default).

use std::collections::BTreeMap;

use crate::api::topology::PodSetTopologyRequest;

use super::LeafTable;
use super::tree::{DomainId, DomainTree};

pub use wasq_bestfit::{Constraint, MAX_LEVELS, Placement};

/// How a [`Constraint`] is made from a podSet's topology request and a tree's levels.
pub trait ResolveConstraint: Sized {
    /// Kueue's `levelKey` / `isRequired` / `isUnconstrained` / slice size, with its messages.
    /// `implied`: the podSet asks for nothing but its ClusterQueue has only TAS flavors.
    fn resolve(
        tree: &DomainTree,
        tr: Option<&PodSetTopologyRequest>,
        implied: bool,
        count: i32,
    ) -> Result<Self, String>;
}

impl ResolveConstraint for Constraint {
    fn resolve(
        tree: &DomainTree,
        tr: Option<&PodSetTopologyRequest>,
        implied: bool,
        count: i32,
    ) -> Result<Constraint, String> {
        let lowest = tree.levels.len().saturating_sub(1);
        let layers = tr
            .map(PodSetTopologyRequest::slice_layers)
            .unwrap_or_default();
        let slice_only =
            tr.is_some_and(|t| t.required.is_none() && t.preferred.is_none()) && !layers.is_empty();
        let key = match tr {
            Some(t) if t.required.is_some() => t.required.clone(),
            Some(t) if t.preferred.is_some() => t.preferred.clone(),
            _ if slice_only => tree.levels.first().cloned(),
            Some(t) if t.unconstrained == Some(true) => tree.levels.last().cloned(),
            _ if implied => tree.levels.last().cloned(),
            _ => None,
        };
        let Some(key) = key else {
            return Err("topology level not specified".into());
        };
        let level = tree
            .level_index(&key)
            .ok_or_else(|| format!("no requested topology level: {key}"))?;
        let (slice_key, slice_size) = match layers.first() {
            Some(l) => (l.topology.clone(), l.size),
            None => (tree.levels[lowest].clone(), 1),
        };
        if slice_size <= 0 {
            return Err("slice topology requested, but slice size not provided".into());
        }
        let slice_level = tree
            .level_index(&slice_key)
            .ok_or_else(|| format!("no requested topology level for slices: {slice_key}"))?;
        if level > slice_level {
            return Err(format!(
                "podset slice topology {slice_key} is above the podset topology {key}"
            ));
        }
        // Kueue's `buildSliceSizeAtLevel`: each further layer is below the previous one and
        // divides its size; the levels between them take its size.
        let mut further = Vec::new();
        let (mut prev_size, mut prev_level) = (slice_size, slice_level);
        for l in layers.iter().skip(1) {
            let at = tree.level_index(&l.topology).ok_or_else(|| {
                format!(
                    "no requested topology level for additional slice layer: {}",
                    l.topology
                )
            })?;
            if at <= prev_level {
                return Err(format!(
                    "additional slice layer topology {} must be at a lower level than {}",
                    l.topology, tree.levels[prev_level]
                ));
            }
            if l.size <= 0 || prev_size % l.size != 0 {
                return Err(format!(
                    "additional slice layer size {} must evenly divide parent layer size {prev_size}",
                    l.size
                ));
            }
            if at >= MAX_LEVELS {
                return Err(format!("more than {MAX_LEVELS} topology levels"));
            }
            further.push((at, l.size));
            (prev_size, prev_level) = (l.size, at);
        }
        if count % slice_size != 0 {
            return Err(format!(
                "slice size {slice_size} does not divide the pod count {count}"
            ));
        }
        Ok(Constraint {
            level,
            required: tr.is_some_and(|t| t.required.is_some()),
            unconstrained: tr.is_some_and(|t| t.unconstrained == Some(true))
                || implied
                || slice_only,
            slice_level,
            slice_size,
            inner: [0; MAX_LEVELS],
            inner_layers: 0,
        }
        .with_layers(further))
    }
}

/// Why leaves were left out, for Kueue's failure message (`tasExclusionStats`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exclusions {
    pub total_nodes: usize,
    pub node_selector: usize,
    pub affinity: usize,
    pub taints: BTreeMap<String, usize>,
    pub resources: BTreeMap<String, usize>,
}

impl Exclusions {
    pub fn describe(&self) -> Option<String> {
        let mut reasons = Vec::new();
        if self.node_selector > 0 {
            reasons.push(format!("nodeSelector: {}", self.node_selector));
        }
        if self.affinity > 0 {
            reasons.push(format!("affinity: {}", self.affinity));
        }
        for (t, n) in &self.taints {
            reasons.push(format!("taint {t:?}: {n}"));
        }
        for (r, n) in &self.resources {
            reasons.push(format!("resource {r:?}: {n}"));
        }
        if reasons.is_empty() {
            return None;
        }
        reasons.sort();
        Some(format!(
            "Total nodes: {}; excluded: {}",
            self.total_nodes,
            reasons.join(", ")
        ))
    }
}

/// One placement question: a podSet's pods on one flavor's domain tree.
#[derive(Debug, Clone)]
pub struct PlacementRequest<'a> {
    pub tree: &'a DomainTree,
    /// Free capacity per leaf and resource column (milli-units).
    pub free: LeafTable,
    /// One pod's request per resource column, `pods` = 1000 included.
    pub per_pod: Vec<i64>,
    /// A requested resource no node declares: nothing fits.
    pub missing: Option<String>,
    /// Leaves the pods may run on (node selector, affinity, taints).
    pub eligible: Vec<bool>,
    /// Leaves left out for their labels or taints (resources are counted by the placement).
    pub excluded: Exclusions,
    pub count: i32,
    pub constraint: Constraint,
    /// A podSet group's leader (Kueue's `kueue.x-k8s.io/podset-group-name`, e.g. a
    /// LeaderWorkerSet's leader): one pod's request per column, `pods` included. The leader is
    /// placed with the `count` workers, on an eligible leaf, inside the same required domain.
    pub leader: Option<Vec<i64>>,
}

impl PlacementRequest<'_> {
    /// How many pods fit on a leaf, and the resource that limits it.
    pub fn fits_on(&self, leaf: usize) -> (i32, Option<&str>) {
        self.fits_in(self.free.row(leaf), &self.per_pod)
    }

    /// How many pods of `per_pod` fit in `free`, and the resource that limits it.
    fn fits_in(&self, free: &[i64], per_pod: &[i64]) -> (i32, Option<&str>) {
        if let Some(r) = &self.missing {
            return (0, Some(r));
        }
        let mut best: Option<(i64, usize)> = None;
        for (c, &need) in per_pod.iter().enumerate() {
            if need <= 0 {
                continue;
            }
            let n = free[c].max(0) / need;
            if best.is_none_or(|(b, _)| n < b) {
                best = Some((n, c));
            }
        }
        match best {
            None => (i32::MAX, None),
            Some((n, c)) => (
                i32::try_from(n).unwrap_or(i32::MAX),
                Some(self.tree.resources[c].as_str()),
            ),
        }
    }

    /// With a leader: whether it fits on a leaf, and how many workers fit next to it.
    pub fn fits_with_leader(&self, leaf: usize) -> Option<i32> {
        let leader = self.leader.as_ref()?;
        let free = self.free.row(leaf);
        if self.fits_in(free, leader).0 < 1 {
            return None;
        }
        if self.missing.is_some() {
            return Some(0);
        }
        let fit = self
            .per_pod
            .iter()
            .enumerate()
            .filter(|&(_, &need)| need > 0)
            .map(|(c, &need)| (free[c] - leader[c]).max(0) / need)
            .min()
            .map_or(i32::MAX, |n| i32::try_from(n).unwrap_or(i32::MAX));
        Some(fit)
    }

    /// Kueue's count of the leaves left out (`tasExclusionStats`): by label or taint, and
    /// eligible leaves where not one pod fits, by the first resource that limits them.
    pub fn excluded_leaves(&self) -> Exclusions {
        let mut excluded = self.excluded.clone();
        excluded.total_nodes = self.tree.leaves.len();
        for leaf in (0..self.tree.leaves.len()).filter(|&l| self.eligible[l]) {
            if let (0, Some(r)) = self.fits_on(leaf) {
                *excluded.resources.entry(r.to_string()).or_default() += 1;
            }
        }
        excluded
    }
}

/// A request's domain tree as columns, the shape the `placement` WIT extension point will
/// send (lists of integers cross as one copy each): per domain its level and parent (-1 for a
/// root); per resource column the free capacity of every domain (a leaf's own, an inner
/// domain's the sum of its leaves'); per leaf its domain and whether the pods may use it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainColumns {
    pub levels: Vec<u32>,
    pub parents: Vec<i32>,
    /// `free[resource][domain]`, resources in `DomainTree::resources` order.
    pub free: Vec<Vec<i64>>,
    pub leaf_domains: Vec<u32>,
    pub eligible: Vec<bool>,
}

impl PlacementRequest<'_> {
    /// The tree and free capacity as [`DomainColumns`].
    pub fn columns(&self) -> DomainColumns {
        let tree = self.tree;
        let n = tree.domains.len();
        let mut free = vec![vec![0i64; n]; tree.resources.len()];
        for (leaf, &d) in tree.leaves.iter().enumerate() {
            let mut at = Some(d);
            while let Some(id) = at {
                for (c, column) in free.iter_mut().enumerate() {
                    column[id.index()] += self.free.row(leaf)[c];
                }
                at = tree.domain(id).parent;
            }
        }
        DomainColumns {
            levels: tree.domains.iter().map(|d| d.level as u32).collect(),
            parents: tree
                .domains
                .iter()
                .map(|d| d.parent.map_or(-1, |p| p.0 as i32))
                .collect(),
            free,
            leaf_domains: tree.leaves.iter().map(|d| d.0).collect(),
            eligible: self.eligible.clone(),
        }
    }
}

/// The placement decision, as the built-in makes it and a plugin will.
pub trait PlacementPolicy {
    /// Pods per leaf, or why the podSet does not fit (Kueue's words).
    fn place(&self, request: &PlacementRequest<'_>) -> Result<Placement, String>;
}

/// Kueue's default placement.
#[derive(Debug, Clone, Copy, Default)]
pub struct KueueBestFit;

impl PlacementPolicy for KueueBestFit {
    fn place(&self, request: &PlacementRequest<'_>) -> Result<Placement, String> {
        wasq_bestfit::place(request)
    }
}

/// The request as the shared algorithm reads it. Domain ids are in value order within each
/// level ([`DomainTree::build`] numbers them depth first in the order of their values), which
/// is how Kueue breaks ties.
impl wasq_bestfit::Question for PlacementRequest<'_> {
    fn levels(&self) -> usize {
        self.tree.levels.len()
    }

    fn domains(&self) -> usize {
        self.tree.domains.len()
    }

    fn level(&self, d: usize) -> usize {
        self.tree.domains[d].level
    }

    fn children(&self, d: usize) -> impl Iterator<Item = usize> + '_ {
        self.tree.domains[d].children.iter().map(|c| c.index())
    }

    fn at_level(&self, level: usize) -> impl Iterator<Item = usize> + '_ {
        self.tree.per_level[level].iter().map(|d| d.index())
    }

    fn leaves(&self) -> usize {
        self.tree.leaves.len()
    }

    fn leaf_domain(&self, leaf: usize) -> usize {
        self.tree.leaves[leaf].index()
    }

    fn leaf_of(&self, d: usize) -> Option<usize> {
        self.tree.domains[d].leaf
    }

    fn eligible(&self, leaf: usize) -> bool {
        self.eligible[leaf]
    }

    fn pods_fitting(&self, leaf: usize) -> i32 {
        self.fits_on(leaf).0
    }

    fn pods_fitting_with_leader(&self, leaf: usize) -> Option<i32> {
        self.fits_with_leader(leaf)
    }

    fn has_leader(&self) -> bool {
        self.leader.is_some()
    }

    fn count(&self) -> i32 {
        self.count
    }

    fn constraint(&self) -> Constraint {
        self.constraint
    }

    fn topology(&self) -> &str {
        &self.tree.topology
    }

    fn level_name(&self, level: usize) -> &str {
        &self.tree.levels[level]
    }

    fn exclusions(&self) -> Option<String> {
        self.excluded_leaves().describe()
    }
}

/// Host checks on any placement answer.
pub fn verify(request: &PlacementRequest<'_>, answer: &Placement) -> Result<(), String> {
    let tree = request.tree;
    let mut placed = 0i64;
    let mut seen = vec![false; tree.leaves.len()];
    for &(leaf, n) in &answer.leaves {
        if leaf >= tree.leaves.len() {
            return Err(format!("leaf {leaf} out of range"));
        }
        if std::mem::replace(&mut seen[leaf], true) {
            return Err(format!("leaf {leaf} given twice"));
        }
        if n <= 0 {
            return Err(format!("leaf {leaf} given {n} pods"));
        }
        let room = if answer.leader == Some(leaf) {
            request.fits_with_leader(leaf).unwrap_or(-1)
        } else {
            request.fits_on(leaf).0
        };
        if !request.eligible[leaf] || n > room {
            return Err(format!("leaf {leaf} cannot hold {n} pods"));
        }
        placed += i64::from(n);
    }
    if placed != i64::from(request.count) {
        return Err(format!("{placed} of {} pods placed", request.count));
    }
    match (answer.leader, &request.leader) {
        (None, None) => {}
        (Some(l), Some(_)) => {
            if l >= tree.leaves.len()
                || !request.eligible[l]
                || request.fits_with_leader(l).is_none()
            {
                return Err(format!("leaf {l} cannot hold the leader"));
            }
        }
        (None, Some(_)) => return Err("the leader is not placed".into()),
        (Some(_), None) => return Err("a leader placed but none requested".into()),
    }
    let c = request.constraint;
    if c.required {
        let mut at = answer
            .leaves
            .iter()
            .map(|&(l, _)| l)
            .chain(answer.leader)
            .map(|l| tree.ancestor_at(tree.leaves[l], c.level));
        if let Some(first) = at.next()
            && at.any(|d| d != first)
        {
            return Err(format!(
                "pods span more than one {} domain",
                tree.levels[c.level]
            ));
        }
    }
    let mut per_slice_domain: BTreeMap<DomainId, i32> = BTreeMap::new();
    for &(l, n) in &answer.leaves {
        *per_slice_domain
            .entry(tree.ancestor_at(tree.leaves[l], c.slice_level))
            .or_default() += n;
    }
    if per_slice_domain.values().any(|n| n % c.slice_size != 0) {
        return Err(format!(
            "a {} domain holds a partial slice of {}",
            tree.levels[c.slice_level], c.slice_size
        ));
    }
    for (level, &size) in c.inner.iter().enumerate().filter(|&(_, &s)| s > 1) {
        let mut per_domain: BTreeMap<DomainId, i32> = BTreeMap::new();
        for &(l, n) in &answer.leaves {
            *per_domain
                .entry(tree.ancestor_at(tree.leaves[l], level))
                .or_default() += n;
        }
        if per_domain.values().any(|n| n % size != 0) {
            return Err(format!(
                "a {} domain holds a partial slice of {size}",
                tree.levels[level]
            ));
        }
    }
    Ok(())
}

/// Translated from Kueue's `TestFindTopologyAssignments` (`tas_cache_test.go`): same nodes,
/// requests and expected domains and counts.
#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::{Node, NodeStatus};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;
    use crate::api::topology::HOSTNAME_LABEL;

    const BLOCK: &str = "cloud.com/topology-block";
    const RACK: &str = "cloud.com/topology-rack";

    pub(crate) fn node(name: &str, labels: &[(&str, &str)], alloc: &[(&str, &str)]) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            spec: None,
            status: Some(NodeStatus {
                allocatable: Some(
                    alloc
                        .iter()
                        .map(|(k, v)| (k.to_string(), K8sQuantity(v.to_string())))
                        .collect(),
                ),
                conditions: Some(vec![super::super::tree::ready_condition()]),
                ..NodeStatus::default()
            }),
        }
    }

    fn host(block: &str, rack: &str, x: &str, cpu: &str, mem: &str, pods: &str) -> Node {
        node(
            &format!("{block}-{rack}-{x}"),
            &[(BLOCK, block), (RACK, rack), (HOSTNAME_LABEL, x)],
            &[("cpu", cpu), ("memory", mem), ("pods", pods)],
        )
    }

    //      b1                   b2
    //   /      \             /      \
    //  r1       r2          r1       r2
    //  |      /  |  \       |         |
    //  x3    x5  x1  x6     x2       x4
    fn default_nodes() -> Vec<Node> {
        vec![
            host("b1", "r1", "x3", "1", "1Gi", "10"),
            host("b1", "r2", "x5", "1", "1Gi", "10"),
            host("b1", "r2", "x1", "1", "1Gi", "10"),
            host("b1", "r2", "x6", "1", "1Gi", "10"),
            host("b2", "r1", "x2", "1", "1Gi", "10"),
            host("b2", "r2", "x4", "2", "4Gi", "40"),
        ]
    }

    fn scattered_nodes() -> Vec<Node> {
        vec![
            host("b1", "r1", "x3", "4", "1Gi", "10"),
            host("b1", "r1", "x5", "1", "1Gi", "10"),
            host("b1", "r1", "x1", "1", "1Gi", "10"),
            host("b2", "r1", "x6", "2", "1Gi", "10"),
            host("b2", "r1", "x2", "1", "1Gi", "10"),
        ]
    }

    fn binary_tree_nodes() -> Vec<Node> {
        vec![
            host("b1", "r1", "x3", "1", "1Gi", "10"),
            host("b1", "r1", "x5", "1", "1Gi", "10"),
            host("b1", "r2", "x1", "1", "1Gi", "10"),
            host("b1", "r2", "x6", "1", "1Gi", "10"),
            host("b2", "r1", "x2", "1", "1Gi", "10"),
            host("b2", "r1", "x4", "1", "1Gi", "10"),
            host("b2", "r2", "x7", "1", "1Gi", "10"),
            host("b2", "r2", "x8", "1", "1Gi", "10"),
        ]
    }

    fn three_levels() -> Vec<String> {
        vec![BLOCK.into(), RACK.into(), HOSTNAME_LABEL.into()]
    }

    fn two_levels() -> Vec<String> {
        vec![BLOCK.into(), RACK.into()]
    }

    fn required(level: &str) -> PodSetTopologyRequest {
        PodSetTopologyRequest {
            required: Some(level.into()),
            ..PodSetTopologyRequest::default()
        }
    }

    fn preferred(level: &str) -> PodSetTopologyRequest {
        PodSetTopologyRequest {
            preferred: Some(level.into()),
            ..PodSetTopologyRequest::default()
        }
    }

    fn unconstrained() -> PodSetTopologyRequest {
        PodSetTopologyRequest {
            unconstrained: Some(true),
            ..PodSetTopologyRequest::default()
        }
    }

    /// Places `count` pods requesting `requests` (milli-units) and returns the assigned
    /// domains as Kueue prints them (hostname only when leaves are nodes), or the reason.
    fn place(
        nodes: &[Node],
        levels: &[String],
        tr: Option<PodSetTopologyRequest>,
        requests: &[(&str, i64)],
        count: i32,
    ) -> Result<Vec<(Vec<String>, i32)>, String> {
        let tree = DomainTree::build("default", levels, &BTreeMap::new(), nodes);
        let constraint = Constraint::resolve(&tree, tr.as_ref(), tr.is_none(), count)?;
        let mut per_pod = vec![0; tree.resources.len()];
        per_pod[tree.resource_index("pods").unwrap()] = 1000;
        let mut missing = None;
        for &(r, v) in requests {
            match tree.resource_index(r) {
                Some(c) => per_pod[c] += v,
                None => missing = Some(r.to_string()),
            }
        }
        let request = PlacementRequest {
            tree: &tree,
            free: tree.capacity.clone(),
            per_pod,
            missing,
            eligible: vec![true; tree.leaves.len()],
            excluded: Exclusions::default(),
            count,
            constraint,
            leader: None,
        };
        let placement = KueueBestFit.place(&request)?;
        verify(&request, &placement).expect("the built-in's answer passes the host's checks");
        let from = if tree.lowest_is_node() {
            levels.len() - 1
        } else {
            0
        };
        Ok(placement
            .leaves
            .iter()
            .map(|&(l, n)| (tree.domain(tree.leaves[l]).values[from..].to_vec(), n))
            .collect())
    }

    fn want(domains: &[(&[&str], i32)]) -> Result<Vec<(Vec<String>, i32)>, String> {
        Ok(domains
            .iter()
            .map(|(v, n)| (v.iter().map(|s| s.to_string()).collect(), *n))
            .collect())
    }

    const CPU: &[(&str, i64)] = &[("cpu", 1000)];

    #[test]
    fn minimize_racks_before_nodes() {
        let nodes = vec![
            node(
                "b1-r1-x3",
                &[(BLOCK, "b1"), (RACK, "r1"), (HOSTNAME_LABEL, "x3")],
                &[("cpu", "2"), ("pods", "10")],
            ),
            node(
                "b1-r2-x5",
                &[(BLOCK, "b1"), (RACK, "r2"), (HOSTNAME_LABEL, "x5")],
                &[("cpu", "2"), ("pods", "20")],
            ),
            node(
                "b1-r3-x1",
                &[(BLOCK, "b1"), (RACK, "r3"), (HOSTNAME_LABEL, "x1")],
                &[("cpu", "1"), ("pods", "10")],
            ),
            node(
                "b1-r3-x6",
                &[(BLOCK, "b1"), (RACK, "r3"), (HOSTNAME_LABEL, "x6")],
                &[("cpu", "1"), ("pods", "10")],
            ),
            node(
                "b1-r3-x2",
                &[(BLOCK, "b1"), (RACK, "r3"), (HOSTNAME_LABEL, "x2")],
                &[("cpu", "1"), ("pods", "10")],
            ),
            node(
                "b1-r3-x4",
                &[(BLOCK, "b1"), (RACK, "r3"), (HOSTNAME_LABEL, "x4")],
                &[("cpu", "1"), ("pods", "10")],
            ),
        ];
        assert_eq!(
            place(&nodes, &three_levels(), Some(required(BLOCK)), CPU, 4),
            want(&[(&["x1"], 1), (&["x2"], 1), (&["x4"], 1), (&["x6"], 1)])
        );
    }

    #[test]
    fn choose_the_node_that_holds_all_pods() {
        let nodes = vec![
            node(
                "b1-r1-x3",
                &[(BLOCK, "b1"), (RACK, "r1"), (HOSTNAME_LABEL, "x3")],
                &[("cpu", "2"), ("pods", "10")],
            ),
            node(
                "b1-r1-x5",
                &[(BLOCK, "b1"), (RACK, "r1"), (HOSTNAME_LABEL, "x5")],
                &[("cpu", "1"), ("pods", "10")],
            ),
            node(
                "b1-r1-x1",
                &[(BLOCK, "b1"), (RACK, "r1"), (HOSTNAME_LABEL, "x1")],
                &[("cpu", "1"), ("pods", "10")],
            ),
        ];
        assert_eq!(
            place(&nodes, &three_levels(), Some(required(BLOCK)), CPU, 2),
            want(&[(&["x3"], 2)])
        );
    }

    #[test]
    fn unconstrained_and_implied_take_least_free_hosts_across_the_datacenter() {
        let expected = want(&[
            (&["x1"], 1),
            (&["x3"], 1),
            (&["x5"], 1),
            (&["x2"], 1),
            (&["x6"], 2),
        ]);
        assert_eq!(
            place(&scattered_nodes(), &three_levels(), None, CPU, 6),
            expected
        );
        assert_eq!(
            place(
                &scattered_nodes(),
                &three_levels(),
                Some(unconstrained()),
                CPU,
                6
            ),
            expected
        );
        assert_eq!(
            place(
                &default_nodes(),
                &three_levels(),
                Some(unconstrained()),
                CPU,
                1
            ),
            want(&[(&["x3"], 1)])
        );
    }

    #[test]
    fn block_required_one_pod_per_host() {
        assert_eq!(
            place(
                &binary_tree_nodes(),
                &three_levels(),
                Some(required(BLOCK)),
                CPU,
                4
            ),
            want(&[(&["x3"], 1), (&["x5"], 1), (&["x1"], 1), (&["x6"], 1)])
        );
    }

    #[test]
    fn host_and_rack_required() {
        assert_eq!(
            place(
                &default_nodes(),
                &three_levels(),
                Some(required(HOSTNAME_LABEL)),
                CPU,
                1
            ),
            want(&[(&["x3"], 1)])
        );
        let two = two_levels();
        assert_eq!(
            place(&default_nodes(), &two, Some(required(RACK)), CPU, 1),
            want(&[(&["b1", "r1"], 1)])
        );
        assert_eq!(
            place(&default_nodes(), &two, Some(required(RACK)), CPU, 3),
            want(&[(&["b1", "r2"], 3)])
        );
        assert_eq!(
            place(&default_nodes(), &two, Some(required(RACK)), CPU, 2),
            want(&[(&["b2", "r2"], 2)])
        );
        assert_eq!(
            place(&default_nodes(), &two, Some(required(RACK)), CPU, 4),
            Err(r#"topology "default" allows to fit only 3 out of 4 pod(s)"#.into())
        );
        assert_eq!(
            place(
                &default_nodes(),
                &two,
                Some(required(RACK)),
                &[("memory", 1024)],
                4
            ),
            want(&[(&["b1", "r1"], 4)])
        );
    }

    #[test]
    fn block_required_across_racks_or_not_at_all() {
        let two = two_levels();
        assert_eq!(
            place(&default_nodes(), &two, Some(required(BLOCK)), CPU, 1),
            want(&[(&["b2", "r1"], 1)])
        );
        assert_eq!(
            place(&default_nodes(), &two, Some(required(BLOCK)), CPU, 4),
            want(&[(&["b1", "r1"], 1), (&["b1", "r2"], 3)])
        );
        assert_eq!(
            place(&default_nodes(), &two, Some(required(BLOCK)), &[("cpu", 4000)], 1),
            Err(r#"topology "default" doesn't allow to fit any of 1 pod(s). Total nodes: 4; excluded: resource "cpu": 4"#.into())
        );
        assert_eq!(
            place(&default_nodes(), &two, Some(required(BLOCK)), CPU, 5),
            Err(r#"topology "default" allows to fit only 4 out of 5 pod(s)"#.into())
        );
    }

    #[test]
    fn preferred_falls_back_upward_then_spans() {
        let two = two_levels();
        assert_eq!(
            place(&default_nodes(), &two, Some(preferred(RACK)), CPU, 4),
            want(&[(&["b1", "r1"], 1), (&["b1", "r2"], 3)])
        );
        let spanning = want(&[(&["b1", "r1"], 1), (&["b1", "r2"], 3), (&["b2", "r2"], 2)]);
        assert_eq!(
            place(&default_nodes(), &two, Some(preferred(RACK)), CPU, 6),
            spanning
        );
        assert_eq!(
            place(&default_nodes(), &two, Some(preferred(BLOCK)), CPU, 6),
            spanning
        );
        assert_eq!(
            place(&default_nodes(), &two, Some(preferred(BLOCK)), CPU, 10),
            Err(r#"topology "default" allows to fit only 7 out of 10 pod(s)"#.into())
        );
        let blocks = vec![
            node("b1", &[(BLOCK, "b1")], &[("cpu", "2"), ("pods", "20")]),
            node("b2", &[(BLOCK, "b2")], &[("cpu", "1"), ("pods", "10")]),
            node("b3", &[(BLOCK, "b3")], &[("cpu", "4"), ("pods", "40")]),
        ];
        assert_eq!(
            place(
                &blocks,
                &[BLOCK.to_string()],
                Some(preferred(BLOCK)),
                CPU,
                5
            ),
            want(&[(&["b2"], 1), (&["b3"], 4)])
        );
    }

    #[test]
    fn nodes_without_every_level_label_or_pods_capacity_do_not_count() {
        let nodes = vec![node(
            "x3",
            &[("zone", "zone-a"), (HOSTNAME_LABEL, "x3")],
            &[("cpu", "1"), ("pods", "10")],
        )];
        assert_eq!(
            place(&nodes, &three_levels(), Some(required(BLOCK)), CPU, 1),
            Err(format!("no topology domains at level: {BLOCK}"))
        );
        let no_pods = vec![node(
            "x1",
            &[(HOSTNAME_LABEL, "x1")],
            &[("cpu", "1"), ("pods", "0")],
        )];
        assert_eq!(
            place(&no_pods, &[HOSTNAME_LABEL.to_string()], Some(required(HOSTNAME_LABEL)), CPU, 1),
            Err(r#"topology "default" doesn't allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "pods": 1"#.into())
        );
    }

    fn sliced(level: &str, slice_level: &str, size: i32) -> PodSetTopologyRequest {
        PodSetTopologyRequest {
            required: Some(level.into()),
            pod_set_slice_required_topology: Some(slice_level.into()),
            pod_set_slice_size: Some(size),
            ..PodSetTopologyRequest::default()
        }
    }

    fn hosts(list: &[(&str, &str, &str, &str)]) -> Vec<Node> {
        list.iter()
            .map(|(b, r, x, cpu)| {
                node(
                    &format!("{b}-{r}-{x}"),
                    &[(BLOCK, b), (RACK, r), (HOSTNAME_LABEL, x)],
                    &[("cpu", cpu), ("pods", "10")],
                )
            })
            .collect()
    }

    #[test]
    fn slices_stay_whole_within_their_domain() {
        let nodes = hosts(&[
            ("b1", "r1", "x3", "3"),
            ("b1", "r1", "x5", "3"),
            ("b1", "r1", "x1", "3"),
        ]);
        assert_eq!(
            place(
                &nodes,
                &three_levels(),
                Some(sliced(BLOCK, HOSTNAME_LABEL, 2)),
                CPU,
                6
            ),
            want(&[(&["x1"], 2), (&["x3"], 2), (&["x5"], 2)])
        );
        let nodes = hosts(&[
            ("b1", "r1", "x3", "1"),
            ("b1", "r1", "x5", "1"),
            ("b1", "r2", "x1", "1"),
            ("b1", "r2", "x6", "1"),
            ("b1", "r2", "x2", "1"),
            ("b2", "r1", "x4", "1"),
            ("b2", "r1", "x7", "1"),
        ]);
        assert_eq!(
            place(
                &nodes,
                &three_levels(),
                Some(sliced(BLOCK, RACK, 2)),
                CPU,
                4
            ),
            want(&[(&["x3"], 1), (&["x5"], 1), (&["x1"], 1), (&["x2"], 1)])
        );
    }

    /// The host refuses answers a plugin could give: each check can fail.
    #[test]
    fn verify_refuses_answers_that_break_the_request() {
        let nodes = default_nodes();
        let levels = three_levels();
        let tree = DomainTree::build("default", &levels, &BTreeMap::new(), &nodes);
        let tr = required(RACK);
        let constraint = Constraint::resolve(&tree, Some(&tr), false, 2).unwrap();
        let mut per_pod = vec![0; tree.resources.len()];
        per_pod[tree.resource_index("pods").unwrap()] = 1000;
        per_pod[tree.resource_index("cpu").unwrap()] = 1000;
        let mut request = PlacementRequest {
            tree: &tree,
            free: tree.capacity.clone(),
            per_pod,
            missing: None,
            eligible: vec![true; tree.leaves.len()],
            excluded: Exclusions::default(),
            count: 2,
            constraint,
            leader: None,
        };
        let leaf = |host: &str| {
            tree.leaves
                .iter()
                .position(|&d| tree.domain(d).values.last().map(String::as_str) == Some(host))
                .unwrap()
        };
        let answer = |pairs: &[(&str, i32)]| Placement {
            leaves: pairs.iter().map(|&(h, n)| (leaf(h), n)).collect(),
            leader: None,
        };
        // x5 and x1 share rack b1/r2; x3 is in b1/r1; x4 (2 cpu) in b2/r2.
        assert_eq!(verify(&request, &answer(&[("x5", 1), ("x1", 1)])), Ok(()));
        assert_eq!(verify(&request, &answer(&[("x4", 2)])), Ok(()));
        assert!(
            verify(&request, &answer(&[("x5", 1)]))
                .unwrap_err()
                .contains("1 of 2 pods")
        );
        assert!(
            verify(&request, &answer(&[("x5", 2)]))
                .unwrap_err()
                .contains("cannot hold")
        );
        assert!(
            verify(&request, &answer(&[("x3", 1), ("x5", 1)]))
                .unwrap_err()
                .contains("more than one")
        );
        assert!(
            verify(&request, &answer(&[("x5", 1), ("x5", 1)]))
                .unwrap_err()
                .contains("twice")
        );
        request.eligible[leaf("x4")] = false;
        assert!(
            verify(&request, &answer(&[("x4", 2)]))
                .unwrap_err()
                .contains("cannot hold")
        );
        let sliced_tr = sliced(BLOCK, RACK, 2);
        request.constraint = Constraint::resolve(&tree, Some(&sliced_tr), false, 2).unwrap();
        assert!(
            verify(&request, &answer(&[("x3", 1), ("x5", 1)]))
                .unwrap_err()
                .contains("partial slice")
        );
    }

    #[test]
    fn constraints_resolve_with_kueues_messages() {
        let tree = DomainTree::build(
            "default",
            &three_levels(),
            &BTreeMap::new(),
            &default_nodes(),
        );
        let c = Constraint::resolve(&tree, Some(&preferred(RACK)), false, 4).unwrap();
        assert_eq!(
            (
                c.level,
                c.required,
                c.unconstrained,
                c.slice_level,
                c.slice_size
            ),
            (1, false, false, 2, 1)
        );
        assert_eq!(
            Constraint::resolve(&tree, Some(&required("cloud.com/none")), false, 1),
            Err("no requested topology level: cloud.com/none".into())
        );
        assert_eq!(
            Constraint::resolve(&tree, Some(&sliced(RACK, BLOCK, 2)), false, 2),
            Err(format!(
                "podset slice topology {BLOCK} is above the podset topology {RACK}"
            ))
        );
        assert_eq!(
            Constraint::resolve(&tree, None, false, 1),
            Err("topology level not specified".into())
        );
        let implied = Constraint::resolve(&tree, None, true, 1).unwrap();
        assert_eq!((implied.level, implied.unconstrained), (2, true));
        // Kueue's `buildSliceSizeAtLevel` rules and messages for further slice layers.
        let layers = |ls: &[(&str, i32)]| PodSetTopologyRequest {
            required: Some(BLOCK.into()),
            podset_slice_required_topology_constraints: ls
                .iter()
                .map(|&(t, size)| crate::api::topology::SliceTopologyConstraint {
                    topology: t.into(),
                    size,
                })
                .collect(),
            ..PodSetTopologyRequest::default()
        };
        let c = Constraint::resolve(
            &tree,
            Some(&layers(&[(BLOCK, 8), (HOSTNAME_LABEL, 2)])),
            false,
            8,
        )
        .unwrap();
        assert_eq!((c.slice_level, c.slice_size), (0, 8));
        // The levels down to the inner layer's take its size.
        assert_eq!(&c.inner[..3], &[0, 2, 2]);
        assert_eq!(c.layers(), [(0, 8), (2, 2)]);
        assert_eq!(
            Constraint::resolve(&tree, Some(&layers(&[(RACK, 4), (BLOCK, 2)])), false, 4),
            Err(format!(
                "additional slice layer topology {BLOCK} must be at a lower level than {RACK}"
            ))
        );
        assert_eq!(
            Constraint::resolve(
                &tree,
                Some(&layers(&[(RACK, 4), (HOSTNAME_LABEL, 3)])),
                false,
                4
            ),
            Err("additional slice layer size 3 must evenly divide parent layer size 4".into())
        );
        assert_eq!(
            Constraint::resolve(
                &tree,
                Some(&layers(&[(RACK, 4), ("cloud.com/none", 2)])),
                false,
                4
            ),
            Err("no requested topology level for additional slice layer: cloud.com/none".into())
        );
    }

    #[test]
    fn slices_take_more_free_slice_capacity_first_then_the_tightest_fit() {
        let nodes = hosts(&[
            ("b1", "r1", "x3", "6"),
            ("b1", "r1", "x5", "5"),
            ("b1", "r1", "x1", "4"),
            ("b1", "r1", "x6", "2"),
        ]);
        assert_eq!(
            place(
                &nodes,
                &three_levels(),
                Some(sliced(BLOCK, HOSTNAME_LABEL, 2)),
                CPU,
                12
            ),
            want(&[(&["x1"], 4), (&["x3"], 6), (&["x6"], 2)])
        );
        let nodes = hosts(&[
            ("b1", "r1", "x3", "3"),
            ("b1", "r1", "x5", "2"),
            ("b1", "r1", "x1", "2"),
        ]);
        assert_eq!(
            place(
                &nodes,
                &three_levels(),
                Some(sliced(BLOCK, HOSTNAME_LABEL, 2)),
                CPU,
                4
            ),
            want(&[(&["x1"], 2), (&["x5"], 2)])
        );
    }

    #[test]
    fn the_request_as_columns_sums_free_capacity_up_the_tree() {
        let tree = DomainTree::build(
            "default",
            &three_levels(),
            &BTreeMap::new(),
            &default_nodes(),
        );
        let request = PlacementRequest {
            tree: &tree,
            free: tree.capacity.clone(),
            per_pod: vec![0; tree.resources.len()],
            missing: None,
            eligible: vec![true; tree.leaves.len()],
            excluded: Exclusions::default(),
            count: 1,
            constraint: Constraint::resolve(&tree, Some(&unconstrained()), false, 1).unwrap(),
            leader: None,
        };
        let cols = request.columns();
        let cpu = tree.resource_index("cpu").unwrap();
        let domain = |values: &[&str]| {
            tree.domains
                .iter()
                .position(|d| {
                    d.values
                        .iter()
                        .map(String::as_str)
                        .eq(values.iter().copied())
                })
                .unwrap()
        };
        assert_eq!(cols.free[cpu][domain(&["b1"])], 4000);
        assert_eq!(cols.free[cpu][domain(&["b1", "r2"])], 3000);
        assert_eq!(cols.free[cpu][domain(&["b2", "r2", "x4"])], 2000);
        assert_eq!(cols.parents[domain(&["b1", "r2"])], domain(&["b1"]) as i32);
        assert_eq!(cols.parents[domain(&["b2"])], -1);
        assert_eq!(cols.levels[domain(&["b2", "r1", "x2"])], 2);
        assert_eq!(cols.leaf_domains.len(), 6);
    }
}
