//! The `wasq` binary itself: plugin inspection and scaffolding, the policy flags.

use std::process::Command;

use super::plugins::built;

fn wasq() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wasq"))
}

/// Runs `command`, failing the test with its output unless it succeeds.
pub(super) fn succeeds(mut command: Command, what: &str) -> std::process::Output {
    let out = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// What a `-o json` command printed, once it succeeded.
fn json_of(command: Command, what: &str) -> serde_json::Value {
    serde_json::from_slice(&succeeds(command, what).stdout).expect("json")
}

#[test]
fn plugin_check_reports_what_the_host_sees_and_refuses_what_it_would_refuse() {
    let ok = wasq()
        .args(["plugin", "check", "--output", "json"])
        .arg(built().plugins.join("kueue-default-preemption.wasm"))
        .output()
        .expect("runs");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let info: serde_json::Value = serde_json::from_slice(&ok.stdout).expect("json");
    assert_eq!(info["kind"], "preemption");
    assert_eq!(info["name"], "kueue-default-preemption");
    assert!(
        info["digest"]
            .as_str()
            .is_some_and(|d| d.starts_with("sha256:"))
    );
    assert!(
        info["imports"]
            .as_array()
            .is_some_and(|i| i.iter().any(|i| i == "wasq:policy/host@1.1.0"))
    );
    let refused = wasq()
        .args(["plugin", "check"])
        .arg(built().fixtures.join("fixture-forbidden-import.wasm"))
        .output()
        .expect("runs");
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("imports `wasi:"), "{err}");
}

#[test]
fn plugin_new_scaffolds_a_crate_for_each_kind() {
    let dir = tempfile::tempdir().expect("tempdir");
    for kind in [
        "ordering",
        "preemption",
        "flavor-assignment",
        "placement",
        "dispatch",
    ] {
        let name = format!("my-{kind}");
        let out = wasq()
            .args(["plugin", "new", &name, "--kind", kind, "--dir"])
            .arg(dir.path())
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let manifest =
            std::fs::read_to_string(dir.path().join(&name).join("Cargo.toml")).expect("manifest");
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "{manifest}"
        );
        assert!(
            manifest.contains("plugins/sdk"),
            "the SDK path is filled in: {manifest}"
        );
        assert!(!manifest.contains("{{"), "{manifest}");
        let lib = std::fs::read_to_string(dir.path().join(&name).join("src/lib.rs")).expect("lib");
        assert!(
            lib.contains("#[test]") || lib.contains("#[cfg(test)]"),
            "has its own test"
        );
        if kind == "preemption" {
            // The protect-namespace example, named after the new plugin.
            assert!(lib.contains("namespace(catalog"), "{lib}");
            assert!(
                lib.contains(&format!("pluginSettings.{name}.namespaces")),
                "{lib}"
            );
        }
    }
    // Refuses to overwrite, and refuses names cargo would refuse.
    let again = wasq()
        .args([
            "plugin",
            "new",
            "my-ordering",
            "--kind",
            "ordering",
            "--dir",
        ])
        .arg(dir.path())
        .output()
        .expect("runs");
    assert!(!again.status.success());
    let bad = wasq()
        .args(["plugin", "new", "My Plugin", "--kind", "ordering", "--dir"])
        .arg(dir.path())
        .output()
        .expect("runs");
    assert!(!bad.status.success());
}

