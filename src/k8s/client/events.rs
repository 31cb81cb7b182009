//! Events (`events.k8s.io/v1`) recorded as client-go's `tools/events` broadcaster records
//! Kueue's, and published off the scheduling path.
//!
//! [`Series`] decides, in memory and in the order Events are recorded, what each one costs:
//! Events are isomorphic when their type, action, reason, reporting controller and instance
//! and the object they regard are the same (the note is not compared, as in client-go's
//! `getKey`). The first of a kind is created; the second turns it into a series (one patch,
//! count 2); later ones only count, in memory. Every 6 minutes a series not observed for 6
//! minutes is finished (its final count patched, then forgotten) and single Events older than
//! that are forgotten; every 30 minutes every live series' count is patched. So an Event
//! repeated every pass (a head that stays `Pending`) costs two requests per six minutes, not
//! one per pass, and the cache is swept on a timer rather than on every Event.
//!
//! [`Publisher`] sends what [`Series`] decided in the background: one batch per controller
//! pass, batches one after the other (so an object's Events stay in order across passes),
//! objects of a batch concurrently (at most [`crate::k8s::client::MAX_IN_FLIGHT`]). A failed
//! Event is logged and dropped, never retried in a loop and never fatal. When more than
//! [`MAX_QUEUED`] requests wait (the API server or the Events' rate limit is slower than the
//! Events come), new Events are dropped and counted, as client-go's broadcaster drops them when
//! its queue is full (its queue holds 1,000), so memory stays bounded.
//!
//! [`decided_by`]: wasq's annotations on the Events of scheduling decisions, naming the policy
//! behind each (Kueue's reason, action and note are left as Kueue writes them).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, Patch, PatchParams, PostParams};

use crate::k8s::client::MAX_IN_FLIGHT;

/// The annotations wasq adds to the Events of its scheduling decisions (`metadata.annotations`
/// of the Event; Kueue's reason, action and note stay Kueue's): the policy behind each step as
/// `NAME@DIGEST` (`builtin` for the built-in policy), and a preemption's preemptor. A series
/// keeps the annotations of its first Event, as it keeps its note.
pub mod decided_by {
    use std::collections::BTreeMap;

    use crate::policy::PolicyRef;

    /// What every key here starts with.
    pub const PREFIX: &str = "policy.wasq.dev/";
    /// QuotaReserved (and Admitted from the same decision): the ordering policy that placed the
    /// Workload in the cycle's order.
    pub const ORDERING: &str = "policy.wasq.dev/ordering";
    /// QuotaReserved (and Admitted from the same decision): the flavor-assignment policy that
    /// chose its flavors; Pending: the one that found no fit (`Decision::NotAdmitted::policy`).
    pub const FLAVOR_ASSIGNMENT: &str = "policy.wasq.dev/flavor-assignment";
    /// QuotaReserved (and Admitted) with topology-aware scheduling: the placement policy of each
    /// TAS podSet, comma-separated in podSet order.
    pub const PLACEMENT: &str = "policy.wasq.dev/placement";
    /// Preempted: the preemption policy that chose the victims.
    pub const PREEMPTION: &str = "policy.wasq.dev/preemption";
    /// Preempted: the preemptor, `namespace/name`.
    pub const PREEMPTOR: &str = "policy.wasq.dev/preemptor";

    /// An Event's annotations.
    pub type Annotations = BTreeMap<String, String>;

    /// `NAME@DIGEST`, or `builtin` for the built-in policy.
    pub fn value(policy: &PolicyRef) -> String {
        if *policy == PolicyRef::builtin() {
            policy.name.to_string()
        } else {
            format!("{}@{}", policy.name, policy.digest)
        }
    }

    /// A policy's name and digest from [`value`]'s form (no digest for `builtin`).
    pub fn parse(value: &str) -> (&str, Option<&str>) {
        match value.rsplit_once('@') {
            Some((name, digest)) => (name, Some(digest)),
            None => (value, None),
        }
    }

    /// A quota reservation's (and its admission's): ordering, flavor assignment, and the
    /// placement of the TAS podSets when there are any.
    pub fn admission(
        ordering: &PolicyRef,
        flavors: &PolicyRef,
        placed: &[PolicyRef],
    ) -> Annotations {
        let mut out = Annotations::new();
        out.insert(ORDERING.into(), value(ordering));
        out.insert(FLAVOR_ASSIGNMENT.into(), value(flavors));
        if !placed.is_empty() {
            let placed: Vec<String> = placed.iter().map(value).collect();
            out.insert(PLACEMENT.into(), placed.join(","));
        }
        out
    }

