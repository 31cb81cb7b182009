//! MultiKueue's kinds in the controller against the API double: MultiKueueClusters and
//! MultiKueueConfigs are listed and watched with the other Kueue kinds, and whether a
//! MultiKueue check's clusters are connected decides whether its ClusterQueue is active, with
//! Kueue's words. With `--no-multikueue` (a controller not set up as the manager) nothing is
//! written to MultiKueue's objects; as the manager, a cluster counts as connected only once the
//! manager says so.

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

#[tokio::test]
async fn as_the_manager_a_cluster_not_yet_connected_is_inactive() {
    let mut objects = objects();
    let cluster = objects
        .iter_mut()
        .find(|(p, _)| p.ends_with("/multikueueclusters/w1"))
        .unwrap();
    cluster.1.as_object_mut().unwrap().remove("status");
    // A worker nothing listens for: the first attempt fails.
    let kubeconfig = wasq::k8s::apiserver::http::kubeconfig("w1", "http://127.0.0.1:1", Some("t"));
    objects.push((
        "/api/v1/namespaces/kueue-system/secrets/w1-secret".into(),
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "w1-secret", "namespace": "kueue-system"},
               "data": {"kubeconfig": base64::Engine::encode(
                   &base64::engine::general_purpose::STANDARD, kubeconfig)}}),
    ));
    let mut env = Env::new(objects);
    env.controller
        .set_multikueue(wasq::k8s::multikueue::Options::default());
    env.list_all();
    env.step().await;
    // Still connecting: nothing written, and the cluster is not counted as connected.
    assert_eq!(cq_active(&env).0, "False");
    assert_eq!(cq_active(&env).1, "AdmissionCheckInactive");
    let path = format!("{KUEUE}/multikueueclusters/w1");
    assert!(env.api.get(&path).unwrap()["status"].is_null());

    // The attempt fails: Kueue's reason, with the attempts.
    let start = std::time::Instant::now();
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        env.step().await;
        let c = env.api.get(&path).unwrap()["status"]["conditions"][0].clone();
        if c["reason"] == "ClientConnectionFailed" {
            let message = c["message"].as_str().unwrap();
            assert!(
                message.ends_with(
                    "; connection attempts: 1, next connection attempt: 2026-01-01T00:00:05Z"
                ),
                "{message}"
            );
            assert_eq!(c["status"], "False");
            break;
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(5), "{c}");
    }
    let writes: Vec<_> = env
        .api
        .requests()
        .into_iter()
        .filter(|r| r.method != "GET" && r.uri.contains("/multikueueclusters/"))
        .map(|r| r.uri)
        .collect();
    assert_eq!(writes.len(), 1, "{writes:?}");
    // The check's Active condition, as Kueue's MultiKueue AdmissionCheck reconciler writes it:
    // its only cluster is not connected.
    let ac = env.api.get(&format!("{KUEUE}/admissionchecks/mk")).unwrap();
    let c = &ac["status"]["conditions"][0];
    assert_eq!(
        (
            &c["status"],
            &c["reason"],
            &c["message"],
            &c["observedGeneration"]
        ),
        (
            &json!("False"),
            &json!("NoUsableClusters"),
            &json!("Inactive clusters: [w1]"),
            &json!(1)
        )
    );
    let ac_writes = env
        .api
        .requests()
        .into_iter()
        .filter(|r| r.method == "PATCH" && r.uri.contains("/admissionchecks/mk/status"))
        .count();
    assert_eq!(ac_writes, 1, "written once, when it changed");
    assert!(
        writes[0].starts_with(&format!("{KUEUE}/multikueueclusters/w1/status?"))
            && writes[0].contains("fieldManager=kueue.x-k8s.io%2Fmultikueue"),
        "{writes:?}"
    );
}
