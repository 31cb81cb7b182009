//! Loading a plugin file: content digest, compilation (cached by digest), which policy world
//! the component implements, and the import allow-list. Everything the host would refuse is
//! refused here, before any code of the plugin runs.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::component::Linker;

use super::bindings::{WIT_VERSION, dispatch, flavors, ordering, placement, preemption};
use super::engine::WasmEngine;
use super::language::Language;
use super::state::State;
use super::version::{Version, VersionError};

/// The extension point a plugin implements.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum PluginKind {
    Ordering,
    Preemption,
    FlavorAssignment,
    Placement,
    /// MultiKueue dispatch (added in `wasq:policy@1.1.0`): asked by the drivers, never by the
    /// scheduler.
    Dispatch,
}

impl PluginKind {
    pub const ALL: [PluginKind; 5] = [
        PluginKind::Ordering,
        PluginKind::Preemption,
        PluginKind::FlavorAssignment,
        PluginKind::Placement,
        PluginKind::Dispatch,
    ];

    /// The name used on the command line and in annotations (`ordering`, `preemption`,
    /// `flavor-assignment`, `placement`, `dispatch`).
    pub fn as_str(self) -> &'static str {
        match self {
            PluginKind::Ordering => "ordering",
            PluginKind::Preemption => "preemption",
            PluginKind::FlavorAssignment => "flavor-assignment",
            PluginKind::Placement => "placement",
            PluginKind::Dispatch => "dispatch",
        }
    }

    pub fn parse(s: &str) -> Option<PluginKind> {
        PluginKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The kind whose interface an export names (`wasq:policy/preemption@1.0.0`), at any
    /// version.
    fn of_export(name: &str) -> Option<PluginKind> {
        let interface = name.strip_prefix("wasq:policy/")?.split('@').next()?;
        PluginKind::parse(interface)
    }
}

impl std::fmt::Display for PluginKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What `wasq plugin check` reports about a component.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PluginInfo {
    /// The file stem: what `--policy EXT=NAME` refers to.
    pub name: String,
    pub path: PathBuf,
    /// `sha256:` and the first 16 hex digits of the file's SHA-256.
    pub digest: String,
    pub kind: PluginKind,
    /// The language it was written in, as its component tells (`Unknown` when it does not):
    /// it chooses the default limits.
    pub language: Language,
    /// The `wasq:policy` version the host serves it (its own minor version's requests).
    #[serde(serialize_with = "as_text")]
    pub wit_version: Version,
    pub imports: Vec<String>,
    pub exports: Vec<String>,
    pub size: u64,
    /// Compile time in milliseconds (of the first compilation of this digest), or the time to
    /// load it from the compiled-module cache.
    pub compile_ms: f64,
    /// Loaded compiled from the disk cache (`--cache-dir`) rather than compiled.
    pub from_cache: bool,
}

fn as_text<S: serde::Serializer>(v: &Version, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// Why a plugin file was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: cannot read: {message}")]
    Io { path: PathBuf, message: String },
    #[error("{path}: not a valid WebAssembly component: {message}")]
    Compile { path: PathBuf, message: String },
    #[error("{path}: not a WebAssembly component: {reason}")]
    NotComponent { path: PathBuf, reason: String },
    #[error("{path}: {error}")]
    ForbiddenImport {
        path: PathBuf,
        error: super::imports::ImportError,
    },
    #[error("{path}: {error}")]
    OtherVersion { path: PathBuf, error: VersionError },
    #[error(
        "{path}: exports none of the wasq:policy@{WIT_VERSION} interfaces (ordering, preemption, \
         flavor-assignment, placement, dispatch); it exports: {exports}"
    )]
    NoPolicyExport { path: PathBuf, exports: String },
    #[error("{path}: exports more than one policy interface ({exports}); a plugin implements one")]
    SeveralPolicyExports { path: PathBuf, exports: String },
    #[error("{path}: cannot be instantiated: {message}")]
    Instantiate { path: PathBuf, message: String },
    #[error("{path}: failed its smoke test (an empty batch): {message}")]
    SmokeTest { path: PathBuf, message: String },
    #[error("{path}: does not match the {kind} world of wasq:policy@{WIT_VERSION}: {message}")]
    WorldMismatch {
        path: PathBuf,
        kind: PluginKind,
        message: String,
    },
}

