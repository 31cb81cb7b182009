//! Scheduler invariants under random clusters and random event sequences (proptest).
//!
//! Each case generates ResourceFlavors, a cohort forest, ClusterQueues with random quotas,
//! limits and preemption settings, one LocalQueue per ClusterQueue and a handful of Workloads,
//! builds a [`Scheduler`] and applies random steps (submit, schedule, finish, delete, resubmit).
//! After every step, and right after every cycle before its evictions are applied, it checks:
//! - (a) quota: every root within its subtree quota, every node within subtree quota +
//!   borrowingLimit, every ClusterQueue within its potential available;
//! - (b) bookkeeping: `cluster.usage` equals the usage recomputed from the admitted workloads;
//! - (c) one admission at a time: never pending and holding quota, never admitted twice;
//! - (d) preemption: a victim held quota before the cycle, its preemptor did not;
//! - (e) admissions cover every podSet with `minCount ≤ count ≤ podSet.count`, and their usage is
//!   what the assigned flavors and counts add up to;
//! - (f) preemption budgets (random `policy.wasq.dev/max-victims-per-preemptor` and
//!   `max-evictions-per-minute` annotations): no preemptor evicts more victims than its
//!   ClusterQueue's cap, and no ClusterQueue's preemptors evict more than its per-minute budget
//!   in any 60 s of the scheduler's clock.

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::sample::{Index, subsequence};

use wasq::api::{
    self, BorrowWithinCohort, BorrowWithinCohortPolicy, ClusterQueuePreemption, FlavorFungibility,
    FlavorQuotas, FungibilityPolicy, Manifests, Quantity, QueueingStrategy, ReclaimWithinCohort,
    ResourceGroup, WithinClusterQueue,
};
use wasq::cluster::{Admission, Cluster, Holding, WorkloadId, build_cluster};
use wasq::quota::{FrIdx, NodeKind, Usage};
use wasq::scheduler::{Decision, Scheduler};

const NAMESPACE: &str = "ns";
const FLAVORS: [&str; 2] = ["f0", "f1"];
const MAX_COHORT_DEPTH: usize = 3;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        // Failures print their minimal case; no regression files are written into tests/.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------
// The generated case, in compact form (this is what proptest prints for a failure).

/// cpu quota of one flavor, in whole cpus.
#[derive(Debug, Clone)]
struct CpuQuota {
    flavor: usize,
    nominal: i64,
    borrowing_limit: Option<i64>,
    lending_limit: Option<i64>,
}

#[derive(Debug, Clone)]
struct CohortCase {
    parent: Option<usize>,
    /// `None`: the cohort declares no quota of its own.
    quotas: Option<Vec<CpuQuota>>,
}

#[derive(Debug, Clone)]
struct QueueCase {
    cohort: Option<usize>,
    quotas: Vec<CpuQuota>,
    strict_fifo: bool,
    within: WithinClusterQueue,
    reclaim: ReclaimWithinCohort,
    borrow: BorrowWithinCohort,
    fungibility: Option<FlavorFungibility>,
    /// Preemption budget annotations: (max victims per preemptor, max evictions per minute).
    budget: (Option<u32>, Option<u32>),
}

#[derive(Debug, Clone)]
struct PodSetCase {
    count: i32,
    min_count: Option<i32>,
    cpu_milli: i64,
}

#[derive(Debug, Clone)]
struct WorkloadCase {
    queue: usize,
    priority: i32,
    created_s: i64,
    pod_sets: Vec<PodSetCase>,
}

#[derive(Debug, Clone)]
struct Case {
    cohorts: Vec<CohortCase>,
    queues: Vec<QueueCase>,
    workloads: Vec<WorkloadCase>,
}

/// One step of the driver; each number picks (modulo) among the workloads the step applies to,
/// in id order, so that a case shrinks towards the first of them.
#[derive(Debug, Clone)]
enum Step {
    /// Submit a workload never submitted before.
    Submit(usize),
    /// Run one cycle, then complete its evictions (as the simulator does).
    Schedule,
    /// The clock moves on by this many seconds (preemption budgets refill).
    Wait(i64),
    /// Finish a workload that holds quota.
    Finish(usize),
    /// Delete a pending workload.
    Delete(usize),
    /// Submit again a workload already submitted (a duplicate event): refused if it holds quota.
    Resubmit(usize),
    /// An admission check in Retry (or a PodsReady timeout) evicts a workload holding quota:
    /// released now, submitted again later (at a later Resubmit step).
    RetryEviction(usize),
    /// A rejected admission check deactivates a workload holding quota: released, never
    /// queued again.
    Deactivate(usize),
}

