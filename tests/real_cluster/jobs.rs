//! Jobs end to end: `wasq controller` (the binary, its webhooks called by the real API server)
//! queues a batch/v1 Job created as Kueue's docs show it, admits it, and the real Job
//! controller, scheduler and KWOK run its pods on fake nodes to completion; a high-priority Job
//! preempts a running low-priority one.
//!
//! The ResourceFlavor is the one Kueue's docs give for tainted nodes
//! (`resource-flavor-tolerations.yaml`) fitted to KWOK's nodes: their `type: kwok` label and a
//! toleration of their `kwok.x-k8s.io/node` taint, which wasq writes into the Job's pod
//! template at admission — without it no pod would be scheduled.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::{Value, json};
use wasq::k8s::schema::kinds::KueueKind;

use crate::cluster::{ControlPlane, kwok_node};
use crate::crds;
use crate::kueue_docs::api_for;
use crate::wasq::{Options, Wasq};

/// Kueue's `site/static/examples/jobs/sample-job.yaml`, as it is.
const SAMPLE_JOB: &str = r#"
apiVersion: batch/v1
kind: Job
metadata:
  generateName: sample-job-
  namespace: default
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  parallelism: 3
  completions: 3
  template:
    spec:
      containers:
      - name: dummy-job
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        command: [ "/bin/sh" ]
        args: [ "-c", "sleep 60" ]
        resources:
          requests:
            cpu: "1"
            memory: "200Mi"
      restartPolicy: Never
"#;

/// How long a step of a test may take (a controller pass, the Job controller, the scheduler
/// and KWOK each add a second or less on an idle machine; two busy cores are slower).
pub const STEP: Duration = Duration::from_secs(60);

/// A control plane running pods on two KWOK nodes, wasq's CRDs, and one wasq replica whose
/// webhooks are in effect; then `objects` (Kueue objects) created, through those webhooks.
pub async fn set_up(objects: &[Value]) -> Result<(ControlPlane, kube::Client, Wasq)> {
    set_up_with(&Options::new("wasq-0"), objects).await
}

/// [`set_up`] with a replica run as `options` say.
pub async fn set_up_with(
    options: &Options,
    objects: &[Value],
) -> Result<(ControlPlane, kube::Client, Wasq)> {
    let nodes = (0..2)
        .map(|i| kwok_node(&format!("kwok-node-{i}")))
        .collect::<Result<Vec<_>>>()?;
    set_up_on(options, &[], Some(nodes), objects).await
}

/// [`set_up_with`] with the CRD files `other_crds` of `.ci/control-plane/crds.txt` installed
/// too (before wasq starts: it manages a kind only when its API is served at start-up), and
/// pods run on `nodes` (no pods run, no controller manager, scheduler or KWOK, when `None`).
pub async fn set_up_on(
    options: &Options,
    other_crds: &[&str],
    nodes: Option<Vec<Node>>,
    objects: &[Value],
) -> Result<(ControlPlane, kube::Client, Wasq)> {
    let mut plane = ControlPlane::start().await?;
    let client = plane.client().await?;
    // Before the controller manager: its garbage collector then watches Workloads from the
    // start (it finds resources added later at its next discovery, up to 30 s on).
    crds::install(&client).await?;
    crds::install_files(&client, other_crds).await?;
    if let Some(nodes) = nodes {
        plane.run_pods_on(nodes).await?;
    }
    let mut wasq = Wasq::start(&plane, options).await?;
    wasq.wait_ready().await?;
    wasq.register_webhooks(&client).await?;
    create_all(&client, objects).await?;
    Ok((plane, client, wasq))
}

/// Creates Kueue objects.
pub async fn create_all(client: &kube::Client, objects: &[Value]) -> Result<()> {
    for object in objects {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        api_for(client, object)?
            .create(
                &PostParams::default(),
                &serde_json::from_value(object.clone())?,
            )
            .await
            .with_context(|| format!("creating {} {name}", object["kind"]))?;
    }
    Ok(())
}

/// The flavor of the KWOK nodes (see the module's documentation).
pub fn kwok_flavor() -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
           "metadata": {"name": "kwok"},
           "spec": {"nodeLabels": {"type": "kwok"},
                    "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists",
                                     "effect": "NoSchedule"}]}})
}

