//! Kueue's visibility API behind the Kubernetes aggregation layer, as Kueue's visibility server
//! is reached: the `APIService`s `v1beta2.visibility.kueue.x-k8s.io` point at a Service on this
//! HTTPS listener, and `kubectl get --raw /apis/visibility.kueue.x-k8s.io/v1beta2/...` (or
//! kueuectl) asks the API server, which proxies the request here.
//!
//! Authentication is the front proxy's, delegated as an extension API server's is: the API
//! server presents its proxy client certificate, signed by the request-header CA it publishes in
//! the ConfigMap `kube-system/extension-apiserver-authentication` (with the certificate names
//! allowed and the headers naming the user and groups); a request without such a certificate
//! is refused (401). Authorization is the API server's: a `SubjectAccessReview` for `get` on
//! `clusterqueues/pendingworkloads` (or `localqueues/pendingworkloads` in the namespace), with
//! Kubernetes' message when it is denied (403). Discovery (`/apis/visibility.kueue.x-k8s.io/v1beta2`)
//! is answered to any authenticated front proxy.
//!
//! The certificate served is the webhooks' ([`crate::k8s::serve::webhook::server::CertResolver`]). Kueue's
//! `APIService` skips verifying it (`insecureSkipTLSVerify: true`, Kueue's own manifest); so
//! does wasq's deploy.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use anyhow::Context;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{HeaderMap, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use rustls::RootCertStore;
use rustls::ServerConfig;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls::server::WebPkiClientVerifier;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::k8s::serve::Shared;
use crate::k8s::serve::metrics::Metrics;
use crate::k8s::serve::visibility::GROUP_VERSION;
use crate::k8s::serve::webhook::server::CertResolver;

/// Where the API server publishes how its front proxy authenticates.
pub const AUTHENTICATION_CONFIGMAP: (&str, &str) =
    ("kube-system", "extension-apiserver-authentication");

/// The visibility API's group.
const GROUP: &str = "visibility.kueue.x-k8s.io";

/// How the API server's front proxy is recognised (from [`AUTHENTICATION_CONFIGMAP`]).
#[derive(Debug, Clone)]
pub struct FrontProxy {
    roots: Arc<RootCertStore>,
    /// Common names a proxy certificate may have (empty: any the CA signed).
    allowed_names: Vec<String>,
    username_headers: Vec<String>,
    group_headers: Vec<String>,
}

impl FrontProxy {
    /// Reads the request-header settings the API server published.
    ///
    /// # Errors
    /// When the ConfigMap cannot be read or carries no request-header CA (the API server runs
    /// without `--requestheader-client-ca-file`: it has no aggregation layer to serve).
    pub async fn read(client: &kube::Client) -> anyhow::Result<FrontProxy> {
        let (namespace, name) = AUTHENTICATION_CONFIGMAP;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
        let map = api
            .get(name)
            .await
            .with_context(|| format!("reading ConfigMap {namespace}/{name}"))?;
        FrontProxy::from_data(&map.data.unwrap_or_default())
            .with_context(|| format!("ConfigMap {namespace}/{name}"))
    }

    fn from_data(data: &BTreeMap<String, String>) -> anyhow::Result<FrontProxy> {
        let pem = data
            .get("requestheader-client-ca-file")
            .context("no requestheader-client-ca-file: the API server has no front proxy")?;
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
            let cert = cert.context("requestheader-client-ca-file is not PEM")?;
            roots
                .add(cert)
                .context("requestheader-client-ca-file holds an unusable certificate")?;
        }
        anyhow::ensure!(
            !roots.is_empty(),
            "requestheader-client-ca-file holds no certificate"
        );
        // The lists are JSON arrays of strings.
        let list = |key: &str, default: &[&str]| -> anyhow::Result<Vec<String>> {
            match data.get(key) {
                Some(v) if !v.trim().is_empty() => {
                    serde_json::from_str(v).with_context(|| format!("{key} is not a JSON list"))
                }
                _ => Ok(default.iter().map(|s| s.to_string()).collect()),
            }
        };
        Ok(FrontProxy {
            roots: Arc::new(roots),
            allowed_names: list("requestheader-allowed-names", &[])?,
            username_headers: list("requestheader-username-headers", &["X-Remote-User"])?,
            group_headers: list("requestheader-group-headers", &["X-Remote-Group"])?,
        })
    }

    /// The user and groups a request from an authenticated proxy names.
    fn user(&self, headers: &HeaderMap) -> Option<(String, Vec<String>)> {
        let user = self
            .username_headers
            .iter()
            .find_map(|h| headers.get(h.as_str())?.to_str().ok())
            .filter(|u| !u.is_empty())?
            .to_string();
        let groups = self
            .group_headers
            .iter()
            .flat_map(|h| headers.get_all(h.as_str()))
            .filter_map(|v| v.to_str().ok())
            .map(str::to_string)
            .collect();
        Some((user, groups))
    }

    /// Whether a verified client certificate is the front proxy's.
    fn admits(&self, cert: &CertificateDer<'_>) -> bool {
        if self.allowed_names.is_empty() {
            return true;
        }
        let Ok((_, parsed)) = x509_parser::parse_x509_certificate(cert.as_ref()) else {
            return false;
        };
        parsed
            .subject()
            .iter_common_name()
            .filter_map(|cn| cn.as_str().ok())
            .any(|cn| self.allowed_names.iter().any(|a| a == cn))
    }
}

