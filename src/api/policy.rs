//! wasq's own API for policies (`policies.wasq.dev/v1alpha1`): the cluster-scoped
//! `QueuePolicy`, which binds a WebAssembly module to one extension point, for every
//! ClusterQueue or those a label selector picks, either deciding (`Enforce`) or asked the same
//! questions and never acted on (`Shadow`).
//!
//! ```yaml
//! apiVersion: policies.wasq.dev/v1alpha1
//! kind: QueuePolicy
//! metadata: {name: fair-share-v2}
//! spec:
//!   extension: Preemption            # Ordering | Preemption | FlavorAssignment | Placement | Dispatch
//!   mode: Shadow                     # Enforce (default) | Shadow
//!   module:                          # exactly one source
//!     configMap: {name: fair-share, key: fair-share.wasm}
//!     # path: /etc/wasq/policies/fair-share.wasm
//!     # oci: {reference: "oci://ghcr.io/acme/fair-share:1.2", pullSecrets: [{name: regcred}]}
//!   digest: "sha256:…"               # optional: the module's sha256; any other is refused
//!   settings: {min-runtime: 10m}
//!   limits: {memoryBytes: 67108864, deadlineMs: 20}
//!   clusterQueueSelector: {matchLabels: {team: ml}}   # absent: every ClusterQueue
//! ```
//!
//! The simulator reads the same objects from a scenario (module by `path`, relative to the
//! scenario file); the controller watches them and writes their status.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Condition;
use super::names;
use super::strict::FieldProblem;
use super::validate::{Problems, Scope, label_selector, metadata};

/// The group of wasq's policy objects.
pub const POLICY_GROUP: &str = "policies.wasq.dev";
/// Its version.
pub const POLICY_VERSION: &str = "v1alpha1";
/// `group/version`, as `apiVersion` says it.
pub const POLICY_API_VERSION: &str = "policies.wasq.dev/v1alpha1";
pub const QUEUE_POLICY_KIND: &str = "QueuePolicy";

/// Status condition: the module was fetched, verified and compiled (the last good one stays
/// live when a newer one is refused).
pub const LOADED: &str = "Loaded";
/// Status condition: the policy decides (or shadows) for its ClusterQueues.
pub const READY: &str = "Ready";

/// A policy module bound to an extension point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QueuePolicy {
    pub metadata: ObjectMeta,
    pub spec: QueuePolicySpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<QueuePolicyStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QueuePolicySpec {
    /// The decision the module makes.
    pub extension: ExtensionPoint,
    /// `Enforce`: the module decides. `Shadow`: it is asked the same questions as the policy
    /// that decides, its answers verified and compared, never acted on.
    #[serde(default)]
    pub mode: PolicyMode,
    /// Where the module (a WebAssembly component) comes from.
    pub module: ModuleSource,
    /// The module's sha256 (`sha256:` and 64 hex digits). A module with another digest is
    /// refused (condition `Loaded` false, reason `DigestMismatch`); the last good one stays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Settings passed to the module in its catalog (what `pluginSettings` gives a plugin of
    /// the plugin directory).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, String>,
    /// Limits over the module language's defaults (the fields of `limits` in wasq's policy
    /// configuration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<PolicyLimits>,
    /// The ClusterQueues the policy applies to, by their labels; absent: every ClusterQueue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_queue_selector: Option<LabelSelector>,
}

/// One of the four decisions a policy can make.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
pub enum ExtensionPoint {
    /// Admission ordering.
    #[default]
    Ordering,
    /// Preemption victims.
    Preemption,
    /// Flavor assignment.
    FlavorAssignment,
    /// Topology-aware placement.
    Placement,
    /// MultiKueue dispatch (which worker clusters get a copy); `Enforce` only.
    Dispatch,
}

