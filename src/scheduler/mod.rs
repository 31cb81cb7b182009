//! The scheduler: Kueue's scheduling cycle over a [`Cluster`] and its pending queues, calling
//! the policy traits for ordering, flavor choice and victim selection.
//!
//! It knows neither wasmtime nor kube: drivers (`sim`, `k8s`) feed it events (`submit`,
//! `finish`, `complete_eviction`), run [`Scheduler::schedule`], and apply the returned
//! [`Decision`]s to the outside world.
//!
//! Invariants: one cycle computes on one snapshot of quota usage and never admits past what the
//! snapshot allows; a policy answer is verified before use and replaced by the built-in answer
//! when it fails verification; a workload is admitted at most once at a time.

mod assign;
pub mod budget;
mod cycle;
mod nodes;
mod placement;
mod preempt;
mod tas;
mod texts;

pub use assign::{
    Assignment, AssignmentMode, FlavorAssigned, NoFitReason, PodSetAssignment, Reasons,
};
pub use texts::Message;

use crate::cluster::{Admission, Cluster, CqId, EvictionReason, Millis, WorkloadId};
use crate::policy::{PolicyContext, PolicyError, PolicyRef, PolicySet, QueuedWorkload};
use crate::queue::{QueueManager, SortKey};

/// Something the scheduler decided, for drivers to apply and report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Quota reserved: the workload may start.
    Admitted {
        workload: WorkloadId,
        /// The admission the cluster now holds (shared, not a copy).
        admission: std::sync::Arc<Admission>,
        /// The flavor-assignment policy that chose its flavors.
        policy: PolicyRef,
        /// The ordering policy that placed it in the cycle's order.
        ordered_by: PolicyRef,
        /// The placement policy of each TAS podSet, in podSet order (empty without TAS).
        placed_by: Vec<PolicyRef>,
    },
    /// The victim must be evicted to make room for the preemptor.
    Preempted {
        workload: WorkloadId,
        preemptor: WorkloadId,
        reason: &'static str,
        policy: PolicyRef,
    },
    /// Not admitted this cycle. `parked` = moved aside as inadmissible until capacity changes.
    NotAdmitted {
        workload: WorkloadId,
        /// Kueue's pending reason (a fixed word: no allocation per head and cycle).
        reason: std::borrow::Cow<'static, str>,
        /// Kueue's message (shared with the decisions that repeat it).
        message: Message,
        parked: bool,
        policy: PolicyRef,
    },
}

impl Decision {
    /// The workload decided about (the victim of a preemption).
    pub fn workload(&self) -> WorkloadId {
        match self {
            Decision::Admitted { workload, .. }
            | Decision::Preempted { workload, .. }
            | Decision::NotAdmitted { workload, .. } => *workload,
        }
    }
}

/// What one cycle did.
#[derive(Debug, Clone, Default)]
pub struct CycleOutcome {
    pub cycle: u64,
    pub heads: usize,
    pub decisions: Vec<Decision>,
}

impl CycleOutcome {
    /// Whether the cycle admitted or preempted anything.
    pub fn made_progress(&self) -> bool {
        self.decisions
            .iter()
            .any(|d| !matches!(d, Decision::NotAdmitted { .. }))
    }
}

/// A policy answer that failed verification or a plugin call that failed, so the built-in
/// policy decided instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fallback {
    pub policy: PolicyRef,
    pub extension: &'static str,
    pub error: PolicyError,
}

