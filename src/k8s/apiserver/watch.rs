//! WATCH: a chunked response of JSON lines `{"type": ..., "object": ...}` fed by a task that
//! follows the store's history from the requested resourceVersion.
//!
//! - `resourceVersion` unset or `"0"`: synthetic ADDED events for the current objects first;
//!   with `sendInitialEvents=true`, then a BOOKMARK annotated `k8s.io/initial-events-end`.
//! - `resourceVersion=N`: every change after N; N older than the history kept (compaction, or
//!   a watcher that fell that far behind) → one ERROR event carrying a `Status` of code 410,
//!   reason `Expired`, message `too old resource version: N (oldest)`, and the stream ends.
//! - With a label or field selector, an object that stops matching is a DELETED event and one
//!   that starts matching an ADDED event, as the API server's watch cache does.
//! - `allowWatchBookmarks=true`: a BOOKMARK with the latest resourceVersion every bookmark
//!   interval. `timeoutSeconds` ends the stream; so does [`super::ApiServer::expire_watches`].

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use hyper::body::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::Inner;
use super::selector::Selector;
use super::status::ApiError;
use super::store::{Change, ChangeType};

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// `resourceVersion` unset or `"0"`: the current state as ADDED events, then changes.
    Current,
    /// After this resourceVersion.
    After(u64),
}

/// A parsed watch request.
#[derive(Debug, Clone)]
pub struct WatchRequest {
    pub resource: usize,
    pub namespace: Option<String>,
    pub labels: Option<Selector>,
    pub fields: Option<Selector>,
    pub start: Start,
    pub bookmarks: bool,
    pub initial_events: bool,
    pub timeout: Duration,
}

impl WatchRequest {
    fn keeps(&self, obj: &Value) -> bool {
        self.labels.as_ref().is_none_or(|s| s.matches(obj))
            && self.fields.as_ref().is_none_or(|s| s.matches(obj))
    }

    fn in_namespace(&self, c: &Change) -> bool {
        self.namespace.as_ref().is_none_or(|ns| *ns == c.namespace)
    }

    /// The event a change is for this watch, if any.
    fn event(&self, c: &Change) -> Option<Value> {
        if !self.in_namespace(c) {
            return None;
        }
        let now = self.keeps(&c.object);
        let before = c.prev.as_ref().is_some_and(|p| self.keeps(p));
        let kind = match c.kind {
            ChangeType::Added => now.then_some("ADDED")?,
            ChangeType::Deleted => (before || now).then_some("DELETED")?,
            ChangeType::Modified => match (before, now) {
                (true, true) => "MODIFIED",
                (false, true) => "ADDED",
                (true, false) => "DELETED",
                (false, false) => return None,
            },
        };
        Some(json!({"type": kind, "object": c.object}))
    }
}

fn line(v: &Value, out: &mut Vec<u8>) {
    out.extend_from_slice(v.to_string().as_bytes());
    out.push(b'\n');
}

fn bookmark(kind: &str, api_version: &str, rv: u64, initial_end: bool) -> Value {
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    json!({"type": "BOOKMARK",
           "object": {"kind": kind, "apiVersion": api_version, "metadata": metadata}})
}

fn expired(requested: u64, floor: u64) -> Value {
    let status = ApiError::too_old(requested, floor);
    json!({"type": "ERROR", "object": status.to_status()})
}

/// Counts an open watch for as long as it lives.
struct Open(Arc<Inner>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open_watches.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Starts the task feeding one watch response; the receiver is the body's stream.
pub(crate) fn start(inner: Arc<Inner>, w: WatchRequest) -> mpsc::Receiver<Bytes> {
    let (tx, rx) = mpsc::channel(64);
    inner.open_watches.fetch_add(1, Ordering::SeqCst);
    tokio::spawn(async move {
        let _open = Open(inner.clone());
        run(inner, w, tx).await;
    });
    rx
}

async fn run(inner: Arc<Inner>, w: WatchRequest, tx: mpsc::Sender<Bytes>) {
    let deadline = tokio::time::Instant::now() + w.timeout;
    let mut head = inner.head.subscribe();
    let mut epoch = inner.epoch.subscribe();
    epoch.borrow_and_update();
    let (kind, api_version) = {
        let store = inner.store.lock().expect("store");
        let r = &store.resources[w.resource];
        (r.kind.clone(), r.api_version())
    };
    let mut out = Vec::new();
    head.borrow_and_update();
    let start = {
        let store = inner.store.lock().expect("store");
        match w.start {
            Start::Current => {
                for obj in store.objects(w.resource, w.namespace.as_deref()) {
                    if w.keeps(&obj) {
                        line(&json!({"type": "ADDED", "object": obj}), &mut out);
                    }
                }
                Some(store.rv())
            }
            Start::After(rv) if rv < store.floor() => {
                line(&expired(rv, store.floor()), &mut out);
                None
            }
            Start::After(rv) => Some(rv),
        }
    };
    let Some(mut cursor) = start else {
        let _ = tx.send(Bytes::from(out)).await;
        return;
    };
    if w.initial_events && w.start == Start::Current {
        line(&bookmark(&kind, &api_version, cursor, true), &mut out);
    }
    if !out.is_empty()
        && tx
            .send(Bytes::from(std::mem::take(&mut out)))
            .await
            .is_err()
    {
        return;
    }
    let period = inner.bookmark_interval();
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    loop {
        head.borrow_and_update();
        let scanned = {
            let store = inner.store.lock().expect("store");
            match store.changes_after(w.resource, cursor) {
                Ok(changes) => {
                    for c in &changes {
                        if let Some(ev) = w.event(c) {
                            line(&ev, &mut out);
                        }
                    }
                    Ok(store.rv().max(cursor))
                }
                Err(floor) => Err(floor),
            }
        };
        match scanned {
            Ok(rv) => cursor = rv,
            Err(floor) => {
                line(&expired(cursor, floor), &mut out);
                let _ = tx.send(Bytes::from(out)).await;
                return;
            }
        }
        if !out.is_empty()
            && tx
                .send(Bytes::from(std::mem::take(&mut out)))
                .await
                .is_err()
        {
            return;
        }
        tokio::select! {
            r = head.changed() => if r.is_err() { return },
            _ = epoch.changed() => return,
            _ = tokio::time::sleep_until(deadline) => return,
            _ = tx.closed() => return,
            _ = tick.tick(), if w.bookmarks => {
                line(&bookmark(&kind, &api_version, cursor, false), &mut out);
            }
        }
    }
}
