//! Kueue's Workload rules (`pkg/webhooks/workload_webhook.go` and the CRD schema), checked
//! after defaulting: podSets, counts, partial admission, resource quantities, priority.

use std::collections::BTreeMap;
use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;

use super::Quantity;
use super::catalog::Catalog;
use super::names;
use super::strict::{FieldProblem, unknown_value};
use super::types::{
    GROUP, POD_PRIORITY_CLASS_KIND, PodSet, PriorityClassRef, WORKLOAD_PRIORITY_CLASS_KIND,
    Workload, labels,
};
use super::validate::{NOT_NEGATIVE, Problems, Scope, metadata, too_many};

const MAX_POD_SETS: usize = 18;
const POD_PRIORITY_GROUP: &str = "scheduling.k8s.io";

/// Every problem of a (defaulted) Workload.
pub fn workload(wl: &Workload, catalog: &Catalog) -> Vec<FieldProblem> {
    let mut p = Problems::default();
    metadata(&mut p, &wl.metadata, Scope::Namespaced);
    let spec = &wl.spec;
    pod_sets(&mut p, &spec.pod_sets);
    if let Some(q) = spec.queue_name.as_deref().filter(|q| !q.is_empty()) {
        p.check("spec.queueName", q, names::dns_subdomain);
    }
    if let Some(r) = &spec.priority_class_ref {
        priority_class_ref(&mut p, r, spec.priority, catalog);
    }
    if spec.maximum_execution_time_seconds.is_some_and(|s| s < 1) {
        p.add(
            "spec.maximumExecutionTimeSeconds",
            "must be greater than or equal to 1",
        );
    }
    if let Some(boost) = wl
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(labels::PRIORITY_BOOST))
    {
        let path = format!("metadata.annotations.{}", labels::PRIORITY_BOOST);
        if boost.is_empty() {
            p.add(
                path,
                "must be a signed integer; use \"0\" explicitly, empty is not allowed",
            );
        } else if boost.parse::<i32>().is_err() {
            p.add(path, format!("{boost:?} must be a signed integer"));
        }
    }
    if let Some(status) = &wl.status {
        p.0.extend(super::multikueue::validate_workload_clusters(
            status.cluster_name.as_deref(),
            &status.nominated_cluster_names,
        ));
    }
    if let Some(admission) = wl.status.as_ref().and_then(|s| s.admission.as_ref()) {
        let known: BTreeSet<&str> = spec.pod_sets.iter().map(|ps| ps.name.as_str()).collect();
        for (i, a) in admission.pod_set_assignments.iter().enumerate() {
            if !known.contains(a.name.as_str()) {
                p.add(
                    format!("status.admission.podSetAssignments[{i}].name"),
                    format!("podSet {:?} not found in spec.podSets", a.name),
                );
            }
        }
    }
    p.into_vec()
}

fn pod_sets(p: &mut Problems, pod_sets: &[PodSet]) {
    if pod_sets.is_empty() {
        p.add("spec.podSets", "must have at least 1 podSet");
    } else if pod_sets.len() > MAX_POD_SETS {
        p.add(
            "spec.podSets",
            too_many(MAX_POD_SETS, "podSets", pod_sets.len()),
        );
    }
    let mut names_seen = BTreeSet::new();
    for (i, ps) in pod_sets.iter().enumerate() {
        let path = format!("spec.podSets[{i}]");
        p.check(&format!("{path}.name"), &ps.name, names::dns_label);
        if !names_seen.insert(ps.name.as_str()) {
            p.add(
                format!("{path}.name"),
                format!("duplicate podSet name {:?}", ps.name),
            );
        }
        if ps.count < 0 {
            p.add(format!("{path}.count"), NOT_NEGATIVE);
        }
        match ps.min_count {
            Some(m) if m < 1 => p.add(
                format!("{path}.minCount"),
                "must be greater than or equal to 1",
            ),
            Some(m) if m > ps.count => p.add(
                format!("{path}.minCount"),
                format!("must be less than or equal to count ({})", ps.count),
            ),
            _ => {}
        }
        if let Some(spec) = &ps.template.spec {
            pod_spec_resources(p, &format!("{path}.template.spec"), spec);
        }
        if let Some(tr) = &ps.topology_request {
            super::topology::validate_request(p, &format!("{path}.topologyRequest"), tr);
        }
    }
    if pod_sets.iter().filter(|ps| ps.min_count.is_some()).count() > 1 {
        p.add("spec.podSets", "at most one podSet can use minCount");
    }
}

