//! The run's timeline, kept compact: one fixed-size [`Record`] per event, naming its workload,
//! ClusterQueue and preemptor by id and its reason and policies by an index into tables that
//! hold each distinct text and policy once. A large run has millions of events whose texts
//! repeat (the same pending message for every workload of a shape), so the words are kept
//! once and put together only when an event is read ([`Timeline::iter`], as an owned
//! [`Event`]) or written ([`Timeline`]'s `Serialize`, the same JSON as a `Vec<Event>`).

use std::fmt;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde::ser::{SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};

use crate::cluster::{Admission, CqId, WorkloadId};
use crate::policy::PolicyRef;

use super::log::ChunkedLog;
use super::report::{AdmissionReport, Event, EventType};

/// No id (an absent ClusterQueue, preemptor, reason or ordering policy).
const NONE: u32 = u32::MAX;

/// One event as recorded: ids and indexes only (32 bytes, no heap). Its time and cycle are
/// an index into the recorder's instants: a large run's millions of events happen at few
/// instants (Kueue's large-scale shape: 215,450 events at 131; every event of a cycle at the
/// cycle's), and a time and a cycle in every record took 16 of its 48 bytes, memory that the
/// kernel handed the run fresh as it went (BENCHMARKS.md, stop 47).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Record {
    /// Index into [`Recorder::instants`].
    instant: u32,
    pub workload: WorkloadId,
    cluster_queue: u32,
    /// A `Preempted` event's preemptor; an `Admitted` event's admission (an index into
    /// [`Recorder::admissions`]): no event has both.
    preemptor: u32,
    reason: u32,
    policy: u32,
    ordered_by: u32,
    pub kind: EventType,
}

const _: () = assert!(size_of::<Record>() == 32);

impl Record {
    pub fn cluster_queue(&self) -> Option<CqId> {
        (self.cluster_queue != NONE).then_some(CqId(self.cluster_queue))
    }

    pub fn preemptor(&self) -> Option<WorkloadId> {
        (self.preemptor != NONE && self.kind != EventType::Admitted)
            .then_some(WorkloadId(self.preemptor))
    }

    /// An admission's index into [`Recorder::admissions`].
    fn admission(&self) -> Option<usize> {
        (self.preemptor != NONE && self.kind == EventType::Admitted)
            .then_some(self.preemptor as usize)
    }
}

/// Each distinct text once, by index.
#[derive(Debug, Clone, Default)]
pub(crate) struct Texts {
    list: Vec<Arc<str>>,
    index: FxHashMap<Arc<str>, u32>,
}

impl Texts {
    /// The index of `text`, added when new.
    pub fn intern(&mut self, text: &str) -> u32 {
        if let Some(&i) = self.index.get(text) {
            return i;
        }
        let i = u32::try_from(self.list.len()).expect("fewer than 2^32 distinct texts");
        let shared: Arc<str> = Arc::from(text);
        self.list.push(shared.clone());
        self.index.insert(shared, i);
        i
    }

    pub fn get(&self, i: u32) -> &str {
        &self.list[i as usize]
    }
}

/// What the simulation records while it runs: the records, and the texts and policies they
/// point into. Names of workloads and ClusterQueues stay in the cluster until the report.
#[derive(Debug, Clone, Default)]
pub(crate) struct Recorder {
    pub records: ChunkedLog<Record>,
    pub texts: Texts,
    policies: Vec<PolicyRef>,
    /// What `Admitted` events admitted, each distinct admission once (alike admissions are
    /// alike bodies, `cluster::bodies`: a generated shape has a handful), shared with the
    /// cluster's holdings.
    admissions: Vec<Arc<Admission>>,
    admission_index: FxHashMap<Arc<Admission>, u32>,
    /// Each (seconds on the virtual clock, cycle) at which events happened, in the order
    /// first recorded; a record names its own by index. A new one is added whenever an event
    /// does not happen at the last one.
    instants: Vec<(f64, u64)>,
}

