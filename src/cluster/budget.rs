//! Preemption budgets, the settings: per ClusterQueue, how many victims one preemptor may evict
//! (`policy.wasq.dev/max-victims-per-preemptor`) and how many evictions the ClusterQueue's
//! preemptors may cause in any 60 seconds (`policy.wasq.dev/max-evictions-per-minute`).
//!
//! Each setting comes, most specific first, from the ClusterQueue's annotation, its entry in
//! the `--config` file's `budgets.clusterQueues`, or `budgets.default`; unset everywhere means
//! no limit. A ClusterQueue's owner states its own limit on the object, which wins over the
//! operator's file (as a `policy.wasq.dev/preemption` annotation wins over the file's default
//! binding). The scheduler enforces them (`scheduler/budget.rs`).

use std::collections::BTreeMap;

use serde::Deserialize;

/// Annotation: most victims one preemptor of this ClusterQueue may evict.
pub const MAX_VICTIMS_PER_PREEMPTOR: &str = "policy.wasq.dev/max-victims-per-preemptor";
/// Annotation: most evictions this ClusterQueue's preemptors may cause in any 60 s.
pub const MAX_EVICTIONS_PER_MINUTE: &str = "policy.wasq.dev/max-evictions-per-minute";

/// One ClusterQueue's limits (`None` = unlimited).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PreemptionBudget {
    pub max_victims_per_preemptor: Option<u32>,
    pub max_evictions_per_minute: Option<u32>,
}

impl PreemptionBudget {
    /// Each limit this one sets, else `fallback`'s.
    pub fn or(self, fallback: PreemptionBudget) -> PreemptionBudget {
        PreemptionBudget {
            max_victims_per_preemptor: self
                .max_victims_per_preemptor
                .or(fallback.max_victims_per_preemptor),
            max_evictions_per_minute: self
                .max_evictions_per_minute
                .or(fallback.max_evictions_per_minute),
        }
    }

    pub fn is_unlimited(&self) -> bool {
        self.max_victims_per_preemptor.is_none() && self.max_evictions_per_minute.is_none()
    }

    /// The limits an object's annotations set, and a problem (`metadata.annotations.KEY:
    /// ...`) for each value that is not a non-negative integer (that limit stays unset).
    pub fn from_annotations(annotations: &BTreeMap<String, String>) -> (Self, Vec<String>) {
        let mut problems = Vec::new();
        let mut read = |key: &str| {
            let value = annotations.get(key)?;
            parse_count(value)
                .map_err(|e| problems.push(format!("metadata.annotations.{key}: {e}")))
                .ok()
        };
        let budget = PreemptionBudget {
            max_victims_per_preemptor: read(MAX_VICTIMS_PER_PREEMPTOR),
            max_evictions_per_minute: read(MAX_EVICTIONS_PER_MINUTE),
        };
        (budget, problems)
    }
}

/// A non-negative integer written in decimal digits only (no sign, no spaces), as the budget
/// annotations take it.
pub fn parse_count(value: &str) -> Result<u32, String> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{value}` is not a non-negative integer"));
    }
    value
        .parse::<u32>()
        .map_err(|_| format!("`{value}` is too large (at most {})", u32::MAX))
}

/// The limits the `--config` file sets, validated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BudgetDefaults {
    pub default: PreemptionBudget,
    /// By ClusterQueue name.
    pub cluster_queues: BTreeMap<String, PreemptionBudget>,
}

impl BudgetDefaults {
    /// What applies to a ClusterQueue without annotations.
    pub fn for_cluster_queue(&self, name: &str) -> PreemptionBudget {
        self.cluster_queues
            .get(name)
            .copied()
            .unwrap_or_default()
            .or(self.default)
    }
}

/// The `budgets` section of the `--config` file, as written:
///
/// ```yaml
/// budgets:
///   default: {maxVictimsPerPreemptor: 4}
///   clusterQueues:
///     cq-a: {maxVictimsPerPreemptor: 2, maxEvictionsPerMinute: 10}
/// ```
///
/// Values are integers or strings of digits (as the annotations); [`BudgetsFile::resolve`]
/// checks them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BudgetsFile {
    #[serde(default)]
    pub default: BudgetEntry,
    #[serde(default)]
    pub cluster_queues: BTreeMap<String, BudgetEntry>,
}

/// One entry of [`BudgetsFile`].
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BudgetEntry {
    pub max_victims_per_preemptor: Option<serde_json::Value>,
    pub max_evictions_per_minute: Option<serde_json::Value>,
}

