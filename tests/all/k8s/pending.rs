//! Why a Workload waits: its `QuotaReserved=False` condition is rewritten for a new message at
//! most once per pending-status interval (`--pending-status-interval`); with none, at every
//! change, as Kueue.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use wasq::k8s::schema::kinds::KueueKind;
use wasq::k8s::sync::mirror::Source;

use super::{Env, KUEUE, NOW, T, basics, finish};

fn workload(name: &str, cpu: u32) -> (String, Value) {
    (
        format!("{KUEUE}/namespaces/ns/workloads/{name}"),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": "ns", "creationTimestamp": T, "uid": format!("uid-{name}")},
            "spec": {"queueName": "lq", "priority": 0, "podSets": [{"name": "main", "count": 1,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
                    "resources": {"requests": {"cpu": cpu.to_string()}}}]}}}]}}),
    )
}

/// p's pending message and how many times its status was written since the last call.
fn pending(env: &Env) -> (String, usize) {
    let p = env
        .api
        .get(&format!("{KUEUE}/namespaces/ns/workloads/p"))
        .unwrap();
    let message = p["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "QuotaReserved")
        .map(|c| {
            assert_eq!(c["status"], "False");
            c["message"].as_str().unwrap_or_default().to_string()
        })
        .unwrap_or_default();
    let writes = env
        .api
        .requests()
        .iter()
        .filter(|r| r.method == "PATCH" && r.uri.contains("/workloads/p/status"))
        .count();
    env.api.clear_requests();
    (message, writes)
}

/// a (5 cpu), b (2) and c (2) hold 9 of 10 cpus; p (6) waits. c finishes, then — 11 s later —
/// b: p's message changes both times. Returns (message, writes) after p first waits, after c
/// finished and after b finished.
async fn run(interval: Duration) -> [(String, usize); 3] {
    let now = Arc::new(AtomicI64::new(NOW));
    let clock = now.clone();
    let mut objects = basics("10");
    objects.extend([workload("a", 5), workload("b", 2), workload("c", 2)]);
    let mut env = Env::with_clock(objects, Arc::new(move || clock.load(Ordering::SeqCst)));
    env.controller.set_pending_status_interval(interval);
    env.list_all();
    env.step().await;
    let (path, p) = workload("p", 6);
    env.api.put(&path, p);
    env.applied(Source::Kueue(KueueKind::Workload), &path);
    env.step().await;
    let first = pending(&env);
    finish(&mut env, "c").await;
    let second = pending(&env);
    now.fetch_add(11_000, Ordering::SeqCst);
    finish(&mut env, "b").await;
    let third = pending(&env);
    [first, second, third]
}

#[tokio::test]
async fn a_changed_pending_message_is_written_at_most_once_per_interval() {
    // Kueue's behaviour: every change written.
    let [first, second, third] = run(Duration::ZERO).await;
    assert_eq!(first.1, 1);
    assert!(first.0.contains("5 more needed"), "{first:?}");
    assert_eq!(second.1, 1);
    assert!(second.0.contains("3 more needed"), "{second:?}");
    assert_eq!(third.1, 1);
    assert!(third.0.contains("1 more needed"), "{third:?}");

    // With an interval: the first reason at once, a new message only once it has passed.
    let [first, second, third] = run(Duration::from_secs(10)).await;
    assert_eq!(first.1, 1);
    assert!(first.0.contains("5 more needed"), "{first:?}");
    assert_eq!(second, (first.0.clone(), 0), "within 10 s: not rewritten");
    assert_eq!(third.1, 1);
    assert!(third.0.contains("1 more needed"), "{third:?}");
}
