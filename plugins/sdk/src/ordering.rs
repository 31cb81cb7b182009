//! Admission ordering plugins: implement [`OrderingPolicy`] and export it with
//! [`export_ordering!`](crate::export_ordering).

use crate::catalog::Catalog;
use crate::identity::{annotations_at, labels_at, namespace_at, normalize_identities, owner_at};
use crate::kueue;
use crate::quota::QuotaView;
use crate::types::{
    ClusterQueueId, Entry, FrAmount, LocalQueueId, LocalQueueUsage, Millis, Needs, NewStrings,
    Owner, RequeueReason, StringId, UsageTable, Workload, WorkloadId, WorkloadIdentity,
};

use crate::workload::requeue_reason_of;

use crate::bindings::ordering::exports::wasq::policy::ordering as wit;
/// The heads as the host sends them (`record heads`): eight integers and six times per head,
/// their usage back to back, identities as columns. Read them with [`heads_of`].
pub use wit::Heads;
/// The workloads of a `sort-keys` call as the host sends them (`record queued`): five integers
/// and three times per workload, identities and podSets as options. Read them with
/// [`queued_workloads`].
pub use wit::Queued;

/// A queue-order key (three entries of `sort-keys`' answer per workload). Workloads are popped
/// smallest first, comparing `primary`, then `secondary`, then `tertiary`; equal keys keep the
/// host's order (by workload handle).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SortKey {
    /// Compared first.
    pub primary: i64,
    /// Compared when the primary parts are equal.
    pub secondary: i64,
    /// Compared when the primary and secondary parts are equal.
    pub tertiary: i64,
}

/// One ClusterQueue head of a scheduling cycle, after the host assigned it flavors: one entry
/// of `order-heads`' `record heads` (`wit/ordering.wit`), as one record.
#[derive(Debug, Clone, PartialEq)]
pub struct Head {
    /// The workload's handle.
    pub workload: WorkloadId,
    /// Its ClusterQueue.
    pub cluster_queue: ClusterQueueId,
    /// Its LocalQueue, if any.
    pub local_queue: Option<LocalQueueId>,
    /// The workload already holds quota and this is its second pass (Kueue's two-phase
    /// admission); Kueue handles these first.
    pub has_reservation: bool,
    /// How high in the cohort tree the assignment borrows: 0 = within the ClusterQueue's
    /// nominal quota, 1 = from its cohort, and so on.
    pub borrow_level: u32,
    /// Effective priority.
    pub priority: i64,
    /// Creation time.
    pub created: Millis,
    /// When the workload last entered its queue.
    pub queued: Millis,
    /// How often the workload was evicted and queued again (0 = never).
    pub requeue_count: u32,
    /// Why it was last evicted and queued again; `None` when it never was.
    pub requeue_reason: Option<RequeueReason>,
    /// The sort key the workload was queued under (see `record heads`).
    pub key: SortKey,
    /// The quota its assignment takes, per flavor-resource.
    pub usage: Vec<FrAmount>,
    /// Its namespace (read it with [`Identity::namespace`]).
    pub namespace: StringId,
    /// The job that owns it ([`Identity::job_kind`], [`Identity::job_name`], …).
    pub owner: Option<Owner>,
    /// The labels the allow-list passes ([`Identity::label`]).
    pub labels: Vec<Entry>,
    /// The annotations the allow-list passes ([`Identity::annotation`]).
    pub annotations: Vec<Entry>,
}

crate::identity::identity_from_fields!(Head);

/// Integers per head in `record heads`' `ints`, and their positions.
const HEAD_INTS: usize = 8;
const WORKLOAD: usize = 0;
const CLUSTER_QUEUE: usize = 1;
const LOCAL_QUEUE: usize = 2;
const HAS_RESERVATION: usize = 3;
const BORROW_LEVEL: usize = 4;
const REQUEUE_COUNT: usize = 5;
const REQUEUE_REASON: usize = 6;
const USAGE_LEN: usize = 7;
/// Values per head in `record heads`' `times`, and their positions.
const HEAD_TIMES: usize = 6;
const PRIORITY: usize = 0;
const CREATED: usize = 1;
const QUEUED: usize = 2;
const KEY: usize = 3;

