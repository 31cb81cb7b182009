//! Admission ordering by weighted max-min fairness over GPU-hours: the team (ClusterQueue) that
//! has had the fewest GPU-hours for its weight goes first.
//!
//! Kueue's fair sharing compares *current* shares only: two teams that hold nothing right now
//! are equal, however much one of them ran yesterday, and the tie goes to priority, then age.
//! This plugin keeps, per ClusterQueue, the GPU-hours it has accumulated, and orders a cycle's
//! heads by:
//!
//! 1. second passes first (heads that already hold quota), as Kueue does;
//! 2. accumulated GPU-hours / weight, lowest first;
//! 3. current GPU allocation / weight, lowest first (progressive filling, see below);
//! 4. higher priority, then older (creation time), then the host's order.
//!
//! The weight is the ClusterQueue's `spec.fairSharing.weight` (its node's `fair-weight`; 1 when
//! unset). With weight 0 a team's ratio is +∞ as soon as its figure is positive: it goes after
//! every team with a positive weight. Borrowing is not considered: protect nominal quota with
//! the ClusterQueues' preemption settings (`reclaimWithinCohort`) as usual.
//!
//! Queue order within a ClusterQueue is Kueue's: higher priority first, then older.
//!
//! # Accounting
//!
//! The plugin needs `tree-usage`: every `order-heads` call carries the quota usage of every
//! node of the heads' cohort trees. At each call, for every ClusterQueue in that table, the
//! plugin reads its current allocation of the resource (setting `resource`, summed over all
//! flavors) and adds `allocation × (now − the previous call that showed this ClusterQueue)` to
//! its GPU-hours (a ClusterQueue seen for the first time starts at 0 and accrues from then on).
//!
//! Calls happen only in scheduling cycles that have heads, and the host admits nothing in
//! cycles without heads, so between two calls a team's allocation can only shrink (workloads
//! finishing): charging the allocation seen at the later call over the whole interval never
//! charges a team for GPUs it did not hold. The figure is a lower bound: a workload counts from
//! the first call that sees it admitted to the last one that does (on a busy cluster, where the
//! order matters, calls are frequent; a job that starts and ends between two calls is missed).
//!
//! The GPU-hours live in the plugin instance, keyed by ClusterQueue name: **a fresh instance —
//! after a reload of the file, a restart of the controller or a trap (the host then replaces
//! the instance) — starts every team from zero.** With `half-life` set, accumulated hours decay
//! exponentially (usage one half-life ago weighs half), so the past is gradually forgiven.
//!
//! # Progressive filling
//!
//! With `tree-usage` the order is speculative: the plugin must assume every head, in turn, is
//! admitted with its `usage`. After picking a head, its GPU usage is added to its team's
//! allocation before the next pick (the GPU-hours do not change within a call). The host sends at
//! most one head per ClusterQueue, so today this only matters if a future host sends more; when
//! a head is not admitted as assumed, the host asks again with the usage as it then is.
//!
//! # Settings (`pluginSettings: {max-min-gpu-hours: {...}}` in the wasq `--config` file)
//!
//! - `resource`: the resource accounted, by name (default `nvidia.com/gpu`). A resource no quota
//!   names counts as 0 for every team (then the order is priority, then age); changing it
//!   restarts the accounting.
//! - `half-life`: a duration (`"24h"`, `"7d"`); unset or `"0s"`: GPU-hours never decay.
//!
//! An invalid value is logged at warn level and the default applies.

use std::collections::BTreeMap;

use wasq_policy_sdk::prelude::*;

/// The setting naming the resource accounted.
pub const RESOURCE_SETTING: &str = "resource";
/// The resource accounted by default.
pub const DEFAULT_RESOURCE: &str = "nvidia.com/gpu";
/// The setting for the decay of accumulated hours.
pub const HALF_LIFE_SETTING: &str = "half-life";

const MILLIS_PER_HOUR: f64 = 3_600_000.0;

/// What the plugin knows of one team (ClusterQueue).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Account {
    /// Accumulated (decayed, with a half-life) resource-hours, in units (1 GPU for 1 h = 1.0).
    pub hours: f64,
    /// The time of the last call whose usage table showed this team.
    pub seen: Millis,
}

/// Weighted max-min fairness over accumulated GPU-hours.
#[derive(Debug)]
pub struct MaxMinGpuHours {
    resource: String,
    half_life: Option<Millis>,
    /// The flavor-resources of `resource` in the current catalog.
    frs: Vec<FrId>,
    /// By ClusterQueue name.
    accounts: BTreeMap<String, Account>,
}

