//! One connection to a worker, as a task: the client built from the kubeconfig, the manager's
//! objects there listed — the Workload copies and the remote jobs, both by the origin label,
//! in every namespace — and watched; then the worker counts as connected
//! ([`Outcome::Synced`], which hands over the lists and the client) and every change is
//! reported ([`Outcome::Changed`]) until a watch fails ([`Outcome::Ended`]). A watch the server
//! closes normally is resumed from the last resourceVersion seen. Kueue's
//! `updateConfigAndRefreshWatchers` and `establishWatch`, with its first establishment timeout
//! (1 min) for every attempt; as in Kueue, a kind that cannot be watched fails the connection.

use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, ApiResource, ListParams, WatchEvent, WatchParams};
use kube::config::Kubeconfig;
use kube::core::DynamicObject;
use tokio::sync::mpsc::UnboundedSender;

use super::kubeconfig;
use crate::api::multikueue::ORIGIN_LABEL;
use crate::k8s::client::connect::one_line;
use crate::k8s::schema::kinds::KueueKind;

/// Kueue's `initialEstablishTimeout`.
pub const ESTABLISH_TIMEOUT: Duration = Duration::from_secs(60);

/// What a session watches on its worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RemoteKind {
    /// The manager's Workload copies.
    Workload,
    /// The remote batch/v1 Jobs the manager created.
    Job,
}

impl RemoteKind {
    pub const ALL: [RemoteKind; 2] = [RemoteKind::Workload, RemoteKind::Job];

    pub fn api_resource(self) -> ApiResource {
        match self {
            RemoteKind::Workload => KueueKind::Workload.api_resource(),
            RemoteKind::Job => ApiResource::erase::<k8s_openapi::api::batch::v1::Job>(&()),
        }
    }
}

/// What a session reports.
#[derive(Clone)]
pub enum Outcome {
    /// Listed, and the watches established: the client for writes, and what was listed.
    Synced {
        client: kube::Client,
        listed: Vec<(RemoteKind, Vec<DynamicObject>)>,
    },
    /// An object changed (or was deleted) since.
    Changed {
        kind: RemoteKind,
        object: Box<DynamicObject>,
        deleted: bool,
    },
    /// Failed or ended, with why.
    Ended(String),
}

/// A session's report, for cluster `cluster`'s session `generation`.
#[derive(Clone)]
pub struct Report {
    pub cluster: String,
    pub generation: u64,
    pub outcome: Outcome,
}

/// Runs one session; every outcome goes to `tx`, and `wake` is signalled.
pub async fn run(
    cluster: String,
    generation: u64,
    config: Kubeconfig,
    origin: String,
    tx: UnboundedSender<Report>,
    wake: std::sync::Arc<tokio::sync::Notify>,
) {
    let send = |outcome| {
        let _ = tx.send(Report {
            cluster: cluster.clone(),
            generation,
            outcome,
        });
        wake.notify_one();
    };
    let error = session(config, &origin, &send).await;
    send(Outcome::Ended(error));
}

type Events = futures::stream::BoxStream<'static, kube::Result<WatchEvent<DynamicObject>>>;

/// The session until it ends: why it ended.
async fn session(config: Kubeconfig, origin: &str, send: &impl Fn(Outcome)) -> String {
    let client = match kubeconfig::client(config).await {
        Ok(c) => c,
        Err(e) => return e,
    };
    let selector = format!("{ORIGIN_LABEL}={origin}");
    let apis: Vec<(RemoteKind, Api<DynamicObject>)> = RemoteKind::ALL
        .iter()
        .map(|&k| (k, Api::all_with(client.clone(), &k.api_resource())))
        .collect();
    let establish = async {
        let mut listed = Vec::new();
        let mut watches = Vec::new();
        for (kind, api) in &apis {
            let list = api
                .list(&ListParams::default().labels(&selector))
                .await
                .map_err(|e| one_line(&e))?;
            let rv = list.metadata.resource_version.unwrap_or_default();
            let stream = watch(api, &selector, &rv).await?;
            listed.push((*kind, list.items));
            watches.push((rv, stream));
        }
        Ok::<_, String>((listed, watches))
    };
    let (listed, watches) = match tokio::time::timeout(ESTABLISH_TIMEOUT, establish).await {
        Err(_) => return "watch establishment timed out".into(),
        Ok(Err(e)) => return e,
        Ok(Ok(s)) => s,
    };
    send(Outcome::Synced { client, listed });
    let follows = apis.iter().zip(watches).map(|((kind, api), (rv, stream))| {
        Box::pin(follow(*kind, api, &selector, rv, stream, send))
    });
    // The first watch to fail ends the session.
    futures::future::select_all(follows).await.0
}

async fn watch(api: &Api<DynamicObject>, selector: &str, rv: &str) -> Result<Events, String> {
    let params = WatchParams::default().labels(selector);
    api.watch(&params, rv)
        .await
        .map(|s| s.boxed())
        .map_err(|e| one_line(&e))
}

/// Reports the events of one kind's watch, resumed when the server closes it; returns why it
/// failed.
async fn follow(
    kind: RemoteKind,
    api: &Api<DynamicObject>,
    selector: &str,
    mut rv: String,
    mut stream: Events,
    send: &impl Fn(Outcome),
) -> String {
    loop {
        while let Some(event) = stream.next().await {
            let (object, deleted) = match event {
                Err(e) => return one_line(&e),
                Ok(WatchEvent::Error(s)) => return s.message,
                Ok(WatchEvent::Bookmark(b)) => {
                    rv = b.metadata.resource_version;
                    continue;
                }
                Ok(WatchEvent::Added(o) | WatchEvent::Modified(o)) => (o, false),
                Ok(WatchEvent::Deleted(o)) => (o, true),
            };
            if let Some(v) = &object.metadata.resource_version {
                rv.clone_from(v);
            }
            send(Outcome::Changed {
                kind,
                object: Box::new(object),
                deleted,
            });
        }
        stream = match watch(api, selector, &rv).await {
            Ok(s) => s,
            Err(e) => return e,
        };
    }
}
