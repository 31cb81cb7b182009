//! Kueue's controller configuration (`config.kueue.x-k8s.io/v1beta2` `Configuration`), the part
//! that changes scheduling: `fairSharing`, `admissionFairSharing` and `waitForPodsReady`, and
//! MultiKueue's section (`multiKueue`, read and validated; nothing dispatches yet). In `wasq
//! simulate` it is a document among the manifests; `wasq controller` reads it with
//! `--kueue-config`.
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
    /// MultiKueue's settings; absent = Kueue's defaults ([`Configuration::multi_kueue`]).
    #[serde(default)]
    pub multi_kueue: Option<MultiKueueSettings>,
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

/// `multiKueue` (Kueue's `MultiKueue`, `apis/config/v1beta2/configuration_types.go`). Durations
/// are Go durations as written; the accessors apply Kueue's defaults (`defaults.go`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MultiKueueSettings {
    /// Between two garbage collections of orphaned remote objects; default `1m`, `0` disables.
    #[serde(default)]
    pub gc_interval: Option<String>,
    /// The value of the `kueue.x-k8s.io/multikueue-origin` label on the objects this manager
    /// creates on workers; default (also when empty) `multikueue`.
    #[serde(default)]
    pub origin: Option<String>,
    /// How long a Workload's MultiKueue check stays Ready after its worker is lost; default
    /// `15m`.
    #[serde(default)]
    pub worker_lost_timeout: Option<String>,
    /// Who nominates worker clusters: [`DISPATCHER_ALL_AT_ONCE`] (default),
    /// [`DISPATCHER_INCREMENTAL`], or any other name for an external dispatcher.
    #[serde(default)]
    pub dispatcher_name: Option<String>,
    /// Job kinds dispatched by MultiKueue's generic adapter, each `Kind.version.group`.
    #[serde(default)]
    pub external_frameworks: Vec<ExternalFramework>,
    /// ClusterProfile access providers: accepted as written, not validated yet.
    #[serde(default)]
    pub cluster_profile: Option<serde_json::Value>,
    /// Only with the incremental dispatcher.
    #[serde(default)]
    pub incremental_dispatcher_config: Option<IncrementalDispatcherConfig>,
}

/// `multiKueue.externalFrameworks[]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExternalFramework {
    pub name: String,
}

/// `multiKueue.incrementalDispatcherConfig`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IncrementalDispatcherConfig {
    /// Clusters nominated per round; at least 1, default 3.
    #[serde(default)]
    pub step_size: Option<i32>,
}

pub use super::multikueue::{DISPATCHER_ALL_AT_ONCE, DISPATCHER_INCREMENTAL};

/// Kueue's `DefaultMultiKueueGCInterval`: 1 minute.
pub const DEFAULT_MULTIKUEUE_GC_INTERVAL_MS: i64 = 60 * 1000;
/// Kueue's `DefaultMultiKueueOrigin`.
pub const DEFAULT_MULTIKUEUE_ORIGIN: &str = "multikueue";
/// Kueue's `DefaultMultiKueueWorkerLostTimeout`: 15 minutes.
pub const DEFAULT_MULTIKUEUE_WORKER_LOST_TIMEOUT_MS: i64 = 15 * 60 * 1000;
/// The incremental dispatcher's default step size.
pub const DEFAULT_INCREMENTAL_STEP_SIZE: i32 = 3;

/// Which dispatcher nominates worker clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dispatcher<'a> {
    /// Every cluster of the config at once.
    AllAtOnce,
    /// `step_size` more clusters each round, in the config's order.
    Incremental { step_size: i32 },
    /// A controller outside Kueue, by this name, writes `status.nominatedClusterNames`.
    External(&'a str),
}

/// A `Kind.version.group` (Kubernetes' `schema.ParseKindArg`: split at the first two dots).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KindVersionGroup {
    pub kind: String,
    pub version: String,
    pub group: String,
}

impl KindVersionGroup {
    /// `None` unless `name` has at least two dots.
    pub fn parse(name: &str) -> Option<KindVersionGroup> {
        let mut parts = name.splitn(3, '.');
        let (kind, version, group) = (parts.next()?, parts.next()?, parts.next()?);
        Some(KindVersionGroup {
            kind: kind.into(),
            version: version.into(),
            group: group.into(),
        })
    }
}

