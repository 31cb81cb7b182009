//! Kueue's Job integration: the Workload Kueue's job controller makes for a `batch/v1` Job
//! (`pkg/controller/jobs/job`, `pkg/controller/jobframework`).
//!
//! A Job is queued when it carries the `kueue.x-k8s.io/queue-name` label, or when its namespace
//! has a LocalQueue named `default` (Kueue's `LocalQueueDefaulting`); any other Job is not
//! Kueue's to manage and is skipped (logged at `info`). The Workload is `job-<name>` in the Job's
//! namespace with one podSet `main` of `min(parallelism, completions)` pods (parallelism
//! defaults to 1), the Job's pod template, its annotations and creation time.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::Origin;
use super::catalog::{Catalog, DEFAULT_LOCAL_QUEUE, DEFAULT_PRIORITY_CLASS};
use super::provenance::Provenance;
use super::strict::FieldProblem;
use super::types::{
    GROUP, PodSet, PriorityClassRef, WORKLOAD_PRIORITY_CLASS_KIND, Workload, WorkloadSpec,
    default_pod_set_name, labels,
};

/// Job annotation: the fewest pods the Job may run with (partial admission → `minCount`).
pub const JOB_MIN_PARALLELISM: &str = "kueue.x-k8s.io/job-min-parallelism";
/// Job/Pod label: `spec.maximumExecutionTimeSeconds` of the Workload.
pub const MAX_EXEC_TIME_SECONDS: &str = "kueue.x-k8s.io/max-exec-time-seconds";

