//! Scheduler throughput and memory (issue 6): one scheduling cycle at 10 / 100 / 1,000
//! ClusterQueues, the same cycle at 1,000 vs 100,000 pending workloads, queue push/pop with
//! 100,000 pending workloads in one ClusterQueue, the per-cycle quota snapshot, and the memory a
//! pending workload costs (printed, not a criterion measurement).
//!
//! The cluster follows the shape of Kueue's performance tests (`src/sim/generate.rs`), built as
//! `Manifests` in Rust rather than YAML (the YAML loader takes at most 1,024 documents per file,
//! and parsing 100,000 workloads would only slow the setup): cohorts of up to 100
//! ClusterQueues, each with one flavor, cpu 20 / memory 40Gi nominal, borrowingLimit 100 cpu /
//! 200Gi, `reclaimWithinCohort: Any`, `withinClusterQueue: LowerPriority`, BestEffortFIFO (the
//! default), its own namespace and LocalQueue. Every workload is one pod of 5 cpu / 10Gi.
//!
//! State before every measured cycle:
//! - every ClusterQueue holds admitted workloads of priority 100: four (20 cpu, full) in three
//!   ClusterQueues out of four, three (15 cpu, 5 cpu free) in every fourth;
//! - every ClusterQueue has `P` pending workloads of priority 50 (no preemption target: the
//!   admitted ones have a higher priority and nobody borrows).
//!
//! So a cycle has one head per ClusterQueue: a quarter fit and are admitted, the rest are
//! nominated (borrowing what the cohort has free, or no fit, with a preemption search that finds
//! no candidate) and go back to their queue.
//!
//! **Steady state, not a clone per iteration.** `Scheduler` is not `Clone`, and cloning it (the
//! whole `Cluster` with every `WorkloadInfo`) costs far more than a cycle at 100,000 pending, so
//! `iter_batched` would spend minutes in setup. Instead each iteration times one
//! `Scheduler::schedule` and then, untimed, undoes what the cycle changed: each admitted
//! workload is finished and submitted again (`finish`, `submit`, `flush_submissions`), which puts
//! it back at the head of its queue with the same key and the quota as it was. Finishing also
//! marks the cohort's parked heads for retry, so the next cycle starts by moving them back to
//! the active set (timed, as in a real cycle after a workload finished). Before measuring, the
//! benchmark checks that consecutive cycles make identical decisions.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::{Namespace, NodeSelectorTerm, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use wasq::api::{
    self, ClusterQueue, ClusterQueuePreemption, ClusterQueueSpec, FlavorQuotas, LocalQueue,
    LocalQueueSpec, Manifests, Quantity, QueueingStrategy, ReclaimWithinCohort, ResourceFlavor,
    ResourceGroup, ResourceQuota, WithinClusterQueue,
};
use wasq::cluster::{
    Cluster, CqId, Holding, Millis, PodSetInfo, WorkloadId, WorkloadInfo, build_cluster,
};
use wasq::queue::{PendingQueue, QueueManager, SortKey};
use wasq::scheduler::{CycleOutcome, Decision, Scheduler};
use wasq::sim::extensions::{PodSetRecord, WorkloadRecord};

/// 2026-01-01T00:00:00Z
const T0: Millis = 1_767_225_600_000;
const COHORT_SIZE: usize = 100;
const FLAVOR: &str = "default";

// ---------------------------------------------------------------------------------------------
// The cluster

fn named(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        ..ObjectMeta::default()
    }
}

fn quantity(s: &str) -> Quantity {
    s.parse().expect("valid quantity")
}

fn cluster_queue(name: &str, cohort: &str) -> ClusterQueue {
    let resource = |name: &str, nominal: &str, limit: &str| ResourceQuota {
        name: name.into(),
        nominal_quota: quantity(nominal),
        borrowing_limit: Some(quantity(limit)),
        lending_limit: None,
    };
    ClusterQueue {
        metadata: named(name),
        spec: ClusterQueueSpec {
            resource_groups: vec![ResourceGroup {
                covered_resources: vec!["cpu".into(), "memory".into()],
                flavors: vec![FlavorQuotas {
                    name: FLAVOR.into(),
                    resources: vec![
                        resource("cpu", "20", "100"),
                        resource("memory", "40Gi", "200Gi"),
                    ],
                }],
            }],
            cohort_name: Some(cohort.to_string()),
            namespace_selector: Some(LabelSelector::default()),
            preemption: Some(ClusterQueuePreemption {
                reclaim_within_cohort: Some(ReclaimWithinCohort::Any),
                within_cluster_queue: Some(WithinClusterQueue::LowerPriority),
                borrow_within_cohort: None,
            }),
            ..ClusterQueueSpec::default()
        },
        status: None,
    }
}

