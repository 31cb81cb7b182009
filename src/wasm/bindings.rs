//! The one place where Rust types are generated from the WIT package in `wit/`: one module
//! per world, sharing the `types` and `host` interfaces of the first.
//!
//! These bindings serve every minor version of `version::SERVED` (1.0 and 1.1): wasmtime
//! matches interface names semver-compatibly (a `Linker`'s definition of
//! `wasq:policy/host@1.1.0` serves a plugin's import of `@1.0.0`, and
//! `Component::get_export_index` finds a plugin's `wasq:policy/ordering@1.0.0` export when asked
//! for `@1.1.0`), and 1.1 added an interface without changing any of 1.0's types, which
//! wasmtime checks structurally. A minor version that changes an existing record needs a
//! module of its own here (docs/plugin-contract.md, "Adding a minor version").

#![allow(missing_docs, clippy::all)]

/// The `ordering-plugin` world; also owns the shared `types` and `host` interfaces.
pub mod ordering {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "wasq:policy/ordering-plugin",
    });
}

/// The `preemption-plugin` world.
pub mod preemption {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "wasq:policy/preemption-plugin",
        with: {
            "wasq:policy/types": super::ordering::wasq::policy::types,
            "wasq:policy/host": super::ordering::wasq::policy::host,
        },
    });
}

/// The `flavor-assignment-plugin` world.
pub mod flavors {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "wasq:policy/flavor-assignment-plugin",
        with: {
            "wasq:policy/types": super::ordering::wasq::policy::types,
            "wasq:policy/host": super::ordering::wasq::policy::host,
        },
    });
}

/// The `placement-plugin` world.
pub mod placement {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "wasq:policy/placement-plugin",
        with: {
            "wasq:policy/types": super::ordering::wasq::policy::types,
            "wasq:policy/host": super::ordering::wasq::policy::host,
        },
    });
}

/// The `dispatch-plugin` world (added in 1.1.0).
pub mod dispatch {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "wasq:policy/dispatch-plugin",
        with: {
            "wasq:policy/types": super::ordering::wasq::policy::types,
            "wasq:policy/host": super::ordering::wasq::policy::host,
        },
    });
}

pub use ordering::wasq::policy::host;
pub use ordering::wasq::policy::types;

/// The WIT package version this host implements (the newest of `version::SERVED`).
pub const WIT_VERSION: &str = "1.1.0";

#[cfg(test)]
mod tests {
    #[test]
    fn the_version_named_is_the_newest_served() {
        assert_eq!(
            super::WIT_VERSION,
            super::super::version::host().to_string()
        );
    }
}
