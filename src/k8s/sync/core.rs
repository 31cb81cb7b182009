//! The mirror turned into the simulator's core. The restart path ([`build`]): validated
//! [`Manifests`] → [`build_cluster`] → [`Scheduler`], with the quota of every admitted (and not
//! finished) Workload restored before the first cycle, victims still being evicted marked as
//! such, and every other live Workload queued. The incremental path ([`sync_workload`]): one
//! Workload taken into a live core as the restart path would have built it — the same
//! `core_view` and `place` — so that a watch event costs O(that Workload).

use std::sync::Arc;

use crate::api::catalog::Catalog;
use crate::api::checks::AdmissionCheck;
use crate::api::{
    Manifests, Workload, defaults, multikueue, topology, validate, validate_workload,
};
use crate::cluster::{EvictionReason, Millis, WorkloadId, build_cluster};
use crate::scheduler::Scheduler;
use crate::topology::Topologies;

use crate::k8s::status::conditions::{self, ADMITTED, EVICTED, FINISHED, QUOTA_RESERVED};
use crate::k8s::sync::mirror::Mirror;

/// Installs policies on a scheduler: called after every rebuild and before every cycle, so it
/// must be cheap when nothing changed (the plugin host's `LiveBindings::refresh` is).
pub type Configure = Arc<dyn Fn(&mut Scheduler) + Send + Sync>;

pub fn is_finished(wl: &Workload) -> bool {
    wl.status
        .as_ref()
        .is_some_and(|s| conditions::is_true(&s.conditions, FINISHED))
}

pub fn has_quota_reservation(wl: &Workload) -> bool {
    wl.status.as_ref().is_some_and(|s| {
        s.admission.is_some() && conditions::is_true(&s.conditions, QUOTA_RESERVED)
    })
}

pub fn is_admitted(wl: &Workload) -> bool {
    wl.status
        .as_ref()
        .is_some_and(|s| conditions::is_true(&s.conditions, ADMITTED))
}

pub fn is_evicted(wl: &Workload) -> bool {
    wl.status
        .as_ref()
        .is_some_and(|s| conditions::is_true(&s.conditions, EVICTED))
}

/// The Catalog (priority classes, default LocalQueues) of the mirror.
pub fn catalog(mirror: &Mirror) -> Catalog {
    Catalog::new(
        mirror.priority_classes.values(),
        mirror.local_queues.values(),
    )
}

/// Whether an object passed validation; logs its problems when not.
fn valid(what: String, problems: Vec<crate::api::strict::FieldProblem>) -> bool {
    if problems.is_empty() {
        return true;
    }
    let text: Vec<String> = problems
        .iter()
        .map(|p| format!("{}: {}", p.field.as_deref().unwrap_or("-"), p.message))
        .collect();
    tracing::warn!(object = %what, problems = %text.join("; "), "ignoring an invalid object");
    false
}

