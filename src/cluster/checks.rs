//! Admission checks: Kueue's two-phase admission, written once for both drivers.
//!
//! A workload first reserves quota (`QuotaReserved`); the admission checks of its ClusterQueue
//! that apply to the flavors it was assigned (`onFlavors`; none = every flavor) start
//! `Pending`, and it is `Admitted` once all of them are `Ready`. A check in `Retry` evicts it
//! (reason `AdmissionCheck`): the quota is released, every check is reset to `Pending` (the
//! retried one counting the retry) and the workload is queued again, not before the check's
//! `requeueAfterSeconds`, at the position of its eviction. A `Rejected` check deactivates it.
//! The checks' controllers (the ProvisioningRequest controller, or the simulator's autoscaler)
//! decide the states; this module keeps them and says what each change means.
//!
//! Kueue's words: `pkg/workload/admissionchecks.go`, `pkg/controller/core/workload_controller.go`
//! (`buildAdmissionChecksMessage`, `resetChecksOnEviction`), `pkg/workload/evict/evict.go`;
//! whether a check is active: `pkg/controller/admissionchecks/provisioning/admissioncheck_reconciler.go`
//! and `pkg/controller/admissionchecks/multikueue/admissioncheck.go`.

use std::collections::BTreeMap;

use super::{FlavorId, Millis};
use crate::api::checks::{
    AdmissionCheck, PROVISIONING_REQUEST_CONFIG_KIND, PROVISIONING_REQUEST_CONTROLLER,
    ProvisioningRequestConfig, RetryStrategy,
};
use crate::api::multikueue::{
    MULTIKUEUE_CONFIG_KIND, MULTIKUEUE_CONTROLLER, MultiKueueCluster, MultiKueueConfig, reasons,
};

/// Kueue's `CheckState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum CheckState {
    Pending,
    Ready,
    Retry,
    Rejected,
}

impl CheckState {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckState::Pending => "Pending",
            CheckState::Ready => "Ready",
            CheckState::Retry => "Retry",
            CheckState::Rejected => "Rejected",
        }
    }
}

/// Labels, annotations, node selector and tolerations a check asks to add to a podSet's pods
/// (Kueue's `PodSetUpdate`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodSetUpdate {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub node_selector: BTreeMap<String, String>,
}

/// One check's state on one workload (Kueue's `AdmissionCheckState`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckStatus {
    pub name: String,
    pub state: CheckState,
    pub message: String,
    pub last_transition: Millis,
    pub retry_count: Option<i32>,
    pub requeue_after_seconds: Option<i32>,
    pub pod_set_updates: Vec<PodSetUpdate>,
}

/// What a change of check states does to the workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Still waiting for some check.
    Waiting,
    /// Every check is `Ready`: the workload is admitted.
    Admitted,
    /// A check is in `Retry`: evict with reason `AdmissionCheck` and this message, and queue
    /// the workload again no earlier than `requeue_at`.
    Evict { message: String, requeue_at: Millis },
    /// A check is `Rejected`: deactivate with this message (`DeactivationTarget`, reason
    /// `AdmissionCheck`).
    Deactivate { message: String },
}

/// The checks of one workload that holds (or held) quota.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkloadChecks {
    /// Sorted by name, as Kueue keeps them.
    pub checks: Vec<CheckStatus>,
}

impl WorkloadChecks {
    /// Starts (or restarts, after an eviction) the checks `names` as `Pending`; retry counts of
    /// checks already known are kept.
    pub fn reserve(&mut self, names: &[String], now: Millis) {
        let mut next: Vec<CheckStatus> = names
            .iter()
            .map(|n| {
                self.get(n).cloned().unwrap_or(CheckStatus {
                    name: n.clone(),
                    state: CheckState::Pending,
                    message: String::new(),
                    last_transition: now,
                    retry_count: None,
                    requeue_after_seconds: None,
                    pod_set_updates: Vec::new(),
                })
            })
            .collect();
        next.sort_by(|a, b| a.name.cmp(&b.name));
        next.dedup_by(|a, b| a.name == b.name);
        self.checks = next;
    }

    pub fn get(&self, name: &str) -> Option<&CheckStatus> {
        self.checks.iter().find(|c| c.name == name)
    }

