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
use crate::policy::builtin;
use crate::policy::verify::{self, InvalidAnswer};
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

/// What an ordering plugin's calls send, kept between calls: each call refills these records
/// in place instead of allocating them again.
struct OrderingScratch {
    /// `sort-keys`: the batch.
    queued: Vec<t::Workload>,
    lq_usage: Vec<t::LocalQueueUsage>,
    /// `order-heads`: the heads by id, in the host's order.
    heads: Vec<u32>,
    /// Their groups; slots are kept with their lists, and the call sends those in use.
    groups: Vec<ord::HeadGroup>,
    head_usage: Vec<ord::HeadUsage>,
    tree_usage: Vec<t::NodeUsage>,
    /// By workload handle, while an answer is read: 0, or 1 + the position of its head.
    positions: Vec<u32>,
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
                queued: Vec::new(),
                lq_usage: Vec::new(),
                heads: Vec::new(),
                groups: Vec::new(),
                head_usage: Vec::new(),
                tree_usage: Vec::new(),
                positions: Vec::new(),
            }),
        }
    }
}

/// The heads as `order-heads` sends them, written over `scratch` (lists kept from the previous
/// call): each one's id in the instance's table of heads (added to `call.heads` when new, with
/// who it is when the plugin reads identity), and the groups of heads assigned alike. Returns
/// how many groups are in use.
fn fill_heads(
    scratch: &mut OrderingScratch,
    call: &mut super::plugin::CallCx<'_>,
    cluster: &crate::cluster::Cluster,
    heads: &[HeadEntry],
) -> usize {
    scratch.heads.clear();
    let groups = &mut scratch.groups;
    let mut used = 0;
    for h in heads {
        let id = call.heads.head(h, || {
            let mut identity = None;
            convert::fill_identity(
                &mut identity,
                call.needs.identity,
                cluster,
                call.catalog,
                call.strings,
                h.workload,
            );
            identity
        });
        scratch.heads.push(id);
        // A linear search: a cycle's heads fall into a handful of groups.
        let (second_pass, level) = (h.has_reservation, h.borrow_level);
        let group = match groups[..used]
            .iter()
            .position(|g| g.second_pass == second_pass && g.borrowing_level == level)
        {
            Some(g) => g,
            None => {
                if used == groups.len() {
                    groups.push(ord::HeadGroup {
                        second_pass,
                        borrowing_level: level,
                        heads: Vec::new(),
                    });
                } else {
                    let g = &mut groups[used];
                    (g.second_pass, g.borrowing_level) = (second_pass, level);
                    g.heads.clear();
                }
                used += 1;
                used - 1
            }
        };
        groups[group].heads.push(id);
    }
    used
}

/// What each head's assignment takes, by head id (`ids`, in the order of `heads`), written
/// over `out` (entries refilled in place).
fn fill_head_usage(out: &mut Vec<ord::HeadUsage>, ids: &[u32], heads: &[HeadEntry]) {
    out.truncate(heads.len());
    for (i, (&head, h)) in ids.iter().zip(heads).enumerate() {
        let usage = h
            .usage
            .iter()
            .map(|&(fr, amount)| t::FrAmount { fr: fr.0, amount });
        match out.get_mut(i) {
            Some(entry) => {
                entry.head = head;
                entry.usage.clear();
                entry.usage.extend(usage);
            }
            None => out.push(ord::HeadUsage {
                head,
                usage: usage.collect(),
            }),
        }
    }
}

/// The positions in `heads` of the workloads of an answer to `order-heads`, which must name
/// every head's workload exactly once. `positions` is a buffer by workload handle, all zero
/// before and after.
fn head_positions(
    answer: &[u32],
    heads: &[HeadEntry],
    positions: &mut Vec<u32>,
) -> Result<Vec<usize>, PolicyError> {
    if answer.len() != heads.len() {
        return Err(wrong_length("the head order", answer.len(), heads.len()));
    }
    // Read: 1 + the position of a head not named yet; `NAMED` once named; 0 for no head.
    const NAMED: u32 = u32::MAX;
    for (i, h) in heads.iter().enumerate() {
        let w = h.workload.index();
        if positions.len() <= w {
            positions.resize(w + 1, 0);
        }
        positions[w] = i as u32 + 1;
    }
    let order = answer
        .iter()
        .map(|&w| match positions.get(w as usize).copied().unwrap_or(0) {
            0 => Err(InvalidAnswer::NotAHead(w)),
            NAMED => Err(InvalidAnswer::DuplicateHead(w)),
            p => {
                positions[w as usize] = NAMED;
                Ok(p as usize - 1)
            }
        })
        .collect::<Result<Vec<usize>, _>>();
    for h in heads {
        positions[h.workload.index()] = 0;
    }
    order.map_err(PolicyError::Invalid)
}

