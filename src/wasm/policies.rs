//! The policy traits implemented by plugins: each adapter turns a request into WIT records,
//! calls its plugin once for the whole batch, and turns the answer back. Answers whose shape is
//! wrong (a wrong number of entries) are refused here; whether they are acceptable (in range,
//! no duplicates, victims enough, flavor fits) is checked by the scheduler for every policy.

use std::sync::Arc;

use super::bindings::flavors::exports::wasq::policy::flavor_assignment as fa;
use super::bindings::ordering::exports::wasq::policy::ordering as ord;
use super::bindings::placement::exports::wasq::policy::placement as pl;
use super::bindings::preemption::exports::wasq::policy::preemption as pre;
use super::convert;
use super::plugin::Plugin;
use crate::policy::verify::InvalidAnswer;
use crate::policy::{
    CandidateKind, FitMode, FlavorAssignmentPolicy, FlavorChoiceRequest, HeadEntry, Needs,
    OrderingPolicy, PlacementAnswer, PlacementChoiceRequest, PlacementPolicy, PolicyContext,
    PolicyError, PolicyRef, PreemptionPolicy, PreemptionRequest, QueuedWorkload, VictimSet,
};
use crate::queue::SortKey;
use crate::quota::FrIdx;

fn wrong_length(got: usize, expected: usize) -> PolicyError {
    PolicyError::Invalid(InvalidAnswer::WrongLength { got, expected })
}

/// The one answer of a call that sent one request; a plugin that answers another number is
/// refused.
fn single<T>(plugin: &Plugin, answers: Vec<T>) -> Result<T, PolicyError> {
    let [answer] = <[_; 1]>::try_from(answers).map_err(|a: Vec<_>| {
        let e = wrong_length(a.len(), 1);
        plugin.refused(&e);
        e
    })?;
    Ok(answer)
}

/// `no-local-queue`: a `local-queue-id` that names no LocalQueue (`record heads`).
const NO_LOCAL_QUEUE: u32 = u32::MAX;

/// An ordering plugin.
pub struct WasmOrdering(pub Arc<Plugin>);

impl OrderingPolicy for WasmOrdering {
    fn id(&self) -> PolicyRef {
        self.0.id()
    }

    fn needs(&self, cx: &PolicyContext<'_>) -> Needs {
        self.0.needs(cx.cluster)
    }

    fn sort_keys(
        &self,
        cx: &PolicyContext<'_>,
        batch: &[QueuedWorkload],
    ) -> Result<Vec<SortKey>, PolicyError> {
        let keys = self.0.call(cx.cluster, "sort-keys", batch.len(), |call| {
            let workloads: Vec<_> = batch
                .iter()
                .map(|q| {
                    convert::workload(
                        cx.cluster,
                        call.catalog,
                        call.strings,
                        q.workload,
                        q.cluster_queue,
                        q.queued,
                    )
                })
                .collect();
            let lq_usage = if call.needs.local_queue_usage {
                convert::local_queue_usage(cx.cluster, batch.iter().filter_map(|q| q.local_queue))
            } else {
                Vec::new()
            };
            let strings = call.strings.take();
            let (guest, store) = call.ordering();
            guest.call_sort_keys(store, &strings, &workloads, &lq_usage, cx.now)
        })?;
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
        let (usage_offsets, usage_frs, usage_amounts) =
            usage_columns(heads.iter().map(|h| h.usage.as_slice()));
        let mut columns = ord::Heads {
            workloads: heads.iter().map(|h| h.workload.0).collect(),
            cluster_queues: heads.iter().map(|h| h.cluster_queue.0).collect(),
            local_queues: heads
                .iter()
                .map(|h| h.local_queue.map_or(NO_LOCAL_QUEUE, |l| l.0))
                .collect(),
            has_reservation: (0..heads.len() as u32)
                .filter(|&i| heads[i as usize].has_reservation)
                .collect(),
            borrow_levels: heads.iter().map(|h| h.borrow_level).collect(),
            priorities: heads.iter().map(|h| h.priority).collect(),
            created: heads.iter().map(|h| h.created).collect(),
            queued: heads.iter().map(|h| h.queued).collect(),
            requeue_counts: heads
                .iter()
                .map(|h| cx.cluster.workload(h.workload).requeue_count)
                .collect(),
            requeue_reasons: heads
                .iter()
                .map(|h| {
                    convert::requeue_reason_byte(cx.cluster.workload(h.workload).requeue_reason)
                })
                .collect(),
            key_primary: heads.iter().map(|h| h.key.0[0]).collect(),
            key_secondary: heads.iter().map(|h| h.key.0[1]).collect(),
            key_tertiary: heads.iter().map(|h| h.key.0[2]).collect(),
            usage_offsets,
            usage_frs,
            usage_amounts,
            // Filled in the call, from the instance's string table.
            namespaces: Vec::new(),
            job_kinds: Vec::new(),
            job_api_versions: Vec::new(),
            job_names: Vec::new(),
            label_offsets: Vec::new(),
            label_keys: Vec::new(),
            label_values: Vec::new(),
            annotation_offsets: Vec::new(),
            annotation_keys: Vec::new(),
            annotation_values: Vec::new(),
        };
        let order = self
            .0
            .call(cx.cluster, "order-heads", heads.len(), |call| {
                let ids = convert::IdentityColumns::of(
                    cx.cluster,
                    call.catalog,
                    call.strings,
                    heads.iter().map(|h| h.workload),
                );
                columns.namespaces = ids.namespaces;
                columns.job_kinds = ids.job_kinds;
                columns.job_api_versions = ids.job_api_versions;
                columns.job_names = ids.job_names;
                columns.label_offsets = ids.label_offsets;
                columns.label_keys = ids.label_keys;
                columns.label_values = ids.label_values;
                columns.annotation_offsets = ids.annotation_offsets;
                columns.annotation_keys = ids.annotation_keys;
                columns.annotation_values = ids.annotation_values;
                let usage = if call.needs.tree_usage {
                    let tree = &cx.cluster.tree;
                    convert::usage_table(
                        cx.cluster,
                        cx.usage,
                        heads
                            .iter()
                            .map(|h| tree.root(cx.cluster.cq(h.cluster_queue).node)),
                    )
                } else {
                    convert::no_usage()
                };
                let strings = call.strings.take();
                let (guest, store) = call.ordering();
                guest.call_order_heads(store, &strings, &columns, &usage, cx.now)
            })?;
        Ok(order.into_iter().map(|i| i as usize).collect())
    }

