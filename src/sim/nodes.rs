//! `NodeInventory`: a `sim.wasq.dev/v1alpha1` object standing for a rack-structured inventory
//! of nodes and its `Topology` (block → rack → hostname, or rack → hostname), e.g. Kueue's TAS
//! performance test: 10 racks × 64 nodes of 96 cpu = 640 nodes.
//!
//! ```yaml
//! apiVersion: sim.wasq.dev/v1alpha1
//! kind: NodeInventory
//! metadata: {name: gpus}
//! spec:
//!   topology: racks            # the Topology made (levels: [block,] rack, hostname)
//!   blocks: 1                  # optional: > 1 adds a block level above racks
//!   racks: 10                  # per block
//!   nodesPerRack: 64
//!   labels: {gpu: a100}        # on every node (a flavor's nodeLabels select them)
//!   allocatable: {cpu: '96', nvidia.com/gpu: '8', pods: '110'}
//! ```
//!
//! Nodes are named `b<i>-r<j>-n<k>` (`r<j>-n<k>` with one block), labelled
//! `cloud.wasq.dev/block`, `cloud.wasq.dev/rack` and `kubernetes.io/hostname`, and `Ready`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

use crate::api::Manifests;
use crate::api::topology::{HOSTNAME_LABEL, Topology, TopologyLevel, TopologySpec};

pub const BLOCK_LABEL: &str = "cloud.wasq.dev/block";
pub const RACK_LABEL: &str = "cloud.wasq.dev/rack";

/// The `spec` of a `NodeInventory` object.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeInventorySpec {
    pub topology: String,
    #[serde(default = "one")]
    pub blocks: u32,
    pub racks: u32,
    pub nodes_per_rack: u32,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    pub allocatable: BTreeMap<String, String>,
}

fn one() -> u32 {
    1
}

/// The Topology and Nodes an inventory stands for (a pure function of the spec).
pub fn generate(spec: &NodeInventorySpec) -> Manifests {
    let mut levels = Vec::new();
    if spec.blocks > 1 {
        levels.push(BLOCK_LABEL);
    }
    levels.extend([RACK_LABEL, HOSTNAME_LABEL]);
    let topology = Topology {
        metadata: ObjectMeta {
            name: Some(spec.topology.clone()),
            ..ObjectMeta::default()
        },
        spec: TopologySpec {
            levels: levels
                .iter()
                .map(|l| TopologyLevel {
                    node_label: l.to_string(),
                })
                .collect(),
        },
    };
    let allocatable: BTreeMap<String, K8sQuantity> = spec
        .allocatable
        .iter()
        .map(|(k, v)| (k.clone(), K8sQuantity(v.clone())))
        .collect();
    let mut nodes = Vec::with_capacity((spec.blocks * spec.racks * spec.nodes_per_rack) as usize);
    for b in 0..spec.blocks {
        for r in 0..spec.racks {
            let rack = if spec.blocks > 1 {
                format!("b{b}-r{r}")
            } else {
                format!("r{r}")
            };
            for n in 0..spec.nodes_per_rack {
                let name = format!("{rack}-n{n}");
                let mut labels = spec.labels.clone();
                if spec.blocks > 1 {
                    labels.insert(BLOCK_LABEL.into(), format!("b{b}"));
                }
                labels.insert(RACK_LABEL.into(), rack.clone());
                labels.insert(HOSTNAME_LABEL.into(), name.clone());
                nodes.push(Node {
                    metadata: ObjectMeta {
                        name: Some(name),
                        labels: Some(labels),
                        ..ObjectMeta::default()
                    },
                    spec: None,
                    status: Some(NodeStatus {
                        allocatable: Some(allocatable.clone()),
                        conditions: Some(vec![crate::topology::tree::ready_condition()]),
                        ..NodeStatus::default()
                    }),
                });
            }
        }
    }
    Manifests {
        topologies: vec![topology],
        nodes,
        ..Manifests::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::DomainTree;

    #[test]
    fn kueue_tas_performance_inventory_has_640_nodes_in_10_racks() {
        let spec = NodeInventorySpec {
            topology: "racks".into(),
            blocks: 1,
            racks: 10,
            nodes_per_rack: 64,
            labels: BTreeMap::from([("tas".into(), "true".into())]),
            allocatable: BTreeMap::from([
                ("cpu".into(), "96".into()),
                ("pods".into(), "110".into()),
            ]),
        };
        let m = generate(&spec);
        assert_eq!(m.nodes.len(), 640);
        let t = &m.topologies[0];
        let tree = DomainTree::build(
            "racks",
            &t.level_keys(),
            &BTreeMap::from([("tas".into(), "true".into())]),
            &m.nodes,
        );
        assert_eq!(tree.per_level[0].len(), 10);
        assert_eq!(tree.leaves.len(), 640);
        let cpu = tree.resource_index("cpu").unwrap();
        assert!(tree.capacity.rows().all(|c| c[cpu] == 96_000));
        let two_blocks = generate(&NodeInventorySpec {
            blocks: 2,
            racks: 3,
            nodes_per_rack: 2,
            ..spec
        });
        assert_eq!(two_blocks.nodes.len(), 12);
        assert_eq!(two_blocks.topologies[0].spec.levels.len(), 3);
    }
}
