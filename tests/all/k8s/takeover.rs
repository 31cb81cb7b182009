//! Taking over from Kueue in place, and handing back (issue 61, item 4). The cluster is loaded
//! with objects exactly as a running Kueue leaves them ([`wasq::k8s::apiserver::kueue`]):
//! Jobs Kueue admitted and started, one whose Workload Kueue declared finished, Jobs whose
//! Workloads Kueue left pending, and the ClusterQueue status Kueue wrote. wasq started on it
//! keeps every admitted Workload admitted and its Job running, rebuilds quota usage from
//! `status.admission` before its first cycle, admits the pending ones in Kueue's order, writes
//! nothing until it holds the leader Lease, and writes what Kueue would, so that Kueue started
//! again keeps what wasq admitted.

use serde_json::{Value, json};
use wasq::k8s::apiserver::kueue::{self, Flavor, KueueJob};
use wasq::k8s::client::lease::LeaseLock;

use super::{Env, KUEUE};

const CQ: &str = "cq-a";
const NS: &str = "team-a";
/// When Kueue admitted the running Jobs, and when it stopped.
const ADMITTED_AT: &str = "2025-12-31T20:00:00Z";
const KUEUE_STOPPED: &str = "2025-12-31T23:59:00Z";

fn flavor() -> Flavor {
    Flavor::new("on-demand", json!({"instance-type": "on-demand"}))
}

/// A Job of `pods` pods of 1 cpu and 4 GiB, created `minutes` after 20:00.
fn job(name: &str, pods: i32, minutes: u32) -> KueueJob {
    KueueJob::new(
        NS,
        name,
        "lq",
        pods,
        1000,
        4096,
        &format!("2025-12-31T20:{minutes:02}:00Z"),
    )
}

struct Cluster {
    /// Admitted by Kueue, running.
    running: Vec<KueueJob>,
    /// Admitted by Kueue, finished just before Kueue stopped: its quota is free.
    finished: KueueJob,
    /// Left pending by Kueue while `finished` still held quota, in Kueue's order: `big` and
    /// `hi` (priority 100), then `old` and `new` (priority 0), each by creation time.
    big: KueueJob,
    hi: KueueJob,
    old: KueueJob,
    new: KueueJob,
    objects: Vec<(String, Value)>,
}

/// ClusterQueue `cq-a` (12 cpu, 96 GiB on `on-demand`, no preemption): `train-a` and `train-b`
/// (4 cpu each) running, `done` (4 cpu) finished; pending `big` (6 cpu), `hi`, `old` and `new`
/// (2 cpu each). 4 cpu are free: `hi` then `old` fit, `big` and `new` do not.
fn kueue_cluster() -> Cluster {
    let f = flavor();
    let running = vec![job("train-a", 4, 1), job("train-b", 4, 2)];
    let finished = job("done", 4, 3);
    let big = job("big", 6, 11).with_priority_class("high", 100);
    let hi = job("hi", 2, 13).with_priority_class("high", 100);
    let old = job("old", 2, 10);
    let new = job("new", 2, 12);
    let mut objects = vec![
        (f.path(), f.object()),
        kueue::namespace(NS),
        kueue::local_queue(NS, "lq", CQ),
        kueue::priority_class("high", 100),
    ];
    let (path, mut cq) = kueue::cluster_queue(CQ, None, &f.name, "12", "96Gi");
    // As Kueue left it: 8 cpu of the running two reserved, four pending.
    cq["status"] = kueue::cluster_queue_status(&f.name, 8000, 32 * 1024, 2, 4);
    objects.push((path, cq));
    for j in &running {
        objects.push((j.job_path(), j.running_job(&f, CQ, ADMITTED_AT)));
        objects.push((
            j.workload_path(),
            j.admitted_workload(CQ, &f.name, ADMITTED_AT),
        ));
    }
    objects.push((
        finished.job_path(),
        finished.completed_job(&f, CQ, ADMITTED_AT, KUEUE_STOPPED),
    ));
    objects.push((
        finished.workload_path(),
        finished.finished_workload(CQ, &f.name, ADMITTED_AT, KUEUE_STOPPED),
    ));
    // While `done` held its 4 cpu, nothing was free.
    for j in [&big, &hi, &old, &new] {
        let (cpu, _) = j.usage();
        let message = KueueJob::insufficient_cpu_message(&f.name, cpu);
        objects.push((j.job_path(), j.job()));
        objects.push((
            j.workload_path(),
            j.pending_workload("WaitingForQuota", &message, "2025-12-31T23:00:00Z"),
        ));
    }
    Cluster {
        running,
        finished,
        big,
        hi,
        old,
        new,
        objects,
    }
}

