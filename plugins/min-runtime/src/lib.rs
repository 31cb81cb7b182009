//! Preemption that never evicts a workload admitted less than a minimum runtime ago
//! (kubernetes-sigs/kueue#9596).
//!
//! Otherwise exactly Kueue's classical victim selection: the protected candidates are treated as
//! if they were not eligible, and Kueue's search runs over the rest. A preemptor that only fits
//! by evicting young workloads waits until they are old enough (or finish).
//!
//! Configuration:
//! - setting `min-runtime` (a duration: `"90s"`, `"10m"`, `"1h30m"`; default `"5m"`);
//! - annotation `wasq.dev/min-runtime` on a ClusterQueue overrides it for the workloads admitted
//!   in that queue (`"0s"` disables the protection there).
//!
//! An invalid value is logged at warn level and the default (or the setting) applies.
//! Candidates already being evicted are never protected: their work is lost already.
//!
//! Differences from Kueue's default: only the minimum-runtime filter above.

use wasq_policy_sdk::preemption::Request;
use wasq_policy_sdk::prelude::*;

/// The setting's default.
pub const DEFAULT_MIN_RUNTIME: &str = "5m";
/// The setting's key.
pub const SETTING: &str = "min-runtime";
/// The ClusterQueue annotation that overrides the setting.
pub const ANNOTATION: &str = "wasq.dev/min-runtime";

/// Kueue's preemption with a minimum runtime per ClusterQueue.
#[derive(Debug)]
pub struct MinRuntime {
    /// The minimum runtime from the setting (or the default).
    default: Millis,
    /// Per catalog node, the annotation's override.
    per_node: Vec<Option<Millis>>,
}

impl Default for MinRuntime {
    fn default() -> MinRuntime {
        MinRuntime {
            default: parse_duration(DEFAULT_MIN_RUNTIME).unwrap_or(300_000),
            per_node: Vec::new(),
        }
    }
}

impl MinRuntime {
    /// The minimum runtime that applies to workloads of a ClusterQueue.
    pub fn min_runtime(&self, catalog: &Catalog, cq: ClusterQueueId) -> Millis {
        catalog
            .cluster_queue_node(cq)
            .and_then(|n| self.per_node.get(n as usize).copied().flatten())
            .unwrap_or(self.default)
    }

    /// Whether a candidate is protected at `now`.
    pub fn protected(&self, catalog: &Catalog, c: &Candidate, now: Millis) -> bool {
        !c.evicting && now.saturating_sub(c.admitted) < self.min_runtime(catalog, c.cluster_queue)
    }
}

impl PreemptionPolicy for MinRuntime {
    fn catalog_changed(&mut self, catalog: &Catalog) {
        *self = MinRuntime::default();
        if let Some(text) = catalog.setting(SETTING) {
            match parse_duration(text) {
                Ok(d) => self.default = d,
                Err(e) => wasq_policy_sdk::warn!(
                    "setting {SETTING}={text:?}: {e}; using {DEFAULT_MIN_RUNTIME}"
                ),
            }
        }
        self.per_node = catalog
            .nodes
            .iter()
            .map(|node| {
                let text = catalog.annotation(&node.annotations, ANNOTATION)?;
                match parse_duration(text) {
                    Ok(d) => Some(d),
                    Err(e) => {
                        wasq_policy_sdk::warn!(
                            "{} annotation {ANNOTATION}={text:?}: {e}; using the setting",
                            node.name
                        );
                        None
                    }
                }
            })
            .collect();
    }

    fn select_victims(&mut self, catalog: &Catalog, req: &Request) -> Option<Victims> {
        let eligible: Vec<u32> = (0..req.candidates.len() as u32)
            .filter(|&i| !self.protected(catalog, &req.candidates[i as usize], req.now))
            .collect();
        kueue::select_victims_among(catalog, req, &eligible)
    }
}

wasq_policy_sdk::export_preemption!(MinRuntime);

#[cfg(test)]
mod tests {
    use super::*;
    use wasq_policy_sdk::testing::{CatalogBuilder, no_usage_table, node_usage, workload};

    const MIN: Millis = 60_000;

    fn catalog(setting: Option<&str>, annotation: Option<&str>) -> Catalog {
        let mut b = CatalogBuilder::new()
            .flavor_resources(1)
            .cluster_queue("cq", None)
            .quota(0, 0, 10, None, None);
        if let Some(a) = annotation {
            b = b.node_annotation(0, ANNOTATION, a);
        }
        if let Some(s) = setting {
            b = b.setting(SETTING, s);
        }
        b.build()
    }

    fn candidate(workload: u32, priority: i64, admitted: Millis) -> Candidate {
        Candidate {
            workload,
            cluster_queue: 0,
            kind: CandidateKind::SameQueue,
            lca: None,
            priority,
            created: 0,
            admitted,
            requeue_count: 0,
            requeue_reason: None,
            evicting: false,
            usage: vec![FrAmount { fr: 0, amount: 5 }],
            annotations: Vec::new(),
            local_queue: None,
            namespace: wasq_policy_sdk::identity::NO_STRING,
            owner: None,
            labels: Vec::new(),
            local_queue_usage: None,
        }
    }

    /// The queue is full with two workloads of 5; the preemptor needs 5.
    fn request(now: Millis) -> Request {
        Request {
            preemptor: workload(9, 0, 100, 0),
            requests: vec![FrAmount { fr: 0, amount: 5 }],
            needs_preemption: vec![0],
            // Kueue would take the lower-priority one (index 0), admitted recently.
            candidates: vec![candidate(1, 0, now - 1_000), candidate(2, 1, now - 2 * MIN)],
            usage_kept: false,
            usage: vec![node_usage(0, &[(0, 10)])],
            tree_usage: no_usage_table(),
            now,
        }
    }

    fn decide(cat: &Catalog, req: &Request) -> Option<Vec<u32>> {
        let mut p = MinRuntime::default();
        p.catalog_changed(cat);
        p.select_victims(cat, req).map(|v| v.victims)
    }

    #[test]
    fn young_workloads_are_spared() {
        let cat = catalog(Some("1m"), None);
        let req = request(10 * MIN);
        assert_eq!(kueue::select_victims(&cat, &req).unwrap().victims, vec![0]);
        assert_eq!(decide(&cat, &req), Some(vec![1]));
    }

    #[test]
    fn default_is_five_minutes() {
        let cat = catalog(None, None);
        // Both younger than 5m: nothing may be preempted.
        let mut req = request(10 * MIN);
        req.candidates[1].admitted = req.now - 4 * MIN;
        assert_eq!(decide(&cat, &req), None);
        req.candidates[1].admitted = req.now - 5 * MIN;
        assert_eq!(decide(&cat, &req), Some(vec![1]));
    }

    #[test]
    fn annotation_overrides_setting() {
        let cat = catalog(Some("1h"), Some("0s"));
        assert_eq!(decide(&cat, &request(10 * MIN)), Some(vec![0]));
    }

    #[test]
    fn invalid_values_fall_back() {
        let cat = catalog(Some("soon"), Some("later"));
        let p = {
            let mut p = MinRuntime::default();
            p.catalog_changed(&cat);
            p
        };
        assert_eq!(p.min_runtime(&cat, 0), 300_000);
    }

    #[test]
    fn evicting_candidates_are_never_protected() {
        let cat = catalog(Some("1h"), None);
        let mut req = request(10 * MIN);
        req.candidates[0].evicting = true;
        assert_eq!(decide(&cat, &req), Some(vec![0]));
    }
}
