//! What the HTML report draws of one run, taken from the simulation before its report is
//! built: usage over time per flavor/resource (per ClusterQueue, or per cohort tree when there
//! are many), times to admit per workload class (or LocalQueue), the admissions and
//! preemptions over time, Jain's index over time, and which policies decided. Every series is
//! downsampled ([`super::downsample`]): a chart holds a few hundred points whatever the run.

use std::collections::BTreeMap;

use crate::quota::FrIdx;
use crate::sim::fairness::jain;
use crate::sim::report::{EventType, Report};
use crate::sim::{CLASS, Simulation};

use super::downsample::min_max;

/// Points per drawn series.
pub const MAX_POINTS: usize = 300;

/// Above this many ClusterQueues, usage is drawn per cohort tree.
pub const MAX_QUEUE_SERIES: usize = 10;

/// The most groups drawn on one usage chart: those with the highest peaks (the total is drawn
/// too).
pub const MAX_GROUPS_DRAWN: usize = 7;

/// A named series of (x, y) points, x sorted.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// Usage of one flavor/resource over time.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageChart {
    /// `flavor/resource`.
    pub resource: String,
    /// The unit the values are in (`cores`, `GiB`, …).
    pub unit: &'static str,
    /// Per group (ClusterQueue or cohort tree): its usage, a step function.
    pub groups: Vec<Series>,
    /// Every group's usage together (what the nominal quota is compared with).
    pub total: Series,
    /// How many groups used the resource ([`UsageChart::groups`] holds the
    /// [`MAX_GROUPS_DRAWN`] with the highest peaks).
    pub of: usize,
    /// The nominal quota of every ClusterQueue with this resource, together.
    pub nominal: f64,
}

/// Times to admit of one workload class or LocalQueue, sorted ascending (seconds).
#[derive(Debug, Clone, PartialEq)]
pub struct Waits {
    pub name: String,
    pub seconds: Vec<f64>,
}

/// One policy that decided, as the report names it.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyRow {
    pub plugin: String,
    pub digest: String,
    pub kind: String,
    pub calls: u64,
    pub failures: u64,
    pub quarantined: bool,
}

/// Fallbacks to the built-in, per extension point and reason.
#[derive(Debug, Clone, PartialEq)]
pub struct FallbackRow {
    pub plugin: String,
    pub extension: String,
    pub reason: String,
    pub count: u64,
}

/// One run, ready to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct RunModel {
    pub label: String,
    /// Virtual seconds the run lasted.
    pub duration: f64,
    /// `per cohort tree` or `per ClusterQueue`.
    pub grouping: &'static str,
    pub usage: Vec<UsageChart>,
    /// By workload class (`sim.wasq.dev/class`), else by LocalQueue.
    pub waits_by: &'static str,
    pub waits: Vec<Waits>,
    /// Admissions over time: cumulative count.
    pub admissions: Series,
    /// Preemptions over time per reason: cumulative count.
    pub preemptions: Vec<Series>,
    /// Jain's index over the ClusterQueues with demand, per flavor/resource, over time.
    pub jain: Vec<Series>,
    pub policies: Vec<PolicyRow>,
    pub fallbacks: Vec<FallbackRow>,
}

/// The unit a resource is drawn in, and the milli-units per unit.
fn unit_of(resource: &str) -> (&'static str, f64) {
    match resource.rsplit('/').next().unwrap_or(resource) {
        "cpu" => ("cores", 1000.0),
        "memory" | "ephemeral-storage" => ("GiB", 1000.0 * 1024.0 * 1024.0 * 1024.0),
        "pods" => ("pods", 1000.0),
        _ => ("units", 1000.0),
    }
}

/// Appends `(t, y)` to a step function, or replaces its last value when it is at `t` too: of
/// the changes at one instant (a release and the admission it makes room for) only the
/// outcome is drawn.
fn set(series: &mut Vec<(f64, f64)>, t: f64, y: f64) {
    match series.last_mut() {
        Some(last) if last.0 == t => last.1 = y,
        _ => series.push((t, y)),
    }
}

/// The part of a [`RunModel`] read from the simulation itself (its usage log and arrival and
/// admission times), taken before the simulation is turned into its report, so that a large
/// run's timeline is never held twice.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    label: String,
    duration: f64,
    grouping: &'static str,
    usage: Vec<UsageChart>,
    waits_by: &'static str,
    waits: Vec<Waits>,
}

