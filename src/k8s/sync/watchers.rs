//! kube-runtime watchers, one per source, turned into [`Observed`] events on one channel. A
//! (re)list is delivered as one [`Observed::Listed`] once complete, so the mirror never sees a
//! half-listed source.

use futures::StreamExt;
use kube::api::Api;
use kube::core::{ApiResource, DynamicObject, TypeMeta};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::mpsc::UnboundedSender;

use crate::api::labels;
use crate::k8s::sync::mirror::{Observed, Source};

/// Watches `resource` cluster-wide until the receiver is dropped.
pub fn spawn(
    client: kube::Client,
    source: Source,
    resource: ApiResource,
    tx: UnboundedSender<Observed>,
) {
    spawn_in(client, source, resource, None, tx);
}

/// Watches `resource` in `namespace` (`None`: cluster-wide) until the receiver is dropped.
pub fn spawn_in(
    client: kube::Client,
    source: Source,
    resource: ApiResource,
    namespace: Option<&str>,
    tx: UnboundedSender<Observed>,
) {
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client, ns, &resource),
        None => Api::all_with(client, &resource),
    };
    let config = match source {
        // Only queued pods are Kueue's business here: in a group or alone (a lone pod has no
        // group label; selecting by that label, wasq never saw one), every one names its queue.
        Source::Pod => watcher::Config::default().labels(labels::QUEUE_NAME),
        _ => watcher::Config::default(),
    };
    tokio::spawn(async move {
        let mut stream = watcher::watcher(api, config).default_backoff().boxed();
        let mut buffer: Vec<DynamicObject> = Vec::new();
        while let Some(event) = stream.next().await {
            let observed = match event {
                Ok(Event::Apply(o)) => Observed::Applied(source, typed(o, &resource)),
                Ok(Event::Delete(o)) => Observed::Deleted(source, typed(o, &resource)),
                Ok(Event::Init) => {
                    buffer.clear();
                    continue;
                }
                Ok(Event::InitApply(o)) => {
                    buffer.push(typed(o, &resource));
                    continue;
                }
                Ok(Event::InitDone) => Observed::Listed(source, std::mem::take(&mut buffer)),
                Err(e) => {
                    tracing::warn!(kind = %resource.kind, error = %e, "watch failed; retrying with backoff");
                    continue;
                }
            };
            if tx.send(observed).is_err() {
                return;
            }
        }
    });
}

/// The object with the watched resource's `apiVersion` and `kind` when it came without: the
/// API server writes them on a list of a built-in kind (a NamespaceList) but not on its items,
/// which the mirror could not decode (watch events and custom resources carry them).
fn typed(mut object: DynamicObject, resource: &ApiResource) -> DynamicObject {
    if object.types.as_ref().is_none_or(|t| t.kind.is_empty()) {
        object.types = Some(TypeMeta {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
        });
    }
    object
}
