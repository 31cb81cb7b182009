//! Shadow policies: a policy that receives the same requests as the enforced policy of its
//! extension point, whose answers are verified exactly like enforced answers, and never acted
//! on. Each decision is recorded as agreeing with what was enforced (after the scheduler's own
//! verification and fallback: what the cluster got), differing, refused as invalid, or failed
//! (trap, timeout, budget, load error); the first differing decisions are kept with what each
//! side decided.
//!
//! What counts as the same decision: ordering — the same order of a batch (by the sort keys)
//! or of a cycle's heads; preemption — the same set of victims; flavor assignment — the same
//! flavor; placement — the same pods on the same leaves (or both finding no fit).
//!
//! The scheduler calls [`Shadows`] after it decided; a shadow can change nothing it decides.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use super::verify;
use super::{
    FlavorAssignmentPolicy, FlavorChoiceRequest, HeadEntry, OrderingPolicy, PlacementAnswer,
    PlacementChoiceRequest, PlacementPolicy, PolicyContext, PolicyError, PreemptionPolicy,
    PreemptionRequest, QueuedWorkload, VictimSet,
};
use crate::cluster::{Cluster, WorkloadId};
use crate::queue::SortKey;
use crate::topology::Placement;

/// How many differing decisions each shadow keeps (the first ones).
pub const KEPT_DIFFERENCES: usize = 20;

/// One decision of a shadow against the enforced one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Agree,
    Differ,
    /// The shadow's answer failed verification.
    Invalid,
    /// The shadow failed: trapped, timed out, over its budget, not loadable.
    Failed,
    /// Not asked: the cycle's shadow budget was spent.
    Skipped,
}

/// One decision where a shadow and the enforced policy differed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// `ordering`, `preemption`, `flavor-assignment` or `placement`.
    pub extension: &'static str,
    /// The workload decided for (`namespace/name`); for a batch or a cycle's heads, the first
    /// workload whose position differs.
    pub workload: String,
    pub enforced: String,
    pub shadow: String,
}

/// What one shadow did, in total.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Figures {
    /// The extension point it shadows.
    pub extension: &'static str,
    pub decisions: u64,
    pub agree: u64,
    pub differ: u64,
    pub invalid: u64,
    /// Calls that failed (the enforced side would have fallen back to the built-in).
    pub fallback: u64,
    /// Decisions it was not asked about because the cycle's shadow budget was spent (not in
    /// `decisions`).
    pub skipped: u64,
    /// The first [`KEPT_DIFFERENCES`] differing decisions.
    pub differences: Vec<Difference>,
}

/// How many recent differing decisions each shadow keeps (the latest ones).
pub const RECENT_DIFFERENCES: usize = 20;

/// The figures of every shadow, by name, shared by every policy set that carries them; and the
/// time every shadow together may take per scheduling cycle.
#[derive(Debug, Default)]
pub struct ShadowLog {
    figures: Mutex<BTreeMap<String, Figures>>,
    /// The latest differing decisions per shadow, with when they happened (wall clock).
    recent: Mutex<BTreeMap<String, VecDeque<(SystemTime, Difference)>>>,
    /// Per cycle, the time all shadow calls together may take; past it they are skipped (and
    /// counted) until the next cycle. `None`: no limit (the simulator's default, so that its
    /// figures do not depend on the machine).
    budget: Option<Duration>,
    /// Nanoseconds spent in this cycle.
    spent: AtomicU64,
}

impl ShadowLog {
    /// A log whose shadows may take `budget` per scheduling cycle, all together.
    pub fn with_cycle_budget(budget: Option<Duration>) -> ShadowLog {
        ShadowLog {
            budget,
            ..ShadowLog::default()
        }
    }

    pub fn cycle_budget(&self) -> Option<Duration> {
        self.budget
    }

    /// Called when a scheduling cycle starts: the budget is whole again.
    pub fn begin_cycle(&self) {
        self.spent.store(0, Ordering::Relaxed);
    }

