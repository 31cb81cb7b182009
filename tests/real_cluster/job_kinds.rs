//! The other job kinds end to end: their CRDs as their projects publish them (the versions
//! `.ci/control-plane/crds.txt` pins, Kueue's own), `wasq controller` with its webhooks, and a
//! JobSet, a RayJob, a PyTorchJob and a LeaderWorkerSet created with `kubectl` as Kueue's docs
//! show them. No operator runs (Kueue's integration tests run without them too): each job comes
//! back suspended from wasq's webhook, gets its Workload named and shaped as Kueue makes it, is
//! admitted and unsuspended with the flavor's node selector and toleration in every pod
//! template — all read back as the real server stored them — and once the test writes the
//! terminal status its operator would, its Workload is `Finished`. The LeaderWorkerSet (managed
//! through its pods) has its templates labelled; the pods its controller would make, created
//! here, are gated, admitted one Workload per group, ungated and Running on KWOK nodes.

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use wasq::api::jobs::names;
use wasq::k8s::schema::kinds::KueueKind;

use crate::cluster::kwok_node;
use crate::jobs::{
    cluster_queue, condition, condition_of, kwok_flavor, left_alone, local_queue, set_up_on, until,
};
use crate::kept::assert_kept;
use crate::wasq::{Options, Wasq};

/// The CRD files of `.ci/control-plane/crds.txt` this test installs.
const CRDS: [&str; 4] = [
    "jobset.x-k8s.io_jobsets.yaml",
    "ray.io_rayjobs.yaml",
    "kubeflow.org_pytorchjobs.yaml",
    "leaderworkerset.x-k8s.io_leaderworkersets.yaml",
];

/// Kueue's `site/static/examples/jobs/sample-jobset.yaml`, as it is.
const SAMPLE_JOBSET: &str = r#"
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  generateName: sleep-job-
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  network:
    enableDNSHostnames: false
    subdomain: some-subdomain
  replicatedJobs:
    - name: workers
      replicas: 1
      template:
        spec:
          parallelism: 1
          completions: 1
          backoffLimit: 0
          template:
            spec:
              containers:
                - name: sleep
                  image: busybox
                  resources:
                    requests:
                      cpu: 1
                      memory: "200Mi"
                  command:
                    - sleep
                  args:
                    - 100s
    - name: driver
      template:
        spec:
          parallelism: 1
          completions: 1
          backoffLimit: 0
          template:
            spec:
              containers:
                - name: sleep
                  image: busybox
                  resources:
                    requests:
                      cpu: 2
                      memory: "200Mi"
                  command:
                    - sleep
                  args:
                    - 100s
"#;

/// Kueue's `site/static/examples/jobs/ray-job-sample.yaml`, as it is but for its comments.
const SAMPLE_RAYJOB: &str = r#"
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: rayjob-sample
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  shutdownAfterJobFinishes: true
  entrypoint: python /home/ray/samples/sample_code.py
  runtimeEnvYAML: |
    pip:
      - requests==2.26.0
      - pendulum==2.1.2
    env_vars:
      counter_name: "test_counter"
  rayClusterSpec:
    rayVersion: '2.9.0' # should match the Ray version in the image of the containers
    headGroupSpec:
      rayStartParams:
        dashboard-host: '0.0.0.0'
      template:
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.9.0
              ports:
                - containerPort: 6379
                  name: gcs-server
                - containerPort: 8265 # Ray dashboard
                  name: dashboard
                - containerPort: 10001
                  name: client
              resources:
                limits:
                  cpu: "1"
                requests:
                  cpu: "1"
              volumeMounts:
                - mountPath: /home/ray/samples
                  name: code-sample
          volumes:
            - name: code-sample
              configMap:
                name: ray-job-code-sample
                items:
                  - key: sample_code.py
                    path: sample_code.py
    workerGroupSpecs:
      - replicas: 1
        minReplicas: 1
        maxReplicas: 5
        groupName: small-group
        rayStartParams: {}
        template:
          spec:
            containers:
              - name: ray-worker
                image: rayproject/ray:2.9.0
                lifecycle:
                  preStop:
                    exec:
                      command: [ "/bin/sh","-c","ray stop" ]
                resources:
                  limits:
                    cpu: "1"
                  requests:
                    cpu: "1"
