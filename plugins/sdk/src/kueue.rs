//! Kueue's default decisions, as the host's built-in policies make them, for plugins that change
//! only part of a decision (filter candidates, reorder them, fall back to Kueue's choice).
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

use crate::catalog::Catalog;
use crate::flavor_assignment::{FitMode, FlavorOption};
use crate::ordering::{Head, Heads, SortKey};
use crate::preemption::{Candidate, CandidateKind, CandidateTable, Request, Victims};
use crate::quota::QuotaView;
use crate::types::{
    BorrowWithinCohort, ClusterQueueId, Fungibility, FungibilityPolicy, FungibilityPreference,
    LocalQueueId, LocalQueueUsage, Needs, NodeId, PreemptionConfig, Quantity, ReclaimWithinCohort,
    WithinClusterQueue, Workload,
};

mod fair_ordering;
mod fair_preemption;
mod placement;

pub use fair_ordering::fair_order_heads;
pub use fair_preemption::fair_select_victims;
pub use placement::place;

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
    if let Some(lq) = workload.local_queue
        && catalog.uses_admission_fair_sharing(workload.cluster_queue)
    {
        let usage = weighted_local_queue_usage(catalog, lq, local_queue_usage);
        return SortKey {
            primary: order_bits(usage),
            secondary: workload.priority.wrapping_neg(),
            tertiary: workload.created,
        };
    }
    sort_key(workload)
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
    if v > 0.0 { v.to_bits() as i64 } else { 0 }
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
    SortKey {
        primary: priority.wrapping_neg(),
        secondary: created,
        tertiary: 0,
    }
}

/// Kueue's classical cycle order (without fair sharing): a stable sort of the heads by (second
/// pass first, lower borrowing level, higher priority, older).
pub fn order_heads(heads: &[Head]) -> Vec<u32> {
    order_heads_by_priority(heads, |h| h.priority)
}

