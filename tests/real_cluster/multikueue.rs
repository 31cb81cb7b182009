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
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};
use wasq::k8s::schema::kinds::KueueKind;

use crate::jobs::{
    cluster_queue, condition, condition_of, create_all, keep_running, kwok_flavor, local_queue,
    pods_in_phase, sample_job, set_up_on, set_up_with, until, workload_of,
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
    let (mut worker, worker_client, mut worker_wasq) = set_up_with(
        &Options::new("worker-0"),
        &[kwok_flavor(), cluster_queue(9, None), local_queue()],
    )
    .await?;
    let kubeconfig = std::fs::read_to_string(worker.kubeconfig())?;
    // A worker lost for 20 s is lost for good (Kueue's default is 15 minutes).
    let config_dir = tempfile::tempdir()?;
    let config = config_dir.path().join("kueue-config.yaml");
    std::fs::write(
        &config,
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n\
         multiKueue:\n  workerLostTimeout: 20s\n",
    )?;
    let mut options = Options::new("manager-0");
    options.extra_args = vec!["--kueue-config".into(), config.display().to_string()];
    let (_manager, client, mut wasq) = set_up_on(&options, &[], None, &[]).await?;
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

    // Kueue's pod group example: its Workload dispatched like the Job's, its pods made on the
    // worker (whose wasq releases them there), the manager's kept gated, taking the worker's
    // pods' status — a status the real server accepts on a gated pod.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    // The manager runs no controller manager: the account its pods name is made here.
    Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(client.clone(), "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "default"}}))?,
        )
        .await?;
    let remote_pods: Api<Pod> = Api::namespaced(worker_client.clone(), "default");
    let mut names = Vec::new();
    for doc in serde_saphyr::from_multiple::<Value>(crate::pods::KUEUE_PODS)?
        .into_iter()
        .filter(|d| d["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] == "sample-group")
    {
        let pod = pods
            .create(&PostParams::default(), &serde_json::from_value(doc)?)
            .await?;
        names.push(pod.metadata.name.unwrap_or_default());
    }
    let group_created = Instant::now();
    until(
        "the group's pods Running on the worker, and so on the manager",
        &mut wasq,
        async |seen| {
            let mut out = Vec::new();
            for name in &names {
                let local = serde_json::to_value(pods.get(name).await?)?;
                let remote = remote_pods
                    .get_opt(name)
                    .await?
                    .map(serde_json::to_value)
                    .transpose()?;
                out.push((
                    local["status"]["phase"].clone(),
                    local["spec"]["schedulingGates"].clone(),
                    remote.map(|r| (r["status"]["phase"].clone(), r["spec"]["nodeName"].clone())),
                ));
            }
            *seen = format!("{out:?}");
            let done = out.iter().all(|(phase, gates, remote)| {
                phase == "Running"
                    && gates
                        .as_array()
                        .is_some_and(|g| g.iter().any(|g| g["name"] == "kueue.x-k8s.io/admission"))
                    && remote.as_ref().is_some_and(|(p, node)| {
                        p == "Running" && node.as_str().is_some_and(|n| n.starts_with("kwok-node-"))
                    })
            });
            Ok(done.then_some(()))
        },
    )
    .await?;
    let group_running_after = group_created.elapsed();
    let group = until(
        "the group's Workload Ready on the manager",
        &mut wasq,
        async |seen| {
            let wl = Api::<DynamicObject>::namespaced_with(
                client.clone(),
                "default",
                &KueueKind::Workload.api_resource(),
            )
            .get_opt("sample-group")
            .await?
            .map(serde_json::to_value)
            .transpose()?;
            *seen = format!("{wl:?}");
            Ok(wl.filter(|w| w["status"]["clusterName"] == "worker-1"))
        },
    )
    .await?;
    assert_eq!(group["status"]["admissionChecks"][0]["state"], "Ready");
    let remote = remote_pods.get(&names[0]).await?;
    let labels = remote.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels["kueue.x-k8s.io/prebuilt-workload-name"],
        "sample-group"
    );
    assert_eq!(labels["kueue.x-k8s.io/multikueue-origin"], "multikueue");

    // The Secret rotated to credentials the worker refuses: the cluster goes inactive; rotated
    // back, it is connected again (the Secret's watch, no restart).
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(client.clone(), NAMESPACE);
    let rotate = async |kubeconfig: &str| -> Result<()> {
        let data = json!({"data": {"kubeconfig":
            base64::engine::general_purpose::STANDARD.encode(kubeconfig)}});
        secrets
            .patch(
                "worker-1-secret",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&data),
            )
            .await?;
        Ok(())
    };
    let refused = kubeconfig.replace("token: ", "token: not-");
    assert_ne!(
        refused, kubeconfig,
        "the worker's kubeconfig carries a bearer token"
    );
    rotate(&refused).await?;
    let inactive = until("the worker inactive", &mut wasq, async |seen| {
        let c = serde_json::to_value(clusters.get("worker-1").await?)?;
        *seen = format!("{}", c["status"]);
        Ok(condition(&c, "Active", "False").then(|| condition_of(&c, "Active").clone()))
    })
    .await?;
    assert_eq!(inactive["reason"], "ClientConnectionFailed", "{inactive}");
    assert!(
        inactive["message"]
            .as_str()
            .is_some_and(|m| m.contains("Unauthorized")),
        "the real server's refusal in the message: {inactive}"
    );
    rotate(&kubeconfig).await?;
    until("the worker active again", &mut wasq, async |seen| {
        let c = serde_json::to_value(clusters.get("worker-1").await?)?;
        *seen = format!("{}", c["status"]);
        Ok(condition(&c, "Active", "True").then_some(()))
    })
    .await?;

    let worker_warnings = worker_wasq.warnings();
    // Last, as it outlives the worker's wasq (its lease lapses, and it exits as Kueue's
    // manager does): a Job that runs on, its worker's API server killed and away past
    // `workerLostTimeout`. The check goes to `Retry` (Kueue's message) and the manager evicts
    // it; back, the worker still runs it, and its copy, admitted there, is Ready again.
    let mut long = sample_job(&[])?;
    keep_running(&mut long);
    let long = jobs.create(&PostParams::default(), &long).await?;
    let long_name = long.metadata.name.clone().unwrap_or_default();
    until(
        "the long Job admitted on the worker",
        &mut wasq,
        async |seen| {
            let wl = workload_of(&client, &long).await?;
            *seen = format!("{wl:?}");
            Ok(wl.filter(|w| condition(w, "Admitted", "True")))
        },
    )
    .await?;
    let remote_long = until("the long Job on the worker", &mut wasq, async |seen| {
        let j = remote_jobs.get_opt(&long_name).await?;
        *seen = format!("{j:?}");
        Ok(j)
    })
    .await?;
    pods_in_phase(&worker_client, &mut worker_wasq, &remote_long, 3, "Running").await?;
    let lost = Instant::now();
    worker.stop_apiserver()?;
    // (`Retry` turns `Pending` at once as the manager evicts: its retry count tells.)
    until(
        "the check retried once the worker is lost",
        &mut wasq,
        async |seen| {
            let wl = workload_of(&client, &long).await?;
            *seen = format!("{wl:?}");
            Ok(wl.filter(|w| {
                let check = &w["status"]["admissionChecks"][0];
                check["message"] == "Admitting remote lost, Previously: \"Ready\""
                    || check["retryCount"].as_u64() >= Some(1)
            }))
        },
    )
    .await?;
    let retried_after = lost.elapsed();
    assert!(
        retried_after.as_secs() >= 20,
        "not before workerLostTimeout: {retried_after:?}"
    );
    // The eviction that follows clears `clusterName` (a moment after `Retry` is written).
    until(
        "the Workload evicted from the lost worker",
        &mut wasq,
        async |seen| {
            let wl = workload_of(&client, &long).await?;
            *seen = format!("{wl:?}");
            Ok(wl.filter(|w| w["status"]["clusterName"].is_null()))
        },
    )
    .await?;
    worker.start_apiserver().await?;
    let back = until(
        "the long Job Ready on the worker again",
        &mut wasq,
        async |seen| {
            let wl = workload_of(&client, &long).await?;
            *seen = format!("{wl:?}");
            Ok(wl.filter(|w| {
                condition(w, "Admitted", "True") && w["status"]["clusterName"] == "worker-1"
            }))
        },
    )
    .await?;
    let back_after = lost.elapsed();
    assert_eq!(
        back["status"]["admissionChecks"][0]["state"], "Ready",
        "{back}"
    );
    jobs.delete(&long_name, &Default::default()).await?;

    // The worker's wasq warned of nothing before its API server was killed; the manager only
    // of its client's cut connections.
    assert_eq!(worker_warnings, Vec::<String>::new());
    let warnings = wasq.warnings();
    assert!(
        warnings.iter().all(|w| w.contains("kube_client")),
        "{}",
        warnings.join("\n")
    );
    eprintln!(
        "set-up {:.1}s; from the Job's creation: admitted on the worker {:.1}s, finished {:.1}s; \
         the worker lost: retried {:.1}s after, Ready there again {:.1}s after; the pod group \
         Running there {:.1}s after its creation",
        set_up_took.as_secs_f64(),
        admitted_after.as_secs_f64(),
        finished_after.as_secs_f64(),
        retried_after.as_secs_f64(),
        back_after.as_secs_f64(),
        group_running_after.as_secs_f64()
    );
    Ok(())
}