impl ExtensionPoint {
    /// The name the command line and the annotations use (`flavor-assignment`).
    pub fn flag_name(self) -> &'static str {
        match self {
            ExtensionPoint::Ordering => "ordering",
            ExtensionPoint::Preemption => "preemption",
            ExtensionPoint::FlavorAssignment => "flavor-assignment",
            ExtensionPoint::Placement => "placement",
            ExtensionPoint::Dispatch => "dispatch",
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum PolicyMode {
    #[default]
    Enforce,
    Shadow,
}

/// Exactly one of the sources.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModuleSource {
    /// A key of a ConfigMap (`binaryData`, or `data` base64-free text is refused): at most
    /// 1 MiB, as every ConfigMap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<ConfigMapModule>,
    /// A file in a volume mounted into the controller (in the simulator: relative to the
    /// scenario file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// An OCI artifact (the CNCF WebAssembly artifact layout: one `application/wasm` layer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci: Option<OciModule>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigMapModule {
    /// Default: the namespace the controller runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    pub key: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OciModule {
    /// `oci://registry/repository:tag` or `oci://registry/repository@sha256:…`.
    pub reference: String,
    /// `kubernetes.io/dockerconfigjson` Secrets in the controller's namespace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pull_secrets: Vec<SecretName>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretName {
    pub name: String,
}

/// Limits of one policy; each field given replaces the default of the module's language.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyLimits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_per_item_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycle_budget_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuel: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quarantine_after: Option<u32>,
}

/// What the controller reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QueuePolicyStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The sha256 of the module live now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Since when that module is live (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_since: Option<String>,
    /// How many ClusterQueues it decides (or shadows) for.
    #[serde(default)]
    pub cluster_queues: u32,
    /// Calls of the live module, since it went live in this controller.
    #[serde(default)]
    pub calls: u64,
    /// Calls whose decision the built-in made instead, by reason (`trap`, `timeout`,
    /// `invalid`, `budget`, `quarantined`, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fallbacks: BTreeMap<String, u64>,
    /// Victims it chose beyond what the built-in would have evicted (preemption).
    #[serde(default)]
    pub extra_victims: u64,
    /// A shadow policy's agreement with the policy that decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadow: Option<ShadowStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShadowStatus {
    pub decisions: u64,
    pub agree: u64,
    pub differ: u64,
    pub invalid: u64,
    pub fallback: u64,
    /// Decisions not asked for because the cycle's shadow budget was spent.
    #[serde(default)]
    pub skipped: u64,
    /// `agree / decisions` as a percentage with one decimal (`99.5%`; skipped decisions are
    /// not among the decisions).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub agreement: String,
    /// The latest differing decisions, newest last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recent_differences: Vec<ShadowDifference>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShadowDifference {
    /// When (RFC 3339), in a controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// `namespace/name`.
    pub workload: String,
    pub enforced: String,
    pub shadow: String,
}

/// A QueuePolicy as the API server holds it (`apiVersion` and `kind` included), read strictly:
/// every unknown field and value named with its path.
pub fn from_object(object: &serde_json::Value) -> Result<QueuePolicy, Vec<FieldProblem>> {
    let mut object = object.clone();
    if let Some(map) = object.as_object_mut() {
        map.remove("apiVersion");
        map.remove("kind");
    }
    super::strict::decode(&object)
}

