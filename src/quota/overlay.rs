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
}

/// Dense scratch rows reused across attempts: `stamp[i] == epoch` marks `values[i]` as
/// changed by the current attempt, so starting a new attempt is one increment.
#[derive(Default)]
struct Scratch {
    values: Vec<i64>,
    stamp: Vec<u32>,
    epoch: u32,
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
        if scratch.stamp.len() != len {
            scratch.values = vec![0; len];
            scratch.stamp = vec![0; len];
            scratch.epoch = 0;
        }
        scratch.epoch = scratch.epoch.wrapping_add(1);
        if scratch.epoch == 0 {
            scratch.stamp.fill(0);
            scratch.epoch = 1;
        }
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
        if self.scratch.stamp[i] == self.scratch.epoch {
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
        self.scratch.stamp[i] = self.scratch.epoch;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::tree::{NodeKind, NodeSpec, QuotaTree, ResourceQuota};

    const FR: FrIdx = FrIdx(0);

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
