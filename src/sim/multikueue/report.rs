//! What a MultiKueue run reports: per worker what it ran, per Workload where it ran and how
//! long its dispatch took, and the dispatcher's figures; each cluster's own report beside.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::cluster::{Millis, WorkloadId};
use crate::policy::PolicyRef;
use crate::sim::Report;

use super::Federation;

/// One worker's counts.
#[derive(Debug, Clone, Default)]
pub(crate) struct WorkerStats {
    /// The manager's Workloads that ran to their end here.
    pub(crate) ran: u32,
    /// Copies the manager created here.
    pub(crate) copies: u32,
    /// Copies it removed again (another worker admitted, lost, evicted on the manager).
    pub(crate) removed: u32,
    pub(crate) losses: u32,
    pub(crate) lost_ms: Millis,
}

/// From one quota reservation on the manager to its end.
#[derive(Debug, Clone)]
struct Attempt {
    workload: WorkloadId,
    reserved_at: Millis,
    /// Workers that received a copy, in order (a worker again after it was lost, again).
    copied_to: Vec<String>,
    admitted: Option<(String, Millis)>,
    ended_at: Option<Millis>,
    outcome: Option<&'static str>,
}

/// Every attempt, and the dispatcher's figures.
#[derive(Debug, Default)]
pub(crate) struct History {
    attempts: Vec<Attempt>,
    calls: u64,
    fallbacks: u64,
    nanos: u128,
    decided_by: BTreeMap<String, u64>,
    /// Where the run ended (attempts still open end there).
    end: Millis,
}

impl History {
    pub(super) fn reserved(&mut self, wl: WorkloadId, now: Millis) -> usize {
        self.attempts.push(Attempt {
            workload: wl,
            reserved_at: now,
            copied_to: Vec::new(),
            admitted: None,
            ended_at: None,
            outcome: None,
        });
        self.attempts.len() - 1
    }

    pub(super) fn copied(&mut self, attempt: usize, worker: &str) {
        self.attempts[attempt].copied_to.push(worker.to_string());
    }

    pub(super) fn admitted(&mut self, attempt: usize, worker: &str, now: Millis) {
        self.attempts[attempt].admitted = Some((worker.to_string(), now));
    }

    pub(super) fn evicted_on_worker(&mut self, attempt: usize) {
        self.attempts[attempt].outcome = Some("evicted on its worker");
    }

    pub(super) fn worker_lost(&mut self, attempt: usize) {
        self.attempts[attempt].outcome = Some("its worker was lost");
    }

    pub(super) fn ended(&mut self, attempt: usize, now: Millis, finished: bool) {
        let a = &mut self.attempts[attempt];
        a.ended_at = Some(now);
        if finished {
            a.outcome = Some("finished");
        } else {
            a.outcome.get_or_insert("evicted on the manager");
        }
    }

    pub(super) fn asked(&mut self, took: std::time::Duration, fell_back: bool, by: &PolicyRef) {
        self.calls += 1;
        self.nanos += took.as_nanos();
        self.fallbacks += u64::from(fell_back);
        *self.decided_by.entry(by.name.to_string()).or_default() += 1;
    }

