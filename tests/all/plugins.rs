//! Guest plugins for tests: `plugins/` is built once per test run (cargo for wasm32-wasip2),
//! and registries are loaded from the real files.

use std::path::Path;
use std::sync::OnceLock;

use wasq::wasm::guests::{BuiltPlugins, build_repository_plugins};
use wasq::wasm::{HostOptions, Registry, WasmEngine};

/// The repository's plugins and fixtures, built on first use.
pub fn built() -> &'static BuiltPlugins {
    static BUILT: OnceLock<BuiltPlugins> = OnceLock::new();
    BUILT.get_or_init(|| {
        build_repository_plugins(Path::new(env!("CARGO_MANIFEST_DIR")))
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

/// The repository's plugins with default options.
pub fn plugins() -> Registry {
    registry(&built().plugins, &HostOptions::default())
}

/// The misbehaving fixtures with default options.
pub fn fixtures(options: &HostOptions) -> Registry {
    registry(&built().fixtures, options)
}
