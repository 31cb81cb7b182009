//! What the dashboard shows, as the page reads it (JSON): built from the scheduler's state by
//! [`build`], the same for the simulator and the controller. What only a driver knows — which
//! workloads exist for people (arrived, not finished), their history, the plugins' figures —
//! it gives through [`Source`].

use std::collections::BTreeMap;

use serde::Serialize;

use crate::api::Quantity;
use crate::cluster::{Cluster, Holding, WorkloadId};
use crate::policy::PolicyRef;
use crate::quota::{NodeId, NodeKind};
use crate::scheduler::Scheduler;

/// At most this many workloads are listed (pending ones first, in queue order); the rest are
/// counted in [`View::workloads_omitted`].
pub const MAX_WORKLOADS: usize = 1000;
/// At most this many steps of each workload's history are kept (the latest).
pub const MAX_STEPS: usize = 32;
/// Topology domains listed per TAS flavor, at most (the levels above nodes first).
pub const MAX_DOMAINS: usize = 500;

/// The whole page's data.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct View {
    /// What is shown (`wasq simulate FILE`, `wasq controller`).
    pub title: String,
    /// `virtual`: times are seconds on the simulator's clock; `wall`: Unix seconds.
    pub clock: &'static str,
    /// The time the view was taken, in the clock's seconds.
    pub now: f64,
    /// Increases with every view published.
    pub version: u64,
    /// The simulator: the run is still going (`--speed`).
    pub running: bool,
    pub cluster_queues: Vec<ClusterQueueView>,
    pub cohorts: Vec<CohortView>,
    pub local_queues: Vec<LocalQueueView>,
    pub workloads: Vec<WorkloadRow>,
    pub workloads_omitted: usize,
    pub topology: Vec<TopologyView>,
    pub policies: Vec<PolicyView>,
}

