//! The embedded, deterministic cluster: a virtual clock that submits workloads at their arrival
//! time, runs scheduling cycles, completes evictions at once and finishes workloads after their
//! duration. The scheduler it drives is the same one the Kubernetes controller runs.
//!
//! Virtual time 0 is the latest timestamp found in the manifests (creation or quota
//! reservation), so workloads admitted during the run are always newer than those that came
//! admitted; times in reports are seconds since then.

mod admission;
pub mod attribution;
mod calendar;
pub mod check_waits;
pub mod checks;
pub mod compare;
pub mod dashboard;
pub mod explain;
mod life;
pub use crate::api::duration;
pub mod extensions;
pub mod fairness;
pub mod generate;
pub mod html;
mod log;
mod logged;
pub mod multikueue;
pub mod nodes;
pub mod readiness;
pub mod report;
pub mod scenario;
pub mod timeline;
pub mod topology;
pub mod trace;
pub(crate) mod waits;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::cluster::checks::{WorkloadChecks, applicable};
use crate::cluster::{Cluster, Millis, WorkloadId};
use crate::policy::PolicyRef;
use crate::scheduler::{Decision, Scheduler};

pub use report::{Event, EventType, Report};
pub use scenario::{Scenario, ScenarioError};
pub use timeline::{EventRef, Timeline};

/// Annotation: when the workload is submitted, relative to virtual time 0 (e.g. `90s`).
pub const ARRIVAL: &str = "sim.wasq.dev/arrival";
/// Annotation: how long the workload runs once admitted (default: until the end).
pub const DURATION: &str = "sim.wasq.dev/duration";
/// Annotation: the class a workload or ClusterQueue is reported under.
pub const CLASS: &str = "sim.wasq.dev/class";

/// When to stop.
#[derive(Debug, Clone, Default)]
pub struct Limits {
    pub max_cycles: Option<u64>,
    /// Virtual time after which nothing more happens.
    pub until: Option<Millis>,
    /// Cycles at one instant (the clock not moving) after which the clock moves on; by
    /// default 1,000 + 10 per ClusterQueue.
    pub max_cycles_per_instant: Option<u64>,
}

/// Progress callback: (virtual seconds, workloads settled, total).
pub type Progress<'a> = &'a mut dyn FnMut(f64, usize, usize);

/// One simulation run.
type FallbackKey = (String, String, &'static str, &'static str);

/// Real-time pacing: the virtual clock advances at `speed` × wall time.
#[derive(Debug, Clone, Copy)]
pub struct Pacer {
    pub speed: f64,
    start: std::time::Instant,
}

impl Pacer {
    pub fn new(speed: f64) -> Pacer {
        Pacer {
            speed,
            start: std::time::Instant::now(),
        }
    }

    /// Sleeps until the wall time that corresponds to virtual `elapsed` milliseconds, in short
    /// slices so that a stop request is seen promptly.
    fn wait_until(&self, elapsed: Millis, stop: &std::sync::atomic::AtomicBool) {
        let due = std::time::Duration::from_secs_f64((elapsed.max(0) as f64 / 1000.0) / self.speed);
        while let Some(left) = due.checked_sub(self.start.elapsed()) {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(left.min(std::time::Duration::from_millis(20)));
        }
    }
}

