//! The policy configuration file (`--config`): which plugins decide, from which directory,
//! under which limits, which annotations plugins may see, and each plugin's settings. The same
//! file serves `wasq simulate` and `wasq controller`; command-line flags override it.
//!
//! ```yaml
//! plugins: ./target/plugins          # directory of *.wasm (relative to this file)
//! policies:                          # EXT: NAME (`builtin` or a plugin's file stem)
//!   preemption: min-runtime
//!   placement: pack-by-rack
//! limits: {cycleBudgetMs: 1000}      # every plugin; a field not given keeps its language's default
//! pluginLimits:                      # one plugin; a field not given keeps `limits` (or the default)
//!   min-runtime: {deadlineMs: 20}
//! exposeAnnotations: ["wasq.dev/", "example.com/cost"]
//! pluginMetadata:                    # per plugin: more Workload label/annotation keys it sees
//!   protect-namespace: {labels: [team], annotations: ["example.com/checkpoint"]}
//! pluginSettings:
//!   min-runtime: {min-runtime: 10m}
//! shadowCycleBudgetMs: 50            # all shadow policies together, per scheduling cycle
//! budgets:                           # preemption budgets (annotations on a ClusterQueue win)
//!   default: {maxVictimsPerPreemptor: 4}
//!   clusterQueues:
//!     cq-a: {maxVictimsPerPreemptor: 2, maxEvictionsPerMinute: 10}
//! ```

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;

use super::limits::LimitsPatch;
use super::plugin::Exposure;
use super::registry::{Bindings, HostOptions};

/// The file's content.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyConfig {
    /// The plugin directory; relative paths are relative to the file.
    pub plugins: Option<PathBuf>,
    /// Default binding per extension (`ordering`, `preemption`, `flavor-assignment`,
    /// `placement`).
    #[serde(default)]
    pub policies: BTreeMap<String, String>,
    /// Limits for every plugin: each field given replaces the default of the plugin's language.
    #[serde(default)]
    pub limits: LimitsPatch,
    /// Limits of individual plugins: each field given replaces `limits` (or the default) for
    /// that plugin.
    #[serde(default)]
    pub plugin_limits: BTreeMap<String, LimitsPatch>,
    /// Annotation keys (exact, or prefixes ending in `/`) plugins may see, besides those under
    /// `kueue.x-k8s.io/` and `wasq.dev/` which every plugin sees.
    pub expose_annotations: Option<Vec<String>>,
    /// Per plugin, Workload label and annotation keys it sees besides the global ones (its
    /// allow-list; labels under `kueue.x-k8s.io/` and `wasq.dev/` are always sent).
    #[serde(default)]
    pub plugin_metadata: BTreeMap<String, MetadataKeys>,
    /// Settings passed to each plugin in its catalog.
    #[serde(default)]
    pub plugin_settings: BTreeMap<String, BTreeMap<String, String>>,
    /// CPU time all shadow policies together may take per scheduling cycle, in milliseconds;
    /// past it their calls are skipped (and counted as `skipped`) until the next cycle. Default:
    /// 50 in the controller, no limit in the simulator (whose figures must not depend on the
    /// machine).
    pub shadow_cycle_budget_ms: Option<u64>,
    /// Preemption budgets (`crate::cluster::budget`): a default and per-ClusterQueue
    /// entries, each under the ClusterQueue's own annotations.
    #[serde(default)]
    pub budgets: Option<crate::cluster::budget::BudgetsFile>,
}

/// One plugin's extra label and annotation keys (`pluginMetadata.<name>`): exact keys, or
/// prefixes ending in `/`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MetadataKeys {
    #[serde(default)]
    pub labels: Vec<String>,
    #[serde(default)]
    pub annotations: Vec<String>,
}

impl PolicyConfig {
    /// Reads a configuration file; errors name the file and the field.
    pub fn load(path: &Path) -> anyhow::Result<PolicyConfig> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let mut config: PolicyConfig = if text.trim().is_empty() {
            PolicyConfig::default()
        } else {
            let value: serde_json::Value = serde_saphyr::from_str(&text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            serde_path_to_error::deserialize(value).map_err(|e| {
                anyhow::anyhow!("{}: field `{}`: {}", path.display(), e.path(), e.inner())
            })?
        };
        config
            .budget_defaults()
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        if let Some(dir) = &config.plugins
            && dir.is_relative()
        {
            config.plugins = Some(path.parent().unwrap_or(Path::new(".")).join(dir));
        }
        Ok(config)
    }

    /// The default bindings this file sets.
    pub fn bindings(&self) -> Result<Bindings, super::BindError> {
        let mut b = Bindings::default();
        for (ext, name) in &self.policies {
            b.set(&format!("{ext}={name}"))?;
        }
        Ok(b)
    }

    /// The preemption budgets this file sets, or every malformed value (field, ClusterQueue
    /// and annotation named).
    pub fn budget_defaults(&self) -> anyhow::Result<crate::cluster::BudgetDefaults> {
        match &self.budgets {
            None => Ok(Default::default()),
            Some(b) => b
                .resolve()
                .map_err(|problems| anyhow::anyhow!(problems.join("; "))),
        }
    }

