//! `QueuePolicy` objects in a cluster: every replica reads them and fetches their modules
//! ([`fetch`]) so that a new leader binds them at once; the plugin host
//! ([`crate::wasm::PolicyObjects`]) verifies and compiles them off the scheduling path and the
//! scheduler binds them between cycles; the leader writes their status ([`status`]).
//!
//! What triggers a pass: any watch event of a QueuePolicy or of a ConfigMap in the controller's
//! namespace, and a resync every [`RESYNC`] (files in volumes, ConfigMaps elsewhere, OCI tags
//! that moved: a tag is pulled again at most every [`fetch::OCI_REFRESH`]).

mod fetch;
mod status;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, ListParams};
use kube::core::{ApiResource, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;

use crate::api::policy::{POLICY_API_VERSION, POLICY_GROUP, POLICY_VERSION, QueuePolicy};
use crate::policy::shadow::ShadowLog;
use crate::wasm::PolicyObjects;

pub use fetch::Fetcher;
pub use status::agreement;

/// The group/version of wasq's own read-only endpoints (`.../shadows[/NAME]`).
pub const VISIBILITY: &str = "visibility.wasq.dev/v1alpha1";

/// Every shadow's figures (`ShadowReportList`).
pub fn shadow_list(log: &ShadowLog) -> serde_json::Value {
    let items: Vec<serde_json::Value> = log
        .figures()
        .iter()
        .filter_map(|(name, figures)| report_of(log, name, figures))
        .collect();
    serde_json::json!({"apiVersion": VISIBILITY, "kind": "ShadowReportList", "items": items})
}

/// One shadow's figures and latest differing decisions (`ShadowReport`); `None` when no
/// shadow of that name decided anything.
pub fn shadow_report(log: &ShadowLog, name: &str) -> Option<serde_json::Value> {
    report_of(log, name, log.figures().get(name)?)
}

fn report_of(
    log: &ShadowLog,
    name: &str,
    figures: &crate::policy::shadow::Figures,
) -> Option<serde_json::Value> {
    let mut report = serde_json::to_value(status::shadow_status(figures, log, name)).ok()?;
    let obj = report.as_object_mut()?;
    obj.insert("apiVersion".into(), VISIBILITY.into());
    obj.insert("kind".into(), "ShadowReport".into());
    obj.insert("metadata".into(), serde_json::json!({"name": name}));
    obj.insert("extension".into(), figures.extension.into());
    Some(report)
}

/// How often everything is read again without an event.
pub const RESYNC: Duration = Duration::from_secs(10);
/// How long a burst of events is let settle before a pass.
const SETTLE: Duration = Duration::from_millis(200);
/// The field manager of status writes.
pub const POLICY_STATUS_MANAGER: &str = "wasq-policy-status";

/// The `queuepolicies` resource.
pub fn resource() -> ApiResource {
    ApiResource {
        group: POLICY_GROUP.into(),
        version: POLICY_VERSION.into(),
        api_version: POLICY_API_VERSION.into(),
        kind: crate::api::policy::QUEUE_POLICY_KIND.into(),
        plural: "queuepolicies".into(),
    }
}

/// Sends a notice on `tx` for every event of a watch on `api`, until the receiver is gone.
fn notify_on_events<K>(api: Api<K>, tx: tokio::sync::mpsc::UnboundedSender<()>)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    tokio::spawn(async move {
        let mut stream = watcher::watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        while let Some(event) = stream.next().await {
            if event.is_ok() && tx.send(()).is_err() {
                return;
            }
        }
    });
}

/// Keeps a [`PolicyObjects`] in step with the cluster's `QueuePolicy` objects.
pub struct PolicyReconciler {
    client: kube::Client,
    namespace: String,
    objects: Arc<PolicyObjects>,
    shadows: Arc<ShadowLog>,
    fetcher: Fetcher,
    /// The objects as last listed (their status as the server has it).
    listed: std::sync::Mutex<Vec<QueuePolicy>>,
}

impl PolicyReconciler {
    /// `namespace`: the controller's (default namespace of ConfigMap sources, home of pull
    /// Secrets); `insecure_registries`: registries pulled from over plain HTTP.
    pub fn new(
        client: kube::Client,
        namespace: &str,
        objects: Arc<PolicyObjects>,
        shadows: Arc<ShadowLog>,
        insecure_registries: Vec<String>,
    ) -> PolicyReconciler {
        PolicyReconciler {
            fetcher: Fetcher::new(client.clone(), namespace, insecure_registries),
            client,
            namespace: namespace.to_string(),
            objects,
            shadows,
            listed: std::sync::Mutex::new(Vec::new()),
        }
    }

    pub fn objects(&self) -> &Arc<PolicyObjects> {
        &self.objects
    }

    /// Reads every QueuePolicy and its module and hands them to the plugin host. An object
    /// that cannot be read as a QueuePolicy is left out (wasq's webhook refuses such objects).
    pub async fn sync(&self) -> anyhow::Result<()> {
        let span = tracing::debug_span!("reconcile", kind = "QueuePolicy");
        let _enter = span.enter();
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource());
        let list = api.list(&ListParams::default()).await?;
        let mut policies = Vec::new();
        for object in list.items {
            let name = object.metadata.name.clone().unwrap_or_default();
            let read = serde_json::to_value(&object)
                .map_err(|e| e.to_string())
                .and_then(|v| {
                    crate::api::policy::from_object(&v)
                        .map_err(|problems| crate::api::jobs::patch::problems_text(&problems))
                });
            match read {
                Ok(p) => policies.push(p),
                Err(e) => {
                    tracing::warn!(policy = %name, error = %e, "ignoring a QueuePolicy that cannot be read")
                }
            }
        }
        let mut fetched = Vec::with_capacity(policies.len());
        for p in &policies {
            fetched.push((p.clone(), self.fetcher.fetch(p).await));
        }
        self.fetcher.forget_unused(&policies);
        let objects = self.objects.clone();
        tokio::task::spawn_blocking(move || objects.update(fetched)).await?;
        *self.listed.lock().unwrap_or_else(|e| e.into_inner()) = policies;
        Ok(())
    }

    /// Writes the status of every object listed by the last [`PolicyReconciler::sync`] whose
    /// status changed (the leader's job).
    pub async fn write_status(&self) -> anyhow::Result<()> {
        let listed = self
            .listed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        status::write(&self.client, &listed, &self.objects, &self.shadows).await
    }

    /// Runs until the process ends: a pass on every relevant event (settled) and every
    /// [`RESYNC`]; status written while `leading` says so.
    pub async fn run(self: Arc<Self>, leading: tokio::sync::watch::Receiver<bool>) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
        let policies: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource());
        let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
            Api::namespaced(self.client.clone(), &self.namespace);
        notify_on_events(policies, tx.clone());
        notify_on_events(config_maps, tx);
        let mut resync = tokio::time::interval(RESYNC);
        loop {
            tokio::select! {
                Some(()) = rx.recv() => {
                    tokio::time::sleep(SETTLE).await;
                    while rx.try_recv().is_ok() {}
                }
                _ = resync.tick() => {}
            }
            if let Err(e) = self.sync().await {
                tracing::warn!(error = %e, "reading QueuePolicy objects failed; retrying");
                continue;
            }
            if *leading.borrow()
                && let Err(e) = self.write_status().await
            {
                tracing::warn!(error = %e, "writing QueuePolicy status failed; retrying");
            }
        }
    }
}
