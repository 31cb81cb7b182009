//! Kueue's TopologyUngater (`pkg/controller/tas/topology_ungater.go`): once a Workload is
//! admitted with `topologyAssignment`s, its pods — created by the job's controller with the
//! `kueue.x-k8s.io/topology` scheduling gate, the `kueue.x-k8s.io/workload` annotation and
//! the `kueue.x-k8s.io/podset` label that admission put in their templates — are each given
//! a domain: the domain's level labels are added to the pod's `nodeSelector` and the gate is
//! removed, so kube-scheduler binds it inside that domain.
//!
//! Which pod goes where, as Kueue: by rank when the podSet's topology request names a pod
//! index label (and, for jobs of jobs, a sub-group index label and count) and every pod's
//! rank is readable, consistent and in range — rank `r` gets the domain of the `r`-th pod of
//! the assignment (domains in assignment order); otherwise greedily: pods already ungated
//! count against the domain their node selector names, and gated pods (in name order) fill
//! the domains that still miss pods, in assignment order. In a podSet group (a
//! LeaderWorkerSet's leader and workers) the smaller podSet takes ranks `0..` and the larger
//! follows it. This module plans; the controller sends the patches.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

use crate::api::Workload;
use crate::api::topology::{DomainAssignment, PodSetTopologyRequest, TOPOLOGY_SCHEDULING_GATE};
use crate::k8s::sync::tas_nodes::TasPod;

/// Kueue's `PodIndexOffsetAnnotation`: the first rank of a pod's replica.
pub const POD_INDEX_OFFSET: &str = "kueue.x-k8s.io/pod-index-offset";

/// One pod to release into one domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ungate {
    pub namespace: String,
    pub name: String,
    /// The domain's level labels, added to the pod's `nodeSelector`.
    pub node_labels: BTreeMap<String, String>,
    /// The JSON Patch: checks the gate is still where it was, removes it, sets the selector.
    pub ops: Vec<Value>,
}

/// Whether Kueue's ungater handles the Workload (`IsAdmittedByTAS`): admitted, with a
/// topology assignment for some podSet.
pub fn admitted_by_tas(wl: &Workload) -> bool {
    let Some(status) = &wl.status else {
        return false;
    };
    crate::k8s::status::conditions::is_true(
        &status.conditions,
        crate::k8s::status::conditions::ADMITTED,
    ) && status.admission.as_ref().is_some_and(|a| {
        a.pod_set_assignments
            .iter()
            .any(|p| p.topology_assignment.is_some())
    })
}

/// The pods of `wl` to ungate now, each with its domain. `pods`: the Workload's TAS pods
/// (not terminated) by key.
pub fn plan(wl: &Workload, pods: &BTreeMap<String, TasPod>) -> Vec<Ungate> {
    if !admitted_by_tas(wl) {
        return Vec::new();
    }
    let Some(admission) = wl.status.as_ref().and_then(|s| s.admission.as_ref()) else {
        return Vec::new();
    };
    let request = |name: &str| -> Option<&PodSetTopologyRequest> {
        wl.spec
            .pod_sets
            .iter()
            .find(|p| p.name == name)
            .and_then(|p| p.topology_request.as_ref())
    };
    // Rank offsets: the smaller podSet of a group first, the larger after it.
    let mut groups: BTreeMap<String, Vec<(&str, i32)>> = BTreeMap::new();
    for (i, psa) in admission.pod_set_assignments.iter().enumerate() {
        let group = request(&psa.name)
            .and_then(|r| r.pod_set_group_name.clone())
            .unwrap_or_else(|| i.to_string());
        groups
            .entry(group)
            .or_default()
            .push((psa.name.as_str(), psa.count.unwrap_or_default()));
    }
    let mut offsets: HashMap<&str, (i32, i32)> = HashMap::new();
    for members in groups.values() {
        match members.as_slice() {
            [a, b, ..] => {
                let (small, large) = if a.1 > b.1 { (b, a) } else { (a, b) };
                offsets.insert(small.0, (0, small.1));
                offsets.insert(large.0, (small.1, large.1 + small.1));
            }
            [only] => {
                offsets.insert(only.0, (0, only.1));
            }
            [] => {}
        }
    }
    let mut out = Vec::new();
    for psa in &admission.pod_set_assignments {
        let Some(ta) = &psa.topology_assignment else {
            continue;
        };
        let Some(domains) = ta.domains() else {
            tracing::warn!(workload = ?wl.metadata.name, pod_set = %psa.name, "cannot read the topology assignment");
            continue;
        };
        let mut members: Vec<&TasPod> = pods.values().filter(|p| p.pod_set == psa.name).collect();
        members.sort_by(|a, b| a.name.cmp(&b.name));
        let (mut offset, mut max_rank) = offsets
            .get(psa.name.as_str())
            .copied()
            .unwrap_or((0, psa.count.unwrap_or_default()));
        if let Some(extra) = members
            .first()
            .and_then(|p| p.annotations.get(POD_INDEX_OFFSET))
            .and_then(|v| v.parse::<i32>().ok())
        {
            offset += extra;
            max_rank += extra;
        }
        let count = psa.count.unwrap_or_default();
        let placed = by_rank(
            &members,
            &domains,
            &ta.levels,
            request(&psa.name),
            (offset, max_rank, count),
        )
        .unwrap_or_else(|| greedy(&members, &domains, &ta.levels));
        for (pod, d) in placed {
            let Some(gate) = pod.gate else {
                continue;
            };
            let node_labels: BTreeMap<String, String> = ta
                .levels
                .iter()
                .cloned()
                .zip(domains[d].values.iter().cloned())
                .collect();
            let mut selector = pod.node_selector.clone();
            selector.extend(node_labels.clone());
            out.push(Ungate {
                namespace: pod.namespace.clone(),
                name: pod.name.clone(),
                node_labels,
                ops: vec![
                    json!({"op": "test", "path": format!("/spec/schedulingGates/{gate}/name"),
                           "value": TOPOLOGY_SCHEDULING_GATE}),
                    json!({"op": "remove", "path": format!("/spec/schedulingGates/{gate}")}),
                    json!({"op": "add", "path": "/spec/nodeSelector", "value": selector}),
                ],
            });
        }
    }
    out
}

