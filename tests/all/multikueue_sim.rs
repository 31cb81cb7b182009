//! MultiKueue in the simulator: a manager and its workers on one clock. Each dispatcher
//! (Kueue's all-at-once and incremental), copies removed once one worker admits, a worker lost
//! and its Workloads dispatched again, a copy evicted on its worker, and, with random worker
//! losses, the invariant that a Workload runs in at most one worker at any instant.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use wasq::sim::multikueue::Federation;
use wasq::sim::multikueue::report::FederationReport;
use wasq::sim::{EventType, Limits, Scenario};

/// A manager whose ClusterQueue `ml` (with `gpus` GPUs) dispatches through check
/// `multikueue` to `workers` (name, extra MultiKueueCluster annotations), with `config` as
/// the Configuration's `multiKueue` section and `workloads` as its Workloads.
fn manager(gpus: u32, workers: &[(&str, &str)], config: &str, workloads: &str) -> String {
    let names: Vec<&str> = workers.iter().map(|w| w.0).collect();
    let mut out = format!(
        "apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
multiKueue: {{{config}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: gpu}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {{name: multikueue}}
spec:
  controllerName: kueue.x-k8s.io/multikueue
  parameters: {{apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: workers}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata: {{name: workers}}
spec: {{clusters: [{}]}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: ml}}
spec:
  namespaceSelector: {{}}
  admissionChecksStrategy: {{admissionChecks: [{{name: multikueue}}]}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{{name: gpu, resources: [{{name: nvidia.com/gpu, nominalQuota: {gpus}}}]}}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{namespace: ml, name: training}}
spec: {{clusterQueue: ml}}
",
        names.join(", ")
    );
    for (name, annotations) in workers {
        out.push_str(&format!(
            "---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata:
  name: {name}
  annotations: {{sim.wasq.dev/manifests: {name}.yaml{annotations}}}
spec:
  clusterSource: {{kubeConfig: {{locationType: Secret, location: {name}}}}}
"
        ));
    }
    out + workloads
}

/// A worker with `gpus` GPUs in ClusterQueue `gpus` (preempting lower priorities), fed by
/// `ml/training` and `research/local`, with its own `workloads`.
fn worker(gpus: u32, workloads: &str) -> String {
    format!(
        "apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: a100}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: gpus}}
spec:
  namespaceSelector: {{}}
  preemption: {{withinClusterQueue: LowerPriority}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{{name: a100, resources: [{{name: nvidia.com/gpu, nominalQuota: {gpus}}}]}}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{namespace: ml, name: training}}
spec: {{clusterQueue: gpus}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{namespace: research, name: local}}
spec: {{clusterQueue: gpus}}
{workloads}"
    )
}

/// A Workload of `gpus` one-GPU pods in `namespace/queue`.
fn workload(
    namespace: &str,
    queue: &str,
    name: &str,
    gpus: u32,
    arrival: &str,
    duration: &str,
    priority: i32,
) -> String {
    format!(
        "---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  namespace: {namespace}
  name: {name}
  annotations: {{sim.wasq.dev/arrival: {arrival}, sim.wasq.dev/duration: {duration}}}
spec:
  queueName: {queue}
  priority: {priority}
  podSets:
  - name: main
    count: {gpus}
    template:
      spec:
        restartPolicy: Never
        containers:
        - {{name: c, image: i, resources: {{requests: {{nvidia.com/gpu: \"1\"}}}}}}
"
    )
}

fn ml(name: &str, gpus: u32, arrival: &str, duration: &str) -> String {
    workload("ml", "training", name, gpus, arrival, duration, 0)
}

/// Writes the manager and workers into a fresh directory; the manager's path.
fn scenario(files: &[(&str, String)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let manager = dir.path().join(files[0].0);
    (dir, manager)
}

fn run(manager: &Path) -> FederationReport {
    let scenario = Scenario::load(&[manager.to_path_buf()]).expect("the manager loads");
    assert!(scenario.multikueue.is_some());
    let mut f = Federation::new(scenario).expect("the workers load");
    f.run(&Limits::default(), None);
    f.report()
}

/// (time, kind, reason) of `workload`'s events in `report`.
fn events(report: &wasq::sim::Report, workload: &str) -> Vec<(f64, EventType, Option<String>)> {
    report
        .events
        .refs()
        .filter(|e| e.workload() == workload)
        .map(|e| (e.time(), e.kind(), e.reason().map(str::to_string)))
        .collect()
}

fn worker_report<'a>(
    r: &'a FederationReport,
    name: &str,
) -> &'a wasq::sim::multikueue::report::WorkerReport {
    r.workers.iter().find(|w| w.name == name).unwrap()
}

fn dispatch<'a>(
    r: &'a FederationReport,
    wl: &str,
) -> &'a wasq::sim::multikueue::report::WorkloadDispatch {
    r.workloads.iter().find(|w| w.workload == wl).unwrap()
}

#[test]
fn all_at_once_copies_to_every_worker_and_the_first_to_admit_runs_it() {
    // east is full with its own job for 30 minutes; west is free: the copy on west is admitted
    // at once, the copy on east is removed.
    let (_dir, path) = scenario(&[
        (
            "manager.yaml",
            manager(
                16,
                &[("east", ""), ("west", "")],
                "",
                &ml("train", 4, "0s", "10m"),
            ),
        ),
        (
            "east.yaml",
            worker(8, &workload("research", "local", "busy", 8, "0s", "30m", 0)),
        ),
        ("west.yaml", worker(8, "")),
    ]);
    let r = run(&path);
    let d = dispatch(&r, "ml/train");
    assert_eq!(d.ran_on.as_deref(), Some("west"));
    assert_eq!(d.dispatch_seconds, Some(0.0));
    assert_eq!(d.attempts.len(), 1);
    assert_eq!(d.attempts[0].copied_to, ["east", "west"]);
    assert_eq!(d.attempts[0].outcome, Some("finished"));
    // The manager's check says where, in Kueue's words; the Workload finishes when its copy does.
    let manager = events(&r.manager, "ml/train");
    assert!(
        manager.iter().any(|(t, k, why)| *t == 0.0
            && *k == EventType::AdmissionCheck
            && why.as_deref() == Some("multikueue: Ready (The workload was admitted on \"west\")")),
        "{manager:?}"
    );
    assert!(
        manager
            .iter()
            .any(|(t, k, _)| *t == 600.0 && *k == EventType::Finished),
        "{manager:?}"
    );
    // The copy on east was removed, never admitted; west ran it.
    let east = events(&worker_report(&r, "east").report, "ml/train");
    assert!(
        east.iter().all(|(_, k, _)| *k != EventType::Admitted),
        "{east:?}"
    );
    assert!(
        east.iter().any(|(t, k, why)| *t == 0.0
            && *k == EventType::Removed
            && why.as_deref() == Some("the workload was admitted on worker cluster \"west\"")),
        "{east:?}"
    );
    let west = events(&worker_report(&r, "west").report, "ml/train");
    assert!(
        west.iter()
            .any(|(t, k, _)| *t == 600.0 && *k == EventType::Finished),
        "{west:?}"
    );
    assert_eq!(
        (worker_report(&r, "west").ran, worker_report(&r, "east").ran),
        (1, 0)
    );
    assert_eq!(
        (
            worker_report(&r, "east").copies,
            worker_report(&r, "east").copies_removed
        ),
        (1, 1)
    );
    // The copy carries the origin label and keeps the manager's name.
    let copy = worker_report(&r, "west")
        .report
        .workloads
        .iter()
        .find(|w| w.name == "train")
        .unwrap();
    assert_eq!(copy.state, "finished");
    assert_eq!(r.summary.copies_per_workload, 2.0);
}

#[test]
fn incremental_nominates_one_more_worker_each_round_until_one_admits() {
    // Step 1: "a" first; "a" is full for an hour, so after a 5-minute round "b" is nominated
    // too; "b" is full as well, then "c", which admits at 10m.
    let busy = workload("research", "local", "busy", 4, "0s", "1h", 0);
    let (_dir, path) = scenario(&[
        (
            "manager.yaml",
            manager(
                12,
                &[("a", ""), ("b", ""), ("c", "")],
                "dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental, incrementalDispatcherConfig: {stepSize: 1}",
                &ml("train", 2, "0s", "10m"),
            ),
        ),
        ("a.yaml", worker(4, &busy)),
        ("b.yaml", worker(4, &busy)),
        ("c.yaml", worker(4, "")),
    ]);
    let r = run(&path);
    let d = dispatch(&r, "ml/train");
    assert_eq!(d.attempts[0].copied_to, ["a", "b", "c"]);
    assert_eq!(d.ran_on.as_deref(), Some("c"));
    assert_eq!(d.dispatch_seconds, Some(600.0));
    // Each nominee got its copy when nominated.
    let first = |w: &str| {
        events(&worker_report(&r, w).report, "ml/train")
            .first()
            .map(|e| e.0)
    };
    assert_eq!(
        (first("a"), first("b"), first("c")),
        (Some(0.0), Some(300.0), Some(600.0))
    );
    assert_eq!(
        r.summary.dispatcher,
        "kueue.x-k8s.io/multikueue-dispatcher-incremental"
    );
}

#[test]
fn a_worker_lost_past_the_timeout_sends_its_workload_elsewhere() {
    // The job runs on "a" (first in config order at one instant) from 0s; "a" is lost from 10m
    // to 40m; after workerLostTimeout (5m) the check goes to Retry, the manager evicts the
    // Workload and dispatches it again: "b" runs it from 15m for its whole hour.
    let (_dir, path) = scenario(&[
        (
            "manager.yaml",
            manager(
                8,
                &[("a", ", sim.wasq.dev/lost: 10m-40m"), ("b", "")],
                "workerLostTimeout: 5m",
                &ml("train", 2, "0s", "1h"),
            ),
        ),
        ("a.yaml", worker(4, "")),
        ("b.yaml", worker(4, "")),
    ]);
    let r = run(&path);
    let d = dispatch(&r, "ml/train");
    let outcomes: Vec<_> = d
        .attempts
        .iter()
        .map(|a| (a.admitted_on.clone(), a.outcome))
        .collect();
    assert_eq!(
        outcomes,
        [
            (Some("a".to_string()), Some("its worker was lost")),
            (Some("b".to_string()), Some("finished"))
        ]
    );
    assert_eq!(d.attempts[1].reserved_seconds, 900.0);
    let manager = events(&r.manager, "ml/train");
    assert!(
        manager.iter().any(|(t, k, why)| *t == 900.0
            && *k == EventType::AdmissionCheck
            && why.as_deref()
                == Some("multikueue: Retry (Admitting remote lost, Previously: \"Ready\")")),
        "{manager:?}"
    );
    assert!(
        manager
            .iter()
            .any(|(t, k, _)| *t == 900.0 + 3600.0 && *k == EventType::Finished),
        "{manager:?}"
    );
    // On "a" the copy stopped when the worker was lost, and nothing of it came back.
    let a = events(&worker_report(&r, "a").report, "ml/train");
    assert!(
        a.iter()
            .any(|(t, k, _)| *t == 600.0 && *k == EventType::Removed),
        "{a:?}"
    );
    assert_eq!(
        a.iter()
            .filter(|(_, k, _)| *k == EventType::Admitted)
            .count(),
        1,
        "{a:?}"
    );
    let lost = worker_report(&r, "a");
    assert_eq!((lost.losses, lost.lost_seconds), (1, 1800.0));
    assert_eq!(r.summary.dispatched_again, 1);
}

#[test]
fn a_worker_back_within_the_timeout_without_the_copy_is_retried_at_once() {
    // "a" is lost from 10m to 12m, under the 15-minute default: the manager keeps the check
    // Ready meanwhile; at 12m "a" is back without the copy, which died with it, so the check
    // is retried at once and the Workload dispatched again.
    let (_dir, path) = scenario(&[
        (
            "manager.yaml",
            manager(
                4,
                &[("a", ", sim.wasq.dev/lost: 10m-12m")],
                "",
                &ml("train", 2, "0s", "1h"),
            ),
        ),
        ("a.yaml", worker(4, "")),
    ]);
    let r = run(&path);
    let d = dispatch(&r, "ml/train");
    assert_eq!(d.attempts.len(), 2);
    assert_eq!(d.attempts[0].ended_seconds, Some(720.0));
    assert_eq!(d.attempts[1].admitted_on.as_deref(), Some("a"));
    let manager = events(&r.manager, "ml/train");
    assert!(
        manager.iter().any(|(t, _, why)| *t == 720.0
            && why.as_deref()
                == Some(
                    "multikueue: Retry (Admitting remote no longer exists, Previously: \"Ready\")"
                )),
        "{manager:?}"
    );
}

#[test]
fn a_copy_preempted_on_its_worker_is_dispatched_again() {
    // On "a" a local job of higher priority arrives at 5m and preempts the copy: the manager's
    // check goes to Retry with Kueue's message, and the Workload runs on "b" instead.
    let (_dir, path) = scenario(&[
        (
            "manager.yaml",
            manager(8, &[("a", ""), ("b", "")], "", &ml("train", 4, "0s", "30m")),
        ),
        (
            "a.yaml",
            worker(
                4,
                &workload("research", "local", "urgent", 4, "5m", "1h", 1000),
            ),
        ),
        (
            "b.yaml",
            worker(4, &workload("research", "local", "early", 4, "0s", "6m", 0)),
        ),
    ]);
    let r = run(&path);
    let d = dispatch(&r, "ml/train");
    assert_eq!(d.attempts[0].admitted_on.as_deref(), Some("a"));
    assert_eq!(d.attempts[0].outcome, Some("evicted on its worker"));
    assert_eq!(d.ran_on.as_deref(), Some("b"));
    let manager = events(&r.manager, "ml/train");
    assert!(manager.iter().any(|(t, _, why)| *t == 300.0
        && why.as_deref() == Some("multikueue: Retry (Workload evicted on worker cluster: \"a\", resetting for re-admission. Previously: \"Ready\")")), "{manager:?}");
}

#[test]
fn worker_annotations_are_checked_naming_the_cluster_and_field() {
    let (_dir, path) = scenario(&[
        (
            "manager.yaml",
            manager(
                4,
                &[("a", ", sim.wasq.dev/lost: 10m"), ("b", "")],
                "",
                &ml("train", 1, "0s", "1m"),
            ),
        ),
        ("a.yaml", worker(4, "")),
    ]);
    let scenario = Scenario::load(&[path]).unwrap();
    let err = Federation::new(scenario)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        err.contains(
            "MultiKueueCluster a: metadata.annotations.sim.wasq.dev/lost: \"10m\" is not FROM-TO"
        ),
        "{err}"
    );
    assert!(
        err.contains("MultiKueueCluster b: the worker's manifests"),
        "{err}"
    );
    assert!(err.contains("b.yaml"), "{err}");
}

/// Per workload key, the intervals during which some worker had it admitted.
fn running_intervals(r: &FederationReport) -> BTreeMap<String, Vec<(f64, f64, String)>> {
    let end = r.manager.summary.duration_seconds;
    let mut out: BTreeMap<String, Vec<(f64, f64, String)>> = BTreeMap::new();
    for w in &r.workers {
        let mut since: BTreeMap<String, f64> = BTreeMap::new();
        for e in w.report.events.refs() {
            let key = e.workload().to_string();
            match e.kind() {
                EventType::Admitted => {
                    since.insert(key, e.time());
                }
                EventType::Finished
                | EventType::Removed
                | EventType::Evicted
                | EventType::Preempted => {
                    if let Some(s) = since.remove(&key) {
                        out.entry(key)
                            .or_default()
                            .push((s, e.time(), w.name.clone()));
                    }
                }
                _ => {}
            }
        }
        for (key, s) in since {
            out.entry(key).or_default().push((s, end, w.name.clone()));
        }
    }
    out
}

/// A worker: GPUs, loss windows (start, length in minutes), its own workloads (GPUs,
/// arrival and duration in minutes, priority).
type WorkerCase = (u32, Vec<(u32, u32)>, Vec<(u32, u32, u32, i32)>);

#[derive(Debug, Clone)]
struct Case {
    workers: Vec<WorkerCase>,
    /// The manager's workloads: (gpus, arrival, duration) in minutes.
    workloads: Vec<(u32, u32, u32)>,
    incremental: bool,
}

fn case() -> impl Strategy<Value = Case> {
    let worker = (
        2u32..=8,
        proptest::collection::vec((0u32..90, 1u32..40), 0..=2),
        proptest::collection::vec(
            (
                1u32..=4,
                0u32..60,
                5u32..40,
                prop_oneof![Just(0), Just(1000)],
            ),
            0..=2,
        ),
    );
    (
        proptest::collection::vec(worker, 1..=3),
        proptest::collection::vec((1u32..=4, 0u32..60, 5u32..40), 1..=8),
        any::<bool>(),
    )
        .prop_map(|(workers, workloads, incremental)| Case {
            workers,
            workloads,
            incremental,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// With random worker losses and local preemptors, a Workload runs in at most one worker at
    /// any instant, and one that finished on the manager finished on exactly one worker.
    #[test]
    fn a_workload_runs_in_at_most_one_worker_at_any_instant(case in case()) {
        let names: Vec<String> = (0..case.workers.len()).map(|i| format!("w{i}")).collect();
        let annotations: Vec<String> = case.workers.iter().map(|(_, losses, _)| {
            let windows: Vec<String> = losses.iter().map(|(from, len)| format!("{from}m-{}m", from + len)).collect();
            if windows.is_empty() { String::new() } else { format!(", sim.wasq.dev/lost: \"{}\"", windows.join(",")) }
        }).collect();
        // Overlapping windows are fine: a worker is lost while any of its windows is open.
        let clusters: Vec<(&str, &str)> = names.iter().map(String::as_str).zip(annotations.iter().map(String::as_str)).collect();
        let total: u32 = case.workers.iter().map(|w| w.0).sum();
        let jobs: String = case.workloads.iter().enumerate()
            .map(|(i, (g, a, d))| ml(&format!("j{i}"), (*g).min(total), &format!("{a}m"), &format!("{d}m")))
            .collect();
        let config = if case.incremental {
            "workerLostTimeout: 3m, dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental, incrementalDispatcherConfig: {stepSize: 1}"
        } else {
            "workerLostTimeout: 3m"
        };
        let mut files = vec![("manager.yaml".to_string(), manager(total, &clusters, config, &jobs))];
        for (i, (gpus, _, local)) in case.workers.iter().enumerate() {
            let locals: String = local.iter().enumerate()
                .map(|(j, (g, a, d, p))| workload("research", "local", &format!("l{j}"), (*g).min(*gpus), &format!("{a}m"), &format!("{d}m"), *p))
                .collect();
            files.push((format!("w{i}.yaml"), worker(*gpus, &locals)));
        }
        let files: Vec<(&str, String)> = files.iter().map(|(n, t)| (n.as_str(), t.clone())).collect();
        let (_dir, path) = scenario(&files);
        let scenario = Scenario::load(&[path]).unwrap();
        let mut f = Federation::new(scenario).unwrap();
        f.run(&Limits { until: Some(24 * 3_600_000), ..Limits::default() }, None);
        let r = f.report();
        for (key, mut spans) in running_intervals(&r) {
            if !key.starts_with("ml/") { continue; }
            // A copy admitted and removed at one instant (another worker admitted it at the
            // same time, first in the config's order) never ran.
            spans.retain(|s| s.1 > s.0);
            spans.sort_by(|a, b| a.0.total_cmp(&b.0));
            for pair in spans.windows(2) {
                prop_assert!(pair[1].0 >= pair[0].1, "{key} ran on {} [{}, {}) and {} [{}, {})", pair[0].2, pair[0].0, pair[0].1, pair[1].2, pair[1].0, pair[1].1);
            }
        }
        for w in &r.manager.workloads {
            let key = format!("{}/{}", w.namespace, w.name);
            let finished_on: usize = r.workers.iter()
                .filter(|wr| events(&wr.report, &key).iter().any(|e| e.1 == EventType::Finished))
                .count();
            if w.state == "finished" {
                prop_assert_eq!(finished_on, 1, "{} finished on the manager", key);
                let d = dispatch(&r, &key);
                prop_assert_eq!(d.attempts.last().and_then(|a| a.outcome), Some("finished"));
            } else {
                prop_assert_eq!(finished_on, 0, "{} is {} on the manager", key, w.state);
            }
        }
    }
}

/// `wasq simulate --compare dispatch=builtin dispatch=kueue-default-dispatch` on the example:
/// the shipped plugin decides as the built-in, so nothing ran elsewhere and only who decided
/// differs; a manager scenario refuses the flags that show one cluster.
#[test]
fn compare_runs_a_manager_scenario_under_two_dispatchers() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/multikueue/manager.yaml");
    let plugins = &super::plugins::built().plugins;
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_wasq"));
    command
        .args(["simulate", "-o", "json", "--plugins"])
        .arg(plugins)
        .args([
            "--compare",
            "dispatch=builtin",
            "dispatch=kueue-default-dispatch",
        ])
        .arg(&example);
    let out = super::cli::succeeds(command, "wasq simulate --compare");
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(c["placedDifferently"], serde_json::json!([]), "{c}");
    assert_eq!(c["a"]["finished"], 10);
    assert_eq!(c["a"]["ran"], c["b"]["ran"]);
    assert_eq!(c["a"]["meanWaitSeconds"], c["b"]["meanWaitSeconds"]);
    assert_eq!(
        c["a"]["dispatch"]["decidedBy"]["builtin"],
        c["a"]["dispatch"]["dispatcherCalls"]
    );
    assert_eq!(
        c["b"]["dispatch"]["decidedBy"]["kueue-default-dispatch"],
        c["b"]["dispatch"]["dispatcherCalls"],
        "{c}"
    );
    assert_eq!(c["b"]["dispatch"]["fallbacks"], 0);
    let mut refused = std::process::Command::new(env!("CARGO_BIN_EXE_wasq"));
    refused.args(["simulate", "--speed", "10"]).arg(&example);
    let out = refused.output().expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("sim.wasq.dev/manifests"));
}

/// `wasq simulate --report FILE.html` of a manager scenario: one page with MultiKueue's
/// summary, its workers and Workloads as the JSON report gives them, then each section with a
/// column per cluster, the manager's first.
#[test]
fn the_html_report_of_a_manager_scenario_shows_every_cluster() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/multikueue/manager.yaml");
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_wasq"));
    command
        .args(["simulate", "-o", "json", "--report"])
        .arg(&page)
        .arg(&example);
    let out = super::cli::succeeds(command, "wasq simulate --report");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<h1>wasq simulation: a MultiKueue manager and 2 worker(s)</h1>"));
    assert!(html.contains("<h2>MultiKueue</h2>"));
    // Each worker's row as the JSON report counts it.
    for w in r["workers"].as_array().unwrap() {
        let row = format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td>",
            w["name"].as_str().unwrap(),
            w["ran"],
            w["copies"]
        );
        assert!(html.contains(&row), "{row}");
        assert!(html.contains(&format!(
            "<h2>Per ClusterQueue: {}</h2>",
            w["name"].as_str().unwrap()
        )));
    }
    assert!(html.contains("<h2>Per ClusterQueue: manager</h2>"));
    // Every Workload dispatched has its row, where it ran.
    for w in r["workloads"].as_array().unwrap() {
        let row = format!(
            "<tr><td>{}</td><td>{}</td>",
            w["workload"].as_str().unwrap(),
            w["ranOn"].as_str().unwrap_or("-")
        );
        assert!(html.contains(&row), "{row}");
    }
    // The sections have a column per cluster, the manager's first.
    let backlog = html.find("<h2>Backlog</h2>").expect("the backlog section");
    let manager = html[backlog..].find("<h3>manager</h3>").unwrap();
    let west = html[backlog..].find("<h3>eu-west</h3>").unwrap();
    assert!(manager < west);
}

/// The example's dispatch plugin (`plugins/cheapest-region`) with the example's prices: the
/// first Jobs go to the cheaper eu-west, a Job arriving while 2 wait there spills over to
/// us-east, each Job gets one copy at a time, and every answer is the plugin's.
#[test]
fn the_cheapest_region_plugin_prefers_the_cheap_worker_and_spills_over() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/multikueue");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_wasq"));
    command
        .args(["simulate", "-o", "json", "--policy-config"])
        .arg(dir.join("policy-config.yaml"))
        .arg("--plugins")
        .arg(&super::plugins::built().plugins)
        .args(["--policy", "dispatch=cheapest-region"])
        .arg(dir.join("manager.yaml"));
    let out = super::cli::succeeds(command, "wasq simulate --policy dispatch=cheapest-region");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let ran_on = |job: &str| {
        r["workloads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| {
                w["workload"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("ml/job-{job}-"))
            })
            .map(|w| (w["ranOn"].clone(), w["attempts"][0]["copiedTo"].clone()))
            .unwrap()
    };
    let west = (serde_json::json!("eu-west"), serde_json::json!(["eu-west"]));
    assert_eq!(ran_on("pretrain-a"), west);
    assert_eq!(ran_on("pretrain-b"), west);
    // At 15m finetune-a and finetune-b wait on eu-west: eval-a spills over.
    assert_eq!(
        ran_on("eval-a"),
        (serde_json::json!("us-east"), serde_json::json!(["us-east"]))
    );
    let s = &r["summary"];
    assert_eq!(
        s["decidedBy"]["cheapest-region"], s["dispatcherCalls"],
        "{s}"
    );
    assert_eq!(s["fallbacks"], 0);
    assert!(s["copiesPerWorkload"].as_f64().unwrap() < 2.0, "{s}");
    assert!(
        r["manager"]["workloads"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["state"] == "finished")
    );
}

