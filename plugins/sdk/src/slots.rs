//! [`SlotMap`]: which slot of a [`QuotaView`](crate::QuotaView) holds each catalog node. Dense
//! (one entry per catalog node, read by index), but a view pays only for the nodes it holds:
//! the maps come from a per-instance pool, are handed back clean when dropped, and a clone
//! copies only the entries set.

use std::cell::RefCell;

/// The entry of a node the view does not hold.
pub(crate) const NONE: u32 = u32::MAX;

thread_local! {
    /// Maps not in use, every entry `NONE`.
    static POOL: RefCell<Vec<Vec<u32>>> = const { RefCell::new(Vec::new()) };
}

/// Catalog node → slot (`NONE` where the view does not hold the node).
#[derive(Debug)]
pub(crate) struct SlotMap {
    map: Vec<u32>,
    /// The nodes whose entry is set, so that a clone or a return to the pool costs what the
    /// view holds rather than the size of the catalog.
    set: Vec<u32>,
}

impl SlotMap {
    /// A map for a catalog of `nodes` nodes, every entry `NONE`.
    pub(crate) fn new(nodes: usize) -> SlotMap {
        let pooled = POOL.with_borrow_mut(|pool| pool.pop());
        let map = match pooled {
            Some(map) if map.len() == nodes => map,
            _ => vec![NONE; nodes],
        };
        SlotMap {
            map,
            set: Vec::new(),
        }
    }

    /// The entry of node `n`: `None` when `n` is not a catalog node.
    pub(crate) fn get(&self, n: usize) -> Option<u32> {
        self.map.get(n).copied()
    }

    /// Sets node `n`'s slot (`n` must be a catalog node).
    pub(crate) fn set(&mut self, n: usize, slot: u32) {
        if self.map[n] == NONE {
            self.set.push(n as u32);
        }
        self.map[n] = slot;
    }
}

impl Clone for SlotMap {
    fn clone(&self) -> SlotMap {
        let mut out = SlotMap::new(self.map.len());
        for &n in &self.set {
            out.map[n as usize] = self.map[n as usize];
        }
        out.set.clone_from(&self.set);
        out
    }
}

impl Drop for SlotMap {
    fn drop(&mut self) {
        for &n in &self.set {
            self.map[n as usize] = NONE;
        }
        let map = std::mem::take(&mut self.map);
        POOL.with_borrow_mut(|pool| pool.push(map));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pooled_map_comes_back_clean_and_a_clone_keeps_only_what_was_set() {
        let mut a = SlotMap::new(8);
        a.set(3, 0);
        a.set(5, 1);
        let b = a.clone();
        a.set(6, 2);
        assert_eq!(
            (b.get(3), b.get(5), b.get(6)),
            (Some(0), Some(1), Some(NONE))
        );
        drop(a);
        drop(b);
        // Both maps went back to the pool; whichever comes out next is all NONE.
        let c = SlotMap::new(8);
        assert!((0..8).all(|n| c.get(n) == Some(NONE)));
        assert_eq!(c.get(8), None);
        // A catalog of another size gets a map of its own size.
        assert_eq!(SlotMap::new(3).get(3), None);
    }
}
