//! Small in-memory implementations of the crate's traits for its own tests.

use crate::classical::Removal;
use crate::{CandidateKind, Candidates, NodeId, Quota, Tree};

/// Pseudo-random numbers below `m` (a linear congruential generator from `seed`).
pub fn numbers(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut x = seed;
    move |m| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % m.max(1)
    }
}

/// A candidate record.
#[derive(Debug, Clone)]
pub struct Cand {
    pub workload: u32,
    pub cluster_queue: u32,
    pub kind: CandidateKind,
    pub evicted: bool,
    pub priority: i64,
    pub admitted: i64,
    pub local_queue_usage: Option<f64>,
    pub lca: Option<NodeId>,
    pub usage: Vec<(u32, i64)>,
}

impl Cand {
    pub fn new(workload: u32, cluster_queue: u32) -> Cand {
        Cand {
            workload,
            cluster_queue,
            kind: CandidateKind::SameQueue,
            evicted: false,
            priority: 0,
            admitted: 0,
            local_queue_usage: None,
            lca: None,
            usage: Vec::new(),
        }
    }
}

/// Candidate records as a table.
pub struct Table {
    pub rows: Vec<Cand>,
    pub in_order: bool,
}

impl Table {
    pub fn of(rows: Vec<Cand>) -> Table {
        Table {
            rows,
            in_order: false,
        }
    }
}

impl Candidates for Table {
    fn len(&self) -> usize {
        self.rows.len()
    }
    fn kind(&self, i: u32) -> CandidateKind {
        self.rows[i as usize].kind
    }
    fn evicted(&self, i: u32) -> bool {
        self.rows[i as usize].evicted
    }
    fn cluster_queue(&self, i: u32) -> u32 {
        self.rows[i as usize].cluster_queue
    }
    fn priority(&self, i: u32) -> i64 {
        self.rows[i as usize].priority
    }
    fn admitted(&self, i: u32) -> i64 {
        self.rows[i as usize].admitted
    }
    fn workload(&self, i: u32) -> u32 {
        self.rows[i as usize].workload
    }
    fn local_queue_usage(&self, i: u32) -> Option<f64> {
        self.rows[i as usize].local_queue_usage
    }
    fn lca(&self, i: u32) -> Option<NodeId> {
        self.rows[i as usize].lca
    }
    fn usage(&self, i: u32) -> impl Iterator<Item = (u32, i64)> + '_ {
        self.rows[i as usize].usage.iter().copied()
    }
    fn in_candidate_order(&self) -> bool {
        self.in_order
    }
}

/// A quota tree over one flavor-resource: per node its parent, its ClusterQueue id (`None`
/// for a cohort) and its nominal quota (a cohort's is the sum of its children's).
pub struct TestTree {
    nodes: Vec<(Option<NodeId>, Option<u32>, i64)>,
}

impl TestTree {
    pub fn new(nodes: &[(Option<NodeId>, Option<u32>, i64)]) -> TestTree {
        let mut nodes = nodes.to_vec();
        for n in 0..nodes.len() {
            if nodes[n].1.is_none() {
                nodes[n].2 = (0..nodes.len())
                    .filter(|&c| nodes[c].0 == Some(n as u32))
                    .map(|c| nodes[c].2)
                    .sum();
            }
        }
        TestTree { nodes }
    }

    fn nominal(&self, node: NodeId) -> i64 {
        self.nodes[node as usize].2
    }
}

impl Tree for TestTree {
    fn node_count(&self) -> usize {
        self.nodes.len()
    }
    fn parent(&self, node: NodeId) -> Option<NodeId> {
        self.nodes[node as usize].0
    }
    fn children(&self, node: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.nodes.len() as u32).filter(move |&c| self.nodes[c as usize].0 == Some(node))
    }
    fn is_cluster_queue(&self, node: NodeId) -> bool {
        self.nodes[node as usize].1.is_some()
    }
    fn cluster_queue_node(&self, cq: u32) -> Option<NodeId> {
        self.nodes
            .iter()
            .position(|n| n.1 == Some(cq))
            .map(|n| n as u32)
    }
}

/// A classical search's snapshot on a [`TestTree`]: usage per node, a preemptor of
/// ClusterQueue node `own` needing `need`. It fits when its queue stays within nominal (unless
/// it may borrow) and its root within the tree's quota.
pub struct Sim<'a> {
    tree: &'a TestTree,
    t: &'a Table,
    own: NodeId,
    need: i64,
    pub usage: Vec<i64>,
}

impl<'a> Sim<'a> {
    pub fn new(
        tree: &'a TestTree,
        t: &'a Table,
        own: NodeId,
        usage: &[(NodeId, i64)],
        need: i64,
    ) -> Self {
        let mut u = vec![0; tree.node_count()];
        for &(node, v) in usage {
            u[node as usize] = v;
        }
        Sim {
            tree,
            t,
            own,
            need,
            usage: u,
        }
    }

    fn add(&mut self, i: u32, sign: i64) {
        let node = self
            .tree
            .cluster_queue_node(self.t.cluster_queue(i))
            .unwrap();
        let v: i64 = self.t.usage(i).map(|(_, v)| v).sum();
        for n in std::iter::once(node).chain(self.tree.ancestors(node).collect::<Vec<_>>()) {
            self.usage[n as usize] += sign * v;
        }
    }
}

