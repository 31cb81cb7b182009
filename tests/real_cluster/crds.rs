//! `wasq crds` against the real server: every CRD applied (server-side, as `kubectl apply
//! --server-side -f` does), `Established`, and read back with every field it was sent — no
//! schema rejected as non-structural, nothing pruned or rewritten.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use serde_json::Value;

use crate::cluster::ControlPlane;
use crate::kept::assert_kept;

/// The field manager these tests apply as.
pub const MANAGER: &str = "wasq-real-cluster-test";

/// What the `wasq crds` command prints, one JSON value per CRD.
pub fn printed() -> Result<Vec<Value>> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wasq"))
        .arg("crds")
        .output()?;
    if !out.status.success() {
        bail!("wasq crds: {}", String::from_utf8_lossy(&out.stderr));
    }
    let text = String::from_utf8(out.stdout)?;
    serde_saphyr::from_multiple::<Value>(&text).context("parsing what `wasq crds` printed")
}

/// Applies the CRDs `wasq crds` prints and waits until each is `Established`; returns what was
/// sent, for comparisons.
pub async fn install(client: &kube::Client) -> Result<Vec<Value>> {
    let crds = printed()?;
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in &crds {
        let name = crd["metadata"]["name"]
            .as_str()
            .context("a CRD has a name")?;
        api.patch(name, &PatchParams::apply(MANAGER), &Patch::Apply(crd))
            .await
            .with_context(|| format!("applying CRD {name}"))?;
    }
    for crd in &crds {
        let name = crd["metadata"]["name"].as_str().unwrap_or_default();
        established(&api, name).await?;
    }
    Ok(crds)
}

/// Applies the CRD files `names` of `.ci/control-plane/crds.txt` ([`crate::cluster::crd_file`])
/// as they are, server-side, and waits until each is `Established`.
pub async fn install_files(client: &kube::Client, names: &[&str]) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut applied = Vec::new();
    for file in names {
        let path = crate::cluster::crd_file(file)?;
        let text = std::fs::read_to_string(&path)?;
        let crd: Value =
            serde_saphyr::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        let name = crd["metadata"]["name"]
            .as_str()
            .with_context(|| format!("{file}: a CRD has a name"))?
            .to_string();
        api.patch(&name, &PatchParams::apply(MANAGER), &Patch::Apply(&crd))
            .await
            .with_context(|| format!("applying CRD {name} of {file}"))?;
        applied.push(name);
    }
    for name in &applied {
        established(&api, name).await?;
    }
    Ok(())
}

