//! The cohort tree Kueue's algorithms walk.

/// A node of the quota tree (a ClusterQueue or a cohort), numbered `0..node_count()`.
pub type NodeId = u32;

/// The cohort tree: which node is whose parent, and which nodes are ClusterQueues. Ids a
/// method returns are below [`Tree::node_count`].
pub trait Tree {
    /// How many nodes there are.
    fn node_count(&self) -> usize;
    /// The node's parent cohort; `None` for a root.
    fn parent(&self, node: NodeId) -> Option<NodeId>;
    /// The node's children, in the tree's order (Kueue's order of a cohort's children).
    fn children(&self, node: NodeId) -> impl Iterator<Item = NodeId> + '_;
    /// Whether the node is a ClusterQueue (else a cohort).
    fn is_cluster_queue(&self, node: NodeId) -> bool;
    /// The node of ClusterQueue `cq`, when the tree has it.
    fn cluster_queue_node(&self, cq: u32) -> Option<NodeId>;

    /// The node's ancestors, its parent first.
    fn ancestors(&self, node: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        std::iter::successors(self.parent(node), move |&n| self.parent(n))
    }

    /// The root of the node's tree (the node itself for a root).
    fn root(&self, node: NodeId) -> NodeId {
        self.ancestors(node).last().unwrap_or(node)
    }
}
