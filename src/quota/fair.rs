//! Fair sharing's dominant resource share (Kueue's `DominantResourceShare`,
//! `pkg/cache/scheduler/fair_sharing.go`), computed on the quota tree for any node and usage.
//!
//! For a node with a parent: per flavor-resource, `borrowed = usage + extra − subtree quota`
//! when positive, summed per resource; per resource, `lendable = Σ_flavors potentialAvailable
//! (parent)`; the share is the largest `borrowed · 1000 / lendable`, divided by the node's
//! `fairSharing.weight`. A root, or a node that borrows nothing, has share 0. A node with
//! weight 0 that borrows has an infinite share; two such compare by their unweighted ratio.

use std::cmp::Ordering;

use super::resources::{FrIdx, Names, ResourceId};
use super::tree::{NodeId, QuotaTree, Usage};

/// A node's dominant resource share.
#[derive(Debug, Clone, PartialEq)]
pub struct Drs {
    /// `fairSharing.weight` in milli-units.
    pub weight_milli: i64,
    /// The largest `borrowed · 1000 / lendable` over resources (unweighted).
    pub ratio: f64,
    /// The resource that gives `ratio`.
    pub dominant: Option<ResourceId>,
    /// The flavor-resources on which the node borrows.
    pub borrowed: Vec<FrIdx>,
}

impl Drs {
    pub fn is_zero(&self) -> bool {
        self.ratio == 0.0
    }

    /// Borrowing at all (on any flavor-resource, even one with nothing lendable).
    pub fn is_borrowing(&self) -> bool {
        !self.borrowed.is_empty()
    }

