//! `QueuePolicy` objects (`policies.wasq.dev/v1alpha1`) in a scenario, through `wasq simulate`
//! as a user runs it: the same YAML that binds a policy in a cluster. Shadows of the built-in
//! in the kueue-default plugins agree on Kueue's large-scale shape and change nothing; a shadow
//! object reports exactly what the `--shadow` flag reports, and parts from the built-in where
//! `--compare`'s two runs part; an `Enforce` object with a selector decides for the
//! ClusterQueues it selects only; and what the simulator cannot bind fails naming the object.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::plugins::built;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A built plugin's file.
fn wasm(name: &str) -> PathBuf {
    built().plugins.join(format!("{name}.wasm"))
}

/// `wasq simulate ARGS -o json`: the report, or what it said on stderr when it failed.
fn simulate<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Result<Value, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_wasq"))
        .arg("simulate")
        .args(args)
        .args(["-o", "json"])
        .output()
        .expect("wasq runs");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(serde_json::from_slice(&out.stdout).expect("a JSON report"))
}

fn simulated<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Value {
    simulate(args).unwrap_or_else(|e| panic!("wasq simulate failed: {e}"))
}

/// A QueuePolicy document; `spec` is the rest of its spec, in YAML flow style.
fn queue_policy(name: &str, spec: &str) -> String {
    format!(
        "---\napiVersion: policies.wasq.dev/v1alpha1\nkind: QueuePolicy\n\
         metadata: {{name: {name}}}\nspec: {{{spec}}}\n"
    )
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("writes");
    path
}

/// Kueue's large-scale shape cut to `cohorts` cohorts of `queues` ClusterQueues (50 workloads
/// each, Kueue's three streams).
fn large_scale(dir: &Path, cohorts: usize, queues: usize) -> PathBuf {
    write(
        dir,
        "large-scale.yaml",
        &format!(
            "apiVersion: sim.wasq.dev/v1alpha1\nkind: Generator\nmetadata: {{name: large-scale}}\n\
             spec: {{shape: large-scale, cohorts: {cohorts}, queuesPerCohort: {queues}}}\n"
        ),
    )
}

