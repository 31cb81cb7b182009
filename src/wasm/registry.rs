//! The plugins of one directory and how they are bound to the extension points: a default
//! binding per extension (`--policy EXT=NAME`) and per-ClusterQueue overrides through the
//! annotations `policy.wasq.dev/ordering`, `policy.wasq.dev/preemption`,
//! `policy.wasq.dev/flavor-assignment`, `policy.wasq.dev/placement` and
//! `policy.wasq.dev/dispatch`.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::dispatch::WasmDispatch;
use super::engine::WasmEngine;
use super::language::Language;
use super::limits::{Limits, LimitsPatch};
use super::load::{LoadError, PluginKind, load_bytes, plugin_files, plugin_name};
use super::objects::ObjectPolicy;
use super::plugin::{Exposure, Plugin, SmokeFailure};
use super::policies::{WasmFlavors, WasmOrdering, WasmPlacement, WasmPreemption};
use crate::api::policy::PolicyMode;
use crate::cluster::{Cluster, CqId};
use crate::policy::dispatch::{DispatchAnswer, DispatchPolicy, DispatchRequest};
use crate::policy::shadow::{ShadowLog, Shadows};
use crate::policy::{
    FlavorAssignmentPolicy, FlavorChoiceRequest, HeadEntry, OrderingPolicy, PlacementAnswer,
    PlacementChoiceRequest, PlacementPolicy, PolicyContext, PolicyError, PolicyRef, PolicySet,
    PreemptionPolicy, PreemptionRequest, QueuedWorkload, VictimSet,
};
use crate::queue::SortKey;

/// The name that selects the built-in policy.
pub const BUILTIN: &str = "builtin";
/// Prefix of the per-ClusterQueue binding annotations.
pub const ANNOTATION_PREFIX: &str = "policy.wasq.dev/";

/// Which plugin decides each extension point (`builtin` or a plugin name), and which shadow it
/// (asked the same questions, never acted on: [`crate::policy::shadow`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bindings {
    pub names: BTreeMap<PluginKind, String>,
    pub shadows: Vec<(PluginKind, String)>,
}

impl Default for Bindings {
    fn default() -> Bindings {
        Bindings {
            names: PluginKind::ALL
                .into_iter()
                .map(|k| (k, BUILTIN.to_string()))
                .collect(),
            shadows: Vec::new(),
        }
    }
}

/// `EXT=NAME`, read.
fn parse_spec(spec: &str) -> Result<(PluginKind, String), BindError> {
    let (ext, name) = spec
        .split_once('=')
        .ok_or_else(|| BindError::Syntax(spec.to_string()))?;
    let kind = PluginKind::parse(ext.trim())
        .ok_or_else(|| BindError::UnknownExtension(ext.trim().to_string()))?;
    Ok((kind, name.trim().to_string()))
}

impl Bindings {
    /// Applies one `EXT=NAME` setting.
    pub fn set(&mut self, spec: &str) -> Result<(), BindError> {
        let (kind, name) = parse_spec(spec)?;
        self.names.insert(kind, name);
        Ok(())
    }

    /// Adds one `EXT=NAME` shadow.
    pub fn shadow(&mut self, spec: &str) -> Result<(), BindError> {
        let shadow = parse_spec(spec)?;
        if !self.shadows.contains(&shadow) {
            self.shadows.push(shadow);
        }
        Ok(())
    }

    pub fn get(&self, kind: PluginKind) -> &str {
        self.names.get(&kind).map_or(BUILTIN, String::as_str)
    }
}

/// Why a binding cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BindError {
    #[error(
        "`{0}` is not EXT=NAME (EXT is ordering, preemption, flavor-assignment, placement or \
         dispatch)"
    )]
    Syntax(String),
    #[error(
        "unknown extension `{0}` (expected ordering, preemption, flavor-assignment, placement or \
         dispatch)"
    )]
    UnknownExtension(String),
    #[error(
        "{context}: {kind} cannot be shadowed (only ordering, preemption, flavor-assignment and placement can)"
    )]
    NoShadow { context: String, kind: PluginKind },
    #[error("{context}: no plugin named `{name}` in {dir} (available: {available})")]
    UnknownPlugin {
        context: String,
        name: String,
        dir: String,
        available: String,
    },
    #[error("{context}: plugin `{name}` implements {actual}, not {wanted}")]
    WrongKind {
        context: String,
        name: String,
        actual: PluginKind,
        wanted: PluginKind,
    },
}

