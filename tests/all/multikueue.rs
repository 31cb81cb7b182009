//! MultiKueue's objects as Kueue writes them: Kueue's documented examples load as written
//! (v1beta2, and v1beta1 converted), every CRD and CEL rule is refused at its field with the API
//! server's words, a MultiKueue AdmissionCheck is active or not as Kueue's reconciler decides,
//! MultiKueue's ClusterQueue constraints make a queue inactive with Kueue's reasons, the
//! Configuration's `multiKueue` section is defaulted and validated as Kueue does, and `wasq
//! crds` serves both kinds as Kueue's CRDs do.

use std::path::Path;

use serde_json::{Value, json};
use wasq::api::Manifests;
use wasq::api::checks::AdmissionCheck;
use wasq::api::config::{Dispatcher, KindVersionGroup};
use wasq::api::load::{load_paths, load_str};
use wasq::api::multikueue::{LocationType, MultiKueueCluster, QuotaManagement};
use wasq::cluster::checks::{ActiveCondition, multikueue_condition};
use wasq::cluster::{Cluster, build_cluster};
use wasq::k8s::schema::crds::crds;

fn load(yaml: &str) -> Manifests {
    match load_str(Path::new("mk.yaml"), yaml) {
        Ok(m) => m,
        Err(e) => panic!("should load:\n{e}"),
    }
}

fn errors(yaml: &str) -> Vec<String> {
    match load_str(Path::new("mk.yaml"), yaml) {
        Ok(_) => panic!("should not load"),
        Err(e) => e.messages(),
    }
}

fn build(m: &Manifests) -> Cluster {
    build_cluster(m, &|_| 0, 0).expect("builds")
}

/// The `Active=False` condition Kueue writes on ClusterQueue `name`, if it is inactive.
fn inactive(cluster: &Cluster, name: &str) -> Option<(&'static str, String)> {
    let cq = cluster.cluster_queues.iter().find(|cq| cq.name == name)?;
    cq.inactive_condition()
}

fn cluster_named<'a>(m: &'a Manifests, name: &str) -> &'a MultiKueueCluster {
    m.multikueue_clusters
        .iter()
        .find(|c| c.name() == name)
        .unwrap_or_else(|| panic!("no MultiKueueCluster {name}"))
}

// ---------------------------------------------------------------------------------------------
// Kueue's examples

#[test]
fn kueues_multikueue_examples_load_as_written_and_their_queue_is_active() {
    let m = load_paths(&[Path::new("tests/manifests/multikueue-setup.yaml").into()]).unwrap();
    assert_eq!(m.multikueue_clusters.len(), 3);
    let secret = cluster_named(&m, "multikueue-test-worker1")
        .kube_config()
        .unwrap();
    assert_eq!(
        (secret.location.as_str(), secret.location_type()),
        ("worker1-secret", LocationType::Secret)
    );
    let path = cluster_named(&m, "worker1").kube_config().unwrap();
    assert_eq!(
        (path.location.as_str(), path.location_type()),
        (
            "/etc/multikueue/kubeconfigs/worker1.kubeconfig",
            LocationType::Path
        )
    );
    assert_eq!(
        cluster_named(&m, "worker1-cluster").cluster_profile(),
        Some("worker1-cluster")
    );
    let configs: Vec<(&str, &[String])> = m
        .multikueue_configs
        .iter()
        .map(|c| (c.name(), c.clusters()))
        .collect();
    assert_eq!(
        configs,
        [
            (
                "multikueue-test",
                &["multikueue-test-worker1".to_string()][..]
            ),
            (
                "cost-optimized",
                &[
                    "worker-onprem".to_string(),
                    "worker-aws".into(),
                    "worker-gcp".into()
                ][..]
            ),
        ]
    );
    assert_eq!(
        m.multikueue_configs[0].quota_management(),
        QuotaManagement::Manual
    );

    let cluster = build(&m);
    assert_eq!(inactive(&cluster, "cluster-queue"), None);
    let check = &cluster.admission_checks["sample-multikueue"];
    assert_eq!(check.inactive, None);
    let mk = check.multikueue.as_ref().unwrap();
    assert_eq!(mk.config, "multikueue-test");
    assert_eq!(mk.usable(), ["multikueue-test-worker1"]);
}

