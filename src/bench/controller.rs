//! `wasq bench --driver controller`: Kueue's performance-test shape run through the real
//! controller (kube-runtime watchers, the mirror, cycles, writes) in real time, as Kueue's
//! harness (`test/performance/scheduler`) runs Kueue: each Workload is created at its arrival
//! time and marked `Finished` when its duration has passed after its admission. `time_scale`
//! multiplies every arrival and duration (0.1: ten times faster); times to admit are reported
//! divided by it, in the shape's seconds.
//!
//! The controller runs as `wasq controller` runs it: requests paced by a token bucket (Kueue's
//! `clientConnection` defaults unless [`Options`] say otherwise) and queue statuses refreshed
//! once a second. With `backlog`, every workload is pending before the controller starts and
//! the ClusterQueues' quota covers them all: what is measured is how fast a backlog released
//! at once is admitted.
//!
//! Two targets:
//! - the in-process API server double ([`crate::k8s::apiserver`]), which the harness reads
//!   and writes directly (not over HTTP) so that the server's request counters are the
//!   controller's alone;
//! - a real cluster ([`Cluster`]: a kubeconfig and context), as Kueue's runner is pointed at a
//!   cluster: the shape's objects are applied (server-side apply), the Workloads created and
//!   finished through the API by the harness's own client, the controller's requests counted
//!   by a layer on its client, and the API server's CPU and memory read from its `/metrics`.
//!   The objects are left in the cluster, as Kueue's runner leaves them: the run refuses a
//!   cluster that already holds Workloads.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::k8s::apiserver::{ApiServer, ChangeType, Config};
use crate::k8s::client::writer::Writer;
use crate::k8s::controller::Controller;
use crate::k8s::controller::spawn_watchers;
use crate::k8s::serve::metrics::Metrics;
use crate::sim::generate::{Generator, ShapeConfig, generate_with};
use crate::sim::{ARRIVAL, CLASS, DURATION};

const KUEUE: &str = "kueue.x-k8s.io/v1beta2";

/// How `wasq bench --driver controller` runs.
#[derive(Clone)]
pub struct Options {
    /// The shape (one of Kueue's, or a `Generator` object's).
    pub generator: Generator,
    /// The cluster to run in (`None`: the in-process API server double).
    pub cluster: Option<Cluster>,
    /// Server-side latency of every request (the double only).
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
    /// Measure a controller running on its own (Kueue's, say) instead of wasq's in this
    /// process: its Prometheus metrics' URL, read for its requests (`rest_client_requests_total`)
    /// and its process's CPU and memory. Needs a cluster.
    pub external_metrics: Option<String>,
    /// Binds policies as `wasq controller --policy/--shadow` would (`None`: the built-in).
    pub configure: Option<crate::k8s::sync::core::Configure>,
    /// Where the bound shadows record (reported as `shadow`).
    pub shadows: Option<Arc<crate::policy::shadow::ShadowLog>>,
}

/// What `wasq bench --driver controller` measures.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ControllerBench {
    pub shape: String,
    pub driver: &'static str,
    /// Where the API requests went: `double` (in process) or the cluster's URL.
    pub api_server: String,
    /// Which controller admitted: wasq's in this process, or an external one.
    pub controller: String,
    pub api_latency_ms: f64,
    pub time_scale: f64,
    /// wasq's client-side pacing (0: none); an external controller's own is not known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kube_api_qps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kube_api_burst: Option<u32>,
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
    /// Peak resident memory of the controller's process (Linux `VmHWM` of this process, the
    /// double's store and the harness included; an external controller's largest
    /// `process_resident_memory_bytes` sampled).
    pub peak_memory_bytes: Option<u64>,
    /// User + system CPU time of the controller's process (Linux `/proc/self/stat`, the
    /// harness included; an external controller's `process_cpu_seconds_total` over the run).
    pub cpu_seconds: Option<f64>,
    /// The real API server's own CPU time over the run and its peak resident memory (from
    /// its `/metrics`); none for the double, which is in the process's figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_server_process: Option<ServerProcess>,
    /// Per shadow policy (`--shadow EXT=NAME`): its decisions against the enforced ones, as
    /// the simulator's `summary.shadow` reports them.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub shadow: BTreeMap<String, crate::policy::shadow::Figures>,
}

