//! The fifth decision, MultiKueue dispatch: which worker clusters get a copy of a workload that
//! reserved quota behind a MultiKueue admission check (Kueue's
//! `status.nominatedClusterNames`). The first worker that admits its copy runs it; the
//! other copies are removed.
//!
//! The driver (the simulator's manager, or the controller's MultiKueue check) asks while the
//! workload's check is `Pending` and no worker has admitted it: when its quota is reserved,
//! when a worker connects or is lost, and when the time the last answer asked for comes
//! ([`DispatchAnswer::retry_after`]). Every answer is checked with [`verify`]: nominees are
//! clusters of the request, each once, at most [`MAX_NOMINEES`] (Kueue's limit on
//! `nominatedClusterNames`), and connected unless already nominated; otherwise the built-in
//! decides.
//!
//! Dispatch is asked once per workload and round, not once per scheduling cycle, so its request
//! carries names as strings rather than the interned ids of the other four decisions.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::cluster::Millis;

use super::{PolicyError, PolicyRef};

/// Kueue's `MaxItems` on `status.nominatedClusterNames` (and on a MultiKueueConfig's clusters).
pub const MAX_NOMINEES: usize = 20;

/// The workload to dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchedWorkload {
    pub namespace: String,
    pub name: String,
    /// Its LocalQueue (the workers' LocalQueue of the same namespace and name receives it).
    pub local_queue: String,
    pub priority: i32,
    /// Creation time.
    pub created: Millis,
    /// When it reserved quota on the manager.
    pub reserved: Millis,
    /// Per podSet: name, count, and per pod each resource in milli-units.
    pub pod_sets: Vec<PodSetRequest>,
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodSetRequest {
    pub name: String,
    pub count: u32,
    pub per_pod: Vec<(String, i64)>,
}

/// One flavor-resource of a worker's ClusterQueue (milli-units).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerResource {
    pub flavor: String,
    pub resource: String,
    pub nominal: i64,
    pub usage: i64,
}

/// What the manager sees of the worker's ClusterQueue that the workload's LocalQueue feeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerQueue {
    pub name: String,
    pub pending: u32,
    pub admitted: u32,
    pub resources: Vec<WorkerResource>,
}

/// One candidate worker: a cluster of the workload's MultiKueueConfig.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCluster {
    /// Its MultiKueueCluster's name.
    pub name: String,
    /// Its MultiKueueCluster's labels.
    pub labels: BTreeMap<String, String>,
    /// The manager has a working connection to it (`Active=True`).
    pub connected: bool,
    /// Since when the connection is lost (unconnected clusters only, when known).
    pub lost_since: Option<Millis>,
    /// Its ClusterQueue for the workload, when the manager can see it.
    pub queue: Option<WorkerQueue>,
    /// Since when the workload has a copy there; `None`: no copy.
    pub copy_since: Option<Millis>,
}

/// The question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchRequest {
    /// The clock: wall time in the controller, virtual time in the simulator.
    pub now: Millis,
    pub workload: DispatchedWorkload,
    /// The clusters of its MultiKueueConfig, in the configuration's order.
    pub clusters: Vec<WorkerCluster>,
    /// The nominees so far, in nomination order (indices into `clusters`).
    pub nominated: Vec<u32>,
    /// When the nominees last changed (the start of an incremental dispatcher's round).
    pub last_nominated: Option<Millis>,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DispatchAnswer {
    /// Every nominee (indices into the request's `clusters`): replaces the nominees so far; a
    /// cluster left out loses its copy.
    pub nominate: Vec<u32>,
    /// Ask again after this long even if nothing changes (milliseconds); `None`: only when
    /// something does.
    pub retry_after: Option<Millis>,
}

pub trait DispatchPolicy: Send + Sync {
    fn id(&self) -> PolicyRef;
    fn dispatch(&self, req: &DispatchRequest) -> Result<DispatchAnswer, PolicyError>;
}

/// A request's clusters, as `wasq-kueue`'s dispatchers read them.
struct Clusters<'a>(&'a [WorkerCluster]);

impl wasq_kueue::dispatch::Workers for Clusters<'_> {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn name(&self, i: u32) -> &str {
        &self.0[i as usize].name
    }
    fn connected(&self, i: u32) -> bool {
        self.0[i as usize].connected
    }
}

/// Why an answer is refused.
pub fn verify(req: &DispatchRequest, answer: &DispatchAnswer) -> Result<(), String> {
    if answer.nominate.len() > MAX_NOMINEES {
        return Err(format!(
            "nominates {} clusters, more than {MAX_NOMINEES}",
            answer.nominate.len()
        ));
    }
    let mut seen = vec![false; req.clusters.len()];
    for &i in &answer.nominate {
        let Some(c) = req.clusters.get(i as usize) else {
            return Err(format!(
                "nominates cluster {i}, but the request has {}",
                req.clusters.len()
            ));
        };
        if std::mem::replace(&mut seen[i as usize], true) {
            return Err(format!("nominates {} twice", c.name));
        }
        // A nominee whose connection was lost may stay (its copy is kept until the worker
        // comes back or is given up); a new one must be connected.
        if !c.connected && !req.nominated.contains(&i) {
            return Err(format!("nominates {}, which is not connected", c.name));
        }
    }
    if answer.retry_after.is_some_and(|t| t <= 0) {
        return Err("asks to be asked again after a time that is not positive".into());
    }
    Ok(())
}

