//! Admission webhooks served by `wasq controller` over HTTPS, as Kueue's are: mutating ones that
//! create queued jobs suspended, gate queued pods of groups and default Workloads, and validating
//! ones that hold Kueue's objects to the manifest loader's rules and keep Kueue's immutable
//! fields immutable.
//!
//! - [`review`]: the `admission.k8s.io/v1` AdmissionReview types and the response encoding.
//! - [`view`]: the controller state the webhooks read, a snapshot taken after each pass.
//! - [`mutate`], [`validate`]: the decisions, pure functions of a request and a view.
//! - [`certs`]: CA and serving certificate generation and fitness checks (pure).
//! - [`provision`]: the certificate Secret shared by replicas, rotation, and the `caBundle` of
//!   the webhook configurations wasq owns.
//! - [`server`]: the TLS listener (hyper + rustls with ring).
//!
//! Invariants: a webhook never writes to the API server (only [`provision`] does, at start and
//! on rotation); an unknown `/mutate-…` or `/validate-…` path is allowed unchanged, so a
//! configuration naming a kind this replica does not manage never blocks the cluster.

pub mod certs;
pub mod mutate;
pub mod provision;
pub mod review;
pub mod server;
pub mod validate;
pub mod view;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use std::time::Duration;

use kube::core::ApiResource;

use self::provision::CertSource;

use self::review::{AdmissionRequest, AdmissionReview, Verdict, review_of};
use self::validate::Schemas;
pub use self::view::View;
use crate::api::jobs::JobKind;
use crate::k8s::jobs::integration::api_resource;
use crate::k8s::schema::kinds::KueueKind;
use crate::k8s::serve::Shared;

/// Default name of the Secret holding the certificates (Kueue's is `kueue-webhook-server-cert`).
pub const DEFAULT_SECRET: &str = "wasq-webhook-server-cert";
/// Default name of the Service the API server calls.
pub const DEFAULT_SERVICE: &str = "wasq-webhook-service";
pub const MUTATING_CONFIGURATION: &str = "wasq-mutating-webhook-configuration";
pub const VALIDATING_CONFIGURATION: &str = "wasq-validating-webhook-configuration";
/// Largest AdmissionReview read (an object and its old version).
pub const MAX_BODY_BYTES: usize = 8 << 20;

/// Errors of the webhooks' start and certificate management.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("webhook certificate: {0}")]
    Certificate(String),
    #[error(
        "cannot {verb} {what}: forbidden; wasq's ServiceAccount needs the RBAC verb \"{verb}\" on it (see deploy/base)"
    )]
    Forbidden { verb: &'static str, what: String },
    #[error("cannot {verb} {what}: {message}")]
    Api {
        verb: &'static str,
        what: String,
        message: String,
    },
    #[error(
        "cannot listen on {addr} for the webhooks ({error}); choose another address with --webhook-listen, or run with --no-webhooks"
    )]
    Listen {
        addr: SocketAddr,
        error: std::io::Error,
    },
    #[error("cannot read {path} (--webhook-cert-dir): {error}")]
    CertDir {
        path: PathBuf,
        error: std::io::Error,
    },
}

impl Error {
    /// Wraps a failed API call on `what` (`Secret wasq-system/x`).
    pub fn api(verb: &'static str, what: impl Into<String>, e: kube::Error) -> Error {
        let what = what.into();
        match e {
            kube::Error::Api(s) if s.code == 403 => Error::Forbidden { verb, what },
            kube::Error::Api(s) => Error::Api {
                verb,
                what,
                message: s.message,
            },
            other => Error::Api {
                verb,
                what,
                message: other.to_string(),
            },
        }
    }
}

/// The path of a kind's mutating webhook, as Kueue names them (`/mutate-batch-v1-job`,
/// `/mutate--v1-pod`).
pub fn mutate_path(group: &str, version: &str, kind: &str) -> String {
    format!(
        "/mutate-{}-{version}-{}",
        group.replace('.', "-"),
        kind.to_lowercase()
    )
}

/// The path of a kind's validating webhook (`/validate-kueue-x-k8s-io-v1beta2-clusterqueue`).
pub fn validate_path(group: &str, version: &str, kind: &str) -> String {
    format!(
        "/validate-{}-{version}-{}",
        group.replace('.', "-"),
        kind.to_lowercase()
    )
}

fn kind_paths(r: &ApiResource) -> (String, String) {
    (
        mutate_path(&r.group, &r.version, &r.kind),
        validate_path(&r.group, &r.version, &r.kind),
    )
}

