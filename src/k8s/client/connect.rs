//! The client configuration and connection: a kubeconfig (or the pod's environment) chosen as
//! kubectl chooses it, with one message saying which sources were tried and what failed.

use std::path::{Path, PathBuf};

/// Where kube looks for a kubeconfig: the first path of `$KUBECONFIG`, else `~/.kube/config`.
fn kubeconfig_path() -> Option<PathBuf> {
    match std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
        Some(v) => std::env::split_paths(&v).next(),
        None => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".kube").join("config")),
    }
}

/// What to say when there is no cluster to reach: the sources tried and how to name one.
pub fn no_cluster_message(kubeconfig: Option<&Path>) -> String {
    let config = match kubeconfig {
        Some(p) => format!("no kubeconfig at {}", p.display()),
        None => "no kubeconfig ($KUBECONFIG and $HOME are unset)".to_string(),
    };
    format!(
        "no cluster to reach: not running in a pod (KUBERNETES_SERVICE_HOST is unset) and {config}; \
         set KUBECONFIG to a cluster's kubeconfig, or run wasq controller inside the cluster"
    )
}

/// The error chain as one line, each distinct message once (kube's errors repeat their
/// sources' text).
pub(crate) fn one_line(e: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current: Option<&dyn std::error::Error> = Some(e);
    while let Some(err) = current {
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.retain(|p| !text.contains(p.as_str()));
            parts.push(text);
        }
        current = err.source();
    }
    parts.join(": ")
}

/// The client configuration: from `kubeconfig` (or, without it, `$KUBECONFIG` or
/// `~/.kube/config` when one exists, else the in-cluster environment), with `context` (else the
/// kubeconfig's current-context); and where it came from, for messages.
pub async fn client_config(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> anyhow::Result<(kube::Config, String)> {
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    if let Some(path) = kubeconfig {
        let source = format!("the kubeconfig {}", path.display());
        let file = kube::config::Kubeconfig::read_from(path)
            .map_err(|e| anyhow::anyhow!("cannot use {source}: {}", one_line(&e)))?;
        let config = kube::Config::from_custom_kubeconfig(file, &options)
            .await
            .map_err(|e| anyhow::anyhow!("cannot use {source}: {}", one_line(&e)))?;
        return Ok((config, source));
    }
    let in_cluster = std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
    let default = kubeconfig_path();
    let have_kubeconfig = default.as_deref().is_some_and(Path::exists);
    if !in_cluster && !have_kubeconfig {
        anyhow::bail!(no_cluster_message(default.as_deref()));
    }
    let source = match &default {
        Some(p) if have_kubeconfig => format!("the kubeconfig {}", p.display()),
        _ => "the in-cluster configuration".to_string(),
    };
    let config = match context {
        Some(_) => kube::Config::from_kubeconfig(&options)
            .await
            .map_err(|e| one_line(&e)),
        None => kube::Config::infer().await.map_err(|e| one_line(&e)),
    }
    .map_err(|e| anyhow::anyhow!("cannot use {source}: {e}"))?;
    Ok((config, source))
}

/// The client of [`client_config`], checked by asking the API server its version, or one
/// message saying which sources were tried and what failed.
pub async fn connect(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> anyhow::Result<kube::Client> {
    let (config, source) = client_config(kubeconfig, context).await?;
    let url = config.cluster_url.clone();
    let client = kube::Client::try_from(config)
        .map_err(|e| anyhow::anyhow!("cannot use {source}: {}", one_line(&e)))?;
    client.apiserver_version().await.map_err(|e| {
        anyhow::anyhow!(
            "cannot reach the cluster at {url} (from {source}): {}",
            one_line(&e)
        )
    })?;
    Ok(client)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kubeconfig with two contexts, each reaching its own server.
    const KUBECONFIG: &str = "apiVersion: v1
kind: Config
current-context: one
clusters:
- name: one
  cluster: {server: 'https://one.example:6443', insecure-skip-tls-verify: true}
- name: two
  cluster: {server: 'https://two.example:6443', insecure-skip-tls-verify: true}
users:
- name: me
  user: {token: abc}
contexts:
- name: one
  context: {cluster: one, user: me}
- name: two
  context: {cluster: two, user: me, namespace: team}
";

    #[tokio::test]
    async fn kubeconfig_and_context_choose_the_cluster_as_kubectl_does() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config");
        std::fs::write(&path, KUBECONFIG).expect("write kubeconfig");
        let url = |c: &kube::Config| c.cluster_url.to_string();

        let (config, source) = client_config(Some(&path), None)
            .await
            .expect("current context");
        assert_eq!(url(&config), "https://one.example:6443/");
        assert_eq!(source, format!("the kubeconfig {}", path.display()));

        let (config, _) = client_config(Some(&path), Some("two"))
            .await
            .expect("named context");
        assert_eq!(url(&config), "https://two.example:6443/");
        assert_eq!(config.default_namespace, "team");

        let missing = client_config(Some(&path), Some("three"))
            .await
            .expect_err("no such context");
        assert!(missing.to_string().contains("three"), "{missing}");
        let absent = client_config(Some(&dir.path().join("nope")), None)
            .await
            .expect_err("no such file");
        assert!(
            absent.to_string().starts_with("cannot use the kubeconfig"),
            "{absent}"
        );
    }
}