/// A cluster to run the shape in, reached as kubectl would reach it.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    /// Default: `$KUBECONFIG`, else `~/.kube/config`, else the in-cluster configuration.
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
}

/// The API server's process figures, read from its `/metrics`.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerProcess {
    /// `process_cpu_seconds_total` at the end less at the start.
    pub cpu_seconds: f64,
    /// The largest `process_resident_memory_bytes` sampled (once a second).
    pub peak_memory_bytes: f64,
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
    namespace: String,
    name: String,
    object: Value,
}

impl Arrival {
    fn path(&self) -> String {
        workload_path(&self.namespace, &self.name)
    }
}

fn workload_path(namespace: &str, name: &str) -> String {
    format!("/apis/{KUEUE}/namespaces/{namespace}/workloads/{name}")
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
fn quota_for_all(m: &mut crate::api::Manifests, config: &ShapeConfig) {
    let per_cq: i64 = config
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

/// The shape's queueing objects (flavors, namespaces, ClusterQueues, LocalQueues) by path.
fn queueing_objects(m: &crate::api::Manifests) -> anyhow::Result<Vec<(String, Value)>> {
    let k = format!("/apis/{KUEUE}");
    let mut out = Vec::new();
    for f in &m.flavors {
        let name = f.metadata.name.clone().unwrap_or_default();
        out.push((
            format!("{k}/resourceflavors/{name}"),
            with_type(serde_json::to_value(f)?, "ResourceFlavor"),
        ));
    }
    for ns in &m.namespaces {
        let name = ns.metadata.name.clone().unwrap_or_default();
        let mut object = serde_json::to_value(ns)?;
        object["apiVersion"] = json!("v1");
        object["kind"] = json!("Namespace");
        out.push((format!("/api/v1/namespaces/{name}"), object));
    }
    for cq in &m.cluster_queues {
        let name = cq.metadata.name.clone().unwrap_or_default();
        out.push((
            format!("{k}/clusterqueues/{name}"),
            with_type(serde_json::to_value(cq)?, "ClusterQueue"),
        ));
    }
    for lq in &m.local_queues {
        let name = lq.metadata.name.clone().unwrap_or_default();
        let ns = lq.metadata.namespace.clone().unwrap_or_default();
        out.push((
            format!("{k}/namespaces/{ns}/localqueues/{name}"),
            with_type(serde_json::to_value(lq)?, "LocalQueue"),
        ));
    }
    Ok(out)
}

fn arrivals(m: &crate::api::Manifests, options: &Options) -> anyhow::Result<Vec<Arrival>> {
    let scale = |ms: i64| Duration::from_secs_f64(ms.max(0) as f64 / 1000.0 * options.time_scale);
    let mut arrivals: Vec<Arrival> = m
        .workloads
        .iter()
        .map(|wl| {
            let annotations = wl.metadata.annotations.clone().unwrap_or_default();
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
                namespace: wl.metadata.namespace.clone().unwrap_or_default(),
                name: wl.metadata.name.clone().unwrap_or_default(),
                object,
            })
        })
        .collect::<anyhow::Result<_>>()?;
    arrivals.sort_by_key(|a| a.at);
    Ok(arrivals)
}