impl Default for MaxMinGpuHours {
    fn default() -> MaxMinGpuHours {
        MaxMinGpuHours {
            resource: DEFAULT_RESOURCE.to_string(),
            half_life: None,
            frs: Vec::new(),
            accounts: BTreeMap::new(),
        }
    }
}

/// `value / weight` with `weight` in milli-units; +∞ for a positive value over weight ≤ 0.
pub fn ratio(value: f64, weight_milli: Quantity) -> f64 {
    if weight_milli > 0 {
        value * 1000.0 / weight_milli as f64
    } else if value > 0.0 {
        f64::INFINITY
    } else {
        0.0
    }
}

/// `hours` after `dt` milliseconds at a constant `allocation` (units), decayed with
/// `half_life` when set: the exact integral of the exponentially weighted usage.
pub fn accrue(hours: f64, allocation: f64, dt: Millis, half_life: Option<Millis>) -> f64 {
    if dt <= 0 {
        return hours;
    }
    let dt = dt as f64;
    match half_life {
        Some(h) if h > 0 => {
            let h = h as f64;
            let decay = 0.5f64.powf(dt / h);
            hours * decay
                + allocation * (h / std::f64::consts::LN_2) * (1.0 - decay) / MILLIS_PER_HOUR
        }
        _ => hours + allocation * dt / MILLIS_PER_HOUR,
    }
}

impl MaxMinGpuHours {
    /// The resource accounted.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The half-life of accumulated hours, if they decay.
    pub fn half_life(&self) -> Option<Millis> {
        self.half_life
    }

    /// A team's account, by ClusterQueue name.
    pub fn account(&self, cluster_queue: &str) -> Option<Account> {
        self.accounts.get(cluster_queue).copied()
    }

    /// A ClusterQueue node's current allocation of the resource, in milli-units.
    fn allocation(&self, usage: &QuotaView<'_>, node: NodeId) -> Quantity {
        self.frs
            .iter()
            .map(|&fr| usage.usage(node, fr))
            .fold(0, Quantity::saturating_add)
    }

    /// Integrates the allocation of every ClusterQueue in `usage` since it was last seen.
    pub fn observe(&mut self, catalog: &Catalog, usage: &QuotaView<'_>, now: Millis) {
        for cq in &catalog.cluster_queues {
            if !usage.contains(cq.node) {
                continue;
            }
            let allocation = self.allocation(usage, cq.node) as f64 / 1000.0;
            let half_life = self.half_life;
            let account = self.accounts.entry(cq.name.clone()).or_insert(Account {
                hours: 0.0,
                seen: now,
            });
            account.hours = accrue(account.hours, allocation, now - account.seen, half_life);
            account.seen = account.seen.max(now);
        }
    }
}

/// A head's rank: smaller goes first.
type Rank = (bool, i64, i64, i64, i64);

impl OrderingPolicy for MaxMinGpuHours {
    fn catalog_changed(&mut self, catalog: &Catalog) {
        let resource = catalog
            .setting(RESOURCE_SETTING)
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .unwrap_or(DEFAULT_RESOURCE)
            .to_string();
        if resource != self.resource {
            // Hours of another resource mean nothing for this one.
            self.accounts.clear();
            self.resource = resource;
        }
        self.half_life = None;
        if let Some(text) = catalog.setting(HALF_LIFE_SETTING) {
            match parse_duration(text) {
                Ok(0) => {}
                Ok(h) => self.half_life = Some(h),
                Err(e) => wasq_policy_sdk::warn!(
                    "setting {HALF_LIFE_SETTING}={text:?}: {e}; hours do not decay"
                ),
            }
        }
        let id = catalog.resources.iter().position(|r| *r == self.resource);
        self.frs = catalog
            .flavor_resources
            .iter()
            .enumerate()
            .filter(|(_, fr)| Some(fr.resource as usize) == id)
            .map(|(i, _)| i as FrId)
            .collect();
        if id.is_none() && catalog.setting(RESOURCE_SETTING).is_some() {
            wasq_policy_sdk::warn!(
                "setting {RESOURCE_SETTING}={:?}: no quota names this resource; every team counts 0",
                self.resource
            );
        }
    }

    fn needs(&self, _: &Catalog) -> Needs {
        Needs::TREE_USAGE
    }