pub struct Scheduler {
    pub cluster: Cluster,
    pub queues: QueueManager,
    default_policies: PolicySet,
    cq_policies: Vec<Option<PolicySet>>,
    cycle: u64,
    /// Submitted workloads waiting for their sort keys, computed in one batch per ordering
    /// policy before the next cycle.
    unkeyed: Vec<WorkloadId>,
    /// The same workloads, for constant-time membership.
    unkeyed_set: rustc_hash::FxHashSet<WorkloadId>,
    /// [`Scheduler::flush_submissions`]'s batches, one per ordering policy, kept empty between
    /// flushes.
    flush_groups: Vec<(CqId, Vec<QueuedWorkload>)>,
    /// Workloads back from an eviction: their `queued` time becomes the next flush's time.
    evicted: rustc_hash::FxHashSet<WorkloadId>,
    /// Fallbacks since the last [`Scheduler::take_fallbacks`].
    fallbacks: Vec<Fallback>,
    /// ClusterQueues whose parked workloads get another chance at the next cycle (capacity
    /// changed). Like Kueue's batched inadmissible requeue, this happens before the next cycle,
    /// not at once.
    retry: std::collections::BTreeSet<CqId>,
    /// Cohort trees (by root) where quota was released since the last cycle: their
    /// ClusterQueues' parked workloads get another chance, found among the queues that hold
    /// parked workloads (not by walking the tree on every release).
    retry_trees: rustc_hash::FxHashSet<crate::quota::NodeId>,
    /// The cycle's buffers, reused from one cycle to the next.
    scratch: cycle::Scratch,
    /// Preemption budgets: recent evictions per ClusterQueue, held preemptors' wake-ups.
    budgets: budget::Budgets,
    /// The last flavor-assignment message per pending workload, told again while its reasons
    /// stay the same.
    texts: texts::PendingTexts,
}

/// Why a workload could not be submitted to a queue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    #[error("{0}")]
    Unqueueable(String),
    #[error("workload is not active (spec.active: false)")]
    Inactive,
    #[error("workload already holds quota")]
    AlreadyAdmitted,
}

impl Scheduler {
    pub fn new(cluster: Cluster) -> Scheduler {
        let mut queues = QueueManager::new(cluster.cluster_queues.iter().map(|cq| cq.strategy));
        // The table by workload id holds every workload known now without growing again.
        queues.reserve_ids(cluster.workloads.len());
        let n = cluster.cluster_queues.len();
        Scheduler {
            cluster,
            queues,
            default_policies: PolicySet::builtin(),
            cq_policies: vec![None; n],
            cycle: 0,
            unkeyed: Vec::new(),
            unkeyed_set: Default::default(),
            flush_groups: Vec::new(),
            evicted: Default::default(),
            fallbacks: Vec::new(),
            retry: std::collections::BTreeSet::new(),
            retry_trees: Default::default(),
            scratch: Default::default(),
            budgets: budget::Budgets::default(),
            texts: Default::default(),
        }
    }

    /// The earliest time a preemptor held by its ClusterQueue's per-minute preemption budget
    /// may preempt: drivers run a cycle then (the simulator's clock stops there; the
    /// controller's passes run every second).
    pub fn next_wake_up(&self) -> Option<Millis> {
        self.budgets.next_wake_up()
    }

    /// Preemption budgets: the evictions of the last minute per ClusterQueue.
    pub fn budgets(&self) -> &budget::Budgets {
        &self.budgets
    }

    /// Keeps the preemption budgets' history of the scheduler this one replaces (a rebuild).
    pub fn carry_budgets_from(&mut self, old: &Scheduler) {
        self.budgets
            .carry_from(&old.budgets, &old.cluster, &self.cluster);
    }

    /// Replaces the default policies (for ClusterQueues without their own binding).
    pub fn set_default_policies(&mut self, policies: PolicySet) {
        self.default_policies = policies;
    }

    /// Binds policies to one ClusterQueue.
    pub fn set_cq_policies(&mut self, cq: CqId, policies: PolicySet) {
        self.cq_policies[cq.index()] = Some(policies);
    }

    /// Replaces every binding at once (a reload). Workloads queued in a ClusterQueue whose
    /// ordering policy changed are keyed again by the new one before the next cycle, so that
    /// one heap never mixes keys of two policies (parked ones get another chance too).
    pub fn install_policies(&mut self, default: PolicySet, per_cq: Vec<(CqId, PolicySet)>) {
        let before: Vec<PolicyRef> = (0..self.cq_policies.len())
            .map(|i| self.policies_for(CqId(i as u32)).ordering.id())
            .collect();
        self.default_policies = default;
        self.clear_cq_policies();
        for (cq, set) in per_cq {
            self.set_cq_policies(cq, set);
        }
        for (i, old) in before.into_iter().enumerate() {
            let cq = CqId(i as u32);
            if self.policies_for(cq).ordering.id() == old {
                continue;
            }
            for id in self.queues.queue(cq).ordered() {
                self.queues.remove(id);
                if self.unkeyed_set.insert(id) {
                    self.unkeyed.push(id);
                }
            }
        }
    }

