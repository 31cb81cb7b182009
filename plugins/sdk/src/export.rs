//! The state behind an exported plugin: the policy value and the latest catalog.

use crate::catalog::Catalog;
use crate::types;

/// What the `export_*!` macros keep between calls: the policy, built with [`Default`] on the
/// first call, and the latest catalog the host sent. Plugins do not use it directly.
#[derive(Debug)]
pub struct Plugin<P> {
    policy: P,
    catalog: Catalog,
}

impl<P: Default> Plugin<P> {
    /// Installs the panic hook and builds the policy.
    pub fn new() -> Plugin<P> {
        crate::log::install_panic_hook();
        Plugin {
            policy: P::default(),
            catalog: Catalog::empty(),
        }
    }
}

impl<P: Default> Default for Plugin<P> {
    fn default() -> Plugin<P> {
        Plugin::new()
    }
}

impl<P> Plugin<P> {
    /// Stores a new catalog and tells the policy (`changed` is the policy's
    /// `catalog_changed`).
    pub fn set_catalog(&mut self, raw: types::Catalog, changed: impl FnOnce(&mut P, &Catalog)) {
        self.catalog.replace(raw);
        changed(&mut self.policy, &self.catalog);
    }

    /// The policy and the catalog, after adding the strings a decision call sent (`None`:
    /// it sent none).
    pub fn parts_with(&mut self, strings: Option<types::NewStrings>) -> (&mut P, &Catalog) {
        if let Some(strings) = strings {
            self.catalog.add_strings(strings);
        }
        (&mut self.policy, &self.catalog)
    }

    /// The policy and the catalog, borrowed together.
    pub fn parts(&mut self) -> (&mut P, &Catalog) {
        (&mut self.policy, &self.catalog)
    }
}
