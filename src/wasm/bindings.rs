//! The one place where Rust types are generated from the WIT package in `wit/`: one module
//! per world, sharing the `types` and `host` interfaces of the first.

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

pub use ordering::wasq::policy::host;
pub use ordering::wasq::policy::types;

/// The WIT package version this host implements (the newest of `version::SERVED`).
pub const WIT_VERSION: &str = "1.0.0";

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
