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

/// `kind` in API group `group`, served by a double as a real API server (StatefulSet) or its
/// CRD (LeaderWorkerSet) serves it.
fn serve(api: &wasq::k8s::apiserver::ApiServer, group: &str, kind: &str, plural: &str) {
    api.register(
        wasq::k8s::apiserver::resources::Resource::new(group, "v1", kind, plural, true)
            .with_status(),
    );
}

fn builtin(api_version: &str, kind: &str) -> wasq::api::jobs::JobKind {
    wasq::api::jobs::builtin_kind(api_version, kind).unwrap()
}

/// A pod of a set's group `group` (of `total` pods), labelled as the manager's webhooks leave
/// it, with `extra` labels and owned by `owner` (a StatefulSet).
fn set_pod(name: &str, group: &str, total: i32, extra: Value, owner: &str) -> (String, Value) {
    let (path, mut pod) = group_pod(name);
    let labels = pod["metadata"]["labels"].as_object_mut().unwrap();
    labels.insert("kueue.x-k8s.io/pod-group-name".into(), json!(group));
    labels.extend(extra.as_object().unwrap().clone());
    pod["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] =
        json!(total.to_string());
    pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "StatefulSet",
        "name": owner, "uid": format!("uid-of-{owner}"), "controller": true}]);
    (path, pod)
}

/// The manager's queues (no Job) and `more`, with `kind` served on every cluster.
fn fed_with(kind: (&str, &str, &str), more: Vec<(String, Value)>) -> Fed {
    let mut objects: Vec<(String, Value)> = manager_objects(&["w1", "w2"], None)
        .into_iter()
        .filter(|(p, _)| !p.contains("/jobs/"))
        .collect();
    let fed = Fed::with_objects(&["w1", "w2"], Vec::new());
    serve(&fed.manager.api, kind.0, kind.1, kind.2);
    for w in &fed.workers {
        serve(&w.api, kind.0, kind.1, kind.2);
    }
    objects.extend(more);
    for (path, obj) in objects {
        fed.manager.api.put(&path, obj);
    }
    fed
}

#[tokio::test]
async fn a_statefulset_is_dispatched_whole_to_the_worker_that_admits_its_pods_group() {
    let sts = builtin("apps/v1", "StatefulSet");
    let group = sts.workload_name("s", "", None);
    let template_labels = json!({"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/managed": "true",
                                 "kueue.x-k8s.io/pod-group-name": group});
    let set = json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "s", "namespace": "ns", "uid": "manager-s",
                     "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"replicas": 2, "serviceName": "s", "selector": {"matchLabels": {"app": "s"}},
                 "template": {"metadata": {"labels": template_labels,
                     "annotations": {"kueue.x-k8s.io/pod-group-total-count": "2"}},
                     "spec": {"containers": [{"name": "c", "image": "busybox",
                         "resources": {"requests": {"cpu": "1"}}}]}}}});
    const SET: &str = "/apis/apps/v1/namespaces/ns/statefulsets/s";
    let mut fed = fed_with(
        ("apps", "StatefulSet", "statefulsets"),
        vec![
            (SET.to_string(), set.clone()),
            set_pod("s-0", &group, 2, json!({}), "s"),
            set_pod("s-1", &group, 2, json!({}), "s"),
        ],
    );
    fed.start_manager();
    fed.until("copies on both workers", |f| {
        f.workers
            .iter()
            .all(|w| w.api.get(&wl_path(&group)).is_some())
    })
    .await;
    admit(fed.worker("w1"), &wl_path(&group));
    fed.until("admitted on w1, the set made there", |f| {
        let m = f.manager.api.get(&wl_path(&group)).unwrap_or_default();
        is_true(&m, "Admitted")
            && f.worker("w1").api.get(SET).is_some()
            && f.worker("w2").api.get(&wl_path(&group)).is_none()
    })
    .await;
    let remote = fed.worker("w1").api.get(SET).unwrap();
    let meta = &remote["metadata"];
    assert_eq!(
        meta["labels"]["kueue.x-k8s.io/multikueue-origin"],
        "multikueue"
    );
    assert_eq!(
        meta["labels"]["kueue.x-k8s.io/prebuilt-workload-name"],
        json!(group)
    );
    assert_eq!(
        meta["annotations"]["kueue.x-k8s.io/multikueue-origin-uid"],
        "manager-s"
    );
    assert_eq!(remote["spec"], set["spec"]);
    // The set goes whole: its pods are the worker's StatefulSet controller's to make.
    assert!(fed.worker("w1").api.get(&pod_path("s-0")).is_none());
    assert!(fed.worker("w2").api.get(SET).is_none());
    for n in ["s-0", "s-1"] {
        assert!(gated(&fed.manager.api.get(&pod_path(n)).unwrap()));
    }
    // Made once, however many passes follow.
    fed.passes(std::time::Duration::from_millis(100)).await;
    let creates = (fed.worker("w1").api.requests().into_iter())
        .filter(|r| r.method == "POST" && r.uri.contains("/statefulsets"))
        .count();
    assert_eq!(creates, 1);

    // The set deleted: its pods and Workload go (the garbage collector's work, which the
    // double leaves to the test), and so do the set and copy on w1.
    use wasq::k8s::sync::mirror::{Observed, Source};
    for (path, source) in [
        (pod_path("s-0"), Source::Pod),
        (pod_path("s-1"), Source::Pod),
        (
            wl_path(&group),
            Source::Kueue(wasq::k8s::schema::kinds::KueueKind::Workload),
        ),
    ] {
        let gone = fed.manager.api.delete(&path).unwrap();
        let gone = serde_json::from_value(gone).unwrap();
        fed.manager
            .controller
            .observe(Observed::Deleted(source, gone));
    }
    fed.until("removed from w1", |f| {
        f.worker("w1").api.get(SET).is_none() && f.worker("w1").api.get(&wl_path(&group)).is_none()
    })
    .await;
}

