//! Preemption plugins: implement [`PreemptionPolicy`] and export it with
//! [`export_preemption!`](crate::export_preemption).
//!
//! The host only offers candidates Kueue's rules make eligible and checks every answer: victims
//! must be distinct candidates that make the preemptor fit (use [`QuotaView`](crate::QuotaView)
//! to simulate removals), and `allow_borrowing` must be `false` when a victim is a
//! reclaim-without-borrowing candidate of another ClusterQueue.

use std::rc::Rc;

use crate::admitted::AdmittedTable;
use crate::catalog::Catalog;
use crate::identity::{
    NO_STRING, annotations_at, labels_at, namespace_at, normalize_identities, owner_at,
};
use crate::types::{
    ClusterQueueId, Entry, FrAmount, Identities, LocalQueueId, Millis, Needs, NewStrings, NodeId,
    Owner, RequeueReason, StringId, UsageTable, Workload,
};

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

/// The candidates as the host sends them (`wit/preemption.wit`, `record candidates`): one
/// column per field, no record per candidate, made safe to index when received; what does not
/// depend on the preemptor is read from the candidate's row of the instance's table of
/// admitted workloads (`record new-rows`). Read them through [`CandidateTable`].
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateColumns {
    raw: wit::Candidates,
    /// The instance's table of admitted workloads (as of this call) that `raw.rows` index.
    table: Rc<AdmittedTable>,
    /// Who each candidate is (empty columns when the plugin did not ask: see
    /// [`Needs::IDENTITY`](crate::types::Needs::IDENTITY)).
    ids: Identities,
    /// Per candidate, when any has admission-fair-sharing usage (the host lists those that
    /// do); empty otherwise.
    local_queue_usage: Vec<Option<f64>>,
    /// Whether the rows are in Kueue's candidate order: as the host sends them, or as
    /// [`Request::to_columns`] found them.
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
    /// Whether the instance keeps the usage rows it receives (see `wit/preemption.wit`,
    /// `usage-kept`; the host sends `true`): `usage_nodes` then lists only the nodes of the
    /// preemptor's cohort tree whose usage changed since the instance last received it, and
    /// [`QuotaView::from_request`] reads the others from what the SDK kept. A request built by
    /// hand uses `false` and lists its own rows.
    ///
    /// [`QuotaView::from_request`]: crate::QuotaView::from_request
    pub usage_kept: bool,
    /// The quota-tree nodes whose usage `usage` holds: with `usage_kept`, see there; else the
    /// preemptor's and every candidate's ClusterQueue, and their ancestors. (The host's
    /// `request.usage` as two vectors, empty when it sent `none`.)
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
    /// Whether the rows are known to be in Kueue's candidate order (as the host sends
    /// `request.candidates`), so that [`kueue::candidate_order`](crate::kueue::candidate_order)
    /// need not sort or check them. `false` unless the table says otherwise: records a plugin
    /// builds itself may come in any order.
    fn in_candidate_order(&self) -> bool {
        false
    }
    /// The kind bytes as `record candidates` sends them, by index, when the table holds them
    /// as such a column (the host's [`CandidateColumns`]), so that a pass over every candidate
    /// reads one slice: the low seven bits are the kind (decode with [`KINDS`]; past its end
    /// reads as `same-queue`, as [`CandidateTable::kind`] reads it) and bit 7 ([`EVICTING`])
    /// says the candidate is being evicted. `None` for a table read one candidate at a time
    /// (the default).
    fn kind_columns(&self) -> Option<&[u8]> {
        None
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
    /// Candidate `i`'s row of the table: the empty row's when the table does not hold the
    /// row sent (checked as it is read, not in a pass over every candidate at each call).
    #[inline(always)]
    fn row(&self, i: usize) -> usize {
        self.table.checked(self.raw.rows[i]) as usize
    }
}

impl CandidateTable for CandidateColumns {
    #[inline]
    fn len(&self) -> usize {
        self.raw.rows.len()
    }
    #[inline]
    fn workload(&self, i: usize) -> u32 {
        self.table.workloads[self.row(i)]
    }
    #[inline]
    fn cluster_queue(&self, i: usize) -> ClusterQueueId {
        self.table.cluster_queues[self.row(i)]
    }
    #[inline]
    fn kind(&self, i: usize) -> CandidateKind {
        // An unknown case reads as `same-queue` (checked as it is read).
        KINDS
            .get(usize::from(self.raw.kinds[i] & !EVICTING))
            .copied()
            .unwrap_or(CandidateKind::SameQueue)
    }
    #[inline]
    fn lca(&self, i: usize) -> Option<NodeId> {
        Some(self.raw.lcas[i]).filter(|&n| n != NO_NODE)
    }
    #[inline]
    fn priority(&self, i: usize) -> i64 {
        self.table.priorities[self.row(i)]
    }
    #[inline]
    fn created(&self, i: usize) -> Millis {
        self.table.created[self.row(i)]
    }
    #[inline]
    fn admitted(&self, i: usize) -> Millis {
        self.table.admitted[self.row(i)]
    }
    #[inline]
    fn requeue_count(&self, i: usize) -> u32 {
        self.table.requeue_counts[self.row(i)]
    }
    #[inline]
    fn requeue_reason(&self, i: usize) -> Option<RequeueReason> {
        self.table.requeue_reason(self.row(i) as u32)
    }
    #[inline]
    fn evicting(&self, i: usize) -> bool {
        self.raw.kinds[i] & EVICTING != 0
    }
    #[inline(always)]
    fn usage(&self, i: usize) -> impl Iterator<Item = FrAmount> + '_ {
        self.table.usage(self.row(i) as u32)
    }
    #[inline]
    fn local_queue_usage(&self, i: usize) -> Option<f64> {
        self.local_queue_usage.get(i).copied().flatten()
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
            usage: self.usage(i).collect(),
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
        Some(self.table.local_queues[self.row(i)]).filter(|&l| l != NO_LOCAL_QUEUE)
    }
    fn namespace_id(&self, i: usize) -> StringId {
        namespace_at(&self.ids, i)
    }
    fn owner(&self, i: usize) -> Option<Owner> {
        owner_at(&self.ids, i)
    }
    fn labels(&self, i: usize) -> impl Iterator<Item = Entry> + '_ {
        labels_at(&self.ids, i)
    }
    fn annotations(&self, i: usize) -> impl Iterator<Item = Entry> + '_ {
        annotations_at(&self.ids, i)
    }
    /// The host sends candidates in Kueue's candidate order (`request.candidates`).
    #[inline]
    fn in_candidate_order(&self) -> bool {
        self.in_order
    }
    fn kind_columns(&self) -> Option<&[u8]> {
        Some(&self.raw.kinds)
    }
}

