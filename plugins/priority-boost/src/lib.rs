//! Admission ordering with a per-workload priority boost (in the style of Kueue's KEP-7990).
//!
//! Effective priority = priority + the integer value of the workload annotation
//! `wasq.dev/priority-boost` (missing or unparsable = 0; clamped to ±1,000,000,000; the sum
//! saturates). Otherwise Kueue's order: queue key `(-effective priority, created, 0)`, and the
//! cycle's heads by (second pass first, lower borrowing level, higher effective priority,
//! older), stable.
//!
//! Heads carry the same annotations, but also the key their workload was queued
//! under (`head.key`, computed by this plugin's `sort_key`), so a head's effective priority is
//! `-key.primary`: no annotation is parsed twice and the plugin keeps no state. (Where the host had to use its built-in key because a `sort-keys`
//! call failed, that key holds the plain priority, so head order still agrees with queue order.)
//!
//! Differences from Kueue's default: the boost above. The priority the host uses for preemption
//! eligibility is not changed.

use wasq_policy_sdk::prelude::*;

/// The workload annotation holding the boost.
pub const ANNOTATION: &str = "wasq.dev/priority-boost";
/// The largest boost, up or down.
pub const MAX_BOOST: i64 = 1_000_000_000;

/// Kueue's ordering with `wasq.dev/priority-boost` added to the priority.
#[derive(Debug, Default)]
pub struct PriorityBoost;

/// The boost an annotation value gives: an integer (optionally signed), clamped; 0 when it is
/// not an integer.
pub fn parse_boost(value: &str) -> i64 {
    let value = value.trim();
    match value.parse::<i64>() {
        Ok(v) => v.clamp(-MAX_BOOST, MAX_BOOST),
        // Integers too long for i64 still have an obvious sign.
        Err(_) if is_integer(value) => {
            if value.starts_with('-') {
                -MAX_BOOST
            } else {
                MAX_BOOST
            }
        }
        Err(_) => 0,
    }
}

fn is_integer(value: &str) -> bool {
    let digits = value.strip_prefix(['+', '-']).unwrap_or(value);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

impl PriorityBoost {
    /// A workload's boost, from its annotations.
    pub fn boost(catalog: &Catalog, workload: &Workload) -> i64 {
        workload
            .annotation(catalog, ANNOTATION)
            .map_or(0, parse_boost)
    }

    /// The effective priority a head was queued with: the negated primary of its sort key (the
    /// exact inverse of [`kueue::sort_key_with_priority`]).
    pub fn effective_priority(head: &Head) -> i64 {
        head.key.primary.wrapping_neg()
    }
}

impl OrderingPolicy for PriorityBoost {
    fn sort_key(&mut self, catalog: &Catalog, workload: &Workload, _: Millis) -> SortKey {
        let boost = PriorityBoost::boost(catalog, workload);
        kueue::sort_key_with_priority(workload.priority.saturating_add(boost), workload.created)
    }

    fn order_heads(&mut self, _: &Catalog, heads: &[Head], _: Millis) -> Vec<u32> {
        kueue::order_heads_by_priority(heads, PriorityBoost::effective_priority)
    }
}

wasq_policy_sdk::export_ordering!(PriorityBoost);

#[cfg(test)]
mod tests {
    use super::*;
    use wasq_policy_sdk::testing::{self, CatalogBuilder, with_annotation, workload};

    /// The catalog whose string table the boosted workloads' annotations index.
    fn catalog() -> Catalog {
        let mut cat = CatalogBuilder::new().build();
        for boost in ["20", "lots", "5", "100"] {
            with_annotation(&mut cat, workload(0, 0, 0, 0), ANNOTATION, boost);
        }
        cat
    }

    fn boosted(id: u32, priority: i64, created: i64, boost: &str) -> Workload {
        with_annotation(
            &mut catalog(),
            workload(id, 0, priority, created),
            ANNOTATION,
            boost,
        )
    }

    /// The head of a workload, queued under this plugin's key.
    fn head(p: &mut PriorityBoost, cat: &Catalog, w: &Workload) -> Head {
        let mut h = testing::head(w.id, w.cluster_queue, w.priority, w.created);
        h.key = p.sort_key(cat, w, 0);
        h
    }

    #[test]
    fn parses_and_clamps_boosts() {
        assert_eq!(parse_boost("15"), 15);
        assert_eq!(parse_boost(" -3 "), -3);
        assert_eq!(parse_boost("+7"), 7);
        assert_eq!(parse_boost("2000000000"), MAX_BOOST);
        assert_eq!(parse_boost("-99999999999999999999999"), -MAX_BOOST);
        assert_eq!(parse_boost("high"), 0);
        assert_eq!(parse_boost("1.5"), 0);
        assert_eq!(parse_boost(""), 0);
    }

    #[test]
    fn boost_changes_queue_order() {
        let cat = catalog();
        let mut p = PriorityBoost;
        let k = p.sort_key(&cat, &boosted(1, 10, 5, "20"), 0);
        assert_eq!((k.primary, k.secondary, k.tertiary), (-30, 5, 0));
        let plain = p.sort_key(&cat, &workload(2, 0, 10, 5), 0);
        assert_eq!(plain.primary, -10);
        let bad = p.sort_key(&cat, &boosted(3, 10, 5, "lots"), 0);
        assert_eq!(bad.primary, -10);
        let max = p.sort_key(&cat, &boosted(4, i64::MAX, 5, "5"), 0);
        assert_eq!(max.primary, -i64::MAX);
    }

    #[test]
    fn heads_are_ordered_by_their_keys() {
        let cat = catalog();
        let mut p = PriorityBoost;
        let heads = [
            head(&mut p, &cat, &workload(2, 0, 50, 1)),
            head(&mut p, &cat, &boosted(1, 0, 5, "100")),
            head(&mut p, &cat, &workload(3, 0, 50, 0)),
        ];
        assert_eq!(p.order_heads(&cat, &heads, 0), vec![1, 2, 0]);
        // A head keyed without the boost (for example the host's key after a failed call)
        // is ordered by its plain priority.
        let mut unboosted = heads.clone();
        unboosted[1] = testing::head(1, 0, 0, 5);
        assert_eq!(p.order_heads(&cat, &unboosted, 0), vec![2, 0, 1]);
        // Borrowing still comes before priority.
        let mut borrowing = heads.clone();
        borrowing[1].borrow_level = 1;
        assert_eq!(p.order_heads(&cat, &borrowing, 0), vec![2, 0, 1]);
    }
}
