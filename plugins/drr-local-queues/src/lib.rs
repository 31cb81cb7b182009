//! Admission ordering that shares a ClusterQueue fairly between its LocalQueues: fair queueing
//! in the style of deficit round robin, so that one LocalQueue flooding its ClusterQueue does
//! not hold back the others.
//!
//! Kueue orders a ClusterQueue's queue by priority, then creation time: a namespace that submits
//! a hundred jobs first is served a hundred times before a namespace that submits one job a
//! second later (admission fair sharing changes that only from usage sampled over time). This
//! plugin interleaves the LocalQueues instead, each in proportion to its `fairSharing.weight`,
//! with start-time fair queueing over a virtual time, computed once per workload when it is
//! queued (the host keeps its heaps by these keys).
//!
//! # The rule
//!
//! For a workload `w` of LocalQueue `q` in ClusterQueue `c`, when the host asks for its key:
//!
//! - `cost(w)` = Σ over podSets of `count × per-pod request` of the resource (setting
//!   `resource`, default `cpu`), in milli-units; 0 when it requests none;
//! - `inc(w)` = `cost(w) × 1000 / weight(q)`, where `weight(q)` is the LocalQueue's
//!   `fair-weight` in milli-units (`spec.fairSharing.weight`, 1 when unset): the cost per unit
//!   of weight, in milli-units (a weight ≤ 0 makes it +∞, saturated);
//! - `S(w) = max(F(q), V(c))`, the virtual start; then `F(q) ← S(w) + inc(w)`, the LocalQueue's
//!   virtual finish (starting at 0);
//! - the key is `(−priority, F(q), creation time)`: priorities stay strict tiers (a workload
//!   never waits behind one of lower priority), and within a tier the smallest virtual finish
//!   goes first, older first on a tie.
//!
//! `V(c)` is the ClusterQueue's virtual time, SFQ's "start tag of the workload in service". The
//! plugin is not told which heads are admitted, so it asks for `tree-usage` and infers it: at
//! every `order-heads` call it walks the heads in the order it answers, and each head that fits
//! its ClusterQueue's available quota (borrowing allowed) once the heads before it took their
//! `usage` counts as admitted: `V(c) ← max(V(c), S(h))` if this instance keyed `h`, and its
//! usage is added. A head that does not fit — it waits, or must first preempt — does not move
//! `V` (under BestEffortFIFO the host shows each waiting workload as a head in turn; those must
//! not count as served). A LocalQueue that was idle therefore starts at the virtual time the
//! ClusterQueue has reached: it gets its share from now on, no credit for the time it did not
//! ask. Heads of LocalQueues with weight ≤ 0 do not move `V`.
//!
//! Example, equal weights, 1-cpu workloads, all queued in one batch: LocalQueue `flood` queues
//! f1…f4, then `small` queues s1, s2; keys (in cpu per weight) f1 = 1, f2 = 2, f3 = 3, f4 = 4,
//! s1 = 1, s2 = 2: the queue is f1, s1, f2, s2, f3, f4, where Kueue's is f1…f4, s1, s2. With
//! `small` at weight 2, s1 = 0.5 and s2 = 1: s1, f1, s2, f2, …
//!
//! Workloads without a LocalQueue form one flow per ClusterQueue, with weight 1. Workloads
//! requeued after an eviction are keyed again, as new arrivals (they will consume again).
//!
//! # Cycle order
//!
//! Across ClusterQueues, Kueue's: the classical order (second passes first, lower borrowing
//! level, higher priority, older), or fair sharing's tournament when Kueue's configuration
//! turns fair sharing on. The order is speculative, as `tree-usage` requires (the classical
//! order does not depend on usage; the tournament is Kueue's speculative one).
//!
//! # State
//!
//! `F` per LocalQueue (by namespace/name), `V` per ClusterQueue (by name) and the start tag of
//! each workload keyed (until `V` passes it) live in the plugin instance: **a fresh instance —
//! after a reload, a restart or a trap — starts every virtual time at 0**, so workloads queued
//! right after may go before some keyed by the previous instance until the virtual times catch
//! up. (When the ordering binding of a ClusterQueue changes, the host keys all its queued
//! workloads again, in queue order.)
//!
//! # Settings (`pluginSettings: {drr-local-queues: {...}}` in the wasq `--config` file)
//!
//! - `resource`: the resource whose request is a workload's cost, by name (default `cpu`).
//!   Choose what is scarce: `nvidia.com/gpu` on a GPU cluster. With a resource the catalog does
//!   not know, every cost is 0 and the order is Kueue's.

