//! Placement plugins (topology-aware scheduling): implement [`PlacementPolicy`] and export it
//! with [`export_placement!`](crate::export_placement).
//!
//! The host sends a TAS podSet's flavor's domain tree as a list of domains (level, parent,
//! free capacity per resource) and a list of leaves (domain, eligibility): `record domain` and
//! `record leaf` in `wit/placement.wit`. [`Tree`] is the view to read it by: domains with their
//! level, parent, children and free capacity, the leaves with their eligibility and how many
//! pods fit on each. The plugin answers pods per leaf (and a podSet group's leader's leaf); the host checks
//! the answer (every pod placed, on eligible leaves within their free capacity, inside one
//! domain of a required level, whole slices per slice domain and slice layer, the leader where
//! it fits) and falls back to Kueue's BestFit
//! ([`kueue::place`](crate::kueue::place)) when it is refused.

use crate::catalog::Catalog;

pub use crate::bindings::placement::exports::wasq::policy::placement::{
    Answer, Constraint, ConstraintMode, Domain, Leaf, LeafPods, Placement, Request, SliceLayer,
};

/// A domain's index in `request.domains`.
pub type DomainId = u32;
/// A leaf's index in `request.leaves`: what answers name.
pub type LeafId = u32;

/// A placement policy.
///
/// The SDK builds the policy with [`Default`] on the first call into the plugin, and passes the
/// latest catalog the host sent to every method.
pub trait PlacementPolicy: Default + 'static {
    /// Called after the host sent a new catalog (before the next decision); the place to read
    /// settings. Default: nothing.
    fn catalog_changed(&mut self, catalog: &Catalog) {
        let _ = catalog;
    }

    /// Pods per leaf ([`Answer::Placed`]), or why the podSet does not fit ([`Answer::NoFit`]).
    /// [`kueue::place`](crate::kueue::place) is Kueue's answer.
    fn place(&mut self, catalog: &Catalog, req: &Request) -> Answer;
}

/// The domain tree of a request, with what its lists leave implicit computed once: each
/// domain's children and leaf, each level's domains.
#[derive(Debug, Clone)]
pub struct Tree<'r> {
    req: &'r Request,
    children: Vec<Vec<DomainId>>,
    per_level: Vec<Vec<DomainId>>,
    leaf_of: Vec<Option<LeafId>>,
}

impl<'r> Tree<'r> {
    /// The view of `req`'s domains and leaves. A parent, level or leaf domain out of range
    /// is left out of the lists it would index (the host never sends one).
    pub fn new(req: &'r Request) -> Tree<'r> {
        let n = req.domains.len();
        let mut children = vec![Vec::new(); n];
        let mut per_level = vec![Vec::new(); req.level_names.len()];
        for (i, d) in req.domains.iter().enumerate() {
            if let Some(siblings) = d.parent.and_then(|p| children.get_mut(p as usize)) {
                siblings.push(i as DomainId);
            }
            if let Some(level) = per_level.get_mut(d.level as usize) {
                level.push(i as DomainId);
            }
        }
        let mut leaf_of = vec![None; n];
        for (leaf, l) in req.leaves.iter().enumerate() {
            if let Some(slot) = leaf_of.get_mut(l.domain as usize) {
                *slot = Some(leaf as LeafId);
            }
        }
        Tree {
            req,
            children,
            per_level,
            leaf_of,
        }
    }

    /// The request this view reads.
    pub fn request(&self) -> &'r Request {
        self.req
    }

    /// How many domains the tree has.
    pub fn domains(&self) -> usize {
        self.req.domains.len()
    }

    /// How many levels the topology has (0 = the highest).
    pub fn levels(&self) -> usize {
        self.req.level_names.len()
    }

    /// The lowest level (the leaves').
    pub fn lowest(&self) -> usize {
        self.levels().saturating_sub(1)
    }

    /// A domain's level.
    pub fn level(&self, d: DomainId) -> usize {
        self.req.domains[d as usize].level as usize
    }

    /// A domain's parent; `None` at the highest level.
    pub fn parent(&self, d: DomainId) -> Option<DomainId> {
        self.req.domains[d as usize].parent
    }

    /// A domain's children, in the order of their values.
    pub fn children(&self, d: DomainId) -> &[DomainId] {
        &self.children[d as usize]
    }

    /// The domains of a level, in the order of their values.
    pub fn at_level(&self, level: usize) -> &[DomainId] {
        self.per_level.get(level).map_or(&[], Vec::as_slice)
    }

    /// The ancestor of `d` at `level` (`d` itself at its own level).
    pub fn ancestor_at(&self, mut d: DomainId, level: usize) -> DomainId {
        while self.level(d) > level {
            match self.parent(d) {
                Some(p) => d = p,
                None => break,
            }
        }
        d
    }

    /// A domain's free capacity of resource `resource` (an index into `request.resource-names`,
    /// milli-units): a leaf's own, an inner domain's the sum of its leaves'.
    pub fn free(&self, resource: usize, d: DomainId) -> i64 {
        self.req.domains[d as usize].free[resource]
    }

