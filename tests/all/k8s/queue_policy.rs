//! `QueuePolicy` objects against the API server double: a module from a ConfigMap goes live and
//! its status says so; a digest mismatch, a module that fails to load and a failed pull each
//! give their condition and keep the last good module; an edited ConfigMap reloads; `Shadow` →
//! `Enforce` swaps between cycles with no decision lost.

use std::sync::{Arc, Mutex};

use base64::Engine;
use serde_json::{Value, json};
use wasq::k8s::policies::PolicyReconciler;
use wasq::policy::shadow::ShadowLog;
use wasq::wasm::{Bindings, LiveBindings, PluginSource, PolicyObjects, Registry, sha256_digest};

use wasq::k8s::schema::kinds::KueueKind;
use wasq::k8s::sync::mirror::Source;

use super::{Env, KUEUE, NOW, basics, job, job_wl, running_low_job};
use crate::plugins::{built, engine, test_options};

const POLICIES: &str = "/apis/policies.wasq.dev/v1alpha1/queuepolicies";
const NAMESPACE: &str = "wasq-system";

fn module(name: &str) -> Vec<u8> {
    std::fs::read(built().plugins.join(format!("{name}.wasm"))).expect("built plugin")
}

/// A ConfigMap holding `bytes` under `key`, as `kubectl create configmap --from-file` writes a
/// binary file (`binaryData`).
fn config_map(name: &str, key: &str, bytes: &[u8]) -> (String, Value) {
    (
        format!("/api/v1/namespaces/{NAMESPACE}/configmaps/{name}"),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": NAMESPACE},
               "binaryData": {key: base64::engine::general_purpose::STANDARD.encode(bytes)}}),
    )
}

fn queue_policy(name: &str, extension: &str, mode: &str, spec: Value) -> (String, Value) {
    let mut spec_all = json!({"extension": extension, "mode": mode});
    spec_all
        .as_object_mut()
        .unwrap()
        .extend(spec.as_object().unwrap().clone());
    (
        format!("{POLICIES}/{name}"),
        json!({"apiVersion": "policies.wasq.dev/v1alpha1", "kind": "QueuePolicy",
               "metadata": {"name": name, "generation": 1}, "spec": spec_all}),
    )
}

fn from_config_map(name: &str, key: &str) -> Value {
    json!({"module": {"configMap": {"name": name, "key": key}}})
}

struct Policies {
    reconciler: PolicyReconciler,
    objects: Arc<PolicyObjects>,
}

fn policies(env: &Env) -> Policies {
    let objects = PolicyObjects::new(engine(), test_options());
    let shadows = Arc::new(ShadowLog::default());
    let reconciler = PolicyReconciler::new(
        env.api.client(),
        NAMESPACE,
        objects.clone(),
        shadows,
        Vec::new(),
    );
    Policies {
        reconciler,
        objects,
    }
}

impl Policies {
    /// One pass of the reconciler and its status written, as the leader does.
    async fn pass(&self) {
        self.reconciler.sync().await.expect("sync");
        self.reconciler.write_status().await.expect("status");
    }
}

fn status(env: &Env, name: &str) -> Value {
    env.api.get(&format!("{POLICIES}/{name}")).expect("stored")["status"].clone()
}

/// `(status, reason)` of condition `type_`.
fn condition(status: &Value, type_: &str) -> (String, String) {
    let c = status["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .unwrap_or_else(|| panic!("no {type_} condition in {status}"));
    (
        c["status"].as_str().unwrap().to_string(),
        c["reason"].as_str().unwrap().to_string(),
    )
}

fn yes(reason: &str) -> (String, String) {
    ("True".into(), reason.into())
}

fn no(reason: &str) -> (String, String) {
    ("False".into(), reason.into())
}

#[tokio::test]
async fn a_policy_from_a_configmap_goes_live_and_its_status_says_so() {
    let bytes = module("kueue-default-preemption");
    let mut objects = basics("2");
    objects.push(config_map("fair", "fair.wasm", &bytes));
    objects.push(queue_policy(
        "fair",
        "Preemption",
        "Enforce",
        from_config_map("fair", "fair.wasm"),
    ));
    let env = Env::new(objects);
    let p = policies(&env);
    p.pass().await;

    let live = p.objects.snapshot();
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].name, "fair");
    let s = status(&env, "fair");
    assert_eq!(condition(&s, "Loaded"), yes("Loaded"));
    assert_eq!(condition(&s, "Ready"), yes("Enforced"));
    assert_eq!(s["digest"], sha256_digest(&bytes));
    assert_eq!(s["clusterQueues"], 1);
    assert_eq!(s["observedGeneration"], 1);
    assert!(s["liveSince"].is_string(), "{s}");
    assert!(
        s.get("shadow").is_none(),
        "an enforced policy has no agreement: {s}"
    );
}

