//! {{name}}: an admission-ordering plugin for wasq.
//!
//! Describe here what the policy does and how it differs from Kueue's default. As generated, it
//! orders workloads as Kueue does: higher priority first, then older first.

use wasq_policy_sdk::prelude::*;

/// The policy. The SDK builds it with `Default` on the first call; keep state in its fields.
#[derive(Debug, Default)]
pub struct Policy;

impl OrderingPolicy for Policy {
    /// The key a workload is queued under; smallest first. Besides priority and times, a
    /// workload says how often it was evicted and queued again (`workload.requeue_count()`) and
    /// why (`workload.requeue_reason()`), and who it is (`Identity`): `workload.namespace(catalog)`,
    /// `.job_kind(catalog)` (`Some("Notebook")`, …), `.job_name(catalog)`, `.local_queue(catalog)`,
    /// `.label(catalog, key)`, `.annotation(catalog, key)`; heads the same.
    fn sort_key(&mut self, _catalog: &Catalog, workload: &Workload, _now: Millis) -> SortKey {
        SortKey {
            primary: workload.priority.saturating_neg(),
            secondary: workload.created,
            tertiary: 0,
        }
    }

    // `order_heads` (the order of a cycle's heads) keeps Kueue's default; override it here to
    // change it. To read admission fair sharing's LocalQueue usage or the quota usage of the
    // cohort trees (fair sharing), declare it in `needs` and override `sort_key_with_usage` or
    // `order_heads_with_usage` (see `kueue::sort_key_for` and `kueue::order_heads_for`).
}

wasq_policy_sdk::export_ordering!(Policy);

#[cfg(test)]
mod tests {
    use super::*;
    use wasq_policy_sdk::testing::{CatalogBuilder, workload};

    #[test]
    fn higher_priority_then_older_first() {
        let catalog = CatalogBuilder::new().build();
        let mut policy = Policy;
        let high = policy.sort_key(&catalog, &workload(1, 0, 10, 200), 0);
        let low_old = policy.sort_key(&catalog, &workload(2, 0, 1, 100), 0);
        let low_new = policy.sort_key(&catalog, &workload(3, 0, 1, 300), 0);
        let key = |k: &SortKey| (k.primary, k.secondary, k.tertiary);
        assert!(key(&high) < key(&low_old));
        assert!(key(&low_old) < key(&low_new));
    }
}