use std::collections::BTreeMap;

use wasq_policy_sdk::prelude::*;
use wasq_policy_sdk::types::ResourceId;

/// The setting naming the resource a workload's cost is counted in.
pub const RESOURCE_SETTING: &str = "resource";
/// The resource counted by default.
pub const DEFAULT_RESOURCE: &str = "cpu";

/// Fair queueing across the LocalQueues of each ClusterQueue.
#[derive(Debug)]
pub struct DrrLocalQueues {
    resource: String,
    resource_id: Option<ResourceId>,
    /// Virtual finish per flow: `namespace/name` of a LocalQueue, or `/<ClusterQueue>` for the
    /// workloads without one.
    finish: BTreeMap<String, i64>,
    /// Virtual time per ClusterQueue name.
    vtime: BTreeMap<String, i64>,
    /// Workload → (ClusterQueue name, virtual start), for workloads keyed by this instance
    /// whose start the ClusterQueue's virtual time has not reached yet.
    starts: BTreeMap<WorkloadId, (String, i64)>,
}

impl Default for DrrLocalQueues {
    fn default() -> DrrLocalQueues {
        DrrLocalQueues {
            resource: DEFAULT_RESOURCE.to_string(),
            resource_id: None,
            finish: BTreeMap::new(),
            vtime: BTreeMap::new(),
            starts: BTreeMap::new(),
        }
    }
}

/// `cost × 1000 / weight` (both milli-units), saturated; `i64::MAX` for a weight ≤ 0 and a
/// positive cost.
pub fn increment(cost: Quantity, weight_milli: Quantity) -> i64 {
    if cost <= 0 {
        0
    } else if weight_milli <= 0 {
        i64::MAX
    } else {
        let v = i128::from(cost) * 1000 / i128::from(weight_milli);
        i64::try_from(v).unwrap_or(i64::MAX)
    }
}

impl DrrLocalQueues {
    /// The resource counted.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// A workload's cost: its total request of the resource (count × per pod, every podSet),
    /// in milli-units.
    pub fn cost(&self, workload: &Workload) -> Quantity {
        let Some(r) = self.resource_id else {
            return 0;
        };
        workload
            .pod_sets()
            .iter()
            .flat_map(|ps| {
                ps.per_pod
                    .iter()
                    .filter(move |a| a.resource == r)
                    .map(move |a| a.amount.saturating_mul(i64::from(ps.count)))
            })
            .fold(0, Quantity::saturating_add)
    }

    /// A LocalQueue's virtual finish (`namespace/name`).
    pub fn virtual_finish(&self, local_queue: &str) -> i64 {
        self.finish.get(local_queue).copied().unwrap_or(0)
    }

    /// A ClusterQueue's virtual time.
    pub fn virtual_time(&self, cluster_queue: &str) -> i64 {
        self.vtime.get(cluster_queue).copied().unwrap_or(0)
    }

    /// The flow a workload belongs to and its weight.
    fn flow(catalog: &Catalog, workload: &Workload, cq: &str) -> (String, Quantity) {
        match workload.local_queue.and_then(|lq| catalog.local_queue(lq)) {
            Some(lq) => (format!("{}/{}", lq.namespace, lq.name), lq.fair_weight),
            None => (format!("/{cq}"), 1000),
        }
    }
}

impl OrderingPolicy for DrrLocalQueues {
    fn catalog_changed(&mut self, catalog: &Catalog) {
        self.resource = catalog
            .setting(RESOURCE_SETTING)
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .unwrap_or(DEFAULT_RESOURCE)
            .to_string();
        self.resource_id = catalog
            .resources
            .iter()
            .position(|r| *r == self.resource)
            .map(|i| i as ResourceId);
        if self.resource_id.is_none() && catalog.setting(RESOURCE_SETTING).is_some() {
            wasq_policy_sdk::warn!(
                "setting {RESOURCE_SETTING}={:?}: no such resource; every cost is 0",
                self.resource
            );
        }
    }

    fn needs(&self, _: &Catalog) -> Needs {
        // A workload's cost is what its podSets request.
        Needs::TREE_USAGE | Needs::POD_SETS
    }

