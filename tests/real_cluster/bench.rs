//! Kueue's performance test through the real API server: `wasq bench --driver controller
//! --kubeconfig` runs a shape against this control plane as Kueue's runner
//! (`test/performance/scheduler`) runs against envtest: Workloads created at their arrival
//! times, finished after their durations, every one admitted; the controller's requests
//! counted on its client, the API server's CPU and memory read from its `/metrics`.
//!
//! In CI a small shape keeps it short; `WASQ_BENCH_SHAPE=baseline` (or `large-scale`) runs
//! one of Kueue's shapes whole and prints the figures BENCHMARKS.md quotes (with
//! `WASQ_BENCH_BIN=target/release/wasq`, the binary measured).

use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::cluster::ControlPlane;
use crate::crds;

/// Two ClusterQueues of one cohort, three classes of one-pod Workloads (as Kueue's baseline,
/// fewer and sooner): 2 × 30 = 60 Workloads in about 3 s of arrivals.
const SMALL: &str = "
apiVersion: sim.wasq.dev/v1alpha1
kind: Generator
metadata: {name: small}
spec:
  shape: baseline
  cohorts: 1
  queuesPerCohort: 2
  classes:
  - {name: small, count: 20, interval: 100ms, runtime: 200ms, priority: 50, cpu: 1}
  - {name: medium, count: 7, interval: 400ms, runtime: 500ms, priority: 100, cpu: 5}
  - {name: large, count: 3, interval: 1s, runtime: 1s, priority: 200, cpu: 20}
";

