//! Policy modules pulled from (and pushed to) an OCI registry: the `oci://` source of a
//! `QueuePolicy`'s module.
//!
//! What is pulled: the manifest that `oci://registry[:port]/repository[:tag|@sha256:…]` names
//! (an OCI image manifest in the CNCF "WebAssembly OCI artifact" layout that `wkg oci push`
//! writes: config `application/vnd.wasm.config.v0+json`, one `application/wasm` layer; the
//! older `application/vnd.wasm.content.layer.v1+wasm` layer of Kubewarden and
//! wasm-to-oci is taken too), then that one layer. The config blob is not fetched.
//!
//! What is verified, each failure its own [`PullError`] naming the reference:
//! - a reference by digest: the manifest's sha256 is that digest ([`PullError::DigestMismatch`]);
//! - the manifest has exactly one WebAssembly layer ([`PullError::NoModuleLayer`] lists the
//!   media types it has instead);
//! - the layer is at most [`PullOptions::max_bytes`], by its descriptor before the download and
//!   by the bytes received during it ([`PullError::TooLarge`]);
//! - the layer's sha256 is its descriptor's digest (and the registry's `Docker-Content-Digest`).
//!
//! The bytes are not validated as a component here: the wasm host does that when it loads
//! them, and a `QueuePolicy`'s `digest` is compared with [`Pulled::module_digest`] by the caller.
//!
//! This module knows nothing of Kubernetes: the caller reads a pull Secret and hands its
//! `.dockerconfigjson` to [`credentials_for`]. TLS is rustls with ring, as kube's; registries
//! named in [`PullOptions::insecure_registries`] are spoken to over plain HTTP (as containerd's
//! insecure registries), which is how the tests reach [`double::RegistryDouble`].

pub mod double;

use std::fmt;
use std::io;
use std::pin::Pin;
use std::str::FromStr;
use std::task::{Context, Poll};
use std::time::Duration;

use base64::Engine as _;
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use sha2::{Digest as _, Sha256};

/// The layer media type of the CNCF WebAssembly OCI artifact (what `wkg oci push` writes).
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The older layer media type (Kubewarden, wasm-to-oci), accepted when pulling.
pub const WASM_LEGACY_LAYER_MEDIA_TYPE: &str = "application/vnd.wasm.content.layer.v1+wasm";
/// The config media type of the CNCF WebAssembly OCI artifact.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// An OCI image manifest.
pub const OCI_MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// Docker's image manifest (v2, schema 2), which some registries still answer with.
const DOCKER_MANIFEST_MEDIA_TYPE: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// Asked for too, so that a multi-platform index is refused by name rather than as a 404.
const OCI_INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";
const DOCKER_LIST_MEDIA_TYPE: &str = "application/vnd.docker.distribution.manifest.list.v2+json";

/// The default of [`PullOptions::max_bytes`]: 64 MiB (a Python plugin is 12-18 MB).
pub const DEFAULT_MAX_BYTES: u64 = 64 << 20;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// `oci://host[:port]/repo[:tag|@sha256:hex]` parsed: the `oci://` prefix is required, and
/// the tag defaults to `latest` when neither a tag nor a digest is given.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModuleReference {
    registry: String,
    repository: String,
    tag: Option<String>,
    digest: Option<String>,
}

/// Why a string is not a [`ModuleReference`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{input:?} is not a module reference: {reason} \
     (expected oci://registry[:port]/repository[:tag] or oci://registry[:port]/repository@sha256:<64 hex>)"
)]
pub struct ReferenceError {
    pub input: String,
    pub reason: String,
}

impl ModuleReference {
    /// `host[:port]`, as written.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// The repository path, e.g. `team/fair-share`.
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// The tag (`latest` if the reference named neither a tag nor a digest).
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// `sha256:` and 64 hex digits, if the reference is by digest.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }

    fn to_oci(&self) -> oci_client::Reference {
        let (registry, repository) = (self.registry.clone(), self.repository.clone());
        match (&self.tag, &self.digest) {
            (Some(tag), Some(digest)) => oci_client::Reference::with_tag_and_digest(
                registry,
                repository,
                tag.clone(),
                digest.clone(),
            ),
            (None, Some(digest)) => {
                oci_client::Reference::with_digest(registry, repository, digest.clone())
            }
            (tag, None) => oci_client::Reference::with_tag(
                registry,
                repository,
                tag.clone().unwrap_or_else(|| "latest".to_string()),
            ),
        }
    }
}

impl fmt::Display for ModuleReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "oci://{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

impl FromStr for ModuleReference {
    type Err = ReferenceError;

    fn from_str(input: &str) -> Result<Self, ReferenceError> {
        let fail = |reason: String| ReferenceError {
            input: input.to_string(),
            reason,
        };
        let Some(rest) = input.strip_prefix("oci://") else {
            return Err(fail(if input.contains("://") {
                "the scheme must be oci://".to_string()
            } else {
                "it must start with oci://".to_string()
            }));
        };
        let (registry, path) = rest.split_once('/').unwrap_or((rest, ""));
        check_registry(registry).map_err(&fail)?;
        if path.is_empty() {
            return Err(fail(format!(
                "it names no repository after the registry {registry:?}"
            )));
        }
        let (name_tag, digest) = match path.split_once('@') {
            Some((name_tag, digest)) => {
                check_digest(digest).map_err(&fail)?;
                (name_tag, Some(digest.to_string()))
            }
            None => (path, None),
        };
        let (repository, tag) = match name_tag.rsplit_once(':') {
            Some((repository, tag)) if !tag.contains('/') => {
                check_tag(tag).map_err(&fail)?;
                (repository, Some(tag.to_string()))
            }
            _ => (name_tag, None),
        };
        check_repository(repository).map_err(&fail)?;
        let tag = if tag.is_none() && digest.is_none() {
            Some("latest".to_string())
        } else {
            tag
        };
        Ok(ModuleReference {
            registry: registry.to_string(),
            repository: repository.to_string(),
            tag,
            digest,
        })
    }
}

