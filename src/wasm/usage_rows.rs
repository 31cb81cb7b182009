//! The quota usage a preemption request carries (WIT 0.11.0, `request.usage-kept`). The
//! instance keeps every usage row it receives, so a request carries only the rows of the
//! preemptor's cohort tree whose usage changed since the instance last received them (the
//! whole tree the first time): between two requests a cycle admits a workload or two, which
//! changes a queue and its cohorts, and most requests carry a row or two instead of one per
//! candidate's queue.
//!
//! The host's side mirrors what the instance holds, by node and flavor-resource, and skips the
//! comparison for a tree it compared on the same figures already ([`Usage::epoch`]). It lives as
//! long as the instance and its catalog (a discarded instance, or a new catalog, starts it
//! again, as the instance does).

use crate::cluster::Cluster;
use crate::quota::{FrIdx, NodeId, Usage};

/// What one instance holds of the cluster's usage.
#[derive(Debug, Default)]
pub struct SentUsage {
    /// By node × flavor-resource (`node * width + fr`): the usage the instance holds, when
    /// `held`.
    values: Vec<i64>,
    held: Vec<bool>,
    width: usize,
    /// The nodes of each tree walked so far, breadth first from its root, back to back: the
    /// tree of root `r` is `trees[spans[r].0 .. spans[r].1]` (an empty span: not walked yet).
    trees: Vec<u32>,
    spans: Vec<(u32, u32)>,
    /// The usage compared last ([`Usage::epoch`]) and the trees and flavor-resource lists
    /// compared under it: compared again under the same epoch, they have no row to send.
    epoch: u64,
    compared: Vec<(NodeId, Vec<FrIdx>)>,
}

impl SentUsage {
    /// The instance holds nothing (a new instance or a new catalog).
    pub fn clear(&mut self) {
        self.values.clear();
        self.held.clear();
        // A new catalog may come with another quota tree.
        self.trees.clear();
        self.spans.clear();
        self.epoch = 0;
        self.compared.clear();
    }

    /// Whether the tree of `root` was compared for `frs` on these very figures already (a
    /// cycle's requests share its snapshot); from now on it counts as compared.
    fn compared_already(&mut self, usage: &Usage, root: NodeId, frs: &[FrIdx]) -> bool {
        let epoch = usage.epoch();
        if epoch != self.epoch {
            self.epoch = epoch;
            self.compared.clear();
        }
        if self.compared.iter().any(|(r, f)| *r == root && f == frs) {
            return true;
        }
        self.compared.push((root, frs.to_vec()));
        false
    }

    /// The nodes of the tree rooted at `root`, breadth first from the root: walked once, then
    /// read from `trees`.
    fn tree(&mut self, cluster: &Cluster, root: NodeId) -> std::ops::Range<usize> {
        if self.spans.len() != cluster.tree.len() {
            self.spans = vec![(0, 0); cluster.tree.len()];
            self.trees.clear();
        }
        let (from, to) = self.spans[root.index()];
        if from < to {
            return from as usize..to as usize;
        }
        let start = self.trees.len();
        self.trees.push(root.0);
        let mut i = start;
        while i < self.trees.len() {
            let node = cluster.tree.node(NodeId(self.trees[i]));
            self.trees.extend(node.children.iter().map(|c| c.0));
            i += 1;
        }
        self.spans[root.index()] = (start as u32, self.trees.len() as u32);
        start..self.trees.len()
    }

    /// The rows of the tree rooted at `root` (breadth first from the root) whose usage of
    /// `frs` the instance does not hold as `usage` has it, row-major: their nodes written over
    /// `rows`, the amounts over `values`. The instance holds them from now on.
    pub fn fill_changed(
        &mut self,
        (rows, values): (&mut Vec<u32>, &mut Vec<i64>),
        cluster: &Cluster,
        usage: &Usage,
        root: NodeId,
        frs: &[FrIdx],
    ) {
        let width = usage.n_fr();
        let len = cluster.tree.len() * width;
        if self.width != width || self.values.len() != len {
            self.width = width;
            self.values = vec![0; len];
            self.held = vec![false; len];
        }
        rows.clear();
        values.clear();
        if self.compared_already(usage, root, frs) {
            return;
        }
        let tree = self.tree(cluster, root);
        for &n in &self.trees[tree] {
            let node = NodeId(n);
            let at = node.index() * width;
            let changed = frs.iter().any(|&fr| {
                let k = at + fr.index();
                !self.held[k] || self.values[k] != usage.get(node, fr)
            });
            if !changed {
                continue;
            }
            rows.push(n);
            for &fr in frs {
                let (k, v) = (at + fr.index(), usage.get(node, fr));
                self.values[k] = v;
                self.held[k] = true;
                values.push(v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::UsageWrite;

    /// An example with ClusterQueues in a cohort.
    fn cluster() -> Cluster {
        crate::sim::Scenario::load(&[std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/gpu-cohort-borrowing.yaml"
        ))])
        .expect("loads")
        .cluster
    }

    #[test]
    fn rows_cross_once_until_they_change() {
        let cluster = cluster();
        let tree = &cluster.tree;
        let mut usage = tree.new_usage();
        let leaf = (0..tree.len() as u32)
            .map(NodeId)
            .find(|&n| tree.node(n).children.is_empty() && tree.parent(n).is_some())
            .expect("a queue in a cohort");
        let root = tree.root(leaf);
        let fr = FrIdx(0);
        let mut sent = SentUsage::default();
        let (mut rows, mut values) = (Vec::new(), Vec::new());
        let mut fill = |sent: &mut SentUsage, usage: &Usage, frs: &[FrIdx]| {
            sent.fill_changed((&mut rows, &mut values), &cluster, usage, root, frs);
            (rows.clone(), values.clone())
        };
        let (first, _) = fill(&mut sent, &usage, &[fr]);
        assert_eq!(first[0], root.0, "the whole tree, root first");
        assert!(first.contains(&leaf.0));
        assert_eq!(
            fill(&mut sent, &usage, &[fr]).0,
            Vec::<u32>::new(),
            "nothing changed"
        );
        tree.add_usage(&mut usage, leaf, fr, 7);
        let (changed, amounts) = fill(&mut sent, &usage, &[fr]);
        assert!(changed.contains(&leaf.0), "the queue whose usage changed");
        assert_eq!(
            amounts[changed.iter().position(|&n| n == leaf.0).unwrap()],
            7
        );
        assert!(changed.len() < first.len(), "not the whole tree again");
        assert_eq!(fill(&mut sent, &usage, &[fr]).0, Vec::<u32>::new());
        // Another flavor-resource was never sent: the whole tree for it.
        assert!(usage.n_fr() > 1, "the example has two GPU flavors");
        assert_eq!(
            fill(&mut sent, &usage, &[fr, FrIdx(1)]).0.len(),
            first.len()
        );
        usage.set(leaf, fr, 7);
        assert_eq!(
            fill(&mut sent, &usage, &[fr]).0,
            Vec::<u32>::new(),
            "the same figure"
        );
        sent.clear();
        assert_eq!(
            fill(&mut sent, &usage, &[fr]).0,
            first,
            "a new instance holds nothing"
        );
    }
}
