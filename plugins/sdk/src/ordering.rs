//! Admission ordering plugins: implement [`OrderingPolicy`] and export it with
//! [`export_ordering!`](crate::export_ordering).

use crate::catalog::Catalog;
#[cfg(doc)]
use crate::identity::Identity;
use crate::kueue;
use crate::quota::QuotaView;
use crate::types::{
    ClusterQueueId, Entry, FrAmount, LocalQueueId, LocalQueueUsage, Millis, Needs, NewStrings,
    NodeUsage, Owner, RequeueReason, StringId, Workload, WorkloadId,
};

use crate::bindings::ordering::exports::wasq::policy::ordering as wit;

/// The heads of a cycle as the host sends them: one WIT `head` record each
/// (`wit/ordering.wit`). [`heads_of`] makes them [`Head`]s.
pub type Heads = Vec<wit::Head>;

/// A queue-order key (`sort-key` in `wit/ordering.wit`). Workloads are popped smallest first,
/// comparing `primary`, then `secondary`, then `tertiary`; equal keys keep the host's order
/// (by workload handle).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SortKey {
    /// Compared first.
    pub primary: i64,
    /// Compared when the primary parts are equal.
    pub secondary: i64,
    /// Compared when the primary and secondary parts are equal.
    pub tertiary: i64,
}

impl From<wit::SortKey> for SortKey {
    fn from(k: wit::SortKey) -> SortKey {
        SortKey {
            primary: k.primary,
            secondary: k.secondary,
            tertiary: k.tertiary,
        }
    }
}

impl From<SortKey> for wit::SortKey {
    fn from(k: SortKey) -> wit::SortKey {
        wit::SortKey {
            primary: k.primary,
            secondary: k.secondary,
            tertiary: k.tertiary,
        }
    }
}

/// One ClusterQueue head of a scheduling cycle, after the host assigned it flavors: the WIT
/// `head` record (`wit/ordering.wit`) with its identity flattened.
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
    /// The sort key the workload was queued under (see `head.key`).
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

impl From<wit::Head> for Head {
    fn from(h: wit::Head) -> Head {
        let (namespace, owner, labels, annotations) = crate::identity::into_parts(h.identity);
        Head {
            workload: h.workload,
            cluster_queue: h.cluster_queue,
            local_queue: h.local_queue,
            has_reservation: h.second_pass,
            borrow_level: h.borrowing_level,
            priority: h.priority,
            created: h.created,
            queued: h.queued,
            requeue_count: h.requeue_count,
            requeue_reason: h.requeue_reason,
            key: h.key.into(),
            usage: h.usage,
            namespace,
            owner,
            labels,
            annotations,
        }
    }
}

/// The host's heads as one [`Head`] record each, in order.
pub fn heads_of(heads: Heads) -> Vec<Head> {
    heads.into_iter().map(Head::from).collect()
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
    /// owning job, labels, annotations: [`Identity`]; without it
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
    /// tracks every flavor-resource; every usage is 0 unless the policy needs `TREE_USAGE`). With
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
    /// them ([`Heads`]). The default makes them [`Head`]s ([`heads_of`]) and calls
    /// [`order_heads_with_usage`](OrderingPolicy::order_heads_with_usage); a policy that reads
    /// the host's records itself may override it (as `kueue-default-ordering` does with
    /// [`kueue::order_heads_columns`] for Kueue's classical order). Both must decide alike.
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
        workloads: Vec<Workload>,
        local_queue_usage: Vec<LocalQueueUsage>,
        now: Millis,
    ) -> Vec<wit::SortKey> {
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
        workloads
            .iter()
            .map(|w| {
                let lq = w.local_queue.and_then(find);
                policy.sort_key_with_usage(catalog, w, lq, now).into()
            })
            .collect()
    }

    pub fn order_heads<P: OrderingPolicy>(
        plugin: &mut Plugin<P>,
        strings: Option<NewStrings>,
        heads: Heads,
        tree_usage: Option<Vec<NodeUsage>>,
        now: Millis,
    ) -> Vec<u32> {
        let (policy, catalog) = plugin.parts_with(strings);
        let view = QuotaView::from_usage_table(catalog, tree_usage.as_deref().unwrap_or_default());
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
                    workloads: ::std::vec::Vec<$crate::types::Workload>,
                    local_queue_usage: ::std::vec::Vec<$crate::types::LocalQueueUsage>,
                    now: $crate::types::Millis,
                ) -> ::std::vec::Vec<
                    $crate::bindings::ordering::exports::wasq::policy::ordering::SortKey,
                > {
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
                    heads: $crate::ordering::Heads,
                    tree_usage: Option<::std::vec::Vec<$crate::types::NodeUsage>>,
                    now: $crate::types::Millis,
                ) -> ::std::vec::Vec<u32> {
                    __WASQ_PLUGIN.with_borrow_mut(|p| {
                        $crate::ordering::glue::order_heads(p, strings, heads, tree_usage, now)
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
    use crate::identity::{Identity, NO_STRING};
    use crate::types::WorkloadIdentity;

    /// The host's head records become `Head`s: second pass, borrowing level, key and usage as
    /// sent, the identity flattened (none sent: nobody in particular).
    #[test]
    fn host_heads_become_head_records() {
        let sent = |workload: u32, identity: Option<WorkloadIdentity>| wit::Head {
            workload,
            cluster_queue: 1,
            local_queue: Some(7),
            second_pass: true,
            borrowing_level: 2,
            priority: -1,
            created: 200,
            queued: 201,
            key: wit::SortKey {
                primary: 1,
                secondary: 200,
                tertiary: 9,
            },
            requeue_count: 3,
            requeue_reason: Some(RequeueReason::PodsReadyTimeout),
            usage: crate::testing::amounts(&[(0, 1000), (1, 2000)]),
            identity,
        };
        let who = WorkloadIdentity {
            namespace: 0,
            owner: Some(Owner {
                kind: 2,
                api_version: 4,
                name: 6,
            }),
            labels: vec![Entry { key: 7, value: 8 }],
            annotations: Vec::new(),
        };
        let heads = heads_of(vec![sent(4, Some(who.clone())), sent(5, None)]);
        let [a, b] = &heads[..] else { unreachable!() };
        assert_eq!(
            (
                a.workload,
                a.cluster_queue,
                a.local_queue,
                a.has_reservation
            ),
            (4, 1, Some(7), true)
        );
        assert_eq!(
            (a.borrow_level, a.priority, a.created, a.queued),
            (2, -1, 200, 201)
        );
        assert_eq!(
            (a.key.primary, a.key.secondary, a.key.tertiary),
            (1, 200, 9)
        );
        assert_eq!(
            (a.requeue_count, a.requeue_reason),
            (3, Some(RequeueReason::PodsReadyTimeout))
        );
        assert_eq!(a.usage, crate::testing::amounts(&[(0, 1000), (1, 2000)]));
        assert_eq!(Some(crate::identity::from_parts(a)), Some(who));
        let mut cat = crate::testing::CatalogBuilder::new().build();
        for s in [
            "prod", "dev", "Job", "Notebook", "v1", "a", "nb", "team", "ml",
        ] {
            cat.intern(s);
        }
        assert_eq!((a.namespace(&cat), a.job_kind(&cat)), ("prod", Some("Job")));
        assert_eq!(
            (a.label(&cat, "team"), a.job_name(&cat)),
            (Some("ml"), Some("nb"))
        );
        assert_eq!(
            (b.namespace, b.owner, b.labels.len() + b.annotations.len()),
            (NO_STRING, None, 0)
        );
        assert_eq!((b.namespace(&cat), b.job_kind(&cat)), ("", None));
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
