//! Loading manifests: YAML files → validated [`Manifests`], or every problem found.
//!
//! Pipeline: read files (a directory means its `*.yaml`/`*.yml` files, sorted, not recursive)
//! → YAML documents ([`super::yaml`]) → typed objects by `apiVersion`/`kind`, `v1beta1`
//! converted ([`super::decode`]) → duplicate check → Jobs and Pods turned into Workloads
//! ([`super::jobs`], [`super::pods`]) → Workload defaulting ([`super::defaults`]) → validation
//! ([`super::validate`]). Errors from every stage, file and document are collected; the result
//! is all objects or all errors, never a partial set.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

pub use super::error::{LoadErrors, ManifestError};

use super::catalog::Catalog;
use super::decode::{Object, decode_document, object_label};
use super::defaults::default_workload;
use super::pods::{PodDoc, PodWorkload, workloads_for_pods};
use super::provenance::Provenance;
use super::strict::FieldProblem;
use super::types::Workload;
use super::{Manifests, Origin, validate, yaml};

/// Loads every file of `paths`; a directory stands for the `*.yaml`/`*.yml` files directly in
/// it, in name order.
pub fn load_paths(paths: &[PathBuf]) -> Result<Manifests, LoadErrors> {
    let mut errors = Vec::new();
    // Every path tried, in order, with its text if it could be read.
    let mut files: Vec<(PathBuf, Option<String>)> = Vec::new();
    for path in paths {
        let listed = if path.is_dir() {
            match yaml_files_in(path) {
                Ok(list) if !list.is_empty() => list,
                outcome => {
                    let message = match outcome {
                        Err(e) => format!("cannot list directory: {e}"),
                        Ok(_) => "directory holds no *.yaml or *.yml files".to_string(),
                    };
                    errors.push(ManifestError::in_file(path, message));
                    files.push((path.clone(), None));
                    continue;
                }
            }
        } else {
            vec![path.clone()]
        };
        for file in listed {
            match std::fs::read_to_string(&file) {
                Ok(text) => files.push((file, Some(text))),
                Err(e) => {
                    errors.push(ManifestError::in_file(&file, format!("cannot read: {e}")));
                    files.push((file, None));
                }
            }
        }
    }
    assemble(&files, errors)
}

/// Loads the text of one file named `file_name` (used in messages).
pub fn load_str(file_name: &Path, text: &str) -> Result<Manifests, LoadErrors> {
    assemble(
        &[(file_name.to_path_buf(), Some(text.to_string()))],
        Vec::new(),
    )
}

