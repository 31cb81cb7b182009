//! Parity: the whole scenario suite run with the three kueue-default WASM plugins makes exactly
//! the built-in decisions — same events at the same times, same final state — and every
//! decision is attributed to the plugin that made it.

use wasq::sim::{EventType, Report};
use wasq::wasm::Bindings;

use super::plugins::{plugins, run};
use super::scenarios::{outcome_lines, scenario_files};

fn bindings(specs: &[&str]) -> Bindings {
    let mut b = Bindings::default();
    for spec in specs {
        b.set(spec).expect("valid binding");
    }
    b
}

pub(super) const ORDERING: &str = "ordering=kueue-default-ordering";
pub(super) const PREEMPTION: &str = "preemption=kueue-default-preemption";
pub(super) const FLAVORS: &str = "flavor-assignment=kueue-default-flavors";

#[test]
fn kueue_default_plugins_decide_exactly_like_the_builtin() {
    check_parity(&[ORDERING, PREEMPTION, FLAVORS], 50);
}

/// The ordering port on its own (fair sharing's tournament and admission fair sharing's keys
/// included), with the built-in preemption: every scenario, whatever the state of the
/// preemption port.
#[test]
fn kueue_default_ordering_and_flavors_decide_exactly_like_the_builtin() {
    check_parity(&[ORDERING, FLAVORS], 40);
}

/// Runs every scenario natively and with `specs` bound, and checks that both decide the same,
/// and that the plugins made at least `min_decisions` of the admissions and preemptions.
fn check_parity(specs: &[&str], min_decisions: usize) {
    check_parity_in(&plugins(), specs, min_decisions);
}

