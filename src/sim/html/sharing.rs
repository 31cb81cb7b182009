//! Fair sharing over time, from the report's fairness section ([`crate::sim::fairness`]): per
//! flavor/resource, the share of its cohort tree's capacity each ClusterQueue held over time
//! (the report's samples, each held until the next) against its weighted entitlement
//! (`fairSharing.weight / Σ weights` of the tree's ClusterQueues with demand), for the
//! [`MAX_QUEUES`] ClusterQueues whose share strayed furthest from their entitlement; and Jain's
//! index over the ClusterQueues' shares at each sample.

use std::collections::BTreeMap;

use crate::sim::fairness::{Fairness, jain};

use super::downsample::min_max;
use super::model::{MAX_POINTS, Series};
use super::palette::{Colour, Palette};

/// ClusterQueues drawn per chart (each a share and an entitlement line).
pub const MAX_QUEUES: usize = 4;

/// A ClusterQueue's share and entitlement, for the chart's table.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareRow {
    pub name: String,
    pub tree: String,
    pub weight: f64,
    pub entitlement: f64,
    /// Time-weighted average share over the run.
    pub average: f64,
    /// The highest sampled share.
    pub peak: f64,
    /// average / entitlement.
    pub ratio: Option<f64>,
}

/// Share vs weighted entitlement of one flavor/resource.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareChart {
    pub resource: String,
    /// In pairs per ClusterQueue: its share over time (a step function), then its
    /// entitlement (constant).
    pub series: Vec<Series>,
    /// How many ClusterQueues with demand declare quota for the resource.
    pub of: usize,
    pub rows: Vec<ShareRow>,
}

/// (seconds, share) samples of one ClusterQueue.
type Points = Vec<(f64, f64)>;

/// The charts of `fairness`, over a run of `duration` seconds, each ClusterQueue in its colour
/// of `palette`.
pub fn shares(fairness: &Fairness, duration: f64, palette: &Palette) -> Vec<ShareChart> {
    // flavor/resource → ClusterQueue → its samples.
    let mut per_fr: BTreeMap<&str, BTreeMap<&str, Points>> = BTreeMap::new();
    for sample in &fairness.samples {
        for (cq, shares) in &sample.shares {
            for (fr, &s) in shares {
                per_fr
                    .entry(fr)
                    .or_default()
                    .entry(cq)
                    .or_default()
                    .push((sample.time, s));
            }
        }
    }
    let mut out = Vec::new();
    for (fr, queues) in per_fr {
        let entitlement = |cq: &str| {
            fairness
                .cluster_queues
                .get(cq)
                .and_then(|q| q.resources.get(fr))
                .map_or(0.0, |r| r.entitlement)
        };
        let mut ranked: Vec<(&str, Points, f64)> = queues
            .into_iter()
            .map(|(cq, points)| {
                let e = entitlement(cq);
                let strayed = points.iter().map(|p| (p.1 - e).abs()).fold(0.0, f64::max);
                (cq, points, strayed)
            })
            .collect();
        let of = ranked.len();
        ranked.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.0.cmp(b.0)));
        ranked.truncate(MAX_QUEUES);
        let mut series = Vec::with_capacity(ranked.len() * 2);
        let mut rows = Vec::with_capacity(ranked.len());
        for (cq, points, _) in ranked {
            let e = entitlement(cq);
            let queue = fairness.cluster_queues.get(cq);
            let resource = queue.and_then(|q| q.resources.get(fr));
            rows.push(ShareRow {
                name: cq.to_string(),
                tree: queue.map_or_else(String::new, |q| q.tree.clone()),
                weight: queue.map_or(1.0, |q| q.weight),
                entitlement: e,
                average: resource.map_or(0.0, |r| r.share),
                peak: points.iter().map(|p| p.1).fold(0.0, f64::max),
                ratio: resource.and_then(|r| r.ratio),
            });
            let colour = palette.cluster_queue(cq);
            series.push(Series {
                name: format!("{cq} share"),
                points: min_max(&points, MAX_POINTS),
                colour,
            });
            series.push(Series {
                name: format!("{cq} entitlement"),
                points: vec![(0.0, e), (duration, e)],
                colour,
            });
        }
        out.push(ShareChart {
            resource: fr.to_string(),
            series,
            of,
            rows,
        });
    }
    out
}

/// Jain's index over the ClusterQueues' shares at each sample, per flavor/resource.
pub fn jain_over_time(fairness: &Fairness) -> Vec<Series> {
    let mut points: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for sample in &fairness.samples {
        let mut per_fr: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for shares in sample.shares.values() {
            for (fr, &s) in shares {
                per_fr.entry(fr).or_default().push(s);
            }
        }
        for (fr, xs) in per_fr {
            if let Some(j) = jain(&xs) {
                points
                    .entry(fr.to_string())
                    .or_default()
                    .push((sample.time, j));
            }
        }
    }
    points
        .into_iter()
        .enumerate()
        .map(|(k, (name, points))| Series {
            name,
            points: min_max(&points, MAX_POINTS),
            colour: Colour::Nth(k),
        })
        .collect()
}