/// An event to record, before its texts and policies are interned.
pub(crate) struct NewEvent<'a> {
    pub time: f64,
    pub cycle: u64,
    pub kind: EventType,
    pub workload: WorkloadId,
    pub cluster_queue: Option<CqId>,
    pub reason: Option<&'a str>,
    pub preemptor: Option<WorkloadId>,
    pub policy: Option<PolicyRef>,
}

impl Recorder {
    pub fn push(&mut self, e: NewEvent<'_>) {
        let reason = e.reason.map_or(NONE, |r| self.texts.intern(r));
        let policy = self.policy_index(e.policy.unwrap_or_else(PolicyRef::builtin));
        let instant = self.instant((e.time, e.cycle));
        self.records.push(Record {
            instant,
            workload: e.workload,
            cluster_queue: e.cluster_queue.map_or(NONE, |c| c.0),
            preemptor: e.preemptor.map_or(NONE, |p| p.0),
            reason,
            policy,
            ordered_by: NONE,
            kind: e.kind,
        });
    }

    /// The index of `at` among the instants: the last one when the event happens then.
    fn instant(&mut self, at: (f64, u64)) -> u32 {
        // Compared by bits, so that an instant is only ever shared by equal times.
        let same = |&(t, c): &(f64, u64)| t.to_bits() == at.0.to_bits() && c == at.1;
        if !self.instants.last().is_some_and(same) {
            self.instants.push(at);
        }
        u32::try_from(self.instants.len() - 1).expect("fewer than 2^32 instants")
    }

    /// The (seconds, cycle) of a record.
    pub fn at(&self, r: &Record) -> (f64, u64) {
        self.instants[r.instant as usize]
    }

    /// Sets what the last event, an `Admitted` one, admitted.
    pub fn set_last_admission(&mut self, admission: Arc<Admission>) {
        let Some(r) = self.records.last_mut() else {
            return;
        };
        if r.kind != EventType::Admitted {
            return;
        }
        let next = u32::try_from(self.admissions.len()).expect("fewer than 2^32 admissions");
        r.preemptor = *self
            .admission_index
            .entry(admission.clone())
            .or_insert_with(|| {
                self.admissions.push(admission);
                next
            });
    }

    /// Sets the last event's ordering policy (an admission's).
    pub fn set_last_ordered_by(&mut self, policy: PolicyRef) {
        let i = self.policy_index(policy);
        if let Some(r) = self.records.last_mut() {
            r.ordered_by = i;
        }
    }

    /// A run binds a handful of policies: a short list, searched from its end. By pointer
    /// first: a bound policy's decisions carry clones of one ref, so the first pass finds
    /// them without comparing text, where `==` would compare the digest of every other
    /// policy listed before it reached theirs (with three plugins at Kueue's large scale,
    /// 13 M instructions of lookups and `memcmp` more than a built-in run spends).
    fn policy_index(&mut self, policy: PolicyRef) -> u32 {
        let found = self.policies.iter().rposition(|p| p.shares(&policy));
        if let Some(i) = found.or_else(|| self.policies.iter().rposition(|p| *p == policy)) {
            return i as u32;
        }
        self.policies.push(policy);
        (self.policies.len() - 1) as u32
    }

    pub fn reason(&self, r: &Record) -> Option<&str> {
        (r.reason != NONE).then(|| self.texts.get(r.reason))
    }

    /// A record's policy, its ordering policy (admissions) and what it admitted.
    pub fn decided(&self, r: &Record) -> (&PolicyRef, Option<&PolicyRef>, Option<&Admission>) {
        (
            &self.policies[r.policy as usize],
            (r.ordered_by != NONE).then(|| &self.policies[r.ordered_by as usize]),
            r.admission().map(|i| &*self.admissions[i]),
        )
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }
}

/// The report's timeline: the records and the names they resolve to. Reads as a list of
/// [`Event`]s (each put together when read) and serializes as one.
#[derive(Clone, Default)]
pub struct Timeline {
    recorded: Recorder,
    /// `namespace/name` by workload id.
    workloads: Arc<[Box<str>]>,
    /// By ClusterQueue id.
    cluster_queues: Arc<[Box<str>]>,
    /// The recorded admissions as reported, by index.
    admissions: Arc<[AdmissionReport]>,
}

