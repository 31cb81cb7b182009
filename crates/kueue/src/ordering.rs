//! Kueue's queue order (priority, then creation time; LocalQueue usage first under admission
//! fair sharing) and its classical cycle order (second passes first, then lower borrowing
//! level, then priority, then creation time).

/// The heads of a scheduling cycle (one pending workload per ClusterQueue), by index.
pub trait Heads {
    /// How many heads there are.
    fn len(&self) -> usize;
    /// Head `i`'s ClusterQueue id (as [`Tree::cluster_queue_node`](crate::Tree) takes it).
    fn cluster_queue(&self, i: u32) -> u32;
    /// Its effective priority.
    fn priority(&self, i: u32) -> i64;
    /// Its creation time (the queue-order timestamp).
    fn created(&self, i: u32) -> i64;
    /// Whether it is on its second pass (it reserved quota and waits for a topology
    /// assignment): those go first.
    fn second_pass(&self, i: u32) -> bool;
    /// How far up the cohort tree its flavor assignment borrows (0 = not at all).
    fn borrow_level(&self, i: u32) -> u32;
    /// The quota its assignment takes: `(flavor-resource, amount)` pairs.
    fn usage(&self, i: u32) -> impl Iterator<Item = (u32, i64)> + Clone + '_;

    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Kueue's queue order as a key, smallest first: higher priority first, then older first;
/// with `afs_usage` (the workload's LocalQueue usage when its ClusterQueue uses admission
/// fair sharing), lower usage before both.
pub fn sort_key(priority: i64, created: i64, afs_usage: Option<f64>) -> [i64; 3] {
    match afs_usage {
        Some(usage) => [order_bits(usage), priority.wrapping_neg(), created],
        None => [priority.wrapping_neg(), created, 0],
    }
}

/// A non-negative float as an `i64` with the same order (the IEEE 754 bit patterns of
/// positive numbers, +∞ included, sort like the numbers); zero of either sign, negative
/// numbers and NaN count as 0 (`-0.0`, the sum of no terms, must not sort below `0.0`).
pub fn order_bits(v: f64) -> i64 {
    if v > 0.0 { v.to_bits() as i64 } else { 0 }
}

/// Kueue's classical cycle order as a key, smallest first: second pass, lower borrowing
/// level, higher priority, older.
#[inline]
pub fn cycle_key(
    second_pass: bool,
    borrow_level: u32,
    priority: i64,
    created: i64,
) -> (bool, u32, i64, i64) {
    (!second_pass, borrow_level, priority.wrapping_neg(), created)
}

/// Kueue's classical cycle order (without fair sharing) of `heads`, with the effective
/// priority of each given by `priority`: a stable sort by [`cycle_key`] (equal heads keep the
/// order they came in).
pub fn cycle_order<H: Heads + ?Sized>(heads: &H, priority: impl Fn(u32) -> i64) -> Vec<u32> {
    let mut order: Vec<u32> = (0..heads.len() as u32).collect();
    order.sort_by_cached_key(|&i| {
        cycle_key(
            heads.second_pass(i),
            heads.borrow_level(i),
            priority(i),
            heads.created(i),
        )
    });
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_bits_keep_the_order_of_usage() {
        assert_eq!(order_bits(-0.0), 0);
        assert_eq!(order_bits(0.0), 0);
        assert_eq!(order_bits(f64::NAN), 0);
        assert!(order_bits(0.5) > order_bits(0.0));
        assert!(order_bits(2.0) > order_bits(1.5));
        assert!(order_bits(f64::INFINITY) > order_bits(1e300));
    }

    #[test]
    fn queue_order_is_priority_then_age_and_usage_first_under_admission_fair_sharing() {
        assert!(sort_key(5, 100, None) < sort_key(1, 0, None));
        assert!(sort_key(1, 0, None) < sort_key(1, 1, None));
        assert!(sort_key(0, 100, Some(1.0)) < sort_key(9, 0, Some(2.0)));
        assert!(sort_key(9, 0, Some(0.0)) < sort_key(1, 0, Some(0.0)));
    }
}