/// Builds the scheduler for the mirror's current state.
pub fn build(mirror: &Mirror, now: Millis, configure: &Configure) -> Scheduler {
    let catalog = catalog(mirror);
    let mut m = Manifests {
        configuration: mirror.configuration.clone(),
        namespaces: mirror.namespaces.values().cloned().collect(),
        ..Manifests::default()
    };
    m.flavors = valid_flavors(mirror);
    m.cohorts = mirror
        .cohorts
        .iter()
        .filter(|(k, o)| valid(format!("Cohort {k}"), validate::cohort(o)))
        .map(|(_, o)| o.clone())
        .collect();
    m.cluster_queues = mirror
        .cluster_queues
        .iter()
        .filter(|(k, o)| valid(format!("ClusterQueue {k}"), validate::cluster_queue(o)))
        .map(|(_, o)| {
            let mut o = o.clone();
            o.status = None;
            o
        })
        .collect();
    m.local_queues = mirror
        .local_queues
        .iter()
        .filter(|(k, o)| valid(format!("LocalQueue {k}"), validate::local_queue(o)))
        .map(|(_, o)| {
            let mut o = o.clone();
            o.status = None;
            o
        })
        .collect();
    m.priority_classes = mirror
        .priority_classes
        .iter()
        .filter(|(k, o)| {
            valid(
                format!("WorkloadPriorityClass {k}"),
                validate::priority_class(o),
            )
        })
        .map(|(_, o)| o.clone())
        .collect();
    m.admission_checks = mirror
        .admission_checks
        .values()
        .map(|ac| as_the_core_sees(ac, mirror.provisioning_served))
        .collect();
    m.provisioning_request_configs = mirror.provisioning_configs.values().cloned().collect();
    m.multikueue_clusters = mirror
        .multikueue_clusters
        .iter()
        .filter(|(k, o)| {
            valid(
                format!("MultiKueueCluster {k}"),
                multikueue::validate_cluster(o),
            )
        })
        .map(|(_, o)| cluster_as_seen(o, mirror.multikueue_manager))
        .collect();
    m.multikueue_configs = mirror
        .multikueue_configs
        .iter()
        .filter(|(k, o)| {
            valid(
                format!("MultiKueueConfig {k}"),
                multikueue::validate_config(o),
            )
        })
        .map(|(_, o)| o.clone())
        .collect();
    add_tas_inputs(mirror, &mut m);
    for (key, wl) in &mirror.workloads {
        if let Some(wl) = core_view(key, wl, &catalog) {
            m.workloads.push(wl);
        }
    }
    let cluster = match build_cluster(&m, &|_| now, now) {
        Ok(c) => c,
        Err(errors) => {
            // Only restored admissions fail to build: drop those Workloads and build again.
            for e in &errors {
                tracing::warn!(object = %e.object, message = %e.message, "ignoring a Workload whose admission cannot be restored");
            }
            m.workloads.retain(|wl| {
                let label = format!(
                    "Workload {}/{}",
                    wl.metadata.namespace.as_deref().unwrap_or("default"),
                    wl.metadata.name.as_deref().unwrap_or_default()
                );
                !errors.iter().any(|e| e.object == label)
            });
            match build_cluster(&m, &|_| now, now) {
                Ok(c) => c,
                Err(errors) => {
                    tracing::error!(
                        count = errors.len(),
                        "cannot build the cluster; starting without Workloads"
                    );
                    m.workloads.clear();
                    build_cluster(&m, &|_| now, now)
                        .unwrap_or_else(|_| unreachable!("no workload, no admission to restore"))
                }
            }
        }
    };
    let mut cluster = cluster;
    for (node, usage) in &mirror.tas.node_usage {
        cluster.tas.set_node_usage(node, usage.clone());
    }
    seed_lq_usage(&mut cluster, mirror);
    let mut scheduler = Scheduler::new(cluster);
    configure(&mut scheduler);
    let n = scheduler.cluster.workloads.len();
    for i in 0..n {
        let id = WorkloadId(i as u32);
        let key = scheduler.cluster.workload(id).key.clone();
        if let Some(wl) = mirror.workloads.get(&key) {
            place(&mut scheduler, id, wl, now);
        }
    }
    scheduler
}

fn valid_flavors(mirror: &Mirror) -> Vec<crate::api::ResourceFlavor> {
    mirror
        .flavors
        .iter()
        .filter(|(k, o)| valid(format!("ResourceFlavor {k}"), validate::resource_flavor(o)))
        .map(|(_, o)| o.clone())
        .collect()
}

/// Topology-aware scheduling's inputs: valid Topologies and Nodes (stripped as Kueue's TAS
/// cache keeps them).
fn add_tas_inputs(mirror: &Mirror, m: &mut Manifests) {
    m.topologies = mirror
        .topologies
        .iter()
        .filter(|(k, t)| valid(format!("Topology {k}"), topology::validate_topology(t)))
        .map(|(_, t)| t.clone())
        .collect();
    m.nodes = mirror
        .tas
        .nodes
        .iter()
        .filter(|(k, n)| valid(format!("Node {k}"), topology::validate_node(n)))
        .map(|(_, n)| n.clone())
        .collect();
}