async fn run_async(options: &Options) -> anyhow::Result<ControllerBench> {
    let Options {
        api_latency,
        time_scale,
        limit,
        ..
    } = options.clone();
    let mut m = generate_with(&options.generator);
    if options.backlog {
        quota_for_all(&mut m, &options.generator.config);
    }
    anyhow::ensure!(
        options.external_metrics.is_none() || options.cluster.is_some(),
        "an external controller is measured in a cluster (a kubeconfig), not in the in-process API server"
    );
    let arrivals = arrivals(&m, options)?;
    let total = arrivals.len();
    let (target, client) = match &options.cluster {
        None => {
            let api = ApiServer::new(Config {
                history: 20_000,
                record: false,
                ..Config::default()
            });
            for (path, object) in queueing_objects(&m)? {
                api.put(&path, object);
            }
            if options.backlog {
                // Pending before the controller lists anything.
                for a in &arrivals {
                    api.put(&a.path(), a.object.clone());
                }
            }
            api.set_latency(api_latency);
            let client = api.client();
            (Target::Double { api }, client)
        }
        Some(cluster) => {
            anyhow::ensure!(
                api_latency.is_zero(),
                "--api-latency applies to the in-process API server only"
            );
            let (target, client) = RealCluster::connect(cluster).await?;
            for (path, object) in queueing_objects(&m)? {
                target.apply(&path, &object).await?;
            }
            if options.backlog {
                for a in &arrivals {
                    target.create(a).await?;
                }
            }
            (Target::Cluster(Arc::new(target)), client)
        }
    };

    // The API server's process figures (a real one's): CPU before and after, memory's peak.
    let server = match &target {
        Target::Cluster(c) => {
            let first = c.process().await;
            let c = c.clone();
            let peak = sample_peak(move || {
                let c = c.clone();
                async move { Some(c.process().await?.1) }
            });
            first.map(|(cpu, _)| (cpu, peak))
        }
        Target::Double { .. } => None,
    };
    let start = Instant::now();
    let admitted = Arc::new(Mutex::new(Vec::new()));
    let harness = tokio::spawn(harness(
        target.clone(),
        arrivals,
        options.backlog,
        start,
        admitted.clone(),
    ));
    let (outcome, wall, figures) = match &options.external_metrics {
        None => run_embedded(options, &client, harness, start, &target).await?,
        Some(url) => {
            let before = ControllerMetrics::scrape(url).await?;
            let sampled = {
                let url = url.clone();
                sample_peak(move || {
                    let url = url.clone();
                    async move {
                        let m = ControllerMetrics::scrape(&url).await.ok()?;
                        Some(m.resident_memory_bytes)
                    }
                })
            };
            let outcome = match tokio::time::timeout(limit, harness).await {
                Ok(done) => done.context("the bench harness")??,
                Err(_) => false,
            };
            let wall = start.elapsed().as_secs_f64();
            let peak = sampled.finish().await;
            let after = ControllerMetrics::scrape(url).await?;
            (outcome, wall, after.since(&before, peak))
        }
    };
    let api_server_process = match (server, &target) {
        (Some((first, peak)), Target::Cluster(c)) => {
            let peak = peak.finish().await;
            c.process().await.map(|last| ServerProcess {
                cpu_seconds: last.0 - first,
                peak_memory_bytes: peak.max(last.1),
            })
        }
        _ => None,
    };
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
    let api_server = match &target {
        Target::Double { .. } => "double".to_string(),
        Target::Cluster(c) => c.url.clone(),
    };
    let controller_requests: u64 = figures.requests.values().sum();
    let embedded = options.external_metrics.is_none();
    Ok(ControllerBench {
        shape: options.generator.name(),
        driver: "controller",
        api_server,
        api_latency_ms: api_latency.as_secs_f64() * 1000.0,
        time_scale,
        kube_api_qps: embedded.then_some(options.qps.max(0.0)),
        kube_api_burst: embedded.then_some(options.burst),
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
        controller: match &options.external_metrics {
            None => "wasq (in this process)".to_string(),
            Some(url) => format!("external ({url})"),
        },
        events_lag_seconds: figures.events_lag_seconds,
        events_dropped: figures.events_dropped,
        requests_per_admission: controller_requests as f64 / (admissions.max(1)) as f64,
        requests: figures.requests,
        workload_status_writes: figures.status_writes,
        peak_memory_bytes: figures.peak_memory_bytes,
        api_server_process,
        shadow: options
            .shadows
            .as_ref()
            .map(|s| s.figures())
            .unwrap_or_default(),
        cpu_seconds: figures.cpu_seconds,
    })
}

/// What is measured of the controller.
struct Figures {
    /// Requests per `verb resource` (an external controller's: per method).
    requests: BTreeMap<String, u64>,
    status_writes: BTreeMap<String, u64>,
    events_lag_seconds: f64,
    events_dropped: u64,
    cpu_seconds: Option<f64>,
    peak_memory_bytes: Option<u64>,
}