#[test]
fn simulate_names_an_unknown_plugin_and_lists_what_exists() {
    let out = wasq()
        .args([
            "simulate",
            "tests/scenarios/preempt-lowest-priority.yaml",
            "--plugins",
        ])
        .arg(&built().plugins)
        .args(["--policy", "preemption=least-lost-wrok"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no plugin named `least-lost-wrok`"), "{err}");
    assert!(err.contains("least-lost-work"), "{err}");
}

#[test]
fn controller_without_a_cluster_says_so_once_and_how_to_name_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("no-such-kubeconfig");
    let out = wasq()
        .arg("controller")
        .env("KUBECONFIG", &missing)
        .env("HOME", dir.path())
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .env_remove("WASQ_LOG")
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let expected = format!(
        "error: no cluster to reach: not running in a pod (KUBERNETES_SERVICE_HOST is unset) and \
         no kubeconfig at {}; set KUBECONFIG to a cluster's kubeconfig, or run wasq controller \
         inside the cluster\n",
        missing.display()
    );
    assert_eq!(err, expected, "one message, said once");
}

#[test]
fn plugin_check_against_a_scenario_lists_what_the_plugin_would_change() {
    let built = built();
    let scenario = "tests/scenarios/preempt-lowest-priority.yaml";
    // A plugin deciding like the built-in: nothing differs, nothing refused.
    let same = wasq()
        .args(["plugin", "check"])
        .arg(built.plugins.join("kueue-default-preemption.wasm"))
        .args(["--against", scenario])
        .output()
        .expect("runs");
    assert!(same.status.success(), "{same:?}");
    let text = String::from_utf8_lossy(&same.stdout);
    assert!(
        text.contains("decisions: identical to the built-in policy's")
            && text.contains("refused answers and failures: none"),
        "{text}"
    );
    // A plugin whose answers are refused: each refusal is listed with its reason, as JSON too.
    let greedy = wasq()
        .args(["plugin", "check"])
        .arg(built.fixtures.join("fixture-all-candidates.wasm"))
        .args(["--against", scenario, "--output", "json"])
        .output()
        .expect("runs");
    assert!(greedy.status.success(), "{greedy:?}");
    let json: serde_json::Value = serde_json::from_slice(&greedy.stdout).expect("json");
    assert_eq!(json["plugin"], "fixture-all-candidates");
    assert_eq!(json["differences"], serde_json::json!([]));
    assert_eq!(json["fallbacks"][0]["reason"], "invalid-answer");
    assert!(
        json["fallbacks"][0]["lastError"]
            .as_str()
            .unwrap()
            .contains("is not needed")
    );
}

/// Generated fair-sharing scenario 6 preempts and readmits the same Workloads at one instant
/// without end (both sides decide alike; see the parity tests): `--max-cycles-per-instant`
/// is how many such cycles run before the clock moves on, and 0 is refused.
#[test]
fn max_cycles_per_instant_bounds_a_livelock_and_refuses_zero() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("livelock.yaml");
    let scenario = super::wasm_parity::generated_scenario(6, true, false);
    std::fs::write(&path, scenario).expect("write scenario");
    let cycles = |guard: &str| {
        let out = wasq()
            .arg("simulate")
            .arg(&path)
            .args(["--until", "3m", "--output", "json"])
            .args(["--max-cycles-per-instant", guard])
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("no steady state at this instant"), "{err}");
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
        report["summary"]["cycles"].as_u64().expect("cycles")
    };
    let (few, more) = (cycles("5"), cycles("50"));
    assert!(
        few < more,
        "a lower guard runs fewer cycles: {few} against {more}"
    );
    let out = wasq()
        .arg("simulate")
        .arg(&path)
        .args(["--max-cycles-per-instant", "0"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--max-cycles-per-instant"), "{err}");
}

/// A bound plugin whose file cannot be loaded fails the run, naming the file and the reason
/// (otherwise the built-in decides throughout, and `--compare` compares it with itself);
/// `--allow-fallback` runs it anyway, every such decision a counted fallback.
#[test]
fn simulate_refuses_a_bound_plugin_that_cannot_load_unless_fallback_is_allowed() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("broken.wasm"), "not a component\n").expect("write");
    let scenario = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios/preempt-lowest-priority.yaml");
    let simulate = |extra: &[&str]| {
        wasq()
            .args(["simulate", "--output", "json", "--plugins"])
            .arg(dir.path())
            .args(extra)
            .arg(&scenario)
            .output()
            .expect("runs")
    };
    for args in [
        &["--policy", "preemption=broken"][..],
        &["--compare", "preemption=builtin", "preemption=broken"][..],
    ] {
        let refused = simulate(args);
        assert!(!refused.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&refused.stderr);
        assert!(
            err.contains("binds plugin `broken`, which cannot be loaded")
                && err.contains("broken.wasm: not a WebAssembly component")
                && err.contains("--allow-fallback"),
            "{args:?}: {err}"
        );
    }
    let allowed = simulate(&["--policy", "preemption=broken", "--allow-fallback"]);
    assert!(
        allowed.status.success(),
        "{}",
        String::from_utf8_lossy(&allowed.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&allowed.stdout).expect("json");
    let fallbacks = report["summary"]["fallbacks"]
        .as_array()
        .expect("fallbacks");
    assert!(
        fallbacks
            .iter()
            .any(|f| f["plugin"] == "broken" && f["reason"] == "load-error"),
        "{fallbacks:?}"
    );
}

