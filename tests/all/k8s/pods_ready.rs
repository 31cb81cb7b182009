//! waitForPodsReady in the controller against the API double: the PodsReady condition, the
//! PodsReadyTimeout eviction and requeue after the backoff, deactivation past
//! `backoffLimitCount`, a pod group's readiness from its pods, and blockAdmission.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use serde_json::{Value, json};
use wasq::k8s::client::writer::Writer;
use wasq::k8s::controller::Controller;
use wasq::k8s::serve::metrics::Metrics;
use wasq::k8s::sync::mirror::Source;

use super::double;
use super::{Env, KUEUE, NOW, basics, group_pod, job, job_wl, queue_label};

const NOT_READY: &str = "Not all pods are ready or succeeded";
const READY: &str = "All pods reached readiness and the workload is running";

struct Ready {
    env: Env,
    clock: Arc<AtomicI64>,
}

impl Ready {
    /// The controller with Kueue's configuration `waitForPodsReady` (as `--kueue-config`).
    fn new(objects: Vec<(String, Value)>, wait_for_pods_ready: Value) -> Ready {
        let api = double();
        for (path, obj) in objects {
            api.put(&path, obj);
        }
        let clock = Arc::new(AtomicI64::new(NOW));
        let c = clock.clone();
        let controller = Controller::new(
            Writer::new(api.client(), Some("test".into())),
            wasq::api::jobs::builtin()
                .into_iter()
                .filter(|k| k.has_suspend())
                .collect(),
            true,
            Arc::new(Metrics::new("standalone")),
            Arc::new(move || c.load(Ordering::SeqCst)),
            Arc::new(|_| {}),
        );
        let mut env = Env { api, controller };
        env.controller.mirror.configuration = Some(wasq::api::config::Configuration {
            wait_for_pods_ready: Some(serde_json::from_value(wait_for_pods_ready).unwrap()),
            ..Default::default()
        });
        env.list_all();
        Ready { env, clock }
    }

    fn at(&self, seconds: i64) {
        self.clock.store(NOW + seconds * 1000, Ordering::SeqCst);
    }

    async fn step(&mut self) {
        self.env.step().await;
    }

    fn wl_path(name: &str) -> String {
        format!("{KUEUE}/namespaces/ns/workloads/{name}")
    }

    fn wl(&self, name: &str) -> Value {
        self.env
            .api
            .get(&Self::wl_path(name))
            .expect("the Workload")
    }

