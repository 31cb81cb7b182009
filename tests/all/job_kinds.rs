//! Every built-in job kind in the simulator, through the one job mechanism the controller
//! uses: exact podSets, counts and Workload names; gangs admitted whole or not at all; bad
//! jobs refused with the object and field named and nothing loaded; the seed examples run as
//! their comments say; cost attribution per workload and per label value.

use std::path::{Path, PathBuf};

use wasq::api::Manifests;
use wasq::api::jobs::builtin_kind;
use wasq::api::load::load_str;
use wasq::sim::{Limits, Scenario, Simulation};

const BASE: &str = "apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: default, resources: [{name: cpu, nominalQuota: 4}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: ns, name: lq}
spec: {clusterQueue: cq}
";

/// A pod template requesting `cpu`, as JSON-in-YAML.
fn template(cpu: &str) -> String {
    format!(
        "{{spec: {{containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: \"{cpu}\"}}}}}}]}}}}"
    )
}

fn load(jobs: &str) -> Manifests {
    let text = format!("{BASE}---\n{jobs}");
    load_str(Path::new("kinds.yaml"), &text).unwrap_or_else(|e| panic!("loads:\n{e}"))
}

fn errors(jobs: &str) -> Vec<String> {
    let text = format!("{BASE}---\n{jobs}");
    match load_str(Path::new("kinds.yaml"), &text) {
        Ok(m) => panic!("should not load, made {} workloads", m.workloads.len()),
        Err(e) => e.messages(),
    }
}

/// `(workload name, [(podSet, count)])` of every workload.
fn shapes(m: &Manifests) -> Vec<(String, Vec<(String, i32)>)> {
    m.workloads
        .iter()
        .map(|w| {
            (
                w.metadata.name.clone().unwrap_or_default(),
                w.spec
                    .pod_sets
                    .iter()
                    .map(|p| (p.name.clone(), p.count))
                    .collect(),
            )
        })
        .collect()
}

fn sets(v: &[(&str, i32)]) -> Vec<(String, i32)> {
    v.iter().map(|(n, c)| (n.to_string(), *c)).collect()
}

/// The Workload name of a job with no UID (as written in a scenario file).
fn wl_name(api_version: &str, kind: &str, name: &str, group: Option<i32>) -> String {
    builtin_kind(api_version, kind)
        .unwrap()
        .workload_name(name, "", group)
}

