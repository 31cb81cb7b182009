//! Kueue's ProvisioningRequest admission check (`pkg/controller/admissionchecks/provisioning/`):
//! for a Workload holding quota whose check of controller `kueue.x-k8s.io/provisioning-request`
//! is not Ready, a cluster-autoscaler `autoscaling.x-k8s.io/v1` ProvisioningRequest named
//! `<workload>-<check>-<attempt>` (with a PodTemplate per podSet that uses a managed resource),
//! and the request's conditions mapped to the check's state (Kueue's `syncCheckStates`).
//!
//! [`plan`] is pure: it says which requests to create and delete and which check states to
//! write; the controller performs it (`controller.rs`, `sync_provisioning`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use kube::core::{ApiResource, DynamicObject};
use serde_json::{Value, json};

use crate::api::checks::PROVISIONING_REQUEST_CONTROLLER;
use crate::api::{AdmissionCheckState, PodSetUpdate, ResourceFlavor, V1BETA2, Workload};
use crate::cluster::Millis;
use crate::cluster::checks::{CheckDef, ProvisioningConfig, backoff_seconds};
use crate::k8s::status::conditions as cond;

pub const GROUP: &str = "autoscaling.x-k8s.io";
pub const API_VERSION: &str = "autoscaling.x-k8s.io/v1";
/// Label on every object the check creates.
pub const MANAGED_LABEL: &str = "kueue.x-k8s.io/managed";
/// Workload annotations overriding the config's parameters (prefix stripped).
pub const PARAMETER_ANNOTATION_PREFIX: &str = "provreq.kueue.x-k8s.io/";
pub const CONSUME_ANNOTATION: &str = "autoscaling.x-k8s.io/consume-provisioning-request";
pub const CLASS_ANNOTATION: &str = "autoscaling.x-k8s.io/provisioning-class-name";
pub const CHECK_INACTIVE_MESSAGE: &str = "the check is not active";
pub const NO_REQUEST_NEEDED: &str = "the provisioning request is not needed";
/// Field manager of the check states this controller writes.
pub const FIELD_MANAGER: &str = PROVISIONING_REQUEST_CONTROLLER;

/// The ProvisioningRequest resource (no typed crate: a dynamic object).
pub fn resource() -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: "v1".into(),
        api_version: API_VERSION.into(),
        kind: "ProvisioningRequest".into(),
        plural: "provisioningrequests".into(),
    }
}

pub use crate::cluster::checks::{limit_object_name, request_name};

pub fn template_name(request: &str, pod_set: &str) -> String {
    limit_object_name(&format!("ppt-{request}-{pod_set}"))
}

/// The attempt a request's name carries for `workload` and `check`.
pub fn attempt_of(name: &str, workload: &str, check: &str) -> Option<i32> {
    let prefix = limit_object_name(&format!("{workload}-{check}-"));
    let rest = name.strip_prefix(&prefix)?;
    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest.parse().ok()
}

/// A condition of the request that is True: its message.
fn true_condition(pr: &DynamicObject, type_: &str) -> Option<String> {
    let c = find_condition(pr, type_)?;
    (c["status"] == "True").then(|| c["message"].as_str().unwrap_or_default().to_string())
}

fn find_condition<'a>(pr: &'a DynamicObject, type_: &str) -> Option<&'a Value> {
    pr.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// Whether a request was made with this configuration (class and every parameter).
fn synced_with(pr: &DynamicObject, config: &ProvisioningConfig) -> bool {
    let spec = &pr.data["spec"];
    spec["provisioningClassName"].as_str().unwrap_or_default() == config.class
        && config
            .parameters
            .iter()
            .all(|(k, v)| spec["parameters"][k].as_str() == Some(v.as_str()))
}

fn uses_managed(template: &PodTemplateSpec, managed: &[String]) -> bool {
    if managed.is_empty() {
        return true;
    }
    let Some(spec) = &template.spec else {
        return false;
    };
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .filter_map(|c| c.resources.as_ref())
        .any(|r| {
            managed.iter().any(|m| {
                r.requests.as_ref().is_some_and(|q| q.contains_key(m))
                    || r.limits.as_ref().is_some_and(|q| q.contains_key(m))
            })
        })
}

