//! Kueue's plain-Pod integration (`pkg/controller/jobs/pod`): Pods → Workloads.
//!
//! - A Pod with the `kueue.x-k8s.io/pod-group-name` label belongs to a group; each group (per
//!   namespace) becomes one Workload named after the group. Its pods are split into roles by
//!   the parts of their spec that matter for admission (requests, ports, node selection,
//!   tolerations, overhead, ...); each role is a podSet whose count is its number of pods, named
//!   by a short stable hash of the role (`main` when the group has a single role).
//! - Every pod of a group must carry the same `kueue.x-k8s.io/pod-group-total-count` annotation.
//!   With fewer pods present than the total, a single-role group is built with the total as
//!   its count; a multi-role group is an error, since which roles are missing is unknown.
//! - A Pod without a group label becomes its own Workload `pod-<name>-<hash>` (Kueue's name)
//!   with podSet `main`.
//!
//! As for Jobs, a Pod is queued by its queue-name label or its namespace's `default`
//! LocalQueue; other Pods are skipped. A group Workload takes the latest creation time of its
//! pods (Kueue creates it once the group is complete) and the union of their annotations.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde_json::{Value, json};

use super::Origin;
use super::catalog::Catalog;
use super::error::ManifestError;
use super::jobs::{
    add_label_routes, annotation, annotation_path, label, label_path, max_exec_time, priority,
    queue_name,
};
use super::provenance::Provenance;
use super::strict::FieldProblem;
use super::types::{PodSet, Workload, WorkloadSpec, default_pod_set_name, labels};

/// The scheduling gate Kueue puts on pods it manages.
pub const SCHEDULING_GATE: &str = "kueue.x-k8s.io/admission";

/// LeaderWorkerSet labels on the pods of a group: the set's name and the group's index.
pub const LWS_NAME_LABEL: &str = "leaderworkerset.sigs.k8s.io/name";
pub const LWS_GROUP_INDEX_LABEL: &str = "leaderworkerset.sigs.k8s.io/group-index";

/// Annotation Kueue puts on Workloads made from pod groups.
pub const IS_GROUP_WORKLOAD: &str = "kueue.x-k8s.io/is-group-workload";

/// A Pod and the document it came from.
#[derive(Debug, Clone, Copy)]
pub struct PodDoc<'a> {
    pub origin: &'a Origin,
    pub pod: &'a Pod,
}

/// A Workload made from pods; `first` indexes the input pod it takes its place from.
#[derive(Debug, Clone)]
pub struct PodWorkload {
    pub first: usize,
    pub workload: Workload,
    pub provenance: Provenance,
}

/// Turns every queued pod and pod group into a Workload.
pub fn workloads_for_pods(
    pods: &[PodDoc<'_>],
    catalog: &Catalog,
) -> (Vec<PodWorkload>, Vec<ManifestError>) {
    let mut groups: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, doc) in pods.iter().enumerate() {
        let meta = &doc.pod.metadata;
        let group = label(meta, labels::POD_GROUP_NAME).filter(|g| !g.is_empty());
        match group {
            Some(g) => groups
                .entry((namespace(doc.pod).to_string(), g.to_string()))
                .or_default()
                .push(i),
            None if annotation(meta, labels::POD_GROUP_TOTAL_COUNT).is_some() => {
                errors.push(error_at(
                    doc,
                    FieldProblem::at(
                        label_path(labels::POD_GROUP_NAME),
                        format!(
                            "required when the {} annotation is set",
                            labels::POD_GROUP_TOTAL_COUNT
                        ),
                    ),
                ));
            }
            None => match single_pod(doc, catalog) {
                Ok(Some(w)) => out.push(PodWorkload { first: i, ..w }),
                Ok(None) => {}
                Err(problems) => errors.extend(problems.into_iter().map(|p| error_at(doc, p))),
            },
        }
    }
    for ((_, group), members) in groups {
        match pod_group(&group, &members, pods, catalog) {
            Ok(Some(w)) => out.push(w),
            Ok(None) => {}
            Err(e) => errors.extend(e),
        }
    }
    out.sort_by_key(|w| w.first);
    (out, errors)
}

