//! The podSets of a job object, read through its kind's configuration: names, templates (read
//! strictly, so a typo in a template is an error naming its field), pod counts and `minCount`.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde_json::Value;

use super::kind::{CountFactor, JobKind, field_path};
use crate::api::strict::{FieldProblem, decode};
use crate::api::types::default_pod_set_name;

/// A podSet found in a job object.
#[derive(Debug, Clone, PartialEq)]
pub struct JobPodSet {
    pub name: String,
    /// JSON pointer to the template inside the job.
    pub path: String,
    pub template: PodTemplateSpec,
    pub count: i32,
    /// The fewest pods it may run with (partial admission), when the kind allows it.
    pub min_count: Option<i32>,
    /// The field the count was read from (for errors about the count).
    pub count_field: Option<String>,
    /// JSON pointer to that field, when the kind admits partially (`minCountAnnotation`): the
    /// admitted count is written there when the job starts, the full count back when it stops.
    pub partial_count_pointer: Option<String>,
    /// Kueue's `podIndexLabel` and sub-group (label, count) for rank-ordered placement.
    pub pod_index_label: Option<String>,
    pub sub_group: Option<(String, i32)>,
}

impl JobKind {
    /// How many Workloads a job makes (1 unless the kind has `groups`).
    pub fn group_count(&self, job: &Value) -> Result<i32, FieldProblem> {
        match &self.spec.groups {
            None => Ok(1),
            Some(g) => factor(job, g).and_then(|n| {
                i32::try_from(n).map_err(|_| FieldProblem::at(field_path(&g.field), "is too large"))
            }),
        }
    }

    /// The podSets of a job object, in configuration order. Every problem is reported, each
    /// at its field.
    pub fn pod_sets(&self, job: &Value) -> Result<Vec<JobPodSet>, Vec<FieldProblem>> {
        let mut out = Vec::new();
        let mut problems = Vec::new();
        let present: Vec<bool> = self
            .spec
            .pod_sets
            .iter()
            .map(|src| !src.optional || job.pointer(&src.template).is_some())
            .collect();
        let alone = present.iter().filter(|p| **p).count() == 1;
        for (src, present) in self.spec.pod_sets.iter().zip(present) {
            if !present {
                continue;
            }
            let elements: Vec<(String, &Value)> = match &src.each {
                None => vec![(String::new(), job)],
                Some(each) => match job.pointer(each) {
                    Some(Value::Array(items)) => items
                        .iter()
                        .enumerate()
                        .map(|(i, v)| (format!("{each}/{i}"), v))
                        .collect(),
                    _ => {
                        problems.push(FieldProblem::at(
                            field_path(each),
                            "required: a list of at least one element",
                        ));
                        continue;
                    }
                },
            };
            for (base, element) in elements {
                let name = match (&src.name_from, &src.name, &src.name_when_alone) {
                    (Some(from), _, _) => match element.pointer(from).and_then(Value::as_str) {
                        Some(n) => n.to_lowercase(),
                        None => {
                            problems.push(FieldProblem::at(
                                field_path(&format!("{base}{from}")),
                                "required: names the podSet",
                            ));
                            continue;
                        }
                    },
                    (None, _, Some(n)) if alone => n.clone(),
                    (None, Some(n), _) => n.clone(),
                    (None, None, _) => default_pod_set_name(),
                };
                let path = format!("{base}{}", src.template);
                let template = match element.pointer(&src.template) {
                    None => {
                        problems.push(FieldProblem::at(
                            field_path(&path),
                            "required: the pod template",
                        ));
                        None
                    }
                    Some(raw) => match decode::<PodTemplateSpec>(raw) {
                        Ok(t) => Some(t),
                        Err(found) => {
                            let prefix = field_path(&path);
                            problems.extend(found.into_iter().map(|p| FieldProblem {
                                field: Some(match p.field {
                                    Some(f) => format!("{prefix}.{f}"),
                                    None => prefix.clone(),
                                }),
                                message: p.message,
                            }));
                            None
                        }
                    },
                };
                let mut count: i64 = 1;
                for f in &src.count {
                    match factor(element, f) {
                        Ok(n) => count = count.saturating_mul(n),
                        Err(mut p) => {
                            p.field = p.field.map(|f| join(&base, &f));
                            problems.push(p);
                        }
                    }
                }
                let Some(template) = template else {
                    continue;
                };
                let count = i32::try_from(count).unwrap_or(i32::MAX);
                let min_count = match min_count(job, src.min_count_annotation.as_deref(), count) {
                    Ok(m) => m,
                    Err(p) => {
                        problems.push(p);
                        None
                    }
                };
                out.push(JobPodSet {
                    name,
                    path,
                    template,
                    count,
                    min_count,
                    count_field: src
                        .count
                        .first()
                        .map(|f| join(&base, &field_path(&f.field))),
                    partial_count_pointer: src
                        .min_count_annotation
                        .as_ref()
                        .and(src.count.first())
                        .map(|f| format!("{base}{}", f.field)),
                    pod_index_label: src.pod_index_label.clone(),
                    sub_group: src.sub_group.as_ref().map(|g| {
                        let n = element
                            .pointer(&g.count)
                            .and_then(Value::as_i64)
                            .unwrap_or(1);
                        (g.index_label.clone(), i32::try_from(n).unwrap_or(i32::MAX))
                    }),
                });
            }
        }
        if out.is_empty() && problems.is_empty() {
            let templates: Vec<String> = self
                .spec
                .pod_sets
                .iter()
                .map(|s| field_path(&s.template))
                .collect();
            problems.push(FieldProblem::object(format!(
                "no pods: set at least one of {}",
                templates.join(", ")
            )));
        }
        if problems.is_empty() {
            Ok(out)
        } else {
            Err(problems)
        }
    }
}

