//! What a simulation run reports: per-workload final state, the ordered event log, a
//! per-ClusterQueue summary (admissions, waits, usage as % of nominal quota, preemptions) and
//! how fairly quota was shared ([`super::fairness`]: shares against weighted entitlements,
//! Jain's index, preemptions by reason, the share over time), as JSON (`--output json`) or as
//! text for a person (`--output table`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::cluster::{Cluster, WorkloadId};
use crate::policy::PolicyRef;

use super::{CLASS, Simulation};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum EventType {
    /// Quota reserved; admitted once every admission check is Ready (at once without any).
    QuotaReserved,
    Admitted,
    /// An admission check changed state (reason: `check: State (message)`).
    AdmissionCheck,
    /// Evicted by an admission check in Retry (reason `AdmissionCheck: ...`) or by the PodsReady
    /// timeout (`PodsReadyTimeout: ...`).
    Evicted,
    /// A rejected admission check, or too many PodsReady timeouts, deactivated the workload.
    Deactivated,
    /// The admitted workload's pods are all ready (only when they were not at once).
    PodsReady,
    Preempted,
    Requeued,
    Inadmissible,
    Finished,
    /// A MultiKueue manager removed this worker's copy of its workload (another worker admitted
    /// it, the manager evicted it, or this worker was lost).
    Removed,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Seconds on the virtual clock.
    pub time: f64,
    pub cycle: u64,
    #[serde(rename = "type")]
    pub kind: EventType,
    /// `namespace/name`.
    pub workload: String,
    pub cluster_queue: Option<String>,
    pub reason: Option<String>,
    pub preemptor: Option<String>,
    pub policy: PolicyRef,
    /// Admissions: the ordering policy that placed the workload in its cycle's order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ordered_by: Option<PolicyRef>,
    /// Admissions: what the workload was admitted with (flavors, counts, topology
    /// assignment), so that the events alone tell what every queue and node held when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admission: Option<AdmissionReport>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSetReport {
    pub name: String,
    pub count: i32,
    pub flavors: BTreeMap<String, String>,
    /// On a TAS flavor: where its pods went, in Kueue's v1beta2 form...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology_assignment: Option<crate::api::topology::TopologyAssignment>,
    /// ...and how many domains of each level that spans (highest level first).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub domains_per_level: Vec<(String, usize)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionReport {
    pub pod_set_assignments: Vec<PodSetReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadReport {
    pub namespace: String,
    pub name: String,
    pub cluster_queue: Option<String>,
    /// `namespace/name` of its LocalQueue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_queue: Option<String>,
    pub priority: i64,
    /// `admitted`, `reserved`, `pending`, `inadmissible`, `finished`, `deactivated`, or
    /// `removed` (a MultiKueue worker's copy its manager removed).
    pub state: &'static str,
    /// The admission it holds, or held when it finished.
    pub admission: Option<AdmissionReport>,
    /// When it arrived (seconds on the virtual clock); `None` when it had not when the run
    /// ended.
    pub arrival_seconds: Option<f64>,
    pub first_admitted_seconds: Option<f64>,
    pub finished_seconds: Option<f64>,
    /// All the time it spent pending: from its arrival, and from each eviction, until
    /// admitted (or finished, deactivated, or the end of the run: then counted so far).
    pub wait_seconds: Option<f64>,
    /// Times it was evicted, by reason (`InCohortReclamation`, `PodsReadyTimeout`, ...).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub evictions: BTreeMap<String, u32>,
    /// What it was last told while pending (Kueue's `QuotaReserved=False` message).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_pending_message: Option<String>,
    /// Cost-attribution labels (`--cost-attribution-labels`), when any.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Kueue's `status.admissionChecks` at the end of the run, when the workload has checks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub admission_checks: Vec<CheckReport>,
}

/// One admission check's state on a workload (Kueue's `AdmissionCheckState`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    pub name: String,
    pub state: &'static str,
    pub message: String,
    /// Seconds on the virtual clock.
    pub last_transition_time: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_count: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requeue_after_seconds: Option<i32>,
    /// podSet → annotations the check adds to its pods.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub pod_set_updates: BTreeMap<String, BTreeMap<String, String>>,
}