/// Kueue's cycle order with the effective priority of each head given by `priority`.
pub fn order_heads_by_priority(heads: &[Head], priority: impl Fn(&Head) -> i64) -> Vec<u32> {
    let mut order: Vec<u32> = (0..heads.len() as u32).collect();
    // Stable: equal heads keep the host's order.
    order.sort_by_cached_key(|&i| {
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

/// [`order_heads`] on the heads as the host sends them (the WIT records), without making a
/// [`Head`] of each: the same order.
pub fn order_heads_columns(heads: &Heads<'_>) -> Vec<u32> {
    // The index ends each key, so that the unstable sort keeps equal heads in the host's
    // order, as the stable one of `order_heads` does.
    let mut keyed: Vec<((bool, u32, i64, i64), u32)> = (0..heads.len())
        .map(|i| {
            let h = heads.info(i);
            let key = (
                !heads.second_pass(i),
                heads.borrowing_level(i),
                h.priority.wrapping_neg(),
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
    compare_across(std::slice::from_ref(a), 0, std::slice::from_ref(b), 0, own)
}

/// [`candidates_ordering`] of candidates `a` and `b` of a table.
pub fn compare_candidates<C: CandidateTable + ?Sized>(
    t: &C,
    a: usize,
    b: usize,
    own: ClusterQueueId,
) -> Ordering {
    compare_across(t, a, t, b, own)
}

/// [`candidates_ordering`] of candidate `a` of table `ta` and candidate `b` of table `tb`.
fn compare_across<A: CandidateTable + ?Sized, B: CandidateTable + ?Sized>(
    ta: &A,
    a: usize,
    tb: &B,
    b: usize,
    own: ClusterQueueId,
) -> Ordering {
    order_key(ta, a, own).cmp(&order_key(tb, b, own))
}

/// [`candidates_ordering`] as a sort key, smallest first: not evicting, in the preemptor's own
/// queue, priority, admission time reversed (`!t` orders the other way round without
/// overflow), workload handle.
type OrderKey = (bool, bool, i64, i64, u32);

fn order_key<C: CandidateTable + ?Sized>(t: &C, i: usize, own: ClusterQueueId) -> OrderKey {
    (
        !t.evicting(i),
        t.cluster_queue(i) == own,
        t.priority(i),
        !t.admitted(i),
        t.workload(i),
    )
}

/// The end of Kueue's candidate order: lower priority first, most recently admitted first,
/// then the workload handle.
fn by_priority_then_recency<C: CandidateTable + ?Sized>(t: &C, a: usize, b: usize) -> Ordering {
    t.priority(a)
        .cmp(&t.priority(b))
        .then_with(|| t.admitted(b).cmp(&t.admitted(a)))
        .then_with(|| t.workload(a).cmp(&t.workload(b)))
}

/// Within one ClusterQueue under admission fair sharing: evicting first, then LocalQueues with
/// more usage first (no usage counts as 0), then as [`candidates_ordering`].
fn within_queue<C: CandidateTable + ?Sized>(t: &C, a: usize, b: usize) -> Ordering {
    let usage = |i: usize| t.local_queue_usage(i).unwrap_or(0.0);
    t.evicting(b)
        .cmp(&t.evicting(a))
        .then_with(|| usage(b).total_cmp(&usage(a)))
        .then_with(|| by_priority_then_recency(t, a, b))
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
    let own = req.preemptor.cluster_queue;
    let t = &req.candidates;
    if t.in_candidate_order() && subset.is_sorted() {
        return subset.to_vec();
    }
    let key = |i: u32| order_key(t, i as usize, own);
    // The host sends the candidates in this order: one pass confirms it (the stable sort
    // below would keep such a list as it is), and only a list out of order is sorted, with
    // keys computed once per candidate.
    let mut keys = subset.iter().map(|&i| key(i));
    let in_order = keys.next().is_none_or(|first| {
        keys.try_fold(first, |prev, k| (prev <= k).then_some(k))
            .is_some()
    });
    let mut order: Vec<u32> = if in_order {
        subset.to_vec()
    } else {
        let mut keyed: Vec<(OrderKey, u32)> = subset.iter().map(|&i| (key(i), i)).collect();
        keyed.sort_by_key(|k| k.0);
        keyed.into_iter().map(|(_, i)| i).collect()
    };
    let mut queues: Vec<ClusterQueueId> = order
        .iter()
        .filter(|&&i| t.local_queue_usage(i as usize).is_some())
        .map(|&i| t.cluster_queue(i as usize))
        .collect();
    queues.sort_unstable();
    queues.dedup();
    for cq in queues {
        let positions: Vec<usize> = (0..order.len())
            .filter(|&p| t.cluster_queue(order[p] as usize) == cq)
            .collect();
        let mut members: Vec<u32> = positions.iter().map(|&p| order[p]).collect();
        members.sort_by(|&a, &b| within_queue(t, a as usize, b as usize));
        for (p, m) in positions.into_iter().zip(members) {
            order[p] = m;
        }
    }
    order
}

/// Kueue's grouping of candidates: hierarchical reclaim, then other ClusterQueues (reclaim,
/// fair sharing), then same queue.
const fn class(kind: CandidateKind) -> u8 {
    match kind {
        CandidateKind::HierarchicalReclaim => 0,
        CandidateKind::ReclaimWithoutBorrowing
        | CandidateKind::ReclaimWhileBorrowing
        | CandidateKind::FairSharing => 1,
        CandidateKind::SameQueue => 2,
    }
}

/// The order in which Kueue tries the candidates listed in `subset` (indices into
/// `req.candidates`): evicting ones of each class first, then the rest of each class, each
/// class in [`candidate_order`].
pub fn victim_order<C: CandidateTable>(req: &Request<C>, subset: &[u32]) -> Vec<u32> {
    let order = candidate_order(req, subset);
    tally(req, Order::Listed(&order)).grouped(req, order)
}

/// What the search must know of the candidates of an order before reading usage: which of
/// Kueue's six groups (evicting or not × [`class`]) have candidates, and whether the order
/// lists the groups in turn already (as the host's candidate order usually does). One pass
/// that keeps two integers: the group of each candidate is computed again only when the
/// order must be regrouped.
#[inline(never)]
fn tally<C: CandidateTable>(req: &Request<C>, order: Order<'_>) -> Tally {
    let t = &req.candidates;
    // `(seen, behind)`, as `note` keeps them.
    let mut state = (0u32, 0u32);
    match order {
        Order::All => (0..t.len()).for_each(|i| note(&mut state, group_of(t, i))),
        Order::Listed(order) => {
            for &i in order {
                if (i as usize) < t.len() {
                    note(&mut state, group_of(t, i as usize));
                }
            }
        }
    }
    Tally {
        present: state.0 as u8,
        in_groups: state.1 == 0,
    }
}

/// Adds a candidate of `group` to a tally's `(seen, behind)`: bit `g` of `seen` is set once
/// group `g` has a candidate; `behind` gets a bit whenever a candidate's group comes after a
/// greater one (so the order is not in groups).
#[inline(always)]
fn note(state: &mut (u32, u32), group: u8) {
    state.1 |= state.0 >> (group + 1);
    state.0 |= 1 << group;
}

/// The candidates an order lists.
#[derive(Clone, Copy)]
enum Order<'a> {
    /// Every candidate, in index order.
    All,
    /// These (indices into the candidates), in this order.
    Listed(&'a [u32]),
}

/// Candidate `i`'s group in Kueue's victim order: evicting ones of each [`class`] first.
#[inline(always)]
fn group_of<C: CandidateTable>(t: &C, i: usize) -> u8 {
    u8::from(!t.evicting(i)) * 3 + class(t.kind(i))
}

/// What [`tally`] finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tally {
    /// Bit `g` set when group `g` has a candidate.
    present: u8,
    /// Whether the order tallied lists the groups in turn.
    in_groups: bool,
}

impl Tally {
    /// Which [`class`]es have candidates, evicting or not.
    fn classes(&self) -> [bool; 3] {
        [0, 1, 2].map(|c| self.present & (1 << c | 1 << (c + 3)) != 0)
    }

    /// The tallied `order` stably partitioned into the six groups, counted rather than sorted
    /// (group `g` starts where the groups before it end); as it is when already in groups.
    fn grouped<C: CandidateTable>(&self, req: &Request<C>, order: Vec<u32>) -> Vec<u32> {
        if self.in_groups {
            return order;
        }
        let t = &req.candidates;
        // A candidate outside the table (which the tally skipped) reads as group 0.
        let groups: Vec<u8> = order
            .iter()
            .map(|&i| match i as usize {
                i if i < t.len() => group_of(t, i),
                _ => 0,
            })
            .collect();
        let mut start = [0usize; 6];
        for &g in &groups {
            if let Some(s) = start.get_mut(usize::from(g) + 1) {
                *s += 1;
            }
        }
        for g in 1..start.len() {
            start[g] += start[g - 1];
        }
        let mut out = vec![0; order.len()];
        for (&i, &g) in order.iter().zip(&groups) {
            let at = &mut start[usize::from(g)];
            out[*at] = i;
            *at += 1;
        }
        out
    }
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
        present[usize::from(class(req.candidates.kind(i as usize)))] = true;
    }
    attempts_for(catalog, req, present).to_vec()
}

/// [`borrowing_attempts`] given which classes the candidates have (`present[class]`): one of
/// three constant lists, so that a search allocates none.
fn attempts_for<C: CandidateTable>(
    catalog: &Catalog,
    req: &Request<C>,
    present: [bool; 3],
) -> &'static [bool] {
    let no_hierarchical = !present[0];
    let no_other = !present[0] && !present[1];
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
    if no_other || (forbidden && !under_nominal) {
        &[true]
    } else if forbidden && no_hierarchical {
        &[false, true]
    } else {
        &[true, false]
    }
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
    !turned_down_without_usage(req, i, allow)
        && valid_past_kind(view, req, i, &|node| {
            view.within_nominal(node, &req.needs_preemption)
        })
}

/// Whether [`candidate_is_valid`] turns candidate `i` down without reading usage: a
/// reclaim-without-borrowing candidate of another ClusterQueue while the preemptor may borrow.
#[inline(always)]
fn turned_down_without_usage<C: CandidateTable>(req: &Request<C>, i: u32, allow: bool) -> bool {
    let (t, i) = (&req.candidates, i as usize);
    allow
        && t.kind(i) == CandidateKind::ReclaimWithoutBorrowing
        && t.cluster_queue(i) != req.preemptor.cluster_queue
}

/// Whether a node is within its quota on the resources that need preemption, as
/// [`valid_past_kind`] asks it twice: a closure, or the columns a search resolved
/// ([`NeedsIn`]), whose check is inlined at both places.
trait WithinNominal {
    fn within_nominal(&self, node: NodeId) -> bool;
}

impl<F: Fn(NodeId) -> bool> WithinNominal for F {
    fn within_nominal(&self, node: NodeId) -> bool {
        self(node)
    }
}

/// The flavor-resources that need preemption as a view's columns.
struct NeedsIn<'v, 'c> {
    view: &'v QuotaView<'c>,
    cols: &'v [(usize, Quantity)],
}

impl WithinNominal for NeedsIn<'_, '_> {
    #[inline(always)]
    fn within_nominal(&self, node: NodeId) -> bool {
        self.view.within_nominal_in(node, self.cols)
    }
}

/// [`candidate_is_valid`] of a candidate [`turned_down_without_usage`] did not turn down, with
/// `nominal` answering whether a node is within its quota on the resources that need
/// preemption.
#[inline(always)]
fn valid_past_kind<C: CandidateTable>(
    view: &QuotaView<'_>,
    req: &Request<C>,
    i: u32,
    nominal: &impl WithinNominal,
) -> bool {
    let (t, i) = (&req.candidates, i as usize);
    let cq = t.cluster_queue(i);
    if cq == req.preemptor.cluster_queue {
        return true;
    }
    let catalog = view.catalog();
    let Some(node) = catalog.cluster_queue_node(cq) else {
        return false;
    };
    if nominal.within_nominal(node) {
        return false;
    }
    let lca = t.lca(i);
    let mut ancestors = catalog.ancestors(node);
    // The parent before any loop: it is usually the lowest common ancestor, and each loop the
    // guest enters costs an epoch check (`peeled`).
    let parent = ancestors.next();
    if parent.is_none() || parent == lca {
        return true;
    }
    for ancestor in parent.into_iter().chain(ancestors) {
        if Some(ancestor) == lca {
            break;
        }
        if nominal.within_nominal(ancestor) {
            return false;
        }
    }
    true
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

/// What [`greedy_victims`] asks once per candidate, with the request's flavor-resources
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

    #[inline(always)]
    fn fits<C>(&self, view: &QuotaView<'_>, req: &Request<C>, node: NodeId, allow: bool) -> bool {
        match &self.fits {
            Some(requests) => view.fits_cells(requests, allow),
            None => preemptor_fits(view, req, node, allow),
        }
    }

    fn is_valid<C: CandidateTable>(
        &self,
        view: &QuotaView<'_>,
        req: &Request<C>,
        i: u32,
        allow: bool,
    ) -> bool {
        match &self.needs {
            Some(needs) => valid_past_kind(view, req, i, &NeedsIn { view, cols: needs }),
            None => candidate_is_valid(view, req, i, allow),
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
    let t = &req.candidates;
    // The view is built at the first candidate whose validity reads usage (building it is
    // most of what a request costs the plugin besides the search): a request whose every
    // candidate is turned down without reading usage never builds one.
    let mut searching: Option<Searching<'_>> = None;
    let mut targets: Vec<u32> = Vec::new();
    // Per target, the cells and amounts taking it out took (`taken[spans[k]]`): putting it
    // back and taking it out again in the fill-back walk these alone.
    let mut spans: Vec<(u32, u32)> = Vec::new();
    let mut taken: Vec<(u32, Quantity)> = Vec::new();
    for (attempt, &allow) in attempts.iter().enumerate() {
        if attempt > 0 {
            // Back to the request's usage: the attempt before found no fit.
            if let Some(s) = searching.as_mut() {
                put_back_all(&mut s.view, &spans, &taken);
            }
            targets.clear();
            spans.clear();
            taken.clear();
        }
        for &i in order {
            if turned_down_without_usage(req, i, allow) {
                continue;
            }
            let Searching { view, search, .. } =
                searching.get_or_insert_with(|| Searching::new(catalog, req, node));
            if !search.is_valid(view, req, i, allow) {
                continue;
            }
            if targets.is_empty() {
                // Once, to their largest size: a search often takes out a hundred
                // candidates or more, and growing one by one reallocates at every doubling.
                targets.reserve(order.len());
                spans.reserve(order.len());
                taken.reserve(order.len());
            }
            let start = taken.len() as u32;
            view.take_out(t, i as usize, &mut taken);
            targets.push(i);
            spans.push((start, taken.len() as u32));
            if search.fits(view, req, node, allow) {
                let mut k = targets.len().saturating_sub(1);
                while k > 0 {
                    k -= 1;
                    let (from, to) = spans[k];
                    let cells = &taken[from as usize..to as usize];
                    view.put_back(cells);
                    if search.fits(view, req, node, allow) {
                        targets.swap_remove(k);
                        spans.swap_remove(k);
                    } else {
                        view.take_out_again(cells);
                    }
                }
                // The view goes back as it came (a usage epoch's view is kept for the next
                // request).
                put_back_all(view, &spans, &taken);
                return Some(Victims {
                    victims: targets,
                    allow_borrowing: allow,
                });
            }
        }
    }
    if let Some(s) = searching.as_mut() {
        put_back_all(&mut s.view, &spans, &taken);
    }
    None
}

/// Puts back every target still taken out (`taken[spans[k]]` each): the view's usage is the
/// request's again.
fn put_back_all(view: &mut QuotaView<'_>, spans: &[(u32, u32)], taken: &[(u32, Quantity)]) {
    for &(from, to) in spans.iter().rev() {
        view.put_back(&taken[from as usize..to as usize]);
    }
}

/// A search's view of the request's usage and what it resolved of the request.
struct Searching<'c> {
    view: QuotaView<'c>,
    search: Search,
}

impl<'c> Searching<'c> {
    fn new<C: CandidateTable>(catalog: &'c Catalog, req: &Request<C>, node: NodeId) -> Self {
        let view = QuotaView::from_request_usage(catalog, req);
        let search = Search::new(&view, req, node);
        Searching { view, search }
    }
}

/// Kueue's victim selection restricted to the candidates in `subset` (indices into
/// `req.candidates`), as if the others were not eligible.
pub fn select_victims_among<C: CandidateTable>(
    catalog: &Catalog,
    req: &Request<C>,
    subset: &[u32],
) -> Option<Victims> {
    let order = candidate_order(req, subset);
    let tally = tally(req, Order::Listed(&order));
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
    let tally = tally(req, Order::All);
    if !tally.in_groups {
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

/// Kueue's search over `order` (in candidate order) once [`tally`]'d: the borrowing modes the
/// groups present call for, then the greedy search over the order grouped.
fn victims_in_order<C: CandidateTable>(
    catalog: &Catalog,
    req: &Request<C>,
    order: Vec<u32>,
    tally: Tally,
) -> Option<Victims> {
    let attempts = attempts_for(catalog, req, tally.classes());
    let order = tally.grouped(req, order);
    greedy_victims(catalog, req, &order, attempts)
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

#[cfg(test)]
mod tests {
    use super::*;
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
            // Tallied from the host's form as from the records, and grouped as a stable sort
            // by group would.
            let order = candidate_order(&req, &all);
            let (a, b) = (
                tally(&req, Order::Listed(&order)),
                tally(&columns, Order::Listed(&order)),
            );
            assert_eq!(a, b, "round {round}");
            // Every candidate in index order, tallied without a list, as with one.
            assert_eq!(tally(&req, Order::All), tally(&req, Order::Listed(&all)));
            assert_eq!(
                tally(&columns, Order::All),
                tally(&columns, Order::Listed(&all))
            );
            let group = |i: u32| {
                let c = &req.candidates[i as usize];
                u8::from(!c.evicting) * 3 + class(c.kind)
            };
            let present = order.iter().fold(0u8, |p, &i| p | 1 << group(i));
            assert_eq!(a.present, present, "round {round}");
            assert_eq!(a.in_groups, order.is_sorted_by_key(|&i| group(i)));
            let mut expected = order.clone();
            expected.sort_by_key(|&i| group(i));
            assert_eq!(a.grouped(&req, order.clone()), expected, "round {round}");
            assert_eq!(b.grouped(&columns, order), expected, "round {round}");
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