/// TLS with the webhooks' certificate, asking clients for a certificate of the front proxy's CA
/// (a client without one still connects, and is answered 401).
fn tls_config(
    resolver: Arc<CertResolver>,
    front: &FrontProxy,
) -> anyhow::Result<Arc<ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier =
        WebPkiClientVerifier::builder_with_provider(front.roots.clone(), provider.clone())
            .allow_unauthenticated()
            .build()
            .context("the front proxy's client verifier")?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS configuration")?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Binds `listen` and serves the visibility API to the aggregation layer until the process
/// ends; returns the bound address.
///
/// # Errors
/// When the front proxy's settings cannot be read or the address cannot be bound.
pub async fn start(
    client: kube::Client,
    listen: SocketAddr,
    resolver: Arc<CertResolver>,
    shared: Arc<RwLock<Shared>>,
    metrics: Arc<Metrics>,
) -> anyhow::Result<SocketAddr> {
    let front = Arc::new(FrontProxy::read(&client).await?);
    let tls = tls_config(resolver, &front)?;
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("binding {listen} (--visibility-listen)"))?;
    let addr = listener.local_addr()?;
    tokio::spawn(serve(listener, tls, front, client, shared, metrics));
    Ok(addr)
}

async fn serve(
    listener: TcpListener,
    tls: Arc<ServerConfig>,
    front: Arc<FrontProxy>,
    client: kube::Client,
    shared: Arc<RwLock<Shared>>,
    metrics: Arc<Metrics>,
) {
    let acceptor = TlsAcceptor::from(tls);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "visibility accept failed");
                continue;
            }
        };
        let (acceptor, front, client) = (acceptor.clone(), front.clone(), client.clone());
        let (shared, metrics) = (shared.clone(), metrics.clone());
        tokio::spawn(async move {
            let stream = match acceptor.accept(stream).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::debug!(error = %e, "visibility TLS handshake failed");
                    return;
                }
            };
            let proxy = stream
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|certs| certs.first())
                .is_some_and(|cert| front.admits(cert));
            let service = service_fn(move |req: Request<Incoming>| {
                let (front, client) = (front.clone(), client.clone());
                let (shared, metrics) = (shared.clone(), metrics.clone());
                async move {
                    let (status, body) =
                        answer(proxy, &front, &client, &req, &shared, &metrics).await;
                    let mut resp = Response::new(Full::new(Bytes::from(body)));
                    *resp.status_mut() = status;
                    resp.headers_mut().insert(
                        hyper::header::CONTENT_TYPE,
                        hyper::header::HeaderValue::from_static("application/json"),
                    );
                    Ok::<_, Infallible>(resp)
                }
            });
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(error = %e, "visibility connection ended");
            }
        });
    }
}

/// A Kubernetes `Status` failure.
fn status(code: StatusCode, reason: &str, message: &str) -> (StatusCode, String) {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code.as_u16()});
    (code, body.to_string())
}

/// The group-version's discovery document, as Kueue's visibility server lists it.
fn discovery() -> Value {
    let resource = |name: &str, singular: &str, namespaced: bool, kind: &str| {
        json!({"name": name, "singularName": singular, "namespaced": namespaced,
               "kind": kind, "verbs": ["get"]})
    };
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GROUP_VERSION,
    "resources": [
        resource("clusterqueues", "clusterqueue", false, "ClusterQueue"),
        resource("clusterqueues/pendingworkloads", "", false, "PendingWorkloadsSummary"),
        resource("localqueues", "localqueue", true, "LocalQueue"),
        resource("localqueues/pendingworkloads", "", true, "PendingWorkloadsSummary"),
    ]})
}

/// What a request asks to read: (resource, name, namespace).
fn target(path: &str) -> Option<(&'static str, &str, Option<&str>)> {
    let rest = path.strip_prefix(&format!("/apis/{GROUP_VERSION}/"))?;
    match rest.split('/').collect::<Vec<_>>().as_slice() {
        ["clusterqueues", cq, "pendingworkloads"] => Some(("clusterqueues", cq, None)),
        ["namespaces", ns, "localqueues", lq, "pendingworkloads"] => {
            Some(("localqueues", lq, Some(ns)))
        }
        _ => None,
    }
}

