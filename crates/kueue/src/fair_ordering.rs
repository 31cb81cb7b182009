//! Kueue's fair-sharing cycle order (`fair_sharing_iterator.go`): a tournament over each cohort
//! tree. At every level of the tree, among the winners of the child cohorts and the heads of the
//! child ClusterQueues, the winner is the entry whose node below that level (a) does not borrow
//! on the flavor-resources it requests, then (b) has the lower dominant resource share once the
//! entry's usage is added, then (c) has the higher priority, then (d) is older.
//!
//! Kueue re-runs the tournament after every admission. This order is computed on a snapshot
//! in which every winner, in turn, takes its head's usage; the caller asks again for the
//! remaining heads when one does not take it. Heads of ClusterQueues without a cohort, and the
//! order between cohort trees (which share no quota), are not decided by the tournament: they
//! come in the classical cycle order.

use std::cmp::Ordering;

use crate::share::{self, Drs, Snapshot};
use crate::{Heads, NodeId, Tree};

/// The fair-sharing order of `heads` (a permutation of their indices), starting from the
/// classical cycle order `classical`, on `snapshot` (the quota usage of the heads' cohort trees;
/// each winner's usage is added to it in turn). Only [`Snapshot::add_usage`] and
/// [`Snapshot::share`] are asked.
pub fn order_heads<T: Tree + ?Sized, H: Heads + ?Sized, S: Snapshot + ?Sized>(
    tree: &T,
    heads: &H,
    classical: Vec<u32>,
    snapshot: &mut S,
) -> Vec<u32> {
    let node_of = |i: u32| tree.cluster_queue_node(heads.cluster_queue(i));
    let mut remaining = classical;
    let mut out = Vec::with_capacity(heads.len());
    let mut shares = Shares {
        by_entry: vec![None; heads.len()],
    };
    // Each ClusterQueue's head, by ClusterQueue node (at most one head per queue).
    let mut by_cq: Vec<Option<u32>> = vec![None; tree.node_count()];
    while let Some(&first) = remaining.first() {
        let pick = match node_of(first) {
            Some(node) if tree.parent(node).is_some() => {
                let root = tree.root(node);
                let in_tree: Vec<u32> = remaining
                    .iter()
                    .copied()
                    .filter(|&i| node_of(i).is_some_and(|n| tree.root(n) == root))
                    .collect();
                shares.fill(tree, heads, snapshot, &in_tree);
                by_cq.fill(None);
                for &i in &in_tree {
                    if let Some(slot) = node_of(i).and_then(|n| by_cq.get_mut(n as usize)) {
                        slot.get_or_insert(i);
                    }
                }
                tournament(tree, root, heads, &by_cq, &shares).unwrap_or(first)
            }
            _ => first,
        };
        remaining.retain(|&i| i != pick);
        out.push(pick);
        if let Some(node) = node_of(pick) {
            for (fr, v) in heads.usage(pick) {
                snapshot.add_usage(node, fr, v);
            }
            // The winner's usage changed its queue and that queue's cohorts: shares computed
            // for paths through them are stale.
            let changed: Vec<NodeId> = std::iter::once(node).chain(tree.ancestors(node)).collect();
            for entry in &mut shares.by_entry {
                if entry
                    .as_ref()
                    .is_some_and(|path| path.iter().any(|(_, n, _)| changed.contains(n)))
                {
                    *entry = None;
                }
            }
        }
    }
    out
}

/// Per entry, the share of each node on its path once the entry's usage is added, keyed by
/// the node's parent (Kueue's `computeDRS`): `(parent, node, share)` per level, the entry's
/// ClusterQueue first. Indexed by head; computed when missing.
struct Shares {
    by_entry: Vec<Option<Vec<(NodeId, NodeId, Drs)>>>,
}

impl Shares {
    fn get(&self, entry: u32, parent: NodeId) -> Option<&Drs> {
        self.by_entry
            .get(entry as usize)?
            .as_ref()?
            .iter()
            .find(|(p, _, _)| *p == parent)
            .map(|(_, _, d)| d)
    }

