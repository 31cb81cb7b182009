//! Kueue's MultiKueue workload controller on the manager, as a decision both drivers act on:
//! given what the manager knows of one Workload and of its copies on the workers, what to do
//! now. The simulator's manager acts on it against simulated workers; the controller against
//! remote API servers.
//!
//! Kueue's `pkg/controller/admissionchecks/multikueue/workload.go` (`reconcileGroup`, main
//! branch): in order, the first step that applies ends the reconcile —
//!
//! 1. the Workload is finished or holds no quota (evicted, preempted, deactivated, retried):
//!    every copy the manager reaches is removed, finished ones too; evicted but still holding
//!    quota with no copy in reach, its eviction completes (a wasq addition, see below);
//! 2. a copy finished: the Workload finishes with it (the job's status mirrored first) —
//!    unless its worker finished it `OutOfSync`: then, while `Ready`, the check retries;
//! 3. a copy was evicted: while the Workload is evicted on the manager too, the job's status
//!    is mirrored (so that the manager's eviction completes once the remote job stopped);
//!    else, while the check is `Ready`, the check goes to `Retry`;
//! 4. a copy whose priority changed on the manager is updated in place (Kueue's step 5 for
//!    priority; other spec changes are not compared); then, a copy is admitted (the earliest; at one instant, the first in the MultiKueueConfig's
//!    order; once `status.clusterName` is set, only that worker's): the other copies are
//!    removed; while the Workload is evicted on the manager but
//!    still holds quota, the copy is deactivated (`DeactivationTarget`, reason
//!    `EvictedOnManagerCluster`); otherwise the job is synced (created there, or its status
//!    mirrored), the check becomes `Ready` and `status.clusterName` names its worker;
//! 5. none is admitted while the check is `Ready`: the admitting worker was lost (`Retry` once
//!    lost for `workerLostTimeout`) or is back without the copy (`Retry` at once);
//! 6. the check is `Pending`, no worker recorded and every other check `Ready`: the dispatcher
//!    nominates workers and the nominees get copies ([`sync_nominees`]).

use super::Millis;
use super::checks::CheckState;

/// The check's message when a copy was admitted on `worker`.
pub fn admitted_on(worker: &str) -> String {
    format!("The workload was admitted on {worker:?}")
}

/// The check's message when `worker` finished the copy as out of sync with its job.
pub fn out_of_sync_on(worker: &str) -> String {
    format!(
        "Remote workload on worker cluster {worker:?} is out of sync with its user job, \
         resetting for re-dispatch"
    )
}

/// The check's message when the admitted copy was evicted on `worker`.
pub fn evicted_on_worker(worker: &str) -> String {
    format!(
        "Workload evicted on worker cluster: {worker:?}, resetting for re-admission. \
         Previously: {:?}",
        CheckState::Ready.as_str()
    )
}

/// The copy's `DeactivationTarget` message when the Workload was evicted on the manager.
pub fn evicted_on_manager(message: &str) -> String {
    format!("Evicted on manager: {message}")
}

/// The reason of the copy's `DeactivationTarget` condition then.
pub const EVICTED_ON_MANAGER_CLUSTER: &str = "EvictedOnManagerCluster";

/// The admitting worker has been unreachable for `workerLostTimeout`.
pub const ADMITTING_REMOTE_LOST: &str = "Admitting remote lost";
/// The admitting worker is reachable but its copy is gone.
pub const ADMITTING_REMOTE_GONE: &str = "Admitting remote no longer exists";
/// `Ready` with no worker recorded.
pub const NO_ADMITTING_CLUSTER: &str = "Admission check is Ready but no admitting cluster is recorded; \
     this is unexpected, please report it";

/// Kueue's `updateACS`: a message with the state it replaces.
pub fn previously(message: &str, was: CheckState) -> String {
    format!("{message}, Previously: {:?}", was.as_str())
}

/// What the manager knows of its Workload.
#[derive(Debug, Clone, Copy)]
pub struct Local<'a> {
    /// Its MultiKueue check's state.
    pub check: CheckState,
    pub holds_quota: bool,
    pub finished: bool,
    /// Evicted on the manager (the `Evicted` condition's message) while it still holds quota:
    /// its job is being stopped.
    pub evicted: Option<&'a str>,
    /// `status.clusterName`: the worker that admitted it.
    pub cluster_name: Option<&'a str>,
    /// Every other admission check of the Workload is `Ready`.
    pub others_ready: bool,
}