/// One pod of 5 cpu / 10Gi, without the simulator's annotations (a Workload as a job
/// integration writes it). `a-<i>` are admitted before measuring, `p-<i>` stay pending.
fn workload(cq: &str, name: String, priority: i32) -> api::Workload {
    let mut w = WorkloadRecord {
        namespace: cq.to_string(),
        name,
        queue: cq.to_string(),
        priority: Some(priority),
        arrival: 0,
        duration: None,
        class: None,
        pod_sets: vec![PodSetRecord {
            name: api::default_pod_set_name(),
            count: 1,
            requests: BTreeMap::from([
                ("cpu".to_string(), "5".to_string()),
                ("memory".to_string(), "10Gi".to_string()),
            ]),
        }],
    }
    .into_workload();
    w.metadata.annotations = None;
    w
}

/// Admitted workloads in ClusterQueue `i`: the full ones (20 cpu) and every fourth (15 cpu).
fn admitted_per_cq(i: usize) -> usize {
    if i.is_multiple_of(4) { 3 } else { 4 }
}

fn manifests(cqs: usize, pending_per_cq: usize) -> Manifests {
    let mut m = Manifests {
        flavors: vec![ResourceFlavor {
            metadata: named(FLAVOR),
            ..ResourceFlavor::default()
        }],
        ..Manifests::default()
    };
    m.workloads.reserve(cqs * (pending_per_cq + 4));
    for i in 0..cqs {
        let name = format!("cq-{i}");
        m.cluster_queues
            .push(cluster_queue(&name, &format!("cohort-{}", i / COHORT_SIZE)));
        m.namespaces.push(Namespace {
            metadata: named(&name),
            ..Namespace::default()
        });
        m.local_queues.push(LocalQueue {
            metadata: ObjectMeta {
                namespace: Some(name.clone()),
                ..named(&name)
            },
            spec: LocalQueueSpec {
                cluster_queue: name.clone(),
                ..LocalQueueSpec::default()
            },
            status: None,
        });
        for j in 0..admitted_per_cq(i) {
            m.workloads.push(workload(&name, format!("a-{j}"), 100));
        }
        for j in 0..pending_per_cq {
            m.workloads.push(workload(&name, format!("p-{j}"), 50));
        }
    }
    m
}

/// Queue order: `a-<j>` an hour before `p-<j>`, one second apart within each.
fn created(w: &api::Workload) -> Millis {
    let name = w.metadata.name.as_deref().unwrap_or_default();
    let (kind, j) = name.split_once('-').expect("a-<j> or p-<j>");
    let j: Millis = j.parse().expect("index");
    let base = if kind == "a" {
        T0 - 7_200_000
    } else {
        T0 - 3_600_000
    };
    base + j * 1_000
}

fn build(m: &Manifests) -> Cluster {
    build_cluster(m, &created, T0).unwrap_or_else(|e| panic!("{e:?}"))
}

fn is_admitted_set(w: &WorkloadInfo) -> bool {
    w.name.starts_with("a-")
}

/// Submits in batches with a flush after each: `Scheduler::submit` checks the not-yet-keyed
/// list linearly, so one burst of 100,000 submissions is quadratic (see `memory_report`).
fn submit_all(s: &mut Scheduler, ids: &[WorkloadId]) {
    for chunk in ids.chunks(1_000) {
        for &id in chunk {
            s.submit(id).expect("queueable");
        }
        s.flush_submissions(T0);
    }
}

/// Admits the `a-*` workloads (cycles until no progress), then queues the `p-*` ones.
fn admit_then_queue(s: &mut Scheduler) {
    let (admit, pending): (Vec<_>, Vec<_>) =
        s.cluster.workloads.iter().partition(|w| is_admitted_set(w));
    let admit: Vec<WorkloadId> = admit.iter().map(|w| w.id).collect();
    let pending: Vec<WorkloadId> = pending.iter().map(|w| w.id).collect();
    submit_all(s, &admit);
    while s.schedule(T0).made_progress() {}
    for &id in &admit {
        assert!(s.cluster.admission(id).is_some(), "a-* workloads fit");
    }
    submit_all(s, &pending);
}

