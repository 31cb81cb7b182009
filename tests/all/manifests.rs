//! Manifest loading: v1beta2 and v1beta1 objects, Job and Pod conversion, defaulting, and every
//! kind of error with its exact message (file, document, object, field path).

use std::path::{Path, PathBuf};

use wasq::api::load::{LoadErrors, load_paths, load_str};
use wasq::api::{FungibilityPolicy, Manifests, Quantity, QueueingStrategy, Workload};

fn fixture(name: &str) -> PathBuf {
    Path::new("tests/manifests").join(name)
}

fn load(file: &str, yaml: &str) -> Manifests {
    match load_str(Path::new(file), yaml) {
        Ok(m) => m,
        Err(e) => panic!("{file} should load:\n{e}"),
    }
}

fn errors(file: &str, yaml: &str) -> Vec<String> {
    match load_str(Path::new(file), yaml) {
        Ok(_) => panic!("{file} should not load"),
        Err(e) => e.messages(),
    }
}

fn workload<'a>(m: &'a Manifests, name: &str) -> &'a Workload {
    m.workloads
        .iter()
        .find(|w| w.metadata.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no workload {name}"))
}

/// `(resource, quantity)` requests of a podSet's first container.
fn requests(wl: &Workload, pod_set: usize, container: usize) -> Vec<(String, String)> {
    let spec = wl.spec.pod_sets[pod_set].template.spec.as_ref().unwrap();
    let r = spec.containers[container].resources.as_ref().unwrap();
    r.requests
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.0.clone()))
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

const FLAVOR: &str = "apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
";

// ---------------------------------------------------------------------------------------------
// Valid sets

#[test]
fn valid_v1beta2_set_loads() {
    let m = load_paths(&[fixture("valid-v1beta2.yaml")]).unwrap();
    assert_eq!(m.namespaces.len(), 1);
    assert_eq!(m.flavors.len(), 2);
    assert_eq!(m.cohorts.len(), 2);
    assert_eq!(m.local_queues.len(), 1);
    assert_eq!(m.priority_classes[0].value, 10000);
    let cq = &m.cluster_queues[0];
    assert_eq!(cq.spec.cohort_name.as_deref(), Some("team"));
    assert_eq!(cq.spec.queueing_strategy(), QueueingStrategy::StrictFIFO);
    let cpu = &cq.spec.resource_groups[0].flavors[0].resources[0];
    assert_eq!(cpu.nominal_quota, Quantity::units(9));
    assert_eq!(cpu.borrowing_limit, Some(Quantity::units(3)));
    let wl = workload(&m, "sample");
    // Defaulted from the WorkloadPriorityClass it references.
    assert_eq!(wl.spec.priority, Some(10000));
    assert_eq!(wl.spec.pod_sets[0].count, 3);
    assert!(wl.metadata.creation_timestamp.is_some());
    let ext = &m.extensions[0];
    assert_eq!(
        (ext.api_version.as_str(), ext.kind.as_str()),
        ("sim.wasq.dev/v1alpha1", "Trace")
    );
    assert_eq!(ext.origin.doc, 10);
    assert_eq!(ext.value["spec"]["events"][0]["create"], "sample");
}

#[test]
fn v1beta1_objects_convert_to_v1beta2() {
    let m = load_paths(&[fixture("v1beta1.yaml")]).unwrap();
    let cq = &m.cluster_queues[0];
    assert_eq!(cq.spec.cohort_name.as_deref(), Some("team"));
    assert_eq!(cq.spec.when_can_borrow(), FungibilityPolicy::MayStopSearch);
    assert_eq!(cq.spec.when_can_preempt(), FungibilityPolicy::MayStopSearch);
    // v1beta1's `admissionChecks: [provisioning]` is a rule for every flavor in v1beta2.
    let rules = &cq
        .spec
        .admission_checks_strategy
        .as_ref()
        .unwrap()
        .admission_checks;
    assert_eq!(
        (
            rules.len(),
            rules[0].name.as_str(),
            rules[0].on_flavors.len()
        ),
        (1, "provisioning", 0)
    );
    assert_eq!(
        cq.status.as_ref().unwrap().get("pendingWorkloadsStatus"),
        None
    );
    let lq = &m.local_queues[0];
    assert!(lq.status.as_ref().unwrap().get("flavorsUsage").is_some());
    let wl = workload(&m, "sample");
    let r = wl.spec.priority_class_ref.as_ref().unwrap();
    assert_eq!(
        (r.group.as_str(), r.kind.as_str(), r.name.as_str()),
        ("kueue.x-k8s.io", "WorkloadPriorityClass", "high")
    );
    assert_eq!(wl.spec.priority, Some(100));
}

