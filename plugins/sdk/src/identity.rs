//! Who a workload is: its namespace, the job that owns it, its LocalQueue, and the labels and
//! annotations the plugin's allow-list passes — read the same way on a [`Workload`], an
//! [`ordering::Head`](crate::ordering::Head), a
//! [`preemption::Candidate`](crate::preemption::Candidate) ([`Identity`]) and, by index, on a
//! [`CandidateTable`](crate::preemption::CandidateTable).
//!
//! The host sends these strings once per plugin instance, into a string table the SDK keeps in
//! the [`Catalog`] (`new-strings` in `wit/types.wit`); records carry [`StringId`]s. The
//! accessors take the catalog to resolve them:
//!
//! ```
//! # use wasq_policy_sdk::prelude::*;
//! # use wasq_policy_sdk::testing::{CatalogBuilder, workload, with_identity};
//! let mut catalog = CatalogBuilder::new().build();
//! let wl = with_identity(&mut catalog, workload(1, 0, 0, 0), "prod", Some(("Notebook", "kubeflow.org/v1", "nb")));
//! assert_eq!(wl.namespace(&catalog), "prod");
//! assert_eq!(wl.job_kind(&catalog), Some("Notebook"));
//! assert_eq!(wl.label(&catalog, "team"), None);
//! ```

use crate::catalog::Catalog;
use crate::types::{Entry, LocalQueueId, Owner, StringId, Workload, WorkloadIdentity};

/// The namespace of a record whose identity the host did not send (the plugin's `needs` lack
/// [`Needs::IDENTITY`](crate::types::Needs::IDENTITY)): an id no string has, read as `""`.
pub const NO_STRING: StringId = u32::MAX;

/// What identifies a workload, wherever it comes from. The provided methods resolve the
/// interned strings through the catalog; an id the host never sent reads as `""`.
pub trait Identity {
    /// Its namespace, as a string id.
    fn namespace_id(&self) -> StringId;
    /// The job that owns it (the Workload's controller ownerReference), as string ids.
    fn owner(&self) -> Option<Owner>;
    /// Its LocalQueue, as an index into the catalog's `local_queues`.
    fn local_queue_id(&self) -> Option<LocalQueueId>;
    /// The labels the allow-list passes.
    fn label_entries(&self) -> &[Entry];
    /// The annotations the allow-list passes.
    fn annotation_entries(&self) -> &[Entry];

    /// The Workload's namespace.
    fn namespace<'c>(&self, catalog: &'c Catalog) -> &'c str {
        catalog.string(self.namespace_id())
    }
    /// The owning job's kind (`Job`, `RayJob`, `Notebook`, …); `None` for a bare Workload.
    fn job_kind<'c>(&self, catalog: &'c Catalog) -> Option<&'c str> {
        self.owner().map(|o| catalog.string(o.kind))
    }
    /// The owning job's apiVersion (`batch/v1`, …).
    fn job_api_version<'c>(&self, catalog: &'c Catalog) -> Option<&'c str> {
        self.owner().map(|o| catalog.string(o.api_version))
    }
    /// The owning job's name (in the same namespace).
    fn job_name<'c>(&self, catalog: &'c Catalog) -> Option<&'c str> {
        self.owner().map(|o| catalog.string(o.name))
    }
    /// The name of its LocalQueue (in its namespace), when it has one the host knows.
    fn local_queue<'c>(&self, catalog: &'c Catalog) -> Option<&'c str> {
        let lq = self.local_queue_id()?;
        catalog
            .local_queues
            .get(lq as usize)
            .map(|l| l.name.as_str())
    }
    /// The value of the label `key`, when the allow-list passes it and the workload has it.
    fn label<'c>(&self, catalog: &'c Catalog, key: &str) -> Option<&'c str> {
        catalog.entry(self.label_entries().iter().copied(), key)
    }
    /// The value of the annotation `key`, when the allow-list passes it and the workload has
    /// it.
    fn annotation<'c>(&self, catalog: &'c Catalog, key: &str) -> Option<&'c str> {
        catalog.entry(self.annotation_entries().iter().copied(), key)
    }
}

