//! `wasq bench --driver controller`: Kueue's performance-test shape run through the real
//! controller (kube-runtime watchers, the mirror, cycles, writes) against the in-process API
//! server double ([`crate::k8s::apiserver`]) in real time, as Kueue's harness runs Kueue: each
//! Workload is created at its arrival time and marked `Finished` when its duration has passed
//! after its admission. `time_scale` multiplies every arrival and duration (0.1: ten times
//! faster); times to admit are reported divided by it, in the shape's seconds.
//!
//! The controller runs as `wasq controller` runs it: requests paced by a token bucket (Kueue's
//! `clientConnection` defaults unless [`Options`] say otherwise) and queue statuses refreshed
//! once a second. With `backlog`, every workload is pending before the controller starts and
//! the ClusterQueues' quota covers them all: what is measured is how fast a backlog released
//! at once is admitted.
//!
//! The harness reads and writes the double directly (not over HTTP), so that the request
//! counters are the controller's alone.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;
use serde_json::{Value, json};

use crate::k8s::apiserver::{ApiServer, ChangeType, Config};
use crate::k8s::cli::spawn_watchers;
use crate::k8s::controller::Controller;
use crate::k8s::metrics::Metrics;
use crate::k8s::writer::Writer;
use crate::sim::generate::{GeneratorSpec, Shape, generate};
use crate::sim::{ARRIVAL, CLASS, DURATION};

const KUEUE: &str = "kueue.x-k8s.io/v1beta2";

/// How `wasq bench --driver controller` runs.
#[derive(Clone)]
pub struct Options {
    pub shape: Shape,
    /// Server-side latency of every request.
    pub api_latency: Duration,
    /// Multiplies every arrival and duration.
    pub time_scale: f64,
    /// Wall time after which the run stops, finished or not.
    pub limit: Duration,
    /// The controller's client-side pacing (`--kube-api-qps`; not positive: none).
    pub qps: f64,
    pub burst: u32,
    /// Every workload pending at start, with quota for all of them.
    pub backlog: bool,
    /// The controller's `--pending-status-interval`.
    pub pending_status_interval: Duration,
    /// Binds policies as `wasq controller --policy/--shadow` would (`None`: the built-in).
    pub configure: Option<crate::k8s::core::Configure>,
    /// Where the bound shadows record (reported as `shadow`).
    pub shadows: Option<Arc<crate::policy::shadow::ShadowLog>>,
}

/// What `wasq bench --driver controller` measures.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ControllerBench {
    pub shape: &'static str,
    pub driver: &'static str,
    pub api_latency_ms: f64,
    pub time_scale: f64,
    /// The controller's client-side pacing (0: none).
    pub kube_api_qps: f64,
    pub kube_api_burst: u32,
    /// Whether every workload was pending at start, with quota for all of them.
    pub backlog: bool,
    pub pending_status_interval_seconds: f64,
    pub workloads: usize,
    pub admissions: u64,
    /// Whether every workload was admitted and finished before the time limit.
    pub completed: bool,
    pub wall_seconds: f64,
    pub admissions_per_second: f64,
    /// Admissions per second from the start to the last admission (with `backlog`: how fast
    /// the backlog was admitted).
    pub admission_rate_while_admitting: f64,
    /// Mean time from creation to admission per workload class, in the shape's seconds
    /// (measured wall time divided by `timeScale`).
    pub mean_time_to_admit_seconds: BTreeMap<String, f64>,
    /// The same, in wall seconds as measured (the figure to read when the controller does not
    /// keep up with the scaled arrivals).
    pub mean_time_to_admit_wall_seconds: BTreeMap<String, f64>,
    /// Wall seconds the Events published in the background took after the run ended.
    pub events_lag_seconds: f64,
    /// Events dropped because too many were waiting (`events::MAX_QUEUED`).
    pub events_dropped: u64,
    /// The controller's API requests (watches and Events included) per admission.
    pub requests_per_admission: f64,
    /// Requests per `verb resource`.
    pub requests: BTreeMap<String, u64>,
    /// Workload status patches per kind of write (`admission`, `eviction`, `pending`, or the
    /// field manager of other writes), retries included.
    pub workload_status_writes: BTreeMap<String, u64>,
    /// Peak resident memory of the process (Linux `VmHWM`), the double's store included.
    pub peak_memory_bytes: Option<u64>,
    /// User + system CPU time of the process (Linux `/proc/self/stat`).
    pub cpu_seconds: Option<f64>,
    /// Per shadow policy (`--shadow EXT=NAME`): its decisions against the enforced ones, as
    /// the simulator's `summary.shadow` reports them.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub shadow: BTreeMap<String, crate::policy::shadow::Figures>,
}