pub struct Simulation {
    pub scheduler: Scheduler,
    t0: Millis,
    now: Millis,
    arrivals: BTreeMap<Millis, Vec<WorkloadId>>,
    /// When running workloads finish, earliest first, a bucket per instant. A cancelled
    /// finish stays in its bucket and is skipped when it comes up: only the entry equal to the
    /// workload's finish time ([`life::Life::finish_at`]) counts.
    finishes: calendar::FinishCalendar,
    /// Per workload: arrival, duration, readiness delay (read once from its annotations,
    /// [`readiness::ready_after`]), finish, first reservation and admission, what it was last
    /// told, finished, deactivated — one cache line each ([`life`]).
    pub(crate) lives: Vec<life::Life>,
    /// How many workloads have finished (the progress figure, read every cycle).
    settled: usize,
    /// The admission each finished workload held, for the report.
    pub(crate) finished_admissions:
        rustc_hash::FxHashMap<WorkloadId, std::sync::Arc<crate::cluster::Admission>>,
    /// The timeline as recorded (names by id, texts interned).
    pub(crate) events: timeline::Recorder,
    /// A pending event's reason is put together here before it is interned.
    reason_buf: String,
    pub(crate) usage_integral: Vec<i128>,
    /// Topology-aware scheduling: per-domain usage over time and each placement's span.
    pub(crate) tas: topology::TasLedger,
    /// Every reservation (+) and release (−) of quota, in time order: the fairness report
    /// replays it for per-LocalQueue usage and the share over time.
    pub(crate) usage_log: logged::UsageLog,
    pub(crate) preemptions: Vec<u64>,
    /// Per ClusterQueue: how often one of its preemptors started waiting for a preemption
    /// budget, and which preemptors did.
    pub(crate) budget_waits: Vec<u64>,
    pub(crate) budget_held: BTreeSet<(crate::cluster::CqId, WorkloadId)>,
    /// Fallbacks to the built-in policy: (plugin, digest, extension, reason) → (count, last
    /// error).
    pub(crate) fallbacks: BTreeMap<FallbackKey, (u64, String)>,
    /// Policy bindings refreshed before every cycle (hot reload).
    policies: Option<crate::wasm::LiveBindings>,
    pacer: Option<Pacer>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pub(crate) cycles: u64,
    /// Cost-attribution labels per workload.
    pub(crate) labels: Vec<BTreeMap<String, String>>,
    /// Admission-check states per workload (the core's state machine).
    pub(crate) wl_checks: Vec<WorkloadChecks>,
    /// The simulated check controllers.
    checks: checks::SimChecks,
    /// The policies that placed a reservation still waiting for its checks.
    reserved_by: BTreeMap<WorkloadId, (PolicyRef, PolicyRef)>,
    /// Pod readiness and the PodsReady timeouts (`waitForPodsReady`).
    readiness: readiness::Readiness,
    /// Every wait for admission checks (the HTML report's timeline).
    pub(crate) check_waits: check_waits::CheckWaits,
    /// Called after every cycle with the simulation (`wasq simulate --serve`).
    observer: Option<Observer>,
}

/// How [`Simulation::settle_instant`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Settle {
    /// Nothing more changes at this instant.
    Settled,
    /// A cycle limit was reached or a stop was asked for.
    Stopped,
}

/// What watches a run cycle by cycle.
pub type Observer = Box<dyn FnMut(&Simulation) + Send>;

