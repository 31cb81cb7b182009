//! Fair sharing's dominant resource share (Kueue's `DominantResourceShare`,
//! `pkg/cache/scheduler/fair_sharing.go`) and its comparison (`CompareDRS`): `wasq-kueue`'s,
//! the same code as the host's, over a [`QuotaView`] that tracks every flavor-resource (one
//! built with [`QuotaView::from_usage_table`]).
//!
//! For a node with a parent: per flavor-resource, `borrowed = usage + extra − subtree quota`
//! when positive, summed per resource; per resource, `lendable = Σ_flavors potentialAvailable
//! (parent)`; the share is the largest `borrowed · 1000 / lendable`, divided by the node's
//! `fair-weight`. A root, or a node that borrows nothing, has share 0. A node with weight 0
//! that borrows has an infinite share; two such compare by their unweighted ratio.

pub use wasq_kueue::share::{Drs, compare};

use crate::quota::QuotaView;
use crate::types::{FrAmount, NodeId, Quantity};

impl QuotaView<'_> {
    /// The node's dominant resource share with `extra` added to its usage (an incoming
    /// workload's request; empty for the share as it is), with weight `weight_milli` (usually
    /// the node's `fair-weight`, see [`QuotaView::drs_of`]). Reads every flavor-resource of the
    /// catalog: build the view with [`QuotaView::from_usage_table`].
    pub fn drs(&self, node: NodeId, weight_milli: Quantity, extra: &[FrAmount]) -> Drs {
        let extra: Vec<(u32, i64)> = extra.iter().map(|e| (e.fr, e.amount)).collect();
        wasq_kueue::share::drs(self, node, weight_milli, &extra)
    }

    /// [`QuotaView::drs`] with the node's own `fair-weight` (1000 for an unknown node).
    pub fn drs_of(&self, node: NodeId, extra: &[FrAmount]) -> Drs {
        let weight = self.catalog().node(node).map_or(1000, |n| n.fair_weight);
        self.drs(node, weight, extra)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::testing::{CatalogBuilder, usage_table};

    /// A cohort (2) with two ClusterQueues (0, 1), each with 6 cpu (fr 0) and 4 gpu (fr 1).
    fn tree() -> Catalog {
        CatalogBuilder::new()
            .resource_flavors(&["cpu", "gpu"])
            .cluster_queue("a", Some(2))
            .quota(0, 0, 6000, None, None)
            .quota(0, 1, 4000, None, None)
            .cluster_queue("b", Some(2))
            .quota(1, 0, 6000, None, None)
            .quota(1, 1, 4000, None, None)
            .cohort("cohort", None)
            .build()
    }

    /// A view read as `wasq-kueue` reads it (the share's rules are tested there).
    #[test]
    fn share_is_the_dominant_borrowed_fraction_of_what_the_parent_lends() {
        let cat = tree();
        let mut v = QuotaView::from_usage_table(&cat, &usage_table(&cat, &[2], &[]));
        v.add_usage(0, 0, 9000); // borrows 3 of 12 cpu → 250
        v.add_usage(0, 1, 6000); // borrows 2 of 8 gpu → 250; cpu < gpu by name
        let d = v.drs(0, 1000, &[]);
        assert_eq!(d.ratio, 250.0);
        assert_eq!(d.dominant, Some(0));
        assert_eq!(d.borrowed, vec![0, 1]);
        assert_eq!(v.drs(0, 2000, &[]).weighted(), 125.0);
        let extra = [FrAmount {
            fr: 0,
            amount: 3000,
        }];
        assert_eq!(v.drs(0, 1000, &extra).weighted(), 500.0);
        assert!(v.drs(1, 1000, &[]).is_zero());
        assert!(v.drs(2, 1000, &[]).is_zero());
        assert!(d.is_borrowing_on(&[FrAmount { fr: 1, amount: 1 }]));
        assert!(!d.is_borrowing_on(&[FrAmount { fr: 1, amount: 0 }]));
        assert_eq!(v.drs_of(0, &[]), d);
    }
}