/// One flavor-resource of a ClusterQueue or Cohort: quota and what is in use.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceView {
    pub flavor: String,
    pub resource: String,
    /// Nominal quota (a Cohort's own), as Kubernetes writes quantities.
    pub nominal: String,
    pub usage: String,
    /// Usage beyond nominal quota (a ClusterQueue borrowing from its cohort).
    pub borrowed: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub borrowing_limit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lending_limit: Option<String>,
    /// Milli-units, for bars: usage and nominal.
    pub usage_milli: i64,
    pub nominal_milli: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueueView {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cohort: Option<String>,
    pub active: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inactive_reason: Option<String>,
    pub queueing_strategy: &'static str,
    pub pending: usize,
    /// Holding quota (reserved or admitted).
    pub holding: usize,
    pub resources: Vec<ResourceView>,
    /// The enforced policy per extension point (`name@digest`).
    pub policies: BTreeMap<&'static str, String>,
    /// Under fair sharing: its dominant resource share (Kueue's weighted share).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weighted_share: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CohortView {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Child Cohorts and ClusterQueues, by name.
    pub cohorts: Vec<String>,
    pub cluster_queues: Vec<String>,
    /// The nominal quota of its whole subtree and what the ClusterQueues under it use.
    pub resources: Vec<ResourceView>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueView {
    pub namespace: String,
    pub name: String,
    pub cluster_queue: String,
    pub pending: usize,
    pub holding: usize,
    /// Admission fair sharing: its decayed usage per resource (weighted by the configured
    /// resource weights).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub fair_sharing_usage: BTreeMap<String, f64>,
}

/// Where a workload is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum State {
    Pending,
    /// Quota reserved, waiting for admission checks.
    QuotaReserved,
    Admitted,
    /// Preempted or evicted, quota not yet given back.
    Evicting,
    Finished,
    /// `spec.active: false` or deactivated.
    Inactive,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadRow {
    pub namespace: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_queue: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_queue: Option<String>,
    pub priority: i32,
    pub state: State,
    /// Pending: 0-based positions, as Kueue's visibility API gives them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position_in_local_queue: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position_in_cluster_queue: Option<usize>,
    /// Pending: the last reason the scheduler gave.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One workload in full: its row, what it holds, its history.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadDetail {
    #[serde(flatten)]
    pub row: WorkloadRow,
    pub pod_sets: Vec<PodSetView>,
    pub history: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSetView {
    pub name: String,
    pub count: i32,
    /// Per pod: resource → quantity.
    pub requests: BTreeMap<String, String>,
    /// Holding quota: resource → flavor.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub flavors: BTreeMap<String, String>,
    /// On a TAS flavor: domains spanned per level.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub domains_per_level: Vec<(String, usize)>,
}

/// A policy that decided (or shaped) a step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyUse {
    /// `ordering`, `preemption`, `flavor-assignment` or `placement`.
    pub extension: String,
    pub name: String,
    pub digest: String,
}

impl PolicyUse {
    pub fn of(extension: &str, p: &PolicyRef) -> PolicyUse {
        PolicyUse {
            extension: extension.to_string(),
            name: p.name.to_string(),
            digest: p.digest.to_string(),
        }
    }
}

/// One step of a workload's history.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// In the view's clock.
    pub time: f64,
    /// Kueue's word: `Pending`, `QuotaReserved`, `Admitted`, `Preempted`, `Evicted`,
    /// `Requeued`, `Finished`, ...
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_queue: Option<String>,
    /// Kueue's message or reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Preempted: the workload it made room for (`namespace/name`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemptor: Option<String>,
    /// Admitted: resource → flavor per podSet, as `podSet: resource=flavor, ...`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flavors: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<PolicyUse>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DomainView {
    pub level: String,
    /// Its values from the highest level down, joined by `/`.
    pub domain: String,
    /// resource → (used, allocatable), as quantities.
    pub resources: BTreeMap<String, (String, String)>,
    /// The most used resource's share of its allocatable, in percent.
    pub percent: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyView {
    pub flavor: String,
    pub topology: String,
    pub levels: Vec<String>,
    pub domains: Vec<DomainView>,
    pub domains_omitted: usize,
}

/// A policy in use, enforced or shadow.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyView {
    pub name: String,
    pub digest: String,
    pub extension: String,
    /// `Enforce` or `Shadow`.
    pub mode: &'static str,
    /// The ClusterQueues it decides (or shadows) for.
    pub cluster_queues: Vec<String>,
    pub builtin: bool,
    pub calls: u64,
    /// Calls the built-in decided instead, by reason (`trap`, `timeout`, ...).
    pub fallbacks: BTreeMap<String, u64>,
    pub quarantined: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadow: Option<ShadowView>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShadowView {
    pub decisions: u64,
    pub agree: u64,
    pub differ: u64,
    pub invalid: u64,
    pub failed: u64,
    pub skipped: u64,
    /// The latest decisions where it differed from the enforced policy.
    pub differences: Vec<crate::policy::shadow::Difference>,
}

/// A plugin's figures, from the driver's plugin host.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PluginFigures {
    pub name: String,
    pub digest: String,
    pub calls: u64,
    pub failures: BTreeMap<String, u64>,
    pub quarantined: bool,
    pub last_error: Option<String>,
}

impl PluginFigures {
    pub fn of(info: &crate::wasm::PluginInfo, status: &crate::wasm::PluginStatus) -> Self {
        PluginFigures {
            name: info.name.clone(),
            digest: info.digest.clone(),
            calls: status.calls,
            failures: status
                .failures
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
            quarantined: status.quarantined,
            last_error: status.last_error.clone(),
        }
    }
}

/// What only the driver knows.
pub trait Source {
    /// Where `id` is, beyond what the scheduler knows (finished, inactive, not arrived: `None`
    /// leaves it out); `default` is what the scheduler's state says.
    fn state(&self, id: WorkloadId, default: Option<State>) -> Option<State>;
    /// Its history, oldest first (at most [`MAX_STEPS`], the latest).
    fn history(&self, id: WorkloadId) -> Vec<Step>;
    /// The last reason it was given while pending.
    fn reason(&self, id: WorkloadId) -> Option<String>;
    /// The plugins loaded.
    fn plugins(&self) -> Vec<PluginFigures>;
}

/// A view and the details of the workloads it lists.
#[derive(Debug, Clone, Default)]
pub struct Published {
    pub view: View,
    /// By `namespace/name`.
    pub details: BTreeMap<String, WorkloadDetail>,
}