/// `no-local-queue` in `record candidates`' `local-queues`.
pub const NO_LOCAL_QUEUE: LocalQueueId = u32::MAX;

/// `candidate-kind` by case number, as `record candidates` sends kinds (in the low seven bits
/// of a kind byte).
pub const KINDS: [CandidateKind; 5] = [
    CandidateKind::SameQueue,
    CandidateKind::HierarchicalReclaim,
    CandidateKind::ReclaimWithoutBorrowing,
    CandidateKind::ReclaimWhileBorrowing,
    CandidateKind::FairSharing,
];

/// Bit 7 of a kind byte in `record candidates`' `kinds`: the candidate is being evicted.
pub const EVICTING: u8 = 0x80;

/// `no-node` in `record candidates`' `lcas`: no lowest common ancestor.
pub const NO_NODE: NodeId = u32::MAX;

impl CandidateColumns {
    /// The candidates of a request, reading the instance's table of admitted workloads
    /// `table`, made safe to index: a column shorter than `rows` is padded with defaults, a
    /// longer one truncated, a row the table does not hold reads as an empty row (workload 0,
    /// no quota), an unknown kind as `same-queue`, and indices out of range are ignored (the
    /// host never sends such columns; a plugin must not trap if it did).
    pub(crate) fn new(mut c: wit::Candidates, table: Rc<AdmittedTable>) -> CandidateColumns {
        let n = c.rows.len();
        // Rows and kinds are checked as they are read (`row`, `kind`), not here: a pass over
        // every candidate at every call costs more than a bound at each read.
        c.kinds.resize(n, 0);
        c.lcas.resize(n, NO_NODE);
        let ids = normalize_identities(c.identities.take(), n);
        let mut local_queue_usage = Vec::new();
        if let Some(afs) = c.local_queue_usage.as_ref().filter(|a| !a.of.is_empty()) {
            local_queue_usage.resize(n, None);
            for (&i, &u) in afs.of.iter().zip(&afs.usage) {
                if let Some(slot) = local_queue_usage.get_mut(i as usize) {
                    *slot = Some(u);
                }
            }
        }
        CandidateColumns {
            raw: c,
            table,
            ids,
            local_queue_usage,
            in_order: true,
        }
    }
}

