//! Taking over from Kueue on a real API server: a Job and its Workload as a running Kueue
//! leaves them (`wasq::k8s::apiserver::kueue`: the Workload named, labelled and owned as
//! Kueue's job reconciler makes it, admitted as Kueue's scheduler writes it, the Job started
//! on its flavor), then wasq started in Kueue's place. The Workload keeps its admission, the
//! Job keeps running and gets no second Workload, and the quota it holds is counted: of two
//! Jobs queued after, the one that fits what is left is admitted, the other waits.

use anyhow::{Context, Result};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use wasq::k8s::apiserver::kueue::{Flavor, KueueJob};

use crate::cluster::ControlPlane;
use crate::crds;
use crate::jobs::{
    cluster_queue, condition, condition_of, keep_running, kwok_flavor, local_queue, sample_job,
    until,
};
use crate::kueue_docs::api_for;
use crate::wasq::{Options, Wasq};

const T: &str = "2026-01-01T00:00:00Z";

/// The Workload of namespace `default` for the Job `job` (Kueue's name: `job-<job>-<hash>`).
fn of_job<'a>(all: &'a [Value], job: &str) -> Option<&'a Value> {
    let prefix = format!("job-{job}-");
    all.iter().find(|w| {
        w["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .starts_with(&prefix)
    })
}

/// The Workloads of namespace `default`.
async fn workloads(client: &kube::Client) -> Result<Vec<Value>> {
    let probe = json!({"kind": "Workload", "metadata": {"namespace": "default"}});
    let list = api_for(client, &probe)?
        .list(&ListParams::default())
        .await?;
    Ok(list
        .items
        .into_iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?)
}

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn a_cluster_kueue_ran_keeps_its_admissions_when_wasq_takes_over() -> Result<()> {
    let mut plane = ControlPlane::start().await?;
    let client = plane.client().await?;
    crds::install(&client).await?;
    plane.run_pods(2).await?;
    // 4 CPUs; the Job Kueue admitted holds 3 (3 pods of 1 CPU).
    for object in [kwok_flavor(), cluster_queue(4, None), local_queue()] {
        let o: DynamicObject = serde_json::from_value(object.clone())?;
        api_for(&client, &object)?
            .create(&PostParams::default(), &o)
            .await?;
    }
    let flavor = Flavor::new("kwok", json!({"type": "kwok"}));
    let mut kueue_job = KueueJob::new("default", "trainer", "user-queue", 3, 1000, 200, T);
    let mut running = kueue_job.running_job(&flavor, "cluster-queue", T);
    // KWOK's nodes carry its taint (the flavor's own toleration is the builder's `dedicated`).
    running["spec"]["template"]["spec"]["tolerations"] =
        json!([{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}]);
    running["spec"]["template"]["metadata"]["annotations"]["pod-complete.stage.kwok.x-k8s.io/delay"] =
        json!("1h");
    for field in ["uid", "generation", "creationTimestamp"] {
        running["metadata"].as_object_mut().unwrap().remove(field);
    }
    running.as_object_mut().unwrap().remove("status");
    // What the API server generates for a Job (its selector, the controller-uid labels) is
    // generated again for this one.
    running["spec"].as_object_mut().unwrap().remove("selector");
    let labels = running["spec"]["template"]["metadata"]["labels"]
        .as_object_mut()
        .unwrap();
    for generated in [
        "controller-uid",
        "batch.kubernetes.io/controller-uid",
        "job-name",
        "batch.kubernetes.io/job-name",
    ] {
        labels.remove(generated);
    }
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let job = jobs
        .create(&PostParams::default(), &serde_json::from_value(running)?)
        .await
        .map_err(|e| anyhow::anyhow!("creating the Job Kueue started: {e:?}"))?;
    kueue_job.uid = job.metadata.uid.clone().context("a uid")?;
    let mut workload = kueue_job.workload();
    for field in ["uid", "generation", "creationTimestamp"] {
        workload["metadata"].as_object_mut().unwrap().remove(field);
    }
    let wl_api = api_for(&client, &workload)?;
    wl_api
        .create(&PostParams::default(), &serde_json::from_value(workload)?)
        .await
        .context("creating the Workload Kueue made")?;
    let admitted = kueue_job.admitted_workload("cluster-queue", "kwok", T);
    let status = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                        "status": admitted["status"]});
    let name = kueue_job.workload_name();
    wl_api
        .patch_status(
            &name,
            &PatchParams::apply("kueue-admission").force(),
            &Patch::Apply(&status),
        )
        .await
        .context("admitting it as Kueue's scheduler")?;
    let before = serde_json::to_value(wl_api.get(&name).await?)?;

    // wasq in Kueue's place.
    let mut wasq = Wasq::start(&plane, &Options::new("wasq-0")).await?;
    wasq.wait_ready().await?;
    wasq.register_webhooks(&client).await?;
    // Two Jobs queued after, of 1 CPU per pod: one pod fits what is left, three do not.
    let mut fits = sample_job(&[])?;
    fits.metadata.name = Some("fits".into());
    keep_running(&mut fits);
    let spec = fits.spec.as_mut().context("a spec")?;
    spec.parallelism = Some(1);
    spec.completions = Some(1);
    let mut waits = sample_job(&[])?;
    waits.metadata.name = Some("waits".into());
    for job in [&fits, &waits] {
        jobs.create(&PostParams::default(), job).await?;
    }
    until(
        "the Job that fits admitted, the other pending",
        &mut wasq,
        async |seen| {
            let all = workloads(&client).await?;
            *seen = serde_json::to_string(&all)?;
            let (Some(f), Some(w)) = (of_job(&all, "fits"), of_job(&all, "waits")) else {
                return Ok(None);
            };
            Ok(
                (condition(f, "Admitted", "True") && condition(w, "QuotaReserved", "False"))
                    .then_some(()),
            )
        },
    )
    .await?;

    // Kueue's Workload: the same admission, still admitted, still its Job's only Workload.
    let after = serde_json::to_value(wl_api.get(&name).await?)?;
    assert_eq!(after["status"]["admission"], before["status"]["admission"]);
    assert!(condition(&after, "Admitted", "True"), "{after}");
    assert!(!condition(&after, "Evicted", "True"), "{after}");
    let owned: Vec<String> = workloads(&client)
        .await?
        .iter()
        .filter(|w| w["metadata"]["ownerReferences"][0]["name"] == "trainer")
        .map(|w| {
            w["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(owned, std::slice::from_ref(&name));
    assert_eq!(
        jobs.get("trainer").await?.spec.and_then(|s| s.suspend),
        Some(false)
    );
    // The waiting Job waits for quota, not for a flavor.
    let all = workloads(&client).await?;
    let waiting = of_job(&all, "waits").context("the waiting Workload")?;
    let reserved = condition_of(waiting, "QuotaReserved");
    assert_eq!(reserved["reason"], "WaitingForQuota", "{reserved}");
    Ok(())
}
