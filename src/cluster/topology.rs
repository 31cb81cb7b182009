//! TAS trees replaced while workloads hold placements on them: the controller rebuilds the
//! trees when nodes come, go or change (labels, taints, allocatable, readiness), and every
//! admission's placement moves to the new trees by domain — as Kueue keeps TAS usage per
//! domain, not per tree.

use super::{Cluster, Holding};
use crate::topology::Topologies;
use crate::topology::tree::PODS;

impl Cluster {
    /// Swaps in `new` trees. Each placement is carried over through its domains (the
    /// `topologyAssignment` it was written as); one whose domains are gone is dropped, its
    /// quota still held, as Kueue's usage of a domain no tree has counts nowhere. What pods
    /// outside TAS use is carried over per node.
    pub fn replace_topologies(&mut self, mut new: Topologies) {
        new.carry_node_usage_from(&self.tas);
        for holding in &mut self.holdings {
            let (Holding::Admitted(a) | Holding::Evicting(a)) = holding else {
                continue;
            };
            if a.pod_sets.iter().all(|ps| ps.topology.is_none()) {
                continue;
            }
            // Copied first if a decision still shares it.
            for ps in &mut std::sync::Arc::make_mut(a).pod_sets {
                let Some(old) = ps.topology.take() else {
                    continue;
                };
                let Some(tree) = self.tas.get(old.flavor).map(|f| &f.tree) else {
                    continue;
                };
                let requests: Vec<(&str, i64)> = tree
                    .resources
                    .iter()
                    .zip(&old.per_pod)
                    .filter(|(r, _)| r.as_str() != PODS)
                    .map(|(r, &v)| (r.as_str(), v))
                    .collect();
                let moved = self
                    .tas
                    .assignment(&old)
                    .and_then(|ta| new.restore(old.flavor, &requests, &ta));
                if let Some(p) = &moved {
                    new.add(p, 1);
                }
                ps.topology = moved;
            }
        }
        self.tas = new;
    }
}
