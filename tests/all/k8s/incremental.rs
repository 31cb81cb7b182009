//! The controller's incremental core: Workload and job events change the live core one by one
//! (no rebuild; parked workloads stay parked), a configuration change rebuilds it, and the
//! metrics say which happened.

use serde_json::json;
use wasq::k8s::mirror::{Observed, Source};
use wasq::k8s::resources::KueueKind;

use super::{Env, KUEUE, basics, cluster_queue, job, job_wl, queue_label};

/// The value of a `wasq_*` counter with these labels (0 when never counted).
fn counter(env: &Env, name: &str, label: &str) -> u64 {
    let text = env.controller.metrics.encode();
    text.lines()
        .find(|l| l.starts_with(&format!("{name}{{")) && l.contains(label))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn parked(env: &Env, workload: &str) -> bool {
    let s = env.controller.scheduler().unwrap();
    let id = s.cluster.by_key[&format!("ns/{workload}")];
    s.queues.is_inadmissible(id)
}

#[tokio::test]
async fn workload_and_job_events_change_the_live_core_without_a_rebuild() {
    // 4 cpu: `small` (2) runs, `big` (4) waits parked as inadmissible.
    let mut objects = basics("4");
    objects.push(job("a-small", "1", 2, queue_label(), true));
    objects.push(job("b-big", "1", 4, queue_label(), true));
    let mut env = Env::new(objects);
    env.list_all();
    env.step().await;
    let (small, big) = (job_wl("a-small"), job_wl("b-big"));
    assert!(
        env.controller
            .mirror
            .reserved
            .contains(&format!("ns/{small}"))
    );
    assert!(parked(&env, &big), "big does not fit next to small");
    assert_eq!(
        counter(&env, "wasq_core_rebuilds_total", "reason=\"start\""),
        1
    );

    // A new job arrives: its Workload is added to the live core; big stays parked.
    let (path, tiny) = job("tiny", "1", 1, queue_label(), true);
    env.api.put(&path, tiny);
    env.applied(Source::Job(0), &path);
    env.step().await;
    assert!(
        env.controller
            .mirror
            .reserved
            .contains(&format!("ns/{}", job_wl("tiny")))
    );
    assert!(parked(&env, &big), "parking survives an unrelated Workload");

    // Someone deletes big's Workload: the core forgets it and the job controller makes it
    // again (a new Workload, queued).
    let wl_path = format!("{KUEUE}/namespaces/ns/workloads/{big}");
    let gone = env.api.get(&wl_path).unwrap();
    let workloads: kube::Api<kube::core::DynamicObject> =
        kube::Api::namespaced_with(env.api.client(), "ns", &KueueKind::Workload.api_resource());
    workloads
        .delete(&big, &Default::default())
        .await
        .expect("deleted");
    env.controller.observe(Observed::Deleted(
        Source::Kueue(KueueKind::Workload),
        serde_json::from_value(gone).unwrap(),
    ));
    env.step().await;
    assert!(
        env.api.get(&wl_path).is_some(),
        "the job's Workload is made again"
    );
    let recreated = env.api.get(&wl_path).unwrap();
    env.controller.observe(Observed::Applied(
        Source::Kueue(KueueKind::Workload),
        serde_json::from_value(recreated).unwrap(),
    ));
    env.step().await;
    let s = env.controller.scheduler().unwrap();
    assert!(s.cluster.by_key.contains_key(&format!("ns/{big}")));
    assert_eq!(s.cluster.live_workloads(), 3);

    assert_eq!(
        counter(&env, "wasq_core_rebuilds_total", "reason=\"configuration\""),
        0,
        "no rebuild for Workload or job events"
    );
    assert!(counter(&env, "wasq_core_workload_deltas_total", "outcome=\"added\"") >= 3);
    assert!(
        counter(
            &env,
            "wasq_core_workload_deltas_total",
            "outcome=\"removed\""
        ) >= 1
    );

    // More quota is a configuration change: the core is rebuilt and big admitted.
    let (path, mut cq) = cluster_queue("cq", "gpu-a", "8");
    cq["metadata"]["resourceVersion"] = json!("999999");
    env.api.put(&path, cq);
    env.applied(Source::Kueue(KueueKind::ClusterQueue), &path);
    env.step().await;
    assert_eq!(
        counter(&env, "wasq_core_rebuilds_total", "reason=\"configuration\""),
        1
    );
    assert!(
        env.controller
            .mirror
            .reserved
            .contains(&format!("ns/{big}"))
    );
}
