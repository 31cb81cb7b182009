//! Containment: every misbehaving fixture (trap, endless loop, unbounded allocation, out-of-range
//! or duplicate indices, a forbidden import) is stopped within its limit, the scheduler carries
//! on, the decision equals the built-in one, and the fallback names the plugin and the reason.

use std::path::{Path, PathBuf};

use wasq::sim::{EventType, Report};
use wasq::wasm::{BindError, HostOptions, ImportError, Limits, LoadError};

use super::plugins::{bindings, fixtures, plugins, run, test_options};
use super::scenarios::outcome_lines;

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(name)
}

/// Fallback entries of `plugin` in a report: (reason, count, last error).
pub(super) fn fallbacks_of(report: &Report, plugin: &str) -> Vec<(String, u64, String)> {
    report
        .summary
        .fallbacks
        .iter()
        .filter(|f| f.plugin == plugin)
        .map(|f| (f.reason.clone(), f.count, f.last_error.clone()))
        .collect()
}

#[test]
fn each_misbehaving_plugin_is_contained_and_the_builtin_decides() {
    let cases = [
        // (fixture, extension, scenario, reason, text the error must contain)
        (
            "fixture-trap",
            "ordering",
            "sched-entry-ordering.yaml",
            "trap",
            "fixture-trap: refusing",
        ),
        (
            "fixture-out-of-range",
            "ordering",
            "sched-entry-ordering.yaml",
            "invalid-answer",
            "the head order has 5 entries, expected 4",
        ),
        (
            "fixture-loop",
            "preemption",
            "preempt-lowest-priority.yaml",
            "timeout",
            "CPU deadline of 10 ms exceeded by select-victims carrying",
        ),
        (
            "fixture-duplicates",
            "preemption",
            "preempt-lowest-priority.yaml",
            "invalid-answer",
            "appears twice",
        ),
        (
            "fixture-alloc",
            "flavor-assignment",
            // Two flavors can host each podSet: the host has to ask.
            "../plugin-scenarios/cheapest-flavor.yaml",
            "out-of-memory",
            "memory limit of 67108864 bytes",
        ),
        (
            "fixture-forbidden-import",
            "ordering",
            "sched-entry-ordering.yaml",
            "load-error",
            "imports `wasi:",
        ),
    ];
    // Only the looping fixture meets the (default, 10 ms) deadline; the others get a deadline a
    // loaded machine cannot hit, so that what stops them is their own misbehaviour.
    let mut options = test_options();
    options
        .plugin_limits
        .insert("fixture-loop".into(), Limits::default().into());
    let registry = fixtures(&options);
    for (fixture, extension, file, reason, text) in cases {
        let path = scenario(file);
        let native = run(&path, None);
        let b = bindings(&[&format!("{extension}={fixture}")]);
        let contained = run(&path, Some((&registry, &b)));
        assert_eq!(
            outcome_lines(&native),
            outcome_lines(&contained),
            "{fixture}: decisions differ from the built-in"
        );
        let found = fallbacks_of(&contained, fixture);
        assert!(
            found
                .iter()
                .any(|(r, n, e)| r == reason && *n > 0 && e.contains(text)),
            "{fixture}: expected a `{reason}` fallback mentioning {text:?}, got {found:?}"
        );
        assert!(
            found
                .iter()
                .all(|(r, ..)| r == reason || r == "quarantined"),
            "{fixture}: unexpected reasons {found:?}"
        );
        // Decisions the fixture could not make are attributed to the built-in.
        for e in contained
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventType::Admitted | EventType::Preempted))
        {
            assert_ne!(&*e.policy.name, fixture, "{fixture}: {e:?}");
        }
    }
}

/// Test options with a short quarantine.
fn quarantine_after(n: u32) -> HostOptions {
    let mut options = test_options();
    options.limits.quarantine_after = Some(n);
    options
}

