//! Topology-aware scheduling in the simulator's report: each domain's time-weighted use of its
//! allocatable capacity, and for each admission of a TAS podSet how many domains of each level
//! it spans.

use serde::Serialize;

use crate::cluster::{Admission, Cluster, Millis, WorkloadId};
use crate::policy::PolicyRef;
use crate::topology::Topologies;

/// Usage integrated over virtual time and the placements made.
#[derive(Debug, Clone, Default)]
pub struct TasLedger {
    /// Per TAS flavor, per leaf, per column: Σ usage × ms.
    integral: Vec<Vec<Vec<i128>>>,
    elapsed: i128,
    placements: Vec<PlacementReport>,
}

/// One TAS podSet's admission.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementReport {
    /// Seconds on the virtual clock.
    pub time: f64,
    pub workload: String,
    pub pod_set: String,
    pub flavor: String,
    /// Domains spanned per level, highest level first.
    pub domains_per_level: Vec<(String, usize)>,
    /// The placement policy that decided it (the built-in after a fallback).
    pub placed_by: PolicyRef,
    /// Pods per leaf (leaf index in the flavor's tree, pods): the decision itself, for
    /// comparing runs (not serialized: the spans say it for people).
    #[serde(skip)]
    pub leaves: Vec<(u32, i32)>,
}

/// One domain's average use over the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DomainReport {
    pub flavor: String,
    pub level: String,
    /// Its values from the highest level down, joined by `/`.
    pub domain: String,
    /// Resource → average use as % of allocatable.
    pub utilisation_percent: std::collections::BTreeMap<String, f64>,
}

/// The report's `topology` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyReport {
    pub domains: Vec<DomainReport>,
    pub placements: Vec<PlacementReport>,
}

impl TopologyReport {
    pub fn is_empty(&self) -> bool {
        self.domains.is_empty() && self.placements.is_empty()
    }

    /// The table's topology section: domains above the lowest level (nodes are many), then
    /// the first placements' spans.
    pub fn write_table(&self, out: &mut String) {
        use std::fmt::Write as _;
        if self.is_empty() {
            return;
        }
        let lowest = self.domains.last().map(|d| d.level.as_str());
        let _ = writeln!(out, "\nTopology (average utilisation per domain):");
        for d in self
            .domains
            .iter()
            .filter(|d| Some(d.level.as_str()) != lowest)
        {
            let u: Vec<String> = d
                .utilisation_percent
                .iter()
                .filter(|(r, _)| r.as_str() != crate::topology::tree::PODS)
                .map(|(r, p)| format!("{r} {p:.1}%"))
                .collect();
            let _ = writeln!(
                out,
                "  {:<10} {:<24} {:<20} {}",
                d.flavor,
                d.level,
                d.domain,
                u.join(", ")
            );
        }
        const SHOWN: usize = 20;
        for p in self.placements.iter().take(SHOWN) {
            let spans: Vec<String> = p
                .domains_per_level
                .iter()
                .map(|(level, n)| format!("{n} {level}"))
                .collect();
            let _ = writeln!(
                out,
                "  {:>9.3}s  {:<32} {:<10} spans {}",
                p.time,
                format!("{}/{}", p.workload, p.pod_set),
                p.flavor,
                spans.join(", ")
            );
        }
        if self.placements.len() > SHOWN {
            let _ = writeln!(
                out,
                "  ... {} more placements (--output json lists every one)",
                self.placements.len() - SHOWN
            );
        }
    }
}

impl TasLedger {
    /// Adds `dt` ms of the current usage.
    pub(crate) fn integrate(&mut self, tas: &Topologies, dt: i128) {
        if tas.is_empty() {
            return;
        }
        if self.integral.len() != tas.flavors.len() {
            self.integral = tas
                .flavors
                .iter()
                .map(|f| vec![vec![0; f.tree.resources.len()]; f.tree.leaves.len()])
                .collect();
        }
        for (i, per_leaf) in self.integral.iter_mut().enumerate() {
            for (acc, used) in per_leaf.iter_mut().zip(tas.leaf_usage(i).rows()) {
                for (a, &u) in acc.iter_mut().zip(used) {
                    *a += i128::from(u) * dt;
                }
            }
        }
        self.elapsed += dt;
    }

    /// Records the spans of an admission's TAS podSets (`at`: ms since time 0).
    pub(crate) fn record(
        &mut self,
        cluster: &Cluster,
        wl: WorkloadId,
        a: &Admission,
        placed_by: &[PolicyRef],
        at: Millis,
    ) {
        let mut by = placed_by.iter();
        for ps in &a.pod_sets {
            let Some(p) = &ps.topology else { continue };
            self.placements.push(PlacementReport {
                placed_by: by.next().cloned().unwrap_or_else(PolicyRef::builtin),
                time: at as f64 / 1000.0,
                workload: cluster.workload(wl).key.clone(),
                pod_set: ps.name.to_string(),
                flavor: cluster.names.flavor_name(p.flavor).to_string(),
                domains_per_level: cluster.tas.spans(p),
                leaves: p.leaves.clone(),
            });
        }
    }

    /// The report: every domain's average utilisation (resources with capacity) and the spans.
    pub(crate) fn report(&self, cluster: &Cluster) -> TopologyReport {
        let mut domains = Vec::new();
        for (i, f) in cluster.tas.flavors.iter().enumerate() {
            let tree = &f.tree;
            for level in 0..tree.levels.len() {
                for &d in &tree.per_level[level] {
                    let mut used = vec![0i128; tree.resources.len()];
                    let mut capacity = vec![0i128; tree.resources.len()];
                    for (leaf, &l) in tree.leaves.iter().enumerate() {
                        if tree.ancestor_at(l, level) != d {
                            continue;
                        }
                        for c in 0..tree.resources.len() {
                            if let Some(acc) = self.integral.get(i) {
                                used[c] += acc[leaf][c];
                            }
                            capacity[c] += i128::from(tree.capacity.row(leaf)[c]);
                        }
                    }
                    let utilisation_percent = tree
                        .resources
                        .iter()
                        .enumerate()
                        .filter(|&(c, _)| capacity[c] > 0 && self.elapsed > 0)
                        .map(|(c, r)| {
                            let pct = used[c] as f64 * 100.0 / (capacity[c] * self.elapsed) as f64;
                            (r.clone(), super::report::round3(pct))
                        })
                        .collect();
                    domains.push(DomainReport {
                        flavor: cluster.names.flavor_name(f.flavor).to_string(),
                        level: tree.levels[level].clone(),
                        domain: tree.domain(d).values.join("/"),
                        utilisation_percent,
                    });
                }
            }
        }
        TopologyReport {
            domains,
            placements: self.placements.clone(),
        }
    }
}
