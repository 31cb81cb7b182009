//! Dispatch plugins (`wasq:policy/dispatch`, added in 1.1.0): `kueue-default-dispatch` answers
//! exactly as the built-in dispatchers on random requests, and a dispatch plugin that traps,
//! loops or nominates what it may not is contained — the built-in decides, the reason is
//! counted, repeated failures quarantine it.

use std::collections::BTreeMap;
use std::sync::Arc;

use wasq::policy::dispatch::{
    self, AllAtOnce, DispatchAnswer, DispatchPolicy, DispatchRequest, DispatchedWorkload,
    Incremental, MAX_NOMINEES, PodSetRequest, WorkerCluster, WorkerQueue, WorkerResource,
};
use wasq::policy::{PolicyError, PolicyRef};
use wasq::wasm::{BindError, Bindings, HostOptions, Plugin, PluginKind, WasmDispatch, make_plugin};

use super::plugins::{built, engine, plugins, test_options};
use super::rng::Rng;

/// `name` from `dir`, loaded with `settings` (as `pluginSettings.<name>`) over `options`.
pub(super) fn load(
    dir: &std::path::Path,
    name: &str,
    settings: &[(&str, &str)],
    mut options: HostOptions,
) -> Arc<Plugin> {
    options.settings.insert(
        name.to_string(),
        settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    let path = dir.join(format!("{name}.wasm"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    make_plugin(&engine(), &path, &bytes, &options).unwrap_or_else(|e| panic!("{e}"))
}

fn kueue_default(settings: &[(&str, &str)]) -> WasmDispatch {
    WasmDispatch(load(
        &built().plugins,
        "kueue-default-dispatch",
        settings,
        test_options(),
    ))
}

fn fixture(mode: &str, options: HostOptions) -> (Arc<Plugin>, WasmDispatch) {
    let plugin = load(
        &built().fixtures,
        "fixture-dispatch",
        &[("mode", mode)],
        options,
    );
    (plugin.clone(), WasmDispatch(plugin))
}

/// A random request: up to 20 clusters (Kueue's limit on a MultiKueueConfig), some not
/// connected, some nominated already (connected or lost since), a round under way or over.
pub(super) fn random_request(rng: &mut Rng) -> DispatchRequest {
    const NAMES: [&str; 8] = ["a", "b", "c", "east", "west", "gpu", "x1", "x2"];
    let n = rng.next(MAX_NOMINEES as u64 + 1) as usize;
    let clusters: Vec<WorkerCluster> = (0..n)
        .map(|i| {
            let connected = rng.next(4) != 0;
            WorkerCluster {
                // Unique names, in an order unrelated to their position.
                name: format!("{}-{i}", NAMES[rng.next(NAMES.len() as u64) as usize]),
                labels: BTreeMap::from([("region".to_string(), format!("r{}", rng.next(3)))]),
                connected,
                lost_since: (!connected).then(|| rng.next(1_000) as i64),
                queue: (rng.next(2) == 0).then(|| WorkerQueue {
                    name: "cq".into(),
                    pending: rng.next(10) as u32,
                    admitted: rng.next(10) as u32,
                    resources: vec![WorkerResource {
                        flavor: "default".into(),
                        resource: "cpu".into(),
                        nominal: 8_000,
                        usage: rng.next(8_000) as i64,
                    }],
                }),
                copy_since: None,
            }
        })
        .collect();
    let now = 1_000_000 + rng.next(10 * dispatch_round()) as i64;
    let mut nominated: Vec<u32> = Vec::new();
    if n > 0 && rng.next(2) == 0 {
        for _ in 0..rng.next(n as u64 + 1) {
            let i = rng.next(n as u64) as u32;
            if !nominated.contains(&i) {
                nominated.push(i);
            }
        }
    }
    let last_nominated =
        (!nominated.is_empty()).then(|| now - rng.next(2 * dispatch_round()) as i64);
    let mut clusters = clusters;
    for &i in &nominated {
        clusters[i as usize].copy_since = last_nominated;
    }
    DispatchRequest {
        now,
        workload: DispatchedWorkload {
            namespace: "team-a".into(),
            name: format!("job-{}", rng.next(1_000)),
            local_queue: "lq".into(),
            priority: rng.next(200) as i32 - 100,
            created: 0,
            reserved: 10,
            pod_sets: vec![PodSetRequest {
                name: "main".into(),
                count: 1 + rng.next(8) as u32,
                per_pod: vec![("cpu".into(), 500), ("memory".into(), 1 << 30)],
            }],
            labels: BTreeMap::from([("kueue.x-k8s.io/queue-name".into(), "lq".into())]),
        },
        clusters,
        nominated,
        last_nominated,
    }
}

fn dispatch_round() -> u64 {
    Incremental::default().round as u64
}

/// Settings of `kueue-default-dispatch` (and its ports), and the built-in they make it.
pub(super) type Configuration = (
    &'static [(&'static str, &'static str)],
    Arc<dyn DispatchPolicy>,
);

/// Every dispatcher `kueue-default-dispatch`'s settings choose.
pub(super) fn kueue_configurations() -> [Configuration; 4] {
    [
        (&[], Arc::new(AllAtOnce)),
        (&[("dispatcher", "all-at-once")], Arc::new(AllAtOnce)),
        (
            &[("dispatcher", "incremental")],
            Arc::new(Incremental::default()),
        ),
        (
            &[("dispatcher", "incremental"), ("stepSize", "1")],
            Arc::new(Incremental {
                step: 1,
                ..Incremental::default()
            }),
        ),
    ]
}

#[test]
fn kueue_default_dispatch_answers_exactly_like_the_builtin_dispatchers() {
    let mut rng = Rng(62);
    for (settings, builtin) in kueue_configurations() {
        let plugin = kueue_default(settings);
        let mut nonempty = 0;
        for case in 0..300 {
            let req = random_request(&mut rng);
            let expected = builtin.dispatch(&req).expect("the built-in answers");
            let got = plugin
                .ask(&req)
                .unwrap_or_else(|e| panic!("{settings:?} #{case}: {e}"));
            assert_eq!(got, expected, "{settings:?} #{case}: {req:#?}");
            // Checked alike: accepted or refused together.
            assert_eq!(
                plugin.dispatch(&req).is_ok(),
                dispatch::verify(&req, &expected).is_ok(),
                "{settings:?} #{case}"
            );
            nonempty += usize::from(!expected.nominate.is_empty());
        }
        assert!(
            nonempty > 100,
            "{settings:?}: only {nonempty} answers nominated anything"
        );
        let status = plugin.0.status();
        assert_eq!(status.calls, 600, "{status:?}");
        assert!(!status.quarantined, "{status:?}");
    }
}

fn two_clusters() -> DispatchRequest {
    let mut rng = Rng(7);
    let mut req = random_request(&mut rng);
    let cluster = |name: &str, connected| WorkerCluster {
        name: name.into(),
        labels: BTreeMap::new(),
        connected,
        lost_since: None,
        queue: None,
        copy_since: None,
    };
    req.clusters = vec![
        cluster("west", true),
        cluster("east", true),
        cluster("lost", false),
    ];
    req.nominated.clear();
    req.last_nominated = None;
    req
}

#[test]
fn a_misbehaving_dispatch_plugin_is_contained_and_the_builtin_decides() {
    let req = two_clusters();
    let builtin = AllAtOnce.dispatch(&req).expect("answers");
    assert_eq!(builtin.nominate, vec![1, 0]);
    let mut options = test_options();
    options.limits.deadline_ms = Some(20);
    for (mode, reason, says) in [
        ("trap", "trap", "fixture-dispatch: refusing to dispatch"),
        ("loop", "timeout", "exceeded by dispatch"),
        (
            "unconnected",
            "invalid-answer",
            "lost, which is not connected",
        ),
        ("twice", "invalid-answer", "west twice"),
    ] {
        let (plugin, policy) = fixture(mode, options.clone());
        let (answer, by, why) = dispatch::decide(&policy, &AllAtOnce, &req);
        assert_eq!(answer, builtin, "{mode}");
        assert_eq!(by, PolicyRef::builtin(), "{mode}");
        let why = why.unwrap_or_else(|| panic!("{mode}: the plugin's answer was taken"));
        assert_eq!(why.reason(), reason, "{mode}: {why}");
        assert!(why.to_string().contains(says), "{mode}: {why}");
        let status = plugin.status();
        assert_eq!(status.failures.get(reason), Some(&1), "{mode}: {status:?}");
        assert_eq!(status.calls, 1, "{mode}: {status:?}");
    }
    // Without a mode it answers Kueue's all-at-once, which is taken.
    let (_, policy) = fixture("", options);
    let (answer, by, why) = dispatch::decide(&policy, &AllAtOnce, &req);
    assert_eq!((answer, why.map(|e| e.to_string())), (builtin, None));
    assert_eq!(&*by.name, "fixture-dispatch");
}

#[test]
fn repeated_dispatch_failures_quarantine_the_plugin() {
    let req = two_clusters();
    let mut options = test_options();
    options.limits.quarantine_after = Some(3);
    for mode in ["trap", "unconnected"] {
        let (plugin, policy) = fixture(mode, options.clone());
        for _ in 0..5 {
            let (answer, _, why) = dispatch::decide(&policy, &AllAtOnce, &req);
            assert_eq!(answer.nominate, vec![1, 0]);
            assert!(why.is_some());
        }
        let status = plugin.status();
        assert!(status.quarantined, "{mode}: {status:?}");
        assert_eq!(
            status.calls, 3,
            "{mode}: no call reaches a quarantined plugin"
        );
        assert!(matches!(
            policy.dispatch(&req),
            Err(PolicyError::Quarantined(3))
        ));
    }
}

#[test]
fn dispatch_plugins_load_as_their_own_kind_and_bind_as_dispatch() {
    let registry = plugins();
    let plugin = registry
        .get("kueue-default-dispatch")
        .expect("built and loaded");
    assert_eq!(plugin.kind(), PluginKind::Dispatch);
    assert_eq!(plugin.info().wit_version.to_string(), "1.1.0");
    assert!(
        plugin
            .info()
            .exports
            .iter()
            .any(|e| e == "wasq:policy/dispatch@1.1.0"),
        "{:?}",
        plugin.info().exports
    );
    let mut b = Bindings::default();
    assert_eq!(b.get(PluginKind::Dispatch), "builtin");
    assert!(
        registry
            .policy_set(&b, "--policy")
            .unwrap()
            .dispatch
            .is_none()
    );
    b.set("dispatch=kueue-default-dispatch").expect("valid");
    let set = registry.policy_set(&b, "--policy").expect("binds");
    let bound = set.dispatch.expect("a dispatch policy");
    assert_eq!(&*bound.id().name, "kueue-default-dispatch");
    let req = two_clusters();
    assert_eq!(
        bound.dispatch(&req).expect("answers"),
        DispatchAnswer {
            nominate: vec![1, 0],
            retry_after: None
        }
    );
    // The scheduler's four decisions stay the built-in's.
    assert_eq!(set.ordering.id(), PolicyRef::builtin());
    // A plugin of another kind is refused, and dispatch cannot be shadowed.
    let mut wrong = Bindings::default();
    wrong
        .set("dispatch=kueue-default-preemption")
        .expect("valid");
    assert!(matches!(
        registry.policy_set(&wrong, "--policy"),
        Err(BindError::WrongKind { .. })
    ));
    let mut shadow = Bindings::default();
    shadow
        .shadow("dispatch=kueue-default-dispatch")
        .expect("valid");
    let Err(refused) = registry.shadows(&shadow, &Arc::default()) else {
        panic!("a dispatch shadow is refused");
    };
    assert!(
        refused.to_string().contains("cannot be shadowed"),
        "{refused}"
    );
}

#[test]
fn plugin_check_reports_a_dispatch_plugin() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wasq"))
        .args(["plugin", "check", "--output", "json"])
        .arg(built().plugins.join("kueue-default-dispatch.wasm"))
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(info["kind"], "dispatch", "{info}");
    assert_eq!(info["wit_version"], "1.1.0", "{info}");
}