    fn refused(&self, error: &PolicyError) {
        self.0.refused(error);
    }
}

/// The usage columns of a list (`usage-offsets`, `usage-frs`, `usage-amounts` in `record heads`
/// and `record candidates`): entry `i` holds the amounts `offsets[i]..offsets[i + 1]`.
fn usage_columns<'a>(
    usages: impl ExactSizeIterator<Item = &'a [(FrIdx, i64)]>,
) -> (Vec<u32>, Vec<u32>, Vec<i64>) {
    let mut offsets = Vec::with_capacity(usages.len() + 1);
    let mut frs = Vec::with_capacity(usages.len());
    let mut amounts = Vec::with_capacity(usages.len());
    offsets.push(0);
    for usage in usages {
        for &(fr, amount) in usage {
            frs.push(fr.0);
            amounts.push(amount);
        }
        offsets.push(frs.len() as u32);
    }
    (offsets, frs, amounts)
}

/// A preemption plugin.
pub struct WasmPreemption(pub Arc<Plugin>);

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

/// `no-node`: a `node-id` that names no node (`record candidates`, `lcas`).
const NO_NODE: u32 = u32::MAX;

/// The candidates as the WIT's columns (one pass per column: each is a tight loop).
fn candidates(
    cluster: &crate::cluster::Cluster,
    catalog: &convert::Catalog,
    strings: &mut super::strings::StringTable,
    list: &[crate::policy::Candidate],
) -> pre::Candidates {
    let indices = |f: fn(&crate::policy::Candidate) -> bool| -> Vec<u32> {
        (0..list.len() as u32)
            .filter(|&i| f(&list[i as usize]))
            .collect()
    };
    let (usage_offsets, usage_frs, usage_amounts) =
        usage_columns(list.iter().map(|c| c.usage.as_slice()));
    let ids =
        convert::IdentityColumns::of(cluster, catalog, strings, list.iter().map(|c| c.workload));
    pre::Candidates {
        workloads: list.iter().map(|c| c.workload.0).collect(),
        cluster_queues: list.iter().map(|c| c.cluster_queue.0).collect(),
        local_queues: ids.local_queues,
        kinds: list.iter().map(|c| kind(c.kind)).collect(),
        lcas: list
            .iter()
            .map(|c| c.lca.map_or(NO_NODE, |n| n.0))
            .collect(),
        priorities: list.iter().map(|c| c.priority).collect(),
        created: list.iter().map(|c| c.created).collect(),
        admitted: list.iter().map(|c| c.reserved_at).collect(),
        requeue_counts: list
            .iter()
            .map(|c| cluster.workload(c.workload).requeue_count)
            .collect(),
        requeue_reasons: list
            .iter()
            .map(|c| convert::requeue_reason_byte(cluster.workload(c.workload).requeue_reason))
            .collect(),
        evicting: indices(|c| c.evicted),
        usage_offsets,
        usage_frs,
        usage_amounts,
        namespaces: ids.namespaces,
        job_kinds: ids.job_kinds,
        job_api_versions: ids.job_api_versions,
        job_names: ids.job_names,
        label_offsets: ids.label_offsets,
        label_keys: ids.label_keys,
        label_values: ids.label_values,
        annotation_offsets: ids.annotation_offsets,
        annotation_keys: ids.annotation_keys,
        annotation_values: ids.annotation_values,
        local_queue_usage_of: indices(|c| c.local_queue_usage.is_some()),
        local_queue_usage: list.iter().filter_map(|c| c.local_queue_usage).collect(),
    }
}

