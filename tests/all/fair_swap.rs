//! Swapping the fair-share algorithm while the scheduler runs: a real-time simulation bound to
//! `ordering=team-order`, where `team-order.wasm` starts as Kueue's ordering (fair sharing on)
//! and is replaced on disk by `max-min-gpu-hours` between two waves of arrivals.
//!
//! Checked: (a) every decision before the swap is the Kueue-only run's, and nothing admitted
//! then is evicted or changed by the swap; (b) the decisions after it are those of a run that
//! switches to max-min-gpu-hours at that point, and differ from the Kueue-only run's; (c) the
//! cycles after the swap are ordered by the new file's digest, and the old version is never
//! called again.
//!
//! Every `Admitted` event names the ordering policy that placed it (`orderedBy`); the test also
//! reads the host's `plugin_call` tracing spans (`plugin`, `digest`, `call`) inside each `cycle`
//! span (`n`, the event's `cycle`), captured on the scheduler thread, to check that the old
//! version is never called once the new one has been.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

use wasq::sim::{EventType, Limits, Report, Scenario, Simulation};
use wasq::wasm::{LiveBindings, LivePlugins, PluginSource, Registry};

use super::plugins::{bindings, built, engine, plugins, test_options};

/// Virtual seconds per wall second.
const SPEED: f64 = 100.0;
/// Wave 1 is decided by 50 s; the next arrival is at 300 s. The swap lands in between.
const WAVE_1_DONE: f64 = 50.0;
const WAVE_2: f64 = 300.0;
/// Where the deterministic reference run switches to max-min-gpu-hours.
const REFERENCE_SWAP_MS: i64 = 200_000;

/// Fair sharing on; cohort "ml" with team-a and team-b (2 GPUs, 8 cpu each; no preemption).
///   0s    wave 1: a-1 (2 GPUs, 400s), a-2 (2 GPUs, 350s), b-1 (2 GPUs, 50s). a-1 and b-1
///         start; a-2 (borrowing) starts when b-1 ends at 50s. team-a then holds all 4 GPUs.
///   (the swap: Kueue's ordering → max-min-gpu-hours)
///   300s  probe-1, 350s probe-2 (team-b, 1 cpu, 10s): cycles with a head, in which the new
///         plugin sees team-a's 4 GPUs (its history starts at 300s: 4 GPUs × 50s).
///   400s  a-1 and a-2 end.
///   450s  wave 2: a-3 (priority 1) and b-3 (priority 0), 4 GPUs and 50s each: one fits.
///         Kueue: equal shares (both borrow 2), a-3 by priority. max-min-gpu-hours: team-b has
///         had no GPU-hours since the swap, team-a 4 GPUs × 50s (0.06): b-3.
const SCENARIO_HEAD: &str = "\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
fairSharing: {}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: ml}
spec: {}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: default, name: queue-a}
spec: {clusterQueue: team-a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: default, name: queue-b}
spec: {clusterQueue: team-b}
";

fn scenario_yaml() -> String {
    let mut yaml = SCENARIO_HEAD.to_string();
    for cq in ["team-a", "team-b"] {
        yaml.push_str(&format!(
            "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: {cq}}}\n\
             spec:\n  cohortName: ml\n  namespaceSelector: {{}}\n  resourceGroups:\n  \
             - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n    - name: a100\n      \
             resources:\n      - {{name: cpu, nominalQuota: 8}}\n      \
             - {{name: nvidia.com/gpu, nominalQuota: 2}}\n"
        ));
    }
    // (name, queue, GPUs, arrival s, duration s, priority)
    let workloads = [
        ("a-1", "queue-a", 2, 0, 400, 0),
        ("a-2", "queue-a", 2, 0, 350, 0),
        ("b-1", "queue-b", 2, 0, 50, 0),
        ("probe-1", "queue-b", 0, 300, 10, 0),
        ("probe-2", "queue-b", 0, 350, 10, 0),
        ("a-3", "queue-a", 4, 450, 50, 1),
        ("b-3", "queue-b", 4, 450, 50, 0),
    ];
    for (name, queue, gpus, arrival, duration, priority) in workloads {
        let requests = if gpus > 0 {
            format!("{{cpu: '1', nvidia.com/gpu: '{gpus}'}}")
        } else {
            "{cpu: '1'}".to_string()
        };
        yaml.push_str(&format!(
            "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata:\n  \
             namespace: default\n  name: {name}\n  annotations: {{sim.wasq.dev/arrival: {arrival}s, \
             sim.wasq.dev/duration: {duration}s}}\nspec:\n  queueName: {queue}\n  \
             priority: {priority}\n  podSets:\n  - name: main\n    count: 1\n    template:\n      \
             spec:\n        restartPolicy: Never\n        containers:\n        - name: c\n          \
             image: pause\n          resources:\n            requests: {requests}\n"
        ));
    }
    yaml
}

