use super::*;
use serde_json::json;

/// Kueue's own default Configuration (config/components/manager/controller_manager_config.yaml),
/// with fair sharing on and jobs without a queue name managed.
const KUEUE_CONFIGURATION: &str = r#"
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health:
  healthProbeBindAddress: :8081
metrics:
  bindAddress: :8443
webhook:
  port: 9443
leaderElection:
  leaderElect: true
  resourceName: c1f6bfd2.kueue.x-k8s.io
controller:
  groupKindConcurrency:
    Job.batch: 5
clientConnection:
  qps: 300
  burst: 500
manageJobsWithoutQueueName: true
integrations:
  frameworks:
  - "batch/job"
  - "kubeflow.org/mpijob"
  - "ray.io/rayjob"
  - "ray.io/rayservice"
  - "jobset.x-k8s.io/jobset"
  - "trainer.kubeflow.org/trainjob"
  - "pod"
  - "deployment"
  - "statefulset"
  - "leaderworkerset.x-k8s.io/leaderworkerset"
fairSharing:
  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]
"#;

fn verdicts(findings: &[Finding]) -> BTreeMap<String, Verdict> {
    findings
        .iter()
        .map(|f| (format!("{} {}", f.kind, f.name), f.verdict))
        .collect()
}

#[test]
fn the_configuration_says_which_sections_and_frameworks_wasq_runs() {
    let c: Value = serde_saphyr::from_str(KUEUE_CONFIGURATION).unwrap();
    let v = verdicts(&configuration_findings(
        "kueue-system/kueue-manager-config",
        &c,
    ));
    let at = |f: &str| v[&format!("Configuration kueue-system/kueue-manager-config {f}")];
    assert_eq!(at("fairSharing"), Verdict::Same);
    assert_eq!(at("manageJobsWithoutQueueName"), Verdict::Unsupported);
    for own in [
        "health",
        "metrics",
        "webhook",
        "leaderElection",
        "controller",
        "clientConnection",
    ] {
        assert_eq!(at(own), Verdict::Different, "{own}");
    }
    for same in [
        "batch/job",
        "kubeflow.org/mpijob",
        "ray.io/rayjob",
        "jobset.x-k8s.io/jobset",
        "pod",
        "deployment",
        "statefulset",
        "leaderworkerset.x-k8s.io/leaderworkerset",
    ] {
        assert_eq!(v[&format!("Integration {same}")], Verdict::Same, "{same}");
    }
    for missing in ["ray.io/rayservice", "trainer.kubeflow.org/trainjob"] {
        assert_eq!(
            v[&format!("Integration {missing}")],
            Verdict::Unsupported,
            "{missing}"
        );
    }
    // Sections not set are not reported.
    assert!(
        !v.keys()
            .any(|k| k.ends_with("admissionFairSharing") || k.ends_with("multiKueue"))
    );
}

#[test]
fn feature_gates_set_to_other_than_kueues_default_differ() {
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": MANAGER, "namespace": KUEUE_NAMESPACE},
        "spec": {"selector": {}, "template": {"spec": {"containers": [{
            "name": "manager",
            "args": ["--config=/controller_manager_config.yaml", "--zap-log-level=2",
                     "--feature-gates=TopologyAwareScheduling=true,PartialAdmission=false,SchedulingEquivalenceHashing=true,NoSuchGate=true"]
        }]}}}
    }))
    .unwrap();
    let gates = deployment_gates(&d);
    assert_eq!(gates.len(), 4);
    let v = verdicts(&gate_findings(&gates));
    assert_eq!(v["FeatureGate TopologyAwareScheduling"], Verdict::Same);
    assert_eq!(v["FeatureGate PartialAdmission"], Verdict::Different);
    // On by default in Kueue, but a behaviour wasq does not have.
    assert_eq!(
        v["FeatureGate SchedulingEquivalenceHashing"],
        Verdict::Different
    );
    assert_eq!(v["FeatureGate NoSuchGate"], Verdict::Different);
}

fn cluster_queue(status: Value) -> Value {
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"],
            "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]},
        "status": status,
    })
}

/// A Workload as Kueue writes it once it reserved `cpu` in `cq` (or pending, without it).
fn workload(name: &str, cpu: Option<&str>) -> Value {
    let mut wl = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": "team"},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]},
    });
    if let Some(cpu) = cpu {
        wl["status"] = json!({
            "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 1,
                "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": cpu}}]},
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                 "message": "Quota reserved in ClusterQueue cq", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "Admitted", "status": "True", "reason": "Admitted",
                 "message": "The workload is admitted", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
        });
    }
    wl
}

#[test]
fn objects_say_what_wasq_does_not_know_and_what_it_keeps() {
    let mut unknown_field = cluster_queue(json!({}));
    unknown_field["metadata"]["name"] = json!("newer");
    unknown_field["spec"]["someFutureField"] = json!({"x": 1});
    let objects = vec![
        cluster_queue(
            json!({"flavorsReservation": [{"name": "default", "resources": [{"name": "cpu", "total": "3"}]}]}),
        ),
        unknown_field,
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "mk"},
               "spec": {"controllerName": "kueue.x-k8s.io/multikueue"}}),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "prov"},
               "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request"}}),
        workload("a", Some("1")),
        workload("b", Some("1")),
        workload("c", None),
    ];
    let findings = object_findings(&objects);
    let v = verdicts(&findings);
    assert_eq!(v["ClusterQueue newer"], Verdict::Unsupported);
    let newer = findings.iter().find(|f| f.name == "newer").unwrap();
    assert!(
        newer.note.contains("spec.someFutureField"),
        "{}",
        newer.note
    );
    assert_eq!(v["AdmissionCheck mk"], Verdict::Unsupported);
    assert_eq!(v["AdmissionCheck prov"], Verdict::Same);
    let queue = findings.iter().find(|f| f.kind == "Workloads").unwrap();
    assert_eq!(queue.name, "team/lq");
    assert!(
        queue.note.starts_with("2 admitted and 0 holding quota")
            && queue.note.contains("1 pending"),
        "{}",
        queue.note
    );
    // Kueue reported 3 cpu reserved; the admissions hold 2: wasq says so, and starts from 2.
    let usage: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.kind == "ClusterQueue" && f.name == "cq")
        .collect();
    assert_eq!(usage.len(), 2, "{usage:?}");
    assert_eq!(usage[1].verdict, Verdict::Different);
    assert!(
        usage[1]
            .note
            .contains("default/cpu: Kueue reports 3, admissions hold 2"),
        "{}",
        usage[1].note
    );

    // Reservations that agree are not reported.
    let mut agreeing = objects.clone();
    agreeing[0]["status"]["flavorsReservation"][0]["resources"][0]["total"] = json!("2");
    let findings = object_findings(&agreeing);
    assert_eq!(
        findings
            .iter()
            .filter(|f| f.kind == "ClusterQueue" && f.name == "cq")
            .count(),
        1
    );
}
