//! Preemption plugins: implement [`PreemptionPolicy`] and export it with
//! [`export_preemption!`](crate::export_preemption).
//!
//! The host only offers candidates Kueue's rules make eligible and checks every answer: victims
//! must be distinct candidates that make the preemptor fit (use [`QuotaView`](crate::QuotaView)
//! to simulate removals), and `allow_borrowing` must be `false` when a victim is a
//! reclaim-without-borrowing candidate of another ClusterQueue.
//!
//! A candidate crosses in two parts: what does not depend on the preemptor (its workload,
//! queues, priority, times, requeue history, the quota it holds and who it is) once per
//! admission, as a row of the instance's table of admitted workloads (`new-rows`), which the
//! SDK keeps; and what does in the request: its row, the group of candidates alike that gives
//! its kind, lowest common ancestor and whether it is being evicted, and its LocalQueue's
//! usage. The SDK joins them once per request: a plugin reads one [`Candidate`] record per
//! candidate, or the same fields by index through [`CandidateTable`].

use std::rc::Rc;

use crate::admitted::AdmittedTable;
use crate::catalog::Catalog;
#[cfg(doc)]
use crate::identity::Identity;
use crate::identity::NO_STRING;
use crate::relations::{Joiner, Relation};
use crate::types::{
    ClusterQueueId, Entry, FrAmount, LocalQueueId, Millis, Needs, NewStrings, NodeId, NodeUsage,
    Owner, RequeueReason, StringId, Workload,
};

use crate::bindings::preemption::exports::wasq::policy::preemption as wit;
pub use wit::{Answer, CandidateKind, Victims};

/// An admitted workload that may be preempted: its row of admitted workloads
/// (`wit/preemption.wit`) joined with what the request says of it (its group, its LocalQueue's
/// usage), its identity flattened.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The workload's handle.
    pub workload: u32,
    /// Its ClusterQueue.
    pub cluster_queue: u32,
    /// Its LocalQueue, when it has one the host knows.
    pub local_queue: Option<LocalQueueId>,
    /// Its namespace (read it with [`Identity::namespace`]).
    pub namespace: StringId,
    /// The job that owns it ([`Identity::job_kind`], [`Identity::job_name`], …).
    pub owner: Option<Owner>,
    /// The labels the allow-list passes ([`Identity::label`]).
    pub labels: Vec<Entry>,
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
    /// How often the workload was evicted and queued again before (0 = never).
    pub requeue_count: u32,
    /// Why it was last evicted and queued again; `None` when it never was.
    pub requeue_reason: Option<RequeueReason>,
    /// Already being evicted.
    pub evicting: bool,
    /// The quota it holds, per flavor-resource.
    pub usage: Vec<FrAmount>,
    /// The annotations the allow-list passes ([`Identity::annotation`]).
    pub annotations: Vec<Entry>,
    /// Its LocalQueue's admission-fair-sharing usage, when its ClusterQueue uses it.
    pub local_queue_usage: Option<f64>,
}

crate::identity::identity_from_fields!(Candidate);

/// The candidates as the host sends them: rows of the instance's table of admitted workloads
/// (`record new-rows`), each read with what the request's groups and LocalQueue shares say of
/// it (joined once, when the request arrives), without a [`Candidate`] built per candidate.
/// Read them through [`CandidateTable`].
///
/// (The name is from the versions of the contract that sent candidates as columns.)
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateColumns {
    /// The candidates' rows (`request.candidates`).
    rows: Vec<u32>,
    /// Per candidate: kind, lca, evicting, LocalQueue usage.
    relations: Vec<Relation>,
    /// The instance's table of admitted workloads (as of this call) that `rows` index.
    table: Rc<AdmittedTable>,
    /// Whether the list is in Kueue's candidate order: as the host sends it, or as
    /// [`Request::to_columns`] found it.
    in_order: bool,
}

