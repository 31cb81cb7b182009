//! Topology-aware scheduling end to end on the simulator: the example's story with Kueue's
//! pending message, capacity given back when a workload finishes, and the invariant that no
//! leaf domain is ever over-committed.

use std::path::{Path, PathBuf};

use wasq::cluster::{Cluster, Holding, WorkloadId};
use wasq::sim::{EventType, Limits, Scenario, Simulation};
use wasq::topology::{LeafTable, PodSetPlacement};

use super::rng::Rng;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tas-racks.yaml")
}

#[test]
fn a_rack_required_job_waits_rather_than_span_and_starts_when_a_rack_frees() {
    let mut sim = Simulation::new(Scenario::load(&[example()]).unwrap());
    sim.run(&Limits::default(), None);
    let report = sim.report();
    let events_of = |name: &str, kind: EventType| -> Vec<(f64, Option<String>)> {
        report
            .events
            .iter()
            .filter(|e| e.kind == kind && e.workload.contains(name))
            .map(|e| (e.time, e.reason.clone()))
            .collect()
    };
    let waiting = events_of("train-required", EventType::Inadmissible);
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    assert_eq!(waiting[0].0, 60.0);
    assert_eq!(
        waiting[0].1.as_deref(),
        Some(
            r#"WaitingForQuota: couldn't assign flavors to pod set main: topology "racks" allows to fit only 6 out of 8 pod(s). Total nodes: 4; excluded: resource "nvidia.com/gpu": 2"#
        )
    );
    // Admitted when warmup-a finishes and gives r1 back (30m), not when capacity is merely
    // enough in total.
    let reserved = events_of("train-required", EventType::QuotaReserved);
    assert_eq!(reserved.iter().map(|e| e.0).collect::<Vec<_>>(), [1800.0]);
    let spans = |name: &str| {
        report
            .topology
            .placements
            .iter()
            .find(|p| p.workload.contains(name))
            .map(|p| {
                p.domains_per_level
                    .iter()
                    .map(|(_, n)| *n)
                    .collect::<Vec<_>>()
            })
    };
    assert_eq!(spans("train-required"), Some(vec![1, 1]));
    assert_eq!(spans("train-preferred"), Some(vec![2, 2]));
    assert_eq!(spans("warmup-a"), Some(vec![1, 2]));
    let rack = |name: &str| {
        report
            .topology
            .domains
            .iter()
            .find(|d| d.domain == name)
            .map(|d| d.utilisation_percent["nvidia.com/gpu"])
    };
    // r1: 10 GPUs for 30m, 6 for 20m, 8 for 20m of 16 GPUs over 50m.
    assert_eq!(rack("r1"), Some(72.5));
}

#[test]
fn pending_reasons_tell_never_fitting_from_not_fitting_now() {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/tas-flavors-and-capacity.yaml");
    let mut sim = Simulation::new(Scenario::load(&[file]).unwrap());
    sim.run(&Limits::default(), None);
    let reason = |name: &str| {
        sim.report()
            .events
            .iter()
            .find(|e| e.kind == EventType::Inadmissible && e.workload == format!("default/{name}"))
            .and_then(|e| e.reason.clone())
    };
    // Kueue's TestScheduleForTAS: the node can never hold both pods...
    assert_eq!(
        reason("foo-f").as_deref(),
        Some(
            r#"TopologyPlacementFailed: couldn't assign flavors to pod set one: topology "tas-single-level" allows to fit only 1 out of 2 pod(s)"#
        )
    );
    // ...while this one fits once bar-g is gone.
    assert_eq!(
        reason("foo-g").as_deref(),
        Some(
            r#"WaitingForQuota: couldn't assign flavors to pod set one: topology "tas-single-level" doesn't allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "cpu": 1"#
        )
    );
}