/// Kueue's Workload name for a pod that is not in a group: `pod-<name>-<hash>`.
pub fn single_pod_workload_name(meta: &ObjectMeta) -> String {
    super::jobs::names::workload_name(
        "pod",
        "Pod",
        "",
        meta.name.as_deref().unwrap_or_default(),
        meta.uid.as_deref().unwrap_or_default(),
    )
}

fn single_pod(
    doc: &PodDoc<'_>,
    catalog: &Catalog,
) -> Result<Option<PodWorkload>, Vec<FieldProblem>> {
    let meta = &doc.pod.metadata;
    let Some(queue) = queue_name(meta, catalog) else {
        tracing::info!(pod = %object(doc), "skipping Pod without a {} label", labels::QUEUE_NAME);
        return Ok(None);
    };
    let (priority_class_ref, priority) = priority(meta, catalog).map_err(|p| vec![p])?;
    let max_exec = max_exec_time(meta).map_err(|p| vec![p])?;
    let workload = Workload {
        metadata: ObjectMeta {
            name: Some(single_pod_workload_name(meta)),
            namespace: Some(namespace(doc.pod).to_string()),
            annotations: meta.annotations.clone(),
            creation_timestamp: meta.creation_timestamp.clone(),
            owner_references: Some(vec![owner(doc.pod)]),
            ..ObjectMeta::default()
        },
        spec: WorkloadSpec {
            pod_sets: vec![pod_set(default_pod_set_name(), 1, doc.pod)],
            queue_name: Some(queue),
            priority,
            priority_class_ref,
            maximum_execution_time_seconds: max_exec,
            ..WorkloadSpec::default()
        },
        status: None,
    };
    let mut provenance = Provenance::written(doc.origin.clone(), object(doc));
    provenance.route("spec.podSets[0].template.spec", "spec");
    add_label_routes(&mut provenance);
    Ok(Some(PodWorkload {
        first: 0,
        workload,
        provenance,
    }))
}

