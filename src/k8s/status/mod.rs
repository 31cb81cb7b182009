//! Kueue's status fields as values, computed without the API server: Workload conditions,
//! reasons and messages (`conditions`), ClusterQueue, LocalQueue and Cohort status
//! (`queues`), and a Workload's admission check states ↔ the core's ([`admission_checks`]).
//! Depends on no other group of the driver.

pub mod admission_checks;
pub(crate) mod conditions;
pub(crate) mod queues;
