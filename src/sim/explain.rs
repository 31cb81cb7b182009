//! `wasq explain WORKLOAD REPORT`: one workload's story in a simulator report (`wasq simulate
//! -o json`), in order — when it arrived, each wait with the reasons the scheduler gave while
//! it lasted, each admission with its flavors and the policies (name and digest) that ordered
//! it and chose its flavors, each preemption with who preempted it and which policy chose the
//! victims, the workloads it preempted itself, and how it ended.

use std::fmt::Write;

use anyhow::bail;
use serde_json::Value;

use crate::story::{assignments, seconds, wait_line};

/// The story of `workload` (`namespace/name`, or a name that only one workload has) in a
/// simulator report's JSON.
pub fn explain(report: &Value, workload: &str) -> anyhow::Result<String> {
    let workloads = report["workloads"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let key = |w: &Value| format!("{}/{}", str_of(&w["namespace"]), str_of(&w["name"]));
    let matches: Vec<&Value> = workloads
        .iter()
        .filter(|w| {
            key(w) == workload || (!workload.contains('/') && str_of(&w["name"]) == workload)
        })
        .collect();
    let w = match matches.as_slice() {
        [w] => *w,
        [] => {
            let names: Vec<String> = workloads.iter().map(key).collect();
            let near = names
                .iter()
                .filter(|n| strsim::jaro_winkler(n, workload) > 0.8)
                .take(3)
                .cloned()
                .collect::<Vec<_>>();
            if near.is_empty() {
                bail!(
                    "no workload {workload} in the report ({} workloads)",
                    names.len()
                );
            }
            bail!(
                "no workload {workload} in the report; did you mean {}?",
                near.join(", ")
            );
        }
        several => bail!(
            "{workload} names {} workloads: {}; give namespace/name",
            several.len(),
            several
                .iter()
                .map(|w| key(w))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let name = key(w);
    let mut out = String::new();
    writeln!(
        out,
        "{name}: ClusterQueue {}, LocalQueue {}, priority {}",
        or_dash(&w["clusterQueue"]),
        or_dash(&w["localQueue"]),
        w["priority"]
    )?;
    let arrival = w["arrivalSeconds"].as_f64().unwrap_or(0.0);
    writeln!(out, "  {:>8}  arrived", seconds(arrival))?;
    // Waiting since, and the distinct reasons given while it lasted.
    let mut waiting: Option<(f64, Vec<String>)> = Some((arrival, Vec::new()));
    let events = report["events"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for e in events {
        let time = e["time"].as_f64().unwrap_or(0.0);
        let kind = str_of(&e["type"]);
        if str_of(&e["preemptor"]) == name && kind == "Preempted" {
            writeln!(
                out,
                "  {:>8}  preempted {} ({}){}",
                seconds(time),
                str_of(&e["workload"]),
                str_of(&e["reason"]),
                decided_by(", victims chosen by", &e["policy"])
            )?;
            continue;
        }
        if str_of(&e["workload"]) != name {
            continue;
        }
        match kind {
            "Inadmissible" | "Requeued" => {
                let reason = str_of(&e["reason"]).to_string();
                let (_, reasons) = waiting.get_or_insert_with(|| (time, Vec::new()));
                if !reason.is_empty() && !reasons.contains(&reason) {
                    reasons.push(reason);
                }
            }
            "QuotaReserved" => {
                if let Some((since, reasons)) = waiting.take() {
                    wait_line(&mut out, since, time, &reasons)?;
                }
                writeln!(
                    out,
                    "  {:>8}  reserved quota in {} (cycle {}){}",
                    seconds(time),
                    str_of(&e["clusterQueue"]),
                    e["cycle"],
                    decided_by(", flavors chosen by", &e["policy"])
                )?;
            }
            "Admitted" => {
                writeln!(
                    out,
                    "  {:>8}  admitted: {}{}",
                    seconds(time),
                    assignments(&e["admission"]),
                    decided_by(", ordered by", &e["orderedBy"])
                )?;
                placements(&mut out, report, &name, time, &e["admission"])?;
            }
            "Preempted" => {
                writeln!(
                    out,
                    "  {:>8}  preempted by {} ({}){}",
                    seconds(time),
                    or_dash(&e["preemptor"]),
                    str_of(&e["reason"]),
                    decided_by(", victims chosen by", &e["policy"])
                )?;
                waiting = Some((time, Vec::new()));
            }
            "Evicted" | "Deactivated" | "Rejected" => {
                writeln!(
                    out,
                    "  {:>8}  {} ({})",
                    seconds(time),
                    kind.to_lowercase(),
                    str_of(&e["reason"])
                )?;
            }
            "Finished" => {
                writeln!(out, "  {:>8}  finished", seconds(time))?;
            }
            _ => {}
        }
    }
    if let Some((since, reasons)) = waiting {
        let end = report["summary"]["durationSeconds"].as_f64();
        match end {
            Some(end) => wait_line(&mut out, since, end, &reasons)?,
            None => writeln!(
                out,
                "  {:>8}  waiting since, at the end of the run: {}",
                seconds(since),
                reasons.join("; ")
            )?,
        }
        writeln!(out, "  still {} at the end of the run", str_of(&w["state"]))?;
    }
    shadows(&mut out, report, &name)?;
    Ok(out)
}

/// Where a shadow policy (`--shadow EXT=NAME`, `builtin` for Kueue's own) decided otherwise
/// than the enforced one about this workload, or chose it where the enforced one did not (or
/// the other way round): both answers.
fn shadows(out: &mut String, report: &Value, workload: &str) -> std::fmt::Result {
    let Some(shadows) = report["summary"]["shadow"].as_object() else {
        return Ok(());
    };
    let names = |text: &str| -> bool { text.split([',', ' ']).any(|w| w == workload) };
    let mut first = true;
    for (shadow, figures) in shadows {
        let differences = figures["differences"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for d in differences.iter().filter(|d| {
            str_of(&d["workload"]) == workload
                || names(str_of(&d["enforced"]))
                || names(str_of(&d["shadow"]))
        }) {
            if first {
                writeln!(out, "  where a shadow policy would have decided otherwise:")?;
                first = false;
            }
            writeln!(
                out,
                "    {} for {}: enforced {}; {shadow} would have chosen {}",
                str_of(&d["extension"]),
                str_of(&d["workload"]),
                or_dash(&d["enforced"]),
                or_dash(&d["shadow"])
            )?;
        }
    }
    Ok(())
}

/// Where each TAS podSet of an admission went, and the placement policy that chose it: the
/// domains it spans per level, and its pods per domain of the lowest level.
fn placements(
    out: &mut String,
    report: &Value,
    workload: &str,
    time: f64,
    admission: &Value,
) -> std::fmt::Result {
    let placed = report["topology"]["placements"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for p in placed
        .iter()
        .filter(|p| str_of(&p["workload"]) == workload && p["time"].as_f64() == Some(time))
    {
        let pod_set = str_of(&p["podSet"]);
        let spans: Vec<String> = p["domainsPerLevel"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
            .iter()
            .map(|l| format!("{} {}", l[1], str_of(&l[0])))
            .collect();
        let pods = admission["podSetAssignments"]
            .as_array()
            .and_then(|a| a.iter().find(|a| str_of(&a["name"]) == pod_set))
            .and_then(|a| {
                serde_json::from_value::<crate::api::topology::TopologyAssignment>(
                    a["topologyAssignment"].clone(),
                )
                .ok()
            })
            .and_then(|t| t.domains())
            .map(|domains| {
                domains
                    .iter()
                    .map(|d| format!("{} ×{}", d.values.join("/"), d.count))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .filter(|s| !s.is_empty())
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        writeln!(
            out,
            "  {:>8}  placed {pod_set} in flavor {} across {}{pods}{}",
            seconds(time),
            str_of(&p["flavor"]),
            spans.join(", "),
            decided_by(", placed by", &p["placedBy"])
        )?;
    }
    Ok(())
}

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

fn or_dash(v: &Value) -> &str {
    v.as_str().filter(|s| !s.is_empty()).unwrap_or("-")
}

/// `WORDS NAME (DIGEST)` for a policy reference, `WORDS the built-in`; nothing without one.
fn decided_by(words: &str, policy: &Value) -> String {
    match (policy["name"].as_str(), policy["digest"].as_str()) {
        (Some(name), digest @ Some(_)) => crate::story::decided_by(words, name, digest),
        (Some("builtin"), None) => crate::story::decided_by(words, "builtin", None),
        _ => String::new(),
    }
}
