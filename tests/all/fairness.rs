//! The fairness report (`fairness` in `wasq simulate`'s report) and `wasq simulate --compare`.

use std::path::Path;
use std::process::Command;

use wasq::sim::fairness::jain;
use wasq::sim::{Limits, Report, Scenario, Simulation};

use super::plugins::built;

/// A cohort `pool` of two ClusterQueues, `team-a` and `team-b` (6 cpu each), each with a
/// LocalQueue of its name in namespace `default`, plus `extra` YAML documents.
fn cohort(weight_a: &str, extra: &str) -> String {
    let mut yaml = String::from(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: default}\n",
    );
    for (team, weight) in [("team-a", weight_a), ("team-b", "1")] {
        yaml.push_str(&format!(
            "---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {team}}}
spec:
  cohortName: pool
  namespaceSelector: {{}}
  fairSharing: {{weight: {weight}}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources:
      - {{name: cpu, nominalQuota: 6}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{namespace: default, name: {team}}}
spec: {{clusterQueue: {team}}}
"
        ));
    }
    yaml.push_str(extra);
    yaml
}

/// A Workload document: `cpu` cores in `queue`, arriving at `arrival`, running for `duration`
/// (forever when empty).
fn workload(name: &str, queue: &str, cpu: u32, arrival: &str, duration: &str) -> String {
    let mut annotations = format!("sim.wasq.dev/arrival: {arrival}");
    if !duration.is_empty() {
        annotations.push_str(&format!(", sim.wasq.dev/duration: {duration}"));
    }
    format!(
        "---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  namespace: default
  name: {name}
  annotations: {{{annotations}}}
spec:
  queueName: {queue}
  podSets:
  - name: main
    count: 1
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: c
          image: pause
          resources:
            requests: {{cpu: '{cpu}'}}
"
    )
}

fn write(yaml: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("scenario.yaml"), yaml).expect("write scenario");
    dir
}

fn simulate(yaml: &str) -> Report {
    let dir = write(yaml);
    let scenario = Scenario::load(&[dir.path().join("scenario.yaml")]).expect("scenario loads");
    let mut sim = Simulation::new(scenario);
    sim.run(&Limits::default(), None);
    sim.report()
}

fn share(report: &Report, cq: &str) -> (f64, f64, Option<f64>) {
    let r = &report.fairness.cluster_queues[cq].resources["default/cpu"];
    (r.share, r.entitlement, r.ratio)
}

#[test]
fn jains_index_is_exact() {
    assert_eq!(jain(&[]), None);
    assert_eq!(jain(&[1.0, 1.0, 1.0]), Some(1.0));
    assert_eq!(jain(&[2.0, 0.0]), Some(0.5));
    assert_eq!(jain(&[3.0, 0.0, 0.0]), Some(1.0 / 3.0));
    // (1 + 2)² / (2 · (1 + 4)) = 0.9
    assert!((jain(&[1.0, 2.0]).expect("values") - 0.9).abs() < 1e-12);
    assert_eq!(jain(&[0.0, 0.0]), Some(1.0), "nobody got anything: equally");
}

#[test]
fn one_team_holding_the_whole_cohort_halves_jains_index() {
    // team-a takes all 12 cpu for 10m (borrowing team-b's 6); team-b's workload arrives at 1s
    // and waits until team-a's finishes. The run ends at 10m when team-b is admitted.
    let report = simulate(&cohort(
        "1",
        &(workload("a-big", "team-a", 12, "0s", "10m") + &workload("b", "team-b", 6, "1s", "")),
    ));
    assert_eq!(report.summary.duration_seconds, 600.0);
    let tree = &report.fairness.trees["pool"];
    assert_eq!(tree.cluster_queues, ["team-a", "team-b"]);
    assert_eq!(tree.capacity["default/cpu"], 12.0);
    assert_eq!(share(&report, "team-a"), (1.0, 0.5, Some(2.0)));
    assert_eq!(share(&report, "team-b"), (0.0, 0.5, Some(0.0)));
    // ratios (2, 0): (2 + 0)² / (2 · 4)
    assert_eq!(tree.jain["default/cpu"], 0.5);
    assert_eq!(tree.jain_local_queues["default/cpu"], 0.5);
    assert!(report.fairness.preemptions.is_empty());
    // The share over time: every change, the start and the end.
    let samples: Vec<(f64, f64, f64)> = report
        .fairness
        .samples
        .iter()
        .map(|s| {
            (
                s.time,
                s.shares["team-a"]["default/cpu"],
                s.shares["team-b"]["default/cpu"],
            )
        })
        .collect();
    assert_eq!(samples, [(0.0, 1.0, 0.0), (600.0, 0.0, 0.5)]);
}

