//! Kueue's admission rules (webhooks in `pkg/webhooks/`, CRD schema and CEL rules in
//! `apis/kueue/v1beta2/`) for ResourceFlavor, Cohort, ClusterQueue, LocalQueue,
//! WorkloadPriorityClass and Namespace; Workload rules are in [`super::validate_workload`].
//!
//! Each function reports every violation with its field path. References to objects that do not
//! exist (flavor, cohort, ClusterQueue) are not errors: in Kueue they make a queue inactive at
//! run time, which the scheduling core models.

use std::collections::{BTreeSet, HashMap};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

pub use super::validate_workload::workload;

use super::Quantity;
use super::names;
use super::strict::{FieldProblem, unknown_value};
use super::types::{
    BorrowWithinCohortPolicy, ClusterQueue, Cohort, FairSharing, FungibilityPolicy, LocalQueue,
    ReclaimWithinCohort, ResourceFlavor, ResourceGroup, WorkloadPriorityClass,
};

const MAX_RESOURCE_GROUPS: usize = 16;
const MAX_COVERED_RESOURCES: usize = 64;
const MAX_FLAVORS_PER_GROUP: usize = 64;
const MAX_FLAVORS_TOTAL: usize = 256;
const MAX_FLAVOR_PROPERTIES: usize = 8;
const MAX_DESCRIPTION: usize = 2048;
pub(crate) const NOT_NEGATIVE: &str = "must be greater than or equal to 0";
const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// Collects problems with their paths.
#[derive(Debug, Default)]
pub(crate) struct Problems(pub Vec<FieldProblem>);

impl Problems {
    pub fn add(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.0.push(FieldProblem::at(field, message));
    }

    /// Reports `check(value)`'s complaint at `field`.
    pub fn check(&mut self, field: &str, value: &str, check: fn(&str) -> Result<(), String>) {
        if let Err(e) = check(value) {
            self.add(field, e);
        }
    }

    pub fn into_vec(self) -> Vec<FieldProblem> {
        self.0
    }
}

/// Which syntax an object's name must follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Cluster-scoped, name a DNS subdomain.
    Cluster,
    /// Namespaced, name a DNS subdomain, namespace required.
    Namespaced,
}

/// `metadata.name` (and `metadata.namespace` for namespaced objects).
pub(crate) fn metadata(p: &mut Problems, meta: &ObjectMeta, scope: Scope) {
    match meta.name.as_deref() {
        None | Some("") => p.add("metadata.name", "required"),
        Some(name) => p.check("metadata.name", name, names::dns_subdomain),
    }
    if scope == Scope::Namespaced {
        match meta.namespace.as_deref() {
            None | Some("") => p.add("metadata.namespace", "required: the object is namespaced"),
            Some(ns) => p.check("metadata.namespace", ns, names::dns_label),
        }
    }
}

pub fn namespace(ns: &Namespace) -> Vec<FieldProblem> {
    let mut p = Problems::default();
    match ns.metadata.name.as_deref() {
        None | Some("") => p.add("metadata.name", "required"),
        Some(name) => p.check("metadata.name", name, names::dns_label),
    }
    p.into_vec()
}

