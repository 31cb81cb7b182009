//! The timeline of a run: admissions and preemptions (per reason) over time, from the report's
//! events, and the waits for admission checks, from the simulation's record of them
//! ([`crate::sim::check_waits`]): how many workloads waited at once, how many waits began, how
//! they ended and how long they took.

use std::collections::BTreeMap;

use crate::sim::Simulation;
use crate::sim::report::{EventType, Report};

use super::downsample::min_max;
use super::model::{MAX_POINTS, Series};
use super::palette::Colour;

/// The waits for admission checks of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckWaitModel {
    /// Workloads waiting for their checks at once (a step function).
    pub waiting: Series,
    /// Waits begun so far.
    pub begun: Series,
    /// Waits that ended in an admission, that ended otherwise (evicted for a retry, rejected,
    /// preempted, finished), and still open at the end.
    pub admitted: usize,
    pub released: usize,
    pub open: usize,
    /// How long the ended waits took, ascending (seconds).
    pub seconds: Vec<f64>,
}

/// A cumulative count of `times` (ascending) over `[0, duration]`.
pub fn cumulative(name: String, times: &[f64], duration: f64, colour: Colour) -> Series {
    let mut p = vec![(0.0, 0.0)];
    p.extend(times.iter().enumerate().map(|(k, &t)| (t, (k + 1) as f64)));
    p.push((duration, times.len() as f64));
    Series {
        name,
        points: min_max(&p, MAX_POINTS),
        colour,
    }
}

/// The waits for admission checks of `sim`, if it had any.
pub fn check_waits(sim: &Simulation, duration: f64) -> Option<CheckWaitModel> {
    let waits = sim.check_waits.all();
    if waits.is_empty() {
        return None;
    }
    let t0 = sim.t0();
    let secs = |t: i64| (t.max(t0) - t0) as f64 / 1000.0;
    let mut changes: Vec<(f64, i64)> = Vec::with_capacity(waits.len() * 2);
    let (mut admitted, mut released, mut open) = (0, 0, 0);
    let mut seconds = Vec::new();
    for w in waits {
        changes.push((secs(w.start), 1));
        match w.end {
            Some((end, ok)) => {
                changes.push((secs(end), -1));
                seconds.push((end - w.start) as f64 / 1000.0);
                if ok {
                    admitted += 1;
                } else {
                    released += 1;
                }
            }
            None => open += 1,
        }
    }
    changes.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut waiting: Vec<(f64, f64)> = vec![(0.0, 0.0)];
    let mut now = 0i64;
    for (t, delta) in changes {
        now += delta;
        match waiting.last_mut() {
            Some(last) if last.0 == t => last.1 = now as f64,
            _ => waiting.push((t, now as f64)),
        }
    }
    waiting.push((duration, now as f64));
    seconds.sort_by(f64::total_cmp);
    let begun: Vec<f64> = waits.iter().map(|w| secs(w.start)).collect();
    Some(CheckWaitModel {
        waiting: Series {
            name: "waiting for admission checks".into(),
            points: min_max(&waiting, MAX_POINTS),
            colour: Colour::Nth(0),
        },
        begun: cumulative(
            "admission-check waits begun".into(),
            &begun,
            duration,
            Colour::Nth(1),
        ),
        admitted,
        released,
        open,
        seconds,
    })
}

/// Admissions, preemptions per reason (the reason's first word) and every preemption,
/// cumulative over time.
pub fn events(report: &Report, duration: f64) -> (Series, Vec<Series>, Series) {
    let admitted: Vec<f64> = report
        .events
        .refs()
        .filter(|e| e.kind() == EventType::Admitted)
        .map(|e| e.time())
        .collect();
    let mut by_reason: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut all = Vec::new();
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
        all.push(e.time());
        by_reason
            .entry(reason.to_string())
            .or_default()
            .push(e.time());
    }
    (
        cumulative("admissions".into(), &admitted, duration, Colour::Nth(0)),
        by_reason
            .into_iter()
            .enumerate()
            .map(|(k, (reason, times))| {
                let name = format!("preempted: {reason}");
                cumulative(name, &times, duration, Colour::Nth(5 + k))
            })
            .collect(),
        cumulative("preemptions".into(), &all, duration, Colour::Nth(5)),
    )
}
