//! Topology-aware scheduling in the cluster, against the API server double: the controller
//! reads Topologies and Nodes, writes `topologyAssignment`, starts the job with Kueue's
//! topology gate, and releases each pod into its domain (Kueue's TopologyUngater); pods that
//! run outside TAS take node capacity; nodes that change rebuild only the TAS trees.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use wasq::k8s::sync::mirror::Source;

use super::{Env, KUEUE, T, counter, finish, job_wl, queue_label};

const HOST: &str = "kubernetes.io/hostname";

fn node(name: &str, rack: &str, ready: &str) -> (String, Value) {
    (
        format!("/api/v1/nodes/{name}"),
        json!({"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": name, "labels": {"rack": rack, HOST: name, "pool": "gpu"}},
               "status": {"allocatable": {"cpu": "4", "pods": "110"},
                          "conditions": [{"type": "Ready", "status": ready}]}}),
    )
}

/// Two racks of two 4-cpu nodes; a ClusterQueue with 100 cpu on the TAS flavor `tas`.
fn cluster() -> Vec<(String, Value)> {
    vec![
        (
            format!("{KUEUE}/topologies/racks"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
                   "metadata": {"name": "racks"},
                   "spec": {"levels": [{"nodeLabel": "rack"}, {"nodeLabel": HOST}]}}),
        ),
        (
            format!("{KUEUE}/resourceflavors/tas"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                   "metadata": {"name": "tas"},
                   "spec": {"nodeLabels": {"pool": "gpu"}, "topologyName": "racks"}}),
        ),
        (
            format!("{KUEUE}/clusterqueues/cq"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                   "metadata": {"name": "cq"},
                   "spec": {"namespaceSelector": {},
                            "resourceGroups": [{"coveredResources": ["cpu"],
                                "flavors": [{"name": "tas", "resources": [{"name": "cpu", "nominalQuota": "100"}]}]}]}}),
        ),
        (
            format!("{KUEUE}/namespaces/ns/localqueues/lq"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                   "metadata": {"name": "lq", "namespace": "ns"}, "spec": {"clusterQueue": "cq"}}),
        ),
        (
            "/api/v1/namespaces/ns".into(),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}),
        ),
        node("n1", "r1", "True"),
        node("n2", "r1", "True"),
        node("n3", "r2", "True"),
        node("n4", "r2", "True"),
    ]
}

/// A Job of `pods` pods of 2 cpu that must stay within one rack.
fn rack_job(name: &str, pods: i32) -> (String, Value) {
    (
        format!("/apis/batch/v1/namespaces/ns/jobs/{name}"),
        json!({"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": name, "namespace": "ns", "labels": queue_label(), "creationTimestamp": T},
               "spec": {"parallelism": pods, "completions": pods, "suspend": true,
                        "template": {
                            "metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": "rack"}},
                            "spec": {"restartPolicy": "Never",
                                "containers": [{"name": "c", "image": "busybox",
                                                "resources": {"requests": {"cpu": "2"}}}]}}}}),
    )
}

/// A running pod outside TAS on `node` requesting `cpu`.
fn other_pod(name: &str, node: &str, cpu: &str, phase: &str) -> (String, Value) {
    (
        format!("/api/v1/namespaces/ns/pods/{name}"),
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "ns"},
               "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox",
                        "resources": {"requests": {"cpu": cpu}}}]},
               "status": {"phase": phase}}),
    )
}

fn workload(env: &Env, job: &str) -> Value {
    env.api
        .get(&format!("{KUEUE}/namespaces/ns/workloads/{}", job_wl(job)))
        .expect("the job's Workload")
}

