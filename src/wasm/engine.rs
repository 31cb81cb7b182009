//! The wasmtime engine shared by every plugin: compilation settings, the epoch ticker that
//! enforces per-call deadlines, and the cache of compiled components by content digest.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use wasmtime::component::Component;
use wasmtime::{Config, Engine};

use super::limits::EPOCH_TICK;

/// A compiled component and what compiling it cost.
#[derive(Clone)]
pub struct Compiled {
    pub component: Component,
    pub compile_ms: f64,
}

/// The engine, its ticker thread, and the component cache.
#[derive(Clone)]
pub struct WasmEngine {
    engine: Engine,
    fuel: bool,
    cache: Arc<Mutex<HashMap<String, Compiled>>>,
}

impl WasmEngine {
    /// Creates an engine. With `fuel`, every call is metered (deterministic, ≈10% slower).
    pub fn new(fuel: bool) -> anyhow::Result<WasmEngine> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.consume_fuel(fuel);
        // One compiler thread: a reload compiles next to the scheduling thread instead of
        // taking every core from it (on 2 cores, parallel compilation stalled cycles for
        // milliseconds; BENCHMARKS.md).
        config.parallel_compilation(false);
        // `WASQ_PROFILE=perfmap`: name plugin functions in `perf` (writes /tmp/perf-PID.map).
        if std::env::var("WASQ_PROFILE").is_ok_and(|v| v == "perfmap") {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&config)?;
        start_ticker(&engine);
        Ok(WasmEngine {
            engine,
            fuel,
            cache: Arc::default(),
        })
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn fuel_enabled(&self) -> bool {
        self.fuel
    }

    /// Compiles `bytes` (whose digest is `digest`), or returns the cached result. Compilation
    /// happens outside the cache lock, so two different files compile in parallel.
    pub fn compile(&self, digest: &str, bytes: &[u8]) -> anyhow::Result<Compiled> {
        if let Some(c) = self.cache.lock().expect("cache lock").get(digest) {
            return Ok(c.clone());
        }
        let start = Instant::now();
        let component = Component::new(&self.engine, bytes)?;
        let compiled = Compiled {
            component,
            compile_ms: start.elapsed().as_secs_f64() * 1e3,
        };
        self.cache
            .lock()
            .expect("cache lock")
            .insert(digest.to_string(), compiled.clone());
        Ok(compiled)
    }

    /// Drops cached components (replaced or refused in a reload); plugins still using one keep
    /// their own reference.
    pub fn forget(&self, digests: &[String]) {
        let mut cache = self.cache.lock().expect("cache lock");
        for d in digests {
            cache.remove(d);
        }
    }
}

/// A thread that advances the engine's epoch every tick for as long as the engine lives.
fn start_ticker(engine: &Engine) {
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("wasq-epoch".into())
        .spawn(move || {
            loop {
                std::thread::sleep(EPOCH_TICK);
                match weak.upgrade() {
                    Some(engine) => engine.increment_epoch(),
                    None => return,
                }
            }
        })
        .expect("spawn epoch ticker");
}