impl RunModel {
    /// The model of `sim` (run) and its `report`.
    pub fn build(label: &str, sim: &Simulation, report: &Report) -> RunModel {
        RunModel::prepare(label, sim).finish(report)
    }

    /// What is read from the simulation; [`Prepared::finish`] adds what its report holds.
    pub fn prepare(label: &str, sim: &Simulation) -> Prepared {
        let cluster = sim.cluster();
        let (t0, end) = (sim.t0(), sim.now());
        let secs = |t: i64| (t.max(t0) - t0) as f64 / 1000.0;
        let duration = secs(end);

        // Usage per group and flavor/resource: a step function of the usage log.
        let per_queue = cluster.cluster_queues.len() <= MAX_QUEUE_SERIES;
        let mut group_names: Vec<String> = Vec::new();
        let group_of: Vec<usize> = cluster
            .cluster_queues
            .iter()
            .map(|cq| {
                let name = if per_queue {
                    cq.name.clone()
                } else {
                    cluster.tree.node(cluster.tree.root(cq.node)).name.clone()
                };
                match group_names.iter().position(|n| *n == name) {
                    Some(g) => g,
                    None => {
                        group_names.push(name);
                        group_names.len() - 1
                    }
                }
            })
            .collect();
        let n_fr = cluster.tree.n_fr();
        let per_unit: Vec<f64> = (0..n_fr)
            .map(|fr| unit_of(&cluster.fr_name(FrIdx(fr as u32))).1)
            .collect();
        let mut current = vec![0i64; group_names.len() * n_fr];
        let mut total = vec![0i64; n_fr];
        let mut points: BTreeMap<(usize, usize), Vec<(f64, f64)>> = BTreeMap::new();
        let mut totals: BTreeMap<usize, Vec<(f64, f64)>> = BTreeMap::new();
        for change in &sim.usage_log {
            let g = group_of[change.admission.cluster_queue.index()];
            let t = secs(change.at);
            for &(fr, v) in &change.admission.usage {
                let (i, delta) = (fr.index(), change.sign() * v);
                let cell = &mut current[g * n_fr + i];
                *cell += delta;
                let series = points.entry((i, g)).or_insert_with(|| vec![(0.0, 0.0)]);
                set(series, t, *cell as f64 / per_unit[i]);
                total[i] += delta;
                let series = totals.entry(i).or_insert_with(|| vec![(0.0, 0.0)]);
                set(series, t, total[i] as f64 / per_unit[i]);
            }
        }
        let mut usage = Vec::new();
        for fr in (0..n_fr).map(|i| FrIdx(i as u32)) {
            let resource = cluster.fr_name(fr);
            let (unit, per_unit) = unit_of(&resource);
            let until_end = |name: String, mut p: Vec<(f64, f64)>| {
                let last = p.last().map_or(0.0, |l| l.1);
                p.push((duration, last));
                Series {
                    name,
                    points: min_max(&p, MAX_POINTS),
                }
            };
            let mut groups: Vec<Series> = (0..group_names.len())
                .filter_map(|g| {
                    let p = points.remove(&(fr.index(), g))?;
                    Some(until_end(group_names[g].clone(), p))
                })
                .collect();
            let of = groups.len();
            if of > MAX_GROUPS_DRAWN {
                let peak = |s: &Series| s.points.iter().map(|p| p.1).fold(0.0, f64::max);
                groups.sort_by(|a, b| peak(b).total_cmp(&peak(a)).then(a.name.cmp(&b.name)));
                groups.truncate(MAX_GROUPS_DRAWN);
            }
            let Some(all) = totals.remove(&fr.index()) else {
                continue;
            };
            let nominal: i64 = cluster
                .cluster_queues
                .iter()
                .filter(|cq| {
                    groups
                        .iter()
                        .any(|s| s.name == group_names[group_of[cq.id.index()]])
                })
                .filter(|cq| cq.frs.contains(&fr))
                .map(|cq| cluster.tree.quota(cq.node, fr).nominal)
                .sum();
            usage.push(UsageChart {
                resource,
                unit,
                total: until_end("all together".into(), all),
                of,
                groups,
                nominal: nominal as f64 / per_unit,
            });
        }

        // Times to admit per class, else per LocalQueue.
        let by_class = cluster
            .workloads
            .iter()
            .any(|w| w.annotations.contains_key(CLASS));
        let mut waits: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for wl in &cluster.workloads {
            let i = wl.id.index();
            let Some(admitted) = sim.first_admitted[i] else {
                continue;
            };
            let name = if by_class {
                wl.annotations.get(CLASS).cloned()
            } else {
                wl.lq.map(|lq| {
                    let lq = &cluster.local_queues[lq.index()];
                    format!("{}/{}", lq.namespace, lq.name)
                })
            };
            if let Some(name) = name {
                let wait = (admitted - sim.arrival[i]).max(0) as f64 / 1000.0;
                waits.entry(name).or_default().push(wait);
            }
        }
        let waits = waits
            .into_iter()
            .map(|(name, mut seconds)| {
                seconds.sort_by(f64::total_cmp);
                Waits { name, seconds }
            })
            .collect();

        Prepared {
            label: label.to_string(),
            duration,
            grouping: if per_queue {
                "per ClusterQueue"
            } else {
                "per cohort tree"
            },
            usage,
            waits_by: if by_class {
                "workload class"
            } else {
                "LocalQueue"
            },
            waits,
        }
    }
}

