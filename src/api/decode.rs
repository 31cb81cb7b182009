//! One parsed document → one typed object, chosen by `apiVersion` and `kind`.
//!
//! `v1beta1` Kueue objects are converted to `v1beta2` here; Jobs and Pods stay as they are until
//! every document is read (turning them into Workloads needs the other objects). Namespaced
//! objects without `metadata.namespace` go to `default`, as `kubectl apply` would put them,
//! except LocalQueues, which must name theirs; cluster-scoped objects lose any namespace, as
//! the API server drops it.

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::jobs::{JobKind, builtin_kind};
use super::strict::{FieldProblem, decode, suggest};
use super::types::{
    ClusterQueue, Cohort, LocalQueue, ResourceFlavor, V1BETA1, V1BETA2, Workload,
    WorkloadPriorityClass,
};
use super::{Extension, Origin, v1beta1};

/// The `apiVersion` prefix of objects passed on untyped to wasq's drivers.
pub const EXTENSION_GROUP_PREFIX: &str = "sim.wasq.dev/";

const KUEUE_KINDS: [&str; 11] = [
    "ResourceFlavor",
    "Topology",
    "Cohort",
    "ClusterQueue",
    "LocalQueue",
    "WorkloadPriorityClass",
    "Workload",
    "AdmissionCheck",
    "ProvisioningRequestConfig",
    "MultiKueueConfig",
    "MultiKueueCluster",
];
const CORE_KINDS: [(&str, &str); 3] = [("v1", "Pod"), ("v1", "Namespace"), ("v1", "Node")];

/// A job of a built-in kind (`batch/v1` Job, RayJob, JobSet, PyTorchJob, LeaderWorkerSet, ...),
/// kept as written until every document is read: turning it into Workloads needs the other
/// objects.
#[derive(Debug, Clone)]
pub struct JobObject {
    pub kind: JobKind,
    pub metadata: ObjectMeta,
    /// The whole object as written (metadata scoped as `metadata`).
    pub value: Value,
}

/// Any object wasq reads.
#[derive(Debug, Clone)]
#[expect(
    clippy::large_enum_variant,
    reason = "one short-lived value per document, moved into its typed list"
)]
pub enum Object {
    Namespace(Namespace),
    Flavor(ResourceFlavor),
    Cohort(Cohort),
    ClusterQueue(ClusterQueue),
    LocalQueue(LocalQueue),
    PriorityClass(WorkloadPriorityClass),
    AdmissionCheck(super::checks::AdmissionCheck),
    ProvisioningRequestConfig(super::checks::ProvisioningRequestConfig),
    MultiKueueCluster(super::multikueue::MultiKueueCluster),
    MultiKueueConfig(super::multikueue::MultiKueueConfig),
    Workload(Workload),
    Job(JobObject),
    Pod(Pod),
    Extension(Extension),
    /// Kueue's controller `Configuration` (`config.kueue.x-k8s.io/v1beta2`).
    Configuration(super::config::Configuration),
}

impl Object {
    pub fn kind(&self) -> &str {
        match self {
            Object::Namespace(_) => "Namespace",
            Object::Flavor(_) => "ResourceFlavor",
            Object::Cohort(_) => "Cohort",
            Object::ClusterQueue(_) => "ClusterQueue",
            Object::LocalQueue(_) => "LocalQueue",
            Object::PriorityClass(_) => "WorkloadPriorityClass",
            Object::AdmissionCheck(_) => "AdmissionCheck",
            Object::ProvisioningRequestConfig(_) => "ProvisioningRequestConfig",
            Object::MultiKueueCluster(_) => "MultiKueueCluster",
            Object::MultiKueueConfig(_) => "MultiKueueConfig",
            Object::Workload(_) => "Workload",
            Object::Job(j) => &j.kind.spec.kind,
            Object::Pod(_) => "Pod",
            Object::Extension(e) => &e.kind,
            Object::Configuration(_) => "Configuration",
        }
    }

    /// The object's metadata; `None` for extensions, which are untyped.
    pub fn metadata(&self) -> Option<&ObjectMeta> {
        Some(match self {
            Object::Namespace(o) => &o.metadata,
            Object::Flavor(o) => &o.metadata,
            Object::Cohort(o) => &o.metadata,
            Object::ClusterQueue(o) => &o.metadata,
            Object::LocalQueue(o) => &o.metadata,
            Object::PriorityClass(o) => &o.metadata,
            Object::AdmissionCheck(o) => &o.metadata,
            Object::ProvisioningRequestConfig(o) => &o.metadata,
            Object::MultiKueueCluster(o) => &o.metadata,
            Object::MultiKueueConfig(o) => &o.metadata,
            Object::Workload(o) => &o.metadata,
            Object::Job(o) => &o.metadata,
            Object::Pod(o) => &o.metadata,
            Object::Extension(_) | Object::Configuration(_) => return None,
        })
    }

