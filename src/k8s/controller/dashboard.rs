//! What the controller shows on its dashboard (`wasq controller --dashboard-listen`): the
//! scheduler's state, each Workload's state from its conditions, its history — the Events the
//! controller recorded about it, with the policies their annotations name — and the plugins'
//! figures. Published at most once per refresh interval, with the queue statuses.

use std::sync::{Arc, Mutex};

use crate::api::Workload;
use crate::cluster::WorkloadId;
use crate::dashboard::{Board, History, PluginFigures, Source, State, Step};
use crate::k8s::sync::core::{is_admitted, is_finished};
use crate::k8s::sync::mirror::Mirror;
use crate::scheduler::Scheduler;

/// Workloads whose history is kept, at most (the least recently changed are forgotten).
pub const HISTORY_WORKLOADS: usize = 20_000;

/// Where the controller's views go, and what feeds them besides the scheduler.
pub struct Feed {
    pub board: Arc<Board>,
    /// Filled by the Events the controller records
    /// ([`crate::k8s::client::events::decided_by::step`]).
    pub history: Arc<Mutex<History>>,
    pub plugins: Option<crate::wasm::PluginSource>,
    /// QueuePolicy modules, whose figures are their plugins'.
    pub objects: Option<Arc<crate::wasm::PolicyObjects>>,
}

impl Feed {
    pub fn new(
        board: Arc<Board>,
        plugins: Option<crate::wasm::PluginSource>,
        objects: Option<Arc<crate::wasm::PolicyObjects>>,
    ) -> Feed {
        Feed {
            board,
            history: Arc::new(Mutex::new(History::new(HISTORY_WORKLOADS))),
            plugins,
            objects,
        }
    }
}

struct ControllerSource<'a> {
    scheduler: &'a Scheduler,
    mirror: &'a Mirror,
    feed: &'a Feed,
    history: std::sync::MutexGuard<'a, History>,
}

impl ControllerSource<'_> {
    fn workload(&self, id: WorkloadId) -> Option<&Workload> {
        let key = &self.scheduler.cluster.workload(id).key;
        self.mirror.workloads.get(key).map(|w| &**w)
    }
}

impl Source for ControllerSource<'_> {
    fn state(&self, id: WorkloadId, default: Option<State>) -> Option<State> {
        let wl = self.workload(id);
        if wl.is_some_and(is_finished) {
            return Some(State::Finished);
        }
        if wl.is_some_and(|w| w.spec.active == Some(false)) {
            return Some(State::Inactive);
        }
        default
    }

    fn history(&self, id: WorkloadId) -> Vec<Step> {
        self.history.get(&self.scheduler.cluster.workload(id).key)
    }

    fn reason(&self, id: WorkloadId) -> Option<String> {
        // The condition the controller wrote; else the latest Pending Event's note.
        let from_condition = self.workload(id).and_then(|w| {
            w.status
                .as_ref()?
                .conditions
                .iter()
                .find(|c| c.type_ == "QuotaReserved" && c.status == "False")
                .map(|c| format!("{}: {}", c.reason, c.message))
        });
        from_condition.or_else(|| {
            self.history
                .reason(&self.scheduler.cluster.workload(id).key)
        })
    }

    fn plugins(&self) -> Vec<PluginFigures> {
        let mut out: Vec<PluginFigures> = self
            .feed
            .plugins
            .as_ref()
            .map(|s| {
                s.snapshot()
                    .plugins()
                    .map(|p| PluginFigures::of(p.info(), &p.status()))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(objects) = &self.feed.objects {
            out.extend(
                objects
                    .snapshot()
                    .iter()
                    .map(|o| PluginFigures::of(o.plugin.info(), &o.plugin.status())),
            );
        }
        out
    }
}

/// Publishes the scheduler's state now (`now_ms`: the controller's clock).
pub fn publish(feed: &Feed, scheduler: &Scheduler, mirror: &Mirror, now_ms: i64) {
    let history = feed.history.lock().unwrap_or_else(|e| e.into_inner());
    let source = ControllerSource {
        scheduler,
        mirror,
        feed,
        history,
    };
    let admitted = |id: WorkloadId| source.workload(id).is_some_and(is_admitted);
    let mut published = crate::dashboard::build(
        scheduler,
        &source,
        &admitted,
        "wasq controller",
        "wall",
        now_ms as f64 / 1000.0,
    );
    published.view.running = true;
    drop(source);
    feed.board.publish(published);
}
