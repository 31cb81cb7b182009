//! Two-phase admission as the controller writes it: a Workload's `status.admissionChecks`
//! turned into the core's [`WorkloadChecks`] and back, the Admitted condition while checks are
//! outstanding, and the checks' `podSetUpdates` merged into the pod templates at start (Kueue's
//! `getPodSetsInfoFromStatus` and `PodSetInfo.Merge`: a key set twice to different values is a
//! conflict, reported with the check's name).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Toleration;

use crate::api::{AdmissionCheckState, PodSetUpdate, Workload};
use crate::cluster::checks::{self as core_checks, CheckState, CheckStatus, WorkloadChecks};
use crate::cluster::{EvictionReason, Millis};
use crate::k8s::status::conditions as cond;

/// Admitted=False while a check is not Ready.
pub const UNSATISFIED_CHECKS: &str = "UnsatisfiedAdmissionChecks";
pub const UNSATISFIED_CHECKS_MESSAGE: &str = "The workload has not all checks ready";
/// Evicted reason of a check in `Retry`.
pub const EVICTED_BY_ADMISSION_CHECK: &str = EvictionReason::AdmissionCheck.as_str();
/// The condition a `Rejected` check sets (reason `AdmissionCheck`), and the Evicted reason of
/// the deactivation that follows.
pub const DEACTIVATION_TARGET: &str = "DeactivationTarget";
pub const DEACTIVATED_BY_ADMISSION_CHECK: &str = "DeactivatedDueToAdmissionCheck";

/// The check states written on a Workload.
pub fn states(wl: &Workload) -> &[AdmissionCheckState] {
    wl.status
        .as_ref()
        .and_then(|s| s.admission_checks.as_deref())
        .unwrap_or_default()
}

fn parse_state(s: &str) -> CheckState {
    match s {
        "Ready" => CheckState::Ready,
        "Retry" => CheckState::Retry,
        "Rejected" => CheckState::Rejected,
        _ => CheckState::Pending,
    }
}

fn millis(t: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>) -> Millis {
    t.map(|t| t.0.as_millisecond()).unwrap_or(0)
}

/// The core's view of written check states.
pub fn to_core(states: &[AdmissionCheckState]) -> WorkloadChecks {
    let mut checks: Vec<CheckStatus> = states
        .iter()
        .map(|s| CheckStatus {
            name: s.name.clone(),
            state: parse_state(&s.state),
            message: s.message.clone(),
            last_transition: millis(s.last_transition_time.as_ref()),
            retry_count: s.retry_count,
            requeue_after_seconds: s.requeue_after_seconds,
            pod_set_updates: s
                .pod_set_updates
                .iter()
                .map(|u| core_checks::PodSetUpdate {
                    name: u.name.clone(),
                    labels: u.labels.clone(),
                    annotations: u.annotations.clone(),
                    node_selector: u.node_selector.clone(),
                })
                .collect(),
        })
        .collect();
    checks.sort_by(|a, b| a.name.cmp(&b.name));
    WorkloadChecks { checks }
}

/// Check states to write from the core's view. PodSet updates (with their tolerations, which
/// the core does not keep) come from `previous` while the core still has some.
pub fn from_core(
    wc: &WorkloadChecks,
    previous: &[AdmissionCheckState],
) -> Vec<AdmissionCheckState> {
    wc.checks
        .iter()
        .map(|c| AdmissionCheckState {
            name: c.name.clone(),
            state: c.state.as_str().to_string(),
            message: c.message.clone(),
            last_transition_time: Some(cond::time(c.last_transition)),
            retry_count: c.retry_count,
            requeue_after_seconds: c.requeue_after_seconds,
            pod_set_updates: if c.pod_set_updates.is_empty() {
                Vec::new()
            } else {
                previous
                    .iter()
                    .find(|p| p.name == c.name)
                    .map(|p| p.pod_set_updates.clone())
                    .unwrap_or_default()
            },
        })
        .collect()
}

/// The states written at quota reservation: `names` Pending, keeping what is known of them
/// (a retried check's count), others dropped (Kueue's `syncAdmissionCheckConditions`).
pub fn reserved_states(
    names: &[String],
    previous: &[AdmissionCheckState],
    now: Millis,
) -> Vec<AdmissionCheckState> {
    let mut wc = to_core(previous);
    wc.reserve(names, now);
    from_core(&wc, previous)
}

/// Kueue's `resetChecksOnEviction` on written states.
pub fn reset_states(previous: &[AdmissionCheckState], now: Millis) -> Vec<AdmissionCheckState> {
    let mut wc = to_core(previous);
    wc.reset_on_eviction(now);
    from_core(&wc, previous)
}

