//! Preemption that loses the least work: it evicts the workloads that have run the shortest
//! time, and among those the smallest, instead of Kueue's lowest-priority-first order.
//!
//! Among the candidates the host offers (Kueue's eligibility rules already applied, so priority
//! rules still hold), the order is:
//! 1. candidates already being evicted (their work is lost anyway);
//! 2. most recently admitted first;
//! 3. smallest first: the sum, over the flavor-resources that need preemption, of the
//!    candidate's usage divided by the preemptor's request;
//! 4. lower priority, then the workload handle.
//!
//! Candidates are removed greedily in that order on a simulated quota snapshot
//! ([`QuotaView`]) until the preemptor fits, then every victim but the last is put back when it
//! is not needed. Kueue's rules for reclaiming are kept: a candidate of another ClusterQueue is
//! only taken while its queue (and cohorts up to the common ancestor) is still over its quota,
//! and reclaim-without-borrowing candidates are only taken in an attempt where the preemptor
//! may not borrow (`allow-borrowing = false`); borrowing attempts are tried in Kueue's order.
//!
//! Differences from Kueue's default: the candidate order above replaces Kueue's (priority
//! first, and grouped by kind of preemption).

use std::cmp::Ordering;

use wasq_policy_sdk::preemption::Request;
use wasq_policy_sdk::prelude::*;

/// Evicts the youngest, smallest workloads first.
#[derive(Debug, Default)]
pub struct LeastLostWork;

/// How much of what the preemptor lacks a candidate frees: Σ usage / request over the
/// flavor-resources that need preemption.
pub fn size(req: &Request, c: &Candidate) -> f64 {
    req.needs_preemption
        .iter()
        .map(|&fr| {
            let need = req
                .requests
                .iter()
                .find(|r| r.fr == fr)
                .map_or(0, |r| r.amount);
            let used: i64 = c
                .usage
                .iter()
                .filter(|u| u.fr == fr)
                .map(|u| u.amount)
                .sum();
            if need > 0 {
                used as f64 / need as f64
            } else {
                0.0
            }
        })
        .sum()
}

/// The order candidates are tried in (indices into `req.candidates`).
pub fn victim_order(req: &Request) -> Vec<u32> {
    let sizes: Vec<f64> = req.candidates.iter().map(|c| size(req, c)).collect();
    let mut order: Vec<u32> = (0..req.candidates.len() as u32).collect();
    order.sort_by(|&a, &b| {
        let (ca, cb) = (&req.candidates[a as usize], &req.candidates[b as usize]);
        cb.evicting
            .cmp(&ca.evicting)
            .then_with(|| cb.admitted.cmp(&ca.admitted))
            .then_with(|| {
                sizes[a as usize]
                    .partial_cmp(&sizes[b as usize])
                    .unwrap_or(Ordering::Equal)
            })
            .then_with(|| ca.priority.cmp(&cb.priority))
            .then_with(|| ca.workload.cmp(&cb.workload))
    });
    order
}

impl PreemptionPolicy for LeastLostWork {
    fn select_victims(&mut self, catalog: &Catalog, req: &Request) -> Option<Victims> {
        let order = victim_order(req);
        let attempts = kueue::borrowing_attempts(catalog, req, &order);
        kueue::greedy_victims(catalog, req, &order, &attempts)
    }
}

wasq_policy_sdk::export_preemption!(LeastLostWork);

#[cfg(test)]
mod tests {
    use super::*;
    use wasq_policy_sdk::testing::{CatalogBuilder, no_usage_table, node_usage, workload};

    fn candidate(workload: u32, cq: u32, priority: i64, admitted: Millis, used: i64) -> Candidate {
        Candidate {
            workload,
            cluster_queue: cq,
            kind: CandidateKind::SameQueue,
            lca: None,
            priority,
            created: 0,
            admitted,
            requeue_count: 0,
            requeue_reason: None,
            evicting: false,
            usage: vec![FrAmount {
                fr: 0,
                amount: used,
            }],
            annotations: Vec::new(),
            local_queue: None,
            namespace: wasq_policy_sdk::identity::NO_STRING,
            owner: None,
            labels: Vec::new(),
            local_queue_usage: None,
        }
    }

    fn request(need: i64, candidates: Vec<Candidate>, usage: Vec<(u32, i64)>) -> Request {
        Request {
            preemptor: workload(9, 0, 100, 0),
            requests: vec![FrAmount {
                fr: 0,
                amount: need,
            }],
            needs_preemption: vec![0],
            candidates,
            usage_kept: false,
            usage: usage
                .iter()
                .map(|&(node, amount)| node_usage(node, &[(0, amount)]))
                .collect(),
            tree_usage: no_usage_table(),
            now: 1_000,
        }
    }

    fn single() -> Catalog {
        CatalogBuilder::new()
            .flavor_resources(1)
            .cluster_queue("cq", None)
            .quota(0, 0, 10, None, None)
            .build()
    }

    #[test]
    fn youngest_goes_first_regardless_of_priority() {
        let cat = single();
        let req = request(
            4,
            vec![candidate(1, 0, 0, 100, 5), candidate(2, 0, 50, 900, 5)],
            vec![(0, 10)],
        );
        assert_eq!(kueue::select_victims(&cat, &req).unwrap().victims, vec![0]);
        let v = LeastLostWork.select_victims(&cat, &req).unwrap();
        assert_eq!(v.victims, vec![1]);
    }

    #[test]
    fn smaller_first_among_equally_young_and_unneeded_put_back() {
        let cat = single();
        let req = request(
            5,
            vec![
                candidate(1, 0, 0, 500, 6),
                candidate(2, 0, 0, 500, 1),
                candidate(3, 0, 0, 200, 3),
            ],
            vec![(0, 10)],
        );
        assert_eq!(victim_order(&req), vec![1, 0, 2]);
        // 1 (size 1) is not enough, 6 is; 1 is put back.
        let v = LeastLostWork.select_victims(&cat, &req).unwrap();
        assert_eq!(v.victims, vec![0]);
    }

    #[test]
    fn reclaim_without_borrowing_forbids_borrowing() {
        // cohort(0) <- a(1, cq 0) nominal 5, b(2, cq 1) nominal 5; b borrows 3.
        let cat = CatalogBuilder::new()
            .flavor_resources(1)
            .cohort("cohort", None)
            .cluster_queue("a", Some(0))
            .quota(1, 0, 5, None, None)
            .cluster_queue("b", Some(0))
            .quota(2, 0, 5, None, None)
            .build();
        let mut c = candidate(1, 1, 0, 900, 8);
        c.kind = CandidateKind::ReclaimWithoutBorrowing;
        c.lca = Some(0);
        let req = request(5, vec![c], vec![(0, 8), (1, 0), (2, 8)]);
        let v = LeastLostWork.select_victims(&cat, &req).unwrap();
        assert_eq!(v.victims, vec![0]);
        assert!(!v.allow_borrowing);
    }
}
