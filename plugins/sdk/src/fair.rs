//! Fair sharing's dominant resource share (Kueue's `DominantResourceShare`,
//! `pkg/cache/scheduler/fair_sharing.go`), exactly as the host computes it, over a
//! [`QuotaView`] that tracks every flavor-resource (one built with
//! [`QuotaView::from_usage_table`]).
//!
//! For a node with a parent: per flavor-resource, `borrowed = usage + extra − subtree quota`
//! when positive, summed per resource; per resource, `lendable = Σ_flavors potentialAvailable
//! (parent)`; the share is the largest `borrowed · 1000 / lendable`, divided by the node's
//! `fair-weight`. A root, or a node that borrows nothing, has share 0. A node with weight 0
//! that borrows has an infinite share; two such compare by their unweighted ratio.

use std::cmp::Ordering;

use crate::quota::QuotaView;
use crate::types::{FrAmount, FrId, NodeId, Quantity, ResourceId};

/// A node's dominant resource share.
#[derive(Debug, Clone, PartialEq)]
pub struct Drs {
    /// `fair-weight` in milli-units.
    pub weight_milli: Quantity,
    /// The largest `borrowed · 1000 / lendable` over resources (unweighted).
    pub ratio: f64,
    /// The resource that gives `ratio`.
    pub dominant: Option<ResourceId>,
    /// The flavor-resources on which the node borrows, in increasing id.
    pub borrowed: Vec<FrId>,
}

impl Drs {
    /// The share of a node that borrows nothing, with weight `weight_milli`.
    pub fn zero(weight_milli: Quantity) -> Drs {
        Drs {
            weight_milli,
            ratio: 0.0,
            dominant: None,
            borrowed: Vec::new(),
        }
    }

    /// Whether the share is 0.
    pub fn is_zero(&self) -> bool {
        self.ratio == 0.0
    }

    /// Borrowing at all (on any flavor-resource, even one with nothing lendable).
    pub fn is_borrowing(&self) -> bool {
        !self.borrowed.is_empty()
    }

    /// Borrowing on a flavor-resource `request` asks a positive amount of (Kueue's
    /// `IsBorrowingOn`).
    pub fn is_borrowing_on(&self, request: &[FrAmount]) -> bool {
        self.borrowed
            .iter()
            .any(|&fr| request.iter().any(|r| r.fr == fr && r.amount > 0))
    }

    fn zero_weight_borrows(&self) -> bool {
        self.weight_milli == 0 && !self.is_zero()
    }

    /// The weighted share (+∞ for a zero weight that borrows).
    pub fn weighted(&self) -> f64 {
        if self.is_zero() {
            0.0
        } else if self.weight_milli == 0 {
            f64::INFINITY
        } else {
            self.ratio / (self.weight_milli as f64 / 1000.0)
        }
    }

    /// Kueue's `status.fairSharing.weightedShare`: the weighted share rounded up (`i64::MAX`
    /// for a zero weight that borrows).
    pub fn rounded(&self) -> i64 {
        if self.zero_weight_borrows() {
            i64::MAX
        } else {
            self.weighted().ceil() as i64
        }
    }
}

/// Kueue's `CompareDRS`: a zero weight that borrows is above everything else (two such compare
/// by ratio); otherwise by weighted share.
pub fn compare(a: &Drs, b: &Drs) -> Ordering {
    match (a.zero_weight_borrows(), b.zero_weight_borrows()) {
        (true, true) => a.ratio.total_cmp(&b.ratio),
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.weighted().total_cmp(&b.weighted()),
    }
}

impl QuotaView<'_> {
    /// The node's dominant resource share with `extra` added to its usage (an incoming
    /// workload's request; empty for the share as it is), with weight `weight_milli` (usually
    /// the node's `fair-weight`, see [`QuotaView::drs_of`]). Reads every flavor-resource of the
    /// catalog: build the view with [`QuotaView::from_usage_table`].
    pub fn drs(&self, node: NodeId, weight_milli: Quantity, extra: &[FrAmount]) -> Drs {
        let catalog = self.catalog();
        let mut drs = Drs::zero(weight_milli);
        let Some(parent) = catalog.parent(node) else {
            return drs;
        };
        let n_res = catalog.resources.len();
        let mut borrowing = vec![0i64; n_res];
        for (i, pair) in catalog.flavor_resources.iter().enumerate() {
            let fr = i as FrId;
            let add: Quantity = extra.iter().filter(|e| e.fr == fr).map(|e| e.amount).sum();
            let borrowed = self.usage(node, fr) + add - self.quota(node, fr).subtree;
            if borrowed > 0 {
                if let Some(b) = borrowing.get_mut(pair.resource as usize) {
                    *b += borrowed;
                }
                drs.borrowed.push(fr);
            }
        }
        if drs.borrowed.is_empty() {
            return drs;
        }
        let mut lendable = vec![0i64; n_res];
        for (i, pair) in catalog.flavor_resources.iter().enumerate() {
            if let Some(l) = lendable.get_mut(pair.resource as usize) {
                *l = l.saturating_add(catalog.potential_available(parent, i as FrId));
            }
        }
        // Resources by name, so that ties pick the smallest name as Kueue does.
        let mut by_name: Vec<(&str, usize)> = catalog
            .resources
            .iter()
            .enumerate()
            .map(|(i, name)| (name.as_str(), i))
            .collect();
        by_name.sort();
        for (_, r) in by_name {
            if borrowing[r] > 0 && lendable[r] > 0 {
                let ratio = borrowing[r] as f64 * 1000.0 / lendable[r] as f64;
                if ratio > drs.ratio {
                    drs.ratio = ratio;
                    drs.dominant = Some(r as ResourceId);
                }
            }
        }
        drs
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

    #[test]
    fn zero_weight_that_borrows_ranks_above_everything() {
        let cat = tree();
        let mut v = QuotaView::from_usage_table(&cat, &usage_table(&cat, &[2], &[]));
        v.add_usage(0, 0, 7000);
        v.add_usage(1, 0, 11000);
        let zero = v.drs(0, 0, &[]);
        let big = v.drs(1, 1000, &[]);
        assert_eq!(zero.weighted(), f64::INFINITY);
        assert_eq!(zero.rounded(), i64::MAX);
        assert_eq!(compare(&zero, &big), Ordering::Greater);
        assert_eq!(compare(&big, &zero), Ordering::Less);
        assert_eq!(big.rounded(), 417);
    }
}