/// 40 random TAS workloads on 2 blocks × 2 racks × 3 nodes of 8 GPUs; with `preempt`, random
/// priorities in a ClusterQueue that preempts lower priorities (for quota and for topology:
/// the quota, 1000 GPUs, always fits).
pub(super) fn random_tas_scenario(seed: u64, preempt: bool) -> String {
    let mut rng = Rng(seed);
    let mut text = String::from(
        "apiVersion: sim.wasq.dev/v1alpha1
kind: NodeInventory
metadata: {name: gpus}
spec:
  topology: racks
  blocks: 2
  racks: 2
  nodesPerRack: 3
  labels: {gpu: a100}
  allocatable: {cpu: '16', nvidia.com/gpu: '8', pods: '110'}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100}
spec: {nodeLabels: {gpu: a100}, topologyName: racks}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: PREEMPTION}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: a100
      resources:
      - {name: cpu, nominalQuota: 1000}
      - {name: nvidia.com/gpu, nominalQuota: 1000}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: default}
spec: {clusterQueue: cq}
",
    );
    let requests = [
        "{required: cloud.wasq.dev/block}",
        "{required: cloud.wasq.dev/rack}",
        "{preferred: cloud.wasq.dev/rack}",
        "{unconstrained: true}",
        "{required: cloud.wasq.dev/rack, podSetSliceRequiredTopology: kubernetes.io/hostname, podSetSliceSize: 2}",
    ];
    text = text.replace(
        "PREEMPTION",
        if preempt { "LowerPriority" } else { "Never" },
    );
    for i in 0..40 {
        let priority = if preempt { rng.next(4) } else { 0 };
        let gpus = 1 + rng.next(2);
        let count = 2 * (1 + rng.next(6));
        let request = requests[rng.next(requests.len() as u64) as usize];
        let arrival = rng.next(600);
        let duration = 30 + rng.next(600);
        text.push_str(&format!(
            "---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: w{i}
  namespace: default
  annotations: {{sim.wasq.dev/arrival: {arrival}s, sim.wasq.dev/duration: {duration}s}}
spec:
  queueName: lq
  priority: {priority}
  podSets:
  - name: main
    count: {count}
    topologyRequest: {request}
    template:
      spec:
        containers:
        - name: c
          image: i
          resources:
            requests: {{cpu: '1', nvidia.com/gpu: '{gpus}'}}
"
        ));
    }
    text
}

#[test]
fn no_leaf_domain_is_ever_over_committed_and_usage_is_what_admissions_placed() {
    random_load_keeps_leaves_and_quota_exact(false);
}

#[test]
fn with_preemption_for_topology_no_leaf_is_over_committed_and_quota_recomputes() {
    random_load_keeps_leaves_and_quota_exact(true);
}

