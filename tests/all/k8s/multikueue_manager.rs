//! The controller as a MultiKueue manager dispatching batch Jobs to workers served over HTTP
//! ([`Fed`]): each worker's Kueue is played by the test, which writes exactly what Kueue
//! writes on a worker (the copy's reservation and admission, the remote Job's status, the
//! copy finished or evicted). Kueue's `workload.go` (main branch) says what the manager does.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::federation::{Fed, WAIT, Worker};
use super::{KUEUE, T, job, job_wl, queue_label};

const MANAGED_BY: &str = "kueue.x-k8s.io/multikueue";

/// The manager's queues: `cq` (8 CPUs) behind the MultiKueue check `mk`, whose config
/// dispatches to `clusters`; a Job `a` of two 1-CPU pods managed by MultiKueue unless
/// `managed_by` says otherwise.
pub(super) fn manager_objects(clusters: &[&str], managed_by: Option<&str>) -> Vec<(String, Value)> {
    let (path, mut a) = job("a", "1", 2, queue_label(), true);
    if let Some(m) = managed_by {
        a["spec"]["managedBy"] = json!(m);
    }
    vec![
        (
            "/api/v1/namespaces/ns".into(),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}),
        ),
        (
            format!("{KUEUE}/resourceflavors/default"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                   "metadata": {"name": "default"}}),
        ),
        (
            format!("{KUEUE}/clusterqueues/cq"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                   "metadata": {"name": "cq"},
                   "spec": {"namespaceSelector": {},
                            "admissionChecksStrategy": {"admissionChecks": [{"name": "mk"}]},
                            "resourceGroups": [{"coveredResources": ["cpu"],
                                "flavors": [{"name": "default", "resources": [
                                    {"name": "cpu", "nominalQuota": "8"}]}]}]}}),
        ),
        (
            format!("{KUEUE}/namespaces/ns/localqueues/lq"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                   "metadata": {"name": "lq", "namespace": "ns"}, "spec": {"clusterQueue": "cq"}}),
        ),
        (
            format!("{KUEUE}/admissionchecks/mk"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
                   "metadata": {"name": "mk"},
                   "spec": {"controllerName": MANAGED_BY,
                            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "cfg"}}}),
        ),
        (
            format!("{KUEUE}/multikueueconfigs/cfg"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
                   "metadata": {"name": "cfg"}, "spec": {"clusters": clusters}}),
        ),
        (path, a),
    ]
}

pub(super) fn wl_path(name: &str) -> String {
    format!("{KUEUE}/namespaces/ns/workloads/{name}")
}

const JOB: &str = "/apis/batch/v1/namespaces/ns/jobs/a";

impl Fed {
    /// Manager passes, 10 ms apart so that the workers' watch events arrive, until `want`
    /// holds (within [`WAIT`]).
    pub(super) async fn until(&mut self, what: &str, want: impl Fn(&Fed) -> bool) {
        let start = Instant::now();
        loop {
            self.step_workers().await;
            self.manager.step().await;
            if want(self) {
                return;
            }
            assert!(
                start.elapsed() < WAIT,
                "{what}: not within {WAIT:?}; the manager's Workloads: {}\n{}",
                self.manager
                    .api
                    .get(&wl_path(&job_wl("a")))
                    .unwrap_or_default(),
                self.manager
                    .api
                    .get(&wl_path(&job_wl("b")))
                    .unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Changes the manager's Workload at `path` as a user would (`kubectl patch`), and its
    /// watch event.
    fn edit_manager_wl(&mut self, path: &str, edit: impl FnOnce(&mut Value)) {
        self.manager.api.modify(path, edit);
        self.manager.applied(
            wasq::k8s::sync::mirror::Source::Kueue(wasq::k8s::schema::kinds::KueueKind::Workload),
            path,
        );
    }

    fn manager_wl(&self) -> Value {
        self.manager
            .api
            .get(&wl_path(&job_wl("a")))
            .unwrap_or_default()
    }
}

/// The state and message of check `mk` on `wl`.
pub(super) fn check(wl: &Value) -> (String, String) {
    let s = wl["status"]["admissionChecks"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == "mk"))
        .cloned()
        .unwrap_or_default();
    let f = |k: &str| s[k].as_str().unwrap_or_default().to_string();
    (f("state"), f("message"))
}

pub(super) fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

pub(super) fn is_true(obj: &Value, type_: &str) -> bool {
    condition(obj, type_).is_some_and(|c| c["status"] == "True")
}

fn copy(w: &Worker) -> Option<Value> {
    w.api.get(&wl_path(&job_wl("a")))
}

/// What a worker's Kueue writes when it reserves quota for and admits the copy.
fn admit_copy(w: &Worker) {
    admit(w, &wl_path(&job_wl("a")));
}

/// [`admit_copy`] for the copy at `path`.
pub(super) fn admit(w: &Worker, path: &str) {
    w.api.modify(path, |c| {
        c["status"] = json!({
            "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main",
                "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "2"}, "count": 2}]},
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                 "message": "Quota reserved in ClusterQueue cq", "lastTransitionTime": T},
                {"type": "Admitted", "status": "True", "reason": "Admitted",
                 "message": "The workload is admitted", "lastTransitionTime": T}]});
    });
}