#[test]
fn v1beta2_fields_are_not_accepted_in_v1beta1_and_vice_versa() {
    let text = "apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: a}
spec: {cohort: team}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: b}
spec: {cohortName: team}
";
    assert_eq!(
        errors("cq.yaml", text),
        [
            r#"cq.yaml doc 1: ClusterQueue a: spec.cohort: unknown field "cohort", did you mean "cohortName"?"#,
            r#"cq.yaml doc 2: ClusterQueue b: spec.cohortName: unknown field "cohortName", did you mean "cohort"?"#,
        ]
    );
}

#[test]
fn missing_references_are_not_errors() {
    // A flavor, cohort and ClusterQueue that do not exist make queues inactive at run time.
    let text = "apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  cohortName: nowhere
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: missing-flavor
      resources: [{name: cpu, nominalQuota: 1}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: child}
spec: {parentName: missing-parent}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: default, name: q}
spec: {clusterQueue: missing-cq}
";
    let m = load("refs.yaml", text);
    assert_eq!(m.cluster_queues.len(), 1);
    assert_eq!(m.local_queues.len(), 1);
}

#[test]
fn empty_documents_are_skipped_but_counted() {
    let text = "---
# nothing here yet
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: Bad_Name}
---
";
    assert_eq!(
        errors("f.yaml", text),
        [
            r#"f.yaml doc 2: ResourceFlavor Bad_Name: metadata.name: "Bad_Name" is not a DNS subdomain: use lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"#
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Errors

#[test]
fn yaml_syntax_error_has_line_and_column() {
    let text = format!(
        "{FLAVOR}---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: [cq}}\n"
    );
    assert_eq!(
        errors("queues.yaml", &text),
        ["queues.yaml line 7 column 18: mismatched bracket '[' closed by '}'"]
    );
}

#[test]
fn unknown_field_suggests_the_known_one() {
    let text = "apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a, lables: {x: y}}
spec:
  namespaceSelectr: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: 1, borowingLimit: 1}]
  unrelated: 1
";
    assert_eq!(
        errors("queues.yaml", text),
        [
            r#"queues.yaml doc 1: ClusterQueue team-a: metadata.lables: unknown field "lables", did you mean "labels"?"#,
            r#"queues.yaml doc 1: ClusterQueue team-a: spec.namespaceSelectr: unknown field "namespaceSelectr", did you mean "namespaceSelector"?"#,
            r#"queues.yaml doc 1: ClusterQueue team-a: spec.unrelated: unknown field "unrelated""#,
            r#"queues.yaml doc 1: ClusterQueue team-a: spec.resourceGroups[0].flavors[0].resources[0].borowingLimit: unknown field "borowingLimit", did you mean "borrowingLimit"?"#,
        ]
    );
}

#[test]
fn unknown_field_inside_a_pod_template_is_reported() {
    let text = "apiVersion: batch/v1
kind: Job
metadata: {name: j, labels: {kueue.x-k8s.io/queue-name: q}}
spec:
  template:
    spec:
      containers:
      - name: c
        resources: {request: {cpu: 1}}
";
    assert_eq!(
        errors("jobs.yaml", text),
        [
            r#"jobs.yaml doc 1: Job default/j: spec.template.spec.containers[0].resources.request: unknown field "request", did you mean "requests"?"#
        ]
    );
}

#[test]
fn unknown_enum_value_lists_allowed_values() {
    let text = "apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  queueingStrategy: StrictFifo
  preemption: {withinClusterQueue: Sometimes}
";
    assert_eq!(
        errors("cq.yaml", text),
        [
            r#"cq.yaml doc 1: ClusterQueue cq: spec.preemption.withinClusterQueue: unknown value "Sometimes" (allowed: "Never", "LowerPriority", "LowerOrNewerEqualPriority")"#,
            r#"cq.yaml doc 1: ClusterQueue cq: spec.queueingStrategy: unknown value "StrictFifo", did you mean "StrictFIFO"? (allowed: "StrictFIFO", "BestEffortFIFO")"#,
        ]
    );
}