fn bench(plane: &ControlPlane, shape: &[&str]) -> Result<(bool, String, String)> {
    // A measurement wants the release binary: WASQ_BENCH_BIN=target/release/wasq.
    let wasq = std::env::var_os("WASQ_BENCH_BIN").unwrap_or(env!("CARGO_BIN_EXE_wasq").into());
    let out = Command::new(wasq)
        .args(["bench", "--driver", "controller", "--kubeconfig"])
        .arg(plane.kubeconfig())
        .args(shape)
        .args(["--time-limit", "20m", "-o", "json"])
        .output()
        .context("running wasq bench")?;
    Ok((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane"]
async fn kueues_performance_shape_runs_through_the_real_api_server() -> Result<()> {
    let plane = ControlPlane::start().await?;
    let client = plane.client().await?;
    crds::install(&client).await?;
    let (shape, whole) = shape(&plane)?;
    let shape: Vec<&str> = shape.iter().map(String::as_str).collect();
    let (ok, stdout, stderr) = bench(&plane, &shape)?;
    if !ok {
        bail!("wasq bench failed:\n{stderr}");
    }
    let report: Value = serde_json::from_str(&stdout).context("the report is JSON")?;
    eprintln!("{}", serde_json::to_string_pretty(&report)?);
    assert_eq!(report["apiServer"], plane.url.trim_end_matches('/'));
    assert_eq!(
        report["completed"], true,
        "every Workload admitted and finished"
    );
    let workloads = report["workloads"].as_u64().context("workloads")?;
    if !whole {
        assert_eq!(workloads, 60);
    }
    assert!(report["admissions"].as_u64() >= Some(workloads));
    // The controller's own requests, counted on its client: it watched and patched status.
    let requests = &report["requests"];
    for key in [
        "watch workloads",
        "patch workloads/status",
        "watch clusterqueues",
    ] {
        assert!(requests[key].as_u64() > Some(0), "no {key} in {requests}");
    }
    assert!(report["requestsPerAdmission"].as_f64() > Some(1.0));
    let process = &report["apiServerProcess"];
    assert!(process["cpuSeconds"].as_f64() > Some(0.0), "{process}");
    assert!(process["peakMemoryBytes"].as_f64() > Some(1e6), "{process}");

    // Every Workload as the server stored it: finished by the harness once admitted.
    let stored: Value = client
        .request(http::Request::get("/apis/kueue.x-k8s.io/v1beta2/workloads").body(Vec::new())?)
        .await?;
    let items = stored["items"].as_array().context("items")?;
    assert_eq!(items.len() as u64, workloads);
    for wl in items {
        let conditions = wl["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let finished = conditions
            .iter()
            .any(|c| c["type"] == "Finished" && c["status"] == "True");
        assert!(finished, "{wl}");
    }

    // A second run would mix its Workloads with these: refused, nothing created.
    let (ok, _, stderr) = bench(&plane, &shape)?;
    assert!(!ok);
    assert!(stderr.contains("already holds Workloads"), "{stderr}");
    let after: Value = client
        .request(http::Request::get("/apis/kueue.x-k8s.io/v1beta2/workloads").body(Vec::new())?)
        .await?;
    assert_eq!(after["items"].as_array().map(Vec::len), Some(items.len()));

    if std::env::var_os("WASQ_BENCH_KUEUE").is_some() {
        kueue_beside().await?;
    }
    Ok(())
}

/// `--shape` as `WASQ_BENCH_SHAPE` says, else the small generator written into the plane's
/// folder; and whether it is a whole shape.
fn shape(plane: &ControlPlane) -> Result<(Vec<String>, bool)> {
    Ok(match std::env::var("WASQ_BENCH_SHAPE") {
        Ok(shape) => (vec!["--shape".into(), shape], true),
        Err(_) => {
            let generator = plane.dir().join("generator.yaml");
            std::fs::write(&generator, SMALL)?;
            (
                vec!["--generator".into(), generator.display().to_string()],
                false,
            )
        }
    })
}

/// Kueue's own controller beside wasq's (`WASQ_BENCH_KUEUE=1`, with `WASQ_BENCH_SHAPE` or the
/// small shape): minimalkueue and its release's CRDs (`.ci/build-kueue`) on a control plane of
/// their own, the same shape created and finished by the same harness
/// (`wasq bench --controller-metrics`), Kueue's requests and process figures read from its
/// metrics. The report is printed; Kueue must admit and finish every Workload too.
async fn kueue_beside() -> Result<()> {
    let built = Command::new(".ci/build-kueue")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .context("running .ci/build-kueue")?;
    if !built.status.success() {
        bail!("{}", String::from_utf8_lossy(&built.stderr));
    }
    let kueue = std::path::PathBuf::from(String::from_utf8(built.stdout)?.trim());
    let plane = ControlPlane::start().await?;
    let crds = kueue.join("crds").display().to_string();
    plane.kubectl(&["apply", "--server-side", "-f", &crds], None)?;
    plane.kubectl(
        &[
            "wait",
            "--for=condition=Established",
            "crd",
            "--all",
            "--timeout=60s",
        ],
        None,
    )?;
    let kubeconfig = plane.kubeconfig();
    let port = crate::cluster::free_port()?;
    let mut server = crate::cluster::Server::spawn(
        "minimalkueue",
        &kueue.join("minimalkueue"),
        plane.dir(),
        &[
            format!("--kubeconfig={}", kubeconfig.display()),
            format!("--metricsPort={port}"),
        ],
        &[],
    )?;
    let metrics = format!("http://127.0.0.1:{port}/metrics");
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        server.still_running(started)?;
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let (shape, _) = shape(&plane)?;
    let mut args: Vec<&str> = shape.iter().map(String::as_str).collect();
    args.extend(["--controller-metrics", &metrics]);
    let (ok, stdout, stderr) = bench(&plane, &args)?;
    if !ok {
        bail!(
            "wasq bench against Kueue failed:\n{stderr}\n{}",
            server.log_tail(40)
        );
    }
    let report: Value = serde_json::from_str(&stdout)?;
    eprintln!(
        "Kueue (minimalkueue):\n{}",
        serde_json::to_string_pretty(&report)?
    );
    assert_eq!(
        report["completed"], true,
        "Kueue admitted and finished every Workload"
    );
    assert!(report["cpuSeconds"].as_f64() > Some(0.0));
    assert!(report["requests"]["patch (all resources)"].as_u64() > Some(0));
    Ok(())
}