// ---------------------------------------------------------------------------------------------
// Generators.

/// Quotas for one or both flavors, in random flavor order; lendingLimit ≤ nominal.
fn cpu_quotas(max_nominal: i64) -> impl Strategy<Value = Vec<CpuQuota>> {
    subsequence(vec![0usize, 1], 1..=2)
        .prop_shuffle()
        .prop_flat_map(move |flavors| {
            let n = flavors.len();
            (
                Just(flavors),
                vec(
                    prop_oneof![1 => Just(0), 8 => 2..=max_nominal].prop_flat_map(|nominal| {
                        (
                            Just(nominal),
                            option::of(0..=4i64),
                            option::weighted(0.3, 0..=nominal),
                        )
                    }),
                    n,
                ),
            )
        })
        .prop_map(|(flavors, quotas)| {
            flavors
                .into_iter()
                .zip(quotas)
                .map(
                    |(flavor, (nominal, borrowing_limit, lending_limit))| CpuQuota {
                        flavor,
                        nominal,
                        borrowing_limit,
                        lending_limit,
                    },
                )
                .collect()
        })
}

fn preemption()
-> impl Strategy<Value = (WithinClusterQueue, ReclaimWithinCohort, BorrowWithinCohort)> {
    (
        prop_oneof![
            1 => Just(WithinClusterQueue::Never),
            2 => Just(WithinClusterQueue::LowerPriority),
            2 => Just(WithinClusterQueue::LowerOrNewerEqualPriority),
        ],
        prop_oneof![
            1 => Just(ReclaimWithinCohort::Never),
            2 => Just(ReclaimWithinCohort::LowerPriority),
            2 => Just(ReclaimWithinCohort::Any),
        ],
        prop_oneof![
            Just(BorrowWithinCohort::default()),
            option::of(-1..=3i32).prop_map(|max_priority_threshold| BorrowWithinCohort {
                policy: BorrowWithinCohortPolicy::LowerPriority,
                max_priority_threshold,
            }),
        ],
    )
}

fn fungibility() -> impl Strategy<Value = Option<FlavorFungibility>> {
    let policy = || {
        option::of(prop_oneof![
            Just(FungibilityPolicy::MayStopSearch),
            Just(FungibilityPolicy::TryNextFlavor),
        ])
    };
    option::weighted(0.3, (policy(), policy())).prop_map(|f| {
        f.map(|(when_can_borrow, when_can_preempt)| FlavorFungibility {
            when_can_borrow,
            when_can_preempt,
            preference: None,
        })
    })
}

fn queue_case(n_cohorts: usize) -> impl Strategy<Value = QueueCase> {
    (
        option::weighted(0.85, any::<Index>()),
        cpu_quotas(8),
        any::<bool>(),
        preemption(),
        fungibility(),
        (
            option::weighted(0.3, 0..=3u32),
            option::weighted(0.3, 0..=3u32),
        ),
    )
        .prop_map(
            move |(cohort, quotas, strict_fifo, (within, reclaim, borrow), fungibility, budget)| {
                QueueCase {
                    budget,
                    cohort: cohort.filter(|_| n_cohorts > 0).map(|i| i.index(n_cohorts)),
                    quotas,
                    strict_fifo,
                    within,
                    reclaim,
                    borrow,
                    fungibility,
                }
            },
        )
}

fn pod_set_case() -> impl Strategy<Value = PodSetCase> {
    (
        1..=3i32,
        prop_oneof![3 => Just(500i64), 3 => Just(1000), 1 => Just(2000)],
    )
        .prop_flat_map(|(count, cpu_milli)| {
            (
                Just(count),
                option::weighted(0.35, 1..=count),
                Just(cpu_milli),
            )
        })
        .prop_map(|(count, min_count, cpu_milli)| PodSetCase {
            count,
            min_count,
            cpu_milli,
        })
}