/// A scheduler in the measured state.
fn measured_state(cqs: usize, pending_per_cq: usize) -> Scheduler {
    let mut s = Scheduler::new(build(&manifests(cqs, pending_per_cq)));
    admit_then_queue(&mut s);
    assert_eq!(s.queues.pending_total(), cqs * pending_per_cq);
    s
}

/// Undoes a cycle (untimed): every admitted workload finishes and is queued again.
fn restore(s: &mut Scheduler, out: &CycleOutcome) {
    for d in &out.decisions {
        match d {
            Decision::Admitted { workload, .. } => {
                s.finish(*workload);
                s.submit(*workload).expect("queueable");
            }
            Decision::Preempted { .. } => panic!("the benchmark state has no preemption"),
            Decision::NotAdmitted { .. } => {}
        }
    }
    s.flush_submissions(T0);
}

/// (heads, admitted, not admitted, parked) of one cycle.
fn summary(out: &CycleOutcome) -> (usize, usize, usize, usize) {
    let mut sum = (out.heads, 0, 0, 0);
    for d in &out.decisions {
        match d {
            Decision::Admitted { .. } => sum.1 += 1,
            Decision::NotAdmitted { parked, .. } => {
                sum.2 += 1;
                sum.3 += usize::from(*parked);
            }
            Decision::Preempted { .. } => {}
        }
    }
    sum
}

/// Runs cycles until two in a row decide the same, and checks that the state holds.
fn settle(s: &mut Scheduler, label: &str) {
    let pending = s.queues.pending_total();
    let mut last = None;
    for _ in 0..10 {
        let out = s.schedule(T0);
        let sum = summary(&out);
        restore(s, &out);
        if last == Some(sum) {
            assert_eq!(s.queues.pending_total(), pending, "{label}: pending count");
            eprintln!(
                "{label}: {pending} pending; a cycle: {} heads, {} admitted, {} not admitted \
                 ({} parked)",
                sum.0, sum.1, sum.2, sum.3
            );
            return;
        }
        last = Some(sum);
    }
    panic!("{label}: cycles do not settle");
}

/// Times `schedule` only; the undo after each cycle is not timed.
fn bench_cycle(
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: BenchmarkId,
    s: &mut Scheduler,
) {
    c.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let out = s.schedule(black_box(T0));
                total += start.elapsed();
                restore(s, &out);
                // As the drivers do: the next cycle writes into this cycle's list.
                s.recycle(out);
            }
            total
        });
    });
}

// ---------------------------------------------------------------------------------------------
// Memory

fn vm_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

fn rss() -> u64 {
    vm_rss_kib().unwrap_or(0) * 1024
}

/// Heap and inline bytes of one `WorkloadInfo` (allocator rounding not included).
fn workload_info_bytes(w: &WorkloadInfo) -> usize {
    // The first podSet and two requests are inline; past that they are on the heap.
    let pod_set = |ps: &PodSetInfo| {
        // The name is an `Arc<str>`: two counts and the text.
        2 * size_of::<usize>()
            + ps.name.len()
            + if ps.requests.spilled() {
                ps.requests.capacity() * size_of::<(wasq::quota::ResourceId, i64)>()
            } else {
                0
            }
            + ps.topology.as_ref().map_or(0, |t| size_of_val(t.as_ref()))
            // The node constraints' box and its lists (the selector's tree nodes not counted).
            + ps.constraints.as_ref().map_or(0, |c| {
                size_of_val(c.as_ref())
                    + c.tolerations.capacity() * size_of::<Toleration>()
                    + c.affinity_terms.capacity() * size_of::<NodeSelectorTerm>()
            })
    };
    size_of::<WorkloadInfo>()
        + w.namespace.capacity()
        + w.name.capacity()
        + w.key.capacity()
        + w.local_queue.as_ref().map_or(0, String::capacity)
        + w.priority_class.as_ref().map_or(0, |c| c.len())
        + w.labels.heap_bytes()
        + w.annotations.heap_bytes()
        + w.pod_sets.iter().map(pod_set).sum::<usize>()
        + if w.pod_sets.spilled() {
            w.pod_sets.capacity() * size_of::<PodSetInfo>()
        } else {
            0
        }
}