/// One preemptor and everything needed to choose its victims (`wit/preemption.wit`,
/// `record request`). `C` holds the candidates: one [`Candidate`] record each (the default,
/// what [`PreemptionPolicy::select_victims`] gets), or the host's [`CandidateColumns`] (what
/// [`PreemptionPolicy::select_victims_columns`] gets, without building a record per
/// candidate). Both are read by index through [`CandidateTable`].
#[derive(Debug, Clone, PartialEq)]
pub struct Request<C = Vec<Candidate>> {
    /// The pending workload that needs room.
    pub preemptor: Workload,
    /// What it needs per flavor-resource under the flavors being tried.
    pub requests: Vec<FrAmount>,
    /// The flavor-resources (a subset of `requests`) where it does not fit without preemption.
    pub needs_preemption: Vec<u32>,
    /// Eligible candidates, in Kueue's candidate order (see `wit/preemption.wit`); answers
    /// refer to them by index.
    pub candidates: C,
    /// Whether the instance keeps the usage it receives (see `wit/preemption.wit`,
    /// `usage-kept`; the host sends `true`): `usage` then lists only the nodes of the
    /// preemptor's cohort tree whose usage changed since the instance last received it, and
    /// [`QuotaView::from_request`] reads the others from what the SDK kept. A request built by
    /// hand uses `false` and lists its own usage.
    ///
    /// [`QuotaView::from_request`]: crate::QuotaView::from_request
    pub usage_kept: bool,
    /// Quota usage of nodes on the `requests`' flavor-resources (a flavor-resource a node's
    /// entry does not list is 0): with `usage_kept`, see there; else the preemptor's and every
    /// candidate's ClusterQueue, and their ancestors. Read it through
    /// [`QuotaView::from_request`](crate::QuotaView::from_request).
    pub usage: Vec<NodeUsage>,
    /// Every node of the preemptor's cohort tree on every flavor-resource, when the plugin
    /// asked for it (`Needs::TREE_USAGE`); empty otherwise. Read it through
    /// [`QuotaView::from_usage_table`](crate::QuotaView::from_usage_table).
    pub tree_usage: Vec<NodeUsage>,
    /// The scheduler's clock.
    pub now: Millis,
}

/// Read access to preemption candidates by index (`0..len()`), whichever form they come in.
/// Indices out of range panic, as slice indexing does.
pub trait CandidateTable {
    /// How many candidates there are.
    fn len(&self) -> usize;
    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The workload's handle.
    fn workload(&self, i: usize) -> u32;
    /// Its ClusterQueue.
    fn cluster_queue(&self, i: usize) -> ClusterQueueId;
    /// How it relates to the preemptor.
    fn kind(&self, i: usize) -> CandidateKind;
    /// For reclaim: the cohort under which it was found.
    fn lca(&self, i: usize) -> Option<NodeId>;
    /// Effective priority.
    fn priority(&self, i: usize) -> i64;
    /// Creation time.
    fn created(&self, i: usize) -> Millis;
    /// When its quota was reserved.
    fn admitted(&self, i: usize) -> Millis;
    /// How often it was evicted and queued again before (0 = never).
    fn requeue_count(&self, i: usize) -> u32;
    /// Why it was last evicted and queued again; `None` when it never was.
    fn requeue_reason(&self, i: usize) -> Option<RequeueReason>;
    /// Already being evicted.
    fn evicting(&self, i: usize) -> bool;
    /// The quota it holds, per flavor-resource.
    fn usage(&self, i: usize) -> impl Iterator<Item = FrAmount> + '_;
    /// Its LocalQueue's admission-fair-sharing usage, when its ClusterQueue uses it.
    fn local_queue_usage(&self, i: usize) -> Option<f64>;
    /// Candidate `i` as a record.
    fn candidate(&self, i: usize) -> Candidate;
    /// Its LocalQueue, when it has one the host knows.
    fn local_queue_id(&self, i: usize) -> Option<LocalQueueId>;
    /// Its namespace, as a string id.
    fn namespace_id(&self, i: usize) -> StringId;
    /// The job that owns it, as string ids.
    fn owner(&self, i: usize) -> Option<Owner>;
    /// The labels the allow-list passes.
    fn labels(&self, i: usize) -> impl Iterator<Item = Entry> + '_;
    /// The annotations the allow-list passes.
    fn annotations(&self, i: usize) -> impl Iterator<Item = Entry> + '_;
    /// Whether the candidates are known to be in Kueue's candidate order (as the host sends
    /// `request.candidates`), so that [`kueue::candidate_order`](crate::kueue::candidate_order)
    /// need not sort or check them. `false` unless the table says otherwise: records a plugin
    /// builds itself may come in any order.
    fn in_candidate_order(&self) -> bool {
        false
    }

    /// Its namespace (see [`Identity::namespace`]).
    fn namespace<'c>(&self, catalog: &'c Catalog, i: usize) -> &'c str {
        catalog.string(self.namespace_id(i))
    }
    /// The owning job's kind; `None` for a bare Workload.
    fn job_kind<'c>(&self, catalog: &'c Catalog, i: usize) -> Option<&'c str> {
        self.owner(i).map(|o| catalog.string(o.kind))
    }
    /// The owning job's apiVersion.
    fn job_api_version<'c>(&self, catalog: &'c Catalog, i: usize) -> Option<&'c str> {
        self.owner(i).map(|o| catalog.string(o.api_version))
    }
    /// The owning job's name.
    fn job_name<'c>(&self, catalog: &'c Catalog, i: usize) -> Option<&'c str> {
        self.owner(i).map(|o| catalog.string(o.name))
    }
    /// The name of its LocalQueue.
    fn local_queue<'c>(&self, catalog: &'c Catalog, i: usize) -> Option<&'c str> {
        let lq = self.local_queue_id(i)?;
        catalog
            .local_queues
            .get(lq as usize)
            .map(|l| l.name.as_str())
    }
    /// The value of its label `key`, when the allow-list passes it.
    fn label<'c>(&self, catalog: &'c Catalog, i: usize, key: &str) -> Option<&'c str> {
        catalog.entry(self.labels(i), key)
    }
    /// The value of its annotation `key`, when the allow-list passes it.
    fn annotation<'c>(&self, catalog: &'c Catalog, i: usize, key: &str) -> Option<&'c str> {
        catalog.entry(self.annotations(i), key)
    }
}

