//! The quota tree: ClusterQueues as leaves, Cohorts as inner nodes, and Kueue's arithmetic over it.
//!
//! Structure (quotas, limits, parents) is immutable once built and shared; usage lives in
//! [`Usage`], a flat vector that a scheduling cycle copies as its snapshot. The formulas are
//! Kueue's (`pkg/cache/scheduler/resource_node.go`):
//! - `subtree(cq) = nominal`; `subtree(cohort) = own nominal + Σ child (subtree(child) − local(child))`
//! - `local(n) = max(0, subtree(n) − lendingLimit)` when a lending limit is set, else 0
//! - `usage(cohort) = Σ child max(0, usage(child) − local(child))`
//! - `available(n)`: root → `subtree − usage`; else `localAvailable + min(available(parent),
//!   subtree − local − max(0, usage − local) + borrowingLimit)`
//! - `potentialAvailable(n)`: root → `subtree`; else `min(local + potential(parent), subtree + borrowingLimit)`
//!
//! All figures are `i64` milli-units; "unlimited" sums saturate instead of wrapping.

use super::epoch::Epoch;
use super::overlay::{UsageRead, UsageWrite};
use super::resources::{FrAmounts, FrIdx};

/// A node of the tree: a ClusterQueue or a Cohort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

impl NodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    ClusterQueue,
    Cohort,
}

/// The quota a node declares for one flavor-resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResourceQuota {
    pub nominal: i64,
    pub borrowing_limit: Option<i64>,
    pub lending_limit: Option<i64>,
}

#[derive(Debug, Clone)]
pub struct Node {
    pub name: String,
    pub kind: NodeKind,
    pub parent: Option<NodeId>,
    pub children: Vec<NodeId>,
    /// Cohort height as Kueue's `getNodeHeight` computes it (0 for ClusterQueues).
    pub height: u32,
}

/// What the tree knows of one node and flavor-resource: its declared quota and what is
/// derived from it at build time. All of a node's cells sit side by side, and the cells of
/// every node in one array (as [`Usage`] keeps usage): a quota check reads one cache line
/// rather than a node and two lists of its own.
#[derive(Debug, Clone, Copy, Default)]
struct Cell {
    quota: ResourceQuota,
    /// Subtree quota: the nominal quota plus what the children may lend.
    subtree: i64,
    /// The part of the subtree quota the node keeps from its parent (its lending limit's
    /// complement; 0 without a lending limit).
    local: i64,
}

/// The immutable structure of every cohort tree.
#[derive(Debug, Clone, Default)]
pub struct QuotaTree {
    nodes: Vec<Node>,
    /// Quota per node and flavor-resource, at `node * n_fr + fr`.
    cells: Vec<Cell>,
    n_fr: usize,
}

/// Usage per node and flavor-resource. Cheap to copy: this is the per-cycle snapshot (a
/// cycle copies it into the buffer the previous cycle used, see [`Usage::copy_from`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Usage {
    values: Vec<i64>,
    /// Per node and flavor-resource: how many of the node's children hold more than their
    /// subtree quota (are not within nominal, in Kueue's words). Kept by
    /// [`QuotaTree::add_usage`]; read by [`QuotaTree::any_child_over`].
    over: Vec<u32>,
    n_fr: usize,
    /// Which figures these are ([`Usage::epoch`]).
    epoch: Epoch,
}

/// Builder input for one node.
#[derive(Debug, Clone)]
pub struct NodeSpec {
    pub name: String,
    pub kind: NodeKind,
    pub parent: Option<NodeId>,
    pub quotas: Vec<(FrIdx, ResourceQuota)>,
}

