//! The double against the real kube client: the API server's documented behaviour for the
//! verbs, watches and failures wasq depends on.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::watcher;
use serde_json::{Value, json};

use super::{ApiServer, Config, Resource};

fn cm(name: &str, labels: Value) -> ConfigMap {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns", "labels": labels}, "data": {"k": "v"}}))
    .unwrap()
}

fn rv_of<K: kube::Resource>(o: &K) -> u64 {
    o.meta()
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap()
}

fn code(e: kube::Error) -> (u16, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.reason),
        other => panic!("not an API error: {other}"),
    }
}

fn server() -> (ApiServer, kube::Client) {
    let api = ApiServer::new(Config {
        bookmark_interval: Duration::from_millis(50),
        ..Config::default()
    });
    let client = api.client();
    (api, client)
}

#[tokio::test]
async fn every_write_bumps_one_global_resource_version_and_stale_ones_conflict() {
    let (_s, client) = server();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "ns");
    let a = cms
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap();
    let b = cms
        .create(&PostParams::default(), &cm("b", json!({})))
        .await
        .unwrap();
    assert_eq!(rv_of(&b), rv_of(&a) + 1);
    assert_eq!(a.metadata.uid.as_deref(), Some("uid-a"));
    assert!(a.metadata.creation_timestamp.is_some());
    let again = cms
        .create(&PostParams::default(), &cm("a", json!({})))
        .await;
    assert_eq!(code(again.unwrap_err()), (409, "AlreadyExists".into()));

    // A merge patch naming the current resourceVersion applies; a stale one conflicts.
    let stale = a.metadata.resource_version.clone().unwrap();
    let body = json!({"metadata": {"resourceVersion": stale}, "data": {"k": "w"}});
    let a2 = cms
        .patch("a", &PatchParams::default(), &Patch::Merge(&body))
        .await
        .unwrap();
    assert_eq!(rv_of(&a2), rv_of(&b) + 1);
    let e = cms
        .patch("a", &PatchParams::default(), &Patch::Merge(&body))
        .await
        .unwrap_err();
    assert_eq!(code(e), (409, "Conflict".into()));
    // PUT with a stale resourceVersion conflicts too.
    let e = cms
        .replace("a", &PostParams::default(), &a)
        .await
        .unwrap_err();
    assert_eq!(code(e), (409, "Conflict".into()));
    // A write that changes nothing keeps the resourceVersion.
    let same = json!({"data": {"k": "w"}});
    let a3 = cms
        .patch("a", &PatchParams::default(), &Patch::Merge(&same))
        .await
        .unwrap();
    assert_eq!(rv_of(&a3), rv_of(&a2));
    // A failed JSON Patch `test` is 422 Invalid.
    let ops: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/data/k", "value": "nope"},
        {"op": "replace", "path": "/data/k", "value": "x"}]))
    .unwrap();
    let e = cms
        .patch("a", &PatchParams::default(), &Patch::Json::<()>(ops))
        .await
        .unwrap_err();
    assert_eq!(code(e), (422, "Invalid".into()));
    let e = cms.get("zzz").await.unwrap_err();
    assert_eq!(code(e), (404, "NotFound".into()));
}

#[tokio::test]
async fn generation_counts_spec_changes_and_status_is_a_subresource() {
    let (_s, client) = server();
    let jobs: Api<Job> = Api::namespaced(client, "ns");
    let job: Job = serde_json::from_value(json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {"suspend": true, "template": {"spec": {"containers": []}}},
        "status": {"active": 3}}))
    .unwrap();
    let j = jobs.create(&PostParams::default(), &job).await.unwrap();
    assert_eq!(j.metadata.generation, Some(1));
    assert!(j.status.is_none(), "status is dropped on create");
    let st = json!({"status": {"active": 2}, "spec": {"suspend": false}});
    let j = jobs
        .patch_status("j", &PatchParams::default(), &Patch::Merge(&st))
        .await
        .unwrap();
    assert_eq!(j.status.unwrap().active, Some(2));
    assert_eq!(
        j.spec.unwrap().suspend,
        Some(true),
        "a status write changes only status"
    );
    assert_eq!(j.metadata.generation, Some(1));
    let spec = json!({"spec": {"suspend": false}, "status": {"active": 9}});
    let j = jobs
        .patch("j", &PatchParams::default(), &Patch::Merge(&spec))
        .await
        .unwrap();
    assert_eq!(j.metadata.generation, Some(2));
    assert_eq!(
        j.status.unwrap().active,
        Some(2),
        "an object write ignores status"
    );
}

