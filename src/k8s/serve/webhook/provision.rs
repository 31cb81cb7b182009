//! Certificates kept where every replica finds them, as Kueue's cert-controller keeps them: the
//! `kubernetes.io/tls` Secret (`ca.crt`, `ca.key`, `tls.crt`, `tls.key`) is read first; absent,
//! it is created (a 409 means another replica won: read again); unfit (expiring, other DNS
//! names, unreadable), a new serving certificate is signed by the kept CA (or everything is new
//! when the CA itself is unfit) and written with a resourceVersion precondition (a 409 means
//! another replica rotated: read again). The CA is then written as the `caBundle` of every webhook of the Mutating and
//! Validating configurations wasq owns. With `--webhook-cert-dir` the mounted files are served
//! as they are and nothing is written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::certs::{self, Certs, Fitness, LOOKAHEAD_SECS, VALIDITY_SECS};
use super::server::CertResolver;
use super::{Error, MUTATING_CONFIGURATION, VALIDATING_CONFIGURATION};

/// Field manager of wasq's certificate writes.
pub const CERT_MANAGER: &str = "wasq-cert-controller";
/// Attempts when replicas race on the Secret.
const ATTEMPTS: usize = 4;

/// Where the certificates come from.
#[derive(Debug, Clone)]
pub enum CertSource {
    /// Managed in a Secret, for the Service's names, with the CA written into the
    /// configurations.
    Secret(SecretSettings),
    /// `tls.crt` and `tls.key` (and optionally `ca.crt`) mounted in a directory.
    Dir(PathBuf),
}

#[derive(Debug, Clone)]
pub struct SecretSettings {
    pub namespace: String,
    pub secret: String,
    pub service: String,
    pub mutating: String,
    pub validating: String,
}

impl SecretSettings {
    pub fn new(namespace: &str, secret: &str, service: &str) -> SecretSettings {
        SecretSettings {
            namespace: namespace.into(),
            secret: secret.into(),
            service: service.into(),
            mutating: MUTATING_CONFIGURATION.into(),
            validating: VALIDATING_CONFIGURATION.into(),
        }
    }

    pub fn dns_names(&self) -> Vec<String> {
        certs::dns_names(&self.service, &self.namespace)
    }

    fn what(&self) -> String {
        format!("Secret {}/{}", self.namespace, self.secret)
    }
}

fn now_secs() -> i64 {
    jiff::Timestamp::now().as_second()
}

fn field(data: &BTreeMap<String, ByteString>, key: &str) -> String {
    data.get(key)
        .map(|b| String::from_utf8_lossy(&b.0).into_owned())
        .unwrap_or_default()
}

fn certs_of(secret: &Secret) -> Certs {
    let data = secret.data.clone().unwrap_or_default();
    Certs {
        ca_pem: field(&data, "ca.crt"),
        ca_key_pem: field(&data, "ca.key"),
        cert_pem: field(&data, "tls.crt"),
        key_pem: field(&data, "tls.key"),
    }
}

fn data_of(c: &Certs) -> BTreeMap<String, ByteString> {
    [
        ("ca.crt", &c.ca_pem),
        ("ca.key", &c.ca_key_pem),
        ("tls.crt", &c.cert_pem),
        ("tls.key", &c.key_pem),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), ByteString(v.clone().into_bytes())))
    .collect()
}

fn is_code(e: &kube::Error, code: u16) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == code)
}