/// The scenario, written to a temporary directory (kept alive by the returned handle).
fn scenario() -> (tempfile::TempDir, Scenario) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("fair-swap.yaml");
    std::fs::write(&path, scenario_yaml()).expect("write scenario");
    let scenario = Scenario::load(&[path]).expect("scenario loads");
    (dir, scenario)
}

fn bytes(name: &str) -> Vec<u8> {
    std::fs::read(built().plugins.join(format!("{name}.wasm"))).expect("built plugin")
}

// ---------------------------------------------------------------------------------------------
// Which digest ordered each cycle: the host's `plugin_call` spans inside `cycle` spans.

/// One plugin call seen on the scheduler thread, in call order.
#[derive(Debug, Clone)]
struct Call {
    /// The enclosing scheduling cycle (`None` for calls between cycles, such as sort keys).
    cycle: Option<u64>,
    plugin: String,
    digest: String,
    call: String,
}

#[derive(Default)]
struct Fields {
    n: Option<u64>,
    plugin: Option<String>,
    digest: Option<String>,
    call: Option<String>,
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "n" {
            self.n = Some(value);
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.record(field, value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // `%value` fields arrive here; their Debug is the value's Display.
        self.record(field, format!("{value:?}"));
    }
}

impl Fields {
    fn record(&mut self, field: &Field, value: String) {
        match field.name() {
            "plugin" => self.plugin = Some(value),
            "digest" => self.digest = Some(value),
            "call" => self.call = Some(value),
            _ => {}
        }
    }
}

/// The cycle number stored on a `cycle` span.
struct CycleNumber(u64);

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Call>>>);

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        match attrs.metadata().name() {
            "cycle" => {
                if let Some(n) = fields.n {
                    span.extensions_mut().insert(CycleNumber(n));
                }
            }
            "plugin_call" => {
                let cycle = span
                    .scope()
                    .skip(1)
                    .find_map(|s| s.extensions().get::<CycleNumber>().map(|c| c.0));
                self.0.lock().expect("capture").push(Call {
                    cycle,
                    plugin: fields.plugin.unwrap_or_default(),
                    digest: fields.digest.unwrap_or_default(),
                    call: fields.call.unwrap_or_default(),
                });
            }
            _ => {}
        }
    }
}

impl Capture {
    fn calls(&self) -> Vec<Call> {
        self.0.lock().expect("capture").clone()
    }

    /// Runs `f` with this capture as the thread's subscriber.
    fn during<R>(&self, f: impl FnOnce() -> R) -> R {
        // With a single dispatcher registered in the process, tracing-core computes a
        // callsite's interest from the default dispatcher of whichever thread registers it
        // (`Rebuilder::JustOne`): a test on another thread, without a subscriber, meeting the
        // `cycle` callsite first would cache "never" for it, and this capture would see no
        // cycle. A second dispatcher kept for the whole process makes every rebuild ask all of
        // them.
        static SECOND: std::sync::LazyLock<tracing::Dispatch> = std::sync::LazyLock::new(|| {
            tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default())
        });
        std::sync::LazyLock::force(&SECOND);
        let subscriber = tracing_subscriber::registry().with(self.clone());
        tracing::subscriber::with_default(subscriber, || {
            tracing::callsite::rebuild_interest_cache();
            f()
        })
    }
}

// ---------------------------------------------------------------------------------------------

/// An event as compared between runs (cycle numbers differ where a run was split).
fn line(e: &wasq::sim::Event) -> String {
    format!(
        "{:>7.3}s {:?} {} {} {}",
        e.time,
        e.kind,
        e.workload,
        e.cluster_queue.as_deref().unwrap_or("-"),
        e.reason.as_deref().unwrap_or("-")
    )
}

fn lines(report: &Report, keep: impl Fn(f64) -> bool) -> Vec<String> {
    report
        .events
        .iter()
        .filter(|e| keep(e.time))
        .map(|e| line(&e))
        .collect()
}

