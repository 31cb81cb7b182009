//! `wasq ctl describe workload NAME`: a Workload as `kubectl describe` shows an object — who
//! and where it is, kueuectl's status and pending position, its podSets, admission, checks and
//! conditions — and its Decisions: the Events regarding it, oldest first, each with the policies
//! wasq's annotations name (nothing for the Events Kueue wrote).

use std::collections::BTreeMap;

use serde_json::Value;

use super::history::{self, Recorded};
use super::list::{Workloads, condition_true, str_at, timestamp, workload_status};
use super::table::age;
use crate::api::Quantity;

/// How a description is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DescribeOutput {
    /// kubectl describe's layout.
    #[default]
    Text,
    /// The Workload and its Events as a `List`.
    Json,
    Yaml,
}

/// Workload `namespace/name` described at `now`.
pub async fn describe_workload(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    output: DescribeOutput,
    now: jiff::Timestamp,
) -> anyhow::Result<String> {
    let wl = history::workload(client, namespace, name).await?;
    let events = history::events(client, &wl).await?;
    if output != DescribeOutput::Text {
        let mut items = vec![wl];
        items.extend(events.into_iter().map(|e| e.object));
        let list = serde_json::json!({
            "apiVersion": "v1",
            "kind": "List",
            "metadata": {"resourceVersion": ""},
            "items": items,
        });
        return Ok(if output == DescribeOutput::Json {
            format!("{}\n", serde_json::to_string_pretty(&list)?)
        } else {
            serde_saphyr::to_string(&list)?
        });
    }
    let mut lookups = Workloads::new(client);
    let mut fields: Vec<(String, Vec<String>)> = Vec::new();
    let mut field = |label: &str, lines: Vec<String>| fields.push((label.to_string(), lines));
    field("Name", vec![name.to_string()]);
    field("Namespace", vec![namespace.to_string()]);
    field("Labels", pairs(&wl["metadata"]["labels"], "="));
    field("Annotations", pairs(&wl["metadata"]["annotations"], ": "));
    let created = timestamp(wl.pointer("/metadata/creationTimestamp"));
    field(
        "Created",
        vec![created.map_or_else(
            || "<unknown>".to_string(),
            |t| format!("{t} ({} ago)", age(t, now)),
        )],
    );
    let owners: Vec<String> = wl["metadata"]["ownerReferences"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .map(|o| format!("{}/{}", str_at(o, "/kind"), str_at(o, "/name")))
        .collect();
    field("Owner", or_none(owners));
    let local_queue = str_at(&wl, "/spec/queueName");
    field("Queue", vec![or_dash(local_queue)]);
    let cluster_queue = match str_at(&wl, "/status/admission/clusterQueue") {
        "" => lookups.cluster_queue_of(namespace, local_queue).await?,
        cq => cq.to_string(),
    };
    field("ClusterQueue", vec![or_dash(&cluster_queue)]);
    field("Priority", vec![priority(&wl)]);
    let status = workload_status(&wl);
    let mut also = Vec::new();
    if condition_true(&wl, "Evicted") {
        also.push("Evicted");
    }
    if wl.pointer("/spec/active") == Some(&Value::Bool(false)) {
        also.push("Deactivated");
    }
    field(
        "Status",
        vec![if also.is_empty() {
            status.to_string()
        } else {
            format!("{status} ({})", also.join(", "))
        }],
    );
    // As `list` finds it; a visibility API that does not answer (a standby's 503, no right to
    // read it) only leaves the position out.
    if status == "PENDING"
        && !cluster_queue.is_empty()
        && let Ok(Some(p)) = lookups.position(&cluster_queue, namespace, name).await
    {
        let at = |key: &str| p[key].as_i64().map(|v| v.to_string());
        if let (Some(lq), Some(cq)) = (at("positionInLocalQueue"), at("positionInClusterQueue")) {
            field(
                "Position in queue",
                vec![format!(
                    "{lq} in LocalQueue {local_queue}, {cq} in ClusterQueue {cluster_queue}"
                )],
            );
        }
    }
    let mut out = aligned_fields(&fields);
    section(&mut out, "PodSets", pod_sets(&wl));
    section(&mut out, "Admission", admission(&wl));
    section(&mut out, "Admission Checks", checks(&wl, now));
    section(&mut out, "Conditions", conditions(&wl, now));
    section(&mut out, "Decisions", decisions(&events, now));
    Ok(out)
}

fn or_dash(s: &str) -> String {
    if s.is_empty() { "-" } else { s }.to_string()
}

fn or_none(lines: Vec<String>) -> Vec<String> {
    if lines.is_empty() {
        vec!["<none>".to_string()]
    } else {
        lines
    }
}

/// kubectl's longest annotation value shown (`maxAnnotationLen`); longer ones are cut.
const MAX_ANNOTATION: usize = 140;

/// `key=value` (labels) or `key: value` (annotations, cut as kubectl cuts them; kubectl's
/// last-applied configuration left out), one a line, sorted.
fn pairs(map: &Value, between: &str) -> Vec<String> {
    let lines = map
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| *k != "kubectl.kubernetes.io/last-applied-configuration")
                .map(|(k, v)| {
                    let v = v.as_str().unwrap_or_default();
                    let v = if v.chars().count() > MAX_ANNOTATION {
                        format!("{}...", v.chars().take(MAX_ANNOTATION).collect::<String>())
                    } else {
                        v.to_string()
                    };
                    format!("{k}{between}{v}")
                })
                .collect()
        })
        .unwrap_or_default();
    or_none(lines)
}

