//! The Kubernetes layer against the in-process API server double
//! ([`wasq::k8s::apiserver`]): the exact
//! requests (paths, patch bodies, field managers) the controller makes for Kueue's job
//! lifecycle. Everything above this layer is the simulator's code and is tested there.

mod ctl;
mod dashboard;
mod decisions;
mod events;
mod federation;
mod incremental;
mod inflight;
mod multikueue;
mod multikueue_manager;
mod multikueue_pods;
mod pending;
mod pods_ready;
mod provisioning;
mod queue_policy;
mod takeover;
mod tas;
mod watch;

use std::sync::Arc;

use kube::core::DynamicObject;
use serde_json::{Value, json};
use wasq::api::jobs;
use wasq::k8s::apiserver::{ApiServer, Recorded};
use wasq::k8s::client::writer::Writer;
use wasq::k8s::controller::Controller;
use wasq::k8s::schema::kinds::KueueKind;
use wasq::k8s::serve::metrics::Metrics;
use wasq::k8s::sync::mirror::{Observed, Source};

const KUEUE: &str = "/apis/kueue.x-k8s.io/v1beta2";
const NOW: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z
const T: &str = "2026-01-01T00:00:00Z";

struct Env {
    api: ApiServer,
    controller: Controller,
}

fn collections(kinds: &[jobs::JobKind]) -> Vec<(Source, String, String)> {
    let mut out: Vec<(Source, String, String)> = KueueKind::ALL
        .into_iter()
        .map(|k| (Source::Kueue(k), KUEUE.to_string(), k.plural().to_string()))
        .collect();
    out.push((Source::Namespace, "/api/v1".into(), "namespaces".into()));
    out.push((Source::Pod, "/api/v1".into(), "pods".into()));
    out.push((Source::Node, "/api/v1".into(), "nodes".into()));
    out.push((Source::TasPod, "/api/v1".into(), "pods".into()));
    out.push((Source::Secret, "/api/v1".into(), "secrets".into()));
    for (i, k) in kinds.iter().enumerate() {
        let prefix = if k.group.is_empty() {
            format!("/api/{}", k.version)
        } else {
            format!("/apis/{}", k.spec.api_version)
        };
        out.push((Source::Job(i), prefix, k.spec.plural.clone()));
    }
    out
}

impl Env {
    fn new(objects: Vec<(String, Value)>) -> Env {
        Env::with_clock(objects, Arc::new(|| NOW))
    }

    fn with_clock(objects: Vec<(String, Value)>, clock: wasq::k8s::controller::Clock) -> Env {
        Env::with_hook(objects, clock, Arc::new(|_| {}))
    }

    /// An environment whose controller binds policies with `configure`.
    fn with_hook(
        objects: Vec<(String, Value)>,
        clock: wasq::k8s::controller::Clock,
        configure: wasq::k8s::sync::core::Configure,
    ) -> Env {
        let api = double();
        for (path, obj) in objects {
            api.put(&path, obj);
        }
        Env::on(api, clock, configure)
    }

    /// A controller on the double `api` (another cluster's, served over HTTP too).
    fn on(
        api: ApiServer,
        clock: wasq::k8s::controller::Clock,
        configure: wasq::k8s::sync::core::Configure,
    ) -> Env {
        let writer = Writer::new(api.client(), Some("test".into()));
        let controller = Controller::new(
            writer,
            jobs::builtin()
                .into_iter()
                .filter(|k| k.has_suspend())
                .collect(),
            true,
            Arc::new(Metrics::new("standalone")),
            clock,
            configure,
        );
        Env { api, controller }
    }

    /// Every source listed from the double's store, as the watchers' first lists.
    fn list_all(&mut self) {
        for (source, prefix, plural) in collections(self.controller.kinds()) {
            let objs = list_kind(&self.api, &prefix, &plural);
            self.controller.observe(Observed::Listed(source, objs));
        }
    }

    /// The watch event for an object changed in the store.
    fn applied(&mut self, source: Source, path: &str) {
        let obj = self.api.get(path).expect("stored");
        self.controller.observe(Observed::Applied(
            source,
            serde_json::from_value(obj).unwrap(),
        ));
    }

    /// One pass, and its Events published.
    async fn step(&mut self) {
        self.controller.step().await;
        self.controller.settled().await;
    }

    /// Requests other than Events and queue and cohort status.
    fn writes(&self) -> Vec<Recorded> {
        self.api
            .requests()
            .into_iter()
            .filter(|r| {
                let cohort_status = r.uri.contains("/cohorts/") && r.uri.contains("/status");
                !r.uri.contains("/events") && !r.uri.contains("queues/") && !cohort_status
            })
            .collect()
    }

    /// The status patches written to Cohorts, as `name: body`.
    fn cohort_status_writes(&self) -> Vec<(String, Value)> {
        self.api
            .requests()
            .into_iter()
            .filter_map(|r| {
                let path = r.uri.split_once('?').map_or(r.uri.as_str(), |(p, _)| p);
                let name = path
                    .strip_prefix(&format!("{KUEUE}/cohorts/"))?
                    .strip_suffix("/status")?;
                (r.method == "PATCH").then(|| (name.to_string(), r.body["status"].clone()))
            })
            .collect()
    }

    fn lines(&self) -> Vec<String> {
        self.writes().iter().map(Recorded::line).collect()
    }
}

