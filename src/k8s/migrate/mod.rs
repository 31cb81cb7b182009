//! `wasq migrate check`: reads a running Kueue installation and says, object by object, what
//! wasq runs as Kueue does (`same`), what it runs differently (`different`, with the page of
//! docs/differences.md that says how), what it does not run (`unsupported`), and what to do
//! before switching (`action`).
//!
//! It reads Kueue's Configuration (the ConfigMap `kueue-manager-config`, key
//! `controller_manager_config.yaml`, as Kueue's manifests and Helm chart install it), the
//! feature gates of its manager Deployment (`--feature-gates`, and the Configuration's
//! `featureGates`), Kueue's webhook configurations, and every Kueue object (as `wasq snapshot`
//! lists them). Nothing is written.
//!
//! [`snapshot`] is `wasq snapshot`: the same objects written out as a scenario the simulator
//! runs.

use std::collections::BTreeMap;

use anyhow::Context;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use serde::Serialize;
use serde_json::Value;

use crate::api::decode::Object;
use crate::api::jobs;
use crate::api::{Quantity, Workload};
use crate::k8s::schema::kinds::KueueKind;
use crate::k8s::schema::prune::Schemas;
use crate::k8s::sync::core::{has_quota_reservation, is_admitted, is_finished};

pub mod snapshot;

/// Kueue's namespace in its manifests and Helm chart.
pub const KUEUE_NAMESPACE: &str = "kueue-system";
/// Kueue's configuration ConfigMap and its key.
pub const CONFIG_MAP: &str = "kueue-manager-config";
pub const CONFIG_KEY: &str = "controller_manager_config.yaml";
/// Kueue's manager Deployment.
pub const MANAGER: &str = "kueue-controller-manager";
/// Kueue's admission check controllers.
const PROVISIONING_CONTROLLER: &str = crate::api::checks::PROVISIONING_REQUEST_CONTROLLER;
const MULTIKUEUE_CONTROLLER: &str = crate::api::multikueue::MULTIKUEUE_CONTROLLER;

const DIFFERENCES: &str = "docs/differences.md";

/// What wasq makes of one thing of a Kueue installation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// wasq runs it as Kueue does.
    Same,
    /// wasq runs it, differently (the note says how, or where that is written).
    Different,
    /// wasq does not run it.
    Unsupported,
    /// Something to do before switching.
    Action,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Same => "same",
            Verdict::Different => "different",
            Verdict::Unsupported => "unsupported",
            Verdict::Action => "action",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub kind: String,
    /// `namespace/name`, `name`, or a field of the Configuration.
    pub name: String,
    pub verdict: Verdict,
    pub note: String,
}

fn finding(
    kind: &str,
    name: impl Into<String>,
    verdict: Verdict,
    note: impl Into<String>,
) -> Finding {
    Finding {
        kind: kind.to_string(),
        name: name.into(),
        verdict,
        note: note.into(),
    }
}

/// Everything `wasq migrate check` found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub findings: Vec<Finding>,
}

impl Report {
    /// How many findings have `verdict`.
    pub fn count(&self, verdict: Verdict) -> usize {
        self.findings
            .iter()
            .filter(|f| f.verdict == verdict)
            .count()
    }

    /// The findings as a table (kind, name, verdict, note), then the counts.
    pub fn to_table(&self) -> String {
        let width = |f: fn(&Finding) -> usize| self.findings.iter().map(f).max().unwrap_or(0);
        let kind = width(|f| f.kind.len()).max(4);
        let name = width(|f| f.name.len()).max(4);
        let mut out = format!(
            "{:kind$}  {:name$}  {:11}  NOTE\n",
            "KIND", "NAME", "VERDICT"
        );
        for f in &self.findings {
            out.push_str(&format!(
                "{:kind$}  {:name$}  {:11}  {}\n",
                f.kind,
                f.name,
                f.verdict.as_str(),
                f.note
            ));
        }
        out.push_str(&format!(
            "\n{} same, {} different, {} unsupported, {} to do before switching\n",
            self.count(Verdict::Same),
            self.count(Verdict::Different),
            self.count(Verdict::Unsupported),
            self.count(Verdict::Action)
        ));
        out
    }
}

