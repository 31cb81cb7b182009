//! The admission webhooks over real HTTPS: a rustls client trusting the generated CA posts
//! AdmissionReviews as the API server sends them. [`certificates`]: certificate management against the
//! API server double; [`controller`]: the controller fed by objects that went through the
//! webhooks.

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use base64::Engine;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use kube::core::DynamicObject;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use wasq::api::jobs::{self, JobKind};
use wasq::k8s::client::writer::Writer;
use wasq::k8s::jobs::integration::api_resource;
use wasq::k8s::schema::kinds::KueueKind;
use wasq::k8s::serve::metrics::Metrics;
use wasq::k8s::serve::webhook::certs::{self, Certs, LOOKAHEAD_SECS, VALIDITY_SECS};
use wasq::k8s::serve::webhook::provision::{self, CertSource, SecretSettings};
use wasq::k8s::serve::webhook::review::decoded_patch;
use wasq::k8s::serve::webhook::server::{CertResolver, bind, serve, tls_config};
use wasq::k8s::serve::webhook::view::{GroupPod, View};
use wasq::k8s::serve::webhook::{self, Webhooks};
use wasq::k8s::sync::mirror::{Observed, Source};
use wasq::k8s::{controller::Controller, serve::Shared};

use super::k8s::double;
use wasq::k8s::apiserver::ApiServer;

mod certificates;
mod controller;

const NS: &str = "wasq-system";
const SERVICE: &str = "wasq-webhook-service";
const KUEUE: &str = "/apis/kueue.x-k8s.io/v1beta2";
const NOW: i64 = 1_767_225_600; // 2026-01-01T00:00:00Z
const T: &str = "2026-01-01T00:00:00Z";

fn now_secs() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// A webhook server on 127.0.0.1:0 with a freshly generated certificate.
struct Server {
    addr: SocketAddr,
    ca_pem: String,
}

async fn start(webhooks: Webhooks) -> Server {
    let names = certs::dns_names(SERVICE, NS);
    let now = now_secs();
    let certs = certs::generate(&names, now - 60, now + VALIDITY_SECS).unwrap();
    start_with(webhooks, &certs).await
}

async fn start_with(webhooks: Webhooks, certs: &Certs) -> Server {
    let resolver = CertResolver::new(certs.certified_key().unwrap());
    let tls = tls_config(resolver).unwrap();
    let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, tls, Arc::new(webhooks)));
    Server {
        addr,
        ca_pem: certs.ca_pem.clone(),
    }
}

fn webhooks_with(view: View) -> Webhooks {
    let shared = Arc::new(RwLock::new(Shared::default()));
    shared.write().unwrap().webhook = Arc::new(view);
    Webhooks::new(jobs::builtin(), true, shared)
}

impl Server {
    /// POSTs `body` to `path` over TLS, trusting only the server's CA and checking the
    /// Service's DNS name, as the API server does. Returns the HTTP status and body.
    async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(self.ca_pem.as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        let name = ServerName::try_from(format!("{SERVICE}.{NS}.svc")).unwrap();
        let tls = connector.connect(name, tcp).await.expect("TLS handshake");
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .unwrap();
        tokio::spawn(conn);
        let req = http::Request::post(path)
            .header("host", format!("{SERVICE}.{NS}.svc"))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap();
        let resp = sender.send_request(req).await.unwrap();
        let status = resp.status().as_u16();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        (status, value)
    }

    /// Posts a review and returns its `response`, checking the envelope and the echoed uid.
    async fn review(&self, path: &str, request: Value) -> Value {
        let uid = request["uid"].clone();
        let body = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request});
        let (status, out) = self.post(path, &body).await;
        assert_eq!(status, 200, "{out}");
        assert_eq!(out["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(out["kind"], "AdmissionReview");
        assert_eq!(out["response"]["uid"], uid);
        out["response"].clone()
    }

    /// Reviews the CREATE of `object` (of `gvk`, in `resource`) at `path`.
    async fn create(
        &self,
        path: &str,
        gvk: (&str, &str, &str),
        resource: &str,
        object: &Value,
    ) -> Value {
        self.review(path, request("CREATE", gvk, resource, object, None))
            .await
    }
}