/// The batch of `sort-keys` as WIT workloads, written over `out` (records refilled in place):
/// podSets only with `pod_sets`, and identities from the instance's string table with
/// `identity`.
fn fill_queued(
    out: &mut Vec<t::Workload>,
    call: &mut super::plugin::CallCx<'_>,
    cluster: &crate::cluster::Cluster,
    batch: &[QueuedWorkload],
) {
    out.truncate(batch.len());
    out.resize_with(batch.len(), convert::empty_workload);
    for (w, q) in out.iter_mut().zip(batch) {
        convert::fill_workload(
            w,
            cluster,
            q.workload,
            q.cluster_queue,
            q.queued,
            call.needs.pod_sets,
        );
        convert::fill_identity(
            &mut w.identity,
            call.needs.identity,
            cluster,
            call.catalog,
            call.strings,
            q.workload,
        );
    }
}

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
                fill_queued(&mut scratch.queued, call, cx.cluster, batch);
                scratch.lq_usage.clear();
                if call.needs.local_queue_usage {
                    scratch.lq_usage = convert::local_queue_usage(
                        cx.cluster,
                        batch.iter().filter_map(|q| q.local_queue),
                    );
                }
                let strings = call.strings.take();
                let (guest, store) = call.ordering()?;
                guest.call_sort_keys(
                    store,
                    strings.as_ref(),
                    &scratch.queued,
                    &scratch.lq_usage,
                    cx.now,
                )
            })?;
        if keys.len() != batch.len() {
            let e = wrong_length("the sort keys (one per workload)", keys.len(), batch.len());
            self.plugin.refused(&e);
            return Err(e);
        }
        Ok(keys
            .into_iter()
            .map(|k| SortKey([k.primary, k.secondary, k.tertiary]))
            .collect())
    }

    fn order_heads(
        &self,
        cx: &PolicyContext<'_>,
        heads: &[HeadEntry],
    ) -> Result<Vec<usize>, PolicyError> {
        let mut scratch = lock(&self.scratch);
        let scratch = &mut *scratch;
        let answer = self
            .plugin
            .call(cx.cluster, "order-heads", heads.len(), |call| {
                let used = fill_heads(scratch, call, cx.cluster, heads);
                let (head_usage, tree_usage) = if call.needs.tree_usage {
                    fill_head_usage(&mut scratch.head_usage, &scratch.heads, heads);
                    let tree = &cx.cluster.tree;
                    convert::fill_tree_usage(
                        &mut scratch.tree_usage,
                        cx.cluster,
                        cx.usage,
                        heads
                            .iter()
                            .map(|h| tree.root(cx.cluster.cq(h.cluster_queue).node)),
                    );
                    (
                        Some(scratch.head_usage.as_slice()),
                        Some(scratch.tree_usage.as_slice()),
                    )
                } else {
                    (None, None)
                };
                let strings = call.strings.take();
                let new_heads = call.heads.take();
                let (guest, store) = call.ordering()?;
                let answer = guest.call_order_heads(
                    store,
                    strings.as_ref(),
                    new_heads.as_ref(),
                    &scratch.heads,
                    &scratch.groups[..used],
                    head_usage,
                    tree_usage,
                    cx.now,
                );
                call.heads.give_back(new_heads);
                answer
            })?;
        head_positions(&answer, heads, &mut scratch.positions).inspect_err(|e| {
            self.plugin.refused(e);
        })
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

/// What a `select-victims` call sends, kept between calls: each call refills the request's
/// records in place instead of allocating them again.
struct PreemptionScratch {
    request: pre::Request,
    /// The changed usage rows, before they become `request.usage`.
    nodes: Vec<u32>,
    amounts: Vec<i64>,
    frs: Vec<FrIdx>,
    tree_usage: Vec<t::NodeUsage>,
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
                    candidates: Vec::new(),
                    groups: Vec::new(),
                    local_queue_usage: Vec::new(),
                    usage_kept: false,
                    usage: Vec::new(),
                    tree_usage: None,
                    now: 0,
                },
                nodes: Vec::new(),
                amounts: Vec::new(),
                frs: Vec::new(),
                tree_usage: Vec::new(),
            }),
        }
    }
}

/// Plugin setting (`pluginSettings.<plugin>.allowExtraVictims: "true"` in `--config`): the
/// host accepts victims the preemptor does not need, for policies that evict whole groups on
/// purpose. Without it a non-minimal answer is refused and the built-in decides.
pub const ALLOW_EXTRA_VICTIMS: &str = "allowExtraVictims";