"#;

/// Kueue's `site/static/examples/jobs/sample-pytorchjob.yaml`, as it is but for its comments.
const SAMPLE_PYTORCHJOB: &str = r#"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: pytorch-simple
  namespace: default
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: docker.io/kubeflowkatib/pytorch-mnist-cpu:v1beta1-21320b6
              imagePullPolicy: Always
              command:
                - "python3"
                - "/opt/pytorch-mnist/mnist.py"
                - "--epochs=1"
              resources:
                requests:
                  cpu: 1
                  memory: "200Mi"
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: docker.io/kubeflowkatib/pytorch-mnist-cpu:v1beta1-21320b6
              imagePullPolicy: Always
              command:
                - "python3"
                - "/opt/pytorch-mnist/mnist.py"
                - "--epochs=1"
              resources:
                requests:
                  cpu: 1
                  memory: "200Mi"
"#;

/// Kueue's `site/static/examples/serving-workloads/sample-leaderworkerset.yaml`, as it is.
const SAMPLE_LWS: &str = r#"
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: nginx-leaderworkerset
  labels:
    app: nginx
    kueue.x-k8s.io/queue-name: user-queue
spec:
  replicas: 2
  leaderWorkerTemplate:
    leaderTemplate:
      spec:
        containers:
          - name: nginx-leader
            image: registry.k8s.io/nginx-slim:0.27
            resources:
              requests:
                cpu: "100m"
            ports:
              - containerPort: 80
    size: 3
    workerTemplate:
      spec:
        containers:
          - name: nginx-worker
            image: registry.k8s.io/nginx-slim:0.27
            resources:
              requests:
                cpu: "200m"
            ports:
              - containerPort: 80
"#;

/// A kind with a suspend flag, as this test drives it.
struct Kind {
    example: &'static str,
    resource: ApiResource,
    /// Where the suspend flag is.
    suspend: &'static str,
    /// Kueue's podSets of the example: name, count, where its pod template is.
    pod_sets: [(&'static str, i64, &'static str); 2],
    /// The status its operator writes when the job succeeded.
    succeeded: Value,
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

fn kinds() -> Vec<Kind> {
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    vec![
        Kind {
            example: SAMPLE_JOBSET,
            resource: resource("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets"),
            suspend: "/spec/suspend",
            pod_sets: [
                (
                    "workers",
                    1,
                    "/spec/replicatedJobs/0/template/spec/template",
                ),
                ("driver", 1, "/spec/replicatedJobs/1/template/spec/template"),
            ],
            // The JobSet controller's words (pkg/constants).
            succeeded: json!({"terminalState": "Completed", "conditions": [{
                "type": "Completed", "status": "True", "reason": "AllJobsCompleted",
                "message": "jobset completed successfully", "lastTransitionTime": now}]}),
        },
        Kind {
            example: SAMPLE_RAYJOB,
            resource: resource("ray.io", "v1", "RayJob", "rayjobs"),
            suspend: "/spec/suspend",
            // Kueue also counts a third podSet, `submitter`, for the `K8sJobMode` the CRD
            // defaults `submissionMode` to: wasq does not yet (docs/differences.md).
            pod_sets: [
                ("head", 1, "/spec/rayClusterSpec/headGroupSpec/template"),
                (
                    "small-group",
                    1,
                    "/spec/rayClusterSpec/workerGroupSpecs/0/template",
                ),
            ],
            succeeded: json!({"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"}),
        },
        Kind {
            example: SAMPLE_PYTORCHJOB,
            resource: resource("kubeflow.org", "v1", "PyTorchJob", "pytorchjobs"),
            suspend: "/spec/runPolicy/suspend",
            pod_sets: [
                ("master", 1, "/spec/pytorchReplicaSpecs/Master/template"),
                ("worker", 1, "/spec/pytorchReplicaSpecs/Worker/template"),
            ],
            // The training operator's words (pkg/controller.v1/pytorch).
            succeeded: json!({
                "replicaStatuses": {"Master": {"succeeded": 1}, "Worker": {"succeeded": 1}},
                "conditions": [{"type": "Succeeded", "status": "True",
                                "reason": "PyTorchJobSucceeded",
                                "message": "PyTorchJob default/pytorch-simple successfully completed.",
                                "lastUpdateTime": now, "lastTransitionTime": now}]}),
        },
    ]
}

/// Creates `yaml` with the pinned kubectl; the object as the server stored it.
fn kubectl_create(plane: &crate::cluster::ControlPlane, yaml: &str) -> Result<Value> {
    let out = plane.kubectl(&["create", "-f", "-", "-o", "json"], Some(yaml))?;
    Ok(serde_json::from_str(&out)?)
}

/// The Workload owned by the object of UID `uid` in `default`, when there is one.
async fn workload_owned_by(client: &kube::Client, uid: &str) -> Result<Option<Value>> {
    Ok(workloads(client).await?.into_iter().find(|wl| {
        wl["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|o| o["uid"] == uid)
    }))
}

async fn workloads(client: &kube::Client) -> Result<Vec<Value>> {
    let api: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &KueueKind::Workload.api_resource(),
    );
    api.list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|w| Ok(serde_json::to_value(w)?))
        .collect()
}