impl QuotaTree {
    /// Builds the tree. `specs[i]` becomes `NodeId(i)`; parents must not form cycles (the caller
    /// detaches cyclic cohorts first).
    pub fn build(specs: Vec<NodeSpec>, n_fr: usize) -> QuotaTree {
        let mut cells = vec![Cell::default(); specs.len() * n_fr];
        let mut nodes: Vec<Node> = specs
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                for (fr, q) in s.quotas {
                    cells[i * n_fr + fr.index()].quota = q;
                }
                Node {
                    name: s.name,
                    kind: s.kind,
                    parent: s.parent,
                    children: Vec::new(),
                    height: 0,
                }
            })
            .collect();
        for cell in &mut cells {
            cell.subtree = cell.quota.nominal;
        }
        for i in 0..nodes.len() {
            if let Some(p) = nodes[i].parent {
                nodes[p.index()].children.push(NodeId(i as u32));
            }
        }
        let mut tree = QuotaTree { nodes, cells, n_fr };
        let roots: Vec<NodeId> = (0..tree.nodes.len())
            .filter(|&i| tree.nodes[i].parent.is_none())
            .map(|i| NodeId(i as u32))
            .collect();
        for root in roots {
            tree.accumulate(root);
        }
        tree
    }

    fn cell(&self, id: NodeId, fr: FrIdx) -> &Cell {
        &self.cells[id.index() * self.n_fr + fr.index()]
    }

    /// Post-order: subtree quota, local quota and height.
    fn accumulate(&mut self, id: NodeId) {
        let children = self.nodes[id.index()].children.clone();
        // Kueue's getNodeHeight: min(child count, 1), then max over child cohorts' height + 1.
        let mut height = u32::from(!children.is_empty());
        for &child in &children {
            self.accumulate(child);
            if self.nodes[child.index()].kind == NodeKind::Cohort {
                height = height.max(self.nodes[child.index()].height + 1);
            }
            for fr in 0..self.n_fr {
                let c = self.cells[child.index() * self.n_fr + fr];
                let delta = c.subtree.saturating_sub(c.local);
                let parent = &mut self.cells[id.index() * self.n_fr + fr];
                parent.subtree = parent.subtree.saturating_add(delta);
            }
        }
        // The node's subtree quota is final: so is what it keeps from its parent.
        for cell in &mut self.cells[id.index() * self.n_fr..(id.index() + 1) * self.n_fr] {
            cell.local = match cell.quota.lending_limit {
                Some(limit) => (cell.subtree.saturating_sub(limit)).max(0),
                None => 0,
            };
        }
        let node = &mut self.nodes[id.index()];
        if node.kind == NodeKind::Cohort {
            node.height = height;
        }
    }

    pub fn n_fr(&self) -> usize {
        self.n_fr
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    pub fn nodes(&self) -> impl Iterator<Item = (NodeId, &Node)> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (NodeId(i as u32), n))
    }

    pub fn parent(&self, id: NodeId) -> Option<NodeId> {
        self.nodes[id.index()].parent
    }

    /// Ancestors from the parent up to the root.
    pub fn ancestors(&self, id: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        std::iter::successors(self.parent(id), move |&n| self.parent(n))
    }

    /// The lowest cohort that has both nodes below it (`None` when they are in different trees).
    pub fn lowest_common_ancestor(&self, a: NodeId, b: NodeId) -> Option<NodeId> {
        let above_a: Vec<NodeId> = self.ancestors(a).collect();
        self.ancestors(b).find(|n| above_a.contains(n))
    }

    pub fn root(&self, id: NodeId) -> NodeId {
        self.ancestors(id).last().unwrap_or(id)
    }

    /// Every ClusterQueue in the subtree of `id` (including `id` itself if it is one).
    pub fn subtree_cluster_queues(&self, id: NodeId) -> Vec<NodeId> {
        let mut out = Vec::new();
        let mut stack = vec![id];
        while let Some(n) = stack.pop() {
            let node = &self.nodes[n.index()];
            if node.kind == NodeKind::ClusterQueue {
                out.push(n);
            }
            stack.extend(node.children.iter().rev().copied());
        }
        out.sort();
        out
    }

    pub fn quota(&self, id: NodeId, fr: FrIdx) -> ResourceQuota {
        self.cell(id, fr).quota
    }

    /// The node's declared quota for every flavor-resource, in [`FrIdx`] order.
    pub fn quotas(&self, id: NodeId) -> impl Iterator<Item = &ResourceQuota> {
        self.cells[id.index() * self.n_fr..(id.index() + 1) * self.n_fr]
            .iter()
            .map(|c| &c.quota)
    }

    pub fn subtree_quota(&self, id: NodeId, fr: FrIdx) -> i64 {
        self.cell(id, fr).subtree
    }

    pub fn local_quota(&self, id: NodeId, fr: FrIdx) -> i64 {
        self.cell(id, fr).local
    }

    pub fn new_usage(&self) -> Usage {
        Usage {
            values: vec![0; self.nodes.len() * self.n_fr],
            over: vec![0; self.nodes.len() * self.n_fr],
            n_fr: self.n_fr,
            epoch: Epoch::default(),
        }
    }

    /// Capacity left in the node's own quota that is not lent out.
    pub fn local_available(&self, usage: &impl UsageRead, id: NodeId, fr: FrIdx) -> i64 {
        (self.local_quota(id, fr) - usage.get(id, fr)).max(0)
    }

    /// What the node could still take for `fr`, borrowing as far as its limits allow (≥ 0).
    pub fn available(&self, usage: &impl UsageRead, id: NodeId, fr: FrIdx) -> i64 {
        self.available_raw(usage, id, fr).max(0)
    }

    fn available_raw(&self, usage: &impl UsageRead, id: NodeId, fr: FrIdx) -> i64 {
        let cell = self.cell(id, fr);
        let used = usage.get(id, fr);
        let Some(parent) = self.parent(id) else {
            return cell.subtree.saturating_sub(used);
        };
        let mut from_parent = self.available_raw(usage, parent, fr);
        if let Some(limit) = cell.quota.borrowing_limit {
            let stored_in_parent = cell.subtree.saturating_sub(cell.local);
            let used_in_parent = (used - cell.local).max(0);
            let cap = stored_in_parent
                .saturating_sub(used_in_parent)
                .saturating_add(limit);
            from_parent = from_parent.min(cap);
        }
        (cell.local - used).max(0).saturating_add(from_parent)
    }

    /// The most the node could ever hold of `fr`, ignoring current usage.
    pub fn potential_available(&self, id: NodeId, fr: FrIdx) -> i64 {
        let cell = self.cell(id, fr);
        let Some(parent) = self.parent(id) else {
            return cell.subtree;
        };
        let mut avail = cell
            .local
            .saturating_add(self.potential_available(parent, fr));
        if let Some(limit) = cell.quota.borrowing_limit {
            avail = avail.min(cell.subtree.saturating_add(limit));
        }
        avail
    }

    /// Adds (or with a negative `delta`, removes) usage at `id`, bubbling up only the part that
    /// exceeds the node's local quota.
    pub fn add_usage(&self, usage: &mut impl UsageWrite, id: NodeId, fr: FrIdx, delta: i64) {
        let mut node = id;
        let mut delta = delta;
        loop {
            let cell = self.cell(node, fr);
            let before = usage.get(node, fr);
            let after = before + delta;
            usage.set(node, fr, after);
            let Some(parent) = self.parent(node) else {
                return;
            };
            let over = after > cell.subtree;
            if (before > cell.subtree) != over {
                usage.child_crossed(parent, fr, over);
            }
            let local = cell.local;
            delta = (after - local).max(0) - (before - local).max(0);
            if delta == 0 {
                return;
            }
            node = parent;
        }
    }

    /// Whether the node would be over its own quota with `extra` more usage: for a
    /// ClusterQueue, past nominal; for a Cohort, past its subtree quota.
    pub fn borrowing_with(
        &self,
        usage: &impl UsageRead,
        id: NodeId,
        fr: FrIdx,
        extra: i64,
    ) -> bool {
        let cell = self.cell(id, fr);
        let limit = match self.nodes[id.index()].kind {
            NodeKind::ClusterQueue => cell.quota.nominal,
            NodeKind::Cohort => cell.subtree,
        };
        limit < usage.get(id, fr).saturating_add(extra)
    }

    pub fn borrowing(&self, usage: &impl UsageRead, id: NodeId, fr: FrIdx) -> bool {
        self.borrowing_with(usage, id, fr, 0)
    }

    /// Whether some child of `id` holds more than its subtree quota of one of `frs`: the only
    /// children Kueue's `collectCandidatesInSubtree` looks into. `false`: a walk of the
    /// children for preemption candidates would find none (one read per flavor-resource rather
    /// than one per child).
    pub fn any_child_over(&self, usage: &Usage, id: NodeId, frs: &[FrIdx]) -> bool {
        frs.iter().any(|&fr| usage.over[usage.index(id, fr)] > 0)
    }

    /// Kueue's `IsWithinNominalInResources`: usage ≤ subtree quota on every listed resource.
    pub fn within_nominal(&self, usage: &impl UsageRead, id: NodeId, frs: &[FrIdx]) -> bool {
        frs.iter()
            .all(|&fr| usage.get(id, fr) <= self.subtree_quota(id, fr))
    }

    /// Kueue's `FindHeightOfLowestSubtreeThatFits`: the borrowing level of adding `val` to a
    /// ClusterQueue (0 = within nominal), and whether it fits below the root.
    pub fn borrow_level(
        &self,
        usage: &impl UsageRead,
        cq: NodeId,
        fr: FrIdx,
        val: i64,
    ) -> (u32, bool) {
        let has_parent = self.parent(cq).is_some();
        if !self.borrowing_with(usage, cq, fr, val) || !has_parent {
            return (0, has_parent);
        }
        let mut remaining = val - self.local_available(usage, cq, fr);
        for node in self.ancestors(cq) {
            if !self.borrowing_with(usage, node, fr, remaining) {
                return (self.nodes[node.index()].height, self.parent(node).is_some());
            }
            remaining -= self.local_available(usage, node, fr);
        }
        (self.nodes[self.root(cq).index()].height, false)
    }

    /// Kueue's `QuantitiesFitInQuota`: whether usage + requests stays within the node's subtree
    /// quota, and what of the requests is left after its local capacity.
    pub fn quantities_fit(
        &self,
        usage: &Usage,
        id: NodeId,
        requests: &[(FrIdx, i64)],
    ) -> (bool, FrAmounts) {
        let mut fits = true;
        let mut remaining = FrAmounts::with_capacity(requests.len());
        for &(fr, v) in requests {
            if self.subtree_quota(id, fr) < usage.get(id, fr).saturating_add(v) {
                fits = false;
            }
            remaining.push((fr, (v - self.local_available(usage, id, fr)).max(0)));
        }
        (fits, remaining)
    }
}