/// Kueue's `prepareForEviction` on MultiKueue's fields: an evicted Workload is dispatched
/// anew, so `status.clusterName` and `status.nominatedClusterNames` are cleared.
pub fn clear_dispatch(st: &mut crate::api::WorkloadStatus) {
    st.cluster_name = None;
    st.nominated_cluster_names.clear();
}

/// What the checks add to one podSet's pods.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Merged {
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<Toleration>,
}

fn conflict(
    what: &str,
    base: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
) -> Result<(), String> {
    for (k, v) in new {
        if let Some(old) = base.get(k)
            && old != v
        {
            return Err(format!(
                "invalid admission check PodSetUpdate: conflict for {what}: conflict for key={k}, value1={old}, value2={v}"
            ));
        }
    }
    Ok(())
}

/// The podSet updates of every check, merged per podSet in the checks' order (the first update
/// of a check naming a podSet counts). `base` gives, per podSet, what its pods already carry
/// (template labels, annotations and node selector with the flavors' node labels): a key an
/// update sets to another value is a conflict, `in admission check "<name>": …`.
pub fn merged_updates(
    states: &[AdmissionCheckState],
    base: &BTreeMap<String, Merged>,
) -> Result<BTreeMap<String, Merged>, String> {
    let mut out: BTreeMap<String, Merged> = BTreeMap::new();
    for s in states {
        let mut seen: Vec<&str> = Vec::new();
        for u in &s.pod_set_updates {
            if seen.contains(&u.name.as_str()) {
                continue;
            }
            seen.push(&u.name);
            let m = out.entry(u.name.clone()).or_default();
            let b = base.get(&u.name).cloned().unwrap_or_default();
            let with = |own: &BTreeMap<String, String>, base: &BTreeMap<String, String>| {
                let mut all = base.clone();
                all.extend(own.clone());
                all
            };
            let check =
                |what: &str, have: BTreeMap<String, String>, new: &BTreeMap<String, String>| {
                    conflict(what, &have, new)
                        .map_err(|e| format!("in admission check {:?}: {e}", s.name))
                };
            check(
                "annotations",
                with(&m.annotations, &b.annotations),
                &u.annotations,
            )?;
            check("labels", with(&m.labels, &b.labels), &u.labels)?;
            check(
                "nodeSelector",
                with(&m.node_selector, &b.node_selector),
                &u.node_selector,
            )?;
            merge_update(m, u);
        }
    }
    Ok(out)
}

fn merge_update(m: &mut Merged, u: &PodSetUpdate) {
    m.labels.extend(u.labels.clone());
    m.annotations.extend(u.annotations.clone());
    m.node_selector.extend(u.node_selector.clone());
    for t in &u.tolerations {
        if !m.tolerations.contains(t) {
            m.tolerations.push(t.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(name: &str, updates: Vec<PodSetUpdate>) -> AdmissionCheckState {
        AdmissionCheckState {
            name: name.into(),
            state: "Ready".into(),
            pod_set_updates: updates,
            ..AdmissionCheckState::default()
        }
    }

    fn update(ps: &str, key: &str, value: &str) -> PodSetUpdate {
        PodSetUpdate {
            name: ps.into(),
            annotations: [(key.to_string(), value.to_string())].into(),
            ..PodSetUpdate::default()
        }
    }

    #[test]
    fn updates_merge_and_a_conflict_names_the_check() {
        let states = vec![
            state("a", vec![update("workers", "k", "1")]),
            state("b", vec![update("workers", "j", "2")]),
        ];
        let m = merged_updates(&states, &BTreeMap::new()).unwrap();
        assert_eq!(m["workers"].annotations.len(), 2);
        let states = vec![
            state("a", vec![update("workers", "k", "1")]),
            state("b", vec![update("workers", "k", "2")]),
        ];
        assert_eq!(
            merged_updates(&states, &BTreeMap::new()).unwrap_err(),
            r#"in admission check "b": invalid admission check PodSetUpdate: conflict for annotations: conflict for key=k, value1=1, value2=2"#
        );
    }

    #[test]
    fn reset_counts_the_retry() {
        let mut s = state("prov", vec![]);
        s.state = "Retry".into();
        s.requeue_after_seconds = Some(60);
        let out = reset_states(&[s], 5_000);
        assert_eq!(out[0].state, "Pending");
        assert_eq!(out[0].retry_count, Some(1));
        assert_eq!(out[0].requeue_after_seconds, Some(60));
    }
}
