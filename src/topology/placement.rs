//! Placement: how many pods of a podSet go to each leaf domain, the fourth decision.
//!
//! [`PlacementRequest`] carries the domain tree as columns (per domain: level, parent; per leaf:
//! free capacity per resource, eligibility) and what the podSet asks; a [`PlacementPolicy`]
//! answers pod counts per leaf; [`verify`] checks any answer: every pod placed, on eligible
//! leaves within their free capacity, inside one domain of a required level, whole slices per
//! slice domain. [`KueueBestFit`] is Kueue's default algorithm (`findTopologyAssignment` in
//! `pkg/cache/scheduler/tas_flavor_snapshot.go`: BestFit by domain, then the lowest level's
//! tightest fit; unconstrained requests take the least free capacity first, Kueue's
//! `TASProfileMixed`, on by default). Not translated: leaders (podSet groups), multi-layer
//! slices, balanced placement and preferred node affinity (Kueue alpha, off by default).

use std::collections::BTreeMap;

use crate::api::topology::PodSetTopologyRequest;

use super::tree::{DomainId, DomainTree};

/// What a podSet asks of a topology, resolved against the tree's levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Constraint {
    /// The level all pods should share a domain of (required) or start from (preferred).
    pub level: usize,
    pub required: bool,
    /// Any domains will do (least free capacity first).
    pub unconstrained: bool,
    /// Slices of `slice_size` pods each stay within one domain of `slice_level`.
    pub slice_level: usize,
    pub slice_size: i32,
}

impl Constraint {
    /// Kueue's `levelKey` / `isRequired` / `isUnconstrained` / slice size, with its messages.
    /// `implied`: the podSet asks for nothing but its ClusterQueue has only TAS flavors.
    pub fn resolve(
        tree: &DomainTree,
        tr: Option<&PodSetTopologyRequest>,
        implied: bool,
        count: i32,
    ) -> Result<Constraint, String> {
        let lowest = tree.levels.len().saturating_sub(1);
        let layers = tr
            .map(PodSetTopologyRequest::slice_layers)
            .unwrap_or_default();
        if layers.len() > 1 {
            return Err("multi-layer slice topology is not supported by wasq".into());
        }
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
        })
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
    pub free: Vec<Vec<i64>>,
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
}