impl UsageRead for Usage {
    fn get(&self, id: NodeId, fr: FrIdx) -> i64 {
        Usage::get(self, id, fr)
    }
}

impl UsageWrite for Usage {
    fn set(&mut self, id: NodeId, fr: FrIdx, v: i64) {
        let i = self.index(id, fr);
        self.values[i] = v;
        self.epoch.changed();
    }

    fn child_crossed(&mut self, parent: NodeId, fr: FrIdx, over: bool) {
        let i = self.index(parent, fr);
        if over {
            self.over[i] += 1;
        } else {
            self.over[i] -= 1;
        }
    }
}

impl Usage {
    /// Makes `self` equal to `other`, reusing `self`'s buffer (no allocation once it is large
    /// enough): a cycle's snapshot.
    pub fn copy_from(&mut self, other: &Usage) {
        self.values.clone_from(&other.values);
        self.over.clone_from(&other.over);
        self.n_fr = other.n_fr;
        self.epoch.copy_from(&other.epoch);
    }

    /// A number naming these figures: the same while they do not change (in copies and clones
    /// too), never given to other figures ([`Epoch`]).
    pub fn epoch(&self) -> u64 {
        self.epoch.get()
    }

    pub fn get(&self, id: NodeId, fr: FrIdx) -> i64 {
        self.values[self.index(id, fr)]
    }

