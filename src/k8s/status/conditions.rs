//! Kueue's Workload conditions (`QuotaReserved`, `Admitted`, `Evicted`, `Preempted`, `Requeued`,
//! `Finished`) with Kueue's reasons and messages, and `metav1.Condition` bookkeeping.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::api::Condition;
use crate::cluster::Millis;

pub const QUOTA_RESERVED: &str = "QuotaReserved";
pub const ADMITTED: &str = "Admitted";
pub const EVICTED: &str = "Evicted";
pub const PREEMPTED: &str = "Preempted";
pub const REQUEUED: &str = "Requeued";
pub const FINISHED: &str = "Finished";
pub const PODS_READY: &str = "PodsReady";

/// `Evicted` reason for preemption (`kueue.WorkloadEvictedByPreemption`).
pub const EVICTED_BY_PREEMPTION: &str = "Preempted";
/// `Admitted=False` reason once quota is gone.
pub const NO_RESERVATION: &str = "NoReservation";
/// `QuotaReserved=False` reason after an eviction completed (Kueue's `PendingEvaluation`).
pub const PENDING_EVALUATION: &str = "PendingEvaluation";
pub const FINISHED_SUCCEEDED: &str = "Succeeded";
pub const FINISHED_FAILED: &str = "Failed";

/// A `metav1.Time` for `ms` since the epoch.
pub fn time(ms: Millis) -> Time {
    Time(jiff::Timestamp::from_millisecond(ms).unwrap_or(jiff::Timestamp::UNIX_EPOCH))
}

/// A condition stamped at `now`.
pub fn condition(type_: &str, status: bool, reason: &str, message: &str, now: Millis) -> Condition {
    Condition {
        type_: type_.into(),
        status: if status { "True" } else { "False" }.into(),
        reason: reason.into(),
        message: truncate(message, 32 * 1024),
        last_transition_time: Some(time(now)),
        observed_generation: None,
    }
}

/// `apimeta.SetStatusCondition`: replaces the condition of the same type, keeping its
/// transition time when the status does not change. Returns whether anything changed.
pub fn set(conditions: &mut Vec<Condition>, mut new: Condition) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        None => {
            conditions.push(new);
            true
        }
        Some(old) => {
            if old.status == new.status {
                new.last_transition_time = old.last_transition_time.clone();
            }
            let changed = *old != new;
            *old = new;
            changed
        }
    }
}

/// Whether `type_` is present with status `True`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    conditions
        .iter()
        .any(|c| c.type_ == type_ && c.status == "True")
}

pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Kueue's `resetActiveCondition`: a `True` condition becomes `False` with the given reason and
/// the message `Previously: <old message>`.
pub fn reset_active(
    conditions: &mut Vec<Condition>,
    type_: &str,
    reason: &str,
    now: Millis,
) -> bool {
    let Some(prev) = find(conditions, type_).filter(|c| c.status == "True") else {
        return false;
    };
    let message = format!("Previously: {}", prev.message);
    set(conditions, condition(type_, false, reason, &message, now))
}

/// `QuotaReserved` message on admission.
pub fn quota_reserved_message(cluster_queue: &str) -> String {
    format!("Quota reserved in ClusterQueue {cluster_queue}")
}

/// `Admitted=True` message (`SyncAdmittedCondition`).
pub const ADMITTED_MESSAGE: &str = "The workload is admitted";
/// `Admitted=False` message once the quota reservation is gone.
pub const NO_RESERVATION_MESSAGE: &str = "The workload has no reservation";

/// Kueue's human-readable preemption reasons (`HumanReadablePreemptionReasons`).
pub fn preemption_reason_text(reason: &str) -> &'static str {
    match reason {
        "InClusterQueue" => "prioritization in the ClusterQueue",
        "InCohortReclamation" => "reclamation within the cohort",
        "InCohortFairSharing" => "Fair Sharing within the cohort",
        "InCohortReclaimWhileBorrowing" => "reclamation within the cohort while borrowing",
        _ => "UNKNOWN",
    }
}

/// Kueue's eviction message (`preemptionMessage`).
pub fn preemption_message(
    preemptor_uid: &str,
    preemptor_job_uid: &str,
    reason: &str,
    preemptor_path: &str,
    preemptee_path: &str,
) -> String {
    let or_unknown = |s: &str| {
        if s.is_empty() {
            "UNKNOWN".to_string()
        } else {
            s.to_string()
        }
    };
    format!(
        "Preempted to accommodate a workload (UID: {}, JobUID: {}) due to {}; preemptor path: {}; preemptee path: {}",
        or_unknown(preemptor_uid),
        or_unknown(preemptor_job_uid),
        preemption_reason_text(reason),
        or_unknown(preemptor_path),
        or_unknown(preemptee_path),
    )
}

/// The preemption reason (`InClusterQueue`, ...) whose human-readable words
/// ([`preemption_reason_text`]) a preemption message (`Preempted to accommodate ... due to
/// WORDS; ...`) says.
pub fn preemption_reason_in(message: &str) -> Option<&'static str> {
    let words = message.split_once(" due to ")?.1;
    [
        "InClusterQueue",
        // Before its prefix "reclamation within the cohort".
        "InCohortReclaimWhileBorrowing",
        "InCohortReclamation",
        "InCohortFairSharing",
    ]
    .into_iter()
    .find(|r| words.starts_with(preemption_reason_text(r)))
}

/// Kueue caps condition messages at 32 KiB (and events at 1 KiB).
pub fn truncate(message: &str, max: usize) -> String {
    if message.len() <= max {
        return message.to_string();
    }
    let mut end = max.saturating_sub(3);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &message[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_keeps_transition_time_when_status_is_unchanged() {
        let mut c = vec![condition(QUOTA_RESERVED, false, "Pending", "a", 1000)];
        assert!(set(
            &mut c,
            condition(QUOTA_RESERVED, false, "WaitingForQuota", "b", 2000)
        ));
        assert_eq!(c[0].last_transition_time, Some(time(1000)));
        assert!(set(
            &mut c,
            condition(QUOTA_RESERVED, true, "QuotaReserved", "c", 3000)
        ));
        assert_eq!(c[0].last_transition_time, Some(time(3000)));
        assert!(!set(
            &mut c,
            condition(QUOTA_RESERVED, true, "QuotaReserved", "c", 4000)
        ));
    }

    #[test]
    fn reset_active_rewrites_only_true_conditions() {
        let mut c = vec![condition(EVICTED, true, "Preempted", "why", 1)];
        assert!(reset_active(&mut c, EVICTED, "QuotaReserved", 2));
        assert_eq!(c[0].status, "False");
        assert_eq!(c[0].message, "Previously: why");
        assert!(!reset_active(&mut c, EVICTED, "QuotaReserved", 3));
    }

    #[test]
    fn a_preemption_message_says_its_reason() {
        for reason in [
            "InClusterQueue",
            "InCohortReclamation",
            "InCohortFairSharing",
            "InCohortReclaimWhileBorrowing",
        ] {
            let message = preemption_message("u", "j", reason, "/a", "/b");
            assert_eq!(preemption_reason_in(&message), Some(reason), "{message}");
        }
        assert_eq!(preemption_reason_in("Preempted"), None);
    }
}
