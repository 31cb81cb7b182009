//! Kueue's admission ordering as a plugin: the exact behaviour of wasq's built-in ordering, in
//! every configuration.
//!
//! - Queue order: key `(-priority, created, 0)`: higher priority first, then older first. Under
//!   admission fair sharing, for ClusterQueues with `admission-fair-sharing`: key
//!   `(LocalQueue usage, -priority, created)`: the LocalQueue with the lower weighted usage first
//!   (it then needs `local-queue-usage`).
//! - Cycle order: a stable sort of the heads by (second pass first, lower borrowing level,
//!   higher priority, older); equal heads keep the host's order. Under fair sharing: Kueue's
//!   tournament over each cohort tree (non-borrowing first, then lower dominant resource share,
//!   priority, age), speculative as the contract describes (it then needs `tree-usage`).
//!
//! It differs from Kueue's default in nothing; it exists to check that the plugin path decides
//! exactly as the built-in one (the parity suite) and as a starting point.

use wasq_policy_sdk::ordering::{self, Heads};
use wasq_policy_sdk::prelude::*;

/// Kueue's ordering.
#[derive(Debug, Default)]
pub struct KueueOrdering;

impl OrderingPolicy for KueueOrdering {
    fn needs(&self, catalog: &Catalog) -> Needs {
        kueue::ordering_needs(catalog)
    }

    fn sort_key_with_usage(
        &mut self,
        catalog: &Catalog,
        workload: &Workload,
        local_queue_usage: Option<&LocalQueueUsage>,
        _: Millis,
    ) -> SortKey {
        kueue::sort_key_for(catalog, workload, local_queue_usage)
    }

    fn order_heads_with_usage(
        &mut self,
        catalog: &Catalog,
        heads: &[Head],
        usage: &QuotaView<'_>,
        _: Millis,
    ) -> Vec<u32> {
        kueue::order_heads_for(catalog, heads, usage)
    }

    /// Without fair sharing, Kueue's order reads four columns: no record per head.
    fn order_heads_columns(
        &mut self,
        catalog: &Catalog,
        heads: Heads,
        usage: &QuotaView<'_>,
        now: Millis,
    ) -> Vec<u32> {
        if catalog.fair_sharing.is_some() {
            return self.order_heads_with_usage(catalog, &ordering::heads_of(heads), usage, now);
        }
        kueue::order_heads_columns(&heads)
    }
}

wasq_policy_sdk::export_ordering!(KueueOrdering);

#[cfg(test)]
mod tests {
    use super::*;
    use wasq_policy_sdk::testing::{
        CatalogBuilder, amounts, local_queue_usage, usage_table, workload,
    };
    use wasq_policy_sdk::types::FairSharingStrategy;

    fn head(workload: u32, reserved: bool, level: u32, priority: i64, created: i64) -> Head {
        Head {
            workload,
            cluster_queue: workload,
            local_queue: None,
            has_reservation: reserved,
            borrow_level: level,
            priority,
            created,
            queued: created,
            requeue_count: 0,
            requeue_reason: None,
            key: kueue::sort_key_with_priority(priority, created),
            usage: Vec::new(),
            namespace: wasq_policy_sdk::identity::NO_STRING,
            owner: None,
            labels: Vec::new(),
            annotations: Vec::new(),
        }
    }

    fn key(k: SortKey) -> (i64, i64, i64) {
        (k.primary, k.secondary, k.tertiary)
    }

    #[test]
    fn sort_key_is_priority_then_age() {
        let cat = Catalog::empty();
        let mut p = KueueOrdering;
        assert_eq!(p.needs(&cat), Needs::empty());
        let k = p.sort_key_with_usage(&cat, &workload(1, 0, 7, 100), None, 0);
        assert_eq!(key(k), (-7, 100, 0));
    }

