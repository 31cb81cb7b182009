//! The instance's table of admitted workloads (`wit/preemption.wit`, `record new-rows`): what
//! preemption reads of each workload holding quota, kept between calls as columns, so that a
//! request's candidates are row numbers into it.

use crate::columns::usage_of;
use crate::preemption::NO_LOCAL_QUEUE;
use crate::types::{FrAmount, RequeueReason};
use crate::workload::{NO_REQUEUE_REASON, requeue_reason_of};

use crate::bindings::preemption::exports::wasq::policy::preemption as wit;

/// The rows the host sent, as columns. Every column holds one entry more than the table has
/// rows: the last is an empty row (workload 0, ClusterQueue 0, no quota), which a candidate
/// naming a row the host never sent reads instead.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AdmittedTable {
    pub(crate) workloads: Vec<u32>,
    pub(crate) cluster_queues: Vec<u32>,
    pub(crate) local_queues: Vec<u32>,
    pub(crate) priorities: Vec<i64>,
    pub(crate) created: Vec<i64>,
    pub(crate) admitted: Vec<i64>,
    pub(crate) requeue_counts: Vec<u32>,
    pub(crate) requeue_reasons: Vec<u8>,
    /// Row `r` holds `usage_frs[k]`, `usage_amounts[k]` for `k` in
    /// `usage_offsets[r] .. usage_offsets[r + 1]`.
    usage_offsets: Vec<u32>,
    usage_frs: Vec<u32>,
    usage_amounts: Vec<i64>,
}

/// A row as the table stores it (the WIT's, with its quota).
struct Row {
    workload: u32,
    cluster_queue: u32,
    local_queue: u32,
    priority: i64,
    created: i64,
    admitted: i64,
    requeue_count: u32,
    requeue_reason: u8,
}

const EMPTY: Row = Row {
    workload: 0,
    cluster_queue: 0,
    local_queue: NO_LOCAL_QUEUE,
    priority: 0,
    created: 0,
    admitted: 0,
    requeue_count: 0,
    requeue_reason: NO_REQUEUE_REASON,
};

impl Default for AdmittedTable {
    fn default() -> AdmittedTable {
        let mut t = AdmittedTable {
            workloads: Vec::new(),
            cluster_queues: Vec::new(),
            local_queues: Vec::new(),
            priorities: Vec::new(),
            created: Vec::new(),
            admitted: Vec::new(),
            requeue_counts: Vec::new(),
            requeue_reasons: Vec::new(),
            usage_offsets: vec![0],
            usage_frs: Vec::new(),
            usage_amounts: Vec::new(),
        };
        t.push(&EMPTY, std::iter::empty());
        t
    }
}

impl AdmittedTable {
    /// How many rows the host sent (the empty row not counted).
    pub(crate) fn len(&self) -> usize {
        self.workloads.len() - 1
    }

    /// `row` if the table holds it, else the empty row's index.
    #[inline]
    pub(crate) fn checked(&self, row: u32) -> u32 {
        row.min(self.len() as u32)
    }

    /// Adds the rows of a call (`new-rows`): `first` = 0 starts a new table; rows go at
    /// `first` (after rows never received, which read as empty, or over rows already held:
    /// neither happens with the host).
    pub(crate) fn add(&mut self, new: wit::NewRows) {
        if new.first == 0 {
            *self = AdmittedTable::default();
        }
        let first = new.first as usize;
        // The empty row comes off, the rows go at `first`, and the empty row goes back last.
        self.truncate_all(self.len().min(first));
        while self.workloads.len() < first {
            self.push(&EMPTY, std::iter::empty());
        }
        let mut usage = new.usage.into_iter();
        for r in new.rows {
            let row = Row {
                workload: r.workload,
                cluster_queue: r.cluster_queue,
                local_queue: r.local_queue.unwrap_or(NO_LOCAL_QUEUE),
                priority: r.priority,
                created: r.created,
                admitted: r.admitted,
                requeue_count: r.requeue_count,
                requeue_reason: r.requeue_reason.map_or(NO_REQUEUE_REASON, |r| r as u8),
            };
            self.push(&row, usage.by_ref().take(r.usage_len as usize));
        }
        self.push(&EMPTY, std::iter::empty());
    }

    /// Appends a row.
    fn push(&mut self, row: &Row, usage: impl Iterator<Item = FrAmount>) {
        self.workloads.push(row.workload);
        self.cluster_queues.push(row.cluster_queue);
        self.local_queues.push(row.local_queue);
        self.priorities.push(row.priority);
        self.created.push(row.created);
        self.admitted.push(row.admitted);
        self.requeue_counts.push(row.requeue_count);
        self.requeue_reasons.push(row.requeue_reason);
        for u in usage {
            self.usage_frs.push(u.fr);
            self.usage_amounts.push(u.amount);
        }
        self.usage_offsets.push(self.usage_frs.len() as u32);
    }

