//! The catalog a plugin receives from the host, with lookups by name and by index.

use std::ops::Deref;

use crate::types::{
    self, Annotation, AnnotationKey, ClusterQueue, ClusterQueueId, FrId, Node, NodeId, Quota,
};

/// The host's catalog (see `wasq:policy/types.catalog`) with the lookups plugins need.
///
/// It dereferences to the raw WIT record, so every field (`nodes`, `cluster_queues`,
/// `flavors`, …) is available directly. The SDK stores the latest catalog the host sent and
/// passes it to every policy method; plugins never receive it themselves.
///
/// Every node's `quotas` list is sorted by flavor-resource when the catalog is stored, so that
/// [`Catalog::quota`] is a binary search.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    raw: types::Catalog,
}

/// The figures of a flavor-resource a node does not list: all zero, no limits.
fn absent_quota(fr: FrId) -> Quota {
    Quota {
        fr,
        nominal: 0,
        borrowing_limit: None,
        lending_limit: None,
        subtree: 0,
        guaranteed: 0,
    }
}

impl Catalog {
    /// Wraps a catalog as the host sent it.
    pub fn new(mut raw: types::Catalog) -> Catalog {
        for node in &mut raw.nodes {
            node.quotas.sort_by_key(|q| q.fr);
        }
        Catalog { raw }
    }

    /// The catalog before the host sent one: generation 0, everything empty.
    pub fn empty() -> Catalog {
        Catalog::new(types::Catalog {
            generation: 0,
            resources: Vec::new(),
            flavors: Vec::new(),
            flavor_resources: Vec::new(),
            nodes: Vec::new(),
            cluster_queues: Vec::new(),
            local_queues: Vec::new(),
            annotation_keys: Vec::new(),
            settings: Vec::new(),
        })
    }

    /// The raw WIT record.
    pub fn raw(&self) -> &types::Catalog {
        &self.raw
    }

    /// A node of the quota tree, if the index is valid.
    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.raw.nodes.get(id as usize)
    }

    /// The parent Cohort of a node (`None` for a root or an unknown node).
    pub fn parent(&self, id: NodeId) -> Option<NodeId> {
        self.node(id).and_then(|n| n.parent)
    }

    /// The ancestors of a node, from its parent up to the root. Stops after as many steps as
    /// there are nodes, so a malformed catalog with a cycle cannot loop forever.
    pub fn ancestors(&self, id: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        std::iter::successors(self.parent(id), move |&n| self.parent(n)).take(self.raw.nodes.len())
    }

    /// The quota a node has for a flavor-resource; all zero and unlimited when the node does not
    /// list it (or the node does not exist).
    pub fn quota(&self, node: NodeId, fr: FrId) -> Quota {
        self.node(node)
            .and_then(|n| {
                n.quotas
                    .binary_search_by_key(&fr, |q| q.fr)
                    .ok()
                    .map(|i| n.quotas[i])
            })
            .unwrap_or_else(|| absent_quota(fr))
    }

    /// Whether a node is a ClusterQueue (as opposed to a Cohort).
    pub fn is_cluster_queue_node(&self, id: NodeId) -> bool {
        self.node(id)
            .is_some_and(|n| n.kind == types::NodeKind::ClusterQueue)
    }

    /// A ClusterQueue, if the index is valid.
    pub fn cluster_queue(&self, id: ClusterQueueId) -> Option<&ClusterQueue> {
        self.raw.cluster_queues.get(id as usize)
    }

    /// The quota-tree node of a ClusterQueue.
    pub fn cluster_queue_node(&self, id: ClusterQueueId) -> Option<NodeId> {
        self.cluster_queue(id).map(|cq| cq.node)
    }

    /// The index of an exposed annotation key, by name.
    pub fn annotation_key(&self, name: &str) -> Option<AnnotationKey> {
        self.raw
            .annotation_keys
            .iter()
            .position(|k| k == name)
            .map(|i| i as AnnotationKey)
    }

    /// The value of the annotation `name` in a list the host sent (of a workload, candidate,
    /// node or flavor), or `None` when it is absent or not exposed.
    ///
    /// ```
    /// # use wasq_policy_sdk::testing::CatalogBuilder;
    /// # use wasq_policy_sdk::types::Annotation;
    /// let catalog = CatalogBuilder::new().annotation_key("wasq.dev/cost").build();
    /// let annotations = vec![Annotation { key: 0, value: "3".into() }];
    /// assert_eq!(catalog.annotation(&annotations, "wasq.dev/cost"), Some("3"));
    /// assert_eq!(catalog.annotation(&annotations, "wasq.dev/other"), None);
    /// ```
    pub fn annotation<'a>(&self, annotations: &'a [Annotation], name: &str) -> Option<&'a str> {
        let key = self.annotation_key(name)?;
        annotations
            .iter()
            .find(|a| a.key == key)
            .map(|a| a.value.as_str())
    }

    /// The value of this plugin's setting `key` (`plugins.<name>.settings` in the wasq
    /// configuration), if configured.
    pub fn setting(&self, key: &str) -> Option<&str> {
        self.raw
            .settings
            .iter()
            .find(|s| s.key == key)
            .map(|s| s.value.as_str())
    }
}

impl Deref for Catalog {
    type Target = types::Catalog;

    fn deref(&self) -> &types::Catalog {
        &self.raw
    }
}

impl Default for Catalog {
    fn default() -> Catalog {
        Catalog::empty()
    }
}

impl From<types::Catalog> for Catalog {
    fn from(raw: types::Catalog) -> Catalog {
        Catalog::new(raw)
    }
}