    /// The figures so far, by shadow name.
    pub fn figures(&self) -> BTreeMap<String, Figures> {
        self.figures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The latest differing decisions of `shadow`, oldest first.
    pub fn recent(&self, shadow: &str) -> Vec<(SystemTime, Difference)> {
        self.recent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(shadow)
            .map(|r| r.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Runs one shadow call if the cycle's budget allows it, counting its time; `None` (and
    /// the decision counted as skipped) when it does not.
    fn ask<T>(&self, shadow: &str, extension: &'static str, call: impl FnOnce() -> T) -> Option<T> {
        let Some(budget) = self.budget else {
            return Some(call());
        };
        if self.spent.load(Ordering::Relaxed) >= budget.as_nanos() as u64 {
            self.record(shadow, extension, Outcome::Skipped, || unreachable!());
            return None;
        }
        let start = Instant::now();
        let answer = call();
        self.spent
            .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        Some(answer)
    }

    pub(crate) fn record(
        &self,
        shadow: &str,
        extension: &'static str,
        outcome: Outcome,
        difference: impl FnOnce() -> Difference,
    ) {
        let mut all = self.figures.lock().unwrap_or_else(|e| e.into_inner());
        let f = all.entry(shadow.to_string()).or_insert_with(|| Figures {
            extension,
            ..Figures::default()
        });
        if outcome == Outcome::Skipped {
            f.skipped += 1;
            return;
        }
        f.decisions += 1;
        match outcome {
            Outcome::Agree => f.agree += 1,
            Outcome::Differ => {
                f.differ += 1;
                let d = difference();
                if f.differences.len() < KEPT_DIFFERENCES {
                    f.differences.push(d.clone());
                }
                drop(all);
                let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
                let r = recent.entry(shadow.to_string()).or_default();
                if r.len() == RECENT_DIFFERENCES {
                    r.pop_front();
                }
                r.push_back((SystemTime::now(), d));
            }
            Outcome::Invalid => f.invalid += 1,
            Outcome::Failed => f.fallback += 1,
            Outcome::Skipped => unreachable!("counted above"),
        }
    }
}

/// The shadow policies of a policy set, per extension point, and where they record.
#[derive(Clone, Default)]
pub struct Shadows {
    pub ordering: Vec<Arc<dyn OrderingPolicy>>,
    pub preemption: Vec<Arc<dyn PreemptionPolicy>>,
    pub flavors: Vec<Arc<dyn FlavorAssignmentPolicy>>,
    pub placement: Vec<Arc<dyn PlacementPolicy>>,
    pub log: Arc<ShadowLog>,
}

impl std::fmt::Debug for Shadows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fn names<T: ?Sized>(list: &[Arc<T>], id: fn(&T) -> super::PolicyRef) -> Vec<String> {
            list.iter().map(|p| id(p).name.to_string()).collect()
        }
        f.debug_struct("Shadows")
            .field("ordering", &names(&self.ordering, |p| p.id()))
            .field("preemption", &names(&self.preemption, |p| p.id()))
            .field("flavors", &names(&self.flavors, |p| p.id()))
            .field("placement", &names(&self.placement, |p| p.id()))
            .finish()
    }
}

fn key_of(cluster: &Cluster, id: WorkloadId) -> String {
    cluster.workload(id).key.clone()
}

/// A failed call: an answer the plugin's own host side refused is invalid, anything else a
/// failure.
fn failure(e: &PolicyError) -> Outcome {
    match e {
        PolicyError::Invalid(_) => Outcome::Invalid,
        _ => Outcome::Failed,
    }
}

/// Positions `0..n` in the order `keys` put them (stably).
fn order_by(keys: &[SortKey]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by_key(|&i| keys[i]);
    order
}

/// The first position where two orders differ.
fn first_difference(a: &[usize], b: &[usize]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y)
}

impl Shadows {
    pub fn is_empty(&self) -> bool {
        self.ordering.is_empty()
            && self.preemption.is_empty()
            && self.flavors.is_empty()
            && self.placement.is_empty()
    }

    /// The sort keys of a batch: the shadows' order of it against the enforced keys' order.
    pub fn sort_keys(
        &self,
        cx: &PolicyContext<'_>,
        batch: &[QueuedWorkload],
        enforced: &[SortKey],
    ) {
        if self.ordering.is_empty() || batch.is_empty() {
            return;
        }
        let want = order_by(enforced);
        for shadow in &self.ordering {
            let name = shadow.id().name;
            let Some(answer) = self
                .log
                .ask(&name, "ordering", || shadow.sort_keys(cx, batch))
            else {
                continue;
            };
            let (outcome, got) = match answer {
                Err(e) => (failure(&e), Vec::new()),
                Ok(keys) if verify::sort_keys(&keys, batch.len()).is_err() => {
                    (Outcome::Invalid, Vec::new())
                }
                Ok(keys) => {
                    let got = order_by(&keys);
                    let outcome = if got == want {
                        Outcome::Agree
                    } else {
                        Outcome::Differ
                    };
                    (outcome, got)
                }
            };
            self.log.record(&name, "ordering", outcome, || {
                order_difference(cx.cluster, &want, &got, |i| batch[i].workload)
            });
        }
    }

