//! Policies bound through `QueuePolicy` objects (`policies.wasq.dev/v1alpha1`): the module each
//! object names, verified (pinned digest, extension) and compiled once per content, the last
//! good one kept when a newer one is refused, and what each object's status should say.
//!
//! Drivers fetch the modules (the controller: ConfigMaps, files, OCI artifacts; the simulator:
//! files) and hand the whole set of objects to [`PolicyObjects::update`], off the scheduling
//! path; the next set of [`ObjectPolicy`] is published atomically and bound between cycles
//! ([`super::LiveBindings`]), so a change of module or of `mode` takes effect from one cycle
//! to the next with the guarantees of a hot reload.
//!
//! Precedence, for one ClusterQueue and one extension point: its `policy.wasq.dev/<ext>`
//! annotation; else an `Enforce` object whose `clusterQueueSelector` selects it; else an
//! `Enforce` object without a selector (which also decides what the default binding decides,
//! such as the order of a cycle's heads); else `--policy` (or the policy configuration); else the
//! built-in. Among objects at the same level, the first by name wins. `Shadow` objects add
//! shadows to the ClusterQueues they select.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::engine::WasmEngine;
use super::limits::LimitsPatch;
use super::load::PluginKind;
use super::oci::sha256_digest;
use super::plugin::Plugin;
use super::registry::{HostOptions, make_named_plugin};
use crate::api::policy::{ExtensionPoint, PolicyLimits, PolicyMode, QueuePolicy, QueuePolicySpec};

impl PluginKind {
    pub fn of(extension: ExtensionPoint) -> PluginKind {
        match extension {
            ExtensionPoint::Ordering => PluginKind::Ordering,
            ExtensionPoint::Preemption => PluginKind::Preemption,
            ExtensionPoint::FlavorAssignment => PluginKind::FlavorAssignment,
            ExtensionPoint::Placement => PluginKind::Placement,
            ExtensionPoint::Dispatch => PluginKind::Dispatch,
        }
    }
}

/// A live `QueuePolicy`: what it applies to and its module.
#[derive(Clone)]
pub struct ObjectPolicy {
    pub name: String,
    pub kind: PluginKind,
    pub mode: PolicyMode,
    /// `None` (or an empty selector): every ClusterQueue.
    pub selector: Option<LabelSelector>,
    pub plugin: Arc<Plugin>,
}

impl ObjectPolicy {
    /// Whether it applies to every ClusterQueue.
    pub fn is_global(&self) -> bool {
        self.selector.as_ref().is_none_or(|s| {
            s.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
                && s.match_expressions.as_ref().is_none_or(Vec::is_empty)
        })
    }

    /// Whether it applies to a ClusterQueue with `labels`.
    pub fn selects(&self, labels: &BTreeMap<String, String>) -> bool {
        selects(self.selector.as_ref(), labels)
    }

    /// The name bindings use for it (a plugin file's stem cannot contain `/`).
    pub fn binding_name(&self) -> String {
        format!("queuepolicy/{}", self.name)
    }
}

/// Whether a `clusterQueueSelector` (absent: every ClusterQueue) selects a ClusterQueue with
/// `labels`.
pub fn selects(selector: Option<&LabelSelector>, labels: &BTreeMap<String, String>) -> bool {
    selector.is_none_or(|s| crate::cluster::matching::selector_matches(s, labels))
}

/// Why a module could not be fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchFailure {
    /// The ConfigMap, its key or the file does not exist (yet).
    ModuleNotFound,
    /// The OCI registry refused or could not be reached.
    PullFailed,
}

impl FetchFailure {
    pub fn reason(self) -> &'static str {
        match self {
            FetchFailure::ModuleNotFound => "ModuleNotFound",
            FetchFailure::PullFailed => "PullFailed",
        }
    }
}

/// What a driver fetched for one object.
#[derive(Debug, Clone)]
pub enum Fetched {
    /// The module's bytes, and where they came from (for messages).
    Module { bytes: Vec<u8>, origin: String },
    Failed {
        failure: FetchFailure,
        message: String,
    },
}

/// A condition as the status writes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Verdict {
    pub ok: bool,
    pub reason: &'static str,
    pub message: String,
}

impl Verdict {
    fn yes(reason: &'static str, message: String) -> Verdict {
        Verdict {
            ok: true,
            reason,
            message,
        }
    }

    fn no(reason: &'static str, message: String) -> Verdict {
        Verdict {
            ok: false,
            reason,
            message,
        }
    }
}

/// What one object's status should say, besides the figures its plugin and the shadow log keep.
#[derive(Clone)]
pub struct ObjectStatus {
    /// The generation these verdicts are about.
    pub generation: Option<i64>,
    pub loaded: Verdict,
    pub ready: Verdict,
    /// The module live for it, its SHA-256, and since when.
    pub live: Option<(Arc<Plugin>, String, jiff::Timestamp)>,
}

