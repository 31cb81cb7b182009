//! The nodes under topology-aware scheduling changed between cycles (the controller watches
//! them; the simulator's are fixed): new trees or less capacity used outside TAS may let parked
//! workloads fit, so every ClusterQueue with a TAS flavor tries its parked workloads again —
//! Kueue requeues inadmissible workloads when a node is added or capacity is freed on one.

use std::collections::BTreeMap;

use super::Scheduler;
use crate::topology::Topologies;

impl Scheduler {
    /// Replaces the TAS trees (nodes came, went or changed); placements move by domain
    /// ([`crate::cluster::Cluster::replace_topologies`]).
    pub fn replace_topologies(&mut self, new: Topologies) {
        self.cluster.replace_topologies(new);
        self.retry_tas_queues();
    }

    /// Records what pods outside TAS use on `node`; when that went down, waiting TAS
    /// workloads get another chance.
    pub fn set_node_usage(&mut self, node: &str, usage: BTreeMap<String, i64>) {
        if self.cluster.tas.set_node_usage(node, usage) {
            self.retry_tas_queues();
        }
    }

    fn retry_tas_queues(&mut self) {
        let tas = &self.cluster.tas;
        let queues = self.cluster.cluster_queues.iter().filter(|cq| {
            cq.resource_groups
                .iter()
                .any(|g| g.flavors.iter().any(|&f| tas.get(f).is_some()))
        });
        self.retry.extend(queues.map(|cq| cq.id));
    }
}
