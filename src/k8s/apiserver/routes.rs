//! One HTTP request → one response: the request recorded and counted, the latency waited, an
//! armed failure returned, then discovery or the verb on the store (WATCH streams).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Bytes, Frame};
use serde_json::{Value, json};

use super::faults::Recorded;
use super::resources::{self, Target};
use super::selector::Selector;
use super::status::ApiError;
use super::store::{PatchKind, apply_patch};
use super::watch::{self, Start, WatchRequest};
use super::{Inner, discovery};

pub(crate) type Body = UnsyncBoxBody<Bytes, Infallible>;

fn respond(code: u16, body: &Value) -> Response<Body> {
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())).boxed_unsync())
        .expect("a response")
}

pub(crate) fn failure(e: &ApiError) -> Response<Body> {
    respond(e.code, &e.to_status())
}

/// `%XX` and `+` decoded.
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match u8::from_str_radix(&s[i + 1..i + 3], 16) {
                Ok(b) => {
                    out.push(b);
                    i += 2;
                }
                Err(_) => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn query(q: Option<&str>) -> HashMap<String, String> {
    q.unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// The Kubernetes verb of a request: `watch`, `get` (one object), `list`, `create`, `update`,
/// `patch`, `delete`, `deletecollection` (the double's request counters; also the controller
/// bench's against a real server).
pub fn verb(method: &Method, name: bool, watch: bool) -> &'static str {
    match *method {
        Method::GET if watch => "watch",
        Method::GET if name => "get",
        Method::GET => "list",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if name => "delete",
        Method::DELETE => "deletecollection",
        _ => "unknown",
    }
}

fn selectors(
    q: &HashMap<String, String>,
) -> Result<(Option<Selector>, Option<Selector>), ApiError> {
    let labels = match q.get("labelSelector").filter(|s| !s.is_empty()) {
        Some(s) => Some(Selector::labels(s)?),
        None => None,
    };
    let fields = match q.get("fieldSelector").filter(|s| !s.is_empty()) {
        Some(s) => Some(Selector::fields(s)?),
        None => None,
    };
    Ok((labels, fields))
}

fn parse_rv(s: &str) -> Result<u64, ApiError> {
    s.parse()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {s}")))
}

/// Answers one request, whatever carries its body: the in-memory client's
/// (`kube::client::Body`) or a TCP connection's (`hyper::body::Incoming`, [`super::http`]).
pub(crate) async fn serve<B: hyper::body::Body>(
    inner: Arc<Inner>,
    req: Request<B>,
) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let bytes = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body: Value = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    };
    let content_type = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let path = parts.uri.path().to_string();
    let q = query(parts.uri.query());
    let method = parts.method.clone();
    let (latency, injected) = {
        let mut f = inner.faults.lock().expect("faults");
        if f.record {
            f.log.push(Recorded {
                method: method.to_string(),
                uri: parts.uri.to_string(),
                content_type: content_type.clone(),
                body: body.clone(),
            });
        }
        (
            f.take_latency(method.as_str(), &path),
            f.take_failure(method.as_str(), &path),
        )
    };
    if latency > Duration::ZERO {
        tokio::time::sleep(latency).await;
    }
    let target = {
        let store = inner.store.lock().expect("store");
        resources::parse(&store.resources, &path)
    };
    let watching = matches!(q.get("watch").map(String::as_str), Some("true" | "1"));
    if let Some(Target::Object {
        resource,
        name,
        subresource,
        ..
    }) = &target
    {
        let plural = {
            let store = inner.store.lock().expect("store");
            store.resources[*resource].plural.clone()
        };
        let what = match subresource {
            Some(s) => format!("{plural}/{s}"),
            None => plural,
        };
        let v = verb(&method, name.is_some(), watching);
        inner.faults.lock().expect("faults").count(v, &what);
    }
    if let Some(code) = injected {
        return failure(&ApiError::injected(code));
    }
    if path == "/version" {
        return respond(200, &discovery::version());
    }
    let Some(target) = target else {
        return failure(&ApiError::no_route());
    };
    match target {
        Target::CoreVersions => respond(200, &discovery::core_versions()),
        Target::Groups => {
            let store = inner.store.lock().expect("store");
            respond(200, &discovery::groups(&store.resources))
        }
        Target::GroupVersion { group, version } => {
            let store = inner.store.lock().expect("store");
            match discovery::group_version(&store.resources, &group, &version) {
                Some(v) => respond(200, &v),
                None => failure(&ApiError::no_route()),
            }
        }
        Target::Object {
            resource,
            namespace,
            name,
            subresource,
        } => {
            let request = ObjectRequest {
                method,
                resource,
                namespace,
                name,
                subresource,
                query: q,
                content_type,
                body,
            };
            if watching {
                return match watch_request(&request) {
                    Ok(w) => stream(inner, w),
                    Err(e) => failure(&e),
                };
            }
            match object(&inner, request) {
                Ok((code, v)) => respond(code, &v),
                Err(e) => failure(&e),
            }
        }
    }
}

struct ObjectRequest {
    method: Method,
    resource: usize,
    namespace: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
    query: HashMap<String, String>,
    content_type: String,
    body: Value,
}

