//! The Workloads Kueue's job reconciler makes for a job object of any configured kind: one per
//! job (or one per group for kinds with `groups`), named as Kueue names them, owned by the job,
//! with its queue, priority, maximum execution time, podSets and annotations.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde_json::Value;

use super::kind::JobKind;
use super::names;
use super::podsets::JobPodSet;
use super::{add_label_routes, max_exec_time, priority, queue_name};
use crate::api::Origin;
use crate::api::catalog::Catalog;
use crate::api::defaults::default_workload;
use crate::api::provenance::Provenance;
use crate::api::strict::FieldProblem;
use crate::api::types::{PodSet, Workload, WorkloadSpec};

/// Workload label naming the UID of the job that owns it (Kueue's `kueue.x-k8s.io/job-uid`).
pub const JOB_UID_LABEL: &str = "kueue.x-k8s.io/job-uid";
/// Annotation kubectl keeps on applied objects; not carried over to Workloads.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

impl JobKind {
    /// The name of the job's Workload (`group`: the group index, for kinds with `groups`).
    pub fn workload_name(&self, job_name: &str, job_uid: &str, group: Option<i32>) -> String {
        let prefix = self
            .spec
            .workload_prefix
            .clone()
            .unwrap_or_else(|| self.spec.kind.to_lowercase());
        let owner = match group {
            Some(i) => format!("{job_name}-{i}"),
            None => job_name.to_string(),
        };
        // Kinds without a suspend flag are admitted as pod groups, whose name is a label.
        let max = if self.has_suspend() {
            names::MAX_NAME_LENGTH
        } else {
            names::LABEL_NAME_LENGTH
        };
        names::workload_name_within(max, &prefix, &self.spec.kind, &self.group, &owner, job_uid)
    }

    /// Whether an object with this metadata is controlled by a job of one of `kinds`: Kueue
    /// leaves such children (a RayJob's RayCluster, a JobSet's Jobs) to their parent's Workload.
    pub fn controlled_by_any(meta: &ObjectMeta, kinds: &[JobKind]) -> bool {
        meta.owner_references
            .iter()
            .flatten()
            .filter(|o| o.controller == Some(true))
            .any(|o| {
                kinds
                    .iter()
                    .any(|k| k.spec.api_version == o.api_version && k.spec.kind == o.kind)
            })
    }

    /// The Workloads Kueue's job reconciler would create for the job `value` (whose metadata
    /// is `meta`): none when the job is not queued (no queue-name label and no `default`
    /// LocalQueue in its namespace), one per group for kinds with `groups`, else one. Every
    /// problem is reported, each at the job's field.
    pub fn workloads(
        &self,
        meta: &ObjectMeta,
        value: &Value,
        catalog: &Catalog,
    ) -> Result<Vec<Workload>, Vec<FieldProblem>> {
        let Some(queue) = queue_name(meta, catalog) else {
            return Ok(Vec::new());
        };
        let mut problems = Vec::new();
        let pod_sets = self.pod_sets(value).unwrap_or_else(|p| {
            problems.extend(p);
            Vec::new()
        });
        for ps in &pod_sets {
            if let Some(annotations) = &ps
                .template
                .metadata
                .as_ref()
                .and_then(|m| m.annotations.clone())
            {
                let path = format!("{}.metadata.annotations", super::kind::field_path(&ps.path));
                problems.extend(crate::api::topology::validate_annotations(
                    annotations,
                    &path,
                ));
            }
        }
        let groups = self.group_count(value).unwrap_or_else(|p| {
            problems.push(p);
            0
        });
        let (priority_class_ref, priority) = priority(meta, catalog).unwrap_or_else(|p| {
            problems.push(p);
            (None, None)
        });
        let max_exec = max_exec_time(meta).unwrap_or_else(|p| {
            problems.push(p);
            None
        });
        if !problems.is_empty() {
            return Err(problems);
        }
        let name = meta.name.clone().unwrap_or_default();
        let uid = meta.uid.clone().unwrap_or_default();
        let annotations = meta.annotations.clone().map(|mut a| {
            a.remove(LAST_APPLIED);
            a
        });
        let indices: Vec<Option<i32>> = match self.spec.groups {
            None => vec![None],
            Some(_) => (0..groups).map(Some).collect(),
        };
        let mut out = Vec::with_capacity(indices.len());
        for group in indices {
            let mut wl = Workload {
                metadata: ObjectMeta {
                    name: Some(self.workload_name(&name, &uid, group)),
                    namespace: meta.namespace.clone(),
                    labels: Some(BTreeMap::from([(JOB_UID_LABEL.to_string(), uid.clone())])),
                    annotations: annotations.clone(),
                    creation_timestamp: meta.creation_timestamp.clone(),
                    owner_references: Some(vec![OwnerReference {
                        api_version: self.spec.api_version.clone(),
                        kind: self.spec.kind.clone(),
                        name: name.clone(),
                        uid: uid.clone(),
                        controller: Some(true),
                        block_owner_deletion: Some(true),
                    }]),
                    ..ObjectMeta::default()
                },
                spec: WorkloadSpec {
                    pod_sets: pod_sets.iter().map(to_pod_set).collect(),
                    queue_name: Some(queue.clone()),
                    priority,
                    priority_class_ref: priority_class_ref.clone(),
                    maximum_execution_time_seconds: max_exec,
                    ..WorkloadSpec::default()
                },
                status: None,
            };
            default_workload(&mut wl, catalog);
            out.push(wl);
        }
        Ok(out)
    }

