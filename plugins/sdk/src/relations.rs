//! How each candidate relates to the preemptor: a request's `groups` and `local-queue-usage`
//! (`wit/preemption.wit`) joined into one [`Relation`] per candidate, with buffers the instance
//! keeps between calls.

use crate::admitted::AdmittedTable;
use crate::bindings::preemption::exports::wasq::policy::preemption as wit;
use crate::types::NodeId;
use wit::CandidateKind;

/// What a candidate's group and its LocalQueue's share say of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Relation {
    /// How it relates to the preemptor.
    pub(crate) kind: CandidateKind,
    /// Already being evicted.
    pub(crate) evicting: bool,
    /// For reclaim: the cohort under which it was found.
    pub(crate) lca: Option<NodeId>,
    /// Its LocalQueue's admission-fair-sharing usage, when the request lists it.
    pub(crate) local_queue_usage: Option<f64>,
}

/// What a candidate in no group reads as (the host never sends one).
const UNGROUPED: Relation = Relation {
    kind: CandidateKind::SameQueue,
    evicting: false,
    lca: None,
    local_queue_usage: None,
};

/// No group: the value of every entry of [`Joiner::group_of_row`] between calls.
const NO_GROUP: u32 = u32::MAX;

/// Joins requests' groups and shares per candidate in O(candidates + groups + shares), with
/// lookup tables indexed by row and by LocalQueue that it keeps (and leaves empty) between
/// requests, so that a request allocates nothing once they have grown.
///
/// Invariant: between calls to [`join`](Joiner::join), every entry of `group_of_row` is
/// [`NO_GROUP`] and every entry of `share_of_local_queue` is `None`.
#[derive(Debug, Default)]
pub(crate) struct Joiner {
    /// The group of each row of the table, and one more entry for every row the table does
    /// not hold (as [`AdmittedTable::row`] reads them all as the one empty row).
    group_of_row: Vec<u32>,
    /// The weighted usage of each LocalQueue of the catalog the request lists.
    share_of_local_queue: Vec<Option<f64>>,
    /// A vector a request's relations go into, returned by [`recycle`](Joiner::recycle).
    spare: Vec<Relation>,
}

impl Joiner {
    /// One relation per row of `candidates`: its group's kind, lca and evicting flag (a row in
    /// no group reads as of the same queue, not evicting, without lca; in two, as of the last),
    /// and the usage `shares` give its row's LocalQueue. A row the table does not hold reads
    /// as the empty row (no LocalQueue); a LocalQueue at or past `local_queues` (the catalog's
    /// count) has no usage.
    pub(crate) fn join(
        &mut self,
        candidates: &[u32],
        groups: &[wit::CandidateGroup],
        shares: &[wit::LocalQueueShare],
        table: &AdmittedTable,
        local_queues: usize,
    ) -> Vec<Relation> {
        // Rows past the table's all share its last slot, as they all read as the empty row.
        let past = table.len();
        let slot = |row: u32| (row as usize).min(past);
        if self.group_of_row.len() <= past {
            self.group_of_row.resize(past + 1, NO_GROUP);
        }
        for (g, group) in groups.iter().enumerate() {
            for &row in &group.rows {
                self.group_of_row[slot(row)] = g as u32;
            }
        }
        if !shares.is_empty() && self.share_of_local_queue.len() < local_queues {
            self.share_of_local_queue.resize(local_queues, None);
        }
        for share in shares {
            if let Some(s) = self
                .share_of_local_queue
                .get_mut(share.local_queue as usize)
            {
                *s = Some(share.weighted);
            }
        }

        let mut relations = std::mem::take(&mut self.spare);
        relations.clear();
        relations.extend(candidates.iter().map(|&row| {
            let mut relation = match groups.get(self.group_of_row[slot(row)] as usize) {
                Some(g) => Relation {
                    kind: g.kind,
                    evicting: g.evicting,
                    lca: g.lca,
                    local_queue_usage: None,
                },
                None => UNGROUPED,
            };
            if !shares.is_empty() {
                relation.local_queue_usage = table.row(row).local_queue.and_then(|lq| {
                    self.share_of_local_queue
                        .get(lq as usize)
                        .copied()
                        .flatten()
                });
            }
            relation
        }));

        // Leave the lookup tables empty for the next request.
        for group in groups {
            for &row in &group.rows {
                self.group_of_row[slot(row)] = NO_GROUP;
            }
        }
        for share in shares {
            if let Some(s) = self
                .share_of_local_queue
                .get_mut(share.local_queue as usize)
            {
                *s = None;
            }
        }
        relations
    }