/// What a path is for.
enum Route<'a> {
    MutateJob(&'a JobKind),
    MutateParent(&'a JobKind),
    ValidateJob(&'a JobKind),
    MutatePod,
    ValidatePod,
    MutateWorkload,
    ValidateKueue(KueueKind),
    ValidatePolicy,
}

/// The webhooks of one controller: its job kinds, whether it manages pod groups, and its state.
pub struct Webhooks {
    /// Kinds with a suspend flag: created suspended.
    kinds: Vec<JobKind>,
    /// Kinds without one (Deployment, StatefulSet, LeaderWorkerSet): their pods are gated.
    parents: Vec<JobKind>,
    pod_groups: bool,
    schemas: Schemas,
    shared: Arc<RwLock<Shared>>,
}

impl Webhooks {
    /// `kinds`: every managed kind; those without a suspend flag are managed through their
    /// pods, which needs `pod_groups`.
    pub fn new(kinds: Vec<JobKind>, pod_groups: bool, shared: Arc<RwLock<Shared>>) -> Webhooks {
        let (kinds, parents): (Vec<JobKind>, Vec<JobKind>) =
            kinds.into_iter().partition(JobKind::has_suspend);
        Webhooks {
            kinds,
            parents: if pod_groups { parents } else { Vec::new() },
            pod_groups,
            schemas: Schemas::default(),
            shared,
        }
    }

    fn routes(&self) -> Vec<(String, Route<'_>)> {
        let mut out = Vec::new();
        for k in &self.kinds {
            let (m, v) = kind_paths(&api_resource(k));
            out.push((m, Route::MutateJob(k)));
            out.push((v, Route::ValidateJob(k)));
        }
        for k in &self.parents {
            let (m, _) = kind_paths(&api_resource(k));
            out.push((m, Route::MutateParent(k)));
        }
        if self.pod_groups {
            out.push((mutate_path("", "v1", "Pod"), Route::MutatePod));
            out.push((validate_path("", "v1", "Pod"), Route::ValidatePod));
        }
        let v = crate::k8s::schema::kinds::KUEUE_VERSION;
        out.push((
            mutate_path(crate::api::GROUP, v, "Workload"),
            Route::MutateWorkload,
        ));
        for k in KueueKind::ALL {
            out.push((
                validate_path(crate::api::GROUP, v, k.kind()),
                Route::ValidateKueue(k),
            ));
        }
        use crate::api::policy::{POLICY_GROUP, POLICY_VERSION, QUEUE_POLICY_KIND};
        out.push((
            validate_path(POLICY_GROUP, POLICY_VERSION, QUEUE_POLICY_KIND),
            Route::ValidatePolicy,
        ));
        out
    }

    /// Every path served.
    pub fn paths(&self) -> Vec<String> {
        self.routes().into_iter().map(|(p, _)| p).collect()
    }

    fn view(&self) -> Arc<View> {
        self.shared
            .read()
            .map(|s| s.webhook.clone())
            .unwrap_or_default()
    }

    /// Decides one request. `None`: not a webhook path.
    pub fn decide(&self, path: &str, req: &AdmissionRequest) -> Option<Verdict> {
        let view = self.view();
        let routes = self.routes();
        let Some((_, route)) = routes.iter().find(|(p, _)| p == path) else {
            return (path.starts_with("/mutate-") || path.starts_with("/validate-"))
                .then(Verdict::allow);
        };
        Some(match route {
            Route::MutateJob(k) => mutate::job(k, &self.kinds, req, &view),
            Route::MutateParent(k) => mutate::parent(k, &self.parents, req, &view),
            Route::ValidateJob(k) => validate::job(k, req, &view),
            Route::MutatePod => mutate::pod(&self.kinds, req, &view),
            Route::ValidatePod => validate::pod(req, &view),
            Route::MutateWorkload => mutate::workload(&self.schemas, req, &view),
            Route::ValidateKueue(k) => validate::kueue(*k, &self.schemas, req, &view),
            Route::ValidatePolicy => validate::queue_policy(req),
        })
    }

    /// Answers an AdmissionReview body posted to `path`: `Err((status, message))` when the
    /// body is not a review or the path is not a webhook's.
    pub fn review(&self, path: &str, body: &[u8]) -> Result<AdmissionReview, (u16, String)> {
        let review: AdmissionReview = serde_json::from_slice(body)
            .map_err(|e| (400, format!("not an AdmissionReview: {e}")))?;
        let Some(req) = review.request else {
            return Err((400, "the AdmissionReview has no request".into()));
        };
        let span = tracing::info_span!(
            "admission",
            uid = %req.uid,
            path,
            kind = %req.kind.kind,
            namespace = req.namespace.as_deref().unwrap_or_default(),
            name = req.name.as_deref().unwrap_or_default(),
            operation = %req.operation,
        );
        let _entered = span.enter();
        let Some(verdict) = self.decide(path, &req) else {
            return Err((404, format!("no webhook at {path}")));
        };
        match &verdict.denied {
            Some(s) => tracing::info!(why = %s.message, "denied"),
            None => tracing::debug!(ops = verdict.patch.len(), "allowed"),
        }
        Ok(review_of(verdict.respond(&req.uid)))
    }
}

/// How often the certificates are checked: the Secret (rotation by any replica) and a mounted
/// directory (replaced by another tool).
fn refresh_period(source: &CertSource) -> Duration {
    match source {
        CertSource::Secret(_) => Duration::from_secs(3600),
        CertSource::Dir(_) => Duration::from_secs(60),
    }
}

/// Binds `listen`, obtains the certificates (and writes the CA bundle), then serves the
/// webhooks and keeps the certificate fresh in the background. Returns the bound address once
/// the server can answer (the caller may report ready), and the certificate served, kept fresh
/// (the visibility server serves it too).
pub async fn start(
    client: kube::Client,
    webhooks: Arc<Webhooks>,
    listen: SocketAddr,
    source: CertSource,
) -> Result<(SocketAddr, Arc<server::CertResolver>), Error> {
    let listener = server::bind(listen).await?;
    let addr = listener.local_addr().map_err(|error| Error::Listen {
        addr: listen,
        error,
    })?;
    let certs = provision::obtain(&client, &source).await?;
    let resolver = server::CertResolver::new(certs.certified_key()?);
    let tls = server::tls_config(resolver.clone())?;
    tokio::spawn(server::serve(listener, tls, webhooks));
    let period = refresh_period(&source);
    tokio::spawn(provision::keep_fresh(
        client,
        source,
        resolver.clone(),
        certs,
        period,
    ));
    Ok((addr, resolver))
}
