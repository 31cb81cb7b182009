//! `wasq explain WORKLOAD` on a cluster: one Workload's story told from its Events and
//! conditions, as `sim::explain` tells it from a simulator report — in order, in seconds since
//! the Workload was created: each wait with the reasons given while it lasted (a series of
//! Pending Events: its first and last time and how many), each quota reservation and admission
//! with its ClusterQueue, flavors and the policies that decided it, each preemption with its
//! preemptor, Kueue's reason and the preemption policy, evictions and requeues, and how it
//! ended or what it waits for now. The policies come from wasq's annotations on the Events
//! ([`decided_by`]); the API server keeps Events for an hour by default, so an older step is
//! told from the condition it left, when there is one.

use std::fmt::Write;

use serde_json::Value;

use super::history::{self, Recorded};
use super::list::{Workloads, str_at, timestamp, workload_status};
use crate::k8s::client::events::decided_by;
use crate::k8s::status::conditions::preemption_reason_in;
use crate::story::{assignments, seconds, wait_line};

/// The story of Workload `namespace/name` at `now`.
pub async fn explain(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    now: jiff::Timestamp,
) -> anyhow::Result<String> {
    let wl = history::workload(client, namespace, name).await?;
    let events = history::events(client, &wl).await?;
    let cluster_queue = match str_at(&wl, "/status/admission/clusterQueue") {
        "" => {
            Workloads::new(client)
                .cluster_queue_of(namespace, str_at(&wl, "/spec/queueName"))
                .await?
        }
        cq => cq.to_string(),
    };
    Ok(story(&wl, &events, &cluster_queue, now))
}

/// Warning Events that are not a reason to wait for quota.
const NOT_WAITS: [&str; 4] = [
    "FailedCreate",
    "AdmissionCheckRejected",
    "MultiKueue",
    "DeprecatedPathUsage",
];

/// One reason given while a wait lasted: its Events merged.
struct Reason {
    reason: String,
    note: String,
    first: f64,
    last: f64,
    count: i64,
    policy: Option<String>,
}

impl Reason {
    fn said(&self) -> String {
        let when = if self.count > 1 || self.last > self.first {
            format!(
                "{}–{}, {} times",
                seconds(self.first),
                seconds(self.last),
                self.count
            )
        } else {
            format!("at {}", seconds(self.first))
        };
        let note = if self.note.is_empty() {
            String::new()
        } else {
            format!(": {}", self.note)
        };
        let policy = self
            .policy
            .as_deref()
            .map(|p| policy_words(", flavor assignment by", p))
            .unwrap_or_default();
        format!("{} ({when}){note}{policy}", self.reason)
    }
}

/// `WORDS NAME (DIGEST)` or `WORDS the built-in` for an annotation's `NAME@DIGEST`.
fn policy_words(words: &str, value: &str) -> String {
    let (name, digest) = decided_by::parse(value);
    crate::story::decided_by(words, name, digest)
}

/// `WORDS …` for the annotation `key` of `e`; nothing without it.
fn annotated(e: &Recorded, words: &str, key: &str) -> String {
    e.policy(key)
        .map(|p| {
            // Placement: one policy per TAS podSet; said once when they are the same.
            let mut each: Vec<&str> = p.split(',').collect();
            each.dedup();
            each.iter()
                .map(|v| policy_words(words, v))
                .collect::<String>()
        })
        .unwrap_or_default()
}

/// The story, from the Workload and its Events (oldest first).
pub(super) fn story(
    wl: &Value,
    events: &[Recorded],
    cluster_queue: &str,
    now: jiff::Timestamp,
) -> String {
    let mut out = String::new();
    let _ = tell(&mut out, wl, events, cluster_queue, now);
    out
}