    /// Borrowing on a flavor-resource the request asks for (Kueue's `IsBorrowingOn`).
    pub fn is_borrowing_on(&self, request: &[(FrIdx, i64)]) -> bool {
        self.borrowed
            .iter()
            .any(|fr| request.iter().any(|&(r, v)| r == *fr && v > 0))
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

    /// Kueue's `status.fairSharing.weightedShare`: the weighted share rounded up
    /// (`i64::MAX` for a zero weight that borrows).
    pub fn rounded(&self) -> i64 {
        if self.zero_weight_borrows() {
            i64::MAX
        } else {
            self.weighted().ceil() as i64
        }
    }
}

/// Kueue's `CompareDRS`.
pub fn compare(a: &Drs, b: &Drs) -> Ordering {
    match (a.zero_weight_borrows(), b.zero_weight_borrows()) {
        (true, true) => a.ratio.total_cmp(&b.ratio),
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.weighted().total_cmp(&b.weighted()),
    }
}

impl QuotaTree {
    /// The node's dominant resource share with `extra` added to its usage (an incoming
    /// workload's request; empty for the share as it is).
    pub fn drs(
        &self,
        names: &Names,
        usage: &Usage,
        node: NodeId,
        weight_milli: i64,
        extra: &[(FrIdx, i64)],
    ) -> Drs {
        let mut drs = Drs {
            weight_milli,
            ratio: 0.0,
            dominant: None,
            borrowed: Vec::new(),
        };
        let Some(parent) = self.parent(node) else {
            return drs;
        };
        let n_res = names.resources().count();
        let mut borrowing = vec![0i64; n_res];
        for i in 0..self.n_fr() {
            let fr = FrIdx(i as u32);
            let add: i64 = extra.iter().filter(|e| e.0 == fr).map(|e| e.1).sum();
            let borrowed = usage.get(node, fr) + add - self.subtree_quota(node, fr);
            if borrowed > 0 {
                let r = names.fr_parts(fr).1;
                borrowing[r.index()] += borrowed;
                drs.borrowed.push(fr);
            }
        }
        if drs.borrowed.is_empty() {
            return drs;
        }
        let mut lendable = vec![0i64; n_res];
        for i in 0..self.n_fr() {
            let fr = FrIdx(i as u32);
            let r = names.fr_parts(fr).1;
            lendable[r.index()] =
                lendable[r.index()].saturating_add(self.potential_available(parent, fr));
        }
        // Resources by name, so that ties pick the smallest name as Kueue does.
        let mut by_name: Vec<(&str, usize)> = names
            .resources()
            .map(|(id, name)| (name, id.index()))
            .collect();
        by_name.sort();
        for (_, r) in by_name {
            if borrowing[r] > 0 && lendable[r] > 0 {
                let ratio = borrowing[r] as f64 * 1000.0 / lendable[r] as f64;
                if ratio > drs.ratio {
                    drs.ratio = ratio;
                    drs.dominant = Some(ResourceId(r as u32));
                }
            }
        }
        drs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::{NodeKind, NodeSpec, ResourceQuota};

    /// A cohort with two ClusterQueues, each with 6 cpu and 4 gpu nominal.
    fn tree() -> (QuotaTree, Names) {
        let mut names = Names::default();
        let f = names.flavor("default");
        let cpu = names.resource("cpu");
        let gpu = names.resource("gpu");
        let (fc, fg) = (names.fr(f, cpu), names.fr(f, gpu));
        let q = |n| ResourceQuota {
            nominal: n,
            ..Default::default()
        };
        let cq = |name: &str| NodeSpec {
            name: name.into(),
            kind: NodeKind::ClusterQueue,
            parent: Some(NodeId(2)),
            quotas: vec![(fc, q(6000)), (fg, q(4000))],
        };
        let specs = vec![
            cq("a"),
            cq("b"),
            NodeSpec {
                name: "cohort".into(),
                kind: NodeKind::Cohort,
                parent: None,
                quotas: vec![],
            },
        ];
        (QuotaTree::build(specs, names.n_fr()), names)
    }

    #[test]
    fn share_is_the_dominant_borrowed_fraction_of_what_the_parent_lends() {
        let (t, names) = tree();
        let (a, b) = (NodeId(0), NodeId(1));
        let (cpu, gpu) = (FrIdx(0), FrIdx(1));
        let mut u = t.new_usage();
        t.add_usage(&mut u, a, cpu, 9000); // borrows 3 of 12 cpu → 250
        t.add_usage(&mut u, a, gpu, 6000); // borrows 2 of 8 gpu → 250; cpu < gpu by name
        let d = t.drs(&names, &u, a, 1000, &[]);
        assert_eq!(d.ratio, 250.0);
        assert_eq!(d.dominant, Some(ResourceId(0)));
        assert_eq!(d.borrowed, vec![cpu, gpu]);
        // Weight 2 halves it; an incoming 3 cpu raises cpu to 6/12.
        assert_eq!(t.drs(&names, &u, a, 2000, &[]).weighted(), 125.0);
        assert_eq!(t.drs(&names, &u, a, 1000, &[(cpu, 3000)]).weighted(), 500.0);
        // b borrows nothing; the root has no share.
        assert!(t.drs(&names, &u, b, 1000, &[]).is_zero());
        assert!(t.drs(&names, &u, NodeId(2), 1000, &[]).is_zero());
        assert!(t.drs(&names, &u, a, 1000, &[]).is_borrowing_on(&[(gpu, 1)]));
        assert!(!t.drs(&names, &u, a, 1000, &[]).is_borrowing_on(&[(gpu, 0)]));
    }

    #[test]
    fn zero_weight_that_borrows_ranks_above_everything() {
        let (t, names) = tree();
        let mut u = t.new_usage();
        t.add_usage(&mut u, NodeId(0), FrIdx(0), 7000);
        t.add_usage(&mut u, NodeId(1), FrIdx(0), 11000);
        let zero = t.drs(&names, &u, NodeId(0), 0, &[]);
        let big = t.drs(&names, &u, NodeId(1), 1000, &[]);
        assert_eq!(zero.weighted(), f64::INFINITY);
        assert_eq!(zero.rounded(), i64::MAX);
        assert_eq!(compare(&zero, &big), Ordering::Greater);
        assert_eq!(compare(&big, &zero), Ordering::Less);
        assert_eq!(big.rounded(), 417); // 5/12 · 1000 = 416.67 → 417
    }
}