impl CandidateColumns {
    /// The columns as the host sent them, with the per-candidate lists padded or truncated to
    /// `rows`; rows, kind bytes and the list by index (`local-queue-usage.of`) are as sent,
    /// out-of-range values included. Decode `kinds` with [`KINDS`] and [`EVICTING`] and `lcas`
    /// with [`NO_NODE`]; [`CandidateTable`] reads a row the table does not hold as the empty
    /// row and a kind past [`KINDS`] as `same-queue`. (The rows themselves are read through
    /// [`CandidateTable`].)
    pub fn raw(&self) -> &wit::Candidates {
        &self.raw
    }
}

impl Request<CandidateColumns> {
    /// A request as the host sent it, its candidates' rows read from `table`.
    pub(crate) fn received(
        r: wit::Request,
        table: &Rc<AdmittedTable>,
    ) -> Request<CandidateColumns> {
        let (usage_nodes, usage) = r
            .usage
            .map_or_else(Default::default, |u| (u.nodes, u.amounts));
        Request {
            preemptor: r.preemptor,
            requests: r.requests,
            needs_preemption: r.needs_preemption,
            candidates: CandidateColumns::new(r.candidates, table.clone()),
            usage_kept: r.usage_kept,
            usage_nodes,
            usage,
            tree_usage: r.tree_usage.unwrap_or_else(|| UsageTable {
                nodes: Vec::new(),
                amounts: Vec::new(),
            }),
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
            usage_nodes: self.usage_nodes.clone(),
            usage: self.usage.clone(),
            tree_usage: self.tree_usage.clone(),
            now: self.now,
        }
    }
}

impl Request {
    /// The same request with the candidates as the host sends them: to test a
    /// [`select_victims_columns`](PreemptionPolicy::select_victims_columns) written over
    /// [`CandidateTable`] on requests built as records.
    pub fn to_columns(&self) -> Request<CandidateColumns> {
        let list = &self.candidates;
        let position = |kind: CandidateKind| KINDS.iter().position(|&k| k == kind).unwrap_or(0);
        // A table of its own: one row per candidate, in order.
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
                    usage_len: c.usage.len() as u32,
                })
                .collect(),
            usage: list.iter().flat_map(|c| c.usage.iter().copied()).collect(),
        });
        let mut c = wit::Candidates {
            rows: (0..list.len() as u32).collect(),
            kinds: list
                .iter()
                .map(|c| (position(c.kind) as u8) | if c.evicting { EVICTING } else { 0 })
                .collect(),
            lcas: list.iter().map(|c| c.lca.unwrap_or(NO_NODE)).collect(),
            identities: Some(Identities {
                namespaces: list.iter().map(|c| c.namespace).collect(),
                job_kinds: list
                    .iter()
                    .map(|c| c.owner.map_or(NO_STRING, |o| o.kind))
                    .collect(),
                job_api_versions: list
                    .iter()
                    .map(|c| c.owner.map_or(NO_STRING, |o| o.api_version))
                    .collect(),
                job_names: list
                    .iter()
                    .map(|c| c.owner.map_or(NO_STRING, |o| o.name))
                    .collect(),
                label_offsets: vec![0],
                label_keys: Vec::new(),
                label_values: Vec::new(),
                annotation_offsets: vec![0],
                annotation_keys: Vec::new(),
                annotation_values: Vec::new(),
            }),
            local_queue_usage: None,
        };
        for (i, cand) in list.iter().enumerate() {
            if let Some(ids) = c.identities.as_mut() {
                ids.label_keys.extend(cand.labels.iter().map(|e| e.key));
                ids.label_values.extend(cand.labels.iter().map(|e| e.value));
                ids.label_offsets.push(ids.label_keys.len() as u32);
                ids.annotation_keys
                    .extend(cand.annotations.iter().map(|e| e.key));
                ids.annotation_values
                    .extend(cand.annotations.iter().map(|e| e.value));
                ids.annotation_offsets
                    .push(ids.annotation_keys.len() as u32);
            }
            if let Some(usage) = cand.local_queue_usage {
                let afs =
                    c.local_queue_usage
                        .get_or_insert_with(|| wit::CandidatesLocalQueueUsage {
                            of: Vec::new(),
                            usage: Vec::new(),
                        });
                afs.of.push(i as u32);
                afs.usage.push(usage);
            }
        }
        let all: Vec<u32> = (0..list.len() as u32).collect();
        let mut candidates = CandidateColumns::new(c, Rc::new(table));
        // Records a test builds may come in any order; only those already in Kueue's order
        // are marked so, as the host's always are.
        candidates.in_order = crate::kueue::candidate_order(self, &all) == all;
        Request {
            preemptor: self.preemptor.clone(),
            requests: self.requests.clone(),
            needs_preemption: self.needs_preemption.clone(),
            candidates,
            usage_kept: self.usage_kept,
            usage_nodes: self.usage_nodes.clone(),
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
    /// job, labels, annotations: [`Identity`](crate::identity::Identity) and
    /// [`CandidateTable`]; without it they read as nobody in particular); `Needs::POD_SETS`
    /// sends what the preemptor requests ([`Workload::pod_sets`]; without it no podSets; what
    /// it needs under the flavors tried is `req.requests` either way). Default:
    /// `Needs::IDENTITY | Needs::POD_SETS` (Kueue's own victim selection,
    /// [`kueue::preemption_needs`], reads neither).
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
}

