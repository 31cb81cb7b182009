//! [`QuotaView`]: Kueue's quota arithmetic over the catalog's quota tree and a request's usage,
//! so that a plugin can simulate removing (or adding) workloads and ask whether one fits.
//!
//! The formulas are Kueue's (`pkg/cache/scheduler/resource_node.go`), exactly as the host
//! computes them:
//! - `local_available(n) = max(0, guaranteed − usage)`
//! - `available(n)`: root → `subtree − usage`; otherwise `local_available + min(available(parent),
//!   subtree − guaranteed − max(0, usage − guaranteed) + borrowing_limit)` (no `min` without a
//!   borrowing limit), clamped at 0
//! - adding usage at a node bubbles to its parent only the part above the node's guaranteed quota
//! - a ClusterQueue borrows when its usage exceeds its nominal quota; a Cohort when its usage
//!   exceeds its subtree quota.
//!
//! "Unlimited" sums saturate instead of wrapping, as on the host.
//!
//! A view built [`from_usage_table`](QuotaView::from_usage_table) (the `tree-usage` the host
//! sends) tracks every flavor-resource of the catalog, which fair sharing's dominant resource
//! share ([`QuotaView::drs`]) needs.

use crate::catalog::Catalog;
use crate::kept;
use crate::layout::{Cell, Layout, NONE};
use crate::peeled;
use crate::preemption::{Candidate, CandidateTable, Request};
use crate::types::{FrAmount, FrId, NodeId, NodeKind, NodeUsage, Quantity, Quota};

/// Quota usage of part of the quota tree, with Kueue's arithmetic.
///
/// A view tracks a fixed set of flavor-resources (the *columns*, for a preemption request the
/// preemptor's `requests`) and the nodes it was given usage for, plus their ancestors. Usage of
/// other flavor-resources is not known to a plugin; the view ignores changes to them and reads
/// them as 0. Nodes outside the view read as usage 0 until usage is added to them, which
/// includes them (with their ancestors).
#[derive(Debug, Clone)]
pub struct QuotaView<'c> {
    catalog: &'c Catalog,
    /// The slots, columns, quotas and usage: kept by the instance between views of the same
    /// catalog and columns (see [`Layout`]).
    l: Layout,
}

impl Drop for QuotaView<'_> {
    fn drop(&mut self) {
        let layout = std::mem::replace(&mut self.l, Layout::empty());
        layout.give_back();
    }
}

impl<'c> QuotaView<'c> {
    /// An empty view (every usage 0) tracking the flavor-resources `frs`. Duplicates are
    /// ignored.
    pub fn new(catalog: &'c Catalog, frs: &[FrId]) -> QuotaView<'c> {
        QuotaView {
            catalog,
            l: Layout::take(catalog, frs, false),
        }
    }

    /// The view of a preemption request: columns are the preemptor's requested
    /// flavor-resources, usage is the request's `usage` (with `usage_kept`, the usage the
    /// instance keeps, this request's included), and the preemptor's and every candidate's
    /// ClusterQueue (with their ancestors) are included.
    pub fn from_request<C: CandidateTable>(
        catalog: &'c Catalog,
        req: &Request<C>,
    ) -> QuotaView<'c> {
        let mut view = QuotaView::from_request_usage(catalog, req);
        let t = &req.candidates;
        let mut last = None;
        for i in 0..t.len() {
            // Candidates come grouped by queue more often than not.
            let cq = t.cluster_queue(i);
            if last != Some(cq) {
                last = Some(cq);
                if let Some(node) = catalog.cluster_queue_node(cq) {
                    view.include(node);
                }
            }
        }
        view
    }

