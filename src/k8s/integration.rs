//! Job integrations through one generic mechanism. A job kind is described by JSON pointers:
//! where its suspend flag is, where its pod templates are and how many pods each runs, what
//! "still running" and "finished" look like. A new CRD needs configuration, not code; the
//! built-in kinds (`batch/v1` Job, `ray.io/v1` RayJob and RayCluster, `jobset.x-k8s.io` JobSet)
//! are themselves such configuration (`integrations.yaml`).
//!
//! Kueue's job reconciler, generically: a queued job gets a Workload it owns; the job is held
//! suspended until the Workload is admitted; on admission each podSet's template receives the
//! assigned flavors' node labels (nodeSelector) and tolerations and the job is unsuspended; on
//! eviction it is suspended again and the templates are restored from the Workload's podSets.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PodTemplateSpec, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::core::{ApiResource, DynamicObject};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Error;
use crate::api::catalog::Catalog;
use crate::api::{self, PodSet, Workload, WorkloadSpec};

/// Workload label naming the UID of the job that owns it (Kueue's `kueue.x-k8s.io/job-uid`).
pub const JOB_UID_LABEL: &str = "kueue.x-k8s.io/job-uid";

/// One job kind, as configured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobKindSpec {
    pub api_version: String,
    pub kind: String,
    pub plural: String,
    /// The Workload is `<prefix>-<job name>`; default: the kind in lower case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_prefix: Option<String>,
    /// Pointer to the boolean suspend flag.
    pub suspend: String,
    pub pod_sets: Vec<PodSetSource>,
    /// Pointers (`*` matches every array element) to counts of still-running pods; a suspended
    /// job with none of them above zero is inactive. Empty: suspended means inactive.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub active: Vec<String>,
    /// Status fields to clear once suspended, before templates may change (Job `startTime`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clear_on_stop: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finished: Vec<FinishRule>,
}

/// Where podSets come from: one template, or one per element of an array.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodSetSource {
    /// A fixed podSet name (default `main`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// With `each`: the pointer, inside an element, to the podSet's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_from: Option<String>,
    /// One podSet per element of the array at this pointer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub each: Option<String>,
    /// Pointer to the pod template (inside the element with `each`).
    pub template: String,
    /// The pod count is the product of these factors (none = 1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub count: Vec<CountFactor>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CountFactor {
    pub field: String,
    #[serde(default = "one")]
    pub default: i64,
    /// Capped by this field when set (Job `completions` below `parallelism`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_most: Option<String>,
}

fn one() -> i64 {
    1
}

/// When the job is finished: a `True` condition of this type in `/status/conditions`, or a
/// field equal to a value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FinishRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<String>,
    pub success: bool,
}

/// What admission to a flavor adds to a pod template: the flavor's node labels (as
/// nodeSelector) and tolerations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlavorPlacement {
    pub node_labels: BTreeMap<String, String>,
    pub tolerations: Vec<Toleration>,
}

/// A podSet found in a job object.
#[derive(Debug, Clone, PartialEq)]
pub struct JobPodSet {
    pub name: String,
    /// JSON pointer to the template inside the job.
    pub path: String,
    pub template: PodTemplateSpec,
    pub count: i32,
}

/// A configured job kind, ready to use.
#[derive(Debug, Clone, PartialEq)]
pub struct JobKind {
    pub spec: JobKindSpec,
    pub resource: ApiResource,
}

/// The built-in kinds.
pub fn builtin() -> Vec<JobKind> {
    parse(include_str!("integrations.yaml")).expect("the built-in integrations are valid")
}

/// Parses a YAML list of [`JobKindSpec`]s.
pub fn parse(yaml: &str) -> Result<Vec<JobKind>, Error> {
    let specs: Vec<JobKindSpec> = serde_saphyr::from_str(yaml).map_err(|e| Error::Integration {
        kind: "(file)".into(),
        message: e.to_string(),
    })?;
    specs.into_iter().map(JobKind::new).collect()
}