    /// Kueue's `SetAdmissionCheckState`: the transition time moves only when the state changes;
    /// message, podSet updates and requeue delay are always replaced.
    pub fn set(
        &mut self,
        name: &str,
        state: CheckState,
        message: &str,
        requeue_after_seconds: Option<i32>,
        pod_set_updates: Vec<PodSetUpdate>,
        now: Millis,
    ) {
        let Some(c) = self.checks.iter_mut().find(|c| c.name == name) else {
            return;
        };
        if c.state != state {
            c.last_transition = now;
        }
        c.state = state;
        c.message = message.to_string();
        c.requeue_after_seconds = requeue_after_seconds;
        c.pod_set_updates = pod_set_updates;
    }

    /// What the current states mean for the workload. `Rejected` wins over `Retry`; a `Retry`
    /// check's delay counts from its transition.
    pub fn outcome(&self) -> Outcome {
        let of = |s: CheckState| -> Vec<&CheckStatus> {
            self.checks.iter().filter(|c| c.state == s).collect()
        };
        let rejected = of(CheckState::Rejected);
        if !rejected.is_empty() {
            return Outcome::Deactivate {
                message: checks_message(&rejected, CheckState::Rejected),
            };
        }
        let retry = of(CheckState::Retry);
        if !retry.is_empty() {
            let requeue_at = retry
                .iter()
                .map(|c| {
                    c.last_transition.saturating_add(
                        Millis::from(c.requeue_after_seconds.unwrap_or(0).max(0)) * 1000,
                    )
                })
                .max()
                .unwrap_or_default();
            return Outcome::Evict {
                message: format!(
                    "Evicted due to {}",
                    checks_message(&retry, CheckState::Retry)
                ),
                requeue_at,
            };
        }
        if self.checks.iter().all(|c| c.state == CheckState::Ready) {
            Outcome::Admitted
        } else {
            Outcome::Waiting
        }
    }

    /// Kueue's `resetChecksOnEviction`: every check not `Pending` goes back to `Pending` with
    /// the message saying what it was; a retried check counts the retry, the others lose
    /// their count; podSet updates are dropped.
    pub fn reset_on_eviction(&mut self, now: Millis) {
        for c in &mut self.checks {
            if c.state == CheckState::Pending {
                continue;
            }
            c.retry_count = match c.state {
                CheckState::Retry => Some(c.retry_count.unwrap_or(0).saturating_add(1)),
                _ => None,
            };
            c.message = format!(
                "Reset to Pending after eviction. Previously: {}",
                c.state.as_str()
            );
            c.state = CheckState::Pending;
            c.last_transition = now;
            c.pod_set_updates.clear();
        }
    }
}

/// Kueue's `buildAdmissionChecksMessage`: `AdmissionCheck in Retry state: "prov" (why)`.
fn checks_message(checks: &[&CheckStatus], state: CheckState) -> String {
    let mut sorted: Vec<&&CheckStatus> = checks.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let parts: Vec<String> = sorted
        .iter()
        .map(|c| {
            if c.message.is_empty() {
                format!("{:?}", c.name)
            } else {
                format!("{:?} ({})", c.name, c.message)
            }
        })
        .collect();
    let noun = if checks.len() > 1 {
        "AdmissionChecks"
    } else {
        "AdmissionCheck"
    };
    format!("{noun} in {} state: {}", state.as_str(), parts.join("; "))
}

/// Kueue's backoff (`pkg/util/wait/backoff.go`, jitter left out): the `n`-th wait is
/// `base · 2^(n-1)`, capped at `max` (a `base` above `max` is waited once, uncapped).
pub fn backoff_seconds(base: i32, max: i32, n: i32) -> i32 {
    if n <= 0 {
        return 0;
    }
    let mut d = i64::from(base.max(0));
    let cap = if max <= 0 {
        i64::MAX / 2
    } else {
        i64::from(max)
    };
    for _ in 1..n {
        if d >= cap {
            d = cap;
            break;
        }
        d = (d * 2).min(cap);
    }
    d.min(i64::from(i32::MAX)) as i32
}

/// Kueue's `limitObjectName`: names longer than 247 bytes are cut there and suffixed with `-`
/// and five hex digits of their SHA-1.
pub fn limit_object_name(name: &str) -> String {
    const PREFIX: usize = 247;
    if name.len() <= PREFIX {
        return name.to_string();
    }
    use sha1::{Digest, Sha1};
    let digest = Sha1::digest(name.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let mut cut = PREFIX;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}-{}", &name[..cut], &hex[..5])
}