/// The same plugin bound as a Kubernetes object: a `QueuePolicy` with `extension: Dispatch`
/// and the settings the policy configuration gives it decides as `--policy` does; a `Shadow`
/// one is refused at its field.
#[test]
fn a_dispatch_queue_policy_binds_the_plugin_as_the_flag_does() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/multikueue");
    let tmp = tempfile::tempdir().unwrap();
    let wasm = super::plugins::built().plugins.join("cheapest-region.wasm");
    let policy = |mode: &str| {
        format!(
            "apiVersion: policies.wasq.dev/v1alpha1\nkind: QueuePolicy\n\
             metadata: {{name: cheapest}}\nspec:\n  extension: Dispatch\n  mode: {mode}\n  \
             module: {{path: '{}'}}\n  \
             settings: {{prices: 'a100-us-east=3.20, a100-eu-west=2.10', spillOver: '2'}}\n",
            wasm.display()
        )
    };
    let file = tmp.path().join("cheapest.yaml");
    std::fs::write(&file, policy("Enforce")).unwrap();
    let run = |args: &[&std::ffi::OsStr]| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_wasq"));
        command.args(["simulate", "-o", "json"]).args(args);
        command.output().expect("runs")
    };
    let manager = dir.join("manager.yaml");
    let out = run(&[manager.as_os_str(), file.as_os_str()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let by_object: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let config = dir.join("policy-config.yaml");
    let plugins = super::plugins::built().plugins.clone();
    let out = run(&[
        "--policy-config".as_ref(),
        config.as_os_str(),
        "--plugins".as_ref(),
        plugins.as_os_str(),
        "--policy".as_ref(),
        "dispatch=cheapest-region".as_ref(),
        manager.as_os_str(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let by_flag: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ran_on = |r: &serde_json::Value| -> Vec<(String, String)> {
        (r["workloads"].as_array().unwrap().iter())
            .map(|w| (w["workload"].to_string(), w["ranOn"].to_string()))
            .collect()
    };
    assert_eq!(ran_on(&by_object), ran_on(&by_flag));
    let s = &by_object["summary"];
    assert_eq!(s["decidedBy"]["cheapest"], s["dispatcherCalls"], "{s}");
    assert_eq!(s["fallbacks"], 0);

    std::fs::write(&file, policy("Shadow")).unwrap();
    let out = run(&[manager.as_os_str(), file.as_os_str()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec.mode") && err.contains("Dispatch cannot be shadowed"),
        "{err}"
    );
}
