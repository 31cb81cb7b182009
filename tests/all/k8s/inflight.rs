//! Status writes off the scheduling path: the next cycle is scheduled while the previous
//! cycle's writes are in flight, and a write that fails in flight releases its quota and its
//! Workload is admitted again exactly once.

use std::time::Duration;

use wasq::k8s::apiserver::ChangeType;

use super::{Env, KUEUE, basics, job, job_wl, queue_label};

const WORKLOADS: &str = "kueue.x-k8s.io/v1beta2";

/// Workload names in the order the cluster recorded their admissions (one entry per
/// admission: a Workload admitted twice appears twice).
fn admissions(env: &Env) -> Vec<String> {
    env.api
        .changes(WORKLOADS, "workloads")
        .into_iter()
        .filter(|c| {
            let had = c
                .prev
                .as_ref()
                .is_some_and(|p| p["status"]["admission"].is_object());
            c.kind != ChangeType::Deleted && !had && c.object["status"]["admission"].is_object()
        })
        .map(|c| c.name)
        .collect()
}

/// The Workload the first status patch was sent for.
fn first_status_patch(env: &Env) -> String {
    let r = env
        .api
        .requests()
        .into_iter()
        .find(|r| r.method == "PATCH" && r.line().ends_with("/status"))
        .expect("a status patch");
    let line = r.line();
    let path = line.trim_end_matches("/status");
    path.rsplit('/').next().unwrap().to_string()
}

/// The status patches sent for Workload `name`.
fn status_patches(env: &Env, name: &str) -> usize {
    let path = format!("{KUEUE}/namespaces/ns/workloads/{name}/status");
    env.api
        .requests()
        .iter()
        .filter(|r| r.line() == format!("PATCH {path}"))
        .count()
}

/// The cpu (milli) the controller's core holds, per Workload name.
fn held(env: &Env) -> Vec<(String, i64)> {
    let s = env.controller.scheduler().expect("a core");
    let c = &s.cluster;
    let mut out: Vec<(String, i64)> = c
        .workloads
        .iter()
        .filter_map(|w| {
            let a = c.admission(w.id)?;
            let name = w.key.rsplit('/').next().unwrap_or_default().to_string();
            Some((name, a.usage.iter().map(|(_, v)| v).sum()))
        })
        .collect();
    out.sort();
    out
}

/// The cpu (milli) the cluster's Workloads hold, per name.
fn shown(env: &Env) -> Vec<(String, i64)> {
    let mut out: Vec<(String, i64)> = env
        .api
        .objects(WORKLOADS, "workloads")
        .iter()
        .filter(|wl| wl["status"]["admission"].is_object())
        .map(|wl| {
            let cpu = wl["status"]["admission"]["podSetAssignments"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|a| a["resourceUsage"]["cpu"].as_str())
                .filter_map(|q| q.parse::<wasq::api::Quantity>().ok())
                .map(|q| q.milli())
                .sum();
            (wl["metadata"]["name"].as_str().unwrap().to_string(), cpu)
        })
        .collect();
    out.sort();
    out
}

fn two_jobs() -> Env {
    // One ClusterQueue admits one head per cycle: `a` in the first cycle, `b` in the second.
    let mut objects = basics("4");
    objects.push(job("a", "1", 1, queue_label(), true));
    objects.push(job("b", "1", 1, queue_label(), true));
    let mut env = Env::new(objects);
    env.list_all();
    env
}

#[tokio::test]
async fn the_second_cycle_admits_while_the_first_cycles_write_is_in_flight() {
    let mut env = two_jobs();
    // The first status write (the first cycle's admission) is answered 500 ms late.
    env.api
        .delay("PATCH", "/status", Duration::from_millis(500), 1);
    env.step().await;
    let delayed = first_status_patch(&env);
    let (a, b) = (job_wl("a"), job_wl("b"));
    let other = if delayed == a { b } else { a };
    // The second cycle did not wait for the first one's write: its admission reached the
    // cluster first.
    assert_eq!(admissions(&env), [other, delayed]);
    assert_eq!(held(&env), shown(&env), "memory and cluster agree");
    // Both jobs started, once each.
    for name in ["a", "b"] {
        let j = env
            .api
            .get(&format!("/apis/batch/v1/namespaces/ns/jobs/{name}"))
            .unwrap();
        assert_eq!(j["spec"]["suspend"], false, "job {name} started");
    }
}

#[tokio::test]
async fn a_failed_write_in_flight_releases_its_quota_and_the_workload_is_admitted_once() {
    let mut env = two_jobs();
    // The first cycle's admission is answered late, with a server error: meanwhile the
    // second cycle admits the other Workload.
    env.api
        .delay("PATCH", "/status", Duration::from_millis(300), 1);
    env.api.fail_next("PATCH", "/status", 500);
    env.step().await;
    let failed = &first_status_patch(&env);
    let first = admissions(&env);
    assert_eq!(first.len(), 1, "one admission written: {first:?}");
    assert_ne!(&first[0], failed);
    assert_eq!(
        status_patches(&env, failed),
        1,
        "{failed}'s admission was sent once and failed"
    );
    // Its quota is released when the failure lands: memory holds what the cluster shows.
    assert_eq!(held(&env), shown(&env), "memory and cluster agree");
    assert!(!held(&env).iter().any(|(n, _)| n == failed));

    // The next pass admits it again, once.
    env.step().await;
    env.step().await;
    let all = admissions(&env);
    assert_eq!(
        all.iter().filter(|n| *n == failed).count(),
        1,
        "{failed} admitted exactly once: {all:?}"
    );
    assert_eq!(all.iter().filter(|n| **n == first[0]).count(), 1);
    assert_eq!(held(&env), shown(&env), "memory and cluster agree");
    assert_eq!(held(&env).len(), 2);
}