/// `no-local-queue` in `record heads`.
const NO_LOCAL_QUEUE: LocalQueueId = u32::MAX;

/// Integers and times per workload in `record queued`.
const QUEUED_INTS: usize = 5;
const QUEUED_TIMES: usize = 3;

/// One [`Workload`] record per workload of a `sort-keys` batch (`record queued`), in order:
/// whole groups of `ints` (a trailing partial one is ignored); short `times` read as 0, a
/// missing podSet list as none.
pub fn queued_workloads(mut c: wit::Queued) -> Vec<Workload> {
    let n = c.ints.len() / QUEUED_INTS;
    let identity = c.identities.is_some();
    let ids = normalize_identities(c.identities.take(), n);
    let mut pod_sets = c.pod_sets.take().map(Vec::into_iter);
    (0..n)
        .map(|i| {
            let int = |k: usize| c.ints[i * QUEUED_INTS + k];
            let time = |k: usize| {
                c.times
                    .get(i * QUEUED_TIMES + k)
                    .copied()
                    .unwrap_or_default()
            };
            Workload {
                id: int(0),
                identity: identity.then(|| WorkloadIdentity {
                    namespace: namespace_at(&ids, i),
                    owner: owner_at(&ids, i),
                    labels: labels_at(&ids, i).collect(),
                    annotations: annotations_at(&ids, i).collect(),
                }),
                cluster_queue: int(1),
                local_queue: Some(int(2)).filter(|&l| l != NO_LOCAL_QUEUE),
                priority: time(0),
                created: time(1),
                queued: time(2),
                requeue_count: int(3),
                requeue_reason: u8::try_from(int(4)).ok().and_then(requeue_reason_of),
                pod_sets: pod_sets.as_mut().map(|p| p.next().unwrap_or_default()),
            }
        })
        .collect()
}

/// How many heads the host sent: whole groups of `ints` (a trailing partial one is ignored).
pub(crate) fn head_count(c: &wit::Heads) -> usize {
    c.ints.len() / HEAD_INTS
}

/// Head `i`'s integer `k` (`i` < [`head_count`]).
#[inline]
fn int_at(c: &wit::Heads, i: usize, k: usize) -> u32 {
    c.ints[i * HEAD_INTS + k]
}

/// Head `i`'s time or key part `k`; 0 when `times` is short.
#[inline]
fn time_at(c: &wit::Heads, i: usize, k: usize) -> i64 {
    c.times.get(i * HEAD_TIMES + k).copied().unwrap_or_default()
}

/// What Kueue's classical head order compares, for head `i`: second pass first, then lower
/// borrowing level, higher priority, older.
pub(crate) fn classical_key(c: &wit::Heads, i: usize) -> (bool, u32, i64, i64) {
    (
        int_at(c, i, HAS_RESERVATION) == 0,
        int_at(c, i, BORROW_LEVEL),
        time_at(c, i, PRIORITY).wrapping_neg(),
        time_at(c, i, CREATED),
    )
}

/// The host's heads as one [`Head`] record each, with their usage and identity. Values the
/// host did not send (short `times`, usage or identity columns) read as defaults and an unknown
/// requeue reason as none (the host never sends such heads; a plugin must not trap if it did).
pub fn heads_of(mut c: wit::Heads) -> Vec<Head> {
    let n = head_count(&c);
    let ids = normalize_identities(c.identities.take(), n);
    let entries = c.usage_frs.len().min(c.usage_amounts.len());
    let mut at = 0;
    (0..n)
        .map(|i| {
            let end = (at + int_at(&c, i, USAGE_LEN) as usize).min(entries);
            let usage = (at..end)
                .map(|k| FrAmount {
                    fr: c.usage_frs[k],
                    amount: c.usage_amounts[k],
                })
                .collect();
            at = end;
            Head {
                workload: int_at(&c, i, WORKLOAD),
                cluster_queue: int_at(&c, i, CLUSTER_QUEUE),
                local_queue: Some(int_at(&c, i, LOCAL_QUEUE)).filter(|&l| l != NO_LOCAL_QUEUE),
                has_reservation: int_at(&c, i, HAS_RESERVATION) != 0,
                borrow_level: int_at(&c, i, BORROW_LEVEL),
                priority: time_at(&c, i, PRIORITY),
                created: time_at(&c, i, CREATED),
                queued: time_at(&c, i, QUEUED),
                requeue_count: int_at(&c, i, REQUEUE_COUNT),
                requeue_reason: u8::try_from(int_at(&c, i, REQUEUE_REASON))
                    .ok()
                    .and_then(requeue_reason_of),
                key: SortKey {
                    primary: time_at(&c, i, KEY),
                    secondary: time_at(&c, i, KEY + 1),
                    tertiary: time_at(&c, i, KEY + 2),
                },
                usage,
                namespace: namespace_at(&ids, i),
                owner: owner_at(&ids, i),
                labels: labels_at(&ids, i).collect(),
                annotations: annotations_at(&ids, i).collect(),
            }
        })
        .collect()
}