impl Removal for Sim<'_> {
    type Taken = u32;
    fn is_valid(&mut self, i: u32, allow: bool) -> bool {
        let own_cq = self.tree.nodes[self.own as usize].1.unwrap();
        crate::classical::candidate_is_valid(self.tree, self.t, i, own_cq, allow, |n| {
            self.usage[n as usize] <= self.tree.nominal(n)
        })
    }
    fn take_out(&mut self, i: u32) -> u32 {
        self.add(i, -1);
        i
    }
    fn put_back(&mut self, &i: &u32) {
        self.add(i, 1);
    }
    fn take_out_again(&mut self, &i: &u32) {
        self.add(i, -1);
    }
    fn fits(&self, allow: bool, _victims: &[u32], _but: Option<usize>) -> bool {
        let own = self.own;
        let root = self.tree.root(own);
        (allow || self.usage[own as usize] + self.need <= self.tree.nominal(own))
            && self.usage[root as usize] + self.need <= self.tree.nominal(root)
    }
}

/// Quota over resources "cpu" and "gpu" (one flavor): per node its parent and nominal quota
/// of each; a cohort's subtree quota is the sum of its children's.
pub struct Shares {
    parents: Vec<Option<NodeId>>,
    subtree: Vec<[i64; 2]>,
    pub usage: Vec<[i64; 2]>,
}

impl Shares {
    pub fn new(parents: &[Option<NodeId>], nominal: &[[i64; 2]]) -> Shares {
        let subtree = (0..parents.len())
            .map(|n| {
                let children: Vec<usize> = (0..parents.len())
                    .filter(|&c| parents[c] == Some(n as u32))
                    .collect();
                if children.is_empty() {
                    nominal[n]
                } else {
                    [0, 1].map(|r| children.iter().map(|&c| nominal[c][r]).sum())
                }
            })
            .collect();
        Shares {
            parents: parents.to_vec(),
            subtree,
            usage: vec![[0, 0]; parents.len()],
        }
    }

    pub fn add(&mut self, node: NodeId, fr: u32, v: i64) {
        let mut at = Some(node);
        while let Some(n) = at {
            self.usage[n as usize][fr as usize] += v;
            at = self.parents[n as usize];
        }
    }
}

impl Quota for Shares {
    fn parent(&self, node: NodeId) -> Option<NodeId> {
        self.parents[node as usize]
    }
    fn flavor_resources(&self) -> usize {
        2
    }
    fn resource_of(&self, fr: u32) -> u32 {
        fr
    }
    fn resources(&self) -> usize {
        2
    }
    fn resource_name(&self, resource: u32) -> &str {
        ["cpu", "gpu"][resource as usize]
    }
    fn usage(&self, node: NodeId, fr: u32) -> i64 {
        self.usage[node as usize][fr as usize]
    }
    fn subtree_quota(&self, node: NodeId, fr: u32) -> i64 {
        self.subtree[node as usize][fr as usize]
    }
    fn potential_available(&self, node: NodeId, fr: u32) -> i64 {
        // No borrowing limits: what the root's subtree holds.
        let mut root = node;
        while let Some(p) = self.parents[root as usize] {
            root = p;
        }
        self.subtree[root as usize][fr as usize]
    }
}

/// A [`Shares`] tree's leaves are ClusterQueues, their ids their node numbers.
impl Tree for Shares {
    fn node_count(&self) -> usize {
        self.parents.len()
    }
    fn parent(&self, node: NodeId) -> Option<NodeId> {
        self.parents[node as usize]
    }
    fn children(&self, node: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.parents.len() as u32).filter(move |&c| self.parents[c as usize] == Some(node))
    }
    fn is_cluster_queue(&self, node: NodeId) -> bool {
        !self.parents.contains(&Some(node))
    }
    fn cluster_queue_node(&self, cq: u32) -> Option<NodeId> {
        ((cq as usize) < self.parents.len() && self.is_cluster_queue(cq)).then_some(cq)
    }
}

impl crate::share::Snapshot for Shares {
    fn add_usage(&mut self, node: NodeId, fr: u32, delta: i64) {
        self.add(node, fr, delta);
    }
    fn share(&self, node: NodeId) -> crate::Drs {
        crate::share::drs(self, node, 1000, &[])
    }
}

/// Heads: ClusterQueue, priority, creation time, cpu (flavor-resource 0) their assignment takes.
pub struct HeadList(pub Vec<(u32, i64, i64, i64)>);

impl crate::Heads for HeadList {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn cluster_queue(&self, i: u32) -> u32 {
        self.0[i as usize].0
    }
    fn priority(&self, i: u32) -> i64 {
        self.0[i as usize].1
    }
    fn created(&self, i: u32) -> i64 {
        self.0[i as usize].2
    }
    fn second_pass(&self, _i: u32) -> bool {
        false
    }
    fn borrow_level(&self, _i: u32) -> u32 {
        0
    }
    fn usage(&self, i: u32) -> impl Iterator<Item = (u32, i64)> + Clone + '_ {
        std::iter::once((0, self.0[i as usize].3))
    }
}
