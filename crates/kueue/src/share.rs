//! Fair sharing's dominant resource share (Kueue's `DominantResourceShare`,
//! `pkg/cache/scheduler/fair_sharing.go`) and its comparison (`CompareDRS`).
//!
//! For a node with a parent: per flavor-resource, `borrowed = usage + extra − subtree quota`
//! when positive, summed per resource; per resource, `lendable = Σ_flavors potentialAvailable
//! (parent)`; the share is the largest `borrowed · 1000 / lendable`, divided by the node's
//! `fairSharing.weight`. A root, or a node that borrows nothing, has share 0. A node with
//! weight 0 that borrows has an infinite share; two such compare by their unweighted ratio.

use std::cmp::Ordering;

use crate::NodeId;

/// What a share is computed from: the quota tree's figures and the usage at one moment.
/// Flavor-resources are numbered `0..flavor_resources()`, resources `0..resources()`.
pub trait Quota {
    /// The node's parent cohort; `None` for a root.
    fn parent(&self, node: NodeId) -> Option<NodeId>;
    /// How many flavor-resources there are.
    fn flavor_resources(&self) -> usize;
    /// The resource a flavor-resource is of.
    fn resource_of(&self, fr: u32) -> u32;
    /// How many resources there are.
    fn resources(&self) -> usize;
    /// A resource's name (ties between resources go to the smallest name, as in Kueue).
    fn resource_name(&self, resource: u32) -> &str;
    /// The node's usage of a flavor-resource (its subtree's, for a cohort).
    fn usage(&self, node: NodeId, fr: u32) -> i64;
    /// The node's subtree quota of a flavor-resource (Kueue's `SubtreeQuota`).
    fn subtree_quota(&self, node: NodeId, fr: u32) -> i64;
    /// Kueue's `potentialAvailable`: what the node could use were nothing else used.
    fn potential_available(&self, node: NodeId, fr: u32) -> i64;
}

/// Usage that changes as a decision is simulated (victims leave, winners are admitted), and
/// the shares it gives.
pub trait Snapshot {
    /// Adds `delta` of a flavor-resource to a node's usage (and to its cohorts').
    fn add_usage(&mut self, node: NodeId, fr: u32, delta: i64);
    /// The node's dominant resource share at the current state, with the node's own
    /// `fairSharing.weight` (see [`drs`]).
    fn share(&self, node: NodeId) -> Drs;
}

/// A node's dominant resource share.
#[derive(Debug, Clone, PartialEq)]
pub struct Drs {
    /// `fairSharing.weight` in milli-units.
    pub weight_milli: i64,
    /// The largest `borrowed · 1000 / lendable` over resources (unweighted).
    pub ratio: f64,
    /// The resource that gives `ratio`.
    pub dominant: Option<u32>,
    /// The flavor-resources on which the node borrows, in increasing id.
    pub borrowed: Vec<u32>,
}

