//! An in-process double of an OCI registry: plain HTTP on `127.0.0.1:0`, content in memory,
//! enough of the distribution API for [`super::pull_module`] and [`super::push_module`]
//! (oci-client underneath) to run against it as against a registry.
//!
//! What it serves:
//! - `GET /v2/` (the version check, where a client learns the auth scheme);
//! - `GET`/`HEAD /v2/<name>/manifests/<tag|digest>` and `PUT` (the blobs a manifest names must
//!   be there; a digest reference must be the body's); `GET /v2/<name>/tags/list`;
//! - `GET`/`HEAD /v2/<name>/blobs/<digest>`;
//! - uploads: `POST /v2/<name>/blobs/uploads/` (monolithic with `?digest=`, else a session;
//!   `?mount=` is answered with a session, as the spec lets a registry), `PATCH` chunks
//!   (`Content-Range` must continue the upload) and `PUT <session>?digest=` (the digest is
//!   checked);
//! - `Docker-Content-Digest` on manifests and blobs, errors as the spec's JSON envelope.
//!
//! With [`RegistryDouble::start_with_basic_auth`], every request without those credentials is
//! answered `401` with `WWW-Authenticate: Basic realm="…"`.
//!
//! What a test controls: [`RegistryDouble::put_module`] (an artifact in the layout `wkg oci
//! push` writes), [`RegistryDouble::put_artifact`] / [`RegistryDouble::put_manifest`] (any
//! layers, any manifest under any reference — a tag overwritten, a manifest under a digest that
//! is not its own), [`RegistryDouble::corrupt_blob`], and the request log
//! ([`RegistryDouble::requests`], [`RegistryDouble::blob_downloads`]). The server stops when the
//! double is dropped.
//!
//! Not modelled: bearer tokens, the referrers API, deletes, cross-repository mounts, range
//! requests, pagination.

use std::collections::{BTreeSet, HashMap};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use base64::Engine as _;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::task::{JoinHandle, JoinSet};

use super::{
    Credentials, ModuleReference, OCI_MANIFEST_MEDIA_TYPE, PullOptions, WASM_CONFIG_MEDIA_TYPE,
    WASM_LAYER_MEDIA_TYPE, sha256_digest,
};

/// The realm of the double's `WWW-Authenticate` challenge.
pub const REALM: &str = "wasq-registry-double";

/// One request the double answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub method: Method,
    /// The path, without the query.
    pub path: String,
    pub status: StatusCode,
}

/// A registry served from memory until dropped.
pub struct RegistryDouble {
    address: SocketAddr,
    shared: Arc<Shared>,
    server: JoinHandle<()>,
}

struct Shared {
    /// `username:password`, when the double asks for basic credentials.
    basic: Option<String>,
    store: Mutex<Store>,
}

#[derive(Default)]
struct Store {
    repositories: HashMap<String, Repository>,
    uploads: HashMap<String, Upload>,
    next_upload: u64,
    requests: Vec<Recorded>,
}

#[derive(Default)]
struct Repository {
    blobs: HashMap<String, Vec<u8>>,
    /// By tag and by digest.
    manifests: HashMap<String, Manifest>,
}

#[derive(Clone)]
struct Manifest {
    media_type: String,
    body: Vec<u8>,
}

struct Upload {
    repository: String,
    data: Vec<u8>,
}

impl RegistryDouble {
    /// A registry that asks for no credentials.
    pub async fn start() -> std::io::Result<RegistryDouble> {
        Self::serve(None).await
    }

    /// A registry that answers `401` to any request without these basic credentials.
    pub async fn start_with_basic_auth(
        username: &str,
        password: &str,
    ) -> std::io::Result<RegistryDouble> {
        Self::serve(Some(format!("{username}:{password}"))).await
    }