    /// `(status, reason, message)` of a condition of the stored Workload.
    fn cond(&self, name: &str, type_: &str) -> Option<(String, String, String)> {
        let wl = self.wl(name);
        let c = wl["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == type_)?
            .clone();
        Some((
            c["status"].as_str()?.to_string(),
            c["reason"].as_str()?.to_string(),
            c["message"].as_str().unwrap_or_default().to_string(),
        ))
    }

    /// Changes the stored Job's status, as the Job controller would, and delivers the event.
    fn job_status(&mut self, name: &str, status: Value) {
        let path = format!("/apis/batch/v1/namespaces/ns/jobs/{name}");
        let mut j = self.env.api.get(&path).unwrap();
        j["status"] = status;
        self.env.api.put(&path, j);
        self.env.applied(Source::Job(0), &path);
    }

    fn suspended(&self, name: &str) -> bool {
        let path = format!("/apis/batch/v1/namespaces/ns/jobs/{name}");
        self.env.api.get(&path).unwrap()["spec"]["suspend"] == true
    }

    fn reserved(&self, name: &str) -> bool {
        self.cond(name, "QuotaReserved")
            .is_some_and(|c| c.0 == "True")
    }
}

fn c(status: &str, reason: &str, message: &str) -> Option<(String, String, String)> {
    Some((status.into(), reason.into(), message.into()))
}

#[tokio::test]
async fn a_job_not_ready_within_the_timeout_is_evicted_requeued_after_the_backoff_and_admitted_again()
 {
    let mut objects = basics("4");
    objects.push(job("pi", "1", 2, queue_label(), true));
    let mut r = Ready::new(objects, json!({"timeout": "5m"}));
    let wl = job_wl("pi");
    r.step().await;
    assert!(r.reserved(&wl));
    assert!(!r.suspended("pi"));
    assert_eq!(
        r.cond(&wl, "PodsReady"),
        c("False", "WaitForStart", NOT_READY)
    );
    // One pod of two ready: still not ready; just before the timeout nothing happens.
    r.job_status("pi", json!({"active": 2, "ready": 1}));
    r.at(299);
    r.step().await;
    assert!(r.cond(&wl, "Evicted").is_none());

    r.at(300);
    r.step().await;
    assert_eq!(
        r.cond(&wl, "Evicted"),
        c(
            "True",
            "PodsReadyTimeout",
            &format!("Exceeded the PodsReady timeout ns/{wl}")
        )
    );
    assert_eq!(
        r.wl(&wl)["status"]["requeueState"],
        json!({"count": 1, "requeueAt": "2026-01-01T00:06:00Z"})
    );
    assert!(r.suspended("pi"), "the job is stopped");
    let text = r.env.controller.metrics.encode();
    assert!(
        text.lines()
            .any(|l| l.starts_with("kueue_evicted_workloads_total{")
                && l.contains("reason=\"PodsReadyTimeout\"")
                && l.contains("underlying_cause=\"WaitForStart\"")
                && l.ends_with(" 1")),
        "{text}"
    );
    let events: Vec<Value> = r
        .env
        .api
        .requests()
        .into_iter()
        .filter(|q| q.uri.contains("/events") && q.method == "POST")
        .map(|q| q.body)
        .collect();
    assert!(
        events
            .iter()
            .any(|e| e["reason"] == "EvictedDueToPodsReadyTimeout"),
        "{events:?}"
    );

    // The Job controller reports the pods gone: the quota is released, the Workload waits.
    r.job_status("pi", json!({"active": 0}));
    r.at(301);
    r.step().await;
    assert!(!r.reserved(&wl));
    assert_eq!(
        r.cond(&wl, "Requeued"),
        c(
            "False",
            "PodsReadyTimeout",
            &format!("Exceeded the PodsReady timeout ns/{wl}")
        )
    );
    r.at(359);
    r.step().await;
    assert!(!r.reserved(&wl), "not before the backoff (60s)");

    r.at(360);
    r.step().await;
    assert_eq!(
        r.cond(&wl, "Requeued"),
        c(
            "True",
            "BackoffFinished",
            "The workload backoff was finished"
        )
    );
    assert_eq!(r.wl(&wl)["status"]["requeueState"], json!({"count": 1}));
    assert!(r.reserved(&wl), "admitted again");
    assert!(r.cond(&wl, "Evicted").is_some_and(|e| e.0 == "False"));
    assert!(!r.suspended("pi"));
    assert_eq!(
        r.cond(&wl, "PodsReady"),
        c("False", "WaitForStart", NOT_READY)
    );
}

#[tokio::test]
async fn a_job_whose_pods_become_ready_is_started_and_never_evicted() {
    let mut objects = basics("4");
    objects.push(job("pi", "1", 2, queue_label(), true));
    let mut r = Ready::new(objects, json!({"timeout": "5m"}));
    let wl = job_wl("pi");
    r.step().await;
    r.job_status("pi", json!({"active": 2, "ready": 1, "succeeded": 1}));
    r.at(60);
    r.step().await;
    assert_eq!(r.cond(&wl, "PodsReady"), c("True", "Started", READY));
    let pods_ready = r.wl(&wl)["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "PodsReady")
        .cloned()
        .unwrap();
    assert_eq!(pods_ready["lastTransitionTime"], "2026-01-01T00:01:00Z");
    // Kueue's readiness wait-time metrics: 60 s since creation, and since admission.
    let text = r.env.controller.metrics.encode();
    for name in [
        "kueue_ready_wait_time_seconds",
        "kueue_admitted_until_ready_wait_time_seconds",
    ] {
        let sum = text
            .lines()
            .find(|l| l.starts_with(&format!("{name}_sum{{")))
            .unwrap_or_else(|| panic!("{name} in {text}"));
        assert!(sum.contains("cluster_queue=\"cq\""), "{sum}");
        assert!(sum.ends_with(" 60.0"), "{sum}");
    }
    r.env.api.clear_requests();
    r.at(3600);
    r.step().await;
    assert!(r.cond(&wl, "Evicted").is_none());
    assert!(
        r.env.lines().is_empty(),
        "nothing written once ready: {:?}",
        r.env.lines()
    );
}

#[tokio::test]
async fn past_the_backoff_limit_count_the_workload_is_deactivated() {
    let mut objects = basics("4");
    objects.push(job("pi", "1", 1, queue_label(), true));
    let mut r = Ready::new(
        objects,
        json!({"timeout": "5m", "requeuingStrategy": {"backoffLimitCount": 0}}),
    );
    let wl = job_wl("pi");
    r.step().await;
    r.at(300);
    r.step().await;
    let stored = r.wl(&wl);
    assert_eq!(stored["spec"]["active"], false);
    assert_eq!(
        r.cond(&wl, "Evicted"),
        c(
            "True",
            "DeactivatedDueToRequeuingLimitExceeded",
            "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
        )
    );
    assert!(r.cond(&wl, "DeactivationTarget").is_none());
    // The DeactivationTarget condition was written first, as Kueue.
    let target_written = r.env.api.requests().into_iter().any(|q| {
        q.uri.contains("/status")
            && q.body["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter().any(|c| {
                    c["type"] == "DeactivationTarget"
                        && c["reason"] == "RequeuingLimitExceeded"
                        && c["message"] == "exceeding the maximum number of re-queuing retries"
                })
            })
    });
    assert!(target_written);
    assert!(r.suspended("pi"));
    r.job_status("pi", json!({"active": 0}));
    r.at(400);
    r.step().await;
    assert!(!r.reserved(&wl));
    r.at(4000);
    r.step().await;
    assert!(!r.reserved(&wl), "never admitted again");
}

