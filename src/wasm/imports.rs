//! What a plugin may import, checked item by item when it loads: the `wasq:policy/host`
//! functions the host defines, the type-only `wasq:policy/types`, and the WASI interfaces the
//! Rust standard library links for panics and exit (which the host defines as traps: a plugin
//! has no stdio, environment or clock). An interface, function or version the host does not
//! know is refused, naming it, before any of the plugin's code runs — never left to trap when
//! called.

use wasmtime::Engine;
use wasmtime::component::Component;
use wasmtime::component::types::ComponentItem;

/// The newest WASI 0.2 release whose interfaces the host lists: the one wasmtime 48 implements
/// and the Rust toolchain links. A plugin importing a newer 0.2.x is refused until the host
/// learns it.
pub const WASI_NEWEST: (u64, u64, u64) = (0, 2, 6);

/// The functions of each interface a plugin may import (unversioned name), resources aside.
const KNOWN: &[(&str, &[&str])] = &[
    ("wasq:policy/host", &["log"]),
    ("wasq:policy/types", &[]),
    (
        "wasi:cli/environment",
        &["get-environment", "get-arguments", "initial-cwd"],
    ),
    ("wasi:cli/exit", &["exit", "exit-with-code"]),
    ("wasi:cli/stdin", &["get-stdin"]),
    ("wasi:cli/stdout", &["get-stdout"]),
    ("wasi:cli/stderr", &["get-stderr"]),
    ("wasi:cli/terminal-input", &[]),
    ("wasi:cli/terminal-output", &[]),
    ("wasi:cli/terminal-stdin", &["get-terminal-stdin"]),
    ("wasi:cli/terminal-stdout", &["get-terminal-stdout"]),
    ("wasi:cli/terminal-stderr", &["get-terminal-stderr"]),
    ("wasi:io/error", &["[method]error.to-debug-string"]),
    (
        "wasi:io/poll",
        &["[method]pollable.ready", "[method]pollable.block", "poll"],
    ),
    (
        "wasi:io/streams",
        &[
            "[method]input-stream.read",
            "[method]input-stream.blocking-read",
            "[method]input-stream.skip",
            "[method]input-stream.blocking-skip",
            "[method]input-stream.subscribe",
            "[method]output-stream.check-write",
            "[method]output-stream.write",
            "[method]output-stream.blocking-write-and-flush",
            "[method]output-stream.flush",
            "[method]output-stream.blocking-flush",
            "[method]output-stream.subscribe",
            "[method]output-stream.write-zeroes",
            "[method]output-stream.blocking-write-zeroes-and-flush",
            "[method]output-stream.splice",
            "[method]output-stream.blocking-splice",
        ],
    ),
];

/// Why an import is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    #[error(
        "imports `{0}`, which plugins may not use (allowed: wasq:policy/host and types, and \
         the wasi:cli and wasi:io interfaces the Rust standard library links, which trap if \
         called)"
    )]
    Interface(String),
    #[error("imports `{item}` from `{interface}`, which the host does not provide")]
    Item { interface: String, item: String },
    #[error(
        "imports `{interface}`: the host knows WASI 0.2.0 to {}.{}.{}, not {version}",
        WASI_NEWEST.0, WASI_NEWEST.1, WASI_NEWEST.2
    )]
    WasiVersion { interface: String, version: String },
}

/// `major.minor.patch` of a version string (pre-release and build text refused).
fn semver(v: &str) -> Option<(u64, u64, u64)> {
    let mut parts = v.split('.').map(|p| p.parse::<u64>().ok());
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(Some(a)), Some(Some(b)), Some(Some(c)), None) => Some((a, b, c)),
        _ => None,
    }
}

/// The functions `name` (an import's full name, `interface@version`) may bring, or why the
/// interface itself is refused. `wasq:policy` versions are checked apart, with the policy's
/// exports (`load.rs`).
fn functions_of(name: &str) -> Result<&'static [&'static str], ImportError> {
    let (interface, version) = name.split_once('@').unwrap_or((name, ""));
    let known = KNOWN
        .iter()
        .find(|(i, _)| *i == interface)
        .map(|(_, f)| *f)
        .ok_or_else(|| ImportError::Interface(name.to_string()))?;
    if interface.starts_with("wasi:") {
        match semver(version) {
            Some(v) if v.0 == 0 && v.1 == 2 && v <= WASI_NEWEST => {}
            _ => {
                return Err(ImportError::WasiVersion {
                    interface: interface.to_string(),
                    version: version.to_string(),
                });
            }
        }
    }
    Ok(known)
}

/// Checks every import of `component`, item by item.
pub fn check(engine: &Engine, component: &Component) -> Result<(), ImportError> {
    for (name, item) in component.component_type().imports(engine) {
        let ComponentItem::ComponentInstance(instance) = item.ty else {
            // A bare function, module or component import: nothing the host provides.
            return Err(ImportError::Interface(name.to_string()));
        };
        let functions = functions_of(name)?;
        for (item, ty) in instance.exports(engine) {
            let provided = match ty.ty {
                ComponentItem::ComponentFunc(_) => functions.contains(&item),
                // Types and resource types: used by the functions above, defined by nobody.
                ComponentItem::Type(_) | ComponentItem::Resource(_) => true,
                _ => false,
            };
            if !provided {
                return Err(ImportError::Item {
                    interface: name.to_string(),
                    item: item.to_string(),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{ImportError, functions_of};

    #[test]
    fn the_interfaces_a_rust_guest_links_are_known() {
        for name in [
            "wasq:policy/host@1.0.0",
            "wasq:policy/types@1.0.0",
            "wasi:cli/stderr@0.2.6",
            "wasi:io/streams@0.2.0",
            "wasi:cli/terminal-output@0.2.3",
        ] {
            assert!(functions_of(name).is_ok(), "{name}");
        }
        assert_eq!(functions_of("wasq:policy/host@1.0.0"), Ok(&["log"][..]));
    }

    #[test]
    fn other_interfaces_and_wasi_versions_are_refused() {
        for name in [
            "wasi:filesystem/preopens@0.2.4",
            "wasi:clocks/wall-clock@0.2.4",
            "wasi:sockets/tcp@0.2.4",
            "wasi:random/random@0.2.4",
            "wasi:cli/secrets@0.2.6",
            "example:evil/exec@1.0.0",
        ] {
            assert_eq!(
                functions_of(name),
                Err(ImportError::Interface(name.into())),
                "{name}"
            );
        }
        for name in [
            "wasi:cli/environment@0.2.99",
            "wasi:cli/stderr@0.3.0",
            "wasi:io/streams@0.2.6-rc",
            "wasi:io/streams",
        ] {
            assert!(
                matches!(functions_of(name), Err(ImportError::WasiVersion { .. })),
                "{name}"
            );
        }
    }
}