/// The podSets the request covers, with their admitted counts (Kueue's `requiredPodSets`
/// without a merge policy).
fn required_pod_sets(wl: &Workload, config: &ProvisioningConfig) -> Vec<(String, i32)> {
    let assignments = wl
        .status
        .as_ref()
        .and_then(|s| s.admission.as_ref())
        .map(|a| a.pod_set_assignments.as_slice())
        .unwrap_or_default();
    wl.spec
        .pod_sets
        .iter()
        .filter(|ps| ps.count > 0 && uses_managed(&ps.template, &config.managed_resources))
        .filter_map(|ps| {
            let psa = assignments.iter().find(|a| a.name == ps.name)?;
            let count = psa.count.unwrap_or(ps.count);
            (count > 0).then(|| (ps.name.clone(), count))
        })
        .collect()
}

/// A request to create, with its PodTemplates.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRequest {
    pub check: String,
    pub request: Value,
    pub templates: Vec<Value>,
}

/// What to do for one Workload.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub creates: Vec<NewRequest>,
    /// Names of owned requests to delete.
    pub deletes: Vec<String>,
    /// The check states to write, when they changed.
    pub states: Option<Vec<AdmissionCheckState>>,
    /// `Admission check <name> updated state from <old> to <new>…` Events.
    pub events: Vec<String>,
}

/// What the controller knows that the plan reads.
pub struct Inputs<'a> {
    pub checks: &'a BTreeMap<String, CheckDef>,
    pub flavors: &'a BTreeMap<String, ResourceFlavor>,
    /// The requests owned by the Workload.
    pub owned: Vec<&'a DynamicObject>,
    /// Whether the cluster serves the ProvisioningRequest API.
    pub served: bool,
    pub now: Millis,
}