/// Waits until `name` is `Established` with its names accepted; fails at once on a condition
/// that says its schema or names are refused.
async fn established(api: &Api<CustomResourceDefinition>, name: &str) -> Result<()> {
    let started = Instant::now();
    loop {
        let crd = api.get(name).await?;
        let conditions = crd.status.and_then(|s| s.conditions).unwrap_or_default();
        let is = |t: &str, s: &str| conditions.iter().any(|c| c.type_ == t && c.status == s);
        if is("NonStructuralSchema", "True") || is("NamesAccepted", "False") {
            bail!("CRD {name} refused: {conditions:?}");
        }
        if is("Established", "True") && is("NamesAccepted", "True") {
            return Ok(());
        }
        if started.elapsed() > Duration::from_secs(60) {
            bail!("CRD {name} not Established within 60s: {conditions:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn every_crd_is_established_and_kept() -> Result<()> {
    let plane = ControlPlane::start().await?;
    let client = plane.client().await?;
    let sent = install(&client).await?;
    assert_eq!(
        sent.len(),
        12,
        "wasq crds prints one CRD per Kueue kind, and QueuePolicy's"
    );
    let raw = ApiResource::erase::<CustomResourceDefinition>(&());
    let api: Api<DynamicObject> = Api::all_with(client, &raw);
    for crd in &sent {
        let name = crd["metadata"]["name"].as_str().unwrap_or_default();
        let stored = serde_json::to_value(api.get(name).await?)?;
        assert_kept(&format!("CRD {name}"), &as_go_prints(crd), &stored);
    }
    Ok(())
}

/// `value` with every whole float as an integer: the server stores a schema's `minimum` as a
/// Go `float64`, which it writes `0` where `wasq crds` (schemars) prints `0.0` — the same
/// number, in another spelling (QueuePolicy's unsigned fields).
fn as_go_prints(value: &Value) -> Value {
    match value {
        Value::Number(n) if n.is_f64() => n
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
            .map_or_else(|| value.clone(), |f| Value::from(f as i64)),
        Value::Array(items) => Value::Array(items.iter().map(as_go_prints).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), as_go_prints(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The message of the API server's refusal of `result`.
fn refusal<T: std::fmt::Debug>(result: kube::Result<T>) -> String {
    match result {
        Err(kube::Error::Api(status)) => status.message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// MultiKueue's rules in `wasq crds` are Kueue's: the server refuses what Kueue's CRDs refuse,
/// with the messages the loader gives (tests/all/multikueue.rs), and defaults `locationType`.
#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn multikueue_crds_refuse_what_kueues_refuse() -> Result<()> {
    use kube::api::{PatchParams, PostParams};
    use serde_json::json;

    let plane = ControlPlane::start().await?;
    let client = plane.client().await?;
    install(&client).await?;
    let create = |object: Value| {
        let client = client.clone();
        async move {
            let api = crate::kueue_docs::api_for(&client, &object).unwrap();
            let object: DynamicObject = serde_json::from_value(object).unwrap();
            api.create(&PostParams::default(), &object).await
        }
    };
    let mkc = |name: &str, source: Value| {
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
               "metadata": {"name": name}, "spec": {"clusterSource": source}})
    };
    let config = |name: &str, clusters: Value| {
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
               "metadata": {"name": name}, "spec": {"clusters": clusters}})
    };

    let stored = create(mkc("w1", json!({"kubeConfig": {"location": "w1-secret"}}))).await?;
    assert_eq!(
        serde_json::to_value(stored)?["spec"]["clusterSource"]["kubeConfig"]["locationType"],
        "Secret"
    );
    let both = refusal(
        create(mkc(
            "both",
            json!({"kubeConfig": {"location": "s"}, "clusterProfileRef": {"name": "p"}}),
        ))
        .await,
    );
    assert!(
        both.contains(
            "spec.clusterSource: Invalid value: \"object\": exactly one of the fields in [kubeConfig clusterProfileRef] must be set"
        ),
        "{both}"
    );
    let neither = refusal(create(mkc("neither", json!({}))).await);
    assert!(neither.contains("exactly one of the fields"), "{neither}");
    let long = refusal(
        create(mkc(
            "long",
            json!({"kubeConfig": {"location": "x".repeat(257)}}),
        ))
        .await,
    );
    assert!(
        long.contains("spec.clusterSource.kubeConfig.location: Too long"),
        "{long}"
    );

    create(config("ok", json!(["w1", "w2"]))).await?;
    let twice = refusal(create(config("twice", json!(["a", "b", "a"]))).await);
    assert!(
        twice.contains("spec.clusters: Invalid value: \"array\": must be unique"),
        "{twice}"
    );
    let many: Vec<String> = (0..21).map(|i| format!("w{i}")).collect();
    let many = refusal(create(config("many", json!(many))).await);
    assert!(
        many.contains("spec.clusters: Too many: 21: must have at most 20 items"),
        "{many}"
    );
    let none = refusal(create(config("none", json!([]))).await);
    assert!(none.contains("spec.clusters: Invalid value: 0"), "{none}");

    // A Workload's clusterName: not with nominations, never changed once set.
    crate::kueue_docs::namespace(&client, "team-a").await?;
    let wl = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "placed", "namespace": "team-a"},
        "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1,
            "template": {"spec": {"containers": [{"name": "c", "image": "pause"}]}}}]}});
    create(wl.clone()).await?;
    let api = crate::kueue_docs::api_for(&client, &wl)?;
    let patch = |status: Value| {
        let api = api.clone();
        async move {
            api.patch_status(
                "placed",
                &PatchParams::default(),
                &kube::api::Patch::Merge(json!({"status": status})),
            )
            .await
        }
    };
    let both = refusal(patch(json!({"clusterName": "w1", "nominatedClusterNames": ["w1"]})).await);
    assert!(
        both.contains("clusterName and nominatedClusterNames are mutually exclusive"),
        "{both}"
    );
    patch(json!({"nominatedClusterNames": ["w1", "w2"]})).await?;
    patch(json!({"clusterName": "w1", "nominatedClusterNames": null})).await?;
    let moved = refusal(patch(json!({"clusterName": "w2"})).await);
    assert!(
        moved.contains("clusterName is immutable once set"),
        "{moved}"
    );
    // Eviction clears it: allowed.
    patch(json!({"clusterName": null})).await?;
    Ok(())
}