/// A pod template carries the KWOK flavor's node selector and toleration.
fn has_flavor(template: &Value) -> bool {
    template["spec"]["nodeSelector"] == json!({"type": "kwok"})
        && template["spec"]["tolerations"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["key"] == "kwok.x-k8s.io/node")
}

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn other_job_kinds_are_queued_admitted_started_and_finished() -> Result<()> {
    let begun = std::time::Instant::now();
    let nodes = (0..2)
        .map(|i| kwok_node(&format!("kwok-node-{i}")))
        .collect::<Result<Vec<_>>>()?;
    let (plane, client, mut wasq) = set_up_on(
        &Options::new("wasq-0"),
        &CRDS,
        Some(nodes),
        &[kwok_flavor(), cluster_queue(9, None), local_queue()],
    )
    .await?;
    let set_up_took = begun.elapsed();

    // Every job created first, so that wasq works on them together.
    let kinds = kinds();
    let mut created = Vec::new();
    for kind in &kinds {
        let sent: Value = serde_saphyr::from_str(kind.example)?;
        let job = kubectl_create(&plane, kind.example)?;
        let what = format!("the {}", kind.resource.kind);
        assert_eq!(
            job.pointer(kind.suspend),
            Some(&json!(true)),
            "{what} comes back suspended from wasq's webhook: {job}"
        );
        assert_kept(&what, &sent, &job);
        created.push(job);
    }
    let lws_sent: Value = serde_saphyr::from_str(SAMPLE_LWS)?;
    let lws = kubectl_create(&plane, SAMPLE_LWS)?;
    assert_kept("the LeaderWorkerSet", &lws_sent, &lws);

    for (kind, job) in kinds.iter().zip(&created) {
        let what = kind.resource.kind.as_str();
        let name = job["metadata"]["name"].as_str().unwrap_or_default();
        let uid = job["metadata"]["uid"].as_str().unwrap_or_default();
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), "default", &kind.resource);

        let workload = until(
            &format!("the {what}'s Workload admitted"),
            &mut wasq,
            async |seen| {
                let wl = workload_owned_by(&client, uid).await?;
                *seen = format!("{wl:?}");
                Ok(wl.filter(|w| condition(w, "Admitted", "True")))
            },
        )
        .await?;
        // Kueue's name: the kind in lower case, the job's name, a hash of kind, group, name
        // and UID.
        assert_eq!(
            workload["metadata"]["name"],
            names::workload_name(&what.to_lowercase(), what, &kind.resource.group, name, uid),
            "{what}"
        );
        let shape: Vec<(Value, Value)> = workload["spec"]["podSets"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| (p["name"].clone(), p["count"].clone()))
            .collect();
        let expected: Vec<(Value, Value)> = kind
            .pod_sets
            .iter()
            .map(|(n, c, _)| (json!(n), json!(c)))
            .collect();
        assert_eq!(shape, expected, "{what}'s podSets");
        let assignments = &workload["status"]["admission"]["podSetAssignments"];
        for (i, (pod_set, ..)) in kind.pod_sets.iter().enumerate() {
            assert_eq!(assignments[i]["name"], *pod_set, "{what}: {assignments}");
            assert_eq!(
                assignments[i]["flavors"]["cpu"], "kwok",
                "{what}: {assignments}"
            );
        }

        let started = until(
            &format!("the {what} unsuspended"),
            &mut wasq,
            async |seen| {
                let job = serde_json::to_value(api.get(name).await?)?;
                *seen = format!("{:?}", job.pointer(kind.suspend));
                Ok((job.pointer(kind.suspend) == Some(&json!(false))).then_some(job))
            },
        )
        .await?;
        for (pod_set, _, template) in &kind.pod_sets {
            let template = started.pointer(template).cloned().unwrap_or_default();
            assert!(
                has_flavor(&template),
                "{what}'s podSet {pod_set} has the flavor's node selector and toleration, \
                 as the server stored them: {template}"
            );
        }

        api.patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": kind.succeeded})),
        )
        .await
        .with_context(|| format!("writing the {what}'s status"))?;
        let finished = until(
            &format!("the {what}'s Workload Finished"),
            &mut wasq,
            async |seen| {
                let wl = workload_owned_by(&client, uid).await?;
                *seen = format!("{wl:?}");
                Ok(wl.filter(|w| condition(w, "Finished", "True")))
            },
        )
        .await?;
        let condition = condition_of(&finished, "Finished");
        assert_eq!(condition["reason"], "Succeeded", "{what}: {condition}");
    }

    lws_groups_run(&client, &mut wasq, &lws).await?;

    // Once done, nothing is written again: not a job whose CRD defaulted fields of what wasq
    // wrote, not a Workload.
    let mut paths: Vec<String> = workloads(&client)
        .await?
        .iter()
        .map(|w| {
            format!(
                "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads/{}",
                w["metadata"]["name"].as_str().unwrap_or_default()
            )
        })
        .collect();
    for (kind, job) in kinds.iter().zip(&created) {
        let r = &kind.resource;
        paths.push(format!(
            "/apis/{}/namespaces/default/{}/{}",
            r.api_version,
            r.plural,
            job["metadata"]["name"].as_str().unwrap_or_default()
        ));
    }
    left_alone(&client, &paths, std::time::Duration::from_secs(2)).await?;
    assert_eq!(wasq.warnings(), Vec::<String>::new());
    eprintln!(
        "set-up {:.1}s; all done {:.1}s after the start",
        set_up_took.as_secs_f64(),
        begun.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The LeaderWorkerSet `lws` (as stored): its templates labelled by wasq's webhook; the pods
/// of its two groups created as its controller makes them (leader `<name>-<group>`, workers
/// `<name>-<group>-<index>`, the set's labels; without owners, as no StatefulSet controller
/// runs here) gated, admitted one Workload per group, ungated and Running on KWOK nodes.
async fn lws_groups_run(client: &kube::Client, wasq: &mut Wasq, lws: &Value) -> Result<()> {
    let name = lws["metadata"]["name"].as_str().unwrap_or_default();
    let templates = &lws["spec"]["leaderWorkerTemplate"];
    for t in ["leaderTemplate", "workerTemplate"] {
        let meta = &templates[t]["metadata"];
        assert_eq!(
            (&meta["labels"], &meta["annotations"]),
            (
                &json!({"kueue.x-k8s.io/queue-name": "user-queue", "kueue.x-k8s.io/managed": "true"}),
                &json!({"kueue.x-k8s.io/pod-group-total-count": "3"})
            ),
            "the LeaderWorkerSet's {t} as wasq's webhook labelled it and the server kept it"
        );
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let mut made = Vec::new();
    for group in 0..2 {
        for worker in 0..3 {
            let (pod_name, template) = if worker == 0 {
                (format!("{name}-{group}"), &templates["leaderTemplate"])
            } else {
                (
                    format!("{name}-{group}-{worker}"),
                    &templates["workerTemplate"],
                )
            };
            let mut metadata = template["metadata"].clone();
            metadata["name"] = json!(pod_name);
            for (label, value) in [
                ("leaderworkerset.sigs.k8s.io/name", name.to_string()),
                ("leaderworkerset.sigs.k8s.io/group-index", group.to_string()),
                (
                    "leaderworkerset.sigs.k8s.io/worker-index",
                    worker.to_string(),
                ),
            ] {
                metadata["labels"][label] = json!(value);
            }
            let pod: Pod = serde_json::from_value(
                json!({"metadata": metadata, "spec": template["spec"].clone()}),
            )?;
            let pod = pods.create(&PostParams::default(), &pod).await?;
            let gates: Vec<String> = pod
                .spec
                .as_ref()
                .and_then(|s| s.scheduling_gates.clone())
                .unwrap_or_default()
                .into_iter()
                .map(|g| g.name)
                .collect();
            assert_eq!(
                gates,
                ["kueue.x-k8s.io/admission", "kueue.x-k8s.io/topology"],
                "{pod_name} gated by wasq's webhook"
            );
            made.push(pod_name);
        }
    }
    let placed = until(
        "the LeaderWorkerSet's six pods ungated and Running on KWOK nodes",
        wasq,
        async |seen| {
            let mut out = Vec::new();
            for pod_name in &made {
                let pod = serde_json::to_value(pods.get(pod_name).await?)?;
                out.push(pod);
            }
            *seen = format!(
                "{:?}",
                out.iter()
                    .map(|p| (
                        &p["metadata"]["name"],
                        &p["spec"]["schedulingGates"],
                        &p["spec"]["nodeName"],
                        &p["status"]["phase"]
                    ))
                    .collect::<Vec<_>>()
            );
            let done = out.iter().all(|p| {
                p["spec"]["schedulingGates"].is_null()
                    && p["spec"]["nodeName"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("kwok-node-"))
                    && p["status"]["phase"] == "Running"
            });
            Ok(done.then_some(out))
        },
    )
    .await?;
    for pod in &placed {
        assert_eq!(
            pod["spec"]["nodeSelector"],
            json!({"type": "kwok"}),
            "{pod}"
        );
    }
    let kind = wasq::api::jobs::builtin_kind("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet")
        .context("wasq's LeaderWorkerSet kind")?;
    let group_names: Vec<String> = (0..2)
        .map(|group| kind.workload_name(name, "", Some(group)))
        .collect();
    // Admitted, and PodsReady once its pods run (written after they are Running).
    let listed = until(
        "the LeaderWorkerSet's group Workloads admitted and PodsReady",
        wasq,
        async |seen| {
            let listed = workloads(client).await?;
            *seen = format!("{listed:?}");
            let ready = group_names.iter().all(|group_name| {
                listed.iter().any(|w| {
                    w["metadata"]["name"] == *group_name
                        && condition(w, "Admitted", "True")
                        && condition(w, "PodsReady", "True")
                })
            });
            Ok(ready.then_some(listed))
        },
    )
    .await?;
    for group_name in &group_names {
        let wl = listed
            .iter()
            .find(|w| w["metadata"]["name"] == *group_name)
            .with_context(|| format!("no Workload {group_name} in {listed:?}"))?;
        let count: i64 = wl["spec"]["podSets"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["count"].as_i64())
            .sum();
        assert_eq!(count, 3, "a group is a leader and two workers: {wl}");
        assert_eq!(
            wl["metadata"]["ownerReferences"]
                .as_array()
                .map_or(0, Vec::len),
            3,
            "{wl}"
        );
    }
    Ok(())
}
