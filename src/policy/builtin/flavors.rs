//! Kueue's flavor choice (`findFlavorForPodSets` with flavorFungibility) on the host's
//! records: `wasq-kueue`'s `flavors` (the same code the plugin SDK runs).

use wasq_kueue::flavors::{self, Policy, Preference};

use crate::api::{FungibilityPolicy, FungibilityPreference};
use crate::cluster::Fungibility;
use crate::policy::{FitMode, FlavorAssignmentPolicy, FlavorChoiceRequest, PolicyError, PolicyRef};

#[derive(Debug, Clone, Copy, Default)]
pub struct KueueFlavors;

/// A ClusterQueue's `spec.flavorFungibility` as `wasq-kueue` reads it.
fn fungibility(f: &Fungibility) -> flavors::Fungibility {
    let policy = |p: FungibilityPolicy| match p {
        FungibilityPolicy::MayStopSearch => Policy::MayStopSearch,
        FungibilityPolicy::TryNextFlavor => Policy::TryNextFlavor,
    };
    flavors::Fungibility {
        when_can_borrow: policy(f.when_can_borrow),
        when_can_preempt: policy(f.when_can_preempt),
        preference: match f.preference {
            FungibilityPreference::BorrowingOverPreemption => Preference::BorrowingOverPreemption,
            FungibilityPreference::PreemptionOverBorrowing => Preference::PreemptionOverBorrowing,
        },
    }
}

/// Kueue's `isPreferred(a, b)`: whether (mode, borrowing level) `a` is better than `b`.
pub fn is_preferred(a: (FitMode, u32), b: (FitMode, u32), f: &Fungibility) -> bool {
    flavors::is_preferred(a, b, &fungibility(f))
}

/// Kueue's `shouldTryNextFlavor`.
pub fn should_try_next_flavor(mode: (FitMode, u32), f: &Fungibility) -> bool {
    flavors::should_try_next_flavor(mode, &fungibility(f))
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
    let options = req
        .options
        .iter()
        .map(|o| o.as_ref().map(|o| (o.mode, o.borrow_level)));
    flavors::choose_flavor(options, &fungibility(&req.fungibility))
}