    /// [`from_request`](QuotaView::from_request) without including the candidates' queues
    /// beyond the request's usage: a search takes usage from a queue through
    /// [`remove_candidate_of`](QuotaView::remove_candidate_of), which includes it then, and
    /// until then a node outside the view reads as it would included (usage 0, the catalog's
    /// quotas). The host lists every candidate's queue in the usage anyway; this saves a
    /// lookup per candidate when it does.
    pub(crate) fn from_request_usage<C: CandidateTable>(
        catalog: &'c Catalog,
        req: &Request<C>,
    ) -> QuotaView<'c> {
        let req_frs: Vec<FrId> = req.requests.iter().map(|r| r.fr).collect();
        let kept = req.usage_kept;
        let mut view = QuotaView {
            catalog,
            l: Layout::take(catalog, &req_frs, kept),
        };
        if !kept {
            view.load(&req.usage);
        }
        if let Some(node) = catalog.cluster_queue_node(req.preemptor.cluster_queue) {
            view.include(node);
        }
        view
    }

    /// Loads usage: each entry's node takes the usage it lists of the tracked flavor-resources
    /// (0 for one it does not list), and is included with its ancestors (usage 0 unless
    /// listed). A node listed twice takes its later entry; a node not in the catalog is
    /// skipped.
    fn load(&mut self, usage: &[NodeUsage]) {
        let cols = self.l.frs.len();
        for entry in usage {
            let Some(slot) = self.l.include(self.catalog, entry.node) else {
                continue;
            };
            let row = slot * cols;
            for cell in &mut self.l.cells[row..row + cols] {
                cell.usage = 0;
            }
            for u in &entry.usage {
                if let Some(col) = self.column(u.fr) {
                    self.l.cells[row + col].usage = u.amount;
                }
            }
        }
    }

    /// The view of the usage of whole cohort trees (`tree-usage`, what a fair-sharing decision
    /// is about): every flavor-resource of the catalog is a column, and every node listed is
    /// included with its usage as sent. Nodes not listed read as usage 0.
    pub fn from_usage_table(catalog: &'c Catalog, usage: &[NodeUsage]) -> QuotaView<'c> {
        let all: Vec<FrId> = (0..catalog.flavor_resources.len() as FrId).collect();
        let mut view = QuotaView::new(catalog, &all);
        view.load(usage);
        view
    }

    /// The catalog the view reads quotas from.
    pub fn catalog(&self) -> &'c Catalog {
        self.catalog
    }

    /// The tracked flavor-resources.
    pub fn flavor_resources(&self) -> &[FrId] {
        &self.l.frs
    }

    /// Adds a node and its ancestors to the view (with usage 0 where not yet included).
    /// Nodes that are not in the catalog are ignored.
    pub fn include(&mut self, node: NodeId) {
        self.l.include(self.catalog, node);
    }

    fn column(&self, fr: FrId) -> Option<usize> {
        match self.l.col_of.get(fr as usize) {
            Some(&c) if c != NONE => Some(c as usize),
            _ => None,
        }
    }

    /// The node's slot in the layout. A slot the view does not hold reads as a node outside
    /// the view would: usage 0 and the catalog's figures.
    fn slot(&self, node: NodeId) -> Option<usize> {
        self.l.slot(node)
    }

    fn cell(&self, node: NodeId, fr: FrId) -> Option<usize> {
        Some(self.slot(node)? * self.l.frs.len() + self.column(fr)?)
    }

    /// Whether the node is in the view.
    pub fn contains(&self, node: NodeId) -> bool {
        self.slot(node).is_some_and(|s| self.l.is_member(s))
    }

    /// Sets a node's usage of `fr` as is, without bubbling to its parent (to load a snapshot).
    /// Ignored for an untracked flavor-resource or a node not in the catalog.
    pub fn set_usage(&mut self, node: NodeId, fr: FrId, value: Quantity) {
        self.l.dirty = true;
        if self.column(fr).is_none() {
            return;
        }
        self.include(node);
        if let Some(cell) = self.cell(node, fr) {
            self.l.cells[cell].usage = value;
        }
    }

    /// A node's usage of `fr` (for a Cohort: what its children use beyond their guaranteed
    /// quota).
    pub fn usage(&self, node: NodeId, fr: FrId) -> Quantity {
        self.cell(node, fr).map_or(0, |c| self.l.cells[c].usage)
    }

    /// The quota figures of a node for `fr` (all zero and unlimited when it lists none).
    pub fn quota(&self, node: NodeId, fr: FrId) -> Quota {
        match self.cell(node, fr) {
            Some(c) => self.l.quotas[c],
            None => self.catalog.quota(node, fr),
        }
    }

    /// Capacity left in the node's guaranteed quota (the part never lent out): ≥ 0.
    pub fn local_available(&self, node: NodeId, fr: FrId) -> Quantity {
        (self.quota(node, fr).guaranteed - self.usage(node, fr)).max(0)
    }

    /// What the node could still take of `fr`, borrowing as far as its limits and its
    /// ancestors allow: ≥ 0.
    pub fn available(&self, node: NodeId, fr: FrId) -> Quantity {
        match (self.slot(node), self.column(fr)) {
            (Some(slot), Some(col)) => self.available_in(slot * self.l.frs.len() + col),
            _ => self.available_raw(node, fr, self.catalog.nodes.len()),
        }
        .max(0)
    }

    /// [`available`](QuotaView::available) at a cell of the view, before clamping: walks
    /// parent cells only.
    fn available_in(&self, cell: usize) -> Quantity {
        available_from(&self.l.cells, cell, self.l.nodes.len())
    }

    fn available_raw(&self, node: NodeId, fr: FrId, depth: usize) -> Quantity {
        let q = self.quota(node, fr);
        let used = self.usage(node, fr);
        let parent = match self.catalog.parent(node) {
            Some(p) if depth > 0 => p,
            _ => return q.subtree.saturating_sub(used),
        };
        let from_parent = self.available_raw(parent, fr, depth - 1);
        let cell = Cell {
            usage: used,
            guaranteed: q.guaranteed,
            subtree: q.subtree,
            own_limit: q.nominal,
            borrowing_limit: q.borrowing_limit,
            parent: NONE,
        };
        available_below(&cell, from_parent)
    }

    /// Kueue's `potentialAvailable` (see [`Catalog::potential_available`]): independent of
    /// usage.
    pub fn potential_available(&self, node: NodeId, fr: FrId) -> Quantity {
        self.catalog.potential_available(node, fr)
    }

    /// Adds `delta` (negative to remove) to the node's usage of `fr`, bubbling up only the part
    /// above each node's guaranteed quota. Ignored for an untracked flavor-resource. Exact and
    /// order-independent: adding back what was removed, in any order, restores every node's
    /// usage as it was.
    pub fn add_usage(&mut self, node: NodeId, fr: FrId, delta: Quantity) {
        self.l.dirty = true;
        if self.column(fr).is_none() {
            return;
        }
        self.include(node);
        let (Some(slot), Some(col)) = (self.slot(node), self.column(fr)) else {
            return;
        };
        self.add_in(slot * self.l.frs.len() + col, delta);
    }

    /// [`add_usage`](QuotaView::add_usage) at a cell of the view. The first two steps (a
    /// ClusterQueue and its Cohort, the usual trees) come before any loop, as in
    /// [`available_from`]: each entry into a loop costs the guest an epoch check.
    #[inline(always)]
    fn add_in(&mut self, cell: usize, delta: Quantity) {
        let depth = self.l.nodes.len();
        let cells = &mut self.l.cells;
        if depth == 0 {
            return;
        }
        let Some((parent, delta)) = add_step(cells, cell, delta) else {
            return;
        };
        if depth == 1 {
            return;
        }
        let Some((grandparent, delta)) = add_step(cells, parent, delta) else {
            return;
        };
        add_steps(cells, grandparent, delta, depth - 2);
    }

    /// Adds a workload's usage (one entry per flavor-resource) at a node.
    pub fn add_workload(&mut self, node: NodeId, usage: &[FrAmount]) {
        self.l.dirty = true;
        self.add_signed(node, usage.iter().copied(), 1, |_, _| {});
    }

    /// Removes a workload's usage at a node.
    pub fn remove_workload(&mut self, node: NodeId, usage: &[FrAmount]) {
        self.l.dirty = true;
        self.add_signed(node, usage.iter().copied(), -1, |_, _| {});
    }

    /// Adds `usage` times `sign` at a node (held first: usage is only ever added to held
    /// slots and their ancestors), telling `taken` each cell and amount.
    /// Always inlined: a search takes candidates out through it hundreds of times a request,
    /// and as a call it cost the search 0.03 G at Kueue's large scale.
    #[inline(always)]
    fn add_signed(
        &mut self,
        node: NodeId,
        usage: impl Iterator<Item = FrAmount>,
        sign: Quantity,
        mut taken: impl FnMut(u32, Quantity),
    ) {
        // The node's row, once a tracked flavor-resource needs it (`Some(None)`: the node
        // cannot be held, and nothing is added). The first entry before any loop, as
        // `peeled::for_each` does, written out: the closure that function would take here is
        // too large for LLVM to inline at its two calls (BENCHMARKS.md, stop 48).
        let mut row: Option<Option<usize>> = None;
        let mut usage = usage;
        let Some(first) = usage.next() else {
            return;
        };
        self.add_entry(node, &mut row, first, sign, &mut taken);
        if usage.size_hint().1 != Some(0) {
            for u in usage {
                self.add_entry(node, &mut row, u, sign, &mut taken);
            }
        }
    }

    /// One entry of [`add_signed`](QuotaView::add_signed), holding the node at the first
    /// tracked one.
    #[inline(always)]
    fn add_entry(
        &mut self,
        node: NodeId,
        row: &mut Option<Option<usize>>,
        u: FrAmount,
        sign: Quantity,
        taken: &mut impl FnMut(u32, Quantity),
    ) {
        let Some(col) = self.column(u.fr) else {
            return;
        };
        let held = *row.get_or_insert_with(|| {
            let width = self.l.frs.len();
            self.l.include(self.catalog, node).map(|slot| slot * width)
        });
        if let Some(row) = held {
            self.add_in(row + col, sign * u.amount);
            taken((row + col) as u32, u.amount);
        }
    }

    /// Removes a preemption candidate's usage from its ClusterQueue (as if it were evicted).
    pub fn remove_candidate(&mut self, candidate: &Candidate) {
        self.remove_candidate_of(std::slice::from_ref(candidate), 0);
    }

    /// Puts a removed candidate's usage back.
    pub fn restore_candidate(&mut self, candidate: &Candidate) {
        self.restore_candidate_of(std::slice::from_ref(candidate), 0);
    }

    /// Removes candidate `i` of a table from its ClusterQueue (as if it were evicted).
    pub fn remove_candidate_of<C: CandidateTable + ?Sized>(&mut self, table: &C, i: usize) {
        self.l.dirty = true;
        if let Some(node) = self.catalog.cluster_queue_node(table.cluster_queue(i)) {
            self.add_signed(node, table.usage(i), -1, |_, _| {});
        }
    }

    /// Puts candidate `i` of a table back.
    pub fn restore_candidate_of<C: CandidateTable + ?Sized>(&mut self, table: &C, i: usize) {
        self.l.dirty = true;
        if let Some(node) = self.catalog.cluster_queue_node(table.cluster_queue(i)) {
            self.add_signed(node, table.usage(i), 1, |_, _| {});
        }
    }

    /// Whether the node would be over its own quota with `extra` more of `fr`: for a
    /// ClusterQueue, past its nominal quota; for a Cohort, past its subtree quota.
    pub fn borrowing_with(&self, node: NodeId, fr: FrId, extra: Quantity) -> bool {
        if let (Some(slot), Some(col)) = (self.slot(node), self.column(fr)) {
            return self.borrowing_at(slot, col, extra);
        }
        let q = self.quota(node, fr);
        let limit = match self.catalog.node(node).map(|n| n.kind) {
            Some(NodeKind::Cohort) => q.subtree,
            _ => q.nominal,
        };
        limit < self.usage(node, fr).saturating_add(extra)
    }

    /// Whether the node is over its own quota for `fr` now.
    pub fn borrowing(&self, node: NodeId, fr: FrId) -> bool {
        self.borrowing_with(node, fr, 0)
    }

    /// Kueue's `IsWithinNominalInResources`: usage ≤ subtree quota for every listed
    /// flavor-resource.
    pub fn within_nominal(&self, node: NodeId, frs: &[FrId]) -> bool {
        let Some(slot) = self.slot(node) else {
            return frs
                .iter()
                .all(|&fr| self.usage(node, fr) <= self.quota(node, fr).subtree);
        };
        let row = slot * self.l.frs.len();
        frs.iter().all(|&fr| match self.column(fr) {
            Some(col) => within_subtree(&self.l.cells[row + col]),
            None => 0 <= self.catalog.quota(self.l.nodes[slot], fr).subtree,
        })
    }

    /// Kueue's `workloadFits`: every request is within what the node has available, and, unless
    /// `allow_borrowing`, does not take the node past its nominal quota.
    pub fn fits(&self, node: NodeId, requests: &[FrAmount], allow_borrowing: bool) -> bool {
        let slot = self.slot(node);
        requests.iter().all(|r| match slot.zip(self.column(r.fr)) {
            Some((slot, col)) => {
                (allow_borrowing || !self.borrowing_at(slot, col, r.amount))
                    && r.amount <= self.available_in(slot * self.l.frs.len() + col).max(0)
            }
            None => {
                (allow_borrowing || !self.borrowing_with(node, r.fr, r.amount))
                    && r.amount <= self.available(node, r.fr)
            }
        })
    }

    /// The columns of `amounts`' flavor-resources, each with its amount, in order (duplicates
    /// kept): `None` when one is not tracked. For questions asked many times
    /// ([`within_nominal_in`](QuotaView::within_nominal_in)).
    pub(crate) fn columns_of(
        &self,
        amounts: impl Iterator<Item = (FrId, Quantity)>,
    ) -> Option<Vec<(usize, Quantity)>> {
        amounts
            .map(|(fr, amount)| Some((self.column(fr)?, amount)))
            .collect()
    }

    /// [`within_nominal`](QuotaView::within_nominal) on resolved columns (amounts ignored).
    #[inline(always)]
    pub(crate) fn within_nominal_in(&self, node: NodeId, cols: &[(usize, Quantity)]) -> bool {
        match self.slot(node) {
            Some(slot) => {
                let row = &self.l.cells[slot * self.l.frs.len()..];
                peeled::all(cols, |&(c, _)| row.get(c).is_some_and(within_subtree))
            }
            None => cols
                .iter()
                .all(|&(c, _)| 0 <= self.catalog.quota(node, self.l.frs[c]).subtree),
        }
    }

    /// The node's slot, when it has one (see [`cells_of`](QuotaView::cells_of)).
    pub(crate) fn slot_of(&self, node: NodeId) -> Option<usize> {
        self.slot(node)
    }

    /// The cells of the node at `slot` for resolved columns, each with its amount (see
    /// [`fits_cells`](QuotaView::fits_cells)).
    pub(crate) fn cells_of(&self, slot: usize, cols: &[(usize, Quantity)]) -> Vec<(u32, Quantity)> {
        let width = self.l.frs.len();
        cols.iter()
            .map(|&(c, amount)| ((slot * width + c) as u32, amount))
            .collect()
    }

    /// [`fits`](QuotaView::fits) on the cells of a node, each with its requested amount
    /// ([`cells_of`](QuotaView::cells_of)).
    #[inline(always)]
    pub(crate) fn fits_cells(&self, requests: &[(u32, Quantity)], allow_borrowing: bool) -> bool {
        let cells = &self.l.cells;
        let depth = self.l.nodes.len();
        peeled::all(requests, |&(cell, amount)| {
            let Some(c) = cells.get(cell as usize) else {
                return false;
            };
            (allow_borrowing || c.usage.saturating_add(amount) <= c.own_limit)
                && amount <= available_from(cells, cell as usize, depth).max(0)
        })
    }

    /// Takes candidate `i` of a table out of its ClusterQueue, as
    /// [`remove_candidate_of`](QuotaView::remove_candidate_of) does, and appends to `removed`
    /// the cells and amounts it took, for [`put_back`](QuotaView::put_back) and
    /// [`take_out_again`](QuotaView::take_out_again).
    pub(crate) fn take_out<C: CandidateTable + ?Sized>(
        &mut self,
        table: &C,
        i: usize,
        removed: &mut Vec<(u32, Quantity)>,
    ) {
        if let Some(node) = self.catalog.cluster_queue_node(table.cluster_queue(i)) {
            self.add_signed(node, table.usage(i), -1, |cell, amount| {
                removed.push((cell, amount));
            });
        }
    }

    /// Puts back what [`take_out`](QuotaView::take_out) took.
    #[inline(always)]
    pub(crate) fn put_back(&mut self, removed: &[(u32, Quantity)]) {
        peeled::for_each(removed.iter(), |&(cell, amount)| {
            self.add_in(cell as usize, amount);
        });
    }

    /// Takes out again what [`put_back`](QuotaView::put_back) put back.
    #[inline(always)]
    pub(crate) fn take_out_again(&mut self, removed: &[(u32, Quantity)]) {
        peeled::for_each(removed.iter(), |&(cell, amount)| {
            self.add_in(cell as usize, -amount);
        });
    }

    /// [`borrowing_with`](QuotaView::borrowing_with) at a slot and column of the view.
    fn borrowing_at(&self, slot: usize, col: usize, extra: Quantity) -> bool {
        let c = &self.l.cells[slot * self.l.frs.len() + col];
        c.own_limit < c.usage.saturating_add(extra)
    }
}