/// The domain index a pod's node selector names, if any.
fn domain_of(pod: &TasPod, domains: &[DomainAssignment], levels: &[String]) -> Option<usize> {
    let values: Vec<&str> = levels
        .iter()
        .map(|l| pod.node_selector.get(l).map_or("", String::as_str))
        .collect();
    domains.iter().position(|d| {
        d.values
            .iter()
            .map(String::as_str)
            .eq(values.iter().copied())
    })
}

/// Kueue's `assignGatedPodsToDomainsGreedy`: gated pods fill what each domain still misses.
fn greedy<'a>(
    pods: &[&'a TasPod],
    domains: &[DomainAssignment],
    levels: &[String],
) -> Vec<(&'a TasPod, usize)> {
    let mut ungated = vec![0i32; domains.len()];
    let mut gated = Vec::new();
    for &p in pods {
        if p.gate.is_some() {
            gated.push(p);
        } else if let Some(d) = domain_of(p, domains, levels) {
            ungated[d] += 1;
        }
    }
    let mut out = Vec::new();
    let mut next = gated.into_iter();
    for (d, domain) in domains.iter().enumerate() {
        for _ in 0..(domain.count - ungated[d]).max(0) {
            match next.next() {
                Some(p) => out.push((p, d)),
                None => return out,
            }
        }
    }
    out
}

