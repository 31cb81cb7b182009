//! The controller's cost per watch event (issue 14): one Workload arriving at a controller
//! that already holds `N` pending Workloads, taken into the live core alone
//! (`core::sync_workload`, what the controller does for every Workload event) against the
//! restart path it replaced (`core::build`, a rebuild of the whole core from the mirror), at
//! N = 1,000 / 10,000 / 50,000. The first stays flat as N grows; the second grows with N.
//!
//! Also printed (not a criterion measurement): the heap bytes one pending Workload costs the
//! controller — its decoded object in the mirror plus its record and queue entry in the core —
//! counted by a global allocator that tallies live bytes, at 10,000 pending.
//!
//! The shape is Kueue's performance-test cluster in miniature: 30 ClusterQueues in one cohort
//! (cpu 20 nominal each), one LocalQueue per ClusterQueue, every Workload one pod of 1 cpu with
//! a job-like pod template, all pending (the core's queues hold them).

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use wasq::k8s::core::{self, Configure};
use wasq::k8s::mirror::{Mirror, Observed, Source};
use wasq::k8s::resources::KueueKind;

/// Counts live heap bytes.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

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
        group.bench_with_input(BenchmarkId::new("incremental", n), &n, |b, _| {
            b.iter(|| {
                let w = workload(next);
                let key = format!("ns-{}/job-w{next}-4f2a1", next % CQS);
                next += 1;
                mirror.observe(Observed::Applied(Source::Kueue(KueueKind::Workload), w));
                black_box(core::sync_workload(
                    &mut s, &mirror, &catalog, &key, NOW,
                ))
            })
        });
        group.bench_with_input(BenchmarkId::new("rebuild", n), &n, |b, _| {
            b.iter(|| black_box(core::build(&mirror, NOW, &configure)))
        });
    }
    group.finish();
}

/// Heap bytes per pending Workload in the mirror and the core, printed.
fn memory_per_pending_workload(_: &mut Criterion) {
    let n = 10_000;
    let configure = no_policies();
    let mut mirror = Mirror::new(0);
    configuration(&mut mirror);
    let mut s = core::build(&mirror, NOW, &configure);
    let catalog = core::catalog(&mirror);
    let objects: Vec<_> = (0..n).map(workload).collect();
    let before = LIVE.load(Ordering::Relaxed);
    for (i, w) in objects.into_iter().enumerate() {
        let key = format!("ns-{}/job-w{i}-4f2a1", i % CQS);
        mirror.observe(Observed::Applied(Source::Kueue(KueueKind::Workload), w));
        core::sync_workload(&mut s, &mirror, &catalog, &key, NOW);
    }
    s.flush_submissions(NOW);
    // The work lists of the pass that took them in are drained, as after a pass.
    let _ = mirror.take_dirty();
    let after = LIVE.load(Ordering::Relaxed);
    assert_eq!(s.queues.pending_total(), n, "every Workload is pending");
    println!(
        "controller memory per pending Workload (mirror + core, {n} pending): {} bytes",
        (after - before) / n as isize
    );
    black_box((&mirror, &s));
}

criterion_group!(benches, watch_event, memory_per_pending_workload);
criterion_main!(benches);
