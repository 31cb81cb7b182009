//! Kueue's queue order (priority, then creation time) and cycle order (second passes first,
//! then non-borrowing, then priority, then creation time).

use crate::policy::{HeadEntry, OrderingPolicy, PolicyRef, QueuedWorkload};
use crate::queue::SortKey;

#[derive(Debug, Clone, Copy, Default)]
pub struct KueueOrdering;

impl OrderingPolicy for KueueOrdering {
    fn id(&self) -> PolicyRef {
        PolicyRef::builtin()
    }

    fn sort_key(&self, wl: &QueuedWorkload) -> SortKey {
        SortKey([-wl.priority, wl.created, 0])
    }

    fn order_heads(&self, heads: &[HeadEntry]) -> Vec<usize> {
        let mut order: Vec<usize> = (0..heads.len()).collect();
        // Stable: equal heads keep the host's order (by ClusterQueue).
        order.sort_by_key(|&i| {
            let h = &heads[i];
            (!h.has_reservation, h.borrow_level, -h.priority, h.created)
        });
        order
    }
}
