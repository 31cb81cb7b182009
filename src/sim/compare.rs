//! `wasq simulate --compare A B`: one scenario run under two policy bindings, and what changed.
//!
//! Both runs start from the same loaded scenario (cloned) with the same limits. Each side
//! ([`Side`]) reports utilisation per flavor/resource (time-weighted usage of every ClusterQueue
//! as % of the cluster's total nominal quota), admissions and mean / p95 wait per ClusterQueue
//! and per LocalQueue, preemptions by reason and Jain's index per cohort tree and
//! flavor/resource ([`super::fairness`]), and for topology-aware scheduling how many domains of
//! each level a placement spans on average. The [`Diff`] holds B − A for what differs only (an
//! empty map means no difference), and the workloads whose admission differs: admitted (or
//! finished) by one run and not by the other, or admitted to other flavors or another
//! ClusterQueue (the last admission each run gave them); the first [`MAX_ADMISSION_DIFFS`] are
//! listed, all are counted.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::cluster::WorkloadId;
use crate::wasm::{BindError, LiveBindings};

use super::report::{AdmissionReport, Report, admission_of, mean, p95, round3};
use super::{Limits, Scenario, Simulation};

/// How many differing admissions are listed.
pub const MAX_ADMISSION_DIFFS: usize = 20;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub a: Side,
    pub b: Side,
    pub diff: Diff,
}

/// One run's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Side {
    /// The binding spec, e.g. `ordering=builtin`.
    pub bindings: String,
    pub cycles: u64,
    pub duration_seconds: f64,
    /// Workloads admitted (or finished) at the end of the run.
    pub admitted: u64,
    /// `flavor/resource` → time-weighted usage as % of the cluster's nominal quota.
    pub utilisation_percent: BTreeMap<String, f64>,
    pub cluster_queues: BTreeMap<String, Waits>,
    /// By `namespace/name`.
    pub local_queues: BTreeMap<String, Waits>,
    /// Preemptions by reason.
    pub preemptions: BTreeMap<String, u64>,
    /// Cohort tree → `flavor/resource` → Jain's index over its ClusterQueues.
    pub jain: BTreeMap<String, BTreeMap<String, f64>>,
    /// Topology level → domains of that level a TAS placement spans, on average over the
    /// run's placements (empty without TAS).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub mean_spans: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Waits {
    /// Admissions during the run (first admissions of workloads).
    pub admitted: u64,
    /// Over every workload that arrived, as the report's ClusterQueue summary counts them:
    /// all the time each spent pending, censored at the end of the run.
    pub mean_wait_seconds: Option<f64>,
    pub p95_wait_seconds: Option<f64>,
    /// Workloads pending when the run ended.
    pub pending_at_end: u64,
}

/// B − A, where they differ.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diff {
    pub duration_seconds: f64,
    pub admitted: i64,
    pub utilisation_percent: BTreeMap<String, f64>,
    pub cluster_queues: BTreeMap<String, WaitDiff>,
    pub local_queues: BTreeMap<String, WaitDiff>,
    pub preemptions: BTreeMap<String, i64>,
    pub jain: BTreeMap<String, BTreeMap<String, f64>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub mean_spans: BTreeMap<String, f64>,
    /// How many workloads' admissions differ.
    pub differing_admissions: usize,
    /// The first [`MAX_ADMISSION_DIFFS`] of them.
    pub admissions: Vec<AdmissionDiff>,
}

/// B − A of waits; `None` when one side has no figure (nothing admitted).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitDiff {
    pub admitted: i64,
    pub mean_wait_seconds: Option<f64>,
    pub p95_wait_seconds: Option<f64>,
    pub pending_at_end: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AdmissionDiff {
    /// `namespace/name`.
    pub workload: String,
    pub a: Outcome,
    pub b: Outcome,
}

/// Where a workload ended up in one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// `admitted`, `finished`, `pending` or `inadmissible`.
    pub state: &'static str,
    /// The ClusterQueue of its last admission, when admitted or finished.
    pub cluster_queue: Option<String>,
    /// Its last admission, when admitted or finished.
    pub admission: Option<AdmissionReport>,
}