pub fn resource_flavor(rf: &ResourceFlavor) -> Vec<FieldProblem> {
    let mut p = Problems::default();
    metadata(&mut p, &rf.metadata, Scope::Cluster);
    let spec = &rf.spec;
    labels_map(&mut p, "spec.nodeLabels", spec.node_labels.iter());
    if spec.node_labels.len() > MAX_FLAVOR_PROPERTIES {
        p.add(
            "spec.nodeLabels",
            too_many(MAX_FLAVOR_PROPERTIES, "labels", spec.node_labels.len()),
        );
    }
    if spec.node_taints.len() > MAX_FLAVOR_PROPERTIES {
        p.add(
            "spec.nodeTaints",
            too_many(MAX_FLAVOR_PROPERTIES, "taints", spec.node_taints.len()),
        );
    }
    let mut seen = BTreeSet::new();
    for (i, t) in spec.node_taints.iter().enumerate() {
        let path = format!("spec.nodeTaints[{i}]");
        p.check(&format!("{path}.key"), &t.key, names::qualified_name);
        p.check(
            &format!("{path}.value"),
            t.value.as_deref().unwrap_or(""),
            names::label_value,
        );
        if !TAINT_EFFECTS.contains(&t.effect.as_str()) {
            p.add(
                format!("{path}.effect"),
                unknown_value(&t.effect, &TAINT_EFFECTS),
            );
        }
        if !seen.insert((t.key.as_str(), t.effect.as_str())) {
            p.add(path, "taints must be unique by key and effect");
        }
    }
    if spec.tolerations.len() > MAX_FLAVOR_PROPERTIES {
        p.add(
            "spec.tolerations",
            too_many(MAX_FLAVOR_PROPERTIES, "tolerations", spec.tolerations.len()),
        );
    }
    for (i, t) in spec.tolerations.iter().enumerate() {
        let path = format!("spec.tolerations[{i}]");
        let key = t.key.as_deref().unwrap_or("");
        let operator = t.operator.as_deref().unwrap_or("Equal");
        if !key.is_empty() {
            p.check(&format!("{path}.key"), key, names::qualified_name);
        }
        if !matches!(operator, "Equal" | "Exists") {
            p.add(
                format!("{path}.operator"),
                unknown_value(operator, &["Equal", "Exists"]),
            );
        } else if key.is_empty() && operator != "Exists" {
            p.add(
                format!("{path}.operator"),
                "must be Exists when key is empty",
            );
        }
        if operator == "Exists" && t.value.as_deref().is_some_and(|v| !v.is_empty()) {
            p.add(
                format!("{path}.value"),
                "must be empty when operator is Exists",
            );
        }
        let effect = t.effect.as_deref().unwrap_or("");
        if !effect.is_empty() && !TAINT_EFFECTS.contains(&effect) {
            p.add(
                format!("{path}.effect"),
                unknown_value(effect, &TAINT_EFFECTS),
            );
        }
        if t.toleration_seconds.is_some() && effect != "NoExecute" {
            p.add(
                format!("{path}.tolerationSeconds"),
                "may only be set when effect is NoExecute",
            );
        }
    }
    if spec.topology_name.is_some() && spec.node_labels.is_empty() {
        p.add(
            "spec.topologyName",
            "requires at least one entry in spec.nodeLabels",
        );
    }
    p.into_vec()
}

pub fn cluster_queue(cq: &ClusterQueue) -> Vec<FieldProblem> {
    let mut p = Problems::default();
    metadata(&mut p, &cq.metadata, Scope::Cluster);
    let spec = &cq.spec;
    let cohort = spec.cohort_name.as_deref().filter(|c| !c.is_empty());
    if let Some(c) = cohort {
        p.check("spec.cohortName", c, names::dns_subdomain);
    }
    let owner = QuotaOwner::ClusterQueue {
        has_cohort: cohort.is_some(),
    };
    resource_groups(&mut p, &spec.resource_groups, owner);
    if let Some(selector) = &spec.namespace_selector {
        label_selector(&mut p, "spec.namespaceSelector", selector);
    }
    let fungibility = spec.flavor_fungibility.as_ref();
    if fungibility.is_some_and(|f| f.preference.is_some())
        && (spec.when_can_borrow() != FungibilityPolicy::TryNextFlavor
            || spec.when_can_preempt() != FungibilityPolicy::TryNextFlavor)
    {
        p.add(
            "spec.flavorFungibility.preference",
            "may only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
        );
    }
    if spec.reclaim_within_cohort() == ReclaimWithinCohort::Never
        && spec.borrow_within_cohort().policy != BorrowWithinCohortPolicy::Never
    {
        p.add(
            "spec.preemption.borrowWithinCohort.policy",
            "must be Never when reclaimWithinCohort is Never",
        );
    }
    fair_sharing(&mut p, "spec.fairSharing", spec.fair_sharing.as_ref());
    let mut problems = p.into_vec();
    if let Some(s) = &spec.admission_checks_strategy {
        let flavors: Vec<&str> = spec
            .resource_groups
            .iter()
            .flat_map(|g| g.flavors.iter().map(|f| f.name.as_str()))
            .collect();
        problems.extend(super::checks::validate_strategy(
            s,
            "spec.admissionChecksStrategy",
            &flavors,
        ));
    }
    problems
}

pub fn cohort(c: &Cohort) -> Vec<FieldProblem> {
    let mut p = Problems::default();
    metadata(&mut p, &c.metadata, Scope::Cluster);
    let parent = c.spec.parent_name.as_deref().filter(|n| !n.is_empty());
    if let Some(parent) = parent {
        p.check("spec.parentName", parent, names::dns_subdomain);
        if c.metadata.name.as_deref() == Some(parent) {
            p.add("spec.parentName", "a Cohort cannot be its own parent");
        }
    }
    let owner = QuotaOwner::Cohort {
        has_parent: parent.is_some(),
    };
    resource_groups(&mut p, &c.spec.resource_groups, owner);
    fair_sharing(&mut p, "spec.fairSharing", c.spec.fair_sharing.as_ref());
    p.into_vec()
}

