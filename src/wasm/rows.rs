//! The table of admitted workloads of one preemption plugin instance (WIT
//! `preemption.new-rows`): what preemption reads of a workload holding quota crosses into the
//! instance once per admission, the first time the workload is a candidate, and every
//! candidate after that is a row number.
//!
//! The host's side mirrors the guest's table: rows are numbered in the order sent, and the rows
//! first used since the last call are sent with the next one. A row is known by its admission's
//! serial ([`crate::cluster::AdmittedRow::serial`], unique in the process), so a workload
//! admitted again gets a new row and a rebuilt cluster never meets a stale one. The table lives
//! as long as the instance and its catalog (a discarded instance or a new catalog takes it
//! along), and starts again past [`MAX_ROWS`]: admissions come and go, the table never forgets
//! them.

use super::bindings::preemption::exports::wasq::policy::preemption as pre;
use super::bindings::types as t;
use super::convert;
use crate::policy::Candidate;

/// At most this many rows before the table starts again.
/// At most this many rows before the table starts again: as with heads
/// ([`super::heads::MAX_HEADS`]), a table of many MiB costs a call milliseconds at each
/// doubling.
pub const MAX_ROWS: u32 = 16_384;

/// One instance's table, as the host keeps it.
#[derive(Debug)]
pub struct RowTable {
    /// By workload handle: the serial of the admission whose row is `.1` (serial 0: none).
    of: Vec<(u64, u32)>,
    /// Rows the instance holds (including those added since [`RowTable::begin`]).
    len: u32,
    /// Rows held before this call's.
    first: u32,
    /// What this call adds, in row order.
    added: pre::NewRows,
    max_rows: u32,
}

impl Default for RowTable {
    fn default() -> RowTable {
        RowTable::with_max(MAX_ROWS)
    }
}

impl RowTable {
    /// A table that starts again past `max_rows` rows.
    pub fn with_max(max_rows: u32) -> RowTable {
        RowTable {
            of: Vec::new(),
            len: 0,
            first: 0,
            added: pre::NewRows {
                first: 0,
                rows: Vec::new(),
            },
            max_rows: max_rows.max(1),
        }
    }

    /// Starts a call: a table past its bound starts again (the call then sends `first` = 0).
    pub fn begin(&mut self) {
        if self.len >= self.max_rows {
            self.clear();
        }
        self.first = self.len;
        self.added.rows.clear();
    }

    /// Forgets every row: the instance starts a new table with the next row sent (after a new
    /// catalog).
    pub fn clear(&mut self) {
        self.of.clear();
        self.len = 0;
        self.first = 0;
    }

    /// The candidate's row, added to the table (and to this call's new rows) if its admission
    /// has none yet; `identity` says who the workload is, asked only for a new row.
    #[inline]
    pub fn row(
        &mut self,
        c: &Candidate,
        identity: impl FnOnce() -> Option<t::WorkloadIdentity>,
    ) -> u32 {
        let index = c.workload.index();
        if let Some(&(serial, row)) = self.of.get(index)
            && serial == c.serial
            && serial != 0
        {
            return row;
        }
        self.add(c, identity())
    }

    fn add(&mut self, c: &Candidate, identity: Option<t::WorkloadIdentity>) -> u32 {
        let index = c.workload.index();
        if self.of.len() <= index {
            self.of.resize(index + 1, (0, 0));
        }
        let row = self.len;
        self.len += 1;
        self.of[index] = (c.serial, row);
        self.added.rows.push(pre::AdmittedRow {
            workload: c.workload.0,
            cluster_queue: c.cluster_queue.0,
            local_queue: c.local_queue.map(|l| l.0),
            priority: c.priority,
            created: c.created,
            admitted: c.reserved_at,
            requeue_count: c.requeue_count,
            requeue_reason: c.requeue_reason.map(convert::requeue_reason),
            usage: c
                .usage
                .iter()
                .map(|&(fr, amount)| t::FrAmount { fr: fr.0, amount })
                .collect(),
            identity,
        });
        row
    }