/// `single-clusterqueue-setup.yaml`'s ClusterQueue on the KWOK flavor with `cpu` CPUs, and
/// `preemption` when given.
pub fn cluster_queue(cpu: u32, preemption: Option<Value>) -> Value {
    let mut cq = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "cluster-queue"},
        "spec": {"namespaceSelector": {},
                 "resourceGroups": [{"coveredResources": ["cpu", "memory"],
                     "flavors": [{"name": "kwok", "resources": [
                         {"name": "cpu", "nominalQuota": cpu},
                         {"name": "memory", "nominalQuota": "36Gi"}]}]}]}});
    if let Some(p) = preemption {
        cq["spec"]["preemption"] = p;
    }
    cq
}

/// `single-clusterqueue-setup.yaml`'s LocalQueue.
pub fn local_queue() -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
           "metadata": {"namespace": "default", "name": "user-queue"},
           "spec": {"clusterQueue": "cluster-queue"}})
}

/// The sample Job, with `labels` added to its own.
pub fn sample_job(labels: &[(&str, &str)]) -> Result<Job> {
    let mut job: Value = serde_saphyr::from_str(SAMPLE_JOB)?;
    for (k, v) in labels {
        job["metadata"]["labels"][*k] = json!(v);
    }
    Ok(serde_json::from_value(job)?)
}

/// Asks KWOK (`kwok-stages.yaml`) to keep a Job's pods Running for an hour instead of a second.
pub fn keep_running(job: &mut Job) {
    if let Some(spec) = job.spec.as_mut() {
        spec.template
            .metadata
            .get_or_insert_with(Default::default)
            .annotations
            .get_or_insert_with(Default::default)
            .insert("pod-complete.stage.kwok.x-k8s.io/delay".into(), "1h".into());
    }
}

/// Fails when an object of `paths` (API paths) changes within `quiet`: once a flow is done,
/// nothing writes its objects again (no write loop over a field the real server defaults or
/// drops). The error names each object changed and who wrote it (its managedFields).
pub async fn left_alone(client: &kube::Client, paths: &[String], quiet: Duration) -> Result<()> {
    async fn read(client: &kube::Client, path: &str) -> Result<Value> {
        let text = client
            .request_text(http::Request::get(path).body(Vec::new())?)
            .await
            .with_context(|| format!("GET {path}"))?;
        Ok(serde_json::from_str(&text)?)
    }
    let mut before = Vec::new();
    for path in paths {
        before.push(read(client, path).await?);
    }
    tokio::time::sleep(quiet).await;
    let mut changed = Vec::new();
    for (path, old) in paths.iter().zip(before) {
        let new = read(client, path).await?;
        if new["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"] {
            changed.push(format!(
                "{path}: managedFields {} → {}",
                old["metadata"]["managedFields"], new["metadata"]["managedFields"]
            ));
        }
    }
    anyhow::ensure!(
        changed.is_empty(),
        "written again within {}s of the end:\n  {}",
        quiet.as_secs_f64(),
        changed.join("\n  ")
    );
    Ok(())
}