/// The TAS trees of the mirror's flavors, Topologies and Nodes, for a live core whose
/// configuration did not change (only nodes did).
pub fn topologies(mirror: &Mirror, names: &crate::quota::Names) -> Topologies {
    let mut m = Manifests {
        flavors: valid_flavors(mirror),
        ..Manifests::default()
    };
    add_tas_inputs(mirror, &mut m);
    Topologies::build(&m, |f| names.find_flavor(f))
}

/// The Workload as the core takes it in: defaulted and validated, its `status.admission`
/// kept only with a quota reservation. `None` for Workloads the core does not hold: finished,
/// being deleted without a reservation, or invalid (logged).
fn core_view(key: &str, wl: &Workload, catalog: &Catalog) -> Option<Workload> {
    if is_finished(wl) || wl.metadata.deletion_timestamp.is_some() && !has_quota_reservation(wl) {
        return None;
    }
    let mut wl = wl.clone();
    defaults::default_workload(&mut wl, catalog);
    if !valid(
        format!("Workload {key}"),
        validate_workload::workload(&wl, catalog),
    ) {
        return None;
    }
    if !has_quota_reservation(&wl)
        && let Some(s) = &mut wl.status
    {
        s.admission = None;
    }
    Some(wl)
}

/// Puts a Workload the core has registered where the cluster shows it: holding quota (marked
/// evicting when the cluster says so), waiting for an admission check's backoff, or queued
/// with its requeue history (queue position and reason after a retry eviction). The restart
/// path and the incremental path share it. Returns the end of a backoff it waits for.
fn place(s: &mut Scheduler, id: WorkloadId, wl: &Workload, now: Millis) -> Option<Millis> {
    let key = s.cluster.workload(id).key.clone();
    let by_eviction_time = s
        .cluster
        .settings
        .wait_for_pods_ready
        .as_ref()
        .is_none_or(|w| w.by_eviction_time);
    if s.cluster.admission(id).is_some() {
        if is_evicted(wl) {
            let _ = s.cluster.mark_evicting(id);
        }
        return None;
    }
    if let Some((queued, reason)) = requeued(wl, by_eviction_time) {
        let info = &mut s.cluster.workloads[id.index()];
        info.queued = queued.unwrap_or(info.created);
        // Kueue's queue-order timestamp: the eviction time after a PodsReady timeout
        // (timestamp: Eviction) or an admission check's Retry.
        info.created = info.queued;
        info.requeue_reason = Some(reason);
        info.requeue_count = requeue_count(wl);
    }
    if let Some(t) = requeue_at(wl).filter(|&t| t > now) {
        tracing::debug!(workload = %key, "not queued before its admission check's backoff");
        return Some(t);
    }
    if let Err(e) = s.submit(id) {
        tracing::debug!(workload = %key, reason = %e, "not queued");
    }
    None
}

/// What taking one Workload into a live core did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Synced {
    /// Nothing the core decides on changed.
    Unchanged,
    /// A new Workload: registered, and queued or holding quota as the cluster shows. `Some`:
    /// it waits for an admission check's backoff until then.
    Added(Option<Millis>),
    /// Its spec or its reservation changed: the core follows the cluster.
    Updated(Option<Millis>),
    /// Deleted or finished: its quota released and its record removed.
    Removed,
}

