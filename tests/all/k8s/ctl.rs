//! `wasq ctl` (kueuectl's `list`, `stop`, `resume`) against the API double, on objects as Kueue
//! writes them: kueuectl's columns and values, its filters and messages, and the merge patches
//! it sends. Positions come from the visibility API, which the double does not serve (they are
//! blank here, as kueuectl leaves them on a 404); the real-cluster tests read them.

use serde_json::{Value, json};
use wasq::k8s::ctl::{
    Activation, DryRun, ListOptions, Listed, Output, Target, TargetKind, list, set_activation,
};

use super::{KUEUE, double};

/// An hour after the objects below were made.
fn now() -> jiff::Timestamp {
    "2026-01-01T01:00:00Z".parse().unwrap()
}

fn condition(kind: &str, at: &str) -> Value {
    json!({"type": kind, "status": "True", "reason": kind, "message": "", "lastTransitionTime": at})
}

fn workload(name: &str, job: &str, conditions: Value, admission: Option<&str>) -> (String, Value) {
    let mut status = json!({"conditions": conditions});
    if let Some(cq) = admission {
        status["admission"] = json!({"clusterQueue": cq, "podSetAssignments": []});
    }
    (
        format!("{KUEUE}/namespaces/ns/workloads/{name}"),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
               "metadata": {"name": name, "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z",
                            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job,
                                                 "uid": format!("uid-{job}"), "controller": true}]},
               "spec": {"queueName": "lq", "priority": 10, "active": true,
                        "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]},
               "status": status}),
    )
}

fn objects() -> Vec<(String, Value)> {
    vec![
        (
            format!("{KUEUE}/clusterqueues/cq"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                   "metadata": {"name": "cq", "creationTimestamp": "2026-01-01T00:00:00Z"},
                   "spec": {"cohortName": "all", "namespaceSelector": {}, "resourceGroups": []},
                   "status": {"pendingWorkloads": 1, "reservingWorkloads": 2, "admittedWorkloads": 2,
                              "conditions": [condition("Active", "2026-01-01T00:00:00Z")]}}),
        ),
        (
            format!("{KUEUE}/clusterqueues/idle"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                   "metadata": {"name": "idle", "creationTimestamp": "2025-12-29T20:00:00Z"},
                   "spec": {"namespaceSelector": {}, "resourceGroups": []}}),
        ),
        (
            format!("{KUEUE}/namespaces/ns/localqueues/lq"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                   "metadata": {"name": "lq", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
                   "spec": {"clusterQueue": "cq"},
                   "status": {"pendingWorkloads": 1, "reservingWorkloads": 2, "admittedWorkloads": 2}}),
        ),
        (
            format!("{KUEUE}/namespaces/other/localqueues/lq-b"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                   "metadata": {"name": "lq-b", "namespace": "other", "creationTimestamp": "2026-01-01T00:59:15Z"},
                   "spec": {"clusterQueue": "idle"}}),
        ),
        workload("job-a-1", "a", json!([]), None),
        workload(
            "job-b-2",
            "b",
            json!([
                condition("QuotaReserved", "2026-01-01T00:10:00Z"),
                condition("Admitted", "2026-01-01T00:10:00Z")
            ]),
            Some("cq"),
        ),
        workload(
            "job-c-3",
            "c",
            json!([
                condition("QuotaReserved", "2026-01-01T00:01:00Z"),
                condition("Admitted", "2026-01-01T00:01:00Z"),
                condition("Finished", "2026-01-01T00:04:20Z")
            ]),
            Some("cq"),
        ),
    ]
}

fn in_ns(ns: &str) -> ListOptions {
    ListOptions {
        namespace: Some(ns.to_string()),
        ..ListOptions::default()
    }
}

