//! `sim.wasq.dev/v1alpha1` objects in manifests: `Trace` (a JSONL or CSV file of workloads,
//! see [`super::trace`]) and `Generator` (one of Kueue's performance-test shapes, see
//! [`super::generate`]). Both expand into ordinary objects before the cluster is built.
//!
//! ```yaml
//! apiVersion: sim.wasq.dev/v1alpha1
//! kind: Trace
//! metadata: {name: demo}
//! spec: {path: traces/small.jsonl, format: jsonl, namespace: default}
//! ---
//! apiVersion: sim.wasq.dev/v1alpha1
//! kind: Generator
//! metadata: {name: baseline}
//! spec: {shape: baseline, seed: 1, scale: 3}
//! ```

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::Path;

use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::api::{Extension, Manifests, PodSet, Workload, WorkloadSpec};
use crate::cluster::Millis;

use super::generate::{self, GeneratorError, GeneratorObjectSpec};
use super::trace::{self, TraceError, TraceSpec};
use super::{ARRIVAL, CLASS, DURATION};

/// The only version of the simulator group.
pub const API_VERSION: &str = "sim.wasq.dev/v1alpha1";

/// One simulated workload, as a trace row or a generator describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadRecord {
    pub namespace: String,
    pub name: String,
    /// LocalQueue name.
    pub queue: String,
    pub priority: Option<i32>,
    /// Virtual ms after time 0.
    pub arrival: Millis,
    pub duration: Option<Millis>,
    pub class: Option<String>,
    pub pod_sets: Vec<PodSetRecord>,
}

/// A pod set: `count` pods, each requesting `requests` (resource name → quantity as written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodSetRecord {
    pub name: String,
    pub count: i32,
    pub requests: BTreeMap<String, String>,
}

