//! Every write wasq makes to the API server, with the field managers that own them: Workload
//! status as JSON merge patches carrying `metadata.resourceVersion` (so a write based on a stale
//! read is refused with a conflict), job and pod changes as JSON Patches, Workload creation,
//! deletions, and Events.
//!
//! Requests are paced by a token bucket (`--kube-api-qps` / `--kube-api-burst`, Kueue's
//! `clientConnection` defaults 300 / 500), as client-go's rate limiter paces Kueue's; Events
//! by a second bucket of the same size, as controller-runtime's event recorder has its own
//! client. Events
//! are recorded during a pass and published in the background from its end
//! ([`Writer::flush_events`], [`crate::k8s::client::events`]): repeated Events folded into series as
//! client-go's `tools/events` broadcaster folds Kueue's — never between two decisions.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject};
use serde_json::Value;

use crate::api::{V1BETA2, Workload};
use crate::k8s::Error;
use crate::k8s::client::events::decided_by::Annotations;
use crate::k8s::schema::kinds::KueueKind;

/// Field manager of scheduling decisions on Workloads (admission, eviction, pending reasons).
pub const SCHEDULER_MANAGER: &str = "wasq-scheduler";
/// Field manager of the job integrations (Workload creation, job suspension and templates).
pub const JOB_MANAGER: &str = "wasq-job-controller";
/// Field manager of ClusterQueue and LocalQueue status.
pub const QUEUE_STATUS_MANAGER: &str = "wasq-queue-status";

/// Kueue's `clientConnection.qps` default.
pub const DEFAULT_QPS: f64 = 300.0;
/// Kueue's `clientConnection.burst` default.
pub const DEFAULT_BURST: u32 = 500;

type Limiter = governor::DefaultDirectRateLimiter;

pub struct Writer {
    client: kube::Client,
    limiter: Option<std::sync::Arc<Limiter>>,
    events: crate::k8s::client::events::Publisher,
    /// The dashboard's histories, which every Event about a Workload adds a step to (set
    /// once, by [`Writer::record_history`]), and the clock the steps are timed by.
    history: std::sync::OnceLock<(
        std::sync::Arc<std::sync::Mutex<crate::dashboard::History>>,
        crate::k8s::client::events::WallClock,
    )>,
}

fn params(manager: &str) -> PatchParams {
    PatchParams {
        field_manager: Some(manager.into()),
        ..PatchParams::default()
    }
}

fn json_patch(ops: Vec<Value>) -> Result<json_patch::Patch, Error> {
    serde_json::from_value(Value::Array(ops)).map_err(|e| Error::Decode {
        object: "JSON Patch".into(),
        message: e.to_string(),
    })
}

impl Writer {
    pub fn new(client: kube::Client, instance: Option<String>) -> Writer {
        let instance = instance.unwrap_or_else(|| "wasq".into());
        Writer {
            events: crate::k8s::client::events::Publisher::new(client.clone(), "wasq", &instance),
            client,
            history: std::sync::OnceLock::new(),
            limiter: None,
        }
    }

    /// Paces requests at `qps` per second with bursts of `burst` (no pacing when `qps` is not
    /// positive, as client-go with a negative QPS).
    pub fn with_rate_limit(mut self, qps: f64, burst: u32) -> Writer {
        self.limiter = rate_limiter(qps, burst).map(std::sync::Arc::new);
        // Events have a bucket of their own, as Kueue's: controller-runtime's event recorder
        // makes its own client from the same configuration, with its own rate limiter.
        self.events
            .set_limiter(rate_limiter(qps, burst).map(std::sync::Arc::new));
        self
    }

    /// Stamps Events with `clock` (milliseconds since the epoch) rather than the system's
    /// clock: the controller's, so that Events and conditions tell one time.
    pub fn set_clock(&mut self, clock: crate::k8s::client::events::WallClock) {
        self.events.set_clock(clock);
    }