fn check_registry(registry: &str) -> Result<(), String> {
    if registry.is_empty() {
        return Err("it names no registry".to_string());
    }
    let not_host_port = || format!("the registry {registry:?} is not host[:port]");
    let port = if let Some(v6) = registry.strip_prefix('[') {
        // An IPv6 address: `[::1]:5000`.
        let (address, tail) = v6.split_once(']').ok_or_else(not_host_port)?;
        if address.is_empty()
            || !address
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        {
            return Err(not_host_port());
        }
        match tail {
            "" => None,
            _ => Some(tail.strip_prefix(':').ok_or_else(not_host_port)?),
        }
    } else {
        let (host, port) = match registry.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (registry, None),
        };
        let label_ok = |label: &str| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        };
        if !host.split('.').all(label_ok) {
            return Err(format!(
                "the registry host {host:?} is not a DNS name or an IP address"
            ));
        }
        port
    };
    if let Some(port) = port
        && !(port.bytes().all(|b| b.is_ascii_digit()) && port.parse::<u16>().is_ok_and(|p| p > 0))
    {
        return Err(format!(
            "the registry port {port:?} is not a number from 1 to 65535"
        ));
    }
    Ok(())
}

/// The distribution spec's repository grammar: lowercase path components of alphanumerics
/// joined by `.`, `_`, `__` or runs of `-`, separated by `/`.
fn check_repository(repository: &str) -> Result<(), String> {
    if repository.is_empty() {
        return Err("it names no repository".to_string());
    }
    if repository.len() > 255 {
        return Err(format!(
            "the repository is {} characters long, over 255",
            repository.len()
        ));
    }
    for component in repository.split('/') {
        if component.is_empty() {
            return Err(format!(
                "the repository {repository:?} has an empty path component"
            ));
        }
        if component.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(format!("the repository {repository:?} must be lowercase"));
        }
        let bytes = component.as_bytes();
        let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        let mut i = 0;
        let mut valid = alnum(bytes[0]) && alnum(bytes[bytes.len() - 1]);
        while valid && i < bytes.len() {
            if alnum(bytes[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < bytes.len() && !alnum(bytes[i]) {
                i += 1;
            }
            let separator = &component[start..i];
            valid = matches!(separator, "." | "_" | "__") || separator.bytes().all(|b| b == b'-');
        }
        if !valid {
            return Err(format!(
                "the repository path component {component:?} must be lowercase letters and digits, \
                 joined by '.', '_', '__' or '-'"
            ));
        }
    }
    Ok(())
}

fn check_tag(tag: &str) -> Result<(), String> {
    let bytes = tag.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    if tag.is_empty() {
        return Err("the tag after ':' is empty".to_string());
    }
    if tag.len() > 128
        || !word(bytes[0])
        || !bytes.iter().all(|&b| word(b) || b == b'.' || b == b'-')
    {
        return Err(format!(
            "the tag {tag:?} must be at most 128 letters, digits, '_', '.' or '-', not starting with '.' or '-'"
        ));
    }
    Ok(())
}

fn check_digest(digest: &str) -> Result<(), String> {
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return Err(format!(
            "the digest {digest:?} must be sha256:<64 hex digits>"
        ));
    };
    if algorithm != "sha256" {
        return Err(format!(
            "the digest {digest:?} uses {algorithm:?}: only sha256 digests are supported"
        ));
    }
    if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(format!(
            "the digest {digest:?} must be sha256: and 64 lowercase hex digits ({} given)",
            hex.len()
        ));
    }
    Ok(())
}

/// Basic credentials for one registry.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// The credentials for `registry` (`host[:port]`, as [`ModuleReference::registry`]) in a
/// `kubernetes.io/dockerconfigjson` Secret's `.dockerconfigjson` bytes (`{"auths": {…}}`), or
/// in the older `kubernetes.io/dockercfg` shape (the same map at the top level).
///
/// An entry's key may be a host, `host:port` or a URL (`https://host[:port]/v1/`); Docker Hub's
/// names (`docker.io`, `index.docker.io`, `registry-1.docker.io`) are one registry; a key
/// `*.example.com` matches one label in its place, as the kubelet's does; the port must be the
/// same. An exact key wins over a wildcard. An entry gives `auth` (base64 of `user:password`) or
/// `username` and `password`. `Ok(None)`: no entry for that registry.
pub fn credentials_for(
    registry: &str,
    dockerconfigjson: &[u8],
) -> Result<Option<Credentials>, PullError> {
    let fail = |reason: String| PullError::Credentials {
        registry: registry.to_string(),
        reason,
    };
    let config: serde_json::Value = serde_json::from_slice(dockerconfigjson)
        .map_err(|e| fail(format!("the docker config is not JSON: {e}")))?;
    let Some(top) = config.as_object() else {
        return Err(fail("the docker config is not a JSON object".to_string()));
    };
    let auths = match top.get("auths") {
        Some(serde_json::Value::Object(auths)) => auths,
        Some(_) => {
            return Err(fail(
                "the docker config's \"auths\" is not an object".to_string(),
            ));
        }
        None => top,
    };
    let wanted = normalize_registry(registry);
    let mut found = auths
        .iter()
        .find(|(key, _)| normalize_registry(key) == wanted);
    if found.is_none() {
        found = auths
            .iter()
            .find(|(key, _)| wildcard_matches(&normalize_registry(key), &wanted));
    }
    let Some((key, entry)) = found else {
        return Ok(None);
    };
    let field = |name: &str| {
        entry
            .get(name)
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
    };
    if let Some(auth) = field("auth") {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(auth.trim())
            .map_err(|e| fail(format!("the \"auth\" of entry {key:?} is not base64: {e}")))?;
        let decoded = String::from_utf8(decoded).map_err(|_| {
            fail(format!(
                "the \"auth\" of entry {key:?} is not UTF-8 once decoded"
            ))
        })?;
        let Some((username, password)) = decoded.split_once(':') else {
            return Err(fail(format!(
                "the \"auth\" of entry {key:?} is not base64 of username:password"
            )));
        };
        return Ok(Some(Credentials {
            username: username.to_string(),
            password: password.to_string(),
        }));
    }
    match (
        field("username"),
        entry.get("password").and_then(|v| v.as_str()),
    ) {
        (Some(username), Some(password)) => Ok(Some(Credentials {
            username: username.to_string(),
            password: password.to_string(),
        })),
        _ => Err(fail(format!(
            "entry {key:?} has neither \"auth\" nor \"username\" and \"password\" \
             (identity and registry tokens are not supported)"
        ))),
    }
}