/// The certificates of the Secret, created or rotated as needed, at `now` (Unix seconds).
pub async fn ensure_secret(
    client: &kube::Client,
    s: &SecretSettings,
    now: i64,
) -> Result<Certs, Error> {
    let api: Api<Secret> = Api::namespaced(client.clone(), &s.namespace);
    let names = s.dns_names();
    for attempt in 1..=ATTEMPTS {
        let existing = match api.get(&s.secret).await {
            Ok(secret) => Some(secret),
            Err(e) if is_code(&e, 404) => None,
            Err(e) => return Err(Error::api("get", s.what(), e)),
        };
        let generate = || certs::generate(&names, now - 60, now + VALIDITY_SECS);
        match existing {
            None => {
                let fresh = generate()?;
                let secret = Secret {
                    metadata: ObjectMeta {
                        name: Some(s.secret.clone()),
                        namespace: Some(s.namespace.clone()),
                        labels: Some(BTreeMap::from([(
                            "app.kubernetes.io/managed-by".to_string(),
                            "wasq".to_string(),
                        )])),
                        ..ObjectMeta::default()
                    },
                    type_: Some("kubernetes.io/tls".into()),
                    data: Some(data_of(&fresh)),
                    ..Secret::default()
                };
                let pp = PostParams {
                    field_manager: Some(CERT_MANAGER.into()),
                    ..PostParams::default()
                };
                match api.create(&pp, &secret).await {
                    Ok(_) => {
                        tracing::info!(secret = %s.what(), "webhook certificate created");
                        return Ok(fresh);
                    }
                    Err(e) if is_code(&e, 409) => {
                        tracing::info!(secret = %s.what(), attempt, "another replica created the certificate; reading it");
                    }
                    Err(e) => return Err(Error::api("create", s.what(), e)),
                }
            }
            Some(secret) => {
                let kept = certs_of(&secret);
                let why = match kept.fitness(&names, now, LOOKAHEAD_SECS) {
                    Fitness::Fit => return Ok(kept),
                    other => other,
                };
                let fresh = if kept.ca_is_fit(now, LOOKAHEAD_SECS) {
                    tracing::info!(secret = %s.what(), reason = ?why, "signing a new webhook certificate with the kept CA");
                    kept.resigned(&names, now - 60, now + VALIDITY_SECS)?
                } else {
                    tracing::info!(secret = %s.what(), reason = ?why, "rotating the webhook CA and certificate");
                    generate()?
                };
                let body = json!({
                    "metadata": {"resourceVersion": secret.metadata.resource_version},
                    "data": data_of(&fresh),
                });
                let pp = PatchParams {
                    field_manager: Some(CERT_MANAGER.into()),
                    ..PatchParams::default()
                };
                match api.patch(&s.secret, &pp, &Patch::Merge(&body)).await {
                    Ok(_) => return Ok(fresh),
                    Err(e) if is_code(&e, 409) => {
                        tracing::info!(secret = %s.what(), attempt, "another replica rotated the certificate; reading it");
                    }
                    Err(e) => return Err(Error::api("update", s.what(), e)),
                }
            }
        }
    }
    Err(Error::Api {
        verb: "update",
        what: s.what(),
        message: format!("still conflicting after {ATTEMPTS} attempts"),
    })
}

/// JSON Patch ops setting every webhook's `clientConfig.caBundle` to `bundle` (base64), with
/// the resourceVersion read as a precondition. Empty when all are set.
fn bundle_ops(config: &Value, bundle: &str) -> Vec<Value> {
    let mut ops = Vec::new();
    for (i, wh) in config["webhooks"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if wh.pointer("/clientConfig/caBundle").and_then(Value::as_str) != Some(bundle) {
            ops.push(json!({"op": "add", "path": format!("/webhooks/{i}/clientConfig/caBundle"), "value": bundle}));
        }
    }
    if !ops.is_empty() {
        ops.insert(
            0,
            json!({"op": "test", "path": "/metadata/resourceVersion", "value": config["metadata"]["resourceVersion"]}),
        );
    }
    ops
}

async fn inject<K>(client: &kube::Client, kind: &str, name: &str, bundle: &str) -> Result<(), Error>
where
    K: kube::Resource<Scope = k8s_openapi::ClusterResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let api: Api<K> = Api::all(client.clone());
    let what = format!("{kind} {name}");
    for _ in 0..ATTEMPTS {
        let config = match api.get(name).await {
            Ok(c) => c,
            Err(e) if is_code(&e, 404) => {
                tracing::warn!(configuration = %what, "not found: the API server will not call these webhooks (apply deploy/base)");
                return Ok(());
            }
            Err(e) => return Err(Error::api("get", what, e)),
        };
        let value = serde_json::to_value(&config).unwrap_or(Value::Null);
        let ops = bundle_ops(&value, bundle);
        if ops.is_empty() {
            return Ok(());
        }
        let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops))
            .map_err(|e| Error::Certificate(format!("caBundle patch: {e}")))?;
        let pp = PatchParams {
            field_manager: Some(CERT_MANAGER.into()),
            ..PatchParams::default()
        };
        match api.patch(name, &pp, &Patch::<()>::Json(patch)).await {
            Ok(_) => {
                tracing::info!(configuration = %what, "caBundle written");
                return Ok(());
            }
            // The test op failed (the object changed) or a conflict: read again.
            Err(e) if is_code(&e, 409) || is_code(&e, 422) => continue,
            Err(e) => return Err(Error::api("patch", what, e)),
        }
    }
    Err(Error::Api {
        verb: "patch",
        what,
        message: format!("still changing after {ATTEMPTS} attempts"),
    })
}