/// Records read as a table: a slice of them, and the `Vec` a [`Request`] holds.
macro_rules! records_table {
    ($($records:ty),*) => {$(
        impl CandidateTable for $records {
            fn len(&self) -> usize {
                <[Candidate]>::len(self)
            }
            fn workload(&self, i: usize) -> u32 {
                self[i].workload
            }
            fn cluster_queue(&self, i: usize) -> ClusterQueueId {
                self[i].cluster_queue
            }
            fn kind(&self, i: usize) -> CandidateKind {
                self[i].kind
            }
            fn lca(&self, i: usize) -> Option<NodeId> {
                self[i].lca
            }
            fn priority(&self, i: usize) -> i64 {
                self[i].priority
            }
            fn created(&self, i: usize) -> Millis {
                self[i].created
            }
            fn admitted(&self, i: usize) -> Millis {
                self[i].admitted
            }
            fn requeue_count(&self, i: usize) -> u32 {
                self[i].requeue_count
            }
            fn requeue_reason(&self, i: usize) -> Option<RequeueReason> {
                self[i].requeue_reason
            }
            fn evicting(&self, i: usize) -> bool {
                self[i].evicting
            }
            fn usage(&self, i: usize) -> impl Iterator<Item = FrAmount> + '_ {
                self[i].usage.iter().copied()
            }
            fn local_queue_usage(&self, i: usize) -> Option<f64> {
                self[i].local_queue_usage
            }
            fn candidate(&self, i: usize) -> Candidate {
                self[i].clone()
            }
            fn local_queue_id(&self, i: usize) -> Option<LocalQueueId> {
                self[i].local_queue
            }
            fn namespace_id(&self, i: usize) -> StringId {
                self[i].namespace
            }
            fn owner(&self, i: usize) -> Option<Owner> {
                self[i].owner
            }
            fn labels(&self, i: usize) -> impl Iterator<Item = Entry> + '_ {
                self[i].labels.iter().copied()
            }
            fn annotations(&self, i: usize) -> impl Iterator<Item = Entry> + '_ {
                self[i].annotations.iter().copied()
            }
        }
    )*};
}

records_table!([Candidate], Vec<Candidate>);

impl CandidateColumns {
    /// The candidates of a request (`rows`, `relations` one per row), reading the instance's
    /// table of admitted workloads `table`: a row the table does not hold reads as an empty
    /// row (workload 0, ClusterQueue 0, no quota; the host never sends one, and a plugin must
    /// not trap if it did).
    pub(crate) fn new(
        rows: Vec<u32>,
        relations: Vec<Relation>,
        table: Rc<AdmittedTable>,
    ) -> CandidateColumns {
        debug_assert_eq!(rows.len(), relations.len());
        CandidateColumns {
            rows,
            relations,
            table,
            in_order: true,
        }
    }

    /// The candidates as the host sent them (`request.candidates`): their rows of the
    /// instance's table of admitted workloads. Read the candidates through [`CandidateTable`].
    pub fn raw(&self) -> &[u32] {
        &self.rows
    }

    /// Candidate `i`'s row of the table (the empty row when the table does not hold it).
    #[inline(always)]
    fn row(&self, i: usize) -> &wit::AdmittedRow {
        self.table.row(self.rows[i])
    }

    /// Candidate `i`'s identity, when the host sent it.
    #[inline]
    fn identity(&self, i: usize) -> Option<&crate::types::WorkloadIdentity> {
        self.row(i).identity.as_ref()
    }
}

