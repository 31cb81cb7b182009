//! A worker's kubeconfig, as Kueue's MultiKueueCluster reconciler loads, checks and uses it
//! (`pkg/controller/admissionchecks/multikueue/multikueuecluster.go` at HEAD):
//!
//! 1. the bytes ([`load`], Kueue's `loadClientConfig` / `getKubeConfig`): the `kubeconfig` key
//!    of a Secret in Kueue's namespace ([`from_secret`]), or a file under the allowed directory
//!    ([`from_path`], after [`validate_path`]); a failure has reason [`BAD_KUBECONFIG`];
//! 2. their validation ([`validate`], Kueue's `validateKubeconfig` and `validateRestConfig`);
//!    a failure, a YAML that does not parse among them, has reason [`INSECURE_KUBECONFIG`];
//! 3. the client ([`client`]): [`Kubeconfig`] → [`kube::Config::from_custom_kubeconfig`] →
//!    [`kube::Client::try_from`]. Kueue builds it when it connects, so a failure there is a
//!    connection failure (`ClientConnectionFailed`), not a load failure.
//!
//! Each load error becomes the MultiKueueCluster's `Active=False` condition with the message
//! `load client config failed: <error>` ([`LoadError::condition_message`]).
//!
//! Texts are Kueue's, with two unavoidable differences: a YAML parse error and a kubeconfig
//! whose current context cannot be resolved carry kube-rs's error text, not client-go's; and
//! file-system errors name the path Rust's calls report (Go's `EvalSymlinks` may name a
//! symlink's target instead).

use std::io::Read as _;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Secret;
use kube::config::{KubeConfigOptions, Kubeconfig};
use sha2::{Digest as _, Sha256};

use crate::api::multikueue::{
    KUBECONFIG_PATH_PREFIX, KUBECONFIG_SECRET_KEY, LocationType, MultiKueueCluster,
};

/// Reason of a kubeconfig that cannot be read (Secret or key missing, path refused, file
/// unreadable).
pub const BAD_KUBECONFIG: &str = "BadKubeConfig";
/// Reason of a kubeconfig that does not parse or fails [`validate`].
pub const INSECURE_KUBECONFIG: &str = "InsecureKubeConfig";
/// Reason of a cluster whose source is a ClusterProfile: Kueue's alpha
/// `MultiKueueClusterProfile` gate, off by default, is off in wasq.
pub const CLUSTER_PROFILE_DISABLED: &str = "MultiKueueClusterProfileFeatureDisabled";
/// The message of [`CLUSTER_PROFILE_DISABLED`].
pub const CLUSTER_PROFILE_DISABLED_MESSAGE: &str =
    "MultiKueueClusterProfile feature gate is disabled";
/// The prefix of every load error in the `Active` condition.
pub const LOAD_FAILED: &str = "load client config failed";
/// The prefix of path errors (Kueue's `errPathNotAllowed`).
pub const PATH_NOT_ALLOWED: &str = "kubeconfig path is not under the allowed prefix";

/// Why a kubeconfig could not be loaded: the `Active` condition's reason and the error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    pub reason: &'static str,
    /// The error, without the [`LOAD_FAILED`] prefix.
    pub message: String,
    /// The Secret does not exist: Kueue does not retry (the Secret's creation triggers the
    /// reconcile).
    pub not_found: bool,
}

impl LoadError {
    fn bad(message: impl Into<String>) -> LoadError {
        LoadError {
            reason: BAD_KUBECONFIG,
            message: message.into(),
            not_found: false,
        }
    }

    fn insecure(message: impl Into<String>) -> LoadError {
        LoadError {
            reason: INSECURE_KUBECONFIG,
            message: message.into(),
            not_found: false,
        }
    }

    /// `load client config failed: <error>`, the condition's message (Kueue's `Reconcile`).
    pub fn condition_message(&self) -> String {
        format!("{LOAD_FAILED}: {}", self.message)
    }
}

/// A kubeconfig loaded and validated: the bytes' digest (a changed digest is a rotation) and
/// the parsed config a client is built from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub digest: Digest,
    pub config: Kubeconfig,
}

/// SHA-256 of a kubeconfig's bytes.
pub type Digest = [u8; 32];