    #[test]
    fn admission_fair_sharing_orders_by_local_queue_usage_first() {
        // cq 0 uses admission fair sharing, cq 1 does not; LocalQueue 0 → cq 0, 1 → cq 1.
        let cat = CatalogBuilder::new()
            .flavor_resources(1)
            .cluster_queue("afs", None)
            .queue_admission_fair_sharing(true)
            .cluster_queue("plain", None)
            .local_queue("ns", "a", Some(0), 1000)
            .local_queue("ns", "b", Some(1), 1000)
            .admission_fair_sharing(60_000, 10_000, &[])
            .build();
        let mut p = KueueOrdering;
        assert_eq!(p.needs(&cat), Needs::LOCAL_QUEUE_USAGE);
        let mut wl = workload(1, 0, 7, 100);
        wl.local_queue = Some(0);
        let usage = local_queue_usage(0, 2.5);
        let k = p.sort_key_with_usage(&cat, &wl, Some(&usage), 0);
        assert_eq!(key(k), (2.5f64.to_bits() as i64, -7, 100));
        // Nothing known of the LocalQueue: usage 0.
        assert_eq!(key(p.sort_key_with_usage(&cat, &wl, None, 0)), (0, -7, 100));
        // Lower usage sorts first, +∞ last.
        let lower = kueue::order_bits(1.0);
        assert!(lower < kueue::order_bits(2.5));
        assert!(kueue::order_bits(2.5) < kueue::order_bits(f64::INFINITY));
        // Either zero, and anything not positive, is 0.
        for v in [-0.0, 0.0, -1.0, f64::NAN, f64::NEG_INFINITY] {
            assert_eq!(kueue::order_bits(v), 0, "{v}");
        }
        // A ClusterQueue without the flag keeps Kueue's key.
        let mut plain = workload(2, 1, 7, 100);
        plain.local_queue = Some(1);
        let usage = local_queue_usage(1, 2.5);
        let k = p.sort_key_with_usage(&cat, &plain, Some(&usage), 0);
        assert_eq!(key(k), (-7, 100, 0));
    }

    #[test]
    fn heads_are_ordered_stably() {
        let cat = Catalog::empty();
        let heads = [
            head(0, false, 1, 10, 5),
            head(1, false, 0, 1, 9),
            head(2, true, 2, 0, 9),
            head(3, false, 0, 1, 9),
            head(4, false, 0, 5, 9),
        ];
        let view = QuotaView::new(&cat, &[]);
        let order = KueueOrdering.order_heads_with_usage(&cat, &heads, &view, 0);
        assert_eq!(order, vec![2, 4, 1, 3, 0]);
    }

    #[test]
    fn fair_sharing_orders_heads_by_tournament() {
        // cohort(2) <- a(0, cq 0), b(1, cq 1), 4 each; a already uses 4.
        let cat = CatalogBuilder::new()
            .flavor_resources(1)
            .cluster_queue("a", Some(2))
            .quota(0, 0, 4, None, None)
            .cluster_queue("b", Some(2))
            .quota(1, 0, 4, None, None)
            .cohort("cohort", None)
            .fair_sharing(&[FairSharingStrategy::LessThanOrEqualToFinalShare])
            .build();
        let mut p = KueueOrdering;
        assert_eq!(p.needs(&cat), Needs::TREE_USAGE);
        let mut heads = [head(10, false, 0, 5, 0), head(11, false, 0, 0, 9)];
        heads[0].cluster_queue = 0;
        heads[1].cluster_queue = 1;
        heads[0].usage = amounts(&[(0, 2)]);
        heads[1].usage = amounts(&[(0, 2)]);
        let table = usage_table(&cat, &[2], &[(0, 0, 4)]);
        let view = QuotaView::from_usage_table(&cat, &table);
        // b does not borrow with its head, a would: b first despite a's priority.
        assert_eq!(p.order_heads_with_usage(&cat, &heads, &view, 0), vec![1, 0]);
    }
}
