//! Kueue's fair-sharing cycle order (`fair_sharing_iterator.go`'s tournament) on the host's
//! records: `wasq-kueue`'s `fair_ordering` (the same code the plugin SDK runs), on a copy of
//! the cycle's usage in which every winner, in turn, takes its assignment's usage. The
//! scheduler asks again for the remaining heads when one does not (see `Needs::tree_usage`).
//! Heads of ClusterQueues without a cohort, and the order between cohort trees (which share
//! no quota), are not decided by the tournament: Kueue takes them in map order, wasq in the
//! classical cycle order.

use super::reads::{HeadRows, HostTree, TreeSnapshot};
use crate::policy::{HeadEntry, PolicyContext};

/// The fair-sharing order of `heads`, a permutation of their indices.
pub fn order_heads(cx: &PolicyContext<'_>, heads: &[HeadEntry]) -> Vec<usize> {
    let cluster = cx.cluster;
    let tree = HostTree {
        tree: &cluster.tree,
        cluster,
    };
    let classical: Vec<u32> = super::ordering::classical_order(heads)
        .into_iter()
        .map(|i| i as u32)
        .collect();
    let mut snapshot = TreeSnapshot {
        tree: &cluster.tree,
        cluster,
        usage: cx.usage.clone(),
    };
    wasq_kueue::fair_ordering::order_heads(&tree, &HeadRows(heads), classical, &mut snapshot)
        .into_iter()
        .map(|i| i as usize)
        .collect()
}