/// One event of a [`Timeline`], borrowed: its texts are the timeline's.
#[derive(Clone, Copy)]
pub struct EventRef<'a> {
    timeline: &'a Timeline,
    record: &'a Record,
}

impl<'a> EventRef<'a> {
    pub fn time(&self) -> f64 {
        self.timeline.recorded.at(self.record).0
    }

    pub fn cycle(&self) -> u64 {
        self.timeline.recorded.at(self.record).1
    }

    pub fn kind(&self) -> EventType {
        self.record.kind
    }

    /// `namespace/name`.
    pub fn workload(&self) -> &'a str {
        &self.timeline.workloads[self.record.workload.index()]
    }

    pub fn cluster_queue(&self) -> Option<&'a str> {
        let t = self.timeline;
        self.record
            .cluster_queue()
            .map(|c| &*t.cluster_queues[c.index()])
    }

    pub fn reason(&self) -> Option<&'a str> {
        self.timeline.recorded.reason(self.record)
    }

    pub fn preemptor(&self) -> Option<&'a str> {
        let t = self.timeline;
        self.record.preemptor().map(|p| &*t.workloads[p.index()])
    }

    pub fn policy(&self) -> &'a PolicyRef {
        &self.timeline.recorded.policies[self.record.policy as usize]
    }

    pub fn ordered_by(&self) -> Option<&'a PolicyRef> {
        let r = self.record.ordered_by;
        (r != NONE).then(|| &self.timeline.recorded.policies[r as usize])
    }

    /// An admission's flavors, counts and topology assignment.
    pub fn admission(&self) -> Option<&'a AdmissionReport> {
        self.record
            .admission()
            .and_then(|i| self.timeline.admissions.get(i))
    }

    /// The event as an owned value.
    pub fn to_event(&self) -> Event {
        Event {
            time: self.time(),
            cycle: self.cycle(),
            kind: self.kind(),
            workload: self.workload().to_string(),
            cluster_queue: self.cluster_queue().map(str::to_string),
            reason: self.reason().map(str::to_string),
            preemptor: self.preemptor().map(str::to_string),
            policy: self.policy().clone(),
            ordered_by: self.ordered_by().cloned(),
            admission: self.admission().cloned(),
        }
    }
}

impl Timeline {
    /// The timeline of `recorded`, its workloads and ClusterQueues named by `workloads` and
    /// `cluster_queues` (indexed by id), its admissions as `report` reports them.
    pub(crate) fn new(
        recorded: Recorder,
        workloads: Arc<[Box<str>]>,
        cluster_queues: Arc<[Box<str>]>,
        report: impl Fn(&Admission) -> AdmissionReport,
    ) -> Timeline {
        let admissions = recorded.admissions.iter().map(|a| report(a)).collect();
        Timeline {
            recorded,
            workloads,
            cluster_queues,
            admissions,
        }
    }

    pub fn len(&self) -> usize {
        self.recorded.len()
    }

    pub fn is_empty(&self) -> bool {
        self.recorded.records.is_empty()
    }

    /// The events, borrowed, in order.
    pub fn refs(&self) -> impl DoubleEndedIterator<Item = EventRef<'_>> + ExactSizeIterator {
        self.recorded.records.iter().map(move |record| EventRef {
            timeline: self,
            record,
        })
    }

    /// The events as owned values, in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Event> + ExactSizeIterator + '_ {
        self.refs().map(|e| e.to_event())
    }

    pub fn get(&self, i: usize) -> Option<Event> {
        self.recorded.records.get(i).map(|record| {
            EventRef {
                timeline: self,
                record,
            }
            .to_event()
        })
    }

    pub fn first(&self) -> Option<Event> {
        self.get(0)
    }

    pub fn last(&self) -> Option<Event> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// The events as owned values.
    pub fn to_vec(&self) -> Vec<Event> {
        self.iter().collect()
    }
}

impl<'a> IntoIterator for &'a Timeline {
    type Item = Event;
    type IntoIter = Box<dyn Iterator<Item = Event> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl fmt::Debug for Timeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Timeline {
    fn eq(&self, other: &Timeline) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl PartialEq<Vec<Event>> for Timeline {
    fn eq(&self, other: &Vec<Event>) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter().cloned())
    }
}