pub fn local_queue(lq: &LocalQueue) -> Vec<FieldProblem> {
    let mut p = Problems::default();
    metadata(&mut p, &lq.metadata, Scope::Namespaced);
    match lq.spec.cluster_queue.as_str() {
        "" => p.add("spec.clusterQueue", "required"),
        cq => p.check("spec.clusterQueue", cq, names::dns_subdomain),
    }
    fair_sharing(&mut p, "spec.fairSharing", lq.spec.fair_sharing.as_ref());
    p.into_vec()
}

pub fn priority_class(pc: &WorkloadPriorityClass) -> Vec<FieldProblem> {
    let mut p = Problems::default();
    metadata(&mut p, &pc.metadata, Scope::Cluster);
    if let Some(d) = &pc.description
        && d.len() > MAX_DESCRIPTION
    {
        p.add(
            "description",
            format!(
                "must be at most {MAX_DESCRIPTION} characters, got {}",
                d.len()
            ),
        );
    }
    p.into_vec()
}

/// Who owns resource groups: the limit rules differ.
#[derive(Debug, Clone, Copy)]
enum QuotaOwner {
    ClusterQueue { has_cohort: bool },
    Cohort { has_parent: bool },
}

/// `ValidateResourceGroups` + CRD rules, shared by ClusterQueue and Cohort.
fn resource_groups(p: &mut Problems, groups: &[ResourceGroup], owner: QuotaOwner) {
    let base = "spec.resourceGroups";
    if groups.len() > MAX_RESOURCE_GROUPS {
        p.add(
            base,
            too_many(MAX_RESOURCE_GROUPS, "resource groups", groups.len()),
        );
    }
    let total: usize = groups.iter().map(|g| g.flavors.len()).sum();
    if total > MAX_FLAVORS_TOTAL {
        p.add(
            base,
            too_many(
                MAX_FLAVORS_TOTAL,
                "flavors across all resource groups",
                total,
            ),
        );
    }
    let mut resource_group: HashMap<&str, usize> = HashMap::new();
    let mut flavor_group: HashMap<&str, usize> = HashMap::new();
    for (i, rg) in groups.iter().enumerate() {
        let gp = format!("{base}[{i}]");
        let covered = &rg.covered_resources;
        if covered.is_empty() {
            p.add(
                format!("{gp}.coveredResources"),
                "must list at least 1 resource",
            );
        } else if covered.len() > MAX_COVERED_RESOURCES {
            p.add(
                format!("{gp}.coveredResources"),
                too_many(MAX_COVERED_RESOURCES, "resources", covered.len()),
            );
        }
        for (j, r) in covered.iter().enumerate() {
            let path = format!("{gp}.coveredResources[{j}]");
            p.check(&path, r, names::qualified_name);
            match resource_group.get(r.as_str()) {
                Some(&g) if g == i => p.add(path, format!("duplicate resource {r:?}")),
                Some(&g) => p.add(
                    path,
                    format!("resource {r:?} is already covered by {base}[{g}]"),
                ),
                None => {
                    resource_group.insert(r, i);
                }
            }
        }
        if rg.flavors.is_empty() {
            p.add(format!("{gp}.flavors"), "must list at least 1 flavor");
        } else if rg.flavors.len() > MAX_FLAVORS_PER_GROUP {
            p.add(
                format!("{gp}.flavors"),
                too_many(MAX_FLAVORS_PER_GROUP, "flavors", rg.flavors.len()),
            );
        }
        for (j, f) in rg.flavors.iter().enumerate() {
            let fp = format!("{gp}.flavors[{j}]");
            p.check(&format!("{fp}.name"), &f.name, names::dns_subdomain);
            match flavor_group.get(f.name.as_str()) {
                Some(&g) if g == i => p.add(
                    format!("{fp}.name"),
                    format!("duplicate flavor {:?}", f.name),
                ),
                Some(&g) => p.add(
                    format!("{fp}.name"),
                    format!("flavor {:?} already appears in {base}[{g}]", f.name),
                ),
                None => {
                    flavor_group.insert(&f.name, i);
                }
            }
            flavor_resources(p, &fp, f, covered);
            for (k, rq) in f.resources.iter().enumerate() {
                quota_limits(p, &format!("{fp}.resources[{k}]"), rq, owner);
            }
        }
    }
}

