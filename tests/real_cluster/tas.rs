//! Topology-aware scheduling on the real server: four KWOK nodes of 8 CPUs labelled by block,
//! rack and hostname as the Topology of Kueue's `tas/sample-queues.yaml` expects them (two
//! racks of two nodes), that file's objects, and a Job as `tas/sample-job-required.yaml` shows
//! it (ten pods that must share a rack), created with kubectl. wasq admits it with a
//! `topologyAssignment`, starts it with Kueue's topology gate on its pods, and releases each
//! pod into its node (a `kubernetes.io/hostname` node selector); the real kube-scheduler binds
//! them there and KWOK runs them, all in one rack. The same Job with twenty pods fits no rack
//! and stays pending with Kueue's reason and message.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use k8s_openapi::api::batch::v1::Job;
use serde_json::{Value, json};

use crate::cluster::kwok_node;
use crate::jobs::{condition, condition_of, phases, pods_of, set_up_on, until, workload_of};
use crate::wasq::Options;

/// Kueue's `site/static/examples/tas/sample-queues.yaml`, fitted to KWOK's nodes as
/// `jobs.rs`'s flavor is: `tas-flavor` tolerates their `kwok.x-k8s.io/node` taint (else no
/// node could take a pod, and TAS would place none).
const SAMPLE_QUEUES: &str = r#"
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata:
  name: "default"
spec:
  levels:
  - nodeLabel: "cloud.provider.com/topology-block"
  - nodeLabel: "cloud.provider.com/topology-rack"
  - nodeLabel: "kubernetes.io/hostname"
---
kind: ResourceFlavor
apiVersion: kueue.x-k8s.io/v1beta2
metadata:
  name: "tas-flavor"
spec:
  nodeLabels:
    cloud.provider.com/node-group: "tas-group"
  topologyName: "default"
  tolerations:
  - key: kwok.x-k8s.io/node
    operator: Exists
    effect: NoSchedule
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: "tas-cluster-queue"
spec:
  namespaceSelector: {} # match all.
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: "tas-flavor"
      resources:
      - name: "cpu"
        nominalQuota: 100
      - name: "memory"
        nominalQuota: 100Gi
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  namespace: "default"
  name: "tas-user-queue"
spec:
  clusterQueue: "tas-cluster-queue"
"#;

/// Kueue's `site/static/examples/tas/sample-job-required.yaml`, as it is.
const SAMPLE_JOB_REQUIRED: &str = r#"
apiVersion: batch/v1
kind: Job
metadata:
  generateName: tas-sample-required
  labels:
    kueue.x-k8s.io/queue-name: tas-user-queue
spec:
  parallelism: 10
  completions: 10
  completionMode: Indexed
  template:
    metadata:
      annotations:
        kueue.x-k8s.io/podset-required-topology: "cloud.provider.com/topology-rack"
    spec:
      containers:
      - name: dummy-job
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        args: ["pause"]
        resources:
          requests:
            cpu: "1"
            memory: "200Mi"
      restartPolicy: Never
"#;

const HOST: &str = "kubernetes.io/hostname";

