//! A job kind as configuration: where its suspend flag is, where its pod templates are and how
//! many pods each runs, how many Workloads it makes, what "still running" and "finished" look
//! like. The built-in kinds are such configuration (`integrations.yaml`); a new CRD needs a
//! YAML entry, not code.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A job kind configuration that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("job integration {kind}: {message}")]
pub struct KindError {
    pub kind: String,
    pub message: String,
}

/// One job kind, as configured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobKindSpec {
    pub api_version: String,
    pub kind: String,
    pub plural: String,
    /// The Workload name's prefix (Kueue: the kind in lower case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_prefix: Option<String>,
    /// Pointer to the boolean suspend flag. Absent: the kind has none, and Kueue manages it
    /// through its pods, each held by the `kueue.x-k8s.io/admission` scheduling gate
    /// (LeaderWorkerSet, StatefulSet, Deployment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<String>,
    /// One Workload per group: the number of groups is read here (LeaderWorkerSet replicas,
    /// Deployment replicas). Absent: one Workload for the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<CountFactor>,
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
    /// When a started job's pods are ready, for `waitForPodsReady` (Kueue's `PodsReady()`).
    /// Absent: ready as soon as it is started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods_ready: Option<PodsReadyRule>,
    /// How MultiKueue dispatches the kind (Kueue's `MultiKueueAdapter`). Absent: a manager
    /// rejects its Workloads (`No multikueue adapter found for owner kind …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multi_kueue: Option<MultiKueueAdapter>,
}

/// A kind's MultiKueue adapter: where its `managedBy` is, which a job must set to
/// `kueue.x-k8s.io/multikueue` to be dispatched and which the copy on the worker drops. A kind
/// without one (`multiKueue: {}`: StatefulSet, LeaderWorkerSet, whose pods are admitted as pod
/// groups) is always dispatched, and its status is not mirrored (its own controller on the
/// manager would overwrite it), as Kueue's adapters for them do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MultiKueueAdapter {
    /// JSON pointer to `managedBy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,
    /// The field as Kueue's message names it (`spec.managedBy`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub managed_by_field: String,
    /// The kind's own controller's `managedBy` value, which a manager's webhook replaces with
    /// MultiKueue's as it does an unset one (Kueue's `CanDefaultManagedBy`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub own_controller: String,
}

/// When a job's pods are ready (Kueue's `PodsReady()` of the kind), one of:
///
/// - `{condition: Running}`: a `True` condition of this type in `/status/conditions`
///   (Kubeflow jobs, MPIJob);
/// - `{field: /status/state, equals: ready}`: a field equal to a value (RayCluster, RayJob);
/// - `{readyCount: [/status/ready, /status/succeeded]}`: these counts summed (`*` matches
///   every array element; an array counts its elements) reach `expected` summed, or, without
///   `expected`, the Workload's admitted pod count (Job: `ready + succeeded >= parallelism`;
///   JobSet: ready + succeeded jobs = the replicated jobs' replicas).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodsReadyRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ready_count: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expected: Vec<String>,
}

/// Where podSets come from: one template, or one per element of an array or entry of a map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodSetSource {
    /// A fixed podSet name (default `main`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The name instead of `name` when this is the job's only podSet (LeaderWorkerSet
    /// without a leader template: `main`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_when_alone: Option<String>,
    /// With `each`: the pointer, inside an element, to the podSet's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_from: Option<String>,
    /// One podSet per element of the array at this pointer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub each: Option<String>,
    /// Pointer to the pod template (inside the element with `each`).
    pub template: String,
    /// A missing template means no such podSet (Kubeflow replica types, a LeaderWorkerSet's
    /// leader), instead of an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// The pod count is the product of these factors (none = 1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub count: Vec<CountFactor>,
    /// Annotation on the job giving the fewest pods it may run with (partial admission:
    /// the podSet's `minCount`; Kueue's `kueue.x-k8s.io/job-min-parallelism` for Jobs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_count_annotation: Option<String>,
    /// The pod label holding a pod's index in its podSet (Kueue's `podIndexLabel` of the
    /// podSet's topology request: `batch.kubernetes.io/job-completion-index` for a Job), used
    /// to give pods their domains by rank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_index_label: Option<String>,
    /// Jobs of jobs (a JobSet's replicated job): the pod label holding the sub-group's index
    /// and the pointer, inside the element, to how many sub-groups there are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_group: Option<SubGroupSource>,
}