/// Kueue's ProvisioningRequest name for attempt `attempt` of `workload`'s check `check`:
/// `<workload>-<check>-<attempt>`, limited as [`limit_object_name`]. The controller creates
/// requests of this name; the simulator names its simulated ones the same.
pub fn request_name(workload: &str, check: &str, attempt: i32) -> String {
    limit_object_name(&format!("{workload}-{check}-{attempt}"))
}

/// An AdmissionCheck as the core sees it: its controller, whether it is active (and why not),
/// for the ProvisioningRequest check its configuration, for a MultiKueue check its clusters.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckDef {
    pub name: String,
    pub controller: String,
    /// `None` when active; otherwise the `Active=False` message.
    pub inactive: Option<String>,
    pub provisioning: Option<ProvisioningConfig>,
    /// A MultiKueue check whose MultiKueueConfig exists: its clusters and which are usable.
    pub multikueue: Option<MultiKueueCheck>,
    pub annotations: BTreeMap<String, String>,
}

/// The objects an AdmissionCheck's parameters may name.
#[derive(Debug, Clone, Copy, Default)]
pub struct CheckParameters<'a> {
    pub provisioning: &'a [ProvisioningRequestConfig],
    pub multikueue_configs: &'a [MultiKueueConfig],
    pub multikueue_clusters: &'a [MultiKueueCluster],
}

impl<'a> CheckParameters<'a> {
    /// Those the manifests hold.
    pub fn of(m: &'a crate::api::Manifests) -> CheckParameters<'a> {
        CheckParameters {
            provisioning: &m.provisioning_request_configs,
            multikueue_configs: &m.multikueue_configs,
            multikueue_clusters: &m.multikueue_clusters,
        }
    }
}

/// A MultiKueue check's config resolved: the worker clusters it dispatches to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultiKueueCheck {
    /// The MultiKueueConfig's name.
    pub config: String,
    /// Its `spec.clusters`, in order (the Incremental dispatcher's order).
    pub clusters: Vec<String>,
    /// Those without a MultiKueueCluster, in that order.
    pub missing: Vec<String>,
    /// Those whose MultiKueueCluster is not active
    /// ([`MultiKueueCluster::active_in_manifests`]), in that order.
    pub inactive: Vec<String>,
}

impl MultiKueueCheck {
    /// The clusters a Workload may be dispatched to, in the config's order.
    pub fn usable(&self) -> Vec<&str> {
        self.clusters
            .iter()
            .filter(|c| !self.missing.contains(c) && !self.inactive.contains(c))
            .map(String::as_str)
            .collect()
    }
}

/// The `Active` condition an AdmissionCheck's controller writes: status, reason, message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveCondition {
    pub status: bool,
    pub reason: &'static str,
    pub message: String,
}

/// The `Active` condition's message when a check is active.
pub const ACTIVE_MESSAGE: &str = "The admission check is active";

/// Kueue's MultiKueue AdmissionCheck reconciler (`ACReconciler.Reconcile`): the `Active`
/// condition of a check of controller `kueue.x-k8s.io/multikueue`, and its config's clusters
/// when the config exists. Missing or inactive clusters leave the check active
/// (`SomeActiveClusters`) unless none is usable (`NoUsableClusters`); a config that cannot be
/// loaded makes it inactive (`BadConfig`).
pub fn multikueue_condition(
    ac: &AdmissionCheck,
    configs: &[MultiKueueConfig],
    clusters: &[MultiKueueCluster],
) -> (ActiveCondition, Option<MultiKueueCheck>) {
    let config = parameters_ref(ac, MULTIKUEUE_CONFIG_KIND).and_then(|name| {
        configs
            .iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| format!("multikueueconfigs.kueue.x-k8s.io {name:?} not found"))
    });
    let config = match config {
        Ok(c) => c,
        Err(e) => {
            let condition = ActiveCondition {
                status: false,
                reason: reasons::BAD_CONFIG,
                message: format!("Cannot load the AdmissionChecks parameters: {e}"),
            };
            return (condition, None);
        }
    };
    let mut check = MultiKueueCheck {
        config: config.name().to_string(),
        clusters: config.clusters().to_vec(),
        missing: Vec::new(),
        inactive: Vec::new(),
    };
    for name in config.clusters() {
        match clusters.iter().find(|c| c.name() == name) {
            None => check.missing.push(name.clone()),
            Some(c) if !c.active_in_manifests() => check.inactive.push(name.clone()),
            Some(_) => {}
        }
    }
    let unusable = check.missing.len() + check.inactive.len();
    let mut condition = ActiveCondition {
        status: true,
        reason: reasons::ACTIVE,
        message: ACTIVE_MESSAGE.into(),
    };
    if unusable > 0 {
        if unusable < check.clusters.len() {
            condition.reason = reasons::SOME_ACTIVE_CLUSTERS;
        } else {
            condition.status = false;
            condition.reason = reasons::NO_USABLE_CLUSTERS;
        }
        // Go's `%v` of a slice: `[a b]`.
        let list = |names: &[String]| format!("[{}]", names.join(" "));
        let mut parts = Vec::new();
        if !check.missing.is_empty() {
            parts.push(format!("Missing clusters: {}", list(&check.missing)));
        }
        if !check.inactive.is_empty() {
            parts.push(format!("Inactive clusters: {}", list(&check.inactive)));
        }
        condition.message = parts.join(", ");
    }
    (condition, Some(check))
}