    /// Removes every per-ClusterQueue binding.
    pub fn clear_cq_policies(&mut self) {
        self.cq_policies.iter_mut().for_each(|p| *p = None);
    }

    pub fn policies_for(&self, cq: CqId) -> &PolicySet {
        self.cq_policies[cq.index()]
            .as_ref()
            .unwrap_or(&self.default_policies)
    }

    pub fn cycle(&self) -> u64 {
        self.cycle
    }

    pub fn take_fallbacks(&mut self) -> Vec<Fallback> {
        std::mem::take(&mut self.fallbacks)
    }

    fn queued_workload(&self, id: WorkloadId, cq: CqId, queued: Millis) -> QueuedWorkload {
        let wl = self.cluster.workload(id);
        QueuedWorkload {
            workload: id,
            cluster_queue: cq,
            local_queue: wl.lq,
            priority: wl.effective_priority(),
            created: wl.created,
            queued,
        }
    }

    /// Sort keys for workloads of ClusterQueues that share one ordering policy: one call for
    /// the batch, the built-in keys when the call fails or the answer is malformed.
    fn sort_keys(&mut self, cq: CqId, batch: &[QueuedWorkload], now: Millis) -> Vec<SortKey> {
        let policy = self.policies_for(cq).ordering.clone();
        let cx = PolicyContext::of(&self.cluster, now);
        let span = tracing::debug_span!("policy", extension = "ordering", call = "sort-keys", plugin = %policy.id().name, batch = batch.len());
        let answer = span
            .in_scope(|| policy.sort_keys(&cx, batch))
            .and_then(|keys| {
                crate::policy::verify::sort_keys(&keys, batch.len())
                    .map(|()| keys)
                    .map_err(|e| {
                        let e = PolicyError::Invalid(e);
                        policy.refused(&e);
                        e
                    })
            });
        let keys = match answer {
            Ok(keys) => keys,
            Err(e) => {
                self.record_fallback(policy.id(), "ordering", e);
                let cx = PolicyContext::of(&self.cluster, now);
                batch
                    .iter()
                    .map(|q| crate::policy::builtin::sort_key(&cx, q))
                    .collect()
            }
        };
        let shadows = &self.policies_for(cq).shadows;
        if !shadows.ordering.is_empty() {
            shadows.sort_keys(&PolicyContext::of(&self.cluster, now), batch, &keys);
        }
        keys
    }

    /// Computes the sort keys of every submitted workload (one batch per ordering policy) and
    /// puts them in their queues. Runs at the start of every cycle.
    pub fn flush_submissions(&mut self, now: Millis) {
        if self.unkeyed.is_empty() {
            return;
        }
        // Both lists are kept from one flush to the next, emptied (their capacity stays).
        let mut ids = std::mem::take(&mut self.unkeyed);
        let mut groups = std::mem::take(&mut self.flush_groups);
        self.unkeyed_set.clear();
        // Group by the ordering policy that keys them, keeping submission order.
        let mut used = 0;
        for &id in &ids {
            let Some(cq) = self.cluster.workload(id).cluster_queue else {
                continue;
            };
            let policy = &self.policies_for(cq).ordering;
            let q = self.queued_workload(id, cq, self.cluster.workload(id).queued);
            match groups[..used]
                .iter_mut()
                .find(|(g, _)| std::sync::Arc::ptr_eq(&self.policies_for(*g).ordering, policy))
            {
                Some((_, batch)) => batch.push(q),
                None => {
                    if used == groups.len() {
                        groups.push((cq, Vec::new()));
                    }
                    groups[used].0 = cq;
                    groups[used].1.push(q);
                    used += 1;
                }
            }
        }
        for (cq, batch) in &mut groups[..used] {
            for q in batch.iter_mut() {
                if self.evicted.remove(&q.workload) {
                    self.cluster.workloads[q.workload.index()].queued = now;
                    q.queued = now;
                }
            }
            let keys = self.sort_keys(*cq, batch, now);
            for (q, key) in batch.iter().zip(keys) {
                self.queues.push(q.cluster_queue, q.workload, key);
            }
            batch.clear();
        }
        ids.clear();
        ids.append(&mut self.unkeyed);
        self.unkeyed = ids;
        self.flush_groups = groups;
    }

