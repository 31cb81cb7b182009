//! Usage seen through a preemption attempt: the snapshot with some workloads' quota removed
//! (or added back), holding only the entries the attempt changed, so that trying victims costs
//! what it touches rather than a copy of the whole cluster's usage.

use std::cell::RefCell;

use super::resources::FrIdx;
use super::tree::{NodeId, Usage};

/// Reading usage: the snapshot itself or an attempt over it.
pub trait UsageRead {
    fn get(&self, id: NodeId, fr: FrIdx) -> i64;
}

/// Writing usage (through [`super::QuotaTree::add_usage`], which keeps cohorts consistent).
pub trait UsageWrite: UsageRead {
    fn set(&mut self, id: NodeId, fr: FrIdx, v: i64);

    /// A child of `parent` went over its subtree quota of `fr` (`over`), or back within it.
    /// [`super::Usage`] counts these for [`super::QuotaTree::any_child_over`]; other writers
    /// need not.
    fn child_crossed(&mut self, _parent: NodeId, _fr: FrIdx, _over: bool) {}
}

/// Marks over a dense range that a new round clears in O(1): entry `i` is marked in this
/// round when `stamp[i] == epoch`, so starting a round is one increment (and a full clear
/// once every 2^32 rounds).
#[derive(Debug, Default)]
pub struct EpochMarks {
    stamp: Vec<u32>,
    epoch: u32,
}

impl EpochMarks {
    /// Starts a round over `len` entries, none marked.
    pub fn start(&mut self, len: usize) {
        if self.stamp.len() != len {
            self.stamp = vec![0; len];
            self.epoch = 0;
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.fill(0);
            self.epoch = 1;
        }
    }

    pub fn is_marked(&self, i: usize) -> bool {
        self.stamp[i] == self.epoch
    }

    /// Marks entry `i`; false when it was marked already in this round (or is out of range).
    pub fn mark(&mut self, i: usize) -> bool {
        match self.stamp.get_mut(i) {
            Some(s) if *s != self.epoch => {
                *s = self.epoch;
                true
            }
            _ => false,
        }
    }
}

/// Dense scratch rows reused across attempts: a marked entry's `values[i]` was changed by the
/// current attempt.
#[derive(Default)]
struct Scratch {
    values: Vec<i64>,
    marks: EpochMarks,
}

thread_local! {
    /// Scratch buffers not in use (attempts may nest: a verification inside a search).
    static POOL: RefCell<Vec<Scratch>> = const { RefCell::new(Vec::new()) };
}

/// `base` as changed by one attempt. Reads fall through to `base` where the attempt changed
/// nothing; creating and dropping one costs O(1) after the first use on a thread.
pub struct UsageOverlay<'a> {
    base: &'a Usage,
    scratch: Scratch,
}

impl<'a> UsageOverlay<'a> {
    pub fn new(base: &'a Usage) -> UsageOverlay<'a> {
        let mut scratch = POOL.with(|p| p.borrow_mut().pop()).unwrap_or_default();
        let len = base.len();
        if scratch.values.len() != len {
            scratch.values = vec![0; len];
        }
        scratch.marks.start(len);
        UsageOverlay { base, scratch }
    }
}

impl Drop for UsageOverlay<'_> {
    fn drop(&mut self) {
        let scratch = std::mem::take(&mut self.scratch);
        POOL.with(|p| p.borrow_mut().push(scratch));
    }
}

impl UsageRead for UsageOverlay<'_> {
    fn get(&self, id: NodeId, fr: FrIdx) -> i64 {
        let i = self.base.index(id, fr);
        if self.scratch.marks.is_marked(i) {
            self.scratch.values[i]
        } else {
            self.base.get(id, fr)
        }
    }
}

impl UsageWrite for UsageOverlay<'_> {
    fn set(&mut self, id: NodeId, fr: FrIdx, v: i64) {
        let i = self.base.index(id, fr);
        self.scratch.values[i] = v;
        self.scratch.marks.mark(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::tree::{NodeKind, NodeSpec, QuotaTree, ResourceQuota};

    const FR: FrIdx = FrIdx(0);

    #[test]
    fn a_new_round_clears_every_mark() {
        let mut m = EpochMarks::default();
        m.start(4);
        assert!(m.mark(1) && !m.mark(1) && !m.mark(4));
        assert!(m.is_marked(1) && !m.is_marked(2));
        m.start(4);
        assert!(!m.is_marked(1) && m.mark(1));
        // A round over another length starts from nothing marked.
        m.start(2);
        assert!(!m.is_marked(1) && !m.mark(2));
    }

    fn tree() -> QuotaTree {
        let quota = |nominal| {
            vec![(
                FR,
                ResourceQuota {
                    nominal,
                    borrowing_limit: None,
                    lending_limit: None,
                },
            )]
        };
        let node = |name: &str, kind, parent, nominal| NodeSpec {
            name: name.into(),
            kind,
            parent,
            quotas: quota(nominal),
        };
        QuotaTree::build(
            vec![
                node("cohort", NodeKind::Cohort, None, 0),
                node("a", NodeKind::ClusterQueue, Some(NodeId(0)), 10),
                node("b", NodeKind::ClusterQueue, Some(NodeId(0)), 10),
            ],
            1,
        )
    }

    /// An attempt changes what it reads and nothing of its base; nested attempts and the next
    /// attempt start from the base again.
    #[test]
    fn attempts_read_through_and_leave_the_base_alone() {
        let tree = tree();
        let mut usage = tree.new_usage();
        tree.add_usage(&mut usage, NodeId(1), FR, 15);
        tree.add_usage(&mut usage, NodeId(2), FR, 12);
        assert_eq!(usage.get(NodeId(0), FR), 27);
        let before = usage.clone();
        {
            let mut attempt = UsageOverlay::new(&usage);
            tree.add_usage(&mut attempt, NodeId(1), FR, -8);
            assert_eq!(attempt.get(NodeId(1), FR), 7);
            assert_eq!(attempt.get(NodeId(0), FR), 19);
            assert_eq!(attempt.get(NodeId(2), FR), 12);
            {
                let mut nested = UsageOverlay::new(&usage);
                tree.add_usage(&mut nested, NodeId(2), FR, -2);
                assert_eq!(nested.get(NodeId(0), FR), 25);
                assert_eq!(nested.get(NodeId(1), FR), 15);
            }
            assert_eq!(
                tree.available(&attempt, NodeId(2), FR),
                tree.available(
                    &{
                        let mut copy = usage.clone();
                        tree.add_usage(&mut copy, NodeId(1), FR, -8);
                        copy
                    },
                    NodeId(2),
                    FR
                )
            );
        }
        let again = UsageOverlay::new(&usage);
        assert_eq!(again.get(NodeId(1), FR), 15);
        assert_eq!(again.get(NodeId(0), FR), 27);
        assert_eq!(usage.of(NodeId(0)), before.of(NodeId(0)));
    }
}
