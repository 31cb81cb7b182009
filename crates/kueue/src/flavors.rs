//! Kueue's flavor fungibility (`findFlavorForPodSets` with `flavorFungibility`): scan a
//! resource group's flavors in the ClusterQueue's order, stop at the first one the
//! fungibility rules accept, otherwise take the most preferred one seen.

/// How a flavor fits a podSet, best last (Kueue's granular preemption modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FitMode {
    NoFit,
    NoPreemptionCandidates,
    Preempt,
    Reclaim,
    Fit,
}

/// `flavorFungibility.whenCanBorrow` / `whenCanPreempt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Policy {
    MayStopSearch,
    TryNextFlavor,
}

/// `flavorFungibility.preference`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Preference {
    BorrowingOverPreemption,
    PreemptionOverBorrowing,
}

/// A ClusterQueue's `spec.flavorFungibility`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fungibility {
    pub when_can_borrow: Policy,
    pub when_can_preempt: Policy,
    pub preference: Preference,
}

impl Default for Fungibility {
    /// Kueue's defaults.
    fn default() -> Self {
        Fungibility {
            when_can_borrow: Policy::MayStopSearch,
            when_can_preempt: Policy::TryNextFlavor,
            preference: Preference::BorrowingOverPreemption,
        }
    }
}

/// A flavor's fit: its mode and how far up the cohort tree it borrows (0 = not at all).
pub type Fit = (FitMode, u32);

/// Kueue's `isPreferred(a, b)`: whether fit `a` is better than fit `b`.
pub fn is_preferred(a: Fit, b: Fit, f: &Fungibility) -> bool {
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
        Preference::BorrowingOverPreemption => {
            if a.0 != b.0 {
                a.0 > b.0
            } else {
                a.1 < b.1
            }
        }
        Preference::PreemptionOverBorrowing => {
            if a.1 != b.1 {
                a.1 < b.1
            } else {
                a.0 > b.0
            }
        }
    }
}

/// Kueue's `shouldTryNextFlavor` for a flavor's fit.
pub fn should_try_next_flavor(fit: Fit, f: &Fungibility) -> bool {
    match fit.0 {
        FitMode::NoFit | FitMode::NoPreemptionCandidates => true,
        FitMode::Preempt | FitMode::Reclaim if f.when_can_preempt == Policy::TryNextFlavor => true,
        _ => fit.1 > 0 && f.when_can_borrow == Policy::TryNextFlavor,
    }
}

/// Kueue's flavor choice among `options` (each flavor's fit in the ClusterQueue's order;
/// `None` where the flavor cannot host the podSet at all): the first one the fungibility rules
/// stop at, otherwise the most preferred one seen. The index of the choice, or `None`.
pub fn choose_flavor(
    options: impl IntoIterator<Item = Option<Fit>>,
    f: &Fungibility,
) -> Option<usize> {
    let mut best: Option<usize> = None;
    let mut best_fit = (FitMode::NoFit, u32::MAX);
    for (i, fit) in options.into_iter().enumerate() {
        let Some(fit) = fit else { continue };
        if !should_try_next_flavor(fit, f) {
            return Some(i);
        }
        if is_preferred(fit, best_fit, f) {
            best = Some(i);
            best_fit = fit;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use FitMode::*;

    #[test]
    fn the_first_flavor_that_fits_stops_the_search_by_default() {
        let f = Fungibility::default();
        assert_eq!(
            choose_flavor([Some((Preempt, 0)), Some((Fit, 0)), Some((Fit, 0))], &f),
            Some(1)
        );
        // Borrowing may stop the search by default.
        assert_eq!(choose_flavor([Some((Fit, 1)), Some((Fit, 0))], &f), Some(0));
        // Nothing stops it: the most preferred seen (preempting rather than not fitting).
        assert_eq!(
            choose_flavor([None, Some((NoFit, 0)), Some((Preempt, 0))], &f),
            Some(2)
        );
        assert_eq!(choose_flavor([None, Some((NoFit, 0))], &f), None);
    }

    #[test]
    fn preference_decides_between_borrowing_and_preempting() {
        let borrow = Fungibility {
            when_can_borrow: Policy::TryNextFlavor,
            ..Fungibility::default()
        };
        let options = [Some((Fit, 1)), Some((Preempt, 0))];
        assert_eq!(choose_flavor(options, &borrow), Some(0));
        let preempt = Fungibility {
            preference: Preference::PreemptionOverBorrowing,
            ..borrow
        };
        assert_eq!(choose_flavor(options, &preempt), Some(1));
        // A flavor without preemption candidates is never preferred to one with them.
        assert!(!is_preferred(
            (NoPreemptionCandidates, 0),
            (Preempt, 3),
            &preempt
        ));
    }
}
