//! Admission ordering plugins: implement [`OrderingPolicy`] and export it with
//! [`export_ordering!`](crate::export_ordering).

use crate::catalog::Catalog;
use crate::kueue;
use crate::quota::QuotaView;
use crate::types::{LocalQueueUsage, Millis, Needs, UsageTable, Workload};

pub use crate::bindings::ordering::exports::wasq::policy::ordering::{Head, SortKey};

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
    /// order speculative, see there). The host prepares and sends only that. Default: nothing.
    fn needs(&self, catalog: &Catalog) -> Needs {
        let _ = catalog;
        Needs::empty()
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
        workloads: Vec<Workload>,
        local_queue_usage: Vec<LocalQueueUsage>,
        now: Millis,
    ) -> Vec<SortKey> {
        let (policy, catalog) = plugin.parts();
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
                policy.sort_key_with_usage(catalog, w, lq, now)
            })
            .collect()
    }

    pub fn order_heads<P: OrderingPolicy>(
        plugin: &mut Plugin<P>,
        heads: Vec<Head>,
        usage: UsageTable,
        now: Millis,
    ) -> Vec<u32> {
        let (policy, catalog) = plugin.parts();
        let view = QuotaView::from_usage_table(catalog, &usage);
        policy.order_heads_with_usage(catalog, &heads, &view, now)
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
                    workloads: ::std::vec::Vec<$crate::types::Workload>,
                    local_queue_usage: ::std::vec::Vec<$crate::types::LocalQueueUsage>,
                    now: $crate::types::Millis,
                ) -> ::std::vec::Vec<$crate::ordering::SortKey> {
                    __WASQ_PLUGIN.with_borrow_mut(|p| {
                        $crate::ordering::glue::sort_keys(p, workloads, local_queue_usage, now)
                    })
                }
                fn order_heads(
                    heads: ::std::vec::Vec<$crate::ordering::Head>,
                    usage: $crate::types::UsageTable,
                    now: $crate::types::Millis,
                ) -> ::std::vec::Vec<u32> {
                    __WASQ_PLUGIN.with_borrow_mut(|p| {
                        $crate::ordering::glue::order_heads(p, heads, usage, now)
                    })
                }
            }
            $crate::bindings::ordering::__export_ordering_plugin!(
                __WasqOrderingExport with_types_in $crate::bindings::ordering
            );
        };
    };
}