    /// How errors name the object: `ClusterQueue team-a`, `Workload default/sample`.
    pub fn label(&self) -> String {
        let meta = self.metadata();
        object_label(
            self.kind(),
            meta.and_then(|m| m.namespace.as_deref()),
            meta.and_then(|m| m.name.as_deref()),
        )
    }
}

/// `Kind name` or `Kind namespace/name`.
pub fn object_label(kind: &str, namespace: Option<&str>, name: Option<&str>) -> String {
    match (namespace, name) {
        (Some(ns), Some(name)) => format!("{kind} {ns}/{name}"),
        (None, Some(name)) => format!("{kind} {name}"),
        (_, None) => kind.to_string(),
    }
}

/// A document that could not be read as an object: what it seemed to be, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentError {
    pub object: Option<String>,
    pub problems: Vec<FieldProblem>,
}

/// Reads one document.
pub fn decode_document(origin: &Origin, value: Value) -> Result<Object, DocumentError> {
    let Value::Object(mut map) = value else {
        return Err(DocumentError {
            object: None,
            problems: vec![FieldProblem::object(
                "expected a Kubernetes object (a mapping with apiVersion and kind)",
            )],
        });
    };
    let meta = map.get("metadata");
    let field = |key: &str| {
        meta.and_then(|m| m.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let (name, namespace) = (field("name"), field("namespace"));
    let api_version = map.remove("apiVersion");
    let kind = map.remove("kind");
    let (api_version, kind) = match (api_version, kind) {
        (Some(Value::String(a)), Some(Value::String(k))) => (a, k),
        (a, k) => {
            let mut problems = Vec::new();
            for (field, value) in [("apiVersion", a), ("kind", k)] {
                match value {
                    None => problems.push(FieldProblem::object(format!("missing field {field:?}"))),
                    Some(Value::String(_)) => {}
                    Some(_) => problems.push(FieldProblem::at(field, "must be a string")),
                }
            }
            return Err(DocumentError {
                object: None,
                problems,
            });
        }
    };
    // Errors name namespaced objects as they will be placed (see `with_scope`).
    let namespace = match kind.as_str() {
        "Workload" | "Pod" => namespace.or_else(|| Some("default".into())),
        _ if builtin_kind(&api_version, &kind).is_some() => {
            namespace.or_else(|| Some("default".into()))
        }
        "ResourceFlavor"
        | "Topology"
        | "Node"
        | "Cohort"
        | "ClusterQueue"
        | "WorkloadPriorityClass"
        | "Namespace"
        | "AdmissionCheck"
        | "ProvisioningRequestConfig"
        | "MultiKueueCluster"
        | "MultiKueueConfig"
        | "QueuePolicy" => None,
        _ => namespace,
    };
    let label = object_label(&kind, namespace.as_deref(), name.as_deref());
    if api_version.starts_with(EXTENSION_GROUP_PREFIX) {
        return Ok(Object::Extension(Extension {
            origin: origin.clone(),
            api_version,
            kind,
            value: Value::Object(map),
        }));
    }
    let fail = |problems| DocumentError {
        object: Some(label.clone()),
        problems,
    };
    let value = Value::Object(map);
    let object = match (api_version.as_str(), kind.as_str()) {
        (V1BETA2 | V1BETA1, "ResourceFlavor") => typed(&value).map(Object::Flavor),
        (V1BETA2 | V1BETA1, "Topology") => typed::<super::topology::Topology>(&value)
            .map(|_| tas_object(origin, &api_version, &kind, value.clone())),
        (V1BETA2 | V1BETA1, "Cohort") => typed(&value).map(Object::Cohort),
        (V1BETA2 | V1BETA1, "WorkloadPriorityClass") => typed(&value).map(Object::PriorityClass),
        (V1BETA2, "AdmissionCheck") => typed(&value).map(Object::AdmissionCheck),
        (V1BETA1, "AdmissionCheck") => {
            // v1beta1 also has the deprecated `retryDelayMinutes`, which v1beta2 dropped.
            let mut v = value.clone();
            if let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut) {
                spec.remove("retryDelayMinutes");
            }
            typed(&v).map(Object::AdmissionCheck)
        }
        (V1BETA2 | V1BETA1, "ProvisioningRequestConfig") => {
            typed(&value).map(Object::ProvisioningRequestConfig)
        }
        (V1BETA2, "MultiKueueCluster") => typed(&value).map(Object::MultiKueueCluster),
        (V1BETA1, "MultiKueueCluster") => {
            typed::<v1beta1::MultiKueueCluster>(&value).map(|c| Object::MultiKueueCluster(c.into()))
        }
        (V1BETA2, "MultiKueueConfig") => typed(&value).map(Object::MultiKueueConfig),
        (V1BETA1, "MultiKueueConfig") => {
            typed::<v1beta1::MultiKueueConfig>(&value).map(|c| Object::MultiKueueConfig(c.into()))
        }
        (V1BETA2, "ClusterQueue") => typed(&value).map(Object::ClusterQueue),
        (V1BETA1, "ClusterQueue") => {
            typed::<v1beta1::ClusterQueue>(&value).map(|cq| Object::ClusterQueue(cq.into()))
        }
        (V1BETA2, "LocalQueue") => typed(&value).map(Object::LocalQueue),
        (V1BETA1, "LocalQueue") => {
            typed::<v1beta1::LocalQueue>(&value).map(|lq| Object::LocalQueue(lq.into()))
        }
        (V1BETA2, "Workload") => typed(&value).map(Object::Workload),
        (V1BETA1, "Workload") => {
            typed::<v1beta1::Workload>(&value).map(|wl| Object::Workload(wl.into()))
        }
        (a, k) if builtin_kind(a, k).is_some() => job_object(a, k, value),
        ("v1", "Pod") => typed(&value).map(Object::Pod),
        ("v1", "Namespace") => typed(&value).map(Object::Namespace),
        ("v1", "Node") => typed::<k8s_openapi::api::core::v1::Node>(&value)
            .map(|_| tas_object(origin, &api_version, &kind, value.clone())),
        (super::policy::POLICY_API_VERSION, super::policy::QUEUE_POLICY_KIND) => {
            typed::<super::policy::QueuePolicy>(&value)
                .map(|_| tas_object(origin, &api_version, &kind, value.clone()))
        }
        (super::config::CONFIG_API_VERSION, "Configuration") => typed(&value)
            .and_then(|c| {
                let problems = super::config::validate(&c);
                if problems.is_empty() {
                    Ok(c)
                } else {
                    Err(problems)
                }
            })
            .map(Object::Configuration),
        (a, k) => Err(vec![unsupported(a, k)]),
    }
    .map_err(fail)?;
    Ok(with_scope(object))
}

/// A job of a built-in kind: its metadata and pod templates are read strictly (and the whole
/// object, for the kinds Kubernetes' own types describe); the rest stays as written.
fn job_object(api_version: &str, kind: &str, value: Value) -> Result<Object, Vec<FieldProblem>> {
    match (api_version, kind) {
        ("batch/v1", "Job") => typed::<Job>(&value).map(drop)?,
        ("apps/v1", "StatefulSet") => typed::<StatefulSet>(&value).map(drop)?,
        ("apps/v1", "Deployment") => typed::<Deployment>(&value).map(drop)?,
        _ => {}
    }
    let metadata: ObjectMeta = match value.get("metadata") {
        Some(m) => decode(m).map_err(|problems| {
            problems
                .into_iter()
                .map(|p| FieldProblem {
                    field: Some(match p.field {
                        Some(f) => format!("metadata.{f}"),
                        None => "metadata".into(),
                    }),
                    message: p.message,
                })
                .collect::<Vec<_>>()
        })?,
        None => ObjectMeta::default(),
    };
    let kind = builtin_kind(api_version, kind).expect("checked by the caller");
    kind.pod_sets(&value)?;
    Ok(Object::Job(JobObject {
        kind,
        metadata,
        value,
    }))
}

/// Topology-aware scheduling's kinds (`Topology`, `v1` `Node`), read strictly here, travel as an
/// [`Extension`] that the loader types again (`load.rs`), so that drivers which do not take
/// them yet (the controller's mirror) keep matching every [`Object`] they know.
fn tas_object(origin: &Origin, api_version: &str, kind: &str, value: Value) -> Object {
    Object::Extension(Extension {
        origin: origin.clone(),
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        value,
    })
}

/// Whether an extension carries a topology-aware scheduling kind (see [`tas_object`]).
pub fn is_tas_object(e: &Extension) -> bool {
    !e.api_version.starts_with(EXTENSION_GROUP_PREFIX)
}

fn typed<T: DeserializeOwned>(value: &Value) -> Result<T, Vec<FieldProblem>> {
    decode(value)
}

fn unsupported(api_version: &str, kind: &str) -> FieldProblem {
    if KUEUE_KINDS.contains(&kind) {
        return FieldProblem::at(
            "apiVersion",
            format!(
                "unsupported apiVersion {api_version:?} for kind {kind} (supported: {V1BETA2}, {V1BETA1})"
            ),
        );
    }
    if let Some((want, _)) = CORE_KINDS.iter().find(|(_, k)| *k == kind) {
        return FieldProblem::at(
            "apiVersion",
            format!("unsupported apiVersion {api_version:?} for kind {kind} (supported: {want})"),
        );
    }
    let jobs = super::jobs::builtin();
    if let Some(job) = jobs.iter().find(|j| j.spec.kind == kind) {
        return FieldProblem::at(
            "apiVersion",
            format!(
                "unsupported apiVersion {api_version:?} for kind {kind} (supported: {})",
                job.spec.api_version
            ),
        );
    }
    let job_kinds: Vec<&str> = jobs.iter().map(|j| j.spec.kind.as_str()).collect();
    let known: Vec<&str> = KUEUE_KINDS
        .iter()
        .copied()
        .chain(job_kinds.iter().copied())
        .chain(CORE_KINDS.iter().map(|(_, k)| *k))
        .collect();
    let base = format!("unsupported kind {kind:?} (apiVersion {api_version:?})");
    if let Some(close) = suggest(kind, known.iter().copied()) {
        return FieldProblem::at("kind", format!("{base}, did you mean {close:?}?"));
    }
    FieldProblem::at(
        "kind",
        format!(
            "{base}; wasq reads {}, the Kueue Configuration, {}, QueuePolicy ({}) and sim.wasq.dev objects",
            KUEUE_KINDS.join(", "),
            jobs.iter()
                .map(|j| format!("{} ({})", j.spec.kind, j.spec.api_version))
                .chain(CORE_KINDS.iter().map(|(a, k)| format!("{k} ({a})")))
                .collect::<Vec<_>>()
                .join(", "),
            super::policy::POLICY_API_VERSION
        ),
    )
}

/// Applies namespace scoping: see the module docs.
fn with_scope(mut object: Object) -> Object {
    let meta = match &mut object {
        Object::Namespace(o) => Some((&mut o.metadata, false)),
        Object::Flavor(o) => Some((&mut o.metadata, false)),
        Object::Cohort(o) => Some((&mut o.metadata, false)),
        Object::ClusterQueue(o) => Some((&mut o.metadata, false)),
        Object::PriorityClass(o) => Some((&mut o.metadata, false)),
        Object::AdmissionCheck(o) => Some((&mut o.metadata, false)),
        Object::ProvisioningRequestConfig(o) => Some((&mut o.metadata, false)),
        Object::MultiKueueCluster(o) => Some((&mut o.metadata, false)),
        Object::MultiKueueConfig(o) => Some((&mut o.metadata, false)),
        Object::Workload(o) => Some((&mut o.metadata, true)),
        Object::Job(o) => {
            if o.metadata.namespace.as_deref().is_none_or(str::is_empty) {
                let ns = Value::String("default".into());
                if let Some(m) = o.value.get_mut("metadata").and_then(Value::as_object_mut) {
                    m.insert("namespace".into(), ns);
                }
            }
            Some((&mut o.metadata, true))
        }
        Object::Pod(o) => Some((&mut o.metadata, true)),
        Object::LocalQueue(_) | Object::Extension(_) | Object::Configuration(_) => None,
    };
    if let Some((meta, namespaced)) = meta {
        if !namespaced {
            meta.namespace = None;
        } else if meta.namespace.as_deref().is_none_or(str::is_empty) {
            meta.namespace = Some("default".into());
        }
    }
    object
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn origin() -> Origin {
        Origin {
            file: PathBuf::from("t.yaml"),
            doc: 1,
        }
    }

    #[test]
    fn dispatches_and_scopes() {
        let v = serde_json::json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": "f", "namespace": "x"}
        });
        let Object::Flavor(rf) = decode_document(&origin(), v).unwrap() else {
            panic!("not a flavor")
        };
        assert_eq!(rf.metadata.namespace, None);
    }

    #[test]
    fn unsupported_kinds_name_the_close_ones() {
        let v = serde_json::json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueu", "metadata": {"name": "q"}});
        let err = decode_document(&origin(), v).unwrap_err();
        assert_eq!(err.object.as_deref(), Some("ClusterQueu q"));
        assert_eq!(
            err.problems,
            [FieldProblem::at(
                "kind",
                r#"unsupported kind "ClusterQueu" (apiVersion "kueue.x-k8s.io/v1beta2"), did you mean "ClusterQueue"?"#
            )]
        );
    }

    #[test]
    fn extensions_keep_their_body() {
        let v = serde_json::json!({"apiVersion": "sim.wasq.dev/v1alpha1", "kind": "Trace", "spec": {"x": 1}});
        let Object::Extension(e) = decode_document(&origin(), v).unwrap() else {
            panic!("not an extension")
        };
        assert_eq!(e.kind, "Trace");
        assert_eq!(e.value, serde_json::json!({"spec": {"x": 1}}));
    }
}