    fn sort_key(&mut self, catalog: &Catalog, workload: &Workload, _: Millis) -> SortKey {
        let cq = catalog
            .cluster_queue(workload.cluster_queue)
            .map_or_else(String::new, |c| c.name.clone());
        let (flow, weight) = DrrLocalQueues::flow(catalog, workload, &cq);
        let inc = increment(self.cost(workload), weight);
        let start = self.virtual_finish(&flow).max(self.virtual_time(&cq));
        let finish = start.saturating_add(inc);
        self.finish.insert(flow, finish);
        if weight > 0 {
            self.starts.insert(workload.id, (cq, start));
        } else {
            self.starts.remove(&workload.id);
        }
        SortKey {
            primary: workload.priority.wrapping_neg(),
            secondary: finish,
            tertiary: workload.created,
        }
    }

    fn order_heads_with_usage(
        &mut self,
        catalog: &Catalog,
        heads: &[Head],
        usage: &QuotaView<'_>,
        _: Millis,
    ) -> Vec<u32> {
        let order = kueue::order_heads_for(catalog, heads, usage);
        let mut view = usage.clone();
        let mut advanced = false;
        for &i in &order {
            let h = &heads[i as usize];
            let Some(node) = catalog.cluster_queue_node(h.cluster_queue) else {
                continue;
            };
            if !view.fits(node, &h.usage, true) {
                continue;
            }
            view.add_workload(node, &h.usage);
            if let Some((cq, start)) = self.starts.get(&h.workload) {
                let v = self.vtime.entry(cq.clone()).or_insert(0);
                if *start > *v {
                    *v = *start;
                    advanced = true;
                }
            }
        }
        if advanced {
            // Starts the virtual time has reached can no longer move it.
            let vtime = &self.vtime;
            self.starts
                .retain(|_, (cq, start)| *start > vtime.get(cq.as_str()).copied().unwrap_or(0));
        }
        order
    }
}

wasq_policy_sdk::export_ordering!(DrrLocalQueues);

#[cfg(test)]
mod tests {
    use super::*;
    use wasq_policy_sdk::testing::{self, CatalogBuilder, usage_table};
    use wasq_policy_sdk::types::{FairSharingStrategy, PodSet, ResourceAmount};

    /// ClusterQueue "shared" (cq 0, node 0, 2 cpu) with LocalQueues 0 = team-a/flood and
    /// 1 = team-b/small (weight `small_weight`), and ClusterQueue "other" (cq 1, node 1) with
    /// LocalQueue 2 = team-c/c. Flavor-resources: 0 = (f0, cpu), 1 = (f0, memory).
    fn catalog(small_weight: Quantity) -> Catalog {
        CatalogBuilder::new()
            .resource_flavors(&["cpu", "memory"])
            .cluster_queue("shared", None)
            .quota(0, 0, 2000, None, None)
            .cluster_queue("other", None)
            .local_queue("team-a", "flood", Some(0), 1000)
            .local_queue("team-b", "small", Some(0), small_weight)
            .local_queue("team-c", "c", Some(1), 1000)
            .build()
    }

    /// A workload of LocalQueue `lq` (in cq 0 unless lq is 2) with one podSet of `count`
    /// pods of `cpu_milli` each.
    fn wl(id: u32, lq: u32, count: u32, cpu_milli: i64, created: i64) -> Workload {
        let cq = if lq == 2 { 1 } else { 0 };
        let mut w = testing::workload(id, cq, 0, created);
        w.local_queue = Some(lq);
        w.pod_sets = Some(vec![PodSet {
            count,
            min_count: None,
            per_pod: vec![
                ResourceAmount {
                    resource: 0,
                    amount: cpu_milli,
                },
                ResourceAmount {
                    resource: 1,
                    amount: 1 << 30,
                },
            ],
        }]);
        w
    }

    fn policy(cat: &Catalog) -> DrrLocalQueues {
        let mut p = DrrLocalQueues::default();
        p.catalog_changed(cat);
        p
    }

    /// Keys the workloads in turn and returns their ids in queue order.
    fn queue(p: &mut DrrLocalQueues, cat: &Catalog, wls: &[Workload]) -> Vec<u32> {
        let mut keyed: Vec<((i64, i64, i64), u32)> = wls
            .iter()
            .map(|w| {
                let k = p.sort_key(cat, w, 0);
                ((k.primary, k.secondary, k.tertiary), w.id)
            })
            .collect();
        keyed.sort();
        keyed.into_iter().map(|(_, id)| id).collect()
    }

