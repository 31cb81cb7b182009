//! Kueue's classical victim selection: order candidates, remove them one by one on a copy of the
//! quota snapshot until the preemptor fits, then add back those that were not needed.

use std::cmp::Ordering;

use crate::api::BorrowWithinCohortPolicy;
use crate::policy::{
    Candidate, CandidateKind, PolicyError, PolicyRef, PreemptionPolicy, PreemptionRequest,
    VictimSet,
};
use crate::quota::Usage;

#[derive(Debug, Clone, Copy, Default)]
pub struct KueuePreemption;

/// Kueue's `CandidatesOrdering`: evicted first, other queues before the preemptor's own,
/// [admission fair sharing: within one ClusterQueue, LocalQueues with higher usage first],
/// lower priority first, most recently admitted first, then a stable id.
pub fn candidates_ordering(a: &Candidate, b: &Candidate, own: crate::cluster::CqId) -> Ordering {
    b.evicted
        .cmp(&a.evicted)
        .then_with(|| (a.cluster_queue == own).cmp(&(b.cluster_queue == own)))
        .then_with(|| match (a.local_queue_usage, b.local_queue_usage) {
            // Equal usage stands for the same LocalQueue: Kueue compares only different ones.
            (Some(ua), Some(ub)) if a.cluster_queue == b.cluster_queue && ua != ub => {
                ub.total_cmp(&ua)
            }
            _ => Ordering::Equal,
        })
        .then_with(|| a.priority.cmp(&b.priority))
        .then_with(|| b.reserved_at.cmp(&a.reserved_at))
        .then_with(|| a.workload.cmp(&b.workload))
}

/// Kueue's `workloadFits`: every request within what the preemptor's queue has available, and
/// without borrowing unless allowed.
pub fn fits_after(req: &PreemptionRequest<'_>, usage: &Usage, allow_borrowing: bool) -> bool {
    req.requests.iter().all(|&(fr, v)| {
        (allow_borrowing || !req.tree.borrowing_with(usage, req.node, fr, v))
            && v <= req.tree.available(usage, req.node, fr)
    })
}

fn remove(req: &PreemptionRequest<'_>, usage: &mut Usage, c: &Candidate, sign: i64) {
    for &(fr, v) in &c.usage {
        req.tree.add_usage(usage, c.node, fr, -sign * v);
    }
}

/// Kueue's `candidateIsValid`: reclaim only from queues (and cohorts up to the common ancestor)
/// that are still over their quota.
fn still_valid(req: &PreemptionRequest<'_>, usage: &Usage, c: &Candidate, allow: bool) -> bool {
    if c.cluster_queue == req.cluster_queue {
        return true;
    }
    if allow && c.kind == CandidateKind::ReclaimWithoutBorrowing {
        return false;
    }
    if req
        .tree
        .within_nominal(usage, c.node, &req.needs_preemption)
    {
        return false;
    }
    for node in req.tree.ancestors(c.node) {
        if Some(node) == c.lca {
            break;
        }
        if req.tree.within_nominal(usage, node, &req.needs_preemption) {
            return false;
        }
    }
    true
}

impl PreemptionPolicy for KueuePreemption {
    fn id(&self) -> PolicyRef {
        PolicyRef::builtin()
    }

    fn select_victims(
        &self,
        req: &PreemptionRequest<'_>,
    ) -> Result<Option<VictimSet>, PolicyError> {
        Ok(select_victims(req))
    }
}

/// Kueue's victim selection: fair sharing's when the request carries its strategies, else the
/// classical one.
pub fn select_victims(req: &PreemptionRequest<'_>) -> Option<VictimSet> {
    if let Some(strategies) = req.fair_sharing {
        return super::fair_preemption::select_victims(req, strategies);
    }
    let own = req.cluster_queue;
    let mut idx: Vec<usize> = (0..req.candidates.len()).collect();
    idx.sort_by(|&a, &b| candidates_ordering(&req.candidates[a], &req.candidates[b], own));
    let class = |i: &usize| match req.candidates[*i].kind {
        CandidateKind::HierarchicalReclaim => 0,
        CandidateKind::ReclaimWithoutBorrowing
        | CandidateKind::ReclaimWhileBorrowing
        | CandidateKind::FairSharing => 1,
        CandidateKind::SameQueue => 2,
    };
    // Evicted ones of each class first, then the rest, each class in candidate order.
    let mut list = idx.clone();
    list.sort_by_key(|i| (!req.candidates[*i].evicted, class(i)));
    let no_hierarchical = !idx.iter().any(|i| class(i) == 0);
    let no_other = !idx.iter().any(|i| class(i) < 2);

    let forbidden = req.config.borrow_within_cohort == BorrowWithinCohortPolicy::Never;
    let under_nominal = req
        .needs_preemption
        .iter()
        .all(|&fr| req.tree.quota(req.node, fr).nominal > req.usage.get(req.node, fr));
    let attempts: &[bool] = if no_other || (forbidden && !under_nominal) {
        &[true]
    } else if forbidden && no_hierarchical {
        &[false, true]
    } else {
        &[true, false]
    };

    for &allow in attempts {
        let mut usage = req.usage.clone();
        let mut targets: Vec<usize> = Vec::new();
        for &i in &list {
            let c = &req.candidates[i];
            if !still_valid(req, &usage, c, allow) {
                continue;
            }
            remove(req, &mut usage, c, 1);
            targets.push(i);
            if fits_after(req, &usage, allow) {
                // Fill back: re-add every target but the last, keeping those not needed.
                let mut k = targets.len().saturating_sub(1);
                while k > 0 {
                    k -= 1;
                    let c = &req.candidates[targets[k]];
                    remove(req, &mut usage, c, -1);
                    if fits_after(req, &usage, allow) {
                        targets.swap_remove(k);
                    } else {
                        remove(req, &mut usage, c, 1);
                    }
                }
                return Some(VictimSet {
                    victims: targets,
                    allow_borrowing: allow,
                });
            }
        }
    }
    None
}