/// Memory per pending workload at 100,000 pending (100 ClusterQueues × 1,000), from VmRSS
/// around each step, and from the sizes of the structures that hold a pending workload.
fn memory_report(_: &mut Criterion) {
    const CQS: usize = 100;
    const PER_CQ: usize = 1_000;
    const N: usize = CQS * PER_CQ;
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let per = |b: u64| b as f64 / N as f64;

    let rss0 = rss();
    let t = Instant::now();
    let m = manifests(CQS, PER_CQ);
    let t_manifests = t.elapsed();
    let rss1 = rss();
    let t = Instant::now();
    let cluster = build(&m);
    let t_build = t.elapsed();
    let rss2 = rss();
    // Kept alive until the end, so that the queues cannot reuse its freed memory.
    let manifests_kept = m;

    let mut s = Scheduler::new(cluster);
    let (admit, pending): (Vec<WorkloadId>, Vec<WorkloadId>) = {
        let (a, p): (Vec<_>, Vec<_>) = s.cluster.workloads.iter().partition(|w| is_admitted_set(w));
        (
            a.iter().map(|w| w.id).collect(),
            p.iter().map(|w| w.id).collect(),
        )
    };
    submit_all(&mut s, &admit);
    while s.schedule(T0).made_progress() {}
    let rss3 = rss();
    // The natural path: one burst of submissions, keyed at the next flush.
    let t = Instant::now();
    for &id in &pending {
        s.submit(id).expect("queueable");
    }
    let t_submit = t.elapsed();
    let t = Instant::now();
    s.flush_submissions(T0);
    let t_flush = t.elapsed();
    let rss4 = rss();
    assert_eq!(s.queues.pending_total(), N);

    // Structure sizes.
    let c = &s.cluster;
    let infos: usize = c
        .workloads
        .iter()
        .filter(|w| !is_admitted_set(w))
        .map(workload_info_bytes)
        .sum();
    let vec_slack = (c.workloads.capacity() - c.workloads.len()) * size_of::<WorkloadInfo>();
    let by_key = c.key_index_bytes();
    let holdings = c.workloads.len() * size_of::<Holding>();
    // The queues' table by workload id (one entry per workload).
    let location = c.workloads.len() * QueueManager::BYTES_PER_ID;
    // The queues' active sets and parked lists: ring-buffer runs, their capacity.
    let active = s.queues.queues_heap_bytes();

    eprintln!(
        "memory: {N} pending workloads in {CQS} ClusterQueues (+ {} admitted)",
        admit.len()
    );
    eprintln!(
        "  time: manifests {:.2} s, build_cluster {:.2} s, {N} submits {:.2} s, flush {:.3} s",
        t_manifests.as_secs_f64(),
        t_build.as_secs_f64(),
        t_submit.as_secs_f64(),
        t_flush.as_secs_f64()
    );
    eprintln!(
        "  VmRSS: start {:.1} MiB, + manifests {:.1} MiB ({:.0} B/workload), + cluster {:.1} MiB \
         ({:.0} B/workload), + queues {:.1} MiB ({:.0} B/workload); cluster + queues {:.0} \
         B per pending workload",
        mib(rss0),
        mib(rss1 - rss0),
        per(rss1 - rss0),
        mib(rss2 - rss1),
        per(rss2 - rss1),
        mib(rss4 - rss3),
        per(rss4 - rss3),
        per(rss2 - rss1 + rss4 - rss3),
    );
    eprintln!(
        "  structures per pending workload: WorkloadInfo {} B inline ({:.0} B with its heap), \
         Vec<WorkloadInfo> slack {:.0} B, by_key {:.0} B, holdings {} B; queues: slots by id {:.0} \
         B, active sets {:.0} B",
        size_of::<WorkloadInfo>(),
        infos as f64 / N as f64,
        vec_slack as f64 / N as f64,
        by_key as f64 / N as f64,
        holdings / N,
        location as f64 / N as f64,
        active as f64 / N as f64,
    );
    drop(s);
    drop(manifests_kept);
}

// ---------------------------------------------------------------------------------------------
// Benchmarks