/// The usage of `node` for `fr` as a request has it, without a view: its entry in `usage`,
/// or, when the instance keeps usage, what it received last. 0 for a node the request does
/// not list and for a flavor-resource it does not request.
pub(crate) fn request_usage<C>(
    catalog: &Catalog,
    req: &Request<C>,
    node: NodeId,
    fr: FrId,
) -> Quantity {
    if !req.requests.iter().any(|r| r.fr == fr) {
        return 0;
    }
    if req.usage_kept {
        return kept::with(catalog, |k| k.get(node, fr));
    }
    req.usage
        .iter()
        .rfind(|u| u.node == node)
        .and_then(|u| u.usage.iter().find(|a| a.fr == fr))
        .map_or(0, |a| a.amount)
}

/// One step of [`QuotaView::add_in`]: adds `delta` to the cell's usage and returns its parent
/// with the part of `delta` above the cell's guaranteed quota, when that part is not 0.
#[inline(always)]
fn add_step(cells: &mut [Cell], cell: usize, delta: Quantity) -> Option<(usize, Quantity)> {
    let c = cells.get_mut(cell)?;
    let before = c.usage;
    let after = before + delta;
    c.usage = after;
    if c.parent == NONE {
        return None;
    }
    let local = c.guaranteed;
    let up = (after - local).max(0) - (before - local).max(0);
    (up != 0).then_some((c.parent as usize, up))
}

