//! A Workload's decision history in a cluster: the policies behind each scheduling decision on
//! its Events (wasq's annotations; Kueue's reasons and notes unchanged), read back by `wasq ctl
//! describe workload` and `wasq explain` — against the API double, a preemption policy plugin
//! (`least-lost-work`) choosing the victim.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use serde_json::{Value, json};
use wasq::cluster::CqId;
use wasq::k8s::client::events::decided_by;
use wasq::k8s::ctl::{DescribeOutput, describe_workload, explain};
use wasq::k8s::sync::mirror::Source;

use super::{Env, NOW, basics, job, job_wl, running_low_job};
use crate::plugins::{bindings, built, plugins};

/// Binds `preemption=least-lost-work` over the built-in, once per core.
fn least_lost_work() -> wasq::k8s::sync::core::Configure {
    let registry = plugins();
    let wanted = bindings(&["preemption=least-lost-work"]);
    Arc::new(move |s: &mut wasq::scheduler::Scheduler| {
        if &*s.policies_for(CqId(0)).preemption.id().name != "least-lost-work" {
            let (default, per_cq) = registry.bind(&s.cluster, &wanted).expect("binds");
            s.install_policies(default, per_cq);
        }
    })
}

fn digest() -> String {
    let bytes = std::fs::read(built().plugins.join("least-lost-work.wasm")).expect("built");
    wasq::wasm::digest_of(&bytes)
}

/// The story every test here reads: at 0 s `high` (priority 100) preempts the running `low`
/// (the plugin chooses) and waits for it; at 30 s `low`'s pods are gone, `low` waits for quota
/// and `high` is admitted; at 90 s `high` finishes and `low` is admitted again.
struct Story {
    env: Env,
    clock: Arc<AtomicI64>,
}

impl Story {
    async fn run() -> Story {
        let mut objects = basics("2");
        objects.extend(running_low_job());
        objects.push(job(
            "high",
            "2",
            1,
            json!({"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/priority-class": "high"}),
            true,
        ));
        let clock = Arc::new(AtomicI64::new(NOW));
        let now = clock.clone();
        let env = Env::with_hook(
            objects,
            Arc::new(move || now.load(Ordering::SeqCst)),
            least_lost_work(),
        );
        let mut story = Story { env, clock };
        story.env.list_all();
        story.env.step().await;
        story.at(30);
        story.job_status("low", json!({"active": 0})).await;
        story.at(90);
        story
            .job_status(
                "high",
                json!({"active": 0, "conditions": [
                    {"type": "Complete", "status": "True", "message": "Reached expected number of succeeded pods"}]}),
            )
            .await;
        story.env.step().await;
        story
    }

    fn at(&self, seconds: i64) {
        self.clock.store(NOW + seconds * 1000, Ordering::SeqCst);
    }

    /// Job `name`'s status replaced, its watch event taken in, one pass.
    async fn job_status(&mut self, name: &str, status: Value) {
        let path = format!("/apis/batch/v1/namespaces/ns/jobs/{name}");
        self.env.api.modify(&path, |j| j["status"] = status);
        self.env.applied(Source::Job(0), &path);
        self.env.step().await;
    }

