//! Kueue's queue order (`wasq-kueue`'s `ordering`, the same code the plugin SDK runs:
//! priority, then creation time; LocalQueue usage first under admission
//! fair sharing) and cycle order (second passes first, then non-borrowing, then priority, then
//! creation time; the fair-sharing tournament when fair sharing is on).

use crate::policy::{
    HeadEntry, Needs, OrderingPolicy, PolicyContext, PolicyError, PolicyRef, QueuedWorkload,
};
use crate::queue::SortKey;
use wasq_kueue::ordering;

use super::reads::HeadRows;

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
    let afs_usage = match (&cluster.settings.admission_fair_sharing, wl.local_queue) {
        (Some(afs), Some(lq)) if cluster.cq(wl.cluster_queue).admission_fair_sharing => {
            let weight = cluster.local_queues[lq.index()].fair_weight;
            Some(cluster.lq_usage.weighted(lq, afs, weight))
        }
        _ => None,
    };
    SortKey(ordering::sort_key(wl.priority, wl.created, afs_usage))
}

pub use ordering::order_bits;

/// Kueue's cycle order: the fair-sharing tournament when fair sharing is on, else
/// [`classical_order`].
pub fn order_heads(cx: &PolicyContext<'_>, heads: &[HeadEntry]) -> Vec<usize> {
    if cx.cluster.settings.fair_sharing_enabled() {
        return super::fair_ordering::order_heads(cx, heads);
    }
    classical_order(heads)
}

/// Kueue's classical cycle order (a stable sort: equal heads keep the host's order, by
/// ClusterQueue).
pub fn classical_order(heads: &[HeadEntry]) -> Vec<usize> {
    ordering::cycle_order(&HeadRows(heads), |i| heads[i as usize].priority)
        .into_iter()
        .map(|i| i as usize)
        .collect()
}