fn workload_case(n_queues: usize) -> impl Strategy<Value = WorkloadCase> {
    (0..n_queues, 0..=3i32, 0..=5i64, vec(pod_set_case(), 1..=2)).prop_map(
        |(queue, priority, created_s, pod_sets)| WorkloadCase {
            queue,
            priority,
            created_s,
            pod_sets,
        },
    )
}

/// 0–3 cohorts up to three levels deep (a later cohort may also be a second root).
fn cohort_cases() -> impl Strategy<Value = Vec<CohortCase>> {
    vec(
        (
            option::weighted(0.8, any::<Index>()),
            option::weighted(0.5, cpu_quotas(6)),
        ),
        0..=3,
    )
    .prop_map(|raw| {
        let mut depth: Vec<usize> = Vec::new();
        let mut cohorts = Vec::new();
        for (i, (pick, quotas)) in raw.into_iter().enumerate() {
            let allowed: Vec<usize> = (0..i).filter(|&j| depth[j] < MAX_COHORT_DEPTH).collect();
            let parent = pick
                .filter(|_| !allowed.is_empty())
                .map(|p| allowed[p.index(allowed.len())]);
            depth.push(parent.map_or(1, |p| depth[p] + 1));
            cohorts.push(CohortCase { parent, quotas });
        }
        cohorts
    })
}

fn case() -> impl Strategy<Value = Case> {
    (cohort_cases(), 1..=4usize)
        .prop_flat_map(|(cohorts, n_queues)| {
            let n_cohorts = cohorts.len();
            (
                Just(cohorts),
                vec(queue_case(n_cohorts), n_queues),
                vec(workload_case(n_queues), 2..=12),
            )
        })
        .prop_map(|(cohorts, queues, workloads)| Case {
            cohorts,
            queues,
            workloads,
        })
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    vec(
        prop_oneof![
            5 => (0..16usize).prop_map(Step::Submit),
            5 => Just(Step::Schedule),
            1 => (1..=90i64).prop_map(Step::Wait),
            1 => (0..16usize).prop_map(Step::Finish),
            1 => (0..16usize).prop_map(Step::Delete),
            1 => (0..16usize).prop_map(Step::Resubmit),
            1 => (0..16usize).prop_map(Step::RetryEviction),
            1 => (0..16usize).prop_map(Step::Deactivate),
        ],
        1..=60,
    )
}

// ---------------------------------------------------------------------------------------------
// Builders: compact case → Kueue API objects.

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        ..ObjectMeta::default()
    }
}

fn namespaced(name: &str) -> ObjectMeta {
    ObjectMeta {
        namespace: Some(NAMESPACE.into()),
        ..meta(name)
    }
}

fn resource_flavor(name: &str) -> api::ResourceFlavor {
    api::ResourceFlavor {
        metadata: meta(name),
        spec: api::ResourceFlavorSpec::default(),
    }
}

fn cpu_group(quotas: &[CpuQuota]) -> Vec<ResourceGroup> {
    vec![ResourceGroup {
        covered_resources: vec!["cpu".into()],
        flavors: quotas
            .iter()
            .map(|q| FlavorQuotas {
                name: FLAVORS[q.flavor].into(),
                resources: vec![api::ResourceQuota {
                    name: "cpu".into(),
                    nominal_quota: Quantity::units(q.nominal),
                    borrowing_limit: q.borrowing_limit.map(Quantity::units),
                    lending_limit: q.lending_limit.map(Quantity::units),
                }],
            })
            .collect(),
    }]
}

fn cohort_name(i: usize) -> String {
    format!("c{i}")
}

fn queue_name(i: usize) -> String {
    format!("cq{i}")
}

fn cohort(i: usize, c: &CohortCase) -> api::Cohort {
    api::Cohort {
        metadata: meta(&cohort_name(i)),
        spec: api::CohortSpec {
            parent_name: c.parent.map(cohort_name),
            resource_groups: c.quotas.as_deref().map(cpu_group).unwrap_or_default(),
            fair_sharing: None,
        },
        status: None,
    }
}

