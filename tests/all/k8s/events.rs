//! Events over HTTP: repeats folded into a series as client-go's `tools/events` broadcaster
//! folds Kueue's, published in the background, in order per object.

use kube::api::ObjectMeta;
use serde_json::Value;
use wasq::k8s::client::writer::{Writer, workload_ref};

use super::double;

fn workload(name: &str) -> wasq::api::Workload {
    wasq::api::Workload {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("team".into()),
            uid: Some(format!("uid-{name}")),
            ..ObjectMeta::default()
        },
        ..Default::default()
    }
}

#[tokio::test]
async fn a_repeated_event_costs_one_create_and_one_series_patch() {
    let api = double();
    let writer = Writer::new(api.client(), Some("wasq-0".into()));
    let (a, b) = (workload_ref(&workload("a")), workload_ref(&workload("b")));
    // Ten passes in which "a" stays pending with a changing message; "b" is admitted once.
    for pass in 0..10 {
        let note = format!("couldn't assign flavors: {} more needed", 10 - pass);
        writer.event(&a, true, "Pending", "Pending", note).await;
        if pass == 3 {
            writer
                .event(
                    &b,
                    false,
                    "QuotaReserved",
                    "QuotaReserved",
                    "reserved".into(),
                )
                .await;
            writer
                .event(&b, false, "Admitted", "Admitted", "admitted".into())
                .await;
        }
        writer.flush_events();
    }
    writer.events_settled().await;
    let requests: Vec<(String, String)> = api
        .requests()
        .into_iter()
        .filter(|r| r.uri.contains("/events"))
        .map(|r| (r.method, r.uri))
        .collect();
    let posts = requests.iter().filter(|(m, _)| m == "POST").count();
    let patches = requests.iter().filter(|(m, _)| m == "PATCH").count();
    assert_eq!((posts, patches), (3, 1), "{requests:?}");
    let events = api.objects("events.k8s.io/v1", "events");
    let pending: Vec<&Value> = events.iter().filter(|e| e["reason"] == "Pending").collect();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0]["series"]["count"], 2);
    assert_eq!(
        pending[0]["note"],
        "couldn't assign flavors: 10 more needed"
    );
    assert_eq!(pending[0]["reportingController"], "wasq");
    assert_eq!(pending[0]["reportingInstance"], "wasq-0");
    assert_eq!(pending[0]["type"], "Warning");
    assert_eq!(pending[0]["regarding"]["name"], "a");
    let mut on_b: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["regarding"]["name"] == "b")
        .map(|e| {
            (
                e["eventTime"].as_str().unwrap_or_default().to_string(),
                e["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    on_b.sort();
    assert_eq!(
        on_b.iter().map(|(_, r)| r.as_str()).collect::<Vec<_>>(),
        ["QuotaReserved", "Admitted"]
    );
}

#[tokio::test]
async fn a_series_whose_event_is_gone_is_created_again_and_failures_are_not_fatal() {
    let api = double();
    let writer = Writer::new(api.client(), None);
    let a = workload_ref(&workload("a"));
    writer
        .event(&a, true, "Pending", "Pending", "first".into())
        .await;
    writer.flush_events();
    writer.events_settled().await;
    // The Event expired (deleted by the API server's TTL) before it became a series.
    for e in api.objects("events.k8s.io/v1", "events") {
        let name = e["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        api.delete(&format!(
            "/apis/events.k8s.io/v1/namespaces/team/events/{name}"
        ));
    }
    writer
        .event(&a, true, "Pending", "Pending", "again".into())
        .await;
    writer.flush_events();
    writer.events_settled().await;
    let pending: Vec<Value> = api
        .objects("events.k8s.io/v1", "events")
        .into_iter()
        .filter(|e| e["reason"] == "Pending")
        .collect();
    assert_eq!(pending.len(), 1, "created again");
    assert_eq!(pending[0]["series"]["count"], 2);
    assert_eq!(pending[0]["note"], "first");
    // A server error is logged and that Event dropped; the next ones go out.
    api.fail_next("POST", "/events", 500);
    let (b, c) = (workload_ref(&workload("b")), workload_ref(&workload("c")));
    writer
        .event(&b, false, "Admitted", "Admitted", "lost".into())
        .await;
    writer.flush_events();
    writer
        .event(&c, false, "Admitted", "Admitted", "kept".into())
        .await;
    writer.flush_events();
    writer.events_settled().await;
    let notes: Vec<String> = api
        .objects("events.k8s.io/v1", "events")
        .iter()
        .filter(|e| e["reason"] == "Admitted")
        .map(|e| e["note"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(notes, ["kept"]);
}

#[tokio::test]
async fn past_the_queue_limit_new_events_are_dropped_and_counted() {
    let api = double();
    let mut publisher = wasq::k8s::client::events::Publisher::new(api.client(), "wasq", "wasq-0");
    publisher.set_max_queued(5);
    let record = |p: &wasq::k8s::client::events::Publisher, name: &str| {
        p.record(
            &workload_ref(&workload(name)),
            false,
            "Admitted",
            "Admitted",
            name.into(),
            Default::default(),
        )
    };
    for i in 0..8 {
        record(&publisher, &format!("w{i}"));
    }
    assert_eq!(publisher.dropped(), 3);
    publisher.flush();
    publisher.settled().await;
    // Once sent, the queue has room again.
    record(&publisher, "late");
    publisher.flush();
    publisher.settled().await;
    let mut notes: Vec<String> = api
        .objects("events.k8s.io/v1", "events")
        .iter()
        .map(|e| e["note"].as_str().unwrap_or_default().to_string())
        .collect();
    notes.sort();
    assert_eq!(notes, ["late", "w0", "w1", "w2", "w3", "w4"]);
    assert_eq!(publisher.dropped(), 3);
}
