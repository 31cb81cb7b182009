//! MultiKueue's manager side against real worker clusters: what Kueue's
//! `pkg/controller/admissionchecks/multikueue` does with remote clients.
//!
//! - [`kubeconfig`]: a MultiKueueCluster's kubeconfig read (Secret or path), validated and
//!   turned into a [`kube::Client`] (Kueue's `loadClientConfig`, `validateKubeconfig`).

pub mod kubeconfig;
