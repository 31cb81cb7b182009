//! The host's records read through `wasq-kueue`'s traits: the quota tree ([`HostTree`]),
//! preemption candidates ([`CandidateRows`]), a cycle's heads ([`HeadRows`]) and a usage that
//! changes during a simulated decision ([`TreeSnapshot`]).

use wasq_kueue::share::{Drs, Snapshot};
use wasq_kueue::{CandidateKind, Candidates, Heads, Tree};

use crate::cluster::{Cluster, CqId};
use crate::policy::{Candidate, HeadEntry};
use crate::quota::fair::TreeQuota;
use crate::quota::{FrIdx, NodeId, NodeKind, QuotaTree, UsageWrite};

/// The quota tree, and which node each ClusterQueue is.
#[derive(Clone, Copy)]
pub struct HostTree<'a> {
    pub tree: &'a QuotaTree,
    pub cluster: &'a Cluster,
}

impl Tree for HostTree<'_> {
    fn node_count(&self) -> usize {
        self.tree.len()
    }
    fn parent(&self, node: u32) -> Option<u32> {
        self.tree.parent(NodeId(node)).map(|p| p.0)
    }
    fn children(&self, node: u32) -> impl Iterator<Item = u32> + '_ {
        self.tree.node(NodeId(node)).children.iter().map(|c| c.0)
    }
    fn is_cluster_queue(&self, node: u32) -> bool {
        self.tree.node(NodeId(node)).kind == NodeKind::ClusterQueue
    }
    fn cluster_queue_node(&self, cq: u32) -> Option<u32> {
        self.cluster
            .cluster_queues
            .get(CqId(cq).index())
            .map(|q| q.node.0)
    }
    fn ancestors(&self, node: u32) -> impl Iterator<Item = u32> + '_ {
        self.tree.ancestors(NodeId(node)).map(|a| a.0)
    }
    fn root(&self, node: u32) -> u32 {
        self.tree.root(NodeId(node)).0
    }
}

/// Candidate records; `in_order` when they are known to be in Kueue's candidate order (as the
/// scheduler promises a policy).
#[derive(Clone, Copy)]
pub struct CandidateRows<'a> {
    pub rows: &'a [Candidate],
    pub in_order: bool,
}

impl<'a> CandidateRows<'a> {
    pub fn new(rows: &'a [Candidate]) -> Self {
        CandidateRows {
            rows,
            in_order: false,
        }
    }

    fn row(&self, i: u32) -> &Candidate {
        &self.rows[i as usize]
    }
}

impl Candidates for CandidateRows<'_> {
    fn len(&self) -> usize {
        self.rows.len()
    }
    fn kind(&self, i: u32) -> CandidateKind {
        self.row(i).kind
    }
    fn evicted(&self, i: u32) -> bool {
        self.row(i).evicted
    }
    fn cluster_queue(&self, i: u32) -> u32 {
        self.row(i).cluster_queue.0
    }
    fn priority(&self, i: u32) -> i64 {
        self.row(i).priority
    }
    fn admitted(&self, i: u32) -> i64 {
        self.row(i).reserved_at
    }
    fn workload(&self, i: u32) -> u32 {
        self.row(i).workload.0
    }
    fn local_queue_usage(&self, i: u32) -> Option<f64> {
        self.row(i).local_queue_usage
    }
    fn lca(&self, i: u32) -> Option<u32> {
        self.row(i).lca.map(|n| n.0)
    }
    fn usage(&self, i: u32) -> impl Iterator<Item = (u32, i64)> + '_ {
        self.row(i).usage.iter().map(|&(fr, v)| (fr.0, v))
    }
    fn in_candidate_order(&self) -> bool {
        self.in_order
    }
}

/// A cycle's heads.
#[derive(Clone, Copy)]
pub struct HeadRows<'a>(pub &'a [HeadEntry]);

impl Heads for HeadRows<'_> {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn cluster_queue(&self, i: u32) -> u32 {
        self.0[i as usize].cluster_queue.0
    }
    fn priority(&self, i: u32) -> i64 {
        self.0[i as usize].priority
    }
    fn created(&self, i: u32) -> i64 {
        self.0[i as usize].created
    }
    fn second_pass(&self, i: u32) -> bool {
        self.0[i as usize].has_reservation
    }
    fn borrow_level(&self, i: u32) -> u32 {
        self.0[i as usize].borrow_level
    }
    fn usage(&self, i: u32) -> impl Iterator<Item = (u32, i64)> + Clone + '_ {
        self.0[i as usize].usage.iter().map(|&(fr, v)| (fr.0, v))
    }
}

/// A usage simulated on (a copy or an overlay of the cycle's), with the tree and the weights
/// its shares need.
pub struct TreeSnapshot<'a, U> {
    pub tree: &'a QuotaTree,
    pub cluster: &'a Cluster,
    pub usage: U,
}

impl<U: UsageWrite> Snapshot for TreeSnapshot<'_, U> {
    fn add_usage(&mut self, node: u32, fr: u32, delta: i64) {
        self.tree
            .add_usage(&mut self.usage, NodeId(node), FrIdx(fr), delta);
    }

    fn share(&self, node: u32) -> Drs {
        let weight = self.cluster.node_meta[node as usize].fair_weight;
        let quota = TreeQuota {
            tree: self.tree,
            names: &self.cluster.names,
            usage: &self.usage,
        };
        wasq_kueue::share::drs(&quota, node, weight, &[])
    }
}
