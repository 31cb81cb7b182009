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
//! listed and watched independently, a worker down and back, a token rotated. Then the
//! manager's MultiKueueCluster reconciler ([`wasq::k8s::multikueue`]) against them: the
//! `Active` condition it writes for a worker connected, down, re-credentialed or refused.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::DynamicObject;
use serde_json::{Value, json};
use wasq::k8s::apiserver::{ApiServer, HttpDouble};
use wasq::k8s::schema::kinds::KueueKind;
use wasq::k8s::sync::mirror::{Observed, Source};

use super::{Env, KUEUE, NOW, double};

/// How long a test waits for what it expects, in wall time: generous for a loaded CI machine
/// (the tests poll; none sleeps it out).
pub(super) const WAIT: Duration = Duration::from_secs(20);

/// The namespace of MultiKueue's Secrets (Kueue's default).
pub(super) const KUEUE_NS: &str = "kueue-system";
/// The origin label a manager puts on its copies (Kueue's default origin `multikueue`).
const ORIGIN: &str = "kueue.x-k8s.io/multikueue-origin=multikueue";

/// A worker cluster: its double and the listener serving it.
pub(super) struct Worker {
    pub(super) name: String,
    pub(super) api: ApiServer,
    pub(super) http: HttpDouble,
}

/// A manager and its workers.
pub(super) struct Fed {
    pub(super) manager: Env,
    pub(super) workers: Vec<Worker>,
    /// The workers that run wasq: its controller on their double.
    pub(super) wasq_workers: Vec<Env>,
    /// The manager controller's clock (ms), starting at [`NOW`].
    pub(super) clock: Arc<AtomicI64>,
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
        Fed::with_objects(names, Vec::new())
    }

    /// [`Fed::new`], with `manager_objects` on the manager too.
    pub(super) fn with_objects(names: &[&str], manager_objects: Vec<(String, Value)>) -> Fed {
        Fed::with_hook(names, manager_objects, Arc::new(|_| {}))
    }

    /// [`Fed::with_objects`], the manager's policies bound by `configure`.
    pub(super) fn with_hook(
        names: &[&str],
        manager_objects: Vec<(String, Value)>,
        configure: wasq::k8s::sync::core::Configure,
    ) -> Fed {
        let mut objects = manager_objects;
        objects.push((
            format!("/api/v1/namespaces/{KUEUE_NS}"),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NS}}),
        ));
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
        let clock = Arc::new(AtomicI64::new(NOW));
        let c = clock.clone();
        Fed {
            manager: Env::with_hook(
                objects,
                Arc::new(move || c.load(Ordering::SeqCst)),
                configure,
            ),
            workers,
            wasq_workers: Vec::new(),
            clock,
        }
    }

    /// `worker` runs wasq (on the federation's clock), with `objects` (its queues).
    pub(super) fn run_wasq(&mut self, worker: &str, objects: Vec<(String, Value)>) {
        let api = self.worker(worker).api.clone();
        for (path, obj) in objects {
            api.put(&path, obj);
        }
        let c = self.clock.clone();
        let mut env = Env::on(
            api,
            Arc::new(move || c.load(Ordering::SeqCst)),
            Arc::new(|_| {}),
        );
        env.list_all();
        self.wasq_workers.push(env);
    }

    /// A pass of every wasq worker, after listing what changed on its cluster (the tests'
    /// controllers run no watchers).
    pub(super) async fn step_workers(&mut self) {
        for env in &mut self.wasq_workers {
            env.list_all();
            env.step().await;
        }
    }

    pub(super) fn worker(&self, name: &str) -> &Worker {
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

    /// [`Fed::write_secret`], and the manager's watch event for it.
    fn rotate(&mut self, worker: &str, token: &str) {
        self.write_secret(worker, token);
        self.manager.applied(Source::Secret, &secret_path(worker));
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

/// The next event or end of `stream`, within [`WAIT`].
async fn next(stream: &mut Events) -> Option<kube::Result<WatchEvent<DynamicObject>>> {
    tokio::time::timeout(WAIT, stream.next())
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

// ---------------------------------------------------------------------------------------------
// The manager's MultiKueueCluster reconciler.

impl Fed {
    /// The manager running as a MultiKueue manager (Kueue's default options), every source
    /// listed.
    pub(super) fn start_manager(&mut self) {
        self.start_manager_with(wasq::k8s::multikueue::Options::default());
    }

    fn start_manager_with(&mut self, options: wasq::k8s::multikueue::Options) {
        self.manager.controller.set_multikueue(options);
        self.manager.list_all();
    }

    /// Points `cluster`'s MultiKueueCluster at a kubeconfig file, and takes the change in.
    fn use_path(&mut self, cluster: &str, location: &str) {
        let path = format!("{KUEUE}/multikueueclusters/{cluster}");
        self.manager.api.modify(&path, |c| {
            c["spec"]["clusterSource"]["kubeConfig"] =
                json!({"location": location, "locationType": "Path"});
        });
        self.manager.applied(
            wasq::k8s::sync::mirror::Source::Kueue(KueueKind::MultiKueueCluster),
            &path,
        );
    }

    pub(super) fn advance(&self, ms: i64) {
        self.clock.fetch_add(ms, Ordering::SeqCst);
    }

    /// `cluster`'s `Active` condition on the manager: status, reason, message.
    pub(super) fn active(&self, cluster: &str) -> Option<(String, String, String)> {
        let mkc = self
            .manager
            .api
            .get(&format!("{KUEUE}/multikueueclusters/{cluster}"))?;
        let c = mkc["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "Active")?
            .clone();
        let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
        Some((s("status"), s("reason"), s("message")))
    }

    /// Manager passes, 10 ms apart so that sessions report, until `cluster`'s `Active`
    /// condition satisfies `want` (within [`WAIT`]); returns it.
    async fn until_active(
        &mut self,
        cluster: &str,
        want: impl Fn(&(String, String, String)) -> bool,
    ) -> (String, String, String) {
        let start = Instant::now();
        loop {
            self.manager.step().await;
            if let Some(a) = self.active(cluster).filter(|a| want(a)) {
                return a;
            }
            assert!(
                start.elapsed() < WAIT,
                "{cluster}: Active is {:?}",
                self.active(cluster)
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Manager passes for `wall` of wall time (sessions report meanwhile).
    pub(super) async fn passes(&mut self, wall: Duration) {
        let start = Instant::now();
        while start.elapsed() < wall {
            self.manager.step().await;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The MultiKueueCluster status writes on the manager, as `(uri, Active condition)`.
    fn active_writes(&self, cluster: &str) -> Vec<(String, Value)> {
        self.manager
            .api
            .requests()
            .into_iter()
            .filter(|r| {
                r.method == "PATCH"
                    && r.uri
                        .starts_with(&format!("{KUEUE}/multikueueclusters/{cluster}/status"))
            })
            .map(|r| {
                let active = r.body["status"]["conditions"]
                    .as_array()
                    .and_then(|cs| cs.iter().find(|c| c["type"] == "Active").cloned())
                    .unwrap_or_default();
                (r.uri, active)
            })
            .collect()
    }
}

fn connected() -> impl Fn(&(String, String, String)) -> bool {
    |a| *a == ("True".into(), "Active".into(), "Connected".into())
}

fn reason(r: &'static str) -> impl Fn(&(String, String, String)) -> bool {
    move |a| a.0 == "False" && a.1 == r
}

/// A kubeconfig for `worker` with `cluster_extra` added to its cluster entry.
fn kubeconfig_with(w: &Worker, token: &str, cluster_extra: &str) -> String {
    w.http.kubeconfig(&w.name, Some(token)).replace(
        "  cluster:\n    server:",
        &format!("  cluster:\n    {cluster_extra}\n    server:"),
    )
}

#[tokio::test]
async fn each_connected_worker_is_active_as_kueue_writes_it() {
    let mut fed = Fed::new(&["w1", "w2"]);
    put_copy(fed.worker("w1"), "a", true);
    fed.start_manager();
    fed.until_active("w1", connected()).await;
    fed.until_active("w2", connected()).await;

    let writes = fed.active_writes("w1");
    assert_eq!(writes.len(), 1, "{writes:?}");
    let (uri, c) = &writes[0];
    assert!(
        uri.contains("fieldManager=kueue.x-k8s.io%2Fmultikueue"),
        "{uri}"
    );
    assert_eq!(c["lastTransitionTime"], "2026-01-01T00:00:00Z");
    // Each worker was listed and is watched with the origin label, authenticated.
    for w in [fed.worker("w1"), fed.worker("w2")] {
        assert_eq!(w.http.unauthorized(), 0);
        let lists: Vec<_> = w
            .api
            .requests()
            .into_iter()
            .filter(|r| {
                r.method == "GET"
                    && (r.uri.contains("/workloads?")
                        || r.uri.contains("/batch/v1/jobs?")
                        || r.uri.contains("/api/v1/pods?"))
            })
            .map(|r| r.uri)
            .collect();
        assert_eq!(lists.len(), 6, "a list and a watch of each kind: {lists:?}");
        assert!(
            lists.iter().all(
                |u| u.contains("labelSelector=kueue.x-k8s.io%2Fmultikueue-origin%3Dmultikueue")
            ),
            "{lists:?}"
        );
        // The copies, the remote Jobs and pods, and the worker's queues.
        assert_eq!(w.api.open_watches(), 5, "{}", w.name);
    }

    // The Secrets come from the manager's watch, not from requests of the reconciler.
    assert!(
        !fed.manager
            .api
            .requests()
            .iter()
            .any(|r| r.uri.contains("/secrets")),
    );
    // Passes with nothing new write nothing more.
    fed.advance(3_000);
    fed.passes(Duration::from_millis(100)).await;
    assert_eq!(fed.active_writes("w1").len(), 1);
    assert_eq!(fed.active_writes("w2").len(), 1);
}

#[tokio::test]
async fn a_worker_down_fails_with_kueues_attempts_and_backs_off_until_it_is_back() {
    let mut fed = Fed::new(&["w1", "w2"]);
    fed.start_manager();
    fed.until_active("w1", connected()).await;
    fed.until_active("w2", connected()).await;

    fed.worker("w1").http.set_down(true);
    // The watch drops, the reconnect at once is refused: attempt 1, next in 5 s.
    let (_, _, message) = fed
        .until_active("w1", reason("ClientConnectionFailed"))
        .await;
    assert!(
        message
            .ends_with("; connection attempts: 1, next connection attempt: 2026-01-01T00:00:05Z"),
        "{message}"
    );
    let refused = fed.worker("w1").http.refused();
    assert!(refused >= 1);
    // Before the backoff ends, no attempt.
    fed.advance(4_000);
    fed.passes(Duration::from_millis(100)).await;
    assert_eq!(fed.worker("w1").http.refused(), refused);
    // At 5 s, attempt 2: next in 10 s.
    fed.advance(1_000);
    let (_, _, message) = fed
        .until_active("w1", |a| a.2.contains("connection attempts: 2"))
        .await;
    assert!(
        message
            .ends_with("; connection attempts: 2, next connection attempt: 2026-01-01T00:00:15Z"),
        "{message}"
    );
    assert_eq!(fed.active("w2").unwrap().0, "True");

    // Back: connected at the next attempt.
    fed.worker("w1").http.set_down(false);
    fed.advance(10_000);
    fed.until_active("w1", connected()).await;
    let statuses: Vec<_> = fed
        .active_writes("w1")
        .iter()
        .map(|(_, c)| c["status"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(statuses, ["True", "False", "False", "True"]);
}

#[tokio::test]
async fn a_rotated_secret_reconnects_at_once_with_the_new_token() {
    let mut fed = Fed::new(&["w1"]);
    // The worker's credentials rotated before the Secret: refused.
    fed.worker("w1").http.require_token(Some("w1-t2".into()));
    fed.start_manager();
    let (_, _, message) = fed
        .until_active("w1", reason("ClientConnectionFailed"))
        .await;
    assert!(message.contains("Unauthorized"), "{message}");
    assert!(
        message
            .ends_with("; connection attempts: 1, next connection attempt: 2026-01-01T00:00:05Z"),
        "{message}"
    );

    // The Secret rewritten (its watch event): connected without waiting out the backoff.
    fed.rotate("w1", "w1-t2");

    fed.until_active("w1", connected()).await;

    // Rotated again while connected: a new session with the new token; Active stays True.
    let w1 = fed.worker("w1");
    w1.http.require_token(Some("w1-t3".into()));
    let lists = |w: &Worker| w.api.counts()[&("list".to_string(), "workloads".to_string())];
    let before = lists(w1);
    fed.rotate("w1", "w1-t3");

    let start = Instant::now();
    while lists(fed.worker("w1")) == before {
        assert!(start.elapsed() < WAIT, "no new list");
        fed.manager.step().await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    fed.passes(Duration::from_millis(100)).await;
    assert_eq!(fed.active("w1"), Some(connected_tuple()));
    assert_eq!(fed.active_writes("w1").len(), 2, "False, then True only");
}

fn connected_tuple() -> (String, String, String) {
    ("True".into(), "Active".into(), "Connected".into())
}

#[tokio::test]
async fn an_insecure_or_missing_kubeconfig_is_refused_with_kueues_reason() {
    let mut fed = Fed::new(&["w1"]);
    fed.start_manager();
    fed.until_active("w1", connected()).await;

    let insecure = kubeconfig_with(fed.worker("w1"), "w1-t1", "insecure-skip-tls-verify: true");
    fed.manager
        .api
        .put(&secret_path("w1"), secret("w1", &insecure));
    fed.manager.applied(Source::Secret, &secret_path("w1"));
    let a = fed.until_active("w1", reason("InsecureKubeConfig")).await;
    assert_eq!(
        a.2,
        "load client config failed: insecure TLS verification is not allowed for cluster w1"
    );

    let gone = fed.manager.api.delete(&secret_path("w1")).unwrap();
    fed.manager.controller.observe(Observed::Deleted(
        Source::Secret,
        serde_json::from_value(gone).unwrap(),
    ));
    let a = fed.until_active("w1", reason("BadKubeConfig")).await;
    assert_eq!(
        a.2,
        "load client config failed: secrets \"w1-secret\" not found"
    );

    // Restored: connected again.
    fed.rotate("w1", "w1-t1");

    fed.until_active("w1", connected()).await;
}

#[tokio::test]
async fn a_kubeconfig_file_must_be_under_the_allowed_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let dir = root.join("kubeconfigs");
    std::fs::create_dir(&dir).unwrap();
    let mut fed = Fed::new(&["w1"]);
    let kubeconfig = fed.worker("w1").http.kubeconfig("w1", Some("w1-t1"));
    std::fs::write(dir.join("w1.yaml"), &kubeconfig).unwrap();
    std::fs::write(root.join("outside.yaml"), &kubeconfig).unwrap();
    let (d, r) = (dir.display().to_string(), root.display().to_string());
    fed.use_path("w1", &format!("{d}/w1.yaml"));
    fed.start_manager_with(wasq::k8s::multikueue::Options {
        kubeconfig_dir: dir.clone(),
        ..Default::default()
    });
    fed.until_active("w1", connected()).await;

    fed.use_path("w1", &format!("{d}/../outside.yaml"));
    let a = fed.until_active("w1", reason("BadKubeConfig")).await;
    assert_eq!(
        a.2,
        format!(
            "load client config failed: kubeconfig path is not under the allowed prefix: \"{r}/outside.yaml\" is not under \"{d}\""
        )
    );
    fed.use_path("w1", "kubeconfigs/w1.yaml");
    let a = fed
        .until_active("w1", |a| a.2.contains("must be absolute"))
        .await;
    assert_eq!(
        a,
        (
            "False".into(),
            "BadKubeConfig".into(),
            "load client config failed: kubeconfig path is not under the allowed prefix: path must be absolute".into()
        )
    );
    // A file rewritten in place is read again within a second: a rotation.
    fed.use_path("w1", &format!("{d}/w1.yaml"));
    fed.until_active("w1", connected()).await;
    fed.worker("w1").http.require_token(Some("w1-t2".into()));
    std::fs::write(
        dir.join("w1.yaml"),
        fed.worker("w1").http.kubeconfig("w1", Some("w1-t2")),
    )
    .unwrap();
    let lists =
        |f: &Fed| f.worker("w1").api.counts()[&("list".to_string(), "workloads".to_string())];
    let before = lists(&fed);
    fed.advance(1_000);
    let start = Instant::now();
    while lists(&fed) == before {
        assert!(start.elapsed() < WAIT, "no new list");
        fed.manager.step().await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    fed.passes(Duration::from_millis(100)).await;
    assert_eq!(fed.active("w1"), Some(connected_tuple()));
    assert_eq!(fed.worker("w1").http.unauthorized(), 0);
}

#[tokio::test]
async fn the_manager_watches_secrets_in_kueues_namespace_only() {
    let mut fed = Fed::new(&["w1"]);
    fed.manager
        .controller
        .set_multikueue(wasq::k8s::multikueue::Options::default());
    let mut rx =
        wasq::k8s::controller::spawn_watchers(&fed.manager.api.client(), &fed.manager.controller);
    // Listed as the other tests do: the double serves none of the job kinds but batch Jobs,
    // whose watchers never list. Then passes on the watchers' events, as `wasq controller`
    // runs them.
    fed.manager.list_all();
    async fn run_until(
        fed: &mut Fed,
        rx: &mut tokio::sync::mpsc::UnboundedReceiver<Observed>,
        want: impl Fn(&Fed) -> bool,
    ) {
        let start = Instant::now();
        while !want(fed) {
            assert!(start.elapsed() < WAIT, "{:?}", fed.active("w1"));
            while let Ok(ev) = rx.try_recv() {
                fed.manager.controller.observe(ev);
            }
            fed.manager.step().await;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    run_until(&mut fed, &mut rx, |f| {
        f.active("w1") == Some(connected_tuple())
    })
    .await;
    let secrets: Vec<String> = fed
        .manager
        .api
        .requests()
        .into_iter()
        .filter(|r| r.uri.contains("secrets"))
        .map(|r| r.line())
        .collect();
    assert!(!secrets.is_empty());
    assert!(
        secrets
            .iter()
            .all(|l| l.starts_with("GET /api/v1/namespaces/kueue-system/secrets")),
        "{secrets:?}"
    );

    // Rotated: the Secret's watch event alone (the clock never moves) brings a new session.
    fed.worker("w1").http.require_token(Some("w1-t2".into()));
    fed.write_secret("w1", "w1-t2");
    let lists =
        |f: &Fed| f.worker("w1").api.counts()[&("list".to_string(), "workloads".to_string())];
    let before = lists(&fed);
    run_until(&mut fed, &mut rx, move |f| lists(f) > before).await;
    fed.passes(Duration::from_millis(100)).await;
    assert_eq!(fed.active("w1"), Some(connected_tuple()));
    assert_eq!(fed.worker("w1").http.unauthorized(), 0);
}

#[tokio::test]
async fn a_deleted_cluster_loses_its_client() {
    let mut fed = Fed::new(&["w1", "w2"]);
    fed.start_manager();
    fed.until_active("w1", connected()).await;
    fed.until_active("w2", connected()).await;
    let mkc = fed
        .manager
        .api
        .get(&format!("{KUEUE}/multikueueclusters/w1"))
        .unwrap();
    let c = &mkc["status"]["conditions"][0];
    assert!(mkc["metadata"]["generation"].is_i64(), "{mkc}");
    assert_eq!(c["observedGeneration"], mkc["metadata"]["generation"]);

    let gone = fed
        .manager
        .api
        .delete(&format!("{KUEUE}/multikueueclusters/w1"))
        .unwrap();
    fed.manager.controller.observe(Observed::Deleted(
        Source::Kueue(KueueKind::MultiKueueCluster),
        serde_json::from_value(gone).unwrap(),
    ));
    fed.manager.step().await;
    let mk = fed.manager.controller.multikueue().unwrap();
    assert!(mk.remote("w1").is_none());
    assert!(mk.remote("w2").unwrap().conn.connected());
}
