//! One connection attempt to a worker, as a task: the client built from the kubeconfig, the
//! manager's copies listed (Workloads with the origin label, all namespaces) and a watch of
//! them established — then the worker counts as connected ([`Outcome::Synced`]) — until the
//! watch fails or ends ([`Outcome::Ended`]). Kueue's `updateConfigAndRefreshWatchers` and
//! `establishWatch`, with its first establishment timeout (1 min) for every attempt.
//!
//! This first cut only tells whether the worker is reachable: the watch's events are not
//! mirrored yet (the workload reconciler will need them).

use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use kube::config::Kubeconfig;
use kube::core::DynamicObject;
use tokio::sync::mpsc::UnboundedSender;

use super::kubeconfig;
use crate::api::multikueue::ORIGIN_LABEL;
use crate::k8s::client::connect::one_line;
use crate::k8s::schema::kinds::KueueKind;

/// Kueue's `initialEstablishTimeout`.
pub const ESTABLISH_TIMEOUT: Duration = Duration::from_secs(60);

/// What a session reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Listed, and the watch established.
    Synced,
    /// Failed or ended, with why.
    Ended(String),
}

/// A session's report, for cluster `cluster`'s session `generation`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub cluster: String,
    pub generation: u64,
    pub outcome: Outcome,
}

/// Runs one session; every outcome goes to `tx`.
pub async fn run(
    cluster: String,
    generation: u64,
    config: Kubeconfig,
    origin: String,
    tx: UnboundedSender<Report>,
) {
    let send = |outcome| {
        let _ = tx.send(Report {
            cluster: cluster.clone(),
            generation,
            outcome,
        });
    };
    let error = session(config, &origin, || send(Outcome::Synced)).await;
    send(Outcome::Ended(error));
}

/// The session until it ends; `synced` is called once the watch is established.
async fn session(config: Kubeconfig, origin: &str, synced: impl FnOnce()) -> String {
    let client = match kubeconfig::client(config).await {
        Ok(c) => c,
        Err(e) => return e,
    };
    let api: Api<DynamicObject> = Api::all_with(client, &KueueKind::Workload.api_resource());
    let selector = format!("{ORIGIN_LABEL}={origin}");
    let establish = async {
        let list = api
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|e| one_line(&e))?;
        let rv = list.metadata.resource_version.unwrap_or_default();
        api.watch(&WatchParams::default().labels(&selector), &rv)
            .await
            .map_err(|e| one_line(&e))
    };
    let stream = match tokio::time::timeout(ESTABLISH_TIMEOUT, establish).await {
        Err(_) => return "watch establishment timed out".into(),
        Ok(Err(e)) => return e,
        Ok(Ok(s)) => s,
    };
    synced();
    let mut stream = stream.boxed();
    while let Some(event) = stream.next().await {
        match event {
            Err(e) => return one_line(&e),
            Ok(WatchEvent::Error(s)) => return s.message,
            Ok(_) => {}
        }
    }
    "watch ended".into()
}
