//! Kueue's MultiKueueCluster reconciler (`clustersReconciler.Reconcile`,
//! `multikueuecluster.go` at HEAD), when the controller runs as a MultiKueue manager
//! ([`Controller::set_multikueue`]): for each MultiKueueCluster, its kubeconfig loaded
//! ([`kubeconfig::load`]), a session to the worker started or kept ([`Connection::loaded`]),
//! and the `Active` condition written to its status (field manager
//! `kueue.x-k8s.io/multikueue`) when its status, reason or message changes.
//!
//! First cut: the kubeconfig Secret is read (GET) when the cluster is due — never read, its
//! object changed, a session reported, a backoff ended, or every [`REREAD_MS`](crate::k8s::multikueue::REREAD_MS) of the
//! controller's clock, which is how a rotated Secret is seen (no Secret watch yet). Sessions
//! report between passes; the next pass (an event or the tick) takes the reports in.
//!
//! [`Connection::loaded`]: crate::k8s::multikueue::connection::Connection::loaded

use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use serde_json::json;

use super::Controller;
use crate::api::multikueue::{CLUSTER_ACTIVE, LocationType, MultiKueueCluster};
use crate::cluster::Millis;
use crate::k8s::multikueue::connection::{Active, Decision};
use crate::k8s::multikueue::{FIELD_MANAGER, MultiKueue, Options, kubeconfig};
use crate::k8s::schema::kinds::KueueKind;
use crate::k8s::status::conditions as cond;
use crate::k8s::sync::mirror::Source;

impl Controller {
    /// Runs as a MultiKueue manager: MultiKueueClusters are connected to and their `Active`
    /// condition written. Off by default (MultiKueue's objects are then only read).
    pub fn set_multikueue(&mut self, options: Options) {
        self.multikueue = Some(MultiKueue::new(options));
        self.mirror.multikueue_manager = true;
        self.dirty = true;
    }

    /// The manager's remote clusters, when it runs as one.
    pub fn multikueue(&self) -> Option<&MultiKueue> {
        self.multikueue.as_ref()
    }

    /// Kueue's cluster reconciler over every MultiKueueCluster due (see the module).
    pub(super) async fn reconcile_clusters(&mut self, now: Millis) {
        let Some(mut mk) = self.multikueue.take() else {
            return;
        };
        mk.drain(now);
        let clusters = &self.mirror.multikueue_clusters;
        // Deleted, or being deleted: the session stops and the client goes.
        mk.retain(|name| {
            clusters
                .get(name)
                .is_some_and(|c| c.metadata.deletion_timestamp.is_none())
        });
        let due: Vec<MultiKueueCluster> = clusters
            .values()
            .filter(|c| c.metadata.deletion_timestamp.is_none())
            .filter(|c| {
                mk.remote(c.name())
                    .is_none_or(|r| r.due(c.metadata.resource_version.as_deref(), now))
            })
            .cloned()
            .collect();
        for cluster in due {
            self.reconcile_cluster(&mut mk, &cluster, now).await;
        }
        self.multikueue = Some(mk);
    }

    async fn reconcile_cluster(
        &mut self,
        mk: &mut MultiKueue,
        cluster: &MultiKueueCluster,
        now: Millis,
    ) {
        let name = cluster.name().to_string();
        let secret = match cluster.kube_config() {
            Some(k) if k.location_type() == LocationType::Secret => {
                let api: Api<Secret> =
                    Api::namespaced(self.writer.client().clone(), &mk.options.namespace);
                match api.get_opt(&k.location).await {
                    Ok(s) => s,
                    Err(e) => {
                        // Tried again at the next pass.
                        tracing::warn!(cluster = %name, error = %e, "MultiKueue: cannot read the kubeconfig Secret");
                        return;
                    }
                }
            }
            _ => None,
        };
        let loaded = kubeconfig::load(cluster, |_| secret.as_ref(), &mk.options.kubeconfig_dir);
        let rv = cluster.metadata.resource_version.clone();
        let remote = mk.remote_mut(&name);
        remote.reconciled(rv.as_deref(), now);
        let start = match loaded {
            Ok(l) => match remote.conn.loaded(l.digest, now) {
                Decision::Connect { generation } => Some((generation, l.config)),
                Decision::Keep | Decision::Defer { .. } => None,
            },
            Err(e) => {
                tracing::info!(cluster = %name, reason = e.reason, error = %e.message,
                    "MultiKueue: cannot load the worker's kubeconfig");
                remote.conn.load_failed(e, now);
                None
            }
        };
        let active = remote.conn.active();
        match start {
            Some((generation, config)) => mk.start(&name, generation, config),
            None => mk.stop_stale(&name),
        }
        if let Some(active) = active
            && let Some(rv) = self.write_cluster_active(cluster, &active, now).await
        {
            // Our own write does not make the cluster due again.
            mk.remote_mut(&name).reconciled(rv.as_deref(), now);
        }
    }

    /// Writes `active` as the cluster's `Active` condition unless its status, reason and
    /// message are already those (Kueue's `updateStatus` and `cmpConditionState`). Returns
    /// the written object's resourceVersion.
    async fn write_cluster_active(
        &mut self,
        cluster: &MultiKueueCluster,
        active: &Active,
        now: Millis,
    ) -> Option<Option<String>> {
        let mut conditions = cluster
            .status
            .as_ref()
            .map(|s| s.conditions.clone())
            .unwrap_or_default();
        if cond::find(&conditions, CLUSTER_ACTIVE).is_some_and(|c| {
            (c.status == "True") == active.status
                && c.reason == active.reason
                && c.message == active.message
        }) {
            return None;
        }
        let mut c = cond::condition(
            CLUSTER_ACTIVE,
            active.status,
            &active.reason,
            &active.message,
            now,
        );
        c.observed_generation = cluster.metadata.generation;
        cond::set(&mut conditions, c);
        let name = cluster.name();
        match self
            .writer
            .patch_status_as(
                KueueKind::MultiKueueCluster,
                None,
                name,
                &json!({ "conditions": conditions }),
                FIELD_MANAGER,
            )
            .await
        {
            Ok(obj) => {
                if let Ok(o) = self
                    .mirror
                    .decode(Source::Kueue(KueueKind::MultiKueueCluster), &obj)
                {
                    self.mirror.put(o, true);
                }
                // Whether a cluster is active decides whether its checks and queues are.
                self.dirty = true;
                Some(obj.metadata.resource_version)
            }
            Err(e) => {
                tracing::warn!(cluster = %name, error = %e, "cannot write the MultiKueueCluster status");
                self.write_failed("multikueue-cluster-status");
                None
            }
        }
    }
}
