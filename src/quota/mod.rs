//! Quota bookkeeping: interned flavor-resources, the cohort tree, usage, borrowing and lending.
//!
//! Invariant: usage is only changed through [`QuotaTree::add_usage`], which keeps every cohort's
//! usage equal to the sum of what its children hold past their local quota. The scheduler only
//! adds usage for a workload after checking it fits in [`QuotaTree::available`], so no node ever
//! goes past what its quota and limits allow.

pub mod epoch;
pub mod fair;
pub mod overlay;
pub mod resources;
pub mod tree;

pub use fair::Drs;
pub use overlay::{UsageOverlay, UsageRead, UsageWrite};
pub use resources::{FlavorId, FrAmounts, FrIdx, Names, ResourceId, add_amount, amount_of};
pub use tree::{NodeId, NodeKind, NodeSpec, QuotaTree, ResourceQuota, Usage};
