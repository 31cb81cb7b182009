//! Fair sharing's dominant resource share on the host's quota tree: Kueue's
//! `DominantResourceShare` and `CompareDRS` are `wasq-kueue`'s (`share`), the same code the
//! plugin SDK runs; this file reads the tree, its names and a usage through its [`Quota`]
//! trait.

use wasq_kueue::share::{self, Quota};
pub use wasq_kueue::share::{Drs, compare};

use super::overlay::UsageRead;
use super::resources::{FrIdx, Names, ResourceId};
use super::tree::{NodeId, QuotaTree};

/// The quota tree's figures and a usage, as `wasq-kueue` reads them.
pub struct TreeQuota<'a, U: ?Sized> {
    pub tree: &'a QuotaTree,
    pub names: &'a Names,
    pub usage: &'a U,
}

impl<U: UsageRead + ?Sized> Quota for TreeQuota<'_, U> {
    fn parent(&self, node: u32) -> Option<u32> {
        self.tree.parent(NodeId(node)).map(|p| p.0)
    }
    fn flavor_resources(&self) -> usize {
        self.tree.n_fr()
    }
    fn resource_of(&self, fr: u32) -> u32 {
        self.names.fr_parts(FrIdx(fr)).1.0
    }
    fn resources(&self) -> usize {
        self.names.n_resources()
    }
    fn resource_name(&self, resource: u32) -> &str {
        self.names.resource_name(ResourceId(resource))
    }
    fn usage(&self, node: u32, fr: u32) -> i64 {
        self.usage.get(NodeId(node), FrIdx(fr))
    }
    fn subtree_quota(&self, node: u32, fr: u32) -> i64 {
        self.tree.subtree_quota(NodeId(node), FrIdx(fr))
    }
    fn potential_available(&self, node: u32, fr: u32) -> i64 {
        self.tree.potential_available(NodeId(node), FrIdx(fr))
    }
}

impl QuotaTree {
    /// The node's dominant resource share with weight `weight_milli` (its
    /// `fairSharing.weight`) and `extra` added to its usage (an incoming workload's request;
    /// empty for the share as it is).
    pub fn drs(
        &self,
        names: &Names,
        usage: &impl UsageRead,
        node: NodeId,
        weight_milli: i64,
        extra: &[(FrIdx, i64)],
    ) -> Drs {
        let extra: Vec<(u32, i64)> = extra.iter().map(|&(fr, v)| (fr.0, v)).collect();
        let quota = TreeQuota {
            tree: self,
            names,
            usage,
        };
        share::drs(&quota, node.0, weight_milli, &extra)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::{NodeKind, NodeSpec, ResourceQuota};

    /// A cohort with two ClusterQueues, each with 6 cpu and 4 gpu nominal.
    fn tree() -> (QuotaTree, Names) {
        let mut names = Names::default();
        let f = names.flavor("default");
        let cpu = names.resource("cpu");
        let gpu = names.resource("gpu");
        let (fc, fg) = (names.fr(f, cpu), names.fr(f, gpu));
        let q = |n| ResourceQuota {
            nominal: n,
            ..Default::default()
        };
        let cq = |name: &str| NodeSpec {
            name: name.into(),
            kind: NodeKind::ClusterQueue,
            parent: Some(NodeId(2)),
            quotas: vec![(fc, q(6000)), (fg, q(4000))],
        };
        let specs = vec![
            cq("a"),
            cq("b"),
            NodeSpec {
                name: "cohort".into(),
                kind: NodeKind::Cohort,
                parent: None,
                quotas: vec![],
            },
        ];
        (QuotaTree::build(specs, names.n_fr()), names)
    }

    /// The tree, its names and a usage read as `wasq-kueue` reads them (the share's rules are
    /// tested there).
    #[test]
    fn share_is_the_dominant_borrowed_fraction_of_what_the_parent_lends() {
        let (t, names) = tree();
        let (a, b) = (NodeId(0), NodeId(1));
        let (cpu, gpu) = (FrIdx(0), FrIdx(1));
        let mut u = t.new_usage();
        t.add_usage(&mut u, a, cpu, 9000); // borrows 3 of 12 cpu → 250
        t.add_usage(&mut u, a, gpu, 6000); // borrows 2 of 8 gpu → 250; cpu < gpu by name
        let d = t.drs(&names, &u, a, 1000, &[]);
        assert_eq!(d.ratio, 250.0);
        assert_eq!(d.dominant, Some(0));
        assert_eq!(d.borrowed, vec![cpu.0, gpu.0]);
        // Weight 2 halves it; an incoming 3 cpu raises cpu to 6/12.
        assert_eq!(t.drs(&names, &u, a, 2000, &[]).weighted(), 125.0);
        assert_eq!(t.drs(&names, &u, a, 1000, &[(cpu, 3000)]).weighted(), 500.0);
        // b borrows nothing; the root has no share.
        assert!(t.drs(&names, &u, b, 1000, &[]).is_zero());
        assert!(t.drs(&names, &u, NodeId(2), 1000, &[]).is_zero());
        assert!(
            t.drs(&names, &u, a, 1000, &[])
                .is_borrowing_on([(gpu.0, 1)])
        );
        assert!(
            !t.drs(&names, &u, a, 1000, &[])
                .is_borrowing_on([(gpu.0, 0)])
        );
    }
}
