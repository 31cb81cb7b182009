//! Several API doubles at once, as a MultiKueue manager sees its workers: the manager's double
//! in memory (an [`Env`], as every controller test's), each worker's served over HTTP on
//! 127.0.0.1 ([`ApiServer::listen`]) and reached by a kube client built from the kubeconfig
//! that the worker's Secret on the manager holds, the way MultiKueue's cluster reconciler
//! loads it: MultiKueueCluster → `spec.clusterSource.kubeConfig.location` → Secret
//! `kueue-system/<location>` → `data.kubeconfig` → [`Kubeconfig::from_yaml`] →
//! [`kube::Config::from_custom_kubeconfig`] → [`kube::Client`].
//!
//! Each worker requires the bearer token its Secret names (`<w>-t1` at first), as a real API
//! server would. The smoke tests here check the harness and the double's HTTP side: workers
//! listed and watched independently, a worker down and back, a token rotated.

use std::time::Duration;

use base64::Engine as _;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::DynamicObject;
use serde_json::{Value, json};
use wasq::k8s::apiserver::{ApiServer, HttpDouble};
use wasq::k8s::schema::kinds::KueueKind;

use super::{Env, KUEUE, double};

/// The namespace of MultiKueue's Secrets (Kueue's default).
const KUEUE_NS: &str = "kueue-system";
/// The origin label a manager puts on its copies (Kueue's default origin `multikueue`).
const ORIGIN: &str = "kueue.x-k8s.io/multikueue-origin=multikueue";

/// A worker cluster: its double and the listener serving it.
struct Worker {
    name: String,
    api: ApiServer,
    http: HttpDouble,
}

/// A manager and its workers.
struct Fed {
    manager: Env,
    workers: Vec<Worker>,
}

fn secret_path(worker: &str) -> String {
    format!("/api/v1/namespaces/{KUEUE_NS}/secrets/{worker}-secret")
}

/// The Secret holding `kubeconfig`, as a MultiKueue user writes it.
fn secret(worker: &str, kubeconfig: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
           "metadata": {"name": format!("{worker}-secret"), "namespace": KUEUE_NS},
           "data": {"kubeconfig": base64::engine::general_purpose::STANDARD.encode(kubeconfig)}})
}

impl Fed {
    /// A manager with a Secret and a MultiKueueCluster per worker, and the workers' doubles
    /// served on 127.0.0.1, each requiring the token `<w>-t1`.
    fn new(names: &[&str]) -> Fed {
        let mut objects = vec![(
            format!("/api/v1/namespaces/{KUEUE_NS}"),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NS}}),
        )];
        let mut workers = Vec::new();
        for &name in names {
            let api = double();
            api.put(
                "/api/v1/namespaces/ns",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}),
            );
            let http = api.listen("127.0.0.1:0").expect("a port on 127.0.0.1");
            let token = format!("{name}-t1");
            http.require_token(Some(token.clone()));
            objects.push((
                secret_path(name),
                secret(name, &http.kubeconfig(name, Some(&token))),
            ));
            objects.push((
                format!("{KUEUE}/multikueueclusters/{name}"),
                json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
                       "metadata": {"name": name},
                       "spec": {"clusterSource": {"kubeConfig": {
                           "location": format!("{name}-secret"), "locationType": "Secret"}}}}),
            ));
            workers.push(Worker {
                name: name.to_string(),
                api,
                http,
            });
        }
        Fed {
            manager: Env::new(objects),
            workers,
        }
    }

    fn worker(&self, name: &str) -> &Worker {
        self.workers
            .iter()
            .find(|w| w.name == name)
            .unwrap_or_else(|| panic!("no worker {name}"))
    }

    /// Rewrites `worker`'s Secret on the manager with a kubeconfig carrying `token`.
    fn write_secret(&self, worker: &str, token: &str) {
        let kubeconfig = self.worker(worker).http.kubeconfig(worker, Some(token));
        self.manager
            .api
            .put(&secret_path(worker), secret(worker, &kubeconfig));
    }

    /// A client for `cluster` from what the manager holds, read through the manager's API as
    /// the cluster reconciler reads it.
    async fn client(&self, cluster: &str) -> kube::Client {
        let mkc = self
            .manager
            .api
            .get(&format!("{KUEUE}/multikueueclusters/{cluster}"))
            .expect("a MultiKueueCluster");
        let location = mkc["spec"]["clusterSource"]["kubeConfig"]["location"]
            .as_str()
            .expect("a kubeconfig location");
        let secrets: Api<Secret> = Api::namespaced(self.manager.api.client(), KUEUE_NS);
        let data = secrets.get(location).await.expect("the Secret").data;
        let bytes = data.expect("data")["kubeconfig"].0.clone();
        kubeconfig_client(&String::from_utf8(bytes).expect("UTF-8")).await
    }
}