/// The manager's Workload's events of reason `reason`, as their messages.
fn events(fed: &Fed, reason: &str) -> Vec<String> {
    fed.manager
        .api
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.uri.contains("/events") && r.body["reason"] == reason)
        .map(|r| {
            r.body["note"]
                .as_str()
                .or(r.body["message"].as_str())
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[tokio::test]
async fn a_job_is_dispatched_runs_on_the_worker_that_admits_it_and_finishes_there() {
    let mut fed = Fed::with_objects(
        &["w1", "w2"],
        manager_objects(&["w1", "w2"], Some(MANAGED_BY)),
    );
    fed.start_manager();
    let wl = job_wl("a");

    // Reserved on the manager, the Workload is copied to both workers (all-at-once).
    fed.until("copies on both workers", |f| {
        f.workers.iter().all(|w| copy(w).is_some())
    })
    .await;
    let m = fed.manager_wl();
    assert!(is_true(&m, "QuotaReserved"), "{m}");
    assert!(!is_true(&m, "Admitted"), "{m}");
    assert_eq!(check(&m).0, "Pending");
    assert_eq!(m["status"]["nominatedClusterNames"], json!(["w1", "w2"]));
    for w in &fed.workers {
        let c = copy(w).unwrap();
        assert_eq!(
            c["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"],
            "multikueue"
        );
        assert!(
            c["metadata"]["labels"]
                .get("kueue.x-k8s.io/job-uid")
                .is_none(),
            "{c}"
        );
        assert!(c["metadata"].get("ownerReferences").is_none(), "{c}");
        assert_eq!(c["spec"], m["spec"], "{}", w.name);
        // No remote Job until a worker admits.
        assert!(w.api.get(JOB).is_none());
    }
    // w2's Kueue holds its copy with its finalizer.
    fed.worker("w2").api.modify(&wl_path(&wl), |c| {
        c["metadata"]["finalizers"] = json!(["kueue.x-k8s.io/resource-in-use"]);
    });

    // w1 admits: the check is Ready, w1 recorded, w2's copy removed, the Job created on w1.
    admit_copy(fed.worker("w1"));
    fed.until("admitted on w1", |f| {
        is_true(&f.manager_wl(), "Admitted") && copy(f.worker("w2")).is_none()
    })
    .await;
    let m = fed.manager_wl();
    assert_eq!(
        check(&m),
        ("Ready".into(), "The workload was admitted on \"w1\"".into())
    );
    assert_eq!(m["status"]["clusterName"], "w1");
    assert!(m["status"].get("nominatedClusterNames").is_none(), "{m}");
    assert_eq!(
        events(&fed, "MultiKueue"),
        ["The workload was admitted on \"w1\""]
    );
    // The finalizer went before the delete (else the copy would hang in deletion).
    let w2_requests: Vec<String> = fed
        .worker("w2")
        .api
        .requests()
        .iter()
        .map(|r| r.line())
        .collect();
    let patch = w2_requests
        .iter()
        .position(|l| l.starts_with("PATCH") && l.contains(&wl));
    let delete = w2_requests
        .iter()
        .position(|l| l.starts_with("DELETE") && l.contains(&wl));
    assert!(patch.is_some() && patch < delete, "{w2_requests:?}");
    assert!(fed.worker("w2").api.get(JOB).is_none());

    let remote = fed.worker("w1").api.get(JOB).expect("the Job on w1");
    let labels = &remote["metadata"]["labels"];
    assert_eq!(labels["kueue.x-k8s.io/multikueue-origin"], "multikueue");
    assert_eq!(labels["kueue.x-k8s.io/prebuilt-workload-name"], json!(wl));
    assert_eq!(
        remote["metadata"]["annotations"]["kueue.x-k8s.io/prebuilt-workload-name"],
        json!(wl)
    );
    assert!(remote["spec"].get("managedBy").is_none(), "{remote}");
    assert_eq!(remote["spec"]["parallelism"], 2);
    // The manager's Job is started (its Job controller leaves it to MultiKueue).
    let local = fed.manager.api.get(JOB).unwrap();
    assert_eq!(local["spec"]["suspend"], false);
    assert_eq!(local["spec"]["managedBy"], MANAGED_BY);

    // The remote Job runs: its status is mirrored onto the manager's.
    fed.worker("w1").api.modify(JOB, |j| {
        j["spec"]["suspend"] = json!(false);
        j["status"] = json!({"active": 2, "ready": 2, "startTime": T});
    });
    fed.until("status mirrored", |f| {
        f.manager.api.get(JOB).unwrap()["status"]["active"] == 2
    })
    .await;

    // It completes, and the worker's Kueue finishes the copy.
    fed.worker("w1").api.modify(JOB, |j| {
        j["status"] = json!({"succeeded": 2, "startTime": T, "completionTime": T,
            "conditions": [{"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": T},
                           {"type": "Complete", "status": "True", "lastTransitionTime": T}]});
    });
    fed.worker("w1").api.modify(&wl_path(&wl), |c| {
        c["status"]["conditions"]
            .as_array_mut()
            .unwrap()
            .push(json!(
            {"type": "Finished", "status": "True", "reason": "Succeeded",
             "message": "Job finished successfully", "lastTransitionTime": T}));
    });
    fed.until("finished", |f| {
        is_true(&f.manager_wl(), "Finished")
            && copy(f.worker("w1")).is_none()
            && f.worker("w1").api.get(JOB).is_none()
    })
    .await;
    let finished = condition(&fed.manager_wl(), "Finished").cloned().unwrap();
    assert_eq!(
        (&finished["reason"], &finished["message"]),
        (&json!("Succeeded"), &json!("Job finished successfully"))
    );
    let local = fed.manager.api.get(JOB).unwrap();
    assert!(is_true(&local, "Complete"), "{local}");
    assert_eq!(local["status"]["succeeded"], 2);
}

#[tokio::test]
async fn a_job_not_managed_by_multikueue_is_rejected_as_kueue_rejects_it() {
    let mut fed = Fed::with_objects(&["w1"], manager_objects(&["w1"], None));
    fed.start_manager();
    let rejected = "The owner is not managed by Kueue: Expecting spec.managedBy to be \
                    \"kueue.x-k8s.io/multikueue\" not \"\", Previously: \"Pending\"";
    // Rejected, then deactivated (the check reset to Pending by the eviction, as in Kueue).
    fed.until("deactivated", |f| f.manager_wl()["spec"]["active"] == false)
        .await;
    let m = fed.manager_wl();
    let evicted = condition(&m, "Evicted").unwrap();
    assert_eq!(evicted["reason"], "DeactivatedDueToAdmissionCheck");
    assert_eq!(
        evicted["message"],
        format!(
            "The workload is deactivated due to AdmissionCheck in Rejected state: \"mk\" ({rejected})"
        )
    );
    assert_eq!(
        check(&m),
        (
            "Pending".into(),
            "Reset to Pending after eviction. Previously: Rejected".into()
        )
    );
    // Never copied.
    assert!(copy(fed.worker("w1")).is_none());
}

#[tokio::test]
async fn a_copy_evicted_on_its_worker_is_dispatched_again() {
    let mut fed = Fed::with_objects(
        &["w1", "w2"],
        manager_objects(&["w1", "w2"], Some(MANAGED_BY)),
    );
    running_on_w1(&mut fed).await;
    let wl = job_wl("a");

    // w1's Kueue preempts the copy: evicted, its Job suspended and stopped.
    fed.worker("w1").api.modify(&wl_path(&wl), |c| {
        let cs = c["status"]["conditions"].as_array_mut().unwrap();
        cs.retain(|c| c["type"] != "Admitted" && c["type"] != "QuotaReserved");
        cs.push(json!({"type": "Evicted", "status": "True", "reason": "Preempted",
            "message": "Preempted to accommodate a higher priority Workload", "lastTransitionTime": T}));
        c["status"].as_object_mut().unwrap().remove("admission");
    });
    fed.worker("w1").api.modify(JOB, |j| {
        j["spec"]["suspend"] = json!(true);
        j["status"] = json!({"active": 0, "startTime": T});
    });
    // Retry on the manager: evicted there, the copies removed, reserved again and copied
    // again to every worker.
    fed.until("evicted on the manager", |f| {
        condition(&f.manager_wl(), "Evicted").is_some_and(|c| c["reason"] == "AdmissionCheck")
    })
    .await;
    assert_eq!(
        condition(&fed.manager_wl(), "Evicted").unwrap()["message"],
        "Evicted due to AdmissionCheck in Retry state: \"mk\" (Workload evicted on worker \
         cluster: \"w1\", resetting for re-admission. Previously: \"Ready\")"
    );
    fed.until("dispatched again", |f| {
        let m = f.manager_wl();
        check(&m).0 == "Pending"
            && is_true(&m, "QuotaReserved")
            && m["status"]["nominatedClusterNames"] == json!(["w1", "w2"])
            && f.workers
                .iter()
                .all(|w| copy(w).is_some_and(|c| c["status"].get("conditions").is_none()))
    })
    .await;
    let m = fed.manager_wl();
    assert!(m["status"].get("clusterName").is_none(), "{m}");
    assert!(fed.worker("w1").api.get(JOB).is_none());
    assert_eq!(fed.manager.api.get(JOB).unwrap()["spec"]["suspend"], true);
}

/// A Job dispatched to both workers and running on w1 (two pods active).
async fn running_on_w1(fed: &mut Fed) {
    fed.start_manager();
    fed.until("copies", |f| f.workers.iter().all(|w| copy(w).is_some()))
        .await;
    admit_copy(fed.worker("w1"));
    fed.until("admitted on w1", |f| {
        is_true(&f.manager_wl(), "Admitted") && f.worker("w1").api.get(JOB).is_some()
    })
    .await;
    fed.worker("w1").api.modify(JOB, |j| {
        j["spec"]["suspend"] = json!(false);
        j["status"] = json!({"active": 2, "startTime": T});
    });
    fed.until("running", |f| {
        f.manager.api.get(JOB).unwrap()["status"]["active"] == 2
    })
    .await;
}

#[tokio::test]
async fn a_worker_lost_past_the_timeout_has_its_job_dispatched_again_and_its_stale_copy_goes() {
    let mut fed = Fed::with_objects(
        &["w1", "w2"],
        manager_objects(&["w1", "w2"], Some(MANAGED_BY)),
    );
    running_on_w1(&mut fed).await;

    fed.worker("w1").http.set_down(true);
    fed.until("w1 inactive", |f| {
        f.active("w1").is_some_and(|a| a.0 == "False")
    })
    .await;
    // Within workerLostTimeout (Kueue's default, 15 minutes) the Job stays on w1.
    fed.advance(14 * 60_000);
    fed.passes(Duration::from_millis(100)).await;
    let m = fed.manager_wl();
    assert_eq!(check(&m).0, "Ready", "{m}");
    assert_eq!(m["status"]["clusterName"], "w1");
    assert!(is_true(&m, "Admitted"));

    // Past it: Retry, evicted on the manager, and — the lost worker's status still on the
    // manager's Job — the eviction completes without it; dispatched again to w2 alone.
    fed.advance(60_000);
    fed.until("evicted", |f| {
        condition(&f.manager_wl(), "Evicted").is_some_and(|c| c["status"] == "True")
    })
    .await;
    assert_eq!(
        condition(&fed.manager_wl(), "Evicted").unwrap()["message"],
        "Evicted due to AdmissionCheck in Retry state: \"mk\" (Admitting remote lost, \
         Previously: \"Ready\")"
    );
    fed.until("dispatched to w2", |f| {
        let m = f.manager_wl();
        is_true(&m, "QuotaReserved")
            && m["status"]["nominatedClusterNames"] == json!(["w2"])
            && copy(f.worker("w2")).is_some_and(|c| c["status"].get("conditions").is_none())
    })
    .await;
    assert_eq!(fed.manager.api.get(JOB).unwrap()["spec"]["suspend"], true);
    admit_copy(fed.worker("w2"));
    fed.until("admitted on w2", |f| {
        f.manager_wl()["status"]["clusterName"] == "w2" && f.worker("w2").api.get(JOB).is_some()
    })
    .await;

    // w1 back with the copy and Job it ran before: both go; the Job stays on w2.
    assert!(copy(fed.worker("w1")).is_some());
    fed.worker("w1").http.set_down(false);
    fed.advance(10 * 60_000);
    fed.until("stale copy removed", |f| {
        copy(f.worker("w1")).is_none() && f.worker("w1").api.get(JOB).is_none()
    })
    .await;
    let m = fed.manager_wl();
    assert_eq!(
        (check(&m).0.as_str(), &m["status"]["clusterName"]),
        ("Ready", &json!("w2"))
    );
    assert!(copy(fed.worker("w2")).is_some());
    assert!(fed.worker("w2").api.get(JOB).is_some());
}

#[tokio::test]
async fn a_short_loss_keeps_the_job_where_it_runs() {
    let mut fed = Fed::with_objects(
        &["w1", "w2"],
        manager_objects(&["w1", "w2"], Some(MANAGED_BY)),
    );
    running_on_w1(&mut fed).await;
    fed.worker("w1").http.set_down(true);
    fed.until("w1 inactive", |f| {
        f.active("w1").is_some_and(|a| a.0 == "False")
    })
    .await;
    fed.advance(60_000);
    fed.passes(Duration::from_millis(50)).await;
    fed.worker("w1").http.set_down(false);
    fed.advance(5 * 60_000);
    fed.until("w1 active", |f| {
        f.active("w1").is_some_and(|a| a.0 == "True")
    })
    .await;
    // Past the timeout since the loss began, but connected again: nothing changes.
    fed.advance(15 * 60_000);
    fed.passes(Duration::from_millis(100)).await;
    let m = fed.manager_wl();
    assert_eq!(check(&m).0, "Ready", "{m}");
    assert_eq!(m["status"]["clusterName"], "w1");
    assert!(condition(&m, "Evicted").is_none_or(|c| c["status"] == "False"));
    assert!(copy(fed.worker("w1")).is_some());
    assert_eq!(fed.manager.api.get(JOB).unwrap()["status"]["active"], 2);
}

/// A worker's queues as its operator writes them: `cq` of `cpu` CPUs for LocalQueue `ns/lq`.
pub(super) fn worker_queues(cpu: &str) -> Vec<(String, Value)> {
    manager_objects(&[], None)
        .into_iter()
        .filter(|(path, _)| {
            path.contains("/resourceflavors/")
                || path.contains("/localqueues/")
                || path.contains("/clusterqueues/")
        })
        .map(|(path, mut obj)| {
            if path.contains("/clusterqueues/") {
                obj["spec"]
                    .as_object_mut()
                    .unwrap()
                    .remove("admissionChecksStrategy");
                obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] =
                    json!(cpu);
            }
            (path, obj)
        })
        .collect()
}

fn is_suspended(job: &Value) -> bool {
    job["spec"]["suspend"] == true
}

#[tokio::test]
async fn a_worker_running_wasq_adopts_the_copy_runs_the_job_and_its_end_reaches_the_manager() {
    let mut fed = Fed::with_objects(
        &["w1", "w2"],
        manager_objects(&["w1", "w2"], Some(MANAGED_BY)),
    );
    fed.run_wasq("w1", worker_queues("8"));
    // Too small for the Job's two CPUs: its copy stays pending there.
    fed.run_wasq("w2", worker_queues("1"));
    fed.start_manager();
    let wl = job_wl("a");

    fed.until("running on w1", |f| {
        f.worker("w1")
            .api
            .get(JOB)
            .is_some_and(|j| !is_suspended(&j))
            && f.manager_wl()["status"]["clusterName"] == "w1"
            && copy(f.worker("w2")).is_none()
    })
    .await;
    // w1's wasq adopted the copy as the remote Job's prebuilt Workload, and made no other.
    let remote = fed.worker("w1").api.get(JOB).unwrap();
    let c = copy(fed.worker("w1")).unwrap();
    let owner = &c["metadata"]["ownerReferences"][0];
    assert_eq!(
        (
            &owner["kind"],
            &owner["name"],
            &owner["uid"],
            &owner["controller"]
        ),
        (
            &json!("Job"),
            &json!("a"),
            &remote["metadata"]["uid"],
            &json!(true)
        )
    );
    assert_eq!(
        c["metadata"]["labels"]["kueue.x-k8s.io/job-uid"],
        remote["metadata"]["uid"]
    );
    assert!(is_true(&c, "Admitted"), "{c}");
    let on_w1: Vec<String> = fed
        .worker("w1")
        .api
        .all()
        .into_iter()
        .filter(|(p, _)| p.contains("/workloads/"))
        .map(|(p, _)| p)
        .collect();
    assert_eq!(on_w1, [wl_path(&wl)]);
    let m = fed.manager_wl();
    assert_eq!(
        check(&m),
        ("Ready".into(), "The workload was admitted on \"w1\"".into())
    );
    assert!(!is_suspended(&fed.manager.api.get(JOB).unwrap()));

    // The worker's Job controller completes the Job: w1's wasq finishes the copy, the
    // manager finishes as it did and removes what it made on w1.
    fed.worker("w1").api.modify(JOB, |j| {
        j["status"] = json!({"succeeded": 2, "startTime": T, "completionTime": T,
            "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": T,
                            "message": "Reached expected number of succeeded pods"}]});
    });
    let mut copy_finished = None;
    fed.until("finished", |f| is_true(&f.manager_wl(), "Finished"))
        .await;
    if let Some(c) = copy(fed.worker("w1")) {
        copy_finished = condition(&c, "Finished").cloned();
    }
    let finished = condition(&fed.manager_wl(), "Finished").cloned().unwrap();
    assert_eq!(finished["reason"], "Succeeded");
    if let Some(c) = copy_finished {
        assert_eq!(c["message"], finished["message"]);
    }
    fed.until("removed from w1", |f| {
        copy(f.worker("w1")).is_none() && f.worker("w1").api.get(JOB).is_none()
    })
    .await;
    assert!(is_true(&fed.manager.api.get(JOB).unwrap(), "Complete"));
}

