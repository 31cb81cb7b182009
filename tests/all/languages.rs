//! Policies in Rust, Python and JavaScript: the Python and JavaScript SDKs' own tests, the same
//! policies in three languages deciding alike (Kueue's dispatchers among them), and scaffolds
//! made outside the repository that build, pass their own tests and load. The toolchains are installed by
//! `.ci/ensure-plugin-toolchains` (the README's test command), where `wasq plugin build` finds
//! them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use wasq::policy::dispatch::{self, DispatchPolicy};
use wasq::wasm::{Bindings, Language, Registry, WasmDispatch};

use super::cli::succeeds;
use super::plugin_scenarios::run;
use super::plugins::{built, engine, test_options};
use super::rng::Rng;
use super::wasm_dispatch::{kueue_configurations, load, random_request};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn wasq() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wasq"))
}

/// The toolchains' directory `.ci/ensure-plugin-toolchains` fills (as `wasq plugin build`
/// finds it).
fn toolchains() -> PathBuf {
    if let Some(dir) = std::env::var_os("WASQ_TOOLCHAINS") {
        return dir.into();
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache"));
    cache.join("wasq/toolchains")
}

/// The Python with pytest the toolchains' virtualenv holds.
fn python() -> Command {
    let python = toolchains().join("python/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run .ci/ensure-plugin-toolchains",
        python.display()
    );
    let mut command = Command::new(python);
    // No __pycache__ in the SDK's folder, which the binary carries (build.rs watches it).
    command.env("PYTHONDONTWRITEBYTECODE", "1");
    command
}

/// `wasq plugin build DIR --out OUT`: the component's path.
fn build(dir: &Path, out: &Path) -> PathBuf {
    let mut command = wasq();
    command
        .args(["plugin", "build"])
        .arg(dir)
        .arg("--out")
        .arg(out)
        // A Rust scaffold's release profile has LTO and one codegen unit: the same behaviour
        // builds in half the time without them (as the repository's test guests do).
        .env("CARGO_PROFILE_RELEASE_LTO", "false")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16");
    let printed = succeeds(command, &format!("wasq plugin build {}", dir.display()));
    PathBuf::from(
        String::from_utf8_lossy(&printed.stdout)
            .trim()
            .lines()
            .last()
            .expect("a path"),
    )
}

#[test]
fn the_python_sdk_passes_its_own_tests() {
    let mut command = python();
    // With componentize-py, its bindings are checked against the SDK's plain-Python mirror.
    command
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .env(
            "COMPONENTIZE_PY",
            toolchains().join("python/bin/componentize-py"),
        )
        .current_dir(repo().join("plugins/sdk-python"));
    let out = succeeds(command, "pytest plugins/sdk-python");
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(!summary.contains("skipped"), "{summary}");
}

#[test]
fn the_javascript_sdk_passes_its_own_tests() {
    // Its component tests (COMPONENTIZE_JS and JCO set: about a minute of building and
    // transpiling) are left to the SDK's developers; the host runs its plugins below.
    let mut command = Command::new("node");
    command
        .arg("--test")
        .env_remove("COMPONENTIZE_JS")
        .current_dir(repo().join("plugins/sdk-js"));
    succeeds(command, "node --test plugins/sdk-js");
}

/// The files under `dir` (their paths relative to it, and contents), sorted, without what a
/// build or an install leaves there.
fn tree(dir: &Path, into: &mut Vec<u8>) {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.expect("entry").path();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if ["node_modules", "__pycache__", "target", ".pytest_cache"].contains(&name.as_ref()) {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    for f in files {
        into.extend_from_slice(
            f.strip_prefix(dir)
                .unwrap_or(&f)
                .to_string_lossy()
                .as_bytes(),
        );
        into.push(0);
        into.extend(std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display())));
        into.push(0);
    }
}

