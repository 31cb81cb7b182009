//! Admission checks in the controller against the API double: two-phase admission and Kueue's
//! ProvisioningRequest check for a RayJob whose worker group asks for GPUs.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use serde_json::{Value, json};
use wasq::k8s::client::writer::Writer;
use wasq::k8s::controller::Controller;
use wasq::k8s::serve::metrics::Metrics;
use wasq::k8s::sync::mirror::{Observed, Source};

use super::{Env, KUEUE, NOW, T, queue_label, rayjob_wl};
use super::{double, list_kind};
use wasq::k8s::apiserver::Resource;
use wasq::k8s::controller::provisioning;

const PR_API: &str = "/apis/autoscaling.x-k8s.io/v1";
const CLASS: &str = "queued-provisioning.gke.io";

fn prov_objects(config: &str) -> Vec<(String, Value)> {
    vec![
        (
            format!("{KUEUE}/resourceflavors/gpu-a"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                   "metadata": {"name": "gpu-a"}, "spec": {"nodeLabels": {"gpu": "a"}}}),
        ),
        (
            format!("{KUEUE}/clusterqueues/cq"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                   "metadata": {"name": "cq"},
                   "spec": {"namespaceSelector": {},
                            "admissionChecksStrategy": {"admissionChecks": [{"name": "prov"}]},
                            "resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"],
                                "flavors": [{"name": "gpu-a", "resources": [
                                    {"name": "cpu", "nominalQuota": "8"},
                                    {"name": "nvidia.com/gpu", "nominalQuota": "4"}]}]}]}}),
        ),
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
            format!("{KUEUE}/admissionchecks/prov"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
                   "metadata": {"name": "prov", "generation": 1},
                   "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request",
                            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig",
                                           "name": config}}}),
        ),
        (
            format!("{KUEUE}/provisioningrequestconfigs/prc"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ProvisioningRequestConfig",
                   "metadata": {"name": "prc"},
                   "spec": {"provisioningClassName": CLASS,
                            "parameters": {"ValidUntilSeconds": "600"},
                            "managedResources": ["nvidia.com/gpu"],
                            "retryStrategy": {"backoffLimitCount": 1, "backoffBaseSeconds": 60,
                                              "backoffMaxSeconds": 1800},
                            "podSetUpdates": {"nodeSelector": [
                                {"key": "cloud.google.com/gke-nodepool",
                                 "valueFromProvisioningClassDetail": "NodePool"}]}}}),
        ),
        (
            "/apis/ray.io/v1/namespaces/ns/rayjobs/train".into(),
            json!({"apiVersion": "ray.io/v1", "kind": "RayJob",
                   "metadata": {"name": "train", "namespace": "ns", "labels": queue_label(),
                                "annotations": {"provreq.kueue.x-k8s.io/MaxRunDurationSeconds": "3600"},
                                "creationTimestamp": T},
                   "spec": {"suspend": true, "rayClusterSpec": {
                       "headGroupSpec": {"template": {"spec": {"containers": [
                           {"name": "head", "image": "ray", "resources": {"requests": {"cpu": "1"}}}]}}},
                       "workerGroupSpecs": [{"groupName": "workers", "replicas": 2, "template": {"spec": {"containers": [
                           {"name": "w", "image": "ray",
                            "resources": {"requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]}}}]}}}),
        ),
    ]
}

struct Prov {
    env: Env,
    clock: Arc<AtomicI64>,
}

impl Prov {
    fn new(objects: Vec<(String, Value)>) -> Prov {
        let api = double();
        // The ProvisioningRequest API is served.
        api.register(Resource::from_api_resource(&provisioning::resource(), true).with_status());
        for (path, obj) in objects {
            api.put(&path, obj);
        }
        let clock = Arc::new(AtomicI64::new(NOW));
        let c = clock.clone();
        let mut controller = Controller::new(
            Writer::new(api.client(), Some("test".into())),
            wasq::api::jobs::builtin()
                .into_iter()
                .filter(|k| k.has_suspend())
                .collect(),
            false,
            Arc::new(Metrics::new("standalone")),
            Arc::new(move || c.load(Ordering::SeqCst)),
            Arc::new(|_| {}),
        );
        controller.set_provisioning_requests(true);
        let mut env = Env { api, controller };
        env.list_all();
        let prs = list_kind(&env.api, PR_API, "provisioningrequests");
        env.controller
            .observe(Observed::Listed(Source::ProvisioningRequest, prs));
        Prov { env, clock }
    }

    fn at(&self, seconds: i64) {
        self.clock.store(NOW + seconds * 1000, Ordering::SeqCst);
    }

    async fn step(&mut self) {
        self.env.step().await;
    }

    fn wl(&self) -> Value {
        self.env
            .api
            .get(&format!(
                "{KUEUE}/namespaces/ns/workloads/{}",
                rayjob_wl("train")
            ))
            .expect("the Workload")
    }

    fn pr_path(&self, attempt: i32) -> String {
        format!(
            "{PR_API}/namespaces/ns/provisioningrequests/{}-prov-{attempt}",
            rayjob_wl("train")
        )
    }

    fn pr(&self, attempt: i32) -> Option<Value> {
        self.env.api.get(&self.pr_path(attempt))
    }

    /// The autoscaler sets conditions on a request; the watch reports it.
    fn set_conditions(&mut self, attempt: i32, conditions: Value, details: Value) {
        let path = self.pr_path(attempt);
        let mut pr = self.pr(attempt).expect("the request");
        pr["status"] = json!({"conditions": conditions, "provisioningClassDetails": details});
        self.env.api.put(&path, pr);
        self.env.applied(Source::ProvisioningRequest, &path);
    }

    fn check(&self) -> Value {
        self.wl()["status"]["admissionChecks"][0].clone()
    }

    fn condition(&self, type_: &str) -> Value {
        self.wl()["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == type_)
            .cloned()
            .unwrap_or(Value::Null)
    }

    fn rayjob(&self) -> Value {
        self.env
            .api
            .get("/apis/ray.io/v1/namespaces/ns/rayjobs/train")
            .unwrap()
    }

    fn events(&self) -> Vec<(String, String)> {
        self.env
            .api
            .requests()
            .iter()
            .filter(|r| r.uri.contains("/events") && r.method == "POST")
            .map(|r| {
                (
                    r.body["reason"].as_str().unwrap_or_default().to_string(),
                    r.body["note"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }
}

fn cond(type_: &str, message: &str) -> Value {
    json!({"type": type_, "status": "True", "reason": type_, "message": message,
           "lastTransitionTime": T})
}

fn owner() -> Value {
    let wl = rayjob_wl("train");
    json!([{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "name": wl,
            "uid": format!("uid-{wl}"), "controller": true, "blockOwnerDeletion": true}])
}

#[tokio::test]
async fn a_provisioning_request_is_made_for_the_gpu_workers_and_the_job_starts_once_provisioned() {
    let mut p = Prov::new(prov_objects("prc"));
    p.step().await;
    let wl_name = rayjob_wl("train");
    // Quota reserved, not admitted: the check is Pending.
    assert_eq!(p.condition("QuotaReserved")["status"], "True");
    assert_eq!(
        (
            &p.condition("Admitted")["status"],
            &p.condition("Admitted")["reason"],
            &p.condition("Admitted")["message"]
        ),
        (
            &json!("False"),
            &json!("UnsatisfiedAdmissionChecks"),
            &json!("The workload has not all checks ready")
        )
    );
    assert_eq!(
        p.check(),
        json!({"name": "prov", "state": "Pending", "message": "", "lastTransitionTime": T})
    );
    // The request: only the GPU workers, their admitted count, the class and the parameters
    // with the job's provreq annotation.
    let pr = p.pr(1).expect("attempt 1");
    let pr_name = format!("{wl_name}-prov-1");
    let template = format!("ppt-{pr_name}-workers");
    assert_eq!(
        pr["metadata"]["labels"],
        json!({"kueue.x-k8s.io/managed": "true"})
    );
    assert_eq!(pr["metadata"]["ownerReferences"], owner());
    assert_eq!(
        pr["spec"],
        json!({"provisioningClassName": CLASS,
               "parameters": {"ValidUntilSeconds": "600", "MaxRunDurationSeconds": "3600"},
               "podSets": [{"podTemplateRef": {"name": template}, "count": 2}]})
    );
    let pt = p
        .env
        .api
        .get(&format!("/api/v1/namespaces/ns/podtemplates/{template}"))
        .expect("the PodTemplate");
    assert_eq!(
        pt["metadata"]["labels"],
        json!({"kueue.x-k8s.io/managed": "true"})
    );
    assert_eq!(pt["metadata"]["ownerReferences"], owner());
    assert_eq!(pt["template"]["spec"]["nodeSelector"], json!({"gpu": "a"}));
    assert_eq!(
        pt["template"]["spec"]["containers"][0]["resources"]["requests"],
        json!({"cpu": "1", "nvidia.com/gpu": "1"}),
        "limits stand in for missing requests"
    );
    assert!(
        p.env
            .api
            .get(&format!(
                "/api/v1/namespaces/ns/podtemplates/ppt-{pr_name}-head"
            ))
            .is_none()
    );
    // Not admitted: the RayJob stays suspended.
    assert_eq!(p.rayjob()["spec"]["suspend"], true);
    p.step().await;
    assert_eq!(p.rayjob()["spec"]["suspend"], true);

    // Accepted only: still Pending.
    p.set_conditions(1, json!([cond("Accepted", "accepted")]), json!({}));
    p.step().await;
    assert_eq!(p.check()["state"], "Pending");
    assert_eq!(p.rayjob()["spec"]["suspend"], true);

    // Provisioned: Ready with Kueue's podSet updates, admitted, the job started with them.
    p.at(5);
    p.set_conditions(
        1,
        json!([
            cond("Accepted", "accepted"),
            cond("Provisioned", "capacity is ready")
        ]),
        json!({"NodePool": "pool-1"}),
    );
    p.step().await;
    let annotations = json!({"autoscaling.x-k8s.io/consume-provisioning-request": pr_name,
                             "autoscaling.x-k8s.io/provisioning-class-name": CLASS});
    assert_eq!(
        p.check(),
        json!({"name": "prov", "state": "Ready", "message": "capacity is ready",
               "lastTransitionTime": "2026-01-01T00:00:05Z",
               "podSetUpdates": [{"name": "workers", "annotations": annotations,
                                  "nodeSelector": {"cloud.google.com/gke-nodepool": "pool-1"}}]})
    );
    assert_eq!(
        (
            &p.condition("Admitted")["status"],
            &p.condition("Admitted")["reason"]
        ),
        (&json!("True"), &json!("Admitted"))
    );
    let job = p.rayjob();
    assert_eq!(job["spec"]["suspend"], false);
    let worker = &job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"];
    assert_eq!(worker["metadata"]["annotations"], annotations);
    assert_eq!(
        worker["spec"]["nodeSelector"],
        json!({"gpu": "a", "cloud.google.com/gke-nodepool": "pool-1"})
    );
    let head = &job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"];
    assert!(head["metadata"]["annotations"].is_null());
    let events = p.events();
    assert!(events.contains(&(
        "ProvisioningRequestCreated".into(),
        format!("Created ProvisioningRequest: {pr_name:?}")
    )));
    assert!(events.contains(&(
        "Admitted".into(),
        "Admitted by ClusterQueue cq, wait time since reservation was 5s".into()
    )));

    // Capacity revoked after admission: Rejected, the Workload deactivated.
    p.set_conditions(
        1,
        json!([
            cond("Provisioned", "capacity is ready"),
            cond("CapacityRevoked", "nodes gone")
        ]),
        json!({"NodePool": "pool-1"}),
    );
    p.step().await;
    p.step().await;
    let wl = p.wl();
    assert_eq!(wl["spec"]["active"], false);
    assert_eq!(
        p.condition("Evicted")["reason"],
        "DeactivatedDueToAdmissionCheck"
    );
    assert_eq!(
        p.condition("Evicted")["message"],
        r#"The workload is deactivated due to AdmissionCheck in Rejected state: "prov" (nodes gone)"#
    );
    assert_eq!(p.rayjob()["spec"]["suspend"], true);
    // The podSet updates are gone from the stopped job.
    let worker = &p.rayjob()["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"];
    assert!(worker["metadata"]["annotations"].is_null());
    assert_eq!(worker["spec"]["nodeSelector"], Value::Null);
    assert!(p.events().contains(&(
        "AdmissionCheckRejected".into(),
        r#"Deactivated due to AdmissionCheck in Rejected state: "prov" (nodes gone)"#.into()
    )));
    // Evicted: its requests are deleted.
    assert!(p.pr(1).is_none());
}

#[tokio::test]
async fn a_failed_request_is_retried_after_the_backoff_then_rejected_past_the_limit() {
    let mut p = Prov::new(prov_objects("prc"));
    p.step().await;
    assert!(p.pr(1).is_some());
    p.at(10);
    p.set_conditions(1, json!([cond("Failed", "no capacity")]), json!({}));
    p.step().await;
    // Retry → evicted with Kueue's message, the check reset with the retry counted.
    let evicted = p.condition("Evicted");
    assert_eq!(evicted["reason"], "AdmissionCheck");
    assert_eq!(
        evicted["message"],
        r#"Evicted due to AdmissionCheck in Retry state: "prov" (Retrying after failure: no capacity)"#
    );
    assert_eq!(
        p.check(),
        json!({"name": "prov", "state": "Pending",
               "message": "Reset to Pending after eviction. Previously: Retry",
               "lastTransitionTime": "2026-01-01T00:00:10Z", "retryCount": 1,
               "requeueAfterSeconds": 60})
    );
    assert_eq!(
        p.wl()["status"]["requeueState"],
        json!({"requeueAt": "2026-01-01T00:01:10Z"})
    );
    assert_eq!(p.condition("QuotaReserved")["status"], "False");
    p.step().await;
    assert!(
        p.pr(1).is_none(),
        "the evicted Workload's request is deleted"
    );
    // Not before the backoff.
    p.at(40);
    p.step().await;
    assert_eq!(p.condition("QuotaReserved")["status"], "False");
    assert!(p.pr(2).is_none());
    p.at(71);
    p.step().await;
    assert_eq!(p.condition("Requeued")["reason"], "BackoffFinished");
    assert_eq!(p.condition("QuotaReserved")["status"], "True");
    assert!(p.pr(2).is_some(), "attempt 2");
    assert_eq!(p.check()["retryCount"], 1);
    // Attempt 2 fails past backoffLimitCount 1: Rejected, deactivated.
    p.at(80);
    p.set_conditions(2, json!([cond("Failed", "still no capacity")]), json!({}));
    p.step().await;
    p.step().await;
    assert_eq!(p.wl()["spec"]["active"], false);
    assert_eq!(
        p.condition("Evicted")["reason"],
        "DeactivatedDueToAdmissionCheck"
    );
    assert_eq!(
        p.condition("Evicted")["message"],
        r#"The workload is deactivated due to AdmissionCheck in Rejected state: "prov" (still no capacity)"#
    );
    assert_eq!(p.rayjob()["spec"]["suspend"], true);
    assert_eq!(p.condition("QuotaReserved")["status"], "False");
    // Each attempt's request was created exactly once, and none after the rejection: no
    // request is made while the check turns Retry or Rejected.
    let posts = |n: u32| {
        p.env
            .api
            .requests()
            .iter()
            .filter(|r| {
                r.method == "POST"
                    && r.body["metadata"]["name"]
                        .as_str()
                        .is_some_and(|x| x.ends_with(&format!("-prov-{n}")))
            })
            .count()
    };
    assert_eq!((posts(1), posts(2), posts(3)), (1, 1, 0));
    // Never started.
    assert!(!p.env.api.requests().iter().any(
        |r| r.uri.contains("/rayjobs/train") && r.body.to_string().contains("\"value\":false")
    ));
}

#[tokio::test]
async fn a_booking_expired_before_admission_is_retried() {
    let mut p = Prov::new(prov_objects("prc"));
    p.step().await;
    p.set_conditions(
        1,
        json!([cond("BookingExpired", "booking expired")]),
        json!({}),
    );
    p.step().await;
    assert_eq!(
        p.condition("Evicted")["message"],
        r#"Evicted due to AdmissionCheck in Retry state: "prov" (Retrying after booking expired: booking expired)"#
    );
    assert_eq!(p.check()["retryCount"], 1);
}

#[tokio::test]
async fn stale_requests_of_the_workload_are_deleted() {
    let mut objects = prov_objects("prc");
    let wl = rayjob_wl("train");
    objects.push((
        format!("{PR_API}/namespaces/ns/provisioningrequests/{wl}-old-3"),
        json!({"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
               "metadata": {"name": format!("{wl}-old-3"), "namespace": "ns", "ownerReferences": owner()},
               "spec": {"provisioningClassName": CLASS, "podSets": []}}),
    ));
    let mut p = Prov::new(objects);
    p.step().await;
    p.step().await;
    assert!(
        p.env
            .api
            .get(&format!(
                "{PR_API}/namespaces/ns/provisioningrequests/{wl}-old-3"
            ))
            .is_none()
    );
    assert!(p.pr(1).is_some());
    assert!(
        p.env
            .api
            .requests()
            .iter()
            .any(|r| r.method == "DELETE" && r.uri.contains(&format!("{wl}-old-3")))
    );
}

#[tokio::test]
async fn a_check_naming_a_missing_config_makes_its_cluster_queue_inactive() {
    let mut p = Prov::new(prov_objects("missing"));
    p.step().await;
    p.step().await;
    let ac = p
        .env
        .api
        .get(&format!("{KUEUE}/admissionchecks/prov"))
        .unwrap();
    assert_eq!(
        ac["status"]["conditions"],
        json!([{"type": "Active", "status": "False", "reason": "BadParametersRef",
                "message": "provisioningrequestconfigs.kueue.x-k8s.io \"missing\" not found",
                "lastTransitionTime": T, "observedGeneration": 1}])
    );
    let cq = p.env.api.get(&format!("{KUEUE}/clusterqueues/cq")).unwrap();
    let active = cq["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Active")
        .unwrap()
        .clone();
    assert_eq!(active["status"], "False");
    assert_eq!(active["reason"], "AdmissionCheckInactive");
    assert_eq!(
        active["message"],
        "Can't admit new workloads: references inactive AdmissionCheck(s): prov."
    );
    assert!(p.pr(1).is_none());
}

#[tokio::test]
async fn an_active_check_is_marked_active() {
    let mut p = Prov::new(prov_objects("prc"));
    p.step().await;
    let ac = p
        .env
        .api
        .get(&format!("{KUEUE}/admissionchecks/prov"))
        .unwrap();
    assert_eq!(
        ac["status"]["conditions"],
        json!([{"type": "Active", "status": "True", "reason": "Active",
                "message": "The admission check is active",
                "lastTransitionTime": T, "observedGeneration": 1}])
    );
}

#[test]
fn crds_exist_for_admission_checks_and_their_configs() {
    let crds = wasq::k8s::schema::crds::crds();
    let ac = crds
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some("admissionchecks.kueue.x-k8s.io"))
        .expect("AdmissionCheck CRD");
    let ac = serde_json::to_value(ac).unwrap();
    assert_eq!(ac["spec"]["scope"], "Cluster");
    assert_eq!(ac["spec"]["names"]["shortNames"], json!(["ac"]));
    let v = &ac["spec"]["versions"][0];
    assert_eq!(v["subresources"], json!({"status": {}}));
    let props = &v["schema"]["openAPIV3Schema"]["properties"];
    assert_eq!(props["spec"]["required"], json!(["controllerName"]));
    assert!(props["status"]["properties"]["conditions"].is_object());
    let prc = crds
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some("provisioningrequestconfigs.kueue.x-k8s.io"))
        .expect("ProvisioningRequestConfig CRD");
    let prc = serde_json::to_value(prc).unwrap();
    assert_eq!(prc["spec"]["scope"], "Cluster");
    assert_eq!(prc["spec"]["names"]["shortNames"], json!(["prc"]));
    assert!(prc["spec"]["versions"][0]["subresources"].is_null());
    assert!(
        prc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["managedResources"]
            .is_object()
    );
}

#[tokio::test]
async fn without_the_provisioning_request_api_the_check_is_inactive_and_its_queue_too() {
    let api = double();
    for (path, obj) in prov_objects("prc") {
        api.put(&path, obj);
    }
    let controller = Controller::new(
        Writer::new(api.client(), Some("test".into())),
        wasq::api::jobs::builtin()
            .into_iter()
            .filter(|k| k.has_suspend())
            .collect(),
        false,
        Arc::new(Metrics::new("standalone")),
        Arc::new(|| NOW),
        Arc::new(|_| {}),
    );
    let mut env = Env { api, controller };
    env.list_all();
    env.step().await;
    env.step().await;
    // As in Kueue, whose ProvisioningRequest controller does not start then: nobody marks
    // the check active, so its ClusterQueue is inactive and nothing reserves quota.
    let wl = env
        .api
        .get(&format!(
            "{KUEUE}/namespaces/ns/workloads/{}",
            rayjob_wl("train")
        ))
        .unwrap();
    assert!(wl["status"]["admission"].is_null(), "{wl}");
    let cq = env.api.get(&format!("{KUEUE}/clusterqueues/cq")).unwrap();
    let active = cq["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Active")
        .unwrap()
        .clone();
    assert_eq!(
        (&active["status"], &active["reason"], &active["message"]),
        (
            &json!("False"),
            &json!("AdmissionCheckInactive"),
            &json!("Can't admit new workloads: references inactive AdmissionCheck(s): prov.")
        )
    );
    let ac = env
        .api
        .get(&format!("{KUEUE}/admissionchecks/prov"))
        .unwrap();
    assert!(
        ac["status"].is_null(),
        "wasq writes no Active condition: {ac}"
    );
    assert!(
        !env.api
            .requests()
            .iter()
            .any(|r| r.uri.contains("provisioningrequests"))
    );
}

/// A ClusterQueue whose only check belongs to another controller.
fn budget_objects() -> Vec<(String, Value)> {
    let mut objects = prov_objects("prc");
    for (path, obj) in &mut objects {
        if path.ends_with("/clusterqueues/cq") {
            obj["spec"]["admissionChecksStrategy"] =
                json!({"admissionChecks": [{"name": "budget"}]});
        }
    }
    objects.push((
        format!("{KUEUE}/admissionchecks/budget"),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
               "metadata": {"name": "budget"},
               "spec": {"controllerName": "example.com/budget"},
               "status": {"conditions": [{"type": "Active", "status": "True", "reason": "Active",
                                          "message": "ok", "lastTransitionTime": T}]}}),
    ));
    objects
}

/// Another controller writes the check's state.
fn write_check(p: &mut Prov, state: Value) {
    let path = format!("{KUEUE}/namespaces/ns/workloads/{}", rayjob_wl("train"));
    let mut wl = p.wl();
    wl["status"]["admissionChecks"] = json!([state]);
    p.env.api.put(&path, wl);
    p.env.applied(
        Source::Kueue(wasq::k8s::schema::kinds::KueueKind::Workload),
        &path,
    );
}

#[tokio::test]
async fn a_check_of_another_controller_is_read_and_its_labels_reach_the_job() {
    let mut p = Prov::new(budget_objects());
    p.step().await;
    assert_eq!(p.check()["state"], "Pending");
    p.step().await;
    assert_eq!(p.rayjob()["spec"]["suspend"], true);
    // wasq writes nothing for it: no Active condition, no requests.
    let ac = p
        .env
        .api
        .get(&format!("{KUEUE}/admissionchecks/budget"))
        .unwrap();
    assert_eq!(ac["status"]["conditions"][0]["message"], "ok");
    assert!(p.pr(1).is_none());
    write_check(
        &mut p,
        json!({"name": "budget", "state": "Ready", "message": "within budget",
               "lastTransitionTime": T,
               "podSetUpdates": [{"name": "head", "labels": {"team": "ml"}}]}),
    );
    p.step().await;
    assert_eq!(p.condition("Admitted")["status"], "True");
    let head = &p.rayjob()["spec"]["rayClusterSpec"]["headGroupSpec"]["template"];
    assert_eq!(head["metadata"]["labels"], json!({"team": "ml"}));
    assert_eq!(p.rayjob()["spec"]["suspend"], false);
}

#[tokio::test]
async fn conflicting_pod_set_updates_fail_the_start_naming_the_check() {
    let mut objects = budget_objects();
    for (path, obj) in &mut objects {
        if path.ends_with("/rayjobs/train") {
            obj["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["metadata"] =
                json!({"labels": {"team": "infra"}});
        }
    }
    let mut p = Prov::new(objects);
    p.step().await;
    write_check(
        &mut p,
        json!({"name": "budget", "state": "Ready", "message": "", "lastTransitionTime": T,
               "podSetUpdates": [{"name": "head", "labels": {"team": "ml"}}]}),
    );
    p.step().await;
    let finished = p.condition("Finished");
    assert_eq!(finished["reason"], "FailedToStart");
    assert_eq!(
        finished["message"],
        r#"in admission check "budget": invalid admission check PodSetUpdate: conflict for labels: conflict for key=team, value1=infra, value2=ml"#
    );
    assert_eq!(p.rayjob()["spec"]["suspend"], true);
}

#[tokio::test]
async fn a_failed_create_is_reported_on_the_check_then_retried() {
    let mut p = Prov::new(prov_objects("prc"));
    p.env
        .api
        .fail_next("POST", "/namespaces/ns/provisioningrequests", 500);
    p.step().await;
    let name = format!("{}-prov-1", rayjob_wl("train"));
    assert_eq!(
        p.check()["message"],
        format!("Error creating ProvisioningRequest {name:?}: injected failure")
    );
    assert_eq!(p.check()["state"], "Pending");
    assert!(p.events().iter().any(|(r, _)| r == "FailedCreate"));
    assert!(p.pr(1).is_none());
    p.step().await;
    assert!(p.pr(1).is_some());
    p.step().await;
    assert_eq!(
        p.check()["message"],
        "",
        "no condition yet: the error is cleared"
    );
}
