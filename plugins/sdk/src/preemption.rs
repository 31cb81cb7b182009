//! Preemption plugins: implement [`PreemptionPolicy`] and export it with
//! [`export_preemption!`](crate::export_preemption).
//!
//! The host only offers candidates Kueue's rules make eligible and checks every answer: victims
//! must be distinct candidates that make the preemptor fit (use [`QuotaView`](crate::QuotaView)
//! to simulate removals), and `allow_borrowing` must be `false` when a victim is a
//! reclaim-without-borrowing candidate of another ClusterQueue.

use crate::catalog::Catalog;
use crate::types::Needs;

pub use crate::bindings::preemption::exports::wasq::policy::preemption::{
    Candidate, CandidateKind, Request, Victims,
};

/// A preemption victim-selection policy.
///
/// The SDK builds the policy with [`Default`] on the first call into the plugin, and passes the
/// latest catalog the host sent to every method.
pub trait PreemptionPolicy: Default + 'static {
    /// Called after the host sent a new catalog (before the next decision); the place to read
    /// settings. Default: nothing.
    fn catalog_changed(&mut self, catalog: &Catalog) {
        let _ = catalog;
    }

    /// What the policy reads beyond its requests, asked after every new catalog (after
    /// [`catalog_changed`](PreemptionPolicy::catalog_changed)): `Needs::TREE_USAGE` fills each
    /// request's `tree_usage` with every node of the preemptor's cohort tree on every
    /// flavor-resource (read it with [`QuotaView::from_usage_table`](crate::QuotaView::from_usage_table);
    /// fair sharing's shares need it, see [`kueue::preemption_needs`](crate::kueue::preemption_needs)).
    /// Default: nothing.
    fn needs(&self, catalog: &Catalog) -> Needs {
        let _ = catalog;
        Needs::empty()
    }

    /// The victims for one preemptor (indices into `req.candidates`), or `None` when preemption
    /// cannot make it fit. [`kueue::select_victims`](crate::kueue::select_victims) is Kueue's
    /// answer.
    fn select_victims(&mut self, catalog: &Catalog, req: &Request) -> Option<Victims>;
}

#[doc(hidden)]
pub mod glue {
    use super::*;
    use crate::export::Plugin;

    pub fn set_catalog<P: PreemptionPolicy>(
        plugin: &mut Plugin<P>,
        catalog: crate::types::Catalog,
    ) -> Needs {
        plugin.set_catalog(catalog, P::catalog_changed);
        let (policy, catalog) = plugin.parts();
        policy.needs(catalog)
    }

    pub fn select_victims<P: PreemptionPolicy>(
        plugin: &mut Plugin<P>,
        requests: Vec<Request>,
    ) -> Vec<Option<Victims>> {
        let (policy, catalog) = plugin.parts();
        requests
            .iter()
            .map(|r| policy.select_victims(catalog, r))
            .collect()
    }
}

/// Exports a type implementing [`PreemptionPolicy`] as the plugin's `wasq:policy/preemption`
/// interface. Invoke it once, in the plugin crate's `lib.rs`:
///
/// ```ignore
/// #[derive(Default)]
/// struct MyPreemption;
/// impl wasq_policy_sdk::preemption::PreemptionPolicy for MyPreemption { /* … */ }
/// wasq_policy_sdk::export_preemption!(MyPreemption);
/// ```
#[macro_export]
macro_rules! export_preemption {
    ($policy:ty) => {
        const _: () = {
            struct __WasqPreemptionExport;
            ::std::thread_local! {
                static __WASQ_PLUGIN: ::core::cell::RefCell<$crate::export::Plugin<$policy>> =
                    ::core::cell::RefCell::new($crate::export::Plugin::new());
            }
            impl $crate::bindings::preemption::exports::wasq::policy::preemption::Guest
                for __WasqPreemptionExport
            {
                fn set_catalog(catalog: $crate::types::Catalog) -> $crate::types::Needs {
                    __WASQ_PLUGIN
                        .with_borrow_mut(|p| $crate::preemption::glue::set_catalog(p, catalog))
                }
                fn select_victims(
                    requests: ::std::vec::Vec<$crate::preemption::Request>,
                ) -> ::std::vec::Vec<::core::option::Option<$crate::preemption::Victims>> {
                    __WASQ_PLUGIN
                        .with_borrow_mut(|p| $crate::preemption::glue::select_victims(p, requests))
                }
            }
            $crate::bindings::preemption::__export_preemption_plugin!(
                __WasqPreemptionExport with_types_in $crate::bindings::preemption
            );
        };
    };
}
