//! Kueue's MultiKueueCluster reconciler (`clustersReconciler.Reconcile`,
//! `multikueuecluster.go` at HEAD), when the controller runs as a MultiKueue manager
//! ([`Controller::set_multikueue`]): for each MultiKueueCluster, its kubeconfig loaded
//! ([`kubeconfig::load`]), a session to the worker started or kept ([`Connection::loaded`]),
//! and the `Active` condition written to its status (field manager
//! `kueue.x-k8s.io/multikueue`) when its status, reason or message changes. Then Kueue's
//! MultiKueue AdmissionCheck reconciler: each MultiKueue check's `Active` condition from its
//! config's clusters ([`Controller::write_multikueue_check_statuses`]).
//!
//! A cluster is reconciled when it is due: never read, its object or its Secret changed (the
//! Secrets of Kueue's namespace are watched, [`Source::Secret`]), a session reported, a
//! backoff ended, or — a `locationType: Path` file, with no file watcher yet — every
//! [`REREAD_MS`](crate::k8s::multikueue::REREAD_MS) of the controller's clock. Sessions
//! report between passes; the next pass (an event or the tick) takes the reports in.
//!
//! [`Connection::loaded`]: crate::k8s::multikueue::connection::Connection::loaded

use k8s_openapi::api::core::v1::Secret;
use kube::core::DynamicObject;
use serde_json::json;

use super::Controller;
use crate::api::checks::ADMISSION_CHECK_ACTIVE;
use crate::api::multikueue::{
    CLUSTER_ACTIVE, LocationType, MULTIKUEUE_CONTROLLER, MultiKueueCluster,
};
use crate::cluster::Millis;
use crate::cluster::checks;
use crate::k8s::multikueue::connection::{Active, Decision};
use crate::k8s::multikueue::{FIELD_MANAGER, MultiKueue, Options, kubeconfig};
use crate::k8s::schema::kinds::KueueKind;
use crate::k8s::status::conditions as cond;
use crate::k8s::sync::core::cluster_as_seen;
use crate::k8s::sync::keys::key_of;
use crate::k8s::sync::mirror::{Mirror, Source};

