//! {{name}}: a flavor-assignment plugin for wasq.
//!
//! Describe here what the policy does and how it differs from Kueue's default. As generated, it
//! takes the last flavor (in the ClusterQueue's order) that fits without preemption, and
//! Kueue's choice when none does.

use wasq_policy_sdk::flavor_assignment::Request;
use wasq_policy_sdk::prelude::*;

/// The policy. The SDK builds it with `Default` on the first call; keep state in its fields.
#[derive(Debug, Default)]
pub struct Policy;

impl FlavorAssignmentPolicy for Policy {
    fn choose_flavor(&mut self, catalog: &Catalog, req: &Request) -> Option<u32> {
        let fitting = req
            .options
            .iter()
            .rposition(|o| o.as_ref().is_some_and(|o| o.mode == FitMode::Fit));
        match fitting {
            Some(i) => Some(i as u32),
            None => {
                let fungibility = kueue::fungibility_of(catalog, req.workload.cluster_queue);
                kueue::choose_flavor(&req.options, &fungibility)
            }
        }
    }
}

wasq_policy_sdk::export_flavor_assignment!(Policy);

#[cfg(test)]
mod tests {
    use super::*;
    use wasq_policy_sdk::testing::{CatalogBuilder, workload};

    fn option(flavor: u32, mode: FitMode) -> Option<FlavorOption> {
        Some(FlavorOption {
            flavor,
            mode,
            borrow_level: 0,
        })
    }

    fn request(options: Vec<Option<FlavorOption>>) -> Request {
        Request {
            workload: workload(1, 0, 0, 0),
            pod_set: 0,
            requests: Vec::new(),
            options,
            now: 0,
        }
    }

    #[test]
    fn last_fitting_flavor_else_kueue() {
        let catalog = CatalogBuilder::new()
            .flavor_resources(3)
            .cluster_queue("cq", None)
            .build();
        let mut policy = Policy;
        let all_fit = request(vec![option(0, FitMode::Fit), None, option(2, FitMode::Fit)]);
        assert_eq!(policy.choose_flavor(&catalog, &all_fit), Some(2));
        let none_fit = request(vec![option(0, FitMode::NoFit), option(1, FitMode::Preempt)]);
        assert_eq!(policy.choose_flavor(&catalog, &none_fit), Some(1));
    }
}