/// A ClusterQueue or LocalQueue that Kueue would report inactive (`Active=False`), with the
/// reason and message its status would carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InactiveObject {
    /// `ClusterQueue` or `LocalQueue`.
    pub kind: &'static str,
    /// The ClusterQueue's name, or the LocalQueue's `namespace/name`.
    pub name: String,
    pub reason: &'static str,
    pub message: String,
    /// A LocalQueue's `spec.clusterQueue`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_queue: Option<String>,
}

impl std::fmt::Display for InactiveObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} is inactive ({}): {}",
            self.kind, self.name, self.reason, self.message
        )?;
        match (&self.cluster_queue, self.reason) {
            (Some(cq), "ClusterQueueDoesNotExist") => {
                write!(f, " (ClusterQueue {cq} doesn't exist)")
            }
            (Some(cq), _) => write!(f, " (ClusterQueue {cq} is inactive)"),
            (None, _) => Ok(()),
        }
    }
}

/// The ClusterQueues and LocalQueues of `cluster` that Kueue would report inactive: a
/// ClusterQueue naming a missing ResourceFlavor or AdmissionCheck (or stopped, or in a cohort
/// cycle), a LocalQueue whose ClusterQueue does not exist or is inactive.
pub fn inactive_objects(cluster: &Cluster) -> Vec<InactiveObject> {
    let mut out: Vec<InactiveObject> = cluster
        .cluster_queues
        .iter()
        .filter_map(|cq| {
            let (reason, message) = cq.inactive_condition()?;
            Some(InactiveObject {
                kind: "ClusterQueue",
                name: cq.name.clone(),
                reason,
                message,
                cluster_queue: None,
            })
        })
        .collect();
    // Kueue's LocalQueue controller: the condition's message does not name the ClusterQueue.
    const MESSAGE: &str = "Can't submit new workloads to clusterQueue";
    for lq in &cluster.local_queues {
        let reason = match lq.cluster_queue {
            None => "ClusterQueueDoesNotExist",
            Some(cq) if !cluster.cq(cq).is_active() => "ClusterQueueIsInactive",
            Some(_) => continue,
        };
        out.push(InactiveObject {
            kind: "LocalQueue",
            name: format!("{}/{}", lq.namespace, lq.name),
            reason,
            message: MESSAGE.to_string(),
            cluster_queue: Some(lq.cluster_queue_name.clone()),
        });
    }
    out
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueSummary {
    pub admitted: u64,
    /// Over every workload of the queue that arrived: all the time each spent pending, one
    /// still pending at the end counted with its wait so far (see `WorkloadReport::wait_seconds`).
    pub mean_wait_seconds: Option<f64>,
    pub p95_wait_seconds: Option<f64>,
    /// Workloads pending when the run ended.
    pub pending_at_end: u64,
    /// Workloads that arrived and were never admitted.
    pub never_admitted: u64,
    /// Of the workloads admitted, the mean time to their first admission: until quota was
    /// first reserved (`QuotaReserved`)...
    pub mean_wait_for_quota_seconds: Option<f64>,
    /// ...and from then until every admission check was Ready (0 without checks).
    pub mean_wait_for_checks_seconds: Option<f64>,
    /// `flavor/resource` → average usage over the run as % of nominal quota.
    pub usage_percent: BTreeMap<String, f64>,
    pub preemptions: u64,
    /// Preemption budgets: how often one of its preemptors started waiting for one (the
    /// victims it needed exceeded `max-victims-per-preemptor` or `max-evictions-per-minute`),
    /// and how many distinct preemptors did.
    #[serde(skip_serializing_if = "is_zero")]
    pub budget_waits: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub preemptors_held_by_budget: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassSummary {
    pub workloads: u64,
    pub admitted: u64,
    pub mean_time_to_admit_seconds: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub cycles: u64,
    pub duration_seconds: f64,
    pub cluster_queues: BTreeMap<String, QueueSummary>,
    /// Mean usage % of nominal per ClusterQueue class (annotation `sim.wasq.dev/class`).
    pub cluster_queue_classes: BTreeMap<String, f64>,
    /// Per workload class (annotation `sim.wasq.dev/class`).
    pub workload_classes: BTreeMap<String, ClassSummary>,
    /// Decisions the built-in policy made because a plugin failed, by plugin, extension and
    /// reason. Empty when every plugin answered.
    pub fallbacks: Vec<FallbackCount>,
    /// Every plugin the run could bind: calls made and failures per reason.
    pub plugins: Vec<PluginSummary>,
    /// Per cost-attribution label key and value: workloads and resource-seconds held.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub cost_attribution: super::attribution::CostAttribution,
    /// ClusterQueues and LocalQueues Kueue would report inactive ([`inactive_objects`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inactive: Vec<InactiveObject>,
    /// Per shadow policy (`--shadow EXT=NAME`): its decisions against the enforced ones.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub shadow: BTreeMap<String, crate::policy::shadow::Figures>,
}

/// One plugin's activity during the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginSummary {
    pub plugin: String,
    pub digest: String,
    pub kind: String,
    pub calls: u64,
    pub failures: BTreeMap<String, u64>,
    pub quarantined: bool,
    /// Victims evicted beyond what the preemptors needed (`allowExtraVictims`).
    pub extra_victims: u64,
    /// Calls the built-in made instead because the plugin had used its CPU budget for the
    /// cycle or the run (not failures).
    pub over_budget: u64,
    /// CPU time of all its calls, in microseconds.
    pub cpu_micros: u64,
    /// CPU time of its calls in its busiest scheduling cycle, in microseconds.
    pub busiest_cycle_micros: u64,
}

/// How often one plugin failed for one reason.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FallbackCount {
    pub plugin: String,
    pub digest: String,
    pub extension: String,
    pub reason: String,
    pub count: u64,
    /// The last error message.
    pub last_error: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub workloads: Vec<WorkloadReport>,
    /// Every event in order (compact; read as [`Event`]s).
    pub events: super::Timeline,
    pub summary: Summary,
    pub fairness: super::fairness::Fairness,
    /// Topology-aware scheduling: per-domain utilisation and each placement's span.
    #[serde(skip_serializing_if = "super::topology::TopologyReport::is_empty")]
    pub topology: super::topology::TopologyReport,
}

