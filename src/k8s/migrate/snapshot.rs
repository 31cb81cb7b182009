//! `wasq snapshot`: a running cluster's queueing state as a scenario the simulator runs as it
//! is — every Kueue object (flavors, cohorts, ClusterQueues, LocalQueues, priority classes,
//! admission checks, Topologies, Workloads with their status, so admitted ones start admitted),
//! the Namespaces (for `namespaceSelector`s) and the Nodes as TAS reads them.
//!
//! Each kind is listed in pages of [`PAGE`] and written to `DIR/<plural>.yaml`, one document per
//! object, without what only the API server means (`resourceVersion`, `uid`, `managedFields`,
//! `generation`, kubectl's last-applied annotation). Whichever controller admitted the
//! Workloads — Kueue or wasq — the simulator starts from the same admissions.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::api::{Api, DynamicObject, ListParams};
use serde_json::Value;

use crate::k8s::schema::kinds::KueueKind;

/// Objects asked for per list request.
const PAGE: u32 = 500;

/// What a snapshot holds: per file name (`<plural>.yaml`), the objects as JSON.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub files: BTreeMap<String, Vec<Value>>,
}

impl Snapshot {
    /// How many objects of each file.
    pub fn counts(&self) -> impl Iterator<Item = (&str, usize)> {
        self.files
            .iter()
            .map(|(f, objects)| (f.as_str(), objects.len()))
    }

    /// Writes every file into `dir` (made if missing); the paths written.
    pub fn write(&self, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut written = Vec::new();
        for (name, objects) in &self.files {
            if objects.is_empty() {
                continue;
            }
            let mut text = String::from("# written by `wasq snapshot`\n");
            for o in objects {
                text.push_str("---\n");
                text.push_str(&serde_saphyr::to_string(o)?);
            }
            let path = dir.join(name);
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
            written.push(path);
        }
        Ok(written)
    }
}

/// Lists the cluster's queueing state. A Kueue kind the cluster does not serve (an older Kueue
/// without Topologies or Cohorts) is left out, as are kinds it forbids listing, with a
/// warning; any other failure is an error.
pub async fn take(client: &kube::Client) -> anyhow::Result<Snapshot> {
    let mut snapshot = Snapshot::default();
    for kind in KueueKind::ALL {
        let ar = kind.api_resource();
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
        match list_all(&api).await {
            Ok(items) => {
                let objects = items
                    .into_iter()
                    .map(|o| typed(serde_json::to_value(o), &ar.api_version, kind.kind()))
                    .collect::<Result<_, _>>()?;
                snapshot
                    .files
                    .insert(format!("{}.yaml", kind.plural()), objects);
            }
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 403 => {
                tracing::warn!(kind = kind.kind(), reason = %e.message, "not listed");
            }
            Err(e) => return Err(e).with_context(|| format!("listing {}", kind.plural())),
        }
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespaces = list_all(&namespaces)
        .await
        .context("listing namespaces")?
        .into_iter()
        .map(|ns| {
            let meta = ns.metadata;
            serde_json::json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": meta.name, "labels": meta.labels},
            })
        })
        .collect();
    snapshot.files.insert("namespaces.yaml".into(), namespaces);
    let nodes: Api<Node> = Api::all(client.clone());
    let nodes = list_all(&nodes)
        .await
        .context("listing nodes")?
        .iter()
        .map(|n| {
            typed(
                serde_json::to_value(crate::k8s::sync::tas_nodes::strip_node(n)),
                "v1",
                "Node",
            )
        })
        .collect::<Result<_, _>>()?;
    snapshot.files.insert("nodes.yaml".into(), nodes);
    Ok(snapshot)
}

/// Every object of `api`, page by page.
async fn list_all<K>(api: &Api<K>) -> kube::Result<Vec<K>>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut out = Vec::new();
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = api.list(&params).await?;
        out.extend(page.items);
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(out),
        }
    }
}

/// An object as a scenario file holds it: its `apiVersion` and `kind` (a list's items may come
/// without them), and none of what only the API server means.
fn typed(value: serde_json::Result<Value>, api_version: &str, kind: &str) -> anyhow::Result<Value> {
    let mut value = value?;
    value["apiVersion"] = api_version.into();
    value["kind"] = kind.into();
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in [
            "resourceVersion",
            "uid",
            "managedFields",
            "generation",
            "selfLink",
        ] {
            meta.remove(field);
        }
        if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
            if annotations.is_empty() {
                meta.remove("annotations");
            }
        }
    }
    Ok(value)
}
