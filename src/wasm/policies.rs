//! The policy traits implemented by plugins: each adapter turns a request into WIT records,
//! calls its plugin once for the whole batch, and turns the answer back. Answers whose shape is
//! wrong (a wrong number of entries) are refused here; whether they are acceptable (in range,
//! no duplicates, victims enough, flavor fits) is checked by the scheduler for every policy.

use std::sync::{Arc, Mutex, MutexGuard};

use super::bindings::flavors::exports::wasq::policy::flavor_assignment as fa;
use super::bindings::ordering::exports::wasq::policy::ordering as ord;
use super::bindings::placement::exports::wasq::policy::placement as pl;
use super::bindings::preemption::exports::wasq::policy::preemption as pre;
use super::bindings::types as t;
use super::convert;
use super::plugin::Plugin;
use super::strings::Ident;
use crate::policy::verify::InvalidAnswer;
use crate::policy::{
    CandidateKind, FitMode, FlavorAssignmentPolicy, FlavorChoiceRequest, HeadEntry, Needs,
    OrderingPolicy, PlacementAnswer, PlacementChoiceRequest, PlacementPolicy, PolicyContext,
    PolicyError, PolicyRef, PreemptionPolicy, PreemptionRequest, QueuedWorkload, VictimSet,
};
use crate::queue::SortKey;
use crate::quota::FrIdx;

fn wrong_length(what: &'static str, got: usize, expected: usize) -> PolicyError {
    PolicyError::Invalid(InvalidAnswer::WrongLength {
        what,
        got,
        expected,
    })
}

/// The one answer of a call that sent one request (`what` names the answer list); a plugin
/// that answers another number is refused.
fn single<T>(plugin: &Plugin, what: &'static str, answers: Vec<T>) -> Result<T, PolicyError> {
    let [answer] = <[_; 1]>::try_from(answers).map_err(|a: Vec<_>| {
        let e = wrong_length(what, a.len(), 1);
        plugin.refused(&e);
        e
    })?;
    Ok(answer)
}

/// An ordering plugin.
pub struct WasmOrdering {
    plugin: Arc<Plugin>,
    /// The buffers of its requests, refilled in place from call to call.
    scratch: Mutex<OrderingScratch>,
}

/// What an ordering plugin's calls send, kept between calls: each call clears and refills
/// these lists instead of allocating and freeing them.
struct OrderingScratch {
    /// `sort-keys`: the batch as columns.
    queued: ord::Queued,
    lq_usage: Vec<t::LocalQueueUsage>,
    /// `order-heads`.
    heads: ord::Heads,
    usage: t::UsageTable,
    idents: Vec<Ident>,
}

/// A mutex's contents, poisoned or not (every call refills the scratch it reads).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl WasmOrdering {
    pub fn new(plugin: Arc<Plugin>) -> WasmOrdering {
        WasmOrdering {
            plugin,
            scratch: Mutex::new(OrderingScratch {
                queued: empty_queued(),
                lq_usage: Vec::new(),
                heads: ord::Heads {
                    ints: Vec::new(),
                    times: Vec::new(),
                    usage_frs: Vec::new(),
                    usage_amounts: Vec::new(),
                    identities: None,
                },
                usage: convert::no_usage(),
                idents: Vec::new(),
            }),
        }
    }
}

/// The heads as the WIT's four lists (`record heads`), written over `out` (all but the
/// identity columns, which come from the instance's string table in the call).
fn fill_heads(out: &mut ord::Heads, heads: &[HeadEntry]) {
    out.ints.clear();
    out.times.clear();
    out.usage_frs.clear();
    out.usage_amounts.clear();
    out.ints.reserve(heads.len() * HEAD_INTS);
    out.times.reserve(heads.len() * HEAD_TIMES);
    for h in heads {
        out.ints.extend([
            h.workload.0,
            h.cluster_queue.0,
            h.local_queue.map_or(NO_LOCAL_QUEUE, |l| l.0),
            u32::from(h.has_reservation),
            h.borrow_level,
            h.requeue_count,
            convert::requeue_reason_byte(h.requeue_reason).into(),
            h.usage.len() as u32,
        ]);
        out.times.extend([
            h.priority, h.created, h.queued, h.key.0[0], h.key.0[1], h.key.0[2],
        ]);
        for &(fr, amount) in &h.usage {
            out.usage_frs.push(fr.0);
            out.usage_amounts.push(amount);
        }
    }
}

