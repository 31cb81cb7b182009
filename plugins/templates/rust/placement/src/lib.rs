//! {{name}}: a placement plugin for wasq (topology-aware scheduling).
//!
//! Describe here what the policy does and how it differs from Kueue's default. As generated,
//! it places a podSet that asks for no particular topology on the emptiest rack that holds all
//! of it (the most free pods first, rather than Kueue's least free first), and everything
//! else as Kueue does.

use wasq_policy_sdk::placement::{ConstraintMode, Request};
use wasq_policy_sdk::prelude::*;

/// The policy. The SDK builds it with `Default` on the first call; keep state in its fields.
#[derive(Debug, Default)]
pub struct Policy;

impl PlacementPolicy for Policy {
    fn place(&mut self, catalog: &Catalog, req: &Request) -> Answer {
        // A podSet group's leader or further slice layers: as Kueue places them.
        if req.constraint.mode != ConstraintMode::Unconstrained
            || req.level_names.len() < 2
            || req.leader.is_some()
            || !req.constraint.layers.is_empty()
        {
            return kueue::place(catalog, req);
        }
        let tree = Tree::new(req);
        // The level above the leaves (racks, say), and its emptiest domain holding every pod.
        let level = tree.lowest() - 1;
        let emptiest = tree
            .at_level(level)
            .iter()
            .copied()
            .filter(|&d| tree.pods_fitting(d) >= i64::from(req.count))
            .max_by_key(|&d| (tree.pods_fitting(d), std::cmp::Reverse(d)));
        let Some(domain) = emptiest else {
            return kueue::place(catalog, req);
        };
        // Fill its leaves in order: the host checks capacity and eligibility again.
        let mut left = req.count;
        let mut leaves = Vec::new();
        for &d in tree.children(domain) {
            let Some(leaf) = tree.leaf_of(d).filter(|&l| tree.eligible(l)) else {
                continue;
            };
            let n = (tree.fits_on(leaf).0.max(0) as u32).min(left);
            if n > 0 {
                leaves.push(LeafPods { leaf, count: n });
                left -= n;
            }
        }
        if left > 0 {
            return kueue::place(catalog, req);
        }
        Answer::Placed(Placement {
            pods: leaves,
            leader: None,
        })
    }
}

wasq_policy_sdk::export_placement!(Policy);

#[cfg(test)]
mod tests {
    use super::*;
    use wasq_policy_sdk::placement::{Constraint, Domain, Leaf};
    use wasq_policy_sdk::testing::{CatalogBuilder, workload};

    #[test]
    fn an_unconstrained_gang_goes_to_the_emptiest_rack() {
        let mut catalog = CatalogBuilder::new().cluster_queue("cq", None).build();
        let names = [
            "racks",
            "rack",
            "kubernetes.io/hostname",
            "pods",
            "nvidia.com/gpu",
        ]
        .map(|s| catalog.intern(s));
        // Racks r1 (nodes with 8 and 2 free GPUs) and r2 (one node with 8).
        let domain = |level, parent, free: [i64; 2]| Domain {
            level,
            parent,
            free: free.to_vec(),
        };
        let req = Request {
            workload: workload(1, 0, 0, 0),
            pod_set: 0,
            flavor: 0,
            topology: names[0],
            level_names: vec![names[1], names[2]],
            resource_names: vec![names[3], names[4]],
            count: 8,
            per_pod: vec![1000, 1000],
            leader: None,
            constraint: Constraint {
                level: 1,
                mode: ConstraintMode::Unconstrained,
                slice_level: 1,
                slice_size: 1,
                layers: Vec::new(),
            },
            // Per domain: level, parent, free pods and GPUs (milli-units).
            domains: vec![
                domain(0, None, [220_000, 10_000]),
                domain(1, Some(0), [110_000, 8_000]),
                domain(1, Some(0), [110_000, 2_000]),
                domain(0, None, [110_000, 8_000]),
                domain(1, Some(3), [110_000, 8_000]),
            ],
            leaves: [1, 2, 4]
                .map(|domain| Leaf {
                    domain,
                    eligible: true,
                })
                .to_vec(),
            now: 0,
        };
        assert_eq!(
            Policy.place(&catalog, &req),
            Answer::Placed(Placement {
                pods: vec![LeafPods { leaf: 0, count: 8 }],
                leader: None,
            })
        );
    }
}