impl PlacementRequest<'_> {
    /// How many pods fit on a leaf, and the resource that limits it.
    pub fn fits_on(&self, leaf: usize) -> (i32, Option<&str>) {
        if let Some(r) = &self.missing {
            return (0, Some(r));
        }
        let mut best: Option<(i64, usize)> = None;
        for (c, &need) in self.per_pod.iter().enumerate() {
            if need <= 0 {
                continue;
            }
            let n = self.free[leaf][c].max(0) / need;
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
                    column[id.index()] += self.free[leaf][c];
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

/// An answer: pods per leaf (leaf index, count), leaves in domain order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Placement {
    pub leaves: Vec<(usize, i32)>,
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
        Search::new(request).run()
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
        if !request.eligible[leaf] || n > request.fits_on(leaf).0 {
            return Err(format!("leaf {leaf} cannot hold {n} pods"));
        }
        placed += i64::from(n);
    }
    if placed != i64::from(request.count) {
        return Err(format!("{placed} of {} pods placed", request.count));
    }
    let c = request.constraint;
    if c.required {
        let mut at = answer
            .leaves
            .iter()
            .map(|&(l, _)| tree.ancestor_at(tree.leaves[l], c.level));
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
    Ok(())
}

/// Kueue's per-domain state during one search: pods and slices that fit (then: assigned).
struct Search<'r, 'a> {
    req: &'r PlacementRequest<'a>,
    tree: &'a DomainTree,
    pods: Vec<i32>,
    slices: Vec<i32>,
    excluded: Exclusions,
}

impl<'r, 'a> Search<'r, 'a> {
    fn new(req: &'r PlacementRequest<'a>) -> Self {
        let n = req.tree.domains.len();
        Search {
            req,
            tree: req.tree,
            pods: vec![0; n],
            slices: vec![0; n],
            excluded: req.excluded.clone(),
        }
    }

    fn least_free(&self) -> bool {
        self.req.constraint.unconstrained
    }

    /// Phase 1 (Kueue's `fillInCounts`).
    fn fill_in_counts(&mut self) {
        self.excluded.total_nodes = self.tree.leaves.len();
        for (i, &d) in self.tree.leaves.iter().enumerate() {
            if !self.req.eligible[i] {
                continue;
            }
            let (n, limiting) = self.req.fits_on(i);
            self.pods[d.index()] = n;
            if n == 0
                && let Some(r) = limiting
            {
                *self.excluded.resources.entry(r.to_string()).or_default() += 1;
            }
        }
        for &root in &self.tree.per_level[0] {
            self.fill_helper(root);
        }
    }

    fn fill_helper(&mut self, d: DomainId) {
        let c = self.req.constraint;
        let dom = self.tree.domain(d);
        let (mut pods, mut slices) = (0i32, 0i32);
        for &child in &dom.children {
            self.fill_helper(child);
            pods = pods.saturating_add(self.pods[child.index()]);
            slices = slices.saturating_add(self.slices[child.index()]);
        }
        if !dom.children.is_empty() {
            self.pods[d.index()] = pods;
        }
        self.slices[d.index()] = if dom.level == c.slice_level {
            self.pods[d.index()] / c.slice_size
        } else {
            slices
        };
    }

    /// Kueue's `sortedDomains`: slices (descending for BestFit, ascending for least free
    /// capacity), then pods ascending, then level values.
    fn sorted(&self, mut ds: Vec<DomainId>) -> Vec<DomainId> {
        let least = self.least_free();
        ds.sort_by(|&a, &b| {
            let (sa, sb) = (self.slices[a.index()], self.slices[b.index()]);
            let by_slices = if least { sa.cmp(&sb) } else { sb.cmp(&sa) };
            by_slices
                .then(self.pods[a.index()].cmp(&self.pods[b.index()]))
                .then_with(|| self.tree.domain(a).values.cmp(&self.tree.domain(b).values))
        });
        ds
    }

    /// Kueue's `findBestFitDomainBy`: the first domain with the smallest count that still
    /// holds `needed`; the first domain when none does.
    fn best_fit(&self, ds: &[DomainId], needed: i32, slices: bool) -> DomainId {
        let count = |d: DomainId| {
            if slices {
                self.slices[d.index()]
            } else {
                self.pods[d.index()]
            }
        };
        let mut best = None;
        for &d in ds {
            let c = count(d);
            if c >= needed && best.is_none_or(|(_, b)| c < b) {
                best = Some((d, c));
            }
        }
        best.map_or(ds[0], |(d, _)| d)
    }

    fn not_fit(&self, fit: i32, total: i32) -> String {
        let unit = if self.req.constraint.slice_size == 1 {
            "pod"
        } else {
            "slice"
        };
        let topology = &self.tree.topology;
        let mut m = if fit == 0 {
            format!("topology {topology:?} doesn't allow to fit any of {total} {unit}(s)")
        } else {
            format!("topology {topology:?} allows to fit only {fit} out of {total} {unit}(s)")
        };
        if let Some(e) = self.excluded.describe() {
            m.push_str(". ");
            m.push_str(&e);
        }
        m
    }

    /// Phase 2a (Kueue's `findLevelWithFitDomains`).
    fn find_level_with_fit(&self, level: usize) -> Result<(usize, Vec<DomainId>), String> {
        let c = self.req.constraint;
        let domains = &self.tree.per_level[level];
        if domains.is_empty() {
            return Err(format!(
                "no topology domains at level: {}",
                self.tree.levels[level]
            ));
        }
        let sorted = self.sorted(domains.clone());
        let need = self.req.count / c.slice_size;
        let mut top = sorted[0];
        if !self.least_free() && self.slices[top.index()] >= need {
            top = self.best_fit(&sorted, need, true);
        }
        if self.least_free() {
            if let Some(&d) = sorted.iter().find(|d| self.slices[d.index()] >= need) {
                return Ok((level, vec![d]));
            }
            if c.required {
                let last = *sorted.last().expect("not empty");
                return Err(self.not_fit(self.pods[last.index()], need));
            }
        }
        if self.slices[top.index()] >= need {
            return Ok((level, vec![top]));
        }
        if c.required {
            return Err(self.not_fit(self.slices[top.index()], need));
        }
        if level > 0 && !c.unconstrained {
            return self.find_level_with_fit(level - 1);
        }
        let mut results = Vec::new();
        let mut remaining = need;
        for i in 0..sorted.len() {
            if remaining <= 0 {
                break;
            }
            let mut d = sorted[i];
            if !self.least_free() && self.slices[d.index()] >= remaining {
                d = self.best_fit(&sorted[i..], remaining, true);
            }
            results.push(d);
            remaining -= self.slices[d.index()];
        }
        if remaining > 0 {
            return Err(self.not_fit(need - remaining, need));
        }
        Ok((level, results))
    }

    /// Kueue's `updateCountsToMinimumGeneric` without leaders: take domains in order until
    /// `count` pods (whole slices when `slices`) are covered, the last one the tightest fit;
    /// each chosen domain's count becomes what it is given.
    fn update_counts_to_minimum(
        &mut self,
        ds: &[DomainId],
        count: i32,
        slice_size: i32,
        slices: bool,
    ) -> Result<Vec<DomainId>, String> {
        let mut result = Vec::new();
        let mut remaining = if slices { count / slice_size } else { count };
        for i in 0..ds.len() {
            let mut d = ds[i];
            let have = |s: &Self, d: DomainId| {
                if slices {
                    s.slices[d.index()]
                } else {
                    s.pods[d.index()]
                }
            };
            if !self.least_free() && have(self, d) >= remaining {
                d = self.best_fit(&ds[i..], remaining, slices);
            }
            let h = have(self, d);
            if h >= remaining {
                if slices {
                    self.pods[d.index()] = remaining * slice_size;
                    self.slices[d.index()] = remaining;
                } else {
                    self.pods[d.index()] = remaining;
                }
                result.push(d);
                return Ok(result);
            }
            if slices {
                self.pods[d.index()] = h * slice_size;
            }
            remaining -= h;
            result.push(d);
        }
        Err(format!(
            "topology {:?}: {remaining} pod(s) or slice(s) left unplaced",
            self.tree.topology
        ))
    }

    fn run(mut self) -> Result<Placement, String> {
        let c = self.req.constraint;
        if self.req.count == 0 {
            return Ok(Placement::default());
        }
        self.fill_in_counts();
        let (fit_level, fit) = self.find_level_with_fit(c.level)?;
        let count = self.req.count;
        let mut current = self.update_counts_to_minimum(&fit, count, c.slice_size, true)?;
        let lowest = self.tree.levels.len() - 1;
        let mut level = fit_level;
        // Above the slice level: all chosen domains' children together, greedily.
        while level < lowest.min(c.slice_level) {
            let lower: Vec<DomainId> = current
                .iter()
                .flat_map(|&d| self.tree.domain(d).children.iter().copied())
                .collect();
            let sorted = self.sorted(lower);
            current = self.update_counts_to_minimum(&sorted, count, c.slice_size, true)?;
            level += 1;
        }
        // At or below the slice level: each domain's pods among its own children.
        while level < lowest {
            let mut next = Vec::new();
            for d in current {
                let sorted = self.sorted(self.tree.domain(d).children.clone());
                let pods = self.pods[d.index()];
                next.extend(self.update_counts_to_minimum(&sorted, pods, 1, false)?);
            }
            current = next;
            level += 1;
        }
        current.sort_by(|&a, &b| self.tree.domain(a).values.cmp(&self.tree.domain(b).values));
        Ok(Placement {
            leaves: current
                .into_iter()
                .filter(|d| self.pods[d.index()] > 0)
                .map(|d| {
                    let leaf = self.tree.domain(d).leaf.expect("lowest level");
                    (leaf, self.pods[d.index()])
                })
                .collect(),
        })
    }
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
        };
        let leaf = |host: &str| {
            tree.leaves
                .iter()
                .position(|&d| tree.domain(d).values.last().map(String::as_str) == Some(host))
                .unwrap()
        };
        let answer = |pairs: &[(&str, i32)]| Placement {
            leaves: pairs.iter().map(|&(h, n)| (leaf(h), n)).collect(),
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
