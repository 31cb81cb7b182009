//! The controller's side of topology-aware scheduling: node changes taken into the live core
//! (trees rebuilt only when nodes change what TAS reads; usage outside TAS per node, O(the
//! nodes that changed)), and Kueue's TopologyUngater run over the Workloads whose TAS pods or
//! admission changed ([`crate::k8s::jobs::ungater`] plans, this sends the pod patches).

use futures::StreamExt;

use super::{Controller, core};
use crate::k8s::client::MAX_IN_FLIGHT;
use crate::k8s::jobs::pod_groups::pod_resource;
use crate::k8s::jobs::ungater;
use crate::k8s::sync::mirror::{Observed, Source};

impl Controller {
    /// Nodes or the pods outside TAS changed since the last pass: the live core follows.
    pub(super) fn update_nodes(&mut self) {
        let Some(s) = self.scheduler.as_mut() else {
            return;
        };
        if std::mem::take(&mut self.work.nodes) {
            let trees = core::topologies(&self.mirror, &s.cluster.names);
            tracing::info!(
                nodes = self.mirror.tas.nodes.len(),
                flavors = trees.flavors.len(),
                "nodes changed; topology trees rebuilt"
            );
            s.replace_topologies(trees);
            self.metrics
                .topology_rebuilds
                .get_or_create(&self.metrics.labels(vec![]))
                .inc();
        }
        for node in std::mem::take(&mut self.work.node_usage) {
            let usage = self
                .mirror
                .tas
                .node_usage
                .get(&node)
                .cloned()
                .unwrap_or_default();
            s.set_node_usage(&node, usage);
        }
    }

    /// Kueue's TopologyUngater: the gated pods of Workloads admitted with topology
    /// assignments are given their domains, at most [`MAX_IN_FLIGHT`] patches at once. A
    /// failed patch is planned again at the next pass.
    pub(super) async fn ungate(&mut self) {
        let keys = std::mem::take(&mut self.work.ungate);
        let mut plans = Vec::new();
        for key in keys {
            let (Some(wl), Some(pods)) = (
                self.mirror.workloads.get(&key),
                self.mirror.tas.tas_pods.get(&key),
            ) else {
                continue;
            };
            plans.extend(
                ungater::plan(wl, pods)
                    .into_iter()
                    .map(|u| (key.clone(), u)),
            );
        }
        if plans.is_empty() {
            return;
        }
        let writer = &self.writer;
        let resource = pod_resource();
        let answers: Vec<_> = futures::stream::iter(plans)
            .map(|(key, u)| {
                let resource = &resource;
                async move {
                    let r = writer
                        .json_patch(resource, Some(&u.namespace), &u.name, u.ops, false)
                        .await;
                    (key, u.name, r)
                }
            })
            .buffer_unordered(MAX_IN_FLIGHT)
            .collect()
            .await;
        for (key, pod, answer) in answers {
            match answer {
                Ok(obj) => {
                    self.metrics
                        .pods_ungated
                        .get_or_create(&self.metrics.labels(vec![]))
                        .inc();
                    self.observe(Observed::Applied(Source::TasPod, obj));
                }
                Err(e) => {
                    tracing::warn!(workload = %key, pod = %pod, error = %e, "cannot ungate the pod; will retry");
                    self.write_failed("pod");
                    self.work.ungate.insert(key);
                }
            }
        }
    }
}
