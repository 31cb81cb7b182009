//! Jobs and their pods: a job kind's API resource ([`integration`]), plain pods in gated
//! groups (`pod_groups`) and the TAS ungater's plan for the pods of a placed Workload
//! (`ungater`).

pub mod integration;
pub(crate) mod pod_groups;
pub(crate) mod ungater;