/// An AdmissionReview request as the kube-apiserver builds it.
fn request(
    operation: &str,
    gvk: (&str, &str, &str),
    resource: &str,
    object: &Value,
    old: Option<&Value>,
) -> Value {
    let (group, version, kind) = gvk;
    json!({
        "uid": format!("uid-{}-{}", operation.to_lowercase(), object["metadata"]["name"].as_str().unwrap_or("x")),
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": resource},
        "requestKind": {"group": group, "version": version, "kind": kind},
        "requestResource": {"group": group, "version": version, "resource": resource},
        "name": object["metadata"]["name"],
        "namespace": object["metadata"]["namespace"],
        "operation": operation,
        "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
        "object": object,
        "oldObject": old.cloned().unwrap_or(Value::Null),
        "dryRun": false,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": if operation == "CREATE" { "CreateOptions" } else { "UpdateOptions" }},
    })
}

fn response_patch(response: &Value) -> Option<Value> {
    let r: wasq::k8s::serve::webhook::review::AdmissionResponse =
        serde_json::from_value(response.clone()).unwrap();
    decoded_patch(&r)
}

/// Applies a mutating response to the object, as the API server does before storing it.
fn admitted(object: &Value, response: &Value) -> Value {
    assert_eq!(response["allowed"], true, "{response}");
    let mut out = object.clone();
    if let Some(ops) = response_patch(response) {
        assert_eq!(response["patchType"], "JSONPatch");
        let patch: json_patch::Patch = serde_json::from_value(ops).unwrap();
        json_patch::patch(&mut out, &patch).unwrap();
    }
    out
}

fn job(name: &str, labels: Value, suspend: Option<bool>) -> Value {
    let mut spec = json!({"parallelism": 2, "completions": 2,
        "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}});
    if let Some(s) = suspend {
        spec["suspend"] = json!(s);
    }
    json!({"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": name, "namespace": "ns", "labels": labels, "creationTimestamp": T},
           "spec": spec})
}

const JOB: (&str, &str, &str) = ("batch", "v1", "Job");
const POD: (&str, &str, &str) = ("", "v1", "Pod");

fn group_pod(name: &str, total: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "ns", "creationTimestamp": T,
                        "labels": {"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/pod-group-name": "g"},
                        "annotations": {"kueue.x-k8s.io/pod-group-total-count": total}},
           "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}})
}

#[tokio::test]
async fn a_queued_job_without_suspend_is_created_suspended() {
    let server = start(webhooks_with(View::default())).await;
    let obj = job("pi", json!({"kueue.x-k8s.io/queue-name": "lq"}), None);
    let r = server
        .create("/mutate-batch-v1-job", JOB, "jobs", &obj)
        .await;
    assert_eq!(r["allowed"], true);
    assert_eq!(r["patchType"], "JSONPatch");
    assert_eq!(
        response_patch(&r),
        Some(json!([{"op": "add", "path": "/spec/suspend", "value": true}]))
    );
    assert_eq!(admitted(&obj, &r)["spec"]["suspend"], true);

    let running = job(
        "pi2",
        json!({"kueue.x-k8s.io/queue-name": "lq"}),
        Some(false),
    );
    let r = server
        .create("/mutate-batch-v1-job", JOB, "jobs", &running)
        .await;
    assert_eq!(admitted(&running, &r)["spec"]["suspend"], true);
}

#[tokio::test]
async fn a_queued_ray_job_is_created_suspended() {
    let server = start(webhooks_with(View::default())).await;
    let obj = json!({"apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": "train", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"rayClusterSpec": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "h", "image": "ray"}]}}}}}});
    let r = server
        .create(
            "/mutate-ray-io-v1-rayjob",
            ("ray.io", "v1", "RayJob"),
            "rayjobs",
            &obj,
        )
        .await;
    assert_eq!(admitted(&obj, &r)["spec"]["suspend"], true);
}

#[tokio::test]
async fn a_job_without_a_queue_is_left_alone_unless_its_namespace_has_a_default_local_queue() {
    let server = start(webhooks_with(View::default())).await;
    let obj = job("plain", json!({"app": "x"}), None);
    let r = server
        .create("/mutate-batch-v1-job", JOB, "jobs", &obj)
        .await;
    assert_eq!(r["allowed"], true);
    assert!(
        r.get("patch").is_none() && r.get("patchType").is_none(),
        "{r}"
    );

    let mut view = View::default();
    view.catalog
        .namespaces_with_default_queue
        .insert("ns".into());
    let server = start(webhooks_with(view)).await;
    let r = server
        .create("/mutate-batch-v1-job", JOB, "jobs", &obj)
        .await;
    let out = admitted(&obj, &r);
    assert_eq!(
        out["metadata"]["labels"]["kueue.x-k8s.io/queue-name"],
        "default"
    );
    assert_eq!(out["metadata"]["labels"]["app"], "x");
    assert_eq!(out["spec"]["suspend"], true);
}

