//! Topology placement that keeps a gang on the fewest racks, even when it asks for no topology.
//!
//! Kueue places a podSet without a topology request (or with `podset-unconstrained-topology`)
//! on the least free leaves first, anywhere in the datacenter: good for filling gaps, bad for
//! a distributed training job whose pods talk to each other all the time, which then spans
//! many racks and crosses the spine on every all-reduce. A platform team that knows its
//! multi-pod workloads are tightly coupled packs them instead: this plugin treats an
//! unconstrained request as *preferring* one domain of the pack level (a rack by default), so
//! Kueue's BestFit keeps the gang in the tightest rack that holds it, falls back to the fewest
//! racks of one block, then to the fewest racks overall. Required and preferred requests are
//! placed as Kueue places them, and so are single pods (packing one pod changes nothing).
//!
//! Setting (`pluginSettings.pack-by-rack` in `--config`): `packLevel`, the level label to pack
//! by (default: the level just above the leaves, or the leaves' own when the topology has one
//! level). A level the topology lacks leaves requests as Kueue would place them.

use wasq_policy_sdk::placement::{ConstraintMode, Request};
use wasq_policy_sdk::prelude::*;

/// The setting naming the level to pack by.
pub const PACK_LEVEL: &str = "packLevel";

/// Packs unconstrained gangs by rack.
#[derive(Debug, Default)]
pub struct PackByRack;

/// The level index to pack `req` by, if it is to be packed.
fn pack_level(catalog: &Catalog, req: &Request) -> Option<u32> {
    let c = &req.constraint;
    if c.mode != ConstraintMode::Unconstrained || req.count <= c.slice_size {
        return None;
    }
    let levels = req.level_names.len() as u32;
    let level = match catalog.setting(PACK_LEVEL) {
        Some(name) => req
            .level_names
            .iter()
            .position(|&s| catalog.string(s) == name)? as u32,
        None => levels.saturating_sub(2),
    };
    // Kueue's rule: slices never span more than one domain of a level above the podSet's.
    Some(level.min(c.slice_level))
}

impl PlacementPolicy for PackByRack {
    fn place(&mut self, catalog: &Catalog, req: &Request) -> Answer {
        let Some(level) = pack_level(catalog, req) else {
            return kueue::place(catalog, req);
        };
        let mut packed = req.clone();
        packed.constraint.level = level;
        packed.constraint.mode = ConstraintMode::Preferred;
        kueue::place(catalog, &packed)
    }
}

wasq_policy_sdk::export_placement!(PackByRack);