    /// Computes the missing shares of `entries` on the snapshot.
    fn fill<T: Tree + ?Sized, H: Heads + ?Sized, S: Snapshot + ?Sized>(
        &mut self,
        tree: &T,
        heads: &H,
        snapshot: &mut S,
        entries: &[u32],
    ) {
        for &i in entries {
            if self.by_entry[i as usize].is_some() {
                continue;
            }
            let Some(cq_node) = tree.cluster_queue_node(heads.cluster_queue(i)) else {
                self.by_entry[i as usize] = Some(Vec::new());
                continue;
            };
            for (fr, v) in heads.usage(i) {
                snapshot.add_usage(cq_node, fr, v);
            }
            let mut path = Vec::new();
            let mut node = cq_node;
            while let Some(parent) = tree.parent(node) {
                path.push((parent, node, snapshot.share(node)));
                node = parent;
            }
            for (fr, v) in heads.usage(i) {
                snapshot.add_usage(cq_node, fr, -v);
            }
            self.by_entry[i as usize] = Some(path);
        }
    }
}

/// Kueue's `runTournament`: the winner below `cohort`, if any entry is.
fn tournament<T: Tree + ?Sized, H: Heads + ?Sized>(
    tree: &T,
    cohort: NodeId,
    heads: &H,
    by_cq: &[Option<u32>],
    shares: &Shares,
) -> Option<u32> {
    let mut candidates = Vec::new();
    for child in tree.children(cohort) {
        if !tree.is_cluster_queue(child) {
            candidates.extend(tournament(tree, child, heads, by_cq, shares));
        }
    }
    for child in tree.children(cohort) {
        if tree.is_cluster_queue(child) {
            candidates.extend(by_cq.get(child as usize).copied().flatten());
        }
    }
    let mut best = *candidates.first()?;
    for &current in &candidates[1..] {
        if less(heads, shares, cohort, current, best) {
            best = current;
        }
    }
    Some(best)
}

/// Kueue's `entryComparer.less` at the level of `cohort`.
fn less<H: Heads + ?Sized>(heads: &H, shares: &Shares, cohort: NodeId, a: u32, b: u32) -> bool {
    let zero = Drs::zero(1000);
    let da = shares.get(a, cohort).unwrap_or(&zero);
    let db = shares.get(b, cohort).unwrap_or(&zero);
    let (ba, bb) = (
        da.is_borrowing_on(heads.usage(a)),
        db.is_borrowing_on(heads.usage(b)),
    );
    if ba != bb {
        return !ba;
    }
    match share::compare(da, db) {
        Ordering::Less => return true,
        Ordering::Greater => return false,
        Ordering::Equal => {}
    }
    if heads.priority(a) != heads.priority(b) {
        return heads.priority(a) > heads.priority(b);
    }
    heads.created(a) < heads.created(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ordering::cycle_order;
    use crate::testing::{HeadList, Shares};

    /// A cohort (2) of two ClusterQueues (0, 1) with 4 cpu each.
    fn pair() -> Shares {
        Shares::new(&[Some(2), Some(2), None], &[[4, 0], [4, 0], [0, 0]])
    }

    #[test]
    fn a_head_that_would_borrow_loses_to_one_that_would_not() {
        let mut q = pair();
        q.add(0, 0, 2);
        // Queue 0's head would borrow (2 + 3 > 4), queue 1's would not: 1 first, priority aside.
        let heads = HeadList(vec![(0, 9, 0, 3), (1, 0, 0, 3)]);
        let classical = cycle_order(&heads, |i| heads.0[i as usize].1);
        assert_eq!(classical, vec![0, 1]);
        let tree = pair();
        assert_eq!(order_heads(&tree, &heads, classical, &mut q), vec![1, 0]);
        // Each winner's usage was added in turn.
        assert_eq!((q.usage[0][0], q.usage[1][0]), (5, 3));
    }

    /// Shares computed before a winner took its usage are not reused for a head of the same
    /// ClusterQueue: the second head of queue 0 would now borrow, and loses to queue 1's.
    #[test]
    fn a_winners_usage_is_seen_by_the_next_head_of_its_queue() {
        let mut q = pair();
        let heads = HeadList(vec![(0, 3, 0, 3), (0, 2, 0, 3), (1, 1, 0, 3)]);
        let classical = cycle_order(&heads, |i| heads.0[i as usize].1);
        let tree = pair();
        assert_eq!(order_heads(&tree, &heads, classical, &mut q), vec![0, 2, 1]);
    }
}