    /// A preemption's: the preemption policy and the preemptor (`namespace/name`).
    pub fn preemption(policy: &PolicyRef, preemptor: &str) -> Annotations {
        let mut out = Annotations::new();
        out.insert(PREEMPTION.into(), value(policy));
        out.insert(PREEMPTOR.into(), preemptor.to_string());
        out
    }

    /// A pending Workload's: the flavor-assignment policy that found no fit.
    pub fn pending(flavors: &PolicyRef) -> Annotations {
        let mut out = Annotations::new();
        out.insert(FLAVOR_ASSIGNMENT.into(), value(flavors));
        out
    }

    /// A step of a Workload's history from an Event recorded about it: Kueue's reason and note,
    /// and the policies wasq's annotations name.
    pub fn step(
        time_ms: i64,
        reason: &str,
        note: &str,
        annotations: &Annotations,
    ) -> crate::dashboard::Step {
        let mut policies = Vec::new();
        let mut preemptor = None;
        for (key, value) in annotations {
            let Some(extension) = key.strip_prefix(PREFIX) else {
                continue;
            };
            if key == PREEMPTOR {
                preemptor = Some(value.clone());
                continue;
            }
            // A placement annotation lists one policy per podSet.
            for one in value.split(',') {
                let (name, digest) = parse(one.trim());
                let p = crate::dashboard::PolicyUse {
                    extension: extension.to_string(),
                    name: name.to_string(),
                    digest: digest.unwrap_or("builtin").to_string(),
                };
                if !policies.contains(&p) {
                    policies.push(p);
                }
            }
        }
        crate::dashboard::Step {
            time: time_ms as f64 / 1000.0,
            kind: reason.to_string(),
            cluster_queue: None,
            message: (!note.is_empty()).then(|| note.to_string()),
            preemptor,
            flavors: None,
            policies,
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn an_events_annotations_name_its_policies_and_preemptor() {
            let annotations: Annotations = [
                (
                    PREEMPTION.to_string(),
                    "min-runtime@sha256:0123456789abcdef".to_string(),
                ),
                (PREEMPTOR.to_string(), "team/urgent".to_string()),
                ("other.example/x".to_string(), "y".to_string()),
            ]
            .into();
            let step = step(
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
                vec![crate::dashboard::PolicyUse {
                    extension: "preemption".into(),
                    name: "min-runtime".into(),
                    digest: "sha256:0123456789abcdef".into(),
                }]
            );
        }
    }
}

/// Event requests waiting to be sent, at most; beyond, new Events are dropped. Large enough
/// for a backlog of 15,000 admissions released at once (30,000 Events), small enough to bound
/// memory (≈ 1 KB per waiting Event; the series cache holds each Event of the last 6 minutes
/// anyway, as client-go's does).
pub const MAX_QUEUED: usize = 100_000;

/// client-go's `finishTime`: a series not observed for this long is finished.
pub const FINISH_AFTER: Duration = Duration::from_secs(6 * 60);
/// client-go's `refreshTime`: how often live series' counts are written.
pub const REFRESH_EVERY: Duration = Duration::from_secs(30 * 60);

/// What makes two Events the same Event repeated (client-go's `eventKey`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    warning: bool,
    action: String,
    reason: String,
    /// apiVersion, kind, namespace, name, uid of the regarded object.
    regarding: [String; 5],
}

fn regarding_key(r: &ObjectReference) -> [String; 5] {
    [
        r.api_version.clone().unwrap_or_default(),
        r.kind.clone().unwrap_or_default(),
        r.namespace.clone().unwrap_or_default(),
        r.name.clone().unwrap_or_default(),
        r.uid.clone().unwrap_or_default(),
    ]
}

/// One request the publisher makes.
#[derive(Debug, Clone, PartialEq)]
pub enum Send {
    /// Creates a new Event.
    Create(Box<Event>),
    /// Writes a series' count (the Event is created with it if it is gone).
    Series(Box<Event>),
}

impl Send {
    pub fn event(&self) -> &Event {
        match self {
            Send::Create(e) | Send::Series(e) => e,
        }
    }
}

