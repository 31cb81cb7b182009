//! Kueue's own behaviour behind the policy traits: the reference every plugin is compared with
//! and the fallback whenever a plugin fails.

mod fair_ordering;
mod fair_preemption;
mod flavors;
mod ordering;
mod placement;
mod preemption;

pub use flavors::{KueueFlavors, choose_flavor, is_preferred, should_try_next_flavor};
pub use ordering::{KueueOrdering, classical_order, needs, order_bits, order_heads, sort_key};
pub use placement::{KueuePlacement, best_fit};
pub(crate) use preemption::remove_candidate;
pub use preemption::{
    KueuePreemption, candidate_order, candidates_ordering, fits_after, select_victims,
};