#[tokio::test]
async fn a_job_sent_to_a_multikueue_queue_is_handed_to_multikueue_as_kueue_defaults_it() {
    let mut view = View::default();
    view.multikueue_queues.insert("ns/lq".into());
    let server = start(webhooks_with(view)).await;
    let queued = |q: &str| json!({"kueue.x-k8s.io/queue-name": q});
    async fn managed_by(server: &Server, obj: &Value) -> Value {
        let r = server
            .create("/mutate-batch-v1-job", JOB, "jobs", obj)
            .await;
        admitted(obj, &r)["spec"]["managedBy"].clone()
    }
    // Unset, or the Job controller's: MultiKueue's.
    let plain = job("a", queued("lq"), None);
    assert_eq!(
        managed_by(&server, &plain).await,
        "kueue.x-k8s.io/multikueue"
    );
    let mut by_job_controller = plain.clone();
    by_job_controller["spec"]["managedBy"] = json!("kubernetes.io/job-controller");
    assert_eq!(
        managed_by(&server, &by_job_controller).await,
        "kueue.x-k8s.io/multikueue"
    );
    // Another controller's, another queue, or no queue: left as written.
    let mut other = plain.clone();
    other["spec"]["managedBy"] = json!("example.com/mine");
    assert_eq!(managed_by(&server, &other).await, "example.com/mine");
    assert_eq!(
        managed_by(&server, &job("b", queued("local"), None)).await,
        Value::Null
    );
    // A PyTorchJob's is under its runPolicy, made with its suspend flag.
    let pt = json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": "bert", "namespace": "ns", "labels": queued("lq")},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": container()}}}});
    let r = server
        .create(
            "/mutate-kubeflow-org-v1-pytorchjob",
            ("kubeflow.org", "v1", "PyTorchJob"),
            "pytorchjobs",
            &pt,
        )
        .await;
    assert_eq!(
        admitted(&pt, &r)["spec"]["runPolicy"],
        json!({"suspend": true, "managedBy": "kueue.x-k8s.io/multikueue"})
    );
    assert_eq!(
        managed_by(&server, &job("c", json!({}), None)).await,
        Value::Null
    );
}

#[tokio::test]
async fn a_kubeflow_job_without_a_run_policy_is_created_suspended() {
    let server = start(webhooks_with(View::default())).await;
    let obj = json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": "bert", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": container()}}}});
    let r = server
        .create(
            "/mutate-kubeflow-org-v1-pytorchjob",
            ("kubeflow.org", "v1", "PyTorchJob"),
            "pytorchjobs",
            &obj,
        )
        .await;
    assert_eq!(
        response_patch(&r),
        Some(json!([
            {"op": "add", "path": "/spec/runPolicy", "value": {}},
            {"op": "add", "path": "/spec/runPolicy/suspend", "value": true}
        ]))
    );
    assert_eq!(admitted(&obj, &r)["spec"]["runPolicy"]["suspend"], true);
}

#[tokio::test]
async fn a_pod_of_a_group_is_gated_and_labelled_managed() {
    let server = start(webhooks_with(View::default())).await;
    let pod = group_pod("p0", "2");
    let r = server.create("/mutate--v1-pod", POD, "pods", &pod).await;
    let out = admitted(&pod, &r);
    assert_eq!(
        out["spec"]["schedulingGates"],
        json!([{"name": "kueue.x-k8s.io/admission"}, {"name": "kueue.x-k8s.io/topology"}])
    );
    assert_eq!(out["metadata"]["labels"]["kueue.x-k8s.io/managed"], "true");
    assert!(
        out["metadata"].get("finalizers").is_none(),
        "wasq removes no pod finalizer, so it adds none"
    );
}

/// The pod template at `pointer` of a mutated object: (labels, annotations).
fn template_meta(object: &Value, pointer: &str) -> (Value, Value) {
    let t = object.pointer(pointer).expect("template");
    (
        t["metadata"]["labels"].clone(),
        t["metadata"]["annotations"].clone(),
    )
}

