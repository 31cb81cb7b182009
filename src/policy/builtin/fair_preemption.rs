//! Kueue's fair-sharing victim selection (`fairPreemptions`) on the host's records:
//! `wasq-kueue`'s `fair_preemption::select_victims` (the same code the plugin SDK runs),
//! simulated on a copy of the cycle's usage.

use wasq_kueue::fair_preemption::{self, Preemptor, Search, Strategy};
use wasq_kueue::share::{Drs, Snapshot};

use super::preemption::fits_without_victims;
use super::reads::{CandidateRows, HostTree, TreeSnapshot};
use crate::api::config::PreemptionStrategy;
use crate::policy::{PreemptionRequest, VictimSet};
use crate::quota::Usage;

/// Kueue's `fairPreemptions`: victims among `req.candidates`, or `None` when the strategies
/// (Kueue's default S2-a then S2-b when empty) cannot make the preemptor fit.
pub fn select_victims(
    req: &PreemptionRequest<'_>,
    strategies: &[PreemptionStrategy],
) -> Option<VictimSet> {
    let strategies: Vec<Strategy> = strategies
        .iter()
        .map(|s| match s {
            PreemptionStrategy::LessThanOrEqualToFinalShare => {
                Strategy::LessThanOrEqualToFinalShare
            }
            PreemptionStrategy::LessThanInitialShare => Strategy::LessThanInitialShare,
        })
        .collect();
    let requests: Vec<(u32, i64)> = req.requests.iter().map(|&(fr, v)| (fr.0, v)).collect();
    let preemptor = Preemptor {
        cluster_queue: req.cluster_queue.0,
        node: req.node.0,
        requests: &requests,
    };
    let tree = HostTree {
        tree: req.tree,
        cluster: req.cluster,
    };
    let mut search = FairSearch {
        req,
        snapshot: TreeSnapshot {
            tree: req.tree,
            cluster: req.cluster,
            usage: req.usage.clone(),
        },
    };
    let rows = CandidateRows::new(&req.candidates);
    let victims =
        fair_preemption::select_victims(&tree, &rows, preemptor, &mut search, &strategies)?;
    Some(VictimSet {
        victims: victims.into_iter().map(|i| i as usize).collect(),
        allow_borrowing: true,
    })
}

/// A copy of the request's usage, and the preemptor's fit on it.
struct FairSearch<'r, 'a> {
    req: &'r PreemptionRequest<'a>,
    snapshot: TreeSnapshot<'a, Usage>,
}

impl Snapshot for FairSearch<'_, '_> {
    fn add_usage(&mut self, node: u32, fr: u32, delta: i64) {
        self.snapshot.add_usage(node, fr, delta);
    }

    fn share(&self, node: u32) -> Drs {
        self.snapshot.share(node)
    }
}