    /// This call's new rows, or `None` when it adds none; the buffers come back with
    /// [`RowTable::give_back`].
    pub fn take(&mut self) -> Option<pre::NewRows> {
        if self.added.rows.is_empty() {
            return None;
        }
        let mut added = std::mem::replace(
            &mut self.added,
            pre::NewRows {
                first: 0,
                rows: Vec::new(),
            },
        );
        added.first = self.first;
        Some(added)
    }

    /// Keeps the buffers of a sent [`take`](RowTable::take) for the next call.
    pub fn give_back(&mut self, sent: Option<pre::NewRows>) {
        if let Some(sent) = sent
            && sent.rows.capacity() >= self.added.rows.capacity()
        {
            self.added = sent;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{CqId, WorkloadId};
    use crate::policy::CandidateKind;
    use crate::quota::{FrIdx, NodeId};

    fn candidate(workload: u32, serial: u64, cpu: i64) -> Candidate {
        Candidate {
            workload: WorkloadId(workload),
            serial,
            cluster_queue: CqId(2),
            node: NodeId(5),
            kind: CandidateKind::SameQueue,
            lca: None,
            priority: 7,
            created: 10,
            reserved_at: 20,
            evicted: false,
            local_queue: None,
            requeue_count: 1,
            requeue_reason: Some(crate::cluster::EvictionReason::Preempted),
            usage: crate::quota::FrAmounts::from_slice(&[(FrIdx(0), cpu)]),
            local_queue_usage: None,
        }
    }

    #[test]
    fn a_row_crosses_once_per_admission() {
        let mut table = RowTable::default();
        table.begin();
        let a = candidate(4, 100, 1000);
        let b = candidate(9, 101, 2000);
        assert_eq!(
            (
                table.row(&a, || None),
                table.row(&b, || None),
                table.row(&a, || None)
            ),
            (0, 1, 0)
        );
        let sent = table.take().expect("two new rows");
        assert_eq!(sent.first, 0);
        assert_eq!(
            sent.rows.iter().map(|r| r.workload).collect::<Vec<_>>(),
            [4, 9]
        );
        assert_eq!(
            sent.rows
                .iter()
                .flat_map(|r| r.usage.iter().map(|u| u.amount))
                .collect::<Vec<_>>(),
            [1000, 2000]
        );
        assert_eq!(
            sent.rows[0].requeue_reason,
            Some(t::RequeueReason::Preempted)
        );
        table.give_back(Some(sent));

        // The next call sends only what is new: the same admission is a known row, the same
        // workload admitted again a new one.
        table.begin();
        assert_eq!(table.row(&a, || None), 0);
        assert!(table.take().is_none(), "nothing new");
        table.begin();
        let again = candidate(4, 102, 3000);
        assert_eq!(table.row(&again, || None), 2);
        let sent = table.take().expect("the new admission");
        assert_eq!((sent.first, sent.rows.len()), (2, 1));
        assert_eq!(sent.rows[0].usage[0].amount, 3000);
    }

    #[test]
    fn a_candidate_without_a_serial_is_sent_every_time() {
        let mut table = RowTable::default();
        table.begin();
        let made_up = candidate(0, 0, 1);
        assert_eq!(
            (table.row(&made_up, || None), table.row(&made_up, || None)),
            (0, 1)
        );
    }

    #[test]
    fn the_table_starts_again_past_its_bound_and_after_clear() {
        let mut table = RowTable::with_max(3);
        table.begin();
        for w in 0..3 {
            table.row(&candidate(w, 10 + u64::from(w), 1), || None);
        }
        assert_eq!(table.len, 3);
        table.take();
        table.begin();
        // Past the bound: row numbers start at 0 and the call says so.
        assert_eq!(table.len, 0);
        assert_eq!(table.row(&candidate(1, 11, 1), || None), 0, "sent again");
        assert_eq!(table.take().map(|s| s.first), Some(0));
        table.clear();
        table.begin();
        assert_eq!(
            table.row(&candidate(1, 11, 1), || None),
            0,
            "sent again after a clear"
        );
    }
}
