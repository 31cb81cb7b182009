//! Kueue's fair-sharing cycle order (`fair_sharing_iterator.go`), exactly as the host's
//! built-in: a tournament over each cohort tree. At every level of the tree, among the winners
//! of the child cohorts and the heads of the child ClusterQueues, the winner is the entry whose
//! node below that level (a) does not borrow on the flavor-resources it requests, then (b) has
//! the lower dominant resource share once the entry's usage is added, then (c) has the higher
//! priority, then (d) is older.
//!
//! Kueue re-runs the tournament after every admission. This order is computed on a copy of the
//! usage in which every winner, in turn, takes its head's `usage`; the host asks again for the
//! remaining heads when one does not (`needs.tree-usage`). Heads of ClusterQueues without a
//! cohort, and the order between cohort trees (which share no quota), are not decided by the
//! tournament: they come in the classical cycle order.

use std::cmp::Ordering;

use crate::catalog::Catalog;
use crate::fair::{self, Drs};
use crate::ordering::Head;
use crate::quota::QuotaView;
use crate::types::NodeId;

/// The fair-sharing order of `heads` (a permutation of their indices) on `usage`, the quota
/// usage of the heads' cohort trees on every flavor-resource (a view built with
/// [`QuotaView::from_usage_table`] from what the host sends with `needs.tree-usage`).
pub fn fair_order_heads(catalog: &Catalog, heads: &[Head], usage: &QuotaView<'_>) -> Vec<u32> {
    let mut usage = usage.clone();
    let node_of = |i: u32| catalog.cluster_queue_node(heads[i as usize].cluster_queue);
    let mut remaining = super::order_heads(heads);
    let mut out = Vec::with_capacity(heads.len());
    while let Some(&first) = remaining.first() {
        let pick = match node_of(first) {
            Some(node) if catalog.parent(node).is_some() => {
                let root = catalog.root(node);
                let in_tree: Vec<u32> = remaining
                    .iter()
                    .copied()
                    .filter(|&i| node_of(i).is_some_and(|n| catalog.root(n) == root))
                    .collect();
                let shares = shares(catalog, &mut usage, heads, &in_tree);
                // Each ClusterQueue's head, by ClusterQueue id (at most one head per queue).
                let mut by_cq: Vec<Option<u32>> = vec![None; catalog.cluster_queues.len()];
                for &i in &in_tree {
                    if let Some(slot) = by_cq.get_mut(heads[i as usize].cluster_queue as usize) {
                        slot.get_or_insert(i);
                    }
                }
                tournament(catalog, root, heads, &by_cq, &shares).unwrap_or(first)
            }
            _ => first,
        };
        remaining.retain(|&i| i != pick);
        out.push(pick);
        if let Some(node) = node_of(pick) {
            usage.add_workload(node, &heads[pick as usize].usage);
        }
    }
    out
}

/// Per entry (by position in the entries), the share of each node on its ClusterQueue's path
/// once the entry's usage is added, keyed by the node's parent (Kueue's `computeDRS`).
struct Shares {
    entries: Vec<u32>,
    by_parent: Vec<Vec<(NodeId, Drs)>>,
}

impl Shares {
    fn get(&self, entry: u32, parent: NodeId) -> Option<&Drs> {
        let at = self.entries.iter().position(|&e| e == entry)?;
        self.by_parent[at]
            .iter()
            .find(|(p, _)| *p == parent)
            .map(|(_, d)| d)
    }
}

fn shares(catalog: &Catalog, usage: &mut QuotaView<'_>, heads: &[Head], entries: &[u32]) -> Shares {
    let mut by_parent = Vec::with_capacity(entries.len());
    for &i in entries {
        let head = &heads[i as usize];
        let mut path = Vec::new();
        if let Some(cq_node) = catalog.cluster_queue_node(head.cluster_queue) {
            usage.add_workload(cq_node, &head.usage);
            let mut node = cq_node;
            for parent in catalog.ancestors(cq_node) {
                path.push((parent, usage.drs_of(node, &[])));
                node = parent;
            }
            usage.remove_workload(cq_node, &head.usage);
        }
        by_parent.push(path);
    }
    Shares {
        entries: entries.to_vec(),
        by_parent,
    }
}

