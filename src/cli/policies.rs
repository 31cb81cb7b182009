//! Flags shared by `simulate` and `controller` that choose the policies: the plugin directory,
//! `--policy EXT=NAME` bindings and `--config FILE`, merged into a plugin source (fixed, or
//! live with hot reload) and bindings. `simulate --compare A B` applies each side's
//! comma-separated `EXT=NAME` pairs on top of those bindings.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;

use wasq::api::policy::QueuePolicy;
use wasq::policy::shadow::ShadowLog;
use wasq::wasm::reload::WatchHandle;
use wasq::wasm::{
    Bindings, LiveBindings, LivePlugins, PluginSource, PolicyConfig, PolicyObjects, Registry,
    WasmEngine, read_module,
};

#[derive(Args, Debug, Clone, Default)]
pub struct PolicyArgs {
    /// Directory of policy plugins (*.wasm components; `wasq plugin build` fills
    /// target/plugins). Without it (and without `plugins` in --policy-config) only the built-in
    /// policies run.
    #[arg(long, value_name = "DIR")]
    pub plugins: Option<PathBuf>,
    /// Which policy decides an extension point: EXT=NAME, EXT one of ordering, preemption,
    /// flavor-assignment, placement; NAME `builtin` or a plugin's file stem in --plugins. Repeatable.
    #[arg(long = "policy", value_name = "EXT=NAME")]
    pub policies: Vec<String>,
    /// A shadow policy: asked the same questions as the policy that decides EXT, its answers
    /// verified the same way and never acted on; how often it agrees is reported (the
    /// simulator's `summary.shadow`). EXT=NAME as for --policy. Repeatable.
    #[arg(long = "shadow", value_name = "EXT=NAME")]
    pub shadows: Vec<String>,
    /// wasq's policy configuration file (plugin directory, bindings, limits, exposed
    /// annotations, plugin settings); flags override it. Not Kueue's Configuration: that is
    /// a document among the manifests, or the controller's --kueue-config. (`--config` is
    /// the old name, kept for a release.)
    #[arg(long = "policy-config", alias = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub cache: CacheArgs,
}

/// Where compiled plugins are kept between runs.
#[derive(Args, Debug, Clone, Default)]
pub struct CacheArgs {
    /// Directory of the compiled-module cache: a plugin compiled once is loaded from there by
    /// later runs (default: $XDG_CACHE_HOME/wasq, else ~/.cache/wasq).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Compile every plugin afresh, and keep nothing on disk.
    #[arg(long, conflicts_with = "cache_dir")]
    pub no_cache: bool,
}

impl CacheArgs {
    /// The engine, with the disk cache unless it is turned off or no directory can be found.
    pub fn engine(&self, fuel: bool) -> anyhow::Result<WasmEngine> {
        let dir = if self.no_cache {
            None
        } else {
            self.cache_dir
                .clone()
                .or_else(wasq::wasm::default_cache_dir)
        };
        match dir {
            Some(dir) => WasmEngine::with_disk_cache(fuel, &dir),
            None => WasmEngine::new(fuel),
        }
        .context("starting wasmtime")
    }
}

/// The controller's default `shadowCycleBudgetMs`.
const CONTROLLER_SHADOW_BUDGET_MS: u64 = 50;

/// Where plugins come from, and the default bindings.
pub struct Policies {
    pub source: PluginSource,
    pub bindings: Bindings,
    /// The file's preemption budgets, under each ClusterQueue's own annotations.
    pub budgets: wasq::cluster::BudgetDefaults,
    /// What the shadows of [`Policies::live_bindings`] decided.
    pub shadow_log: Arc<ShadowLog>,
    /// Exposure, limits and settings every plugin gets (also those of `QueuePolicy` objects).
    pub options: wasq::wasm::HostOptions,
    /// `QueuePolicy` objects bound over `bindings` (a scenario's, or a cluster's).
    pub objects: Option<Arc<PolicyObjects>>,
}

