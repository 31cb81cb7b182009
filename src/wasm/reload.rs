//! Hot reload of a plugin directory, shared by the simulator and the controller.
//!
//! The directory (not its files) is watched with a debouncer; any event triggers a rescan that
//! compares content digests, so a write in place, a write-temp-then-rename, or a ConfigMap
//! `..data` symlink swap all look the same. Changed files are compiled, validated and
//! smoke-tested on the watcher's thread, off the scheduling path; the next registry is then
//! published atomically. Drivers take one [`LivePlugins::snapshot`] per scheduling cycle, so a
//! cycle always sees one consistent set of plugins and a call in flight finishes with the
//! version it started with.
//!
//! A file that fails validation leaves the previous version running; a deleted file falls back
//! to the built-in policy; a quarantined plugin gets a fresh start when its file changes.

use crate::policy::shadow::ShadowLog;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use notify_debouncer_full::notify::{EventKind, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};

use super::engine::WasmEngine;
use super::load::{digest_of, plugin_files, plugin_name};
use super::objects::PolicyObjects;
use super::registry::{BindError, Bindings, HostOptions, Registry, make_plugin};
use crate::cluster::{Cluster, CqId};
use crate::policy::PolicySet;

/// How long the directory must be quiet before a rescan.
pub const DEBOUNCE: Duration = Duration::from_millis(50);

/// What happened to one file in one rescan.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "change", rename_all = "kebab-case")]
pub enum Change {
    /// A new or changed file was validated and is now in use.
    Loaded {
        plugin: String,
        old_digest: Option<String>,
        new_digest: String,
    },
    /// A new or changed file was refused; `kept` is the version still in use, if any.
    Rejected {
        plugin: String,
        digest: String,
        kept: Option<String>,
        reason: String,
    },
    /// The file is gone: the built-in policy takes over its bindings.
    Removed { plugin: String, old_digest: String },
}

/// Reload counters (`wasq_plugin_reloads_total{result}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReloadCounts {
    pub loaded: u64,
    pub rejected: u64,
    pub removed: u64,
}

/// The state of one file, for `wasq plugin list` and metrics.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileStatus {
    pub plugin: String,
    /// The digest in use (`None` when no version of it ever loaded).
    pub running: Option<String>,
    /// Why the latest content was refused, if it was.
    pub rejected: Option<String>,
}

struct State {
    /// The digest last seen per file name, loaded or rejected: unchanged content is not
    /// compiled again.
    seen: HashMap<String, String>,
    counts: ReloadCounts,
    rejected: BTreeMap<String, String>,
}

/// A plugin directory kept current.
pub struct LivePlugins {
    dir: PathBuf,
    options: HostOptions,
    current: ArcSwap<Registry>,
    generation: AtomicU64,
    /// Serialises rescans (the watcher thread and explicit calls).
    state: Mutex<State>,
}

impl LivePlugins {
    /// Loads the directory once.
    pub fn open(
        engine: WasmEngine,
        dir: &Path,
        options: HostOptions,
    ) -> std::io::Result<Arc<LivePlugins>> {
        let registry = Registry::load_dir(engine, dir, &options)?;
        let seen = registry
            .plugins()
            .map(|p| (p.info().name.clone(), p.info().digest.clone()))
            .collect();
        let rejected = registry
            .failures()
            .map(|(n, e)| (n.clone(), e.to_string()))
            .collect();
        Ok(Arc::new(LivePlugins {
            dir: dir.to_path_buf(),
            options,
            current: ArcSwap::from_pointee(registry),
            generation: AtomicU64::new(1),
            state: Mutex::new(State {
                seen,
                counts: ReloadCounts::default(),
                rejected,
            }),
        }))
    }

    /// The registry to use for the next scheduling cycle.
    pub fn snapshot(&self) -> Arc<Registry> {
        self.current.load_full()
    }