/// Reads the Kueue installation `client` reaches (its manager in `namespace`).
pub async fn check(client: &kube::Client, namespace: &str) -> anyhow::Result<Report> {
    let mut report = Report::default();
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let configuration = match config_maps.get_opt(CONFIG_MAP).await {
        Ok(Some(cm)) => match cm.data.as_ref().and_then(|d| d.get(CONFIG_KEY)) {
            Some(text) => Some(
                serde_saphyr::from_str::<Value>(text)
                    .with_context(|| format!("reading {namespace}/{CONFIG_MAP} {CONFIG_KEY}"))?,
            ),
            None => None,
        },
        Ok(None) => None,
        Err(e) => {
            return Err(e).with_context(|| format!("reading ConfigMap {namespace}/{CONFIG_MAP}"));
        }
    };
    let name = format!("{namespace}/{CONFIG_MAP}");
    match &configuration {
        Some(c) => report.findings.extend(configuration_findings(&name, c)),
        None => report.findings.push(finding(
            "Configuration",
            name,
            Verdict::Same,
            "not found: Kueue's defaults, which wasq follows",
        )),
    }

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let manager = deployments
        .get_opt(MANAGER)
        .await
        .with_context(|| format!("reading Deployment {namespace}/{MANAGER}"))?;
    let mut gates = BTreeMap::new();
    if let Some(c) = &configuration {
        for (gate, on) in c["featureGates"].as_object().into_iter().flatten() {
            gates.insert(gate.clone(), on.as_bool().unwrap_or(false));
        }
    }
    if let Some(d) = &manager {
        gates.extend(deployment_gates(d));
        let ready = d
            .status
            .as_ref()
            .and_then(|s| s.ready_replicas)
            .unwrap_or(0);
        let wanted = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        if ready > 0 || wanted > 0 {
            report.findings.push(finding(
                "Deployment",
                format!("{namespace}/{MANAGER}"),
                Verdict::Action,
                format!(
                    "Kueue's controller runs ({ready} ready of {wanted}): scale it to 0 before \
                     starting wasq, or both admit"
                ),
            ));
        }
    }
    report.findings.extend(gate_findings(&gates));

    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    for (kind, name, present) in [
        (
            "MutatingWebhookConfiguration",
            "kueue-mutating-webhook-configuration",
            mutating
                .get_opt("kueue-mutating-webhook-configuration")
                .await?
                .is_some(),
        ),
        (
            "ValidatingWebhookConfiguration",
            "kueue-validating-webhook-configuration",
            validating
                .get_opt("kueue-validating-webhook-configuration")
                .await?
                .is_some(),
        ),
    ] {
        if present {
            report.findings.push(finding(
                kind,
                name,
                Verdict::Action,
                "Kueue's webhooks call Kueue's Service: with Kueue scaled to 0 they fail every \
                 job; delete them when wasq's are in place (and re-apply them to go back)",
            ));
        }
    }

    let snapshot = snapshot::take(client).await?;
    let objects: Vec<Value> = KueueKind::ALL
        .iter()
        .filter_map(|k| snapshot.files.get(&format!("{}.yaml", k.plural())))
        .flatten()
        .cloned()
        .collect();
    report.findings.extend(object_findings(&objects));
    Ok(report)
}

/// The feature gates of Kueue's manager: `--feature-gates=A=true,B=false` in its arguments.
fn deployment_gates(d: &Deployment) -> BTreeMap<String, bool> {
    let containers = d
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .map(|p| p.containers.as_slice())
        .unwrap_or_default();
    let mut gates = BTreeMap::new();
    let args = containers
        .iter()
        .flat_map(|c| c.command.iter().flatten().chain(c.args.iter().flatten()));
    for arg in args {
        if let Some(list) = arg.strip_prefix("--feature-gates=") {
            for pair in list.split(',') {
                if let Some((gate, value)) = pair.split_once('=') {
                    gates.insert(gate.trim().to_string(), value.trim() == "true");
                }
            }
        }
    }
    gates
}

