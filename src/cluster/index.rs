//! Workloads by `namespace/name`: a hash table of workload ids whose keys are the
//! [`WorkloadInfo::key`]s the cluster already holds. A `HashMap<String, WorkloadId>` kept a
//! second copy of every key (a heap string and a 32-byte entry per workload); this keeps a
//! 4-byte id and hashes and compares through the workload records.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

use super::{WorkloadId, WorkloadInfo};

/// Workload ids by key. Every method takes the cluster's workload records, which hold the keys:
/// an id in the table always names a record whose `key` hashes to where the id sits.
#[derive(Debug, Clone, Default)]
pub struct KeyIndex {
    table: HashTable<WorkloadId>,
}

fn hash(key: &str) -> u64 {
    FxBuildHasher.hash_one(key)
}

fn key_of(workloads: &[WorkloadInfo], id: WorkloadId) -> &str {
    &workloads[id.index()].key
}

impl KeyIndex {
    /// Room for `additional` more workloads without growing.
    pub fn reserve(&mut self, additional: usize, workloads: &[WorkloadInfo]) {
        self.table
            .reserve(additional, |&id| hash(key_of(workloads, id)));
    }

    pub fn get(&self, workloads: &[WorkloadInfo], key: &str) -> Option<WorkloadId> {
        self.table
            .find(hash(key), |&id| key_of(workloads, id) == key)
            .copied()
    }

    /// Points `workloads[id].key` at `id`, replacing the id an equal key had.
    pub fn insert(&mut self, workloads: &[WorkloadInfo], id: WorkloadId) {
        let key = key_of(workloads, id);
        match self.table.entry(
            hash(key),
            |&other| key_of(workloads, other) == key,
            |&other| hash(key_of(workloads, other)),
        ) {
            hashbrown::hash_table::Entry::Occupied(mut e) => *e.get_mut() = id,
            hashbrown::hash_table::Entry::Vacant(e) => {
                e.insert(id);
            }
        }
    }

    /// Forgets `key` if it names `id` (a newer workload with the same key stays). Call before
    /// the record's key changes.
    pub fn remove(&mut self, workloads: &[WorkloadInfo], key: &str, id: WorkloadId) {
        if let Ok(e) = self.table.find_entry(hash(key), |&other| other == id) {
            e.remove();
        }
        debug_assert!(self.get(workloads, key) != Some(id));
    }

    /// Bytes the table holds (buckets of one id and one control byte), for memory reports.
    pub fn heap_bytes(&self) -> usize {
        let buckets = if self.table.capacity() == 0 {
            0
        } else {
            (self.table.capacity() * 8 / 7).next_power_of_two()
        };
        buckets * (size_of::<WorkloadId>() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: u32, key: &str) -> WorkloadInfo {
        WorkloadInfo {
            key: key.to_string(),
            ..WorkloadInfo::removed(WorkloadId(id))
        }
    }

    #[test]
    fn finds_replaces_and_forgets_by_key() {
        let mut workloads: Vec<WorkloadInfo> = (0..500)
            .map(|i| record(i, &format!("ns{}/w{i}", i % 7)))
            .collect();
        let mut index = KeyIndex::default();
        index.reserve(10, &workloads);
        for w in &workloads {
            index.insert(&workloads, w.id);
        }
        for w in &workloads {
            assert_eq!(index.get(&workloads, &w.key), Some(w.id));
        }
        assert_eq!(index.get(&workloads, "ns0/missing"), None);

        // The same key registered again names the newer record.
        workloads.push(record(500, "ns3/w3"));
        index.insert(&workloads, WorkloadId(500));
        assert_eq!(index.get(&workloads, "ns3/w3"), Some(WorkloadId(500)));
        // Forgetting the older id leaves the newer one.
        index.remove(&workloads, "ns3/w3", WorkloadId(3));
        assert_eq!(index.get(&workloads, "ns3/w3"), Some(WorkloadId(500)));
        // Forgetting the current one, as `remove_workload` does (key taken out first).
        let key = std::mem::take(&mut workloads[500].key);
        index.remove(&workloads, &key, WorkloadId(500));
        assert_eq!(index.get(&workloads, "ns3/w3"), None);
        assert_eq!(index.get(&workloads, "ns4/w4"), Some(WorkloadId(4)));
        assert!(index.heap_bytes() >= 500 * (size_of::<WorkloadId>() + 1));
    }
}
