//! Usage over time, stacked per cohort tree, from the simulation's log of reservations and
//! releases: per flavor/resource, one chart of every tree stacked (when there are several)
//! against their nominal quota together, then for the trees with the highest peaks one chart
//! of their ClusterQueues stacked against the tree's nominal quota, and one of each of those
//! ClusterQueues' usage against its own nominal quota (and its borrowing limit); and for the
//! headline, every ClusterQueue's peak borrowed beyond its nominal quota.
//!
//! A stack draws at most [`MAX_LAYERS`] members (those with the highest peaks), the others
//! summed in one layer ([`super::stack`]). A ClusterQueue without a cohort is a tree of its
//! own; a tree's nominal quota is the sum of every node's (ClusterQueues and Cohorts), as the
//! fairness report's capacity.

use crate::quota::{FrIdx, NodeId};
use crate::sim::Simulation;

use super::charts::{Line, Reference};
use super::downsample::min_max;
use super::model::{MAX_POINTS, Series, unit_of};
use super::palette::{Colour, Palette};
use super::stack::{MAX_LAYERS, Member, Stacked, Steps, peak, set, stack};

/// Trees drawn ClusterQueue by ClusterQueue, per flavor/resource: those with the highest peaks.
pub const MAX_TREE_CHARTS: usize = 3;

/// A ClusterQueue's usage against its own quota, for the chart's table.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaRow {
    pub name: String,
    pub nominal: f64,
    pub borrowing_limit: Option<f64>,
    pub peak: f64,
    pub peak_borrowed: f64,
    /// Virtual seconds spent borrowing up to its limit.
    pub at_limit: f64,
}

/// The usage of some ClusterQueues of one tree, each against its own nominal quota.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnQuota {
    pub tree: String,
    pub resource: String,
    pub unit: &'static str,
    /// Per ClusterQueue drawn (the highest peaks of usage against nominal quota): its usage,
    /// a step function, and when their nominal quotas differ, its nominal quota after it.
    pub series: Vec<Series>,
    /// The series are pairs of a usage and its nominal quota (drawn dashed).
    pub paired: bool,
    /// The nominal quota (dashed) and the nominal quota plus the borrowing limit (dotted) the
    /// ClusterQueues drawn share, if they do.
    pub references: Vec<Reference>,
    /// How many ClusterQueues of the tree used the resource.
    pub of: usize,
    /// One per ClusterQueue drawn.
    pub rows: Vec<QuotaRow>,
}

/// A ClusterQueue's quota and peak borrowed of one flavor/resource, for the headline.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueUsage {
    pub name: String,
    pub resource: String,
    pub unit: &'static str,
    pub nominal: f64,
    pub peak_borrowed: f64,
}

/// Usage over time, stacked per cohort tree.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Usage {
    /// Per flavor/resource: every tree stacked (only when there are several trees).
    pub overall: Vec<Stacked>,
    /// Per flavor/resource, per tree among those with the highest peaks: its ClusterQueues.
    pub trees: Vec<Stacked>,
    /// Per drawn tree: its ClusterQueues against their own nominal quota.
    pub own: Vec<OwnQuota>,
    /// Every ClusterQueue's quota and peak borrowed, per flavor/resource it has quota for.
    pub queues: Vec<QueueUsage>,
    /// Trees in the cluster.
    pub tree_count: usize,
}

/// `steps` less `nominal`, where above it.
fn beyond(steps: &[(f64, i64)], nominal: i64) -> Steps {
    steps
        .iter()
        .map(|&(t, v)| (t, (v - nominal).max(0)))
        .collect()
}

