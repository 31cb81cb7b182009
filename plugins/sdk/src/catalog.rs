//! The catalog a plugin receives from the host, with lookups by name and by index.

use std::ops::Deref;

use crate::types::{
    self, Annotation, AnnotationKey, ClusterQueue, ClusterQueueId, Entry, FairSharingStrategy,
    FrId, LocalQueue, LocalQueueId, NewStrings, Node, NodeId, Quantity, Quota, StringId,
};

/// The host's catalog (see `wasq:policy/types.catalog`) with the lookups plugins need.
///
/// It dereferences to the raw WIT record, so every field (`nodes`, `cluster_queues`,
/// `flavors`, …) is available directly. The SDK stores the latest catalog the host sent and
/// passes it to every policy method; plugins never receive it themselves.
///
/// Every node's `quotas` list is sorted by flavor-resource when the catalog is stored, so that
/// [`Catalog::quota`] is a binary search; each node's children and each ClusterQueue node's
/// ClusterQueue are indexed then too.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    raw: types::Catalog,
    /// Node → its children, in increasing id (the host's order).
    children: Vec<Vec<NodeId>>,
    /// Node → the ClusterQueue whose node it is.
    cq_of_node: Vec<Option<ClusterQueueId>>,
    /// Node → its parent; ClusterQueue → its node (dense copies of the records' fields, read
    /// per candidate in preemption).
    parents: Vec<Option<NodeId>>,
    cq_nodes: Vec<NodeId>,
    /// Node → whether it is a Cohort.
    cohorts: Vec<bool>,
    /// Every node's quotas, sorted by node then flavor-resource, in one list: node `n`'s are
    /// `quotas[quota_start[n]..quota_start[n + 1]]`.
    quota_start: Vec<u32>,
    quotas: Vec<Quota>,
    /// The instance's string table (`new-strings`): what workloads' identities index. It
    /// outlives catalogs: a new catalog keeps it.
    strings: Vec<String>,
    /// Which catalog this is, for what views keep between calls (see [`Serial`]).
    serial: Serial,
}

/// A number given to each catalog made, so that what a [`QuotaView`](crate::QuotaView) kept
/// from an earlier view is reused only with the catalog it was made for. A clone keeps it
/// (same figures); it takes no part in comparing catalogs.
#[derive(Debug, Clone, Copy)]
struct Serial(u64);