fn pod_group(
    group: &str,
    members: &[usize],
    pods: &[PodDoc<'_>],
    catalog: &Catalog,
) -> Result<Option<PodWorkload>, Vec<ManifestError>> {
    let docs: Vec<&PodDoc<'_>> = members.iter().filter_map(|&i| pods.get(i)).collect();
    let (Some(&first_index), Some(&first)) = (members.first(), docs.first()) else {
        return Ok(None);
    };
    let queue = agreed_label(first, &docs, labels::QUEUE_NAME)?;
    let queue = match queue {
        Some(q) => q,
        None => match queue_name(&first.pod.metadata, catalog) {
            Some(q) => q,
            None => {
                tracing::info!(
                    group,
                    "skipping pod group without a {} label",
                    labels::QUEUE_NAME
                );
                return Ok(None);
            }
        },
    };
    let total = total_count(&docs)?;
    agreed_label(first, &docs, labels::PRIORITY_CLASS)?;
    let (priority_class_ref, priority) =
        priority(&first.pod.metadata, catalog).map_err(|p| vec![error_at(first, p)])?;
    let max_exec = max_exec_time(&first.pod.metadata).map_err(|p| vec![error_at(first, p)])?;

    // Roles in first-seen order, then sorted by name as Kueue sorts podSets.
    let mut roles: Vec<(String, Vec<&PodDoc<'_>>)> = Vec::new();
    for doc in &docs {
        let hash = role_hash(doc.pod.spec.as_ref());
        match roles.iter_mut().find(|(h, _)| *h == hash) {
            Some((_, pods)) => pods.push(doc),
            None => roles.push((hash, vec![doc])),
        }
    }
    roles.sort_by(|a, b| a.0.cmp(&b.0));
    let present = docs.len();
    let total_path = annotation_path(labels::POD_GROUP_TOTAL_COUNT);
    if present > total {
        return Err(vec![error_at(
            first,
            FieldProblem::at(
                total_path,
                format!(
                    "pod group {group:?} has {present} pods, more than its total count {total}"
                ),
            ),
        )]);
    }
    if present < total && roles.len() > 1 {
        return Err(vec![error_at(
            first,
            FieldProblem::at(
                total_path,
                format!(
                    "pod group {group:?} is incomplete: {present} of {total} pods present in {} roles, \
                     so the size of each role is unknown; add the missing pods",
                    roles.len()
                ),
            ),
        )]);
    }

    let single_role = roles.len() == 1;
    let mut provenance = Provenance::written(first.origin.clone(), object(first));
    add_label_routes(&mut provenance);
    provenance.route("metadata.name", &label_path(labels::POD_GROUP_NAME));
    let mut pod_sets = Vec::new();
    for (i, (hash, members)) in roles.iter().enumerate() {
        let name = if single_role {
            default_pod_set_name()
        } else {
            hash.clone()
        };
        let count = if single_role { total } else { members.len() };
        let Some(&rep) = members.first() else {
            continue;
        };
        pod_sets.push(pod_set(
            name,
            i32::try_from(count).unwrap_or(i32::MAX),
            rep.pod,
        ));
        let prefix = format!("spec.podSets[{i}]");
        provenance.route_to(
            &format!("{prefix}.template.spec"),
            rep.origin.clone(),
            object(rep),
            "spec",
        );
        provenance.route_to(
            &format!("{prefix}.count"),
            rep.origin.clone(),
            object(rep),
            &total_path,
        );
    }

    let mut annotations = BTreeMap::new();
    for doc in &docs {
        for (k, v) in doc.pod.metadata.annotations.iter().flatten() {
            annotations.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    annotations.insert(IS_GROUP_WORKLOAD.to_string(), "true".to_string());
    let workload = Workload {
        metadata: ObjectMeta {
            name: Some(group.to_string()),
            namespace: Some(namespace(first.pod).to_string()),
            annotations: Some(annotations),
            creation_timestamp: docs
                .iter()
                .filter_map(|d| d.pod.metadata.creation_timestamp.clone())
                .max_by_key(|t| t.0),
            owner_references: Some(docs.iter().map(|d| owner(d.pod)).collect()),
            ..ObjectMeta::default()
        },
        spec: WorkloadSpec {
            pod_sets,
            queue_name: Some(queue),
            priority,
            priority_class_ref,
            maximum_execution_time_seconds: max_exec,
            ..WorkloadSpec::default()
        },
        status: None,
    };
    Ok(Some(PodWorkload {
        first: first_index,
        workload,
        provenance,
    }))
}

/// The group's total count: present, a positive integer, the same on every pod.
fn total_count(docs: &[&PodDoc<'_>]) -> Result<usize, Vec<ManifestError>> {
    let path = annotation_path(labels::POD_GROUP_TOTAL_COUNT);
    let mut agreed: Option<(usize, &PodDoc<'_>)> = None;
    let mut errors = Vec::new();
    for doc in docs {
        let Some(raw) = annotation(&doc.pod.metadata, labels::POD_GROUP_TOTAL_COUNT) else {
            errors.push(error_at(
                doc,
                FieldProblem::at(
                    &path,
                    format!("required when the {} label is set", labels::POD_GROUP_NAME),
                ),
            ));
            continue;
        };
        let n = match raw.trim().parse::<usize>() {
            Ok(n) if n >= 1 => n,
            _ => {
                let problem =
                    FieldProblem::at(&path, format!("{raw:?} must be a positive integer"));
                errors.push(error_at(doc, problem));
                continue;
            }
        };
        match agreed {
            None => agreed = Some((n, doc)),
            Some((m, other)) if m != n => errors.push(error_at(
                doc,
                FieldProblem::at(
                    &path,
                    format!(
                        "{n} differs from {m} on {} ({} doc {}); every pod of a group must give the same total",
                        object(other),
                        other.origin.file.display(),
                        other.origin.doc
                    ),
                ),
            )),
            Some(_) => {}
        }
    }
    match agreed {
        Some((n, _)) if errors.is_empty() => Ok(n),
        _ => Err(errors),
    }
}

/// A label every pod of the group must agree on (Kueue rejects mixed queue names).
fn agreed_label(
    first: &PodDoc<'_>,
    docs: &[&PodDoc<'_>],
    key: &str,
) -> Result<Option<String>, Vec<ManifestError>> {
    let value = label(&first.pod.metadata, key);
    let errors: Vec<ManifestError> = docs
        .iter()
        .filter(|d| label(&d.pod.metadata, key) != value)
        .map(|d| {
            error_at(
                d,
                FieldProblem::at(
                    label_path(key),
                    format!(
                        "{:?} differs from {:?} on {}; every pod of a group must agree",
                        label(&d.pod.metadata, key).unwrap_or(""),
                        value.unwrap_or(""),
                        object(first)
                    ),
                ),
            )
        })
        .collect();
    if errors.is_empty() {
        Ok(value.filter(|v| !v.is_empty()).map(str::to_owned))
    } else {
        Err(errors)
    }
}

fn pod_set(name: String, count: i32, pod: &Pod) -> PodSet {
    PodSet {
        name,
        count,
        min_count: None,
        template: std::sync::Arc::new(PodTemplateSpec {
            metadata: None,
            spec: pod.spec.clone(),
        }),
        // Kueue's pod integration reads the same TAS annotations on the pod itself.
        topology_request: pod
            .metadata
            .annotations
            .as_ref()
            .and_then(super::topology::request_from_annotations),
    }
}

/// A short stable hash of the parts of a pod spec that decide admission (Kueue's
/// `SpecShape`). Kueue hashes its Go JSON with SHA-256; wasq hashes canonical JSON with
/// FNV-1a, so the names differ from Kueue's but are equally stable.
pub fn role_hash(spec: Option<&PodSpec>) -> String {
    let default = PodSpec::default();
    let spec = spec.unwrap_or(&default);
    let containers = |cs: Option<&Vec<Container>>| -> Value {
        Value::Array(
            cs.into_iter()
                .flatten()
                .map(|c| {
                    json!({
                        "resources": {"requests": c.resources.as_ref().and_then(|r| r.requests.as_ref())},
                        "ports": c.ports,
                    })
                })
                .collect(),
        )
    };
    let mut shape = json!({
        "initContainers": containers(spec.init_containers.as_ref()),
        "containers": containers(Some(&spec.containers)),
        "nodeSelector": spec.node_selector,
        "affinity": spec.affinity,
        "tolerations": spec.tolerations,
        "runtimeClassName": spec.runtime_class_name,
        "priority": spec.priority,
        "topologySpreadConstraints": spec.topology_spread_constraints,
        "overhead": spec.overhead,
        "resourceClaims": spec.resource_claims,
    });
    if let (Some(r), Value::Object(m)) = (&spec.resources, &mut shape) {
        m.insert("resources".into(), json!(r.requests));
    }
    // serde_json maps are sorted, so this text is canonical.
    let text = shape.to_string();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{:08x}", hash >> 32)
}

fn namespace(pod: &Pod) -> &str {
    pod.metadata.namespace.as_deref().unwrap_or("default")
}

fn object(doc: &PodDoc<'_>) -> String {
    format!(
        "Pod {}/{}",
        namespace(doc.pod),
        doc.pod.metadata.name.as_deref().unwrap_or_default()
    )
}

fn owner(pod: &Pod) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: pod.metadata.name.clone().unwrap_or_default(),
        uid: pod.metadata.uid.clone().unwrap_or_default(),
        controller: None,
        block_owner_deletion: None,
    }
}

fn error_at(doc: &PodDoc<'_>, problem: FieldProblem) -> ManifestError {
    ManifestError::in_doc(doc.origin, Some(object(doc)), problem)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::strict::decode;

    fn spec(cpu: &str, image: &str) -> PodSpec {
        decode(&json!({"containers": [{"name": "c", "image": image, "resources": {"requests": {"cpu": cpu}}}]}))
            .unwrap()
    }

    #[test]
    fn role_hash_depends_only_on_admission_relevant_fields() {
        let a = role_hash(Some(&spec("1", "one")));
        assert_eq!(a.len(), 8);
        assert_eq!(
            a,
            role_hash(Some(&spec("1", "two"))),
            "the image does not matter"
        );
        assert_ne!(a, role_hash(Some(&spec("2", "one"))), "requests do");
    }
}