/// After every cycle of random loads: each leaf's usage is the sum of the placements held
/// (admitted or being evicted) and within its capacity; quota usage equals the usage
/// recomputed from the admissions; every workload eventually runs.
fn random_load_keeps_leaves_and_quota_exact(preempt: bool) {
    let mut preemptions = 0;
    for seed in [1, 2, 3] {
        let dir =
            std::env::temp_dir().join(format!("wasq-tas-{}-{seed}-{preempt}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("tas.yaml");
        std::fs::write(&file, random_tas_scenario(seed, preempt)).unwrap();
        let mut sim = Simulation::new(Scenario::load(&[file]).unwrap());
        let mut admitted_any = false;
        for cycles in 1..5_000 {
            sim.run(
                &Limits {
                    max_cycles: Some(cycles),
                    ..Limits::default()
                },
                None,
            );
            let cluster = sim.cluster();
            admitted_any |=
                assert_usage_is_what_is_held(cluster, &format!("seed {seed}, cycle {cycles}"));
            let f = &cluster.tas.flavors[0];
            for (leaf, used) in cluster.tas.leaf_usage(0).rows().enumerate() {
                for (c, &u) in used.iter().enumerate() {
                    assert!(
                        u <= f.tree.capacity.row(leaf)[c],
                        "seed {seed}: leaf {leaf} {} over-committed: {u} > {}",
                        f.tree.resources[c],
                        f.tree.capacity.row(leaf)[c]
                    );
                }
            }
            if sim.report().workloads.iter().all(|w| w.state == "finished") {
                break;
            }
        }
        assert!(admitted_any, "seed {seed}: nothing was placed");
        let report = sim.report();
        preemptions += report
            .events
            .iter()
            .filter(|e| e.kind == EventType::Preempted)
            .count();
        let unfinished: Vec<_> = report
            .workloads
            .iter()
            .filter(|w| w.state != "finished")
            .map(|w| (&w.name, w.state))
            .collect();
        // Every workload fits an empty domain of its level (at most 24 GPUs, a rack), so every
        // one eventually runs: capacity is given back when a workload finishes.
        assert!(unfinished.is_empty(), "seed {seed}: {unfinished:?}");
        std::fs::remove_dir_all(&dir).ok();
    }
    // The quota never runs out: every preemption is one for topology.
    if preempt {
        assert!(preemptions > 0, "no preemption for topology happened");
    } else {
        assert_eq!(preemptions, 0);
    }
}

/// Every TAS placement the cluster holds (admitted, or being evicted).
pub(super) fn held_placements(cluster: &Cluster) -> impl Iterator<Item = &PodSetPlacement> {
    (0..cluster.workloads.len()).flat_map(move |id| {
        match cluster.holding(WorkloadId(id as u32)) {
            Holding::Admitted(a) | Holding::Evicting(a) => a.pod_sets.as_slice(),
            _ => &[],
        }
        .iter()
        .filter_map(|ps| ps.topology.as_ref())
    })
}

/// Asserts that each TAS flavor's per-leaf usage is the sum of the placements held on it and
/// that quota usage is what the admissions hold; whether anything is placed.
pub(super) fn assert_usage_is_what_is_held(cluster: &Cluster, at: &str) -> bool {
    let mut placed = false;
    for (i, f) in cluster.tas.flavors.iter().enumerate() {
        let mut expected = vec![vec![0i64; f.tree.resources.len()]; f.tree.leaves.len()];
        for p in held_placements(cluster).filter(|p| p.flavor == f.flavor) {
            placed = true;
            for &(leaf, n) in &p.leaves {
                for (c, per) in p.per_pod.iter().enumerate() {
                    expected[leaf as usize][c] += i64::from(n) * per;
                }
            }
        }
        assert_eq!(
            cluster.tas.leaf_usage(i),
            &LeafTable::from(expected.as_slice()),
            "{at}, flavor {i}"
        );
    }
    let mut quota = cluster.tree.new_usage();
    for w in &cluster.workloads {
        if let Some(a) = cluster.admission(w.id) {
            let node = cluster.cq(a.cluster_queue).node;
            for &(fr, v) in &a.usage {
                cluster.tree.add_usage(&mut quota, node, fr, v);
            }
        }
    }
    assert!(quota == cluster.usage, "{at}: quota usage");
    placed
}

/// Runs a `tests/scenarios` file for `cycles` cycles and returns each workload's pending
/// reasons, in order.
fn pending_reasons(file: &str, cycles: Option<u64>) -> Vec<(String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(file);
    let mut sim = Simulation::new(Scenario::load(&[path]).unwrap());
    sim.run(
        &Limits {
            max_cycles: cycles,
            ..Limits::default()
        },
        None,
    );
    sim.report()
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventType::Inadmissible | EventType::Requeued))
        .map(|e| (e.workload.clone(), e.reason.clone().unwrap_or_default()))
        .collect()
}