#[test]
fn frequent_changes_are_sampled_at_evenly_spaced_instants() {
    // 60 one-cpu workloads, one every 10s, each running 5s: the usage changes at 120 instants
    // (0s, 5s, ..., 595s), more than the 100 samples kept.
    let extra: String = (0..60)
        .map(|i| {
            workload(
                &format!("w{i:02}"),
                "team-a",
                1,
                &format!("{}s", i * 10),
                "5s",
            )
        })
        .collect();
    let report = simulate(&cohort("1", &extra));
    assert_eq!(report.summary.duration_seconds, 595.0);
    let samples = &report.fairness.samples;
    assert_eq!(samples.len(), wasq::sim::fairness::MAX_SAMPLES);
    assert_eq!(samples[0].time, 0.0);
    assert_eq!(samples[99].time, 595.0);
    for pair in samples.windows(2) {
        let step = pair[1].time - pair[0].time;
        assert!((step - 595.0 / 99.0).abs() < 0.002, "{step}");
    }
    let one = (1.0f64 / 12.0 * 1e6).round() / 1e6;
    for s in samples {
        let share = s.shares["team-a"]["default/cpu"];
        assert!(share == 0.0 || share == one, "{share} at {}", s.time);
        assert!(!s.shares.contains_key("team-b"), "no demand, no samples");
    }
    // Held half the time: 1/12 × 300 / 595.
    let (share, entitlement, _) = share(&report, "team-a");
    assert_eq!(share, ((300.0 / 595.0 / 12.0) * 1e6f64).round() / 1e6);
    assert_eq!(entitlement, 1.0);
}

#[test]
fn equal_weights_and_equal_usage_are_perfectly_fair() {
    let report = simulate(&cohort(
        "1",
        &(workload("a", "team-a", 6, "0s", "10m") + &workload("b", "team-b", 6, "0s", "10m")),
    ));
    assert_eq!(share(&report, "team-a"), (0.5, 0.5, Some(1.0)));
    assert_eq!(share(&report, "team-b"), (0.5, 0.5, Some(1.0)));
    assert_eq!(report.fairness.trees["pool"].jain["default/cpu"], 1.0);
    let lq = &report.fairness.local_queues["default/team-a"];
    assert_eq!(lq.cluster_queue.as_deref(), Some("team-a"));
    assert_eq!(lq.resources["default/cpu"].share, 0.5);
    assert_eq!(lq.resources["default/cpu"].entitlement, 0.5);
}

#[test]
fn the_share_is_time_weighted() {
    // team-a holds all 12 cpu for the first 10m, team-b for the next 10m: half each.
    let report = simulate(&cohort(
        "1",
        &(workload("a", "team-a", 12, "0s", "10m") + &workload("b", "team-b", 12, "1s", "10m")),
    ));
    assert_eq!(report.summary.duration_seconds, 1200.0);
    assert_eq!(share(&report, "team-a"), (0.5, 0.5, Some(1.0)));
    assert_eq!(share(&report, "team-b"), (0.5, 0.5, Some(1.0)));
    assert_eq!(report.fairness.trees["pool"].jain["default/cpu"], 1.0);
}

#[test]
fn entitlement_follows_weights() {
    // team-a weighs 2, team-b 1: entitled to 2/3 and 1/3 of the cohort's 12 cpu. Both use 6,
    // so the ratios are 0.75 and 1.5: (2.25)² / (2 · (0.5625 + 2.25)) = 0.9.
    let report = simulate(&cohort(
        "2",
        &(workload("a", "team-a", 6, "0s", "10m") + &workload("b", "team-b", 6, "0s", "10m")),
    ));
    let a = &report.fairness.cluster_queues["team-a"];
    assert_eq!(a.weight, 2.0);
    assert_eq!(share(&report, "team-a"), (0.5, 0.666667, Some(0.75)));
    assert_eq!(share(&report, "team-b"), (0.5, 0.333333, Some(1.5)));
    assert_eq!(report.fairness.trees["pool"].jain["default/cpu"], 0.9);
}

#[test]
fn only_queues_with_demand_are_entitled() {
    // team-b never has a workload: team-a is entitled to the whole cohort and Jain's index is
    // over team-a alone.
    let report = simulate(&cohort("1", &workload("a", "team-a", 6, "0s", "10m")));
    assert!(!report.fairness.cluster_queues["team-b"].demand);
    assert_eq!(share(&report, "team-a"), (0.5, 1.0, Some(0.5)));
    assert_eq!(share(&report, "team-b"), (0.0, 0.0, None));
    assert_eq!(report.fairness.trees["pool"].jain["default/cpu"], 1.0);
    // No samples for a queue without demand.
    assert!(
        report
            .fairness
            .samples
            .iter()
            .all(|s| !s.shares.contains_key("team-b"))
    );
}

