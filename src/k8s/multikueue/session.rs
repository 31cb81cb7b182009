//! One connection to a worker, as a task: the client built from the kubeconfig, the manager's
//! objects there listed — the Workload copies, the remote jobs and pods, by the origin label,
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

/// Kueue's `initialEstablishTimeout`.
pub const ESTABLISH_TIMEOUT: Duration = Duration::from_secs(60);

/// What a session watches on its worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RemoteKind {
    /// The manager's Workload copies.
    Workload,
    /// The remote jobs of the controller's job kind `i` that the manager created.
    Job(usize),
    /// The remote pods the manager created (pod groups, lone pods).
    Pod,
    /// The remote StatefulSets or LeaderWorkerSets (the index in the manager's parent kinds).
    Parent(usize),
    /// The worker's ClusterQueues and LocalQueues, all of them (for dispatch plugins: what
    /// the manager sees of a worker's queue); left out when the credentials may not read them.
    ClusterQueue,
    LocalQueue,
}

impl RemoteKind {
    /// Only the manager's objects, by the origin label.
    fn by_origin(self) -> bool {
        matches!(
            self,
            RemoteKind::Workload | RemoteKind::Job(_) | RemoteKind::Pod | RemoteKind::Parent(_)
        )
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
    kinds: Vec<(RemoteKind, ApiResource)>,
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
    let error = session(config, &kinds, &origin, &send).await;
    send(Outcome::Ended(error));
}

type Events = futures::stream::BoxStream<'static, kube::Result<WatchEvent<DynamicObject>>>;

/// The session until it ends: why it ended.
async fn session(
    config: Kubeconfig,
    kinds: &[(RemoteKind, ApiResource)],
    origin: &str,
    send: &impl Fn(Outcome),
) -> String {
    let client = match kubeconfig::client(config).await {
        Ok(c) => c,
        Err(e) => return e,
    };
    let origin = format!("{ORIGIN_LABEL}={origin}");
    let establish = async {
        let mut listed = Vec::new();
        let mut watches = Vec::new();
        for (kind, ar) in kinds {
            let api: Api<DynamicObject> = Api::all_with(client.clone(), ar);
            let selector = if kind.by_origin() {
                origin.as_str()
            } else {
                ""
            };
            let list = match api.list(&ListParams::default().labels(selector)).await {
                // The worker does not serve the kind (none of its jobs can run there), or the
                // credentials may not read its queues.
                Err(kube::Error::Api(s))
                    if (s.code == 404 && *kind != RemoteKind::Workload)
                        || (s.code == 403 && !kind.by_origin()) =>
                {
                    tracing::info!(kind = %ar.kind, code = s.code, "MultiKueue: not watched on the worker");
                    continue;
                }
                other => other.map_err(|e| one_line(&e))?,
            };
            let rv = list.metadata.resource_version.unwrap_or_default();
            let stream = watch(&api, selector, &rv).await?;
            listed.push((*kind, list.items));
            watches.push((*kind, api, selector, rv, stream));
        }
        Ok::<_, String>((listed, watches))
    };
    let (listed, watches) = match tokio::time::timeout(ESTABLISH_TIMEOUT, establish).await {
        Err(_) => return "watch establishment timed out".into(),
        Ok(Err(e)) => return e,
        Ok(Ok(s)) => s,
    };
    send(Outcome::Synced { client, listed });
    let follows = watches
        .into_iter()
        .map(|(kind, api, selector, rv, stream)| {
            Box::pin(follow(kind, api, selector, rv, stream, send))
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
    api: Api<DynamicObject>,
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
        stream = match watch(&api, selector, &rv).await {
            Ok(s) => s,
            Err(e) => return e,
        };
    }
}
