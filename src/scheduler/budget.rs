//! Preemption budgets, enforced by the host on every victim set — the built-in's and a
//! plugin's alike, after verification: a ClusterQueue's preemptor may not evict more than
//! `max-victims-per-preemptor` workloads, and its preemptors together not more than
//! `max-evictions-per-minute` in any 60 seconds of scheduler time (the `now` each cycle runs
//! at). Settings: [`crate::cluster::budget`].
//!
//! What counts: a victim the preemptor's decision evicts, at the time of that cycle. A victim
//! already being evicted (chosen by an earlier preemptor) costs nothing more.
//!
//! Where it applies: inside the victim search (`preempt.rs`), so a victim set over the
//! budget is "no victims" for the preemption oracle too. Flavor assignment then treats that
//! flavor as it treats one without preemption candidates and tries the next flavor (Kueue's
//! fungibility), partial admission tries fewer pods, and a preemptor left with nothing waits:
//! NotAdmitted with reason [`WAIT_REASON`], parked as Kueue parks a preemptor without
//! candidates, and back in its queue when capacity changes or — per-minute budget — when the
//! budget has refilled enough for it ([`Budgets::next_wake_up`]).

use std::collections::{BTreeMap, VecDeque};

use crate::cluster::budget::{MAX_EVICTIONS_PER_MINUTE, MAX_VICTIMS_PER_PREEMPTOR};
use crate::cluster::{Cluster, CqId, Millis};

/// The sliding window of `max-evictions-per-minute`.
pub const WINDOW_MS: Millis = 60_000;

/// The reason (a `QuotaReserved=False` condition's reason) of a preemptor held by a budget.
pub const WAIT_REASON: &str = "WaitingForPreemptionBudget";

/// Which limit holds a preemptor back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// `max-victims-per-preemptor`.
    PerPreemptor { max: u32 },
    /// `max-evictions-per-minute`, with the evictions of the last 60 s and when enough of them
    /// will have left the window (`None`: never, the preemptor needs more than the whole budget).
    PerMinute {
        max: u32,
        recent: u32,
        refill_at: Option<Millis>,
    },
}

/// A preemptor whose victims the budget does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hold {
    pub cluster_queue: CqId,
    /// Evictions its victim set would cause.
    pub needed: u32,
    pub limit: Limit,
}

impl Hold {
    /// When the per-minute budget allows it again, if ever.
    pub fn refill_at(&self) -> Option<Millis> {
        match self.limit {
            Limit::PerMinute { refill_at, .. } => refill_at,
            Limit::PerPreemptor { .. } => None,
        }
    }

    /// The message of the preemptor's condition. It names no time, so that it changes only
    /// when the situation does.
    pub fn message(&self, cluster: &Cluster) -> String {
        let cq = &cluster.cq(self.cluster_queue).name;
        let needs = match self.needed {
            1 => "needs 1 victim".to_string(),
            n => format!("needs {n} victims"),
        };
        match self.limit {
            Limit::PerPreemptor { max } => format!(
                "couldn't preempt: {needs}, ClusterQueue {cq} allows at most {max} per preemptor ({MAX_VICTIMS_PER_PREEMPTOR})"
            ),
            Limit::PerMinute { max, .. } if self.needed > max => format!(
                "couldn't preempt: {needs}, ClusterQueue {cq} allows at most {max} evictions per minute ({MAX_EVICTIONS_PER_MINUTE})"
            ),
            Limit::PerMinute { max, recent, .. } => format!(
                "couldn't preempt: {needs}, ClusterQueue {cq} allows {max} {} per minute and its preemptors caused {recent} in the last minute ({MAX_EVICTIONS_PER_MINUTE})",
                if max == 1 { "eviction" } else { "evictions" }
            ),
        }
    }
}