/// What the manager knows of one worker of the Workload's MultiKueueConfig.
#[derive(Debug, Clone, Copy)]
pub struct Worker<'a> {
    pub name: &'a str,
    /// The manager has a working connection to it.
    pub reachable: bool,
    /// Since when it is unreachable (as far as the manager knows).
    pub lost_since: Option<Millis>,
    /// The Workload's copy there, when the manager sees one.
    pub copy: Option<Copy>,
}

/// A copy's state on its worker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Copy {
    /// Admitted (quota reserved and every check of the worker `Ready`), since when.
    pub admitted_at: Option<Millis>,
    pub finished: bool,
    /// Evicted on its worker (and not admitted again).
    pub evicted: bool,
    /// Its priority (class and value) is no longer the Workload's.
    pub stale_priority: bool,
    /// Finished by its worker as out of sync with its job (Kueue's `OutOfSync` reason).
    pub out_of_sync: bool,
    /// Made from a spec (other than the priority) the Workload no longer has.
    pub stale_spec: bool,
}

/// Why the check changes state (what drivers record beside the message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    Admitted,
    EvictedOnWorker,
    WorkerLost,
    CopyGone,
    NoClusterRecorded,
    /// The worker finished the copy `OutOfSync` (a Warning Event in Kueue).
    OutOfSync,
}

/// One thing to do, in order. `worker` indexes the slice given to [`reconcile`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Remove the copy there (and its job).
    Remove { worker: usize, because: Removal },
    /// Sync the job with its copy on `worker`: create the remote job there when missing, else
    /// mirror its status onto the manager's job (Kueue's `SyncJob`).
    SyncJob { worker: usize },
    /// Ask the copy on `worker` to deactivate itself: the Workload was evicted on the manager
    /// with `message` (Kueue's `EvictedOnManagerCluster`).
    Deactivate { worker: usize, message: String },
    /// The Workload finishes as its copy on `worker` did.
    Finish { worker: usize },
    /// Set the check: state, message (Kueue's words), and why.
    Check {
        state: CheckState,
        message: String,
        why: Why,
    },
    /// Record `worker` as `status.clusterName`, clearing `status.nominatedClusterNames`.
    Admitted { worker: usize },
    /// Give the copy on `worker` the Workload's priority (class and value).
    UpdatePriority { worker: usize },
    /// Ask the dispatcher, then [`sync_nominees`].
    Dispatch,
    /// The Workload's eviction on the manager completes: its quota is released.
    CompleteEviction,
}

/// Why a copy is removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// The manager's Workload no longer holds quota (or finished).
    NoQuota,
    /// Another worker admitted the Workload.
    AdmittedOn(usize),
    /// The dispatcher no longer nominates the worker.
    NotNominated,
    /// The Workload's spec (other than its priority) changed on the manager since the copy was
    /// made.
    SpecChanged,
}

impl Removal {
    /// Why, in words (the simulator's `Removed` events).
    pub fn describe(self, workers: &[Worker<'_>]) -> String {
        match self {
            Removal::NoQuota => {
                "the manager's Workload no longer holds quota on the manager".into()
            }
            Removal::AdmittedOn(w) => format!(
                "the workload was admitted on worker cluster {:?}",
                workers[w].name
            ),
            Removal::NotNominated => "the dispatcher no longer nominates this worker".into(),
            Removal::SpecChanged => {
                "the Workload's spec changed on the manager since the copy was made".into()
            }
        }
    }
}

/// The actions, and when to look again if nothing else happens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub actions: Vec<Action>,
    pub wake_at: Option<Millis>,
}