impl BudgetsFile {
    /// The validated limits, or every malformed value (its field, the ClusterQueue and the
    /// annotation it stands for).
    pub fn resolve(&self) -> Result<BudgetDefaults, Vec<String>> {
        let mut problems = Vec::new();
        let default = resolve_entry(&self.default, "budgets.default", None, &mut problems);
        let cluster_queues = self
            .cluster_queues
            .iter()
            .map(|(name, e)| {
                let field = format!("budgets.clusterQueues.{name}");
                (
                    name.clone(),
                    resolve_entry(e, &field, Some(name), &mut problems),
                )
            })
            .collect();
        if problems.is_empty() {
            Ok(BudgetDefaults {
                default,
                cluster_queues,
            })
        } else {
            Err(problems)
        }
    }
}

fn resolve_entry(
    e: &BudgetEntry,
    field: &str,
    cq: Option<&str>,
    problems: &mut Vec<String>,
) -> PreemptionBudget {
    let mut read = |v: &Option<serde_json::Value>, name: &str, annotation: &str| {
        let v = v.as_ref()?;
        let text = match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let whom = cq.map_or("every ClusterQueue".to_string(), |n| {
            format!("ClusterQueue {n}")
        });
        parse_count(&text)
            .map_err(|e| problems.push(format!("{field}.{name} ({whom}, {annotation}): {e}")))
            .ok()
    };
    PreemptionBudget {
        max_victims_per_preemptor: read(
            &e.max_victims_per_preemptor,
            "maxVictimsPerPreemptor",
            MAX_VICTIMS_PER_PREEMPTOR,
        ),
        max_evictions_per_minute: read(
            &e.max_evictions_per_minute,
            "maxEvictionsPerMinute",
            MAX_EVICTIONS_PER_MINUTE,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_plain_non_negative_integers() {
        assert_eq!(parse_count("0"), Ok(0));
        assert_eq!(parse_count("12"), Ok(12));
        for bad in ["", "-1", "+2", " 2", "2.0", "two", "1e3"] {
            let e = parse_count(bad).expect_err(bad);
            assert!(e.contains("not a non-negative integer"), "{e}");
        }
        assert!(
            parse_count("99999999999")
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn annotations_set_each_limit_and_name_the_bad_one() {
        let a: BTreeMap<String, String> = [
            (MAX_VICTIMS_PER_PREEMPTOR.to_string(), "2".to_string()),
            (MAX_EVICTIONS_PER_MINUTE.to_string(), "lots".to_string()),
        ]
        .into();
        let (b, problems) = PreemptionBudget::from_annotations(&a);
        assert_eq!(b.max_victims_per_preemptor, Some(2));
        assert_eq!(b.max_evictions_per_minute, None);
        assert_eq!(
            problems,
            vec![
                "metadata.annotations.policy.wasq.dev/max-evictions-per-minute: `lots` is not a non-negative integer"
                    .to_string()
            ]
        );
    }

    #[test]
    fn the_file_resolves_per_queue_over_default_field_by_field() {
        let file: BudgetsFile = serde_json::from_value(serde_json::json!({
            "default": {"maxVictimsPerPreemptor": 4, "maxEvictionsPerMinute": "10"},
            "clusterQueues": {"cq-a": {"maxVictimsPerPreemptor": 2}}
        }))
        .expect("parses");
        let d = file.resolve().expect("valid");
        assert_eq!(
            d.for_cluster_queue("cq-a"),
            PreemptionBudget {
                max_victims_per_preemptor: Some(2),
                max_evictions_per_minute: Some(10)
            }
        );
        assert_eq!(
            d.for_cluster_queue("other").max_victims_per_preemptor,
            Some(4)
        );
    }

    #[test]
    fn a_malformed_file_value_names_the_queue_and_the_annotation() {
        let file: BudgetsFile = serde_json::from_value(serde_json::json!({
            "clusterQueues": {"cq-a": {"maxEvictionsPerMinute": -3}}
        }))
        .expect("parses");
        let e = file.resolve().expect_err("refused").join("\n");
        assert!(
            e.contains("budgets.clusterQueues.cq-a.maxEvictionsPerMinute"),
            "{e}"
        );
        assert!(e.contains("ClusterQueue cq-a"), "{e}");
        assert!(e.contains(MAX_EVICTIONS_PER_MINUTE), "{e}");
        assert!(e.contains("`-3` is not a non-negative integer"), "{e}");
    }
}
