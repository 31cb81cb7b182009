//! Kueue's default decisions, as the host's built-in policies make them, for plugins that change
//! only part of a decision (filter candidates, reorder them, fall back to Kueue's choice).
//!
//! - Ordering: [`sort_key`] and [`order_heads`].
//! - Preemption: [`select_victims`]; the pieces [`victim_order`], [`borrowing_attempts`],
//!   [`candidate_is_valid`] and [`greedy_victims`] compose into it and into variants.
//! - Flavor assignment: [`choose_flavor`], [`is_preferred`], [`should_try_next_flavor`].

use std::cmp::Ordering;

use crate::catalog::Catalog;
use crate::flavor_assignment::{FitMode, FlavorOption};
use crate::ordering::{Head, SortKey};
use crate::preemption::{Candidate, CandidateKind, Request, Victims};
use crate::quota::QuotaView;
use crate::types::{
    BorrowWithinCohort, ClusterQueueId, Fungibility, FungibilityPolicy, FungibilityPreference,
    NodeId, PreemptionConfig, ReclaimWithinCohort, WithinClusterQueue, Workload,
};

// ---------------------------------------------------------------------------------------------
// Ordering

/// Kueue's queue order: higher priority first, then older first: `(-priority, created, 0)`.
pub fn sort_key(workload: &Workload) -> SortKey {
    sort_key_with_priority(workload.priority, workload.created)
}

/// Kueue's queue order for a given effective priority.
pub fn sort_key_with_priority(priority: i64, created: i64) -> SortKey {
    SortKey {
        primary: priority.wrapping_neg(),
        secondary: created,
        tertiary: 0,
    }
}

/// Kueue's cycle order: a stable sort of the heads by (second pass first, lower borrowing
/// level, higher priority, older).
pub fn order_heads(heads: &[Head]) -> Vec<u32> {
    order_heads_by_priority(heads, |h| h.priority)
}

/// Kueue's cycle order with the effective priority of each head given by `priority`.
pub fn order_heads_by_priority(heads: &[Head], priority: impl Fn(&Head) -> i64) -> Vec<u32> {
    let mut order: Vec<u32> = (0..heads.len() as u32).collect();
    order.sort_by_key(|&i| {
        let h = &heads[i as usize];
        (
            !h.has_reservation,
            h.borrow_level,
            priority(h).wrapping_neg(),
            h.created,
        )
    });
    order
}

// ---------------------------------------------------------------------------------------------
// Preemption

/// Kueue's `CandidatesOrdering`: evicting first, other ClusterQueues before the preemptor's
/// own (`own`), lower priority first, most recently admitted first, then the workload handle.
pub fn candidates_ordering(a: &Candidate, b: &Candidate, own: ClusterQueueId) -> Ordering {
    b.evicting
        .cmp(&a.evicting)
        .then_with(|| (a.cluster_queue == own).cmp(&(b.cluster_queue == own)))
        .then_with(|| a.priority.cmp(&b.priority))
        .then_with(|| b.admitted.cmp(&a.admitted))
        .then_with(|| a.workload.cmp(&b.workload))
}

/// Kueue's grouping of candidates: hierarchical reclaim, then other reclaim, then same queue.
fn class(kind: CandidateKind) -> u8 {
    match kind {
        CandidateKind::HierarchicalReclaim => 0,
        CandidateKind::ReclaimWithoutBorrowing | CandidateKind::ReclaimWhileBorrowing => 1,
        CandidateKind::SameQueue => 2,
    }
}

/// The order in which Kueue tries the candidates listed in `subset` (indices into
/// `req.candidates`): evicting ones of each class first, then the rest of each class, each
/// class in [`candidates_ordering`].
pub fn victim_order(req: &Request, subset: &[u32]) -> Vec<u32> {
    let own = req.preemptor.cluster_queue;
    let mut order = subset.to_vec();
    order.sort_by(|&a, &b| {
        candidates_ordering(
            &req.candidates[a as usize],
            &req.candidates[b as usize],
            own,
        )
    });
    order.sort_by_key(|&i| {
        let c = &req.candidates[i as usize];
        (!c.evicting, class(c.kind))
    });
    order
}