    async fn serve(basic: Option<String>) -> std::io::Result<RegistryDouble> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let shared = Arc::new(Shared {
            basic,
            store: Mutex::new(Store::default()),
        });
        let server_shared = shared.clone();
        let server = tokio::spawn(async move {
            // Dropped with this task (the double's drop aborts it): every connection ends too.
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        let shared = server_shared.clone();
                        connections.spawn(async move {
                            let service = service_fn(move |request| {
                                let shared = shared.clone();
                                async move { Ok::<_, Infallible>(handle(&shared, request).await) }
                            });
                            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
                        });
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        Ok(RegistryDouble {
            address,
            shared,
            server,
        })
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `127.0.0.1:<port>`, the registry part of a reference.
    pub fn registry(&self) -> String {
        self.address.to_string()
    }

    /// `oci://127.0.0.1:<port>/<repository_and_tag>` parsed; panics if that is no reference.
    pub fn reference(&self, repository_and_tag: &str) -> ModuleReference {
        let text = format!("oci://{}/{repository_and_tag}", self.registry());
        text.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    /// Options that reach this double over plain HTTP, without credentials.
    pub fn options(&self) -> PullOptions {
        PullOptions {
            insecure_registries: vec![self.registry()],
            ..PullOptions::default()
        }
    }

    /// [`Self::options`] with these credentials.
    pub fn options_with(&self, username: &str, password: &str) -> PullOptions {
        let credentials = Credentials {
            username: username.to_string(),
            password: password.to_string(),
        };
        PullOptions {
            credentials: Some(credentials),
            ..self.options()
        }
    }

    /// Stores `bytes` as a WebAssembly OCI artifact (config `application/vnd.wasm.config.v0+json`,
    /// one `application/wasm` layer) tagged `tag`; returns the manifest's digest.
    pub fn put_module(&self, repository: &str, tag: &str, bytes: &[u8]) -> String {
        let config = serde_json::json!({
            "created": "2025-01-01T00:00:00Z",
            "architecture": "wasm",
            "os": "wasip2",
            "layerDigests": [sha256_digest(bytes)],
        });
        let config = serde_json::to_vec(&config).unwrap_or_default();
        self.put_artifact(
            repository,
            tag,
            WASM_CONFIG_MEDIA_TYPE,
            &config,
            &[(WASM_LAYER_MEDIA_TYPE, bytes)],
        )
    }

    /// Stores the config and layers (media type, bytes) as blobs and an OCI image manifest
    /// naming them under `tag`; returns the manifest's digest.
    pub fn put_artifact(
        &self,
        repository: &str,
        tag: &str,
        config_media_type: &str,
        config: &[u8],
        layers: &[(&str, &[u8])],
    ) -> String {
        let descriptor = |media_type: &str, bytes: &[u8]| {
            serde_json::json!({
                "mediaType": media_type,
                "digest": self.put_blob(repository, bytes),
                "size": bytes.len(),
            })
        };
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST_MEDIA_TYPE,
            "config": descriptor(config_media_type, config),
            "layers": layers.iter().map(|(media_type, bytes)| descriptor(media_type, bytes)).collect::<Vec<_>>(),
        });
        let body = serde_json::to_vec(&manifest).unwrap_or_default();
        self.put_manifest(repository, tag, OCI_MANIFEST_MEDIA_TYPE, &body)
    }

    /// Stores a blob; returns its digest.
    pub fn put_blob(&self, repository: &str, bytes: &[u8]) -> String {
        let digest = sha256_digest(bytes);
        let mut store = self.store();
        let repo = store
            .repositories
            .entry(repository.to_string())
            .or_default();
        repo.blobs.insert(digest.clone(), bytes.to_vec());
        digest
    }

    /// Stores `body` as a manifest under `reference` (a tag, replacing what it named, or any
    /// digest — even one that is not the body's) and under the body's own digest, which it
    /// returns. The blobs it names are not checked.
    pub fn put_manifest(
        &self,
        repository: &str,
        reference: &str,
        media_type: &str,
        body: &[u8],
    ) -> String {
        let digest = sha256_digest(body);
        let manifest = Manifest {
            media_type: media_type.to_string(),
            body: body.to_vec(),
        };
        let mut store = self.store();
        let repo = store
            .repositories
            .entry(repository.to_string())
            .or_default();
        repo.manifests.insert(digest.clone(), manifest.clone());
        repo.manifests.insert(reference.to_string(), manifest);
        digest
    }

    /// The manifest stored under a tag or digest.
    pub fn manifest(&self, repository: &str, reference: &str) -> Option<Vec<u8>> {
        let store = self.store();
        Some(
            store
                .repositories
                .get(repository)?
                .manifests
                .get(reference)?
                .body
                .clone(),
        )
    }

    /// The blob stored under a digest.
    pub fn blob(&self, repository: &str, digest: &str) -> Option<Vec<u8>> {
        let store = self.store();
        store
            .repositories
            .get(repository)?
            .blobs
            .get(digest)
            .cloned()
    }

    /// Flips the last byte of a stored blob, which is still served under its old digest (and
    /// `Docker-Content-Digest`). Panics if there is no such blob.
    pub fn corrupt_blob(&self, repository: &str, digest: &str) {
        let mut store = self.store();
        let blob = store
            .repositories
            .get_mut(repository)
            .and_then(|r| r.blobs.get_mut(digest))
            .unwrap_or_else(|| panic!("no blob {digest} in {repository}"));
        if let Some(last) = blob.last_mut() {
            *last ^= 0xff;
        } else {
            blob.push(0);
        }
    }

    /// Every request answered so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.store().requests.clone()
    }