/// An admission-ordering policy. The decisions default to Kueue's classical behaviour (without
/// fair sharing or admission fair sharing): override what the policy changes. Kueue's full
/// behaviour, under every configuration, is the `kueue-default-ordering` plugin: [`needs`]
/// = [`kueue::ordering_needs`], [`sort_key_with_usage`] = [`kueue::sort_key_for`],
/// [`order_heads_with_usage`] = [`kueue::order_heads_for`].
///
/// The SDK builds the policy with [`Default`] on the first call into the plugin, and passes the
/// latest catalog the host sent to every method.
///
/// [`needs`]: OrderingPolicy::needs
/// [`sort_key_with_usage`]: OrderingPolicy::sort_key_with_usage
/// [`order_heads_with_usage`]: OrderingPolicy::order_heads_with_usage
pub trait OrderingPolicy: Default + 'static {
    /// Called after the host sent a new catalog (before the next decision); the place to read
    /// settings. Default: nothing.
    fn catalog_changed(&mut self, catalog: &Catalog) {
        let _ = catalog;
    }

    /// What the policy reads beyond workloads and heads, asked after every new catalog (after
    /// [`catalog_changed`](OrderingPolicy::catalog_changed)): `Needs::LOCAL_QUEUE_USAGE` for
    /// LocalQueue usage in [`sort_key_with_usage`](OrderingPolicy::sort_key_with_usage),
    /// `Needs::TREE_USAGE` for quota usage in
    /// [`order_heads_with_usage`](OrderingPolicy::order_heads_with_usage) (which makes the head
    /// order speculative, see there), `Needs::IDENTITY` for who workloads are (namespace,
    /// owning job, labels, annotations: [`Identity`](crate::identity::Identity); without it
    /// every workload reads as nobody in particular), `Needs::POD_SETS` for what they request
    /// ([`Workload::pod_sets`]; without it no podSets). The host prepares and sends only that.
    /// Default: `Needs::IDENTITY | Needs::POD_SETS` (Kueue's own ordering,
    /// [`kueue::ordering_needs`], reads neither).
    fn needs(&self, catalog: &Catalog) -> Needs {
        let _ = catalog;
        Needs::IDENTITY | Needs::POD_SETS
    }

    /// The key a workload is queued under; workloads are popped smallest key first. `now` is
    /// the scheduler's clock at queueing time. Default: Kueue's `(-priority, created, 0)`.
    fn sort_key(&mut self, catalog: &Catalog, workload: &Workload, now: Millis) -> SortKey {
        let _ = (catalog, now);
        kueue::sort_key(workload)
    }

    /// The key a workload is queued under, given admission fair sharing's figures for its
    /// LocalQueue (`Some` when the policy needs `LOCAL_QUEUE_USAGE` and the workload has a
    /// LocalQueue). The host asks again for the workloads of ClusterQueues with
    /// `admission-fair-sharing` whenever those figures change. This is what the SDK calls.
    /// Default: [`sort_key`](OrderingPolicy::sort_key).
    fn sort_key_with_usage(
        &mut self,
        catalog: &Catalog,
        workload: &Workload,
        local_queue_usage: Option<&LocalQueueUsage>,
        now: Millis,
    ) -> SortKey {
        let _ = local_queue_usage;
        self.sort_key(catalog, workload, now)
    }

    /// The order in which this cycle's heads are tried: a permutation of `0..heads.len()`.
    /// Default: Kueue's (second passes first, then lower borrowing level, higher priority,
    /// older; stable).
    ///
    /// Each head's `key` is the key [`sort_key`](OrderingPolicy::sort_key) gave its workload
    /// (or the host's built-in key where that call failed): a policy that changes the queue
    /// order reads what it needs back from the key instead of remembering it, for example
    /// `kueue::order_heads_by_priority(heads, |h| h.key.primary.wrapping_neg())`.
    fn order_heads(&mut self, catalog: &Catalog, heads: &[Head], now: Millis) -> Vec<u32> {
        let _ = (catalog, now);
        kueue::order_heads(heads)
    }

    /// The order of this cycle's heads given the quota usage of their cohort trees (`usage`
    /// tracks every flavor-resource; it is empty unless the policy needs `TREE_USAGE`). With
    /// `TREE_USAGE` the order is speculative: it must assume that every head, in turn, takes
    /// its `usage` (see [`QuotaView::add_workload`]); the host asks again for the remaining
    /// heads of that head's cohort tree when one does not. This is what the SDK calls. Default:
    /// [`order_heads`](OrderingPolicy::order_heads).
    fn order_heads_with_usage(
        &mut self,
        catalog: &Catalog,
        heads: &[Head],
        usage: &QuotaView<'_>,
        now: Millis,
    ) -> Vec<u32> {
        let _ = usage;
        self.order_heads(catalog, heads, now)
    }

    /// What the SDK calls for each cycle: the same decision on the heads as the host sends
    /// them ([`Heads`]). The default builds one [`Head`] per head ([`heads_of`]), and calls
    /// [`order_heads_with_usage`](OrderingPolicy::order_heads_with_usage); a policy that reads
    /// a few fields overrides it to skip that work (as [`kueue::order_heads_columns`] does for
    /// Kueue's classical order). Both must decide alike.
    fn order_heads_columns(
        &mut self,
        catalog: &Catalog,
        heads: Heads,
        usage: &QuotaView<'_>,
        now: Millis,
    ) -> Vec<u32> {
        self.order_heads_with_usage(catalog, &heads_of(heads), usage, now)
    }
}

