//! Flags shared by `simulate` and `controller` that choose the policies: the plugin directory,
//! `--policy EXT=NAME` bindings and `--config FILE`, merged into a loaded registry.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use wasq::cluster::Cluster;
use wasq::policy::PolicySet;
use wasq::wasm::{Bindings, PolicyConfig, Registry, WasmEngine};

#[derive(Args, Debug, Clone, Default)]
pub struct PolicyArgs {
    /// Directory of policy plugins (*.wasm components; `wasq plugin build` fills target/plugins).
    #[arg(long, value_name = "DIR")]
    pub plugins: Option<PathBuf>,
    /// Which policy decides an extension point: EXT=NAME, EXT one of ordering, preemption,
    /// flavor-assignment; NAME `builtin` or a plugin's file stem in --plugins. Repeatable.
    #[arg(long = "policy", value_name = "EXT=NAME")]
    pub policies: Vec<String>,
    /// Policy configuration file (plugin directory, bindings, limits, exposed annotations,
    /// plugin settings); flags override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// A loaded registry and the default bindings.
pub struct Policies {
    pub registry: Registry,
    pub bindings: Bindings,
}

impl PolicyArgs {
    /// Loads the configuration and the plugin directory.
    pub fn load(&self) -> anyhow::Result<Policies> {
        let config = match &self.config {
            Some(path) => PolicyConfig::load(path)?,
            None => PolicyConfig::default(),
        };
        let mut bindings = config.bindings()?;
        for spec in &self.policies {
            bindings.set(spec)?;
        }
        let options = config.host_options();
        let fuel = options.limits.fuel.is_some()
            || options.plugin_limits.values().any(|l| l.fuel.is_some());
        let engine = WasmEngine::new(fuel).context("starting wasmtime")?;
        let dir = self.plugins.clone().or(config.plugins.clone());
        let registry = match &dir {
            Some(dir) => Registry::load_dir(engine, dir, &options)
                .with_context(|| format!("reading plugin directory {}", dir.display()))?,
            None => Registry::empty(engine),
        };
        Ok(Policies { registry, bindings })
    }
}

impl Policies {
    /// The default policy set and the per-ClusterQueue overrides for `cluster`.
    pub fn bind(
        &self,
        cluster: &Cluster,
    ) -> anyhow::Result<(PolicySet, Vec<(wasq::cluster::CqId, PolicySet)>)> {
        Ok(self.registry.bind(cluster, &self.bindings)?)
    }
}