/// Kueue's `runTournament`: the winner below `cohort`, if any entry is.
fn tournament(
    catalog: &Catalog,
    cohort: NodeId,
    heads: &[Head],
    by_cq: &[Option<u32>],
    shares: &Shares,
) -> Option<u32> {
    let children = catalog.children(cohort);
    let mut candidates = Vec::new();
    for &child in children {
        if catalog.cluster_queue_of_node(child).is_none() {
            candidates.extend(tournament(catalog, child, heads, by_cq, shares));
        }
    }
    for &child in children {
        if let Some(cq) = catalog.cluster_queue_of_node(child) {
            candidates.extend(by_cq.get(cq as usize).copied().flatten());
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
fn less(heads: &[Head], shares: &Shares, cohort: NodeId, a: u32, b: u32) -> bool {
    let zero = Drs::zero(1000);
    let da = shares.get(a, cohort).unwrap_or(&zero);
    let db = shares.get(b, cohort).unwrap_or(&zero);
    let (ha, hb) = (&heads[a as usize], &heads[b as usize]);
    let (ba, bb) = (da.is_borrowing_on(&ha.usage), db.is_borrowing_on(&hb.usage));
    if ba != bb {
        return !ba;
    }
    match fair::compare(da, db) {
        Ordering::Less => return true,
        Ordering::Greater => return false,
        Ordering::Equal => {}
    }
    if ha.priority != hb.priority {
        return ha.priority > hb.priority;
    }
    ha.created < hb.created
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{CatalogBuilder, amounts, head, usage_table};

    /// root(0) <- left(1) <- a(2, cq 0), b(3, cq 1); root <- c(4, cq 2); alone(5, cq 3).
    /// Every ClusterQueue has 4 of fr 0.
    fn forest() -> Catalog {
        CatalogBuilder::new()
            .flavor_resources(1)
            .cohort("root", None)
            .cohort("left", Some(0))
            .cluster_queue("a", Some(1))
            .quota(2, 0, 4, None, None)
            .cluster_queue("b", Some(1))
            .quota(3, 0, 4, None, None)
            .cluster_queue("c", Some(0))
            .quota(4, 0, 4, None, None)
            .cluster_queue("alone", None)
            .quota(5, 0, 4, None, None)
            .fair_sharing(&[])
            .build()
    }

    fn with_usage(mut h: Head, amount: i64) -> Head {
        h.usage = amounts(&[(0, amount)]);
        h
    }

    #[test]
    fn non_borrowing_then_lower_share_wins() {
        let cat = forest();
        // a already uses 4: its head borrows; b's does not.
        let table = usage_table(&cat, &[0], &[(2, 0, 4)]);
        let view = QuotaView::from_usage_table(&cat, &table);
        let heads = [
            with_usage(head(10, 0, 5, 0), 2),
            with_usage(head(11, 1, 0, 9), 2),
        ];
        assert_eq!(fair_order_heads(&cat, &heads, &view), vec![1, 0]);
        // Classically, a's higher priority goes first.
        assert_eq!(super::super::order_heads(&heads), vec![0, 1]);
    }

    #[test]
    fn each_winner_takes_its_usage_before_the_next_round() {
        let cat = forest();
        let view = QuotaView::from_usage_table(&cat, &usage_table(&cat, &[0], &[]));
        // Each head takes 6 of its 4. Round 1: a and b tie in `left` (2/12 each), a has the
        // higher priority; at the root `left` would not borrow (6 of 8) while c would: a.
        // Round 2: `left` would now hold 12 of 8 (share 4/12) against c's 2/12: c, then b.
        let heads = [
            with_usage(head(10, 0, 3, 0), 6),
            with_usage(head(11, 1, 2, 0), 6),
            with_usage(head(12, 2, 1, 0), 6),
        ];
        assert_eq!(fair_order_heads(&cat, &heads, &view), vec![0, 2, 1]);
        assert_eq!(super::super::order_heads(&heads), vec![0, 1, 2]);
    }

    #[test]
    fn heads_without_a_cohort_keep_the_classical_place() {
        let cat = forest();
        let view = QuotaView::from_usage_table(&cat, &usage_table(&cat, &[0, 5], &[]));
        let heads = [
            with_usage(head(10, 3, 9, 0), 1),
            with_usage(head(11, 0, 1, 0), 1),
        ];
        assert_eq!(fair_order_heads(&cat, &heads, &view), vec![0, 1]);
    }
}
