//! The controller as a MultiKueue manager dispatching plain pods (Kueue's pod adapter,
//! `pod_multikueue_adapter.go`): a pod group's Workload is copied to the workers like a Job's;
//! the worker that admits it gets the group's pods, the manager's pods stay gated and take
//! the workers' pods' status.

use serde_json::{Value, json};

use super::T;
use super::federation::{Fed, Worker};
use super::multikueue_manager::{
    admit, check, condition, is_true, manager_objects, wl_path, worker_queues,
};

/// A pod of group `g` (two pods of one CPU), as the manager's webhook leaves it: queued,
/// gated, marked managed.
fn group_pod(name: &str) -> (String, Value) {
    (
        pod_path(name),
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "ns", "uid": format!("manager-{name}"),
                            "creationTimestamp": T,
                            "labels": {"kueue.x-k8s.io/queue-name": "lq",
                                       "kueue.x-k8s.io/pod-group-name": "g",
                                       "kueue.x-k8s.io/managed": "true"},
                            "annotations": {"kueue.x-k8s.io/pod-group-total-count": "2"}},
               "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox",
                                        "resources": {"requests": {"cpu": "1"}}}]},
               "status": {"phase": "Pending", "conditions": [
                   {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates"}]}}),
    )
}

fn pod_path(name: &str) -> String {
    format!("/api/v1/namespaces/ns/pods/{name}")
}

/// The manager's queues behind check `mk` (no Job) and the group's two pods.
fn objects(clusters: &[&str]) -> Vec<(String, Value)> {
    let mut objects: Vec<(String, Value)> = manager_objects(clusters, None)
        .into_iter()
        .filter(|(p, _)| !p.contains("/jobs/"))
        .collect();
    objects.extend([group_pod("p0"), group_pod("p1")]);
    objects
}

fn group_copy(w: &Worker) -> Option<Value> {
    w.api.get(&wl_path("g"))
}

fn manager_group(f: &Fed) -> Value {
    f.manager.api.get(&wl_path("g")).unwrap_or_default()
}

fn gated(pod: &Value) -> bool {
    pod["spec"]["schedulingGates"]
        .as_array()
        .is_some_and(|g| g.iter().any(|g| g["name"] == "kueue.x-k8s.io/admission"))
}

fn pod_status(f: &Fed, name: &str) -> Value {
    f.manager.api.get(&pod_path(name)).unwrap()["status"].clone()
}

#[tokio::test]
async fn a_pod_group_runs_on_the_worker_that_admits_it_while_its_pods_here_stay_gated() {
    let mut fed = Fed::with_objects(&["w1", "w2"], objects(&["w1", "w2"]));
    fed.start_manager();
    fed.until("copies on both workers", |f| {
        f.workers.iter().all(|w| group_copy(w).is_some())
    })
    .await;
    let m = manager_group(&fed);
    assert!(is_true(&m, "QuotaReserved"), "{m}");
    assert_eq!(m["spec"]["podSets"][0]["count"], 2);
    for w in &fed.workers {
        assert!(
            w.api.get(&pod_path("p0")).is_none(),
            "no pod before admission"
        );
    }

    // w1 admits: Ready, w2's copy goes, the group's pods are made on w1 only.
    admit(fed.worker("w1"), &wl_path("g"));
    fed.until("admitted on w1", |f| {
        is_true(&manager_group(f), "Admitted")
            && group_copy(f.worker("w2")).is_none()
            && f.worker("w1").api.get(&pod_path("p1")).is_some()
    })
    .await;
    let m = manager_group(&fed);
    assert_eq!(
        check(&m),
        ("Ready".into(), "The workload was admitted on \"w1\"".into())
    );
    assert_eq!(m["status"]["clusterName"], "w1");
    assert!(fed.worker("w2").api.get(&pod_path("p0")).is_none());
    for name in ["p0", "p1"] {
        let remote = fed.worker("w1").api.get(&pod_path(name)).unwrap();
        let labels = &remote["metadata"]["labels"];
        assert_eq!(labels["kueue.x-k8s.io/multikueue-origin"], "multikueue");
        assert_eq!(labels["kueue.x-k8s.io/prebuilt-workload-name"], "g");
        assert_eq!(labels["kueue.x-k8s.io/pod-group-name"], "g");
        assert_eq!(labels["kueue.x-k8s.io/queue-name"], "lq");
        assert_eq!(
            remote["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"],
            "2"
        );
        // The worker's Kueue releases its gate; the spec is the manager's pod's.
        assert!(gated(&remote), "{remote}");
        let local = fed.manager.api.get(&pod_path(name)).unwrap();
        assert_eq!(remote["spec"]["containers"], local["spec"]["containers"]);
        assert_ne!(remote["metadata"]["uid"], local["metadata"]["uid"]);
        // Admitted here, the manager's pod is not released: it runs on w1.
        assert!(gated(&local), "{local}");
    }

    // Not scheduled on w1 yet: the manager's pods keep their SchedulingGated condition.
    for name in ["p0", "p1"] {
        fed.worker("w1").api.modify(&pod_path(name), |p| {
            p["status"] = json!({"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/3 nodes are available"}], "qosClass": "Burstable"});
        });
    }
    fed.until("pending status mirrored", |f| {
        pod_status(f, "p1")["qosClass"] == "Burstable"
    })
    .await;
    let scheduled = &pod_status(&fed, "p0")["conditions"][0];
    assert_eq!(
        (&scheduled["status"], &scheduled["reason"]),
        (&json!("False"), &json!("SchedulingGated"))
    );
    // Scheduled and running there: the worker's status whole.
    for name in ["p0", "p1"] {
        fed.worker("w1").api.modify(&pod_path(name), |p| {
            p["spec"]["schedulingGates"] = json!([]);
            p["status"] = json!({"phase": "Running", "podIP": "10.0.0.7", "conditions": [
                {"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]});
        });
    }
    fed.until("running status mirrored", |f| {
        ["p0", "p1"]
            .iter()
            .all(|n| pod_status(f, n)["phase"] == "Running")
    })
    .await;
    assert_eq!(
        pod_status(&fed, "p0")["conditions"][0],
        json!({"type": "PodScheduled", "status": "True"})
    );
    assert_eq!(pod_status(&fed, "p0")["podIP"], "10.0.0.7");

    // Both succeed there and the worker's Kueue finishes the copy: the manager's Workload
    // finishes, what it made on w1 goes.
    for name in ["p0", "p1"] {
        fed.worker("w1").api.modify(&pod_path(name), |p| {
            p["status"] = json!({"phase": "Succeeded", "conditions": [
                {"type": "PodScheduled", "status": "True"}]});
        });
    }
    fed.worker("w1").api.modify(&wl_path("g"), |c| {
        c["status"]["conditions"].as_array_mut().unwrap().push(
            json!({"type": "Finished", "status": "True", "reason": "Succeeded",
                         "message": "Pods succeeded", "lastTransitionTime": T}),
        );
    });
    fed.until("finished and cleaned up", |f| {
        is_true(&manager_group(f), "Finished")
            && group_copy(f.worker("w1")).is_none()
            && f.worker("w1").api.get(&pod_path("p0")).is_none()
            && f.worker("w1").api.get(&pod_path("p1")).is_none()
    })
    .await;
    let finished = condition(&manager_group(&fed), "Finished")
        .cloned()
        .unwrap();
    assert_eq!(finished["reason"], "Succeeded");
    assert_eq!(pod_status(&fed, "p1")["phase"], "Succeeded");
}

#[tokio::test]
async fn a_pod_group_on_a_wasq_worker_runs_under_the_managers_copy() {
    let mut fed = Fed::with_objects(&["w1"], objects(&["w1"]));
    fed.run_wasq("w1", worker_queues("8"));
    fed.start_manager();
    fed.until("released on w1", |f| {
        ["p0", "p1"].iter().all(|n| {
            f.worker("w1")
                .api
                .get(&pod_path(n))
                .is_some_and(|p| !gated(&p))
        })
    })
    .await;
    // w1's wasq released the pods under the copy, and made no Workload of its own.
    let on_w1: Vec<String> = (fed.worker("w1").api.all().into_iter())
        .filter(|(p, _)| p.contains("/workloads/"))
        .map(|(p, _)| p)
        .collect();
    assert_eq!(on_w1, [wl_path("g")]);
    let c = group_copy(fed.worker("w1")).unwrap();
    assert!(is_true(&c, "Admitted"), "{c}");
    let m = manager_group(&fed);
    assert_eq!(m["status"]["clusterName"], "w1");
    for n in ["p0", "p1"] {
        assert!(gated(&fed.manager.api.get(&pod_path(n)).unwrap()));
    }

    // The pods end on w1: w1's wasq finishes the copy, the manager finishes as it did.
    for n in ["p0", "p1"] {
        fed.worker("w1").api.modify(&pod_path(n), |p| {
            p["status"] = json!({"phase": "Succeeded"});
        });
    }
    fed.until("finished", |f| is_true(&manager_group(f), "Finished"))
        .await;
    let finished = condition(&manager_group(&fed), "Finished")
        .cloned()
        .unwrap();
    assert_eq!(
        (&finished["reason"], &finished["message"]),
        (&json!("Succeeded"), &json!("Pods succeeded"))
    );
    fed.until("removed from w1", |f| {
        group_copy(f.worker("w1")).is_none() && f.worker("w1").api.get(&pod_path("p0")).is_none()
    })
    .await;
}