    fn no_usage(cat: &Catalog) -> QuotaView<'_> {
        QuotaView::new(cat, &[])
    }

    /// A head of a keyed workload of "shared" asking for `cpu_milli`.
    fn keyed_head(id: u32, key: SortKey, cpu_milli: i64) -> Head {
        let mut h = testing::head(id, 0, 0, key.tertiary);
        h.key = key;
        h.usage = testing::amounts(&[(0, cpu_milli)]);
        h
    }

    #[test]
    fn cost_is_the_total_request_of_the_resource() {
        let cat = catalog(1000);
        let p = policy(&cat);
        assert_eq!(p.resource(), "cpu");
        let mut w = wl(1, 0, 3, 500, 0);
        let first = w.pod_sets()[0].clone();
        w.pod_sets.get_or_insert_default().push(first);
        assert_eq!(p.cost(&w), 3000);
        let cat = CatalogBuilder::new()
            .resource_flavors(&["cpu", "memory"])
            .setting(RESOURCE_SETTING, "memory")
            .build();
        assert_eq!(policy(&cat).cost(&wl(1, 0, 2, 500, 0)), 2 << 30);
        let cat = CatalogBuilder::new()
            .resource_flavors(&["cpu"])
            .setting(RESOURCE_SETTING, "nvidia.com/gpu")
            .build();
        assert_eq!(policy(&cat).cost(&wl(1, 0, 2, 500, 0)), 0);
        assert_eq!(increment(3000, 1500), 2000);
        assert_eq!(increment(5, 0), i64::MAX);
        assert_eq!(increment(0, 0), 0);
        assert_eq!(increment(i64::MAX, 1), i64::MAX);
    }

    #[test]
    fn a_flooding_local_queue_is_interleaved_with_the_others() {
        let cat = catalog(1000);
        let mut p = policy(&cat);
        let flood: Vec<Workload> = (0..4).map(|i| wl(i, 0, 1, 1000, i as i64)).collect();
        let small = [wl(10, 1, 1, 1000, 100), wl(11, 1, 1, 1000, 101)];
        let all: Vec<Workload> = flood.iter().chain(&small).cloned().collect();
        assert_eq!(queue(&mut p, &cat, &all), vec![0, 10, 1, 11, 2, 3]);
        assert_eq!(p.virtual_finish("team-a/flood"), 4000);
        assert_eq!(p.virtual_finish("team-b/small"), 2000);
        // Kueue's key would serve the flood first.
        let mut kueue_order: Vec<_> = all.iter().map(|w| (w.created, w.id)).collect();
        kueue_order.sort();
        assert_eq!(kueue_order[4].1, 10);
    }

    #[test]
    fn weights_set_the_proportions() {
        let cat = catalog(2000);
        let mut p = policy(&cat);
        let flood: Vec<Workload> = (0..3).map(|i| wl(i, 0, 1, 1000, i as i64)).collect();
        let small: Vec<Workload> = (10..14).map(|i| wl(i, 1, 1, 1000, 100)).collect();
        let all: Vec<Workload> = flood.iter().chain(&small).cloned().collect();
        // small: 0.5, 1, 1.5, 2; flood: 1, 2, 3 (ties: older first).
        assert_eq!(queue(&mut p, &cat, &all), vec![10, 0, 11, 12, 1, 13, 2]);
        // Weight 0: after everything else, FIFO among themselves.
        let cat = catalog(0);
        let mut p = policy(&cat);
        assert_eq!(queue(&mut p, &cat, &all), vec![0, 1, 2, 10, 11, 12, 13]);
    }

    #[test]
    fn priority_tiers_come_first() {
        let cat = catalog(1000);
        let mut p = policy(&cat);
        let mut urgent = wl(3, 0, 1, 1000, 50);
        urgent.priority = 10;
        let all = [wl(0, 0, 1, 1000, 0), wl(1, 1, 1, 1000, 1), urgent];
        assert_eq!(queue(&mut p, &cat, &all), vec![3, 0, 1]);
    }

    #[test]
    fn virtual_time_follows_the_heads_so_idle_queues_get_no_credit() {
        let cat = catalog(1000);
        let mut p = policy(&cat);
        let flood: Vec<Workload> = (0..4).map(|i| wl(i, 0, 1, 1000, i as i64)).collect();
        let keys: Vec<SortKey> = flood.iter().map(|w| p.sort_key(&cat, w, 0)).collect();
        assert_eq!(keys[2].secondary, 3000);
        // f2 (start 2000) fits and is served: V = 2000; the starts of f0..f2 are forgotten.
        let empty = usage_table(&cat, &[0], &[]);
        let view = QuotaView::from_usage_table(&cat, &empty);
        let order = p.order_heads_with_usage(&cat, &[keyed_head(2, keys[2], 1000)], &view, 0);
        assert_eq!(order, vec![0]);
        assert_eq!(p.virtual_time("shared"), 2000);
        assert_eq!(p.starts.keys().copied().collect::<Vec<_>>(), vec![3]);
        // f3 does not fit (the queue is full): it waits, V does not move.
        let full = usage_table(&cat, &[0], &[(0, 0, 2000)]);
        let view = QuotaView::from_usage_table(&cat, &full);
        p.order_heads_with_usage(&cat, &[keyed_head(3, keys[3], 1000)], &view, 0);
        assert_eq!(p.virtual_time("shared"), 2000);
        // Two heads take their usage in turn: only the first fits in 1 free cpu.
        let one_free = usage_table(&cat, &[0], &[(0, 0, 1000)]);
        let view = QuotaView::from_usage_table(&cat, &one_free);
        let mut q = policy(&cat);
        let k: Vec<SortKey> = flood.iter().map(|w| q.sort_key(&cat, w, 0)).collect();
        let pair = [keyed_head(1, k[1], 1000), keyed_head(3, k[3], 1000)];
        q.order_heads_with_usage(&cat, &pair, &view, 0);
        assert_eq!(q.virtual_time("shared"), 1000);
        // A newcomer starts at V, not at 0: after f2 (same finish, older), before f3.
        let late = wl(10, 1, 1, 1000, 200);
        let k = p.sort_key(&cat, &late, 0);
        assert_eq!(k.secondary, 3000);
        assert!((k.secondary, k.tertiary) > (keys[2].secondary, keys[2].tertiary));
        assert!(k.secondary < keys[3].secondary);
        // Other ClusterQueues have their own virtual time.
        assert_eq!(p.sort_key(&cat, &wl(20, 2, 1, 1000, 0), 0).secondary, 1000);
        // Heads keyed by someone else (unknown to this instance) do not move V.
        let stranger = testing::head(99, 0, 0, 1_700_000_000_000);
        let view = QuotaView::from_usage_table(&cat, &empty);
        p.order_heads_with_usage(&cat, &[stranger], &view, 0);
        assert_eq!(p.virtual_time("shared"), 2000);
        // A workload keyed again (requeued after an eviction) is a new arrival of its flow.
        assert_eq!(p.sort_key(&cat, &flood[0], 0).secondary, 5000);
    }

    #[test]
    fn workloads_without_a_local_queue_are_one_flow() {
        let cat = catalog(1000);
        let mut p = policy(&cat);
        let mut a = wl(0, 0, 1, 1000, 0);
        a.local_queue = None;
        let mut b = a.clone();
        b.id = 1;
        p.sort_key(&cat, &a, 0);
        assert_eq!(p.sort_key(&cat, &b, 0).secondary, 2000);
        assert_eq!(p.virtual_finish("/shared"), 2000);
    }

    #[test]
    fn cycle_order_is_kueues() {
        let cat = catalog(1000);
        let mut p = policy(&cat);
        assert_eq!(p.needs(&cat), Needs::TREE_USAGE | Needs::POD_SETS);
        let heads = [testing::head(0, 0, 1, 5), testing::head(1, 1, 9, 7)];
        let order = p.order_heads_with_usage(&cat, &heads, &no_usage(&cat), 0);
        assert_eq!(order, kueue::order_heads(&heads));
        // Under fair sharing: Kueue's tournament, which reads tree usage.
        let cat = CatalogBuilder::new()
            .flavor_resources(1)
            .cluster_queue("a", Some(2))
            .quota(0, 0, 4, None, None)
            .cluster_queue("b", Some(2))
            .quota(1, 0, 4, None, None)
            .cohort("cohort", None)
            .fair_sharing(&[FairSharingStrategy::LessThanOrEqualToFinalShare])
            .build();
        let mut p = policy(&cat);
        assert_eq!(p.needs(&cat), Needs::TREE_USAGE | Needs::POD_SETS);
        let mut heads = [testing::head(10, 0, 5, 0), testing::head(11, 1, 0, 9)];
        heads[0].usage = testing::amounts(&[(0, 2)]);
        heads[1].usage = testing::amounts(&[(0, 2)]);
        let table = usage_table(&cat, &[2], &[(0, 0, 4)]);
        let view = QuotaView::from_usage_table(&cat, &table);
        assert_eq!(p.order_heads_with_usage(&cat, &heads, &view, 0), vec![1, 0]);
    }
}