/// Every resource quantity of a pod spec: a valid name, a readable and non-negative amount,
/// and not the `pods` key Kueue reserves.
fn pod_spec_resources(p: &mut Problems, path: &str, spec: &PodSpec) {
    let init = spec.init_containers.as_deref().unwrap_or_default();
    let all = (init
        .iter()
        .enumerate()
        .map(|(i, c)| ("initContainers", i, c)))
    .chain(
        spec.containers
            .iter()
            .enumerate()
            .map(|(i, c)| ("containers", i, c)),
    );
    for (field, i, c) in all {
        if let Some(r) = &c.resources {
            let rp = format!("{path}.{field}[{i}].resources");
            resource_list(p, &format!("{rp}.requests"), r.requests.as_ref());
            resource_list(p, &format!("{rp}.limits"), r.limits.as_ref());
        }
    }
    if let Some(r) = &spec.resources {
        resource_list(
            p,
            &format!("{path}.resources.requests"),
            r.requests.as_ref(),
        );
        resource_list(p, &format!("{path}.resources.limits"), r.limits.as_ref());
    }
    resource_list(p, &format!("{path}.overhead"), spec.overhead.as_ref());
}

fn resource_list(p: &mut Problems, path: &str, list: Option<&BTreeMap<String, KubeQuantity>>) {
    for (name, q) in list.into_iter().flatten() {
        let at = format!("{path}.{name}");
        if name == "pods" {
            p.add(&at, "the key \"pods\" is reserved for Kueue's internal use");
            continue;
        }
        p.check(&at, name, names::qualified_name);
        match q.0.parse::<Quantity>() {
            Err(e) => p.add(&at, e.to_string()),
            Ok(v) if v < Quantity::ZERO => p.add(&at, NOT_NEGATIVE),
            Ok(_) => {}
        }
    }
}

fn priority_class_ref(
    p: &mut Problems,
    r: &PriorityClassRef,
    priority: Option<i32>,
    catalog: &Catalog,
) {
    let path = "spec.priorityClassRef";
    let groups = [GROUP, POD_PRIORITY_GROUP];
    let kinds = [WORKLOAD_PRIORITY_CLASS_KIND, POD_PRIORITY_CLASS_KIND];
    let group_ok = groups.contains(&r.group.as_str());
    let kind_ok = kinds.contains(&r.kind.as_str());
    if !group_ok {
        p.add(format!("{path}.group"), unknown_value(&r.group, &groups));
    }
    if !kind_ok {
        p.add(format!("{path}.kind"), unknown_value(&r.kind, &kinds));
    }
    let workload_class = r.group == GROUP && r.kind == WORKLOAD_PRIORITY_CLASS_KIND;
    let pod_class = r.group == POD_PRIORITY_GROUP && r.kind == POD_PRIORITY_CLASS_KIND;
    if group_ok && kind_ok && !workload_class && !pod_class {
        let want = if r.group == GROUP {
            WORKLOAD_PRIORITY_CLASS_KIND
        } else {
            POD_PRIORITY_CLASS_KIND
        };
        p.add(
            format!("{path}.kind"),
            format!("only the {want} kind is allowed for the {} group", r.group),
        );
    }
    p.check(&format!("{path}.name"), &r.name, names::dns_subdomain);
    if priority.is_none() {
        if workload_class && catalog.priority_of(&r.name).is_none() {
            p.add(
                format!("{path}.name"),
                format!(
                    "WorkloadPriorityClass {:?} not found, and spec.priority is not set",
                    r.name
                ),
            );
        } else if !workload_class {
            p.add(
                "spec.priority",
                "required when priorityClassRef is not a WorkloadPriorityClass (wasq reads no PriorityClass objects)",
            );
        }
    }
}
