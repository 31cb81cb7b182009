//! Admission checks in the simulator, Kueue's two-phase admission: quota reserved first, then
//! admitted once every applicable check is Ready; Retry evicts, releases the quota and queues
//! the workload again after the backoff; Rejected deactivates it; `onFlavors` limits a check to
//! the flavors it names. The seed's KubeRay manifests (ProvisioningRequest check) run as
//! written. Bad check configurations are reported or make the ClusterQueue inactive, as in
//! Kueue.

use std::path::{Path, PathBuf};

use wasq::api::load::load_str;
use wasq::sim::report::Report;
use wasq::sim::{EventType, Limits, Scenario, Simulation};

/// A ClusterQueue `cq` of 1 GPU on flavor `gpu` with the check `prov` (a ProvisioningRequest
/// check configured by `prov-config`, whose annotations and retry strategy are given).
fn provisioning(config_annotations: &str, retry: &str, workloads: &str) -> String {
    format!(
        "apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: gpu}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {{name: prov}}
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters: {{apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: prov-config}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata:
  name: prov-config
  annotations: {{{config_annotations}}}
spec:
  provisioningClassName: queued-provisioning.gke.io
  managedResources: [nvidia.com/gpu]
  {retry}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: cq}}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{{name: gpu, resources: [{{name: nvidia.com/gpu, nominalQuota: 1}}]}}]
  admissionChecksStrategy:
    admissionChecks: [{{name: prov}}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{namespace: ns, name: lq}}
spec: {{clusterQueue: cq}}
{workloads}"
    )
}

/// A Workload of one pod asking for `gpu` GPUs.
fn workload(name: &str, gpu: u32, annotations: &str) -> String {
    format!(
        "---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  namespace: ns
  name: {name}
  annotations: {{{annotations}}}
spec:
  queueName: lq
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers:
        - name: c
          resources: {{requests: {{nvidia.com/gpu: {gpu}}}, limits: {{nvidia.com/gpu: {gpu}}}}}
"
    )
}

fn simulation(text: &str) -> Simulation {
    let m = load_str(Path::new("checks.yaml"), text).unwrap_or_else(|e| panic!("loads:\n{e}"));
    Simulation::new(Scenario::from_manifests(m).expect("scenario"))
}

fn run(text: &str) -> Report {
    let mut sim = simulation(text);
    sim.run(&Limits::default(), None);
    sim.report()
}

/// `(seconds, event, workload, reason)` of every event.
fn events(r: &Report) -> Vec<(f64, EventType, String, String)> {
    r.events
        .iter()
        .map(|e| {
            (
                e.time,
                e.kind,
                e.workload.clone(),
                e.reason.clone().unwrap_or_default(),
            )
        })
        .collect()
}

fn ev(t: f64, kind: EventType, wl: &str, reason: &str) -> (f64, EventType, String, String) {
    (t, kind, wl.to_string(), reason.to_string())
}

#[test]
fn a_check_ready_after_a_delay_admits_the_reserved_workload() {
    // A booking that would expire after 20 minutes is moot once admitted: it neither evicts
    // the workload nor keeps the clock running past its end.
    let text = provisioning(
        "sim.wasq.dev/provisioning-delay: 90s, sim.wasq.dev/booking-expires: 20m",
        "",
        &workload("train", 1, "sim.wasq.dev/duration: 10m"),
    );
    let r = run(&text);
    assert_eq!(r.summary.duration_seconds, 690.0);
    let ready = r#"prov: Ready (Provisioning Request "train-prov-1" was provisioned (simulated))"#;
    assert_eq!(
        events(&r),
        [
            ev(0.0, EventType::QuotaReserved, "ns/train", ""),
            ev(90.0, EventType::AdmissionCheck, "ns/train", ready),
            ev(90.0, EventType::Admitted, "ns/train", ""),
            ev(690.0, EventType::Finished, "ns/train", ""),
        ]
    );
    let q = &r.summary.cluster_queues["cq"];
    assert_eq!(
        (
            q.mean_wait_for_quota_seconds,
            q.mean_wait_for_checks_seconds
        ),
        (Some(0.0), Some(90.0))
    );
    // The podSet updates Kueue's ProvisioningRequest controller gives a provisioned request.
    let check = &r.workloads[0].admission_checks[0];
    assert_eq!((check.name.as_str(), check.state), ("prov", "Ready"));
    let main = &check.pod_set_updates["main"];
    assert_eq!(
        main["autoscaling.x-k8s.io/consume-provisioning-request"],
        "train-prov-1"
    );
    assert_eq!(
        main["autoscaling.x-k8s.io/provisioning-class-name"],
        "queued-provisioning.gke.io"
    );
}