/// A ProvisioningRequestConfig as the ProvisioningRequest check uses it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProvisioningConfig {
    pub name: String,
    pub class: String,
    pub parameters: BTreeMap<String, String>,
    pub managed_resources: Vec<String>,
    pub retry: RetryStrategy,
    /// `podSetUpdates.nodeSelector`: node label key → provisioning class detail.
    pub node_selector: Vec<(String, String)>,
    pub annotations: BTreeMap<String, String>,
}

impl CheckDef {
    /// The core's view of `ac`: an `Active=False` condition it carries makes it inactive;
    /// the checks of Kueue's own controllers are judged as those controllers judge them — a
    /// ProvisioningRequest check's parameters must resolve (`BadParametersRef` messages), a
    /// MultiKueue check's config must exist and list a usable cluster
    /// ([`multikueue_condition`]).
    pub fn of(ac: &AdmissionCheck, params: CheckParameters<'_>) -> CheckDef {
        let name = ac.metadata.name.clone().unwrap_or_default();
        let controller = ac.spec.controller_name.clone();
        let mut inactive = status_inactive(ac);
        let mut provisioning = None;
        let mut multikueue = None;
        if controller == PROVISIONING_REQUEST_CONTROLLER {
            match provisioning_config(ac, params.provisioning) {
                Ok(c) => provisioning = Some(c),
                Err(message) => inactive = Some(message),
            }
        } else if controller == MULTIKUEUE_CONTROLLER {
            let (condition, check) =
                multikueue_condition(ac, params.multikueue_configs, params.multikueue_clusters);
            if !condition.status {
                inactive = Some(condition.message);
            }
            multikueue = check;
        }
        CheckDef {
            name,
            controller,
            inactive,
            provisioning,
            multikueue,
            annotations: ac.metadata.annotations.clone().unwrap_or_default(),
        }
    }
}

/// An `Active=False` condition written on the AdmissionCheck (a controller's verdict).
fn status_inactive(ac: &AdmissionCheck) -> Option<String> {
    let c = ac
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == crate::api::checks::ADMISSION_CHECK_ACTIVE)?;
    (c.status != "True").then(|| c.message.clone())
}

/// Kueue's `refValidForGK`: the name of the `kueue.x-k8s.io` object of kind `kind` that the
/// check's parameters name.
fn parameters_ref<'a>(ac: &'a AdmissionCheck, kind: &str) -> Result<&'a str, String> {
    let bad = |m: String| format!("{m}: bad parameters reference");
    let Some(p) = &ac.spec.parameters else {
        return Err("missing parameters reference".into());
    };
    if p.name.is_empty() {
        return Err(bad("empty name".into()));
    }
    if p.api_group != crate::api::GROUP {
        return Err(bad(format!(
            "wrong group {:?}, expecting {:?}",
            p.api_group,
            crate::api::GROUP
        )));
    }
    if p.kind != kind {
        return Err(bad(format!("wrong kind {:?}, expecting {kind:?}", p.kind)));
    }
    Ok(&p.name)
}

/// Kueue's `ConfigFromRef` for the ProvisioningRequest check.
fn provisioning_config(
    ac: &AdmissionCheck,
    configs: &[ProvisioningRequestConfig],
) -> Result<ProvisioningConfig, String> {
    let name = parameters_ref(ac, PROVISIONING_REQUEST_CONFIG_KIND)?;
    let Some(c) = configs
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some(name))
    else {
        return Err(format!(
            "provisioningrequestconfigs.kueue.x-k8s.io {name:?} not found"
        ));
    };
    Ok(ProvisioningConfig {
        name: name.to_string(),
        class: c.spec.provisioning_class_name.clone(),
        parameters: c.spec.parameters.clone(),
        managed_resources: c.spec.managed_resources.clone(),
        retry: c.spec.retry_strategy(),
        node_selector: c
            .spec
            .pod_set_updates
            .iter()
            .flat_map(|u| &u.node_selector)
            .map(|n| {
                (
                    n.key.clone(),
                    n.value_from_provisioning_class_detail.clone(),
                )
            })
            .collect(),
        annotations: c.metadata.annotations.clone().unwrap_or_default(),
    })
}