#[test]
fn repeated_failures_quarantine_the_plugin_until_its_file_changes() {
    let registry = fixtures(&quarantine_after(3));
    let b = bindings(&["ordering=fixture-trap"]);
    // A scenario with arrivals over time: many ordering calls.
    let report = run(
        &scenario("life-strict-vs-besteffort-fifo.yaml"),
        Some((&registry, &b)),
    );
    let status = registry.get("fixture-trap").expect("loaded").status();
    assert!(status.quarantined, "{status:?}");
    assert_eq!(status.failures.get("trap"), Some(&3), "{status:?}");
    assert_eq!(status.calls, 3, "no call reaches a quarantined plugin");
    let found = fallbacks_of(&report, "fixture-trap");
    assert!(
        found.iter().any(|(r, n, _)| r == "quarantined" && *n > 0),
        "{found:?}"
    );
    assert_eq!(
        outcome_lines(&report),
        outcome_lines(&run(&scenario("life-strict-vs-besteffort-fifo.yaml"), None))
    );
}

#[test]
fn a_forbidden_import_is_refused_at_load_naming_the_import() {
    let registry = fixtures(&test_options());
    let (_, error) = registry
        .failures()
        .find(|(name, _)| *name == "fixture-forbidden-import")
        .expect("the forbidden-import fixture is refused");
    match error {
        LoadError::ForbiddenImport {
            error: ImportError::Interface(import),
            ..
        } => {
            assert!(
                import.starts_with("wasi:clocks/") || import.starts_with("wasi:filesystem/"),
                "{import}"
            );
        }
        other => panic!("unexpected error {other}"),
    }
    assert!(error.to_string().contains("fixture-forbidden-import.wasm"));
    // Every other fixture loads but the one whose memory is over the limit before it runs:
    // they misbehave only when called.
    let refused: Vec<&str> = registry.failures().map(|(name, _)| name.as_str()).collect();
    assert_eq!(refused, ["fixture-forbidden-import", "fixture-huge-memory"]);
}

/// `bytes` with every `wasq:policy` name's version `@1.1.0` rewritten to `to` (six bytes too,
/// so the binary stays valid): the same component as if built against that version.
fn built_against(bytes: &[u8], to: &[u8; 6]) -> Vec<u8> {
    let (from, at) = (b"wasq:policy/".as_slice(), b"@1.1.0".as_slice());
    let mut out = bytes.to_vec();
    let mut rewritten = 0;
    let mut i = 0;
    while let Some(found) = out[i..].windows(from.len()).position(|w| w == from) {
        let start = i + found;
        // The version follows the interface name, within a short distance.
        let end = (start + 64).min(out.len());
        if let Some(v) = out[start..end].windows(at.len()).position(|w| w == at) {
            out[start + v..start + v + at.len()].copy_from_slice(to);
            rewritten += 1;
        }
        i = start + from.len();
    }
    assert!(rewritten > 0, "no wasq:policy names found");
    out
}

/// A plugin built against another major version of the WIT package, or a newer minor one, is
/// refused at load, naming both versions; the current build beside them loads, and so does the
/// same component naming 1.0.0 (served 1.0 by the same bindings: 1.1 changed no 1.0 type).
#[test]
fn a_plugin_of_another_major_or_a_newer_minor_is_refused_naming_both_versions() {
    let built = super::plugins::built();
    let bytes = std::fs::read(built.plugins.join("kueue-default-preemption.wasm")).expect("built");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("next-major.wasm"),
        built_against(&bytes, b"@2.0.0"),
    )
    .expect("write");
    std::fs::write(
        dir.path().join("next-minor.wasm"),
        built_against(&bytes, b"@1.2.0"),
    )
    .expect("write");
    std::fs::write(
        dir.path().join("older-minor.wasm"),
        built_against(&bytes, b"@1.0.0"),
    )
    .expect("write");
    std::fs::write(dir.path().join("kueue-default-preemption.wasm"), &bytes).expect("write");
    let registry =
        wasq::wasm::Registry::load_dir(super::plugins::engine(), dir.path(), &test_options())
            .expect("the directory loads");
    let failures: std::collections::BTreeMap<&str, String> = registry
        .failures()
        .map(|(name, e)| (name.as_str(), e.to_string()))
        .collect();
    assert_eq!(failures.len(), 2, "{failures:?}");
    let major = &failures["next-major"];
    assert!(
        major.contains("wasq:policy@2.0.0") && major.contains("wasq:policy@1.1.0"),
        "{major}"
    );
    let minor = &failures["next-minor"];
    assert!(
        minor.contains("wasq:policy@1.2.0")
            && minor.contains("newer than this host's wasq:policy@1.1.0"),
        "{minor}"
    );
    assert!(registry.get("kueue-default-preemption").is_some());
    let older = registry.get("older-minor").expect("a 1.0.0 plugin loads");
    assert_eq!(older.info().wit_version.to_string(), "1.0.0");
}

