//! Kueue's classical victim selection on the host's records: `wasq-kueue`'s
//! (`classical::select_victims`, the same code the plugin SDK runs), simulated on an overlay of
//! the cycle's usage; and the fit check the host verifies every policy's answer with.

use wasq_kueue::classical::{self, Removal};

use super::reads::{CandidateRows, HostTree};
use crate::api::BorrowWithinCohortPolicy;
use crate::cluster::WorkloadId;
use crate::policy::{
    Candidate, PolicyError, PolicyRef, PreemptionPolicy, PreemptionRequest, VictimSet,
};
use crate::quota::{NodeId, UsageOverlay, UsageRead, UsageWrite};

#[derive(Debug, Clone, Copy, Default)]
pub struct KueuePreemption;

/// Kueue's candidate order of `candidates` for a preemptor of ClusterQueue `own` (indices;
/// `wasq-kueue`'s `candidate_order`, admission fair sharing's rule included).
pub fn candidate_order(candidates: &[Candidate], own: crate::cluster::CqId) -> Vec<usize> {
    let all: Vec<u32> = (0..candidates.len() as u32).collect();
    wasq_kueue::candidates::candidate_order(&CandidateRows::new(candidates), &all, own.0)
        .into_iter()
        .map(|i| i as usize)
        .collect()
}

/// Kueue's `workloadFits`: every request within what the preemptor's queue has available, and
/// without borrowing unless allowed; with TAS podSets, also a placement on the leaf capacity
/// left once `victims` (indices into the candidates, those removed from `usage`) are gone.
pub fn fits_after(
    req: &PreemptionRequest<'_>,
    usage: &impl UsageRead,
    allow_borrowing: bool,
    victims: &[usize],
) -> bool {
    fits_without(req, usage, allow_borrowing, || {
        victims.iter().map(|&i| req.candidates[i].workload)
    })
}

/// [`fits_after`] with the workloads gone listed by `gone` (made only for a preemptor with TAS
/// podSets: a fill-back over a hundred victims would otherwise make and drop a list per step).
fn fits_without<I: Iterator<Item = WorkloadId>>(
    req: &PreemptionRequest<'_>,
    usage: &impl UsageRead,
    allow_borrowing: bool,
    gone: impl FnOnce() -> I,
) -> bool {
    let quota = req.requests.iter().all(|&(fr, v)| {
        (allow_borrowing || !req.tree.borrowing_with(usage, req.node, fr, v))
            && v <= req.tree.available(usage, req.node, fr)
    });
    quota
        && req.topology.is_none_or(|t| {
            let gone: Vec<WorkloadId> = gone().collect();
            t.fits_without(&gone)
        })
}

/// [`fits_without`] the victims at `victims` (indices into the candidates) but the one at
/// position `but`.
pub(super) fn fits_without_victims(
    req: &PreemptionRequest<'_>,
    usage: &impl UsageRead,
    allow_borrowing: bool,
    victims: &[u32],
    but: Option<usize>,
) -> bool {
    fits_without(req, usage, allow_borrowing, || {
        victims
            .iter()
            .enumerate()
            .filter(move |&(m, _)| Some(m) != but)
            .map(|(_, &i)| req.candidates[i as usize].workload)
    })
}

/// Takes candidate `c`'s quota out of `usage` (`sign` = 1) or puts it back (`sign` = -1).
pub(crate) fn remove_candidate(
    req: &PreemptionRequest<'_>,
    usage: &mut impl UsageWrite,
    c: &Candidate,
    sign: i64,
) {
    for &(fr, v) in &c.usage {
        req.tree.add_usage(usage, c.node, fr, -sign * v);
    }
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

/// The classical search's snapshot: an overlay of the request's usage.
struct Overlay<'r, 'a> {
    req: &'r PreemptionRequest<'a>,
    tree: HostTree<'a>,
    rows: CandidateRows<'r>,
    usage: UsageOverlay<'a>,
}

impl Removal for Overlay<'_, '_> {
    type Taken = u32;

    fn is_valid(&mut self, i: u32, allow_borrowing: bool) -> bool {
        let (req, usage) = (self.req, &self.usage);
        classical::candidate_is_valid(
            &self.tree,
            &self.rows,
            i,
            req.cluster_queue.0,
            allow_borrowing,
            |node| {
                req.tree
                    .within_nominal(usage, NodeId(node), &req.needs_preemption)
            },
        )
    }

    fn take_out(&mut self, i: u32) -> u32 {
        remove_candidate(
            self.req,
            &mut self.usage,
            &self.req.candidates[i as usize],
            1,
        );
        i
    }

    fn put_back(&mut self, &i: &u32) {
        remove_candidate(
            self.req,
            &mut self.usage,
            &self.req.candidates[i as usize],
            -1,
        );
    }

    fn take_out_again(&mut self, &i: &u32) {
        self.take_out(i);
    }

    fn fits(&self, allow_borrowing: bool, victims: &[u32], but: Option<usize>) -> bool {
        fits_without_victims(self.req, &self.usage, allow_borrowing, victims, but)
    }
}

/// Kueue's victim selection: fair sharing's when the request carries its strategies, else the
/// classical one.
pub fn select_victims(req: &PreemptionRequest<'_>) -> Option<VictimSet> {
    if let Some(strategies) = req.fair_sharing {
        return super::fair_preemption::select_victims(req, strategies);
    }
    // The candidates come in Kueue's candidate order (`PreemptionRequest::candidates`), as
    // the scheduler promises a plugin (`request.candidates`, which the SDK trusts in the same
    // way): sorting them again would only confirm it.
    let all: Vec<u32> = (0..req.candidates.len() as u32).collect();
    debug_assert_eq!(
        candidate_order(&req.candidates, req.cluster_queue),
        (0..req.candidates.len()).collect::<Vec<_>>(),
        "candidates out of Kueue's candidate order"
    );
    let rows = CandidateRows {
        rows: &req.candidates,
        in_order: true,
    };
    let forbidden = req.config.borrow_within_cohort == BorrowWithinCohortPolicy::Never;
    let under_nominal = req
        .needs_preemption
        .iter()
        .all(|&fr| req.tree.quota(req.node, fr).nominal > req.usage.get(req.node, fr));
    let mut overlay = Overlay {
        req,
        tree: HostTree {
            tree: req.tree,
            cluster: req.cluster,
        },
        rows,
        usage: UsageOverlay::new(req.usage),
    };
    let attempts = |classes| classical::borrowing_attempts(classes, forbidden, under_nominal);
    let found =
        classical::select_victims(&rows, &all, req.cluster_queue.0, attempts, &mut overlay)?;
    Some(VictimSet {
        victims: found.victims.into_iter().map(|i| i as usize).collect(),
        allow_borrowing: found.allow_borrowing,
    })
}