/// The value of a `wasq_*` counter with these labels (0 when never counted).
fn counter(env: &Env, name: &str, label: &str) -> u64 {
    let text = env.controller.metrics.encode();
    text.lines()
        .find(|l| l.starts_with(&format!("{name}{{")) && l.contains(label))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A Workload's conditions with Kueue's `Finished` (`Succeeded`, `message`) added, as the job
/// integration writes it when the job ends.
fn conditions_with_finished(wl: &Value, message: &str) -> Value {
    let mut conditions = wl["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    conditions.push(
        json!({"type": "Finished", "status": "True", "reason": "Succeeded",
                           "message": message, "lastTransitionTime": T}),
    );
    json!(conditions)
}

/// Workload `ns/name` marked `Finished` in the cluster, its watch event taken in, one pass.
async fn finish(env: &mut Env, name: &str) {
    let path = format!("{KUEUE}/namespaces/ns/workloads/{name}");
    env.api.modify(&path, |wl| {
        wl["status"]["conditions"] = conditions_with_finished(wl, "done");
    });
    env.applied(Source::Kueue(KueueKind::Workload), &path);
    env.step().await;
}

/// The API server double the tests use: its clock at [`T`].
pub fn double() -> ApiServer {
    let api = ApiServer::default();
    api.set_clock(Arc::new(|| T.to_string()));
    api
}

/// The objects of one resource collection (`prefix` as `/api/v1` or `/apis/group/version`).
pub fn list_kind(api: &ApiServer, prefix: &str, plural: &str) -> Vec<DynamicObject> {
    api.all()
        .into_iter()
        .filter(|(path, _)| {
            path.starts_with(prefix)
                && path
                    .split_once(&format!("/{plural}/"))
                    .is_some_and(|(_, rest)| !rest.contains('/'))
        })
        .map(|(_, v)| serde_json::from_value(v).unwrap())
        .collect()
}

fn flavor(name: &str, labels: Value) -> (String, Value) {
    (
        format!("{KUEUE}/resourceflavors/{name}"),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
               "metadata": {"name": name},
               "spec": {"nodeLabels": labels,
                        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": name, "effect": "NoSchedule"}]}}),
    )
}

fn cluster_queue(name: &str, flavor: &str, cpu: &str) -> (String, Value) {
    (
        format!("{KUEUE}/clusterqueues/{name}"),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
               "metadata": {"name": name},
               "spec": {"namespaceSelector": {},
                        "preemption": {"withinClusterQueue": "LowerPriority"},
                        "resourceGroups": [{"coveredResources": ["cpu"],
                            "flavors": [{"name": flavor, "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}]}}),
    )
}

fn basics(cpu: &str) -> Vec<(String, Value)> {
    vec![
        flavor("gpu-a", json!({"gpu": "a"})),
        cluster_queue("cq", "gpu-a", cpu),
        (
            format!("{KUEUE}/namespaces/ns/localqueues/lq"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                   "metadata": {"name": "lq", "namespace": "ns"}, "spec": {"clusterQueue": "cq"}}),
        ),
        (
            "/api/v1/namespaces/ns".into(),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}),
        ),
        (
            format!("{KUEUE}/workloadpriorityclasses/high"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                   "metadata": {"name": "high"}, "value": 100}),
        ),
    ]
}

fn job(name: &str, cpu_per_pod: &str, pods: i32, labels: Value, suspend: bool) -> (String, Value) {
    (
        format!("/apis/batch/v1/namespaces/ns/jobs/{name}"),
        json!({"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": name, "namespace": "ns", "labels": labels, "creationTimestamp": T},
               "spec": {"parallelism": pods, "completions": pods, "suspend": suspend,
                        "template": {"spec": {"restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "busybox",
                                            "resources": {"requests": {"cpu": cpu_per_pod}}}]}}}}),
    )
}

/// The Workload name Kueue (and wasq) gives the test Job `name` (UID `uid-<name>`).
fn job_wl(name: &str) -> String {
    let kind = jobs::builtin_kind("batch/v1", "Job").unwrap();
    kind.workload_name(name, &format!("uid-{name}"), None)
}

fn rayjob_wl(name: &str) -> String {
    let kind = jobs::builtin_kind("ray.io/v1", "RayJob").unwrap();
    kind.workload_name(name, &format!("uid-{name}"), None)
}

fn queue_label() -> Value {
    json!({"kueue.x-k8s.io/queue-name": "lq"})
}

fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": T})
}

fn query(r: &Recorded) -> &str {
    r.uri.split_once('?').map(|(_, q)| q).unwrap_or_default()
}

#[tokio::test]
async fn a_queued_job_gets_a_workload_that_is_admitted_and_the_job_started_on_its_flavor() {
    let mut objects = basics("4");
    objects.push(job("pi", "1", 2, queue_label(), true));
    let mut env = Env::new(objects);
    env.list_all();
    env.step().await;

    let w = env.writes();
    assert_eq!(
        env.lines(),
        [
            format!("POST {KUEUE}/namespaces/ns/workloads"),
            format!(
                "PATCH {KUEUE}/namespaces/ns/workloads/{}/status",
                job_wl("pi")
            ),
            format!(
                "PATCH {KUEUE}/namespaces/ns/workloads/{}/status",
                job_wl("pi")
            ),
            "PATCH /apis/batch/v1/namespaces/ns/jobs/pi".to_string(),
        ]
    );
    // The Workload, owned by its Job.
    assert_eq!(query(&w[0]), "&fieldManager=wasq-job-controller");
    assert_eq!(w[0].body["metadata"]["name"], job_wl("pi"));
    assert_eq!(
        w[0].body["metadata"]["ownerReferences"],
        json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "pi", "uid": "uid-pi",
                "controller": true, "blockOwnerDeletion": true}])
    );
    assert_eq!(
        w[0].body["metadata"]["labels"],
        json!({"kueue.x-k8s.io/job-uid": "uid-pi"})
    );
    assert_eq!(w[0].body["spec"]["queueName"], "lq");
    assert_eq!(w[0].body["spec"]["podSets"][0]["count"], 2);
    // Admission: a merge patch of the status, preconditioned on the resourceVersion.
    assert_eq!(w[1].content_type, "application/merge-patch+json");
    assert_eq!(query(&w[1]), "&fieldManager=wasq-scheduler");
    assert!(w[1].body["metadata"]["resourceVersion"].is_string());
    assert_eq!(
        w[1].body["status"]["admission"],
        json!({"clusterQueue": "cq", "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "gpu-a"}, "resourceUsage": {"cpu": "2"}, "count": 2}]})
    );
    assert_eq!(
        w[1].body["status"]["conditions"],
        json!([
            condition(
                "QuotaReserved",
                "True",
                "QuotaReserved",
                "Quota reserved in ClusterQueue cq"
            ),
            condition("Admitted", "True", "Admitted", "The workload is admitted"),
        ])
    );
    // The Job: the flavor's node labels and tolerations, then unsuspended.
    // waitForPodsReady is on by default (Kueue v1beta2): the job controller's PodsReady.
    assert_eq!(query(&w[2]), "&fieldManager=wasq-job-controller");
    // The Workload's generation (1: set by the API server at create) is the condition's.
    let mut pods_ready = condition(
        "PodsReady",
        "False",
        "WaitForStart",
        "Not all pods are ready or succeeded",
    );
    pods_ready["observedGeneration"] = json!(1);
    assert_eq!(w[2].body["status"]["conditions"][2], pods_ready);
    assert_eq!(w[3].content_type, "application/json-patch+json");
    assert_eq!(query(&w[3]), "&fieldManager=wasq-job-controller");
    assert_eq!(
        w[3].body,
        json!([
            {"op": "add", "path": "/spec/template/spec/nodeSelector", "value": {"gpu": "a"}},
            {"op": "add", "path": "/spec/template/spec/tolerations",
             "value": [{"key": "dedicated", "operator": "Equal", "value": "gpu-a", "effect": "NoSchedule"}]},
            {"op": "add", "path": "/spec/suspend", "value": false},
        ])
    );
    // Events on the Workload.
    let events: Vec<String> = env
        .api
        .requests()
        .iter()
        .filter(|r| r.uri.contains("/events"))
        .map(|r| r.body["reason"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(events, ["QuotaReserved", "Admitted"]);
    // ClusterQueue status reports the reservation.
    let cq = env.api.get(&format!("{KUEUE}/clusterqueues/cq")).unwrap();
    assert_eq!(cq["status"]["admittedWorkloads"], 1);
    assert_eq!(
        cq["status"]["flavorsReservation"],
        json!([{"name": "gpu-a", "resources": [{"name": "cpu", "total": "2", "borrowed": "0"}]}])
    );
}

/// A running, admitted low-priority Job and its Workload, as the store holds them.
fn running_low_job() -> Vec<(String, Value)> {
    let (path, mut low) = job("low", "2", 1, queue_label(), false);
    low["spec"]["template"]["spec"]["nodeSelector"] = json!({"gpu": "a"});
    low["status"] = json!({"active": 1, "startTime": T});
    let workload = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": job_wl("low"), "namespace": "ns", "creationTimestamp": T, "uid": "uid-job-low",
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "low", "uid": "uid-low",
                                          "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"queueName": "lq", "priority": 0, "podSets": [{"name": "main", "count": 1,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
                "resources": {"requests": {"cpu": "2"}}}]}}}]},
        "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": [
                        {"name": "main", "flavors": {"cpu": "gpu-a"}, "resourceUsage": {"cpu": "2"}, "count": 1}]},
                   "conditions": [condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq"),
                                  condition("Admitted", "True", "Admitted", "The workload is admitted")]}});
    vec![
        (path, low),
        (
            format!("{KUEUE}/namespaces/ns/workloads/{}", job_wl("low")),
            workload,
        ),
    ]
}

