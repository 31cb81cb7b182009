//! {{name}}: a preemption plugin for wasq.
//!
//! Describe here what the policy does and how it differs from Kueue's default. As generated, it
//! never chooses a victim in a protected namespace (the `protect-namespace` plugin of wasq's
//! repository):
//!
//! Kueue's victim selection — classical, or fair sharing's when it is on — over the candidates
//! whose Workload is not in one of the namespaces listed in the plugin's setting `namespaces`
//! (`pluginSettings.{{name}}.namespaces: "prod,payments"` in the wasq `--config` file;
//! comma-separated; default `prod`). When the preemptor cannot fit without a protected victim,
//! the answer is "no victims" and it waits, as it would if those workloads were not preemptible.
//!
//! Differences from Kueue's default: protected workloads are never evicted by preemption
//! (another candidate, possibly of higher priority or more recently admitted, is chosen
//! instead).
//!
//! Every candidate says who it is: `namespace`, `job_kind`, `job_api_version`, `job_name`,
//! `local_queue`, `label(key)` and `annotation(key)` (the `Identity` trait on a `Candidate`, the
//! same with an index on a `CandidateTable`), besides its priority, times, usage and requeue
//! count.

use wasq_policy_sdk::preemption::{CandidateTable, Request};
use wasq_policy_sdk::prelude::*;

/// The setting listing the protected namespaces.
pub const SETTING: &str = "namespaces";
/// The protected namespaces when the setting is absent.
pub const DEFAULT_NAMESPACES: &str = "prod";

/// The policy: the protected namespaces, read from the catalog's settings.
#[derive(Debug, Default)]
pub struct ProtectNamespace {
    protected: Vec<String>,
}

/// The namespaces of a `namespaces` setting: comma-separated, blanks ignored.
pub fn parse_namespaces(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

impl ProtectNamespace {
    /// Whether candidate `i` is in a protected namespace.
    pub fn protects<C: CandidateTable>(&self, catalog: &Catalog, table: &C, i: usize) -> bool {
        let namespace = table.namespace(catalog, i);
        self.protected.iter().any(|p| p == namespace)
    }
}

impl PreemptionPolicy for ProtectNamespace {
    fn catalog_changed(&mut self, catalog: &Catalog) {
        self.protected =
            parse_namespaces(catalog.setting(SETTING).unwrap_or(DEFAULT_NAMESPACES));
    }

    /// Kueue's needs, and who the candidates are (their namespaces).
    fn needs(&self, catalog: &Catalog) -> Needs {
        kueue::preemption_needs(catalog) | Needs::IDENTITY
    }

    fn select_victims(&mut self, catalog: &Catalog, req: &Request) -> Option<Victims> {
        // Kueue's answer on the request without the protected candidates, mapped back to the
        // host's indices.
        let kept: Vec<usize> = (0..req.candidates.len())
            .filter(|&i| !self.protects(catalog, &req.candidates, i))
            .collect();
        let mut narrowed = req.clone();
        narrowed.candidates = kept.iter().map(|&i| req.candidates[i].clone()).collect();
        let answer = match catalog.fair_sharing_strategies() {
            Some(strategies) => kueue::fair_select_victims(catalog, &narrowed, strategies),
            None => kueue::select_victims(catalog, &narrowed),
        }?;
        Some(Victims {
            victims: answer.victims.iter().map(|&k| kept[k as usize] as u32).collect(),
            allow_borrowing: answer.allow_borrowing,
        })
    }
}

wasq_policy_sdk::export_preemption!(ProtectNamespace);

#[cfg(test)]
mod tests {
    use super::*;
    use wasq_policy_sdk::testing::{
        CatalogBuilder, candidate, no_usage_table, node_usage, with_identity, workload,
    };

    #[test]
    fn reads_the_setting() {
        assert_eq!(parse_namespaces(" prod, ,payments "), vec!["prod", "payments"]);
        let mut p = ProtectNamespace::default();
        p.catalog_changed(&CatalogBuilder::new().build());
        assert_eq!(p.protected, vec!["prod"]);
        p.catalog_changed(&CatalogBuilder::new().setting(SETTING, "a,b").build());
        assert_eq!(p.protected, vec!["a", "b"]);
    }

    #[test]
    fn a_protected_victim_is_spared_and_another_chosen() {
        // One ClusterQueue with 10 units, full with two workloads of 5; the preemptor needs 5.
        let mut catalog = CatalogBuilder::new()
            .flavor_resources(1)
            .cluster_queue("cq", None)
            .quota(0, 0, 10, None, None)
            .build();
        let in_prod = with_identity(&mut catalog, workload(1, 0, 0, 0), "prod", None);
        let in_dev = with_identity(&mut catalog, workload(2, 0, 1, 0), "dev", None);
        let mut low = candidate(&in_prod, 0, 0);
        let mut high = candidate(&in_dev, 1, 0);
        low.usage = vec![FrAmount { fr: 0, amount: 5 }];
        high.usage = vec![FrAmount { fr: 0, amount: 5 }];
        let req = Request {
            preemptor: workload(9, 0, 100, 0),
            requests: vec![FrAmount { fr: 0, amount: 5 }],
            needs_preemption: vec![0],
            candidates: vec![low, high],
            usage_kept: false,
            usage: vec![node_usage(0, &[(0, 10)])],
            tree_usage: no_usage_table(),
            now: 0,
        };
        // Kueue takes the lower-priority candidate 0; it is in `prod`.
        assert_eq!(kueue::select_victims(&catalog, &req).unwrap().victims, vec![0]);
        let mut p = ProtectNamespace::default();
        p.catalog_changed(&catalog);
        assert_eq!(p.select_victims(&catalog, &req).unwrap().victims, vec![1]);
        // With both protected, the preemptor waits.
        p.catalog_changed(&CatalogBuilder::new().setting(SETTING, "prod,dev").build());
        assert_eq!(p.select_victims(&catalog, &req), None);
    }
}