/// `sha256:` and 64 lowercase hex digits.
pub fn is_sha256_digest(s: &str) -> bool {
    s.strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// What wasq's webhook refuses in a QueuePolicy (the simulator refuses the same at load).
pub fn validate(policy: &QueuePolicy) -> Vec<FieldProblem> {
    let mut p = Problems::default();
    metadata(&mut p, &policy.metadata, Scope::Cluster);
    let spec = &policy.spec;
    if spec.extension == ExtensionPoint::Dispatch && spec.mode == PolicyMode::Shadow {
        p.add(
            "spec.mode",
            "Dispatch cannot be shadowed: a dispatcher's answer makes copies on workers",
        );
    }
    let m = &spec.module;
    let given = [m.config_map.is_some(), m.path.is_some(), m.oci.is_some()]
        .into_iter()
        .filter(|g| *g)
        .count();
    if given != 1 {
        p.add(
            "spec.module",
            format!("exactly one of configMap, path and oci must be given ({given} are)"),
        );
    }
    if let Some(cm) = &m.config_map {
        p.check("spec.module.configMap.name", &cm.name, names::dns_subdomain);
        if let Some(ns) = &cm.namespace {
            p.check("spec.module.configMap.namespace", ns, names::dns_label);
        }
        if cm.key.is_empty()
            || !cm
                .key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        {
            p.add(
                "spec.module.configMap.key",
                "a ConfigMap key: letters, digits, '-', '_' or '.'",
            );
        }
    }
    if let Some(path) = &m.path
        && path.trim().is_empty()
    {
        p.add("spec.module.path", "must not be empty");
    }
    if let Some(oci) = &m.oci {
        match oci.reference.strip_prefix("oci://") {
            None => p.add(
                "spec.module.oci.reference",
                format!(
                    "{:?} must start with oci:// (oci://registry/repository:tag or @sha256:…)",
                    oci.reference
                ),
            ),
            Some(rest) if !rest.contains('/') => p.add(
                "spec.module.oci.reference",
                format!("{:?} names no repository", oci.reference),
            ),
            Some(rest) => {
                if let Some((_, digest)) = rest.split_once('@')
                    && !is_sha256_digest(digest)
                {
                    p.add(
                        "spec.module.oci.reference",
                        format!("{digest:?} is not sha256: and 64 hex digits"),
                    );
                }
            }
        }
        for (i, s) in oci.pull_secrets.iter().enumerate() {
            p.check(
                &format!("spec.module.oci.pullSecrets[{i}].name"),
                &s.name,
                names::dns_subdomain,
            );
        }
    }
    if let Some(d) = &spec.digest
        && !is_sha256_digest(d)
    {
        p.add(
            "spec.digest",
            format!("{d:?} is not sha256: and 64 lowercase hex digits"),
        );
    }
    if let Some(l) = &spec.limits {
        for (field, value) in [
            ("memoryBytes", l.memory_bytes),
            ("deadlineMs", l.deadline_ms),
            ("cycleBudgetMs", l.cycle_budget_ms),
            ("fuel", l.fuel),
        ] {
            if value == Some(0) {
                p.add(format!("spec.limits.{field}"), "must be greater than 0");
            }
        }
        if l.quarantine_after == Some(0) {
            p.add("spec.limits.quarantineAfter", "must be greater than 0");
        }
    }
    if let Some(s) = &spec.cluster_queue_selector {
        label_selector(&mut p, "spec.clusterQueueSelector", s);
    }
    p.into_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(yaml: &str) -> QueuePolicy {
        serde_saphyr::from_str(yaml).expect("a QueuePolicy")
    }

    #[test]
    fn a_policy_as_documented_is_valid_and_defaults_to_enforce() {
        let p = policy(
            "metadata: {name: fair-share}\nspec:\n  extension: Preemption\n  module:\n    configMap: {name: fair-share, key: fair-share.wasm}\n  clusterQueueSelector: {matchLabels: {team: ml}}\n",
        );
        assert_eq!(p.spec.mode, PolicyMode::Enforce);
        assert_eq!(p.spec.extension, ExtensionPoint::Preemption);
        assert!(validate(&p).is_empty(), "{:?}", validate(&p));
    }

    #[test]
    fn problems_name_their_fields() {
        let p = policy(
            "metadata: {name: Bad_Name}\nspec:\n  extension: Ordering\n  module:\n    path: /x.wasm\n    oci: {reference: 'ghcr.io/a/b:1'}\n  digest: sha256:abc\n  limits: {deadlineMs: 0}\n  clusterQueueSelector: {matchExpressions: [{key: team, operator: In}]}\n",
        );
        let fields: Vec<String> = validate(&p).into_iter().filter_map(|p| p.field).collect();
        for f in [
            "metadata.name",
            "spec.module",
            "spec.module.oci.reference",
            "spec.digest",
            "spec.limits.deadlineMs",
            "spec.clusterQueueSelector.matchExpressions[0].values",
        ] {
            assert!(fields.iter().any(|x| x == f), "{f} missing from {fields:?}");
        }
    }

    #[test]
    fn unknown_extension_and_mode_are_refused_when_read() {
        let err = serde_saphyr::from_str::<QueuePolicy>(
            "metadata: {name: a}\nspec: {extension: preemption, module: {path: /a.wasm}}\n",
        )
        .unwrap_err();
        assert!(err.to_string().contains("preemption"), "{err}");
        assert!(
            serde_saphyr::from_str::<QueuePolicy>(
                "metadata: {name: a}\nspec: {extension: Ordering, mode: Audit, module: {path: /a.wasm}}\n",
            )
            .is_err()
        );
    }

    #[test]
    fn digests_are_full_sha256() {
        assert!(is_sha256_digest(&format!("sha256:{}", "ab".repeat(32))));
        assert!(!is_sha256_digest(&format!("sha256:{}", "AB".repeat(32))));
        assert!(!is_sha256_digest("sha256:0123456789abcdef"));
    }
}
