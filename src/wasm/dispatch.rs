//! Dispatch plugins (`wasq:policy/dispatch`, added in 1.1.0): the fifth decision,
//! [`crate::policy::dispatch::DispatchPolicy`], over a plugin. The request crosses with names
//! as strings (dispatch is asked once per workload and round, not per cycle: no catalog, no
//! string table), the workload's labels filtered by the plugin's allow-list; the answer is
//! checked with [`dispatch::verify`] here, so that a refused answer counts against the plugin
//! like a trap, before [`dispatch::decide`] falls back to the built-in.

use std::sync::Arc;

use super::bindings::dispatch::exports::wasq::policy::dispatch as d;
use super::plugin::{Exposure, Plugin};
use crate::policy::dispatch::{self, DispatchAnswer, DispatchPolicy, DispatchRequest};
use crate::policy::verify::InvalidAnswer;
use crate::policy::{PolicyError, PolicyRef};

/// A dispatch plugin.
pub struct WasmDispatch(pub Arc<Plugin>);

fn labels<'a>(
    labels: impl IntoIterator<Item = (&'a String, &'a String)>,
    keep: impl Fn(&str) -> bool,
) -> Vec<d::Label> {
    labels
        .into_iter()
        .filter(|(k, _)| keep(k))
        .map(|(k, v)| d::Label {
            key: k.clone(),
            value: v.clone(),
        })
        .collect()
}

/// The WIT request for `req`, the workload's labels filtered by `exposure`.
pub(super) fn request(req: &DispatchRequest, exposure: &Exposure) -> d::Request {
    let w = &req.workload;
    d::Request {
        now: req.now,
        workload: d::Workload {
            namespace: w.namespace.clone(),
            name: w.name.clone(),
            local_queue: w.local_queue.clone(),
            priority: w.priority,
            created: w.created,
            reserved: w.reserved,
            pod_sets: w
                .pod_sets
                .iter()
                .map(|p| d::PodSet {
                    name: p.name.clone(),
                    count: p.count,
                    per_pod: p
                        .per_pod
                        .iter()
                        .map(|(name, amount)| d::NamedQuantity {
                            name: name.clone(),
                            amount: *amount,
                        })
                        .collect(),
                })
                .collect(),
            labels: labels(&w.labels, |k| exposure.exposes_label(k)),
        },
        clusters: req
            .clusters
            .iter()
            .map(|c| d::Cluster {
                name: c.name.clone(),
                labels: labels(&c.labels, |_| true),
                connected: c.connected,
                lost_since: c.lost_since,
                queue: c.queue.as_ref().map(|q| d::WorkerQueue {
                    name: q.name.clone(),
                    pending: q.pending,
                    admitted: q.admitted,
                    resources: q
                        .resources
                        .iter()
                        .map(|r| d::WorkerResource {
                            flavor: r.flavor.clone(),
                            resource: r.resource.clone(),
                            nominal: r.nominal,
                            usage: r.usage,
                        })
                        .collect(),
                }),
                copy_since: c.copy_since,
            })
            .collect(),
        nominated: req.nominated.clone(),
        last_nominated: req.last_nominated,
    }
}

/// The plugin's answer as the policy trait has it.
pub(super) fn answer(a: d::Answer) -> DispatchAnswer {
    DispatchAnswer {
        nominate: a.nominate,
        retry_after: a.retry_after,
    }
}

impl WasmDispatch {
    /// The plugin's answer to `req` as it gave it, not verified (for parity tests); a wrong
    /// number of answers is refused.
    pub fn ask(&self, req: &DispatchRequest) -> Result<DispatchAnswer, PolicyError> {
        let plugin = &self.0;
        let wit = request(req, plugin.exposure());
        let answers = plugin.call_dispatch(req.now, req.clusters.len(), |guest, store| {
            guest.call_dispatch(store, std::slice::from_ref(&wit))
        })?;
        let [a] = <[_; 1]>::try_from(answers).map_err(|a: Vec<_>| {
            let e = PolicyError::Invalid(InvalidAnswer::WrongLength {
                what: "dispatch answers",
                got: a.len(),
                expected: 1,
            });
            plugin.refused(&e);
            e
        })?;
        Ok(answer(a))
    }
}

impl DispatchPolicy for WasmDispatch {
    fn id(&self) -> PolicyRef {
        self.0.id()
    }

    /// [`WasmDispatch::ask`], verified: a refused answer counts against the plugin.
    fn dispatch(&self, req: &DispatchRequest) -> Result<DispatchAnswer, PolicyError> {
        let out = self.ask(req)?;
        dispatch::verify(req, &out).map_err(|why| {
            let e = PolicyError::Invalid(InvalidAnswer::Dispatch(why));
            self.0.refused(&e);
            e
        })?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::policy::dispatch::{
        DispatchedWorkload, PodSetRequest, WorkerCluster, WorkerQueue, WorkerResource,
    };

    #[test]
    fn a_request_crosses_whole_with_only_the_exposed_workload_labels() {
        let req = DispatchRequest {
            now: 7,
            workload: DispatchedWorkload {
                namespace: "ns".into(),
                name: "w".into(),
                local_queue: "lq".into(),
                priority: -3,
                created: 1,
                reserved: 2,
                pod_sets: vec![PodSetRequest {
                    name: "main".into(),
                    count: 4,
                    per_pod: vec![("cpu".into(), 500)],
                }],
                labels: BTreeMap::from([
                    ("kueue.x-k8s.io/queue-name".to_string(), "lq".to_string()),
                    ("secret.example.com/team".to_string(), "a".to_string()),
                ]),
            },
            clusters: vec![WorkerCluster {
                name: "east".into(),
                labels: BTreeMap::from([("region".to_string(), "us-east".to_string())]),
                connected: false,
                lost_since: Some(5),
                queue: Some(WorkerQueue {
                    name: "cq".into(),
                    pending: 1,
                    admitted: 2,
                    resources: vec![WorkerResource {
                        flavor: "default".into(),
                        resource: "cpu".into(),
                        nominal: 8000,
                        usage: 1000,
                    }],
                }),
                copy_since: Some(6),
            }],
            nominated: vec![0],
            last_nominated: Some(6),
        };
        let wit = request(&req, &Exposure::default());
        assert_eq!(wit.now, 7);
        assert_eq!(wit.workload.priority, -3);
        assert_eq!(wit.workload.pod_sets[0].per_pod[0].amount, 500);
        let keys: Vec<&str> = wit.workload.labels.iter().map(|l| l.key.as_str()).collect();
        assert_eq!(keys, ["kueue.x-k8s.io/queue-name"]);
        let c = &wit.clusters[0];
        assert_eq!(c.labels[0].value, "us-east");
        assert_eq!(
            (c.connected, c.lost_since, c.copy_since),
            (false, Some(5), Some(6))
        );
        let q = c.queue.as_ref().expect("queue");
        assert_eq!(
            (q.pending, q.admitted, q.resources[0].nominal),
            (1, 2, 8000)
        );
        assert_eq!((wit.nominated, wit.last_nominated), (vec![0], Some(6)));
        let a = answer(d::Answer {
            nominate: vec![0],
            retry_after: Some(9),
        });
        assert_eq!(
            a,
            DispatchAnswer {
                nominate: vec![0],
                retry_after: Some(9)
            }
        );
    }
}