/// Kueue's published figures for a shape: (wall seconds of its run, mean time-to-admit
/// thresholds per class).
pub fn kueue_reference(shape: Shape) -> (f64, [(&'static str, f64); 3]) {
    let t = super::simulator::thresholds(shape);
    let wall = match shape {
        Shape::Baseline => 351.0,
        Shape::LargeScale => f64::NAN,
    };
    (wall, t.max_mean_time_to_admit_seconds)
}

fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command (which may hold spaces) end at ") ".
    let rest = stat.rsplit_once(") ")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let (utime, stime): (f64, f64) = (fields.get(11)?.parse().ok()?, fields.get(12)?.parse().ok()?);
    // USER_HZ is 100 on every Linux platform Rust supports.
    Some((utime + stime) / 100.0)
}

fn with_type(mut v: Value, kind: &str) -> Value {
    v["apiVersion"] = json!(KUEUE);
    v["kind"] = json!(kind);
    v
}

fn millis(annotations: &BTreeMap<String, String>, key: &str) -> i64 {
    annotations
        .get(key)
        .and_then(|v| crate::api::duration::parse_millis(v).ok())
        .unwrap_or(0)
}

/// One workload of the shape, as the harness creates it.
struct Arrival {
    at: Duration,
    duration: Duration,
    class: String,
    path: String,
    object: Value,
}

/// Runs the shape through the controller as `options` say.
pub fn run(options: &Options) -> anyhow::Result<ControllerBench> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(run_async(options))
}

/// Each ClusterQueue's nominal cpu quota raised to what its workloads request together.
fn quota_for_all(m: &mut crate::api::Manifests, shape: Shape) {
    let per_cq: i64 = shape
        .config()
        .sets
        .iter()
        .map(|s| i64::from(s.count) * s.cpu * 1000)
        .sum();
    for cq in &mut m.cluster_queues {
        for rg in &mut cq.spec.resource_groups {
            for f in &mut rg.flavors {
                for r in f.resources.iter_mut().filter(|r| r.name == "cpu") {
                    r.nominal_quota = crate::api::Quantity(per_cq);
                }
            }
        }
    }
}

