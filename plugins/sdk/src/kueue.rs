//! Kueue's default decisions, as the host's built-in policies make them — the same code,
//! `wasq-kueue` (crates/kueue), read over the SDK's records — for plugins that change only part
//! of a decision (filter candidates, reorder them, fall back to Kueue's choice).
//!
//! - Ordering: [`ordering_needs`], [`sort_key_for`] (admission fair sharing) over [`sort_key`],
//!   and [`order_heads_for`] (fair sharing's tournament, [`fair_order_heads`]) over the classical
//!   [`order_heads`].
//! - Preemption: [`preemption_needs`], [`select_victims`] (classical); the pieces
//!   [`victim_order`], [`borrowing_attempts`], [`candidate_is_valid`] and [`greedy_victims`]
//!   compose into it and into variants. Under fair sharing: [`fair_select_victims`].
//! - Flavor assignment: [`choose_flavor`], [`is_preferred`], [`should_try_next_flavor`].
//! - Placement: [`place`] (`findTopologyAssignment`, BestFit).

use std::cmp::Ordering;

use wasq_kueue::classical::{self, Order, Removal, Tally};
use wasq_kueue::flavors::{self, Policy, Preference};
use wasq_kueue::{candidates, ordering};

use crate::catalog::Catalog;
use crate::flavor_assignment::{FitMode, FlavorOption};
use crate::ordering::{Head, Heads, SortKey};
use crate::preemption::{Candidate, CandidateTable, Request, Victims};
use crate::quota::QuotaView;
use crate::types::{
    BorrowWithinCohort, ClusterQueueId, Fungibility, FungibilityPolicy, FungibilityPreference,
    LocalQueueId, LocalQueueUsage, Needs, NodeId, PreemptionConfig, Quantity, ReclaimWithinCohort,
    WithinClusterQueue, Workload,
};

mod fair_ordering;
mod fair_preemption;
mod placement;
mod reads;

pub use fair_ordering::fair_order_heads;
pub use fair_preemption::fair_select_victims;
pub use placement::place;
use reads::{HeadRecords, Rows};

// ---------------------------------------------------------------------------------------------
// Ordering

/// What Kueue's ordering reads under the catalog's configuration: quota usage of the cohort
/// trees when fair sharing is on (its tournament), LocalQueue usage when admission fair sharing
/// is on; never who workloads are (no `Needs::IDENTITY`).
pub fn ordering_needs(catalog: &Catalog) -> Needs {
    let mut needs = Needs::empty();
    if catalog.fair_sharing.is_some() {
        needs |= Needs::TREE_USAGE;
    }
    if catalog.admission_fair_sharing.is_some() {
        needs |= Needs::LOCAL_QUEUE_USAGE;
    }
    needs
}

/// Kueue's queue order under every configuration: for a workload of a ClusterQueue that uses
/// admission fair sharing ([`Catalog::uses_admission_fair_sharing`]) with a LocalQueue,
/// `(order_bits(LocalQueue usage), -priority, created)` (lower usage first); otherwise
/// [`sort_key`]. `local_queue_usage` is the host's figures for the workload's LocalQueue.
pub fn sort_key_for(
    catalog: &Catalog,
    workload: &Workload,
    local_queue_usage: Option<&LocalQueueUsage>,
) -> SortKey {
    let afs_usage = workload
        .local_queue
        .filter(|_| catalog.uses_admission_fair_sharing(workload.cluster_queue))
        .map(|lq| weighted_local_queue_usage(catalog, lq, local_queue_usage));
    key(ordering::sort_key(
        workload.priority,
        workload.created,
        afs_usage,
    ))
}

fn key([primary, secondary, tertiary]: [i64; 3]) -> SortKey {
    SortKey {
        primary,
        secondary,
        tertiary,
    }
}

/// A LocalQueue's admission-fair-sharing usage: the host's `weighted` figure when it sent one
/// for `lq`; otherwise that of a LocalQueue with nothing consumed (0, or +∞ for a `fair-weight`
/// ≤ 0).
pub fn weighted_local_queue_usage(
    catalog: &Catalog,
    lq: LocalQueueId,
    usage: Option<&LocalQueueUsage>,
) -> f64 {
    match usage.filter(|u| u.local_queue == lq) {
        Some(u) => u.weighted,
        None if catalog.local_queue(lq).is_some_and(|l| l.fair_weight <= 0) => f64::INFINITY,
        None => 0.0,
    }
}

/// A non-negative float as an `i64` with the same order (the IEEE 754 bit patterns of
/// positive numbers, +∞ included, sort like the numbers); zero of either sign, negative numbers
/// and NaN count as 0 (`-0.0`, the sum of no terms, must not sort below `0.0`).
pub fn order_bits(v: f64) -> i64 {
    ordering::order_bits(v)
}