    /// Whether the workload waits in a queue (or for its sort key).
    pub fn is_pending(&self, id: WorkloadId) -> bool {
        self.queues.contains(id) || self.unkeyed_set.contains(&id)
    }

    /// Queues a workload in its ClusterQueue.
    /// Asks for what [`Scheduler::submit`] reads of `id`: its record up to and including
    /// `unqueueable`, what it holds, its queue slot (a hint, see [`wasq_alloc::prefetch`]). A
    /// driver submitting a list of arrivals asks a few ahead: at ten times Kueue's large scale
    /// each of the three tables is a read from memory per arrival (BENCHMARKS.md, stop 54).
    pub fn prefetch_submit(&self, id: WorkloadId) {
        if id.index() < self.cluster.workloads.len() {
            let wl = self.cluster.workload(id);
            let upto = std::mem::offset_of!(crate::cluster::WorkloadInfo, unqueueable)
                + size_of::<Option<Box<str>>>();
            wasq_alloc::prefetch_bytes(wl, upto);
            self.cluster.prefetch_holding(id);
            self.queues.prefetch(id);
        }
    }

    pub fn submit(&mut self, id: WorkloadId) -> Result<(), SubmitError> {
        let wl = self.cluster.workload(id);
        if let Some(reason) = &wl.unqueueable {
            return Err(SubmitError::Unqueueable(reason.to_string()));
        }
        if !wl.active {
            return Err(SubmitError::Inactive);
        }
        if self.cluster.admission(id).is_some() {
            return Err(SubmitError::AlreadyAdmitted);
        }
        if wl.cluster_queue.is_none() {
            return Err(SubmitError::Unqueueable("no ClusterQueue".into()));
        }
        self.queues.remove(id);
        if self.unkeyed_set.insert(id) {
            self.unkeyed.push(id);
        }
        Ok(())
    }

    /// A workload finished (or was deleted): its quota is released and parked workloads that
    /// share its cohort tree get another chance.
    pub fn finish(&mut self, id: WorkloadId) {
        self.dequeue(id);
        self.release(id);
    }

    /// Takes a workload out of its queue (or the batch waiting for sort keys), if it is there.
    pub fn dequeue(&mut self, id: WorkloadId) {
        self.queues.remove(id);
        if self.unkeyed_set.remove(&id) {
            self.unkeyed.retain(|&w| w != id);
        }
        self.evicted.remove(&id);
    }

    /// Releases what a workload holds (the cluster no longer shows its admission); parked
    /// workloads that share its cohort tree get another chance. Not counted as a requeue.
    pub fn release(&mut self, id: WorkloadId) {
        if let Ok(admission) = self.cluster.release(id) {
            self.retry_inadmissible(admission.cluster_queue);
            self.retry
                .extend(tas::sharing_nodes(&self.cluster, &admission));
        }
    }

    /// A workload left the cluster (deleted, finished, no longer valid): dequeued, its quota
    /// released, its record removed from the cluster (its handle is never reused).
    pub fn remove(&mut self, id: WorkloadId) {
        self.finish(id);
        let _ = self.cluster.remove_workload(id);
    }

    /// Replaces what the scheduler knows of a workload that holds no quota (its spec changed):
    /// its queue history (`created`, `queued`, requeue count and reason) is kept; the caller
    /// queues it again.
    pub fn replace(&mut self, id: WorkloadId, info: crate::cluster::WorkloadInfo) {
        self.dequeue(id);
        let old = &self.cluster.workloads[id.index()];
        // Plugin hosts cache a workload's identity per configuration: a new one is seen anew.
        let identity_changed = !old.same_identity(&info);
        let namespace_matches = self
            .cluster
            .namespace_matches(info.cluster_queue, &info.namespace);
        let info = crate::cluster::WorkloadInfo {
            id,
            created: old.created,
            queued: old.queued,
            requeue_count: old.requeue_count,
            requeue_reason: old.requeue_reason,
            namespace_matches,
            ..info
        };
        self.cluster.workloads[id.index()] = info;
        if identity_changed {
            self.cluster.config_changed();
        }
    }