#[test]
fn bindings_name_unknown_plugins_and_wrong_kinds() {
    let registry = plugins();
    let cluster =
        wasq::sim::Scenario::load(&[scenario("preempt-lowest-priority.yaml")]).expect("loads");
    let sim = wasq::sim::Simulation::new(cluster);
    let err = registry
        .bind(
            &sim.scheduler.cluster,
            &bindings(&["preemption=no-such-plugin"]),
        )
        .expect_err("unknown plugin refused");
    assert!(matches!(err, BindError::UnknownPlugin { .. }), "{err}");
    assert!(
        err.to_string().contains("kueue-default-preemption"),
        "{err}"
    );
    let err = registry
        .bind(
            &sim.scheduler.cluster,
            &bindings(&["preemption=kueue-default-ordering"]),
        )
        .expect_err("wrong kind refused");
    assert!(
        err.to_string()
            .contains("plugin `kueue-default-ordering` implements ordering, not preemption"),
        "{err}"
    );
}

#[test]
fn a_cluster_queue_annotation_overrides_the_default_binding() {
    // The same scenario, with the ClusterQueue bound to the duplicates fixture by annotation.
    let text = std::fs::read_to_string(scenario("preempt-lowest-priority.yaml")).expect("read");
    let annotated = text.replace(
        "metadata: {name: standalone}",
        "metadata:\n  name: standalone\n  annotations: {policy.wasq.dev/preemption: fixture-duplicates}",
    );
    assert_ne!(text, annotated);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("annotated.yaml");
    std::fs::write(&path, annotated).expect("write");
    let registry = fixtures(&test_options());
    let report = run(&path, Some((&registry, &bindings(&[]))));
    let found = fallbacks_of(&report, "fixture-duplicates");
    assert!(
        found.iter().any(|(r, ..)| r == "invalid-answer"),
        "{found:?}"
    );
}

#[test]
fn fuel_stops_an_endless_loop_deterministically() {
    let options = HostOptions {
        limits: Limits {
            fuel: Some(5_000_000),
            // A deadline far away, so that fuel is what stops it.
            deadline_ms: 60_000,
            ..Limits::default()
        }
        .into(),
        ..test_options()
    };
    let engine = wasq::wasm::WasmEngine::new(true).expect("fuel engine");
    let registry =
        wasq::wasm::Registry::load_dir(engine, &super::plugins::built().fixtures, &options)
            .expect("fixtures load");
    let path = scenario("preempt-lowest-priority.yaml");
    let report = run(
        &path,
        Some((&registry, &bindings(&["preemption=fixture-loop"]))),
    );
    let found = fallbacks_of(&report, "fixture-loop");
    assert!(
        found
            .iter()
            .any(|(r, _, e)| r == "out-of-fuel" && e.contains("5000000")),
        "{found:?}"
    );
    assert_eq!(outcome_lines(&report), outcome_lines(&run(&path, None)));
}

#[test]
fn answers_refused_every_time_quarantine_the_plugin_too() {
    let registry = fixtures(&quarantine_after(3));
    // Every call returns normally; every answer is refused by the host's checks.
    let b = bindings(&["ordering=fixture-out-of-range"]);
    let report = run(
        &scenario("life-strict-vs-besteffort-fifo.yaml"),
        Some((&registry, &b)),
    );
    let status = registry
        .get("fixture-out-of-range")
        .expect("loaded")
        .status();
    // Its valid sort keys are successes in between, so it takes a few cycles to reach three
    // refusals in a row.
    assert!(status.quarantined, "{status:?}");
    assert!(
        status
            .failures
            .get("invalid-answer")
            .is_some_and(|&n| n >= 3),
        "{status:?}"
    );
    let found = fallbacks_of(&report, "fixture-out-of-range");
    assert!(found.iter().any(|(r, ..)| r == "quarantined"), "{found:?}");
}