fn ready_pod(pod: &mut Value, ready: bool) {
    pod["status"] = json!({"phase": "Running", "conditions": [
        {"type": "Ready", "status": if ready { "True" } else { "False" }}]});
}

#[tokio::test]
async fn a_pod_groups_readiness_comes_from_its_pods_ready_conditions() {
    let mut objects = basics("4");
    objects.push(group_pod("p0"));
    objects.push(group_pod("p1"));
    let mut r = Ready::new(objects, json!({"timeout": "5m"}));
    r.step().await;
    assert!(r.reserved("g"));
    assert_eq!(
        r.cond("g", "PodsReady"),
        c("False", "WaitForStart", NOT_READY)
    );
    let set = |r: &mut Ready, name: &str, ready: bool| {
        let path = format!("/api/v1/namespaces/ns/pods/{name}");
        let mut p = r.env.api.get(&path).unwrap();
        ready_pod(&mut p, ready);
        r.env.api.put(&path, p);
        r.env.applied(Source::Pod, &path);
    };
    set(&mut r, "p0", true);
    set(&mut r, "p1", false);
    r.at(10);
    r.step().await;
    assert_eq!(
        r.cond("g", "PodsReady"),
        c("False", "WaitForStart", NOT_READY)
    );
    set(&mut r, "p1", true);
    r.at(20);
    r.step().await;
    assert_eq!(r.cond("g", "PodsReady"), c("True", "Started", READY));
    // A pod no longer ready: waiting for recovery.
    set(&mut r, "p0", false);
    r.at(30);
    r.step().await;
    assert_eq!(
        r.cond("g", "PodsReady"),
        c(
            "False",
            "WaitForRecovery",
            "At least one pod has failed, waiting for recovery"
        )
    );
}

#[tokio::test]
async fn block_admission_holds_a_second_job_until_the_first_is_ready() {
    let mut objects = basics("4");
    objects.push(job("a", "1", 2, queue_label(), true));
    objects.push(job("b", "1", 2, queue_label(), true));
    let mut r = Ready::new(objects, json!({"timeout": "5m", "blockAdmission": true}));
    r.step().await;
    let (a, b) = (job_wl("a"), job_wl("b"));
    assert!(r.reserved(&a));
    assert!(!r.reserved(&b), "held while a is not ready");
    r.at(10);
    r.step().await;
    assert!(!r.reserved(&b));
    r.job_status("a", json!({"active": 2, "ready": 2}));
    r.at(20);
    r.step().await;
    r.step().await;
    assert_eq!(r.cond(&a, "PodsReady"), c("True", "Started", READY));
    assert!(r.reserved(&b), "admitted once a is ready");
}