pub(crate) fn state_of(sim: &Simulation, id: WorkloadId) -> &'static str {
    let cluster = sim.cluster();
    if sim.lives[id.index()].finished {
        "finished"
    } else if sim.lives[id.index()].deactivated {
        "deactivated"
    } else if sim.lives[id.index()].removed {
        "removed"
    } else if cluster.admission(id).is_some() && !sim.is_admitted(id) {
        "reserved"
    } else if cluster.admission(id).is_some() {
        "admitted"
    } else if sim.scheduler.queues.is_inadmissible(id)
        || (!sim.scheduler.is_pending(id) && cluster.workload(id).unqueueable.is_some())
    {
        "inadmissible"
    } else {
        "pending"
    }
}

pub(crate) fn admission_report(cluster: &Cluster, id: WorkloadId) -> Option<AdmissionReport> {
    cluster.admission(id).map(|a| admission_of(cluster, a))
}

/// An admission as reported: flavor per resource for each podSet.
pub(crate) fn admission_of(cluster: &Cluster, a: &crate::cluster::Admission) -> AdmissionReport {
    AdmissionReport {
        pod_set_assignments: a
            .pod_sets
            .iter()
            .map(|ps| PodSetReport {
                name: ps.name.to_string(),
                count: ps.count,
                flavors: ps
                    .flavors
                    .iter()
                    .map(|&(r, f)| {
                        (
                            cluster.names.resource_name(r).to_string(),
                            cluster.names.flavor_name(f).to_string(),
                        )
                    })
                    .collect(),
                topology_assignment: ps.topology.as_ref().and_then(|p| cluster.tas.assignment(p)),
                domains_per_level: ps
                    .topology
                    .as_ref()
                    .map(|p| cluster.tas.spans(p))
                    .unwrap_or_default(),
            })
            .collect(),
    }
}

impl AdmissionReport {
    /// `main×2 cpu=default,memory=default | ...`
    pub fn describe(&self) -> String {
        self.pod_set_assignments
            .iter()
            .map(|ps| {
                let f: Vec<String> = ps.flavors.iter().map(|(r, f)| format!("{r}={f}")).collect();
                let mut s = format!("{}×{} {}", ps.name, ps.count, f.join(","));
                if !ps.domains_per_level.is_empty() {
                    let spans: Vec<String> = ps
                        .domains_per_level
                        .iter()
                        .map(|(level, n)| format!("{level}={n}"))
                        .collect();
                    s.push_str(&format!(" spans {}", spans.join(",")));
                }
                s
            })
            .collect::<Vec<_>>()
            .join(" | ")
    }
}