fn tell(
    out: &mut String,
    wl: &Value,
    events: &[Recorded],
    cluster_queue: &str,
    now: jiff::Timestamp,
) -> std::fmt::Result {
    let namespace = str_at(wl, "/metadata/namespace");
    let name = str_at(wl, "/metadata/name");
    let created = timestamp(wl.pointer("/metadata/creationTimestamp"))
        .or_else(|| events.iter().find_map(|e| e.first))
        .unwrap_or(now);
    // Whole seconds since the Workload was created.
    let at = |t: Option<jiff::Timestamp>| {
        let t = t.unwrap_or(created);
        ((t.as_millisecond() - created.as_millisecond()) as f64 / 1000.0).round()
    };
    let dash = |s: &str| if s.is_empty() { "-" } else { s }.to_string();
    let priority = wl
        .pointer("/spec/priority")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    writeln!(
        out,
        "{namespace}/{name}: ClusterQueue {}, LocalQueue {}, priority {priority}",
        dash(cluster_queue),
        dash(&match str_at(wl, "/spec/queueName") {
            "" => String::new(),
            lq => format!("{namespace}/{lq}"),
        })
    )?;
    writeln!(out, "  {:>8}  created at {created}", seconds(0.0))?;

    let steps = with_conditions(wl, events);
    let holds_admission = !wl["status"]["admission"].is_null();
    let mut waiting: Option<(f64, Vec<Reason>)> = Some((0.0, Vec::new()));
    let mut finished = false;
    for (i, e) in steps.iter().enumerate() {
        let t = at(e.first);
        match e.reason.as_str() {
            "QuotaReserved" => {
                close(out, &mut waiting, t)?;
                let cq = e
                    .note
                    .strip_prefix("Quota reserved in ClusterQueue ")
                    .and_then(|rest| rest.split([',', ';']).next())
                    .unwrap_or(cluster_queue);
                writeln!(
                    out,
                    "  {:>8}  reserved quota in {cq}{}{}",
                    seconds(t),
                    annotated(e, ", flavors chosen by", decided_by::FLAVOR_ASSIGNMENT),
                    annotated(e, ", placed by", decided_by::PLACEMENT),
                )?;
            }
            "Admitted" => {
                close(out, &mut waiting, t)?;
                // Flavors only for the admission the Workload still holds (the last one).
                let later = steps[i + 1..]
                    .iter()
                    .any(|s| s.reason == "QuotaReserved" || s.reason == "Admitted");
                let flavors = if holds_admission && !later {
                    format!(": {}", assignments(&wl["status"]["admission"]))
                } else {
                    String::new()
                };
                writeln!(
                    out,
                    "  {:>8}  admitted{flavors}{}",
                    seconds(t),
                    annotated(e, ", ordered by", decided_by::ORDERING),
                )?;
            }
            "Preempted" => {
                let by = match e.policy(decided_by::PREEMPTOR) {
                    Some(p) => p.to_string(),
                    None => e
                        .note
                        .split_once("(UID: ")
                        .and_then(|(_, rest)| rest.split([',', ')']).next())
                        .map_or_else(
                            || "-".to_string(),
                            |uid| format!("the workload of UID {uid}"),
                        ),
                };
                let reason = preemption_reason_in(&e.note).unwrap_or("-");
                writeln!(
                    out,
                    "  {:>8}  preempted by {by} ({reason}){}",
                    seconds(t),
                    annotated(e, ", victims chosen by", decided_by::PREEMPTION),
                )?;
                waiting = Some((t, Vec::new()));
            }
            "Finished" => {
                close(out, &mut waiting, t)?;
                writeln!(out, "  {:>8}  finished{}", seconds(t), finish_words(wl))?;
                waiting = None;
                finished = true;
            }
            "Requeued" => add_reason(&mut waiting, t, e),
            reason if reason.starts_with("EvictedDueTo") || reason == "Evicted" => {
                let why = reason.strip_prefix("EvictedDueTo").unwrap_or(&e.note);
                let note = if reason == "Evicted" || e.note.is_empty() {
                    String::new()
                } else {
                    format!(": {}", e.note)
                };
                writeln!(out, "  {:>8}  evicted ({why}){note}", seconds(t))?;
                waiting.get_or_insert((t, Vec::new()));
            }
            "AdmissionCheckRejected" => {
                writeln!(out, "  {:>8}  deactivated: {}", seconds(t), e.note)?;
            }
            reason if e.warning && !NOT_WAITS.contains(&reason) => add_reason(&mut waiting, t, e),
            reason => {
                writeln!(out, "  {:>8}  {reason}: {}", seconds(t), e.note)?;
            }
        }
    }
    let finished_condition = wl["status"]["conditions"].as_array().and_then(|cs| {
        cs.iter()
            .find(|c| c["type"] == "Finished" && c["status"] == "True")
    });
    if !finished && let Some(c) = finished_condition {
        let t = at(timestamp(c.get("lastTransitionTime")));
        close(out, &mut waiting, t)?;
        writeln!(out, "  {:>8}  finished{}", seconds(t), finish_words(wl))?;
        return Ok(());
    }
    if finished {
        return Ok(());
    }
    let status = workload_status(wl);
    let pending = wl["status"]["conditions"].as_array().and_then(|cs| {
        cs.iter()
            .find(|c| c["type"] == "QuotaReserved" && c["status"] == "False")
    });
    if status == "PENDING"
        && let (Some((_, reasons)), Some(c)) = (waiting.as_mut(), pending)
    {
        // The condition's reason, when no Event (still) tells it.
        let reason = str_at(c, "/reason");
        if !reason.is_empty() && !reasons.iter().any(|r| r.reason == reason) {
            let t = at(timestamp(c.get("lastTransitionTime")));
            reasons.push(Reason {
                reason: reason.to_string(),
                note: str_at(c, "/message").to_string(),
                first: t,
                last: t,
                count: 1,
                policy: None,
            });
        }
    }
    if let Some((since, reasons)) = waiting.take() {
        let said: Vec<String> = reasons.iter().map(Reason::said).collect();
        wait_line(out, since, at(Some(now)), &said)?;
    }
    let what = match status {
        "PENDING" => pending
            .map(|c| format!(": {}", str_at(c, "/reason")))
            .unwrap_or_default(),
        "QUOTARESERVED" => {
            let checks: Vec<String> = wl["status"]["admissionChecks"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or(&[])
                .iter()
                .map(|c| format!("{} ({})", str_at(c, "/name"), str_at(c, "/state")))
                .collect();
            if checks.is_empty() {
                String::new()
            } else {
                format!(", waiting for admission checks: {}", checks.join(", "))
            }
        }
        _ => String::new(),
    };
    let inactive = if wl.pointer("/spec/active") == Some(&Value::Bool(false)) {
        " (deactivated)"
    } else {
        ""
    };
    writeln!(out, "  now {status}{inactive}{what}")
}

/// ` (REASON: MESSAGE)` of the Finished condition.
fn finish_words(wl: &Value) -> String {
    wl["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Finished"))
        .map(|c| {
            let (reason, message) = (str_at(c, "/reason"), str_at(c, "/message"));
            match (reason, message) {
                ("", "") => String::new(),
                (r, "") => format!(" ({r})"),
                (r, m) => format!(" ({r}: {m})"),
            }
        })
        .unwrap_or_default()
}

