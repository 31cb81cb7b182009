//! The workloads holding quota in one ClusterQueue, as dense rows of what preemption reads of
//! each: collecting a preemptor's candidates walks these rows in order, one or two cache lines
//! per workload, rather than a set of ids whose every step visits the workload's record, its
//! admission and the admission's usage list elsewhere in memory.

use crate::quota::FrIdx;

use super::{EvictionReason, LqId, Millis, WorkloadId};

/// A row's usage: up to two flavor-resources inline (cpu and memory), on the heap past that.
pub type RowUsage = smallvec::SmallVec<[(FrIdx, i64); 2]>;

/// What preemption reads of an admitted workload. Filled from the workload and its admission
/// when it reserves quota; the cluster changes neither the workload's priority nor its
/// queue-order timestamp while it holds quota (a spec change is applied only to a workload
/// holding none), so the row stays true until it is released.
///
/// 96 bytes: a cycle's candidate search reads every row of the queues it looks into, and at
/// ten times Kueue's large scale each of a row's lines is a read from memory (144 bytes with
/// four flavor-resources inline and the reason as a string, before stop 50).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmittedRow {
    pub workload: WorkloadId,
    /// How often it was evicted and queued again, and the last reason
    /// ([`super::WorkloadInfo::requeue_count`] and `requeue_reason`, which change only when it
    /// is queued again).
    pub requeue_count: u32,
    /// This admission's serial ([`next_admission_serial`]): unique in the process, so that a
    /// copy of the row kept elsewhere (a plugin instance's table of admitted workloads) is
    /// known to be this admission's, unchanged.
    pub serial: u64,
    /// Priority plus boost ([`super::WorkloadInfo::effective_priority`]).
    pub priority: i64,
    /// The queue-order timestamp ([`super::WorkloadInfo::created`]).
    pub created: Millis,
    /// When it reserved quota.
    pub reserved_at: Millis,
    pub lq: Option<LqId>,
    /// Being evicted (preempted): still holds its quota.
    pub evicting: bool,
    pub requeue_reason: Option<EvictionReason>,
    /// The quota it holds, per flavor-resource (the admission's `usage`).
    pub usage: RowUsage,
}

const _: () = assert!(size_of::<AdmittedRow>() == 96);

/// A serial never handed out before in this process (the first is 1): one per reservation of
/// quota, whichever cluster makes it, so that no two admissions share one even across rebuilt
/// or copied clusters.
pub fn next_admission_serial() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// One ClusterQueue's rows, in workload-id order (the order its users always saw).
#[derive(Debug, Clone, Default)]
pub struct AdmittedRows {
    rows: Vec<AdmittedRow>,
}

impl AdmittedRows {
    fn position(&self, id: WorkloadId) -> Result<usize, usize> {
        self.rows.binary_search_by_key(&id, |r| r.workload)
    }

    /// Adds a row; `false` (nothing changed) when the workload has one already.
    pub fn insert(&mut self, row: AdmittedRow) -> bool {
        match self.position(row.workload) {
            Ok(_) => false,
            Err(at) => {
                self.rows.insert(at, row);
                true
            }
        }
    }

    pub fn remove(&mut self, id: WorkloadId) -> Option<AdmittedRow> {
        self.position(id).ok().map(|at| self.rows.remove(at))
    }

    pub fn get(&self, id: WorkloadId) -> Option<&AdmittedRow> {
        self.position(id).ok().map(|at| &self.rows[at])
    }

    pub fn set_evicting(&mut self, id: WorkloadId) {
        if let Ok(at) = self.position(id) {
            self.rows[at].evicting = true;
        }
    }

    pub fn rows(&self) -> &[AdmittedRow] {
        &self.rows
    }

    pub fn ids(&self) -> impl ExactSizeIterator<Item = WorkloadId> + '_ {
        self.rows.iter().map(|r| r.workload)
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: u32) -> AdmittedRow {
        AdmittedRow {
            workload: WorkloadId(id),
            serial: next_admission_serial(),
            evicting: false,
            lq: None,
            priority: i64::from(id),
            created: 0,
            reserved_at: 0,
            requeue_count: 0,
            requeue_reason: None,
            usage: RowUsage::new(),
        }
    }

    #[test]
    fn rows_stay_in_id_order_once_each() {
        let mut rows = AdmittedRows::default();
        for id in [5, 1, 9, 3, 7] {
            assert!(rows.insert(row(id)));
        }
        assert!(!rows.insert(row(3)), "a second row for one workload");
        assert_eq!(rows.ids().map(|w| w.0).collect::<Vec<_>>(), [1, 3, 5, 7, 9]);
        rows.set_evicting(WorkloadId(7));
        assert!(rows.rows()[3].evicting);
        assert!(!rows.rows()[2].evicting);
        assert_eq!(rows.remove(WorkloadId(5)).map(|r| r.priority), Some(5));
        assert_eq!(rows.remove(WorkloadId(5)), None);
        assert_eq!(rows.ids().map(|w| w.0).collect::<Vec<_>>(), [1, 3, 7, 9]);
        assert_eq!(rows.len(), 4);
    }
}