    pub(super) fn index(&self, id: NodeId, fr: FrIdx) -> usize {
        id.index() * self.n_fr + fr.index()
    }

    /// Entries (nodes × flavor-resources).
    pub(super) fn len(&self) -> usize {
        self.values.len()
    }

    /// How many flavor-resources a row has.
    pub fn n_fr(&self) -> usize {
        self.n_fr
    }

    /// Usage of one node for every flavor-resource.
    pub fn of(&self, id: NodeId) -> &[i64] {
        &self.values[id.index() * self.n_fr..(id.index() + 1) * self.n_fr]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FR: FrIdx = FrIdx(0);

    fn q(
        nominal: i64,
        borrowing: Option<i64>,
        lending: Option<i64>,
    ) -> Vec<(FrIdx, ResourceQuota)> {
        vec![(
            FR,
            ResourceQuota {
                nominal,
                borrowing_limit: borrowing,
                lending_limit: lending,
            },
        )]
    }

    fn spec(
        name: &str,
        kind: NodeKind,
        parent: Option<u32>,
        quotas: Vec<(FrIdx, ResourceQuota)>,
    ) -> NodeSpec {
        NodeSpec {
            name: name.into(),
            kind,
            parent: parent.map(NodeId),
            quotas,
        }
    }

    /// cohort(0) <- a(1) nominal 10, b(2) nominal 6 lending 2, borrowing limit 3
    fn two_queues() -> QuotaTree {
        QuotaTree::build(
            vec![
                spec("cohort", NodeKind::Cohort, None, vec![]),
                spec("a", NodeKind::ClusterQueue, Some(0), q(10, None, None)),
                spec("b", NodeKind::ClusterQueue, Some(0), q(6, Some(3), Some(2))),
            ],
            1,
        )
    }

    #[test]
    fn subtree_quota_counts_only_what_children_lend() {
        let t = two_queues();
        assert_eq!(t.subtree_quota(NodeId(0), FR), 10 + 2);
        assert_eq!(t.local_quota(NodeId(2), FR), 4);
        assert_eq!(t.local_quota(NodeId(1), FR), 0);
    }

    #[test]
    fn available_respects_lending_and_borrowing_limits() {
        let t = two_queues();
        let mut u = t.new_usage();
        assert_eq!(t.available(&u, NodeId(1), FR), 12);
        // b: 4 kept locally + min(12 from cohort, 2 stored + 3 borrowing) = 9
        assert_eq!(t.available(&u, NodeId(2), FR), 9);
        assert_eq!(t.potential_available(NodeId(2), FR), 9);
        assert_eq!(t.potential_available(NodeId(1), FR), 12);
        t.add_usage(&mut u, NodeId(1), FR, 11);
        assert_eq!(u.get(NodeId(0), FR), 11);
        assert_eq!(t.available(&u, NodeId(1), FR), 1);
        // b keeps its 4 local units whatever a does.
        assert_eq!(t.available(&u, NodeId(2), FR), 5);
        t.add_usage(&mut u, NodeId(2), FR, 5);
        // only the 1 unit past b's local quota reaches the cohort.
        assert_eq!(u.get(NodeId(0), FR), 12);
        assert_eq!(t.available(&u, NodeId(1), FR), 0);
        t.add_usage(&mut u, NodeId(2), FR, -5);
        t.add_usage(&mut u, NodeId(1), FR, -11);
        assert_eq!(u, t.new_usage());
    }

    #[test]
    fn borrow_level_is_height_of_lowest_fitting_subtree() {
        // root(0) <- mid(1) nominal 4 <- cq(2) nominal 2 ; root also <- other(3) nominal 10
        let t = QuotaTree::build(
            vec![
                spec("root", NodeKind::Cohort, None, vec![]),
                spec("mid", NodeKind::Cohort, Some(0), q(4, None, None)),
                spec("cq", NodeKind::ClusterQueue, Some(1), q(2, None, None)),
                spec("other", NodeKind::ClusterQueue, Some(0), q(10, None, None)),
            ],
            1,
        );
        let u = t.new_usage();
        assert_eq!(t.borrow_level(&u, NodeId(2), FR, 2), (0, true));
        assert_eq!(t.borrow_level(&u, NodeId(2), FR, 5), (1, true));
        assert_eq!(t.borrow_level(&u, NodeId(2), FR, 7), (2, false));
        assert_eq!(t.node(NodeId(0)).height, 2);
    }

    #[test]
    fn standalone_queue_never_borrows() {
        let t = QuotaTree::build(
            vec![spec("solo", NodeKind::ClusterQueue, None, q(5, None, None))],
            1,
        );
        let mut u = t.new_usage();
        t.add_usage(&mut u, NodeId(0), FR, 3);
        assert_eq!(t.available(&u, NodeId(0), FR), 2);
        assert_eq!(t.potential_available(NodeId(0), FR), 5);
        assert_eq!(t.borrow_level(&u, NodeId(0), FR, 4), (0, false));
    }

    /// Property tests: random cohort forests and usage sequences against Kueue's formulas,
    /// recomputed here from the node specs without going through `QuotaTree`'s bookkeeping.
    mod props {
        use super::*;
        use proptest::collection::vec;
        use proptest::option;
        use proptest::prelude::*;
        use proptest::sample::Index;

        /// Cohort levels at most (a root cohort is level 1).
        const MAX_COHORT_DEPTH: usize = 3;

        fn config() -> ProptestConfig {
            ProptestConfig {
                cases: 256,
                // No regression files in src/: a failure prints its minimal case.
                failure_persistence: None,
                ..ProptestConfig::default()
            }
        }

        /// Generated specs: cohorts first (parents before children), then ClusterQueues.
        #[derive(Clone)]
        struct Forest {
            specs: Vec<NodeSpec>,
            n_fr: usize,
        }

        impl Forest {
            fn tree(&self) -> QuotaTree {
                QuotaTree::build(self.specs.clone(), self.n_fr)
            }

            fn cluster_queues(&self) -> Vec<NodeId> {
                (0..self.specs.len())
                    .filter(|&i| self.specs[i].kind == NodeKind::ClusterQueue)
                    .map(|i| NodeId(i as u32))
                    .collect()
            }
        }

        /// One line per node, e.g. `cq4 <- c0 [fr0 5 b2 l3] [fr1 0]`, so minimal cases read easily.
        impl std::fmt::Debug for Forest {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                writeln!(f, "Forest ({} flavor-resources)", self.n_fr)?;
                for (i, s) in self.specs.iter().enumerate() {
                    write!(f, "  {i}:{}", s.name)?;
                    if let Some(p) = s.parent {
                        write!(f, " <- {}", p.0)?;
                    }
                    for (fr, q) in &s.quotas {
                        write!(f, " [fr{} {}", fr.0, q.nominal)?;
                        if let Some(b) = q.borrowing_limit {
                            write!(f, " b{b}")?;
                        }
                        if let Some(l) = q.lending_limit {
                            write!(f, " l{l}")?;
                        }
                        write!(f, "]")?;
                    }
                    writeln!(f)?;
                }
                Ok(())
            }
        }

        /// A nominal quota with an optional borrowing limit and a lending limit ≤ nominal.
        fn resource_quota(max_nominal: i64) -> impl Strategy<Value = ResourceQuota> {
            (0..=max_nominal).prop_flat_map(|nominal| {
                (option::of(0..=6i64), option::of(0..=nominal)).prop_map(
                    move |(borrowing_limit, lending_limit)| ResourceQuota {
                        nominal,
                        borrowing_limit,
                        lending_limit,
                    },
                )
            })
        }

        /// 1–4 cohorts up to three levels deep (occasionally a second root), 1–5 ClusterQueues
        /// (occasionally standalone), one or two flavor-resources; cohorts may have no own quota.
        fn forest() -> impl Strategy<Value = Forest> {
            (1..=2usize, 1..=4usize, 1..=5usize).prop_flat_map(|(n_fr, n_cohorts, n_cqs)| {
                (
                    Just(n_fr),
                    vec(option::weighted(0.85, any::<Index>()), n_cohorts - 1),
                    vec(vec(option::of(resource_quota(8)), n_fr), n_cohorts),
                    vec(option::weighted(0.9, any::<Index>()), n_cqs),
                    vec(vec(resource_quota(10), n_fr), n_cqs),
                )
                    .prop_map(
                        |(n_fr, cohort_parents, cohort_quotas, cq_parents, cq_quotas)| {
                            let quotas =
                                |qs: Vec<Option<ResourceQuota>>| -> Vec<(FrIdx, ResourceQuota)> {
                                    qs.into_iter()
                                        .enumerate()
                                        .filter_map(|(fr, q)| q.map(|q| (FrIdx(fr as u32), q)))
                                        .collect()
                                };
                            let mut specs = Vec::new();
                            let mut depth = Vec::new();
                            for (i, qs) in cohort_quotas.into_iter().enumerate() {
                                let parent =
                                    (i > 0)
                                        .then(|| cohort_parents[i - 1])
                                        .flatten()
                                        .map(|pick| {
                                            let allowed: Vec<usize> = (0..i)
                                                .filter(|&j| depth[j] < MAX_COHORT_DEPTH)
                                                .collect();
                                            allowed[pick.index(allowed.len())]
                                        });
                                depth.push(parent.map_or(1, |p| depth[p] + 1));
                                specs.push(spec(
                                    &format!("c{i}"),
                                    NodeKind::Cohort,
                                    parent.map(|p| p as u32),
                                    quotas(qs),
                                ));
                            }
                            let n_cohorts = specs.len();
                            for (i, (parent, qs)) in
                                cq_parents.into_iter().zip(cq_quotas).enumerate()
                            {
                                specs.push(spec(
                                    &format!("cq{}", n_cohorts + i),
                                    NodeKind::ClusterQueue,
                                    parent.map(|pick| pick.index(n_cohorts) as u32),
                                    quotas(qs.into_iter().map(Some).collect()),
                                ));
                            }
                            Forest { specs, n_fr }
                        },
                    )
            })
        }

        #[derive(Debug, Clone)]
        enum UsageOp {
            /// Add `amount` to a ClusterQueue (picked among all of them) for one flavor-resource.
            Add { cq: Index, fr: Index, amount: i64 },
            /// Remove one earlier addition that is still outstanding.
            Remove(Index),
        }

        fn usage_ops(max: usize) -> impl Strategy<Value = Vec<UsageOp>> {
            let op = prop_oneof![
                3 => (any::<Index>(), any::<Index>(), 0..=12i64)
                    .prop_map(|(cq, fr, amount)| UsageOp::Add { cq, fr, amount }),
                1 => any::<Index>().prop_map(UsageOp::Remove),
            ];
            vec(op, 0..=max)
        }

        /// Kueue's formulas evaluated straight from the specs.
        struct Reference<'a> {
            forest: &'a Forest,
            children: Vec<Vec<usize>>,
        }