/// Kueue's feature gates and their defaults at the version wasq follows
/// (`pkg/features/kube_features.go`), and the gates whose default wasq does not run.
mod gates {
    /// `(gate, default)`.
    pub const DEFAULTS: &[(&str, bool)] = &[
        ("AdmissionFairSharing", true),
        ("AdmissionGatedBy", true),
        ("AssignQueueLabelsForPods", true),
        ("CleanupProvisioningRequestsOnEviction", true),
        ("ConcurrentAdmission", false),
        ("DisableWaitForPodsReady", false),
        ("ElasticJobsViaWorkloadSlices", true),
        ("ElasticJobsViaWorkloadSlicesWithTAS", false),
        ("FailureRecoveryPolicy", false),
        ("FairSharingPreemptWithinNominal", true),
        ("FairSharingPrioritizeNonBorrowing", true),
        ("FinishOrphanedWorkloads", true),
        ("FlavorFungibility", true),
        ("FlavorFungibilityPreserveScanProgress", true),
        ("LocalQueueMetrics", true),
        ("ManagedJobsNamespaceSelectorAlwaysRespected", true),
        ("MultiKueue", true),
        ("PartialAdmission", true),
        ("PrioritizePreemptorWorkloads", false),
        ("PriorityBoost", false),
        ("PrioritySortingWithinCohort", true),
        ("ReclaimablePods", true),
        ("RecomputeAssignmentUponPreemptionTargetsOverlap", true),
        ("SchedulingEquivalenceHashing", true),
        ("ShortWorkloadNames", false),
        ("TASBalancedPlacement", false),
        ("TASFailedNodeReplacement", true),
        ("TASHandleOverlappingFlavors", true),
        ("TASMultiLayerTopology", true),
        ("TASProfileMixed", true),
        ("TASRecomputeAssignmentWithinSchedulingCycle", true),
        ("TopologyAwareScheduling", true),
        ("UnadmittedWorkloadsObservability", true),
        ("VisibilityOnDemand", true),
        ("WorkloadPriorityClassDefaulting", true),
    ];

    /// Gates on by default in Kueue whose behaviour wasq does not have (docs/differences.md).
    pub const NOT_MODELLED: &[&str] = &[
        "ElasticJobsViaWorkloadSlices",
        "FlavorFungibilityPreserveScanProgress",
        "MultiKueue",
        "SchedulingEquivalenceHashing",
    ];
}

/// The gates Kueue was started with, against what wasq runs.
fn gate_findings(set: &BTreeMap<String, bool>) -> Vec<Finding> {
    set.iter()
        .map(|(gate, &on)| {
            let default = gates::DEFAULTS
                .iter()
                .find(|(g, _)| g == gate)
                .map(|&(_, d)| d);
            let (verdict, note) = match default {
                _ if on && gates::NOT_MODELLED.contains(&gate.as_str()) => (
                    Verdict::Different,
                    format!("on in Kueue; wasq does not have this behaviour ({DIFFERENCES})"),
                ),
                Some(d) if d == on => (
                    Verdict::Same,
                    format!("{on}, Kueue's default, as wasq runs it"),
                ),
                Some(d) => (
                    Verdict::Different,
                    format!("{on} in Kueue; wasq always runs Kueue's default ({d})"),
                ),
                None => (
                    Verdict::Different,
                    format!(
                        "{on} in Kueue; wasq does not read feature gates and runs Kueue's defaults"
                    ),
                ),
            };
            finding("FeatureGate", gate.clone(), verdict, note)
        })
        .collect()
}

/// Kueue's `integrations.frameworks` names wasq manages, by its built-in job kinds (`group/kind`
/// in lower case, `batch/job`; the core group's `pod`) and the pod-owning kinds.
fn wasq_frameworks() -> Vec<String> {
    let mut names: Vec<String> = jobs::builtin()
        .iter()
        .map(|k| {
            let kind = k.spec.kind.to_lowercase();
            match k.group.as_str() {
                "" | "apps" => kind,
                group => format!("{group}/{kind}"),
            }
        })
        .collect();
    names.push("pod".into());
    names
}