#[test]
fn a_request_failing_twice_is_retried_with_backoff_releasing_quota_between_attempts() {
    let text = provisioning(
        "sim.wasq.dev/provisioning-delay: 30s, sim.wasq.dev/provisioning-failures: \"2\"",
        "retryStrategy: {backoffBaseSeconds: 10, backoffMaxSeconds: 1800}",
        &workload("train", 1, "sim.wasq.dev/duration: 10m"),
    );
    let mut sim = simulation(&text);
    // Between the first failure (30 s) and the requeue after 10 s of backoff (40 s), the
    // workload holds no quota.
    sim.run(
        &Limits {
            until: Some(35_000),
            ..Limits::default()
        },
        None,
    );
    let cq = sim.cluster().cq_by_name["cq"];
    assert!(sim.cluster().admitted_rows(cq).is_empty());
    sim.run(&Limits::default(), None);
    let r = sim.report();
    let retry = |n: u32| {
        format!(
            "AdmissionCheck: Evicted due to AdmissionCheck in Retry state: \"prov\" (Retrying after failure: the simulated autoscaler failed attempt {n} of 2)"
        )
    };
    let got: Vec<(f64, EventType, String)> = events(&r)
        .into_iter()
        .filter(|e| e.1 != EventType::AdmissionCheck)
        .map(|(t, k, _, reason)| (t, k, reason))
        .collect();
    assert_eq!(
        got,
        [
            (0.0, EventType::QuotaReserved, String::new()),
            (30.0, EventType::Evicted, retry(1)),
            // Backoff 10 s (base × 2⁰), then 20 s (base × 2¹).
            (40.0, EventType::QuotaReserved, String::new()),
            (70.0, EventType::Evicted, retry(2)),
            (90.0, EventType::QuotaReserved, String::new()),
            (120.0, EventType::Admitted, String::new()),
            (720.0, EventType::Finished, String::new()),
        ]
    );
    let check = &r.workloads[0].admission_checks[0];
    assert_eq!((check.state, check.retry_count), ("Ready", Some(2)));
    assert_eq!(
        check.pod_set_updates["main"]["autoscaling.x-k8s.io/consume-provisioning-request"],
        "train-prov-3",
        "the third attempt's request"
    );
}

#[test]
fn a_rejected_check_deactivates_the_workload_and_frees_its_quota() {
    // No retries: the first failure is final.
    let text = provisioning(
        "sim.wasq.dev/provisioning-delay: 30s, sim.wasq.dev/provisioning-failures: \"1\"",
        "retryStrategy: {backoffLimitCount: 0}",
        &workload("train", 1, "sim.wasq.dev/duration: 10m"),
    );
    let mut sim = simulation(&text);
    sim.run(&Limits::default(), None);
    let r = sim.report();
    assert_eq!(
        events(&r).last().unwrap(),
        &ev(
            30.0,
            EventType::Deactivated,
            "ns/train",
            r#"AdmissionCheckRejected: Deactivated due to AdmissionCheck in Rejected state: "prov" (the simulated autoscaler failed attempt 1 of 1)"#
        )
    );
    assert_eq!(r.workloads[0].state, "deactivated");
    let cq = sim.cluster().cq_by_name["cq"];
    assert!(sim.cluster().admitted_rows(cq).is_empty());
    assert!(
        !sim.scheduler
            .is_pending(sim.cluster().find_workload("ns/train").expect("registered"))
    );
}

