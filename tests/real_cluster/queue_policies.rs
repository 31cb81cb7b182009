//! `QueuePolicy` (`policies.wasq.dev/v1alpha1`) against the real server: the object as a user
//! writes it, applied with the pinned kubectl, defaulted, pruned or refused as its structural
//! schema says and printed by `kubectl get qp`; the reconciler's status writes (its real client,
//! a module from a ConfigMap made by `kubectl create configmap --from-file`) stored as written;
//! and `wasq controller` with its webhooks: a malformed object denied by the API server calling
//! wasq over TLS, a Shadow policy Ready and reported by `wasq policy shadow-report`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use serde_json::{Value, json};
use wasq::k8s::policies::{POLICY_STATUS_MANAGER, PolicyReconciler};
use wasq::policy::shadow::ShadowLog;
use wasq::wasm::guests::{GuestProfile, build_repository_plugins};
use wasq::wasm::{HostOptions, LimitsPatch, PolicyObjects, WasmEngine};

use crate::cluster::ControlPlane;
use crate::crds;
use crate::jobs::{create_all, until};
use crate::kept::assert_kept;
use crate::kueue_docs::api_for;
use crate::wasq::{NAMESPACE, Options, Wasq};

/// A repository plugin, built for the tests as `tests/all` builds them
/// (`target/test-plugins/`).
fn plugin(name: &str) -> Result<PathBuf> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        build_repository_plugins(Path::new(env!("CARGO_MANIFEST_DIR")), GuestProfile::Test)
            .map(|b| b.plugins)
            .map_err(|e| format!("{e:#}"))
    });
    match built {
        Ok(dir) => Ok(dir.join(format!("{name}.wasm"))),
        Err(e) => bail!("building plugins/ for the tests: {e}"),
    }
}

/// `sha256:` and what `sha256sum FILE` prints.
fn sha256sum(path: &Path) -> Result<String> {
    let out = Command::new("sha256sum").arg(path).output()?;
    let text = String::from_utf8(out.stdout)?;
    let hex = text
        .split_whitespace()
        .next()
        .context("sha256sum printed nothing")?;
    Ok(format!("sha256:{hex}"))
}

fn policies(client: &kube::Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &wasq::k8s::policies::resource())
}

/// The QueuePolicy `name` as the server holds it.
async fn stored(client: &kube::Client, name: &str) -> Result<Value> {
    Ok(serde_json::to_value(policies(client).get(name).await?)?)
}

/// `(status, reason)` of a QueuePolicy's condition `type_`.
fn condition(object: &Value, type_: &str) -> (String, String) {
    let c = crate::jobs::condition_of(object, type_);
    let text = |k: &str| c[k].as_str().unwrap_or("(none)").to_string();
    (text("status"), text("reason"))
}

fn says(status: &str, reason: &str) -> (String, String) {
    (status.into(), reason.into())
}

/// `kubectl get qp NAME [-o wide]`: the header's columns and the row's cells (cut where the
/// header's columns start: an empty cell prints as nothing).
fn get_qp(plane: &ControlPlane, name: &str, wide: bool) -> Result<(Vec<String>, Vec<String>)> {
    let mut args = vec!["get", "qp", name];
    if wide {
        args.extend(["-o", "wide"]);
    }
    let out = plane.kubectl(&args, None)?;
    let mut lines = out.lines();
    let header = lines.next().context("kubectl get printed nothing")?;
    let row = lines.next().context("kubectl get printed no row")?;
    let starts: Vec<usize> = header
        .char_indices()
        .filter(|&(i, c)| c != ' ' && (i == 0 || header.as_bytes()[i - 1] == b' '))
        .map(|(i, _)| i)
        .collect();
    let cut = |line: &str| -> Vec<String> {
        starts
            .iter()
            .enumerate()
            .map(|(n, &at)| {
                let end = starts
                    .get(n + 1)
                    .copied()
                    .unwrap_or(line.len())
                    .min(line.len());
                line.get(at.min(end)..end)
                    .unwrap_or_default()
                    .trim()
                    .to_string()
            })
            .collect()
    };
    Ok((cut(header), cut(row)))
}

/// The example of docs/queue-policies.md as a user writes it, `mode` left out.
const FAIR_SHARE: &str = r#"
apiVersion: policies.wasq.dev/v1alpha1
kind: QueuePolicy
metadata:
  name: fair-share-v2
spec:
  extension: Preemption
  module:
    configMap: {name: fair-share, key: fair-share.wasm}
  digest: "sha256:9f2c5b0e8a1d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b"
  settings: {min-runtime: 10m}
  limits: {deadlineMs: 20, memoryBytes: 67108864}
  clusterQueueSelector:
    matchLabels: {team: ml}