    /// The index of a resource in `request.resource-names`, by name (`pods`, `cpu`,
    /// `nvidia.com/gpu`, …).
    pub fn resource(&self, catalog: &Catalog, name: &str) -> Option<usize> {
        self.req
            .resource_names
            .iter()
            .position(|&s| catalog.string(s) == name)
    }

    /// How many leaves the tree has.
    pub fn leaves(&self) -> usize {
        self.req.leaves.len()
    }

    /// A leaf's domain.
    pub fn leaf_domain(&self, leaf: LeafId) -> DomainId {
        self.req.leaves[leaf as usize].domain
    }

    /// The leaf a lowest-level domain is.
    pub fn leaf_of(&self, d: DomainId) -> Option<LeafId> {
        self.leaf_of[d as usize]
    }

    /// Whether the pods may run on a leaf.
    pub fn eligible(&self, leaf: LeafId) -> bool {
        self.req.leaves[leaf as usize].eligible
    }

    /// How many pods fit on a leaf's free capacity (ignoring eligibility), and the resource
    /// that limits it first (`None` when no resource is requested).
    pub fn fits_on(&self, leaf: LeafId) -> (i32, Option<usize>) {
        let d = self.leaf_domain(leaf);
        fits(&self.req.per_pod, |c| self.free(c, d))
    }

    /// With a podSet group's leader (`request.leader`): `None` when the leader does not fit on
    /// a leaf, else how many pods fit next to it. `None` without a leader.
    pub fn fits_with_leader(&self, leaf: LeafId) -> Option<i32> {
        let leader = self.req.leader.as_ref()?;
        let d = self.leaf_domain(leaf);
        if fits(leader, |c| self.free(c, d)).0 < 1 {
            return None;
        }
        Some(fits(&self.req.per_pod, |c| self.free(c, d) - leader[c]).0)
    }

    /// The pods that fit on a domain's eligible leaves, each leaf on its own.
    pub fn pods_fitting(&self, d: DomainId) -> i64 {
        match self.leaf_of(d) {
            Some(leaf) if self.eligible(leaf) => i64::from(self.fits_on(leaf).0),
            Some(_) => 0,
            None => self.children(d).iter().map(|&c| self.pods_fitting(c)).sum(),
        }
    }
}

/// How many pods of `per_pod` fit in `free` (per resource), and the resource that limits it
/// first.
fn fits(per_pod: &[i64], free: impl Fn(usize) -> i64) -> (i32, Option<usize>) {
    let mut best: Option<(i64, usize)> = None;
    for (c, &need) in per_pod.iter().enumerate() {
        if need <= 0 {
            continue;
        }
        let n = free(c).max(0) / need;
        if best.is_none_or(|(b, _)| n < b) {
            best = Some((n, c));
        }
    }
    match best {
        None => (i32::MAX, None),
        Some((n, c)) => (i32::try_from(n).unwrap_or(i32::MAX), Some(c)),
    }
}

#[doc(hidden)]
pub mod glue {
    use super::*;
    use crate::export::Plugin;

    pub fn place<P: PlacementPolicy>(
        plugin: &mut Plugin<P>,
        strings: Option<crate::types::NewStrings>,
        requests: Vec<Request>,
    ) -> Vec<Answer> {
        let (policy, catalog) = plugin.parts_with(strings);
        requests.iter().map(|r| policy.place(catalog, r)).collect()
    }
}

/// Exports a type implementing [`PlacementPolicy`] as the plugin's `wasq:policy/placement`
/// interface. Invoke it once, in the plugin crate's `lib.rs`:
///
/// ```ignore
/// #[derive(Default)]
/// struct MyPlacement;
/// impl wasq_policy_sdk::placement::PlacementPolicy for MyPlacement { /* … */ }
/// wasq_policy_sdk::export_placement!(MyPlacement);
/// ```
#[macro_export]
macro_rules! export_placement {
    ($policy:ty) => {
        const _: () = {
            struct __WasqPlacementExport;
            ::std::thread_local! {
                static __WASQ_PLUGIN: ::core::cell::RefCell<$crate::export::Plugin<$policy>> =
                    ::core::cell::RefCell::new($crate::export::Plugin::new());
            }
            impl $crate::bindings::placement::exports::wasq::policy::placement::Guest
                for __WasqPlacementExport
            {
                fn set_catalog(catalog: $crate::types::Catalog) {
                    __WASQ_PLUGIN.with_borrow_mut(|p| {
                        p.set_catalog(catalog, |policy, catalog| {
                            <$policy as $crate::placement::PlacementPolicy>::catalog_changed(
                                policy, catalog,
                            )
                        })
                    })
                }
                fn place(
                    strings: Option<$crate::types::NewStrings>,
                    requests: ::std::vec::Vec<$crate::placement::Request>,
                ) -> ::std::vec::Vec<$crate::placement::Answer> {
                    __WASQ_PLUGIN
                        .with_borrow_mut(|p| $crate::placement::glue::place(p, strings, requests))
                }
            }
            $crate::bindings::placement::__export_placement_plugin!(
                __WasqPlacementExport with_types_in $crate::bindings::placement
            );
        };
    };
}