#[test]
fn a_multikueue_queue_with_a_tas_flavor_needs_no_topology_on_the_manager() {
    let text = std::fs::read_to_string("tests/manifests/multikueue-tas-manager.yaml").unwrap();
    assert_eq!(inactive(&build(&load(&text)), "cluster-queue"), None);
    // Kueue skips the TAS check of a ClusterQueue with a MultiKueue check: without the
    // Topology it stays active; without the check, it would not.
    let without_topology: String = text
        .split("\n---\n")
        .filter(|doc| !doc.contains("kind: Topology"))
        .collect::<Vec<_>>()
        .join("\n---\n");
    assert_eq!(
        inactive(&build(&load(&without_topology)), "cluster-queue"),
        None
    );
    let neither = without_topology.replace(
        "  admissionChecksStrategy:\n    admissionChecks:\n    - name: multikueue-ac\n",
        "",
    );
    assert_eq!(
        inactive(&build(&load(&neither)), "cluster-queue").map(|(_, m)| m),
        Some(
            r#"Can't admit new workloads: there is no Topology "default" for TAS flavor "tas-flavor"."#
                .to_string()
        )
    );
}

#[test]
fn v1beta1_objects_are_converted() {
    let m = load(
        "apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueCluster
metadata: {name: w1}
spec:
  kubeConfig: {location: w1-secret, locationType: Secret}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueCluster
metadata: {name: w2}
spec:
  kubeConfig: {location: /etc/multikueue/kubeconfigs/w2.kubeconfig, locationType: Path}
status:
  conditions: [{type: Active, status: 'True', reason: Active, message: Connected}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueConfig
metadata: {name: c}
spec:
  clusters: [w1, w2]
",
    );
    let v = serde_json::to_value(&m.multikueue_clusters[0]).unwrap();
    assert_eq!(
        v["spec"],
        json!({"clusterSource": {"kubeConfig": {"location": "w1-secret", "locationType": "Secret"}}})
    );
    let w2 = &m.multikueue_clusters[1];
    assert_eq!(
        w2.kube_config().unwrap().location_type(),
        LocationType::Path
    );
    assert_eq!(w2.active(), Some(true));
    assert_eq!(m.multikueue_configs[0].clusters(), ["w1", "w2"]);
    // v1beta1 has no quotaManagement: read strictly, it is an unknown field.
    let e = errors(
        "apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueConfig
metadata: {name: c}
spec: {clusters: [w1], quotaManagement: Manual}
",
    );
    assert_eq!(e.len(), 1);
    assert!(
        e[0].starts_with("mk.yaml doc 1: MultiKueueConfig c: spec.quotaManagement: unknown field"),
        "{e:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Kueue's CRD and CEL rules

fn config(name: &str, clusters: &str) -> String {
    format!(
        "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: MultiKueueConfig\nmetadata: {{name: {name}}}\nspec: {{clusters: {clusters}}}\n"
    )
}

fn mk_cluster(name: &str, spec: &str) -> String {
    format!(
        "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: MultiKueueCluster\nmetadata: {{name: {name}}}\nspec: {spec}\n"
    )
}

#[test]
fn every_crd_rule_is_refused_at_its_field() {
    let long = "w".repeat(257);
    let many: Vec<String> = (0..21).map(|i| format!("w{i}")).collect();
    let text = [
        config("empty", "[]"),
        config("too-many", &format!("[{}]", many.join(", "))),
        config("too-long", &format!("[{long}]")),
        config("twice", "[a, b, a, b]"),
        mk_cluster(
            "both",
            "{clusterSource: {kubeConfig: {location: s}, clusterProfileRef: {name: p}}}",
        ),
        mk_cluster("neither", "{clusterSource: {}}"),
        mk_cluster("no-source", "{}"),
        mk_cluster(
            "empty-location",
            "{clusterSource: {kubeConfig: {location: ''}}}",
        ),
        mk_cluster(
            "long-profile",
            &format!("{{clusterSource: {{clusterProfileRef: {{name: {long}}}}}}}"),
        ),
        "---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: placed, namespace: ns}
spec:
  podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c, image: pause}]}}}]
status:
  clusterName: w1
  nominatedClusterNames: [w1, w2]