#[test]
fn wrong_types_and_missing_fields_carry_their_path() {
    let text = "apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: lots}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: default}
spec: {}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: p}
value: high
";
    assert_eq!(
        errors("types.yaml", text),
        [
            r#"types.yaml doc 1: ClusterQueue cq: spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: invalid quantity "lots": expected a number with an optional suffix (m, k, M, G, Ki, Mi, Gi, ...)"#,
            r#"types.yaml doc 2: LocalQueue default/q: spec: missing field "clusterQueue""#,
            r#"types.yaml doc 3: WorkloadPriorityClass p: value: invalid type: string "high", expected i32"#,
        ]
    );
}

#[test]
fn unsupported_kinds_and_documents_are_errors() {
    let text = "apiVersion: apps/v1
kind: DaemonSet
metadata: {name: web}
---
apiVersion: kueue.x-k8s.io/v1alpha1
kind: ClusterQueue
metadata: {name: cq}
---
kind: ResourceFlavor
metadata: {name: f}
---
- just
- a list
";
    assert_eq!(
        errors("misc.yaml", text),
        [
            concat!(
                r#"misc.yaml doc 1: DaemonSet web: kind: unsupported kind "DaemonSet" (apiVersion "apps/v1"); "#,
                "wasq reads ResourceFlavor, Topology, Cohort, ClusterQueue, LocalQueue, WorkloadPriorityClass, Workload, ",
                "AdmissionCheck, ProvisioningRequestConfig, MultiKueueConfig, MultiKueueCluster, ",
                "the Kueue Configuration, Job (batch/v1), JobSet (jobset.x-k8s.io/v1alpha2), RayJob (ray.io/v1), ",
                "RayCluster (ray.io/v1), PyTorchJob (kubeflow.org/v1), TFJob (kubeflow.org/v1), XGBoostJob (kubeflow.org/v1), ",
                "PaddleJob (kubeflow.org/v1), JAXJob (kubeflow.org/v1), MPIJob (kubeflow.org/v2beta1), ",
                "LeaderWorkerSet (leaderworkerset.x-k8s.io/v1), StatefulSet (apps/v1), Deployment (apps/v1), ",
                "Pod (v1), Namespace (v1), Node (v1), QueuePolicy (policies.wasq.dev/v1alpha1) and sim.wasq.dev objects"
            ),
            r#"misc.yaml doc 2: ClusterQueue cq: apiVersion: unsupported apiVersion "kueue.x-k8s.io/v1alpha1" for kind ClusterQueue (supported: kueue.x-k8s.io/v1beta2, kueue.x-k8s.io/v1beta1)"#,
            r#"misc.yaml doc 3: missing field "apiVersion""#,
            "misc.yaml doc 4: expected a Kubernetes object (a mapping with apiVersion and kind)",
        ]
    );
}

#[test]
fn cluster_queue_quota_rules() {
    let text = "apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: on-demand
      resources:
      - {name: cpu, nominalQuota: -1}
      - {name: memory, nominalQuota: 1Gi, lendingLimit: 2Gi}
    - name: spot
      resources:
      - {name: cpu, nominalQuota: 1, borrowingLimit: 1}
  - coveredResources: [memory, gpu]
    flavors:
    - name: spot
      resources:
      - {name: gpu, nominalQuota: 1}
      - {name: memory, nominalQuota: 1}
";
    assert_eq!(
        errors("queues.yaml", text),
        [
            "queues.yaml doc 1: ClusterQueue team-a: spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: must be greater than or equal to 0",
            "queues.yaml doc 1: ClusterQueue team-a: spec.resourceGroups[0].flavors[0].resources[1].lendingLimit: must not be set when spec.cohortName is empty",
            "queues.yaml doc 1: ClusterQueue team-a: spec.resourceGroups[0].flavors[0].resources[1].lendingLimit: must be less than or equal to nominalQuota (1Gi)",
            r#"queues.yaml doc 1: ClusterQueue team-a: spec.resourceGroups[0].flavors[1].resources: flavor "spot" does not list covered resource "memory""#,
            "queues.yaml doc 1: ClusterQueue team-a: spec.resourceGroups[0].flavors[1].resources[0].borrowingLimit: must not be set when spec.cohortName is empty",
            r#"queues.yaml doc 1: ClusterQueue team-a: spec.resourceGroups[1].coveredResources[0]: resource "memory" is already covered by spec.resourceGroups[0]"#,
            r#"queues.yaml doc 1: ClusterQueue team-a: spec.resourceGroups[1].flavors[0].name: flavor "spot" already appears in spec.resourceGroups[0]"#,
            r#"queues.yaml doc 1: ClusterQueue team-a: spec.resourceGroups[1].flavors[0].resources[0].name: must be "memory": list resources in the order of coveredResources"#,
        ]
    );
}

