//! Builds a [`Cluster`] from validated manifests: interns names, assembles the cohort tree,
//! resolves LocalQueues and priorities, computes per-pod requests, and restores admissions that
//! the manifests already carry.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use k8s_openapi::api::core::v1::{PodSpec, ResourceRequirements};
use smallvec::SmallVec;

use super::{
    Admission, Cluster, ClusterQueueInfo, CqId, FlavorInfo, Fungibility, LocalQueueInfo, LqId,
    Millis, NodeConstraints, NodeMeta, PodSetAdmission, PodSetInfo, PreemptionConfig,
    ResourceGroupInfo, StrMap, WorkloadId, WorkloadInfo, checks,
};
use crate::api::{self, Manifests, Quantity, ResourceGroup, StopPolicy, labels};
use crate::quota::{
    FlavorId, FrIdx, Names, NodeId, NodeKind, NodeSpec, QuotaTree, ResourceId, ResourceQuota,
};

/// A manifest set that validates on its own but cannot be assembled into a cluster.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{object}: {message}")]
pub struct BuildError {
    pub object: String,
    pub message: String,
}

/// `fairSharing.weight` in milli-units; Kueue's default weight is 1.
pub fn fair_weight(fs: Option<&api::FairSharing>) -> i64 {
    fs.and_then(|f| f.weight).map_or(1000, |w| w.0)
}

