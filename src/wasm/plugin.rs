//! One loaded plugin at run time: its live instance (re-created from `InstancePre` after any
//! trap), the catalog it was last sent, the limits applied to each call, and its health —
//! failures counted per reason, consecutive failures leading to quarantine.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wasmtime::{Store, Trap};

use super::bindings::{dispatch, flavors, ordering, placement, preemption};
use super::convert;
use super::engine::WasmEngine;
use super::heads::HeadTable;
use super::limits::{CallClock, Limits};
use super::load::{Loaded, PluginInfo, PluginKind, Pre};
use super::rows::RowTable;
use super::state::State;
use super::strings::StringTable;
use super::text::escape;
use super::usage_rows::SentUsage;
use crate::cluster::Cluster;
use crate::policy::{PolicyError, PolicyRef};

/// Which annotations and labels a plugin sees (its allow-list): every key under
/// [`ALWAYS_EXPOSED`], plus the keys listed here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exposure {
    /// Annotation keys: exact keys, or prefixes ending in `/` (`example.com/` exposes every key
    /// under it). `exposeAnnotations` in the configuration, plus the plugin's own
    /// `pluginMetadata.<name>.annotations`.
    pub annotations: Vec<String>,
    /// Label keys of Workloads, written the same way (`pluginMetadata.<name>.labels`).
    pub labels: Vec<String>,
}

/// Key prefixes every plugin sees, labels and annotations alike: Kueue's and wasq's own.
pub const ALWAYS_EXPOSED: [&str; 2] = ["kueue.x-k8s.io/", "wasq.dev/"];

impl Default for Exposure {
    fn default() -> Exposure {
        Exposure {
            annotations: vec!["wasq.dev/".into()],
            labels: Vec::new(),
        }
    }
}

/// Whether `key` is one of `keys` (exact) or under one of them (those ending in `/`).
fn listed<'a>(mut keys: impl Iterator<Item = &'a str>, key: &str) -> bool {
    keys.any(|a| {
        if a.ends_with('/') {
            key.starts_with(a)
        } else {
            key == a
        }
    })
}

impl Exposure {
    /// Whether plugins see the annotation `key`.
    pub fn exposes(&self, key: &str) -> bool {
        listed(ALWAYS_EXPOSED.into_iter(), key)
            || listed(self.annotations.iter().map(String::as_str), key)
    }

    /// Whether plugins see the Workload label `key`.
    pub fn exposes_label(&self, key: &str) -> bool {
        listed(ALWAYS_EXPOSED.into_iter(), key)
            || listed(self.labels.iter().map(String::as_str), key)
    }

    /// This allow-list with `extra`'s keys added (a plugin's own list on top of the global one).
    pub fn with(&self, extra: Option<&Exposure>) -> Exposure {
        let mut out = self.clone();
        if let Some(extra) = extra {
            out.annotations.extend(extra.annotations.iter().cloned());
            out.labels.extend(extra.labels.iter().cloned());
        }
        out
    }
}

/// A snapshot of a plugin's health, for `wasq plugin list`, metrics and reports.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PluginStatus {
    pub calls: u64,
    /// Failures per reason (`trap`, `timeout`, `out-of-memory`, `out-of-fuel`,
    /// `invalid-answer`, `load-error`).
    pub failures: BTreeMap<&'static str, u64>,
    /// The most failures in a row of the plugin, or of any one of its functions whatever the
    /// others did in between (quarantine comes at `Limits::quarantine_after`).
    pub consecutive_failures: u32,
    pub quarantined: bool,
    /// The last failure, its text escaped (`text::escape`).
    pub last_error: Option<String>,
    /// Victims accepted beyond what the preemptors needed (`allowExtraVictims`).
    pub extra_victims: u64,
    /// Calls not made because the plugin had used its CPU budget for the cycle or the run
    /// (the built-in decided them; not failures).
    pub over_budget: u64,
    /// CPU time of all its calls, in microseconds.
    pub cpu_us: u64,
    /// CPU time of its calls in the scheduling cycle that took the most, in microseconds.
    pub busiest_cycle_us: u64,
}