/// The batch of `sort-keys` as the WIT's columns (`record queued`), written over `out` (all but
/// the identity columns and podSets, which depend on the plugin's needs).
fn fill_queued(out: &mut ord::Queued, cluster: &crate::cluster::Cluster, batch: &[QueuedWorkload]) {
    out.ints.clear();
    out.times.clear();
    out.ints.reserve(batch.len() * QUEUED_INTS);
    out.times.reserve(batch.len() * QUEUED_TIMES);
    for q in batch {
        let wl = cluster.workload(q.workload);
        out.ints.extend([
            q.workload.0,
            q.cluster_queue.0,
            wl.lq.map_or(NO_LOCAL_QUEUE, |l| l.0),
            wl.requeue_count,
            convert::requeue_reason_byte(wl.requeue_reason).into(),
        ]);
        out.times
            .extend([wl.effective_priority(), wl.created, q.queued]);
    }
}

/// An empty `record queued`.
pub(super) fn empty_queued() -> ord::Queued {
    ord::Queued {
        ints: Vec::new(),
        times: Vec::new(),
        identities: None,
        pod_sets: None,
    }
}

/// Integers and times per workload in `record queued`, and entries per key in `sort-keys`'
/// answer.
const QUEUED_INTS: usize = 5;
const QUEUED_TIMES: usize = 3;
const SORT_KEY_LEN: usize = 3;

/// Integers and times per head in `record heads`.
const HEAD_INTS: usize = 8;
const HEAD_TIMES: usize = 6;

/// `no-local-queue`: a `local-queue-id` that names no LocalQueue (`record heads`).
const NO_LOCAL_QUEUE: u32 = u32::MAX;

impl OrderingPolicy for WasmOrdering {
    fn id(&self) -> PolicyRef {
        self.plugin.id()
    }

    fn needs(&self, cx: &PolicyContext<'_>) -> Needs {
        self.plugin.needs(cx.cluster)
    }

    fn sort_keys(
        &self,
        cx: &PolicyContext<'_>,
        batch: &[QueuedWorkload],
    ) -> Result<Vec<SortKey>, PolicyError> {
        let mut scratch = lock(&self.scratch);
        let scratch = &mut *scratch;
        let keys = self
            .plugin
            .call(cx.cluster, "sort-keys", batch.len(), |call| {
                let queued = &mut scratch.queued;
                fill_queued(queued, cx.cluster, batch);
                let idents = &mut scratch.idents;
                idents.clear();
                if call.needs.identity {
                    idents.extend(
                        batch
                            .iter()
                            .map(|q| call.catalog.ident(call.strings, cx.cluster, q.workload)),
                    );
                }
                convert::fill_identities(
                    &mut queued.identities,
                    call.needs.identity,
                    call.strings,
                    idents,
                );
                if call.needs.pod_sets {
                    let lists = queued.pod_sets.get_or_insert_with(Vec::new);
                    lists.resize_with(batch.len(), Vec::new);
                    for (list, q) in lists.iter_mut().zip(batch) {
                        convert::fill_pod_sets(list, cx.cluster, q.workload);
                    }
                } else {
                    queued.pod_sets = None;
                }
                scratch.lq_usage.clear();
                if call.needs.local_queue_usage {
                    scratch.lq_usage = convert::local_queue_usage(
                        cx.cluster,
                        batch.iter().filter_map(|q| q.local_queue),
                    );
                }
                let strings = call.strings.take();
                let (guest, store) = call.ordering()?;
                guest.call_sort_keys(store, strings.as_ref(), queued, &scratch.lq_usage, cx.now)
            })?;
        // Three entries per workload (counted in entries, so that a partial key shows).
        if keys.len() != batch.len() * SORT_KEY_LEN {
            let e = wrong_length(
                "the sort keys (three per workload)",
                keys.len(),
                batch.len() * SORT_KEY_LEN,
            );
            self.plugin.refused(&e);
            return Err(e);
        }
        Ok(keys
            .chunks_exact(SORT_KEY_LEN)
            .map(|k| SortKey([k[0], k[1], k[2]]))
            .collect())
    }