/// An object as stored, without the resourceVersion the double gave it.
fn stored(env: &Env, path: &str) -> Value {
    let mut obj = env.api.get(path).expect("stored");
    if let Some(m) = obj["metadata"].as_object_mut() {
        m.remove("resourceVersion");
    }
    obj
}

/// Requests that change the cluster (anything but reads and watches), as `METHOD path`.
fn changes(env: &Env) -> Vec<String> {
    env.api
        .requests()
        .into_iter()
        .filter(|r| r.method != "GET")
        .map(|r| r.line())
        .collect()
}

fn condition<'a>(wl: &'a Value, type_: &str) -> &'a Value {
    wl["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .unwrap_or(&Value::Null)
}

/// A condition as Kueue reads it: type, status, reason and message. Not its transition time,
/// nor its `observedGeneration`, which Kueue writes (the Workload's generation) but never
/// reads — wasq writes it on `PodsReady` only.
fn timeless(c: &Value) -> Value {
    let mut c = c.clone();
    if let Some(m) = c.as_object_mut() {
        m.remove("lastTransitionTime");
        m.remove("observedGeneration");
    }
    c
}

/// wasq started on the cluster: every source listed, then two passes. A cycle that admits
/// nothing ends a pass (`run_cycles`); `wasq controller` runs the next one at the next
/// second's tick, as Kueue's scheduler backs off after a cycle that admitted nothing.
async fn started(cluster: &Cluster) -> Env {
    let mut env = Env::new(cluster.objects.clone());
    env.list_all();
    env.step().await;
    env.step().await;
    env
}

#[tokio::test]
async fn kueue_admitted_workloads_stay_admitted_and_their_jobs_keep_running() {
    let cluster = kueue_cluster();
    let env = started(&cluster).await;
    let changed = changes(&env);
    // No second Workload: every Job is found through the Workload Kueue named after it and
    // its owner reference; the one Workload created is none (the cluster has no new Job).
    assert!(
        !changed
            .iter()
            .any(|l| l.starts_with("POST") && l.contains("/workloads")),
        "{changed:#?}"
    );
    for j in cluster.running.iter().chain([&cluster.finished]) {
        // Not a single write to the admitted (or finished) Workload or its Job: no eviction,
        // no admission rewritten, PodsReady as Kueue wrote it, the Job left running.
        let name = j.workload_name();
        assert!(
            !changed
                .iter()
                .any(|l| l.contains(&name) || l.ends_with(&format!("/jobs/{}", j.name))),
            "{} was written: {changed:#?}",
            j.name
        );
    }
    for j in &cluster.running {
        let wl = stored(&env, &j.workload_path());
        assert_eq!(wl, j.admitted_workload(CQ, "on-demand", ADMITTED_AT));
        assert_eq!(stored(&env, &j.job_path())["spec"]["suspend"], false);
    }
    // Each has one Workload in the cluster and in the core.
    let workloads = env.api.objects("kueue.x-k8s.io/v1beta2", "workloads");
    assert_eq!(workloads.len(), 7);
    let s = env.controller.scheduler().expect("the core is built");
    let key = |j: &KueueJob| format!("{NS}/{}", j.workload_name());
    for j in &cluster.running {
        let id = s.cluster.find_workload(&key(j)).expect("in the core");
        assert!(s.cluster.admission(id).is_some(), "{} holds quota", j.name);
    }
}