impl Outcome {
    fn describe(&self) -> String {
        match (&self.cluster_queue, &self.admission) {
            (Some(cq), Some(a)) => format!("{} {cq} {}", self.state, a.describe()),
            _ => self.state.to_string(),
        }
    }
}

/// Runs `scenario` (cloned) under `policies` within `limits`.
pub fn run(
    scenario: &Scenario,
    limits: &Limits,
    policies: LiveBindings,
) -> Result<Simulation, BindError> {
    let mut sim = Simulation::new(scenario.clone());
    sim.use_policies(policies)?;
    sim.run(limits, None);
    Ok(sim)
}

/// The decisions of two reports of one scenario that differ: each decision line (an admission
/// or preemption with its time, the workload, where and by whom; each workload's final state)
/// found in only one of them, `-` for `a`, `+` for `b`, in `a`'s then `b`'s order. The deciding
/// policy is left out, so that the built-in and a plugin deciding alike compare equal.
pub fn decision_differences(a: &Report, b: &Report) -> Vec<(char, String)> {
    let lines_a = a.decision_lines_without_policy();
    let lines_b = b.decision_lines_without_policy();
    fn count(lines: &[String]) -> BTreeMap<&str, usize> {
        let mut m: BTreeMap<&str, usize> = BTreeMap::new();
        for l in lines {
            *m.entry(l.as_str()).or_default() += 1;
        }
        m
    }
    let (mut in_a, mut in_b) = (count(&lines_a), count(&lines_b));
    let mut out = Vec::new();
    for l in &lines_a {
        match in_b.get_mut(l.as_str()) {
            Some(n) if *n > 0 => *n -= 1,
            _ => out.push(('-', l.clone())),
        }
    }
    for l in &lines_b {
        match in_a.get_mut(l.as_str()) {
            Some(n) if *n > 0 => *n -= 1,
            _ => out.push(('+', l.clone())),
        }
    }
    out
}

/// Compares two finished runs of the same scenario.
pub fn compare_runs(a: (&str, &Simulation), b: (&str, &Simulation)) -> Comparison {
    let report_a = a.1.report();
    let report_b = b.1.report();
    let side_a = side(a.0, a.1, &report_a);
    let side_b = side(b.0, b.1, &report_b);
    let outcomes_a = outcomes(a.1, &report_a);
    let outcomes_b = outcomes(b.1, &report_b);
    let mut differing = Vec::new();
    for (i, (oa, ob)) in outcomes_a.into_iter().zip(outcomes_b).enumerate() {
        let got = |o: &Outcome| o.admission.is_some();
        let differs = got(&oa) != got(&ob)
            || (got(&oa) && (oa.cluster_queue != ob.cluster_queue || oa.admission != ob.admission));
        if differs {
            differing.push(AdmissionDiff {
                workload: a.1.cluster().workload(WorkloadId(i as u32)).key.clone(),
                a: oa,
                b: ob,
            });
        }
    }
    let diff = Diff {
        duration_seconds: round3(side_b.duration_seconds - side_a.duration_seconds),
        admitted: side_b.admitted as i64 - side_a.admitted as i64,
        utilisation_percent: differences(&side_a.utilisation_percent, &side_b.utilisation_percent),
        cluster_queues: wait_differences(&side_a.cluster_queues, &side_b.cluster_queues),
        local_queues: wait_differences(&side_a.local_queues, &side_b.local_queues),
        preemptions: count_differences(&side_a.preemptions, &side_b.preemptions),
        jain: side_a
            .jain
            .keys()
            .chain(side_b.jain.keys())
            .filter_map(|tree| {
                let empty = BTreeMap::new();
                let d = differences(
                    side_a.jain.get(tree).unwrap_or(&empty),
                    side_b.jain.get(tree).unwrap_or(&empty),
                );
                (!d.is_empty()).then(|| (tree.clone(), d))
            })
            .collect(),
        mean_spans: differences(&side_a.mean_spans, &side_b.mean_spans),
        differing_admissions: differing.len(),
        admissions: differing.into_iter().take(MAX_ADMISSION_DIFFS).collect(),
    };
    Comparison {
        a: side_a,
        b: side_b,
        diff,
    }
}

