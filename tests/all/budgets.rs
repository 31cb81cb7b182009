//! Preemption budgets (`policy.wasq.dev/max-victims-per-preemptor`,
//! `policy.wasq.dev/max-evictions-per-minute`, the `--config` file's `budgets`): a preemptor
//! over budget waits with its reason, the per-minute budget refills on the virtual clock, and
//! the limits bind a WASM preemption plugin exactly as they bind the built-in.

use std::path::{Path, PathBuf};

use wasq::cluster::{BudgetDefaults, PreemptionBudget};
use wasq::sim::{Event, EventType, Limits, Report, Scenario, Simulation};

use super::plugins::{bindings, plugins, run};

const WAIT: &str = "WaitingForPreemptionBudget";
const CAP_MESSAGE: &str = "couldn't preempt: needs 3 victims, ClusterQueue cq-a allows at most 2 per preemptor (policy.wasq.dev/max-victims-per-preemptor)";

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(format!("{name}.yaml"))
}

fn events(r: &Report, kind: EventType, workload: &str) -> Vec<Event> {
    r.events
        .iter()
        .filter(|e| e.kind == kind && e.workload == workload)
        .collect()
}

fn preemptions(r: &Report) -> Vec<(f64, String, String)> {
    r.events
        .iter()
        .filter(|e| e.kind == EventType::Preempted)
        .map(|e| {
            (
                e.time,
                e.workload.clone(),
                e.preemptor.clone().unwrap_or_default(),
            )
        })
        .collect()
}

fn state<'a>(r: &'a Report, name: &str) -> &'a str {
    r.workloads
        .iter()
        .find(|w| w.name == name)
        .map(|w| w.state)
        .unwrap_or_else(|| panic!("no workload {name}"))
}

/// The preemptor waited for the budget: its pending event carries the reason and message.
fn assert_waited(r: &Report, workload: &str, message: &str) {
    let waits: Vec<_> = r
        .events
        .iter()
        .filter(|e| {
            e.workload == workload
                && matches!(e.kind, EventType::Inadmissible | EventType::Requeued)
                && e.reason.as_deref() == Some(&format!("{WAIT}: {message}"))
        })
        .collect();
    assert!(
        !waits.is_empty(),
        "no wait with `{message}` for {workload}: {:#?}",
        r.events
    );
}

#[test]
fn a_preemptor_needing_three_victims_under_a_cap_of_two_waits_with_the_reason() {
    let r = run(&scenario("budget-max-victims-2-of-3"), None);
    assert_eq!(preemptions(&r), vec![], "nobody is evicted");
    assert_eq!(state(&r, "high"), "inadmissible");
    for low in ["low-1", "low-2", "low-3", "low-4"] {
        assert_eq!(state(&r, low), "admitted", "{low}");
    }
    assert_waited(&r, "default/high", CAP_MESSAGE);
    let q = &r.summary.cluster_queues["cq-a"];
    assert_eq!(q.preemptors_held_by_budget, 1);
    assert!(q.budget_waits >= 1);
    let json = serde_json::to_value(&r.summary).expect("serializes");
    assert_eq!(json["clusterQueues"]["cq-a"]["preemptorsHeldByBudget"], 1);
    assert!(r.to_table(100).contains("waited"), "{}", r.to_table(100));
}

#[test]
fn with_a_cap_of_three_all_three_are_preempted() {
    let r = run(&scenario("budget-max-victims-3-of-3"), None);
    let by_high: Vec<String> = preemptions(&r)
        .into_iter()
        .map(|(t, victim, by)| {
            assert_eq!((t, by.as_str()), (10.0, "default/high"));
            victim
        })
        .collect();
    assert_eq!(
        by_high,
        vec!["default/low-1", "default/low-2", "default/low-3"]
    );
    assert_eq!(state(&r, "high"), "admitted");
    let q = &r.summary.cluster_queues["cq-a"];
    assert_eq!((q.budget_waits, q.preemptors_held_by_budget), (0, 0));
    let json = serde_json::to_value(&r.summary).expect("serializes");
    assert!(
        json["clusterQueues"]["cq-a"].get("budgetWaits").is_none(),
        "no budget wait, nothing reported: {json}"
    );
}

