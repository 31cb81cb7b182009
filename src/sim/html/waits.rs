//! Waits (all the time a workload spent pending, censored at the end of the run, as the
//! report's summary counts them) of every workload that arrived, grouped by workload class
//! (`sim.wasq.dev/class`) and by LocalQueue, each grouping drawn when the run has one: at most
//! [`MAX_GROUPS`] groups per chart (those with the longest p95 waits), the others pooled into
//! one.

use std::collections::BTreeMap;

use crate::sim::{CLASS, Simulation};

use super::palette::{Colour, Palette};

/// Groups drawn per chart; the others are pooled.
pub const MAX_GROUPS: usize = 7;

/// Waits of one group, sorted ascending (seconds).
#[derive(Debug, Clone, PartialEq)]
pub struct Waits {
    pub name: String,
    pub seconds: Vec<f64>,
    pub colour: Colour,
}

/// The waits under one grouping.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitsChart {
    /// `workload class` or `LocalQueue`.
    pub by: &'static str,
    /// The groups with the longest p95 waits, then the others pooled.
    pub groups: Vec<Waits>,
    /// How many groups had a workload that arrived.
    pub of: usize,
}

/// The quantile `q` of sorted values (nearest rank); NaN for none.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// One chart of `groups`: the [`MAX_GROUPS`] with the longest p95 waits, the others pooled;
/// each group in its `colour` (given its name and rank by name).
fn chart(
    by: &'static str,
    plural: &str,
    groups: BTreeMap<String, Vec<f64>>,
    colour: impl Fn(&str, usize) -> Colour,
) -> WaitsChart {
    let mut groups: Vec<Waits> = groups
        .into_iter()
        .enumerate()
        .map(|(k, (name, mut seconds))| {
            seconds.sort_by(f64::total_cmp);
            let colour = colour(&name, k);
            Waits {
                name,
                seconds,
                colour,
            }
        })
        .collect();
    let of = groups.len();
    if of > MAX_GROUPS + 1 {
        groups.sort_by(|a, b| {
            quantile(&b.seconds, 0.95)
                .total_cmp(&quantile(&a.seconds, 0.95))
                .then_with(|| a.name.cmp(&b.name))
        });
        let mut pooled: Vec<f64> = groups.drain(MAX_GROUPS..).flat_map(|w| w.seconds).collect();
        pooled.sort_by(f64::total_cmp);
        groups.push(Waits {
            name: format!("the other {} {plural}", of - MAX_GROUPS),
            seconds: pooled,
            colour: Colour::Others,
        });
    }
    WaitsChart { by, groups, of }
}

/// The charts of a run: by workload class when any workload has one, by LocalQueue when any
/// workload came through one; a LocalQueue in its colour of `palette`.
pub fn build(sim: &Simulation, palette: &Palette) -> Vec<WaitsChart> {
    let cluster = sim.cluster();
    let mut by_class: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut by_lq: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut lq_names: Vec<Option<String>> = vec![None; cluster.local_queues.len()];
    for (wl, fate) in cluster.workloads.iter().zip(crate::sim::waits::fates(sim)) {
        let Some(fate) = fate else {
            continue;
        };
        let wait = fate.wait;
        if let Some(class) = wl.annotations.get(CLASS) {
            by_class.entry(class.to_string()).or_default().push(wait);
        }
        if let Some(lq) = wl.lq {
            let name = lq_names[lq.index()].get_or_insert_with(|| {
                let lq = &cluster.local_queues[lq.index()];
                format!("{}/{}", lq.namespace, lq.name)
            });
            by_lq.entry(name.clone()).or_default().push(wait);
        }
    }
    let mut out = Vec::new();
    if !by_class.is_empty() {
        out.push(chart("workload class", "classes", by_class, |_, k| {
            Colour::Nth(k)
        }));
    }
    if !by_lq.is_empty() {
        out.push(chart("LocalQueue", "LocalQueues", by_lq, |name, _| {
            palette.local_queue(name)
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_eight_groups_the_seven_longest_waits_are_drawn_and_the_rest_pooled() {
        let groups: BTreeMap<String, Vec<f64>> = (0..10)
            .map(|k| (format!("lq-{k}"), vec![k as f64 * 10.0, k as f64]))
            .collect();
        let c = chart("LocalQueue", "LocalQueues", groups, |_, k| Colour::Nth(k));
        assert_eq!(c.of, 10);
        let names: Vec<&str> = c.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "lq-9",
                "lq-8",
                "lq-7",
                "lq-6",
                "lq-5",
                "lq-4",
                "lq-3",
                "the other 3 LocalQueues"
            ]
        );
        assert_eq!(c.groups[0].seconds, [9.0, 90.0]);
        assert_eq!(c.groups[7].seconds, [0.0, 0.0, 1.0, 2.0, 10.0, 20.0]);
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let xs = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&xs, 0.5), 2.0);
        assert_eq!(quantile(&xs, 0.95), 4.0);
        assert!(quantile(&[], 0.5).is_nan());
    }
}