/// Polls `check` every 200 ms until it gives `Some`, for at most [`STEP`]; the error names
/// `what`, the last thing seen, and ends with the end of wasq's log.
pub async fn until<T>(
    what: &str,
    wasq: &mut Wasq,
    mut check: impl AsyncFnMut(&mut String) -> Result<Option<T>>,
) -> Result<T> {
    let started = Instant::now();
    let mut seen = String::new();
    loop {
        if let Some(found) = check(&mut seen).await? {
            return Ok(found);
        }
        wasq.still_running()?;
        if started.elapsed() > STEP {
            bail!(
                "{what}: not within {}s; last seen: {seen}\nthe end of wasq's log:\n{}",
                STEP.as_secs(),
                wasq.log_tail()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The Workload a Job owns, when there is one.
pub async fn workload_of(client: &kube::Client, job: &Job) -> Result<Option<Value>> {
    let ns = job.metadata.namespace.as_deref().unwrap_or("default");
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), ns, &KueueKind::Workload.api_resource());
    let uid = job.metadata.uid.as_deref().unwrap_or_default();
    for wl in api.list(&ListParams::default()).await?.items {
        let owned = wl
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.uid == uid);
        if owned {
            return Ok(Some(serde_json::to_value(wl)?));
        }
    }
    Ok(None)
}

/// Whether an object's `status.conditions` has `type` with `status`.
pub fn condition(object: &Value, type_: &str, status: &str) -> bool {
    object["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == type_ && c["status"] == status)
}

/// An object's condition of `type` (`null` when it has none).
pub fn condition_of(object: &Value, type_: &str) -> Value {
    object["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == type_)
        .cloned()
        .unwrap_or_default()
}

/// The pods of a Job (by the `batch.kubernetes.io/job-name` label the Job controller sets).
pub async fn pods_of(client: &kube::Client, job: &Job) -> Result<Vec<Pod>> {
    let ns = job.metadata.namespace.as_deref().unwrap_or("default");
    let name = job.metadata.name.as_deref().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let selector = format!("batch.kubernetes.io/job-name={name}");
    Ok(pods
        .list(&ListParams::default().labels(&selector))
        .await?
        .items)
}

pub fn phases(pods: &[Pod]) -> Vec<(String, String, String)> {
    pods.iter()
        .map(|p| {
            (
                p.metadata.name.clone().unwrap_or_default(),
                p.spec
                    .as_ref()
                    .and_then(|s| s.node_name.clone())
                    .unwrap_or_default(),
                p.status
                    .as_ref()
                    .and_then(|s| s.phase.clone())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

/// Waits until `job` has `count` pods on KWOK nodes, each in `phase`.
pub async fn pods_in_phase(
    client: &kube::Client,
    wasq: &mut Wasq,
    job: &Job,
    count: usize,
    phase: &str,
) -> Result<Vec<Pod>> {
    let what = format!(
        "{count} pods of Job {} {phase} on KWOK nodes",
        job.metadata.name.as_deref().unwrap_or_default()
    );
    until(&what, wasq, async |seen| {
        let pods = pods_of(client, job).await?;
        let placed = phases(&pods);
        *seen = format!("{placed:?}");
        let done = placed.len() == count
            && placed
                .iter()
                .all(|(_, node, p)| node.starts_with("kwok-node-") && p == phase);
        Ok(done.then_some(pods))
    })
    .await
}

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn queued_job_is_admitted_runs_on_kwok_nodes_and_finishes() -> Result<()> {
    let begun = Instant::now();
    let (_plane, client, mut wasq) =
        set_up(&[kwok_flavor(), cluster_queue(9, None), local_queue()]).await?;
    let set_up_took = begun.elapsed();

    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let created = Instant::now();
    let job = jobs
        .create(&PostParams::default(), &sample_job(&[])?)
        .await?;
    let name = job.metadata.name.clone().unwrap_or_default();
    assert_eq!(
        job.spec.as_ref().and_then(|s| s.suspend),
        Some(true),
        "wasq's webhook creates a queued Job suspended"
    );

    let workload = until("the Job's Workload admitted", &mut wasq, async |seen| {
        let wl = workload_of(&client, &job).await?;
        *seen = format!("{wl:?}");
        Ok(wl.filter(|w| condition(w, "Admitted", "True")))
    })
    .await?;
    let admitted_after = created.elapsed();
    let admission = &workload["status"]["admission"];
    assert_eq!(admission["clusterQueue"], "cluster-queue");
    assert_eq!(
        admission["podSetAssignments"][0]["flavors"]["cpu"], "kwok",
        "{admission}"
    );
    assert_eq!(admission["podSetAssignments"][0]["count"], 3, "{admission}");

    let started = until("the Job unsuspended", &mut wasq, async |seen| {
        let job = jobs.get(&name).await?;
        *seen = format!("suspend {:?}", job.spec.as_ref().and_then(|s| s.suspend));
        Ok((job.spec.as_ref().and_then(|s| s.suspend) == Some(false)).then_some(job))
    })
    .await?;
    let template = serde_json::to_value(&started.spec.as_ref().context("a spec")?.template)?;
    assert_eq!(
        template["spec"]["nodeSelector"],
        json!({"type": "kwok"}),
        "{template}"
    );
    assert!(
        template["spec"]["tolerations"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["key"] == "kwok.x-k8s.io/node"),
        "the flavor's toleration is in the pod template: {template}"
    );

    let pods = pods_in_phase(&client, &mut wasq, &job, 3, "Succeeded").await?;
    let ran_after = created.elapsed();
    for pod in &pods {
        let status = pod.status.as_ref().context("a pod status")?;
        assert!(status.start_time.is_some(), "KWOK ran the pod: {status:?}");
    }

    until("the Job Complete", &mut wasq, async |seen| {
        let job = serde_json::to_value(jobs.get(&name).await?)?;
        *seen = format!("{}", job["status"]);
        Ok(condition(&job, "Complete", "True").then_some(()))
    })
    .await?;
    let workload = until("the Workload Finished", &mut wasq, async |seen| {
        let wl = workload_of(&client, &job).await?;
        *seen = format!("{wl:?}");
        Ok(wl.filter(|w| condition(w, "Finished", "True")))
    })
    .await?;
    let finished_after = created.elapsed();
    let finished = condition_of(&workload, "Finished");
    assert_eq!(finished["reason"], "Succeeded", "{finished}");
    assert_eq!(wasq.warnings(), Vec::<String>::new());
    eprintln!(
        "set-up {:.1}s; from the Job's creation: admitted {:.1}s, pods Succeeded {:.1}s, Workload Finished {:.1}s",
        set_up_took.as_secs_f64(),
        admitted_after.as_secs_f64(),
        ran_after.as_secs_f64(),
        finished_after.as_secs_f64()
    );
    Ok(())
}

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn high_priority_job_preempts_a_running_low_priority_one() -> Result<()> {
    let priority = |name: &str, value: i32| {
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
               "metadata": {"name": name}, "value": value, "description": name})
    };
    let preemption = json!({"withinClusterQueue": "LowerPriority"});
    let (_plane, client, mut wasq) = set_up(&[
        kwok_flavor(),
        cluster_queue(3, Some(preemption)),
        local_queue(),
        priority("low-priority", 100),
        // Kueue's run_job_with_workload_priority.md.
        priority("sample-priority", 10000),
    ])
    .await?;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");

    let mut low = sample_job(&[("kueue.x-k8s.io/priority-class", "low-priority")])?;
    keep_running(&mut low);
    let low = jobs.create(&PostParams::default(), &low).await?;
    let low_name = low.metadata.name.clone().unwrap_or_default();
    pods_in_phase(&client, &mut wasq, &low, 3, "Running").await?;

    let mut high = sample_job(&[("kueue.x-k8s.io/priority-class", "sample-priority")])?;
    keep_running(&mut high);
    let high = jobs.create(&PostParams::default(), &high).await?;
    let created = Instant::now();

    let evicted = until(
        "the low-priority Workload evicted",
        &mut wasq,
        async |seen| {
            let wl = workload_of(&client, &low).await?;
            *seen = format!("{wl:?}");
            Ok(wl.filter(|w| condition(w, "Evicted", "True")))
        },
    )
    .await?;
    let evicted_after = created.elapsed();
    let reason = evicted["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Evicted")
        .map(|c| c["reason"].clone());
    assert_eq!(reason, Some(json!("Preempted")), "{}", evicted["status"]);

    until(
        "the low-priority Job suspended, its pods gone",
        &mut wasq,
        async |seen| {
            let job = jobs.get(&low_name).await?;
            let pods = pods_of(&client, &low).await?;
            let suspended = job.spec.as_ref().and_then(|s| s.suspend) == Some(true);
            *seen = format!("suspended {suspended}, pods {:?}", phases(&pods));
            Ok((suspended && pods.is_empty()).then_some(()))
        },
    )
    .await?;
    let victim_gone_after = created.elapsed();

    pods_in_phase(&client, &mut wasq, &high, 3, "Running").await?;
    let high_running_after = created.elapsed();

    let low_wl = workload_of(&client, &low)
        .await?
        .context("the low Workload")?;
    assert!(
        condition(&low_wl, "QuotaReserved", "False"),
        "the victim gave its quota back: {}",
        low_wl["status"]
    );
    let low_job = serde_json::to_value(jobs.get(&low_name).await?)?;
    assert!(
        low_job["spec"]["template"]["spec"]["nodeSelector"].is_null(),
        "the victim's pod template is restored: {}",
        low_job["spec"]["template"]
    );
    assert_eq!(wasq.warnings(), Vec::<String>::new());
    eprintln!(
        "from the high-priority Job's creation: victim evicted {:.1}s, its pods gone {:.1}s, \
         the high-priority pods Running {:.1}s",
        evicted_after.as_secs_f64(),
        victim_gone_after.as_secs_f64(),
        high_running_after.as_secs_f64()
    );
    Ok(())
}