/// Written exactly as [`Event`]'s derived `Serialize` writes it.
impl Serialize for EventRef<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (ordered_by, admission) = (self.ordered_by(), self.admission());
        let n = 8 + usize::from(ordered_by.is_some()) + usize::from(admission.is_some());
        let mut s = serializer.serialize_struct("Event", n)?;
        s.serialize_field("time", &self.time())?;
        s.serialize_field("cycle", &self.cycle())?;
        s.serialize_field("type", &self.kind())?;
        s.serialize_field("workload", self.workload())?;
        s.serialize_field("clusterQueue", &self.cluster_queue())?;
        s.serialize_field("reason", &self.reason())?;
        s.serialize_field("preemptor", &self.preemptor())?;
        s.serialize_field("policy", self.policy())?;
        match ordered_by {
            Some(p) => s.serialize_field("orderedBy", p)?,
            None => s.skip_field("orderedBy")?,
        }
        match admission {
            Some(a) => s.serialize_field("admission", a)?,
            None => s.skip_field("admission")?,
        }
        s.end()
    }
}

impl Serialize for Timeline {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.len()))?;
        for e in self.refs() {
            seq.serialize_element(&e)?;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin(name: &str, digest: &str) -> PolicyRef {
        PolicyRef {
            name: name.into(),
            digest: digest.into(),
        }
    }

    fn event(time: f64, cycle: u64, workload: u32) -> NewEvent<'static> {
        NewEvent {
            time,
            cycle,
            kind: EventType::Requeued,
            workload: WorkloadId(workload),
            cluster_queue: None,
            reason: None,
            preemptor: None,
            policy: None,
        }
    }

    #[test]
    fn each_event_keeps_its_own_time_and_cycle_while_equal_instants_are_kept_once() {
        let mut r = Recorder::default();
        let at = [
            (0.5, 1),
            (0.5, 1),
            (0.5, 2),
            (1.25, 2),
            (1.25, 2),
            (0.5, 1),
            (-0.0, 3),
            (0.0, 3),
        ];
        for (i, &(t, c)) in at.iter().enumerate() {
            r.push(event(t, c, i as u32));
        }
        let got: Vec<(u64, u64, u32)> = r
            .records
            .iter()
            .map(|rec| (r.at(rec).0.to_bits(), r.at(rec).1, rec.workload.0))
            .collect();
        let want: Vec<(u64, u64, u32)> = at
            .iter()
            .enumerate()
            .map(|(i, &(t, c))| (f64::to_bits(t), c, i as u32))
            .collect();
        assert_eq!(got, want);
        // Runs of equal instants share one; a return to an earlier one adds it again.
        assert_eq!(r.instants.len(), 6);
    }

    #[test]
    fn a_policy_is_listed_once_whether_its_ref_is_shared_or_only_equal() {
        let mut r = Recorder::default();
        let a = plugin("kueue-default-preemption", "sha256:aa");
        let b = plugin("kueue-default-ordering", "sha256:bb");
        assert_eq!(r.policy_index(PolicyRef::builtin()), 0);
        assert_eq!(r.policy_index(a.clone()), 1);
        assert_eq!(r.policy_index(b.clone()), 2);
        // Clones share the strings: found by pointer.
        assert!(a.clone().shares(&a));
        assert_eq!(r.policy_index(a.clone()), 1);
        assert_eq!(r.policy_index(PolicyRef::builtin()), 0);
        // Equal text in other allocations (a reload of the same file): the same entry.
        let a_again = plugin("kueue-default-preemption", "sha256:aa");
        assert!(!a_again.shares(&a));
        assert_eq!(r.policy_index(a_again), 1);
        assert_eq!(
            r.policy_index(plugin("kueue-default-ordering", "sha256:bb")),
            2
        );
        // Another digest of the same name is another policy.
        assert_eq!(
            r.policy_index(plugin("kueue-default-preemption", "sha256:cc")),
            3
        );
        assert_eq!(r.policies.len(), 4);
    }
}