#[doc(hidden)]
pub mod glue {
    use super::*;
    use crate::export::Plugin;

    pub fn set_catalog<P: OrderingPolicy>(
        plugin: &mut Plugin<P>,
        catalog: crate::types::Catalog,
    ) -> Needs {
        plugin.set_catalog(catalog, P::catalog_changed);
        let (policy, catalog) = plugin.parts();
        policy.needs(catalog)
    }

    pub fn sort_keys<P: OrderingPolicy>(
        plugin: &mut Plugin<P>,
        strings: Option<NewStrings>,
        workloads: wit::Queued,
        local_queue_usage: Vec<LocalQueueUsage>,
        now: Millis,
    ) -> Vec<i64> {
        let (policy, catalog) = plugin.parts_with(strings);
        let mut by_lq: Vec<(u32, usize)> = local_queue_usage
            .iter()
            .enumerate()
            .map(|(i, u)| (u.local_queue, i))
            .collect();
        by_lq.sort();
        let find = |lq: u32| {
            let at = by_lq.partition_point(|&(l, _)| l < lq);
            by_lq
                .get(at)
                .filter(|&&(l, _)| l == lq)
                .map(|&(_, i)| &local_queue_usage[i])
        };
        let workloads = queued_workloads(workloads);
        let mut keys = Vec::with_capacity(workloads.len() * 3);
        for w in &workloads {
            let lq = w.local_queue.and_then(find);
            let k = policy.sort_key_with_usage(catalog, w, lq, now);
            keys.extend([k.primary, k.secondary, k.tertiary]);
        }
        keys
    }

    pub fn order_heads<P: OrderingPolicy>(
        plugin: &mut Plugin<P>,
        strings: Option<NewStrings>,
        heads: wit::Heads,
        usage: UsageTable,
        now: Millis,
    ) -> Vec<u32> {
        let (policy, catalog) = plugin.parts_with(strings);
        let view = QuotaView::from_usage_table(catalog, &usage);
        policy.order_heads_columns(catalog, heads, &view, now)
    }
}