/// [`add_step`] up to `steps` times from `cell`, while a part goes up.
#[inline(never)]
fn add_steps(cells: &mut [Cell], cell: usize, delta: Quantity, steps: usize) {
    let (mut cell, mut delta) = (cell, delta);
    for _ in 0..steps {
        match add_step(cells, cell, delta) {
            Some((parent, up)) => (cell, delta) = (parent, up),
            None => return,
        }
    }
}

/// Kueue's `IsWithinNominalInResources` of one cell: usage ≤ subtree quota.
fn within_subtree(c: &Cell) -> bool {
    c.usage <= c.subtree
}

/// Kueue's `available` at `cell`, before clamping: a root's subtree quota less its usage;
/// below, [`available_below`] of what the parent has. At most `depth` steps up.
///
/// A ClusterQueue and its Cohort, the usual trees, are read in straight-line code, inlined
/// into the search's fit check: as a call, with a loop and a path kept on the guest's stack,
/// it cost ≈ 170 instructions a check, about 50 of them the call's frame and the epoch checks
/// wasmtime puts at every function entry and loop header (BENCHMARKS.md, stop 48). Deeper
/// trees go on in [`available_path`].
#[inline(always)]
fn available_from(cells: &[Cell], cell: usize, depth: usize) -> Quantity {
    let Some(c) = cells.get(cell) else {
        return 0;
    };
    if c.parent == NONE || depth == 0 {
        return c.subtree.saturating_sub(c.usage);
    }
    let from_parent = match cells.get(c.parent as usize) {
        None => 0,
        Some(p) if p.parent == NONE || depth == 1 => p.subtree.saturating_sub(p.usage),
        Some(_) => available_path(cells, c.parent as usize, depth - 1),
    };
    available_below(c, from_parent)
}

