//! The controller's incremental core: Workload and job events change the live core one by one
//! (no rebuild; parked workloads stay parked), a configuration change rebuilds it, and the
//! metrics say which happened.

use serde_json::json;
use wasq::k8s::schema::kinds::KueueKind;
use wasq::k8s::sync::mirror::{Observed, Source};

use super::{Env, KUEUE, basics, cluster_queue, counter, job, job_wl, queue_label};

fn parked(env: &Env, workload: &str) -> bool {
    let s = env.controller.scheduler().unwrap();
    let id = s
        .cluster
        .find_workload(&format!("ns/{workload}"))
        .expect("registered");
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
    assert!(s.cluster.find_workload(&format!("ns/{big}")).is_some());
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

/// One thing that happens to the cluster between or during the controller's passes.
#[derive(Debug, Clone)]
enum Op {
    /// A queued Job of `pods` pods of 1 cpu is created.
    NewJob(i32),
    /// The n-th Job created so far completes.
    Finish(usize),
    /// The n-th Job's Workload is deleted by someone else.
    DeleteWorkload(usize),
    /// The next status write fails with this code.
    FailWrite(u16),
    /// The next status write is answered this many milliseconds late: the next cycles run
    /// while it is in flight, and the writes land out of order.
    SlowWrite(u64),
    /// A reconcile pass.
    Step,
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    prop_oneof![
        3 => (1..=3i32).prop_map(Op::NewJob),
        2 => (0..8usize).prop_map(Op::Finish),
        1 => (0..8usize).prop_map(Op::DeleteWorkload),
        2 => prop_oneof![Just(409u16), Just(500u16)].prop_map(Op::FailWrite),
        2 => (1..=30u64).prop_map(Op::SlowWrite),
        4 => Just(Op::Step),
    ]
}

/// The cpu the API server's Workloads hold: those with a reservation that are not finished
/// (what the restart path rebuilds usage from).
fn cluster_usage(env: &Env) -> i64 {
    env.api
        .all()
        .into_iter()
        .filter(|(path, _)| path.contains("/workloads/"))
        .filter_map(|(_, wl)| {
            let conditions = wl["status"]["conditions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let is_true = |t: &str| {
                conditions
                    .iter()
                    .any(|c| c["type"] == t && c["status"] == "True")
            };
            (is_true("QuotaReserved") && !is_true("Finished")).then_some(wl)
        })
        .flat_map(|wl| {
            wl["status"]["admission"]["podSetAssignments"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|psa| {
            psa["resourceUsage"]["cpu"]
                .as_str()
                .and_then(|q| q.parse::<wasq::api::Quantity>().ok())
                .map_or(0, |q| q.milli())
        })
        .sum()
}

/// The cpu the controller's core holds in `cq`.
fn core_usage(env: &Env) -> i64 {
    let s = env.controller.scheduler().unwrap();
    let c = &s.cluster;
    let node = c.cq(c.cq_by_name["cq"]).node;
    let fr = c
        .names
        .find_fr(
            c.names.find_flavor("gpu-a").unwrap(),
            c.names.find_resource("cpu").unwrap(),
        )
        .unwrap();
    c.usage.get(node, fr)
}

async fn run_ops(ops: Vec<Op>) -> Result<(), proptest::test_runner::TestCaseError> {
    use proptest::prelude::*;
    let mut env = Env::new(basics("4"));
    env.list_all();
    env.step().await;
    let mut jobs: Vec<String> = Vec::new();
    for op in ops.into_iter().chain([Op::Step, Op::Step]) {
        match op {
            Op::NewJob(pods) => {
                let name = format!("j{}", jobs.len());
                let (path, j) = job(&name, "1", pods, queue_label(), true);
                env.api.put(&path, j);
                env.applied(Source::Job(0), &path);
                jobs.push(name);
            }
            Op::Finish(n) => {
                let Some(name) = jobs.get(n) else { continue };
                let path = format!("/apis/batch/v1/namespaces/ns/jobs/{name}");
                let mut j = env.api.get(&path).unwrap();
                j["status"] = json!({"active": 0, "conditions": [
                    {"type": "Complete", "status": "True", "message": "done"}]});
                env.api.put(&path, j);
                env.applied(Source::Job(0), &path);
            }
            Op::DeleteWorkload(n) => {
                let Some(name) = jobs.get(n) else { continue };
                let wl = job_wl(name);
                let path = format!("{KUEUE}/namespaces/ns/workloads/{wl}");
                let Some(gone) = env.api.get(&path) else {
                    continue;
                };
                let workloads: kube::Api<kube::core::DynamicObject> = kube::Api::namespaced_with(
                    env.api.client(),
                    "ns",
                    &KueueKind::Workload.api_resource(),
                );
                let _ = workloads.delete(&wl, &Default::default()).await;
                env.controller.observe(Observed::Deleted(
                    Source::Kueue(KueueKind::Workload),
                    serde_json::from_value(gone).unwrap(),
                ));
            }
            Op::FailWrite(code) => env.api.fail_next("PATCH", "/status", code),
            Op::SlowWrite(ms) => {
                env.api
                    .delay("PATCH", "/status", std::time::Duration::from_millis(ms), 1)
            }
            Op::Step => {
                env.step().await;
                // Workloads the controller created are delivered as their watch events.
                for (path, obj) in env.api.all() {
                    if path.contains("/workloads/") {
                        env.controller.observe(Observed::Applied(
                            Source::Kueue(KueueKind::Workload),
                            serde_json::from_value(obj).unwrap(),
                        ));
                    }
                }
                let (memory, cluster) = (core_usage(&env), cluster_usage(&env));
                prop_assert_eq!(memory, cluster, "memory and cluster disagree on usage");
                prop_assert!(memory <= 4000, "quota over-committed: {memory}m");
            }
        }
    }
    let s = env.controller.scheduler().unwrap();
    prop_assert_eq!(
        counter(&env, "wasq_core_rebuilds_total", "reason=\"configuration\""),
        0
    );
    prop_assert!(s.cluster.live_workloads() <= jobs.len());
    Ok(())
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..Default::default() })]

    /// Random interleavings of job events, Workload deletions, failed and slow writes and
    /// passes keep the core's usage equal to the usage the API server's Workloads show, without
    /// rebuilds.
    #[test]
    fn memory_follows_the_cluster_under_random_events_and_write_failures(
        ops in proptest::collection::vec(op(), 1..30)
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(run_ops(ops))?;
    }
}