impl Prepared {
    /// The whole model, with the admissions, preemptions, fairness samples and policies of
    /// the run's `report`.
    pub fn finish(self, report: &Report) -> RunModel {
        let duration = self.duration;
        // Admissions and preemptions over time (cumulative counts).
        let cumulative = |name: String, times: Vec<f64>| {
            let mut p = vec![(0.0, 0.0)];
            p.extend(times.iter().enumerate().map(|(k, &t)| (t, (k + 1) as f64)));
            p.push((duration, times.len() as f64));
            Series {
                name,
                points: min_max(&p, MAX_POINTS),
            }
        };
        let admitted: Vec<f64> = report
            .events
            .refs()
            .filter(|e| e.kind() == EventType::Admitted)
            .map(|e| e.time())
            .collect();
        let mut by_reason: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for e in report
            .events
            .refs()
            .filter(|e| e.kind() == EventType::Preempted)
        {
            let reason = e
                .reason()
                .and_then(|r| r.split([':', ' ']).next())
                .filter(|r| !r.is_empty())
                .unwrap_or("Preempted");
            by_reason
                .entry(reason.to_string())
                .or_default()
                .push(e.time());
        }

        // Jain's index over time, per flavor/resource, from the report's share samples.
        let mut jain_points: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for sample in &report.fairness.samples {
            let mut per_fr: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
            for shares in sample.shares.values() {
                for (fr, &s) in shares {
                    per_fr.entry(fr).or_default().push(s);
                }
            }
            for (fr, xs) in per_fr {
                if let Some(j) = jain(&xs) {
                    jain_points
                        .entry(fr.to_string())
                        .or_default()
                        .push((sample.time, j));
                }
            }
        }

        RunModel {
            label: self.label,
            duration,
            grouping: self.grouping,
            usage: self.usage,
            waits_by: self.waits_by,
            waits: self.waits,
            admissions: cumulative("admissions".into(), admitted),
            preemptions: by_reason
                .into_iter()
                .map(|(reason, times)| cumulative(reason, times))
                .collect(),
            jain: jain_points
                .into_iter()
                .map(|(name, points)| Series {
                    name,
                    points: min_max(&points, MAX_POINTS),
                })
                .collect(),
            policies: report
                .summary
                .plugins
                .iter()
                .map(|p| PolicyRow {
                    plugin: p.plugin.clone(),
                    digest: p.digest.clone(),
                    kind: p.kind.clone(),
                    calls: p.calls,
                    failures: p.failures.values().sum(),
                    quarantined: p.quarantined,
                })
                .collect(),
            fallbacks: report
                .summary
                .fallbacks
                .iter()
                .map(|f| FallbackRow {
                    plugin: f.plugin.clone(),
                    extension: f.extension.clone(),
                    reason: f.reason.clone(),
                    count: f.count,
                })
                .collect(),
        }
    }
}
