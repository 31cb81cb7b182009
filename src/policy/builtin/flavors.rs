//! Kueue's flavor choice (`findFlavorForPodSets` with flavorFungibility): scan flavors in the
//! ClusterQueue's order, stop at the first one the fungibility rules accept, otherwise take the
//! most preferred one seen.

use crate::api::{FungibilityPolicy, FungibilityPreference};
use crate::cluster::Fungibility;
use crate::policy::{FitMode, FlavorAssignmentPolicy, FlavorChoiceRequest, PolicyError, PolicyRef};

#[derive(Debug, Clone, Copy, Default)]
pub struct KueueFlavors;

/// Kueue's `isPreferred(a, b)`: whether mode `a` is better than mode `b`.
pub fn is_preferred(a: (FitMode, u32), b: (FitMode, u32), f: &Fungibility) -> bool {
    if a.0 == FitMode::NoFit {
        return false;
    }
    if b.0 == FitMode::NoFit {
        return true;
    }
    let a_none = a.0 == FitMode::NoPreemptionCandidates;
    let b_none = b.0 == FitMode::NoPreemptionCandidates;
    if a_none != b_none {
        return !a_none;
    }
    match f.preference {
        FungibilityPreference::BorrowingOverPreemption => {
            if a.0 != b.0 {
                a.0 > b.0
            } else {
                a.1 < b.1
            }
        }
        FungibilityPreference::PreemptionOverBorrowing => {
            if a.1 != b.1 {
                a.1 < b.1
            } else {
                a.0 > b.0
            }
        }
    }
}

/// Kueue's `shouldTryNextFlavor`.
pub fn should_try_next_flavor(mode: (FitMode, u32), f: &Fungibility) -> bool {
    match mode.0 {
        FitMode::NoFit | FitMode::NoPreemptionCandidates => true,
        FitMode::Preempt | FitMode::Reclaim
            if f.when_can_preempt == FungibilityPolicy::TryNextFlavor =>
        {
            true
        }
        _ => mode.1 > 0 && f.when_can_borrow == FungibilityPolicy::TryNextFlavor,
    }
}

impl FlavorAssignmentPolicy for KueueFlavors {
    fn id(&self) -> PolicyRef {
        PolicyRef::builtin()
    }

    fn choose_flavor(&self, req: &FlavorChoiceRequest<'_>) -> Result<Option<usize>, PolicyError> {
        Ok(choose_flavor(req))
    }
}

/// Kueue's flavor choice.
pub fn choose_flavor(req: &FlavorChoiceRequest<'_>) -> Option<usize> {
    let f = &req.fungibility;
    let mut best: Option<usize> = None;
    let mut best_mode = (FitMode::NoFit, u32::MAX);
    for (i, option) in req.options.iter().enumerate() {
        let Some(option) = option else { continue };
        let mode = (option.mode, option.borrow_level);
        if !should_try_next_flavor(mode, f) {
            return Some(i);
        }
        if is_preferred(mode, best_mode, f) {
            best = Some(i);
            best_mode = mode;
        }
    }
    best
}
