//! [`KeyTable`]: the sort key of each keyed workload, by workload id.

use crate::cluster::WorkloadId;

use super::SortKey;

/// The sort key each workload was queued under, indexed by workload id (ids are dense: the
/// cluster numbers its workloads from 0). A scheduling cycle reads it once per head; a table
/// indexed by id is one read where a hash map of every pending workload was a probe that
/// missed the cache at scale.
#[derive(Debug, Clone, Default)]
pub struct KeyTable {
    keys: Vec<Option<SortKey>>,
}

impl KeyTable {
    pub fn get(&self, id: WorkloadId) -> Option<SortKey> {
        self.keys.get(id.index()).copied().flatten()
    }

    pub fn insert(&mut self, id: WorkloadId, key: SortKey) {
        let i = id.index();
        if i >= self.keys.len() {
            self.keys.resize(i + 1, None);
        }
        self.keys[i] = Some(key);
    }

    /// Room for ids below `n` without growing again (no entry is written: pages are touched
    /// only as keys are inserted).
    pub fn reserve_ids(&mut self, n: usize) {
        self.keys.reserve(n.saturating_sub(self.keys.len()));
    }

    /// Forgets the workload's key; returns it.
    pub fn remove(&mut self, id: WorkloadId) -> Option<SortKey> {
        self.keys.get_mut(id.index()).and_then(Option::take)
    }

    /// Bytes held per workload id (for memory accounting).
    pub const BYTES_PER_ID: usize = std::mem::size_of::<Option<SortKey>>();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_kept_by_id_until_removed() {
        let mut t = KeyTable::default();
        assert_eq!(t.get(WorkloadId(5)), None);
        t.insert(WorkloadId(5), SortKey([1, 2, 3]));
        t.insert(WorkloadId(1), SortKey([4, 5, 6]));
        assert_eq!(t.get(WorkloadId(5)), Some(SortKey([1, 2, 3])));
        assert_eq!(t.get(WorkloadId(0)), None);
        assert_eq!(t.remove(WorkloadId(5)), Some(SortKey([1, 2, 3])));
        assert_eq!(t.remove(WorkloadId(5)), None);
        assert_eq!(t.get(WorkloadId(1)), Some(SortKey([4, 5, 6])));
        assert_eq!(t.remove(WorkloadId(99)), None);
    }
}