impl Serial {
    fn next() -> Serial {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Serial(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

impl PartialEq for Serial {
    /// Catalogs compare by their figures, not by when they were made.
    fn eq(&self, _: &Serial) -> bool {
        true
    }
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
        let n = raw.nodes.len();
        let mut children = vec![Vec::new(); n];
        for (i, node) in raw.nodes.iter().enumerate() {
            if let Some(p) = node.parent.filter(|&p| (p as usize) < n) {
                children[p as usize].push(i as NodeId);
            }
        }
        let mut cq_of_node = vec![None; n];
        for (i, cq) in raw.cluster_queues.iter().enumerate() {
            if let Some(slot) = cq_of_node.get_mut(cq.node as usize) {
                slot.get_or_insert(i as ClusterQueueId);
            }
        }
        let parents = raw.nodes.iter().map(|n| n.parent).collect();
        let cq_nodes = raw.cluster_queues.iter().map(|cq| cq.node).collect();
        let cohorts = raw
            .nodes
            .iter()
            .map(|n| n.kind == types::NodeKind::Cohort)
            .collect();
        let mut quota_start = Vec::with_capacity(n + 1);
        let mut quotas = Vec::new();
        quota_start.push(0);
        for node in &raw.nodes {
            quotas.extend_from_slice(&node.quotas);
            quota_start.push(quotas.len() as u32);
        }
        Catalog {
            raw,
            children,
            cq_of_node,
            parents,
            cq_nodes,
            cohorts,
            quota_start,
            quotas,
            strings: Vec::new(),
            serial: Serial::next(),
        }
    }

    /// Which catalog this is (see [`Serial`]).
    pub(crate) fn serial(&self) -> u64 {
        self.serial.0
    }

    /// Installs a new catalog from the host, keeping the string table.
    pub(crate) fn replace(&mut self, raw: types::Catalog) {
        let strings = std::mem::take(&mut self.strings);
        *self = Catalog::new(raw);
        self.strings = strings;
    }

    /// Adds the strings the host sent with a call (`new-strings`): `first` = 0 starts a new
    /// table; otherwise the values go at `first` (the host always sends the table's length; a
    /// gap would read as empty strings rather than trap).
    pub(crate) fn add_strings(&mut self, new: NewStrings) {
        if new.first == 0 {
            self.strings.clear();
        }
        self.strings.resize(new.first as usize, String::new());
        self.strings.extend(new.values);
    }

    /// A string of the instance's table (a namespace, job kind or name, label or annotation
    /// key or value); `""` for an id the host never sent.
    pub fn string(&self, id: StringId) -> &str {
        self.strings.get(id as usize).map_or("", String::as_str)
    }

    /// How many strings the instance's table holds.
    pub fn strings_len(&self) -> usize {
        self.strings.len()
    }

    /// The id of `value` in the string table, adding it if new: for tests that build
    /// workloads by hand (the host does the interning in a plugin).
    pub fn intern(&mut self, value: &str) -> StringId {
        match self.strings.iter().position(|s| s == value) {
            Some(i) => i as StringId,
            None => {
                self.strings.push(value.to_string());
                (self.strings.len() - 1) as StringId
            }
        }
    }

    /// The value of `key` among interned `entries` (labels or annotations).
    pub fn entry(&self, entries: impl IntoIterator<Item = Entry>, key: &str) -> Option<&str> {
        entries
            .into_iter()
            .find(|e| self.string(e.key) == key)
            .map(|e| self.string(e.value))
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
            fair_sharing: None,
            admission_fair_sharing: None,
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
        self.parents.get(id as usize).copied().flatten()
    }

    /// The ancestors of a node, from its parent up to the root. Stops after as many steps as
    /// there are nodes, so a malformed catalog with a cycle cannot loop forever.
    pub fn ancestors(&self, id: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        std::iter::successors(self.parent(id), move |&n| self.parent(n)).take(self.raw.nodes.len())
    }

    /// The children of a Cohort, in increasing id (empty for a ClusterQueue or an unknown node).
    pub fn children(&self, id: NodeId) -> &[NodeId] {
        self.children.get(id as usize).map_or(&[], Vec::as_slice)
    }

    /// The root of a node's tree (the node itself when it has no parent).
    pub fn root(&self, id: NodeId) -> NodeId {
        self.ancestors(id).last().unwrap_or(id)
    }

    /// The quota a node has for a flavor-resource; all zero and unlimited when the node does not
    /// list it (or the node does not exist).
    pub fn quota(&self, node: NodeId, fr: FrId) -> Quota {
        let n = node as usize;
        let (Some(&from), Some(&to)) = (self.quota_start.get(n), self.quota_start.get(n + 1))
        else {
            return absent_quota(fr);
        };
        let list = &self.quotas[from as usize..to as usize];
        match list.binary_search_by_key(&fr, |q| q.fr) {
            Ok(i) => list[i],
            Err(_) => absent_quota(fr),
        }
    }

    /// Whether a node is a Cohort (`false` for a ClusterQueue or an unknown node).
    pub fn is_cohort(&self, id: NodeId) -> bool {
        self.cohorts.get(id as usize).copied().unwrap_or(false)
    }

    /// Kueue's `potentialAvailable`: the most a node could ever hold of `fr`, ignoring usage
    /// (its guaranteed quota plus what its parent could hold, capped by its borrowing limit; a
    /// root's subtree quota).
    pub fn potential_available(&self, node: NodeId, fr: FrId) -> Quantity {
        self.potential_available_at(node, fr, self.raw.nodes.len())
    }

    fn potential_available_at(&self, node: NodeId, fr: FrId, depth: usize) -> Quantity {
        let q = self.quota(node, fr);
        let parent = match self.parent(node) {
            Some(p) if depth > 0 => p,
            _ => return q.subtree,
        };
        let mut avail =
            q.guaranteed
                .saturating_add(self.potential_available_at(parent, fr, depth - 1));
        if let Some(limit) = q.borrowing_limit {
            avail = avail.min(q.subtree.saturating_add(limit));
        }
        avail
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
        self.cq_nodes.get(id as usize).copied()
    }

    /// The ClusterQueue whose quota-tree node `node` is (`None` for a Cohort).
    pub fn cluster_queue_of_node(&self, node: NodeId) -> Option<ClusterQueueId> {
        self.cq_of_node.get(node as usize).copied().flatten()
    }

    /// A LocalQueue, if the index is valid.
    pub fn local_queue(&self, id: LocalQueueId) -> Option<&LocalQueue> {
        self.raw.local_queues.get(id as usize)
    }

    /// Whether Kueue's fair sharing is on (`catalog.fair-sharing` is present).
    pub fn fair_sharing_enabled(&self) -> bool {
        self.raw.fair_sharing.is_some()
    }

    /// Fair sharing's preemption strategies, in order, when fair sharing is on.
    pub fn fair_sharing_strategies(&self) -> Option<&[FairSharingStrategy]> {
        self.raw
            .fair_sharing
            .as_ref()
            .map(|f| f.strategies.as_slice())
    }

    /// Whether a ClusterQueue orders its queue by admission fair sharing: admission fair
    /// sharing is configured and the ClusterQueue's `admission-fair-sharing` flag is set.
    pub fn uses_admission_fair_sharing(&self, cq: ClusterQueueId) -> bool {
        self.raw.admission_fair_sharing.is_some()
            && self
                .cluster_queue(cq)
                .is_some_and(|c| c.admission_fair_sharing)
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

#[cfg(test)]
mod tests {
    use crate::testing::CatalogBuilder;

    #[test]
    fn children_roots_and_cluster_queues_of_nodes() {
        // root(0) <- mid(1) <- a(2); root <- b(3)
        let cat = CatalogBuilder::new()
            .flavor_resources(1)
            .cohort("root", None)
            .cohort("mid", Some(0))
            .cluster_queue("a", Some(1))
            .cluster_queue("b", Some(0))
            .build();
        assert_eq!(cat.children(0), &[1, 3]);
        assert_eq!(cat.children(1), &[2]);
        assert!(cat.children(2).is_empty());
        assert_eq!(cat.root(2), 0);
        assert_eq!(cat.root(0), 0);
        assert_eq!(cat.cluster_queue_of_node(2), Some(0));
        assert_eq!(cat.cluster_queue_of_node(3), Some(1));
        assert_eq!(cat.cluster_queue_of_node(1), None);
    }

    #[test]
    fn potential_available_follows_guaranteed_quota_and_borrowing_limits() {
        // root(0) nominal 5 <- mid(1, borrowing 1) <- cq(2) nominal 2 lending 1
        let cat = CatalogBuilder::new()
            .flavor_resources(1)
            .cohort("root", None)
            .quota(0, 0, 5, None, None)
            .cohort("mid", Some(0))
            .quota(1, 0, 0, Some(1), None)
            .cluster_queue("cq", Some(1))
            .quota(2, 0, 2, None, Some(1))
            .build();
        // root: subtree 5 + 1 lent by mid = 6; mid: min(0 + 6, 1 + 1) = 2; cq: 1 + 2.
        assert_eq!(cat.potential_available(0, 0), 6);
        assert_eq!(cat.potential_available(1, 0), 2);
        assert_eq!(cat.potential_available(2, 0), 3);
    }
}
