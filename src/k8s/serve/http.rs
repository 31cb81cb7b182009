//! The HTTP endpoints: `/metrics` (Prometheus text), `/healthz`, `/readyz` (every source listed,
//! a first pass done, and the webhooks serving with their CA bundle written), and Kueue's
//! pending-workloads visibility paths.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

use crate::k8s::serve::Shared;
use crate::k8s::serve::metrics::Metrics;
use crate::k8s::serve::visibility::GROUP_VERSION;

/// Kueue's default page size for pending workloads.
const DEFAULT_LIMIT: usize = 1000;

/// A response: status, content type, body.
pub type Reply = (StatusCode, &'static str, String);

/// Answers one GET.
pub fn route(path: &str, query: &str, shared: &RwLock<Shared>, metrics: &Metrics) -> Reply {
    const TEXT: &str = "text/plain; charset=utf-8";
    const JSON: &str = "application/json";
    let (ready, webhooks_pending) = shared
        .read()
        .map(|s| (s.ready, s.webhooks_pending))
        .unwrap_or((false, false));
    match path {
        "/metrics" => (
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            metrics.encode(),
        ),
        "/healthz" => (StatusCode::OK, TEXT, "ok".into()),
        "/readyz" if webhooks_pending => (
            StatusCode::SERVICE_UNAVAILABLE,
            TEXT,
            "waiting for the webhook certificate".into(),
        ),
        "/readyz" if ready => (StatusCode::OK, TEXT, "ok".into()),
        "/readyz" => (
            StatusCode::SERVICE_UNAVAILABLE,
            TEXT,
            "waiting for the first sync".into(),
        ),
        _ if path.starts_with(&format!("/apis/{}/", crate::k8s::policies::VISIBILITY)) => {
            shadows(path, shared)
        }
        _ => {
            let Some(rest) = path.strip_prefix(&format!("/apis/{GROUP_VERSION}/")) else {
                return (StatusCode::NOT_FOUND, TEXT, "not found".into());
            };
            let (offset, limit) = paging(query);
            let s = match leader_state(shared, "pending-workload") {
                Ok(s) => s,
                Err(reply) => return reply,
            };
            let parts: Vec<&str> = rest.split('/').collect();
            let body = match parts.as_slice() {
                ["clusterqueues", cq, "pendingworkloads"] => {
                    s.visibility.cluster_queue(cq, offset, limit)
                }
                ["namespaces", ns, "localqueues", lq, "pendingworkloads"] => {
                    Some(s.visibility.local_queue(ns, lq, offset, limit))
                }
                _ => None,
            };
            match body {
                Some(v) => (StatusCode::OK, JSON, v.to_string()),
                None => (StatusCode::NOT_FOUND, TEXT, "not found".into()),
            }
        }
    }
}

/// `/apis/visibility.wasq.dev/v1alpha1/shadows[/NAME]`: every shadow policy's figures, or one
/// with its latest differing decisions (the leader's: shadows run where the scheduler runs).
fn shadows(path: &str, shared: &RwLock<Shared>) -> Reply {
    const TEXT: &str = "text/plain; charset=utf-8";
    let s = match leader_state(shared, "shadow") {
        Ok(s) => s,
        Err(reply) => return reply,
    };
    let log = s.shadows.clone().unwrap_or_default();
    let rest = path
        .strip_prefix(&format!(
            "/apis/{}/shadows",
            crate::k8s::policies::VISIBILITY
        ))
        .map(|r| r.trim_matches('/'));
    let body = match rest {
        Some("") => Some(crate::k8s::policies::shadow_list(&log)),
        Some(name) if !name.contains('/') => crate::k8s::policies::shadow_report(&log, name),
        _ => None,
    };
    match body {
        Some(v) => (StatusCode::OK, "application/json", v.to_string()),
        None => (StatusCode::NOT_FOUND, TEXT, "not found".into()),
    }
}

/// The state behind a query only the leader answers (`what`: which queries, for the message).
fn leader_state<'a>(
    shared: &'a RwLock<Shared>,
    what: &str,
) -> Result<std::sync::RwLockReadGuard<'a, Shared>, Reply> {
    const TEXT: &str = "text/plain; charset=utf-8";
    let Ok(s) = shared.read() else {
        return Err((
            StatusCode::INTERNAL_SERVER_ERROR,
            TEXT,
            "state unavailable".into(),
        ));
    };
    if !s.leading {
        return Err((
            StatusCode::SERVICE_UNAVAILABLE,
            TEXT,
            format!("this replica is on standby: the leader answers {what} queries"),
        ));
    }
    Ok(s)
}

fn paging(query: &str) -> (usize, usize) {
    let mut offset = 0;
    let mut limit = DEFAULT_LIMIT;
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("offset", v)) => offset = v.parse().unwrap_or(0),
            Some(("limit", v)) => limit = v.parse().unwrap_or(DEFAULT_LIMIT),
            _ => {}
        }
    }
    (offset, limit)
}

/// Serves the endpoints on `addr` until the process ends.
pub async fn serve(
    addr: SocketAddr,
    shared: Arc<RwLock<Shared>>,
    metrics: Arc<Metrics>,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(%addr, "serving /metrics, /healthz, /readyz and visibility");
    loop {
        let (stream, _) = listener.accept().await?;
        let shared = shared.clone();
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<Incoming>| {
                let (status, content_type, body) = route(
                    req.uri().path(),
                    req.uri().query().unwrap_or_default(),
                    &shared,
                    &metrics,
                );
                let mut resp = Response::new(Full::new(Bytes::from(body)));
                *resp.status_mut() = status;
                if let Ok(v) = hyper::header::HeaderValue::from_str(content_type) {
                    resp.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
                }
                async move { Ok::<_, Infallible>(resp) }
            });
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(error = %e, "http connection ended");
            }
        });
    }
}
