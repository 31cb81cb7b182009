//! An in-process double of the Kubernetes API server, spoken to over HTTP by the real kube-rs
//! client (`kube::Client::new` over a `tower::service_fn`), so that kube-runtime's watchers,
//! reflectors and retries run against it exactly as against a cluster.
//!
//! What it serves, for any registered [`Resource`] (core `/api/v1/...` and groups
//! `/apis/{group}/{version}/...`, namespaced or cluster-scoped, with or without a `status`
//! subresource):
//! - GET, LIST (`labelSelector`, `fieldSelector`, `limit` + `continue` over one consistent
//!   snapshot, `resourceVersion` with `resourceVersionMatch=Exact|NotOlderThan`; a built-in
//!   kind's items without `apiVersion` and `kind`, as the API server lists them), CREATE
//!   (`generateName`; 409 AlreadyExists), PUT (409 Conflict on a stale resourceVersion),
//!   PATCH — merge (409 on a stale `metadata.resourceVersion`), JSON Patch (a failed `test` is
//!   422 Invalid, as the API server answers), strategic merge and apply taken as merge patches —
//!   and DELETE (DeleteOptions preconditions; finalizers: a `deletionTimestamp` until an update
//!   empties them). See [`store`] for the metadata the server owns.
//! - WATCH with bookmarks, timeouts, streaming initial events and `410 Expired` once the
//!   history no longer reaches the requested resourceVersion ([`watch`]).
//! - Discovery (`/api`, `/apis`, group versions, `/version`) as [`kube::discovery`] reads it.
//! - Failures as `Status` objects ([`status::ApiError`]).
//!
//! What a test controls: [`ApiServer::set_latency`] (server-side, every request),
//! [`ApiServer::fail`] (the next N requests of a method whose path ends with a suffix fail with
//! a code), the request log ([`ApiServer::requests`]) and counters per verb and resource
//! ([`ApiServer::counts`]), [`ApiServer::compact`] (history dropped) and
//! [`ApiServer::expire_watches`] (every open watch stream ends).
//!
//! Served over real TCP too ([`ApiServer::listen`], [`http`]): several doubles at once, each
//! reached by a kube client built from a kubeconfig, which a test can take down (connections
//! fail) or make require a bearer token (401 otherwise).
//!
//! Not modelled: authentication (beyond [`http::HttpDouble::require_token`]) and
//! authorization, admission webhooks, validation against schemas and their defaults, version
//! conversion (a resource is served at the versions registered, sharing no storage), field
//! ownership (managedFields) and server-side apply's list merging, strategic
//! merge keys, garbage collection through ownerReferences, namespace deletion cascading,
//! `deletecollection`, `remainingItemCount`, a watch-cache delay (writes are visible at once).

pub mod discovery;
pub mod faults;
pub mod http;
pub mod kueue;
pub mod resources;
pub mod routes;
pub mod selector;
pub mod status;
pub mod store;
pub mod watch;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

pub use faults::Recorded;
pub use http::HttpDouble;
pub use resources::Resource;
pub use store::{Change, ChangeType, Clock};

use faults::Faults;
use store::Store;

/// The double's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Changes kept for watches and consistent lists; older resourceVersions are `Expired`.
    pub history: usize,
    /// How often a watch that asked for bookmarks gets one.
    pub bookmark_interval: Duration,
    /// Whether every request is logged with its body ([`ApiServer::requests`]) and every
    /// change kept ([`ApiServer::changes`]); counters are kept either way.
    pub record: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            history: 10_000,
            bookmark_interval: Duration::from_secs(1),
            record: true,
        }
    }
}

pub(crate) struct Inner {
    pub(crate) store: Mutex<Store>,
    pub(crate) faults: Mutex<Faults>,
    /// The latest resourceVersion, published after every write (wakes watches).
    pub(crate) head: tokio::sync::watch::Sender<u64>,
    /// Bumped by [`ApiServer::expire_watches`].
    pub(crate) epoch: tokio::sync::watch::Sender<u64>,
    pub(crate) open_watches: AtomicUsize,
    bookmark_ms: AtomicUsize,
}

impl Inner {
    pub(crate) fn bookmark_interval(&self) -> Duration {
        Duration::from_millis(self.bookmark_ms.load(Ordering::Relaxed).max(1) as u64)
    }
}

/// The API server double; clones share one server.
#[derive(Clone)]
pub struct ApiServer {
    inner: Arc<Inner>,
}

impl Default for ApiServer {
    fn default() -> Self {
        ApiServer::new(Config::default())
    }
}

impl ApiServer {
    /// A server of the [`resources::builtin`] resources, on the system clock.
    pub fn new(config: Config) -> ApiServer {
        let mut faults = Faults::new();
        faults.record = config.record;
        let mut store = Store::new(resources::builtin(), config.history, store::system_clock());
        store.set_audit(config.record);
        ApiServer {
            inner: Arc::new(Inner {
                store: Mutex::new(store),
                faults: Mutex::new(faults),
                head: tokio::sync::watch::channel(0).0,
                epoch: tokio::sync::watch::channel(0).0,
                open_watches: AtomicUsize::new(0),
                bookmark_ms: AtomicUsize::new(config.bookmark_interval.as_millis() as usize),
            }),
        }
    }

