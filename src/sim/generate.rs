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
//!
//! A `Generator` object may scale a shape (`scale`: cohorts multiplied, so that the first
//! cohorts are the shape's own, workload for workload) and replace any of its numbers:
//! `cohorts`, `queuesPerCohort`, `quota` (nominal and borrowing limit, whole cpus) and the
//! streams (`classes`: name, count per ClusterQueue, interval, runtime, priority, cpu) — see
//! [`GeneratorObjectSpec`].

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

/// One of Kueue's shapes as it is (what `wasq bench --driver controller` generates).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorSpec {
    pub shape: Shape,
    #[serde(default)]
    pub seed: Option<u64>,
}

/// The `spec` of a `Generator` object as written: a Kueue shape, scaled and with any of its
/// numbers replaced. Without `shape`, `cohorts`, `queuesPerCohort` and `classes` are required.
///
/// ```yaml
/// spec:
///   shape: large-scale
///   scale: 10              # cohorts × 10
///   seed: 1
///   queuesPerCohort: 50
///   quota: {nominal: 20, borrowingLimit: 100}   # whole cpus per ClusterQueue
///   classes:
///   - {name: small, count: 35, interval: 60ms, runtime: 150ms, priority: 50, cpu: 1}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GeneratorObjectSpec {
    #[serde(default)]
    pub shape: Option<Shape>,
    #[serde(default)]
    pub seed: Option<u64>,
    /// Multiplies the number of cohorts (default 1).
    #[serde(default)]
    pub scale: Option<u32>,
    #[serde(default)]
    pub cohorts: Option<usize>,
    #[serde(default)]
    pub queues_per_cohort: Option<usize>,
    #[serde(default)]
    pub quota: Option<QuotaSpec>,
    /// Replaces the shape's streams (all of them).
    #[serde(default)]
    pub classes: Option<Vec<ClassSpec>>,
}

/// Per-ClusterQueue cpu quota, whole cpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct QuotaSpec {
    #[serde(default)]
    pub nominal: Option<i64>,
    #[serde(default)]
    pub borrowing_limit: Option<i64>,
}

/// One stream per ClusterQueue, as written.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClassSpec {
    pub name: String,
    /// Workloads per ClusterQueue.
    pub count: u32,
    /// Time between two arrivals (`60ms`, `1.5s`).
    pub interval: String,
    /// How long each runs once admitted.
    pub runtime: String,
    #[serde(default)]
    pub priority: i32,
    /// Whole cpus per workload (one pod).
    pub cpu: i64,
}

/// Why a `Generator` spec cannot be generated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GeneratorError {
    #[error("{field}: {message}")]
    Field { field: String, message: String },
}

fn field_error(field: impl Into<String>, message: impl Into<String>) -> GeneratorError {
    GeneratorError::Field {
        field: field.into(),
        message: message.into(),
    }
}

/// One stream of identical workloads per ClusterQueue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadSet {
    pub class: String,
    pub count: u32,
    pub interval: Millis,
    pub runtime: Millis,
    pub priority: i32,
    /// Whole cpus per workload (one pod).
    pub cpu: i64,
}

/// The numbers of a shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeConfig {
    pub cohorts: usize,
    pub queues_per_cohort: usize,
    pub nominal_cpu: i64,
    pub borrowing_limit_cpu: i64,
    pub sets: Vec<WorkloadSet>,
}

/// A validated generator: the numbers and the phase seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generator {
    pub config: ShapeConfig,
    pub seed: Option<u64>,
    /// The Kueue shape it starts from, if any (its thresholds apply to the classes it keeps).
    pub base: Option<Shape>,
    /// The cohort multiplier it was written with (1 = as written).
    pub scale: u32,
}

fn set(
    class: &str,
    count: u32,
    interval: Millis,
    runtime: Millis,
    priority: i32,
    cpu: i64,
) -> WorkloadSet {
    WorkloadSet {
        class: class.to_string(),
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
                sets: vec![
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
                sets: vec![
                    set("small", 35, 60, 150, 50, 1),
                    set("medium", 11, 300, 350, 100, 5),
                    set("large", 4, 700, 700, 200, 20),
                ],
            },
        }
    }
}

impl From<&GeneratorSpec> for Generator {
    fn from(spec: &GeneratorSpec) -> Generator {
        Generator {
            config: spec.shape.config(),
            seed: spec.seed,
            base: Some(spec.shape),
            scale: 1,
        }
    }
}

impl Generator {
    /// A Kueue shape with its cohorts multiplied by `scale` (≥ 1): the first cohorts are the
    /// shape's own, workload for workload.
    pub fn scaled(
        shape: Shape,
        scale: u32,
        seed: Option<u64>,
    ) -> Result<Generator, GeneratorError> {
        GeneratorObjectSpec {
            shape: Some(shape),
            seed,
            scale: Some(scale),
            cohorts: None,
            queues_per_cohort: None,
            quota: None,
            classes: None,
        }
        .validate()
    }