#[tokio::test]
async fn lists_page_over_one_snapshot_and_select_by_label() {
    let (_s, client) = server();
    let cms: Api<ConfigMap> = Api::namespaced(client, "ns");
    for (i, name) in ["a", "b", "c", "d", "e"].into_iter().enumerate() {
        let labels = if i % 2 == 0 {
            json!({"even": "yes"})
        } else {
            json!({})
        };
        cms.create(&PostParams::default(), &cm(name, labels))
            .await
            .unwrap();
    }
    let first = cms.list(&ListParams::default().limit(2)).await.unwrap();
    assert_eq!(first.items.len(), 2);
    let token = first.metadata.continue_.clone().unwrap();
    // Writes between pages are not seen by the next page.
    cms.delete("e", &DeleteParams::default()).await.unwrap();
    cms.create(&PostParams::default(), &cm("f", json!({})))
        .await
        .unwrap();
    let second = cms
        .list(&ListParams::default().limit(10).continue_token(&token))
        .await
        .unwrap();
    let names: Vec<String> = second
        .items
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["c", "d", "e"]);
    assert_eq!(
        second.metadata.resource_version,
        first.metadata.resource_version
    );
    let even = cms
        .list(&ListParams::default().labels("even"))
        .await
        .unwrap();
    assert_eq!(even.items.len(), 2, "a, c (e is gone)");
    let odd = cms
        .list(&ListParams::default().labels("!even"))
        .await
        .unwrap();
    assert_eq!(odd.items.len(), 3);
    let eq = cms
        .list(
            &ListParams::default()
                .labels("even=yes")
                .fields("metadata.name=c"),
        )
        .await
        .unwrap();
    assert_eq!(eq.items.len(), 1);
}

async fn next_event(
    stream: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin),
) -> WatchEvent<ConfigMap> {
    tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("an event in time")
        .expect("the stream is open")
        .expect("an event")
}