/// Writes `ca_pem` as the `caBundle` of both configurations wasq owns.
pub async fn inject_ca_bundle(
    client: &kube::Client,
    s: &SecretSettings,
    ca_pem: &str,
) -> Result<(), Error> {
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    inject::<MutatingWebhookConfiguration>(
        client,
        "MutatingWebhookConfiguration",
        &s.mutating,
        &bundle,
    )
    .await?;
    inject::<ValidatingWebhookConfiguration>(
        client,
        "ValidatingWebhookConfiguration",
        &s.validating,
        &bundle,
    )
    .await
}

/// Reads `tls.crt`, `tls.key` and, when present, `ca.crt` from a mounted directory.
pub fn read_dir(dir: &Path) -> Result<Certs, Error> {
    let read = |name: &str, required: bool| -> Result<String, Error> {
        let path = dir.join(name);
        match std::fs::read_to_string(&path) {
            Ok(t) => Ok(t),
            Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
            Err(error) => Err(Error::CertDir { path, error }),
        }
    };
    Ok(Certs {
        ca_pem: read("ca.crt", false)?,
        ca_key_pem: String::new(),
        cert_pem: read("tls.crt", true)?,
        key_pem: read("tls.key", true)?,
    })
}

/// The certificates to serve now: from the Secret (created or rotated, and the CA bundle
/// written) or from the directory.
pub async fn obtain(client: &kube::Client, source: &CertSource) -> Result<Certs, Error> {
    match source {
        CertSource::Dir(dir) => read_dir(dir),
        CertSource::Secret(s) => {
            let certs = ensure_secret(client, s, now_secs()).await?;
            inject_ca_bundle(client, s, &certs.ca_pem).await?;
            Ok(certs)
        }
    }
}

/// Checks the certificates every `period` and swaps the served one when it changed (rotated by
/// this replica or another, or replaced in the mounted directory).
pub async fn keep_fresh(
    client: kube::Client,
    source: CertSource,
    resolver: Arc<CertResolver>,
    mut current: Certs,
    period: Duration,
) {
    loop {
        tokio::time::sleep(period).await;
        match obtain(&client, &source).await {
            Ok(certs) if certs != current => match certs.certified_key() {
                Ok(key) => {
                    resolver.set(key);
                    tracing::info!("serving a new webhook certificate");
                    current = certs;
                }
                Err(e) => tracing::warn!(error = %e, "keeping the served webhook certificate"),
            },
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "cannot refresh the webhook certificate; will retry")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundle_ops_touch_only_webhooks_without_the_bundle_and_test_the_version() {
        let config = json!({"metadata": {"resourceVersion": "7"}, "webhooks": [
            {"name": "a", "clientConfig": {"caBundle": "QUJD"}},
            {"name": "b", "clientConfig": {"service": {"name": "s"}}},
        ]});
        assert_eq!(
            bundle_ops(&config, "QUJD"),
            [
                json!({"op": "test", "path": "/metadata/resourceVersion", "value": "7"}),
                json!({"op": "add", "path": "/webhooks/1/clientConfig/caBundle", "value": "QUJD"}),
            ]
        );
        let done = json!({"metadata": {"resourceVersion": "7"}, "webhooks": [
            {"name": "a", "clientConfig": {"caBundle": "QUJD"}}]});
        assert!(bundle_ops(&done, "QUJD").is_empty());
    }
}
