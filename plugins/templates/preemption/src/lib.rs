//! {{name}}: a preemption plugin for wasq.
//!
//! Describe here what the policy does and how it differs from Kueue's default. As generated, it
//! chooses Kueue's victims, but never preempts a workload annotated `wasq.dev/protected: "true"`.

use wasq_policy_sdk::preemption::Request;
use wasq_policy_sdk::prelude::*;

/// The annotation that protects a workload from this policy.
const PROTECTED: &str = "wasq.dev/protected";

/// The policy. The SDK builds it with `Default` on the first call; keep state in its fields.
#[derive(Debug, Default)]
pub struct Policy;

impl PreemptionPolicy for Policy {
    fn select_victims(&mut self, catalog: &Catalog, req: &Request) -> Option<Victims> {
        let eligible: Vec<u32> = (0..req.candidates.len() as u32)
            .filter(|&i| {
                let c = &req.candidates[i as usize];
                catalog.annotation(&c.annotations, PROTECTED) != Some("true")
            })
            .collect();
        // Kueue's search over the remaining candidates; `QuotaView` lets you write your own.
        kueue::select_victims_among(catalog, req, &eligible)
    }
}

wasq_policy_sdk::export_preemption!(Policy);

#[cfg(test)]
mod tests {
    use super::*;
    use wasq_policy_sdk::testing::{CatalogBuilder, no_usage_table, workload};
    use wasq_policy_sdk::types::Annotation;

    fn candidate(workload: u32, priority: i64) -> Candidate {
        Candidate {
            workload,
            cluster_queue: 0,
            kind: CandidateKind::SameQueue,
            lca: None,
            priority,
            created: 0,
            admitted: 0,
            requeue_count: 0,
            requeue_reason: None,
            evicting: false,
            usage: vec![FrAmount { fr: 0, amount: 5 }],
            annotations: Vec::new(),
            local_queue_usage: None,
        }
    }

    #[test]
    fn protected_workloads_are_spared() {
        // One ClusterQueue with 10 units, full with two workloads of 5; the preemptor needs 5.
        let catalog = CatalogBuilder::new()
            .flavor_resources(1)
            .annotation_key(PROTECTED)
            .cluster_queue("cq", None)
            .quota(0, 0, 10, None, None)
            .build();
        let mut low = candidate(1, 0);
        low.annotations.push(Annotation {
            key: 0,
            value: "true".into(),
        });
        let req = Request {
            preemptor: workload(9, 0, 100, 0),
            requests: vec![FrAmount { fr: 0, amount: 5 }],
            needs_preemption: vec![0],
            candidates: vec![low, candidate(2, 1)],
            usage_nodes: vec![0],
            usage: vec![10],
            tree_usage: no_usage_table(),
            now: 0,
        };
        // Kueue would take the lower-priority candidate 0; it is protected.
        let victims = Policy.select_victims(&catalog, &req).unwrap();
        assert_eq!(victims.victims, vec![1]);
    }
}