impl CandidateTable for CandidateColumns {
    #[inline]
    fn len(&self) -> usize {
        self.rows.len()
    }
    #[inline]
    fn workload(&self, i: usize) -> u32 {
        self.row(i).workload
    }
    #[inline]
    fn cluster_queue(&self, i: usize) -> ClusterQueueId {
        self.row(i).cluster_queue
    }
    #[inline]
    fn kind(&self, i: usize) -> CandidateKind {
        self.relations[i].kind
    }
    #[inline]
    fn lca(&self, i: usize) -> Option<NodeId> {
        self.relations[i].lca
    }
    #[inline]
    fn priority(&self, i: usize) -> i64 {
        self.row(i).priority
    }
    #[inline]
    fn created(&self, i: usize) -> Millis {
        self.row(i).created
    }
    #[inline]
    fn admitted(&self, i: usize) -> Millis {
        self.row(i).admitted
    }
    #[inline]
    fn requeue_count(&self, i: usize) -> u32 {
        self.row(i).requeue_count
    }
    #[inline]
    fn requeue_reason(&self, i: usize) -> Option<RequeueReason> {
        self.row(i).requeue_reason
    }
    #[inline]
    fn evicting(&self, i: usize) -> bool {
        self.relations[i].evicting
    }
    #[inline(always)]
    fn usage(&self, i: usize) -> impl Iterator<Item = FrAmount> + '_ {
        self.row(i).usage.iter().copied()
    }
    #[inline]
    fn local_queue_usage(&self, i: usize) -> Option<f64> {
        self.relations[i].local_queue_usage
    }
    fn candidate(&self, i: usize) -> Candidate {
        Candidate {
            workload: self.workload(i),
            cluster_queue: self.cluster_queue(i),
            kind: self.kind(i),
            lca: self.lca(i),
            priority: self.priority(i),
            created: self.created(i),
            admitted: self.admitted(i),
            requeue_count: self.requeue_count(i),
            requeue_reason: self.requeue_reason(i),
            evicting: self.evicting(i),
            usage: self.row(i).usage.clone(),
            local_queue: self.local_queue_id(i),
            namespace: self.namespace_id(i),
            owner: self.owner(i),
            labels: self.labels(i).collect(),
            annotations: self.annotations(i).collect(),
            local_queue_usage: self.local_queue_usage(i),
        }
    }
    #[inline]
    fn local_queue_id(&self, i: usize) -> Option<LocalQueueId> {
        self.row(i).local_queue
    }
    fn namespace_id(&self, i: usize) -> StringId {
        self.identity(i).map_or(NO_STRING, |id| id.namespace)
    }
    fn owner(&self, i: usize) -> Option<Owner> {
        self.identity(i).and_then(|id| id.owner)
    }
    fn labels(&self, i: usize) -> impl Iterator<Item = Entry> + '_ {
        self.identity(i)
            .map_or(&[][..], |id| &id.labels)
            .iter()
            .copied()
    }
    fn annotations(&self, i: usize) -> impl Iterator<Item = Entry> + '_ {
        self.identity(i)
            .map_or(&[][..], |id| &id.annotations)
            .iter()
            .copied()
    }
    /// The host sends candidates in Kueue's candidate order (`request.candidates`).
    #[inline]
    fn in_candidate_order(&self) -> bool {
        self.in_order
    }
}

impl Request<CandidateColumns> {
    /// A request as the host sent it, its candidates' rows read from `table`, their groups and
    /// LocalQueue shares joined by `joiner` (`local_queues`: how many the catalog has).
    pub(crate) fn received(
        r: wit::Request,
        table: &Rc<AdmittedTable>,
        joiner: &mut Joiner,
        local_queues: usize,
    ) -> Request<CandidateColumns> {
        let relations = joiner.join(
            &r.candidates,
            &r.groups,
            &r.local_queue_usage,
            table,
            local_queues,
        );
        Request {
            preemptor: r.preemptor,
            requests: r.requests,
            needs_preemption: r.needs_preemption,
            candidates: CandidateColumns::new(r.candidates, relations, table.clone()),
            usage_kept: r.usage_kept,
            usage: r.usage,
            tree_usage: r.tree_usage.unwrap_or_default(),
            now: r.now,
        }
    }
}

impl<C: CandidateTable> Request<C> {
    /// The same request with one [`Candidate`] record per candidate.
    pub fn to_records(&self) -> Request {
        Request {
            preemptor: self.preemptor.clone(),
            requests: self.requests.clone(),
            needs_preemption: self.needs_preemption.clone(),
            candidates: (0..self.candidates.len())
                .map(|i| self.candidates.candidate(i))
                .collect(),
            usage_kept: self.usage_kept,
            usage: self.usage.clone(),
            tree_usage: self.tree_usage.clone(),
            now: self.now,
        }
    }
}