    /// Keeps the first `rows` entries of every column (the empty row included if within).
    fn truncate_all(&mut self, rows: usize) {
        self.workloads.truncate(rows);
        self.cluster_queues.truncate(rows);
        self.local_queues.truncate(rows);
        self.priorities.truncate(rows);
        self.created.truncate(rows);
        self.admitted.truncate(rows);
        self.requeue_counts.truncate(rows);
        self.requeue_reasons.truncate(rows);
        let end = self.usage_offsets[rows] as usize;
        self.usage_offsets.truncate(rows + 1);
        self.usage_frs.truncate(end);
        self.usage_amounts.truncate(end);
    }

    /// Row `row`'s quota (`row` within the table or the empty row). Always inlined, as the
    /// two below: a search reads it for every candidate it takes out.
    #[inline(always)]
    pub(crate) fn usage(&self, row: u32) -> impl Iterator<Item = FrAmount> + '_ {
        usage_of(
            &self.usage_offsets,
            &self.usage_frs,
            &self.usage_amounts,
            row as usize,
        )
    }

    /// Row `row`'s requeue reason.
    #[inline]
    pub(crate) fn requeue_reason(&self, row: u32) -> Option<RequeueReason> {
        requeue_reason_of(self.requeue_reasons[row as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(workload: u32, usage_len: u32) -> wit::AdmittedRow {
        wit::AdmittedRow {
            workload,
            cluster_queue: workload + 100,
            local_queue: Some(workload + 200),
            priority: i64::from(workload),
            created: 10,
            admitted: 20,
            requeue_count: 1,
            requeue_reason: Some(RequeueReason::PodsReadyTimeout),
            usage_len,
        }
    }

    fn amounts(v: &[i64]) -> Vec<FrAmount> {
        v.iter().map(|&amount| FrAmount { fr: 0, amount }).collect()
    }

    fn usage(t: &AdmittedTable, r: u32) -> Vec<i64> {
        t.usage(r).map(|u| u.amount).collect()
    }

    #[test]
    fn rows_are_added_in_order_with_their_quota() {
        let mut t = AdmittedTable::default();
        t.add(wit::NewRows {
            first: 0,
            rows: vec![row(7, 2), row(8, 0), row(9, 1)],
            usage: amounts(&[1, 2, 3]),
        });
        t.add(wit::NewRows {
            first: 3,
            rows: vec![row(4, 1)],
            usage: amounts(&[5]),
        });
        assert_eq!(t.len(), 4);
        assert_eq!(t.workloads[..4], [7, 8, 9, 4]);
        assert_eq!(
            (0..4).map(|r| usage(&t, r)).collect::<Vec<_>>(),
            [vec![1, 2], vec![], vec![3], vec![5]]
        );
        assert_eq!(
            (t.local_queues[3], t.requeue_reason(3)),
            (204, Some(RequeueReason::PodsReadyTimeout))
        );
        // A row never sent reads as the empty one.
        let empty = t.checked(17);
        assert_eq!(empty, 4);
        assert_eq!(
            (t.workloads[4], t.local_queues[4], t.requeue_reason(4)),
            (0, NO_LOCAL_QUEUE, None)
        );
        assert!(usage(&t, empty).is_empty());
    }

    #[test]
    fn first_zero_starts_again_and_a_gap_or_overlap_is_made_safe() {
        let mut t = AdmittedTable::default();
        t.add(wit::NewRows {
            first: 0,
            rows: vec![row(1, 1), row(2, 1)],
            usage: amounts(&[10, 20]),
        });
        t.add(wit::NewRows {
            first: 0,
            rows: vec![row(3, 1)],
            usage: amounts(&[30]),
        });
        assert_eq!((t.len(), t.workloads[0]), (1, 3));
        assert_eq!(usage(&t, 0), [30]);
        // Past the end: the rows between read as empty.
        t.add(wit::NewRows {
            first: 3,
            rows: vec![row(5, 1)],
            usage: amounts(&[50]),
        });
        assert_eq!(t.workloads[..4], [3, 0, 0, 5]);
        assert_eq!(usage(&t, 3), [50]);
        // Over rows held: they are replaced. Quota shorter than the rows say is cut.
        t.add(wit::NewRows {
            first: 1,
            rows: vec![row(6, 3)],
            usage: amounts(&[60]),
        });
        assert_eq!(t.len(), 2);
        assert_eq!(t.workloads[..2], [3, 6]);
        assert_eq!((usage(&t, 0), usage(&t, 1)), (vec![30], vec![60]));
        assert!(usage(&t, t.checked(2)).is_empty());
    }
}
