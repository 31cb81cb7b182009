//! Label matching: ClusterQueue namespaceSelector against namespaces, and a podSet against a
//! ResourceFlavor's nodeLabels and taints (Kueue's `checkFlavorForPodSets`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::{FlavorInfo, PodSetInfo};

/// Whether a LabelSelector matches a label set (`{}` matches everything).
pub fn selector_matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    if let Some(match_labels) = &selector.match_labels
        && !match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
    {
        return false;
    }
    selector.match_expressions.iter().flatten().all(|e| {
        set_operator_matches(
            &e.operator,
            labels.get(&e.key),
            e.values.as_deref().unwrap_or_default(),
        )
        .unwrap_or(false)
    })
}

/// The set-based operators shared by label selectors and node selectors; `None` for others.
fn set_operator_matches(op: &str, value: Option<&String>, values: &[String]) -> Option<bool> {
    Some(match op {
        "In" => value.is_some_and(|v| values.contains(v)),
        "NotIn" => value.is_none_or(|v| !values.contains(v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        _ => return None,
    })
}

fn toleration_tolerates(t: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = t.effect.as_deref().filter(|e| !e.is_empty())
        && effect != taint.effect
    {
        return false;
    }
    match t.operator.as_deref().unwrap_or("Equal") {
        "Exists" => t
            .key
            .as_deref()
            .is_none_or(|k| k.is_empty() || k == taint.key),
        _ => {
            t.key.as_deref() == Some(taint.key.as_str())
                && t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("")
        }
    }
}

/// The first NoSchedule/NoExecute taint of the flavor that neither the pod nor the flavor
/// tolerates.
pub fn untolerated_taint<'a>(flavor: &'a FlavorInfo, ps: &PodSetInfo) -> Option<&'a Taint> {
    flavor.node_taints.iter().find(|taint| {
        (taint.effect == "NoSchedule" || taint.effect == "NoExecute")
            && !ps
                .tolerations()
                .iter()
                .chain(&flavor.tolerations)
                .any(|t| toleration_tolerates(t, taint))
    })
}

fn requirement_matches(r: &NodeSelectorRequirement, labels: &BTreeMap<String, String>) -> bool {
    let value = labels.get(&r.key);
    let values = r.values.as_deref().unwrap_or_default();
    if let Some(m) = set_operator_matches(&r.operator, value, values) {
        return m;
    }
    match r.operator.as_str() {
        "Gt" | "Lt" => {
            let (Some(v), Some(bound)) = (
                value.and_then(|v| v.parse::<i64>().ok()),
                values.first().and_then(|b| b.parse::<i64>().ok()),
            ) else {
                return false;
            };
            if r.operator == "Gt" {
                v > bound
            } else {
                v < bound
            }
        }
        _ => false,
    }
}

/// Whether the podSet's nodeSelector and required node affinity, restricted to the label keys
/// the flavor defines, match the flavor's nodeLabels.
pub fn affinity_matches(flavor: &FlavorInfo, ps: &PodSetInfo) -> bool {
    let keys = &flavor.node_labels;
    // Without node labels every selector key and every term is on keys the flavor does not
    // define, so all of them are dropped and the podSet matches, as the loops below would
    // find. Answered without reading the podSet: at 10,000 heads its selector and terms were
    // a read from memory per head and cycle.
    if keys.is_empty() {
        return true;
    }
    let selector_ok = ps
        .node_selector()
        .iter()
        .filter(|(k, _)| keys.contains_key(*k))
        .all(|(k, v)| keys.get(k) == Some(v));
    if !selector_ok {
        return false;
    }
    // Terms are ORed; a term with no expression on the flavor's keys makes the whole
    // affinity irrelevant to this flavor (Kueue drops it).
    let mut terms: Vec<Vec<&NodeSelectorRequirement>> = Vec::new();
    for term in ps.affinity_terms() {
        let exprs: Vec<&NodeSelectorRequirement> = term_expressions(term)
            .filter(|e| keys.contains_key(&e.key))
            .collect();
        if exprs.is_empty() {
            return true;
        }
        terms.push(exprs);
    }
    terms.is_empty()
        || terms
            .iter()
            .any(|exprs| exprs.iter().all(|e| requirement_matches(e, keys)))
}

fn term_expressions(term: &NodeSelectorTerm) -> impl Iterator<Item = &NodeSelectorRequirement> {
    term.match_expressions.iter().flatten()
}

