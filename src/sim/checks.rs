//! The simulator's admission-check controllers: a simulated autoscaler playing Kueue's
//! ProvisioningRequest check, and a stand-in for any other controller, so that a scenario
//! shows what queued provisioning does to waits. The check states, and what they mean for a
//! workload, are the core's ([`crate::cluster::checks`]); this module only decides when each
//! check changes state, from annotations:
//!
//! - on a ProvisioningRequestConfig: `sim.wasq.dev/provisioning-delay: 90s` (a request is
//!   answered that long after it is created; default at once), `sim.wasq.dev/provisioning-failures: 2`
//!   (the first two attempts of each workload fail, then it provisions),
//!   `sim.wasq.dev/booking-expires: 10m` (a provisioned booking expires if the workload is not
//!   admitted by then, e.g. because another check is still pending);
//! - on an AdmissionCheck of another controller: `sim.wasq.dev/check-delay: 2m` (Ready that long
//!   after the reservation; default at once).
//!
//! As Kueue's ProvisioningRequest controller: attempt `n` of a workload creates the request
//! `<workload>-<check>-<n>`; a failure within `retryStrategy.backoffLimitCount` retries is
//! `Retry` ("Retrying after failure: …", `requeueAfterSeconds` from the backoff), past it
//! `Rejected`; a provisioned request makes the check `Ready` with the podSet updates
//! `autoscaling.x-k8s.io/consume-provisioning-request` and
//! `autoscaling.x-k8s.io/provisioning-class-name`.

use std::collections::{BTreeMap, BTreeSet};

use crate::api::multikueue::MULTIKUEUE_CONTROLLER;
use crate::cluster::checks::{
    CheckDef, CheckState, PodSetUpdate, ProvisioningConfig, backoff_seconds, request_name,
};
use crate::cluster::{Cluster, Millis, WorkloadId};

use super::duration::parse_millis;

pub const PROVISIONING_DELAY: &str = "sim.wasq.dev/provisioning-delay";
pub const PROVISIONING_FAILURES: &str = "sim.wasq.dev/provisioning-failures";
pub const BOOKING_EXPIRES: &str = "sim.wasq.dev/booking-expires";
pub const CHECK_DELAY: &str = "sim.wasq.dev/check-delay";

/// Pod annotation naming the ProvisioningRequest a pod consumes.
pub const CONSUME_PROVISIONING_REQUEST: &str = "autoscaling.x-k8s.io/consume-provisioning-request";
/// Pod annotation naming the provisioning class.
pub const PROVISIONING_CLASS_NAME: &str = "autoscaling.x-k8s.io/provisioning-class-name";

/// A check state change the simulated controllers make at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub workload: WorkloadId,
    pub check: String,
    pub state: CheckState,
    pub message: String,
    pub requeue_after_seconds: Option<i32>,
    pub pod_set_updates: Vec<PodSetUpdate>,
}

/// What happens to one check of one reservation, and when.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    /// The request is answered (provisioned or failed) or the other controller decides.
    Answer,
    /// A provisioned booking expires unless the workload was admitted.
    BookingExpiry,
}

/// The timers of the simulated controllers.
#[derive(Debug, Default)]
pub struct SimChecks {
    /// (time, workload, reservation, check, step).
    timers: BTreeSet<(Millis, WorkloadId, u64, String, Step)>,
    /// Reservation number per workload: timers of an older reservation are stale.
    reservation: BTreeMap<WorkloadId, u64>,
    /// MultiKueue checks are played by the simulated manager ([`super::multikueue`]), not by
    /// the stand-in: their reservations wait here for it, and it posts their changes.
    multikueue: Option<MultiKueueChecks>,
}

/// The MultiKueue checks a simulated manager plays.
#[derive(Debug, Default)]
struct MultiKueueChecks {
    /// Reservations with a MultiKueue check pending, not yet taken by the manager.
    reserved: Vec<(WorkloadId, String)>,
    /// Workloads whose current reservation has a MultiKueue check: they run on a worker, not
    /// here.
    dispatched: BTreeSet<WorkloadId>,
    /// Changes the manager made, applied at the next settling.
    posted: Vec<Change>,
}

fn annotation_millis(a: &BTreeMap<String, String>, key: &str) -> Option<Millis> {
    a.get(key).and_then(|v| parse_millis(v).ok())
}