    /// Waits for the rate limiter's permission to send one request.
    async fn paced(&self) {
        if let Some(l) = &self.limiter {
            l.until_ready().await;
        }
    }

    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    fn api(&self, ar: &ApiResource, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, ar),
            None => Api::all_with(self.client.clone(), ar),
        }
    }

    fn workloads(&self, namespace: &str) -> Api<DynamicObject> {
        self.api(&KueueKind::Workload.api_resource(), Some(namespace))
    }

    /// Merge-patches a Workload's status subresource.
    pub async fn patch_workload_status(
        &self,
        namespace: &str,
        name: &str,
        body: &Value,
    ) -> Result<DynamicObject, Error> {
        self.patch_workload_status_as(namespace, name, body, SCHEDULER_MANAGER)
            .await
    }

    /// Merge-patches a Workload's status subresource as `manager` (a check controller).
    pub async fn patch_workload_status_as(
        &self,
        namespace: &str,
        name: &str,
        body: &Value,
        manager: &str,
    ) -> Result<DynamicObject, Error> {
        self.paced().await;
        Ok(self
            .workloads(namespace)
            .patch_status(name, &params(manager), &Patch::Merge(body))
            .await?)
    }

    /// Merge-patches a Workload itself (`spec.active: false` when a check rejects it).
    pub async fn patch_workload(
        &self,
        namespace: &str,
        name: &str,
        body: &Value,
    ) -> Result<DynamicObject, Error> {
        self.paced().await;
        Ok(self
            .workloads(namespace)
            .patch(name, &params(SCHEDULER_MANAGER), &Patch::Merge(body))
            .await?)
    }

    /// Creates an object (a ProvisioningRequest, a PodTemplate) as `manager`.
    pub async fn create(
        &self,
        ar: &ApiResource,
        namespace: &str,
        object: &Value,
        manager: &str,
    ) -> Result<DynamicObject, Error> {
        let obj: DynamicObject =
            serde_json::from_value(object.clone()).map_err(|e| Error::Decode {
                object: ar.kind.clone(),
                message: e.to_string(),
            })?;
        let pp = PostParams {
            field_manager: Some(manager.into()),
            ..PostParams::default()
        };
        self.paced().await;
        Ok(self.api(ar, Some(namespace)).create(&pp, &obj).await?)
    }

    pub async fn get_workload(&self, namespace: &str, name: &str) -> Result<DynamicObject, Error> {
        self.paced().await;
        Ok(self.workloads(namespace).get(name).await?)
    }

    pub async fn create_workload(&self, wl: &Workload) -> Result<DynamicObject, Error> {
        let mut value = serde_json::to_value(wl).map_err(|e| Error::Decode {
            object: "Workload".into(),
            message: e.to_string(),
        })?;
        if let Some(obj) = value.as_object_mut() {
            obj.insert("apiVersion".into(), V1BETA2.into());
            obj.insert("kind".into(), "Workload".into());
        }
        let obj: DynamicObject = serde_json::from_value(value).map_err(|e| Error::Decode {
            object: "Workload".into(),
            message: e.to_string(),
        })?;
        let pp = PostParams {
            field_manager: Some(JOB_MANAGER.into()),
            ..PostParams::default()
        };
        let namespace = wl.metadata.namespace.as_deref().unwrap_or("default");
        self.paced().await;
        Ok(self.workloads(namespace).create(&pp, &obj).await?)
    }

    /// Applies a JSON Patch to an object (or to its status subresource).
    pub async fn json_patch(
        &self,
        ar: &ApiResource,
        namespace: Option<&str>,
        name: &str,
        ops: Vec<Value>,
        status: bool,
    ) -> Result<DynamicObject, Error> {
        let api = self.api(ar, namespace);
        let patch = Patch::Json::<()>(json_patch(ops)?);
        let pp = params(JOB_MANAGER);
        self.paced().await;
        Ok(if status {
            api.patch_status(name, &pp, &patch).await?
        } else {
            api.patch(name, &pp, &patch).await?
        })
    }

    /// Deletes an object; one already gone is not an error.
    pub async fn delete(
        &self,
        ar: &ApiResource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<(), Error> {
        self.paced().await;
        match self
            .api(ar, namespace)
            .delete(name, &DeleteParams::background())
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Merge-patches the status of a ClusterQueue or LocalQueue.
    pub async fn patch_queue_status(
        &self,
        kind: KueueKind,
        namespace: Option<&str>,
        name: &str,
        status: &Value,
    ) -> Result<DynamicObject, Error> {
        self.patch_status_as(kind, namespace, name, status, QUEUE_STATUS_MANAGER)
            .await
    }

    /// Merge-patches the status of a Kueue object (its `/status` subresource) as field
    /// manager `manager`.
    pub async fn patch_status_as(
        &self,
        kind: KueueKind,
        namespace: Option<&str>,
        name: &str,
        status: &Value,
        manager: &str,
    ) -> Result<DynamicObject, Error> {
        let body = serde_json::json!({ "status": status });
        self.paced().await;
        Ok(self
            .api(&kind.api_resource(), namespace)
            .patch_status(name, &params(manager), &Patch::Merge(&body))
            .await?)
    }

    /// Records an Event, published from the next [`Writer::flush_events`].
    pub async fn event(
        &self,
        reference: &ObjectReference,
        warning: bool,
        reason: &str,
        action: &str,
        note: String,
    ) {
        self.decision_event(reference, warning, reason, action, note, Annotations::new())
            .await;
    }

    /// Records the Event of a scheduling decision with wasq's annotations naming the policies
    /// behind it ([`crate::k8s::client::events::decided_by`]).
    pub async fn decision_event(
        &self,
        reference: &ObjectReference,
        warning: bool,
        reason: &str,
        action: &str,
        note: String,
        annotations: Annotations,
    ) {
        let note = crate::k8s::status::conditions::truncate(&note, 1024);
        if let Some((history, clock)) = self.history.get()
            && reference.kind.as_deref() == Some("Workload")
        {
            let key = format!(
                "{}/{}",
                reference.namespace.as_deref().unwrap_or_default(),
                reference.name.as_deref().unwrap_or_default()
            );
            let step =
                crate::k8s::client::events::decided_by::step(clock(), reason, &note, &annotations);
            history
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .record(&key, step);
        }
        self.events
            .record(reference, warning, reason, action, note, annotations);
    }

    /// Adds a step to `history` for every Event recorded about a Workload from now on (the
    /// dashboard's), timed by `clock`. Only the first call counts.
    pub fn record_history(
        &self,
        history: std::sync::Arc<std::sync::Mutex<crate::dashboard::History>>,
        clock: crate::k8s::client::events::WallClock,
    ) {
        let _ = self.history.set((history, clock));
    }

    /// Starts publishing the Events recorded since the last flush, in the background after
    /// the previous flush's; returns at once. Failures are logged, never fatal.
    pub fn flush_events(&self) {
        self.events.flush();
    }

    /// Waits until every flushed Event has been published.
    pub async fn events_settled(&self) {
        self.events.settled().await;
    }

    /// Events dropped because too many were waiting to be published.
    pub fn events_dropped(&self) -> u64 {
        self.events.dropped()
    }
}

/// A token bucket of `qps` requests per second and `burst` at once; `None` when `qps` is not
/// positive.
fn rate_limiter(qps: f64, burst: u32) -> Option<Limiter> {
    if !(qps.is_finite() && qps > 0.0) {
        return None;
    }
    let period = std::time::Duration::from_secs_f64(1.0 / qps);
    let quota =
        governor::Quota::with_period(period)?.allow_burst(std::num::NonZeroU32::new(burst.max(1))?);
    Some(governor::RateLimiter::direct(quota))
}

/// The reference Events use for a Workload.
pub fn workload_ref(wl: &Workload) -> ObjectReference {
    ObjectReference {
        api_version: Some(V1BETA2.into()),
        kind: Some("Workload".into()),
        name: wl.metadata.name.clone(),
        namespace: wl.metadata.namespace.clone(),
        uid: wl.metadata.uid.clone(),
        ..ObjectReference::default()
    }
}