/// Where a podSet's sub-groups are read (Kueue's `subGroupIndexLabel` / `subGroupCount`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubGroupSource {
    pub index_label: String,
    /// Pointer to the count (default 1 when missing).
    pub count: String,
}

/// One factor of a pod count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CountFactor {
    pub field: String,
    #[serde(default = "one")]
    pub default: i64,
    /// Capped by this field when set (Job `completions` below `parallelism`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_most: Option<String>,
    /// A missing field is an error instead of `default` (a LeaderWorkerSet's `size`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// One less when this field is set (a LeaderWorkerSet's `size` counts its leader).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub less_one_if: Option<String>,
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

/// A configured job kind, checked and ready to use.
#[derive(Debug, Clone, PartialEq)]
pub struct JobKind {
    pub spec: JobKindSpec,
    /// The API group (`""` for the core group) and version of `spec.apiVersion`.
    pub group: String,
    pub version: String,
}

static BUILTIN: std::sync::LazyLock<Vec<JobKind>> = std::sync::LazyLock::new(|| {
    parse(include_str!("integrations.yaml")).expect("the built-in integrations are valid")
});

/// The built-in kinds.
pub fn builtin() -> Vec<JobKind> {
    BUILTIN.clone()
}

/// The built-in kind of this apiVersion and kind, if any.
pub fn builtin_kind(api_version: &str, kind: &str) -> Option<JobKind> {
    BUILTIN
        .iter()
        .find(|k| k.spec.api_version == api_version && k.spec.kind == kind)
        .cloned()
}

/// Parses a YAML list of [`JobKindSpec`]s.
pub fn parse(yaml: &str) -> Result<Vec<JobKind>, KindError> {
    let specs: Vec<JobKindSpec> = serde_saphyr::from_str(yaml).map_err(|e| KindError {
        kind: "(file)".into(),
        message: e.to_string(),
    })?;
    specs.into_iter().map(JobKind::new).collect()
}

impl JobKind {
    pub fn new(spec: JobKindSpec) -> Result<JobKind, KindError> {
        let bad = |message: String| KindError {
            kind: spec.kind.clone(),
            message,
        };
        let counts = spec
            .pod_sets
            .iter()
            .flat_map(|p| p.count.iter())
            .chain(spec.groups.iter())
            .flat_map(|c| {
                [Some(&c.field), c.at_most.as_ref(), c.less_one_if.as_ref()]
                    .into_iter()
                    .flatten()
            });
        let pointers = spec
            .suspend
            .iter()
            .chain(spec.pod_sets.iter().flat_map(|p| {
                [Some(&p.template), p.each.as_ref(), p.name_from.as_ref()]
                    .into_iter()
                    .flatten()
            }))
            .chain(counts)
            .chain(spec.active.iter())
            .chain(spec.clear_on_stop.iter())
            .chain(spec.multi_kueue.iter().flat_map(|m| m.managed_by.iter()))
            .chain(spec.pods_ready.iter().flat_map(|r| {
                r.field
                    .iter()
                    .chain(r.ready_count.iter())
                    .chain(r.expected.iter())
            }));
        for p in pointers {
            if !p.starts_with('/') {
                return Err(bad(format!(
                    "{p:?} is not a JSON pointer (must start with /)"
                )));
            }
        }
        if let Some(m) = &spec.multi_kueue
            && m.managed_by.is_some()
            && (m.managed_by_field.is_empty() || m.own_controller.is_empty())
        {
            return Err(bad(
                "multiKueue: managedBy needs managedByField and ownController".into(),
            ));
        }
        if spec
            .multi_kueue
            .as_ref()
            .is_some_and(|m| m.managed_by.is_none())
            && spec.suspend.is_some()
        {
            return Err(bad(
                "multiKueue: a kind with a suspend flag needs managedBy (only kinds admitted through their pods are dispatched without one)".into(),
            ));
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
        if let Some(r) = &spec.pods_ready {
            let ways = usize::from(r.condition.is_some())
                + usize::from(r.field.is_some())
                + usize::from(!r.ready_count.is_empty());
            if ways != 1 || r.field.is_some() != r.equals.is_some() {
                return Err(bad(
                    "podsReady needs exactly one of condition, field (with equals) and readyCount"
                        .into(),
                ));
            }
            if !r.expected.is_empty() && r.ready_count.is_empty() {
                return Err(bad("podsReady.expected needs readyCount".into()));
            }
        }
        let (group, version) = match spec.api_version.split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), spec.api_version.clone()),
        };
        Ok(JobKind {
            spec,
            group,
            version,
        })
    }

    /// Whether the controller suspends and starts jobs of this kind itself (otherwise their
    /// pods are gated one by one, as Kueue's pod-based integrations do).
    pub fn has_suspend(&self) -> bool {
        self.spec.suspend.is_some()
    }

    pub fn is_suspended(&self, job: &Value) -> bool {
        self.spec
            .suspend
            .as_ref()
            .is_some_and(|p| job.pointer(p).and_then(Value::as_bool) == Some(true))
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
                if let Some(c) = true_condition(job, type_) {
                    let message = c.get("message").and_then(Value::as_str).unwrap_or_default();
                    return Some((rule.success, message.to_string()));
                }
            } else if let Some(field) = &rule.field
                && let Some(value) = field_equal(job, field, rule.equals.as_deref())
            {
                return Some((rule.success, format!("{field} is {value}")));
            }
        }
        None
    }
}

