//! How a job of any kind becomes Workloads, written once for both drivers: the simulator's
//! manifest loader and the controller's job reconciler (Kueue's `pkg/controller/jobframework`
//! and `pkg/controller/jobs/*`).
//!
//! A job kind is configuration ([`kind`], the built-in kinds in `integrations.yaml`): JSON
//! pointers to its suspend flag, pod templates and counts. A job is queued when it carries the
//! `kueue.x-k8s.io/queue-name` label, or when its namespace has a LocalQueue named `default`
//! (Kueue's `LocalQueueDefaulting`); any other job is not Kueue's to manage. Its Workloads
//! ([`workload`]) are named as Kueue names them ([`names`]); [`patch`] starts and stops it.

pub mod attribution;
pub mod kind;
pub mod multikueue;
pub mod names;
pub mod patch;
pub mod podsets;
pub mod workload;

pub use kind::{JobKind, JobKindSpec, KindError, builtin, builtin_kind, field_path, parse};
pub use patch::{
    AdmittedPodSet, FlavorPlacement, add_ops, inject_ops, problems_text, restore_template_ops,
};
pub use podsets::JobPodSet;
pub use workload::JOB_UID_LABEL;

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::catalog::{Catalog, DEFAULT_LOCAL_QUEUE, DEFAULT_PRIORITY_CLASS};
use super::provenance::Provenance;
use super::strict::FieldProblem;
use super::types::{GROUP, PriorityClassRef, WORKLOAD_PRIORITY_CLASS_KIND, labels};

/// Job/Pod label: `spec.maximumExecutionTimeSeconds` of the Workload.
pub const MAX_EXEC_TIME_SECONDS: &str = "kueue.x-k8s.io/max-exec-time-seconds";

/// Routes shared by every job kind: the Workload fields that come from labels.
pub(crate) fn add_label_routes(p: &mut Provenance) {
    p.route("spec.queueName", &label_path(labels::QUEUE_NAME));
    p.route("spec.priorityClassRef", &label_path(labels::PRIORITY_CLASS));
    p.route("spec.priority", &label_path(labels::PRIORITY_CLASS));
    p.route(
        "spec.maximumExecutionTimeSeconds",
        &label_path(MAX_EXEC_TIME_SECONDS),
    );
}

/// The queue label, or `default` when the namespace has a LocalQueue of that name.
pub(crate) fn queue_name(meta: &ObjectMeta, catalog: &Catalog) -> Option<String> {
    match label(meta, labels::QUEUE_NAME) {
        Some(q) if !q.is_empty() => Some(q.to_string()),
        _ => {
            let namespace = meta.namespace.as_deref().unwrap_or("default");
            catalog
                .has_default_queue(namespace)
                .then(|| DEFAULT_LOCAL_QUEUE.to_string())
        }
    }
}

/// Kueue's `ExtractPriority`: the `kueue.x-k8s.io/priority-class` label's WorkloadPriorityClass,
/// else the class named `default` if it exists, else priority 0 (wasq reads no pod
/// PriorityClasses).
pub(crate) fn priority(
    meta: &ObjectMeta,
    catalog: &Catalog,
) -> Result<(Option<PriorityClassRef>, Option<i32>), FieldProblem> {
    let class = match label(meta, labels::PRIORITY_CLASS) {
        Some(c) if !c.is_empty() => c,
        _ if catalog.has_default_priority_class() => DEFAULT_PRIORITY_CLASS,
        _ => return Ok((None, Some(0))),
    };
    let value = catalog.priority_of(class).ok_or_else(|| {
        FieldProblem::at(
            label_path(labels::PRIORITY_CLASS),
            format!("WorkloadPriorityClass {class:?} not found"),
        )
    })?;
    Ok((
        Some(PriorityClassRef {
            group: GROUP.into(),
            kind: WORKLOAD_PRIORITY_CLASS_KIND.into(),
            name: class.into(),
        }),
        Some(value),
    ))
}

/// The `kueue.x-k8s.io/max-exec-time-seconds` label, which must be a positive integer.
pub(crate) fn max_exec_time(meta: &ObjectMeta) -> Result<Option<i32>, FieldProblem> {
    match label(meta, MAX_EXEC_TIME_SECONDS) {
        None => Ok(None),
        Some(v) => match v.trim().parse::<i32>() {
            Ok(s) if s > 0 => Ok(Some(s)),
            _ => Err(FieldProblem::at(
                label_path(MAX_EXEC_TIME_SECONDS),
                format!("{v:?} must be a positive integer"),
            )),
        },
    }
}

pub(crate) fn label<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    map_get(meta.labels.as_ref(), key)
}

pub(crate) fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    map_get(meta.annotations.as_ref(), key)
}

fn map_get<'a>(map: Option<&'a BTreeMap<String, String>>, key: &str) -> Option<&'a str> {
    map.and_then(|m| m.get(key)).map(String::as_str)
}

pub(crate) fn label_path(key: &str) -> String {
    format!("metadata.labels.{key}")
}

pub(crate) fn annotation_path(key: &str) -> String {
    format!("metadata.annotations.{key}")
}
