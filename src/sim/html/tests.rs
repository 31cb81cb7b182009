//! The report model against what the simulation itself recorded: stacks that sum to each
//! tree's usage, borrowing that is usage beyond nominal quota, shares and entitlements that
//! are the fairness report's, times to admit per class and per LocalQueue, and the exact
//! admission-check waits of a scenario with a check.

use std::path::{Path, PathBuf};

use crate::sim::{Limits, Scenario, Simulation};

use super::model::RunModel;
use super::usage::MAX_LAYERS;

/// The tests' shape, shared with `tests/all/html_report.rs`.
const SHAPE: &str = include_str!("../../../tests/manifests/report-two-cohorts.yaml");

fn run(sim: &mut Simulation) {
    sim.run(&Limits::default(), None);
}

fn shape() -> Simulation {
    let manifests = crate::api::load::load_str(Path::new("shape.yaml"), SHAPE).expect("loads");
    let mut sim = Simulation::new(Scenario::from_manifests(manifests).expect("scenario"));
    run(&mut sim);
    sim
}

fn example(name: &str) -> Simulation {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name);
    let mut sim = Simulation::new(Scenario::load(&[path]).expect("scenario"));
    run(&mut sim);
    sim
}

/// Usage (milli-units) of the ClusterQueues `in_tree` at `t` seconds, replayed from the
/// simulation's log.
fn usage_at(sim: &Simulation, in_tree: &dyn Fn(&str) -> bool, t: f64) -> i64 {
    let cluster = sim.cluster();
    sim.usage_log
        .iter()
        .filter(|c| (c.at.max(sim.t0()) - sim.t0()) as f64 / 1000.0 <= t)
        .filter(|c| in_tree(&cluster.cq(c.admission.cluster_queue).name))
        .map(|c| c.sign() * c.admission.usage.iter().map(|u| u.1).sum::<i64>())
        .sum()
}

#[test]
fn every_stack_sums_to_its_trees_usage_at_every_drawn_instant() {
    let sim = shape();
    let model = RunModel::build("run", &sim, &sim.report());
    let usage = &model.usage;
    assert_eq!(usage.tree_count, 2);
    // One chart of both trees, one per tree (both under the three with the highest peaks).
    assert_eq!(usage.overall.len(), 1);
    assert_eq!(usage.trees.len(), 2);
    let all = &usage.overall[0];
    assert_eq!(all.layers.len(), 2);
    assert_eq!(
        all.references,
        [("nominal quota of every tree".to_string(), 40.0)]
    );
    for stack in usage.trees.iter().chain(&usage.overall) {
        assert!(stack.times.len() <= super::model::MAX_POINTS);
        assert!(stack.times.windows(2).all(|w| w[0] < w[1]));
        let group = stack.group.clone();
        let in_tree = move |cq: &str| group == "all cohort trees" || cq.ends_with(&group);
        for (k, &t) in stack.times.iter().enumerate() {
            let drawn: f64 = stack.layers.iter().map(|l| l.values[k]).sum();
            let expected = usage_at(&sim, &in_tree, t) as f64 / 1000.0;
            assert!(
                (drawn - expected).abs() < 1e-9,
                "{} at {t}s: {drawn} vs {expected}",
                stack.group
            );
        }
    }
    // A tree of ten ClusterQueues: seven drawn, the other three together; the nominal quota of
    // the tree is its ClusterQueues' (the cohorts hold none).
    let tree = &usage.trees[0];
    assert_eq!(tree.of, 10);
    assert_eq!(tree.layers.len(), MAX_LAYERS + 1);
    assert_eq!(tree.layers[MAX_LAYERS].name, "the other 3 ClusterQueues");
    assert_eq!(
        tree.references,
        [("nominal quota of the tree".to_string(), 20.0)]
    );
    let rows = &tree.rows;
    assert!(
        rows.windows(2)
            .take(MAX_LAYERS - 1)
            .all(|w| w[0].peak >= w[1].peak)
    );
    assert_eq!((rows[0].nominal, rows[0].borrowing_limit), (2.0, Some(3.0)));
    assert_eq!(rows[MAX_LAYERS].nominal, 6.0);
}

#[test]
fn borrowing_is_usage_beyond_nominal_quota_against_the_shared_limit() {
    let sim = shape();
    let model = RunModel::build("run", &sim, &sim.report());
    assert!(!model.usage.borrowing.is_empty());
    for b in &model.usage.borrowing {
        assert_eq!(b.limit, Some(3.0), "every ClusterQueue may borrow 3 cores");
        for (s, row) in b.series.iter().zip(&b.rows) {
            assert_eq!(s.name, row.name);
            let name = row.name.clone();
            for &(t, borrowed) in &s.points {
                let used = usage_at(&sim, &|cq| cq == name, t) as f64 / 1000.0;
                assert_eq!(borrowed, (used - 2.0).max(0.0), "{name} at {t}s");
            }
            let peak = s.points.iter().map(|p| p.1).fold(0.0, f64::max);
            assert_eq!(peak, row.peak_borrowed);
            assert!(peak > 0.0 && peak <= 3.0);
        }
    }
}