impl PolicyArgs {
    /// Loads the configuration and the plugin directory; `live` keeps the directory current
    /// (hot reload) instead of reading it once. `runs`: the driver makes runs (`simulate`,
    /// `bench`), so a CPU budget per run applies; a controller has none, and says so if the
    /// file sets one.
    pub fn load(&self, live: bool, runs: bool) -> anyhow::Result<Policies> {
        let config = match &self.config {
            Some(path) => PolicyConfig::load(path)?,
            None => PolicyConfig::default(),
        };
        let mut bindings = config.bindings()?;
        for spec in &self.policies {
            bindings.set(spec)?;
        }
        for spec in &self.shadows {
            bindings.shadow(spec)?;
        }
        let budgets = config.budget_defaults()?;
        let mut options = config.host_options();
        if !runs {
            let limits =
                std::iter::once(&mut options.limits).chain(options.plugin_limits.values_mut());
            for l in limits.filter(|l| l.run_budget_ms.is_some()) {
                l.run_budget_ms = None;
                tracing::warn!(
                    "runBudgetMs applies to simulated runs only; the controller ignores it \
                     (cycleBudgetMs applies everywhere)"
                );
            }
        }
        let fuel = options.limits.fuel.is_some()
            || options.plugin_limits.values().any(|l| l.fuel.is_some());
        let engine = self.cache.engine(fuel)?;
        let dir = self.plugins.clone().or(config.plugins.clone());
        let source = match &dir {
            Some(dir) if live => PluginSource::Live(
                LivePlugins::open(engine, dir, options.clone())
                    .with_context(|| format!("reading plugin directory {}", dir.display()))?,
            ),
            Some(dir) => PluginSource::Fixed(std::sync::Arc::new(
                Registry::load_dir(engine, dir, &options)
                    .with_context(|| format!("reading plugin directory {}", dir.display()))?,
            )),
            None => PluginSource::Fixed(std::sync::Arc::new(Registry::empty(engine))),
        };
        Ok(Policies {
            source,
            bindings,
            budgets,
            shadow_log: Arc::new(ShadowLog::with_cycle_budget(
                config
                    .shadow_cycle_budget_ms
                    .or((!runs).then_some(CONTROLLER_SHADOW_BUDGET_MS))
                    .map(std::time::Duration::from_millis),
            )),
            options,
            objects: None,
        })
    }
}

impl Policies {
    /// Refuses a run whose `bindings` (or a ClusterQueue annotation of `cluster`) name a plugin
    /// file the host could not load: the built-in would decide in its place all through, and
    /// a comparison would compare the built-in with itself. `allow`: run anyway (each such
    /// decision is then a fallback with reason `load-error`).
    ///
    /// # Errors
    /// The first binding to an unloadable file, with the file and the reason.
    pub fn refuse_unloadable(
        &self,
        bindings: &Bindings,
        cluster: &wasq::cluster::Cluster,
        allow: bool,
    ) -> anyhow::Result<()> {
        if allow {
            return Ok(());
        }
        let registry = self.source.snapshot();
        let failed: std::collections::BTreeMap<&str, &wasq::wasm::LoadError> = registry
            .failures()
            .map(|(name, error)| (name.as_str(), error))
            .collect();
        let annotated = cluster.cluster_queues.iter().flat_map(|cq| {
            cq.annotations
                .iter()
                .filter(|(k, _)| k.starts_with(wasq::wasm::ANNOTATION_PREFIX))
                .map(move |(k, v)| (format!("ClusterQueue {} annotation {k}", cq.name), v))
        });
        let shadows = bindings
            .shadows
            .iter()
            .map(|(kind, name)| (format!("--shadow {kind}"), name));
        let bound = bindings
            .names
            .iter()
            .map(|(kind, name)| (format!("--policy {kind}"), name))
            .chain(shadows)
            .chain(annotated);
        for (by, name) in bound {
            if let Some(error) = failed.get(name.trim()) {
                anyhow::bail!(
                    "{by} binds plugin `{}`, which cannot be loaded: {error}\n(pass \
                     --allow-fallback to run with the built-in policy deciding in its place)",
                    name.trim()
                );
            }
        }
        Ok(())
    }

    pub fn live_bindings(&self) -> LiveBindings {
        let live = LiveBindings::recording(
            self.source.clone(),
            self.bindings.clone(),
            self.shadow_log.clone(),
        );
        match &self.objects {
            Some(objects) => live.with_objects(objects.clone()),
            None => live,
        }
    }

    /// Binds the `QueuePolicy` objects of a scenario over the bindings ([`Policies::scenario_objects`]).
    pub fn bind_scenario_objects(
        &mut self,
        policies: &[QueuePolicy],
        allow: bool,
    ) -> anyhow::Result<()> {
        self.objects = self.scenario_objects(policies, allow)?;
        Ok(())
    }

