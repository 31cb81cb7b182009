//! MultiKueue's manager side against real worker clusters: what Kueue's
//! `pkg/controller/admissionchecks/multikueue` does with remote clients.
//!
//! - [`kubeconfig`]: a MultiKueueCluster's kubeconfig read (Secret or path), validated and
//!   turned into a [`kube::Client`] (Kueue's `loadClientConfig`, `validateKubeconfig`).
//! - [`connection`]: a worker's connection state (sessions, backoff, time lost) and the
//!   MultiKueueCluster `Active` condition it implies.
//! - [`session`]: one connection attempt, as a task reporting on a channel.
//!
//! [`MultiKueue`] holds one [`Remote`] per MultiKueueCluster the controller reconciles
//! (`crate::k8s::controller`), and the sessions' reports.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use kube::config::Kubeconfig;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::AbortHandle;

use crate::cluster::Millis;

pub mod connection;
pub mod kubeconfig;
pub mod session;

use connection::Connection;
use session::{Outcome, Report};

/// The field manager of MultiKueue's writes (Kueue's controller name).
pub const FIELD_MANAGER: &str = crate::api::multikueue::MULTIKUEUE_CONTROLLER;
/// Kueue's default `multiKueue.origin`.
pub const DEFAULT_ORIGIN: &str = "multikueue";
/// Kueue's default namespace, where the kubeconfig Secrets are.
pub const DEFAULT_NAMESPACE: &str = "kueue-system";
/// How often, by the controller's clock, a `locationType: Path` kubeconfig is read again to
/// see a rotation (there is no file watcher in this first cut; Secrets are watched).
pub const REREAD_MS: Millis = 1_000;

/// The manager's MultiKueue options.
#[derive(Debug, Clone)]
pub struct Options {
    /// `multiKueue.origin`: the label value on the manager's copies.
    pub origin: String,
    /// Kueue's namespace: where `locationType: Secret` kubeconfigs are.
    pub namespace: String,
    /// Where `locationType: Path` kubeconfigs must be ([`kubeconfig::default_dir`]).
    pub kubeconfig_dir: PathBuf,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            origin: DEFAULT_ORIGIN.into(),
            namespace: DEFAULT_NAMESPACE.into(),
            kubeconfig_dir: kubeconfig::default_dir(),
        }
    }
}

/// One worker cluster: its connection and the session task running for it.
#[derive(Debug, Default)]
pub struct Remote {
    pub conn: Connection,
    task: Option<(u64, AbortHandle)>,
    /// When its kubeconfig was last read, and what it was read from then (the
    /// resourceVersions of the MultiKueueCluster and its Secret).
    read: Option<(Millis, String)>,
    /// A session reported since the last reconcile.
    reported: bool,
}

impl Remote {
    /// Whether the cluster must be reconciled at `now`: never read, what it is read from
    /// changed (`stamp`), a session reported, the backoff ended, or (`poll`: a file) a reread
    /// is due.
    pub fn due(&self, stamp: &str, poll: bool, now: Millis) -> bool {
        let Some((at, read)) = &self.read else {
            return true;
        };
        self.reported
            || read != stamp
            || self.conn.wake_at().is_some_and(|t| t <= now)
            || (poll && now >= at + REREAD_MS)
    }

    /// Records a reconcile at `now` of what `stamp` says.
    pub fn reconciled(&mut self, stamp: String, now: Millis) {
        self.read = Some((now, stamp));
        self.reported = false;
    }

    /// Stops the session task unless it is the connection's current session.
    fn stop_stale(&mut self) {
        if let Some((generation, handle)) = &self.task
            && Some(*generation) != self.conn.session()
        {
            handle.abort();
            self.task = None;
        }
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        if let Some((_, handle)) = self.task.take() {
            handle.abort();
        }
    }
}

/// The manager's remote clusters (see the module).
pub struct MultiKueue {
    pub options: Options,
    remotes: BTreeMap<String, Remote>,
    tx: UnboundedSender<Report>,
    rx: UnboundedReceiver<Report>,
}

impl MultiKueue {
    pub fn new(options: Options) -> MultiKueue {
        let (tx, rx) = unbounded_channel();
        MultiKueue {
            options,
            remotes: BTreeMap::new(),
            tx,
            rx,
        }
    }

    /// Takes in the sessions' reports; returns the clusters whose connection changed.
    pub fn drain(&mut self, now: Millis) -> BTreeSet<String> {
        let mut changed = BTreeSet::new();
        while let Ok(r) = self.rx.try_recv() {
            let Some(remote) = self.remotes.get_mut(&r.cluster) else {
                continue;
            };
            match r.outcome {
                Outcome::Synced => remote.conn.synced(r.generation),
                Outcome::Ended(e) => {
                    tracing::info!(cluster = %r.cluster, generation = r.generation, error = %e,
                        "MultiKueue: connection to the worker ended");
                    remote.conn.ended(r.generation, e, now);
                }
            }
            remote.reported = true;
            remote.stop_stale();
            changed.insert(r.cluster);
        }
        changed
    }

    pub fn remote(&self, cluster: &str) -> Option<&Remote> {
        self.remotes.get(cluster)
    }

    /// The cluster's remote, made when missing.
    pub fn remote_mut(&mut self, cluster: &str) -> &mut Remote {
        self.remotes.entry(cluster.to_string()).or_default()
    }

    /// Drops every remote whose cluster `keep` refuses, stopping its session (Kueue's
    /// `stopAndRemoveCluster`).
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.remotes.retain(|name, _| keep(name.as_str()));
    }

    /// Starts session `generation` of `cluster` with `config`, and stops any other.
    /// Needs a tokio runtime.
    pub fn start(&mut self, cluster: &str, generation: u64, config: Kubeconfig) {
        let task = tokio::spawn(session::run(
            cluster.to_string(),
            generation,
            config,
            self.options.origin.clone(),
            self.tx.clone(),
        ));
        let remote = self.remote_mut(cluster);
        if let Some((_, old)) = remote.task.replace((generation, task.abort_handle())) {
            old.abort();
        }
        remote.stop_stale();
    }

    /// Stops the cluster's session if the connection dropped it.
    pub fn stop_stale(&mut self, cluster: &str) {
        if let Some(r) = self.remotes.get_mut(cluster) {
            r.stop_stale();
        }
    }
}