    /// The order of a cycle's heads.
    pub fn order_heads(&self, cx: &PolicyContext<'_>, heads: &[HeadEntry], enforced: &[usize]) {
        for shadow in &self.ordering {
            let name = shadow.id().name;
            let Some(answer) = self
                .log
                .ask(&name, "ordering", || shadow.order_heads(cx, heads))
            else {
                continue;
            };
            let (outcome, got) = match answer {
                Err(e) => (failure(&e), Vec::new()),
                Ok(order) if verify::head_order(&order, heads.len()).is_err() => {
                    (Outcome::Invalid, Vec::new())
                }
                Ok(order) if order == enforced => (Outcome::Agree, order),
                Ok(order) => (Outcome::Differ, order),
            };
            self.log.record(&name, "ordering", outcome, || {
                order_difference(cx.cluster, enforced, &got, |i| heads[i].workload)
            });
        }
    }

    /// The victims of one preemption attempt; `enforced` is what the scheduler acts on.
    pub fn preemption(&self, req: &PreemptionRequest<'_>, enforced: Option<&VictimSet>) {
        let victims = |set: Option<&VictimSet>| -> Vec<WorkloadId> {
            let mut v: Vec<WorkloadId> = set
                .map(|s| {
                    s.victims
                        .iter()
                        .map(|&i| req.candidates[i].workload)
                        .collect()
                })
                .unwrap_or_default();
            v.sort();
            v
        };
        let want = victims(enforced);
        for shadow in &self.preemption {
            let name = shadow.id().name;
            let Some(answer) = self
                .log
                .ask(&name, "preemption", || shadow.select_victims(req))
            else {
                continue;
            };
            let outcome = match &answer {
                Err(e) => failure(e),
                Ok(Some(set))
                    if verify::victims(req, set, shadow.allows_extra_victims()).is_err() =>
                {
                    Outcome::Invalid
                }
                Ok(set) if victims(set.as_ref()) == want => Outcome::Agree,
                Ok(_) => Outcome::Differ,
            };
            self.log.record(&name, "preemption", outcome, || {
                let describe = |v: &[WorkloadId]| -> String {
                    if v.is_empty() {
                        "no victims".into()
                    } else {
                        v.iter()
                            .map(|&w| key_of(req.cluster, w))
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                };
                let got = victims(answer.ok().flatten().as_ref());
                Difference {
                    extension: "preemption",
                    workload: key_of(req.cluster, req.preemptor),
                    enforced: describe(&want),
                    shadow: describe(&got),
                }
            });
        }
    }

    /// The flavor of one podSet's resource group.
    pub fn flavor(&self, req: &FlavorChoiceRequest<'_>, enforced: Option<usize>) {
        let name = |choice: Option<usize>| -> String {
            choice
                .and_then(|c| req.options.get(c).cloned().flatten())
                .map_or_else(
                    || "no flavor".into(),
                    |o| req.cluster.names.flavor_name(o.flavor).to_string(),
                )
        };
        for shadow in &self.flavors {
            let id = shadow.id().name;
            let Some(answer) = self
                .log
                .ask(&id, "flavor-assignment", || shadow.choose_flavor(req))
            else {
                continue;
            };
            let outcome = match &answer {
                Err(e) => failure(e),
                Ok(Some(c)) if verify::flavor_choice(req, *c).is_err() => Outcome::Invalid,
                Ok(choice) if *choice == enforced => Outcome::Agree,
                Ok(_) => Outcome::Differ,
            };
            self.log
                .record(&id, "flavor-assignment", outcome, || Difference {
                    extension: "flavor-assignment",
                    workload: format!(
                        "{} podSet {}",
                        key_of(req.cluster, req.workload),
                        req.pod_set
                    ),
                    enforced: name(enforced),
                    shadow: name(answer.ok().flatten()),
                });
        }
    }

    /// The placement of one TAS podSet (`enforced`: the pods per leaf, or no fit).
    pub fn placement(&self, req: &PlacementChoiceRequest<'_>, enforced: Option<&Placement>) {
        let describe = |p: Option<&Placement>| -> String {
            match p {
                None => "no fit".into(),
                Some(p) => {
                    let mut leaves = p.leaves.clone();
                    leaves.sort();
                    leaves
                        .iter()
                        .map(|&(leaf, pods)| format!("{}: {pods}", leaf_name(req, leaf)))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            }
        };
        let same = |a: Option<&Placement>, b: Option<&Placement>| -> bool {
            let norm = |p: Option<&Placement>| {
                p.map(|p| {
                    let mut leaves = p.leaves.clone();
                    leaves.sort();
                    (leaves, p.leader)
                })
            };
            norm(a) == norm(b)
        };
        for shadow in &self.placement {
            let name = shadow.id().name;
            let Some(answer) = self.log.ask(&name, "placement", || shadow.place(req)) else {
                continue;
            };
            let got = match &answer {
                Ok(PlacementAnswer::Placed(p)) => Some(p),
                _ => None,
            };
            let outcome = match &answer {
                Err(e) => failure(e),
                Ok(PlacementAnswer::Placed(p))
                    if crate::topology::verify(req.placement, p).is_err() =>
                {
                    Outcome::Invalid
                }
                Ok(_) if same(got, enforced) => Outcome::Agree,
                Ok(_) => Outcome::Differ,
            };
            self.log.record(&name, "placement", outcome, || Difference {
                extension: "placement",
                workload: format!(
                    "{} podSet {}",
                    key_of(req.cluster, req.workload),
                    req.pod_set
                ),
                enforced: describe(enforced),
                shadow: describe(got),
            });
        }
    }
}

/// A leaf by its last level's value (the node name, in a hostname-lowest topology).
fn leaf_name(req: &PlacementChoiceRequest<'_>, leaf: usize) -> String {
    let tree = req.placement.tree;
    tree.leaves
        .get(leaf)
        .and_then(|d| tree.domains[d.index()].values.last().cloned())
        .unwrap_or_else(|| format!("leaf {leaf}"))
}

/// Where two orders of the same workloads first differ.
fn order_difference(
    cluster: &Cluster,
    enforced: &[usize],
    shadow: &[usize],
    workload: impl Fn(usize) -> WorkloadId,
) -> Difference {
    let at = first_difference(enforced, shadow).unwrap_or(0);
    let name = |order: &[usize]| {
        order
            .get(at)
            .map_or_else(|| "nothing".into(), |&i| key_of(cluster, workload(i)))
    };
    Difference {
        extension: "ordering",
        workload: format!("position {}", at + 1),
        enforced: name(enforced),
        shadow: name(shadow),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn difference(i: usize) -> Difference {
        Difference {
            extension: "preemption",
            workload: format!("ns/w{i}"),
            enforced: "a".into(),
            shadow: "b".into(),
        }
    }

    #[test]
    fn the_first_and_the_latest_differences_are_kept() {
        let log = ShadowLog::default();
        for i in 0..KEPT_DIFFERENCES + 5 {
            log.record("s", "preemption", Outcome::Differ, || difference(i));
        }
        log.record("s", "preemption", Outcome::Agree, || unreachable!());
        let f = &log.figures()["s"];
        assert_eq!((f.decisions, f.differ, f.agree), (26, 25, 1));
        assert_eq!(f.differences.first().unwrap().workload, "ns/w0");
        assert_eq!(f.differences.len(), KEPT_DIFFERENCES);
        let recent = log.recent("s");
        assert_eq!(recent.len(), RECENT_DIFFERENCES);
        assert_eq!(recent.last().unwrap().1.workload, "ns/w24", "newest last");
        assert_eq!(recent.first().unwrap().1.workload, "ns/w5");
    }

    #[test]
    fn past_the_cycle_budget_shadows_are_skipped_and_counted_until_the_next_cycle() {
        let log = ShadowLog::with_cycle_budget(Some(Duration::from_millis(5)));
        let slow = || std::thread::sleep(Duration::from_millis(6));
        assert!(
            log.ask("s", "ordering", slow).is_some(),
            "the first call fits"
        );
        assert!(
            log.ask("s", "ordering", || ()).is_none(),
            "the budget is spent"
        );
        assert!(
            log.ask("t", "ordering", || ()).is_none(),
            "for every shadow"
        );
        let f = log.figures();
        assert_eq!((f["s"].skipped, f["s"].decisions), (1, 0));
        assert_eq!(f["t"].skipped, 1);
        log.begin_cycle();
        assert!(
            log.ask("s", "ordering", || ()).is_some(),
            "a new cycle, a new budget"
        );
        let unlimited = ShadowLog::default();
        for _ in 0..3 {
            assert!(unlimited.ask("s", "ordering", slow).is_some());
        }
    }
}