/// wasq's controller, in this process, until the harness is done or the time limit passes:
/// (every workload finished, wall seconds, figures).
async fn run_embedded(
    options: &Options,
    client: &kube::Client,
    harness: tokio::task::JoinHandle<anyhow::Result<bool>>,
    start: Instant,
    target: &Target,
) -> anyhow::Result<(bool, f64, Figures)> {
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
    let events = spawn_watchers(client, &controller);
    let deadline = tokio::time::sleep_until((start + options.limit).into());
    let end = async {
        tokio::select! {
            done = harness => done.context("the bench harness")?,
            _ = deadline => Ok(false),
        }
    };
    // Leading from the start, as `wasq controller --no-leader-elect`.
    let outcome = controller
        .run(
            events,
            Duration::from_millis(100),
            std::future::ready(()),
            end,
        )
        .await?;
    let wall = start.elapsed().as_secs_f64();
    // The Events still being published are the controller's requests too.
    controller.settled().await;
    let events_lag_seconds = start.elapsed().as_secs_f64() - wall;
    let counts = match target {
        // The harness writes the double's store directly: every request is the controller's.
        Target::Double { api } => api.counts(),
        Target::Cluster(c) => c.counter.counts(),
    };
    Ok((
        outcome,
        wall,
        Figures {
            requests: counts
                .into_iter()
                .map(|((verb, resource), n)| (format!("{verb} {resource}"), n))
                .collect(),
            status_writes: status_writes(&controller.metrics.encode()),
            events_lag_seconds,
            events_dropped: controller.events_dropped(),
            cpu_seconds: cpu_seconds(),
            peak_memory_bytes: super::simulator::peak_rss(),
        },
    ))
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
type Admitted = Arc<Mutex<Vec<(String, Duration, Duration)>>>;

/// The `Finished` condition the harness writes, as Kueue's runner does (`ByTest`).
fn finished_condition() -> Value {
    json!({"type": "Finished", "status": "True", "reason": "ByTest",
           "message": "By test runner", "lastTransitionTime": "2026-01-01T00:00:00Z"})
}

/// Where the harness creates, watches and finishes Workloads.
#[derive(Clone)]
enum Target {
    Double { api: ApiServer },
    Cluster(Arc<RealCluster>),
}

/// What the harness learns from the server.
enum Seen {
    /// The Workload (namespace, name) was admitted (again, after an eviction).
    Admitted(Key),
    /// The harness cannot follow the server any more.
    Lost(String),
}

impl Target {
    /// Creates a Workload now (with the cluster: in the background, so that creations keep
    /// their pace whatever one request takes).
    fn create(&self, a: &Arrival) {
        match self {
            Target::Double { api, .. } => {
                api.put(&a.path(), a.object.clone());
            }
            Target::Cluster(c) => {
                let c = c.clone();
                let (path, object) = (a.path(), a.object.clone());
                tokio::spawn(async move {
                    if let Err(e) = c.create_at(&path, &object).await {
                        tracing::error!(error = %format!("{e:#}"), "the bench harness could not create a Workload");
                    }
                });
            }
        }
    }

    /// Marks a Workload `Finished`.
    fn finish(&self, namespace: &str, name: &str) {
        let path = workload_path(namespace, name);
        match self {
            Target::Double { api, .. } => {
                api.modify(&path, |wl| {
                    let mut conditions: Vec<Value> = wl["status"]["conditions"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                        .into_iter()
                        .filter(|c| c["type"] != "Finished")
                        .collect();
                    conditions.push(finished_condition());
                    wl["status"]["conditions"] = json!(conditions);
                });
            }
            Target::Cluster(c) => {
                let c = c.clone();
                let (namespace, name) = (namespace.to_string(), name.to_string());
                tokio::spawn(async move {
                    if let Err(e) = c.finish(&namespace, &name).await {
                        tracing::error!(error = %format!("{e:#}"), "the bench harness could not finish a Workload");
                    }
                });
            }
        }
    }

    /// Admissions as the server reports them, in a task of their own.
    fn admissions(&self) -> mpsc::UnboundedReceiver<Seen> {
        let (tx, rx) = mpsc::unbounded_channel();
        match self {
            Target::Double { api, .. } => {
                tokio::spawn(follow_double(api.clone(), tx));
            }
            Target::Cluster(c) => {
                tokio::spawn(follow_cluster(c.client.clone(), tx));
            }
        }
        rx
    }
}

/// Tells apart a first admission (or one after an eviction) from a write to an admitted
/// Workload.
#[derive(Default)]
struct Admissions(HashSet<Key>);

impl Admissions {
    /// The Workload's latest state; true when it has just been admitted.
    fn newly_admitted(&mut self, key: &Key, object: &Value) -> bool {
        if object["status"]["admission"].is_object() {
            self.0.insert(key.clone())
        } else {
            self.0.remove(key);
            false
        }
    }
}

/// A Workload's namespace and name (the generated names repeat in every namespace).
type Key = (String, String);

async fn follow_double(api: ApiServer, tx: mpsc::UnboundedSender<Seen>) {
    let mut cursor = api.resource_version();
    let mut seen = Admissions::default();
    loop {
        match api.changes_after(KUEUE, "workloads", cursor) {
            Ok((changes, head)) => {
                cursor = head;
                for c in changes {
                    let key = (c.namespace, c.name);
                    if c.kind == ChangeType::Deleted {
                        seen.0.remove(&key);
                    } else if seen.newly_admitted(&key, &c.object)
                        && tx.send(Seen::Admitted(key)).is_err()
                    {
                        return;
                    }
                }
            }
            Err(_) => {
                let _ = tx.send(Seen::Lost(
                    "the bench harness fell behind the double's history".into(),
                ));
                return;
            }
        }
        tokio::select! {
            _ = api.written_after(cursor) => {}
            _ = tx.closed() => return,
        }
    }
}

fn key_of(o: &kube::api::DynamicObject) -> Key {
    (
        o.metadata.namespace.clone().unwrap_or_default(),
        o.metadata.name.clone().unwrap_or_default(),
    )
}

async fn follow_cluster(client: kube::Client, tx: mpsc::UnboundedSender<Seen>) {
    use futures::StreamExt;
    use kube::runtime::watcher::{self, Event};
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::all_with(
        client,
        &crate::k8s::schema::kinds::KueueKind::Workload.api_resource(),
    );
    let mut events = std::pin::pin!(watcher::watcher(api, watcher::Config::default()));
    let mut seen = Admissions::default();
    loop {
        let event = tokio::select! {
            e = events.next() => e,
            _ = tx.closed() => return,
        };
        match event {
            Some(Ok(Event::Apply(o) | Event::InitApply(o))) => {
                let key = key_of(&o);
                if seen.newly_admitted(&key, &o.data) && tx.send(Seen::Admitted(key)).is_err() {
                    return;
                }
            }
            Some(Ok(Event::Delete(o))) => {
                seen.0.remove(&key_of(&o));
            }
            Some(Ok(Event::Init | Event::InitDone)) => {}
            // The watcher lists again after an error; the next events carry on.
            Some(Err(e)) => tracing::warn!(error = %e, "the bench harness's Workload watch"),
            None => {
                let _ = tx.send(Seen::Lost("the Workload watch ended".into()));
                return;
            }
        }
    }
}

/// Creates each Workload at its time (with `preloaded`, they exist already), follows the
/// admissions (recorded in `admitted`), finishes each admitted Workload after its duration;
/// true once all finished, an error when the server cannot be followed.
async fn harness(
    target: Target,
    arrivals: Vec<Arrival>,
    preloaded: bool,
    start: Instant,
    admitted: Admitted,
) -> anyhow::Result<bool> {
    let total = arrivals.len();
    let mut created: HashMap<Key, (Instant, String, Duration)> = HashMap::new();
    let mut finishes: BinaryHeap<Reverse<(Instant, Key)>> = BinaryHeap::new();
    let mut finished = 0usize;
    let mut next = arrivals.into_iter().peekable();
    let mut seen = target.admissions();
    while finished < total {
        let now = Instant::now();
        while let Some(a) = next.next_if(|a| start + a.at <= now) {
            let at = if preloaded {
                start
            } else {
                target.create(&a);
                Instant::now()
            };
            created.insert((a.namespace, a.name), (at, a.class, a.duration));
        }
        while let Some(Reverse((_, (namespace, name)))) = finishes
            .peek()
            .filter(|Reverse((at, _))| *at <= now)
            .cloned()
        {
            finishes.pop();
            target.finish(&namespace, &name);
            finished += 1;
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
            s = seen.recv() => match s {
                Some(Seen::Admitted(key)) => {
                    if let Some((at, class, duration)) = created.get(&key) {
                        let now = Instant::now();
                        admitted.lock().expect("harness").push((
                            class.clone(),
                            now - *at,
                            now - start,
                        ));
                        finishes.push(Reverse((now + *duration, key)));
                    }
                }
                Some(Seen::Lost(why)) => anyhow::bail!(why),
                None => anyhow::bail!("the bench harness stopped following the server"),
            },
            _ = tokio::time::sleep_until(wake.into()) => {}
        }
    }
    Ok(true)
}

/// Requests per (verb, resource), counted on the client as the double counts them on the
/// server: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`; `workloads/status`.
#[derive(Clone, Default)]
struct Counter(Arc<Mutex<BTreeMap<(String, String), u64>>>);

impl Counter {
    fn count(&self, method: &http::Method, uri: &http::Uri) {
        let Some((resource, named)) = resource_of(uri.path()) else {
            return;
        };
        let watching = uri
            .query()
            .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
        let verb = crate::k8s::apiserver::routes::verb(method, named, watching);
        *self
            .0
            .lock()
            .expect("counter")
            .entry((verb.to_string(), resource))
            .or_default() += 1;
    }

    fn counts(&self) -> BTreeMap<(String, String), u64> {
        self.0.lock().expect("counter").clone()
    }
}

/// `plural[/subresource]` of a resource path, and whether it names one object; `None` for
/// discovery and other paths.
fn resource_of(path: &str) -> Option<(String, bool)> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let rest = match segs.as_slice() {
        ["api", _, rest @ ..] => rest,
        ["apis", _, _, rest @ ..] => rest,
        _ => return None,
    };
    let rest = match rest {
        ["namespaces", _, rest @ ..] if !rest.is_empty() => rest,
        _ => rest,
    };
    match rest {
        [] => None,
        [plural] => Some((plural.to_string(), false)),
        [plural, _] => Some((plural.to_string(), true)),
        [plural, _, sub, ..] => Some((format!("{plural}/{sub}"), true)),
    }
}

/// Counts every request of the client it wraps.
#[derive(Clone)]
struct Counting<S> {
    inner: S,
    counter: Counter,
}

impl<S> tower::Layer<S> for Counter {
    type Service = Counting<S>;
    fn layer(&self, inner: S) -> Counting<S> {
        Counting {
            inner,
            counter: self.clone(),
        }
    }
}

impl<S, B> tower::Service<http::Request<B>> for Counting<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> S::Future {
        self.counter.count(request.method(), request.uri());
        self.inner.call(request)
    }
}

