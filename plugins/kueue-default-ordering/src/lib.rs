//! Kueue's admission ordering as a plugin: the exact behaviour of wasq's built-in ordering.
//!
//! - Queue order: key `(-priority, created, 0)`: higher priority first, then older first.
//! - Cycle order: a stable sort of the heads by (second pass first, lower borrowing level,
//!   higher priority, older); equal heads keep the host's order.
//!
//! It differs from Kueue's default in nothing; it exists to check that the plugin path decides
//! exactly as the built-in one (the parity suite) and as a starting point.

use wasq_policy_sdk::prelude::*;

/// Kueue's ordering: the SDK's defaults, which are Kueue's.
#[derive(Debug, Default)]
pub struct KueueOrdering;

impl OrderingPolicy for KueueOrdering {
    fn sort_key(&mut self, _: &Catalog, workload: &Workload, _: Millis) -> SortKey {
        kueue::sort_key(workload)
    }

    fn order_heads(&mut self, _: &Catalog, heads: &[Head], _: Millis) -> Vec<u32> {
        kueue::order_heads(heads)
    }
}

wasq_policy_sdk::export_ordering!(KueueOrdering);

#[cfg(test)]
mod tests {
    use super::*;
    use wasq_policy_sdk::testing::workload;

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
            key: kueue::sort_key_with_priority(priority, created),
        }
    }

    #[test]
    fn sort_key_is_priority_then_age() {
        let cat = Catalog::empty();
        let mut p = KueueOrdering;
        let k = p.sort_key(&cat, &workload(1, 0, 7, 100), 0);
        assert_eq!((k.primary, k.secondary, k.tertiary), (-7, 100, 0));
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
        let order = KueueOrdering.order_heads(&cat, &heads, 0);
        assert_eq!(order, vec![2, 4, 1, 3, 0]);
    }
}