fn cluster_queue(i: usize, q: &QueueCase) -> api::ClusterQueue {
    let mut metadata = meta(&queue_name(i));
    let annotations: BTreeMap<String, String> = [
        (wasq::cluster::budget::MAX_VICTIMS_PER_PREEMPTOR, q.budget.0),
        (wasq::cluster::budget::MAX_EVICTIONS_PER_MINUTE, q.budget.1),
    ]
    .into_iter()
    .filter_map(|(k, v)| Some((k.to_string(), v?.to_string())))
    .collect();
    metadata.annotations = (!annotations.is_empty()).then_some(annotations);
    api::ClusterQueue {
        metadata,
        spec: api::ClusterQueueSpec {
            resource_groups: cpu_group(&q.quotas),
            cohort_name: q.cohort.map(cohort_name),
            queueing_strategy: Some(if q.strict_fifo {
                QueueingStrategy::StrictFIFO
            } else {
                QueueingStrategy::BestEffortFIFO
            }),
            // `{}` = every namespace.
            namespace_selector: Some(LabelSelector::default()),
            flavor_fungibility: q.fungibility.clone(),
            preemption: Some(ClusterQueuePreemption {
                reclaim_within_cohort: Some(q.reclaim),
                within_cluster_queue: Some(q.within),
                borrow_within_cohort: Some(q.borrow.clone()),
            }),
            ..api::ClusterQueueSpec::default()
        },
        status: None,
    }
}

fn local_queue(i: usize) -> api::LocalQueue {
    api::LocalQueue {
        metadata: namespaced(&format!("lq-{}", queue_name(i))),
        spec: api::LocalQueueSpec {
            cluster_queue: queue_name(i),
            ..api::LocalQueueSpec::default()
        },
        status: None,
    }
}

fn pod_template(cpu_milli: i64) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: None,
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "main".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(BTreeMap::from([(
                        "cpu".to_string(),
                        K8sQuantity(format!("{cpu_milli}m")),
                    )])),
                    ..ResourceRequirements::default()
                }),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
    }
}

fn workload(i: usize, w: &WorkloadCase) -> api::Workload {
    let created = k8s_openapi::jiff::Timestamp::from_second(1_700_000_000 + w.created_s)
        .expect("timestamp in range");
    api::Workload {
        metadata: ObjectMeta {
            creation_timestamp: Some(Time(created)),
            ..namespaced(&format!("w{i:02}"))
        },
        spec: api::WorkloadSpec {
            pod_sets: w
                .pod_sets
                .iter()
                .enumerate()
                .map(|(j, ps)| api::PodSet {
                    name: format!("ps{j}"),
                    count: ps.count,
                    min_count: ps.min_count,
                    template: pod_template(ps.cpu_milli).into(),
                    topology_request: None,
                })
                .collect(),
            queue_name: Some(format!("lq-{}", queue_name(w.queue))),
            priority: Some(w.priority),
            ..api::WorkloadSpec::default()
        },
        status: None,
    }
}