/// One Event as recorded: about what, of which type, why, and what was done.
pub struct Occurrence<'a> {
    pub regarding: &'a ObjectReference,
    pub warning: bool,
    pub reason: &'a str,
    pub action: &'a str,
    pub note: String,
    /// wasq's own ([`decided_by`]); empty for most Events.
    pub annotations: BTreeMap<String, String>,
}

struct Entry {
    event: Event,
    /// When it was last observed (created, for a single Event).
    observed: Instant,
}

/// The recorder's cache of recent Events and their series.
pub struct Series {
    controller: String,
    instance: String,
    entries: HashMap<Key, Entry>,
    last_finish: Instant,
    last_refresh: Instant,
    /// The last name suffix given, so two Events of one object never share a name.
    last_nanos: i128,
}

impl Series {
    pub fn new(controller: &str, instance: &str, now: Instant) -> Series {
        Series {
            controller: controller.into(),
            instance: instance.into(),
            entries: HashMap::new(),
            last_finish: now,
            last_refresh: now,
            last_nanos: 0,
        }
    }

    /// Events held (single or series).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Records one Event observed at `now` (`wall` on the wire); what to send, if anything.
    pub fn record(
        &mut self,
        now: Instant,
        wall: jiff::Timestamp,
        occurrence: Occurrence<'_>,
    ) -> Option<Send> {
        let Occurrence {
            regarding,
            warning,
            reason,
            action,
            note,
            annotations,
        } = occurrence;
        let key = Key {
            warning,
            action: action.into(),
            reason: reason.into(),
            regarding: regarding_key(regarding),
        };
        if let Some(e) = self.entries.get_mut(&key) {
            e.observed = now;
            let count = e.event.series.as_ref().map_or(2, |s| s.count + 1);
            e.event.series = Some(EventSeries {
                count,
                last_observed_time: MicroTime(wall),
            });
            // The second turns the Event into a series; later ones only count.
            return (count == 2).then(|| Send::Series(Box::new(e.event.clone())));
        }
        let nanos = wall.as_nanosecond().max(self.last_nanos + 1);
        self.last_nanos = nanos;
        let namespace = regarding
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".into());
        let event = Event {
            metadata: ObjectMeta {
                name: Some(format!(
                    "{}.{:x}",
                    regarding.name.as_deref().unwrap_or(&self.controller),
                    nanos
                )),
                namespace: Some(namespace),
                annotations: (!annotations.is_empty()).then_some(annotations),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(wall)),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            action: Some(action.into()),
            reason: Some(reason.into()),
            regarding: Some(regarding.clone()),
            note: Some(note),
            type_: Some(if warning { "Warning" } else { "Normal" }.into()),
            ..Event::default()
        };
        self.entries.insert(
            key,
            Entry {
                event: event.clone(),
                observed: now,
            },
        );
        Some(Send::Create(Box::new(event)))
    }

    /// client-go's two timers, run when due: every [`FINISH_AFTER`] the series not observed
    /// since are finished (their last count written) and forgotten, with the single Events as
    /// old; every [`REFRESH_EVERY`] every remaining series' count is written.
    pub fn sweep(&mut self, now: Instant) -> Vec<Send> {
        let mut out = Vec::new();
        if now.duration_since(self.last_finish) >= FINISH_AFTER {
            self.last_finish = now;
            self.entries.retain(|_, e| {
                let live = now.duration_since(e.observed) < FINISH_AFTER;
                if !live && e.event.series.as_ref().is_some_and(|s| s.count > 2) {
                    out.push(Send::Series(Box::new(e.event.clone())));
                }
                live
            });
        }
        if now.duration_since(self.last_refresh) >= REFRESH_EVERY {
            self.last_refresh = now;
            out.extend(
                self.entries
                    .values()
                    .filter(|e| e.event.series.is_some())
                    .map(|e| Send::Series(Box::new(e.event.clone()))),
            );
        }
        out
    }
}

type Limiter = governor::DefaultDirectRateLimiter;