#[tokio::test]
async fn a_digest_mismatch_a_bad_module_and_a_missing_key_keep_the_last_good_module() {
    let good = module("kueue-default-preemption");
    let other = module("min-runtime");
    let pin = sha256_digest(&good);
    let mut objects = basics("2");
    objects.push(config_map("fair", "fair.wasm", &good));
    objects.push(queue_policy(
        "fair",
        "Preemption",
        "Enforce",
        json!({"module": {"configMap": {"name": "fair", "key": "fair.wasm"}}, "digest": pin}),
    ));
    let env = Env::new(objects);
    let p = policies(&env);
    p.pass().await;
    let first = p.objects.generation();
    assert_eq!(condition(&status(&env, "fair"), "Ready"), yes("Enforced"));

    // Another module under the pin: refused, the pinned one stays.
    let (path, cm) = config_map("fair", "fair.wasm", &other);
    env.api.put(&path, cm);
    p.pass().await;
    let s = status(&env, "fair");
    assert_eq!(condition(&s, "Loaded"), no("DigestMismatch"));
    assert_eq!(condition(&s, "Ready"), yes("Enforced"));
    assert_eq!(s["digest"], pin);
    assert_eq!(p.objects.generation(), first, "nothing rebound");

    // Unpinned, a module that is not WebAssembly: refused, the good one stays.
    env.api.modify(&format!("{POLICIES}/fair"), |o| {
        o["spec"].as_object_mut().unwrap().remove("digest");
        o["metadata"]["generation"] = json!(2);
    });
    let (path, cm) = config_map("fair", "fair.wasm", b"not a module at all");
    env.api.put(&path, cm);
    p.pass().await;
    let s = status(&env, "fair");
    let (state, reason) = condition(&s, "Loaded");
    assert_eq!((state.as_str(), reason.as_str()), ("False", "LoadFailed"));
    assert_eq!(condition(&s, "Ready"), yes("Enforced"));
    assert_eq!(s["digest"], pin);
    assert_eq!(s["observedGeneration"], 2);

    // A key that is not there.
    env.api.modify(&format!("{POLICIES}/fair"), |o| {
        o["spec"]["module"]["configMap"]["key"] = json!("gone.wasm");
    });
    p.pass().await;
    let s = status(&env, "fair");
    assert_eq!(condition(&s, "Loaded"), no("ModuleNotFound"));
    let message = s["conditions"][0]["message"].as_str().unwrap().to_string();
    assert!(message.contains("no key \"gone.wasm\""), "{message}");
    assert_eq!(s["digest"], pin);

    // The ConfigMap edited to a good module under the right key: it reloads.
    env.api.modify(&format!("{POLICIES}/fair"), |o| {
        o["spec"]["module"]["configMap"]["key"] = json!("fair.wasm");
    });
    let (path, cm) = config_map("fair", "fair.wasm", &other);
    env.api.put(&path, cm);
    p.pass().await;
    let s = status(&env, "fair");
    assert_eq!(condition(&s, "Loaded"), yes("Loaded"));
    assert_eq!(s["digest"], sha256_digest(&other));
    assert!(p.objects.generation() > first);
}

#[tokio::test]
async fn a_module_of_another_extension_is_refused() {
    let mut objects = basics("2");
    objects.push(config_map(
        "order",
        "o.wasm",
        &module("kueue-default-preemption"),
    ));
    objects.push(queue_policy(
        "order",
        "Ordering",
        "Enforce",
        from_config_map("order", "o.wasm"),
    ));
    let env = Env::new(objects);
    let p = policies(&env);
    p.pass().await;
    let s = status(&env, "order");
    assert_eq!(condition(&s, "Loaded"), no("WrongExtension"));
    assert_eq!(condition(&s, "Ready"), no("WrongExtension"));
    assert!(p.objects.snapshot().is_empty());

    // Live as a preemption policy, then its extension edited: the module no longer fits.
    env.api.modify(&format!("{POLICIES}/order"), |o| {
        o["spec"]["extension"] = json!("Preemption")
    });
    p.pass().await;
    assert_eq!(condition(&status(&env, "order"), "Ready"), yes("Enforced"));
    assert_eq!(p.objects.snapshot().len(), 1);
    env.api.modify(&format!("{POLICIES}/order"), |o| {
        o["spec"]["extension"] = json!("Ordering")
    });
    p.pass().await;
    assert_eq!(
        condition(&status(&env, "order"), "Ready"),
        no("WrongExtension")
    );
    assert!(
        p.objects.snapshot().is_empty(),
        "a preemption module is never bound to ordering"
    );
}

