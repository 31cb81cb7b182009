//! Two replicas of `wasq controller` electing a leader through a real `coordination.k8s.io/v1`
//! Lease: the leader admits, is killed (`SIGKILL`) while Jobs wait, and the standby takes the
//! Lease over once it expires and carries on from what the cluster holds — admitting nothing
//! twice and nothing beyond the quota. The webhooks the API server calls are the standby's,
//! so a Job created while no replica leads is still queued suspended.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::Value;

use crate::cluster::ControlPlane;
use crate::crds;
use crate::jobs::{
    cluster_queue, condition, create_all, keep_running, kwok_flavor, local_queue, sample_job,
    until, workload_of,
};
use crate::wasq::{NAMESPACE, Options, Wasq};

/// Short, so that the standby takes over within seconds (renewed every second).
const LEASE_SECONDS: u32 = 4;

fn replica(identity: &str) -> Options {
    Options {
        lease_duration_seconds: LEASE_SECONDS,
        ..Options::new(identity)
    }
}

/// The Lease's holder and transitions.
async fn lease(client: &kube::Client) -> Result<Option<(String, i32)>> {
    let api: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
    Ok(api.get_opt("wasq-controller").await?.and_then(|l| {
        let spec = l.spec?;
        Some((spec.holder_identity?, spec.lease_transitions.unwrap_or(0)))
    }))
}

/// How many `Admitted` Events each Workload of `default` has (an Event that became a series
/// counts its series' count): once per admission, whichever replica recorded it.
pub async fn admitted_events(client: &kube::Client) -> Result<BTreeMap<String, i32>> {
    let api: Api<Event> = Api::namespaced(client.clone(), "default");
    let mut out = BTreeMap::new();
    for event in api.list(&ListParams::default()).await?.items {
        if event.reason.as_deref() != Some("Admitted") {
            continue;
        }
        let Some(name) = event.regarding.and_then(|r| r.name) else {
            continue;
        };
        *out.entry(name).or_default() += event.series.map_or(1, |s| s.count);
    }
    Ok(out)
}

pub fn workload_name(wl: &Value) -> String {
    wl["metadata"]["name"].as_str().unwrap_or_default().into()
}

