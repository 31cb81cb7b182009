//! Checks on every policy answer before the scheduler acts on it. A policy can only be more
//! conservative than the ClusterQueue's settings, never more aggressive, and can never make the
//! scheduler over-commit quota.

use super::builtin::fits_after;
use super::builtin::remove_candidate;
use super::{CandidateKind, FitMode, FlavorChoiceRequest, PreemptionRequest, VictimSet};
use crate::quota::UsageOverlay;

/// Why an answer was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidAnswer {
    #[error("index {index} out of range (0..{len})")]
    OutOfRange { index: usize, len: usize },
    #[error("index {0} appears twice")]
    Duplicate(usize),
    /// An answer with the wrong number of entries: `what` names the list (`the head order`,
    /// `the sort keys`, `the answers to select-victims`, ...).
    #[error("{what} has {got} entries, expected {expected}")]
    WrongLength {
        what: &'static str,
        got: usize,
        expected: usize,
    },
    /// A head order naming a workload that is none of the heads' (a plugin answers workloads).
    #[error("workload {0} is not one of the heads")]
    NotAHead(u32),
    /// A head order naming a head's workload twice.
    #[error("workload {0} appears twice")]
    DuplicateHead(u32),
    #[error("the victims do not make the preemptor fit")]
    VictimsInsufficient,
    #[error(
        "victim {0} is not needed: the preemptor fits without it (answers must be minimal \
         unless the plugin's settings say allowExtraVictims: \"true\")"
    )]
    UnneededVictim(usize),
    #[error("victim {0} may only be reclaimed if the preemptor does not borrow")]
    BorrowingNotAllowed(usize),
    #[error("flavor option {0} does not fit")]
    FlavorDoesNotFit(usize),
    /// A placement the host's checks refuse (`crate::topology::verify`'s reason).
    #[error("placement refused: {0}")]
    Placement(String),
    /// A MultiKueue dispatch answer naming a cluster it may not ([`super::dispatch::verify`]).
    #[error("dispatch refused: {0}")]
    Dispatch(String),
}

fn check_indices(indices: &[usize], len: usize) -> Result<(), InvalidAnswer> {
    // One bit per index in range: an order over thousands of heads is checked every cycle.
    let mut seen = vec![0u64; len.div_ceil(64)];
    for &index in indices {
        if index >= len {
            return Err(InvalidAnswer::OutOfRange { index, len });
        }
        let (word, bit) = (index / 64, 1u64 << (index % 64));
        if seen[word] & bit != 0 {
            return Err(InvalidAnswer::Duplicate(index));
        }
        seen[word] |= bit;
    }
    Ok(())
}

/// Candidates a plugin narrows Kueue's choice to (`kueue-among`): distinct, in range.
pub fn candidate_subset(indices: &[usize], len: usize) -> Result<(), InvalidAnswer> {
    check_indices(indices, len)
}

/// One sort key per queued workload.
pub fn sort_keys<K>(keys: &[K], len: usize) -> Result<(), InvalidAnswer> {
    if keys.len() == len {
        Ok(())
    } else {
        Err(InvalidAnswer::WrongLength {
            what: "the sort keys",
            got: keys.len(),
            expected: len,
        })
    }
}

/// An order over the cycle's heads must be a permutation.
pub fn head_order(order: &[usize], len: usize) -> Result<(), InvalidAnswer> {
    if order.len() != len {
        return Err(InvalidAnswer::WrongLength {
            what: "the head order",
            got: order.len(),
            expected: len,
        });
    }
    check_indices(order, len)
}

/// Victims must be distinct eligible candidates that really make the preemptor fit, without
/// borrowing whenever a victim may only be reclaimed that way; and, unless `allow_extra`, each
/// of them must be needed: with any one of them left running the preemptor must not fit (the
/// minimal set Kueue's fill-back gives).
pub fn victims(
    req: &PreemptionRequest<'_>,
    answer: &VictimSet,
    allow_extra: bool,
) -> Result<(), InvalidAnswer> {
    check_indices(&answer.victims, req.candidates.len())?;
    let allow_borrowing = borrowing_allowed(req, answer, &answer.victims)?;
    let mut usage = UsageOverlay::new(req.usage);
    for &i in &answer.victims {
        remove_candidate(req, &mut usage, &req.candidates[i], 1);
    }
    if !fits_after(req, &usage, allow_borrowing, &answer.victims) {
        return Err(InvalidAnswer::VictimsInsufficient);
    }
    if !allow_extra {
        // Each victim left running in turn, the others gone: put back, asked, taken again.
        // The usage arithmetic is exact and order-independent, so this is the state of
        // removing the others alone (one pass, not one overlay per victim).
        let victims = &answer.victims;
        // The victims but the `k`th, in order: from one `k` to the next only position `k - 1`
        // changes (it held victim `k` and gets victim `k - 1`), so the list is not rebuilt
        // per victim (that made the check quadratic in the victims).
        let mut others: Vec<usize> = victims.iter().skip(1).copied().collect();
        // The first two victims that may only be reclaimed without borrowing: the first
        // among the others is one of them (victims are distinct, `check_indices`).
        let mut found = victims.iter().filter(|&&i| reclaim_only(req, i));
        let (first, second) = (found.next(), found.next());
        for (k, &j) in victims.iter().enumerate() {
            if k > 0 {
                others[k - 1] = victims[k - 1];
            }
            let first_of_others = if first == Some(&j) { second } else { first };
            let allow = borrowing_allowed_with(req, answer, first_of_others.copied())?;
            remove_candidate(req, &mut usage, &req.candidates[j], -1);
            let fits = fits_after(req, &usage, allow, &others);
            remove_candidate(req, &mut usage, &req.candidates[j], 1);
            if fits {
                return Err(InvalidAnswer::UnneededVictim(j));
            }
        }
    }
    Ok(())
}