/// A client from kubeconfig YAML, through kube's own loading.
async fn kubeconfig_client(yaml: &str) -> kube::Client {
    let kc = Kubeconfig::from_yaml(yaml).expect("a kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("a client config");
    kube::Client::try_from(config).expect("a client")
}

fn workloads(client: kube::Client) -> Api<DynamicObject> {
    Api::namespaced_with(client, "ns", &KueueKind::Workload.api_resource())
}

/// A Workload copy as a manager creates it on a worker (`origin`: with the origin label).
fn copy(name: &str, origin: bool) -> Value {
    let labels = if origin {
        json!({"kueue.x-k8s.io/multikueue-origin": "multikueue"})
    } else {
        json!({})
    };
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
           "metadata": {"name": name, "namespace": "ns", "labels": labels},
           "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1,
               "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c",
                   "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}})
}

fn put_copy(w: &Worker, name: &str, origin: bool) {
    w.api.put(
        &format!("{KUEUE}/namespaces/ns/workloads/{name}"),
        copy(name, origin),
    );
}

fn names(list: &kube::core::ObjectList<DynamicObject>) -> Vec<String> {
    list.items
        .iter()
        .filter_map(|o| o.metadata.name.clone())
        .collect()
}

type Events = futures::stream::BoxStream<'static, kube::Result<WatchEvent<DynamicObject>>>;

/// A watch of the copies (the origin label), from `rv`.
async fn watch_copies(client: kube::Client, rv: &str) -> Events {
    workloads(client)
        .watch(
            &WatchParams::default().labels(ORIGIN).disable_bookmarks(),
            rv,
        )
        .await
        .expect("a watch")
        .boxed()
}

/// The next event or end of `stream`, within 5 s.
async fn next(stream: &mut Events) -> Option<kube::Result<WatchEvent<DynamicObject>>> {
    tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("an answer in time")
}

fn added(event: Option<kube::Result<WatchEvent<DynamicObject>>>) -> String {
    match event {
        Some(Ok(WatchEvent::Added(o))) => o.metadata.name.unwrap_or_default(),
        other => panic!("not an ADDED event: {other:?}"),
    }
}

fn is_api_error(e: &kube::Error, code: u16, reason: &str) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == code && s.reason == reason)
}

#[tokio::test]
async fn a_client_from_each_secret_lists_and_watches_its_own_worker() {
    let fed = Fed::new(&["w1", "w2"]);
    let (w1, w2) = (fed.worker("w1"), fed.worker("w2"));
    assert_ne!(w1.http.addr(), w2.http.addr());
    put_copy(w1, "a", true);
    put_copy(w1, "local", false);
    put_copy(w2, "b", true);

    let (c1, c2) = (fed.client("w1").await, fed.client("w2").await);
    let by_origin = ListParams::default().labels(ORIGIN);
    let l1 = workloads(c1.clone()).list(&by_origin).await.unwrap();
    let l2 = workloads(c2.clone()).list(&by_origin).await.unwrap();
    assert_eq!(
        (names(&l1), names(&l2)),
        (vec!["a".into()], vec!["b".into()])
    );

    let rv1 = l1.metadata.resource_version.unwrap();
    let rv2 = l2.metadata.resource_version.unwrap();
    let mut s1 = watch_copies(c1, &rv1).await;
    let mut s2 = watch_copies(c2, &rv2).await;
    put_copy(w2, "b2", true);
    put_copy(w1, "a2", false); // not a copy: unseen
    put_copy(w1, "a3", true);
    assert_eq!(added(next(&mut s2).await), "b2");
    assert_eq!(added(next(&mut s1).await), "a3");
    assert_eq!((w1.api.open_watches(), w2.api.open_watches()), (1, 1));
    // Every request reached its own worker, authenticated.
    assert_eq!((w1.http.unauthorized(), w2.http.unauthorized()), (0, 0));
    for w in [w1, w2] {
        let counts = w.api.counts();
        assert_eq!(
            counts[&("list".to_string(), "workloads".to_string())],
            1,
            "{}",
            w.name
        );
        assert_eq!(
            counts[&("watch".to_string(), "workloads".to_string())],
            1,
            "{}",
            w.name
        );
    }
}