#[tokio::test]
async fn preempted_on_the_manager_the_copy_is_deactivated_on_its_wasq_worker() {
    let mut objects = manager_objects(&["w1"], Some(MANAGED_BY));
    for (path, obj) in &mut objects {
        if path.ends_with("/clusterqueues/cq") {
            obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] =
                json!("2");
            obj["spec"]["preemption"] = json!({"withinClusterQueue": "LowerPriority"});
        }
    }
    objects.push((
        format!("{KUEUE}/workloadpriorityclasses/high"),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
               "metadata": {"name": "high"}, "value": 100}),
    ));
    let mut fed = Fed::with_objects(&["w1"], objects);
    fed.run_wasq("w1", worker_queues("8"));
    fed.start_manager();
    fed.until("running on w1", |f| {
        f.worker("w1")
            .api
            .get(JOB)
            .is_some_and(|j| !is_suspended(&j))
    })
    .await;
    // w1's Job controller runs its pods.
    fed.worker("w1").api.modify(JOB, |j| {
        j["status"] = json!({"active": 2, "startTime": T});
    });
    fed.until("running", |f| {
        f.manager.api.get(JOB).unwrap()["status"]["active"] == 2
    })
    .await;

    // A higher-priority Job on the manager preempts `a` there.
    let (path, mut b) = job(
        "b",
        "1",
        2,
        json!({"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/priority-class": "high"}),
        true,
    );
    b["spec"]["managedBy"] = json!(MANAGED_BY);
    fed.manager.api.put(&path, b);
    let i = (fed.manager.controller.kinds().iter())
        .position(|k| k.spec.kind == "Job")
        .unwrap();
    fed.manager
        .applied(wasq::k8s::sync::mirror::Source::Job(i), &path);

    // The copy is told why, its worker deactivates it and stops the Job, that reaches the
    // manager, whose eviction completes: `b` is admitted and dispatched.
    fed.until("a's copy deactivated on w1", |f| {
        copy(f.worker("w1")).is_some_and(|c| c["spec"]["active"] == false && is_true(&c, "Evicted"))
            && f.worker("w1")
                .api
                .get(JOB)
                .is_some_and(|j| is_suspended(&j))
    })
    .await;
    // Until its pods are gone on w1, `a` holds its quota on the manager.
    fed.passes(Duration::from_millis(50)).await;
    assert!(is_true(&fed.manager_wl(), "QuotaReserved"));
    fed.worker("w1").api.modify(JOB, |j| {
        j["status"] = json!({"active": 0, "startTime": T});
    });
    let c = copy(fed.worker("w1")).unwrap();
    let evicted = condition(&c, "Evicted").unwrap();
    assert_eq!(evicted["reason"], "DeactivatedDueToEvictedOnManagerCluster");
    let manager_eviction = condition(&fed.manager_wl(), "Evicted").unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        evicted["message"],
        format!("The workload is deactivated due to Evicted on manager: {manager_eviction}")
    );
    fed.until("b dispatched, a pending", |f| {
        let b = f
            .manager
            .api
            .get(&wl_path(&job_wl("b")))
            .unwrap_or_default();
        !is_true(&f.manager_wl(), "QuotaReserved")
            && is_true(&b, "QuotaReserved")
            && f.worker("w1").api.get(&wl_path(&job_wl("b"))).is_some()
            && copy(f.worker("w1")).is_none()
    })
    .await;
    assert!(is_suspended(&fed.manager.api.get(JOB).unwrap()));
    let m = fed.manager_wl();
    assert_eq!(condition(&m, "Evicted").unwrap()["reason"], "Preempted");
}

