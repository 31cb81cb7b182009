//! Policy calls, WASM vs native (issue 3): each extension point's call at batch sizes 1, 10,
//! 100 and 1,000, through the same trait object the scheduler uses, once with the built-in
//! policy and once with the matching `kueue-default-*` plugin, on the same request.
//!
//! The cluster is written as manifests (YAML), loaded and built like any scenario:
//! - 1,000 ClusterQueues in 10 cohorts of 100 (the shape of Kueue's large-scale performance
//!   test), each with one pending workload: these are the `sort-keys` batch (a burst of
//!   submissions across queues, keyed in one call) and the `order-heads` heads (≤ 1 head per
//!   ClusterQueue, so N heads means N queues).
//! - One cohort per batch size N for preemption: `p<N>-own` (nominal N cpu / 2N Gi, full with
//!   ⌊N/2⌋ of its own low-priority workloads) and `p<N>-other` (nominal 0, borrowing the other
//!   ⌈N/2⌉ cpu). A preemptor of priority 100 in `p<N>-own` asks for ⌈0.9 N⌉ cpu and 2 Gi per
//!   cpu, so the request has exactly N candidates (reclaim from `other`, then same queue) and
//!   the answer needs about 0.9 N of them, with fill-back over all of them. The request is the
//!   one the scheduler itself builds: a recording policy captures it during a real cycle.
//! - 1,000 ResourceFlavors; `choose-flavor` gets one podSet and N flavor options with mixed
//!   modes (unavailable, no fit, preempt, reclaim, fit while borrowing), the only plain fit
//!   last, and `TryNextFlavor` fungibility, so every option is scanned and compared. Kueue
//!   allows at most 64 flavors per resource group, so batches of 100 and 1,000 are a stress
//!   test of the call, not a configuration the scheduler can produce; the options name real
//!   flavors, and the ClusterQueue's own group has 8.
//!
//! Every request is answered by both policies once before measuring; the answers must agree.

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use wasq::api::load::load_paths;
use wasq::cluster::{Cluster, CqId, Millis, PreemptionConfig, WorkloadId, build_cluster};
use wasq::policy::{
    Candidate, FitMode, FlavorChoiceRequest, FlavorOption, HeadEntry, PolicyContext, PolicyError,
    PolicyRef, PolicySet, PreemptionPolicy, PreemptionRequest, QueuedWorkload, VictimSet, builtin,
    verify,
};
use wasq::quota::{FlavorId, FrIdx, NodeId, Usage};
use wasq::scheduler::Scheduler;
use wasq::wasm::guests::{GuestProfile, build_repository_plugins};
use wasq::wasm::{Bindings, HostOptions, Limits, Registry, WasmEngine};

const BATCHES: [usize; 4] = [1, 10, 100, 1000];
const MAX: usize = 1000;
/// Flavors of the flavor-assignment ClusterQueue's group. Every flavor-resource a quota names
/// widens the usage snapshot of every node (see `report_shape`), so this stays typical rather
/// than Kueue's limit of 64.
const GROUP_FLAVORS: usize = 8;
/// 2026-01-01T00:00:00Z
const T0: Millis = 1_767_225_600_000;

// ---------------------------------------------------------------------------------------------
// The cluster

fn timestamp(ms: Millis) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .expect("valid timestamp")
        .to_string()
}

fn cluster_queue(out: &mut String, name: &str, cohort: &str, body: &str) {
    write!(
        out,
        "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: {name}}}\n\
         spec:\n  cohortName: {cohort}\n  namespaceSelector: {{}}\n{body}\
         ---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n\
         metadata: {{namespace: default, name: {name}}}\nspec: {{clusterQueue: {name}}}\n"
    )
    .expect("write to String");
}

/// One resource group of cpu and memory in flavor `f-0`.
fn quota(cpu: usize, memory_gi: usize, borrowing_limit: Option<usize>) -> String {
    let limit = |unit: &str, v: usize| {
        borrowing_limit.map_or(String::new(), |l| {
            format!(", borrowingLimit: {}{unit}", l * v)
        })
    };
    format!(
        "  resourceGroups:\n  - coveredResources: [cpu, memory]\n    flavors:\n    - name: f-0\n      resources:\n\
         \x20     - {{name: cpu, nominalQuota: {cpu}{}}}\n\
         \x20     - {{name: memory, nominalQuota: {memory_gi}Gi{}}}\n",
        limit("", 1),
        limit("Gi", 2),
    )
}

