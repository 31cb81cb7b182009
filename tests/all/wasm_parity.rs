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

const ORDERING: &str = "ordering=kueue-default-ordering";
const PREEMPTION: &str = "preemption=kueue-default-preemption";
const FLAVORS: &str = "flavor-assignment=kueue-default-flavors";

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
    let registry = plugins();
    let bindings = bindings(specs);
    let files = scenario_files();
    let mut differences = Vec::new();
    let mut plugin_decisions = 0;
    for path in &files {
        let native = run(path, None);
        let wasm = run(path, Some((&registry, &bindings)));
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if outcome_lines(&native) != outcome_lines(&wasm) {
            differences.push(format!("{name}: final outcome differs"));
            continue;
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
        if strip(&native) != strip(&wasm) {
            differences.push(format!("{name}: event sequence differs"));
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
                e.policy.name, "builtin",
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