async fn run_async(options: &Options) -> anyhow::Result<ControllerBench> {
    let Options {
        shape,
        api_latency,
        time_scale,
        limit,
        ..
    } = options.clone();
    let mut m = generate(&GeneratorSpec { shape, seed: None });
    if options.backlog {
        quota_for_all(&mut m, shape);
    }
    let api = ApiServer::new(Config {
        history: 20_000,
        record: false,
        ..Config::default()
    });
    let k = "/apis/kueue.x-k8s.io/v1beta2";
    for f in &m.flavors {
        let name = f.metadata.name.clone().unwrap_or_default();
        api.put(
            &format!("{k}/resourceflavors/{name}"),
            with_type(serde_json::to_value(f)?, "ResourceFlavor"),
        );
    }
    for ns in &m.namespaces {
        let name = ns.metadata.name.clone().unwrap_or_default();
        api.put(
            &format!("/api/v1/namespaces/{name}"),
            serde_json::to_value(ns)?,
        );
    }
    for cq in &m.cluster_queues {
        let name = cq.metadata.name.clone().unwrap_or_default();
        api.put(
            &format!("{k}/clusterqueues/{name}"),
            with_type(serde_json::to_value(cq)?, "ClusterQueue"),
        );
    }
    for lq in &m.local_queues {
        let name = lq.metadata.name.clone().unwrap_or_default();
        let ns = lq.metadata.namespace.clone().unwrap_or_default();
        api.put(
            &format!("{k}/namespaces/{ns}/localqueues/{name}"),
            with_type(serde_json::to_value(lq)?, "LocalQueue"),
        );
    }
    let scale = |ms: i64| Duration::from_secs_f64(ms.max(0) as f64 / 1000.0 * time_scale);
    let mut arrivals: Vec<Arrival> = m
        .workloads
        .iter()
        .map(|wl| {
            let annotations = wl.metadata.annotations.clone().unwrap_or_default();
            let name = wl.metadata.name.clone().unwrap_or_default();
            let ns = wl.metadata.namespace.clone().unwrap_or_default();
            let mut object = with_type(serde_json::to_value(wl)?, "Workload");
            object["metadata"]["annotations"] = json!({CLASS: annotations.get(CLASS)});
            Ok(Arrival {
                at: if options.backlog {
                    Duration::ZERO
                } else {
                    scale(millis(&annotations, ARRIVAL))
                },
                duration: scale(millis(&annotations, DURATION)),
                class: annotations.get(CLASS).cloned().unwrap_or_default(),
                path: format!("{k}/namespaces/{ns}/workloads/{name}"),
                object,
            })
        })
        .collect::<anyhow::Result<_>>()?;
    arrivals.sort_by_key(|a| a.at);
    let total = arrivals.len();
    if options.backlog {
        // Pending before the controller lists anything.
        for a in &arrivals {
            api.put(&a.path, a.object.clone());
        }
    }
    let requests_before = api.request_total();

    api.set_latency(api_latency);
    let client = api.client();
    let mut controller = Controller::new(
        Writer::new(client.clone(), Some("wasq-bench".into()))
            .with_rate_limit(options.qps, options.burst),
        Vec::new(),
        false,
        Arc::new(Metrics::new("standalone")),
        Arc::new(|| jiff::Timestamp::now().as_millisecond()),
        options
            .configure
            .clone()
            .unwrap_or_else(|| Arc::new(|_| {})),
    );
    // As `wasq controller` runs.
    controller.set_refresh_interval(Duration::from_secs(1));
    controller.set_pending_status_interval(options.pending_status_interval);
    let mut rx = spawn_watchers(&client, &controller);
    let start = Instant::now();
    let admitted = Arc::new(std::sync::Mutex::new(Vec::new()));
    let harness = tokio::spawn(harness(
        api.clone(),
        arrivals,
        options.backlog,
        start,
        admitted.clone(),
    ));
    tokio::pin!(harness);
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let deadline = tokio::time::sleep(limit);
    tokio::pin!(deadline);
    let outcome = loop {
        tokio::select! {
            Some(ev) = rx.recv() => {
                controller.observe(ev);
                while let Ok(ev) = rx.try_recv() {
                    controller.observe(ev);
                }
            }
            _ = tick.tick() => {}
            done = &mut harness => break done.context("the bench harness")?,
            _ = &mut deadline => break false,
        }
        controller.step().await;
    };
    let wall = start.elapsed().as_secs_f64();
    // The Events still being published are the controller's requests too.
    controller.settled().await;
    let events_lag_seconds = start.elapsed().as_secs_f64() - wall;
    let completed = outcome;
    let admitted: Vec<(String, Duration, Duration)> = admitted.lock().expect("harness").clone();
    let admissions = admitted.len() as u64;
    let last_admission = admitted
        .iter()
        .map(|(_, _, at)| at.as_secs_f64())
        .fold(0.0, f64::max);
    let mut ttas: BTreeMap<String, (f64, u64)> = BTreeMap::new();
    for (class, tta, _) in &admitted {
        let e = ttas.entry(class.clone()).or_default();
        e.0 += tta.as_secs_f64() / time_scale;
        e.1 += 1;
    }
    let requests: BTreeMap<String, u64> = api
        .counts()
        .into_iter()
        .map(|((verb, resource), n)| (format!("{verb} {resource}"), n))
        .collect();
    let controller_requests = api.request_total() - requests_before;
    Ok(ControllerBench {
        shape: super::simulator::shape_name(shape),
        driver: "controller",
        api_latency_ms: api_latency.as_secs_f64() * 1000.0,
        time_scale,
        kube_api_qps: options.qps.max(0.0),
        kube_api_burst: options.burst,
        backlog: options.backlog,
        pending_status_interval_seconds: options.pending_status_interval.as_secs_f64(),
        workloads: total,
        admissions,
        completed,
        wall_seconds: wall,
        admissions_per_second: admissions as f64 / wall,
        admission_rate_while_admitting: if last_admission > 0.0 {
            admissions as f64 / last_admission
        } else {
            0.0
        },
        mean_time_to_admit_wall_seconds: ttas
            .iter()
            .map(|(c, (sum, n))| (c.clone(), sum * time_scale / *n as f64))
            .collect(),
        mean_time_to_admit_seconds: ttas
            .into_iter()
            .map(|(c, (sum, n))| (c, sum / n as f64))
            .collect(),
        events_lag_seconds,
        events_dropped: controller.events_dropped(),
        requests_per_admission: controller_requests as f64 / (admissions.max(1)) as f64,
        requests,
        workload_status_writes: status_writes(&controller.metrics.encode()),
        peak_memory_bytes: super::simulator::peak_rss(),
        shadow: options
            .shadows
            .as_ref()
            .map(|s| s.figures())
            .unwrap_or_default(),
        cpu_seconds: cpu_seconds(),
    })
}

