//! [`Layout`]: the storage of a [`QuotaView`](crate::QuotaView), kept by the instance between
//! views. What a view holds of a node besides its usage (its slot, parent slot, and per
//! column a cell with its quotas and its parent's cell) depends only on the catalog and the
//! view's flavor-resources, so it is worked out once per node and reused by every later view of
//! the same catalog and columns: a request's view then costs what its usage costs, not the work
//! of placing each node again.
//!
//! A layout at rest holds no usage (every cell 0) and no members, unless it holds the usage
//! the instance keeps ([`crate::kept`], `request.usage-kept`): then its members are every node
//! received, with their usage as received, kept for the next view. A view marks the slots it
//! holds with its own stamp (`stamp[slot] == epoch`); a view of its own usage clears the usage
//! of exactly those slots on return, so giving a layout back costs what the view held. A view
//! of kept usage leaves its members' usage as it found it, or, if changed through the public
//! [`QuotaView`](crate::QuotaView) methods, has it read again on return.

use std::cell::RefCell;

use crate::catalog::Catalog;
use crate::kept::KeptUsage;
use crate::types::{FrId, NodeId, Quantity, Quota};

/// The entry of a node that has no slot (`slot_of`), or of a root's parent.
pub(crate) const NONE: u32 = u32::MAX;

/// One node's usage of one tracked flavor-resource, with the figures Kueue's arithmetic reads
/// beside it and the same column's cell of its parent: adding usage, or asking what is
/// available, walks these cells alone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Cell {
    pub(crate) usage: Quantity,
    /// The part of the subtree quota never lent to the parent.
    pub(crate) guaranteed: Quantity,
    pub(crate) subtree: Quantity,
    /// Past this usage the node borrows: nominal for a ClusterQueue, subtree for a Cohort.
    pub(crate) own_limit: Quantity,
    pub(crate) borrowing_limit: Option<Quantity>,
    /// The parent's cell of the same column, `NONE` for a root.
    pub(crate) parent: u32,
}

impl Cell {
    fn new(quota: &Quota, cohort: bool) -> Cell {
        Cell {
            usage: 0,
            guaranteed: quota.guaranteed,
            subtree: quota.subtree,
            own_limit: if cohort { quota.subtree } else { quota.nominal },
            borrowing_limit: quota.borrowing_limit,
            parent: NONE,
        }
    }
}

/// How many layouts (catalog and columns) the instance keeps: a preemption plugin uses one per
/// set of requested flavor-resources, a fair-sharing one also one with every column.
const KEPT: usize = 4;

thread_local! {
    /// Layouts at rest, most recently returned last.
    static KEPT_LAYOUTS: RefCell<Vec<Layout>> = const { RefCell::new(Vec::new()) };
}

/// The slots of the nodes a catalog's views have held, with the figures that do not change
/// while the catalog stays, and one view's usage and membership.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// The catalog it was made for ([`Catalog::serial`]).
    serial: u64,
    /// The tracked flavor-resources (the columns), without duplicates.
    pub(crate) frs: Vec<FrId>,
    /// Flavor-resource → column, `NONE` when not tracked.
    pub(crate) col_of: Vec<u32>,
    /// Catalog node → slot, `NONE` when the node has none yet.
    pub(crate) slot_of: Vec<u32>,
    /// Slot → catalog node.
    pub(crate) nodes: Vec<NodeId>,
    /// Slot → the slot of its parent, `NONE` for a root. A node's ancestors get slots before
    /// it, so walks up the tree never leave the layout.
    pub(crate) parent: Vec<u32>,
    /// Slot × column, row-major: the catalog's figures as they are (to read them back).
    pub(crate) quotas: Vec<Quota>,
    /// Slot × column, row-major (the same index as `quotas`); usage 0 outside the current
    /// view's members.
    pub(crate) cells: Vec<Cell>,
    /// Slot → the epoch of the last view that held it.
    stamp: Vec<u32>,
    /// The current view's epoch.
    epoch: u32,
    /// The slots the current view holds.
    members: Vec<u32>,
    /// Whether the members hold the usage the instance keeps ([`crate::kept`]), rather than
    /// the view's own.
    kept: bool,
    /// Under kept usage: how many arrivals of usage the members are up to date with
    /// ([`crate::kept::KeptUsage::arrivals`]).
    synced: usize,
    /// Whether usage was changed in a way the view does not undo itself (a public
    /// [`QuotaView`](crate::QuotaView) method): kept members are read again on return.
    pub(crate) dirty: bool,
}