/// A candidate's kind as the WIT names it.
fn kind(k: CandidateKind) -> pre::CandidateKind {
    match k {
        CandidateKind::SameQueue => pre::CandidateKind::SameQueue,
        CandidateKind::HierarchicalReclaim => pre::CandidateKind::HierarchicalReclaim,
        CandidateKind::ReclaimWithoutBorrowing => pre::CandidateKind::ReclaimWithoutBorrowing,
        CandidateKind::ReclaimWhileBorrowing => pre::CandidateKind::ReclaimWhileBorrowing,
        CandidateKind::FairSharing => pre::CandidateKind::FairSharing,
    }
}

/// The candidates as the request lists them, written over `request` (lists kept from the
/// previous call): each one's row of the instance's table of admitted workloads (added to
/// `call.rows` when new, with who it is when the plugin reads identity), the groups of
/// candidates that relate to this preemptor alike, and their LocalQueues' usage.
fn fill_candidates(
    request: &mut pre::Request,
    call: &mut super::plugin::CallCx<'_>,
    cluster: &crate::cluster::Cluster,
    list: &[crate::policy::Candidate],
) {
    request.candidates.clear();
    request.local_queue_usage.clear();
    // Group slots are kept with their lists; `groups` counts those in use.
    let groups = &mut request.groups;
    let mut used = 0;
    for c in list {
        let row = call.rows.row(c, || {
            let mut identity = None;
            convert::fill_identity(
                &mut identity,
                call.needs.identity,
                cluster,
                call.catalog,
                call.strings,
                c.workload,
            );
            identity
        });
        request.candidates.push(row);
        let (kind, lca) = (kind(c.kind), c.lca.map(|n| n.0));
        let found = groups[..used]
            .iter()
            .position(|g| g.kind == kind && g.lca == lca && g.evicting == c.evicted);
        let group = match found {
            Some(g) => g,
            None => {
                if used == groups.len() {
                    groups.push(pre::CandidateGroup {
                        kind,
                        lca,
                        evicting: c.evicted,
                        rows: Vec::new(),
                    });
                } else {
                    let g = &mut groups[used];
                    (g.kind, g.lca, g.evicting) = (kind, lca, c.evicted);
                    g.rows.clear();
                }
                used += 1;
                used - 1
            }
        };
        groups[group].rows.push(row);
        if let (Some(weighted), Some(lq)) = (c.local_queue_usage, c.local_queue)
            && !request
                .local_queue_usage
                .iter()
                .any(|s| s.local_queue == lq.0)
        {
            request.local_queue_usage.push(pre::LocalQueueShare {
                local_queue: lq.0,
                weighted,
            });
        }
    }
    groups.truncate(used);
}

/// Usage rows (row-major over `frs`) as WIT node usage, written over `out` (entries refilled
/// in place).
fn fill_node_usage(out: &mut Vec<t::NodeUsage>, nodes: &[u32], amounts: &[i64], frs: &[FrIdx]) {
    out.truncate(nodes.len());
    for (i, (&node, row)) in nodes
        .iter()
        .zip(amounts.chunks_exact(frs.len().max(1)))
        .enumerate()
    {
        let usage = frs
            .iter()
            .zip(row)
            .map(|(fr, &amount)| t::FrAmount { fr: fr.0, amount });
        match out.get_mut(i) {
            Some(entry) => {
                entry.node = node;
                entry.usage.clear();
                entry.usage.extend(usage);
            }
            None => out.push(t::NodeUsage {
                node,
                usage: usage.collect(),
            }),
        }
    }
}

