//! Kueue's topology placement as a plugin: the exact behaviour of wasq's built-in
//! (`findTopologyAssignment` in Kueue's `tas_flavor_snapshot.go`).
//!
//! BestFit by domain: the tightest domain of the requested level that holds every pod (or
//! slice), then level by level down to the leaves the tightest fit again. A preferred level
//! falls back to the levels above, then spans the fewest domains; unconstrained requests take
//! the least free capacity first (Kueue's `TASProfileMixed`); slices stay whole within their
//! domain. It differs from Kueue's default in nothing; the algorithm is
//! [`kueue::place`](wasq_policy_sdk::kueue::place) in the SDK, for other plugins to reuse.

use wasq_policy_sdk::placement::Request;
use wasq_policy_sdk::prelude::*;

/// Kueue's placement.
#[derive(Debug, Default)]
pub struct KueuePlacement;

impl PlacementPolicy for KueuePlacement {
    fn place(&mut self, catalog: &Catalog, req: &Request) -> Answer {
        kueue::place(catalog, req)
    }
}

wasq_policy_sdk::export_placement!(KueuePlacement);
