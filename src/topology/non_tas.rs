//! Capacity taken by pods that run outside topology-aware scheduling (Kueue's non-TAS usage,
//! `tas_non_tas_pod_cache.go`): the controller reports, per node, the requests of the pods
//! bound there that no TAS admission placed; each TAS flavor whose tree holds the node
//! charges them to the node's leaf, and free capacity is allocatable less TAS and non-TAS
//! usage. The simulator has no such pods.

use std::collections::BTreeMap;

use super::Topologies;

impl Topologies {
    /// Sets what pods outside TAS use on `node` (by resource name, milli-units; `pods` counts
    /// 1000 per pod). Returns whether capacity was freed (some resource went down), so that
    /// waiting workloads get another chance.
    pub fn set_node_usage(&mut self, node: &str, usage: BTreeMap<String, i64>) -> bool {
        let old = if usage.is_empty() {
            self.node_usage.remove(node)
        } else {
            self.node_usage.insert(node.to_string(), usage.clone())
        }
        .unwrap_or_default();
        if old == usage {
            return false;
        }
        self.charge(node, &old, -1);
        self.charge(node, &usage, 1);
        old.iter()
            .any(|(r, &v)| usage.get(r).copied().unwrap_or(0) < v)
    }

    /// Charges every recorded node's usage again (after the trees were rebuilt).
    pub(super) fn recharge_nodes(&mut self) {
        let nodes: Vec<(String, BTreeMap<String, i64>)> = self
            .node_usage
            .iter()
            .map(|(n, u)| (n.clone(), u.clone()))
            .collect();
        for (node, usage) in nodes {
            self.charge(&node, &usage, 1);
        }
    }

    /// Takes over the non-TAS usage recorded in `old` (the trees were rebuilt).
    pub fn carry_node_usage_from(&mut self, old: &Topologies) {
        self.node_usage = old.node_usage.clone();
        self.recharge_nodes();
    }

    fn charge(&mut self, node: &str, usage: &BTreeMap<String, i64>, sign: i64) {
        for (i, f) in self.flavors.iter().enumerate() {
            let Some(&leaf) = f.tree.node_leaf.get(node) else {
                continue;
            };
            for (r, &v) in usage {
                if let Some(c) = f.tree.resource_index(r) {
                    self.non_tas.0[i].row_mut(leaf)[c] += sign * v;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Node;
    use serde_json::json;

    use crate::api::Manifests;
    use crate::api::topology::Topology;
    use crate::quota::FlavorId;

    use super::*;

    fn manifests() -> Manifests {
        let node = |name: &str, rack: &str| -> Node {
            serde_json::from_value(json!({"metadata": {"name": name, "labels": {
                "rack": rack, "kubernetes.io/hostname": name}},
                "status": {"allocatable": {"cpu": "8", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True"}]}}))
            .unwrap()
        };
        let topology: Topology = serde_json::from_value(json!({"metadata": {"name": "t"},
            "spec": {"levels": [{"nodeLabel": "rack"}, {"nodeLabel": "kubernetes.io/hostname"}]}}))
        .unwrap();
        let flavor = serde_json::from_value(json!({"metadata": {"name": "f"},
            "spec": {"topologyName": "t"}}))
        .unwrap();
        Manifests {
            flavors: vec![flavor],
            topologies: vec![topology],
            nodes: vec![node("a", "r1"), node("b", "r1")],
            ..Manifests::default()
        }
    }

    fn cpu(t: &Topologies, node: usize) -> i64 {
        let f = FlavorId(0);
        let cpu = t.get(f).unwrap().tree.resource_index("cpu").unwrap();
        t.free(f, t.current()).unwrap().row(node)[cpu]
    }

    #[test]
    fn usage_outside_tas_takes_capacity_per_node_and_survives_a_rebuild() {
        let m = manifests();
        let mut t = Topologies::build(&m, |_| Some(FlavorId(0)));
        let usage = BTreeMap::from([("cpu".to_string(), 3000), ("pods".to_string(), 1000)]);
        assert!(!t.set_node_usage("b", usage.clone()), "nothing was freed");
        assert_eq!((cpu(&t, 0), cpu(&t, 1)), (8000, 5000));
        // Unknown nodes and resources are kept but charge nothing.
        assert!(!t.set_node_usage("z", usage.clone()));
        let mut rebuilt = Topologies::build(&m, |_| Some(FlavorId(0)));
        rebuilt.carry_node_usage_from(&t);
        assert_eq!(cpu(&rebuilt, 1), 5000);
        // Less usage frees capacity; none at all forgets the node.
        assert!(rebuilt.set_node_usage("b", BTreeMap::from([("cpu".to_string(), 1000)])));
        assert_eq!(cpu(&rebuilt, 1), 7000);
        assert!(rebuilt.set_node_usage("b", BTreeMap::new()));
        assert_eq!(cpu(&rebuilt, 1), 8000);
    }
}