#[tokio::test]
async fn preemption_evicts_suspends_restores_and_requeues_then_admits_the_preemptor() {
    let mut objects = basics("2");
    objects.extend(running_low_job());
    objects.push(job(
        "high",
        "2",
        1,
        json!({"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/priority-class": "high"}),
        true,
    ));
    let mut env = Env::new(objects);
    env.list_all();
    env.step().await;

    let low_job = "/apis/batch/v1/namespaces/ns/jobs/low".to_string();
    assert_eq!(
        env.lines(),
        [
            format!("POST {KUEUE}/namespaces/ns/workloads"),
            format!(
                "PATCH {KUEUE}/namespaces/ns/workloads/{}/status",
                job_wl("low")
            ),
            format!(
                "PATCH {KUEUE}/namespaces/ns/workloads/{}/status",
                job_wl("high")
            ),
            low_job.clone(),
            format!("{low_job}/status"),
            low_job.clone(),
        ]
        .map(|l| if l.starts_with('/') {
            format!("PATCH {l}")
        } else {
            l
        })
    );
    let w = env.writes();
    let message = format!(
        "Preempted to accommodate a workload (UID: uid-{}, JobUID: uid-high) due to \
         prioritization in the ClusterQueue; preemptor path: /cq; preemptee path: /cq",
        job_wl("high")
    );
    assert_eq!(
        w[1].body["status"]["conditions"],
        json!([
            condition(
                "QuotaReserved",
                "True",
                "QuotaReserved",
                "Quota reserved in ClusterQueue cq"
            ),
            condition("Admitted", "True", "Admitted", "The workload is admitted"),
            condition("Evicted", "True", "Preempted", &message),
            condition("Preempted", "True", "InClusterQueue", &message),
        ])
    );
    // The preemptor waits for its victim.
    assert_eq!(
        w[2].body["status"]["conditions"][0]["reason"],
        "WaitingForPreemptedWorkloads"
    );
    // Suspend, clear startTime so the template may change, restore the template.
    assert_eq!(
        w[3].body,
        json!([{"op": "add", "path": "/spec/suspend", "value": true}])
    );
    assert_eq!(
        w[4].body,
        json!([{"op": "remove", "path": "/status/startTime"}])
    );
    assert_eq!(
        w[5].body,
        json!([{"op": "remove", "path": "/spec/template/spec/nodeSelector"}])
    );

    // The Job controller reports the pods gone: the eviction completes and the preemptor runs.
    let mut low = env.api.get(&low_job).unwrap();
    low["status"] = json!({"active": 0});
    env.api.put(&low_job, low);
    env.applied(Source::Job(0), &low_job);
    env.api.clear_requests();
    env.step().await;
    assert_eq!(
        env.lines(),
        [
            format!(
                "PATCH {KUEUE}/namespaces/ns/workloads/{}/status",
                job_wl("low")
            ),
            format!(
                "PATCH {KUEUE}/namespaces/ns/workloads/{}/status",
                job_wl("high")
            ),
            // The requeued victim waits for quota again.
            format!(
                "PATCH {KUEUE}/namespaces/ns/workloads/{}/status",
                job_wl("low")
            ),
            // waitForPodsReady (on by default): PodsReady False while the pods start.
            format!(
                "PATCH {KUEUE}/namespaces/ns/workloads/{}/status",
                job_wl("high")
            ),
            "PATCH /apis/batch/v1/namespaces/ns/jobs/high".to_string(),
        ]
    );
    let w = env.writes();
    assert_eq!(w[0].body["status"]["admission"], Value::Null);
    let conds = &w[0].body["status"]["conditions"];
    assert_eq!(
        conds[0],
        condition("QuotaReserved", "False", "PendingEvaluation", &message)
    );
    assert_eq!(
        conds[1],
        condition(
            "Admitted",
            "False",
            "NoReservation",
            "The workload has no reservation"
        )
    );
    assert_eq!(
        conds[4],
        condition("Requeued", "True", "Preempted", &message)
    );
    assert_eq!(w[1].body["status"]["admission"]["clusterQueue"], "cq");
    assert_eq!(
        w[2].body["status"]["conditions"][0]["reason"],
        "WaitingForQuota"
    );
    assert_eq!(
        w[4].body.as_array().unwrap().last().unwrap()["value"],
        false
    );
}

