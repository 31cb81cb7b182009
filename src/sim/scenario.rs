//! A scenario: manifests (plus traces and generated shapes) turned into a cluster, with each
//! workload's arrival and duration on the virtual clock.

use std::path::PathBuf;

use crate::api::{self, Manifests};
use crate::cluster::{Cluster, Millis, build_cluster};

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
}

impl Scenario {
    /// Loads every manifest under `paths` (files, or directories of `*.yaml`).
    pub fn load(paths: &[PathBuf]) -> Result<Scenario, ScenarioError> {
        let manifests = api::load::load_paths(paths)?;
        Scenario::from_manifests(manifests)
    }

    pub fn from_manifests(mut manifests: Manifests) -> Result<Scenario, ScenarioError> {
        super::extensions::expand(&mut manifests).map_err(ScenarioError::Extension)?;
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
        }
        if !errors.is_empty() {
            return Err(ScenarioError::Annotations(errors));
        }
        let cluster = build_cluster(
            &manifests,
            &|wl| t0 + offset(wl, ARRIVAL, &mut Vec::new()).unwrap_or(0),
            t0,
        )
        .map_err(ScenarioError::Build)?;
        let (arrival, durations) = cluster
            .workloads
            .iter()
            .map(|wl| {
                let get = |key: &str| wl.annotations.get(key).and_then(|v| parse_millis(v).ok());
                (t0 + get(ARRIVAL).unwrap_or(0), get(DURATION))
            })
            .unzip();
        Ok(Scenario {
            cluster,
            t0,
            arrival,
            durations,
        })
    }
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