/// [`build`] for one of the repository's Python or JavaScript ports, through a cache in the
/// toolchains' folder keyed by everything the build reads: the port, its language's SDK, the WIT
/// package, wasq's build code for the language and the toolchains' pins. Building a 12-18 MB
/// component takes 15-40 s of a core; these tests are about the ports' decisions, and the
/// scaffold test below builds fresh components every run. `WASQ_NO_COMPONENT_CACHE=1` builds
/// anyway.
fn build_port(dir: &Path, out: &Path) -> PathBuf {
    let sdk = if dir.join("package.json").is_file() {
        "plugins/sdk-js"
    } else {
        "plugins/sdk-python"
    };
    let mut inputs = Vec::new();
    for part in [dir, &repo().join(sdk), &repo().join("wit")] {
        tree(part, &mut inputs);
    }
    for file in [
        "src/wasm/language.rs",
        "src/cli/languages.rs",
        ".ci/ensure-plugin-toolchains",
    ] {
        inputs.extend(std::fs::read(repo().join(file)).expect(file));
    }
    let key = wasq::wasm::digest_of(&inputs).replace("sha256:", "");
    let cached = toolchains().join("test-components").join(&key[..16]);
    let hit = std::fs::read_dir(&cached)
        .ok()
        .filter(|_| std::env::var_os("WASQ_NO_COMPONENT_CACHE").is_none())
        .and_then(|mut d| d.next())
        .and_then(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "wasm"));
    if let Some(component) = hit {
        std::fs::create_dir_all(out).expect("out");
        let to = out.join(component.file_name().expect("name"));
        std::fs::copy(&component, &to).expect("copy the cached component");
        return to;
    }
    let built = build(dir, out);
    let staging = cached.with_extension("tmp");
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).expect("cache");
    std::fs::copy(&built, staging.join(built.file_name().expect("name"))).expect("cache");
    let _ = std::fs::remove_dir_all(&cached);
    // Another test process may have put it there meanwhile: either copy is the same.
    let _ = std::fs::rename(&staging, &cached);
    built
}

/// The repository's Python and JavaScript ports, built once, next to the Rust originals.
fn three_languages() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = repo().join("target/test-language-plugins");
        let _ = std::fs::remove_dir_all(&dir);
        for name in ["protect-namespace", "demote-notebooks"] {
            for suffix in ["py", "js"] {
                build_port(&repo().join(format!("plugins/{name}-{suffix}")), &dir);
            }
            std::fs::copy(
                built().plugins.join(format!("{name}.wasm")),
                dir.join(format!("{name}.wasm")),
            )
            .expect("copy the Rust plugin");
        }
        dir
    })
}

/// A report as JSON with the deciding plugin's name and digest replaced and its CPU figures
/// dropped: what must be identical whichever language decided.
fn normalized(report: &wasq::sim::Report, name: &str, digest: &str) -> String {
    let mut value = serde_json::to_value(report).expect("report serializes");
    let plugins = value["summary"]["plugins"].take();
    for p in plugins.as_array().into_iter().flatten() {
        assert_eq!(p["failures"], serde_json::json!({}), "{name}: {p}");
    }
    value
        .to_string()
        .replace(digest, "DIGEST")
        .replace(name, "PLUGIN")
}