impl Search for FairSearch<'_, '_> {
    fn preemptor_fits(&self, victims: &[u32], but: Option<usize>) -> bool {
        fits_without_victims(self.req, &self.snapshot.usage, true, victims, but)
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write;
    use std::path::Path;

    use super::*;
    use crate::cluster::{Cluster, CqId, WorkloadId, build_cluster};
    use crate::policy::builtin::candidate_order;
    use crate::policy::{Candidate, CandidateKind};
    use crate::quota::FrIdx;

    use PreemptionStrategy::{LessThanInitialShare as S2B, LessThanOrEqualToFinalShare as S2A};

    /// A ClusterQueue: name, nominal cpu, `fairSharing.weight`.
    type Queue<'a> = (&'a str, u32, Option<&'a str>);
    /// An admitted workload: name, ClusterQueue, cpu, QuotaReserved second (later = newer).
    type Admitted<'a> = (&'a str, &'a str, u32, u32);

    /// One cohort "all" of `queues`, the `admitted` workloads, and a pending "incoming"
    /// workload in the first queue.
    fn cluster(queues: &[Queue<'_>], admitted: &[Admitted<'_>]) -> Cluster {
        cluster_in("  cohortName: all\n", queues, admitted)
    }

    fn cluster_in(cohort: &str, queues: &[Queue<'_>], admitted: &[Admitted<'_>]) -> Cluster {
        let mut y = String::from(
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: default}\n",
        );
        for (name, nominal, weight) in queues {
            let fs = weight.map_or(String::new(), |w| {
                format!("  fairSharing: {{weight: '{w}'}}\n")
            });
            write!(
                y,
                "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: {name}}}\n\
                 spec:\n{cohort}  namespaceSelector: {{}}\n{fs}  resourceGroups:\n  \
                 - coveredResources: [cpu]\n    flavors:\n    - name: default\n      resources:\n      \
                 - {{name: cpu, nominalQuota: {nominal}}}\n\
                 ---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n\
                 metadata: {{namespace: default, name: {name}}}\nspec: {{clusterQueue: {name}}}\n"
            )
            .unwrap();
        }
        let workload = |y: &mut String, name: &str, cq: &str, cpu: u32| {
            write!(
                y,
                "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\n\
                 metadata: {{namespace: default, name: {name}}}\nspec:\n  queueName: {cq}\n  podSets:\n  \
                 - name: main\n    count: 1\n    template:\n      spec:\n        restartPolicy: Never\n        \
                 containers:\n        - name: c\n          image: pause\n          resources:\n            \
                 requests: {{cpu: '{cpu}'}}\n"
            )
            .unwrap();
        };
        for &(name, cq, cpu, second) in admitted {
            workload(&mut y, name, cq, cpu);
            write!(
                y,
                "status:\n  admission:\n    clusterQueue: {cq}\n    podSetAssignments:\n    - name: main\n      \
                 count: 1\n      flavors: {{cpu: default}}\n      resourceUsage: {{cpu: '{cpu}'}}\n  conditions:\n  \
                 - type: QuotaReserved\n    status: 'True'\n    reason: QuotaReserved\n    message: ''\n    \
                 lastTransitionTime: '2024-01-01T00:00:{second:02}Z'\n"
            )
            .unwrap();
        }
        workload(&mut y, "incoming", queues[0].0, 1);
        let m = crate::api::load::load_str(Path::new("test.yaml"), &y).expect("manifests load");
        build_cluster(&m, &|_| 0, 0).expect("cluster builds")
    }

    fn cpu(c: &Cluster) -> FrIdx {
        let f = c.names.find_flavor("default").unwrap();
        let r = c.names.find_resource("cpu").unwrap();
        c.names.find_fr(f, r).unwrap()
    }

    fn id(c: &Cluster, name: &str) -> WorkloadId {
        c.find_workload(&format!("default/{name}"))
            .expect("a workload of the test")
    }

    /// The host's fair-sharing candidates for "incoming" in the first queue: its own queue's
    /// workloads, and those of every other queue that borrows cpu, as `others`.
    fn candidates(c: &Cluster, own: CqId, others: CandidateKind) -> Vec<Candidate> {
        let fr = cpu(c);
        let mut out = Vec::new();
        for cq in &c.cluster_queues {
            let kind = if cq.id == own {
                CandidateKind::SameQueue
            } else if c.tree.borrowing(&c.usage, cq.node, fr) {
                others
            } else {
                continue;
            };
            for row in c.admitted_rows(cq.id) {
                let w = row.workload;
                let a = c.admission(w).unwrap();
                out.push(Candidate {
                    workload: w,
                    serial: row.serial,
                    cluster_queue: cq.id,
                    node: cq.node,
                    kind,
                    lca: None,
                    priority: c.workload(w).effective_priority(),
                    created: c.workload(w).created,
                    reserved_at: row.reserved_at,
                    evicted: false,
                    local_queue: c.workload(w).lq,
                    requeue_count: c.workload(w).requeue_count,
                    requeue_reason: c.workload(w).requeue_reason,
                    usage: a.usage.as_slice().into(),
                    local_queue_usage: None,
                });
            }
        }
        out
    }

