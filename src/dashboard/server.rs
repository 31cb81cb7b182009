//! The dashboard's HTTP server: the page and its two assets (embedded in the binary), the
//! latest view as JSON, a workload's detail, and the views as they are published, as
//! server-sent events. Every answer is filtered by what the caller may read ([`Authorize`]).

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::watch;

use super::view::{Published, View, WorkloadDetail};

const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/app.css");
const ICON: &str = include_str!("assets/favicon.svg");

/// Nothing the page loads comes from elsewhere, and it runs no inline code.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// An event stream is closed after this long: the page opens another, and the caller's
/// access is checked again.
const STREAM_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// A comment line keeps an idle stream open through proxies (`kubectl port-forward`).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Where the views are published: the driver publishes, the server reads the latest.
pub struct Board {
    tx: watch::Sender<Arc<Published>>,
    version: AtomicU64,
}

impl Board {
    pub fn new() -> Arc<Board> {
        Arc::new(Board {
            tx: watch::Sender::new(Arc::new(Published::default())),
            version: AtomicU64::new(0),
        })
    }

    /// Makes `p` the latest view (its version the next).
    pub fn publish(&self, mut p: Published) {
        p.view.version = self.version.fetch_add(1, Ordering::Relaxed) + 1;
        self.tx.send_replace(Arc::new(p));
    }

    pub fn latest(&self) -> Arc<Published> {
        self.tx.borrow().clone()
    }

    fn subscribe(&self) -> watch::Receiver<Arc<Published>> {
        self.tx.subscribe()
    }
}

/// What a caller may read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Everything (a dashboard bound to localhost, the simulator).
    All,
    Scoped {
        /// Cluster-scoped objects: ClusterQueues, Cohorts, topology, policies.
        cluster: bool,
        /// The namespaces whose LocalQueues and Workloads it may read (`None`: every one).
        namespaces: Option<BTreeSet<String>>,
    },
}

impl Access {
    fn namespace(&self, ns: &str) -> bool {
        match self {
            Access::All => true,
            Access::Scoped { namespaces, .. } => namespaces.as_ref().is_none_or(|n| n.contains(ns)),
        }
    }

    fn cluster(&self) -> bool {
        match self {
            Access::All => true,
            Access::Scoped { cluster, .. } => *cluster,
        }
    }

    /// What of `view` the caller may read.
    pub fn filter(&self, view: &View) -> View {
        if *self == Access::All {
            return view.clone();
        }
        let mut v = view.clone();
        if !self.cluster() {
            v.cluster_queues.clear();
            v.cohorts.clear();
            v.topology.clear();
            v.policies.clear();
        }
        v.local_queues.retain(|lq| self.namespace(&lq.namespace));
        let before = v.workloads.len();
        v.workloads.retain(|w| self.namespace(&w.namespace));
        // What is left out for the caller is not counted for them either.
        if before != v.workloads.len() {
            v.workloads_omitted = 0;
        }
        v
    }
}

/// A future the authorizer answers with.
pub type AccessFuture<'a> = Pin<Box<dyn Future<Output = Result<Access, String>> + Send + 'a>>;

/// Decides what a request may read, from its bearer token (if any) and the namespaces the
/// view holds.
pub trait Authorize: Send + Sync {
    fn authorize<'a>(&'a self, token: Option<&'a str>, namespaces: Vec<String>)
    -> AccessFuture<'a>;
}

/// Everyone may read everything.
pub struct Open;

impl Authorize for Open {
    fn authorize<'a>(&'a self, _: Option<&'a str>, _: Vec<String>) -> AccessFuture<'a> {
        Box::pin(async { Ok(Access::All) })
    }
}

type Body = BoxBody<Bytes, Infallible>;

fn reply(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).boxed());
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert("content-security-policy", HeaderValue::from_static(CSP));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

const TEXT: &str = "text/plain; charset=utf-8";
const JSON: &str = "application/json";