/// Pods per node of the Workload's first podSet assignment (empty when not admitted).
fn assignment(env: &Env, job: &str) -> BTreeMap<String, i64> {
    let wl = workload(env, job);
    let ta = &wl["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"];
    if ta.is_null() {
        return BTreeMap::new();
    }
    assert_eq!(ta["levels"], json!([HOST]));
    let ta: wasq::api::topology::TopologyAssignment = serde_json::from_value(ta.clone()).unwrap();
    ta.domains()
        .unwrap()
        .into_iter()
        .map(|d| (d.values[0].clone(), i64::from(d.count)))
        .collect()
}

fn rack_of(node: &str) -> &'static str {
    if node == "n1" || node == "n2" {
        "r1"
    } else {
        "r2"
    }
}

/// The pods the Job controller makes from the started Job's template.
fn create_pods(env: &mut Env, job: &str, pods: i32) {
    let started = env
        .api
        .get(&format!("/apis/batch/v1/namespaces/ns/jobs/{job}"))
        .unwrap();
    assert_eq!(started["spec"]["suspend"], false);
    let template = &started["spec"]["template"];
    for i in 0..pods {
        let name = format!("{job}-{i}");
        let path = format!("/api/v1/namespaces/ns/pods/{name}");
        let mut metadata = template["metadata"].clone();
        metadata["name"] = json!(name);
        metadata["namespace"] = json!("ns");
        env.api.put(
            &path,
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                   "spec": template["spec"], "status": {"phase": "Pending"}}),
        );
        env.applied(Source::TasPod, &path);
    }
}

/// The cluster with `extra` objects, listed and through one pass.
async fn started(extra: Vec<(String, Value)>) -> Env {
    let mut objects = cluster();
    objects.extend(extra);
    let mut env = Env::new(objects);
    env.list_all();
    env.step().await;
    env
}

/// A job created after start, as its watch event brings it.
fn add_job(env: &mut Env, (path, job): (String, Value)) {
    env.api.put(&path, job);
    let kind = env
        .controller
        .kinds()
        .iter()
        .position(|k| k.spec.kind == "Job")
        .unwrap();
    env.applied(Source::Job(kind), &path);
}

#[tokio::test]
async fn a_rack_job_is_placed_in_one_rack_and_each_pod_released_into_its_node() {
    let mut env = started(vec![rack_job("train", 4)]).await;

    // Admitted with its placement: four pods on the two nodes of one rack.
    let placed = assignment(&env, "train");
    assert_eq!(placed.values().sum::<i64>(), 4, "{placed:?}");
    assert_eq!(placed.len(), 2);
    let rack = rack_of(placed.keys().next().unwrap());
    assert!(placed.keys().all(|n| rack_of(n) == rack), "{placed:?}");
    // Its QuotaReserved Event names the placement policy of its one TAS podSet too.
    let reserved: Vec<Value> = env
        .api
        .objects("events.k8s.io/v1", "events")
        .into_iter()
        .filter(|e| e["reason"] == "QuotaReserved" && e["regarding"]["name"] == job_wl("train"))
        .collect();
    assert_eq!(
        reserved[0]["metadata"]["annotations"],
        json!({"policy.wasq.dev/ordering": "builtin",
               "policy.wasq.dev/flavor-assignment": "builtin",
               "policy.wasq.dev/placement": "builtin"})
    );

    // The job starts with Kueue's topology gate, podSet label and Workload annotation.
    let started = env
        .api
        .get("/apis/batch/v1/namespaces/ns/jobs/train")
        .unwrap();
    let template = &started["spec"]["template"];
    assert_eq!(
        template["spec"]["schedulingGates"],
        json!([{"name": "kueue.x-k8s.io/topology"}])
    );
    assert_eq!(
        template["metadata"]["labels"]["kueue.x-k8s.io/podset"],
        "main"
    );
    assert_eq!(
        template["metadata"]["annotations"]["kueue.x-k8s.io/workload"],
        job_wl("train")
    );

    // The Job controller makes the pods; the ungater releases each into a node of the
    // placement, as many per node as placed.
    create_pods(&mut env, "train", 4);
    env.step().await;
    let mut per_node: BTreeMap<String, i64> = BTreeMap::new();
    for i in 0..4 {
        let pod = env
            .api
            .get(&format!("/api/v1/namespaces/ns/pods/train-{i}"))
            .unwrap();
        assert_eq!(pod["spec"]["schedulingGates"], Value::Null, "{pod}");
        let node = pod["spec"]["nodeSelector"][HOST]
            .as_str()
            .unwrap()
            .to_string();
        // The flavor's node labels stay in the selector.
        assert_eq!(pod["spec"]["nodeSelector"]["pool"], "gpu");
        *per_node.entry(node).or_default() += 1;
    }
    assert_eq!(per_node, placed);
    assert_eq!(counter(&env, "wasq_tas_pods_ungated_total", ""), 4);

    // Nothing more to release: another pass patches no pod.
    env.api.clear_requests();
    env.applied(Source::TasPod, "/api/v1/namespaces/ns/pods/train-0");
    env.step().await;
    assert!(
        !env.writes().iter().any(|r| r.uri.contains("/pods/")),
        "{:?}",
        env.lines()
    );
}

