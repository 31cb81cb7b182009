//! Usage over time, stacked per cohort tree, from the simulation's log of reservations and
//! releases: per flavor/resource, one chart of every tree stacked (when there are several)
//! against their nominal quota together, then for the trees with the highest peaks one chart
//! of their ClusterQueues stacked against the tree's nominal quota, and one of what those
//! ClusterQueues borrowed beyond their own nominal quota against their borrowing limit.
//!
//! A stack draws at most [`MAX_LAYERS`] members (those with the highest peaks), the others
//! summed in one layer; its instants are those [`min_max_indices`] keeps of the stack's total,
//! so the layers sum to the total at every drawn instant and the total's highs and lows are
//! kept. A ClusterQueue without a cohort is a tree of its own; a tree's nominal quota is the
//! sum of every node's (ClusterQueues and Cohorts), as the fairness report's capacity.

use crate::quota::{FrIdx, NodeId};
use crate::sim::Simulation;

use super::downsample::{min_max, min_max_indices};
use super::model::{MAX_POINTS, Series, unit_of};

/// Members drawn in one stack (or one borrowing chart); the others are one more layer.
pub const MAX_LAYERS: usize = 7;

/// Trees drawn ClusterQueue by ClusterQueue, per flavor/resource: those with the highest peaks.
pub const MAX_TREE_CHARTS: usize = 3;

/// A step function in milli-units: (seconds, value from then on), seconds ascending.
type Steps = Vec<(f64, i64)>;

/// Appends `(t, v)`, or replaces the last value when it is at `t` too (of the changes at one
/// instant only the outcome is drawn).
fn set(steps: &mut Steps, t: f64, v: i64) {
    match steps.last_mut() {
        Some(last) if last.0 == t => last.1 = v,
        _ => steps.push((t, v)),
    }
}

/// The values of `steps` at each of `times` (ascending); 0 before its first point.
fn at_times(steps: &[(f64, i64)], times: &[f64]) -> Vec<i64> {
    let mut at = 0;
    let mut value = 0;
    times
        .iter()
        .map(|&t| {
            while at < steps.len() && steps[at].0 <= t {
                value = steps[at].1;
                at += 1;
            }
            value
        })
        .collect()
}

/// One layer of a stack: its values at the stack's instants.
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    pub name: String,
    pub values: Vec<f64>,
}

/// A member of a stack as its table lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberRow {
    pub name: String,
    pub nominal: f64,
    /// `None`: no limit (or not one member: a tree, the others together).
    pub borrowing_limit: Option<f64>,
    pub peak: f64,
}

/// Usage of one flavor/resource, stacked by member.
#[derive(Debug, Clone, PartialEq)]
pub struct Stacked {
    /// `all cohort trees`, or the tree's name.
    pub group: String,
    /// What a layer is: `cohort tree` or `ClusterQueue`.
    pub member: &'static str,
    pub resource: String,
    pub unit: &'static str,
    /// The instants drawn (seconds), ascending; each layer's value holds until the next.
    pub times: Vec<f64>,
    /// Bottom first: the members with the highest peaks, then the others together.
    pub layers: Vec<Layer>,
    /// How many members used the resource.
    pub of: usize,
    /// Horizontal reference lines: legend label and value.
    pub references: Vec<(String, f64)>,
    /// One per layer.
    pub rows: Vec<MemberRow>,
}

/// A ClusterQueue's borrowing, for the borrowing chart's table.
#[derive(Debug, Clone, PartialEq)]
pub struct BorrowRow {
    pub name: String,
    pub nominal: f64,
    pub borrowing_limit: Option<f64>,
    pub peak_borrowed: f64,
    /// Virtual seconds spent borrowing up to its limit.
    pub at_limit: f64,
}

/// What the ClusterQueues of one tree borrowed beyond their nominal quota over time.
#[derive(Debug, Clone, PartialEq)]
pub struct Borrowing {
    pub tree: String,
    pub resource: String,
    pub unit: &'static str,
    /// Per ClusterQueue that borrowed (the highest peaks): borrowed amount, a step function.
    pub series: Vec<Series>,
    /// The borrowing limit all the drawn ClusterQueues share, if they do.
    pub limit: Option<f64>,
    /// How many ClusterQueues of the tree borrowed.
    pub of: usize,
    pub rows: Vec<BorrowRow>,
}

