//! Preemption plugins: implement [`PreemptionPolicy`] and export it with
//! [`export_preemption!`](crate::export_preemption).
//!
//! The host only offers candidates Kueue's rules make eligible and checks every answer: victims
//! must be distinct candidates that make the preemptor fit (use [`QuotaView`](crate::QuotaView)
//! to simulate removals), and `allow_borrowing` must be `false` when a victim is a
//! reclaim-without-borrowing candidate of another ClusterQueue.

use crate::catalog::Catalog;
use crate::types::{Annotation, FrAmount, Millis, Needs, UsageTable, Workload};

use crate::bindings::preemption::exports::wasq::policy::preemption as wit;
pub use wit::{CandidateKind, Victims};

/// An admitted workload that may be preempted: one entry of the request's candidate columns
/// (`wit/preemption.wit`, `record candidates`), as one record.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The workload's handle.
    pub workload: u32,
    /// Its ClusterQueue.
    pub cluster_queue: u32,
    /// How it relates to the preemptor (decides the `Preempted` reason).
    pub kind: CandidateKind,
    /// For reclaim: the cohort under which the candidate was found.
    pub lca: Option<u32>,
    /// Effective priority.
    pub priority: i64,
    /// Creation time.
    pub created: Millis,
    /// When its quota was reserved (admission time).
    pub admitted: Millis,
    /// Already being evicted.
    pub evicting: bool,
    /// The quota it holds, per flavor-resource.
    pub usage: Vec<FrAmount>,
    /// Exposed annotations of the Workload.
    pub annotations: Vec<Annotation>,
    /// Its LocalQueue's admission-fair-sharing usage, when its ClusterQueue uses it.
    pub local_queue_usage: Option<f64>,
}

/// One preemptor and everything needed to choose its victims (`wit/preemption.wit`,
/// `record request`), with the candidates as records.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The pending workload that needs room.
    pub preemptor: Workload,
    /// What it needs per flavor-resource under the flavors being tried.
    pub requests: Vec<FrAmount>,
    /// The flavor-resources (a subset of `requests`) where it does not fit without preemption.
    pub needs_preemption: Vec<u32>,
    /// Eligible candidates, in Kueue's candidate order (see `wit/preemption.wit`); answers
    /// refer to them by index.
    pub candidates: Vec<Candidate>,
    /// The quota-tree nodes whose usage `usage` holds: the preemptor's and every candidate's
    /// ClusterQueue, and their ancestors.
    pub usage_nodes: Vec<u32>,
    /// Row-major: entry `i * len(requests) + j` is the usage of `usage_nodes[i]` for
    /// `requests[j].fr`.
    pub usage: Vec<i64>,
    /// Every node of the preemptor's cohort tree on every flavor-resource, when the plugin
    /// asked for it (`Needs::TREE_USAGE`).
    pub tree_usage: UsageTable,
    /// The scheduler's clock.
    pub now: Millis,
}

impl From<wit::Request> for Request {
    fn from(r: wit::Request) -> Request {
        let c = r.candidates;
        let n = c.workloads.len();
        let at = |v: Option<&u32>| v.map_or(0, |&o| o as usize);
        let mut annotations: Vec<Vec<Annotation>> = vec![Vec::new(); n];
        for a in c.annotations {
            if let Some(slot) = annotations.get_mut(a.candidate as usize) {
                *slot = a.annotations;
            }
        }
        let candidates = annotations
            .into_iter()
            .enumerate()
            .map(|(i, annotations)| {
                let (from, to) = (at(c.usage_offsets.get(i)), at(c.usage_offsets.get(i + 1)));
                let usage = (from..to.max(from))
                    .filter_map(|k| {
                        Some(FrAmount {
                            fr: *c.usage_frs.get(k)?,
                            amount: *c.usage_amounts.get(k)?,
                        })
                    })
                    .collect();
                Candidate {
                    workload: c.workloads[i],
                    cluster_queue: c.cluster_queues.get(i).copied().unwrap_or_default(),
                    kind: c.kinds.get(i).copied().unwrap_or(CandidateKind::SameQueue),
                    lca: c.lcas.get(i).copied().flatten(),
                    priority: c.priorities.get(i).copied().unwrap_or_default(),
                    created: c.created.get(i).copied().unwrap_or_default(),
                    admitted: c.admitted.get(i).copied().unwrap_or_default(),
                    evicting: c.evicting.get(i).copied().unwrap_or_default(),
                    usage,
                    annotations,
                    local_queue_usage: c.local_queue_usage.get(i).copied().flatten(),
                }
            })
            .collect();
        Request {
            preemptor: r.preemptor,
            requests: r.requests,
            needs_preemption: r.needs_preemption,
            candidates,
            usage_nodes: r.usage_nodes,
            usage: r.usage,
            tree_usage: r.tree_usage,
            now: r.now,
        }
    }
}

