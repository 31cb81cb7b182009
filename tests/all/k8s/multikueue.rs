//! MultiKueue's kinds in the controller against the API double: MultiKueueClusters and
//! MultiKueueConfigs are listed and watched with the other Kueue kinds, and whether a
//! MultiKueue check's clusters are connected decides whether its ClusterQueue is active, with
//! Kueue's words. Nothing is dispatched yet, and nothing is written to MultiKueue's objects.

use serde_json::{Value, json};
use wasq::k8s::schema::kinds::KueueKind;
use wasq::k8s::sync::mirror::Source;

use super::{Env, KUEUE, T};

/// A ClusterQueue `cq` whose check `mk` dispatches to `w1` (MultiKueueConfig `cfg`), the check
/// and the cluster marked active as Kueue's MultiKueue controllers leave them.
fn objects() -> Vec<(String, Value)> {
    let active = |message: &str| {
        json!({"conditions": [{"type": "Active", "status": "True", "reason": "Active",
                               "message": message, "lastTransitionTime": T}]})
    };
    vec![
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
            "/api/v1/namespaces/ns".into(),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}),
        ),
        (
            format!("{KUEUE}/admissionchecks/mk"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
                   "metadata": {"name": "mk", "generation": 1},
                   "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig",
                                           "name": "cfg"}},
                   "status": active("The admission check is active")}),
        ),
        (
            format!("{KUEUE}/multikueueconfigs/cfg"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
                   "metadata": {"name": "cfg"}, "spec": {"clusters": ["w1"]}}),
        ),
        (
            format!("{KUEUE}/multikueueclusters/w1"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
                   "metadata": {"name": "w1"},
                   "spec": {"clusterSource": {"kubeConfig": {"location": "w1-secret",
                                                             "locationType": "Secret"}}},
                   "status": active("Connected")}),
        ),
    ]
}

/// The ClusterQueue's `Active` condition as written: status, reason, message.
fn cq_active(env: &Env) -> (Value, Value, Value) {
    let cq = env.api.get(&format!("{KUEUE}/clusterqueues/cq")).unwrap();
    let c = cq["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Active")
        .unwrap()
        .clone();
    (
        c["status"].clone(),
        c["reason"].clone(),
        c["message"].clone(),
    )
}

#[tokio::test]
async fn a_disconnected_worker_makes_the_multikueue_queue_inactive() {
    let mut env = Env::new(objects());
    env.list_all();
    env.step().await;
    assert_eq!(cq_active(&env).0, "True");

    // Kueue's cluster reconciler loses the worker: the only cluster of the check is unusable.
    let path = format!("{KUEUE}/multikueueclusters/w1");
    env.api.modify(&path, |c| {
        c["status"]["conditions"][0] = json!({"type": "Active", "status": "False",
            "reason": "ClientConnectionFailed", "message": "no route to host",
            "lastTransitionTime": T});
    });
    env.applied(Source::Kueue(KueueKind::MultiKueueCluster), &path);
    env.step().await;
    assert_eq!(
        cq_active(&env),
        (
            json!("False"),
            json!("AdmissionCheckInactive"),
            json!("Can't admit new workloads: references inactive AdmissionCheck(s): mk.")
        )
    );

    // A second MultiKueue check on the queue: Kueue's constraint, with its reason.
    let cq = format!("{KUEUE}/clusterqueues/cq");
    env.api.modify(&path, |c| {
        c["status"]["conditions"][0]["status"] = json!("True");
    });
    env.applied(Source::Kueue(KueueKind::MultiKueueCluster), &path);
    let mut second = env.api.get(&format!("{KUEUE}/admissionchecks/mk")).unwrap();
    second["metadata"] = json!({"name": "mk2", "generation": 1});
    env.api.put(&format!("{KUEUE}/admissionchecks/mk2"), second);
    env.applied(
        Source::Kueue(KueueKind::AdmissionCheck),
        &format!("{KUEUE}/admissionchecks/mk2"),
    );
    env.api.modify(&cq, |q| {
        q["spec"]["admissionChecksStrategy"]["admissionChecks"] =
            json!([{"name": "mk"}, {"name": "mk2"}]);
    });
    env.applied(Source::Kueue(KueueKind::ClusterQueue), &cq);
    env.step().await;
    assert_eq!(
        cq_active(&env),
        (
            json!("False"),
            json!("MultipleMultiKueueAdmissionChecks"),
            json!(
                "Can't admit new workloads: Cannot use multiple MultiKueue AdmissionChecks on the same ClusterQueue, found: mk,mk2."
            )
        )
    );
    // MultiKueue's objects are read, never written.
    assert!(
        !env.api
            .requests()
            .iter()
            .any(|r| r.method != "GET" && r.uri.contains("multikueue")),
        "{:?}",
        env.lines()
    );
}