/// A registry key or name as `host[:port]`, lowercase, Docker Hub's aliases as `docker.io`.
fn normalize_registry(key: &str) -> String {
    let key = key.trim();
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = key
        .split('/')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    match host.as_str() {
        "index.docker.io" | "registry-1.docker.io" => "docker.io".to_string(),
        _ => host,
    }
}

/// `*.example.com[:port]` against `host.example.com[:port]`: a `*` label matches one label.
fn wildcard_matches(pattern: &str, registry: &str) -> bool {
    if !pattern.contains('*') {
        return false;
    }
    let split_port = |s: &str| -> (String, Option<String>) {
        match s.rsplit_once(':') {
            Some((host, port))
                if !host.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) =>
            {
                (host.to_string(), Some(port.to_string()))
            }
            _ => (s.to_string(), None),
        }
    };
    let ((pattern_host, pattern_port), (host, port)) = (split_port(pattern), split_port(registry));
    let (pattern_labels, labels): (Vec<&str>, Vec<&str>) =
        (pattern_host.split('.').collect(), host.split('.').collect());
    pattern_port == port
        && pattern_labels.len() == labels.len()
        && pattern_labels
            .iter()
            .zip(&labels)
            .all(|(p, l)| *p == "*" || p == l)
}

/// How to reach the registry.
#[derive(Debug, Clone)]
pub struct PullOptions {
    /// Basic credentials (from [`credentials_for`]); also sent to a registry's token service
    /// when it answers with a Bearer challenge (ghcr.io, Docker Hub, Harbor). `None`: anonymous.
    pub credentials: Option<Credentials>,
    /// Registries (`host[:port]`, as in the reference) reached over plain HTTP, like
    /// containerd's insecure registries; every other one over HTTPS with the system's roots.
    pub insecure_registries: Vec<String>,
    /// Refuse a module layer larger than this (default [`DEFAULT_MAX_BYTES`], 64 MiB).
    pub max_bytes: u64,
}

impl Default for PullOptions {
    fn default() -> Self {
        PullOptions {
            credentials: None,
            insecure_registries: Vec::new(),
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// A module pulled and verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pulled {
    pub bytes: Vec<u8>,
    /// The manifest's digest: `sha256:` and 64 hex digits.
    pub manifest_digest: String,
    /// The sha256 of [`Pulled::bytes`], `sha256:` and 64 hex digits: what a QueuePolicy's
    /// `digest` pins (the same form).
    pub module_digest: String,
    /// The layer's media type ([`WASM_LAYER_MEDIA_TYPE`] or [`WASM_LEGACY_LAYER_MEDIA_TYPE`]).
    pub media_type: String,
}

/// Why a module could not be pulled (or pushed). Each names the reference (or the registry).
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    #[error("the pull secret's credentials for registry {registry}: {reason}")]
    Credentials { registry: String, reason: String },
    #[error(
        "{reference}: {}: {detail}",
        match username {
            Some(user) => format!("the registry refused the credentials of {user:?}"),
            None => "the registry requires credentials and none were given (a pullSecret for it?)".to_string(),
        }
    )]
    Unauthorized {
        reference: String,
        username: Option<String>,
        detail: String,
    },
    #[error(
        "{reference}: not found in the registry (check the repository and the tag or digest): {detail}"
    )]
    NotFound { reference: String, detail: String },
    #[error(
        "{reference}: the artifact has no WebAssembly layer ({WASM_LAYER_MEDIA_TYPE} or \
         {WASM_LEGACY_LAYER_MEDIA_TYPE}); its layers are [{}]: is it a WebAssembly artifact (wkg oci push)?",
        found.join(", ")
    )]
    NoModuleLayer {
        reference: String,
        found: Vec<String>,
    },
    #[error("{reference}: the manifest is not a WebAssembly artifact's: {reason}")]
    BadManifest { reference: String, reason: String },
    #[error("{reference}: the module is at least {size} bytes, over the limit of {max} bytes")]
    TooLarge {
        reference: String,
        size: u64,
        max: u64,
    },
    #[error(
        "{reference}: the {what} has digest {actual}, not {expected}: \
         the registry served other content than the digest names"
    )]
    DigestMismatch {
        reference: String,
        what: &'static str,
        expected: String,
        actual: String,
    },
    #[error("{reference}: the registry could not be used: {detail}")]
    Transport { reference: String, detail: String },
}

/// The sha256 of `bytes`: `sha256:` and 64 lowercase hex digits.
pub fn sha256_digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in hash {
        out.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
        out.push(char::from_digit(u32::from(b & 0xf), 16).unwrap_or('0'));
    }
    out
}