#[test]
fn shares_and_entitlements_are_the_fairness_reports_at_its_samples() {
    let sim = shape();
    let report = sim.report();
    let model = RunModel::build("run", &sim, &report);
    let fairness = &report.fairness;
    assert_eq!(model.shares.len(), 1);
    let chart = &model.shares[0];
    assert_eq!(chart.resource, "default/cpu");
    assert_eq!(chart.of, 20);
    assert_eq!(chart.series.len(), 2 * super::sharing::MAX_QUEUES);
    let strayed = |cq: &str| {
        let e = fairness.cluster_queues[cq].resources["default/cpu"].entitlement;
        fairness
            .samples
            .iter()
            .filter_map(|s| s.shares.get(cq)?.get("default/cpu"))
            .map(|s| (s - e).abs())
            .fold(0.0, f64::max)
    };
    let least_drawn = chart
        .rows
        .iter()
        .map(|r| strayed(&r.name))
        .fold(f64::INFINITY, f64::min);
    for (pair, row) in chart.series.chunks(2).zip(&chart.rows) {
        let cq = &row.name;
        let expected: Vec<(f64, f64)> = fairness
            .samples
            .iter()
            .map(|s| (s.time, s.shares[cq]["default/cpu"]))
            .collect();
        assert_eq!(pair[0].name, format!("{cq} share"));
        assert_eq!(pair[0].points, expected);
        let resource = fairness.cluster_queues[cq].resources["default/cpu"];
        assert_eq!(resource.entitlement, 0.1, "weight 1 of the 10 in its tree");
        assert_eq!(pair[1].points, [(0.0, 0.1), (model.duration, 0.1)]);
        assert_eq!((row.average, row.ratio), (resource.share, resource.ratio));
    }
    // Those drawn strayed furthest from their entitlement.
    for cq in fairness.cluster_queues.keys() {
        if !chart.rows.iter().any(|r| &r.name == cq) {
            assert!(strayed(cq) <= least_drawn, "{cq}");
        }
    }
}

#[test]
fn times_to_admit_come_per_class_and_per_local_queue() {
    let sim = shape();
    let model = RunModel::build("run", &sim, &sim.report());
    let admitted = sim.lives.iter().filter_map(|l| l.first_admitted()).count();
    let [class, lq] = &model.waits[..] else {
        panic!("two groupings: {:?}", model.waits.len());
    };
    assert_eq!(class.by, "workload class");
    let names: Vec<&str> = class.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["large", "small"]);
    assert_eq!(lq.by, "LocalQueue");
    assert_eq!(lq.of, 20);
    assert_eq!(lq.groups.len(), super::waits::MAX_GROUPS + 1);
    assert_eq!(
        lq.groups[super::waits::MAX_GROUPS].name,
        "the other 13 LocalQueues"
    );
    for chart in [class, lq] {
        let n: usize = chart.groups.iter().map(|g| g.seconds.len()).sum();
        assert_eq!(n, admitted, "{}", chart.by);
        assert!(chart.groups.iter().all(|g| g.seconds.is_sorted()));
    }
}

#[test]
fn admission_check_waits_are_exact() {
    // examples/provisioning-retries.yaml: each ProvisioningRequest is answered after 2
    // minutes and every workload's first attempt fails. finetune waits 0–2m (evicted), eval
    // 2m–4m (evicted), finetune 4m–6m (admitted), eval 9m–11m (admitted).
    let sim = example("provisioning-retries.yaml");
    let model = RunModel::build("run", &sim, &sim.report());
    let checks = model.checks.expect("waits for admission checks");
    assert_eq!((checks.admitted, checks.released, checks.open), (2, 2, 0));
    assert_eq!(checks.seconds, [120.0; 4]);
    assert_eq!(
        checks.waiting.points,
        [
            (0.0, 1.0),
            (120.0, 1.0),
            (240.0, 1.0),
            (360.0, 0.0),
            (540.0, 1.0),
            (660.0, 0.0),
            (model.duration, 0.0)
        ]
    );
    let begun: Vec<(f64, f64)> = checks.begun.points.clone();
    assert_eq!(
        begun,
        [
            (0.0, 0.0),
            (0.0, 1.0),
            (120.0, 2.0),
            (240.0, 3.0),
            (540.0, 4.0),
            (model.duration, 4.0)
        ]
    );
    // A run without admission checks records none.
    let sim = shape();
    assert!(RunModel::build("run", &sim, &sim.report()).checks.is_none());
}