#[tokio::test]
async fn usage_is_rebuilt_from_kueues_admissions_and_pending_ones_are_admitted_in_kueues_order() {
    let cluster = kueue_cluster();
    let env = started(&cluster).await;
    let admitted = |j: &KueueJob| {
        stored(&env, &j.workload_path())["status"]["admission"]["clusterQueue"] == CQ
    };
    // 4 cpu free (train-a and train-b hold 8, done finished): hi (priority 100) before old
    // (priority 0, created earlier); big (priority 100, older than hi) does not fit, nor does
    // new once hi and old hold the rest. Ordered by creation alone, old and new would fit and
    // hi would not; with usage not rebuilt, big would fit too.
    assert!(admitted(&cluster.hi) && admitted(&cluster.old));
    assert!(!admitted(&cluster.big) && !admitted(&cluster.new));
    let admissions: Vec<String> = changes(&env)
        .into_iter()
        .filter(|l| l.ends_with("/status") && l.contains("/workloads/"))
        .filter(|l| {
            [&cluster.hi, &cluster.old]
                .iter()
                .any(|j| l.contains(&j.workload_name()))
        })
        .collect();
    assert_eq!(
        admissions.first().map(String::as_str),
        Some(format!("PATCH {}/status", cluster.hi.workload_path()).as_str()),
        "{admissions:#?}"
    );
    // The pending ones keep Kueue's reason; their message is the flavor assigner's.
    for j in [&cluster.big, &cluster.new] {
        let wl = stored(&env, &j.workload_path());
        let c = condition(&wl, "QuotaReserved");
        assert_eq!(
            (&c["status"], &c["reason"]),
            (&json!("False"), &json!("WaitingForQuota"))
        );
        assert!(
            c["message"]
                .as_str()
                .unwrap_or_default()
                .starts_with("couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor on-demand"),
            "{c}"
        );
        assert!(wl["status"]["admission"].is_null());
        assert_eq!(stored(&env, &j.job_path())["spec"]["suspend"], true);
    }
    // `new` was pending for the same reason Kueue gave: its status is not rewritten.
    assert_eq!(
        stored(&env, &cluster.new.workload_path()),
        cluster
            .objects
            .iter()
            .find(|(p, _)| *p == cluster.new.workload_path())
            .unwrap()
            .1
    );
    // Exactly the quota: 12 cpu reserved in the core, as the ClusterQueue status says.
    let s = env.controller.scheduler().unwrap();
    let cq = s.cluster.cq_by_name[CQ];
    assert_eq!(s.cluster.admitted_in(cq).len(), 4);
    let status = &stored(&env, &format!("{KUEUE}/clusterqueues/{CQ}"))["status"];
    assert_eq!(
        status["flavorsReservation"][0]["resources"][0],
        json!({"name": "cpu", "total": "12", "borrowed": "0"})
    );
}

/// A Lease as client-go's leader election (controller-runtime's, Kueue's) writes it.
fn kueue_lease(holder: &str, duration: i32, renewed: &str) -> (String, Value) {
    (
        "/apis/coordination.k8s.io/v1/namespaces/kueue-system/leases/c1f6bfd2.kueue.x-k8s.io"
            .into(),
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": "c1f6bfd2.kueue.x-k8s.io", "namespace": "kueue-system"},
               "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration,
                        "acquireTime": "2025-12-31T08:00:00.000000Z", "renewTime": renewed,
                        "leaseTransitions": 3}}),
    )
}

fn at(rfc3339: &str) -> jiff::Timestamp {
    rfc3339.parse().expect("a timestamp")
}

/// `wasq controller --namespace kueue-system --lease-name c1f6bfd2.kueue.x-k8s.io`: as
/// `run_async` does, every pass before the Lease is held is a standby's.
fn lock(env: &Env, identity: &str) -> LeaseLock {
    LeaseLock::new(
        env.api.client(),
        "kueue-system",
        "c1f6bfd2.kueue.x-k8s.io",
        identity,
        15,
    )
}