"#;

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn a_queue_policy_as_written_is_defaulted_pruned_and_printed() -> Result<()> {
    let plane = ControlPlane::start().await?;
    let client = plane.client().await?;
    crds::install(&client).await?;

    // Applied as a user applies it: every field kept, `mode` defaulted by the server.
    plane.kubectl(&["apply", "--server-side", "-f", "-"], Some(FAIR_SHARE))?;
    let sent: Value = serde_saphyr::from_str(FAIR_SHARE)?;
    let object = stored(&client, "fair-share-v2").await?;
    assert_kept("fair-share-v2", &sent, &object);
    assert_eq!(object["spec"]["mode"], "Enforce", "{}", object["spec"]);
    assert_eq!(object["metadata"]["generation"], 1);
    // wasq reads what the server stored, strictly, and its webhook's rules pass it.
    let read = wasq::api::policy::from_object(&object)
        .map_err(|p| anyhow::anyhow!("{p:?}"))
        .context("the stored object as wasq reads it")?;
    assert!(wasq::api::policy::validate(&read).is_empty());

    // An unknown field: refused when applied server-side (the typed patch has no such
    // field) and by kubectl's default strict field validation; pruned for a client that asks
    // for none (the server's default: a warning).
    let typo = FAIR_SHARE
        .replace("fair-share-v2", "typo")
        .replace("  settings:", "  setings:");
    for (args, message) in [
        (
            &["apply", "--server-side", "-f", "-"][..],
            ".spec.setings: field not declared in schema",
        ),
        (
            &["create", "-f", "-"][..],
            r#"unknown field "spec.setings""#,
        ),
    ] {
        let refused = plane.run_kubectl(args, Some(&typo))?;
        assert!(!refused.ok, "{args:?}: {}", refused.stdout);
        assert!(
            refused.stderr.contains(message),
            "{args:?}: {}",
            refused.stderr
        );
    }
    let with_unknown: Value = serde_saphyr::from_str(&typo)?;
    let created = policies(&client)
        .create(
            &PostParams::default(),
            &serde_json::from_value(with_unknown.clone())?,
        )
        .await?;
    assert_eq!(
        crate::kept::differences(&with_unknown, &serde_json::to_value(&created)?),
        vec![r#".spec.setings: {"min-runtime":"10m"} → (absent)"#]
    );
    // An unknown value: the CRD's enum refuses it, whoever sends it.
    let audit = FAIR_SHARE
        .replace("fair-share-v2", "audit")
        .replace("  settings:", "  mode: Audit\n  settings:");
    let refused = plane.run_kubectl(&["create", "-f", "-"], Some(&audit))?;
    assert!(!refused.ok, "created: {}", refused.stdout);
    assert!(
        refused.stderr.contains(
            r#"spec.mode: Unsupported value: "Audit": supported values: "Enforce", "Shadow""#
        ),
        "{}",
        refused.stderr
    );

    // `kubectl get qp`: the CRD's columns; MODE is the server's default; no status yet.
    let (header, row) = get_qp(&plane, "fair-share-v2", false)?;
    assert_eq!(
        header,
        [
            "NAME",
            "EXTENSION",
            "MODE",
            "READY",
            "DIGEST",
            "AGREEMENT",
            "AGE"
        ]
    );
    assert_eq!(
        row[..row.len() - 1],
        ["fair-share-v2", "Preemption", "Enforce", "", "", ""]
    );
    Ok(())
}

/// A reconciler as every replica runs one, with the test's client (recording its status
/// writes); its modules compiled with the tests' limits.
fn reconciler(client: kube::Client) -> Result<PolicyReconciler> {
    let options = HostOptions {
        // A loaded machine must not time the smoke test out.
        limits: LimitsPatch {
            deadline_ms: Some(2_000),
            ..LimitsPatch::default()
        },
        ..HostOptions::default()
    };
    let objects = PolicyObjects::new(WasmEngine::new(false)?, options);
    Ok(PolicyReconciler::new(
        client,
        NAMESPACE,
        objects,
        Arc::new(ShadowLog::default()),
        Vec::new(),
    ))
}

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn the_reconcilers_status_is_stored_as_written() -> Result<()> {
    let module = plugin("kueue-default-preemption")?;
    let plane = ControlPlane::start().await?;
    let client = plane.client().await?;
    crds::install(&client).await?;
    crate::kueue_docs::namespace(&client, NAMESPACE).await?;
    create_all(
        &client,
        &[
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                 "metadata": {"name": "cluster-queue"}, "spec": {"namespaceSelector": {}}}),
        ],
    )
    .await?;

    // The module as docs/queue-policies.md says to ship it: `binaryData`.
    let from_file = format!("--from-file=fair.wasm={}", module.display());
    plane.kubectl(
        &["create", "configmap", "fair", &from_file, "-n", NAMESPACE],
        None,
    )?;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let cm = config_maps.get("fair").await?;
    assert_eq!(
        cm.binary_data
            .as_ref()
            .map(|d| d.get("fair.wasm").map(|b| b.0.len())),
        Some(Some(std::fs::metadata(&module)?.len() as usize)),
        "kubectl put the module into binaryData"
    );
    let policy = "apiVersion: policies.wasq.dev/v1alpha1