/// The controller's configure hook, binding the objects over the built-in.
fn hook(
    objects: &Arc<PolicyObjects>,
    shadows: &Arc<ShadowLog>,
) -> wasq::k8s::sync::core::Configure {
    let source = PluginSource::Fixed(Arc::new(Registry::empty(engine())));
    let live = Mutex::new(
        LiveBindings::recording(source, Bindings::default(), shadows.clone())
            .with_objects(objects.clone()),
    );
    Arc::new(move |scheduler: &mut wasq::scheduler::Scheduler| {
        if let Some(Ok((default, per_cq))) = live.lock().unwrap().refresh(&scheduler.cluster) {
            scheduler.install_policies(default, per_cq);
        }
    })
}

#[tokio::test]
async fn shadow_to_enforce_swaps_between_cycles_with_no_decision_lost() {
    let bytes = module("kueue-default-preemption");
    let mut objects = basics("2");
    objects.extend(running_low_job());
    objects.push(job(
        "high",
        "2",
        1,
        json!({"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/priority-class": "high"}),
        true,
    ));
    objects.push(config_map("trial", "p.wasm", &bytes));
    let (path, policy) = queue_policy(
        "trial",
        "Preemption",
        "Shadow",
        from_config_map("trial", "p.wasm"),
    );
    objects.push((path.clone(), policy));
    let objects_live = PolicyObjects::new(engine(), test_options());
    let shadows = Arc::new(ShadowLog::default());
    let mut env = Env::with_hook(objects, Arc::new(|| NOW), hook(&objects_live, &shadows));
    let reconciler = PolicyReconciler::new(
        env.api.client(),
        NAMESPACE,
        objects_live.clone(),
        shadows.clone(),
        Vec::new(),
    );
    reconciler.sync().await.unwrap();
    env.list_all();
    env.step().await;

    // In shadow: the built-in preempted `low`, the shadow was asked and agreed.
    let figures = shadows.figures();
    let trial = &figures["trial"];
    assert!(
        trial.decisions >= 1 && trial.agree == trial.decisions,
        "{trial:?}"
    );
    // While its victim is being evicted the preemptor waits: a pass asks once, and the
    // victim is evicted once however many passes run (as Kueue's `IssuePreemptions`).
    for _ in 0..3 {
        env.step().await;
    }
    let asked = shadows.figures()["trial"].decisions;
    // The first pass: the cycle that preempts and the one after it; then one per pass.
    assert!(
        asked <= 2 + 3,
        "one question per pass, not per cycle: {asked}"
    );
    assert_eq!(
        super::counter(
            &env,
            "kueue_preempted_workloads_total",
            "cluster_queue=\"cq\""
        ),
        1,
        "{}",
        env.controller.metrics.encode()
    );
    reconciler.write_status().await.unwrap();
    let s = status(&env, "trial");
    assert_eq!(condition(&s, "Ready"), yes("Shadowing"));
    assert_eq!(s["shadow"]["agreement"], "100.0%");
    // The same figures through wasq's visibility endpoint.
    env.controller.shared.write().unwrap().shadows = Some(shadows.clone());
    let (code, _, body) = wasq::k8s::serve::http::route(
        "/apis/visibility.wasq.dev/v1alpha1/shadows/trial",
        "",
        &env.controller.shared,
        &env.controller.metrics,
    );
    let report: Value = serde_json::from_str(&body).unwrap_or_else(|_| panic!("{code}: {body}"));
    assert_eq!(
        (report["kind"].as_str(), report["extension"].as_str()),
        (Some("ShadowReport"), Some("preemption"))
    );
    assert_eq!(report["decisions"], asked);
    assert_eq!(report["agreement"], "100.0%");
    let plugin = objects_live.snapshot()[0].plugin.clone();
    let calls_in_shadow = plugin.status().calls;
    assert!(calls_in_shadow >= 1);

    // The victim's pods are gone: the preemptor runs.
    let low_job = "/apis/batch/v1/namespaces/ns/jobs/low";
    env.api
        .modify(low_job, |j| j["status"] = json!({"active": 0}));
    env.applied(Source::Job(0), low_job);
    env.step().await;
    assert!(admitted(&env, "high"), "the preemptor runs");

    // Promoted: from the next cycle it decides; as a shadow it is asked no more.
    env.api
        .modify(&path, |o| o["spec"]["mode"] = json!("Enforce"));
    reconciler.sync().await.unwrap();
    let (class, top) = (
        format!("{KUEUE}/workloadpriorityclasses/top"),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
               "metadata": {"name": "top"}, "value": 200}),
    );
    env.api.put(&class, top);
    env.applied(Source::Kueue(KueueKind::WorkloadPriorityClass), &class);
    let (top_path, top_job) = job(
        "top",
        "2",
        1,
        json!({"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/priority-class": "top"}),
        true,
    );
    env.api.put(&top_path, top_job);
    env.applied(Source::Job(0), &top_path);
    env.step().await;
    env.step().await;

    assert!(
        plugin.status().calls > calls_in_shadow,
        "the promoted module decided the second preemption"
    );
    assert_eq!(
        shadows.figures()["trial"].decisions,
        asked,
        "no longer a shadow"
    );
    let high = env
        .api
        .get(&format!(
            "{KUEUE}/namespaces/ns/workloads/{}",
            job_wl("high")
        ))
        .unwrap();
    assert!(
        has_true(&high, "Evicted"),
        "the decision was acted on: {}",
        high["status"]
    );
    reconciler.write_status().await.unwrap();
    let s = status(&env, "trial");
    assert_eq!(condition(&s, "Ready"), yes("Enforced"));
    assert!(s.get("shadow").is_none());
    assert!(s["calls"].as_u64().unwrap() > calls_in_shadow);
}

