//! Admission-check waits: every time a workload reserved quota with admission checks to pass,
//! when it started waiting for them and when, and how, the wait ended — admitted (every check
//! `Ready`) or released (evicted for a retry, rejected, preempted or finished before its checks
//! were all `Ready`). A wait still open when the run ends has no end. Two numbers per wait,
//! recorded where the simulation starts and ends one ([`super::admission`]); a run without
//! admission checks records nothing.

use std::collections::BTreeMap;

use crate::cluster::{Millis, WorkloadId};

/// One wait for admission checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckWait {
    pub workload: WorkloadId,
    /// When the reservation with pending checks was made.
    pub start: Millis,
    /// When the wait ended, and whether it ended in an admission; `None` while still waiting.
    pub end: Option<(Millis, bool)>,
}

/// The waits of a run, in the order they started.
#[derive(Debug, Clone, Default)]
pub struct CheckWaits {
    waits: Vec<CheckWait>,
    /// The open wait of each waiting workload (an index into `waits`).
    open: BTreeMap<WorkloadId, usize>,
}

impl CheckWaits {
    /// `workload` reserved quota at `now` and waits for its checks.
    pub(crate) fn started(&mut self, workload: WorkloadId, now: Millis) {
        self.ended(workload, now, false);
        self.open.insert(workload, self.waits.len());
        self.waits.push(CheckWait {
            workload,
            start: now,
            end: None,
        });
    }

    /// The wait of `workload`, if it is waiting, ended at `now`: admitted or released.
    pub(crate) fn ended(&mut self, workload: WorkloadId, now: Millis, admitted: bool) {
        if let Some(i) = self.open.remove(&workload) {
            self.waits[i].end = Some((now, admitted));
        }
    }

    /// Every wait, in the order they started.
    pub fn all(&self) -> &[CheckWait] {
        &self.waits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_ends_once_and_a_new_reservation_opens_another() {
        let (a, b) = (WorkloadId(0), WorkloadId(1));
        let mut w = CheckWaits::default();
        w.started(a, 10);
        w.started(b, 12);
        w.ended(a, 15, false);
        w.ended(a, 20, true); // not waiting any more: nothing changes
        w.started(a, 30);
        w.ended(a, 42, true);
        assert_eq!(
            w.all(),
            [
                CheckWait {
                    workload: a,
                    start: 10,
                    end: Some((15, false))
                },
                CheckWait {
                    workload: b,
                    start: 12,
                    end: None
                },
                CheckWait {
                    workload: a,
                    start: 30,
                    end: Some((42, true))
                },
            ]
        );
    }
}