enum Instance {
    Ordering(ordering::OrderingPlugin),
    Preemption(preemption::PreemptionPlugin),
    FlavorAssignment(flavors::FlavorAssignmentPlugin),
    Placement(placement::PlacementPlugin),
    Dispatch(dispatch::DispatchPlugin),
}

struct Live {
    store: Store<State>,
    instance: Instance,
    /// The configuration id of the catalog this instance holds.
    catalog_of: Option<u64>,
    /// What the instance answered to that catalog.
    needs: crate::policy::Needs,
    /// The instance's string table (`new-strings`).
    strings: StringTable,
    /// The instance's table of heads (`new-heads`; ordering plugins only).
    heads: HeadTable,
    /// The instance's table of admitted workloads (`new-rows`; preemption plugins only).
    rows: RowTable,
    /// The usage rows the instance holds (`request.usage-kept`; preemption plugins only).
    usage: SentUsage,
    /// Whether the instance received its settings (`set-settings`; dispatch plugins only).
    settings_sent: bool,
}

struct Inner {
    live: Option<Live>,
    /// The catalog for the latest configuration seen, built once per configuration.
    catalog: Option<(u64, Arc<convert::Catalog>)>,
    /// What the plugin answered to that configuration's catalog (kept across re-instantiation,
    /// so that asking for it never costs a call, nor counts as one).
    needs: Option<(u64, crate::policy::Needs)>,
    status: PluginStatus,
    /// The function whose last call returned: it counts as a success of that function unless
    /// its answer is refused before the next call.
    returned: Option<&'static str>,
    /// Failures in a row, per function: a success of one function forgives only its own.
    in_a_row: BTreeMap<&'static str, u32>,
    /// Failures in a row of any function, forgiven by any success.
    any_in_a_row: u32,
    /// CPU time spent in calls: in the scheduling cycle `cycle`, and in all (the run).
    spent: Spent,
}

/// The CPU time a plugin's calls spent, against its budgets.
#[derive(Default)]
struct Spent {
    /// The scheduling cycle `in_cycle` counts.
    cycle: u64,
    in_cycle: Duration,
    in_run: Duration,
}

impl Spent {
    /// The figures as of `cycle`: the cycle's count starts again with each new cycle.
    fn at(&mut self, cycle: u64) -> &mut Spent {
        if self.cycle != cycle {
            (self.cycle, self.in_cycle) = (cycle, Duration::ZERO);
        }
        self
    }
}

impl Inner {
    fn fresh() -> Mutex<Inner> {
        Mutex::new(Inner {
            live: None,
            catalog: None,
            needs: None,
            status: PluginStatus::default(),
            returned: None,
            in_a_row: BTreeMap::new(),
            any_in_a_row: 0,
            spent: Spent::default(),
        })
    }
}

/// What one fresh instance of a plugin takes: measured by its smoke test.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Footprint {
    /// Wall time to instantiate it, in milliseconds.
    pub instantiate_ms: f64,
    /// Its linear memory once it has answered an empty catalog and batch, in bytes.
    pub memory_bytes: u64,
}

/// A loaded plugin, callable through the policy adapters.
pub struct Plugin {
    info: PluginInfo,
    footprint: Footprint,
    pre: Pre,
    engine: WasmEngine,
    limits: Limits,
    exposure: Exposure,
    settings: Vec<(String, String)>,
    name: Arc<str>,
    digest: Arc<str>,
    inner: Mutex<Inner>,
}

/// What a call needs from the live instance.
pub(super) struct CallCx<'a> {
    pub store: &'a mut Store<State>,
    pub catalog: &'a convert::Catalog,
    /// The instance's string table: intern what the call sends, then send
    /// [`StringTable::take`] as its `strings`.
    pub strings: &'a mut StringTable,
    /// The instance's table of admitted workloads: take each candidate's row, then send
    /// [`RowTable::take`] as `select-victims`' `rows`.
    pub rows: &'a mut RowTable,
    /// The instance's table of heads: take each head's id, then send [`HeadTable::take`] as
    /// `order-heads`' `new-heads`.
    pub heads: &'a mut HeadTable,
    /// The usage rows the instance holds: a request carries those
    /// [`SentUsage::fill_changed`] finds changed.
    pub usage: &'a mut SentUsage,
    instance: &'a Instance,
    /// What the instance reads beyond its requests (its answer to the catalog).
    pub needs: crate::policy::Needs,
    /// The call's deadline and fuel, set as the guest is handed out: the host's own work
    /// of filling the request (a first call may size tables for every workload) does not
    /// count against the plugin.
    arming: Arming,
}

