//! A scenario: manifests (plus traces and generated shapes) turned into a cluster, with each
//! workload's arrival and duration on the virtual clock.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use crate::api::{self, Manifests};
use crate::cluster::{Cluster, Millis, build_cluster_with};

use super::duration::parse_millis;
use super::{ARRIVAL, DURATION};

/// Virtual time 0 when the manifests carry no timestamp at all.
const DEFAULT_T0: Millis = 1_767_225_600_000; // 2026-01-01T00:00:00Z

#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error(transparent)]
    Load(#[from] api::load::LoadErrors),
    #[error("{}", .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"))]
    Build(Vec<crate::cluster::BuildError>),
    #[error("{}", .0.join("\n"))]
    Annotations(Vec<String>),
    #[error("{0}")]
    Extension(String),
}

/// A cluster ready to simulate.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub cluster: Cluster,
    pub t0: Millis,
    /// Arrival time per workload (absolute virtual ms).
    pub arrival: Vec<Millis>,
    pub durations: Vec<Option<Millis>>,
    /// Cost-attribution labels per workload (see [`Scenario::attribute_costs`]).
    pub labels: Vec<BTreeMap<String, String>>,
    /// The scenario's `QueuePolicy` objects (module paths made absolute): the driver binds them.
    pub policies: Vec<api::policy::QueuePolicy>,
    /// A MultiKueue manager's parts, when a MultiKueueCluster names its worker's manifests
    /// ([`api::multikueue::SIM_WORKER_MANIFESTS`]): the simulator then plays the workers
    /// ([`super::multikueue`]).
    pub multikueue: Option<ManagerParts>,
}

/// What a simulated MultiKueue manager needs beyond its cluster.
#[derive(Debug, Clone)]
pub struct ManagerParts {
    /// The Configuration's `multiKueue` section (Kueue's defaults without one).
    pub settings: api::config::MultiKueueSettings,
    pub clusters: Vec<api::multikueue::MultiKueueCluster>,
    /// The manager's Workloads as written, by `namespace/name`: what is copied to workers.
    pub workloads: HashMap<String, api::Workload>,
}

impl ManagerParts {
    /// The parts, when some MultiKueueCluster names a worker's manifests.
    fn of(m: &Manifests) -> Option<ManagerParts> {
        let named = m.multikueue_clusters.iter().any(|c| {
            c.metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(api::multikueue::SIM_WORKER_MANIFESTS))
        });
        named.then(|| ManagerParts {
            settings: m
                .configuration
                .as_ref()
                .and_then(|c| c.multi_kueue.clone())
                .unwrap_or_default(),
            clusters: m.multikueue_clusters.clone(),
            workloads: m
                .workloads
                .iter()
                .map(|wl| {
                    let ns = wl.metadata.namespace.as_deref().unwrap_or("default");
                    let name = wl.metadata.name.as_deref().unwrap_or_default();
                    (format!("{ns}/{name}"), wl.clone())
                })
                .collect(),
        })
    }
}

impl Scenario {
    /// Loads every manifest under `paths` (files, or directories of `*.yaml`).
    pub fn load(paths: &[PathBuf]) -> Result<Scenario, ScenarioError> {
        Scenario::load_with(paths, &[])
    }

    /// Loads as [`Scenario::load`], with the LocalQueue label keys `cost_labels` copied onto
    /// each workload for cost attribution (`--cost-attribution-labels`).
    pub fn load_with(paths: &[PathBuf], cost_labels: &[String]) -> Result<Scenario, ScenarioError> {
        let manifests = api::load::load_paths(paths)?;
        Scenario::from_manifests_with(manifests, cost_labels)
    }

    pub fn from_manifests(manifests: Manifests) -> Result<Scenario, ScenarioError> {
        Scenario::from_manifests_with(manifests, &[])
    }

    /// A scenario whose workloads carry their LocalQueue's `cost_labels` (the controller's
    /// cost attribution, written once in [`api::jobs::attribution`]).
    pub fn from_manifests_with(
        mut manifests: Manifests,
        cost_labels: &[String],
    ) -> Result<Scenario, ScenarioError> {
        let labels_by_key = attribute_costs(&mut manifests, cost_labels);
        let generator =
            super::extensions::take_generator(&mut manifests).map_err(ScenarioError::Extension)?;
        Scenario::build(manifests, generator, labels_by_key)
    }

    /// A generated shape alone (`wasq bench`), its workloads made one at a time.
    pub fn generated(generator: &super::generate::Generator) -> Result<Scenario, ScenarioError> {
        let manifests = super::generate::generate_objects(generator);
        Scenario::build(manifests, Some(generator.clone()), HashMap::new())
    }

