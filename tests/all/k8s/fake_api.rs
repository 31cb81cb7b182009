//! An in-process API server double for the controller tests: it stores objects, applies merge
//! and JSON patches (refusing a merge patch whose `metadata.resourceVersion` is stale, as the
//! real API server does), answers GET / POST / DELETE, can be told to fail chosen requests, and
//! records every request it receives.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::{Value, json};

/// One request as the double received it.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub method: String,
    /// Path and query.
    pub uri: String,
    pub content_type: String,
    pub body: Value,
}

impl Recorded {
    /// `METHOD path` without the query, for compact assertions.
    pub fn line(&self) -> String {
        format!(
            "{} {}",
            self.method,
            self.uri.split('?').next().unwrap_or_default()
        )
    }
}

#[derive(Default)]
struct State {
    objects: BTreeMap<String, Value>,
    requests: Vec<Recorded>,
    /// (method, path suffix, status code): the next matching request fails once.
    failures: Vec<(String, String, u16)>,
    rv: u64,
}

#[derive(Clone, Default)]
pub struct FakeApi {
    state: Arc<Mutex<State>>,
}

fn status(code: u16, reason: &str, message: &str) -> (u16, Value) {
    (
        code,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": message, "reason": reason, "code": code}),
    )
}

impl FakeApi {
    pub fn client(&self) -> kube::Client {
        let api = self.clone();
        let service = tower::service_fn(move |req: Request<kube::client::Body>| {
            let api = api.clone();
            async move {
                let (parts, body) = req.into_parts();
                let bytes = body
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                let content_type = parts
                    .headers
                    .get(http::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string();
                let (code, out) = api.handle(
                    parts.method.as_str(),
                    &parts.uri.to_string(),
                    &content_type,
                    body,
                );
                let resp = Response::builder()
                    .status(code)
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(out.to_string())))
                    .expect("a response");
                Ok::<_, std::convert::Infallible>(resp)
            }
        });
        kube::Client::new(service, "default")
    }

    /// Stores an object at its path (e.g. `/apis/batch/v1/namespaces/ns/jobs/pi`).
    pub fn put(&self, path: &str, mut obj: Value) -> Value {
        let mut s = self.state.lock().unwrap();
        s.rv += 1;
        let rv = s.rv.to_string();
        let meta = obj["metadata"].as_object_mut().expect("metadata");
        meta.insert("resourceVersion".into(), json!(rv));
        meta.entry("uid").or_insert_with(|| {
            json!(format!(
                "uid-{}",
                path.rsplit('/').next().unwrap_or_default()
            ))
        });
        s.objects.insert(path.to_string(), obj.clone());
        obj
    }

    pub fn get(&self, path: &str) -> Option<Value> {
        self.state.lock().unwrap().objects.get(path).cloned()
    }

    pub fn fail_next(&self, method: &str, path_suffix: &str, code: u16) {
        self.state
            .lock()
            .unwrap()
            .failures
            .push((method.into(), path_suffix.into(), code));
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    pub fn clear_requests(&self) {
        self.state.lock().unwrap().requests.clear();
    }

    fn handle(&self, method: &str, uri: &str, content_type: &str, body: Value) -> (u16, Value) {
        let mut s = self.state.lock().unwrap();
        s.requests.push(Recorded {
            method: method.into(),
            uri: uri.into(),
            content_type: content_type.into(),
            body: body.clone(),
        });
        let path = uri.split('?').next().unwrap_or_default().to_string();
        if let Some(i) = s
            .failures
            .iter()
            .position(|(m, p, _)| m == method && path.ends_with(p.as_str()))
        {
            let (_, _, code) = s.failures.remove(i);
            let reason = if code == 409 {
                "Conflict"
            } else {
                "InternalError"
            };
            return status(code, reason, "injected failure");
        }
        let (object_path, _subresource) = match path.strip_suffix("/status") {
            Some(p) => (p.to_string(), true),
            None => (path.clone(), false),
        };
        match method {
            "GET" => match s.objects.get(&object_path) {
                Some(o) => (200, o.clone()),
                None => status(404, "NotFound", "not found"),
            },
            "POST" => {
                if path.contains("/events") {
                    return (201, body);
                }
                let name = body["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let key = format!("{path}/{name}");
                if s.objects.contains_key(&key) {
                    return status(409, "AlreadyExists", "already exists");
                }
                s.rv += 1;
                let mut obj = body;
                obj["metadata"]["resourceVersion"] = json!(s.rv.to_string());
                obj["metadata"]["uid"] = json!(format!("uid-{name}"));
                obj["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
                s.objects.insert(key, obj.clone());
                (201, obj)
            }
            "PATCH" => {
                if path.contains("/events/") {
                    return (200, body);
                }
                let Some(mut obj) = s.objects.get(&object_path).cloned() else {
                    return status(404, "NotFound", "not found");
                };
                if content_type.starts_with("application/merge-patch") {
                    if let Some(rv) = body["metadata"]["resourceVersion"].as_str()
                        && obj["metadata"]["resourceVersion"].as_str() != Some(rv)
                    {
                        return status(409, "Conflict", "the object has been modified");
                    }
                    json_patch::merge(&mut obj, &body);
                } else if content_type.starts_with("application/json-patch") {
                    let ops: json_patch::Patch = match serde_json::from_value(body) {
                        Ok(p) => p,
                        Err(e) => return status(400, "BadRequest", &e.to_string()),
                    };
                    if let Err(e) = json_patch::patch(&mut obj, &ops) {
                        return status(422, "Invalid", &e.to_string());
                    }
                } else {
                    return status(415, "UnsupportedMediaType", content_type);
                }
                s.rv += 1;
                obj["metadata"]["resourceVersion"] = json!(s.rv.to_string());
                s.objects.insert(object_path, obj.clone());
                (200, obj)
            }
            "DELETE" => match s.objects.remove(&object_path) {
                Some(_) => (
                    200,
                    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}),
                ),
                None => status(404, "NotFound", "not found"),
            },
            _ => status(405, "MethodNotAllowed", method),
        }
    }
}

impl FakeApi {
    /// Every stored object with its path.
    pub fn all(&self) -> Vec<(String, Value)> {
        let s = self.state.lock().unwrap();
        s.objects
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}