    /// How many requests were answered.
    pub fn request_count(&self) -> usize {
        self.store().requests.len()
    }

    /// How many blobs were sent whole (`GET .../blobs/<digest>` answered 200).
    pub fn blob_downloads(&self) -> usize {
        let store = self.store();
        let is_download = |r: &&Recorded| {
            r.method == Method::GET
                && r.status == StatusCode::OK
                && r.path.contains("/blobs/sha256:")
        };
        store.requests.iter().filter(is_download).count()
    }

    fn store(&self) -> MutexGuard<'_, Store> {
        self.shared.store.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for RegistryDouble {
    fn drop(&mut self) {
        self.server.abort();
    }
}

type Reply = Response<Full<Bytes>>;

async fn handle(shared: &Shared, request: Request<Incoming>) -> Reply {
    let (parts, body) = request.into_parts();
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "BLOB_UPLOAD_INVALID",
                &format!("reading the body: {e}"),
            );
        }
    };
    let path = parts.uri.path().to_string();
    let reply = if authorized(shared, &parts.headers) {
        let mut store = shared.store.lock().unwrap_or_else(|e| e.into_inner());
        route(
            &mut store,
            &parts.method,
            &path,
            parts.uri.query().unwrap_or(""),
            &parts.headers,
            body,
        )
    } else {
        let mut reply = error(
            StatusCode::UNAUTHORIZED,
            "UNAUTHORIZED",
            "authentication required",
        );
        let challenge = format!("Basic realm=\"{REALM}\"");
        if let Ok(value) = challenge.parse() {
            reply.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        reply
    };
    let mut store = shared.store.lock().unwrap_or_else(|e| e.into_inner());
    store.requests.push(Recorded {
        method: parts.method,
        path,
        status: reply.status(),
    });
    reply
}

fn authorized(shared: &Shared, headers: &http::HeaderMap) -> bool {
    let Some(expected) = &shared.basic else {
        return true;
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|v| {
            base64::engine::general_purpose::STANDARD
                .decode(v.trim())
                .ok()
        });
    given.as_deref() == Some(expected.as_bytes())
}

fn route(
    store: &mut Store,
    method: &Method,
    path: &str,
    query: &str,
    headers: &http::HeaderMap,
    body: Bytes,
) -> Reply {
    if path == "/v2/" || path == "/v2" {
        return reply(StatusCode::OK)
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap_or_default();
    }
    let Some(rest) = path.strip_prefix("/v2/") else {
        return error(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "not a distribution API path",
        );
    };
    if let Some((name, session)) = rest.rsplit_once("/blobs/uploads/") {
        return upload(store, method, name, session, query, headers, body);
    }
    if let Some((name, reference)) = rest.rsplit_once("/manifests/") {
        return match *method {
            Method::GET | Method::HEAD => get_manifest(store, name, reference),
            Method::PUT => put_manifest(store, name, reference, headers, body),
            _ => unsupported(method),
        };
    }
    if let Some((name, digest)) = rest.rsplit_once("/blobs/") {
        return match *method {
            Method::GET | Method::HEAD => get_blob(store, name, digest),
            _ => unsupported(method),
        };
    }
    if let Some(name) = rest.strip_suffix("/tags/list")
        && *method == Method::GET
    {
        let Some(repo) = store.repositories.get(name) else {
            return error(
                StatusCode::NOT_FOUND,
                "NAME_UNKNOWN",
                &format!("repository {name} not known"),
            );
        };
        let tags: BTreeSet<&String> = repo
            .manifests
            .keys()
            .filter(|k| !k.starts_with("sha256:"))
            .collect();
        let body = serde_json::to_vec(&serde_json::json!({"name": name, "tags": tags}))
            .unwrap_or_default();
        return reply(StatusCode::OK)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .unwrap_or_default();
    }
    error(
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
        "not a distribution API path",
    )
}