/// `CLASS (VALUE)`, the class from `spec.priorityClassRef` (or v1beta1's
/// `spec.priorityClassName`).
fn priority(wl: &Value) -> String {
    let class = match str_at(wl, "/spec/priorityClassRef/name") {
        "" => str_at(wl, "/spec/priorityClassName"),
        c => c,
    };
    let value = wl.pointer("/spec/priority").and_then(Value::as_i64);
    match (class, value) {
        ("", Some(v)) => v.to_string(),
        ("", None) => "<none>".to_string(),
        (c, Some(v)) => format!("{c} ({v})"),
        (c, None) => c.to_string(),
    }
}

/// Top-level `Label:  value` lines, the values aligned (further lines of a value under its
/// first).
fn aligned_fields(fields: &[(String, Vec<String>)]) -> String {
    let width = fields.iter().map(|(l, _)| l.len() + 1).max().unwrap_or(0) + 2;
    let mut out = String::new();
    for (label, lines) in fields {
        for (i, line) in lines.iter().enumerate() {
            let head = if i == 0 {
                format!("{label}:")
            } else {
                String::new()
            };
            out.push_str(format!("{head:<width$}{line}").trim_end());
            out.push('\n');
        }
    }
    out
}

/// A section: its title and its table indented, or `<none>`.
fn section(out: &mut String, title: &str, table: Option<Vec<Vec<String>>>) {
    match table {
        None => out.push_str(&format!("{title}:  <none>\n")),
        Some(rows) => {
            out.push_str(&format!("{title}:\n"));
            out.push_str(&indented_table(&rows));
        }
    }
}

