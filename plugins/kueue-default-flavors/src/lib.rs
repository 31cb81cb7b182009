//! Kueue's flavor assignment as a plugin: the exact behaviour of wasq's built-in choice
//! (`findFlavorForPodSets` with `flavorFungibility`).
//!
//! Flavors are scanned in the ClusterQueue's order; the first one that the fungibility rules do
//! not ask to look past (`whenCanBorrow`, `whenCanPreempt`) is taken; otherwise the most
//! preferred one seen (`preference`: borrowing over preemption or the reverse). It differs from
//! Kueue's default in nothing.

use wasq_policy_sdk::flavor_assignment::Request;
use wasq_policy_sdk::prelude::*;

/// Kueue's flavor choice.
#[derive(Debug, Default)]
pub struct KueueFlavors;

impl FlavorAssignmentPolicy for KueueFlavors {
    fn choose_flavor(&mut self, catalog: &Catalog, req: &Request) -> Option<u32> {
        let fungibility = kueue::fungibility_of(catalog, req.workload.cluster_queue);
        kueue::choose_flavor(&req.options, &fungibility)
    }
}

wasq_policy_sdk::export_flavor_assignment!(KueueFlavors);

#[cfg(test)]
mod tests {
    use super::*;
    use wasq_policy_sdk::testing::{CatalogBuilder, workload};
    use wasq_policy_sdk::types::{Fungibility, FungibilityPolicy, FungibilityPreference};

    fn option(flavor: u32, mode: FitMode, borrow_level: u32) -> Option<FlavorOption> {
        Some(FlavorOption {
            flavor,
            mode,
            borrow_level,
        })
    }

    fn choose(f: Fungibility, options: Vec<Option<FlavorOption>>) -> Option<u32> {
        let cat = CatalogBuilder::new()
            .cluster_queue("cq", None)
            .fungibility(f)
            .build();
        let req = Request {
            workload: workload(1, 0, 0, 0),
            pod_set: 0,
            requests: Vec::new(),
            options,
            now: 0,
        };
        KueueFlavors.choose_flavor(&cat, &req)
    }

    fn f(
        borrow: FungibilityPolicy,
        preempt: FungibilityPolicy,
        preference: FungibilityPreference,
    ) -> Fungibility {
        Fungibility {
            when_can_borrow: borrow,
            when_can_preempt: preempt,
            preference,
        }
    }

    use FungibilityPolicy::{MayStopSearch as Stop, TryNextFlavor as Next};
    use FungibilityPreference::{BorrowingOverPreemption as B, PreemptionOverBorrowing as P};

    #[test]
    fn default_fungibility_stops_at_first_fit_even_when_borrowing() {
        let opts = vec![
            None,
            option(1, FitMode::Preempt, 0),
            option(2, FitMode::Fit, 1),
            option(3, FitMode::Fit, 0),
        ];
        assert_eq!(choose(f(Stop, Next, B), opts), Some(2));
    }

    #[test]
    fn try_next_on_borrow_takes_the_best_seen() {
        let opts = vec![option(0, FitMode::Fit, 2), option(1, FitMode::Fit, 1)];
        assert_eq!(choose(f(Next, Next, B), opts), Some(1));
        let opts = vec![option(0, FitMode::Preempt, 0), option(1, FitMode::Fit, 1)];
        assert_eq!(choose(f(Next, Next, B), opts.clone()), Some(1));
        assert_eq!(choose(f(Next, Next, P), opts), Some(0));
    }

    #[test]
    fn nothing_fits() {
        let opts = vec![None, option(1, FitMode::NoFit, 0)];
        assert_eq!(choose(f(Stop, Next, B), opts), None);
        let opts = vec![option(0, FitMode::NoPreemptionCandidates, 0)];
        assert_eq!(choose(f(Stop, Next, B), opts), Some(0));
    }
}