pub fn digest(bytes: &[u8]) -> Digest {
    Sha256::digest(bytes).into()
}

/// Kueue's `loadClientConfig` for `cluster`: its kubeconfig's bytes read (a Secret from
/// `secret`, by name in Kueue's namespace; a path under `dir`), then [`validate`]d.
pub fn load<'a>(
    cluster: &MultiKueueCluster,
    secret: impl FnOnce(&str) -> Option<&'a Secret>,
    dir: &Path,
) -> Result<Loaded, LoadError> {
    if cluster.cluster_profile().is_some() {
        return Err(LoadError {
            reason: CLUSTER_PROFILE_DISABLED,
            message: CLUSTER_PROFILE_DISABLED_MESSAGE.into(),
            not_found: false,
        });
    }
    // Kueue's `getKubeConfig`.
    let Some(k) = cluster.kube_config() else {
        return Err(LoadError::bad("kubeconfig reference is nil"));
    };
    let bytes = match k.location_type() {
        LocationType::Secret => from_secret(&k.location, secret(&k.location))?,
        LocationType::Path => from_path(&k.location, dir)?,
    };
    let config = validate(&bytes)?;
    Ok(Loaded {
        digest: digest(&bytes),
        config,
    })
}

/// Kueue's `getKubeConfigFromSecret`: the `kubeconfig` key of `secret` (`None`: it does not
/// exist), as bytes.
pub fn from_secret(name: &str, secret: Option<&Secret>) -> Result<Vec<u8>, LoadError> {
    let Some(secret) = secret else {
        return Err(LoadError {
            not_found: true,
            ..LoadError::bad(format!("secrets {} not found", go_quote(name)))
        });
    };
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(KUBECONFIG_SECRET_KEY))
        .map(|b| b.0.clone())
        .ok_or_else(|| {
            LoadError::bad(format!(
                "key {} not found in secret {}",
                go_quote(KUBECONFIG_SECRET_KEY),
                go_quote(name)
            ))
        })
}

/// Kueue's `getKubeConfigFromPath`: the file at `raw`, once [`validate_path`] accepts it.
pub fn from_path(raw: &str, dir: &Path) -> Result<Vec<u8>, LoadError> {
    let path = validate_path(raw, dir).map_err(LoadError::bad)?;
    // `os.ReadFile`.
    let shown = path.display().to_string();
    let mut file =
        std::fs::File::open(&path).map_err(|e| LoadError::bad(path_error("open", &shown, &e)))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| LoadError::bad(path_error("read", &shown, &e)))?;
    Ok(bytes)
}

/// The directory `locationType: Path` kubeconfigs must be under by default (Kueue's
/// `defaultKubeConfigPathPrefix`).
pub fn default_dir() -> PathBuf {
    PathBuf::from(KUBECONFIG_PATH_PREFIX)
}

/// Kueue's `validateKubeConfigPath` (gate `MultiKueueKubeConfigPathValidation`, on): `raw`,
/// cleaned, must have no `..` component, be absolute and resolve (following symlinks) under
/// `prefix` (resolved too). Returns the resolved path.
pub fn validate_path(raw: &str, prefix: &Path) -> Result<PathBuf, String> {
    if raw.is_empty() {
        return Err("kubeconfig path must not be empty".into());
    }
    let cleaned = clean(raw);
    if cleaned.split('/').any(|c| c == "..") {
        return Err(format!("{PATH_NOT_ALLOWED}: path contains \"..\""));
    }
    if !cleaned.starts_with('/') {
        return Err(format!("{PATH_NOT_ALLOWED}: path must be absolute"));
    }
    let prefix_text = prefix.to_string_lossy();
    let Ok(allowed) = std::fs::canonicalize(prefix) else {
        return Err(format!(
            "{PATH_NOT_ALLOWED}: {} is not under {}",
            go_quote(&cleaned),
            go_quote(&clean(&prefix_text))
        ));
    };
    let resolved = std::fs::canonicalize(&cleaned).map_err(|e| {
        format!(
            "cannot resolve kubeconfig path symlinks: {}",
            unresolved(&cleaned, &e)
        )
    })?;
    // A trailing separator on both, so that `/etc/kueue` does not hold `/etc/kueue-other`.
    let (r, a) = (resolved.to_string_lossy(), allowed.to_string_lossy());
    let with_sep = |s: &str| {
        if s.ends_with('/') {
            s.to_string()
        } else {
            format!("{s}/")
        }
    };
    if !with_sep(&r).starts_with(&with_sep(&a)) {
        return Err(format!(
            "{PATH_NOT_ALLOWED}: {} is not under {}",
            go_quote(&r),
            go_quote(&a)
        ));
    }
    Ok(resolved)
}

