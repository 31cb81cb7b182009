//! `/metrics`: Kueue's metric names and labels (`kueue_*`, each with `replica_role`) plus
//! `wasq_plugin_*`, in the Prometheus text format (prometheus-client).

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::cluster::Cluster;
use crate::scheduler::Scheduler;

/// A label set: ordered (name, value) pairs.
pub type Labels = Vec<(&'static str, String)>;

#[derive(Clone)]
pub struct Buckets;

impl MetricConstructor<Histogram> for Buckets {
    fn new_metric(&self) -> Histogram {
        // 1 ms .. ~9 h, as Kueue's wait-time histograms span.
        Histogram::new(exponential_buckets(0.001, 4.0, 13))
    }
}

type GaugeF = Gauge<f64, AtomicU64>;

/// Every metric wasq exports.
pub struct Metrics {
    registry: Registry,
    role: String,
    pub admission_attempts: Family<Labels, Counter>,
    pub admission_attempt_duration: Family<Labels, Histogram, Buckets>,
    pub pending_workloads: Family<Labels, Gauge>,
    pub local_queue_pending_workloads: Family<Labels, Gauge>,
    pub reserving_active_workloads: Family<Labels, Gauge>,
    pub admitted_active_workloads: Family<Labels, Gauge>,
    pub quota_reserved_workloads: Family<Labels, Counter>,
    pub admitted_workloads: Family<Labels, Counter>,
    pub finished_workloads: Family<Labels, Counter>,
    pub quota_reserved_wait_time: Family<Labels, Histogram, Buckets>,
    pub admission_wait_time: Family<Labels, Histogram, Buckets>,
    /// waitForPodsReady: creation or requeue → PodsReady `Started`.
    pub ready_wait_time: Family<Labels, Histogram, Buckets>,
    /// waitForPodsReady: admission → PodsReady `Started`.
    pub admitted_until_ready_wait_time: Family<Labels, Histogram, Buckets>,
    pub evicted_workloads: Family<Labels, Counter>,
    pub preempted_workloads: Family<Labels, Counter>,
    pub cluster_queue_status: Family<Labels, Gauge>,
    pub resource_reservation: Family<Labels, GaugeF>,
    pub resource_usage: Family<Labels, GaugeF>,
    pub nominal_quota: Family<Labels, GaugeF>,
    pub borrowing_limit: Family<Labels, GaugeF>,
    pub lending_limit: Family<Labels, GaugeF>,
    pub build_info: Family<Labels, Gauge>,
    pub plugin_fallbacks: Family<Labels, Counter>,
    pub write_failures: Family<Labels, Counter>,
    /// Workload status patches sent, per kind (`admission`, `eviction`, `pending`, or the
    /// field manager of other writes), retries included.
    pub workload_status_writes: Family<Labels, Counter>,
    /// Core rebuilds from the mirror, per reason (`start`, `configuration`).
    pub core_rebuilds: Family<Labels, Counter>,
    /// Workloads taken into the live core one by one, per outcome (`added`, `updated`,
    /// `removed`, `unchanged`).
    pub core_workload_deltas: Family<Labels, Counter>,
    /// TAS trees rebuilt in the live core because nodes changed what TAS reads.
    pub topology_rebuilds: Family<Labels, Counter>,
    /// TAS pods given their domain (node selector set, topology gate removed).
    pub pods_ungated: Family<Labels, Counter>,
    /// Events dropped because too many were waiting to be published.
    pub events_dropped: Family<Labels, Counter>,
}

impl Metrics {
    /// `role`: Kueue's `replica_role` label (`leader`, `follower` or `standalone`).
    pub fn new(role: &str) -> Metrics {
        let mut m = Metrics {
            registry: Registry::default(),
            role: role.to_string(),
            admission_attempts: Family::default(),
            admission_attempt_duration: Family::new_with_constructor(Buckets),
            pending_workloads: Family::default(),
            local_queue_pending_workloads: Family::default(),
            reserving_active_workloads: Family::default(),
            admitted_active_workloads: Family::default(),
            quota_reserved_workloads: Family::default(),
            admitted_workloads: Family::default(),
            finished_workloads: Family::default(),
            quota_reserved_wait_time: Family::new_with_constructor(Buckets),
            admission_wait_time: Family::new_with_constructor(Buckets),
            ready_wait_time: Family::new_with_constructor(Buckets),
            admitted_until_ready_wait_time: Family::new_with_constructor(Buckets),
            evicted_workloads: Family::default(),
            preempted_workloads: Family::default(),
            cluster_queue_status: Family::default(),
            resource_reservation: Family::default(),
            resource_usage: Family::default(),
            nominal_quota: Family::default(),
            borrowing_limit: Family::default(),
            lending_limit: Family::default(),
            build_info: Family::default(),
            plugin_fallbacks: Family::default(),
            write_failures: Family::default(),
            workload_status_writes: Family::default(),
            core_rebuilds: Family::default(),
            core_workload_deltas: Family::default(),
            topology_rebuilds: Family::default(),
            pods_ungated: Family::default(),
            events_dropped: Family::default(),
        };
        let kueue = m.registry.sub_registry_with_prefix("kueue");
        kueue.register(
            "admission_attempts",
            "Total number of attempts to admit workloads",
            m.admission_attempts.clone(),
        );
        kueue.register(
            "admission_attempt_duration_seconds",
            "Latency of an admission attempt",
            m.admission_attempt_duration.clone(),
        );
        kueue.register(
            "pending_workloads",
            "Number of pending workloads, per cluster_queue and status",
            m.pending_workloads.clone(),
        );
        kueue.register(
            "local_queue_pending_workloads",
            "Number of pending workloads, per local_queue and status",
            m.local_queue_pending_workloads.clone(),
        );
        kueue.register(
            "reserving_active_workloads",
            "Number of workloads reserving quota, per cluster_queue",
            m.reserving_active_workloads.clone(),
        );
        kueue.register(
            "admitted_active_workloads",
            "Number of admitted workloads that are active, per cluster_queue",
            m.admitted_active_workloads.clone(),
        );
        kueue.register(
            "quota_reserved_workloads",
            "Total number of quota reserved workloads",
            m.quota_reserved_workloads.clone(),
        );
        kueue.register(
            "admitted_workloads",
            "Total number of admitted workloads",
            m.admitted_workloads.clone(),
        );
        kueue.register(
            "finished_workloads",
            "Total number of finished workloads",
            m.finished_workloads.clone(),
        );
        kueue.register(
            "quota_reserved_wait_time_seconds",
            "Time from creation or requeue until quota reservation",
            m.quota_reserved_wait_time.clone(),
        );
        kueue.register(
            "admission_wait_time_seconds",
            "Time from creation or requeue until admission",
            m.admission_wait_time.clone(),
        );
        kueue.register(
            "ready_wait_time_seconds",
            "The time between a workload was created or requeued until ready, per 'cluster_queue'",
            m.ready_wait_time.clone(),
        );
        kueue.register(
            "admitted_until_ready_wait_time_seconds",
            "The time between a workload was admitted until ready, per 'cluster_queue'",
            m.admitted_until_ready_wait_time.clone(),
        );
        kueue.register(
            "evicted_workloads",
            "Number of evicted workloads",
            m.evicted_workloads.clone(),
        );
        kueue.register(
            "preempted_workloads",
            "Number of preempted workloads, per preempting_cluster_queue",
            m.preempted_workloads.clone(),
        );
        kueue.register(
            "cluster_queue_status",
            "Status of the cluster_queue (pending, active, terminating)",
            m.cluster_queue_status.clone(),
        );
        kueue.register(
            "cluster_queue_resource_reservation",
            "Resource reservations of the cluster_queue",
            m.resource_reservation.clone(),
        );
        kueue.register(
            "cluster_queue_resource_usage",
            "Resource usage of the cluster_queue",
            m.resource_usage.clone(),
        );
        kueue.register(
            "cluster_queue_nominal_quota",
            "Nominal quota of the cluster_queue",
            m.nominal_quota.clone(),
        );
        kueue.register(
            "cluster_queue_borrowing_limit",
            "Borrowing limit of the cluster_queue",
            m.borrowing_limit.clone(),
        );
        kueue.register(
            "cluster_queue_lending_limit",
            "Lending limit of the cluster_queue",
            m.lending_limit.clone(),
        );
        kueue.register("build_info", "Build information", m.build_info.clone());
        let wasq = m.registry.sub_registry_with_prefix("wasq");
        wasq.register(
            "plugin_fallbacks",
            "Policy answers refused or failed, decided by the built-in policy instead",
            m.plugin_fallbacks.clone(),
        );
        wasq.register(
            "api_write_failures",
            "Writes to the API server that failed, per kind of write",
            m.write_failures.clone(),
        );
        wasq.register(
            "workload_status_writes",
            "Workload status patches sent, per kind of write (retries included)",
            m.workload_status_writes.clone(),
        );
        wasq.register(
            "core_rebuilds",
            "Rebuilds of the scheduling core from every watched object, per reason",
            m.core_rebuilds.clone(),
        );
        wasq.register(
            "core_workload_deltas",
            "Workload changes taken into the live core one by one, per outcome",
            m.core_workload_deltas.clone(),
        );
        wasq.register(
            "topology_rebuilds",
            "Rebuilds of the topology-aware scheduling trees because nodes changed",
            m.topology_rebuilds.clone(),
        );
        wasq.register(
            "tas_pods_ungated",
            "Pods released into their topology domain by the topology ungater",
            m.pods_ungated.clone(),
        );
        wasq.register(
            "events_dropped",
            "Events dropped because too many were waiting to be published",
            m.events_dropped.clone(),
        );
        m.build_info
            .get_or_create(&m.labels(vec![("git_version", env!("CARGO_PKG_VERSION").into())]))
            .set(1);
        m
    }

    /// `labels` plus `replica_role`.
    pub fn labels(&self, mut labels: Labels) -> Labels {
        labels.push(("replica_role", self.role.clone()));
        labels
    }

    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }

    /// Adds the `wasq_plugin_*` metrics of a plugin source and the
    /// `wasq_policy_shadow_decisions_total` of its shadows, read at each scrape.
    pub fn register_plugins(
        &mut self,
        source: crate::wasm::PluginSource,
        shadows: std::sync::Arc<crate::policy::shadow::ShadowLog>,
        objects: Option<std::sync::Arc<crate::wasm::PolicyObjects>>,
    ) {
        self.registry.register_collector(Box::new(
            crate::k8s::serve::plugin_metrics::PluginCollector {
                source,
                shadows,
                objects,
                role: self.role.clone(),
            },
        ));
    }

    /// Recomputes every gauge from the scheduler's state.
    /// Brings `wasq_events_dropped_total` up to `total`, the publisher's count so far.
    pub fn set_events_dropped(&self, total: u64) {
        let counter = self.events_dropped.get_or_create(&self.labels(vec![]));
        counter.inc_by(total.saturating_sub(counter.get()));
    }

    pub fn observe_state(&self, s: &Scheduler) {
        for f in [
            &self.pending_workloads,
            &self.reserving_active_workloads,
            &self.admitted_active_workloads,
            &self.cluster_queue_status,
            &self.local_queue_pending_workloads,
        ] {
            f.clear();
        }
        for f in [
            &self.resource_reservation,
            &self.resource_usage,
            &self.nominal_quota,
            &self.borrowing_limit,
            &self.lending_limit,
        ] {
            f.clear();
        }
        let c: &Cluster = &s.cluster;
        let mut lq_pending: std::collections::BTreeMap<(String, String, &str), i64> =
            Default::default();
        for cq in &c.cluster_queues {
            let name = cq.name.clone();
            let q = s.queues.queue(cq.id);
            for (status, n) in [
                ("active", q.active_len()),
                ("inadmissible", q.inadmissible_len()),
            ] {
                self.pending_workloads
                    .get_or_create(&self.labels(vec![
                        ("cluster_queue", name.clone()),
                        ("status", status.into()),
                    ]))
                    .set(n as i64);
            }
            for id in q.ordered() {
                let wl = c.workload(id);
                let status = if s.queues.is_inadmissible(id) {
                    "inadmissible"
                } else {
                    "active"
                };
                *lq_pending
                    .entry((
                        wl.namespace.clone(),
                        wl.local_queue.clone().unwrap_or_default(),
                        status,
                    ))
                    .or_default() += 1;
            }
            let holding = c.admitted_in(cq.id).len() as i64;
            let cq_label = || self.labels(vec![("cluster_queue", name.clone())]);
            self.reserving_active_workloads
                .get_or_create(&cq_label())
                .set(holding);
            self.admitted_active_workloads
                .get_or_create(&cq_label())
                .set(holding);
            for status in ["pending", "active", "terminating"] {
                let on = (status == "active") == cq.is_active() && status != "terminating";
                self.cluster_queue_status
                    .get_or_create(&self.labels(vec![
                        ("cluster_queue", name.clone()),
                        ("status", status.into()),
                    ]))
                    .set(i64::from(on));
            }
            let cohort = cq.cohort.clone().unwrap_or_default();
            for &fr in &cq.frs {
                let (f, r) = c.names.fr_parts(fr);
                let labels = self.labels(vec![
                    ("cohort", cohort.clone()),
                    ("cluster_queue", name.clone()),
                    ("flavor", c.names.flavor_name(f).into()),
                    ("resource", c.names.resource_name(r).into()),
                ]);
                let quota = c.tree.quota(cq.node, fr);
                let used = c.usage.get(cq.node, fr) as f64 / 1000.0;
                self.resource_reservation.get_or_create(&labels).set(used);
                self.resource_usage.get_or_create(&labels).set(used);
                self.nominal_quota
                    .get_or_create(&labels)
                    .set(quota.nominal as f64 / 1000.0);
                if let Some(b) = quota.borrowing_limit {
                    self.borrowing_limit
                        .get_or_create(&labels)
                        .set(b as f64 / 1000.0);
                }
                if let Some(l) = quota.lending_limit {
                    self.lending_limit
                        .get_or_create(&labels)
                        .set(l as f64 / 1000.0);
                }
            }
        }
        for ((namespace, name, status), n) in lq_pending {
            self.local_queue_pending_workloads
                .get_or_create(&self.labels(vec![
                    ("name", name),
                    ("namespace", namespace),
                    ("status", status.into()),
                ]))
                .set(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dropped(m: &Metrics) -> Option<String> {
        m.encode()
            .lines()
            .find(|l| l.starts_with("wasq_events_dropped_total{"))
            .map(|l| l.rsplit(' ').next().unwrap_or_default().to_string())
    }

    #[test]
    fn dropped_events_follow_the_publishers_count() {
        let m = Metrics::new("standalone");
        m.set_events_dropped(0);
        assert_eq!(dropped(&m).as_deref(), Some("0"));
        m.set_events_dropped(3);
        m.set_events_dropped(3);
        assert_eq!(dropped(&m).as_deref(), Some("3"));
        m.set_events_dropped(10);
        assert_eq!(dropped(&m).as_deref(), Some("10"));
    }
}