        impl<'a> Reference<'a> {
            fn new(forest: &'a Forest) -> Self {
                let mut children = vec![Vec::new(); forest.specs.len()];
                for (i, s) in forest.specs.iter().enumerate() {
                    if let Some(p) = s.parent {
                        children[p.index()].push(i);
                    }
                }
                Reference { forest, children }
            }

            fn quota(&self, n: usize, fr: usize) -> ResourceQuota {
                self.forest.specs[n]
                    .quotas
                    .iter()
                    .find(|(f, _)| f.index() == fr)
                    .map(|&(_, q)| q)
                    .unwrap_or_default()
            }

            fn subtree(&self, n: usize, fr: usize) -> i64 {
                self.quota(n, fr).nominal
                    + self.children[n]
                        .iter()
                        .map(|&c| self.subtree(c, fr) - self.local(c, fr))
                        .sum::<i64>()
            }

            fn local(&self, n: usize, fr: usize) -> i64 {
                self.quota(n, fr)
                    .lending_limit
                    .map_or(0, |l| (self.subtree(n, fr) - l).max(0))
            }

            /// `direct[n][fr]` is what was added at ClusterQueue `n`; cohorts only get what their
            /// children hold past their local quota.
            fn usage(&self, direct: &[Vec<i64>], n: usize, fr: usize) -> i64 {
                match self.forest.specs[n].kind {
                    NodeKind::ClusterQueue => direct[n][fr],
                    NodeKind::Cohort => self.children[n]
                        .iter()
                        .map(|&c| (self.usage(direct, c, fr) - self.local(c, fr)).max(0))
                        .sum(),
                }
            }

