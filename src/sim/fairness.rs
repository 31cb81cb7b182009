//! How fairly a run shared quota: the `fairness` object of the simulation report.
//!
//! For each root cohort tree (a ClusterQueue without a cohort is a tree of its own) and each
//! flavor/resource with capacity there:
//! - **capacity**: Σ nominal quota over every node of the tree (ClusterQueues and Cohorts);
//! - **share** of a ClusterQueue or LocalQueue: its time-weighted average usage over the run,
//!   divided by the tree's capacity (at the current instant when the run took no virtual time);
//! - **entitlement**, as a fraction of the capacity: a ClusterQueue with demand (any workload
//!   pending or admitted during the run) that declares quota for the flavor/resource is
//!   entitled to `weight / Σ weights` of those ClusterQueues (`fairSharing.weight`, default 1);
//!   the others to nothing. A LocalQueue with demand gets its ClusterQueue's entitlement split
//!   by LocalQueue `fairSharing.weight` among the LocalQueues of that ClusterQueue with demand;
//! - **ratio** = share / entitlement (1 = exactly its entitlement), and **Jain's index** over the
//!   ratios of the entitled queues, `J = (Σx)² / (n·Σx²)`: 1 when every entitled queue got the
//!   same multiple of its entitlement, down to 1/n when one got everything (also 1 when none
//!   got anything). `jain` is over ClusterQueues, `jainLocalQueues` over LocalQueues.
//!
//! Besides: preemptions by reason (`InCohortFairSharing`, `InCohortReclamation`, ...) and the
//! share of every ClusterQueue with demand over time, sampled at every instant the usage
//! changed (and at the start and the end) or, when it changed at more than 100 instants, at
//! 100 evenly spaced ones; each sample is the share held from that instant on.
//!
//! Everything is derived from what the simulation observed: the time-weighted usage integral
//! per ClusterQueue, the log of reservations and releases ([`UsageChange`]), and the events.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use crate::cluster::{Admission, Cluster, CqId, LqId, Millis, WorkloadId};
use crate::quota::{FrIdx, NodeId};

use super::{EventType, Simulation};

/// The most samples of the share over time.
pub const MAX_SAMPLES: usize = 100;

/// One reservation or release of quota on the virtual clock, as the usage log gives it.
#[derive(Debug, Clone, Copy)]
pub struct UsageChange<'a> {
    pub at: Millis,
    pub workload: WorkloadId,
    /// Reserved (`true`) or released (`false`).
    pub reserved: bool,
    /// What was reserved: the log keeps one admission per body (the same ClusterQueue,
    /// podSets and usage), so its `reserved_at` is the first alike one's; see `at`.
    pub admission: &'a Admission,
}

impl UsageChange<'_> {
    pub(crate) fn sign(&self) -> i64 {
        if self.reserved { 1 } else { -1 }
    }
}

/// The `fairness` object of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Fairness {
    /// Per root cohort tree, by the root's name (a ClusterQueue's own name when it has no
    /// cohort).
    pub trees: BTreeMap<String, TreeFairness>,
    pub cluster_queues: BTreeMap<String, QueueFairness>,
    /// By `namespace/name`.
    pub local_queues: BTreeMap<String, QueueFairness>,
    /// Preemptions by reason over the run.
    pub preemptions: BTreeMap<String, u64>,
    /// The share of each ClusterQueue with demand over time.
    pub samples: Vec<Sample>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeFairness {
    pub cluster_queues: Vec<String>,
    /// `flavor/resource` → Σ nominal quota in the tree (in units: cores, bytes, ...).
    pub capacity: BTreeMap<String, f64>,
    /// `flavor/resource` → Jain's index over the ClusterQueues entitled to it.
    pub jain: BTreeMap<String, f64>,
    /// `flavor/resource` → Jain's index over the LocalQueues entitled to it.
    pub jain_local_queues: BTreeMap<String, f64>,
}