/// Records Events and publishes them in the background.
pub struct Publisher {
    client: kube::Client,
    limiter: Option<Arc<Limiter>>,
    series: Mutex<Series>,
    pending: Mutex<Vec<Send>>,
    /// The batch being published; the next one waits for it.
    last: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Requests flushed and not sent yet.
    queued: Arc<AtomicUsize>,
    max_queued: usize,
    dropped: AtomicU64,
    /// The time Events are stamped with, in milliseconds since the epoch (the system's clock
    /// unless set: the controller's, so that Events and conditions tell one time).
    clock: Option<WallClock>,
}

/// A clock in milliseconds since the epoch.
pub type WallClock = Arc<dyn Fn() -> i64 + std::marker::Send + Sync>;

impl Publisher {
    pub fn new(client: kube::Client, controller: &str, instance: &str) -> Publisher {
        Publisher {
            client,
            limiter: None,
            series: Mutex::new(Series::new(controller, instance, Instant::now())),
            pending: Mutex::new(Vec::new()),
            last: Mutex::new(None),
            queued: Arc::new(AtomicUsize::new(0)),
            max_queued: MAX_QUEUED,
            dropped: AtomicU64::new(0),
            clock: None,
        }
    }

    /// Stamps Events with `clock` rather than the system's.
    pub fn set_clock(&mut self, clock: WallClock) {
        self.clock = Some(clock);
    }

    fn wall(&self) -> jiff::Timestamp {
        self.clock
            .as_ref()
            .and_then(|c| jiff::Timestamp::from_millisecond(c()).ok())
            .unwrap_or_else(jiff::Timestamp::now)
    }

    /// Requests waiting at most (default [`MAX_QUEUED`]).
    pub fn set_max_queued(&mut self, max: usize) {
        self.max_queued = max;
    }

    /// Events dropped because too many requests were waiting.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Paces every request with `limiter`.
    pub fn set_limiter(&mut self, limiter: Option<Arc<Limiter>>) {
        self.limiter = limiter;
    }

    /// Records an Event; what it costs goes out with the next [`Publisher::flush`].
    pub fn record(
        &self,
        regarding: &ObjectReference,
        warning: bool,
        reason: &str,
        action: &str,
        note: String,
        annotations: BTreeMap<String, String>,
    ) {
        let send = match self.series.lock() {
            Ok(mut s) => s.record(
                Instant::now(),
                self.wall(),
                Occurrence {
                    regarding,
                    warning,
                    reason,
                    action,
                    note,
                    annotations,
                },
            ),
            Err(_) => return,
        };
        if let (Some(send), Ok(mut p)) = (send, self.pending.lock()) {
            if self.queued.load(Ordering::Relaxed) + p.len() >= self.max_queued {
                if self
                    .dropped
                    .fetch_add(1, Ordering::Relaxed)
                    .is_multiple_of(1000)
                {
                    tracing::warn!(
                        queued = self.max_queued,
                        "too many Events waiting to be published; dropping new ones"
                    );
                }
                return;
            }
            p.push(send);
        }
    }

    /// Starts publishing what was recorded since the last flush (and what the timers made
    /// due), after the previous batch; returns at once.
    pub fn flush(&self) {
        let mut batch = match self.series.lock() {
            Ok(mut s) => s.sweep(Instant::now()),
            Err(_) => Vec::new(),
        };
        if let Ok(mut p) = self.pending.lock() {
            let mut recorded = std::mem::take(&mut *p);
            recorded.append(&mut batch);
            batch = recorded;
        }
        if batch.is_empty() {
            return;
        }
        let Ok(mut last) = self.last.lock() else {
            return;
        };
        let previous = last.take();
        let client = self.client.clone();
        let limiter = self.limiter.clone();
        let queued = self.queued.clone();
        let n = batch.len();
        queued.fetch_add(n, Ordering::Relaxed);
        *last = Some(tokio::spawn(async move {
            if let Some(p) = previous {
                let _ = p.await;
            }
            publish(client, limiter, batch).await;
            queued.fetch_sub(n, Ordering::Relaxed);
        }));
    }

    /// Waits until every flushed batch has been published.
    pub async fn settled(&self) {
        let handle = self.last.lock().ok().and_then(|mut l| l.take());
        if let Some(h) = handle {
            let _ = h.await;
        }
    }
}