/// Implements [`Identity`] for a type with the fields `namespace`, `owner`, `local_queue`,
/// `labels` and `annotations` (a head, a candidate).
macro_rules! identity_from_fields {
    ($t:ty) => {
        impl $crate::identity::Identity for $t {
            fn namespace_id(&self) -> $crate::types::StringId {
                self.namespace
            }
            fn owner(&self) -> Option<$crate::types::Owner> {
                self.owner
            }
            fn local_queue_id(&self) -> Option<$crate::types::LocalQueueId> {
                self.local_queue
            }
            fn label_entries(&self) -> &[$crate::types::Entry] {
                &self.labels
            }
            fn annotation_entries(&self) -> &[$crate::types::Entry] {
                &self.annotations
            }
        }
    };
}
pub(crate) use identity_from_fields;

/// A workload record's identity is `none` unless the plugin's `needs` include
/// [`Needs::IDENTITY`](crate::types::Needs::IDENTITY): it then reads as namespace `""`, no
/// owner, no labels or annotations.
impl Identity for Workload {
    fn namespace_id(&self) -> StringId {
        self.identity.as_ref().map_or(NO_STRING, |i| i.namespace)
    }
    fn owner(&self) -> Option<Owner> {
        self.identity.as_ref().and_then(|i| i.owner)
    }
    fn local_queue_id(&self) -> Option<LocalQueueId> {
        self.local_queue
    }
    fn label_entries(&self) -> &[Entry] {
        self.identity.as_ref().map_or(&[], |i| &i.labels)
    }
    fn annotation_entries(&self) -> &[Entry] {
        self.identity.as_ref().map_or(&[], |i| &i.annotations)
    }
}

/// The parts of a WIT identity as the SDK's records hold them: namespace, owner, labels,
/// annotations. `none` (a plugin without [`Needs::IDENTITY`](crate::types::Needs::IDENTITY))
/// reads as nobody in particular: namespace [`NO_STRING`], no owner, no entries.
pub(crate) fn into_parts(
    identity: Option<WorkloadIdentity>,
) -> (StringId, Option<Owner>, Vec<Entry>, Vec<Entry>) {
    match identity {
        Some(i) => (i.namespace, i.owner, i.labels, i.annotations),
        None => (NO_STRING, None, Vec::new(), Vec::new()),
    }
}

/// An identity from the parts an SDK record holds (the inverse of [`into_parts`]).
pub(crate) fn from_parts(who: &impl Identity) -> WorkloadIdentity {
    WorkloadIdentity {
        namespace: who.namespace_id(),
        owner: who.owner(),
        labels: who.label_entries().to_vec(),
        annotations: who.annotation_entries().to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{CatalogBuilder, intern, workload};

    #[test]
    fn a_workload_resolves_its_identity_through_the_string_table() {
        let mut cat = CatalogBuilder::new()
            .local_queue("team-a", "main", Some(0), 1000)
            .build();
        let mut wl = workload(1, 0, 0, 0);
        wl.local_queue = Some(0);
        wl.identity = Some(crate::types::WorkloadIdentity {
            namespace: intern(&mut cat, "team-a"),
            owner: Some(Owner {
                kind: intern(&mut cat, "RayJob"),
                api_version: intern(&mut cat, "ray.io/v1"),
                name: intern(&mut cat, "train"),
            }),
            labels: vec![Entry {
                key: intern(&mut cat, "kueue.x-k8s.io/tier"),
                value: intern(&mut cat, "gold"),
            }],
            annotations: Vec::new(),
        });
        assert_eq!(wl.namespace(&cat), "team-a");
        assert_eq!(wl.job_kind(&cat), Some("RayJob"));
        assert_eq!(wl.job_api_version(&cat), Some("ray.io/v1"));
        assert_eq!(wl.job_name(&cat), Some("train"));
        assert_eq!(wl.local_queue(&cat), Some("main"));
        assert_eq!(wl.label(&cat, "kueue.x-k8s.io/tier"), Some("gold"));
        assert_eq!(wl.label(&cat, "other"), None);
        assert_eq!(wl.annotation(&cat, "kueue.x-k8s.io/tier"), None);
        let bare = workload(2, 0, 0, 0);
        assert_eq!((bare.job_kind(&cat), bare.local_queue(&cat)), (None, None));
        // No identity sent (the plugin did not ask): nobody in particular.
        assert_eq!(
            (
                bare.namespace(&cat),
                bare.label(&cat, "kueue.x-k8s.io/tier")
            ),
            ("", None)
        );
        let (namespace, owner, labels, annotations) = into_parts(None);
        assert_eq!(
            (namespace, owner, labels.len() + annotations.len()),
            (NO_STRING, None, 0)
        );
        assert_eq!(into_parts(wl.identity.clone()).0, wl.namespace_id());
        assert_eq!(Some(from_parts(&wl)), wl.identity);
    }
}
