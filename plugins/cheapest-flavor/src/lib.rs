//! Flavor assignment that picks the cheapest flavor that fits now.
//!
//! Among the options whose mode is `fit` (no preemption needed; borrowing allowed), the flavor
//! with the lowest `wasq.dev/cost` annotation on its ResourceFlavor wins (a decimal number, for
//! example a price per hour; missing or unparsable = +infinity); ties keep the ClusterQueue's
//! order. When no option fits, Kueue's choice is made instead (which may mean preempting).
//!
//! Differences from Kueue's default: Kueue takes the first flavor in the ClusterQueue's order
//! that its fungibility rules accept; this plugin compares every fitting flavor by cost and
//! ignores `flavorFungibility` while some flavor fits.

use wasq_policy_sdk::flavor_assignment::Request;
use wasq_policy_sdk::prelude::*;

/// The ResourceFlavor annotation holding the cost.
pub const ANNOTATION: &str = "wasq.dev/cost";

/// Picks the cheapest fitting flavor.
#[derive(Debug, Default)]
pub struct CheapestFlavor;

/// A flavor's cost: its annotation as a number, +infinity when missing or not a finite number.
pub fn cost(catalog: &Catalog, flavor: u32) -> f64 {
    catalog
        .flavors
        .get(flavor as usize)
        .and_then(|f| catalog.annotation(&f.annotations, ANNOTATION))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|c| c.is_finite())
        .unwrap_or(f64::INFINITY)
}

impl FlavorAssignmentPolicy for CheapestFlavor {
    fn choose_flavor(&mut self, catalog: &Catalog, req: &Request) -> Option<u32> {
        let mut best: Option<(u32, f64)> = None;
        for (i, option) in req.options.iter().enumerate() {
            let Some(option) = option else { continue };
            if option.mode != FitMode::Fit {
                continue;
            }
            let c = cost(catalog, option.flavor);
            if best.is_none_or(|(_, b)| c < b) {
                best = Some((i as u32, c));
            }
        }
        match best {
            Some((i, _)) => Some(i),
            None => {
                let fungibility = kueue::fungibility_of(catalog, req.workload.cluster_queue);
                kueue::choose_flavor(&req.options, &fungibility)
            }
        }
    }
}

wasq_policy_sdk::export_flavor_assignment!(CheapestFlavor);

#[cfg(test)]
mod tests {
    use super::*;
    use wasq_policy_sdk::testing::{CatalogBuilder, workload};

    fn catalog() -> Catalog {
        CatalogBuilder::new()
            .flavor_resources(4)
            .flavor_annotation(0, ANNOTATION, "3.5")
            .flavor_annotation(1, ANNOTATION, "1")
            .flavor_annotation(2, ANNOTATION, "free")
            .cluster_queue("cq", None)
            .build()
    }

    fn option(flavor: u32, mode: FitMode) -> Option<FlavorOption> {
        Some(FlavorOption {
            flavor,
            mode,
            borrow_level: 0,
        })
    }

    fn choose(options: Vec<Option<FlavorOption>>) -> Option<u32> {
        let req = Request {
            workload: workload(1, 0, 0, 0),
            pod_set: 0,
            requests: Vec::new(),
            options,
            now: 0,
        };
        CheapestFlavor.choose_flavor(&catalog(), &req)
    }

    #[test]
    fn costs_are_parsed() {
        let cat = catalog();
        assert_eq!(cost(&cat, 0), 3.5);
        assert_eq!(cost(&cat, 2), f64::INFINITY);
        assert_eq!(cost(&cat, 3), f64::INFINITY);
        assert_eq!(cost(&cat, 99), f64::INFINITY);
    }

    #[test]
    fn cheapest_fitting_flavor_wins() {
        let opts = vec![
            option(0, FitMode::Fit),
            option(1, FitMode::Fit),
            option(2, FitMode::Fit),
        ];
        assert_eq!(choose(opts), Some(1));
    }

    #[test]
    fn cheaper_flavor_that_needs_preemption_is_skipped() {
        let opts = vec![None, option(1, FitMode::Preempt), option(0, FitMode::Fit)];
        assert_eq!(choose(opts), Some(2));
    }

    #[test]
    fn ties_keep_queue_order() {
        let opts = vec![option(2, FitMode::Fit), option(3, FitMode::Fit)];
        assert_eq!(choose(opts), Some(0));
    }

    #[test]
    fn falls_back_to_kueue_when_nothing_fits() {
        let opts = vec![option(0, FitMode::NoFit), option(1, FitMode::Preempt)];
        assert_eq!(choose(opts), Some(1));
        assert_eq!(choose(vec![None, option(0, FitMode::NoFit)]), None);
    }
}