fn get_manifest(store: &Store, name: &str, reference: &str) -> Reply {
    let Some(manifest) = store
        .repositories
        .get(name)
        .and_then(|r| r.manifests.get(reference))
    else {
        return error(
            StatusCode::NOT_FOUND,
            "MANIFEST_UNKNOWN",
            &format!("manifest {reference} not known in {name}"),
        );
    };
    reply(StatusCode::OK)
        .header(header::CONTENT_TYPE, &manifest.media_type)
        .header("Docker-Content-Digest", sha256_digest(&manifest.body))
        .body(Full::new(Bytes::from(manifest.body.clone())))
        .unwrap_or_default()
}

fn put_manifest(
    store: &mut Store,
    name: &str,
    reference: &str,
    headers: &http::HeaderMap,
    body: Bytes,
) -> Reply {
    let media_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let Ok(manifest) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return error(
            StatusCode::BAD_REQUEST,
            "MANIFEST_INVALID",
            "the manifest is not JSON",
        );
    };
    let digest = sha256_digest(&body);
    if reference.starts_with("sha256:") && reference != digest {
        return error(
            StatusCode::BAD_REQUEST,
            "DIGEST_INVALID",
            &format!("the manifest's digest is {digest}"),
        );
    }
    let repo = store.repositories.entry(name.to_string()).or_default();
    let named = std::iter::once(&manifest["config"])
        .chain(manifest["layers"].as_array().into_iter().flatten());
    for descriptor in named {
        let blob = descriptor["digest"].as_str().unwrap_or_default();
        if !repo.blobs.contains_key(blob) {
            return error(
                StatusCode::BAD_REQUEST,
                "MANIFEST_BLOB_UNKNOWN",
                &format!("blob {blob:?} not known"),
            );
        }
    }
    let manifest = Manifest {
        media_type,
        body: body.to_vec(),
    };
    repo.manifests.insert(digest.clone(), manifest.clone());
    repo.manifests.insert(reference.to_string(), manifest);
    reply(StatusCode::CREATED)
        .header(header::LOCATION, format!("/v2/{name}/manifests/{digest}"))
        .header("Docker-Content-Digest", digest)
        .body(Full::default())
        .unwrap_or_default()
}

fn get_blob(store: &Store, name: &str, digest: &str) -> Reply {
    let Some(blob) = store
        .repositories
        .get(name)
        .and_then(|r| r.blobs.get(digest))
    else {
        return error(
            StatusCode::NOT_FOUND,
            "BLOB_UNKNOWN",
            &format!("blob {digest} not known in {name}"),
        );
    };
    reply(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .header("Docker-Content-Digest", digest)
        .body(Full::new(Bytes::from(blob.clone())))
        .unwrap_or_default()
}

fn upload(
    store: &mut Store,
    method: &Method,
    name: &str,
    session: &str,
    query: &str,
    headers: &http::HeaderMap,
    body: Bytes,
) -> Reply {
    let digest = query_value(query, "digest");
    match (method, session) {
        // A monolithic upload in one POST.
        (&Method::POST, "") if digest.is_some() => finish(
            store,
            name,
            digest.as_deref().unwrap_or_default(),
            body.to_vec(),
        ),
        (&Method::POST, "") => {
            store.next_upload += 1;
            let id = format!("upload-{}", store.next_upload);
            store.uploads.insert(
                id.clone(),
                Upload {
                    repository: name.to_string(),
                    data: Vec::new(),
                },
            );
            session_reply(StatusCode::ACCEPTED, name, &id, 0)
        }
        (&Method::PATCH, id) => {
            let Some(upload) = store.uploads.get_mut(id).filter(|u| u.repository == name) else {
                return error(
                    StatusCode::NOT_FOUND,
                    "BLOB_UPLOAD_UNKNOWN",
                    &format!("upload {id} not known"),
                );
            };
            let start = headers
                .get(header::CONTENT_RANGE)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.split('-').next())
                .and_then(|v| v.trim().parse::<usize>().ok());
            if start.is_some_and(|s| s != upload.data.len()) {
                return error(
                    StatusCode::RANGE_NOT_SATISFIABLE,
                    "BLOB_UPLOAD_INVALID",
                    "the chunk does not continue the upload",
                );
            }
            upload.data.extend_from_slice(&body);
            let length = upload.data.len();
            session_reply(StatusCode::ACCEPTED, name, id, length)
        }
        (&Method::PUT, id) => {
            let Some(digest) = digest else {
                return error(
                    StatusCode::BAD_REQUEST,
                    "DIGEST_INVALID",
                    "the upload's PUT names no digest",
                );
            };
            let Some(mut upload) = store.uploads.remove(id).filter(|u| u.repository == name) else {
                return error(
                    StatusCode::NOT_FOUND,
                    "BLOB_UPLOAD_UNKNOWN",
                    &format!("upload {id} not known"),
                );
            };
            upload.data.extend_from_slice(&body);
            finish(store, name, &digest, upload.data)
        }
        _ => unsupported(method),
    }
}