/// What a module is compiled and checked against: its digest, the object's extension, limits
/// and settings.
type Content = (
    String,
    ExtensionPoint,
    Option<PolicyLimits>,
    BTreeMap<String, String>,
);

/// The last good module of an object.
#[derive(Clone)]
struct Good {
    plugin: Arc<Plugin>,
    digest: String,
    since: jiff::Timestamp,
    /// What it was compiled from.
    content: Content,
}

#[derive(Clone)]
struct Entry {
    spec: QueuePolicySpec,
    generation: Option<i64>,
    good: Option<Good>,
    loaded: Verdict,
    /// The content last refused and why: not compiled again.
    refused: Option<(Content, Verdict)>,
}

/// The `QueuePolicy` objects of a cluster (or a scenario) and their modules, kept current.
pub struct PolicyObjects {
    engine: WasmEngine,
    options: HostOptions,
    entries: Mutex<BTreeMap<String, Entry>>,
    current: ArcSwap<Vec<ObjectPolicy>>,
    generation: AtomicU64,
}

impl PolicyObjects {
    /// `options`: exposure and defaults for every module (each object's own limits and
    /// settings go over them).
    pub fn new(engine: WasmEngine, options: HostOptions) -> Arc<PolicyObjects> {
        Arc::new(PolicyObjects {
            engine,
            options,
            entries: Mutex::new(BTreeMap::new()),
            current: ArcSwap::from_pointee(Vec::new()),
            generation: AtomicU64::new(0),
        })
    }

    /// The live objects, by name.
    pub fn snapshot(&self) -> Arc<Vec<ObjectPolicy>> {
        self.current.load_full()
    }