/// Kueue's `validateKubeconfig` then `validateRestConfig` on the current context: the
/// kubeconfig parsed, or why it is refused (reason [`INSECURE_KUBECONFIG`]).
///
/// In Kueue's order: a `tokenFile` on any user; per cluster, in the file's order (Kueue
/// iterates a Go map), insecure TLS, a CA file path, no server; then for the current context,
/// a server host neither an IP nor a DNS subdomain (lowercased), basic auth, an exec plugin,
/// an auth provider. An inline `token` and `http://` servers are allowed.
pub fn validate(bytes: &[u8]) -> Result<Kubeconfig, LoadError> {
    let parse = |e: &dyn std::fmt::Display| {
        LoadError::insecure(format!("failed to parse kubeconfig(apiconfig): {e}"))
    };
    let text = std::str::from_utf8(bytes).map_err(|e| parse(&e))?;
    let config = Kubeconfig::from_yaml(text).map_err(|e| parse(&e))?;
    for user in &config.auth_infos {
        if user
            .auth_info
            .as_ref()
            .and_then(|a| a.token_file.as_deref())
            .is_some_and(|f| !f.is_empty())
        {
            return Err(LoadError::insecure("tokenFile is not allowed"));
        }
    }
    for named in &config.clusters {
        let n = &named.name;
        let c = named.cluster.clone().unwrap_or_default();
        if c.insecure_skip_tls_verify == Some(true) {
            return Err(LoadError::insecure(format!(
                "insecure TLS verification is not allowed for cluster {n}"
            )));
        }
        if c.certificate_authority
            .as_deref()
            .is_some_and(|f| !f.is_empty())
        {
            return Err(LoadError::insecure(format!(
                "certificate-authority file paths are not allowed, use certificate-authority-data for cluster {n}"
            )));
        }
        if c.server.as_deref().unwrap_or_default().is_empty() {
            return Err(LoadError::insecure(format!(
                "server URL is required for cluster {n}"
            )));
        }
    }
    // `clientcmd.RESTConfigFromKubeConfig`: the current context's cluster and user.
    if config.clusters.is_empty()
        && config.auth_infos.is_empty()
        && config.contexts.is_empty()
        && config.current_context.is_none()
    {
        return Err(LoadError::insecure(
            "invalid configuration: no configuration has been provided, try setting KUBERNETES_MASTER environment variable",
        ));
    }
    let Some(context_name) = config.current_context.as_deref().filter(|c| !c.is_empty()) else {
        return Err(LoadError::insecure("failed to determine current context"));
    };
    let Some(context) = config
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.as_ref())
    else {
        return Err(LoadError::insecure(format!(
            "failed to load current context: {context_name}"
        )));
    };
    let Some(cluster) = config
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.as_ref())
    else {
        return Err(LoadError::insecure(format!(
            "failed to load the cluster of context: {}",
            context.cluster
        )));
    };
    let user = context.user.as_deref().and_then(|u| {
        config
            .auth_infos
            .iter()
            .find(|a| a.name == u)
            .and_then(|a| a.auth_info.as_ref())
    });
    // `validateRestConfig`.
    let server = cluster.server.as_deref().unwrap_or_default();
    if !is_valid_hostname(&server.to_lowercase()) {
        return Err(LoadError::insecure("untrusted server endpoint"));
    }
    if let Some(u) = user {
        // kube keeps the password secret; its serialization shows it.
        let password = u.password.is_some()
            && serde_json::to_value(u)
                .ok()
                .and_then(|v| v["password"].as_str().map(|p| !p.is_empty()))
                .unwrap_or(true);
        if u.username.as_deref().is_some_and(|n| !n.is_empty()) || password {
            return Err(LoadError::insecure("basic auth is not allowed"));
        }
        if u.exec.is_some() {
            return Err(LoadError::insecure("exec plugins are not allowed"));
        }
        if u.auth_provider.is_some() {
            return Err(LoadError::insecure("auth providers are not allowed"));
        }
    }
    Ok(config)
}