/// Takes one Workload of the mirror into a live core, as the restart path would have built
/// it — the controller's incremental path: O(this Workload), parking, sticky preemptors and
/// history of every other Workload untouched.
pub fn sync_workload(
    s: &mut Scheduler,
    mirror: &Mirror,
    catalog: &Catalog,
    key: &str,
    now: Millis,
) -> Synced {
    let want = mirror
        .workloads
        .get(key)
        .and_then(|wl| core_view(key, wl, catalog));
    let id = s.cluster.find_workload(key);
    match (want, id) {
        (None, None) => Synced::Unchanged,
        (None, Some(id)) => {
            s.remove(id);
            Synced::Removed
        }
        (Some(wl), None) => {
            let info = info_of(s, &wl, now);
            let id = s.cluster.add_workload(info);
            if !restore(s, id, &wl, now) {
                s.remove(id);
                return Synced::Unchanged;
            }
            Synced::Added(place(s, id, &wl, now))
        }
        (Some(wl), Some(id)) => {
            let holds = s.cluster.admission(id).is_some();
            let shown = wl.status.as_ref().is_some_and(|st| st.admission.is_some());
            match (holds, shown) {
                (true, true) => {
                    if is_evicted(&wl) && !s.cluster.is_evicting(id) {
                        let _ = s.cluster.mark_evicting(id);
                    }
                    Synced::Unchanged
                }
                (true, false) => {
                    // Its admission was removed by someone else: follow the cluster.
                    s.release(id);
                    Synced::Updated(place(s, id, &wl, now))
                }
                (false, true) => {
                    // Admitted by someone else (or before a restart of this replica).
                    s.dequeue(id);
                    if !restore(s, id, &wl, now) {
                        s.remove(id);
                        return Synced::Removed;
                    }
                    Synced::Updated(place(s, id, &wl, now))
                }
                (false, false) => {
                    let info = info_of(s, &wl, now);
                    let old = s.cluster.workload(id);
                    if old.same_spec(&info) && (s.is_pending(id) || !info.active) {
                        return Synced::Unchanged;
                    }
                    s.replace(id, info);
                    Synced::Updated(place(s, id, &wl, now))
                }
            }
        }
    }
}

/// The core's record of a Workload for a live core. A resource no ClusterQueue names is
/// interned on the way: the configuration id changes so that policies get the new names.
fn info_of(s: &mut Scheduler, wl: &Workload, now: Millis) -> crate::cluster::WorkloadInfo {
    let resources = s.cluster.names.n_resources();
    let info = s.cluster.workload_info(wl, now);
    if s.cluster.names.n_resources() != resources {
        s.cluster.config_changed();
    }
    info
}

/// Restores the quota a Workload's `status.admission` shows. `false` (logged) when it cannot
/// be restored (a flavor or ClusterQueue that no longer exists), as the restart path drops it.
fn restore(s: &mut Scheduler, id: WorkloadId, wl: &Workload, now: Millis) -> bool {
    let Some(st) = &wl.status else { return true };
    let Some(admission) = &st.admission else {
        return true;
    };
    let reserved_at = conditions::find(&st.conditions, QUOTA_RESERVED)
        .filter(|c| c.status == "True")
        .and_then(|c| c.last_transition_time.as_ref())
        .map_or(now, |t| t.0.as_millisecond());
    let result = s.cluster.admission_of(id, admission).and_then(|a| {
        s.cluster
            .reserve(id, a, reserved_at)
            .map_err(|e| e.to_string())
    });
    if let Err(message) = &result {
        tracing::warn!(workload = %s.cluster.workload(id).key, %message, "ignoring a Workload whose admission cannot be restored");
    }
    result.is_ok()
}

/// `status.requeueState.requeueAt`: a Workload evicted by an admission check in `Retry` is
/// queued again no earlier.
/// A Workload back in its queue after an eviction to be retried: its queue position (Kueue's
/// §5.5: the eviction time for a check in Retry and for a PodsReady timeout, unless
/// `requeuingStrategy.timestamp: Creation` — `None`: its creation time) and the reason.
fn requeued(wl: &Workload, by_eviction_time: bool) -> Option<(Option<Millis>, EvictionReason)> {
    let st = wl.status.as_ref()?;
    let ev = conditions::find(&st.conditions, EVICTED).filter(|c| c.status == "True")?;
    let at = ev
        .last_transition_time
        .as_ref()
        .map(|t| t.0.as_millisecond());
    match EvictionReason::of_kueue(&ev.reason)? {
        EvictionReason::PodsReadyTimeout => Some((
            at.filter(|_| by_eviction_time),
            EvictionReason::PodsReadyTimeout,
        )),
        EvictionReason::AdmissionCheck => Some((at, EvictionReason::AdmissionCheck)),
        EvictionReason::Preempted => None,
    }
}

