//! The API server killed and started again mid-run, after etcd compacted its history: wasq's
//! watches are cut and resume from resourceVersions the new API server no longer serves
//! (`410 Gone`), so its watchers list again. Nothing is lost: a Job admitted before keeps its
//! one admission, a Job created after is admitted and runs.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, PostParams};

use crate::jobs::{
    cluster_queue, condition, keep_running, kwok_flavor, local_queue, pods_in_phase, sample_job,
    set_up_with, until, workload_of,
};
use crate::leader::{admitted_events, since, workload_name};
use crate::wasq::Options;

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn nothing_is_lost_when_the_apiserver_restarts_after_a_compaction() -> Result<()> {
    // The Lease outlives the restart: the replica keeps leading instead of stopping.
    let options = Options {
        lease_duration_seconds: 120,
        ..Options::new("wasq-0")
    };
    let (mut plane, client, mut wasq) = set_up_with(
        &options,
        &[kwok_flavor(), cluster_queue(9, None), local_queue()],
    )
    .await?;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let mut before = sample_job(&[])?;
    keep_running(&mut before);
    let before = jobs.create(&PostParams::default(), &before).await?;
    pods_in_phase(&client, &mut wasq, &before, 3, "Running").await?;
    let admitted = workload_of(&client, &before)
        .await?
        .context("the first Job's Workload")?;
    // Its Admitted Event out before the API server goes (Events are sent off the scheduling
    // path, and one that fails is dropped, by design).
    until(
        "the first Admitted Event published",
        &mut wasq,
        async |seen| {
            let events = admitted_events(&client).await?;
            *seen = format!("{events:?}");
            Ok(events.contains_key(&workload_name(&admitted)).then_some(()))
        },
    )
    .await?;

    // KWOK's node heartbeats and the controllers' Leases move etcd on meanwhile, so wasq's
    // watches stand at older revisions than the compaction's.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let revision = plane.compact_etcd()?;
    let down = Instant::now();
    plane.restart_apiserver().await?;
    let restart_took = down.elapsed();

    let client = plane.client().await?;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let mut after = sample_job(&[])?;
    keep_running(&mut after);
    // wasq's webhook answers the new API server as it did the old one.
    let after = jobs.create(&PostParams::default(), &after).await?;
    assert_eq!(after.spec.as_ref().and_then(|s| s.suspend), Some(true));
    let created = Instant::now();
    pods_in_phase(&client, &mut wasq, &after, 3, "Running").await?;
    let running_after = created.elapsed();

    let now = workload_of(&client, &before)
        .await?
        .context("the first Job's Workload")?;
    assert!(condition(&now, "Admitted", "True"), "{}", now["status"]);
    assert_eq!(now["status"]["admission"], admitted["status"]["admission"]);
    assert_eq!(since(&now, "Admitted"), since(&admitted, "Admitted"));
    let after_wl = until("the second Job's Workload", &mut wasq, async |_| {
        workload_of(&client, &after).await
    })
    .await?;
    let events = until(
        "the second Admitted Event published",
        &mut wasq,
        async |seen| {
            let events = admitted_events(&client).await?;
            *seen = format!("{events:?}");
            Ok(events
                .contains_key(&workload_name(&after_wl))
                .then_some(events))
        },
    )
    .await?;
    assert_eq!(
        events,
        [(workload_name(&now), 1), (workload_name(&after_wl), 1)]
            .into_iter()
            .collect(),
        "one Admitted Event per admission"
    );
    // What wasq's watchers met: the restart, and resourceVersions the new API server no
    // longer serves (`too old resource version: 249 (285)`, 410 Expired), after which they
    // listed again.
    let warnings = wasq.warnings();
    let gone = warnings
        .iter()
        .filter(|w| w.contains("wasq::k8s::sync::watchers") && w.contains("Expired"))
        .count();
    assert!(
        gone > 0,
        "no watch of wasq's was answered 410 Gone: the test did not test what it says; \
         wasq's warnings:\n{}",
        warnings.join("\n")
    );
    eprintln!(
        "etcd compacted at revision {revision}; the API server down and ready again in {:.1}s; \
         {gone} of wasq's watches answered 410 Gone; the Job created after Running {:.1}s \
         after its creation",
        restart_took.as_secs_f64(),
        running_after.as_secs_f64()
    );
    Ok(())
}