const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Kueue's inactive reasons for a ClusterQueue's admission checks (`updateWithAdmissionChecks`,
/// `inactiveReason`): checks that do not exist, checks that are not active
/// (`references missing AdmissionCheck(s): a,b`), then MultiKueue's constraints among the
/// checks that exist — one MultiKueue check at most, on every flavor of the queue
/// (`all_flavors`), and not with a ProvisioningRequest check.
fn checks_inactive_reason(
    rules: &[checks::CheckRule],
    defs: &BTreeMap<String, checks::CheckDef>,
    all_flavors: &[FlavorId],
) -> Option<String> {
    use crate::api::checks::PROVISIONING_REQUEST_CONTROLLER;
    use crate::api::multikueue::MULTIKUEUE_CONTROLLER;
    let mut missing: Vec<&str> = Vec::new();
    let mut inactive: Vec<&str> = Vec::new();
    let mut multikueue: Vec<&str> = Vec::new();
    let mut per_flavor: Vec<&str> = Vec::new();
    let mut provisioning: Vec<&str> = Vec::new();
    let every_flavor: BTreeSet<FlavorId> = all_flavors.iter().copied().collect();
    for r in rules {
        let Some(d) = defs.get(&r.name) else {
            missing.push(&r.name);
            continue;
        };
        if d.inactive.is_some() {
            inactive.push(&r.name);
        }
        if d.controller == PROVISIONING_REQUEST_CONTROLLER {
            provisioning.push(&r.name);
        }
        if d.controller == MULTIKUEUE_CONTROLLER {
            multikueue.push(&r.name);
            if r.flavors.iter().copied().collect::<BTreeSet<_>>() != every_flavor {
                per_flavor.push(&r.name);
            }
        }
    }
    for list in [
        &mut missing,
        &mut inactive,
        &mut multikueue,
        &mut per_flavor,
        &mut provisioning,
    ] {
        list.sort_unstable();
        list.dedup();
    }
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!(
            "references missing AdmissionCheck(s): {}",
            missing.join(",")
        ));
    }
    if !inactive.is_empty() {
        parts.push(format!(
            "references inactive AdmissionCheck(s): {}",
            inactive.join(",")
        ));
    }
    if multikueue.len() > 1 {
        parts.push(format!(
            "{MULTIPLE_MULTIKUEUE_CHECKS}{}",
            multikueue.join(",")
        ));
    }
    if !per_flavor.is_empty() {
        parts.push(format!(
            "{MULTIKUEUE_CHECK_PER_FLAVOR}{}",
            per_flavor.join(",")
        ));
    }
    if !multikueue.is_empty() && !provisioning.is_empty() {
        parts.push(format!(
            "{MULTIKUEUE_WITH_PROVISIONING}{}, {}",
            multikueue.join(","),
            provisioning.join(",")
        ));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// How Kueue's messages for MultiKueue's ClusterQueue constraints begin
/// (`pkg/cache/scheduler/clusterqueue.go`); [`super::ClusterQueueInfo::inactive_condition`]
/// reads the reason from them.
pub(super) const MULTIPLE_MULTIKUEUE_CHECKS: &str =
    "Cannot use multiple MultiKueue AdmissionChecks on the same ClusterQueue, found: ";
pub(super) const MULTIKUEUE_CHECK_PER_FLAVOR: &str =
    "Cannot specify MultiKueue AdmissionCheck per flavor, found: ";
pub(super) const MULTIKUEUE_WITH_PROVISIONING: &str =
    "Cannot use both MultiKueue and ProvisioningRequest AdmissionChecks together, found: ";

/// Assembles the cluster. `default_created` supplies the queue-order timestamp of workloads
/// without `metadata.creationTimestamp`; `now` stamps admissions without a reservation time.
pub fn build_cluster(
    m: &Manifests,
    default_created: &dyn Fn(&api::Workload) -> Millis,
    now: Millis,
) -> Result<Cluster, Vec<BuildError>> {
    build_cluster_with(m, std::iter::empty(), default_created, now)
}

/// [`build_cluster`] with more workloads made one at a time by `extra` (in namespace/name
/// order, none carrying an admission), each dropped once taken in, so that a generated shape
/// never holds all its `Workload` objects at once. A name taken twice is an error.
pub fn build_cluster_with(
    m: &Manifests,
    extra: impl Iterator<Item = api::Workload>,
    default_created: &dyn Fn(&api::Workload) -> Millis,
    now: Millis,
) -> Result<Cluster, Vec<BuildError>> {
    let mut errors = Vec::new();
    let mut names = Names::default();

    let mut flavors = HashMap::new();
    for rf in &m.flavors {
        let name = rf.metadata.name.clone().unwrap_or_default();
        let id = names.flavor(&name);
        flavors.insert(
            id,
            FlavorInfo {
                id,
                name,
                node_labels: rf.spec.node_labels.clone(),
                node_taints: rf.spec.node_taints.clone(),
                tolerations: rf.spec.tolerations.clone(),
                annotations: rf.metadata.annotations.clone().unwrap_or_default(),
                topology_name: rf.spec.topology_name.clone(),
            },
        );
    }

    let check_defs: BTreeMap<String, checks::CheckDef> = m
        .admission_checks
        .iter()
        .map(|ac| {
            let def = checks::CheckDef::of(ac, checks::CheckParameters::of(m));
            (def.name.clone(), def)
        })
        .collect();

    // ---- cohort nodes: explicit objects plus implicit ones named by a queue or a child cohort.
    let mut cohort_parent: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut cohort_groups: HashMap<String, &[ResourceGroup]> = HashMap::new();
    let mut cohort_meta: HashMap<String, NodeMeta> = HashMap::new();
    for c in &m.cohorts {
        let name = c.metadata.name.clone().unwrap_or_default();
        cohort_parent.insert(name.clone(), c.spec.parent_name.clone());
        cohort_meta.insert(
            name.clone(),
            NodeMeta {
                annotations: c.metadata.annotations.clone().unwrap_or_default(),
                fair_weight: fair_weight(c.spec.fair_sharing.as_ref()),
                in_cycle: false,
            },
        );
        cohort_groups.insert(name, &c.spec.resource_groups);
    }
    let mut implicit: Vec<String> = m
        .cluster_queues
        .iter()
        .filter_map(|cq| cq.spec.cohort_name.clone())
        .chain(cohort_parent.values().flatten().cloned())
        .collect();
    implicit.sort();
    for name in implicit {
        cohort_parent.entry(name).or_insert(None);
    }
    let cyclic = cyclic_cohorts(&cohort_parent);
    let cohort_names: Vec<String> = cohort_parent.keys().cloned().collect();
    let cohort_ids: HashMap<String, NodeId> = cohort_names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), NodeId(i as u32)))
        .collect();

    let mut specs = Vec::new();
    let mut node_meta = Vec::new();
    for name in &cohort_names {
        let mut meta = cohort_meta.remove(name).unwrap_or_else(|| NodeMeta {
            annotations: BTreeMap::new(),
            fair_weight: fair_weight(None),
            in_cycle: false,
        });
        meta.in_cycle = cyclic.contains(name);
        node_meta.push(meta);
        let parent = if cyclic.contains(name) {
            None
        } else {
            cohort_parent[name].as_ref().map(|p| cohort_ids[p])
        };
        let groups = cohort_groups.get(name).copied().unwrap_or_default();
        specs.push(NodeSpec {
            name: name.clone(),
            kind: NodeKind::Cohort,
            parent,
            quotas: quotas_of(groups, &mut names),
        });
    }

    // ---- ClusterQueues.
    let mut cluster_queues = Vec::new();
    let mut cq_by_name = HashMap::new();
    for (i, cq) in m.cluster_queues.iter().enumerate() {
        let name = cq.metadata.name.clone().unwrap_or_default();
        let id = CqId(i as u32);
        let node = NodeId((cohort_names.len() + i) as u32);
        let spec = &cq.spec;
        let cohort = spec.cohort_name.clone();
        let mut inactive_reason = None;
        let mut missing_flavors: Vec<&str> = Vec::new();
        let mut resource_groups = SmallVec::new();
        for g in &spec.resource_groups {
            let covered: SmallVec<[ResourceId; 4]> = g
                .covered_resources
                .iter()
                .map(|r| names.resource(r))
                .collect();
            let group_flavors = g.flavors.iter().map(|f| names.flavor(&f.name)).collect();
            for f in &g.flavors {
                if !flavors.contains_key(&names.flavor(&f.name)) {
                    missing_flavors.push(f.name.as_str());
                }
            }
            resource_groups.push(ResourceGroupInfo {
                covered,
                flavors: group_flavors,
            });
        }
        if !missing_flavors.is_empty() {
            // Kueue's message (its cache's `inactiveReason`).
            inactive_reason = Some(format!(
                "references missing ResourceFlavor(s): {}",
                missing_flavors.join(",")
            ));
        }
        if let Some(c) = &cohort
            && cyclic.contains(c)
        {
            inactive_reason = Some(format!("cohort {c} is part of a cycle"));
        }
        let stop_policy = spec.stop_policy();
        if stop_policy != StopPolicy::None {
            inactive_reason = Some(format!("ClusterQueue is stopped ({stop_policy:?})"));
        }
        let all_flavors: Vec<FlavorId> = resource_groups
            .iter()
            .flat_map(|g: &ResourceGroupInfo| g.flavors.iter().copied())
            .collect();
        let admission_checks: Vec<checks::CheckRule> = spec
            .admission_checks_strategy
            .iter()
            .flat_map(|s| &s.admission_checks)
            .map(|r| checks::CheckRule {
                name: r.name.clone(),
                flavors: if r.on_flavors.is_empty() {
                    all_flavors.clone()
                } else {
                    r.on_flavors.iter().map(|f| names.flavor(f)).collect()
                },
            })
            .collect();
        if inactive_reason.is_none() {
            inactive_reason = checks_inactive_reason(&admission_checks, &check_defs, &all_flavors);
        }
        // Kueue skips the TAS check of a ClusterQueue with a MultiKueue check: topology is
        // the workers' business.
        let multikueue = admission_checks.iter().any(|r| {
            check_defs
                .get(&r.name)
                .is_some_and(|d| d.controller == crate::api::multikueue::MULTIKUEUE_CONTROLLER)
        });
        if inactive_reason.is_none() && !multikueue {
            inactive_reason = crate::topology::missing_topologies(m, &all_flavors, &names);
        }
        let quotas = quotas_of(&spec.resource_groups, &mut names);
        let frs = quotas.iter().map(|&(fr, _)| fr).collect();
        node_meta.push(NodeMeta {
            annotations: cq.metadata.annotations.clone().unwrap_or_default(),
            fair_weight: fair_weight(spec.fair_sharing.as_ref()),
            in_cycle: false,
        });
        specs.push(NodeSpec {
            name: name.clone(),
            kind: NodeKind::ClusterQueue,
            parent: cohort.as_ref().map(|c| cohort_ids[c]),
            quotas,
        });
        let bwc = spec.borrow_within_cohort();
        let annotations = cq.metadata.annotations.clone().unwrap_or_default();
        // The simulator refuses such values at load (`sim::scenario`); the controller warns.
        let (budget, problems) = super::PreemptionBudget::from_annotations(&annotations);
        for problem in problems {
            tracing::warn!(cluster_queue = %name, "{problem}; the value is ignored");
        }
        cluster_queues.push(ClusterQueueInfo {
            id,
            name: name.clone(),
            node,
            cohort,
            resource_groups,
            strategy: spec.queueing_strategy(),
            namespace_selector: spec.namespace_selector.clone(),
            preemption: PreemptionConfig {
                within_cluster_queue: spec.within_cluster_queue(),
                reclaim_within_cohort: spec.reclaim_within_cohort(),
                borrow_within_cohort: bwc.policy,
                max_priority_threshold: bwc.max_priority_threshold,
            },
            fungibility: Fungibility {
                when_can_borrow: spec.when_can_borrow(),
                when_can_preempt: spec.when_can_preempt(),
                preference: spec.fungibility_preference(),
            },
            stop_policy,
            inactive_reason,
            annotations,
            labels: cq.metadata.labels.clone().unwrap_or_default(),
            frs,
            budget_annotations: budget,
            budget,
            admission_checks,
            admission_fair_sharing: m
                .configuration
                .as_ref()
                .is_some_and(|c| c.admission_fair_sharing.is_some())
                && spec.admission_scope.as_ref().is_some_and(|s| {
                    s.admission_mode == crate::api::AdmissionMode::UsageBasedAdmissionFairSharing
                }),
        });
        cq_by_name.insert(name, id);
    }
    let tree = QuotaTree::build(specs, names.n_fr());
    let usage = tree.new_usage();

    // ---- namespaces, LocalQueues, priority classes.
    let mut namespace_labels: HashMap<String, BTreeMap<String, String>> = HashMap::new();
    for ns in &m.namespaces {
        let name = ns.metadata.name.clone().unwrap_or_default();
        let mut labels = ns.metadata.labels.clone().unwrap_or_default();
        labels.insert(NAMESPACE_NAME_LABEL.into(), name.clone());
        namespace_labels.insert(name, labels);
    }
    let mut local_queues: Vec<LocalQueueInfo> = m
        .local_queues
        .iter()
        .map(|lq| LocalQueueInfo {
            namespace: lq.metadata.namespace.clone().unwrap_or_default(),
            name: lq.metadata.name.clone().unwrap_or_default(),
            cluster_queue: cq_by_name.get(&lq.spec.cluster_queue).copied(),
            cluster_queue_name: lq.spec.cluster_queue.clone(),
            fair_weight: fair_weight(lq.spec.fair_sharing.as_ref()),
        })
        .collect();
    local_queues.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    let lq_ids: HashMap<(String, String), LqId> = local_queues
        .iter()
        .enumerate()
        .map(|(i, lq)| ((lq.namespace.clone(), lq.name.clone()), LqId(i as u32)))
        .collect();
    let lq_target: HashMap<(String, String), String> = m
        .local_queues
        .iter()
        .map(|lq| {
            (
                (
                    lq.metadata.namespace.clone().unwrap_or_default(),
                    lq.metadata.name.clone().unwrap_or_default(),
                ),
                lq.spec.cluster_queue.clone(),
            )
        })
        .collect();
    let priority_classes: HashMap<String, i32> = m
        .priority_classes
        .iter()
        .map(|pc| (pc.metadata.name.clone().unwrap_or_default(), pc.value))
        .collect();

    let n_cq = cluster_queues.len();
    let settings = super::SchedulingSettings::from_configuration(m.configuration.as_ref(), &names);
    let mut node_cq = vec![None; tree.len()];
    for cq in &cluster_queues {
        node_cq[cq.node.index()] = Some(cq.id);
    }
    let tas = crate::topology::Topologies::build(m, |f| names.find_flavor(f));
    let mut cluster = Cluster {
        tas,
        names,
        tree,
        usage,
        flavors,
        cluster_queues,
        cq_by_name,
        node_meta,
        node_cq,
        local_queues,
        config_id: super::next_config_id(),
        cycle: 0,
        settings,
        admission_checks: check_defs,
        lq_usage: Default::default(),
        namespace_labels,
        lookup: super::WorkloadLookup {
            lq_ids,
            lq_target,
            priority_classes,
        },
        holdings: Vec::new(),
        workloads: Vec::new(),
        by_key: Default::default(),
        admitted: vec![Default::default(); n_cq],
        bodies: vec![Default::default(); n_cq],
        removed: 0,
    };

    // ---- workloads, in namespace/name order so that ids are a stable tie-break.
    let mut sorted: Vec<&api::Workload> = m.workloads.iter().collect();
    sorted.sort_by(|a, b| {
        (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name))
    });
    let expected = sorted.len() + extra.size_hint().0;
    cluster.reserve_workloads(expected);
    let key = |wl: &api::Workload| {
        (
            wl.metadata.namespace.clone().unwrap_or_default(),
            wl.metadata.name.clone().unwrap_or_default(),
        )
    };
    let mut own = sorted.iter().copied().peekable();
    let mut extra = extra.peekable();
    loop {
        let take_own = match (own.peek(), extra.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(a), Some(b)) => {
                (&a.metadata.namespace, &a.metadata.name)
                    <= (&b.metadata.namespace, &b.metadata.name)
            }
        };
        let made;
        let wl = if take_own {
            own.next().expect("peeked")
        } else {
            made = extra.next().expect("peeked");
            &made
        };
        let info = cluster.workload_info(wl, default_created(wl));
        if !take_own && cluster.find_workload(&info.key).is_some() {
            let (ns, name) = key(wl);
            errors.push(BuildError {
                object: format!("Workload {ns}/{name}"),
                message: "defined twice (by the manifests or a generator)".into(),
            });
            continue;
        }
        cluster.add_workload(info);
    }
    // Resources only workloads request are interned now: resolve the settings' resource names.
    cluster.settings =
        super::SchedulingSettings::from_configuration(m.configuration.as_ref(), &cluster.names);

    // ---- admissions the manifests already carry.
    for wl in sorted {
        let Some(status) = &wl.status else { continue };
        let Some(admission) = &status.admission else {
            continue;
        };
        let key = format!(
            "{}/{}",
            wl.metadata.namespace.as_deref().unwrap_or("default"),
            wl.metadata.name.as_deref().unwrap_or_default()
        );
        let id = cluster.find_workload(&key).expect("registered above");
        let reserved_at = status
            .condition("QuotaReserved")
            .filter(|c| c.status == "True")
            .and_then(|c| c.last_transition_time.as_ref())
            .map(|t| t.0.as_millisecond())
            .unwrap_or(now);
        match restore_admission(&mut cluster, id, admission) {
            Ok(a) => {
                if let Err(e) = cluster.reserve(id, a, reserved_at) {
                    errors.push(BuildError {
                        object: format!("Workload {key}"),
                        message: e.to_string(),
                    });
                }
            }
            Err(message) => errors.push(BuildError {
                object: format!("Workload {key}"),
                message,
            }),
        }
    }
    if errors.is_empty() {
        Ok(cluster)
    } else {
        Err(errors)
    }
}