/// The job frameworks (Kueue's `integrations.frameworks` names) that have a built-in
/// MultiKueue adapter, and the kind each adapts.
pub const MULTIKUEUE_ADAPTERS: [(&str, &str, &str, &str); 16] = [
    ("batch/job", "Job", "v1", "batch"),
    (
        "jobset.x-k8s.io/jobset",
        "JobSet",
        "v1alpha2",
        "jobset.x-k8s.io",
    ),
    (
        "kubeflow.org/pytorchjob",
        "PyTorchJob",
        "v1",
        "kubeflow.org",
    ),
    ("kubeflow.org/tfjob", "TFJob", "v1", "kubeflow.org"),
    ("kubeflow.org/paddlejob", "PaddleJob", "v1", "kubeflow.org"),
    (
        "kubeflow.org/xgboostjob",
        "XGBoostJob",
        "v1",
        "kubeflow.org",
    ),
    ("kubeflow.org/jaxjob", "JAXJob", "v1", "kubeflow.org"),
    ("kubeflow.org/mpijob", "MPIJob", "v2beta1", "kubeflow.org"),
    (
        "trainer.kubeflow.org/trainjob",
        "TrainJob",
        "v1alpha1",
        "trainer.kubeflow.org",
    ),
    ("ray.io/rayjob", "RayJob", "v1", "ray.io"),
    ("ray.io/raycluster", "RayCluster", "v1", "ray.io"),
    ("ray.io/rayservice", "RayService", "v1", "ray.io"),
    (
        "workload.codeflare.dev/appwrapper",
        "AppWrapper",
        "v1beta2",
        "workload.codeflare.dev",
    ),
    ("pod", "Pod", "v1", ""),
    ("statefulset", "StatefulSet", "v1", "apps"),
    (
        "leaderworkerset.x-k8s.io/leaderworkerset",
        "LeaderWorkerSet",
        "v1",
        "leaderworkerset.x-k8s.io",
    ),
];

impl MultiKueueSettings {
    /// Between two garbage collections; 0: none.
    pub fn gc_interval_ms(&self) -> i64 {
        duration_or(
            self.gc_interval.as_deref(),
            DEFAULT_MULTIKUEUE_GC_INTERVAL_MS,
        )
    }

    pub fn origin(&self) -> &str {
        self.origin
            .as_deref()
            .filter(|o| !o.is_empty())
            .unwrap_or(DEFAULT_MULTIKUEUE_ORIGIN)
    }

    pub fn worker_lost_timeout_ms(&self) -> i64 {
        duration_or(
            self.worker_lost_timeout.as_deref(),
            DEFAULT_MULTIKUEUE_WORKER_LOST_TIMEOUT_MS,
        )
    }

    /// The dispatcher's name as Kueue defaults it (an explicit empty name stays empty, and is
    /// an external dispatcher's).
    pub fn dispatcher_name(&self) -> &str {
        self.dispatcher_name
            .as_deref()
            .unwrap_or(DISPATCHER_ALL_AT_ONCE)
    }

    pub fn dispatcher(&self) -> Dispatcher<'_> {
        match self.dispatcher_name() {
            DISPATCHER_ALL_AT_ONCE => Dispatcher::AllAtOnce,
            DISPATCHER_INCREMENTAL => Dispatcher::Incremental {
                step_size: self
                    .incremental_dispatcher_config
                    .as_ref()
                    .and_then(|c| c.step_size)
                    .unwrap_or(DEFAULT_INCREMENTAL_STEP_SIZE),
            },
            other => Dispatcher::External(other),
        }
    }

    /// `externalFrameworks` that parse, in order.
    pub fn external_kinds(&self) -> Vec<KindVersionGroup> {
        self.external_frameworks
            .iter()
            .filter_map(|f| KindVersionGroup::parse(&f.name))
            .collect()
    }
}

/// A Go duration in milliseconds, `default` when unset or unreadable (validation reports it).
fn duration_or(value: Option<&str>, default: i64) -> i64 {
    value.and_then(|d| signed_millis(d).ok()).unwrap_or(default)
}

/// A Go duration that may be negative (`-1m`), in milliseconds.
fn signed_millis(d: &str) -> Result<i64, String> {
    match d.trim().strip_prefix('-') {
        Some(rest) => super::duration::parse_millis(rest).map(|ms| -ms),
        None => super::duration::parse_millis(d),
    }
}

/// `ms` as Go prints a `time.Duration`: `1m30s`, `-1m0s`, `500ms`, `0s`.
fn go_duration(ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let ms = ms.unsigned_abs();
    if ms == 0 {
        return "0s".into();
    }
    if ms < 1000 {
        return format!("{sign}{ms}ms");
    }
    let (h, m, s, frac) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    let seconds = if frac == 0 {
        format!("{s}s")
    } else {
        format!("{s}.{}s", format!("{frac:03}").trim_end_matches('0'))
    };
    match (h, m) {
        (0, 0) => format!("{sign}{seconds}"),
        (0, m) => format!("{sign}{m}m{seconds}"),
        (h, m) => format!("{sign}{h}h{m}m{seconds}"),
    }
}