fn finish(store: &mut Store, name: &str, digest: &str, data: Vec<u8>) -> Reply {
    let actual = sha256_digest(&data);
    if actual != digest {
        return error(
            StatusCode::BAD_REQUEST,
            "DIGEST_INVALID",
            &format!("the upload's digest is {actual}, not {digest}"),
        );
    }
    let repo = store.repositories.entry(name.to_string()).or_default();
    repo.blobs.insert(actual.clone(), data);
    reply(StatusCode::CREATED)
        .header(header::LOCATION, format!("/v2/{name}/blobs/{actual}"))
        .header("Docker-Content-Digest", actual)
        .body(Full::default())
        .unwrap_or_default()
}

fn session_reply(status: StatusCode, name: &str, id: &str, length: usize) -> Reply {
    reply(status)
        .header(header::LOCATION, format!("/v2/{name}/blobs/uploads/{id}"))
        .header(header::RANGE, format!("0-{}", length.saturating_sub(1)))
        .header("Docker-Upload-UUID", id)
        .body(Full::default())
        .unwrap_or_default()
}

fn reply(status: StatusCode) -> http::response::Builder {
    Response::builder()
        .status(status)
        .header("Docker-Distribution-API-Version", "registry/2.0")
}

fn error(status: StatusCode, code: &str, message: &str) -> Reply {
    let body = serde_json::json!({"errors": [{"code": code, "message": message}]});
    reply(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(
            serde_json::to_vec(&body).unwrap_or_default(),
        )))
        .unwrap_or_default()
}

fn unsupported(method: &Method) -> Reply {
    error(
        StatusCode::METHOD_NOT_ALLOWED,
        "UNSUPPORTED",
        &format!("{method} is not supported here"),
    )
}