/// Pulls the module `reference` names and verifies it (see the module's documentation).
pub async fn pull_module(
    reference: &ModuleReference,
    options: &PullOptions,
) -> Result<Pulled, PullError> {
    let named = reference.to_string();
    let client = client(&named, options)?;
    let image = reference.to_oci();
    let auth = registry_auth(options);
    let accept = [
        OCI_MANIFEST_MEDIA_TYPE,
        DOCKER_MANIFEST_MEDIA_TYPE,
        OCI_INDEX_MEDIA_TYPE,
        DOCKER_LIST_MEDIA_TYPE,
    ];
    // oci-client checks the body against the reference's digest and the registry's
    // Docker-Content-Digest; the digest is computed again here so the check does not rest on it.
    let (body, _) = client
        .pull_manifest_raw(&image, &auth, &accept)
        .await
        .map_err(|e| classify(&named, options, "manifest", e))?;
    let manifest_digest = sha256_digest(&body);
    if let Some(expected) = reference.digest()
        && expected != manifest_digest
    {
        return Err(PullError::DigestMismatch {
            reference: named,
            what: "manifest",
            expected: expected.to_string(),
            actual: manifest_digest,
        });
    }
    let manifest = parse_manifest(&named, &body)?;
    let layer = module_layer(&named, &manifest)?;
    let max = options.max_bytes;
    let declared = u64::try_from(layer.size).map_err(|_| PullError::BadManifest {
        reference: named.clone(),
        reason: format!("the module layer's size is {}", layer.size),
    })?;
    if declared > max {
        return Err(PullError::TooLarge {
            reference: named,
            size: declared,
            max,
        });
    }
    // The descriptor without its `urls`: the layer comes from the registry named, or not at all.
    let descriptor = OciDescriptor {
        urls: None,
        ..layer.clone()
    };
    let mut out = CappedBuffer {
        bytes: Vec::new(),
        max,
        refused: None,
    };
    if let Err(e) = client.pull_blob(&image, &descriptor, &mut out).await {
        if let Some(size) = out.refused {
            return Err(PullError::TooLarge {
                reference: named,
                size,
                max,
            });
        }
        return Err(classify(&named, options, "module layer", e));
    }
    let module_digest = sha256_digest(&out.bytes);
    if layer.digest.starts_with("sha256:") && layer.digest != module_digest {
        return Err(PullError::DigestMismatch {
            reference: named,
            what: "module layer",
            expected: layer.digest.clone(),
            actual: module_digest,
        });
    }
    if out.bytes.len() as u64 != declared {
        return Err(PullError::BadManifest {
            reference: named,
            reason: format!(
                "the module layer is {} bytes, its descriptor says {declared}",
                out.bytes.len()
            ),
        });
    }
    Ok(Pulled {
        bytes: out.bytes,
        manifest_digest,
        module_digest,
        media_type: layer.media_type.clone(),
    })
}

/// Pushes `bytes` as a WebAssembly OCI artifact (config [`WASM_CONFIG_MEDIA_TYPE`], one
/// [`WASM_LAYER_MEDIA_TYPE`] layer) under the reference's tag; returns the manifest's digest.
pub async fn push_module(
    reference: &ModuleReference,
    bytes: &[u8],
    options: &PullOptions,
) -> Result<String, PullError> {
    let named = reference.to_string();
    if reference.digest().is_some() {
        return Err(PullError::Reference(ReferenceError {
            input: named,
            reason: "a push names a tag, not a digest (the digest is the pushed manifest's)"
                .to_string(),
        }));
    }
    if bytes.len() as u64 > options.max_bytes {
        return Err(PullError::TooLarge {
            reference: named,
            size: bytes.len() as u64,
            max: options.max_bytes,
        });
    }
    let client = client(&named, options)?;
    let image = reference.to_oci();
    let auth = registry_auth(options);
    client
        .store_auth_if_needed(image.resolve_registry(), &auth)
        .await;

    let layer = ImageLayer::new(bytes.to_vec(), WASM_LAYER_MEDIA_TYPE.to_string(), None);
    let layer_digest = sha256_digest(bytes);
    // A component's layer (version 0x0d) is `wasip2`, a core module's `wasip1`, as the layout
    // says. Not written: the component's imports and exports (`component`), optional to readers.
    let os = if bytes.get(4..8) == Some(&[0x0d, 0x00, 0x01, 0x00]) {
        "wasip2"
    } else {
        "wasip1"
    };
    let created = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second())
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let config_data = serde_json::to_vec(&serde_json::json!({
        "created": created.to_string(),
        "architecture": "wasm",
        "os": os,
        "layerDigests": [layer_digest],
    }))
    .map_err(|e| PullError::Transport {
        reference: named.clone(),
        detail: e.to_string(),
    })?;
    let config = Config::new(config_data, WASM_CONFIG_MEDIA_TYPE.to_string(), None);
    let mut manifest = OciImageManifest::build(std::slice::from_ref(&layer), &config, None);
    manifest.media_type = Some(OCI_MANIFEST_MEDIA_TYPE.to_string());

    let push_err = |e| classify(&named, options, "pushed blob", e);
    client
        .push_blob(&image, layer.data, &layer_digest)
        .await
        .map_err(push_err)?;
    client
        .push_blob(&image, config.data, &manifest.config.digest)
        .await
        .map_err(push_err)?;
    let body = serde_json::to_vec(&manifest).map_err(|e| PullError::Transport {
        reference: named.clone(),
        detail: e.to_string(),
    })?;
    let digest = sha256_digest(&body);
    client
        .push_manifest_raw(
            &image,
            body,
            http::HeaderValue::from_static(OCI_MANIFEST_MEDIA_TYPE),
        )
        .await
        .map_err(|e| classify(&named, options, "pushed manifest", e))?;
    Ok(digest)
}

fn client(named: &str, options: &PullOptions) -> Result<oci_client::Client, PullError> {
    // reqwest's `rustls-no-provider` takes the process's default CryptoProvider (and panics
    // without one): ring, as kube and the webhook use. An error means one is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = ClientConfig {
        protocol: ClientProtocol::HttpsExcept(options.insecure_registries.clone()),
        // A multi-platform index is refused (BadManifest), never resolved to a platform.
        platform_resolver: None,
        connect_timeout: Some(CONNECT_TIMEOUT),
        read_timeout: Some(READ_TIMEOUT),
        user_agent: concat!("wasq/", env!("CARGO_PKG_VERSION")),
        ..ClientConfig::default()
    };
    oci_client::Client::try_from(config).map_err(|e| PullError::Transport {
        reference: named.to_string(),
        detail: format!("cannot make an HTTP client: {}", chain(&e)),
    })
}

fn registry_auth(options: &PullOptions) -> RegistryAuth {
    match &options.credentials {
        Some(c) => RegistryAuth::Basic(c.username.clone(), c.password.clone()),
        None => RegistryAuth::Anonymous,
    }
}

