//! Admission ordering with a per-workload priority boost (in the style of Kueue's KEP-7990).
//!
//! Effective priority = priority + the integer value of the workload annotation
//! `wasq.dev/priority-boost` (missing or unparsable = 0; clamped to ±1,000,000,000; the sum
//! saturates). Otherwise Kueue's order: queue key `(-effective priority, created, 0)`, and the
//! cycle's heads by (second pass first, lower borrowing level, higher effective priority,
//! older), stable.
//!
//! Heads carry no annotations, so the boost of each workload is remembered when its sort key is
//! computed (workload handles are never reused). A head whose workload was never keyed by this
//! instance (for example after the host replaced the instance) is ordered by its priority alone.
//!
//! Differences from Kueue's default: the boost above. The priority the host uses for preemption
//! eligibility is not changed.

use std::collections::BTreeMap;

use wasq_policy_sdk::prelude::*;

/// The workload annotation holding the boost.
pub const ANNOTATION: &str = "wasq.dev/priority-boost";
/// The largest boost, up or down.
pub const MAX_BOOST: i64 = 1_000_000_000;
/// The most boosts remembered; the memory is cleared when it would grow past this.
const MAX_REMEMBERED: usize = 1 << 16;

/// Kueue's ordering with `wasq.dev/priority-boost` added to the priority.
#[derive(Debug, Default)]
pub struct PriorityBoost {
    /// Non-zero boosts by workload handle, from the last sort key computed for each. (A
    /// `BTreeMap`: std's `HashMap` seeds its hasher from `wasi:random`, which the host refuses.)
    boosts: BTreeMap<WorkloadId, i64>,
}

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
        catalog
            .annotation(&workload.annotations, ANNOTATION)
            .map_or(0, parse_boost)
    }

    fn remember(&mut self, workload: WorkloadId, boost: i64) {
        if boost == 0 {
            self.boosts.remove(&workload);
            return;
        }
        if self.boosts.len() >= MAX_REMEMBERED && !self.boosts.contains_key(&workload) {
            self.boosts.clear();
        }
        self.boosts.insert(workload, boost);
    }
}

impl OrderingPolicy for PriorityBoost {
    fn sort_key(&mut self, catalog: &Catalog, workload: &Workload, _: Millis) -> SortKey {
        let boost = PriorityBoost::boost(catalog, workload);
        self.remember(workload.id, boost);
        kueue::sort_key_with_priority(workload.priority.saturating_add(boost), workload.created)
    }

    fn order_heads(&mut self, _: &Catalog, heads: &[Head], _: Millis) -> Vec<u32> {
        kueue::order_heads_by_priority(heads, |h| {
            let boost = self.boosts.get(&h.workload).copied().unwrap_or(0);
            h.priority.saturating_add(boost)
        })
    }
}

wasq_policy_sdk::export_ordering!(PriorityBoost);

#[cfg(test)]
mod tests {
    use super::*;
    use wasq_policy_sdk::testing::{CatalogBuilder, workload};
    use wasq_policy_sdk::types::Annotation;

    fn boosted(id: u32, priority: i64, created: i64, boost: &str) -> Workload {
        let mut w = workload(id, 0, priority, created);
        w.annotations.push(Annotation {
            key: 0,
            value: boost.into(),
        });
        w
    }

    fn head(workload: u32, priority: i64, created: i64) -> Head {
        Head {
            workload,
            cluster_queue: 0,
            local_queue: None,
            has_reservation: false,
            borrow_level: 0,
            priority,
            created,
            queued: created,
        }
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
        let cat = CatalogBuilder::new().annotation_key(ANNOTATION).build();
        let mut p = PriorityBoost::default();
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
    fn remembered_boosts_order_heads() {
        let cat = CatalogBuilder::new().annotation_key(ANNOTATION).build();
        let mut p = PriorityBoost::default();
        p.sort_key(&cat, &boosted(1, 0, 5, "100"), 0);
        let heads = [head(2, 50, 1), head(1, 0, 5), head(3, 50, 0)];
        assert_eq!(p.order_heads(&cat, &heads, 0), vec![1, 2, 0]);
        // Re-keyed without a boost: forgotten.
        p.sort_key(&cat, &workload(1, 0, 0, 5), 0);
        assert_eq!(p.order_heads(&cat, &heads, 0), vec![2, 0, 1]);
    }
}