/// Kueue's `multikueue-dispatcher-all-at-once`: every connected cluster.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllAtOnce;

impl DispatchPolicy for AllAtOnce {
    fn id(&self) -> PolicyRef {
        PolicyRef::builtin()
    }
    fn dispatch(&self, req: &DispatchRequest) -> Result<DispatchAnswer, PolicyError> {
        Ok(DispatchAnswer {
            nominate: wasq_kueue::dispatch::all_at_once(&Clusters(&req.clusters)),
            retry_after: None,
        })
    }
}

/// Kueue's `multikueue-dispatcher-incremental`: `step` more connected clusters every round.
#[derive(Debug, Clone, Copy)]
pub struct Incremental {
    pub step: u32,
    pub round: Millis,
}

impl Default for Incremental {
    fn default() -> Incremental {
        Incremental {
            step: wasq_kueue::dispatch::DEFAULT_STEP,
            round: wasq_kueue::dispatch::ROUND_MS,
        }
    }
}

impl DispatchPolicy for Incremental {
    fn id(&self) -> PolicyRef {
        PolicyRef::builtin()
    }
    fn dispatch(&self, req: &DispatchRequest) -> Result<DispatchAnswer, PolicyError> {
        // The nominees the workload has, connected or not: a round never takes one back.
        let round = wasq_kueue::dispatch::incremental(
            &Clusters(&req.clusters),
            &req.nominated,
            req.last_nominated,
            req.now,
            self.step,
            self.round,
        );
        Ok(DispatchAnswer {
            nominate: round.nominate,
            retry_after: round.retry_after,
        })
    }
}

/// The built-in dispatcher a Configuration names (`multiKueue.dispatcherName`); `None` for an
/// external dispatcher (another controller writes the nominees).
pub fn builtin(dispatcher_name: &str, step: Option<u32>) -> Option<Arc<dyn DispatchPolicy>> {
    match dispatcher_name {
        ALL_AT_ONCE => Some(Arc::new(AllAtOnce)),
        INCREMENTAL => Some(Arc::new(Incremental {
            step: step.unwrap_or(wasq_kueue::dispatch::DEFAULT_STEP),
            ..Incremental::default()
        })),
        _ => None,
    }
}

/// The built-in dispatcher the Configuration's `multiKueue` names; `None` for an external one.
pub fn configured(
    settings: &crate::api::config::MultiKueueSettings,
) -> Option<Arc<dyn DispatchPolicy>> {
    match settings.dispatcher() {
        crate::api::config::Dispatcher::AllAtOnce => Some(Arc::new(AllAtOnce)),
        crate::api::config::Dispatcher::Incremental { step_size } => {
            builtin(INCREMENTAL, Some(step_size as u32))
        }
        crate::api::config::Dispatcher::External(_) => None,
    }
}

/// `multiKueue.dispatcherName` of Kueue's all-at-once dispatcher (the default).
pub const ALL_AT_ONCE: &str = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once";
/// `multiKueue.dispatcherName` of Kueue's incremental dispatcher.
pub const INCREMENTAL: &str = "kueue.x-k8s.io/multikueue-dispatcher-incremental";

/// Asks the dispatch plugin bound to the workload's ClusterQueue, if any, or else the built-in
/// dispatcher the Configuration names; a plugin's answer that fails or is refused falls back to
/// that built-in (to all-at-once under an external dispatcher). `None` for both: nobody
/// nominates (an external dispatcher writes the nominees). The answer, who decided it, and why
/// the plugin's was not taken.
pub fn ask(
    plugin: Option<&dyn DispatchPolicy>,
    builtin: Option<&dyn DispatchPolicy>,
    req: &DispatchRequest,
) -> (DispatchAnswer, PolicyRef, Option<PolicyError>) {
    match (plugin, builtin) {
        (Some(p), Some(b)) => decide(p, b, req),
        (Some(p), None) => decide(p, &AllAtOnce, req),
        (None, Some(b)) => decide(b, b, req),
        (None, None) => (DispatchAnswer::default(), PolicyRef::builtin(), None),
    }
}