impl Drs {
    /// The share of a node that borrows nothing, with weight `weight_milli`.
    pub fn zero(weight_milli: i64) -> Drs {
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
    /// `IsBorrowingOn`); `request` lists `(flavor-resource, amount)` pairs, or anything that
    /// converts to them.
    pub fn is_borrowing_on<R: Into<(u32, i64)>>(
        &self,
        request: impl IntoIterator<Item = R> + Clone,
    ) -> bool {
        self.borrowed.iter().any(|&fr| {
            request.clone().into_iter().any(|r| {
                let (r, amount) = r.into();
                r == fr && amount > 0
            })
        })
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

/// `a` against `b`, where `None` is Kueue's `NegativeDRS` (below every share).
pub fn compare_or_negative(a: Option<&Drs>, b: Option<&Drs>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => compare(a, b),
        (a, b) => a.is_some().cmp(&b.is_some()),
    }
}

/// The node's dominant resource share with weight `weight_milli` and `extra` added to its
/// usage (an incoming workload's `(flavor-resource, amount)` requests; empty for the share as
/// it is).
pub fn drs<Q: Quota + ?Sized>(q: &Q, node: NodeId, weight_milli: i64, extra: &[(u32, i64)]) -> Drs {
    let mut drs = Drs::zero(weight_milli);
    let Some(parent) = q.parent(node) else {
        return drs;
    };
    let n_res = q.resources();
    let mut borrowing = vec![0i64; n_res];
    for fr in 0..q.flavor_resources() as u32 {
        let add: i64 = extra.iter().filter(|e| e.0 == fr).map(|e| e.1).sum();
        let borrowed = q.usage(node, fr) + add - q.subtree_quota(node, fr);
        if borrowed > 0 {
            if let Some(b) = borrowing.get_mut(q.resource_of(fr) as usize) {
                *b += borrowed;
            }
            drs.borrowed.push(fr);
        }
    }
    if drs.borrowed.is_empty() {
        return drs;
    }
    let mut lendable = vec![0i64; n_res];
    for fr in 0..q.flavor_resources() as u32 {
        if let Some(l) = lendable.get_mut(q.resource_of(fr) as usize) {
            *l = l.saturating_add(q.potential_available(parent, fr));
        }
    }
    // Resources by name, so that ties pick the smallest name as Kueue does.
    let mut by_name: Vec<(&str, u32)> =
        (0..n_res as u32).map(|r| (q.resource_name(r), r)).collect();
    by_name.sort_unstable();
    for (_, r) in by_name {
        let (b, l) = (borrowing[r as usize], lendable[r as usize]);
        if b > 0 && l > 0 {
            let ratio = b as f64 * 1000.0 / l as f64;
            if ratio > drs.ratio {
                drs.ratio = ratio;
                drs.dominant = Some(r);
            }
        }
    }
    drs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Shares;

    /// A cohort (2) with two ClusterQueues (0, 1), each with 6 cpu (fr 0) and 4 gpu (fr 1).
    fn tree() -> Shares {
        Shares::new(
            &[Some(2), Some(2), None],
            &[[6000, 4000], [6000, 4000], [0, 0]],
        )
    }

    #[test]
    fn share_is_the_dominant_borrowed_fraction_of_what_the_parent_lends() {
        let mut q = tree();
        q.add(0, 0, 9000); // borrows 3 of 12 cpu → 250
        q.add(0, 1, 6000); // borrows 2 of 8 gpu → 250; cpu < gpu by name
        let d = drs(&q, 0, 1000, &[]);
        assert_eq!(
            (d.ratio, d.dominant, d.borrowed.clone()),
            (250.0, Some(0), vec![0, 1])
        );
        // Weight 2 halves it; an incoming 3 cpu raises cpu to 6/12.
        assert_eq!(drs(&q, 0, 2000, &[]).weighted(), 125.0);
        assert_eq!(drs(&q, 0, 1000, &[(0, 3000)]).weighted(), 500.0);
        // b borrows nothing; the root has no share.
        assert!(drs(&q, 1, 1000, &[]).is_zero());
        assert!(drs(&q, 2, 1000, &[]).is_zero());
        assert!(d.is_borrowing_on([(1u32, 1i64)]));
        assert!(!d.is_borrowing_on([(1u32, 0i64)]));
    }

    #[test]
    fn zero_weight_that_borrows_ranks_above_everything() {
        let mut q = tree();
        q.add(0, 0, 7000);
        q.add(1, 0, 11000);
        let zero = drs(&q, 0, 0, &[]);
        let big = drs(&q, 1, 1000, &[]);
        assert_eq!(zero.weighted(), f64::INFINITY);
        assert_eq!(zero.rounded(), i64::MAX);
        assert_eq!(compare(&zero, &big), Ordering::Greater);
        assert_eq!(compare(&big, &zero), Ordering::Less);
        assert_eq!(big.rounded(), 417); // 5/12 · 1000 = 416.67 → 417
        assert_eq!(
            compare_or_negative(None, Some(&Drs::zero(1000))),
            Ordering::Less
        );
    }
}