    fn request<'a>(
        c: &'a Cluster,
        cpu_milli: i64,
        candidates: Vec<Candidate>,
    ) -> PreemptionRequest<'a> {
        let own = c.cq_by_name["a"];
        let preemptor = id(c, "incoming");
        // In Kueue's candidate order, as the scheduler lists them.
        let candidates = candidate_order(&candidates, own)
            .into_iter()
            .map(|i| candidates[i].clone())
            .collect();
        PreemptionRequest {
            preemptor,
            cluster_queue: own,
            node: c.cq(own).node,
            priority: 0,
            created: 0,
            config: c.cq(own).preemption,
            requests: vec![(cpu(c), cpu_milli)],
            needs_preemption: vec![cpu(c)],
            candidates,
            fair_sharing: None,
            cluster: c,
            tree: &c.tree,
            usage: &c.usage,
            now: 0,
            topology: None,
        }
    }

    /// The victims' names, sorted.
    fn victims(
        req: &PreemptionRequest<'_>,
        strategies: &[PreemptionStrategy],
    ) -> Option<Vec<String>> {
        let set = select_victims(req, strategies)?;
        assert!(set.allow_borrowing);
        let mut names: Vec<String> = set
            .victims
            .iter()
            .map(|&i| {
                req.cluster
                    .workload(req.candidates[i].workload)
                    .name
                    .clone()
            })
            .collect();
        names.sort();
        Some(names)
    }

    /// Other queues' candidates only (as if `withinClusterQueue` allowed none of a's).
    fn fair_candidates(c: &Cluster) -> Vec<Candidate> {
        let mut out = candidates(c, c.cq_by_name["a"], CandidateKind::FairSharing);
        out.retain(|c| c.kind != CandidateKind::SameQueue);
        out
    }

    /// n admitted 1-cpu workloads `{prefix}1..` in `cq`, reserved at `second`, `second`+1, ...
    fn ones<'a>(names: &'a [String], cq: &'a str, second: u32) -> Vec<Admitted<'a>> {
        names
            .iter()
            .enumerate()
            .map(|(k, n)| (n.as_str(), cq, 1, second + k as u32))
            .collect()
    }

    fn names(prefix: &str, n: usize) -> Vec<String> {
        (1..=n).map(|k| format!("{prefix}{k}")).collect()
    }

    const QUEUES: [Queue<'static>; 4] = [
        ("a", 4, None),
        ("b", 4, None),
        ("c", 4, None),
        ("d", 4, None),
    ];

    #[test]
    fn s2a_takes_from_the_highest_share_until_the_preemptor_fits() {
        // 16 cpu, all used: a 3, b 7 (borrows 3: 187.5), c 6 (borrows 2: 125). Incoming 2 cpu
        // makes a borrow 1 (62.5). c's workloads are newer, so they come first in candidate
        // order, but b has the higher share: b loses one (→ 125), then b and c tie and c's
        // first candidate wins the tie (→ 62.5 ≤ 62.5 passes). Two cpu free: it fits.
        let (a, b, c) = (names("a", 3), names("b", 7), names("c", 6));
        let mut adm = ones(&a, "a", 0);
        adm.extend(ones(&b, "b", 10));
        adm.extend(ones(&c, "c", 30));
        let cl = cluster(&QUEUES, &adm);
        let req = request(&cl, 2000, fair_candidates(&cl));
        // b's newest is b7, c's newest c6.
        assert_eq!(victims(&req, &[S2A]), Some(vec!["b7".into(), "c6".into()]));
        assert_eq!(
            victims(&req, &[S2A, S2B]),
            Some(vec!["b7".into(), "c6".into()])
        );
    }

    #[test]
    fn s2a_refuses_a_final_share_below_the_preemptor_where_s2b_accepts() {
        // 16 cpu, all used: a 4, b 6 in three 2-cpu workloads (borrows 2: 125), d 2. Incoming
        // 1 cpu makes a borrow 1 (62.5). Losing a 2-cpu workload leaves b at 0 < 62.5, so S2-a
        // refuses every one; S2-b compares with b's initial 125 and takes the first.
        let adm = [
            ("a1", "a", 4, 0),
            ("b1", "b", 2, 1),
            ("b2", "b", 2, 2),
            ("b3", "b", 2, 3),
            ("c1", "c", 4, 4),
        ];
        let cl = cluster(&QUEUES, &adm);
        let req = request(&cl, 1000, fair_candidates(&cl));
        assert_eq!(victims(&req, &[S2A]), None);
        assert_eq!(victims(&req, &[S2A, S2B]), Some(vec!["b3".into()]));
        assert_eq!(victims(&req, &[S2B]), Some(vec!["b3".into()]));
    }

    #[test]
    fn a_zero_weight_borrower_is_always_the_target() {
        // 16 cpu, all used: a 3, b 6 with weight 0 (borrows 2: infinite share), c 7 (borrows
        // 3: 187.5, newer workloads). Incoming 2 cpu makes a borrow 1 (62.5). b is targeted
        // first and again after losing one (still infinite); its last borrowed cpu would bring
        // it to 0 < 62.5, so only then does c give one.
        let queues = [
            ("a", 4, None),
            ("b", 4, Some("0")),
            ("c", 4, None),
            ("d", 4, None),
        ];
        let (a, b, c) = (names("a", 3), names("b", 6), names("c", 7));
        let mut adm = ones(&a, "a", 0);
        adm.extend(ones(&b, "b", 10));
        adm.extend(ones(&c, "c", 30));
        let cl = cluster(&queues, &adm);
        let req = request(&cl, 2000, fair_candidates(&cl));
        assert_eq!(victims(&req, &[S2A]), Some(vec!["b6".into(), "c7".into()]));
        // With 1 cpu needed, b's first workload is enough.
        let req = request(&cl, 1000, fair_candidates(&cl));
        assert_eq!(victims(&req, &[S2A]), Some(vec!["b6".into()]));
    }

    #[test]
    fn a_zero_weight_preemptor_cannot_preempt_a_finite_share() {
        // a has weight 0: once the incoming makes it borrow, its share is infinite and no
        // strategy lets it preempt from b (fsStrategyUnsatisfiable).
        let queues = [
            ("a", 4, Some("0")),
            ("b", 4, None),
            ("c", 4, None),
            ("d", 4, None),
        ];
        let adm = [("a1", "a", 4, 0), ("b1", "b", 8, 1), ("c1", "c", 4, 2)];
        let cl = cluster(&queues, &adm);
        let req = request(&cl, 1000, fair_candidates(&cl));
        assert_eq!(victims(&req, &[S2A, S2B]), None);
    }

    #[test]
    fn own_queue_candidates_go_first_when_the_own_queue_leads() {
        // 16 cpu, all used: a 6 (borrows 2; with the incoming 1 cpu, 3: 187.5), b 5 (borrows
        // 1: 62.5, newer workloads), c 4, d 1. a has the highest share, so its own newest
        // workload is preempted (unconditionally) although other queues' candidates come first
        // in candidate order.
        let (a, b) = (names("a", 6), names("b", 5));
        let mut adm = ones(&a, "a", 0);
        adm.extend(ones(&b, "b", 10));
        adm.extend([("c1", "c", 4, 20), ("d1", "d", 1, 21)]);
        let cl = cluster(&QUEUES, &adm);
        let req = request(
            &cl,
            1000,
            candidates(&cl, cl.cq_by_name["a"], CandidateKind::FairSharing),
        );
        let first =
            req.candidates[candidate_order(&req.candidates, req.cluster_queue)[0]].cluster_queue;
        assert_ne!(
            first, req.cluster_queue,
            "other queues come first in candidate order"
        );
        assert_eq!(victims(&req, &[S2A, S2B]), Some(vec!["a6".into()]));
        let set = select_victims(&req, &[S2A]).unwrap();
        assert_eq!(
            req.candidates[set.victims[0]].kind,
            CandidateKind::SameQueue
        );
    }

    #[test]
    fn hierarchical_reclaim_candidates_ignore_the_strategies() {
        // The setup S2-a refuses (see above), with the candidates the host marks as reclaim
        // (the preemptor within nominal quota): taken in target order, no strategy asked.
        let adm = [
            ("a1", "a", 4, 0),
            ("b1", "b", 2, 1),
            ("b2", "b", 2, 2),
            ("b3", "b", 2, 3),
            ("c1", "c", 4, 4),
        ];
        let cl = cluster(&QUEUES, &adm);
        let mut hier = candidates(&cl, cl.cq_by_name["a"], CandidateKind::HierarchicalReclaim);
        hier.retain(|c| c.kind != CandidateKind::SameQueue);
        let req = request(&cl, 1000, hier);
        assert_eq!(victims(&req, &[S2A]), Some(vec!["b3".into()]));
    }

    #[test]
    fn without_a_cohort_only_the_own_queue_is_targeted() {
        let a = names("a", 4);
        let cl = cluster_in("", &[("a", 4, None)], &ones(&a, "a", 0));
        let req = request(
            &cl,
            2000,
            candidates(&cl, cl.cq_by_name["a"], CandidateKind::FairSharing),
        );
        assert_eq!(
            victims(&req, &[S2A, S2B]),
            Some(vec!["a3".into(), "a4".into()])
        );
    }

    /// A stand-in placement that fits once `0` is among the victims (its leaves freed),
    /// whatever the quota says.
    #[derive(Debug)]
    struct NeedsGone(WorkloadId);

    impl crate::policy::TopologyFit for NeedsGone {
        fn fits_without(&self, victims: &[WorkloadId]) -> bool {
            victims.contains(&self.0)
        }
    }

    /// Queue a (4 cpu) runs a1 and a2 (1 cpu each, a2 newer): the incoming 1 cpu fits quota.
    fn quota_fits() -> Cluster {
        cluster(&[("a", 4, None)], &[("a1", "a", 1, 0), ("a2", "a", 1, 1)])
    }

    fn chosen(req: &PreemptionRequest<'_>) -> Vec<WorkloadId> {
        let set = super::super::select_victims(req).expect("victims");
        set.victims
            .iter()
            .map(|&i| req.candidates[i].workload)
            .collect()
    }

    #[test]
    fn classical_selection_takes_the_victim_that_frees_the_placement() {
        let c = quota_fits();
        let own = c.cq_by_name["a"];
        let mut req = request(&c, 1000, candidates(&c, own, CandidateKind::SameQueue));
        // Quota alone: the first candidate (the newer a2) is removed and the preemptor fits.
        assert_eq!(chosen(&req), [id(&c, "a2")]);
        // The placement needs a1's leaves: a2, then a1 are removed, and a2 is filled back.
        let topology = NeedsGone(id(&c, "a1"));
        req.topology = Some(&topology);
        assert_eq!(chosen(&req), [id(&c, "a1")]);
        // Fair sharing's simulation checks the same fit.
        assert_eq!(victims(&req, &[S2A, S2B]), Some(vec!["a1".to_string()]));
    }

    #[test]
    fn the_host_refuses_victims_that_do_not_free_the_placement() {
        let c = quota_fits();
        let own = c.cq_by_name["a"];
        let (a1, a2) = (id(&c, "a1"), id(&c, "a2"));
        let mut req = request(&c, 1000, candidates(&c, own, CandidateKind::SameQueue));
        let topology = NeedsGone(a1);
        req.topology = Some(&topology);
        let index = |w: WorkloadId| req.candidates.iter().position(|c| c.workload == w).unwrap();
        let answer = |victims: Vec<usize>| crate::policy::VictimSet {
            victims,
            allow_borrowing: true,
        };
        use crate::policy::verify::{InvalidAnswer, victims as check};
        // Quota fits once a2 is gone; the placement does not.
        assert_eq!(
            check(&req, &answer(vec![index(a2)]), false),
            Err(InvalidAnswer::VictimsInsufficient)
        );
        assert_eq!(check(&req, &answer(vec![index(a1)]), false), Ok(()));
        assert_eq!(
            check(&req, &answer(vec![index(a1), index(a2)]), false),
            Err(InvalidAnswer::UnneededVictim(index(a2)))
        );
    }

    /// The host's check of an answer, one overlay for all (`verify::victims`), judges every
    /// answer as the definition does: the victims gone, then each left running in turn with
    /// only the others gone, each state built from the snapshot.
    #[test]
    fn the_check_of_an_answer_is_the_definition_on_every_subset() {
        use crate::policy::VictimSet;
        use crate::policy::verify::{InvalidAnswer, victims as check};
        use crate::quota::UsageOverlay;
        // Three queues over their quota by different amounts, workloads of 1 and 2 cpu, and
        // one same-queue candidate: removals cross guaranteed and subtree quotas both ways.
        let adm = [
            ("a1", "a", 2, 0),
            ("a2", "a", 2, 1),
            ("b1", "b", 2, 2),
            ("b2", "b", 1, 3),
            ("b3", "b", 2, 4),
            ("c1", "c", 2, 5),
            ("c2", "c", 1, 6),
            ("c3", "c", 2, 7),
            ("d1", "d", 1, 8),
        ];
        let cl = cluster(&QUEUES, &adm);
        let own = cl.cq_by_name["a"];
        let mut list = candidates(&cl, own, CandidateKind::ReclaimWhileBorrowing);
        // Candidates that may only be reclaimed without borrowing: one of another queue and,
        // though the scheduler never lists one, one of the preemptor's own queue (which does
        // not refuse borrowing), so that an answer listing the own one first has the check
        // name the other when the own one is left running.
        if let Some(c) = list.iter_mut().find(|c| c.cluster_queue != own) {
            c.kind = CandidateKind::ReclaimWithoutBorrowing;
        }
        if let Some(c) = list.iter_mut().find(|c| c.cluster_queue == own) {
            c.kind = CandidateKind::ReclaimWithoutBorrowing;
        }
        let n = list.len();
        assert!(n >= 7, "{n} candidates");
        let definition = |req: &PreemptionRequest<'_>, answer: &VictimSet| {
            let gone = |victims: &[usize]| {
                let mut usage = UsageOverlay::new(req.usage);
                for &i in victims {
                    let c = &req.candidates[i];
                    for &(fr, v) in &c.usage {
                        req.tree.add_usage(&mut usage, c.node, fr, -v);
                    }
                }
                usage
            };
            let allow = |victims: &[usize]| match victims
                .iter()
                .find(|&&i| req.candidates[i].kind == CandidateKind::ReclaimWithoutBorrowing)
            {
                Some(&i) if answer.allow_borrowing && req.candidates[i].cluster_queue != own => {
                    Err(InvalidAnswer::BorrowingNotAllowed(i))
                }
                Some(_) => Ok(false),
                None => Ok(answer.allow_borrowing),
            };
            let all = &answer.victims;
            if !super::super::fits_after(req, &gone(all), allow(all)?, all) {
                return Err(InvalidAnswer::VictimsInsufficient);
            }
            for k in 0..all.len() {
                let mut others = all.clone();
                others.remove(k);
                if super::super::fits_after(req, &gone(&others), allow(&others)?, &others) {
                    return Err(InvalidAnswer::UnneededVictim(all[k]));
                }
            }
            Ok(())
        };
        let (mut accepted, mut refused) = (0, 0);
        for need in [1000, 3000, 6000] {
            let req = request(&cl, need, list.clone());
            for subset in 1u32..(1 << n) {
                let victims: Vec<usize> = (0..n).filter(|&i| subset & (1 << i) != 0).collect();
                let reversed: Vec<usize> = victims.iter().rev().copied().collect();
                for (victims, allow_borrowing) in [&victims, &reversed]
                    .into_iter()
                    .flat_map(|v| [(v, false), (v, true)])
                {
                    let answer = VictimSet {
                        victims: victims.clone(),
                        allow_borrowing,
                    };
                    let got = check(&req, &answer, false);
                    assert_eq!(got, definition(&req, &answer), "{need} {answer:?}");
                    if got.is_ok() {
                        accepted += 1;
                    } else {
                        refused += 1;
                    }
                }
            }
        }
        // Both outcomes occur, so the comparison means something.
        assert!(
            accepted > 0 && refused > 0,
            "{accepted} accepted, {refused} refused"
        );
    }
}