/// Exports a type implementing [`OrderingPolicy`] as the plugin's `wasq:policy/ordering`
/// interface. Invoke it once, in the plugin crate's `lib.rs`:
///
/// ```ignore
/// #[derive(Default)]
/// struct MyOrdering;
/// impl wasq_policy_sdk::ordering::OrderingPolicy for MyOrdering {}
/// wasq_policy_sdk::export_ordering!(MyOrdering);
/// ```
#[macro_export]
macro_rules! export_ordering {
    ($policy:ty) => {
        const _: () = {
            struct __WasqOrderingExport;
            ::std::thread_local! {
                static __WASQ_PLUGIN: ::core::cell::RefCell<$crate::export::Plugin<$policy>> =
                    ::core::cell::RefCell::new($crate::export::Plugin::new());
            }
            impl $crate::bindings::ordering::exports::wasq::policy::ordering::Guest
                for __WasqOrderingExport
            {
                fn set_catalog(catalog: $crate::types::Catalog) -> $crate::types::Needs {
                    __WASQ_PLUGIN
                        .with_borrow_mut(|p| $crate::ordering::glue::set_catalog(p, catalog))
                }
                fn sort_keys(
                    strings: Option<$crate::types::NewStrings>,
                    workloads: $crate::ordering::Queued,
                    local_queue_usage: ::std::vec::Vec<$crate::types::LocalQueueUsage>,
                    now: $crate::types::Millis,
                ) -> ::std::vec::Vec<i64> {
                    __WASQ_PLUGIN.with_borrow_mut(|p| {
                        $crate::ordering::glue::sort_keys(
                            p,
                            strings,
                            workloads,
                            local_queue_usage,
                            now,
                        )
                    })
                }
                fn order_heads(
                    strings: Option<$crate::types::NewStrings>,
                    heads: $crate::bindings::ordering::exports::wasq::policy::ordering::Heads,
                    usage: $crate::types::UsageTable,
                    now: $crate::types::Millis,
                ) -> ::std::vec::Vec<u32> {
                    __WASQ_PLUGIN.with_borrow_mut(|p| {
                        $crate::ordering::glue::order_heads(p, strings, heads, usage, now)
                    })
                }
            }
            $crate::bindings::ordering::__export_ordering_plugin!(
                __WasqOrderingExport with_types_in $crate::bindings::ordering
            );
        };
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::Identity;
    use crate::identity::NO_STRING;

    /// The columns of `sort-keys` read back as the records they stand for: identities,
    /// podSets, no LocalQueue and no requeue reason included; a trailing partial group of
    /// integers is ignored.
    #[test]
    fn queued_columns_read_as_workload_records() {
        let queued = wit::Queued {
            ints: vec![7, 1, 3, 2, 0, 8, 2, NO_LOCAL_QUEUE, 0, 255, 9],
            times: vec![5, 100, 150, -1, 200],
            identities: Some(crate::types::Identities {
                namespaces: vec![10, 11],
                job_kinds: vec![12, NO_STRING],
                job_api_versions: vec![13, NO_STRING],
                job_names: vec![14, NO_STRING],
                label_offsets: vec![0, 1, 1],
                label_keys: vec![15],
                label_values: vec![16],
                annotation_offsets: Vec::new(),
                annotation_keys: Vec::new(),
                annotation_values: Vec::new(),
            }),
            pod_sets: Some(vec![vec![crate::types::PodSet {
                count: 2,
                min_count: Some(1),
                per_pod: Vec::new(),
            }]]),
        };
        let w = queued_workloads(queued);
        assert_eq!(w.len(), 2);
        let first = &w[0];
        assert_eq!(
            (first.id, first.cluster_queue, first.local_queue),
            (7, 1, Some(3))
        );
        assert_eq!((first.priority, first.created, first.queued), (5, 100, 150));
        assert_eq!(
            (first.requeue_count, first.requeue_reason),
            (2, Some(RequeueReason::Preempted))
        );
        let id = first.identity.as_ref().expect("identities were sent");
        assert_eq!(id.namespace, 10);
        assert_eq!(
            id.owner,
            Some(Owner {
                kind: 12,
                api_version: 13,
                name: 14
            })
        );
        assert_eq!(id.labels, vec![Entry { key: 15, value: 16 }]);
        assert!(id.annotations.is_empty());
        assert_eq!(first.pod_sets.as_ref().map(Vec::len), Some(1));
        let second = &w[1];
        assert_eq!(
            (second.id, second.local_queue, second.requeue_reason),
            (8, None, None)
        );
        assert_eq!(
            (second.priority, second.created, second.queued),
            (-1, 200, 0),
            "short times"
        );
        assert_eq!(second.identity.as_ref().and_then(|i| i.owner), None);
        assert_eq!(second.pod_sets, Some(Vec::new()), "a missing list is empty");
        // Without identities or podSets, none.
        let bare = queued_workloads(wit::Queued {
            ints: vec![7, 1, 3, 2, 0],
            times: vec![5, 100, 150],
            identities: None,
            pod_sets: None,
        });
        assert_eq!(
            (bare[0].identity.is_none(), bare[0].pod_sets.is_none()),
            (true, true)
        );
    }

    fn columns() -> wit::Heads {
        let rr = |r: Option<RequeueReason>| u32::from(r.map_or(255, |r| r as u8));
        wit::Heads {
            ints: [
                [4, 0, 7, 0, 0, 0, rr(None), 2],
                [
                    5,
                    1,
                    NO_LOCAL_QUEUE,
                    0,
                    1,
                    3,
                    rr(Some(RequeueReason::PodsReadyTimeout)),
                    0,
                ],
                [6, 2, 8, 1, 2, 1, rr(Some(RequeueReason::Preempted)), 1],
            ]
            .concat(),
            times: [
                [10, 100, 101, -10, 100, 0],
                [-1, 200, 201, 1, 200, 0],
                [3, 300, 301, -3, 300, 9],
            ]
            .concat(),
            usage_frs: vec![0, 1, 0],
            usage_amounts: vec![1000, 2000, 500],
            identities: Some(crate::types::Identities {
                namespaces: vec![0, 1, 0],
                job_kinds: vec![2, NO_STRING, 3],
                job_api_versions: vec![4, NO_STRING, 4],
                job_names: vec![5, NO_STRING, 6],
                label_offsets: vec![0, 0, 1, 1],
                label_keys: vec![7],
                label_values: vec![8],
                annotation_offsets: Vec::new(),
                annotation_keys: Vec::new(),
                annotation_values: Vec::new(),
            }),
        }
    }

    #[test]
    fn columns_become_one_record_per_head() {
        let heads = heads_of(columns());
        assert_eq!(heads.len(), 3);
        let [a, b, c] = &heads[..] else {
            unreachable!()
        };
        assert_eq!(
            (a.workload, a.local_queue, a.has_reservation),
            (4, Some(7), false)
        );
        assert_eq!(a.usage, crate::testing::amounts(&[(0, 1000), (1, 2000)]));
        assert_eq!((b.local_queue, b.borrow_level, b.priority), (None, 1, -1));
        assert!(b.usage.is_empty());
        assert_eq!((a.requeue_count, a.requeue_reason), (0, None));
        assert_eq!(
            (b.requeue_count, b.requeue_reason),
            (3, Some(RequeueReason::PodsReadyTimeout))
        );
        assert_eq!(
            (c.requeue_count, c.requeue_reason),
            (1, Some(RequeueReason::Preempted))
        );
        assert!(c.has_reservation);
        assert_eq!(
            (c.key.primary, c.key.secondary, c.key.tertiary, c.queued),
            (-3, 300, 9, 301)
        );
        assert_eq!(c.usage, vec![FrAmount { fr: 0, amount: 500 }]);
        let mut cat = crate::testing::CatalogBuilder::new().build();
        for s in [
            "prod", "dev", "Job", "Notebook", "v1", "a", "nb", "team", "ml",
        ] {
            cat.intern(s);
        }
        assert_eq!((a.namespace(&cat), a.job_kind(&cat)), ("prod", Some("Job")));
        assert_eq!(
            (b.namespace(&cat), b.job_kind(&cat), b.job_name(&cat)),
            ("dev", None, None)
        );
        assert_eq!(b.label(&cat, "team"), Some("ml"));
        assert_eq!(
            (a.label(&cat, "team"), c.job_name(&cat)),
            (None, Some("nb"))
        );
        assert!(c.annotations.is_empty());
    }

    #[test]
    fn malformed_heads_do_not_trap() {
        let mut c = columns();
        // A partial fourth head, short times, less usage than the heads say, an unknown
        // requeue reason, and identity columns that do not pair up.
        c.ints.extend([9, 9]);
        c.ints[8 + 6] = 7;
        c.times.truncate(14);
        c.usage_amounts.truncate(1);
        if let Some(ids) = c.identities.as_mut() {
            ids.namespaces.truncate(1);
            ids.label_offsets = vec![0, 5];
        }
        let heads = heads_of(c);
        assert_eq!(heads.len(), 3);
        assert_eq!(heads[1].requeue_reason, None);
        assert_eq!(
            (heads[2].priority, heads[2].created, heads[2].queued),
            (3, 300, 0)
        );
        assert_eq!(
            heads[0].usage,
            vec![FrAmount {
                fr: 0,
                amount: 1000
            }]
        );
        assert!(heads[1].usage.is_empty() && heads[2].usage.is_empty());
        assert_eq!(heads[2].namespace, NO_STRING);
    }

    /// The example of `plugins/README.md` ("Demoting flapping workloads"): Kueue's order, but a
    /// workload requeued 3 times or more waits behind every other one of its ClusterQueue, and
    /// its head behind every other first-pass head of the cycle.
    #[derive(Default)]
    struct DemoteFlapping;

    const FLAPPING: u32 = 3;

    impl OrderingPolicy for DemoteFlapping {
        fn sort_key(&mut self, _: &Catalog, wl: &Workload, _: Millis) -> SortKey {
            let kueue = kueue::sort_key(wl);
            SortKey {
                primary: i64::from(wl.requeued_at_least(FLAPPING)),
                secondary: kueue.primary,
                tertiary: kueue.secondary,
            }
        }

        fn order_heads(&mut self, _: &Catalog, heads: &[Head], _: Millis) -> Vec<u32> {
            let mut order = kueue::order_heads(heads);
            // Stable: Kueue's order within each group; second passes stay first.
            order.sort_by_key(|&i| {
                let h = &heads[i as usize];
                (!h.has_reservation, h.requeue_count >= FLAPPING)
            });
            order
        }
    }

    #[test]
    fn an_ordering_policy_demotes_workloads_requeued_three_times() {
        use crate::testing::{CatalogBuilder, head, requeued, workload};
        let cat = CatalogBuilder::new().build();
        let mut p = DemoteFlapping;
        // Queue order: the high-priority workload preempted three times goes last; twice is
        // not enough.
        let wls = [
            requeued(workload(1, 0, 100, 10), 3, RequeueReason::Preempted),
            workload(2, 0, 5, 20),
            requeued(workload(3, 0, 1, 30), 2, RequeueReason::AdmissionCheck),
        ];
        let mut keyed: Vec<_> = wls
            .iter()
            .map(|w| {
                let k = p.sort_key(&cat, w, 0);
                ((k.primary, k.secondary, k.tertiary), w.id)
            })
            .collect();
        keyed.sort();
        assert_eq!(
            keyed.iter().map(|&(_, id)| id).collect::<Vec<_>>(),
            [2, 3, 1]
        );
        // Head order: the flapping head after the others, a second pass still first.
        let mut flapping = head(1, 0, 100, 10);
        flapping.requeue_count = 4;
        flapping.requeue_reason = Some(RequeueReason::PodsReadyTimeout);
        let mut reserved = head(4, 2, 0, 40);
        reserved.requeue_count = 5;
        reserved.has_reservation = true;
        let heads = [flapping, head(2, 1, 5, 20), reserved];
        assert_eq!(p.order_heads(&cat, &heads, 0), [2, 1, 0]);
        // Without flapping heads it is Kueue's order.
        let calm = [head(1, 0, 100, 10), head(2, 1, 5, 20)];
        assert_eq!(p.order_heads(&cat, &calm, 0), kueue::order_heads(&calm));
    }
}