#[tokio::test]
async fn a_finished_job_finishes_its_workload_and_releases_quota() {
    let mut objects = basics("2");
    objects.extend(running_low_job());
    let mut env = Env::new(objects);
    env.list_all();
    env.step().await;
    // Only waitForPodsReady's PodsReady condition (on by default) is written.
    assert_eq!(
        env.lines(),
        [format!(
            "PATCH {KUEUE}/namespaces/ns/workloads/{}/status",
            job_wl("low")
        )]
    );
    env.api.clear_requests();

    let path = "/apis/batch/v1/namespaces/ns/jobs/low";
    let mut low = env.api.get(path).unwrap();
    low["status"] = json!({"active": 0, "conditions": [
        {"type": "Complete", "status": "True", "message": "Reached expected number of succeeded pods"}]});
    env.api.put(path, low);
    env.applied(Source::Job(0), path);
    env.step().await;
    let w = env.writes();
    assert_eq!(
        env.lines(),
        [format!(
            "PATCH {KUEUE}/namespaces/ns/workloads/{}/status",
            job_wl("low")
        )]
    );
    assert_eq!(
        w[0].body["status"]["conditions"][3],
        condition(
            "Finished",
            "True",
            "Succeeded",
            "Reached expected number of succeeded pods"
        )
    );
    let s = env.controller.scheduler().unwrap();
    let cq = s.cluster.cq_by_name["cq"];
    assert!(s.cluster.admitted_rows(cq).is_empty());
}

#[tokio::test]
async fn a_conflicting_status_write_is_read_again_and_retried() {
    let mut objects = basics("4");
    objects.push(job("pi", "1", 1, queue_label(), true));
    let mut env = Env::new(objects);
    env.api
        .fail_next("PATCH", &format!("/workloads/{}/status", job_wl("pi")), 409);
    env.list_all();
    env.step().await;
    let status = format!("{KUEUE}/namespaces/ns/workloads/{}", job_wl("pi"));
    assert_eq!(
        env.lines(),
        [
            format!("POST {KUEUE}/namespaces/ns/workloads"),
            format!("PATCH {status}/status"),
            format!("GET {status}"),
            format!("PATCH {status}/status"),
            format!("PATCH {status}/status"),
            "PATCH /apis/batch/v1/namespaces/ns/jobs/pi".to_string(),
        ]
    );
    let stored = env.api.get(&status).unwrap();
    assert_eq!(stored["status"]["admission"]["clusterQueue"], "cq");
}

#[tokio::test]
async fn a_failed_admission_write_is_released_in_memory_and_retried_later() {
    let mut objects = basics("4");
    objects.push(job("pi", "1", 1, queue_label(), true));
    let mut env = Env::new(objects);
    env.api
        .fail_next("PATCH", &format!("/workloads/{}/status", job_wl("pi")), 500);
    env.list_all();
    env.step().await;
    let s = env.controller.scheduler().unwrap();
    let cq = s.cluster.cq_by_name["cq"];
    assert!(
        s.cluster.admitted_rows(cq).is_empty(),
        "memory must not be ahead of the cluster"
    );
    assert!(
        !env.lines().iter().any(|l| l.contains("/jobs/pi")),
        "job not started"
    );
    env.api.clear_requests();
    env.step().await;
    assert_eq!(
        env.lines(),
        [
            format!(
                "PATCH {KUEUE}/namespaces/ns/workloads/{}/status",
                job_wl("pi")
            ),
            format!(
                "PATCH {KUEUE}/namespaces/ns/workloads/{}/status",
                job_wl("pi")
            ),
            "PATCH /apis/batch/v1/namespaces/ns/jobs/pi".to_string(),
        ]
    );
}

#[tokio::test]
async fn a_restart_rebuilds_usage_from_admitted_workloads_before_the_first_cycle() {
    let mut objects = basics("2");
    objects.extend(running_low_job());
    objects.push(job("next", "1", 1, queue_label(), true));
    let mut env = Env::new(objects);
    // Nothing happens until every source is listed.
    let sources = env.controller.sources();
    let (first, rest) = sources.split_first().unwrap();
    env.controller.observe(Observed::Listed(*first, Vec::new()));
    env.step().await;
    assert!(env.api.requests().is_empty());
    let _ = rest;
    env.list_all();
    env.step().await;
    // The admitted Workload holds the whole quota: the new one waits instead of over-committing.
    assert_eq!(
        env.lines(),
        [
            format!("POST {KUEUE}/namespaces/ns/workloads"),
            format!(
                "PATCH {KUEUE}/namespaces/ns/workloads/{}/status",
                job_wl("next")
            ),
            // waitForPodsReady (on by default): the running Job's PodsReady condition.
            format!(
                "PATCH {KUEUE}/namespaces/ns/workloads/{}/status",
                job_wl("low")
            ),
        ]
    );
    let w = env.writes();
    let c = &w[1].body["status"]["conditions"][0];
    assert_eq!(
        (c["type"].as_str(), c["status"].as_str()),
        (Some("QuotaReserved"), Some("False"))
    );
    assert_eq!(w[1].body["status"]["admission"], Value::Null);
    let s = env.controller.scheduler().unwrap();
    let cq = s.cluster.cq_by_name["cq"];
    assert_eq!(s.cluster.admitted_in(cq).len(), 1);
}

/// Root Cohort `org` (10 cpu of its own) above Cohort `team`, which holds ClusterQueue `cq`
/// (nominal 2 cpu, borrowing without limit).
fn cohort_tree() -> Vec<(String, Value)> {
    let mut objects = basics("2");
    let cq = &mut objects[1].1;
    cq["spec"]["cohortName"] = json!("team");
    let cohort = |name: &str, spec: Value| {
        (
            format!("{KUEUE}/cohorts/{name}"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                   "metadata": {"name": name}, "spec": spec}),
        )
    };
    objects.push(cohort(
        "org",
        json!({"resourceGroups": [{"coveredResources": ["cpu"],
            "flavors": [{"name": "gpu-a", "resources": [{"name": "cpu", "nominalQuota": "10"}]}]}]}),
    ));
    objects.push(cohort("team", json!({"parentName": "org"})));
    objects
}

/// The cohort tree with a 2-pod × 2-cpu job, after one pass: 4 cpu in a queue of 2, so `team`
/// borrows 2 cpu from `org`.
async fn borrowing_job_admitted(fair_sharing: bool) -> Env {
    borrowing_job_admitted_in(cohort_tree(), fair_sharing).await
}

async fn borrowing_job_admitted_in(mut objects: Vec<(String, Value)>, fair_sharing: bool) -> Env {
    objects.push(job("big", "2", 2, queue_label(), true));
    let mut env = Env::new(objects);
    if fair_sharing {
        env.controller.mirror.configuration = Some(wasq::api::config::Configuration {
            fair_sharing: Some(Default::default()),
            ..Default::default()
        });
    }
    env.list_all();
    env.step().await;
    let admitted = env
        .api
        .get(&format!(
            "{KUEUE}/namespaces/ns/workloads/{}",
            job_wl("big")
        ))
        .unwrap();
    assert_eq!(admitted["status"]["admission"]["clusterQueue"], "cq");
    env
}