#[tokio::test]
async fn a_deleted_job_takes_its_copies_and_remote_job_along() {
    let mut fed = Fed::with_objects(
        &["w1", "w2"],
        manager_objects(&["w1", "w2"], Some(MANAGED_BY)),
    );
    running_on_w1(&mut fed).await;
    // The user deletes the Job; its Workload goes with it (the garbage collector's work,
    // which the double leaves to the test).
    let wl = wl_path(&job_wl("a"));
    for path in [JOB, wl.as_str()] {
        let gone = fed.manager.api.delete(path).unwrap();
        let source = if path == JOB {
            let i = (fed.manager.controller.kinds().iter())
                .position(|k| k.spec.kind == "Job")
                .unwrap();
            wasq::k8s::sync::mirror::Source::Job(i)
        } else {
            wasq::k8s::sync::mirror::Source::Kueue(wasq::k8s::schema::kinds::KueueKind::Workload)
        };
        fed.manager
            .controller
            .observe(wasq::k8s::sync::mirror::Observed::Deleted(
                source,
                serde_json::from_value(gone).unwrap(),
            ));
    }
    fed.until("remote objects removed", |f| {
        copy(f.worker("w1")).is_none() && f.worker("w1").api.get(JOB).is_none()
    })
    .await;
    assert!(copy(fed.worker("w2")).is_none());
}

