//! Who a workload is (WIT 0.5.0): its namespace, the job that owns it, its LocalQueue, and the
//! labels and annotations the plugin's allow-list passes — read the same way on a
//! [`Workload`], an [`ordering::Head`](crate::ordering::Head), a
//! [`preemption::Candidate`](crate::preemption::Candidate) ([`Identity`]) and on the columns of
//! a [`CandidateTable`](crate::preemption::CandidateTable).
//!
//! The host sends these strings once per plugin instance, into a string table the SDK keeps in
//! the [`Catalog`] (`new-strings` in `wit/types.wit`); records and columns carry
//! [`StringId`]s. The accessors take the catalog to resolve them:
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
use crate::types::{Entry, Identities, LocalQueueId, Owner, StringId, Workload};

/// `no-string` in the identity columns: none (a workload without an owning job).
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

/// The identity columns of `n` workloads made safe to read with [`namespace_at`],
/// [`owner_at`], [`labels_at`] and [`annotations_at`]: `none` (a plugin without
/// [`Needs::IDENTITY`](crate::types::Needs::IDENTITY)) reads as no identities; the entry
/// columns are normalized ([`normalize_entries`]); short string columns read as `no-string`.
pub(crate) fn normalize_identities(ids: Option<Identities>, n: usize) -> Identities {
    let mut c = ids.unwrap_or_else(|| Identities {
        namespaces: Vec::new(),
        job_kinds: Vec::new(),
        job_api_versions: Vec::new(),
        job_names: Vec::new(),
        label_offsets: Vec::new(),
        label_keys: Vec::new(),
        label_values: Vec::new(),
        annotation_offsets: Vec::new(),
        annotation_keys: Vec::new(),
        annotation_values: Vec::new(),
    });
    normalize_entries(
        &mut c.label_offsets,
        &mut c.label_keys,
        &mut c.label_values,
        n,
    );
    normalize_entries(
        &mut c.annotation_offsets,
        &mut c.annotation_keys,
        &mut c.annotation_values,
        n,
    );
    c
}

/// Workload `i`'s namespace in identity columns (`no-string` when not sent).
pub(crate) fn namespace_at(c: &Identities, i: usize) -> StringId {
    c.namespaces.get(i).copied().unwrap_or(NO_STRING)
}

/// Workload `i`'s owner in identity columns (none when not sent).
pub(crate) fn owner_at(c: &Identities, i: usize) -> Option<Owner> {
    let string = |v: &Vec<StringId>| v.get(i).copied().unwrap_or(NO_STRING);
    owner_of(
        string(&c.job_kinds),
        string(&c.job_api_versions),
        string(&c.job_names),
    )
}

/// Workload `i`'s labels in identity columns made safe by [`normalize_identities`].
pub(crate) fn labels_at(c: &Identities, i: usize) -> impl Iterator<Item = Entry> + '_ {
    entries_of(&c.label_offsets, &c.label_keys, &c.label_values, i)
}

/// Workload `i`'s annotations in identity columns made safe by [`normalize_identities`].
pub(crate) fn annotations_at(c: &Identities, i: usize) -> impl Iterator<Item = Entry> + '_ {
    entries_of(
        &c.annotation_offsets,
        &c.annotation_keys,
        &c.annotation_values,
        i,
    )
}

/// An owner from the three job columns (`no-string` in `kind` = none).
pub(crate) fn owner_of(kind: StringId, api_version: StringId, name: StringId) -> Option<Owner> {
    (kind != NO_STRING).then_some(Owner {
        kind,
        api_version,
        name,
    })
}

/// Entry columns (`label-offsets`/`-keys`/`-values`, or the annotation ones) made safe to
/// read with [`entries_of`] for `n` entries: keys and values cut to the same length, and
/// either `n + 1` offsets, non-decreasing and in range, or, when there are no entries at all
/// (what the host sends when no entry has any), no offsets.
pub(crate) fn normalize_entries(
    offsets: &mut Vec<u32>,
    keys: &mut Vec<StringId>,
    values: &mut Vec<StringId>,
    n: usize,
) {
    let len = keys.len().min(values.len());
    keys.truncate(len);
    values.truncate(len);
    if len == 0 {
        offsets.clear();
        return;
    }
    if offsets.is_empty() {
        offsets.push(0);
    }
    offsets.resize(n + 1, len as u32);
    let mut floor = 0;
    for o in offsets.iter_mut() {
        *o = (*o).clamp(floor, len as u32);
        floor = *o;
    }
}

/// Entry `i` of columns made safe by [`normalize_entries`] (none without offsets).
pub(crate) fn entries_of<'a>(
    offsets: &[u32],
    keys: &'a [StringId],
    values: &'a [StringId],
    i: usize,
) -> impl Iterator<Item = Entry> + 'a {
    let range = match (offsets.get(i), offsets.get(i + 1)) {
        (Some(&from), Some(&to)) => from as usize..to as usize,
        _ => 0..0,
    };
    keys[range.clone()]
        .iter()
        .zip(&values[range])
        .map(|(&key, &value)| Entry { key, value })
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
        let none = normalize_identities(None, 3);
        assert_eq!(
            (namespace_at(&none, 2), owner_at(&none, 2)),
            (NO_STRING, None)
        );
        assert_eq!(
            labels_at(&none, 2).count() + annotations_at(&none, 0).count(),
            0
        );
    }

    #[test]
    fn malformed_entry_columns_do_not_trap() {
        let (mut offsets, mut keys, mut values) = (vec![], vec![1, 2, 3], vec![4, 5]);
        normalize_entries(&mut offsets, &mut keys, &mut values, 2);
        assert_eq!(offsets, vec![0, 2, 2]);
        assert_eq!(entries_of(&offsets, &keys, &values, 0).count(), 2);
        let (mut offsets, mut keys, mut values) = (vec![5, 1], vec![1], vec![4]);
        normalize_entries(&mut offsets, &mut keys, &mut values, 2);
        assert_eq!(offsets, vec![1, 1, 1]);
        assert_eq!(entries_of(&offsets, &keys, &values, 1).count(), 0);
    }
}
