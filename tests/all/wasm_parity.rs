//! Parity: the whole scenario suite run with the three kueue-default WASM plugins makes exactly
//! the built-in decisions — same events at the same times, same final state — and every
//! decision is attributed to the plugin that made it.

use wasq::sim::{EventType, Report};
use wasq::wasm::Bindings;

use super::plugins::{plugins, run};
use super::scenarios::{outcome_lines, scenario_files};

fn kueue_default() -> Bindings {
    let mut b = Bindings::default();
    for spec in [
        "ordering=kueue-default-ordering",
        "preemption=kueue-default-preemption",
        "flavor-assignment=kueue-default-flavors",
    ] {
        b.set(spec).expect("valid binding");
    }
    b
}

#[test]
fn kueue_default_plugins_decide_exactly_like_the_builtin() {
    let registry = plugins();
    let bindings = kueue_default();
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
        for e in wasm
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventType::Admitted | EventType::Preempted))
        {
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
    assert!(plugin_decisions >= 50, "only {plugin_decisions} decisions");
    for p in registry.plugins() {
        let status = p.status();
        if p.info().name.starts_with("kueue-default") {
            assert!(status.failures.is_empty(), "{}: {status:?}", p.info().name);
            assert!(status.calls > 0, "{} never called", p.info().name);
        }
    }
}