/// The sections of Kueue's Configuration.
fn configuration_findings(name: &str, c: &Value) -> Vec<Finding> {
    let at = |field: &str| format!("{name} {field}");
    let mut out = Vec::new();
    for section in ["fairSharing", "admissionFairSharing", "waitForPodsReady"] {
        if c.get(section).is_some_and(|v| !v.is_null()) {
            out.push(finding(
                "Configuration",
                at(section),
                Verdict::Same,
                "applies with `wasq controller --kueue-config FILE` (this file)",
            ));
        }
    }
    let supported = wasq_frameworks();
    for framework in c["integrations"]["frameworks"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let framework = framework.as_str().unwrap_or_default();
        let (verdict, note) = if supported.iter().any(|s| s == framework) {
            (
                Verdict::Same,
                "managed by wasq (`--frameworks`)".to_string(),
            )
        } else {
            (
                Verdict::Unsupported,
                "not a kind wasq integrates: its jobs would run unmanaged (or add it with \
                 `--integrations`, docs/job-kinds.md)"
                    .to_string(),
            )
        };
        out.push(finding("Integration", framework, verdict, note));
    }
    if c["integrations"]["externalFrameworks"]
        .as_array()
        .is_some_and(|a| !a.is_empty())
    {
        out.push(finding(
            "Configuration",
            at("integrations.externalFrameworks"),
            Verdict::Different,
            "wasq's equivalent is `--integrations FILE` (docs/job-kinds.md)",
        ));
    }
    let unsupported = [
        (
            "manageJobsWithoutQueueName",
            "jobs without a queue name would run unmanaged",
        ),
        (
            "managedJobsNamespaceSelector",
            "wasq manages queued jobs in every namespace",
        ),
        ("multiKueue", "MultiKueue is not supported yet"),
        (
            "resources",
            "resource transformations and excluded prefixes: wasq counts every requested resource",
        ),
        (
            "objectRetentionPolicies",
            "finished Workloads are kept, not deleted",
        ),
    ];
    for (field, note) in unsupported {
        let set = match &c[field] {
            Value::Null | Value::Bool(false) => false,
            Value::Object(o) => !o.is_empty(),
            _ => true,
        };
        if set {
            out.push(finding(
                "Configuration",
                at(field),
                Verdict::Unsupported,
                note,
            ));
        }
    }
    let own_flags = [
        ("clientConnection", "`--kube-api-qps`, `--kube-api-burst`"),
        (
            "leaderElection",
            "`--lease-name`, `--lease-duration-seconds`, `--namespace`",
        ),
        (
            "internalCertManagement",
            "wasq manages its own certificate, or `--webhook-cert-dir`",
        ),
        ("webhook", "`--webhook-listen`, `--webhook-service`"),
        ("metrics", "`--listen` (/metrics)"),
        ("health", "`--listen` (/healthz, /readyz)"),
        (
            "controller",
            "none: one reconcile loop, no per-kind concurrency to set",
        ),
        (
            "tls",
            "none: wasq's webhook server takes TLS 1.2 and 1.3 with rustls' defaults",
        ),
    ];
    for (field, flags) in own_flags {
        if c.get(field).is_some_and(|v| !v.is_null()) {
            out.push(finding(
                "Configuration",
                at(field),
                Verdict::Different,
                format!("wasq's own flags: {flags} (docs/controller.md#flags)"),
            ));
        }
    }
    out
}

