//! MultiKueue's manager side against real worker clusters: what Kueue's
//! `pkg/controller/admissionchecks/multikueue` does with remote clients.
//!
//! - [`kubeconfig`]: a MultiKueueCluster's kubeconfig read (Secret or path), validated and
//!   turned into a [`kube::Client`] (Kueue's `loadClientConfig`, `validateKubeconfig`).
//! - [`connection`]: a worker's connection state (sessions, backoff, time lost) and the
//!   MultiKueueCluster `Active` condition it implies.

pub mod connection;
pub mod kubeconfig;
