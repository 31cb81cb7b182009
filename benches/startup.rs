//! The controller taking over a cluster Kueue ran (issue 61): start-up time and memory on the
//! API server double loaded with 50,000 Workloads exactly as Kueue leaves them
//! ([`wasq::k8s::apiserver::kueue`]) — 40,000 admitted (their Jobs running, `PodsReady`) and
//! 10,000 pending (`WaitingForQuota`, their Jobs suspended) over 100 ClusterQueues whose quota
//! the admitted ones fill — and their 50,000 Jobs.
//!
//! The controller runs as `wasq controller` does (kube-runtime watchers over HTTP, Kueue's
//! client pacing QPS 300 / burst 500, queue statuses once a second, pending messages every
//! 10 s), without leader election. Printed: the time from the watchers' start until every
//! source is listed, until the first pass is done (the core rebuilt from `status.admission`,
//! every Job synced, the first cycles run), the writes of that pass, and memory — this
//! process's resident size before the controller started (the double's store) and its peak
//! (`VmHWM`). The bench uses the system allocator (the binary uses mimalloc).
//!
//! `cargo bench --bench startup` (`WASQ_STARTUP_ADMITTED`, `WASQ_STARTUP_PENDING`,
//! `WASQ_STARTUP_CQS` change the shape; `WASQ_STARTUP_LIST=direct` hands the lists to the
//! controller without HTTP, leaving out the double's paging).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use wasq::api::jobs;
use wasq::k8s::apiserver::kueue::{self, Flavor, KueueJob};
use wasq::k8s::apiserver::{ApiServer, Config};
use wasq::k8s::client::writer::Writer;
use wasq::k8s::controller::Controller;
use wasq::k8s::controller::spawn_watchers;
use wasq::k8s::serve::metrics::Metrics;
use wasq::k8s::sync::mirror::{Observed, Source};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A `/proc/self/status` figure in bytes.
fn proc_status(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / 1048576.0
}

/// The double holding the cluster Kueue left: per ClusterQueue, `admitted` one-pod Jobs of
/// 1 cpu admitted (filling its quota) and `pending` waiting.
fn kueue_cluster(cqs: usize, admitted: usize, pending: usize) -> ApiServer {
    let api = ApiServer::new(Config {
        history: 20_000,
        record: false,
        ..Config::default()
    });
    let flavor = Flavor::new("default", json!({"node-pool": "default"}));
    api.put(&flavor.path(), flavor.object());
    let per_cq = |total: usize, i: usize| total / cqs + usize::from(i < total % cqs);
    let (admitted_at, pending_at) = ("2025-12-31T20:00:00Z", "2025-12-31T23:00:00Z");
    let message = KueueJob::insufficient_cpu_message(&flavor.name, 1000);
    for i in 0..cqs {
        let (ns, cq) = (format!("ns-{i}"), format!("cq-{i}"));
        let n_admitted = per_cq(admitted, i);
        let n_pending = per_cq(pending, i);
        let (path, obj) = kueue::namespace(&ns);
        api.put(&path, obj);
        let (path, mut obj) = kueue::cluster_queue(
            &cq,
            Some("all"),
            &flavor.name,
            &n_admitted.to_string(),
            // Memory to spare: the pending ones wait for cpu alone.
            &format!("{}Gi", 2 * n_admitted),
        );
        obj["status"] = kueue::cluster_queue_status(
            &flavor.name,
            1000 * n_admitted as i64,
            1024 * n_admitted as i64,
            n_admitted as i32,
            n_pending as i32,
        );
        api.put(&path, obj);
        let (path, obj) = kueue::local_queue(&ns, "lq", &cq);
        api.put(&path, obj);
        for k in 0..n_admitted + n_pending {
            let created = format!("2025-12-31T{:02}:{:02}:00Z", 8 + k / 60 % 12, k % 60);
            let job = KueueJob::new(&ns, &format!("job-{k}"), "lq", 1, 1000, 1024, &created);
            if k < n_admitted {
                api.put(&job.job_path(), job.running_job(&flavor, &cq, admitted_at));
                api.put(
                    &job.workload_path(),
                    job.admitted_workload(&cq, &flavor.name, admitted_at),
                );
            } else {
                api.put(&job.job_path(), job.job());
                api.put(
                    &job.workload_path(),
                    job.pending_workload("WaitingForQuota", &message, pending_at),
                );
            }
        }
    }
    api
}