fn container() -> Value {
    json!({"spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}})
}

#[tokio::test]
async fn a_lone_queued_pod_is_gated_as_a_group_of_one() {
    let server = start(webhooks_with(View::default())).await;
    let mut pod = group_pod("solo", "1");
    pod["metadata"]["labels"] = json!({"kueue.x-k8s.io/queue-name": "lq"});
    pod["metadata"]["annotations"] = json!({});
    let r = server.create("/mutate--v1-pod", POD, "pods", &pod).await;
    let out = admitted(&pod, &r);
    assert_eq!(
        out["spec"]["schedulingGates"],
        json!([{"name": "kueue.x-k8s.io/admission"}, {"name": "kueue.x-k8s.io/topology"}])
    );
    assert_eq!(
        out["metadata"]["labels"],
        json!({"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/managed": "true"})
    );
}

#[tokio::test]
async fn deployments_and_stateful_sets_label_their_pod_templates_for_gating() {
    let server = start(webhooks_with(View::default())).await;
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": container()["spec"]}}});
    let r = server
        .review(
            "/mutate-apps-v1-deployment",
            request(
                "CREATE",
                ("apps", "v1", "Deployment"),
                "deployments",
                &deployment,
                None,
            ),
        )
        .await;
    let out = admitted(&deployment, &r);
    // Each replica is a Workload of its own: no group.
    assert_eq!(
        template_meta(&out, "/spec/template"),
        (
            json!({"app": "web", "kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/managed": "true"}),
            Value::Null
        )
    );

    let sts = json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"replicas": 3, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                 "template": container()}});
    let r = server
        .review(
            "/mutate-apps-v1-statefulset",
            request(
                "CREATE",
                ("apps", "v1", "StatefulSet"),
                "statefulsets",
                &sts,
                None,
            ),
        )
        .await;
    let out = admitted(&sts, &r);
    let group = jobs::builtin_kind("apps/v1", "StatefulSet")
        .unwrap()
        .workload_name("db", "", None);
    assert!(group.starts_with("statefulset-db-"));
    assert_eq!(
        template_meta(&out, "/spec/template"),
        (
            json!({"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/managed": "true",
                   "kueue.x-k8s.io/pod-group-name": group}),
            json!({"kueue.x-k8s.io/pod-group-total-count": "3"})
        )
    );
    // A MultiKueue manager's set on a worker: its pods carry the origin label, so that they
    // wait for the manager's copy and never make a Workload of their own.
    let mut dispatched = sts.clone();
    dispatched["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"] = json!("multikueue");
    let r = server
        .review(
            "/mutate-apps-v1-statefulset",
            request(
                "CREATE",
                ("apps", "v1", "StatefulSet"),
                "statefulsets",
                &dispatched,
                None,
            ),
        )
        .await;
    let out = admitted(&dispatched, &r);
    assert_eq!(
        template_meta(&out, "/spec/template").0["kueue.x-k8s.io/multikueue-origin"],
        "multikueue"
    );
    // A StatefulSet a LeaderWorkerSet made is left to the LeaderWorkerSet.
    let mut owned = sts.clone();
    owned["metadata"]["ownerReferences"] = json!([{"apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet", "name": "llm", "uid": "u", "controller": true}]);
    let r = server
        .review(
            "/mutate-apps-v1-statefulset",
            request(
                "CREATE",
                ("apps", "v1", "StatefulSet"),
                "statefulsets",
                &owned,
                None,
            ),
        )
        .await;
    assert!(r.get("patch").is_none(), "{r}");
}