/// Kueue's cycle order under every configuration: [`fair_order_heads`] when fair sharing is on
/// (`usage` must then hold the heads' cohort trees: need [`Needs::TREE_USAGE`]), else the
/// classical [`order_heads`].
pub fn order_heads_for(catalog: &Catalog, heads: &[Head], usage: &QuotaView<'_>) -> Vec<u32> {
    if catalog.fair_sharing.is_some() {
        return fair_order_heads(catalog, heads, usage);
    }
    order_heads(heads)
}

/// Kueue's queue order: higher priority first, then older first: `(-priority, created, 0)`.
pub fn sort_key(workload: &Workload) -> SortKey {
    sort_key_with_priority(workload.priority, workload.created)
}

/// Kueue's queue order for a given effective priority.
pub fn sort_key_with_priority(priority: i64, created: i64) -> SortKey {
    key(ordering::sort_key(priority, created, None))
}

/// Kueue's classical cycle order (without fair sharing): a stable sort of the heads by (second
/// pass first, lower borrowing level, higher priority, older).
pub fn order_heads(heads: &[Head]) -> Vec<u32> {
    order_heads_by_priority(heads, |h| h.priority)
}

/// Kueue's cycle order with the effective priority of each head given by `priority`.
pub fn order_heads_by_priority(heads: &[Head], priority: impl Fn(&Head) -> i64) -> Vec<u32> {
    ordering::cycle_order(&HeadRecords(heads), |i| priority(&heads[i as usize]))
}

/// [`order_heads`] on the heads as the host sends them (the WIT records), without making a
/// [`Head`] of each: the same order.
pub fn order_heads_columns(heads: &Heads<'_>) -> Vec<u32> {
    // The index ends each key, so that the unstable sort keeps equal heads in the host's
    // order, as the stable one of `order_heads` does.
    let mut keyed: Vec<((bool, u32, i64, i64), u32)> = (0..heads.len())
        .map(|i| {
            let h = heads.info(i);
            let key = ordering::cycle_key(
                heads.second_pass(i),
                heads.borrowing_level(i),
                h.priority,
                h.created,
            );
            (key, i as u32)
        })
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, i)| i).collect()
}

// ---------------------------------------------------------------------------------------------
// Preemption

/// What Kueue's preemption reads under the catalog's configuration: quota usage of the
/// preemptor's cohort tree when fair sharing is on (fair sharing's shares); never who
/// workloads are (no `Needs::IDENTITY`).
pub fn preemption_needs(catalog: &Catalog) -> Needs {
    if catalog.fair_sharing.is_some() {
        Needs::TREE_USAGE
    } else {
        Needs::empty()
    }
}

/// Kueue's `CandidatesOrdering` without its admission-fair-sharing rule: evicting first, other
/// ClusterQueues before the preemptor's own (`own`), lower priority first, most recently
/// admitted first, then the workload handle. A total order (see [`candidate_order`] for the
/// whole rule).
pub fn candidates_ordering(a: &Candidate, b: &Candidate, own: ClusterQueueId) -> Ordering {
    let (a, b) = (Rows(std::slice::from_ref(a)), Rows(std::slice::from_ref(b)));
    candidates::compare(&a, 0, &b, 0, own)
}

/// [`candidates_ordering`] of candidates `a` and `b` of a table.
pub fn compare_candidates<C: CandidateTable + ?Sized>(
    t: &C,
    a: usize,
    b: usize,
    own: ClusterQueueId,
) -> Ordering {
    candidates::compare(&Rows(t), a as u32, &Rows(t), b as u32, own)
}

/// Kueue's candidate order of the candidates listed in `subset` (indices into
/// `req.candidates`), exactly as the host's built-in: sorted by [`candidates_ordering`], then
/// each admission-fair-sharing ClusterQueue's candidates re-sorted among the positions that
/// queue holds, LocalQueue usage first. (Kueue compares usage only within one ClusterQueue,
/// which makes its comparator cyclic across queues; this is its order made total.)
///
/// The host sends candidates in this order ([`CandidateTable::in_candidate_order`]), so a
/// subset listed in increasing index is returned as it is.
pub fn candidate_order<C: CandidateTable>(req: &Request<C>, subset: &[u32]) -> Vec<u32> {
    candidates::candidate_order(&Rows(&req.candidates), subset, req.preemptor.cluster_queue)
}