"
        .to_string(),
    ]
    .concat();
    assert_eq!(
        errors(&text),
        [
            "mk.yaml doc 1: MultiKueueConfig empty: spec.clusters: must have at least 1 item",
            "mk.yaml doc 2: MultiKueueConfig too-many: spec.clusters: must have at most 20 clusters, got 21",
            "mk.yaml doc 3: MultiKueueConfig too-long: spec.clusters[0]: must be at most 256 characters, got 257",
            "mk.yaml doc 4: MultiKueueConfig twice: spec.clusters: must be unique",
            "mk.yaml doc 5: MultiKueueCluster both: spec.clusterSource: exactly one of the fields in [kubeConfig clusterProfileRef] must be set",
            "mk.yaml doc 6: MultiKueueCluster neither: spec.clusterSource: exactly one of the fields in [kubeConfig clusterProfileRef] must be set",
            "mk.yaml doc 7: MultiKueueCluster no-source: spec.clusterSource: Required value",
            "mk.yaml doc 8: MultiKueueCluster empty-location: spec.clusterSource.kubeConfig.location: Required value",
            "mk.yaml doc 9: MultiKueueCluster long-profile: spec.clusterSource.clusterProfileRef.name: must be at most 256 characters, got 257",
            "mk.yaml doc 10: Workload ns/placed: status: clusterName and nominatedClusterNames are mutually exclusive",
        ]
    );
}

