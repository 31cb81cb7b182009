//! Cost attribution in the simulator's report: the attribution labels of each workload (the
//! configured LocalQueue label keys copied onto it, as the controller copies them) and, per
//! label key and value, how many workloads ran and the resource-seconds they held per
//! flavor/resource — the figure OpenCost or Kubecost would attribute to that team.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Simulation;
use crate::cluster::Millis;

/// What the workloads carrying one label value used.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelUsage {
    pub workloads: u64,
    pub admitted: u64,
    /// `flavor/resource` → quota held over the run, in resource-seconds (cpu-seconds,
    /// GPU-seconds, byte-seconds for memory).
    pub resource_seconds: BTreeMap<String, f64>,
}

/// label key → label value → usage.
pub type CostAttribution = BTreeMap<String, BTreeMap<String, LabelUsage>>;

/// Quota held by each workload over the run: per workload, per flavor-resource index,
/// milli-units × milliseconds.
fn held(sim: &Simulation) -> Vec<BTreeMap<usize, i128>> {
    let n = sim.cluster().workloads.len();
    let mut total: Vec<BTreeMap<usize, i128>> = vec![BTreeMap::new(); n];
    let mut current: Vec<BTreeMap<usize, i128>> = vec![BTreeMap::new(); n];
    let t0 = sim.t0();
    for change in &sim.usage_log {
        let at: Millis = change.at.max(t0);
        let w = change.workload.index();
        for &(fr, v) in &change.admission.usage {
            let signed = i128::from(change.sign()) * i128::from(v);
            *total[w].entry(fr.index()).or_default() -= signed * i128::from(at);
            *current[w].entry(fr.index()).or_default() += signed;
        }
    }
    let now = i128::from(sim.now());
    for (w, held) in current.into_iter().enumerate() {
        for (fr, v) in held {
            *total[w].entry(fr).or_default() += v * now;
        }
    }
    total
}

/// The cost-attribution summary; empty when no workload carries an attribution label.
pub fn build(sim: &Simulation) -> CostAttribution {
    let mut out = CostAttribution::new();
    if sim.labels.iter().all(BTreeMap::is_empty) {
        return out;
    }
    let cluster = sim.cluster();
    let held = held(sim);
    for wl in &cluster.workloads {
        let i = wl.id.index();
        for (key, value) in &sim.labels[i] {
            let entry = out
                .entry(key.clone())
                .or_default()
                .entry(value.clone())
                .or_default();
            entry.workloads += 1;
            if sim.lives[i].first_admitted().is_some() {
                entry.admitted += 1;
            }
            for (&fr, &v) in &held[i] {
                let name = cluster.fr_name(crate::quota::FrIdx(fr as u32));
                // milli-units × ms → units × s.
                *entry.resource_seconds.entry(name).or_default() += v as f64 / 1e6;
            }
        }
    }
    for values in out.values_mut() {
        for usage in values.values_mut() {
            for v in usage.resource_seconds.values_mut() {
                *v = super::report::round3(*v);
            }
        }
    }
    out
}