/// What the scheduler says of `id`: pending, holding quota (admitted, or reserved while
/// `admitted` says not), evicting.
fn scheduler_state(
    s: &Scheduler,
    id: WorkloadId,
    admitted: &dyn Fn(WorkloadId) -> bool,
) -> Option<State> {
    let c = &s.cluster;
    match c.holding(id) {
        Holding::Evicting(_) => Some(State::Evicting),
        Holding::Admitted(_) if admitted(id) => Some(State::Admitted),
        Holding::Admitted(_) => Some(State::QuotaReserved),
        Holding::None if s.is_pending(id) => Some(State::Pending),
        Holding::None if !c.workload(id).active => Some(State::Inactive),
        Holding::None => None,
    }
}

fn quantity(milli: i64) -> String {
    if milli >= i64::MAX / 2 {
        return "unlimited".to_string();
    }
    Quantity(milli).to_string()
}

/// A node's flavor-resources with quota or usage.
fn resources(c: &Cluster, node: NodeId) -> Vec<ResourceView> {
    let mut out = Vec::new();
    for i in 0..c.tree.n_fr() {
        let fr = crate::quota::FrIdx(i as u32);
        let q = c.tree.quota(node, fr);
        let usage = c.usage.get(node, fr);
        let declared = q.nominal != 0 || q.borrowing_limit.is_some() || q.lending_limit.is_some();
        if !declared && usage == 0 {
            continue;
        }
        let (flavor, resource) = c.names.fr_parts(fr);
        out.push(ResourceView {
            flavor: c.names.flavor_name(flavor).to_string(),
            resource: c.names.resource_name(resource).to_string(),
            nominal: quantity(q.nominal),
            usage: quantity(usage),
            borrowed: quantity((usage - q.nominal).max(0)),
            borrowing_limit: q.borrowing_limit.map(quantity),
            lending_limit: q.lending_limit.map(quantity),
            usage_milli: usage,
            nominal_milli: q.nominal,
        });
    }
    out
}

/// A Cohort's flavor-resources: the nominal quota of its whole subtree (its own, its
/// sub-cohorts' and its ClusterQueues') and what the ClusterQueues under it use.
fn cohort_resources(c: &Cluster, cohort: NodeId) -> Vec<ResourceView> {
    let queues = c.tree.subtree_cluster_queues(cohort);
    let mut nodes = vec![cohort];
    let mut i = 0;
    while i < nodes.len() {
        nodes.extend(c.tree.node(nodes[i]).children.iter().copied());
        i += 1;
    }
    let mut out = Vec::new();
    for i in 0..c.tree.n_fr() {
        let fr = crate::quota::FrIdx(i as u32);
        let nominal: i64 = nodes.iter().map(|n| c.tree.quota(*n, fr).nominal).sum();
        let usage: i64 = queues.iter().map(|q| c.usage.get(*q, fr)).sum();
        if nominal == 0 && usage == 0 {
            continue;
        }
        let own = c.tree.quota(cohort, fr);
        let (flavor, resource) = c.names.fr_parts(fr);
        out.push(ResourceView {
            flavor: c.names.flavor_name(flavor).to_string(),
            resource: c.names.resource_name(resource).to_string(),
            nominal: quantity(nominal),
            usage: quantity(usage),
            borrowed: quantity((usage - nominal).max(0)),
            borrowing_limit: own.borrowing_limit.map(quantity),
            lending_limit: own.lending_limit.map(quantity),
            usage_milli: usage,
            nominal_milli: nominal,
        });
    }
    out
}

