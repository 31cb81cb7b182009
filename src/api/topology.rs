//! Topology-aware scheduling's API as Kueue writes it: the `Topology` kind, a podSet's
//! `topologyRequest` (from the v1beta2 Workload field or from the pod-template annotations users
//! put on jobs) and an admission's `topologyAssignment` in Kueue's v1beta2 compact form.
//!
//! Validation follows Kueue's CRD rules (`Topology.spec.levels`), the Workload webhook
//! (`validateTASSliceSize`) and the job webhook (`ValidateTASPodSetRequest`), with Kueue's words.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::names;
use super::strict::FieldProblem;
use super::validate::{Problems, Scope, metadata, too_many};

/// The label of the lowest level when a topology reaches single nodes.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

pub const REQUIRED_TOPOLOGY: &str = "kueue.x-k8s.io/podset-required-topology";
pub const PREFERRED_TOPOLOGY: &str = "kueue.x-k8s.io/podset-preferred-topology";
pub const UNCONSTRAINED_TOPOLOGY: &str = "kueue.x-k8s.io/podset-unconstrained-topology";
pub const SLICE_REQUIRED_TOPOLOGY: &str = "kueue.x-k8s.io/podset-slice-required-topology";
pub const SLICE_SIZE: &str = "kueue.x-k8s.io/podset-slice-size";
pub const POD_SET_GROUP_NAME: &str = "kueue.x-k8s.io/podset-group-name";
pub const SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS: &str =
    "kueue.x-k8s.io/podset-slice-required-topology-constraints";
/// The scheduling gate holding a TAS pod until its domain is chosen (Kueue's
/// `TopologySchedulingGate`).
pub const TOPOLOGY_SCHEDULING_GATE: &str = "kueue.x-k8s.io/topology";
/// The annotation naming a TAS pod's Workload (Kueue's `WorkloadAnnotation`).
pub const WORKLOAD_ANNOTATION: &str = "kueue.x-k8s.io/workload";

/// Kueue's `IsTAS` for a pod: its annotations ask for a topology (explicit), or admission
/// marked it unconstrained (implicit TAS).
pub fn is_tas_pod(annotations: &std::collections::BTreeMap<String, String>) -> bool {
    [
        PREFERRED_TOPOLOGY,
        REQUIRED_TOPOLOGY,
        SLICE_REQUIRED_TOPOLOGY,
        SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS,
        UNCONSTRAINED_TOPOLOGY,
    ]
    .iter()
    .any(|k| annotations.contains_key(*k))
}

const MAX_LEVELS: usize = 16;

// ---------------------------------------------------------------------------------------------
// Topology