/// The evictions each ClusterQueue's preemptors caused within the window, and when held
/// preemptors are due to be retried. Kept by the scheduler across cycles (and by the
/// controller across rebuilds, [`Budgets::carry_from`]).
#[derive(Debug, Clone, Default)]
pub struct Budgets {
    /// Per ClusterQueue (by index): one time per eviction, oldest first.
    evictions: Vec<VecDeque<Millis>>,
    /// ClusterQueues with a preemptor held by its per-minute budget: when to retry it.
    wake_ups: BTreeMap<CqId, Millis>,
}

impl Budgets {
    /// Whether a victim set causing `needed` evictions now is within the ClusterQueue's
    /// budget; the hold when it is not.
    pub fn check(&self, cluster: &Cluster, cq: CqId, now: Millis, needed: u32) -> Option<Hold> {
        let budget = cluster.cq(cq).budget;
        if needed == 0 || budget.is_unlimited() {
            return None;
        }
        let hold = |limit| {
            Some(Hold {
                cluster_queue: cq,
                needed,
                limit,
            })
        };
        if let Some(max) = budget.max_victims_per_preemptor
            && needed > max
        {
            return hold(Limit::PerPreemptor { max });
        }
        let max = budget.max_evictions_per_minute?;
        let (times, start) = self.window(cq, now);
        let recent = (times.len() - start) as u32;
        if recent.saturating_add(needed) <= max {
            return None;
        }
        // The oldest `recent + needed - max` evictions must leave the window first.
        let refill_at = (needed <= max).then(|| {
            let leave = (recent + needed - max) as usize;
            times[start + leave - 1] + WINDOW_MS
        });
        hold(Limit::PerMinute {
            max,
            recent,
            refill_at,
        })
    }

    /// The ClusterQueue's eviction times (oldest first) and the index of the first one within
    /// the window ending at `now` (no copy: this runs in every victim search).
    fn window(&self, cq: CqId, now: Millis) -> (&VecDeque<Millis>, usize) {
        static NONE: VecDeque<Millis> = VecDeque::new();
        let times = self.evictions.get(cq.index()).unwrap_or(&NONE);
        (times, times.partition_point(|&t| t <= now - WINDOW_MS))
    }

    /// Evictions the ClusterQueue's preemptors caused within the window ending at `now`.
    pub fn recent(&self, cq: CqId, now: Millis) -> u32 {
        let (times, start) = self.window(cq, now);
        (times.len() - start) as u32
    }

    /// `n` evictions caused by a preemptor of `cq` at `now`.
    pub fn record(&mut self, cq: CqId, now: Millis, n: u32) {
        if n == 0 {
            return;
        }
        if self.evictions.len() <= cq.index() {
            self.evictions.resize_with(cq.index() + 1, VecDeque::new);
        }
        let q = &mut self.evictions[cq.index()];
        while q.front().is_some_and(|&t| t <= now - WINDOW_MS) {
            q.pop_front();
        }
        // Times arrive in order; a clock that stepped back is still kept sorted.
        let at = q.partition_point(|&t| t <= now);
        for _ in 0..n {
            q.insert(at, now);
        }
    }

    /// A preemptor of `cq` is held until `at`.
    pub fn wake_at(&mut self, cq: CqId, at: Millis) {
        let e = self.wake_ups.entry(cq).or_insert(at);
        *e = (*e).min(at);
    }

    /// The ClusterQueues whose held preemptors are due at `now` (removed from the schedule).
    pub fn take_due(&mut self, now: Millis) -> Vec<CqId> {
        let due: Vec<CqId> = self
            .wake_ups
            .iter()
            .filter(|&(_, &t)| t <= now)
            .map(|(&cq, _)| cq)
            .collect();
        for cq in &due {
            self.wake_ups.remove(cq);
        }
        due
    }

    /// The earliest time a held preemptor is due.
    pub fn next_wake_up(&self) -> Option<Millis> {
        self.wake_ups.values().copied().min()
    }