/// The job that owns a Workload: its controller ownerReference (Kueue's
/// `metav1.GetControllerOf`); `None` for a Workload created by hand.
fn job_owner(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<Box<super::JobOwner>> {
    let owner = meta
        .owner_references
        .as_ref()?
        .iter()
        .find(|o| o.controller == Some(true))?;
    Some(Box::new(super::JobOwner {
        kind: owner.kind.clone(),
        api_version: owner.api_version.clone(),
        name: owner.name.clone(),
    }))
}

fn quotas_of(groups: &[ResourceGroup], names: &mut Names) -> Vec<(FrIdx, ResourceQuota)> {
    let mut out = Vec::new();
    for g in groups {
        for f in &g.flavors {
            let flavor = names.flavor(&f.name);
            for r in &f.resources {
                let resource = names.resource(&r.name);
                out.push((
                    names.fr(flavor, resource),
                    ResourceQuota {
                        nominal: r.nominal_quota.milli(),
                        borrowing_limit: r.borrowing_limit.map(Quantity::milli),
                        lending_limit: r.lending_limit.map(Quantity::milli),
                    },
                ));
            }
        }
    }
    out
}

/// Cohorts on a parent cycle: Kueue disables the whole tree.
fn cyclic_cohorts(parents: &BTreeMap<String, Option<String>>) -> BTreeSet<String> {
    let mut cyclic = BTreeSet::new();
    for start in parents.keys() {
        let mut seen = BTreeSet::new();
        let mut cur = Some(start.clone());
        while let Some(c) = cur {
            if !seen.insert(c.clone()) {
                cyclic.extend(seen);
                break;
            }
            cur = parents.get(&c).cloned().flatten();
        }
    }
    // Everything below a cyclic cohort is disabled too.
    let mut changed = true;
    while changed {
        changed = false;
        for (c, p) in parents {
            if let Some(p) = p
                && cyclic.contains(p)
                && cyclic.insert(c.clone())
            {
                changed = true;
            }
        }
    }
    cyclic
}

/// Per-pod requests as Kueue computes them: requests (limits standing in for missing ones),
/// summed over containers, the max with each init container, plus pod overhead. A zero request
/// stays: a resource the ClusterQueue covers gets a flavor for it, as in Kueue (one it does not
/// cover is skipped by the flavor assignment).
pub fn pod_requests(spec: &PodSpec) -> BTreeMap<String, i64> {
    fn container_requests(r: Option<&ResourceRequirements>) -> BTreeMap<String, i64> {
        let mut out = BTreeMap::new();
        if let Some(r) = r {
            for (k, v) in r.limits.iter().flatten() {
                if let Ok(q) = v.0.parse::<Quantity>() {
                    out.insert(k.clone(), q.milli());
                }
            }
            for (k, v) in r.requests.iter().flatten() {
                if let Ok(q) = v.0.parse::<Quantity>() {
                    out.insert(k.clone(), q.milli());
                }
            }
        }
        out
    }
    let mut total: BTreeMap<String, i64> = BTreeMap::new();
    for c in &spec.containers {
        for (k, v) in container_requests(c.resources.as_ref()) {
            *total.entry(k).or_default() += v;
        }
    }
    for c in spec.init_containers.iter().flatten() {
        for (k, v) in container_requests(c.resources.as_ref()) {
            let e = total.entry(k).or_default();
            *e = (*e).max(v);
        }
    }
    for (k, v) in spec.overhead.iter().flatten() {
        if let Ok(q) = v.0.parse::<Quantity>() {
            *total.entry(k.clone()).or_default() += q.milli();
        }
    }
    total
}

fn pod_set_info(ps: &api::PodSet, names: &mut Names) -> PodSetInfo {
    // Read in place: a pod template's spec is large, and every workload has one per podSet.
    let empty;
    let spec = match &ps.template.spec {
        Some(spec) => spec,
        None => {
            empty = PodSpec::default();
            &empty
        }
    };
    let mut requests: SmallVec<[(ResourceId, i64); 2]> = pod_requests(spec)
        .into_iter()
        .map(|(k, v)| (names.resource(&k), v))
        .collect();
    requests.sort();
    let affinity_terms = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|s| s.node_selector_terms.clone())
        .unwrap_or_default();
    PodSetInfo {
        name: names.pod_set_name(&ps.name),
        count: ps.count,
        min_count: ps.min_count,
        requests,
        constraints: NodeConstraints::boxed(
            spec.tolerations.clone().unwrap_or_default(),
            spec.node_selector.clone().unwrap_or_default(),
            affinity_terms,
        ),
        topology: ps.topology_request.clone().map(Box::new),
    }
}