/// `wasq_workload_status_writes_total` per `write` label, from the metrics' text.
fn status_writes(metrics: &str) -> BTreeMap<String, u64> {
    metrics
        .lines()
        .filter_map(|l| l.strip_prefix("wasq_workload_status_writes_total{"))
        .filter_map(|l| {
            let (labels, value) = l.rsplit_once(' ')?;
            let write = labels.split("write=\"").nth(1)?.split('"').next()?;
            Some((write.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// (class, time to admit, admitted after the start) per admitted Workload.
type Admitted = Arc<std::sync::Mutex<Vec<(String, Duration, Duration)>>>;

/// Creates each Workload at its time (with `created`, they exist already), watches the double for admissions (recorded in
/// `admitted`), finishes each admitted Workload after its duration; true once all finished.
async fn harness(
    api: ApiServer,
    arrivals: Vec<Arrival>,
    preloaded: bool,
    start: Instant,
    admitted: Admitted,
) -> bool {
    let total = arrivals.len();
    let mut created: HashMap<String, (Instant, String, Duration)> = HashMap::new();
    let mut finishes: BinaryHeap<Reverse<(Instant, String)>> = BinaryHeap::new();
    let mut finished = 0usize;
    let mut next = arrivals.into_iter().peekable();
    let mut cursor = api.resource_version();
    let finish_time = "2026-01-01T00:00:00Z";
    while finished < total {
        let now = Instant::now();
        while let Some(a) = next.next_if(|a| start + a.at <= now) {
            let name = a.object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if preloaded {
                created.insert(name, (start, a.class, a.duration));
            } else {
                created.insert(name, (Instant::now(), a.class, a.duration));
                api.put(&a.path, a.object);
            }
        }
        while let Some(Reverse((at, path))) = finishes.peek().cloned() {
            if at > now {
                break;
            }
            finishes.pop();
            api.modify(&path, |wl| {
                let conditions = wl["status"]["conditions"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                let mut conditions: Vec<Value> = conditions
                    .into_iter()
                    .filter(|c| c["type"] != "Finished")
                    .collect();
                conditions.push(
                    json!({"type": "Finished", "status": "True", "reason": "Succeeded",
                    "message": "Job finished successfully", "lastTransitionTime": finish_time}),
                );
                wl["status"]["conditions"] = json!(conditions);
            });
            finished += 1;
        }
        match api.changes_after(KUEUE, "workloads", cursor) {
            Ok((changes, head)) => {
                cursor = head;
                for c in changes {
                    let had = c
                        .prev
                        .as_ref()
                        .is_some_and(|p| p["status"]["admission"].is_object());
                    if c.kind == ChangeType::Deleted
                        || had
                        || !c.object["status"]["admission"].is_object()
                    {
                        continue;
                    }
                    if let Some((at, class, duration)) = created.get(&c.name) {
                        let now = Instant::now();
                        admitted.lock().expect("harness").push((
                            class.clone(),
                            now - *at,
                            now - start,
                        ));
                        let path = format!(
                            "/apis/kueue.x-k8s.io/v1beta2/namespaces/{}/workloads/{}",
                            c.namespace, c.name
                        );
                        finishes.push(Reverse((now + *duration, path)));
                    }
                }
            }
            Err(_) => {
                tracing::error!("the bench harness fell behind the double's history");
                return false;
            }
        }
        let wake = [
            next.peek().map(|a| start + a.at),
            finishes.peek().map(|Reverse((at, _))| *at),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or_else(|| Instant::now() + Duration::from_millis(50));
        tokio::select! {
            _ = api.written_after(cursor) => {}
            _ = tokio::time::sleep_until(wake.into()) => {}
        }
    }
    true
}

impl ControllerBench {
    pub fn to_table(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "wasq bench --driver controller: {} ({} workloads{}), API latency {} ms, time scale {}, client QPS {} burst {}",
            self.shape,
            self.workloads,
            if self.backlog { ", backlog" } else { "" },
            self.api_latency_ms,
            self.time_scale,
            self.kube_api_qps,
            self.kube_api_burst
        );
        let _ = writeln!(out, "  completed            {}", self.completed);
        let _ = writeln!(out, "  wall                 {:.1} s", self.wall_seconds);
        let _ = writeln!(
            out,
            "  admissions           {} ({:.1}/s; {:.1}/s until the last)",
            self.admissions, self.admissions_per_second, self.admission_rate_while_admitting
        );
        for (class, s) in &self.mean_time_to_admit_seconds {
            let _ = writeln!(out, "  mean time-to-admit   {class}: {s:.1} s (shape time)");
        }
        let _ = writeln!(
            out,
            "  requests/admission   {:.2}",
            self.requests_per_admission
        );
        let writes: Vec<String> = self
            .workload_status_writes
            .iter()
            .map(|(w, n)| format!("{w} {n}"))
            .collect();
        let _ = writeln!(out, "  status writes        {}", writes.join(", "));
        if let Some(p) = self.peak_memory_bytes {
            let _ = writeln!(
                out,
                "  peak memory          {:.1} MiB",
                p as f64 / 1048576.0
            );
        }
        if let Some(c) = self.cpu_seconds {
            let _ = writeln!(out, "  CPU                  {c:.1} s");
        }
        for (name, f) in &self.shadow {
            let _ = writeln!(
                out,
                "  shadow {name} ({}): {} decisions, {} agree, {} differ, {} invalid, {} fallback, {} skipped",
                f.extension, f.decisions, f.agree, f.differ, f.invalid, f.fallback, f.skipped
            );
        }
        out
    }
}
