//! `wasq_plugin_*` metrics, read from the plugin host at each scrape: what is loaded (name,
//! kind, digest), calls, failures per reason, quarantine, reloads per result, and files whose
//! latest content was refused.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use crate::wasm::PluginSource;

/// A collector over a plugin source.
pub struct PluginCollector {
    pub source: PluginSource,
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
}

impl Collector for PluginCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let registry = self.source.snapshot();
        let plugins: Vec<_> = registry.plugins().collect();

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
        let mut e = encoder.encode_descriptor(
            "wasq_plugin_calls",
            "Calls into each plugin",
            None,
            ConstCounter::new(0u64).metric_type(),
        )?;
        for (i, s) in &statuses {
            let labels = self.labels(vec![("plugin", i.name.clone())]);
            ConstCounter::new(s.calls).encode(e.encode_family(&labels)?)?;
        }
        let mut e = encoder.encode_descriptor(
            "wasq_plugin_cpu_seconds",
            "CPU time of each plugin's calls",
            None,
            ConstCounter::new(0f64).metric_type(),
        )?;
        for (i, s) in &statuses {
            let labels = self.labels(vec![("plugin", i.name.clone())]);
            ConstCounter::new(s.cpu_us as f64 / 1e6).encode(e.encode_family(&labels)?)?;
        }
        let mut e = encoder.encode_descriptor(
            "wasq_plugin_over_budget",
            "Calls the built-in made instead because the plugin had used its CPU budget",
            None,
            ConstCounter::new(0u64).metric_type(),
        )?;
        for (i, s) in &statuses {
            let labels = self.labels(vec![("plugin", i.name.clone())]);
            ConstCounter::new(s.over_budget).encode(e.encode_family(&labels)?)?;
        }
        let mut e = encoder.encode_descriptor(
            "wasq_plugin_extra_victims",
            "Victims evicted beyond what the preemptors needed (allowExtraVictims)",
            None,
            ConstCounter::new(0u64).metric_type(),
        )?;
        for (i, s) in &statuses {
            let labels = self.labels(vec![("plugin", i.name.clone())]);
            ConstCounter::new(s.extra_victims).encode(e.encode_family(&labels)?)?;
        }
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