/// Ends the wait under way at `t`, saying it.
fn close(out: &mut String, waiting: &mut Option<(f64, Vec<Reason>)>, t: f64) -> std::fmt::Result {
    if let Some((since, reasons)) = waiting.take() {
        let said: Vec<String> = reasons.iter().map(Reason::said).collect();
        wait_line(out, since, t, &said)?;
    }
    Ok(())
}

/// Adds `e`'s reason to the wait under way (one started at `t` if none is).
fn add_reason(waiting: &mut Option<(f64, Vec<Reason>)>, t: f64, e: &Recorded) {
    let (_, reasons) = waiting.get_or_insert_with(|| (t, Vec::new()));
    let span = e.last.map_or(0.0, |last| {
        e.first.map_or(0.0, |first| {
            ((last.as_millisecond() - first.as_millisecond()) as f64 / 1000.0).round()
        })
    });
    match reasons.iter_mut().find(|r| r.reason == e.reason) {
        Some(r) => {
            r.last = r.last.max(t + span);
            r.count += e.count;
        }
        None => reasons.push(Reason {
            reason: e.reason.clone(),
            note: e.note.clone(),
            first: t,
            last: t + span,
            count: e.count,
            policy: e.policy(decided_by::FLAVOR_ASSIGNMENT).map(str::to_string),
        }),
    }
}