/// The borrowing modes Kueue tries, in order, for the candidates in `subset`: `true` allows the
/// preemptor to borrow once the victims are gone.
pub fn borrowing_attempts(catalog: &Catalog, req: &Request, subset: &[u32]) -> Vec<bool> {
    let classes = || {
        subset
            .iter()
            .map(|&i| class(req.candidates[i as usize].kind))
    };
    let no_hierarchical = !classes().any(|c| c == 0);
    let no_other = !classes().any(|c| c < 2);
    let cq = catalog.cluster_queue(req.preemptor.cluster_queue);
    let forbidden =
        cq.is_none_or(|cq| cq.preemption.borrow_within_cohort == BorrowWithinCohort::Never);
    let under_nominal = match cq {
        Some(cq) => {
            let view = QuotaView::from_request(catalog, req);
            req.needs_preemption
                .iter()
                .all(|&fr| view.quota(cq.node, fr).nominal > view.usage(cq.node, fr))
        }
        None => false,
    };
    if no_other || (forbidden && !under_nominal) {
        vec![true]
    } else if forbidden && no_hierarchical {
        vec![false, true]
    } else {
        vec![true, false]
    }
}

/// Kueue's `candidateIsValid` at the current state of `view`: candidates of the preemptor's own
/// ClusterQueue always are; reclaim-without-borrowing ones are not when the preemptor may
/// borrow; others only while their queue, and every cohort up to (excluding) the lowest common
/// ancestor, are over their quota on the resources that need preemption.
pub fn candidate_is_valid(view: &QuotaView<'_>, req: &Request, c: &Candidate, allow: bool) -> bool {
    if c.cluster_queue == req.preemptor.cluster_queue {
        return true;
    }
    if allow && c.kind == CandidateKind::ReclaimWithoutBorrowing {
        return false;
    }
    let catalog = view.catalog();
    let Some(node) = catalog.cluster_queue_node(c.cluster_queue) else {
        return false;
    };
    if view.within_nominal(node, &req.needs_preemption) {
        return false;
    }
    for ancestor in catalog.ancestors(node) {
        if Some(ancestor) == c.lca {
            break;
        }
        if view.within_nominal(ancestor, &req.needs_preemption) {
            return false;
        }
    }
    true
}

/// Whether the preemptor fits at the current state of `view`.
pub fn preemptor_fits(view: &QuotaView<'_>, req: &Request, node: NodeId, allow: bool) -> bool {
    view.fits(node, &req.requests, allow)
}

/// Kueue's greedy search: for each borrowing mode in `attempts`, remove the still-valid
/// candidates of `order` one by one until the preemptor fits, then put back every victim but
/// the last, in reverse, keeping out only those still needed.
pub fn greedy_victims(
    catalog: &Catalog,
    req: &Request,
    order: &[u32],
    attempts: &[bool],
) -> Option<Victims> {
    let node = catalog.cluster_queue_node(req.preemptor.cluster_queue)?;
    let initial = QuotaView::from_request(catalog, req);
    for &allow in attempts {
        let mut view = initial.clone();
        let mut targets: Vec<u32> = Vec::new();
        for &i in order {
            let c = &req.candidates[i as usize];
            if !candidate_is_valid(&view, req, c, allow) {
                continue;
            }
            view.remove_candidate(c);
            targets.push(i);
            if preemptor_fits(&view, req, node, allow) {
                let mut k = targets.len().saturating_sub(1);
                while k > 0 {
                    k -= 1;
                    let c = &req.candidates[targets[k] as usize];
                    view.restore_candidate(c);
                    if preemptor_fits(&view, req, node, allow) {
                        targets.swap_remove(k);
                    } else {
                        view.remove_candidate(c);
                    }
                }
                return Some(Victims {
                    victims: targets,
                    allow_borrowing: allow,
                });
            }
        }
    }
    None
}

/// Kueue's victim selection restricted to the candidates in `subset` (indices into
/// `req.candidates`), as if the others were not eligible.
pub fn select_victims_among(catalog: &Catalog, req: &Request, subset: &[u32]) -> Option<Victims> {
    let order = victim_order(req, subset);
    let attempts = borrowing_attempts(catalog, req, subset);
    greedy_victims(catalog, req, &order, &attempts)
}