#[test]
fn the_per_minute_budget_holds_the_second_preemptor_until_60s_after_the_first_eviction() {
    let r = run(&scenario("budget-evictions-per-minute"), None);
    assert_eq!(
        preemptions(&r),
        vec![
            (10.0, "default/low-b".into(), "default/high-1".into()),
            (70.0, "default/low-a".into(), "default/high-2".into()),
        ]
    );
    assert_waited(
        &r,
        "default/high-2",
        "couldn't preempt: needs 1 victim, ClusterQueue cq-a allows 1 eviction per minute and its preemptors caused 1 in the last minute (policy.wasq.dev/max-evictions-per-minute)",
    );
    let wait = r
        .events
        .iter()
        .find(|e| {
            e.workload == "default/high-2"
                && e.reason.as_deref().is_some_and(|r| r.starts_with(WAIT))
        })
        .expect("waited");
    assert_eq!(wait.time, 20.0, "held as soon as it arrived");
    let admitted = events(&r, EventType::Admitted, "default/high-2");
    assert_eq!(admitted.len(), 1);
    assert_eq!(admitted[0].time, 70.0, "admitted once the budget refilled");
    assert_eq!(state(&r, "high-1"), "admitted");
    assert_eq!(state(&r, "high-2"), "admitted");
    assert_eq!(
        r.summary.cluster_queues["cq-a"].preemptors_held_by_budget,
        1
    );
}

#[test]
fn a_flavor_over_the_cap_cannot_preempt_so_the_next_flavor_is_tried() {
    let r = run(&scenario("budget-max-victims-next-flavor"), None);
    assert_eq!(
        preemptions(&r),
        vec![(10.0, "default/low-4".into(), "default/high".into())]
    );
    let high = r.workloads.iter().find(|w| w.name == "high").expect("high");
    let flavors = &high
        .admission
        .as_ref()
        .expect("admitted")
        .pod_set_assignments[0]
        .flavors;
    assert_eq!(flavors["cpu"], "fb");

    // Without the cap, the first flavor wins and its three workloads are preempted.
    let text = std::fs::read_to_string(scenario("budget-max-victims-next-flavor")).expect("reads");
    let text = text.replace("policy.wasq.dev/max-victims-per-preemptor: '2'", "");
    let m = wasq::api::load::load_str(Path::new("no-cap.yaml"), &text).expect("loads");
    let mut sim = Simulation::new(Scenario::from_manifests(m).expect("scenario"));
    sim.run(&Limits::default(), None);
    let uncapped = sim.report();
    let victims: Vec<String> = preemptions(&uncapped).into_iter().map(|p| p.1).collect();
    assert_eq!(
        victims,
        vec!["default/low-1", "default/low-2", "default/low-3"]
    );
}

#[test]
fn the_cap_binds_a_wasm_preemption_plugin_as_it_binds_the_builtin() {
    let registry = plugins();
    let b = bindings(&["preemption=kueue-default-preemption"]);
    let capped = run(
        &scenario("budget-max-victims-2-of-3"),
        Some((&registry, &b)),
    );
    assert_eq!(preemptions(&capped), vec![]);
    assert_eq!(state(&capped, "high"), "inadmissible");
    assert_waited(&capped, "default/high", CAP_MESSAGE);
    assert!(
        capped.summary.fallbacks.is_empty(),
        "an answer over budget is not a failure of the plugin: {:?}",
        capped.summary.fallbacks
    );
    let calls = registry
        .plugins()
        .filter(|p| p.info().name == "kueue-default-preemption")
        .map(|p| p.status().calls)
        .sum::<u64>();
    assert!(calls > 0, "the plugin chose the victims");

    let within = run(
        &scenario("budget-max-victims-3-of-3"),
        Some((&registry, &b)),
    );
    let evicted: Vec<_> = within
        .events
        .iter()
        .filter(|e| e.kind == EventType::Preempted)
        .collect();
    assert_eq!(evicted.len(), 3);
    assert!(
        evicted
            .iter()
            .all(|e| &*e.policy.name == "kueue-default-preemption")
    );

    let per_minute = run(
        &scenario("budget-evictions-per-minute"),
        Some((&registry, &b)),
    );
    assert_eq!(
        preemptions(&per_minute),
        preemptions(&run(&scenario("budget-evictions-per-minute"), None))
    );
}