#[tokio::test]
async fn a_leaderworkersets_groups_all_go_to_the_worker_that_admits_the_first() {
    let lws = builtin("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet");
    let groups: Vec<String> = (0..2)
        .map(|i| lws.workload_name("l", "", Some(i)))
        .collect();
    let set = json!({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
        "metadata": {"name": "l", "namespace": "ns", "uid": "manager-l",
                     "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 2, "workerTemplate": {
            "metadata": {"labels": {"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/managed": "true"},
                         "annotations": {"kueue.x-k8s.io/pod-group-total-count": "2"}},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                "resources": {"requests": {"cpu": "1"}}}]}}}}});
    const SET: &str = "/apis/leaderworkerset.x-k8s.io/v1/namespaces/ns/leaderworkersets/l";
    let mut objects = vec![(SET.to_string(), set.clone())];
    for (i, g) in groups.iter().enumerate() {
        let lws_labels = json!({"leaderworkerset.sigs.k8s.io/name": "l",
                                "leaderworkerset.sigs.k8s.io/group-index": i.to_string()});
        objects.push(set_pod(&format!("l-{i}"), g, 2, lws_labels.clone(), "l"));
        objects.push(set_pod(
            &format!("l-{i}-1"),
            g,
            2,
            lws_labels,
            &format!("l-{i}"),
        ));
    }
    let mut fed = fed_with(
        (
            "leaderworkerset.x-k8s.io",
            "LeaderWorkerSet",
            "leaderworkersets",
        ),
        objects,
    );
    fed.start_manager();
    let on = |f: &Fed, w: &str, g: &str| f.worker(w).api.get(&wl_path(g)).is_some();
    let manager = |f: &Fed, g: &str| f.manager.api.get(&wl_path(g)).unwrap_or_default();
    // Both groups reserve quota here; only the first group's is dispatched.
    fed.until("the first group's copies", |f| {
        on(f, "w1", &groups[0]) && on(f, "w2", &groups[0])
    })
    .await;
    assert!(is_true(&manager(&fed, &groups[1]), "QuotaReserved"));
    assert!(!on(&fed, "w1", &groups[1]) && !on(&fed, "w2", &groups[1]));

    // w2 admits it: the second group follows it there, and only there.
    admit(fed.worker("w2"), &wl_path(&groups[0]));
    fed.until("the second group's copy on w2", |f| {
        on(f, "w2", &groups[1]) && !on(f, "w1", &groups[0])
    })
    .await;
    assert_eq!(manager(&fed, &groups[0])["status"]["clusterName"], "w2");
    assert_eq!(
        manager(&fed, &groups[1])["status"]["nominatedClusterNames"],
        json!(["w2"])
    );
    assert!(!on(&fed, "w1", &groups[1]));
    let remote = fed.worker("w2").api.get(SET).expect("the set on w2");
    let meta = &remote["metadata"];
    assert_eq!(
        meta["labels"]["kueue.x-k8s.io/multikueue-origin"],
        "multikueue"
    );
    assert_eq!(
        meta["annotations"]["kueue.x-k8s.io/multikueue-origin-uid"],
        "manager-l"
    );
    // One set for several Workloads: no prebuilt Workload named.
    assert!(
        meta["labels"]
            .get("kueue.x-k8s.io/prebuilt-workload-name")
            .is_none()
    );
    assert!(
        meta["annotations"]
            .get("kueue.x-k8s.io/prebuilt-workload-name")
            .is_none()
    );
    assert_eq!(remote["spec"], set["spec"]);

    admit(fed.worker("w2"), &wl_path(&groups[1]));
    fed.until("the second group admitted on w2", |f| {
        is_true(&manager(f, &groups[1]), "Admitted")
    })
    .await;
    assert_eq!(manager(&fed, &groups[1])["status"]["clusterName"], "w2");
    let creates = (fed.worker("w2").api.requests().into_iter())
        .filter(|r| r.method == "POST" && r.uri.contains("/leaderworkersets"))
        .count();
    assert_eq!(creates, 1);
    assert!(fed.worker("w1").api.get(SET).is_none());
}

#[tokio::test]
async fn a_dispatched_sets_pods_on_a_wasq_worker_never_make_their_own_workload() {
    // The pods a worker's StatefulSet controller makes from a manager's set (the origin label
    // on their template), before the manager's copy is there, or after it went.
    let mut fed = Fed::with_objects(&["w1"], Vec::new());
    let origin = json!({"kueue.x-k8s.io/multikueue-origin": "multikueue"});
    fed.run_wasq(
        "w1",
        [
            worker_queues("8"),
            vec![
                set_pod("s-0", "g", 2, origin.clone(), "s"),
                set_pod("s-1", "g", 2, origin, "s"),
            ],
        ]
        .concat(),
    );
    for _ in 0..3 {
        fed.step_workers().await;
    }
    assert!(fed.worker("w1").api.get(&wl_path("g")).is_none());
    assert!(gated(&fed.worker("w1").api.get(&pod_path("s-0")).unwrap()));
    // Without the label, the same pods are a pod group of that cluster's own.
    let mut fed = Fed::with_objects(&["w1"], Vec::new());
    fed.run_wasq(
        "w1",
        [
            worker_queues("8"),
            vec![
                set_pod("s-0", "g", 2, json!({}), "s"),
                set_pod("s-1", "g", 2, json!({}), "s"),
            ],
        ]
        .concat(),
    );
    fed.step_workers().await;
    assert!(fed.worker("w1").api.get(&wl_path("g")).is_some());
}