/// `field` inside the element at pointer `base` (both as field paths).
fn join(base: &str, field: &str) -> String {
    if base.is_empty() {
        field.to_string()
    } else {
        format!("{}.{field}", field_path(base))
    }
}

/// One count factor's value: the field (an integer ≥ 0) or its default, capped by `atMost`,
/// one less with `lessOneIf`.
fn factor(element: &Value, f: &CountFactor) -> Result<i64, FieldProblem> {
    let mut n = match element.pointer(&f.field) {
        None | Some(Value::Null) if f.required => {
            return Err(FieldProblem::at(
                field_path(&f.field),
                "required: the number of pods",
            ));
        }
        None | Some(Value::Null) => f.default,
        Some(v) => match v.as_i64() {
            Some(n) if n >= 0 => n,
            Some(_) => {
                return Err(FieldProblem::at(
                    field_path(&f.field),
                    "must be greater than or equal to 0",
                ));
            }
            None => {
                return Err(FieldProblem::at(
                    field_path(&f.field),
                    format!("must be an integer, not {v}"),
                ));
            }
        },
    };
    if let Some(cap) = f
        .at_most
        .as_ref()
        .and_then(|p| element.pointer(p))
        .and_then(Value::as_i64)
    {
        n = n.min(cap.max(0));
    }
    if f.less_one_if
        .as_ref()
        .is_some_and(|p| element.pointer(p).is_some_and(|v| !v.is_null()))
    {
        if n < 1 {
            return Err(FieldProblem::at(
                field_path(&f.field),
                "must be at least 1 (it counts the leader)",
            ));
        }
        n -= 1;
    }
    Ok(n)
}