fn parse_manifest(named: &str, body: &[u8]) -> Result<OciImageManifest, PullError> {
    let bad = |reason: String| PullError::BadManifest {
        reference: named.to_string(),
        reason,
    };
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| bad(format!("it is not JSON: {e}")))?;
    let media_type = value
        .get("mediaType")
        .and_then(|m| m.as_str())
        .unwrap_or_default();
    if value.get("manifests").is_some()
        || media_type == OCI_INDEX_MEDIA_TYPE
        || media_type == DOCKER_LIST_MEDIA_TYPE
    {
        return Err(bad(
            "it is an image index (a multi-platform image?), not one artifact's manifest"
                .to_string(),
        ));
    }
    if value.get("schemaVersion").and_then(|v| v.as_u64()) != Some(2) {
        return Err(bad("its schemaVersion is not 2".to_string()));
    }
    serde_json::from_value(value).map_err(|e| bad(format!("it is not an OCI image manifest: {e}")))
}

fn module_layer<'m>(
    named: &str,
    manifest: &'m OciImageManifest,
) -> Result<&'m OciDescriptor, PullError> {
    let is_wasm = |l: &&OciDescriptor| {
        l.media_type == WASM_LAYER_MEDIA_TYPE || l.media_type == WASM_LEGACY_LAYER_MEDIA_TYPE
    };
    let mut wasm = manifest.layers.iter().filter(is_wasm);
    match (wasm.next(), wasm.next()) {
        (Some(layer), None) => Ok(layer),
        (None, _) => Err(PullError::NoModuleLayer {
            reference: named.to_string(),
            found: manifest
                .layers
                .iter()
                .map(|l| l.media_type.clone())
                .collect(),
        }),
        (Some(_), Some(_)) => Err(PullError::BadManifest {
            reference: named.to_string(),
            reason: format!(
                "it has {} WebAssembly layers, and a module artifact has one",
                manifest.layers.iter().filter(is_wasm).count()
            ),
        }),
    }
}

/// An oci-client error as an operator reads it.
fn classify(
    named: &str,
    options: &PullOptions,
    what: &'static str,
    e: OciDistributionError,
) -> PullError {
    let reference = named.to_string();
    let username = options.credentials.as_ref().map(|c| c.username.clone());
    let unauthorized = |detail: String| PullError::Unauthorized {
        reference: reference.clone(),
        username: username.clone(),
        detail,
    };
    let not_found = |detail: String| PullError::NotFound {
        reference: reference.clone(),
        detail,
    };
    let transport = |detail: String| PullError::Transport {
        reference: reference.clone(),
        detail,
    };
    match e {
        OciDistributionError::UnauthorizedError { url } => unauthorized(format!("401 from {url}")),
        OciDistributionError::AuthenticationFailure(reason) => {
            unauthorized(format!("the token service said {reason:?}"))
        }
        OciDistributionError::RegistryError { envelope, url } => {
            let codes: Vec<&OciErrorCode> = envelope.errors.iter().map(|e| &e.code).collect();
            let detail = format!("{envelope} from {url}");
            if codes
                .iter()
                .any(|c| matches!(c, OciErrorCode::Unauthorized | OciErrorCode::Denied))
            {
                unauthorized(detail)
            } else if codes.iter().any(|c| {
                matches!(
                    c,
                    OciErrorCode::ManifestUnknown
                        | OciErrorCode::NameUnknown
                        | OciErrorCode::BlobUnknown
                        | OciErrorCode::NotFound
                )
            }) {
                not_found(detail)
            } else {
                transport(detail)
            }
        }
        OciDistributionError::ServerError { code, url, message } => {
            let detail = format!("HTTP {code} from {url}: {}", message.trim());
            match code {
                401 | 403 => unauthorized(detail),
                404 => not_found(detail),
                _ => transport(detail),
            }
        }
        OciDistributionError::DigestError(oci_client::errors::DigestError::VerificationError {
            expected,
            actual,
        }) => PullError::DigestMismatch {
            reference,
            what,
            expected,
            actual,
        },
        other => transport(chain(&other)),
    }
}

/// An error and its sources, joined by `: ` (reqwest's own message names no cause).
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !out.contains(&s_text) {
            out.push_str(": ");
            out.push_str(&s_text);
        }
        source = s.source();
    }
    out
}

/// Collects a blob, failing the write that would take it over `max` bytes.
struct CappedBuffer {
    bytes: Vec<u8>,
    max: u64,
    /// The size the refused write would have made.
    refused: Option<u64>,
}

impl tokio::io::AsyncWrite for CappedBuffer {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let size = (self.bytes.len() + buf.len()) as u64;
        if size > self.max {
            self.refused = Some(size);
            return Poll::Ready(Err(io::Error::other("the module is over the size limit")));
        }
        self.bytes.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::double::RegistryDouble;
    use super::*;

    /// A component's header (`\0asm`, version 0x0d, layer 1) and some padding: the pull does
    /// not validate components.
    fn module(fill: u8, len: usize) -> Vec<u8> {
        let mut bytes = b"\0asm\x0d\x00\x01\x00".to_vec();
        bytes.resize(len, fill);
        bytes
    }