/// The view of the scheduler's state now (`now` in the clock's seconds); `admitted` tells a
/// workload holding quota that is admitted from one still waiting for its checks.
pub fn build(
    s: &Scheduler,
    source: &dyn Source,
    admitted: &dyn Fn(WorkloadId) -> bool,
    title: &str,
    clock: &'static str,
    now: f64,
) -> Published {
    let c = &s.cluster;
    let mut pending_in_cq = vec![0usize; c.cluster_queues.len()];
    let mut holding_in_cq = vec![0usize; c.cluster_queues.len()];
    let mut pending_in_lq = vec![0usize; c.local_queues.len()];
    let mut holding_in_lq = vec![0usize; c.local_queues.len()];
    // Pending workloads in queue order with their positions.
    let mut listed = Vec::new();
    let mut positions = std::collections::HashMap::new();
    for cq in &c.cluster_queues {
        let mut in_lq: std::collections::HashMap<Option<crate::cluster::LqId>, usize> =
            Default::default();
        let ordered = s.queues.queue(cq.id).ordered();
        pending_in_cq[cq.id.index()] = ordered.len();
        for (i, id) in ordered.into_iter().enumerate() {
            let lq = c.workload(id).lq;
            let at = in_lq.entry(lq).or_default();
            positions.insert(id, (*at, i));
            *at += 1;
            if let Some(lq) = lq {
                pending_in_lq[lq.index()] += 1;
            }
        }
    }
    for cq in &c.cluster_queues {
        for id in c.admitted_in(cq.id) {
            holding_in_cq[cq.id.index()] += 1;
            if let Some(lq) = c.workload(id).lq {
                holding_in_lq[lq.index()] += 1;
            }
        }
    }
    // Rows: pending first (by ClusterQueue, in queue order), then holding quota, then the rest.
    let mut pending = Vec::new();
    let mut holding = Vec::new();
    let mut rest = Vec::new();
    let mut shown = 0usize;
    for w in &c.workloads {
        if w.name.is_empty() {
            continue;
        }
        let Some(state) = source.state(w.id, scheduler_state(s, w.id, admitted)) else {
            continue;
        };
        shown += 1;
        match state {
            State::Pending => pending.push((w.id, state)),
            State::Admitted | State::QuotaReserved | State::Evicting => holding.push((w.id, state)),
            _ => rest.push((w.id, state)),
        }
    }
    pending.sort_by_key(|(id, _)| {
        let (_, in_cq) = positions
            .get(id)
            .copied()
            .unwrap_or((usize::MAX, usize::MAX));
        (c.workload(*id).cluster_queue.map(|q| q.0), in_cq)
    });
    holding.sort_by_key(|(id, _)| std::cmp::Reverse(c.reserved_at(*id)));
    rest.reverse();
    for (id, state) in pending.into_iter().chain(holding).chain(rest) {
        if listed.len() >= MAX_WORKLOADS {
            break;
        }
        listed.push((id, state, positions.get(&id).copied()));
    }
    let mut workloads = Vec::with_capacity(listed.len());
    let mut details = BTreeMap::new();
    for (id, state, pos) in listed {
        let w = c.workload(id);
        let held = c.admission(id);
        let cq = held
            .map(|a| a.cluster_queue)
            .or(w.cluster_queue)
            .map(|q| c.cq(q).name.clone());
        let row = WorkloadRow {
            namespace: w.namespace.clone(),
            name: w.name.clone(),
            local_queue: w.local_queue.clone(),
            cluster_queue: cq,
            priority: w.priority,
            state,
            position_in_local_queue: pos.map(|p| p.0),
            position_in_cluster_queue: pos.map(|p| p.1),
            reason: (state == State::Pending)
                .then(|| source.reason(id))
                .flatten(),
        };
        let pod_sets = w
            .pod_sets
            .iter()
            .map(|ps| {
                let assigned = held.and_then(|a| a.pod_sets.iter().find(|p| p.name == ps.name));
                PodSetView {
                    name: ps.name.to_string(),
                    count: assigned.map(|a| a.count).unwrap_or(ps.count),
                    requests: ps
                        .requests
                        .iter()
                        .map(|(r, v)| (c.names.resource_name(*r).to_string(), quantity(*v)))
                        .collect(),
                    flavors: assigned
                        .map(|a| {
                            a.flavors
                                .iter()
                                .map(|(r, f)| {
                                    (
                                        c.names.resource_name(*r).to_string(),
                                        c.names.flavor_name(*f).to_string(),
                                    )
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                    domains_per_level: assigned
                        .and_then(|a| a.topology.as_ref())
                        .map(|p| c.tas.spans(p))
                        .unwrap_or_default(),
                }
            })
            .collect();
        let mut history = source.history(id);
        if history.len() > MAX_STEPS {
            history.drain(..history.len() - MAX_STEPS);
        }
        details.insert(
            format!("{}/{}", w.namespace, w.name),
            WorkloadDetail {
                row: row.clone(),
                pod_sets,
                history,
            },
        );
        workloads.push(row);
    }
    let cluster_queues = c
        .cluster_queues
        .iter()
        .map(|cq| {
            let set = s.policies_for(cq.id);
            let mut policies = BTreeMap::new();
            policies.insert("ordering", reference(&set.ordering.id()));
            policies.insert("preemption", reference(&set.preemption.id()));
            policies.insert("flavor-assignment", reference(&set.flavors.id()));
            if !c.tas.is_empty() {
                policies.insert("placement", reference(&set.placement.id()));
            }
            ClusterQueueView {
                name: cq.name.clone(),
                cohort: cq.cohort.clone(),
                active: cq.is_active(),
                inactive_reason: cq.inactive_reason.clone(),
                queueing_strategy: match cq.strategy {
                    crate::api::QueueingStrategy::StrictFIFO => "StrictFIFO",
                    crate::api::QueueingStrategy::BestEffortFIFO => "BestEffortFIFO",
                },
                pending: pending_in_cq[cq.id.index()],
                holding: holding_in_cq[cq.id.index()],
                resources: resources(c, cq.node),
                policies,
                weighted_share: c.settings.fair_sharing_enabled().then(|| {
                    let weight = c.node_meta[cq.node.index()].fair_weight;
                    c.tree
                        .drs(&c.names, &c.usage, cq.node, weight, &[])
                        .rounded()
                }),
            }
        })
        .collect();
    let cohorts = c
        .tree
        .nodes()
        .filter(|(_, n)| n.kind == NodeKind::Cohort)
        .map(|(id, n)| {
            let names = |kind: NodeKind| {
                n.children
                    .iter()
                    .map(|ch| c.tree.node(*ch))
                    .filter(|ch| ch.kind == kind)
                    .map(|ch| ch.name.clone())
                    .collect()
            };
            CohortView {
                name: n.name.clone(),
                parent: n.parent.map(|p| c.tree.node(p).name.clone()),
                cohorts: names(NodeKind::Cohort),
                cluster_queues: names(NodeKind::ClusterQueue),
                resources: cohort_resources(c, id),
            }
        })
        .collect();
    let local_queues = c
        .local_queues
        .iter()
        .enumerate()
        .map(|(i, lq)| LocalQueueView {
            namespace: lq.namespace.clone(),
            name: lq.name.clone(),
            cluster_queue: lq.cluster_queue_name.clone(),
            pending: pending_in_lq[i],
            holding: holding_in_lq[i],
            fair_sharing_usage: lq_usage(c, crate::cluster::LqId(i as u32)),
        })
        .collect();
    let view = View {
        title: title.to_string(),
        clock,
        now,
        version: 0,
        running: false,
        cluster_queues,
        cohorts,
        local_queues,
        workloads,
        workloads_omitted: shown.saturating_sub(details.len()),
        topology: topology(c),
        policies: policies(s, &source.plugins()),
    };
    Published { view, details }
}

fn reference(p: &PolicyRef) -> String {
    format!("{}@{}", p.name, p.digest)
}

/// Admission fair sharing's decayed usage of a LocalQueue, by resource (empty without it).
fn lq_usage(c: &Cluster, lq: crate::cluster::LqId) -> BTreeMap<String, f64> {
    if c.settings.admission_fair_sharing.is_none() {
        return BTreeMap::new();
    }
    c.lq_usage
        .consumed(lq)
        .iter()
        .enumerate()
        .filter(|(_, v)| **v > 0.0)
        .map(|(r, v)| {
            let name = c
                .names
                .resource_name(crate::quota::ResourceId(r as u32))
                .to_string();
            (name, *v / 1000.0)
        })
        .collect()
}

fn topology(c: &Cluster) -> Vec<TopologyView> {
    let utilisation = c.tas.utilisation();
    c.tas
        .flavors
        .iter()
        .map(|f| {
            let tree = &f.tree;
            let lowest = tree.levels.last().cloned().unwrap_or_default();
            let mut domains: Vec<DomainView> = utilisation
                .iter()
                .filter(|d| d.flavor == f.flavor)
                .map(|d| {
                    let percent = d
                        .resources
                        .iter()
                        .filter(|(_, _, cap)| *cap > 0)
                        .map(|(_, used, cap)| *used as f64 * 100.0 / *cap as f64)
                        .fold(0.0, f64::max);
                    DomainView {
                        level: d.level.clone(),
                        domain: d.domain.clone(),
                        resources: d
                            .resources
                            .iter()
                            .map(|(r, used, cap)| (r.clone(), (quantity(*used), quantity(*cap))))
                            .collect(),
                        percent,
                    }
                })
                .collect();
            // The levels above nodes first, by level then name; nodes after.
            let level_of = |l: &str| tree.levels.iter().position(|x| x == l).unwrap_or(0);
            domains.sort_by(|a, b| {
                (a.level == lowest, level_of(&a.level), &a.domain).cmp(&(
                    b.level == lowest,
                    level_of(&b.level),
                    &b.domain,
                ))
            });
            let omitted = domains.len().saturating_sub(MAX_DOMAINS);
            domains.truncate(MAX_DOMAINS);
            TopologyView {
                flavor: c.names.flavor_name(f.flavor).to_string(),
                topology: tree.topology.clone(),
                levels: tree.levels.clone(),
                domains,
                domains_omitted: omitted,
            }
        })
        .collect()
}

/// Every policy bound to a ClusterQueue, enforced and shadow, with its figures.
fn policies(s: &Scheduler, plugins: &[PluginFigures]) -> Vec<PolicyView> {
    let c = &s.cluster;
    let mut by_key: BTreeMap<(String, &'static str, String, &'static str), Vec<String>> =
        BTreeMap::new();
    let mut bind = |p: PolicyRef, ext: &'static str, mode: &'static str, cq: &str| {
        by_key
            .entry((p.name.to_string(), ext, p.digest.to_string(), mode))
            .or_default()
            .push(cq.to_string());
    };
    let mut logs = Vec::new();
    for cq in &c.cluster_queues {
        let set = s.policies_for(cq.id);
        bind(set.ordering.id(), "ordering", "Enforce", &cq.name);
        bind(set.preemption.id(), "preemption", "Enforce", &cq.name);
        bind(set.flavors.id(), "flavor-assignment", "Enforce", &cq.name);
        if !c.tas.is_empty() {
            bind(set.placement.id(), "placement", "Enforce", &cq.name);
        }
        let sh = &set.shadows;
        for p in &sh.ordering {
            bind(p.id(), "ordering", "Shadow", &cq.name);
        }
        for p in &sh.preemption {
            bind(p.id(), "preemption", "Shadow", &cq.name);
        }
        for p in &sh.flavors {
            bind(p.id(), "flavor-assignment", "Shadow", &cq.name);
        }
        for p in &sh.placement {
            bind(p.id(), "placement", "Shadow", &cq.name);
        }
        if !sh.is_empty() && !logs.iter().any(|l| std::sync::Arc::ptr_eq(l, &sh.log)) {
            logs.push(sh.log.clone());
        }
    }
    let mut figures = BTreeMap::new();
    for log in &logs {
        figures.extend(log.figures());
    }
    by_key
        .into_iter()
        .map(|((name, extension, digest, mode), cluster_queues)| {
            let plugin = plugins
                .iter()
                .find(|p| p.name == name && p.digest == digest);
            let shadow = (mode == "Shadow")
                .then(|| figures.get(&name))
                .flatten()
                .map(|f| ShadowView {
                    decisions: f.decisions,
                    agree: f.agree,
                    differ: f.differ,
                    invalid: f.invalid,
                    failed: f.fallback,
                    skipped: f.skipped,
                    differences: logs
                        .iter()
                        .flat_map(|l| l.recent(&name))
                        .map(|(_, d)| d)
                        .collect(),
                });
            PolicyView {
                builtin: digest == "builtin" || plugin.is_none() && mode == "Enforce",
                calls: plugin.map_or(0, |p| p.calls),
                fallbacks: plugin.map(|p| p.failures.clone()).unwrap_or_default(),
                quarantined: plugin.is_some_and(|p| p.quarantined),
                last_error: plugin.and_then(|p| p.last_error.clone()),
                name,
                digest,
                extension: extension.to_string(),
                mode,
                cluster_queues,
                shadow,
            }
        })
        .collect()
}

/// Bounded per-workload histories, kept by a driver that has no timeline of its own (the
/// controller): at most [`MAX_STEPS`] steps each, at most `max_workloads` workloads (the
/// least recently changed forgotten first).
#[derive(Debug, Default)]
pub struct History {
    steps: std::collections::HashMap<String, (u64, std::collections::VecDeque<Step>)>,
    clock: u64,
    max_workloads: usize,
}

impl History {
    pub fn new(max_workloads: usize) -> History {
        History {
            max_workloads,
            ..History::default()
        }
    }

    /// Adds a step to `key`'s history (`namespace/name`). A step that repeats the last one
    /// (same kind and message) only moves nothing: the first time it was said stays.
    pub fn record(&mut self, key: &str, step: Step) {
        self.clock += 1;
        let clock = self.clock;
        let entry = self.steps.entry(key.to_string()).or_default();
        entry.0 = clock;
        let steps = &mut entry.1;
        if steps
            .back()
            .is_some_and(|l| l.kind == step.kind && l.message == step.message)
        {
            return;
        }
        if steps.len() == MAX_STEPS {
            steps.pop_front();
        }
        steps.push_back(step);
        if self.steps.len() > self.max_workloads.max(1) {
            // Forget the least recently changed tenth at once: amortised O(1) per step.
            let mut ages: Vec<u64> = self.steps.values().map(|(t, _)| *t).collect();
            let cut = ages.len() / 10;
            let (_, nth, _) = ages.select_nth_unstable(cut);
            let nth = *nth;
            self.steps.retain(|_, (t, _)| *t > nth);
        }
    }

    pub fn get(&self, key: &str) -> Vec<Step> {
        self.steps
            .get(key)
            .map(|(_, s)| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The last `Pending` step's message.
    pub fn reason(&self, key: &str) -> Option<String> {
        let (_, steps) = self.steps.get(key)?;
        steps
            .iter()
            .rev()
            .find(|s| s.kind == "Pending")
            .and_then(|s| s.message.clone())
    }

    pub fn forget(&mut self, key: &str) {
        self.steps.remove(key);
    }

    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(kind: &str, message: &str) -> Step {
        Step {
            time: 0.0,
            kind: kind.into(),
            cluster_queue: None,
            message: Some(message.into()),
            preemptor: None,
            flavors: None,
            policies: Vec::new(),
        }
    }

    #[test]
    fn history_keeps_the_latest_steps_and_drops_repeats() {
        let mut h = History::new(10);
        h.record("ns/a", step("Pending", "no quota"));
        h.record("ns/a", step("Pending", "no quota"));
        assert_eq!(h.get("ns/a").len(), 1);
        for i in 0..(MAX_STEPS + 5) {
            h.record("ns/a", step("Pending", &format!("reason {i}")));
        }
        let steps = h.get("ns/a");
        assert_eq!(steps.len(), MAX_STEPS);
        assert_eq!(
            steps.last().unwrap().message.as_deref(),
            Some(format!("reason {}", MAX_STEPS + 4).as_str())
        );
        assert_eq!(h.reason("ns/a"), steps.last().unwrap().message);
    }

    #[test]
    fn history_forgets_the_least_recently_changed_workloads_past_its_bound() {
        let mut h = History::new(20);
        for i in 0..100 {
            h.record(&format!("ns/w{i}"), step("Pending", "x"));
        }
        assert!(h.len() <= 20, "{}", h.len());
        assert!(!h.get("ns/w99").is_empty(), "the latest is kept");
        assert!(h.get("ns/w0").is_empty(), "the oldest is forgotten");
    }
}
