//! What a simulated MultiKueue manager does to a cluster's [`Simulation`]: a worker receives
//! copies of the manager's workloads and loses them again, goes down and comes back; the manager
//! is told how its checks went and finishes what its workers ran.

use crate::api;
use crate::cluster::checks::CheckState;
use crate::cluster::{Millis, WorkloadId};
use crate::sim::checks::Change;
use crate::sim::{EventType, Simulation, life::Life};

impl Simulation {
    /// A copy of a manager's workload arrives now, to run `duration` once admitted. A copy this
    /// worker had before (removed since) is created again under the same handle: its record is
    /// that of a new object, its history stays in the timeline.
    pub(super) fn add_copy(
        &mut self,
        wl: &api::Workload,
        previous: Option<WorkloadId>,
        duration: Option<Millis>,
    ) -> WorkloadId {
        let now = self.now;
        let resources = self.scheduler.cluster.names.n_resources();
        let info = self.scheduler.cluster.workload_info(wl, now);
        if self.scheduler.cluster.names.n_resources() != resources {
            self.scheduler.cluster.config_changed();
        }
        let ready_after = crate::sim::readiness::ready_after(&info.annotations);
        let id = match previous {
            Some(id) => {
                self.scheduler.replace(id, info);
                let record = &mut self.scheduler.cluster.workloads[id.index()];
                record.created = now;
                record.queued = now;
                record.requeue_count = 0;
                record.requeue_reason = None;
                let life = &mut self.lives[id.index()];
                let finished_before = life.finished;
                *life = Life::new(now, duration, ready_after);
                debug_assert!(!finished_before, "a finished copy is not created again");
                self.wl_checks[id.index()] = Default::default();
                id
            }
            None => {
                let id = self.scheduler.cluster.add_workload(info);
                self.lives.push(Life::new(now, duration, ready_after));
                self.labels.push(Default::default());
                self.wl_checks.push(Default::default());
                id
            }
        };
        self.arrivals.entry(now).or_default().push(id);
        id
    }

    /// The manager removed its copy: whatever it holds is released, it leaves its queue and
    /// its timers are dropped.
    pub(super) fn remove_copy(&mut self, id: WorkloadId, why: &str) {
        let i = id.index();
        if self.lives[i].finished || self.lives[i].removed {
            return;
        }
        if let Some(waiting) = self.arrivals.get_mut(&self.lives[i].arrival) {
            waiting.retain(|&w| w != id);
        }
        if self.scheduler.cluster.admission(id).is_some() {
            self.cancel_finish(id);
            self.log_release(id);
        }
        self.stopped(id);
        self.scheduler.finish(id);
        self.lives[i].removed = true;
        self.push_event(EventType::Removed, id, Some(why), None, None);
    }

    /// The cluster is taken away: every workload holding quota here is evicted and waits, with
    /// those pending, until it is back ([`Simulation::settle_instant`] is not called meanwhile).
    pub(super) fn go_down(&mut self, why: &str) {
        let holding: Vec<WorkloadId> = (0..self.lives.len())
            .map(|i| WorkloadId(i as u32))
            .filter(|&id| self.scheduler.cluster.admission(id).is_some())
            .collect();
        for id in holding {
            self.cancel_finish(id);
            self.log_release(id);
            self.stopped(id);
            self.scheduler.finish(id);
            if self.lives[id.index()].has_checks {
                self.wl_checks[id.index()].reset_on_eviction(self.now);
            }
            self.push_event(EventType::Evicted, id, Some(why), None, None);
            self.arrivals.entry(self.now).or_default().push(id);
        }
    }

    /// A copy's state, as its manager sees it.
    pub(super) fn copy_state(&self, id: WorkloadId) -> crate::cluster::multikueue::Copy {
        let life = &self.lives[id.index()];
        let admitted = self.is_admitted(id);
        crate::cluster::multikueue::Copy {
            admitted_at: admitted.then(|| life.first_admitted().unwrap_or(self.now)),
            finished: life.finished,
            evicted: !admitted && !life.finished && life.first_admitted().is_some(),
            // The simulator's Workloads keep their priority and their jobs.
            stale_priority: false,
            stale_spec: false,
            out_of_sync: false,
        }
    }

    /// Whether the workload ran to its end.
    pub(super) fn finished(&self, id: WorkloadId) -> bool {
        self.lives[id.index()].finished
    }

    /// The manager's MultiKueue check of `id` changes state now (applied at the next settling).
    pub(super) fn post_check(
        &mut self,
        id: WorkloadId,
        check: &str,
        state: CheckState,
        message: String,
    ) {
        self.checks.post(Change {
            workload: id,
            check: check.to_string(),
            state,
            message,
            requeue_after_seconds: None,
            pod_set_updates: Vec::new(),
        });
    }

    /// The state of the workload's check `check` now.
    pub(super) fn check_state(&self, id: WorkloadId, check: &str) -> Option<CheckState> {
        self.wl_checks[id.index()].get(check).map(|c| c.state)
    }

    /// Whether every check of the workload other than `check` is Ready (Kueue nominates
    /// workers only then).
    pub(super) fn others_ready(&self, id: WorkloadId, check: &str) -> bool {
        self.wl_checks[id.index()]
            .checks
            .iter()
            .all(|c| c.name == check || c.state == CheckState::Ready)
    }

    /// The manager's workload ended on its worker: finished here too, with the worker's words.
    pub(super) fn finish_elsewhere(&mut self, id: WorkloadId, reason: &str) {
        if self.scheduler.cluster.admission(id).is_some() && !self.lives[id.index()].finished {
            self.finish_now(id, Some(reason));
        }
    }

    /// How long the workload runs once admitted.
    pub(super) fn duration_of(&self, id: WorkloadId) -> Option<Millis> {
        self.lives[id.index()].duration()
    }
}
