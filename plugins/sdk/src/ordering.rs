//! Admission ordering plugins: implement [`OrderingPolicy`] and export it with
//! [`export_ordering!`](crate::export_ordering).

use crate::catalog::Catalog;
use crate::head_table::Assigned;
#[cfg(doc)]
use crate::identity::Identity;
use crate::kueue;
use crate::quota::QuotaView;
use crate::types::{
    ClusterQueueId, Entry, FrAmount, LocalQueueId, LocalQueueUsage, Millis, Needs, NewStrings,
    NodeUsage, Owner, RequeueReason, StringId, Workload, WorkloadId,
};

use crate::bindings::ordering::exports::wasq::policy::ordering as wit;

/// The heads of a cycle as the host sends them (`wit/ordering.wit`, `order-heads`), in the
/// host's order: each one's entry in the instance's table of heads (`head-info`, the table the
/// SDK keeps), how it was assigned (its `head-group`) and, when sent, the quota its assignment
/// takes (`head-usage`). [`heads_of`] makes them [`Head`]s; a policy may read them as they are
/// (`kueue::order_heads_columns` does).
#[derive(Debug, Clone)]
pub struct Heads<'a> {
    info: Vec<&'a wit::HeadInfo>,
    assigned: Vec<Assigned>,
}

impl<'a> Heads<'a> {
    /// How many heads.
    pub fn len(&self) -> usize {
        self.info.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.info.is_empty()
    }

    /// What does not change while head `i`'s workload stays queued under one key: workload,
    /// queues, priority, times, key, requeue history, who it is.
    pub fn info(&self, i: usize) -> &'a wit::HeadInfo {
        self.info[i]
    }

    /// Whether head `i` is on its second pass.
    pub fn second_pass(&self, i: usize) -> bool {
        self.assigned[i].second_pass
    }

    /// How high in the cohort tree head `i`'s assignment borrows.
    pub fn borrowing_level(&self, i: usize) -> u32 {
        self.assigned[i].borrowing_level
    }

    /// What head `i`'s assignment takes; empty unless the policy needs `TREE_USAGE`.
    pub fn usage(&self, i: usize) -> &[FrAmount] {
        &self.assigned[i].usage
    }
}

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

impl Head {
    /// A head from its entry in the table of heads and how it was assigned.
    fn received(info: &wit::HeadInfo, assigned: Assigned) -> Head {
        let (namespace, owner, labels, annotations) =
            crate::identity::into_parts(info.identity.clone());
        Head {
            workload: info.workload,
            cluster_queue: info.cluster_queue,
            local_queue: info.local_queue,
            has_reservation: assigned.second_pass,
            borrow_level: assigned.borrowing_level,
            priority: info.priority,
            created: info.created,
            queued: info.queued,
            requeue_count: info.requeue_count,
            requeue_reason: info.requeue_reason,
            key: info.key.into(),
            usage: assigned.usage,
            namespace,
            owner,
            labels,
            annotations,
        }
    }
}