fn bearer(req: &Request<Incoming>) -> Option<String> {
    let v = req
        .headers()
        .get(hyper::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let token = v
        .strip_prefix("Bearer ")
        .or_else(|| v.strip_prefix("bearer "))?;
    Some(token.trim().to_string())
}

/// The namespaces of a view (what a scoped caller's access is asked for).
fn namespaces(p: &Published) -> Vec<String> {
    let set: BTreeSet<&str> = p
        .view
        .local_queues
        .iter()
        .map(|lq| lq.namespace.as_str())
        .chain(p.view.workloads.iter().map(|w| w.namespace.as_str()))
        .collect();
    set.into_iter().map(str::to_string).collect()
}

async fn answer(
    req: Request<Incoming>,
    board: Arc<Board>,
    auth: Arc<dyn Authorize>,
) -> Response<Body> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            TEXT,
            "the dashboard is read-only",
        );
    }
    let path = req.uri().path().to_string();
    match path.as_str() {
        "/" | "/index.html" => return reply(StatusCode::OK, "text/html; charset=utf-8", INDEX),
        "/app.js" => return reply(StatusCode::OK, "text/javascript; charset=utf-8", SCRIPT),
        "/app.css" => return reply(StatusCode::OK, "text/css; charset=utf-8", STYLE),
        "/favicon.svg" => return reply(StatusCode::OK, "image/svg+xml", ICON),
        "/healthz" => return reply(StatusCode::OK, TEXT, "ok"),
        _ => {}
    }
    if !path.starts_with("/api/") {
        return reply(StatusCode::NOT_FOUND, TEXT, "not found");
    }
    let latest = board.latest();
    let token = bearer(&req);
    let access = match auth.authorize(token.as_deref(), namespaces(&latest)).await {
        Ok(a) => a,
        Err(why) => {
            let mut r = reply(StatusCode::UNAUTHORIZED, TEXT, why);
            r.headers_mut()
                .insert("www-authenticate", HeaderValue::from_static("Bearer"));
            return r;
        }
    };
    match path.as_str() {
        "/api/view" => json(&access.filter(&latest.view)),
        "/api/events" => events(board, access),
        _ => match path
            .strip_prefix("/api/workloads/")
            .and_then(|r| r.split_once('/'))
        {
            Some((ns, name)) if access.namespace(ns) => {
                let key = format!("{ns}/{name}");
                match latest.details.get(&key) {
                    Some(d) => json::<WorkloadDetail>(d),
                    None => reply(
                        StatusCode::NOT_FOUND,
                        TEXT,
                        format!("workload {key} is not in the dashboard's view"),
                    ),
                }
            }
            Some((ns, _)) => reply(
                StatusCode::FORBIDDEN,
                TEXT,
                format!("you may not read workloads in namespace {ns}"),
            ),
            None => reply(StatusCode::NOT_FOUND, TEXT, "not found"),
        },
    }
}

fn json<T: serde::Serialize>(value: &T) -> Response<Body> {
    match serde_json::to_vec(value) {
        Ok(body) => reply(StatusCode::OK, JSON, body),
        Err(e) => reply(StatusCode::INTERNAL_SERVER_ERROR, TEXT, e.to_string()),
    }
}

fn frame(p: &Published, access: &Access) -> Bytes {
    let view = serde_json::to_string(&access.filter(&p.view)).unwrap_or_else(|_| "{}".into());
    Bytes::from(format!(
        "id: {}\nevent: view\ndata: {view}\n\n",
        p.view.version
    ))
}

/// The views as server-sent events: the latest at once, then each new one; a comment every
/// [`KEEP_ALIVE`] while nothing changes; closed after [`STREAM_LIFETIME`].
fn events(board: Arc<Board>, access: Access) -> Response<Body> {
    let rx = board.subscribe();
    let deadline = tokio::time::Instant::now() + STREAM_LIFETIME;
    let stream = futures::stream::unfold(
        (rx, access, true),
        move |(mut rx, access, first)| async move {
            if first {
                let p = rx.borrow_and_update().clone();
                let bytes = frame(&p, &access);
                return Some((Ok(Frame::data(bytes)), (rx, access, false)));
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            match tokio::time::timeout(KEEP_ALIVE, rx.changed()).await {
                Ok(Ok(())) => {
                    let p = rx.borrow_and_update().clone();
                    let bytes = frame(&p, &access);
                    Some((Ok(Frame::data(bytes)), (rx, access, false)))
                }
                Ok(Err(_)) => None,
                Err(_) => Some((
                    Ok(Frame::data(Bytes::from_static(b": keep-alive\n\n"))),
                    (rx, access, false),
                )),
            }
        },
    );
    let mut r = Response::new(StreamBody::new(stream).boxed());
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// Serves the dashboard on `listener` until the task is dropped.
pub async fn serve(
    listener: tokio::net::TcpListener,
    board: Arc<Board>,
    auth: Arc<dyn Authorize>,
) -> std::io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        let board = board.clone();
        let auth = auth.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<Incoming>| {
                let (board, auth) = (board.clone(), auth.clone());
                async move { Ok::<_, Infallible>(answer(req, board, auth).await) }
            });
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(error = %e, "dashboard connection ended");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dashboard::view::{LocalQueueView, State, WorkloadRow};

    fn view() -> View {
        let lq = |ns: &str| LocalQueueView {
            namespace: ns.into(),
            name: "lq".into(),
            cluster_queue: "cq".into(),
            pending: 0,
            holding: 0,
            fair_sharing_usage: Default::default(),
        };
        let wl = |ns: &str| WorkloadRow {
            namespace: ns.into(),
            name: "w".into(),
            local_queue: Some("lq".into()),
            cluster_queue: Some("cq".into()),
            priority: 0,
            state: State::Pending,
            position_in_local_queue: Some(0),
            position_in_cluster_queue: Some(0),
            reason: None,
        };
        View {
            local_queues: vec![lq("a"), lq("b")],
            workloads: vec![wl("a"), wl("b")],
            policies: vec![Default::default()],
            ..View::default()
        }
    }

    #[test]
    fn a_scoped_caller_sees_only_its_namespaces_and_no_cluster_objects_without_leave() {
        let access = Access::Scoped {
            cluster: false,
            namespaces: Some(["a".to_string()].into()),
        };
        let v = access.filter(&view());
        assert_eq!(v.local_queues.len(), 1);
        assert_eq!(v.workloads.len(), 1);
        assert_eq!(v.workloads[0].namespace, "a");
        assert!(v.policies.is_empty());
        let all = Access::Scoped {
            cluster: true,
            namespaces: None,
        };
        assert_eq!(all.filter(&view()), view());
    }
}