pub(super) fn restore_admission(
    cluster: &mut Cluster,
    id: WorkloadId,
    admission: &api::Admission,
) -> Result<Admission, String> {
    let cq = *cluster
        .cq_by_name
        .get(&admission.cluster_queue)
        .ok_or_else(|| {
            format!(
                "status.admission.clusterQueue: ClusterQueue {} doesn't exist",
                admission.cluster_queue
            )
        })?;
    let mut pod_sets: SmallVec<[PodSetAdmission; 1]> = SmallVec::new();
    let mut usage: BTreeMap<FrIdx, i64> = BTreeMap::new();
    for (i, psa) in admission.pod_set_assignments.iter().enumerate() {
        let wl = &cluster.workloads[id.index()];
        let ps = wl
            .pod_sets
            .iter()
            .find(|p| *p.name == *psa.name)
            .ok_or_else(|| {
                format!(
                    "status.admission.podSetAssignments[{i}].name: no podSet {:?}",
                    psa.name
                )
            })?
            .clone();
        let count = psa.count.unwrap_or(ps.count);
        let mut flavors = SmallVec::new();
        for (res, flavor) in &psa.flavors {
            let r = cluster.names.resource(res);
            let f = cluster.names.flavor(flavor);
            flavors.push((r, f));
            let fr = cluster.names.find_fr(f, r).ok_or_else(|| {
                format!(
                    "status.admission.podSetAssignments[{i}].flavors.{res}: ClusterQueue {} has no quota for flavor {flavor}",
                    admission.cluster_queue
                )
            })?;
            let amount = match psa.resource_usage.get(res) {
                Some(q) => q.milli(),
                None => ps
                    .requests
                    .iter()
                    .find(|(pr, _)| *pr == r)
                    .map(|&(_, v)| v.saturating_mul(i64::from(count)))
                    .unwrap_or(0),
            };
            *usage.entry(fr).or_default() += amount;
        }
        flavors.sort();
        let requests: Vec<(&str, i64)> = ps
            .requests
            .iter()
            .map(|&(r, v)| (cluster.names.resource_name(r), v))
            .collect();
        let topology = psa.topology_assignment.as_ref().and_then(|ta| {
            flavors
                .iter()
                .find_map(|&(_, f)| cluster.tas.restore(f, &requests, ta))
        });
        pod_sets.push(PodSetAdmission {
            name: ps.name.clone(),
            count,
            flavors,
            topology,
        });
    }
    Ok(Admission {
        cluster_queue: cq,
        pod_sets,
        usage: usage.into_iter().collect(),
    })
}