impl JobKind {
    pub fn new(spec: JobKindSpec) -> Result<JobKind, Error> {
        let bad = |message: String| Error::Integration {
            kind: spec.kind.clone(),
            message,
        };
        let pointers = std::iter::once(&spec.suspend)
            .chain(spec.pod_sets.iter().flat_map(|p| {
                [Some(&p.template), p.each.as_ref(), p.name_from.as_ref()]
                    .into_iter()
                    .flatten()
            }))
            .chain(spec.active.iter())
            .chain(spec.clear_on_stop.iter());
        for p in pointers {
            if !p.starts_with('/') {
                return Err(bad(format!(
                    "{p:?} is not a JSON pointer (must start with /)"
                )));
            }
        }
        if spec.pod_sets.is_empty() {
            return Err(bad("podSets must not be empty".into()));
        }
        for rule in &spec.finished {
            if rule.condition.is_some() == rule.field.is_some() {
                return Err(bad(
                    "a finished rule needs exactly one of condition and field".into(),
                ));
            }
        }
        let (group, version) = match spec.api_version.split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), spec.api_version.clone()),
        };
        let resource = ApiResource {
            group,
            version,
            api_version: spec.api_version.clone(),
            kind: spec.kind.clone(),
            plural: spec.plural.clone(),
        };
        Ok(JobKind { spec, resource })
    }

    /// The name of the job's Workload.
    pub fn workload_name(&self, job_name: &str) -> String {
        let prefix = self
            .spec
            .workload_prefix
            .clone()
            .unwrap_or_else(|| self.spec.kind.to_lowercase());
        let mut name = format!("{prefix}-{job_name}");
        name.truncate(253);
        name
    }

    pub fn is_suspended(&self, job: &Value) -> bool {
        job.pointer(&self.spec.suspend).and_then(Value::as_bool) == Some(true)
    }

    /// Whether pods of the job may still be running.
    pub fn is_active(&self, job: &Value) -> bool {
        if !self.is_suspended(job) {
            return true;
        }
        self.spec.active.iter().any(|p| {
            lookup_all(job, p)
                .into_iter()
                .any(|v| v.as_i64().is_some_and(|n| n > 0) || v.as_bool() == Some(true))
        })
    }

    /// `Some((success, message))` once the job is finished.
    pub fn finished(&self, job: &Value) -> Option<(bool, String)> {
        for rule in &self.spec.finished {
            if let Some(type_) = &rule.condition {
                let found = job
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .find(|c| {
                        c.get("type").and_then(Value::as_str) == Some(type_)
                            && c.get("status").and_then(Value::as_str) == Some("True")
                    });
                if let Some(c) = found {
                    let message = c.get("message").and_then(Value::as_str).unwrap_or_default();
                    return Some((rule.success, message.to_string()));
                }
            } else if let Some(field) = &rule.field {
                let value = job.pointer(field).and_then(Value::as_str);
                if value.is_some() && value == rule.equals.as_deref() {
                    return Some((
                        rule.success,
                        format!("{field} is {}", value.unwrap_or_default()),
                    ));
                }
            }
        }
        None
    }

    /// The podSets of a job object, in configuration order.
    pub fn pod_sets(&self, job: &Value) -> Result<Vec<JobPodSet>, String> {
        let mut out = Vec::new();
        for src in &self.spec.pod_sets {
            let elements: Vec<(String, &Value)> = match &src.each {
                None => vec![(String::new(), job)],
                Some(each) => job
                    .pointer(each)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                    .map(|(i, v)| (format!("{each}/{i}"), v))
                    .collect(),
            };
            for (base, element) in elements {
                let name = match (&src.name_from, &src.name) {
                    (Some(from), _) => element
                        .pointer(from)
                        .and_then(Value::as_str)
                        .map(str::to_lowercase)
                        .ok_or_else(|| format!("{base}{from}: missing podSet name"))?,
                    (None, Some(n)) => n.clone(),
                    (None, None) => api::default_pod_set_name(),
                };
                let path = format!("{base}{}", src.template);
                let raw = element
                    .pointer(&src.template)
                    .ok_or_else(|| format!("{path}: missing pod template"))?;
                let template: PodTemplateSpec =
                    serde_json::from_value(raw.clone()).map_err(|e| format!("{path}: {e}"))?;
                let mut count: i64 = 1;
                for f in &src.count {
                    let mut n = element
                        .pointer(&f.field)
                        .and_then(Value::as_i64)
                        .unwrap_or(f.default);
                    if let Some(cap) = f
                        .at_most
                        .as_ref()
                        .and_then(|p| element.pointer(p))
                        .and_then(Value::as_i64)
                    {
                        n = n.min(cap);
                    }
                    count = count.saturating_mul(n.max(0));
                }
                out.push(JobPodSet {
                    name,
                    path,
                    template,
                    count: i32::try_from(count).unwrap_or(i32::MAX),
                });
            }
        }
        Ok(out)
    }

    /// The Workload Kueue's job reconciler would create for `job`, or `None` when the job is
    /// not queued (no queue-name label and no `default` LocalQueue in its namespace).
    pub fn workload(
        &self,
        job: &DynamicObject,
        catalog: &Catalog,
    ) -> Result<Option<Workload>, String> {
        let meta = &job.metadata;
        let Some(queue) = api::jobs::queue_name(meta, catalog) else {
            return Ok(None);
        };
        let value = serde_json::to_value(job).map_err(|e| e.to_string())?;
        let (priority_class_ref, priority) =
            api::jobs::priority(meta, catalog).map_err(|p| match p.field {
                Some(f) => format!("{f}: {}", p.message),
                None => p.message,
            })?;
        let pod_sets = self
            .pod_sets(&value)?
            .into_iter()
            .map(|p| PodSet {
                name: p.name,
                count: p.count,
                min_count: None,
                template: p.template,
                topology_request: None,
            })
            .collect();
        let name = meta.name.clone().unwrap_or_default();
        let uid = meta.uid.clone().unwrap_or_default();
        let mut wl = Workload {
            metadata: ObjectMeta {
                name: Some(self.workload_name(&name)),
                namespace: meta.namespace.clone(),
                labels: Some(BTreeMap::from([(JOB_UID_LABEL.to_string(), uid.clone())])),
                owner_references: Some(vec![OwnerReference {
                    api_version: self.spec.api_version.clone(),
                    kind: self.spec.kind.clone(),
                    name,
                    uid,
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }]),
                ..ObjectMeta::default()
            },
            spec: WorkloadSpec {
                pod_sets,
                queue_name: Some(queue),
                priority,
                priority_class_ref,
                ..WorkloadSpec::default()
            },
            status: None,
        };
        api::defaults::default_workload(&mut wl, catalog);
        Ok(Some(wl))
    }

    /// JSON Patch that suspends the job.
    pub fn suspend_ops(&self) -> Vec<Value> {
        vec![json!({"op": "add", "path": self.spec.suspend, "value": true})]
    }

    /// JSON Patch for the job's status subresource clearing `clearOnStop` fields that are set.
    pub fn clear_status_ops(&self, job: &Value) -> Vec<Value> {
        self.spec
            .clear_on_stop
            .iter()
            .filter(|p| job.pointer(p).is_some_and(|v| !v.is_null()))
            .map(|p| json!({"op": "remove", "path": p}))
            .collect()
    }

    /// JSON Patch that injects each podSet's flavors into its template and unsuspends the job.
    /// `flavors` maps a podSet name to the flavors assigned to it.
    pub fn start_ops(
        &self,
        job: &Value,
        flavors: &BTreeMap<String, Vec<FlavorPlacement>>,
    ) -> Result<Vec<Value>, String> {
        let mut ops = Vec::new();
        for ps in self.pod_sets(job)? {
            let assigned = flavors.get(&ps.name).map(Vec::as_slice).unwrap_or_default();
            ops.extend(inject_ops(&ps.path, &ps.template, assigned));
        }
        ops.push(json!({"op": "add", "path": self.spec.suspend, "value": false}));
        Ok(ops)
    }

    /// JSON Patch that puts back each podSet's nodeSelector and tolerations as the Workload
    /// recorded them at creation. Empty when nothing differs.
    pub fn restore_ops(&self, job: &Value, workload: &Workload) -> Result<Vec<Value>, String> {
        let mut ops = Vec::new();
        for ps in self.pod_sets(job)? {
            let Some(original) = workload.spec.pod_sets.iter().find(|p| p.name == ps.name) else {
                continue;
            };
            ops.extend(restore_template_ops(
                &ps.path,
                &ps.template,
                &original.template,
            ));
        }
        Ok(ops)
    }
}

