//! [`Epoch`]: which figures a [`Usage`](super::Usage) holds, as a number, so that a reader that
//! compared it with a copy of its own (the rows a preemption plugin instance holds,
//! [`crate::wasm`]) can tell the figures did not change since without comparing any.
//!
//! A usage gets a number from one process-wide counter the first time someone asks, keeps it
//! while nothing changes, and loses it at its next change. A clone or a copy takes the number
//! along with the figures. So two usages with the same number hold the same figures, and a
//! number is never given to other figures.

use std::sync::atomic::{AtomicU64, Ordering};

/// The next number to give out; 0 is never given.
static NEXT: AtomicU64 = AtomicU64::new(1);

/// A usage's number: 0 until asked for, and again after every change.
#[derive(Debug, Default)]
pub struct Epoch(AtomicU64);

impl Epoch {
    /// The number, given now when there is none.
    pub fn get(&self) -> u64 {
        let current = self.0.load(Ordering::Relaxed);
        if current != 0 {
            return current;
        }
        let fresh = NEXT.fetch_add(1, Ordering::Relaxed);
        // Another reader of the same usage may have given it one first: keep theirs.
        match self
            .0
            .compare_exchange(0, fresh, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => fresh,
            Err(theirs) => theirs,
        }
    }

    /// The figures changed: the number no longer names them.
    #[inline]
    pub fn changed(&mut self) {
        *self.0.get_mut() = 0;
    }

    /// Takes `other`'s number with its figures, giving `other` one first (so that copying an
    /// unchanged usage again yields the same number).
    pub fn copy_from(&mut self, other: &Epoch) {
        *self.0.get_mut() = other.get();
    }
}

impl Clone for Epoch {
    fn clone(&self) -> Epoch {
        Epoch(AtomicU64::new(self.0.load(Ordering::Relaxed)))
    }
}

/// The number says nothing about equality: equal figures may carry different numbers (or
/// none).
impl PartialEq for Epoch {
    fn eq(&self, _: &Epoch) -> bool {
        true
    }
}

impl Eq for Epoch {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_names_one_state_of_the_figures() {
        let mut a = Epoch::default();
        let first = a.get();
        assert_ne!(first, 0);
        assert_eq!(a.get(), first, "kept while nothing changes");
        let b = a.clone();
        assert_eq!(b.get(), first, "a clone holds the same figures");
        a.changed();
        let second = a.get();
        assert_ne!(second, first, "a change gets a new number");
        assert_eq!(b.get(), first, "the clone did not change");
        let mut c = Epoch::default();
        c.copy_from(&a);
        assert_eq!(c.get(), second);
        // Copying a usage that had no number gives both the same new one.
        let fresh = Epoch::default();
        let mut d = Epoch::default();
        d.copy_from(&fresh);
        assert_eq!(d.get(), fresh.get());
        assert_ne!(d.get(), second);
    }
}
