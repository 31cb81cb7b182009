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

/// The WIT package version this host implements.
pub const WIT_VERSION: &str = "1.0.0";

/// Fully qualified names of the exported interfaces, one per world.
pub const ORDERING_EXPORT: &str = "wasq:policy/ordering@1.0.0";
pub const PREEMPTION_EXPORT: &str = "wasq:policy/preemption@1.0.0";
pub const FLAVOR_ASSIGNMENT_EXPORT: &str = "wasq:policy/flavor-assignment@1.0.0";
pub const PLACEMENT_EXPORT: &str = "wasq:policy/placement@1.0.0";