kind: QueuePolicy
metadata: {name: fair}
spec:
  extension: Preemption
  module: {configMap: {name: fair, key: fair.wasm}}
";
    plane.kubectl(&["apply", "--server-side", "-f", "-"], Some(policy))?;

    let (recording, writes) = plane.recording_client().await?;
    let reconciler = reconciler(recording)?;
    let pass = async || -> Result<Value> {
        reconciler.sync().await?;
        reconciler.write_status().await?;
        let written = writes.take();
        assert_eq!(written.len(), 1, "one status write per pass: {written:?}");
        let write = &written[0];
        assert_eq!(
            write.path,
            "/apis/policies.wasq.dev/v1alpha1/queuepolicies/fair/status"
        );
        assert_kept(&write.path, &write.sent["status"], &write.stored["status"]);
        let object = stored(&client, "fair").await?;
        assert_eq!(object["status"], write.stored["status"], "read back");
        Ok(object)
    };

    // Live: every field wasq wrote stored as written.
    let live = pass().await?;
    let s = &live["status"];
    let digest = sha256sum(&module)?;
    assert_eq!(condition(&live, "Loaded"), says("True", "Loaded"));
    assert_eq!(condition(&live, "Ready"), says("True", "Enforced"));
    assert_eq!(
        crate::jobs::condition_of(&live, "Loaded")["message"],
        format!("module {digest} from ConfigMap {NAMESPACE}/fair key fair.wasm")
    );
    for c in s["conditions"].as_array().context("conditions")? {
        assert_eq!(c["observedGeneration"], 1, "{c}");
        assert!(c["lastTransitionTime"].is_string(), "{c}");
    }
    assert_eq!(s["digest"], digest.as_str());
    let live_since = s["liveSince"].as_str().context("liveSince")?.to_string();
    live_since.parse::<jiff::Timestamp>()?;
    assert_eq!(
        (
            &s["clusterQueues"],
            &s["calls"],
            &s["extraVictims"],
            &s["observedGeneration"]
        ),
        (&json!(1), &json!(0), &json!(0), &json!(1)),
        "{s}"
    );
    let managers: Vec<&str> = live["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["subresource"] == "status")
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert_eq!(managers, [POLICY_STATUS_MANAGER]);
    let (header, row) = get_qp(&plane, "fair", true)?;
    assert_eq!(
        header,
        [
            "NAME",
            "EXTENSION",
            "MODE",
            "READY",
            "DIGEST",
            "AGREEMENT",
            "CLUSTERQUEUES",
            "AGE"
        ]
    );
    assert_eq!(
        row[..row.len() - 1],
        [
            "fair",
            "Preemption",
            "Enforce",
            "True",
            digest.as_str(),
            "",
            "1"
        ]
    );

    // The ConfigMap replaced by one holding a text file (`data`, not `binaryData`): refused,
    // the good module stays live.
    let readme = plane.dir().join("README.txt");
    std::fs::write(&readme, "The fair-share policy: see fair.wasm.\n")?;
    let from_file = format!("--from-file=fair.wasm={}", readme.display());
    let replacement = plane.kubectl(
        &[
            "create",
            "configmap",
            "fair",
            &from_file,
            "-n",
            NAMESPACE,
            "--dry-run=client",
            "-o",
            "yaml",
        ],
        None,
    )?;
    plane.kubectl(&["replace", "-f", "-"], Some(&replacement))?;
    let cm = config_maps.get("fair").await?;
    assert!(cm.binary_data.is_none() && cm.data.is_some(), "{cm:?}");
    let refused = pass().await?;
    let s = &refused["status"];
    assert_eq!(condition(&refused, "Loaded"), says("False", "LoadFailed"));
    assert_eq!(condition(&refused, "Ready"), says("True", "Enforced"));
    assert_eq!(s["digest"], digest.as_str());
    assert_eq!(s["liveSince"], live_since.as_str());
    assert_eq!(
        crate::jobs::condition_of(&refused, "Ready")["lastTransitionTime"],
        crate::jobs::condition_of(&live, "Ready")["lastTransitionTime"],
        "Ready held"
    );

    // Pinned to another module's digest: nothing of this ConfigMap runs, nor the module that
    // ran before the pin; the server bumped the generation, the digest is gone.
    let pin = sha256sum(&plugin("min-runtime")?)?;
    let patch = json!({"spec": {"digest": pin}}).to_string();
    plane.kubectl(&["patch", "qp", "fair", "--type=merge", "-p", &patch], None)?;
    let pinned = pass().await?;
    let s = &pinned["status"];
    assert_eq!(pinned["metadata"]["generation"], 2);
    assert_eq!(s["observedGeneration"], 2);
    assert_eq!(
        condition(&pinned, "Loaded"),
        says("False", "DigestMismatch")
    );
    assert_eq!(condition(&pinned, "Ready"), says("False", "DigestMismatch"));
    let message = crate::jobs::condition_of(&pinned, "Loaded")["message"].clone();
    assert!(
        message
            .as_str()
            .is_some_and(|m| m.contains(&format!("spec.digest pins {pin}"))),
        "{message}"
    );
    assert!(
        s.get("digest").is_none() && s.get("liveSince").is_none(),
        "no module is live: {s}"
    );
    let (_, row) = get_qp(&plane, "fair", false)?;
    assert_eq!(
        row[..row.len() - 1],
        ["fair", "Preemption", "Enforce", "False", "", ""]
    );
    Ok(())
}