/// Kueue's `Topology`: the node labels of each level, highest first (e.g. block, rack,
/// hostname).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Topology {
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: TopologySpec,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TopologySpec {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<TopologyLevel>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TopologyLevel {
    #[serde(default)]
    pub node_label: String,
}

impl Topology {
    /// The level labels, highest first.
    pub fn level_keys(&self) -> Vec<String> {
        self.spec
            .levels
            .iter()
            .map(|l| l.node_label.clone())
            .collect()
    }
}

/// Kueue's rules for a Topology (CRD schema and CEL).
pub fn validate_topology(t: &Topology) -> Vec<FieldProblem> {
    let mut p = Problems::default();
    metadata(&mut p, &t.metadata, Scope::Cluster);
    let levels = &t.spec.levels;
    if levels.is_empty() {
        p.add("spec.levels", "must have at least 1 item");
    } else if levels.len() > MAX_LEVELS {
        p.add("spec.levels", too_many(MAX_LEVELS, "levels", levels.len()));
    }
    let mut seen = BTreeSet::new();
    for (i, l) in levels.iter().enumerate() {
        p.check(
            &format!("spec.levels[{i}].nodeLabel"),
            &l.node_label,
            names::qualified_name,
        );
        if !seen.insert(l.node_label.as_str()) {
            p.add("spec.levels", "must be unique");
        }
    }
    let hostname_at = levels.iter().position(|l| l.node_label == HOSTNAME_LABEL);
    if hostname_at.is_some_and(|i| i + 1 != levels.len()) {
        p.add(
            "spec.levels",
            "the kubernetes.io/hostname label can only be used at the lowest level of topology",
        );
    }
    p.into_vec()
}

/// A topology-aware scheduling object read from the manifests.
#[derive(Debug, Clone)]
pub enum TasObject {
    Topology(Box<Topology>),
    Node(Box<Node>),
}

/// Types a `Topology` or `v1` `Node` the decoder passed on (`decode::is_tas_object`); a
/// cluster-scoped object loses any namespace, as the API server drops it.
pub fn typed_tas_object(e: &super::Extension) -> Result<TasObject, Vec<FieldProblem>> {
    let mut object = match e.kind.as_str() {
        "Topology" => TasObject::Topology(Box::new(super::strict::decode(&e.value)?)),
        "Node" => TasObject::Node(Box::new(super::strict::decode(&e.value)?)),
        other => {
            return Err(vec![FieldProblem::at(
                "kind",
                format!("unsupported kind {other:?}"),
            )]);
        }
    };
    match &mut object {
        TasObject::Topology(t) => t.metadata.namespace = None,
        TasObject::Node(n) => n.metadata.namespace = None,
    }
    Ok(object)
}

/// A Node needs a name and readable, non-negative `status.allocatable` quantities; its labels
/// and taints are read as Kubernetes has them.
pub fn validate_node(n: &Node) -> Vec<FieldProblem> {
    let mut p = Problems::default();
    metadata(&mut p, &n.metadata, Scope::Cluster);
    let allocatable = n.status.as_ref().and_then(|s| s.allocatable.as_ref());
    for (r, q) in allocatable.into_iter().flatten() {
        match q.0.parse::<super::Quantity>() {
            Ok(q) if q.milli() < 0 => p.add(
                format!("status.allocatable.{r}"),
                super::validate::NOT_NEGATIVE,
            ),
            Ok(_) => {}
            Err(e) => p.add(format!("status.allocatable.{r}"), e.to_string()),
        }
    }
    p.into_vec()
}

// ---------------------------------------------------------------------------------------------
// PodSetTopologyRequest

/// Kueue's `PodSetTopologyRequest`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodSetTopologyRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unconstrained: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_index_label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_group_index_label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_group_count: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_set_group_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_set_slice_required_topology: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_set_slice_size: Option<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub podset_slice_required_topology_constraints: Vec<SliceTopologyConstraint>,
}

/// Kueue's `PodsetSliceRequiredTopologyConstraint`: one layer of slices.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SliceTopologyConstraint {
    #[serde(default)]
    pub topology: String,
    #[serde(default)]
    pub size: i32,
}

impl PodSetTopologyRequest {
    /// The slice layers (Kueue's `PodSetSliceRequiredTopologyConstraints`): the constraints
    /// list, or the one layer the legacy fields describe (size 0 when not given).
    pub fn slice_layers(&self) -> Vec<SliceTopologyConstraint> {
        if !self.podset_slice_required_topology_constraints.is_empty() {
            return self.podset_slice_required_topology_constraints.clone();
        }
        match &self.pod_set_slice_required_topology {
            None => Vec::new(),
            Some(t) => vec![SliceTopologyConstraint {
                topology: t.clone(),
                size: self.pod_set_slice_size.unwrap_or(0),
            }],
        }
    }

    /// Whether the podSet asks for topology-aware scheduling at all (Kueue's
    /// `IsExplicitlyRequestingTAS`).
    pub fn requests_tas(&self) -> bool {
        self.required.is_some()
            || self.preferred.is_some()
            || self.unconstrained == Some(true)
            || !self.slice_layers().is_empty()
    }
}

