//! The controller's event loop, written once for `wasq controller` and `wasq bench --driver
//! controller`: the watchers' events taken into the mirror as they come, and after each wake-up
//! (events, or the tick) a pass while this replica leads, the standby's upkeep before. What
//! ends the loop is the caller's: leadership lost or an interrupt, or the bench's harness.

use std::future::Future;
use std::time::Duration;

use futures::FutureExt;
use k8s_openapi::api::core::v1::{Namespace, Node, Secret};
use kube::core::ApiResource;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::{Controller, provisioning};
use crate::k8s::jobs::integration::api_resource;
use crate::k8s::jobs::pod_groups;
use crate::k8s::sync::mirror::{Observed, Source};
use crate::k8s::sync::watchers;

/// Starts one kube-runtime watcher per source the controller reads, on `client`; their
/// events arrive on the receiver, to be given to [`Controller::observe`] (or to
/// [`Controller::run`]).
pub fn spawn_watchers(
    client: &kube::Client,
    controller: &Controller,
) -> UnboundedReceiver<Observed> {
    let (tx, rx) = unbounded_channel();
    for source in controller.sources() {
        let resource = match source {
            Source::Kueue(k) => k.api_resource(),
            Source::Namespace => ApiResource::erase::<Namespace>(&()),
            Source::Pod => pod_groups::pod_resource(),
            Source::Job(i) => api_resource(&controller.kinds()[i]),
            Source::ProvisioningRequest => provisioning::resource(),
            Source::Node => ApiResource::erase::<Node>(&()),
            Source::TasPod => pod_groups::pod_resource(),
            Source::Secret => ApiResource::erase::<Secret>(&()),
        };
        // Secrets only in Kueue's namespace (MultiKueue's kubeconfigs).
        let namespace = match source {
            Source::Secret => controller
                .multikueue()
                .map(|m| m.options.namespace.as_str()),
            _ => None,
        };
        watchers::spawn_in(client.clone(), source, resource, namespace, tx.clone());
    }
    rx
}

impl Controller {
    /// Runs the controller on `events` (from [`spawn_watchers`]) until `end` resolves, and
    /// returns what it resolved to. Every batch of events is taken into the mirror at once;
    /// after it, after a MultiKueue worker's report, and at least every `tick`, a pass runs ([`Controller::step`]) once `leading`
    /// has resolved (a future already resolved: this replica leads from the start), and until
    /// then the standby's upkeep ([`Controller::stand_by`]).
    pub async fn run<T>(
        &mut self,
        mut events: UnboundedReceiver<Observed>,
        tick: Duration,
        leading: impl Future<Output = ()>,
        end: impl Future<Output = T>,
    ) -> T {
        let mut leading = std::pin::pin!(leading);
        let mut end = std::pin::pin!(end);
        let mut is_leading = leading.as_mut().now_or_never().is_some();
        let mut tick = tokio::time::interval(tick);
        // A MultiKueue manager's workers report between events: a pass takes them in.
        let remote = self.multikueue().map(|m| m.wake());
        let reported = || async {
            match &remote {
                Some(w) => w.notified().await,
                None => std::future::pending().await,
            }
        };
        loop {
            tokio::select! {
                Some(ev) = events.recv() => {
                    self.observe(ev);
                    while let Ok(ev) = events.try_recv() {
                        self.observe(ev);
                    }
                }
                _ = tick.tick() => {}
                _ = reported() => {}
                _ = leading.as_mut(), if !is_leading => is_leading = true,
                out = end.as_mut() => return out,
            }
            if is_leading {
                self.step().await;
            } else {
                self.stand_by();
            }
        }
    }
}
