//! `wasq_plugin_*` metrics, read from the plugin host at each scrape: what is loaded (name,
//! kind, digest), calls, failures per reason, quarantine, reloads per result, and files whose
//! latest content was refused; and `wasq_policy_shadow_decisions_total` per shadow policy,
//! extension and outcome.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeCounterValue, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use crate::wasm::{PluginInfo, PluginSource, PluginStatus};

/// A collector over a plugin source.
pub struct PluginCollector {
    pub source: PluginSource,
    pub shadows: std::sync::Arc<crate::policy::shadow::ShadowLog>,
    /// `QueuePolicy` modules, counted as plugins under their object's name.
    pub objects: Option<std::sync::Arc<crate::wasm::PolicyObjects>>,
    pub role: String,
}

impl std::fmt::Debug for PluginCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PluginCollector")
    }
}

type Labels = Vec<(&'static str, String)>;

impl PluginCollector {
    fn labels(&self, mut labels: Labels) -> Labels {
        labels.push(("replica_role", self.role.clone()));
        labels
    }

    /// A counter with one value per plugin, read from its status.
    fn per_plugin<N>(
        &self,
        encoder: &mut DescriptorEncoder,
        statuses: &[(&PluginInfo, PluginStatus)],
        name: &str,
        help: &str,
        value: impl Fn(&PluginStatus) -> N,
    ) -> Result<(), std::fmt::Error>
    where
        N: EncodeCounterValue + Default + std::fmt::Debug,
    {
        let mut e = encoder.encode_descriptor(
            name,
            help,
            None,
            ConstCounter::new(N::default()).metric_type(),
        )?;
        for (i, s) in statuses {
            let labels = self.labels(vec![("plugin", i.name.clone())]);
            ConstCounter::new(value(s)).encode(e.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

impl Collector for PluginCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let registry = self.source.snapshot();
        let objects = self
            .objects
            .as_ref()
            .map(|o| o.snapshot())
            .unwrap_or_default();
        let plugins: Vec<_> = registry
            .plugins()
            .chain(objects.iter().map(|o| &o.plugin))
            .collect();

        let mut e = encoder.encode_descriptor(
            "wasq_policy_shadow_decisions",
            "Decisions of each shadow policy against the enforced ones, per outcome (agree, \
             differ, invalid, fallback; skipped: not asked, the cycle's shadow budget spent)",
            None,
            ConstCounter::new(0u64).metric_type(),
        )?;
        for (name, f) in self.shadows.figures() {
            for (outcome, n) in [
                ("agree", f.agree),
                ("differ", f.differ),
                ("invalid", f.invalid),
                ("fallback", f.fallback),
                ("skipped", f.skipped),
            ] {
                let labels = self.labels(vec![
                    ("policy", name.clone()),
                    ("extension", f.extension.to_string()),
                    ("outcome", outcome.to_string()),
                ]);
                ConstCounter::new(n).encode(e.encode_family(&labels)?)?;
            }
        }

        let info = ConstGauge::new(1i64);
        let mut e = encoder.encode_descriptor(
            "wasq_plugin_info",
            "Loaded policy plugins (1 per plugin, with its kind and content digest)",
            None,
            info.metric_type(),
        )?;
        for p in &plugins {
            let i = p.info();
            let labels = self.labels(vec![
                ("plugin", i.name.clone()),
                ("kind", i.kind.to_string()),
                ("digest", i.digest.clone()),
            ]);
            ConstGauge::new(1i64).encode(e.encode_family(&labels)?)?;
        }

        let statuses: Vec<_> = plugins.iter().map(|p| (p.info(), p.status())).collect();
        self.per_plugin(
            &mut encoder,
            &statuses,
            "wasq_plugin_calls",
            "Calls into each plugin",
            |s| s.calls,
        )?;
        self.per_plugin(
            &mut encoder,
            &statuses,
            "wasq_plugin_cpu_seconds",
            "CPU time of each plugin's calls",
            |s| s.cpu_us as f64 / 1e6,
        )?;
        self.per_plugin(
            &mut encoder,
            &statuses,
            "wasq_plugin_over_budget",
            "Calls the built-in made instead because the plugin had used its CPU budget",
            |s| s.over_budget,
        )?;
        self.per_plugin(
            &mut encoder,
            &statuses,
            "wasq_plugin_extra_victims",
            "Victims evicted beyond what the preemptors needed (allowExtraVictims)",
            |s| s.extra_victims,
        )?;
        let mut e = encoder.encode_descriptor(
            "wasq_plugin_failures",
            "Failed plugin calls and refused answers, per reason",
            None,
            ConstCounter::new(0u64).metric_type(),
        )?;
        for (i, s) in &statuses {
            for (reason, n) in &s.failures {
                let labels = self.labels(vec![
                    ("plugin", i.name.clone()),
                    ("reason", reason.to_string()),
                ]);
                ConstCounter::new(*n).encode(e.encode_family(&labels)?)?;
            }
        }
        let mut e = encoder.encode_descriptor(
            "wasq_plugin_quarantined",
            "1 while a plugin is quarantined after repeated failures",
            None,
            ConstGauge::new(0i64).metric_type(),
        )?;
        for (i, s) in &statuses {
            let labels = self.labels(vec![("plugin", i.name.clone())]);
            ConstGauge::new(i64::from(s.quarantined)).encode(e.encode_family(&labels)?)?;
        }
        if let PluginSource::Live(live) = &self.source {
            let counts = live.counts();
            let mut e = encoder.encode_descriptor(
                "wasq_plugin_reloads",
                "Plugin file changes, per result (loaded, rejected, removed)",
                None,
                ConstCounter::new(0u64).metric_type(),
            )?;
            for (result, n) in [
                ("loaded", counts.loaded),
                ("rejected", counts.rejected),
                ("removed", counts.removed),
            ] {
                let labels = self.labels(vec![("result", result.to_string())]);
                ConstCounter::new(n).encode(e.encode_family(&labels)?)?;
            }
            let mut e = encoder.encode_descriptor(
                "wasq_plugin_file_rejected",
                "1 while a plugin file's latest content is refused (the previous version, if any, keeps running)",
                None,
                ConstGauge::new(0i64).metric_type(),
            )?;
            for f in live.files() {
                if f.rejected.is_some() {
                    let labels = self.labels(vec![("plugin", f.plugin.clone())]);
                    ConstGauge::new(1i64).encode(e.encode_family(&labels)?)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use prometheus_client::registry::Registry;

    use super::PluginCollector;
    use crate::policy::shadow::{Difference, Outcome, ShadowLog};
    use crate::wasm::{PluginSource, WasmEngine};

    #[test]
    fn every_per_plugin_counter_is_described() {
        let engine = WasmEngine::new(false).expect("engine");
        let mut registry = Registry::default();
        registry.register_collector(Box::new(PluginCollector {
            source: PluginSource::Fixed(Arc::new(crate::wasm::Registry::empty(engine))),
            shadows: Arc::default(),
            objects: None,
            role: "leader".into(),
        }));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("encodes");
        for name in [
            "wasq_plugin_calls",
            "wasq_plugin_cpu_seconds",
            "wasq_plugin_over_budget",
            "wasq_plugin_extra_victims",
        ] {
            assert!(
                text.contains(&format!("# TYPE {name} counter")),
                "{name}:\n{text}"
            );
        }
    }

    #[test]
    fn shadow_decisions_are_counted_per_policy_extension_and_outcome() {
        let engine = WasmEngine::new(false).expect("engine");
        let source = PluginSource::Fixed(Arc::new(crate::wasm::Registry::empty(engine)));
        let shadows = Arc::new(ShadowLog::default());
        let difference = || Difference {
            extension: "preemption",
            workload: "ns/a".into(),
            enforced: "ns/b".into(),
            shadow: "ns/c".into(),
        };
        for outcome in [
            Outcome::Agree,
            Outcome::Agree,
            Outcome::Differ,
            Outcome::Failed,
        ] {
            shadows.record("least-lost-work", "preemption", outcome, difference);
        }
        let mut metrics = crate::k8s::serve::metrics::Metrics::new("leader");
        metrics.register_plugins(source, shadows, None);
        let text = metrics.encode();
        for (outcome, n) in [("agree", 2), ("differ", 1), ("invalid", 0), ("fallback", 1)] {
            let line = format!(
                "wasq_policy_shadow_decisions_total{{policy=\"least-lost-work\",extension=\"preemption\",outcome=\"{outcome}\",replica_role=\"leader\"}} {n}"
            );
            assert!(text.contains(&line), "{line} not in:\n{text}");
        }
    }
}
