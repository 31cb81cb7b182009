//! Kueue's fair-sharing victim selection (`fairPreemptions`): `wasq-kueue`'s
//! `fair_preemption`, the same code as the host's built-in, on a [`QuotaView`] of the
//! request's `tree-usage`.

use wasq_kueue::fair_preemption::{self, Preemptor, Search, Strategy};
use wasq_kueue::share::{Drs, Snapshot};

use super::preemptor_fits;
use super::reads::Rows;
use crate::catalog::Catalog;
use crate::preemption::{CandidateTable, Request, Victims};
use crate::quota::QuotaView;
use crate::types::{FairSharingStrategy, NodeId};

/// Kueue's `fairPreemptions`: the victims for `req` under fair sharing with `strategies` (the
/// catalog's `fair-sharing.strategies`; Kueue's default S2-a then S2-b when empty), or `None`
/// when the strategies cannot make the preemptor fit. Victims always allow borrowing.
///
/// Reads the request's `tree-usage`: the plugin must need [`Needs::TREE_USAGE`]
/// ([`preemption_needs`](super::preemption_needs) does under fair sharing).
///
/// [`Needs::TREE_USAGE`]: crate::types::Needs::TREE_USAGE
pub fn fair_select_victims<C: CandidateTable>(
    catalog: &Catalog,
    req: &Request<C>,
    strategies: &[FairSharingStrategy],
) -> Option<Victims> {
    let strategies: Vec<Strategy> = strategies
        .iter()
        .map(|s| match s {
            FairSharingStrategy::LessThanOrEqualToFinalShare => {
                Strategy::LessThanOrEqualToFinalShare
            }
            FairSharingStrategy::LessThanInitialShare => Strategy::LessThanInitialShare,
        })
        .collect();
    let node = catalog.cluster_queue_node(req.preemptor.cluster_queue)?;
    let requests: Vec<(u32, i64)> = req.requests.iter().map(|r| (r.fr, r.amount)).collect();
    let preemptor = Preemptor {
        cluster_queue: req.preemptor.cluster_queue,
        node,
        requests: &requests,
    };
    let mut search = FairView {
        req,
        node,
        view: QuotaView::from_usage_table(catalog, &req.tree_usage),
    };
    let rows = Rows(&req.candidates);
    let victims =
        fair_preemption::select_victims(catalog, &rows, preemptor, &mut search, &strategies)?;
    Some(Victims {
        victims,
        allow_borrowing: true,
    })
}

/// The view simulated on, and the preemptor's fit on it.
struct FairView<'c, 'r, C> {
    req: &'r Request<C>,
    /// The preemptor's ClusterQueue node.
    node: NodeId,
    view: QuotaView<'c>,
}

impl<C> Snapshot for FairView<'_, '_, C> {
    fn add_usage(&mut self, node: NodeId, fr: u32, delta: i64) {
        self.view.add_usage(node, fr, delta);
    }

    fn share(&self, node: NodeId) -> Drs {
        Snapshot::share(&self.view, node)
    }
}

impl<C> Search for FairView<'_, '_, C> {
    fn preemptor_fits(&self, _victims: &[u32], _but: Option<usize>) -> bool {
        preemptor_fits(&self.view, self.req, self.node, true)
    }
}

#[cfg(test)]
mod tests {
    //! The host's unit tests of `fair_preemption.rs`, on the same clusters: one cohort "all"
    //! (node 0) of ClusterQueues a, b, c, d (nodes 1–4, ids 0–3) with 4 cpu nominal each; the
    //! preemptor is in a.

    use super::*;
    use crate::catalog::Catalog;
    use crate::preemption::{Candidate, CandidateKind};
    use crate::testing::{CatalogBuilder, amounts, usage_table, workload};
    use crate::types::{ClusterQueueId, NodeUsage, Quantity};

    use FairSharingStrategy::{LessThanInitialShare as S2B, LessThanOrEqualToFinalShare as S2A};

