//! Status as wasq writes it, kept by the real server: wasq's controller (its real writer, no
//! double in between) admits the Workload of Kueue's docs into the ClusterQueue of Kueue's docs,
//! and every status patch it sends — the Workload's admission and conditions, queue status — is
//! answered with an object holding every field sent.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams, TypeMeta};
use serde_json::Value;
use wasq::k8s::client::writer::Writer;
use wasq::k8s::controller::Controller;
use wasq::k8s::serve::metrics::Metrics;
use wasq::k8s::sync::mirror::{Observed, Source};

use crate::cluster::ControlPlane;
use crate::crds;
use crate::kept::assert_kept;
use crate::kueue_docs::{api_for, namespace};
use crate::recorder::StatusWrite;

/// The first document of `kueue-docs.yaml` of this kind and name.
fn doc(kind: &str, name: &str) -> Result<Value> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(include_str!("kueue-docs.yaml"))?;
    docs.into_iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .with_context(|| format!("kueue-docs.yaml has no {kind} {name}"))
}

/// Every source the controller reads, listed from the server (as its watchers' first lists).
async fn list_all(client: &kube::Client, controller: &mut Controller) -> Result<()> {
    for source in controller.sources() {
        let resource = match source {
            Source::Kueue(kind) => kind.api_resource(),
            Source::Namespace => ApiResource::erase::<Namespace>(&()),
            Source::Node => ApiResource::erase::<Node>(&()),
            Source::Pod | Source::TasPod => ApiResource::erase::<Pod>(&()),
            other => anyhow::bail!("this test lists no {other:?}"),
        };
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let mut objects = api.list(&ListParams::default()).await?.items;
        // The real server lists a built-in kind's items untyped; the watchers type them.
        for object in &mut objects {
            object.types.get_or_insert_with(|| TypeMeta {
                api_version: resource.api_version.clone(),
                kind: resource.kind.clone(),
            });
        }
        controller.observe(Observed::Listed(source, objects));
    }
    Ok(())
}

/// Kueue's doc objects created on `plane` and wasq's controller (its real writer) run until
/// settled: the Workload `team-a/sample-job` admitted into `cluster-queue`. Returns the admin
/// client and the status writes the controller made.
pub async fn admit_sample(plane: &ControlPlane) -> Result<(kube::Client, Vec<StatusWrite>)> {
    let client = plane.client().await?;
    crds::install(&client).await?;
    namespace(&client, "team-a").await?;
    for (kind, name) in [
        ("ResourceFlavor", "default-flavor"),
        ("ClusterQueue", "cluster-queue"),
        ("LocalQueue", "team-a-queue"),
        ("Workload", "sample-job"),
    ] {
        let object = doc(kind, name)?;
        api_for(&client, &object)?
            .create(&PostParams::default(), &serde_json::from_value(object)?)
            .await
            .with_context(|| format!("creating {kind} {name}"))?;
    }

    let (recording, writes) = plane.recording_client().await?;
    let clock = Arc::new(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    });
    let mut controller = Controller::new(
        Writer::new(recording, Some("real-cluster-test".into())),
        Vec::new(),
        false,
        Arc::new(Metrics::new("standalone")),
        clock,
        Arc::new(|_| {}),
    );
    list_all(&client, &mut controller).await?;
    controller.step().await;
    controller.settled().await;
    Ok((client, writes.take()))
}

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn status_wasq_writes_is_kept() -> Result<()> {
    let plane = ControlPlane::start().await?;
    let (client, writes) = admit_sample(&plane).await?;
    let workload_path =
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads/sample-job/status";
    assert!(
        writes.iter().any(|w| w.path == workload_path),
        "the controller wrote no Workload status; it wrote {:?}",
        writes.iter().map(|w| &w.path).collect::<Vec<_>>()
    );
    for write in &writes {
        assert_kept(&write.path, &write.sent["status"], &write.stored["status"]);
    }

    let workload = api_for(&client, &doc("Workload", "sample-job")?)?
        .get("sample-job")
        .await?;
    let status = &workload.data["status"];
    assert_eq!(status["admission"]["clusterQueue"], "cluster-queue");
    let admitted = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Admitted" && c["status"] == "True");
    assert!(admitted, "not admitted: {status}");
    Ok(())
}