impl Simulation {
    /// Prepares a run: workloads that came admitted keep their quota, the others arrive later.
    pub fn new(scenario: Scenario) -> Simulation {
        let Scenario {
            cluster,
            t0,
            arrival,
            durations,
            labels,
            policies: _,
            multikueue: _,
        } = scenario;
        let n = cluster.workloads.len();
        let lives = cluster
            .workloads
            .iter()
            .zip(arrival.iter().zip(&durations))
            .map(|(w, (&arrival, &duration))| {
                life::Life::new(arrival, duration, readiness::ready_after(&w.annotations))
            })
            .collect();
        let mut sim = Simulation {
            scheduler: Scheduler::new(cluster),
            t0,
            now: t0,
            arrivals: BTreeMap::new(),
            finishes: Default::default(),
            lives,
            settled: 0,
            finished_admissions: Default::default(),
            events: Default::default(),
            reason_buf: String::new(),
            usage_integral: Vec::new(),
            tas: Default::default(),
            usage_log: Default::default(),
            preemptions: Vec::new(),
            budget_waits: Vec::new(),
            budget_held: BTreeSet::new(),
            fallbacks: BTreeMap::new(),
            policies: None,
            pacer: None,
            stop: Default::default(),
            cycles: 0,
            labels,
            wl_checks: vec![WorkloadChecks::default(); n],
            checks: checks::SimChecks::default(),
            reserved_by: BTreeMap::new(),
            readiness: readiness::Readiness::default(),
            check_waits: Default::default(),
            observer: None,
        };
        let cluster = &sim.scheduler.cluster;
        sim.usage_integral = vec![0; cluster.tree.len() * cluster.tree.n_fr()];
        sim.preemptions = vec![0; cluster.cluster_queues.len()];
        sim.budget_waits = vec![0; cluster.cluster_queues.len()];
        for i in 0..n {
            let id = WorkloadId(i as u32);
            if let Some(reserved_at) = sim.scheduler.cluster.reserved_at(id) {
                let start = reserved_at.max(t0);
                let life = &mut sim.lives[i];
                life.admitted(reserved_at);
                life.reserved(reserved_at);
                let duration = life.duration();
                sim.log_reserve(id);
                if let Some(d) = duration {
                    sim.schedule_finish(id, start + d);
                }
            } else {
                sim.arrivals
                    .entry(sim.lives[i].arrival)
                    .or_default()
                    .push(id);
            }
        }
        sim
    }

    /// Whether the workload is admitted: it holds quota and is not waiting for its checks.
    pub(crate) fn is_admitted(&self, id: WorkloadId) -> bool {
        self.scheduler.cluster.admission(id).is_some() && !self.reserved_by.contains_key(&id)
    }

    pub fn cluster(&self) -> &Cluster {
        &self.scheduler.cluster
    }

    pub fn t0(&self) -> Millis {
        self.t0
    }

    pub fn now(&self) -> Millis {
        self.now
    }

    /// Binds policies (plugins or built-in) and keeps them current: before every cycle the
    /// bindings are refreshed, so a plugin swapped on disk decides from the next cycle on.
    pub fn use_policies(
        &mut self,
        mut policies: crate::wasm::LiveBindings,
    ) -> Result<(), crate::wasm::BindError> {
        if let Some(bound) = policies.refresh(&self.scheduler.cluster) {
            self.install(bound?);
        }
        self.policies = Some(policies);
        Ok(())
    }