fn watch_request(r: &ObjectRequest) -> Result<WatchRequest, ApiError> {
    let (labels, fields) = selectors(&r.query)?;
    let start = match r.query.get("resourceVersion").map(String::as_str) {
        None | Some("") | Some("0") => Start::Current,
        Some(rv) => Start::After(parse_rv(rv)?),
    };
    let timeout = match r.query.get("timeoutSeconds") {
        Some(t) => Duration::from_secs(
            t.parse()
                .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds: {t}")))?,
        ),
        None => Duration::from_secs(1800),
    };
    Ok(WatchRequest {
        resource: r.resource,
        namespace: r.namespace.clone(),
        labels,
        fields,
        start,
        bookmarks: r
            .query
            .get("allowWatchBookmarks")
            .is_some_and(|v| v == "true"),
        initial_events: r
            .query
            .get("sendInitialEvents")
            .is_some_and(|v| v == "true"),
        timeout,
    })
}

fn stream(inner: Arc<Inner>, w: WatchRequest) -> Response<Body> {
    let rx = watch::start(inner, w);
    let frames = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .header("transfer-encoding", "chunked")
        .body(StreamBody::new(frames).boxed_unsync())
        .expect("a response")
}

/// Whether a PATCH is a server-side apply.
fn is_apply(content_type: &str) -> bool {
    content_type.split(';').next().unwrap_or_default().trim() == "application/apply-patch+yaml"
}

fn patch_kind(content_type: &str) -> Result<PatchKind, ApiError> {
    let ct = content_type.split(';').next().unwrap_or_default().trim();
    match ct {
        "application/merge-patch+json" => Ok(PatchKind::Merge),
        "application/json-patch+json" => Ok(PatchKind::Json),
        "application/strategic-merge-patch+json" | "application/apply-patch+yaml" => {
            Ok(PatchKind::MergeLike)
        }
        other => Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml; got {other}"
            ),
        )),
    }
}

fn object(inner: &Inner, r: ObjectRequest) -> Result<(u16, Value), ApiError> {
    let ns = r.namespace.as_deref();
    let status_write = match r.subresource.as_deref() {
        None => false,
        Some("status") => true,
        Some(_) => return Err(ApiError::no_route()),
    };
    let mut store = inner.store.lock().expect("store");
    let res = store.resources[r.resource].clone();
    if status_write && !res.status {
        return Err(ApiError::no_route());
    }
    let result = match (&r.method, r.name.as_deref()) {
        (&Method::GET, Some(name)) => (200, store.get(r.resource, ns, name)?),
        (&Method::GET, None) => {
            let (labels, fields) = selectors(&r.query)?;
            let keep = |v: &Value| {
                labels.as_ref().is_none_or(|s| s.matches(v))
                    && fields.as_ref().is_none_or(|s| s.matches(v))
            };
            let exact = match (
                r.query.get("resourceVersion").map(String::as_str),
                r.query.get("resourceVersionMatch").map(String::as_str),
            ) {
                (Some(rv), Some("Exact")) => Some(parse_rv(rv)?),
                (Some(rv), _) if !rv.is_empty() && rv != "0" => {
                    let rv = parse_rv(rv)?;
                    if rv > store.rv() {
                        return Err(ApiError::new(
                            504,
                            "Timeout",
                            format!("Too large resource version: {rv}, current: {}", store.rv()),
                        ));
                    }
                    None
                }
                _ => None,
            };
            let limit = match r.query.get("limit") {
                Some(l) => Some(
                    l.parse::<usize>()
                        .map_err(|_| ApiError::bad_request(format!("invalid limit: {l}")))?,
                ),
                None => None,
            };
            let listed = store.list(
                r.resource,
                ns,
                &keep,
                exact,
                limit,
                r.query
                    .get("continue")
                    .map(String::as_str)
                    .filter(|c| !c.is_empty()),
            )?;
            let mut metadata = json!({"resourceVersion": listed.rv.to_string()});
            if let Some(c) = listed.continue_token {
                metadata["continue"] = json!(c);
            }
            let mut items = listed.items;
            if res.is_builtin() {
                for item in &mut items {
                    if let Some(fields) = item.as_object_mut() {
                        fields.remove("apiVersion");
                        fields.remove("kind");
                    }
                }
            }
            (
                200,
                json!({"kind": format!("{}List", res.kind), "apiVersion": res.api_version(),
                       "metadata": metadata, "items": items}),
            )
        }
        (&Method::POST, None) => (201, store.create(r.resource, ns, r.body)?),
        (&Method::PUT, Some(name)) => {
            let body = r.body;
            (
                200,
                store.update(r.resource, ns, name, status_write, &|_| Ok(body.clone()))?,
            )
        }
        (&Method::PATCH, Some(name))
            if !status_write
                && is_apply(&r.content_type)
                && store.get(r.resource, ns, name).is_err() =>
        {
            // Server-side apply of an object that does not exist creates it.
            let mut body = r.body;
            if body.pointer("/metadata/name").is_none() {
                body["metadata"]["name"] = json!(name);
            }
            (201, store.create(r.resource, ns, body)?)
        }
        (&Method::PATCH, Some(name)) => {
            let kind = patch_kind(&r.content_type)?;
            let body = r.body;
            let change = |old: &Value| apply_patch(kind, &res, name, old, &body);
            (
                200,
                store.update(r.resource, ns, name, status_write, &change)?,
            )
        }
        (&Method::DELETE, Some(name)) => {
            let pre = r.body.get("preconditions").cloned().unwrap_or(Value::Null);
            let obj = store.delete(r.resource, ns, name, &pre)?;
            (200, obj)
        }
        _ => {
            return Err(ApiError::new(
                405,
                "MethodNotAllowed",
                format!("{} is not supported here", r.method),
            ));
        }
    };
    let rv = store.rv();
    drop(store);
    inner.head.send_replace(rv);
    Ok(result)
}
