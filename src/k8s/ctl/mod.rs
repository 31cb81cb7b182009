//! `wasq ctl`: what kueuectl (Kueue's kubectl plugin) gives Kueue's users — `list` ClusterQueues,
//! LocalQueues and Workloads with kueuectl's columns and pending positions (from the visibility
//! API), `stop` and `resume` — on any cluster wasq or Kueue runs in, and wasq's `describe
//! workload` (with the decisions its Events record) and `explain` (a Workload's story from
//! them). The binary parses the arguments (`cli/ctl.rs`, `cli/explain.rs`); this module reads
//! and patches through a `kube::Client`.

mod activation;
mod describe;
mod explain;
mod history;
mod list;
mod table;

pub use activation::{Activation, DryRun, Target, TargetKind, set_activation};
pub use describe::{DescribeOutput, describe_workload};
pub use explain::explain;
pub use list::{ListOptions, Listed, Listing, Output, list};
pub use table::human_duration;