    fn reference(s: &str) -> ModuleReference {
        s.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    fn reason(s: &str) -> String {
        match s.parse::<ModuleReference>() {
            Ok(r) => panic!("{s:?} parsed as {r:?}"),
            Err(e) => {
                assert_eq!(e.input, s);
                e.to_string()
            }
        }
    }

    #[test]
    fn references_parse_with_tag_digest_port_and_default_tag() {
        let r = reference("oci://registry.example.com:5000/team/fair-share:1.2");
        assert_eq!(r.registry(), "registry.example.com:5000");
        assert_eq!(r.repository(), "team/fair-share");
        assert_eq!((r.tag(), r.digest()), (Some("1.2"), None));
        assert_eq!(
            r.to_string(),
            "oci://registry.example.com:5000/team/fair-share:1.2"
        );

        let hex = "a".repeat(64);
        let r = reference(&format!("oci://registry/repo@sha256:{hex}"));
        assert_eq!(
            (r.registry(), r.repository(), r.tag()),
            ("registry", "repo", None)
        );
        assert_eq!(r.digest(), Some(format!("sha256:{hex}").as_str()));
        assert_eq!(r.to_string(), format!("oci://registry/repo@sha256:{hex}"));

        let r = reference(&format!("oci://localhost:5000/a/b/c:v1@sha256:{hex}"));
        assert_eq!((r.tag(), r.digest().is_some()), (Some("v1"), true));

        let r = reference("oci://ghcr.io/acme/fair_share.v2--x");
        assert_eq!(r.tag(), Some("latest"));
        assert_eq!(r.to_string(), "oci://ghcr.io/acme/fair_share.v2--x:latest");
        assert_eq!(reference(&r.to_string()), r);

        let r = reference("oci://[::1]:5000/repo:tag");
        assert_eq!(r.registry(), "[::1]:5000");
    }

    #[test]
    fn bad_references_say_what_is_wrong() {
        let no_scheme = reason("registry.example.com/team/policy:1.0");
        assert!(no_scheme.contains("must start with oci://"), "{no_scheme}");
        assert!(
            no_scheme.contains("expected oci://registry[:port]/repository[:tag]"),
            "{no_scheme}"
        );
        assert!(reason("https://registry/repo:1").contains("the scheme must be oci://"));
        assert!(reason("oci://registry.example.com").contains("names no repository"));
        assert!(reason("oci://registry.example.com/").contains("names no repository"));
        assert!(reason("oci:///repo").contains("names no registry"));
        assert!(
            reason("oci://registry/repo@sha256:abc").contains("64 lowercase hex digits (3 given)")
        );
        let upper = format!("oci://registry/repo@sha256:{}", "A".repeat(64));
        assert!(reason(&upper).contains("64 lowercase hex digits"));
        let md5 = format!("oci://registry/repo@md5:{}", "a".repeat(32));
        assert!(reason(&md5).contains("only sha256 digests are supported"));
        assert!(reason("oci://registry/repo@").contains("must be sha256:<64 hex digits>"));
        assert!(reason("oci://registry/Team/repo:1").contains("must be lowercase"));
        assert!(reason("oci://registry/team//repo").contains("empty path component"));
        assert!(reason("oci://registry/-repo").contains("joined by"));
        assert!(reason("oci://registry/repo:").contains("the tag after ':' is empty"));
        assert!(reason("oci://registry/repo:.x").contains("the tag \".x\""));
        assert!(reason("oci://registry:http/repo").contains("port \"http\""));
        assert!(reason("oci://registry:0/repo").contains("port \"0\""));
        assert!(reason("oci://reg_istry/repo").contains("not a DNS name"));
    }

    #[test]
    fn credentials_come_from_dockerconfigjson_and_dockercfg() {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        // What `kubectl create secret docker-registry` writes.
        let secret = serde_json::json!({"auths": {
            "registry.example.com:5000": {"username": "robot", "password": "s3cret:x", "auth": b64("robot:s3cret:x")},
            "https://ghcr.io": {"auth": b64("gh:token")},
            "https://index.docker.io/v1/": {"username": "hub", "password": "pw"},
            "*.corp.example": {"auth": b64("wild:card")},
            "plain.example.com": {"username": "plain", "password": "pw", "auth": ""},
        }})
        .to_string();
        let get = |registry: &str| {
            credentials_for(registry, secret.as_bytes()).unwrap_or_else(|e| panic!("{e}"))
        };
        let pair = |c: Option<Credentials>| c.map(|c| (c.username, c.password));
        let some = |u: &str, p: &str| Some((u.to_string(), p.to_string()));
        assert_eq!(
            pair(get("registry.example.com:5000")),
            some("robot", "s3cret:x")
        );
        assert_eq!(
            pair(get("registry.example.com")),
            None,
            "the port must match"
        );
        assert_eq!(pair(get("ghcr.io")), some("gh", "token"));
        assert_eq!(pair(get("GHCR.io")), some("gh", "token"));
        assert_eq!(pair(get("docker.io")), some("hub", "pw"));
        assert_eq!(pair(get("registry-1.docker.io")), some("hub", "pw"));
        assert_eq!(pair(get("team.corp.example")), some("wild", "card"));
        assert_eq!(pair(get("a.team.corp.example")), None, "a * is one label");
        assert_eq!(pair(get("plain.example.com")), some("plain", "pw"));
        assert_eq!(pair(get("quay.io")), None);

        // The older `.dockercfg`: the map at the top level.
        let old = serde_json::json!({"quay.io": {"auth": b64("q:p"), "email": "q@example.com"}})
            .to_string();
        let c = credentials_for("quay.io", old.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pair(c), some("q", "p"));

        let broken = |json: serde_json::Value| match credentials_for(
            "r.example",
            json.to_string().as_bytes(),
        ) {
            Err(e @ PullError::Credentials { .. }) => e.to_string(),
            other => panic!("{other:?}"),
        };
        assert!(
            broken(serde_json::json!({"auths": {"r.example": {"auth": "%%%"}}}))
                .contains("not base64")
        );
        assert!(
            broken(serde_json::json!({"auths": {"r.example": {"auth": b64("nocolon")}}}))
                .contains("username:password")
        );
        assert!(
            broken(serde_json::json!({"auths": {"r.example": {"identitytoken": "t"}}}))
                .contains("neither")
        );
        assert!(broken(serde_json::json!({"auths": []})).contains("not an object"));
        assert!(broken(serde_json::json!("text")).contains("r.example"));
        assert!(
            format!(
                "{:?}",
                Credentials {
                    username: "u".into(),
                    password: "hunter2".into()
                }
            )
            .contains("<redacted>")
        );
    }

    #[tokio::test]
    async fn pulls_by_tag_and_by_digest() {
        let registry = RegistryDouble::start()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let bytes = module(7, 3000);
        let manifest_digest = registry.put_module("team/fair-share", "1.2", &bytes);

        let pulled = pull_module(
            &registry.reference("team/fair-share:1.2"),
            &registry.options(),
        )
        .await;
        let pulled = pulled.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pulled.bytes, bytes);
        assert_eq!(pulled.manifest_digest, manifest_digest);
        assert_eq!(pulled.module_digest, sha256_digest(&bytes));
        assert_eq!(pulled.module_digest.len(), 7 + 64);
        assert_eq!(pulled.media_type, WASM_LAYER_MEDIA_TYPE);
        assert_eq!(
            registry.blob_downloads(),
            1,
            "the config blob is not fetched"
        );

        let by_digest = registry.reference(&format!("team/fair-share@{manifest_digest}"));
        let again = pull_module(&by_digest, &registry.options())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again, pulled);
        let with_both = registry.reference(&format!("team/fair-share:1.2@{manifest_digest}"));
        assert_eq!(
            pull_module(&with_both, &registry.options()).await.ok(),
            Some(pulled)
        );
        assert_eq!(registry.blob_downloads(), 3, "one layer download per pull");