fn yaml_files_in(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
        if yaml && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

fn assemble(
    files: &[(PathBuf, Option<String>)],
    mut errors: Vec<ManifestError>,
) -> Result<Manifests, LoadErrors> {
    let objects = read_objects(files, &mut errors);
    check_duplicates(&objects, &mut errors);
    let catalog = Catalog::new(
        objects.iter().filter_map(|(_, o)| match o {
            Object::PriorityClass(pc) => Some(pc),
            _ => None,
        }),
        objects.iter().filter_map(|(_, o)| match o {
            Object::LocalQueue(lq) => Some(lq),
            _ => None,
        }),
    );
    let mut pod_workloads = pod_workloads(&objects, &catalog, &mut errors);
    let job_kinds = super::jobs::builtin();

    let mut m = Manifests::default();
    let mut workloads: Vec<(Workload, Provenance)> = Vec::new();
    for (i, (origin, object)) in objects.into_iter().enumerate() {
        let label = object.label();
        let mut report = |problems: Vec<FieldProblem>| {
            errors.extend(
                problems
                    .into_iter()
                    .map(|p| ManifestError::in_doc(&origin, Some(label.clone()), p)),
            );
        };
        match object {
            Object::Namespace(o) => {
                report(validate::namespace(&o));
                m.namespaces.push(o);
            }
            Object::Flavor(o) => {
                report(validate::resource_flavor(&o));
                m.flavors.push(o);
            }
            Object::Cohort(o) => {
                report(validate::cohort(&o));
                m.cohorts.push(o);
            }
            Object::ClusterQueue(o) => {
                report(validate::cluster_queue(&o));
                m.cluster_queues.push(o);
            }
            Object::LocalQueue(o) => {
                report(validate::local_queue(&o));
                m.local_queues.push(o);
            }
            Object::PriorityClass(o) => {
                report(validate::priority_class(&o));
                m.priority_classes.push(o);
            }
            Object::AdmissionCheck(o) => {
                report(super::checks::validate_admission_check(&o));
                m.admission_checks.push(o);
            }
            Object::ProvisioningRequestConfig(o) => {
                report(super::checks::validate_provisioning_request_config(&o));
                m.provisioning_request_configs.push(o);
            }
            Object::MultiKueueCluster(mut o) => {
                report(super::multikueue::validate_cluster(&o));
                // The simulator's worker manifests are relative to the file that names them.
                if let Some(dir) = origin.file.parent()
                    && let Some(paths) = o
                        .metadata
                        .annotations
                        .as_mut()
                        .and_then(|a| a.get_mut(super::multikueue::SIM_WORKER_MANIFESTS))
                {
                    *paths = paths
                        .split(',')
                        .map(str::trim)
                        .filter(|p| !p.is_empty())
                        .map(|p| match std::path::Path::new(p).is_relative() {
                            true => dir.join(p).display().to_string(),
                            false => p.to_string(),
                        })
                        .collect::<Vec<_>>()
                        .join(",");
                }
                m.multikueue_clusters.push(o);
            }
            Object::MultiKueueConfig(o) => {
                report(super::multikueue::validate_config(&o));
                m.multikueue_configs.push(o);
            }
            Object::Workload(o) => workloads.push((o, Provenance::written(origin, label))),
            // A child of another job (a RayJob's RayCluster) runs under its parent's Workload.
            Object::Job(job)
                if super::jobs::JobKind::controlled_by_any(&job.metadata, &job_kinds) => {}
            Object::Job(job) => match job.kind.workloads(&job.metadata, &job.value, &catalog) {
                Ok(made) => {
                    if made.is_empty() {
                        tracing::info!(job = %label, "skipping a job without a {} label", super::types::labels::QUEUE_NAME);
                    }
                    let provenance = job.kind.provenance(&origin, label.clone(), &job.value);
                    workloads.extend(made.into_iter().map(|wl| (wl, provenance.clone())));
                }
                Err(problems) => report(problems),
            },
            Object::Pod(_) => {
                if let Some(pw) = pod_workloads.remove(&i) {
                    workloads.push((pw.workload, pw.provenance));
                }
            }
            Object::Extension(e) if e.api_version == super::policy::POLICY_API_VERSION => {
                let name = e
                    .value
                    .pointer("/metadata/name")
                    .and_then(serde_json::Value::as_str);
                let label = super::decode::object_label(&e.kind, None, name);
                match super::strict::decode::<super::policy::QueuePolicy>(&e.value) {
                    Ok(mut policy) => {
                        errors.extend(
                            super::policy::validate(&policy)
                                .into_iter()
                                .map(|p| ManifestError::in_doc(&origin, Some(label.clone()), p)),
                        );
                        // A module path is relative to the file that names it.
                        if let Some(path) = policy.spec.module.path.as_mut()
                            && std::path::Path::new(path.as_str()).is_relative()
                            && let Some(dir) = origin.file.parent()
                        {
                            *path = dir.join(path.as_str()).display().to_string();
                        }
                        m.policies.push(policy);
                    }
                    Err(problems) => errors.extend(
                        problems
                            .into_iter()
                            .map(|p| ManifestError::in_doc(&origin, Some(label.clone()), p)),
                    ),
                }
            }
            Object::Extension(e) if super::decode::is_tas_object(&e) => {
                let name = e
                    .value
                    .pointer("/metadata/name")
                    .and_then(serde_json::Value::as_str);
                let label = super::decode::object_label(&e.kind, None, name);
                let mut report = |problems: Vec<FieldProblem>| {
                    errors.extend(
                        problems
                            .into_iter()
                            .map(|p| ManifestError::in_doc(&origin, Some(label.clone()), p)),
                    );
                };
                match super::topology::typed_tas_object(&e) {
                    Ok(super::topology::TasObject::Topology(t)) => {
                        report(super::topology::validate_topology(&t));
                        m.topologies.push(*t);
                    }
                    Ok(super::topology::TasObject::Node(n)) => {
                        report(super::topology::validate_node(&n));
                        m.nodes.push(*n);
                    }
                    Err(problems) => report(problems),
                }
            }
            Object::Extension(e) => m.extensions.push(e),
            Object::Configuration(c) => {
                if m.configuration.is_some() {
                    report(vec![FieldProblem::object(
                        "a second Configuration: the manifests may hold one",
                    )]);
                }
                m.configuration = Some(c);
            }
        }
    }
    check_duplicate_workloads(&workloads, &mut errors);
    for (mut wl, provenance) in workloads {
        default_workload(&mut wl, &catalog);
        for problem in validate::workload(&wl, &catalog) {
            let at = provenance.locate(problem.field.as_deref());
            errors.push(ManifestError::in_doc(
                &at.origin,
                Some(at.object),
                FieldProblem {
                    field: at.field,
                    message: problem.message,
                },
            ));
        }
        m.workloads.push(wl);
    }

    if errors.is_empty() {
        return Ok(m);
    }
    let file_rank: HashMap<&Path, usize> = files
        .iter()
        .enumerate()
        .map(|(i, (f, _))| (f.as_path(), i))
        .collect();
    errors.sort_by_key(|e| (file_rank.get(e.file.as_path()).copied(), e.doc));
    Err(LoadErrors { errors })
}

/// Every document of every file, typed; unreadable ones become errors.
fn read_objects(
    files: &[(PathBuf, Option<String>)],
    errors: &mut Vec<ManifestError>,
) -> Vec<(Origin, Object)> {
    let mut objects = Vec::new();
    for (file, text) in files {
        let Some(text) = text else { continue };
        let docs = match yaml::parse_documents(text) {
            Ok(docs) => docs,
            Err(e) => {
                let mut error = ManifestError::in_file(file, e.message);
                error.line_column = e.line_column;
                errors.push(error);
                continue;
            }
        };
        for doc in docs {
            let origin = Origin {
                file: file.clone(),
                doc: doc.number,
            };
            let values = match list_items(doc.value) {
                Ok(values) => values,
                Err(problem) => {
                    errors.push(ManifestError::in_doc(&origin, Some("List".into()), problem));
                    continue;
                }
            };
            for value in values {
                match decode_document(&origin, value) {
                    Ok(object) => objects.push((origin.clone(), object)),
                    Err(e) => errors.extend(
                        e.problems
                            .into_iter()
                            .map(|p| ManifestError::in_doc(&origin, e.object.clone(), p)),
                    ),
                }
            }
        }
    }
    objects
}

/// A `v1` `List` — what `kubectl get KIND[,KIND…] -o yaml` prints — as its items, each an
/// object of the document (errors name the document and the item's object); any other
/// document as itself.
fn list_items(value: serde_json::Value) -> Result<Vec<serde_json::Value>, FieldProblem> {
    use serde_json::Value;
    let is_list = value.get("apiVersion").and_then(Value::as_str) == Some("v1")
        && value.get("kind").and_then(Value::as_str) == Some("List");
    let mut value = value;
    let items = match (is_list, &mut value) {
        (true, Value::Object(list)) => list.remove("items"),
        _ => return Ok(vec![value]),
    };
    match items {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(FieldProblem::at("items", "expected a list of objects")),
    }
}

/// Two objects of one kind with the same namespace and name (Workloads are checked after Jobs
/// and Pods have made theirs).
fn check_duplicates(objects: &[(Origin, Object)], errors: &mut Vec<ManifestError>) {
    let mut seen: HashMap<(String, Option<String>, String), &Origin> = HashMap::new();
    for (origin, object) in objects {
        if matches!(object, Object::Workload(_)) {
            continue;
        }
        let Some(meta) = object.metadata() else {
            continue;
        };
        let Some(name) = meta.name.clone() else {
            continue;
        };
        let key = (object.kind().to_string(), meta.namespace.clone(), name);
        if let Some(first) = seen.get(&key) {
            errors.push(ManifestError::in_doc(
                origin,
                Some(object.label()),
                FieldProblem::object(format!("duplicate {}: {}", object.label(), already(first))),
            ));
        } else {
            seen.insert(key, origin);
        }
    }
}

fn check_duplicate_workloads(
    workloads: &[(Workload, Provenance)],
    errors: &mut Vec<ManifestError>,
) {
    let mut seen: HashMap<(Option<&str>, &str), &Provenance> = HashMap::new();
    for (wl, provenance) in workloads {
        let Some(name) = wl.metadata.name.as_deref() else {
            continue;
        };
        let key = (wl.metadata.namespace.as_deref(), name);
        if let Some(first) = seen.get(&key) {
            let label = object_label("Workload", key.0, Some(name));
            errors.push(ManifestError::in_doc(
                &provenance.origin,
                Some(provenance.object.clone()),
                FieldProblem::object(format!(
                    "duplicate {label}: {}{}",
                    already(&first.origin),
                    made_by(first)
                )),
            ));
        } else {
            seen.insert(key, provenance);
        }
    }
}

fn already(first: &Origin) -> String {
    format!(
        "already defined in {} doc {}",
        first.file.display(),
        first.doc
    )
}

/// ` (made from Job ns/x)` when the first Workload was not written as such.
fn made_by(p: &Provenance) -> String {
    if p.object.starts_with("Workload ") {
        String::new()
    } else {
        format!(" (made from {})", p.object)
    }
}

/// Workloads made from Pods, keyed by the index of the object whose place they take.
fn pod_workloads(
    objects: &[(Origin, Object)],
    catalog: &Catalog,
    errors: &mut Vec<ManifestError>,
) -> BTreeMap<usize, PodWorkload> {
    let (indices, docs): (Vec<usize>, Vec<PodDoc<'_>>) = objects
        .iter()
        .enumerate()
        .filter_map(|(i, (origin, o))| match o {
            Object::Pod(pod) => Some((i, PodDoc { origin, pod })),
            _ => None,
        })
        .unzip();
    let (made, problems) = workloads_for_pods(&docs, catalog);
    errors.extend(problems);
    made.into_iter()
        .filter_map(|w| Some((*indices.get(w.first)?, w)))
        .collect()
}