    fn order_heads_with_usage(
        &mut self,
        catalog: &Catalog,
        heads: &[Head],
        usage: &QuotaView<'_>,
        now: Millis,
    ) -> Vec<u32> {
        self.observe(catalog, usage, now);
        // Per head: its team's name, weight and hours; per team: its allocation (milli-units),
        // raised as heads are picked.
        let teams: Vec<Option<(&str, Quantity, f64)>> = heads
            .iter()
            .map(|h| {
                let cq = catalog.cluster_queue(h.cluster_queue)?;
                let weight = catalog.node(cq.node).map_or(1000, |n| n.fair_weight);
                let hours = self.accounts.get(&cq.name).map_or(0.0, |a| a.hours);
                Some((cq.name.as_str(), weight, hours))
            })
            .collect();
        let mut allocation: BTreeMap<&str, Quantity> = BTreeMap::new();
        for (h, team) in heads.iter().zip(&teams) {
            if let (Some((name, _, _)), Some(cq)) = (team, catalog.cluster_queue(h.cluster_queue)) {
                allocation.insert(name, self.allocation(usage, cq.node));
            }
        }
        let rank = |i: usize, allocation: &BTreeMap<&str, Quantity>| -> Rank {
            let h = &heads[i];
            let (hours, current) = match teams[i] {
                Some((name, weight, hours)) => {
                    let held = allocation.get(name).copied().unwrap_or(0) as f64 / 1000.0;
                    (ratio(hours, weight), ratio(held, weight))
                }
                None => (0.0, 0.0),
            };
            (
                !h.has_reservation,
                kueue::order_bits(hours),
                kueue::order_bits(current),
                h.priority.wrapping_neg(),
                h.created,
            )
        };
        // Progressive filling: pick the smallest rank, add its usage to its team, re-rank the
        // remaining heads of that team (none, with one head per ClusterQueue).
        let mut queue: std::collections::BTreeSet<(Rank, usize)> = (0..heads.len())
            .map(|i| (rank(i, &allocation), i))
            .collect();
        let mut order = Vec::with_capacity(heads.len());
        while let Some((_, i)) = queue.pop_first() {
            order.push(i as u32);
            let Some((name, _, _)) = teams[i] else {
                continue;
            };
            let picked: Quantity = heads[i]
                .usage
                .iter()
                .filter(|u| self.frs.contains(&u.fr))
                .map(|u| u.amount)
                .fold(0, Quantity::saturating_add);
            if picked == 0 {
                continue;
            }
            let same: Vec<(Rank, usize)> = queue
                .iter()
                .copied()
                .filter(|&(_, j)| teams[j].is_some_and(|t| t.0 == name))
                .collect();
            let held = allocation.entry(name).or_insert(0);
            *held = held.saturating_add(picked);
            for entry in same {
                queue.remove(&entry);
                queue.insert((rank(entry.1, &allocation), entry.1));
            }
        }
        order
    }
}

wasq_policy_sdk::export_ordering!(MaxMinGpuHours);

#[cfg(test)]
mod tests {
    use super::*;
    use wasq_policy_sdk::testing::{self, CatalogBuilder, amounts, usage_table};

    const HOUR: Millis = 3_600_000;
    const GPU: Quantity = 1000;

    /// Cohort "pool" (node 2, 4 GPUs of flavor f0 and 4 of f1) <- team-a (node 0, cq 0),
    /// team-b (node 1, cq 1), each with 2 GPUs of f0 and 2 of f1. Flavor-resources:
    /// 0 = (f0, cpu), 1 = (f0, gpu), 2 = (f1, cpu), 3 = (f1, gpu).
    fn builder() -> CatalogBuilder {
        CatalogBuilder::new()
            .resource_flavors(&["cpu", DEFAULT_RESOURCE])
            .resource_flavors(&["cpu", DEFAULT_RESOURCE])
            .cluster_queue("team-a", Some(2))
            .quota(0, 1, 2 * GPU, None, None)
            .quota(0, 3, 2 * GPU, None, None)
            .cluster_queue("team-b", Some(2))
            .quota(1, 1, 2 * GPU, None, None)
            .quota(1, 3, 2 * GPU, None, None)
            .cohort("pool", None)
    }

    fn policy(catalog: &Catalog) -> MaxMinGpuHours {
        let mut p = MaxMinGpuHours::default();
        p.catalog_changed(catalog);
        p
    }

    /// Asks for the order of `heads` at `now` with `adds` (node, fr, amount) as usage.
    fn order(
        p: &mut MaxMinGpuHours,
        cat: &Catalog,
        heads: &[Head],
        adds: &[(NodeId, FrId, Quantity)],
        now: Millis,
    ) -> Vec<u32> {
        let table = usage_table(cat, &[2], adds);
        let view = QuotaView::from_usage_table(cat, &table);
        p.order_heads_with_usage(cat, heads, &view, now)
    }

