//! What Kueue would report inactive — a ClusterQueue naming a missing ResourceFlavor, a
//! LocalQueue whose ClusterQueue does not exist — is reported as Kueue's status says, warned of
//! when the simulator loads, and an error with `--strict`.

use std::process::Command;

use wasq::sim::{Limits, Scenario, Simulation};

/// ClusterQueue `team` naming the missing flavor `typo-flavor`, its LocalQueue, a LocalQueue
/// pointing at the missing ClusterQueue `nowhere`, and one workload in each LocalQueue.
const SCENARIO: &str = "apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: typo-flavor
      resources:
      - {name: cpu, nominalQuota: 4}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: default, name: team}
spec: {clusterQueue: team}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: default, name: orphan}
spec: {clusterQueue: nowhere}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {namespace: default, name: in-team}
spec:
  queueName: team
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers:
        - {name: c, image: pause, resources: {requests: {cpu: '1'}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {namespace: default, name: in-orphan}
spec:
  queueName: orphan
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers:
        - {name: c, image: pause, resources: {requests: {cpu: '1'}}}
";

fn scenario_file() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("scenario.yaml"), SCENARIO).expect("write scenario");
    dir
}

#[test]
fn a_missing_flavor_or_cluster_queue_is_reported_as_kueue_does() {
    let dir = scenario_file();
    let scenario = Scenario::load(&[dir.path().join("scenario.yaml")]).expect("loads");
    let mut sim = Simulation::new(scenario);
    sim.run(&Limits::default(), None);
    let report = sim.report();
    let inactive: Vec<(&str, &str, &str, &str)> = report
        .summary
        .inactive
        .iter()
        .map(|o| (o.kind, o.name.as_str(), o.reason, o.message.as_str()))
        .collect();
    assert_eq!(
        inactive,
        [
            (
                "ClusterQueue",
                "team",
                "FlavorNotFound",
                "Can't admit new workloads: references missing ResourceFlavor(s): typo-flavor."
            ),
            (
                "LocalQueue",
                "default/orphan",
                "ClusterQueueDoesNotExist",
                "Can't submit new workloads to clusterQueue"
            ),
            (
                "LocalQueue",
                "default/team",
                "ClusterQueueIsInactive",
                "Can't submit new workloads to clusterQueue"
            ),
        ]
    );
    // Each workload says why it waits, in Kueue's words.
    let said = |name: &str| {
        report
            .workloads
            .iter()
            .find(|w| w.name == name)
            .and_then(|w| w.last_pending_message.clone())
    };
    assert_eq!(
        said("in-team").as_deref(),
        Some("ClusterQueue team is inactive")
    );
    assert_eq!(
        said("in-orphan").as_deref(),
        Some("ClusterQueue nowhere doesn't exist")
    );
    let table = report.to_table(10);
    assert!(
        table.contains("Inactive, as Kueue reports them:"),
        "{table}"
    );
}

#[test]
fn the_simulator_warns_of_inactive_objects_and_strict_refuses_them() {
    let dir = scenario_file();
    let path = dir.path().join("scenario.yaml");
    let run = |strict: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_wasq"));
        cmd.args(["simulate", "--output", "json"])
            .env("NO_COLOR", "1");
        if strict {
            cmd.arg("--strict");
        }
        cmd.arg(&path).output().expect("runs")
    };
    let warned = run(false);
    assert!(warned.status.success());
    let stderr = String::from_utf8_lossy(&warned.stderr);
    assert!(
        stderr.contains("WARN")
            && stderr.contains("ClusterQueue team is inactive (FlavorNotFound)")
            && stderr.contains("LocalQueue default/orphan is inactive (ClusterQueueDoesNotExist)"),
        "{stderr}"
    );
    let refused = run(true);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("--strict: 3 object(s) would be inactive in Kueue")
            && stderr.contains("references missing ResourceFlavor(s): typo-flavor")
            && stderr.contains("ClusterQueue nowhere doesn't exist"),
        "{stderr}"
    );
    assert!(refused.stdout.is_empty(), "no report when refused");
}