#[test]
fn unknown_fields_and_values_are_named_with_suggestions() {
    let text = [
        mk_cluster("typo", "{clusterSource: {kubeconfig: {location: s}}}"),
        mk_cluster(
            "bad-type",
            "{clusterSource: {kubeConfig: {location: s, locationType: Secrets}}}",
        ),
        config("c", "[a]").replace("spec: {", "spec: {quotaManagment: Manual, "),
        mk_cluster("twice", "{clusterSource: {clusterProfileRef: {name: p}}}"),
        mk_cluster("twice", "{clusterSource: {clusterProfileRef: {name: p}}}"),
    ]
    .concat();
    assert_eq!(
        errors(&text),
        [
            r#"mk.yaml doc 1: MultiKueueCluster typo: spec.clusterSource.kubeconfig: unknown field "kubeconfig", did you mean "kubeConfig"?"#,
            r#"mk.yaml doc 2: MultiKueueCluster bad-type: spec.clusterSource.kubeConfig.locationType: unknown value "Secrets", did you mean "Secret"? (allowed: "Secret", "Path")"#,
            r#"mk.yaml doc 3: MultiKueueConfig c: spec.quotaManagment: unknown field "quotaManagment", did you mean "quotaManagement"?"#,
            "mk.yaml doc 5: MultiKueueCluster twice: duplicate MultiKueueCluster twice: already defined in mk.yaml doc 4",
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// The MultiKueue AdmissionCheck

const QUEUE: &str = "apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: spot}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - {name: default, resources: [{name: cpu, nominalQuota: 9}]}
    - {name: spot, resources: [{name: cpu, nominalQuota: 9}]}
  admissionChecksStrategy:
    admissionChecks: CHECKS
";

/// An AdmissionCheck of controller `controller` named `name` with `parameters`.
fn check(name: &str, controller: &str, parameters: &str) -> String {
    format!(
        "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: AdmissionCheck\nmetadata: {{name: {name}}}\n\
         spec: {{controllerName: {controller}, parameters: {parameters}}}\n"
    )
}

fn mk_check(name: &str, config: &str) -> String {
    check(
        name,
        "kueue.x-k8s.io/multikueue",
        &format!("{{apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: {config}}}"),
    )
}

/// A connected (or not) MultiKueueCluster `name`; without `active`, no status.
fn worker(name: &str, active: Option<bool>) -> String {
    let status = match active {
        None => String::new(),
        Some(a) => format!(
            "status:\n  conditions: [{{type: Active, status: '{}', reason: R, message: M}}]\n",
            if a { "True" } else { "False" }
        ),
    };
    mk_cluster(
        name,
        &format!("{{clusterSource: {{kubeConfig: {{location: {name}}}}}}}"),
    ) + &status
}

fn setup(checks: &str, rest: &str) -> Manifests {
    load(&(QUEUE.replace("CHECKS", checks) + rest))
}

/// The condition Kueue's MultiKueue AdmissionCheck reconciler writes on check `name`.
fn condition(m: &Manifests, name: &str) -> ActiveCondition {
    let ac: &AdmissionCheck = m
        .admission_checks
        .iter()
        .find(|a| a.metadata.name.as_deref() == Some(name))
        .unwrap();
    multikueue_condition(ac, &m.multikueue_configs, &m.multikueue_clusters).0
}

fn active(reason: &'static str, message: &str) -> ActiveCondition {
    ActiveCondition {
        status: true,
        reason,
        message: message.into(),
    }
}

fn not_active(reason: &'static str, message: &str) -> ActiveCondition {
    ActiveCondition {
        status: false,
        reason,
        message: message.into(),
    }
}

#[test]
fn a_multikueue_check_is_active_as_kueues_reconciler_decides() {
    // Every cluster there and not said to be disconnected: active.
    let all = setup(
        "[{name: mk}]",
        &(mk_check("mk", "cfg")
            + &config("cfg", "[a, b]")
            + &worker("a", None)
            + &worker("b", Some(true))),
    );
    assert_eq!(
        condition(&all, "mk"),
        active("Active", "The admission check is active")
    );
    assert_eq!(inactive(&build(&all), "cq"), None);

    // Some missing or inactive: still active, saying which.
    let some = setup(
        "[{name: mk}]",
        &(mk_check("mk", "cfg")
            + &config("cfg", "[gone, down, up, away]")
            + &worker("down", Some(false))
            + &worker("up", None)),
    );
    assert_eq!(
        condition(&some, "mk"),
        active(
            "SomeActiveClusters",
            "Missing clusters: [gone away], Inactive clusters: [down]"
        )
    );
    let cluster = build(&some);
    assert_eq!(inactive(&cluster, "cq"), None);
    let mk = cluster.admission_checks["mk"].multikueue.clone().unwrap();
    assert_eq!(mk.usable(), ["up"]);

    // None usable: inactive, and so is its ClusterQueue.
    let none = setup(
        "[{name: mk}]",
        &(mk_check("mk", "cfg") + &config("cfg", "[gone, down]") + &worker("down", Some(false))),
    );
    assert_eq!(
        condition(&none, "mk"),
        not_active(
            "NoUsableClusters",
            "Missing clusters: [gone], Inactive clusters: [down]"
        )
    );
    let cluster = build(&none);
    assert_eq!(
        cluster.admission_checks["mk"].inactive.as_deref(),
        Some("Missing clusters: [gone], Inactive clusters: [down]")
    );
    assert_eq!(
        inactive(&cluster, "cq"),
        Some((
            "AdmissionCheckInactive",
            "Can't admit new workloads: references inactive AdmissionCheck(s): mk.".into()
        ))
    );
}

#[test]
fn a_multikueue_check_whose_parameters_do_not_load_is_a_bad_config() {
    let cases = [
        (
            check("mk", "kueue.x-k8s.io/multikueue", "null"),
            "Cannot load the AdmissionChecks parameters: missing parameters reference",
        ),
        (
            check(
                "mk",
                "kueue.x-k8s.io/multikueue",
                "{apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: cfg}",
            ),
            r#"Cannot load the AdmissionChecks parameters: wrong kind "ProvisioningRequestConfig", expecting "MultiKueueConfig": bad parameters reference"#,
        ),
        (
            check(
                "mk",
                "kueue.x-k8s.io/multikueue",
                "{apiGroup: example.com, kind: MultiKueueConfig, name: cfg}",
            ),
            r#"Cannot load the AdmissionChecks parameters: wrong group "example.com", expecting "kueue.x-k8s.io": bad parameters reference"#,
        ),
        (
            mk_check("mk", "nowhere"),
            r#"Cannot load the AdmissionChecks parameters: multikueueconfigs.kueue.x-k8s.io "nowhere" not found"#,
        ),
    ];
    for (ac, message) in cases {
        let m = setup(
            "[{name: mk}]",
            &(ac + &config("cfg", "[a]") + &worker("a", None)),
        );
        assert_eq!(condition(&m, "mk"), not_active("BadConfig", message));
        let cluster = build(&m);
        assert_eq!(
            cluster.admission_checks["mk"].inactive.as_deref(),
            Some(message)
        );
        assert_eq!(cluster.admission_checks["mk"].multikueue, None);
        assert_eq!(
            inactive(&cluster, "cq").map(|(r, _)| r),
            Some("AdmissionCheckInactive")
        );
    }
    // The check's own status, written by a controller, is a verdict too.
    let said = setup(
        "[{name: mk}]",
        &(mk_check("mk", "cfg")
            + "status:\n  conditions: [{type: Active, status: 'False', reason: NoUsableClusters, message: 'Inactive clusters: [a]', lastTransitionTime: '2026-01-01T00:00:00Z'}]\n"
            + &config("cfg", "[a]")
            + &worker("a", None)),
    );
    assert_eq!(
        build(&said).admission_checks["mk"].inactive.as_deref(),
        Some("Inactive clusters: [a]")
    );
}

// ---------------------------------------------------------------------------------------------
// MultiKueue's ClusterQueue constraints

#[test]
fn multikueues_cluster_queue_constraints_make_it_inactive_with_kueues_reasons() {
    let workers = config("cfg", "[a]") + &worker("a", None);
    let prov = check(
        "prov",
        "kueue.x-k8s.io/provisioning-request",
        "{apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: prc}",
    ) + "---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata: {name: prc}
spec: {provisioningClassName: queued-provisioning.gke.io}
";
    let cases = [
        (
            "[{name: mk2}, {name: mk1}]",
            mk_check("mk1", "cfg") + &mk_check("mk2", "cfg"),
            Some((
                "MultipleMultiKueueAdmissionChecks",
                "Can't admit new workloads: Cannot use multiple MultiKueue AdmissionChecks on the same ClusterQueue, found: mk1,mk2.",
            )),
        ),
        (
            "[{name: mk, onFlavors: [spot]}]",
            mk_check("mk", "cfg"),
            Some((
                "MultiKueueAdmissionCheckAppliedPerFlavor",
                "Can't admit new workloads: Cannot specify MultiKueue AdmissionCheck per flavor, found: mk.",
            )),
        ),
        // Every flavor of the queue, named: the same as naming none.
        (
            "[{name: mk, onFlavors: [spot, default]}]",
            mk_check("mk", "cfg"),
            None,
        ),
        (
            "[{name: mk}, {name: prov}]",
            mk_check("mk", "cfg") + &prov,
            Some((
                "MultiKueueWithProvisioningRequest",
                "Can't admit new workloads: Cannot use both MultiKueue and ProvisioningRequest AdmissionChecks together, found: mk, prov.",
            )),
        ),
        // Kueue's first reason names the message's first part; the rest follow.
        (
            "[{name: mk, onFlavors: [default]}, {name: missing}]",
            mk_check("mk", "cfg"),
            Some((
                "AdmissionCheckNotFound",
                "Can't admit new workloads: references missing AdmissionCheck(s): missing, Cannot specify MultiKueue AdmissionCheck per flavor, found: mk.",
            )),
        ),
    ];
    for (checks, objects, expected) in cases {
        let m = setup(checks, &(objects + &workers));
        let got = inactive(&build(&m), "cq");
        assert_eq!(
            got.as_ref().map(|(r, m)| (*r, m.as_str())),
            expected,
            "{checks}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The Configuration's multiKueue section

fn configuration(section: &str) -> String {
    format!("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n{section}")
}

#[test]
fn the_multikueue_configuration_has_kueues_defaults() {
    let absent = load(&configuration("namespace: kueue-system\n"));
    let mk = absent.configuration.as_ref().unwrap().multi_kueue();
    assert_eq!(mk.gc_interval_ms(), 60_000);
    assert_eq!(mk.origin(), "multikueue");
    assert_eq!(mk.worker_lost_timeout_ms(), 15 * 60_000);
    assert_eq!(
        mk.dispatcher_name(),
        "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
    );
    assert_eq!(mk.dispatcher(), Dispatcher::AllAtOnce);

    let set = load(&configuration(
        "multiKueue:
  gcInterval: 0s
  origin: ''
  workerLostTimeout: 5m
  dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental
  externalFrameworks: [{name: Kind.v1.example.com}, {name: PyTorchJob.v1.kubeflow.org}]
  clusterProfile:
    accessProviders: [{name: gke, execConfig: {apiVersion: client.authentication.k8s.io/v1beta1, command: /plugins/gke}}]
",
    ));
    let mk = set.configuration.as_ref().unwrap().multi_kueue();
    assert_eq!(mk.gc_interval_ms(), 0, "0 disables the garbage collector");
    assert_eq!(mk.origin(), "multikueue", "an empty origin is defaulted");
    assert_eq!(mk.worker_lost_timeout_ms(), 5 * 60_000);
    assert_eq!(mk.dispatcher(), Dispatcher::Incremental { step_size: 3 });
    assert_eq!(
        mk.external_kinds(),
        [
            KindVersionGroup {
                kind: "Kind".into(),
                version: "v1".into(),
                group: "example.com".into()
            },
            KindVersionGroup {
                kind: "PyTorchJob".into(),
                version: "v1".into(),
                group: "kubeflow.org".into()
            },
        ]
    );

    let stepped = load(&configuration(
        "multiKueue:
  dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental
  incrementalDispatcherConfig: {stepSize: 1}
",
    ));
    let mk = stepped.configuration.as_ref().unwrap().multi_kueue();
    assert_eq!(mk.dispatcher(), Dispatcher::Incremental { step_size: 1 });
    let external = load(&configuration(
        "multiKueue: {dispatcherName: example.com/nearest}\n",
    ));
    assert_eq!(
        external
            .configuration
            .as_ref()
            .unwrap()
            .multi_kueue()
            .dispatcher(),
        Dispatcher::External("example.com/nearest")
    );
}

#[test]
fn the_multikueue_configuration_is_validated_with_kueues_messages() {
    let e = errors(&configuration(
        "integrations:
  frameworks: [batch/job, pod]
multiKueue:
  gcInterval: -1m30s
  workerLostTimeout: soon
  origin: not a label
  externalFrameworks:
  - name: Job
  - name: Thing.v1.example.com
  - name: Thing.v1.example.com
  - name: Job.v1.batch
  - name: Pod.v1.
  - name: JobSet.v1alpha2.jobset.x-k8s.io
  incrementalDispatcherConfig: {stepSize: 0}
",
    ));
    assert_eq!(
        e,
        [
            "mk.yaml doc 1: Configuration: multiKueue.gcInterval: Invalid value: -1m30s: must be greater than or equal to 0",
            r#"mk.yaml doc 1: Configuration: multiKueue.workerLostTimeout: invalid duration "soon": expected a number before the unit"#,
            r#"mk.yaml doc 1: Configuration: multiKueue.origin: Invalid value: "not a label": "not a label" is not a label value: use letters, digits, '-', '_' and '.', starting and ending with a letter or digit"#,
            r#"mk.yaml doc 1: Configuration: multiKueue.externalFrameworks[0].name: Invalid value: "Job": must be in 'kind.version.group' format"#,
            r#"mk.yaml doc 1: Configuration: multiKueue.externalFrameworks[2].name: Duplicate value: "Thing.v1.example.com""#,
            r#"mk.yaml doc 1: Configuration: multiKueue.externalFrameworks[3].name: Invalid value: "Job.v1.batch": conflicts with a built-in MultiKueue adapter"#,
            r#"mk.yaml doc 1: Configuration: multiKueue.externalFrameworks[4].name: Invalid value: "Pod.v1.": conflicts with a built-in MultiKueue adapter"#,
            "mk.yaml doc 1: Configuration: multiKueue.incrementalDispatcherConfig: incrementalDispatcherConfig is only valid when dispatcherName is set to the incremental dispatcher",
            "mk.yaml doc 1: Configuration: multiKueue.incrementalDispatcherConfig.stepSize: Invalid value: 0: must be greater than or equal to 1",
        ]
    );
    // Without `integrations.frameworks`, Kueue enables batch/job alone.
    let e = errors(&configuration(
        "multiKueue: {externalFrameworks: [{name: Job.v1.batch}, {name: Pod.v1.}], unknown: 1}\n",
    ));
    assert_eq!(
        e,
        [r#"mk.yaml doc 1: Configuration: multiKueue.unknown: unknown field "unknown""#]
    );
    let e = errors(&configuration(
        "multiKueue: {externalFrameworks: [{name: Job.v1.batch}, {name: Pod.v1.}]}\n",
    ));
    assert_eq!(
        e,
        [
            r#"mk.yaml doc 1: Configuration: multiKueue.externalFrameworks[0].name: Invalid value: "Job.v1.batch": conflicts with a built-in MultiKueue adapter"#
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// `wasq crds`

fn crd(name: &str) -> Value {
    let crd = crds()
        .into_iter()
        .find(|c| c.metadata.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no CRD {name}"));
    serde_json::to_value(crd).unwrap()
}

#[test]
fn the_crds_are_kueues() {
    let mkc = crd("multikueueclusters.kueue.x-k8s.io");
    assert_eq!(mkc["spec"]["scope"], "Cluster");
    assert_eq!(mkc["spec"]["names"]["shortNames"], json!(["mkc"]));
    let versions: Vec<(&str, bool)> = mkc["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap(), v["storage"].as_bool().unwrap()))
        .collect();
    assert_eq!(versions, [("v1beta2", true), ("v1beta1", false)]);
    let v = &mkc["spec"]["versions"][0];
    assert_eq!(v["subresources"], json!({"status": {}}));
    assert_eq!(
        v["additionalPrinterColumns"],
        json!([
            {"name": "Connected", "jsonPath": ".status.conditions[?(@.type=='Active')].status",
             "type": "string", "description": "MultiKueueCluster is connected"},
            {"name": "Age", "jsonPath": ".metadata.creationTimestamp", "type": "date",
             "description": "Time this workload was created"},
        ])
    );
    let spec = &v["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(spec["required"], json!(["clusterSource"]));
    let source = &spec["properties"]["clusterSource"];
    assert_eq!(
        source["x-kubernetes-validations"],
        json!([{"rule": "[has(self.kubeConfig),has(self.clusterProfileRef)].filter(x,x==true).size() == 1",
                "message": "exactly one of the fields in [kubeConfig clusterProfileRef] must be set"}])
    );
    let kube_config = &source["properties"]["kubeConfig"];
    assert_eq!(kube_config["required"], json!(["location"]));
    let location = &kube_config["properties"]["location"];
    assert_eq!(
        (&location["minLength"], &location["maxLength"]),
        (&json!(1), &json!(256))
    );
    let location_type = &kube_config["properties"]["locationType"];
    assert_eq!(location_type["default"], "Secret");
    assert_eq!(location_type["enum"], json!(["Secret", "Path"]));
    let status = &v["schema"]["openAPIV3Schema"]["properties"]["status"];
    assert_eq!(status["properties"]["conditions"]["maxItems"], 16);

    let conf = crd("multikueueconfigs.kueue.x-k8s.io");
    assert_eq!(conf["spec"]["names"]["shortNames"], json!(["mkconf"]));
    let v = &conf["spec"]["versions"][0];
    assert!(v.get("subresources").is_none(), "no status subresource");
    assert!(v.get("additionalPrinterColumns").is_none());
    let spec = &v["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(spec["required"], json!(["clusters"]));
    let clusters = &spec["properties"]["clusters"];
    assert_eq!(
        (
            &clusters["minItems"],
            &clusters["maxItems"],
            &clusters["items"]["maxLength"]
        ),
        (&json!(1), &json!(20), &json!(256))
    );
    assert_eq!(clusters["x-kubernetes-list-type"], "atomic");
    assert_eq!(
        clusters["x-kubernetes-validations"][0]["message"],
        "must be unique"
    );
    assert_eq!(
        spec["properties"]["quotaManagement"]["enum"],
        json!(["Manual", "Automated"])
    );

    let wl = crd("workloads.kueue.x-k8s.io");
    let status = &wl["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"];
    let messages: Vec<&str> = status["x-kubernetes-validations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        messages,
        [
            "clusterName is immutable once set",
            "clusterName and nominatedClusterNames are mutually exclusive"
        ]
    );
    assert_eq!(status["properties"]["clusterName"]["maxLength"], 256);
    assert_eq!(
        status["properties"]["nominatedClusterNames"]["maxItems"],
        20
    );
}

#[test]
fn every_rule_of_kueues_crds_lands_on_a_property() {
    use wasq::k8s::schema::crds::{KUEUE_RULES, object_schema, property_mut};
    for (kind, path, rules) in KUEUE_RULES {
        let mut schema = object_schema(*kind);
        let property = property_mut(&mut schema, path)
            .unwrap_or_else(|| panic!("{kind:?} has no property {path}"));
        let rules: Value = serde_json::from_str(rules).unwrap();
        for (key, value) in rules.as_object().unwrap() {
            assert_eq!(&property[key], value, "{kind:?} {path}: {key}");
        }
    }
}