    /// ClusterQueues it makes.
    pub fn cluster_queues(&self) -> usize {
        self.config.cohorts * self.config.queues_per_cohort
    }

    /// Workloads it makes.
    pub fn workloads(&self) -> usize {
        let per_cq: usize = self.config.sets.iter().map(|s| s.count as usize).sum();
        self.cluster_queues() * per_cq
    }

    /// A short name for reports: `large-scale`, `large-scale x10`, `custom`.
    pub fn name(&self) -> String {
        let base = match self.base {
            Some(Shape::Baseline) => "baseline",
            Some(Shape::LargeScale) => "large-scale",
            None => "custom",
        };
        let custom = self.base.is_some_and(|b| {
            let mut c = b.config();
            c.cohorts *= self.scale as usize;
            c != self.config
        });
        match (self.scale, custom) {
            (1, false) => base.to_string(),
            (s, false) => format!("{base} x{s}"),
            (1, true) => format!("{base} (customised)"),
            (s, true) => format!("{base} x{s} (customised)"),
        }
    }
}

/// Workloads per generator at most (the names and the virtual clock stay well within range).
const MAX_WORKLOADS: usize = 100_000_000;

impl GeneratorObjectSpec {
    /// The generator this spec stands for, or every problem with it.
    pub fn validate(&self) -> Result<Generator, GeneratorError> {
        let base = self.shape.map(Shape::config);
        let missing = |field: &str| {
            field_error(
                field,
                "required when no shape is given (shape: baseline or large-scale)",
            )
        };
        let scale = self.scale.unwrap_or(1);
        if scale == 0 {
            return Err(field_error("scale", "must be at least 1"));
        }
        let cohorts = self
            .cohorts
            .or(base.as_ref().map(|b| b.cohorts))
            .ok_or_else(|| missing("cohorts"))?;
        let queues_per_cohort = self
            .queues_per_cohort
            .or(base.as_ref().map(|b| b.queues_per_cohort))
            .ok_or_else(|| missing("queuesPerCohort"))?;
        if cohorts == 0 {
            return Err(field_error("cohorts", "must be at least 1"));
        }
        if queues_per_cohort == 0 {
            return Err(field_error("queuesPerCohort", "must be at least 1"));
        }
        let nominal_cpu = self
            .quota
            .and_then(|q| q.nominal)
            .or(base.as_ref().map(|b| b.nominal_cpu))
            .unwrap_or(20);
        let borrowing_limit_cpu = self
            .quota
            .and_then(|q| q.borrowing_limit)
            .or(base.as_ref().map(|b| b.borrowing_limit_cpu))
            .unwrap_or(100);
        if nominal_cpu < 0 {
            return Err(field_error("quota.nominal", "must not be negative"));
        }
        if borrowing_limit_cpu < 0 {
            return Err(field_error("quota.borrowingLimit", "must not be negative"));
        }
        let sets = match &self.classes {
            Some(classes) => classes
                .iter()
                .enumerate()
                .map(|(i, c)| c.validate(i))
                .collect::<Result<Vec<_>, _>>()?,
            None => base
                .as_ref()
                .map(|b| b.sets.clone())
                .ok_or_else(|| missing("classes"))?,
        };
        if sets.is_empty() {
            return Err(field_error("classes", "at least one class is needed"));
        }
        for (i, s) in sets.iter().enumerate() {
            if sets[..i].iter().any(|o| o.class == s.class) {
                return Err(field_error(
                    format!("classes[{i}].name"),
                    format!("{:?} is used twice", s.class),
                ));
            }
        }
        let cohorts = cohorts
            .checked_mul(scale as usize)
            .ok_or_else(|| field_error("scale", "too large"))?;
        let generator = Generator {
            config: ShapeConfig {
                cohorts,
                queues_per_cohort,
                nominal_cpu,
                borrowing_limit_cpu,
                sets,
            },
            seed: self.seed,
            base: self.shape,
            scale,
        };
        let per_cq: usize = generator.config.sets.iter().map(|s| s.count as usize).sum();
        if generator
            .cluster_queues()
            .checked_mul(per_cq)
            .is_none_or(|n| n > MAX_WORKLOADS)
        {
            return Err(field_error(
                "scale",
                format!("more than {MAX_WORKLOADS} workloads"),
            ));
        }
        Ok(generator)
    }
}