#[tokio::test]
async fn nothing_is_written_while_kueue_holds_the_lease_and_wasq_leads_once_it_expires() {
    let cluster = kueue_cluster();
    let mut objects = cluster.objects.clone();
    let kueue_pod = "kueue-controller-manager-6d8f7c9b5-x2x7q_0f6c1b9e-3c1d-4a57-9a43-2f1e7d1c5b21";
    let lease = kueue_lease(kueue_pod, 15, "2026-01-01T00:00:00.000000Z");
    objects.push(lease.clone());
    let mut env = Env::new(objects);
    let wasq = lock(&env, "wasq-0");
    env.list_all();
    // Kueue renewed 5 s ago: wasq stands by, its mirror and webhooks' view current.
    assert!(
        !wasq
            .try_acquire_or_renew(at("2026-01-01T00:00:05Z"))
            .await
            .unwrap()
    );
    env.controller.stand_by();
    env.controller.stand_by();
    assert_eq!(changes(&env), Vec::<String>::new());
    let (ready, leading) = {
        let shared = env.controller.shared.read().unwrap();
        (shared.ready, shared.leading)
    };
    assert!(ready && !leading, "a standby is ready and does not lead");
    assert_eq!(stored(&env, &lease.0)["spec"]["holderIdentity"], kueue_pod);

    // Kueue stopped without releasing: 15 s after its last renewal the Lease is wasq's.
    assert!(
        wasq.try_acquire_or_renew(at("2026-01-01T00:00:16Z"))
            .await
            .unwrap()
    );
    let held = stored(&env, &lease.0)["spec"].clone();
    assert_eq!(held["holderIdentity"], "wasq-0");
    assert_eq!(held["leaseTransitions"], 4);
    // Kueue coming back (or another replica) now waits for wasq.
    let other = lock(&env, kueue_pod);
    assert!(
        !other
            .try_acquire_or_renew(at("2026-01-01T00:00:20Z"))
            .await
            .unwrap()
    );
    env.api.clear_requests();
    env.step().await;
    env.step().await;
    assert!(
        changes(&env)
            .iter()
            .any(|l| *l == format!("PATCH {}/status", cluster.hi.workload_path())),
        "the leader schedules: {:#?}",
        changes(&env)
    );
}

#[tokio::test]
async fn a_lease_kueue_released_on_shutdown_is_taken_at_once() {
    let cluster = kueue_cluster();
    let mut objects = cluster.objects.clone();
    // client-go's release (Kueue runs with LeaderElectionReleaseOnCancel): no holder, 1 s.
    let lease = kueue_lease("", 1, "2026-01-01T00:00:00.000000Z");
    objects.push(lease.clone());
    let env = Env::new(objects);
    let wasq = lock(&env, "wasq-0");
    assert!(
        wasq.try_acquire_or_renew(at("2026-01-01T00:00:00.5Z"))
            .await
            .unwrap()
    );
    let spec = &stored(&env, &lease.0)["spec"];
    assert_eq!(
        (&spec["holderIdentity"], &spec["leaseDurationSeconds"]),
        (&json!("wasq-0"), &json!(15))
    );
}

/// Kueue's job reconciler keeps an admitted Workload for its Job (`FindMatchingWorkloads`,
/// `EquivalentToWorkload`, `expectedRunningPodSets`, `equality.ComparePodSets`): the Job is its
/// controller; the podSet counts, init containers and containers are equal (tolerations
/// ignored once admitted); it holds quota and is admitted, and its Job runs.
fn kueue_keeps(job: &Value, wl: &Value) -> Result<(), String> {
    let owner = &wl["metadata"]["ownerReferences"][0];
    if owner["controller"] != true
        || owner["name"] != job["metadata"]["name"]
        || owner["uid"] != job["metadata"]["uid"]
    {
        return Err(format!("not controlled by its Job: {owner}"));
    }
    let ps = &wl["spec"]["podSets"][0];
    let template = &job["spec"]["template"]["spec"];
    let count = job["spec"]["parallelism"]
        .as_i64()
        .min(job["spec"]["completions"].as_i64());
    if ps["count"].as_i64() != count {
        return Err(format!("count {} for a Job of {count:?}", ps["count"]));
    }
    for field in ["containers", "initContainers"] {
        if ps["template"]["spec"][field] != template[field] {
            return Err(format!("{field} differ"));
        }
    }
    if condition(wl, "QuotaReserved")["status"] != "True"
        || condition(wl, "Admitted")["status"] != "True"
    {
        return Err("not admitted".into());
    }
    if job["spec"]["suspend"] != false {
        return Err("the Job is suspended".into());
    }
    Ok(())
}

