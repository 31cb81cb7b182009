//! Plain pods as Kueue's docs create them (`site/static/examples/pods-kueue/`): a lone pod and a
//! pod group of two, each created with wasq's scheduling gates (its webhook), admitted as one
//! Workload each, then given the flavor's node selector and toleration and ungated — changes
//! the real server allows only on a gated pod — scheduled onto KWOK nodes and Running.
//! (KWOK completes only a Job's pods: plain pods stay Running.)

use anyhow::Result;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::{Value, json};
use wasq::k8s::schema::kinds::KueueKind;

use crate::jobs::{cluster_queue, condition, kwok_flavor, local_queue, set_up, until};

/// `kueue-pod.yaml` and `kueue-pod-group.yaml`, as they are.
pub(crate) const KUEUE_PODS: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  generateName: kueue-sleep-
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  containers:
    - name: sleep
      image: busybox
      command:
        - sleep
      args:
        - 3s
      resources:
        requests:
          cpu: 3
  restartPolicy: OnFailure
---
apiVersion: v1
kind: Pod
metadata:
  generateName: sample-leader-
  labels:
    kueue.x-k8s.io/queue-name: user-queue
    kueue.x-k8s.io/pod-group-name: "sample-group"
  annotations:
    kueue.x-k8s.io/pod-group-total-count: "2"
spec:
  restartPolicy: Never
  containers:
  - name: sleep
    image: busybox
    command: ["sh", "-c", 'echo "hello world from the leader pod" && sleep 3']
    resources:
      requests:
        cpu: 3
---
apiVersion: v1
kind: Pod
metadata:
  generateName: sample-worker-
  labels:
    kueue.x-k8s.io/queue-name: user-queue
    kueue.x-k8s.io/pod-group-name: "sample-group"
  annotations:
    kueue.x-k8s.io/pod-group-total-count: "2"
spec:
  restartPolicy: Never
  containers:
  - name: sleep
    image: busybox
    command: ["sh", "-c", 'echo "hello world from the worker pod" && sleep 2']
    resources:
      requests:
        cpu: 3
"#;

/// The gates Kueue's pod webhook adds (the topology one with topology-aware scheduling on,
/// as it is by default; removed with the other when the pod is not placed by TAS).
const GATES: [&str; 2] = ["kueue.x-k8s.io/admission", "kueue.x-k8s.io/topology"];

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn queued_pods_alone_and_in_a_group_are_ungated_and_run() -> Result<()> {
    let (_plane, client, mut wasq) =
        set_up(&[kwok_flavor(), cluster_queue(9, None), local_queue()]).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let mut names = Vec::new();
    for doc in serde_saphyr::from_multiple::<Value>(KUEUE_PODS)? {
        let pod = pods
            .create(&PostParams::default(), &serde_json::from_value(doc)?)
            .await?;
        let gates: Vec<String> = pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduling_gates.clone())
            .unwrap_or_default()
            .into_iter()
            .map(|g| g.name)
            .collect();
        assert_eq!(gates, GATES, "wasq's webhook gates a queued pod");
        names.push(pod.metadata.name.unwrap_or_default());
    }

    let placed = until(
        "the three pods ungated, placed on KWOK nodes and Running",
        &mut wasq,
        async |seen| {
            let mut out = Vec::new();
            for name in &names {
                let pod = serde_json::to_value(pods.get(name).await?)?;
                out.push(json!({
                    "name": name,
                    "gates": pod["spec"]["schedulingGates"],
                    "node": pod["spec"]["nodeName"],
                    "nodeSelector": pod["spec"]["nodeSelector"],
                    "phase": pod["status"]["phase"],
                }));
            }
            *seen = format!("{out:?}");
            let done = out.iter().all(|p| {
                p["gates"].is_null()
                    && p["node"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("kwok-node-"))
                    && p["phase"] == "Running"
            });
            Ok(done.then_some(out))
        },
    )
    .await?;
    for pod in &placed {
        assert_eq!(pod["nodeSelector"], json!({"type": "kwok"}), "{pod}");
    }

    let workloads: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &KueueKind::Workload.api_resource(),
    );
    let listed: Vec<Value> = workloads
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?;
    let admitted: Vec<(String, usize)> = listed
        .iter()
        .filter(|w| condition(w, "Admitted", "True"))
        .map(|w| {
            (
                w["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                w["metadata"]["ownerReferences"]
                    .as_array()
                    .map_or(0, Vec::len),
            )
        })
        .collect();
    assert_eq!(
        admitted.len(),
        2,
        "one Workload for the lone pod, one for the group: {listed:?}"
    );
    assert!(
        admitted
            .iter()
            .any(|(name, owners)| name == "sample-group" && *owners == 2),
        "the group's Workload is named after it and owned by both pods: {admitted:?}"
    );
    assert_eq!(wasq.warnings(), Vec::<String>::new());
    Ok(())
}