    /// The `QueuePolicy` objects of a scenario, modules read from their `path`; refused when
    /// one has no module live, unless `allow` (its ClusterQueues then keep the next binding
    /// down the precedence). `None` when there are none.
    pub fn scenario_objects(
        &self,
        policies: &[QueuePolicy],
        allow: bool,
    ) -> anyhow::Result<Option<Arc<PolicyObjects>>> {
        if policies.is_empty() {
            return Ok(None);
        }
        let objects = self.empty_objects();
        let mut fetched = Vec::new();
        for p in policies {
            let name = p.metadata.name.as_deref().unwrap_or_default();
            let Some(path) = &p.spec.module.path else {
                anyhow::bail!(
                    "QueuePolicy {name}: spec.module: the simulator reads modules from `path` \
                     only (a ConfigMap or an OCI artifact is the controller's)"
                );
            };
            fetched.push((p.clone(), read_module(std::path::Path::new(path))));
        }
        objects.update(fetched);
        for (name, status) in objects.statuses() {
            if !status.ready.ok && !allow {
                anyhow::bail!(
                    "QueuePolicy {name}: {} ({})\n(pass --allow-fallback to run with the next \
                     binding deciding in its place)",
                    status.ready.message,
                    status.ready.reason
                );
            }
        }
        Ok(Some(objects))
    }

    /// No `QueuePolicy` objects yet, compiled with the plugins' engine and options.
    fn empty_objects(&self) -> Arc<PolicyObjects> {
        PolicyObjects::new(
            self.source.snapshot().engine().clone(),
            self.options.clone(),
        )
    }

    /// An empty set of `QueuePolicy` objects bound over the bindings, for the controller to
    /// keep in step with its cluster.
    pub fn cluster_objects(&mut self) -> Arc<PolicyObjects> {
        let objects = self.empty_objects();
        self.objects = Some(objects.clone());
        objects
    }

    /// The bindings with comma-separated `EXT=NAME` pairs applied on top (`--compare A B`).
    pub fn bindings_with(&self, specs: &str) -> anyhow::Result<Bindings> {
        let mut bindings = self.bindings.clone();
        for spec in specs.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            bindings
                .set(spec)
                .with_context(|| format!("binding `{specs}`"))?;
        }
        Ok(bindings)
    }

    /// `bindings` over fresh instances of the current plugins: one run's plugin state and
    /// health (a quarantine, guest memory) do not carry over to the next run.
    pub fn fresh_bindings(&self, bindings: Bindings) -> LiveBindings {
        let source = PluginSource::Fixed(std::sync::Arc::new(self.source.snapshot().fresh()));
        let live = LiveBindings::new(source, bindings);
        match &self.objects {
            Some(objects) => live.with_objects(objects.fresh()),
            None => live,
        }
    }

    /// Starts watching the directory when the source is live.
    pub fn watch(&self) -> anyhow::Result<Option<WatchHandle>> {
        match &self.source {
            PluginSource::Live(live) => Ok(Some(live.watch()?)),
            PluginSource::Fixed(_) => Ok(None),
        }
    }
}

impl Policies {
    /// Loads scenario files with this configuration applied: the file's preemption budgets
    /// under each ClusterQueue's own annotations. Every simulator driver loads through here;
    /// the controller's hook ([`Policies::configure_hook`]) applies them to every cluster it
    /// rebuilds.
    pub fn load_scenario(
        &self,
        paths: &[std::path::PathBuf],
        cost_labels: &[String],
    ) -> anyhow::Result<wasq::sim::Scenario> {
        let mut scenario =
            wasq::sim::Scenario::load_with(paths, cost_labels).context("loading manifests")?;
        scenario.cluster.apply_budget_defaults(&self.budgets);
        Ok(scenario)
    }

    /// The controller's hook: installs the bindings after every rebuild and whenever the
    /// plugins change (it runs before every cycle and does nothing when nothing changed).
    pub fn configure_hook(&self) -> wasq::k8s::sync::core::Configure {
        let live = std::sync::Mutex::new(self.live_bindings());
        let budgets = self.budgets.clone();
        std::sync::Arc::new(move |scheduler: &mut wasq::scheduler::Scheduler| {
            scheduler.cluster.apply_budget_defaults(&budgets);
            let mut live = live.lock().unwrap_or_else(|e| e.into_inner());
            match live.refresh(&scheduler.cluster) {
                None => {}
                Some(Ok((default, per_cq))) => scheduler.install_policies(default, per_cq),
                // A bad ClusterQueue annotation must not stop the controller.
                Some(Err(e)) => {
                    tracing::error!(error = %e, "policy binding refused; the previous policies stay")
                }
            }
        })
    }
}
