//! The cluster kept in memory: watchers ([`watchers`]) feed the [`mirror::Mirror`] (with what
//! topology-aware scheduling reads of Nodes and Pods, `tas_nodes`), which becomes the
//! scheduling core ([`core`]: the restart path and one Workload at a time); `--record-trace`
//! turns the same events into a simulator trace ([`trace_recorder`]). Objects are known by the
//! keys of `keys`.

pub mod core;
pub(crate) mod keys;
pub mod mirror;
pub(crate) mod tas_nodes;
pub mod trace_recorder;
pub mod watchers;