/// The Workload webhook's rules for `spec.podSets[i].topologyRequest` (`path`).
pub(crate) fn validate_request(p: &mut Problems, path: &str, tr: &PodSetTopologyRequest) {
    if tr.pod_set_slice_required_topology.is_some() {
        match tr.pod_set_slice_size {
            None => p.add(
                format!("{path}.podSetSliceSize"),
                "must be set when podSetSliceRequiredTopology is specified",
            ),
            Some(s) if s <= 0 => p.add(format!("{path}.podSetSliceSize"), "must be greater than 0"),
            _ => {}
        }
    } else if tr.pod_set_slice_size.is_some() {
        p.add(
            format!("{path}.podSetSliceSize"),
            "may not be set when podSetSliceRequiredTopology is not specified",
        );
    }
    for (i, c) in tr
        .podset_slice_required_topology_constraints
        .iter()
        .enumerate()
    {
        if c.size <= 0 {
            p.add(
                format!("{path}.podsetSliceRequiredTopologyConstraints[{i}].size"),
                "must be greater than 0",
            );
        }
    }
    if tr.podset_slice_required_topology_constraints.len() > 3 {
        p.add(
            format!("{path}.podsetSliceRequiredTopologyConstraints"),
            too_many(
                3,
                "items",
                tr.podset_slice_required_topology_constraints.len(),
            ),
        );
    }
}