fn scenarios() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["tests/scenarios", "tests/plugin-scenarios"] {
        for entry in std::fs::read_dir(repo().join(dir)).expect(dir) {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "yaml") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn the_same_policies_decide_alike_in_rust_python_and_javascript() {
    let registry = Registry::load_dir(engine(), three_languages(), &test_options())
        .expect("the three languages' plugins load");
    for (kind, name) in [
        ("preemption", "protect-namespace"),
        ("ordering", "demote-notebooks"),
    ] {
        for path in scenarios() {
            let text = std::fs::read_to_string(&path).expect("scenario");
            let mut reports = Vec::new();
            for plugin in [name.to_string(), format!("{name}-py"), format!("{name}-js")] {
                let mut b = Bindings::default();
                b.set(&format!("{kind}={plugin}")).expect("binding");
                let digest = registry.get(&plugin).expect("loaded").info().digest.clone();
                let report = run(&path, &text, Some((&registry, &b)));
                assert_eq!(report.summary.fallbacks, [], "{plugin}: {}", path.display());
                reports.push((plugin.clone(), normalized(&report, &plugin, &digest)));
            }
            for (plugin, report) in &reports[1..] {
                assert!(
                    report == &reports[0].1,
                    "{plugin} decides otherwise than {name} on {}",
                    path.display()
                );
            }
        }
    }
    // Each was called; the Python and JavaScript ones are told apart and get their
    // language's memory (the test options set only the deadline).
    for (plugin, language, memory) in [
        ("protect-namespace-py", Language::Python, 512 << 20),
        ("demote-notebooks-py", Language::Python, 512 << 20),
        ("protect-namespace-js", Language::JavaScript, 256 << 20),
        ("demote-notebooks-js", Language::JavaScript, 256 << 20),
        ("protect-namespace", Language::Rust, 64 << 20),
    ] {
        let p = registry.get(plugin).expect("loaded");
        assert!(p.status().calls > 0, "{plugin} was never called");
        assert_eq!(p.info().language, language, "{plugin}");
        assert_eq!(p.limits().memory_bytes, memory, "{plugin}");
    }
}

#[test]
fn kueues_dispatchers_in_python_and_javascript_answer_exactly_like_the_builtin() {
    // Python and JavaScript calls are slow: 25 random requests per configuration, the same
    // for both languages.
    const CASES: usize = 25;
    let dir = repo().join("target/test-language-dispatch");
    let _ = std::fs::remove_dir_all(&dir);
    for (name, language) in [
        ("kueue-default-dispatch-py", Language::Python),
        ("kueue-default-dispatch-js", Language::JavaScript),
    ] {
        build_port(&repo().join("plugins").join(name), &dir);
        let mut rng = Rng(62);
        for (settings, builtin) in kueue_configurations() {
            let plugin = WasmDispatch(load(&dir, name, settings, test_options()));
            assert_eq!(plugin.0.info().language, language, "{name}");
            let mut nonempty = 0;
            for case in 0..CASES {
                let req = random_request(&mut rng);
                let expected = builtin.dispatch(&req).expect("the built-in answers");
                let got = plugin
                    .ask(&req)
                    .unwrap_or_else(|e| panic!("{name} {settings:?} #{case}: {e}"));
                assert_eq!(got, expected, "{name} {settings:?} #{case}: {req:#?}");
                // Checked alike: accepted or refused together.
                assert_eq!(
                    plugin.dispatch(&req).is_ok(),
                    dispatch::verify(&req, &expected).is_ok(),
                    "{name} {settings:?} #{case}"
                );
                nonempty += usize::from(!expected.nominate.is_empty());
            }
            assert!(
                nonempty > CASES / 4,
                "{name} {settings:?}: only {nonempty} answers nominated anything"
            );
            let status = plugin.0.status();
            assert_eq!(status.calls, 2 * CASES as u64, "{name}: {status:?}");
            assert!(status.failures.is_empty(), "{name}: {status:?}");
        }
    }
}

/// `wasq plugin check --output json` of a component.
fn check(file: &Path) -> serde_json::Value {
    let mut command = wasq();
    command
        .args(["plugin", "check", "--output", "json"])
        .arg(file);
    let out = succeeds(command, &format!("wasq plugin check {}", file.display()));
    serde_json::from_slice(&out.stdout).expect("json")
}

/// Every kind's scaffold in `lang`, made outside the repository by `wasq plugin new`, passes its
/// own tests; the preemption one is built, and loads with the contract's version. One test per
/// language, so that the three run side by side (each is minutes of toolchain work).
fn scaffolds_build_pass_their_tests_and_load(lang: &str, kinds: &[&str]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("plugins");
    for kind in kinds {
        let name = format!("my-{lang}-{kind}");
        let mut new = wasq();
        new.args([
            "plugin", "new", &name, "--kind", kind, "--lang", lang, "--dir",
        ])
        .arg(dir.path());
        succeeds(new, &format!("wasq plugin new {name}"));
        let plugin = dir.path().join(&name);
        let mut test = match lang {
            "python" => {
                let mut c = python();
                c.args(["-m", "pytest", "-q", "-p", "no:cacheprovider"]);
                c
            }
            "javascript" => {
                let mut c = Command::new("node");
                c.arg("--test");
                c
            }
            _ => {
                let mut c = Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()));
                // A target folder kept in the toolchains' cache: the scaffold's
                // dependencies from crates.io (wit-bindgen's) are compiled once, not on
                // every run; the crate and its SDK copy are compiled each time.
                c.args(["test", "--offline", "--target-dir"])
                    .arg(toolchains().join("test-scaffold-target"))
                    // The outer build's settings are for the host (as `wasm::guests` has it).
                    .env_remove("CARGO_TARGET_DIR")
                    .env_remove("RUSTFLAGS")
                    .env_remove("RUSTC_WORKSPACE_WRAPPER")
                    .env_remove("CLIPPY_ARGS");
                c
            }
        };
        test.current_dir(&plugin);
        succeeds(test, &format!("{name}'s own tests"));
        // Building every kind costs a component each: one per language is built and
        // loaded, the preemption scaffold.
        if *kind == "preemption" {
            let file = build(&plugin, &out);
            assert_eq!(file, out.join(format!("{name}.wasm")));
            // A build leaves the sources as they were (a changed SDK folder would also
            // rebuild wasq, which carries it).
            assert!(
                !plugin.join("__pycache__").exists()
                    && !plugin.join("wasq_policy/__pycache__").exists(),
                "{name}: the build wrote bytecode into the sources"
            );
            let info = check(&file);
            assert_eq!(info["kind"], "preemption");
            assert_eq!(info["language"], lang, "{info}");
            assert_eq!(info["wit_version"], wasq::wasm::WIT_VERSION.to_string());
        }
    }
    // A directory that holds no plugin is named with what was expected.
    let mut empty = wasq();
    empty
        .args(["plugin", "build"])
        .arg(dir.path())
        .arg("--out")
        .arg(&out);
    let refused = empty.output().expect("runs");
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("pyproject.toml (Python)"), "{err}");
}

