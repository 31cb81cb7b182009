//! The SDK for wasq scheduling-policy plugins: WebAssembly components that decide admission
//! ordering, preemption victims, flavor assignment or topology placement for a Kueue-compatible
//! scheduler, or MultiKueue dispatch.
//!
//! A plugin is a `cdylib` crate built for `wasm32-wasip2`. It implements one of five traits and
//! exports it with the matching macro:
//!
//! | extension point | trait | macro |
//! |---|---|---|
//! | admission ordering | [`ordering::OrderingPolicy`] | [`export_ordering!`] |
//! | preemption victims | [`preemption::PreemptionPolicy`] | [`export_preemption!`] |
//! | flavor assignment | [`flavor_assignment::FlavorAssignmentPolicy`] | [`export_flavor_assignment!`] |
//! | placement (TAS) | [`placement::PlacementPolicy`] | [`export_placement!`] |
//! | MultiKueue dispatch (1.1) | [`dispatch::DispatchPolicy`] | [`export_dispatch!`] |
//!
//! ```ignore
//! use wasq_policy_sdk::prelude::*;
//!
//! #[derive(Default)]
//! struct OldestFirst;
//!
//! impl OrderingPolicy for OldestFirst {
//!     fn sort_key(&mut self, _: &Catalog, wl: &Workload, _: Millis) -> SortKey {
//!         SortKey { primary: wl.created, secondary: 0, tertiary: 0 }
//!     }
//! }
//!
//! wasq_policy_sdk::export_ordering!(OldestFirst);
//! ```
//!
//! The SDK handles the WIT contract (`wasq:policy@1.1.0`, generated with wit-bindgen from the
//! repository's `wit/` folder): it stores the [`Catalog`] the host sends and passes it to every
//! policy method, batches calls, keeps the tables the contract keeps in an instance (the string
//! table, ordering's table of heads, preemption's table of admitted workloads and the quota
//! usage it was sent) so that a
//! plugin never sees them, and installs a panic hook that logs the panic message to the host
//! before the guest traps. It also offers:
//! - [`QuotaView`]: Kueue's quota arithmetic, to simulate removing candidates and check a fit,
//!   and [`fair`]: fair sharing's dominant resource share over it;
//! - [`kueue`]: Kueue's default decisions, to reuse or fall back to;
//! - [`placement::Tree`]: a placement request's domain tree (children, levels, free capacity,
//!   leaves and the pods that fit on them);
//! - [`Catalog::annotation`], [`Catalog::setting`] and [`parse_duration`] for configuration;
//! - [`Workload::requeue_count`](types::Workload::requeue_count) and
//!   [`requeue_reason`](types::Workload::requeue_reason) (also on [`ordering::Head`]): how often
//!   a workload was evicted and queued again, and why;
//! - [`Identity`](identity::Identity) on workloads, heads and candidates (and the same by index
//!   on a [`CandidateTable`](preemption::CandidateTable)): `namespace`, `job_kind`,
//!   `job_api_version`, `job_name`, `local_queue`, `label`, `annotation` — who a workload is,
//!   its strings resolved through the catalog's string table;
//! - [`log`] functions and the [`info!`], [`warn!`], … macros over the host's `log` import;
//! - [`testing`]: builders for native unit tests (`cargo test` on the build machine).
//!
//! Plugins have no clock, filesystem, network or randomness: the `now` of a request is the only
//! time they see. The host limits each instance to 64 MiB of memory and each call to 10 ms; a
//! trap, a timeout or an invalid answer makes the host fall back to its built-in policy.

#![warn(missing_docs)]

#[doc(hidden)]
mod admitted;
pub mod alloc;
pub mod bindings;
pub mod catalog;
pub mod dispatch;
pub mod duration;
#[doc(hidden)]
pub mod export;
pub mod fair;
pub mod flavor_assignment;
mod head_table;
pub mod identity;
mod kept;
pub mod kueue;
mod layout;
pub mod log;
pub mod ordering;
mod peeled;
pub mod placement;
pub mod preemption;
pub mod quota;
mod relations;
pub mod testing;
mod workload;

pub use catalog::Catalog;
pub use duration::{DurationError, parse_duration};
pub use fair::Drs;
pub use quota::QuotaView;

/// The shared WIT types of `wasq:policy/types` (catalog, workloads, quotas, ids).
pub mod types {
    pub use crate::bindings::common::wasq::policy::types::*;
}

/// Everything a plugin usually needs: `use wasq_policy_sdk::prelude::*;`.
pub mod prelude {
    pub use crate::catalog::Catalog;
    pub use crate::dispatch::DispatchPolicy;
    pub use crate::duration::parse_duration;
    pub use crate::flavor_assignment::{FitMode, FlavorAssignmentPolicy, FlavorOption};
    pub use crate::identity::Identity;
    pub use crate::kueue;
    pub use crate::ordering::{Head, OrderingPolicy, SortKey};
    pub use crate::placement::{Answer, LeafPods, Placement, PlacementPolicy, Tree};
    pub use crate::preemption::{
        Candidate, CandidateKind, CandidateTable, PreemptionPolicy, Victims,
    };
    pub use crate::quota::QuotaView;
    pub use crate::types::{
        Annotation, ClusterQueueId, Entry, FrAmount, FrId, LocalQueueUsage, Millis, Needs, NodeId,
        NodeUsage, Owner, Quantity, RequeueReason, StringId, Workload, WorkloadId,
    };
}
