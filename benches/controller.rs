//! The controller's cost per watch event (issue 14): one Workload arriving at a controller
//! that already holds `N` pending Workloads, taken into the live core alone
//! (`core::sync_workload`, what the controller does for every Workload event) against the
//! restart path it replaced (`core::build`, a rebuild of the whole core from the mirror), at
//! N = 1,000 / 10,000 / 50,000. The first stays flat as N grows; the second grows with N.
//!
//! Also printed (not a criterion measurement): the memory one pending Workload costs the
//! controller — its decoded object in the mirror plus its record and queue entry in the core —
//! as the growth of the process's resident memory while 100,000 pending Workloads are taken in
//! (allocator overhead included; each object's JSON is built and freed as it arrives).
//!
//! The shape is Kueue's performance-test cluster in miniature: 30 ClusterQueues in one cohort
//! (cpu 20 nominal each), one LocalQueue per ClusterQueue, every Workload one pod of 1 cpu with
//! a job-like pod template, all pending (the core's queues hold them).

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use wasq::k8s::schema::kinds::KueueKind;
use wasq::k8s::sync::core::{self, Configure};
use wasq::k8s::sync::mirror::{Mirror, Observed, Source};

/// Resident memory of this process in bytes (`VmRSS`), what the controller's pod is charged.
fn resident_bytes() -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<i64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

const CQS: usize = 30;
const NOW: i64 = 1_767_225_600_000;

fn obj(v: Value) -> kube::core::DynamicObject {
    serde_json::from_value(v).expect("a valid object")
}

fn configuration(mirror: &mut Mirror) {
    let kueue = |kind: KueueKind| Source::Kueue(kind);
    mirror.observe(Observed::Listed(
        kueue(KueueKind::ResourceFlavor),
        vec![obj(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": "default", "resourceVersion": "1"}, "spec": {}}))],
    ));
    let cqs = (0..CQS)
        .map(|i| {
            obj(json!({
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                "metadata": {"name": format!("cq-{i}"), "resourceVersion": "1"},
                "spec": {"cohortName": "all", "namespaceSelector": {},
                         "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                             {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "20"}]}]}]}}))
        })
        .collect();
    mirror.observe(Observed::Listed(kueue(KueueKind::ClusterQueue), cqs));
    let lqs = (0..CQS)
        .map(|i| {
            obj(json!({
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                "metadata": {"name": "lq", "namespace": format!("ns-{i}"), "resourceVersion": "1"},
                "spec": {"clusterQueue": format!("cq-{i}")}}))
        })
        .collect();
    mirror.observe(Observed::Listed(kueue(KueueKind::LocalQueue), lqs));
    let namespaces = (0..CQS)
        .map(|i| {
            obj(json!({"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": format!("ns-{i}"), "resourceVersion": "1"}}))
        })
        .collect();
    mirror.observe(Observed::Listed(Source::Namespace, namespaces));
}

/// A pending Workload as the job integration makes it.
fn workload(i: usize) -> kube::core::DynamicObject {
    obj(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": format!("job-w{i}-4f2a1"), "namespace": format!("ns-{}", i % CQS),
                     "resourceVersion": format!("{}", 10 + i), "uid": format!("uid-{i}"),
                     "creationTimestamp": "2026-01-01T00:00:00Z",
                     "labels": {"kueue.x-k8s.io/job-uid": format!("uid-job-{i}")},
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": format!("w{i}"),
                                          "uid": format!("uid-job-{i}"), "controller": true}]},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "registry.example/train:1.0",
                            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}]}}))
}

fn mirror_with(n: usize) -> Mirror {
    let mut m = Mirror::new(0);
    configuration(&mut m);
    m.observe(Observed::Listed(
        Source::Kueue(KueueKind::Workload),
        (0..n).map(workload).collect(),
    ));
    m
}

fn no_policies() -> Configure {
    Arc::new(|_| {})
}

fn watch_event(c: &mut Criterion) {
    let mut group = c.benchmark_group("watch_event");
    group.sample_size(10);
    let configure = no_policies();
    for n in [1_000usize, 10_000, 50_000] {
        let mut mirror = mirror_with(n);
        let mut s = core::build(&mirror, NOW, &configure);
        let catalog = core::catalog(&mirror);
        let mut next = n;
        // Each iteration times one Workload's arrival; its removal (untimed) keeps N pending.
        group.bench_with_input(BenchmarkId::new("incremental", n), &n, |b, _| {
            b.iter_custom(|iters| {
                let mut total = std::time::Duration::ZERO;
                for _ in 0..iters {
                    let w = workload(next);
                    let key = format!("ns-{}/job-w{next}-4f2a1", next % CQS);
                    next += 1;
                    let started = std::time::Instant::now();
                    mirror.observe(Observed::Applied(
                        Source::Kueue(KueueKind::Workload),
                        w.clone(),
                    ));
                    black_box(core::sync_workload(&mut s, &mirror, &catalog, &key, NOW));
                    total += started.elapsed();
                    mirror.observe(Observed::Deleted(Source::Kueue(KueueKind::Workload), w));
                    core::sync_workload(&mut s, &mirror, &catalog, &key, NOW);
                }
                total
            })
        });
        group.bench_with_input(BenchmarkId::new("rebuild", n), &n, |b, _| {
            b.iter(|| black_box(core::build(&mirror, NOW, &configure)))
        });
    }
    group.finish();
}

/// Resident bytes per pending Workload in the mirror and the core, printed.
fn memory_per_pending_workload(_: &mut Criterion) {
    let n = 100_000;
    let configure = no_policies();
    let mut mirror = Mirror::new(0);
    configuration(&mut mirror);
    let mut s = core::build(&mirror, NOW, &configure);
    let catalog = core::catalog(&mirror);
    // First the mirror alone, then the core taking every Workload in (the work lists drained
    // every 100 Workloads, as passes drain them).
    let before = resident_bytes();
    for i in 0..n {
        mirror.observe(Observed::Applied(
            Source::Kueue(KueueKind::Workload),
            workload(i),
        ));
        if i % 100 == 99 {
            let _ = mirror.take_dirty();
        }
    }
    let _ = mirror.take_dirty();
    let mirrored = resident_bytes();
    for i in 0..n {
        let key = format!("ns-{}/job-w{i}-4f2a1", i % CQS);
        core::sync_workload(&mut s, &mirror, &catalog, &key, NOW);
    }
    s.flush_submissions(NOW);
    let after = resident_bytes();
    assert_eq!(s.queues.pending_total(), n, "every Workload is pending");
    let per = |bytes: i64| bytes / n as i64;
    println!(
        "controller memory per pending Workload ({n} pending): {} bytes (mirror {} + core {})",
        per(after - before),
        per(mirrored - before),
        per(after - mirrored)
    );
    black_box((&mirror, &s));
}

criterion_group!(benches, memory_per_pending_workload, watch_event);
criterion_main!(benches);