/// `status.requeueState.count` (0 when absent).
fn requeue_count(wl: &Workload) -> u32 {
    wl.status
        .as_ref()
        .and_then(|s| s.requeue_state.as_ref())
        .and_then(|v| v.get("count"))
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0) as u32
}

pub fn requeue_at(wl: &Workload) -> Option<Millis> {
    let v = wl.status.as_ref()?.requeue_state.as_ref()?;
    let t: jiff::Timestamp = v.get("requeueAt")?.as_str()?.parse().ok()?;
    Some(t.as_millisecond())
}

/// Admission fair sharing: the LocalQueues' consumed resources as their status last recorded
/// them (`status.fairSharing.admissionFairSharingStatus`), so that a restarted controller does
/// not start the history from zero. The controller keeps its own ledger across later rebuilds.
fn seed_lq_usage(cluster: &mut crate::cluster::Cluster, mirror: &Mirror) {
    if cluster.settings.admission_fair_sharing.is_none() {
        return;
    }
    let mut seeds = Vec::new();
    let mut last_update: Option<Millis> = None;
    for (i, lq) in cluster.local_queues.iter().enumerate() {
        let key = format!("{}/{}", lq.namespace, lq.name);
        let Some(status) = mirror
            .local_queues
            .get(&key)
            .and_then(|o| o.status.as_ref())
        else {
            continue;
        };
        let afs = &status["fairSharing"]["admissionFairSharingStatus"];
        if let Some(t) = afs["lastUpdate"]
            .as_str()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        {
            let t = t.as_millisecond();
            last_update = Some(last_update.map_or(t, |l: Millis| l.max(t)));
        }
        let Some(consumed) = afs["consumedResources"].as_object() else {
            continue;
        };
        for (name, value) in consumed {
            let (Some(r), Some(q)) = (
                cluster.names.find_resource(name),
                value
                    .as_str()
                    .and_then(|v| v.parse::<crate::api::Quantity>().ok()),
            ) else {
                continue;
            };
            seeds.push((crate::cluster::LqId(i as u32), r, q.0 as f64 / 1000.0));
        }
    }
    if !seeds.is_empty() || last_update.is_some() {
        cluster.lq_usage.seed(&seeds, last_update);
    }
}

/// An AdmissionCheck as Kueue's cache sees it: active only with an `Active=True` condition.
/// wasq writes that condition for its own ProvisioningRequest checks (when their parameters
/// resolve); without the ProvisioningRequest API no controller can, so such a check is
/// inactive, as it is in Kueue (which does not start the controller then). Other
/// controllers' checks are inactive until their controller marks them active.
fn as_the_core_sees(ac: &AdmissionCheck, provisioning_served: bool) -> AdmissionCheck {
    use crate::api::checks::{ADMISSION_CHECK_ACTIVE, PROVISIONING_REQUEST_CONTROLLER};
    let mut ac = ac.clone();
    let ours = ac.spec.controller_name == PROVISIONING_REQUEST_CONTROLLER;
    let inactive = |message: &str| k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
        type_: ADMISSION_CHECK_ACTIVE.into(),
        status: "False".into(),
        reason: "Inactive".into(),
        message: message.into(),
        last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            jiff::Timestamp::UNIX_EPOCH,
        ),
        observed_generation: None,
    };
    let has_active = ac.status.as_ref().is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == ADMISSION_CHECK_ACTIVE)
    });
    let verdict = if ours && !provisioning_served {
        Some("the ProvisioningRequest API (autoscaling.x-k8s.io/v1) is not served")
    } else if ours {
        // Its parameters are resolved by the core itself (Kueue's BadParametersRef).
        ac.status = None;
        None
    } else if !has_active {
        Some("no Active condition: the check's controller has not marked it active")
    } else {
        None
    };
    if let Some(message) = verdict {
        ac.status = Some(crate::api::checks::AdmissionCheckStatus {
            conditions: vec![inactive(message)],
        });
    }
    ac
}