const EVERY_KIND: [&str; 5] = [
    "ordering",
    "preemption",
    "flavor-assignment",
    "placement",
    "dispatch",
];

#[test]
fn python_scaffolds_made_outside_the_repository_build_pass_their_tests_and_load() {
    scaffolds_build_pass_their_tests_and_load("python", &EVERY_KIND);
}

#[test]
fn javascript_scaffolds_made_outside_the_repository_build_pass_their_tests_and_load() {
    scaffolds_build_pass_their_tests_and_load("javascript", &EVERY_KIND);
}

#[test]
fn rust_scaffolds_made_outside_the_repository_build_pass_their_tests_and_load() {
    scaffolds_build_pass_their_tests_and_load("rust", &["preemption", "dispatch"]);
}

#[test]
fn a_missing_toolchain_is_named_with_how_to_install_it() {
    let out_dir = tempfile::tempdir().expect("tempdir");
    for (plugin, says) in [
        (
            "protect-namespace-py",
            "componentize-py is not installed: it is neither on PATH nor at /nonexistent/python/bin/componentize-py. Install it with\n    pip install componentize-py==0.25.1",
        ),
        (
            "protect-namespace-js",
            "componentize-js is not installed: it is neither on PATH nor at /nonexistent/node/node_modules/.bin/componentize-js. Install it with\n    npm install @bytecodealliance/componentize-js@0.23.0 @bytecodealliance/jco@1.35.0",
        ),
    ] {
        let mut command = wasq();
        command
            .args(["plugin", "build"])
            .arg(repo().join("plugins").join(plugin))
            .arg("--out")
            .arg(out_dir.path())
            .env("PATH", "/nonexistent")
            .env("WASQ_TOOLCHAINS", "/nonexistent");
        let out = command.output().expect("runs");
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{err}");
    }
}

#[test]
fn a_manifest_naming_no_valid_plugin_is_refused_with_its_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plugin = dir.path().join("p");
    std::fs::create_dir_all(&plugin).expect("mkdir");
    std::fs::write(
        plugin.join("package.json"),
        r#"{"name": "@me/policy", "wasq": {"kind": "preemption"}}"#,
    )
    .expect("write");
    let out = wasq()
        .args(["plugin", "build"])
        .arg(&plugin)
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("package.json name: `@me/policy` is not a valid plugin name"),
        "{err}"
    );
    std::fs::write(
        plugin.join("package.json"),
        r#"{"name": "policy", "wasq": {"kind": "scheduling"}}"#,
    )
    .expect("write");
    let out = wasq()
        .args(["plugin", "build"])
        .arg(&plugin)
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"wasq\".kind = \"scheduling\" is none of ordering, preemption"),
        "{err}"
    );
}