    /// A preempted workload is gone: release its quota and queue it again.
    pub fn complete_eviction(&mut self, id: WorkloadId) {
        if let Ok(admission) = self.cluster.release(id) {
            self.retry_inadmissible(admission.cluster_queue);
            self.retry
                .extend(tas::sharing_nodes(&self.cluster, &admission));
        }
        let wl = &mut self.cluster.workloads[id.index()];
        wl.requeue_count += 1;
        wl.requeue_reason = Some(EvictionReason::Preempted);
        self.evicted.insert(id);
        // A workload that can no longer be queued simply stays pending outside any queue.
        let _ = self.submit(id);
    }

    /// An admission check or the PodsReady timeout sent the workload back (Kueue's eviction
    /// with reason `AdmissionCheck` or `PodsReadyTimeout`): its quota is released now. The
    /// driver queues it again with [`Scheduler::submit`] once the backoff has passed; it is
    /// then ordered by `queued_at` (Kueue's `GetQueueOrderTimestamp`: the eviction time, or the
    /// creation time under `requeuingStrategy.timestamp: Creation`), which becomes its
    /// queue-order timestamp (`created`) for every ordering policy, built-in and plugins alike.
    pub fn release_for_retry(&mut self, id: WorkloadId, queued_at: Millis, reason: EvictionReason) {
        if let Ok(admission) = self.cluster.release(id) {
            self.retry_inadmissible(admission.cluster_queue);
            self.retry
                .extend(tas::sharing_nodes(&self.cluster, &admission));
        }
        self.evicted.remove(&id);
        let wl = &mut self.cluster.workloads[id.index()];
        wl.queued = queued_at;
        wl.created = queued_at;
        wl.requeue_count += 1;
        wl.requeue_reason = Some(reason);
    }

    /// A rejected admission check, or too many PodsReady timeouts, deactivated the workload
    /// (`spec.active: false`): its quota is released and it is never queued again.
    pub fn deactivate(&mut self, id: WorkloadId) {
        self.finish(id);
        self.cluster.workloads[id.index()].active = false;
    }

    /// Parked workloads of every ClusterQueue in the same cohort tree go back to active before
    /// the next cycle. O(1) here; the next cycle visits the queues holding parked workloads.
    fn retry_inadmissible(&mut self, cq: CqId) {
        let node = self.cluster.cq(cq).node;
        self.retry_trees.insert(self.cluster.tree.root(node));
    }

    /// The ClusterQueues with parked workloads in the trees of [`Scheduler::retry_trees`],
    /// added to `retry` (then forgets those trees).
    fn parked_in_retry_trees(&mut self, retry: &mut std::collections::BTreeSet<CqId>) {
        if self.retry_trees.is_empty() {
            return;
        }
        let (cluster, trees) = (&self.cluster, &self.retry_trees);
        retry.extend(
            self.queues
                .with_parked()
                .filter(|&cq| trees.contains(&cluster.tree.root(cluster.cq(cq).node))),
        );
        self.retry_trees.clear();
    }

    /// Runs one scheduling cycle at time `now`.
    pub fn schedule(&mut self, now: Millis) -> CycleOutcome {
        self.cycle += 1;
        self.cluster.cycle = self.cycle;
        // Every policy set shares its shadows' log: one reset gives them the cycle's budget.
        self.default_policies.shadows.log.begin_cycle();
        let mut retry = std::mem::take(&mut self.retry);
        self.parked_in_retry_trees(&mut retry);
        // Preemptors held by a per-minute budget that has refilled get another chance.
        retry.extend(self.budgets.take_due(now));
        self.queues.requeue_inadmissible(retry.iter().copied());
        self.sample_local_queue_usage(now);
        self.flush_submissions(now);
        self.rekey_by_local_queue_usage(now);
        cycle::run(self, now)
    }