#[tokio::test]
async fn under_fair_sharing_cohorts_report_their_weighted_share() {
    let mut env = borrowing_job_admitted(true).await;
    // Kueue's share of `team`: borrowed 4 − 2 = 2 cpu of the 12 cpu `org` could lend
    // (its 10 plus the queue's 2), 2 · 1000 / 12 = 166.7, rounded up; a root's share is 0.
    let mut writes = env.cohort_status_writes();
    writes.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        writes,
        [
            (
                "org".to_string(),
                json!({"fairSharing": {"weightedShare": 0}})
            ),
            (
                "team".to_string(),
                json!({"fairSharing": {"weightedShare": 167}})
            ),
        ]
    );
    // Stored on the objects, so the next pass writes nothing new.
    let team = env.api.get(&format!("{KUEUE}/cohorts/team")).unwrap();
    assert_eq!(team["status"]["fairSharing"]["weightedShare"], 167);
    env.applied(
        Source::Kueue(KueueKind::Cohort),
        &format!("{KUEUE}/cohorts/team"),
    );
    env.step().await;
    assert_eq!(env.cohort_status_writes().len(), 2);
}

#[tokio::test]
async fn without_fair_sharing_cohort_status_is_not_written() {
    let env = borrowing_job_admitted(false).await;
    assert_eq!(env.cohort_status_writes(), []);
}

#[tokio::test]
async fn cohorts_on_a_cycle_get_no_status_as_in_kueue() {
    let mut objects = basics("2");
    objects[1].1["spec"]["cohortName"] = json!("a");
    for (name, parent) in [("a", Some("b")), ("b", Some("a")), ("solo", None)] {
        objects.push((
            format!("{KUEUE}/cohorts/{name}"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                   "metadata": {"name": name}, "spec": {"parentName": parent}}),
        ));
    }
    let mut env = Env::new(objects);
    env.controller.mirror.configuration = Some(wasq::api::config::Configuration {
        fair_sharing: Some(Default::default()),
        ..Default::default()
    });
    env.list_all();
    env.step().await;
    // Kueue refuses a cohort on a cycle and never updates its status; others are written.
    assert_eq!(
        env.cohort_status_writes(),
        [(
            "solo".to_string(),
            json!({"fairSharing": {"weightedShare": 0}})
        )]
    );
}

#[tokio::test]
async fn turning_fair_sharing_off_removes_the_shares_written_before() {
    // Shares left by an earlier run with fair sharing on.
    let mut objects = cohort_tree();
    let share = json!({"fairSharing": {"weightedShare": 5}});
    for (path, obj) in &mut objects {
        if path.ends_with("/cohorts/team") || path.ends_with("/clusterqueues/cq") {
            obj["status"] = share.clone();
        }
    }
    let mut env = borrowing_job_admitted_in(objects, false).await;
    // A merge patch keeps what it leaves out: the field is written as null.
    assert_eq!(
        env.cohort_status_writes(),
        [("team".to_string(), json!({"fairSharing": null}))]
    );
    for path in ["cohorts/team", "clusterqueues/cq"] {
        let stored = env.api.get(&format!("{KUEUE}/{path}")).unwrap();
        assert_eq!(stored["status"].get("fairSharing"), None, "{path}");
    }
    // Nothing left to clear: the next pass writes no Cohort or ClusterQueue status.
    let before = env.api.requests().len();
    env.step().await;
    let again: Vec<String> = env.api.requests()[before..]
        .iter()
        .filter(|r| r.uri.contains("/cohorts/") || r.uri.contains("/clusterqueues/"))
        .map(Recorded::line)
        .collect();
    assert_eq!(again, Vec::<String>::new());
}

fn group_pod(name: &str) -> (String, Value) {
    (
        format!("/api/v1/namespaces/ns/pods/{name}"),
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "ns", "creationTimestamp": T,
                            "labels": {"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/pod-group-name": "g"},
                            "annotations": {"kueue.x-k8s.io/pod-group-total-count": "2"}},
               "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
                        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}),
    )
}

#[tokio::test]
async fn a_pod_group_is_held_until_admitted_then_released_together() {
    let mut objects = basics("4");
    objects.push(group_pod("p0"));
    let mut env = Env::new(objects);
    env.list_all();
    env.step().await;
    assert!(
        env.lines().is_empty(),
        "an incomplete group waits: {:?}",
        env.lines()
    );

    let (path, pod) = group_pod("p1");
    env.api.put(&path, pod);
    env.applied(Source::Pod, &path);
    env.step().await;
    assert_eq!(
        env.lines(),
        [
            format!("POST {KUEUE}/namespaces/ns/workloads"),
            format!("PATCH {KUEUE}/namespaces/ns/workloads/g/status"),
            format!("PATCH {KUEUE}/namespaces/ns/workloads/g/status"),
            "PATCH /api/v1/namespaces/ns/pods/p0".to_string(),
            "PATCH /api/v1/namespaces/ns/pods/p1".to_string(),
        ]
    );
    let w = env.writes();
    assert_eq!(w[0].body["spec"]["podSets"][0]["count"], 2);
    assert_eq!(
        w[3].body,
        json!([
            {"op": "test", "path": "/spec/schedulingGates/0/name", "value": "kueue.x-k8s.io/admission"},
            {"op": "remove", "path": "/spec/schedulingGates/0"},
            {"op": "add", "path": "/spec/nodeSelector", "value": {"gpu": "a"}},
            {"op": "add", "path": "/spec/tolerations",
             "value": [{"key": "dedicated", "operator": "Equal", "value": "gpu-a", "effect": "NoSchedule"}]},
        ])
    );
    let p0 = env.api.get("/api/v1/namespaces/ns/pods/p0").unwrap();
    // Absent once empty, as the real server stores it.
    assert_eq!(p0["spec"]["schedulingGates"], Value::Null);
}