/// The host's heads as one [`Head`] record each, in order.
pub fn heads_of(heads: Heads<'_>) -> Vec<Head> {
    heads
        .info
        .into_iter()
        .zip(heads.assigned)
        .map(|(info, assigned)| Head::received(info, assigned))
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
    /// them ([`Heads`]: the table of heads joined with the cycle's groups and usage). The
    /// default makes them [`Head`]s ([`heads_of`]) and calls
    /// [`order_heads_with_usage`](OrderingPolicy::order_heads_with_usage); a policy that reads
    /// the host's records itself may override it (as `kueue-default-ordering` does with
    /// [`kueue::order_heads_columns`] for Kueue's classical order). Both must decide alike.
    /// The SDK answers the host with the workloads of the heads at the positions returned.
    fn order_heads_columns(
        &mut self,
        catalog: &Catalog,
        heads: Heads<'_>,
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
    use crate::head_table::{HeadTable, Joiner};

    ::std::thread_local! {
        /// The instance's table of heads (`new-heads`), as of the last call.
        static HEADS: ::core::cell::RefCell<HeadTable> = Default::default();
        /// What joins each cycle's groups and usage per head, and the lookups it keeps.
        static JOINER: ::core::cell::RefCell<Joiner> = Default::default();
    }

    pub fn set_catalog<P: OrderingPolicy>(
        plugin: &mut Plugin<P>,
        catalog: crate::types::Catalog,
    ) -> Needs {
        // Heads name the previous catalog's queues; the host starts a new table too.
        HEADS.with_borrow_mut(|t| *t = HeadTable::default());
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

    /// The workload answered for a position the policy gave that is no head's: the host
    /// refuses the answer (no workload has this handle).
    const NO_HEAD: u32 = u32::MAX;

    #[allow(clippy::too_many_arguments)]
    pub fn order_heads<P: OrderingPolicy>(
        plugin: &mut Plugin<P>,
        strings: Option<NewStrings>,
        new_heads: Option<wit::NewHeads>,
        heads: Vec<wit::HeadId>,
        groups: Vec<wit::HeadGroup>,
        head_usage: Option<Vec<wit::HeadUsage>>,
        tree_usage: Option<Vec<NodeUsage>>,
        now: Millis,
    ) -> Vec<WorkloadId> {
        let (policy, catalog) = plugin.parts_with(strings);
        HEADS.with_borrow_mut(|table| {
            if let Some(new) = new_heads {
                table.add(new);
            }
            let table = &*table;
            let mut head_usage = head_usage.unwrap_or_default();
            let assigned =
                JOINER.with_borrow_mut(|j| j.join(&heads, &groups, &mut head_usage, table));
            let received = Heads {
                info: heads.iter().map(|&id| table.head(id)).collect(),
                assigned,
            };
            let workloads: Vec<WorkloadId> = received.info.iter().map(|h| h.workload).collect();
            let view =
                QuotaView::from_usage_table(catalog, tree_usage.as_deref().unwrap_or_default());
            policy
                .order_heads_columns(catalog, received, &view, now)
                .into_iter()
                .map(|p| workloads.get(p as usize).copied().unwrap_or(NO_HEAD))
                .collect()
        })
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
                    new_heads: ::core::option::Option<
                        $crate::bindings::ordering::exports::wasq::policy::ordering::NewHeads,
                    >,
                    heads: ::std::vec::Vec<u32>,
                    groups: ::std::vec::Vec<
                        $crate::bindings::ordering::exports::wasq::policy::ordering::HeadGroup,
                    >,
                    head_usage: ::core::option::Option<
                        ::std::vec::Vec<
                            $crate::bindings::ordering::exports::wasq::policy::ordering::HeadUsage,
                        >,
                    >,
                    tree_usage: Option<::std::vec::Vec<$crate::types::NodeUsage>>,
                    now: $crate::types::Millis,
                ) -> ::std::vec::Vec<$crate::types::WorkloadId> {
                    __WASQ_PLUGIN.with_borrow_mut(|p| {
                        $crate::ordering::glue::order_heads(
                            p, strings, new_heads, heads, groups, head_usage, tree_usage, now,
                        )
                    })
                }
            }
            $crate::bindings::ordering::__export_ordering_plugin!(
                __WasqOrderingExport with_types_in $crate::bindings::ordering
            );
        };
    };
}

/// A cycle's heads as the host sends them, for the SDK's tests.
#[cfg(test)]
pub(crate) mod testing_heads {
    use super::*;
    use crate::head_table::{HeadTable, Joiner};

    /// Heads added to a table, their groups and usage.
    #[derive(Default)]
    pub(crate) struct Cycle {
        table: HeadTable,
        new: Vec<wit::HeadInfo>,
        ids: Vec<u32>,
        groups: Vec<wit::HeadGroup>,
        usage: Vec<wit::HeadUsage>,
    }

    impl Cycle {
        /// A new head of this cycle, in the host's order; returns its id.
        pub(crate) fn add(&mut self, info: wit::HeadInfo, second_pass: bool, level: u32) -> u32 {
            let id = (self.table.len() + self.new.len()) as u32;
            self.new.push(info);
            self.ids.push(id);
            match self
                .groups
                .iter_mut()
                .find(|g| g.second_pass == second_pass && g.borrowing_level == level)
            {
                Some(g) => g.heads.push(id),
                None => self.groups.push(wit::HeadGroup {
                    second_pass,
                    borrowing_level: level,
                    heads: vec![id],
                }),
            }
            id
        }

        /// A new head with Kueue's key and nothing else of note.
        pub(crate) fn head(
            &mut self,
            workload: u32,
            second_pass: bool,
            level: u32,
            priority: i64,
            created: i64,
        ) -> u32 {
            let info = wit::HeadInfo {
                workload,
                cluster_queue: 0,
                local_queue: None,
                priority,
                created,
                queued: created,
                key: crate::kueue::sort_key_with_priority(priority, created).into(),
                requeue_count: 0,
                requeue_reason: None,
                identity: None,
            };
            self.add(info, second_pass, level)
        }

        /// What head `id`'s assignment takes.
        pub(crate) fn usage(&mut self, id: u32, usage: &[(u32, i64)]) {
            self.usage.push(wit::HeadUsage {
                head: id,
                usage: crate::testing::amounts(usage),
            });
        }

