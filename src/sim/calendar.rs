//! When admitted workloads finish: one bucket of workloads per instant on the virtual clock.
//!
//! A run's finishes fall on few instants (an admission's cycle plus its class's runtime), so the
//! calendar keeps a short ordered map of instants, each with the workloads finishing then. It
//! gives them in the order a min-heap of `(instant, workload id)` would (earliest first, ids
//! ascending within an instant), but taking the next one is a pop from the end of a list rather
//! than a sift through a heap of every running workload: at ten times Kueue's large scale each
//! of the run's 530,000 pops walked that heap from root to leaf through lines no longer in the
//! cache, 61 profile samples where 1× had 2 (BENCHMARKS.md, stop 47).
//!
//! A cancelled finish stays in its bucket; the caller skips entries it no longer expects.

use std::collections::BTreeMap;

use crate::cluster::{Millis, WorkloadId};

#[derive(Debug, Clone, Default)]
pub(crate) struct FinishCalendar {
    buckets: BTreeMap<Millis, Bucket>,
}

/// The workloads finishing at one instant; once sorted, highest id first, so that the next one
/// is the last.
#[derive(Debug, Clone, Default)]
struct Bucket {
    ids: Vec<WorkloadId>,
    sorted: bool,
}

impl FinishCalendar {
    pub fn push(&mut self, at: Millis, id: WorkloadId) {
        let bucket = self.buckets.entry(at).or_default();
        bucket.ids.push(id);
        bucket.sorted = false;
    }

    /// The earliest entry: the lowest id of the earliest instant.
    pub fn peek(&mut self) -> Option<(Millis, WorkloadId)> {
        let mut first = self.buckets.first_entry()?;
        let at = *first.key();
        let bucket = first.get_mut();
        if !bucket.sorted {
            bucket.ids.sort_unstable_by(|a, b| b.cmp(a));
            bucket.sorted = true;
        }
        Some((at, *bucket.ids.last().expect("no empty bucket is kept")))
    }

    /// Removes the entry [`FinishCalendar::peek`] gives.
    pub fn pop(&mut self) -> Option<(Millis, WorkloadId)> {
        let next = self.peek()?;
        let mut first = self.buckets.first_entry().expect("peeked");
        first.get_mut().ids.pop();
        if first.get().ids.is_empty() {
            first.remove();
        }
        Some(next)
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    use super::*;

    #[test]
    fn entries_come_out_as_from_a_min_heap_of_instant_and_id() {
        // Pushes and pops interleaved, repeated instants and ids, an entry pushed twice, and
        // pushes into the bucket being drained, against the heap the calendar replaces.
        let mut calendar = FinishCalendar::default();
        let mut heap = BinaryHeap::new();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..5_000 {
            let r = next();
            if r % 3 == 0 {
                let got = calendar.pop();
                let want = heap.pop().map(|Reverse(e)| e);
                assert_eq!(got, want);
            } else {
                let at = ((r >> 8) % 20) as Millis;
                let id = WorkloadId(((r >> 20) % 50) as u32);
                calendar.push(at, id);
                heap.push(Reverse((at, id)));
            }
            assert_eq!(calendar.peek(), heap.peek().map(|&Reverse(e)| e));
        }
        while let Some(Reverse(want)) = heap.pop() {
            assert_eq!(calendar.pop(), Some(want));
        }
        assert_eq!(calendar.pop(), None);
        assert!(calendar.buckets.is_empty());
    }
}