fn has_true(object: &Value, type_: &str) -> bool {
    object["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == type_ && c["status"] == "True")
    })
}

fn admitted(env: &Env, job: &str) -> bool {
    let wl = env
        .api
        .get(&format!("{KUEUE}/namespaces/ns/workloads/{}", job_wl(job)))
        .unwrap();
    has_true(&wl, "Admitted")
}

/// A `kubernetes.io/dockerconfigjson` Secret for `registry`, as `kubectl create secret
/// docker-registry` writes it.
fn pull_secret(name: &str, registry: &str, user: &str, password: &str) -> (String, Value) {
    let b64 = |s: &[u8]| base64::engine::general_purpose::STANDARD.encode(s);
    let config = json!({"auths": {registry: {"username": user, "password": password,
        "auth": b64(format!("{user}:{password}").as_bytes())}}});
    (
        format!("/api/v1/namespaces/{NAMESPACE}/secrets/{name}"),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
               "metadata": {"name": name, "namespace": NAMESPACE},
               "data": {".dockerconfigjson": b64(config.to_string().as_bytes())}}),
    )
}

#[tokio::test]
async fn an_oci_module_is_pulled_with_its_pull_secret_and_checked_against_its_pin() {
    use wasq::wasm::oci::double::RegistryDouble;
    let registry = RegistryDouble::start_with_basic_auth("robot", "s3cret")
        .await
        .unwrap();
    let good = module("kueue-default-preemption");
    registry.put_module("team/fair", "1.0", &good);
    let reference = format!("oci://{}/team/fair:1.0", registry.registry());
    let mut objects = basics("2");
    objects.push(pull_secret(
        "regcred",
        &registry.registry(),
        "robot",
        "s3cret",
    ));
    objects.push(queue_policy(
        "fair",
        "Preemption",
        "Enforce",
        json!({"module": {"oci": {"reference": reference, "pullSecrets": [{"name": "regcred"}]}},
               "digest": sha256_digest(&good)}),
    ));
    let env = Env::new(objects);
    let live = PolicyObjects::new(engine(), test_options());
    let reconciler = PolicyReconciler::new(
        env.api.client(),
        NAMESPACE,
        live.clone(),
        Arc::default(),
        vec![registry.registry()],
    );
    reconciler.sync().await.unwrap();
    reconciler.write_status().await.unwrap();
    let s = status(&env, "fair");
    assert_eq!(condition(&s, "Ready"), yes("Enforced"), "{s}");
    assert_eq!(s["digest"], sha256_digest(&good));
    let downloads = registry.blob_downloads();

    // A tag is not pulled again before it is due.
    reconciler.sync().await.unwrap();
    assert_eq!(
        registry.blob_downloads(),
        downloads,
        "served from what was pulled"
    );

    // Pinned by digest to another module: the registry's content is refused, nothing live.
    let other = module("min-runtime");
    registry.put_module("team/fair", "2.0", &other);
    env.api.modify(&format!("{POLICIES}/fair"), |o| {
        o["spec"]["module"]["oci"]["reference"] =
            json!(format!("oci://{}/team/fair:2.0", registry.registry()));
    });
    reconciler.sync().await.unwrap();
    reconciler.write_status().await.unwrap();
    let s = status(&env, "fair");
    assert_eq!(condition(&s, "Loaded"), no("DigestMismatch"));
    assert_eq!(
        condition(&s, "Ready"),
        yes("Enforced"),
        "the pinned module stays"
    );
    assert_eq!(s["digest"], sha256_digest(&good));

    // A tag that does not exist: the pull fails, the last good module stays.
    env.api.modify(&format!("{POLICIES}/fair"), |o| {
        o["spec"]["module"]["oci"]["reference"] =
            json!(format!("oci://{}/team/fair:9.9", registry.registry()));
    });
    reconciler.sync().await.unwrap();
    reconciler.write_status().await.unwrap();
    let s = status(&env, "fair");
    assert_eq!(condition(&s, "Loaded"), no("PullFailed"));
    assert_eq!(condition(&s, "Ready"), yes("Enforced"));
    assert_eq!(live.snapshot().len(), 1);

    // Without the pull secret the registry refuses: the message says why.
    env.api.modify(&format!("{POLICIES}/fair"), |o| {
        o["spec"]["module"]["oci"] = json!({"reference":
            format!("oci://{}/team/fair:1.0", registry.registry())});
    });
    reconciler.sync().await.unwrap();
    reconciler.write_status().await.unwrap();
    let s = status(&env, "fair");
    assert_eq!(condition(&s, "Loaded"), no("PullFailed"));
    let message = s["conditions"][0]["message"].as_str().unwrap();
    assert!(message.contains("requires credentials"), "{message}");
}