#[test]
fn cluster_queue_policy_rules() {
    let groups: String = (0..17)
        .map(|i| format!("  - coveredResources: [r{i}]\n    flavors: [{{name: f{i}, resources: [{{name: r{i}, nominalQuota: 1}}]}}]\n"))
        .collect();
    let text = format!(
        "apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: cq}}
spec:
  cohortName: Team
  flavorFungibility: {{preference: BorrowingOverPreemption}}
  preemption: {{borrowWithinCohort: {{policy: LowerPriority}}}}
  namespaceSelector:
    matchExpressions: [{{key: team, operator: In}}]
  fairSharing: {{weight: -1}}
  resourceGroups:
{groups}"
    );
    assert_eq!(
        errors("cq.yaml", &text),
        [
            r#"cq.yaml doc 1: ClusterQueue cq: spec.cohortName: "Team" is not a DNS subdomain: use lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"#,
            "cq.yaml doc 1: ClusterQueue cq: spec.resourceGroups: must have at most 16 resource groups, got 17",
            "cq.yaml doc 1: ClusterQueue cq: spec.namespaceSelector.matchExpressions[0].values: must be non-empty when operator is In or NotIn",
            "cq.yaml doc 1: ClusterQueue cq: spec.flavorFungibility.preference: may only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
            "cq.yaml doc 1: ClusterQueue cq: spec.preemption.borrowWithinCohort.policy: must be Never when reclaimWithinCohort is Never",
            "cq.yaml doc 1: ClusterQueue cq: spec.fairSharing.weight: must be greater than or equal to 0",
        ]
    );
}

#[test]
fn cohort_rules() {
    let text = "apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: root}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: 1, borrowingLimit: 1, lendingLimit: 5}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: loop}
spec:
  parentName: loop
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: 1, lendingLimit: 5}]
";
    // A Cohort's lendingLimit may exceed its own nominalQuota: it lends its subtree's quota.
    assert_eq!(
        errors("cohorts.yaml", text),
        [
            "cohorts.yaml doc 1: Cohort root: spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: must not be set when spec.parentName is empty",
            "cohorts.yaml doc 1: Cohort root: spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: must not be set when spec.parentName is empty",
            "cohorts.yaml doc 2: Cohort loop: spec.parentName: a Cohort cannot be its own parent",
        ]
    );
}

#[test]
fn local_queue_needs_a_namespace() {
    let text = "apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: user-queue}
spec: {clusterQueue: cq}
";
    assert_eq!(
        errors("lq.yaml", text),
        [
            "lq.yaml doc 1: LocalQueue user-queue: metadata.namespace: required: the object is namespaced"
        ]
    );
}

#[test]
fn resource_flavor_rules() {
    let text = "apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: spot}
spec:
  topologyName: default
  nodeTaints:
  - {key: spot, effect: NoSchedul}
  tolerations:
  - {operator: Equal, value: x}
";
    assert_eq!(
        errors("rf.yaml", text),
        [
            r#"rf.yaml doc 1: ResourceFlavor spot: spec.nodeTaints[0].effect: unknown value "NoSchedul", did you mean "NoSchedule"? (allowed: "NoSchedule", "PreferNoSchedule", "NoExecute")"#,
            "rf.yaml doc 1: ResourceFlavor spot: spec.tolerations[0].operator: must be Exists when key is empty",
            "rf.yaml doc 1: ResourceFlavor spot: spec.topologyName: requires at least one entry in spec.nodeLabels",
        ]
    );
}