#[tokio::test]
async fn a_worker_down_fails_its_lists_and_ends_its_watches_until_it_is_back() {
    let fed = Fed::new(&["w1", "w2"]);
    let (w1, w2) = (fed.worker("w1"), fed.worker("w2"));
    put_copy(w1, "a", true);
    let (c1, c2) = (fed.client("w1").await, fed.client("w2").await);
    let mut s1 = watch_copies(c1.clone(), "0").await;
    assert_eq!(added(next(&mut s1).await), "a");
    let mut s2 = watch_copies(c2.clone(), "0").await;

    w1.http.set_down(true);
    // w1's watch fails (its stream cut) and ends; w2's stays open.
    loop {
        match next(&mut s1).await {
            None => break,
            Some(Err(e)) => assert!(!matches!(e, kube::Error::Api(_)), "{e}"),
            Some(Ok(ev)) => panic!("an event while down: {ev:?}"),
        }
    }
    match workloads(c1.clone()).list(&ListParams::default()).await {
        Err(kube::Error::Api(s)) => panic!("an API answer while down: {s:?}"),
        Err(_) => {}
        Ok(l) => panic!("listed while down: {:?}", names(&l)),
    }
    assert!(w1.http.refused() >= 1);
    assert!(
        workloads(c2.clone())
            .list(&ListParams::default())
            .await
            .is_ok()
    );
    put_copy(w2, "b", true);
    assert_eq!(added(next(&mut s2).await), "b");

    // Back: the same client lists and watches again.
    w1.http.set_down(false);
    let list = workloads(c1.clone())
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(names(&list), ["a"]);
    let mut s1 = watch_copies(c1, &list.metadata.resource_version.unwrap()).await;
    put_copy(w1, "a2", true);
    assert_eq!(added(next(&mut s1).await), "a2");
}

#[tokio::test]
async fn a_rotated_token_is_refused_until_the_secret_is_rewritten() {
    let fed = Fed::new(&["w1", "w2"]);
    let w1 = fed.worker("w1");
    let old = fed.client("w1").await;
    assert!(
        workloads(old.clone())
            .list(&ListParams::default())
            .await
            .is_ok()
    );

    // The worker's credentials are rotated; the Secret still holds the old token.
    w1.http.require_token(Some("w1-t2".into()));
    let e = workloads(old.clone())
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert!(is_api_error(&e, 401, "Unauthorized"), "{e}");
    let e = workloads(fed.client("w1").await)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert!(is_api_error(&e, 401, "Unauthorized"), "{e}");
    assert_eq!(w1.http.unauthorized(), 2);
    // w2 is another cluster, with its own token.
    let c2 = fed.client("w2").await;
    assert!(workloads(c2).list(&ListParams::default()).await.is_ok());

    // The Secret rewritten: a client from it is accepted; the old one is still refused.
    fed.write_secret("w1", "w1-t2");
    let new = fed.client("w1").await;
    assert!(workloads(new).list(&ListParams::default()).await.is_ok());
    let e = workloads(old)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert!(is_api_error(&e, 401, "Unauthorized"), "{e}");
    assert_eq!(w1.http.unauthorized(), 3);
}