/// Kueue's `readRanksIfAvailable` + `assignGatedPodsToDomainsByRanks`; `None` when ranks
/// cannot be used (no index label, a pod without a readable rank, a conflict, a rank out of
/// range, or an ungated pod outside its rank's domain).
fn by_rank<'a>(
    pods: &[&'a TasPod],
    domains: &[DomainAssignment],
    levels: &[String],
    request: Option<&PodSetTopologyRequest>,
    (offset, max_rank, count): (i32, i32, i32),
) -> Option<Vec<(&'a TasPod, usize)>> {
    let request = request?;
    let index_label = request.pod_index_label.as_deref()?;
    let read = |pod: &TasPod, label: &str, bound: i32| -> Option<i32> {
        let v: i32 = pod.labels.get(label)?.parse().ok()?;
        (0..bound).contains(&v).then_some(v)
    };
    let single = match &request.sub_group_index_label {
        Some(_) => count / request.sub_group_count.filter(|&c| c > 0)?,
        None => count,
    };
    let rank_domain: Vec<usize> = domains
        .iter()
        .enumerate()
        .flat_map(|(d, a)| std::iter::repeat_n(d, a.count.max(0) as usize))
        .collect();
    let mut seen: HashMap<i32, &TasPod> = HashMap::new();
    for &pod in pods {
        let index = read(pod, index_label, max_rank)?;
        let mut rank = index - offset;
        if let Some(sub) = &request.sub_group_index_label {
            let job = read(pod, sub, request.sub_group_count?)?;
            if index >= single {
                return None;
            }
            rank = index + job * single - offset;
        }
        if rank < 0 || rank >= count || seen.insert(rank, pod).is_some() {
            return None;
        }
    }
    let mut out = Vec::new();
    for (rank, pod) in seen {
        let d = *rank_domain.get(rank as usize)?;
        if pod.gate.is_none() {
            if domain_of(pod, domains, levels) != Some(d) {
                return None;
            }
            continue;
        }
        out.push((pod, d));
    }
    out.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    Some(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn workload(index_label: Option<&str>) -> Workload {
        let mut request = json!({"required": "rack"});
        if let Some(l) = index_label {
            request["podIndexLabel"] = json!(l);
        }
        serde_json::from_value(json!({
            "metadata": {"name": "wl", "namespace": "ns"},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 3,
                "topologyRequest": request,
                "template": {"spec": {"containers": []}}}]},
            "status": {
                "conditions": [{"type": "Admitted", "status": "True", "reason": "Admitted",
                    "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main",
                    "count": 3, "flavors": {"cpu": "f"},
                    "topologyAssignment": {"levels": ["kubernetes.io/hostname"],
                        "slices": [{"domainCount": 2,
                            "valuesPerLevel": [{"individual": {"roots": ["n1", "n2"]}}],
                            "podCounts": {"individual": [2, 1]}}]}}]}}
        }))
        .unwrap()
    }

    fn pod(name: &str, gated: bool, node: Option<&str>, index: Option<&str>) -> (String, TasPod) {
        let mut labels = BTreeMap::from([("kueue.x-k8s.io/podset".to_string(), "main".into())]);
        if let Some(i) = index {
            labels.insert("idx".into(), i.into());
        }
        (
            format!("ns/{name}"),
            TasPod {
                namespace: "ns".into(),
                name: name.into(),
                uid: name.into(),
                pod_set: "main".into(),
                gate: gated.then_some(0),
                node_selector: node
                    .map(|n| BTreeMap::from([("kubernetes.io/hostname".into(), n.into())]))
                    .unwrap_or_default(),
                labels,
                annotations: BTreeMap::new(),
            },
        )
    }

    fn placed(plan: &[Ungate]) -> Vec<(String, String)> {
        plan.iter()
            .map(|u| {
                (
                    u.name.clone(),
                    u.node_labels["kubernetes.io/hostname"].clone(),
                )
            })
            .collect()
    }

    fn s(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn gated_pods_fill_what_each_domain_misses() {
        let wl = workload(None);
        let pods = BTreeMap::from([
            pod("a", false, Some("n1"), None),
            pod("b", true, None, None),
            pod("c", true, None, None),
        ]);
        assert_eq!(placed(&plan(&wl, &pods)), s(&[("b", "n1"), ("c", "n2")]));
        // The patch checks the gate, removes it and sets the selector.
        let ops = &plan(&wl, &pods)[0].ops;
        assert_eq!(ops[0]["op"], "test");
        assert_eq!(
            ops[1],
            json!({"op": "remove", "path": "/spec/schedulingGates/0"})
        );
        assert_eq!(ops[2]["value"], json!({"kubernetes.io/hostname": "n1"}));
        // Nothing to do once every pod is out.
        let done = BTreeMap::from([
            pod("a", false, Some("n1"), None),
            pod("b", false, Some("n1"), None),
            pod("c", false, Some("n2"), None),
        ]);
        assert!(plan(&wl, &done).is_empty());
    }

    #[test]
    fn ranks_decide_when_every_pod_has_one() {
        let wl = workload(Some("idx"));
        let pods = BTreeMap::from([
            pod("a", true, None, Some("2")),
            pod("b", true, None, Some("0")),
            pod("c", true, None, Some("1")),
        ]);
        // Ranks 0 and 1 go to n1 (2 pods), rank 2 to n2.
        assert_eq!(
            placed(&plan(&wl, &pods)),
            s(&[("a", "n2"), ("b", "n1"), ("c", "n1")])
        );
        // A conflicting rank falls back to the greedy order.
        let conflict = BTreeMap::from([
            pod("a", true, None, Some("0")),
            pod("b", true, None, Some("0")),
            pod("c", true, None, Some("1")),
        ]);
        assert_eq!(
            placed(&plan(&wl, &conflict)),
            s(&[("a", "n1"), ("b", "n1"), ("c", "n2")])
        );
    }

    #[test]
    fn a_workload_not_admitted_is_left_alone() {
        let mut wl = workload(None);
        wl.status.as_mut().unwrap().conditions.clear();
        let pods = BTreeMap::from([pod("a", true, None, None)]);
        assert!(plan(&wl, &pods).is_empty());
    }
}