#[test]
fn a_quota_fit_without_room_on_the_leaves_preempts_with_kueues_messages() {
    // Kueue's TestScheduleForTASPreemption "only low priority workload is preempted": the
    // preemptor waits for its victim, which then cannot preempt it back.
    assert_eq!(
        pending_reasons("tas-preempt-low-priority.yaml", None),
        [
            ("default/low-priority-admitted".to_string(), "Preempted".to_string()),
            (
                "default/foo".into(),
                r#"WaitingForPreemptedWorkloads: couldn't assign flavors to pod set one: topology "tas-single-level" doesn't allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "cpu": 1. Pending the preemption of 1 workload(s)"#.into()
            ),
            (
                "default/low-priority-admitted".into(),
                r#"WaitingForQuota: couldn't assign flavors to pod set one: topology "tas-single-level" doesn't allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "cpu": 1"#.into()
            ),
        ]
    );
    // "workload with equal priority awaits for other workloads to complete".
    assert_eq!(
        pending_reasons("tas-preempt-equal-priority-waits.yaml", Some(1)),
        [(
            "default/mid-priority-waiting".to_string(),
            r#"WaitingForQuota: couldn't assign flavors to pod set one: topology "tas-single-level" allows to fit only 1 out of 2 pod(s)"#.to_string()
        )]
    );
    // TestScheduleForTASCohorts "preempting workload without targets reserves capacity so that
    // lower priority workload cannot use it": b1, nominated on y1's free cpu, is computed
    // again on what a2 reserved.
    assert_eq!(
        pending_reasons("tas-preempt-no-victims-reserves-leaves.yaml", Some(1)),
        [
            (
                "default/a2".to_string(),
                r#"WaitingForQuota: couldn't assign flavors to pod set one: topology "tas-single-level" allows to fit only 3 out of 4 pod(s)"#.to_string()
            ),
            (
                "default/b1".into(),
                r#"WaitingForQuota: couldn't assign flavors to pod set one: topology "tas-single-level" doesn't allow to fit any of 3 pod(s). Total nodes: 1; excluded: resource "cpu": 1"#.into()
            ),
        ]
    );
}

#[test]
fn multi_layer_slices_that_cannot_form_report_every_layer() {
    // Kueue's TestScheduleForTAS "multi-layer topology: host slice rounding makes rack slice
    // impossible; NoFit".
    assert_eq!(
        pending_reasons("tas-multi-layer-slices-rounding.yaml", Some(1)),
        [(
            "default/foo".to_string(),
            "TopologyPlacementFailed: couldn't assign flavors to pod set one: topology \"tas-three-level\" doesn't allow to fit; 0/1 slice(s) fit on level cloud.provider.com/rack; 2/3 slice(s) fit on level kubernetes.io/hostname".to_string()
        )]
    );
}

#[test]
fn podsets_that_never_fit_together_fail_placement_as_a_workload() {
    // Kueue's TestScheduleForTAS "workload with two PodSets exceeds node pods capacity".
    assert_eq!(
        pending_reasons("tas-two-pod-sets-exceed-node-pods.yaml", Some(1)),
        [(
            "default/foo".to_string(),
            r#"TopologyPlacementFailed: couldn't assign flavors to pod set two: topology "tas-single-level" doesn't allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "pods": 1"#.to_string()
        )]
    );
}

#[test]
fn a_node_two_flavors_share_is_given_out_once() {
    // TestSnapshot "overlapping flavors differing only in taints share the usage of their
    // node": x1 is full through the two flavors together, so `late` waits.
    let reasons = pending_reasons("tas-overlapping-flavors-differing-in-taints.yaml", Some(1));
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert_eq!(reasons[0].0, "default/late");
    assert!(
        reasons[0]
            .1
            .starts_with("WaitingForQuota: couldn't assign flavors to pod set main: "),
        "{reasons:?}"
    );
}

#[test]
fn a_second_preemptor_whose_targets_were_taken_preempts_others_in_the_same_cycle() {
    // TestScheduleForTASPreemption "preempting workload recomputes both overlapping preemption
    // targets and TAS topology assignment": after one cycle both preemptors wait for a victim
    // each.
    let message = r#"WaitingForPreemptedWorkloads: couldn't assign flavors to pod set one: topology "tas-single-level" doesn't allow to fit any of 1 pod(s). Total nodes: 2; excluded: resource "cpu": 2. Pending the preemption of 1 workload(s)"#;
    let mut told = pending_reasons("tas-two-preemptors-recompute-targets.yaml", Some(1));
    told.retain(|(_, reason)| reason != "Preempted");
    assert_eq!(
        told,
        [
            ("default/wl-high-1".to_string(), message.to_string()),
            ("default/wl-high-2".to_string(), message.to_string()),
        ]
    );
}
