//! Kueue's own behaviour behind the policy traits: the reference every plugin is compared with
//! and the fallback whenever a plugin fails. The decisions are `wasq-kueue`'s (crates/kueue),
//! the code the plugin SDK runs too; these files read the host's records through its traits
//! (`reads`).

mod fair_ordering;
mod fair_preemption;
mod flavors;
mod ordering;
mod placement;
mod preemption;
mod reads;

pub use flavors::{KueueFlavors, choose_flavor, is_preferred, should_try_next_flavor};
pub use ordering::{KueueOrdering, classical_order, needs, order_bits, order_heads, sort_key};
pub use placement::{KueuePlacement, best_fit};
pub(crate) use preemption::remove_candidate;
pub use preemption::{KueuePreemption, candidate_order, fits_after, select_victims};