/// The podSet's `minCount` from the kind's annotation: an integer between 1 and count − 1.
fn min_count(
    job: &Value,
    annotation: Option<&str>,
    count: i32,
) -> Result<Option<i32>, FieldProblem> {
    let Some(key) = annotation else {
        return Ok(None);
    };
    let Some(v) = job
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
    else {
        return Ok(None);
    };
    match v.trim().parse::<i32>() {
        Ok(m) if m > 0 && m < count => Ok(Some(m)),
        _ => Err(FieldProblem::at(
            format!("metadata.annotations.{key}"),
            format!(
                "{v:?} must be an integer between 1 and {} (the pod count minus one)",
                count - 1
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::kind::builtin;
    use super::*;
    use serde_json::json;

    fn kind(k: &str) -> JobKind {
        builtin().into_iter().find(|j| j.spec.kind == k).unwrap()
    }

    fn names_counts(k: &str, job: &Value) -> Vec<(String, i32)> {
        kind(k)
            .pod_sets(job)
            .unwrap()
            .into_iter()
            .map(|p| (p.name, p.count))
            .collect()
    }

    fn pairs(v: &[(&str, i32)]) -> Vec<(String, i32)> {
        v.iter().map(|(n, c)| (n.to_string(), *c)).collect()
    }

    #[test]
    fn job_count_is_parallelism_capped_by_completions() {
        let job = json!({"spec": {"parallelism": 4, "completions": 3, "template": {"spec": {"containers": []}}}});
        let ps = kind("Job").pod_sets(&job).unwrap();
        assert_eq!(
            (ps[0].name.as_str(), ps[0].path.as_str(), ps[0].count),
            ("main", "/spec/template", 3)
        );
    }

    #[test]
    fn jobset_has_one_pod_set_per_replicated_job() {
        let js = json!({"spec": {"replicatedJobs": [
            {"name": "Driver", "replicas": 1, "template": {"spec": {"template": {"spec": {"containers": []}}}}},
            {"name": "workers", "replicas": 2, "template": {"spec": {"parallelism": 4, "completions": 4, "template": {"spec": {"containers": []}}}}}
        ]}});
        let ps = kind("JobSet").pod_sets(&js).unwrap();
        let got: Vec<(&str, &str, i32)> = ps
            .iter()
            .map(|p| (p.name.as_str(), p.path.as_str(), p.count))
            .collect();
        assert_eq!(
            got,
            [
                ("driver", "/spec/replicatedJobs/0/template/spec/template", 1),
                (
                    "workers",
                    "/spec/replicatedJobs/1/template/spec/template",
                    8
                )
            ]
        );
    }

    #[test]
    fn kubeflow_jobs_have_a_pod_set_per_replica_type_present_in_kueues_order() {
        let t = json!({"spec": {"containers": [{"name": "c"}]}});
        let pytorch = json!({"spec": {"pytorchReplicaSpecs": {
            "Worker": {"replicas": 3, "template": t}, "Master": {"template": t}}}});
        assert_eq!(
            names_counts("PyTorchJob", &pytorch),
            pairs(&[("master", 1), ("worker", 3)])
        );
        let tf = json!({"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2, "template": t}, "PS": {"replicas": 1, "template": t}}}});
        assert_eq!(
            names_counts("TFJob", &tf),
            pairs(&[("ps", 1), ("worker", 2)])
        );
        let mpi = json!({"spec": {"mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": t}, "Worker": {"replicas": 4, "template": t}}}});
        assert_eq!(
            names_counts("MPIJob", &mpi),
            pairs(&[("launcher", 1), ("worker", 4)])
        );
    }

    #[test]
    fn a_leader_worker_set_group_is_a_leader_and_size_minus_one_workers() {
        let t = json!({"spec": {"containers": [{"name": "c"}]}});
        let lws = json!({"spec": {"replicas": 3, "leaderWorkerTemplate": {"size": 4, "leaderTemplate": t, "workerTemplate": t}}});
        assert_eq!(
            names_counts("LeaderWorkerSet", &lws),
            pairs(&[("leader", 1), ("worker", 3)])
        );
        assert_eq!(kind("LeaderWorkerSet").group_count(&lws), Ok(3));
        let no_leader = json!({"spec": {"leaderWorkerTemplate": {"size": 4, "workerTemplate": t}}});
        assert_eq!(
            names_counts("LeaderWorkerSet", &no_leader),
            pairs(&[("main", 4)])
        );
        assert_eq!(kind("LeaderWorkerSet").group_count(&no_leader), Ok(1));
    }

    #[test]
    fn problems_name_their_fields() {
        let bad = json!({"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": -1,
            "template": {"spec": {"containers": [{"name": "c", "resourcez": {}}]}}}}}});
        let err = kind("PyTorchJob").pod_sets(&bad).unwrap_err();
        let fields: Vec<Option<&str>> = err.iter().map(|p| p.field.as_deref()).collect();
        assert_eq!(
            fields,
            [
                Some("spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].resourcez"),
                Some("spec.pytorchReplicaSpecs.Worker.replicas")
            ]
        );
        let empty = kind("PyTorchJob")
            .pod_sets(&json!({"spec": {}}))
            .unwrap_err();
        assert_eq!(
            empty,
            [FieldProblem::object(
                "no pods: set at least one of spec.pytorchReplicaSpecs.Master.template, spec.pytorchReplicaSpecs.Worker.template"
            )]
        );
        let rayjob = json!({"spec": {"rayClusterSpec": {"workerGroupSpecs": [{"template": {}}]}}});
        let err = kind("RayJob").pod_sets(&rayjob).unwrap_err();
        assert_eq!(
            err,
            [
                FieldProblem::at(
                    "spec.rayClusterSpec.headGroupSpec.template",
                    "required: the pod template"
                ),
                FieldProblem::at(
                    "spec.rayClusterSpec.workerGroupSpecs[0].groupName",
                    "required: names the podSet"
                )
            ]
        );
    }
}