#[tokio::test]
async fn workloads_list_with_kueuectls_columns_states_and_times() {
    let api = double();
    for (path, object) in objects() {
        api.put(&path, object);
    }
    let client = api.client();
    let listing = list(
        &client,
        Listed::Workloads,
        &in_ns("ns"),
        Output::Table,
        now(),
    )
    .await
    .unwrap();
    // The pending one's ClusterQueue is its LocalQueue's; execution time runs from Admitted to
    // Finished (or now).
    assert_eq!(
        listing.stdout,
        "NAME      JOB TYPE   JOB NAME   LOCALQUEUE   CLUSTERQUEUE   STATUS     POSITION IN QUEUE   EXEC TIME   AGE\n\
         job-a-1   job        a          lq           cq             PENDING                                    60m\n\
         job-b-2   job        b          lq           cq             ADMITTED                       50m         60m\n\
         job-c-3   job        c          lq           cq             FINISHED                       3m20s       60m\n"
    );
    assert_eq!(listing.stderr, "");
    // kueuectl's filters: status (any case, repeatable), ClusterQueue of the admission.
    let options = ListOptions {
        statuses: vec!["Pending".into(), "finished".into()],
        ..in_ns("ns")
    };
    let names = |l: &wasq::k8s::ctl::Listing| -> Vec<String> {
        l.stdout
            .lines()
            .skip(1)
            .map(|r| r.split(' ').next().unwrap().to_string())
            .collect()
    };
    let filtered = list(&client, Listed::Workloads, &options, Output::Table, now())
        .await
        .unwrap();
    assert_eq!(names(&filtered), ["job-a-1", "job-c-3"]);
    let admitted_to_cq = ListOptions {
        cluster_queue: Some("cq".into()),
        ..in_ns("ns")
    };
    let filtered = list(
        &client,
        Listed::Workloads,
        &admitted_to_cq,
        Output::Table,
        now(),
    )
    .await
    .unwrap();
    assert_eq!(names(&filtered), ["job-b-2", "job-c-3"]);
    let bad = ListOptions {
        statuses: vec!["running".into()],
        ..in_ns("ns")
    };
    let err = list(&client, Listed::Workloads, &bad, Output::Table, now())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid status value (running). Must be \"all\", \"pending\", \"admitted\" or \"finished\""
    );
    // Wide adds the priority; json is a List of the objects as stored.
    let wide = list(
        &client,
        Listed::Workloads,
        &in_ns("ns"),
        Output::Wide,
        now(),
    )
    .await
    .unwrap();
    assert!(
        wide.stdout
            .lines()
            .next()
            .unwrap()
            .ends_with("AGE   PRIORITY   POSITION IN CLUSTERQUEUE")
    );
    let json = list(
        &client,
        Listed::Workloads,
        &in_ns("ns"),
        Output::Json,
        now(),
    )
    .await
    .unwrap();
    let parsed: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(parsed["kind"], "List");
    assert_eq!(parsed["items"].as_array().unwrap().len(), 3);
    assert_eq!(
        parsed["items"][1]["status"]["admission"]["clusterQueue"],
        "cq"
    );
}

#[tokio::test]
async fn queues_list_with_namespaces_filters_and_kubectls_empty_message() {
    let api = double();
    for (path, object) in objects() {
        api.put(&path, object);
    }
    let client = api.client();
    let all = ListOptions::default();
    let cqs = list(&client, Listed::ClusterQueues, &all, Output::Table, now())
        .await
        .unwrap();
    assert_eq!(
        cqs.stdout,
        "NAME   COHORT   PENDING WORKLOADS   ADMITTED WORKLOADS   ACTIVE   AGE\n\
         cq     all      1                   2                    true     60m\n\
         idle            0                   0                    false    2d5h\n"
    );
    let inactive = ListOptions {
        active: Some(false),
        ..ListOptions::default()
    };
    let cqs = list(
        &client,
        Listed::ClusterQueues,
        &inactive,
        Output::Table,
        now(),
    )
    .await
    .unwrap();
    assert_eq!(cqs.stdout.lines().count(), 2);
    assert!(cqs.stdout.lines().nth(1).unwrap().starts_with("idle "));
    // -A: a NAMESPACE column first.
    let lqs = list(&client, Listed::LocalQueues, &all, Output::Table, now())
        .await
        .unwrap();
    assert_eq!(
        lqs.stdout,
        "NAMESPACE   NAME   CLUSTERQUEUE   PENDING WORKLOADS   ADMITTED WORKLOADS   AGE\n\
         ns          lq     cq             1                   2                    60m\n\
         other       lq-b   idle           0                   0                    45s\n"
    );
    let of_cq = ListOptions {
        cluster_queue: Some("nothing-here".into()),
        ..in_ns("ns")
    };
    let none = list(&client, Listed::LocalQueues, &of_cq, Output::Table, now())
        .await
        .unwrap();
    assert_eq!(
        (none.stdout.as_str(), none.stderr.as_str()),
        ("", "No resources found in ns namespace.\n")
    );
    let none = list(
        &client,
        Listed::Workloads,
        &in_ns("empty"),
        Output::Yaml,
        now(),
    )
    .await
    .unwrap();
    assert_eq!(none.stderr, "No resources found in empty namespace.\n");
}

