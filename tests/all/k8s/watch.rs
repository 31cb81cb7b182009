//! The controller's watch path against the API server double: kube-runtime watchers
//! ([`controller::spawn_watchers`]), the mirror and the controller's steps, with the double as the only
//! source of truth — Workloads are created and finished through the kube client, never fed to
//! the mirror by hand. After every step, memory must hold no quota the cluster does not show.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;
use wasq::api::jobs;
use wasq::api::quantity::Quantity;
use wasq::k8s::apiserver::{ApiServer, ChangeType, Config};
use wasq::k8s::client::writer::Writer;
use wasq::k8s::controller::Controller;
use wasq::k8s::controller::spawn_watchers;
use wasq::k8s::schema::kinds::KueueKind;
use wasq::k8s::serve::metrics::Metrics;
use wasq::k8s::sync::mirror::Observed;

use super::basics;

const WORKLOADS: &str = "kueue.x-k8s.io/v1beta2";

struct Run {
    api: ApiServer,
    client: kube::Client,
    controller: Controller,
    rx: UnboundedReceiver<Observed>,
}

fn start(cpu: &str) -> Run {
    let api = ApiServer::new(Config {
        bookmark_interval: Duration::from_millis(100),
        ..Config::default()
    });
    for (path, obj) in basics(cpu) {
        api.put(&path, obj);
    }
    let client = api.client();
    let controller = Controller::new(
        Writer::new(client.clone(), Some("test".into())),
        // Only kinds the double serves: a watcher of an unserved kind never lists, and the
        // controller schedules nothing before every source is listed (as `wasq controller`
        // enables only the kinds discovery finds).
        vec![jobs::builtin_kind("batch/v1", "Job").unwrap()],
        false,
        Arc::new(Metrics::new("standalone")),
        Arc::new(|| jiff::Timestamp::now().as_millisecond()),
        Arc::new(|_| {}),
    );
    let rx = spawn_watchers(&client, &controller);
    Run {
        api,
        client,
        controller,
        rx,
    }
}

fn workload(name: &str) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": WORKLOADS, "kind": "Workload",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c",
                "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}}))
    .unwrap()
}

fn is_finished(wl: &Value) -> bool {
    wl["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Finished" && c["status"] == "True")
    })
}

fn milli(q: &Value) -> i64 {
    q.as_str()
        .and_then(|s| s.parse::<Quantity>().ok())
        .map_or(0, Quantity::milli)
}

/// `ns/name` → milli-CPU held, for the double's Workloads that hold quota and are not finished.
fn cluster_usage(api: &ApiServer) -> BTreeMap<String, i64> {
    admitted_in_cluster(api, false)
}

/// `ns/name` → milli-CPU of the double's Workloads with an admission (finished too, if asked).
/// Read in place: the burst test asks once a second, of 5,000 Workloads.
fn admitted_in_cluster(api: &ApiServer, finished: bool) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    api.visit(WORKLOADS, "workloads", |wl| {
        if !wl["status"]["admission"].is_object() || (!finished && is_finished(wl)) {
            return;
        }
        let key = format!(
            "{}/{}",
            wl["metadata"]["namespace"].as_str().unwrap(),
            wl["metadata"]["name"].as_str().unwrap()
        );
        let cpu = wl["status"]["admission"]["podSetAssignments"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| milli(&a["resourceUsage"]["cpu"]))
            .sum();
        out.insert(key, cpu);
    });
    out
}

/// `ns/name` → milli-units held, in the controller's core.
fn memory_usage(c: &Controller) -> BTreeMap<String, i64> {
    let Some(s) = c.scheduler() else {
        return BTreeMap::new();
    };
    s.cluster
        .workloads
        .iter()
        .filter_map(|w| {
            let a = s.cluster.admission(w.id)?;
            Some((w.key.clone(), a.usage.iter().map(|(_, v)| v).sum()))
        })
        .collect()
}

/// Memory holds no quota the cluster does not show (memory may lag behind: a Workload the
/// cluster shows finished may still hold quota until its watch event arrives).
fn assert_not_ahead(c: &Controller, api: &ApiServer) {
    let cluster = admitted_in_cluster(api, true);
    for (key, held) in memory_usage(c) {
        assert_eq!(
            cluster.get(&key),
            Some(&held),
            "{key} holds {held}m in memory, not in the cluster"
        );
    }
}