fn side(bindings: &str, sim: &Simulation, report: &Report) -> Side {
    let cluster = sim.cluster();
    let n_fr = cluster.tree.n_fr();
    let elapsed = sim.now() - sim.t0();
    let mut capacity = vec![0i64; n_fr];
    for (id, _) in cluster.tree.nodes() {
        for (c, q) in capacity.iter_mut().zip(cluster.tree.quotas(id)) {
            *c = c.saturating_add(q.nominal);
        }
    }
    let mut used = vec![0f64; n_fr];
    for cq in &cluster.cluster_queues {
        for (fr, u) in used.iter_mut().enumerate() {
            *u += if elapsed > 0 {
                sim.usage_integral[cq.node.index() * n_fr + fr] as f64 / elapsed as f64
            } else {
                cluster.usage.of(cq.node)[fr] as f64
            };
        }
    }
    let utilisation_percent = capacity
        .iter()
        .zip(&used)
        .enumerate()
        .filter(|&(_, (&c, _))| c > 0)
        .map(|(fr, (&c, &u))| {
            (
                cluster.fr_name(crate::quota::FrIdx(fr as u32)),
                round3(u * 100.0 / c as f64),
            )
        })
        .collect();
    let cluster_queues = report
        .summary
        .cluster_queues
        .iter()
        .map(|(name, q)| {
            let waits = Waits {
                admitted: q.admitted,
                mean_wait_seconds: q.mean_wait_seconds,
                p95_wait_seconds: q.p95_wait_seconds,
                pending_at_end: q.pending_at_end,
            };
            (name.clone(), waits)
        })
        .collect();
    // Per LocalQueue: admitted, every arrived workload's wait, pending at the end.
    let mut lq_waits: Vec<(u64, Vec<f64>, u64)> =
        vec![(0, Vec::new(), 0); cluster.local_queues.len()];
    for (wl, fate) in cluster.workloads.iter().zip(super::waits::fates(sim)) {
        if let (Some(lq), Some(fate)) = (wl.lq, fate) {
            let e = &mut lq_waits[lq.index()];
            e.0 += u64::from(sim.lives[wl.id.index()].first_admitted().is_some());
            e.1.push(fate.wait);
            e.2 += u64::from(fate.pending_at_end);
        }
    }
    let local_queues = cluster
        .local_queues
        .iter()
        .zip(&mut lq_waits)
        .map(|(lq, (admitted, w, pending))| {
            let waits = Waits {
                admitted: *admitted,
                mean_wait_seconds: mean(w).map(round3),
                p95_wait_seconds: p95(w).map(round3),
                pending_at_end: *pending,
            };
            (format!("{}/{}", lq.namespace, lq.name), waits)
        })
        .collect();
    Side {
        bindings: bindings.to_string(),
        cycles: report.summary.cycles,
        duration_seconds: report.summary.duration_seconds,
        admitted: report
            .workloads
            .iter()
            .filter(|w| matches!(w.state, "admitted" | "finished"))
            .count() as u64,
        utilisation_percent,
        cluster_queues,
        local_queues,
        preemptions: report.fairness.preemptions.clone(),
        jain: report
            .fairness
            .trees
            .iter()
            .map(|(name, t)| (name.clone(), t.jain.clone()))
            .collect(),
        mean_spans: mean_spans(report),
    }
}

/// Per level, the mean number of domains a placement spans.
fn mean_spans(report: &Report) -> BTreeMap<String, f64> {
    let mut spans: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for p in &report.topology.placements {
        for (level, n) in &p.domains_per_level {
            spans.entry(level.clone()).or_default().push(*n as f64);
        }
    }
    spans
        .into_iter()
        .filter_map(|(level, v)| mean(&v).map(|m| (level, round3(m))))
        .collect()
}