/// Why an extension object could not be expanded.
#[derive(Debug, thiserror::Error)]
pub enum ExtensionError {
    #[error("unsupported apiVersion {0:?} (use {API_VERSION})")]
    Version(String),
    #[error("unsupported kind {0:?} (use Trace or Generator)")]
    Kind(String),
    #[error("invalid object: {0}")]
    Object(#[source] serde_json::Error),
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Trace(Vec<TraceError>),
    #[error("spec.{0}")]
    Generator(#[from] GeneratorError),
}

/// The body of an extension object (without `apiVersion`/`kind`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Object<S> {
    /// Only `metadata.name` is used, read from the raw value for error labels.
    #[serde(default, rename = "metadata")]
    _metadata: serde::de::IgnoredAny,
    spec: S,
}

/// Replaces every simulator extension object with the objects it stands for. Every problem of
/// every object is reported, one per line, each naming the manifest document it comes from.
pub fn expand(manifests: &mut Manifests) -> Result<(), String> {
    expand_with(manifests, false).map(|_| ())
}

/// The workloads of `Trace` objects, kept as their records (a few hundred bytes each, not a
/// `Workload` object's kilobytes) and made one at a time, in namespace/name order, while the
/// cluster takes them in.
#[derive(Debug, Default)]
pub struct TraceWorkloads {
    /// Sorted by namespace/name.
    records: Vec<WorkloadRecord>,
}

impl TraceWorkloads {
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The workloads in namespace/name order, each record dropped once made.
    pub fn into_sorted(mut self) -> impl Iterator<Item = Workload> {
        self.records
            .sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        self.records.into_iter().map(WorkloadRecord::into_workload)
    }
}

/// [`expand`], but the workloads of `Trace` objects are returned as records instead of added
/// (see [`TraceWorkloads`]); the errors are the same.
pub fn expand_lazily(manifests: &mut Manifests) -> Result<TraceWorkloads, String> {
    expand_with(manifests, true)
}

/// [`expand`] (`lazy` false) or [`expand_lazily`].
fn expand_with(manifests: &mut Manifests, lazy: bool) -> Result<TraceWorkloads, String> {
    let extensions = std::mem::take(&mut manifests.extensions);
    let mut errors = Vec::new();
    let mut added: Vec<(String, Added)> = Vec::new();
    let mut records: Vec<WorkloadRecord> = Vec::new();
    for ext in &extensions {
        let label = label(ext);
        let expanded = match trace_spec(ext) {
            Some(spec) => spec.and_then(|(spec, base)| {
                trace::load(&spec, base)
                    .map(Expanded::Records)
                    .map_err(ExtensionError::Trace)
            }),
            None => expand_one(ext).map(|m| Expanded::Objects(Box::new(m))),
        };
        match expanded {
            Ok(Expanded::Objects(objects)) => {
                let start = manifests.workloads.len();
                append(manifests, *objects);
                added.push((label, Added::Workloads(start..manifests.workloads.len())));
            }
            Ok(Expanded::Records(r)) if !lazy => {
                let start = manifests.workloads.len();
                manifests
                    .workloads
                    .extend(r.into_iter().map(WorkloadRecord::into_workload));
                added.push((label, Added::Workloads(start..manifests.workloads.len())));
            }
            Ok(Expanded::Records(r)) => {
                let start = records.len();
                records.extend(r);
                added.push((label, Added::Records(start..records.len())));
            }
            Err(ExtensionError::Trace(errs)) => {
                errors.extend(errs.iter().map(|e| format!("{label}: {e}")));
            }
            Err(e) => errors.push(format!("{label}: {e}")),
        }
    }
    if !added.is_empty() {
        errors.extend(duplicate_workloads(manifests, &records, &added));
    }
    if !errors.is_empty() {
        return Err(errors.join("\n"));
    }
    Ok(TraceWorkloads { records })
}

/// What one extension object expanded into.
enum Expanded {
    Objects(Box<Manifests>),
    Records(Vec<WorkloadRecord>),
}

/// Where an extension's workloads went: a range of the manifests' workloads or of the trace
/// records.
enum Added {
    Workloads(Range<usize>),
    Records(Range<usize>),
}

/// A `Trace` object's spec and the directory its path is relative to; `None` for any other
/// object.
fn trace_spec(ext: &Extension) -> Option<Result<(TraceSpec, &Path), ExtensionError>> {
    if ext.api_version != API_VERSION || ext.kind != "Trace" {
        return None;
    }
    let base = ext.origin.file.parent().unwrap_or(Path::new(""));
    Some(spec_of(ext).map(|spec| (spec, base)))
}

/// Takes a lone `Generator` object out of the manifests, adding the objects it stands for but
/// its workloads, which the caller makes one at a time ([`generate::LazyWorkloads`]) so that a
/// large shape is never held whole. With no Generator, or several (expanded as usual by
/// [`expand`]), nothing is taken.
pub fn take_generator(manifests: &mut Manifests) -> Result<Option<generate::Generator>, String> {
    let mut generators = manifests
        .extensions
        .iter()
        .enumerate()
        .filter(|(_, e)| e.api_version == API_VERSION && e.kind == "Generator");
    let (Some((index, _)), None) = (generators.next(), generators.next()) else {
        return Ok(None);
    };
    let ext = manifests.extensions.remove(index);
    let generator = generator_of(&ext).map_err(|e| format!("{}: {e}", label(&ext)))?;
    append(manifests, generate::generate_objects(&generator));
    Ok(Some(generator))
}

/// The objects one extension stands for.
pub fn expand_one(ext: &Extension) -> Result<Manifests, ExtensionError> {
    if ext.api_version != API_VERSION {
        return Err(ExtensionError::Version(ext.api_version.clone()));
    }
    match ext.kind.as_str() {
        "Trace" => {
            let spec: TraceSpec = spec_of(ext)?;
            let base = ext.origin.file.parent().unwrap_or(Path::new(""));
            let records = trace::load(&spec, base).map_err(ExtensionError::Trace)?;
            Ok(Manifests {
                workloads: records
                    .into_iter()
                    .map(WorkloadRecord::into_workload)
                    .collect(),
                ..Manifests::default()
            })
        }
        "Generator" => Ok(generate::generate_with(&generator_of(ext)?)),
        "NodeInventory" => {
            let spec: super::nodes::NodeInventorySpec = spec_of(ext)?;
            Ok(super::nodes::generate(&spec))
        }
        other => Err(ExtensionError::Kind(other.to_string())),
    }
}

/// The generator a `Generator` object stands for.
pub fn generator_of(ext: &Extension) -> Result<generate::Generator, ExtensionError> {
    if ext.api_version != API_VERSION {
        return Err(ExtensionError::Version(ext.api_version.clone()));
    }
    if ext.kind != "Generator" {
        return Err(ExtensionError::Kind(ext.kind.clone()));
    }
    let spec: GeneratorObjectSpec = spec_of(ext)?;
    Ok(spec.validate()?)
}

fn spec_of<S: DeserializeOwned>(ext: &Extension) -> Result<S, ExtensionError> {
    Object::<S>::deserialize(&ext.value)
        .map(|o| o.spec)
        .map_err(ExtensionError::Object)
}

/// `file doc N: Kind name`, how errors name an extension object.
fn label(ext: &Extension) -> String {
    let name = ext
        .value
        .pointer("/metadata/name")
        .and_then(serde_json::Value::as_str);
    let object = match name {
        Some(n) => format!("{} {n}", ext.kind),
        None => ext.kind.clone(),
    };
    format!(
        "{} doc {}: {object}",
        ext.origin.file.display(),
        ext.origin.doc
    )
}

fn append(into: &mut Manifests, from: Manifests) {
    let Manifests {
        namespaces,
        flavors,
        cohorts,
        cluster_queues,
        local_queues,
        priority_classes,
        admission_checks,
        provisioning_request_configs,
        multikueue_clusters,
        multikueue_configs,
        workloads,
        extensions,
        configuration,
        topologies,
        nodes,
        policies,
    } = from;
    into.policies.extend(policies);
    into.topologies.extend(topologies);
    into.nodes.extend(nodes);
    into.admission_checks.extend(admission_checks);
    into.provisioning_request_configs
        .extend(provisioning_request_configs);
    into.multikueue_clusters.extend(multikueue_clusters);
    into.multikueue_configs.extend(multikueue_configs);
    into.namespaces.extend(namespaces);
    into.flavors.extend(flavors);
    into.cohorts.extend(cohorts);
    into.cluster_queues.extend(cluster_queues);
    into.local_queues.extend(local_queues);
    into.priority_classes.extend(priority_classes);
    into.workloads.extend(workloads);
    into.extensions.extend(extensions);
    if configuration.is_some() {
        into.configuration = configuration;
    }
}

/// Workloads an extension added whose `namespace/name` is already taken.
fn duplicate_workloads(
    m: &Manifests,
    records: &[WorkloadRecord],
    added: &[(String, Added)],
) -> Vec<String> {
    let key = |i: usize| {
        let meta = &m.workloads[i].metadata;
        (
            meta.namespace.as_deref().unwrap_or("default"),
            meta.name.as_deref().unwrap_or_default(),
        )
    };
    let first_added = added
        .iter()
        .find_map(|(_, a)| match a {
            Added::Workloads(r) => Some(r.start),
            Added::Records(_) => None,
        })
        .unwrap_or(m.workloads.len());
    let mut seen: HashMap<(&str, &str), Option<&str>> =
        (0..first_added).map(|i| (key(i), None)).collect();
    let mut errors = Vec::new();
    for (label, range) in added {
        let keys: Box<dyn Iterator<Item = (&str, &str)>> = match range {
            Added::Workloads(r) => Box::new(r.clone().map(key)),
            Added::Records(r) => Box::new(
                records[r.clone()]
                    .iter()
                    .map(|w| (w.namespace.as_str(), w.name.as_str())),
            ),
        };
        for (ns, name) in keys {
            if let Some(first) = seen.insert((ns, name), Some(label)) {
                let first = first.unwrap_or("the manifests");
                errors.push(format!(
                    "{label}: Workload {ns}/{name} is also defined by {first}"
                ));
            }
        }
    }
    errors
}

impl WorkloadRecord {
    /// The `Workload` object: one container per pod set carrying the requests, and the
    /// arrival, duration and class annotations.
    pub fn into_workload(self) -> Workload {
        let mut annotations = BTreeMap::new();
        annotations.insert(ARRIVAL.to_string(), format!("{}ms", self.arrival));
        if let Some(d) = self.duration {
            annotations.insert(DURATION.to_string(), format!("{d}ms"));
        }
        if let Some(c) = self.class {
            annotations.insert(CLASS.to_string(), c);
        }
        let pod_sets = self
            .pod_sets
            .into_iter()
            .map(|ps| PodSet {
                template: std::sync::Arc::new(pod_template(ps.requests)),
                name: ps.name,
                count: ps.count,
                ..PodSet::default()
            })
            .collect();
        Workload {
            metadata: ObjectMeta {
                name: Some(self.name),
                namespace: Some(self.namespace),
                annotations: Some(annotations),
                ..ObjectMeta::default()
            },
            spec: WorkloadSpec {
                pod_sets,
                queue_name: Some(self.queue),
                priority: self.priority,
                ..WorkloadSpec::default()
            },
            status: None,
        }
    }
}

fn pod_template(requests: BTreeMap<String, String>) -> PodTemplateSpec {
    let requests = requests
        .into_iter()
        .map(|(r, q)| (r, K8sQuantity(q)))
        .collect();
    PodTemplateSpec {
        metadata: None,
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "main".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(requests),
                    ..ResourceRequirements::default()
                }),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
    }
}