fn workload(
    out: &mut String,
    name: &str,
    queue: &str,
    priority: i64,
    created: Millis,
    cpu: usize,
    admitted: Option<(&str, Millis)>,
) {
    write!(
        out,
        "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\n\
         metadata: {{namespace: default, name: {name}, creationTimestamp: '{}'}}\n\
         spec:\n  queueName: {queue}\n  priority: {priority}\n  podSets:\n  - name: main\n    count: 1\n\
         \x20   template:\n      spec:\n        restartPolicy: Never\n        containers:\n\
         \x20       - name: c\n          image: pause\n          resources:\n\
         \x20           requests: {{cpu: '{cpu}', memory: {}Gi}}\n",
        timestamp(created),
        2 * cpu
    )
    .expect("write to String");
    if let Some((cq, at)) = admitted {
        write!(
            out,
            "status:\n  admission:\n    clusterQueue: {cq}\n    podSetAssignments:\n    - name: main\n\
             \x20     count: 1\n      flavors: {{cpu: f-0, memory: f-0}}\n\
             \x20     resourceUsage: {{cpu: '{cpu}', memory: {}Gi}}\n\
             \x20 conditions:\n  - type: QuotaReserved\n    status: 'True'\n    reason: QuotaReserved\n\
             \x20   message: ''\n    lastTransitionTime: '{}'\n",
            2 * cpu,
            timestamp(at)
        )
        .expect("write to String");
    }
}

fn manifests() -> String {
    let mut out = String::new();
    for f in 0..MAX {
        writeln!(
            out,
            "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {{name: f-{f}}}"
        )
        .expect("write to String");
    }
    // Heads: 10 cohorts × 100 ClusterQueues, one pending workload each.
    for i in 0..MAX {
        let name = format!("h-{}-{}", i / 100, i % 100);
        let body = format!(
            "  preemption: {{withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}}\n{}",
            quota(20, 40, Some(100))
        );
        cluster_queue(&mut out, &name, &format!("hc-{}", i / 100), &body);
        let priority = [50, 100, 200][i % 3];
        let created = T0 - 3_600_000 + (i as Millis * 7_919) % 3_600_000;
        workload(
            &mut out,
            &format!("{name}-wl"),
            &name,
            priority,
            created,
            1 + i % 4,
            None,
        );
    }
    // Preemption: one cohort per batch size.
    for n in BATCHES {
        let (own, other) = (format!("p{n}-own"), format!("p{n}-other"));
        let cohort = format!("p{n}");
        let body = format!(
            "  preemption: {{withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}}\n{}",
            quota(n, 2 * n, None)
        );
        cluster_queue(&mut out, &own, &cohort, &body);
        cluster_queue(&mut out, &other, &cohort, &quota(0, 0, None));
        for i in 0..n {
            let cq = if i < n / 2 { &own } else { &other };
            let created = T0 - 7_200_000 + i as Millis * 1_000;
            let admitted = created + (i as Millis * 104_729) % 3_600_000;
            workload(
                &mut out,
                &format!("p{n}-{i}"),
                cq,
                (i as i64 * 7) % 10,
                created,
                1,
                Some((cq, admitted)),
            );
        }
        workload(
            &mut out,
            &format!("p{n}-preemptor"),
            &own,
            100,
            T0 - 60_000,
            (9 * n).div_ceil(10),
            None,
        );
    }
    // Flavor assignment: one group of 64 flavors, fungibility that scans them all.
    let mut group = String::from(
        "  flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor}\n\
         \x20 resourceGroups:\n  - coveredResources: [cpu, memory]\n    flavors:\n",
    );
    for f in 0..GROUP_FLAVORS {
        write!(
            group,
            "    - name: f-{f}\n      resources:\n      - {{name: cpu, nominalQuota: 8}}\n\
             \x20     - {{name: memory, nominalQuota: 16Gi}}\n"
        )
        .expect("write to String");
    }
    cluster_queue(&mut out, "flavors", "fc", &group);
    workload(&mut out, "flavors-wl", "flavors", 100, T0 - 1_000, 4, None);
    out
}