/// `summary.shadow` of a report (absent when no shadow decided anything).
fn shadows(report: &Value) -> BTreeMap<String, Value> {
    report["summary"]["shadow"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

fn count(figures: &Value, field: &str) -> u64 {
    figures[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} in {figures}"))
}

/// What the cluster got: every event (with the policy that decided it) and every workload.
fn outcome(report: &Value) -> (&Value, &Value) {
    (&report["events"], &report["workloads"])
}

/// Kueue's large-scale shape (two of its ten cohorts of 100 ClusterQueues: 10,000 workloads)
/// with the four kueue-default plugins as `Shadow` QueuePolicies of the built-in: each agrees on
/// every decision it is asked, and the run is the run without them, event for event.
#[test]
fn kueue_default_shadow_queue_policies_agree_with_the_builtin_on_large_scale() {
    let dir = tempfile::tempdir().expect("tempdir");
    let shape = large_scale(dir.path(), 2, 100);
    let objects: String = [
        ("ordering", "Ordering", "kueue-default-ordering"),
        ("preemption", "Preemption", "kueue-default-preemption"),
        ("flavors", "FlavorAssignment", "kueue-default-flavors"),
        ("placement", "Placement", "kueue-default-placement"),
    ]
    .iter()
    .map(|(name, extension, plugin)| {
        queue_policy(
            &format!("kueue-default-{name}"),
            &format!(
                "extension: {extension}, mode: Shadow, module: {{path: '{}'}}",
                wasm(plugin).display()
            ),
        )
    })
    .collect();
    let policies = write(dir.path(), "policies.yaml", &objects);

    let shadowed = simulated(&[&shape, &policies]);
    let alone = simulated(&[&shape]);
    assert!(
        outcome(&shadowed) == outcome(&alone),
        "a shadow changed what the cluster got"
    );
    let preempted = alone["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["type"] == "Preempted")
        .count();
    assert!(preempted > 0, "the shape preempts");

    let figures = shadows(&shadowed);
    for (name, f) in &figures {
        assert_eq!(
            [
                count(f, "differ"),
                count(f, "invalid"),
                count(f, "fallback")
            ],
            [0, 0, 0],
            "{name}: {f}"
        );
        assert_eq!(count(f, "agree"), count(f, "decisions"), "{name}: {f}");
    }
    // One flavor and no topology: the shape asks for an order and for victims only.
    for (name, extension) in [
        ("kueue-default-ordering", "ordering"),
        ("kueue-default-preemption", "preemption"),
    ] {
        let f = figures
            .get(name)
            .unwrap_or_else(|| panic!("no {name} in {figures:?}"));
        assert_eq!(f["extension"], extension);
        assert!(count(f, "decisions") > 0, "{name}: {f}");
    }
}

/// One preemption decision as a run's events show it: the cycle, the preemptor, its victims
/// (sorted).
type Preemption = (u64, String, Vec<String>);

/// Every preemption decision a run carried out, in order.
fn preemptions(report: &Value) -> Vec<Preemption> {
    let mut out: Vec<Preemption> = Vec::new();
    for e in report["events"].as_array().expect("events") {
        if e["type"] != "Preempted" {
            continue;
        }
        let cycle = e["cycle"].as_u64().expect("a cycle");
        let preemptor = e["preemptor"].as_str().expect("a preemptor").to_string();
        let victim = e["workload"].as_str().expect("a victim").to_string();
        match out
            .iter_mut()
            .find(|(c, p, _)| *c == cycle && *p == preemptor)
        {
            Some((_, _, victims)) => victims.push(victim),
            None => out.push((cycle, preemptor, vec![victim])),
        }
    }
    for (_, _, victims) in &mut out {
        victims.sort();
    }
    out
}

/// The victims a shadow's difference names (`no victims`: none), sorted.
fn named(victims: &Value) -> Vec<String> {
    let s = victims.as_str().expect("victims");
    let mut v: Vec<String> = if s == "no victims" {
        Vec::new()
    } else {
        s.split(", ").map(str::to_string).collect()
    };
    v.sort();
    v
}

/// A preemption plugin as a `Shadow` QueuePolicy (its module copied beside the scenario and
/// named by a relative path, as a scenario in a repository would), and as `--shadow`: the same
/// figures, decision for decision, and nothing acted on. Over the cycles both runs of
/// `--compare preemption=builtin preemption=PLUGIN` share, they part exactly where the shadow
/// first differs: the same preemptor, the built-in's victims and the plugin's. On
/// `min-runtime.yaml` the whole run is comparable: one decision, one difference.
#[test]
fn a_shadow_queue_policy_reports_what_the_shadow_flag_reports() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("plugins")).expect("mkdir");
    let plugin_scenarios = root().join("tests/plugin-scenarios");
    let slice = large_scale(dir.path(), 1, 20);
    let cases = [
        (plugin_scenarios.join("min-runtime.yaml"), "min-runtime"),
        (
            plugin_scenarios.join("least-lost-work.yaml"),
            "least-lost-work",
        ),
        (slice, "least-lost-work"),
    ];
    let plugins = built().plugins.display().to_string();
    for (scenario, plugin) in cases {
        let file = format!("{plugin}.wasm");
        std::fs::copy(wasm(plugin), dir.path().join("plugins").join(&file)).expect("copies");
        let policy = write(
            dir.path(),
            "trial.yaml",
            &queue_policy(
                &format!("{plugin}-trial"),
                &format!("extension: Preemption, mode: Shadow, module: {{path: plugins/{file}}}"),
            ),
        );
        let scenario = scenario.display().to_string();
        let context = format!("{scenario} shadowed by {plugin}");
        let object = simulated(&[&scenario, &policy.display().to_string()]);
        let flag = simulated(&[
            scenario.as_str(),
            "--plugins",
            &plugins,
            "--shadow",
            &format!("preemption={plugin}"),
        ]);
        let enforced = simulated(&[
            scenario.as_str(),
            "--plugins",
            &plugins,
            "--policy",
            &format!("preemption={plugin}"),
        ]);

        let by_object = &shadows(&object)[&format!("{plugin}-trial")];
        assert_eq!(
            by_object,
            &shadows(&flag)[plugin],
            "{context}: the object and the flag disagree"
        );
        assert!(
            outcome(&object) == outcome(&flag),
            "{context}: a shadow acted"
        );
        assert_eq!(by_object["extension"], "preemption");
        let differ = count(by_object, "differ");
        assert!(differ > 0, "{context}: {by_object}");

        // --compare's two runs: the built-in's (the shadowed run's) and the plugin's.
        let (builtin, other) = (preemptions(&object), preemptions(&enforced));
        let parted = (0..builtin.len())
            .find(|&k| other.get(k) != builtin.get(k))
            .unwrap_or_else(|| panic!("{context}: the runs never part"));
        let (cycle, preemptor, victims) = &builtin[parted];
        let theirs = other
            .get(parted)
            .filter(|(c, p, _)| c == cycle && p == preemptor)
            .map(|(_, _, v)| v.clone())
            .unwrap_or_default();
        let first = &by_object["differences"][0];
        assert_eq!(
            first["workload"].as_str(),
            Some(preemptor.as_str()),
            "{context}"
        );
        assert_eq!(&named(&first["enforced"]), victims, "{context}");
        assert_eq!(named(&first["shadow"]), theirs, "{context}");
        // Every decision carried out before they part agreed.
        assert!(parted as u64 <= count(by_object, "agree"), "{context}");
        if plugin == "min-runtime" {
            assert_eq!((builtin.len(), other.len(), differ), (1, 1, 1), "{context}");
        }
    }
}

/// Two ClusterQueues, `team-a` and `team-b` (labelled `team: a`, `team: b`) in namespaces `a`
/// and `b`, each `min-runtime.yaml`'s: long-train, then fresh-train, then urgent, which
/// preempts one of them — the built-in fresh-train, min-runtime long-train. A third,
/// `team-c`, labelled `team: a` and annotated to keep the built-in.
fn teams() -> String {
    let source = std::fs::read_to_string(root().join("tests/plugin-scenarios/min-runtime.yaml"))
        .expect("reads");
    let docs: Vec<&str> = source.split("\n---\n").skip(1).collect();
    let (flavor, per_team) = docs.split_first().expect("documents");
    let mut out = vec![flavor.to_string()];
    for (team, label, annotation) in [
        ("a", "a", ""),
        ("b", "b", ""),
        ("c", "a", ", policy.wasq.dev/preemption: builtin"),
    ] {
        for doc in per_team {
            out.push(
                doc.replace(
                    "  name: team\n  annotations: {wasq.dev/min-runtime: 10m}\n",
                    &format!(
                        "  name: team-{team}\n  labels: {{team: {label}}}\n  annotations: \
                         {{wasq.dev/min-runtime: 10m{annotation}}}\n"
                    ),
                )
                .replace(
                    "clusterQueue: team}",
                    &format!("clusterQueue: team-{team}}}"),
                )
                .replace("namespace: default", &format!("namespace: {team}")),
            );
        }
    }
    out.join("\n---\n") + "\n"
}

/// Who was preempted in each ClusterQueue, and by which policy's decision.
fn preempted_by(report: &Value) -> BTreeMap<String, (String, String)> {
    report["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["type"] == "Preempted")
        .map(|e| {
            let s = |v: &Value| v.as_str().expect("a string").to_string();
            (
                s(&e["clusterQueue"]),
                (s(&e["workload"]), s(&e["policy"]["name"])),
            )
        })
        .collect()
}

/// An `Enforce` QueuePolicy selecting `team: a` decides for team-a only: team-b keeps the
/// built-in (or `--policy`, which the object outranks), and team-c's annotation outranks the
/// object. The report attributes each preemption to the policy that decided it, the object by
/// its name.
#[test]
fn an_enforce_queue_policy_with_a_selector_decides_only_for_the_queues_it_selects() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = write(dir.path(), "teams.yaml", &teams());
    let policy = write(
        dir.path(),
        "team-a.yaml",
        &queue_policy(
            "team-a-min-runtime",
            &format!(
                "extension: Preemption, module: {{path: '{}'}}, \
                 clusterQueueSelector: {{matchLabels: {{team: a}}}}",
                wasm("min-runtime").display()
            ),
        ),
    );
    let pair = |workload: &str, policy: &str| (workload.to_string(), policy.to_string());
    let report = simulated(&[&scenario, &policy]);
    assert_eq!(
        preempted_by(&report),
        BTreeMap::from([
            ("team-a".into(), pair("a/long-train", "team-a-min-runtime")),
            ("team-b".into(), pair("b/fresh-train", "builtin")),
            ("team-c".into(), pair("c/fresh-train", "builtin")),
        ])
    );
    // --policy decides where no object or annotation does.
    let plugins = built().plugins.display().to_string();
    let (scenario, policy) = (scenario.display().to_string(), policy.display().to_string());
    let report = simulated(&[
        scenario.as_str(),
        &policy,
        "--plugins",
        &plugins,
        "--policy",
        "preemption=least-lost-work",
    ]);
    assert_eq!(
        preempted_by(&report),
        BTreeMap::from([
            ("team-a".into(), pair("a/long-train", "team-a-min-runtime")),
            ("team-b".into(), pair("b/fresh-train", "least-lost-work")),
            ("team-c".into(), pair("c/fresh-train", "builtin")),
        ])
    );
}

/// What the simulator cannot bind fails before the run, naming the object: a module path that
/// does not exist (and the path; `--allow-fallback` runs with the built-in in its place), a
/// module from a ConfigMap (the controller's), and a malformed object (the file, the object
/// and the field).
#[test]
fn queue_policies_the_simulator_cannot_bind_fail_naming_the_object() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = root()
        .join("tests/plugin-scenarios/min-runtime.yaml")
        .display()
        .to_string();
    let fails = |file: &str, spec: &str, name: &str, extra: &[&str]| -> Result<Value, String> {
        let policy = write(dir.path(), file, &queue_policy(name, spec));
        let mut args = vec![scenario.clone(), policy.display().to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        simulate(&args)
    };

    let missing = dir.path().join("nowhere/min-runtime.wasm");
    let spec = "extension: Preemption, module: {path: nowhere/min-runtime.wasm}";
    let err = fails("missing.yaml", spec, "gone", &[]).expect_err("a missing module fails");
    assert!(err.contains("QueuePolicy gone:"), "{err}");
    assert!(err.contains(&missing.display().to_string()), "{err}");
    assert!(err.contains("--allow-fallback"), "{err}");
    let report = fails("missing.yaml", spec, "gone", &["--allow-fallback"])
        .unwrap_or_else(|e| panic!("--allow-fallback runs: {e}"));
    assert_eq!(
        preempted_by(&report)["team"],
        ("default/fresh-train".to_string(), "builtin".to_string())
    );

    let err = fails(
        "configmap.yaml",
        "extension: Preemption, module: {configMap: {name: policies, key: min-runtime.wasm}}",
        "from-cluster",
        &[],
    )
    .expect_err("a ConfigMap module fails");
    assert!(
        err.contains(
            "QueuePolicy from-cluster: spec.module: the simulator reads modules from `path` only"
        ),
        "{err}"
    );

    let err = fails(
        "lower.yaml",
        "extension: preemption, module: {path: a.wasm}",
        "lower-case",
        &[],
    )
    .expect_err("a lower-case extension fails");
    for needle in [
        "lower.yaml",
        "QueuePolicy lower-case",
        "spec.extension",
        "\"Preemption\"",
    ] {
        assert!(err.contains(needle), "{needle:?} missing: {err}");
    }

    let err = fails(
        "two.yaml",
        "extension: Preemption, module: {path: a.wasm, oci: {reference: 'oci://ghcr.io/acme/a:1'}}",
        "two-sources",
        &[],
    )
    .expect_err("two sources fail");
    for needle in [
        "two.yaml",
        "QueuePolicy two-sources",
        "spec.module: exactly one of configMap, path and oci",
    ] {
        assert!(err.contains(needle), "{needle:?} missing: {err}");
    }
}