fn capped_by_config(annotation: Option<&str>, defaults: &BudgetDefaults) -> Report {
    let mut text = std::fs::read_to_string(scenario("budget-max-victims-2-of-3")).expect("reads");
    text = text.replace(
        "policy.wasq.dev/max-victims-per-preemptor: '2'",
        &annotation
            .map(|v| format!("policy.wasq.dev/max-victims-per-preemptor: '{v}'"))
            .unwrap_or_default(),
    );
    let m = wasq::api::load::load_str(Path::new("config.yaml"), &text).expect("loads");
    let mut scenario = Scenario::from_manifests(m).expect("scenario");
    scenario.cluster.apply_budget_defaults(defaults);
    let mut sim = Simulation::new(scenario);
    sim.run(&Limits::default(), None);
    sim.report()
}

#[test]
fn the_config_file_sets_budgets_and_a_queue_annotation_overrides_it() {
    let two = PreemptionBudget {
        max_victims_per_preemptor: Some(2),
        max_evictions_per_minute: None,
    };
    let per_queue = BudgetDefaults {
        default: PreemptionBudget::default(),
        cluster_queues: [("cq-a".to_string(), two)].into(),
    };
    let by_default = BudgetDefaults {
        default: two,
        ..BudgetDefaults::default()
    };
    for defaults in [&per_queue, &by_default] {
        let r = capped_by_config(None, defaults);
        assert_eq!(preemptions(&r), vec![], "{defaults:?}");
        assert_waited(&r, "default/high", CAP_MESSAGE);
        // The ClusterQueue's own annotation wins over the file.
        let r = capped_by_config(Some("3"), defaults);
        assert_eq!(preemptions(&r).len(), 3, "{defaults:?}");
    }
    // A per-queue entry wins over the default.
    let both = BudgetDefaults {
        default: two,
        cluster_queues: [(
            "cq-a".to_string(),
            PreemptionBudget {
                max_victims_per_preemptor: Some(3),
                max_evictions_per_minute: None,
            },
        )]
        .into(),
    };
    assert_eq!(preemptions(&capped_by_config(None, &both)).len(), 3);
}

#[test]
fn a_malformed_budget_annotation_is_a_load_error_naming_the_object_and_field() {
    let text = std::fs::read_to_string(scenario("budget-max-victims-2-of-3")).expect("reads");
    for (bad, why) in [("'-1'", "`-1`"), ("'two'", "`two`"), ("''", "``")] {
        let text = text.replace(
            "policy.wasq.dev/max-victims-per-preemptor: '2'",
            &format!("policy.wasq.dev/max-victims-per-preemptor: {bad}"),
        );
        let m = wasq::api::load::load_str(Path::new("bad.yaml"), &text).expect("loads");
        let e = Scenario::from_manifests(m)
            .expect_err("refused")
            .to_string();
        assert_eq!(
            e,
            format!(
                "ClusterQueue cq-a: metadata.annotations.policy.wasq.dev/max-victims-per-preemptor: {why} is not a non-negative integer"
            )
        );
    }
}