/// A flavor lists exactly the group's covered resources, in the same order.
fn flavor_resources(
    p: &mut Problems,
    fp: &str,
    f: &super::types::FlavorQuotas,
    covered: &[String],
) {
    let listed: Vec<&str> = f.resources.iter().map(|r| r.name.as_str()).collect();
    let before = p.0.len();
    for r in covered {
        if !listed.contains(&r.as_str()) {
            p.add(
                format!("{fp}.resources"),
                format!("flavor {:?} does not list covered resource {r:?}", f.name),
            );
        }
    }
    let mut seen = BTreeSet::new();
    for (k, name) in listed.iter().enumerate() {
        let path = format!("{fp}.resources[{k}].name");
        if !covered.iter().any(|c| c == name) {
            let list = covered
                .iter()
                .map(|c| format!("{c:?}"))
                .collect::<Vec<_>>()
                .join(", ");
            p.add(
                path,
                format!("resource {name:?} is not in the group's coveredResources ({list})"),
            );
        } else if !seen.insert(*name) {
            p.add(path, format!("duplicate resource {name:?}"));
        }
    }
    if p.0.len() == before
        && let Some((k, want)) = covered
            .iter()
            .enumerate()
            .find(|(k, c)| listed.get(*k) != Some(&c.as_str()))
    {
        p.add(
            format!("{fp}.resources[{k}].name"),
            format!("must be {want:?}: list resources in the order of coveredResources"),
        );
    }
}

fn quota_limits(p: &mut Problems, rp: &str, rq: &super::types::ResourceQuota, owner: QuotaOwner) {
    if rq.nominal_quota < Quantity::ZERO {
        p.add(format!("{rp}.nominalQuota"), NOT_NEGATIVE);
    }
    let (has_parent, missing) = match owner {
        QuotaOwner::ClusterQueue { has_cohort } => (has_cohort, "spec.cohortName"),
        QuotaOwner::Cohort { has_parent } => (has_parent, "spec.parentName"),
    };
    for (field, limit) in [
        ("borrowingLimit", rq.borrowing_limit),
        ("lendingLimit", rq.lending_limit),
    ] {
        let Some(limit) = limit else { continue };
        let path = format!("{rp}.{field}");
        if limit < Quantity::ZERO {
            p.add(&path, NOT_NEGATIVE);
        }
        if !has_parent {
            p.add(&path, format!("must not be set when {missing} is empty"));
        }
    }
    // Kueue checks lending ≤ nominal for ClusterQueues only: a Cohort lends its subtree's quota.
    if let (QuotaOwner::ClusterQueue { .. }, Some(lend)) = (owner, rq.lending_limit)
        && lend > rq.nominal_quota
    {
        p.add(
            format!("{rp}.lendingLimit"),
            format!(
                "must be less than or equal to nominalQuota ({})",
                rq.nominal_quota
            ),
        );
    }
}

fn fair_sharing(p: &mut Problems, path: &str, fs: Option<&FairSharing>) {
    if let Some(w) = fs.and_then(|f| f.weight)
        && w < Quantity::ZERO
    {
        p.add(format!("{path}.weight"), NOT_NEGATIVE);
    }
}

/// A LabelSelector Kubernetes would accept.
pub(crate) fn label_selector(p: &mut Problems, path: &str, s: &LabelSelector) {
    labels_map(
        p,
        &format!("{path}.matchLabels"),
        s.match_labels.iter().flatten(),
    );
    for (i, e) in s.match_expressions.iter().flatten().enumerate() {
        let ep = format!("{path}.matchExpressions[{i}]");
        p.check(&format!("{ep}.key"), &e.key, names::qualified_name);
        let values = e.values.as_deref().unwrap_or_default();
        match e.operator.as_str() {
            "In" | "NotIn" if values.is_empty() => p.add(
                format!("{ep}.values"),
                "must be non-empty when operator is In or NotIn",
            ),
            "Exists" | "DoesNotExist" if !values.is_empty() => p.add(
                format!("{ep}.values"),
                "must be empty when operator is Exists or DoesNotExist",
            ),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            op => p.add(
                format!("{ep}.operator"),
                unknown_value(op, &["In", "NotIn", "Exists", "DoesNotExist"]),
            ),
        }
        for (j, v) in values.iter().enumerate() {
            p.check(&format!("{ep}.values[{j}]"), v, names::label_value);
        }
    }
}

fn labels_map<'a>(
    p: &mut Problems,
    path: &str,
    map: impl Iterator<Item = (&'a String, &'a String)>,
) {
    for (k, v) in map {
        p.check(&format!("{path}.{k}"), k, names::qualified_name);
        p.check(&format!("{path}.{k}"), v, names::label_value);
    }
}

pub(crate) fn too_many(max: usize, what: &str, got: usize) -> String {
    format!("must have at most {max} {what}, got {got}")
}
