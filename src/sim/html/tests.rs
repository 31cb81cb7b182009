//! The report model against what the simulation itself recorded: stacks that sum to each
//! tree's usage, borrowing that is usage beyond nominal quota, shares and entitlements that
//! are the fairness report's, times to admit per class and per LocalQueue, and the exact
//! admission-check waits of a scenario with a check.

use std::path::{Path, PathBuf};

use crate::sim::{Limits, Scenario, Simulation};

use super::charts::{Line, Reference};
use super::model::RunModel;
use super::palette::Colour;
use super::stack::MAX_LAYERS;

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
        [Reference::new(
            "nominal quota of every tree",
            40.0,
            Line::Solid
        )]
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
        [Reference::new(
            "nominal quota of the tree",
            20.0,
            Line::Solid
        )]
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
fn each_cluster_queue_is_drawn_against_its_own_nominal_quota_and_limit() {
    let sim = shape();
    let model = RunModel::build("run", &sim, &sim.report());
    assert_eq!(model.usage.own.len(), model.usage.trees.len());
    for own in &model.usage.own {
        // Every ClusterQueue has 2 cores and may borrow 3 more: one dashed line at 2 for all,
        // one dotted at 5.
        assert!(!own.paired);
        assert_eq!(
            own.references,
            [
                Reference::new("nominal quota (each)", 2.0, Line::Dashed),
                Reference::new("nominal + borrowing limit (each)", 5.0, Line::Dotted),
            ]
        );
        assert_eq!(own.series.len(), MAX_LAYERS);
        for (s, row) in own.series.iter().zip(&own.rows) {
            assert_eq!(s.name, row.name);
            assert_eq!(s.colour, model.palette.cluster_queue(&row.name));
            let name = row.name.clone();
            for &(t, used) in &s.points {
                let expected = usage_at(&sim, &|cq| cq == name, t) as f64 / 1000.0;
                assert_eq!(used, expected, "{name} at {t}s");
            }
            let peak = s.points.iter().map(|p| p.1).fold(0.0, f64::max);
            assert_eq!((row.peak, row.peak_borrowed), (peak, (peak - 2.0).max(0.0)));
            assert!(row.peak_borrowed <= 3.0);
        }
        // Those drawn peaked highest against their quota.
        let lowest = own
            .rows
            .iter()
            .map(|r| r.peak)
            .fold(f64::INFINITY, f64::min);
        let tree = model
            .usage
            .trees
            .iter()
            .find(|t| t.group == own.tree)
            .unwrap();
        for r in tree
            .rows
            .iter()
            .filter(|r| !r.name.starts_with("the other"))
        {
            if !own.rows.iter().any(|o| o.name == r.name) {
                assert!(r.peak <= lowest, "{}", r.name);
            }
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

#[test]
fn the_headline_counts_everyone_who_waited() {
    // examples/reclaim-borrowed-quota.yaml: research-sweep (12 cpu, 4 borrowed) is preempted
    // at 5m when prod reclaims its quota and waits until prod-release finishes at 25m;
    // research-notebook borrows 2 more from 1m. Nobody else waits.
    let sim = example("reclaim-borrowed-quota.yaml");
    let model = RunModel::build("run", &sim, &sim.report());
    let h = &model.headline;
    let cpu = "default-flavor/cpu";
    let at = |cq: &str, column: &str| h.value(cq, column);
    assert_eq!(h.rows[0].name, super::headline::ALL);
    let names: Vec<&str> = h.rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, [super::headline::ALL, "prod", "research"]);
    for (column, value) in [
        ("admitted", 3.0),
        ("pending at end", 0.0),
        ("never admitted", 0.0),
        ("mean wait", 600.0),
        ("p95 wait", 1200.0),
        ("preempted", 1.0),
        (&format!("peak borrowed: {cpu} (cores)"), 6.0),
    ] {
        assert_eq!(at("research", column), Some(value), "research: {column}");
    }
    let usage = format!("usage % of nominal, time-averaged: {cpu}");
    assert_eq!(at("research", &usage), Some(139.412));
    assert_eq!(at("prod", "mean wait"), Some(0.0));
    assert_eq!(
        at("prod", &format!("peak borrowed: {cpu} (cores)")),
        Some(0.0)
    );
    // Everyone: three workloads waited 0, 0 and 20 minutes; the usage of the two 8-cpu
    // ClusterQueues together is the mean of theirs.
    assert_eq!(at(super::headline::ALL, "admitted"), Some(4.0));
    assert_eq!(at(super::headline::ALL, "mean wait"), Some(400.0));
    assert_eq!(at(super::headline::ALL, "p95 wait"), Some(1200.0));
    let both = at(super::headline::ALL, &usage).unwrap();
    assert!((both - (139.412 + 23.529) / 2.0).abs() < 1e-9, "{both}");

    // The page opens with it, before any chart, in units a person reads.
    let page = super::render(&[model], None).expect("renders");
    let table = page
        .find("<h2>Per ClusterQueue</h2><div class=\"headline\"")
        .expect("a headline");
    assert!(table < page.find("<figure>").expect("charts"));
    assert!(
        page.contains(
            "<th scope=\"row\">research</th><td>3</td><td>0</td><td>0</td><td>10m</td>\
             <td>20m</td><td>1</td><td>139.4%</td>"
        ),
        "{}",
        &page[table..table + 2000]
    );
    // One run: no "run:" before the titles.
    assert!(!page.contains("<figcaption>run"));
}

#[test]
fn the_backlog_is_pending_workloads_per_cluster_queue_over_time() {
    let sim = example("reclaim-borrowed-quota.yaml");
    let model = RunModel::build("run", &sim, &sim.report());
    let b = &model.backlog;
    // prod-release was admitted as it arrived: only research had a backlog, research-sweep
    // from its preemption at 5m until re-admitted at 25m.
    let s = b.stacked.as_ref().expect("a backlog");
    assert_eq!(s.of, 1);
    assert_eq!(s.layers[0].name, "research");
    assert_eq!(s.layers[0].colour, model.palette.cluster_queue("research"));
    let drawn: Vec<(f64, f64)> = s
        .times
        .iter()
        .copied()
        .zip(s.layers[0].values.clone())
        .collect();
    assert_eq!(
        drawn,
        [
            (0.0, 0.0),
            (300.0, 1.0),
            (1500.0, 0.0),
            (model.duration, 0.0)
        ]
    );
    assert_eq!(b.rows.len(), 1);
    let row = &b.rows[0];
    assert_eq!((row.peak, row.at_end), (1.0, 0.0));
    assert!((row.average - 1200.0 / model.duration).abs() < 1e-9);
    assert_eq!(b.total.points, drawn);

    // Past eight ClusterQueues, the seven highest peaks and the others together, adding up
    // to every pending workload at every drawn instant.
    let sim = shape();
    let model = RunModel::build("run", &sim, &sim.report());
    let b = &model.backlog;
    let s = b.stacked.as_ref().expect("a backlog");
    assert_eq!(s.layers.len(), MAX_LAYERS + 1);
    assert_eq!(s.layers[MAX_LAYERS].colour, Colour::Others);
    assert_eq!(b.rows.len(), s.of);
    assert!(b.rows.windows(2).all(|w| w[0].peak >= w[1].peak));
    let pending_at = |t: f64| {
        b.total
            .points
            .iter()
            .take_while(|p| p.0 <= t)
            .last()
            .map_or(0.0, |p| p.1)
    };
    for (k, &t) in s.times.iter().enumerate() {
        let drawn: f64 = s.layers.iter().map(|l| l.values[k]).sum();
        if b.total.points.len() < super::model::MAX_POINTS {
            assert_eq!(drawn, pending_at(t), "at {t}s");
        }
    }
}

#[test]
fn a_queue_has_one_colour_in_every_chart() {
    let sim = shape();
    let model = RunModel::build("run", &sim, &sim.report());
    let p = &model.palette;
    let mut seen: std::collections::BTreeMap<String, Vec<Colour>> = Default::default();
    let mut note = |name: &str, colour: Colour| {
        seen.entry(name.to_string()).or_default().push(colour);
    };
    for stack in model.usage.trees.iter().chain(&model.backlog.stacked) {
        for l in &stack.layers {
            note(&l.name, l.colour);
        }
    }
    for own in &model.usage.own {
        for s in &own.series {
            note(&s.name, s.colour);
        }
    }
    for chart in &model.shares {
        for s in &chart.series {
            note(
                s.name
                    .trim_end_matches(" share")
                    .trim_end_matches(" entitlement"),
                s.colour,
            );
        }
    }
    for w in model.waits.iter().filter(|w| w.by == "LocalQueue") {
        for g in &w.groups {
            note(&g.name, g.colour);
        }
    }
    let mut in_several = 0;
    for (name, colours) in &seen {
        let expected = if name.starts_with("the other ") {
            Colour::Others
        } else if name.contains('/') {
            p.local_queue(name)
        } else {
            p.cluster_queue(name)
        };
        assert!(
            name.starts_with("the other ") || expected != Colour::Others,
            "{name} is a queue"
        );
        assert!(
            colours.iter().all(|&c| c == expected),
            "{name}: {colours:?}"
        );
        in_several += usize::from(colours.len() >= 3);
    }
    assert!(in_several > 0, "{seen:?}");
}

/// A run with shadows: after the headline, one row per shadow with its figures and agreement,
/// then its differing decisions, every name escaped; two runs side by side, each its own.
#[test]
fn shadows_come_after_the_headline_with_their_differing_decisions() {
    use crate::policy::shadow::{Difference, Figures, KEPT_DIFFERENCES};

    let sim = shape();
    let mut report = sim.report();
    let differences: Vec<Difference> = (0..KEPT_DIFFERENCES)
        .map(|i| Difference {
            extension: "preemption",
            workload: format!("ns/urgent-{i}"),
            enforced: format!("ns/a<{i}>"),
            shadow: "ns/b&c, ns/d".to_string(),
        })
        .collect();
    report.summary.shadow.insert(
        "least<lost>".to_string(),
        Figures {
            extension: "preemption",
            decisions: 40,
            agree: 14,
            differ: 25,
            invalid: 0,
            fallback: 1,
            skipped: 3,
            differences,
        },
    );
    report.summary.shadow.insert(
        "idle".to_string(),
        Figures {
            extension: "ordering",
            ..Figures::default()
        },
    );
    let shadowed = RunModel::build("A (preemption=builtin)", &sim, &report);
    let html = super::render(std::slice::from_ref(&shadowed), None).expect("renders");
    let cells = |first: &str| -> Vec<String> {
        let start = html
            .find(&format!("<tr><td>{first}</td>"))
            .unwrap_or_else(|| panic!("no row {first}"));
        let end = start + html[start..].find("</tr>").expect("row ends");
        html[start..end]
            .split("<td>")
            .skip(1)
            .map(|c| c.trim_end_matches("</td>").to_string())
            .collect()
    };
    assert_eq!(
        cells("least&lt;lost&gt;"),
        [
            "least&lt;lost&gt;",
            "preemption",
            "40",
            "14",
            "25",
            "0",
            "1",
            "3",
            "35.0%"
        ]
    );
    assert_eq!(
        cells("idle"),
        ["idle", "ordering", "0", "0", "0", "0", "0", "0", "—"]
    );
    assert!(html.contains(
        "<caption>least&lt;lost&gt;: where it differs from the enforced policy (the first 20 of \
         25)</caption>"
    ));
    assert!(html.contains("<th scope=\"col\">least&lt;lost&gt; would have</th>"));
    assert_eq!(
        cells("ns/urgent-0"),
        ["ns/urgent-0", "ns/a&lt;0&gt;", "ns/b&amp;c, ns/d"]
    );
    assert_eq!(html.matches("<tr><td>ns/urgent-").count(), KEPT_DIFFERENCES);
    let at = |needle: &str| html.find(needle).unwrap_or_else(|| panic!("no {needle:?}"));
    assert!(at("<h2>Per ClusterQueue</h2>") < at("<h2>Shadow policies</h2>"));
    assert!(at("<h2>Shadow policies</h2>") < at("<h2>Backlog</h2>"));
    assert!(!html.contains("<script"));

    // Without shadows, no section; side by side, each run in its own column.
    let plain = RunModel::build("B (preemption=least-lost-work)", &sim, &sim.report());
    let alone = super::render(std::slice::from_ref(&plain), None).expect("renders");
    assert!(!alone.contains("Shadow policies"));
    let both = super::render(&[shadowed, plain], Some(&[])).expect("renders");
    let section = &both[both.find("<h2>Shadow policies</h2>").expect("a section")..];
    let section = &section[..section.find("</section>").expect("it ends")];
    assert!(section.contains("<h3>A (preemption=builtin)</h3>"));
    assert!(section.contains("<caption>A: Shadow policies</caption>"));
    assert!(section.contains("<h3>B (preemption=least-lost-work)</h3><p>B: No shadow policy.</p>"));
    assert!(
        both.find("<h2>Shadow policies</h2>") < both.find("<h2>Workloads whose fate differs</h2>")
    );
}