        /// The heads `ids` (every head added, in order, if empty) as the SDK receives them.
        pub(crate) fn received(&mut self, ids: &[u32]) -> Heads<'_> {
            let new = std::mem::take(&mut self.new);
            if !new.is_empty() {
                self.table.add(wit::NewHeads {
                    first: self.table.len() as u32,
                    heads: new,
                });
            }
            let ids = if ids.is_empty() { &self.ids[..] } else { ids };
            let assigned =
                Joiner::default().join(ids, &self.groups, &mut self.usage.clone(), &self.table);
            Heads {
                info: ids.iter().map(|&id| self.table.head(id)).collect(),
                assigned,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::{Identity, NO_STRING};
    use crate::types::WorkloadIdentity;

    /// A head's entry in the table of heads.
    fn info(workload: u32, identity: Option<WorkloadIdentity>) -> wit::HeadInfo {
        wit::HeadInfo {
            workload,
            cluster_queue: 1,
            local_queue: Some(7),
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
            identity,
        }
    }

    /// The host's heads become `Head`s: the table's entry, the group's second pass and
    /// borrowing level, the usage sent for the head, the identity flattened (none sent: nobody
    /// in particular).
    #[test]
    fn host_heads_become_head_records() {
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
        let mut cycle = testing_heads::Cycle::default();
        let a = cycle.add(info(4, Some(who.clone())), true, 2);
        let b = cycle.add(info(5, None), false, 0);
        cycle.usage(a, &[(0, 1000), (1, 2000)]);
        let heads = heads_of(cycle.received(&[a, b]));
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
        assert_eq!(
            (b.has_reservation, b.borrow_level, b.usage.len()),
            (false, 0, 0)
        );
        assert_eq!((b.namespace(&cat), b.job_kind(&cat)), ("", None));
    }

    /// Kueue's classical order: a position per head.
    #[derive(Default)]
    struct Classical;
    impl OrderingPolicy for Classical {
        fn needs(&self, _: &Catalog) -> Needs {
            Needs::empty()
        }
    }

    /// A policy that answers a position past the heads.
    #[derive(Default)]
    struct PastTheEnd;
    impl OrderingPolicy for PastTheEnd {
        fn order_heads(&mut self, _: &Catalog, heads: &[Head], _: Millis) -> Vec<u32> {
            (0..=heads.len() as u32).rev().collect()
        }
    }

    fn sent(first: u32, heads: Vec<wit::HeadInfo>) -> Option<wit::NewHeads> {
        Some(wit::NewHeads { first, heads })
    }

    fn group(second_pass: bool, borrowing_level: u32, heads: &[u32]) -> wit::HeadGroup {
        wit::HeadGroup {
            second_pass,
            borrowing_level,
            heads: heads.to_vec(),
        }
    }

    /// The glue keeps the table of heads between calls, reads each cycle's heads from it and
    /// answers workloads, not positions.
    #[test]
    fn order_heads_keeps_the_table_and_answers_workloads() {
        let mut plugin = crate::export::Plugin::<Classical>::new();
        let entry = |w: u32, priority: i64| wit::HeadInfo {
            priority,
            ..info(w, None)
        };
        glue::set_catalog(
            &mut plugin,
            crate::testing::CatalogBuilder::new().build().raw().clone(),
        );
        // Cycle 1: three new heads; head 2 borrows, head 1 is on its second pass.
        let order = glue::order_heads(
            &mut plugin,
            None,
            sent(0, vec![entry(10, 1), entry(11, 1), entry(12, 5)]),
            vec![0, 1, 2],
            vec![
                group(false, 0, &[0]),
                group(true, 0, &[1]),
                group(false, 1, &[2]),
            ],
            None,
            None,
            0,
        );
        assert_eq!(order, [11, 10, 12]);
        // Cycle 2: heads 0 and 2 known by id, one new (id 3) of higher priority; none borrows.
        let order = glue::order_heads(
            &mut plugin,
            None,
            sent(3, vec![entry(13, 9)]),
            vec![2, 0, 3],
            vec![group(false, 0, &[2, 0, 3])],
            None,
            None,
            0,
        );
        assert_eq!(order, [13, 12, 10]);
        // Nothing new: the table is as it was.
        let order = glue::order_heads(
            &mut plugin,
            None,
            None,
            vec![1, 0],
            vec![group(false, 0, &[1, 0])],
            None,
            None,
            0,
        );
        assert_eq!(order, [11, 10], "equal heads keep the host's order");
        // A new catalog starts the table again.
        glue::set_catalog(
            &mut plugin,
            crate::testing::CatalogBuilder::new().build().raw().clone(),
        );
        let order = glue::order_heads(
            &mut plugin,
            None,
            sent(0, vec![entry(20, 0)]),
            vec![0],
            vec![group(false, 0, &[0])],
            None,
            None,
            0,
        );
        assert_eq!(order, [20]);

        // A position past the heads is answered as no workload (which the host refuses).
        let mut past = crate::export::Plugin::<PastTheEnd>::new();
        let order = glue::order_heads(
            &mut past,
            None,
            sent(0, vec![entry(30, 0)]),
            vec![0],
            vec![group(false, 0, &[0])],
            None,
            None,
            0,
        );
        assert_eq!(order, [u32::MAX, 30]);
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