impl Cluster {
    /// The core's view of one Workload (validated and defaulted): its LocalQueue and
    /// ClusterQueue resolved, its priority, per-pod requests. The same for the initial build
    /// and for a Workload that arrives later (the controller's incremental path). Interns the
    /// resources it requests and registers its namespace if unknown.
    pub fn workload_info(&mut self, wl: &api::Workload, default_created: Millis) -> WorkloadInfo {
        let namespace = wl
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        self.namespace_labels
            .entry(namespace.clone())
            .or_insert_with(|| BTreeMap::from([(NAMESPACE_NAME_LABEL.into(), namespace.clone())]));
        let name = wl.metadata.name.clone().unwrap_or_default();
        let key = format!("{namespace}/{name}");
        let local_queue = wl.spec.queue_name.clone();
        let lq_key = local_queue
            .as_ref()
            .map(|lq| (namespace.clone(), lq.clone()));
        let lq = lq_key
            .as_ref()
            .and_then(|k| self.lookup.lq_ids.get(k))
            .copied();
        let (cluster_queue, unqueueable) = match (&local_queue, &lq_key) {
            (Some(lq), Some(k)) => match self.lookup.lq_target.get(k) {
                None => (None, Some(format!("LocalQueue {lq} doesn't exist").into())),
                Some(cq) => match self.cq_by_name.get(cq) {
                    None => (
                        None,
                        Some(format!("ClusterQueue {cq} doesn't exist").into()),
                    ),
                    Some(&id) => (Some(id), None),
                },
            },
            _ => (None, Some("the workload names no LocalQueue".into())),
        };
        let priority_class: Option<Box<str>> = wl
            .spec
            .priority_class_ref
            .as_ref()
            .map(|r| r.name.as_str().into());
        let priority = wl
            .spec
            .priority
            .or_else(|| {
                priority_class
                    .as_ref()
                    .and_then(|c| self.lookup.priority_classes.get(&**c).copied())
            })
            .unwrap_or(0);
        let annotations = wl
            .metadata
            .annotations
            .as_ref()
            .map(StrMap::from)
            .unwrap_or_default();
        let priority_boost = annotations
            .get(labels::PRIORITY_BOOST)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        let created = wl
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.as_millisecond())
            .unwrap_or(default_created);
        let pod_sets = wl
            .spec
            .pod_sets
            .iter()
            .map(|ps| pod_set_info(ps, &mut self.names))
            .collect();
        WorkloadInfo {
            id: WorkloadId(u32::MAX),
            namespace,
            name,
            key,
            local_queue,
            lq,
            cluster_queue,
            unqueueable,
            priority,
            priority_class,
            priority_boost,
            created,
            queued: created,
            pod_sets,
            annotations,
            labels: wl
                .metadata
                .labels
                .as_ref()
                .map(StrMap::from)
                .unwrap_or_default(),
            owner: job_owner(&wl.metadata),
            active: wl.spec.active(),
            // Decided by `add_workload`, against the namespace's labels.
            namespace_matches: false,
            requeue_count: 0,
            requeue_reason: None,
        }
    }

    /// The core's admission for a Workload's `status.admission` (a restart, or an admission
    /// written by someone else): flavors and counts as recorded, usage from
    /// `resourceUsage` or the podSets' requests.
    pub fn admission_of(
        &mut self,
        id: WorkloadId,
        admission: &api::Admission,
    ) -> Result<Admission, String> {
        restore_admission(self, id, admission)
    }
}