/// Every Kueue object: decoded as wasq's webhook and loader decode it; fields wasq does not
/// know (outside `status`); what wasq does with each kind; quota usage against what Kueue wrote.
fn object_findings(objects: &[Value]) -> Vec<Finding> {
    let schemas = Schemas::default();
    let mut out = Vec::new();
    let mut held: BTreeMap<(String, String, String), i64> = BTreeMap::new();
    let mut workloads: BTreeMap<String, BTreeMap<Standing, usize>> = BTreeMap::new();
    for object in objects {
        let kind_name = object["kind"].as_str().unwrap_or_default();
        let Some(kind) = KueueKind::ALL.into_iter().find(|k| k.kind() == kind_name) else {
            continue;
        };
        let meta = &object["metadata"];
        let name = match meta["namespace"].as_str() {
            Some(ns) => format!("{ns}/{}", meta["name"].as_str().unwrap_or_default()),
            None => meta["name"].as_str().unwrap_or_default().to_string(),
        };
        let unknown = unknown_fields(&schemas, kind, object);
        if !unknown.is_empty() {
            out.push(finding(
                kind_name,
                name,
                Verdict::Unsupported,
                format!("fields wasq does not know, ignored: {}", unknown.join(", ")),
            ));
            continue;
        }
        let decoded = match schemas.decode(Some(kind), object.clone(), "<api-server>") {
            Ok(decoded) => decoded,
            Err(e) => {
                let problems = jobs::problems_text(&e.problems);
                out.push(finding(kind_name, name, Verdict::Unsupported, problems));
                continue;
            }
        };
        let (verdict, note) = match kind {
            KueueKind::AdmissionCheck => match object["spec"]["controllerName"].as_str() {
                Some(MULTIKUEUE_CONTROLLER) => (
                    Verdict::Unsupported,
                    "MultiKueue is not supported yet: its Workloads stay pending".to_string(),
                ),
                Some(PROVISIONING_CONTROLLER) => (
                    Verdict::Same,
                    "wasq's ProvisioningRequest controller (docs/admission-checks.md)".to_string(),
                ),
                Some(other) => (
                    Verdict::Same,
                    format!("{other} sets its state, as with Kueue"),
                ),
                None => (Verdict::Same, String::new()),
            },
            KueueKind::MultiKueueCluster | KueueKind::MultiKueueConfig => (
                Verdict::Unsupported,
                "MultiKueue is not supported yet: wasq reads and validates it, nothing \
                 dispatches (docs/multikueue.md)"
                    .to_string(),
            ),
            KueueKind::Topology => (
                Verdict::Different,
                format!("topology-aware scheduling ({DIFFERENCES}#topology-aware-scheduling)"),
            ),
            KueueKind::ResourceFlavor if !object["spec"]["topologyName"].is_null() => (
                Verdict::Different,
                format!("a TAS flavor ({DIFFERENCES}#topology-aware-scheduling)"),
            ),
            KueueKind::Workload => {
                let Object::Workload(wl) = &decoded else {
                    continue;
                };
                let queue = format!(
                    "{}/{}",
                    meta["namespace"].as_str().unwrap_or_default(),
                    wl.spec.queue_name.as_deref().unwrap_or_default()
                );
                let standing = standing(wl, &mut held);
                *workloads
                    .entry(queue)
                    .or_default()
                    .entry(standing)
                    .or_default() += 1;
                continue;
            }
            _ => (Verdict::Same, String::new()),
        };
        out.push(finding(kind_name, name, verdict, note));
    }
    out.extend(workload_summaries(&workloads));
    out.extend(usage_findings(objects, &held));
    out
}

/// The fields of `object` outside `status` and `metadata` that wasq's schema of `kind` drops.
fn unknown_fields(schemas: &Schemas, kind: KueueKind, object: &Value) -> Vec<String> {
    let mut pruned = object.clone();
    if let Some(schema) = schemas.schema(kind) {
        crate::k8s::schema::prune::prune(&mut pruned, schema);
    }
    let mut out = Vec::new();
    for (key, value) in object.as_object().into_iter().flatten() {
        if key != "status" && key != "metadata" {
            dropped(key, value, &pruned[key], &mut out);
        }
    }
    out
}

/// The paths under `path` present in `sent` and missing from `kept`.
fn dropped(path: &str, sent: &Value, kept: &Value, out: &mut Vec<String>) {
    match (sent, kept) {
        (Value::Object(s), Value::Object(k)) => {
            for (key, value) in s {
                match k.get(key) {
                    Some(kept) => dropped(&format!("{path}.{key}"), value, kept, out),
                    None => out.push(format!("{path}.{key}")),
                }
            }
        }
        (Value::Array(s), Value::Array(k)) => {
            for (i, (sent, kept)) in s.iter().zip(k).enumerate() {
                dropped(&format!("{path}[{i}]"), sent, kept, out);
            }
        }
        (_, Value::Null) if !sent.is_null() => out.push(path.to_string()),
        _ => {}
    }
}

