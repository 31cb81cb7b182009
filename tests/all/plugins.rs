//! Guest plugins for tests: `plugins/` is built once per test run (cargo for wasm32-wasip2, the
//! `test-guests` profile, into `target/test-plugins/`),
//! and registries are loaded from the real files.

use std::path::Path;
use std::sync::OnceLock;

use wasq::sim::{Report, Scenario, Simulation};
use wasq::wasm::guests::{BuiltPlugins, GuestProfile, build_repository_plugins};
use wasq::wasm::{Bindings, HostOptions, Registry, WasmEngine};

use super::scenarios::limits_of;

/// The repository's plugins and fixtures, built on first use.
pub fn built() -> &'static BuiltPlugins {
    static BUILT: OnceLock<BuiltPlugins> = OnceLock::new();
    BUILT.get_or_init(|| {
        build_repository_plugins(Path::new(env!("CARGO_MANIFEST_DIR")), GuestProfile::Test)
            .expect("building plugins/ for wasm32-wasip2")
    })
}

/// One engine per test run: compiled components are cached by digest across registries.
pub fn engine() -> WasmEngine {
    static ENGINE: OnceLock<WasmEngine> = OnceLock::new();
    ENGINE
        .get_or_init(|| WasmEngine::new(false).expect("wasmtime engine"))
        .clone()
}

pub fn registry(dir: &Path, options: &HostOptions) -> Registry {
    Registry::load_dir(engine(), dir, options).unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
}

/// Host options for tests: the default limits, but a CPU deadline that a loaded CI machine
/// cannot hit by accident. Tests about the deadline itself set it explicitly.
pub fn test_options() -> HostOptions {
    HostOptions {
        limits: wasq::wasm::LimitsPatch {
            deadline_ms: Some(2_000),
            ..Default::default()
        },
        ..HostOptions::default()
    }
}

/// The repository's plugins with test options.
pub fn plugins() -> Registry {
    registry(&built().plugins, &test_options())
}

/// The misbehaving fixtures with default options.
pub fn fixtures(options: &HostOptions) -> Registry {
    registry(&built().fixtures, options)
}

/// Simulates a scenario file (its `# wasq-test:` limits apply) with the built-in policies, or
/// with `bindings` resolved in `registry` (ClusterQueue annotations included).
pub fn run(path: &Path, plugins: Option<(&Registry, &Bindings)>) -> Report {
    let text = std::fs::read_to_string(path).expect("scenario readable");
    let scenario = Scenario::load(&[path.to_path_buf()]).expect("scenario loads");
    let mut sim = Simulation::new(scenario);
    let shadows = std::sync::Arc::default();
    if let Some((registry, bindings)) = plugins {
        let (default, per_cq) = registry
            .bind_recording(&sim.scheduler.cluster, bindings, &shadows)
            .expect("bindings resolve");
        sim.scheduler.set_default_policies(default);
        for (cq, set) in per_cq {
            sim.scheduler.set_cq_policies(cq, set);
        }
    }
    sim.run(&limits_of(&text), None);
    let mut report = sim.report();
    report.summary.shadow = shadows.figures();
    report
}

/// Bindings from `EXT=NAME` specs.
pub fn bindings(specs: &[&str]) -> Bindings {
    let mut b = Bindings::default();
    for spec in specs {
        b.set(spec).expect("valid binding");
    }
    b
}
