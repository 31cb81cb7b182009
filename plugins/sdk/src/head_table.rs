//! The instance's table of heads (`wit/ordering.wit`, `record new-heads`): what ordering reads
//! of each workload waiting at the head of its ClusterQueue, kept between calls, so that a
//! cycle's heads name entries of it; and the join of a cycle's heads with their groups and
//! usage.

use crate::bindings::ordering::exports::wasq::policy::ordering as wit;
use crate::types::FrAmount;

/// The heads the host sent, in id order, and one more: an empty head (workload 0,
/// ClusterQueue 0, nobody in particular), which a head id the host never sent reads instead.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HeadTable {
    heads: Vec<wit::HeadInfo>,
}

/// What a head the host never sent reads as.
fn empty_head() -> wit::HeadInfo {
    wit::HeadInfo {
        workload: 0,
        cluster_queue: 0,
        local_queue: None,
        priority: 0,
        created: 0,
        queued: 0,
        key: wit::SortKey {
            primary: 0,
            secondary: 0,
            tertiary: 0,
        },
        requeue_count: 0,
        requeue_reason: None,
        identity: None,
    }
}

impl Default for HeadTable {
    fn default() -> HeadTable {
        HeadTable {
            heads: vec![empty_head()],
        }
    }
}

impl HeadTable {
    /// How many heads the host sent (the empty head not counted).
    pub(crate) fn len(&self) -> usize {
        self.heads.len() - 1
    }

    /// Head `id`, or the empty head when the table does not hold it.
    #[inline]
    pub(crate) fn head(&self, id: u32) -> &wit::HeadInfo {
        let last = self.heads.len() - 1;
        &self.heads[(id as usize).min(last)]
    }

    /// Adds the heads of a call (`new-heads`): `first` = 0 starts a new table; heads go at
    /// `first` (after heads never received, which read as empty, or over heads already held:
    /// neither happens with the host).
    pub(crate) fn add(&mut self, new: wit::NewHeads) {
        let first = new.first as usize;
        self.heads.truncate(self.len().min(first));
        self.heads.resize_with(first, empty_head);
        self.heads.extend(new.heads);
        self.heads.push(empty_head());
    }
}

/// How a head of this cycle was assigned, and what its assignment takes.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Assigned {
    /// Its group's `second-pass`.
    pub(crate) second_pass: bool,
    /// Its group's `borrowing-level`.
    pub(crate) borrowing_level: u32,
    /// Its `head-usage`; empty when none was sent.
    pub(crate) usage: Vec<FrAmount>,
}

/// Not in any group, no usage: the value of every entry of [`Joiner`]'s tables between calls.
const NONE: u32 = u32::MAX;

/// Joins a cycle's groups and usage per head in O(heads + groups + usage), with lookup tables
/// by head id that it keeps (and leaves empty) between calls.
///
/// Invariant: between calls to [`join`](Joiner::join), every entry of `group_of` and
/// `usage_of` is [`NONE`].
#[derive(Debug, Default)]
pub(crate) struct Joiner {
    /// The group of each head of the table, and one more entry for every id past it (they all
    /// read as the one empty head).
    group_of: Vec<u32>,
    /// The index in `head-usage` of each head's usage, the same way.
    usage_of: Vec<u32>,
}