#[tokio::test]
async fn a_leader_worker_sets_pods_are_gated_in_one_group_per_replica() {
    let server = start(webhooks_with(View::default())).await;
    let lws = json!({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
        "metadata": {"name": "llm", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 4,
                 "leaderTemplate": container(), "workerTemplate": container()}}});
    let gvk = ("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet");
    let r = server
        .create(
            "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset",
            gvk,
            "leaderworkersets",
            &lws,
        )
        .await;
    let out = admitted(&lws, &r);
    let expected = (
        json!({"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/managed": "true"}),
        json!({"kueue.x-k8s.io/pod-group-total-count": "4"}),
    );
    for t in ["leaderTemplate", "workerTemplate"] {
        let pointer = format!("/spec/leaderWorkerTemplate/{t}");
        assert_eq!(template_meta(&out, &pointer), expected, "{t}");
    }
    // A worker of group 1, as the LeaderWorkerSet controller creates it from that template.
    let (labels, annotations) = expected;
    let mut pod_labels = labels.clone();
    pod_labels["leaderworkerset.sigs.k8s.io/name"] = json!("llm");
    pod_labels["leaderworkerset.sigs.k8s.io/group-index"] = json!("1");
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "llm-1-2", "namespace": "ns", "labels": pod_labels, "annotations": annotations,
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "llm-1",
                                          "uid": "s", "controller": true}]},
        "spec": container()["spec"]});
    let r = server.create("/mutate--v1-pod", POD, "pods", &pod).await;
    let out = admitted(&pod, &r);
    let group = jobs::builtin_kind("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet")
        .unwrap()
        .workload_name("llm", "", Some(1));
    assert_eq!(
        out["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"],
        group
    );
    assert_eq!(
        out["spec"]["schedulingGates"],
        json!([{"name": "kueue.x-k8s.io/admission"}, {"name": "kueue.x-k8s.io/topology"}])
    );
}

#[tokio::test]
async fn a_pod_owned_by_a_managed_job_is_left_alone() {
    let server = start(webhooks_with(View::default())).await;
    let mut pod = group_pod("pi-abcde", "1");
    pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job",
        "name": "pi", "uid": "uid-pi", "controller": true, "blockOwnerDeletion": true}]);
    let r = server.create("/mutate--v1-pod", POD, "pods", &pod).await;
    assert_eq!(r["allowed"], true);
    assert!(r.get("patch").is_none(), "{r}");
}

#[tokio::test]
async fn a_bad_cluster_queue_is_denied_with_the_loaders_words() {
    let server = start(webhooks_with(View::default())).await;
    let yaml = r#"
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  preemption: {reclaimWithinCohort: Never, borrowWithinCohort: {policy: LowerPriority}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: default, resources: [{name: cpu, nominalQuota: "-1"}]}]
"#;
    let loader = wasq::api::load::load_str(std::path::Path::new("cq.yaml"), yaml)
        .expect_err("the loader refuses it")
        .messages();
    let object: Value = serde_saphyr::from_str(yaml).unwrap();
    let r = server
        .review(
            "/validate-kueue-x-k8s-io-v1beta2-clusterqueue",
            request(
                "CREATE",
                ("kueue.x-k8s.io", "v1beta2", "ClusterQueue"),
                "clusterqueues",
                &object,
                None,
            ),
        )
        .await;
    assert_eq!(r["allowed"], false);
    assert_eq!(r["status"]["code"], 422);
    let message = r["status"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(r#"ClusterQueue.kueue.x-k8s.io "team-a" is invalid: ["#),
        "{message}"
    );
    assert!(
        message.contains(
            "spec.preemption.borrowWithinCohort.policy: must be Never when reclaimWithinCohort is Never"
        ),
        "{message}"
    );
    assert_eq!(loader.len(), 2, "{loader:?}");
    for line in &loader {
        // The loader's line is `file: doc: object: field: message`; the webhook says the same
        // `field: message`.
        let (_, field_message) = line.split_once("ClusterQueue team-a: ").unwrap();
        assert!(
            message.contains(field_message),
            "{field_message} in {message}"
        );
    }
}

fn local_queue(cq: &str) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
           "metadata": {"name": "lq", "namespace": "ns", "resourceVersion": "5"},
           "spec": {"clusterQueue": cq}})
}

#[tokio::test]
async fn a_local_queue_keeps_its_cluster_queue() {
    let server = start(webhooks_with(View::default())).await;
    let path = "/validate-kueue-x-k8s-io-v1beta2-localqueue";
    let gvk = ("kueue.x-k8s.io", "v1beta2", "LocalQueue");
    let same = server
        .review(
            path,
            request(
                "UPDATE",
                gvk,
                "localqueues",
                &local_queue("cq"),
                Some(&local_queue("cq")),
            ),
        )
        .await;
    assert_eq!(same["allowed"], true, "{same}");
    let r = server
        .review(
            path,
            request(
                "UPDATE",
                gvk,
                "localqueues",
                &local_queue("other"),
                Some(&local_queue("cq")),
            ),
        )
        .await;
    assert_eq!(r["allowed"], false);
    assert_eq!(
        r["status"]["message"],
        r#"LocalQueue.kueue.x-k8s.io "lq" is invalid: spec.clusterQueue: Invalid value: "other": field is immutable"#
    );
}