#[tokio::test]
async fn what_wasq_writes_is_what_kueue_writes_so_kueue_keeps_it_when_started_again() {
    let mut cluster = kueue_cluster();
    // A Job created while wasq runs (its webhook suspended it): wasq makes its Workload.
    let fresh = job("fresh", 1, 30);
    cluster.objects.push((fresh.job_path(), fresh.job()));
    let env = started(&cluster).await;

    // The Workload wasq created is the one Kueue would have created.
    let made = stored(&env, &fresh.workload_path());
    let expected = fresh.workload();
    // (Not Kueue's `kueue.x-k8s.io/resource-in-use` finalizer: wasq creates its Workloads
    // without it. Kueue started again keeps them all the same — it never adds it to an
    // existing Workload — and a deleted Job's Workload goes with it.)
    for field in ["labels", "ownerReferences"] {
        assert_eq!(
            made["metadata"][field], expected["metadata"][field],
            "{field}"
        );
    }
    // The spec, but for `active` (the CRD's default, which the double does not apply) and
    // the pod template's labels: wasq keeps the Job controller's `controller-uid` and
    // `job-name` labels that Kueue's `cleanLabels` drops (Kueue compares no labels).
    let without = |spec: &Value| {
        let mut spec = spec.clone();
        spec.as_object_mut().unwrap().remove("active");
        spec["podSets"][0]["template"]["metadata"] = Value::Null;
        spec
    };
    assert_eq!(without(&made["spec"]), without(&expected["spec"]));
    assert_eq!(
        made["spec"]["podSets"][0]["template"]["metadata"]["labels"]["batch.kubernetes.io/job-name"],
        "fresh"
    );

    // The Workloads wasq admitted have Kueue's admission and conditions: pending ones that
    // `SetQuotaReservation` and `SyncAdmittedCondition` turned admitted.
    for j in [&cluster.hi, &cluster.old] {
        let wl = stored(&env, &j.workload_path());
        assert_eq!(
            wl["status"]["admission"],
            j.admission(CQ, "on-demand"),
            "{}",
            j.name
        );
        let kueue = j.admitted_workload(CQ, "on-demand", "2026-01-01T00:00:00Z");
        for type_ in ["QuotaReserved", "Admitted"] {
            assert_eq!(
                timeless(condition(&wl, type_)),
                timeless(condition(&kueue, type_)),
                "{} {type_}",
                j.name
            );
        }
        // The Job as Kueue's `startJob` leaves it (what Kueue's equivalence reads).
        let job = stored(&env, &j.job_path());
        let template = &job["spec"]["template"]["spec"];
        assert_eq!(
            template["nodeSelector"],
            json!({"instance-type": "on-demand"})
        );
        assert_eq!(
            template["tolerations"],
            j.running_job(&flavor(), CQ, ADMITTED_AT)["spec"]["template"]["spec"]["tolerations"]
        );
        kueue_keeps(&job, &wl).unwrap_or_else(|e| panic!("{}: {e}", j.name));
    }
    // Kueue's cache, rebuilt from every `status.admission` when Kueue starts again, holds no
    // more than the quota; Kueue's own running Workloads are still kept.
    let mut reserved = 0;
    for j in cluster
        .running
        .iter()
        .chain([&cluster.hi, &cluster.old, &fresh])
    {
        let wl = stored(&env, &j.workload_path());
        if wl["status"]["admission"].is_null() {
            continue;
        }
        kueue_keeps(&stored(&env, &j.job_path()), &wl)
            .unwrap_or_else(|e| panic!("{}: {e}", j.name));
        reserved += j.usage().0;
    }
    assert_eq!(reserved, 12_000);

    // The ClusterQueue status has Kueue's shape and figures.
    let cq = &stored(&env, &format!("{KUEUE}/clusterqueues/{CQ}"))["status"];
    let kueue_status = kueue::cluster_queue_status("on-demand", 12_000, 48 * 1024, 4, 3);
    for field in [
        "flavorsReservation",
        "flavorsUsage",
        "reservingWorkloads",
        "admittedWorkloads",
        "pendingWorkloads",
    ] {
        assert_eq!(cq[field], kueue_status[field], "{field}");
    }
    assert_eq!(
        timeless(&cq["conditions"][0]),
        timeless(&kueue_status["conditions"][0])
    );
}