/// What a binding resolves to.
enum Resolved {
    Builtin,
    Plugin(Arc<Plugin>),
    /// The file exists but was refused: every call falls back to the built-in, counted as a
    /// load error, until a good file replaces it.
    Unloadable(LoadError),
}

/// Settings that apply to every plugin of a registry.
#[derive(Debug, Clone, Default)]
pub struct HostOptions {
    /// Limits for every plugin, over its language's defaults (`limits` in the configuration).
    pub limits: LimitsPatch,
    /// Per-plugin limits over those, by plugin name (`pluginLimits`).
    pub plugin_limits: HashMap<String, LimitsPatch>,
    pub exposure: Exposure,
    /// Per-plugin label and annotation keys, added to `exposure` for that plugin, by plugin
    /// name (`pluginMetadata` in the configuration).
    pub plugin_exposure: HashMap<String, Exposure>,
    /// Per-plugin settings, by plugin name.
    pub settings: HashMap<String, Vec<(String, String)>>,
}

impl HostOptions {
    /// The limits of plugin `name` written in `language`: its language's defaults, then
    /// `limits`, then its own `pluginLimits`, field by field.
    pub fn limits_for(&self, name: &str, language: Language) -> Limits {
        let global = self.limits.over(language.default_limits());
        match self.plugin_limits.get(name) {
            Some(own) => own.over(global),
            None => global,
        }
    }
}

/// The plugins found in a directory: loaded ones, and the files that were refused. Cloning is
/// cheap (plugins are shared), which is how a reload builds the next version.
#[derive(Clone)]
pub struct Registry {
    dir: PathBuf,
    engine: WasmEngine,
    plugins: BTreeMap<String, Arc<Plugin>>,
    failed: BTreeMap<String, LoadError>,
    /// Plugins whose file was deleted while running: bindings to them fall back to the built-in.
    removed: BTreeSet<String>,
}

/// Compiles, validates (world, imports) and smoke-tests one plugin file's bytes.
pub fn make_plugin(
    engine: &WasmEngine,
    path: &Path,
    bytes: &[u8],
    options: &HostOptions,
) -> Result<Arc<Plugin>, LoadError> {
    make_named_plugin(engine, &plugin_name(path), path, bytes, options)
}

/// [`make_plugin`] under a name of the caller's (a `QueuePolicy`'s), `origin` saying in errors
/// where the bytes came from.
pub fn make_named_plugin(
    engine: &WasmEngine,
    name: &str,
    path: &Path,
    bytes: &[u8],
    options: &HostOptions,
) -> Result<Arc<Plugin>, LoadError> {
    let loaded = load_bytes(engine, path, name, bytes)?;
    let limits = options.limits_for(name, loaded.info.language);
    let settings = options.settings.get(name).cloned().unwrap_or_default();
    let mut plugin = Plugin::new(
        loaded,
        engine.clone(),
        limits,
        options.exposure.with(options.plugin_exposure.get(name)),
        settings,
    );
    plugin.smoke_test().map_err(|e| match e {
        SmokeFailure::Instantiate(e) => LoadError::Instantiate {
            path: path.to_path_buf(),
            message: e.to_string(),
        },
        SmokeFailure::EmptyBatch(e) => LoadError::SmokeTest {
            path: path.to_path_buf(),
            message: e.to_string(),
        },
    })?;
    Ok(Arc::new(plugin))
}

impl Registry {
    /// An empty registry (only `builtin` can be bound).
    pub fn empty(engine: WasmEngine) -> Registry {
        Registry {
            dir: PathBuf::new(),
            engine,
            plugins: BTreeMap::new(),
            failed: BTreeMap::new(),
            removed: BTreeSet::new(),
        }
    }