/// The order in which Kueue tries the candidates listed in `subset` (indices into
/// `req.candidates`): evicting ones of each class first, then the rest of each class
/// (hierarchical reclaim, other ClusterQueues, the preemptor's own), each class in
/// [`candidate_order`].
pub fn victim_order<C: CandidateTable>(req: &Request<C>, subset: &[u32]) -> Vec<u32> {
    classical::victim_order(&Rows(&req.candidates), subset, req.preemptor.cluster_queue)
}

/// The borrowing modes Kueue tries, in order, for the candidates in `subset`: `true` allows the
/// preemptor to borrow once the victims are gone.
pub fn borrowing_attempts<C: CandidateTable>(
    catalog: &Catalog,
    req: &Request<C>,
    subset: &[u32],
) -> Vec<bool> {
    let mut present = [false; 3];
    for &i in subset {
        present[usize::from(classical::class(reads_kind(req, i)))] = true;
    }
    attempts_for(catalog, req, present).to_vec()
}

fn reads_kind<C: CandidateTable>(req: &Request<C>, i: u32) -> wasq_kueue::CandidateKind {
    wasq_kueue::Candidates::kind(&Rows(&req.candidates), i)
}

/// [`borrowing_attempts`] given which classes the candidates have (`present[class]`).
fn attempts_for<C: CandidateTable>(
    catalog: &Catalog,
    req: &Request<C>,
    present: [bool; 3],
) -> &'static [bool] {
    let cq = catalog.cluster_queue(req.preemptor.cluster_queue);
    let forbidden =
        cq.is_none_or(|cq| cq.preemption.borrow_within_cohort == BorrowWithinCohort::Never);
    // Read straight from the request's usage: building a whole view for one node is the most
    // expensive part of a call on large cohorts.
    let under_nominal = match cq {
        Some(cq) => req.needs_preemption.iter().all(|&fr| {
            catalog.quota(cq.node, fr).nominal
                > crate::quota::request_usage(catalog, req, cq.node, fr)
        }),
        None => false,
    };
    classical::borrowing_attempts(present, forbidden, under_nominal)
}

/// Kueue's `candidateIsValid` for candidate `i` at the current state of `view`: candidates of
/// the preemptor's own ClusterQueue always are; reclaim-without-borrowing ones are not when the
/// preemptor may borrow; others only while their queue, and every cohort up to (excluding) the
/// lowest common ancestor, are over their quota on the resources that need preemption.
pub fn candidate_is_valid<C: CandidateTable>(
    view: &QuotaView<'_>,
    req: &Request<C>,
    i: u32,
    allow: bool,
) -> bool {
    classical::candidate_is_valid(
        view.catalog(),
        &Rows(&req.candidates),
        i,
        req.preemptor.cluster_queue,
        allow,
        |node| view.within_nominal(node, &req.needs_preemption),
    )
}

/// Whether the preemptor fits at the current state of `view`.
pub fn preemptor_fits<C>(
    view: &QuotaView<'_>,
    req: &Request<C>,
    node: NodeId,
    allow: bool,
) -> bool {
    view.fits(node, &req.requests, allow)
}

/// What a greedy search asks once per candidate, with the request's flavor-resources
/// resolved to the view's columns once per request ([`candidate_is_valid`] and
/// [`preemptor_fits`] otherwise; the same answers).
struct Search {
    /// The cells of the preemptor's node for the requests, with their amounts.
    fits: Option<Vec<(u32, Quantity)>>,
    /// The columns of the flavor-resources that need preemption.
    needs: Option<Vec<(usize, Quantity)>>,
}

impl Search {
    fn new<C: CandidateTable>(view: &QuotaView<'_>, req: &Request<C>, node: NodeId) -> Search {
        let requests = view.columns_of(req.requests.iter().map(|r| (r.fr, r.amount)));
        Search {
            fits: view
                .slot_of(node)
                .zip(requests)
                .map(|(slot, cols)| view.cells_of(slot, &cols)),
            needs: view.columns_of(req.needs_preemption.iter().map(|&fr| (fr, 0))),
        }
    }
}

/// A greedy search's snapshot: a view of the request's usage, built at the first candidate
/// whose validity reads usage (building it is most of what a request costs the plugin besides
/// the search: a request whose every candidate is turned down without reading usage never
/// builds one), and the cells each removal took (`taken[span]` per victim: putting it back
/// and taking it out again walk these alone).
struct Greedy<'c, 'r, C> {
    catalog: &'c Catalog,
    req: &'r Request<C>,
    node: NodeId,
    searching: Option<(QuotaView<'c>, Search)>,
    taken: Vec<(u32, Quantity)>,
}

impl<C: CandidateTable> Removal for Greedy<'_, '_, C> {
    type Taken = (u32, u32);

