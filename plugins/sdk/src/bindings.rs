//! The generated WIT bindings: the shared `types` and `host` interfaces once, and the export side
//! of each of the five worlds, all pointing at the same types.
//!
//! Each world is generated with `pub_export_macro`, so the custom section describing the world's
//! exports is only emitted where a plugin invokes an `export_*!` macro: a plugin that links this
//! crate exports exactly one interface.

#![allow(missing_docs, clippy::all)]

/// `wasq:policy/types` and `wasq:policy/host`.
pub mod common {
    wit_bindgen::generate!({
        inline: "
            package wasq:sdk;
            world common {
                import wasq:policy/host@1.1.0;
            }
        ",
        path: "../../wit",
        world: "wasq:sdk/common",
        generate_unused_types: true,
        generate_all,
        additional_derives: [PartialEq],
    });
}

/// The `ordering-plugin` world.
pub mod ordering {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "wasq:policy/ordering-plugin@1.1.0",
        with: {
            "wasq:policy/types@1.1.0": crate::bindings::common::wasq::policy::types,
            "wasq:policy/host@1.1.0": crate::bindings::common::wasq::policy::host,
        },
        additional_derives: [PartialEq],
        pub_export_macro: true,
        export_macro_name: "__export_ordering_plugin",
        default_bindings_module: "$crate::bindings::ordering",
    });
}

/// The `preemption-plugin` world.
pub mod preemption {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "wasq:policy/preemption-plugin@1.1.0",
        with: {
            "wasq:policy/types@1.1.0": crate::bindings::common::wasq::policy::types,
            "wasq:policy/host@1.1.0": crate::bindings::common::wasq::policy::host,
        },
        additional_derives: [PartialEq],
        pub_export_macro: true,
        export_macro_name: "__export_preemption_plugin",
        default_bindings_module: "$crate::bindings::preemption",
    });
}

/// The `flavor-assignment-plugin` world.
pub mod flavor_assignment {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "wasq:policy/flavor-assignment-plugin@1.1.0",
        with: {
            "wasq:policy/types@1.1.0": crate::bindings::common::wasq::policy::types,
            "wasq:policy/host@1.1.0": crate::bindings::common::wasq::policy::host,
        },
        additional_derives: [PartialEq],
        pub_export_macro: true,
        export_macro_name: "__export_flavor_assignment_plugin",
        default_bindings_module: "$crate::bindings::flavor_assignment",
    });
}

/// The `placement-plugin` world.
pub mod placement {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "wasq:policy/placement-plugin@1.1.0",
        with: {
            "wasq:policy/types@1.1.0": crate::bindings::common::wasq::policy::types,
            "wasq:policy/host@1.1.0": crate::bindings::common::wasq::policy::host,
        },
        additional_derives: [PartialEq],
        pub_export_macro: true,
        export_macro_name: "__export_placement_plugin",
        default_bindings_module: "$crate::bindings::placement",
    });
}

/// The `dispatch-plugin` world (added in 1.1.0).
pub mod dispatch {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "wasq:policy/dispatch-plugin@1.1.0",
        with: {
            "wasq:policy/types@1.1.0": crate::bindings::common::wasq::policy::types,
            "wasq:policy/host@1.1.0": crate::bindings::common::wasq::policy::host,
        },
        additional_derives: [PartialEq],
        pub_export_macro: true,
        export_macro_name: "__export_dispatch_plugin",
        default_bindings_module: "$crate::bindings::dispatch",
    });
}