impl Layout {
    /// A layout for `catalog` tracking `frs` (duplicates ignored): the one kept from an
    /// earlier view when there is one. With `kept`, its members are every node whose usage the
    /// instance keeps, with that usage ([`crate::kept`]); else the view starts with none
    /// (every usage 0).
    pub(crate) fn take(catalog: &Catalog, frs: &[FrId], kept: bool) -> Layout {
        let mut columns: Vec<FrId> = Vec::with_capacity(frs.len());
        for &fr in frs {
            if !columns.contains(&fr) {
                columns.push(fr);
            }
        }
        let serial = catalog.serial();
        let at_rest = KEPT_LAYOUTS.with_borrow_mut(|kept| {
            let at = kept
                .iter()
                .rposition(|l| l.serial == serial && l.frs == columns)?;
            Some(kept.remove(at))
        });
        let mut layout = at_rest.unwrap_or_else(|| Layout::new(catalog, serial, columns));
        if layout.kept != kept {
            layout.clear_members();
            layout.next_epoch();
            (layout.kept, layout.synced) = (kept, 0);
        }
        if kept {
            crate::kept::with(catalog, |k| layout.sync(catalog, k));
        } else {
            layout.next_epoch();
        }
        layout
    }

    /// Holds every node whose usage arrived since the last time, with its usage as received
    /// (a node read as a non-member would read 0: a request does not list it).
    fn sync(&mut self, catalog: &Catalog, k: &KeptUsage) {
        let cols = self.frs.len();
        let arrived = match k.arrived_since(self.synced) {
            Some(arrived) => arrived,
            // Some are forgotten: every node received.
            None => k.nodes(),
        };
        for &node in arrived {
            match self.slot(node) {
                Some(slot) if self.is_member(slot) => {
                    for (c, &fr) in self.frs.iter().enumerate() {
                        self.cells[slot * cols + c].usage = k.get(node, fr);
                    }
                }
                _ => _ = self.include_from(catalog, node, Some(k)),
            }
        }
        self.synced = k.arrivals();
    }

    /// Reads the members' usage again from what the instance keeps.
    fn reload_members(&mut self, k: &KeptUsage) {
        let cols = self.frs.len();
        for &slot in &self.members {
            let node = self.nodes[slot as usize];
            for (c, &fr) in self.frs.iter().enumerate() {
                self.cells[slot as usize * cols + c].usage = k.get(node, fr);
            }
        }
    }

    /// No member, every usage 0.
    fn clear_members(&mut self) {
        let cols = self.frs.len();
        for &slot in &self.members {
            let row = slot as usize * cols;
            clear_row(&mut self.cells[row..row + cols]);
        }
        self.members.clear();
    }

    /// A layout holding nothing, allocating nothing (what a view leaves behind as it gives its
    /// own back).
    pub(crate) fn empty() -> Layout {
        Layout {
            serial: 0,
            frs: Vec::new(),
            col_of: Vec::new(),
            slot_of: Vec::new(),
            nodes: Vec::new(),
            parent: Vec::new(),
            quotas: Vec::new(),
            cells: Vec::new(),
            stamp: Vec::new(),
            epoch: 0,
            members: Vec::new(),
            kept: false,
            synced: 0,
            dirty: false,
        }
    }

    fn new(catalog: &Catalog, serial: u64, frs: Vec<FrId>) -> Layout {
        let mut col_of: Vec<u32> = Vec::new();
        for (c, &fr) in frs.iter().enumerate() {
            let f = fr as usize;
            if col_of.len() <= f {
                col_of.resize(f + 1, NONE);
            }
            col_of[f] = c as u32;
        }
        Layout {
            serial,
            frs,
            col_of,
            slot_of: vec![NONE; catalog.nodes.len()],
            ..Layout::empty()
        }
    }