/// The cohort of [`cohort`] with a second LocalQueue `team-a-two` of `weight` for team-a:
/// a-one (team-a) and b hold 6 cpu each for 10m; a-two's workload cannot fit meanwhile.
fn two_local_queues(weight: &str) -> Report {
    let extra = format!(
        "---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{namespace: default, name: team-a-two}}
spec: {{clusterQueue: team-a, fairSharing: {{weight: {weight}}}}}
"
    ) + &workload("a-one", "team-a", 6, "0s", "10m")
        + &workload("b", "team-b", 6, "0s", "10m")
        + &workload("a-two", "team-a-two", 6, "1s", "");
    let report = simulate(&cohort("1", &extra));
    assert_eq!(report.summary.duration_seconds, 600.0);
    report
}

fn lq_share(report: &Report, lq: &str) -> (f64, f64, Option<f64>) {
    let r = &report.fairness.local_queues[lq].resources["default/cpu"];
    (r.share, r.entitlement, r.ratio)
}

#[test]
fn local_queues_split_their_cluster_queues_entitlement() {
    // team-a's two LocalQueues split team-a's half of the cohort.
    let report = two_local_queues("1");
    assert_eq!(lq_share(&report, "default/team-a"), (0.5, 0.25, Some(2.0)));
    assert_eq!(
        lq_share(&report, "default/team-a-two"),
        (0.0, 0.25, Some(0.0))
    );
    assert_eq!(lq_share(&report, "default/team-b"), (0.5, 0.5, Some(1.0)));
    // LocalQueue ratios (2, 0, 1): 9 / (3 · 5) = 0.6; the ClusterQueues are even.
    let tree = &report.fairness.trees["pool"];
    assert_eq!(tree.jain_local_queues["default/cpu"], 0.6);
    assert_eq!(tree.jain["default/cpu"], 1.0);
    let table = report.to_table(10);
    assert!(table.contains("default/team-a-two"), "{table}");
}

#[test]
fn local_queues_split_by_their_weights() {
    // team-a-two weighs 3, team-a 1: a quarter and three quarters of team-a's half.
    let report = two_local_queues("3");
    assert_eq!(
        report.fairness.local_queues["default/team-a-two"].weight,
        3.0
    );
    assert_eq!(lq_share(&report, "default/team-a"), (0.5, 0.125, Some(4.0)));
    assert_eq!(
        lq_share(&report, "default/team-a-two"),
        (0.0, 0.375, Some(0.0))
    );
    // Ratios (4, 0, 1): 25 / (3 · 17).
    let jain = report.fairness.trees["pool"].jain_local_queues["default/cpu"];
    assert_eq!(jain, (25.0f64 / 51.0 * 1e6).round() / 1e6);
}

#[test]
fn fair_sharing_preemptions_are_counted() {
    // Kueue's fair sharing on a cohort of three 3-cpu ClusterQueues: a holds 3, b 6 (borrowing
    // c's 3), c nothing. At 1m a's 1-cpu workload would make a borrow: b's share (3 borrowed)
    // stays at least a's (1) after losing one workload, so one b workload is preempted,
    // InCohortFairSharing.
    let mut yaml = String::from(
        "apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
fairSharing:
  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
",
    );
    for team in ["a", "b", "c"] {
        yaml.push_str(&format!(
            "---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {team}}}
spec:
  cohortName: all
  namespaceSelector: {{}}
  preemption: {{withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources:
      - {{name: cpu, nominalQuota: 3}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{namespace: default, name: {team}}}
spec: {{clusterQueue: {team}}}
"
        ));
    }
    for i in 1..=3 {
        yaml.push_str(&workload(&format!("a{i}"), "a", 1, "0s", ""));
    }
    for i in 1..=6 {
        yaml.push_str(&workload(&format!("b{i}"), "b", 1, "0s", ""));
    }
    yaml.push_str(&workload("a-incoming", "a", 1, "1m", ""));
    let report = simulate(&yaml);
    assert_eq!(
        report.fairness.preemptions,
        [("InCohortFairSharing".to_string(), 1)].into()
    );
    assert_eq!(report.summary.duration_seconds, 60.0);
    // Over the minute: a held 3 of 9 cpu, b 6; c had no workload, so a and b are entitled to
    // half each. Ratios 2/3 and 4/3: 4 / (2 · 20/9) = 0.9.
    let cq = |name: &str| {
        let r = &report.fairness.cluster_queues[name].resources["default/cpu"];
        (r.share, r.entitlement)
    };
    assert_eq!(cq("a"), (0.333333, 0.5));
    assert_eq!(cq("b"), (0.666667, 0.5));
    assert_eq!(cq("c"), (0.0, 0.0));
    assert_eq!(report.fairness.trees["all"].jain["default/cpu"], 0.9);
    // The last sample is the end of the run: a 4 of 9, b 5 of 9.
    let last = report.fairness.samples.last().expect("samples");
    assert_eq!(last.time, 60.0);
    assert_eq!(last.shares["a"]["default/cpu"], 0.444444);
    assert_eq!(last.shares["b"]["default/cpu"], 0.555556);
}

#[test]
fn preemptions_are_counted_by_reason() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios/preempt-reclaim-from-borrower.yaml");
    let scenario = Scenario::load(&[path]).expect("scenario loads");
    let mut sim = Simulation::new(scenario);
    sim.run(&Limits::default(), None);
    let report = sim.report();
    assert_eq!(
        report.fairness.preemptions,
        [("InCohortReclamation".to_string(), 1)].into()
    );
    let table = report.to_table(10);
    assert!(
        table.contains("preemptions by reason: InCohortReclamation 1"),
        "{table}"
    );
    assert!(table.contains("tree cohort: Jain's index"), "{table}");
}

fn wasq() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wasq"))
}