/// The [`MAX_LAYERS`] of `members` (ClusterQueues of `tree`) with the highest peaks of usage
/// against their nominal quota, each against it.
fn own_quota(
    tree: &str,
    fr: (&str, &'static str, f64),
    members: &[Member<'_>],
    duration: f64,
) -> OwnQuota {
    let (resource, unit, per_unit) = fr;
    let units = |v: i64| v as f64 / per_unit;
    let against = |m: &Member<'_>| peak(m.steps) as f64 / (m.nominal.max(1) as f64);
    let mut drawn: Vec<&Member<'_>> = members.iter().collect();
    drawn.sort_by(|a, b| {
        against(b)
            .total_cmp(&against(a))
            .then_with(|| a.name.cmp(&b.name))
    });
    drawn.truncate(MAX_LAYERS);
    let shared = |f: &dyn Fn(&Member<'_>) -> Option<i64>| {
        let first = f(drawn.first()?)?;
        drawn.iter().all(|m| f(m) == Some(first)).then_some(first)
    };
    let nominal = shared(&|m| Some(m.nominal));
    let limit = shared(&|m| m.borrowing_limit);
    let mut references = Vec::new();
    if let Some(n) = nominal {
        references.push(Reference::new(
            "nominal quota (each)",
            units(n),
            Line::Dashed,
        ));
        if let Some(l) = limit {
            references.push(Reference::new(
                "nominal + borrowing limit (each)",
                units(n + l),
                Line::Dotted,
            ));
        }
    }
    let mut series = Vec::new();
    let mut rows = Vec::new();
    for m in drawn {
        let borrowed = beyond(m.steps, m.nominal);
        let at_limit = m.borrowing_limit.map_or(0.0, |l| {
            borrowed
                .iter()
                .zip(borrowed.iter().skip(1).map(|s| s.0).chain([duration]))
                .filter(|((_, v), _)| *v >= l)
                .map(|((t, _), next)| next - t)
                .sum()
        });
        let points: Vec<(f64, f64)> = m.steps.iter().map(|&(t, v)| (t, units(v))).collect();
        series.push(Series {
            name: m.name.clone(),
            points: min_max(&points, MAX_POINTS),
            colour: m.colour,
        });
        if nominal.is_none() {
            series.push(Series {
                name: format!("{} nominal quota", m.name),
                points: vec![(0.0, units(m.nominal)), (duration, units(m.nominal))],
                colour: m.colour,
            });
        }
        rows.push(QuotaRow {
            name: m.name.clone(),
            nominal: units(m.nominal),
            borrowing_limit: m.borrowing_limit.map(units),
            peak: units(peak(m.steps)),
            peak_borrowed: units(peak(&borrowed)),
            at_limit,
        });
    }
    OwnQuota {
        tree: tree.to_string(),
        resource: resource.to_string(),
        unit,
        series,
        paired: nominal.is_none(),
        references,
        of: members.len(),
        rows,
    }
}

/// The usage charts of a run (see the module documentation), each ClusterQueue in its colour
/// of `palette`.
pub fn build(sim: &Simulation, duration: f64, palette: &Palette) -> Usage {
    let cluster = sim.cluster();
    let t0 = sim.t0();
    let secs = |t: i64| (t.max(t0) - t0) as f64 / 1000.0;
    let tree = &cluster.tree;
    let n_fr = tree.n_fr();

    // The trees, in the order their first ClusterQueue comes.
    let mut roots: Vec<NodeId> = Vec::new();
    let tree_of: Vec<usize> = cluster
        .cluster_queues
        .iter()
        .map(|cq| {
            let root = tree.root(cq.node);
            roots.iter().position(|&r| r == root).unwrap_or_else(|| {
                roots.push(root);
                roots.len() - 1
            })
        })
        .collect();
    let n_cq = cluster.cluster_queues.len();
    let (mut cq_now, mut tree_now, mut all_now) = (
        vec![0i64; n_cq * n_fr],
        vec![0i64; roots.len() * n_fr],
        vec![0i64; n_fr],
    );
    let mut cq_steps: Vec<Steps> = vec![Vec::new(); n_cq * n_fr];
    let mut tree_steps: Vec<Steps> = vec![Vec::new(); roots.len() * n_fr];
    let mut all_steps: Vec<Steps> = vec![Vec::new(); n_fr];
    for change in &sim.usage_log {
        let t = secs(change.at);
        let cq = change.admission.cluster_queue.index();
        let tr = tree_of[cq];
        for &(fr, v) in &change.admission.usage {
            let (fr, delta) = (fr.index(), change.sign() * v);
            for (now, steps, i) in [
                (&mut cq_now, &mut cq_steps, cq * n_fr + fr),
                (&mut tree_now, &mut tree_steps, tr * n_fr + fr),
                (&mut all_now, &mut all_steps, fr),
            ] {
                if steps[i].is_empty() && t > 0.0 {
                    steps[i].push((0.0, 0));
                }
                now[i] += delta;
                set(&mut steps[i], t, now[i]);
            }
        }
    }
    for steps in cq_steps
        .iter_mut()
        .chain(&mut tree_steps)
        .chain(&mut all_steps)
    {
        if let Some(&(t, v)) = steps.last()
            && t < duration
        {
            steps.push((duration, v));
        }
    }

    // Σ nominal quota over every node of each tree, per flavor/resource.
    let capacity: Vec<Vec<i64>> = roots
        .iter()
        .map(|&root| {
            let mut sum = vec![0i64; n_fr];
            let mut stack = vec![root];
            while let Some(n) = stack.pop() {
                for (s, q) in sum.iter_mut().zip(tree.quotas(n)) {
                    *s = s.saturating_add(q.nominal);
                }
                stack.extend(tree.node(n).children.iter().copied());
            }
            sum
        })
        .collect();

    let mut usage = Usage {
        tree_count: roots.len(),
        ..Usage::default()
    };
    for cq in &cluster.cluster_queues {
        for &fr in &cq.frs {
            let name = cluster.fr_name(fr);
            let (unit, per_unit) = unit_of(&name);
            let nominal = tree.quota(cq.node, fr).nominal;
            let steps = &cq_steps[cq.id.index() * n_fr + fr.index()];
            usage.queues.push(QueueUsage {
                name: cq.name.clone(),
                resource: name,
                unit,
                nominal: nominal as f64 / per_unit,
                peak_borrowed: peak(&beyond(steps, nominal)) as f64 / per_unit,
            });
        }
    }
    for fr in 0..n_fr {
        if all_steps[fr].is_empty() {
            continue;
        }
        let name = cluster.fr_name(FrIdx(fr as u32));
        let (unit, per_unit) = unit_of(&name);
        let fr_info = (name.as_str(), unit, per_unit);
        let units = |v: i64| v as f64 / per_unit;
        let mut used: Vec<usize> = (0..roots.len())
            .filter(|&t| !tree_steps[t * n_fr + fr].is_empty())
            .collect();
        if roots.len() > 1 {
            let members = used
                .iter()
                .map(|&t| Member {
                    name: tree.node(roots[t]).name.clone(),
                    colour: Colour::Nth(t),
                    steps: &tree_steps[t * n_fr + fr],
                    nominal: capacity[t][fr],
                    borrowing_limit: None,
                })
                .collect();
            let nominal: i64 = capacity.iter().map(|c| c[fr]).sum();
            usage.overall.push(stack(
                "all cohort trees".into(),
                "cohort tree",
                fr_info,
                &all_steps[fr],
                members,
                vec![Reference::new(
                    "nominal quota of every tree",
                    units(nominal),
                    Line::Solid,
                )],
            ));
        }
        used.sort_by(|&a, &b| {
            peak(&tree_steps[b * n_fr + fr])
                .cmp(&peak(&tree_steps[a * n_fr + fr]))
                .then(a.cmp(&b))
        });
        for &t in used.iter().take(MAX_TREE_CHARTS) {
            let tree_name = tree.node(roots[t]).name.clone();
            let members: Vec<Member<'_>> = cluster
                .cluster_queues
                .iter()
                .filter(|cq| tree_of[cq.id.index()] == t)
                .filter(|cq| !cq_steps[cq.id.index() * n_fr + fr].is_empty())
                .map(|cq| {
                    let quota = tree.quota(cq.node, FrIdx(fr as u32));
                    Member {
                        name: cq.name.clone(),
                        colour: palette.cluster_queue(&cq.name),
                        steps: &cq_steps[cq.id.index() * n_fr + fr],
                        nominal: quota.nominal,
                        borrowing_limit: quota.borrowing_limit,
                    }
                })
                .collect();
            usage
                .own
                .push(own_quota(&tree_name, fr_info, &members, duration));
            let mut references = vec![Reference::new(
                "nominal quota of the tree",
                units(capacity[t][fr]),
                Line::Solid,
            )];
            let own: i64 = cluster
                .cluster_queues
                .iter()
                .filter(|cq| tree_of[cq.id.index()] == t)
                .map(|cq| tree.quota(cq.node, FrIdx(fr as u32)).nominal)
                .sum();
            if own != capacity[t][fr] {
                references.push(Reference::new(
                    "the ClusterQueues' own nominal quota",
                    units(own),
                    Line::Dashed,
                ));
            }
            usage.trees.push(stack(
                tree_name,
                "ClusterQueue",
                fr_info,
                &tree_steps[t * n_fr + fr],
                members,
                references,
            ));
        }
    }
    usage
}
