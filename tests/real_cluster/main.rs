//! End-to-end tests against a real control plane: etcd and kube-apiserver, and for the tests
//! that run pods kube-controller-manager, kube-scheduler and KWOK nodes, built from Go modules by
//! `.ci/build-control-plane`. Every test is ignored unless asked for: `cargo test --test
//! real_cluster -- --ignored`.
//!
//! Each test starts its own control plane ([`cluster::ControlPlane`]) and checks what the
//! in-process double (`wasq::k8s::apiserver`) can only assume: that the real server accepts
//! wasq's objects and keeps every field of them ([`kept`]).

mod bench;
mod certificates;
mod cluster;
mod crds;
mod dashboard;
mod deploy;
mod double;
mod job_kinds;
mod jobs;
mod kept;
mod kueue_docs;
mod leader;
mod migrate;
mod multikueue;
mod pods;
mod printer_columns;
mod provisioning;
mod queue_policies;
mod recorder;
mod restart;
mod takeover;
mod tas;
mod visibility;
mod wasq;
mod workload_status;

use anyhow::Result;

/// The control plane starts, answers as the pinned release, and stops.
#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn control_plane_starts_and_answers() -> Result<()> {
    let plane = cluster::ControlPlane::start().await?;
    assert!(plane.url.starts_with("https://127.0.0.1:"), "{}", plane.url);
    let client = plane.client().await?;
    let version = client.apiserver_version().await?;
    let pinned = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/.ci/control-plane/go.mod"
    ))?;
    assert!(
        pinned.contains(&format!("k8s.io/kubernetes {} ", version.git_version)),
        "the API server reports {}, which .ci/control-plane/go.mod does not pin",
        version.git_version
    );
    Ok(())
}

/// The parts that run pods: a Job (no queue, so no wasq) placed by kube-scheduler on a KWOK
/// node, its pods played Running then Succeeded by KWOK, the Job `Complete` by the Job
/// controller.
#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn a_job_runs_on_kwok_nodes() -> Result<()> {
    use k8s_openapi::api::batch::v1::Job;
    use kube::api::{Api, PostParams};
    use std::time::{Duration, Instant};

    let mut plane = cluster::ControlPlane::start().await?;
    let started = Instant::now();
    plane.run_pods(1).await?;
    let ready_after = started.elapsed();
    let client = plane.client().await?;
    let job: Job = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "plain", "namespace": "default"},
        "spec": {"parallelism": 2, "completions": 2, "template": {"spec": {
            "restartPolicy": "Never",
            "nodeSelector": {"type": "kwok"},
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "c", "image": "busybox"}]}}}
    }))?;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    jobs.create(&PostParams::default(), &job).await?;
    let created = Instant::now();
    loop {
        let job = serde_json::to_value(jobs.get("plain").await?)?;
        let complete = job["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Complete" && c["status"] == "True");
        if complete {
            assert_eq!(job["status"]["succeeded"], 2, "{}", job["status"]);
            break;
        }
        anyhow::ensure!(
            created.elapsed() < Duration::from_secs(60),
            "the Job is not Complete within 60s: {}",
            job["status"]
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client, "default");
    for pod in pods.list(&Default::default()).await?.items {
        let node = pod.spec.and_then(|s| s.node_name).unwrap_or_default();
        assert_eq!(node, "kwok-node-0");
    }
    eprintln!(
        "controllers, scheduler, KWOK and a Ready node: {:.1}s; the Job Complete {:.1}s after its creation",
        ready_after.as_secs_f64(),
        created.elapsed().as_secs_f64()
    );
    Ok(())
}
