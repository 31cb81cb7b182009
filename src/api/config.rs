//! Kueue's controller configuration (`config.kueue.x-k8s.io/v1beta2` `Configuration`), the part
//! that changes scheduling: `fairSharing`, `admissionFairSharing` and `waitForPodsReady`. In `wasq simulate` it is a
//! document among the manifests; `wasq controller` reads it with `--kueue-config`.
//!
//! ```yaml
//! apiVersion: config.kueue.x-k8s.io/v1beta2
//! kind: Configuration
//! fairSharing:
//!   preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]
//! admissionFairSharing:
//!   usageHalfLifeTime: 168h
//!   usageSamplingInterval: 5m
//!   resourceWeights: {cpu: 1, nvidia.com/gpu: 10}
//! ```
//!
//! Other fields of Kueue's Configuration (namespace, integrations, …) are accepted and ignored,
//! so a real Kueue configuration file can be used as it is.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::strict::FieldProblem;

/// The Configuration's API group and version.
pub const CONFIG_API_VERSION: &str = "config.kueue.x-k8s.io/v1beta2";

/// The scheduling part of Kueue's `Configuration`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Configuration {
    /// Present = fair sharing is on (Kueue: "presence enables").
    #[serde(default)]
    pub fair_sharing: Option<FairSharingConfig>,
    #[serde(default)]
    pub admission_fair_sharing: Option<AdmissionFairSharingConfig>,
    /// Absent = Kueue v1beta2's default: on, 30 minutes (see [`WaitForPodsReadyConfig`]).
    #[serde(default)]
    pub wait_for_pods_ready: Option<WaitForPodsReadyConfig>,
    /// Everything else Kueue's Configuration holds; wasq does not use it.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// `fairSharing`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FairSharingConfig {
    /// Empty = Kueue's default `[LessThanOrEqualToFinalShare, LessThanInitialShare]`.
    #[serde(default)]
    pub preemption_strategies: Vec<PreemptionStrategy>,
    /// Deprecated in Kueue (presence of the section enables fair sharing); `false` disables it.
    #[serde(default)]
    pub enable: Option<bool>,
}

/// A fair-sharing preemption strategy (Kueue's rules S2-a and S2-b).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
pub enum PreemptionStrategy {
    /// S2-a: preempt if the preemptor's share after admission ≤ the target's share after the
    /// victim leaves.
    LessThanOrEqualToFinalShare,
    /// S2-b: preempt if the preemptor's share after admission < the target's share before.
    LessThanInitialShare,
}

impl FairSharingConfig {
    /// The strategies in effect, Kueue's default applied.
    pub fn strategies(&self) -> Vec<PreemptionStrategy> {
        if self.preemption_strategies.is_empty() {
            vec![
                PreemptionStrategy::LessThanOrEqualToFinalShare,
                PreemptionStrategy::LessThanInitialShare,
            ]
        } else {
            self.preemption_strategies.clone()
        }
    }
}

/// `admissionFairSharing`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmissionFairSharingConfig {
    /// Half-life of consumed usage (Go duration, e.g. `168h`); 0 resets usage at every sample.
    #[serde(default)]
    pub usage_half_life_time: Option<String>,
    /// How often usage is sampled and decayed (default `5m`).
    #[serde(default)]
    pub usage_sampling_interval: Option<String>,
    /// Weight per resource name (default 1 for every resource).
    #[serde(default)]
    pub resource_weights: BTreeMap<String, f64>,
}

/// `waitForPodsReady`: an admitted workload whose pods are not all ready within `timeout` is
/// evicted (`PodsReadyTimeout`) and queued again after a backoff; past
/// `requeuingStrategy.backoffLimitCount` requeues it is deactivated. Kueue v1beta2 turns it
/// on by default (30 minutes); `enable: false` (Kueue v1beta1's switch) turns it off.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitForPodsReadyConfig {
    #[serde(default)]
    pub enable: Option<bool>,
    /// Go duration; default `30m`.
    #[serde(default)]
    pub timeout: Option<String>,
    /// Hold further admissions while an admitted workload is not ready (default false).
    #[serde(default)]
    pub block_admission: Option<bool>,
    /// Default: the timeout.
    #[serde(default)]
    pub recovery_timeout: Option<String>,
    #[serde(default)]
    pub requeuing_strategy: Option<RequeuingStrategy>,
}