/// The Events, with the steps only a condition still tells (its Event gone or never written:
/// a reservation, an admission, an eviction, a requeue) put in at its transition time.
fn with_conditions(wl: &Value, events: &[Recorded]) -> Vec<Recorded> {
    let mut steps: Vec<(bool, Recorded)> = events.iter().cloned().map(|e| (true, e)).collect();
    let conditions = wl["status"]["conditions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for c in conditions.iter().filter(|c| c["status"] == "True") {
        let Some(t) = timestamp(c.get("lastTransitionTime")) else {
            continue;
        };
        let kind = str_at(c, "/type");
        let told = |reason: &dyn Fn(&str) -> bool| {
            events.iter().any(|e| {
                reason(&e.reason)
                    && e.first
                        .is_some_and(|f| f.as_millisecond() >= t.as_millisecond() - 1000)
            })
        };
        let (reason, note) = match kind {
            "QuotaReserved" if !told(&|r| r == "QuotaReserved") => (
                "QuotaReserved".to_string(),
                str_at(c, "/message").to_string(),
            ),
            "Admitted" if !told(&|r| r == "Admitted") => ("Admitted".to_string(), String::new()),
            "Evicted" if !told(&|r| r == "Preempted" || r.starts_with("EvictedDueTo")) => (
                format!("EvictedDueTo{}", str_at(c, "/reason")),
                str_at(c, "/message").to_string(),
            ),
            // No Event says a requeue: the condition's reason (why it was evicted) is the
            // wait's.
            "Requeued" => ("Requeued".to_string(), str_at(c, "/reason").to_string()),
            _ => continue,
        };
        let step = Recorded {
            first: Some(t),
            last: None,
            count: 1,
            warning: false,
            reason,
            from: String::new(),
            note,
            decided_by: Default::default(),
            object: Value::Null,
        };
        steps.push((false, step));
    }
    // A condition's step before the Events of the same time (a requeue before the wait it
    // starts).
    steps.sort_by_key(|(event, e)| (e.first, *event));
    steps.into_iter().map(|(_, e)| e).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(at: &str, type_: &str, reason: &str, note: &str, annotations: Value) -> Recorded {
        Recorded::of(json!({
            "eventTime": at, "type": type_, "reason": reason, "note": note,
            "reportingController": "wasq",
            "metadata": {"annotations": annotations},
        }))
    }

    fn condition(kind: &str, status: &str, reason: &str, at: &str) -> Value {
        json!({"type": kind, "status": status, "reason": reason, "message": "", "lastTransitionTime": at})
    }

    #[test]
    fn a_series_of_waits_a_plugins_preemption_and_a_condition_without_its_event() {
        let wl = json!({
            "metadata": {"name": "w", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"queueName": "lq", "priority": 5},
            "status": {
                "admission": {"clusterQueue": "cq", "podSetAssignments": [
                    {"name": "main", "count": 2, "flavors": {"cpu": "a"}}]},
                "conditions": [
                    condition("QuotaReserved", "True", "QuotaReserved", "2026-01-01T00:02:00Z"),
                    condition("Admitted", "True", "Admitted", "2026-01-01T00:02:00Z"),
                    condition("Requeued", "True", "Preempted", "2026-01-01T00:01:10Z"),
                ]}
        });
        let mut waiting = event(
            "2026-01-01T00:00:00.400000Z",
            "Warning",
            "WaitingForQuota",
            "no fit",
            json!({"policy.wasq.dev/flavor-assignment": "fit@sha256:0a"}),
        );
        waiting.count = 4;
        waiting.last = "2026-01-01T00:00:20Z".parse().ok();
        let events = [
            waiting,
            event(
                "2026-01-01T00:00:30Z",
                "Normal",
                "QuotaReserved",
                "Quota reserved in ClusterQueue cq, wait time since queued was 30s",
                json!({"policy.wasq.dev/ordering": "builtin",
                       "policy.wasq.dev/flavor-assignment": "fit@sha256:0a",
                       "policy.wasq.dev/placement": "pack@sha256:0b,pack@sha256:0b"}),
            ),
            event(
                "2026-01-01T00:00:30Z",
                "Normal",
                "Admitted",
                "Admitted by ClusterQueue cq, wait time since reservation was 0s",
                json!({"policy.wasq.dev/ordering": "builtin",
                       "policy.wasq.dev/flavor-assignment": "fit@sha256:0a"}),
            ),
            event(
                "2026-01-01T00:01:00Z",
                "Normal",
                "Preempted",
                &crate::k8s::status::conditions::preemption_message(
                    "u",
                    "j",
                    "InCohortReclamation",
                    "/c/other",
                    "/c/cq",
                ),
                json!({"policy.wasq.dev/preemption": "llw@sha256:0c",
                       "policy.wasq.dev/preemptor": "ns/big"}),
            ),
        ];
        let now = "2026-01-01T00:10:00Z".parse().unwrap();
        assert_eq!(
            story(&wl, &events, "cq", now),
            "ns/w: ClusterQueue cq, LocalQueue ns/lq, priority 5\n\
             \x20       0s  created at 2026-01-01T00:00:00Z\n\
             \x20       0s  waited 30s: WaitingForQuota (0s–20s, 4 times): no fit, flavor assignment by fit (sha256:0a)\n\
             \x20      30s  reserved quota in cq, flavors chosen by fit (sha256:0a), placed by pack (sha256:0b)\n\
             \x20      30s  admitted, ordered by the built-in\n\
             \x20      60s  preempted by ns/big (InCohortReclamation), victims chosen by llw (sha256:0c)\n\
             \x20      60s  waited 60s: Requeued (at 70s): Preempted\n\
             \x20     120s  reserved quota in cq\n\
             \x20     120s  admitted: main ×2 on cpu=a\n\
             \x20 now ADMITTED\n"
        );
    }
}