impl JobKind {
    /// Whether a started job's pods are ready (its `podsReady` rule; none: ready once started).
    /// `admitted` is the Workload's admitted pod count, what a `readyCount` reaches by default.
    pub fn pods_ready(&self, job: &Value, admitted: i64) -> bool {
        let Some(rule) = &self.spec.pods_ready else {
            return true;
        };
        if let Some(type_) = &rule.condition {
            return true_condition(job, type_).is_some();
        }
        if let Some(field) = &rule.field {
            return field_equal(job, field, rule.equals.as_deref()).is_some();
        }
        let sum = |pointers: &[String]| -> i64 {
            pointers
                .iter()
                .flat_map(|p| lookup_all(job, p))
                .map(|v| match v {
                    Value::Array(items) => items.len() as i64,
                    v => v.as_i64().unwrap_or(0),
                })
                .sum()
        };
        let expected = if rule.expected.is_empty() {
            admitted
        } else {
            sum(&rule.expected)
        };
        sum(&rule.ready_count) >= expected
    }
}

/// The job's `True` condition of this type in `/status/conditions`.
fn true_condition<'a>(job: &'a Value, type_: &str) -> Option<&'a Value> {
    job.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| {
            c.get("type").and_then(Value::as_str) == Some(type_)
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
}

/// The string at `field` when it equals `equals`.
fn field_equal<'a>(job: &'a Value, field: &str, equals: Option<&str>) -> Option<&'a str> {
    job.pointer(field)
        .and_then(Value::as_str)
        .filter(|v| Some(*v) == equals)
}

/// Every value matching `pointer`, where a `*` segment matches each array element or map value.
fn lookup_all<'a>(value: &'a Value, pointer: &str) -> Vec<&'a Value> {
    let mut current = vec![value];
    for seg in pointer.split('/').skip(1) {
        let mut next = Vec::new();
        for v in current {
            if seg == "*" {
                match v {
                    Value::Array(items) => next.extend(items.iter()),
                    Value::Object(map) => next.extend(map.values()),
                    _ => {}
                }
            } else if let Some(child) = v.pointer(&format!("/{seg}")) {
                next.push(child);
            }
        }
        current = next;
    }
    current
}