/// Kueue's victim selection, exactly as the host's built-in policy.
pub fn select_victims(catalog: &Catalog, req: &Request) -> Option<Victims> {
    let all: Vec<u32> = (0..req.candidates.len() as u32).collect();
    select_victims_among(catalog, req, &all)
}

// ---------------------------------------------------------------------------------------------
// Flavor assignment

fn rank(mode: FitMode) -> u8 {
    match mode {
        FitMode::NoFit => 0,
        FitMode::NoPreemptionCandidates => 1,
        FitMode::Preempt => 2,
        FitMode::Reclaim => 3,
        FitMode::Fit => 4,
    }
}

/// Kueue's `isPreferred(a, b)`: whether (mode, borrowing level) `a` is better than `b`.
pub fn is_preferred(a: (FitMode, u32), b: (FitMode, u32), f: &Fungibility) -> bool {
    if a.0 == FitMode::NoFit {
        return false;
    }
    if b.0 == FitMode::NoFit {
        return true;
    }
    let a_none = a.0 == FitMode::NoPreemptionCandidates;
    let b_none = b.0 == FitMode::NoPreemptionCandidates;
    if a_none != b_none {
        return !a_none;
    }
    match f.preference {
        FungibilityPreference::BorrowingOverPreemption => {
            if a.0 != b.0 {
                rank(a.0) > rank(b.0)
            } else {
                a.1 < b.1
            }
        }
        FungibilityPreference::PreemptionOverBorrowing => {
            if a.1 != b.1 {
                a.1 < b.1
            } else {
                rank(a.0) > rank(b.0)
            }
        }
    }
}

/// Kueue's `shouldTryNextFlavor` for a flavor's (mode, borrowing level).
pub fn should_try_next_flavor(mode: (FitMode, u32), f: &Fungibility) -> bool {
    match mode.0 {
        FitMode::NoFit | FitMode::NoPreemptionCandidates => true,
        FitMode::Preempt | FitMode::Reclaim
            if f.when_can_preempt == FungibilityPolicy::TryNextFlavor =>
        {
            true
        }
        _ => mode.1 > 0 && f.when_can_borrow == FungibilityPolicy::TryNextFlavor,
    }
}

/// Kueue's flavor choice: scan the options in the ClusterQueue's order, stop at the first one
/// the fungibility rules accept, otherwise take the most preferred one seen.
pub fn choose_flavor(options: &[Option<FlavorOption>], f: &Fungibility) -> Option<u32> {
    let mut best: Option<u32> = None;
    let mut best_mode = (FitMode::NoFit, u32::MAX);
    for (i, option) in options.iter().enumerate() {
        let Some(option) = option else { continue };
        let mode = (option.mode, option.borrow_level);
        if !should_try_next_flavor(mode, f) {
            return Some(i as u32);
        }
        if is_preferred(mode, best_mode, f) {
            best = Some(i as u32);
            best_mode = mode;
        }
    }
    best
}

/// The fungibility settings of a ClusterQueue; Kueue's defaults when it is unknown.
pub fn fungibility_of(catalog: &Catalog, cq: ClusterQueueId) -> Fungibility {
    catalog
        .cluster_queue(cq)
        .map(|cq| cq.fungibility)
        .unwrap_or_else(default_fungibility)
}

/// Kueue's defaults for `spec.preemption`.
pub fn default_preemption() -> PreemptionConfig {
    PreemptionConfig {
        within_cluster_queue: WithinClusterQueue::Never,
        reclaim_within_cohort: ReclaimWithinCohort::Never,
        borrow_within_cohort: BorrowWithinCohort::Never,
        max_priority_threshold: None,
    }
}

/// Kueue's defaults for `spec.flavorFungibility`.
pub fn default_fungibility() -> Fungibility {
    Fungibility {
        when_can_borrow: FungibilityPolicy::MayStopSearch,
        when_can_preempt: FungibilityPolicy::TryNextFlavor,
        preference: FungibilityPreference::BorrowingOverPreemption,
    }
}