/// [`available_from`] walking any number of steps: up once, keeping the path, then down.
#[inline(never)]
fn available_path(cells: &[Cell], cell: usize, depth: usize) -> Quantity {
    // Up once, keeping the path (a few cells in practice), then down from the top.
    let mut path = [0u32; 8];
    let (mut n, mut at) = (0, cell);
    let mut available = loop {
        let Some(c) = cells.get(at) else {
            // What a missing cell has available, as the top of the path.
            break 0;
        };
        if c.parent == NONE || n == depth {
            break c.subtree.saturating_sub(c.usage);
        }
        let Some(slot) = path.get_mut(n) else {
            return available_deep(cells, cell, depth);
        };
        *slot = at as u32;
        n += 1;
        at = c.parent as usize;
    };
    for &below in path[..n].iter().rev() {
        available = available_below(&cells[below as usize], available);
    }
    available
}

/// [`available_path`] for a path longer than it keeps, by recursion.
fn available_deep(cells: &[Cell], cell: usize, depth: usize) -> Quantity {
    let Some(c) = cells.get(cell) else {
        return 0;
    };
    if c.parent == NONE || depth == 0 {
        return c.subtree.saturating_sub(c.usage);
    }
    let from_parent = available_deep(cells, c.parent as usize, depth - 1);
    available_below(c, from_parent)
}

