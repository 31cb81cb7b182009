//! `wasq policy shadow-report NAME`: how often a shadow policy agreed with the policy that
//! decides, and the decisions where it did not — from a cluster (the `QueuePolicy`'s status,
//! which the leader keeps current) or from a simulator report (`wasq simulate -o json`).

use std::fmt::Write;
use std::path::Path;

use anyhow::Context;
use wasq::api::policy::{ShadowDifference, ShadowStatus};

/// What is reported, and about what.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShadowReport {
    pub name: String,
    /// `Preemption`, `ordering`, ...: the extension point it shadows.
    pub extension: String,
    /// The live module's digest (a cluster's `QueuePolicy`), if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// `latest` (a cluster keeps the latest differing decisions) or `first` (a simulator
    /// report keeps the first ones).
    pub differences_kept: &'static str,
    #[serde(flatten)]
    pub figures: ShadowStatus,
}

/// From a cluster's `QueuePolicy`.
pub fn from_cluster(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    name: &str,
) -> anyhow::Result<ShadowReport> {
    let policy = super::cluster::queue_policy(kubeconfig, context, name)?;
    let status = policy.status.unwrap_or_default();
    let Some(figures) = status.shadow else {
        anyhow::bail!(
            "QueuePolicy {name} has no shadow figures: its mode is {:?}{}",
            policy.spec.mode,
            if policy.spec.mode == wasq::api::policy::PolicyMode::Shadow {
                " and wasq has not reported yet (is the controller running?)"
            } else {
                " (only a Shadow policy is compared)"
            }
        );
    };
    Ok(ShadowReport {
        name: name.to_string(),
        extension: format!("{:?}", policy.spec.extension),
        digest: status.digest,
        differences_kept: "latest",
        figures,
    })
}

/// From a simulator report written with `-o json` (`summary.shadow.<name>`).
pub fn from_simulation(path: &Path, name: &str) -> anyhow::Result<ShadowReport> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let report: serde_json::Value = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not a JSON report (wasq simulate -o json)",
            path.display()
        )
    })?;
    let shadows = report
        .pointer("/summary/shadow")
        .and_then(serde_json::Value::as_object)
        .with_context(|| {
            format!(
                "{}: no summary.shadow: no shadow policy ran",
                path.display()
            )
        })?;
    let Some(f) = shadows.get(name) else {
        let known: Vec<&str> = shadows.keys().map(String::as_str).collect();
        anyhow::bail!(
            "{}: no shadow named {name} (the report has: {})",
            path.display(),
            known.join(", ")
        );
    };
    let n = |key: &str| f.get(key).and_then(serde_json::Value::as_u64).unwrap_or(0);
    let text = |d: &serde_json::Value, key: &str| {
        d.get(key)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let figures = ShadowStatus {
        decisions: n("decisions"),
        agree: n("agree"),
        differ: n("differ"),
        invalid: n("invalid"),
        fallback: n("fallback"),
        skipped: n("skipped"),
        agreement: wasq::k8s::policies::agreement(n("agree"), n("decisions")),
        recent_differences: f
            .get("differences")
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
            .map(|d| ShadowDifference {
                time: None,
                workload: text(d, "workload"),
                enforced: text(d, "enforced"),
                shadow: text(d, "shadow"),
            })
            .collect(),
    };
    Ok(ShadowReport {
        name: name.to_string(),
        extension: f
            .get("extension")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string(),
        digest: None,
        differences_kept: "first",
        figures,
    })
}

impl ShadowReport {
    pub fn to_table(&self) -> String {
        let f = &self.figures;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Shadow {} ({}){}",
            self.name,
            self.extension,
            self.digest
                .as_deref()
                .map(|d| format!(", module {d}"))
                .unwrap_or_default()
        );
        let agreement = if f.agreement.is_empty() {
            "-"
        } else {
            &f.agreement
        };
        let _ = writeln!(
            out,
            "  {:>10} {:>10} {:>8} {:>8} {:>9} {:>8} {:>10}",
            "DECISIONS", "AGREE", "DIFFER", "INVALID", "FALLBACK", "SKIPPED", "AGREEMENT"
        );
        let _ = writeln!(
            out,
            "  {:>10} {:>10} {:>8} {:>8} {:>9} {:>8} {:>10}",
            f.decisions, f.agree, f.differ, f.invalid, f.fallback, f.skipped, agreement
        );
        if f.recent_differences.is_empty() {
            return out;
        }
        let _ = writeln!(
            out,
            "\n{} differing decisions{}:",
            if self.differences_kept == "latest" {
                "Latest"
            } else {
                "First"
            },
            if self.differences_kept == "latest" {
                " (newest last)"
            } else {
                ""
            }
        );
        for d in &f.recent_differences {
            let when = d
                .time
                .as_deref()
                .map(|t| format!("{t}  "))
                .unwrap_or_default();
            let _ = writeln!(out, "  {when}{}", d.workload);
            let _ = writeln!(out, "      enforced: {}", d.enforced);
            let _ = writeln!(out, "      shadow:   {}", d.shadow);
        }
        out
    }
}