/// The index of `batch/v1` Job among the controller's kinds.
fn job_source(env: &Env) -> wasq::k8s::sync::mirror::Source {
    let i = env
        .controller
        .kinds()
        .iter()
        .position(|k| k.spec.api_version == "batch/v1" && k.spec.kind == "Job")
        .expect("Jobs are managed");
    wasq::k8s::sync::mirror::Source::Job(i)
}

/// Kueue's `kueue.x-k8s.io/resource-in-use` finalizer on a Workload Kueue made comes off once
/// the Workload finishes under wasq (Kueue's job reconciler removes it then); the patch
/// tests the list it replaces.
#[tokio::test]
async fn kueues_finalizer_comes_off_a_workload_that_finishes_under_wasq() {
    let cluster = kueue_cluster();
    let mut env = started(&cluster).await;
    let j = &cluster.running[0];
    assert_eq!(
        stored(&env, &j.workload_path())["metadata"]["finalizers"],
        json!(["kueue.x-k8s.io/resource-in-use"])
    );
    env.api.clear_requests();
    env.api.put(
        &j.job_path(),
        j.completed_job(&flavor(), CQ, ADMITTED_AT, "2026-01-01T00:00:00Z"),
    );
    env.applied(job_source(&env), &j.job_path());
    env.step().await;
    env.step().await;
    let wl = stored(&env, &j.workload_path());
    assert_eq!(condition(&wl, "Finished")["status"], "True", "{wl}");
    assert_eq!(wl["metadata"]["finalizers"], json!([]), "{wl}");
    assert!(
        env.api.patches(&j.workload_path()).contains(&json!([
            {"op": "test", "path": "/metadata/finalizers", "value": ["kueue.x-k8s.io/resource-in-use"]},
            {"op": "replace", "path": "/metadata/finalizers", "value": []}
        ])),
        "{:#?}",
        changes(&env)
    );
}

/// A Workload Kueue made, deleted while its Job runs (its finalizer holds it, with its quota):
/// wasq stops the Job first, then removes the finalizer, as Kueue's job reconciler does; until
/// then the quota stays counted.
#[tokio::test]
async fn a_deleted_kueue_workload_has_its_job_stopped_before_its_finalizer_comes_off() {
    let cluster = kueue_cluster();
    let mut env = started(&cluster).await;
    let j = &cluster.running[0];
    env.api.clear_requests();
    // Deleted as a client deletes it: the finalizer keeps it, with a deletionTimestamp.
    env.api.delete(&j.workload_path()).expect("deleted");
    assert!(stored(&env, &j.workload_path())["metadata"]["deletionTimestamp"].is_string());
    env.applied(
        wasq::k8s::sync::mirror::Source::Kueue(wasq::k8s::schema::kinds::KueueKind::Workload),
        &j.workload_path(),
    );
    env.step().await;
    let job_patch = format!("PATCH {}", j.job_path());
    let wl_patch = format!("PATCH {}", j.workload_path());
    let changed = changes(&env);
    let at = |line: &str| changed.iter().position(|l| l == line);
    let (Some(stopped), Some(released)) = (at(&job_patch), at(&wl_patch)) else {
        panic!("the Job stopped and the finalizer removed: {changed:#?}");
    };
    assert!(stopped < released, "{changed:#?}");
    assert_eq!(stored(&env, &j.job_path())["spec"]["suspend"], true);
    // Its last finalizer gone, the API server deleted it; the stopped Job got a new Workload,
    // queued again (as Kueue's job reconciler makes one for a Job without).
    let again = stored(&env, &j.workload_path());
    assert_ne!(again["metadata"]["uid"], format!("wl-{}", j.uid), "{again}");
    assert!(again["metadata"]["deletionTimestamp"].is_null(), "{again}");
    assert!(again["status"]["admission"].is_null(), "{again}");
}