/// Kueue's `validateMultiKueue` (`pkg/config/validation.go`), after its defaults.
fn validate_multi_kueue(c: &Configuration, mk: &MultiKueueSettings) -> Vec<FieldProblem> {
    let mut problems = Vec::new();
    let mut add = |field: &str, message: String| {
        problems.push(FieldProblem::at(format!("multiKueue.{field}"), message))
    };
    for (field, value) in [
        ("gcInterval", &mk.gc_interval),
        ("workerLostTimeout", &mk.worker_lost_timeout),
    ] {
        match value.as_deref().map(signed_millis) {
            Some(Err(e)) => add(field, e),
            Some(Ok(ms)) if ms < 0 => add(
                field,
                format!(
                    "Invalid value: {}: must be greater than or equal to 0",
                    go_duration(ms)
                ),
            ),
            _ => {}
        }
    }
    if let Some(origin) = mk.origin.as_deref()
        && let Err(e) = super::names::label_value(origin)
    {
        add("origin", format!("Invalid value: {origin:?}: {e}"));
    }
    if !mk.external_frameworks.is_empty() {
        let enabled = enabled_frameworks(c);
        let built_in: Vec<KindVersionGroup> = MULTIKUEUE_ADAPTERS
            .iter()
            .filter(|(framework, ..)| enabled.contains(framework))
            .map(|&(_, kind, version, group)| KindVersionGroup {
                kind: kind.into(),
                version: version.into(),
                group: group.into(),
            })
            .collect();
        let mut seen = std::collections::BTreeSet::new();
        for (i, f) in mk.external_frameworks.iter().enumerate() {
            let field = format!("externalFrameworks[{i}].name");
            let Some(kvg) = KindVersionGroup::parse(&f.name) else {
                add(
                    &field,
                    format!(
                        "Invalid value: {:?}: must be in 'kind.version.group' format",
                        f.name
                    ),
                );
                continue;
            };
            if !seen.insert(kvg.clone()) {
                add(&field, format!("Duplicate value: {:?}", f.name));
            }
            if built_in.contains(&kvg) {
                add(
                    &field,
                    format!(
                        "Invalid value: {:?}: conflicts with a built-in MultiKueue adapter",
                        f.name
                    ),
                );
            }
        }
    }
    if let Some(idc) = &mk.incremental_dispatcher_config {
        if mk.dispatcher_name() != DISPATCHER_INCREMENTAL {
            add(
                "incrementalDispatcherConfig",
                "incrementalDispatcherConfig is only valid when dispatcherName is set to the \
                 incremental dispatcher"
                    .into(),
            );
        }
        if let Some(step) = idc.step_size.filter(|&s| s < 1) {
            add(
                "incrementalDispatcherConfig.stepSize",
                format!("Invalid value: {step}: must be greater than or equal to 1"),
            );
        }
    }
    problems
}

/// `integrations.frameworks`, Kueue's default (`batch/job`) when empty.
fn enabled_frameworks(c: &Configuration) -> Vec<&str> {
    let listed: Vec<&str> = c
        .other
        .get("integrations")
        .and_then(|i| i.get("frameworks"))
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_str)
        .collect();
    if listed.is_empty() {
        vec!["batch/job"]
    } else {
        listed
    }
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
    if let Some(mk) = &c.multi_kueue {
        problems.extend(validate_multi_kueue(c, mk));
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
    /// Kueue's `namespace`: where its Secrets (MultiKueue's kubeconfigs) are; `None` when unset.
    pub fn namespace(&self) -> Option<&str> {
        self.other
            .get("namespace")
            .and_then(serde_json::Value::as_str)
            .filter(|n| !n.is_empty())
    }

    /// The `multiKueue` section, Kueue's defaults when absent.
    pub fn multi_kueue(&self) -> std::borrow::Cow<'_, MultiKueueSettings> {
        match &self.multi_kueue {
            Some(mk) => std::borrow::Cow::Borrowed(mk),
            None => std::borrow::Cow::Owned(MultiKueueSettings::default()),
        }
    }

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
        assert_eq!(parse("namespace: x\n").namespace(), Some("x"));
        assert_eq!(parse("fairSharing: {}\n").namespace(), None);
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
