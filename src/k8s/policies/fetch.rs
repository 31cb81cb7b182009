//! A QueuePolicy's module, fetched from its source: a ConfigMap key (`binaryData`, where
//! `kubectl create configmap --from-file` puts a binary file), a file in a mounted volume, or an
//! OCI artifact (credentials from `kubernetes.io/dockerconfigjson` pull Secrets in the
//! controller's namespace). Pulled artifacts are kept: one named by digest is never pulled
//! again, one named by tag at most every [`OCI_REFRESH`] (or when the object changes).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::Api;

use crate::api::policy::{OciModule, QueuePolicy};
use crate::wasm::oci::{Credentials, ModuleReference, PullOptions, credentials_for, pull_module};
use crate::wasm::{FetchFailure, Fetched, read_module};

/// How long a module pulled by tag is used before the tag is pulled again.
pub const OCI_REFRESH: Duration = Duration::from_secs(300);

/// A pulled module, and when.
struct Pull {
    at: Instant,
    /// The source it was pulled for (a changed `pullSecrets` list pulls again).
    source: OciModule,
    fetched: Fetched,
}

/// Fetches modules for the reconciler.
pub struct Fetcher {
    client: kube::Client,
    namespace: String,
    insecure_registries: Vec<String>,
    /// Successful pulls by reference.
    pulls: Mutex<HashMap<String, Pull>>,
}

impl Fetcher {
    pub fn new(client: kube::Client, namespace: &str, insecure_registries: Vec<String>) -> Self {
        Fetcher {
            client,
            namespace: namespace.to_string(),
            insecure_registries,
            pulls: Mutex::new(HashMap::new()),
        }
    }

    /// The module of `policy`, or why there is none.
    pub async fn fetch(&self, policy: &QueuePolicy) -> Fetched {
        let m = &policy.spec.module;
        if let Some(cm) = &m.config_map {
            let namespace = cm.namespace.as_deref().unwrap_or(&self.namespace);
            return self.config_map(namespace, &cm.name, &cm.key).await;
        }
        if let Some(path) = &m.path {
            return read_module(std::path::Path::new(path));
        }
        if let Some(oci) = &m.oci {
            return self.oci(oci).await;
        }
        Fetched::Failed {
            failure: FetchFailure::ModuleNotFound,
            message: "spec.module names no source".into(),
        }
    }

    /// Forgets pulls no object names any more.
    pub fn forget_unused(&self, policies: &[QueuePolicy]) {
        let named: Vec<&str> = policies
            .iter()
            .filter_map(|p| p.spec.module.oci.as_ref())
            .map(|o| o.reference.as_str())
            .collect();
        self.lock()
            .retain(|reference, _| named.contains(&reference.as_str()));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pull>> {
        self.pulls.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn config_map(&self, namespace: &str, name: &str, key: &str) -> Fetched {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), namespace);
        let missing = |message: String| Fetched::Failed {
            failure: FetchFailure::ModuleNotFound,
            message,
        };
        let cm = match api.get_opt(name).await {
            Ok(Some(cm)) => cm,
            Ok(None) => return missing(format!("ConfigMap {namespace}/{name} not found")),
            Err(e) => return missing(format!("reading ConfigMap {namespace}/{name}: {e}")),
        };
        let origin = format!("ConfigMap {namespace}/{name} key {key}");
        if let Some(bytes) = cm.binary_data.as_ref().and_then(|d| d.get(key)) {
            return Fetched::Module {
                bytes: bytes.0.clone(),
                origin,
            };
        }
        if let Some(text) = cm.data.as_ref().and_then(|d| d.get(key)) {
            // A module is binary; text here is refused when it is loaded ("not WebAssembly").
            return Fetched::Module {
                bytes: text.as_bytes().to_vec(),
                origin,
            };
        }
        let mut keys: Vec<&String> = cm
            .binary_data
            .iter()
            .flat_map(|d| d.keys())
            .chain(cm.data.iter().flat_map(|d| d.keys()))
            .collect();
        keys.sort();
        missing(format!(
            "ConfigMap {namespace}/{name} has no key {key:?} (its keys: {})",
            keys.iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }

    async fn oci(&self, source: &OciModule) -> Fetched {
        let failed = |message: String| Fetched::Failed {
            failure: FetchFailure::PullFailed,
            message,
        };
        let reference: ModuleReference = match source.reference.parse() {
            Ok(r) => r,
            Err(e) => return failed(e.to_string()),
        };
        if let Some(pull) = self.lock().get(&source.reference)
            && pull.source == *source
            && (reference.digest().is_some() || pull.at.elapsed() < OCI_REFRESH)
        {
            return pull.fetched.clone();
        }
        let credentials = match self.credentials(source, reference.registry()).await {
            Ok(c) => c,
            Err(message) => return failed(message),
        };
        let options = PullOptions {
            credentials,
            insecure_registries: self.insecure_registries.clone(),
            ..PullOptions::default()
        };
        match pull_module(&reference, &options).await {
            Ok(pulled) => {
                tracing::info!(reference = %source.reference, manifest = %pulled.manifest_digest, module = %pulled.module_digest, "policy module pulled");
                let fetched = Fetched::Module {
                    bytes: pulled.bytes,
                    origin: format!("{} ({})", source.reference, pulled.manifest_digest),
                };
                self.lock().insert(
                    source.reference.clone(),
                    Pull {
                        at: Instant::now(),
                        source: source.clone(),
                        fetched: fetched.clone(),
                    },
                );
                fetched
            }
            Err(e) => failed(e.to_string()),
        }
    }

    /// The first pull Secret with credentials for `registry`.
    async fn credentials(
        &self,
        source: &OciModule,
        registry: &str,
    ) -> Result<Option<Credentials>, String> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        for secret in &source.pull_secrets {
            let s = match api.get_opt(&secret.name).await {
                Ok(Some(s)) => s,
                Ok(None) => {
                    return Err(format!(
                        "pull Secret {}/{} not found",
                        self.namespace, secret.name
                    ));
                }
                Err(e) => {
                    return Err(format!(
                        "reading pull Secret {}/{}: {e}",
                        self.namespace, secret.name
                    ));
                }
            };
            let data = s.data.unwrap_or_default();
            let Some(config) = data
                .get(".dockerconfigjson")
                .or_else(|| data.get(".dockercfg"))
            else {
                return Err(format!(
                    "pull Secret {}/{} has no .dockerconfigjson (type kubernetes.io/dockerconfigjson)",
                    self.namespace, secret.name
                ));
            };
            if let Some(c) = credentials_for(registry, &config.0).map_err(|e| e.to_string())? {
                return Ok(Some(c));
            }
        }
        Ok(None)
    }
}