/// Loads the manifests like `wasq simulate` loads a directory: the loader takes at most 1,024
/// documents per file, so they are split into files of 1,000.
fn load_cluster() -> Cluster {
    let text = manifests();
    let docs: Vec<&str> = text
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .collect();
    let dir = tempfile::tempdir().expect("temporary directory");
    let files: Vec<_> = docs
        .chunks(1000)
        .enumerate()
        .map(|(i, chunk)| {
            let path = dir.path().join(format!("bench-{i:02}.yaml"));
            let text: String = chunk.iter().map(|d| format!("---\n{d}")).collect();
            std::fs::write(&path, text).expect("write manifests");
            path
        })
        .collect();
    let m = load_paths(&files).unwrap_or_else(|e| panic!("{e}"));
    build_cluster(&m, &|_| T0, T0).unwrap_or_else(|e| panic!("{e:?}"))
}

fn id(cluster: &Cluster, name: &str) -> WorkloadId {
    cluster
        .find_workload(&format!("default/{name}"))
        .expect("registered")
}

fn cq(cluster: &Cluster, name: &str) -> CqId {
    cluster.cq_by_name[name]
}

// ---------------------------------------------------------------------------------------------
// Requests

fn queued(cluster: &Cluster) -> Vec<QueuedWorkload> {
    (0..MAX)
        .map(|i| {
            let w = id(cluster, &format!("h-{}-{}-wl", i / 100, i % 100));
            let wl = cluster.workload(w);
            QueuedWorkload {
                workload: w,
                cluster_queue: wl.cluster_queue.expect("queued"),
                local_queue: wl.lq,
                priority: wl.effective_priority(),
                created: wl.created,
                queued: T0,
            }
        })
        .collect()
}

fn heads(cx: &PolicyContext<'_>, queued: &[QueuedWorkload]) -> Vec<HeadEntry> {
    queued
        .iter()
        .enumerate()
        .map(|(i, q)| HeadEntry {
            workload: q.workload,
            cluster_queue: q.cluster_queue,
            has_reservation: i % 17 == 0,
            borrow_level: (i % 3) as u32,
            priority: q.priority,
            created: q.created,
            queued: q.queued,
            local_queue: q.local_queue,
            key: builtin::sort_key(cx, q),
            usage: Default::default(),
            requeue_count: (i % 4) as u32,
            requeue_reason: None,
        })
        .collect()
}

/// The owned parts of a preemption request the scheduler made.
#[derive(Clone)]
struct Recorded {
    preemptor: WorkloadId,
    cluster_queue: CqId,
    node: NodeId,
    priority: i64,
    created: Millis,
    config: PreemptionConfig,
    requests: Vec<(FrIdx, i64)>,
    needs_preemption: Vec<FrIdx>,
    candidates: Vec<Candidate>,
    usage: Usage,
    now: Millis,
}

impl Recorded {
    fn request<'a>(&'a self, cluster: &'a Cluster) -> PreemptionRequest<'a> {
        PreemptionRequest {
            preemptor: self.preemptor,
            cluster_queue: self.cluster_queue,
            node: self.node,
            priority: self.priority,
            created: self.created,
            config: self.config,
            requests: self.requests.clone(),
            fair_sharing: None,
            needs_preemption: self.needs_preemption.clone(),
            candidates: self.candidates.clone(),
            cluster,
            tree: &cluster.tree,
            usage: &self.usage,
            now: self.now,
            topology: None,
        }
    }
}

/// The built-in preemption policy, recording every request it is asked.
#[derive(Default)]
struct Recorder(Mutex<Vec<Recorded>>);

impl PreemptionPolicy for Recorder {
    fn id(&self) -> PolicyRef {
        PolicyRef::builtin()
    }

    fn select_victims(
        &self,
        req: &PreemptionRequest<'_>,
    ) -> Result<Option<VictimSet>, PolicyError> {
        self.0.lock().expect("recorder lock").push(Recorded {
            preemptor: req.preemptor,
            cluster_queue: req.cluster_queue,
            node: req.node,
            priority: req.priority,
            created: req.created,
            config: req.config,
            requests: req.requests.clone(),
            needs_preemption: req.needs_preemption.clone(),
            candidates: req.candidates.clone(),
            usage: req.usage.clone(),
            now: req.now,
        });
        Ok(builtin::select_victims(req))
    }
}