/// Kueue's `reconcileGroup` for one Workload (see the module).
pub fn reconcile(
    local: &Local<'_>,
    workers: &[Worker<'_>],
    now: Millis,
    lost_timeout: Millis,
) -> Plan {
    let mut plan = Plan::default();
    let copies = || {
        workers
            .iter()
            .enumerate()
            .filter_map(|(i, w)| w.copy.map(|c| (i, c)))
    };
    // 1.
    if local.finished || !local.holds_quota {
        plan.actions.extend(
            copies()
                .filter(|(i, _)| workers[*i].reachable)
                .map(|(worker, _)| Action::Remove {
                    worker,
                    because: Removal::NoQuota,
                }),
        );
        return plan;
    }
    // Evicted on the manager with no copy in reach: nothing is left to stop, so the eviction
    // completes here (the manager's job still shows the status mirrored from a lost worker;
    // Kueue waits on it forever, kueue#15380).
    // (A copy its worker finished out of sync runs nothing: it does not count.)
    if local.evicted.is_some()
        && !copies().any(|(i, c)| workers[i].reachable && !(c.finished && c.out_of_sync))
    {
        plan.actions.push(Action::CompleteEviction);
        return plan;
    }
    // 2. A copy its worker finished `OutOfSync` (its job no longer matches it) did not run:
    // the Workload is dispatched anew, never finished with it.
    if let Some((worker, _)) = copies().find(|(_, c)| c.finished && c.out_of_sync) {
        if local.check == CheckState::Ready {
            plan.actions.push(Action::Check {
                state: CheckState::Retry,
                message: previously(&out_of_sync_on(workers[worker].name), CheckState::Ready),
                why: Why::OutOfSync,
            });
        }
        return plan;
    }
    if let Some((worker, _)) = copies().find(|(_, c)| c.finished) {
        plan.actions.push(Action::SyncJob { worker });
        plan.actions.push(Action::Finish { worker });
        return plan;
    }
    // 3. (A copy evicted while the check is not Ready waits in its worker's queue.)
    if local.evicted.is_some()
        && let Some((worker, _)) = copies().find(|(_, c)| c.evicted)
    {
        plan.actions.push(Action::SyncJob { worker });
        return plan;
    }
    if local.check == CheckState::Ready && copies().any(|(_, c)| c.evicted) {
        plan.actions.push(Action::Check {
            state: CheckState::Retry,
            message: evicted_on_worker(local.cluster_name.unwrap_or_default()),
            why: Why::EvictedOnWorker,
        });
        return plan;
    }
    // 4.
    // Kueue's step 5: a copy whose spec changed on the manager goes (made again where the
    // Workload is still nominated), one whose priority changed is updated in place.
    plan.actions.extend(
        copies()
            .filter(|&(i, c)| c.stale_spec && workers[i].reachable)
            .map(|(worker, _)| Action::Remove {
                worker,
                because: Removal::SpecChanged,
            }),
    );
    let copies = || copies().filter(|&(i, c)| !(c.stale_spec && workers[i].reachable));
    plan.actions.extend(
        copies()
            .filter(|&(i, c)| c.stale_priority && workers[i].reachable)
            .map(|(worker, _)| Action::UpdatePriority { worker }),
    );
    // Once a worker is recorded, only its copy admits: an admitted copy elsewhere is stale (a
    // lost worker back with the copy it ran before a re-dispatch) and goes.
    let admitting = copies()
        .filter(|&(i, _)| local.cluster_name.is_none_or(|n| workers[i].name == n))
        .filter_map(|(i, c)| c.admitted_at.map(|at| (at, i)))
        .min();
    if let Some((_, winner)) = admitting {
        plan.actions.extend(
            copies()
                .filter(|&(i, _)| i != winner && workers[i].reachable)
                .map(|(worker, _)| Action::Remove {
                    worker,
                    because: Removal::AdmittedOn(winner),
                }),
        );
        if let Some(message) = local.evicted {
            plan.actions.push(Action::Deactivate {
                worker: winner,
                message: evicted_on_manager(message),
            });
            return plan;
        }
        plan.actions.push(Action::SyncJob { worker: winner });
        if matches!(local.check, CheckState::Pending) {
            plan.actions.push(Action::Check {
                state: CheckState::Ready,
                message: admitted_on(workers[winner].name),
                why: Why::Admitted,
            });
            plan.actions.push(Action::Admitted { worker: winner });
        }
        return plan;
    }
    // 5.
    if local.check == CheckState::Ready {
        let admitting = local
            .cluster_name
            .and_then(|name| workers.iter().find(|w| w.name == name));
        let (message, why) = match admitting {
            None if local.cluster_name.is_none() => (NO_ADMITTING_CLUSTER, Why::NoClusterRecorded),
            Some(w) if !w.reachable => {
                let deadline = w.lost_since.unwrap_or(now).saturating_add(lost_timeout);
                if now < deadline {
                    plan.wake_at = Some(deadline);
                    return plan;
                }
                (ADMITTING_REMOTE_LOST, Why::WorkerLost)
            }
            _ => (ADMITTING_REMOTE_GONE, Why::CopyGone),
        };
        plan.actions.push(Action::Check {
            state: CheckState::Retry,
            message: previously(message, CheckState::Ready),
            why,
        });
        return plan;
    }
    // 6.
    if local.check == CheckState::Pending && local.cluster_name.is_none() && local.others_ready {
        plan.actions.push(Action::Dispatch);
    }
    plan
}

/// The copies to make and remove for `nominees` (indices into `workers`): a copy on each
/// reachable nominee without one ([`Action::Dispatch`]'s follow-up; `create` lists them), and
/// the copies of reachable workers no longer nominated removed.
pub fn sync_nominees(nominees: &[usize], workers: &[Worker<'_>]) -> (Vec<usize>, Vec<Action>) {
    let create = nominees
        .iter()
        .copied()
        .filter(|&i| workers[i].reachable && workers[i].copy.is_none())
        .collect();
    let remove = workers
        .iter()
        .enumerate()
        .filter(|(i, w)| w.reachable && w.copy.is_some() && !nominees.contains(i))
        .map(|(worker, _)| Action::Remove {
            worker,
            because: Removal::NotNominated,
        })
        .collect();
    (create, remove)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(check: CheckState, cluster_name: Option<&str>) -> Local<'_> {
        Local {
            check,
            holds_quota: true,
            finished: false,
            evicted: None,
            cluster_name,
            others_ready: true,
        }
    }

    fn worker(name: &str, copy: Option<Copy>) -> Worker<'_> {
        Worker {
            name,
            reachable: true,
            lost_since: None,
            copy,
        }
    }

    fn admitted(at: Millis) -> Option<Copy> {
        Some(Copy {
            admitted_at: Some(at),
            ..Copy::default()
        })
    }

    const PENDING: Option<Copy> = Some(Copy {
        admitted_at: None,
        finished: false,
        evicted: false,
        stale_priority: false,
        out_of_sync: false,
        stale_spec: false,
    });

    #[test]
    fn without_quota_every_reachable_copy_goes() {
        let mut l = local(CheckState::Pending, None);
        l.holds_quota = false;
        let mut lost = worker("c", PENDING);
        lost.reachable = false;
        let done = Some(Copy {
            finished: true,
            ..Copy::default()
        });
        let plan = reconcile(&l, &[worker("a", PENDING), worker("b", done), lost], 0, 1);
        assert_eq!(
            plan.actions,
            [
                Action::Remove {
                    worker: 0,
                    because: Removal::NoQuota
                },
                Action::Remove {
                    worker: 1,
                    because: Removal::NoQuota
                }
            ]
        );
    }

    #[test]
    fn the_earliest_admitted_copy_wins_and_the_others_go() {
        let workers = [
            worker("a", admitted(20)),
            worker("b", admitted(10)),
            worker("c", PENDING),
        ];
        let plan = reconcile(&local(CheckState::Pending, None), &workers, 30, 1);
        assert_eq!(
            plan.actions,
            [
                Action::Remove {
                    worker: 0,
                    because: Removal::AdmittedOn(1)
                },
                Action::Remove {
                    worker: 2,
                    because: Removal::AdmittedOn(1)
                },
                Action::SyncJob { worker: 1 },
                Action::Check {
                    state: CheckState::Ready,
                    message: "The workload was admitted on \"b\"".into(),
                    why: Why::Admitted
                },
                Action::Admitted { worker: 1 },
            ]
        );
        // At one instant, the first in the config's order.
        let tie = [worker("a", admitted(10)), worker("b", admitted(10))];
        let plan = reconcile(&local(CheckState::Pending, None), &tie, 10, 1);
        assert!(plan.actions.contains(&Action::Admitted { worker: 0 }));
        // Once Ready, only the job is synced.
        let plan = reconcile(&local(CheckState::Ready, Some("b")), &workers[1..2], 30, 1);
        assert_eq!(plan.actions, [Action::SyncJob { worker: 0 }]);
        // Evicted on the manager: the admitted copy is asked to deactivate, nothing else.
        let mut evicted = local(CheckState::Ready, Some("b"));
        evicted.evicted = Some("Preempted to accommodate a workload");
        let plan = reconcile(&evicted, &workers[1..2], 30, 1);
        assert_eq!(
            plan.actions,
            [Action::Deactivate {
                worker: 0,
                message: "Evicted on manager: Preempted to accommodate a workload".into()
            }]
        );
    }

    #[test]
    fn an_eviction_with_no_copy_in_reach_completes_and_a_recorded_worker_is_the_only_winner() {
        let mut evicted = local(CheckState::Pending, None);
        evicted.evicted = Some("Evicted due to AdmissionCheck");
        let mut lost = worker("a", admitted(10));
        lost.reachable = false;
        let plan = reconcile(&evicted, &[lost, worker("b", None)], 30, 1);
        assert_eq!(plan.actions, [Action::CompleteEviction]);
        // A copy in reach: it is synced instead (its job may still run).
        let evicted_copy = Some(Copy {
            evicted: true,
            ..Copy::default()
        });
        let plan = reconcile(&evicted, &[worker("a", evicted_copy)], 30, 1);
        assert_eq!(plan.actions, [Action::SyncJob { worker: 0 }]);
        // Re-dispatched to b: a's stale admitted copy, back, goes.
        let workers = [worker("a", admitted(10)), worker("b", admitted(20))];
        let plan = reconcile(&local(CheckState::Ready, Some("b")), &workers, 30, 1);
        assert_eq!(
            plan.actions,
            [
                Action::Remove {
                    worker: 0,
                    because: Removal::AdmittedOn(1)
                },
                Action::SyncJob { worker: 1 }
            ]
        );
    }

    #[test]
    fn a_copy_finished_out_of_sync_retries_the_check_and_never_finishes_the_workload() {
        let out_of_sync = Some(Copy {
            finished: true,
            out_of_sync: true,
            ..Copy::default()
        });
        let plan = reconcile(
            &local(CheckState::Ready, Some("a")),
            &[worker("a", out_of_sync)],
            0,
            1,
        );
        assert_eq!(
            plan.actions,
            [Action::Check {
                state: CheckState::Retry,
                message: "Remote workload on worker cluster \"a\" is out of sync with its user \
                          job, resetting for re-dispatch, Previously: \"Ready\""
                    .into(),
                why: Why::OutOfSync
            }]
        );
        let plan = reconcile(
            &local(CheckState::Pending, None),
            &[worker("a", out_of_sync)],
            0,
            1,
        );
        assert_eq!(plan.actions, []);
        // Evicted for it: nothing runs there, the eviction completes.
        let mut evicted = local(CheckState::Pending, None);
        evicted.evicted = Some("Evicted due to AdmissionCheck");
        let plan = reconcile(&evicted, &[worker("a", out_of_sync)], 0, 1);
        assert_eq!(plan.actions, [Action::CompleteEviction]);
    }

    #[test]
    fn a_copy_whose_priority_changed_is_updated_where_it_is() {
        let stale = Some(Copy {
            stale_priority: true,
            ..Copy::default()
        });
        let plan = reconcile(
            &local(CheckState::Pending, None),
            &[worker("a", stale), worker("b", PENDING)],
            0,
            1,
        );
        assert_eq!(
            plan.actions,
            [Action::UpdatePriority { worker: 0 }, Action::Dispatch]
        );
    }

    #[test]
    fn a_copy_made_from_another_spec_goes_even_the_admitted_one() {
        let stale = Some(Copy {
            stale_spec: true,
            ..Copy::default()
        });
        let plan = reconcile(
            &local(CheckState::Pending, None),
            &[worker("a", stale), worker("b", PENDING)],
            0,
            1,
        );
        assert_eq!(
            plan.actions,
            [
                Action::Remove {
                    worker: 0,
                    because: Removal::SpecChanged
                },
                Action::Dispatch
            ]
        );
        // Admitted there: it goes all the same (Kueue's step 5 comes before the admitting
        // remote), and the check learns its copy is gone.
        let admitted_stale = Some(Copy {
            admitted_at: Some(5),
            stale_spec: true,
            ..Copy::default()
        });
        let plan = reconcile(
            &local(CheckState::Ready, Some("a")),
            &[worker("a", admitted_stale)],
            10,
            1,
        );
        assert_eq!(
            plan.actions[0],
            Action::Remove {
                worker: 0,
                because: Removal::SpecChanged
            }
        );
        assert!(
            !plan
                .actions
                .iter()
                .any(|a| matches!(a, Action::SyncJob { .. })),
            "{:?}",
            plan.actions
        );
        assert!(
            plan.actions.iter().any(|a| matches!(
                a,
                Action::Check {
                    state: CheckState::Retry,
                    ..
                }
            )),
            "{:?}",
            plan.actions
        );
    }

    #[test]
    fn a_lost_worker_is_waited_for_then_retried_and_one_back_without_the_copy_at_once() {
        let mut lost = worker("a", None);
        lost.reachable = false;
        lost.lost_since = Some(100);
        let ready = local(CheckState::Ready, Some("a"));
        let plan = reconcile(&ready, &[lost], 150, 60);
        assert_eq!((plan.actions.len(), plan.wake_at), (0, Some(160)));
        let plan = reconcile(&ready, &[lost], 160, 60);
        assert_eq!(
            plan.actions,
            [Action::Check {
                state: CheckState::Retry,
                message: "Admitting remote lost, Previously: \"Ready\"".into(),
                why: Why::WorkerLost
            }]
        );
        let plan = reconcile(&ready, &[worker("a", None)], 150, 60);
        assert_eq!(
            plan.actions,
            [Action::Check {
                state: CheckState::Retry,
                message: "Admitting remote no longer exists, Previously: \"Ready\"".into(),
                why: Why::CopyGone
            }]
        );
    }

    #[test]
    fn an_evicted_copy_retries_only_once_ready_and_a_finished_one_finishes() {
        let evicted = Some(Copy {
            evicted: true,
            ..Copy::default()
        });
        let plan = reconcile(
            &local(CheckState::Ready, Some("a")),
            &[worker("a", evicted)],
            0,
            1,
        );
        assert_eq!(
            plan.actions,
            [Action::Check {
                state: CheckState::Retry,
                message: "Workload evicted on worker cluster: \"a\", resetting for re-admission. \
                          Previously: \"Ready\""
                    .into(),
                why: Why::EvictedOnWorker
            }]
        );
        let plan = reconcile(
            &local(CheckState::Pending, None),
            &[worker("a", evicted)],
            0,
            1,
        );
        assert_eq!(plan.actions, [Action::Dispatch]);
        let done = Some(Copy {
            finished: true,
            ..Copy::default()
        });
        let plan = reconcile(
            &local(CheckState::Ready, Some("a")),
            &[worker("a", done)],
            0,
            1,
        );
        assert_eq!(
            plan.actions,
            [Action::SyncJob { worker: 0 }, Action::Finish { worker: 0 }]
        );
        // Evicted on both sides: the job's status follows the copy's.
        let mut both = local(CheckState::Ready, Some("a"));
        both.evicted = Some("Preempted");
        let plan = reconcile(&both, &[worker("a", evicted)], 0, 1);
        assert_eq!(plan.actions, [Action::SyncJob { worker: 0 }]);
    }

    #[test]
    fn dispatch_waits_for_the_other_checks_and_nominees_get_copies() {
        let mut l = local(CheckState::Pending, None);
        l.others_ready = false;
        assert_eq!(reconcile(&l, &[worker("a", None)], 0, 1).actions, []);
        let mut unreachable = worker("c", None);
        unreachable.reachable = false;
        let workers = [worker("a", PENDING), worker("b", None), unreachable];
        let (create, remove) = sync_nominees(&[1, 2], &workers);
        assert_eq!(create, [1]);
        assert_eq!(
            remove,
            [Action::Remove {
                worker: 0,
                because: Removal::NotNominated
            }]
        );
    }
}