#[tokio::test]
async fn pods_outside_tas_take_node_capacity_until_they_end() {
    // 3 of n1's and of n3's 4 cpu are taken by pods outside TAS: each rack holds only 2 pods
    // of 2 cpu (on n2 or n4), so a 4-pod rack job waits — it would fit on empty nodes.
    let mut env = started(vec![
        other_pod("web-1", "n1", "3", "Running"),
        other_pod("web-2", "n3", "3", "Running"),
        rack_job("train", 4),
    ])
    .await;
    assert!(assignment(&env, "train").is_empty());
    let wl = workload(&env, "train");
    let reserved = wl["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "QuotaReserved")
        .cloned()
        .unwrap();
    assert_eq!(reserved["status"], "False");
    assert!(
        reserved["message"].as_str().unwrap().contains("racks"),
        "{reserved}"
    );

    // web-1 ends: rack r1 is free again and the job is placed there.
    let path = "/api/v1/namespaces/ns/pods/web-1";
    env.api
        .modify(path, |p| p["status"]["phase"] = json!("Succeeded"));
    env.applied(Source::TasPod, path);
    env.step().await;
    let placed = assignment(&env, "train");
    assert_eq!(
        placed,
        BTreeMap::from([("n1".to_string(), 2), ("n2".to_string(), 2)])
    );
}

#[tokio::test]
async fn nodes_that_change_rebuild_the_trees_alone_and_placements_move_with_them() {
    let mut env = started(vec![rack_job("first", 4)]).await;
    let first = assignment(&env, "first");
    let taken = rack_of(first.keys().next().unwrap());
    let free_b = if taken == "r1" { "n4" } else { "n2" };

    // A heartbeat is not a change; a node of the free rack going NotReady is.
    env.api.modify(&format!("/api/v1/nodes/{free_b}"), |n| {
        n["status"]["conditions"][0]["lastHeartbeatTime"] = json!(T);
    });
    env.applied(Source::Node, &format!("/api/v1/nodes/{free_b}"));
    env.step().await;
    assert_eq!(counter(&env, "wasq_topology_rebuilds_total", ""), 0);

    env.api.modify(&format!("/api/v1/nodes/{free_b}"), |n| {
        n["status"]["conditions"][0]["status"] = json!("False");
    });
    env.applied(Source::Node, &format!("/api/v1/nodes/{free_b}"));
    add_job(&mut env, rack_job("second", 3));
    env.step().await;
    assert_eq!(counter(&env, "wasq_topology_rebuilds_total", ""), 1);
    // The trees were rebuilt without rebuilding the core.
    assert_eq!(
        counter(&env, "wasq_core_rebuilds_total", "reason=\"configuration\""),
        0
    );
    // `first` still holds its rack after the rebuild, and the other rack has one Ready node
    // (2 pods): `second` (3 pods in one rack) waits.
    let s = env.controller.scheduler().unwrap();
    let id = s
        .cluster
        .find_workload(&format!("ns/{}", job_wl("first")))
        .expect("registered");
    let held = s.cluster.admission(id).unwrap();
    assert!(
        held.pod_sets[0].topology.is_some(),
        "the placement moved to the new trees"
    );
    assert!(assignment(&env, "second").is_empty());

    // `first` finishes: its rack is free and `second` is placed there.
    finish(&mut env, &job_wl("first")).await;
    let second = assignment(&env, "second");
    assert_eq!(second.values().sum::<i64>(), 3);
    assert!(second.keys().all(|n| rack_of(n) == taken), "{second:?}");
}

#[tokio::test]
async fn a_failed_node_leaves_the_rest_of_its_placement_charged() {
    // `first` fills one rack, `other` the other.
    let mut env = started(vec![rack_job("first", 4), rack_job("other", 4)]).await;
    let first = assignment(&env, "first");
    assert_eq!(first.values().sum::<i64>(), 4);
    assert_eq!(assignment(&env, "other").values().sum::<i64>(), 4);
    let (down, up) = {
        let mut nodes = first.keys();
        (nodes.next().unwrap().clone(), nodes.next().unwrap().clone())
    };

    // One of `first`'s nodes goes NotReady: the trees are rebuilt without it.
    env.api.modify(&format!("/api/v1/nodes/{down}"), |n| {
        n["status"]["conditions"][0]["status"] = json!("False");
    });
    env.applied(Source::Node, &format!("/api/v1/nodes/{down}"));
    add_job(&mut env, rack_job("second", 2));
    env.step().await;
    assert_eq!(counter(&env, "wasq_topology_rebuilds_total", ""), 1);
    // `first`'s pods on its other node still hold it: `second` has no room anywhere.
    assert!(assignment(&env, "second").is_empty());
    let s = env.controller.scheduler().unwrap();
    let id = s
        .cluster
        .find_workload(&format!("ns/{}", job_wl("first")))
        .expect("registered");
    let held = s.cluster.admission(id).unwrap().pod_sets[0]
        .topology
        .clone()
        .expect("the healthy node stays charged");
    let tree = &s.cluster.tas.get(held.flavor).unwrap().tree;
    let leaves: Vec<(String, i32)> = held
        .leaves
        .iter()
        .map(|&(l, n)| {
            let d = tree.leaves[l as usize];
            (tree.domain(d).values.last().unwrap().clone(), n)
        })
        .collect();
    assert_eq!(leaves, [(up, 2)]);
}

/// A pod of group `g` (2 pods) that must stay in one rack, gated as the webhook gates it.
fn rack_pod(name: &str) -> (String, Value) {
    (
        format!("/api/v1/namespaces/ns/pods/{name}"),
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "ns", "creationTimestamp": T,
                            "labels": {"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/pod-group-name": "g"},
                            "annotations": {"kueue.x-k8s.io/pod-group-total-count": "2",
                                            "kueue.x-k8s.io/podset-required-topology": "rack"}},
               "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"},
                                            {"name": "kueue.x-k8s.io/topology"}],
                        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "3"}}}]}}),
    )
}