/// Usage over time, stacked per cohort tree.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Usage {
    /// Per flavor/resource: every tree stacked (only when there are several trees).
    pub overall: Vec<Stacked>,
    /// Per flavor/resource, per tree among those with the highest peaks: its ClusterQueues.
    pub trees: Vec<Stacked>,
    /// Per drawn tree: what its ClusterQueues borrowed (when any did).
    pub borrowing: Vec<Borrowing>,
    /// Trees in the cluster.
    pub tree_count: usize,
}

/// A member of a stack before drawing.
struct Member<'a> {
    name: String,
    steps: &'a [(f64, i64)],
    nominal: i64,
    borrowing_limit: Option<i64>,
}

fn peak(steps: &[(f64, i64)]) -> i64 {
    steps.iter().map(|s| s.1).max().unwrap_or(0)
}

/// The stack of `members` whose sum is `total`.
fn stack(
    group: String,
    member: &'static str,
    fr: (&str, &'static str, f64),
    total: &[(f64, i64)],
    mut members: Vec<Member<'_>>,
    references: Vec<(String, f64)>,
) -> Stacked {
    let (resource, unit, per_unit) = fr;
    let units = |v: i64| v as f64 / per_unit;
    members.sort_by(|a, b| {
        peak(b.steps)
            .cmp(&peak(a.steps))
            .then_with(|| a.name.cmp(&b.name))
    });
    let of = members.len();
    // Eight colours: eight members are drawn as they are, more as seven and the others.
    let shown = if of > MAX_LAYERS + 1 { MAX_LAYERS } else { of };
    let instants: Vec<f64> = total.iter().map(|p| p.0).collect();
    // The others: the total less the members drawn, at every instant the total changed.
    let others: Option<Steps> = (of > shown).then(|| {
        let mut rest: Vec<i64> = total.iter().map(|p| p.1).collect();
        for m in &members[..shown] {
            for (r, v) in rest.iter_mut().zip(at_times(m.steps, &instants)) {
                *r -= v;
            }
        }
        instants.iter().copied().zip(rest).collect()
    });
    let drawn: Vec<(f64, f64)> = total.iter().map(|&(t, v)| (t, v as f64)).collect();
    let times: Vec<f64> = min_max_indices(&drawn, MAX_POINTS)
        .into_iter()
        .map(|i| instants[i])
        .collect();
    let mut layers = Vec::with_capacity(shown + 1);
    let mut rows = Vec::with_capacity(shown + 1);
    for m in &members[..shown] {
        layers.push(Layer {
            name: m.name.clone(),
            values: at_times(m.steps, &times).into_iter().map(units).collect(),
        });
        rows.push(MemberRow {
            name: m.name.clone(),
            nominal: units(m.nominal),
            borrowing_limit: m.borrowing_limit.map(units),
            peak: units(peak(m.steps)),
        });
    }
    if let Some(rest) = others {
        let name = format!("the other {} {member}s", of - shown);
        layers.push(Layer {
            name: name.clone(),
            values: at_times(&rest, &times).into_iter().map(units).collect(),
        });
        rows.push(MemberRow {
            name,
            nominal: units(members[shown..].iter().map(|m| m.nominal).sum()),
            borrowing_limit: None,
            peak: units(peak(&rest)),
        });
    }
    Stacked {
        group,
        member,
        resource: resource.to_string(),
        unit,
        times,
        layers,
        of,
        references,
        rows,
    }
}

/// What the ClusterQueues among `members` borrowed beyond their nominal quota.
fn borrowing(
    tree: &str,
    fr: (&str, &'static str, f64),
    members: &[Member<'_>],
    duration: f64,
) -> Option<Borrowing> {
    let (resource, unit, per_unit) = fr;
    let units = |v: i64| v as f64 / per_unit;
    let mut borrowed: Vec<(&Member<'_>, Steps, i64)> = members
        .iter()
        .filter_map(|m| {
            let steps: Steps = m
                .steps
                .iter()
                .map(|&(t, v)| (t, (v - m.nominal).max(0)))
                .collect();
            let top = peak(&steps);
            (top > 0).then_some((m, steps, top))
        })
        .collect();
    if borrowed.is_empty() {
        return None;
    }
    borrowed.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.name.cmp(&b.0.name)));
    let of = borrowed.len();
    borrowed.truncate(MAX_LAYERS);
    let limits: Vec<Option<i64>> = borrowed.iter().map(|b| b.0.borrowing_limit).collect();
    let limit = match limits.first() {
        Some(&Some(l)) if limits.iter().all(|&x| x == Some(l)) => Some(units(l)),
        _ => None,
    };
    let mut series = Vec::new();
    let mut rows = Vec::new();
    for (m, steps, top) in borrowed {
        let at_limit = m.borrowing_limit.map_or(0.0, |l| {
            steps
                .iter()
                .zip(steps.iter().skip(1).map(|s| s.0).chain([duration]))
                .filter(|((_, v), _)| *v >= l)
                .map(|((t, _), next)| next - t)
                .sum()
        });
        let name = match (limit, m.borrowing_limit) {
            (None, Some(l)) => format!("{} (limit {} {unit})", m.name, units(l)),
            _ => m.name.clone(),
        };
        let points: Vec<(f64, f64)> = steps.iter().map(|&(t, v)| (t, units(v))).collect();
        series.push(Series {
            name,
            points: min_max(&points, MAX_POINTS),
        });
        rows.push(BorrowRow {
            name: m.name.clone(),
            nominal: units(m.nominal),
            borrowing_limit: m.borrowing_limit.map(units),
            peak_borrowed: units(top),
            at_limit,
        });
    }
    Some(Borrowing {
        tree: tree.to_string(),
        resource: resource.to_string(),
        unit,
        series,
        limit,
        of,
        rows,
    })
}

/// The usage charts of a run (see the module documentation).
pub fn build(sim: &Simulation, duration: f64) -> Usage {
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
                vec![("nominal quota of every tree".into(), units(nominal))],
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
                        steps: &cq_steps[cq.id.index() * n_fr + fr],
                        nominal: quota.nominal,
                        borrowing_limit: quota.borrowing_limit,
                    }
                })
                .collect();
            if let Some(b) = borrowing(&tree_name, fr_info, &members, duration) {
                usage.borrowing.push(b);
            }
            let mut references = vec![("nominal quota of the tree".into(), units(capacity[t][fr]))];
            let own: i64 = cluster
                .cluster_queues
                .iter()
                .filter(|cq| tree_of[cq.id.index()] == t)
                .map(|cq| tree.quota(cq.node, FrIdx(fr as u32)).nominal)
                .sum();
            if own != capacity[t][fr] {
                references.push(("the ClusterQueues' own nominal quota".into(), units(own)));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_at_times_hold_until_the_next_change() {
        let steps = [(1.0, 5), (3.0, 2), (3.5, 7)];
        assert_eq!(
            at_times(&steps, &[0.0, 1.0, 2.0, 3.0, 3.4, 9.0]),
            [0, 5, 5, 2, 2, 7]
        );
    }

    #[test]
    fn a_stack_of_many_members_draws_the_highest_peaks_and_the_others_sum_to_the_total() {
        // Ten members, member k holding k+1 from second k until second 20 + k.
        let steps: Vec<Steps> = (0..10)
            .map(|k| vec![(k as f64, (k + 1) * 1000), (20.0 + k as f64, 0)])
            .collect();
        let mut total: Steps = Vec::new();
        let mut instants: Vec<f64> = steps.iter().flatten().map(|s| s.0).collect();
        instants.sort_by(f64::total_cmp);
        instants.dedup();
        for t in instants {
            let v = steps.iter().map(|s| at_times(s, &[t])[0]).sum();
            total.push((t, v));
        }
        let members = steps
            .iter()
            .enumerate()
            .map(|(k, s)| Member {
                name: format!("cq-{k}"),
                steps: s,
                nominal: 1000,
                borrowing_limit: Some(2000),
            })
            .collect();
        let s = stack(
            "tree".into(),
            "ClusterQueue",
            ("default/cpu", "cores", 1000.0),
            &total,
            members,
            Vec::new(),
        );
        assert_eq!(s.of, 10);
        let names: Vec<&str> = s.layers.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "cq-9",
                "cq-8",
                "cq-7",
                "cq-6",
                "cq-5",
                "cq-4",
                "cq-3",
                "the other 3 ClusterQueues"
            ]
        );
        for (i, &t) in s.times.iter().enumerate() {
            let sum: f64 = s.layers.iter().map(|l| l.values[i]).sum();
            assert_eq!(sum, at_times(&total, &[t])[0] as f64 / 1000.0, "at {t}");
        }
        let others = s.rows.last().unwrap();
        assert_eq!((others.nominal, others.peak), (3.0, 6.0));
        assert_eq!(s.rows[0].borrowing_limit, Some(2.0));
    }
}
