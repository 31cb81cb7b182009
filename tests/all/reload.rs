//! Hot reload with real files and a scheduler running on its own thread: a plugin replaced
//! in place, by rename and by a ConfigMap-style symlink swap, corrupted, truncated and deleted
//! while the simulation runs in real time. No cycle may mix versions, no decision may be lost or
//! made twice, the last good version keeps deciding after a bad write, and the built-in takes
//! over after deletion.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasq::sim::{EventType, Limits, Report, Scenario, Simulation};
use wasq::wasm::{HostOptions, LiveBindings, LivePlugins, PluginSource};

use super::plugins::{bindings, built, engine, test_options};

/// One ClusterQueue of 4 cpu where each 2-cpu workload arrives every 2 s, runs 9 s, and often
/// outranks a running one: a preemption decision every few virtual seconds.
/// Returned as several files: the YAML reader takes at most 1,024 documents per file.
fn busy_queue(workloads: usize) -> Vec<String> {
    let mut files = vec![String::from(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: default}\n---\n\
         apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: team}\nspec:\n  \
         namespaceSelector: {}\n  preemption: {withinClusterQueue: LowerPriority}\n  resourceGroups:\n  \
         - coveredResources: [cpu]\n    flavors:\n    - name: default\n      resources:\n      \
         - {name: cpu, nominalQuota: 4}\n---\n\
         apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {namespace: default, name: team}\n\
         spec: {clusterQueue: team}\n",
    )];
    for i in 0..workloads {
        if i % 1000 == 0 {
            files.push(String::new());
        }
        let yaml = files.last_mut().expect("a file");
        yaml.push_str(&format!(
            "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata:\n  namespace: default\n  \
             name: w{i:04}\n  annotations: {{sim.wasq.dev/arrival: {}s, sim.wasq.dev/duration: 9s}}\n\
             spec:\n  queueName: team\n  priority: {}\n  podSets:\n  - name: main\n    count: 1\n    \
             template:\n      spec:\n        restartPolicy: Never\n        containers:\n        \
             - name: c\n          image: busybox\n          resources: {{requests: {{cpu: 2}}}}\n",
            i * 2,
            (i * 7) % 5
        ));
    }
    files
}

