//! Kueue's preemption victim selection as a plugin: the exact behaviour of wasq's built-in
//! policy.
//!
//! Classical preemption: candidates are ordered as Kueue's `CandidatesOrdering` (evicting first,
//! other queues before the preemptor's own, [admission fair sharing: LocalQueues with higher
//! usage first within a ClusterQueue], lower priority, most recently admitted, then handle),
//! grouped evicting first then hierarchical reclaim, other reclaim, same queue; they are removed
//! one by one from a simulated quota snapshot (skipping those whose queue is no longer over its
//! quota) until the preemptor fits, then every victim but the last is put back when not needed.
//! Borrowing after preemption is tried as Kueue does (`borrowWithinCohort`).
//!
//! Under fair sharing it needs `tree-usage` and answers with
//! [`kueue::fair_select_victims`] (Kueue's `fairPreemptions`). It differs from Kueue's default
//! in nothing.

use wasq_policy_sdk::preemption::{CandidateColumns, CandidateTable, Request};
use wasq_policy_sdk::prelude::*;

/// Kueue's victim selection.
#[derive(Debug, Default)]
pub struct KueuePreemption;

/// Kueue's answer, on candidates in either form.
fn kueue_victims<C: CandidateTable>(catalog: &Catalog, req: &Request<C>) -> Option<Victims> {
    match catalog.fair_sharing_strategies() {
        Some(strategies) => kueue::fair_select_victims(catalog, req, strategies),
        None => kueue::select_victims(catalog, req),
    }
}

impl PreemptionPolicy for KueuePreemption {
    fn needs(&self, catalog: &Catalog) -> Needs {
        kueue::preemption_needs(catalog)
    }

    fn select_victims(&mut self, catalog: &Catalog, req: &Request) -> Option<Victims> {
        kueue_victims(catalog, req)
    }

    /// The columns as the host sends them: no record per candidate.
    fn select_victims_columns(
        &mut self,
        catalog: &Catalog,
        req: &Request<CandidateColumns>,
    ) -> Option<Victims> {
        kueue_victims(catalog, req)
    }
}

wasq_policy_sdk::export_preemption!(KueuePreemption);

/// Talc instead of the C library's dlmalloc, with freed small blocks kept for reuse: a request
/// lowers several lists into the instance, and the bindings and the search add about as many
/// vectors of their own, each allocated and freed once, the same sizes call after call.
/// dlmalloc spent ≈ 185 instructions an allocation and ≈ 150 a free on them (BENCHMARKS.md,
/// stop 34), talc ≈ 150 and ≈ 85 (stop 40); a kept block comes back in a few.
#[cfg(all(not(target_feature = "atomics"), target_family = "wasm"))]
#[global_allocator]
static ALLOC: wasq_policy_sdk::alloc::Recycling<talc::wasm::WasmDynamicTalc> =
    wasq_policy_sdk::alloc::Recycling::new(talc::wasm::new_wasm_dynamic_allocator());