fn owner_reference(wl: &Workload) -> Value {
    json!({
        "apiVersion": V1BETA2,
        "kind": "Workload",
        "name": wl.metadata.name,
        "uid": wl.metadata.uid,
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// Whether the Workload is one whose requests this controller looks after at all.
pub fn owns(pr: &DynamicObject, wl: &Workload) -> bool {
    pr.metadata.namespace == wl.metadata.namespace
        && pr.metadata.owner_references.iter().flatten().any(|o| {
            o.kind == "Workload"
                && Some(&o.name) == wl.metadata.name.as_ref()
                && wl.metadata.uid.as_ref().is_none_or(|u| *u == o.uid)
        })
}

/// Where the Workload stands (from its conditions and spec).
#[derive(Debug, Clone, Copy, Default)]
pub struct Status {
    pub reserved: bool,
    pub evicted: bool,
    pub finished: bool,
    pub admitted: bool,
    pub active: bool,
}

/// Kueue's workload reconcile for one Workload.
pub fn plan(wl: &Workload, status: &Status, inputs: &Inputs) -> Plan {
    let Status {
        reserved,
        evicted,
        finished,
        admitted,
        active,
    } = *status;
    let mut plan = Plan::default();
    let owned_names = || -> Vec<String> {
        inputs
            .owned
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect()
    };
    if finished || evicted {
        plan.deletes = owned_names();
        return plan;
    }
    if !reserved {
        return plan;
    }
    let wl_name = wl.metadata.name.clone().unwrap_or_default();
    let states: Vec<AdmissionCheckState> =
        crate::k8s::status::admission_checks::states(wl).to_vec();
    let mut next = states.clone();
    let mut keep: Vec<String> = Vec::new();
    let mut abort = false;
    for state in &states {
        let Some(def) = inputs.checks.get(&state.name) else {
            continue;
        };
        if def.controller != PROVISIONING_REQUEST_CONTROLLER {
            continue;
        }
        let config = def.provisioning.as_ref().filter(|_| inputs.served);
        let mut s = state.clone();
        let Some(config) = config else {
            s.state = "Pending".into();
            s.message = CHECK_INACTIVE_MESSAGE.into();
            put(&mut next, s, state, inputs.now);
            continue;
        };
        let required = required_pod_sets(wl, config);
        if required.is_empty() {
            if s.state != "Ready" {
                s.state = "Ready".into();
                s.message = NO_REQUEST_NEEDED.into();
                s.pod_set_updates.clear();
            }
            put(&mut next, s, state, inputs.now);
            continue;
        }
        // The request of the highest attempt made with this configuration.
        let selected = inputs
            .owned
            .iter()
            .filter_map(|p| {
                let n = attempt_of(p.metadata.name.as_deref()?, &wl_name, &state.name)?;
                synced_with(p, config).then_some((n, *p))
            })
            .max_by_key(|(n, _)| *n);
        if let Some((_, p)) = selected {
            keep.extend(p.metadata.name.clone());
        }
        let retry_count = state.retry_count.unwrap_or(0);
        let Some((attempt, pr)) = selected else {
            // No request yet: the first (or, after a retry, the next) attempt. States are
            // written once the request exists.
            if state.state != "Ready"
                && let Some(new) = new_request(
                    wl,
                    &state.name,
                    retry_count.saturating_add(1),
                    config,
                    &required,
                    inputs.flavors,
                )
            {
                keep.push(request_name(
                    &wl_name,
                    &state.name,
                    retry_count.saturating_add(1),
                ));
                plan.creates.push(new);
            }
            abort = true;
            continue;
        };
        let retry = config.retry.clone();
        let (base, max, limit) = (
            retry.backoff_base_seconds(),
            retry.backoff_max_seconds(),
            retry.backoff_limit_count(),
        );
        let retry_or_reject = |s: &mut AdmissionCheckState, what: &str, message: String| {
            if attempt <= limit {
                s.message = format!("Retrying after {what}: {message}");
                if attempt > retry_count {
                    s.state = "Retry".into();
                    s.requeue_after_seconds =
                        Some(backoff_seconds(base, max, retry_count.saturating_add(1)));
                }
            } else {
                s.state = "Rejected".into();
                s.message = message;
            }
        };
        if let Some(m) = true_condition(pr, "Failed") {
            retry_or_reject(&mut s, "failure", m);
        } else if let Some(m) = true_condition(pr, "CapacityRevoked") {
            if active {
                s.state = "Rejected".into();
                s.message = m;
            }
        } else if let Some(m) = true_condition(pr, "BookingExpired") {
            if !admitted {
                retry_or_reject(&mut s, "booking expired", m);
            }
        } else if let Some(m) = true_condition(pr, "Provisioned") {
            if s.state != "Ready" {
                s.state = "Ready".into();
                s.pod_set_updates = pod_set_updates(wl, pr, config);
                s.message = m;
            }
        } else if true_condition(pr, "Accepted").is_some() {
            if let Some(c) = find_condition(pr, "Provisioned") {
                s.message = c["message"].as_str().unwrap_or_default().to_string();
                s.state = "Pending".into();
            }
        } else {
            s.message = String::new();
            s.state = "Pending".into();
        }
        // Kueue's order: the states first, then a new request only for a check still Pending
        // whose last request failed (or expired before admission) — an old attempt, from
        // before the retry that reset it; a fresh failure turned the check to Retry above.
        if s.state == "Pending"
            && (true_condition(pr, "Failed").is_some()
                || (!admitted && true_condition(pr, "BookingExpired").is_some()))
        {
            let next_attempt = attempt.saturating_add(1);
            if let Some(new) = new_request(
                wl,
                &state.name,
                next_attempt,
                config,
                &required,
                inputs.flavors,
            ) {
                keep.push(request_name(&wl_name, &state.name, next_attempt));
                plan.creates.push(new);
            }
        }
        if s.state != state.state {
            let mut e = format!(
                "Admission check {} updated state from {} to {}",
                s.name, state.state, s.state
            );
            if !s.message.is_empty() {
                e.push_str(&format!(" with message: {}", s.message));
            }
            plan.events.push(e);
        }
        put(&mut next, s, state, inputs.now);
    }
    plan.deletes = owned_names()
        .into_iter()
        .filter(|n| !keep.contains(n))
        .collect();
    if !abort && next != states {
        plan.states = Some(next);
    } else if abort {
        plan.events.clear();
    }
    plan
}

/// Kueue's `SetAdmissionCheckState`: the transition time moves only with the state.
fn put(
    list: &mut [AdmissionCheckState],
    mut new: AdmissionCheckState,
    old: &AdmissionCheckState,
    now: Millis,
) {
    if new.state != old.state || new.last_transition_time.is_none() {
        new.last_transition_time = Some(cond::time(now));
    }
    if let Some(slot) = list.iter_mut().find(|s| s.name == new.name) {
        *slot = new;
    }
}

/// The podSet updates of a provisioned request: Kueue's two annotations, and node selector
/// entries from the request's `provisioningClassDetails` as the config asks.
fn pod_set_updates(
    wl: &Workload,
    pr: &DynamicObject,
    config: &ProvisioningConfig,
) -> Vec<PodSetUpdate> {
    let name = pr.metadata.name.clone().unwrap_or_default();
    let class = pr.data["spec"]["provisioningClassName"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let details = &pr.data["status"]["provisioningClassDetails"];
    pr.data["spec"]["podSets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|ps| {
            let template = ps["podTemplateRef"]["name"].as_str().unwrap_or_default();
            let pod_set = wl
                .spec
                .pod_sets
                .iter()
                .find(|p| template_name(&name, &p.name) == template)
                .map(|p| p.name.clone())
                .unwrap_or_default();
            let node_selector = config
                .node_selector
                .iter()
                .filter_map(|(key, detail)| match details[detail].as_str() {
                    Some(v) => Some((key.clone(), v.to_string())),
                    None => {
                        tracing::info!(%detail, request = %name, "skipping a detail not in provisioningClassDetails");
                        None
                    }
                })
                .collect();
            PodSetUpdate {
                name: pod_set,
                annotations: [
                    (CONSUME_ANNOTATION.to_string(), name.clone()),
                    (CLASS_ANNOTATION.to_string(), class.clone()),
                ]
                .into(),
                node_selector,
                ..PodSetUpdate::default()
            }
        })
        .collect()
}

/// The request `<workload>-<check>-<attempt>` and its PodTemplates.
fn new_request(
    wl: &Workload,
    check: &str,
    attempt: i32,
    config: &ProvisioningConfig,
    required: &[(String, i32)],
    flavors: &BTreeMap<String, ResourceFlavor>,
) -> Option<NewRequest> {
    let wl_name = wl.metadata.name.clone()?;
    let namespace = wl
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    let name = request_name(&wl_name, check, attempt);
    let mut parameters: BTreeMap<String, String> = config.parameters.clone();
    for (k, v) in wl.metadata.annotations.iter().flatten() {
        if let Some(p) = k.strip_prefix(PARAMETER_ANNOTATION_PREFIX) {
            parameters.insert(p.to_string(), v.clone());
        }
    }
    let assignments = wl
        .status
        .as_ref()
        .and_then(|s| s.admission.as_ref())
        .map(|a| a.pod_set_assignments.clone())
        .unwrap_or_default();
    let mut pod_sets = Vec::new();
    let mut templates = Vec::new();
    for (ps_name, count) in required {
        let ps = wl.spec.pod_sets.iter().find(|p| &p.name == ps_name)?;
        let tname = template_name(&name, ps_name);
        let mut template = (*ps.template).clone();
        let mut assigned: Vec<&String> = assignments
            .iter()
            .filter(|a| &a.name == ps_name)
            .flat_map(|a| a.flavors.values())
            .collect();
        assigned.sort();
        assigned.dedup();
        let spec = template.spec.get_or_insert_with(Default::default);
        for f in assigned.iter().filter_map(|f| flavors.get(*f)) {
            if !f.spec.node_labels.is_empty() {
                spec.node_selector
                    .get_or_insert_with(Default::default)
                    .extend(f.spec.node_labels.clone());
            }
            for t in &f.spec.tolerations {
                let ts = spec.tolerations.get_or_insert_with(Vec::new);
                if !ts.contains(t) {
                    ts.push(t.clone());
                }
            }
        }
        // Kueue's UseLimitsAsMissingRequestsInPod.
        for c in spec
            .containers
            .iter_mut()
            .chain(spec.init_containers.iter_mut().flatten())
        {
            if let Some(r) = c.resources.as_mut()
                && let Some(limits) = r.limits.clone()
            {
                let requests = r.requests.get_or_insert_with(Default::default);
                for (k, v) in limits {
                    requests.entry(k).or_insert(v);
                }
            }
        }
        templates.push(json!({
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {
                "name": tname,
                "namespace": namespace,
                "labels": {MANAGED_LABEL: "true"},
                "ownerReferences": [owner_reference(wl)],
            },
            "template": template,
        }));
        pod_sets.push(json!({"podTemplateRef": {"name": tname}, "count": count}));
    }
    let request = json!({
        "apiVersion": API_VERSION,
        "kind": "ProvisioningRequest",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {MANAGED_LABEL: "true"},
            "ownerReferences": [owner_reference(wl)],
        },
        "spec": {
            "provisioningClassName": config.class,
            "parameters": parameters,
            "podSets": pod_sets,
        },
    });
    Some(NewRequest {
        check: check.to_string(),
        request,
        templates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_limited_as_kueue_does() {
        assert_eq!(request_name("wl", "prov", 2), "wl-prov-2");
        let long = "w".repeat(300);
        let n = request_name(&long, "prov", 1);
        assert_eq!(n.len(), 253);
        assert_eq!(attempt_of("wl-prov-12", "wl", "prov"), Some(12));
        assert_eq!(attempt_of("wl-prov-x", "wl", "prov"), None);
        assert_eq!(attempt_of("wl-prov2-1", "wl", "prov"), None);
    }
}
