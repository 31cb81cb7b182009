//! Checks on every policy answer before the scheduler acts on it. A policy can only be more
//! conservative than the ClusterQueue's settings, never more aggressive, and can never make the
//! scheduler over-commit quota.

use std::collections::HashSet;

use super::builtin::fits_after;
use super::{CandidateKind, FitMode, FlavorChoiceRequest, PreemptionRequest, VictimSet};

/// Why an answer was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidAnswer {
    #[error("index {index} out of range (0..{len})")]
    OutOfRange { index: usize, len: usize },
    #[error("index {0} appears twice")]
    Duplicate(usize),
    #[error("order has {got} entries, expected {expected}")]
    WrongLength { got: usize, expected: usize },
    #[error("the victims do not make the preemptor fit")]
    VictimsInsufficient,
    #[error("victim {0} may only be reclaimed if the preemptor does not borrow")]
    BorrowingNotAllowed(usize),
    #[error("flavor option {0} does not fit")]
    FlavorDoesNotFit(usize),
}

fn check_indices(indices: &[usize], len: usize) -> Result<(), InvalidAnswer> {
    let mut seen = HashSet::with_capacity(indices.len());
    for &index in indices {
        if index >= len {
            return Err(InvalidAnswer::OutOfRange { index, len });
        }
        if !seen.insert(index) {
            return Err(InvalidAnswer::Duplicate(index));
        }
    }
    Ok(())
}

/// One sort key per queued workload.
pub fn sort_keys<K>(keys: &[K], len: usize) -> Result<(), InvalidAnswer> {
    if keys.len() == len {
        Ok(())
    } else {
        Err(InvalidAnswer::WrongLength {
            got: keys.len(),
            expected: len,
        })
    }
}

/// An order over the cycle's heads must be a permutation.
pub fn head_order(order: &[usize], len: usize) -> Result<(), InvalidAnswer> {
    if order.len() != len {
        return Err(InvalidAnswer::WrongLength {
            got: order.len(),
            expected: len,
        });
    }
    check_indices(order, len)
}

/// Victims must be distinct eligible candidates that really make the preemptor fit, without
/// borrowing whenever a victim may only be reclaimed that way.
pub fn victims(req: &PreemptionRequest<'_>, answer: &VictimSet) -> Result<(), InvalidAnswer> {
    check_indices(&answer.victims, req.candidates.len())?;
    let mut allow_borrowing = answer.allow_borrowing;
    if let Some(&i) = answer
        .victims
        .iter()
        .find(|&&i| req.candidates[i].kind == CandidateKind::ReclaimWithoutBorrowing)
    {
        if answer.allow_borrowing && req.candidates[i].cluster_queue != req.cluster_queue {
            return Err(InvalidAnswer::BorrowingNotAllowed(i));
        }
        allow_borrowing = false;
    }
    let mut usage = req.usage.clone();
    for &i in &answer.victims {
        let c = &req.candidates[i];
        for &(fr, v) in &c.usage {
            req.tree.add_usage(&mut usage, c.node, fr, -v);
        }
    }
    if !fits_after(req, &usage, allow_borrowing) {
        return Err(InvalidAnswer::VictimsInsufficient);
    }
    Ok(())
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