#[tokio::test]
async fn watches_resume_after_a_resource_version_with_bookmarks() {
    let (_s, client) = server();
    let cms: Api<ConfigMap> = Api::namespaced(client, "ns");
    cms.create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap();
    let b = cms
        .create(&PostParams::default(), &cm("b", json!({})))
        .await
        .unwrap();
    let from = b.metadata.resource_version.clone().unwrap();
    let body = json!({"data": {"k": "changed"}});
    cms.patch("a", &PatchParams::default(), &Patch::Merge(&body))
        .await
        .unwrap();
    let mut stream = cms
        .watch(&WatchParams::default(), &from)
        .await
        .unwrap()
        .boxed();
    match next_event(&mut stream).await {
        WatchEvent::Modified(o) => assert_eq!(o.metadata.name.as_deref(), Some("a")),
        other => panic!("{other:?}"),
    }
    let c = cms
        .create(&PostParams::default(), &cm("c", json!({})))
        .await
        .unwrap();
    match next_event(&mut stream).await {
        WatchEvent::Added(o) => assert_eq!(o.metadata.name.as_deref(), Some("c")),
        other => panic!("{other:?}"),
    }
    cms.delete("c", &DeleteParams::default()).await.unwrap();
    match next_event(&mut stream).await {
        WatchEvent::Deleted(o) => assert_eq!(rv_of(&o), rv_of(&c) + 1),
        other => panic!("{other:?}"),
    }
    match next_event(&mut stream).await {
        WatchEvent::Bookmark(bm) => {
            assert_eq!(bm.metadata.resource_version, (rv_of(&c) + 1).to_string())
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_watch_from_a_compacted_resource_version_is_expired_with_410() {
    let (s, client) = server();
    let cms: Api<ConfigMap> = Api::namespaced(client, "ns");
    let a = cms
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &cm("b", json!({})))
        .await
        .unwrap();
    s.compact();
    let old = a.metadata.resource_version.clone().unwrap();
    let mut stream = cms
        .watch(&WatchParams::default(), &old)
        .await
        .unwrap()
        .boxed();
    match next_event(&mut stream).await {
        WatchEvent::Error(e) => {
            assert_eq!((e.code, e.reason.as_str()), (410, "Expired"));
            assert_eq!(
                e.message,
                format!("too old resource version: {old} ({})", s.resource_version())
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(stream.next().await.is_none(), "the stream ends");
    // The current resourceVersion still works.
    let now = s.resource_version().to_string();
    assert!(cms.watch(&WatchParams::default(), &now).await.is_ok());
}

#[tokio::test]
async fn deleting_an_object_with_finalizers_marks_it_until_they_are_gone() {
    let (_s, client) = server();
    let cms: Api<ConfigMap> = Api::namespaced(client, "ns");
    let mut obj = cm("a", json!({}));
    obj.metadata.finalizers = Some(vec!["example.com/keep".into()]);
    let a = cms.create(&PostParams::default(), &obj).await.unwrap();
    let from = a.metadata.resource_version.clone().unwrap();
    let mut stream = cms
        .watch(&WatchParams::default(), &from)
        .await
        .unwrap()
        .boxed();
    cms.delete("a", &DeleteParams::default()).await.unwrap();
    let marked = cms.get("a").await.unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert!(matches!(
        next_event(&mut stream).await,
        WatchEvent::Modified(_)
    ));
    let body = json!({"metadata": {"finalizers": null}});
    cms.patch("a", &PatchParams::default(), &Patch::Merge(&body))
        .await
        .unwrap();
    assert_eq!(code(cms.get("a").await.unwrap_err()).0, 404);
    assert!(matches!(
        next_event(&mut stream).await,
        WatchEvent::Deleted(_)
    ));
}

#[tokio::test]
async fn injected_failures_latency_and_counters() {
    let (s, client) = server();
    let cms: Api<ConfigMap> = Api::namespaced(client, "ns");
    cms.create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap();
    s.fail("GET", "/configmaps/a", 500, 2);
    assert_eq!(
        code(cms.get("a").await.unwrap_err()),
        (500, "InternalError".into())
    );
    assert_eq!(
        code(cms.get("a").await.unwrap_err()),
        (500, "InternalError".into())
    );
    assert!(cms.get("a").await.is_ok());
    assert_eq!(s.failures_armed(), 0);
    s.set_latency(Duration::from_millis(30));
    let t = std::time::Instant::now();
    cms.get("a").await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(30));
    let counts = s.counts();
    assert_eq!(counts[&("get".to_string(), "configmaps".to_string())], 4);
    assert_eq!(counts[&("create".to_string(), "configmaps".to_string())], 1);
    assert_eq!(
        s.requests().last().unwrap().line(),
        "GET /api/v1/namespaces/ns/configmaps/a"
    );
}

#[tokio::test]
async fn discovery_serves_what_is_registered() {
    let (s, client) = server();
    let wl = GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", "Workload");
    let (ar, caps) = kube::discovery::oneshot::pinned_kind(&client, &wl)
        .await
        .unwrap();
    assert_eq!(ar.plural, "workloads");
    assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
    let pr = GroupVersionKind::gvk("autoscaling.x-k8s.io", "v1", "ProvisioningRequest");
    assert!(
        kube::discovery::oneshot::pinned_kind(&client, &pr)
            .await
            .is_err()
    );
    s.register(
        Resource::from_api_resource(&crate::k8s::controller::provisioning::resource(), true)
            .with_status(),
    );
    assert!(
        kube::discovery::oneshot::pinned_kind(&client, &pr)
            .await
            .is_ok()
    );
    assert!(client.apiserver_version().await.is_ok());
}

#[tokio::test]
async fn kube_runtime_watcher_lists_watches_and_relists_after_410() {
    let (s, client) = server();
    let ar = ApiResource::erase::<ConfigMap>(&());
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let cms: Api<ConfigMap> = Api::namespaced(client, "ns");
    for name in ["a", "b"] {
        cms.create(&PostParams::default(), &cm(name, json!({})))
            .await
            .unwrap();
    }
    let mut events = watcher::watcher(api, watcher::Config::default().page_size(1)).boxed();
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(5), events.try_next())
            .await
            .expect("in time")
            .expect("no error")
            .expect("open")
    };
    assert!(matches!(next().await, watcher::Event::Init));
    assert!(matches!(next().await, watcher::Event::InitApply(_)));
    assert!(matches!(next().await, watcher::Event::InitApply(_)));
    assert!(matches!(next().await, watcher::Event::InitDone));
    cms.create(&PostParams::default(), &cm("c", json!({})))
        .await
        .unwrap();
    assert!(
        matches!(next().await, watcher::Event::Apply(o) if o.metadata.name.as_deref() == Some("c"))
    );
    // A write the watch has not sent yet, then the history dropped and the stream closed (no
    // await in between: on this single-threaded runtime the watch cannot run meanwhile): the
    // watch or the re-watch gets 410 and the watcher lists again.
    s.put(
        "/api/v1/namespaces/ns/configmaps/d",
        serde_json::to_value(cm("d", json!({}))).unwrap(),
    );
    s.compact();
    s.expire_watches();
    // The relist starts (anything else first fails the test).
    loop {
        match tokio::time::timeout(Duration::from_secs(5), events.next())
            .await
            .expect("in time")
        {
            Some(Ok(watcher::Event::Init)) => break,
            Some(Err(_)) => continue, // the 410, reported before the relist
            other => panic!("{other:?}"),
        }
    }
    let mut names = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(5), events.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            watcher::Event::InitApply(o) => names.push(o.metadata.name.unwrap()),
            watcher::Event::InitDone => break,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(names, ["a", "b", "c", "d"]);
}

#[tokio::test]
async fn kube_runtime_streaming_lists_end_with_the_initial_events_bookmark() {
    let (_s, client) = server();
    let ar = ApiResource::erase::<ConfigMap>(&());
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let cms: Api<ConfigMap> = Api::namespaced(client, "ns");
    for name in ["a", "b"] {
        cms.create(&PostParams::default(), &cm(name, json!({"app": "x"})))
            .await
            .unwrap();
    }
    cms.create(&PostParams::default(), &cm("other", json!({})))
        .await
        .unwrap();
    let config = watcher::Config::default().streaming_lists().labels("app=x");
    let mut events = watcher::watcher(api, config).boxed();
    let mut names = Vec::new();
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(5), events.try_next())
            .await
            .expect("in time")
            .expect("no error")
            .expect("open");
        match ev {
            watcher::Event::Init => {}
            watcher::Event::InitApply(o) => names.push(o.metadata.name.unwrap()),
            watcher::Event::InitDone => break,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(names, ["a", "b"]);
    // A change that makes an object match is an ADDED event for this selector.
    let body = json!({"metadata": {"labels": {"app": "x"}}});
    cms.patch("other", &PatchParams::default(), &Patch::Merge(&body))
        .await
        .unwrap();
    let ev = tokio::time::timeout(Duration::from_secs(5), events.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(matches!(ev, watcher::Event::Apply(o) if o.metadata.name.as_deref() == Some("other")));
}

#[tokio::test]
async fn server_side_apply_creates_a_missing_object_and_a_cluster_scoped_one_has_no_namespace() {
    let (s, client) = server();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "ns");
    let params = kube::api::PatchParams::apply("tester");
    let applied = cms
        .patch(
            "new",
            &params,
            &kube::api::Patch::Apply(cm("new", json!({"a": "b"}))),
        )
        .await
        .expect("created by apply, as the API server does");
    assert_eq!(applied.metadata.labels.unwrap()["a"], "b");
    assert!(s.get("/api/v1/namespaces/ns/configmaps/new").is_some());
    // Applied again, it is a patch of what is there.
    let again = cms
        .patch(
            "new",
            &params,
            &kube::api::Patch::Apply(cm("new", json!({"a": "c"}))),
        )
        .await
        .unwrap();
    assert_eq!(again.metadata.labels.unwrap()["a"], "c");
    // A namespace on a cluster-scoped object (kustomize adds one to kinds it does not know)
    // is dropped.
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client);
    let node: k8s_openapi::api::core::v1::Node = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "namespace": "wasq-system"}}),
    )
    .unwrap();
    let stored = nodes.create(&PostParams::default(), &node).await.unwrap();
    assert_eq!(stored.metadata.namespace, None);
}

/// As the real server (`tests/real_cluster/tas.rs`): a pod whose last scheduling gate is
/// removed has no `schedulingGates` at all, not an empty list.
#[tokio::test]
async fn a_pods_emptied_scheduling_gates_are_absent() {
    use k8s_openapi::api::core::v1::Pod;
    let (_s, client) = server();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "ns");
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ns"},
        "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/topology"}],
                 "containers": [{"name": "c", "image": "busybox"}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let ungate: json_patch::Patch = serde_json::from_value(json!([
        {"op": "remove", "path": "/spec/schedulingGates/0"},
        {"op": "add", "path": "/spec/nodeSelector", "value": {"kubernetes.io/hostname": "n1"}}]))
    .unwrap();
    pods.patch("p", &PatchParams::default(), &Patch::<()>::Json(ungate))
        .await
        .unwrap();
    let stored = serde_json::to_value(pods.get("p").await.unwrap()).unwrap();
    assert_eq!(stored["spec"]["schedulingGates"], Value::Null, "{stored}");
    assert_eq!(
        stored["spec"]["nodeSelector"]["kubernetes.io/hostname"],
        "n1"
    );
}
