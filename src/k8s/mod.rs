//! The Kubernetes driver: the scheduling core run against a real cluster through kube-rs.
//!
//! Watchers ([`sync::watchers`]) feed a [`sync::mirror::Mirror`] of the cluster's objects. The
//! [`controller::Controller`] turns the mirror into the same [`crate::scheduler::Scheduler`]
//! the simulator drives ([`sync::core`]), runs cycles, and writes decisions back
//! ([`client::writer`]): Workload status with Kueue's conditions, job patches through the job
//! integrations ([`jobs`]), ClusterQueue and LocalQueue status (`status::queues`) and Events.
//! Two-phase admission ([`status::admission_checks`]) waits for the Workload's admission checks,
//! among them Kueue's ProvisioningRequest check, which wasq runs itself
//! ([`controller::provisioning`]). What the process serves (metrics, visibility, webhooks) is in
//! [`serve`].
//!
//! The folders are layered: [`status`], [`schema`], [`client`], [`sync`], [`jobs`],
//! [`multikueue`], [`policies`], [`serve`], [`controller`] — each uses only those before it —
//! with [`migrate`] over [`sync`] and the API server double ([`apiserver`]) over [`schema`].
//!
//! Invariants:
//! - the core is built from the mirror (configuration and every live Workload, with the
//!   admissions the cluster records) before the first cycle and after a configuration change —
//!   a restart is the same code path as any other rebuild — and otherwise follows each Workload
//!   event alone ([`sync::core::sync_workload`]);
//! - a write that fails is undone in memory (an admission is released and requeued); memory is
//!   never ahead of the cluster except for quota still held by a victim being evicted;
//! - only the leader (a `coordination.k8s.io` Lease) runs cycles and writes.

pub mod apiserver;
pub mod client;
pub mod controller;
pub mod ctl;
pub mod jobs;
pub mod migrate;
pub mod multikueue;
pub mod policies;
pub mod schema;
pub mod serve;
pub mod status;
pub mod sync;

/// Errors of the Kubernetes driver.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kubernetes API request failed")]
    Kube(#[from] kube::Error),
    #[error("{object}: {message}")]
    Decode { object: String, message: String },
    #[error("job integration {kind}: {message}")]
    Integration { kind: String, message: String },
    #[error("leader lease {lease}: {message}")]
    Lease { lease: String, message: String },
    /// A write sent in the background ended without an answer (its task panicked or was
    /// cancelled).
    #[error("{object}: the write ended without an answer")]
    Unanswered { object: String },
}

impl Error {
    /// Whether the API server refused a write because the object changed since it was read.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Kube(kube::Error::Api(s)) if s.code == 409)
    }

    /// Whether the object does not exist (any more).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Kube(kube::Error::Api(s)) if s.code == 404)
    }

    /// Whether a create found an object of that name already there.
    pub fn is_already_exists(&self) -> bool {
        matches!(self, Error::Kube(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists")
    }
}
