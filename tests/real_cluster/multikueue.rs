//! MultiKueue between two real control planes, each running `wasq controller`: a manager
//! (no nodes, no Job controller) whose Job — Kueue's sample, handed to MultiKueue by the
//! manager's webhook — is dispatched to a worker whose real Job controller, scheduler and KWOK run its pods. What the
//! federation tests check against the in-process doubles, here with a real API server's
//! authentication (a kubeconfig with CA data and a bearer token, from a Secret), validation and
//! watches, and a real Job controller on the worker running the Job wasq created there.

use std::time::Instant;

use anyhow::{Context, Result};
use base64::Engine as _;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};
use wasq::k8s::schema::kinds::KueueKind;

use crate::jobs::{
    cluster_queue, condition, condition_of, create_all, kwok_flavor, local_queue, pods_in_phase,
    sample_job, set_up_on, set_up_with, until, workload_of,
};
use crate::wasq::{NAMESPACE, Options};

const MANAGED_BY: &str = "kueue.x-k8s.io/multikueue";

/// The manager's side: its queue behind the MultiKueue check `mk`, whose config dispatches to
/// the worker `worker-1`, reached with `kubeconfig` (kept in a Secret, as Kueue's docs show).
fn manager_objects(kubeconfig: &str) -> Vec<Value> {
    let mut cq = cluster_queue(9, None);
    cq["spec"]["admissionChecksStrategy"] = json!({"admissionChecks": [{"name": "mk"}]});
    vec![
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": "worker-1-secret", "namespace": NAMESPACE},
               "data": {"kubeconfig": base64::engine::general_purpose::STANDARD.encode(kubeconfig)}}),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
               "metadata": {"name": "worker-1"},
               "spec": {"clusterSource": {"kubeConfig": {
                   "location": "worker-1-secret", "locationType": "Secret"}}}}),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
               "metadata": {"name": "multikueue-test"}, "spec": {"clusters": ["worker-1"]}}),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
               "metadata": {"name": "mk"},
               "spec": {"controllerName": MANAGED_BY,
                        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig",
                                       "name": "multikueue-test"}}}),
        kwok_flavor(),
        cq,
        local_queue(),
    ]
}

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn a_job_dispatched_to_a_real_worker_runs_there_and_finishes_on_the_manager() -> Result<()> {
    let begun = Instant::now();
    let (worker, worker_client, mut worker_wasq) = set_up_with(
        &Options::new("worker-0"),
        &[kwok_flavor(), cluster_queue(9, None), local_queue()],
    )
    .await?;
    let kubeconfig = std::fs::read_to_string(worker.kubeconfig())?;
    let (_manager, client, mut wasq) =
        set_up_on(&Options::new("manager-0"), &[], None, &[]).await?;
    // The Secret first: the cluster is connected as soon as it is seen.
    for object in manager_objects(&kubeconfig) {
        if object["kind"] == "Secret" {
            let secrets: Api<DynamicObject> = Api::namespaced_with(
                client.clone(),
                NAMESPACE,
                &kube::api::ApiResource::erase::<k8s_openapi::api::core::v1::Secret>(&()),
            );
            secrets
                .create(&PostParams::default(), &serde_json::from_value(object)?)
                .await
                .context("creating the kubeconfig Secret")?;
        } else {
            create_all(&client, &[object]).await?;
        }
    }
    let clusters: Api<DynamicObject> =
        Api::all_with(client.clone(), &KueueKind::MultiKueueCluster.api_resource());
    until("the worker connected", &mut wasq, async |seen| {
        let c = serde_json::to_value(clusters.get("worker-1").await?)?;
        *seen = format!("{}", c["status"]);
        Ok(condition(&c, "Active", "True").then_some(()))
    })
    .await?;
    let set_up_took = begun.elapsed();

    // Kueue's sample Job as it is: the manager's webhook hands it to MultiKueue (once its view
    // knows the queue's check; a dry run asks).
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    until("the Job defaulted to MultiKueue", &mut wasq, async |seen| {
        let job = jobs.create(&dry_run, &sample_job(&[])?).await?;
        let managed_by = job.spec.as_ref().and_then(|s| s.managed_by.clone());
        *seen = format!("managedBy {managed_by:?}");
        Ok((managed_by.as_deref() == Some(MANAGED_BY)).then_some(()))
    })
    .await?;
    let job = jobs
        .create(&PostParams::default(), &sample_job(&[])?)
        .await?;
    assert_eq!(
        job.spec.as_ref().and_then(|s| s.managed_by.as_deref()),
        Some(MANAGED_BY)
    );
    let name = job.metadata.name.clone().unwrap_or_default();
    let created = Instant::now();

    // Admitted on the worker: the check Ready, the worker recorded, the Job created there.
    let workload = until("the manager's Workload admitted", &mut wasq, async |seen| {
        let wl = workload_of(&client, &job).await?;
        *seen = format!("{wl:?}");
        Ok(wl.filter(|w| condition(w, "Admitted", "True")))
    })
    .await?;
    let admitted_after = created.elapsed();
    assert_eq!(workload["status"]["clusterName"], "worker-1", "{workload}");
    let check = &workload["status"]["admissionChecks"][0];
    assert_eq!(
        (&check["state"], &check["message"]),
        (
            &json!("Ready"),
            &json!("The workload was admitted on \"worker-1\"")
        )
    );
    let remote_jobs: Api<Job> = Api::namespaced(worker_client.clone(), "default");
    let remote = remote_jobs.get(&name).await?;
    let labels = remote.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels["kueue.x-k8s.io/multikueue-origin"], "multikueue");
    assert_eq!(
        labels["kueue.x-k8s.io/prebuilt-workload-name"],
        workload["metadata"]["name"].as_str().unwrap_or_default()
    );
    assert_eq!(
        remote.spec.as_ref().and_then(|s| s.managed_by.clone()),
        None
    );

    // The worker's Job controller runs it on KWOK; its end reaches the manager.
    pods_in_phase(&worker_client, &mut worker_wasq, &remote, 3, "Succeeded").await?;
    until("the manager's Job Complete", &mut wasq, async |seen| {
        let job = serde_json::to_value(jobs.get(&name).await?)?;
        *seen = format!("{}", job["status"]);
        Ok(condition(&job, "Complete", "True").then_some(()))
    })
    .await?;
    let workload = until("the manager's Workload Finished", &mut wasq, async |seen| {
        let wl = workload_of(&client, &job).await?;
        *seen = format!("{wl:?}");
        Ok(wl.filter(|w| condition(w, "Finished", "True")))
    })
    .await?;
    let finished_after = created.elapsed();
    assert_eq!(condition_of(&workload, "Finished")["reason"], "Succeeded");
    // What the manager made on the worker is removed.
    until("the remote Job removed", &mut wasq, async |seen| {
        let left = remote_jobs.get_opt(&name).await?;
        *seen = format!("{left:?}");
        Ok(left.is_none().then_some(()))
    })
    .await?;
    // The manager's Job carries the final status the worker's Job controller wrote.
    let manager_job = jobs.get(&name).await?;
    assert_eq!(
        manager_job.status.as_ref().and_then(|s| s.succeeded),
        Some(3)
    );
    assert_eq!(wasq.warnings(), Vec::<String>::new());
    assert_eq!(worker_wasq.warnings(), Vec::<String>::new());
    eprintln!(
        "set-up {:.1}s; from the Job's creation: admitted on the worker {:.1}s, finished {:.1}s",
        set_up_took.as_secs_f64(),
        admitted_after.as_secs_f64(),
        finished_after.as_secs_f64()
    );
    Ok(())
}