#[tokio::test]
async fn orphaned_copies_go_at_the_garbage_collectors_round_and_never_with_gc_off() {
    // A copy of a Workload the manager does not have (deleted while it was away), as its
    // worker holds it.
    let orphan = |w: &Worker| {
        w.api.put(
            &wl_path("ghost"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                   "metadata": {"name": "ghost", "namespace": "ns",
                                "labels": {"kueue.x-k8s.io/multikueue-origin": "multikueue"}},
                   "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1,
                       "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}]}}),
        );
    };
    let config = |gc: &str| -> wasq::api::config::Configuration {
        serde_json::from_value(json!({
            "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
            "multiKueue": {"gcInterval": gc}}))
        .unwrap()
    };
    let mut fed = Fed::with_objects(&["w1"], manager_objects(&["w1"], Some(MANAGED_BY)));
    fed.manager.controller.mirror.configuration = Some(config("1m"));
    fed.start_manager();
    fed.until("the Job's copy", |f| copy(f.worker("w1")).is_some())
        .await;
    orphan(fed.worker("w1"));
    fed.passes(Duration::from_millis(100)).await;
    assert!(
        fed.worker("w1").api.get(&wl_path("ghost")).is_some(),
        "kept until the next round"
    );
    fed.advance(60_000);
    fed.until("the orphan removed", |f| {
        f.worker("w1").api.get(&wl_path("ghost")).is_none()
    })
    .await;
    assert!(copy(fed.worker("w1")).is_some(), "the Job's copy stays");

    // `gcInterval: 0` turns the garbage collector off, as in Kueue.
    let mut fed = Fed::with_objects(&["w1"], manager_objects(&["w1"], Some(MANAGED_BY)));
    fed.manager.controller.mirror.configuration = Some(config("0s"));
    orphan(fed.worker("w1"));
    fed.start_manager();
    fed.until("the Job's copy", |f| copy(f.worker("w1")).is_some())
        .await;
    fed.advance(3_600_000);
    fed.passes(Duration::from_millis(100)).await;
    assert!(fed.worker("w1").api.get(&wl_path("ghost")).is_some());
}

#[tokio::test]
async fn the_incremental_dispatcher_nominates_more_workers_each_round() {
    let clusters = ["w1", "w2", "w3"];
    let mut fed = Fed::with_objects(&clusters, manager_objects(&clusters, Some(MANAGED_BY)));
    let config: wasq::api::config::Configuration = serde_json::from_value(json!({
        "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "multiKueue": {"dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
                       "incrementalDispatcherConfig": {"stepSize": 1}}}))
    .unwrap();
    fed.manager.controller.mirror.configuration = Some(config);
    fed.start_manager();
    let nominated = |f: &Fed| f.manager_wl()["status"]["nominatedClusterNames"].clone();
    // Kueue's incremental dispatcher, one cluster a round: the first at once, then one more
    // each round of five minutes while none admits.
    fed.until("first round", |f| copy(f.worker("w1")).is_some())
        .await;
    assert_eq!(nominated(&fed), json!(["w1"]));
    fed.passes(Duration::from_millis(50)).await;
    assert!(copy(fed.worker("w2")).is_none());
    fed.advance(5 * 60_000);
    fed.until("second round", |f| {
        f.workers.iter().filter(|w| copy(w).is_some()).count() > 1
    })
    .await;
    assert_eq!(nominated(&fed), json!(["w1", "w2"]));
    fed.passes(Duration::from_millis(50)).await;
    assert!(copy(fed.worker("w3")).is_none());
    // w2 admits: the others' copies go.
    admit_copy(fed.worker("w2"));
    fed.until("admitted on w2", |f| {
        f.manager_wl()["status"]["clusterName"] == "w2" && copy(f.worker("w1")).is_none()
    })
    .await;
    fed.advance(5 * 60_000);
    fed.passes(Duration::from_millis(50)).await;
    assert!(copy(fed.worker("w3")).is_none());
}