/// `waitForPodsReady.requeuingStrategy`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequeuingStrategy {
    /// `Eviction` (default): a requeued workload is ordered by its eviction time; `Creation`:
    /// by its creation time.
    #[serde(default)]
    pub timestamp: Option<RequeuingTimestamp>,
    /// Requeues before deactivation; unset = no limit.
    #[serde(default)]
    pub backoff_limit_count: Option<i32>,
    /// Default 60.
    #[serde(default)]
    pub backoff_base_seconds: Option<i32>,
    /// Default 3600.
    #[serde(default)]
    pub backoff_max_seconds: Option<i32>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum RequeuingTimestamp {
    #[default]
    Eviction,
    Creation,
}

/// Kueue's default PodsReady timeout: 30 minutes.
pub const DEFAULT_PODS_READY_TIMEOUT_MS: i64 = 30 * 60 * 1000;

/// Kueue's default sampling interval: 5 minutes.
pub const DEFAULT_SAMPLING_INTERVAL_MS: i64 = 5 * 60 * 1000;

impl AdmissionFairSharingConfig {
    /// The half-life in milliseconds (0 when unset, as Kueue's zero value).
    pub fn half_life_ms(&self) -> i64 {
        self.usage_half_life_time
            .as_deref()
            .and_then(|d| super::duration::parse_millis(d).ok())
            .unwrap_or(0)
    }

    /// The sampling interval in milliseconds.
    pub fn sampling_ms(&self) -> i64 {
        self.usage_sampling_interval
            .as_deref()
            .and_then(|d| super::duration::parse_millis(d).ok())
            .filter(|&ms| ms > 0)
            .unwrap_or(DEFAULT_SAMPLING_INTERVAL_MS)
    }
}

/// Kueue's validation of the scheduling part, with field paths.
pub fn validate(c: &Configuration) -> Vec<FieldProblem> {
    let mut problems = Vec::new();
    if let Some(fs) = &c.fair_sharing {
        use PreemptionStrategy::*;
        let ok = matches!(
            fs.preemption_strategies.as_slice(),
            [] | [LessThanOrEqualToFinalShare]
                | [LessThanInitialShare]
                | [LessThanOrEqualToFinalShare, LessThanInitialShare]
        );
        if !ok {
            problems.push(FieldProblem::at(
                "fairSharing.preemptionStrategies",
                "must be one of [LessThanOrEqualToFinalShare], [LessThanInitialShare] or \
                 [LessThanOrEqualToFinalShare, LessThanInitialShare]",
            ));
        }
    }
    if let Some(w) = &c.wait_for_pods_ready {
        for (field, value) in [
            ("timeout", &w.timeout),
            ("recoveryTimeout", &w.recovery_timeout),
        ] {
            if let Some(v) = value {
                match super::duration::parse_millis(v) {
                    Err(e) => {
                        problems.push(FieldProblem::at(format!("waitForPodsReady.{field}"), e))
                    }
                    Ok(ms) if field == "timeout" && ms <= 0 => problems.push(FieldProblem::at(
                        "waitForPodsReady.timeout",
                        "must be greater than 0",
                    )),
                    Ok(_) => {}
                }
            }
        }
        if let Some(r) = &w.requeuing_strategy {
            for (field, value) in [
                ("backoffLimitCount", r.backoff_limit_count),
                ("backoffBaseSeconds", r.backoff_base_seconds),
                ("backoffMaxSeconds", r.backoff_max_seconds),
            ] {
                if value.is_some_and(|v| v < 0) {
                    problems.push(FieldProblem::at(
                        format!("waitForPodsReady.requeuingStrategy.{field}"),
                        "must be greater than or equal to 0",
                    ));
                }
            }
        }
    }
    if let Some(afs) = &c.admission_fair_sharing {
        for (field, value) in [
            ("usageHalfLifeTime", &afs.usage_half_life_time),
            ("usageSamplingInterval", &afs.usage_sampling_interval),
        ] {
            if let Some(v) = value
                && let Err(e) = super::duration::parse_millis(v)
            {
                problems.push(FieldProblem::at(format!("admissionFairSharing.{field}"), e));
            }
        }
        for (r, w) in &afs.resource_weights {
            if !(w.is_finite() && *w >= 0.0) {
                problems.push(FieldProblem::at(
                    format!("admissionFairSharing.resourceWeights.{r}"),
                    "must be a non-negative number",
                ));
            }
        }
    }
    problems
}