    /// Loads every `*.wasm` file of `dir`. A file that fails to load is recorded, not fatal:
    /// binding to it later reports why.
    pub fn load_dir(
        engine: WasmEngine,
        dir: &Path,
        options: &HostOptions,
    ) -> std::io::Result<Registry> {
        let mut registry = Registry {
            dir: dir.to_path_buf(),
            ..Registry::empty(engine)
        };
        for path in plugin_files(dir)? {
            registry.load(&path, options);
        }
        Ok(registry)
    }

    /// Loads (or reloads) one file.
    pub fn load(&mut self, path: &Path, options: &HostOptions) {
        let name = plugin_name(path);
        let result = std::fs::read(path)
            .map_err(|e| LoadError::Io {
                path: path.to_path_buf(),
                message: e.to_string(),
            })
            .and_then(|bytes| make_plugin(&self.engine, path, &bytes, options));
        match result {
            Ok(plugin) => {
                let info = plugin.info();
                tracing::info!(
                    plugin = %name,
                    digest = %info.digest,
                    kind = %info.kind,
                    size = info.size,
                    compile_ms = info.compile_ms,
                    "plugin loaded"
                );
                self.insert(plugin);
            }
            Err(error) => {
                tracing::warn!(plugin = %name, %error, "plugin refused");
                self.plugins.remove(&name);
                self.failed.insert(name, error);
            }
        }
    }

    /// A copy whose plugins start afresh (instances, health), sharing compiled code.
    pub fn fresh(&self) -> Registry {
        Registry {
            plugins: self
                .plugins
                .iter()
                .map(|(n, p)| (n.clone(), Arc::new(p.fresh())))
                .collect(),
            ..self.clone()
        }
    }

    /// Puts a validated plugin in place of any previous version.
    pub fn insert(&mut self, plugin: Arc<Plugin>) {
        let name = plugin.info().name.clone();
        self.failed.remove(&name);
        self.removed.remove(&name);
        self.plugins.insert(name, plugin);
    }

    /// Records a refused file. A previously loaded version stays.
    pub fn reject(&mut self, name: &str, error: LoadError) {
        if !self.plugins.contains_key(name) {
            self.failed.insert(name.to_string(), error);
        }
    }