/// The requests a dispatched Job costs: `N` Jobs, each copied to two workers played as Kueue,
/// admitted on w1, run and finished there. Printed (BENCHMARKS.md) and bounded.
#[tokio::test]
async fn requests_per_dispatched_workload() {
    const N: usize = 20;
    let mut objects = manager_objects(&["w1", "w2"], Some(MANAGED_BY));
    objects.retain(|(path, _)| path != JOB);
    for (path, obj) in &mut objects {
        if path.ends_with("/clusterqueues/cq") {
            obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] =
                json!("100");
        }
    }
    let mut fed = Fed::with_objects(&["w1", "w2"], objects);
    fed.start_manager();
    fed.until("connected", |f| {
        ["w1", "w2"]
            .iter()
            .all(|w| f.active(w).is_some_and(|a| a.0 == "True"))
    })
    .await;
    let i = (fed.manager.controller.kinds().iter())
        .position(|k| k.spec.kind == "Job")
        .unwrap();
    let count = |w: &Worker, what: &str| {
        w.api
            .all()
            .into_iter()
            .filter(|(p, _)| p.contains(what))
            .count()
    };
    let before_manager = fed.manager.api.requests().len();
    let before_workers: Vec<usize> = fed.workers.iter().map(|w| w.api.requests().len()).collect();
    for n in 0..N {
        let (path, mut j) = job(&format!("j{n}"), "1", 2, queue_label(), true);
        j["spec"]["managedBy"] = json!(MANAGED_BY);
        fed.manager.api.put(&path, j);
        fed.manager
            .applied(wasq::k8s::sync::mirror::Source::Job(i), &path);
    }
    fed.until("copies", |f| {
        f.workers.iter().all(|w| count(w, "/workloads/") == N)
    })
    .await;
    let copies: Vec<String> = (fed.worker("w1").api.all().into_iter())
        .filter(|(p, _)| p.contains("/workloads/"))
        .map(|(p, _)| p)
        .collect();
    for path in &copies {
        admit(fed.worker("w1"), path);
    }
    fed.until("running on w1", |f| {
        count(f.worker("w1"), "/jobs/") == N && count(f.worker("w2"), "/workloads/") == 0
    })
    .await;
    for n in 0..N {
        let job_path = format!("/apis/batch/v1/namespaces/ns/jobs/j{n}");
        fed.worker("w1").api.modify(&job_path, |j| {
            j["status"] = json!({"succeeded": 2, "startTime": T, "completionTime": T,
                "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": T}]});
        });
    }
    for path in &copies {
        fed.worker("w1").api.modify(path, |c| {
            c["status"]["conditions"]
                .as_array_mut()
                .unwrap()
                .push(json!(
                {"type": "Finished", "status": "True", "reason": "Succeeded",
                 "message": "Job finished successfully", "lastTransitionTime": T}));
        });
    }
    fed.until("finished and removed", |f| {
        count(f.worker("w1"), "/workloads/") == 0 && count(f.worker("w1"), "/jobs/") == 0
    })
    .await;

    let manager: Vec<_> = fed.manager.api.requests()[before_manager..]
        .iter()
        .filter(|r| r.method != "GET" && !r.uri.contains("/events"))
        .cloned()
        .collect();
    let by_multikueue = manager
        .iter()
        .filter(|r| r.uri.contains("fieldManager=kueue.x-k8s.io%2Fmultikueue"))
        .count();
    let mut on_workers = 0;
    for (w, before) in fed.workers.iter().zip(before_workers) {
        on_workers += w.api.requests()[before..]
            .iter()
            .filter(|r| r.method != "GET")
            .count();
    }
    let per = |n: usize| n as f64 / N as f64;
    eprintln!(
        "per dispatched workload: {:.1} writes on the manager ({:.1} of them MultiKueue's), \
         {:.1} writes on the workers; watches per worker: {}",
        per(manager.len()),
        per(by_multikueue),
        per(on_workers),
        fed.worker("w1").api.open_watches()
    );
    // Two copies made, one removed, the remote Job made and removed, the copy removed
    // (finalizer patch included): about six on the workers; nominations, Ready, the Job's
    // status twice and the Workload's own writes on the manager.
    assert!(per(on_workers) <= 8.0, "{}", per(on_workers));
    assert!(per(manager.len()) <= 14.0, "{}", per(manager.len()));
}

/// JobSet, served by the doubles as its CRD serves it.
fn serve_jobsets(api: &wasq::k8s::apiserver::ApiServer) {
    api.register(
        wasq::k8s::apiserver::resources::Resource::new(
            "jobset.x-k8s.io",
            "v1alpha2",
            "JobSet",
            "jobsets",
            true,
        )
        .with_status(),
    );
}