/// Observes and steps until `stop`, checking after each step that memory is not ahead of the
/// cluster: what memory newly holds, at every step; everything, at least once a second.
async fn drive(run: &mut Run, stop: &AtomicBool) {
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    let mut held = BTreeMap::new();
    let mut full = std::time::Instant::now();
    while !stop.load(Ordering::SeqCst) {
        tokio::select! {
            Some(ev) = run.rx.recv() => {
                run.controller.observe(ev);
                while let Ok(ev) = run.rx.try_recv() {
                    run.controller.observe(ev);
                }
            }
            _ = tick.tick() => {}
        }
        run.controller.step().await;
        let now = memory_usage(&run.controller);
        if full.elapsed() >= Duration::from_secs(1) {
            assert_not_ahead(&run.controller, &run.api);
            full = std::time::Instant::now();
        } else {
            for (key, cpu) in &now {
                if held.get(key) != Some(cpu) {
                    let (ns, name) = key.split_once('/').unwrap();
                    let wl = run.api.get(&format!(
                        "/apis/{WORKLOADS}/namespaces/{ns}/workloads/{name}"
                    ));
                    let in_cluster =
                        wl.filter(|wl| wl["status"]["admission"].is_object())
                            .map(|wl| {
                                wl["status"]["admission"]["podSetAssignments"]
                                    .as_array()
                                    .into_iter()
                                    .flatten()
                                    .map(|a| milli(&a["resourceUsage"]["cpu"]))
                                    .sum::<i64>()
                            });
                    assert_eq!(
                        in_cluster,
                        Some(*cpu),
                        "{key} holds {cpu}m in memory, not in the cluster"
                    );
                }
            }
        }
        held = now;
    }
}

/// Observes and steps until no watch event has come for a while: memory caught up.
async fn settle(run: &mut Run) {
    while let Ok(Some(ev)) = tokio::time::timeout(Duration::from_millis(300), run.rx.recv()).await {
        run.controller.observe(ev);
        while let Ok(ev) = run.rx.try_recv() {
            run.controller.observe(ev);
        }
        run.controller.step().await;
        assert_not_ahead(&run.controller, &run.api);
    }
}

async fn until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn admitted(api: &ApiServer) -> usize {
    cluster_usage(api).len()
}

/// Per Workload, how many times the cluster saw it go from no admission to an admission.
fn admissions(api: &ApiServer) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for c in api.changes(WORKLOADS, "workloads") {
        let had = c
            .prev
            .as_ref()
            .is_some_and(|p| p["status"]["admission"].is_object());
        if c.kind != ChangeType::Deleted && !had && c.object["status"]["admission"].is_object() {
            *out.entry(c.name.clone()).or_default() += 1;
        }
    }
    out
}

async fn create_all(client: &kube::Client, names: impl Iterator<Item = String>) {
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "ns", &KueueKind::Workload.api_resource());
    for name in names {
        api.create(&PostParams::default(), &workload(&name))
            .await
            .unwrap();
    }
}

/// Finishes every admitted Workload (Kueue's `Finished` condition), as the job would.
async fn finish_admitted(api: &ApiServer, client: &kube::Client) -> usize {
    let wls: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "ns", &KueueKind::Workload.api_resource());
    let mut n = 0;
    for wl in api.objects(WORKLOADS, "workloads") {
        if !wl["status"]["admission"].is_object() || is_finished(&wl) {
            continue;
        }
        let conditions = super::conditions_with_finished(&wl, "Job finished successfully");
        let body = json!({"metadata": {"resourceVersion": wl["metadata"]["resourceVersion"]},
                          "status": {"conditions": conditions}});
        let name = wl["metadata"]["name"].as_str().unwrap();
        // A conflict means the controller wrote meanwhile: the next round finishes it.
        if wls
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&body))
            .await
            .is_ok()
        {
            n += 1;
        }
    }
    n
}

fn names(prefix: &str, n: usize) -> impl Iterator<Item = String> {
    let prefix = prefix.to_string();
    (0..n).map(move |i| format!("{prefix}-{i:03}"))
}

/// Finishes admitted Workloads until all `total` have been admitted.
async fn finish_until_all_admitted(api: &ApiServer, client: &kube::Client, total: usize) {
    let start = std::time::Instant::now();
    while admissions(api).len() < total {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "only {} of {total} admitted",
            admissions(api).len()
        );
        finish_admitted(api, client).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn assert_each_admitted_once(api: &ApiServer, total: usize) {
    let a = admissions(api);
    assert_eq!(a.len(), total);
    let twice: Vec<_> = a.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "admitted more than once: {twice:?}");
}