/// [`check_parity`] with the plugins of `registry` (the compatibility corpus, `compat.rs`).
pub(super) fn check_parity_in(
    registry: &wasq::wasm::Registry,
    specs: &[&str],
    min_decisions: usize,
) {
    let bindings = bindings(specs);
    let files = scenario_files();
    let mut differences = Vec::new();
    let mut plugin_decisions = 0;
    for path in &files {
        let native = run(path, None);
        let wasm = run(path, Some((registry, &bindings)));
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if let Some(d) = difference(&native, &wasm) {
            differences.push(format!("{name}: {d}"));
            continue;
        }
        // Admissions are decided by the ordering or flavor plugin, preemptions by the
        // preemption plugin: each must name a plugin when that one is bound.
        let preemption_bound = specs.contains(&PREEMPTION);
        for e in wasm.events.iter().filter(|e| match e.kind {
            EventType::Admitted => true,
            EventType::Preempted => preemption_bound,
            _ => false,
        }) {
            assert_ne!(
                &*e.policy.name, "builtin",
                "{name}: event {e:?} attributed to the built-in although plugins were bound"
            );
            assert!(e.policy.digest.starts_with("sha256:"), "{e:?}");
            plugin_decisions += 1;
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {} scenarios differ:\n{}",
        differences.len(),
        files.len(),
        differences.join("\n")
    );
    assert!(
        plugin_decisions >= min_decisions,
        "only {plugin_decisions} decisions"
    );
    for p in registry.plugins() {
        let status = p.status();
        let name = &p.info().name;
        if specs.iter().any(|s| s.ends_with(&format!("={name}"))) {
            assert!(status.failures.is_empty(), "{name}: {status:?}");
            assert!(status.calls > 0, "{name} never called");
        }
    }
}

/// How two runs of one scenario differ, if they do: the final outcome, or the event sequence
/// (times, cycles, kinds, workloads, reasons, preemptors).
fn difference(native: &Report, wasm: &Report) -> Option<&'static str> {
    if outcome_lines(native) != outcome_lines(wasm) {
        return Some("final outcome differs");
    }
    let strip = |r: &Report| {
        r.events
            .iter()
            .map(|e| {
                (
                    e.time.to_bits(),
                    e.cycle,
                    format!("{:?}", e.kind),
                    e.workload.clone(),
                    e.reason.clone(),
                    e.preemptor.clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    (strip(native) != strip(wasm)).then_some("event sequence differs")
}

/// A small deterministic pseudo-random source (xorshift64*) for generated scenarios.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, options: &[&'a str]) -> &'a str {
        options[self.below(options.len() as u64) as usize]
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A generated scenario: fair sharing (`fair`) and/or admission fair sharing (`afs`) on a
/// two-level cohort tree (root → left, right; ClusterQueues under each and under the root)
/// plus one ClusterQueue without a cohort; two flavors of cpu and gpu with random nominal
/// quotas, borrowing and lending limits, fair-sharing weights (0 included), preemption
/// settings, queueing strategies and admission scopes; two LocalQueues per ClusterQueue with
/// random weights; workloads arriving over ten minutes with random sizes, priorities and
/// durations.
pub fn generated_scenario(seed: u64, fair: bool, afs: bool) -> String {
    let mut r = Rng::new(seed);
    let mut y = format!(
        "# generated: seed {seed}, fair sharing {fair}, admission fair sharing {afs}\n# wasq-test: --until 30m --max-cycles-per-instant 100\n"
    );
    if fair || afs {
        y.push_str("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n");
        if fair {
            let strategies = r.pick(&[
                "[LessThanOrEqualToFinalShare, LessThanInitialShare]",
                "[LessThanOrEqualToFinalShare]",
                "[LessThanInitialShare]",
            ]);
            y.push_str(&format!(
                "fairSharing:\n  preemptionStrategies: {strategies}\n"
            ));
        }
        if afs {
            let half_life = r.pick(&["1m", "5m", "30s", "0s"]);
            let sampling = r.pick(&["10s", "30s", "1m"]);
            let cpu = r.pick(&["1", "2", "0.5"]);
            let gpu = r.pick(&["1", "4", "0.25"]);
            y.push_str(&format!(
                "admissionFairSharing:\n  usageHalfLifeTime: {half_life}\n  usageSamplingInterval: {sampling}\n  resourceWeights: {{cpu: {cpu}, nvidia.com/gpu: {gpu}}}\n"
            ));
        }
        y.push_str("---\n");
    }
    for flavor in ["default", "spot"] {
        y.push_str(&format!(
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {{name: {flavor}}}\n---\n"
        ));
    }
    let weights = ["0", "0.5", "1", "1", "2", "3"];
    let root_quota = if r.chance(50) {
        format!(
            "  resourceGroups:\n  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n    - name: default\n      resources:\n      - {{name: cpu, nominalQuota: {}}}\n      - {{name: nvidia.com/gpu, nominalQuota: {}}}\n    - name: spot\n      resources:\n      - {{name: cpu, nominalQuota: 0}}\n      - {{name: nvidia.com/gpu, nominalQuota: 0}}\n",
            r.below(6),
            r.below(3)
        )
    } else {
        String::new()
    };
    y.push_str(&format!(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {{name: root}}\nspec:\n{root_quota}  fairSharing: {{weight: '1'}}\n---\n"
    ));
    for cohort in ["left", "right"] {
        let w = r.pick(&weights);
        y.push_str(&format!(
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {{name: {cohort}}}\nspec:\n  parentName: root\n  fairSharing: {{weight: '{w}'}}\n---\n"
        ));
    }
    let queues = [
        ("a", Some("left")),
        ("b", Some("left")),
        ("c", Some("right")),
        ("d", Some("right")),
        ("e", Some("root")),
        ("solo", None),
    ];
    for (cq, cohort) in queues {
        let mut spec = String::from("  namespaceSelector: {}\n");
        if let Some(c) = cohort {
            spec.push_str(&format!("  cohortName: {c}\n"));
        }
        spec.push_str(&format!(
            "  queueingStrategy: {}\n",
            r.pick(&["BestEffortFIFO", "BestEffortFIFO", "StrictFIFO"])
        ));
        spec.push_str(&format!(
            "  preemption: {{withinClusterQueue: {}, reclaimWithinCohort: {}}}\n",
            r.pick(&["Never", "LowerPriority", "LowerOrNewerEqualPriority"]),
            r.pick(&["Never", "LowerPriority", "Any"])
        ));
        spec.push_str(&format!(
            "  fairSharing: {{weight: '{}'}}\n",
            r.pick(&weights)
        ));
        if afs && r.chance(70) {
            spec.push_str("  admissionScope: {admissionMode: UsageBasedAdmissionFairSharing}\n");
        }
        spec.push_str(
            "  resourceGroups:\n  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n",
        );
        for flavor in ["default", "spot"] {
            spec.push_str(&format!("    - name: {flavor}\n      resources:\n"));
            for (resource, max) in [("cpu", 7), ("nvidia.com/gpu", 3)] {
                let nominal = r.below(max);
                let mut line = format!("      - {{name: {resource}, nominalQuota: {nominal}");
                if cohort.is_some() && r.chance(30) {
                    line.push_str(&format!(", borrowingLimit: {}", r.below(4)));
                }
                if cohort.is_some() && nominal > 0 && r.chance(30) {
                    line.push_str(&format!(", lendingLimit: {}", r.below(nominal + 1)));
                }
                line.push_str("}\n");
                spec.push_str(&line);
            }
        }
        y.push_str(&format!(
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: {cq}}}\nspec:\n{spec}---\n"
        ));
        for lq in 0..2 {
            y.push_str(&format!(
                "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {{namespace: default, name: {cq}-{lq}}}\nspec:\n  clusterQueue: {cq}\n  fairSharing: {{weight: '{}'}}\n---\n",
                r.pick(&["1", "1", "2", "0.5", "0"])
            ));
        }
    }
    let n = 30 + r.below(30);
    for i in 0..n {
        let (cq, _) = queues[r.below(queues.len() as u64) as usize];
        let lq = r.below(2);
        let arrival = r.below(600);
        let mut annotations = format!("sim.wasq.dev/arrival: {arrival}s");
        if r.chance(90) {
            annotations.push_str(&format!(", sim.wasq.dev/duration: {}s", 20 + r.below(280)));
        }
        let gpu = if r.chance(40) { r.below(3) } else { 0 };
        y.push_str(&format!(
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata:\n  namespace: default\n  name: w{i}\n  annotations: {{{annotations}}}\nspec:\n  queueName: {cq}-{lq}\n  priority: {}\n  podSets:\n  - name: main\n    count: {}\n    template:\n      spec:\n        restartPolicy: Never\n        containers:\n        - name: c\n          image: pause\n          resources:\n            requests: {{cpu: '{}', nvidia.com/gpu: '{gpu}'}}\n---\n",
            r.pick(&["0", "0", "1", "2", "5"]),
            1 + r.below(2),
            1 + r.below(3),
        ));
    }
    y
}

/// Generated scenarios under every combination of fair sharing and admission fair sharing:
/// the ordering port decides exactly as the built-in (with the built-in preemption), and so do
/// all three ports together (fair-sharing preemption and admission fair sharing's candidate
/// order included).
#[test]
fn kueue_default_plugins_match_the_builtin_on_generated_fair_sharing_scenarios_0_to_7() {
    generated_parity(0..8);
}

#[test]
fn kueue_default_plugins_match_the_builtin_on_generated_fair_sharing_scenarios_8_to_15() {
    generated_parity(8..16);
}

#[test]
fn kueue_default_plugins_match_the_builtin_on_generated_fair_sharing_scenarios_16_to_23() {
    generated_parity(16..24);
}

#[test]
fn kueue_default_plugins_match_the_builtin_on_generated_fair_sharing_scenarios_24_to_31() {
    generated_parity(24..32);
}

/// The generated scenarios of `seeds` (each run of eight covers every combination of fair
/// sharing and admission fair sharing), split so that the runs share the test threads.
fn generated_parity(seeds: std::ops::Range<u64>) {
    let registry = plugins();
    let ordering = bindings(&[ORDERING, FLAVORS]);
    let all = bindings(&[ORDERING, PREEMPTION, FLAVORS]);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut differences = Vec::new();
    let mut decisions = 0;
    let count = (seeds.end - seeds.start) as usize;
    for seed in seeds {
        let (fair, afs) = (seed % 2 == 0, seed % 4 < 2 || seed % 8 == 7);
        let path = dir.path().join(format!("generated-{seed}.yaml"));
        std::fs::write(&path, generated_scenario(seed, fair, afs)).expect("write scenario");
        let native = run(&path, None);
        for (what, b) in [("ordering+flavors", &ordering), ("all three", &all)] {
            let wasm = run(&path, Some((&registry, b)));
            if let Some(d) = difference(&native, &wasm) {
                differences.push(format!("seed {seed} ({what}): {d}"));
            }
        }
        decisions += native.events.len();
    }
    assert!(
        differences.is_empty(),
        "generated scenarios (kept in {}) differ:\n{}",
        dir.keep().display(),
        differences.join("\n")
    );
    assert!(decisions > 15 * count, "only {decisions} events");
    for p in registry.plugins() {
        if p.info().name.starts_with("kueue-default") {
            let status = p.status();
            assert!(status.failures.is_empty(), "{}: {status:?}", p.info().name);
        }
    }
}

/// A candidate being evicted crosses into the plugin as `candidate.evicting`, and the plugin reads it as the built-in does: Kueue tries the evicting candidates of each
/// class first, so an evicting candidate of the preemptor's own queue goes before another
/// queue's reclaimable one, where without the flag the other queue's would go first. (The
/// simulator completes evictions at once, so its runs seldom list one.)
#[test]
fn an_evicting_candidate_is_tried_first_by_the_plugin_as_by_the_builtin() {
    use std::path::Path;
    use wasq::policy::{Candidate, CandidateKind, PreemptionPolicy, PreemptionRequest};

    // Cohort "all": a (nominal 6 cpu) holds a1 and a2, 2 cpu each; b (nominal 2) holds b1 and
    // b2, 2 each, so it borrows 2 and the cohort is full. "incoming" (2 cpu) waits in a.
    let mut y = String::from(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: default}\n",
    );
    for (cq, nominal) in [("a", 6), ("b", 2)] {
        y += &format!(
            "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: {cq}}}\n\
             spec:\n  cohortName: all\n  namespaceSelector: {{}}\n  resourceGroups:\n  \
             - coveredResources: [cpu]\n    flavors:\n    - name: default\n      resources:\n      \
             - {{name: cpu, nominalQuota: {nominal}}}\n\
             ---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n\
             metadata: {{namespace: default, name: {cq}}}\nspec: {{clusterQueue: {cq}}}\n"
        );
    }
    let workload = |name: &str, cq: &str, admitted_at: Option<u32>| {
        let mut w = format!(
            "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\n\
             metadata: {{namespace: default, name: {name}}}\nspec:\n  queueName: {cq}\n  podSets:\n  \
             - name: main\n    count: 1\n    template:\n      spec:\n        restartPolicy: Never\n        \
             containers:\n        - name: c\n          image: pause\n          resources:\n            \
             requests: {{cpu: '2'}}\n"
        );
        if let Some(s) = admitted_at {
            w += &format!(
                "status:\n  admission:\n    clusterQueue: {cq}\n    podSetAssignments:\n    - name: main\n      \
                 count: 1\n      flavors: {{cpu: default}}\n      resourceUsage: {{cpu: '2'}}\n  conditions:\n  \
                 - type: QuotaReserved\n    status: 'True'\n    reason: QuotaReserved\n    message: ''\n    \
                 lastTransitionTime: '2024-01-01T00:00:{s:02}Z'\n"
            );
        }
        w
    };
    for (name, cq, s) in [
        ("a1", "a", 1),
        ("a2", "a", 2),
        ("b1", "b", 3),
        ("b2", "b", 4),
    ] {
        y += &workload(name, cq, Some(s));
    }
    y += &workload("incoming", "a", None);
    let m = wasq::api::load::load_str(Path::new("evicting.yaml"), &y).expect("manifests load");
    let c = wasq::cluster::build_cluster(&m, &|_| 0, 0).expect("cluster builds");
    let id = |name: &str| {
        c.find_workload(&format!("default/{name}"))
            .expect("a workload of the test")
    };
    let cpu = {
        let f = c.names.find_flavor("default").unwrap();
        let r = c.names.find_resource("cpu").unwrap();
        c.names.find_fr(f, r).unwrap()
    };
    let (a, b) = (c.cq_by_name["a"], c.cq_by_name["b"]);
    let candidate = |name: &str, kind: CandidateKind, evicted: bool| {
        let w = id(name);
        let cq = c.admission(w).expect("admitted").cluster_queue;
        let row = c
            .admitted_rows(cq)
            .iter()
            .find(|r| r.workload == w)
            .expect("an admitted row");
        Candidate {
            workload: w,
            serial: row.serial,
            cluster_queue: cq,
            node: c.cq(cq).node,
            kind,
            lca: (cq != a).then(|| c.tree.root(c.cq(a).node)),
            priority: 0,
            created: c.workload(w).created,
            reserved_at: row.reserved_at,
            evicted,
            local_queue: c.workload(w).lq,
            requeue_count: 0,
            requeue_reason: None,
            usage: c.admission(w).unwrap().usage.as_slice().into(),
            local_queue_usage: None,
        }
    };
    assert!(c.tree.borrowing(&c.usage, c.cq(b).node, cpu), "b borrows");
    // In Kueue's candidate order: the evicting one first.
    let candidates = vec![
        candidate("a1", CandidateKind::SameQueue, true),
        candidate("b2", CandidateKind::ReclaimWhileBorrowing, false),
    ];
    let req = PreemptionRequest {
        preemptor: id("incoming"),
        cluster_queue: a,
        node: c.cq(a).node,
        priority: 0,
        created: 0,
        config: c.cq(a).preemption,
        requests: vec![(cpu, 2000)],
        needs_preemption: vec![cpu],
        candidates,
        fair_sharing: None,
        cluster: &c,
        tree: &c.tree,
        usage: &c.usage,
        now: 0,
        topology: None,
    };
    let kueue = wasq::policy::builtin::KueuePreemption;
    let builtin = kueue
        .select_victims(&req)
        .expect("answers")
        .expect("victims");
    assert_eq!(builtin.victims, [0], "the built-in takes the evicting one");
    let registry = plugins();
    let plugin = registry
        .get("kueue-default-preemption")
        .expect("built")
        .clone();
    let wasm = wasq::wasm::WasmPreemption::new(plugin)
        .select_victims(&req)
        .expect("the plugin answers")
        .expect("victims");
    assert_eq!(wasm, builtin);
    // Without the flag, the other queue's candidate comes first (in Kueue's candidate order
    // too) and is the victim: the flag is what decides.
    let mut plain = vec![req.candidates[1].clone(), req.candidates[0].clone()];
    plain[1].evicted = false;
    let plain = PreemptionRequest {
        candidates: plain,
        ..req
    };
    let answer = kueue
        .select_victims(&plain)
        .expect("answers")
        .expect("victims");
    let victims: Vec<_> = answer
        .victims
        .iter()
        .map(|&i| plain.candidates[i].workload)
        .collect();
    assert_eq!(victims, [id("b2")]);
}