    #[inline(always)]
    fn is_valid(&mut self, i: u32, allow: bool) -> bool {
        let (req, own) = (self.req, self.req.preemptor.cluster_queue);
        let rows = Rows(&req.candidates);
        if classical::turned_down_without_usage(&rows, i, own, allow) {
            return false;
        }
        let (catalog, node) = (self.catalog, self.node);
        let (view, search) = self.searching.get_or_insert_with(|| {
            let view = QuotaView::from_request_usage(catalog, req);
            let search = Search::new(&view, req, node);
            (view, search)
        });
        match &search.needs {
            Some(cols) => classical::valid_past_kind(catalog, &rows, i, own, |n| {
                view.within_nominal_in(n, cols)
            }),
            None => candidate_is_valid(view, req, i, allow),
        }
    }

    fn take_out(&mut self, i: u32) -> (u32, u32) {
        let start = self.taken.len() as u32;
        if let Some((view, _)) = self.searching.as_mut() {
            view.take_out(&self.req.candidates, i as usize, &mut self.taken);
        }
        (start, self.taken.len() as u32)
    }

    fn put_back(&mut self, &(from, to): &(u32, u32)) {
        if let Some((view, _)) = self.searching.as_mut() {
            view.put_back(&self.taken[from as usize..to as usize]);
        }
    }

    fn take_out_again(&mut self, &(from, to): &(u32, u32)) {
        if let Some((view, _)) = self.searching.as_mut() {
            view.take_out_again(&self.taken[from as usize..to as usize]);
        }
    }

