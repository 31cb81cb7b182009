//! The table of heads of one ordering plugin instance (WIT `ordering.new-heads`): what ordering
//! reads of a workload waiting at the head of its ClusterQueue crosses into the instance once,
//! the first cycle it is a head, and every cycle after that it is a head number.
//!
//! The host's side mirrors the guest's table, as [`super::rows::RowTable`] does for admitted
//! workloads: heads are numbered in the order sent, and the heads first used since the last call
//! are sent with the next one. A head is known again when its workload's entry has the same
//! static fields ([`Static`]: queues, priority, times, key, requeue history), so a workload
//! queued again or under a new key gets a new head. Who the workload is does not change within
//! a cluster configuration and a string table (`strings::StringTable::ident`), and the table
//! is cleared with either. The table lives as long as the instance and its catalog, and starts
//! again past [`MAX_HEADS`]: workloads come and go, the table never forgets them.

use super::bindings::ordering::exports::wasq::policy::ordering as ord;
use super::bindings::types as t;
use super::convert;
use crate::cluster::{CqId, EvictionReason, LqId, Millis, WorkloadId};
use crate::policy::HeadEntry;
use crate::queue::SortKey;

/// At most this many heads before the table starts again.
/// At most this many heads before the table starts again. Growing the instance's table past
/// a few MiB costs a call milliseconds of page faults at each doubling (measured: 2–4 ms at
/// 15,000 heads of Kueue's baseline shape), and restarting costs one call the heads it names.
pub const MAX_HEADS: u32 = 16_384;

/// What a head entry says of its workload that does not change while it stays queued under one
/// key: what `head-info` carries besides the workload and who it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Static {
    cluster_queue: CqId,
    local_queue: Option<LqId>,
    priority: i64,
    created: Millis,
    queued: Millis,
    key: SortKey,
    requeue_count: u32,
    requeue_reason: Option<EvictionReason>,
}

impl Static {
    fn of(h: &HeadEntry) -> Static {
        Static {
            cluster_queue: h.cluster_queue,
            local_queue: h.local_queue,
            priority: h.priority,
            created: h.created,
            queued: h.queued,
            key: h.key,
            requeue_count: h.requeue_count,
            requeue_reason: h.requeue_reason,
        }
    }
}

/// One instance's table, as the host keeps it.
#[derive(Debug)]
pub struct HeadTable {
    /// By workload handle: the last head its entry was sent as, or [`NONE`].
    head_of: Vec<u32>,
    /// By head: its workload and what it was sent with.
    sent: Vec<(WorkloadId, Static)>,
    /// Heads held before this call's.
    first: u32,
    /// What this call adds, in head order.
    added: ord::NewHeads,
    max_heads: u32,
}

/// No head (in [`HeadTable::head_of`]).
const NONE: u32 = u32::MAX;

impl Default for HeadTable {
    fn default() -> HeadTable {
        HeadTable::with_max(MAX_HEADS)
    }
}

impl HeadTable {
    /// A table that starts again past `max_heads` heads.
    pub fn with_max(max_heads: u32) -> HeadTable {
        HeadTable {
            head_of: Vec::new(),
            sent: Vec::new(),
            first: 0,
            added: ord::NewHeads {
                first: 0,
                heads: Vec::new(),
            },
            max_heads: max_heads.max(1),
        }
    }

    /// Starts a call: a table past its bound starts again (the call then sends `first` = 0).
    pub fn begin(&mut self) {
        if self.sent.len() >= self.max_heads as usize {
            self.clear();
        }
        self.first = self.sent.len() as u32;
        self.added.heads.clear();
    }

    /// Forgets every head: the instance starts a new table with the next head sent (after a
    /// new catalog, or when the string table starts again).
    pub fn clear(&mut self) {
        self.head_of.clear();
        self.sent.clear();
        self.first = 0;
    }

    /// The head's id, added to the table (and to this call's new heads) unless its workload's
    /// entry was sent with the same static fields; `identity` says who the workload is, asked
    /// only for a new head.
    #[inline]
    pub fn head(
        &mut self,
        h: &HeadEntry,
        identity: impl FnOnce() -> Option<t::WorkloadIdentity>,
    ) -> u32 {
        let fields = Static::of(h);
        let head = self
            .head_of
            .get(h.workload.index())
            .copied()
            .unwrap_or(NONE);
        if let Some(&(w, sent)) = self.sent.get(head as usize)
            && w == h.workload
            && sent == fields
        {
            return head;
        }
        self.add(h, fields, identity())
    }