/// The job webhook's rules (`ValidateTASPodSetRequest`) for a pod template's annotations;
/// `path` names the annotations map (`spec.template.metadata.annotations`).
pub fn validate_annotations(
    annotations: &BTreeMap<String, String>,
    path: &str,
) -> Vec<FieldProblem> {
    let mut p = Problems::default();
    let at = |key: &str| format!("{path}.{key}");
    let has = |key: &str| annotations.contains_key(key);
    let (required, preferred, unconstrained) = (
        has(REQUIRED_TOPOLOGY),
        has(PREFERRED_TOPOLOGY),
        has(UNCONSTRAINED_TOPOLOGY),
    );
    let (slice_required, slice_size) = (has(SLICE_REQUIRED_TOPOLOGY), has(SLICE_SIZE));
    if usize::from(required) + usize::from(preferred) + usize::from(unconstrained) > 1 {
        p.add(
            path,
            format!(
                "must not contain more than one topology annotation: [{REQUIRED_TOPOLOGY:?}, {PREFERRED_TOPOLOGY:?}, {UNCONSTRAINED_TOPOLOGY:?}]"
            ),
        );
    }
    for key in [
        REQUIRED_TOPOLOGY,
        PREFERRED_TOPOLOGY,
        SLICE_REQUIRED_TOPOLOGY,
    ] {
        if let Some(v) = annotations.get(key) {
            p.check(&at(key), v, names::qualified_name);
        }
    }
    if let Some(group) = annotations.get(POD_SET_GROUP_NAME) {
        if group.parse::<u64>().is_ok() {
            p.add(at(POD_SET_GROUP_NAME), "must not be a number");
        }
        for (other, present) in [
            (SLICE_SIZE, slice_size),
            (SLICE_REQUIRED_TOPOLOGY, slice_required),
        ] {
            if present {
                p.add(
                    at(POD_SET_GROUP_NAME),
                    format!("may not be set when '{other}' is specified"),
                );
            }
        }
        if !preferred && !required {
            p.add(
                at(POD_SET_GROUP_NAME),
                format!("may not be set when neither '{PREFERRED_TOPOLOGY}' nor '{REQUIRED_TOPOLOGY}' is specified"),
            );
        }
    }
    if let Some(v) = annotations.get(UNCONSTRAINED_TOPOLOGY)
        && parse_go_bool(v).is_none()
    {
        p.add(at(UNCONSTRAINED_TOPOLOGY), "must be a boolean value");
    }
    if let Some(v) = annotations.get(SLICE_SIZE) {
        match v.parse::<i32>() {
            Err(_) => p.add(at(SLICE_SIZE), "must be a numeric value"),
            Ok(n) if n < 1 => p.add(at(SLICE_SIZE), "must be greater than or equal to 1"),
            Ok(_) => {}
        }
    }
    if slice_required && !slice_size {
        p.add(
            at(SLICE_SIZE),
            format!("must be set when '{SLICE_REQUIRED_TOPOLOGY}' is specified"),
        );
    }
    if !slice_required && slice_size {
        p.add(
            at(SLICE_SIZE),
            format!("may not be set when '{SLICE_REQUIRED_TOPOLOGY}' is not specified"),
        );
    }
    p.into_vec()
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// The topology request a job's pod template asks for through its annotations (Kueue's
/// `podSetTopologyRequestBuilder.Build`); `None` when it asks for none or the annotations are
/// invalid ([`validate_annotations`] reports why).
pub fn request_from_annotations(
    annotations: &BTreeMap<String, String>,
) -> Option<PodSetTopologyRequest> {
    let get = |k: &str| annotations.get(k).cloned();
    let mut tr = PodSetTopologyRequest::default();
    let (slice_topology, slice_size) = (get(SLICE_REQUIRED_TOPOLOGY), get(SLICE_SIZE));
    if let Some(v) = get(REQUIRED_TOPOLOGY) {
        tr.required = Some(v);
    } else if let Some(v) = get(PREFERRED_TOPOLOGY) {
        tr.preferred = Some(v);
    } else if let Some(v) = get(UNCONSTRAINED_TOPOLOGY) {
        tr.unconstrained = Some(parse_go_bool(&v)?);
    } else if slice_topology.is_none() || slice_size.is_none() {
        return None;
    }
    if let (Some(t), Some(size)) = (slice_topology, slice_size) {
        tr.pod_set_slice_required_topology = Some(t);
        tr.pod_set_slice_size = Some(size.parse().ok()?);
    }
    if tr.required.is_some() || tr.preferred.is_some() {
        tr.pod_set_group_name = get(POD_SET_GROUP_NAME);
    }
    Some(tr)
}

// ---------------------------------------------------------------------------------------------
// TopologyAssignment

/// Kueue's v1beta2 `TopologyAssignment`: the levels it names and the domains as compact slices.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TopologyAssignment {
    #[serde(default)]
    pub levels: Vec<String>,
    #[serde(default)]
    pub slices: Vec<TopologyAssignmentSlice>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TopologyAssignmentSlice {
    pub domain_count: i32,
    #[serde(default)]
    pub values_per_level: Vec<LevelValues>,
    #[serde(default)]
    pub pod_counts: PodCounts,
}

/// Kueue's `TopologyAssignmentSliceLevelValues`: one value for every domain, or one each.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LevelValues {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub universal: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub individual: Option<IndividualValues>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IndividualValues {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suffix: Option<String>,
    #[serde(default)]
    pub roots: Vec<String>,
}

/// Kueue's `TopologyAssignmentSlicePodCounts`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodCounts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub universal: Option<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub individual: Vec<i32>,
}

/// One domain of an assignment, expanded: its value at each level and its pod count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainAssignment {
    pub values: Vec<String>,
    pub count: i32,
}

impl TopologyAssignment {
    /// Kueue's single compact slice encoding (`compactSliceEncoding`): per level one universal
    /// value, or the values with their common prefix and suffix factored out; pod counts
    /// universal when all equal.
    pub fn from_domains(levels: Vec<String>, domains: &[DomainAssignment]) -> TopologyAssignment {
        let mut out = TopologyAssignment {
            levels,
            slices: Vec::new(),
        };
        let Some(first) = domains.first() else {
            return out;
        };
        let values_per_level = (0..out.levels.len())
            .map(|i| compact_values(domains.iter().map(|d| d.values[i].as_str())))
            .collect();
        let pod_counts = if domains.iter().all(|d| d.count == first.count) {
            PodCounts {
                universal: Some(first.count),
                individual: Vec::new(),
            }
        } else {
            PodCounts {
                universal: None,
                individual: domains.iter().map(|d| d.count).collect(),
            }
        };
        out.slices.push(TopologyAssignmentSlice {
            domain_count: domains.len() as i32,
            values_per_level,
            pod_counts,
        });
        out
    }

