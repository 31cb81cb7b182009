//! Flavor-assignment plugins: implement [`FlavorAssignmentPolicy`] and export it with
//! [`export_flavor_assignment!`](crate::export_flavor_assignment).
//!
//! The host evaluates every flavor of the resource group for the podSet and sends the result;
//! the plugin only chooses among the offered options, and the host checks that the choice fits.

use crate::catalog::Catalog;

pub use crate::bindings::flavor_assignment::exports::wasq::policy::flavor_assignment::{
    FitMode, FlavorOption, Request,
};

/// A flavor-assignment policy.
///
/// The SDK builds the policy with [`Default`] on the first call into the plugin, and passes the
/// latest catalog the host sent to every method.
pub trait FlavorAssignmentPolicy: Default + 'static {
    /// Called after the host sent a new catalog (before the next decision); the place to read
    /// settings. Default: nothing.
    fn catalog_changed(&mut self, catalog: &Catalog) {
        let _ = catalog;
    }

    /// The index of the chosen entry of `req.options`, or `None` to assign no flavor this
    /// cycle. [`kueue::choose_flavor`](crate::kueue::choose_flavor) is Kueue's answer.
    fn choose_flavor(&mut self, catalog: &Catalog, req: &Request) -> Option<u32>;
}

#[doc(hidden)]
pub mod glue {
    use super::*;
    use crate::export::Plugin;

    pub fn choose_flavors<P: FlavorAssignmentPolicy>(
        plugin: &mut Plugin<P>,
        strings: Option<crate::types::NewStrings>,
        requests: Vec<Request>,
    ) -> Vec<Option<u32>> {
        let (policy, catalog) = plugin.parts_with(strings);
        requests
            .iter()
            .map(|r| policy.choose_flavor(catalog, r))
            .collect()
    }
}

/// Exports a type implementing [`FlavorAssignmentPolicy`] as the plugin's
/// `wasq:policy/flavor-assignment` interface. Invoke it once, in the plugin crate's `lib.rs`:
///
/// ```ignore
/// #[derive(Default)]
/// struct MyFlavors;
/// impl wasq_policy_sdk::flavor_assignment::FlavorAssignmentPolicy for MyFlavors { /* … */ }
/// wasq_policy_sdk::export_flavor_assignment!(MyFlavors);
/// ```
#[macro_export]
macro_rules! export_flavor_assignment {
    ($policy:ty) => {
        const _: () = {
            struct __WasqFlavorExport;
            ::std::thread_local! {
                static __WASQ_PLUGIN: ::core::cell::RefCell<$crate::export::Plugin<$policy>> =
                    ::core::cell::RefCell::new($crate::export::Plugin::new());
            }
            impl $crate::bindings::flavor_assignment::exports::wasq::policy::flavor_assignment::Guest
                for __WasqFlavorExport
            {
                fn set_catalog(catalog: $crate::types::Catalog) {
                    __WASQ_PLUGIN.with_borrow_mut(|p| {
                        p.set_catalog(catalog, |policy, catalog| {
                            <$policy as $crate::flavor_assignment::FlavorAssignmentPolicy>::catalog_changed(
                                policy, catalog,
                            )
                        })
                    })
                }
                fn choose_flavors(
                    strings: Option<$crate::types::NewStrings>,
                    requests: ::std::vec::Vec<$crate::flavor_assignment::Request>,
                ) -> ::std::vec::Vec<::core::option::Option<u32>> {
                    __WASQ_PLUGIN.with_borrow_mut(|p| {
                        $crate::flavor_assignment::glue::choose_flavors(p, strings, requests)
                    })
                }
            }
            $crate::bindings::flavor_assignment::__export_flavor_assignment_plugin!(
                __WasqFlavorExport with_types_in $crate::bindings::flavor_assignment
            );
        };
    };
}