impl Joiner {
    /// One [`Assigned`] per entry of `heads`: its group's facts (a head in no group reads as a
    /// first pass at borrowing level 0; in two, as of the last) and the usage `usage` gives its
    /// id, moved out of `usage` (a head listed twice in `heads` gets it once).
    pub(crate) fn join(
        &mut self,
        heads: &[u32],
        groups: &[wit::HeadGroup],
        usage: &mut [wit::HeadUsage],
        table: &HeadTable,
    ) -> Vec<Assigned> {
        let past = table.len();
        let slot = |id: u32| (id as usize).min(past);
        if self.group_of.len() <= past {
            self.group_of.resize(past + 1, NONE);
            self.usage_of.resize(past + 1, NONE);
        }
        for (g, group) in groups.iter().enumerate() {
            for &id in &group.heads {
                self.group_of[slot(id)] = g as u32;
            }
        }
        for (u, entry) in usage.iter().enumerate() {
            self.usage_of[slot(entry.head)] = u as u32;
        }
        let assigned = heads
            .iter()
            .map(|&id| {
                let (second_pass, borrowing_level) = match self.group_of[slot(id)] {
                    NONE => (false, 0),
                    g => (
                        groups[g as usize].second_pass,
                        groups[g as usize].borrowing_level,
                    ),
                };
                let usage = match self.usage_of[slot(id)] {
                    NONE => Vec::new(),
                    u => std::mem::take(&mut usage[u as usize].usage),
                };
                Assigned {
                    second_pass,
                    borrowing_level,
                    usage,
                }
            })
            .collect();
        for group in groups {
            for &id in &group.heads {
                self.group_of[slot(id)] = NONE;
            }
        }
        for entry in usage.iter() {
            self.usage_of[slot(entry.head)] = NONE;
        }
        assigned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(workload: u32) -> wit::HeadInfo {
        wit::HeadInfo {
            workload,
            priority: i64::from(workload),
            ..empty_head()
        }
    }

    fn workloads(t: &HeadTable, n: u32) -> Vec<u32> {
        (0..n).map(|id| t.head(id).workload).collect()
    }

    #[test]
    fn heads_are_added_in_order_and_a_restart_gap_or_overlap_is_made_safe() {
        let mut t = HeadTable::default();
        t.add(wit::NewHeads {
            first: 0,
            heads: vec![info(7), info(8)],
        });
        t.add(wit::NewHeads {
            first: 2,
            heads: vec![info(9)],
        });
        assert_eq!((t.len(), workloads(&t, 3)), (3, vec![7, 8, 9]));
        assert_eq!(*t.head(3), empty_head(), "never sent");
        // `first` = 0 starts again.
        t.add(wit::NewHeads {
            first: 0,
            heads: vec![info(4)],
        });
        assert_eq!((t.len(), t.head(0).workload), (1, 4));
        assert_eq!(*t.head(1), empty_head());
        // Past the end: the heads between read as empty; over heads held: replaced.
        t.add(wit::NewHeads {
            first: 3,
            heads: vec![info(5)],
        });
        assert_eq!(workloads(&t, 4), [4, 0, 0, 5]);
        t.add(wit::NewHeads {
            first: 1,
            heads: vec![info(6)],
        });
        assert_eq!((t.len(), workloads(&t, 2)), (2, vec![4, 6]));
    }

    #[test]
    fn groups_and_usage_are_joined_per_head_and_the_lookups_left_empty() {
        let mut t = HeadTable::default();
        t.add(wit::NewHeads {
            first: 0,
            heads: (0..4).map(info).collect(),
        });
        let groups = [
            wit::HeadGroup {
                second_pass: true,
                borrowing_level: 0,
                heads: vec![2],
            },
            wit::HeadGroup {
                second_pass: false,
                borrowing_level: 1,
                heads: vec![0, 3],
            },
        ];
        let mut usage = vec![
            wit::HeadUsage {
                head: 3,
                usage: crate::testing::amounts(&[(0, 30)]),
            },
            wit::HeadUsage {
                head: 2,
                usage: crate::testing::amounts(&[(1, 20)]),
            },
        ];
        let mut j = Joiner::default();
        // Head 1 is in no group; head 9 is not in the table.
        let got = j.join(&[3, 2, 1, 0, 9], &groups, &mut usage, &t);
        let facts: Vec<_> = got
            .iter()
            .map(|a| (a.second_pass, a.borrowing_level, a.usage.len()))
            .collect();
        assert_eq!(
            facts,
            [
                (false, 1, 1),
                (true, 0, 1),
                (false, 0, 0),
                (false, 1, 0),
                (false, 0, 0)
            ]
        );
        assert_eq!(got[0].usage, crate::testing::amounts(&[(0, 30)]));
        assert!(j.group_of.iter().chain(&j.usage_of).all(|&e| e == NONE));
        // Nothing stays from one cycle to the next.
        let got = j.join(&[2], &[], &mut [], &t);
        assert_eq!(got, [Assigned::default()]);
    }
}
