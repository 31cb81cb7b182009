//! `Generator`: Kueue's scheduler performance-test shapes
//! (`test/performance/scheduler/configs/{baseline,large-scale}/generator.yaml`) as objects.
//!
//! Both shapes: `C` cohorts × `Q` ClusterQueues, each ClusterQueue with one flavor (`default`),
//! cpu nominalQuota 20 and borrowingLimit 100, `reclaimWithinCohort: Any`,
//! `withinClusterQueue: LowerPriority`, `namespaceSelector: {}`, and its own namespace and
//! LocalQueue (both named after it). Each ClusterQueue gets three workload streams of one-pod
//! workloads, sized and prioritised alike in both shapes:
//!
//! | class    | cpu | priority | baseline: count / every / runs | large-scale: count / every / runs |
//! |----------|-----|----------|--------------------------------|-----------------------------------|
//! | `small`  | 1   | 50       | 350 / 100ms / 200ms            | 35 / 60ms / 150ms                 |
//! | `medium` | 5   | 100      | 100 / 500ms / 500ms            | 11 / 300ms / 350ms                |
//! | `large`  | 20  | 200      | 50 / 1200ms / 1s               | 4 / 700ms / 700ms                 |
//!
//! baseline: 5 × 6 = 30 ClusterQueues, 15,000 workloads; large-scale: 10 × 100 = 1,000
//! ClusterQueues, 50,000 workloads.
//!
//! As in Kueue's runner, every (ClusterQueue, stream) pair is its own clock: the `i`-th
//! workload (0-based) arrives at `(i + 1) × interval`. Names follow Kueue's: cohort
//! `cohort-<c>`, ClusterQueue `cq-0-<q>-cohort-<c>`, workload `<class>-<stream>-<i>-0`. With
//! `seed`, each stream starts at a pseudo-random phase in `[0, interval)` (Kueue's streams are
//! goroutines that do not start in lockstep); without it all streams are in phase. Output is a
//! pure function of the spec. Workloads carry `sim.wasq.dev/class` = their class and
//! ClusterQueues `sim.wasq.dev/class` = `cq`, Kueue's class names.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use serde::Deserialize;

use crate::api::{
    ClusterQueue, ClusterQueuePreemption, ClusterQueueSpec, FlavorQuotas, LocalQueue,
    LocalQueueSpec, Manifests, Quantity, ReclaimWithinCohort, ResourceFlavor, ResourceGroup,
    ResourceQuota, WithinClusterQueue,
};
use crate::cluster::Millis;

use super::CLASS;
use super::extensions::{PodSetRecord, WorkloadRecord};

/// The flavor every generated ClusterQueue uses.
pub const FLAVOR: &str = "default";
/// The `sim.wasq.dev/class` of generated ClusterQueues (Kueue's `className`).
pub const CQ_CLASS: &str = "cq";

/// A Kueue performance-test shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    Baseline,
    LargeScale,
}

/// The `spec` of a `Generator` object.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorSpec {
    pub shape: Shape,
    #[serde(default)]
    pub seed: Option<u64>,
}

/// One stream of identical workloads per ClusterQueue.
#[derive(Debug, Clone, Copy)]
pub struct WorkloadSet {
    pub class: &'static str,
    pub count: u32,
    pub interval: Millis,
    pub runtime: Millis,
    pub priority: i32,
    /// Whole cpus per workload (one pod).
    pub cpu: i64,
}

/// The numbers of a shape.
#[derive(Debug, Clone, Copy)]
pub struct ShapeConfig {
    pub cohorts: usize,
    pub queues_per_cohort: usize,
    pub nominal_cpu: i64,
    pub borrowing_limit_cpu: i64,
    pub sets: [WorkloadSet; 3],
}

const fn set(
    class: &'static str,
    count: u32,
    interval: Millis,
    runtime: Millis,
    priority: i32,
    cpu: i64,
) -> WorkloadSet {
    WorkloadSet {
        class,
        count,
        interval,
        runtime,
        priority,
        cpu,
    }
}

impl Shape {
    pub fn config(self) -> ShapeConfig {
        match self {
            Shape::Baseline => ShapeConfig {
                cohorts: 5,
                queues_per_cohort: 6,
                nominal_cpu: 20,
                borrowing_limit_cpu: 100,
                sets: [
                    set("small", 350, 100, 200, 50, 1),
                    set("medium", 100, 500, 500, 100, 5),
                    set("large", 50, 1200, 1000, 200, 20),
                ],
            },
            Shape::LargeScale => ShapeConfig {
                cohorts: 10,
                queues_per_cohort: 100,
                nominal_cpu: 20,
                borrowing_limit_cpu: 100,
                sets: [
                    set("small", 35, 60, 150, 50, 1),
                    set("medium", 11, 300, 350, 100, 5),
                    set("large", 4, 700, 700, 200, 20),
                ],
            },
        }
    }
}