fn cycles(c: &mut Criterion) {
    let mut group = c.benchmark_group("cycle");
    for cqs in [10, 100, 1_000, 10_000] {
        let mut s = measured_state(cqs, 10);
        settle(&mut s, &format!("cycle/{cqs}"));
        group.throughput(Throughput::Elements(cqs as u64));
        bench_cycle(&mut group, BenchmarkId::from_parameter(cqs), &mut s);
    }
    group.finish();
}

fn pending_scaling(c: &mut Criterion) {
    let mut group = c.benchmark_group("cycle-vs-pending");
    for cqs in [100, 1_000] {
        for pending in [1_000, 10_000, 100_000] {
            let mut s = measured_state(cqs, pending / cqs);
            let label = format!("{cqs}cq");
            settle(&mut s, &format!("cycle-vs-pending/{label}/{pending}"));
            bench_cycle(&mut group, BenchmarkId::new(label, pending), &mut s);
        }
    }
    group.finish();
}

fn snapshot(c: &mut Criterion) {
    let mut group = c.benchmark_group("snapshot");
    for cqs in [10, 100, 1_000] {
        let cluster = build(&manifests(cqs, 0));
        let usage = cluster.usage.clone();
        eprintln!(
            "snapshot/{cqs}: {} nodes x {} flavor-resources = {} bytes",
            cluster.tree.len(),
            cluster.tree.n_fr(),
            cluster.tree.len() * cluster.tree.n_fr() * 8
        );
        group.bench_function(BenchmarkId::from_parameter(cqs), |b| {
            b.iter(|| black_box(&usage).clone());
        });
    }
    group.finish();
}

/// A deterministic stream of sort keys: priorities 50 / 100 / 200, creation times scattered
/// over a day (Kueue's built-in key `[-priority, created, 0]`).
struct Keys(u64);

impl Keys {
    fn next(&mut self) -> SortKey {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let r = self.0 >> 33;
        let priority = [50, 100, 200][(r % 3) as usize];
        SortKey([-priority, T0 - (r % 86_400_000) as i64, 0])
    }
}

fn queues(c: &mut Criterion) {
    let mut group = c.benchmark_group("queue");
    for n in [1_000u32, 100_000] {
        let mut keys = Keys(u64::from(n));
        let filled: Vec<(WorkloadId, SortKey)> =
            (0..n).map(|i| (WorkloadId(i), keys.next())).collect();

        // PendingQueue: push a new workload, pop the head; the size stays n.
        let mut q = PendingQueue::new(QueueingStrategy::BestEffortFIFO);
        for &(id, key) in &filled {
            q.push(id, key);
        }
        let mut next = n;
        group.bench_function(BenchmarkId::new("pending-queue/push+pop", n), |b| {
            b.iter(|| {
                q.push(WorkloadId(next), keys.next());
                next += 1;
                black_box(q.pop())
            });
        });

        // QueueManager (one ClusterQueue): push, then pop through `heads`.
        let mut m = QueueManager::new([QueueingStrategy::BestEffortFIFO]);
        for &(id, key) in &filled {
            m.push(CqId(0), id, key);
        }
        let mut next = n;
        group.bench_function(BenchmarkId::new("queue-manager/push+heads", n), |b| {
            b.iter(|| {
                m.push(CqId(0), WorkloadId(next), keys.next());
                next += 1;
                black_box(m.heads(|_| true))
            });
        });

        // QueueManager: a workload leaves from anywhere in the queue (deleted, or its
        // LocalQueue changed) and comes back.
        let mut m = QueueManager::new([QueueingStrategy::BestEffortFIFO]);
        for &(id, key) in &filled {
            m.push(CqId(0), id, key);
        }
        let mut i = 0usize;
        group.bench_function(BenchmarkId::new("queue-manager/remove+push", n), |b| {
            b.iter(|| {
                let (id, key) = filled[i % filled.len()];
                i = i.wrapping_add(7_919);
                assert!(m.remove(id));
                m.push(CqId(0), id, key);
            });
        });

        // Building the whole queue (the cost of queueing a burst of n).
        group.bench_function(BenchmarkId::new("queue-manager/fill", n), |b| {
            b.iter_batched(
                || QueueManager::new([QueueingStrategy::BestEffortFIFO]),
                |mut m| {
                    for &(id, key) in &filled {
                        m.push(CqId(0), id, key);
                    }
                    m
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = memory_report, cycles, pending_scaling, snapshot, queues
}
criterion_main!(benches);