/// The limits of one call, set on the store just before the guest runs.
#[derive(Debug, Clone, Copy)]
struct Arming {
    call: &'static str,
    items: usize,
    deadline_ms: u64,
    /// `None` when the engine counts no fuel.
    fuel: Option<u64>,
}

impl Arming {
    /// Sets the deadline and fuel of the next guest call, and starts its count of log lines.
    fn apply(self, store: &mut Store<State>) -> wasmtime::Result<()> {
        // A call armed again (the catalog first, then the decision) keeps what it spent.
        store.data_mut().charge_clock();
        let (clock, ticks) = CallClock::start(self.deadline_ms);
        store.set_epoch_deadline(ticks);
        if let Some(fuel) = self.fuel {
            store.set_fuel(fuel)?;
        }
        let data = store.data_mut();
        (data.deadline_ms, data.call, data.items) = (self.deadline_ms, self.call, self.items);
        data.clock = Some(clock);
        data.lines = 0;
        data.last_error = None;
        Ok(())
    }
}

/// What a flavor-assignment or placement plugin is sent: their `set-catalog` answers nothing,
/// and they are always told who the workload is and what it requests.
const IDENTITY_ONLY: crate::policy::Needs = crate::policy::Needs {
    tree_usage: false,
    local_queue_usage: false,
    identity: true,
    pod_sets: true,
};

/// The WIT `needs` flags as the policy traits see them.
fn needs(flags: super::bindings::types::Needs) -> crate::policy::Needs {
    use super::bindings::types::Needs as N;
    crate::policy::Needs {
        tree_usage: flags.contains(N::TREE_USAGE),
        local_queue_usage: flags.contains(N::LOCAL_QUEUE_USAGE),
        identity: flags.contains(N::IDENTITY),
        pod_sets: flags.contains(N::POD_SETS),
    }
}

impl<'a> CallCx<'a> {
    pub fn ordering(
        &mut self,
    ) -> wasmtime::Result<(
        &'a ordering::exports::wasq::policy::ordering::Guest,
        &mut Store<State>,
    )> {
        self.arming.apply(self.store)?;
        match self.instance {
            Instance::Ordering(p) => Ok((p.wasq_policy_ordering(), &mut *self.store)),
            _ => unreachable!("bound to the wrong extension"),
        }
    }

    pub fn preemption(
        &mut self,
    ) -> wasmtime::Result<(
        &'a preemption::exports::wasq::policy::preemption::Guest,
        &mut Store<State>,
    )> {
        self.arming.apply(self.store)?;
        match self.instance {
            Instance::Preemption(p) => Ok((p.wasq_policy_preemption(), &mut *self.store)),
            _ => unreachable!("bound to the wrong extension"),
        }
    }

    pub fn flavors(
        &mut self,
    ) -> wasmtime::Result<(
        &'a flavors::exports::wasq::policy::flavor_assignment::Guest,
        &mut Store<State>,
    )> {
        self.arming.apply(self.store)?;
        match self.instance {
            Instance::FlavorAssignment(p) => {
                Ok((p.wasq_policy_flavor_assignment(), &mut *self.store))
            }
            _ => unreachable!("bound to the wrong extension"),
        }
    }

    pub fn placement(
        &mut self,
    ) -> wasmtime::Result<(
        &'a placement::exports::wasq::policy::placement::Guest,
        &mut Store<State>,
    )> {
        self.arming.apply(self.store)?;
        match self.instance {
            Instance::Placement(p) => Ok((p.wasq_policy_placement(), &mut *self.store)),
            _ => unreachable!("bound to the wrong extension"),
        }
    }
}