#[test]
fn a_plugin_evicting_every_candidate_is_refused_unless_it_may_evict_extra_victims() {
    // In this scenario the preemptor needs one victim of the two lower-priority workloads.
    let path = scenario("preempt-lowest-priority.yaml");
    let native = run(&path, None);
    let preempted = |r: &Report| -> Vec<String> {
        r.events
            .iter()
            .filter(|e| e.kind == EventType::Preempted)
            .map(|e| e.workload.clone())
            .collect()
    };
    assert_eq!(preempted(&native), ["default/low"]);
    let b = bindings(&["preemption=fixture-all-candidates"]);

    // Minimal victims are enforced: the answer is refused naming an unneeded victim, and the
    // built-in's minimal set is evicted.
    let registry = fixtures(&test_options());
    let refused = run(&path, Some((&registry, &b)));
    assert_eq!(outcome_lines(&native), outcome_lines(&refused));
    let found = fallbacks_of(&refused, "fixture-all-candidates");
    assert!(
        found
            .iter()
            .any(|(r, _, e)| r == "invalid-answer" && e.contains("is not needed")),
        "{found:?}"
    );

    // With `allowExtraVictims`, both are evicted by the plugin.
    let mut options = test_options();
    options.settings.insert(
        "fixture-all-candidates".into(),
        vec![("allowExtraVictims".into(), "true".into())],
    );
    let registry = fixtures(&options);
    let greedy = run(&path, Some((&registry, &b)));
    let mut evicted = preempted(&greedy);
    evicted.sort();
    assert_eq!(evicted, ["default/low", "default/mid"]);
    assert!(fallbacks_of(&greedy, "fixture-all-candidates").is_empty());
    // The one victim beyond the preemptor's need is counted (reports and metrics read it).
    let plugin = registry.get("fixture-all-candidates").unwrap();
    assert_eq!(plugin.status().extra_victims, 1);
}

/// Preemption for topology with a plugin bound: the plugin sees candidates, not the topology,
/// so the host checks its victims for the placement too. Here quota fits, x1 and y1 have 1 cpu
/// free each and foo needs 3 on one host: the plugin's first candidate (low-a, on x1 next to a
/// higher-priority workload) frees quota but not a host; the answer is refused and the
/// built-in's victim (mid-b, which frees y1) is evicted.
#[test]
fn a_plugin_victim_that_frees_quota_but_not_the_leaves_is_refused() {
    let mut y = String::from(
        "# wasq-test: --max-cycles 1
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: tas-single-level}
spec:
  levels:
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: tas-default}
spec: {nodeLabels: {tas-node: 'true'}, topologyName: tas-single-level}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: tas-main}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: tas-default
      resources:
      - {name: cpu, nominalQuota: 50}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: tas-main, namespace: default}
