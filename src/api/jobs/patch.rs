//! JSON Patches that run and stop a job of any configured kind, as Kueue's job reconciler
//! does: on admission each podSet's template receives the assigned flavors' node labels
//! (nodeSelector) and tolerations and the job is unsuspended; on eviction it is suspended
//! again and the templates are restored from the Workload's podSets.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PodTemplateSpec, Toleration};
use serde_json::{Value, json};

use super::kind::JobKind;
use crate::api::strict::FieldProblem;
use crate::api::types::Workload;

/// What admission to a flavor adds to a pod template: the flavor's node labels (as
/// nodeSelector) and tolerations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlavorPlacement {
    pub node_labels: BTreeMap<String, String>,
    pub tolerations: Vec<Toleration>,
}

impl JobKind {
    /// JSON Patch that suspends the job.
    /// Empty for kinds without a suspend flag (their pods are gated instead). Missing parents
    /// of the flag (a Kubeflow job without `spec.runPolicy`) are added first.
    pub fn suspend_ops(&self, job: &Value) -> Vec<Value> {
        match &self.spec.suspend {
            Some(p) => add_ops(job, p, json!(true)),
            None => Vec::new(),
        }
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

    /// JSON Patch that injects each podSet's flavors into its template, adds `labels` to
    /// every template (cost attribution), writes a partially admitted podSet's admitted count
    /// (Kueue's `RunWithPodSetsInfo`: a Job's `parallelism`) and unsuspends the job.
    /// `admitted` maps a podSet name to its flavors and admitted pod count.
    pub fn start_ops(
        &self,
        job: &Value,
        admitted: &BTreeMap<String, AdmittedPodSet>,
        labels: &BTreeMap<String, String>,
    ) -> Result<Vec<Value>, String> {
        let mut ops = Vec::new();
        let label_list: Vec<(String, String)> =
            labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        for ps in self.pod_sets(job).map_err(|p| problems_text(&p))? {
            let Some(a) = admitted.get(&ps.name) else {
                continue;
            };
            ops.extend(inject_ops(&ps.path, &ps.template, &a.flavors));
            ops.extend(gate_ops(&ps.path, &ps.template, &a.scheduling_gates));
            let mut pod_labels = label_list.clone();
            pod_labels.extend(a.labels.iter().map(|(k, v)| (k.clone(), v.clone())));
            let annotations: Vec<(String, String)> = a
                .annotations
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            ops.extend(metadata_ops(job, &ps.path, &pod_labels, &annotations));
            if let Some(pointer) = &ps.partial_count_pointer
                && a.count < ps.count
            {
                ops.push(json!({"op": "add", "path": pointer, "value": a.count}));
            }
        }
        if let Some(p) = &self.spec.suspend {
            ops.extend(add_ops(job, p, json!(false)));
        }
        Ok(ops)
    }

    /// JSON Patch that puts back each podSet's nodeSelector, tolerations and labels as the
    /// Workload recorded them at creation, and a partially admitted podSet's full count
    /// (Kueue's `RestorePodSetsInfo`). Empty when nothing differs.
    pub fn restore_ops(&self, job: &Value, workload: &Workload) -> Result<Vec<Value>, String> {
        let mut ops = Vec::new();
        for ps in self.pod_sets(job).map_err(|p| problems_text(&p))? {
            let Some(original) = workload.spec.pod_sets.iter().find(|p| p.name == ps.name) else {
                continue;
            };
            ops.extend(restore_template_ops(
                &ps.path,
                &ps.template,
                &original.template,
            ));
            if let Some(pointer) = &ps.partial_count_pointer
                && ps.count != original.count
            {
                ops.push(json!({"op": "add", "path": pointer, "value": original.count}));
            }
        }
        Ok(ops)
    }
}

/// What admission gave one podSet: the flavors to place its pods on, and how many pods.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AdmittedPodSet {
    pub flavors: Vec<FlavorPlacement>,
    pub count: i32,
    /// Labels and annotations the admission checks add to the podSet's pods (their
    /// `podSetUpdates`; their node selectors and tolerations come as one more placement).
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// Scheduling gates the pods are created with (`kueue.x-k8s.io/topology` for a podSet
    /// placed by topology-aware scheduling, released per pod by the topology ungater).
    pub scheduling_gates: Vec<String>,
}

/// Ops adding `gates` to the template's `spec.schedulingGates` (those already there stay).
pub fn gate_ops(path: &str, template: &PodTemplateSpec, gates: &[String]) -> Vec<Value> {
    let current = template
        .spec
        .as_ref()
        .and_then(|s| s.scheduling_gates.clone())
        .unwrap_or_default();
    let mut merged = current.clone();
    for g in gates {
        if !merged.iter().any(|c| &c.name == g) {
            merged.push(k8s_openapi::api::core::v1::PodSchedulingGate { name: g.clone() });
        }
    }
    if merged.len() == current.len() {
        return Vec::new();
    }
    vec![json!({"op": "add", "path": format!("{path}/spec/schedulingGates"), "value": merged})]
}