#[tokio::test]
async fn a_ray_job_is_admitted_as_one_gang_of_head_and_workers() {
    let mut objects = basics("4");
    objects.push((
        "/apis/ray.io/v1/namespaces/ns/rayjobs/train".into(),
        json!({"apiVersion": "ray.io/v1", "kind": "RayJob",
               "metadata": {"name": "train", "namespace": "ns", "labels": queue_label(), "creationTimestamp": T},
               "spec": {"suspend": true, "rayClusterSpec": {
                   "headGroupSpec": {"template": {"spec": {"containers": [
                       {"name": "head", "image": "ray", "resources": {"requests": {"cpu": "1"}}}]}}},
                   "workerGroupSpecs": [{"groupName": "Workers", "replicas": 3, "template": {"spec": {"containers": [
                       {"name": "w", "image": "ray", "resources": {"requests": {"cpu": "1"}}}]}}}]}}}),
    ));
    let mut env = Env::new(objects);
    env.list_all();
    env.step().await;
    assert_eq!(
        env.lines(),
        [
            format!("POST {KUEUE}/namespaces/ns/workloads"),
            format!(
                "PATCH {KUEUE}/namespaces/ns/workloads/{}/status",
                rayjob_wl("train")
            ),
            format!(
                "PATCH {KUEUE}/namespaces/ns/workloads/{}/status",
                rayjob_wl("train")
            ),
            "PATCH /apis/ray.io/v1/namespaces/ns/rayjobs/train".to_string(),
        ]
    );
    let w = env.writes();
    let sets: Vec<(String, i64)> = w[0].body["spec"]["podSets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["count"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(sets, [("head".to_string(), 1), ("workers".to_string(), 3)]);
    let assigned: Vec<&str> = w[1].body["status"]["admission"]["podSetAssignments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(assigned, ["head", "workers"]);
    let paths: Vec<&str> = w[3]
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|op| op["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "/spec/rayClusterSpec/headGroupSpec/template/spec/nodeSelector",
            "/spec/rayClusterSpec/headGroupSpec/template/spec/tolerations",
            "/spec/rayClusterSpec/workerGroupSpecs/0/template/spec/nodeSelector",
            "/spec/rayClusterSpec/workerGroupSpecs/0/template/spec/tolerations",
            "/spec/suspend",
        ]
    );
}

#[test]
fn crds_are_generated_with_kueue_names_columns_and_status() {
    let crds = wasq::k8s::schema::crds::crds();
    let names: Vec<String> = crds
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "resourceflavors.kueue.x-k8s.io",
            "cohorts.kueue.x-k8s.io",
            "clusterqueues.kueue.x-k8s.io",
            "localqueues.kueue.x-k8s.io",
            "workloadpriorityclasses.kueue.x-k8s.io",
            "workloads.kueue.x-k8s.io",
            "admissionchecks.kueue.x-k8s.io",
            "provisioningrequestconfigs.kueue.x-k8s.io",
            "topologies.kueue.x-k8s.io",
            "multikueueclusters.kueue.x-k8s.io",
            "multikueueconfigs.kueue.x-k8s.io",
            "queuepolicies.policies.wasq.dev",
        ]
    );
    let wl = serde_json::to_value(&crds[5]).unwrap();
    assert_eq!(
        wl["spec"]["names"]["shortNames"],
        json!(["kwl", "kueueworkload", "kueueworkloads"])
    );
    let v = &wl["spec"]["versions"][0];
    assert_eq!(
        (v["name"].as_str(), v["storage"].as_bool()),
        (Some("v1beta2"), Some(true))
    );
    assert_eq!(v["subresources"], json!({"status": {}}));
    let schema = &v["schema"]["openAPIV3Schema"];
    assert_eq!(
        schema["properties"]["status"]["properties"]["conditions"]["x-kubernetes-list-type"],
        "map"
    );
    let quota = &serde_json::to_value(&crds[2]).unwrap()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        ["properties"]["spec"]["properties"]["resourceGroups"]["items"]["properties"]["flavors"]["items"]
        ["properties"]["resources"]["items"]["properties"]["nominalQuota"];
    assert_eq!(quota["x-kubernetes-int-or-string"], true);
    assert_eq!(wl["spec"]["versions"][1]["name"], "v1beta1");
    let cohort = &serde_json::to_value(&crds[1]).unwrap()["spec"]["versions"][0];
    assert_eq!(cohort["subresources"], json!({"status": {}}));
    assert_eq!(
        cohort["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["fairSharing"]["properties"]
            ["weightedShare"]["type"],
        "integer"
    );
    // MultiKueue's kinds: a status subresource and Kueue's `Connected` column for clusters,
    // none for configs (tests/all/multikueue.rs checks their schemas and CEL rules).
    let mkc = serde_json::to_value(&crds[9]).unwrap();
    assert_eq!(mkc["spec"]["names"]["shortNames"], json!(["mkc"]));
    let v = &mkc["spec"]["versions"][0];
    assert_eq!(v["subresources"], json!({"status": {}}));
    assert_eq!(v["additionalPrinterColumns"][0]["name"], "Connected");
    let mkconf = serde_json::to_value(&crds[10]).unwrap();
    assert_eq!(mkconf["spec"]["names"]["shortNames"], json!(["mkconf"]));
    assert!(mkconf["spec"]["versions"][0].get("subresources").is_none());
}

#[test]
fn the_example_integration_is_configuration_only() {
    let text = std::fs::read_to_string("examples/deploy/integrations.yaml").unwrap();
    let kinds = jobs::parse(&text).unwrap();
    let job = json!({"spec": {"mxReplicaSpecs": {
        "Scheduler": {"replicas": 1, "template": {"spec": {"containers": []}}},
        "Worker": {"replicas": 4, "template": {"spec": {"containers": []}}}}}});
    let sets: Vec<(String, i32)> = kinds[0]
        .pod_sets(&job)
        .unwrap()
        .into_iter()
        .map(|p| (p.name, p.count))
        .collect();
    assert_eq!(
        sets,
        [("scheduler".to_string(), 1), ("worker".to_string(), 4)]
    );
}

/// Against a real cluster (kind, k3s, a cloud cluster) with wasq's CRDs applied
/// (`wasq crds | kubectl apply --server-side -f -`) and no other queueing controller: lists
/// every source through the cluster's API and checks that the controller becomes ready.
#[tokio::test]
#[ignore = "needs cluster"]
async fn the_controller_syncs_with_a_real_cluster() {
    let client = kube::Client::try_default().await.expect("a kubeconfig");
    let controller = Controller::new(
        Writer::new(client.clone(), Some("wasq-test".into())),
        Vec::new(),
        false,
        Arc::new(Metrics::new("standalone")),
        Arc::new(|| jiff::Timestamp::now().as_millisecond()),
        Arc::new(|_| {}),
    );
    let mut controller = controller;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for source in controller.sources() {
        let resource = match source {
            Source::Kueue(k) => k.api_resource(),
            _ => kube::core::ApiResource::erase::<k8s_openapi::api::core::v1::Namespace>(&()),
        };
        wasq::k8s::sync::watchers::spawn(client.clone(), source, resource, tx.clone());
    }
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    while !controller.shared.read().unwrap().ready {
        let ev = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .expect("every source listed within a minute")
            .expect("watchers running");
        controller.observe(ev);
        controller.step().await;
    }
}