#[tokio::test]
async fn a_jobset_is_dispatched_like_a_job_with_its_own_managed_by() {
    const JS: &str = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns/jobsets/js";
    let mut objects = manager_objects(&["w1", "w2"], None);
    objects.retain(|(path, _)| path != JOB);
    let mut fed = Fed::with_objects(&["w1", "w2"], objects);
    serve_jobsets(&fed.manager.api);
    // w2 does not serve JobSets: its copies and Jobs are still watched.
    serve_jobsets(&fed.worker("w1").api);
    fed.manager.api.put(
        JS,
        json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "js", "namespace": "ns", "labels": queue_label(), "creationTimestamp": T},
            "spec": {"suspend": true, "managedBy": MANAGED_BY,
                "replicatedJobs": [{"name": "workers", "replicas": 1, "template": {"spec": {
                    "parallelism": 2, "completions": 2,
                    "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c",
                        "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}}}]}}),
    );
    fed.start_manager();
    let kind = jobs_kind("jobset.x-k8s.io/v1alpha2", "JobSet");
    let wl = kind.workload_name("js", "uid-js", None);
    let copy_of = |w: &Worker| w.api.get(&wl_path(&wl));
    fed.until("copies", |f| f.workers.iter().all(|w| copy_of(w).is_some()))
        .await;
    assert_eq!(
        fed.manager.api.get(&wl_path(&wl)).unwrap()["status"]["nominatedClusterNames"],
        json!(["w1", "w2"])
    );
    fed.worker("w1").api.modify(&wl_path(&wl), |c| {
        c["status"] = json!({
            "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "workers",
                "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "2"}, "count": 2}]},
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                 "message": "Quota reserved in ClusterQueue cq", "lastTransitionTime": T},
                {"type": "Admitted", "status": "True", "reason": "Admitted",
                 "message": "The workload is admitted", "lastTransitionTime": T}]});
    });
    fed.until("the JobSet on w1", |f| f.worker("w1").api.get(JS).is_some())
        .await;
    let remote = fed.worker("w1").api.get(JS).unwrap();
    assert!(remote["spec"].get("managedBy").is_none(), "{remote}");
    assert_eq!(
        remote["metadata"]["labels"]["kueue.x-k8s.io/prebuilt-workload-name"],
        json!(wl)
    );
    // JobSet's status is taken whole, each time it changes.
    fed.worker("w1").api.modify(JS, |j| {
        j["spec"]["suspend"] = json!(false);
        j["status"] = json!({"replicatedJobsStatus": [{"name": "workers", "active": 1, "ready": 1,
            "succeeded": 0, "failed": 0, "suspended": 0}]});
    });
    fed.until("status mirrored", |f| {
        f.manager.api.get(JS).unwrap()["status"]["replicatedJobsStatus"][0]["active"] == 1
    })
    .await;
    fed.worker("w1").api.modify(&wl_path(&wl), |c| {
        c["status"]["conditions"]
            .as_array_mut()
            .unwrap()
            .push(json!(
            {"type": "Finished", "status": "True", "reason": "Succeeded",
             "message": "jobset completed successfully", "lastTransitionTime": T}));
    });
    fed.until("finished and removed", |f| {
        let m = f.manager.api.get(&wl_path(&wl)).unwrap();
        is_true(&m, "Finished")
            && f.worker("w1").api.get(JS).is_none()
            && copy_of(f.worker("w1")).is_none()
    })
    .await;
    let m = fed.manager.api.get(&wl_path(&wl)).unwrap();
    assert_eq!(
        condition(&m, "Finished").unwrap()["message"],
        "jobset completed successfully"
    );
}

fn jobs_kind(api_version: &str, kind: &str) -> wasq::api::jobs::JobKind {
    wasq::api::jobs::builtin_kind(api_version, kind).unwrap()
}

/// A dispatch plugin's stand-in: the connected worker with the fewest Workloads pending in the
/// Workload's queue; every request kept.
struct ShortestQueue(std::sync::Mutex<Vec<wasq::policy::dispatch::DispatchRequest>>);

impl wasq::policy::dispatch::DispatchPolicy for ShortestQueue {
    fn id(&self) -> wasq::policy::PolicyRef {
        wasq::policy::PolicyRef {
            name: "shortest-queue".into(),
            digest: "test".into(),
        }
    }

    fn dispatch(
        &self,
        req: &wasq::policy::dispatch::DispatchRequest,
    ) -> Result<wasq::policy::dispatch::DispatchAnswer, wasq::policy::PolicyError> {
        self.0.lock().unwrap().push(req.clone());
        let best = (req.clusters.iter().enumerate())
            .filter(|(_, c)| c.connected)
            .min_by_key(|(_, c)| c.queue.as_ref().map_or(u32::MAX, |q| q.pending))
            .map(|(i, _)| i as u32);
        Ok(wasq::policy::dispatch::DispatchAnswer {
            nominate: best.into_iter().collect(),
            retry_after: None,
        })
    }
}

#[tokio::test]
async fn a_dispatch_plugin_sees_the_workers_queues_as_their_kueue_reports_them() {
    let plugin = Arc::new(ShortestQueue(Default::default()));
    let bound = plugin.clone();
    let configure: wasq::k8s::sync::core::Configure = Arc::new(move |s| {
        let mut p = wasq::policy::PolicySet::builtin();
        p.dispatch = Some(bound.clone());
        s.set_default_policies(p);
    });
    let mut fed = Fed::with_hook(
        &["w1", "w2"],
        manager_objects(&["w1", "w2"], Some(MANAGED_BY)),
        configure,
    );
    // Each worker's queues, with the status its Kueue writes: w1 busy, w2 idle.
    for (w, pending, used) in [("w1", 5, "6"), ("w2", 0, "1500m")] {
        for (path, mut obj) in worker_queues("8") {
            if path.contains("/clusterqueues/") {
                obj["status"] = json!({"pendingWorkloads": pending, "admittedWorkloads": 3,
                    "flavorsUsage": [{"name": "default", "resources": [{"name": "cpu", "total": used}]}]});
            }
            fed.worker(w).api.put(&path, obj);
        }
    }
    fed.start_manager();
    fed.until("copied to w2", |f| copy(f.worker("w2")).is_some())
        .await;
    assert_eq!(
        fed.manager_wl()["status"]["nominatedClusterNames"],
        json!(["w2"])
    );
    fed.passes(Duration::from_millis(50)).await;
    assert!(copy(fed.worker("w1")).is_none());

    let requests = plugin.0.lock().unwrap().clone();
    let req = requests.last().expect("the plugin was asked");
    assert_eq!(req.workload.local_queue, "lq");
    let queue = |i: usize| req.clusters[i].queue.clone().expect("the worker's queue");
    let (q1, q2) = (queue(0), queue(1));
    assert_eq!((q1.name.as_str(), q1.pending, q1.admitted), ("cq", 5, 3));
    assert_eq!(q2.pending, 0);
    let cpu = |q: &wasq::policy::dispatch::WorkerQueue| {
        let r = q.resources.iter().find(|r| r.resource == "cpu").unwrap();
        (r.flavor.clone(), r.nominal, r.usage)
    };
    assert_eq!(cpu(&q1), ("default".into(), 8000, 6000));
    assert_eq!(cpu(&q2), ("default".into(), 8000, 1500));
    // Asked again only when something changes (here: nothing).
    let asked = requests.len();
    fed.passes(Duration::from_millis(50)).await;
    assert_eq!(plugin.0.lock().unwrap().len(), asked);
}

#[tokio::test]
async fn a_priority_changed_on_the_manager_reaches_the_copies() {
    let mut objects = manager_objects(&["w1", "w2"], Some(MANAGED_BY));
    objects.push((
        format!("{KUEUE}/workloadpriorityclasses/high"),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
               "metadata": {"name": "high"}, "value": 100}),
    ));
    let mut fed = Fed::with_objects(&["w1", "w2"], objects);
    fed.start_manager();
    fed.until("copies", |f| f.workers.iter().all(|w| copy(w).is_some()))
        .await;
    // The user raises the pending Workload's priority (as `kubectl patch` would).
    let path = wl_path(&job_wl("a"));
    fed.edit_manager_wl(&path, |w| {
        w["spec"]["priorityClassRef"] =
            json!({"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"});
        w["spec"]["priority"] = json!(100);
    });
    fed.until("copies updated", |f| {
        f.workers
            .iter()
            .all(|w| copy(w).is_some_and(|c| c["spec"]["priority"] == 100))
    })
    .await;
    for w in &fed.workers {
        let c = copy(w).unwrap();
        assert_eq!(c["spec"]["priorityClassRef"]["name"], "high");
        // Updated where it is, not made anew.
        assert!(
            !w.api.requests().iter().any(|r| r.method == "DELETE"),
            "{}",
            w.name
        );
    }
}