/// A MultiKueueCluster as the core counts it: when this controller is the MultiKueue manager,
/// one without an `Active` condition is not connected yet (Kueue: `IsStatusConditionTrue`),
/// so it gets `Active=Unknown`; otherwise (manifests semantics) it counts as connected.
pub fn cluster_as_seen(
    cluster: &crate::api::multikueue::MultiKueueCluster,
    manager: bool,
) -> crate::api::multikueue::MultiKueueCluster {
    let mut o = cluster.clone();
    if manager && o.active().is_none() {
        o.status
            .get_or_insert_default()
            .conditions
            .push(crate::api::Condition {
                type_: multikueue::CLUSTER_ACTIVE.into(),
                status: "Unknown".into(),
                reason: String::new(),
                message: String::new(),
                last_transition_time: None,
                observed_generation: None,
            });
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::decode::decode_document;
    use crate::cluster::LqId;

    fn put(mirror: &mut Mirror, yaml: &str) {
        let origin = crate::api::Origin {
            file: "test.yaml".into(),
            doc: 1,
        };
        let value: serde_json::Value = serde_saphyr::from_str(yaml).unwrap();
        mirror.put(decode_document(&origin, value).unwrap(), false);
    }

    #[test]
    fn a_requeued_workload_keeps_its_queue_position_across_rebuilds() {
        let wl = |reason: &str| -> Workload {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "w", "namespace": "ns"},
                "spec": {"queueName": "lq", "podSets": []},
                "status": {"requeueState": {"count": 2}, "conditions": [
                    {"type": "Evicted", "status": "True", "reason": reason, "message": "",
                     "lastTransitionTime": "2026-01-01T00:05:00Z"}]}}))
            .unwrap()
        };
        let evicted_at = Some(1_767_225_900_000);
        assert_eq!(
            requeued(&wl("PodsReadyTimeout"), true),
            Some((evicted_at, EvictionReason::PodsReadyTimeout))
        );
        assert_eq!(
            requeued(&wl("PodsReadyTimeout"), false),
            Some((None, EvictionReason::PodsReadyTimeout))
        );
        assert_eq!(
            requeued(&wl("AdmissionCheck"), false),
            Some((evicted_at, EvictionReason::AdmissionCheck))
        );
        assert_eq!(requeued(&wl("Preempted"), true), None);
        assert_eq!(requeue_count(&wl("PodsReadyTimeout")), 2);
    }

    #[test]
    fn a_restarted_controller_takes_local_queue_usage_from_status() {
        let mut mirror = Mirror::new(0);
        mirror.configuration = Some(crate::api::config::Configuration {
            admission_fair_sharing: Some(Default::default()),
            ..Default::default()
        });
        put(
            &mut mirror,
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n",
        );
        put(
            &mut mirror,
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\nspec:\n  namespaceSelector: {}\n  admissionScope: {admissionMode: UsageBasedAdmissionFairSharing}\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n    - name: f\n      resources:\n      - {name: cpu, nominalQuota: 4}\n",
        );
        put(
            &mut mirror,
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {namespace: ns, name: team}\nspec: {clusterQueue: cq}\nstatus:\n  fairSharing:\n    admissionFairSharingStatus:\n      consumedResources: {cpu: 1500m}\n      lastUpdate: '2026-01-01T00:00:00Z'\n",
        );
        let configure: Configure = Arc::new(|_| {});
        let s = build(&mirror, 0, &configure);
        let lq = s
            .cluster
            .local_queues
            .iter()
            .position(|l| l.name == "team")
            .expect("team");
        let cpu = s.cluster.names.find_resource("cpu").expect("cpu");
        assert_eq!(
            s.cluster.lq_usage.consumed(LqId(lq as u32))[cpu.index()],
            1.5
        );
        assert_eq!(s.cluster.lq_usage.last_sample(), Some(1_767_225_600_000));
    }
}