/// The preemption request of each batch size, as the scheduler builds it in a real cycle (on a
/// copy of the cluster, so that the replayed requests see the cluster as it was).
fn preemption_requests(cluster: &Cluster) -> Vec<Recorded> {
    let recorder = Arc::new(Recorder::default());
    let mut scheduler = Scheduler::new(cluster.clone());
    scheduler.set_default_policies(PolicySet {
        preemption: recorder.clone(),
        ..PolicySet::builtin()
    });
    for n in BATCHES {
        scheduler
            .submit(id(cluster, &format!("p{n}-preemptor")))
            .expect("preemptor queued");
    }
    scheduler.schedule(T0);
    let recorded = std::mem::take(&mut *recorder.0.lock().expect("recorder lock"));
    BATCHES
        .iter()
        .map(|n| {
            let preemptor = id(cluster, &format!("p{n}-preemptor"));
            // The flavor oracle asks per flavor-resource; the preemption itself asks for all.
            let r = recorded
                .iter()
                .filter(|r| r.preemptor == preemptor)
                .max_by_key(|r| r.requests.len())
                .unwrap_or_else(|| panic!("no preemption request for p{n}-preemptor"))
                .clone();
            assert_eq!(r.candidates.len(), *n, "p{n}: candidates");
            r
        })
        .collect()
}

/// N options for one podSet: every kind of mode, the only plain fit last.
fn flavor_options(n: usize) -> Vec<Option<FlavorOption>> {
    (0..n)
        .map(|i| {
            let (mode, borrow_level) = if i + 1 == n {
                (FitMode::Fit, 0)
            } else {
                match i % 7 {
                    0 => return None,
                    1 => (FitMode::NoFit, 0),
                    2 => (FitMode::NoPreemptionCandidates, 0),
                    3 => (FitMode::Preempt, 0),
                    4 => (FitMode::Reclaim, 1),
                    5 => (FitMode::Fit, 2),
                    _ => (FitMode::Preempt, 1),
                }
            };
            Some(FlavorOption {
                flavor: FlavorId(i as u32),
                mode,
                borrow_level,
                reasons: if mode == FitMode::Fit && borrow_level == 0 {
                    Vec::new()
                } else {
                    vec!["insufficient unused quota for cpu in flavor".to_string()]
                },
            })
        })
        .collect()
}

fn flavor_request(cluster: &Cluster, n: usize) -> FlavorChoiceRequest<'_> {
    let workload = id(cluster, "flavors-wl");
    let cluster_queue = cq(cluster, "flavors");
    let wl = cluster.workload(workload);
    FlavorChoiceRequest {
        workload,
        cluster_queue,
        pod_set: 0,
        requests: cluster.pod_set_total(&wl.pod_sets[0], wl.pod_sets[0].count),
        options: flavor_options(n),
        fungibility: cluster.cq(cluster_queue).fungibility,
        cluster,
        now: T0,
    }
}

// ---------------------------------------------------------------------------------------------
// Policies

/// The repository's plugins (built now), or the directory `WASQ_BENCH_PLUGINS` names: a way to
/// compare another build of the `kueue-default-*` plugins (an SDK change, other guest
/// optimisation settings) against the same native baseline.
fn plugin_dir() -> PathBuf {
    match std::env::var_os("WASQ_BENCH_PLUGINS") {
        Some(dir) => PathBuf::from(dir),
        None => {
            build_repository_plugins(Path::new(env!("CARGO_MANIFEST_DIR")), GuestProfile::Release)
                .expect("building plugins/ for wasm32-wasip2")
                .plugins
        }
    }
}

fn wasm_policies() -> (Registry, PolicySet) {
    let dir = plugin_dir();
    let engine = WasmEngine::new(false).expect("wasmtime engine");
    // Default limits except the deadline: a shared machine may stall a call past 10 ms, and a
    // timed-out call would measure the fallback path. Epoch checks cost the same either way.
    let options = HostOptions {
        limits: Limits {
            deadline_ms: 1_000,
            ..Limits::default()
        }
        .into(),
        ..HostOptions::default()
    };
    let registry = Registry::load_dir(engine, &dir, &options).expect("plugin directory");
    let mut bindings = Bindings::default();
    for spec in [
        "ordering=kueue-default-ordering",
        "preemption=kueue-default-preemption",
        "flavor-assignment=kueue-default-flavors",
    ] {
        bindings.set(spec).expect("valid binding");
    }
    let set = registry
        .policy_set(&bindings, "bench")
        .expect("kueue-default plugins bind");
    (registry, set)
}

