//! `kueue-among`: a preemption plugin names candidates and the host runs Kueue's own victim
//! selection among them (`wit/preemption.wit`, `answer`). Naming every candidate decides as the
//! built-in everywhere; naming fewer narrows Kueue's choice; a malformed list is refused.

use std::path::{Path, PathBuf};

use wasq::sim::{EventType, Report};

use super::plugins::{bindings, fixtures, run, test_options};
use super::scenarios::outcome_lines;
use super::wasm_containment::fallbacks_of;

const FIXTURE: &str = "fixture-kueue-among";

fn scenarios() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/scenarios")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

fn preempted(r: &Report) -> Vec<String> {
    r.events
        .iter()
        .filter(|e| e.kind == EventType::Preempted)
        .map(|e| e.workload.clone())
        .collect()
}

fn with_answer(answer: &str) -> wasq::wasm::Registry {
    let mut options = test_options();
    options
        .settings
        .insert(FIXTURE.into(), vec![("answer".into(), answer.into())]);
    fixtures(&options)
}

#[test]
fn naming_every_candidate_decides_as_the_builtin_on_every_scenario() {
    let registry = with_answer("all");
    let b = bindings(&[&format!("preemption={FIXTURE}")]);
    let mut preempting = 0;
    for path in scenarios() {
        let native = run(&path, None);
        let among = run(&path, Some((&registry, &b)));
        assert_eq!(
            outcome_lines(&native),
            outcome_lines(&among),
            "{}",
            path.display()
        );
        assert_eq!(fallbacks_of(&among, FIXTURE), [], "{}", path.display());
        preempting += usize::from(!preempted(&native).is_empty());
    }
    // The suite exercises the answer: many of its scenarios preempt.
    assert!(preempting >= 20, "{preempting} scenarios preempt");
}

#[test]
fn leaving_out_a_candidate_narrows_kueues_choice() {
    // Kueue's first candidate (lowest priority) is `low`; without it, Kueue takes `mid`.
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/preempt-lowest-priority.yaml");
    assert_eq!(preempted(&run(&path, None)), ["default/low"]);
    let b = bindings(&[&format!("preemption={FIXTURE}")]);
    let narrowed = run(&path, Some((&with_answer("skip-first"), &b)));
    assert_eq!(preempted(&narrowed), ["default/mid"]);
    assert_eq!(fallbacks_of(&narrowed, FIXTURE), []);
}

#[test]
fn a_malformed_list_is_refused_and_the_builtin_decides() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/preempt-lowest-priority.yaml");
    let b = bindings(&[&format!("preemption={FIXTURE}")]);
    for (answer, error) in [
        ("duplicate", "index 0 appears twice"),
        ("out-of-range", "out of range"),
    ] {
        let refused = run(&path, Some((&with_answer(answer), &b)));
        assert_eq!(preempted(&refused), ["default/low"], "{answer}");
        let found = fallbacks_of(&refused, FIXTURE);
        assert!(
            found
                .iter()
                .any(|(r, _, e)| r == "invalid-answer" && e.contains(error)),
            "{answer}: {found:?}"
        );
    }
}