/// How many of an accepted answer's victims the preemptor does not need: those Kueue's
/// fill-back would leave running (tried in reverse order, each left running if the preemptor
/// still fits without it).
pub fn extra_victims(req: &PreemptionRequest<'_>, answer: &VictimSet) -> usize {
    let mut kept: Vec<usize> = answer.victims.clone();
    let mut extra = 0;
    for k in (0..kept.len()).rev() {
        let mut others = kept.clone();
        others.remove(k);
        let Ok(allow) = borrowing_allowed(req, answer, &others) else {
            continue;
        };
        let mut usage = UsageOverlay::new(req.usage);
        for &i in &others {
            remove_candidate(req, &mut usage, &req.candidates[i], 1);
        }
        if fits_after(req, &usage, allow, &others) {
            kept = others;
            extra += 1;
        }
    }
    extra
}

/// Whether the preemptor may borrow once `victims` are gone: not when one of them may only be
/// reclaimed without borrowing (and an answer claiming borrowing then is refused).
fn borrowing_allowed(
    req: &PreemptionRequest<'_>,
    answer: &VictimSet,
    victims: &[usize],
) -> Result<bool, InvalidAnswer> {
    let first = victims.iter().find(|&&i| reclaim_only(req, i));
    borrowing_allowed_with(req, answer, first.copied())
}

/// Whether candidate `i` may only be reclaimed without borrowing.
fn reclaim_only(req: &PreemptionRequest<'_>, i: usize) -> bool {
    req.candidates[i].kind == CandidateKind::ReclaimWithoutBorrowing
}

/// [`borrowing_allowed`] given the first of the victims that may only be reclaimed without
/// borrowing, if any.
fn borrowing_allowed_with(
    req: &PreemptionRequest<'_>,
    answer: &VictimSet,
    reclaim_only: Option<usize>,
) -> Result<bool, InvalidAnswer> {
    match reclaim_only {
        Some(i)
            if answer.allow_borrowing && req.candidates[i].cluster_queue != req.cluster_queue =>
        {
            Err(InvalidAnswer::BorrowingNotAllowed(i))
        }
        Some(_) => Ok(false),
        None => Ok(answer.allow_borrowing),
    }
}

/// A chosen flavor must be one offered and not `NoFit`.
pub fn flavor_choice(req: &FlavorChoiceRequest, choice: usize) -> Result<(), InvalidAnswer> {
    match req.options.get(choice) {
        None => Err(InvalidAnswer::OutOfRange {
            index: choice,
            len: req.options.len(),
        }),
        Some(None) => Err(InvalidAnswer::FlavorDoesNotFit(choice)),
        Some(Some(o)) if o.mode == FitMode::NoFit => Err(InvalidAnswer::FlavorDoesNotFit(choice)),
        Some(Some(_)) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::{InvalidAnswer, head_order};

    #[test]
    fn an_order_is_a_permutation() {
        let order: Vec<usize> = (0..130).rev().collect();
        assert!(head_order(&order, 130).is_ok());
        // A repeat in a later word of the bitset, and one in the first.
        let mut twice = order.clone();
        twice[1] = 100;
        assert!(matches!(
            head_order(&twice, 130),
            Err(InvalidAnswer::Duplicate(100))
        ));
        let mut low = order.clone();
        low[129] = 3;
        assert!(matches!(
            head_order(&low, 130),
            Err(InvalidAnswer::Duplicate(3))
        ));
        let mut out = order;
        out[5] = 130;
        assert!(matches!(
            head_order(&out, 130),
            Err(InvalidAnswer::OutOfRange {
                index: 130,
                len: 130
            })
        ));
        assert!(head_order(&[], 0).is_ok());
    }
}