#[tokio::test]
async fn a_module_that_keeps_trapping_is_quarantined_and_the_builtin_decides() {
    let trap = std::fs::read(built().fixtures.join("fixture-trap.wasm")).expect("built fixture");
    let mut objects = basics("4");
    objects.push(job("a", "1", 1, super::queue_label(), true));
    objects.push(job("b", "1", 1, super::queue_label(), true));
    objects.push(config_map("trap", "t.wasm", &trap));
    objects.push(queue_policy(
        "trap",
        "Ordering",
        "Enforce",
        json!({"module": {"configMap": {"name": "trap", "key": "t.wasm"}},
               "limits": {"quarantineAfter": 2}}),
    ));
    let live = PolicyObjects::new(engine(), test_options());
    let shadows = Arc::new(ShadowLog::default());
    let mut env = Env::with_hook(objects, Arc::new(|| NOW), hook(&live, &shadows));
    let reconciler = PolicyReconciler::new(
        env.api.client(),
        NAMESPACE,
        live.clone(),
        shadows,
        Vec::new(),
    );
    reconciler.sync().await.unwrap();
    env.list_all();
    env.step().await;
    env.step().await;

    // Nothing waits for the module: the built-in ordered the queue and both were admitted.
    assert!(admitted(&env, "a") && admitted(&env, "b"));
    reconciler.write_status().await.unwrap();
    let s = status(&env, "trap");
    assert_eq!(condition(&s, "Loaded"), yes("Loaded"));
    assert_eq!(condition(&s, "Ready"), no("Quarantined"), "{s}");
    assert!(s["fallbacks"]["trap"].as_u64().unwrap() >= 2, "{s}");
    let message = s["conditions"][1]["message"].as_str().unwrap();
    assert!(
        message.contains("fixture-trap"),
        "the last error is named: {message}"
    );
}