/// Why a podSet's pods may not run on a node (topology-aware scheduling at the node level).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeMismatch {
    /// A NoSchedule/NoExecute taint neither the pod nor the flavor tolerates, as
    /// `key=value:Effect`.
    Taint(String),
    NodeSelector,
    Affinity,
}

/// Whether a podSet's pods may run on a node with these labels and taints: every
/// NoSchedule/NoExecute taint tolerated by the pod or by `extra` (the flavor's tolerations),
/// then its nodeSelector, then its required node affinity.
pub fn node_mismatch(
    ps: &PodSetInfo,
    extra: &[Toleration],
    labels: &BTreeMap<String, String>,
    taints: &[Taint],
) -> Option<NodeMismatch> {
    let untolerated = taints.iter().find(|taint| {
        (taint.effect == "NoSchedule" || taint.effect == "NoExecute")
            && !ps
                .tolerations()
                .iter()
                .chain(extra)
                .any(|t| toleration_tolerates(t, taint))
    });
    if let Some(t) = untolerated {
        let value = t.value.as_deref().filter(|v| !v.is_empty());
        return Some(NodeMismatch::Taint(match value {
            Some(v) => format!("{}={v}:{}", t.key, t.effect),
            None => format!("{}:{}", t.key, t.effect),
        }));
    }
    if !ps
        .node_selector()
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
    {
        return Some(NodeMismatch::NodeSelector);
    }
    let terms = ps.affinity_terms();
    let affinity = terms.is_empty()
        || terms
            .iter()
            .any(|term| term_expressions(term).all(|e| requirement_matches(e, labels)));
    (!affinity).then_some(NodeMismatch::Affinity)
}

/// Why a flavor cannot host a podSet, or `None` when it can.
pub fn flavor_mismatch(flavor: &FlavorInfo, ps: &PodSetInfo) -> Option<String> {
    if let Some(taint) = untolerated_taint(flavor, ps) {
        // Kueue formats the taint as Go prints a struct: {key value effect timeAdded}.
        return Some(format!(
            "untolerated taint {{{} {} {} {}}} in flavor {}",
            taint.key,
            taint.value.as_deref().unwrap_or(""),
            taint.effect,
            taint
                .time_added
                .as_ref()
                .map_or_else(|| "<nil>".to_string(), |t| t.0.to_string()),
            flavor.name
        ));
    }
    if !affinity_matches(flavor, ps) {
        return Some(format!(
            "flavor {} doesn't match node affinity",
            flavor.name
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm};
    use smallvec::SmallVec;

    use super::affinity_matches;
    use crate::cluster::{FlavorInfo, NodeConstraints, PodSetInfo};
    use crate::quota::FlavorId;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn flavor(node_labels: &[(&str, &str)]) -> FlavorInfo {
        FlavorInfo {
            id: FlavorId(0),
            name: "f".into(),
            node_labels: labels(node_labels),
            node_taints: Vec::new(),
            tolerations: Vec::new(),
            annotations: BTreeMap::new(),
            topology_name: None,
        }
    }

    /// Pods selecting `zone=a` and requiring `gpu In (a100)`.
    fn pod_set() -> PodSetInfo {
        PodSetInfo {
            count: 1,
            min_count: None,
            requests: SmallVec::new(),
            constraints: NodeConstraints::boxed(
                Vec::new(),
                labels(&[("zone", "a")]),
                vec![NodeSelectorTerm {
                    match_expressions: Some(vec![NodeSelectorRequirement {
                        key: "gpu".into(),
                        operator: "In".into(),
                        values: Some(vec!["a100".into()]),
                    }]),
                    match_fields: None,
                }],
            ),
            topology: None,
            name: Arc::from("main"),
        }
    }

    /// Only the keys a flavor defines count; a flavor with no labels constrains nothing, so a
    /// selector and a term that no labelled flavor below satisfies still match it.
    #[test]
    fn only_the_flavors_keys_are_matched() {
        let ps = pod_set();
        assert!(affinity_matches(&flavor(&[]), &ps));
        assert!(affinity_matches(&flavor(&[("rack", "r1")]), &ps));
        assert!(!affinity_matches(&flavor(&[("zone", "b")]), &ps));
        // The selector matches and the term's key is not the flavor's: the term is dropped.
        assert!(affinity_matches(&flavor(&[("zone", "a")]), &ps));
        assert!(!affinity_matches(
            &flavor(&[("zone", "a"), ("gpu", "h100")]),
            &ps
        ));
        assert!(affinity_matches(
            &flavor(&[("zone", "a"), ("gpu", "a100")]),
            &ps
        ));
    }
}