    fn build(
        mut manifests: Manifests,
        generator: Option<super::generate::Generator>,
        labels_by_key: HashMap<String, BTreeMap<String, String>>,
    ) -> Result<Scenario, ScenarioError> {
        let traces =
            super::extensions::expand_lazily(&mut manifests).map_err(ScenarioError::Extension)?;
        let t0 = latest_timestamp(&manifests).unwrap_or(DEFAULT_T0);
        let mut errors = Vec::new();
        let offset = |wl: &api::Workload, key: &str, errors: &mut Vec<String>| -> Option<Millis> {
            let value = wl.metadata.annotations.as_ref()?.get(key)?;
            match parse_millis(value) {
                Ok(v) => Some(v),
                Err(e) => {
                    errors.push(format!(
                        "Workload {}/{}: metadata.annotations.{key}: {e}",
                        wl.metadata.namespace.as_deref().unwrap_or("default"),
                        wl.metadata.name.as_deref().unwrap_or_default()
                    ));
                    None
                }
            }
        };
        // Validate annotations first so that every problem is reported.
        for wl in &manifests.workloads {
            offset(wl, ARRIVAL, &mut errors);
            offset(wl, DURATION, &mut errors);
            if let Some(a) = &wl.metadata.annotations {
                for problem in super::readiness::validate(a) {
                    errors.push(format!(
                        "Workload {}/{}: {problem}",
                        wl.metadata.namespace.as_deref().unwrap_or("default"),
                        wl.metadata.name.as_deref().unwrap_or_default()
                    ));
                }
            }
        }
        // Preemption budgets: a malformed value is an error here (the controller warns).
        for cq in &manifests.cluster_queues {
            let Some(a) = &cq.metadata.annotations else {
                continue;
            };
            for problem in crate::cluster::PreemptionBudget::from_annotations(a).1 {
                errors.push(format!(
                    "ClusterQueue {}: {problem}",
                    cq.metadata.name.as_deref().unwrap_or_default()
                ));
            }
        }
        if !errors.is_empty() {
            return Err(ScenarioError::Annotations(errors));
        }
        // As in Kueue, only a node reporting Ready=True counts; one that reports nothing was
        // most likely meant to be ready.
        for n in &manifests.nodes {
            let conditions = n.status.as_ref().and_then(|s| s.conditions.as_ref());
            if !conditions.is_some_and(|c| c.iter().any(|c| c.type_ == "Ready")) {
                tracing::warn!(
                    node = n.metadata.name.as_deref().unwrap_or_default(),
                    "Node has no Ready condition, so TAS leaves it out as Kueue does; add \
                     `status.conditions: [{{type: Ready, status: 'True'}}]` to count it"
                );
            }
        }
        // A generator's and the traces' workloads are valid by construction and carry no
        // timestamp: they are made one at a time while the cluster takes them in.
        let lazy = generator.as_ref().map(super::generate::LazyWorkloads::new);
        let cluster = build_cluster_with(
            &manifests,
            merge_sorted(lazy.iter().flat_map(|l| l.sorted()), traces.into_sorted()),
            &|wl| t0 + offset(wl, ARRIVAL, &mut Vec::new()).unwrap_or(0),
            t0,
        )
        .map_err(ScenarioError::Build)?;
        let policies = std::mem::take(&mut manifests.policies);
        let multikueue = ManagerParts::of(&manifests);
        drop(manifests);
        let check_problems = super::checks::SimChecks::validate(&cluster);
        if !check_problems.is_empty() {
            return Err(ScenarioError::Annotations(check_problems));
        }
        let (arrival, durations) = cluster
            .workloads
            .iter()
            .map(|wl| {
                let get = |key: &str| wl.annotations.get(key).and_then(|v| parse_millis(v).ok());
                (t0 + get(ARRIVAL).unwrap_or(0), get(DURATION))
            })
            .unzip();
        let labels = cluster
            .workloads
            .iter()
            .map(|wl| labels_by_key.get(&wl.key).cloned().unwrap_or_default())
            .collect();
        Ok(Scenario {
            cluster,
            t0,
            arrival,
            durations,
            labels,
            policies,
            multikueue,
        })
    }
}

/// Copies each LocalQueue's `keys` labels onto its Workloads; returns each Workload's
/// attribution labels by `namespace/name`.
fn attribute_costs(
    m: &mut Manifests,
    keys: &[String],
) -> HashMap<String, BTreeMap<String, String>> {
    let mut out = HashMap::new();
    if keys.is_empty() {
        return out;
    }
    let queues: HashMap<(String, String), &BTreeMap<String, String>> = m
        .local_queues
        .iter()
        .filter_map(|lq| {
            let ns = lq.metadata.namespace.clone().unwrap_or_default();
            let name = lq.metadata.name.clone().unwrap_or_default();
            Some(((ns, name), lq.metadata.labels.as_ref()?))
        })
        .collect();
    for wl in &mut m.workloads {
        let ns = wl
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let queue = wl.spec.queue_name.clone().unwrap_or_default();
        let lq = queues.get(&(ns.clone(), queue)).copied();
        api::jobs::attribution::copy_local_queue_labels(wl, lq, keys);
        let labels = api::jobs::attribution::attribution_labels(wl, keys);
        let name = wl.metadata.name.clone().unwrap_or_default();
        out.insert(format!("{ns}/{name}"), labels);
    }
    out
}

/// The latest creation or quota-reservation timestamp in the manifests.
fn latest_timestamp(m: &Manifests) -> Option<Millis> {
    let mut latest: Option<Millis> = None;
    let mut see = |t: Millis| latest = Some(latest.map_or(t, |l| l.max(t)));
    for wl in &m.workloads {
        if let Some(t) = &wl.metadata.creation_timestamp {
            see(t.0.as_millisecond());
        }
        for c in wl.status.iter().flat_map(|s| &s.conditions) {
            if let Some(t) = &c.last_transition_time {
                see(t.0.as_millisecond());
            }
        }
    }
    latest
}

/// Two streams of workloads in namespace/name order, merged in that order.
fn merge_sorted(
    a: impl Iterator<Item = api::Workload>,
    b: impl Iterator<Item = api::Workload>,
) -> impl Iterator<Item = api::Workload> {
    let (mut a, mut b) = (a.peekable(), b.peekable());
    std::iter::from_fn(move || match (a.peek(), b.peek()) {
        (Some(x), Some(y)) => {
            let first = (&x.metadata.namespace, &x.metadata.name)
                <= (&y.metadata.namespace, &y.metadata.name);
            if first { a.next() } else { b.next() }
        }
        (Some(_), None) => a.next(),
        (None, _) => b.next(),
    })
}