#[tokio::test]
async fn a_pod_group_placed_by_tas_is_released_then_ungated_into_its_domains() {
    let mut env = started(vec![rack_pod("p0"), rack_pod("p1")]).await;
    let wl = env
        .api
        .get(&format!("{KUEUE}/namespaces/ns/workloads/g"))
        .expect("the group's Workload");
    let ta: wasq::api::topology::TopologyAssignment = serde_json::from_value(
        wl["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"].clone(),
    )
    .expect("placed by TAS");
    // 3 cpu each: one pod per node, both nodes of one rack.
    let nodes: Vec<String> = ta
        .domains()
        .unwrap()
        .into_iter()
        .map(|d| d.values[0].clone())
        .collect();
    assert_eq!(nodes.len(), 2);
    assert_eq!(rack_of(&nodes[0]), rack_of(&nodes[1]));
    // Released from admission — labelled with the podSet and the Workload, the topology gate
    // kept for the ungater ...
    for p in ["p0", "p1"] {
        let pod = env
            .api
            .get(&format!("/api/v1/namespaces/ns/pods/{p}"))
            .unwrap();
        assert_eq!(
            pod["spec"]["schedulingGates"],
            json!([{"name": "kueue.x-k8s.io/topology"}]),
            "{pod}"
        );
        assert_eq!(pod["metadata"]["labels"]["kueue.x-k8s.io/podset"], "main");
    }
    // ... which releases each into a node of the placement, one per node, at the next pass
    // (the pods' watch events).
    env.step().await;
    let mut seen = Vec::new();
    for p in ["p0", "p1"] {
        let pod = env
            .api
            .get(&format!("/api/v1/namespaces/ns/pods/{p}"))
            .unwrap();
        assert_eq!(pod["spec"]["schedulingGates"], Value::Null, "{pod}");
        assert_eq!(
            pod["metadata"]["annotations"]["kueue.x-k8s.io/workload"],
            "g"
        );
        seen.push(
            pod["spec"]["nodeSelector"][HOST]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    seen.sort();
    let mut expected = nodes.clone();
    expected.sort();
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn pods_with_completion_indexes_are_released_by_rank() {
    let mut env = started(vec![rack_job("train", 4)]).await;
    // The Job kind names Kueue's pod index label in the Workload's topology request.
    let wl = workload(&env, "train");
    assert_eq!(
        wl["spec"]["podSets"][0]["topologyRequest"]["podIndexLabel"],
        "batch.kubernetes.io/job-completion-index"
    );
    let ta: wasq::api::topology::TopologyAssignment = serde_json::from_value(
        wl["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"].clone(),
    )
    .unwrap();
    // Ranks 0 and 1 belong to the first domain, 2 and 3 to the second.
    let domains: Vec<String> = ta
        .domains()
        .unwrap()
        .into_iter()
        .flat_map(|d| std::iter::repeat_n(d.values[0].clone(), d.count as usize))
        .collect();
    create_pods(&mut env, "train", 4);
    // Pod `train-i` runs completion index 3 - i: names and ranks disagree.
    for i in 0..4 {
        let path = format!("/api/v1/namespaces/ns/pods/train-{i}");
        env.api.modify(&path, |p| {
            p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] =
                json!((3 - i).to_string());
        });
        env.applied(Source::TasPod, &path);
    }
    env.step().await;
    for i in 0..4 {
        let pod = env
            .api
            .get(&format!("/api/v1/namespaces/ns/pods/train-{i}"))
            .unwrap();
        assert_eq!(
            pod["spec"]["nodeSelector"][HOST],
            domains[3 - i].as_str(),
            "train-{i} has rank {}",
            3 - i
        );
    }
}

#[tokio::test]
async fn a_restarted_controller_restores_placements_from_the_cluster() {
    let env = started(vec![rack_job("first", 4)]).await;
    let first = assignment(&env, "first");
    let taken = rack_of(first.keys().next().unwrap());

    // A new controller on the same cluster: the placement comes back from
    // `topologyAssignment`, nothing is written again, and a second rack job goes to the other
    // rack.
    let mut restarted = Env::new(env.api.all());
    restarted.list_all();
    restarted.step().await;
    assert!(
        !restarted
            .writes()
            .iter()
            .any(|r| r.uri.contains("/workloads/")),
        "{:?}",
        restarted.lines()
    );
    add_job(&mut restarted, rack_job("second", 4));
    restarted.step().await;
    let second = assignment(&restarted, "second");
    assert_eq!(second.values().sum::<i64>(), 4);
    assert!(second.keys().all(|n| rack_of(n) != taken), "{second:?}");
}