impl Request {
    /// The same request with the candidates as the host sends them (a table of admitted
    /// workloads of its own, one row per candidate, each relating to the preemptor as its
    /// record says, its LocalQueue usage included): to test a
    /// [`select_victims_columns`](PreemptionPolicy::select_victims_columns) written over
    /// [`CandidateTable`] on requests built as records.
    pub fn to_columns(&self) -> Request<CandidateColumns> {
        let list = &self.candidates;
        let mut table = AdmittedTable::default();
        table.add(wit::NewRows {
            first: 0,
            rows: list
                .iter()
                .map(|c| wit::AdmittedRow {
                    workload: c.workload,
                    cluster_queue: c.cluster_queue,
                    local_queue: c.local_queue,
                    priority: c.priority,
                    created: c.created,
                    admitted: c.admitted,
                    requeue_count: c.requeue_count,
                    requeue_reason: c.requeue_reason,
                    usage: c.usage.clone(),
                    identity: Some(crate::identity::from_parts(c)),
                })
                .collect(),
        });
        // Each record's own relation: records may give a usage the host's form cannot (two
        // usages for one LocalQueue, a usage without a LocalQueue), and must read back alike.
        let relations = list
            .iter()
            .map(|c| Relation {
                kind: c.kind,
                evicting: c.evicting,
                lca: c.lca,
                local_queue_usage: c.local_queue_usage,
            })
            .collect();
        let all: Vec<u32> = (0..list.len() as u32).collect();
        let mut candidates = CandidateColumns::new(all.clone(), relations, Rc::new(table));
        // Records a test builds may come in any order; only those already in Kueue's order
        // are marked so, as the host's always are.
        candidates.in_order = crate::kueue::candidate_order(self, &all) == all;
        Request {
            preemptor: self.preemptor.clone(),
            requests: self.requests.clone(),
            needs_preemption: self.needs_preemption.clone(),
            candidates,
            usage_kept: self.usage_kept,
            usage: self.usage.clone(),
            tree_usage: self.tree_usage.clone(),
            now: self.now,
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
    /// fair sharing's shares need it, see [`kueue::preemption_needs`](crate::kueue::preemption_needs));
    /// `Needs::IDENTITY` sends who the preemptor and the candidates are (namespace, owning
    /// job, labels, annotations: [`Identity`] and
    /// [`CandidateTable`]; without it they read as nobody in particular); `Needs::POD_SETS`
    /// sends what the preemptor requests ([`Workload::pod_sets`]; without it no podSets; what
    /// it needs under the flavors tried is `req.requests` either way). Default:
    /// `Needs::IDENTITY | Needs::POD_SETS` (Kueue's own victim selection,
    /// [`kueue::preemption_needs`](crate::kueue::preemption_needs), reads neither).
    fn needs(&self, catalog: &Catalog) -> Needs {
        let _ = catalog;
        Needs::IDENTITY | Needs::POD_SETS
    }

    /// The victims for one preemptor (indices into `req.candidates`), or `None` when preemption
    /// cannot make it fit. [`kueue::select_victims`](crate::kueue::select_victims) is Kueue's
    /// answer.
    fn select_victims(&mut self, catalog: &Catalog, req: &Request) -> Option<Victims>;

    /// What the SDK calls for each request: the same decision on the candidates as the host
    /// sends them ([`CandidateColumns`]). The default builds one [`Candidate`] record per
    /// candidate ([`Request::to_records`]) and calls
    /// [`select_victims`](PreemptionPolicy::select_victims); a policy written over
    /// [`CandidateTable`] (as every function of [`kueue`](crate::kueue) is) overrides it to skip
    /// that work, which is most of a call's cost with hundreds of candidates. Both must decide
    /// alike.
    fn select_victims_columns(
        &mut self,
        catalog: &Catalog,
        req: &Request<CandidateColumns>,
    ) -> Option<Victims> {
        self.select_victims(catalog, &req.to_records())
    }

    /// The answer the SDK sends for each request: the victims of
    /// [`select_victims_columns`](PreemptionPolicy::select_victims_columns), or
    /// [`Answer::NoVictims`]. Override it to answer [`Answer::KueueAmong`]`(indices)`: Kueue's
    /// own selection, run by the host among those candidates only (how the Python and
    /// JavaScript SDKs compose with Kueue; Rust policies can also call
    /// [`kueue`](crate::kueue) themselves).
    fn answer(&mut self, catalog: &Catalog, req: &Request<CandidateColumns>) -> Answer {
        self.select_victims_columns(catalog, req)
            .map_or(Answer::NoVictims, Answer::Victims)
    }
}

#[doc(hidden)]
pub mod glue {
    use super::*;
    use crate::export::Plugin;

    ::std::thread_local! {
        /// The instance's table of admitted workloads (`new-rows`), as of the last call.
        static ROWS: ::core::cell::RefCell<Rc<AdmittedTable>> = Default::default();
        /// What joins each request's groups and LocalQueue shares per candidate, and the
        /// buffers it keeps between requests.
        static JOINER: ::core::cell::RefCell<Joiner> = Default::default();
    }

    pub fn set_catalog<P: PreemptionPolicy>(
        plugin: &mut Plugin<P>,
        catalog: crate::types::Catalog,
    ) -> Needs {
        // Rows name the previous catalog's queues; the host starts a new table too.
        ROWS.with_borrow_mut(|t| *t = Rc::default());
        plugin.set_catalog(catalog, P::catalog_changed);
        let (policy, catalog) = plugin.parts();
        policy.needs(catalog)
    }

    pub fn select_victims<P: PreemptionPolicy>(
        plugin: &mut Plugin<P>,
        strings: Option<NewStrings>,
        rows: Option<wit::NewRows>,
        requests: Vec<wit::Request>,
    ) -> Vec<wit::Answer> {
        let (policy, catalog) = plugin.parts_with(strings);
        let table = ROWS.with_borrow_mut(|t| {
            if let Some(rows) = rows {
                Rc::make_mut(t).add(rows);
            }
            t.clone()
        });
        let local_queues = catalog.local_queues.len();
        requests
            .into_iter()
            .map(|r| {
                if r.usage_kept {
                    // Filed before the plugin looks: the requests after it rely on it.
                    crate::kept::receive(catalog, &r.usage, &r.requests);
                }
                let req = JOINER.with_borrow_mut(|j| Request::received(r, &table, j, local_queues));
                let answer = policy.answer(catalog, &req);
                // The relations' buffer serves the next request.
                JOINER.with_borrow_mut(|j| j.recycle(req.candidates.relations));
                answer
            })
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
                    strings: Option<$crate::types::NewStrings>,
                    rows: ::core::option::Option<
                        $crate::bindings::preemption::exports::wasq::policy::preemption::NewRows,
                    >,
                    requests: ::std::vec::Vec<
                        $crate::bindings::preemption::exports::wasq::policy::preemption::Request,
                    >,
                ) -> ::std::vec::Vec<
                    $crate::bindings::preemption::exports::wasq::policy::preemption::Answer,
                > {
                    __WASQ_PLUGIN.with_borrow_mut(|p| {
                        $crate::preemption::glue::select_victims(p, strings, rows, requests)
                    })
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
    use crate::identity::Identity;

    /// A policy that says nothing of what it reads is told who workloads are and what the
    /// preemptor requests; Kueue's own victim selection and ordering read neither.
    #[test]
    fn identity_and_pod_sets_are_sent_unless_a_policy_says_what_it_reads() {
        #[derive(Default)]
        struct Plain;
        impl PreemptionPolicy for Plain {
            fn select_victims(&mut self, _: &Catalog, _: &Request) -> Option<Victims> {
                None
            }
        }
        let catalog = crate::testing::CatalogBuilder::new().build();
        assert_eq!(Plain.needs(&catalog), Needs::IDENTITY | Needs::POD_SETS);
        for kueue in [
            crate::kueue::preemption_needs(&catalog),
            crate::kueue::ordering_needs(&catalog),
        ] {
            assert!(
                !kueue.intersects(Needs::IDENTITY | Needs::POD_SETS),
                "{kueue:?}"
            );
        }
    }

    /// A row of the table of admitted workloads.
    fn row(
        workload: u32,
        cluster_queue: u32,
        local_queue: Option<u32>,
        priority: i64,
        times: (i64, i64),
        requeue: (u32, Option<RequeueReason>),
        usage: &[(u32, i64)],
    ) -> wit::AdmittedRow {
        wit::AdmittedRow {
            workload,
            cluster_queue,
            local_queue,
            priority,
            created: times.0,
            admitted: times.1,
            requeue_count: requeue.0,
            requeue_reason: requeue.1,
            usage: crate::testing::amounts(usage),
            identity: None,
        }
    }

    /// A group of candidates as the host sends it.
    fn group(
        kind: CandidateKind,
        evicting: bool,
        lca: Option<u32>,
        rows: &[u32],
    ) -> wit::CandidateGroup {
        wit::CandidateGroup {
            kind,
            lca,
            evicting,
            rows: rows.to_vec(),
        }
    }

    /// A request as the host sends it, for these candidates (no quota to speak of).
    fn sent(
        candidates: &[u32],
        groups: Vec<wit::CandidateGroup>,
        local_queue_usage: Vec<wit::LocalQueueShare>,
    ) -> wit::Request {
        wit::Request {
            preemptor: crate::testing::workload(5, 1, 0, 0),
            requests: Vec::new(),
            needs_preemption: Vec::new(),
            candidates: candidates.to_vec(),
            groups,
            local_queue_usage,
            usage_kept: false,
            usage: Vec::new(),
            tree_usage: None,
            now: 0,
        }
    }

    #[test]
    fn candidates_become_one_record_each_with_their_rows() {
        // The instance's table holds three rows; the request names two of them.
        let mut a = row(
            7,
            1,
            Some(3),
            -1,
            (10, 11),
            (0, None),
            &[(0, 1000), (1, 2000)],
        );
        a.identity = Some(crate::types::WorkloadIdentity {
            namespace: 0,
            owner: Some(Owner {
                kind: 2,
                api_version: 3,
                name: 4,
            }),
            labels: Vec::new(),
            annotations: Vec::new(),
        });
        let mut b = row(
            9,
            2,
            None,
            3,
            (20, 21),
            (2, Some(RequeueReason::AdmissionCheck)),
            &[(0, 3000)],
        );
        b.identity = Some(crate::types::WorkloadIdentity {
            namespace: 1,
            owner: None,
            labels: Vec::new(),
            annotations: vec![Entry { key: 5, value: 6 }],
        });
        let mut table = AdmittedTable::default();
        table.add(wit::NewRows {
            first: 0,
            rows: vec![row(1, 0, None, 0, (0, 0), (0, None), &[(1, 5)]), a, b],
        });
        // The second is being evicted; the first's LocalQueue (3) has a usage.
        let groups = vec![
            group(CandidateKind::FairSharing, true, Some(4), &[2]),
            group(CandidateKind::SameQueue, false, None, &[1]),
        ];
        let shares = vec![
            wit::LocalQueueShare {
                local_queue: 3,
                weighted: 0.5,
            },
            wit::LocalQueueShare {
                local_queue: 0,
                weighted: 9.0,
            },
        ];
        let mut joiner = Joiner::default();
        let req: Request = Request::received(
            sent(&[1, 2], groups, shares),
            &Rc::new(table),
            &mut joiner,
            4,
        )
        .to_records();
        let [a, b] = &req.candidates[..] else {
            panic!("two candidates: {:?}", req.candidates)
        };
        assert_eq!(
            (a.workload, a.kind, a.lca, a.priority),
            (7, CandidateKind::SameQueue, None, -1)
        );
        assert_eq!(a.usage, crate::testing::amounts(&[(0, 1000), (1, 2000)]));
        assert!(a.annotations.is_empty());
        assert_eq!(a.local_queue_usage, Some(0.5));
        assert_eq!((a.requeue_count, a.requeue_reason), (0, None));
        assert_eq!(
            (b.requeue_count, b.requeue_reason),
            (2, Some(RequeueReason::AdmissionCheck))
        );
        assert_eq!(
            (b.cluster_queue, b.kind, b.lca, b.evicting, b.admitted),
            (2, CandidateKind::FairSharing, Some(4), true, 21)
        );
        assert_eq!(b.usage, crate::testing::amounts(&[(0, 3000)]));
        let mut cat = crate::testing::CatalogBuilder::new().build();
        for s in [
            "prod",
            "dev",
            "Job",
            "batch/v1",
            "train",
            "wasq.dev/ckpt",
            "x",
        ] {
            cat.intern(s);
        }
        assert_eq!(
            (a.namespace(&cat), a.job_kind(&cat), a.job_api_version(&cat)),
            ("prod", Some("Job"), Some("batch/v1"))
        );
        assert_eq!(
            (a.job_name(&cat), a.local_queue_id()),
            (Some("train"), Some(3))
        );
        assert_eq!(
            (b.namespace(&cat), b.job_kind(&cat), b.local_queue),
            ("dev", None, None)
        );
        assert_eq!(b.annotation(&cat, "wasq.dev/ckpt"), Some("x"));
        assert!(a.labels.is_empty() && b.labels.is_empty());
        // The table reads the same by index.
        let t = req.to_columns().candidates;
        assert_eq!(
            (t.namespace(&cat, 1), t.job_name(&cat, 0)),
            ("dev", Some("train"))
        );
        assert_eq!(t.annotation(&cat, 1, "wasq.dev/ckpt"), Some("x"));
        assert_eq!(t.annotation(&cat, 0, "wasq.dev/ckpt"), None);
        // And back: the records of the host's form are the records it was made of.
        let again = req.to_columns().to_records();
        assert_eq!(again.candidates, req.candidates);
    }

    /// Records in the host's form (one group per kind, lca and evicting flag; one share per
    /// LocalQueue) read back as the records, request after request with one joiner.
    #[test]
    fn the_host_form_of_records_reads_as_the_records() {
        let mut x: u64 = 3;
        let mut next = |m: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let kinds = [
            CandidateKind::SameQueue,
            CandidateKind::HierarchicalReclaim,
            CandidateKind::ReclaimWhileBorrowing,
            CandidateKind::ReclaimWithoutBorrowing,
            CandidateKind::FairSharing,
        ];
        let mut joiner = Joiner::default();
        for round in 0..100 {
            let lq_usage: Vec<Option<f64>> = (0..4)
                .map(|_| (round % 2 == 0 && next(3) > 0).then(|| next(8) as f64 / 2.0))
                .collect();
            let records: Vec<Candidate> = (0..next(30) as u32)
                .map(|w| {
                    let wl = crate::testing::workload(w, next(3) as u32, 0, next(4) as i64);
                    let mut c = crate::testing::candidate(&wl, next(5) as i64, next(9) as i64);
                    c.usage = crate::testing::amounts(&[(0, next(4) as i64), (1, 7)]);
                    c.kind = kinds[next(5) as usize];
                    c.lca = (next(2) == 0).then(|| next(3) as u32);
                    c.evicting = next(5) == 0;
                    c.local_queue = (next(4) > 0).then(|| next(4) as u32);
                    c.local_queue_usage = c.local_queue.and_then(|lq| lq_usage[lq as usize]);
                    c.namespace = next(3) as u32;
                    c
                })
                .collect();
            let table = records.iter().map(|c| {
                let mut r = row(
                    c.workload,
                    c.cluster_queue,
                    c.local_queue,
                    c.priority,
                    (c.created, c.admitted),
                    (c.requeue_count, c.requeue_reason),
                    &[],
                );
                r.usage = c.usage.clone();
                r.identity = Some(crate::identity::from_parts(c));
                r
            });
            // Rows in reverse, after a few of no candidate.
            let mut rows: Vec<wit::AdmittedRow> = table.rev().collect();
            let skip = next(3) as u32;
            for _ in 0..skip {
                rows.insert(0, row(99, 0, None, 0, (0, 0), (0, None), &[]));
            }
            let n = records.len() as u32;
            let row_of = |i: u32| skip + n - 1 - i;
            let mut groups: Vec<wit::CandidateGroup> = Vec::new();
            for (i, c) in records.iter().enumerate() {
                let at = groups
                    .iter()
                    .position(|g| (g.kind, g.lca, g.evicting) == (c.kind, c.lca, c.evicting));
                match at {
                    Some(g) => groups[g].rows.push(row_of(i as u32)),
                    None => groups.push(group(c.kind, c.evicting, c.lca, &[row_of(i as u32)])),
                }
            }
            let shares = (0..4)
                .filter_map(|lq| {
                    lq_usage[lq].map(|weighted| wit::LocalQueueShare {
                        local_queue: lq as u32,
                        weighted,
                    })
                })
                .collect();
            let mut t = AdmittedTable::default();
            t.add(wit::NewRows { first: 0, rows });
            let candidates: Vec<u32> = (0..n).map(row_of).collect();
            let req = Request::received(
                sent(&candidates, groups, shares),
                &Rc::new(t),
                &mut joiner,
                4,
            );
            assert_eq!(req.to_records().candidates, records, "round {round}");
            joiner.recycle(req.candidates.relations);
        }
    }

    #[test]
    fn a_row_never_sent_and_an_identity_not_sent_read_as_nobody() {
        let mut table = AdmittedTable::default();
        table.add(wit::NewRows {
            first: 0,
            rows: vec![
                row(
                    1,
                    0,
                    Some(1),
                    5,
                    (0, 0),
                    (4, Some(RequeueReason::Preempted)),
                    &[(0, 10), (1, 20)],
                ),
                row(2, 0, None, 0, (0, 0), (0, None), &[]),
            ],
        });
        // Row 9 was never sent: it reads as the empty row. Row 1 is in no group.
        let groups = vec![
            group(CandidateKind::ReclaimWhileBorrowing, true, None, &[0]),
            group(CandidateKind::SameQueue, false, Some(2), &[9]),
        ];
        let t = Request::received(
            sent(&[0, 9, 1], groups, Vec::new()),
            &Rc::new(table),
            &mut Joiner::default(),
            0,
        )
        .candidates;
        assert_eq!(t.len(), 3);
        assert_eq!(t.raw(), [0, 9, 1]);
        assert_eq!(
            (t.kind(2), t.lca(2), t.evicting(2), t.local_queue_usage(2)),
            (CandidateKind::SameQueue, None, false, None)
        );
        assert_eq!(
            (0..2)
                .map(|i| (t.workload(i), t.requeue_count(i), t.requeue_reason(i)))
                .collect::<Vec<_>>(),
            vec![(1, 4, Some(RequeueReason::Preempted)), (0, 0, None)]
        );
        assert_eq!(
            (t.kind(0), t.lca(0), t.lca(1)),
            (CandidateKind::ReclaimWhileBorrowing, None, Some(2))
        );
        assert!(t.evicting(0) && !t.evicting(1));
        let usage = |i| t.usage(i).map(|u| (u.fr, u.amount)).collect::<Vec<_>>();
        assert_eq!((usage(0), usage(1)), (vec![(0, 10), (1, 20)], Vec::new()));
        assert_eq!((t.local_queue_id(0), t.local_queue_id(1)), (Some(1), None));
        assert_eq!((t.candidate(0).priority, t.candidate(1).priority), (5, 0));
        // No identity sent (the plugin did not ask): nobody in particular.
        assert_eq!((t.namespace_id(0), t.owner(0)), (NO_STRING, None));
        assert_eq!(t.labels(0).count() + t.annotations(1).count(), 0);
    }
}