#[test]
fn a_check_on_other_flavors_does_not_apply() {
    // Two flavors; the check applies to `spot` only. The first workload fits `on-demand` and is
    // admitted at once; the second gets `spot` and waits 60 s for the check.
    let text = "apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: on-demand}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: spot}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: spot-capacity
  annotations: {sim.wasq.dev/check-delay: 60s}
spec: {controllerName: example.com/spot-capacity}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - {name: on-demand, resources: [{name: cpu, nominalQuota: 1}]}
    - {name: spot, resources: [{name: cpu, nominalQuota: 1}]}
  admissionChecksStrategy:
    admissionChecks: [{name: spot-capacity, onFlavors: [spot]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: ns, name: lq}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {namespace: ns, name: a, creationTimestamp: \"2026-01-01T00:00:00Z\"}
spec:
  queueName: lq
  podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c, resources: {requests: {cpu: 1}}}]}}}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {namespace: ns, name: b, creationTimestamp: \"2026-01-01T00:00:01Z\"}
spec:
  queueName: lq
  podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c, resources: {requests: {cpu: 1}}}]}}}]
";
    let r = run(text);
    let admitted: Vec<(f64, String)> = r
        .events
        .iter()
        .filter(|e| e.kind == EventType::Admitted)
        .map(|e| (e.time, e.workload.clone()))
        .collect();
    assert_eq!(
        admitted,
        [(0.0, "ns/a".to_string()), (60.0, "ns/b".to_string())]
    );
    let a = r.workloads.iter().find(|w| w.name == "a").unwrap();
    assert!(a.admission_checks.is_empty(), "no check on on-demand");
    let b = r.workloads.iter().find(|w| w.name == "b").unwrap();
    assert_eq!(
        (
            b.admission_checks[0].name.as_str(),
            b.admission_checks[0].state
        ),
        ("spot-capacity", "Ready")
    );
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

#[test]
fn the_kuberay_guides_manifests_reserve_at_once_and_admit_once_provisioned() {
    let scenario = Scenario::load(&[example("kuberay-rayjob-gpu.yaml")]).expect("loads");
    let first = scenario.cluster.workloads[0].key.clone();
    let second = scenario.cluster.workloads[1].key.clone();
    let mut sim = Simulation::new(scenario);
    sim.run(&Limits::default(), None);
    let r = sim.report();
    let kinds: Vec<(f64, EventType, String)> = r
        .events
        .iter()
        .filter(|e| e.kind != EventType::AdmissionCheck && e.kind != EventType::Inadmissible)
        .map(|e| (e.time, e.kind, e.workload.clone()))
        .collect();
    assert_eq!(
        kinds,
        [
            (0.0, EventType::QuotaReserved, first.clone()),
            (90.0, EventType::Admitted, first.clone()),
            (990.0, EventType::Finished, first.clone()),
            (990.0, EventType::QuotaReserved, second.clone()),
            (1080.0, EventType::Admitted, second.clone()),
            (1980.0, EventType::Finished, second.clone()),
        ]
    );
    // Only the GPU podSet is part of the request (managedResources: nvidia.com/gpu).
    let w = r
        .workloads
        .iter()
        .find(|w| first.ends_with(&w.name))
        .unwrap();
    let updates: Vec<&String> = w.admission_checks[0].pod_set_updates.keys().collect();
    assert_eq!(updates, ["worker-group"]);
}

fn load_errors(text: &str) -> Vec<String> {
    match load_str(Path::new("bad.yaml"), text) {
        Ok(_) => panic!("should not load"),
        Err(e) => e.messages(),
    }
}