/// Reads a Kueue configuration file; errors name the file and the field.
pub fn load_file(path: &std::path::Path) -> anyhow::Result<Configuration> {
    use anyhow::Context;
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading Kueue configuration {}", path.display()))?;
    let value: serde_json::Value =
        serde_saphyr::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let problems = |p: Vec<FieldProblem>| {
        let text: Vec<String> = p
            .iter()
            .map(|p| {
                format!(
                    "field `{}`: {}",
                    p.field.as_deref().unwrap_or("-"),
                    p.message
                )
            })
            .collect();
        anyhow::anyhow!("{}: Configuration: {}", path.display(), text.join("; "))
    };
    let c: Configuration = super::strict::decode(&value).map_err(problems)?;
    let invalid = validate(&c);
    if !invalid.is_empty() {
        return Err(problems(invalid));
    }
    Ok(c)
}

impl Configuration {
    /// Whether fair sharing is on.
    pub fn fair_sharing_enabled(&self) -> bool {
        self.fair_sharing
            .as_ref()
            .is_some_and(|fs| fs.enable != Some(false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Configuration {
        let v: serde_json::Value = serde_saphyr::from_str(yaml).unwrap();
        super::super::strict::decode(&v).unwrap()
    }

    #[test]
    fn presence_enables_fair_sharing_with_default_strategies() {
        let c = parse("fairSharing: {}\nnamespace: kueue-system\n");
        assert!(c.fair_sharing_enabled());
        assert_eq!(
            c.fair_sharing.unwrap().strategies(),
            vec![
                PreemptionStrategy::LessThanOrEqualToFinalShare,
                PreemptionStrategy::LessThanInitialShare
            ]
        );
        assert!(!parse("namespace: x\n").fair_sharing_enabled());
    }

    #[test]
    fn rejects_a_strategy_order_kueue_rejects() {
        let c = parse(
            "fairSharing: {preemptionStrategies: [LessThanInitialShare, LessThanOrEqualToFinalShare]}\n",
        );
        let problems = validate(&c);
        assert_eq!(problems.len(), 1);
        assert_eq!(
            problems[0].field.as_deref(),
            Some("fairSharing.preemptionStrategies")
        );
    }

    #[test]
    fn a_kueue_configuration_file_loads_and_errors_name_file_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("controller_manager_config.yaml");
        std::fs::write(
            &good,
            "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nnamespace: kueue-system\n\
             fairSharing:\n  preemptionStrategies: [LessThanInitialShare]\n",
        )
        .unwrap();
        let c = load_file(&good).unwrap();
        assert_eq!(
            c.fair_sharing.unwrap().strategies(),
            vec![PreemptionStrategy::LessThanInitialShare]
        );
        let bad = dir.path().join("bad.yaml");
        std::fs::write(&bad, "fairSharing:\n  preemptionStrategy: []\n").unwrap();
        let e = load_file(&bad).unwrap_err().to_string();
        assert!(e.contains("bad.yaml"), "{e}");
        assert!(e.contains("fairSharing"), "{e}");
        assert!(e.contains("preemptionStrategy"), "{e}");
    }

    #[test]
    fn admission_fair_sharing_durations() {
        let c = parse(
            "admissionFairSharing: {usageHalfLifeTime: 1h, usageSamplingInterval: 30s, resourceWeights: {cpu: 2}}\n",
        );
        let afs = c.admission_fair_sharing.unwrap();
        assert_eq!(afs.half_life_ms(), 3_600_000);
        assert_eq!(afs.sampling_ms(), 30_000);
        let bad = parse("admissionFairSharing: {usageHalfLifeTime: soon}\n");
        assert_eq!(
            validate(&bad)[0].field.as_deref(),
            Some("admissionFairSharing.usageHalfLifeTime")
        );
    }
}
