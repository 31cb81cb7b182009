//! Kueue's pending-workloads visibility API (`visibility.kueue.x-k8s.io/v1beta2`): the pending
//! workloads of a ClusterQueue or LocalQueue in queue order, with their positions in both.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::{Value, json};

use crate::scheduler::Scheduler;

pub const GROUP_VERSION: &str = "visibility.kueue.x-k8s.io/v1beta2";

/// One pending workload as the visibility API reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingWorkload {
    pub metadata: Value,
    pub priority: i32,
    pub local_queue_name: String,
    pub position_in_cluster_queue: i32,
    pub position_in_local_queue: i32,
}

/// Pending workloads per ClusterQueue, in queue order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    pub by_cluster_queue: BTreeMap<String, Vec<PendingWorkload>>,
}

impl Snapshot {
    pub fn of(s: &Scheduler) -> Snapshot {
        let c = &s.cluster;
        let mut by_cluster_queue = BTreeMap::new();
        for cq in &c.cluster_queues {
            let mut in_lq: HashMap<(String, String), i32> = HashMap::new();
            let items = s
                .queues
                .queue(cq.id)
                .ordered()
                .into_iter()
                .enumerate()
                .map(|(i, id)| {
                    let wl = c.workload(id);
                    let lq = wl.local_queue.clone().unwrap_or_default();
                    let pos = in_lq.entry((wl.namespace.clone(), lq.clone())).or_insert(0);
                    let item = PendingWorkload {
                        metadata: json!({"name": wl.name, "namespace": wl.namespace}),
                        priority: wl.priority,
                        local_queue_name: lq,
                        position_in_cluster_queue: i as i32,
                        position_in_local_queue: *pos,
                    };
                    *pos += 1;
                    item
                })
                .collect();
            by_cluster_queue.insert(cq.name.clone(), items);
        }
        Snapshot { by_cluster_queue }
    }

    /// `PendingWorkloadsSummary` of a ClusterQueue (`None`: no such queue).
    pub fn cluster_queue(&self, name: &str, offset: usize, limit: usize) -> Option<Value> {
        let items = self.by_cluster_queue.get(name)?;
        Some(summary(items.iter().skip(offset).take(limit)))
    }

    /// `PendingWorkloadsSummary` of a LocalQueue.
    pub fn local_queue(&self, namespace: &str, name: &str, offset: usize, limit: usize) -> Value {
        let items = self.by_cluster_queue.values().flatten().filter(|w| {
            w.local_queue_name == name
                && w.metadata.get("namespace").and_then(Value::as_str) == Some(namespace)
        });
        let mut sorted: Vec<&PendingWorkload> = items.collect();
        sorted.sort_by_key(|w| w.position_in_local_queue);
        summary(sorted.into_iter().skip(offset).take(limit))
    }
}

fn summary<'a>(items: impl Iterator<Item = &'a PendingWorkload>) -> Value {
    let items: Vec<&PendingWorkload> = items.collect();
    json!({
        "kind": "PendingWorkloadsSummary",
        "apiVersion": GROUP_VERSION,
        "metadata": {},
        "items": items,
    })
}