/// Kueue's victims for `req` chosen only among the candidates at `allowed` (distinct
/// indices into `req.candidates`, in any order), as indices into `req.candidates`: the
/// `kueue-among` answer. The narrowed request keeps Kueue's candidate order.
fn kueue_among(req: &PreemptionRequest<'_>, mut allowed: Vec<usize>) -> Option<VictimSet> {
    allowed.sort_unstable();
    let mut narrowed = req.clone();
    narrowed.candidates = allowed.iter().map(|&i| req.candidates[i].clone()).collect();
    builtin::select_victims(&narrowed).map(|set| VictimSet {
        victims: set.victims.iter().map(|&k| allowed[k]).collect(),
        allow_borrowing: set.allow_borrowing,
    })
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
            nodes,
            amounts,
            frs,
            tree_usage,
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
                    call.usage.fill_changed(
                        (nodes, amounts),
                        cluster,
                        req.usage,
                        cluster.tree.root(req.node),
                        frs,
                    );
                    fill_node_usage(&mut request.usage, nodes, amounts, frs);
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
                        call.needs.identity,
                        cluster,
                        call.catalog,
                        call.strings,
                        req.preemptor,
                    );
                    fill_candidates(request, call, cluster, &req.candidates);
                    request.tree_usage = if call.needs.tree_usage {
                        convert::fill_tree_usage(
                            tree_usage,
                            cluster,
                            req.usage,
                            [cluster.tree.root(req.node)],
                        );
                        // Taken back after the call (below), keeping its buffers.
                        Some(std::mem::take(tree_usage))
                    } else {
                        None
                    };
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
                    if let Some(sent) = request.tree_usage.take() {
                        *tree_usage = sent;
                    }
                    answers
                })?;
        let answer = single(
            &self.plugin,
            "the answers to select-victims (one per request)",
            answers,
        )?;
        match answer {
            pre::Answer::NoVictims => Ok(None),
            pre::Answer::Victims(v) => Ok(Some(VictimSet {
                victims: v.victims.into_iter().map(|i| i as usize).collect(),
                allow_borrowing: v.allow_borrowing,
            })),
            pre::Answer::KueueAmong(allowed) => {
                let allowed: Vec<usize> = allowed.into_iter().map(|i| i as usize).collect();
                verify::candidate_subset(&allowed, req.candidates.len()).map_err(|e| {
                    let e = PolicyError::from(e);
                    self.plugin.refused(&e);
                    e
                })?;
                Ok(kueue_among(req, allowed))
            }
        }
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
        // The tree as records: per domain its level, parent and free capacity per resource
        // column; per leaf its domain and whether the pods may use it.
        let mut domains: Option<Vec<pl::Domain>> = Some(
            (0..columns.levels.len())
                .map(|d| pl::Domain {
                    level: columns.levels[d],
                    parent: u32::try_from(columns.parents[d]).ok(),
                    free: columns.free.iter().map(|column| column[d]).collect(),
                })
                .collect(),
        );
        let mut leaves: Option<Vec<pl::Leaf>> = Some(
            columns
                .leaf_domains
                .iter()
                .zip(&columns.eligible)
                .map(|(&domain, &eligible)| pl::Leaf { domain, eligible })
                .collect(),
        );
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
                leaves: leaves.take().expect("one call"),
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
    use crate::cluster::{CqId, WorkloadId};

    fn head(workload: u32) -> HeadEntry {
        HeadEntry {
            workload: WorkloadId(workload),
            cluster_queue: CqId(workload),
            has_reservation: false,
            borrow_level: 0,
            priority: 0,
            created: 0,
            queued: 0,
            local_queue: None,
            key: SortKey::default(),
            usage: Default::default(),
            requeue_count: 0,
            requeue_reason: None,
        }
    }

    #[test]
    fn an_answer_of_workloads_becomes_positions_or_is_refused() {
        let heads = [head(7), head(3), head(12)];
        let mut positions = Vec::new();
        let mut read = |answer: &[u32]| head_positions(answer, &heads, &mut positions);
        assert_eq!(read(&[12, 7, 3]).ok(), Some(vec![2, 0, 1]));
        let refused = |r: Result<Vec<usize>, PolicyError>| match r {
            Err(PolicyError::Invalid(e)) => e.to_string(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            refused(read(&[12, 7])),
            "the head order has 2 entries, expected 3"
        );
        assert_eq!(refused(read(&[12, 7, 7])), "workload 7 appears twice");
        assert_eq!(
            refused(read(&[12, 7, 4])),
            "workload 4 is not one of the heads"
        );
        assert_eq!(
            refused(read(&[12, 7, u32::MAX])),
            "workload 4294967295 is not one of the heads"
        );
        // Refusals leave nothing behind: the buffer reads as before.
        assert_eq!(read(&[3, 12, 7]).ok(), Some(vec![1, 2, 0]));
        assert!(positions.iter().all(|&p| p == 0));
    }

    #[test]
    fn usage_rows_become_node_usage_refilled_in_place() {
        let frs = [FrIdx(2), FrIdx(5)];
        let mut out = Vec::new();
        fill_node_usage(&mut out, &[7, 9], &[1, 2, 3, 4], &frs);
        let amounts = |out: &[t::NodeUsage]| {
            out.iter()
                .map(|n| (n.node, n.usage.iter().map(|u| (u.fr, u.amount)).collect()))
                .collect::<Vec<(u32, Vec<(u32, i64)>)>>()
        };
        assert_eq!(
            amounts(&out),
            [(7, vec![(2, 1), (5, 2)]), (9, vec![(2, 3), (5, 4)])]
        );
        // A later request with fewer rows leaves nothing of the earlier one.
        fill_node_usage(&mut out, &[4], &[10, 0], &frs);
        assert_eq!(amounts(&out), [(4, vec![(2, 10), (5, 0)])]);
        fill_node_usage(&mut out, &[], &[], &frs);
        assert!(out.is_empty());
    }
}
