//! wasq: a Kueue-compatible job-queueing core whose policies are pluggable.
//!
//! See ARCHITECTURE.md for the map of modules and their invariants.

pub mod api;
pub mod bench;
pub mod cluster;
pub mod dashboard;
pub mod k8s;
pub mod policy;
pub mod queue;
pub mod quota;
pub mod scheduler;
pub mod sim;
pub mod story;
pub mod topology;
pub mod wasm;