            /// Every node of the subtree of `n`, `n` included.
            fn subtree_nodes(&self, n: usize) -> Vec<usize> {
                let mut out = vec![n];
                let mut i = 0;
                while i < out.len() {
                    out.extend(self.children[out[i]].iter().copied());
                    i += 1;
                }
                out
            }

            fn root(&self, mut n: usize) -> usize {
                while let Some(p) = self.forest.specs[n].parent {
                    n = p.index();
                }
                n
            }
        }

        /// What Kueue's quota model promises while every addition stayed within `available`;
        /// one line per broken promise.
        fn broken_promises(r: &Reference<'_>, t: &QuotaTree, u: &Usage) -> Vec<String> {
            let mut broken = Vec::new();
            for n in 0..r.forest.specs.len() {
                let id = NodeId(n as u32);
                let name = &r.forest.specs[n].name;
                for fr in 0..r.forest.n_fr {
                    let f = FrIdx(fr as u32);
                    let used = u.get(id, f);
                    let subtree = r.subtree(n, fr);
                    let q = r.quota(n, fr);
                    if t.parent(id).is_none() && used > subtree {
                        broken.push(format!(
                            "root {name} fr{fr}: usage {used} > subtree quota {subtree}"
                        ));
                    }
                    if let Some(limit) = q.borrowing_limit
                        && t.parent(id).is_some()
                        && used > subtree + limit
                    {
                        broken.push(format!(
                            "{name} fr{fr}: usage {used} > subtree quota {subtree} + borrowingLimit {limit}"
                        ));
                    }
                    if t.node(id).kind == NodeKind::ClusterQueue {
                        let potential = t.potential_available(id, f);
                        if used > potential {
                            broken.push(format!(
                                "{name} fr{fr}: usage {used} > potential available {potential}"
                            ));
                        }
                    }
                    // Lending: ClusterQueues outside this subtree never use what it keeps for itself.
                    if t.parent(id).is_some() {
                        let inside = r.subtree_nodes(n);
                        let tree_nodes = r.subtree_nodes(r.root(n));
                        let total: i64 = tree_nodes.iter().map(|&m| r.quota(m, fr).nominal).sum();
                        let kept: i64 = inside.iter().map(|&m| r.local(m, fr)).sum();
                        let outside: i64 = tree_nodes
                            .iter()
                            .filter(|m| !inside.contains(m))
                            .filter(|&&m| r.forest.specs[m].kind == NodeKind::ClusterQueue)
                            .map(|&m| u.get(NodeId(m as u32), f))
                            .sum();
                        if outside > total - kept {
                            broken.push(format!(
                                "{name} fr{fr}: queues outside use {outside} > total nominal {total} - kept locally {kept}"
                            ));
                        }
                    }
                }
            }
            broken
        }