fn compare(a: &str, b: &str, scenario: &Path, output: &str) -> std::process::Output {
    wasq()
        .args(["simulate", "--output", output, "--plugins"])
        .arg(&built().plugins)
        .args(["--compare", a, b])
        .arg(scenario)
        .output()
        .expect("runs")
}

#[test]
fn compare_reports_both_runs_and_what_differs() {
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plugin-scenarios/min-runtime.yaml");
    let out = compare(
        "preemption=builtin",
        "ordering=builtin,preemption=min-runtime",
        &scenario,
        "json",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["a"]["bindings"], "preemption=builtin");
    assert_eq!(
        json["b"]["bindings"],
        "ordering=builtin,preemption=min-runtime"
    );
    for side in ["a", "b"] {
        for key in [
            "utilisationPercent",
            "clusterQueues",
            "localQueues",
            "preemptions",
            "jain",
        ] {
            assert!(json[side].get(key).is_some(), "{side}.{key}: {json}");
        }
        assert_eq!(json[side]["preemptions"]["InClusterQueue"], 1);
        assert!(json[side]["clusterQueues"]["team"]["meanWaitSeconds"].is_number());
        assert!(json[side]["localQueues"]["default/team-queue"]["p95WaitSeconds"].is_number());
    }
    // Built-in: long-train keeps running, fresh-train is preempted; min-runtime the reverse.
    let diff = &json["diff"];
    assert_eq!(diff["differingAdmissions"], 2, "{diff}");
    let differing: Vec<&str> = diff["admissions"]
        .as_array()
        .expect("admissions")
        .iter()
        .map(|d| d["workload"].as_str().expect("workload"))
        .collect();
    assert_eq!(differing, ["default/fresh-train", "default/long-train"]);
    let long = &diff["admissions"][1];
    assert_eq!(long["a"]["state"], "admitted");
    assert_eq!(long["a"]["clusterQueue"], "team");
    assert_eq!(
        long["a"]["admission"]["podSetAssignments"][0]["flavors"]["cpu"],
        "default"
    );
    assert_eq!(long["b"]["state"], "inadmissible");
    assert!(long["b"]["admission"].is_null());

    let table = compare(
        "preemption=builtin",
        "preemption=min-runtime",
        &scenario,
        "table",
    );
    assert!(table.status.success());
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.contains("A: preemption=builtin"), "{table}");
    assert!(table.contains("Admissions that differ (2):"), "{table}");
    assert!(table.contains("preemptions InClusterQueue"), "{table}");
}

#[test]
fn comparing_a_binding_with_itself_finds_no_difference() {
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plugin-scenarios/min-runtime.yaml");
    let out = compare(
        "preemption=min-runtime",
        "preemption=min-runtime",
        &scenario,
        "json",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["a"], json["b"]);
    let diff = &json["diff"];
    assert_eq!(diff["differingAdmissions"], 0);
    assert_eq!(diff["admissions"], serde_json::json!([]));
    for key in [
        "utilisationPercent",
        "clusterQueues",
        "localQueues",
        "preemptions",
        "jain",
    ] {
        assert_eq!(diff[key], serde_json::json!({}), "{key}");
    }
}

#[test]
fn compare_refuses_a_bad_binding() {
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plugin-scenarios/min-runtime.yaml");
    let out = wasq()
        .args([
            "simulate",
            "--compare",
            "ordering=builtin",
            "sorting=builtin",
        ])
        .arg(&scenario)
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown extension `sorting`"), "{err}");
}