/// Where a Workload stands, as wasq takes it over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Standing {
    Admitted,
    Reserved,
    Pending,
    Finished,
}

/// Where `wl` stands; its quota, if it holds some, added to `held` by (ClusterQueue, flavor,
/// resource).
fn standing(wl: &Workload, held: &mut BTreeMap<(String, String, String), i64>) -> Standing {
    if is_finished(wl) {
        return Standing::Finished;
    }
    let admission = wl.status.as_ref().and_then(|s| s.admission.as_ref());
    let (Some(admission), true) = (admission, has_quota_reservation(wl)) else {
        return Standing::Pending;
    };
    for psa in &admission.pod_set_assignments {
        for (resource, amount) in &psa.resource_usage {
            let flavor = psa.flavors.get(resource).cloned().unwrap_or_default();
            *held
                .entry((admission.cluster_queue.clone(), flavor, resource.clone()))
                .or_default() += amount.milli();
        }
    }
    if is_admitted(wl) {
        Standing::Admitted
    } else {
        Standing::Reserved
    }
}

/// One line per LocalQueue for its Workloads that wasq takes over as they are.
fn workload_summaries(counts: &BTreeMap<String, BTreeMap<Standing, usize>>) -> Vec<Finding> {
    counts
        .iter()
        .map(|(queue, by)| {
            let n = |s: Standing| by.get(&s).copied().unwrap_or(0);
            let mut parts = Vec::new();
            if n(Standing::Admitted) + n(Standing::Reserved) > 0 {
                parts.push(format!(
                    "{} admitted and {} holding quota: kept, quota counted from status.admission",
                    n(Standing::Admitted),
                    n(Standing::Reserved)
                ));
            }
            if n(Standing::Pending) > 0 {
                parts.push(format!(
                    "{} pending: queued in Kueue's order",
                    n(Standing::Pending)
                ));
            }
            if n(Standing::Finished) > 0 {
                parts.push(format!("{} finished", n(Standing::Finished)));
            }
            finding("Workloads", queue.clone(), Verdict::Same, parts.join("; "))
        })
        .collect()
}

/// Each ClusterQueue's reservation as Kueue reported it (`status.flavorsReservation`) against
/// what its Workloads' admissions hold, which is what wasq starts from.
fn usage_findings(
    objects: &[Value],
    held: &BTreeMap<(String, String, String), i64>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for cq in objects.iter().filter(|o| o["kind"] == "ClusterQueue") {
        let name = cq["metadata"]["name"].as_str().unwrap_or_default();
        let mut reported: BTreeMap<(String, String), i64> = BTreeMap::new();
        for flavor in cq["status"]["flavorsReservation"]
            .as_array()
            .into_iter()
            .flatten()
        {
            for r in flavor["resources"].as_array().into_iter().flatten() {
                let total = r["total"].as_str().and_then(|t| t.parse::<Quantity>().ok());
                let key = (
                    flavor["name"].as_str().unwrap_or_default().to_string(),
                    r["name"].as_str().unwrap_or_default().to_string(),
                );
                reported.insert(key, total.map_or(0, Quantity::milli));
            }
        }
        let mine: BTreeMap<(String, String), i64> = held
            .iter()
            .filter(|((c, _, _), _)| c == name)
            .map(|((_, f, r), v)| ((f.clone(), r.clone()), *v))
            .collect();
        let mut keys: Vec<&(String, String)> = reported.keys().chain(mine.keys()).collect();
        keys.sort();
        keys.dedup();
        let differing: Vec<String> = keys
            .into_iter()
            .filter_map(|k| {
                let (r, m) = (
                    reported.get(k).copied().unwrap_or(0),
                    mine.get(k).copied().unwrap_or(0),
                );
                (r != m).then(|| {
                    format!(
                        "{}/{}: Kueue reports {}, admissions hold {}",
                        k.0,
                        k.1,
                        Quantity(r),
                        Quantity(m)
                    )
                })
            })
            .collect();
        if !differing.is_empty() && cq["status"].is_object() {
            out.push(finding(
                "ClusterQueue",
                name,
                Verdict::Different,
                format!(
                    "reservation {}; wasq starts from the admissions",
                    differing.join("; ")
                ),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests;