fn bind(sim: &mut Simulation, registry: &Registry, plugin: &str) {
    let spec = format!("ordering={plugin}");
    let (default, per_cq) = registry
        .bind(&sim.scheduler.cluster, &bindings(&[&spec]))
        .expect("bindings resolve");
    sim.scheduler.install_policies(default, per_cq);
}

/// The scenario with Kueue's ordering plugin throughout; and the number of `order-heads` calls
/// it made up to the end of wave 1.
fn kueue_only() -> (Report, usize) {
    let (_dir, scenario) = scenario();
    let mut sim = Simulation::new(scenario);
    let registry = plugins();
    bind(&mut sim, &registry, "kueue-default-ordering");
    let capture = Capture::default();
    let report = capture.during(|| {
        sim.run(&Limits::default(), None);
        sim.report()
    });
    let last_wave_1_cycle = report
        .events
        .iter()
        .filter(|e| e.time <= WAVE_1_DONE)
        .map(|e| e.cycle)
        .max()
        .expect("wave 1 events");
    let wave_1_calls = capture
        .calls()
        .iter()
        .filter(|c| c.call == "order-heads" && c.cycle.is_some_and(|n| n <= last_wave_1_cycle))
        .count();
    assert!(wave_1_calls > 0);
    (report, wave_1_calls)
}

/// The scenario with Kueue's ordering until the reference swap point, then max-min-gpu-hours
/// (a fresh instance, as after a file swap).
fn switched_at_reference_point() -> Report {
    let (_dir, scenario) = scenario();
    let mut sim = Simulation::new(scenario);
    let registry = plugins();
    bind(&mut sim, &registry, "kueue-default-ordering");
    sim.run(
        &Limits {
            until: Some(REFERENCE_SWAP_MS),
            ..Limits::default()
        },
        None,
    );
    bind(&mut sim, &registry, "max-min-gpu-hours");
    sim.run(&Limits::default(), None);
    sim.report()
}

