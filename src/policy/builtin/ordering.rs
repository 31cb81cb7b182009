//! Kueue's queue order (priority, then creation time) and cycle order (second passes first,
//! then non-borrowing, then priority, then creation time).

use crate::policy::{
    HeadEntry, OrderingPolicy, PolicyContext, PolicyError, PolicyRef, QueuedWorkload,
};
use crate::queue::SortKey;

#[derive(Debug, Clone, Copy, Default)]
pub struct KueueOrdering;

impl OrderingPolicy for KueueOrdering {
    fn id(&self) -> PolicyRef {
        PolicyRef::builtin()
    }

    fn sort_keys(
        &self,
        _: &PolicyContext<'_>,
        batch: &[QueuedWorkload],
    ) -> Result<Vec<SortKey>, PolicyError> {
        Ok(batch.iter().map(sort_key).collect())
    }

    fn order_heads(
        &self,
        _: &PolicyContext<'_>,
        heads: &[HeadEntry],
    ) -> Result<Vec<usize>, PolicyError> {
        Ok(order_heads(heads))
    }
}

/// Kueue's queue order: higher priority first, then older first.
pub fn sort_key(wl: &QueuedWorkload) -> SortKey {
    SortKey([-wl.priority, wl.created, 0])
}

/// Kueue's cycle order.
pub fn order_heads(heads: &[HeadEntry]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..heads.len()).collect();
    // Stable: equal heads keep the host's order (by ClusterQueue).
    order.sort_by_key(|&i| {
        let h = &heads[i];
        (!h.has_reservation, h.borrow_level, -h.priority, h.created)
    });
    order
}