/// A JSON pointer as the dotted field path errors use: `/spec/replicatedJobs/0/template` is
/// `spec.replicatedJobs[0].template`.
pub fn field_path(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kind(k: &str) -> JobKind {
        builtin().into_iter().find(|j| j.spec.kind == k).unwrap()
    }

    #[test]
    fn builtins_parse_and_cover_kueues_integrations() {
        let kinds: Vec<String> = builtin().into_iter().map(|k| k.spec.kind).collect();
        assert_eq!(
            kinds,
            [
                "Job",
                "JobSet",
                "RayJob",
                "RayCluster",
                "PyTorchJob",
                "TFJob",
                "XGBoostJob",
                "PaddleJob",
                "JAXJob",
                "MPIJob",
                "LeaderWorkerSet",
                "StatefulSet",
                "Deployment"
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
        let pytorch = kind("PyTorchJob");
        assert!(pytorch.is_suspended(&json!({"spec": {"runPolicy": {"suspend": true}}})));
        assert!(!kind("LeaderWorkerSet").has_suspend());
    }

    #[test]
    fn pods_ready_follows_each_kinds_rule() {
        let job = kind("Job");
        assert!(!job.pods_ready(&json!({"status": {"ready": 1}}), 2));
        assert!(job.pods_ready(&json!({"status": {"ready": 1, "succeeded": 1}}), 2));
        assert!(job.pods_ready(
            &json!({"status": {"ready": 1, "uncountedTerminatedPods": {"succeeded": ["u"]}}}),
            2
        ));
        let jobset = kind("JobSet");
        let js = |ready: i64, succeeded: i64| {
            json!({"spec": {"replicatedJobs": [{"name": "a", "replicas": 2}, {"name": "b", "replicas": 1}]},
                   "status": {"replicatedJobsStatus": [{"name": "a", "ready": ready, "succeeded": succeeded},
                                                       {"name": "b", "ready": 1}]}})
        };
        assert!(!jobset.pods_ready(&js(1, 0), 12));
        assert!(jobset.pods_ready(&js(1, 1), 12));
        let ray = kind("RayJob");
        assert!(ray.pods_ready(
            &json!({"status": {"rayClusterStatus": {"state": "ready"}}}),
            3
        ));
        assert!(!ray.pods_ready(&json!({"status": {"jobDeploymentStatus": "Running"}}), 3));
        let cluster = kind("RayCluster");
        assert!(cluster.pods_ready(&json!({"status": {"state": "ready"}}), 3));
        assert!(!cluster.pods_ready(&json!({"status": {"state": "suspended"}}), 3));
        let running = json!({"status": {"conditions": [{"type": "Running", "status": "True"}]}});
        let created = json!({"status": {"conditions": [{"type": "Created", "status": "True"}]}});
        for k in [
            "PyTorchJob",
            "TFJob",
            "XGBoostJob",
            "PaddleJob",
            "JAXJob",
            "MPIJob",
        ] {
            assert!(kind(k).pods_ready(&running, 2), "{k}");
            assert!(!kind(k).pods_ready(&created, 2), "{k}");
        }
        for k in builtin().into_iter().filter(|k| k.has_suspend()) {
            assert!(k.spec.pods_ready.is_some(), "{}", k.spec.kind);
        }
        let err = parse("- {apiVersion: x/v1, kind: X, plural: xs, podSets: [{template: /t}], podsReady: {field: /status/state}}").unwrap_err();
        assert_eq!(
            err.to_string(),
            "job integration X: podsReady needs exactly one of condition, field (with equals) and readyCount"
        );
    }

    #[test]
    fn bad_configuration_is_refused() {
        let err = parse("- {apiVersion: x/v1, kind: X, plural: xs, suspend: spec.suspend, podSets: [{template: /t}]}").unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"job integration X: "spec.suspend" is not a JSON pointer (must start with /)"#
        );
        let err = parse("- {apiVersion: x/v1, kind: X, plural: xs, podSets: []}").unwrap_err();
        assert_eq!(
            err.to_string(),
            "job integration X: podSets must not be empty"
        );
        let err = parse("- {apiVersion: x/v1, kind: X, plural: xs, suspend: /spec/suspend, podSets: [{template: /t}], multiKueue: {managedBy: /spec/managedBy}}").unwrap_err();
        assert_eq!(
            err.to_string(),
            "job integration X: multiKueue: managedBy needs managedByField and ownController"
        );
        // A kind its own controller runs on the manager must hand it over through managedBy.
        let err = parse("- {apiVersion: x/v1, kind: X, plural: xs, suspend: /spec/suspend, podSets: [{template: /t}], multiKueue: {}}").unwrap_err();
        assert!(err.to_string().contains("needs managedBy"), "{err}");
        let ok = parse(
            "- {apiVersion: x/v1, kind: X, plural: xs, podSets: [{template: /t}], multiKueue: {}}",
        );
        assert!(ok.is_ok());
    }

    #[test]
    fn pointers_read_as_field_paths() {
        assert_eq!(
            field_path("/spec/replicatedJobs/0/template/spec/template"),
            "spec.replicatedJobs[0].template.spec.template"
        );
        assert_eq!(field_path("/metadata/labels/a~1b"), "metadata.labels.a/b");
    }
}