    /// Takes back a vector [`join`](Joiner::join) returned, for the next request.
    pub(crate) fn recycle(&mut self, relations: Vec<Relation>) {
        if relations.capacity() > self.spare.capacity() {
            self.spare = relations;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(local_queues: &[Option<u32>]) -> AdmittedTable {
        let mut t = AdmittedTable::default();
        t.add(wit::NewRows {
            first: 0,
            rows: local_queues
                .iter()
                .enumerate()
                .map(|(w, &local_queue)| wit::AdmittedRow {
                    workload: w as u32 + 1,
                    cluster_queue: 0,
                    local_queue,
                    priority: 0,
                    created: 0,
                    admitted: 0,
                    requeue_count: 0,
                    requeue_reason: None,
                    usage: Vec::new(),
                    identity: None,
                })
                .collect(),
        });
        t
    }

    fn group(
        kind: CandidateKind,
        lca: Option<u32>,
        evicting: bool,
        rows: &[u32],
    ) -> wit::CandidateGroup {
        wit::CandidateGroup {
            kind,
            lca,
            evicting,
            rows: rows.to_vec(),
        }
    }

    fn share(local_queue: u32, weighted: f64) -> wit::LocalQueueShare {
        wit::LocalQueueShare {
            local_queue,
            weighted,
        }
    }

    fn relation(
        kind: CandidateKind,
        lca: Option<u32>,
        evicting: bool,
        local_queue_usage: Option<f64>,
    ) -> Relation {
        Relation {
            kind,
            evicting,
            lca,
            local_queue_usage,
        }
    }

    #[test]
    fn each_candidate_reads_its_group_and_its_local_queues_share() {
        let t = table(&[Some(0), Some(1), None, Some(2), Some(1)]);
        let mut j = Joiner::default();
        let groups = [
            group(CandidateKind::SameQueue, None, false, &[4, 0]),
            group(CandidateKind::FairSharing, Some(7), true, &[3]),
            group(
                CandidateKind::ReclaimWithoutBorrowing,
                Some(2),
                false,
                &[1, 2],
            ),
        ];
        let got = j.join(
            &[3, 1, 2, 4, 0],
            &groups,
            &[share(1, 2.5), share(2, 0.5)],
            &t,
            3,
        );
        assert_eq!(
            got,
            [
                relation(CandidateKind::FairSharing, Some(7), true, Some(0.5)),
                relation(
                    CandidateKind::ReclaimWithoutBorrowing,
                    Some(2),
                    false,
                    Some(2.5)
                ),
                relation(CandidateKind::ReclaimWithoutBorrowing, Some(2), false, None),
                relation(CandidateKind::SameQueue, None, false, Some(2.5)),
                // LocalQueue 0 is not listed.
                relation(CandidateKind::SameQueue, None, false, None),
            ]
        );
        j.recycle(got);
        // Nothing of the last request stays: no groups, no shares.
        let again = j.join(&[3, 1], &[], &[], &t, 3);
        assert_eq!(again, [UNGROUPED, UNGROUPED]);
        assert!(j.group_of_row.iter().all(|&g| g == NO_GROUP));
        assert!(j.share_of_local_queue.iter().all(Option::is_none));
    }

    #[test]
    fn rows_and_local_queues_out_of_range_and_rows_in_no_group_do_not_trap() {
        let t = table(&[Some(0), Some(5)]);
        let mut j = Joiner::default();
        let groups = [
            group(
                CandidateKind::HierarchicalReclaim,
                Some(1),
                true,
                &[0, u32::MAX],
            ),
            // Row 9 is not held; a group may name rows that are not candidates.
            group(CandidateKind::FairSharing, Some(3), false, &[9, 40]),
        ];
        let got = j.join(
            &[0, 1, 9, u32::MAX],
            &groups,
            &[share(0, 1.0), share(5, 4.0), share(u32::MAX, 9.0)],
            &t,
            2,
        );
        assert_eq!(
            got[0],
            relation(CandidateKind::HierarchicalReclaim, Some(1), true, Some(1.0))
        );
        // Row 1 is in no group; its LocalQueue 5 is past the catalog's 2.
        assert_eq!(got[1], UNGROUPED);
        // Rows past the table read as the empty row, and as one another.
        let past = relation(CandidateKind::FairSharing, Some(3), false, None);
        assert_eq!((got[2], got[3]), (past, past));
        assert!(j.group_of_row.iter().all(|&g| g == NO_GROUP));
        assert!(j.share_of_local_queue.iter().all(Option::is_none));
    }
}
