//! TAS flavors that share nodes: random inventories where several flavors select the same
//! nodes (the same labels, one with a taint; a subset of racks; another Topology over the same
//! hosts), random TAS workloads of random priorities in two ClusterQueues that preempt, and the
//! placement and preemption policies swapped between the built-in and the `kueue-default-*`
//! plugins every few cycles, as a hot reload swaps them. After every cycle no node holds pods
//! requesting more than its allocatable (any resource, `pods` included), each flavor's leaf usage
//! is what its admissions placed, and quota usage is what the admissions hold.

use std::collections::BTreeMap;

use wasq::policy::PolicySet;
use wasq::sim::{EventType, Limits, Scenario, Simulation};

use super::plugins::{bindings, plugins};
use super::rng::Rng;
use super::topology::{assert_usage_is_what_is_held, held_placements};

/// A random inventory of `racks` × `nodes` hosts and the flavors over it.
fn scenario(seed: u64) -> String {
    let mut rng = Rng(seed);
    let racks = 2 + rng.next(2);
    let nodes = 2 + rng.next(3);
    let gpus = 4 + 4 * rng.next(2);
    let pods = 3 + rng.next(8);
    let mut text = format!(
        "apiVersion: sim.wasq.dev/v1alpha1
kind: NodeInventory
metadata: {{name: gpus}}
spec:
  topology: racks
  racks: {racks}
  nodesPerRack: {nodes}
  labels: {{gpu: a100}}
  allocatable: {{cpu: '16', nvidia.com/gpu: '{gpus}', pods: '{pods}'}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {{name: hosts}}
spec:
  levels:
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: a100}}
spec: {{nodeLabels: {{gpu: a100}}, topologyName: racks}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: a100-reserved}}
spec:
  nodeLabels: {{gpu: a100}}
  nodeTaints: [{{key: reserved, value: 'true', effect: NoSchedule}}]
  topologyName: racks
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: rack-zero}}
spec: {{nodeLabels: {{cloud.wasq.dev/rack: r0}}, topologyName: hosts}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: cq-1}}
spec:
  namespaceSelector: {{}}
  preemption: {{withinClusterQueue: LowerPriority}}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: a100
      resources:
      - {{name: cpu, nominalQuota: 1000}}
      - {{name: nvidia.com/gpu, nominalQuota: {quota}}}
    - name: a100-reserved
      resources:
      - {{name: cpu, nominalQuota: 1000}}
      - {{name: nvidia.com/gpu, nominalQuota: 1000}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: cq-2}}
spec:
  namespaceSelector: {{}}
  preemption: {{withinClusterQueue: LowerPriority}}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: rack-zero
      resources:
      - {{name: cpu, nominalQuota: 1000}}
      - {{name: nvidia.com/gpu, nominalQuota: 1000}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: lq-1, namespace: default}}
spec: {{clusterQueue: cq-1}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: lq-2, namespace: default}}
spec: {{clusterQueue: cq-2}}
",
        // The first flavor's quota is a share of the GPUs, so that workloads spill over to the
        // second flavor on the same nodes.
        quota = gpus * nodes * racks / 2,
    );
    let requests = [
        "{required: cloud.wasq.dev/rack}",
        "{preferred: cloud.wasq.dev/rack}",
        "{required: kubernetes.io/hostname}",
        "{unconstrained: true}",
    ];
    for i in 0..30 {
        let queue = if rng.next(3) == 0 { "lq-2" } else { "lq-1" };
        // rack-zero's Topology has one level: ask it for hosts or nothing.
        let request = match queue {
            "lq-2" => requests[2 + rng.next(2) as usize],
            _ => requests[rng.next(requests.len() as u64) as usize],
        };
        // Every workload fits an empty rack (and one asking for a host, an empty host).
        let count = if request.contains("hostname") {
            1 + rng.next(2)
        } else {
            1 + rng.next(nodes)
        };
        let gpu = 1 + rng.next(gpus / 2);
        text.push_str(&format!(
            "---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: w{i}
  namespace: default
  annotations: {{sim.wasq.dev/arrival: {arrival}s, sim.wasq.dev/duration: {duration}s}}
spec:
  queueName: {queue}
  priority: {priority}
  podSets:
  - name: main
    count: {count}
    topologyRequest: {request}
    template:
      spec:
        tolerations: [{{key: reserved, operator: Exists}}]
        containers:
        - name: c
          image: i
          resources:
            requests: {{cpu: '1', nvidia.com/gpu: '{gpu}'}}
",
            arrival = rng.next(300),
            duration = 30 + rng.next(300),
            priority = rng.next(4),
        ));
    }
    text
}