fn implementations(wasm: &PolicySet) -> [(&'static str, PolicySet); 2] {
    [("native", PolicySet::builtin()), ("wasm", wasm.clone())]
}

// ---------------------------------------------------------------------------------------------
// Benchmarks

/// Prints the size of the quota usage snapshot and what one copy of it costs: the built-in
/// preemption policy copies it once per borrowing attempt, whatever the number of candidates.
fn report_shape(cluster: &Cluster) {
    const COPIES: u32 = 1000;
    let (nodes, frs) = (cluster.tree.len(), cluster.tree.n_fr());
    let start = Instant::now();
    for _ in 0..COPIES {
        black_box(black_box(&cluster.usage).clone());
    }
    eprintln!(
        "cluster: {} ClusterQueues, {} workloads; usage snapshot {nodes} nodes x {frs} \
         flavor-resources = {} KiB, one copy {:.2} us",
        cluster.cluster_queues.len(),
        cluster.workloads.len(),
        nodes * frs * 8 / 1024,
        start.elapsed().as_secs_f64() * 1e6 / f64::from(COPIES)
    );
}

fn benches(c: &mut Criterion) {
    let cluster = load_cluster();
    let (registry, wasm) = wasm_policies();
    let cx = PolicyContext::of(&cluster, T0);
    let queued = queued(&cluster);
    let heads = heads(&cx, &queued);
    let recorded = preemption_requests(&cluster);
    let native = PolicySet::builtin();
    report_shape(&cluster);

    let mut group = c.benchmark_group("ordering/sort-keys");
    for n in BATCHES {
        let batch = &queued[..n];
        let expected = native.ordering.sort_keys(&cx, batch).expect("native");
        assert_eq!(wasm.ordering.sort_keys(&cx, batch).expect("wasm"), expected);
        group.throughput(Throughput::Elements(n as u64));
        for (name, set) in implementations(&wasm) {
            group.bench_with_input(BenchmarkId::new(name, n), batch, |b, batch| {
                b.iter(|| set.ordering.sort_keys(&cx, black_box(batch)).expect(name));
            });
        }
    }
    group.finish();

    let mut group = c.benchmark_group("ordering/order-heads");
    for n in BATCHES {
        let batch = &heads[..n];
        let expected = native.ordering.order_heads(&cx, batch).expect("native");
        assert_eq!(
            wasm.ordering.order_heads(&cx, batch).expect("wasm"),
            expected
        );
        group.throughput(Throughput::Elements(n as u64));
        for (name, set) in implementations(&wasm) {
            group.bench_with_input(BenchmarkId::new(name, n), batch, |b, batch| {
                b.iter(|| set.ordering.order_heads(&cx, black_box(batch)).expect(name));
            });
        }
    }
    group.finish();

    let mut group = c.benchmark_group("preemption/select-victims");
    for (n, rec) in BATCHES.into_iter().zip(&recorded) {
        let req = rec.request(&cluster);
        let expected = native.preemption.select_victims(&req).expect("native");
        assert_eq!(
            wasm.preemption.select_victims(&req).expect("wasm"),
            expected
        );
        let set = expected.unwrap_or_else(|| panic!("p{n}: preemption cannot make room"));
        verify::victims(&req, &set, false).unwrap_or_else(|e| panic!("p{n}: {e}"));
        eprintln!(
            "preemption/select-victims/{n}: {} candidates, {} victims, allow_borrowing={}",
            req.candidates.len(),
            set.victims.len(),
            set.allow_borrowing
        );
        group.throughput(Throughput::Elements(n as u64));
        for (name, set) in implementations(&wasm) {
            group.bench_with_input(BenchmarkId::new(name, n), &req, |b, req| {
                b.iter(|| set.preemption.select_victims(black_box(req)).expect(name));
            });
        }
    }
    group.finish();

    let mut group = c.benchmark_group("flavor-assignment/choose-flavor");
    for n in BATCHES {
        let req = flavor_request(&cluster, n);
        let expected = native.flavors.choose_flavor(&req).expect("native");
        assert_eq!(wasm.flavors.choose_flavor(&req).expect("wasm"), expected);
        assert_eq!(expected, Some(n - 1), "the last option is chosen");
        group.throughput(Throughput::Elements(n as u64));
        for (name, set) in implementations(&wasm) {
            group.bench_with_input(BenchmarkId::new(name, n), &req, |b, req| {
                b.iter(|| set.flavors.choose_flavor(black_box(req)).expect(name));
            });
        }
    }
    group.finish();

    for p in registry.plugins() {
        let status = p.status();
        assert!(status.failures.is_empty(), "{}: {status:?}", p.info().name);
    }
}

criterion_group! {
    name = policies;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = benches
}
criterion_main!(policies);