#[test]
fn the_controller_ignores_a_malformed_annotation_and_keeps_the_rest() {
    // The controller builds its cluster with `build_cluster` (no scenario checks): a malformed
    // value is logged and left out, the other limit still applies.
    let text = std::fs::read_to_string(scenario("budget-max-victims-2-of-3")).expect("reads");
    let text = text.replace(
        "policy.wasq.dev/max-victims-per-preemptor: '2'",
        "policy.wasq.dev/max-victims-per-preemptor: 'many', policy.wasq.dev/max-evictions-per-minute: '5'",
    );
    let m = wasq::api::load::load_str(Path::new("controller.yaml"), &text).expect("loads");
    let cluster = wasq::cluster::build_cluster(&m, &|_| 0, 0).expect("builds");
    let cq = &cluster.cluster_queues[cluster.cq_by_name["cq-a"].index()];
    assert_eq!(
        cq.budget,
        PreemptionBudget {
            max_victims_per_preemptor: None,
            max_evictions_per_minute: Some(5),
        }
    );
}

#[test]
fn a_rebuilt_scheduler_keeps_the_minute_s_evictions() {
    let mut sim = Simulation::new(
        Scenario::load(&[scenario("budget-evictions-per-minute")]).expect("scenario"),
    );
    sim.run(
        &Limits {
            until: Some(15_000),
            ..Limits::default()
        },
        None,
    );
    let cq = sim.cluster().cq_by_name["cq-a"];
    let now = sim.now();
    assert_eq!(sim.scheduler.budgets().recent(cq, now), 1);
    // The controller's rebuild: a new scheduler over the same objects takes the history over.
    let mut rebuilt = wasq::scheduler::Scheduler::new(sim.cluster().clone());
    assert_eq!(rebuilt.budgets().recent(cq, now), 0);
    rebuilt.carry_budgets_from(&sim.scheduler);
    assert_eq!(rebuilt.budgets().recent(cq, now), 1);
    assert_eq!(rebuilt.budgets().recent(cq, now + 60_000), 0);
}

#[test]
fn simulate_reads_budgets_from_the_config_file_and_refuses_malformed_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("wasq.yaml");
    let run = |config_text: &str| {
        std::fs::write(&config, config_text).expect("write");
        std::process::Command::new(env!("CARGO_BIN_EXE_wasq"))
            .args(["simulate", "--output", "json", "--config"])
            .arg(&config)
            .arg(scenario("life-priority-preemption-readmit"))
            .output()
            .expect("runs")
    };
    let out = run("budgets:\n  clusterQueues: {team: {maxVictimsPerPreemptor: 0}}\n");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["summary"]["clusterQueues"]["team"]["preemptions"], 0);
    assert_eq!(report["summary"]["clusterQueues"]["team"]["budgetWaits"], 1);

    let out = run("budgets:\n  default: {maxEvictionsPerMinute: -1}\n");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("budgets.default.maxEvictionsPerMinute")
            && err.contains("policy.wasq.dev/max-evictions-per-minute")
            && err.contains("`-1` is not a non-negative integer"),
        "{err}"
    );
}

#[test]
fn a_strict_fifo_queue_waits_for_the_refill_the_same_way() {
    let text = std::fs::read_to_string(scenario("budget-evictions-per-minute")).expect("reads");
    let text = text.replace(
        "  preemption: {withinClusterQueue: LowerPriority}",
        "  queueingStrategy: StrictFIFO\n  preemption: {withinClusterQueue: LowerPriority}",
    );
    assert!(text.contains("StrictFIFO"));
    let m = wasq::api::load::load_str(Path::new("strict.yaml"), &text).expect("loads");
    let mut sim = Simulation::new(Scenario::from_manifests(m).expect("scenario"));
    sim.run(&Limits::default(), None);
    let r = sim.report();
    let times: Vec<f64> = preemptions(&r).into_iter().map(|p| p.0).collect();
    assert_eq!(times, vec![10.0, 70.0]);
    assert_eq!(state(&r, "high-2"), "admitted");
}