#[test]
fn workload_rules() {
    let text = "apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: w
  namespace: default
  annotations: {kueue.x-k8s.io/priority-boost: high}
spec:
  queueName: q
  priorityClassRef: {group: kueue.x-k8s.io, kind: WorkloadPriorityClass, name: missing}
  podSets:
  - name: main
    count: 2
    minCount: 3
    template:
      spec:
        containers:
        - name: c
          resources: {requests: {cpu: 1x, pods: 1}, limits: {memory: -1Gi}}
  - name: main
    count: -1
    minCount: 0
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: empty, namespace: default}
spec:
  podSets: []
  priorityClassRef: {group: scheduling.k8s.io, kind: WorkloadPriorityClass, name: p}
";
    assert_eq!(
        errors("wl.yaml", text),
        [
            "wl.yaml doc 1: Workload default/w: spec.podSets[0].minCount: must be less than or equal to count (2)",
            r#"wl.yaml doc 1: Workload default/w: spec.podSets[0].template.spec.containers[0].resources.requests.cpu: unknown suffix "x" in quantity "1x""#,
            r#"wl.yaml doc 1: Workload default/w: spec.podSets[0].template.spec.containers[0].resources.requests.pods: the key "pods" is reserved for Kueue's internal use"#,
            "wl.yaml doc 1: Workload default/w: spec.podSets[0].template.spec.containers[0].resources.limits.memory: must be greater than or equal to 0",
            r#"wl.yaml doc 1: Workload default/w: spec.podSets[1].name: duplicate podSet name "main""#,
            "wl.yaml doc 1: Workload default/w: spec.podSets[1].count: must be greater than or equal to 0",
            "wl.yaml doc 1: Workload default/w: spec.podSets[1].minCount: must be greater than or equal to 1",
            "wl.yaml doc 1: Workload default/w: spec.podSets: at most one podSet can use minCount",
            r#"wl.yaml doc 1: Workload default/w: spec.priorityClassRef.name: WorkloadPriorityClass "missing" not found, and spec.priority is not set"#,
            r#"wl.yaml doc 1: Workload default/w: metadata.annotations.kueue.x-k8s.io/priority-boost: "high" must be a signed integer"#,
            "wl.yaml doc 2: Workload default/empty: spec.podSets: must have at least 1 podSet",
            "wl.yaml doc 2: Workload default/empty: spec.priorityClassRef.kind: only the PriorityClass kind is allowed for the scheduling.k8s.io group",
            "wl.yaml doc 2: Workload default/empty: spec.priority: required when priorityClassRef is not a WorkloadPriorityClass (wasq reads no PriorityClass objects)",
        ]
    );
}

#[test]
fn duplicate_objects_name_both_documents() {
    let text = format!(
        "{FLAVOR}---
{FLAVOR}---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: q, namespace: a}}
spec: {{clusterQueue: cq}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: q, namespace: b}}
spec: {{clusterQueue: cq}}
"
    );
    let mut files = vec![(PathBuf::from("one.yaml"), text)];
    files.push((
        PathBuf::from("two.yaml"),
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: q, namespace: a}\nspec: {clusterQueue: cq}\n"
            .to_string(),
    ));
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = files
        .iter()
        .map(|(name, text)| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        })
        .collect();
    let err = load_paths(&paths).unwrap_err();
    let shown: Vec<String> = err
        .messages()
        .iter()
        .map(|m| m.replace(&format!("{}/", dir.path().display()), ""))
        .collect();
    assert_eq!(
        shown,
        [
            "one.yaml doc 2: ResourceFlavor default: duplicate ResourceFlavor default: already defined in one.yaml doc 1",
            "two.yaml doc 1: LocalQueue a/q: duplicate LocalQueue a/q: already defined in one.yaml doc 3",
        ]
    );
}

#[test]
fn every_error_of_every_file_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.yaml");
    let b = dir.path().join("b.yaml");
    std::fs::write(&a, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: ok}\n---\nkind: Oops\n").unwrap();
    std::fs::write(&b, "key: [unclosed\n").unwrap();
    let missing = dir.path().join("missing.yaml");
    let err: LoadErrors = load_paths(&[a.clone(), b.clone(), missing.clone()]).unwrap_err();
    assert_eq!(err.len(), 3);
    assert_eq!(err.errors[0].file, a);
    assert_eq!(err.errors[0].doc, Some(2));
    assert_eq!(err.errors[0].message, r#"missing field "apiVersion""#);
    assert_eq!(err.errors[1].file, b);
    assert_eq!(err.errors[1].line_column, Some((1, 6)));
    assert_eq!(err.errors[2].file, missing);
    assert!(
        err.errors[2].message.starts_with("cannot read: "),
        "{}",
        err.errors[2].message
    );
    // Display lists every error, one per line.
    assert_eq!(err.to_string().lines().count(), 3);
}