/// The field manager of the harness's writes.
const MANAGER: &str = "wasq-bench";

/// A real cluster: the harness's client, and the counter on the controller's.
struct RealCluster {
    client: kube::Client,
    counter: Counter,
    url: String,
}

impl RealCluster {
    /// Connects twice (the harness and the counted controller) and checks the cluster can take
    /// the run: Kueue's API served, no Workload in it yet.
    async fn connect(cluster: &Cluster) -> anyhow::Result<(RealCluster, kube::Client)> {
        let (config, source) = crate::k8s::client::connect::client_config(
            cluster.kubeconfig.as_deref(),
            cluster.context.as_deref(),
        )
        .await?;
        let url = config
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_string();
        let client = kube::Client::try_from(config.clone())
            .with_context(|| format!("cannot use {source}"))?;
        let counter = Counter::default();
        let counted = kube::client::ClientBuilder::try_from(config)
            .with_context(|| format!("cannot use {source}"))?
            .with_layer(&counter)
            .build();
        let workloads: kube::Api<kube::api::DynamicObject> = kube::Api::all_with(
            client.clone(),
            &crate::k8s::schema::kinds::KueueKind::Workload.api_resource(),
        );
        let existing = workloads
            .list_metadata(&kube::api::ListParams::default().limit(1))
            .await
            .map_err(|e| match e {
                kube::Error::Api(s) if s.code == 404 => anyhow::anyhow!(
                    "{url} does not serve {KUEUE} Workloads: install the CRDs first \
                     (`wasq crds | kubectl apply --server-side -f -`)"
                ),
                e => anyhow::anyhow!("cannot list Workloads at {url} (from {source}): {e}"),
            })?;
        anyhow::ensure!(
            existing.items.is_empty(),
            "{url} already holds Workloads: the bench creates and leaves thousands of objects, \
             so it runs in a cluster of its own"
        );
        Ok((
            RealCluster {
                client,
                counter,
                url,
            },
            counted,
        ))
    }