impl Controller {
    /// Runs as a MultiKueue manager: MultiKueueClusters are connected to and their `Active`
    /// condition written, and the Workloads behind MultiKueue checks dispatched to them (the
    /// job kinds with a MultiKueue adapter). Without it MultiKueue's objects are only read.
    pub fn set_multikueue(&mut self, options: Options) {
        let job_kinds = (self.kinds.iter().enumerate())
            .filter(|(_, k)| k.spec.multi_kueue.is_some())
            .map(|(i, k)| (i, crate::k8s::jobs::integration::api_resource(k)))
            .collect();
        self.multikueue = Some(MultiKueue::new(options, job_kinds, self.pod_groups));
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
                let (stamp, poll) = stamp(&self.mirror, &mk.options.namespace, c, None);
                mk.remote(c.name()).is_none_or(|r| r.due(&stamp, poll, now))
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
        let secret = secret_of(&self.mirror, &mk.options.namespace, cluster).and_then(|o| {
            serde_json::to_value(o)
                .and_then(serde_json::from_value::<Secret>)
                .inspect_err(|e| {
                    tracing::warn!(cluster = %name, error = %e,
                        "MultiKueue: the kubeconfig Secret does not decode");
                })
                .ok()
        });
        let loaded = kubeconfig::load(cluster, |_| secret.as_ref(), &mk.options.kubeconfig_dir);
        let (read, _) = stamp(&self.mirror, &mk.options.namespace, cluster, None);
        let remote = mk.remote_mut(&name);
        remote.reconciled(read, now);
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
            let (stamp, _) = stamp(&self.mirror, &mk.options.namespace, cluster, Some(rv));
            mk.remote_mut(&name).reconciled(stamp, now);
        }
    }

    /// Kueue's MultiKueue AdmissionCheck reconciler (`ACReconciler.Reconcile`), as the
    /// manager: each check of controller `kueue.x-k8s.io/multikueue` gets the `Active`
    /// condition [`checks::multikueue_condition`] gives, written when its status, reason or
    /// message changes (`ObservedGeneration`: the check's generation).
    pub(super) async fn write_multikueue_check_statuses(&mut self, now: Millis) {
        if self.multikueue.is_none() {
            return;
        }
        let configs: Vec<_> = self.mirror.multikueue_configs.values().cloned().collect();
        let clusters: Vec<_> = (self.mirror.multikueue_clusters.values())
            .map(|c| cluster_as_seen(c, true))
            .collect();
        let mut writes = Vec::new();
        for (name, ac) in &self.mirror.admission_checks {
            if ac.spec.controller_name != MULTIKUEUE_CONTROLLER {
                continue;
            }
            let (active, _) = checks::multikueue_condition(ac, &configs, &clusters);
            // The AdmissionCheck carries metav1 Conditions: same JSON as the core's.
            let mut conditions: Vec<crate::api::Condition> = (ac.status.as_ref())
                .and_then(|s| serde_json::to_value(&s.conditions).ok())
                .and_then(|v| serde_json::from_value(v).ok())
                .unwrap_or_default();
            if cond::find(&conditions, ADMISSION_CHECK_ACTIVE).is_some_and(|c| {
                (c.status == "True") == active.status
                    && c.reason == active.reason
                    && c.message == active.message
            }) {
                continue;
            }
            let mut c = cond::condition(
                ADMISSION_CHECK_ACTIVE,
                active.status,
                active.reason,
                &active.message,
                now,
            );
            c.observed_generation = ac.metadata.generation;
            cond::set(&mut conditions, c);
            writes.push((name.clone(), json!({ "conditions": conditions })));
        }
        for (name, status) in writes {
            let written = self
                .writer
                .patch_status_as(
                    KueueKind::AdmissionCheck,
                    None,
                    &name,
                    &status,
                    FIELD_MANAGER,
                )
                .await;
            match written {
                Ok(obj) => {
                    if let Ok(o) = self
                        .mirror
                        .decode(Source::Kueue(KueueKind::AdmissionCheck), &obj)
                    {
                        self.mirror.put(o, true);
                    }
                    self.dirty = true;
                }
                Err(e) => {
                    tracing::warn!(admission_check = %name, error = %e, "cannot write the AdmissionCheck status");
                    self.write_failed("admission-check-status");
                }
            }
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

/// The kubeconfig Secret `cluster` names, from the mirror (Secrets of `namespace` are
/// watched).
fn secret_of<'a>(
    mirror: &'a Mirror,
    namespace: &str,
    cluster: &MultiKueueCluster,
) -> Option<&'a DynamicObject> {
    let k = cluster
        .kube_config()
        .filter(|k| k.location_type() == LocationType::Secret)?;
    mirror.secrets.get(&key_of(Some(namespace), &k.location))
}

/// What a cluster's kubeconfig is read from, as a string that changes with it (the
/// resourceVersions of the cluster, `cluster_rv` when given, and of its Secret), and whether
/// it must be polled (a file).
fn stamp(
    mirror: &Mirror,
    namespace: &str,
    cluster: &MultiKueueCluster,
    cluster_rv: Option<Option<String>>,
) -> (String, bool) {
    let rv = cluster_rv.unwrap_or_else(|| cluster.metadata.resource_version.clone());
    let secret = secret_of(mirror, namespace, cluster)
        .map(|s| s.metadata.resource_version.clone().unwrap_or_default());
    let poll = cluster
        .kube_config()
        .is_some_and(|k| k.location_type() == LocationType::Path);
    (
        format!(
            "{}|{}",
            rv.unwrap_or_default(),
            secret.unwrap_or_else(|| "-".into())
        ),
        poll,
    )
}
