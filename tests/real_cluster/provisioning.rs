//! Kueue's ProvisioningRequest admission check on the real server: cluster-autoscaler's
//! ProvisioningRequest CRD (the version `.ci/control-plane/crds.txt` pins, Kueue's own) and
//! Kueue's `provisioning-setup.yaml` as its docs show it; a Job created with kubectl as
//! `provisioning/sample-job.yaml` shows it reserves quota, wasq creates the ProvisioningRequest and its PodTemplate named as
//! Kueue names them, the test marks the request `Provisioned` as cluster-autoscaler would, and
//! the check goes Ready, the Workload Admitted and the Job starts with the
//! `consume-provisioning-request` annotations — everything read back as the server stored it.
//! (No pods run: no node has the GPUs the Job asks for.)

use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::PodTemplate;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use crate::jobs::{condition, condition_of, left_alone, set_up_on, until, workload_of};
use crate::wasq::Options;

/// Kueue's `site/static/examples/provisioning/provisioning-setup.yaml`, as it is.
const SETUP: &str = r#"
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: "default-flavor"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: "cluster-queue"
spec:
  namespaceSelector: {} # match all.
  resourceGroups:
  - coveredResources: ["cpu", "memory", "nvidia.com/gpu"]
    flavors:
    - name: "default-flavor"
      resources:
      - name: "cpu"
        nominalQuota: 9
      - name: "memory"
        nominalQuota: 36Gi
      - name: "nvidia.com/gpu"
        nominalQuota: 9
  admissionChecksStrategy:
    admissionChecks:
      - name: "sample-prov"
        onFlavors: [default-flavor] # optional if the admission check targets all flavors.
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  namespace: "default"
  name: "user-queue"
spec:
  clusterQueue: "cluster-queue"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: sample-prov
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters:
    apiGroup: kueue.x-k8s.io
    kind: ProvisioningRequestConfig
    name: prov-test-config
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata:
  name: prov-test-config
spec:
  provisioningClassName: check-capacity.autoscaling.x-k8s.io
  managedResources:
  - nvidia.com/gpu
  retryStrategy:
    backoffLimitCount: 2
    backoffBaseSeconds: 0
    backoffMaxSeconds: 1800
"#;

/// Kueue's `site/static/examples/provisioning/sample-job.yaml`, as it is.
const SAMPLE_JOB: &str = r#"
apiVersion: batch/v1
kind: Job
metadata:
  generateName: sample-job-
  namespace: default
  labels:
    kueue.x-k8s.io/queue-name: user-queue
  annotations:
    provreq.kueue.x-k8s.io/maxRunDurationSeconds: "600"
spec:
  parallelism: 3
  completions: 3
  template:
    spec:
      tolerations:
      - key: "nvidia.com/gpu"
        operator: "Exists"
        effect: "NoSchedule"
      containers:
      - name: dummy-job
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        args: ["pause"]
        resources:
          requests:
            cpu: "100m"
            memory: "100Mi"
            nvidia.com/gpu: 1
          limits:
            nvidia.com/gpu: 1
      restartPolicy: Never
"#;

