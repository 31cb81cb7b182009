//! `kubectl get` as the real server answers it: the Table (`as=Table;g=meta.k8s.io;v=v1`)
//! the API server builds from each CRD's printer columns, evaluating their JSONPaths against
//! the objects as wasq wrote them — which the double never does.

use anyhow::Result;
use serde_json::{Value, json};

use crate::cluster::ControlPlane;
use crate::workload_status::admit_sample;

/// What `kubectl get` asks: the columns and rows the server prints.
async fn table(client: &kube::Client, path: &str) -> Result<(Vec<String>, Vec<Vec<Value>>)> {
    let request = http::Request::get(path)
        .header(
            "accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )
        .body(Vec::new())?;
    let table: Value = serde_json::from_str(&client.request_text(request).await?)?;
    let columns = table["columnDefinitions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["name"].as_str().unwrap_or_default().to_string())
        .collect();
    let rows = table["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| r["cells"].as_array().cloned().unwrap_or_default())
        .collect();
    Ok((columns, rows))
}

/// The row's cells but the last (the age, which changes).
fn without_age(rows: &[Vec<Value>]) -> Vec<Vec<Value>> {
    rows.iter()
        .map(|r| r[..r.len().saturating_sub(1)].to_vec())
        .collect()
}

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn kubectl_get_prints_kueues_columns_from_what_wasq_wrote() -> Result<()> {
    let plane = ControlPlane::start().await?;
    let (client, _) = admit_sample(&plane).await?;
    let kueue = "/apis/kueue.x-k8s.io/v1beta2";

    let (columns, rows) = table(&client, &format!("{kueue}/namespaces/team-a/workloads")).await?;
    assert_eq!(
        columns,
        [
            "Name",
            "Queue",
            "Reserved in",
            "Admitted",
            "Finished",
            "Age"
        ]
    );
    assert_eq!(
        without_age(&rows),
        [vec![
            json!("sample-job"),
            json!("team-a-queue"),
            json!("cluster-queue"),
            json!("True"),
            // No Finished condition: the server prints nothing (kubectl shows `<none>`).
            json!(null),
        ]]
    );

    let (columns, rows) = table(&client, &format!("{kueue}/clusterqueues")).await?;
    let (lq_columns, lq_rows) =
        table(&client, &format!("{kueue}/namespaces/team-a/localqueues")).await?;
    assert_eq!(
        columns,
        [
            "Name",
            "Cohort",
            "Strategy",
            "Pending Workloads",
            "Admitted Workloads"
        ]
    );
    // Strategy: the CRD's default, stored by the API server, as Kueue's users see it.
    assert_eq!(
        rows,
        [vec![
            json!("cluster-queue"),
            json!(null),
            json!("BestEffortFIFO"),
            json!(0),
            json!(1)
        ]]
    );
    assert_eq!(
        lq_columns,
        [
            "Name",
            "ClusterQueue",
            "Pending Workloads",
            "Admitted Workloads"
        ]
    );
    assert_eq!(
        lq_rows,
        [vec![
            json!("team-a-queue"),
            json!("cluster-queue"),
            json!(0),
            json!(1)
        ]]
    );
    Ok(())
}

/// Kueue's CRD gives the ClusterQueue of its docs (`single-clusterqueue-setup.yaml`) these
/// defaults, which the API server writes into the stored object (and `kubectl get` prints).
/// wasq's CRDs declared none of them (its types defaulted them in memory only) until this
/// suite showed it.
#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn clusterqueue_is_defaulted_as_kueue_defaults_it() -> Result<()> {
    use kube::api::PostParams;

    let plane = ControlPlane::start().await?;
    let client = plane.client().await?;
    crate::crds::install(&client).await?;
    let cq = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "cluster-queue"},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"],
            "flavors": [{"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": 9}]}]}]}});
    let stored = crate::kueue_docs::api_for(&client, &cq)?
        .create(&PostParams::default(), &serde_json::from_value(cq.clone())?)
        .await?;
    let spec = &serde_json::to_value(stored)?["spec"];
    let expected = json!({
        "queueingStrategy": "BestEffortFIFO",
        "stopPolicy": "None",
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
        "preemption": {"borrowWithinCohort": {"policy": "Never"},
                       "reclaimWithinCohort": "Never", "withinClusterQueue": "Never"}
    });
    assert_eq!(
        crate::kept::differences(&expected, spec),
        Vec::<String>::new(),
        "stored spec: {spec}"
    );
    Ok(())
}

/// `kubectl get mkc` prints Kueue's `Connected` column from the `Active` condition Kueue's
/// cluster reconciler writes (nothing before it has written one).
#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn multikueue_clusters_print_whether_they_are_connected() -> Result<()> {
    use kube::api::{Patch, PatchParams, PostParams};

    let plane = ControlPlane::start().await?;
    let client = plane.client().await?;
    crate::crds::install(&client).await?;
    let kueue = "/apis/kueue.x-k8s.io/v1beta2";
    let api = |object: &serde_json::Value| crate::kueue_docs::api_for(&client, object);
    for name in ["worker1", "worker2"] {
        let mkc = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
            "metadata": {"name": name},
            "spec": {"clusterSource": {"kubeConfig": {"location": format!("{name}-secret")}}}});
        api(&mkc)?
            .create(
                &PostParams::default(),
                &serde_json::from_value(mkc.clone())?,
            )
            .await?;
        if name == "worker1" {
            let status = json!({"status": {"conditions": [{"type": "Active", "status": "True",
                "reason": "Active", "message": "Connected",
                "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
            api(&mkc)?
                .patch_status(name, &PatchParams::default(), &Patch::Merge(status))
                .await?;
        }
    }
    let (columns, rows) = table(&client, &format!("{kueue}/multikueueclusters")).await?;
    assert_eq!(columns, ["Name", "Connected", "Age"]);
    assert_eq!(
        without_age(&rows),
        [
            vec![json!("worker1"), json!("True")],
            vec![json!("worker2"), json!(null)]
        ]
    );
    let conf = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
        "metadata": {"name": "multikueue-test"}, "spec": {"clusters": ["worker1", "worker2"]}});
    api(&conf)?
        .create(
            &PostParams::default(),
            &serde_json::from_value(conf.clone())?,
        )
        .await?;
    let (columns, _) = table(&client, &format!("{kueue}/multikueueconfigs")).await?;
    assert_eq!(columns, ["Name", "Age"]);
    Ok(())
}