#[test]
fn directory_loads_yaml_files_in_name_order() {
    let m = load_paths(&[fixture("dir")]).unwrap();
    let names: Vec<&str> = m
        .cluster_queues
        .iter()
        .map(|cq| cq.metadata.name.as_deref().unwrap())
        .collect();
    assert_eq!(names, ["cq-a", "cq-b"]);

    let empty = tempfile::tempdir().unwrap();
    let err = load_paths(&[empty.path().to_path_buf()]).unwrap_err();
    assert_eq!(
        err.errors[0].message,
        "directory holds no *.yaml or *.yml files"
    );
}

// ---------------------------------------------------------------------------------------------
// Jobs and Pods

#[test]
fn job_becomes_a_workload() {
    let m = load_paths(&[fixture("jobs.yaml")]).unwrap();
    assert_eq!(
        m.workloads.len(),
        1,
        "the Job without a queue label is not queued"
    );
    let wl = workload(&m, "job-pi-10c48");
    assert_eq!(wl.metadata.namespace.as_deref(), Some("team-a"));
    assert_eq!(wl.spec.queue_name.as_deref(), Some("user-queue"));
    assert_eq!(wl.spec.priority, Some(500));
    assert_eq!(wl.spec.priority_class_ref.as_ref().unwrap().name, "high");
    let ps = &wl.spec.pod_sets[0];
    assert_eq!(
        (ps.name.as_str(), ps.count, ps.min_count),
        ("main", 3, Some(2))
    );
    // Requests as written; limits stand in for the missing ones.
    assert_eq!(
        requests(wl, 0, 0),
        pairs(&[("cpu", "1"), ("memory", "1Gi")])
    );
    assert_eq!(requests(wl, 0, 1), pairs(&[("cpu", "500m")]));
    let annotations = wl.metadata.annotations.as_ref().unwrap();
    assert_eq!(annotations["sim.wasq.dev/duration"], "30s");
    assert_eq!(
        wl.metadata
            .creation_timestamp
            .as_ref()
            .unwrap()
            .0
            .to_string(),
        "2024-05-01T10:00:00Z"
    );
}