#[doc(hidden)]
pub mod glue {
    use super::*;
    use crate::export::Plugin;

    ::std::thread_local! {
        /// The instance's table of admitted workloads (`new-rows`), as of the last call.
        static ROWS: ::core::cell::RefCell<Rc<AdmittedTable>> = Default::default();
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
    ) -> Vec<Option<Victims>> {
        let (policy, catalog) = plugin.parts_with(strings);
        let table = ROWS.with_borrow_mut(|t| {
            if let Some(rows) = rows {
                Rc::make_mut(t).add(rows);
            }
            t.clone()
        });
        requests
            .into_iter()
            .map(|r| {
                if let Some(rows) = r.usage.as_ref().filter(|_| r.usage_kept) {
                    // Filed before the plugin looks: the requests after it rely on them.
                    crate::kept::receive(catalog, &rows.nodes, &r.requests, &rows.amounts);
                }
                policy.select_victims_columns(catalog, &Request::received(r, &table))
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
                ) -> ::std::vec::Vec<::core::option::Option<$crate::preemption::Victims>> {
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
        usage_len: u32,
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
            usage_len,
        }
    }

    fn amounts(v: &[(u32, i64)]) -> Vec<FrAmount> {
        crate::testing::amounts(v)
    }

    #[test]
    fn columns_become_one_record_per_candidate() {
        // The instance's table holds three rows; the request names two of them.
        let mut table = AdmittedTable::default();
        table.add(wit::NewRows {
            first: 0,
            rows: vec![
                row(1, 0, None, 0, (0, 0), (0, None), 1),
                row(7, 1, Some(3), -1, (10, 11), (0, None), 2),
                row(
                    9,
                    2,
                    None,
                    3,
                    (20, 21),
                    (2, Some(RequeueReason::AdmissionCheck)),
                    1,
                ),
            ],
            usage: amounts(&[(1, 5), (0, 1000), (1, 2000), (0, 3000)]),
        });
        let columns = wit::Candidates {
            rows: vec![1, 2],
            // The second is being evicted.
            kinds: vec![0, 4 | EVICTING],
            lcas: vec![u32::MAX, 4],
            identities: Some(crate::types::Identities {
                namespaces: vec![0, 1],
                job_kinds: vec![2, NO_STRING],
                job_api_versions: vec![3, NO_STRING],
                job_names: vec![4, NO_STRING],
                label_offsets: Vec::new(),
                label_keys: Vec::new(),
                label_values: Vec::new(),
                annotation_offsets: vec![0, 0, 1],
                annotation_keys: vec![5],
                annotation_values: vec![6],
            }),
            local_queue_usage: Some(wit::CandidatesLocalQueueUsage {
                of: vec![0],
                usage: vec![0.5],
            }),
        };
        let req: Request = Request::received(
            wit::Request {
                preemptor: crate::testing::workload(5, 1, 0, 0),
                requests: Vec::new(),
                needs_preemption: Vec::new(),
                candidates: columns,
                usage_kept: false,
                usage: None,
                tree_usage: None,
                now: 0,
            },
            &Rc::new(table),
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
        assert_eq!(
            b.usage,
            vec![FrAmount {
                fr: 0,
                amount: 3000
            }]
        );
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
        // The table reads the same in place.
        let t = req.to_columns().candidates;
        assert_eq!(
            (t.namespace(&cat, 1), t.job_name(&cat, 0)),
            ("dev", Some("train"))
        );
        assert_eq!(t.annotation(&cat, 1, "wasq.dev/ckpt"), Some("x"));
        assert_eq!(t.annotation(&cat, 0, "wasq.dev/ckpt"), None);
        // And back: the columns of the records are the columns sent.
        let again = req.to_columns().to_records();
        assert_eq!(again.candidates, req.candidates);
    }

    #[test]
    fn malformed_columns_are_made_safe_to_index() {
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
                    2,
                ),
                // Says it holds more quota than the call sent.
                row(2, 0, None, 6, (0, 0), (0, None), 3),
            ],
            usage: amounts(&[(0, 10), (1, 20), (0, 30)]),
        });
        let columns = wit::Candidates {
            // Row 9 was never sent: it reads as the empty row.
            rows: vec![0, 1, 9],
            // The first is being evicted.
            kinds: vec![3 | EVICTING, 9],
            lcas: vec![u32::MAX, 1, 2, 5],
            identities: Some(crate::types::Identities {
                namespaces: Vec::new(),
                job_kinds: vec![1, 2, 3, 4],
                job_api_versions: Vec::new(),
                job_names: Vec::new(),
                // Decreasing and out of range.
                label_offsets: vec![0, 3, 1],
                label_keys: vec![1, 2],
                label_values: vec![3],
                annotation_offsets: Vec::new(),
                annotation_keys: vec![1],
                annotation_values: Vec::new(),
            }),
            local_queue_usage: Some(wit::CandidatesLocalQueueUsage {
                of: vec![2, 5, 1],
                usage: vec![0.25, 1.0],
            }),
        };
        let t = CandidateColumns::new(columns, Rc::new(table));
        assert_eq!(t.len(), 3);
        // As sent, padded to the rows: read through the table, not these.
        assert_eq!(
            (&t.raw().rows[..], &t.raw().kinds[..]),
            (&[0, 1, 9][..], &[3 | EVICTING, 9, 0][..])
        );
        assert_eq!(t.cluster_queue(2), 0);
        assert_eq!(t.kind(0), CandidateKind::ReclaimWhileBorrowing);
        // An unknown kind and a missing one read as same-queue.
        assert_eq!(t.kind(1), CandidateKind::SameQueue);
        assert_eq!(t.kind(2), CandidateKind::SameQueue);
        assert_eq!((t.lca(0), t.lca(1), t.lca(2)), (None, Some(1), Some(2)));
        assert!(t.evicting(0) && !t.evicting(1) && !t.evicting(2));
        // The row never sent reads as an empty row.
        assert_eq!(
            (0..3)
                .map(|i| (t.workload(i), t.requeue_count(i), t.requeue_reason(i)))
                .collect::<Vec<_>>(),
            vec![
                (1, 4, Some(RequeueReason::Preempted)),
                (2, 0, None),
                (0, 0, None)
            ]
        );
        let usage = |i| t.usage(i).map(|u| (u.fr, u.amount)).collect::<Vec<_>>();
        assert_eq!(usage(0), vec![(0, 10), (1, 20)]);
        // Cut to the quota the call sent.
        assert_eq!(usage(1), vec![(0, 30)]);
        assert_eq!(usage(2), Vec::new());
        // Index 5 is out of range; candidate 1's usage has no value to pair with.
        assert_eq!(
            (0..3).map(|i| t.local_queue_usage(i)).collect::<Vec<_>>(),
            vec![None, None, Some(0.25)]
        );
        assert_eq!((t.candidate(1).priority, t.candidate(2).priority), (6, 0));
        // Missing identity columns read as none; entries are cut to what pairs up.
        assert_eq!((t.local_queue_id(0), t.local_queue_id(1)), (Some(1), None));
        assert_eq!(
            (t.namespace_id(2), t.owner(2).map(|o| o.kind)),
            (NO_STRING, Some(3))
        );
        assert_eq!(
            (0..3).map(|i| t.labels(i).count()).collect::<Vec<_>>(),
            vec![1, 0, 0]
        );
        assert!((0..3).all(|i| t.annotations(i).count() == 0));
    }
}
