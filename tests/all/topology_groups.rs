//! PodSet groups (`kueue.x-k8s.io/podset-group-name`): a leader and its workers placed as one
//! request, end to end through the cycle. Translated from Kueue's `TestFindTopologyAssignments`
//! (`pkg/cache/scheduler/tas_cache_test.go`, "grouped podsets" / "two podsets with the same
//! group"): same nodes, requests and expected domains and counts, natively and through the
//! `kueue-default-placement` plugin. The tests that need non-TAS
//! pods on nodes, balanced placement or elastic workloads are not translated (wasq has none).

use std::fmt::Write;

use wasq::sim::{EventType, Limits, Scenario, Simulation};

const BLOCK: &str = "cloud.com/topology-block";
const RACK: &str = "cloud.com/topology-rack";
const HOST: &str = "kubernetes.io/hostname";

/// A node: name, its labels besides the hostname, cpu, GPUs (`example.com/gpu`).
type Node<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str, Option<&'a str>);

/// A podSet: name, its `topologyRequest` fields (flow style), cpu milli, GPUs, count.
type PodSet<'a> = (&'a str, &'a str, i64, i64, i32);

/// Runs one cycle and returns, per podSet, its domains (`values:count`, values joined by `/`),
/// or the pending message.
fn place(
    nodes: &[Node<'_>],
    levels: &[&str],
    pod_sets: &[PodSet<'_>],
) -> Result<Vec<String>, String> {
    let mut y = String::from(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\nmetadata: {name: default}\nspec:\n  levels:\n",
    );
    for l in levels {
        writeln!(y, "  - nodeLabel: {l}").unwrap();
    }
    y.push_str(
        "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: tas}\n\
         spec: {nodeLabels: {tas: node}, topologyName: default}\n\
         ---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\n\
         spec:\n  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [cpu, example.com/gpu]\n    \
         flavors:\n    - name: tas\n      resources:\n      - {name: cpu, nominalQuota: 1000}\n      \
         - {name: example.com/gpu, nominalQuota: 1000}\n\
         ---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: lq, namespace: default}\n\
         spec: {clusterQueue: cq}\n",
    );
    for &(name, labels, cpu, gpu) in nodes {
        write!(
            y,
            "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels: {{tas: node, {HOST}: {name}"
        )
        .unwrap();
        for (k, v) in labels {
            write!(y, ", {k}: {v}").unwrap();
        }
        write!(y, "}}\nstatus:\n  allocatable: {{cpu: '{cpu}', pods: '10'").unwrap();
        if let Some(g) = gpu {
            write!(y, ", example.com/gpu: '{g}'").unwrap();
        }
        y.push_str("}\n  conditions: [{type: Ready, status: 'True'}]\n");
    }
    y.push_str(
        "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: w, namespace: default}\n\
         spec:\n  queueName: lq\n  podSets:\n",
    );
    for &(name, request, cpu, gpu, count) in pod_sets {
        let mut requests = Vec::new();
        if cpu > 0 {
            requests.push(format!("cpu: '{cpu}m'"));
        }
        if gpu > 0 {
            requests.push(format!("example.com/gpu: '{gpu}'"));
        }
        write!(
            y,
            "  - name: {name}\n    count: {count}\n    topologyRequest: {{{request}, podSetGroupName: sameGroup}}\n    \
             template:\n      spec:\n        containers:\n        - name: c\n          image: i\n          \
             resources:\n            requests: {{{}}}\n",
            requests.join(", ")
        )
        .unwrap();
    }
    static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("wasq-groups-{}-{run}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("w.yaml");
    std::fs::write(&file, &y).unwrap();
    let scenario =
        || Scenario::load(std::slice::from_ref(&file)).unwrap_or_else(|e| panic!("{e}\n{y}"));
    let (native, _) = outcome(Simulation::new(scenario()));
    // The same question through the `kueue-default-placement` plugin (WIT 0.7.0 carries the
    // leader): the same answer, decided by the plugin.
    let mut sim = Simulation::new(scenario());
    std::fs::remove_dir_all(&dir).ok();
    let registry = super::plugins::plugins();
    let bindings = super::plugins::bindings(&["placement=kueue-default-placement"]);
    let (default, _) = registry
        .bind(&sim.scheduler.cluster, &bindings)
        .expect("bindings resolve");
    sim.scheduler.set_default_policies(default);
    let (wasm, placed_by) = outcome(sim);
    assert_eq!(native, wasm, "through WASM");
    assert!(
        native.is_err() || !placed_by.is_empty(),
        "an admission places its podSets"
    );
    assert!(
        placed_by.iter().all(|p| p == "kueue-default-placement"),
        "{placed_by:?}"
    );
    native
}

/// One cycle's outcome: per podSet its domains, or the pending message; and who placed each
/// podSet.
fn outcome(mut sim: Simulation) -> (Result<Vec<String>, String>, Vec<String>) {
    sim.run(
        &Limits {
            max_cycles: Some(1),
            ..Limits::default()
        },
        None,
    );
    let report = sim.report();
    let placed_by = report
        .topology
        .placements
        .iter()
        .map(|p| p.placed_by.name.to_string())
        .collect();
    let w = &report.workloads[0];
    let Some(a) = &w.admission else {
        let reason = report
            .events
            .iter()
            .find(|e| e.kind == EventType::Inadmissible)
            .and_then(|e| e.reason.clone())
            .unwrap_or_default();
        return (Err(reason), placed_by);
    };
    let domains = a
        .pod_set_assignments
        .iter()
        .map(|ps| {
            let domains = ps
                .topology_assignment
                .as_ref()
                .and_then(|t| t.domains())
                .unwrap_or_default();
            let placed: Vec<String> = domains
                .iter()
                .map(|d| format!("{}:{}", d.values.join("/"), d.count))
                .collect();
            format!("{} {}", ps.name, placed.join(","))
        })
        .collect();
    (Ok(domains), placed_by)
}

fn ok(lines: &[&str]) -> Result<Vec<String>, String> {
    Ok(lines.iter().map(|l| l.to_string()).collect())
}

#[test]
fn grouped_podsets_preserve_worker_capacity_when_placing_the_leader() {
    // "find topology assignment for grouped podsets preserves worker capacity when placing
    // leader": the leader goes where it costs the workers least (h3, 3 cpu: 1 worker left).
    let r1: &[(&str, &str)] = &[(RACK, "r1")];
    let nodes = [
        ("h1", r1, "2", None),
        ("h2", r1, "4", None),
        ("h3", r1, "3", None),
    ];
    assert_eq!(
        place(
            &nodes,
            &[RACK, HOST],
            &[
                ("leader", &format!("required: {RACK}"), 1000, 0, 1),
                ("workers", &format!("required: {RACK}"), 2000, 0, 4),
            ],
        ),
        ok(&["leader h3:1", "workers h1:1,h2:2,h3:1"])
    );
    // A leader that requests nothing (a LeaderWorkerSet leader) gets no flavor from quota; it
    // takes its group's TAS flavor (Kueue's `resolvePodSetFlavors`) and is placed with the
    // workers, here with the first workers' domain (h2: nothing to take from them).
    assert_eq!(
        place(
            &nodes,
            &[RACK, HOST],
            &[
                ("leader", &format!("required: {RACK}"), 0, 0, 1),
                ("workers", &format!("required: {RACK}"), 2000, 0, 4),
            ],
        ),
        ok(&["leader h2:1", "workers h1:1,h2:2,h3:1"])
    );
    // "... for sliced grouped podsets preserves worker capacity when placing leader".
    assert_eq!(
        place(
            &nodes,
            &[RACK, HOST],
            &[
                ("leader", &format!("required: {RACK}"), 1000, 0, 1),
                (
                    "workers",
                    &format!(
                        "required: {RACK}, podSetSliceRequiredTopology: {HOST}, podSetSliceSize: 2"
                    ),
                    1000,
                    0,
                    8
                ),
            ],
        ),
        ok(&["leader h3:1", "workers h1:2,h2:4,h3:2"])
    );
}

#[test]
fn grouped_podsets_on_one_level_and_below_the_slice_level() {
    // "... grouped podsets preserves leader below the slice level": the leader needs cpu,
    // the worker a GPU; each takes the host that has it.
    let r1: &[(&str, &str)] = &[(RACK, "r1")];
    let request =
        format!("required: {RACK}, podSetSliceRequiredTopology: {RACK}, podSetSliceSize: 1");
    assert_eq!(
        place(
            &[
                ("leader-host", r1, "1", None),
                ("worker-host", r1, "0", Some("1"))
            ],
            &[RACK, HOST],
            &[
                ("leader", &request, 1000, 0, 1),
                ("workers", &request, 0, 1, 1)
            ],
        ),
        ok(&["leader leader-host:1", "workers worker-host:1"])
    );
    // "... unconstrained grouped podsets spreads leader and worker across domains with
    // TASProfileMixed" (on by default in Kueue and wasq).
    assert_eq!(
        place(
            &[("h1", &[], "1", None), ("h2", &[], "0", Some("1"))],
            &[HOST],
            &[
                ("leader", "unconstrained: true", 1000, 0, 1),
                ("workers", "unconstrained: true", 0, 1, 1),
            ],
        ),
        ok(&["leader h1:1", "workers h2:1"])
    );
    // The preferred case before it: h1 (8 cpu) holds 4 workers, the leader and the 5th go to
    // h2 (3 cpu).
    assert_eq!(
        place(
            &[("h1", &[], "8", None), ("h2", &[], "3", None)],
            &[HOST],
            &[
                ("leader", &format!("preferred: {HOST}"), 1000, 0, 1),
                ("workers", &format!("preferred: {HOST}"), 2000, 0, 5),
            ],
        ),
        ok(&["leader h2:1", "workers h1:4,h2:1"])
    );
}

#[test]
fn two_podsets_of_one_group_share_the_tightest_domain_that_holds_both() {
    let block = |b: &'static str| -> &'static [(&'static str, &'static str)] {
        match b {
            "b1" => &[(BLOCK, "b1")],
            "b2" => &[(BLOCK, "b2")],
            _ => &[(BLOCK, "b3")],
        }
    };
    let required = format!("required: {BLOCK}");
    // "... with domains that can tightly fit leader and workers".
    assert_eq!(
        place(
            &[
                ("b1", block("b1"), "2", None),
                ("b2", block("b2"), "8", None),
                ("b3", block("b3"), "2", None)
            ],
            &[BLOCK],
            &[
                ("leader", &required, 1000, 0, 1),
                ("workers", &required, 1000, 0, 4)
            ],
        ),
        ok(&["leader b2:1", "workers b2:4"])
    );
    // "... optimizes domain for both leader and workers": b2 (4 cpu) holds the workers but
    // not the leader too.
    assert_eq!(
        place(
            &[
                ("b1", block("b1"), "11", None),
                ("b2", block("b2"), "4", None)
            ],
            &[BLOCK],
            &[
                ("leader", &required, 1000, 0, 1),
                ("workers", &required, 1000, 0, 4)
            ],
        ),
        ok(&["leader b1:1", "workers b1:4"])
    );
    // "... leader does not fit anywhere", with Kueue's message.
    assert_eq!(
        place(
            &[("b1", block("b1"), "4", None), ("b2", block("b2"), "4", None)],
            &[BLOCK],
            &[("leader", &required, 10000, 0, 1), ("workers", &required, 1000, 0, 4)],
        ),
        Err(r#"TopologyPlacementFailed: couldn't assign flavors to pod set workers: topology "default" allows to fit only 4 out of 4 pod(s)"#.to_string())
    );
}

#[test]
fn two_podsets_of_one_group_on_multiple_hosts() {
    // "... two podsets with the same group - multiple hosts": one GPU per node, one per worker;
    // the leader (2 cpu) takes a whole host of block b1, the workers two others.
    let b1r1: &[(&str, &str)] = &[(BLOCK, "b1"), (RACK, "r1")];
    let b2r4: &[(&str, &str)] = &[(BLOCK, "b2"), (RACK, "r4")];
    let b2r5: &[(&str, &str)] = &[(BLOCK, "b2"), (RACK, "r5")];
    let b2r6: &[(&str, &str)] = &[(BLOCK, "b2"), (RACK, "r6")];
    let required = format!("required: {BLOCK}");
    assert_eq!(
        place(
            &[
                ("x3", b1r1, "2", Some("1")),
                ("x5", b1r1, "2", Some("1")),
                ("x1", b1r1, "2", Some("1")),
                ("x6", b2r4, "1", Some("1")),
                ("x2", b2r5, "2", Some("1")),
                ("x4", b2r6, "2", Some("1")),
            ],
            &[BLOCK, RACK, HOST],
            &[
                ("leader", &required, 2000, 0, 1),
                ("workers", &required, 1000, 1, 2)
            ],
        ),
        ok(&["leader x1:1", "workers x3:1,x5:1"])
    );
}