/// A QueuePolicy with a module from the ConfigMap `name` (key `policy.wasm`).
fn queue_policy(name: &str, mode: &str) -> String {
    format!(
        "apiVersion: policies.wasq.dev/v1alpha1
kind: QueuePolicy
metadata: {{name: {name}}}
spec:
  extension: Preemption
  mode: {mode}
  module: {{configMap: {{name: {name}, key: policy.wasm}}}}
"
    )
}

/// A Workload of `cpu` CPUs in `user-queue` at `priority`.
fn workload(name: &str, priority: i32, cpu: u32) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
           "metadata": {"name": name, "namespace": "default"},
           "spec": {"queueName": "user-queue", "priority": priority,
                    "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox",
                                        "resources": {"requests": {"cpu": cpu.to_string()}}}]}}}]}})
}

/// `wasq policy shadow-report NAME --kubeconfig F [ARGS]`: its standard output.
fn shadow_report(plane: &ControlPlane, name: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_wasq"))
        .args(["policy", "shadow-report", name, "--kubeconfig"])
        .arg(plane.kubeconfig())
        .args(args)
        .output()?;
    if !out.status.success() {
        bail!(
            "wasq policy shadow-report {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8(out.stdout)?)
}

#[tokio::test]
#[ignore = "needs the control plane of .ci/build-control-plane; run with --ignored"]
async fn wasq_denies_a_malformed_policy_and_reports_a_shadow() -> Result<()> {
    let module = plugin("kueue-default-preemption")?;
    let begun = Instant::now();
    let plane = ControlPlane::start().await?;
    let client = plane.client().await?;
    crds::install(&client).await?;
    let mut wasq = Wasq::start(&plane, &Options::new("wasq-0")).await?;
    wasq.wait_ready().await?;
    wasq.register_webhooks(&client).await?;
    let set_up = begun.elapsed();

    // Two sources: the API server asks wasq's webhook, which denies it at its field.
    let two = queue_policy("two", "Shadow").replace(
        "module: {configMap:",
        "module: {path: /usr/lib/wasq/policies/x.wasm, configMap:",
    );
    let denied = plane.run_kubectl(&["apply", "--server-side", "-f", "-"], Some(&two))?;
    assert!(!denied.ok, "applied: {}", denied.stdout);
    assert!(
        denied
            .stderr
            .contains(r#"admission webhook "vqueuepolicy.policies.wasq.dev" denied the request"#)
            && denied.stderr.contains("spec.module"),
        "{}",
        denied.stderr
    );
    // An unknown field never reaches the webhook: the server prunes it first (a client asking
    // for no field validation), and the webhook allows what is left.
    let mut typo: Value = serde_saphyr::from_str(&queue_policy("typo", "Shadow"))?;
    typo["spec"]["modle"] = json!("Enforce");
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let allowed = policies(&client)
        .create(&dry_run, &serde_json::from_value(typo)?)
        .await?;
    assert_eq!(serde_json::to_value(&allowed)?["spec"].get("modle"), None);

    // A Shadow policy from a ConfigMap: Ready, and reported.
    create_all(
        &client,
        &[
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                   "metadata": {"name": "default-flavor"}}),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                   "metadata": {"name": "cluster-queue"},
                   "spec": {"namespaceSelector": {},
                            "preemption": {"withinClusterQueue": "LowerPriority"},
                            "resourceGroups": [{"coveredResources": ["cpu"],
                                "flavors": [{"name": "default-flavor",
                                             "resources": [{"name": "cpu", "nominalQuota": 3}]}]}]}}),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                   "metadata": {"namespace": "default", "name": "user-queue"},
                   "spec": {"clusterQueue": "cluster-queue"}}),
        ],
    )
    .await?;
    let from_file = format!("--from-file=policy.wasm={}", module.display());
    plane.kubectl(
        &["create", "configmap", "trial", &from_file, "-n", NAMESPACE],
        None,
    )?;
    let applied = Instant::now();
    plane.kubectl(
        &["apply", "--server-side", "-f", "-"],
        Some(&queue_policy("trial", "Shadow")),
    )?;
    let digest = sha256sum(&module)?;
    until("the Shadow QueuePolicy Ready", &mut wasq, async |seen| {
        let object = stored(&client, "trial").await?;
        *seen = object["status"].to_string();
        Ok((condition(&object, "Ready") == says("True", "Shadowing")).then_some(()))
    })
    .await?;
    let ready_after = applied.elapsed();
    let table = shadow_report(&plane, "trial", &[])?;
    let lines: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[..3],
        [
            vec![
                "Shadow",
                "trial",
                "(Preemption),",
                "module",
                digest.as_str()
            ],
            vec![
                "DECISIONS",
                "AGREE",
                "DIFFER",
                "INVALID",
                "FALLBACK",
                "SKIPPED",
                "AGREEMENT"
            ],
            vec!["0", "0", "0", "0", "0", "0", "-"],
        ],
        "{table}"
    );

    // One preemption: the built-in decides, the shadow is asked the same and agrees. A
    // Workload of no job holds its quota until it goes: deleted once evicted (as a job's
    // pods would go), which lets the preemptor in.
    let low = workload("low", 0, 3);
    let workloads = api_for(&client, &low)?;
    let admitted = async |name: &str, seen: &mut String| -> Result<Option<()>> {
        let wl = serde_json::to_value(workloads.get(name).await?)?;
        *seen = wl["status"].to_string();
        Ok(crate::jobs::condition(&wl, "Admitted", "True").then_some(()))
    };
    create_all(&client, &[low]).await?;
    until(
        "the low-priority Workload admitted",
        &mut wasq,
        async |seen| admitted("low", seen).await,
    )
    .await?;
    create_all(&client, &[workload("high", 100, 3)]).await?;
    let preempting = Instant::now();
    let reason = until(
        "the low-priority Workload preempted",
        &mut wasq,
        async |seen| {
            let wl = serde_json::to_value(workloads.get("low").await?)?;
            *seen = wl["status"].to_string();
            let evicted = crate::jobs::condition_of(&wl, "Evicted");
            Ok((evicted["status"] == "True").then_some(evicted["reason"].clone()))
        },
    )
    .await?;
    assert_eq!(reason, "Preempted");
    workloads.delete("low", &DeleteParams::default()).await?;
    until("the preemptor admitted", &mut wasq, async |seen| {
        admitted("high", seen).await
    })
    .await?;
    until(
        "the shadow's decision in the status",
        &mut wasq,
        async |seen| {
            let object = stored(&client, "trial").await?;
            *seen = object["status"].to_string();
            Ok((object["status"]["shadow"]["decisions"].as_u64() >= Some(1)).then_some(()))
        },
    )
    .await?;
    let reported_after = preempting.elapsed();
    let report: Value = serde_json::from_str(&shadow_report(&plane, "trial", &["-o", "json"])?)?;
    assert_eq!(
        (&report["name"], &report["extension"], &report["digest"]),
        (&json!("trial"), &json!("Preemption"), &json!(digest)),
    );
    assert!(report["decisions"].as_u64() >= Some(1), "{report}");
    assert_eq!(report["agree"], report["decisions"], "{report}");
    assert_eq!(report["agreement"], "100.0%");
    assert_eq!(wasq.warnings(), Vec::<String>::new());
    eprintln!(
        "set-up {:.1}s; the shadow Ready {:.1}s after its apply; its figures ({} decisions) in \
         the status {:.1}s after the preemptor's creation",
        set_up.as_secs_f64(),
        ready_after.as_secs_f64(),
        report["decisions"],
        reported_after.as_secs_f64()
    );
    Ok(())
}
