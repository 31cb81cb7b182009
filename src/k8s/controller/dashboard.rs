//! What the controller shows on its dashboard (`wasq controller --dashboard-listen`): the
//! scheduler's state, each Workload's state from its conditions, its history — the Events the
//! controller recorded about it, with the policies their annotations name — and the plugins'
//! figures. Published at most once per refresh interval, with the queue statuses.

use std::sync::{Arc, Mutex};

use crate::api::Workload;
use crate::cluster::WorkloadId;
use crate::dashboard::{Board, History, PluginFigures, PolicyUse, Source, State, Step};
use crate::k8s::client::events::decided_by;
use crate::k8s::sync::core::{is_admitted, is_finished};
use crate::k8s::sync::mirror::Mirror;
use crate::scheduler::Scheduler;

/// Workloads whose history is kept, at most (the least recently changed are forgotten).
pub const HISTORY_WORKLOADS: usize = 20_000;

/// Where the controller's views go, and what feeds them besides the scheduler.
pub struct Feed {
    pub board: Arc<Board>,
    /// Filled by the Events the controller records ([`step_of_event`]).
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

/// A step of a Workload's history from an Event recorded about it: Kueue's reason and note,
/// and the policies wasq's annotations name.
pub fn step_of_event(
    time_ms: i64,
    reason: &str,
    note: &str,
    annotations: &decided_by::Annotations,
) -> Step {
    let mut policies = Vec::new();
    let mut preemptor = None;
    for (key, value) in annotations {
        let Some(extension) = key.strip_prefix(decided_by::PREFIX) else {
            continue;
        };
        if key == decided_by::PREEMPTOR {
            preemptor = Some(value.clone());
            continue;
        }
        // A placement annotation lists one policy per podSet.
        for one in value.split(',') {
            let (name, digest) = decided_by::parse(one.trim());
            let p = PolicyUse {
                extension: extension.to_string(),
                name: name.to_string(),
                digest: digest.unwrap_or("builtin").to_string(),
            };
            if !policies.contains(&p) {
                policies.push(p);
            }
        }
    }
    Step {
        time: time_ms as f64 / 1000.0,
        kind: reason.to_string(),
        cluster_queue: None,
        message: (!note.is_empty()).then(|| note.to_string()),
        preemptor,
        flavors: None,
        policies,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_events_annotations_name_its_policies_and_preemptor() {
        let annotations: decided_by::Annotations = [
            (
                decided_by::PREEMPTION.to_string(),
                "min-runtime@sha256:0123456789abcdef".to_string(),
            ),
            (decided_by::PREEMPTOR.to_string(), "team/urgent".to_string()),
            ("other.example/x".to_string(), "y".to_string()),
        ]
        .into();
        let step = step_of_event(
            90_500,
            "Preempted",
            "Preempted to accommodate a workload",
            &annotations,
        );
        assert_eq!(step.time, 90.5);
        assert_eq!(step.kind, "Preempted");
        assert_eq!(step.preemptor.as_deref(), Some("team/urgent"));
        assert_eq!(
            step.policies,
            vec![PolicyUse {
                extension: "preemption".into(),
                name: "min-runtime".into(),
                digest: "sha256:0123456789abcdef".into(),
            }]
        );
    }
}