impl Plugin {
    pub fn new(
        loaded: Loaded,
        engine: WasmEngine,
        limits: Limits,
        exposure: Exposure,
        settings: Vec<(String, String)>,
    ) -> Plugin {
        Plugin {
            name: loaded.info.name.as_str().into(),
            digest: loaded.info.digest.as_str().into(),
            info: loaded.info,
            footprint: Footprint::default(),
            pre: loaded.pre,
            engine,
            limits,
            exposure,
            settings,
            inner: Inner::fresh(),
        }
    }

    /// The same compiled plugin with a fresh instance and fresh health (no calls, no failures,
    /// not quarantined): for independent runs such as `wasq simulate --watch`.
    pub fn fresh(&self) -> Plugin {
        Plugin {
            name: self.name.clone(),
            digest: self.digest.clone(),
            info: self.info.clone(),
            footprint: self.footprint,
            pre: self.pre.clone(),
            engine: self.engine.clone(),
            limits: self.limits,
            exposure: self.exposure.clone(),
            settings: self.settings.clone(),
            inner: Inner::fresh(),
        }
    }

    pub fn info(&self) -> &PluginInfo {
        &self.info
    }

    pub fn kind(&self) -> PluginKind {
        self.info.kind
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Which labels and annotations it sees.
    pub fn exposure(&self) -> &Exposure {
        &self.exposure
    }

    /// One of the plugin's settings (`pluginSettings` in `--config`).
    pub fn setting(&self, key: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn id(&self) -> PolicyRef {
        PolicyRef {
            name: self.name.clone(),
            digest: self.digest.clone(),
        }
    }

    pub fn status(&self) -> PluginStatus {
        self.lock().status.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves consistent data (every field is replaced
        // whole), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn instantiate(&self) -> Result<Live, PolicyError> {
        let state = State::new(
            self.name.clone(),
            self.digest.clone(),
            self.limits.memory_bytes,
        );
        let mut store = Store::new(self.engine.engine(), state);
        store.limiter(|s| &mut s.limiter);
        // At an epoch deadline, a call runs on for the CPU time it has left (limits.rs,
        // `CallClock`).
        store.epoch_deadline_callback(|mut cx| {
            Ok(
                match cx.data_mut().clock.as_mut().and_then(|c| c.on_deadline()) {
                    Some(ticks) => wasmtime::UpdateDeadline::Continue(ticks),
                    None => wasmtime::UpdateDeadline::Interrupt,
                },
            )
        });
        self.arm(&mut store, "instantiate", 0)?;
        let instance = match &self.pre {
            Pre::Ordering(p) => p.instantiate(&mut store).map(Instance::Ordering),
            Pre::Preemption(p) => p.instantiate(&mut store).map(Instance::Preemption),
            Pre::FlavorAssignment(p) => p.instantiate(&mut store).map(Instance::FlavorAssignment),
            Pre::Placement(p) => p.instantiate(&mut store).map(Instance::Placement),
            Pre::Dispatch(p) => p.instantiate(&mut store).map(Instance::Dispatch),
        }
        .map_err(|e| classify(e, &store, &self.limits))?;
        Ok(Live {
            store,
            instance,
            catalog_of: None,
            needs: crate::policy::Needs::default(),
            strings: StringTable::default(),
            heads: HeadTable::default(),
            rows: RowTable::default(),
            usage: SentUsage::default(),
            settings_sent: false,
        })
    }

    /// What the plugin reads beyond its requests, as it answered the catalog of `cluster`'s
    /// configuration (sent first if the instance does not hold it). Nothing when it fails.
    pub fn needs(&self, cluster: &Cluster) -> crate::policy::Needs {
        if let Some((id, needs)) = self.lock().needs
            && id == cluster.config_id
        {
            return needs;
        }
        // Only the catalog is sent: not a decision, so neither a call nor a success counts
        // (a failure does, as for any call).
        self.run(cluster, "set-catalog", 0, false, |cx| Ok(cx.needs))
            .unwrap_or_default()
    }

    /// The deadline (for `call` carrying `items`) and fuel of a call.
    fn arming(&self, call: &'static str, items: usize) -> Arming {
        Arming {
            call,
            items,
            deadline_ms: self.limits.deadline_for(items),
            fuel: self
                .engine
                .fuel_enabled()
                .then(|| self.limits.fuel.unwrap_or(u64::MAX)),
        }
    }

    /// Sets the deadline (for `call` carrying `items`) and fuel for the next call.
    fn arm(
        &self,
        store: &mut Store<State>,
        call: &'static str,
        items: usize,
    ) -> Result<(), PolicyError> {
        self.arming(call, items)
            .apply(store)
            .map_err(|e| PolicyError::Unavailable(e.to_string()))
    }

    /// Runs `f` on the live instance under the plugin's limits, after making sure the instance
    /// holds the catalog of `cluster`'s configuration. A failure discards the instance and
    /// counts against the plugin's health.
    ///
    /// `items`: how many workloads, heads, candidates or options the request carries; the
    /// deadline grows with them ([`Limits::deadline_for`]).
    pub(super) fn call<R>(
        &self,
        cluster: &Cluster,
        call: &'static str,
        items: usize,
        f: impl FnOnce(&mut CallCx<'_>) -> wasmtime::Result<R>,
    ) -> Result<R, PolicyError> {
        self.run(cluster, call, items, true, f)
    }

    /// [`Plugin::call`]; `decision` = false for a call that only makes sure of the catalog,
    /// which counts neither as a call nor as a success, and is made whatever the budgets.
    fn run<R>(
        &self,
        cluster: &Cluster,
        call: &'static str,
        items: usize,
        decision: bool,
        f: impl FnOnce(&mut CallCx<'_>) -> wasmtime::Result<R>,
    ) -> Result<R, PolicyError> {
        self.run_with(cluster.cycle, call, decision, |inner| {
            self.call_locked(inner, cluster, call, items, f)
        })
    }

    /// A call to a dispatch plugin (`dispatch`): no catalog, the plugin's settings sent once
    /// per instance (`set-settings`) before its first call. Its budget per cycle counts the
    /// calls made at one instant of the clock (`now`, the request's): dispatch is asked by
    /// the drivers, outside scheduling cycles.
    ///
    /// `items`: the clusters the request carries; the deadline grows with them.
    pub(super) fn call_dispatch<R>(
        &self,
        now: i64,
        items: usize,
        f: impl FnOnce(
            &dispatch::exports::wasq::policy::dispatch::Guest,
            &mut Store<State>,
        ) -> wasmtime::Result<R>,
    ) -> Result<R, PolicyError> {
        self.run_with(now as u64, "dispatch", true, |inner| {
            if inner.live.is_none() {
                inner.live = Some(self.instantiate()?);
            }
            let live = inner.live.as_mut().expect("instantiated above");
            let Instance::Dispatch(p) = &live.instance else {
                unreachable!("bound to the wrong extension")
            };
            let guest = p.wasq_policy_dispatch();
            if !live.settings_sent {
                let settings: Vec<super::bindings::types::Setting> = self
                    .settings
                    .iter()
                    .map(|(key, value)| super::bindings::types::Setting {
                        key: key.clone(),
                        value: value.clone(),
                    })
                    .collect();
                self.arm(&mut live.store, "set-settings", settings.len())?;
                guest
                    .call_set_settings(&mut live.store, &settings)
                    .map_err(|e| classify(e, &live.store, &self.limits))?;
                live.settings_sent = true;
            }
            self.arm(&mut live.store, "dispatch", items)?;
            f(guest, &mut live.store).map_err(|e| classify(e, &live.store, &self.limits))
        })
    }

    /// Runs `body` (which makes the call on the locked plugin) under the plugin's health and
    /// budgets: refused while quarantined or over budget, counted, its CPU time charged to
    /// `cycle` and the run, a failure discarding the instance.
    fn run_with<R>(
        &self,
        cycle: u64,
        call: &'static str,
        decision: bool,
        body: impl FnOnce(&mut Inner) -> Result<R, PolicyError>,
    ) -> Result<R, PolicyError> {
        let span = tracing::debug_span!("plugin_call", plugin = %self.name, digest = %self.digest, kind = %self.info.kind, call);
        let _enter = span.enter();
        let mut inner = self.lock();
        if inner.status.quarantined {
            return Err(PolicyError::Quarantined(inner.status.consecutive_failures));
        }
        if decision {
            if let Some(over) = self.over_budget(&mut inner, cycle) {
                inner.status.over_budget += 1;
                return Err(over);
            }
            // The previous call counts as a success only once its answer was not refused.
            if let Some(function) = inner.returned.take() {
                inner.in_a_row.remove(function);
                inner.any_in_a_row = 0;
                inner.status.consecutive_failures =
                    inner.in_a_row.values().copied().max().unwrap_or(0);
            }
            inner.status.calls += 1;
        }
        let result = body(&mut inner);
        let spent = inner
            .live
            .as_mut()
            .map_or(Duration::ZERO, |l| l.store.data_mut().take_spent());
        self.charge(&mut inner, cycle, spent);
        match &result {
            Ok(_) => {
                if decision {
                    inner.returned = Some(call);
                }
            }
            Err(e) => {
                inner.live = None;
                self.count_failure(&mut inner, call, e);
            }
        }
        result
    }

    /// Whether the plugin's calls have used their CPU budget for the run, or for `cycle`.
    fn over_budget(&self, inner: &mut Inner, cycle: u64) -> Option<PolicyError> {
        let spent = inner.spent.at(cycle);
        if let Some(budget_ms) = self.limits.run_budget_ms
            && spent.in_run >= Duration::from_millis(budget_ms)
        {
            return Some(PolicyError::OverBudget {
                budget_ms,
                run: true,
            });
        }
        let budget_ms = self.limits.cycle_budget_ms;
        (spent.in_cycle >= Duration::from_millis(budget_ms)).then_some(PolicyError::OverBudget {
            budget_ms,
            run: false,
        })
    }

    /// Counts `spent` of CPU time against the budgets of `cycle` and of the run.
    fn charge(&self, inner: &mut Inner, cycle: u64, spent: Duration) {
        let s = inner.spent.at(cycle);
        s.in_cycle += spent;
        s.in_run += spent;
        let status = &mut inner.status;
        status.cpu_us = s.in_run.as_micros() as u64;
        status.busiest_cycle_us = status.busiest_cycle_us.max(s.in_cycle.as_micros() as u64);
    }

    fn call_locked<R>(
        &self,
        inner: &mut Inner,
        cluster: &Cluster,
        call: &'static str,
        items: usize,
        f: impl FnOnce(&mut CallCx<'_>) -> wasmtime::Result<R>,
    ) -> Result<R, PolicyError> {
        let catalog = match &inner.catalog {
            Some((id, c)) if *id == cluster.config_id => c.clone(),
            _ => {
                let c = Arc::new(convert::catalog(cluster, &self.exposure, &self.settings));
                inner.catalog = Some((cluster.config_id, c.clone()));
                c
            }
        };
        if inner.live.is_none() {
            inner.live = Some(self.instantiate()?);
        }
        let live = inner.live.as_mut().expect("instantiated above");
        if live.catalog_of != Some(cluster.config_id) {
            // The catalog's size: its quota tree's ClusterQueues and cohorts.
            self.arm(&mut live.store, "set-catalog", cluster.tree.len())?;
            let r = match &live.instance {
                Instance::Ordering(p) => p
                    .wasq_policy_ordering()
                    .call_set_catalog(&mut live.store, &catalog.wit)
                    .map(needs),
                Instance::Preemption(p) => p
                    .wasq_policy_preemption()
                    .call_set_catalog(&mut live.store, &catalog.wit)
                    .map(needs),
                // These worlds answer no `needs`: their (rarer) calls always carry identity.
                Instance::FlavorAssignment(p) => p
                    .wasq_policy_flavor_assignment()
                    .call_set_catalog(&mut live.store, &catalog.wit)
                    .map(|()| IDENTITY_ONLY),
                Instance::Placement(p) => p
                    .wasq_policy_placement()
                    .call_set_catalog(&mut live.store, &catalog.wit)
                    .map(|()| IDENTITY_ONLY),
                // A dispatch instance holds no catalog (`call_dispatch`).
                Instance::Dispatch(_) => Ok(crate::policy::Needs::default()),
            };
            live.needs = r.map_err(|e| classify(e, &live.store, &self.limits))?;
            live.catalog_of = Some(cluster.config_id);
            // Rows name ClusterQueues and LocalQueues of the previous catalog.
            live.heads.clear();
            live.rows.clear();
            live.usage.clear();
            inner.needs = Some((cluster.config_id, live.needs));
        }
        if live.strings.begin() {
            // Heads and rows carry identities as ids of the string table that was.
            live.heads.clear();
            live.rows.clear();
        }
        live.heads.begin();
        live.rows.begin();
        let mut cx = CallCx {
            store: &mut live.store,
            catalog: &catalog,
            strings: &mut live.strings,
            rows: &mut live.rows,
            heads: &mut live.heads,
            usage: &mut live.usage,
            instance: &live.instance,
            needs: live.needs,
            arming: self.arming(call, items),
        };
        let r = f(&mut cx);
        r.map_err(|e| classify(e, &live.store, &self.limits))
    }

    /// Validates a freshly loaded plugin before it is used: it must instantiate within its
    /// limits (its start function, memories and tables), and a fresh instance must accept an
    /// empty catalog and answer an empty batch with an empty answer, within the limits.
    /// What it measures is kept as the plugin's [`Footprint`].
    pub fn smoke_test(&mut self) -> Result<(), SmokeFailure> {
        let start = std::time::Instant::now();
        let mut live = self.instantiate().map_err(SmokeFailure::Instantiate)?;
        let instantiate_ms = start.elapsed().as_secs_f64() * 1e3;
        self.empty_batch(&mut live)
            .map_err(SmokeFailure::EmptyBatch)?;
        self.footprint = Footprint {
            instantiate_ms,
            memory_bytes: live.store.data().limiter.used,
        };
        Ok(())
    }

    /// What a fresh instance took in its smoke test (zero before it).
    pub fn footprint(&self) -> Footprint {
        self.footprint
    }

    fn empty_batch(&self, live: &mut Live) -> Result<(), PolicyError> {
        let empty = convert::empty_catalog();
        self.arm(&mut live.store, "smoke-test", 0)?;
        let store = &mut live.store;
        let answered = match &live.instance {
            Instance::Ordering(p) => {
                let g = p.wasq_policy_ordering();
                g.call_set_catalog(&mut *store, &empty)
                    .and_then(|_| g.call_sort_keys(&mut *store, None, &[], &[], 0))
                    .map(|a| a.len())
            }
            Instance::Preemption(p) => {
                let g = p.wasq_policy_preemption();
                g.call_set_catalog(&mut *store, &empty)
                    .and_then(|_| g.call_select_victims(&mut *store, None, None, &[]))
                    .map(|a| a.len())
            }
            Instance::FlavorAssignment(p) => {
                let g = p.wasq_policy_flavor_assignment();
                g.call_set_catalog(&mut *store, &empty)
                    .and_then(|()| g.call_choose_flavors(&mut *store, None, &[]))
                    .map(|a| a.len())
            }
            Instance::Placement(p) => {
                let g = p.wasq_policy_placement();
                g.call_set_catalog(&mut *store, &empty)
                    .and_then(|()| g.call_place(&mut *store, None, &[]))
                    .map(|a| a.len())
            }
            // Settings empty, as the other kinds' catalog is.
            Instance::Dispatch(p) => {
                let g = p.wasq_policy_dispatch();
                g.call_set_settings(&mut *store, &[])
                    .and_then(|()| g.call_dispatch(&mut *store, &[]))
                    .map(|a| a.len())
            }
        }
        .map_err(|e| classify(e, &live.store, &self.limits))?;
        if answered != 0 {
            return Err(PolicyError::Invalid(
                crate::policy::verify::InvalidAnswer::WrongLength {
                    what: "the answers to an empty batch",
                    got: answered,
                    expected: 0,
                },
            ));
        }
        Ok(())
    }

    /// Records an answer the host refused (an invalid answer counts like a trap).
    /// Counts victims an accepted answer evicts beyond what the preemptor needed.
    pub fn count_extra_victims(&self, n: usize) {
        self.lock().status.extra_victims += n as u64;
    }

    pub fn refused(&self, error: &PolicyError) {
        let mut inner = self.lock();
        // The refused answer is the last call's.
        let function = inner.returned.take().unwrap_or("answer");
        self.count_failure(&mut inner, function, error);
    }

    /// Counts a failure of `function`; quarantines the plugin when it has failed
    /// `quarantine_after` times in a row, or one of its functions has (whatever the others
    /// did in between).
    fn count_failure(&self, inner: &mut Inner, function: &'static str, error: &PolicyError) {
        let of_function = inner.in_a_row.entry(function).or_default();
        *of_function += 1;
        let of_function = *of_function;
        inner.any_in_a_row += 1;
        let in_a_row = of_function.max(inner.any_in_a_row);
        let status = &mut inner.status;
        *status.failures.entry(error.reason()).or_default() += 1;
        status.consecutive_failures = status.consecutive_failures.max(in_a_row);
        status.last_error = Some(error.to_string());
        if in_a_row >= self.limits.quarantine_after && !status.quarantined {
            status.quarantined = true;
            tracing::error!(
                plugin = %self.name,
                digest = %self.digest,
                function,
                failures = in_a_row,
                last = %error,
                "plugin quarantined after consecutive failures; the built-in policy decides until its file changes"
            );
        }
    }
}

/// Why a freshly loaded plugin was refused ([`Plugin::smoke_test`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SmokeFailure {
    /// Making an instance failed: a memory or table over the limits, a trapping start
    /// function.
    #[error("{0}")]
    Instantiate(PolicyError),
    /// The instance failed the empty catalog or the empty batch.
    #[error("{0}")]
    EmptyBatch(PolicyError),
}

/// Turns a wasmtime error into the reason reported for the fallback.
fn classify(error: wasmtime::Error, store: &Store<State>, limits: &Limits) -> PolicyError {
    if store.data().limiter.refused {
        return PolicyError::OutOfMemory(limits.memory_bytes);
    }
    // What the plugin logged last is escaped already (`State::log`).
    let said = store
        .data()
        .last_error
        .as_ref()
        .map(|m| format!(" (plugin logged: {m})"))
        .unwrap_or_default();
    match error.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => {
            let data = store.data();
            PolicyError::Timeout {
                deadline_ms: data.deadline_ms,
                call: data.call,
                items: data.items,
                by_wall: data.clock.is_some_and(|c| c.stopped_by_wall),
            }
        }
        Some(Trap::OutOfFuel) => PolicyError::OutOfFuel(limits.fuel.unwrap_or(0)),
        Some(trap) => PolicyError::Trap(format!("{trap}{said}")),
        // A message can carry the plugin's own text (names from its component): escaped.
        None => PolicyError::Trap(format!("{}{said}", escape(&root_message(&error)))),
    }
}

/// The innermost cause, which is what names the problem (the outer layers name the call).
fn root_message(error: &wasmtime::Error) -> String {
    error
        .chain()
        .last()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

/// Annotation keys a catalog interns: every exposed key of a catalog object (flavor,
/// ClusterQueue, Cohort). Workloads' annotations go through the string table instead.
pub(super) fn exposed_keys(cluster: &Cluster, exposure: &Exposure) -> BTreeSet<String> {
    let all = cluster
        .node_meta
        .iter()
        .map(|n| &n.annotations)
        .chain(cluster.flavors.values().map(|f| &f.annotations));
    let mut keys = BTreeSet::new();
    for map in all {
        for k in map.keys() {
            if exposure.exposes(k) && !keys.contains(k) {
                keys.insert(k.clone());
            }
        }
    }
    keys
}