    pub(super) fn close(&mut self, now: Millis) {
        self.end = now;
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FederationReport {
    /// The manager's own report: its Workloads reserve quota there, and are admitted there
    /// once a worker admitted them.
    pub manager: Report,
    pub workers: Vec<WorkerReport>,
    /// Per Workload that reserved quota behind a MultiKueue check.
    pub workloads: Vec<WorkloadDispatch>,
    pub summary: DispatchSummary,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerReport {
    pub name: String,
    /// The manager's Workloads that ran to their end here.
    pub ran: u32,
    /// Copies the manager created here, and removed again.
    pub copies: u32,
    pub copies_removed: u32,
    /// How often, and for how long in all, it was lost.
    pub losses: u32,
    pub lost_seconds: f64,
    /// The worker's own report (copies are its workloads, `removed` once the manager removed
    /// them).
    pub report: Report,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadDispatch {
    /// `namespace/name`.
    pub workload: String,
    /// The worker that admitted it last.
    pub ran_on: Option<String>,
    /// Seconds from its last quota reservation on the manager to a worker admitting it.
    pub dispatch_seconds: Option<f64>,
    pub attempts: Vec<AttemptReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptReport {
    pub reserved_seconds: f64,
    pub copied_to: Vec<String>,
    pub admitted_on: Option<String>,
    pub admitted_seconds: Option<f64>,
    pub ended_seconds: Option<f64>,
    /// `finished`, `evicted on its worker`, `its worker was lost`, `evicted on the manager`;
    /// `None` while it goes on.
    pub outcome: Option<&'static str>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DispatchSummary {
    /// The Configuration's dispatcher (`multiKueue.dispatcherName`).
    pub dispatcher: String,
    pub workloads: usize,
    /// Of those, admitted on a worker (at least once).
    pub admitted_on_a_worker: usize,
    /// Dispatched more than once (a copy evicted on its worker, a worker lost).
    pub dispatched_again: usize,
    /// Reservation on the manager to admission on a worker, over every attempt that got one.
    pub mean_dispatch_seconds: Option<f64>,
    pub p90_dispatch_seconds: Option<f64>,
    pub max_dispatch_seconds: Option<f64>,
    /// Copies created per Workload.
    pub copies_per_workload: f64,
    /// Dispatcher calls, their mean wall time, and answers not taken.
    pub dispatcher_calls: u64,
    pub dispatcher_mean_micros: f64,
    pub fallbacks: u64,
    /// Calls by the policy whose answer was taken.
    pub decided_by: BTreeMap<String, u64>,
}

pub(super) fn build(f: &Federation) -> FederationReport {
    let sim = &f.manager;
    let secs = |t: Millis| round3((t - sim.t0()) as f64 / 1000.0);
    let mut by_workload: BTreeMap<WorkloadId, Vec<&Attempt>> = BTreeMap::new();
    for a in &f.history.attempts {
        by_workload.entry(a.workload).or_default().push(a);
    }
    let mut waits = Vec::new();
    let mut copies = 0usize;
    let workloads: Vec<WorkloadDispatch> = by_workload
        .iter()
        .map(|(&wl, attempts)| {
            copies += attempts.iter().map(|a| a.copied_to.len()).sum::<usize>();
            for a in attempts {
                if let Some((_, at)) = &a.admitted {
                    waits.push((at - a.reserved_at) as f64 / 1000.0);
                }
            }
            let last = attempts.iter().rev().find(|a| a.admitted.is_some());
            WorkloadDispatch {
                workload: sim.cluster().workload(wl).key.clone(),
                ran_on: last
                    .and_then(|a| a.admitted.as_ref())
                    .map(|(w, _)| w.clone()),
                dispatch_seconds: last.and_then(|a| {
                    a.admitted
                        .as_ref()
                        .map(|(_, at)| round3((at - a.reserved_at) as f64 / 1000.0))
                }),
                attempts: attempts
                    .iter()
                    .map(|a| AttemptReport {
                        reserved_seconds: secs(a.reserved_at),
                        copied_to: a.copied_to.clone(),
                        admitted_on: a.admitted.as_ref().map(|(w, _)| w.clone()),
                        admitted_seconds: a.admitted.as_ref().map(|&(_, t)| secs(t)),
                        ended_seconds: a.ended_at.map(secs),
                        outcome: a.outcome,
                    })
                    .collect(),
            }
        })
        .collect();
    waits.sort_by(f64::total_cmp);
    let h = &f.history;
    let summary = DispatchSummary {
        dispatcher: f.parts.settings.dispatcher_name().to_string(),
        workloads: workloads.len(),
        admitted_on_a_worker: workloads.iter().filter(|w| w.ran_on.is_some()).count(),
        dispatched_again: workloads.iter().filter(|w| w.attempts.len() > 1).count(),
        mean_dispatch_seconds: (!waits.is_empty())
            .then(|| round3(waits.iter().sum::<f64>() / waits.len() as f64)),
        p90_dispatch_seconds: (!waits.is_empty())
            .then(|| waits[((waits.len() * 9).div_ceil(10)).saturating_sub(1)]),
        max_dispatch_seconds: waits.last().copied(),
        copies_per_workload: if workloads.is_empty() {
            0.0
        } else {
            round3(copies as f64 / workloads.len() as f64)
        },
        dispatcher_calls: h.calls,
        dispatcher_mean_micros: if h.calls == 0 {
            0.0
        } else {
            round3(h.nanos as f64 / h.calls as f64 / 1000.0)
        },
        fallbacks: h.fallbacks,
        decided_by: h.decided_by.clone(),
    };
    FederationReport {
        manager: sim.report(),
        workers: f
            .workers
            .iter()
            .map(|w| {
                let open = w.down_since.map_or(0, |s| h.end.max(s) - s);
                WorkerReport {
                    name: w.name.clone(),
                    ran: w.stats.ran,
                    copies: w.stats.copies,
                    copies_removed: w.stats.removed,
                    losses: w.stats.losses,
                    lost_seconds: round3((w.stats.lost_ms + open) as f64 / 1000.0),
                    report: w.sim.report(),
                }
            })
            .collect(),
        workloads,
        summary,
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// A length of time in the reports' words (`-` when there is none).
pub(crate) fn seconds(x: Option<f64>) -> String {
    x.map_or("-".to_string(), |s| format!("{s:.1}s"))
}

impl WorkerReport {
    /// How long it was lost, and how often (`-` when never).
    pub(crate) fn lost(&self) -> String {
        if self.losses == 0 {
            "-".to_string()
        } else {
            format!("{:.0}s ({}x)", self.lost_seconds, self.losses)
        }
    }
}

impl FederationReport {
    /// The manager's report, then MultiKueue's: dispatch, workers, Workloads.
    pub fn to_table(&self, max_events: usize) -> String {
        let mut out = self.manager.to_table(max_events);
        let s = &self.summary;
        let _ = writeln!(
            out,
            "\nMultiKueue ({}): {} workloads, {} admitted on a worker, {} dispatched again",
            s.dispatcher, s.workloads, s.admitted_on_a_worker, s.dispatched_again
        );
        let _ = writeln!(
            out,
            "  dispatch (quota reserved on the manager -> admitted on a worker): mean {}, p90 {}, max {}; {} copies per workload",
            seconds(s.mean_dispatch_seconds),
            seconds(s.p90_dispatch_seconds),
            seconds(s.max_dispatch_seconds),
            s.copies_per_workload
        );
        let by: Vec<String> = s
            .decided_by
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let _ = writeln!(
            out,
            "  dispatcher: {} calls, {:.1} µs each; decided by {}; {} answers not taken",
            s.dispatcher_calls,
            s.dispatcher_mean_micros,
            if by.is_empty() {
                "-".to_string()
            } else {
                by.join(", ")
            },
            s.fallbacks
        );
        let _ = writeln!(
            out,
            "\n  {:<20} {:>5} {:>7} {:>8} {:>14}",
            "worker", "ran", "copies", "removed", "lost"
        );
        for w in &self.workers {
            let _ = writeln!(
                out,
                "  {:<20} {:>5} {:>7} {:>8} {:>14}",
                w.name,
                w.ran,
                w.copies,
                w.copies_removed,
                w.lost()
            );
        }
        let _ = writeln!(
            out,
            "\n  {:<32} {:<20} {:>9} {:>8}",
            "workload", "ran on", "dispatch", "attempts"
        );
        for w in self.workloads.iter().take(max_events) {
            let _ = writeln!(
                out,
                "  {:<32} {:<20} {:>9} {:>8}",
                w.workload,
                w.ran_on.as_deref().unwrap_or("-"),
                seconds(w.dispatch_seconds),
                w.attempts.len()
            );
        }
        if self.workloads.len() > max_events {
            let _ = writeln!(
                out,
                "  ... {} more (use --output json for all)",
                self.workloads.len() - max_events
            );
        }
        out
    }
}

/// Two runs of one MultiKueue scenario (`wasq simulate --compare dispatch=A dispatch=B`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FederationComparison {
    pub a: Side,
    pub b: Side,
    /// Workloads that ran on different workers (or ran in one run only).
    pub placed_differently: Vec<Placement>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Side {
    pub binding: String,
    pub dispatch: DispatchSummary,
    /// Mean seconds from arrival on the manager to admission (on a worker), over the
    /// Workloads admitted.
    pub mean_wait_seconds: Option<f64>,
    pub finished: usize,
    /// Per worker: the manager's Workloads it ran to their end.
    pub ran: BTreeMap<String, u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    pub workload: String,
    pub a: Option<String>,
    pub b: Option<String>,
}

impl Side {
    fn of(binding: &str, r: &FederationReport) -> Side {
        let waits: Vec<f64> = r
            .manager
            .workloads
            .iter()
            .filter_map(|w| Some(w.first_admitted_seconds? - w.arrival_seconds?))
            .collect();
        Side {
            binding: binding.to_string(),
            dispatch: r.summary.clone(),
            mean_wait_seconds: (!waits.is_empty())
                .then(|| round3(waits.iter().sum::<f64>() / waits.len() as f64)),
            finished: r
                .manager
                .workloads
                .iter()
                .filter(|w| w.state == "finished")
                .count(),
            ran: r.workers.iter().map(|w| (w.name.clone(), w.ran)).collect(),
        }
    }
}

/// `a` and `b` side by side.
pub fn compare(
    (label_a, a): (&str, &FederationReport),
    (label_b, b): (&str, &FederationReport),
) -> FederationComparison {
    let ran_on = |r: &FederationReport| -> BTreeMap<String, Option<String>> {
        r.workloads
            .iter()
            .map(|w| (w.workload.clone(), w.ran_on.clone()))
            .collect()
    };
    let (on_a, on_b) = (ran_on(a), ran_on(b));
    let mut keys: Vec<&String> = on_a.keys().chain(on_b.keys()).collect();
    keys.sort();
    keys.dedup();
    let placed_differently = keys
        .into_iter()
        .filter_map(|k| {
            let (x, y) = (
                on_a.get(k).cloned().flatten(),
                on_b.get(k).cloned().flatten(),
            );
            (x != y).then(|| Placement {
                workload: k.clone(),
                a: x,
                b: y,
            })
        })
        .collect();
    FederationComparison {
        a: Side::of(label_a, a),
        b: Side::of(label_b, b),
        placed_differently,
    }
}

impl FederationComparison {
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        let (a, b) = (&self.a, &self.b);
        let row = |out: &mut String, what: &str, x: String, y: String| {
            let _ = writeln!(out, "{what:<44} {x:>22} {y:>22}");
        };
        row(
            &mut out,
            "",
            format!("A ({})", a.binding),
            format!("B ({})", b.binding),
        );
        row(
            &mut out,
            "finished",
            a.finished.to_string(),
            b.finished.to_string(),
        );
        row(
            &mut out,
            "mean wait, arrival -> admitted on a worker",
            seconds(a.mean_wait_seconds),
            seconds(b.mean_wait_seconds),
        );
        row(
            &mut out,
            "dispatch, reserved -> admitted: mean",
            seconds(a.dispatch.mean_dispatch_seconds),
            seconds(b.dispatch.mean_dispatch_seconds),
        );
        row(
            &mut out,
            "dispatch, reserved -> admitted: p90",
            seconds(a.dispatch.p90_dispatch_seconds),
            seconds(b.dispatch.p90_dispatch_seconds),
        );
        row(
            &mut out,
            "copies per workload",
            a.dispatch.copies_per_workload.to_string(),
            b.dispatch.copies_per_workload.to_string(),
        );
        row(
            &mut out,
            "dispatched again",
            a.dispatch.dispatched_again.to_string(),
            b.dispatch.dispatched_again.to_string(),
        );
        row(
            &mut out,
            "dispatcher answers not taken",
            a.dispatch.fallbacks.to_string(),
            b.dispatch.fallbacks.to_string(),
        );
        for (worker, n) in &a.ran {
            row(
                &mut out,
                &format!("ran on {worker}"),
                n.to_string(),
                b.ran.get(worker).copied().unwrap_or(0).to_string(),
            );
        }
        let _ = writeln!(
            out,
            "\nWorkloads that ran elsewhere ({}):",
            self.placed_differently.len()
        );
        for p in &self.placed_differently {
            let _ = writeln!(
                out,
                "  {:<40} {} -> {}",
                p.workload,
                p.a.as_deref().unwrap_or("-"),
                p.b.as_deref().unwrap_or("-")
            );
        }
        out
    }
}