fn manifests(c: &Case) -> Manifests {
    Manifests {
        flavors: FLAVORS.iter().map(|f| resource_flavor(f)).collect(),
        cohorts: c
            .cohorts
            .iter()
            .enumerate()
            .map(|(i, x)| cohort(i, x))
            .collect(),
        cluster_queues: c
            .queues
            .iter()
            .enumerate()
            .map(|(i, q)| cluster_queue(i, q))
            .collect(),
        local_queues: (0..c.queues.len()).map(local_queue).collect(),
        workloads: c
            .workloads
            .iter()
            .enumerate()
            .map(|(i, w)| workload(i, w))
            .collect(),
        ..Manifests::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Checks.

type Check = Result<(), TestCaseError>;

/// (a) Nothing is over what its quota and limits allow.
fn check_quota(cluster: &Cluster) -> Check {
    let tree = &cluster.tree;
    for (id, node) in tree.nodes() {
        for i in 0..tree.n_fr() {
            let fr = FrIdx(i as u32);
            let used = cluster.usage.get(id, fr);
            let subtree = tree.subtree_quota(id, fr);
            let what = format!("{} {:?} {}", node.name, node.kind, cluster.fr_name(fr));
            prop_assert!(used >= 0, "{what}: negative usage {used}");
            if node.parent.is_none() {
                prop_assert!(
                    used <= subtree,
                    "{what}: root usage {used} > subtree quota {subtree}"
                );
            }
            if let Some(limit) = tree.quota(id, fr).borrowing_limit {
                prop_assert!(
                    used <= subtree + limit,
                    "{what}: usage {used} > subtree quota {subtree} + borrowingLimit {limit}"
                );
            }
            if node.kind == NodeKind::ClusterQueue {
                let potential = tree.potential_available(id, fr);
                prop_assert!(
                    used <= potential,
                    "{what}: usage {used} > potential available {potential}"
                );
            }
        }
    }
    Ok(())
}

/// (b) `cluster.usage` is exactly the admitted workloads' usage.
fn check_usage_recomputes(cluster: &Cluster) -> Check {
    let mut fresh: Usage = cluster.tree.new_usage();
    for w in &cluster.workloads {
        if let Some(a) = cluster.admission(w.id) {
            let node = cluster.cq(a.cluster_queue).node;
            for &(fr, v) in &a.usage {
                cluster.tree.add_usage(&mut fresh, node, fr, v);
            }
            prop_assert!(
                cluster.admitted_in(a.cluster_queue).any(|id| id == w.id),
                "{} holds quota in {} but is not listed there",
                w.key,
                cluster.cq(a.cluster_queue).name
            );
        }
    }
    for cq in &cluster.cluster_queues {
        for row in cluster.admitted_rows(cq.id) {
            let id = row.workload;
            let admission = cluster.admission(id);
            prop_assert_eq!(
                admission.map(|a| a.cluster_queue),
                Some(cq.id),
                "{} is listed in {} but holds no quota there",
                &cluster.workload(id).key,
                &cq.name
            );
            // The row preemption reads is what the workload and its admission say.
            let wl = cluster.workload(id);
            let a = admission.expect("checked above");
            prop_assert_eq!(
                (row.priority, row.created, row.lq),
                (wl.effective_priority(), wl.created, wl.lq),
                "{}'s admitted row",
                &wl.key
            );
            prop_assert_eq!(
                (row.requeue_count, row.requeue_reason),
                (wl.requeue_count, wl.requeue_reason),
                "{}'s admitted row",
                &wl.key
            );
            prop_assert_eq!(row.usage.as_slice(), a.usage.as_slice());
            prop_assert_eq!(row.evicting, cluster.is_evicting(id));
        }
    }
    prop_assert!(
        fresh == cluster.usage,
        "usage {:?} != recomputed {:?}",
        cluster.usage,
        fresh
    );
    Ok(())
}

/// (c) A workload is pending or holds quota, never both; a submitted, unfinished workload is
/// always one of the two (none is lost).
fn check_placement(s: &Scheduler, live: &[bool]) -> Check {
    for w in &s.cluster.workloads {
        let pending = s.is_pending(w.id);
        let holds = s.cluster.admission(w.id).is_some();
        prop_assert!(!(pending && holds), "{} is pending and holds quota", w.key);
        if live[w.id.index()] {
            prop_assert!(
                pending || holds,
                "{} is neither pending nor holding quota",
                w.key
            );
        } else {
            prop_assert!(
                !pending && !holds,
                "{} is gone but still pending or holding quota",
                w.key
            );
        }
    }
    Ok(())
}

fn check_state(s: &Scheduler, live: &[bool]) -> Check {
    check_quota(&s.cluster)?;
    check_usage_recomputes(&s.cluster)?;
    check_placement(s, live)
}

/// (e) The admission covers every podSet, in order, with `minCount ≤ count ≤ podSet.count`, a
/// flavor for every requested resource, and a usage equal to what those add up to.
fn check_admission(cluster: &Cluster, id: WorkloadId, a: &Admission) -> Check {
    let wl = cluster.workload(id);
    prop_assert_eq!(
        Some(a.cluster_queue),
        wl.cluster_queue,
        "{} admitted in another queue",
        &wl.key
    );
    prop_assert_eq!(
        a.pod_sets.len(),
        wl.pod_sets.len(),
        "{}: podSets admitted",
        &wl.key
    );
    let mut expected: BTreeMap<FrIdx, i64> = BTreeMap::new();
    for (ps, psa) in wl.pod_sets.iter().zip(&a.pod_sets) {
        prop_assert_eq!(&psa.name, &ps.name, "{}: podSet order", &wl.key);
        let min = ps.min_count.unwrap_or(ps.count);
        prop_assert!(
            min <= psa.count && psa.count <= ps.count,
            "{} {}: count {} outside [{}, {}]",
            wl.key,
            ps.name,
            psa.count,
            min,
            ps.count
        );
        for &(resource, per_pod) in &ps.requests {
            let fr = psa
                .flavors
                .iter()
                .find(|(r, _)| *r == resource)
                .and_then(|&(_, flavor)| cluster.names.find_fr(flavor, resource));
            let Some(fr) = fr else {
                return Err(TestCaseError::fail(format!(
                    "{} {}: a requested resource got no flavor with quota",
                    wl.key, ps.name
                )));
            };
            *expected.entry(fr).or_default() += per_pod * i64::from(psa.count);
        }
    }
    let usage: BTreeMap<FrIdx, i64> = a.usage.iter().copied().filter(|&(_, v)| v != 0).collect();
    expected.retain(|_, v| *v != 0);
    prop_assert_eq!(
        usage,
        expected,
        "{}: admission usage vs counts × requests",
        &wl.key
    );
    Ok(())
}

/// (c), (d), (e) on one cycle's decisions, before its evictions are applied.
fn check_decisions(s: &Scheduler, held_before: &[bool], decisions: &[Decision]) -> Check {
    let cluster = &s.cluster;
    let same_tree = |a: WorkloadId, b: WorkloadId| {
        let root = |w: WorkloadId| {
            let cq = cluster
                .workload(w)
                .cluster_queue
                .expect("queued workloads have a queue");
            cluster.tree.root(cluster.cq(cq).node)
        };
        root(a) == root(b)
    };
    let mut admitted = HashSet::new();
    let mut victims = HashSet::new();
    let mut preemptors = HashSet::new();
    for d in decisions {
        match d {
            Decision::Admitted {
                workload,
                admission,
                ..
            } => {
                let key = &cluster.workload(*workload).key;
                prop_assert!(
                    !held_before[workload.index()],
                    "{key} admitted while holding quota"
                );
                prop_assert!(
                    admitted.insert(*workload),
                    "{key} admitted twice in one cycle"
                );
                prop_assert_eq!(
                    cluster.holding(*workload),
                    &Holding::Admitted(admission.clone()),
                    "{} holding after admission",
                    key
                );
                check_admission(cluster, *workload, admission)?;
            }
            Decision::Preempted {
                workload,
                preemptor,
                ..
            } => {
                let (victim, by) = (
                    &cluster.workload(*workload).key,
                    &cluster.workload(*preemptor).key,
                );
                prop_assert!(
                    held_before[workload.index()],
                    "victim {victim} held no quota before the cycle"
                );
                prop_assert!(
                    !held_before[preemptor.index()],
                    "preemptor {by} already held quota"
                );
                prop_assert!(
                    victims.insert(*workload),
                    "{victim} preempted twice in one cycle"
                );
                prop_assert!(
                    cluster.is_evicting(*workload),
                    "victim {victim} is not being evicted"
                );
                prop_assert!(
                    same_tree(*workload, *preemptor),
                    "{by} preempted {victim} across cohort trees"
                );
                preemptors.insert(*preemptor);
            }
            Decision::NotAdmitted { workload, .. } => {
                let key = &cluster.workload(*workload).key;
                prop_assert!(
                    s.is_pending(*workload),
                    "{key} not admitted but not requeued"
                );
            }
        }
    }
    for p in &preemptors {
        let key = &cluster.workload(*p).key;
        prop_assert!(
            !admitted.contains(p),
            "preemptor {key} admitted in the cycle it preempted"
        );
        prop_assert!(!victims.contains(p), "preemptor {key} is also a victim");
    }
    for v in &victims {
        prop_assert!(
            !admitted.contains(v),
            "{} admitted and preempted",
            &cluster.workload(*v).key
        );
    }
    Ok(())
}

/// (f) on one cycle's preemptions at `now`, given every earlier eviction per ClusterQueue.
fn check_budgets(
    s: &Scheduler,
    evictions: &mut [Vec<i64>],
    now: i64,
    decisions: &[Decision],
) -> Check {
    let cluster = &s.cluster;
    let mut per_preemptor: BTreeMap<WorkloadId, u32> = BTreeMap::new();
    for d in decisions {
        if let Decision::Preempted { preemptor, .. } = d {
            *per_preemptor.entry(*preemptor).or_default() += 1;
        }
    }
    for (p, n) in per_preemptor {
        let cq = cluster
            .workload(p)
            .cluster_queue
            .expect("a preemptor is queued");
        let budget = cluster.cq(cq).budget;
        let key = &cluster.workload(p).key;
        if let Some(max) = budget.max_victims_per_preemptor {
            prop_assert!(n <= max, "{key} evicted {n} victims, cap {max}");
        }
        evictions[cq.index()].extend(std::iter::repeat_n(now, n as usize));
        if let Some(max) = budget.max_evictions_per_minute {
            let recent = evictions[cq.index()]
                .iter()
                .filter(|&&t| t > now - 60_000)
                .count();
            prop_assert!(
                recent <= max as usize,
                "{} evictions by {}'s preemptors within 60 s, budget {max}",
                recent,
                &cluster.cq(cq).name
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The driver.

fn pick(candidates: Vec<WorkloadId>, i: usize) -> Option<WorkloadId> {
    (!candidates.is_empty()).then(|| candidates[i % candidates.len()])
}

fn run(case: &Case, steps: &[Step]) -> Check {
    let m = manifests(case);
    let cluster =
        build_cluster(&m, &|_| 0, 0).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
    let mut s = Scheduler::new(cluster);
    let n = s.cluster.workloads.len();
    let ids = || (0..n).map(|i| WorkloadId(i as u32));
    let mut submitted = vec![false; n];
    let mut live = vec![false; n];
    // Evicted by a check or a timeout, waiting out its backoff: neither pending nor holding.
    let mut backoff = vec![false; n];
    let mut now = 0;
    // Per ClusterQueue: the time of every eviction its preemptors caused.
    let mut evictions: Vec<Vec<i64>> = vec![Vec::new(); s.cluster.cluster_queues.len()];
    check_state(&s, &live)?;
    // Every case ends with a few cycles so that queued work gets its chance.
    let tail = [Step::Schedule, Step::Schedule, Step::Schedule];
    for step in steps.iter().chain(&tail) {
        match step {
            Step::Submit(i) => {
                if let Some(id) = pick(ids().filter(|w| !submitted[w.index()]).collect(), *i) {
                    let r = s.submit(id);
                    prop_assert!(r.is_ok(), "submit {}: {:?}", &s.cluster.workload(id).key, r);
                    submitted[id.index()] = true;
                    live[id.index()] = true;
                }
            }
            Step::Resubmit(i) => {
                let candidates = ids()
                    .filter(|w| live[w.index()] || backoff[w.index()])
                    .collect();
                if let Some(id) = pick(candidates, *i) {
                    let holds = s.cluster.admission(id).is_some();
                    let r = s.submit(id);
                    if backoff[id.index()] {
                        backoff[id.index()] = false;
                        live[id.index()] = true;
                    }
                    prop_assert_eq!(
                        r.is_err(),
                        holds,
                        "resubmit {}: {:?}",
                        &s.cluster.workload(id).key,
                        r
                    );
                }
            }
            Step::Finish(i) => {
                let holding = ids()
                    .filter(|&w| s.cluster.admission(w).is_some())
                    .collect();
                if let Some(id) = pick(holding, *i) {
                    s.finish(id);
                    live[id.index()] = false;
                }
            }
            Step::Delete(i) => {
                if let Some(id) = pick(ids().filter(|&w| s.is_pending(w)).collect(), *i) {
                    s.finish(id);
                    live[id.index()] = false;
                }
            }
            Step::RetryEviction(i) => {
                let holding = ids()
                    .filter(|&w| s.cluster.admission(w).is_some())
                    .collect();
                if let Some(id) = pick(holding, *i) {
                    let count = s.cluster.workload(id).requeue_count;
                    s.release_for_retry(id, now, wasq::cluster::EvictionReason::AdmissionCheck);
                    prop_assert!(s.cluster.admission(id).is_none());
                    prop_assert!(!s.is_pending(id), "queued only after its backoff");
                    prop_assert_eq!(s.cluster.workload(id).requeue_count, count + 1);
                    // A Resubmit step queues it again once its backoff is over.
                    live[id.index()] = false;
                    backoff[id.index()] = true;
                }
            }
            Step::Deactivate(i) => {
                let holding = ids()
                    .filter(|&w| s.cluster.admission(w).is_some())
                    .collect();
                if let Some(id) = pick(holding, *i) {
                    s.deactivate(id);
                    prop_assert!(s.cluster.admission(id).is_none());
                    prop_assert_eq!(
                        s.submit(id),
                        Err(wasq::scheduler::SubmitError::Inactive),
                        "a deactivated workload is never queued again"
                    );
                    live[id.index()] = false;
                    backoff[id.index()] = false;
                }
            }
            Step::Wait(seconds) => now += seconds * 1000,
            Step::Schedule => {
                now += 1000;
                let held_before: Vec<bool> =
                    ids().map(|w| s.cluster.admission(w).is_some()).collect();
                let outcome = s.schedule(now);
                check_decisions(&s, &held_before, &outcome.decisions)?;
                check_budgets(&s, &mut evictions, now, &outcome.decisions)?;
                // Victims still hold quota until their eviction completes: check that state too.
                check_quota(&s.cluster)?;
                check_usage_recomputes(&s.cluster)?;
                let fallbacks = s.take_fallbacks();
                prop_assert!(
                    fallbacks.is_empty(),
                    "built-in policies failed verification: {fallbacks:?}"
                );
                for d in &outcome.decisions {
                    if let Decision::Preempted { workload, .. } = d {
                        s.complete_eviction(*workload);
                    }
                }
                // Drivers hand the list back; every other cycle does here, so that cycles
                // writing into a recycled list (its earlier decisions cleared) are checked
                // alongside cycles with a fresh one.
                if outcome.cycle.is_multiple_of(2) {
                    s.recycle(outcome);
                }
            }
        }
        check_state(&s, &live)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// Random clusters and event sequences never break the scheduler's invariants (a)–(e).
    #[test]
    fn scheduler_keeps_invariants(case in case(), steps in steps()) {
        run(&case, &steps)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Hand-written cases.

/// One cohort, flavor f0: `cq0` (nominal 4, borrowingLimit 0, preempts lower priority within
/// the queue) is full with a priority-0 workload of 4 cpus; `cq1` (nominal 2) and `cq2`
/// (nominal 0) are empty, so the cohort has 2 cpus free. Then a priority-2 workload of 1 cpu
/// arrives in `cq0` (it must preempt), and two priority-0 workloads of 2 cpus in `cq1` and
/// `cq2` (each fits alone in the 2 free cpus, not both).
fn preempt_then_two_fits() -> Case {
    let quota = |nominal, borrowing_limit| CpuQuota {
        flavor: 0,
        nominal,
        borrowing_limit,
        lending_limit: None,
    };
    let queue = |quotas, within| QueueCase {
        cohort: Some(0),
        quotas,
        strict_fifo: false,
        within,
        reclaim: ReclaimWithinCohort::Never,
        borrow: BorrowWithinCohort::default(),
        fungibility: None,
        budget: (None, None),
    };
    let one = |queue, priority, count| WorkloadCase {
        queue,
        priority,
        created_s: 0,
        pod_sets: vec![PodSetCase {
            count,
            min_count: None,
            cpu_milli: 1000,
        }],
    };
    Case {
        cohorts: vec![CohortCase {
            parent: None,
            quotas: None,
        }],
        queues: vec![
            queue(vec![quota(4, Some(0))], WithinClusterQueue::LowerPriority),
            queue(vec![quota(2, None)], WithinClusterQueue::Never),
            queue(vec![quota(0, None)], WithinClusterQueue::Never),
        ],
        // w00 the victim, w01 the preemptor, w02 and w03 the two that each fit alone.
        workloads: vec![one(0, 0, 4), one(0, 2, 1), one(1, 0, 2), one(2, 0, 2)],
    }
}

/// A cycle that preempts must not also admit, into capacity the victims still hold, more than
/// the cohort has: victims keep their quota until their eviction completes.
#[test]
fn admissions_do_not_spend_capacity_still_held_by_victims() {
    let steps = [
        Step::Submit(0),
        Step::Schedule,
        Step::Submit(0),
        Step::Submit(0),
        Step::Submit(0),
        Step::Schedule,
    ];
    if let Err(e) = run(&preempt_then_two_fits(), &steps) {
        panic!("{e}");
    }
}