    #[cold]
    fn add(&mut self, h: &HeadEntry, fields: Static, identity: Option<t::WorkloadIdentity>) -> u32 {
        let index = h.workload.index();
        if self.head_of.len() <= index {
            self.head_of.resize(index + 1, NONE);
        }
        let head = self.sent.len() as u32;
        self.sent.push((h.workload, fields));
        self.head_of[index] = head;
        self.added.heads.push(ord::HeadInfo {
            workload: h.workload.0,
            cluster_queue: h.cluster_queue.0,
            local_queue: h.local_queue.map(|l| l.0),
            priority: h.priority,
            created: h.created,
            queued: h.queued,
            key: ord::SortKey {
                primary: h.key.0[0],
                secondary: h.key.0[1],
                tertiary: h.key.0[2],
            },
            requeue_count: h.requeue_count,
            requeue_reason: h.requeue_reason.map(convert::requeue_reason),
            identity,
        });
        head
    }

    /// This call's new heads, or `None` when it adds none; the buffers come back with
    /// [`HeadTable::give_back`].
    pub fn take(&mut self) -> Option<ord::NewHeads> {
        if self.added.heads.is_empty() {
            return None;
        }
        let mut added = std::mem::replace(
            &mut self.added,
            ord::NewHeads {
                first: 0,
                heads: Vec::new(),
            },
        );
        added.first = self.first;
        Some(added)
    }

    /// Keeps the buffers of a sent [`take`](HeadTable::take) for the next call.
    pub fn give_back(&mut self, sent: Option<ord::NewHeads>) {
        if let Some(sent) = sent
            && sent.heads.capacity() >= self.added.heads.capacity()
        {
            self.added = sent;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(workload: u32, priority: i64) -> HeadEntry {
        HeadEntry {
            workload: WorkloadId(workload),
            cluster_queue: CqId(2),
            has_reservation: false,
            borrow_level: 1,
            priority,
            created: 10,
            queued: 20,
            local_queue: Some(LqId(3)),
            key: SortKey([-priority, 10, 0]),
            usage: crate::quota::FrAmounts::from_slice(&[(crate::quota::FrIdx(0), 1000)]),
            requeue_count: 1,
            requeue_reason: Some(EvictionReason::Preempted),
        }
    }

    #[test]
    fn a_head_crosses_once_while_its_workload_waits_under_one_key() {
        let mut table = HeadTable::default();
        table.begin();
        let (a, b) = (head(4, 7), head(9, 5));
        assert_eq!(
            (
                table.head(&a, || None),
                table.head(&b, || None),
                table.head(&a, || None)
            ),
            (0, 1, 0)
        );
        let sent = table.take().expect("two new heads");
        assert_eq!(sent.first, 0);
        assert_eq!(
            sent.heads
                .iter()
                .map(|h| (h.workload, h.priority, h.key.primary))
                .collect::<Vec<_>>(),
            [(4, 7, -7), (9, 5, -5)]
        );
        assert_eq!(
            (sent.heads[0].local_queue, sent.heads[0].requeue_reason),
            (Some(3), Some(t::RequeueReason::Preempted))
        );
        table.give_back(Some(sent));

        // The next cycle sends only what is new. The assignment (second pass, borrowing level,
        // usage) is not part of a head; a new key, priority or requeue makes a new head.
        table.begin();
        let mut reassigned = a.clone();
        (reassigned.has_reservation, reassigned.borrow_level) = (true, 0);
        reassigned.usage = Default::default();
        assert_eq!(table.head(&reassigned, || None), 0);
        assert!(table.take().is_none(), "nothing new");
        table.begin();
        let mut requeued = a.clone();
        (requeued.queued, requeued.requeue_count) = (30, 2);
        let mut rekeyed = b.clone();
        rekeyed.key = SortKey([0, 0, 1]);
        assert_eq!(
            (
                table.head(&requeued, || None),
                table.head(&rekeyed, || None)
            ),
            (2, 3)
        );
        let sent = table.take().expect("two new heads");
        assert_eq!((sent.first, sent.heads.len()), (2, 2));
        assert_eq!(sent.heads[0].queued, 30);
        assert_eq!(sent.heads[1].key.tertiary, 1);
    }

    #[test]
    fn identity_is_asked_for_new_heads_only() {
        let mut table = HeadTable::default();
        table.begin();
        let mut asked = 0;
        for _ in 0..3 {
            table.head(&head(1, 0), || {
                asked += 1;
                None
            });
        }
        assert_eq!(asked, 1);
    }

    #[test]
    fn the_table_starts_again_past_its_bound_and_after_clear() {
        let mut table = HeadTable::with_max(3);
        table.begin();
        for w in 0..3 {
            table.head(&head(w, 0), || None);
        }
        assert_eq!(table.sent.len(), 3);
        table.take();
        table.begin();
        // Past the bound: head numbers start at 0 and the call says so.
        assert_eq!(table.sent.len(), 0);
        assert_eq!(table.head(&head(1, 0), || None), 0, "sent again");
        assert_eq!(table.take().map(|s| s.first), Some(0));
        table.clear();
        table.begin();
        assert_eq!(
            table.head(&head(1, 0), || None),
            0,
            "sent again after a clear"
        );
        assert_eq!(table.take().map(|s| (s.first, s.heads.len())), Some((0, 1)));
    }
}
