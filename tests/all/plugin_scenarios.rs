//! Feature plugins next to the built-ins: every `tests/plugin-scenarios/*.yaml` names the plugin
//! it demonstrates in a `# wasq-plugin: EXT=NAME` header line and is simulated twice, once with
//! the built-in policies and once with that plugin bound. Each outcome must equal its expected
//! file (`NAME.builtin.expected`, `NAME.plugin.expected`, the format of `tests/scenarios`), the
//! two must differ (the scenario shows what the plugin changes), and the plugin must have
//! decided without a single failure or fallback.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use wasq::sim::{EventType, Report, Scenario, Simulation};
use wasq::wasm::{Bindings, Registry};

use super::plugins::plugins;
use super::scenarios::{limits_of, outcome_lines};

/// The header line naming the binding a scenario demonstrates.
const HEADER: &str = "# wasq-plugin:";

pub(super) fn scenario_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plugin-scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

/// The `EXT=NAME` of the scenario's single `# wasq-plugin:` line.
pub(super) fn binding_of(path: &Path, text: &str) -> String {
    let specs: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix(HEADER))
        .map(str::trim)
        .collect();
    match specs.as_slice() {
        [spec] if !spec.is_empty() => spec.to_string(),
        _ => panic!(
            "{}: needs exactly one `{HEADER} EXT=NAME` line, found {specs:?}",
            path.display()
        ),
    }
}

/// The lines of an expected file: blank lines and `#` comments (whole-line or after ` #`) are
/// ignored, whitespace is normalized.
pub(super) fn expected_lines(path: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| l.split(" #").next().unwrap_or("").trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

pub(super) fn run(path: &Path, text: &str, plugin: Option<(&Registry, &Bindings)>) -> Report {
    let scenario =
        Scenario::load(&[path.to_path_buf()]).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut sim = Simulation::new(scenario);
    if let Some((registry, bindings)) = plugin {
        let (default, per_cq) = registry
            .bind(&sim.scheduler.cluster, bindings)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        sim.scheduler.set_default_policies(default);
        for (cq, set) in per_cq {
            sim.scheduler.set_cq_policies(cq, set);
        }
    }
    sim.run(&limits_of(text), None);
    sim.report()
}

/// `None` when equal, else what is missing and what is extra.
pub(super) fn compare(expected: &BTreeSet<String>, actual: &BTreeSet<String>) -> Option<String> {
    if expected == actual {
        return None;
    }
    let missing: Vec<_> = expected.difference(actual).collect();
    let extra: Vec<_> = actual.difference(expected).collect();
    Some(format!(
        "expected but missing: {missing:#?}\n  got but not expected: {extra:#?}"
    ))
}

#[test]
fn feature_plugins_change_the_outcome_as_documented() {
    let files = scenario_files();
    let mut demonstrated = BTreeSet::new();
    let mut failures = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let text = std::fs::read_to_string(path).expect("scenario readable");
        let spec = binding_of(path, &text);
        let (ext, plugin_name) = spec.split_once('=').expect("EXT=NAME");
        let (ext, plugin_name) = (ext.trim(), plugin_name.trim());
        let mut bindings = Bindings::default();
        bindings
            .set(&spec)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        // A registry per scenario, so that the plugin's status covers this run only.
        let registry = plugins();
        let plugin = registry
            .get(plugin_name)
            .unwrap_or_else(|| panic!("{name}: no plugin `{plugin_name}` was built"))
            .clone();

        let builtin = run(path, &text, None);
        let with_plugin = run(path, &text, Some((&registry, &bindings)));
        let (builtin_lines, plugin_lines) = (outcome_lines(&builtin), outcome_lines(&with_plugin));

        for (which, actual) in [("builtin", &builtin_lines), ("plugin", &plugin_lines)] {
            let file = path.with_extension(format!("{which}.expected"));
            if let Some(diff) = compare(&expected_lines(&file), actual) {
                failures.push(format!("{name} ({which}):\n  {diff}"));
            }
        }
        if builtin_lines == plugin_lines {
            failures.push(format!(
                "{name}: `{spec}` decides like the built-in here; the scenario shows nothing"
            ));
        }
        if !with_plugin.summary.fallbacks.is_empty() {
            failures.push(format!(
                "{name}: fallbacks to the built-in: {:#?}",
                with_plugin.summary.fallbacks
            ));
        }
        let status = plugin.status();
        if !status.failures.is_empty() || status.calls == 0 {
            failures.push(format!("{name}: plugin status {status:?}"));
        }
        // The decisions of the plugin's extension are attributed to it (ordering decisions
        // are not attributed to a policy in events).
        let attributed = match ext {
            "preemption" => Some(EventType::Preempted),
            "flavor-assignment" => Some(EventType::Admitted),
            _ => None,
        };
        for e in with_plugin
            .events
            .iter()
            .filter(|e| Some(e.kind) == attributed)
        {
            if &*e.policy.name != plugin_name {
                failures.push(format!(
                    "{name}: {:?} of {} attributed to {}",
                    e.kind, e.workload, e.policy.name
                ));
            }
        }
        if ext == "placement" {
            for p in &with_plugin.topology.placements {
                if &*p.placed_by.name != plugin_name {
                    failures.push(format!(
                        "{name}: placement of {} attributed to {}",
                        p.workload, p.placed_by.name
                    ));
                }
            }
        }
        demonstrated.insert(plugin_name.to_string());
    }
    assert!(
        failures.is_empty(),
        "{} problem(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    for plugin in [
        "min-runtime",
        "least-lost-work",
        "priority-boost",
        "cheapest-flavor",
        "max-min-gpu-hours",
        "drr-local-queues",
        "pack-by-rack",
    ] {
        assert!(
            demonstrated.contains(plugin),
            "no scenario in tests/plugin-scenarios demonstrates {plugin}"
        );
    }
}

/// The manifests of a file: everything but comment lines.
fn manifests_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// `examples/plugins/NAME.yaml` is the tested scenario of the same name, with a header for
/// people instead of the test's.
#[test]
fn plugin_examples_are_tested_scenarios() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("examples/plugins");
    let mut examples: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    examples.sort();
    assert!(examples.len() >= 4, "one example per feature plugin");
    for example in &examples {
        let name = example.file_name().expect("file name");
        let scenario = root.join("tests/plugin-scenarios").join(name);
        assert_eq!(
            manifests_of(example),
            manifests_of(&scenario),
            "{} differs from {}",
            example.display(),
            scenario.display()
        );
        let text = std::fs::read_to_string(example).expect("example readable");
        let spec = binding_of(&scenario, &std::fs::read_to_string(&scenario).unwrap());
        let command = format!(
            "wasq simulate examples/plugins/{} --plugins target/plugins --policy {spec}",
            name.to_string_lossy()
        );
        assert!(
            text.contains(&command),
            "{}: the header should show `{command}`",
            example.display()
        );
    }
}