/// One check of a ClusterQueue and the flavors it applies to (every flavor of the queue when
/// the rule names none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRule {
    pub name: String,
    pub flavors: Vec<FlavorId>,
}

/// The checks of `rules` that apply to an admission assigned `assigned` flavors: those whose
/// flavors intersect them (Kueue's `AdmissionChecksForWorkload` with an admission).
pub fn applicable(rules: &[CheckRule], assigned: &[FlavorId]) -> Vec<String> {
    rules
        .iter()
        .filter(|r| r.flavors.iter().any(|f| assigned.contains(f)))
        .map(|r| r.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(names: &[&str]) -> WorkloadChecks {
        let mut w = WorkloadChecks::default();
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        w.reserve(&names, 0);
        w
    }

    #[test]
    fn all_ready_admits_and_any_pending_waits() {
        let mut w = pending(&["prov", "budget"]);
        assert_eq!(w.checks[0].name, "budget", "sorted by name");
        w.set("prov", CheckState::Ready, "", None, vec![], 10);
        assert_eq!(w.outcome(), Outcome::Waiting);
        w.set("budget", CheckState::Ready, "ok", None, vec![], 20);
        assert_eq!(w.outcome(), Outcome::Admitted);
        assert!(WorkloadChecks::default().outcome() == Outcome::Admitted);
    }

    #[test]
    fn retry_evicts_with_kueues_message_and_delay_then_resets() {
        let mut w = pending(&["prov", "budget"]);
        w.set("budget", CheckState::Ready, "", None, vec![], 5);
        w.set(
            "prov",
            CheckState::Retry,
            "Retrying after failure: no capacity",
            Some(60),
            vec![],
            90_000,
        );
        assert_eq!(
            w.outcome(),
            Outcome::Evict {
                message: r#"Evicted due to AdmissionCheck in Retry state: "prov" (Retrying after failure: no capacity)"#.into(),
                requeue_at: 150_000
            }
        );
        w.reset_on_eviction(90_000);
        let prov = w.get("prov").unwrap();
        assert_eq!(
            (prov.state, prov.retry_count, prov.message.as_str()),
            (
                CheckState::Pending,
                Some(1),
                "Reset to Pending after eviction. Previously: Retry"
            )
        );
        assert_eq!(w.get("budget").unwrap().retry_count, None);
        // A new reservation keeps the count.
        w.reserve(&["prov".into(), "budget".into()], 200_000);
        assert_eq!(w.get("prov").unwrap().retry_count, Some(1));
    }

    #[test]
    fn rejected_deactivates_even_with_a_retry() {
        let mut w = pending(&["a", "b"]);
        w.set("a", CheckState::Retry, "", None, vec![], 1);
        w.set("b", CheckState::Rejected, "quota exceeded", None, vec![], 1);
        assert_eq!(
            w.outcome(),
            Outcome::Deactivate {
                message: r#"AdmissionCheck in Rejected state: "b" (quota exceeded)"#.into()
            }
        );
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let waits: Vec<i32> = (1..=7).map(|n| backoff_seconds(60, 1800, n)).collect();
        assert_eq!(waits, [60, 120, 240, 480, 960, 1800, 1800]);
        assert_eq!(
            backoff_seconds(100, 50, 1),
            100,
            "a base above the cap waits once"
        );
        assert_eq!(backoff_seconds(100, 50, 2), 50);
    }

    #[test]
    fn checks_apply_to_the_flavors_they_name() {
        let (a, b) = (FlavorId(0), FlavorId(1));
        let rules = vec![
            CheckRule {
                name: "all".into(),
                flavors: vec![a, b],
            },
            CheckRule {
                name: "gpu-only".into(),
                flavors: vec![b],
            },
        ];
        assert_eq!(applicable(&rules, &[a]), ["all"]);
        assert_eq!(applicable(&rules, &[a, b]), ["all", "gpu-only"]);
    }
}
