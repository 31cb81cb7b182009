//! The SDK's records read through `wasq-kueue`'s traits: the catalog's quota tree, the
//! candidates in either form ([`Rows`]), heads ([`HeadRecords`]) and a [`QuotaView`] as the
//! usage a decision simulates on.

use wasq_kueue::share::{self, Drs, Quota, Snapshot};
use wasq_kueue::{CandidateKind as Kind, Candidates, Heads, Tree};

use crate::catalog::Catalog;
use crate::ordering::Head;
use crate::preemption::{CandidateKind, CandidateTable};
use crate::quota::QuotaView;
use crate::types::{FrAmount, FrId, NodeId, Quantity};

/// The catalog's tree, as the host sent it; a parent or a ClusterQueue's node outside the node
/// list (a malformed catalog) reads as none.
impl Tree for Catalog {
    fn node_count(&self) -> usize {
        self.nodes.len()
    }
    fn parent(&self, node: NodeId) -> Option<NodeId> {
        Catalog::parent(self, node).filter(|&p| (p as usize) < self.nodes.len())
    }
    fn children(&self, node: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        Catalog::children(self, node).iter().copied()
    }
    fn is_cluster_queue(&self, node: NodeId) -> bool {
        self.is_cluster_queue_node(node)
    }
    fn cluster_queue_node(&self, cq: u32) -> Option<NodeId> {
        Catalog::cluster_queue_node(self, cq).filter(|&n| (n as usize) < self.nodes.len())
    }
    /// Stops after as many steps as there are nodes (a malformed catalog with a cycle).
    fn ancestors(&self, node: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        std::iter::successors(Tree::parent(self, node), move |&n| Tree::parent(self, n))
            .take(self.nodes.len())
    }
}

/// A candidate table (records or the host's columns) as `wasq-kueue` reads it.
pub(crate) struct Rows<'a, C: ?Sized>(pub &'a C);

/// The SDK's candidate kind as `wasq-kueue`'s.
#[inline(always)]
fn kind(kind: CandidateKind) -> Kind {
    match kind {
        CandidateKind::SameQueue => Kind::SameQueue,
        CandidateKind::HierarchicalReclaim => Kind::HierarchicalReclaim,
        CandidateKind::ReclaimWithoutBorrowing => Kind::ReclaimWithoutBorrowing,
        CandidateKind::ReclaimWhileBorrowing => Kind::ReclaimWhileBorrowing,
        CandidateKind::FairSharing => Kind::FairSharing,
    }
}

impl<C: CandidateTable + ?Sized> Candidates for Rows<'_, C> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    fn kind(&self, i: u32) -> Kind {
        kind(self.0.kind(i as usize))
    }
    #[inline(always)]
    fn evicted(&self, i: u32) -> bool {
        self.0.evicting(i as usize)
    }
    #[inline(always)]
    fn cluster_queue(&self, i: u32) -> u32 {
        self.0.cluster_queue(i as usize)
    }
    #[inline(always)]
    fn priority(&self, i: u32) -> i64 {
        self.0.priority(i as usize)
    }
    #[inline(always)]
    fn admitted(&self, i: u32) -> i64 {
        self.0.admitted(i as usize)
    }
    #[inline(always)]
    fn workload(&self, i: u32) -> u32 {
        self.0.workload(i as usize)
    }
    #[inline(always)]
    fn local_queue_usage(&self, i: u32) -> Option<f64> {
        self.0.local_queue_usage(i as usize)
    }
    #[inline(always)]
    fn lca(&self, i: u32) -> Option<NodeId> {
        self.0.lca(i as usize)
    }
    fn usage(&self, i: u32) -> impl Iterator<Item = (u32, i64)> + '_ {
        self.0.usage(i as usize).map(|a| (a.fr, a.amount))
    }
    #[inline(always)]
    fn in_candidate_order(&self) -> bool {
        self.0.in_candidate_order()
    }
}

/// Head records as `wasq-kueue` reads them.
pub(crate) struct HeadRecords<'a>(pub &'a [Head]);

impl Heads for HeadRecords<'_> {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn cluster_queue(&self, i: u32) -> u32 {
        self.0[i as usize].cluster_queue
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
        self.0[i as usize].usage.iter().map(|a| (a.fr, a.amount))
    }
}

/// A flavor-resource amount as `wasq-kueue`'s `(flavor-resource, amount)` pair (what
/// [`Drs::is_borrowing_on`] reads).
impl From<&FrAmount> for (FrId, Quantity) {
    fn from(a: &FrAmount) -> Self {
        (a.fr, a.amount)
    }
}

/// A view's figures for shares. It must track every flavor-resource (built with
/// [`QuotaView::from_usage_table`]).
impl Quota for QuotaView<'_> {
    fn parent(&self, node: NodeId) -> Option<NodeId> {
        Tree::parent(self.catalog(), node)
    }
    fn flavor_resources(&self) -> usize {
        self.catalog().flavor_resources.len()
    }
    fn resource_of(&self, fr: u32) -> u32 {
        self.catalog()
            .flavor_resources
            .get(fr as usize)
            .map_or(u32::MAX, |p| p.resource)
    }
    fn resources(&self) -> usize {
        self.catalog().resources.len()
    }
    fn resource_name(&self, resource: u32) -> &str {
        self.catalog()
            .resources
            .get(resource as usize)
            .map_or("", String::as_str)
    }
    fn usage(&self, node: NodeId, fr: u32) -> i64 {
        QuotaView::usage(self, node, fr)
    }
    fn subtree_quota(&self, node: NodeId, fr: u32) -> i64 {
        self.quota(node, fr).subtree
    }
    fn potential_available(&self, node: NodeId, fr: u32) -> i64 {
        self.catalog().potential_available(node, fr)
    }
}

/// A view as the usage a fair-sharing decision simulates on; shares with each node's own
/// `fair-weight` (1000 for an unknown node).
impl Snapshot for QuotaView<'_> {
    fn add_usage(&mut self, node: NodeId, fr: u32, delta: i64) {
        QuotaView::add_usage(self, node, fr, delta);
    }
    fn share(&self, node: NodeId) -> Drs {
        let weight = self.catalog().node(node).map_or(1000, |n| n.fair_weight);
        share::drs(self, node, weight, &[])
    }
}
