//! Kueue's fair-sharing cycle order (`fair_sharing_iterator.go`'s tournament): `wasq-kueue`'s
//! `fair_ordering`, the same code as the host's built-in. Kueue re-runs the tournament after
//! every admission; this order is computed on a copy of the usage in which every winner, in
//! turn, takes its head's `usage`, and the host asks again for the remaining heads when one
//! does not (`needs.tree-usage`). Heads of ClusterQueues without a cohort, and the order between
//! cohort trees (which share no quota), are not decided by the tournament: they come in the
//! classical cycle order.

use super::reads::HeadRecords;
use crate::catalog::Catalog;
use crate::ordering::Head;
use crate::quota::QuotaView;

/// The fair-sharing order of `heads` (a permutation of their indices) on `usage`, the quota
/// usage of the heads' cohort trees on every flavor-resource (a view built with
/// [`QuotaView::from_usage_table`] from what the host sends with `needs.tree-usage`).
pub fn fair_order_heads(catalog: &Catalog, heads: &[Head], usage: &QuotaView<'_>) -> Vec<u32> {
    let mut usage = usage.clone();
    let classical = super::order_heads(heads);
    wasq_kueue::fair_ordering::order_heads(catalog, &HeadRecords(heads), classical, &mut usage)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{CatalogBuilder, amounts, head, usage_table};

    /// root(0) <- left(1) <- a(2, cq 0), b(3, cq 1); root <- c(4, cq 2); alone(5, cq 3).
    /// Every ClusterQueue has 4 of fr 0.
    fn forest() -> Catalog {
        CatalogBuilder::new()
            .flavor_resources(1)
            .cohort("root", None)
            .cohort("left", Some(0))
            .cluster_queue("a", Some(1))
            .quota(2, 0, 4, None, None)
            .cluster_queue("b", Some(1))
            .quota(3, 0, 4, None, None)
            .cluster_queue("c", Some(0))
            .quota(4, 0, 4, None, None)
            .cluster_queue("alone", None)
            .quota(5, 0, 4, None, None)
            .fair_sharing(&[])
            .build()
    }

    fn with_usage(mut h: Head, amount: i64) -> Head {
        h.usage = amounts(&[(0, amount)]);
        h
    }

    #[test]
    fn non_borrowing_then_lower_share_wins() {
        let cat = forest();
        // a already uses 4: its head borrows; b's does not.
        let table = usage_table(&cat, &[0], &[(2, 0, 4)]);
        let view = QuotaView::from_usage_table(&cat, &table);
        let heads = [
            with_usage(head(10, 0, 5, 0), 2),
            with_usage(head(11, 1, 0, 9), 2),
        ];
        assert_eq!(fair_order_heads(&cat, &heads, &view), vec![1, 0]);
        // Classically, a's higher priority goes first.
        assert_eq!(super::super::order_heads(&heads), vec![0, 1]);
    }

    #[test]
    fn each_winner_takes_its_usage_before_the_next_round() {
        let cat = forest();
        let view = QuotaView::from_usage_table(&cat, &usage_table(&cat, &[0], &[]));
        // Each head takes 6 of its 4. Round 1: a and b tie in `left` (2/12 each), a has the
        // higher priority; at the root `left` would not borrow (6 of 8) while c would: a.
        // Round 2: `left` would now hold 12 of 8 (share 4/12) against c's 2/12: c, then b.
        let heads = [
            with_usage(head(10, 0, 3, 0), 6),
            with_usage(head(11, 1, 2, 0), 6),
            with_usage(head(12, 2, 1, 0), 6),
        ];
        assert_eq!(fair_order_heads(&cat, &heads, &view), vec![0, 2, 1]);
        assert_eq!(super::super::order_heads(&heads), vec![0, 1, 2]);
    }

    #[test]
    fn heads_without_a_cohort_keep_the_classical_place() {
        let cat = forest();
        let view = QuotaView::from_usage_table(&cat, &usage_table(&cat, &[0, 5], &[]));
        let heads = [
            with_usage(head(10, 3, 9, 0), 1),
            with_usage(head(11, 0, 1, 0), 1),
        ];
        assert_eq!(fair_order_heads(&cat, &heads, &view), vec![0, 1]);
    }
}
