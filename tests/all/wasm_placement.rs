//! The placement extension point through WASM: `kueue-default-placement` decides exactly like
//! the built-in, request by request and on every TAS scenario; hostile answers, traps and
//! timeouts are refused or contained and the built-in decides, counted as fallbacks; and
//! `pack-by-rack` differs from the built-in where it means to.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Node, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use wasq::api::topology::{HOSTNAME_LABEL, PodSetTopologyRequest, SliceTopologyConstraint};
use wasq::cluster::{CqId, WorkloadId};
use wasq::policy::{PlacementAnswer, PlacementChoiceRequest, PlacementPolicy, builtin};
use wasq::quota::FlavorId;
use wasq::sim::{EventType, Report, Scenario, Simulation};
use wasq::topology::{Constraint, DomainTree, Exclusions, PlacementRequest, ResolveConstraint};
use wasq::wasm::{HostOptions, Registry, WasmPlacement};

use super::plugins::{bindings, built, plugins, registry, run, test_options};
use super::rng::Rng;

const KUEUE: &str = "placement=kueue-default-placement";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every scenario file of the repository with a TAS flavor (`topologyName`): the scenario
/// suite, the plugin scenarios and the examples.
fn tas_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["tests/scenarios", "tests/plugin-scenarios", "examples"] {
        let Ok(entries) = std::fs::read_dir(root().join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "yaml")
                && std::fs::read_to_string(&p).is_ok_and(|t| t.contains("topologyName:"))
            {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// The generated TAS scenarios of `topology.rs` (every kind of request, slices included),
/// written to a temporary directory.
fn generated(dir: &Path, seeds: std::ops::RangeInclusive<u64>) -> Vec<PathBuf> {
    seeds
        .map(|seed| {
            let file = dir.join(format!("tas-{seed}.yaml"));
            std::fs::write(
                &file,
                super::topology::random_tas_scenario(seed, seed % 2 == 1),
            )
            .expect("write");
            file
        })
        .collect()
}

/// One admission's placement: time, workload, podSet, flavor, pods per leaf.
type PlacementRow = (u64, String, String, String, Vec<(u32, i32)>);

/// Each admission's placement.
fn placements(r: &Report) -> Vec<PlacementRow> {
    r.topology
        .placements
        .iter()
        .map(|p| {
            (
                p.time.to_bits(),
                p.workload.clone(),
                p.pod_set.clone(),
                p.flavor.clone(),
                p.leaves.clone(),
            )
        })
        .collect()
}

/// Events without the policy that decided (time, kind, workload, reason).
fn events(r: &Report) -> Vec<(u64, String, String, Option<String>)> {
    r.events
        .iter()
        .map(|e| {
            (
                e.time.to_bits(),
                format!("{:?}", e.kind),
                e.workload.clone(),
                e.reason.clone(),
            )
        })
        .collect()
}

fn fallbacks(r: &Report, extension: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for f in r
        .summary
        .fallbacks
        .iter()
        .filter(|f| f.extension == extension)
    {
        *out.entry(f.reason.clone()).or_default() += f.count;
    }
    out
}

#[test]
fn kueue_default_placement_decides_exactly_like_the_builtin_on_every_tas_scenario() {
    placement_parity_in(&plugins());
}

/// Every TAS scenario (and eight generated ones) natively and with `kueue-default-placement`
/// of `registry`: the same events and the same pods per node, every placement the plugin's.
pub(super) fn placement_parity_in(registry: &Registry) {
    let b = bindings(&[KUEUE]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut files = tas_files();
    assert!(
        files.iter().any(|f| f.ends_with("examples/tas-racks.yaml")) && files.len() >= 4,
        "{files:?}"
    );
    files.extend(generated(tmp.path(), 1..=8));
    let mut decided = 0;
    for path in &files {
        let native = run(path, None);
        let wasm = run(path, Some((registry, &b)));
        let name = path.display();
        assert_eq!(events(&native), events(&wasm), "{name}: events differ");
        assert_eq!(
            placements(&native),
            placements(&wasm),
            "{name}: placements differ"
        );
        assert!(fallbacks(&wasm, "placement").is_empty(), "{name}");
        // Every request crosses: podSet groups (with their leader) and multi-layer slices too.
        for p in &wasm.topology.placements {
            assert_eq!(
                &*p.placed_by.name, "kueue-default-placement",
                "{name}: {p:?}"
            );
            decided += 1;
        }
        for p in &native.topology.placements {
            assert_eq!(&*p.placed_by.name, "builtin");
        }
    }
    assert!(decided >= 100, "only {decided} placements");
    let status = registry.get("kueue-default-placement").unwrap().status();
    assert!(status.calls > 0 && status.failures.is_empty(), "{status:?}");
}

// ---------------------------------------------------------------------------------------------
// Request by request: random trees, usage, eligibility and constraints.

const BLOCK: &str = "cloud.wasq.dev/block";
const RACK: &str = "cloud.wasq.dev/rack";

fn node(block: u64, rack: u64, host: u64, cpu: u64, gpu: u64) -> Node {
    let labels = [
        (BLOCK, format!("b{block}")),
        (RACK, format!("r{rack}")),
        (HOSTNAME_LABEL, format!("b{block}-r{rack}-x{host}")),
    ];
    Node {
        metadata: ObjectMeta {
            name: Some(format!("b{block}-r{rack}-x{host}")),
            labels: Some(
                labels
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect(),
            ),
            ..ObjectMeta::default()
        },
        spec: None,
        status: Some(NodeStatus {
            allocatable: Some(
                [
                    ("cpu", cpu.to_string()),
                    ("nvidia.com/gpu", gpu.to_string()),
                    ("pods", "110".to_string()),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), Quantity(v)))
                .collect(),
            ),
            conditions: Some(vec![wasq::topology::tree::ready_condition()]),
            ..NodeStatus::default()
        }),
    }
}

/// A random placement question.
struct Question {
    tree: DomainTree,
    tr: PodSetTopologyRequest,
    free: Vec<Vec<i64>>,
    eligible: Vec<bool>,
    requests: Vec<(String, i64)>,
    /// A podSet group's leader: one pod's cpu and gpu.
    leader: Option<Vec<(String, i64)>>,
    count: i32,
    implied: bool,
}

/// One random placement question on a random tree (2 or 3 levels).
fn random_question(rng: &mut Rng) -> Question {
    let mut nodes = Vec::new();
    for b in 0..1 + rng.next(3) {
        for r in 0..1 + rng.next(3) {
            for x in 0..1 + rng.next(4) {
                nodes.push(node(b, r, x, 4 + 4 * rng.next(3), 8));
            }
        }
    }
    let levels: Vec<String> = if rng.next(3) == 0 {
        vec![BLOCK.into(), RACK.into()]
    } else {
        vec![BLOCK.into(), RACK.into(), HOSTNAME_LABEL.into()]
    };
    let tree = DomainTree::build("racks", &levels, &BTreeMap::new(), &nodes);
    // Free capacity: some of each leaf used.
    let free: Vec<Vec<i64>> = tree
        .capacity
        .rows()
        .map(|cap| {
            cap.iter()
                .map(|&c| c - (c * rng.next(4) as i64) / 4)
                .collect()
        })
        .collect();
    let eligible = (0..tree.leaves.len()).map(|_| rng.next(6) != 0).collect();
    let lowest = levels.last().cloned().unwrap();
    let level = levels[rng.next(levels.len() as u64) as usize].clone();
    let sliced = rng.next(4) == 0;
    // Multi-layer slices: racks of 4 pods, hosts of 2 (three levels only).
    let layered = sliced && levels.len() == 3 && rng.next(2) == 0;
    let slice_size = if layered { 4 } else { 2 };
    let count = if sliced {
        slice_size * (1 + rng.next(if layered { 3 } else { 6 }) as i32)
    } else {
        1 + rng.next(14) as i32
    };
    let mut tr = PodSetTopologyRequest::default();
    let mut implied = false;
    match rng.next(4) {
        0 => tr.required = Some(level),
        1 => tr.preferred = Some(level),
        2 => tr.unconstrained = Some(true),
        _ => implied = true,
    }
    if layered && !implied {
        tr.podset_slice_required_topology_constraints = [(RACK, 4), (HOSTNAME_LABEL, 2)]
            .into_iter()
            .map(|(t, size)| SliceTopologyConstraint {
                topology: t.into(),
                size,
            })
            .collect();
    } else if sliced && !implied {
        tr.pod_set_slice_required_topology = Some(lowest);
        tr.pod_set_slice_size = Some(slice_size);
    }
    let leader = (rng.next(3) == 0).then(|| {
        vec![
            ("cpu".to_string(), 1000 * (1 + rng.next(3) as i64)),
            ("nvidia.com/gpu".to_string(), 1000 * rng.next(2) as i64),
        ]
    });
    let requests = vec![
        ("cpu".to_string(), 1000 * (1 + rng.next(2) as i64)),
        ("nvidia.com/gpu".to_string(), 1000 * rng.next(3) as i64),
    ];
    Question {
        tree,
        tr,
        free,
        eligible,
        requests,
        leader,
        count,
        implied,
    }
}

#[test]
fn kueue_default_placement_answers_every_request_as_the_builtin() {
    let registry = plugins();
    let plugin = WasmPlacement(registry.get("kueue-default-placement").unwrap().clone());
    let example = root().join("examples/tas-racks.yaml");
    let sim = Simulation::new(Scenario::load(&[example]).unwrap());
    let cluster = &sim.scheduler.cluster;
    let mut rng = Rng(42);
    let (mut placed, mut no_fit, mut with_leader, mut multi_layer) = (0, 0, 0, 0);
    for case in 0..600 {
        let Question {
            tree,
            tr,
            free,
            eligible,
            requests,
            leader,
            count,
            implied,
        } = random_question(&mut rng);
        let Ok(constraint) =
            Constraint::resolve(&tree, Some(&tr).filter(|_| !implied), implied, count)
        else {
            continue;
        };
        let one_pod = |requests: &[(String, i64)]| {
            let mut per_pod = vec![0; tree.resources.len()];
            for (r, v) in requests {
                per_pod[tree.resource_index(r).unwrap()] += v;
            }
            per_pod[tree.resource_index("pods").unwrap()] += 1000;
            per_pod
        };
        let per_pod = one_pod(&requests);
        let leader = leader.as_deref().map(one_pod);
        let request = PlacementRequest {
            tree: &tree,
            free: free.into(),
            per_pod,
            missing: None,
            eligible,
            excluded: Exclusions::default(),
            count,
            constraint,
            leader,
        };
        let native = builtin::best_fit(&request);
        let wasm = plugin
            .place(&PlacementChoiceRequest {
                workload: WorkloadId(0),
                cluster_queue: CqId(0),
                pod_set: 0,
                flavor: FlavorId(0),
                placement: &request,
                cluster,
                now: 0,
            })
            .expect("the plugin answers");
        match (&native, &wasm) {
            (PlacementAnswer::Placed(a), PlacementAnswer::Placed(b)) => {
                assert_eq!(a, b, "case {case}: {tr:?} count {count}");
                placed += 1;
                with_leader += usize::from(a.leader.is_some());
                multi_layer += usize::from(constraint.multi_layer());
            }
            // The host appends the node exclusion counts to a plugin's message.
            (PlacementAnswer::NoFit(a), PlacementAnswer::NoFit(b)) => {
                assert!(
                    a == b || a.starts_with(&format!("{b}. Total nodes")),
                    "case {case}: {a:?} vs {b:?}"
                );
                no_fit += 1;
            }
            _ => panic!("case {case}: {tr:?} count {count}: {native:?} vs {wasm:?}"),
        }
    }
    assert!(
        placed > 200 && no_fit > 20,
        "{placed} placed, {no_fit} no fit"
    );
    assert!(
        with_leader > 40 && multi_layer > 20,
        "{with_leader} placed with a leader, {multi_layer} in slice layers"
    );
}

// ---------------------------------------------------------------------------------------------
// Hostile answers, traps and timeouts.

fn fixture_registry(answer: &str, deadline_ms: u64) -> Registry {
    let options = HostOptions {
        limits: wasq::wasm::Limits {
            deadline_ms,
            ..wasq::wasm::Limits::default()
        }
        .into(),
        settings: [(
            "fixture-placement".to_string(),
            vec![("answer".to_string(), answer.to_string())],
        )]
        .into_iter()
        .collect(),
        ..test_options()
    };
    registry(&built().fixtures, &options)
}

/// The example and one generated scenario with the fixture bound: the same decisions as the
/// built-in's, fallbacks counted under `reason`, and the refused placements attributed to the
/// built-in.
fn check_contained(answer: &str, reason: &str, deadline_ms: u64) {
    let registry = fixture_registry(answer, deadline_ms);
    let b = bindings(&["placement=fixture-placement"]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut files = vec![root().join("examples/tas-racks.yaml")];
    files.extend(generated(tmp.path(), 3..=3));
    let mut counted = 0;
    for path in &files {
        // Fresh health per run: the quarantine of one run must not hide the next's refusals.
        let registry = registry.fresh();
        let native = run(path, None);
        let wasm = run(path, Some((&registry, &b)));
        let name = path.display();
        assert_eq!(events(&native), events(&wasm), "{answer}: {name}");
        assert_eq!(placements(&native), placements(&wasm), "{answer}: {name}");
        let f = fallbacks(&wasm, "placement");
        assert!(
            f.get(reason).is_some_and(|&n| n > 0),
            "{answer}: {name}: {f:?}"
        );
        counted += f.values().sum::<u64>();
        // `outside-domain` answers as Kueue unless the level is required: those answers stand.
        let by_builtin = wasm
            .topology
            .placements
            .iter()
            .filter(|p| &*p.placed_by.name == "builtin")
            .count();
        if answer == "outside-domain" {
            assert!(by_builtin > 0, "{answer}: {name}");
        } else {
            assert_eq!(
                by_builtin,
                wasm.topology.placements.len(),
                "{answer}: {name}"
            );
        }
        let status = registry.get("fixture-placement").unwrap().status();
        assert!(
            status.failures.get(reason).is_some_and(|&n| n > 0),
            "{status:?}"
        );
    }
    assert!(counted > 0);
}

#[test]
fn hostile_placements_are_refused_and_the_builtin_decides() {
    for answer in ["over-capacity", "out-of-range", "duplicate", "too-few"] {
        check_contained(answer, "invalid-answer", 2_000);
    }
}

#[test]
fn a_placement_outside_the_required_domain_is_refused() {
    // The example's rack-required job spans racks in this answer.
    check_contained("outside-domain", "invalid-answer", 2_000);
}

#[test]
fn a_trapping_or_looping_placement_plugin_is_contained() {
    check_contained("trap", "trap", 2_000);
    check_contained("loop", "timeout", 10);
}

/// Without the setting the fixture answers as Kueue: the refusals above come from the answers,
/// not from the fixture itself.
#[test]
fn the_placement_fixture_is_harmless_when_told_nothing() {
    let registry = fixture_registry("", 2_000);
    let b = bindings(&["placement=fixture-placement"]);
    let path = root().join("examples/tas-racks.yaml");
    let wasm = run(&path, Some((&registry, &b)));
    assert!(fallbacks(&wasm, "placement").is_empty());
    assert_eq!(placements(&run(&path, None)), placements(&wasm));
}

// ---------------------------------------------------------------------------------------------
// An alternative placement.

/// `pack-by-rack` on its scenario: the gang spans fewer racks and nodes than Kueue places it,
/// and `--compare` shows it in its mean spans per level and in the admissions that differ.
#[test]
fn pack_by_rack_spans_fewer_racks_than_the_builtin_and_compare_shows_it() {
    let path = root().join("tests/plugin-scenarios/pack-by-rack.yaml");
    let registry = plugins();
    let b = bindings(&["placement=pack-by-rack"]);
    let spans = |r: &Report, name: &str| -> Vec<usize> {
        r.topology
            .placements
            .iter()
            .find(|p| p.workload.contains(name))
            .map(|p| p.domains_per_level.iter().map(|(_, n)| *n).collect())
            .unwrap_or_default()
    };
    let native = run(&path, None);
    let packed = run(&path, Some((&registry, &b)));
    assert_eq!(spans(&native, "train-gang"), [2, 3]);
    assert_eq!(spans(&packed, "train-gang"), [1, 2]);
    assert!(spans(&native, "train-rack").is_empty(), "waits for a rack");
    assert_eq!(spans(&packed, "train-rack"), [1, 2]);
    assert!(
        packed
            .events
            .iter()
            .any(|e| e.kind == EventType::Admitted && e.workload.contains("train-rack"))
    );

    let bin = env!("CARGO_BIN_EXE_wasq");
    let out = std::process::Command::new(bin)
        .arg("simulate")
        .arg(&path)
        .arg("--plugins")
        .arg(&built().plugins)
        .args(["--compare", "placement=builtin", "placement=pack-by-rack"])
        .output()
        .expect("wasq runs");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{table}");
    let row = |label: &str| {
        table
            .lines()
            .find(|l| l.starts_with(label))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
    };
    assert_eq!(
        row("mean span cloud.example.com/rack").as_deref(),
        Some("mean span cloud.example.com/rack 1.3 1.0 -0.3"),
        "{table}"
    );
    assert!(
        table.contains("spans cloud.example.com/rack=2,kubernetes.io/hostname=3")
            && table.contains("spans cloud.example.com/rack=1,kubernetes.io/hostname=2"),
        "{table}"
    );
}