    fn order_heads(
        &self,
        cx: &PolicyContext<'_>,
        heads: &[HeadEntry],
    ) -> Result<Vec<usize>, PolicyError> {
        let mut scratch = lock(&self.scratch);
        let scratch = &mut *scratch;
        fill_heads(&mut scratch.heads, heads);
        let order = self
            .plugin
            .call(cx.cluster, "order-heads", heads.len(), |call| {
                let idents = &mut scratch.idents;
                idents.clear();
                if call.needs.identity {
                    idents.extend(
                        heads
                            .iter()
                            .map(|h| call.catalog.ident(call.strings, cx.cluster, h.workload)),
                    );
                }
                convert::fill_identities(
                    &mut scratch.heads.identities,
                    call.needs.identity,
                    call.strings,
                    idents,
                );
                if call.needs.tree_usage {
                    let tree = &cx.cluster.tree;
                    convert::fill_usage_table(
                        &mut scratch.usage,
                        cx.cluster,
                        cx.usage,
                        heads
                            .iter()
                            .map(|h| tree.root(cx.cluster.cq(h.cluster_queue).node)),
                    );
                } else {
                    scratch.usage.nodes.clear();
                    scratch.usage.amounts.clear();
                }
                let strings = call.strings.take();
                let (guest, store) = call.ordering()?;
                guest.call_order_heads(
                    store,
                    strings.as_ref(),
                    &scratch.heads,
                    &scratch.usage,
                    cx.now,
                )
            })?;
        Ok(order.into_iter().map(|i| i as usize).collect())
    }

    fn refused(&self, error: &PolicyError) {
        self.plugin.refused(error);
    }
}

/// A preemption plugin.
pub struct WasmPreemption {
    plugin: Arc<Plugin>,
    /// The buffers of its request, refilled in place from call to call.
    scratch: Mutex<PreemptionScratch>,
}

/// What a `select-victims` call sends, kept between calls: each call clears and refills
/// these lists instead of allocating and freeing about thirty of them.
struct PreemptionScratch {
    request: pre::Request,
    /// The usage rows' buffers while the request sends none (`request.usage` is `None`).
    usage: pre::UsageRows,
    frs: Vec<FrIdx>,
    idents: Vec<Ident>,
}

impl WasmPreemption {
    pub fn new(plugin: Arc<Plugin>) -> WasmPreemption {
        WasmPreemption {
            plugin,
            scratch: Mutex::new(PreemptionScratch {
                request: pre::Request {
                    preemptor: convert::empty_workload(),
                    requests: Vec::new(),
                    needs_preemption: Vec::new(),
                    candidates: pre::Candidates {
                        rows: Vec::new(),
                        kinds: Vec::new(),
                        lcas: Vec::new(),
                        identities: None,
                        local_queue_usage: None,
                    },
                    usage_kept: false,
                    usage: None,
                    tree_usage: None,
                    now: 0,
                },
                usage: no_rows(),
                frs: Vec::new(),
                idents: Vec::new(),
            }),
        }
    }
}

/// Usage rows with no row (and no buffer).
fn no_rows() -> pre::UsageRows {
    pre::UsageRows {
        nodes: Vec::new(),
        amounts: Vec::new(),
    }
}

/// Plugin setting (`pluginSettings.<plugin>.allowExtraVictims: "true"` in `--config`): the
/// host accepts victims the preemptor does not need, for policies that evict whole groups on
/// purpose. Without it a non-minimal answer is refused and the built-in decides.
pub const ALLOW_EXTRA_VICTIMS: &str = "allowExtraVictims";

/// A candidate's kind as its `candidate-kind` case number (`record candidates`, `kinds`).
fn kind(k: CandidateKind) -> u8 {
    let case = match k {
        CandidateKind::SameQueue => pre::CandidateKind::SameQueue,
        CandidateKind::HierarchicalReclaim => pre::CandidateKind::HierarchicalReclaim,
        CandidateKind::ReclaimWithoutBorrowing => pre::CandidateKind::ReclaimWithoutBorrowing,
        CandidateKind::ReclaimWhileBorrowing => pre::CandidateKind::ReclaimWhileBorrowing,
        CandidateKind::FairSharing => pre::CandidateKind::FairSharing,
    };
    case as u8
}