        /// Checks (b) and (c) on the current state: cohort usage recomputed from the leaves, and
        /// `available ≤ potential_available` everywhere.
        fn check_consistent(
            r: &Reference<'_>,
            t: &QuotaTree,
            u: &Usage,
            direct: &[Vec<i64>],
        ) -> Result<(), TestCaseError> {
            for n in 0..r.forest.specs.len() {
                let id = NodeId(n as u32);
                for fr in 0..r.forest.n_fr {
                    let f = FrIdx(fr as u32);
                    prop_assert_eq!(
                        u.get(id, f),
                        r.usage(direct, n, fr),
                        "usage of {} fr{}",
                        &r.forest.specs[n].name,
                        fr
                    );
                    // The count of children over their subtree quota, recomputed.
                    let over = (0..r.forest.specs.len())
                        .filter(|&c| r.forest.specs[c].parent == Some(id))
                        .filter(|&c| {
                            let c = NodeId(c as u32);
                            u.get(c, f) > t.subtree_quota(c, f)
                        })
                        .count();
                    prop_assert_eq!(
                        t.any_child_over(u, id, &[f]),
                        over > 0,
                        "{} fr{}: {} children over their subtree quota",
                        &r.forest.specs[n].name,
                        fr,
                        over
                    );
                    let (available, potential) =
                        (t.available(u, id, f), t.potential_available(id, f));
                    prop_assert!(
                        available <= potential,
                        "{} fr{}: available {} > potential available {}",
                        &r.forest.specs[n].name,
                        fr,
                        available,
                        potential
                    );
                }
            }
            Ok(())
        }