    async fn send(&self, request: http::Request<Vec<u8>>, what: &str) -> anyhow::Result<()> {
        self.client
            .request::<Value>(request)
            .await
            .with_context(|| what.to_string())?;
        Ok(())
    }

    /// Server-side apply of `object` at `path`.
    async fn apply(&self, path: &str, object: &Value) -> anyhow::Result<()> {
        let request = http::Request::patch(format!("{path}?fieldManager={MANAGER}&force=true"))
            .header("content-type", "application/apply-patch+yaml")
            .body(serde_json::to_vec(object)?)?;
        self.send(request, &format!("applying {path}")).await
    }

    async fn create(&self, a: &Arrival) -> anyhow::Result<()> {
        self.create_at(&a.path(), &a.object).await
    }

    /// Creates the object whose path is `path`.
    async fn create_at(&self, path: &str, object: &Value) -> anyhow::Result<()> {
        let collection = path.rsplit_once('/').map_or(path, |(c, _)| c);
        let request = http::Request::post(format!("{collection}?fieldManager={MANAGER}"))
            .header("content-type", "application/json")
            .body(serde_json::to_vec(object)?)?;
        self.send(request, &format!("creating {path}")).await
    }

    /// Applies the `Finished` condition alone to the Workload's status (conditions are a map
    /// keyed by type, so the controller's conditions stay as they are).
    async fn finish(&self, namespace: &str, name: &str) -> anyhow::Result<()> {
        let path = workload_path(namespace, name);
        let patch = json!({"apiVersion": KUEUE, "kind": "Workload",
            "metadata": {"namespace": namespace, "name": name},
            "status": {"conditions": [finished_condition()]}});
        let request =
            http::Request::patch(format!("{path}/status?fieldManager={MANAGER}&force=true"))
                .header("content-type", "application/apply-patch+yaml")
                .body(serde_json::to_vec(&patch)?)?;
        self.send(request, &format!("finishing {path}")).await
    }