#[tokio::test]
async fn a_copy_made_from_a_spec_changed_since_is_made_anew_and_a_workers_defaults_are_not_a_change()
 {
    let mut fed = Fed::with_objects(
        &["w1", "w2"],
        manager_objects(&["w1", "w2"], Some(MANAGED_BY)),
    );
    fed.start_manager();
    fed.until("copies", |f| f.workers.iter().all(|w| copy(w).is_some()))
        .await;
    let deletes = |w: &Worker| {
        (w.api.requests().iter())
            .filter(|r| r.method == "DELETE" && r.uri.contains("/workloads/"))
            .count()
    };
    // w1's API server defaults a field of its copy's pod template: not a change.
    let path = wl_path(&job_wl("a"));
    fed.worker("w1").api.modify(&path, |c| {
        c["spec"]["podSets"][0]["template"]["spec"]["schedulerName"] = json!("default-scheduler");
    });
    fed.passes(Duration::from_millis(100)).await;
    assert_eq!(deletes(fed.worker("w1")), 0);

    // The manager's Workload's spec changes (its maximum execution time): each copy is
    // removed and made anew from the new spec (Kueue's out-of-sync step).
    fed.edit_manager_wl(&path, |w| {
        w["spec"]["maximumExecutionTimeSeconds"] = json!(600);
    });
    fed.until("copies made anew", |f| {
        f.workers
            .iter()
            .all(|w| copy(w).is_some_and(|c| c["spec"]["maximumExecutionTimeSeconds"] == 600))
    })
    .await;
    for w in &fed.workers {
        assert_eq!(deletes(w), 1, "{}", w.name);
    }
}

#[tokio::test]
async fn a_copy_its_worker_finds_out_of_sync_is_dispatched_again_not_finished() {
    let mut fed = Fed::with_objects(
        &["w1", "w2"],
        manager_objects(&["w1", "w2"], Some(MANAGED_BY)),
    );
    running_on_w1(&mut fed).await;
    // w1's Kueue finds the remote Job no longer matches the copy (Kueue's OutOfSync finish).
    fed.worker("w1").api.modify(JOB, |j| {
        j["spec"]["suspend"] = json!(true);
        j["status"] = json!({"active": 0, "startTime": T});
    });
    fed.worker("w1").api.modify(&wl_path(&job_wl("a")), |c| {
        c["status"]["conditions"]
            .as_array_mut()
            .unwrap()
            .push(json!(
            {"type": "Finished", "status": "True", "reason": "OutOfSync",
             "message": "The prebuilt workload is out of sync with its user job",
             "lastTransitionTime": T}));
    });
    fed.until("evicted on the manager", |f| {
        condition(&f.manager_wl(), "Evicted").is_some_and(|c| c["status"] == "True")
    })
    .await;
    assert_eq!(
        condition(&fed.manager_wl(), "Evicted").unwrap()["message"],
        "Evicted due to AdmissionCheck in Retry state: \"mk\" (Remote workload on worker cluster \
         \"w1\" is out of sync with its user job, resetting for re-dispatch, Previously: \"Ready\")"
    );
    fed.until("dispatched again", |f| {
        let m = f.manager_wl();
        is_true(&m, "QuotaReserved")
            && check(&m).0 == "Pending"
            && f.workers
                .iter()
                .all(|w| copy(w).is_some_and(|c| c["status"].get("conditions").is_none()))
    })
    .await;
    assert!(!is_true(&fed.manager_wl(), "Finished"));
}