/// The `lastTransitionTime` of a Workload's condition.
pub fn since(wl: &Value, type_: &str) -> Value {
    wl["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == type_)
        .map(|c| c["lastTransitionTime"].clone())
        .unwrap_or_default()
}

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn standby_takes_over_from_a_killed_leader_and_admits_nothing_twice() -> Result<()> {
    let mut plane = ControlPlane::start().await?;
    let client = plane.client().await?;
    // Before the controller manager, whose garbage collector then deletes the Workload of a
    // deleted Job at once (see jobs::set_up).
    crds::install(&client).await?;
    plane.run_pods(2).await?;

    let mut a = Wasq::start(&plane, &replica("wasq-a")).await?;
    a.wait_ready().await?;
    until("wasq-a holding the Lease", &mut a, async |seen| {
        let held = lease(&client).await?;
        *seen = format!("{held:?}");
        Ok(held.filter(|(holder, _)| holder == "wasq-a"))
    })
    .await?;
    let mut b = Wasq::start(&plane, &replica("wasq-b")).await?;
    b.wait_ready().await?;
    b.register_webhooks(&client).await?;
    create_all(
        &client,
        &[kwok_flavor(), cluster_queue(9, None), local_queue()],
    )
    .await?;

    // Four Jobs of 3 CPUs each in 9 CPUs: three run (for an hour), one waits.
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let mut created = Vec::new();
    for _ in 0..4 {
        let mut job = sample_job(&[])?;
        keep_running(&mut job);
        created.push(jobs.create(&PostParams::default(), &job).await?);
    }
    let (running, waiting) = until(
        "three Workloads admitted by wasq-a, one waiting, their Events out",
        &mut a,
        async |seen| {
            let mut admitted = Vec::new();
            let mut pending = Vec::new();
            for job in &created {
                match workload_of(&client, job).await? {
                    Some(wl) if condition(&wl, "Admitted", "True") => admitted.push(wl),
                    Some(wl) if condition(&wl, "QuotaReserved", "False") => pending.push(wl),
                    _ => {}
                }
            }
            let events = admitted_events(&client).await?;
            *seen = format!(
                "{} admitted, {} pending, Admitted Events {events:?}",
                admitted.len(),
                pending.len()
            );
            let recorded = admitted
                .iter()
                .all(|w| events.contains_key(&workload_name(w)));
            Ok((admitted.len() == 3 && pending.len() == 1 && recorded)
                .then_some((admitted, pending)))
        },
    )
    .await?;
    let (_, transitions) = lease(&client).await?.context("a Lease")?;

    drop(a);
    let killed = Instant::now();
    // Created while nobody leads: wasq-b's webhook queues it all the same.
    let mut late = sample_job(&[])?;
    keep_running(&mut late);
    let late = jobs.create(&PostParams::default(), &late).await?;
    assert_eq!(late.spec.as_ref().and_then(|s| s.suspend), Some(true));

    until("wasq-b holding the Lease", &mut b, async |seen| {
        let held = lease(&client).await?;
        *seen = format!("{held:?}");
        Ok(held.filter(|(holder, t)| holder == "wasq-b" && *t > transitions))
    })
    .await?;
    let took_over_after = killed.elapsed();

    // Room for one more: the first running Job goes (with its pods and Workload).
    let gone = &running[0];
    let gone_job = created
        .iter()
        .find(|j| {
            gone["metadata"]["ownerReferences"][0]["uid"].as_str() == j.metadata.uid.as_deref()
        })
        .context("the Job of an admitted Workload")?;
    jobs.delete(
        gone_job.metadata.name.as_deref().unwrap_or_default(),
        &DeleteParams::background(),
    )
    .await?;
    let deleted = Instant::now();
    let waiting_job = created
        .iter()
        .find(|j| {
            waiting[0]["metadata"]["ownerReferences"][0]["uid"].as_str()
                == j.metadata.uid.as_deref()
        })
        .context("the Job of the waiting Workload")?;
    until(
        "the Job that waited admitted by wasq-b",
        &mut b,
        async |seen| {
            let wl = workload_of(&client, waiting_job).await?;
            *seen = format!("{wl:?}");
            Ok(wl.filter(|w| condition(w, "Admitted", "True")))
        },
    )
    .await?;
    let admitted_after = deleted.elapsed();
    // A few more passes, for a second admission to show if there were one.
    tokio::time::sleep(Duration::from_secs(3)).await;
    b.still_running()?;

    for before in &running[1..] {
        let job = created
            .iter()
            .find(|j| {
                before["metadata"]["ownerReferences"][0]["uid"].as_str()
                    == j.metadata.uid.as_deref()
            })
            .context("a running Job")?;
        let now = workload_of(&client, job).await?.context("its Workload")?;
        assert!(condition(&now, "Admitted", "True"), "{}", now["status"]);
        assert_eq!(
            now["status"]["admission"], before["status"]["admission"],
            "wasq-b kept wasq-a's admission"
        );
        assert_eq!(since(&now, "Admitted"), since(before, "Admitted"));
    }
    let late_wl = workload_of(&client, &late)
        .await?
        .context("the late Job's Workload")?;
    assert!(
        condition(&late_wl, "QuotaReserved", "False"),
        "no quota for the late Job: {}",
        late_wl["status"]
    );
    let events = admitted_events(&client).await?;
    // The deleted Job's Workload is gone; its Event stays.
    let expected: BTreeMap<String, i32> = running
        .iter()
        .chain(&waiting)
        .map(|w| (workload_name(w), 1))
        .collect();
    assert_eq!(events, expected, "one Admitted Event per admission");
    assert_eq!(
        b.metric("kueue_admitted_workloads_total"),
        Some(1.0),
        "wasq-b admitted one Workload"
    );
    eprintln!(
        "leader killed → wasq-b holds the Lease {:.1}s (Lease {LEASE_SECONDS}s); \
         a Job deleted → the waiting one admitted {:.1}s",
        took_over_after.as_secs_f64(),
        admitted_after.as_secs_f64()
    );
    Ok(())
}