/// The objects of a shape: one ResourceFlavor, and per ClusterQueue a namespace, a LocalQueue
/// and its workloads (cohorts are implicit, as in Kueue's runner).
pub fn generate(spec: &GeneratorSpec) -> Manifests {
    let config = spec.shape.config();
    let n_cq = config.cohorts * config.queues_per_cohort;
    let per_cq: usize = config.sets.iter().map(|s| s.count as usize).sum();
    let mut m = Manifests {
        flavors: vec![ResourceFlavor {
            metadata: named(FLAVOR),
            ..ResourceFlavor::default()
        }],
        ..Manifests::default()
    };
    m.namespaces.reserve(n_cq);
    m.cluster_queues.reserve(n_cq);
    m.local_queues.reserve(n_cq);
    m.workloads.reserve(n_cq * per_cq);
    let mut rng = spec.seed.map(SplitMix64);
    for c in 0..config.cohorts {
        let cohort = format!("cohort-{c}");
        for q in 0..config.queues_per_cohort {
            let name = format!("cq-0-{q}-{cohort}");
            m.cluster_queues
                .push(cluster_queue(&name, &cohort, &config));
            m.namespaces.push(Namespace {
                metadata: named(&name),
                ..Namespace::default()
            });
            m.local_queues.push(LocalQueue {
                metadata: ObjectMeta {
                    namespace: Some(name.clone()),
                    ..named(&name)
                },
                spec: LocalQueueSpec {
                    cluster_queue: name.clone(),
                    ..LocalQueueSpec::default()
                },
                status: None,
            });
            for (s, ws) in config.sets.iter().enumerate() {
                let phase = rng
                    .as_mut()
                    .map_or(0, |r| r.below(ws.interval as u64) as Millis);
                for i in 0..ws.count {
                    m.workloads.push(workload(&name, s, i, ws, phase));
                }
            }
        }
    }
    m
}

fn named(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        ..ObjectMeta::default()
    }
}

fn cluster_queue(name: &str, cohort: &str, config: &ShapeConfig) -> ClusterQueue {
    ClusterQueue {
        metadata: ObjectMeta {
            annotations: Some(BTreeMap::from([(CLASS.to_string(), CQ_CLASS.to_string())])),
            ..named(name)
        },
        spec: ClusterQueueSpec {
            resource_groups: vec![ResourceGroup {
                covered_resources: vec!["cpu".into()],
                flavors: vec![FlavorQuotas {
                    name: FLAVOR.into(),
                    resources: vec![ResourceQuota {
                        name: "cpu".into(),
                        nominal_quota: Quantity::units(config.nominal_cpu),
                        borrowing_limit: Some(Quantity::units(config.borrowing_limit_cpu)),
                        lending_limit: None,
                    }],
                }],
            }],
            cohort_name: Some(cohort.to_string()),
            namespace_selector: Some(LabelSelector::default()),
            preemption: Some(ClusterQueuePreemption {
                reclaim_within_cohort: Some(ReclaimWithinCohort::Any),
                within_cluster_queue: Some(WithinClusterQueue::LowerPriority),
                borrow_within_cohort: None,
            }),
            ..ClusterQueueSpec::default()
        },
        status: None,
    }
}

fn workload(
    cq: &str,
    set_index: usize,
    i: u32,
    ws: &WorkloadSet,
    phase: Millis,
) -> crate::api::Workload {
    WorkloadRecord {
        namespace: cq.to_string(),
        name: format!("{}-{set_index}-{i}-0", ws.class),
        queue: cq.to_string(),
        priority: Some(ws.priority),
        arrival: phase + (i64::from(i) + 1) * ws.interval,
        duration: Some(ws.runtime),
        class: Some(ws.class.to_string()),
        pod_sets: vec![PodSetRecord {
            name: crate::api::default_pod_set_name(),
            count: 1,
            requests: BTreeMap::from([("cpu".to_string(), ws.cpu.to_string())]),
        }],
    }
    .into_workload()
}

/// A tiny deterministic generator (SplitMix64), so that output never depends on a crate's
/// algorithm choices.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform enough in `[0, n)` for phases (n ≥ 1).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_have_kueue_counts() {
        let spec = GeneratorSpec {
            shape: Shape::Baseline,
            seed: None,
        };
        let m = generate(&spec);
        assert_eq!(m.cluster_queues.len(), 30);
        assert_eq!(m.workloads.len(), 15_000);
        let first = &m.workloads[0];
        assert_eq!(first.metadata.name.as_deref(), Some("small-0-0-0"));
        assert_eq!(
            first.metadata.annotations.as_ref().unwrap()[super::super::ARRIVAL],
            "100ms"
        );
    }

    #[test]
    fn seeded_phases_are_deterministic_and_bounded() {
        let spec = GeneratorSpec {
            shape: Shape::Baseline,
            seed: Some(7),
        };
        let (a, b) = (generate(&spec), generate(&spec));
        assert_eq!(a.workloads, b.workloads);
        let arrival: Millis = a.workloads[0].metadata.annotations.as_ref().unwrap()
            [super::super::ARRIVAL]
            .trim_end_matches("ms")
            .parse()
            .unwrap();
        assert!((100..200).contains(&arrival));
    }
}