        proptest! {
            #![proptest_config(config())]

            #[test]
            fn subtree_and_local_quota_follow_kueue_formulas(f in forest()) {
                let (t, r) = (f.tree(), Reference::new(&f));
                for n in 0..f.specs.len() {
                    for fr in 0..f.n_fr {
                        let (id, fi) = (NodeId(n as u32), FrIdx(fr as u32));
                        prop_assert_eq!(t.subtree_quota(id, fi), r.subtree(n, fr), "subtree of {}", n);
                        prop_assert_eq!(t.local_quota(id, fi), r.local(n, fr), "local of {}", n);
                    }
                }
            }

            /// (a) add/remove round trips restore usage exactly; (b) cohort usage is recomputable
            /// from the leaves after every step; (c) available ≤ potential available.
            #[test]
            fn usage_bookkeeping_matches_reference(f in forest(), ops in usage_ops(40), probe in usage_ops(10)) {
                let (t, r, cqs) = (f.tree(), Reference::new(&f), f.cluster_queues());
                let mut u = t.new_usage();
                let mut direct = vec![vec![0i64; f.n_fr]; f.specs.len()];
                let mut outstanding: Vec<(NodeId, FrIdx, i64)> = Vec::new();
                check_consistent(&r, &t, &u, &direct)?;
                for op in &ops {
                    let (id, fr, delta) = match op {
                        UsageOp::Add { cq, fr, amount } => {
                            let add = (cqs[cq.index(cqs.len())], FrIdx(fr.index(f.n_fr) as u32), *amount);
                            outstanding.push(add);
                            add
                        }
                        UsageOp::Remove(pick) if !outstanding.is_empty() => {
                            let (id, fr, v) = outstanding.remove(pick.index(outstanding.len()));
                            (id, fr, -v)
                        }
                        UsageOp::Remove(_) => continue,
                    };
                    t.add_usage(&mut u, id, fr, delta);
                    direct[id.index()][fr.index()] += delta;
                    check_consistent(&r, &t, &u, &direct)?;
                }
                // (a) adding then removing the same amounts from any state restores it exactly.
                let before = u.clone();
                let adds: Vec<(NodeId, FrIdx, i64)> = probe
                    .iter()
                    .filter_map(|op| match op {
                        UsageOp::Add { cq, fr, amount } => {
                            Some((cqs[cq.index(cqs.len())], FrIdx(fr.index(f.n_fr) as u32), *amount))
                        }
                        UsageOp::Remove(_) => None,
                    })
                    .collect();
                for &(id, fr, v) in &adds {
                    t.add_usage(&mut u, id, fr, v);
                }
                for &(id, fr, v) in &adds {
                    t.add_usage(&mut u, id, fr, -v);
                }
                prop_assert_eq!(&u, &before, "add then remove (same order) changed usage");
                // Taking held amounts out and putting them back in the same order (how the
                // scheduler asks a question without this cycle's victims) restores it exactly,
                // and in between the tree is what the leaves alone say.
                let taken: Vec<(NodeId, FrIdx, i64)> = outstanding.iter().step_by(2).copied().collect();
                for &(id, fr, v) in &taken {
                    t.add_usage(&mut u, id, fr, -v);
                    direct[id.index()][fr.index()] -= v;
                }
                check_consistent(&r, &t, &u, &direct)?;
                for &(id, fr, v) in &taken {
                    t.add_usage(&mut u, id, fr, v);
                    direct[id.index()][fr.index()] += v;
                }
                prop_assert_eq!(&u, &before, "take out then put back (same order) changed usage");
                // Removing the rest in insertion order (not reverse) brings back an empty tree.
                for (id, fr, v) in outstanding {
                    t.add_usage(&mut u, id, fr, -v);
                }
                prop_assert_eq!(u, t.new_usage(), "removing everything left usage behind");
            }

            /// (d) when ClusterQueues only add what `available` allows, no root exceeds its subtree
            /// quota, no node its subtree quota + borrowingLimit, no queue its potential available,
            /// and no queue outside a subtree uses what the subtree keeps under its lending limits.
            /// Also: `available` is exact — one unit more would break one of those promises.
            #[test]
            fn admitting_within_available_keeps_promises(f in forest(), ops in usage_ops(40)) {
                let (t, r, cqs) = (f.tree(), Reference::new(&f), f.cluster_queues());
                let mut u = t.new_usage();
                let mut direct = vec![vec![0i64; f.n_fr]; f.specs.len()];
                let mut outstanding: Vec<(NodeId, FrIdx, i64)> = Vec::new();
                for op in &ops {
                    let (id, fr, delta) = match op {
                        UsageOp::Add { cq, fr, amount } => {
                            let (id, fr) = (cqs[cq.index(cqs.len())], FrIdx(fr.index(f.n_fr) as u32));
                            let available = t.available(&u, id, fr);
                            let mut over = u.clone();
                            t.add_usage(&mut over, id, fr, available + 1);
                            prop_assert!(
                                !broken_promises(&r, &t, &over).is_empty(),
                                "{} fr{}: adding available ({}) + 1 still keeps every promise",
                                &f.specs[id.index()].name,
                                fr.0,
                                available
                            );
                            let v = (*amount).min(available);
                            outstanding.push((id, fr, v));
                            (id, fr, v)
                        }
                        UsageOp::Remove(pick) if !outstanding.is_empty() => {
                            let (id, fr, v) = outstanding.remove(pick.index(outstanding.len()));
                            (id, fr, -v)
                        }
                        UsageOp::Remove(_) => continue,
                    };
                    t.add_usage(&mut u, id, fr, delta);
                    direct[id.index()][fr.index()] += delta;
                    let broken = broken_promises(&r, &t, &u);
                    prop_assert!(broken.is_empty(), "after {:?}: {:?}", op, broken);
                    check_consistent(&r, &t, &u, &direct)?;
                }
            }
        }
    }
}
