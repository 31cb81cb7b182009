//! Waits that count everyone: all the time a workload spent pending, a workload still pending
//! at the end counted with its wait so far, in the report, its table and `--compare`.

use std::path::Path;
use std::process::Command;

use wasq::sim::{Limits, Report, Scenario, Simulation};

use super::plugins::built;

/// One ClusterQueue `team` with `cpu` cores and a LocalQueue `team` in namespace `default`.
fn queue(cpu: u32) -> String {
    format!(
        "apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: default}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: team}}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources:
      - {{name: cpu, nominalQuota: {cpu}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{namespace: default, name: team}}
spec: {{clusterQueue: team}}
"
    )
}

/// A Workload in LocalQueue `team`: `cpu` cores, arriving at `arrival`, running `duration`,
/// owned by a job of `kind` when given.
fn workload(name: &str, cpu: u32, arrival: &str, duration: &str, kind: Option<&str>) -> String {
    let owner = kind.map_or(String::new(), |kind| {
        format!(
            "  ownerReferences:
  - {{apiVersion: kubeflow.org/v1, kind: {kind}, name: {name}, uid: u-{name}, controller: true}}
"
        )
    });
    format!(
        "---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  namespace: default
  name: {name}
  annotations: {{sim.wasq.dev/arrival: {arrival}, sim.wasq.dev/duration: {duration}}}
{owner}spec:
  queueName: team
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

fn simulate(paths: &[std::path::PathBuf], limits: &Limits) -> Report {
    let scenario = Scenario::load(paths).expect("scenario loads");
    let mut sim = Simulation::new(scenario);
    sim.run(limits, None);
    sim.report()
}

fn workload_report<'a>(report: &'a Report, name: &str) -> &'a wasq::sim::report::WorkloadReport {
    report
        .workloads
        .iter()
        .find(|w| w.name == name)
        .expect("workload reported")
}

#[test]
fn a_workload_never_admitted_counts_with_its_wait_so_far() {
    // 1 cpu: `small` runs 10 minutes; `too-big` (2 cpu) never fits and waits to the end.
    let yaml = queue(1)
        + &workload("small", 1, "0s", "10m", None)
        + &workload("too-big", 2, "1m", "10m", None);
    let dir = write(&yaml);
    let report = simulate(&[dir.path().join("scenario.yaml")], &Limits::default());
    assert_eq!(report.summary.duration_seconds, 600.0);
    let q = &report.summary.cluster_queues["team"];
    // small: 0 s; too-big: from 60 s to the end of the run at 600 s.
    assert_eq!(q.mean_wait_seconds, Some(270.0));
    assert_eq!(q.p95_wait_seconds, Some(540.0));
    assert_eq!((q.pending_at_end, q.never_admitted, q.admitted), (1, 1, 1));
    let big = workload_report(&report, "too-big");
    assert_eq!(
        (
            big.arrival_seconds,
            big.first_admitted_seconds,
            big.wait_seconds
        ),
        (Some(60.0), None, Some(540.0))
    );
    assert!(
        big.last_pending_message
            .as_deref()
            .is_some_and(|m| m.contains("insufficient quota")),
        "{:?}",
        big.last_pending_message
    );
    assert_eq!(big.local_queue.as_deref(), Some("default/team"));
    // A finished workload keeps the admission it held, and says when it finished.
    let small = workload_report(&report, "small");
    assert_eq!(small.state, "finished");
    assert_eq!(small.finished_seconds, Some(600.0));
    assert_eq!(
        small
            .admission
            .as_ref()
            .expect("admission kept")
            .pod_set_assignments[0]
            .flavors["cpu"],
        "default"
    );
    let table = report.to_table(10);
    assert!(table.contains("pending"), "{table}");
}

#[test]
fn a_preempted_workload_waits_from_its_eviction_until_admitted_again() {
    // research-sweep is admitted at 0 s, preempted at 300 s by prod-release (which reclaims
    // its nominal quota) and admitted again when prod-release finishes at 1,500 s.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/reclaim-borrowed-quota.yaml");
    let report = simulate(&[path], &Limits::default());
    let sweep = workload_report(&report, "research-sweep");
    assert_eq!(sweep.wait_seconds, Some(1200.0));
    assert_eq!(sweep.first_admitted_seconds, Some(0.0));
    assert_eq!(
        sweep.evictions,
        [("InCohortReclamation".to_string(), 1)].into()
    );
    let research = &report.summary.cluster_queues["research"];
    // research-sweep 1,200 s, research-notebook 0 s.
    assert_eq!(research.mean_wait_seconds, Some(600.0));
    assert_eq!(research.p95_wait_seconds, Some(1200.0));
    assert_eq!((research.pending_at_end, research.never_admitted), (0, 0));
}

#[test]
fn each_admitted_event_carries_the_admission_it_made() {
    // On racks: the events alone say which flavor and which nodes each admission took.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tas-racks.yaml");
    let report = simulate(&[path], &Limits::default());
    let admitted: Vec<_> = report
        .events
        .iter()
        .filter(|e| e.kind == wasq::sim::EventType::Admitted)
        .collect();
    assert!(!admitted.is_empty());
    for e in &admitted {
        let a = e.admission.as_ref().expect("an Admitted event's admission");
        let ps = &a.pod_set_assignments[0];
        assert!(ps.count > 0 && !ps.flavors.is_empty(), "{e:?}");
        assert!(
            ps.topology_assignment.is_some(),
            "a TAS admission's nodes: {e:?}"
        );
        // The last admission of a workload is the one its record keeps.
        let last = report
            .events
            .iter()
            .rfind(|l| l.kind == wasq::sim::EventType::Admitted && l.workload == e.workload)
            .expect("itself at least");
        let name = e.workload.split_once('/').map_or(&*e.workload, |(_, n)| n);
        assert_eq!(
            workload_report(&report, name).admission,
            last.admission,
            "{}",
            e.workload
        );
    }
    // Only admissions carry one, and the JSON writes it only there.
    assert!(
        report
            .events
            .iter()
            .all(|e| e.admission.is_some() == (e.kind == wasq::sim::EventType::Admitted))
    );
    let json = serde_json::to_value(&report.events).expect("events serialize");
    let first = json
        .as_array()
        .expect("a list")
        .iter()
        .find(|e| e["type"] == "Admitted")
        .expect("an admission");
    assert!(first["admission"]["podSetAssignments"][0]["topologyAssignment"]["slices"].is_array());
}

fn wasq() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wasq"))
}