/// A client for the kubeconfig's current context: [`kube::Config::from_custom_kubeconfig`],
/// then [`kube::Client::try_from`]. The error is one line.
pub async fn client(config: Kubeconfig) -> Result<kube::Client, String> {
    let config = kube::Config::from_custom_kubeconfig(config, &KubeConfigOptions::default())
        .await
        .map_err(|e| crate::k8s::client::connect::one_line(&e))?;
    kube::Client::try_from(config).map_err(|e| crate::k8s::client::connect::one_line(&e))
}

/// Kueue's `isValidHostname`: the host of the `server` URL (its port dropped) is an IP or a
/// DNS-1123 subdomain. A server without a `scheme://` has no host for Go's `url.Parse`.
fn is_valid_hostname(server: &str) -> bool {
    let authority = match server.split_once("://") {
        Some((scheme, rest)) if valid_scheme(scheme) => rest,
        Some(_) => return false,
        None => server.strip_prefix("//").unwrap_or_default(),
    };
    let authority = authority.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = split_host(host_port).unwrap_or(host_port);
    host.parse::<IpAddr>().is_ok() || is_dns1123_subdomain(host)
}

/// Go's `url.getScheme` rule: a letter, then letters, digits, `+`, `-`, `.`.
fn valid_scheme(s: &str) -> bool {
    let b = s.as_bytes();
    b.first().is_some_and(u8::is_ascii_alphabetic)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
}

/// Go's `net.SplitHostPort`'s host, `None` where it fails (no port, too many colons, bad
/// brackets).
fn split_host(hp: &str) -> Option<&str> {
    if let Some(rest) = hp.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        after.strip_prefix(':')?;
        return Some(host);
    }
    let (host, _) = hp.rsplit_once(':')?;
    if host.contains(':') || host.contains('[') || host.contains(']') {
        return None;
    }
    Some(host)
}