    /// Every domain, expanded (Kueue's `InternalSeqFrom`); `None` when a slice is malformed.
    pub fn domains(&self) -> Option<Vec<DomainAssignment>> {
        let mut out = Vec::new();
        for s in &self.slices {
            if s.values_per_level.len() != self.levels.len() {
                return None;
            }
            for i in 0..usize::try_from(s.domain_count).ok()? {
                let count = match s.pod_counts.universal {
                    Some(c) => c,
                    None => *s.pod_counts.individual.get(i)?,
                };
                let values = s
                    .values_per_level
                    .iter()
                    .map(|v| value_at(v, i))
                    .collect::<Option<Vec<_>>>()?;
                out.push(DomainAssignment { values, count });
            }
        }
        Some(out)
    }
}

fn value_at(v: &LevelValues, i: usize) -> Option<String> {
    if let Some(u) = &v.universal {
        return Some(u.clone());
    }
    let ind = v.individual.as_ref()?;
    Some(format!(
        "{}{}{}",
        ind.prefix.as_deref().unwrap_or(""),
        ind.roots.get(i)?,
        ind.suffix.as_deref().unwrap_or("")
    ))
}

/// Kueue's `fillSingleCompactSliceValues` over byte positions kept on character boundaries.
fn compact_values<'a>(values: impl Iterator<Item = &'a str> + Clone) -> LevelValues {
    let mut prefix: Option<&str> = None;
    let mut suffix: &str = "";
    let (mut min_len, mut max_len) = (usize::MAX, 0);
    for s in values.clone() {
        min_len = min_len.min(s.len());
        max_len = max_len.max(s.len());
        match prefix {
            None => {
                prefix = Some(s);
                suffix = s;
            }
            Some(p) => {
                let common = p
                    .char_indices()
                    .zip(s.chars())
                    .find(|((_, a), b)| a != b)
                    .map_or(p.len().min(s.len()), |((i, _), _)| i);
                let common = floor_boundary(p, common);
                prefix = Some(&p[..common]);
                let common_suffix = suffix
                    .chars()
                    .rev()
                    .zip(s.chars().rev())
                    .take_while(|(a, b)| a == b)
                    .map(|(a, _)| a.len_utf8())
                    .sum::<usize>();
                suffix = &suffix[suffix.len() - common_suffix..];
            }
        }
    }
    let prefix = prefix.unwrap_or("");
    if prefix.len() == max_len {
        return LevelValues {
            universal: Some(prefix.to_string()),
            individual: None,
        };
    }
    let prefix = if prefix.len() + suffix.len() > min_len {
        &prefix[..floor_boundary(prefix, min_len - suffix.len())]
    } else {
        prefix
    };
    let roots = values
        .map(|s| s[prefix.len()..s.len() - suffix.len()].to_string())
        .collect();
    LevelValues {
        universal: None,
        individual: Some(IndividualValues {
            prefix: (!prefix.is_empty()).then(|| prefix.to_string()),
            suffix: (!suffix.is_empty()).then(|| suffix.to_string()),
            roots,
        }),
    }
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(values: &[&str], count: i32) -> DomainAssignment {
        DomainAssignment {
            values: values.iter().map(|s| s.to_string()).collect(),
            count,
        }
    }

    #[test]
    fn compact_encoding_factors_prefix_and_suffix_and_round_trips() {
        let levels = vec!["rack".to_string(), HOSTNAME_LABEL.to_string()];
        let domains = [
            d(&["r1", "node-1-a"], 2),
            d(&["r1", "node-2-a"], 1),
            d(&["r1", "node-13-a"], 2),
        ];
        let ta = TopologyAssignment::from_domains(levels, &domains);
        assert_eq!(ta.slices.len(), 1);
        let s = &ta.slices[0];
        assert_eq!(s.domain_count, 3);
        assert_eq!(s.values_per_level[0].universal.as_deref(), Some("r1"));
        let ind = s.values_per_level[1].individual.as_ref().unwrap();
        assert_eq!(ind.prefix.as_deref(), Some("node-"));
        assert_eq!(ind.suffix.as_deref(), Some("-a"));
        assert_eq!(ind.roots, ["1", "2", "13"]);
        assert_eq!(s.pod_counts.individual, [2, 1, 2]);
        assert_eq!(ta.domains().unwrap(), domains);
    }

    #[test]
    fn equal_counts_are_universal_and_overlapping_affixes_are_trimmed() {
        let domains = [d(&["ab"], 3), d(&["aab"], 3)];
        let ta = TopologyAssignment::from_domains(vec!["h".into()], &domains);
        assert_eq!(ta.slices[0].pod_counts.universal, Some(3));
        assert_eq!(ta.domains().unwrap(), domains);
    }

    #[test]
    fn annotations_become_a_request_as_kueue_builds_it() {
        let a = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let tr = request_from_annotations(&a(&[
            (REQUIRED_TOPOLOGY, "rack"),
            (POD_SET_GROUP_NAME, "g"),
        ]))
        .unwrap();
        assert_eq!(tr.required.as_deref(), Some("rack"));
        assert_eq!(tr.pod_set_group_name.as_deref(), Some("g"));
        let tr = request_from_annotations(&a(&[(UNCONSTRAINED_TOPOLOGY, "true")])).unwrap();
        assert_eq!(tr.unconstrained, Some(true));
        let tr =
            request_from_annotations(&a(&[(SLICE_REQUIRED_TOPOLOGY, "rack"), (SLICE_SIZE, "4")]))
                .unwrap();
        assert_eq!(tr.slice_layers()[0].size, 4);
        assert!(tr.requests_tas());
        assert_eq!(request_from_annotations(&a(&[(SLICE_SIZE, "4")])), None);
        let problems = validate_annotations(
            &a(&[
                (REQUIRED_TOPOLOGY, "rack"),
                (PREFERRED_TOPOLOGY, "block"),
                (SLICE_SIZE, "0"),
            ]),
            "spec.template.metadata.annotations",
        );
        let fields: Vec<_> = problems.iter().filter_map(|p| p.field.clone()).collect();
        assert!(fields.contains(&"spec.template.metadata.annotations".to_string()));
        assert!(
            problems
                .iter()
                .any(|p| p.message == "must be greater than or equal to 1")
        );
        assert!(
            problems
                .iter()
                .any(|p| p.message.starts_with("may not be set when"))
        );
    }

    #[test]
    fn topology_levels_follow_kueue_rules() {
        let t = |labels: &[&str]| Topology {
            metadata: ObjectMeta {
                name: Some("default".into()),
                ..ObjectMeta::default()
            },
            spec: TopologySpec {
                levels: labels
                    .iter()
                    .map(|l| TopologyLevel {
                        node_label: l.to_string(),
                    })
                    .collect(),
            },
        };
        assert!(validate_topology(&t(&["block", "rack", HOSTNAME_LABEL])).is_empty());
        assert_eq!(validate_topology(&t(&[])).len(), 1);
        assert_eq!(
            validate_topology(&t(&["rack", "rack"]))[0].message,
            "must be unique"
        );
        assert!(
            validate_topology(&t(&[HOSTNAME_LABEL, "rack"]))[0]
                .message
                .contains("lowest level")
        );
    }
}
