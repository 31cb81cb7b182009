//! The wasmtime engine shared by every plugin: compilation settings, the epoch ticker that
//! enforces per-call deadlines, and the caches of compiled components by content digest — in
//! memory for the process, and on disk across runs (`--cache-dir`, by default
//! `$XDG_CACHE_HOME/wasq`): a second `wasq simulate --plugins DIR` compiles nothing.
//!
//! A disk entry is `<dir>/<engine>/<sha256 of the .wasm>.cwasm`, wasmtime's own compiled form,
//! beside `….sha256`, the digest of those bytes; `<engine>` names the wasmtime version and
//! engine settings (`Engine::precompile_compatibility_hash`). An entry whose bytes do not
//! match their digest, or that wasmtime refuses, is compiled again and rewritten, never run
//! (`wasq_precompiled`). Entries are written to a temporary file and renamed, so a reader never
//! sees half of one.
//!
//! Below both, a component not found in either cache is compiled through Cranelift's function
//! cache (`function_cache`), in memory or under `<dir>/functions`: only its functions not seen
//! before are compiled.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use wasmtime::component::Component;
use wasmtime::{Config, Engine};

use super::function_cache::{FunctionCache, FunctionCacheStats};
use super::limits::EPOCH_TICK;

/// A compiled component and what compiling it cost.
#[derive(Clone)]
pub struct Compiled {
    pub component: Component,
    /// Milliseconds spent compiling it (or loading it from the disk cache).
    pub compile_ms: f64,
    /// Loaded from the disk cache rather than compiled.
    pub from_cache: bool,
}

/// The engine, its ticker thread, and the component caches.
#[derive(Clone)]
pub struct WasmEngine {
    engine: Engine,
    fuel: bool,
    cache: Arc<Mutex<HashMap<String, Compiled>>>,
    /// The disk cache's directory for this engine's settings; `None`: no disk cache.
    disk: Option<PathBuf>,
    /// Components compiled (not found in either cache) since the engine was made.
    compiled: Arc<AtomicU64>,
    /// Compiled functions, shared by every component this engine compiles.
    functions: Arc<FunctionCache>,
}

/// The default directory of the disk cache: `$XDG_CACHE_HOME/wasq`, else `$HOME/.cache/wasq`.
pub fn default_cache_dir() -> Option<PathBuf> {
    let non_empty = |v: &str| {
        std::env::var_os(v)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
    };
    non_empty("XDG_CACHE_HOME")
        .or_else(|| non_empty("HOME").map(|h| h.join(".cache")))
        .map(|d| d.join("wasq"))
}

impl WasmEngine {
    /// Creates an engine. With `fuel`, every call is metered (deterministic, ≈10% slower).
    pub fn new(fuel: bool) -> anyhow::Result<WasmEngine> {
        WasmEngine::build(fuel, None)
    }

    /// An engine that also keeps compiled components in `dir` across runs (see the module's
    /// documentation), in a subdirectory for this wasmtime version and these settings, and
    /// compiled functions in `dir/functions`.
    pub fn with_disk_cache(fuel: bool, dir: &Path) -> anyhow::Result<WasmEngine> {
        WasmEngine::build(fuel, Some(dir))
    }

    fn build(fuel: bool, dir: Option<&Path>) -> anyhow::Result<WasmEngine> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.consume_fuel(fuel);
        // One compiler thread: a reload compiles next to the scheduling thread instead of
        // taking every core from it (on 2 cores, parallel compilation stalled cycles for
        // milliseconds; BENCHMARKS.md).
        config.parallel_compilation(false);
        // Cranelift's keys cover the function, the target and the compiler's settings, so one
        // directory of functions serves engines of every setting.
        let functions = Arc::new(match dir {
            Some(dir) => FunctionCache::on_disk(dir),
            None => FunctionCache::in_memory(),
        });
        config.enable_incremental_compilation(functions.clone())?;
        // `WASQ_PROFILE=perfmap`: name plugin functions in `perf` (writes /tmp/perf-PID.map).
        if std::env::var("WASQ_PROFILE").is_ok_and(|v| v == "perfmap") {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&config)?;
        start_ticker(&engine);
        let disk = dir.map(|dir| {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            engine.precompile_compatibility_hash().hash(&mut hasher);
            dir.join(format!("{:016x}", hasher.finish()))
        });
        Ok(WasmEngine {
            engine,
            fuel,
            cache: Arc::default(),
            disk,
            compiled: Arc::default(),
            functions,
        })
    }

    /// How often compiling found a function already compiled, and how often it did not.
    pub fn function_cache_stats(&self) -> FunctionCacheStats {
        self.functions.stats()
    }

    /// How many components this engine compiled (found in neither cache).
    pub fn compiled_count(&self) -> u64 {
        self.compiled.load(Ordering::Relaxed)
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
        let (component, from_cache) = match &self.disk {
            Some(dir) => self.through_disk(dir, bytes)?,
            None => {
                self.compiled.fetch_add(1, Ordering::Relaxed);
                (Component::new(&self.engine, bytes)?, false)
            }
        };
        let compiled = Compiled {
            component,
            compile_ms: start.elapsed().as_secs_f64() * 1e3,
            from_cache,
        };
        self.cache
            .lock()
            .expect("cache lock")
            .insert(digest.to_string(), compiled.clone());
        Ok(compiled)
    }

    /// The component of `bytes` from the disk cache in `dir`, or compiled and written there;
    /// whether it came from the cache. A cache that cannot be written is only logged: the
    /// component compiled is used all the same.
    fn through_disk(&self, dir: &Path, bytes: &[u8]) -> anyhow::Result<(Component, bool)> {
        let key = wasq_precompiled::seal(bytes);
        let (cwasm, sealed) = (
            dir.join(format!("{key}.cwasm")),
            dir.join(format!("{key}.cwasm.sha256")),
        );
        if let (Ok(compiled), Ok(seal)) = (std::fs::read(&cwasm), std::fs::read_to_string(&sealed))
        {
            match wasq_precompiled::open(&self.engine, &compiled, &seal) {
                Ok(component) => return Ok((component, true)),
                Err(refused) => tracing::warn!(
                    entry = %cwasm.display(),
                    %refused,
                    "compiled-module cache entry not used; compiling again"
                ),
            }
        }
        self.compiled.fetch_add(1, Ordering::Relaxed);
        let compiled = self.engine.precompile_component(bytes)?;
        let seal = wasq_precompiled::seal(&compiled);
        if let Err(e) = write_entry(dir, &cwasm, &compiled, &sealed, &seal) {
            tracing::warn!(dir = %dir.display(), error = %e, "compiled-module cache not written");
        }
        let component = wasq_precompiled::open(&self.engine, &compiled, &seal)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok((component, false))
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

/// Writes a cache entry: each file to a temporary name in `dir`, then renamed over its own, the
/// digest last (an entry without its digest is not read).
fn write_entry(
    dir: &Path,
    cwasm: &Path,
    compiled: &[u8],
    sealed: &Path,
    seal: &str,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (path, content) in [(cwasm, compiled), (sealed, seal.as_bytes())] {
        let tmp = dir.join(format!(
            ".{}.{}.tmp",
            path.file_name()
                .map_or_else(Default::default, |n| n.to_string_lossy()),
            std::process::id()
        ));
        std::fs::write(&tmp, content)?;
        std::fs::rename(&tmp, path)?;
    }
    Ok(())
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