#[test]
fn each_kind_becomes_the_workloads_kueue_would_make() {
    let t = template("100m");
    let jobs = format!(
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {{namespace: ns, name: tf, labels: {{kueue.x-k8s.io/queue-name: lq}}}}
spec:
  tfReplicaSpecs:
    Worker: {{replicas: 3, template: {t}}}
    Chief: {{template: {t}}}
    PS: {{replicas: 2, template: {t}}}
---
apiVersion: kubeflow.org/v1
kind: XGBoostJob
metadata: {{namespace: ns, name: xgb, labels: {{kueue.x-k8s.io/queue-name: lq}}}}
spec:
  xgbReplicaSpecs:
    Master: {{replicas: 1, template: {t}}}
    Worker: {{replicas: 2, template: {t}}}
---
apiVersion: kubeflow.org/v1
kind: PaddleJob
metadata: {{namespace: ns, name: paddle, labels: {{kueue.x-k8s.io/queue-name: lq}}}}
spec:
  paddleReplicaSpecs:
    Worker: {{replicas: 4, template: {t}}}
---
apiVersion: kubeflow.org/v1
kind: JAXJob
metadata: {{namespace: ns, name: jax, labels: {{kueue.x-k8s.io/queue-name: lq}}}}
spec:
  jaxReplicaSpecs:
    Worker: {{replicas: 2, template: {t}}}
---
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {{namespace: ns, name: mpi, labels: {{kueue.x-k8s.io/queue-name: lq}}}}
spec:
  mpiReplicaSpecs:
    Launcher: {{replicas: 1, template: {t}}}
    Worker: {{replicas: 8, template: {t}}}
---
apiVersion: ray.io/v1
kind: RayCluster
metadata: {{namespace: ns, name: rc, labels: {{kueue.x-k8s.io/queue-name: lq}}}}
spec:
  headGroupSpec: {{template: {t}}}
  workerGroupSpecs:
  - {{groupName: Small, replicas: 2, template: {t}}}
  - {{groupName: multi-host, replicas: 2, numOfHosts: 4, template: {t}}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {{namespace: ns, name: db, labels: {{kueue.x-k8s.io/queue-name: lq}}}}
spec:
  replicas: 3
  selector: {{matchLabels: {{app: db}}}}
  serviceName: db
  template: {t}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{namespace: ns, name: web, labels: {{kueue.x-k8s.io/queue-name: lq}}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template: {t}
---
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {{namespace: ns, name: llm, labels: {{kueue.x-k8s.io/queue-name: lq}}}}
spec:
  replicas: 2
  leaderWorkerTemplate: {{size: 1, workerTemplate: {t}}}
"
    );
    let m = load(&jobs);
    assert_eq!(
        shapes(&m),
        [
            (
                wl_name("kubeflow.org/v1", "TFJob", "tf", None),
                sets(&[("chief", 1), ("ps", 2), ("worker", 3)])
            ),
            (
                wl_name("kubeflow.org/v1", "XGBoostJob", "xgb", None),
                sets(&[("master", 1), ("worker", 2)])
            ),
            (
                wl_name("kubeflow.org/v1", "PaddleJob", "paddle", None),
                sets(&[("worker", 4)])
            ),
            (
                wl_name("kubeflow.org/v1", "JAXJob", "jax", None),
                sets(&[("worker", 2)])
            ),
            (
                wl_name("kubeflow.org/v2beta1", "MPIJob", "mpi", None),
                sets(&[("launcher", 1), ("worker", 8)])
            ),
            (
                wl_name("ray.io/v1", "RayCluster", "rc", None),
                sets(&[("head", 1), ("small", 2), ("multi-host", 8)])
            ),
            (
                wl_name("apps/v1", "StatefulSet", "db", None),
                sets(&[("main", 3)])
            ),
            (
                wl_name("apps/v1", "Deployment", "web", Some(0)),
                sets(&[("main", 1)])
            ),
            (
                wl_name("apps/v1", "Deployment", "web", Some(1)),
                sets(&[("main", 1)])
            ),
            (
                wl_name(
                    "leaderworkerset.x-k8s.io/v1",
                    "LeaderWorkerSet",
                    "llm",
                    Some(0)
                ),
                sets(&[("main", 1)])
            ),
            (
                wl_name(
                    "leaderworkerset.x-k8s.io/v1",
                    "LeaderWorkerSet",
                    "llm",
                    Some(1)
                ),
                sets(&[("main", 1)])
            ),
        ]
    );
    // Kueue's names: the kind in lower case, the job's name, the first 5 hex digits of SHA-1
    // over kind, group, name and UID (here none), each computed independently with sha1sum.
    let names: Vec<&str> = m
        .workloads
        .iter()
        .map(|w| w.metadata.name.as_deref().unwrap())
        .collect();
    assert_eq!(
        [names[0], names[4], names[5], names[6], names[8], names[9]],
        [
            "tfjob-tf-a547e",
            "mpijob-mpi-e7b1d",
            "raycluster-rc-abc07",
            "statefulset-db-ae577",
            "deployment-web-1-dd793",
            "leaderworkerset-llm-0-92414"
        ]
    );
    // Every Workload is owned by its job.
    let owner = &m.workloads[4].metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (
            owner.api_version.as_str(),
            owner.kind.as_str(),
            owner.name.as_str()
        ),
        ("kubeflow.org/v2beta1", "MPIJob", "mpi")
    );
}

/// Runs `jobs` on [`BASE`] (4 cpu) for 10 minutes and returns each workload's final state.
fn run(jobs: &str) -> Vec<(String, &'static str)> {
    let mut sim = Simulation::new(Scenario::from_manifests(load(jobs)).expect("scenario"));
    sim.run(
        &Limits {
            until: Some(600_000),
            ..Limits::default()
        },
        None,
    );
    sim.report()
        .workloads
        .into_iter()
        .map(|w| (w.name, w.state))
        .collect()
}

#[test]
fn a_job_that_does_not_fit_whole_is_not_admitted_at_all() {
    // A PyTorchJob of 1 + 4 pods × 1 cpu needs 5 of 4 cpu: none of its pods runs, and the
    // smaller MPIJob behind it is admitted (BestEffortFIFO).
    let one = template("1");
    let jobs = format!(
        "apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{namespace: ns, name: big, creationTimestamp: \"2026-01-01T00:00:00Z\", labels: {{kueue.x-k8s.io/queue-name: lq}}}}
spec:
  pytorchReplicaSpecs:
    Master: {{replicas: 1, template: {one}}}
    Worker: {{replicas: 4, template: {one}}}
---
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {{namespace: ns, name: small, creationTimestamp: \"2026-01-01T00:00:01Z\", labels: {{kueue.x-k8s.io/queue-name: lq}}}}
spec:
  mpiReplicaSpecs:
    Launcher: {{replicas: 1, template: {one}}}
    Worker: {{replicas: 2, template: {one}}}
"
    );
    let big = wl_name("kubeflow.org/v1", "PyTorchJob", "big", None);
    let small = wl_name("kubeflow.org/v2beta1", "MPIJob", "small", None);
    assert_eq!(run(&jobs), [(small, "admitted"), (big, "inadmissible")]);
}

#[test]
fn leader_worker_set_groups_are_admitted_one_by_one_each_whole() {
    // Two groups of a leader (1 cpu) and 2 workers (1 cpu each): 3 cpu per group, 4 cpu in
    // the queue: one group runs, the other waits whole.
    let one = template("1");
    let jobs = format!(
        "apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {{namespace: ns, name: llm, labels: {{kueue.x-k8s.io/queue-name: lq}}}}
spec:
  replicas: 2
  leaderWorkerTemplate: {{size: 3, leaderTemplate: {one}, workerTemplate: {one}}}
"
    );
    let lws = "leaderworkerset.x-k8s.io/v1";
    let g0 = wl_name(lws, "LeaderWorkerSet", "llm", Some(0));
    let g1 = wl_name(lws, "LeaderWorkerSet", "llm", Some(1));
    let shape = sets(&[("leader", 1), ("worker", 2)]);
    assert_eq!(
        shapes(&load(&jobs)),
        [(g0.clone(), shape.clone()), (g1.clone(), shape)]
    );
    assert_eq!(run(&jobs), [(g0, "admitted"), (g1, "inadmissible")]);
}

#[test]
fn bad_jobs_name_the_object_and_field_and_nothing_is_loaded() {
    let good = template("1");
    let jobs = format!(
        "apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{namespace: ns, name: typo, labels: {{kueue.x-k8s.io/queue-name: lq}}}}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template: {{spec: {{containers: [{{name: c, resources: {{request: {{cpu: 1}}}}}}]}}}}
---
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {{namespace: ns, name: nosize, labels: {{kueue.x-k8s.io/queue-name: lq}}}}
spec:
  leaderWorkerTemplate: {{workerTemplate: {good}}}
---
apiVersion: ray.io/v1
kind: RayJob
metadata: {{namespace: ns, name: headless, labels: {{kueue.x-k8s.io/queue-name: lq}}}}
spec:
  rayClusterSpec:
    workerGroupSpecs: [{{groupName: w, replicas: -1, template: {good}}}]
---
apiVersion: batch/v1
kind: Job
metadata: {{namespace: ns, name: fine, labels: {{kueue.x-k8s.io/queue-name: lq}}}}
spec: {{template: {good}}}
"
    );
    assert_eq!(
        errors(&jobs),
        [
            r#"kinds.yaml doc 4: PyTorchJob ns/typo: spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].resources.request: unknown field "request", did you mean "requests"?"#,
            "kinds.yaml doc 5: LeaderWorkerSet ns/nosize: spec.leaderWorkerTemplate.size: required: the number of pods",
            "kinds.yaml doc 6: RayJob ns/headless: spec.rayClusterSpec.headGroupSpec.template: required: the pod template",
            "kinds.yaml doc 6: RayJob ns/headless: spec.rayClusterSpec.workerGroupSpecs[0].replicas: must be greater than or equal to 0",
        ]
    );
}

#[test]
fn a_pod_group_whose_pods_disagree_on_the_total_is_refused_whole() {
    let pod = |name: &str, total: &str| {
        format!(
            "apiVersion: v1
kind: Pod
metadata:
  namespace: ns
  name: {name}
  labels: {{kueue.x-k8s.io/queue-name: lq, kueue.x-k8s.io/pod-group-name: g}}
  annotations: {{kueue.x-k8s.io/pod-group-total-count: \"{total}\"}}
spec: {{containers: [{{name: c, resources: {{requests: {{cpu: 1}}}}}}]}}
"
        )
    };
    let errs = errors(&format!("{}---\n{}", pod("a", "2"), pod("b", "3")));
    assert_eq!(
        errs,
        [
            r#"kinds.yaml doc 5: Pod ns/b: metadata.annotations.kueue.x-k8s.io/pod-group-total-count: 3 differs from 2 on Pod ns/a (kinds.yaml doc 4); every pod of a group must give the same total"#
        ]
    );
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

fn run_example(name: &str, cost_labels: &[String]) -> wasq::sim::report::Report {
    let scenario = Scenario::load_with(&[example(name)], cost_labels).expect("example loads");
    let mut sim = Simulation::new(scenario);
    sim.run(&Limits::default(), None);
    sim.report()
}

/// `(time, type, workload)` of every event but reservations (each workload here has no
/// admission check, so it is admitted at the instant it reserves quota).
fn timeline(r: &wasq::sim::report::Report) -> Vec<(f64, String, String)> {
    r.events
        .iter()
        .filter(|e| e.kind != wasq::sim::EventType::QuotaReserved)
        .map(|e| {
            let kind = serde_json::to_value(e.kind).unwrap();
            (
                e.time,
                kind.as_str().unwrap().to_string(),
                e.workload.clone(),
            )
        })
        .collect()
}

fn ev(t: f64, kind: &str, wl: &str) -> (f64, String, String) {
    (t, kind.to_string(), wl.to_string())
}

#[test]
fn the_anyscale_pod_group_example_is_one_gang_per_group() {
    let r = run_example("anyscale-pod-group.yaml", &[]);
    let g = "anyscale/ray-head-and-workers";
    let big = "anyscale/big-train";
    assert_eq!(
        timeline(&r),
        [
            ev(0.0, "Admitted", g),
            ev(30.0, "Inadmissible", big),
            ev(600.0, "Finished", g),
            ev(600.0, "Admitted", big),
            ev(1800.0, "Finished", big),
        ]
    );
}

#[test]
fn the_kuberay_example_is_one_workload_of_head_and_workers() {
    // Its timeline, with the admission check, is in admission_checks.rs.
    let m = wasq::api::load::load_paths(&[example("kuberay-rayjob-gpu.yaml")]).unwrap();
    let first = wl_name("ray.io/v1", "RayJob", "pytorch-text-classifier", None);
    assert_eq!(
        shapes(&m)[0],
        (first, sets(&[("head", 1), ("worker-group", 2)]))
    );
}

#[test]
fn every_kind_shares_one_queue_and_costs_are_attributed_per_team() {
    let r = run_example("every-kind-one-queue.yaml", &["team".to_string()]);
    let admitted: Vec<(f64, String)> = r
        .events
        .iter()
        .filter(|e| serde_json::to_value(e.kind).unwrap() == "Admitted")
        .map(|e| (e.time, e.workload.split('/').nth(1).unwrap().to_string()))
        .collect();
    let n = |api: &str, kind: &str, name: &str, g: Option<i32>| wl_name(api, kind, name, g);
    assert_eq!(
        admitted,
        [
            (0.0, n("batch/v1", "Job", "prep", None)),
            (0.0, n("ray.io/v1", "RayJob", "tune", None)),
            (0.0, n("kubeflow.org/v1", "PyTorchJob", "bert", None)),
            (0.0, n("jobset.x-k8s.io/v1alpha2", "JobSet", "eval", None)),
            (
                0.0,
                n(
                    "leaderworkerset.x-k8s.io/v1",
                    "LeaderWorkerSet",
                    "serve",
                    Some(0)
                )
            ),
            (
                300.0,
                n(
                    "leaderworkerset.x-k8s.io/v1",
                    "LeaderWorkerSet",
                    "serve",
                    Some(1)
                )
            ),
            (1200.0, n("ray.io/v1", "RayCluster", "notebook", None)),
        ]
    );
    // Labels per workload, from its LocalQueue.
    let bert = r
        .workloads
        .iter()
        .find(|w| w.name.starts_with("pytorchjob-bert-"))
        .unwrap();
    assert_eq!(bert.labels.get("team").map(String::as_str), Some("vision"));
    // Resource-seconds per team, worked out by hand in the example's comment.
    let teams = &r.summary.cost_attribution["team"];
    let cpu = |team: &str| teams[team].resource_seconds["default-flavor/cpu"];
    assert_eq!((cpu("nlp"), cpu("vision")), (21_000.0, 22_500.0));
    assert_eq!((teams["nlp"].workloads, teams["vision"].workloads), (3, 4));
    // Without the flag, nothing is attributed.
    let plain = run_example("every-kind-one-queue.yaml", &[]);
    assert!(plain.summary.cost_attribution.is_empty());
    assert!(plain.workloads.iter().all(|w| w.labels.is_empty()));
}