    /// Takes the eviction history of `old` (built for `old_cluster`) over to this scheduler's
    /// ClusterQueues by name: a rebuild must not refill every budget.
    pub fn carry_from(&mut self, old: &Budgets, old_cluster: &Cluster, cluster: &Cluster) {
        for (i, q) in old.evictions.iter().enumerate() {
            let Some(old_cq) = old_cluster.cluster_queues.get(i) else {
                continue;
            };
            let Some(&cq) = cluster.cq_by_name.get(&old_cq.name) else {
                continue;
            };
            if self.evictions.len() <= cq.index() {
                self.evictions.resize_with(cq.index() + 1, VecDeque::new);
            }
            self.evictions[cq.index()] = q.clone();
        }
        for (old_cq, &at) in &old.wake_ups {
            if let Some(old_cq) = old_cluster.cluster_queues.get(old_cq.index())
                && let Some(&cq) = cluster.cq_by_name.get(&old_cq.name)
            {
                self.wake_at(cq, at);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::load::load_str;
    use crate::cluster::build_cluster;

    fn cluster(annotations: &str) -> Cluster {
        let text = format!(
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {{name: f}}\n---\n\
             apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\n\
             metadata: {{name: cq-a, annotations: {{{annotations}}}}}\n\
             spec:\n  namespaceSelector: {{}}\n  resourceGroups:\n  - coveredResources: [cpu]\n    \
             flavors: [{{name: f, resources: [{{name: cpu, nominalQuota: 4}}]}}]\n"
        );
        let m = load_str(std::path::Path::new("test.yaml"), &text).expect("loads");
        build_cluster(&m, &|_| 0, 0).expect("builds")
    }

    #[test]
    fn no_budget_holds_nothing() {
        let c = cluster("");
        let b = Budgets::default();
        assert_eq!(b.check(&c, CqId(0), 0, 1000), None);
    }

    #[test]
    fn the_per_preemptor_cap_counts_victims() {
        let c = cluster("policy.wasq.dev/max-victims-per-preemptor: '2'");
        let b = Budgets::default();
        assert_eq!(b.check(&c, CqId(0), 0, 2), None);
        let hold = b.check(&c, CqId(0), 0, 3).expect("held");
        assert_eq!(hold.limit, Limit::PerPreemptor { max: 2 });
        assert_eq!(hold.refill_at(), None);
        assert_eq!(
            hold.message(&c),
            "couldn't preempt: needs 3 victims, ClusterQueue cq-a allows at most 2 per preemptor (policy.wasq.dev/max-victims-per-preemptor)"
        );
    }

    #[test]
    fn the_window_slides_and_says_when_it_refills() {
        let c = cluster("policy.wasq.dev/max-evictions-per-minute: '3'");
        let mut b = Budgets::default();
        b.record(CqId(0), 1_000, 2);
        b.record(CqId(0), 20_000, 1);
        assert_eq!(b.recent(CqId(0), 20_000), 3);
        // One more needs the first two to leave: at 61 s.
        let hold = b.check(&c, CqId(0), 30_000, 1).expect("held");
        assert_eq!(hold.refill_at(), Some(61_000));
        // Three more need all three gone: at 80 s.
        assert_eq!(
            b.check(&c, CqId(0), 30_000, 3).and_then(|h| h.refill_at()),
            Some(80_000)
        );
        assert_eq!(b.check(&c, CqId(0), 61_000, 1), None);
        assert_eq!(b.recent(CqId(0), 61_000), 1);
        // More than the whole budget: never.
        let never = b.check(&c, CqId(0), 90_000, 4).expect("held");
        assert_eq!(never.refill_at(), None);
        assert!(
            never
                .message(&c)
                .contains("allows at most 3 evictions per minute")
        );
    }

    #[test]
    fn wake_ups_are_taken_once_due() {
        let mut b = Budgets::default();
        b.wake_at(CqId(1), 5_000);
        b.wake_at(CqId(1), 4_000);
        b.wake_at(CqId(0), 9_000);
        assert_eq!(b.next_wake_up(), Some(4_000));
        assert_eq!(b.take_due(4_999), vec![CqId(1)]);
        assert_eq!(b.next_wake_up(), Some(9_000));
        assert!(b.take_due(5_000).is_empty());
    }
}
