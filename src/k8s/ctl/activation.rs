//! `wasq ctl stop|resume`: kueuectl's — a Workload's `spec.active`, a queue's
//! `spec.stopPolicy` (`HoldAndDrain`, or `Hold` keeping what runs; `None` to resume), set with
//! a JSON merge patch, and kueuectl's messages.

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;

use crate::k8s::schema::kinds::KueueKind;

/// What is stopped or resumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    Workload,
    LocalQueue,
    ClusterQueue,
}

/// One object to stop or resume (`namespace` is ignored for a ClusterQueue).
#[derive(Debug, Clone)]
pub struct Target {
    pub kind: TargetKind,
    pub namespace: String,
    pub name: String,
}

/// Stop (and how) or resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// A queue: `Hold` keeps admitted workloads running, `HoldAndDrain` evicts them; a
    /// Workload: `spec.active: false` either way.
    Stop {
        keep_already_running: bool,
    },
    Resume,
}

/// kubectl's `--dry-run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DryRun {
    #[default]
    None,
    /// Nothing is sent.
    Client,
    /// Sent with `dryRun=All`: the server checks it and keeps nothing.
    Server,
}

/// Stops or resumes `target`; the line kueuectl prints (`workload.kueue.x-k8s.io/NAME stopped`,
/// `localqueue.kueue.x-k8s.io/NAME`, with ` (client dry run)` or ` (server dry run)`).
pub async fn set_activation(
    client: &kube::Client,
    target: &Target,
    activation: Activation,
    dry_run: DryRun,
) -> anyhow::Result<String> {
    let (kind, patch, operation) = match (target.kind, activation) {
        (TargetKind::Workload, Activation::Stop { .. }) => (
            KueueKind::Workload,
            json!({"spec": {"active": false}}),
            "stopped",
        ),
        (TargetKind::Workload, Activation::Resume) => (
            KueueKind::Workload,
            json!({"spec": {"active": true}}),
            "resumed",
        ),
        (queue, activation) => {
            let kind = if queue == TargetKind::LocalQueue {
                KueueKind::LocalQueue
            } else {
                KueueKind::ClusterQueue
            };
            let policy = match activation {
                Activation::Stop {
                    keep_already_running: true,
                } => "Hold",
                Activation::Stop { .. } => "HoldAndDrain",
                Activation::Resume => "None",
            };
            (kind, json!({"spec": {"stopPolicy": policy}}), "")
        }
    };
    let resource = kind.api_resource();
    let api: Api<DynamicObject> = if kind.namespaced() {
        Api::namespaced_with(client.clone(), &target.namespace, &resource)
    } else {
        Api::all_with(client.clone(), &resource)
    };
    // Read first, as kueuectl does: a missing object is an error before anything is sent.
    api.get(&target.name).await?;
    if dry_run != DryRun::Client {
        let params = PatchParams {
            dry_run: dry_run == DryRun::Server,
            ..PatchParams::default()
        };
        api.patch(&target.name, &params, &Patch::Merge(&patch))
            .await?;
    }
    let operation = match dry_run {
        DryRun::None => operation.to_string(),
        DryRun::Client => format!("{operation} (client dry run)"),
        DryRun::Server => format!("{operation} (server dry run)"),
    };
    let name = format!(
        "{}.{}/{}",
        kind.kind().to_lowercase(),
        crate::api::GROUP,
        target.name
    );
    Ok(if operation.is_empty() {
        name
    } else {
        format!("{name} {operation}")
    })
}
