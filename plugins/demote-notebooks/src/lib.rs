//! Admission ordering that sends workloads of some job kinds after the others (by who they
//! are: their owning job's kind): interactive notebooks wait behind batch jobs.
//!
//! A workload whose owning job's kind is listed in the plugin's setting `kinds`
//! (`pluginSettings.demote-notebooks.kinds: "Notebook,RayCluster"` in the wasq `--config` file;
//! comma-separated; default `Notebook`) is queued after every workload of other kinds in its
//! ClusterQueue, and its ClusterQueue head is tried after the heads of other kinds in a cycle.
//! Within each group the order is Kueue's classical one: queue key `(-priority, created)`;
//! heads by second pass first, then lower borrowing level, higher priority, older. Second
//! passes keep their place, as in Kueue. Bare Workloads (no owner) are not demoted.
//!
//! Differences from Kueue's default: the demotion above (a higher-priority notebook waits for a
//! lower-priority batch job of the same ClusterQueue). Preemption is unchanged: a notebook
//! may still preempt by priority.

use wasq_policy_sdk::prelude::*;

/// The setting listing the demoted job kinds.
pub const SETTING: &str = "kinds";
/// The demoted job kinds when the setting is absent.
pub const DEFAULT_KINDS: &str = "Notebook";

/// The policy: the demoted kinds, read from the catalog's settings.
#[derive(Debug, Default)]
pub struct DemoteNotebooks {
    kinds: Vec<String>,
}

impl DemoteNotebooks {
    /// Whether a workload (or head) is of a demoted kind.
    pub fn demoted(&self, catalog: &Catalog, who: &impl Identity) -> bool {
        who.job_kind(catalog)
            .is_some_and(|kind| self.kinds.iter().any(|k| k == kind))
    }
}

impl OrderingPolicy for DemoteNotebooks {
    fn catalog_changed(&mut self, catalog: &Catalog) {
        self.kinds = catalog
            .setting(SETTING)
            .unwrap_or(DEFAULT_KINDS)
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
    }

    fn sort_key(&mut self, catalog: &Catalog, workload: &Workload, _: Millis) -> SortKey {
        let kueue = kueue::sort_key(workload);
        SortKey {
            primary: i64::from(self.demoted(catalog, workload)),
            secondary: kueue.primary,
            tertiary: kueue.secondary,
        }
    }

    fn order_heads(&mut self, catalog: &Catalog, heads: &[Head], _: Millis) -> Vec<u32> {
        let mut order = kueue::order_heads(heads);
        // Stable: Kueue's order within each group; second passes stay first.
        order.sort_by_key(|&i| {
            let h = &heads[i as usize];
            (!h.has_reservation, self.demoted(catalog, h))
        });
        order
    }
}

wasq_policy_sdk::export_ordering!(DemoteNotebooks);

#[cfg(test)]
mod tests {
    use super::*;
    use wasq_policy_sdk::testing::{self, CatalogBuilder, head_of, with_identity, workload};

    #[test]
    fn notebooks_queue_and_head_after_batch_jobs() {
        let mut catalog = CatalogBuilder::new().build();
        let notebook = with_identity(
            &mut catalog,
            workload(1, 0, 100, 0),
            "ml",
            Some(("Notebook", "kubeflow.org/v1", "explore")),
        );
        let job = with_identity(
            &mut catalog,
            workload(2, 0, 1, 50),
            "ml",
            Some(("Job", "batch/v1", "train")),
        );
        let bare = with_identity(&mut catalog, workload(3, 0, 0, 60), "ml", None);
        let mut p = DemoteNotebooks::default();
        p.catalog_changed(&catalog);
        let key = |p: &mut DemoteNotebooks, w: &Workload| {
            let k = p.sort_key(&catalog, w, 0);
            (k.primary, k.secondary, k.tertiary)
        };
        // Kueue would take the notebook first (priority 100).
        assert!(key(&mut p, &job) < key(&mut p, &notebook));
        assert!(key(&mut p, &bare) < key(&mut p, &notebook));
        let heads = [
            head_of(testing::head(1, 0, 100, 0), &notebook),
            head_of(testing::head(2, 1, 1, 50), &job),
        ];
        assert_eq!(kueue::order_heads(&heads), vec![0, 1]);
        assert_eq!(p.order_heads(&catalog, &heads, 0), vec![1, 0]);
        // Other kinds configured: the notebook keeps Kueue's place.
        p.catalog_changed(&CatalogBuilder::new().setting(SETTING, "RayCluster").build());
        assert_eq!(p.order_heads(&catalog, &heads, 0), vec![0, 1]);
    }
}
