//! waitForPodsReady in the simulator, as Kueue's Configuration sets it (on by default in
//! v1beta2, 30 minutes): pods that are not ready within the timeout evict the workload
//! (`PodsReadyTimeout`), which is queued again after Kueue's backoff, and deactivated past the
//! requeue limit; `blockAdmission` holds further admissions until admitted workloads are ready.

use std::path::Path;

use wasq::api::load::load_str;
use wasq::sim::report::Report;
use wasq::sim::{EventType, Limits, Scenario, Simulation};

/// A ClusterQueue of 2 cpu, the Configuration's `waitForPodsReady` (YAML, or none) and the
/// given workloads.
fn scenario(wait_for_pods_ready: Option<&str>, workloads: &str) -> String {
    let config = wait_for_pods_ready
        .map(|w| {
            format!(
                "---
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
waitForPodsReady: {w}
"
            )
        })
        .unwrap_or_default();
    format!(
        "apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: default}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: cq}}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{{name: default, resources: [{{name: cpu, nominalQuota: 2}}]}}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{namespace: ns, name: lq}}
spec: {{clusterQueue: cq}}
{config}{workloads}"
    )
}

fn workload(name: &str, created: &str, annotations: &str) -> String {
    format!(
        "---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  namespace: ns
  name: {name}
  creationTimestamp: \"2026-01-01T00:00:{created}Z\"
  annotations: {{{annotations}}}
spec:
  queueName: lq
  podSets: [{{name: main, count: 1, template: {{spec: {{containers: [{{name: c, resources: {{requests: {{cpu: 1}}}}}}]}}}}}}]
"
    )
}

fn run(text: &str, until_seconds: i64) -> Report {
    let m = load_str(Path::new("ready.yaml"), text).unwrap_or_else(|e| panic!("loads:\n{e}"));
    let mut sim = Simulation::new(Scenario::from_manifests(m).expect("scenario"));
    sim.run(
        &Limits {
            until: Some(until_seconds * 1000),
            ..Limits::default()
        },
        None,
    );
    sim.report()
}

/// `(seconds, event, reason)` of the events of `workload`, reservations left out (no check
/// here: each is admitted at the instant it reserves).
fn events_of(r: &Report, workload: &str) -> Vec<(f64, EventType, String)> {
    r.events
        .iter()
        .filter(|e| e.workload == workload && e.kind != EventType::QuotaReserved)
        .map(|e| (e.time, e.kind, e.reason.clone().unwrap_or_default()))
        .collect()
}

fn ev(t: f64, kind: EventType, reason: &str) -> (f64, EventType, String) {
    (t, kind, reason.to_string())
}

const TIMEOUT: &str = "PodsReadyTimeout: Exceeded the PodsReady timeout ns/w";

#[test]
fn pods_never_ready_are_evicted_after_the_timeout_and_requeued_with_backoff() {
    let text = scenario(
        Some("{timeout: 5m, requeuingStrategy: {backoffBaseSeconds: 10}}"),
        &workload("w", "00", "sim.wasq.dev/never-ready: \"true\""),
    );
    let r = run(&text, 700);
    assert_eq!(
        events_of(&r, "ns/w"),
        [
            ev(0.0, EventType::Admitted, ""),
            ev(300.0, EventType::Evicted, TIMEOUT),
            // Backoff 10 s, then 20 s: Kueue's base × 2^(n-1).
            ev(310.0, EventType::Admitted, ""),
            ev(610.0, EventType::Evicted, TIMEOUT),
            ev(630.0, EventType::Admitted, ""),
        ]
    );
}

#[test]
fn past_the_requeue_limit_the_workload_is_deactivated_and_its_quota_freed() {
    let text = scenario(
        Some("{timeout: 5m, requeuingStrategy: {backoffLimitCount: 1, backoffBaseSeconds: 10}}"),
        &workload("w", "00", "sim.wasq.dev/never-ready: \"true\""),
    );
    let r = run(&text, 3600);
    assert_eq!(
        events_of(&r, "ns/w"),
        [
            ev(0.0, EventType::Admitted, ""),
            ev(300.0, EventType::Evicted, TIMEOUT),
            ev(310.0, EventType::Admitted, ""),
            ev(
                610.0,
                EventType::Deactivated,
                "DeactivatedDueToRequeuingLimitExceeded: The workload is deactivated due to \
                 exceeding the maximum number of re-queuing retries"
            ),
        ]
    );
    assert_eq!(r.workloads[0].state, "deactivated");
}

#[test]
fn pods_ready_within_the_timeout_run_to_completion() {
    let text = scenario(
        Some("{timeout: 5m}"),
        &workload(
            "w",
            "00",
            "sim.wasq.dev/ready-after: 2m, sim.wasq.dev/duration: 10m",
        ),
    );
    let r = run(&text, 3600);
    assert_eq!(
        events_of(&r, "ns/w"),
        [
            ev(0.0, EventType::Admitted, ""),
            ev(120.0, EventType::PodsReady, ""),
            // Its 10 minutes run from the moment its pods are ready.
            ev(720.0, EventType::Finished, ""),
        ]
    );
}