impl ClassSpec {
    fn validate(&self, i: usize) -> Result<WorkloadSet, GeneratorError> {
        let at = |f: &str| format!("classes[{i}].{f}");
        crate::api::names::dns_label(&self.name).map_err(|e| field_error(at("name"), e))?;
        let millis = |f: &str, v: &str| {
            crate::api::duration::parse_millis(v).map_err(|e| field_error(at(f), e))
        };
        let interval = millis("interval", &self.interval)?;
        let runtime = millis("runtime", &self.runtime)?;
        if interval <= 0 {
            return Err(field_error(at("interval"), "must be longer than 0ms"));
        }
        if self.cpu <= 0 {
            return Err(field_error(at("cpu"), "must be at least 1"));
        }
        Ok(set(
            &self.name,
            self.count,
            interval,
            runtime,
            self.priority,
            self.cpu,
        ))
    }
}

/// The objects of a shape: one ResourceFlavor, and per ClusterQueue a namespace, a LocalQueue
/// and its workloads (cohorts are implicit, as in Kueue's runner).
pub fn generate(spec: &GeneratorSpec) -> Manifests {
    generate_with(&Generator::from(spec))
}

/// The objects of any generator (see [`generate`]).
pub fn generate_with(generator: &Generator) -> Manifests {
    let mut m = generate_objects(generator);
    let lazy = LazyWorkloads::new(generator);
    m.workloads.reserve(generator.workloads());
    for cq in 0..generator.cluster_queues() {
        for (s, ws) in generator.config.sets.iter().enumerate() {
            for i in 0..ws.count {
                m.workloads.push(lazy.workload(cq, s, i));
            }
        }
    }
    m
}

/// The cohort and ClusterQueue names of the `cq`-th ClusterQueue (in generation order).
fn names_of(config: &ShapeConfig, cq: usize) -> (String, String) {
    let (c, q) = (cq / config.queues_per_cohort, cq % config.queues_per_cohort);
    let cohort = format!("cohort-{c}");
    let name = format!("cq-0-{q}-{cohort}");
    (cohort, name)
}

/// Everything a generator makes but its workloads: the flavor, and per ClusterQueue its
/// namespace and LocalQueue.
pub fn generate_objects(generator: &Generator) -> Manifests {
    let config = &generator.config;
    let n_cq = generator.cluster_queues();
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
    for cq in 0..n_cq {
        let (cohort, name) = names_of(config, cq);
        m.cluster_queues.push(cluster_queue(&name, &cohort, config));
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
    }
    m
}

/// A generator's workloads made one at a time, in namespace/name order (the order a cluster
/// numbers workloads in), so that a large shape never holds all its `Workload` objects.
pub struct LazyWorkloads<'g> {
    generator: &'g Generator,
    /// Per (ClusterQueue, stream), in generation order: the stream's phase.
    phases: Vec<Millis>,
}

impl<'g> LazyWorkloads<'g> {
    pub fn new(generator: &'g Generator) -> LazyWorkloads<'g> {
        let sets = &generator.config.sets;
        let mut rng = generator.seed.map(SplitMix64);
        let mut phases = Vec::with_capacity(generator.cluster_queues() * sets.len());
        for _ in 0..generator.cluster_queues() {
            for ws in sets {
                phases.push(
                    rng.as_mut()
                        .map_or(0, |r| r.below(ws.interval as u64) as Millis),
                );
            }
        }
        LazyWorkloads { generator, phases }
    }

    /// The `i`-th workload of stream `s` of the `cq`-th ClusterQueue.
    pub fn workload(&self, cq: usize, s: usize, i: u32) -> crate::api::Workload {
        let config = &self.generator.config;
        let (_, name) = names_of(config, cq);
        let phase = self.phases[cq * config.sets.len() + s];
        workload(&name, s, i, &config.sets[s], phase)
    }

    /// Every workload, in namespace/name order.
    pub fn sorted(&self) -> impl Iterator<Item = crate::api::Workload> + '_ {
        let config = &self.generator.config;
        let mut cqs: Vec<(String, usize)> = (0..self.generator.cluster_queues())
            .map(|cq| (names_of(config, cq).1, cq))
            .collect();
        cqs.sort_unstable();
        // Workload names are the same in every ClusterQueue (its namespace): sort them once.
        let mut within: Vec<(String, usize, u32)> = config
            .sets
            .iter()
            .enumerate()
            .flat_map(|(s, ws)| {
                (0..ws.count).map(move |i| (format!("{}-{s}-{i}-0", ws.class), s, i))
            })
            .collect();
        within.sort_unstable();
        let within: Vec<(usize, u32)> = within.into_iter().map(|(_, s, i)| (s, i)).collect();
        cqs.into_iter().flat_map(move |(_, cq)| {
            within
                .clone()
                .into_iter()
                .map(move |(s, i)| self.workload(cq, s, i))
        })
    }
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