const CLASS: &str = "check-capacity.autoscaling.x-k8s.io";

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn a_provisioning_request_is_made_and_once_provisioned_the_job_starts() -> Result<()> {
    let begun = std::time::Instant::now();
    let setup: Vec<Value> = serde_saphyr::from_multiple(SETUP)?;
    let (plane, client, mut wasq) = set_up_on(
        &Options::new("wasq-0"),
        &["autoscaling.x-k8s.io_provisioningrequests.yaml"],
        None,
        &setup,
    )
    .await?;
    let set_up_took = begun.elapsed();

    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let out = plane.kubectl(&["create", "-f", "-", "-o", "json"], Some(SAMPLE_JOB))?;
    let job: Job = serde_json::from_str(&out)?;
    let job_name = job.metadata.name.clone().unwrap_or_default();
    assert_eq!(job.spec.as_ref().and_then(|s| s.suspend), Some(true));

    // Quota reserved, the check Pending, not admitted.
    let workload = until(
        "the Workload's quota reserved, its check Pending",
        &mut wasq,
        async |seen| {
            let wl = workload_of(&client, &job).await?;
            *seen = format!("{wl:?}");
            Ok(wl.filter(|w| {
                condition(w, "QuotaReserved", "True")
                    && w["status"]["admissionChecks"][0]["state"] == "Pending"
            }))
        },
    )
    .await?;
    let wl_name = workload["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let wl_uid = workload["metadata"]["uid"].clone();
    let admitted = condition_of(&workload, "Admitted");
    assert_eq!(
        (&admitted["status"], &admitted["reason"]),
        (&json!("False"), &json!("UnsatisfiedAdmissionChecks")),
        "{admitted}"
    );
    assert_eq!(
        workload["status"]["admissionChecks"][0]["name"],
        "sample-prov"
    );

    // The request and its PodTemplate, named as Kueue names them (`<workload>-<check>-<attempt>`,
    // `ppt-<request>-<podSet>`), owned by the Workload.
    let pr_name = format!("{wl_name}-sample-prov-1");
    let template_name = format!("ppt-{pr_name}-main");
    let requests: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &wasq::k8s::controller::provisioning::resource(),
    );
    let pr = until("the ProvisioningRequest", &mut wasq, async |seen| {
        let pr = requests.get_opt(&pr_name).await?;
        *seen = format!("{pr:?}");
        Ok(pr)
    })
    .await?;
    let pr = serde_json::to_value(pr)?;
    assert_eq!(
        pr["spec"],
        json!({"provisioningClassName": CLASS,
               "parameters": {"maxRunDurationSeconds": "600"},
               "podSets": [{"podTemplateRef": {"name": template_name}, "count": 3}]}),
        "the request as the server stored it"
    );
    let owned_by_workload = |object: &Value| {
        object["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|o| o["kind"] == "Workload" && o["uid"] == wl_uid && o["controller"] == true)
    };
    assert!(owned_by_workload(&pr), "{}", pr["metadata"]);
    let managed = json!({"kueue.x-k8s.io/managed": "true"});
    assert_eq!(pr["metadata"]["labels"], managed, "{}", pr["metadata"]);
    let templates: Api<PodTemplate> = Api::namespaced(client.clone(), "default");
    let template = serde_json::to_value(
        templates
            .get_opt(&template_name)
            .await?
            .with_context(|| format!("the PodTemplate {template_name}"))?,
    )?;
    assert!(owned_by_workload(&template), "{}", template["metadata"]);
    assert_eq!(
        template["metadata"]["labels"], managed,
        "{}",
        template["metadata"]
    );
    assert_eq!(
        template["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"],
        "1",
        "{template}"
    );
    assert_eq!(
        jobs.get(&job_name).await?.spec.and_then(|s| s.suspend),
        Some(true),
        "not admitted yet: still suspended"
    );

    // cluster-autoscaler's answer.
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let status = json!({"status": {"conditions": [
        {"type": "Accepted", "status": "True", "reason": "Accepted",
         "message": "ProvisioningRequest is accepted", "lastTransitionTime": now},
        {"type": "Provisioned", "status": "True", "reason": "Provisioned",
         "message": "Capacity is found in the cluster", "lastTransitionTime": now}]}});
    let marked = requests
        .patch_status(&pr_name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    crate::kept::assert_kept(
        "the ProvisioningRequest's status",
        &status,
        &serde_json::to_value(marked)?,
    );

    let workload = until("the Workload Admitted", &mut wasq, async |seen| {
        let wl = workload_of(&client, &job).await?;
        *seen = format!("{wl:?}");
        Ok(wl.filter(|w| condition(w, "Admitted", "True")))
    })
    .await?;
    let check = &workload["status"]["admissionChecks"][0];
    let annotations = json!({"autoscaling.x-k8s.io/consume-provisioning-request": pr_name,
                             "autoscaling.x-k8s.io/provisioning-class-name": CLASS});
    assert_eq!(check["state"], "Ready", "{check}");
    assert_eq!(
        check["podSetUpdates"],
        json!([{"name": "main", "annotations": annotations}]),
        "{check}"
    );
    let started = until("the Job unsuspended", &mut wasq, async |seen| {
        let job = jobs.get(&job_name).await?;
        *seen = format!("suspend {:?}", job.spec.as_ref().and_then(|s| s.suspend));
        Ok((job.spec.as_ref().and_then(|s| s.suspend) == Some(false)).then_some(job))
    })
    .await?;
    let template = serde_json::to_value(&started.spec.context("a spec")?.template)?;
    assert_eq!(
        template["metadata"]["annotations"], annotations,
        "{template}"
    );
    // Kueue's Events on the Workload, as the server stored them.
    let notes = until("the Workload's Events", &mut wasq, async |seen| {
        let events: Api<Event> = Api::namespaced(client.clone(), "default");
        let notes: Vec<(String, String)> = events
            .list(&Default::default())
            .await?
            .items
            .into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(&wl_name))
            .map(|e| (e.reason.unwrap_or_default(), e.note.unwrap_or_default()))
            .collect();
        *seen = format!("{notes:?}");
        let admitted = notes.iter().any(|(reason, _)| reason == "Admitted");
        Ok(admitted.then_some(notes))
    })
    .await?;
    assert!(
        notes.contains(&(
            "ProvisioningRequestCreated".into(),
            format!("Created ProvisioningRequest: {pr_name:?}")
        )),
        "{notes:?}"
    );

    // Nothing is written again: not the PodTemplate the server defaulted, not the request.
    left_alone(
        &client,
        &[
            format!("/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads/{wl_name}"),
            format!(
                "/apis/autoscaling.x-k8s.io/v1/namespaces/default/provisioningrequests/{pr_name}"
            ),
            format!("/api/v1/namespaces/default/podtemplates/{template_name}"),
            format!("/apis/batch/v1/namespaces/default/jobs/{job_name}"),
        ],
        Duration::from_secs(2),
    )
    .await?;
    assert_eq!(wasq.warnings(), Vec::<String>::new());
    eprintln!(
        "set-up {:.1}s; all done {:.1}s after the start",
        set_up_took.as_secs_f64(),
        begun.elapsed().as_secs_f64()
    );
    Ok(())
}