    /// Limits, exposure and settings for the host.
    pub fn host_options(&self) -> HostOptions {
        HostOptions {
            limits: self.limits,
            plugin_limits: self
                .plugin_limits
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            exposure: self
                .expose_annotations
                .clone()
                .map(|annotations| Exposure {
                    annotations,
                    labels: Vec::new(),
                })
                .unwrap_or_default(),
            plugin_exposure: self
                .plugin_metadata
                .iter()
                .map(|(name, keys)| {
                    (
                        name.clone(),
                        Exposure {
                            annotations: keys.annotations.clone(),
                            labels: keys.labels.clone(),
                        },
                    )
                })
                .collect(),
            settings: self
                .plugin_settings
                .iter()
                .map(|(name, s)| {
                    (
                        name.clone(),
                        s.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                    )
                })
                .collect::<HashMap<_, _>>(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_full_file_and_resolves_the_plugin_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("wasq.yaml");
        std::fs::write(
            &path,
            "plugins: plugins\npolicies: {preemption: min-runtime, placement: pack-by-rack}\n\
             limits: {deadlineMs: 20}\n\
             pluginLimits: {min-runtime: {memoryBytes: 1048576}}\nexposeAnnotations: [example.com/cost]\n\
             pluginSettings: {min-runtime: {min-runtime: 10m}}\n\
             pluginMetadata: {min-runtime: {labels: [team]}}\n",
        )
        .expect("write");
        let c = PolicyConfig::load(&path).expect("loads");
        assert_eq!(c.plugins, Some(dir.path().join("plugins")));
        assert_eq!(
            c.bindings()
                .expect("valid")
                .get(super::super::PluginKind::Preemption),
            "min-runtime"
        );
        assert_eq!(
            c.bindings()
                .expect("valid")
                .get(super::super::PluginKind::Placement),
            "pack-by-rack"
        );
        let o = c.host_options();
        assert_eq!(o.limits.deadline_ms, Some(20));
        assert_eq!(o.limits.memory_bytes, None);
        assert_eq!(o.plugin_limits["min-runtime"].memory_bytes, Some(1 << 20));
        // Field by field: the language's default, `limits`, then the plugin's own.
        let own = o.limits_for("min-runtime", super::super::Language::Rust);
        assert_eq!((own.memory_bytes, own.deadline_ms), (1 << 20, 20));
        let python = o.limits_for("other", super::super::Language::Python);
        assert_eq!(python.deadline_ms, 20);
        assert_eq!(
            python.memory_bytes,
            super::super::Language::Python.default_limits().memory_bytes
        );
        assert!(o.exposure.exposes("example.com/cost"));
        assert!(!o.exposure.exposes("example.com/other"));
        // Kueue's and wasq's keys are always exposed.
        assert!(o.exposure.exposes("wasq.dev/cost"));
        assert!(o.exposure.exposes_label("kueue.x-k8s.io/job-uid"));
        assert!(!o.exposure.exposes_label("team"));
        let own = o.exposure.with(o.plugin_exposure.get("min-runtime"));
        assert!(own.exposes_label("team") && own.exposes("example.com/cost"));
        assert!(!own.exposes_label("example.com/cost"));
        assert_eq!(
            o.settings["min-runtime"],
            vec![("min-runtime".to_string(), "10m".to_string())]
        );
    }

    #[test]
    fn budgets_are_read_and_malformed_ones_refused_with_the_queue_and_annotation() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("wasq.yaml");
        std::fs::write(
            &path,
            "budgets:\n  default: {maxEvictionsPerMinute: 10}\n  clusterQueues:\n    cq-a: {maxVictimsPerPreemptor: '2'}\n",
        )
        .expect("write");
        let d = PolicyConfig::load(&path)
            .expect("loads")
            .budget_defaults()
            .expect("valid");
        let a = d.for_cluster_queue("cq-a");
        assert_eq!(a.max_victims_per_preemptor, Some(2));
        assert_eq!(a.max_evictions_per_minute, Some(10));
        std::fs::write(
            &path,
            "budgets:\n  clusterQueues:\n    cq-a: {maxVictimsPerPreemptor: two}\n",
        )
        .expect("write");
        let e = PolicyConfig::load(&path).expect_err("refused").to_string();
        for part in [
            "wasq.yaml",
            "budgets.clusterQueues.cq-a.maxVictimsPerPreemptor",
            "ClusterQueue cq-a",
            "policy.wasq.dev/max-victims-per-preemptor",
            "`two` is not a non-negative integer",
        ] {
            assert!(e.contains(part), "{part}: {e}");
        }
        std::fs::write(&path, "budgets: {default: {maxVictims: 1}}\n").expect("write");
        let e = PolicyConfig::load(&path).expect_err("refused").to_string();
        assert!(e.contains("budgets.default"), "{e}");
    }

    #[test]
    fn an_unknown_field_names_the_file_and_the_field() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("wasq.yaml");
        std::fs::write(&path, "limits: {deadline: 20}\n").expect("write");
        let e = PolicyConfig::load(&path).expect_err("refused").to_string();
        assert!(e.contains("wasq.yaml"), "{e}");
        assert!(e.contains("limits"), "{e}");
        assert!(e.contains("deadline"), "{e}");
    }
}