    /// The Events regarding Workload `name`, oldest first, as `(reason, annotations, note)`.
    fn events(&self, name: &str) -> Vec<(String, Value, String)> {
        let mut events: Vec<Value> = self
            .env
            .api
            .objects("events.k8s.io/v1", "events")
            .into_iter()
            .filter(|e| e["regarding"]["name"] == name)
            .collect();
        events.sort_by_key(|e| {
            (
                e["eventTime"].as_str().unwrap_or_default().to_string(),
                e["metadata"]["resourceVersion"]
                    .as_str()
                    .and_then(|v| v.parse::<u64>().ok()),
            )
        });
        events
            .into_iter()
            .map(|e| {
                (
                    e["reason"].as_str().unwrap_or_default().to_string(),
                    e["metadata"]["annotations"].clone(),
                    e["note"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }
}

#[tokio::test]
async fn decisions_events_name_their_policies_and_keep_kueues_notes() {
    let story = Story::run().await;
    let (low, high) = (job_wl("low"), job_wl("high"));
    let plugin = format!("least-lost-work@{}", digest());
    let admitted_by_builtin = json!({
        decided_by::ORDERING: "builtin",
        decided_by::FLAVOR_ASSIGNMENT: "builtin",
    });
    let pending_by_builtin = json!({decided_by::FLAVOR_ASSIGNMENT: "builtin"});

    let on_low = story.events(&low);
    let preempted = on_low
        .iter()
        .find(|(reason, ..)| reason == "Preempted")
        .unwrap_or_else(|| panic!("{on_low:#?}"));
    assert_eq!(
        preempted.1,
        json!({decided_by::PREEMPTION: plugin, decided_by::PREEMPTOR: format!("ns/{high}")})
    );
    assert_eq!(
        preempted.2,
        format!(
            "Preempted to accommodate a workload (UID: uid-{high}, JobUID: uid-high) due to \
             prioritization in the ClusterQueue; preemptor path: /cq; preemptee path: /cq"
        )
    );
    // Then it waits for quota, and is admitted again once `high` finished.
    let reasons: Vec<&str> = on_low.iter().map(|(r, ..)| r.as_str()).collect();
    assert_eq!(
        reasons,
        ["Preempted", "WaitingForQuota", "QuotaReserved", "Admitted"],
        "{on_low:#?}"
    );
    assert_eq!(on_low[1].1, pending_by_builtin);
    assert_eq!(on_low[2].1, admitted_by_builtin);
    assert_eq!(
        on_low[2].2,
        "Quota reserved in ClusterQueue cq, wait time since queued was 60s"
    );

    let on_high = story.events(&high);
    let reasons: Vec<&str> = on_high.iter().map(|(r, ..)| r.as_str()).collect();
    assert_eq!(
        reasons,
        [
            "WaitingForPreemptedWorkloads",
            "QuotaReserved",
            "Admitted",
            "Finished"
        ],
        "{on_high:#?}"
    );
    // Kueue's words, as the QuotaReserved condition said them.
    assert_eq!(
        on_high[0].2,
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor \
         gpu-a, 2 more needed. Pending the preemption of 1 workload(s)"
    );
    assert_eq!(on_high[0].1, pending_by_builtin);
    assert_eq!(
        (on_high[1].1.clone(), on_high[1].2.as_str()),
        (
            admitted_by_builtin.clone(),
            "Quota reserved in ClusterQueue cq, wait time since queued was 30s"
        )
    );
    assert_eq!(
        (on_high[2].1.clone(), on_high[2].2.as_str()),
        (
            admitted_by_builtin,
            "Admitted by ClusterQueue cq, wait time since reservation was 0s"
        )
    );
    // Not a scheduling decision: no annotations.
    assert_eq!(on_high[3].1, Value::Null);
}

/// An hour after the story began.
fn later() -> jiff::Timestamp {
    "2026-01-01T01:00:00Z".parse().unwrap()
}

#[tokio::test]
async fn describe_workload_shows_its_decisions_and_the_policies_behind_them() {
    let story = Story::run().await;
    let client = story.env.api.client();
    let (low, high) = (job_wl("low"), job_wl("high"));
    let text = describe_workload(&client, "ns", &high, DescribeOutput::Text, later())
        .await
        .unwrap();
    assert_eq!(
        text,
        format!(
            "Name:          {high}
Namespace:     ns
Labels:        kueue.x-k8s.io/job-uid=uid-high
Annotations:   <none>
Created:       2026-01-01T00:00:00Z (60m ago)
Owner:         Job/high
Queue:         lq
ClusterQueue:  cq
Priority:      high (100)
Status:        FINISHED
PodSets:
  Name  Count  Requests (each pod)  Topology
  ----  -----  -------------------  --------
  main  1      cpu=2
Admission:
  PodSet  Count  Flavors    Usage  Topology
  ------  -----  -------    -----  --------
  main    1      cpu=gpu-a  cpu=2
Admission Checks:  <none>
Conditions:
  Type           Status  Reason         Age  Message
  ----           ------  ------         ---  -------
  QuotaReserved  True    QuotaReserved  59m  Quota reserved in ClusterQueue cq
  Admitted       True    Admitted       59m  The workload is admitted
  PodsReady      False   WaitForStart   59m  Not all pods are ready or succeeded
  Finished       True    Succeeded      58m  Reached expected number of succeeded pods
Decisions:
  Type     Reason                        Age  From  Policies                                Message
  ----     ------                        ---  ----  --------                                -------
  Warning  WaitingForPreemptedWorkloads  60m  wasq  decided by builtin                      couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor gpu-a, 2 more needed. Pending the preemption of 1 workload(s)
  Normal   QuotaReserved                 59m  wasq  ordered by builtin, decided by builtin  Quota reserved in ClusterQueue cq, wait time since queued was 30s
  Normal   Admitted                      59m  wasq  ordered by builtin, decided by builtin  Admitted by ClusterQueue cq, wait time since reservation was 0s
  Normal   Finished                      58m  wasq                                          Workload 'ns/{high}' is declared finished
"
        )
    );
    // The victim: who preempted it and which policy chose it.
    let text = describe_workload(&client, "ns", &low, DescribeOutput::Text, later())
        .await
        .unwrap();
    let decisions: Vec<Vec<&str>> = text
        .split("Decisions:\n")
        .nth(1)
        .unwrap()
        .lines()
        .skip(2)
        .map(|l| {
            l.split("  ")
                .filter(|c| !c.is_empty())
                .map(str::trim)
                .collect()
        })
        .collect();
    assert_eq!(
        decisions[0][..5],
        [
            "Normal",
            "Preempted",
            "60m",
            "wasq",
            &format!(
                "preempted by ns/{high}, decided by least-lost-work@{}",
                digest()
            )
        ],
        "{text}"
    );
    assert_eq!(
        decisions.iter().map(|d| (d[1], d[4])).collect::<Vec<_>>()[1..],
        [
            ("WaitingForQuota", "decided by builtin"),
            ("QuotaReserved", "ordered by builtin, decided by builtin"),
            ("Admitted", "ordered by builtin, decided by builtin"),
        ]
    );
    // As json: the Workload and its Events, oldest first.
    let json = describe_workload(&client, "ns", &low, DescribeOutput::Json, later())
        .await
        .unwrap();
    let list: Value = serde_json::from_str(&json).unwrap();
    let kinds: Vec<(&str, &str)> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["kind"].as_str().unwrap_or_default(),
                o["reason"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("Workload", ""),
            ("Event", "Preempted"),
            ("Event", "WaitingForQuota"),
            ("Event", "QuotaReserved"),
            ("Event", "Admitted"),
        ]
    );
    // kubectl's words for a Workload that is not there.
    let missing = describe_workload(&client, "ns", "nope", DescribeOutput::Text, later())
        .await
        .unwrap_err();
    assert_eq!(
        missing.to_string(),
        "Error from server (NotFound): workloads.kueue.x-k8s.io \"nope\" not found"
    );
}

#[tokio::test]
async fn explain_tells_a_workloads_story_from_the_cluster() {
    let story = Story::run().await;
    let client = story.env.api.client();
    let (low, high) = (job_wl("low"), job_wl("high"));
    // Waited for its victim, then admitted; finished.
    assert_eq!(
        explain(&client, "ns", &high, later()).await.unwrap(),
        format!(
            "ns/{high}: ClusterQueue cq, LocalQueue ns/lq, priority 100
        0s  created at 2026-01-01T00:00:00Z
        0s  waited 30s: WaitingForPreemptedWorkloads (at 0s): couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor gpu-a, 2 more needed. Pending the preemption of 1 workload(s), flavor assignment by the built-in
       30s  reserved quota in cq, flavors chosen by the built-in
       30s  admitted: main ×1 on cpu=gpu-a, ordered by the built-in
       90s  finished (Succeeded: Reached expected number of succeeded pods)
"
        )
    );
    // Preempted by `high`, the plugin choosing it; waited for quota; admitted again.
    assert_eq!(
        explain(&client, "ns", &low, later()).await.unwrap(),
        format!(
            "ns/{low}: ClusterQueue cq, LocalQueue ns/lq, priority 0
        0s  created at 2026-01-01T00:00:00Z
        0s  preempted by ns/{high} (InClusterQueue), victims chosen by least-lost-work ({})
        0s  waited 90s: Requeued (at 30s): Preempted; WaitingForQuota (at 30s): couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor gpu-a, 2 more needed, flavor assignment by the built-in
       90s  reserved quota in cq, flavors chosen by the built-in
       90s  admitted: main ×1 on cpu=gpu-a, ordered by the built-in
  now ADMITTED
",
            digest()
        )
    );
}