#[test]
fn it_is_on_by_default_with_kueues_thirty_minutes_and_enable_false_turns_it_off() {
    let never = workload("w", "00", "sim.wasq.dev/never-ready: \"true\"");
    let r = run(&scenario(None, &never), 1900);
    assert_eq!(
        events_of(&r, "ns/w")[..2],
        [
            ev(0.0, EventType::Admitted, ""),
            ev(1800.0, EventType::Evicted, TIMEOUT)
        ]
    );
    let off = run(&scenario(Some("{enable: false}"), &never), 7200);
    assert_eq!(events_of(&off, "ns/w"), [ev(0.0, EventType::Admitted, "")]);
}

#[test]
fn block_admission_holds_admissions_until_admitted_pods_are_ready() {
    let workloads = format!(
        "{}{}",
        workload("w", "00", "sim.wasq.dev/ready-after: 2m"),
        workload("next", "01", "")
    );
    let admitted_at = |config: &str| {
        let r = run(&scenario(Some(config), &workloads), 600);
        r.events
            .iter()
            .find(|e| e.workload == "ns/next" && e.kind == EventType::Admitted)
            .map(|e| e.time)
    };
    assert_eq!(admitted_at("{timeout: 5m}"), Some(0.0));
    assert_eq!(
        admitted_at("{timeout: 5m, blockAdmission: true}"),
        Some(120.0)
    );
}

#[test]
fn a_workload_whose_pods_never_become_ready_does_not_finish() {
    // With a duration shorter than the timeout: its pods never ran, so it is evicted, not
    // finished; and no stale timer moves the clock past the last thing that happened.
    let text = scenario(
        Some("{timeout: 5m, requeuingStrategy: {backoffLimitCount: 0}}"),
        &workload(
            "w",
            "00",
            "sim.wasq.dev/never-ready: \"true\", sim.wasq.dev/duration: 1m",
        ),
    );
    let r = run(&text, 7200);
    assert_eq!(
        events_of(&r, "ns/w").last().map(|e| (e.0, e.1)),
        Some((300.0, EventType::Deactivated))
    );
    assert_eq!(r.summary.duration_seconds, 300.0);
}

#[test]
fn bad_settings_name_their_fields() {
    let bad = scenario(
        Some("{timeout: 0s, requeuingStrategy: {backoffBaseSeconds: -1}}"),
        "",
    );
    let errors = load_str(Path::new("ready.yaml"), &bad)
        .unwrap_err()
        .messages();
    assert_eq!(
        errors,
        [
            "ready.yaml doc 4: Configuration: waitForPodsReady.timeout: must be greater than 0",
            "ready.yaml doc 4: Configuration: waitForPodsReady.requeuingStrategy.backoffBaseSeconds: must be greater than or equal to 0",
        ]
    );
    let annotated = scenario(
        None,
        &workload("w", "00", "sim.wasq.dev/never-ready: maybe"),
    );
    let m = load_str(Path::new("ready.yaml"), &annotated).unwrap();
    assert_eq!(
        Scenario::from_manifests(m).unwrap_err().to_string(),
        r#"Workload ns/w: metadata.annotations.sim.wasq.dev/never-ready: "maybe" must be "true" or "false""#
    );
}

#[test]
fn an_evicted_workload_queues_behind_younger_ones_by_its_eviction_time() {
    // One cpu, taken by "old" (never ready); "young" waits. At the timeout old is evicted and,
    // with no backoff, queued at once: ordered by its eviction time it goes behind young
    // (Kueue's timestamp: Eviction), ordered by its creation time ahead of it.
    let workloads = format!(
        "{}{}",
        workload("old", "00", "sim.wasq.dev/never-ready: \"true\"").replace("cpu: 1}", "cpu: 2}"),
        workload("young", "01", "").replace("cpu: 1}", "cpu: 2}")
    );
    let first_after_eviction = |config: &str| {
        let r = run(&scenario(Some(config), &workloads), 400);
        r.events
            .iter()
            .find(|e| e.time >= 300.0 && e.kind == EventType::Admitted)
            .map(|e| e.workload.clone())
    };
    assert_eq!(
        first_after_eviction("{timeout: 5m, requeuingStrategy: {backoffBaseSeconds: 0}}"),
        Some("ns/young".to_string())
    );
    assert_eq!(
        first_after_eviction(
            "{timeout: 5m, requeuingStrategy: {timestamp: Creation, backoffBaseSeconds: 0}}"
        ),
        Some("ns/old".to_string())
    );
}