        let missing = pull_module(
            &registry.reference("team/fair-share:9"),
            &registry.options(),
        )
        .await;
        assert!(
            matches!(&missing, Err(PullError::NotFound { reference, .. }) if reference.ends_with("/team/fair-share:9")),
            "{missing:?}"
        );
    }

    #[tokio::test]
    async fn a_digest_reference_must_be_the_manifests_digest() {
        let registry = RegistryDouble::start()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let real = registry.put_module("repo", "v1", &module(1, 100));
        let other = sha256_digest(b"some other manifest");

        // Unknown to the registry.
        let missing = pull_module(
            &registry.reference(&format!("repo@{other}")),
            &registry.options(),
        )
        .await;
        assert!(
            matches!(missing, Err(PullError::NotFound { .. })),
            "{missing:?}"
        );

        // A registry that serves a manifest under a digest that is not its own.
        let body = registry.manifest("repo", &real).unwrap_or_default();
        registry.put_manifest("repo", &other, OCI_MANIFEST_MEDIA_TYPE, &body);
        let lying = pull_module(
            &registry.reference(&format!("repo@{other}")),
            &registry.options(),
        )
        .await;
        match lying {
            Err(
                e @ PullError::DigestMismatch {
                    what: "manifest", ..
                },
            ) => {
                let text = e.to_string();
                assert!(text.contains(&other) && text.contains(&real), "{text}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(registry.blob_downloads(), 0);
    }

    #[tokio::test]
    async fn basic_auth_from_a_pull_secret() {
        let registry = RegistryDouble::start_with_basic_auth("robot", "s3cret")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let bytes = module(2, 500);
        registry.put_module("private/policy", "1.0", &bytes);
        let r = registry.reference("private/policy:1.0");

        let anonymous = pull_module(&r, &registry.options()).await;
        match &anonymous {
            Err(e @ PullError::Unauthorized { username: None, .. }) => {
                assert!(e.to_string().contains("none were given"), "{e}");
            }
            other => panic!("{other:?}"),
        }
        let wrong = pull_module(&r, &registry.options_with("robot", "guess")).await;
        match &wrong {
            Err(
                e @ PullError::Unauthorized {
                    username: Some(_), ..
                },
            ) => {
                assert!(
                    e.to_string()
                        .contains("refused the credentials of \"robot\""),
                    "{e}"
                );
            }
            other => panic!("{other:?}"),
        }

        let auth = base64::engine::general_purpose::STANDARD.encode("robot:s3cret");
        let secret = format!(
            r#"{{"auths":{{"http://{}":{{"username":"robot","password":"s3cret","auth":"{auth}"}}}}}}"#,
            registry.registry()
        );
        let credentials =
            credentials_for(r.registry(), secret.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert!(credentials.is_some());
        let options = PullOptions {
            credentials,
            ..registry.options()
        };
        let pulled = pull_module(&r, &options)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pulled.bytes, bytes);
        let unauthorized = registry
            .requests()
            .iter()
            .filter(|q| q.status == http::StatusCode::UNAUTHORIZED)
            .count();
        assert!(unauthorized >= 2, "{:?}", registry.requests());
    }

    #[tokio::test]
    async fn an_artifact_without_a_wasm_layer_is_refused_with_its_layer_types() {
        let registry = RegistryDouble::start()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let config = br#"{"architecture":"amd64","os":"linux"}"#;
        let layers: [(&str, &[u8]); 2] = [
            (
                "application/vnd.oci.image.layer.v1.tar+gzip",
                b"not a module",
            ),
            ("text/plain", b"readme"),
        ];
        registry.put_artifact(
            "image",
            "1",
            "application/vnd.oci.image.config.v1+json",
            config,
            &layers,
        );
        let result = pull_module(&registry.reference("image:1"), &registry.options()).await;
        match result {
            Err(e @ PullError::NoModuleLayer { .. }) => {
                let text = e.to_string();
                assert!(
                    text.contains("[application/vnd.oci.image.layer.v1.tar+gzip, text/plain]"),
                    "{text}"
                );
                assert!(text.contains("/image:1"), "{text}");
            }
            other => panic!("{other:?}"),
        }

        // Kubewarden's older layer type is a module layer.
        let bytes = module(3, 64);
        let legacy = [(WASM_LEGACY_LAYER_MEDIA_TYPE, bytes.as_slice())];
        registry.put_artifact(
            "legacy",
            "1",
            "application/vnd.wasm.config.v1+json",
            b"{}",
            &legacy,
        );
        let pulled = pull_module(&registry.reference("legacy:1"), &registry.options()).await;
        let pulled = pulled.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (pulled.bytes, pulled.media_type.as_str()),
            (bytes.clone(), WASM_LEGACY_LAYER_MEDIA_TYPE)
        );

        // Two module layers: which one?
        let two = [
            (WASM_LAYER_MEDIA_TYPE, bytes.as_slice()),
            (WASM_LAYER_MEDIA_TYPE, b"\0asm-other".as_slice()),
        ];
        registry.put_artifact("two", "1", WASM_CONFIG_MEDIA_TYPE, b"{}", &two);
        let result = pull_module(&registry.reference("two:1"), &registry.options()).await;
        assert!(
            matches!(result, Err(PullError::BadManifest { .. })),
            "{result:?}"
        );

        // A multi-platform index.
        let index = serde_json::json!({"schemaVersion": 2, "mediaType": OCI_INDEX_MEDIA_TYPE, "manifests": []});
        registry.put_manifest(
            "index",
            "1",
            OCI_INDEX_MEDIA_TYPE,
            index.to_string().as_bytes(),
        );
        let result = pull_module(&registry.reference("index:1"), &registry.options()).await;
        assert!(
            matches!(&result, Err(e @ PullError::BadManifest { .. }) if e.to_string().contains("image index")),
            "{result:?}"
        );
    }

    #[tokio::test]
    async fn a_corrupted_layer_is_a_digest_mismatch() {
        let registry = RegistryDouble::start()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let bytes = module(4, 2048);
        registry.put_module("repo", "v1", &bytes);
        let layer = sha256_digest(&bytes);
        registry.corrupt_blob("repo", &layer);
        let result = pull_module(&registry.reference("repo:v1"), &registry.options()).await;
        match result {
            Err(
                e @ PullError::DigestMismatch {
                    what: "module layer",
                    ..
                },
            ) => {
                assert!(e.to_string().contains(&layer), "{e}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_module_over_the_limit_is_refused() {
        let registry = RegistryDouble::start()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let bytes = module(5, 10_000);
        registry.put_module("big", "1", &bytes);
        let options = PullOptions {
            max_bytes: 9_999,
            ..registry.options()
        };
        let result = pull_module(&registry.reference("big:1"), &options).await;
        assert!(
            matches!(
                result,
                Err(PullError::TooLarge {
                    size: 10_000,
                    max: 9_999,
                    ..
                })
            ),
            "{result:?}"
        );
        assert_eq!(
            registry.blob_downloads(),
            0,
            "refused by its descriptor, before the download"
        );
        let options = PullOptions {
            max_bytes: 10_000,
            ..registry.options()
        };
        assert!(
            pull_module(&registry.reference("big:1"), &options)
                .await
                .is_ok()
        );

        // A descriptor that understates the size: the download stops at the limit.
        let digest = registry.put_blob("liar", &bytes);
        let config = registry.put_blob("liar", b"{}");
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST_MEDIA_TYPE,
            "config": {"mediaType": WASM_CONFIG_MEDIA_TYPE, "digest": config, "size": 2},
            "layers": [{"mediaType": WASM_LAYER_MEDIA_TYPE, "digest": digest, "size": 100}],
        });
        registry.put_manifest(
            "liar",
            "1",
            OCI_MANIFEST_MEDIA_TYPE,
            manifest.to_string().as_bytes(),
        );
        let options = PullOptions {
            max_bytes: 1_000,
            ..registry.options()
        };
        let result = pull_module(&registry.reference("liar:1"), &options).await;
        assert!(
            matches!(result, Err(PullError::TooLarge { max: 1_000, .. })),
            "{result:?}"
        );
    }

    #[tokio::test]
    async fn push_writes_the_wasm_artifact_layout() {
        let registry = RegistryDouble::start_with_basic_auth("ci", "pw")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let options = registry.options_with("ci", "pw");
        // Over oci-client's 4 MiB chunk: the upload takes two PATCHes.
        let bytes = module(6, 5 << 20);
        let r = registry.reference("team/pushed:2.0");
        let digest = push_module(&r, &bytes, &options)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            registry
                .requests()
                .iter()
                .filter(|q| q.method == http::Method::PATCH)
                .count()
                >= 2
        );

        let body = registry.manifest("team/pushed", "2.0").unwrap_or_default();
        assert_eq!(sha256_digest(&body), digest);
        let manifest: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        assert_eq!(manifest["mediaType"], OCI_MANIFEST_MEDIA_TYPE);
        assert_eq!(manifest["config"]["mediaType"], WASM_CONFIG_MEDIA_TYPE);
        assert_eq!(manifest["layers"].as_array().map(Vec::len), Some(1));
        assert_eq!(manifest["layers"][0]["mediaType"], WASM_LAYER_MEDIA_TYPE);
        let config_digest = manifest["config"]["digest"].as_str().unwrap_or_default();
        let config: serde_json::Value = serde_json::from_slice(
            &registry
                .blob("team/pushed", config_digest)
                .unwrap_or_default(),
        )
        .unwrap_or_default();
        assert_eq!(
            (config["architecture"].as_str(), config["os"].as_str()),
            (Some("wasm"), Some("wasip2"))
        );
        assert_eq!(
            config["layerDigests"][0].as_str(),
            Some(sha256_digest(&bytes).as_str())
        );

        let by_digest = registry.reference(&format!("team/pushed@{digest}"));
        let pulled = pull_module(&by_digest, &options)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (pulled.bytes == bytes, pulled.manifest_digest),
            (true, digest.clone())
        );

        let refused = push_module(&by_digest, &bytes, &options).await;
        assert!(
            matches!(refused, Err(PullError::Reference(_))),
            "{refused:?}"
        );
        let small = PullOptions {
            max_bytes: 1024,
            ..options.clone()
        };
        assert!(matches!(
            push_module(&r, &bytes, &small).await,
            Err(PullError::TooLarge { .. })
        ));
        let anonymous = push_module(&r, &bytes, &registry.options()).await;
        assert!(
            matches!(anonymous, Err(PullError::Unauthorized { .. })),
            "{anonymous:?}"
        );
    }

    #[tokio::test]
    async fn unreachable_and_tls_registries_are_transport_errors() {
        let port = {
            let listener =
                std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
            listener.local_addr().map(|a| a.port()).unwrap_or_default()
        };
        let closed = reference(&format!("oci://127.0.0.1:{port}/repo:1"));
        let options = PullOptions {
            insecure_registries: vec![closed.registry().to_string()],
            ..PullOptions::default()
        };
        let result = pull_module(&closed, &options).await;
        assert!(
            matches!(&result, Err(PullError::Transport { reference, .. }) if reference.contains("/repo:1")),
            "{result:?}"
        );

        // Not an insecure registry: HTTPS (rustls with ring) to a plain-HTTP server.
        let registry = RegistryDouble::start()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        registry.put_module("repo", "1", &module(0, 16));
        let result = pull_module(&registry.reference("repo:1"), &PullOptions::default()).await;
        assert!(
            matches!(result, Err(PullError::Transport { .. })),
            "{result:?}"
        );
    }
}