    /// A flag that ends [`Simulation::run`] at the next cycle when set (from another thread).
    pub fn stop_flag(&self) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
        self.stop.clone()
    }

    /// Runs the virtual clock at `speed` × wall time from now on.
    pub fn pace(&mut self, speed: f64) {
        self.pacer = Some(Pacer::new(speed));
    }

    fn install(&mut self, (default, per_cq): crate::wasm::Bound) {
        self.scheduler.install_policies(default, per_cq);
    }

    fn refresh_policies(&mut self) {
        let Some(policies) = self.policies.as_mut() else {
            return;
        };
        match policies.refresh(&self.scheduler.cluster) {
            None => {}
            Some(Ok(bound)) => {
                tracing::info!(
                    cycle = self.cycles + 1,
                    "plugins changed; new bindings from this cycle on"
                );
                self.install(bound);
            }
            Some(Err(e)) => {
                tracing::error!(error = %e, "new plugin bindings refused; the previous ones stay")
            }
        }
    }

    /// What each shadow policy decided against the enforced ones, so far.
    pub(crate) fn shadow_figures(
        &self,
    ) -> std::collections::BTreeMap<String, crate::policy::shadow::Figures> {
        self.policies
            .as_ref()
            .map(|p| p.shadow_log().figures())
            .unwrap_or_default()
    }

    /// Calls and failures of every plugin the run could bind.
    pub(crate) fn plugin_summaries(&self) -> Vec<report::PluginSummary> {
        let Some(policies) = &self.policies else {
            return Vec::new();
        };
        policies
            .plugins()
            .iter()
            .map(|p| {
                let status = p.status();
                report::PluginSummary {
                    plugin: p.info().name.clone(),
                    digest: p.info().digest.clone(),
                    kind: p.kind().to_string(),
                    calls: status.calls,
                    failures: status
                        .failures
                        .iter()
                        .map(|(k, v)| (k.to_string(), *v))
                        .collect(),
                    quarantined: status.quarantined,
                    extra_victims: status.extra_victims,
                    over_budget: status.over_budget,
                    cpu_micros: status.cpu_us,
                    busiest_cycle_micros: status.busiest_cycle_us,
                }
            })
            .collect()
    }

    fn count_fallbacks(&mut self) {
        for f in self.scheduler.take_fallbacks() {
            self.count_fallback(&f.policy, f.extension, &f.error);
        }
    }

    /// The built-in decided because `policy`'s answer failed or was refused.
    pub(crate) fn count_fallback(
        &mut self,
        policy: &PolicyRef,
        extension: &'static str,
        error: &crate::policy::PolicyError,
    ) {
        let key = (
            policy.name.to_string(),
            policy.digest.to_string(),
            extension,
            error.reason(),
        );
        let entry = self.fallbacks.entry(key).or_default();
        entry.0 += 1;
        entry.1 = error.to_string();
    }

    fn schedule_finish(&mut self, id: WorkloadId, at: Millis) {
        self.lives[id.index()].set_finish_at(Some(at));
        self.finishes.push(at, id);
    }

    /// The entry stays in the calendar; [`Simulation::next_finish`] skips it.
    fn cancel_finish(&mut self, id: WorkloadId) {
        self.lives[id.index()].set_finish_at(None);
    }

    /// The earliest finish still scheduled, dropping cancelled entries ahead of it.
    fn next_finish(&mut self) -> Option<(Millis, WorkloadId)> {
        while let Some((at, id)) = self.finishes.peek() {
            if self.lives[id.index()].finish_at() == Some(at) {
                return Some((at, id));
            }
            self.finishes.pop();
        }
        None
    }

    /// Records that `id` reserved the admission it now holds. The log keeps one admission
    /// per body ([`logged`]).
    fn log_reserve(&mut self, id: WorkloadId) {
        if let Some(admission) = self.scheduler.cluster.admission(id) {
            self.usage_log.reserve(self.now, id, admission);
        }
    }

    /// Records that `id` is about to release its admission: the log names the body of its
    /// logged reservation without reading the admission again.
    fn log_release(&mut self, id: WorkloadId) {
        debug_assert!(
            self.usage_log
                .held(id)
                .map(|a| (a.cluster_queue, &a.pod_sets, &a.usage))
                == self.scheduler.cluster.admission(id).map(|a| (
                    a.cluster_queue,
                    &a.pod_sets,
                    &a.usage
                )),
            "a release names what its workload holds"
        );
        self.usage_log.release(self.now, id);
    }

    fn seconds(&self, t: Millis) -> f64 {
        (t - self.t0) as f64 / 1000.0
    }

    fn push_event(
        &mut self,
        kind: EventType,
        wl: WorkloadId,
        reason: Option<&str>,
        preemptor: Option<WorkloadId>,
        policy: Option<PolicyRef>,
    ) {
        let cluster = &self.scheduler.cluster;
        let cq = cluster
            .admission(wl)
            .map(|a| a.cluster_queue)
            .or(cluster.workload(wl).cluster_queue);
        self.events.push(timeline::NewEvent {
            time: self.seconds(self.now),
            cycle: self.cycles,
            kind,
            workload: wl,
            cluster_queue: cq,
            reason,
            preemptor,
            policy,
        });
    }

    /// Advances the integral of usage to `to`.
    fn integrate(&mut self, to: Millis) {
        let dt = i128::from(to - self.now);
        if dt <= 0 {
            return;
        }
        // Admission fair sharing samples on its own clock, with what ran until `to`.
        self.scheduler.sample_local_queue_usage_until(to);
        let cluster = &self.scheduler.cluster;
        let n_fr = cluster.tree.n_fr();
        for cq in &cluster.cluster_queues {
            let base = cq.node.index() * n_fr;
            for (fr, &u) in cluster.usage.of(cq.node).iter().enumerate() {
                self.usage_integral[base + fr] += i128::from(u) * dt;
            }
        }
        self.tas.integrate(&cluster.tas, dt);
        self.now = to;
    }

    /// The workload finished now: its quota is released and its timers dropped.
    fn finish_now(&mut self, id: WorkloadId, reason: Option<&str>) {
        self.lives[id.index()].set_finish_at(None);
        if let Some(a) = self.cluster().admission_shared(id) {
            self.finished_admissions.insert(id, a.clone());
        }
        self.log_release(id);
        self.scheduler.finish(id);
        self.stopped(id);
        if !std::mem::replace(&mut self.lives[id.index()].finished, true) {
            self.settled += 1;
        }
        self.push_event(EventType::Finished, id, reason, None, None);
    }

    fn settle_time_events(&mut self) {
        while let Some((at, id)) = self.next_finish() {
            if at > self.now {
                break;
            }
            self.finishes.pop();
            self.finish_now(id, None);
        }
        self.settle_checks();
        self.settle_readiness();
        while let Some(entry) = self.arrivals.first_entry() {
            if *entry.key() > self.now {
                break;
            }
            let arrived = entry.remove();
            for (i, &id) in arrived.iter().enumerate() {
                if let Some(&ahead) = arrived.get(i + 4) {
                    self.scheduler.prefetch_submit(ahead);
                }
                let refused = match self.scheduler.submit(id) {
                    Err(e) => Some(e.to_string()),
                    // Queued, but its ClusterQueue admits nothing: Kueue's workload controller
                    // says so on the workload.
                    Ok(()) => {
                        let cluster = self.cluster();
                        cluster
                            .workload(id)
                            .cluster_queue
                            .map(|cq| cluster.cq(cq))
                            .filter(|cq| !cq.is_active())
                            .map(|cq| format!("ClusterQueue {} is inactive", cq.name))
                    }
                };
                if let Some(message) = refused {
                    let text = self.events.texts.intern(&message);
                    self.lives[id.index()].set_last_pending(Some((text, true)));
                    self.push_event(EventType::Inadmissible, id, Some(&message), None, None);
                }
            }
        }
    }

    /// Applies a cycle's decisions, emptying the list (kept for the next cycle).
    fn apply(&mut self, decisions: &mut Vec<Decision>) -> bool {
        let mut progress = false;
        let mut drained = decisions.drain(..);
        while let Some(d) = drained.next() {
            // The record of the workload a few decisions ahead is asked for now: at ten times
            // Kueue's large scale the table of records is 32 MB, and a not-admitted head's
            // (most decisions) was a wait on memory for its last pending message.
            if let Some(ahead) = drained.as_slice().get(3) {
                wasq_alloc::prefetch(&self.lives[ahead.workload().index()], 1);
            }
            match d {
                Decision::Admitted {
                    workload,
                    admission,
                    policy,
                    ordered_by,
                    placed_by,
                } => {
                    progress = true;
                    let i = workload.index();
                    let life = &mut self.lives[i];
                    life.set_last_pending(None);
                    life.reserved(self.now);
                    self.log_reserve(workload);
                    self.push_event(
                        EventType::QuotaReserved,
                        workload,
                        None,
                        None,
                        Some(policy.clone()),
                    );
                    let cluster = &self.scheduler.cluster;
                    self.tas.record(
                        cluster,
                        workload,
                        &admission,
                        &placed_by,
                        self.now - self.t0,
                    );
                    // A ClusterQueue without admission checks (Kueue's shapes) has none to
                    // apply: no list of the admission's flavors is made for it.
                    let rules = &cluster.cq(admission.cluster_queue).admission_checks;
                    let names = if rules.is_empty() {
                        Vec::new()
                    } else {
                        let assigned: Vec<_> = admission
                            .pod_sets
                            .iter()
                            .flat_map(|ps| ps.flavors.iter().map(|(_, f)| *f))
                            .collect();
                        applicable(rules, &assigned)
                    };
                    // A workload whose last reservation came without checks (or that never
                    // reserved) has none to start or reset: its entry of the table by workload
                    // id is not read (at ten times Kueue's scale a miss per reservation).
                    if !names.is_empty() || self.lives[i].has_checks {
                        self.wl_checks[i].reserve(&names, self.now);
                        self.lives[i].has_checks = !names.is_empty();
                    }
                    if names.is_empty() {
                        self.admit(workload, policy, ordered_by);
                    } else {
                        self.checks
                            .reserved(&self.scheduler.cluster, workload, &names, self.now);
                        self.reserved_by.insert(workload, (policy, ordered_by));
                        self.check_waits.started(workload, self.now);
                    }
                }
                Decision::Preempted {
                    workload,
                    preemptor,
                    reason,
                    policy,
                } => {
                    progress = true;
                    if let Some(a) = self.scheduler.cluster.admission(workload) {
                        self.preemptions[a.cluster_queue.index()] += 1;
                    }
                    self.push_event(
                        EventType::Preempted,
                        workload,
                        Some(reason),
                        Some(preemptor),
                        Some(policy),
                    );
                    // Evictions complete at once in the simulator.
                    self.cancel_finish(workload);
                    self.log_release(workload);
                    self.scheduler.complete_eviction(workload);
                    self.stopped(workload);
                    if self.lives[workload.index()].has_checks {
                        self.wl_checks[workload.index()].reset_on_eviction(self.now);
                    }
                    self.push_event(EventType::Requeued, workload, Some("Preempted"), None, None);
                }
                Decision::NotAdmitted {
                    workload,
                    reason,
                    message,
                    parked,
                    policy,
                } => {
                    let i = workload.index();
                    progress |= parked;
                    let state = Some((self.events.texts.intern(&message), parked));
                    let life = &mut self.lives[i];
                    if life.last_pending() == state {
                        continue;
                    }
                    life.set_last_pending(state);
                    if reason == crate::scheduler::budget::WAIT_REASON
                        && let Some(cq) = self.scheduler.cluster.workload(workload).cluster_queue
                    {
                        self.budget_waits[cq.index()] += 1;
                        self.budget_held.insert((cq, workload));
                    }
                    let kind = if parked {
                        EventType::Inadmissible
                    } else {
                        EventType::Requeued
                    };
                    let mut text = std::mem::take(&mut self.reason_buf);
                    text.clear();
                    let _ = write!(text, "{reason}: {message}");
                    self.push_event(kind, workload, Some(&text), None, Some(policy));
                    self.reason_buf = text;
                }
            }
        }
        progress
    }

    /// Runs until nothing more can change or a limit is reached.
    pub fn run(&mut self, limits: &Limits, mut progress: Option<Progress<'_>>) {
        let until = limits.until.map(|u| self.t0 + u);
        loop {
            if self.settle_instant(limits, &mut progress) == Settle::Stopped {
                break;
            }
            let Some(next) = self.next_time() else {
                break;
            };
            if until.is_some_and(|u| next > u) {
                self.integrate(until.unwrap_or(next));
                break;
            }
            self.advance_to(next);
        }
    }

    /// Runs scheduling cycles at the current instant until one changes nothing (or, guarding
    /// against a livelock such as two preemptors evicting each other's victims forever, until
    /// [`Limits::max_cycles_per_instant`]).
    pub(crate) fn settle_instant(
        &mut self,
        limits: &Limits,
        progress: &mut Option<Progress<'_>>,
    ) -> Settle {
        let max_cycles_per_instant = limits
            .max_cycles_per_instant
            .unwrap_or(1_000 + 10 * self.scheduler.cluster.cluster_queues.len() as u64);
        let mut cycles_at_instant = 0u64;
        loop {
            self.settle_time_events();
            if limits.max_cycles.is_some_and(|m| self.cycles >= m)
                || self.stop.load(std::sync::atomic::Ordering::Relaxed)
            {
                return Settle::Stopped;
            }
            self.refresh_policies();
            // waitForPodsReady.blockAdmission: nothing more is admitted while an admitted
            // workload's pods are not all ready.
            let blocked = self
                .scheduler
                .cluster
                .settings
                .wait_for_pods_ready
                .as_ref()
                .is_some_and(|w| w.block_admission)
                // Kueue counts every workload holding quota whose pods are not ready, those
                // still waiting for their admission checks included.
                && (self.readiness.any_not_ready() || !self.reserved_by.is_empty());
            let mut outcome = if blocked {
                crate::scheduler::CycleOutcome::default()
            } else {
                self.scheduler.schedule(self.now)
            };
            self.cycles += 1;
            self.count_fallbacks();
            let made_progress = self.apply(&mut outcome.decisions);
            self.scheduler.recycle(outcome);
            if let Some(mut observe) = self.observer.take() {
                observe(self);
                self.observer = Some(observe);
            }
            if let Some(p) = progress.as_mut() {
                p(self.seconds(self.now), self.settled, self.lives.len());
            }
            cycles_at_instant += 1;
            if made_progress && cycles_at_instant < max_cycles_per_instant {
                continue;
            }
            if made_progress {
                tracing::warn!(
                    time = self.seconds(self.now),
                    cycles = cycles_at_instant,
                    "no steady state at this instant; advancing the clock"
                );
            }
            return Settle::Settled;
        }
    }

    /// When something next happens: an arrival, a finish, a check's controller, pods becoming
    /// ready (or timing out), a preemption budget refilling.
    pub(crate) fn next_time(&mut self) -> Option<Millis> {
        let next_arrival = self.arrivals.keys().next().copied();
        let next_finish = self.next_finish().map(|(t, _)| t);
        [
            next_arrival,
            next_finish,
            self.checks.next_time(),
            self.readiness.next_time(),
            // A preemptor held by a per-minute preemption budget is retried once it refills.
            self.scheduler.next_wake_up(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Moves the clock to `to` (waiting for the wall clock when paced).
    pub(crate) fn advance_to(&mut self, to: Millis) {
        if let Some(pacer) = &self.pacer {
            pacer.wait_until(to - self.t0, &self.stop);
        }
        self.integrate(to);
    }

    /// Calls `observer` after every scheduling cycle of [`Simulation::run`].
    pub fn observe(&mut self, observer: Observer) {
        self.observer = Some(observer);
    }

    pub fn report(&self) -> Report {
        report::build(self)
    }

    /// The report, ending the simulation: its timeline moves into the report instead of being
    /// copied (the largest part of a large run's memory).
    pub fn into_report(mut self) -> Report {
        self.take_report()
    }

    /// [`into_report`](Simulation::into_report) that leaves the emptied simulation with the
    /// caller: a process about to exit need not free it (see `wasq simulate`). The simulation
    /// must not run again.
    pub fn take_report(&mut self) -> Report {
        let mut report = report::build_from(self, Timeline::default());
        let events = std::mem::take(&mut self.events);
        let keys = self
            .scheduler
            .cluster
            .workloads
            .iter_mut()
            .map(|w| std::mem::take(&mut w.key).into_boxed_str())
            .collect();
        let cluster = self.cluster();
        report.events = Timeline::new(events, keys, report::cq_names(cluster), |a| {
            report::admission_of(cluster, a)
        });
        report
    }
}