/// `wasq --version` names what an operator needs to report a problem, and completions
/// generate for the common shells.
#[test]
fn version_names_the_commit_the_contract_and_kueue_and_completions_generate() {
    let out = wasq().arg("--version").output().expect("runs");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for field in [
        "wasq 0.",
        "commit:",
        "wasq:policy",
        "kueue.x-k8s.io/v1beta2",
    ] {
        assert!(text.contains(field), "{field}: {text}");
    }
    for shell in ["bash", "zsh", "fish"] {
        let out = wasq().args(["completion", shell]).output().expect("runs");
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(
            script.contains("simulate") && script.contains("allow-fallback"),
            "{shell}: {script}"
        );
    }
}

/// The compiled-module cache: a second run loads every plugin compiled, compiling nothing; an
/// entry whose bytes were damaged is compiled again, never run.
#[test]
fn a_second_run_loads_plugins_compiled_and_a_damaged_entry_is_compiled_again() {
    let cache = tempfile::tempdir().expect("tempdir");
    let list = || {
        let mut command = wasq();
        command
            .args(["plugin", "list", "-o", "json", "--plugins"])
            .arg(&built().plugins)
            .arg("--cache-dir")
            .arg(cache.path());
        let rows = json_of(command, "wasq plugin list");
        let rows = rows.as_array().expect("a list");
        assert!(rows.len() >= 10, "{rows:?}");
        assert!(rows.iter().all(|r| r["status"] == "loaded"), "{rows:?}");
        rows.iter().filter(|r| r["from_cache"] == true).count()
    };
    assert_eq!(list(), 0, "a cold cache compiles every plugin");
    let total = {
        let warm = list();
        assert!(
            warm >= 10,
            "a warm cache compiles nothing: {warm} loaded compiled"
        );
        warm
    };
    // Damage one entry: that one plugin is compiled again, the others still come from the cache.
    let entry = walk(cache.path())
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .expect("a cache entry");
    let mut bytes = std::fs::read(&entry).expect("entry");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&entry, bytes).expect("damaged");
    assert_eq!(list(), total - 1);
    assert_eq!(list(), total, "rewritten after it was compiled again");
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// The function cache under `--cache-dir`: a component never compiled before, but built with the
/// same SDK as one that was, takes the functions they share from the cache (in another engine, as
/// another run would), and decides as if compiled afresh.
#[test]
fn a_new_component_compiles_only_the_functions_not_seen_before() {
    use wasq::wasm::WasmEngine;
    let cache = tempfile::tempdir().expect("tempdir");
    let compile = |name: &str| {
        let engine = WasmEngine::with_disk_cache(false, cache.path()).expect("engine");
        let bytes = std::fs::read(built().plugins.join(format!("{name}.wasm"))).expect("plugin");
        let digest = wasq::wasm::digest_of(&bytes);
        engine.compile(&digest, &bytes).expect("compiles");
        engine.function_cache_stats()
    };
    let first = compile("kueue-default-preemption");
    assert!(first.misses > 0, "{first:?}");
    assert!(
        cache.path().join("functions").is_dir(),
        "the functions are kept beside the compiled components"
    );
    let second = compile("protect-namespace");
    assert!(
        second.hits > second.misses,
        "most of a second plugin of the same SDK comes from the cache: {second:?}"
    );
}

