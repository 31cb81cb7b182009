//! {{name}}: a MultiKueue dispatch plugin for wasq: which worker clusters get a copy of a
//! workload.
//!
//! Describe here what the policy does and how it differs from Kueue's default. As generated,
//! a workload labelled `wasq.dev/region` is copied only to the connected clusters whose
//! MultiKueueCluster carries the same value under the label named by the `clusterLabel`
//! setting (default `region`); any other workload, or one whose region no connected cluster
//! serves, is dispatched as Kueue's all-at-once dispatcher does (every connected cluster).

use wasq_policy_sdk::dispatch::{Answer, Only, Request, Settings, all_at_once};
use wasq_policy_sdk::prelude::*;

/// The policy. The SDK builds it with `Default` on the first call; keep state in its fields.
#[derive(Debug, Default)]
pub struct Policy {
    /// The MultiKueueCluster label that names a cluster's region.
    cluster_label: String,
}

impl DispatchPolicy for Policy {
    fn settings_changed(&mut self, settings: &Settings) {
        self.cluster_label = settings.get("clusterLabel").unwrap_or("region").to_string();
    }

    fn dispatch(&mut self, _: &Settings, req: &Request) -> Answer {
        if let Some(region) = req.workload.label("wasq.dev/region") {
            let label = self.cluster_label.as_str();
            let same_region = Only::new(req, |c| c.label(label) == Some(region));
            let answer = all_at_once(&same_region);
            if !answer.nominate.is_empty() {
                return answer;
            }
        }
        // Kueue's answer (`incremental(req, req, step)` is its other dispatcher).
        all_at_once(req)
    }
}

wasq_policy_sdk::export_dispatch!(Policy);

#[cfg(test)]
mod tests {
    use super::*;
    use wasq_policy_sdk::dispatch::Label;
    use wasq_policy_sdk::testing::{dispatch_cluster, dispatch_request};

    fn label(key: &str, value: &str) -> Label {
        Label {
            key: key.into(),
            value: value.into(),
        }
    }

    #[test]
    fn a_workload_with_a_region_goes_to_that_regions_clusters_only() {
        let mut clusters = vec![
            dispatch_cluster("eu-1", true),
            dispatch_cluster("us-1", true),
            dispatch_cluster("eu-2", true),
        ];
        for (c, region) in clusters.iter_mut().zip(["eu", "us", "eu"]) {
            c.labels.push(label("region", region));
        }
        let mut req = dispatch_request(0, clusters);
        let mut policy = Policy::default();
        policy.settings_changed(&Settings::default());
        // No region: every connected cluster, by name.
        let settings = Settings::default();
        assert_eq!(policy.dispatch(&settings, &req).nominate, vec![0, 2, 1]);
        req.workload.labels.push(label("wasq.dev/region", "eu"));
        assert_eq!(policy.dispatch(&settings, &req).nominate, vec![0, 2]);
        // A region no cluster serves: Kueue's answer.
        req.workload.labels[0].value = "ap".into();
        assert_eq!(policy.dispatch(&settings, &req).nominate.len(), 3);
    }
}
