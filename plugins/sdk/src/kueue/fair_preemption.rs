//! Kueue's fair-sharing victim selection (`fairPreemptions`).
//!
//! PLACEHOLDER — to be ported from the host's `src/policy/builtin/fair_preemption.rs` by the
//! engineer writing it natively. Everything it needs is in the SDK: the strategies
//! (`catalog.fair-sharing`), `fair-sharing` candidates, the request's `tree_usage`
//! ([`QuotaView::from_usage_table`](crate::QuotaView::from_usage_table), which tracks every
//! flavor-resource), dominant resource shares ([`QuotaView::drs`](crate::QuotaView::drs),
//! [`fair::compare`](crate::fair::compare)), and the classical pieces of [`super`]
//! ([`candidates_ordering`](super::candidates_ordering), [`candidate_is_valid`](super::candidate_is_valid),
//! [`preemptor_fits`](super::preemptor_fits)). `kueue-default-preemption` already asks for
//! `tree-usage` under fair sharing and calls this function then.

use crate::catalog::Catalog;
use crate::preemption::{Request, Victims};
use crate::types::FairSharingStrategy;

/// Kueue's `fairPreemptions`: the victims for `req` under fair sharing with `strategies` (the
/// catalog's `fair-sharing.strategies`), or `None` when preemption cannot make the preemptor
/// fit.
///
/// Not ported yet: always `None`, as the host's built-in is today.
pub fn fair_select_victims(
    catalog: &Catalog,
    req: &Request,
    strategies: &[FairSharingStrategy],
) -> Option<Victims> {
    let _ = (catalog, req, strategies);
    None
}