/// Sends a batch: objects concurrently, each object's Events in order.
async fn publish(client: kube::Client, limiter: Option<Arc<Limiter>>, batch: Vec<Send>) {
    let mut per_object: Vec<Vec<Send>> = Vec::new();
    let mut index: HashMap<[String; 5], usize> = HashMap::new();
    for send in batch {
        let key = send
            .event()
            .regarding
            .as_ref()
            .map(regarding_key)
            .unwrap_or_default();
        let i = *index.entry(key).or_insert_with(|| {
            per_object.push(Vec::new());
            per_object.len() - 1
        });
        per_object[i].push(send);
    }
    use futures::StreamExt;
    futures::stream::iter(per_object)
        .for_each_concurrent(MAX_IN_FLIGHT, |sends| {
            let client = client.clone();
            let limiter = limiter.clone();
            async move {
                for send in sends {
                    if let Err(e) = send_one(&client, limiter.as_deref(), &send).await {
                        let ev = send.event();
                        tracing::warn!(reason = ?ev.reason, object = ?ev.regarding.as_ref().and_then(|r| r.name.clone()), error = %e, "cannot publish an event");
                    }
                }
            }
        })
        .await;
}

async fn send_one(
    client: &kube::Client,
    limiter: Option<&Limiter>,
    send: &Send,
) -> Result<(), kube::Error> {
    let event = send.event();
    let namespace = event.metadata.namespace.as_deref().unwrap_or("default");
    let name = event.metadata.name.as_deref().unwrap_or_default();
    let api: Api<Event> = Api::namespaced(client.clone(), namespace);
    if let Some(l) = limiter {
        l.until_ready().await;
    }
    let create = |event: &Event| {
        let api = api.clone();
        let event = event.clone();
        async move {
            match api.create(&PostParams::default(), &event).await {
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
                r => r.map(|_| ()),
            }
        }
    };
    match send {
        Send::Create(e) => create(e).await,
        Send::Series(e) => {
            let body = serde_json::json!({ "series": e.series });
            match api
                .patch(name, &PatchParams::default(), &Patch::Merge(&body))
                .await
            {
                Ok(_) => Ok(()),
                // Gone (expired, deleted): created again with its series, as client-go does.
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    if let Some(l) = limiter {
                        l.until_ready().await;
                    }
                    create(e).await
                }
                Err(e) => Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("kueue.x-k8s.io/v1beta2".into()),
            kind: Some("Workload".into()),
            namespace: Some("team".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            ..ObjectReference::default()
        }
    }

    fn record(s: &mut Series, now: Instant, name: &str, reason: &str, note: &str) -> Option<Send> {
        s.record(
            now,
            jiff::Timestamp::now(),
            Occurrence {
                regarding: &reference(name),
                warning: reason == "Pending",
                reason,
                action: reason,
                note: note.into(),
                annotations: BTreeMap::new(),
            },
        )
    }

    fn count(send: &Option<Send>) -> Option<i32> {
        send.as_ref()
            .and_then(|s| s.event().series.as_ref().map(|s| s.count))
    }

    #[test]
    fn a_repeated_event_is_created_then_made_a_series_then_only_counted() {
        let t0 = Instant::now();
        let mut s = Series::new("wasq", "wasq-0", t0);
        let first = record(&mut s, t0, "a", "Pending", "4 more needed");
        assert!(matches!(first, Some(Send::Create(_))));
        // The note is not part of the key: a changed message is the same Event repeated.
        let second = record(&mut s, t0, "a", "Pending", "3 more needed");
        assert!(matches!(second, Some(Send::Series(_))));
        assert_eq!(count(&second), Some(2));
        assert_eq!(
            second
                .as_ref()
                .and_then(|s| s.event().note.clone())
                .as_deref(),
            Some("4 more needed"),
            "the series keeps the first Event's note"
        );
        for _ in 0..10 {
            assert_eq!(record(&mut s, t0, "a", "Pending", "x"), None);
        }
        // Another reason, or another object, is another Event.
        assert!(matches!(
            record(&mut s, t0, "a", "QuotaReserved", "q"),
            Some(Send::Create(_))
        ));
        assert!(matches!(
            record(&mut s, t0, "b", "Pending", "4 more needed"),
            Some(Send::Create(_))
        ));
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn a_series_keeps_its_first_events_annotations_and_plain_events_have_none() {
        let t0 = Instant::now();
        let mut s = Series::new("wasq", "wasq-0", t0);
        let regarding = reference("a");
        let policy = |digest: &str| crate::policy::PolicyRef {
            name: "fit".into(),
            digest: digest.into(),
        };
        let pending = |digest: &str| Occurrence {
            regarding: &regarding,
            warning: true,
            reason: "Pending",
            action: "Pending",
            note: "no fit".into(),
            annotations: decided_by::pending(&policy(digest)),
        };
        let first = s.record(t0, jiff::Timestamp::now(), pending("sha256:1"));
        let annotations = |send: &Option<Send>| {
            send.as_ref()
                .and_then(|s| s.event().metadata.annotations.clone())
        };
        let expected = BTreeMap::from([(
            decided_by::FLAVOR_ASSIGNMENT.to_string(),
            "fit@sha256:1".to_string(),
        )]);
        assert_eq!(annotations(&first), Some(expected.clone()));
        let second = s.record(t0, jiff::Timestamp::now(), pending("sha256:2"));
        assert_eq!(count(&second), Some(2));
        assert_eq!(annotations(&second), Some(expected), "the first Event's");
        let plain = record(&mut s, t0, "a", "Finished", "done");
        assert_eq!(annotations(&plain), None);
        assert_eq!(
            decided_by::value(&crate::policy::PolicyRef::builtin()),
            "builtin"
        );
        assert_eq!(decided_by::parse("fit@sha256:1"), ("fit", Some("sha256:1")));
        assert_eq!(decided_by::parse("builtin"), ("builtin", None));
    }

    #[test]
    fn names_are_unique_per_object_even_within_one_nanosecond() {
        let t0 = Instant::now();
        let wall = jiff::Timestamp::now();
        let mut s = Series::new("wasq", "wasq-0", t0);
        let names: Vec<String> = ["QuotaReserved", "Admitted"]
            .iter()
            .filter_map(|r| {
                let regarding = reference("a");
                let occurrence = Occurrence {
                    regarding: &regarding,
                    warning: false,
                    reason: r,
                    action: r,
                    note: String::new(),
                    annotations: BTreeMap::new(),
                };
                s.record(t0, wall, occurrence)
            })
            .filter_map(|e| e.event().metadata.name.clone())
            .collect();
        assert_eq!(names.len(), 2);
        assert_ne!(names[0], names[1]);
        assert!(names[0].starts_with("a."));
    }

    #[test]
    fn timers_finish_quiet_series_and_refresh_live_ones() {
        let t0 = Instant::now();
        let mut s = Series::new("wasq", "wasq-0", t0);
        // "a": a series of 5, quiet after t0. "b": a single Event. "c": a series of 2.
        for _ in 0..5 {
            record(&mut s, t0, "a", "Pending", "n");
        }
        record(&mut s, t0, "b", "Admitted", "n");
        record(&mut s, t0, "c", "Pending", "n");
        record(&mut s, t0, "c", "Pending", "n");
        assert!(s.sweep(t0 + Duration::from_secs(60)).is_empty(), "not due");
        // "d" keeps going after the others went quiet.
        let t1 = t0 + Duration::from_secs(5 * 60);
        record(&mut s, t1, "d", "Pending", "n");
        record(&mut s, t1, "d", "Pending", "n");
        record(&mut s, t1, "d", "Pending", "n");
        let finished = s.sweep(t0 + FINISH_AFTER);
        // "a" had counts the cluster has not seen (3..5): its final count is written. "c"'s
        // last count (2) was written already; "b" is dropped silently.
        assert_eq!(finished.len(), 1);
        assert_eq!(
            finished[0].event().series.as_ref().map(|s| s.count),
            Some(5)
        );
        assert_eq!(s.len(), 1, "only the live series is kept");
        // Forgotten: the same Event again is new.
        assert!(matches!(
            record(&mut s, t0 + FINISH_AFTER, "a", "Pending", "n"),
            Some(Send::Create(_))
        ));
        // Kept observed until the refresh: its count (3) written then.
        let mut last = t1;
        while last < t0 + REFRESH_EVERY {
            last += Duration::from_secs(60);
            record(&mut s, last, "d", "Pending", "n");
        }
        let refreshed = s.sweep(t0 + REFRESH_EVERY);
        let d: Vec<i32> = refreshed
            .iter()
            .filter(|e| e.event().regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("d"))
            .filter_map(|e| e.event().series.as_ref().map(|s| s.count))
            .collect();
        assert_eq!(d.len(), 1);
        assert!(d[0] > 3, "{d:?}");
    }
}
