//! The compatibility corpus (docs/plugin-contract.md): plugins built against `wasq:policy@1.0.0`
//! and committed as `.wasm` files in `tests/compat/1.0.0/`. Every later host must load them
//! unchanged and decide with them exactly as they decided when they were built. A change that
//! breaks this test is a new major version of the package, not a fix to the test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasq::wasm::{Bindings, Registry};

use super::plugin_scenarios as features;
use super::plugins::{engine, test_options};
use super::scenarios::outcome_lines;
use super::wasm_parity::{FLAVORS, ORDERING, PREEMPTION, check_parity_in};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat/1.0.0")
}

/// The corpus's `SHA256SUMS`: file name → hex digest.
fn sums() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(corpus().join("SHA256SUMS")).expect("SHA256SUMS");
    text.lines()
        .filter_map(|l| l.split_once("  "))
        .map(|(sum, file)| (file.trim().to_string(), sum.trim().to_string()))
        .collect()
}

fn registry() -> Registry {
    Registry::load_dir(engine(), &corpus(), &test_options()).expect("the corpus directory loads")
}

#[test]
fn the_corpus_is_what_was_built_against_1_0_0_and_every_plugin_loads() {
    let sums = sums();
    let files = wasq::wasm::plugin_files(&corpus()).expect("corpus readable");
    assert!(files.len() >= 6, "{files:?}");
    for file in &files {
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        let bytes = std::fs::read(file).expect("readable");
        let hex: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            sums.get(name.as_ref()),
            Some(&hex),
            "{name}: not the file that was committed"
        );
    }
    let registry = registry();
    let refused: Vec<_> = registry
        .failures()
        .map(|(n, e)| format!("{n}: {e}"))
        .collect();
    assert!(refused.is_empty(), "{refused:#?}");
    for p in registry.plugins() {
        assert_eq!(
            p.info().wit_version.to_string(),
            "1.0.0",
            "{}",
            p.info().name
        );
    }
}

#[test]
fn the_1_0_0_kueue_default_plugins_decide_exactly_like_the_builtin() {
    check_parity_in(&registry(), &[ORDERING, PREEMPTION, FLAVORS], 50);
}

#[test]
fn the_1_0_0_placement_plugin_places_exactly_like_the_builtin() {
    super::wasm_placement::placement_parity_in(&registry());
}

#[test]
fn the_1_0_0_feature_plugins_decide_as_they_did() {
    let registry = registry();
    let mut checked = 0;
    for path in features::scenario_files() {
        let text = std::fs::read_to_string(&path).expect("readable");
        let spec = features::binding_of(&path, &text);
        let plugin = spec.split_once('=').map_or("", |(_, p)| p.trim());
        if registry.get(plugin).is_none() {
            continue;
        }
        let mut bindings = Bindings::default();
        bindings.set(&spec).expect("valid binding");
        let report = features::run(&path, &text, Some((&registry, &bindings)));
        let expected = features::expected_lines(&path.with_extension("plugin.expected"));
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if let Some(diff) = features::compare(&expected, &outcome_lines(&report)) {
            panic!("{name}: the 1.0.0 build of {plugin} decides otherwise:\n{diff}");
        }
        assert!(
            report.summary.fallbacks.is_empty(),
            "{name}: {:?}",
            report.summary.fallbacks
        );
        checked += 1;
    }
    assert!(checked >= 2, "only {checked} feature scenarios ran");
}

/// A host of a later minor version that changes a record, as far as this test needs one: the
/// bindings of `tests/wit-1.2` (1.1 plus `preemption.request.cycle`).
mod next_minor {
    wasmtime::component::bindgen!({
        path: "tests/wit-1.2",
        world: "wasq:policy/preemption-plugin",
    });
}

/// The later minor's `host` import, as a 1.2 host would define it.
struct NextHost;

impl next_minor::wasq::policy::types::Host for NextHost {}

impl next_minor::wasq::policy::host::Host for NextHost {
    fn log(&mut self, _: next_minor::wasq::policy::types::Level, _: String) {}
}

/// A plugin built against 1.0 on a host whose WIT adds a field: the host's imports still
/// satisfy the plugin (a 1.2 `host` serves a 1.0 import), but the 1.2 export types do not fit
/// it — which is why a host whose minor version changes a record keeps bindings for the
/// versions before it, and why `negotiate` serves the plugin 1.0, which this host's bindings
/// (1.1's: it only added an interface) then run.
#[test]
fn a_plugin_built_against_1_0_loads_on_a_host_whose_wit_adds_a_field() {
    use wasmtime::component::{Component, HasSelf, Linker};
    use wasq::wasm::version::{Version, negotiate};

    let v = |minor| Version {
        major: 1,
        minor,
        patch: 0,
    };
    assert_eq!(negotiate(["1.0.0"], &[v(0), v(1), v(2)]), Ok(v(0)));

    let engine = engine();
    let file = corpus().join("kueue-default-preemption.wasm");
    let component = Component::from_file(engine.engine(), &file).expect("compiles");
    let mut linker: Linker<NextHost> = Linker::new(engine.engine());
    next_minor::wasq::policy::host::add_to_linker::<NextHost, HasSelf<NextHost>>(
        &mut linker,
        |h| h,
    )
    .expect("host defined");
    // The 1.0 plugin's `wasq:policy/host@1.0.0` import is served by the 1.2 host's
    // definition: what is left missing is WASI only (the plugin imports `types`, then `host`,
    // then the WASI interfaces, and the first one missing is named).
    let missing = linker
        .instantiate_pre(&component)
        .err()
        .map(|e| format!("{e:#}"))
        .expect("WASI is not defined yet");
    assert!(
        missing.contains("wasi:") && !missing.contains("wasq:policy/host"),
        "{missing}"
    );
    linker
        .define_unknown_imports_as_traps(&component)
        .expect("the rest trap");
    let pre = linker.instantiate_pre(&component).expect("imports served");
    // ... but its export is 1.0's, which 1.2's types do not describe: the bindings refuse it
    // (wasmtime checks the functions' types when it instantiates, not in `Pre::new`).
    let refused = match next_minor::PreemptionPluginPre::new(pre) {
        Err(e) => format!("{e:#}"),
        Ok(pre) => {
            let mut store = wasmtime::Store::new(engine.engine(), NextHost);
            store.set_epoch_deadline(u64::MAX / 2);
            // Only when the engine counts fuel.
            let _ = store.set_fuel(u64::MAX);
            pre.instantiate(&mut store)
                .err()
                .map(|e| format!("{e:#}"))
                .unwrap_or_default()
        }
    };
    assert!(
        refused.contains("type mismatch"),
        "1.2's bindings must not take a 1.0 export as theirs: {refused:?}"
    );
    // Served its own version, it loads and decides (the parity test above runs it).
    let registry = registry();
    let plugin = registry
        .get("kueue-default-preemption")
        .expect("the 1.0 plugin loads");
    assert_eq!(plugin.info().wit_version, v(0));
}
