//! Topology placement natively and through WASM (issue 17): Kueue's TAS performance-test shape
//! (`test/performance/scheduler/configs/tas/generator.yaml`) simulated twice in one process,
//! once with the built-in placement and once with the `kueue-default-placement` plugin, every
//! other decision built in. Prints the whole run's wall time, and the placement decisions'
//! own cost (every call timed through a wrapper policy): per call and per admission, WASM /
//! native. Both runs must make the same decisions.
//!
//! The shape: 1 block × 10 racks × 64 nodes (cpu 96, memory 256Gi, pods 110 each) under one TAS
//! flavor; 5 cohorts × 6 ClusterQueues (cpu nominal 20, borrowingLimit 100,
//! `reclaimWithinCohort: Any`, `withinClusterQueue: LowerPriority`); per ClusterQueue nine
//! streams, 500 workloads in all (15,000 total), as Kueue's:
//!
//! | class | pods × cpu | priority | count per constraint (required / preferred / balanced) | every | runs |
//! |---|---|---|---|---|---|
//! | small  | 2 × 500m  | 50  | 120 / 120 / 110 | 100ms  | 200ms  |
//! | medium | 4 × 1250m | 100 | 34 / 33 / 33    | 500ms  | 500ms  |
//! | large  | 8 × 2500m | 200 | 17 / 17 / 16    | 1200ms | 1000ms |
//!
//! every request at the rack level. Kueue's `balanced` placement (alpha, off by default) is not
//! implemented by wasq: those streams ask for `preferred` rack, with their slice size as
//! `podSetSliceRequiredTopology: hostname` slices.
//!
//! Run: `cargo bench --bench placement` (`WASQ_TAS_BENCH_CQS=6` for a smaller run: one cohort).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use wasq::api::topology::{HOSTNAME_LABEL, PodSetTopologyRequest};
use wasq::api::{Manifests, ResourceFlavor, ResourceFlavorSpec};
use wasq::policy::{
    PlacementAnswer, PlacementChoiceRequest, PlacementPolicy, PolicyError, PolicyRef, PolicySet,
    builtin,
};
use wasq::sim::extensions::{PodSetRecord, WorkloadRecord};
use wasq::sim::generate::{FLAVOR, Generator, Shape, generate_objects};
use wasq::sim::nodes::{NodeInventorySpec, RACK_LABEL};
use wasq::sim::{EventType, Limits, Scenario, Simulation};
use wasq::wasm::guests::{GuestProfile, build_repository_plugins};
use wasq::wasm::{HostOptions, Registry, WasmEngine, WasmPlacement};

/// One stream per ClusterQueue: class, constraint, count, pods, milli-cpu per pod, priority,
/// interval and runtime (ms), slice size.
struct Stream {
    class: &'static str,
    required: bool,
    count: u32,
    pods: i32,
    milli_cpu: i64,
    priority: i32,
    interval: i64,
    runtime: i64,
    slice: Option<i32>,
}

#[rustfmt::skip]
const STREAMS: [Stream; 9] = [
    Stream { class: "small-required-rack", required: true, count: 120, pods: 2, milli_cpu: 500, priority: 50, interval: 100, runtime: 200, slice: None },
    Stream { class: "small-preferred-rack", required: false, count: 120, pods: 2, milli_cpu: 500, priority: 50, interval: 100, runtime: 200, slice: None },
    Stream { class: "small-balanced-rack", required: false, count: 110, pods: 2, milli_cpu: 500, priority: 50, interval: 100, runtime: 200, slice: Some(1) },
    Stream { class: "medium-required-rack", required: true, count: 34, pods: 4, milli_cpu: 1250, priority: 100, interval: 500, runtime: 500, slice: None },
    Stream { class: "medium-preferred-rack", required: false, count: 33, pods: 4, milli_cpu: 1250, priority: 100, interval: 500, runtime: 500, slice: None },
    Stream { class: "medium-balanced-rack", required: false, count: 33, pods: 4, milli_cpu: 1250, priority: 100, interval: 500, runtime: 500, slice: Some(2) },
    Stream { class: "large-required-rack", required: true, count: 17, pods: 8, milli_cpu: 2500, priority: 200, interval: 1200, runtime: 1000, slice: None },
    Stream { class: "large-preferred-rack", required: false, count: 17, pods: 8, milli_cpu: 2500, priority: 200, interval: 1200, runtime: 1000, slice: None },
    Stream { class: "large-balanced-rack", required: false, count: 16, pods: 8, milli_cpu: 2500, priority: 200, interval: 1200, runtime: 1000, slice: Some(4) },
];

