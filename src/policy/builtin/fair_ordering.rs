//! Kueue's fair-sharing cycle order (`fair_sharing_iterator.go`): a tournament over each cohort
//! tree. At every level of the tree, among the winners of the child cohorts and the heads of the
//! child ClusterQueues, the winner is the entry whose node below that level (a) does not borrow
//! on the flavor-resources it requests, then (b) has the lower dominant resource share once the
//! entry's usage is added, then (c) has the higher priority, then (d) is older.
//!
//! Kueue re-runs the tournament after every admission. This order is computed on a copy of the
//! usage in which every winner, in turn, takes its assignment's usage; the scheduler asks again
//! for the remaining heads when one does not (see `Needs::tree_usage`). Heads of ClusterQueues
//! without a cohort, and the order between cohort trees (which share no quota), are not decided
//! by the tournament: Kueue takes them in map order, wasq in the classical cycle order.

use std::cmp::Ordering;

use crate::cluster::Cluster;
use crate::policy::{HeadEntry, PolicyContext};
use crate::quota::{Drs, NodeId, Usage, fair};

/// The fair-sharing order of `heads`, a permutation of their indices.
pub fn order_heads(cx: &PolicyContext<'_>, heads: &[HeadEntry]) -> Vec<usize> {
    let cluster = cx.cluster;
    let tree = &cluster.tree;
    let mut usage = cx.usage.clone();
    let mut remaining = super::ordering::classical_order(heads);
    let mut out = Vec::with_capacity(heads.len());
    let mut shares = Shares {
        by_entry: vec![None; heads.len()],
    };
    while let Some(&first) = remaining.first() {
        let node = cluster.cq(heads[first].cluster_queue).node;
        let pick = if tree.parent(node).is_none() {
            first
        } else {
            let root = tree.root(node);
            let in_tree: Vec<usize> = remaining
                .iter()
                .copied()
                .filter(|&i| tree.root(cluster.cq(heads[i].cluster_queue).node) == root)
                .collect();
            shares.fill(cluster, &mut usage, heads, &in_tree);
            // Each ClusterQueue's head (at most one head per queue).
            let mut by_cq: rustc_hash::FxHashMap<_, usize> = Default::default();
            for &i in &in_tree {
                by_cq.entry(heads[i].cluster_queue).or_insert(i);
            }
            tournament(cluster, root, heads, &by_cq, &shares).unwrap_or(first)
        };
        remaining.retain(|&i| i != pick);
        out.push(pick);
        let node = cluster.cq(heads[pick].cluster_queue).node;
        for &(fr, v) in &heads[pick].usage {
            tree.add_usage(&mut usage, node, fr, v);
        }
        // The winner's usage changed its queue and that queue's cohorts: shares computed for
        // nodes among them are stale (a queue's own share depends only on its own usage).
        let changed: Vec<NodeId> = tree.ancestors(node).collect();
        for entry in &mut shares.by_entry {
            if entry
                .as_ref()
                .is_some_and(|path| path.iter().skip(1).any(|(_, n, _)| changed.contains(n)))
            {
                *entry = None;
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
    fn get(&self, entry: usize, parent: NodeId) -> Option<&Drs> {
        self.by_entry
            .get(entry)?
            .as_ref()?
            .iter()
            .find(|(p, _, _)| *p == parent)
            .map(|(_, _, d)| d)
    }

    /// Computes the missing shares of `entries` on `usage`.
    fn fill(
        &mut self,
        cluster: &Cluster,
        usage: &mut Usage,
        heads: &[HeadEntry],
        entries: &[usize],
    ) {
        let tree = &cluster.tree;
        for &i in entries {
            if self.by_entry[i].is_some() {
                continue;
            }
            let cq_node = cluster.cq(heads[i].cluster_queue).node;
            for &(fr, v) in &heads[i].usage {
                tree.add_usage(usage, cq_node, fr, v);
            }
            let mut path = Vec::new();
            let mut node = cq_node;
            while let Some(parent) = tree.parent(node) {
                let weight = cluster.node_meta[node.index()].fair_weight;
                path.push((
                    parent,
                    node,
                    tree.drs(&cluster.names, usage, node, weight, &[]),
                ));
                node = parent;
            }
            for &(fr, v) in &heads[i].usage {
                tree.add_usage(usage, cq_node, fr, -v);
            }
            self.by_entry[i] = Some(path);
        }
    }
}

/// Kueue's `runTournament`: the winner below `cohort`, if any entry is.
fn tournament(
    cluster: &Cluster,
    cohort: NodeId,
    heads: &[HeadEntry],
    by_cq: &rustc_hash::FxHashMap<crate::cluster::CqId, usize>,
    shares: &Shares,
) -> Option<usize> {
    let tree = &cluster.tree;
    let children = &tree.node(cohort).children;
    let mut candidates = Vec::new();
    for &child in children {
        if cluster.cq_of_node(child).is_none() {
            candidates.extend(tournament(cluster, child, heads, by_cq, shares));
        }
    }
    for &child in children {
        if let Some(cq) = cluster.cq_of_node(child) {
            candidates.extend(by_cq.get(&cq).copied());
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
fn less(heads: &[HeadEntry], shares: &Shares, cohort: NodeId, a: usize, b: usize) -> bool {
    let zero = Drs {
        weight_milli: 1000,
        ratio: 0.0,
        dominant: None,
        borrowed: Vec::new(),
    };
    let da = shares.get(a, cohort).unwrap_or(&zero);
    let db = shares.get(b, cohort).unwrap_or(&zero);
    let (ba, bb) = (
        da.is_borrowing_on(&heads[a].usage),
        db.is_borrowing_on(&heads[b].usage),
    );
    if ba != bb {
        return !ba;
    }
    match fair::compare(da, db) {
        Ordering::Less => return true,
        Ordering::Greater => return false,
        Ordering::Equal => {}
    }
    if heads[a].priority != heads[b].priority {
        return heads[a].priority > heads[b].priority;
    }
    heads[a].created < heads[b].created
}