spec: {clusterQueue: tas-main}
",
    );
    for host in ["x1", "y1"] {
        y.push_str(&format!(
            "---
apiVersion: v1
kind: Node
metadata:
  name: {host}
  labels: {{tas-node: 'true', kubernetes.io/hostname: {host}}}
status:
  allocatable: {{cpu: '5', pods: '10'}}
  conditions: [{{type: Ready, status: 'True'}}]
"
        ));
    }
    let workload = |name: &str, priority: i32, cpu: i32, on: Option<&str>| {
        let mut w = format!(
            "---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {{name: {name}, namespace: default}}
spec:
  queueName: tas-main
  priority: {priority}
  podSets:
  - name: one
    count: 1
    topologyRequest: {{required: kubernetes.io/hostname}}
    template:
      spec:
        containers:
        - {{name: c, image: pause, resources: {{requests: {{cpu: '{cpu}'}}}}}}
"
        );
        if let Some(host) = on {
            w.push_str(&format!(
                "status:
  admission:
    clusterQueue: tas-main
    podSetAssignments:
    - name: one
      count: 1
      flavors: {{cpu: tas-default}}
      resourceUsage: {{cpu: '{cpu}'}}
      topologyAssignment:
        levels: [kubernetes.io/hostname]
        slices:
        - domainCount: 1
          valuesPerLevel: [{{universal: {host}}}]
          podCounts: {{universal: 1}}
  conditions:
  - {{type: QuotaReserved, status: 'True', reason: QuotaReserved, message: '', lastTransitionTime: '2024-01-01T00:00:00Z'}}
"
            ));
        }
        w
    };
    y.push_str(&workload("low-a", 1, 1, Some("x1")));
    y.push_str(&workload("high-c", 5, 3, Some("x1")));
    y.push_str(&workload("mid-b", 2, 4, Some("y1")));
    y.push_str(&workload("foo", 3, 3, None));
    let dir = std::env::temp_dir().join(format!("wasq-tas-plugin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tas-plugin.yaml");
    std::fs::write(&path, y).unwrap();

    let preempted = |r: &Report| -> Vec<(String, String)> {
        r.events
            .iter()
            .filter(|e| e.kind == EventType::Preempted)
            .map(|e| (e.workload.clone(), e.policy.name.to_string()))
            .collect()
    };
    let native = run(&path, None);
    assert_eq!(
        preempted(&native),
        [("default/mid-b".to_string(), "builtin".to_string())]
    );
    let registry = plugins();
    let b = bindings(&["preemption=kueue-default-preemption"]);
    let wasm = run(&path, Some((&registry, &b)));
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(outcome_lines(&native), outcome_lines(&wasm));
    assert_eq!(
        preempted(&wasm),
        [("default/mid-b".to_string(), "builtin".to_string())]
    );
    let found = fallbacks_of(&wasm, "kueue-default-preemption");
    assert!(
        found
            .iter()
            .any(|(r, _, e)| r == "invalid-answer" && e.contains("do not make the preemptor fit")),
        "{found:?}"
    );
}

/// `wasq bench` counts a failing plugin's fallbacks in every run, not in the fastest run's
/// alone: each run gets fresh instances, so each run falls back anew.
#[test]
fn bench_counts_the_fallbacks_of_every_run() {
    use std::sync::Arc;
    use wasq::sim::generate::GeneratorObjectSpec;
    use wasq::wasm::{LiveBindings, PluginSource};

    // Kueue's large-scale stream cut down to one cohort of two queues and four workloads.
    let generator: GeneratorObjectSpec = serde_saphyr::from_str(
        "shape: large-scale\nseed: 3\ncohorts: 1\nqueuesPerCohort: 2\nclasses:\n\
         - {name: small, count: 4, interval: 1s, runtime: 5s, priority: 0, cpu: 1}\n",
    )
    .expect("a generator spec");
    let generator = generator.validate().expect("a valid shape");
    let registry = fixtures(&test_options());
    let trap = bindings(&["ordering=fixture-trap"]);
    let report = wasq::bench::simulator::bench(
        &generator,
        2,
        || {
            LiveBindings::new(
                PluginSource::Fixed(Arc::new(registry.fresh())),
                trap.clone(),
            )
        },
        None,
    )
    .expect("bench");
    assert!(report.identical_decisions, "the built-in decided instead");
    assert_eq!(report.native_fallbacks, [0, 0]);
    assert_eq!(report.wasm_fallbacks.len(), 2);
    assert!(
        report.wasm_fallbacks.iter().all(|&n| n > 0),
        "{:?}",
        report.wasm_fallbacks
    );
    let total: u64 = report.wasm_fallbacks.iter().sum();
    assert!(total > report.wasm.fallbacks, "more than the fastest run's");
    let table = report.to_table();
    let row = table
        .lines()
        .find(|l| l.starts_with("plugin fallbacks, all runs"))
        .unwrap_or_else(|| panic!("no fallbacks row:\n{table}"));
    assert_eq!(
        row.split_whitespace().rev().take(2).collect::<Vec<_>>(),
        [total.to_string(), "0".to_string()]
    );
}