    /// `process_cpu_seconds_total` and `process_resident_memory_bytes` of the API server.
    async fn process(&self) -> Option<(f64, f64)> {
        let request = http::Request::get("/metrics").body(Vec::new()).ok()?;
        let text = self.client.request_text(request).await.ok()?;
        let value = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        };
        Some((
            value("process_cpu_seconds_total")?,
            value("process_resident_memory_bytes")?,
        ))
    }
}

/// Counters of an external controller's Prometheus metrics.
#[derive(Debug, Default)]
struct ControllerMetrics {
    /// `rest_client_requests_total` per method, summed over codes and hosts.
    requests: BTreeMap<String, f64>,
    cpu_seconds: f64,
    resident_memory_bytes: f64,
}

impl ControllerMetrics {
    fn parse(text: &str) -> ControllerMetrics {
        let mut m = ControllerMetrics::default();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((series, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(value) = value.trim().parse::<f64>() else {
                continue;
            };
            let (name, labels) = series.split_once('{').unwrap_or((series, ""));
            match name {
                "rest_client_requests_total" => {
                    let method = labels
                        .split("method=\"")
                        .nth(1)
                        .and_then(|l| l.split('"').next())
                        .unwrap_or("unknown")
                        .to_ascii_lowercase();
                    *m.requests.entry(method).or_default() += value;
                }
                "process_cpu_seconds_total" => m.cpu_seconds = value,
                "process_resident_memory_bytes" => m.resident_memory_bytes = value,
                _ => {}
            }
        }
        m
    }

    async fn scrape(url: &str) -> anyhow::Result<ControllerMetrics> {
        let text = http_get(url)
            .await
            .with_context(|| format!("reading the controller's metrics at {url}"))?;
        Ok(ControllerMetrics::parse(&text))
    }

    /// The figures of the run: counters now less `before`; `peak` resident memory sampled.
    fn since(&self, before: &ControllerMetrics, peak: f64) -> Figures {
        Figures {
            requests: self
                .requests
                .iter()
                .map(|(method, n)| {
                    let was = before.requests.get(method).copied().unwrap_or(0.0);
                    (
                        format!("{method} (all resources)"),
                        (n - was).round() as u64,
                    )
                })
                .filter(|(_, n)| *n > 0)
                .collect(),
            status_writes: BTreeMap::new(),
            events_lag_seconds: 0.0,
            events_dropped: 0,
            cpu_seconds: Some(self.cpu_seconds - before.cpu_seconds),
            peak_memory_bytes: Some(peak.max(self.resident_memory_bytes) as u64),
        }
    }
}

/// The body of a plain-HTTP GET (a metrics endpoint on loopback or in the cluster network).
async fn http_get(url: &str) -> anyhow::Result<String> {
    use http_body_util::BodyExt;
    let uri: http::Uri = url.parse().context("not a URL")?;
    anyhow::ensure!(
        uri.scheme_str() == Some("http"),
        "only http:// metrics URLs are read"
    );
    let host = uri.host().context("no host")?.to_string();
    let port = uri.port_u16().unwrap_or(80);
    let stream = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    let request = http::Request::get(uri.path_and_query().map_or("/", |p| p.as_str()))
        .header(http::header::HOST, format!("{host}:{port}"))
        .body(http_body_util::Empty::<hyper::body::Bytes>::new())?;
    let response = sender.send_request(request).await?;
    anyhow::ensure!(response.status().is_success(), "{}", response.status());
    let body = response.into_body().collect().await?.to_bytes();
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// Samples a figure (resident memory) once a second until [`Peak::finish`]: its largest.
fn sample_peak<F, Fut>(sample: F) -> Peak
where
    F: Fn() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Option<f64>> + Send,
{
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let mut peak = 0.0f64;
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    if let Some(v) = sample().await {
                        peak = peak.max(v);
                    }
                }
                _ = &mut stopped => return peak,
            }
        }
    });
    Peak { stop, task }
}

/// A peak being sampled.
struct Peak {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<f64>,
}

impl Peak {
    async fn finish(self) -> f64 {
        let _ = self.stop.send(());
        self.task.await.unwrap_or(0.0)
    }
}

impl ControllerBench {
    pub fn to_table(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "wasq bench --driver controller: {} ({} workloads{}), API server {}{}, time scale {}, controller {}",
            self.shape,
            self.workloads,
            if self.backlog { ", backlog" } else { "" },
            self.api_server,
            if self.api_server == "double" {
                format!(" (latency {} ms)", self.api_latency_ms)
            } else {
                String::new()
            },
            self.time_scale,
            match (self.kube_api_qps, self.kube_api_burst) {
                (Some(qps), Some(burst)) =>
                    format!("{} (client QPS {qps} burst {burst})", self.controller),
                _ => self.controller.clone(),
            }
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
        if let Some(p) = &self.api_server_process {
            let _ = writeln!(
                out,
                "  API server           {:.1} CPU s, peak memory {:.1} MiB",
                p.cpu_seconds,
                p.peak_memory_bytes / 1048576.0
            );
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
