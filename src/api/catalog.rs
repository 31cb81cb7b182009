//! The facts about other objects that defaulting and validation may consult: WorkloadPriorityClass
//! values and which namespaces hold a LocalQueue named `default`.
//!
//! Nothing here checks that a referenced object exists: a missing flavor, cohort or queue makes a
//! queue inactive at run time in Kueue, which the scheduling core models.

use std::collections::{BTreeMap, BTreeSet};

use super::types::{LocalQueue, WorkloadPriorityClass};

/// Kueue's name for the LocalQueue that unlabelled jobs default to (`LocalQueueDefaulting`).
pub const DEFAULT_LOCAL_QUEUE: &str = "default";
/// Kueue's name for the WorkloadPriorityClass that unlabelled jobs default to
/// (`WorkloadPriorityClassDefaulting`).
pub const DEFAULT_PRIORITY_CLASS: &str = "default";

/// See the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    pub priority_classes: BTreeMap<String, i32>,
    pub namespaces_with_default_queue: BTreeSet<String>,
}

impl Catalog {
    pub fn new<'a>(
        priority_classes: impl IntoIterator<Item = &'a WorkloadPriorityClass>,
        local_queues: impl IntoIterator<Item = &'a LocalQueue>,
    ) -> Self {
        Catalog {
            priority_classes: priority_classes
                .into_iter()
                .filter_map(|pc| Some((pc.metadata.name.clone()?, pc.value)))
                .collect(),
            namespaces_with_default_queue: local_queues
                .into_iter()
                .filter(|lq| lq.metadata.name.as_deref() == Some(DEFAULT_LOCAL_QUEUE))
                .filter_map(|lq| lq.metadata.namespace.clone())
                .collect(),
        }
    }

    /// The value of the WorkloadPriorityClass `name`, if it exists.
    pub fn priority_of(&self, name: &str) -> Option<i32> {
        self.priority_classes.get(name).copied()
    }

    pub fn has_default_queue(&self, namespace: &str) -> bool {
        self.namespaces_with_default_queue.contains(namespace)
    }

    pub fn has_default_priority_class(&self) -> bool {
        self.priority_classes.contains_key(DEFAULT_PRIORITY_CLASS)
    }
}
