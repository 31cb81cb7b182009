//! The validating webhooks. Kueue's objects go through the manifest loader's rules (one rule
//! set, two entry points: [`crate::api::strict`] decoding, then [`crate::api::validate`]),
//! plus the fields Kueue makes immutable on update. Jobs and pods are checked as Kueue's
//! `jobframework` and pod webhooks check them: a well-formed queue name, a queue label that
//! does not change while the job runs, consistent pod group metadata.

use serde_json::Value;

use super::mutate::{MANAGED_LABEL, MANAGED_VALUE, annotation, label, metadata_of, namespace_of};
use super::review::{AdmissionRequest, Verdict};
use super::view::View;
use crate::api::decode::Object;
use crate::api::jobs::JobKind;
use crate::api::policy::{POLICY_GROUP, QUEUE_POLICY_KIND};
use crate::api::strict::FieldProblem;
use crate::api::{GROUP, PodSet, Workload, labels, names, validate};
use crate::k8s::schema::kinds::KueueKind;
use crate::k8s::sync::core::has_quota_reservation;

/// apimachinery's `FieldImmutableErrorMsg`.
pub const IMMUTABLE: &str = "field is immutable";

pub use crate::k8s::schema::prune::Schemas;

/// Decodes an object under review as the loader does: its problems, each at its field.
pub fn decode(
    schemas: &Schemas,
    kind: KueueKind,
    value: &Value,
) -> Result<Object, Vec<FieldProblem>> {
    schemas
        .decode(Some(kind), value.clone(), "<admission>")
        .map_err(|e| e.problems)
}

/// `Kind.group "name" is invalid: ...`, as the API server words an Invalid error, with each
/// problem as `field: message`.
pub fn invalid_message(kind: &str, group: &str, name: &str, problems: &[FieldProblem]) -> String {
    let qualified = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    let lines: Vec<String> = problems
        .iter()
        .map(|p| match &p.field {
            Some(f) => format!("{f}: {}", p.message),
            None => p.message.clone(),
        })
        .collect();
    let body = match lines.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    format!("{qualified} {name:?} is invalid: {body}")
}

fn verdict(
    kind: &str,
    group: &str,
    req: &AdmissionRequest,
    problems: Vec<FieldProblem>,
) -> Verdict {
    if problems.is_empty() {
        return Verdict::allow();
    }
    let name = req
        .object
        .as_ref()
        .and_then(|o| o.pointer("/metadata/name"))
        .and_then(Value::as_str)
        .or(req.name.as_deref())
        .unwrap_or_default();
    Verdict::invalid(invalid_message(kind, group, name, &problems))
}

fn immutable(field: &str, value: &str) -> FieldProblem {
    FieldProblem::at(field, format!("Invalid value: {value:?}: {IMMUTABLE}"))
}

/// ClusterQueue, Cohort, LocalQueue, ResourceFlavor, WorkloadPriorityClass and Workload on
/// CREATE and UPDATE.
pub fn kueue(kind: KueueKind, schemas: &Schemas, req: &AdmissionRequest, view: &View) -> Verdict {
    let (Some(object), true) = (req.object.as_ref(), req.is_create() || req.is_update()) else {
        return Verdict::allow();
    };
    let decoded = match decode(schemas, kind, object) {
        Ok(o) => o,
        Err(problems) => return verdict(kind.kind(), GROUP, req, problems),
    };
    let old = req
        .old_object
        .as_ref()
        .filter(|_| req.is_update())
        .and_then(|o| decode(schemas, kind, o).ok());
    let mut problems = match &decoded {
        Object::Flavor(o) => validate::resource_flavor(o),
        Object::Cohort(o) => validate::cohort(o),
        Object::ClusterQueue(o) => validate::cluster_queue(o),
        Object::LocalQueue(o) => validate::local_queue(o),
        Object::PriorityClass(o) => validate::priority_class(o),
        Object::Workload(o) => validate::workload(o, &view.catalog),
        Object::MultiKueueCluster(o) => crate::api::multikueue::validate_cluster(o),
        Object::MultiKueueConfig(o) => crate::api::multikueue::validate_config(o),
        other => vec![FieldProblem::object(format!(
            "expected a {}, got a {}",
            kind.kind(),
            other.kind()
        ))],
    };
    match (&decoded, &old) {
        (Object::LocalQueue(new), Some(Object::LocalQueue(old)))
            if new.spec.cluster_queue != old.spec.cluster_queue =>
        {
            problems.push(immutable("spec.clusterQueue", &new.spec.cluster_queue));
        }
        (Object::Workload(new), Some(Object::Workload(old))) => {
            problems.extend(workload_update(new, old));
        }
        _ => {}
    }
    verdict(kind.kind(), GROUP, req, problems)
}

/// wasq's `QueuePolicy` on CREATE and UPDATE: read strictly (unknown fields and values named),
/// then [`crate::api::policy::validate`].
pub fn queue_policy(req: &AdmissionRequest) -> Verdict {
    let (Some(object), true) = (req.object.as_ref(), req.is_create() || req.is_update()) else {
        return Verdict::allow();
    };
    let problems = match crate::api::policy::from_object(object) {
        Ok(policy) => crate::api::policy::validate(&policy),
        Err(problems) => problems,
    };
    verdict(QUEUE_POLICY_KIND, POLICY_GROUP, req, problems)
}