/// The rack of `kwok-node-<i>`: two racks of two nodes in one block.
fn rack(i: usize) -> String {
    format!("rack-{}", i / 2 + 1)
}

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn a_rack_job_runs_in_one_rack_and_a_job_no_rack_holds_waits() -> Result<()> {
    let begun = std::time::Instant::now();
    let mut nodes = Vec::new();
    let mut rack_of = BTreeMap::new();
    for i in 0..4 {
        let name = format!("kwok-node-{i}");
        let mut node = serde_json::to_value(kwok_node(&name)?)?;
        let labels = &mut node["metadata"]["labels"];
        labels["cloud.provider.com/node-group"] = json!("tas-group");
        labels["cloud.provider.com/topology-block"] = json!("block-1");
        labels["cloud.provider.com/topology-rack"] = json!(rack(i));
        for field in ["capacity", "allocatable"] {
            node["status"][field]["cpu"] = json!("8");
        }
        nodes.push(serde_json::from_value(node)?);
        rack_of.insert(name, rack(i));
    }
    let objects: Vec<Value> = serde_saphyr::from_multiple(SAMPLE_QUEUES)?;
    let (plane, client, mut wasq) =
        set_up_on(&Options::new("wasq-0"), &[], Some(nodes), &objects).await?;
    let set_up_took = begun.elapsed();

    let out = plane.kubectl(
        &["create", "-f", "-", "-o", "json"],
        Some(SAMPLE_JOB_REQUIRED),
    )?;
    let job: Job = serde_json::from_str(&out)?;
    assert_eq!(job.spec.as_ref().and_then(|s| s.suspend), Some(true));
    let created = std::time::Instant::now();

    let workload = until("the Job's Workload admitted", &mut wasq, async |seen| {
        let wl = workload_of(&client, &job).await?;
        *seen = format!("{wl:?}");
        Ok(wl.filter(|w| condition(w, "Admitted", "True")))
    })
    .await?;
    let admitted_after = created.elapsed();
    let assignment = &workload["status"]["admission"]["podSetAssignments"][0];
    assert_eq!(assignment["flavors"]["cpu"], "tas-flavor", "{assignment}");
    let topology: wasq::api::topology::TopologyAssignment =
        serde_json::from_value(assignment["topologyAssignment"].clone())
            .with_context(|| format!("a topologyAssignment in {assignment}"))?;
    assert_eq!(topology.levels, [HOST], "Kueue assigns the lowest level");
    let placed: BTreeMap<String, i32> = topology
        .domains()
        .context("a well-formed topologyAssignment")?
        .into_iter()
        .map(|d| (d.values[0].clone(), d.count))
        .collect();
    assert_eq!(placed.values().sum::<i32>(), 10, "{placed:?}");
    let racks: Vec<&String> = placed.keys().filter_map(|n| rack_of.get(n)).collect();
    assert!(
        racks.len() == placed.len() && racks.iter().all(|r| *r == racks[0]),
        "the assignment is in one rack: {placed:?}"
    );

    // The Job controller makes the pods from the template wasq started it with (Kueue's
    // topology gate on it); wasq ungates each into a node of the assignment, the scheduler
    // binds it there, KWOK runs it (and, a Job's pod, completes it a second later).
    let pods = until(
        "the ten pods ungated, bound to their nodes and run by KWOK",
        &mut wasq,
        async |seen| {
            let pods = pods_of(&client, &job).await?;
            *seen = format!("{:?}", phases(&pods));
            let ran = pods.len() == 10
                && pods.iter().all(|p| {
                    p.status
                        .as_ref()
                        .and_then(|s| s.start_time.as_ref())
                        .is_some()
                });
            Ok(ran.then_some(pods))
        },
    )
    .await?;
    let ran_after = created.elapsed();
    let mut per_node: BTreeMap<String, i32> = BTreeMap::new();
    for pod in &pods {
        let pod = serde_json::to_value(pod)?;
        let spec = &pod["spec"];
        let node = spec["nodeName"].as_str().unwrap_or_default().to_string();
        assert_eq!(spec["schedulingGates"], Value::Null, "{pod}");
        assert_eq!(
            spec["nodeSelector"],
            json!({"cloud.provider.com/node-group": "tas-group", HOST: node}),
            "the flavor's label and the pod's node, as the server stored them"
        );
        assert!(
            ["Running", "Succeeded"].contains(&pod["status"]["phase"].as_str().unwrap_or("")),
            "{}",
            pod["status"]
        );
        *per_node.entry(node).or_default() += 1;
    }
    assert_eq!(per_node, placed, "each pod runs where it was assigned");

    // Twenty pods need 20 CPUs in one rack, which has 16: no rack holds them.
    let mut big: Value = serde_saphyr::from_str(SAMPLE_JOB_REQUIRED)?;
    big["spec"]["parallelism"] = json!(20);
    big["spec"]["completions"] = json!(20);
    let out = plane.kubectl(
        &["create", "-f", "-", "-o", "json"],
        Some(&serde_json::to_string(&big)?),
    )?;
    let big: Job = serde_json::from_str(&out)?;
    // A rack holds 16 (the other rack's, whether or not the first Job's pods still run), in
    // Kueue's words. Waited for rather than read once: a pending Workload's message is
    // rewritten as what the cluster holds changes (the first Job's pods ending).
    const FITS_16: &str = r#"couldn't assign flavors to pod set main: topology "default" allows to fit only 16 out of 20 pod(s)."#;
    until(
        "the twenty-pod Job's Workload pending for its topology",
        &mut wasq,
        async |seen| {
            let wl = workload_of(&client, &big).await?;
            *seen = format!("{wl:?}");
            Ok(wl.filter(|w| {
                let reserved = condition_of(w, "QuotaReserved");
                condition(w, "QuotaReserved", "False")
                    && reserved["reason"] == "TopologyPlacementFailed"
                    && reserved["message"]
                        .as_str()
                        .is_some_and(|m| m.starts_with(FITS_16))
            }))
        },
    )
    .await?;
    assert_eq!(wasq.warnings(), Vec::<String>::new());
    eprintln!(
        "set-up {:.1}s; from the Job's creation: admitted {:.1}s, its pods run {:.1}s",
        set_up_took.as_secs_f64(),
        admitted_after.as_secs_f64(),
        ran_after.as_secs_f64()
    );
    Ok(())
}
