//! Admission ordering plugins: implement [`OrderingPolicy`] and export it with
//! [`export_ordering!`](crate::export_ordering).

use crate::catalog::Catalog;
use crate::kueue;
use crate::types::{Millis, Workload};

pub use crate::bindings::ordering::exports::wasq::policy::ordering::{Head, SortKey};

/// An admission-ordering policy. Both methods default to Kueue's behaviour: override what the
/// policy changes.
///
/// The SDK builds the policy with [`Default`] on the first call into the plugin, and passes the
/// latest catalog the host sent to every method.
pub trait OrderingPolicy: Default + 'static {
    /// Called after the host sent a new catalog (before the next decision); the place to read
    /// settings. Default: nothing.
    fn catalog_changed(&mut self, catalog: &Catalog) {
        let _ = catalog;
    }

    /// The key a workload is queued under; workloads are popped smallest key first. `now` is
    /// the scheduler's clock at queueing time. Default: Kueue's `(-priority, created, 0)`.
    fn sort_key(&mut self, catalog: &Catalog, workload: &Workload, now: Millis) -> SortKey {
        let _ = (catalog, now);
        kueue::sort_key(workload)
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
}

#[doc(hidden)]
pub mod glue {
    use super::*;
    use crate::export::Plugin;

    pub fn sort_keys<P: OrderingPolicy>(
        plugin: &mut Plugin<P>,
        workloads: Vec<Workload>,
        now: Millis,
    ) -> Vec<SortKey> {
        let (policy, catalog) = plugin.parts();
        workloads
            .iter()
            .map(|w| policy.sort_key(catalog, w, now))
            .collect()
    }

    pub fn order_heads<P: OrderingPolicy>(
        plugin: &mut Plugin<P>,
        heads: Vec<Head>,
        now: Millis,
    ) -> Vec<u32> {
        let (policy, catalog) = plugin.parts();
        policy.order_heads(catalog, &heads, now)
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
                fn set_catalog(catalog: $crate::types::Catalog) {
                    __WASQ_PLUGIN.with_borrow_mut(|p| {
                        p.set_catalog(catalog, |policy, catalog| {
                            <$policy as $crate::ordering::OrderingPolicy>::catalog_changed(
                                policy, catalog,
                            )
                        })
                    })
                }
                fn sort_keys(
                    workloads: ::std::vec::Vec<$crate::types::Workload>,
                    now: $crate::types::Millis,
                ) -> ::std::vec::Vec<$crate::ordering::SortKey> {
                    __WASQ_PLUGIN
                        .with_borrow_mut(|p| $crate::ordering::glue::sort_keys(p, workloads, now))
                }
                fn order_heads(
                    heads: ::std::vec::Vec<$crate::ordering::Head>,
                    now: $crate::types::Millis,
                ) -> ::std::vec::Vec<u32> {
                    __WASQ_PLUGIN
                        .with_borrow_mut(|p| $crate::ordering::glue::order_heads(p, heads, now))
                }
            }
            $crate::bindings::ordering::__export_ordering_plugin!(
                __WasqOrderingExport with_types_in $crate::bindings::ordering
            );
        };
    };
}