#[test]
fn fair_share_algorithm_swapped_between_waves() {
    // Reference runs first: they also compile both components into the shared engine, so the
    // swap below is not slowed by the compiler.
    let (kueue, wave_1_calls) = kueue_only();
    let switched = switched_at_reference_point();

    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("team-order.wasm");
    let (v1, v2) = (bytes("kueue-default-ordering"), bytes("max-min-gpu-hours"));
    let (d1, d2) = (wasq::wasm::digest_of(&v1), wasq::wasm::digest_of(&v2));
    std::fs::write(&file, &v1).expect("write kueue-default-ordering as team-order");
    let live = LivePlugins::open(engine(), dir.path(), test_options()).expect("open");
    let _watch = live.watch().expect("watch");

    let (_scenario_dir, scenario) = scenario();
    let mut sim = Simulation::new(scenario);
    sim.use_policies(LiveBindings::new(
        PluginSource::Live(live.clone()),
        bindings(&["ordering=team-order"]),
    ))
    .expect("binds");
    let capture = Capture::default();
    let thread_capture = capture.clone();
    // Before the pacer starts: the virtual time reached by any instant is at most
    // `started.elapsed() × SPEED`.
    let started = Instant::now();
    sim.pace(SPEED);
    let thread = std::thread::spawn(move || {
        thread_capture.during(|| {
            sim.run(&Limits::default(), None);
            sim.report()
        })
    });

    // Wave 1 decided (as many head orders as the Kueue-only run made by then), then the swap:
    // write-temp-then-rename, as a deployment would.
    let deadline = Instant::now() + Duration::from_secs(60);
    while capture
        .calls()
        .iter()
        .filter(|c| c.call == "order-heads")
        .count()
        < wave_1_calls
    {
        assert!(Instant::now() < deadline, "wave 1 never got decided");
        std::thread::sleep(Duration::from_millis(5));
    }
    let tmp = dir.path().join("team-order.wasm.tmp");
    std::fs::write(&tmp, &v2).expect("write max-min-gpu-hours");
    std::fs::rename(&tmp, &file).expect("swap");
    while live
        .snapshot()
        .get("team-order")
        .map(|p| p.info().digest.clone())
        != Some(d2.clone())
    {
        assert!(Instant::now() < deadline, "the swap never loaded");
        std::thread::sleep(Duration::from_millis(5));
    }
    let swapped_at = started.elapsed().as_secs_f64() * SPEED;
    assert!(
        swapped_at < WAVE_2,
        "the machine is too slow for this test: the swap loaded at virtual {swapped_at:.0}s, \
         after wave 2 began ({WAVE_2}s)"
    );
    let report = thread.join().expect("scheduler thread");
    let calls: Vec<Call> = capture
        .calls()
        .into_iter()
        .filter(|c| c.plugin == "team-order")
        .collect();

    // (a) Before the swap: exactly the Kueue-only run's decisions.
    let before = |t: f64| t < WAVE_2;
    assert_eq!(
        lines(&report, before),
        lines(&kueue, before),
        "decisions before the swap"
    );
    let admitted_before: Vec<&str> = report
        .events
        .refs()
        .filter(|e| e.kind() == EventType::Admitted && before(e.time()))
        .map(|e| e.workload())
        .collect();
    assert_eq!(
        admitted_before,
        ["default/a-1", "default/b-1", "default/a-2"],
        "wave 1"
    );
    // ... and it stays as it was: no eviction, each workload admitted once and finished when
    // its run was due, as in the Kueue-only run, with the same admission.
    assert!(
        !report.events.iter().any(|e| e.kind == EventType::Preempted),
        "nothing may be preempted here: {:#?}",
        report.events
    );
    for w in &admitted_before {
        let of = |r: &Report| -> Vec<String> {
            r.events
                .iter()
                .filter(|e| e.workload == *w)
                .map(|e| line(&e))
                .collect()
        };
        assert_eq!(of(&report), of(&kueue), "{w}");
        let admission = |r: &Report| {
            r.workloads
                .iter()
                .find(|x| format!("{}/{}", x.namespace, x.name) == *w)
                .map(|x| (x.state, x.cluster_queue.clone(), x.admission.clone()))
        };
        assert_eq!(admission(&report), admission(&kueue), "{w}");
    }

    // (b) After the swap: the run that switched to max-min-gpu-hours at that point, which is
    // not Kueue's.
    let after = |t: f64| t >= WAVE_2;
    assert_eq!(
        lines(&report, after),
        lines(&switched, after),
        "decisions after the swap"
    );
    let admitted_at_wave_2 = |r: &Report| -> Vec<String> {
        r.events
            .iter()
            .filter(|e| e.kind == EventType::Admitted && e.time >= 450.0)
            .map(|e| format!("{:.0}s {}", e.time, e.workload))
            .collect()
    };
    assert_eq!(
        admitted_at_wave_2(&kueue),
        ["450s default/a-3", "500s default/b-3"]
    );
    assert_eq!(
        admitted_at_wave_2(&report),
        ["450s default/b-3", "500s default/a-3"]
    );

    // (c) Every cycle that admitted something was ordered by one version: Kueue's before the
    // swap, the new file's after; once the new version was called, the old never was again.
    for e in report
        .events
        .iter()
        .filter(|e| e.kind == EventType::Admitted)
    {
        let digests: Vec<&str> = calls
            .iter()
            .filter(|c| c.call == "order-heads" && c.cycle == Some(e.cycle))
            .map(|c| c.digest.as_str())
            .collect();
        let expected = if before(e.time) { &d1 } else { &d2 };
        assert_eq!(
            e.ordered_by.as_ref().map(|p| &*p.digest),
            Some(expected.as_str()),
            "{} admitted at {}s: the event names the ordering that placed it",
            e.workload,
            e.time
        );
        assert!(
            !digests.is_empty() && digests.iter().all(|d| d == expected),
            "{} admitted at {}s in cycle {}: ordered by {digests:?}, expected {expected}",
            e.workload,
            e.time,
            e.cycle
        );
    }
    let first_new = calls
        .iter()
        .position(|c| c.digest == d2)
        .expect("the new version was called");
    assert!(calls[..first_new].iter().all(|c| c.digest == d1));
    assert!(
        calls[first_new..].iter().all(|c| c.digest == d2),
        "the old version was called after the new one: {calls:#?}"
    );
    let summary = report
        .summary
        .plugins
        .iter()
        .find(|p| p.plugin == "team-order")
        .expect("team-order in the report");
    assert_eq!(summary.digest, d2);
    assert!(
        summary.calls > 0 && summary.failures.is_empty(),
        "{summary:?}"
    );
    assert!(
        report.summary.fallbacks.is_empty(),
        "{:?}",
        report.summary.fallbacks
    );
    assert_eq!(live.counts().loaded, 1, "{:?}", live.counts());
}
