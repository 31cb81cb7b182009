//! The controller's dashboard on the API double, in headless Chromium (Playwright, as
//! `tests/all/dashboard.rs` drives the simulator's): the page opens on a running job, then a
//! higher-priority job is created and preempts it; the admission and the preemption arrive
//! without a reload, and the victim's history — the Events the controller recorded — names its
//! preemptor and the policy that chose it.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;

use serde_json::{Value, json};
use wasq::dashboard::{Board, Open};
use wasq::k8s::controller::dashboard::Feed;
use wasq::k8s::sync::mirror::Source;

use super::{Env, basics, job, job_wl, running_low_job};
use crate::dashboard::playwright_core;
use crate::html_report::chromium;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controllers_dashboard_updates_live_in_a_browser() {
    let browser = chromium().expect("headless Chromium: run .ci/ensure-chromium");
    let driver = playwright_core();
    let mut objects = basics("2");
    objects.extend(running_low_job());
    let mut env = Env::new(objects);
    let board = Board::new();
    env.controller
        .set_dashboard(Feed::new(board.clone(), None, None));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(wasq::dashboard::serve(
        listener,
        board.clone(),
        Arc::new(Open),
    ));
    env.list_all();
    env.step().await;
    assert_eq!(
        board.latest().view.workloads.len(),
        1,
        "the running job's Workload"
    );

    let expect = json!({
        "admitted": format!("ns/{}", job_wl("high")),
        "preempted": format!("ns/{}", job_wl("low")),
        "screenshots": null,
    });
    let mut node = Command::new("node")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/dashboard/live.cjs"
        ))
        .arg(expect.to_string())
        .args(["--url", &url])
        .env("CHROMIUM", &browser)
        .env("WASQ_PLAYWRIGHT_CORE", &driver)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node runs");
    let stderr = node.stderr.take().unwrap();
    let said = tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stderr).lines();
        let mut said = String::new();
        for line in lines.by_ref() {
            let line = line.unwrap_or_default();
            if line == "ready" {
                // The rest (a failure's reason) is read once the script ends.
                return (true, said, Some(lines));
            }
            said.push_str(&line);
            said.push('\n');
        }
        (false, said, None)
    })
    .await
    .unwrap();
    let (ready, said, rest) = said;
    assert!(ready, "the page did not open: {said}");

    // A higher-priority job arrives: its Workload is created and the running one preempted.
    let (path, high) = job(
        "high",
        "2",
        1,
        json!({"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/priority-class": "high"}),
        true,
    );
    env.api.put(&path, high);
    env.applied(Source::Job(0), &path);
    env.step().await;
    // The Job controller reports the victim's pods gone: the preemptor is admitted.
    let low_job = "/apis/batch/v1/namespaces/ns/jobs/low";
    let mut low = env.api.get(low_job).unwrap();
    low["status"] = json!({"active": 0});
    env.api.put(low_job, low);
    env.applied(Source::Job(0), low_job);
    env.step().await;

    let out = tokio::task::spawn_blocking(move || node.wait_with_output())
        .await
        .unwrap()
        .expect("node ends");
    let failure: Vec<String> = rest
        .map(|l| l.map_while(Result::ok).collect())
        .unwrap_or_default();
    assert!(out.status.success(), "{}", failure.join("\n"));
    let seen: Value = serde_json::from_slice(&out.stdout).expect("the script's JSON");
    assert_eq!(seen["consoleErrors"], json!([]), "{seen}");
    for r in seen["requests"].as_array().unwrap() {
        assert!(
            r.as_str().unwrap().starts_with(&url),
            "a request left the dashboard: {r}"
        );
    }
    assert_eq!(seen["live"]["admittedAtLoad"], false, "{seen}");
    assert_eq!(seen["live"]["reloaded"], false);
    let note = seen["live"]["preemptedNote"].as_str().unwrap();
    assert!(
        note.contains(&format!("by ns/{}", job_wl("high"))),
        "{note}"
    );
    // The victim's history: its Events as the controller recorded them, Kueue's notes, and
    // the preemption policy from their annotations.
    let history = seen["live"]["history"].as_array().unwrap();
    let preempted = history
        .iter()
        .find(|r| r[1] == "Preempted")
        .unwrap_or_else(|| panic!("{history:?}"));
    assert!(
        preempted[3]
            .as_str()
            .unwrap()
            .starts_with("Preempted to accommodate a workload"),
        "{preempted:?}"
    );
    assert!(
        preempted[4]
            .as_str()
            .unwrap()
            .contains("preemption: builtin"),
        "{preempted:?}"
    );
}
