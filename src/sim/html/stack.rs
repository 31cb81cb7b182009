//! Stacks of step functions: the members with the highest peaks drawn one by one, the others
//! summed in one layer, at the instants [`min_max_indices`] keeps of the total, so that the
//! layers sum to the total at every drawn instant and the total's highs and lows are kept. The
//! usage of a cohort tree per ClusterQueue ([`super::usage`]) and the backlog per
//! ClusterQueue ([`super::backlog`]) are stacks.

use super::charts::Reference;
use super::downsample::min_max_indices;
use super::model::MAX_POINTS;
use super::palette::Colour;

/// Members drawn in one stack (or one chart against own quota); the others are one more layer.
pub const MAX_LAYERS: usize = 7;

/// A step function in whole units (milli-units of a resource, workloads): (seconds, value
/// from then on), seconds ascending.
pub type Steps = Vec<(f64, i64)>;

/// Appends `(t, v)`, or replaces the last value when it is at `t` too (of the changes at one
/// instant only the outcome is drawn).
pub fn set(steps: &mut Steps, t: f64, v: i64) {
    match steps.last_mut() {
        Some(last) if last.0 == t => last.1 = v,
        _ => steps.push((t, v)),
    }
}

/// The values of `steps` at each of `times` (ascending); 0 before its first point.
pub fn at_times(steps: &[(f64, i64)], times: &[f64]) -> Vec<i64> {
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
    pub colour: Colour,
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
    pub references: Vec<Reference>,
    /// One per layer.
    pub rows: Vec<MemberRow>,
}

/// A member of a stack before drawing.
pub struct Member<'a> {
    pub name: String,
    pub colour: Colour,
    pub steps: &'a [(f64, i64)],
    pub nominal: i64,
    pub borrowing_limit: Option<i64>,
}

pub fn peak(steps: &[(f64, i64)]) -> i64 {
    steps.iter().map(|s| s.1).max().unwrap_or(0)
}

/// The stack of `members` whose sum is `total`.
pub fn stack(
    group: String,
    member: &'static str,
    fr: (&str, &'static str, f64),
    total: &[(f64, i64)],
    mut members: Vec<Member<'_>>,
    references: Vec<Reference>,
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
            colour: m.colour,
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
            colour: Colour::Others,
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
                colour: Colour::Nth(k),
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