fn main() {
    // `cargo bench` passes `--bench`; a filter that is not ours (`cargo bench -- name`) skips.
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with('-') && !"startup".contains(a.as_str()))
    {
        return;
    }
    let cqs = env_or("WASQ_STARTUP_CQS", 100);
    let admitted = env_or("WASQ_STARTUP_ADMITTED", 40_000);
    let pending = env_or("WASQ_STARTUP_PENDING", 10_000);
    // `WASQ_STARTUP_LIST=direct`: the lists handed to the controller as the watchers would,
    // without HTTP (the double pages a list by copying the whole collection for each page).
    let direct = std::env::var("WASQ_STARTUP_LIST").is_ok_and(|v| v == "direct");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let loading = Instant::now();
        let api = kueue_cluster(cqs, admitted, pending);
        let loaded = loading.elapsed();
        let rss_before = proc_status("VmRSS:");
        let client = api.client();
        let job = jobs::builtin_kind("batch/v1", "Job").expect("batch/v1 Job");
        let mut controller = Controller::new(
            Writer::new(client.clone(), Some("wasq-bench".into())).with_rate_limit(300.0, 500),
            vec![job],
            false,
            Arc::new(Metrics::new("standalone")),
            Arc::new(|| jiff::Timestamp::now().as_millisecond()),
            Arc::new(|_| {}),
        );
        controller.set_refresh_interval(Duration::from_secs(1));
        controller.set_pending_status_interval(Duration::from_secs(10));
        let requests_before = api.counts();
        let start = Instant::now();
        let sources = controller.sources();
        if direct {
            for source in &sources {
                let (api_version, plural) = match source {
                    Source::Kueue(k) => ("kueue.x-k8s.io/v1beta2", k.plural()),
                    Source::Namespace => ("v1", "namespaces"),
                    Source::Node => ("v1", "nodes"),
                    Source::Pod | Source::TasPod => ("v1", "pods"),
                    Source::Job(_) => ("batch/v1", "jobs"),
                    Source::Secret => ("v1", "secrets"),
                    Source::ProvisioningRequest => continue,
                };
                let mut objects = Vec::new();
                api.visit(api_version, plural, |v| {
                    objects.push(serde_json::from_value(v.clone()).expect("an object"));
                });
                controller.observe(Observed::Listed(*source, objects));
            }
        } else {
            let mut rx = spawn_watchers(&client, &controller);
            while !controller.mirror.is_synced(&sources) {
                let ev = rx.recv().await.expect("watchers running");
                controller.observe(ev);
                while let Ok(ev) = rx.try_recv() {
                    controller.observe(ev);
                }
            }
        }
        let listed = start.elapsed();
        controller.step().await;
        let first_pass = start.elapsed();
        let s = controller.scheduler().expect("the core is built");
        let holding = s
            .cluster
            .workloads
            .iter()
            .filter(|w| s.cluster.admission(w.id).is_some())
            .count();
        let queued = s.queues.pending_total();
        let writes: Vec<String> = api
            .counts()
            .into_iter()
            .filter(|((verb, _), _)| !matches!(verb.as_str(), "get" | "list" | "watch"))
            .map(|((verb, resource), n)| {
                let before = requests_before
                    .get(&(verb.clone(), resource.clone()))
                    .copied()
                    .unwrap_or(0);
                (verb, resource, n - before)
            })
            .filter(|(_, _, n)| *n > 0)
            .map(|(verb, resource, n)| format!("{verb} {resource} {n}"))
            .collect();
        println!(
            "controller start-up on a Kueue cluster: {cqs} ClusterQueues, {admitted} admitted + {pending} pending Workloads and their Jobs (loaded in {:.1} s), listed {}",
            loaded.as_secs_f64(),
            if direct { "directly" } else { "over HTTP by the watchers" }
        );
        println!(
            "  every source listed   {:.2} s",
            listed.as_secs_f64()
        );
        println!(
            "  first pass done       {:.2} s (core: {holding} holding quota, {queued} queued)",
            first_pass.as_secs_f64()
        );
        println!("  first pass writes     {}", writes.join(", "));
        println!(
            "  resident before start {:.0} MiB (the double's store); peak {:.0} MiB (+{:.0} MiB)",
            mib(rss_before),
            mib(proc_status("VmHWM:")),
            mib(proc_status("VmHWM:").saturating_sub(rss_before))
        );
        assert_eq!(holding, admitted, "every Kueue admission kept");
    });
}