    #[inline(always)]
    fn fits(&self, allow: bool, _victims: &[u32], _but: Option<usize>) -> bool {
        let Some((view, search)) = &self.searching else {
            return false;
        };
        match &search.fits {
            Some(requests) => view.fits_cells(requests, allow),
            None => preemptor_fits(view, self.req, self.node, allow),
        }
    }
}

/// Kueue's greedy search: for each borrowing mode in `attempts`, remove the still-valid
/// candidates of `order` one by one until the preemptor fits, then put back every victim but
/// the last, in reverse, keeping out only those still needed.
#[inline(never)]
pub fn greedy_victims<C: CandidateTable>(
    catalog: &Catalog,
    req: &Request<C>,
    order: &[u32],
    attempts: &[bool],
) -> Option<Victims> {
    let node = catalog.cluster_queue_node(req.preemptor.cluster_queue)?;
    let mut greedy = Greedy {
        catalog,
        req,
        node,
        searching: None,
        taken: Vec::new(),
    };
    let found = classical::remove_until_fit(&mut greedy, order, attempts)?;
    Some(Victims {
        victims: found.victims,
        allow_borrowing: found.allow_borrowing,
    })
}

/// Kueue's victim selection restricted to the candidates in `subset` (indices into
/// `req.candidates`), as if the others were not eligible.
pub fn select_victims_among<C: CandidateTable>(
    catalog: &Catalog,
    req: &Request<C>,
    subset: &[u32],
) -> Option<Victims> {
    let order = candidate_order(req, subset);
    let tally = classical::tally(&Rows(&req.candidates), Order::Listed(&order));
    victims_in_order(catalog, req, order, tally)
}

/// Kueue's classical victim selection (without fair sharing), exactly as the host's built-in
/// policy. Under fair sharing Kueue uses [`fair_select_victims`] instead.
pub fn select_victims<C: CandidateTable>(catalog: &Catalog, req: &Request<C>) -> Option<Victims> {
    let n = req.candidates.len();
    if !req.candidates.in_candidate_order() {
        let all: Vec<u32> = (0..n as u32).collect();
        return select_victims_among(catalog, req, &all);
    }
    // Listed in Kueue's candidate order by the host: the order is the candidates' own.
    let tally = classical::tally(&Rows(&req.candidates), Order::All);
    if !tally.in_groups() {
        return victims_in_order(catalog, req, (0..n as u32).collect(), tally);
    }
    // In groups too, as usual: the search goes through the candidates in index order, read
    // from a list of indices kept from call to call rather than built at each.
    INDICES.with_borrow_mut(|indices| {
        if indices.len() < n {
            indices.extend(indices.len() as u32..n as u32);
        }
        let attempts = attempts_for(catalog, req, tally.classes());
        greedy_victims(catalog, req, &indices[..n], attempts)
    })
}

thread_local! {
    /// 0, 1, 2, …: as many as the largest request had candidates.
    static INDICES: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Kueue's search over `order` (in candidate order) once tallied: the borrowing modes the
/// groups present call for, then the greedy search over the order grouped.
fn victims_in_order<C: CandidateTable>(
    catalog: &Catalog,
    req: &Request<C>,
    order: Vec<u32>,
    tally: Tally,
) -> Option<Victims> {
    let attempts = attempts_for(catalog, req, tally.classes());
    let order = tally.grouped(&Rows(&req.candidates), order);
    greedy_victims(catalog, req, &order, attempts)
}

// ---------------------------------------------------------------------------------------------
// Flavor assignment

/// The SDK's fit mode as `wasq-kueue`'s.
fn mode(mode: FitMode) -> flavors::FitMode {
    match mode {
        FitMode::NoFit => flavors::FitMode::NoFit,
        FitMode::NoPreemptionCandidates => flavors::FitMode::NoPreemptionCandidates,
        FitMode::Preempt => flavors::FitMode::Preempt,
        FitMode::Reclaim => flavors::FitMode::Reclaim,
        FitMode::Fit => flavors::FitMode::Fit,
    }
}

/// A ClusterQueue's fungibility as `wasq-kueue` reads it.
fn fungibility(f: &Fungibility) -> flavors::Fungibility {
    let policy = |p: FungibilityPolicy| match p {
        FungibilityPolicy::MayStopSearch => Policy::MayStopSearch,
        FungibilityPolicy::TryNextFlavor => Policy::TryNextFlavor,
    };
    flavors::Fungibility {
        when_can_borrow: policy(f.when_can_borrow),
        when_can_preempt: policy(f.when_can_preempt),
        preference: match f.preference {
            FungibilityPreference::BorrowingOverPreemption => Preference::BorrowingOverPreemption,
            FungibilityPreference::PreemptionOverBorrowing => Preference::PreemptionOverBorrowing,
        },
    }
}

/// Kueue's `isPreferred(a, b)`: whether (mode, borrowing level) `a` is better than `b`.
pub fn is_preferred(a: (FitMode, u32), b: (FitMode, u32), f: &Fungibility) -> bool {
    flavors::is_preferred((mode(a.0), a.1), (mode(b.0), b.1), &fungibility(f))
}

/// Kueue's `shouldTryNextFlavor` for a flavor's (mode, borrowing level).
pub fn should_try_next_flavor(fit: (FitMode, u32), f: &Fungibility) -> bool {
    flavors::should_try_next_flavor((mode(fit.0), fit.1), &fungibility(f))
}

/// Kueue's flavor choice: scan the options in the ClusterQueue's order, stop at the first one
/// the fungibility rules accept, otherwise take the most preferred one seen.
pub fn choose_flavor(options: &[Option<FlavorOption>], f: &Fungibility) -> Option<u32> {
    let fits = options
        .iter()
        .map(|o| o.as_ref().map(|o| (mode(o.mode), o.borrow_level)));
    flavors::choose_flavor(fits, &fungibility(f)).map(|i| i as u32)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preemption::CandidateKind;
    use crate::testing::{CatalogBuilder, workload};
    use crate::types::{FrAmount, NodeUsage};

    fn amt(fr: u32, amount: i64) -> FrAmount {
        FrAmount { fr, amount }
    }

    fn cand(
        workload: u32,
        cq: u32,
        kind: CandidateKind,
        priority: i64,
        admitted: i64,
    ) -> Candidate {
        Candidate {
            workload,
            cluster_queue: cq,
            kind,
            lca: None,
            priority,
            created: 0,
            admitted,
            requeue_count: 0,
            requeue_reason: None,
            evicting: false,
            usage: Vec::new(),
            annotations: Vec::new(),
            local_queue: None,
            namespace: crate::identity::NO_STRING,
            owner: None,
            labels: Vec::new(),
            local_queue_usage: None,
        }
    }

    fn request(cq: u32, need: i64, candidates: Vec<Candidate>, usage: Vec<(u32, i64)>) -> Request {
        Request {
            preemptor: workload(100, cq, 10, 0),
            requests: vec![amt(0, need)],
            needs_preemption: vec![0],
            candidates,
            usage_kept: false,
            usage: one_resource(&usage),
            tree_usage: Vec::new(),
            now: 0,
        }
    }

    /// The usage of each `(node, amount)` of flavor-resource 0.
    fn one_resource(usage: &[(u32, i64)]) -> Vec<NodeUsage> {
        usage
            .iter()
            .map(|&(node, amount)| NodeUsage {
                node,
                usage: vec![amt(0, amount)],
            })
            .collect()
    }

    /// One ClusterQueue (node 0, cq 0) with nominal 10.
    fn single() -> Catalog {
        CatalogBuilder::new()
            .flavor_resources(1)
            .cluster_queue("cq", None)
            .quota(0, 0, 10, None, None)
            .build()
    }

    #[test]
    fn same_queue_takes_lowest_priority_then_newest() {
        let cat = single();
        let mut a = cand(1, 0, CandidateKind::SameQueue, 1, 10);
        a.usage = vec![amt(0, 4)];
        let mut b = cand(2, 0, CandidateKind::SameQueue, 0, 5);
        b.usage = vec![amt(0, 3)];
        let mut c = cand(3, 0, CandidateKind::SameQueue, 0, 7);
        c.usage = vec![amt(0, 3)];
        let req = request(0, 3, vec![a, b, c], vec![(0, 10)]);
        let v = select_victims(&cat, &req).unwrap();
        // c (priority 0, admitted later) goes first and is enough.
        assert_eq!(v.victims, vec![2]);
        assert!(v.allow_borrowing);
    }

    #[test]
    fn unneeded_victims_are_put_back() {
        let cat = single();
        let mut small = cand(1, 0, CandidateKind::SameQueue, 0, 10);
        small.usage = vec![amt(0, 1)];
        let mut big = cand(2, 0, CandidateKind::SameQueue, 1, 10);
        big.usage = vec![amt(0, 8)];
        let req = request(0, 6, vec![small, big], vec![(0, 9)]);
        // small first (lower priority), not enough; big makes it fit; small is put back.
        let v = select_victims(&cat, &req).unwrap();
        assert_eq!(v.victims, vec![1]);
    }

    #[test]
    fn no_answer_when_nothing_makes_room() {
        let cat = single();
        let mut a = cand(1, 0, CandidateKind::SameQueue, 0, 10);
        a.usage = vec![amt(0, 2)];
        let req = request(0, 11, vec![a], vec![(0, 2)]);
        assert_eq!(select_victims(&cat, &req), None);
    }

    /// cohort(0) <- a(1, cq 0) nominal 5, b(2, cq 1) nominal 5.
    fn pair() -> Catalog {
        CatalogBuilder::new()
            .flavor_resources(1)
            .cohort("cohort", None)
            .cluster_queue("a", Some(0))
            .quota(1, 0, 5, None, None)
            .cluster_queue("b", Some(0))
            .quota(2, 0, 5, None, None)
            .build()
    }

    /// In [`pair`]: b uses 8 (3 borrowed) in four reclaim-without-borrowing candidates of 2,
    /// a uses 2 and needs 3 more within its nominal.
    fn reclaim_from_a_borrowing_lender() -> Request {
        let mk = |w, admitted| {
            let mut c = cand(w, 1, CandidateKind::ReclaimWithoutBorrowing, 0, admitted);
            c.lca = Some(0);
            c.usage = vec![amt(0, 2)];
            c
        };
        request(
            0,
            3,
            vec![mk(1, 1), mk(2, 2), mk(3, 3), mk(4, 4)],
            vec![(0, 10), (1, 2), (2, 8)],
        )
    }

    #[test]
    fn reclaim_stops_once_the_lender_is_back_within_nominal() {
        let cat = pair();
        let req = reclaim_from_a_borrowing_lender();
        let v = select_victims(&cat, &req).unwrap();
        // Newest first: 4, then 3 → b at 4 ≤ 5; a has 5 - 2 = 3.
        assert_eq!(v.victims, vec![3, 2]);
        assert!(!v.allow_borrowing);
    }

    /// While the preemptor may borrow, reclaim-without-borrowing candidates are turned down
    /// (the search then never builds its view); the attempt without borrowing takes them.
    #[test]
    fn reclaim_without_borrowing_waits_for_the_attempt_without_borrowing() {
        let cat = pair();
        let req = reclaim_from_a_borrowing_lender();
        let all: Vec<u32> = (0..4).collect();
        let order = victim_order(&req, &all);
        assert_eq!(greedy_victims(&cat, &req, &order, &[true]), None);
        let v = greedy_victims(&cat, &req, &order, &[true, false]).unwrap();
        assert_eq!((v.victims, v.allow_borrowing), (vec![3, 2], false));
        // The same on the candidates as the host sends them.
        let columns = req.to_columns();
        assert_eq!(greedy_victims(&cat, &columns, &order, &[true]), None);
    }

    /// With kept usage a node's usage crosses once, and again when it changes: later requests
    /// carry only what changed and decide as if they carried every node, search after search
    /// (each search leaves the kept view as it found it).
    #[test]
    fn requests_on_kept_usage_decide_as_with_their_rows() {
        let cat = pair();
        let full = reclaim_from_a_borrowing_lender();
        let expected = select_victims(&cat, &full);
        assert!(expected.is_some());
        let kept = |usage: &[(u32, i64)]| {
            let mut r = full.clone();
            r.usage_kept = true;
            r.usage = one_resource(usage);
            crate::kept::receive(&cat, &r.usage, &r.requests);
            r
        };
        // The first request carries the whole tree, the next ones nothing.
        let first = kept(&[(0, 10), (1, 2), (2, 8)]);
        assert_eq!(select_victims(&cat, &first), expected);
        for _ in 0..3 {
            let later = kept(&[]);
            assert_eq!(select_victims(&cat, &later), expected);
            assert_eq!(select_victims(&cat, &later.to_columns()), expected);
        }
        let later = kept(&[]);
        let mut view = QuotaView::from_request(&cat, &later);
        assert_eq!(
            (view.usage(0, 0), view.usage(1, 0), view.usage(2, 0)),
            (10, 2, 8)
        );
        // Changed through the view: the next view reads the kept usage again.
        view.remove_workload(2, &[amt(0, 8)]);
        assert_eq!(view.usage(2, 0), 0);
        drop(view);
        let view = QuotaView::from_request(&cat, &later);
        assert_eq!((view.usage(0, 0), view.usage(2, 0)), (10, 8));
        drop(view);
        // b gives back 4 (two candidates gone): the usage of b and the cohort changes, and a
        // request carrying only theirs decides as one carrying every node's.
        let mut smaller = full.clone();
        smaller.candidates.truncate(2);
        smaller.usage = one_resource(&[(0, 6), (1, 2), (2, 4)]);
        let expected = select_victims(&cat, &smaller);
        let mut changed = kept(&[(0, 6), (2, 4)]);
        changed.candidates.truncate(2);
        assert_eq!(select_victims(&cat, &changed), expected);
        let view = QuotaView::from_request(&cat, &changed);
        assert_eq!(
            (view.usage(0, 0), view.usage(1, 0), view.usage(2, 0)),
            (6, 2, 4)
        );
    }

    #[test]
    fn reclaim_is_invalid_once_the_lender_is_within_nominal() {
        let cat = pair();
        let mut c = cand(1, 1, CandidateKind::ReclaimWhileBorrowing, 0, 1);
        c.lca = Some(0);
        c.usage = vec![amt(0, 4)];
        // b is within nominal (4 ≤ 5): not a valid reclaim target.
        let req = request(0, 7, vec![c], vec![(0, 4), (1, 0), (2, 4)]);
        assert_eq!(select_victims(&cat, &req), None);
    }

    #[test]
    fn subset_selection_ignores_other_candidates() {
        let cat = single();
        let mut a = cand(1, 0, CandidateKind::SameQueue, 0, 10);
        a.usage = vec![amt(0, 5)];
        let mut b = cand(2, 0, CandidateKind::SameQueue, 1, 10);
        b.usage = vec![amt(0, 5)];
        let req = request(0, 5, vec![a, b], vec![(0, 10)]);
        assert_eq!(select_victims(&cat, &req).unwrap().victims, vec![0]);
        assert_eq!(
            select_victims_among(&cat, &req, &[1]).unwrap().victims,
            vec![1]
        );
        assert_eq!(select_victims_among(&cat, &req, &[]), None);
    }

    #[test]
    fn victim_order_puts_evicting_and_hierarchical_first() {
        let mut same = cand(1, 0, CandidateKind::SameQueue, 0, 0);
        same.evicting = true;
        let other = cand(2, 1, CandidateKind::ReclaimWhileBorrowing, 0, 0);
        let hier = cand(3, 1, CandidateKind::HierarchicalReclaim, 5, 0);
        let low = cand(4, 0, CandidateKind::SameQueue, -1, 0);
        let req = request(0, 1, vec![same, other, hier, low], vec![]);
        assert_eq!(victim_order(&req, &[0, 1, 2, 3]), vec![0, 2, 1, 3]);
    }

    #[test]
    fn columns_and_records_decide_alike() {
        // root(0) <- mid(1) <- a(2, cq 0), b(3, cq 1); root <- c(4, cq 2). Two resources.
        let cat = CatalogBuilder::new()
            .flavor_resources(2)
            .cohort("root", None)
            .cohort("mid", Some(0))
            .cluster_queue("a", Some(1))
            .quota(2, 0, 6, None, None)
            .quota(2, 1, 6, None, None)
            .cluster_queue("b", Some(1))
            .quota(3, 0, 4, Some(2), None)
            .quota(3, 1, 4, None, Some(1))
            .cluster_queue("c", Some(0))
            .quota(4, 0, 5, None, None)
            .quota(4, 1, 5, None, None)
            .build();
        let mut x: u64 = 11;
        let mut next = |m: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let kinds = [
            CandidateKind::SameQueue,
            CandidateKind::ReclaimWithoutBorrowing,
            CandidateKind::ReclaimWhileBorrowing,
            CandidateKind::HierarchicalReclaim,
            CandidateKind::FairSharing,
        ];
        let mut answered = 0;
        for round in 0..300 {
            let n = next(12) as u32;
            let candidates: Vec<Candidate> = (0..n)
                .map(|w| {
                    let cq = next(3) as u32;
                    let mut c = cand(
                        w,
                        cq,
                        kinds[next(5) as usize],
                        next(5) as i64,
                        next(9) as i64,
                    );
                    c.evicting = next(6) == 0;
                    c.lca = (cq != 0).then_some(if cq == 1 { 1 } else { 0 });
                    for fr in 0..2 {
                        if next(3) > 0 {
                            c.usage.push(amt(fr, 1 + next(3) as i64));
                        }
                    }
                    c.local_queue_usage = (round % 3 == 0).then(|| next(4) as f64);
                    c
                })
                .collect();
            let mut req = request(0, 1 + next(6) as i64, candidates, Vec::new());
            req.requests.push(amt(1, next(4) as i64));
            req.needs_preemption = vec![0, 1];
            req.usage = [2, 1, 0, 3, 4]
                .map(|node| NodeUsage {
                    node,
                    usage: (0..2).map(|fr| amt(fr, next(9) as i64)).collect(),
                })
                .to_vec();
            let columns = req.to_columns();
            let all: Vec<u32> = (0..n).collect();
            assert_eq!(candidate_order(&req, &all), candidate_order(&columns, &all));
            // Tallied and grouped from the host's form as from the records (the tally's own
            // rules are `wasq-kueue`'s and tested there).
            let order = candidate_order(&req, &all);
            let (records, cols) = (Rows(&req.candidates), Rows(&columns.candidates));
            let (a, b) = (
                classical::tally(&records, Order::Listed(&order)),
                classical::tally(&cols, Order::Listed(&order)),
            );
            assert_eq!(a, b, "round {round}");
            assert_eq!(
                a.grouped(&records, order.clone()),
                b.grouped(&cols, order.clone()),
                "round {round}"
            );
            assert_eq!(
                victim_order(&req, &all),
                victim_order(&columns, &all),
                "round {round}"
            );
            let v = select_victims(&cat, &req);
            assert_eq!(select_victims(&cat, &columns), v, "round {round}");
            answered += usize::from(v.is_some());
            // As the host sends them: in Kueue's order, which its form then trusts instead of
            // sorting. The same workloads are chosen, in the same order.
            let mut sorted = req.clone();
            sorted.candidates = candidate_order(&req, &all)
                .iter()
                .map(|&i| req.candidates[i as usize].clone())
                .collect();
            let sorted_columns = sorted.to_columns();
            assert!(sorted_columns.candidates.in_candidate_order());
            let chosen = |r: &Request, v: Option<Victims>| {
                v.map(|v| {
                    let w: Vec<u32> = v
                        .victims
                        .iter()
                        .map(|&i| r.candidates[i as usize].workload)
                        .collect();
                    (w, v.allow_borrowing)
                })
            };
            assert_eq!(
                chosen(&sorted, select_victims(&cat, &sorted_columns)),
                chosen(&req, v),
                "round {round}, in order"
            );
        }
        // The rounds exercise both outcomes.
        assert!((30..=270).contains(&answered), "{answered} answered");
    }

    /// The path over the host's heads orders them exactly as the one over `Head`s, ties
    /// included (equal heads keep the host's order).
    #[test]
    fn host_heads_order_as_head_records() {
        let mut x: u64 = 7;
        let mut next = |m: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        for round in 0..200 {
            let n = next(40) as u32;
            let mut cycle = crate::ordering::testing_heads::Cycle::default();
            for w in 0..n {
                let second_pass = next(4) == 0;
                let borrowing_level = next(3) as u32;
                let priority = next(3) as i64 - 1;
                let created = next(4) as i64;
                cycle.head(w, second_pass, borrowing_level, priority, created);
            }
            let heads = cycle.received(&[]);
            let records = crate::ordering::heads_of(heads.clone());
            assert_eq!(
                order_heads_columns(&heads),
                order_heads(&records),
                "round {round}"
            );
        }
    }

    #[test]
    fn candidate_order_is_total_under_admission_fair_sharing() {
        // Kueue's pairwise rule is cyclic here: a < b (usage), b < c (priority), c < a.
        let mut a = cand(0, 1, CandidateKind::FairSharing, 10, 0);
        a.local_queue_usage = Some(5.0);
        let mut b = cand(1, 1, CandidateKind::FairSharing, 0, 0);
        b.local_queue_usage = Some(3.0);
        let c = cand(2, 2, CandidateKind::FairSharing, 5, 0);
        let req = request(9, 1, vec![a, b, c], vec![]);
        assert_eq!(candidate_order(&req, &[0, 1, 2]), vec![0, 2, 1]);
    }
}