    /// Forgets a plugin whose file is gone: its bindings fall back to the built-in.
    pub fn remove(&mut self, name: &str) {
        if self.plugins.remove(name).is_some() || self.failed.remove(name).is_some() {
            self.removed.insert(name.to_string());
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn engine(&self) -> &WasmEngine {
        &self.engine
    }

    pub fn plugins(&self) -> impl Iterator<Item = &Arc<Plugin>> {
        self.plugins.values()
    }

    pub fn failures(&self) -> impl Iterator<Item = (&String, &LoadError)> {
        self.failed.iter()
    }

    pub fn get(&self, name: &str) -> Option<&Arc<Plugin>> {
        self.plugins.get(name)
    }

    fn resolve(&self, kind: PluginKind, name: &str, context: &str) -> Result<Resolved, BindError> {
        if name == BUILTIN {
            return Ok(Resolved::Builtin);
        }
        if let Some(error) = self.failed.get(name) {
            return Ok(Resolved::Unloadable(error.clone()));
        }
        if self.removed.contains(name) {
            tracing::warn!(
                plugin = name,
                context,
                "plugin file removed; the built-in policy decides"
            );
            return Ok(Resolved::Builtin);
        }
        let Some(plugin) = self.plugins.get(name) else {
            let mut available: Vec<&str> = self
                .plugins
                .iter()
                .filter(|(_, p)| p.kind() == kind)
                .map(|(n, _)| n.as_str())
                .collect();
            available.insert(0, BUILTIN);
            return Err(BindError::UnknownPlugin {
                context: context.to_string(),
                name: name.to_string(),
                dir: if self.dir.as_os_str().is_empty() {
                    "(no --plugins directory)".to_string()
                } else {
                    self.dir.display().to_string()
                },
                available: available.join(", "),
            });
        };
        if plugin.kind() != kind {
            return Err(BindError::WrongKind {
                context: context.to_string(),
                name: name.to_string(),
                actual: plugin.kind(),
                wanted: kind,
            });
        }
        Ok(Resolved::Plugin(plugin.clone()))
    }

    /// The policies `bindings` select, built-in where they say `builtin`. A name with no file
    /// in the directory, or a plugin of another kind, is an error; a file that was refused at
    /// load is bound anyway and every call falls back to the built-in (reason `load-error`).
    pub fn policy_set(&self, bindings: &Bindings, context: &str) -> Result<PolicySet, BindError> {
        let mut set = PolicySet::builtin();
        for kind in PluginKind::ALL {
            let name = bindings.get(kind);
            match self.policy(kind, name, context)? {
                None => {}
                Some(AnyPolicy::Ordering(p)) => set.ordering = p,
                Some(AnyPolicy::Preemption(p)) => set.preemption = p,
                Some(AnyPolicy::Flavors(p)) => set.flavors = p,
                Some(AnyPolicy::Placement(p)) => set.placement = p,
                Some(AnyPolicy::Dispatch(p)) => set.dispatch = Some(p),
            }
        }
        Ok(set)
    }

    /// The shadows `bindings` name, recording into `log`; refused as [`Registry::policy_set`]
    /// refuses a binding.
    pub fn shadows(&self, bindings: &Bindings, log: &Arc<ShadowLog>) -> Result<Shadows, BindError> {
        let mut shadows = Shadows {
            log: log.clone(),
            ..Shadows::default()
        };
        for (kind, name) in &bindings.shadows {
            if *kind == PluginKind::Dispatch {
                return Err(BindError::NoShadow {
                    context: "--shadow".into(),
                    kind: *kind,
                });
            }
            let policy = match self.policy(*kind, name, "--shadow")? {
                Some(p) => p,
                None => AnyPolicy::builtin(*kind),
            };
            match policy {
                AnyPolicy::Ordering(p) => shadows.ordering.push(p),
                AnyPolicy::Preemption(p) => shadows.preemption.push(p),
                AnyPolicy::Flavors(p) => shadows.flavors.push(p),
                AnyPolicy::Placement(p) => shadows.placement.push(p),
                // Refused above.
                AnyPolicy::Dispatch(_) => {}
            }
        }
        Ok(shadows)
    }

    /// The policy `name` of `kind`: `None` for the built-in.
    fn policy(
        &self,
        kind: PluginKind,
        name: &str,
        context: &str,
    ) -> Result<Option<AnyPolicy>, BindError> {
        Ok(match self.resolve(kind, name, context)? {
            Resolved::Builtin => None,
            Resolved::Plugin(plugin) => Some(match kind {
                PluginKind::Ordering => AnyPolicy::Ordering(Arc::new(WasmOrdering::new(plugin))),
                PluginKind::Preemption => {
                    AnyPolicy::Preemption(Arc::new(WasmPreemption::new(plugin)))
                }
                PluginKind::FlavorAssignment => AnyPolicy::Flavors(Arc::new(WasmFlavors(plugin))),
                PluginKind::Placement => AnyPolicy::Placement(Arc::new(WasmPlacement(plugin))),
                PluginKind::Dispatch => AnyPolicy::Dispatch(Arc::new(WasmDispatch(plugin))),
            }),
            Resolved::Unloadable(error) => {
                tracing::warn!(plugin = name, %error, extension = %kind, context, "plugin cannot be loaded; the built-in policy decides in its place");
                let u = Arc::new(Unloadable {
                    name: name.to_string(),
                    error: error.to_string(),
                });
                Some(match kind {
                    PluginKind::Ordering => AnyPolicy::Ordering(u),
                    PluginKind::Preemption => AnyPolicy::Preemption(u),
                    PluginKind::FlavorAssignment => AnyPolicy::Flavors(u),
                    PluginKind::Placement => AnyPolicy::Placement(u),
                    PluginKind::Dispatch => AnyPolicy::Dispatch(u),
                })
            }
        })
    }

    /// The default policy set, and one per ClusterQueue whose annotations override it. Only
    /// the default binding can fail; a ClusterQueue whose annotation cannot be bound is logged
    /// and keeps the default.
    /// Every set carries the shadows of `defaults` (their figures then go nowhere: see
    /// [`Registry::bind_recording`]).
    pub fn bind(
        &self,
        cluster: &Cluster,
        defaults: &Bindings,
    ) -> Result<(PolicySet, Vec<(CqId, PolicySet)>), BindError> {
        self.bind_recording(cluster, defaults, &Arc::default())
    }

    /// [`Registry::bind`], the shadows recording into `log`.
    pub fn bind_recording(
        &self,
        cluster: &Cluster,
        defaults: &Bindings,
        log: &Arc<ShadowLog>,
    ) -> Result<(PolicySet, Vec<(CqId, PolicySet)>), BindError> {
        self.bind_with(cluster, defaults, &[], log)
    }

    /// [`Registry::bind_recording`] with the live `QueuePolicy` objects too, in the precedence
    /// [`super::objects`] documents: a ClusterQueue's annotation, then an `Enforce` object
    /// selecting it, then one selecting every ClusterQueue, then `defaults`. `Shadow` objects
    /// add shadows where they apply.
    pub fn bind_with(
        &self,
        cluster: &Cluster,
        defaults: &Bindings,
        objects: &[ObjectPolicy],
        log: &Arc<ShadowLog>,
    ) -> Result<(PolicySet, Vec<(CqId, PolicySet)>), BindError> {
        let (this, defaults) = if objects.is_empty() {
            (Cow::Borrowed(self), Cow::Borrowed(defaults))
        } else {
            let mut registry = self.clone();
            let mut d = defaults.clone();
            let mut decided = BTreeSet::new();
            for o in objects {
                registry.plugins.insert(o.binding_name(), o.plugin.clone());
            }
            for o in objects.iter().filter(|o| o.is_global()) {
                match o.mode {
                    PolicyMode::Enforce if decided.insert(o.kind) => {
                        d.names.insert(o.kind, o.binding_name());
                    }
                    PolicyMode::Enforce => tracing::warn!(
                        policy = %o.name,
                        extension = %o.kind,
                        "another QueuePolicy for every ClusterQueue decides this extension (the first by name)"
                    ),
                    PolicyMode::Shadow if o.kind == PluginKind::Dispatch => {
                        tracing::warn!(policy = %o.name, "a dispatch policy cannot be shadowed; ignored")
                    }
                    PolicyMode::Shadow => d.shadows.push((o.kind, o.binding_name())),
                }
            }
            (Cow::Owned(registry), Cow::Owned(d))
        };
        let defaults: &Bindings = &defaults;
        let scoped: Vec<&ObjectPolicy> = objects.iter().filter(|o| !o.is_global()).collect();
        let shadows = this.shadows(defaults, log)?;
        let mut default_set = this.policy_set(defaults, "--policy")?;
        default_set.shadows = shadows.clone();
        let mut per_cq = Vec::new();
        for cq in &cluster.cluster_queues {
            let mut own = defaults.clone();
            let mut overridden = false;
            let mut decided = BTreeSet::new();
            for o in scoped.iter().filter(|o| o.selects(&cq.labels)) {
                match o.mode {
                    PolicyMode::Enforce if decided.insert(o.kind) => {
                        own.names.insert(o.kind, o.binding_name());
                    }
                    PolicyMode::Enforce => continue,
                    PolicyMode::Shadow if o.kind == PluginKind::Dispatch => continue,
                    PolicyMode::Shadow => own.shadows.push((o.kind, o.binding_name())),
                }
                overridden = true;
            }
            for kind in PluginKind::ALL {
                let key = format!("{ANNOTATION_PREFIX}{kind}");
                if let Some(name) = cq.annotations.get(&key) {
                    own.names.insert(kind, name.trim().to_string());
                    overridden = true;
                }
            }
            if overridden {
                let context = format!("ClusterQueue {} annotation {ANNOTATION_PREFIX}*", cq.name);
                // One bad annotation must not take plugins away from every other queue: that
                // queue keeps the default binding.
                let set = this.policy_set(&own, &context).and_then(|mut set| {
                    set.shadows = if own.shadows == defaults.shadows {
                        shadows.clone()
                    } else {
                        this.shadows(&own, log)?
                    };
                    Ok(set)
                });
                match set {
                    Ok(set) => per_cq.push((cq.id, set)),
                    Err(error) => {
                        tracing::error!(%error, "ClusterQueue binding refused; it uses the default binding")
                    }
                }
            }
        }
        Ok((default_set, per_cq))
    }
}

/// A policy of one extension point.
enum AnyPolicy {
    Ordering(Arc<dyn OrderingPolicy>),
    Preemption(Arc<dyn PreemptionPolicy>),
    Flavors(Arc<dyn FlavorAssignmentPolicy>),
    Placement(Arc<dyn PlacementPolicy>),
    Dispatch(Arc<dyn DispatchPolicy>),
}

impl AnyPolicy {
    fn builtin(kind: PluginKind) -> AnyPolicy {
        let set = PolicySet::builtin();
        match kind {
            PluginKind::Ordering => AnyPolicy::Ordering(set.ordering),
            PluginKind::Preemption => AnyPolicy::Preemption(set.preemption),
            PluginKind::FlavorAssignment => AnyPolicy::Flavors(set.flavors),
            PluginKind::Placement => AnyPolicy::Placement(set.placement),
            // Which dispatcher is built in is the Configuration's (`dispatch::builtin`).
            PluginKind::Dispatch => {
                AnyPolicy::Dispatch(Arc::new(crate::policy::dispatch::AllAtOnce))
            }
        }
    }
}

/// A bound plugin whose file was refused: every call fails with the load error.
struct Unloadable {
    name: String,
    error: String,
}

impl Unloadable {
    fn fail<T>(&self) -> Result<T, PolicyError> {
        Err(PolicyError::Unavailable(self.error.clone()))
    }

    fn policy_ref(&self) -> PolicyRef {
        PolicyRef {
            name: self.name.as_str().into(),
            digest: "unloadable".into(),
        }
    }
}

impl OrderingPolicy for Unloadable {
    fn id(&self) -> PolicyRef {
        self.policy_ref()
    }

    fn sort_keys(
        &self,
        _: &PolicyContext<'_>,
        _: &[QueuedWorkload],
    ) -> Result<Vec<SortKey>, PolicyError> {
        self.fail()
    }

    fn order_heads(
        &self,
        _: &PolicyContext<'_>,
        _: &[HeadEntry],
    ) -> Result<Vec<usize>, PolicyError> {
        self.fail()
    }
}

impl PreemptionPolicy for Unloadable {
    fn id(&self) -> PolicyRef {
        self.policy_ref()
    }

    fn select_victims(&self, _: &PreemptionRequest<'_>) -> Result<Option<VictimSet>, PolicyError> {
        self.fail()
    }
}

impl FlavorAssignmentPolicy for Unloadable {
    fn id(&self) -> PolicyRef {
        self.policy_ref()
    }

    fn choose_flavor(&self, _: &FlavorChoiceRequest<'_>) -> Result<Option<usize>, PolicyError> {
        self.fail()
    }
}

impl PlacementPolicy for Unloadable {
    fn id(&self) -> PolicyRef {
        self.policy_ref()
    }

    fn place(&self, _: &PlacementChoiceRequest<'_>) -> Result<PlacementAnswer, PolicyError> {
        self.fail()
    }
}

impl DispatchPolicy for Unloadable {
    fn id(&self) -> PolicyRef {
        self.policy_ref()
    }

    fn dispatch(&self, _: &DispatchRequest) -> Result<DispatchAnswer, PolicyError> {
        self.fail()
    }
}