    /// Increases whenever what is bound may have changed.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the whole set of objects, each with what its source gave; objects not in it are
    /// gone. Compiles what changed (on the caller's thread: call it off the scheduling path)
    /// and publishes the next set when anything bound changed.
    pub fn update(&self, objects: Vec<(QueuePolicy, Fetched)>) {
        let mut entries = self.lock();
        let mut next = BTreeMap::new();
        for (object, fetched) in objects {
            let Some(name) = object.metadata.name.clone() else {
                continue;
            };
            let old = entries.remove(&name);
            let entry = self.settle(&name, object, fetched, old);
            next.insert(name, entry);
        }
        *entries = next;
        let live = live_of(&entries);
        let old = self.snapshot();
        let same = old.len() == live.len()
            && old.iter().zip(&live).all(|(a, b)| {
                a.name == b.name
                    && a.kind == b.kind
                    && a.mode == b.mode
                    && a.selector == b.selector
                    && Arc::ptr_eq(&a.plugin, &b.plugin)
            });
        if !same {
            self.current.store(Arc::new(live));
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// One object's next state.
    fn settle(
        &self,
        name: &str,
        object: QueuePolicy,
        fetched: Fetched,
        old: Option<Entry>,
    ) -> Entry {
        let spec = object.spec;
        let (mut good, mut refused) = match old {
            Some(e) => (e.good, e.refused),
            None => (None, None),
        };
        let loaded = match fetched {
            Fetched::Failed { failure, message } => {
                tracing::warn!(policy = name, reason = failure.reason(), %message, "policy module not fetched; the last good one stays");
                Verdict::no(failure.reason(), message)
            }
            Fetched::Module { bytes, origin } => {
                let digest = sha256_digest(&bytes);
                let content: Content = (
                    digest.clone(),
                    spec.extension,
                    spec.limits,
                    spec.settings.clone(),
                );
                if let Some(pin) = spec.digest.as_deref().filter(|pin| *pin != digest) {
                    Verdict::no(
                        "DigestMismatch",
                        format!(
                            "the module from {origin} has digest {digest}; spec.digest pins {pin}"
                        ),
                    )
                } else if good.as_ref().is_some_and(|g| g.content == content) {
                    Verdict::yes("Loaded", format!("module {digest} from {origin}"))
                } else if let Some((_, verdict)) = refused.as_ref().filter(|(c, _)| *c == content) {
                    verdict.clone()
                } else {
                    match self.compile(name, &spec, &origin, &bytes) {
                        Ok(plugin) => {
                            tracing::info!(policy = name, %digest, %origin, "policy module loaded");
                            refused = None;
                            good = Some(Good {
                                plugin,
                                digest: digest.clone(),
                                since: jiff::Timestamp::now(),
                                content,
                            });
                            Verdict::yes("Loaded", format!("module {digest} from {origin}"))
                        }
                        Err((reason, message)) => {
                            tracing::warn!(policy = name, %digest, %origin, %message, "policy module refused; the last good one stays");
                            let verdict = Verdict::no(reason, message);
                            refused = Some((content, verdict.clone()));
                            verdict
                        }
                    }
                }
            }
        };
        // A module of another extension cannot decide this one (the extension was edited).
        if good
            .as_ref()
            .is_some_and(|g| g.plugin.kind() != PluginKind::of(spec.extension))
        {
            good = None;
        }
        // What a pin forbids does not run, even if it ran before the pin.
        if let (Some(pin), Some(g)) = (spec.digest.as_deref(), good.as_ref())
            && g.digest != pin
        {
            good = None;
        }
        Entry {
            spec,
            generation: object.metadata.generation,
            good,
            loaded,
            refused,
        }
    }

    /// Compiles, validates and smoke-tests one object's module under its limits and settings.
    fn compile(
        &self,
        name: &str,
        spec: &QueuePolicySpec,
        origin: &str,
        bytes: &[u8],
    ) -> Result<Arc<Plugin>, (&'static str, String)> {
        let mut options = self.options.clone();
        if let Some(l) = spec.limits {
            let own = LimitsPatch {
                memory_bytes: l.memory_bytes,
                deadline_ms: l.deadline_ms,
                deadline_per_item_us: l.deadline_per_item_us,
                cycle_budget_ms: l.cycle_budget_ms,
                run_budget_ms: None,
                fuel: l.fuel,
                quarantine_after: l.quarantine_after,
            };
            // Over `limits` and the language's defaults, as a plugin's `pluginLimits`.
            options.plugin_limits.insert(name.to_string(), own);
        }
        options.settings.insert(
            name.to_string(),
            spec.settings
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        );
        let plugin = make_named_plugin(&self.engine, name, Path::new(origin), bytes, &options)
            .map_err(|e| ("LoadFailed", e.to_string()))?;
        let wanted = PluginKind::of(spec.extension);
        if plugin.kind() != wanted {
            return Err((
                "WrongExtension",
                format!(
                    "the module from {origin} implements {}, but spec.extension is {:?}",
                    plugin.kind(),
                    spec.extension
                ),
            ));
        }
        Ok(plugin)
    }

    /// What each object's status should say now, by name.
    pub fn statuses(&self) -> BTreeMap<String, ObjectStatus> {
        self.lock()
            .iter()
            .map(|(name, e)| {
                let ready = match &e.good {
                    None => Verdict::no(
                        e.loaded.reason,
                        format!("no module is live: {}", e.loaded.message),
                    ),
                    Some(g) => {
                        let status = g.plugin.status();
                        if status.quarantined {
                            Verdict::no(
                                "Quarantined",
                                format!(
                                    "quarantined after {} failures in a row (last: {}); the \
                                     built-in decides until the module changes",
                                    status.consecutive_failures,
                                    status.last_error.as_deref().unwrap_or("-")
                                ),
                            )
                        } else {
                            match e.spec.mode {
                                PolicyMode::Enforce => {
                                    Verdict::yes("Enforced", format!("module {} decides", g.digest))
                                }
                                PolicyMode::Shadow => Verdict::yes(
                                    "Shadowing",
                                    format!(
                                        "module {} is asked the same questions, never acted on",
                                        g.digest
                                    ),
                                ),
                            }
                        }
                    }
                };
                (
                    name.clone(),
                    ObjectStatus {
                        generation: e.generation,
                        loaded: e.loaded.clone(),
                        ready,
                        live: e
                            .good
                            .as_ref()
                            .map(|g| (g.plugin.clone(), g.digest.clone(), g.since)),
                    },
                )
            })
            .collect()
    }
}

impl PolicyObjects {
    /// A copy whose modules start afresh (instances, health), sharing compiled code: one
    /// simulated run's quarantines do not carry over to the next.
    pub fn fresh(&self) -> Arc<PolicyObjects> {
        let mut entries = self.lock().clone();
        for good in entries.values_mut().filter_map(|e| e.good.as_mut()) {
            good.plugin = Arc::new(good.plugin.fresh());
        }
        Arc::new(PolicyObjects {
            engine: self.engine.clone(),
            options: self.options.clone(),
            current: ArcSwap::from_pointee(live_of(&entries)),
            entries: Mutex::new(entries),
            generation: AtomicU64::new(self.generation()),
        })
    }
}

/// The objects with a module live, as bindings take them.
fn live_of(entries: &BTreeMap<String, Entry>) -> Vec<ObjectPolicy> {
    entries
        .iter()
        .filter_map(|(name, e)| {
            e.good.as_ref().map(|g| ObjectPolicy {
                name: name.clone(),
                kind: PluginKind::of(e.spec.extension),
                mode: e.spec.mode,
                selector: e.spec.cluster_queue_selector.clone(),
                plugin: g.plugin.clone(),
            })
        })
        .collect()
}

/// A module from a file (a `path` source).
pub fn read_module(path: &Path) -> Fetched {
    match std::fs::read(path) {
        Ok(bytes) => Fetched::Module {
            bytes,
            origin: path.display().to_string(),
        },
        Err(e) => Fetched::Failed {
            failure: FetchFailure::ModuleNotFound,
            message: format!("reading {}: {e}", path.display()),
        },
    }
}