#[tokio::test]
async fn a_burst_of_workloads_is_admitted_exactly_once_each_through_the_watch() {
    let mut run = start("40");
    let stop = AtomicBool::new(false);
    let (api, client) = (run.api.clone(), run.client.clone());
    let scenario = async {
        create_all(&client, names("burst", 120)).await;
        until("the quota to fill", Duration::from_secs(10), || {
            admitted(&api) == 40
        })
        .await;
        finish_until_all_admitted(&api, &client, 120).await;
        stop.store(true, Ordering::SeqCst);
    };
    tokio::join!(drive(&mut run, &stop), scenario);
    settle(&mut run).await;
    assert_each_admitted_once(&api, 120);
    // Each admission was one status write that carried it.
    let writes = api
        .requests()
        .iter()
        .filter(|r| r.method == "PATCH" && r.body["status"]["admission"].is_object())
        .count();
    assert_eq!(writes, 120);
    assert_eq!(memory_usage(&run.controller), cluster_usage(&api));
}

#[tokio::test]
async fn an_expired_watch_relists_without_admitting_twice() {
    let mut run = start("30");
    let stop = AtomicBool::new(false);
    let (api, client) = (run.api.clone(), run.client.clone());
    let scenario = async {
        create_all(&client, names("first", 60)).await;
        until("the quota to fill", Duration::from_secs(10), || {
            admitted(&api) == 30
        })
        .await;
        let lists_before = api.counts()[&("list".to_string(), "workloads".to_string())];
        // More Workloads, then the history dropped and every stream closed: the watchers'
        // next watch is 410 Expired, and they list again.
        create_all(&client, names("second", 30)).await;
        api.compact();
        api.expire_watches();
        until("a relist", Duration::from_secs(10), || {
            api.counts()[&("list".to_string(), "workloads".to_string())] > lists_before
        })
        .await;
        finish_until_all_admitted(&api, &client, 90).await;
        stop.store(true, Ordering::SeqCst);
    };
    tokio::join!(drive(&mut run, &stop), scenario);
    settle(&mut run).await;
    assert_each_admitted_once(&api, 90);
    assert_eq!(memory_usage(&run.controller), cluster_usage(&api));
}

#[tokio::test]
async fn conflicts_and_server_errors_on_status_writes_are_retried_and_never_leave_memory_ahead() {
    let mut run = start("20");
    let stop = AtomicBool::new(false);
    let (api, client) = (run.api.clone(), run.client.clone());
    for (i, name) in names("flaky", 40).enumerate() {
        let code = if i % 2 == 0 { 409 } else { 500 };
        if i % 4 < 2 {
            api.fail_next("PATCH", &format!("/workloads/{name}/status"), code);
        }
    }
    let armed = api.failures_armed();
    assert_eq!(armed, 20);
    let scenario = async {
        create_all(&client, names("flaky", 40)).await;
        finish_until_all_admitted(&api, &client, 40).await;
        stop.store(true, Ordering::SeqCst);
    };
    tokio::join!(drive(&mut run, &stop), scenario);
    settle(&mut run).await;
    assert_eq!(api.failures_armed(), 0, "every injected failure was hit");
    assert_each_admitted_once(&api, 40);
    assert_eq!(memory_usage(&run.controller), cluster_usage(&api));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_1000_jobs_is_admitted_and_started_exactly_once_each() {
    // Exactly once at a burst's size; the controller's pace at Kueue's scale is measured by
    // `wasq bench --driver controller` (BENCHMARKS.md).
    const JOBS: usize = 1000;
    let mut run = start(&JOBS.to_string());
    let stop = AtomicBool::new(false);
    let api = run.api.clone();
    for i in 0..JOBS {
        let (path, job) = super::job(&format!("j-{i:04}"), "1", 1, super::queue_label(), true);
        api.put(&path, job);
    }
    let started = || {
        let mut n = 0;
        api.visit("batch/v1", "jobs", |j| {
            n += usize::from(j["spec"]["suspend"] == false)
        });
        n
    };
    let scenario = async {
        // Looked at once a second: the test's thread is the controller's too.
        let t0 = std::time::Instant::now();
        while started() < JOBS {
            assert!(
                t0.elapsed() < Duration::from_secs(240),
                "only {} of {JOBS} started",
                started()
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        stop.store(true, Ordering::SeqCst);
    };
    tokio::join!(drive(&mut run, &stop), scenario);
    settle(&mut run).await;
    assert_each_admitted_once(&api, JOBS);
    // One unsuspend patch per job, and one Workload per job.
    let unsuspends = api
        .requests()
        .iter()
        .filter(|r| {
            r.method == "PATCH"
                && r.uri.contains("/jobs/")
                && r.body.as_array().is_some_and(|ops| {
                    ops.iter()
                        .any(|op| op["path"] == "/spec/suspend" && op["value"] == false)
                })
        })
        .count();
    assert_eq!(unsuspends, JOBS);
    assert_eq!(api.objects(WORKLOADS, "workloads").len(), JOBS);
    assert_eq!(memory_usage(&run.controller), cluster_usage(&api));
    assert_eq!(
        cluster_usage(&api).values().sum::<i64>(),
        JOBS as i64 * 1000
    );
}
