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
    /// Empty for kinds without a suspend flag (their pods are gated instead).
    pub fn suspend_ops(&self) -> Vec<Value> {
        self.spec
            .suspend
            .iter()
            .map(|p| json!({"op": "add", "path": p, "value": true}))
            .collect()
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
    /// every template (cost attribution) and unsuspends the job. `flavors` maps a podSet name
    /// to the flavors assigned to it.
    pub fn start_ops(
        &self,
        job: &Value,
        flavors: &BTreeMap<String, Vec<FlavorPlacement>>,
        labels: &BTreeMap<String, String>,
    ) -> Result<Vec<Value>, String> {
        let mut ops = Vec::new();
        for ps in self.pod_sets(job).map_err(|p| problems_text(&p))? {
            let assigned = flavors.get(&ps.name).map(Vec::as_slice).unwrap_or_default();
            ops.extend(inject_ops(&ps.path, &ps.template, assigned));
            ops.extend(label_ops(&ps.path, &ps.template, labels));
        }
        if let Some(p) = &self.spec.suspend {
            ops.push(json!({"op": "add", "path": p, "value": false}));
        }
        Ok(ops)
    }

    /// JSON Patch that puts back each podSet's nodeSelector and tolerations as the Workload
    /// recorded them at creation. Empty when nothing differs.
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
        }
        Ok(ops)
    }
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

/// Ops adding `labels` to the template at `path` (those it lacks or holds with another value).
pub fn label_ops(
    path: &str,
    template: &PodTemplateSpec,
    labels: &BTreeMap<String, String>,
) -> Vec<Value> {
    let current = template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    let mut merged = current.clone();
    merged.extend(labels.iter().map(|(k, v)| (k.clone(), v.clone())));
    if merged == current {
        return Vec::new();
    }
    let mut ops = Vec::new();
    if template.metadata.is_none() {
        ops.push(json!({"op": "add", "path": format!("{path}/metadata"), "value": {}}));
    }
    ops.push(json!({"op": "add", "path": format!("{path}/metadata/labels"), "value": merged}));
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

/// Ops making the template at `path` match `original` in nodeSelector, tolerations and
/// labels (those added at admission are removed).
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
    let labels = |t: &PodTemplateSpec| {
        t.metadata
            .as_ref()
            .and_then(|m| m.labels.clone())
            .filter(|m| !m.is_empty())
            .map(|m| json!(m))
    };
    match (labels(current), labels(original)) {
        (Some(n), Some(b)) if n != b => {
            ops.push(json!({"op": "add", "path": format!("{path}/metadata/labels"), "value": b}))
        }
        (Some(_), None) => {
            ops.push(json!({"op": "remove", "path": format!("{path}/metadata/labels")}))
        }
        _ => {}
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