/// Ops adding the flavors' node labels and tolerations to the template at `path`.
pub fn inject_ops(
    path: &str,
    template: &PodTemplateSpec,
    flavors: &[FlavorPlacement],
) -> Vec<Value> {
    let spec = template.spec.clone().unwrap_or_default();
    let mut ops = Vec::new();
    let mut selector = spec.node_selector.clone().unwrap_or_default();
    for f in flavors {
        selector.extend(f.node_labels.clone());
    }
    if Some(&selector) != spec.node_selector.as_ref() && !selector.is_empty() {
        ops.push(
            json!({"op": "add", "path": format!("{path}/spec/nodeSelector"), "value": selector}),
        );
    }
    let mut tolerations: Vec<Toleration> = spec.tolerations.clone().unwrap_or_default();
    for f in flavors {
        for t in &f.tolerations {
            if !tolerations.contains(t) {
                tolerations.push(t.clone());
            }
        }
    }
    if tolerations.len() != spec.tolerations.as_ref().map_or(0, Vec::len) {
        ops.push(
            json!({"op": "add", "path": format!("{path}/spec/tolerations"), "value": tolerations}),
        );
    }
    ops
}

/// Ops making the template at `path` match `original` in nodeSelector and tolerations.
pub fn restore_template_ops(
    path: &str,
    current: &PodTemplateSpec,
    original: &PodTemplateSpec,
) -> Vec<Value> {
    let cur = current.spec.clone().unwrap_or_default();
    let orig = original.spec.clone().unwrap_or_default();
    let mut ops = Vec::new();
    let non_empty_map = |m: Option<BTreeMap<String, String>>| m.filter(|m| !m.is_empty());
    let non_empty_vec = |v: Option<Vec<Toleration>>| v.filter(|v| !v.is_empty());
    let fields: [(&str, Option<Value>, Option<Value>); 2] = [
        (
            "nodeSelector",
            non_empty_map(cur.node_selector).map(|m| json!(m)),
            non_empty_map(orig.node_selector).map(|m| json!(m)),
        ),
        (
            "tolerations",
            non_empty_vec(cur.tolerations).map(|v| json!(v)),
            non_empty_vec(orig.tolerations).map(|v| json!(v)),
        ),
    ];
    for (field, now, before) in fields {
        let p = format!("{path}/spec/{field}");
        match (now, before) {
            (Some(n), Some(b)) if n != b => ops.push(json!({"op": "add", "path": p, "value": b})),
            (Some(_), None) => ops.push(json!({"op": "remove", "path": p})),
            (None, Some(b)) => ops.push(json!({"op": "add", "path": p, "value": b})),
            _ => {}
        }
    }
    ops
}