    fn hours(p: &MaxMinGpuHours, team: &str) -> f64 {
        p.account(team).map_or(0.0, |a| a.hours)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn settings_and_needs() {
        let cat = builder().build();
        let p = policy(&cat);
        assert_eq!(p.needs(&cat), Needs::TREE_USAGE);
        assert_eq!(p.resource(), DEFAULT_RESOURCE);
        assert_eq!(p.frs, vec![1, 3]);
        assert_eq!(p.half_life(), None);

        let cat = builder()
            .setting(RESOURCE_SETTING, "cpu")
            .setting(HALF_LIFE_SETTING, "24h")
            .build();
        let p = policy(&cat);
        assert_eq!((p.resource(), p.frs.clone()), ("cpu", vec![0, 2]));
        assert_eq!(p.half_life(), Some(24 * HOUR));

        // Invalid or zero half-life: no decay. Unknown resource: nothing counted.
        for text in ["soon", "0s"] {
            let cat = builder().setting(HALF_LIFE_SETTING, text).build();
            assert_eq!(policy(&cat).half_life(), None, "{text}");
        }
        let cat = builder()
            .setting(RESOURCE_SETTING, "example.com/tpu")
            .build();
        assert!(policy(&cat).frs.is_empty());
    }

    #[test]
    fn gpu_hours_accrue_over_every_flavor_from_the_first_sighting() {
        let cat = builder().build();
        let mut p = policy(&cat);
        // Team A holds 2 GPUs of each flavor (and cpu, which does not count).
        let usage = [(0, 1, 2 * GPU), (0, 3, 2 * GPU), (0, 0, 8000)];
        order(&mut p, &cat, &[], &usage, 5 * HOUR);
        assert_eq!(hours(&p, "team-a"), 0.0, "first sighting: nothing yet");
        assert_eq!(p.account("team-a").map(|a| a.seen), Some(5 * HOUR));
        order(&mut p, &cat, &[], &usage, 5 * HOUR + HOUR / 2);
        assert!(close(hours(&p, "team-a"), 2.0), "4 GPUs × 0.5 h");
        // Asked again at the same instant (a re-ask within a cycle): nothing more.
        order(&mut p, &cat, &[], &usage, 5 * HOUR + HOUR / 2);
        assert!(close(hours(&p, "team-a"), 2.0));
        assert_eq!(hours(&p, "team-b"), 0.0);
        // A ClusterQueue outside the table is not charged meanwhile.
        let other = CatalogBuilder::new()
            .resource_flavors(&["cpu", DEFAULT_RESOURCE])
            .cluster_queue("solo", None)
            .build();
        let mut q = policy(&other);
        let table = testing::no_usage_table();
        let view = QuotaView::from_usage_table(&other, &table);
        q.order_heads_with_usage(&other, &[], &view, HOUR);
        assert_eq!(q.account("solo"), None);
    }

    #[test]
    fn the_team_with_fewer_hours_goes_first_whatever_the_priority() {
        let cat = builder().build();
        let mut p = policy(&cat);
        let a_busy = [(0, 1, 2 * GPU), (0, 3, 2 * GPU)];
        order(&mut p, &cat, &[], &a_busy, 0);
        order(&mut p, &cat, &[], &a_busy, HOUR);
        assert!(close(hours(&p, "team-a"), 4.0));
        // Now nobody holds anything; A's head has the higher priority and is older.
        let heads = [testing::head(10, 0, 100, 0), testing::head(11, 1, 0, 50)];
        assert_eq!(order(&mut p, &cat, &heads, &[], 2 * HOUR), vec![1, 0]);
        // Kueue would try A first.
        assert_eq!(kueue::order_heads(&heads), vec![0, 1]);
    }

    #[test]
    fn weights_divide_hours() {
        // B weighs 3: 4 of its hours count as 1.33 < A's 2.
        let cat = builder().fair_weight(1, 3000).build();
        let mut p = policy(&cat);
        let usage = [(0, 1, 2 * GPU), (1, 1, 2 * GPU), (1, 3, 2 * GPU)];
        order(&mut p, &cat, &[], &usage, 0);
        order(&mut p, &cat, &[], &usage, HOUR);
        assert!(close(hours(&p, "team-a"), 2.0) && close(hours(&p, "team-b"), 4.0));
        let heads = [testing::head(10, 0, 0, 0), testing::head(11, 1, 0, 50)];
        assert_eq!(order(&mut p, &cat, &heads, &[], 2 * HOUR), vec![1, 0]);
        // Weight 0: after every team with a weight as soon as it has had anything.
        let cat = builder().fair_weight(1, 0).build();
        let mut p = policy(&cat);
        order(&mut p, &cat, &[], &usage, 0);
        order(&mut p, &cat, &[], &usage, HOUR);
        assert_eq!(order(&mut p, &cat, &heads, &[], 2 * HOUR), vec![0, 1]);
        assert_eq!(ratio(0.0, 0), 0.0);
        assert_eq!(ratio(1.0, 0), f64::INFINITY);
        assert_eq!(ratio(3.0, 1500), 2.0);
    }

    #[test]
    fn current_allocation_then_priority_then_age_break_ties() {
        let cat = builder().build();
        // No history: A holds 1 GPU now, B none.
        let mut p = policy(&cat);
        let heads = [testing::head(10, 0, 5, 0), testing::head(11, 1, 0, 9)];
        assert_eq!(order(&mut p, &cat, &heads, &[(0, 1, GPU)], 0), vec![1, 0]);
        // Nothing held: priority, then age, then the host's order.
        let mut p = policy(&cat);
        assert_eq!(order(&mut p, &cat, &heads, &[], 0), vec![0, 1]);
        let heads = [testing::head(10, 0, 0, 9), testing::head(11, 1, 0, 3)];
        assert_eq!(order(&mut p, &cat, &heads, &[], 0), vec![1, 0]);
        let heads = [testing::head(10, 0, 0, 3), testing::head(11, 1, 0, 3)];
        assert_eq!(order(&mut p, &cat, &heads, &[], 0), vec![0, 1]);
        // Second passes first, whatever the hours.
        let mut reserved = heads.clone();
        reserved[1].has_reservation = true;
        assert_eq!(
            order(&mut p, &cat, &reserved, &[(1, 1, GPU)], 0),
            vec![1, 0]
        );
    }

    #[test]
    fn progressive_filling_adds_each_pick_to_its_team() {
        let cat = builder().build();
        let mut p = policy(&cat);
        // Two heads of team A (as a host sending several per ClusterQueue would), one of B;
        // B holds 1 GPU, A none. A's first head (2 GPUs) goes first, then A holds 2 > 1.
        let mut heads = [
            testing::head(10, 0, 0, 0),
            testing::head(11, 0, 0, 1),
            testing::head(12, 1, 0, 2),
        ];
        heads[0].usage = amounts(&[(1, 2 * GPU)]);
        heads[1].usage = amounts(&[(1, 2 * GPU)]);
        heads[2].usage = amounts(&[(3, GPU)]);
        assert_eq!(
            order(&mut p, &cat, &heads, &[(1, 1, GPU)], 0),
            vec![0, 2, 1]
        );
        // Usage of other resources does not count.
        heads[0].usage = amounts(&[(0, 64_000)]);
        assert_eq!(
            order(&mut p, &cat, &heads, &[(1, 1, GPU)], 0),
            vec![0, 1, 2]
        );
    }

    #[test]
    fn hours_decay_with_the_half_life() {
        assert!(close(accrue(8.0, 0.0, HOUR, Some(HOUR)), 4.0));
        // 1 GPU for one half-life: h/ln2 × (1 − ½) hours, less than 1 h.
        let gained = accrue(0.0, 1.0, HOUR, Some(HOUR));
        assert!(close(gained, 0.5 / std::f64::consts::LN_2));
        assert!(close(accrue(1.0, 2.0, HOUR / 2, None), 2.0));
        assert_eq!(accrue(1.0, 2.0, -5, None), 1.0);

        let cat = builder().setting(HALF_LIFE_SETTING, "1h").build();
        let mut p = policy(&cat);
        order(&mut p, &cat, &[], &[(0, 1, GPU)], 0);
        order(&mut p, &cat, &[], &[], 10 * HOUR);
        assert_eq!(hours(&p, "team-a"), 0.0, "allocation 0 at the later call");
    }

    #[test]
    fn a_fresh_instance_or_another_resource_starts_from_zero() {
        let cat = builder().build();
        let mut p = policy(&cat);
        order(&mut p, &cat, &[], &[(0, 1, GPU)], 0);
        order(&mut p, &cat, &[], &[(0, 1, GPU)], HOUR);
        assert!(close(hours(&p, "team-a"), 1.0));
        // A new catalog with the same resource keeps the accounts.
        let cat2 = builder().setting(HALF_LIFE_SETTING, "7d").build();
        p.catalog_changed(&cat2);
        assert!(close(hours(&p, "team-a"), 1.0));
        // Another resource restarts them.
        let cat3 = builder().setting(RESOURCE_SETTING, "cpu").build();
        p.catalog_changed(&cat3);
        assert_eq!(p.account("team-a"), None);
        assert_eq!(policy(&cat).account("team-a"), None);
    }
}