/// Rows (headers first, then kubectl describe's dashes under them) in columns two spaces
/// apart, indented by two; the last column unpadded.
fn indented_table(rows: &[Vec<String>]) -> String {
    let Some(headers) = rows.first() else {
        return String::new();
    };
    let dashes: Vec<String> = headers.iter().map(|h| "-".repeat(h.len())).collect();
    let all: Vec<&Vec<String>> = std::iter::once(headers)
        .chain(std::iter::once(&dashes))
        .chain(&rows[1..])
        .collect();
    let columns = headers.len();
    let mut widths = vec![0; columns];
    for row in &all {
        for (c, cell) in row.iter().enumerate().take(columns) {
            widths[c] = widths[c].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in all {
        let mut line = String::from("  ");
        for (c, cell) in row.iter().enumerate().take(columns) {
            line.push_str(cell);
            if c + 1 < columns {
                line.extend(std::iter::repeat_n(
                    ' ',
                    widths[c] + 2 - cell.chars().count(),
                ));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn table(headers: &[&str], rows: Vec<Vec<String>>) -> Option<Vec<Vec<String>>> {
    if rows.is_empty() {
        return None;
    }
    let mut all = vec![headers.iter().map(|h| h.to_string()).collect()];
    all.extend(rows);
    Some(all)
}

fn array<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// `r=v, r=v` of a resource map.
fn resources(map: &BTreeMap<String, String>) -> String {
    map.iter()
        .map(|(r, v)| format!("{r}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Name, count and each pod's requests (as Kueue sums them), per podSet.
fn pod_sets(wl: &Value) -> Option<Vec<Vec<String>>> {
    let rows = array(wl, "/spec/podSets")
        .iter()
        .map(|p| {
            let spec: k8s_openapi::api::core::v1::PodSpec =
                serde_json::from_value(p["template"]["spec"].clone()).unwrap_or_default();
            let requests: BTreeMap<String, String> = crate::cluster::pod_requests(&spec)
                .into_iter()
                .map(|(r, milli)| (r, Quantity(milli).to_string()))
                .collect();
            let topology = ["required", "preferred", "unconstrained"]
                .into_iter()
                .find_map(|k| {
                    let level = p.pointer(&format!("/topologyRequest/{k}"))?;
                    Some(match level.as_str() {
                        Some(l) => format!("{k} {l}"),
                        None => k.to_string(),
                    })
                })
                .unwrap_or_default();
            vec![
                str_at(p, "/name").to_string(),
                p["count"].as_i64().unwrap_or(1).to_string(),
                resources(&requests),
                topology,
            ]
        })
        .collect();
    table(&["Name", "Count", "Requests (each pod)", "Topology"], rows)
}

/// Per podSet of `status.admission`: count, flavors, usage and where TAS placed it.
fn admission(wl: &Value) -> Option<Vec<Vec<String>>> {
    let strings = |v: &Value| -> BTreeMap<String, String> {
        v.as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        let v = match v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        (k.clone(), v)
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let rows = array(wl, "/status/admission/podSetAssignments")
        .iter()
        .map(|p| {
            vec![
                str_at(p, "/name").to_string(),
                p["count"].as_i64().map_or(String::new(), |c| c.to_string()),
                resources(&strings(&p["flavors"])),
                resources(&strings(&p["resourceUsage"])),
                topology(&p["topologyAssignment"]),
            ]
        })
        .collect();
    table(&["PodSet", "Count", "Flavors", "Usage", "Topology"], rows)
}

/// A TAS assignment in a few words: how many domains of the lowest level, and the first
/// ones with their pod counts (`2 domains of kubernetes.io/hostname: n1 ×2, n2 ×1`).
fn topology(assignment: &Value) -> String {
    if assignment.is_null() {
        return String::new();
    }
    let Ok(a) =
        serde_json::from_value::<crate::api::topology::TopologyAssignment>(assignment.clone())
    else {
        return "(unreadable)".to_string();
    };
    let Some(domains) = a.domains() else {
        return "(unreadable)".to_string();
    };
    let level = a.levels.last().map(String::as_str).unwrap_or("?");
    const SHOWN: usize = 3;
    let mut named: Vec<String> = domains
        .iter()
        .take(SHOWN)
        .map(|d| {
            format!(
                "{} ×{}",
                d.values.last().map(String::as_str).unwrap_or("?"),
                d.count
            )
        })
        .collect();
    if domains.len() > SHOWN {
        named.push("…".to_string());
    }
    let plural = if domains.len() == 1 { "" } else { "s" };
    format!(
        "{} domain{plural} of {level}: {}",
        domains.len(),
        named.join(", ")
    )
}

fn transition_age(c: &Value, now: jiff::Timestamp) -> String {
    timestamp(c.get("lastTransitionTime")).map_or_else(String::new, |t| age(t, now))
}

fn checks(wl: &Value, now: jiff::Timestamp) -> Option<Vec<Vec<String>>> {
    let rows = array(wl, "/status/admissionChecks")
        .iter()
        .map(|c| {
            vec![
                str_at(c, "/name").to_string(),
                str_at(c, "/state").to_string(),
                transition_age(c, now),
                str_at(c, "/message").to_string(),
            ]
        })
        .collect();
    table(&["Name", "State", "Age", "Message"], rows)
}

fn conditions(wl: &Value, now: jiff::Timestamp) -> Option<Vec<Vec<String>>> {
    let rows = array(wl, "/status/conditions")
        .iter()
        .map(|c| {
            vec![
                str_at(c, "/type").to_string(),
                str_at(c, "/status").to_string(),
                str_at(c, "/reason").to_string(),
                transition_age(c, now),
                str_at(c, "/message").to_string(),
            ]
        })
        .collect();
    table(&["Type", "Status", "Reason", "Age", "Message"], rows)
}

/// kubectl's Events columns, the policies before the note: a series' age as kubectl's
/// `3m (x5 over 10m)`.
fn decisions(events: &[Recorded], now: jiff::Timestamp) -> Option<Vec<Vec<String>>> {
    let since =
        |t: Option<jiff::Timestamp>| t.map_or_else(|| "<unknown>".to_string(), |t| age(t, now));
    let rows = events
        .iter()
        .map(|e| {
            let when = if e.count > 1 {
                format!(
                    "{} (x{} over {})",
                    since(e.last.or(e.first)),
                    e.count,
                    since(e.first)
                )
            } else {
                since(e.first)
            };
            vec![
                if e.warning { "Warning" } else { "Normal" }.to_string(),
                e.reason.clone(),
                when,
                e.from.clone(),
                e.policies(),
                e.note.clone(),
            ]
        })
        .collect();
    table(
        &["Type", "Reason", "Age", "From", "Policies", "Message"],
        rows,
    )
}
