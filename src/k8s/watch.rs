//! kube-runtime watchers, one per source, turned into [`Observed`] events on one channel. A
//! (re)list is delivered as one [`Observed::Listed`] once complete, so the mirror never sees a
//! half-listed source.

use futures::StreamExt;
use kube::api::Api;
use kube::core::{ApiResource, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::mpsc::UnboundedSender;

use super::mirror::{Observed, Source};
use crate::api::labels;

/// Watches `resource` cluster-wide until the receiver is dropped.
pub fn spawn(
    client: kube::Client,
    source: Source,
    resource: ApiResource,
    tx: UnboundedSender<Observed>,
) {
    let api: Api<DynamicObject> = Api::all_with(client, &resource);
    let config = match source {
        // Only pods of pod groups are Kueue's business here.
        Source::Pod => watcher::Config::default().labels(labels::POD_GROUP_NAME),
        _ => watcher::Config::default(),
    };
    tokio::spawn(async move {
        let mut stream = watcher::watcher(api, config).default_backoff().boxed();
        let mut buffer: Vec<DynamicObject> = Vec::new();
        while let Some(event) = stream.next().await {
            let observed = match event {
                Ok(Event::Apply(o)) => Observed::Applied(source, o),
                Ok(Event::Delete(o)) => Observed::Deleted(source, o),
                Ok(Event::Init) => {
                    buffer.clear();
                    continue;
                }
                Ok(Event::InitApply(o)) => {
                    buffer.push(o);
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