/// The Workload for `job`, or `None` if Kueue would not manage it.
pub fn workload_for_job(
    job: &Job,
    catalog: &Catalog,
) -> Result<Option<Workload>, Vec<FieldProblem>> {
    let meta = &job.metadata;
    let name = meta.name.clone().unwrap_or_default();
    let namespace = meta.namespace.clone().unwrap_or_else(|| "default".into());
    let Some(queue_name) = queue_name(meta, catalog) else {
        tracing::info!(job = %format!("{namespace}/{name}"), "skipping Job without a {} label", labels::QUEUE_NAME);
        return Ok(None);
    };
    let mut problems = Vec::new();
    let Some(spec) = &job.spec else {
        return Err(vec![FieldProblem::object("a Job needs spec.template")]);
    };
    let parallelism = spec.parallelism.unwrap_or(1);
    if parallelism < 0 {
        problems.push(FieldProblem::at(
            "spec.parallelism",
            "must be greater than or equal to 0",
        ));
    }
    let count = match spec.completions {
        Some(c) if c < parallelism => c,
        _ => parallelism,
    };
    let min_count = match annotation(meta, JOB_MIN_PARALLELISM) {
        None => None,
        Some(v) => match v.trim().parse::<i32>() {
            Ok(m) if m > 0 && m < count => Some(m),
            _ => {
                problems.push(FieldProblem::at(
                    annotation_path(JOB_MIN_PARALLELISM),
                    format!(
                        "{v:?} must be an integer between 1 and {} (the Job's pod count minus one)",
                        count - 1
                    ),
                ));
                None
            }
        },
    };
    let (priority_class_ref, priority) = priority(meta, catalog).unwrap_or_else(|p| {
        problems.push(p);
        (None, None)
    });
    let maximum_execution_time_seconds = max_exec_time(meta).unwrap_or_else(|p| {
        problems.push(p);
        None
    });
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Some(Workload {
        metadata: ObjectMeta {
            name: Some(format!("job-{name}")),
            namespace: Some(namespace),
            annotations: meta.annotations.clone(),
            creation_timestamp: meta.creation_timestamp.clone(),
            owner_references: Some(vec![OwnerReference {
                api_version: "batch/v1".into(),
                kind: "Job".into(),
                name,
                uid: meta.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: WorkloadSpec {
            pod_sets: vec![PodSet {
                name: default_pod_set_name(),
                count,
                min_count,
                template: spec.template.clone(),
                topology_request: None,
            }],
            queue_name: Some(queue_name),
            priority,
            priority_class_ref,
            active: None,
            maximum_execution_time_seconds,
            preemption_gates: Vec::new(),
        },
        status: None,
    }))
}

/// Routes from the Workload made by [`workload_for_job`] back to the Job's fields.
pub fn job_provenance(origin: &Origin, job_object: String) -> Provenance {
    let mut p = Provenance::written(origin.clone(), job_object);
    p.route("spec.podSets[0].template", "spec.template");
    p.route("spec.podSets[0].count", "spec.parallelism");
    p.route(
        "spec.podSets[0].minCount",
        &annotation_path(JOB_MIN_PARALLELISM),
    );
    add_label_routes(&mut p);
    p
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::strict::decode;

    fn job(yaml: serde_json::Value) -> Job {
        decode(&yaml).unwrap()
    }

    #[test]
    fn labelled_job_becomes_a_workload() {
        let j = job(serde_json::json!({
            "metadata": {"name": "pi", "namespace": "ns",
                "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
                "annotations": {"kueue.x-k8s.io/job-min-parallelism": "2", "sim.wasq.dev/runtime": "5m"}},
            "spec": {"parallelism": 4, "completions": 10,
                "template": {"spec": {"containers": [{"name": "c"}]}}}
        }));
        let wl = workload_for_job(&j, &Catalog::default()).unwrap().unwrap();
        assert_eq!(wl.metadata.name.as_deref(), Some("job-pi"));
        assert_eq!(wl.spec.queue_name.as_deref(), Some("user-queue"));
        assert_eq!(wl.spec.pod_sets[0].count, 4);
        assert_eq!(wl.spec.pod_sets[0].min_count, Some(2));
        assert_eq!(wl.spec.priority, Some(0));
        assert_eq!(
            wl.metadata.annotations.unwrap()["sim.wasq.dev/runtime"],
            "5m"
        );
    }

    #[test]
    fn completions_below_parallelism_cap_the_count() {
        let j = job(serde_json::json!({
            "metadata": {"name": "x", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
            "spec": {"parallelism": 5, "completions": 2, "template": {}}
        }));
        let wl = workload_for_job(&j, &Catalog::default()).unwrap().unwrap();
        assert_eq!(wl.spec.pod_sets[0].count, 2);
    }

    #[test]
    fn unlabelled_job_is_skipped_unless_a_default_queue_exists() {
        let j = job(
            serde_json::json!({"metadata": {"name": "x", "namespace": "ns"}, "spec": {"template": {}}}),
        );
        assert_eq!(workload_for_job(&j, &Catalog::default()).unwrap(), None);
        let mut catalog = Catalog::default();
        catalog.namespaces_with_default_queue.insert("ns".into());
        let wl = workload_for_job(&j, &catalog).unwrap().unwrap();
        assert_eq!(wl.spec.queue_name.as_deref(), Some("default"));
    }

    #[test]
    fn priority_class_label_resolves_or_fails() {
        let j = job(serde_json::json!({
            "metadata": {"name": "x", "labels": {"kueue.x-k8s.io/queue-name": "q", "kueue.x-k8s.io/priority-class": "high"}},
            "spec": {"template": {}}
        }));
        let err = workload_for_job(&j, &Catalog::default()).unwrap_err();
        assert_eq!(
            err,
            [FieldProblem::at(
                "metadata.labels.kueue.x-k8s.io/priority-class",
                r#"WorkloadPriorityClass "high" not found"#
            )]
        );
        let mut catalog = Catalog::default();
        catalog.priority_classes.insert("high".into(), 100);
        let wl = workload_for_job(&j, &catalog).unwrap().unwrap();
        assert_eq!(wl.spec.priority, Some(100));
        assert_eq!(wl.spec.priority_class_ref.unwrap().name, "high");
    }
}