#[tokio::test]
async fn a_running_or_admitted_job_keeps_its_queue_label() {
    let mut view = View::default();
    let held = jobs::builtin_kind("batch/v1", "Job")
        .unwrap()
        .workload_name("held", "uid-held", None);
    view.reserved
        .insert(format!("ns/{held}"), vec!["uid-held".into()]);
    let server = start(webhooks_with(view)).await;
    let path = "/validate-batch-v1-job";
    let relabel = |name: &str, suspend: bool| {
        let mut old = job(
            name,
            json!({"kueue.x-k8s.io/queue-name": "lq"}),
            Some(suspend),
        );
        old["metadata"]["uid"] = json!(format!("uid-{name}"));
        let mut new = old.clone();
        new["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("other");
        request("UPDATE", JOB, "jobs", &new, Some(&old))
    };
    let r = server.review(path, relabel("running", false)).await;
    assert_eq!(r["allowed"], false);
    assert_eq!(
        r["status"]["message"],
        r#"Job.batch "running" is invalid: metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "other": field is immutable"#
    );
    // Suspended, but its Workload holds quota (the controller is about to start it).
    let r = server.review(path, relabel("held", true)).await;
    assert_eq!(r["allowed"], false, "{r}");
    // Suspended and pending: the queue may change.
    let r = server.review(path, relabel("waiting", true)).await;
    assert_eq!(r["allowed"], true, "{r}");
}

#[tokio::test]
async fn a_pod_disagreeing_with_its_group_on_the_total_count_is_denied() {
    let mut view = View::default();
    view.groups.insert(
        ("ns".into(), "g".into()),
        vec![GroupPod {
            name: "p0".into(),
            total_count: Some("2".into()),
        }],
    );
    let server = start(webhooks_with(view)).await;
    let agree = server
        .review(
            "/validate--v1-pod",
            request("CREATE", POD, "pods", &group_pod("p1", "2"), None),
        )
        .await;
    assert_eq!(agree["allowed"], true, "{agree}");
    let r = server
        .review(
            "/validate--v1-pod",
            request("CREATE", POD, "pods", &group_pod("p1", "3"), None),
        )
        .await;
    assert_eq!(r["allowed"], false);
    let message = r["status"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            r#"Pod "p1" is invalid: metadata.annotations[kueue.x-k8s.io/pod-group-total-count]: Invalid value: "3": the other pods of group "g" say "2""#
        ),
        "{message}"
    );
}

