//! The controller behind the webhooks: objects are created as the API server creates them
//! (the mutating webhook's patch applied, then stored in the double and watched).

use super::*;

fn kueue_basics(cpu: &str) -> Vec<(String, Value)> {
    vec![
        (
            format!("{KUEUE}/resourceflavors/default"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                   "metadata": {"name": "default"}, "spec": {}}),
        ),
        (
            format!("{KUEUE}/clusterqueues/cq"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                   "metadata": {"name": "cq"},
                   "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"],
                       "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}]}}),
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
    ]
}

fn collection(kinds: &[JobKind], source: Source) -> (String, String) {
    match source {
        Source::Kueue(k) => (KUEUE.into(), k.plural().into()),
        Source::Namespace => ("/api/v1".into(), "namespaces".into()),
        Source::Pod | Source::TasPod => ("/api/v1".into(), "pods".into()),
        Source::Node => ("/api/v1".into(), "nodes".into()),
        Source::Secret => ("/api/v1".into(), "secrets".into()),
        Source::ProvisioningRequest => (
            "/apis/autoscaling.x-k8s.io/v1".into(),
            "provisioningrequests".into(),
        ),
        Source::Job(i) => {
            let r = api_resource(&kinds[i]);
            let prefix = if r.group.is_empty() {
                format!("/api/{}", r.version)
            } else {
                format!("/apis/{}", r.api_version)
            };
            (prefix, r.plural.clone())
        }
    }
}

/// The Workload of the Job `pi` (the double gives it UID `uid-pi`).
fn pi_workload() -> String {
    jobs::builtin_kind("batch/v1", "Job")
        .unwrap()
        .workload_name("pi", "uid-pi", None)
}

struct Cluster {
    api: ApiServer,
    controller: Controller,
    server: Server,
}

impl Cluster {
    async fn new(objects: Vec<(String, Value)>) -> Cluster {
        let mut c = Cluster::standby(objects).await;
        c.controller.step().await;
        c
    }

    /// A replica that does not hold the Lease: every source listed, no pass run.
    async fn standby(objects: Vec<(String, Value)>) -> Cluster {
        let api = double();
        for (path, obj) in objects {
            api.put(&path, obj);
        }
        let controller = Controller::new(
            Writer::new(api.client(), Some("test".into())),
            jobs::builtin()
                .into_iter()
                .filter(|k| k.has_suspend())
                .collect(),
            true,
            Arc::new(Metrics::new("standalone")),
            Arc::new(|| NOW * 1000),
            Arc::new(|_| {}),
        );
        let webhooks = Webhooks::new(controller.kinds().to_vec(), true, controller.shared.clone());
        let server = start(webhooks).await;
        let mut c = Cluster {
            api,
            controller,
            server,
        };
        c.list_all();
        c
    }

    /// Every source listed from the double's store.
    fn list_all(&mut self) {
        let kinds = self.controller.kinds().to_vec();
        for source in self.controller.sources() {
            let (prefix, plural) = collection(&kinds, source);
            let objs: Vec<DynamicObject> = self
                .api
                .all()
                .into_iter()
                .filter(|(path, _)| {
                    path.starts_with(&prefix)
                        && path
                            .split_once(&format!("/{plural}/"))
                            .is_some_and(|(_, rest)| !rest.contains('/'))
                })
                .map(|(_, v)| serde_json::from_value(v).unwrap())
                .collect();
            self.controller.observe(Observed::Listed(source, objs));
        }
    }

    /// Creates an object as the API server does: through the mutating webhook, then stored,
    /// then seen by the controller's watch.
    async fn create(
        &mut self,
        path: &str,
        webhook: &str,
        gvk: (&str, &str, &str),
        resource: &str,
        object: Value,
        source: Source,
    ) {
        let r = self
            .server
            .review(webhook, request("CREATE", gvk, resource, &object, None))
            .await;
        let stored = self.api.put(path, admitted(&object, &r));
        self.controller.observe(Observed::Applied(
            source,
            serde_json::from_value(stored).unwrap(),
        ));
    }

    fn job_patches(&self, path: &str) -> Vec<Value> {
        self.api.patches(path)
    }
}