/// Per workload: its final state and, when admitted or finished, its last admission.
fn outcomes(sim: &Simulation, report: &Report) -> Vec<Outcome> {
    let cluster = sim.cluster();
    let mut last = vec![None; cluster.workloads.len()];
    for change in sim.usage_log.iter().filter(|c| c.reserved) {
        last[change.workload.index()] = Some(change.admission);
    }
    report
        .workloads
        .iter()
        .zip(last)
        .map(|(w, last)| {
            let held = last.filter(|_| matches!(w.state, "admitted" | "finished"));
            Outcome {
                state: w.state,
                cluster_queue: held.map(|a| cluster.cq(a.cluster_queue).name.clone()),
                admission: held.map(|a| admission_of(cluster, a)),
            }
        })
        .collect()
}

fn differences(a: &BTreeMap<String, f64>, b: &BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    a.keys()
        .chain(b.keys())
        .filter_map(|k| {
            let d = b.get(k).copied().unwrap_or(0.0) - a.get(k).copied().unwrap_or(0.0);
            let d = (d * 1e6).round() / 1e6;
            (d != 0.0).then(|| (k.clone(), d))
        })
        .collect()
}

fn count_differences(
    a: &BTreeMap<String, u64>,
    b: &BTreeMap<String, u64>,
) -> BTreeMap<String, i64> {
    a.keys()
        .chain(b.keys())
        .filter_map(|k| {
            let d = b.get(k).copied().unwrap_or(0) as i64 - a.get(k).copied().unwrap_or(0) as i64;
            (d != 0).then(|| (k.clone(), d))
        })
        .collect()
}

fn wait_differences(
    a: &BTreeMap<String, Waits>,
    b: &BTreeMap<String, Waits>,
) -> BTreeMap<String, WaitDiff> {
    let none = Waits {
        admitted: 0,
        mean_wait_seconds: None,
        p95_wait_seconds: None,
        pending_at_end: 0,
    };
    let delta = |x: Option<f64>, y: Option<f64>| Some(round3(y? - x?));
    a.keys()
        .chain(b.keys())
        .filter_map(|k| {
            let (wa, wb) = (a.get(k).unwrap_or(&none), b.get(k).unwrap_or(&none));
            (wa != wb).then(|| {
                let d = WaitDiff {
                    admitted: wb.admitted as i64 - wa.admitted as i64,
                    mean_wait_seconds: delta(wa.mean_wait_seconds, wb.mean_wait_seconds),
                    p95_wait_seconds: delta(wa.p95_wait_seconds, wb.p95_wait_seconds),
                    pending_at_end: wb.pending_at_end as i64 - wa.pending_at_end as i64,
                };
                (k.clone(), d)
            })
        })
        .collect()
}