impl SimChecks {
    /// The annotations of every AdmissionCheck and ProvisioningRequestConfig that the
    /// simulator reads, with their problems (`AdmissionCheck x: metadata.annotations.k: why`).
    pub fn validate(cluster: &Cluster) -> Vec<String> {
        let mut out = Vec::new();
        for def in cluster.admission_checks.values() {
            let (what, annotations, keys): (String, &BTreeMap<String, String>, &[&str]) =
                match &def.provisioning {
                    Some(p) => (
                        format!("ProvisioningRequestConfig {}", p.name),
                        &p.annotations,
                        &[PROVISIONING_DELAY, BOOKING_EXPIRES],
                    ),
                    None => (
                        format!("AdmissionCheck {}", def.name),
                        &def.annotations,
                        &[CHECK_DELAY],
                    ),
                };
            for key in keys {
                if let Some(v) = annotations.get(*key)
                    && let Err(e) = parse_millis(v)
                {
                    out.push(format!("{what}: metadata.annotations.{key}: {e}"));
                }
            }
            if let Some(p) = &def.provisioning
                && let Some(v) = p.annotations.get(PROVISIONING_FAILURES)
                && v.trim().parse::<u32>().is_err()
            {
                out.push(format!(
                    "{what}: metadata.annotations.{PROVISIONING_FAILURES}: {v:?} must be a \
                     non-negative integer"
                ));
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// From now on MultiKueue checks are played by a simulated manager
    /// ([`SimChecks::take_multikueue_reservations`], [`SimChecks::post`]).
    pub(crate) fn play_multikueue_elsewhere(&mut self) {
        self.multikueue.get_or_insert_with(Default::default);
    }

    /// The reservations with a MultiKueue check pending since the last call: (workload, check).
    pub(crate) fn take_multikueue_reservations(&mut self) -> Vec<(WorkloadId, String)> {
        self.multikueue
            .as_mut()
            .map(|m| std::mem::take(&mut m.reserved))
            .unwrap_or_default()
    }

    /// Whether the workload's current reservation waits for (or was admitted through) a
    /// MultiKueue check played elsewhere: it runs on a worker.
    pub(crate) fn runs_elsewhere(&self, wl: WorkloadId) -> bool {
        self.multikueue
            .as_ref()
            .is_some_and(|m| m.dispatched.contains(&wl))
    }

    /// A check state the simulated manager decided, applied at the next settling.
    pub(crate) fn post(&mut self, change: Change) {
        if let Some(m) = self.multikueue.as_mut() {
            m.posted.push(change);
        }
    }

    /// Whether changes wait to be applied.
    pub(crate) fn has_posted(&self) -> bool {
        self.multikueue
            .as_ref()
            .is_some_and(|m| !m.posted.is_empty())
    }

    /// A reservation of `wl` with the checks `names` pending: the controllers start working.
    pub fn reserved(&mut self, cluster: &Cluster, wl: WorkloadId, names: &[String], now: Millis) {
        let r = self.reservation.entry(wl).or_default();
        *r += 1;
        let r = *r;
        for name in names {
            let Some(def) = cluster.admission_checks.get(name) else {
                continue;
            };
            if def.controller == MULTIKUEUE_CONTROLLER
                && let Some(m) = self.multikueue.as_mut()
            {
                m.reserved.push((wl, name.clone()));
                m.dispatched.insert(wl);
                continue;
            }
            // Kueue creates no request for a workload that uses no managed resource: the check
            // is Ready at once.
            let delay = match &def.provisioning {
                Some(p) if !request_needed(cluster, p, wl) => None,
                Some(p) => annotation_millis(&p.annotations, PROVISIONING_DELAY),
                None => annotation_millis(&def.annotations, CHECK_DELAY),
            };
            self.timers.insert((
                now.saturating_add(delay.unwrap_or(0).max(0)),
                wl,
                r,
                name.clone(),
                Step::Answer,
            ));
        }
    }

    /// The workload no longer holds quota: its pending timers are dropped.
    pub fn released(&mut self, wl: WorkloadId) {
        // Only a workload that reserved with checks pending has a number and timers to make
        // stale; one without checks (every workload, at Kueue's large scale) costs nothing
        // here, where counting it put an entry per workload in this map.
        if let Some(r) = self.reservation.get_mut(&wl) {
            *r += 1;
            self.timers.retain(|t| t.1 != wl);
        }
        if let Some(m) = self.multikueue.as_mut() {
            m.dispatched.remove(&wl);
            m.reserved.retain(|(w, _)| *w != wl);
            m.posted.retain(|c| c.workload != wl);
        }
    }

    /// The workload is admitted: nothing its checks' controllers do matters any more (an
    /// expiring booking is ignored once admitted), so its timers are dropped.
    pub fn admitted(&mut self, wl: WorkloadId) {
        self.timers.retain(|t| t.1 != wl);
    }

    /// When the next timer fires.
    pub fn next_time(&self) -> Option<Millis> {
        self.timers.first().map(|t| t.0)
    }

    /// The changes due at or before `now`, in time order. `retry_count` and `admitted` tell
    /// what the core knows of each workload (its check's retries; whether it is admitted).
    pub fn due(
        &mut self,
        cluster: &Cluster,
        now: Millis,
        retry_count: &dyn Fn(WorkloadId, &str) -> i32,
        admitted: &dyn Fn(WorkloadId) -> bool,
    ) -> Vec<Change> {
        let mut out = self
            .multikueue
            .as_mut()
            .map(|m| std::mem::take(&mut m.posted))
            .unwrap_or_default();
        // The timers due now; those they start (an expiring booking) wait for the next call,
        // when the workload may be admitted already.
        let later = self.timers.split_off(&(
            now.saturating_add(1),
            WorkloadId(0),
            0,
            String::new(),
            Step::Answer,
        ));
        let due_now = std::mem::replace(&mut self.timers, later);
        for (at, wl, r, name, step) in due_now {
            if self.reservation.get(&wl) != Some(&r) {
                continue;
            }
            let Some(def) = cluster.admission_checks.get(&name) else {
                continue;
            };
            let attempt = retry_count(wl, &name) + 1;
            match (&def.provisioning, step) {
                (None, _) => out.push(Change {
                    workload: wl,
                    check: name,
                    state: CheckState::Ready,
                    message: String::new(),
                    requeue_after_seconds: None,
                    pod_set_updates: Vec::new(),
                }),
                (Some(p), Step::Answer) => {
                    let change = self.answer(cluster, def, p, wl, attempt, retry_count(wl, &name));
                    if change.state == CheckState::Ready
                        && let Some(b) = annotation_millis(&p.annotations, BOOKING_EXPIRES)
                    {
                        self.timers.insert((
                            at + b.max(0),
                            wl,
                            r,
                            name.clone(),
                            Step::BookingExpiry,
                        ));
                    }
                    out.push(change);
                }
                (Some(p), Step::BookingExpiry) => {
                    // Kueue ignores an expired booking once the workload is admitted.
                    if admitted(wl) {
                        continue;
                    }
                    out.push(failure(
                        wl,
                        &name,
                        p,
                        attempt,
                        retry_count(wl, &name),
                        "Retrying after booking expired",
                        "the booking expired before the workload was admitted (simulated)",
                    ));
                }
            }
        }
        out
    }

    /// The simulated autoscaler's answer to attempt `attempt` of `wl`'s request.
    fn answer(
        &self,
        cluster: &Cluster,
        def: &CheckDef,
        p: &ProvisioningConfig,
        wl: WorkloadId,
        attempt: i32,
        retries: i32,
    ) -> Change {
        let failures: i32 = p
            .annotations
            .get(PROVISIONING_FAILURES)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        if attempt <= failures && request_needed(cluster, p, wl) {
            return failure(
                wl,
                &def.name,
                p,
                attempt,
                retries,
                "Retrying after failure",
                &format!("the simulated autoscaler failed attempt {attempt} of {failures}"),
            );
        }
        let info = cluster.workload(wl);
        let request = request_name(&info.name, &def.name, attempt);
        let pod_set_updates: Vec<PodSetUpdate> = info
            .pod_sets
            .iter()
            .filter(|ps| ps.count > 0 && uses_managed(cluster, p, &ps.requests))
            .map(|ps| PodSetUpdate {
                name: ps.name.to_string(),
                annotations: BTreeMap::from([
                    (CONSUME_PROVISIONING_REQUEST.to_string(), request.clone()),
                    (PROVISIONING_CLASS_NAME.to_string(), p.class.clone()),
                ]),
                ..PodSetUpdate::default()
            })
            .collect();
        let message = if pod_set_updates.is_empty() {
            "the provisioning request is not needed".to_string()
        } else {
            format!("Provisioning Request {request:?} was provisioned (simulated)")
        };
        Change {
            workload: wl,
            check: def.name.clone(),
            state: CheckState::Ready,
            message,
            requeue_after_seconds: None,
            pod_set_updates,
        }
    }
}

/// Whether a podSet's requests use a resource the config manages (all do when it names none).
fn uses_managed(
    cluster: &Cluster,
    p: &ProvisioningConfig,
    requests: &[(crate::quota::ResourceId, i64)],
) -> bool {
    p.managed_resources.is_empty()
        || requests.iter().any(|(r, _)| {
            p.managed_resources
                .iter()
                .any(|m| cluster.names.resource_name(*r) == m)
        })
}

/// Kueue's `reqIsNeeded`: some podSet with pods uses a managed resource.
fn request_needed(cluster: &Cluster, p: &ProvisioningConfig, wl: WorkloadId) -> bool {
    cluster
        .workload(wl)
        .pod_sets
        .iter()
        .any(|ps| ps.count > 0 && uses_managed(cluster, p, &ps.requests))
}

/// A failed (or expired) request: `Retry` within the retry limit, `Rejected` past it, as
/// Kueue's ProvisioningRequest controller.
fn failure(
    wl: WorkloadId,
    check: &str,
    p: &ProvisioningConfig,
    attempt: i32,
    retries: i32,
    retrying: &str,
    why: &str,
) -> Change {
    let limit = p.retry.backoff_limit_count();
    let (state, message, requeue_after_seconds) = if attempt <= limit {
        (
            CheckState::Retry,
            format!("{retrying}: {why}"),
            Some(backoff_seconds(
                p.retry.backoff_base_seconds(),
                p.retry.backoff_max_seconds(),
                retries + 1,
            )),
        )
    } else {
        (CheckState::Rejected, why.to_string(), None)
    };
    Change {
        workload: wl,
        check: check.to_string(),
        state,
        message,
        requeue_after_seconds,
        pod_set_updates: Vec::new(),
    }
}