/// Per node, per resource: what the held placements of every flavor request there.
fn requested_per_node(sim: &Simulation) -> BTreeMap<String, BTreeMap<String, i64>> {
    let cluster = sim.cluster();
    let mut per_node: BTreeMap<String, BTreeMap<String, i64>> = BTreeMap::new();
    for p in held_placements(cluster) {
        let tree = &cluster.tas.get(p.flavor).expect("a TAS flavor").tree;
        for &(leaf, n) in &p.leaves {
            let node = node_of(tree, leaf as usize);
            for (c, per) in p.per_pod.iter().enumerate() {
                *per_node
                    .entry(node.clone())
                    .or_default()
                    .entry(tree.resources[c].clone())
                    .or_default() += i64::from(n) * per;
            }
        }
    }
    per_node
}

/// The node a leaf is, when leaves are nodes.
fn node_of(tree: &wasq::topology::DomainTree, leaf: usize) -> String {
    tree.node_leaf
        .iter()
        .find(|&(_, &l)| l == leaf)
        .map(|(n, _)| n.clone())
        .expect("leaves are nodes")
}

/// Each node's allocatable per resource, from every tree that has it.
fn allocatable(sim: &Simulation) -> BTreeMap<String, BTreeMap<String, i64>> {
    let mut out: BTreeMap<String, BTreeMap<String, i64>> = BTreeMap::new();
    for f in &sim.cluster().tas.flavors {
        for (node, &leaf) in &f.tree.node_leaf {
            for (c, r) in f.tree.resources.iter().enumerate() {
                let cap = f.tree.capacity.row(leaf)[c];
                let seen = out.entry(node.clone()).or_default().insert(r.clone(), cap);
                assert!(
                    seen.is_none_or(|s| s == cap),
                    "{node} {r}: {seen:?} vs {cap}"
                );
            }
        }
    }
    out
}

#[test]
fn no_node_shared_by_flavors_is_ever_over_committed_with_preemption_and_reloads() {
    let registry = plugins();
    let b = bindings(&[
        "placement=kueue-default-placement",
        "preemption=kueue-default-preemption",
    ]);
    let (mut preemptions, mut reserved, mut rack_zero) = (0, 0, 0);
    for seed in 1..=6 {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("shared.yaml");
        std::fs::write(&file, scenario(seed)).expect("written");
        let mut sim = Simulation::new(Scenario::load(&[file]).expect("loads"));
        let (plugged, per_cq) = registry
            .bind(&sim.scheduler.cluster, &b)
            .expect("bindings resolve");
        assert!(per_cq.is_empty());
        let allocatable = allocatable(&sim);
        for cycles in 1..5_000 {
            // A reload every seven cycles: the built-in and the plugins take turns.
            if cycles % 7 == 0 {
                let set = if cycles % 14 == 0 {
                    PolicySet::builtin()
                } else {
                    plugged.clone()
                };
                sim.scheduler.install_policies(set, Vec::new());
            }
            sim.run(
                &Limits {
                    max_cycles: Some(cycles),
                    ..Limits::default()
                },
                None,
            );
            for (node, used) in requested_per_node(&sim) {
                for (r, u) in used {
                    let cap = allocatable[&node][&r];
                    assert!(
                        u <= cap,
                        "seed {seed}, cycle {cycles}: node {node} over-committed in {r}: {u} > {cap}"
                    );
                }
            }
            assert_usage_is_what_is_held(sim.cluster(), &format!("seed {seed}, cycle {cycles}"));
            if sim.report().workloads.iter().all(|w| w.state == "finished") {
                break;
            }
        }
        let report = sim.report();
        let unfinished: Vec<_> = report
            .workloads
            .iter()
            .filter(|w| w.state != "finished")
            .map(|w| (&w.name, w.state))
            .collect();
        // Every workload fits an empty rack, so every one eventually runs.
        assert!(unfinished.is_empty(), "seed {seed}: {unfinished:?}");
        preemptions += report
            .events
            .iter()
            .filter(|e| e.kind == EventType::Preempted)
            .count();
        for e in &report.events {
            let Some(a) = &e.admission else {
                continue;
            };
            let a = serde_json::to_string(a).expect("serializes");
            reserved += usize::from(a.contains("a100-reserved"));
            rack_zero += usize::from(a.contains("rack-zero"));
        }
    }
    // The cases did what they are for: workloads on every flavor, preemptions among them.
    assert!(preemptions > 0, "no preemption happened");
    assert!(reserved > 0, "nothing spilled over to the second flavor");
    assert!(rack_zero > 0, "nothing ran on the subset flavor");
}