#[tokio::test]
async fn a_workload_holding_quota_keeps_its_queue_and_pod_sets() {
    let server = start(webhooks_with(View::default())).await;
    let path = "/validate-kueue-x-k8s-io-v1beta2-workload";
    let gvk = ("kueue.x-k8s.io", "v1beta2", "Workload");
    let wl = |queue: &str, cpu: &str, reserved: bool| {
        let mut w = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "ns"},
            "spec": {"queueName": queue, "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}}}]}});
        if reserved {
            w["status"] = json!({
                "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}, "count": 1}]},
                "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "", "lastTransitionTime": T}]});
        }
        w
    };
    let pending = server
        .review(
            path,
            request(
                "UPDATE",
                gvk,
                "workloads",
                &wl("other", "2", false),
                Some(&wl("lq", "1", false)),
            ),
        )
        .await;
    assert_eq!(pending["allowed"], true, "{pending}");
    let r = server
        .review(
            path,
            request(
                "UPDATE",
                gvk,
                "workloads",
                &wl("other", "2", true),
                Some(&wl("lq", "1", true)),
            ),
        )
        .await;
    assert_eq!(r["allowed"], false);
    assert_eq!(
        r["status"]["message"],
        r#"Workload.kueue.x-k8s.io "w" is invalid: [spec.queueName: Invalid value: "other": field is immutable, spec.podSets: field is immutable while the Workload holds quota (only counts may change)]"#
    );
}

#[tokio::test]
async fn a_workload_gets_its_pod_set_defaults() {
    let server = start(webhooks_with(View::default())).await;
    let wl = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"queueName": "lq", "podSets": [{"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}]}});
    let r = server
        .review(
            "/mutate-kueue-x-k8s-io-v1beta2-workload",
            request(
                "CREATE",
                ("kueue.x-k8s.io", "v1beta2", "Workload"),
                "workloads",
                &wl,
                None,
            ),
        )
        .await;
    let out = admitted(&wl, &r);
    assert_eq!(out["spec"]["podSets"][0]["name"], "main");
    assert_eq!(out["spec"]["podSets"][0]["count"], 1);
}

#[tokio::test]
async fn not_a_review_is_a_bad_request_and_other_paths_are_not_found() {
    let server = start(webhooks_with(View::default())).await;
    let (status, _) = server
        .post("/mutate-batch-v1-job", &json!({"hello": 1}))
        .await;
    assert_eq!(status, 400);
    let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": request("CREATE", JOB, "jobs", &job("pi", json!({}), None), None)});
    let (status, _) = server.post("/metrics", &review).await;
    assert_eq!(status, 404);
    // A kind this replica does not manage: allowed unchanged rather than blocking the cluster.
    let (status, out) = server
        .post("/mutate-kubeflow-org-v1-pytorchjob", &review)
        .await;
    assert_eq!((status, &out["response"]["allowed"]), (200, &json!(true)));
}

#[test]
fn every_webhook_of_the_deployment_is_served() {
    let text = std::fs::read_to_string("deploy/base/webhooks.yaml").unwrap();
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
    let served = webhooks_with(View::default()).paths();
    let mut names = Vec::new();
    for d in &docs {
        let kind = d["kind"].as_str().unwrap_or_default();
        if !kind.ends_with("WebhookConfiguration") {
            continue;
        }
        names.push(d["metadata"]["name"].as_str().unwrap().to_string());
        for w in d["webhooks"].as_array().unwrap() {
            let path = w["clientConfig"]["service"]["path"].as_str().unwrap();
            assert!(served.iter().any(|p| p == path), "{path} is not served");
            assert_eq!(w["clientConfig"]["service"]["name"], SERVICE);
            assert_eq!(w["admissionReviewVersions"], json!(["v1"]));
            assert_eq!(w["sideEffects"], "None");
            assert_eq!(w["failurePolicy"], "Fail");
        }
    }
    assert_eq!(
        names,
        [
            webhook::MUTATING_CONFIGURATION,
            webhook::VALIDATING_CONFIGURATION
        ]
    );
}

#[tokio::test]
async fn a_queue_policy_is_validated_over_tls_with_every_problem_named() {
    let server = start(webhooks_with(View::default())).await;
    let path = "/validate-policies-wasq-dev-v1alpha1-queuepolicy";
    let gvk = ("policies.wasq.dev", "v1alpha1", "QueuePolicy");
    let good: Value = serde_saphyr::from_str(
        "apiVersion: policies.wasq.dev/v1alpha1\nkind: QueuePolicy\nmetadata: {name: fair}\n\
         spec:\n  extension: Preemption\n  mode: Shadow\n  module: {configMap: {name: fair, key: fair.wasm}}\n",
    )
    .unwrap();
    let r = server
        .review(path, request("CREATE", gvk, "queuepolicies", &good, None))
        .await;
    assert_eq!(r["allowed"], true, "{r}");

    let bad: Value = serde_saphyr::from_str(
        "apiVersion: policies.wasq.dev/v1alpha1\nkind: QueuePolicy\nmetadata: {name: fair}\n\
         spec:\n  extension: Preemption\n  module: {path: /p.wasm, oci: {reference: 'ghcr.io/a/b:1'}}\n  digest: sha256:abc\n",
    )
    .unwrap();
    let r = server
        .review(
            path,
            request("UPDATE", gvk, "queuepolicies", &bad, Some(&good)),
        )
        .await;
    assert_eq!(
        (r["allowed"].clone(), r["status"]["code"].clone()),
        (json!(false), json!(422))
    );
    let message = r["status"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(r#"QueuePolicy.policies.wasq.dev "fair" is invalid: ["#),
        "{message}"
    );
    for field in ["spec.module:", "spec.module.oci.reference:", "spec.digest:"] {
        assert!(message.contains(field), "{field} in {message}");
    }

    let unknown: Value = serde_saphyr::from_str(
        "apiVersion: policies.wasq.dev/v1alpha1\nkind: QueuePolicy\nmetadata: {name: fair}\n\
         spec: {extension: preemption, modul: {path: /p.wasm}}\n",
    )
    .unwrap();
    let r = server
        .review(
            path,
            request("CREATE", gvk, "queuepolicies", &unknown, None),
        )
        .await;
    let message = r["status"]["message"].as_str().unwrap();
    assert!(message.contains("spec.modul"), "{message}");
}