/// Bit 7 of a `kinds` byte: the candidate is being evicted (`record candidates`).
const EVICTING: u8 = 0x80;

/// A candidate's byte of the `kinds` column: its kind's case number, and [`EVICTING`] when
/// it is being evicted.
fn kind_byte(c: &crate::policy::Candidate) -> u8 {
    kind(c.kind) | if c.evicted { EVICTING } else { 0 }
}

/// `no-node`: a `node-id` that names no node (`record candidates`, `lcas`).
const NO_NODE: u32 = u32::MAX;

/// The candidates as the WIT's columns, written over `out` (into buffers kept from the
/// previous call): each one's row of the instance's table of admitted workloads (added to
/// `rows` when new), and what relates it to this preemptor. `idents` is scratch for their
/// identities.
#[allow(clippy::too_many_arguments)]
fn fill_candidates(
    out: &mut pre::Candidates,
    idents: &mut Vec<Ident>,
    cluster: &crate::cluster::Cluster,
    catalog: &convert::Catalog,
    strings: &mut super::strings::StringTable,
    rows: &mut super::rows::RowTable,
    list: &[crate::policy::Candidate],
    identity: bool,
) {
    out.rows.clear();
    out.rows.extend(list.iter().map(|c| rows.row(c)));
    out.kinds.clear();
    out.kinds.extend(list.iter().map(kind_byte));
    out.lcas.clear();
    out.lcas
        .extend(list.iter().map(|c| c.lca.map_or(NO_NODE, |n| n.0)));
    // The sparse column, and the identities when asked for, in one pass.
    idents.clear();
    // The previous call's lists, when it sent any; sent again only if some candidate has usage.
    let mut afs = out
        .local_queue_usage
        .take()
        .unwrap_or_else(|| pre::CandidatesLocalQueueUsage {
            of: Vec::new(),
            usage: Vec::new(),
        });
    afs.of.clear();
    afs.usage.clear();
    for (i, c) in list.iter().enumerate() {
        if identity {
            idents.push(catalog.ident(strings, cluster, c.workload));
        }
        if let Some(u) = c.local_queue_usage {
            afs.of.push(i as u32);
            afs.usage.push(u);
        }
    }
    convert::fill_identities(&mut out.identities, identity, strings, idents);
    out.local_queue_usage = (!afs.of.is_empty()).then_some(afs);
}

impl PreemptionPolicy for WasmPreemption {
    fn id(&self) -> PolicyRef {
        self.plugin.id()
    }

    fn allows_extra_victims(&self) -> bool {
        self.plugin.setting(ALLOW_EXTRA_VICTIMS) == Some("true")
    }

    fn extra_victims(&self, n: usize) {
        self.plugin.count_extra_victims(n);
    }