impl DispatchedWorkload {
    /// Workload `id` of `cluster` as the dispatcher sees it, having reserved quota at
    /// `reserved`.
    pub fn of(
        cluster: &crate::cluster::Cluster,
        id: crate::cluster::WorkloadId,
        reserved: Millis,
    ) -> DispatchedWorkload {
        let info = cluster.workload(id);
        DispatchedWorkload {
            namespace: info.namespace.clone(),
            name: info.name.clone(),
            local_queue: info.local_queue.clone().unwrap_or_default(),
            priority: info
                .effective_priority()
                .clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32,
            created: info.created,
            reserved,
            pod_sets: info
                .pod_sets
                .iter()
                .map(|ps| PodSetRequest {
                    name: ps.name.to_string(),
                    count: ps.count.max(0) as u32,
                    per_pod: ps
                        .requests
                        .iter()
                        .map(|&(r, v)| (cluster.names.resource_name(r).to_string(), v))
                        .collect(),
                })
                .collect(),
            labels: info
                .labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }
}

/// Asks `policy`, checks its answer, and falls back to `fallback` when it fails or is refused;
/// the answer, who decided it, and why the policy's was not taken.
pub fn decide(
    policy: &dyn DispatchPolicy,
    fallback: &dyn DispatchPolicy,
    req: &DispatchRequest,
) -> (DispatchAnswer, PolicyRef, Option<PolicyError>) {
    let failure = match policy.dispatch(req) {
        Ok(answer) => match verify(req, &answer) {
            Ok(()) => return (answer, policy.id(), None),
            Err(why) => PolicyError::Invalid(super::verify::InvalidAnswer::Dispatch(why)),
        },
        Err(e) => e,
    };
    let answer = fallback
        .dispatch(req)
        .ok()
        .filter(|a| verify(req, a).is_ok())
        .unwrap_or_default();
    (answer, fallback.id(), Some(failure))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(name: &str, connected: bool) -> WorkerCluster {
        WorkerCluster {
            name: name.into(),
            labels: BTreeMap::new(),
            connected,
            lost_since: None,
            queue: None,
            copy_since: None,
        }
    }

    fn request(clusters: Vec<WorkerCluster>) -> DispatchRequest {
        DispatchRequest {
            now: 0,
            workload: DispatchedWorkload {
                namespace: "ns".into(),
                name: "w".into(),
                local_queue: "lq".into(),
                priority: 0,
                created: 0,
                reserved: 0,
                pod_sets: Vec::new(),
                labels: BTreeMap::new(),
            },
            clusters,
            nominated: Vec::new(),
            last_nominated: None,
        }
    }

    struct Answers(DispatchAnswer);

    impl DispatchPolicy for Answers {
        fn id(&self) -> PolicyRef {
            PolicyRef {
                name: "liar".into(),
                digest: "sha256:0".into(),
            }
        }
        fn dispatch(&self, _: &DispatchRequest) -> Result<DispatchAnswer, PolicyError> {
            Ok(self.0.clone())
        }
    }

    #[test]
    fn answers_naming_unknown_unconnected_or_repeated_clusters_are_refused() {
        let req = request(vec![cluster("a", true), cluster("b", false)]);
        let answer = |nominate: Vec<u32>| DispatchAnswer {
            nominate,
            retry_after: None,
        };
        assert_eq!(verify(&req, &answer(vec![0])), Ok(()));
        assert!(
            verify(&req, &answer(vec![2]))
                .unwrap_err()
                .contains("the request has 2")
        );
        assert!(
            verify(&req, &answer(vec![1]))
                .unwrap_err()
                .contains("b, which is not connected")
        );
        assert!(
            verify(&req, &answer(vec![0, 0]))
                .unwrap_err()
                .contains("a twice")
        );
        let bad_time = DispatchAnswer {
            nominate: vec![],
            retry_after: Some(0),
        };
        assert!(verify(&req, &bad_time).is_err());
    }

    #[test]
    fn a_nominee_whose_worker_is_lost_may_stay_but_not_be_added() {
        let mut req = request(vec![
            cluster("a", true),
            cluster("b", false),
            cluster("c", true),
        ]);
        req.nominated = vec![1];
        req.last_nominated = Some(0);
        req.now = wasq_kueue::dispatch::ROUND_MS;
        let answer = Incremental::default().dispatch(&req).unwrap();
        assert_eq!(
            answer.nominate,
            vec![1, 0, 2],
            "the lost nominee kept, the rest added"
        );
        assert_eq!(verify(&req, &answer), Ok(()));
        req.nominated.clear();
        assert!(
            verify(&req, &answer).is_err(),
            "b may not be added while lost"
        );
    }

    #[test]
    fn a_refused_answer_falls_back_to_the_builtin() {
        let req = request(vec![
            cluster("b", true),
            cluster("a", true),
            cluster("c", false),
        ]);
        let liar = Answers(DispatchAnswer {
            nominate: vec![2],
            retry_after: None,
        });
        let (answer, by, why) = decide(&liar, &AllAtOnce, &req);
        assert_eq!(answer.nominate, vec![1, 0], "connected clusters by name");
        assert_eq!(by, PolicyRef::builtin());
        assert!(
            why.unwrap()
                .to_string()
                .contains("c, which is not connected")
        );
    }

    #[test]
    fn the_configuration_names_the_builtin() {
        let req = request(vec![
            cluster("a", true),
            cluster("b", true),
            cluster("c", true),
        ]);
        let incremental = builtin(INCREMENTAL, Some(1)).unwrap();
        assert_eq!(incremental.dispatch(&req).unwrap().nominate, vec![0]);
        assert_eq!(
            builtin(ALL_AT_ONCE, None)
                .unwrap()
                .dispatch(&req)
                .unwrap()
                .nominate
                .len(),
            3
        );
        assert!(builtin("example.com/my-dispatcher", None).is_none());
    }
}
