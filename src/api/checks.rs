//! Admission checks as users write them (`kueue.x-k8s.io/v1beta2`, `apis/kueue/v1beta2/
//! admissioncheck_types.go`, `provisioningrequestconfig_types.go`): the `AdmissionCheck` a
//! ClusterQueue lists, and the `ProvisioningRequestConfig` that parameterises Kueue's built-in
//! ProvisioningRequest check. Defaults are applied by accessor methods.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::strict::FieldProblem;

/// The `controllerName` of Kueue's built-in ProvisioningRequest admission check.
pub const PROVISIONING_REQUEST_CONTROLLER: &str = "kueue.x-k8s.io/provisioning-request";
/// The kind of its parameters.
pub const PROVISIONING_REQUEST_CONFIG_KIND: &str = "ProvisioningRequestConfig";
/// The AdmissionCheck condition saying whether its controller can serve it.
pub const ADMISSION_CHECK_ACTIVE: &str = "Active";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmissionCheck {
    pub metadata: ObjectMeta,
    pub spec: AdmissionCheckSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<AdmissionCheckStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmissionCheckSpec {
    /// The controller that evaluates the check (`kueue.x-k8s.io/provisioning-request` for
    /// Kueue's ProvisioningRequest check).
    pub controller_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<AdmissionCheckParametersReference>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmissionCheckParametersReference {
    #[serde(default, rename = "apiGroup", skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmissionCheckStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProvisioningRequestConfig {
    pub metadata: ObjectMeta,
    pub spec: ProvisioningRequestConfigSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProvisioningRequestConfigSpec {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provisioning_class_name: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
    /// Resources that make a podSet part of the request; empty: every podSet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub managed_resources: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_strategy: Option<RetryStrategy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_set_updates: Option<ProvisioningRequestPodSetUpdates>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_set_merge_policy: Option<PodSetMergePolicy>,
}

/// How a failed ProvisioningRequest is retried (Kueue's defaults: 3 retries, 60 s base,
/// 1,800 s cap).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetryStrategy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_limit_count: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_base_seconds: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_max_seconds: Option<i32>,
}

pub const DEFAULT_BACKOFF_LIMIT_COUNT: i32 = 3;
pub const DEFAULT_BACKOFF_BASE_SECONDS: i32 = 60;
pub const DEFAULT_BACKOFF_MAX_SECONDS: i32 = 1800;

impl RetryStrategy {
    pub fn backoff_limit_count(&self) -> i32 {
        self.backoff_limit_count
            .unwrap_or(DEFAULT_BACKOFF_LIMIT_COUNT)
    }

    pub fn backoff_base_seconds(&self) -> i32 {
        self.backoff_base_seconds
            .unwrap_or(DEFAULT_BACKOFF_BASE_SECONDS)
    }

    pub fn backoff_max_seconds(&self) -> i32 {
        self.backoff_max_seconds
            .unwrap_or(DEFAULT_BACKOFF_MAX_SECONDS)
    }
}

impl ProvisioningRequestConfigSpec {
    /// The retry strategy with Kueue's defaults for what is not set.
    pub fn retry_strategy(&self) -> RetryStrategy {
        let r = self.retry_strategy.clone().unwrap_or_default();
        RetryStrategy {
            backoff_limit_count: Some(r.backoff_limit_count()),
            backoff_base_seconds: Some(r.backoff_base_seconds()),
            backoff_max_seconds: Some(r.backoff_max_seconds()),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProvisioningRequestPodSetUpdates {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_selector: Vec<PodSetUpdateNodeSelector>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodSetUpdateNodeSelector {
    pub key: String,
    pub value_from_provisioning_class_detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PodSetMergePolicy {
    IdenticalPodTemplates,
    IdenticalWorkloadSchedulingRequirements,
}

/// A ClusterQueue's `admissionChecksStrategy`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmissionChecksStrategy {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub admission_checks: Vec<AdmissionCheckStrategyRule>,
}

/// One check of a ClusterQueue; with `onFlavors`, it applies only to workloads assigned one
/// of those flavors.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmissionCheckStrategyRule {
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub on_flavors: Vec<String>,
}

/// Problems Kueue's webhooks and CRD schema refuse in an AdmissionCheck.
pub fn validate_admission_check(ac: &AdmissionCheck) -> Vec<FieldProblem> {
    let mut out = Vec::new();
    if ac.spec.controller_name.is_empty() {
        out.push(FieldProblem::at("spec.controllerName", "Required value"));
    }
    if let Some(p) = &ac.spec.parameters {
        for (field, value) in [
            ("apiGroup", &p.api_group),
            ("kind", &p.kind),
            ("name", &p.name),
        ] {
            if value.is_empty() {
                out.push(FieldProblem::at(
                    format!("spec.parameters.{field}"),
                    "Required value",
                ));
            }
        }
    }
    out
}

/// Problems Kueue's CRD schema refuses in a ProvisioningRequestConfig.
pub fn validate_provisioning_request_config(c: &ProvisioningRequestConfig) -> Vec<FieldProblem> {
    let mut out = Vec::new();
    if c.spec.provisioning_class_name.is_empty() {
        out.push(FieldProblem::at(
            "spec.provisioningClassName",
            "Required value",
        ));
    }
    if let Some(r) = &c.spec.retry_strategy {
        for (field, value) in [
            ("backoffLimitCount", r.backoff_limit_count),
            ("backoffBaseSeconds", r.backoff_base_seconds),
            ("backoffMaxSeconds", r.backoff_max_seconds),
        ] {
            if let Some(v) = value
                && v < 0
            {
                out.push(FieldProblem::at(
                    format!("spec.retryStrategy.{field}"),
                    format!("Invalid value: {v}: must be greater than or equal to 0"),
                ));
            }
        }
    }
    for (i, ns) in c
        .spec
        .pod_set_updates
        .iter()
        .flat_map(|u| &u.node_selector)
        .enumerate()
    {
        if ns.key.is_empty() || ns.value_from_provisioning_class_detail.is_empty() {
            out.push(FieldProblem::at(
                format!("spec.podSetUpdates.nodeSelector[{i}]"),
                "key and valueFromProvisioningClassDetail are required",
            ));
        }
    }
    out
}

/// Problems in a ClusterQueue's `admissionChecksStrategy`: a check named twice, or `onFlavors`
/// naming a flavor that is not among `flavors`, the ClusterQueue's (Kueue's webhook).
pub fn validate_strategy(
    strategy: &AdmissionChecksStrategy,
    field: &str,
    flavors: &[&str],
) -> Vec<FieldProblem> {
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (i, rule) in strategy.admission_checks.iter().enumerate() {
        if !seen.insert(rule.name.as_str()) {
            out.push(FieldProblem::at(
                format!("{field}.admissionChecks[{i}].name"),
                format!("Duplicate value: {:?}", rule.name),
            ));
        }
        for (j, f) in rule.on_flavors.iter().enumerate() {
            if !flavors.contains(&f.as_str()) {
                let supported: Vec<String> = flavors.iter().map(|f| format!("{f:?}")).collect();
                out.push(FieldProblem::at(
                    format!("{field}.admissionChecks[{i}].onFlavors[{j}]"),
                    format!(
                        "Unsupported value: {f:?}: supported values: {}",
                        supported.join(", ")
                    ),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::strict::decode;
    use serde_json::json;

    #[test]
    fn retry_strategy_defaults_are_kueues() {
        let c: ProvisioningRequestConfig = decode(&json!({
            "metadata": {"name": "prov"},
            "spec": {"provisioningClassName": "queued-provisioning.gke.io",
                     "retryStrategy": {"backoffLimitCount": 2}}
        }))
        .unwrap();
        assert_eq!(
            c.spec.retry_strategy(),
            RetryStrategy {
                backoff_limit_count: Some(2),
                backoff_base_seconds: Some(60),
                backoff_max_seconds: Some(1800),
            }
        );
    }

    #[test]
    fn bad_configurations_name_their_fields() {
        let c: ProvisioningRequestConfig = decode(&json!({
            "metadata": {"name": "prov"},
            "spec": {"provisioningClassName": "x", "retryStrategy": {"backoffBaseSeconds": -5}}
        }))
        .unwrap();
        assert_eq!(
            validate_provisioning_request_config(&c),
            [FieldProblem::at(
                "spec.retryStrategy.backoffBaseSeconds",
                "Invalid value: -5: must be greater than or equal to 0"
            )]
        );
        let s = AdmissionChecksStrategy {
            admission_checks: vec![
                AdmissionCheckStrategyRule {
                    name: "prov".into(),
                    on_flavors: vec![],
                },
                AdmissionCheckStrategyRule {
                    name: "prov".into(),
                    on_flavors: vec!["gpu".into()],
                },
            ],
        };
        assert_eq!(
            validate_strategy(&s, "spec.admissionChecksStrategy", &["cpu", "gpu"]),
            [FieldProblem::at(
                "spec.admissionChecksStrategy.admissionChecks[1].name",
                r#"Duplicate value: "prov""#
            )]
        );
        assert_eq!(
            validate_strategy(&s, "spec.admissionChecksStrategy", &["cpu"])[1],
            FieldProblem::at(
                "spec.admissionChecksStrategy.admissionChecks[1].onFlavors[0]",
                r#"Unsupported value: "gpu": supported values: "cpu""#
            )
        );
    }
}