/// Outside a source tree the plugin directory is the user's data directory; `--policy-config`
/// and its old name `--config` are one option.
#[test]
fn an_installed_binary_finds_plugins_in_the_data_directory_and_takes_both_config_names() {
    let home = tempfile::tempdir().expect("tempdir");
    let data = home.path().join(".local/share/wasq/plugins");
    std::fs::create_dir_all(&data).unwrap();
    let plugin = built().plugins.join("least-lost-work.wasm");
    std::fs::copy(&plugin, data.join("least-lost-work.wasm")).unwrap();
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let mut list = wasq();
    list.args(["plugin", "list", "-o", "json", "--no-cache"])
        .current_dir(elsewhere.path())
        .env("HOME", home.path())
        .env_remove("XDG_DATA_HOME");
    let rows = json_of(list, "wasq plugin list");
    assert_eq!(rows.as_array().map(Vec::len), Some(1), "{rows}");
    assert_eq!(rows[0]["name"], "least-lost-work");

    let config = elsewhere.path().join("policy.yaml");
    std::fs::write(&config, "limits: {deadlineMs: 123}\n").unwrap();
    let deadline = |flag: &str| {
        let mut check = wasq();
        check
            .args(["plugin", "check", "-o", "json", "--no-cache", flag])
            .arg(&config)
            .arg(&plugin);
        json_of(check, "wasq plugin check")["limits"]["deadlineMs"].clone()
    };
    assert_eq!(deadline("--policy-config"), 123);
    assert_eq!(deadline("--config"), 123);
}

#[test]
fn shadow_report_reads_a_simulator_report_and_names_what_it_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("trial.yaml");
    std::fs::write(
        &policy,
        format!(
            "apiVersion: policies.wasq.dev/v1alpha1\nkind: QueuePolicy\nmetadata: {{name: lost-work}}\n\
             spec:\n  extension: Preemption\n  mode: Shadow\n  module: {{path: {}}}\n",
            built().plugins.join("least-lost-work.wasm").display()
        ),
    )
    .unwrap();
    let mut simulate = wasq();
    simulate
        .args([
            "simulate",
            "examples/plugins/least-lost-work.yaml",
            "-o",
            "json",
        ])
        .arg(&policy);
    let run = succeeds(simulate, "simulate with a shadow QueuePolicy");
    let report = dir.path().join("run.json");
    std::fs::write(&report, &run.stdout).unwrap();
    let figures: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let figures = &figures["summary"]["shadow"]["lost-work"];
    assert!(figures["differ"].as_u64().unwrap() >= 1, "{figures}");

    let mut shadow_report = wasq();
    shadow_report
        .args([
            "policy",
            "shadow-report",
            "lost-work",
            "-o",
            "json",
            "--from-report",
        ])
        .arg(&report);
    let out = json_of(shadow_report, "shadow-report");
    assert_eq!(out["decisions"], figures["decisions"]);
    assert_eq!(out["differ"], figures["differ"]);
    assert_eq!(out["differencesKept"], "first");
    assert_eq!(
        out["recentDifferences"][0]["workload"],
        figures["differences"][0]["workload"]
    );

    let mut table = wasq();
    table
        .args(["policy", "shadow-report", "lost-work", "--from-report"])
        .arg(&report);
    let text = String::from_utf8(succeeds(table, "shadow-report table").stdout).unwrap();
    assert!(text.contains("First differing decisions"), "{text}");

    let missing = wasq()
        .args(["policy", "shadow-report", "nope", "--from-report"])
        .arg(&report)
        .output()
        .unwrap();
    assert!(!missing.status.success());
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(
        err.contains("no shadow named nope (the report has: lost-work)"),
        "{err}"
    );
}

