//! The instance's table of admitted workloads (`wit/preemption.wit`, `record new-rows`): what
//! preemption reads of each workload holding quota, kept between calls, so that a request's
//! candidates name rows of it.

use crate::bindings::preemption::exports::wasq::policy::preemption as wit;

/// The rows the host sent, in id order, and one more: an empty row (workload 0, ClusterQueue
/// 0, no quota, nobody in particular), which a candidate naming a row the host never sent reads instead.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AdmittedTable {
    rows: Vec<wit::AdmittedRow>,
}

/// What a row the host never sent reads as.
fn empty_row() -> wit::AdmittedRow {
    wit::AdmittedRow {
        workload: 0,
        cluster_queue: 0,
        local_queue: None,
        priority: 0,
        created: 0,
        admitted: 0,
        requeue_count: 0,
        requeue_reason: None,
        usage: Vec::new(),
        identity: None,
    }
}

impl Default for AdmittedTable {
    fn default() -> AdmittedTable {
        AdmittedTable {
            rows: vec![empty_row()],
        }
    }
}

impl AdmittedTable {
    /// How many rows the host sent (the empty row not counted).
    pub(crate) fn len(&self) -> usize {
        self.rows.len() - 1
    }

    /// Row `row`, or the empty row when the table does not hold it. Always inlined: a search
    /// reads it for every candidate it looks at.
    #[inline(always)]
    pub(crate) fn row(&self, row: u32) -> &wit::AdmittedRow {
        let last = self.rows.len() - 1;
        &self.rows[(row as usize).min(last)]
    }

    /// Adds the rows of a call (`new-rows`): `first` = 0 starts a new table; rows go at
    /// `first` (after rows never received, which read as empty, or over rows already held:
    /// neither happens with the host).
    pub(crate) fn add(&mut self, new: wit::NewRows) {
        let first = new.first as usize;
        // The empty row comes off (with the rows from `first` on), the rows go at `first`,
        // and the empty row goes back last.
        self.rows.truncate(self.len().min(first));
        self.rows.resize_with(first, empty_row);
        self.rows.extend(new.rows);
        self.rows.push(empty_row());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{FrAmount, RequeueReason};

    fn row(workload: u32, usage: &[i64]) -> wit::AdmittedRow {
        wit::AdmittedRow {
            workload,
            cluster_queue: workload + 100,
            local_queue: Some(workload + 200),
            priority: i64::from(workload),
            created: 10,
            admitted: 20,
            requeue_count: 1,
            requeue_reason: Some(RequeueReason::PodsReadyTimeout),
            usage: usage
                .iter()
                .map(|&amount| FrAmount { fr: 0, amount })
                .collect(),
            identity: None,
        }
    }

    fn workloads(t: &AdmittedTable, n: u32) -> Vec<u32> {
        (0..n).map(|r| t.row(r).workload).collect()
    }

    fn usage(t: &AdmittedTable, r: u32) -> Vec<i64> {
        t.row(r).usage.iter().map(|u| u.amount).collect()
    }

    #[test]
    fn rows_are_added_in_order_with_their_quota() {
        let mut t = AdmittedTable::default();
        t.add(wit::NewRows {
            first: 0,
            rows: vec![row(7, &[1, 2]), row(8, &[]), row(9, &[3])],
        });
        t.add(wit::NewRows {
            first: 3,
            rows: vec![row(4, &[5])],
        });
        assert_eq!(t.len(), 4);
        assert_eq!(workloads(&t, 4), [7, 8, 9, 4]);
        assert_eq!(
            (0..4).map(|r| usage(&t, r)).collect::<Vec<_>>(),
            [vec![1, 2], vec![], vec![3], vec![5]]
        );
        assert_eq!(
            (t.row(3).local_queue, t.row(3).requeue_reason),
            (Some(204), Some(RequeueReason::PodsReadyTimeout))
        );
        // A row never sent reads as the empty one.
        assert_eq!(*t.row(17), empty_row());
        assert_eq!(*t.row(4), empty_row());
    }

    #[test]
    fn first_zero_starts_again_and_a_gap_or_overlap_is_made_safe() {
        let mut t = AdmittedTable::default();
        t.add(wit::NewRows {
            first: 0,
            rows: vec![row(1, &[10]), row(2, &[20])],
        });
        t.add(wit::NewRows {
            first: 0,
            rows: vec![row(3, &[30])],
        });
        assert_eq!((t.len(), t.row(0).workload), (1, 3));
        assert_eq!(usage(&t, 0), [30]);
        // Past the end: the rows between read as empty.
        t.add(wit::NewRows {
            first: 3,
            rows: vec![row(5, &[50])],
        });
        assert_eq!(workloads(&t, 4), [3, 0, 0, 5]);
        assert_eq!(usage(&t, 3), [50]);
        // Over rows held: they are replaced.
        t.add(wit::NewRows {
            first: 1,
            rows: vec![row(6, &[60])],
        });
        assert_eq!(t.len(), 2);
        assert_eq!(workloads(&t, 2), [3, 6]);
        assert_eq!((usage(&t, 0), usage(&t, 1)), (vec![30], vec![60]));
        assert_eq!(*t.row(2), empty_row());
    }
}
