//! Kueue's queue order (priority, then creation time; LocalQueue usage first under admission
//! fair sharing) and cycle order (second passes first, then non-borrowing, then priority, then
//! creation time; the fair-sharing tournament when fair sharing is on).

use crate::policy::{
    HeadEntry, Needs, OrderingPolicy, PolicyContext, PolicyError, PolicyRef, QueuedWorkload,
};
use crate::queue::SortKey;

#[derive(Debug, Clone, Copy, Default)]
pub struct KueueOrdering;

impl OrderingPolicy for KueueOrdering {
    fn id(&self) -> PolicyRef {
        PolicyRef::builtin()
    }

    fn needs(&self, cx: &PolicyContext<'_>) -> Needs {
        needs(cx)
    }

    fn sort_keys(
        &self,
        cx: &PolicyContext<'_>,
        batch: &[QueuedWorkload],
    ) -> Result<Vec<SortKey>, PolicyError> {
        Ok(batch.iter().map(|wl| sort_key(cx, wl)).collect())
    }

    fn order_heads(
        &self,
        cx: &PolicyContext<'_>,
        heads: &[HeadEntry],
    ) -> Result<Vec<usize>, PolicyError> {
        Ok(order_heads(cx, heads))
    }
}

/// What Kueue's ordering reads under the cluster's configuration.
pub fn needs(cx: &PolicyContext<'_>) -> Needs {
    let settings = &cx.cluster.settings;
    Needs {
        tree_usage: settings.fair_sharing_enabled(),
        local_queue_usage: settings.admission_fair_sharing.is_some(),
        identity: false,
        pod_sets: false,
    }
}

/// Kueue's queue order: higher priority first, then older first; under admission fair sharing
/// (the ClusterQueue's `admissionScope`), lower LocalQueue usage before both.
pub fn sort_key(cx: &PolicyContext<'_>, wl: &QueuedWorkload) -> SortKey {
    let cluster = cx.cluster;
    if let (Some(afs), Some(lq)) = (&cluster.settings.admission_fair_sharing, wl.local_queue)
        && cluster.cq(wl.cluster_queue).admission_fair_sharing
    {
        let weight = cluster.local_queues[lq.index()].fair_weight;
        let usage = cluster.lq_usage.weighted(lq, afs, weight);
        return SortKey([order_bits(usage), -wl.priority, wl.created]);
    }
    SortKey([-wl.priority, wl.created, 0])
}

/// A non-negative float as an `i64` with the same order (IEEE 754 bit patterns of non-negative
/// numbers, +∞ included, sort like the numbers); zero, -0.0 and negatives are 0.
pub fn order_bits(v: f64) -> i64 {
    // Not `max(0.0)`: an empty sum is -0.0, whose bits would sort first (and `max` keeps it on
    // some platforms).
    if v > 0.0 { v.to_bits() as i64 } else { 0 }
}

/// Kueue's cycle order: the fair-sharing tournament when fair sharing is on, else
/// [`classical_order`].
pub fn order_heads(cx: &PolicyContext<'_>, heads: &[HeadEntry]) -> Vec<usize> {
    if cx.cluster.settings.fair_sharing_enabled() {
        return super::fair_ordering::order_heads(cx, heads);
    }
    classical_order(heads)
}

/// Kueue's classical cycle order.
pub fn classical_order(heads: &[HeadEntry]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..heads.len()).collect();
    // Stable: equal heads keep the host's order (by ClusterQueue).
    order.sort_by_key(|&i| {
        let h = &heads[i];
        (!h.has_reservation, h.borrow_level, -h.priority, h.created)
    });
    order
}

#[cfg(test)]
mod tests {
    use super::order_bits;

    #[test]
    fn order_bits_keep_the_order_of_usage() {
        assert_eq!(order_bits(-0.0), 0);
        assert_eq!(order_bits(0.0), 0);
        assert!(order_bits(0.5) > order_bits(0.0));
        assert!(order_bits(2.0) > order_bits(1.5));
        assert!(order_bits(f64::INFINITY) > order_bits(1e300));
    }
}