/// `wasq bench --driver controller` on a small `Generator` against the in-process API server:
/// every Workload admitted and finished, the controller's requests counted; the flags of a
/// real cluster refused where they cannot apply.
#[test]
fn the_controller_bench_runs_a_generator_file_and_refuses_misplaced_cluster_flags() {
    let dir = tempfile::tempdir().expect("tempdir");
    let generator = dir.path().join("small.yaml");
    std::fs::write(
        &generator,
        "apiVersion: sim.wasq.dev/v1alpha1\nkind: Generator\nmetadata: {name: small}\nspec:\n  \
         shape: baseline\n  cohorts: 1\n  queuesPerCohort: 2\n  classes:\n  \
         - {name: small, count: 12, interval: 50ms, runtime: 100ms, priority: 50, cpu: 1}\n  \
         - {name: large, count: 2, interval: 300ms, runtime: 200ms, priority: 200, cpu: 20}\n",
    )
    .expect("write");
    let mut bench = wasq();
    bench
        .args(["bench", "--driver", "controller", "--generator"])
        .arg(&generator)
        .args(["--time-limit", "2m", "-o", "json"]);
    let report = json_of(bench, "wasq bench --driver controller");
    assert_eq!(report["apiServer"], "double");
    assert_eq!(report["shape"], "baseline (customised)");
    assert_eq!(report["workloads"], 28);
    assert_eq!(report["completed"], true, "{report}");
    assert!(report["admissions"].as_u64() >= Some(28), "{report}");
    assert_eq!(report["kubeApiQps"], 300.0);
    assert!(report["requests"]["patch workloads/status"].as_u64() >= Some(28));
    assert!(report.get("apiServerProcess").is_none());

    for (args, says) in [
        (
            &[
                "bench",
                "--driver",
                "controller",
                "--controller-metrics",
                "http://127.0.0.1:1/metrics",
            ][..],
            "--kubeconfig",
        ),
        (
            &["bench", "--kubeconfig", "/nonexistent"][..],
            "apply to the controller driver",
        ),
        (
            &["bench", "--driver", "controller", "--scale", "3"][..],
            "--scale applies to the simulator driver only",
        ),
    ] {
        let out = wasq().args(args).output().expect("runs");
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// `wasq explain` on a workload placed by topology-aware scheduling: where its pods went, per
/// level and per node, and the placement policy that chose it.
#[test]
fn explain_tells_where_a_tas_workload_was_placed() {
    let mut simulate = wasq();
    simulate
        .args(["simulate", "examples/tas-racks.yaml", "-o", "json"])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    let out = succeeds(simulate, "simulate").stdout;
    let report: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("tas.json");
    std::fs::write(&file, &out).expect("writable");
    let warmup = report["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .find(|n| n.starts_with("job-warmup-a-"))
        .expect("the warm-up job's Workload");
    let mut explain = wasq();
    explain.args(["explain", warmup]).arg(&file);
    let text = String::from_utf8(succeeds(explain, "explain").stdout).expect("utf-8");
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    assert_eq!(
        lines[1..4],
        [
            "0s  arrived",
            "0s  reserved quota in training (cycle 1), flavors chosen by the built-in",
            "0s  admitted: main ×10 on cpu=a100, nvidia.com/gpu=a100, ordered by the built-in",
        ],
        "{text}"
    );
    assert_eq!(
        lines[4],
        "0s  placed main in flavor a100 across 1 cloud.example.com/rack, 2 kubernetes.io/hostname \
         (r1-node-1 ×8, r1-node-2 ×2), placed by the built-in",
        "{text}"
    );
}

/// `wasq explain` with Kueue's built-in shadowing the plugin that chose the victims: what the
/// built-in would have done instead, told to the victim.
#[test]
fn explain_says_what_the_builtin_would_have_done_instead() {
    let mut simulate = wasq();
    simulate
        .args([
            "simulate",
            "tests/plugin-scenarios/min-runtime.yaml",
            "-o",
            "json",
            "--plugins",
        ])
        .arg(&built().plugins)
        .args([
            "--policy",
            "preemption=min-runtime",
            "--shadow",
            "preemption=builtin",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("shadowed.json");
    std::fs::write(&file, succeeds(simulate, "simulate").stdout).expect("writable");
    let mut explain = wasq();
    explain.args(["explain", "default/long-train"]).arg(&file);
    let text = String::from_utf8(succeeds(explain, "explain").stdout).expect("utf-8");
    let tail: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("where a shadow policy would have decided otherwise:"))
        .map(str::trim)
        .collect();
    assert_eq!(
        tail,
        [
            "where a shadow policy would have decided otherwise:",
            "preemption for default/urgent: enforced default/long-train; builtin would have \
             chosen default/fresh-train",
        ],
        "{text}"
    );
}

/// `wasq explain` tells one workload's story from a report: its wait and why, its admissions
/// with their flavors, who preempted it and which policy (name and digest) chose it as a victim.
#[test]
fn explain_tells_a_preempted_workloads_story_and_names_the_policies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |name: &str, extra: &[&str]| {
        let mut simulate = wasq();
        simulate
            .args([
                "simulate",
                "examples/reclaim-borrowed-quota.yaml",
                "-o",
                "json",
                "--plugins",
            ])
            .arg(&built().plugins)
            .args(extra)
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        let report = dir.path().join(name);
        std::fs::write(&report, succeeds(simulate, "simulate").stdout).expect("writable");
        report
    };
    let story = |report: &std::path::Path, workload: &str| {
        let mut explain = wasq();
        explain.args(["explain", workload]).arg(report);
        String::from_utf8(succeeds(explain, "explain").stdout).expect("utf-8")
    };
    let builtin = run("builtin.json", &[]);
    let text = story(&builtin, "research/research-sweep");
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    assert_eq!(
        lines,
        [
            "research/research-sweep: ClusterQueue research, LocalQueue research/experiments, priority 0",
            "0s  arrived",
            "0s  reserved quota in research (cycle 1), flavors chosen by the built-in",
            "0s  admitted: main ×6 on cpu=default-flavor, memory=default-flavor, ordered by the built-in",
            "300s  preempted by prod/prod-release (InCohortReclamation), victims chosen by the built-in",
            "300s  waited 1200s: Preempted; WaitingForQuota: Workload no longer fits after processing \
             another workload; WaitingForQuota: couldn't assign flavors to pod set main: insufficient \
             unused quota for cpu in flavor default-flavor, 6 more needed",
            "1500s  reserved quota in research (cycle 9), flavors chosen by the built-in",
            "1500s  admitted: main ×6 on cpu=default-flavor, memory=default-flavor, ordered by the built-in",
            "5100s  finished",
        ],
        "{text}"
    );
    // The preemptor's side: whom it preempted, by a name only it has.
    let text = story(&builtin, "prod-release");
    assert!(
        text.contains("300s  preempted research/research-sweep (InCohortReclamation), victims chosen by the built-in"),
        "{text}"
    );
    // With a plugin choosing the victims, its name and digest.
    let plugin = run("plugin.json", &["--policy", "preemption=least-lost-work"]);
    let text = story(&plugin, "research/research-sweep");
    assert!(
        text.contains("(InCohortReclamation), victims chosen by least-lost-work (sha256:"),
        "{text}"
    );
    // An unknown name is refused with the near ones.
    let mut explain = wasq();
    explain.args(["explain", "research-swep"]).arg(&builtin);
    let out = explain.output().expect("runs");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("did you mean research/research-notebook, research/research-sweep?"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