/// Ready-to-instantiate code for one world.
#[derive(Clone)]
pub enum Pre {
    Ordering(ordering::OrderingPluginPre<State>),
    Preemption(preemption::PreemptionPluginPre<State>),
    FlavorAssignment(flavors::FlavorAssignmentPluginPre<State>),
    Placement(placement::PlacementPluginPre<State>),
    Dispatch(dispatch::DispatchPluginPre<State>),
}

/// A validated, compiled plugin.
#[derive(Clone)]
pub struct Loaded {
    pub info: PluginInfo,
    pub pre: Pre,
}

/// `sha256:` and 16 hex digits.
pub fn digest_of(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let hex: String = hash.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Why `bytes` cannot be a component, from its first eight bytes (the magic number and the
/// layer), in one line: a core module, another kind of file, or a truncated one.
fn not_a_component(bytes: &[u8]) -> Option<String> {
    const MAGIC: &[u8] = b"\0asm";
    if bytes.len() < 8 || &bytes[..4] != MAGIC {
        let head: Vec<String> = bytes.iter().take(4).map(|b| format!("{b:02x}")).collect();
        let what = match bytes {
            [0x7f, b'E', b'L', b'F', ..] => " (an ELF executable)",
            [b'P', b'K', 3, 4, ..] => " (a zip archive)",
            [0x1f, 0x8b, ..] => " (a gzip archive)",
            _ if bytes.len() < 8 && bytes.starts_with(MAGIC) => " (truncated)",
            _ if std::str::from_utf8(bytes).is_ok() => " (text)",
            _ => "",
        };
        return Some(if bytes.is_empty() {
            "the file is empty".into()
        } else {
            format!(
                "it starts with bytes {}{what}, not WebAssembly's \\0asm",
                head.join(" ")
            )
        });
    }
    // Bytes 4..8: version 1 and layer 0 for a core module, layer 1 for a component.
    match bytes[4..8] {
        [1, 0, 0, 0] => Some(
            "it is a core WebAssembly module; build for wasm32-wasip2 (`wasq plugin build`), or \
             wrap it with `wasm-tools component new`"
                .into(),
        ),
        [_, _, 1, 0] => None,
        _ => Some("unknown WebAssembly version or layer".into()),
    }
}

/// A plugin's name: its file stem (what `--policy EXT=NAME` refers to).
pub fn plugin_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The `*.wasm` entries of `dir` (files, or symlinks to files), sorted.
pub fn plugin_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "wasm") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// Compiles and validates `bytes` as the plugin `name` (from `path`, for messages).
pub fn load_bytes(
    engine: &WasmEngine,
    path: &Path,
    name: &str,
    bytes: &[u8],
) -> Result<Loaded, LoadError> {
    if let Some(reason) = not_a_component(bytes) {
        return Err(LoadError::NotComponent {
            path: path.to_path_buf(),
            reason,
        });
    }
    let digest = digest_of(bytes);
    let compiled = engine
        .compile(&digest, bytes)
        .map_err(|e| LoadError::Compile {
            path: path.to_path_buf(),
            // The innermost cause names the problem; the outer layers repeat the call.
            message: first_line(&e.chain().last().map(|c| c.to_string()).unwrap_or_default()),
        })?;
    let component = &compiled.component;
    let ty = component.component_type();
    let imports: Vec<String> = ty
        .imports(engine.engine())
        .map(|(n, _)| n.to_string())
        .collect();
    let exports: Vec<String> = ty
        .exports(engine.engine())
        .map(|(n, _)| n.to_string())
        .collect();
    let named: Vec<&str> = imports
        .iter()
        .chain(&exports)
        .filter_map(|n| n.strip_prefix("wasq:policy/"))
        .map(|n| n.split_once('@').map_or("", |(_, v)| v))
        .collect();
    // A component naming no `wasq:policy` interface is no plugin: refused below, for its
    // imports or for exporting no policy.
    let version = if named.is_empty() {
        super::version::host()
    } else {
        super::version::negotiate(named, super::version::SERVED).map_err(|error| {
            LoadError::OtherVersion {
                path: path.to_path_buf(),
                error,
            }
        })?
    };
    super::imports::check(engine.engine(), component).map_err(|error| {
        LoadError::ForbiddenImport {
            path: path.to_path_buf(),
            error,
        }
    })?;
    let kinds: Vec<PluginKind> = exports
        .iter()
        .filter_map(|e| PluginKind::of_export(e))
        .collect();
    let kind = match kinds.as_slice() {
        [k] => *k,
        [] => {
            return Err(LoadError::NoPolicyExport {
                path: path.to_path_buf(),
                exports: exports.join(", "),
            });
        }
        _ => {
            return Err(LoadError::SeveralPolicyExports {
                path: path.to_path_buf(),
                exports: exports.join(", "),
            });
        }
    };
    let mismatch = |e: wasmtime::Error| LoadError::WorldMismatch {
        path: path.to_path_buf(),
        kind,
        message: format!("{e:#}"),
    };
    let mut linker: Linker<State> = Linker::new(engine.engine());
    State::add_host(&mut linker).map_err(mismatch)?;
    // Everything else the guest imports (the std library's WASI interfaces) traps if called.
    linker
        .define_unknown_imports_as_traps(component)
        .map_err(mismatch)?;
    let instance_pre = linker.instantiate_pre(component).map_err(mismatch)?;
    let pre = match kind {
        PluginKind::Ordering => {
            Pre::Ordering(ordering::OrderingPluginPre::new(instance_pre).map_err(mismatch)?)
        }
        PluginKind::Preemption => {
            Pre::Preemption(preemption::PreemptionPluginPre::new(instance_pre).map_err(mismatch)?)
        }
        PluginKind::FlavorAssignment => Pre::FlavorAssignment(
            flavors::FlavorAssignmentPluginPre::new(instance_pre).map_err(mismatch)?,
        ),
        PluginKind::Placement => {
            Pre::Placement(placement::PlacementPluginPre::new(instance_pre).map_err(mismatch)?)
        }
        PluginKind::Dispatch => {
            Pre::Dispatch(dispatch::DispatchPluginPre::new(instance_pre).map_err(mismatch)?)
        }
    };
    Ok(Loaded {
        info: PluginInfo {
            name: name.to_string(),
            path: path.to_path_buf(),
            digest,
            kind,
            language: Language::of(bytes),
            imports,
            exports,
            size: bytes.len() as u64,
            compile_ms: compiled.compile_ms,
            wit_version: version,
            from_cache: compiled.from_cache,
        },
        pre,
    })
}

/// The first line of `text`, with a mark when more followed.
fn first_line(text: &str) -> String {
    match text.split_once('\n') {
        Some((first, _)) => format!("{} …", first.trim_end()),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::not_a_component;

    #[test]
    fn a_file_that_is_not_a_component_is_named_in_one_line() {
        let said = |b: &[u8]| not_a_component(b).expect("refused");
        assert_eq!(said(b""), "the file is empty");
        assert!(said(b"\x7fELF\x02\x01\x01\0").contains("7f 45 4c 46 (an ELF executable)"));
        assert!(said(b"hello, world\n").contains("(text)"));
        assert!(said(b"\0asm").contains("(truncated)"));
        assert!(said(b"\0asm\x01\0\0\0").contains("core WebAssembly module"));
        assert!(not_a_component(b"\0asm\x0d\0\x01\0").is_none());
        for b in [&b"\x7fELF\x02\x01\x01\0"[..], b"hello, world\n"] {
            assert!(!said(b).contains('\n'));
        }
    }
}