    /// Hands a cycle's outcome back once the driver has applied it: its decisions list (empty
    /// or not) is cleared and the next cycle writes into it, so that the steady state allocates
    /// no new list per cycle.
    pub fn recycle(&mut self, outcome: CycleOutcome) {
        let mut decisions = outcome.decisions;
        decisions.clear();
        if decisions.capacity() > self.scratch.decisions.capacity() {
            self.scratch.decisions = decisions;
        }
    }

    /// Admission fair sharing: decays LocalQueue usage when a sample is due.
    fn sample_local_queue_usage(&mut self, now: Millis) {
        let Some(afs) = &self.cluster.settings.admission_fair_sharing else {
            return;
        };
        if !self.cluster.lq_usage.due(now, afs) {
            return;
        }
        self.take_local_queue_sample(now);
    }

    /// Admission fair sharing on its own clock, as Kueue's LocalQueue controller samples every
    /// `usageSamplingInterval` whatever the scheduler does: the samples due up to `to` since
    /// the last one, with what is admitted now. A driver calls it before its clock moves to
    /// `to` (the simulator at each event, the controller every pass), so what LocalQueues held
    /// between two cycles is counted. Samples of an unchanged usage at equal intervals decay
    /// as one sample over their whole span, so the last of them alone is taken.
    pub fn sample_local_queue_usage_until(&mut self, to: Millis) {
        let Some(afs) = &self.cluster.settings.admission_fair_sharing else {
            return;
        };
        let (Some(last), every) = (self.cluster.lq_usage.last_sample(), afs.sampling_interval)
        else {
            return;
        };
        if every <= 0 || to - last < every {
            return;
        }
        self.take_local_queue_sample(last + (to - last) / every * every);
    }

    fn take_local_queue_sample(&mut self, at: Millis) {
        let Some(afs) = &self.cluster.settings.admission_fair_sharing else {
            return;
        };
        let mut admitted = Vec::new();
        for cq in &self.cluster.cluster_queues {
            for row in self.cluster.admitted_rows(cq.id) {
                let Some(lq) = row.lq else {
                    continue;
                };
                for &(fr, v) in &row.usage {
                    admitted.push((lq, self.cluster.names.fr_parts(fr).1, v));
                }
            }
        }
        let afs = afs.clone();
        self.cluster.lq_usage.sample(at, &afs, &admitted);
    }

    /// Admission fair sharing: after LocalQueue usage changed, the workloads of those
    /// LocalQueues pending in ClusterQueues with `admissionScope` are keyed again by orderings
    /// that read it (Kueue's heap compares that usage live).
    fn rekey_by_local_queue_usage(&mut self, now: Millis) {
        let changed = self.cluster.lq_usage.take_changed();
        if changed == crate::cluster::Changed::Nothing {
            return;
        }
        for i in 0..self.cluster.cluster_queues.len() {
            let cq = CqId(i as u32);
            if !self.cluster.cq(cq).admission_fair_sharing {
                continue;
            }
            let cx = PolicyContext::of(&self.cluster, now);
            if !self.policies_for(cq).ordering.needs(&cx).local_queue_usage {
                continue;
            }
            let batch: Vec<QueuedWorkload> = self
                .queues
                .queue(cq)
                .ordered()
                .into_iter()
                .filter(|&id| {
                    self.cluster
                        .workload(id)
                        .lq
                        .is_some_and(|lq| changed.includes(lq))
                })
                .map(|id| self.queued_workload(id, cq, self.cluster.workload(id).queued))
                .collect();
            if batch.is_empty() {
                continue;
            }
            let keys = self.sort_keys(cq, &batch, now);
            for (q, key) in batch.iter().zip(keys) {
                self.queues.rekey(q.workload, key);
            }
        }
    }

    fn record_fallback(&mut self, policy: PolicyRef, extension: &'static str, error: PolicyError) {
        tracing::warn!(
            plugin = %policy.name,
            digest = %policy.digest,
            extension,
            reason = error.reason(),
            error = %error,
            "policy failed; the built-in policy decides"
        );
        self.fallbacks.push(Fallback {
            policy,
            extension,
            error,
        });
    }
}