const TOPOLOGY: &str = "default-topology";
const NODE_GROUP: &str = "tas-node-group";

/// The TAS shape with `cqs` ClusterQueues (30 = Kueue's).
fn shape(cqs: usize) -> Manifests {
    let mut generator = Generator::scaled(Shape::Baseline, 1, None).expect("baseline");
    generator.config.cohorts = cqs.div_ceil(6);
    generator.config.queues_per_cohort = cqs.min(6);
    let mut m = generate_objects(&generator);
    m.flavors = vec![ResourceFlavor {
        metadata: ObjectMeta {
            name: Some(FLAVOR.into()),
            ..ObjectMeta::default()
        },
        spec: ResourceFlavorSpec {
            node_labels: BTreeMap::from([(NODE_GROUP.into(), "tas".into())]),
            topology_name: Some(TOPOLOGY.into()),
            ..ResourceFlavorSpec::default()
        },
    }];
    let inventory = wasq::sim::nodes::generate(&NodeInventorySpec {
        topology: TOPOLOGY.into(),
        blocks: 1,
        racks: 10,
        nodes_per_rack: 64,
        labels: BTreeMap::from([(NODE_GROUP.into(), "tas".into())]),
        allocatable: BTreeMap::from([
            ("cpu".into(), "96".into()),
            ("memory".into(), "256Gi".into()),
            ("pods".into(), "110".into()),
        ]),
    });
    m.topologies = inventory.topologies;
    m.nodes = inventory.nodes;
    for cq in &generator_cq_names(&m) {
        for (s, st) in STREAMS.iter().enumerate() {
            for i in 0..st.count {
                let mut w = WorkloadRecord {
                    namespace: cq.clone(),
                    name: format!("{}-{s}-{i}-0", st.class),
                    queue: cq.clone(),
                    priority: Some(st.priority),
                    arrival: (i64::from(i) + 1) * st.interval,
                    duration: Some(st.runtime),
                    class: Some(st.class.into()),
                    pod_sets: vec![PodSetRecord {
                        name: wasq::api::default_pod_set_name(),
                        count: st.pods,
                        requests: BTreeMap::from([(
                            "cpu".to_string(),
                            format!("{}m", st.milli_cpu),
                        )]),
                    }],
                }
                .into_workload();
                let level = Some(RACK_LABEL.to_string());
                w.spec.pod_sets[0].topology_request = Some(PodSetTopologyRequest {
                    required: level.clone().filter(|_| st.required),
                    preferred: level.filter(|_| !st.required),
                    pod_set_slice_required_topology: st.slice.map(|_| HOSTNAME_LABEL.into()),
                    pod_set_slice_size: st.slice,
                    ..PodSetTopologyRequest::default()
                });
                m.workloads.push(w);
            }
        }
    }
    m
}

fn generator_cq_names(m: &Manifests) -> Vec<String> {
    m.cluster_queues
        .iter()
        .filter_map(|cq| cq.metadata.name.clone())
        .collect()
}

/// A placement policy that times every call of the one it wraps.
struct Timed {
    inner: Arc<dyn PlacementPolicy>,
    calls: AtomicU64,
    nanos: AtomicU64,
}

impl PlacementPolicy for Timed {
    fn id(&self) -> PolicyRef {
        self.inner.id()
    }

    fn place(&self, req: &PlacementChoiceRequest<'_>) -> Result<PlacementAnswer, PolicyError> {
        let start = Instant::now();
        let answer = self.inner.place(req);
        self.nanos
            .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.calls.fetch_add(1, Ordering::Relaxed);
        answer
    }