/// The scheduler thread, and the flag that stops it.
struct Running {
    thread: std::thread::JoinHandle<Report>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Running {
    /// Lets the current version decide a little longer, then stops and returns the report.
    fn finish(self) -> Report {
        std::thread::sleep(Duration::from_millis(300));
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().expect("scheduler thread")
    }
}

/// Runs the busy queue in real time on a thread, bound to `victim` in the live directory.
fn start(live: &Arc<LivePlugins>, workloads: usize, speed: f64) -> Running {
    let dir = tempfile::tempdir().expect("tempdir");
    let paths: Vec<_> = busy_queue(workloads)
        .into_iter()
        .enumerate()
        .map(|(i, text)| {
            let path = dir.path().join(format!("busy-{i}.yaml"));
            std::fs::write(&path, text).expect("write scenario");
            path
        })
        .collect();
    let scenario = Scenario::load(&paths).expect("scenario loads");
    let mut sim = Simulation::new(scenario);
    sim.use_policies(LiveBindings::new(
        PluginSource::Live(live.clone()),
        bindings(&["preemption=victim"]),
    ))
    .expect("binds");
    sim.pace(speed);
    let stop = sim.stop_flag();
    let thread = std::thread::spawn(move || {
        let _keep = dir;
        sim.run(&Limits::default(), None);
        sim.report()
    });
    Running { thread, stop }
}

fn bytes(name: &str) -> Vec<u8> {
    std::fs::read(built().plugins.join(format!("{name}.wasm"))).expect("built plugin")
}

/// Waits until the running `victim` has `digest` (or none) and has decided `calls` more times.
fn wait_for(live: &LivePlugins, digest: Option<&str>, calls: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut base = None;
    loop {
        let snapshot = live.snapshot();
        let current = snapshot.get("victim");
        if current.map(|p| p.info().digest.as_str()) == digest {
            let made = current.map_or(calls, |p| p.status().calls);
            let start = *base.get_or_insert(made);
            if digest.is_none() || made >= start + calls {
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {digest:?} (running {:?})",
            current.map(|p| p.info().digest.clone())
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The digests of the preemption decisions, in order, with repeats collapsed; and the check
/// that every cycle's decisions come from one version.
fn versions(report: &Report) -> Vec<String> {
    let mut per_cycle: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
    for e in report
        .events
        .refs()
        .filter(|e| e.kind() == EventType::Preempted)
    {
        per_cycle
            .entry(e.cycle())
            .or_default()
            .push(&e.policy().digest);
    }
    for (cycle, digests) in &per_cycle {
        assert!(
            digests.windows(2).all(|w| w[0] == w[1]),
            "cycle {cycle} mixes versions: {digests:?}"
        );
    }
    let mut order: Vec<String> = Vec::new();
    for digests in per_cycle.values() {
        if order.last().map(String::as_str) != Some(digests[0]) {
            order.push(digests[0].to_string());
        }
    }
    order
}

/// No admission without a preemption or finish between two of them; no preemption of a
/// workload that was not admitted; no workload finished twice; and the run got far enough.
fn nothing_lost_or_doubled(report: &Report, at_least: usize) {
    let mut admitted: BTreeMap<String, bool> = BTreeMap::new();
    for e in &report.events {
        let held = admitted.entry(e.workload.clone()).or_default();
        match e.kind {
            EventType::Admitted => {
                assert!(!*held, "{} admitted twice: {e:?}", e.workload);
                *held = true;
            }
            EventType::Preempted | EventType::Finished => {
                assert!(
                    *held,
                    "{} preempted or finished without admission: {e:?}",
                    e.workload
                );
                *held = false;
            }
            _ => {}
        }
    }
    let mut finished: BTreeMap<String, u32> = BTreeMap::new();
    for e in report
        .events
        .iter()
        .filter(|e| e.kind == EventType::Finished)
    {
        *finished.entry(e.workload).or_default() += 1;
    }
    assert!(
        finished.values().all(|&n| n == 1),
        "a workload finished twice"
    );
    assert!(
        finished.len() >= at_least,
        "only {} finished",
        finished.len()
    );
}

#[test]
fn plugin_replaced_corrupted_truncated_renamed_and_deleted_while_scheduling() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("victim.wasm");
    let (v1, v2) = (bytes("kueue-default-preemption"), bytes("least-lost-work"));
    let (d1, d2) = (wasq::wasm::digest_of(&v1), wasq::wasm::digest_of(&v2));
    std::fs::write(&file, &v1).expect("write v1");
    let live = LivePlugins::open(engine(), dir.path(), test_options()).expect("open");
    let _watch = live.watch().expect("watch");
    let sim = start(&live, 3000, 400.0);

    wait_for(&live, Some(&d1), 3);
    // 1. In place.
    std::fs::write(&file, &v2).expect("overwrite");
    wait_for(&live, Some(&d2), 3);
    // 2. Corrupt (write-temp-then-rename) and 3. truncated in place: v2 keeps deciding.
    let rejected = live.counts().rejected;
    let tmp = dir.path().join("victim.wasm.partial");
    std::fs::write(&tmp, b"\0asm\x0d\0\x01\0garbage").expect("write garbage");
    std::fs::rename(&tmp, &file).expect("rename garbage");
    while live.counts().rejected == rejected {
        std::thread::sleep(Duration::from_millis(5));
    }
    wait_for(&live, Some(&d2), 3);
    std::fs::write(&file, &v1[..v1.len() / 2]).expect("truncate");
    while live.counts().rejected < rejected + 2 {
        std::thread::sleep(Duration::from_millis(5));
    }
    wait_for(&live, Some(&d2), 3);
    // 4. Renamed over.
    std::fs::write(&tmp, &v1).expect("write temp");
    std::fs::rename(&tmp, &file).expect("rename v1");
    wait_for(&live, Some(&d1), 3);
    // 5. Deleted: the built-in takes over.
    std::fs::remove_file(&file).expect("delete");
    wait_for(&live, None, 0);

    let report = sim.finish();
    assert_eq!(
        versions(&report),
        vec![d1.clone(), d2.clone(), d1, "builtin".to_string()],
        "versions must follow the file: v1, v2 (kept through the bad writes), v1, built-in"
    );
    nothing_lost_or_doubled(&report, 20);
    let counts = live.counts();
    assert_eq!((counts.loaded, counts.removed), (2, 1), "{counts:?}");
    assert!(counts.rejected >= 2, "{counts:?}");
    assert!(
        report.summary.fallbacks.is_empty(),
        "{:?}",
        report.summary.fallbacks
    );
}

#[cfg(unix)]
#[test]
fn configmap_symlink_swap_is_one_reload() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let (v1, v2) = (bytes("kueue-default-preemption"), bytes("least-lost-work"));
    let (d1, d2) = (wasq::wasm::digest_of(&v1), wasq::wasm::digest_of(&v2));
    // The layout kubelet gives a ConfigMap volume.
    let version = |n: u32, content: &[u8]| {
        let d = root.join(format!("..2026_11_22_0{n}"));
        std::fs::create_dir(&d).expect("version dir");
        std::fs::write(d.join("victim.wasm"), content).expect("write");
        d
    };
    let first = version(1, &v1);
    symlink(first.file_name().expect("name"), root.join("..data")).expect("..data");
    symlink(Path::new("..data/victim.wasm"), root.join("victim.wasm")).expect("file link");
    let live = LivePlugins::open(engine(), root, test_options()).expect("open");
    let _watch = live.watch().expect("watch");
    let sim = start(&live, 3000, 400.0);
    wait_for(&live, Some(&d1), 3);
    // The update: a new version directory, then an atomic rename of a new `..data` link.
    let second = version(2, &v2);
    symlink(second.file_name().expect("name"), root.join("..data_tmp")).expect("tmp link");
    std::fs::rename(root.join("..data_tmp"), root.join("..data")).expect("swap");
    std::fs::remove_dir_all(&first).expect("old version removed");
    wait_for(&live, Some(&d2), 3);
    let report = sim.finish();
    assert_eq!(versions(&report), vec![d1, d2]);
    nothing_lost_or_doubled(&report, 5);
    assert_eq!(live.counts().loaded, 1, "one swap, one reload");
    assert_eq!(live.counts().rejected, 0);
}

#[test]
fn plugin_metrics_follow_reloads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("victim.wasm");
    let (v1, v2) = (bytes("kueue-default-preemption"), bytes("least-lost-work"));
    std::fs::write(&file, &v1).expect("write v1");
    let live = LivePlugins::open(engine(), dir.path(), test_options()).expect("open");
    let mut metrics = wasq::k8s::serve::metrics::Metrics::new("standalone");
    metrics.register_plugins(PluginSource::Live(live.clone()), Default::default(), None);
    let text = metrics.encode();
    let d1 = wasq::wasm::digest_of(&v1);
    assert!(
        text.contains(&format!(
            "wasq_plugin_info{{plugin=\"victim\",kind=\"preemption\",digest=\"{d1}\",replica_role=\"standalone\"}} 1"
        )),
        "{text}"
    );
    // A bad write is refused and shown; a good one is loaded and counted.
    std::fs::write(&file, b"not wasm").expect("corrupt");
    live.rescan();
    let text = metrics.encode();
    assert!(
        text.contains("wasq_plugin_file_rejected{plugin=\"victim\",replica_role=\"standalone\"} 1"),
        "{text}"
    );
    assert!(
        text.contains(&d1),
        "the previous version is still loaded: {text}"
    );
    std::fs::write(&file, &v2).expect("v2");
    live.rescan();
    let text = metrics.encode();
    assert!(
        text.contains("wasq_plugin_reloads_total{result=\"loaded\",replica_role=\"standalone\"} 1"),
        "{text}"
    );
    assert!(
        text.contains(
            "wasq_plugin_reloads_total{result=\"rejected\",replica_role=\"standalone\"} 1"
        ),
        "{text}"
    );
    assert!(text.contains(&wasq::wasm::digest_of(&v2)), "{text}");
    assert!(!text.contains("wasq_plugin_file_rejected{"), "{text}");
}

#[test]
fn a_quarantined_plugin_gets_a_fresh_start_when_its_file_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("keys.wasm");
    std::fs::copy(built().fixtures.join("fixture-trap.wasm"), &file).expect("copy");
    let options = HostOptions {
        limits: wasq::wasm::Limits {
            quarantine_after: 2,
            deadline_ms: 2_000,
            ..wasq::wasm::Limits::default()
        }
        .into(),
        ..test_options()
    };
    let live = LivePlugins::open(engine(), dir.path(), options).expect("open");
    let scenario_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/sched-entry-ordering.yaml");
    let run_once = || {
        let mut sim =
            Simulation::new(Scenario::load(std::slice::from_ref(&scenario_path)).expect("loads"));
        sim.use_policies(LiveBindings::new(
            PluginSource::Live(live.clone()),
            bindings(&["ordering=keys"]),
        ))
        .expect("binds");
        sim.run(&Limits::default(), None);
        sim.report()
    };
    run_once();
    assert!(
        live.snapshot()
            .get("keys")
            .expect("loaded")
            .status()
            .quarantined
    );
    // A new file: a new plugin, healthy, deciding.
    std::fs::copy(built().plugins.join("kueue-default-ordering.wasm"), &file).expect("replace");
    live.rescan();
    let report = run_once();
    let status = live.snapshot().get("keys").expect("reloaded").status();
    assert!(!status.quarantined && status.calls > 0, "{status:?}");
    assert!(
        report.summary.fallbacks.is_empty(),
        "{:?}",
        report.summary.fallbacks
    );
}
