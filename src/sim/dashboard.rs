//! The simulated cluster as the dashboard shows it (`wasq simulate --serve`): the scheduler's
//! state, each workload's history read from the timeline, the plugins' figures.

use std::cell::OnceCell;

use rustc_hash::FxHashMap;

use crate::cluster::WorkloadId;
use crate::dashboard::{PluginFigures, PolicyUse, Published, Source, State, Step};

use super::{EventType, Simulation};

/// The simulation's view now; `running`: the run goes on (`--speed`).
pub fn view(sim: &Simulation, title: &str, running: bool) -> Published {
    let source = SimSource {
        sim,
        index: OnceCell::new(),
    };
    let admitted = |id: WorkloadId| !sim.reserved_by.contains_key(&id);
    let mut published = crate::dashboard::build(
        &sim.scheduler,
        &source,
        &admitted,
        title,
        "virtual",
        sim.seconds(sim.now),
    );
    published.view.running = running;
    published
}

struct SimSource<'a> {
    sim: &'a Simulation,
    /// Per workload, the indices of its timeline records (built at the first history asked).
    index: OnceCell<FxHashMap<WorkloadId, Vec<usize>>>,
}

impl SimSource<'_> {
    fn records(&self, id: WorkloadId) -> &[usize] {
        let index = self.index.get_or_init(|| {
            let mut index: FxHashMap<WorkloadId, Vec<usize>> = FxHashMap::default();
            for (i, r) in self.sim.events.records.iter().enumerate() {
                index.entry(r.workload).or_default().push(i);
            }
            index
        });
        index.get(&id).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// Kueue's word for a timeline event.
fn kind(t: EventType) -> &'static str {
    match t {
        EventType::QuotaReserved => "QuotaReserved",
        EventType::Admitted => "Admitted",
        EventType::AdmissionCheck => "AdmissionCheck",
        EventType::Evicted => "Evicted",
        EventType::Deactivated => "Deactivated",
        EventType::PodsReady => "PodsReady",
        EventType::Preempted => "Preempted",
        // Not admitted this cycle, whether parked as inadmissible or not: Kueue's `Pending`.
        EventType::Requeued | EventType::Inadmissible => "Pending",
        EventType::Finished => "Finished",
        EventType::Removed => "Removed",
    }
}

impl Source for SimSource<'_> {
    fn state(&self, id: WorkloadId, default: Option<State>) -> Option<State> {
        let life = self.sim.lives.get(id.index())?;
        if life.arrival > self.sim.now {
            return None;
        }
        if life.finished {
            return Some(State::Finished);
        }
        if life.deactivated {
            return Some(State::Inactive);
        }
        default.or(Some(State::Pending))
    }

    fn history(&self, id: WorkloadId) -> Vec<Step> {
        let sim = self.sim;
        let recorder = &sim.events;
        let cluster = &sim.scheduler.cluster;
        let mut steps: Vec<Step> = Vec::new();
        for &i in self.records(id) {
            let Some(r) = recorder.records.get(i) else {
                continue;
            };
            let (policy, ordered_by, admission) = recorder.decided(r);
            let kind = kind(r.kind);
            let message = recorder.reason(r).map(str::to_string);
            // A wait repeated cycle after cycle is one step.
            if let Some(last) = steps.last()
                && last.kind == kind
                && last.message == message
            {
                continue;
            }
            let mut policies = Vec::new();
            match r.kind {
                EventType::Admitted | EventType::QuotaReserved => {
                    if let Some(o) = ordered_by {
                        policies.push(PolicyUse::of("ordering", o));
                    }
                    policies.push(PolicyUse::of("flavor-assignment", policy));
                }
                EventType::Preempted => policies.push(PolicyUse::of("preemption", policy)),
                EventType::Requeued | EventType::Inadmissible => {
                    policies.push(PolicyUse::of("flavor-assignment", policy))
                }
                _ => {}
            }
            let flavors = admission.map(|a| {
                a.pod_sets
                    .iter()
                    .map(|ps| {
                        let f: Vec<String> = ps
                            .flavors
                            .iter()
                            .map(|(r, f)| {
                                format!(
                                    "{}={}",
                                    cluster.names.resource_name(*r),
                                    cluster.names.flavor_name(*f)
                                )
                            })
                            .collect();
                        format!("{} ×{}: {}", ps.name, ps.count, f.join(", "))
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            });
            steps.push(Step {
                time: recorder.at(r).0,
                kind: kind.to_string(),
                cluster_queue: r.cluster_queue().map(|c| cluster.cq(c).name.clone()),
                message,
                preemptor: r.preemptor().map(|p| cluster.workload(p).key.clone()),
                flavors,
                policies,
            });
        }
        steps
    }

    fn reason(&self, id: WorkloadId) -> Option<String> {
        let recorder = &self.sim.events;
        self.records(id)
            .iter()
            .rev()
            .filter_map(|&i| recorder.records.get(i))
            .find(|r| matches!(r.kind, EventType::Requeued | EventType::Inadmissible))
            .and_then(|r| recorder.reason(r))
            .map(str::to_string)
    }

    fn plugins(&self) -> Vec<PluginFigures> {
        let Some(policies) = &self.sim.policies else {
            return Vec::new();
        };
        policies
            .plugins()
            .iter()
            .map(|p| PluginFigures::of(p.info(), &p.status()))
            .collect()
    }
}
