//! Shadow policies (`--shadow EXT=NAME`): asked every question the enforced policy is asked,
//! verified the same way, never acted on. A shadow that is the enforced policy in another form
//! agrees on every decision; one that is not says where it differs, as `--compare` would; one
//! that lies or traps is counted, and nothing the cluster gets changes.

use std::path::Path;

use wasq::sim::Report;
use wasq::wasm::Bindings;

use super::plugins::{built, plugins, run};
use super::scenarios::{expected_lines, outcome_lines, scenario_files};

fn with_shadows(specs: &[&str]) -> Bindings {
    let mut b = Bindings::default();
    for spec in specs {
        b.shadow(spec).expect("valid shadow");
    }
    b
}

/// Every scenario, the built-in deciding and the kueue-default plugins shadowing it: the outcome
/// its `.expected` file holds (what the built-in decides alone), and every shadow decision
/// agrees.
#[test]
fn kueue_default_shadows_of_the_builtin_agree_on_every_decision() {
    let registry = plugins();
    let shadows = with_shadows(&[
        "ordering=kueue-default-ordering",
        "preemption=kueue-default-preemption",
        "flavor-assignment=kueue-default-flavors",
        "placement=kueue-default-placement",
    ]);
    let mut decisions = std::collections::BTreeMap::<String, u64>::new();
    for path in scenario_files() {
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let shadowed = run(&path, Some((&registry, &shadows)));
        assert_eq!(
            outcome_lines(&shadowed),
            expected_lines(&path.with_extension("expected")),
            "{name}: a shadow changed what was decided"
        );
        for (shadow, f) in &shadowed.summary.shadow {
            assert_eq!(
                (f.differ, f.invalid, f.fallback),
                (0, 0, 0),
                "{name}: {shadow} disagrees: {:?}",
                f.differences
            );
            assert_eq!(f.agree, f.decisions);
            *decisions.entry(shadow.clone()).or_default() += f.decisions;
        }
    }
    // Each extension point was asked enough to mean something.
    for (shadow, least) in [
        ("kueue-default-ordering", 300),
        ("kueue-default-preemption", 50),
        ("kueue-default-flavors", 20),
        ("kueue-default-placement", 50),
    ] {
        let n = decisions.get(shadow).copied().unwrap_or(0);
        assert!(
            n >= least,
            "{shadow} made {n} decisions over the suite, fewer than {least}"
        );
    }
}

/// `min-runtime` shadowing the built-in preemption: the decision where they part is the one
/// `--compare` shows, with the same workloads.
#[test]
fn a_differing_shadow_names_the_decision_compare_shows() {
    let registry = plugins();
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plugin-scenarios/min-runtime.yaml");
    let shadowed = run(
        &scenario,
        Some((&registry, &with_shadows(&["preemption=min-runtime"]))),
    );
    let f = &shadowed.summary.shadow["min-runtime"];
    assert_eq!(
        (f.extension, f.decisions, f.differ),
        ("preemption", 1, 1),
        "{f:?}"
    );

    let mut enforced = Bindings::default();
    enforced.set("preemption=min-runtime").unwrap();
    let other = run(&scenario, Some((&registry, &enforced)));
    let differing: Vec<String> = wasq::sim::html::differences(&shadowed, &other)
        .into_iter()
        .map(|d| d.workload)
        .collect();
    let d = &f.differences[0];
    assert_eq!(d.workload, "default/urgent");
    // The built-in preempted one, min-runtime would have preempted the other: exactly the two
    // workloads whose fate differs between the two runs.
    let mut named = vec![d.enforced.clone(), d.shadow.clone()];
    named.sort();
    assert_eq!(differing, named, "{d:?}");
}

/// A shadow that traps or answers out of range is counted as such; the decisions stay the
/// built-in's.
#[test]
fn a_failing_or_lying_shadow_is_counted_and_changes_nothing() {
    let fixtures = &built().fixtures;
    let mut registry = wasq::wasm::Registry::empty(super::plugins::engine());
    let options = wasq::wasm::HostOptions::default();
    for name in ["fixture-trap", "fixture-out-of-range"] {
        registry.load(&fixtures.join(format!("{name}.wasm")), &options);
    }
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/sched-entry-ordering.yaml");
    let alone = run(&scenario, None);
    let shadowed = run(
        &scenario,
        Some((
            &registry,
            &with_shadows(&["ordering=fixture-trap", "ordering=fixture-out-of-range"]),
        )),
    );
    assert_eq!(outcome_lines(&alone), outcome_lines(&shadowed));
    let figures = |name: &str| {
        let f = &shadowed.summary.shadow[name];
        (
            f.decisions > 0,
            f.agree,
            f.differ,
            f.invalid == f.decisions,
            f.fallback == f.decisions,
        )
    };
    assert_eq!(figures("fixture-trap"), (true, 0, 0, false, true));
    // Its sort keys are in range (and agree); its head order is not.
    let lying = &shadowed.summary.shadow["fixture-out-of-range"];
    assert!(
        lying.invalid > 0 && lying.invalid + lying.agree == lying.decisions,
        "{lying:?}"
    );
    assert!(
        shadowed.summary.fallbacks.is_empty(),
        "a shadow's failure is no fallback of the run"
    );
}

/// The table says what the shadows did.
#[test]
fn the_table_reports_each_shadow() {
    let report: Report = run(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plugin-scenarios/min-runtime.yaml"),
        Some((&plugins(), &with_shadows(&["preemption=min-runtime"]))),
    );
    let table = report.to_table(0);
    assert!(
        table.contains(
            "min-runtime (preemption): 1 decisions, 0 agree, 1 differ, 0 invalid, 0 failed"
        ),
        "{table}"
    );
    assert!(table.contains("default/urgent: enforced "), "{table}");
}