    /// A kube client whose every request this server answers. Needs a tokio runtime.
    pub fn client(&self) -> kube::Client {
        let inner = self.inner.clone();
        let service = tower::service_fn(move |req| {
            let inner = inner.clone();
            async move { Ok::<_, std::convert::Infallible>(routes::serve(inner, req).await) }
        });
        kube::Client::new(service, "default")
    }

    fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        self.inner.store.lock().expect("store")
    }

    fn faults(&self) -> std::sync::MutexGuard<'_, Faults> {
        self.inner.faults.lock().expect("faults")
    }

    fn published(&self) {
        let rv = self.store().rv();
        self.inner.head.send_replace(rv);
    }

    /// Serves another resource (or replaces a registration of the same group/version/plural).
    pub fn register(&self, r: Resource) {
        self.store().register(r);
    }

    /// Timestamps the server writes (`creationTimestamp`, `deletionTimestamp`).
    pub fn set_clock(&self, clock: Clock) {
        self.store().set_clock(clock);
    }

    /// Latency added server-side to every request (before it is answered).
    pub fn set_latency(&self, latency: Duration) {
        self.faults().latency = latency;
    }

    pub fn set_bookmark_interval(&self, every: Duration) {
        self.inner
            .bookmark_ms
            .store(every.as_millis() as usize, Ordering::Relaxed);
    }

    pub fn set_history(&self, changes: usize) {
        self.store().set_capacity(changes);
    }

    /// Whether requests are logged with their bodies (counters are kept either way).
    pub fn record_requests(&self, on: bool) {
        self.faults().record = on;
        self.store().set_audit(on);
    }

    /// Every change to objects of one resource (`api_version` as in `apiVersion`) since the
    /// start (or since recording was turned on), oldest first; compaction does not drop them.
    pub fn changes(&self, api_version: &str, plural: &str) -> Vec<store::Change> {
        let store = self.store();
        let Some(i) = store
            .resources
            .iter()
            .position(|r| r.api_version() == api_version && r.plural == plural)
        else {
            return Vec::new();
        };
        store
            .audit()
            .iter()
            .filter(|c| c.resource == i)
            .cloned()
            .collect()
    }

    /// The next `times` requests of `method` whose path (without query) ends with `suffix`
    /// fail with `code` (a `Status` with the API server's reason for it).
    pub fn fail(&self, method: &str, suffix: &str, code: u16, times: usize) {
        self.faults().fail(method, suffix, code, times);
    }

    /// The next `times` requests of `method` whose path (without query) ends with `suffix`
    /// are answered `latency` later than the others (before an armed failure, if any).
    pub fn delay(&self, method: &str, suffix: &str, latency: Duration, times: usize) {
        self.faults().delay(method, suffix, latency, times);
    }

    /// The next matching request fails once.
    pub fn fail_next(&self, method: &str, suffix: &str, code: u16) {
        self.fail(method, suffix, code, 1);
    }

    /// Injected failures not yet used.
    pub fn failures_armed(&self) -> usize {
        self.faults().armed()
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.faults().log.clone()
    }

    /// The bodies of the PATCH requests to `path` (the query left out), in order.
    pub fn patches(&self, path: &str) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == "PATCH" && r.uri.split('?').next() == Some(path))
            .map(|r| r.body)
            .collect()
    }

    pub fn clear_requests(&self) {
        self.faults().log.clear();
    }

    /// Requests per (verb, resource or `resource/subresource`), since the start.
    pub fn counts(&self) -> BTreeMap<(String, String), u64> {
        self.faults().counts.clone()
    }

    /// Every request counted, watches included.
    pub fn request_total(&self) -> u64 {
        self.faults().counts.values().sum()
    }

    /// The latest resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.store().rv()
    }

    /// Drops the history: watches and lists from an earlier resourceVersion get `410 Expired`.
    pub fn compact(&self) {
        self.store().compact();
    }

    /// Ends every open watch stream (clients re-watch from their last resourceVersion).
    pub fn expire_watches(&self) {
        self.inner.epoch.send_modify(|e| *e += 1);
    }

    /// Watch streams currently open.
    pub fn open_watches(&self) -> usize {
        self.inner.open_watches.load(Ordering::SeqCst)
    }

    /// The resource and namespace an object path names, registering the resource from the
    /// path and the object's `kind` when it is not served yet (test seeding).
    fn locate(&self, path: &str, obj: Option<&Value>) -> Option<(usize, Option<String>, String)> {
        let mut store = self.store();
        if let Some(resources::Target::Object {
            resource,
            namespace,
            name: Some(name),
            subresource: None,
        }) = resources::parse(&store.resources, path)
        {
            return Some((resource, namespace, name));
        }
        let kind = obj?.get("kind")?.as_str()?.to_string();
        let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (group, version, rest) = match segs.as_slice() {
            ["api", v, rest @ ..] => ("", *v, rest),
            ["apis", g, v, rest @ ..] => (*g, *v, rest),
            _ => return None,
        };
        let (namespace, plural, name) = match rest {
            ["namespaces", ns, plural, name] => (Some(ns.to_string()), *plural, *name),
            [plural, name] => (None, *plural, *name),
            _ => return None,
        };
        let r = Resource::new(group, version, &kind, plural, namespace.is_some());
        let resource = store.register(r);
        Some((resource, namespace, name.to_string()))
    }

    /// Stores an object at its path (e.g. `/apis/batch/v1/namespaces/ns/jobs/pi`) as given,
    /// creating or replacing it, as another actor's write: watchers see it. Server-owned
    /// metadata it lacks is filled in. Returns the stored object.
    pub fn put(&self, path: &str, mut obj: Value) -> Value {
        let (resource, namespace, name) = self
            .locate(path, Some(&obj))
            .unwrap_or_else(|| panic!("{path} names no object of a served resource"));
        if obj.get("metadata").is_none_or(|m| !m.is_object()) {
            obj["metadata"] = serde_json::json!({});
        }
        obj["metadata"]["name"] = Value::String(name);
        let stored = self.store().put(resource, namespace.as_deref(), obj);
        self.published();
        stored
    }

    /// Changes `path`'s object in place, atomically (no conflict is possible), as another
    /// actor's write — `status` included, whatever the subresource rules: how a harness marks
    /// a Workload finished. Returns the stored object, or `None` when there is none.
    pub fn modify(&self, path: &str, f: impl FnOnce(&mut Value)) -> Option<Value> {
        let (resource, namespace, name) = self.locate(path, None)?;
        let stored = {
            let mut store = self.store();
            let mut obj = store.get(resource, namespace.as_deref(), &name).ok()?;
            f(&mut obj);
            store.put(resource, namespace.as_deref(), obj)
        };
        self.published();
        Some(stored)
    }

    /// Waits until something is written after `rv`.
    pub async fn written_after(&self, rv: u64) {
        let mut head = self.inner.head.subscribe();
        let _ = head.wait_for(|&h| h > rv).await;
    }

    /// The changes to one resource after `cursor` (from the bounded history) and the latest
    /// resourceVersion, or `Err(oldest)` once the history no longer reaches back to `cursor`.
    pub fn changes_after(
        &self,
        api_version: &str,
        plural: &str,
        cursor: u64,
    ) -> Result<(Vec<store::Change>, u64), u64> {
        let store = self.store();
        let Some(i) = store
            .resources
            .iter()
            .position(|r| r.api_version() == api_version && r.plural == plural)
        else {
            return Ok((Vec::new(), store.rv()));
        };
        let changes = store.changes_after(i, cursor)?;
        Ok((changes, store.rv()))
    }

    /// The object at `path`, if any.
    pub fn get(&self, path: &str) -> Option<Value> {
        let (resource, namespace, name) = self.locate(path, None)?;
        self.store().get(resource, namespace.as_deref(), &name).ok()
    }

    /// Deletes the object at `path` as a client would (finalizers respected).
    pub fn delete(&self, path: &str) -> Option<Value> {
        let (resource, namespace, name) = self.locate(path, None)?;
        let out = self
            .store()
            .delete(resource, namespace.as_deref(), &name, &Value::Null)
            .ok();
        self.published();
        out
    }

    /// Every stored object with its path.
    pub fn all(&self) -> Vec<(String, Value)> {
        let store = self.store();
        let mut out = Vec::new();
        for (i, r) in store.resources.iter().enumerate() {
            for obj in store.objects(i, None) {
                let name = obj["metadata"]["name"].as_str().unwrap_or_default();
                let path = match obj["metadata"]["namespace"].as_str() {
                    Some(ns) if r.namespaced => {
                        format!("{}/namespaces/{ns}/{}/{name}", r.prefix(), r.plural)
                    }
                    _ => format!("{}/{}/{name}", r.prefix(), r.plural),
                };
                out.push((path, obj));
            }
        }
        out
    }

    /// The objects of one resource (`api_version` as in `apiVersion`, e.g. `batch/v1`).
    pub fn objects(&self, api_version: &str, plural: &str) -> Vec<Value> {
        let mut out = Vec::new();
        self.visit(api_version, plural, |v| out.push(v.clone()));
        out
    }

    /// Shows `f` every object of one resource, in place (no copies; requests wait meanwhile).
    pub fn visit(&self, api_version: &str, plural: &str, f: impl FnMut(&Value)) {
        let store = self.store();
        if let Some(i) = store
            .resources
            .iter()
            .position(|r| r.api_version() == api_version && r.plural == plural)
        {
            store.visit(i, None, f);
        }
    }
}