    fn select_victims(
        &self,
        req: &PreemptionRequest<'_>,
    ) -> Result<Option<VictimSet>, PolicyError> {
        let cluster = req.cluster;
        let mut scratch = lock(&self.scratch);
        let PreemptionScratch {
            request,
            usage,
            frs,
            idents,
        } = &mut *scratch;
        frs.clear();
        frs.extend(req.requests.iter().map(|&(fr, _)| fr));
        // Only the rows the instance does not hold ([`super::usage_rows`]).
        request.usage_kept = true;
        convert::fill_fr_amounts(&mut request.requests, &req.requests);
        request.needs_preemption.clear();
        request
            .needs_preemption
            .extend(req.needs_preemption.iter().map(|f| f.0));
        request.now = req.now;
        let answers =
            self.plugin
                .call(cluster, "select-victims", req.candidates.len(), |call| {
                    // Sent only when some row is (most requests send none).
                    if let Some(sent) = request.usage.take() {
                        *usage = sent;
                    }
                    call.usage.fill_changed(
                        (&mut usage.nodes, &mut usage.amounts),
                        cluster,
                        req.usage,
                        cluster.tree.root(req.node),
                        frs,
                    );
                    if !usage.nodes.is_empty() {
                        request.usage = Some(std::mem::replace(usage, no_rows()));
                    }
                    let identity = call.needs.identity;
                    convert::fill_workload(
                        &mut request.preemptor,
                        cluster,
                        req.preemptor,
                        req.cluster_queue,
                        cluster.workload(req.preemptor).queued,
                        call.needs.pod_sets,
                    );
                    convert::fill_identity(
                        &mut request.preemptor.identity,
                        identity,
                        cluster,
                        call.catalog,
                        call.strings,
                        req.preemptor,
                    );
                    fill_candidates(
                        &mut request.candidates,
                        idents,
                        cluster,
                        call.catalog,
                        call.strings,
                        call.rows,
                        &req.candidates,
                        identity,
                    );
                    if call.needs.tree_usage {
                        convert::fill_usage_table(
                            request.tree_usage.get_or_insert_with(convert::no_usage),
                            cluster,
                            req.usage,
                            [cluster.tree.root(req.node)],
                        );
                    } else {
                        request.tree_usage = None;
                    }
                    let strings = call.strings.take();
                    let rows = call.rows.take();
                    let (guest, store) = call.preemption()?;
                    let answers = guest.call_select_victims(
                        store,
                        strings.as_ref(),
                        rows.as_ref(),
                        std::slice::from_ref(request),
                    );
                    call.rows.give_back(rows);
                    answers
                })?;
        let answer = single(
            &self.plugin,
            "the answers to select-victims (one per request)",
            answers,
        )?;
        Ok(answer.map(|v| VictimSet {
            victims: v.victims.into_iter().map(|i| i as usize).collect(),
            allow_borrowing: v.allow_borrowing,
        }))
    }

    fn refused(&self, error: &PolicyError) {
        self.plugin.refused(error);
    }
}

/// A flavor-assignment plugin.
pub struct WasmFlavors(pub Arc<Plugin>);

fn mode(m: FitMode) -> fa::FitMode {
    match m {
        FitMode::NoFit => fa::FitMode::NoFit,
        FitMode::NoPreemptionCandidates => fa::FitMode::NoPreemptionCandidates,
        FitMode::Preempt => fa::FitMode::Preempt,
        FitMode::Reclaim => fa::FitMode::Reclaim,
        FitMode::Fit => fa::FitMode::Fit,
    }
}

impl FlavorAssignmentPolicy for WasmFlavors {
    fn id(&self) -> PolicyRef {
        self.0.id()
    }

    fn choose_flavor(&self, req: &FlavorChoiceRequest<'_>) -> Result<Option<usize>, PolicyError> {
        let cluster = req.cluster;
        let answers = self
            .0
            .call(cluster, "choose-flavors", req.options.len(), |call| {
                let request = fa::Request {
                    workload: convert::workload(
                        cluster,
                        call.catalog,
                        call.strings,
                        req.workload,
                        req.cluster_queue,
                        cluster.workload(req.workload).queued,
                        call.needs.identity,
                    ),
                    pod_set: req.pod_set as u32,
                    requests: req
                        .requests
                        .iter()
                        .map(|&(r, amount)| super::bindings::types::ResourceAmount {
                            resource: r.0,
                            amount,
                        })
                        .collect(),
                    options: req
                        .options
                        .iter()
                        .map(|o| {
                            o.as_ref().map(|o| fa::FlavorOption {
                                flavor: o.flavor.0,
                                mode: mode(o.mode),
                                borrow_level: o.borrow_level,
                            })
                        })
                        .collect(),
                    now: req.now,
                };
                let strings = call.strings.take();
                let (guest, store) = call.flavors()?;
                guest.call_choose_flavors(store, strings.as_ref(), std::slice::from_ref(&request))
            })?;
        let answer = single(
            &self.0,
            "the answers to choose-flavors (one per request)",
            answers,
        )?;
        Ok(answer.map(|i| i as usize))
    }

    fn refused(&self, error: &PolicyError) {
        self.0.refused(error);
    }
}

/// Longest no-fit message of a placement plugin kept, in bytes once escaped.
const NO_FIT_MESSAGE_MAX: usize = 1024;