/// A query parameter's value, percent-decoded (`sha256%3A…` is `sha256:…`).
fn query_value(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == key).then(|| percent_decode(v))
    })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One request on a fresh connection: status, headers, body.
    async fn send(
        registry: &RegistryDouble,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (StatusCode, http::HeaderMap, Vec<u8>) {
        let stream = tokio::net::TcpStream::connect(registry.address())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        tokio::spawn(connection);
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, registry.registry());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(Full::new(Bytes::copy_from_slice(body)))
            .unwrap_or_else(|e| panic!("{e}"));
        let response = sender
            .send_request(request)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let (parts, body) = response.into_parts();
        let body = body
            .collect()
            .await
            .map(|b| b.to_bytes().to_vec())
            .unwrap_or_default();
        (parts.status, parts.headers, body)
    }

    fn header<'h>(headers: &'h http::HeaderMap, name: &str) -> &'h str {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn serves_the_distribution_api_paths_a_client_does_not_take() {
        let registry = RegistryDouble::start()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let manifest_digest = registry.put_module("a/b", "v1", b"\0asm\x0d\x00\x01\x00module");

        // HEAD: the length and digest, no body.
        let (status, headers, body) =
            send(&registry, Method::HEAD, "/v2/a/b/manifests/v1", &[], b"").await;
        let length = registry
            .manifest("a/b", "v1")
            .map(|m| m.len())
            .unwrap_or_default();
        assert_eq!((status, body.len()), (StatusCode::OK, 0));
        assert_eq!(header(&headers, "docker-content-digest"), manifest_digest);
        assert_eq!(header(&headers, "content-length"), length.to_string());
        assert_eq!(header(&headers, "content-type"), OCI_MANIFEST_MEDIA_TYPE);

        // A monolithic upload in one POST, the digest percent-encoded.
        let blob = b"a blob";
        let digest = sha256_digest(blob);
        let path = format!(
            "/v2/a/b/blobs/uploads/?digest={}",
            digest.replace(':', "%3A")
        );
        let (status, headers, _) = send(&registry, Method::POST, &path, &[], blob).await;
        assert_eq!(status, StatusCode::CREATED);
        assert_eq!(
            header(&headers, "location"),
            format!("/v2/a/b/blobs/{digest}")
        );
        let (status, _, body) = send(
            &registry,
            Method::GET,
            &format!("/v2/a/b/blobs/{digest}"),
            &[],
            b"",
        )
        .await;
        assert_eq!((status, body.as_slice()), (StatusCode::OK, blob.as_slice()));

        // A session whose PUT names another digest; a chunk that skips ahead.
        let (status, headers, _) =
            send(&registry, Method::POST, "/v2/a/b/blobs/uploads/", &[], b"").await;
        assert_eq!(status, StatusCode::ACCEPTED);
        let location = header(&headers, "location").to_string();
        let (status, _, _) = send(
            &registry,
            Method::PATCH,
            &location,
            &[("content-range", "5-9")],
            b"12345",
        )
        .await;
        assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE);
        let put = format!("{location}?digest={}", sha256_digest(b"other"));
        let (status, _, body) = send(&registry, Method::PUT, &put, &[], b"data").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(String::from_utf8_lossy(&body).contains("DIGEST_INVALID"));

        // A manifest naming a blob the registry does not have.
        let unknown = serde_json::json!({
            "schemaVersion": 2,
            "config": {"mediaType": WASM_CONFIG_MEDIA_TYPE, "digest": sha256_digest(b"nowhere"), "size": 7},
            "layers": [],
        });
        let content_type = [("content-type", OCI_MANIFEST_MEDIA_TYPE)];
        let (status, _, body) = send(
            &registry,
            Method::PUT,
            "/v2/a/b/manifests/v2",
            &content_type,
            unknown.to_string().as_bytes(),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(String::from_utf8_lossy(&body).contains("MANIFEST_BLOB_UNKNOWN"));

        let (status, _, body) = send(&registry, Method::GET, "/v2/a/b/tags/list", &[], b"").await;
        let tags: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        assert_eq!(
            (status, tags["tags"].clone()),
            (StatusCode::OK, serde_json::json!(["v1"]))
        );
        let (status, _, body) =
            send(&registry, Method::GET, "/v2/a/c/manifests/v1", &[], b"").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(String::from_utf8_lossy(&body).contains("MANIFEST_UNKNOWN"));
        assert_eq!(registry.request_count(), 9);
        assert_eq!(registry.blob_downloads(), 1);

        // Dropped, it stops listening.
        let address = registry.address();
        drop(registry);
        tokio::task::yield_now().await;
        let mut refused = false;
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(address).await.is_err() {
                refused = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(refused, "still listening on {address}");
    }

    #[tokio::test]
    async fn basic_auth_is_asked_for_on_every_path() {
        let registry = RegistryDouble::start_with_basic_auth("u", "p")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let (status, headers, _) = send(&registry, Method::GET, "/v2/", &[], b"").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(
            header(&headers, "www-authenticate"),
            format!("Basic realm=\"{REALM}\"")
        );
        let wrong = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("u:x")
        );
        let (status, _, _) = send(
            &registry,
            Method::GET,
            "/v2/r/manifests/t",
            &[("authorization", &wrong)],
            b"",
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let right = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("u:p")
        );
        let (status, _, _) = send(
            &registry,
            Method::GET,
            "/v2/",
            &[("authorization", &right)],
            b"",
        )
        .await;
        assert_eq!(status, StatusCode::OK);
    }
}