/// Ops setting the field at `pointer` to `value`, adding first each missing parent object.
pub fn add_ops(object: &Value, pointer: &str, value: Value) -> Vec<Value> {
    let mut ops = Vec::new();
    let mut parent = String::new();
    let segments: Vec<&str> = pointer.split('/').skip(1).collect();
    for seg in &segments[..segments.len().saturating_sub(1)] {
        parent.push('/');
        parent.push_str(seg);
        if object.pointer(&parent).is_none() {
            ops.push(json!({"op": "add", "path": parent, "value": {}}));
        }
    }
    ops.push(json!({"op": "add", "path": pointer, "value": value}));
    ops
}

/// Problems as one line: `field: message; field: message`.
pub fn problems_text(problems: &[FieldProblem]) -> String {
    problems
        .iter()
        .map(|p| match &p.field {
            Some(f) => format!("{f}: {}", p.message),
            None => p.message.clone(),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Ops setting `labels` and `annotations` in the metadata at `base` (`""` for the object, a
/// pod template's pointer otherwise), keeping what is there: one op per map that changes
/// (two ops adding entries to a missing map would overwrite each other), after one creating
/// the metadata when it is missing.
pub fn metadata_ops(
    object: &Value,
    base: &str,
    labels: &[(String, String)],
    annotations: &[(String, String)],
) -> Vec<Value> {
    let mut ops = Vec::new();
    for (map, entries) in [("labels", labels), ("annotations", annotations)] {
        if entries.is_empty() {
            continue;
        }
        let path = format!("{base}/metadata/{map}");
        let current = object.pointer(&path).and_then(Value::as_object);
        let mut merged = current.cloned().unwrap_or_default();
        for (k, v) in entries {
            merged.insert(k.clone(), Value::String(v.clone()));
        }
        if current == Some(&merged) {
            continue;
        }
        ops.push(json!({"op": "add", "path": path, "value": merged}));
    }
    if !ops.is_empty() && object.pointer(&format!("{base}/metadata")).is_none() {
        ops.insert(
            0,
            json!({"op": "add", "path": format!("{base}/metadata"), "value": {}}),
        );
    }
    ops
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

/// Ops making the template at `path` match `original` in nodeSelector, tolerations,
/// scheduling gates, labels and annotations (those added at admission are removed: Kueue's
/// `RestorePodSpec`).
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
    let gates = |v: Option<Vec<k8s_openapi::api::core::v1::PodSchedulingGate>>| {
        v.filter(|v| !v.is_empty()).map(|v| json!(v))
    };
    let fields: [(&str, Option<Value>, Option<Value>); 3] = [
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
        (
            "schedulingGates",
            gates(cur.scheduling_gates),
            gates(orig.scheduling_gates),
        ),
    ];
    let labels = |t: &PodTemplateSpec| {
        t.metadata
            .as_ref()
            .and_then(|m| m.labels.clone())
            .filter(|m| !m.is_empty())
            .map(|m| json!(m))
    };
    let annotations = |t: &PodTemplateSpec| {
        t.metadata
            .as_ref()
            .and_then(|m| m.annotations.clone())
            .filter(|m| !m.is_empty())
            .map(|m| json!(m))
    };
    // Labels and annotations added at admission (attribution, admission checks) go away.
    for (field, now, before) in [
        ("labels", labels(current), labels(original)),
        ("annotations", annotations(current), annotations(original)),
    ] {
        match (now, before) {
            (Some(n), Some(b)) if n != b => ops
                .push(json!({"op": "add", "path": format!("{path}/metadata/{field}"), "value": b})),
            (Some(_), None) => {
                ops.push(json!({"op": "remove", "path": format!("{path}/metadata/{field}")}))
            }
            _ => {}
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn metadata_maps_are_merged_whole_and_created_with_their_parent() {
        let with = json!({"metadata": {"labels": {"a": "b"}}});
        assert_eq!(
            metadata_ops(&with, "", &pairs(&[("k", "v")]), &pairs(&[("n", "1")])),
            [
                json!({"op": "add", "path": "/metadata/labels", "value": {"a": "b", "k": "v"}}),
                json!({"op": "add", "path": "/metadata/annotations", "value": {"n": "1"}}),
            ]
        );
        let template = json!({"spec": {"template": {"spec": {}}}});
        assert_eq!(
            metadata_ops(&template, "/spec/template", &pairs(&[("k", "v")]), &[]),
            [
                json!({"op": "add", "path": "/spec/template/metadata", "value": {}}),
                json!({"op": "add", "path": "/spec/template/metadata/labels", "value": {"k": "v"}}),
            ]
        );
        let same = json!({"metadata": {"labels": {"k": "v"}}});
        assert!(metadata_ops(&same, "", &pairs(&[("k", "v")]), &[]).is_empty());
    }

    #[test]
    fn a_flag_under_a_missing_object_gets_its_parents_first() {
        let job = json!({"spec": {}});
        assert_eq!(
            add_ops(&job, "/spec/runPolicy/suspend", json!(true)),
            [
                json!({"op": "add", "path": "/spec/runPolicy", "value": {}}),
                json!({"op": "add", "path": "/spec/runPolicy/suspend", "value": true}),
            ]
        );
    }
}