#[tokio::test]
async fn a_ready_job_losing_a_pod_waits_for_recovery_then_is_evicted_and_starts_over() {
    let mut objects = basics("4");
    objects.push(job("pi", "1", 2, queue_label(), true));
    let mut r = Ready::new(objects, json!({"timeout": "5m", "recoveryTimeout": "2m"}));
    let wl = job_wl("pi");
    r.step().await;
    r.job_status("pi", json!({"active": 2, "ready": 2}));
    r.at(10);
    r.step().await;
    assert_eq!(r.cond(&wl, "PodsReady"), c("True", "Started", READY));
    r.job_status("pi", json!({"active": 2, "ready": 1}));
    r.at(400);
    r.step().await;
    assert_eq!(
        r.cond(&wl, "PodsReady"),
        c(
            "False",
            "WaitForRecovery",
            "At least one pod has failed, waiting for recovery"
        )
    );
    assert!(
        r.cond(&wl, "Evicted").is_none(),
        "recoveryTimeout runs from 400 s"
    );
    r.job_status("pi", json!({"active": 2, "ready": 2}));
    r.at(410);
    r.step().await;
    assert_eq!(r.cond(&wl, "PodsReady"), c("True", "Recovered", READY));
    r.job_status("pi", json!({"active": 2, "ready": 1}));
    r.at(420);
    r.step().await;
    r.at(539);
    r.step().await;
    assert!(r.cond(&wl, "Evicted").is_none());
    r.at(540);
    r.step().await;
    assert_eq!(
        r.cond(&wl, "Evicted"),
        c(
            "True",
            "PodsReadyTimeout",
            &format!("Exceeded the PodsReady timeout ns/{wl}")
        )
    );
    // Stopped, the Workload is waiting for a start again; readmitted after the backoff, it is
    // given the full timeout.
    r.job_status("pi", json!({"active": 0}));
    r.at(541);
    r.step().await;
    assert!(!r.reserved(&wl));
    assert_eq!(
        r.cond(&wl, "PodsReady"),
        c("False", "WaitForStart", NOT_READY)
    );
    r.at(600);
    r.step().await;
    assert!(r.reserved(&wl));
    r.at(601);
    r.step().await;
    assert!(r.cond(&wl, "Evicted").is_some_and(|e| e.0 == "False"));
    assert_eq!(
        r.cond(&wl, "PodsReady"),
        c("False", "WaitForStart", NOT_READY)
    );
}

/// Two Jobs for one Job's quota: `a` (older) admitted first, `b` waiting. `a` times out; with no
/// backoff it is queued again at once and, under `timestamp: Creation`, ordered by its creation
/// time: it goes first again.
#[tokio::test]
async fn without_a_backoff_a_timed_out_job_is_queued_again_at_once_at_its_creation_time() {
    let mut objects = basics("2");
    objects.push(job("a", "1", 2, queue_label(), true));
    let (path, mut b) = job("b", "1", 2, queue_label(), true);
    b["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:01Z");
    objects.push((path, b));
    let mut r = Ready::new(
        objects,
        json!({"timeout": "5m", "requeuingStrategy": {"timestamp": "Creation", "backoffBaseSeconds": 0}}),
    );
    let (a, b) = (job_wl("a"), job_wl("b"));
    r.step().await;
    assert!(r.reserved(&a) && !r.reserved(&b));
    r.at(300);
    r.step().await;
    assert!(
        r.cond(&a, "Evicted")
            .is_some_and(|e| e.1 == "PodsReadyTimeout")
    );
    assert_eq!(r.wl(&a)["status"]["requeueState"], json!({"count": 1}));
    r.job_status("a", json!({"active": 0}));
    r.at(301);
    r.step().await;
    assert_eq!(
        r.cond(&a, "Requeued"),
        c(
            "True",
            "BackoffFinished",
            "The workload backoff was finished"
        )
    );
    assert!(r.reserved(&a), "a, older, goes first again");
    assert!(!r.reserved(&b));
}