/// `basics` with the LocalQueue labelled `team: vision` and the controller copying `team`.
fn attributed_env(mut objects: Vec<(String, Value)>) -> Env {
    let lq = format!("{KUEUE}/namespaces/ns/localqueues/lq");
    for (path, obj) in &mut objects {
        if *path == lq {
            obj["metadata"]["labels"] = json!({"team": "vision"});
        }
    }
    let mut env = Env::new(objects);
    env.controller
        .set_attribution_labels(vec!["team".into(), "cost-center".into()]);
    env
}

#[tokio::test]
async fn a_lone_gated_pod_is_its_own_workload_and_carries_its_teams_label_when_released() {
    let mut objects = basics("4");
    // A Deployment's replica as wasq's webhook leaves it: queue label, gate, no group.
    objects.push((
        "/api/v1/namespaces/ns/pods/web-7d9f-x2".into(),
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "web-7d9f-x2", "namespace": "ns", "creationTimestamp": T,
                            "labels": {"kueue.x-k8s.io/queue-name": "lq", "app": "web"},
                            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                 "name": "web-7d9f", "uid": "rs", "controller": true}]},
               "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
                        "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}]}}),
    ));
    let mut env = attributed_env(objects);
    env.list_all();
    env.step().await;
    let name = jobs::names::workload_name("pod", "Pod", "", "web-7d9f-x2", "uid-web-7d9f-x2");
    assert!(name.starts_with("pod-web-7d9f-x2-"));
    assert_eq!(
        env.lines(),
        [
            format!("POST {KUEUE}/namespaces/ns/workloads"),
            format!("PATCH {KUEUE}/namespaces/ns/workloads/{name}/status"),
            format!("PATCH {KUEUE}/namespaces/ns/workloads/{name}/status"),
            "PATCH /api/v1/namespaces/ns/pods/web-7d9f-x2".to_string(),
        ]
    );
    let w = env.writes();
    assert_eq!(w[0].body["metadata"]["name"], name);
    assert_eq!(w[0].body["metadata"]["labels"]["team"], "vision");
    assert_eq!(w[0].body["spec"]["podSets"][0]["count"], 1);
    let ungate = w[3].body.as_array().unwrap();
    assert_eq!(
        ungate[1],
        json!({"op": "remove", "path": "/spec/schedulingGates/0"})
    );
    assert_eq!(
        ungate.last().unwrap(),
        &json!({"op": "add", "path": "/metadata/labels",
                "value": {"app": "web", "kueue.x-k8s.io/queue-name": "lq", "team": "vision"}})
    );

    // Released, the pod is still the Workload's: when it succeeds, the Workload finishes and
    // the quota is given back.
    let path = "/api/v1/namespaces/ns/pods/web-7d9f-x2";
    let mut pod = env.api.get(path).unwrap();
    assert_eq!(pod["spec"]["schedulingGates"], Value::Null);
    pod["status"] = json!({"phase": "Succeeded"});
    env.api.put(path, pod);
    env.applied(Source::Pod, path);
    let before = env.writes().len();
    env.step().await;
    assert_eq!(
        env.lines()[before..],
        [format!(
            "PATCH {KUEUE}/namespaces/ns/workloads/{name}/status"
        )]
    );
    let finished = &env.writes()[before].body["status"]["conditions"];
    assert!(
        finished
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "Finished" && c["status"] == "True"),
        "{finished}"
    );
    let s = env.controller.scheduler().unwrap();
    assert!(
        s.cluster
            .admitted_rows(s.cluster.cq_by_name["cq"])
            .is_empty()
    );
}

#[tokio::test]
async fn a_partially_admitted_job_runs_its_admitted_count_and_gets_it_back_when_stopped() {
    // 4 pods of 1 cpu, at least 2, in a queue of 2 cpu: admitted with 2 pods.
    let mut objects = basics("2");
    let (path, mut obj) = job("wide", "1", 4, queue_label(), true);
    obj["metadata"]["annotations"] = json!({"kueue.x-k8s.io/job-min-parallelism": "2"});
    objects.push((path.clone(), obj));
    let mut env = Env::new(objects);
    env.list_all();
    env.step().await;
    let w = env.writes();
    assert_eq!(
        w[1].body["status"]["admission"]["podSetAssignments"][0]["count"],
        2
    );
    let start = w
        .iter()
        .find(|r| r.line() == format!("PATCH {path}"))
        .unwrap();
    let ops = start.body.as_array().unwrap();
    assert!(
        ops.contains(&json!({"op": "add", "path": "/spec/parallelism", "value": 2})),
        "{ops:?}"
    );
    assert_eq!(env.api.get(&path).unwrap()["spec"]["parallelism"], 2);
}

#[tokio::test]
async fn a_child_of_a_managed_job_gets_no_workload_of_its_own() {
    // KubeRay copies a RayJob's labels onto the RayCluster it creates.
    let mut objects = basics("4");
    objects.push((
        "/apis/ray.io/v1/namespaces/ns/rayclusters/train-raycluster".into(),
        json!({"apiVersion": "ray.io/v1", "kind": "RayCluster",
               "metadata": {"name": "train-raycluster", "namespace": "ns", "labels": queue_label(),
                            "creationTimestamp": T,
                            "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "train",
                                                 "uid": "uid-train", "controller": true}]},
               "spec": {"suspend": false, "headGroupSpec": {"template": {"spec": {"containers": [
                   {"name": "head", "image": "ray", "resources": {"requests": {"cpu": "1"}}}]}}}}}),
    ));
    let mut env = Env::new(objects);
    env.list_all();
    env.step().await;
    assert!(env.lines().is_empty(), "{:?}", env.lines());
}

#[tokio::test]
async fn an_admitted_job_starts_with_its_teams_label_in_the_pod_template() {
    let mut objects = basics("4");
    objects.push(job("pi", "1", 2, queue_label(), true));
    let mut env = attributed_env(objects);
    env.list_all();
    env.step().await;
    let w = env.writes();
    let created = &w[0].body;
    assert_eq!(created["metadata"]["labels"]["team"], "vision");
    assert!(created["metadata"]["labels"].get("cost-center").is_none());
    let start = w
        .iter()
        .find(|r| r.line() == "PATCH /apis/batch/v1/namespaces/ns/jobs/pi")
        .expect("the job is started");
    let ops = start.body.as_array().unwrap();
    assert!(
        ops.contains(&json!({"op": "add", "path": "/spec/template/metadata", "value": {}})),
        "{ops:?}"
    );
    assert!(ops.contains(
        &json!({"op": "add", "path": "/spec/template/metadata/labels", "value": {"team": "vision"}})
    ));
    assert_eq!(
        ops.last().unwrap(),
        &json!({"op": "add", "path": "/spec/suspend", "value": false})
    );
}