#[test]
fn job_errors_are_reported_against_the_job() {
    let text = "apiVersion: batch/v1
kind: Job
metadata:
  name: j
  namespace: ns
  labels: {kueue.x-k8s.io/queue-name: Bad_Queue}
  annotations: {kueue.x-k8s.io/job-min-parallelism: \"5\"}
spec:
  parallelism: 2
  template:
    spec:
      containers:
      - {name: c, resources: {requests: {cpu: fast}}}
";
    assert_eq!(
        errors("jobs.yaml", text),
        [
            r#"jobs.yaml doc 1: Job ns/j: metadata.annotations.kueue.x-k8s.io/job-min-parallelism: "5" must be an integer between 1 and 1 (the pod count minus one)"#
        ]
    );
    let text = text.replace("\"5\"", "\"1\"");
    assert_eq!(
        errors("jobs.yaml", &text),
        [
            r#"jobs.yaml doc 1: Job ns/j: spec.template.spec.containers[0].resources.requests.cpu: invalid quantity "fast": expected a number with an optional suffix (m, k, M, G, Ki, Mi, Gi, ...)"#,
            r#"jobs.yaml doc 1: Job ns/j: metadata.labels.kueue.x-k8s.io/queue-name: "Bad_Queue" is not a DNS subdomain: use lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"#,
        ]
    );
}

#[test]
fn job_priority_class_must_exist() {
    let text = "apiVersion: batch/v1
kind: Job
metadata: {name: j, labels: {kueue.x-k8s.io/queue-name: q, kueue.x-k8s.io/priority-class: urgent}}
spec: {template: {spec: {containers: [{name: c}]}}}
";
    assert_eq!(
        errors("jobs.yaml", text),
        [
            r#"jobs.yaml doc 1: Job default/j: metadata.labels.kueue.x-k8s.io/priority-class: WorkloadPriorityClass "urgent" not found"#
        ]
    );
}

#[test]
fn pod_group_becomes_one_workload() {
    let m = load_paths(&[fixture("pods.yaml")]).unwrap();
    assert_eq!(m.workloads.len(), 2);
    let group = workload(&m, "train");
    assert_eq!(group.spec.queue_name.as_deref(), Some("q"));
    let sets: Vec<(i32, usize)> = group
        .spec
        .pod_sets
        .iter()
        .map(|ps| (ps.count, ps.name.len()))
        .collect();
    let mut counts: Vec<i32> = sets.iter().map(|s| s.0).collect();
    counts.sort();
    assert_eq!(counts, [1, 2], "one driver, two workers");
    assert!(
        sets.iter().all(|s| s.1 == 8),
        "podSets are named by an 8-character role hash"
    );
    assert_eq!(
        group.metadata.annotations.as_ref().unwrap()["kueue.x-k8s.io/is-group-workload"],
        "true"
    );
    let solo = workload(&m, "pod-solo-8456e");
    assert_eq!(solo.spec.pod_sets[0].name, "main");
    assert_eq!(requests(solo, 0, 0), pairs(&[("cpu", "1")]));
}

#[test]
fn single_role_pod_group_may_be_incomplete() {
    let pod = |name: &str| {
        format!(
            "apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {{kueue.x-k8s.io/queue-name: q, kueue.x-k8s.io/pod-group-name: g}}
  annotations: {{kueue.x-k8s.io/pod-group-total-count: \"4\"}}
spec: {{containers: [{{name: c, resources: {{requests: {{cpu: 1}}}}}}]}}
"
        )
    };
    let m = load("pods.yaml", &format!("{}---\n{}", pod("a"), pod("b")));
    let wl = workload(&m, "g");
    assert_eq!(
        (wl.spec.pod_sets[0].name.as_str(), wl.spec.pod_sets[0].count),
        ("main", 4)
    );
}

#[test]
fn pod_group_errors() {
    let pod = |name: &str, total: &str, cpu: &str| {
        format!(
            "apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: ml
  labels: {{kueue.x-k8s.io/queue-name: q, kueue.x-k8s.io/pod-group-name: g}}
  annotations: {{kueue.x-k8s.io/pod-group-total-count: \"{total}\"}}
spec: {{containers: [{{name: c, resources: {{requests: {{cpu: {cpu}}}}}}}]}}
"
        )
    };
    let inconsistent = format!("{}---\n{}", pod("a", "2", "1"), pod("b", "3", "1"));
    assert_eq!(
        errors("pods.yaml", &inconsistent),
        [
            r#"pods.yaml doc 2: Pod ml/b: metadata.annotations.kueue.x-k8s.io/pod-group-total-count: 3 differs from 2 on Pod ml/a (pods.yaml doc 1); every pod of a group must give the same total"#
        ]
    );
    let incomplete = format!("{}---\n{}", pod("a", "3", "1"), pod("b", "3", "2"));
    assert_eq!(
        errors("pods.yaml", &incomplete),
        [
            r#"pods.yaml doc 1: Pod ml/a: metadata.annotations.kueue.x-k8s.io/pod-group-total-count: pod group "g" is incomplete: 2 of 3 pods present in 2 roles, so the size of each role is unknown; add the missing pods"#
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Defaulting

#[test]
fn workload_without_queue_name_goes_to_local_queue_default() {
    let text = "apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: default, namespace: team-a}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w, namespace: team-a}
spec:
  podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c}]}}}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: elsewhere, namespace: team-b}
spec:
  podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c}]}}}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: unlabelled, namespace: team-a}
spec: {template: {spec: {containers: [{name: c}]}}}
";
    let m = load("defaults.yaml", text);
    assert_eq!(
        workload(&m, "w").spec.queue_name.as_deref(),
        Some("default")
    );
    assert_eq!(workload(&m, "elsewhere").spec.queue_name, None);
    assert_eq!(
        workload(&m, "job-unlabelled-62a98")
            .spec
            .queue_name
            .as_deref(),
        Some("default")
    );
}

#[test]
fn derived_workload_name_must_not_clash() {
    let text = "apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: job-x-27a87, namespace: default}
spec:
  queueName: q
  podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c}]}}}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: x, labels: {kueue.x-k8s.io/queue-name: q}}
