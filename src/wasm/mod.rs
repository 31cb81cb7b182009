//! The wasmtime host for policy plugins: WebAssembly components implementing one world of the
//! `wasq:policy@1.1.0` WIT package (`wit/`; plugins built against 1.0.0 are served too).
//!
//! It owns loading (digest, compile cache, import allow-list), sandboxing (no capabilities,
//! memory cap, CPU deadline, optional fuel), the calls (catalog sent once per instance, batches
//! of integer records), containment (a trap discards the instance; failures are counted and
//! repeated ones quarantine the plugin), hot reload of a plugin directory ([`reload`]) and the
//! adapters that make a plugin a [`crate::policy`] trait object. It knows nothing of Kubernetes;
//! the scheduler knows nothing of wasmtime.

mod bindings;
mod config;
mod convert;
mod dispatch;
mod engine;
mod function_cache;
pub mod guests;
mod heads;
mod imports;
mod language;
mod limits;
mod load;
pub mod objects;
pub mod oci;
mod plugin;
mod policies;
mod registry;
pub mod reload;
mod rows;
mod state;
mod strings;
mod text;
mod usage_rows;
pub mod version;

pub use bindings::WIT_VERSION;
pub use config::PolicyConfig;
pub use dispatch::WasmDispatch;
pub use engine::{WasmEngine, default_cache_dir};
pub use function_cache::FunctionCacheStats;
pub use imports::ImportError;
pub use language::Language;
pub use limits::{Limits, LimitsPatch};
pub use load::{LoadError, PluginInfo, PluginKind, digest_of, plugin_files, plugin_name};
pub use objects::{FetchFailure, Fetched, ObjectPolicy, PolicyObjects, read_module};
pub use oci::sha256_digest;
pub use plugin::{ALWAYS_EXPOSED, Exposure, Footprint, Plugin, PluginStatus};
pub use policies::{WasmFlavors, WasmOrdering, WasmPlacement, WasmPreemption};
pub use registry::{
    ANNOTATION_PREFIX, BUILTIN, BindError, Bindings, HostOptions, Registry, make_plugin,
};
pub use reload::{Bound, Change, LiveBindings, LivePlugins, PluginSource};