/// `wasq snapshot` of a cluster whose controller admitted one job and left another pending: the
/// simulator, started from the files, holds the same admission (quota and all) and keeps the
/// other pending, as the cluster does.
#[tokio::test]
async fn a_snapshot_starts_the_simulator_with_the_clusters_admissions() {
    let mut objects = cohort_tree();
    // 10 cpu, more than the tree's 12 leave once `big` holds 4.
    objects.push(job("late", "5", 2, queue_label(), true));
    objects.push((
        "/api/v1/nodes/n1".into(),
        json!({"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": "n1", "labels": {"gpu": "a"}},
               "status": {"allocatable": {"cpu": "8", "pods": "110"},
                          "conditions": [{"type": "Ready", "status": "True"}]}}),
    ));
    let env = borrowing_job_admitted_in(objects, false).await;
    let late = format!("{KUEUE}/namespaces/ns/workloads/{}", job_wl("late"));
    assert!(env.api.get(&late).unwrap()["status"]["admission"].is_null());

    let snapshot = wasq::k8s::migrate::snapshot::take(&env.api.client())
        .await
        .expect("listed");
    let dir = tempfile::tempdir().expect("tempdir");
    let written = snapshot.write(dir.path()).expect("written");
    assert!(
        written.iter().any(|p| p.ends_with("nodes.yaml")),
        "{written:?}"
    );
    let text = std::fs::read_to_string(dir.path().join("workloads.yaml")).unwrap();
    assert!(!text.contains("resourceVersion") && !text.contains("managedFields"));

    let scenario = wasq::sim::Scenario::load(&[dir.path().to_path_buf()]).expect("loads");
    let mut sim = wasq::sim::Simulation::new(scenario);
    let admitted = |sim: &wasq::sim::Simulation| -> Vec<String> {
        let cluster = sim.cluster();
        cluster
            .workloads
            .iter()
            .filter(|w| cluster.admission(w.id).is_some())
            .map(|w| w.key.to_string())
            .collect()
    };
    let big = format!("ns/{}", job_wl("big"));
    assert_eq!(admitted(&sim), std::slice::from_ref(&big));
    sim.run(
        &wasq::sim::Limits {
            max_cycles: Some(3),
            ..Default::default()
        },
        None,
    );
    assert_eq!(admitted(&sim), [big], "the pending one still does not fit");
    let report = sim.report();
    let pending = report
        .workloads
        .iter()
        .find(|w| w.name == job_wl("late"))
        .expect("the pending Workload is in the scenario");
    assert_ne!(pending.state, "admitted");
}

/// `wasq controller --record-trace`: a Workload that finishes and one deleted while admitted are
/// written once each, with their arrival, queue, admitted podSets and run time; the file,
/// replayed by the simulator on the cluster's own objects, admits the same Workload on the same
/// flavor at the same instant and ends it after the same run time.
#[tokio::test]
async fn a_recorded_trace_replays_to_the_same_admissions() {
    use wasq::k8s::sync::trace_recorder::TraceRecorder;
    let mut objects = cohort_tree();
    objects.push(job("big", "2", 2, queue_label(), true));
    objects.push(job("gone", "1", 1, queue_label(), true));
    let mut env = Env::new(objects);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("trace.jsonl");
    // Recording started 30 s before the jobs were created.
    env.controller
        .set_trace_recorder(TraceRecorder::open(&file, 1 << 20, NOW - 30_000).expect("opened"));
    env.list_all();
    env.step().await;
    let path = |name: &str| format!("{KUEUE}/namespaces/ns/workloads/{}", job_wl(name));
    for name in ["big", "gone"] {
        assert!(!env.api.get(&path(name)).unwrap()["status"]["admission"].is_null());
    }
    // big runs 90 s; gone's job is deleted (its Workload with it) while admitted.
    env.api.modify(&path("big"), |wl| {
        let mut conditions = conditions_with_finished(wl, "done");
        conditions.as_array_mut().unwrap().last_mut().unwrap()["lastTransitionTime"] =
            json!("2026-01-01T00:01:30Z");
        wl["status"]["conditions"] = conditions;
    });
    env.applied(Source::Kueue(KueueKind::Workload), &path("big"));
    // A second event of the same finished Workload writes nothing more.
    env.applied(Source::Kueue(KueueKind::Workload), &path("big"));
    let gone = env.api.delete(&path("gone")).expect("deleted");
    env.controller.observe(Observed::Deleted(
        Source::Kueue(KueueKind::Workload),
        serde_json::from_value(gone).unwrap(),
    ));
    env.step().await;

    let rows: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2, "{rows:#?}");
    assert_eq!(
        rows[0],
        json!({"arrival": 30.0, "namespace": "ns", "name": job_wl("big"), "queue": "lq",
               "priority": 0, "duration": 90.0,
               "podSets": [{"name": "main", "count": 2, "requests": {"cpu": "2"}}]})
    );
    assert_eq!(rows[1]["name"], job_wl("gone"));
    assert_eq!(
        rows[1]["duration"], 0.0,
        "deleted at once (the test's clock stands still)"
    );

    // Replayed on the cluster's own objects, big alone (gone ran for no time).
    let mut snapshot = wasq::k8s::migrate::snapshot::take(&env.api.client())
        .await
        .expect("listed");
    snapshot.files.remove("workloads.yaml");
    snapshot.write(dir.path()).expect("written");
    std::fs::write(
        dir.path().join("trace.yaml"),
        "apiVersion: sim.wasq.dev/v1alpha1\nkind: Trace\nmetadata: {name: recorded}\n\
         spec: {path: trace.jsonl}\n",
    )
    .unwrap();
    let scenario = wasq::sim::Scenario::load(&[dir.path().to_path_buf()]).expect("loads");
    let mut sim = wasq::sim::Simulation::new(scenario);
    sim.run(&wasq::sim::Limits::default(), None);
    let report = sim.report();
    let big = report
        .workloads
        .iter()
        .find(|w| w.name == job_wl("big"))
        .expect("replayed");
    assert_eq!(big.cluster_queue.as_deref(), Some("cq"));
    assert_eq!(big.state, "finished");
    assert_eq!(big.arrival_seconds, Some(30.0));
    assert_eq!(big.first_admitted_seconds, Some(30.0));
    assert_eq!(big.finished_seconds, Some(120.0));
    let admission = serde_json::to_string(&big.admission).unwrap();
    assert!(admission.contains("gpu-a"), "{admission}");
}