    /// Increases every time a new registry is published.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub fn counts(&self) -> ReloadCounts {
        self.lock().counts.clone()
    }

    /// Every file's state: the version running and the last refusal.
    pub fn files(&self) -> Vec<FileStatus> {
        let registry = self.snapshot();
        let state = self.lock();
        let mut names: Vec<String> = registry
            .plugins()
            .map(|p| p.info().name.clone())
            .chain(registry.failures().map(|(n, _)| n.clone()))
            .chain(state.rejected.keys().cloned())
            .collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .map(|name| FileStatus {
                running: registry.get(&name).map(|p| p.info().digest.clone()),
                rejected: state.rejected.get(&name).cloned(),
                plugin: name,
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Compares the directory with the running registry and publishes a new one if anything
    /// changed. Returns what changed.
    pub fn rescan(&self) -> Vec<Change> {
        let mut state = self.lock();
        let old = self.snapshot();
        let mut next: Registry = (*old).clone();
        let mut changes = Vec::new();
        let mut forget = Vec::new();
        // A directory that cannot be read right now (being replaced) is retried on the next event.
        let files = plugin_files(&self.dir).unwrap_or_default();
        for path in &files {
            let name = plugin_name(path);
            // A file being replaced may vanish between listing and reading: next event.
            let Ok(bytes) = std::fs::read(path) else {
                continue;
            };
            let digest = digest_of(&bytes);
            if state.seen.get(&name) == Some(&digest) {
                continue;
            }
            state.seen.insert(name.clone(), digest.clone());
            let running = old.get(&name).map(|p| p.info().digest.clone());
            let start = Instant::now();
            match make_plugin(old.engine(), path, &bytes, &self.options) {
                Ok(plugin) => {
                    tracing::info!(
                        plugin = %name,
                        old_digest = running.as_deref().unwrap_or("-"),
                        new_digest = %digest,
                        kind = %plugin.kind(),
                        ms = start.elapsed().as_secs_f64() * 1e3,
                        "plugin reloaded"
                    );
                    state.counts.loaded += 1;
                    state.rejected.remove(&name);
                    forget.extend(running.clone());
                    next.insert(plugin);
                    changes.push(Change::Loaded {
                        plugin: name,
                        old_digest: running,
                        new_digest: digest,
                    });
                }
                Err(error) => {
                    tracing::warn!(
                        plugin = %name,
                        digest = %digest,
                        kept = running.as_deref().unwrap_or("-"),
                        %error,
                        "plugin file refused; the previous version keeps running"
                    );
                    state.counts.rejected += 1;
                    forget.push(digest.clone());
                    state.rejected.insert(name.clone(), error.to_string());
                    next.reject(&name, error.clone());
                    changes.push(Change::Rejected {
                        plugin: name,
                        digest,
                        kept: running,
                        reason: error.to_string(),
                    });
                }
            }
        }
        let present: Vec<String> = files.iter().map(|p| plugin_name(p)).collect();
        // Loaded plugins and refused files alike.
        let mut gone: Vec<(String, String)> = old
            .plugins()
            .filter(|p| !present.contains(&p.info().name))
            .map(|p| (p.info().name.clone(), p.info().digest.clone()))
            .collect();
        for (name, _) in old.failures() {
            if !present.contains(name) && !gone.iter().any(|(n, _)| n == name) {
                let digest = state.seen.get(name).cloned().unwrap_or_else(|| "-".into());
                gone.push((name.clone(), digest));
            }
        }
        for (name, digest) in gone {
            tracing::warn!(plugin = %name, old_digest = %digest, "plugin file removed; the built-in policy takes over");
            state.counts.removed += 1;
            state.seen.remove(&name);
            state.rejected.remove(&name);
            next.remove(&name);
            forget.push(digest.clone());
            changes.push(Change::Removed {
                plugin: name,
                old_digest: digest,
            });
        }
        if changes
            .iter()
            .any(|c| !matches!(c, Change::Rejected { .. }))
        {
            self.current.store(Arc::new(next));
            self.generation.fetch_add(1, Ordering::AcqRel);
        } else if !changes.is_empty() {
            // Only refusals: the running plugins stay, but the refusal is recorded.
            self.current.store(Arc::new(next));
        }
        changes
    }

    /// Watches the directory until the returned handle is dropped; every burst of events
    /// triggers one rescan on the watcher's thread.
    pub fn watch(self: &Arc<LivePlugins>) -> anyhow::Result<WatchHandle> {
        let live = Arc::downgrade(self);
        let mut debouncer = new_debouncer(DEBOUNCE, None, move |result: DebounceEventResult| {
            let Some(live) = live.upgrade() else { return };
            match result {
                // Reads (including the rescan's own) are not changes.
                Ok(events) if events.iter().any(|e| is_change(&e.event.kind)) => {
                    live.rescan();
                }
                Ok(_) => {}
                Err(errors) => {
                    for e in errors {
                        tracing::warn!(error = %e, "watching the plugin directory");
                    }
                    live.rescan();
                }
            }
        })?;
        // Non-recursive: a ConfigMap volume's `..data` symlink swap is an event in this
        // directory, and the rescan follows the symlinks to the new content.
        debouncer.watch(&self.dir, RecursiveMode::NonRecursive)?;
        Ok(WatchHandle {
            _debouncer: debouncer,
        })
    }
}

/// Keeps the directory watched while alive.
pub struct WatchHandle {
    _debouncer: Debouncer<notify_debouncer_full::notify::RecommendedWatcher, RecommendedCache>,
}

/// Whether an event can mean new content (anything but a read).
pub fn is_change(kind: &EventKind) -> bool {
    !matches!(kind, EventKind::Access(_))
}

/// Where bindings resolve: a fixed registry, or a live directory.
#[derive(Clone)]
pub enum PluginSource {
    Fixed(Arc<Registry>),
    Live(Arc<LivePlugins>),
}

impl PluginSource {
    pub fn snapshot(&self) -> Arc<Registry> {
        match self {
            PluginSource::Fixed(r) => r.clone(),
            PluginSource::Live(l) => l.snapshot(),
        }
    }

    fn generation(&self) -> u64 {
        match self {
            PluginSource::Fixed(_) => 0,
            PluginSource::Live(l) => l.generation(),
        }
    }
}

/// The policies a driver must install.
pub type Bound = (PolicySet, Vec<(CqId, PolicySet)>);

/// Bindings kept in step with a plugin source: drivers call [`LiveBindings::refresh`] between
/// scheduling cycles and install what it returns, so each cycle runs with one set of plugins.
pub struct LiveBindings {
    source: PluginSource,
    bindings: Bindings,
    /// `QueuePolicy` objects bound over `bindings`.
    objects: Option<Arc<PolicyObjects>>,
    bound: Option<(u64, u64, u64)>,
    /// What the shadows decided, across every rebinding.
    shadow_log: Arc<ShadowLog>,
}

impl LiveBindings {
    pub fn new(source: PluginSource, bindings: Bindings) -> LiveBindings {
        LiveBindings::recording(source, bindings, Arc::default())
    }

    /// Bindings whose shadows record into `shadow_log`.
    pub fn recording(
        source: PluginSource,
        bindings: Bindings,
        shadow_log: Arc<ShadowLog>,
    ) -> LiveBindings {
        LiveBindings {
            source,
            bindings,
            objects: None,
            bound: None,
            shadow_log,
        }
    }

    /// The same bindings with the live `QueuePolicy` objects of `objects` over them.
    pub fn with_objects(mut self, objects: Arc<PolicyObjects>) -> LiveBindings {
        self.objects = Some(objects);
        self.bound = None;
        self
    }

    pub fn source(&self) -> &PluginSource {
        &self.source
    }

    /// Every plugin these bindings can bind: the source's, then the live `QueuePolicy`
    /// objects' (under their object's name).
    pub fn plugins(&self) -> Vec<Arc<super::Plugin>> {
        let mut all: Vec<Arc<super::Plugin>> = self.source.snapshot().plugins().cloned().collect();
        if let Some(objects) = &self.objects {
            all.extend(objects.snapshot().iter().map(|o| o.plugin.clone()));
        }
        all
    }

    /// The figures of the shadows these bindings name.
    pub fn shadow_log(&self) -> &Arc<ShadowLog> {
        &self.shadow_log
    }

    /// New policies when the plugins or the cluster's configuration changed since the last
    /// call (always on the first call); `None` when nothing changed.
    pub fn refresh(&mut self, cluster: &Cluster) -> Option<Result<Bound, BindError>> {
        let objects = self.objects.as_ref();
        let key = (
            self.source.generation(),
            objects.map_or(0, |o| o.generation()),
            cluster.config_id,
        );
        if self.bound == Some(key) {
            return None;
        }
        self.bound = Some(key);
        let live = objects.map(|o| o.snapshot()).unwrap_or_default();
        Some(
            self.source
                .snapshot()
                .bind_with(cluster, &self.bindings, &live, &self.shadow_log),
        )
    }
}
