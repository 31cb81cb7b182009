//! Discovery as kube-rs reads it: `/api` (core versions), `/apis` (groups), `/api/v1` and
//! `/apis/{group}/{version}` (the resources of a group version, with their `status`
//! subresources), and `/version`.

use serde_json::{Value, json};

use super::resources::Resource;

const VERBS: [&str; 8] = [
    "create",
    "delete",
    "get",
    "list",
    "patch",
    "update",
    "watch",
    "deletecollection",
];

pub fn core_versions() -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})
}

pub fn groups(resources: &[Resource]) -> Value {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for r in resources.iter().filter(|r| !r.group.is_empty()) {
        match groups.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, versions)) if !versions.contains(&r.version) => {
                versions.push(r.version.clone())
            }
            Some(_) => {}
            None => groups.push((r.group.clone(), vec![r.version.clone()])),
        }
    }
    let groups: Vec<Value> = groups
        .into_iter()
        .map(|(name, versions)| {
            let vs: Vec<Value> = versions
                .iter()
                .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
                .collect();
            json!({"name": name, "versions": vs, "preferredVersion": vs[0]})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// The resource list of one group version, or `None` when it serves nothing.
pub fn group_version(resources: &[Resource], group: &str, version: &str) -> Option<Value> {
    let mut list = Vec::new();
    for r in resources
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        list.push(
            json!({"name": r.plural, "singularName": r.kind.to_lowercase(),
                         "namespaced": r.namespaced, "kind": r.kind, "verbs": VERBS}),
        );
        if r.status {
            list.push(
                json!({"name": format!("{}/status", r.plural), "singularName": "",
                             "namespaced": r.namespaced, "kind": r.kind,
                             "verbs": ["get", "patch", "update"]}),
            );
        }
    }
    if list.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                "resources": list}),
    )
}

pub fn version() -> Value {
    json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0-wasq-apiserver-double",
           "gitCommit": "", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
           "goVersion": "", "compiler": "rustc", "platform": "linux/amd64"})
}