/// `validation.IsDNS1123Subdomain`: at most 253 characters of
/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`.
fn is_dns1123_subdomain(s: &str) -> bool {
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    s.len() <= 253
        && s.split('.').all(|l| {
            let b = l.as_bytes();
            b.first().is_some_and(alnum)
                && b.last().is_some_and(alnum)
                && b.iter().all(|c| alnum(c) || *c == b'-')
        })
}

/// Go's `filepath.Clean` (Unix): the shortest lexically equivalent path.
fn clean(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let rooted = path.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|l| *l != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            p => out.push(p),
        }
    }
    let joined = out.join("/");
    if rooted {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".into()
    } else {
        joined
    }
}

/// Go's `filepath.EvalSymlinks` error for an absolute `path` that does not resolve: `lstat`
/// of the first component that fails.
fn unresolved(path: &str, e: &std::io::Error) -> String {
    let mut sub = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        sub.push('/');
        sub.push_str(part);
        if let Err(e) = std::fs::symlink_metadata(&sub) {
            return path_error("lstat", &sub, &e);
        }
    }
    path_error("lstat", path, e)
}

/// Go's `*fs.PathError` text: `<op> <path>: <errno text>`.
fn path_error(op: &str, path: &str, e: &std::io::Error) -> String {
    format!("{op} {path}: {}", errno_text(e))
}

/// Go's `syscall.Errno` text: the C library's, starting lowercase, without Rust's
/// ` (os error N)`.
fn errno_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    let text = match text.rfind(" (os error ") {
        Some(i) => &text[..i],
        None => &text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Go's `%q` of a string: double-quoted, with Go's escapes for quotes, backslashes and
/// control characters.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::ByteString;

    use super::*;

    /// A kubeconfig of one cluster `w1` at `server`, its user's fields being `user` (YAML flow
    /// mapping entries) and the cluster's extra fields `cluster`.
    fn kc(server: &str, cluster: &str, user: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\n\
             clusters:\n- name: w1\n  cluster: {{server: \"{server}\"{cluster}}}\n\
             contexts:\n- name: w1\n  context: {{cluster: w1, user: u1}}\n\
             current-context: w1\n\
             users:\n- name: u1\n  user: {{{user}}}\n"
        )
    }

    fn refused(yaml: &str) -> (&'static str, String) {
        let e = validate(yaml.as_bytes()).expect_err(yaml);
        (e.reason, e.message)
    }

    fn insecure(message: &str) -> (&'static str, String) {
        (INSECURE_KUBECONFIG, message.to_string())
    }

    #[test]
    fn a_token_over_http_to_an_ip_or_a_name_is_allowed() {
        for server in [
            "http://127.0.0.1:6443",
            "https://[::1]:6443",
            "https://10.0.0.1",
            "https://Worker-1.Example.COM:443/prefix",
            "https://worker",
        ] {
            let c = validate(kc(server, "", "token: t1").as_bytes()).expect(server);
            assert_eq!(c.current_context.as_deref(), Some("w1"));
        }
        // Client certificates inline, CA data inline.
        validate(
            kc(
                "https://w1:6443",
                ", certificate-authority-data: Zm9v",
                "client-certificate-data: Zm9v, client-key-data: Zm9v",
            )
            .as_bytes(),
        )
        .unwrap();
    }

    #[test]
    fn each_insecure_setting_has_kueues_message() {
        let ok = "https://w1:6443";
        assert_eq!(
            refused(&kc(ok, "", "tokenFile: /var/run/token")),
            insecure("tokenFile is not allowed")
        );
        assert_eq!(
            refused(&kc(ok, ", insecure-skip-tls-verify: true", "token: t")),
            insecure("insecure TLS verification is not allowed for cluster w1")
        );
        assert_eq!(
            refused(&kc(ok, ", certificate-authority: /ca.crt", "token: t")),
            insecure(
                "certificate-authority file paths are not allowed, use certificate-authority-data for cluster w1"
            )
        );
        assert_eq!(
            refused(&kc("", "", "token: t")),
            insecure("server URL is required for cluster w1")
        );
        for bad in [
            "https://bad_host:1",
            "127.0.0.1:6443",
            "w1:6443",
            "https://[::1]",
            "https://a:b:c",
            "https://-w1",
        ] {
            assert_eq!(
                refused(&kc(bad, "", "token: t")),
                insecure("untrusted server endpoint"),
                "{bad}"
            );
        }
        assert_eq!(
            refused(&kc(ok, "", "username: admin, password: secret")),
            insecure("basic auth is not allowed")
        );
        assert_eq!(
            refused(&kc(ok, "", "username: admin")),
            insecure("basic auth is not allowed")
        );
        assert_eq!(
            refused(&kc(
                ok,
                "",
                "exec: {apiVersion: client.authentication.k8s.io/v1, command: aws}"
            )),
            insecure("exec plugins are not allowed")
        );
        assert_eq!(
            refused(&kc(ok, "", "auth-provider: {name: gcp}")),
            insecure("auth providers are not allowed")
        );
    }

    #[test]
    fn checks_run_in_kueues_order() {
        // tokenFile before the clusters; the clusters before the current context.
        assert_eq!(
            refused(&kc(
                "https://bad_host",
                ", insecure-skip-tls-verify: true",
                "tokenFile: /t"
            )),
            insecure("tokenFile is not allowed")
        );
        assert_eq!(
            refused(&kc(
                "https://bad_host",
                ", insecure-skip-tls-verify: true",
                "exec: {command: x}"
            )),
            insecure("insecure TLS verification is not allowed for cluster w1")
        );
        // Every cluster is checked, not only the current context's.
        let yaml = "apiVersion: v1\nkind: Config\n\
            clusters:\n- name: w1\n  cluster: {server: \"https://w1\"}\n\
            - name: w2\n  cluster: {server: \"https://w2\", insecure-skip-tls-verify: true}\n\
            contexts:\n- name: w1\n  context: {cluster: w1, user: u1}\n\
            current-context: w1\nusers:\n- name: u1\n  user: {token: t}\n";
        assert_eq!(
            refused(yaml),
            insecure("insecure TLS verification is not allowed for cluster w2")
        );
    }

    #[test]
    fn unparsable_or_unresolvable_kubeconfigs_are_refused() {
        let (reason, message) = refused("clusters: [");
        assert_eq!(reason, INSECURE_KUBECONFIG);
        assert!(
            message.starts_with("failed to parse kubeconfig(apiconfig): "),
            "{message}"
        );
        let (reason, message) = refused("clusters: 5");
        assert_eq!(reason, INSECURE_KUBECONFIG);
        assert!(
            message.starts_with("failed to parse kubeconfig(apiconfig): "),
            "{message}"
        );
        assert_eq!(
            refused(""),
            insecure(
                "invalid configuration: no configuration has been provided, try setting KUBERNETES_MASTER environment variable"
            )
        );
        let no_context = kc("https://w1", "", "token: t").replace("current-context: w1\n", "");
        assert_eq!(
            refused(&no_context),
            insecure("failed to determine current context")
        );
        let other =
            kc("https://w1", "", "token: t").replace("current-context: w1", "current-context: w9");
        assert_eq!(
            refused(&other),
            insecure("failed to load current context: w9")
        );
    }

    fn secret(data: &[(&str, &str)]) -> Secret {
        Secret {
            data: Some(
                data.iter()
                    .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
                    .collect::<BTreeMap<_, _>>(),
            ),
            ..Secret::default()
        }
    }

    #[test]
    fn a_secret_gives_its_kubeconfig_key() {
        assert_eq!(
            from_secret("w1-secret", Some(&secret(&[("kubeconfig", "x")]))),
            Ok(b"x".to_vec())
        );
        let missing = from_secret("w1-secret", None).unwrap_err();
        assert_eq!(
            (missing.reason, missing.message.as_str(), missing.not_found),
            (BAD_KUBECONFIG, "secrets \"w1-secret\" not found", true)
        );
        assert_eq!(
            missing.condition_message(),
            "load client config failed: secrets \"w1-secret\" not found"
        );
        let no_key = from_secret("w1-secret", Some(&secret(&[("config", "x")]))).unwrap_err();
        assert_eq!(
            (no_key.reason, no_key.message.as_str(), no_key.not_found),
            (
                BAD_KUBECONFIG,
                "key \"kubeconfig\" not found in secret \"w1-secret\"",
                false
            )
        );
    }

    fn cluster(source: serde_json::Value) -> MultiKueueCluster {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "w1"}, "spec": {"clusterSource": source}}))
        .unwrap()
    }

    #[test]
    fn load_reads_the_source_then_validates() {
        let dir = std::path::Path::new("/nonexistent");
        let good = kc("http://127.0.0.1:1", "", "token: t");
        let s = secret(&[("kubeconfig", &good)]);
        let c = cluster(serde_json::json!({"kubeConfig": {"location": "w1-secret"}}));
        let loaded = load(&c, |n| (n == "w1-secret").then_some(&s), dir).unwrap();
        assert_eq!(loaded.digest, digest(good.as_bytes()));
        assert_ne!(loaded.digest, digest(b"other"));
        assert!(load(&c, |_| None, dir).unwrap_err().not_found);

        let bad = secret(&[(
            "kubeconfig",
            &kc("https://w1", ", insecure-skip-tls-verify: true", ""),
        )]);
        let e = load(&c, |_| Some(&bad), dir).unwrap_err();
        assert_eq!(
            e.condition_message(),
            "load client config failed: insecure TLS verification is not allowed for cluster w1"
        );
        assert_eq!(e.reason, INSECURE_KUBECONFIG);

        let profile = cluster(serde_json::json!({"clusterProfileRef": {"name": "p"}}));
        let e = load(&profile, |_| None, dir).unwrap_err();
        assert_eq!(
            (e.reason, e.condition_message().as_str()),
            (
                CLUSTER_PROFILE_DISABLED,
                "load client config failed: MultiKueueClusterProfile feature gate is disabled"
            )
        );
        let e = load(&MultiKueueCluster::default(), |_| None, dir).unwrap_err();
        assert_eq!(
            (e.reason, e.message.as_str()),
            (BAD_KUBECONFIG, "kubeconfig reference is nil")
        );
    }

    #[test]
    fn paths_must_resolve_under_the_prefix() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let dir = root.join("kubeconfigs");
        std::fs::create_dir(&dir).unwrap();
        let good = kc("http://127.0.0.1:1", "", "token: t");
        std::fs::write(dir.join("w1.yaml"), &good).unwrap();
        std::fs::write(root.join("outside.yaml"), &good).unwrap();
        std::fs::create_dir(root.join("kubeconfigs-other")).unwrap();
        std::fs::write(root.join("kubeconfigs-other/w1.yaml"), &good).unwrap();
        std::os::unix::fs::symlink(root.join("outside.yaml"), dir.join("escape.yaml")).unwrap();
        std::os::unix::fs::symlink(dir.join("w1.yaml"), dir.join("inside.yaml")).unwrap();
        let (d, r) = (dir.display().to_string(), root.display().to_string());

        assert_eq!(
            from_path(&format!("{d}/w1.yaml"), &dir),
            Ok(good.clone().into_bytes())
        );
        assert_eq!(
            validate_path(&format!("{d}/./sub/../inside.yaml"), &dir),
            Ok(dir.join("w1.yaml"))
        );
        let path_err = |raw: &str| validate_path(raw, &dir).unwrap_err();
        assert_eq!(path_err(""), "kubeconfig path must not be empty");
        assert_eq!(
            path_err("../kubeconfigs/w1.yaml"),
            "kubeconfig path is not under the allowed prefix: path contains \"..\""
        );
        assert_eq!(
            path_err("kubeconfigs/w1.yaml"),
            "kubeconfig path is not under the allowed prefix: path must be absolute"
        );
        // Cleaned first: an absolute path's `..` goes up.
        assert_eq!(
            path_err(&format!("{d}/../outside.yaml")),
            format!(
                "kubeconfig path is not under the allowed prefix: \"{r}/outside.yaml\" is not under \"{d}\""
            )
        );
        assert_eq!(
            path_err(&format!("{d}/escape.yaml")),
            format!(
                "kubeconfig path is not under the allowed prefix: \"{r}/outside.yaml\" is not under \"{d}\""
            )
        );
        assert_eq!(
            path_err(&format!("{r}/kubeconfigs-other/w1.yaml")),
            format!(
                "kubeconfig path is not under the allowed prefix: \"{r}/kubeconfigs-other/w1.yaml\" is not under \"{d}\""
            )
        );
        assert_eq!(
            path_err(&format!("{d}/missing/w1.yaml")),
            format!(
                "cannot resolve kubeconfig path symlinks: lstat {d}/missing: no such file or directory"
            )
        );
        assert_eq!(
            validate_path(&format!("{d}/w1.yaml"), &root.join("nowhere/")).unwrap_err(),
            format!(
                "kubeconfig path is not under the allowed prefix: \"{d}/w1.yaml\" is not under \"{r}/nowhere\""
            )
        );
        let e = from_path(&d, &root).unwrap_err();
        assert_eq!(
            (e.reason, e.message),
            (BAD_KUBECONFIG, format!("read {d}: is a directory"))
        );
    }

    #[test]
    fn go_quoting() {
        assert_eq!(go_quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
        assert_eq!(clean("/a/./b/../../../c/"), "/c");
        assert_eq!(clean("a/../../b"), "../b");
        assert_eq!(clean(""), ".");
    }

    #[tokio::test]
    async fn a_client_is_built_for_the_current_context() {
        let config = validate(kc("http://127.0.0.1:1", "", "token: t").as_bytes()).unwrap();
        assert!(client(config).await.is_ok());
        let no_ca = validate(
            kc(
                "https://w1",
                ", certificate-authority-data: \"!!notbase64\"",
                "token: t",
            )
            .as_bytes(),
        )
        .unwrap();
        let Err(e) = client(no_ca).await else {
            panic!("a client from a CA that does not decode");
        };
        assert!(e.contains("certificate authority"), "{e}");
    }
}