    /// Starts a new view: no slot is a member.
    fn next_epoch(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            // Stamps of 4 billion views ago could read as members again.
            self.stamp.fill(0);
            self.epoch = 1;
        }
    }

    /// Gives the layout back for later views: clears the usage the view held, or, holding
    /// kept usage, leaves the members holding it.
    pub(crate) fn give_back(mut self) {
        if !self.kept {
            self.clear_members();
        } else if self.dirty {
            // The catalog is the one the kept usage is laid out for: the view's.
            let serial = self.serial;
            crate::kept::with_current(|k| {
                if k.serial() == serial {
                    self.reload_members(k);
                } else {
                    self.clear_members();
                    self.kept = false;
                }
            });
        }
        self.dirty = false;
        KEPT_LAYOUTS.with_borrow_mut(|kept| {
            if let Some(at) = kept
                .iter()
                .position(|l| l.serial == self.serial && l.frs == self.frs)
            {
                kept.remove(at);
            }
            if kept.len() == KEPT {
                kept.remove(0);
            }
            kept.push(self);
        });
    }

    /// The node's slot, `None` when it has none (or is not a catalog node).
    pub(crate) fn slot(&self, node: NodeId) -> Option<usize> {
        match self.slot_of.get(node as usize) {
            Some(&s) if s != NONE => Some(s as usize),
            _ => None,
        }
    }

    /// Whether the current view holds the slot.
    pub(crate) fn is_member(&self, slot: usize) -> bool {
        self.stamp[slot] == self.epoch
    }

    /// Makes the current view hold the node and its ancestors (giving them slots first if they
    /// have none). Nodes that are not in the catalog are ignored; a parent outside the catalog
    /// ends the chain as a root would.
    /// Always inlined, the rest not: a search includes the queue of every candidate it takes
    /// out, which is nearly always a member already.
    #[inline(always)]
    pub(crate) fn include(&mut self, catalog: &Catalog, node: NodeId) -> Option<usize> {
        match self.slot(node) {
            Some(s) if self.is_member(s) => Some(s),
            _ => self.include_new(catalog, node),
        }
    }

    #[inline(never)]
    fn include_new(&mut self, catalog: &Catalog, node: NodeId) -> Option<usize> {
        if self.kept {
            crate::kept::with(catalog, |k| self.include_from(catalog, node, Some(k)))
        } else {
            self.include_from(catalog, node, None)
        }
    }

    /// [`include`](Layout::include) of a node that is not a member; new members read their
    /// usage from `kept` (else 0).
    fn include_from(
        &mut self,
        catalog: &Catalog,
        node: NodeId,
        kept: Option<&KeptUsage>,
    ) -> Option<usize> {
        let slot = match self.slot(node) {
            Some(s) => s,
            None => self.place(catalog, node)?,
        };
        // A member's ancestors are members: stop at the first one.
        let first_new = self.members.len();
        let mut s = slot;
        while !self.is_member(s) {
            self.stamp[s] = self.epoch;
            self.members.push(s as u32);
            match self.parent[s] {
                NONE => break,
                p => s = p as usize,
            }
        }
        if let Some(k) = kept {
            let cols = self.frs.len();
            for &m in &self.members[first_new..] {
                let (m, node) = (m as usize, self.nodes[m as usize]);
                for (c, &fr) in self.frs.iter().enumerate() {
                    self.cells[m * cols + c].usage = k.get(node, fr);
                }
            }
        }
        Some(slot)
    }

    /// Gives the node, and those of its ancestors that have none, a slot.
    fn place(&mut self, catalog: &Catalog, node: NodeId) -> Option<usize> {
        if node as usize >= self.slot_of.len() {
            return None;
        }
        let first = self.nodes.len();
        // The slot the new chain hangs from: an ancestor with a slot, or none (a root).
        let mut above = NONE;
        for n in std::iter::once(node).chain(catalog.ancestors(node)) {
            match self.slot_of.get(n as usize) {
                Some(&s) if s != NONE => {
                    above = s;
                    break;
                }
                Some(_) => {}
                None => break,
            }
            self.slot_of[n as usize] = self.nodes.len() as u32;
            self.nodes.push(n);
            // The next node of the chain is this one's parent.
            self.parent.push(self.nodes.len() as u32);
            self.stamp.push(0);
            let cohort = catalog.is_cohort(n);
            for &fr in &self.frs {
                let quota = catalog.quota(n, fr);
                self.cells.push(Cell::new(&quota, cohort));
                self.quotas.push(quota);
            }
        }
        if let Some(last) = self.parent.len().checked_sub(1).filter(|&l| l >= first) {
            self.parent[last] = above;
        }
        // Each new cell's parent is the same column's cell of the parent slot.
        let cols = self.frs.len();
        for slot in first..self.nodes.len() {
            let parent = self.parent[slot];
            for col in 0..cols {
                self.cells[slot * cols + col].parent = match parent {
                    NONE => NONE,
                    p => (p as usize * cols + col) as u32,
                };
            }
        }
        Some(first)
    }
}

/// Sets a row's usage to 0. Most views track one or two flavor-resources: a store or two.
fn clear_row(cells: &mut [Cell]) {
    match cells {
        [a] => a.usage = 0,
        [a, b] => (a.usage, b.usage) = (0, 0),
        cells => cells.iter_mut().for_each(|c| c.usage = 0),
    }
}
