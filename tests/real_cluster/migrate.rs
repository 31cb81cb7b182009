//! `wasq migrate check` against a real API server holding a Kueue installation as Kueue's
//! manifests leave it: its Configuration ConfigMap, its manager Deployment with feature gates,
//! and Kueue objects (a MultiKueue admission check among them), with a Workload admitted.

use std::process::Command;

use anyhow::{Context, Result};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::cluster::ControlPlane;
use crate::crds::{self, MANAGER};
use crate::kueue_docs::{api_for, namespace};

/// Kueue's default Configuration (config/components/manager/controller_manager_config.yaml),
/// shortened.
const CONFIGURATION: &str = "apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
webhook:
  port: 9443
leaderElection:
  leaderElect: true
  resourceName: c1f6bfd2.kueue.x-k8s.io
integrations:
  frameworks:
  - \"batch/job\"
  - \"pod\"
waitForPodsReady:
  timeout: 5m
";

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn migrate_check_reads_a_kueue_installation_and_writes_nothing() -> Result<()> {
    let plane = ControlPlane::start().await?;
    let client = plane.client().await?;
    crds::install(&client).await?;
    namespace(&client, "kueue-system").await?;
    namespace(&client, "team").await?;
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
        "data": {"controller_manager_config.yaml": CONFIGURATION},
    }))?;
    Api::<ConfigMap>::namespaced(client.clone(), "kueue-system")
        .create(&PostParams::default(), &cm)
        .await?;
    let manager: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"control-plane": "controller-manager"}},
            "template": {"metadata": {"labels": {"control-plane": "controller-manager"}},
                "spec": {"containers": [{"name": "manager", "image": "kueue",
                    "args": ["--config=/controller_manager_config.yaml", "--zap-log-level=2",
                             "--feature-gates=PartialAdmission=false"]}]}}}
    }))?;
    Api::<Deployment>::namespaced(client.clone(), "kueue-system")
        .create(&PostParams::default(), &manager)
        .await?;

    let objects = [
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
               "metadata": {"name": "default"}}),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
               "metadata": {"name": "sample-multikueue"},
               "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "sample"}}}),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
               "metadata": {"name": "cluster-queue"},
               "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"],
                   "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "9"}]}]}]}}),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
               "metadata": {"name": "user-queue", "namespace": "team"},
               "spec": {"clusterQueue": "cluster-queue"}}),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
               "metadata": {"name": "job-sample-12345", "namespace": "team"},
               "spec": {"queueName": "user-queue", "podSets": [{"name": "main", "count": 1,
                   "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c",
                       "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}}),
    ];
    for object in &objects {
        let api = api_for(&client, object)?;
        let o: DynamicObject = serde_json::from_value(object.clone())?;
        api.create(&PostParams::default(), &o)
            .await
            .with_context(|| format!("creating {}", object["kind"]))?;
    }
    // Admitted, as Kueue writes it, through the status subresource.
    let workloads = api_for(&client, &objects[4])?;
    let status = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "status": {
        "admission": {"clusterQueue": "cluster-queue", "podSetAssignments": [{"name": "main",
            "count": 1, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}}]},
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
             "message": "Quota reserved in ClusterQueue cluster-queue",
             "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "Admitted", "status": "True", "reason": "Admitted",
             "message": "The workload is admitted", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    workloads
        .patch_status(
            "job-sample-12345",
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&status),
        )
        .await?;
    let before = workloads
        .get("job-sample-12345")
        .await?
        .metadata
        .resource_version;

    let out = Command::new(env!("CARGO_BIN_EXE_wasq"))
        .args(["migrate", "check", "-o", "json", "--kubeconfig"])
        .arg(plane.kubeconfig())
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The MultiKueue check is unsupported: exit 1, saying so.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("1 thing(s) of this Kueue installation wasq does not run"),
        "{stderr}"
    );
    let report: Value = serde_json::from_slice(&out.stdout)?;
    let verdict = |kind: &str, name: &str| -> Option<String> {
        report["findings"].as_array()?.iter().find_map(|f| {
            (f["kind"] == kind && f["name"] == name)
                .then(|| f["verdict"].as_str().unwrap().to_string())
        })
    };
    let cm = "kueue-system/kueue-manager-config";
    for (kind, name, expected) in [
        ("Configuration", format!("{cm} waitForPodsReady"), "same"),
        ("Configuration", format!("{cm} webhook"), "different"),
        ("Integration", "batch/job".into(), "same"),
        ("FeatureGate", "PartialAdmission".into(), "different"),
        (
            "Deployment",
            "kueue-system/kueue-controller-manager".into(),
            "action",
        ),
        ("AdmissionCheck", "sample-multikueue".into(), "unsupported"),
        ("ClusterQueue", "cluster-queue".into(), "same"),
        ("Workloads", "team/user-queue".into(), "same"),
    ] {
        assert_eq!(
            verdict(kind, &name).as_deref(),
            Some(expected),
            "{kind} {name}"
        );
    }
    // Nothing written.
    let after = workloads
        .get("job-sample-12345")
        .await?
        .metadata
        .resource_version;
    assert_eq!(before, after);
    Ok(())
}