impl Comparison {
    /// Side by side, for a person.
    pub fn to_table(&self) -> String {
        let (a, b) = (&self.a, &self.b);
        let mut out = String::new();
        let _ = writeln!(out, "A: {}\nB: {}\n", a.bindings, b.bindings);
        let _ = writeln!(out, "{:<44} {:>12} {:>12} {:>12}", "", "A", "B", "B - A");
        let mut row = |label: String, x: String, y: String, d: String| {
            let _ = writeln!(out, "{label:<44} {x:>12} {y:>12} {d:>12}");
        };
        let num =
            |v: Option<f64>, unit: &str| v.map_or("-".to_string(), |v| format!("{v:.1}{unit}"));
        let delta =
            |v: Option<f64>, unit: &str| v.map_or(String::new(), |v| format!("{v:+.1}{unit}"));
        row(
            "duration".into(),
            num(Some(a.duration_seconds), "s"),
            num(Some(b.duration_seconds), "s"),
            delta(Some(self.diff.duration_seconds), "s"),
        );
        row(
            "admitted at the end".into(),
            a.admitted.to_string(),
            b.admitted.to_string(),
            format!("{:+}", self.diff.admitted),
        );
        for k in keys(&a.utilisation_percent, &b.utilisation_percent) {
            row(
                format!("utilisation {k}"),
                num(a.utilisation_percent.get(k).copied(), "%"),
                num(b.utilisation_percent.get(k).copied(), "%"),
                delta(self.diff.utilisation_percent.get(k).copied(), ""),
            );
        }
        let mut waits = |kind: &str,
                         xa: &BTreeMap<String, Waits>,
                         xb: &BTreeMap<String, Waits>,
                         d: &BTreeMap<String, WaitDiff>| {
            for k in keys(xa, xb) {
                let (wa, wb) = (xa.get(k), xb.get(k));
                if wa.is_none_or(|w| w.mean_wait_seconds.is_none())
                    && wb.is_none_or(|w| w.mean_wait_seconds.is_none())
                {
                    continue;
                }
                let dk = d.get(k);
                row(
                    format!("{kind} {k} mean wait"),
                    num(wa.and_then(|w| w.mean_wait_seconds), "s"),
                    num(wb.and_then(|w| w.mean_wait_seconds), "s"),
                    delta(dk.and_then(|d| d.mean_wait_seconds), "s"),
                );
                row(
                    format!("{kind} {k} p95 wait"),
                    num(wa.and_then(|w| w.p95_wait_seconds), "s"),
                    num(wb.and_then(|w| w.p95_wait_seconds), "s"),
                    delta(dk.and_then(|d| d.p95_wait_seconds), "s"),
                );
                let (pa, pb) = (
                    wa.map_or(0, |w| w.pending_at_end),
                    wb.map_or(0, |w| w.pending_at_end),
                );
                if pa + pb > 0 {
                    row(
                        format!("{kind} {k} pending at the end"),
                        pa.to_string(),
                        pb.to_string(),
                        format!("{:+}", pb as i64 - pa as i64),
                    );
                }
            }
        };
        waits(
            "ClusterQueue",
            &a.cluster_queues,
            &b.cluster_queues,
            &self.diff.cluster_queues,
        );
        waits(
            "LocalQueue",
            &a.local_queues,
            &b.local_queues,
            &self.diff.local_queues,
        );
        for k in keys(&a.preemptions, &b.preemptions) {
            row(
                format!("preemptions {k}"),
                a.preemptions.get(k).copied().unwrap_or(0).to_string(),
                b.preemptions.get(k).copied().unwrap_or(0).to_string(),
                format!("{:+}", self.diff.preemptions.get(k).copied().unwrap_or(0)),
            );
        }
        for k in keys(&a.mean_spans, &b.mean_spans) {
            row(
                format!("mean span {k}"),
                num(a.mean_spans.get(k).copied(), ""),
                num(b.mean_spans.get(k).copied(), ""),
                delta(self.diff.mean_spans.get(k).copied(), ""),
            );
        }
        let empty = BTreeMap::new();
        for tree in keys(&a.jain, &b.jain) {
            let (ja, jb) = (
                a.jain.get(tree).unwrap_or(&empty),
                b.jain.get(tree).unwrap_or(&empty),
            );
            let dj = self.diff.jain.get(tree).unwrap_or(&empty);
            for fr in keys(ja, jb) {
                let f = |v: Option<&f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
                row(
                    format!("Jain {tree} {fr}"),
                    f(ja.get(fr)),
                    f(jb.get(fr)),
                    dj.get(fr).map_or(String::new(), |v| format!("{v:+.3}")),
                );
            }
        }
        if self.diff.differing_admissions == 0 {
            let _ = writeln!(out, "\nNo admission differs.");
        } else {
            let _ = writeln!(
                out,
                "\nAdmissions that differ ({}{}):",
                self.diff.differing_admissions,
                if self.diff.differing_admissions > self.diff.admissions.len() {
                    format!(", first {}", self.diff.admissions.len())
                } else {
                    String::new()
                }
            );
            for d in &self.diff.admissions {
                let _ = writeln!(
                    out,
                    "  {}\n    A: {}\n    B: {}",
                    d.workload,
                    d.a.describe(),
                    d.b.describe()
                );
            }
        }
        out
    }
}

/// The union of two maps' keys, in order.
fn keys<'a, V>(a: &'a BTreeMap<String, V>, b: &'a BTreeMap<String, V>) -> Vec<&'a String> {
    let mut k: Vec<&String> = a.keys().chain(b.keys()).collect();
    k.sort();
    k.dedup();
    k
}