async fn answer(
    proxy: bool,
    front: &FrontProxy,
    client: &kube::Client,
    req: &Request<Incoming>,
    shared: &RwLock<Shared>,
    metrics: &Metrics,
) -> (StatusCode, String) {
    let unauthorized = || status(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized");
    if !proxy {
        return unauthorized();
    }
    let path = req.uri().path().trim_end_matches('/');
    if path == format!("/apis/{GROUP_VERSION}") {
        return (StatusCode::OK, discovery().to_string());
    }
    let Some((resource, name, namespace)) = target(path) else {
        return status(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource",
        );
    };
    let Some((user, groups)) = front.user(req.headers()) else {
        return unauthorized();
    };
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.clone()),
            groups: Some(groups),
            resource_attributes: Some(ResourceAttributes {
                group: Some(GROUP.into()),
                version: Some("v1beta2".into()),
                resource: Some(resource.into()),
                subresource: Some("pendingworkloads".into()),
                name: Some(name.into()),
                namespace: namespace.map(str::to_string),
                verb: Some("get".into()),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let api: Api<SubjectAccessReview> = Api::all(client.clone());
    let decided = match api.create(&PostParams::default(), &review).await {
        Ok(r) => r.status.unwrap_or_default(),
        Err(e) => {
            tracing::warn!(error = %e, "visibility: SubjectAccessReview failed");
            return status(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalError",
                &format!("authorizing the request: {e}"),
            );
        }
    };
    if !decided.allowed {
        let scope = match namespace {
            Some(ns) => format!("in the namespace \"{ns}\""),
            None => "at the cluster scope".into(),
        };
        let why = decided
            .reason
            .filter(|r| !r.is_empty())
            .map(|r| format!(": {r}"))
            .unwrap_or_default();
        let message = format!(
            "{resource}.{GROUP} \"{name}\" is forbidden: User \"{user}\" cannot get resource \
             \"{resource}/pendingworkloads\" in API group \"{GROUP}\" {scope}{why}"
        );
        return status(StatusCode::FORBIDDEN, "Forbidden", &message);
    }
    let (code, _, body) = crate::k8s::serve::http::route(
        path,
        req.uri().query().unwrap_or_default(),
        shared,
        metrics,
    );
    if code == StatusCode::NOT_FOUND {
        return status(
            code,
            "NotFound",
            &format!("{resource}.{GROUP} \"{name}\" not found"),
        );
    }
    if !code.is_success() {
        return status(code, "ServiceUnavailable", &body);
    }
    (code, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(ca: &str, extra: &[(&str, &str)]) -> BTreeMap<String, String> {
        let mut d: BTreeMap<String, String> = extra
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        d.insert("requestheader-client-ca-file".into(), ca.into());
        d
    }

    fn ca() -> String {
        let certs =
            crate::k8s::serve::webhook::certs::generate(&["front-proxy-ca".into()], 0, 4e9 as i64)
                .expect("certs");
        certs.ca_pem
    }

    #[test]
    fn the_front_proxys_settings_are_read_as_the_api_server_publishes_them() {
        let front = FrontProxy::from_data(&data(
            &ca(),
            &[
                ("requestheader-allowed-names", r#"["front-proxy-client"]"#),
                ("requestheader-username-headers", r#"["X-Remote-User"]"#),
                ("requestheader-group-headers", r#"["X-Remote-Group"]"#),
            ],
        ))
        .expect("reads");
        assert_eq!(front.allowed_names, ["front-proxy-client"]);
        let mut headers = HeaderMap::new();
        headers.insert("x-remote-user", "alice".parse().unwrap());
        headers.append("x-remote-group", "team-a".parse().unwrap());
        headers.append("x-remote-group", "system:authenticated".parse().unwrap());
        assert_eq!(
            front.user(&headers),
            Some((
                "alice".to_string(),
                vec!["team-a".to_string(), "system:authenticated".to_string()]
            ))
        );
        assert_eq!(front.user(&HeaderMap::new()), None);

        let missing = FrontProxy::from_data(&BTreeMap::new()).unwrap_err();
        assert!(format!("{missing:#}").contains("no requestheader-client-ca-file"));
        let garbage = FrontProxy::from_data(&data("not pem", &[])).unwrap_err();
        assert!(
            format!("{garbage:#}").contains("no certificate"),
            "{garbage:#}"
        );
        let bad_list = FrontProxy::from_data(&data(&ca(), &[("requestheader-allowed-names", "x")]))
            .unwrap_err();
        assert!(format!("{bad_list:#}").contains("not a JSON list"));
    }

    #[test]
    fn only_the_pending_workloads_of_queues_are_targets() {
        let p = |rest: &str| format!("/apis/{GROUP_VERSION}/{rest}");
        assert_eq!(
            target(&p("clusterqueues/cq/pendingworkloads")),
            Some(("clusterqueues", "cq", None))
        );
        assert_eq!(
            target(&p("namespaces/ns/localqueues/lq/pendingworkloads")),
            Some(("localqueues", "lq", Some("ns")))
        );
        assert_eq!(target(&p("clusterqueues/cq")), None);
        assert_eq!(target("/apis/visibility.wasq.dev/v1alpha1/shadows"), None);
        assert_eq!(target("/metrics"), None);
    }
}
