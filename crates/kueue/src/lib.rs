//! Kueue's reference decisions, written once for wasq's host (its built-in policies, the
//! fallback whenever a plugin fails) and for its plugin SDK (plugins that change part of a
//! decision and keep Kueue's for the rest). Host and guest decide alike because they run this
//! code.
//!
//! Each algorithm reads the cluster through small traits that both sides implement over their
//! own data (the host over its quota tree and candidate records, the SDK over the catalog and
//! the rows the host sends):
//!
//! - [`Tree`]: the cohort tree (parents, children, which nodes are ClusterQueues);
//! - [`Candidates`]: preemption candidates by index;
//! - [`Quota`]: quota and usage per node and flavor-resource, for dominant resource shares;
//! - [`Heads`]: the heads of a scheduling cycle;
//! - and the usage a decision simulates on, which changes as it goes:
//!   [`classical::Removal`] (victims taken out and put back),
//!   [`share::Snapshot`] (usage added, shares read) and [`fair_preemption::Search`].
//!
//! What is here, by Kueue's names:
//!
//! | module | Kueue |
//! |---|---|
//! | [`candidates`] | `CandidatesOrdering` (with admission fair sharing's LocalQueue rule) |
//! | [`classical`] | classical preemption: `candidateIsValid`, the borrowing attempts, remove-until-fit and fill-back |
//! | [`share`] | `DominantResourceShare` and `CompareDRS` |
//! | [`fair_preemption`] | `fairPreemptions`: `TargetClusterQueueOrdering` and the strategies S2-a and S2-b |
//! | [`ordering`] | the queue order (priority, creation; admission fair sharing's usage) and the classical cycle order |
//! | [`fair_ordering`] | fair sharing's cycle order (`fair_sharing_iterator.go`'s tournament) |
//! | [`flavors`] | flavor fungibility: `isPreferred`, `shouldTryNextFlavor`, the flavor choice |
//! | [`dispatch`] | MultiKueue's all-at-once and incremental dispatchers |
//!
//! Topology placement (BestFit) is the sibling crate `wasq-bestfit`.
//!
//! Node ids, ClusterQueue ids, flavor-resource ids and candidate indices are `u32` here; each
//! side maps its own types onto them. No dependency: the crate builds for the host and for
//! `wasm32-wasip2` guests alike.

pub mod candidates;
pub mod classical;
pub mod dispatch;
pub mod fair_ordering;
pub mod fair_preemption;
pub mod flavors;
pub mod ordering;
pub mod share;
mod tree;

pub use candidates::{CandidateKind, Candidates};
pub use ordering::Heads;
pub use share::{Drs, Quota};
pub use tree::{NodeId, Tree};

#[cfg(test)]
mod testing;