pub(crate) fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

pub(crate) fn p95(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let rank = ((v.len() as f64) * 0.95).ceil() as usize;
    Some(v[rank.clamp(1, v.len()) - 1])
}

pub(crate) fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

pub fn build(sim: &Simulation) -> Report {
    let cluster = sim.cluster();
    let keys = cluster
        .workloads
        .iter()
        .map(|w| w.key.clone().into_boxed_str())
        .collect();
    let events = super::Timeline::new(sim.events.clone(), keys, cq_names(cluster), |a| {
        admission_of(cluster, a)
    });
    build_from(sim, events)
}

/// ClusterQueue names by id, as a timeline names them.
pub(crate) fn cq_names(cluster: &Cluster) -> std::sync::Arc<[Box<str>]> {
    cluster
        .cluster_queues
        .iter()
        .map(|cq| cq.name.clone().into_boxed_str())
        .collect()
}

/// The report of `sim`, every figure read from `sim` (its events included), with `events` as
/// its timeline ([`Simulation::into_report`] passes none and moves the simulation's in after).
pub(crate) fn build_from(sim: &Simulation, events: super::Timeline) -> Report {
    let cluster = sim.cluster();
    let fates = super::waits::fates(sim);
    let secs = |t: crate::cluster::Millis| round3((t - sim.t0()) as f64 / 1000.0);
    let workloads = cluster
        .workloads
        .iter()
        .zip(&fates)
        .map(|(wl, fate)| WorkloadReport {
            namespace: wl.namespace.clone(),
            name: wl.name.clone(),
            cluster_queue: cluster
                .admission(wl.id)
                .map(|a| a.cluster_queue)
                .or(wl.cluster_queue)
                .map(|cq| cluster.cq(cq).name.clone()),
            local_queue: wl.lq.map(|lq| {
                let lq = &cluster.local_queues[lq.index()];
                format!("{}/{}", lq.namespace, lq.name)
            }),
            priority: wl.effective_priority(),
            state: state_of(sim, wl.id),
            admission: admission_report(cluster, wl.id).or_else(|| {
                sim.finished_admissions
                    .get(&wl.id)
                    .map(|a| admission_of(cluster, a))
            }),
            arrival_seconds: fate
                .is_some()
                .then(|| secs(sim.lives[wl.id.index()].arrival)),
            first_admitted_seconds: sim.lives[wl.id.index()].first_admitted().map(secs),
            finished_seconds: fate.as_ref().and_then(|f| f.finished).map(round3),
            wait_seconds: fate.as_ref().map(|f| round3(f.wait)),
            evictions: fate
                .as_ref()
                .map(|f| f.evictions.clone())
                .unwrap_or_default(),
            last_pending_message: sim.lives[wl.id.index()]
                .last_pending()
                .filter(|_| fate.as_ref().is_some_and(|f| f.pending_at_end))
                .map(|(text, _)| sim.events.texts.get(text).to_string()),
            labels: sim.labels[wl.id.index()].clone(),
            admission_checks: sim.wl_checks[wl.id.index()]
                .checks
                .iter()
                .map(|c| CheckReport {
                    name: c.name.clone(),
                    state: c.state.as_str(),
                    message: c.message.clone(),
                    last_transition_time: (c.last_transition - sim.t0()) as f64 / 1000.0,
                    retry_count: c.retry_count,
                    requeue_after_seconds: c.requeue_after_seconds,
                    pod_set_updates: c
                        .pod_set_updates
                        .iter()
                        .map(|u| (u.name.clone(), u.annotations.clone()))
                        .collect(),
                })
                .collect(),
        })
        .collect();

    let elapsed = sim.now() - sim.t0();
    let n_cq = cluster.cluster_queues.len();
    let mut waits: Vec<Vec<f64>> = vec![Vec::new(); n_cq];
    let (mut pending_at_end, mut never_admitted) = (vec![0u64; n_cq], vec![0u64; n_cq]);
    let mut quota_waits: Vec<Vec<f64>> = vec![Vec::new(); n_cq];
    let mut check_waits: Vec<Vec<f64>> = vec![Vec::new(); n_cq];
    let mut classes: BTreeMap<String, (u64, Vec<f64>)> = BTreeMap::new();
    for (wl, fate) in cluster.workloads.iter().zip(&fates) {
        let life = &sim.lives[wl.id.index()];
        let admitted = life.first_admitted();
        let cq = cluster
            .admission(wl.id)
            .map(|a| a.cluster_queue)
            .or(wl.cluster_queue);
        if let (Some(fate), Some(cq)) = (fate, cq) {
            waits[cq.index()].push(fate.wait);
            pending_at_end[cq.index()] += u64::from(fate.pending_at_end);
            never_admitted[cq.index()] += u64::from(admitted.is_none());
        }
        // Kueue's time to admit (its performance tests' figure): admitted workloads only.
        let wait = admitted.map(|t| ((t - life.arrival).max(0)) as f64 / 1000.0);
        if let (Some(cq), Some(r), Some(a)) = (wl.cluster_queue, life.first_reserved(), admitted) {
            quota_waits[cq.index()].push(((r - life.arrival).max(0)) as f64 / 1000.0);
            check_waits[cq.index()].push(((a - r).max(0)) as f64 / 1000.0);
        }
        if let Some(class) = wl.annotations.get(CLASS) {
            let e = classes.entry(class.to_string()).or_default();
            e.0 += 1;
            e.1.extend(wait);
        }
    }
    let mut admissions = vec![0u64; cluster.cluster_queues.len()];
    for e in &sim.events.records {
        if let (EventType::Admitted, Some(cq)) = (e.kind, e.cluster_queue()) {
            admissions[cq.index()] += 1;
        }
    }
    let n_fr = cluster.tree.n_fr();
    let mut cluster_queues = BTreeMap::new();
    let mut class_usage: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for cq in &cluster.cluster_queues {
        let mut usage_percent = BTreeMap::new();
        for &fr in &cq.frs {
            let nominal = cluster.tree.quota(cq.node, fr).nominal;
            let integral = sim.usage_integral[cq.node.index() * n_fr + fr.index()];
            if nominal > 0 && elapsed > 0 {
                let pct = integral as f64 * 100.0 / (nominal as f64 * elapsed as f64);
                usage_percent.insert(cluster.fr_name(fr), round3(pct));
            }
        }
        if let Some(class) = cq.annotations.get(CLASS) {
            let all: Vec<f64> = usage_percent.values().copied().collect();
            if let Some(m) = mean(&all) {
                class_usage.entry(class.clone()).or_default().push(m);
            }
        }
        let w = &mut waits[cq.id.index()];
        cluster_queues.insert(
            cq.name.clone(),
            QueueSummary {
                admitted: admissions[cq.id.index()],
                mean_wait_seconds: mean(w).map(round3),
                p95_wait_seconds: p95(w).map(round3),
                pending_at_end: pending_at_end[cq.id.index()],
                never_admitted: never_admitted[cq.id.index()],
                mean_wait_for_quota_seconds: mean(&quota_waits[cq.id.index()]).map(round3),
                mean_wait_for_checks_seconds: mean(&check_waits[cq.id.index()]).map(round3),
                usage_percent,
                preemptions: sim.preemptions[cq.id.index()],
                budget_waits: sim.budget_waits[cq.id.index()],
                preemptors_held_by_budget: sim
                    .budget_held
                    .iter()
                    .filter(|(held, _)| *held == cq.id)
                    .count() as u64,
            },
        );
    }
    Report {
        workloads,
        events,
        summary: Summary {
            cycles: sim.cycles,
            duration_seconds: elapsed as f64 / 1000.0,
            cluster_queues,
            cluster_queue_classes: class_usage
                .into_iter()
                .filter_map(|(k, v)| mean(&v).map(|m| (k, round3(m))))
                .collect(),
            workload_classes: classes
                .into_iter()
                .map(|(k, (n, w))| {
                    (
                        k,
                        ClassSummary {
                            workloads: n,
                            admitted: w.len() as u64,
                            mean_time_to_admit_seconds: mean(&w).map(round3),
                        },
                    )
                })
                .collect(),
            fallbacks: sim
                .fallbacks
                .iter()
                .map(
                    |((plugin, digest, extension, reason), (count, last))| FallbackCount {
                        plugin: plugin.clone(),
                        digest: digest.clone(),
                        extension: extension.to_string(),
                        reason: reason.to_string(),
                        count: *count,
                        last_error: last.clone(),
                    },
                )
                .collect(),
            plugins: sim.plugin_summaries(),
            cost_attribution: super::attribution::build(sim),
            inactive: inactive_objects(cluster),
            shadow: sim.shadow_figures(),
        },
        fairness: super::fairness::build(sim),
        topology: sim.tas.report(cluster),
    }
}