    /// Routes from a Workload made by [`JobKind::workloads`] back to the job's fields, so
    /// that a problem found in the Workload names the field the user wrote.
    pub fn provenance(&self, origin: &Origin, job_object: String, value: &Value) -> Provenance {
        let mut p = Provenance::written(origin.clone(), job_object);
        for (i, ps) in self.pod_sets(value).unwrap_or_default().iter().enumerate() {
            p.route(
                &format!("spec.podSets[{i}].template"),
                &super::kind::field_path(&ps.path),
            );
            if let Some(field) = &ps.count_field {
                p.route(&format!("spec.podSets[{i}].count"), field);
            }
            if ps.min_count.is_some() {
                let key = self
                    .spec
                    .pod_sets
                    .iter()
                    .find_map(|s| s.min_count_annotation.as_deref())
                    .unwrap_or_default();
                p.route(
                    &format!("spec.podSets[{i}].minCount"),
                    &super::annotation_path(key),
                );
            }
        }
        add_label_routes(&mut p);
        p
    }
}

fn to_pod_set(p: &JobPodSet) -> PodSet {
    PodSet {
        name: p.name.clone(),
        count: p.count,
        min_count: p.min_count,
        template: std::sync::Arc::new(p.template.clone()),
        topology_request: topology_request(p),
    }
}

/// Kueue's `NewPodSetTopologyRequest(...).PodIndexLabel(...).SubGroup(...).Build()`: the
/// request the template's annotations make, with the kind's pod index label and sub-group; a
/// kind with a pod index label gets a request even without annotations (it asks for no
/// topology: `requests_tas` is false).
fn topology_request(p: &JobPodSet) -> Option<crate::api::topology::PodSetTopologyRequest> {
    let from_annotations = p
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.annotations.as_ref())
        .and_then(crate::api::topology::request_from_annotations);
    if from_annotations.is_none() && p.pod_index_label.is_none() && p.sub_group.is_none() {
        return None;
    }
    let mut request = from_annotations.unwrap_or_default();
    request.pod_index_label = p.pod_index_label.clone();
    if let Some((label, count)) = &p.sub_group {
        request.sub_group_index_label = Some(label.clone());
        request.sub_group_count = Some(*count);
    }
    Some(request)
}

#[cfg(test)]
mod tests {
    use super::super::kind::builtin;
    use super::*;
    use crate::api::strict::decode;
    use serde_json::json;

    fn kind(k: &str) -> JobKind {
        builtin().into_iter().find(|j| j.spec.kind == k).unwrap()
    }

    fn make(k: &str, job: Value, catalog: &Catalog) -> Result<Vec<Workload>, Vec<FieldProblem>> {
        let meta: ObjectMeta = decode(&job["metadata"]).unwrap();
        kind(k).workloads(&meta, &job, catalog)
    }