#[tokio::test]
async fn an_unsuspended_queued_job_goes_through_the_webhook_and_never_starts_before_admission() {
    // 1 CPU of quota; the job needs 2.
    let mut cluster = Cluster::new(kueue_basics("1")).await;
    let path = "/apis/batch/v1/namespaces/ns/jobs/pi";
    let obj = job(
        "pi",
        json!({"kueue.x-k8s.io/queue-name": "lq"}),
        Some(false),
    );
    cluster
        .create(
            path,
            "/mutate-batch-v1-job",
            JOB,
            "jobs",
            obj,
            Source::Job(0),
        )
        .await;
    assert_eq!(cluster.api.get(path).unwrap()["spec"]["suspend"], true);
    cluster.controller.step().await;
    let wl = cluster
        .api
        .get(&format!(
            "{KUEUE}/namespaces/ns/workloads/{}",
            pi_workload()
        ))
        .expect("a Workload for the job");
    assert!(wl["status"]["admission"].is_null(), "no quota for it: {wl}");
    assert_eq!(cluster.api.get(path).unwrap()["spec"]["suspend"], true);
    assert!(
        cluster.job_patches(path).is_empty(),
        "the job was never running, so it needed no suspension: {:?}",
        cluster.job_patches(path)
    );

    // Quota appears: admitted, then started.
    let cq = format!("{KUEUE}/clusterqueues/cq");
    let mut more = cluster.api.get(&cq).unwrap();
    more["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = json!("4");
    cluster.api.put(&cq, more.clone());
    cluster.controller.observe(Observed::Applied(
        Source::Kueue(KueueKind::ClusterQueue),
        serde_json::from_value(cluster.api.get(&cq).unwrap()).unwrap(),
    ));
    cluster.controller.step().await;
    let wl = cluster
        .api
        .get(&format!(
            "{KUEUE}/namespaces/ns/workloads/{}",
            pi_workload()
        ))
        .unwrap();
    assert_eq!(wl["status"]["admission"]["clusterQueue"], "cq");
    assert_eq!(cluster.api.get(path).unwrap()["spec"]["suspend"], false);
}

#[tokio::test]
async fn anyscale_style_pods_are_gated_by_the_webhook_then_released_together() {
    let mut cluster = Cluster::new(kueue_basics("4")).await;
    // Only the queue and group labels and the total-count annotation: no gate of their own.
    let pod = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "ns", "creationTimestamp": T,
                            "labels": {"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/pod-group-name": "ray-head-and-worker"},
                            "annotations": {"kueue.x-k8s.io/pod-group-total-count": "2"}},
               "spec": {"containers": [{"name": "ray", "image": "rayproject/ray", "resources": {"requests": {"cpu": "1"}}}]}})
    };
    let p0 = "/api/v1/namespaces/ns/pods/head";
    cluster
        .create(p0, "/mutate--v1-pod", POD, "pods", pod("head"), Source::Pod)
        .await;
    cluster.controller.step().await;
    let head = cluster.api.get(p0).unwrap();
    assert_eq!(
        head["spec"]["schedulingGates"],
        json!([{"name": "kueue.x-k8s.io/admission"}, {"name": "kueue.x-k8s.io/topology"}]),
        "held while its group is incomplete"
    );
    assert_eq!(head["metadata"]["labels"]["kueue.x-k8s.io/managed"], "true");

    let p1 = "/api/v1/namespaces/ns/pods/worker";
    cluster
        .create(
            p1,
            "/mutate--v1-pod",
            POD,
            "pods",
            pod("worker"),
            Source::Pod,
        )
        .await;
    cluster.controller.step().await;
    let wl = cluster
        .api
        .get(&format!(
            "{KUEUE}/namespaces/ns/workloads/ray-head-and-worker"
        ))
        .expect("the group's Workload");
    assert_eq!(wl["spec"]["podSets"][0]["count"], 2);
    assert_eq!(wl["status"]["admission"]["clusterQueue"], "cq");
    for p in [p0, p1] {
        assert_eq!(
            cluster.api.get(p).unwrap()["spec"]["schedulingGates"],
            Value::Null,
            "{p} released (no gates left: absent, as the real server stores it)"
        );
    }
}

#[tokio::test]
async fn a_standby_replica_answers_the_webhooks_from_a_current_view_and_writes_nothing() {
    let mut objects = kueue_basics("4");
    objects.push((
        format!("{KUEUE}/namespaces/team/localqueues/default"),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
               "metadata": {"name": "default", "namespace": "team"}, "spec": {"clusterQueue": "cq"}}),
    ));
    let mut cluster = Cluster::standby(objects).await;
    let metrics = Metrics::new("leader");
    let route = |c: &Cluster, path: &str| {
        let (status, _, body) =
            wasq::k8s::serve::http::route(path, "", &c.controller.shared, &metrics);
        (status.as_u16(), body)
    };
    assert_eq!(
        route(&cluster, "/readyz").0,
        503,
        "nothing listed yet is published"
    );
    cluster.controller.stand_by();
    assert_eq!(route(&cluster, "/readyz"), (200, "ok".to_string()));
    let pending = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads";
    assert_eq!(route(&cluster, pending).0, 503);

    // The view knows the namespace's `default` LocalQueue: an unlabelled Job is queued there.
    let mut obj = job("pi", json!({}), None);
    obj["metadata"]["namespace"] = json!("team");
    let r = cluster
        .server
        .review(
            "/mutate-batch-v1-job",
            request("CREATE", JOB, "jobs", &obj, None),
        )
        .await;
    let out = admitted(&obj, &r);
    assert_eq!(
        out["metadata"]["labels"]["kueue.x-k8s.io/queue-name"],
        "default"
    );
    assert_eq!(out["spec"]["suspend"], true);
    assert!(
        cluster.api.requests().is_empty(),
        "a standby writes nothing: {:?}",
        cluster.api.requests()
    );

    // Once it leads, it schedules and answers visibility queries.
    cluster.controller.step().await;
    assert_eq!(route(&cluster, pending).0, 200);
}