    fn refused(&self, error: &PolicyError) {
        self.inner.refused(error);
    }
}

struct Figures {
    wall: f64,
    calls: u64,
    placement_seconds: f64,
    admissions: u64,
    /// Fallbacks per reason (a timeout on a loaded machine; nothing else is expected).
    fallbacks: Vec<(String, u64)>,
    decisions: Vec<String>,
}

fn run(manifests: &Manifests, policy: Arc<dyn PlacementPolicy>) -> Figures {
    let scenario = Scenario::from_manifests(manifests.clone()).expect("the shape loads");
    let mut sim = Simulation::new(scenario);
    let timed = Arc::new(Timed {
        inner: policy,
        calls: AtomicU64::new(0),
        nanos: AtomicU64::new(0),
    });
    sim.scheduler.set_default_policies(PolicySet {
        placement: timed.clone(),
        ..PolicySet::builtin()
    });
    let start = Instant::now();
    sim.run(&Limits::default(), None);
    let wall = start.elapsed().as_secs_f64();
    let report = sim.into_report();
    Figures {
        wall,
        calls: timed.calls.load(Ordering::Relaxed),
        placement_seconds: timed.nanos.load(Ordering::Relaxed) as f64 / 1e9,
        admissions: report
            .events
            .iter()
            .filter(|e| e.kind == EventType::Admitted)
            .count() as u64,
        fallbacks: report
            .summary
            .fallbacks
            .iter()
            .map(|f| (f.reason.clone(), f.count))
            .collect(),
        decisions: report.decision_lines_without_policy(),
    }
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument (a filter) not naming us skips.
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with("--") && !"placement".contains(a.as_str()))
    {
        return;
    }
    let cqs: usize = std::env::var("WASQ_TAS_BENCH_CQS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let built = build_repository_plugins(root, GuestProfile::Release).expect("building plugins/");
    let engine = WasmEngine::new(false).expect("engine");
    let registry =
        Registry::load_dir(engine, &built.plugins, &HostOptions::default()).expect("plugins load");
    let plugin = registry
        .get("kueue-default-placement")
        .expect("kueue-default-placement built")
        .clone();
    let manifests = shape(cqs);
    println!(
        "TAS shape: {} ClusterQueues, {} workloads, {} nodes (10 racks × 64)",
        manifests.cluster_queues.len(),
        manifests.workloads.len(),
        manifests.nodes.len()
    );
    let native = run(&manifests, Arc::new(builtin::KueuePlacement));
    let wasm = run(&manifests, Arc::new(WasmPlacement(plugin)));
    assert_eq!(
        native.decisions, wasm.decisions,
        "the plugin decides like the built-in"
    );
    // Only a deadline may make the built-in decide (a call descheduled on a loaded machine):
    // any other fallback is a defect.
    assert!(
        wasm.fallbacks.iter().all(|(reason, _)| reason == "timeout"),
        "fallbacks: {:?}",
        wasm.fallbacks
    );
    let row = |label: &str, f: &Figures| {
        println!(
            "{label:<8} wall {:>7.2} s | {:>6} admissions | {:>7} placement calls, {:>7.3} s: {:>7.1} µs/call, {:>7.1} µs/admission",
            f.wall,
            f.admissions,
            f.calls,
            f.placement_seconds,
            f.placement_seconds * 1e6 / f.calls.max(1) as f64,
            f.placement_seconds * 1e6 / f.admissions.max(1) as f64,
        );
    };
    row("native", &native);
    row("wasm", &wasm);
    let timeouts: u64 = wasm.fallbacks.iter().map(|(_, n)| n).sum();
    println!(
        "WASM / native: placement {:.2}×, whole run {:.2}×; identical decisions; {timeouts} fallback(s) by timeout",
        wasm.placement_seconds / native.placement_seconds.max(1e-9),
        wasm.wall / native.wall.max(1e-9)
    );
}
