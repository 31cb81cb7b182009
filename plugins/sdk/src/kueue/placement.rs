//! Kueue's default placement (`findTopologyAssignment` in
//! `pkg/cache/scheduler/tas_flavor_snapshot.go`) over the request's domain tree: the host's
//! built-in itself (the shared `wasq-bestfit` crate), so a plugin calling it decides exactly as
//! the host would — BestFit by domain, then the lowest level's tightest fit; a preferred
//! level falls back upward, then spans domains; unconstrained requests take the least free
//! capacity first (`TASProfileMixed`); slices stay within their domain, further slice layers
//! within theirs; a podSet group's leader is placed with its workers.
//!
//! Ties between domains are broken by their values, which is their index order in
//! `request.domains`.
//! The "no fit" message is Kueue's without the node exclusion counts, which the host appends.

use wasq_bestfit as bestfit;

use crate::catalog::Catalog;
use crate::placement::{Answer, ConstraintMode, LeafPods, Placement, Request, Tree};

/// Kueue's placement of `req`.
pub fn place(catalog: &Catalog, req: &Request) -> Answer {
    let q = Question {
        tree: Tree::new(req),
        catalog,
        constraint: constraint(req),
    };
    match bestfit::place(&q) {
        Ok(p) => Answer::Placed(Placement {
            pods: p
                .leaves
                .into_iter()
                .map(|(leaf, n)| LeafPods {
                    leaf: leaf as u32,
                    count: u32::try_from(n).unwrap_or(0),
                })
                .collect(),
            leader: p.leader.map(|l| l as u32),
        }),
        Err(message) => Answer::NoFit(message),
    }
}

/// The request's constraint as the algorithm takes it.
fn constraint(req: &Request) -> bestfit::Constraint {
    let c = &req.constraint;
    bestfit::Constraint {
        level: c.level as usize,
        required: c.mode == ConstraintMode::Required,
        unconstrained: c.mode == ConstraintMode::Unconstrained,
        slice_level: c.slice_level as usize,
        slice_size: i32::try_from(c.slice_size).unwrap_or(i32::MAX).max(1),
        inner: [0; bestfit::MAX_LEVELS],
        inner_layers: 0,
    }
    .with_layers(c.layers.iter().map(|l| {
        (
            l.level as usize,
            i32::try_from(l.size).unwrap_or(i32::MAX).max(1),
        )
    }))
}

/// A request as the shared algorithm reads it.
struct Question<'t, 'r> {
    tree: Tree<'r>,
    catalog: &'t Catalog,
    constraint: bestfit::Constraint,
}

impl bestfit::Question for Question<'_, '_> {
    fn levels(&self) -> usize {
        self.tree.levels()
    }

    fn domains(&self) -> usize {
        self.tree.domains()
    }

    fn level(&self, d: usize) -> usize {
        self.tree.level(d as u32)
    }

    fn children(&self, d: usize) -> impl Iterator<Item = usize> + '_ {
        self.tree.children(d as u32).iter().map(|&c| c as usize)
    }

    fn at_level(&self, level: usize) -> impl Iterator<Item = usize> + '_ {
        self.tree.at_level(level).iter().map(|&d| d as usize)
    }

    fn leaves(&self) -> usize {
        self.tree.leaves()
    }

    fn leaf_domain(&self, leaf: usize) -> usize {
        self.tree.leaf_domain(leaf as u32) as usize
    }

    fn leaf_of(&self, d: usize) -> Option<usize> {
        self.tree.leaf_of(d as u32).map(|l| l as usize)
    }

    fn eligible(&self, leaf: usize) -> bool {
        self.tree.eligible(leaf as u32)
    }

    fn pods_fitting(&self, leaf: usize) -> i32 {
        self.tree.fits_on(leaf as u32).0
    }

    fn pods_fitting_with_leader(&self, leaf: usize) -> Option<i32> {
        self.tree.fits_with_leader(leaf as u32)
    }

    fn has_leader(&self) -> bool {
        self.tree.request().leader.is_some()
    }

    fn count(&self) -> i32 {
        i32::try_from(self.tree.request().count).unwrap_or(i32::MAX)
    }

    fn constraint(&self) -> bestfit::Constraint {
        self.constraint
    }

    fn topology(&self) -> &str {
        self.catalog.string(self.tree.request().topology)
    }

    fn level_name(&self, level: usize) -> &str {
        self.tree
            .request()
            .level_names
            .get(level)
            .map_or("", |&s| self.catalog.string(s))
    }
}
