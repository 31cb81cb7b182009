//! Kueue's placement (`findTopologyAssignment`: BestFit by domain, then the lowest level's
//! tightest fit), behind the placement policy trait. The algorithm itself lives with the
//! domain tree in [`crate::topology::placement`].

use crate::policy::{
    PlacementAnswer, PlacementChoiceRequest, PlacementPolicy, PolicyError, PolicyRef,
};
use crate::topology::{KueueBestFit, PlacementPolicy as _, PlacementRequest};

#[derive(Debug, Clone, Copy, Default)]
pub struct KueuePlacement;

/// Kueue's answer to one placement question.
pub fn best_fit(request: &PlacementRequest<'_>) -> PlacementAnswer {
    match KueueBestFit.place(request) {
        Ok(p) => PlacementAnswer::Placed(p),
        Err(message) => PlacementAnswer::NoFit(message),
    }
}

impl PlacementPolicy for KueuePlacement {
    fn id(&self) -> PolicyRef {
        PolicyRef::builtin()
    }

    fn place(&self, req: &PlacementChoiceRequest<'_>) -> Result<PlacementAnswer, PolicyError> {
        Ok(best_fit(req.placement))
    }
}