#[tokio::test]
async fn stop_and_resume_send_kueuectls_merge_patches_and_say_so() {
    let api = double();
    for (path, object) in objects() {
        api.put(&path, object);
    }
    let client = api.client();
    let target = |kind, name: &str| Target {
        kind,
        namespace: "ns".into(),
        name: name.into(),
    };
    let keep = Activation::Stop {
        keep_already_running: true,
    };
    let drain = Activation::Stop {
        keep_already_running: false,
    };
    let cases = [
        (
            target(TargetKind::Workload, "job-a-1"),
            drain,
            "workload.kueue.x-k8s.io/job-a-1 stopped",
            format!("{KUEUE}/namespaces/ns/workloads/job-a-1"),
            json!({"spec": {"active": false}}),
        ),
        (
            target(TargetKind::Workload, "job-a-1"),
            Activation::Resume,
            "workload.kueue.x-k8s.io/job-a-1 resumed",
            format!("{KUEUE}/namespaces/ns/workloads/job-a-1"),
            json!({"spec": {"active": true}}),
        ),
        (
            target(TargetKind::LocalQueue, "lq"),
            keep,
            "localqueue.kueue.x-k8s.io/lq",
            format!("{KUEUE}/namespaces/ns/localqueues/lq"),
            json!({"spec": {"stopPolicy": "Hold"}}),
        ),
        (
            target(TargetKind::ClusterQueue, "cq"),
            drain,
            "clusterqueue.kueue.x-k8s.io/cq",
            format!("{KUEUE}/clusterqueues/cq"),
            json!({"spec": {"stopPolicy": "HoldAndDrain"}}),
        ),
        (
            target(TargetKind::ClusterQueue, "cq"),
            Activation::Resume,
            "clusterqueue.kueue.x-k8s.io/cq",
            format!("{KUEUE}/clusterqueues/cq"),
            json!({"spec": {"stopPolicy": "None"}}),
        ),
    ];
    for (target, activation, said, path, patch) in cases {
        api.record_requests(true);
        api.clear_requests();
        let line = set_activation(&client, &target, activation, DryRun::None)
            .await
            .unwrap();
        assert_eq!(line, said);
        let patches: Vec<_> = api
            .requests()
            .into_iter()
            .filter(|r| r.method == "PATCH")
            .collect();
        assert_eq!(patches.len(), 1, "{said}");
        assert_eq!(patches[0].content_type, "application/merge-patch+json");
        assert_eq!(patches[0].body, patch);
        let stored = api.get(&path).unwrap();
        assert_eq!(
            stored.pointer("/spec").unwrap()
                [patch["spec"].as_object().unwrap().keys().next().unwrap()],
            patch["spec"]
                .as_object()
                .unwrap()
                .values()
                .next()
                .unwrap()
                .clone()
        );
    }
    // A client dry run sends nothing; a missing object is an error before anything is sent.
    api.clear_requests();
    let line = set_activation(
        &client,
        &target(TargetKind::Workload, "job-b-2"),
        drain,
        DryRun::Client,
    )
    .await
    .unwrap();
    assert_eq!(
        line,
        "workload.kueue.x-k8s.io/job-b-2 stopped (client dry run)"
    );
    assert!(api.requests().iter().all(|r| r.method == "GET"));
    let err = set_activation(
        &client,
        &target(TargetKind::LocalQueue, "nope"),
        drain,
        DryRun::None,
    )
    .await;
    assert!(err.is_err());
    assert!(api.requests().iter().all(|r| r.method == "GET"));
}