/// A placement plugin.
pub struct WasmPlacement(pub Arc<Plugin>);

/// A count that crosses as `u32` (pod counts are never negative).
fn count_u32(n: i32) -> u32 {
    u32::try_from(n).unwrap_or(0)
}

impl PlacementPolicy for WasmPlacement {
    fn id(&self) -> PolicyRef {
        self.0.id()
    }

    fn place(&self, req: &PlacementChoiceRequest<'_>) -> Result<PlacementAnswer, PolicyError> {
        let cluster = req.cluster;
        let question = req.placement;
        let tree = question.tree;
        let columns = question.columns();
        let c = question.constraint;
        let constraint = pl::Constraint {
            level: c.level as u32,
            mode: if c.required {
                pl::ConstraintMode::Required
            } else if c.unconstrained {
                pl::ConstraintMode::Unconstrained
            } else {
                pl::ConstraintMode::Preferred
            },
            slice_level: c.slice_level as u32,
            slice_size: count_u32(c.slice_size),
            layers: c
                .layers()
                .into_iter()
                .skip(1)
                .map(|(level, size)| pl::SliceLayer {
                    level: level as u32,
                    size: count_u32(size),
                })
                .collect(),
        };
        let mut domains = Some(pl::Domains {
            levels: columns.levels,
            parents: columns.parents,
            free: columns.free,
            leaf_domains: columns.leaf_domains,
            eligible: columns.eligible,
        });
        // The deadline grows with the domains the call carries.
        let answers = self.0.call(cluster, "place", tree.domains.len(), |call| {
            let request = pl::Request {
                workload: convert::workload(
                    cluster,
                    call.catalog,
                    call.strings,
                    req.workload,
                    req.cluster_queue,
                    cluster.workload(req.workload).queued,
                    call.needs.identity,
                ),
                pod_set: req.pod_set as u32,
                flavor: req.flavor.0,
                topology: call.strings.intern(&tree.topology),
                level_names: tree.levels.iter().map(|l| call.strings.intern(l)).collect(),
                resource_names: tree
                    .resources
                    .iter()
                    .map(|r| call.strings.intern(r))
                    .collect(),
                count: count_u32(question.count),
                per_pod: question.per_pod.clone(),
                leader: question.leader.clone(),
                constraint: constraint.clone(),
                domains: domains.take().expect("one call"),
                now: req.now,
            };
            let strings = call.strings.take();
            let (guest, store) = call.placement()?;
            guest.call_place(store, strings.as_ref(), std::slice::from_ref(&request))
        })?;
        let answer = single(&self.0, "the answers to place (one per request)", answers)?;
        Ok(match answer {
            pl::Answer::Placed(p) => PlacementAnswer::Placed(crate::topology::Placement {
                leaves: p
                    .pods
                    .into_iter()
                    .map(|l| (l.leaf as usize, i32::try_from(l.count).unwrap_or(i32::MAX)))
                    .collect(),
                leader: p.leader.map(|l| l as usize),
            }),
            // The plugin's own words reach pending messages and reports: escaped, and cut.
            pl::Answer::NoFit(message) => {
                PlacementAnswer::NoFit(super::text::escape_cut(&message, NO_FIT_MESSAGE_MAX))
            }
        })
    }

    fn refused(&self, error: &PolicyError) {
        self.0.refused(error);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_byte_is_the_case_number_with_bit_7_for_a_candidate_being_evicted() {
        let kinds = [
            (CandidateKind::SameQueue, 0),
            (CandidateKind::HierarchicalReclaim, 1),
            (CandidateKind::ReclaimWithoutBorrowing, 2),
            (CandidateKind::ReclaimWhileBorrowing, 3),
            (CandidateKind::FairSharing, 4),
        ];
        for (k, case) in kinds {
            for evicted in [false, true] {
                let c = crate::policy::Candidate {
                    kind: k,
                    evicted,
                    ..crate::policy::Candidate::test(1, 0)
                };
                let expected = if evicted { case | 128 } else { case };
                assert_eq!(kind_byte(&c), expected, "{k:?}, evicted: {evicted}");
            }
        }
    }
}