/// A preemption victim-selection policy.
///
/// The SDK builds the policy with [`Default`] on the first call into the plugin, and passes the
/// latest catalog the host sent to every method.
pub trait PreemptionPolicy: Default + 'static {
    /// Called after the host sent a new catalog (before the next decision); the place to read
    /// settings. Default: nothing.
    fn catalog_changed(&mut self, catalog: &Catalog) {
        let _ = catalog;
    }

    /// What the policy reads beyond its requests, asked after every new catalog (after
    /// [`catalog_changed`](PreemptionPolicy::catalog_changed)): `Needs::TREE_USAGE` fills each
    /// request's `tree_usage` with every node of the preemptor's cohort tree on every
    /// flavor-resource (read it with [`QuotaView::from_usage_table`](crate::QuotaView::from_usage_table);
    /// fair sharing's shares need it, see [`kueue::preemption_needs`](crate::kueue::preemption_needs)).
    /// Default: nothing.
    fn needs(&self, catalog: &Catalog) -> Needs {
        let _ = catalog;
        Needs::empty()
    }

    /// The victims for one preemptor (indices into `req.candidates`), or `None` when preemption
    /// cannot make it fit. [`kueue::select_victims`](crate::kueue::select_victims) is Kueue's
    /// answer.
    fn select_victims(&mut self, catalog: &Catalog, req: &Request) -> Option<Victims>;
}

#[doc(hidden)]
pub mod glue {
    use super::*;
    use crate::export::Plugin;

    pub fn set_catalog<P: PreemptionPolicy>(
        plugin: &mut Plugin<P>,
        catalog: crate::types::Catalog,
    ) -> Needs {
        plugin.set_catalog(catalog, P::catalog_changed);
        let (policy, catalog) = plugin.parts();
        policy.needs(catalog)
    }

    pub fn select_victims<P: PreemptionPolicy>(
        plugin: &mut Plugin<P>,
        requests: Vec<wit::Request>,
    ) -> Vec<Option<Victims>> {
        let (policy, catalog) = plugin.parts();
        requests
            .into_iter()
            .map(|r| policy.select_victims(catalog, &Request::from(r)))
            .collect()
    }
}

/// Exports a type implementing [`PreemptionPolicy`] as the plugin's `wasq:policy/preemption`
/// interface. Invoke it once, in the plugin crate's `lib.rs`:
///
/// ```ignore
/// #[derive(Default)]
/// struct MyPreemption;
/// impl wasq_policy_sdk::preemption::PreemptionPolicy for MyPreemption { /* … */ }
/// wasq_policy_sdk::export_preemption!(MyPreemption);
/// ```
#[macro_export]
macro_rules! export_preemption {
    ($policy:ty) => {
        const _: () = {
            struct __WasqPreemptionExport;
            ::std::thread_local! {
                static __WASQ_PLUGIN: ::core::cell::RefCell<$crate::export::Plugin<$policy>> =
                    ::core::cell::RefCell::new($crate::export::Plugin::new());
            }
            impl $crate::bindings::preemption::exports::wasq::policy::preemption::Guest
                for __WasqPreemptionExport
            {
                fn set_catalog(catalog: $crate::types::Catalog) -> $crate::types::Needs {
                    __WASQ_PLUGIN
                        .with_borrow_mut(|p| $crate::preemption::glue::set_catalog(p, catalog))
                }
                fn select_victims(
                    requests: ::std::vec::Vec<
                        $crate::bindings::preemption::exports::wasq::policy::preemption::Request,
                    >,
                ) -> ::std::vec::Vec<::core::option::Option<$crate::preemption::Victims>> {
                    __WASQ_PLUGIN
                        .with_borrow_mut(|p| $crate::preemption::glue::select_victims(p, requests))
                }
            }
            $crate::bindings::preemption::__export_preemption_plugin!(
                __WasqPreemptionExport with_types_in $crate::bindings::preemption
            );
        };
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_become_one_record_per_candidate() {
        let columns = wit::Candidates {
            workloads: vec![7, 9],
            cluster_queues: vec![1, 2],
            kinds: vec![CandidateKind::SameQueue, CandidateKind::FairSharing],
            lcas: vec![None, Some(4)],
            priorities: vec![-1, 3],
            created: vec![10, 20],
            admitted: vec![11, 21],
            evicting: vec![false, true],
            usage_offsets: vec![0, 2, 3],
            usage_frs: vec![0, 1, 0],
            usage_amounts: vec![1000, 2000, 3000],
            annotations: vec![wit::CandidateAnnotations {
                candidate: 1,
                annotations: vec![Annotation {
                    key: 0,
                    value: "x".into(),
                }],
            }],
            local_queue_usage: vec![Some(0.5), None],
        };
        let req = Request::from(wit::Request {
            preemptor: crate::testing::workload(5, 1, 0, 0),
            requests: Vec::new(),
            needs_preemption: Vec::new(),
            candidates: columns,
            usage_nodes: Vec::new(),
            usage: Vec::new(),
            tree_usage: UsageTable {
                nodes: Vec::new(),
                amounts: Vec::new(),
            },
            now: 0,
        });
        let [a, b] = &req.candidates[..] else {
            panic!("two candidates: {:?}", req.candidates)
        };
        assert_eq!(
            (a.workload, a.kind, a.lca, a.priority),
            (7, CandidateKind::SameQueue, None, -1)
        );
        assert_eq!(
            a.usage,
            vec![
                FrAmount {
                    fr: 0,
                    amount: 1000
                },
                FrAmount {
                    fr: 1,
                    amount: 2000
                }
            ]
        );
        assert!(a.annotations.is_empty());
        assert_eq!(a.local_queue_usage, Some(0.5));
        assert_eq!(
            (b.cluster_queue, b.lca, b.evicting, b.admitted),
            (2, Some(4), true, 21)
        );
        assert_eq!(
            b.usage,
            vec![FrAmount {
                fr: 0,
                amount: 3000
            }]
        );
        assert_eq!(b.annotations[0].value, "x");
    }
}