impl PreemptionPolicy for WasmPreemption {
    fn id(&self) -> PolicyRef {
        self.0.id()
    }

    fn allows_extra_victims(&self) -> bool {
        self.0.setting(ALLOW_EXTRA_VICTIMS) == Some("true")
    }

    fn extra_victims(&self, n: usize) {
        self.0.count_extra_victims(n);
    }

    fn select_victims(
        &self,
        req: &PreemptionRequest<'_>,
    ) -> Result<Option<VictimSet>, PolicyError> {
        let cluster = req.cluster;
        let frs: Vec<_> = req.requests.iter().map(|&(fr, _)| fr).collect();
        let (usage_nodes, usage) = convert::usage_rows(
            cluster,
            req.usage,
            std::iter::once(req.node).chain(req.candidates.iter().map(|c| c.node)),
            &frs,
        );
        let answers = self
            .0
            .call(cluster, "select-victims", req.candidates.len(), |call| {
                let preemptor = cluster.workload(req.preemptor);
                let request = pre::Request {
                    preemptor: convert::workload(
                        cluster,
                        call.catalog,
                        call.strings,
                        req.preemptor,
                        req.cluster_queue,
                        preemptor.queued,
                    ),
                    requests: convert::fr_amounts(&req.requests),
                    needs_preemption: req.needs_preemption.iter().map(|f| f.0).collect(),
                    candidates: candidates(cluster, call.catalog, call.strings, &req.candidates),
                    usage_nodes,
                    usage,
                    tree_usage: if call.needs.tree_usage {
                        convert::usage_table(cluster, req.usage, [cluster.tree.root(req.node)])
                    } else {
                        convert::no_usage()
                    },
                    now: req.now,
                };
                let strings = call.strings.take();
                let (guest, store) = call.preemption();
                guest.call_select_victims(store, &strings, std::slice::from_ref(&request))
            })?;
        let answer = single(&self.0, answers)?;
        Ok(answer.map(|v| VictimSet {
            victims: v.victims.into_iter().map(|i| i as usize).collect(),
            allow_borrowing: v.allow_borrowing,
        }))
    }

    fn refused(&self, error: &PolicyError) {
        self.0.refused(error);
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
                let (guest, store) = call.flavors();
                guest.call_choose_flavors(store, &strings, std::slice::from_ref(&request))
            })?;
        let answer = single(&self.0, answers)?;
        Ok(answer.map(|i| i as usize))
    }

    fn refused(&self, error: &PolicyError) {
        self.0.refused(error);
    }
}

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
            let (guest, store) = call.placement();
            guest.call_place(store, &strings, std::slice::from_ref(&request))
        })?;
        let answer = single(&self.0, answers)?;
        Ok(match answer {
            pl::Answer::Placed(p) => PlacementAnswer::Placed(crate::topology::Placement {
                leaves: p
                    .pods
                    .into_iter()
                    .map(|l| (l.leaf as usize, i32::try_from(l.count).unwrap_or(i32::MAX)))
                    .collect(),
                leader: p.leader.map(|l| l as usize),
            }),
            pl::Answer::NoFit(message) => PlacementAnswer::NoFit(message),
        })
    }

    fn refused(&self, error: &PolicyError) {
        self.0.refused(error);
    }
}
