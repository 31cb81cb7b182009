//! End-to-end tests against a real control plane: etcd and kube-apiserver (and, as the suite
//! grows, kube-controller-manager, kube-scheduler and KWOK nodes) built from Go modules by
//! `.ci/build-control-plane`. Run with `cargo test --features real-cluster --test real_cluster`.
//!
//! Each test starts its own control plane ([`cluster::ControlPlane`]) and checks what the
//! in-process double (`wasq::k8s::apiserver`) can only assume: that the real server accepts
//! wasq's objects and keeps every field of them ([`kept`]).

mod cluster;
mod crds;
mod kept;
mod kueue_docs;
mod recorder;
mod workload_status;

use anyhow::Result;

/// The control plane starts, answers as the pinned release, and stops.
#[tokio::test]
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