/// One ClusterQueue's or LocalQueue's fairness.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueFairness {
    /// The root of its cohort tree.
    pub tree: String,
    /// A LocalQueue's ClusterQueue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_queue: Option<String>,
    /// `fairSharing.weight`.
    pub weight: f64,
    /// Whether any of its workloads was pending or admitted during the run.
    pub demand: bool,
    /// `flavor/resource` → share, entitlement and ratio.
    pub resources: BTreeMap<String, ResourceFairness>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceFairness {
    /// Time-weighted average usage / tree capacity.
    pub share: f64,
    /// Weighted entitlement / tree capacity (0 without demand).
    pub entitlement: f64,
    /// share / entitlement; `None` when not entitled.
    pub ratio: Option<f64>,
}

/// The share of every ClusterQueue with demand from `time` (virtual seconds) on.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    pub time: f64,
    /// ClusterQueue → `flavor/resource` → share of the tree's capacity.
    pub shares: BTreeMap<String, BTreeMap<String, f64>>,
}

/// Jain's fairness index `(Σx)² / (n·Σx²)`; 1 for all zeros, `None` for no values.
pub fn jain(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let sum: f64 = xs.iter().sum();
    let squares: f64 = xs.iter().map(|x| x * x).sum();
    if squares == 0.0 {
        return Some(1.0);
    }
    Some(sum * sum / (xs.len() as f64 * squares))
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// A LocalQueue's `fairSharing.weight` in milli-units.
fn lq_weight(cluster: &Cluster, lq: LqId) -> i64 {
    cluster.local_queues[lq.index()].fair_weight
}

/// A root cohort tree: its ClusterQueues and capacity per flavor-resource.
struct Tree {
    name: String,
    cqs: Vec<CqId>,
    /// Flavor-resources with capacity, and the capacity (milli-units).
    capacity: Vec<(FrIdx, i64)>,
}

fn trees(cluster: &Cluster) -> (Vec<Tree>, Vec<usize>) {
    let tree = &cluster.tree;
    let mut by_root: BTreeMap<NodeId, usize> = BTreeMap::new();
    let mut out: Vec<Tree> = Vec::new();
    let mut tree_of = vec![0; cluster.cluster_queues.len()];
    let mut names = BTreeSet::new();
    for cq in &cluster.cluster_queues {
        let root = tree.root(cq.node);
        let index = *by_root.entry(root).or_insert_with(|| {
            let mut capacity = vec![0i64; tree.n_fr()];
            let mut stack = vec![root];
            while let Some(n) = stack.pop() {
                for (c, q) in capacity.iter_mut().zip(tree.quotas(n)) {
                    *c = c.saturating_add(q.nominal);
                }
                stack.extend(tree.node(n).children.iter().copied());
            }
            let mut name = tree.node(root).name.clone();
            if !names.insert(name.clone()) {
                name.push_str(" (ClusterQueue)");
                names.insert(name.clone());
            }
            out.push(Tree {
                name,
                cqs: Vec::new(),
                capacity: capacity
                    .into_iter()
                    .enumerate()
                    .filter(|&(_, c)| c > 0)
                    .map(|(fr, c)| (FrIdx(fr as u32), c))
                    .collect(),
            });
            out.len() - 1
        });
        out[index].cqs.push(cq.id);
        tree_of[cq.id.index()] = index;
    }
    (out, tree_of)
}

/// Usage integrals (milli-unit·ms) per LocalQueue and flavor-resource, replayed from the log.
fn lq_integrals(sim: &Simulation) -> Vec<i128> {
    let cluster = sim.cluster();
    let n_fr = cluster.tree.n_fr();
    let mut current = vec![0i64; cluster.local_queues.len() * n_fr];
    let mut integral = vec![0i128; current.len()];
    let mut last = sim.t0();
    let advance = |to: Millis, current: &[i64], integral: &mut [i128], last: &mut Millis| {
        let dt = i128::from(to - *last);
        if dt > 0 {
            for (i, &u) in integral.iter_mut().zip(current) {
                *i += i128::from(u) * dt;
            }
            *last = to;
        }
    };
    for change in &sim.usage_log {
        advance(change.at, &current, &mut integral, &mut last);
        if let Some(lq) = cluster.workload(change.workload).lq {
            for &(fr, v) in &change.admission.usage {
                current[lq.index() * n_fr + fr.index()] += change.sign() * v;
            }
        }
    }
    advance(sim.now(), &current, &mut integral, &mut last);
    integral
}

/// Current usage per LocalQueue and flavor-resource (milli-units).
fn lq_current(cluster: &Cluster) -> Vec<i64> {
    let n_fr = cluster.tree.n_fr();
    let mut current = vec![0i64; cluster.local_queues.len() * n_fr];
    for cq in &cluster.cluster_queues {
        for row in cluster.admitted_rows(cq.id) {
            let Some(lq) = row.lq else {
                continue;
            };
            for &(fr, v) in &row.usage {
                current[lq.index() * n_fr + fr.index()] += v;
            }
        }
    }
    current
}

/// Whether each ClusterQueue and LocalQueue had a workload pending or admitted during the run.
fn demand(sim: &Simulation) -> (Vec<bool>, Vec<bool>) {
    let cluster = sim.cluster();
    let mut cq_demand = vec![false; cluster.cluster_queues.len()];
    let mut lq_demand = vec![false; cluster.local_queues.len()];
    for wl in &cluster.workloads {
        let i = wl.id.index();
        // Never admitted and never queued (not arrived yet, or deactivated): no demand.
        if sim.lives[i].first_admitted().is_none()
            && (sim.lives[i].arrival > sim.now() || !wl.active)
        {
            continue;
        }
        let cq = cluster
            .admission(wl.id)
            .map(|a| a.cluster_queue)
            .or(wl.cluster_queue);
        if let Some(cq) = cq {
            cq_demand[cq.index()] = true;
        }
        if let Some(lq) = wl.lq {
            lq_demand[lq.index()] = true;
        }
    }
    (cq_demand, lq_demand)
}

pub fn build(sim: &Simulation) -> Fairness {
    let cluster = sim.cluster();
    let n_fr = cluster.tree.n_fr();
    let elapsed = sim.now() - sim.t0();
    let (trees, tree_of) = trees(cluster);
    let (cq_demand, lq_demand) = demand(sim);
    let lq_usage = if elapsed > 0 {
        lq_integrals(sim).into_iter().map(|v| v as f64).collect()
    } else {
        lq_current(cluster)
            .into_iter()
            .map(|v| v as f64)
            .collect::<Vec<_>>()
    };
    // Average usage (milli-units) over the run.
    let per_time = |v: f64| if elapsed > 0 { v / elapsed as f64 } else { v };
    let cq_usage = |cq: CqId, fr: FrIdx| {
        let node = cluster.cq(cq).node;
        if elapsed > 0 {
            per_time(sim.usage_integral[node.index() * n_fr + fr.index()] as f64)
        } else {
            cluster.usage.get(node, fr) as f64
        }
    };

    let mut fairness = Fairness::default();
    // LocalQueues per ClusterQueue.
    let mut lqs_of: Vec<Vec<LqId>> = vec![Vec::new(); cluster.cluster_queues.len()];
    for (i, lq) in cluster.local_queues.iter().enumerate() {
        if let Some(cq) = lq.cluster_queue {
            lqs_of[cq.index()].push(LqId(i as u32));
        }
    }
    for tree in &trees {
        let mut summary = TreeFairness {
            cluster_queues: tree
                .cqs
                .iter()
                .map(|&cq| cluster.cq(cq).name.clone())
                .collect(),
            capacity: BTreeMap::new(),
            jain: BTreeMap::new(),
            jain_local_queues: BTreeMap::new(),
        };
        let mut cq_entries: Vec<(CqId, QueueFairness)> = tree
            .cqs
            .iter()
            .map(|&cq| {
                let info = cluster.cq(cq);
                let entry = QueueFairness {
                    tree: tree.name.clone(),
                    cluster_queue: None,
                    weight: cluster.node_meta[info.node.index()].fair_weight as f64 / 1000.0,
                    demand: cq_demand[cq.index()],
                    resources: BTreeMap::new(),
                };
                (cq, entry)
            })
            .collect();
        let mut lq_entries: Vec<(LqId, QueueFairness)> = tree
            .cqs
            .iter()
            .flat_map(|&cq| lqs_of[cq.index()].iter().map(move |&lq| (cq, lq)))
            .map(|(cq, lq)| {
                let entry = QueueFairness {
                    tree: tree.name.clone(),
                    cluster_queue: Some(cluster.cq(cq).name.clone()),
                    weight: lq_weight(cluster, lq) as f64 / 1000.0,
                    demand: lq_demand[lq.index()],
                    resources: BTreeMap::new(),
                };
                (lq, entry)
            })
            .collect();
        for &(fr, capacity) in &tree.capacity {
            let fr_name = cluster.fr_name(fr);
            let cap = capacity as f64;
            summary.capacity.insert(fr_name.clone(), cap / 1000.0);
            let entitled = |cq: CqId| cq_demand[cq.index()] && cluster.cq(cq).frs.contains(&fr);
            let total_weight: i64 = tree
                .cqs
                .iter()
                .filter(|&&cq| entitled(cq))
                .map(|&cq| cluster.node_meta[cluster.cq(cq).node.index()].fair_weight)
                .sum();
            let mut ratios = Vec::new();
            let mut cq_entitlement = vec![0.0; cluster.cluster_queues.len()];
            for (cq, entry) in &mut cq_entries {
                let weight = cluster.node_meta[cluster.cq(*cq).node.index()].fair_weight;
                let entitlement = if entitled(*cq) && total_weight > 0 {
                    weight as f64 / total_weight as f64
                } else {
                    0.0
                };
                cq_entitlement[cq.index()] = entitlement;
                let share = cq_usage(*cq, fr) / cap;
                let ratio = (entitlement > 0.0).then(|| share / entitlement);
                if let Some(r) = ratio {
                    ratios.push(r);
                }
                entry.resources.insert(
                    fr_name.clone(),
                    ResourceFairness {
                        share: round6(share),
                        entitlement: round6(entitlement),
                        ratio: ratio.map(round6),
                    },
                );
            }
            if let Some(j) = jain(&ratios) {
                summary.jain.insert(fr_name.clone(), round6(j));
            }
            let mut lq_ratios = Vec::new();
            for (lq, entry) in &mut lq_entries {
                let Some(cq) = cluster.local_queues[lq.index()].cluster_queue else {
                    continue;
                };
                let siblings: i64 = lqs_of[cq.index()]
                    .iter()
                    .filter(|l| lq_demand[l.index()])
                    .map(|&l| lq_weight(cluster, l))
                    .sum();
                let entitlement = if lq_demand[lq.index()] && siblings > 0 {
                    cq_entitlement[cq.index()] * lq_weight(cluster, *lq) as f64 / siblings as f64
                } else {
                    0.0
                };
                let share = per_time(lq_usage[lq.index() * n_fr + fr.index()]) / cap;
                let ratio = (entitlement > 0.0).then(|| share / entitlement);
                if let Some(r) = ratio {
                    lq_ratios.push(r);
                }
                entry.resources.insert(
                    fr_name.clone(),
                    ResourceFairness {
                        share: round6(share),
                        entitlement: round6(entitlement),
                        ratio: ratio.map(round6),
                    },
                );
            }
            if let Some(j) = jain(&lq_ratios) {
                summary.jain_local_queues.insert(fr_name, round6(j));
            }
        }
        for (cq, entry) in cq_entries {
            fairness
                .cluster_queues
                .insert(cluster.cq(cq).name.clone(), entry);
        }
        for (lq, entry) in lq_entries {
            let info = &cluster.local_queues[lq.index()];
            fairness
                .local_queues
                .insert(format!("{}/{}", info.namespace, info.name), entry);
        }
        fairness.trees.insert(tree.name.clone(), summary);
    }
    for e in &sim.events.records {
        if e.kind == EventType::Preempted {
            let reason = sim.events.reason(e).unwrap_or_default();
            if let Some(n) = fairness.preemptions.get_mut(reason) {
                *n += 1;
            } else {
                fairness.preemptions.insert(reason.to_string(), 1);
            }
        }
    }
    fairness.samples = samples(sim, &trees, &tree_of, &cq_demand);
    fairness
}

/// The share of each ClusterQueue with demand over time (see the module documentation).
fn samples(sim: &Simulation, trees: &[Tree], tree_of: &[usize], demand: &[bool]) -> Vec<Sample> {
    let cluster = sim.cluster();
    let n_fr = cluster.tree.n_fr();
    let (t0, end) = (sim.t0(), sim.now());
    let mut instants: BTreeSet<Millis> = sim.usage_log.iter().map(|c| c.at.max(t0)).collect();
    instants.insert(t0);
    instants.insert(end);
    let times: Vec<Millis> = if instants.len() <= MAX_SAMPLES {
        instants.into_iter().collect()
    } else {
        let span = (end - t0) as f64;
        (0..MAX_SAMPLES)
            .map(|k| t0 + (span * k as f64 / (MAX_SAMPLES - 1) as f64).round() as Millis)
            .collect()
    };
    let mut usage = vec![0i64; cluster.cluster_queues.len() * n_fr];
    let mut log = sim.usage_log.iter().peekable();
    let mut out = Vec::with_capacity(times.len());
    for t in times {
        while let Some(change) = log.next_if(|c| c.at.max(t0) <= t) {
            let cq = change.admission.cluster_queue;
            for &(fr, v) in &change.admission.usage {
                usage[cq.index() * n_fr + fr.index()] += change.sign() * v;
            }
        }
        let mut shares = BTreeMap::new();
        for cq in &cluster.cluster_queues {
            if !demand[cq.id.index()] {
                continue;
            }
            let tree = &trees[tree_of[cq.id.index()]];
            let per_fr: BTreeMap<String, f64> = tree
                .capacity
                .iter()
                .filter(|(fr, _)| cq.frs.contains(fr))
                .map(|&(fr, cap)| {
                    let u = usage[cq.id.index() * n_fr + fr.index()];
                    (cluster.fr_name(fr), round6(u as f64 / cap as f64))
                })
                .collect();
            shares.insert(cq.name.clone(), per_fr);
        }
        out.push(Sample {
            time: (t - t0) as f64 / 1000.0,
            shares,
        });
    }
    out
}

impl Fairness {
    /// The fairness section of the table report (samples are JSON only).
    pub fn write_table(&self, out: &mut String) {
        if self.trees.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "\nFairness (average share of the cohort tree's capacity vs weighted entitlement):"
        );
        for (name, tree) in &self.trees {
            let jain: Vec<String> = tree
                .jain
                .iter()
                .map(|(fr, j)| format!("{fr} {j:.3}"))
                .collect();
            let _ = writeln!(
                out,
                "  tree {name}: Jain's index {}",
                if jain.is_empty() {
                    "-".to_string()
                } else {
                    jain.join(", ")
                }
            );
            for cq in &tree.cluster_queues {
                let Some(q) = self.cluster_queues.get(cq) else {
                    continue;
                };
                let _ = writeln!(out, "    {:<24} {}", cq, queue_line(q));
                let lqs: Vec<(&String, &QueueFairness)> = self
                    .local_queues
                    .iter()
                    .filter(|(_, l)| l.cluster_queue.as_ref() == Some(cq) && l.demand)
                    .collect();
                // A single LocalQueue with demand is its ClusterQueue over again.
                if lqs.len() > 1 {
                    for (name, l) in lqs {
                        let _ = writeln!(out, "      {:<22} {}", name, queue_line(l));
                    }
                }
            }
        }
        if !self.preemptions.is_empty() {
            let by_reason: Vec<String> = self
                .preemptions
                .iter()
                .map(|(r, n)| format!("{r} {n}"))
                .collect();
            let _ = writeln!(out, "  preemptions by reason: {}", by_reason.join(", "));
        }
    }
}

fn queue_line(q: &QueueFairness) -> String {
    if !q.demand {
        return format!("weight {} (no demand)", q.weight);
    }
    let resources: Vec<String> = q
        .resources
        .iter()
        .map(|(fr, r)| {
            format!(
                "{fr} share {:.1}% of entitled {:.1}% (x{})",
                r.share * 100.0,
                r.entitlement * 100.0,
                r.ratio.map_or("-".to_string(), |x| format!("{x:.2}"))
            )
        })
        .collect();
    format!("weight {}  {}", q.weight, resources.join(", "))
}