/// Kueue's `available` of a node that is not a root: what its guaranteed quota leaves, plus
/// what its parent has available (`from_parent`), capped by its borrowing limit.
fn available_below(c: &Cell, from_parent: Quantity) -> Quantity {
    let (used, local) = (c.usage, c.guaranteed);
    let mut from_parent = from_parent;
    if let Some(limit) = c.borrowing_limit {
        let stored_in_parent = c.subtree.saturating_sub(local);
        let used_in_parent = (used - local).max(0);
        let cap = stored_in_parent
            .saturating_sub(used_in_parent)
            .saturating_add(limit);
        from_parent = from_parent.min(cap);
    }
    (local - used).max(0).saturating_add(from_parent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::CatalogBuilder;

    const FR: FrId = 0;

    fn amt(amount: i64) -> Vec<FrAmount> {
        vec![FrAmount { fr: FR, amount }]
    }

    /// cohort(0) <- a(1) nominal 10, b(2) nominal 6 lending 2 borrowing 3
    fn two_queues() -> Catalog {
        CatalogBuilder::new()
            .flavor_resources(1)
            .cohort("cohort", None)
            .cluster_queue("a", Some(0))
            .quota(1, FR, 10, None, None)
            .cluster_queue("b", Some(0))
            .quota(2, FR, 6, Some(3), Some(2))
            .build()
    }

    #[test]
    fn request_usage_loads_as_setting_each_usage() {
        let cat = two_queues();
        let entry = |node, pairs: &[(FrId, Quantity)]| NodeUsage {
            node,
            usage: crate::testing::amounts(pairs),
        };
        // b listed before its cohort, which is missing from the list; a listed twice (the
        // later entry wins, a flavor-resource it does not list is 0); an untracked
        // flavor-resource and an unknown node are ignored.
        let mut loaded = QuotaView::new(&cat, &[FR, FR]);
        loaded.load(&[
            entry(2, &[(FR, 5), (7, 1)]),
            entry(1, &[(FR, 3)]),
            entry(1, &[(FR, 7)]),
            entry(99, &[(FR, 1)]),
        ]);
        let mut set = QuotaView::new(&cat, &[FR]);
        set.set_usage(2, FR, 5);
        set.set_usage(1, FR, 7);
        for node in 0..3 {
            assert!(loaded.contains(node));
            assert_eq!(loaded.usage(node, FR), set.usage(node, FR), "node {node}");
            assert_eq!(
                loaded.available(node, FR),
                set.available(node, FR),
                "node {node}"
            );
        }
        assert!(!loaded.contains(99));
        // The cohort came in as the parent of the nodes listed: usage added below bubbles up.
        loaded.add_usage(2, FR, 2);
        set.add_usage(2, FR, 2);
        assert_eq!(loaded.usage(0, FR), set.usage(0, FR));
        // A later entry listing nothing sets the node's usage to 0.
        loaded.load(&[entry(1, &[])]);
        assert_eq!(loaded.usage(1, FR), 0);
    }

    #[test]
    fn subtree_and_guaranteed_come_from_the_builder() {
        let cat = two_queues();
        let q = cat.quota(0, FR);
        assert_eq!(q.subtree, 12);
        assert_eq!(cat.quota(2, FR).guaranteed, 4);
        assert_eq!(cat.quota(1, FR).guaranteed, 0);
    }

    #[test]
    fn available_respects_lending_and_borrowing_limits() {
        let cat = two_queues();
        let mut v = QuotaView::new(&cat, &[FR]);
        assert_eq!(v.available(1, FR), 12);
        // b: 4 guaranteed + min(12 from cohort, 2 stored + 3 borrowing) = 9.
        assert_eq!(v.available(2, FR), 9);
        v.add_usage(1, FR, 9);
        assert_eq!(v.usage(0, FR), 9);
        assert_eq!(v.available(2, FR), 4 + 3);
        assert_eq!(v.available(1, FR), 3);
    }

    #[test]
    fn add_usage_bubbles_only_above_guaranteed() {
        let cat = two_queues();
        let mut v = QuotaView::new(&cat, &[FR]);
        v.add_usage(2, FR, 3);
        assert_eq!(v.usage(2, FR), 3);
        assert_eq!(v.usage(0, FR), 0);
        v.add_usage(2, FR, 3);
        assert_eq!(v.usage(0, FR), 2);
        v.add_usage(2, FR, -4);
        assert_eq!(v.usage(2, FR), 2);
        assert_eq!(v.usage(0, FR), 0);
    }

    #[test]
    fn borrowing_and_within_nominal() {
        let cat = two_queues();
        let mut v = QuotaView::new(&cat, &[FR]);
        v.add_usage(1, FR, 10);
        assert!(!v.borrowing(1, FR));
        assert!(v.borrowing_with(1, FR, 1));
        assert!(v.within_nominal(1, &[FR]));
        v.add_usage(1, FR, 1);
        assert!(!v.within_nominal(1, &[FR]));
        // The cohort's subtree quota is 12.
        assert!(!v.borrowing(0, FR));
        assert!(v.borrowing_with(0, FR, 2));
    }

    #[test]
    fn fits_with_and_without_borrowing() {
        let cat = two_queues();
        let mut v = QuotaView::new(&cat, &[FR]);
        v.add_usage(2, FR, 6);
        // a may take 12 - 2 = 10 within nominal.
        assert!(v.fits(1, &amt(10), false));
        assert!(!v.fits(1, &amt(11), true));
        v.add_usage(2, FR, -6);
        assert!(v.fits(1, &amt(12), true));
        assert!(!v.fits(1, &amt(12), false));
    }

    #[test]
    fn removal_simulation_restores_exactly() {
        let cat = two_queues();
        let mut v = QuotaView::new(&cat, &[FR]);
        v.add_workload(1, &amt(7));
        v.add_workload(2, &amt(5));
        let before = v.clone();
        v.remove_workload(2, &amt(5));
        assert_eq!(v.usage(0, FR), 7);
        v.add_workload(2, &amt(5));
        assert_eq!(v.l.cells, before.l.cells);
    }

    /// What one view held is gone from the next view of the same catalog, which reuses its
    /// layout (slots, quotas), whether the first view was cloned or not.
    #[test]
    fn a_later_view_holds_nothing_of_an_earlier_one() {
        let cat = two_queues();
        let fresh = two_queues(); // another catalog: nothing kept for it yet
        let expect = QuotaView::new(&fresh, &[FR]);
        {
            let mut v = QuotaView::new(&cat, &[FR]);
            v.add_workload(1, &amt(9));
            v.add_workload(2, &amt(8));
            let mut c = v.clone();
            c.set_usage(2, FR, 1);
            assert_eq!(v.usage(2, FR), 8, "a clone is a copy");
            assert_eq!(c.usage(1, FR), 9);
        }
        let later = QuotaView::new(&cat, &[FR]);
        for node in 0..3 {
            assert!(!later.contains(node), "node {node}");
            assert_eq!(later.usage(node, FR), 0, "node {node}");
            assert_eq!(
                later.available(node, FR),
                expect.available(node, FR),
                "node {node}"
            );
            assert_eq!(later.borrowing(node, FR), expect.borrowing(node, FR));
        }
        // Adding to a node the earlier view held (it keeps its slot) holds it again.
        let mut later = later;
        later.add_workload(2, &amt(7));
        assert!(later.contains(2) && later.contains(0) && !later.contains(1));
        assert_eq!(
            later.usage(0, FR),
            3,
            "7 past b's guaranteed 4 reaches the cohort"
        );
    }

    /// A view of another catalog (other quotas) never reads what was kept for the first.
    #[test]
    fn views_of_different_catalogs_keep_their_own_figures() {
        let a = two_queues();
        let b = CatalogBuilder::new()
            .flavor_resources(1)
            .cohort("cohort", None)
            .cluster_queue("a", Some(0))
            .quota(1, FR, 3, None, None)
            .cluster_queue("b", Some(0))
            .quota(2, FR, 1, None, None)
            .build();
        let mut va = QuotaView::new(&a, &[FR]);
        va.include(1);
        drop(va);
        let mut vb = QuotaView::new(&b, &[FR]);
        vb.include(1);
        assert_eq!(vb.quota(1, FR).nominal, 3);
        assert_eq!(vb.available(1, FR), 4);
        let va = QuotaView::new(&a, &[FR]);
        assert_eq!(va.available(1, FR), 12);
    }

    #[test]
    fn untracked_flavor_resources_and_unknown_nodes_are_ignored() {
        let cat = two_queues();
        let mut v = QuotaView::new(&cat, &[FR]);
        v.add_usage(1, 7, 100);
        assert_eq!(v.usage(1, 7), 0);
        v.add_usage(99, FR, 5);
        assert_eq!(v.usage(99, FR), 0);
        assert_eq!(v.available(99, FR), 0);
    }

    /// Kueue's `available`, recursively, from the view's quotas and usage (the reference).
    fn reference_available(v: &QuotaView<'_>, node: NodeId) -> Quantity {
        let (q, used) = (v.quota(node, FR), v.usage(node, FR));
        let Some(parent) = v.catalog().parent(node) else {
            return q.subtree.saturating_sub(used);
        };
        let mut from_parent = reference_available(v, parent);
        if let Some(limit) = q.borrowing_limit {
            let in_parent = q.subtree - q.guaranteed - (used - q.guaranteed).max(0);
            from_parent = from_parent.min(in_parent + limit);
        }
        (q.guaranteed - used).max(0) + from_parent
    }

    /// Trees shallower and deeper than the path `available` keeps give Kueue's figure at every
    /// level, with lending and borrowing limits along the way.
    #[test]
    fn available_at_every_depth() {
        for depth in [1usize, 2, 7, 8, 9, 14] {
            let mut b = CatalogBuilder::new().flavor_resources(1);
            for level in 0..depth {
                let parent = (level as NodeId).checked_sub(1);
                b = b.cohort(&format!("c{level}"), parent).quota(
                    level as NodeId,
                    FR,
                    3 + level as i64,
                    (level % 3 == 1).then_some(2),
                    (level % 2 == 1).then_some(1),
                );
            }
            let cat = b
                .cluster_queue("cq", Some(depth as NodeId - 1))
                .quota(depth as NodeId, FR, 4, Some(5), Some(2))
                .build();
            let mut v = QuotaView::new(&cat, &[FR]);
            v.include(depth as NodeId);
            for node in (0..=depth as NodeId).step_by(2) {
                v.add_usage(node, FR, 3);
            }
            for node in 0..=depth as NodeId {
                assert!(v.contains(node));
                let want = reference_available(&v, node).max(0);
                assert_eq!(v.available(node, FR), want, "depth {depth}, node {node}");
            }
        }
    }

    #[test]
    fn hierarchy_limits_nest() {
        // root(0) <- mid(1, borrowing 1) <- cq(2) nominal 2; root has own nominal 5.
        let cat = CatalogBuilder::new()
            .flavor_resources(1)
            .cohort("root", None)
            .quota(0, FR, 5, None, None)
            .cohort("mid", Some(0))
            .quota(1, FR, 0, Some(1), None)
            .cluster_queue("cq", Some(1))
            .quota(2, FR, 2, None, None)
            .build();
        let v = QuotaView::new(&cat, &[FR]);
        assert_eq!(cat.quota(0, FR).subtree, 7);
        assert_eq!(cat.quota(1, FR).subtree, 2);
        // mid: min(root 7, 2 + 1) = 3; cq: min(3, unlimited) = 3.
        assert_eq!(v.available(2, FR), 3);
    }
}
