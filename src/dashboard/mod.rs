//! The live dashboard (`wasq simulate --serve`, `wasq controller --dashboard-address`): a
//! read-only web page of ClusterQueues and Cohorts, LocalQueues, workloads with the history of
//! the decisions about them (and the policy and digest behind each), topology domains and
//! policies, updated as the scheduler decides.
//!
//! - [`view`]: what the page shows, built from the scheduler's state and what only the driver
//!   knows ([`Source`]); [`History`], the bounded per-workload history a driver without a
//!   timeline of its own keeps.
//! - [`server`]: the HTTP server — the page and its assets embedded in the binary, the view
//!   as JSON and as server-sent events, each answer filtered by what the caller may read
//!   ([`Authorize`]: everything, or what a Kubernetes token may read in the controller).

pub mod server;
pub mod view;

pub use server::{Access, AccessFuture, Authorize, Board, Open, serve};
pub use view::{
    History, PluginFigures, PolicyUse, Published, Source, State, Step, View, WorkloadDetail, build,
};