/// Kueue's `ValidateWorkloadUpdate`: while quota is reserved, the queue and the podSets (all
/// but their counts) stay as they are.
fn workload_update(new: &Workload, old: &Workload) -> Vec<FieldProblem> {
    let mut problems = Vec::new();
    if !has_quota_reservation(old) {
        return problems;
    }
    if new.spec.queue_name != old.spec.queue_name {
        let q = new.spec.queue_name.clone().unwrap_or_default();
        problems.push(immutable("spec.queueName", &q));
    }
    let without_count = |sets: &[PodSet]| -> Vec<PodSet> {
        sets.iter()
            .map(|p| PodSet {
                count: 0,
                ..p.clone()
            })
            .collect()
    };
    if without_count(&new.spec.pod_sets) != without_count(&old.spec.pod_sets) {
        problems.push(FieldProblem::at(
            "spec.podSets",
            format!("{IMMUTABLE} while the Workload holds quota (only counts may change)"),
        ));
    }
    problems
}

fn queue_label_path() -> String {
    format!("metadata.labels[{}]", labels::QUEUE_NAME)
}

/// A job of a managed kind on CREATE and UPDATE.
pub fn job(kind: &JobKind, req: &AdmissionRequest, view: &View) -> Verdict {
    let (Some(object), true) = (req.object.as_ref(), req.is_create() || req.is_update()) else {
        return Verdict::allow();
    };
    let meta = metadata_of(object);
    let mut problems = Vec::new();
    let new_queue = label(&meta, labels::QUEUE_NAME);
    if let Some(q) = new_queue
        && let Err(e) = names::dns_subdomain(q)
    {
        problems.push(FieldProblem::at(
            queue_label_path(),
            format!("Invalid value: {q:?}: {e}"),
        ));
    }
    if let Some(old) = req.old_object.as_ref().filter(|_| req.is_update()) {
        let old_meta = metadata_of(old);
        let old_queue = label(&old_meta, labels::QUEUE_NAME);
        let namespace = namespace_of(req, &meta);
        let name = meta.name.as_deref().unwrap_or_default();
        let admitted = !kind.is_suspended(object)
            || view.holds_quota(
                namespace,
                &kind.workload_name(name, meta.uid.as_deref().unwrap_or_default(), None),
                meta.uid.as_deref(),
            );
        if admitted && new_queue != old_queue {
            problems.push(immutable(
                &queue_label_path(),
                new_queue.unwrap_or_default(),
            ));
        }
        if new_queue.is_none() && old_queue.is_some() && view.catalog.has_default_queue(namespace) {
            problems.push(FieldProblem::at(
                queue_label_path(),
                "Invalid value: \"\": queue-name must not be empty in namespace with default queue",
            ));
        }
    }
    verdict(&kind.spec.kind, &kind.group, req, problems)
}

/// A plain Pod on CREATE and UPDATE: the managed label's value, the group metadata (name and
/// total count together, a positive count that agrees with the group's other pods the
/// controller knows), and a group name that does not change.
pub fn pod(req: &AdmissionRequest, view: &View) -> Verdict {
    let (Some(object), true) = (req.object.as_ref(), req.is_create() || req.is_update()) else {
        return Verdict::allow();
    };
    let meta = metadata_of(object);
    let mut problems = Vec::new();
    let label_path = |k: &str| format!("metadata.labels[{k}]");
    let annotation_path = |k: &str| format!("metadata.annotations[{k}]");
    if let Some(v) = meta.labels.as_ref().and_then(|l| l.get(MANAGED_LABEL))
        && v != MANAGED_VALUE
    {
        problems.push(FieldProblem::at(
            label_path(MANAGED_LABEL),
            format!("Forbidden: managed label value can only be '{MANAGED_VALUE}'"),
        ));
    }
    let group = label(&meta, labels::POD_GROUP_NAME);
    let total = annotation(&meta, labels::POD_GROUP_TOTAL_COUNT);
    let both = format!(
        "Required value: both the '{}' annotation and the '{}' label should be set",
        labels::POD_GROUP_TOTAL_COUNT,
        labels::POD_GROUP_NAME
    );
    match (group, total) {
        (None, Some(_)) => {
            problems.push(FieldProblem::at(label_path(labels::POD_GROUP_NAME), both))
        }
        (Some(_), None) => problems.push(FieldProblem::at(
            annotation_path(labels::POD_GROUP_TOTAL_COUNT),
            both,
        )),
        (Some(g), Some(t)) => {
            let path = annotation_path(labels::POD_GROUP_TOTAL_COUNT);
            if let Err(e) = names::dns_subdomain(g) {
                problems.push(FieldProblem::at(
                    label_path(labels::POD_GROUP_NAME),
                    format!("Invalid value: {g:?}: {e}"),
                ));
            }
            match t.trim().parse::<i64>() {
                Ok(n) if n >= 1 => {}
                Ok(_) => problems.push(FieldProblem::at(
                    &path,
                    format!("Invalid value: {t:?}: group total count should be greater than zero"),
                )),
                Err(e) => problems.push(FieldProblem::at(
                    &path,
                    format!("Invalid value: {t:?}: {e}"),
                )),
            }
            let namespace = namespace_of(req, &meta);
            let name = meta.name.as_deref().unwrap_or_default();
            let others: Vec<&str> = view
                .group_pods(namespace, g, name)
                .filter_map(|p| p.total_count.as_deref())
                .filter(|other| other.trim() != t.trim())
                .collect();
            if let Some(other) = others.first() {
                problems.push(FieldProblem::at(
                    path,
                    format!(
                        "Invalid value: {t:?}: the other pods of group {g:?} say {other:?}; every pod of a group must carry the same total count"
                    ),
                ));
            }
        }
        (None, None) => {}
    }
    if let Some(old) = req.old_object.as_ref().filter(|_| req.is_update()) {
        let old_meta = metadata_of(old);
        if let Some(old_group) = label(&old_meta, labels::POD_GROUP_NAME)
            && group != Some(old_group)
        {
            problems.push(immutable(
                &label_path(labels::POD_GROUP_NAME),
                group.unwrap_or_default(),
            ));
        }
    }
    verdict("Pod", "", req, problems)
}
