//! The usage log: every reservation (+) and release (−) of quota in time order, with the
//! admissions it names each kept once.
//!
//! The log outlives every admission it records: the fairness report, cost attribution and
//! `wasq compare` replay it after the run. Holding the admission each reservation made kept
//! every admission of the run alive (216 bytes each with the `Arc`'s counts, 530,000 at ten
//! times Kueue's large scale), and each was memory the kernel had to hand the process fresh
//! while the run went on (BENCHMARKS.md, stop 47). Most are alike: the same ClusterQueue,
//! podSets, counts, flavors and usage, only the reservation time differs. The log keeps one
//! admission per such body, an entry names its body by index (16 bytes an entry, no reference
//! count to touch), and a release names the body its workload's reservation did, so that a
//! release reads neither the admission nor the table of bodies.
//!
//! An admission is its body: its ClusterQueue, podSets and usage (the time it was reserved is
//! the cluster's admitted row's, and a change's own time is its `at`).

use std::hash::{Hash, Hasher};

use hashbrown::HashTable;

use super::fairness::UsageChange;
use super::log::{self, ChunkedLog};
use crate::cluster::{Admission, Millis, WorkloadId};

/// No body (a workload that holds no logged reservation).
const NONE: u32 = u32::MAX;
/// The bit of [`Entry::body`] that marks a reservation.
const RESERVED: u32 = 1 << 31;

/// The log of a run's reservations and releases.
#[derive(Debug, Clone, Default)]
pub(crate) struct UsageLog {
    entries: ChunkedLog<Entry>,
    /// Each distinct admission body, by index.
    bodies: Vec<Admission>,
    /// Indices into `bodies`, by body hash.
    index: HashTable<u32>,
    /// Per workload id: the body of the reservation it holds, or [`NONE`].
    held: Vec<u32>,
}

/// One change as stored.
#[derive(Debug, Clone, Copy)]
struct Entry {
    at: Millis,
    workload: WorkloadId,
    /// The body's index, with [`RESERVED`] set for a reservation.
    body: u32,
}

const _: () = assert!(size_of::<Entry>() == 16);

impl UsageLog {
    /// Records that `id` reserved `admission` at `at`.
    pub fn reserve(&mut self, at: Millis, id: WorkloadId, admission: &Admission) {
        let body = self.intern(admission);
        let i = id.index();
        if self.held.len() <= i {
            self.held.resize(i + 1, NONE);
        }
        self.held[i] = body;
        self.entries.push(Entry {
            at,
            workload: id,
            body: body | RESERVED,
        });
    }

    /// Records that `id` released its reservation at `at`; nothing when it holds none.
    pub fn release(&mut self, at: Millis, id: WorkloadId) {
        let Some(slot) = self.held.get_mut(id.index()) else {
            return;
        };
        let body = std::mem::replace(slot, NONE);
        if body == NONE {
            return;
        }
        self.entries.push(Entry {
            at,
            workload: id,
            body,
        });
    }

    /// The admission `id`'s logged reservation names, if it holds one.
    pub fn held(&self, id: WorkloadId) -> Option<&Admission> {
        let body = *self.held.get(id.index())?;
        (body != NONE).then(|| &self.bodies[body as usize])
    }

    /// The changes in the order recorded.
    pub fn iter(&self) -> Changes<'_> {
        Changes {
            log: self,
            entries: self.entries.iter(),
        }
    }

    /// The index of the body alike to `a`, added when new.
    fn intern(&mut self, a: &Admission) -> u32 {
        let hash = body_hash(a);
        let bodies = &self.bodies;
        if let Some(&found) = self.index.find(hash, |&b| bodies[b as usize] == *a) {
            return found;
        }
        let body = u32::try_from(self.bodies.len())
            .ok()
            .filter(|&b| b < RESERVED)
            .expect("fewer than 2^31 distinct admissions");
        self.bodies.push(a.clone());
        let bodies = &self.bodies;
        self.index
            .insert_unique(hash, body, |&b| body_hash(&bodies[b as usize]));
        body
    }

    /// How many distinct bodies are kept.
    #[cfg(test)]
    fn bodies(&self) -> usize {
        self.bodies.len()
    }
}

/// The changes of a [`UsageLog`], each with the admission it names.
pub(crate) struct Changes<'a> {
    log: &'a UsageLog,
    entries: log::Iter<'a, Entry>,
}

impl<'a> Iterator for Changes<'a> {
    type Item = UsageChange<'a>;

    fn next(&mut self) -> Option<UsageChange<'a>> {
        let e = self.entries.next()?;
        Some(UsageChange {
            at: e.at,
            workload: e.workload,
            reserved: e.body & RESERVED != 0,
            admission: &self.log.bodies[(e.body & !RESERVED) as usize],
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }
}

impl<'a> IntoIterator for &'a UsageLog {
    type Item = UsageChange<'a>;
    type IntoIter = Changes<'a>;

    fn into_iter(self) -> Changes<'a> {
        self.iter()
    }
}

fn body_hash(a: &Admission) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    a.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use smallvec::smallvec;

    use super::*;
    use crate::cluster::{CqId, PodSetAdmission};
    use crate::quota::{FlavorId, FrIdx, ResourceId};

    fn admission(cq: u32, count: i32, cpu: i64) -> Admission {
        Admission {
            cluster_queue: CqId(cq),
            pod_sets: smallvec![PodSetAdmission {
                name: "main".into(),
                count,
                flavors: smallvec![(ResourceId(0), FlavorId(0))],
                topology: None,
            }],
            usage: smallvec![(FrIdx(0), cpu)],
        }
    }

    fn changes(log: &UsageLog) -> Vec<(Millis, u32, bool, Admission)> {
        log.iter()
            .map(|c| (c.at, c.workload.0, c.reserved, c.admission.clone()))
            .collect()
    }

    #[test]
    fn alike_admissions_are_kept_once_and_each_change_names_what_was_reserved() {
        let mut log = UsageLog::default();
        let plain = admission(1, 2, 2000);
        let mut flavored = plain.clone();
        flavored.pod_sets[0].flavors[0].1 = FlavorId(1);
        let reserved = [
            (10, 0, plain.clone()),
            // Reserved at another time: the same body.
            (20, 1, admission(1, 2, 2000)),
            // Another queue, count, usage or flavor is another body.
            (20, 2, admission(2, 2, 2000)),
            (30, 3, admission(1, 3, 2000)),
            (30, 4, admission(1, 2, 3000)),
            (30, 5, flavored.clone()),
        ];
        for (at, id, a) in &reserved {
            log.reserve(*at, WorkloadId(*id), a);
        }
        assert_eq!(log.bodies(), 5);
        log.release(40, WorkloadId(1));
        log.release(40, WorkloadId(5));
        // Nothing held: no change.
        log.release(40, WorkloadId(1));
        log.release(40, WorkloadId(9));
        // Reserved again, with another body.
        log.reserve(50, WorkloadId(1), &flavored);
        assert_eq!(
            log.held(WorkloadId(1)).map(|a| a.pod_sets[0].flavors[0].1),
            Some(FlavorId(1))
        );
        assert!(log.held(WorkloadId(5)).is_none());

        let mut want: Vec<_> = reserved
            .iter()
            .map(|(at, id, a)| (*at, *id, true, a.clone()))
            .collect();
        want.push((40, 1, false, plain.clone()));
        want.push((40, 5, false, flavored.clone()));
        want.push((50, 1, true, flavored));
        assert_eq!(changes(&log), want);
        assert_eq!((&log).into_iter().count(), want.len());
    }
}