    #[test]
    fn labelled_job_becomes_a_workload_named_as_kueue_names_it() {
        let job = json!({
            "metadata": {"name": "pi", "namespace": "ns", "uid": "uid-pi",
                "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
                "annotations": {"kueue.x-k8s.io/job-min-parallelism": "2", "sim.wasq.dev/duration": "5m"}},
            "spec": {"parallelism": 4, "completions": 10,
                "template": {"spec": {"containers": [{"name": "c"}]}}}
        });
        let wls = make("Job", job, &Catalog::default()).unwrap();
        let wl = &wls[0];
        // sha1("Job\nbatch\npi\nuid-pi") begins 2b317.
        assert_eq!(wl.metadata.name.as_deref(), Some("job-pi-2b317"));
        assert_eq!(wl.spec.queue_name.as_deref(), Some("user-queue"));
        assert_eq!(
            (wl.spec.pod_sets[0].count, wl.spec.pod_sets[0].min_count),
            (4, Some(2))
        );
        assert_eq!(wl.spec.priority, Some(0));
        assert_eq!(
            wl.metadata.annotations.as_ref().unwrap()["sim.wasq.dev/duration"],
            "5m"
        );
        assert_eq!(
            wl.metadata.owner_references.as_ref().unwrap()[0].kind,
            "Job"
        );
    }

    #[test]
    fn unlabelled_job_is_skipped_unless_a_default_queue_exists() {
        let job = json!({"metadata": {"name": "x", "namespace": "ns"}, "spec": {"template": {}}});
        assert_eq!(make("Job", job.clone(), &Catalog::default()), Ok(vec![]));
        let mut catalog = Catalog::default();
        catalog.namespaces_with_default_queue.insert("ns".into());
        let wls = make("Job", job, &catalog).unwrap();
        assert_eq!(wls[0].spec.queue_name.as_deref(), Some("default"));
    }

    #[test]
    fn priority_class_label_resolves_or_fails() {
        let job = json!({
            "metadata": {"name": "x", "labels": {"kueue.x-k8s.io/queue-name": "q", "kueue.x-k8s.io/priority-class": "high"}},
            "spec": {"template": {}}
        });
        let err = make("Job", job.clone(), &Catalog::default()).unwrap_err();
        assert_eq!(
            err,
            [FieldProblem::at(
                "metadata.labels.kueue.x-k8s.io/priority-class",
                r#"WorkloadPriorityClass "high" not found"#
            )]
        );
        let mut catalog = Catalog::default();
        catalog.priority_classes.insert("high".into(), 100);
        let wls = make("Job", job, &catalog).unwrap();
        assert_eq!(wls[0].spec.priority, Some(100));
        assert_eq!(
            wls[0].spec.priority_class_ref.as_ref().unwrap().name,
            "high"
        );
    }

    #[test]
    fn a_leader_worker_set_makes_one_workload_per_group() {
        let t = json!({"spec": {"containers": [{"name": "c"}]}});
        let lws = json!({
            "metadata": {"name": "llm", "namespace": "ns", "uid": "u",
                "labels": {"kueue.x-k8s.io/queue-name": "q"}},
            "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 3, "leaderTemplate": t, "workerTemplate": t}}
        });
        let wls = make("LeaderWorkerSet", lws, &Catalog::default()).unwrap();
        let names: Vec<String> = wls
            .iter()
            .map(|w| w.metadata.name.clone().unwrap())
            .collect();
        let k = kind("LeaderWorkerSet");
        assert_eq!(
            names,
            [
                k.workload_name("llm", "u", Some(0)),
                k.workload_name("llm", "u", Some(1))
            ]
        );
        assert!(names[0].starts_with("leaderworkerset-llm-0-"));
        assert_ne!(names[0], names[1]);
        let sets: Vec<(String, i32)> = wls[1]
            .spec
            .pod_sets
            .iter()
            .map(|p| (p.name.clone(), p.count))
            .collect();
        assert_eq!(sets, [("leader".to_string(), 1), ("worker".to_string(), 2)]);
    }
}