/// Every value matching `pointer`, where a `*` segment matches each array element.
fn lookup_all<'a>(value: &'a Value, pointer: &str) -> Vec<&'a Value> {
    let mut current = vec![value];
    for seg in pointer.split('/').skip(1) {
        let mut next = Vec::new();
        for v in current {
            if seg == "*" {
                if let Some(items) = v.as_array() {
                    next.extend(items.iter());
                }
            } else if let Some(child) = v.pointer(&format!("/{seg}")) {
                next.push(child);
            }
        }
        current = next;
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(k: &str) -> JobKind {
        builtin().into_iter().find(|j| j.spec.kind == k).unwrap()
    }

    #[test]
    fn builtins_parse() {
        let kinds: Vec<String> = builtin().into_iter().map(|k| k.spec.kind).collect();
        assert_eq!(kinds, ["Job", "RayJob", "RayCluster", "JobSet"]);
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
    fn activity_and_finish_follow_the_configuration() {
        let job = kind("Job");
        assert!(job.is_active(&json!({"spec": {"suspend": false}})));
        assert!(job.is_active(&json!({"spec": {"suspend": true}, "status": {"active": 2}})));
        assert!(!job.is_active(&json!({"spec": {"suspend": true}, "status": {"active": 0}})));
        let done = json!({"status": {"conditions": [{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}]}});
        assert_eq!(
            job.finished(&done),
            Some((false, "BackoffLimitExceeded".into()))
        );
        let ray = kind("RayJob");
        assert_eq!(
            ray.finished(&json!({"status": {"jobDeploymentStatus": "Complete"}}))
                .map(|f| f.0),
            Some(true)
        );
    }

    #[test]
    fn bad_configuration_is_refused() {
        let err = parse("- {apiVersion: x/v1, kind: X, plural: xs, suspend: spec.suspend, podSets: [{template: /t}]}").unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"job integration X: "spec.suspend" is not a JSON pointer (must start with /)"#
        );
    }
}