spec: {template: {spec: {containers: [{name: c}]}}}
";
    assert_eq!(
        errors("clash.yaml", text),
        [
            "clash.yaml doc 2: Job default/x: duplicate Workload default/job-x-27a87: already defined in clash.yaml doc 1"
        ]
    );
}

#[test]
fn topology_and_node_rules() {
    let text = "apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: default}
spec:
  levels:
  - nodeLabel: kubernetes.io/hostname
  - nodeLabel: cloud/rack
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: typo}
spec:
  levels:
  - nodeLable: cloud/rack
---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {cloud/rack: r1}}
status:
  allocatable: {cpu: '8', pods: '110', memory: 1GG}
";
    assert_eq!(
        errors("topo.yaml", text),
        [
            "topo.yaml doc 1: Topology default: spec.levels: the kubernetes.io/hostname label can only be used at the lowest level of topology",
            r#"topo.yaml doc 2: Topology typo: spec.levels[0].nodeLable: unknown field "nodeLable", did you mean "nodeLabel"?"#,
            r#"topo.yaml doc 3: Node n1: status.allocatable.memory: unknown suffix "GG" in quantity "1GG""#,
        ]
    );
}

#[test]
fn pod_template_annotations_become_a_topology_request() {
    let job = |annotations: &str| {
        format!(
            "apiVersion: batch/v1
kind: Job
metadata: {{name: train, namespace: ns, labels: {{kueue.x-k8s.io/queue-name: lq}}}}
spec:
  parallelism: 4
  template:
    metadata:
      annotations: {annotations}
    spec:
      containers: [{{name: c, image: i, resources: {{requests: {{cpu: '1'}}}}}}]
"
        )
    };
    let m = load(
        "job.yaml",
        &job("{kueue.x-k8s.io/podset-required-topology: cloud/rack}"),
    );
    let tr = m.workloads[0].spec.pod_sets[0]
        .topology_request
        .clone()
        .expect("a topology request");
    assert_eq!(tr.required.as_deref(), Some("cloud/rack"));
    assert_eq!(tr.preferred, None);
    assert_eq!(
        errors(
            "job.yaml",
            &job(
                "{kueue.x-k8s.io/podset-required-topology: cloud/rack, kueue.x-k8s.io/podset-slice-size: '2'}"
            )
        ),
        [
            "job.yaml doc 1: Job ns/train: spec.template.metadata.annotations.kueue.x-k8s.io/podset-slice-size: may not be set when 'kueue.x-k8s.io/podset-slice-required-topology' is not specified"
        ]
    );
}

/// What `kubectl get … -o yaml` prints for several objects — one `v1` `List` with server-set
/// metadata and Kueue's statuses — loads as its items, and a Workload holding an admission
/// starts admitted in the simulator.
#[test]
fn a_kubectl_list_loads_as_its_items() {
    let path = fixture("kubectl-get-list.yaml");
    let text = std::fs::read_to_string(&path).expect("fixture");
    let m = load("kubectl-get-list.yaml", &text);
    assert_eq!(
        (
            m.flavors.len(),
            m.cluster_queues.len(),
            m.local_queues.len(),
            m.workloads.len()
        ),
        (1, 1, 1, 2)
    );
    assert!(
        workload(&m, "job-sample-job-running-1a2b3")
            .status
            .as_ref()
            .is_some_and(|s| s.admission.is_some())
    );
    let scenario = wasq::sim::Scenario::load(&[path]).expect("loads as a scenario");
    let mut sim = wasq::sim::Simulation::new(scenario);
    sim.run(
        &wasq::sim::Limits {
            max_cycles: Some(1),
            ..Default::default()
        },
        None,
    );
    let report = sim.report();
    let state = |name: &str| {
        report
            .workloads
            .iter()
            .find(|w| w.name == name)
            .map(|w| w.state)
            .unwrap_or_default()
    };
    assert_eq!(state("job-sample-job-running-1a2b3"), "admitted");
    assert_eq!(state("job-sample-job-waiting-4d5e6"), "inadmissible");
    // An empty List is no object; a List whose items are not a list is an error naming it.
    assert_eq!(
        load("empty.yaml", "apiVersion: v1\nkind: List\nitems: []\n")
            .cluster_queues
            .len(),
        0
    );
    assert_eq!(
        errors("bad.yaml", "apiVersion: v1\nkind: List\nitems: {a: 1}\n"),
        ["bad.yaml doc 1: List: items: expected a list of objects"]
    );
}
