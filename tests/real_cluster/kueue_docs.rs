//! Kueue's objects exactly as Kueue's documentation shows them (`kueue-docs.yaml`), created
//! against wasq's CRDs on the real server and read back with no field pruned or changed: what a
//! user copies from Kueue's docs works on a cluster where `wasq crds` was applied.

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use serde_json::{Value, json};
use wasq::k8s::schema::kinds::KueueKind;

use crate::cluster::ControlPlane;
use crate::crds;
use crate::kept::assert_kept;

/// The API of a Kueue object's kind, in its namespace.
pub fn api_for(client: &kube::Client, object: &Value) -> Result<Api<DynamicObject>> {
    let kind = object["kind"].as_str().unwrap_or_default();
    let kind = KueueKind::ALL
        .into_iter()
        .find(|k| k.kind() == kind)
        .with_context(|| format!("{kind} is not a Kueue kind"))?;
    let resource = kind.api_resource();
    Ok(match object["metadata"]["namespace"].as_str() {
        Some(ns) if kind.namespaced() => Api::namespaced_with(client.clone(), ns, &resource),
        _ => Api::all_with(client.clone(), &resource),
    })
}

/// Creates a namespace.
pub async fn namespace(client: &kube::Client, name: &str) -> Result<()> {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    Ok(())
}

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn kueue_docs_objects_are_accepted_and_kept() -> Result<()> {
    let plane = ControlPlane::start().await?;
    let client = plane.client().await?;
    crds::install(&client).await?;
    namespace(&client, "team-a").await?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(include_str!("kueue-docs.yaml"))?;
    assert_eq!(docs.len(), 21);
    for (i, doc) in docs.iter().enumerate() {
        let name = doc["metadata"]["name"].as_str().unwrap_or_default();
        let what = format!("document {} ({} {name})", i + 1, doc["kind"]);
        let api = api_for(&client, doc)?;
        let object: DynamicObject = serde_json::from_value(doc.clone())?;
        let created = api
            .create(&PostParams::default(), &object)
            .await
            .with_context(|| format!("creating {what}"))?;
        assert_kept(&what, doc, &serde_json::to_value(created)?);
        assert_kept(&what, doc, &serde_json::to_value(api.get(name).await?)?);
        // Several examples share a name; nothing holds a finalizer, so this is immediate.
        api.delete(name, &DeleteParams::default()).await?;
    }

    // The comparison notices pruning: a field no schema declares is dropped by the real server
    // (the in-process double, which checks no schema, would keep it).
    let unknown = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                         "metadata": {"name": "with-unknown-field"},
                         "spec": {"notAKueueField": true}});
    let created = api_for(&client, &unknown)?
        .create(
            &PostParams::default(),
            &serde_json::from_value(unknown.clone())?,
        )
        .await?;
    assert_eq!(
        crate::kept::differences(&unknown, &serde_json::to_value(created)?),
        vec![".spec.notAKueueField: true → (absent)"]
    );
    Ok(())
}