#[test]
fn bad_check_configurations_are_refused_or_make_the_queue_inactive() {
    // A negative backoff and a check named twice are refused at load, each at its field.
    let negative = provisioning("", "retryStrategy: {backoffBaseSeconds: -1}", "");
    assert_eq!(
        load_errors(&negative),
        [
            "bad.yaml doc 3: ProvisioningRequestConfig prov-config: spec.retryStrategy.backoffBaseSeconds: Invalid value: -1: must be greater than or equal to 0"
        ]
    );
    let twice = provisioning("", "", "").replace(
        "admissionChecks: [{name: prov}]",
        "admissionChecks: [{name: prov}, {name: prov}]",
    );
    assert_eq!(
        load_errors(&twice),
        [
            r#"bad.yaml doc 4: ClusterQueue cq: spec.admissionChecksStrategy.admissionChecks[1].name: Duplicate value: "prov""#
        ]
    );

    // A check whose config is missing is inactive; a check that does not exist is missing:
    // either makes the ClusterQueue inactive with Kueue's words, and its workloads wait.
    let no_config =
        provisioning("", "", &workload("w", 1, "")).replace("name: prov-config}", "name: nowhere}");
    let mut sim = simulation(&no_config);
    sim.run(&Limits::default(), None);
    let cq = &sim.cluster().cluster_queues[0];
    assert_eq!(
        cq.inactive_reason.as_deref(),
        Some("references inactive AdmissionCheck(s): prov")
    );
    // It waits in its queue (an inactive ClusterQueue offers no heads), saying why as Kueue's
    // workload controller does.
    let r = sim.report();
    assert_eq!(r.workloads[0].state, "pending");
    let said: Vec<_> = r.events.iter().map(|e| (e.kind, e.reason)).collect();
    assert_eq!(
        said,
        [(
            EventType::Inadmissible,
            Some("ClusterQueue cq is inactive".to_string())
        )]
    );
    let missing = provisioning("", "", "").replace(
        "admissionChecks: [{name: prov}]",
        "admissionChecks: [{name: prov}, {name: budget}]",
    );
    let sim = simulation(&missing);
    assert_eq!(
        sim.cluster().cluster_queues[0].inactive_reason.as_deref(),
        Some("references missing AdmissionCheck(s): budget")
    );
    assert_eq!(
        sim.cluster().admission_checks["prov"].inactive,
        None,
        "prov itself resolves"
    );
    let orphan = provisioning("", "", "").replace("name: prov-config}", "name: nowhere}");
    let sim = simulation(&orphan);
    assert_eq!(
        sim.cluster().admission_checks["prov"].inactive.as_deref(),
        Some(r#"provisioningrequestconfigs.kueue.x-k8s.io "nowhere" not found"#)
    );
    // A simulator annotation that does not parse names the object and the annotation.
    let bad_delay = provisioning("sim.wasq.dev/provisioning-delay: soon", "", "");
    let m = load_str(Path::new("bad.yaml"), &bad_delay).unwrap();
    let err = Scenario::from_manifests(m).unwrap_err().to_string();
    assert!(
        err.starts_with(
            "ProvisioningRequestConfig prov-config: metadata.annotations.sim.wasq.dev/provisioning-delay:"
        ),
        "{err}"
    );
}

#[test]
fn a_booking_that_expires_before_admission_is_retried() {
    // Two checks: the request is provisioned at 10 s with a 20 s booking, but the other check
    // is Ready only at 60 s: the booking expires at 30 s, before admission, so the request is
    // retried (Kueue's "Retrying after booking expired").
    let text = provisioning(
        "sim.wasq.dev/provisioning-delay: 10s, sim.wasq.dev/booking-expires: 20s",
        "retryStrategy: {backoffBaseSeconds: 5}",
        &workload("train", 1, ""),
    )
    .replace(
        "admissionChecks: [{name: prov}]",
        "admissionChecks: [{name: prov}, {name: budget}]",
    )
    .replace(
        "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue",
        "---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: budget
  annotations: {sim.wasq.dev/check-delay: 60s}
spec: {controllerName: example.com/budget}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue",
    );
    let mut sim = simulation(&text);
    sim.run(
        &Limits {
            until: Some(40_000),
            ..Limits::default()
        },
        None,
    );
    let r = sim.report();
    let checks: Vec<(f64, EventType, String)> = r
        .events
        .iter()
        .map(|e| (e.time, e.kind, e.reason.clone().unwrap_or_default()))
        .collect();
    assert_eq!(
        checks,
        [
            (0.0, EventType::QuotaReserved, String::new()),
            (
                10.0,
                EventType::AdmissionCheck,
                r#"prov: Ready (Provisioning Request "train-prov-1" was provisioned (simulated))"#
                    .into()
            ),
            (
                30.0,
                EventType::AdmissionCheck,
                "prov: Retry (Retrying after booking expired: the booking expired before the \
                 workload was admitted (simulated))"
                    .into()
            ),
            (
                30.0,
                EventType::Evicted,
                "AdmissionCheck: Evicted due to AdmissionCheck in Retry state: \"prov\" \
                 (Retrying after booking expired: the booking expired before the workload was \
                 admitted (simulated))"
                    .into()
            ),
            (35.0, EventType::QuotaReserved, String::new()),
        ]
    );
}

#[test]
fn a_workload_preempted_while_waiting_for_its_checks_starts_them_again() {
    // `low` reserves the only GPU and waits 60 s for its check; `high` (higher priority)
    // arrives at 10 s and preempts it: low's check goes back to Pending and its timer is
    // dropped, and high's own check runs from 10 s.
    let low = workload("low", 1, "");
    let high = workload("high", 1, "sim.wasq.dev/arrival: 10s")
        .replace("  queueName: lq\n", "  queueName: lq\n  priority: 100\n");
    let text = provisioning(
        "sim.wasq.dev/provisioning-delay: 60s",
        "",
        &format!("{low}{high}"),
    )
    .replace(
        "  admissionChecksStrategy:",
        "  preemption: {withinClusterQueue: LowerPriority}\n  admissionChecksStrategy:",
    );
    let r = run(&text);
    let got: Vec<(f64, EventType, String)> = r
        .events
        .iter()
        .filter(|e| e.kind != EventType::Requeued && e.kind != EventType::Inadmissible)
        .map(|e| (e.time, e.kind, e.workload.clone()))
        .collect();
    let e = |t: f64, k: EventType, w: &str| (t, k, w.to_string());
    assert_eq!(
        got,
        [
            e(0.0, EventType::QuotaReserved, "ns/low"),
            e(10.0, EventType::Preempted, "ns/low"),
            e(10.0, EventType::QuotaReserved, "ns/high"),
            e(70.0, EventType::AdmissionCheck, "ns/high"),
            e(70.0, EventType::Admitted, "ns/high"),
        ]
    );
    let low = r.workloads.iter().find(|w| w.name == "low").unwrap();
    // Waiting for the GPU again (high holds it), its check reset.
    assert_eq!(
        (low.state, low.admission_checks[0].state),
        ("inadmissible", "Pending")
    );
}

#[test]
fn two_checks_failing_together_evict_once_and_the_run_ends_with_the_last_event() {
    // Two ProvisioningRequest checks whose requests both fail at 30 s: one eviction naming both
    // (Kueue's "AdmissionChecks in Retry state: ..."), one requeue at the later of the delays.
    let text = provisioning(
        "sim.wasq.dev/provisioning-delay: 30s, sim.wasq.dev/provisioning-failures: \"1\"",
        "retryStrategy: {backoffBaseSeconds: 10}",
        &workload("train", 1, "sim.wasq.dev/duration: 1m"),
    )
    .replace(
        "admissionChecks: [{name: prov}]",
        "admissionChecks: [{name: prov}, {name: prov2}]",
    )
    .replace(
        "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue",
        "---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: prov2}
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: prov-config}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue",
    );
    let r = run(&text);
    let evictions: Vec<(f64, String)> = r
        .events
        .iter()
        .filter(|e| e.kind == EventType::Evicted)
        .map(|e| (e.time, e.reason.clone().unwrap_or_default()))
        .collect();
    let why = "Retrying after failure: the simulated autoscaler failed attempt 1 of 1";
    assert_eq!(
        evictions,
        [(
            30.0,
            format!(
                "AdmissionCheck: Evicted due to AdmissionChecks in Retry state: \"prov\" ({why}); \"prov2\" ({why})"
            )
        )]
    );
    let reserved: Vec<f64> = r
        .events
        .iter()
        .filter(|e| e.kind == EventType::QuotaReserved)
        .map(|e| e.time)
        .collect();
    assert_eq!(reserved, [0.0, 40.0]);
    // Admitted at 70 s, finished a minute later: the run ends there.
    let last = r.events.last().unwrap();
    assert_eq!((last.time, last.kind), (130.0, EventType::Finished));
    assert_eq!(r.summary.duration_seconds, 130.0);
}