impl Report {
    /// The report for a person: a short timeline and a per-queue table.
    /// One line per admission and preemption (time, workload, where, why, which policy), one
    /// per TAS placement (time, workload and podSet, spans per level, pods per leaf, which
    /// placement policy), then one per workload's final state: what `wasq simulate --watch`,
    /// `wasq plugin check --against` and `wasq bench` compare between runs.
    pub fn decision_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .events
            .refs()
            .filter(|e| matches!(e.kind(), EventType::Admitted | EventType::Preempted))
            .map(|e| {
                format!(
                    "{:>9.3}s {:?} {} {}{} [{}]",
                    e.time(),
                    e.kind(),
                    e.workload(),
                    e.cluster_queue().unwrap_or("-"),
                    e.preemptor()
                        .map(|p| format!(" by {p}"))
                        .unwrap_or_default(),
                    e.policy().name
                )
            })
            .collect();
        for p in &self.topology.placements {
            let spans: Vec<String> = p
                .domains_per_level
                .iter()
                .map(|(level, n)| format!("{level}={n}"))
                .collect();
            let leaves: Vec<String> = p.leaves.iter().map(|(l, n)| format!("{l}:{n}")).collect();
            lines.push(format!(
                "{:>9.3}s Placed {}/{} {} spans {} leaves {} [{}]",
                p.time,
                p.workload,
                p.pod_set,
                p.flavor,
                spans.join(","),
                leaves.join(","),
                p.placed_by.name
            ));
        }
        for w in &self.workloads {
            lines.push(format!("final {}/{} {}", w.namespace, w.name, w.state));
        }
        lines
    }

    /// [`Report::decision_lines`] without the deciding policy: for comparing two policy sets.
    pub fn decision_lines_without_policy(&self) -> Vec<String> {
        self.decision_lines()
            .into_iter()
            .map(|l| match l.rfind(" [") {
                Some(i) if l.ends_with(']') => l[..i].to_string(),
                _ => l,
            })
            .collect()
    }

    pub fn to_table(&self, max_events: usize) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "Timeline ({} events):", self.events.len());
        for e in self.events.refs().take(max_events) {
            let mut line = format!(
                "  {:>9.3}s  cycle {:<4} {:<12} {:<32} {}",
                e.time(),
                e.cycle(),
                format!("{:?}", e.kind()),
                e.workload(),
                e.cluster_queue().unwrap_or("-")
            );
            if let Some(p) = e.preemptor() {
                let _ = write!(line, "  by {p}");
            }
            if let Some(r) = e.reason() {
                let _ = write!(line, "  ({r})");
            }
            if &*e.policy().name != "builtin" {
                let _ = write!(line, "  [policy {}]", e.policy().name);
            }
            let _ = writeln!(out, "{line}");
        }
        if self.events.len() > max_events {
            let _ = writeln!(
                out,
                "  ... {} more (use --output json for all)",
                self.events.len() - max_events
            );
        }
        let _ = writeln!(out, "\nWorkloads:");
        let mut states: BTreeMap<&str, usize> = BTreeMap::new();
        for w in &self.workloads {
            *states.entry(w.state).or_default() += 1;
        }
        if self.workloads.len() <= 40 {
            for w in &self.workloads {
                let flavors = w
                    .admission
                    .as_ref()
                    .map(AdmissionReport::describe)
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "  {:<32} {:<13} {:<20} {}",
                    format!("{}/{}", w.namespace, w.name),
                    w.state,
                    w.cluster_queue.as_deref().unwrap_or("-"),
                    flavors
                );
            }
        }
        let counts: Vec<String> = states.iter().map(|(s, n)| format!("{n} {s}")).collect();
        let _ = writeln!(out, "  total: {}", counts.join(", "));
        let _ = writeln!(
            out,
            "\n{:<24} {:>8} {:>8} {:>10} {:>10} {:>11}  usage % of nominal",
            "ClusterQueue", "admitted", "pending", "mean wait", "p95 wait", "preemptions"
        );
        for (name, q) in &self.summary.cluster_queues {
            let usage: Vec<String> = q
                .usage_percent
                .iter()
                .map(|(k, v)| format!("{k} {v:.1}%"))
                .collect();
            let secs = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}s"));
            let _ = writeln!(
                out,
                "{:<24} {:>8} {:>8} {:>10} {:>10} {:>11}  {}",
                name,
                q.admitted,
                q.pending_at_end,
                secs(q.mean_wait_seconds),
                secs(q.p95_wait_seconds),
                q.preemptions,
                usage.join(", ")
            );
            if q.budget_waits > 0 {
                let _ = writeln!(
                    out,
                    "{:<24} {} preemptor(s) waited {} time(s) for a preemption budget",
                    "", q.preemptors_held_by_budget, q.budget_waits
                );
            }
            if let (Some(quota), Some(checks)) = (
                q.mean_wait_for_quota_seconds,
                q.mean_wait_for_checks_seconds,
            ) && checks > 0.0
            {
                let _ = writeln!(
                    out,
                    "{:<24} mean wait {quota:.1}s for quota + {checks:.1}s for admission checks",
                    ""
                );
            }
        }
        if !self.summary.inactive.is_empty() {
            let _ = writeln!(out, "\nInactive, as Kueue reports them:");
            for o in &self.summary.inactive {
                let _ = writeln!(out, "  {o}");
            }
        }
        if !self.summary.workload_classes.is_empty() {
            let _ = writeln!(
                out,
                "\nWorkload class       workloads  admitted  mean time-to-admit"
            );
            for (k, c) in &self.summary.workload_classes {
                let _ = writeln!(
                    out,
                    "{:<20} {:>9} {:>9}  {}",
                    k,
                    c.workloads,
                    c.admitted,
                    c.mean_time_to_admit_seconds
                        .map_or("-".into(), |v| format!("{v:.1}s"))
                );
            }
        }
        for (k, v) in &self.summary.cluster_queue_classes {
            let _ = writeln!(out, "ClusterQueue class {k}: mean usage {v:.1}% of nominal");
        }
        for (key, values) in &self.summary.cost_attribution {
            let _ = writeln!(
                out,
                "\nCost attribution by {key:<10} workloads  admitted  resource-seconds held"
            );
            for (value, u) in values {
                let held: Vec<String> = u
                    .resource_seconds
                    .iter()
                    .map(|(k, v)| format!("{k} {v:.0}"))
                    .collect();
                let _ = writeln!(
                    out,
                    "  {value:<28} {:>9} {:>9}  {}",
                    u.workloads,
                    u.admitted,
                    held.join(", ")
                );
            }
        }
        self.fairness.write_table(&mut out);
        self.topology.write_table(&mut out);
        let _ = writeln!(
            out,
            "\n{} cycles over {:.1}s of virtual time",
            self.summary.cycles, self.summary.duration_seconds
        );
        let used: Vec<_> = self
            .summary
            .plugins
            .iter()
            .filter(|p| p.calls > 0)
            .collect();
        if !used.is_empty() {
            let _ = writeln!(out, "\nPlugins:");
            for p in used {
                let _ = writeln!(
                    out,
                    "  {} {} {:<18} {:>9} calls  {} failures{}",
                    p.plugin,
                    p.digest,
                    p.kind,
                    p.calls,
                    p.failures.values().sum::<u64>(),
                    if p.quarantined { "  QUARANTINED" } else { "" }
                );
            }
        }
        if !self.summary.fallbacks.is_empty() {
            let _ = writeln!(
                out,
                "\nPlugin failures (the built-in policy decided instead):"
            );
            for f in &self.summary.fallbacks {
                let _ = writeln!(
                    out,
                    "  {} {} {:<18} {:<15} x{:<6} last: {}",
                    f.plugin, f.digest, f.extension, f.reason, f.count, f.last_error
                );
            }
        }
        if !self.summary.shadow.is_empty() {
            let _ = writeln!(
                out,
                "\nShadow policies (asked as the enforced policy, never acted on):"
            );
            for (name, f) in &self.summary.shadow {
                let _ = writeln!(
                    out,
                    "  {name} ({}): {} decisions, {} agree, {} differ, {} invalid, {} failed",
                    f.extension, f.decisions, f.agree, f.differ, f.invalid, f.fallback
                );
                for d in f.differences.iter().take(5) {
                    let _ = writeln!(
                        out,
                        "    {}: enforced {}; shadow {}",
                        d.workload, d.enforced, d.shadow
                    );
                }
            }
        }
        out
    }
}
