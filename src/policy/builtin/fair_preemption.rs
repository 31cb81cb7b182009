//! Kueue's fair-sharing victim selection (`fairPreemptions`). Being written: see issue 7.

use crate::api::config::PreemptionStrategy;
use crate::policy::{PreemptionRequest, VictimSet};

/// Kueue's `fairPreemptions`.
pub fn select_victims(
    _req: &PreemptionRequest<'_>,
    _strategies: &[PreemptionStrategy],
) -> Option<VictimSet> {
    None
}