    /// An admitted workload: name, ClusterQueue id, cpu, admission second (later = newer).
    type Admitted<'a> = (&'a str, ClusterQueueId, Quantity, i64);

    /// One cohort with a ClusterQueue per weight (`None`: the default 1), 4 cpu nominal each.
    fn catalog(weights: &[Option<Quantity>]) -> Catalog {
        let mut b = CatalogBuilder::new()
            .flavor_resources(1)
            .cohort("all", None);
        for (i, _) in weights.iter().enumerate() {
            let name = ["a", "b", "c", "d"][i];
            b = b
                .cluster_queue(name, Some(0))
                .quota(i as NodeId + 1, 0, 4000, None, None);
        }
        let mut raw = b.build().raw().clone();
        for (i, w) in weights.iter().enumerate() {
            if let Some(w) = w {
                raw.nodes[i + 1].fair_weight = *w;
            }
        }
        Catalog::new(raw)
    }

    fn four() -> Catalog {
        catalog(&[None; 4])
    }

    /// A ClusterQueue without a cohort (node 0, id 0), 4 cpu nominal.
    fn alone() -> Catalog {
        CatalogBuilder::new()
            .flavor_resources(1)
            .cluster_queue("a", None)
            .quota(0, 0, 4000, None, None)
            .build()
    }

    /// The tree usage of the admitted workloads.
    fn tree_usage(cat: &Catalog, admitted: &[Admitted<'_>]) -> Vec<NodeUsage> {
        let adds: Vec<(NodeId, u32, Quantity)> = admitted
            .iter()
            .map(|&(_, cq, cpu, _)| (cat.cluster_queue_node(cq).unwrap(), 0, cpu * 1000))
            .collect();
        let root = cat.root(0);
        usage_table(cat, &[root], &adds)
    }

    /// The host's fair-sharing candidates for a preemptor of `cpu` milli-cpu in a (id 0): a's
    /// workloads (unless `own` is false), and those of every other queue that borrows cpu, as
    /// `others`. Candidates are in host order (by ClusterQueue, then workload); workload ids
    /// are the positions in `admitted`.
    fn request(
        cat: &Catalog,
        admitted: &[Admitted<'_>],
        cpu: Quantity,
        own: bool,
        others: CandidateKind,
    ) -> Request {
        let table = tree_usage(cat, admitted);
        let view = QuotaView::from_usage_table(cat, &table);
        let mut candidates = Vec::new();
        for cq in 0..cat.cluster_queues.len() as ClusterQueueId {
            let node = cat.cluster_queue_node(cq).unwrap();
            let kind = if cq == 0 {
                if !own {
                    continue;
                }
                CandidateKind::SameQueue
            } else if view.borrowing(node, 0) {
                others
            } else {
                continue;
            };
            for (w, &(_, wcq, amount, second)) in admitted.iter().enumerate() {
                if wcq != cq {
                    continue;
                }
                candidates.push(Candidate {
                    workload: w as u32,
                    cluster_queue: cq,
                    kind,
                    lca: None,
                    priority: 0,
                    created: 0,
                    admitted: second * 1000,
                    requeue_count: 0,
                    requeue_reason: None,
                    evicting: false,
                    usage: amounts(&[(0, amount * 1000)]),
                    annotations: Vec::new(),
                    local_queue: None,
                    namespace: crate::identity::NO_STRING,
                    owner: None,
                    labels: Vec::new(),
                    local_queue_usage: None,
                });
            }
        }
        Request {
            preemptor: workload(1000, 0, 0, 0),
            requests: amounts(&[(0, cpu)]),
            needs_preemption: vec![0],
            candidates,
            usage_kept: false,
            usage: Vec::new(),
            tree_usage: table,
            now: 0,
        }
    }

    /// Other queues' candidates only (as if `withinClusterQueue` allowed none of a's).
    fn fair_request(cat: &Catalog, admitted: &[Admitted<'_>], cpu: Quantity) -> Request {
        request(cat, admitted, cpu, false, CandidateKind::FairSharing)
    }

    /// The victims' names, sorted.
    fn victims(
        cat: &Catalog,
        req: &Request,
        admitted: &[Admitted<'_>],
        strategies: &[FairSharingStrategy],
    ) -> Option<Vec<String>> {
        let v = fair_select_victims(cat, req, strategies);
        // The same decision on the candidates as the host sends them.
        assert_eq!(
            fair_select_victims(cat, &req.to_columns(), strategies),
            v,
            "as sent"
        );
        let v = v?;
        assert!(v.allow_borrowing);
        let mut names: Vec<String> = v
            .victims
            .iter()
            .map(|&i| {
                admitted[req.candidates[i as usize].workload as usize]
                    .0
                    .to_string()
            })
            .collect();
        names.sort();
        Some(names)
    }

    fn names(prefix: &str, n: usize) -> Vec<String> {
        (1..=n).map(|k| format!("{prefix}{k}")).collect()
    }

    /// n admitted 1-cpu workloads `{prefix}1..` in `cq`, admitted at `second`, `second`+1, ...
    fn ones(names: &[String], cq: ClusterQueueId, second: i64) -> Vec<Admitted<'_>> {
        names
            .iter()
            .enumerate()
            .map(|(k, n)| (n.as_str(), cq, 1, second + k as i64))
            .collect()
    }

    #[test]
    fn s2a_takes_from_the_highest_share_until_the_preemptor_fits() {
        // 16 cpu, all used: a 3, b 7 (borrows 3: 187.5), c 6 (borrows 2: 125). Incoming 2 cpu
        // makes a borrow 1 (62.5). b loses one (→ 125), then b and c tie and c's first
        // candidate (newer) wins the tie (→ 62.5 ≤ 62.5 passes).
        let cat = four();
        let (a, b, c) = (names("a", 3), names("b", 7), names("c", 6));
        let mut adm = ones(&a, 0, 0);
        adm.extend(ones(&b, 1, 10));
        adm.extend(ones(&c, 2, 30));
        let req = fair_request(&cat, &adm, 2000);
        let want = Some(vec!["b7".to_string(), "c6".to_string()]);
        assert_eq!(victims(&cat, &req, &adm, &[S2A]), want);
        assert_eq!(victims(&cat, &req, &adm, &[S2A, S2B]), want);
    }

    #[test]
    fn s2a_refuses_a_final_share_below_the_preemptor_where_s2b_accepts() {
        // a 4, b 6 in three 2-cpu workloads (borrows 2: 125), c 4. Incoming 1 cpu makes a
        // borrow 1 (62.5). Losing 2 cpu leaves b at 0 < 62.5: S2-a refuses every one; S2-b
        // compares with b's initial 125 and takes the first.
        let cat = four();
        let adm = [
            ("a1", 0, 4, 0),
            ("b1", 1, 2, 1),
            ("b2", 1, 2, 2),
            ("b3", 1, 2, 3),
            ("c1", 2, 4, 4),
        ];
        let req = fair_request(&cat, &adm, 1000);
        assert_eq!(victims(&cat, &req, &adm, &[S2A]), None);
        assert_eq!(
            victims(&cat, &req, &adm, &[S2A, S2B]),
            Some(vec!["b3".into()])
        );
        assert_eq!(victims(&cat, &req, &adm, &[S2B]), Some(vec!["b3".into()]));
        // No strategies: Kueue's default, S2-a then S2-b.
        assert_eq!(victims(&cat, &req, &adm, &[]), Some(vec!["b3".into()]));
    }

    #[test]
    fn a_zero_weight_borrower_is_always_the_target() {
        // b has weight 0 (borrows 2: infinite share), c borrows 3 (187.5, newer workloads).
        // b is targeted until its last borrowed cpu would bring it below a; then c gives one.
        let cat = catalog(&[None, Some(0), None, None]);
        let (a, b, c) = (names("a", 3), names("b", 6), names("c", 7));
        let mut adm = ones(&a, 0, 0);
        adm.extend(ones(&b, 1, 10));
        adm.extend(ones(&c, 2, 30));
        let req = fair_request(&cat, &adm, 2000);
        assert_eq!(
            victims(&cat, &req, &adm, &[S2A]),
            Some(vec!["b6".into(), "c7".into()])
        );
        let req = fair_request(&cat, &adm, 1000);
        assert_eq!(victims(&cat, &req, &adm, &[S2A]), Some(vec!["b6".into()]));
    }

    #[test]
    fn a_zero_weight_preemptor_cannot_preempt_a_finite_share() {
        let cat = catalog(&[Some(0), None, None, None]);
        let adm = [("a1", 0, 4, 0), ("b1", 1, 8, 1), ("c1", 2, 4, 2)];
        let req = fair_request(&cat, &adm, 1000);
        assert_eq!(victims(&cat, &req, &adm, &[S2A, S2B]), None);
    }

    #[test]
    fn own_queue_candidates_go_first_when_the_own_queue_leads() {
        // a 6 (with the incoming 1 cpu borrows 3: 187.5), b 5 (borrows 1: 62.5, newer), c 4,
        // d 1: a's own newest workload goes, although b's come first in candidate order.
        let cat = four();
        let (a, b) = (names("a", 6), names("b", 5));
        let mut adm = ones(&a, 0, 0);
        adm.extend(ones(&b, 1, 10));
        adm.extend([("c1", 2, 4, 20), ("d1", 3, 1, 21)]);
        let req = request(&cat, &adm, 1000, true, CandidateKind::FairSharing);
        let first = (0..req.candidates.len())
            .min_by(|&x, &y| {
                crate::kueue::candidates_ordering(&req.candidates[x], &req.candidates[y], 0)
            })
            .unwrap();
        assert_ne!(req.candidates[first].cluster_queue, 0);
        assert_eq!(
            victims(&cat, &req, &adm, &[S2A, S2B]),
            Some(vec!["a6".into()])
        );
        let v = fair_select_victims(&cat, &req, &[S2A]).unwrap();
        assert_eq!(
            req.candidates[v.victims[0] as usize].kind,
            CandidateKind::SameQueue
        );
    }

    #[test]
    fn hierarchical_reclaim_candidates_ignore_the_strategies() {
        // The setup S2-a refuses, with the candidates marked as reclaim: taken in target order.
        let cat = four();
        let adm = [
            ("a1", 0, 4, 0),
            ("b1", 1, 2, 1),
            ("b2", 1, 2, 2),
            ("b3", 1, 2, 3),
            ("c1", 2, 4, 4),
        ];
        let req = request(&cat, &adm, 1000, false, CandidateKind::HierarchicalReclaim);
        assert_eq!(victims(&cat, &req, &adm, &[S2A]), Some(vec!["b3".into()]));
    }

    #[test]
    fn without_a_cohort_only_the_own_queue_is_targeted() {
        let cat = alone();
        let a = names("a", 4);
        let adm = ones(&a, 0, 0);
        let req = request(&cat, &adm, 2000, true, CandidateKind::FairSharing);
        assert_eq!(
            victims(&cat, &req, &adm, &[S2A, S2B]),
            Some(vec!["a3".into(), "a4".into()])
        );
    }

    #[test]
    fn no_candidates_or_unknown_queue_is_no_answer() {
        let cat = four();
        let adm = [("a1", 0, 4, 0)];
        let req = fair_request(&cat, &adm, 1000);
        assert!(req.candidates.is_empty());
        assert_eq!(fair_select_victims(&cat, &req, &[S2A]), None);
        let mut req = request(&cat, &adm, 1000, true, CandidateKind::FairSharing);
        req.preemptor.cluster_queue = 99;
        assert_eq!(fair_select_victims(&cat, &req, &[S2A]), None);
    }
}
