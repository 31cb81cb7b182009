//! Kueue's visibility API through the real aggregation layer: an `APIService` as Kueue's
//! (`v1beta2.visibility.kueue.x-k8s.io`, `insecureSkipTLSVerify`) pointing at wasq's
//! `--visibility-listen` (through an `ExternalName` Service naming `localhost`: nothing routes a
//! ClusterIP to a process on loopback), the API server started with a front proxy. Read as
//! Kueue's docs read it (`kubectl get --raw`), with positions; a user without the right refused
//! with Kubernetes' message, then allowed once bound to a role as Kueue's.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::cluster::ControlPlane;
use crate::jobs::{
    STEP, cluster_queue, keep_running, kwok_flavor, local_queue, sample_job, set_up,
};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;

const PATH: &str = "/apis/visibility.kueue.x-k8s.io/v1beta2";

/// `kubectl get --raw PATH` with `extra` arguments: (succeeded, stdout, stderr).
fn raw(plane: &ControlPlane, path: &str, extra: &[&str]) -> Result<(bool, String, String)> {
    let ran = plane.run_kubectl(&[&["get", "--raw", path][..], extra].concat(), None)?;
    Ok((ran.ok, ran.stdout, ran.stderr))
}

/// Creates `object` as a cluster-scoped `K`.
async fn create<K>(client: &kube::Client, object: Value) -> Result<()>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::Serialize
        + serde::de::DeserializeOwned,
    K: kube::Resource<Scope = k8s_openapi::ClusterResourceScope>,
{
    let object: K = serde_json::from_value(object)?;
    let name = object.meta().name.clone().unwrap_or_default();
    Api::<K>::all(client.clone())
        .create(&PostParams::default(), &object)
        .await
        .with_context(|| format!("creating {name}"))?;
    Ok(())
}

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane"]
async fn pending_workloads_are_read_through_the_aggregation_layer() -> Result<()> {
    // Room for one sample Job (3 cpus) at a time: the next two wait, in creation order.
    let (plane, client, mut wasq) =
        set_up(&[kwok_flavor(), cluster_queue(3, None), local_queue()]).await?;
    let service: Service = serde_json::from_value(
        json!({"metadata": {"name": "wasq-visibility-server", "namespace": "wasq-system"},
               "spec": {"type": "ExternalName", "externalName": "localhost"}}),
    )?;
    Api::<Service>::namespaced(client.clone(), "wasq-system")
        .create(&PostParams::default(), &service)
        .await?;
    create::<APIService>(
        &client,
        json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
               "metadata": {"name": "v1beta2.visibility.kueue.x-k8s.io"},
               "spec": {"group": "visibility.kueue.x-k8s.io", "version": "v1beta2",
                        "groupPriorityMinimum": 100, "versionPriority": 100,
                        "insecureSkipTLSVerify": true,
                        "service": {"name": "wasq-visibility-server", "namespace": "wasq-system",
                                    "port": wasq.visibility_port}}}),
    )
    .await?;

    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let mut names = Vec::new();
    for _ in 0..3 {
        let mut job = sample_job(&[])?;
        keep_running(&mut job);
        let made = jobs.create(&PostParams::default(), &job).await?;
        names.push(made.metadata.name.context("a generated name")?);
        // Creation order is the order of equal priorities.
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }

    // The aggregator marks the APIService available once wasq answers its discovery; then the
    // two waiting Jobs' Workloads are listed in order.
    let cq = format!("{PATH}/clusterqueues/cluster-queue/pendingworkloads");
    let started = Instant::now();
    let summary: Value = loop {
        let (ok, out, err) = raw(&plane, &cq, &[])?;
        if ok {
            let v: Value = serde_json::from_str(&out).context("a PendingWorkloadsSummary")?;
            if v["items"].as_array().is_some_and(|i| i.len() == 2) {
                break v;
            }
        }
        wasq.still_running()?;
        if started.elapsed() > STEP {
            bail!(
                "no two pending workloads through the aggregator: {out}{err}\n{}",
                wasq.log_tail()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(summary["kind"], "PendingWorkloadsSummary");
    assert_eq!(summary["apiVersion"], "visibility.kueue.x-k8s.io/v1beta2");
    let items = summary["items"].as_array().context("items")?;
    for (position, (item, job)) in items.iter().zip(&names[1..]).enumerate() {
        assert!(
            item["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.contains(job.as_str())),
            "{item} is not {job}'s Workload"
        );
        assert_eq!(item["positionInClusterQueue"], position as i64, "{item}");
        assert_eq!(item["positionInLocalQueue"], position as i64, "{item}");
        assert_eq!(item["localQueueName"], "user-queue");
    }
    // `wasq ctl list workloads` reads the same positions through the aggregator (kueuectl's
    // POSITION IN QUEUE is the position in the LocalQueue).
    let listed = Command::new(env!("CARGO_BIN_EXE_wasq"))
        .args(["ctl", "list", "workloads", "-n", "default", "--kubeconfig"])
        .arg(plane.kubeconfig())
        .output()?;
    let table = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.status.success(),
        "{table}{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0][..3], ["NAME", "JOB", "TYPE"], "{table}");
    for (position, job) in names[1..].iter().enumerate() {
        let row = rows
            .iter()
            .find(|r| r.contains(&job.as_str()))
            .with_context(|| format!("{job} in\n{table}"))?;
        // NAME, JOB TYPE, JOB NAME, LOCALQUEUE, CLUSTERQUEUE, STATUS, POSITION, AGE.
        assert_eq!(
            row[1..7],
            [
                "job",
                job.as_str(),
                "user-queue",
                "cluster-queue",
                "PENDING",
                &position.to_string()
            ],
            "{table}"
        );
    }
    let admitted = rows
        .iter()
        .find(|r| r.contains(&names[0].as_str()))
        .with_context(|| format!("{} in\n{table}", names[0]))?;
    assert_eq!(admitted[5], "ADMITTED", "{table}");

    let lq = format!("{PATH}/namespaces/default/localqueues/user-queue/pendingworkloads");
    let (ok, out, err) = raw(&plane, &lq, &[])?;
    assert!(ok, "{err}");
    let by_lq: Value = serde_json::from_str(&out)?;
    assert_eq!(by_lq["items"], summary["items"]);

    // Discovery, as kubectl api-resources reads it.
    let (ok, out, err) = raw(&plane, PATH, &[])?;
    assert!(ok, "{err}");
    let discovery: Value = serde_json::from_str(&out)?;
    assert!(
        discovery["resources"].as_array().is_some_and(|r| r
            .iter()
            .any(|r| r["name"] == "clusterqueues/pendingworkloads")),
        "{discovery}"
    );

    // A user not allowed is refused with Kubernetes' message (by the API server's own
    // authorization, which runs before it proxies); bound to a role as Kueue's
    // pending-workloads viewer, read.
    let (ok, _, err) = raw(&plane, &cq, &["--as", "alice"])?;
    assert!(!ok);
    assert!(
        err.contains(
            "clusterqueues.visibility.kueue.x-k8s.io \"cluster-queue\" is forbidden: User \
             \"alice\" cannot get resource \"clusterqueues/pendingworkloads\" in API group \
             \"visibility.kueue.x-k8s.io\" at the cluster scope"
        ),
        "{err}"
    );
    create::<ClusterRole>(
        &client,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "pending-workloads-cq-viewer"},
               "rules": [{"apiGroups": ["visibility.kueue.x-k8s.io"],
                          "resources": ["clusterqueues/pendingworkloads"],
                          "verbs": ["get", "list", "watch"]}]}),
    )
    .await?;
    create::<ClusterRoleBinding>(
        &client,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "alice-pending-workloads"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "pending-workloads-cq-viewer"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                             "name": "alice"}]}),
    )
    .await?;
    let (ok, out, err) = raw(&plane, &cq, &["--as", "alice"])?;
    assert!(ok, "{err}");
    assert_eq!(
        serde_json::from_str::<Value>(&out)?["items"],
        summary["items"]
    );
    // Still not the LocalQueue's, which that role does not name.
    let (ok, _, err) = raw(&plane, &lq, &["--as", "alice"])?;
    assert!(!ok && err.contains("in the namespace \"default\""), "{err}");

    // wasq's own checks, behind the API server's: straight to its port, a client without the
    // front proxy's certificate is refused (401); with it, the user it names is authorized by a
    // SubjectAccessReview of wasq's (bob may not, alice may).
    let curl = |args: &[&str]| -> Result<String> {
        let out = Command::new("curl")
            .args(["-sk", "-o", "/dev/null", "-w", "%{http_code}"])
            .args(args)
            .arg(format!("https://127.0.0.1:{}{cq}", wasq.visibility_port))
            .output()
            .context("curl")?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    assert_eq!(curl(&[])?, "401");
    let dir = plane.dir();
    let cert = dir.join("front-proxy-client.crt").display().to_string();
    let key = dir.join("front-proxy-client.key").display().to_string();
    let proxy = ["--cert", cert.as_str(), "--key", key.as_str()];
    assert_eq!(curl(&proxy)?, "401", "a proxy naming no user");
    assert_eq!(
        curl(&[&proxy[..], &["-H", "X-Remote-User: bob"]].concat())?,
        "403"
    );
    assert_eq!(
        curl(&[&proxy[..], &["-H", "X-Remote-User: alice"]].concat())?,
        "200"
    );
    wasq.still_running()?;
    Ok(())
}
