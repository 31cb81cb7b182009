//! `wasq ctl`: what kueuectl (Kueue's kubectl plugin) gives Kueue's users — `list` ClusterQueues,
//! LocalQueues and Workloads with kueuectl's columns and pending positions (from the visibility
//! API), `stop` and `resume` — on any cluster wasq or Kueue runs in. The binary parses the
//! arguments (`cli/ctl.rs`); this module reads and patches through a `kube::Client`.

mod activation;
mod list;
mod table;

pub use activation::{Activation, DryRun, Target, TargetKind, set_activation};
pub use list::{ListOptions, Listed, Listing, Output, list};
pub use table::human_duration;