#[test]
fn compare_shows_a_policy_that_starves_a_workload_as_worse() {
    // One core. A one-minute notebook arrives with the first of ten five-minute batch jobs
    // (one every 30 s); the run stops at 590 s. Kueue's order runs the notebook second;
    // demote-notebooks puts it behind every batch job, so it never runs. Counting admitted
    // workloads only, up to their first admission (as before), demote-notebooks looked better:
    // 135 s (job-0, job-1) against 210 s (job-0, job-1, the notebook).
    let mut yaml = queue(1) + &workload("notebook", 1, "0s", "1m", Some("Notebook"));
    for k in 0..10 {
        yaml += &workload(&format!("job-{k}"), 1, &format!("{}s", 30 * k), "5m", None);
    }
    let dir = write(&yaml);
    let out = wasq()
        .args([
            "simulate",
            "--output",
            "json",
            "--until",
            "590s",
            "--plugins",
        ])
        .arg(&built().plugins)
        .args(["--compare", "ordering=builtin", "ordering=demote-notebooks"])
        .arg(dir.path().join("scenario.yaml"))
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let team = |side: &str| &json[side]["clusterQueues"]["team"];
    let mean = |side: &str| team(side)["meanWaitSeconds"].as_f64().expect("mean wait");
    // Built-in: job-0 0 s, the notebook 300 s, job-1 330 s (admitted at 360 s), jobs 2-9
    // pending from 30k s to 590 s: 3,400 s; 11 workloads.
    assert_eq!(mean("a"), 366.364);
    // demote-notebooks: job-0 0 s, job-1 270 s, jobs 2-9 3,400 s, the notebook 590 s.
    assert_eq!(mean("b"), 387.273);
    assert!(mean("b") > mean("a"), "the starving policy is worse");
    assert_eq!(team("a")["pendingAtEnd"], 8);
    assert_eq!(team("b")["pendingAtEnd"], 9);
    assert_eq!(json["diff"]["clusterQueues"]["team"]["pendingAtEnd"], 1);
}
