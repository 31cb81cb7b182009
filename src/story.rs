//! The words of one workload's story, shared by `wasq explain` on a simulator report
//! (`sim::explain`) and on a cluster (`k8s::ctl::explain`): times, waits, the policy behind a
//! step, an admission's podSets.

use std::fmt::Write;

use serde_json::Value;

/// A time or a length of time in seconds, as the stories print them (`30s`, `1.5s`).
pub fn seconds(t: f64) -> String {
    format!("{t}s")
}

/// `  SINCE  waited LENGTH: REASON; REASON` (nothing for an empty wait without reasons).
pub fn wait_line(out: &mut String, since: f64, until: f64, reasons: &[String]) -> std::fmt::Result {
    if until <= since && reasons.is_empty() {
        return Ok(());
    }
    let why = if reasons.is_empty() {
        String::new()
    } else {
        format!(": {}", reasons.join("; "))
    };
    writeln!(
        out,
        "  {:>8}  waited {}{why}",
        seconds(since),
        seconds(until - since)
    )
}

/// `WORDS NAME (DIGEST)` for a plugin, `WORDS the built-in` for the built-in policy (named
/// `builtin`, whatever its digest).
pub fn decided_by(words: &str, name: &str, digest: Option<&str>) -> String {
    match digest {
        _ if name == "builtin" => format!("{words} the built-in"),
        Some(digest) => format!("{words} {name} ({digest})"),
        None => format!("{words} {name}"),
    }
}

/// `main ×6 on cpu=default, memory=default` per podSet of an admission as Kueue writes it
/// (`podSetAssignments` with `name`, `count`, `flavors`).
pub fn assignments(admission: &Value) -> String {
    let sets = admission["podSetAssignments"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    sets.iter()
        .map(|p| {
            let flavors = p["flavors"]
                .as_object()
                .map(|f| {
                    f.iter()
                        .map(|(r, fl)| format!("{r}={}", fl.as_str().unwrap_or("")))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            format!(
                "{} ×{} on {flavors}",
                p["name"].as_str().unwrap_or(""),
                p["count"]
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_read_as_name_and_digest_or_the_built_in() {
        assert_eq!(
            decided_by(", ordered by", "builtin", Some("builtin")),
            ", ordered by the built-in"
        );
        assert_eq!(
            decided_by(", victims chosen by", "fit", Some("sha256:01")),
            ", victims chosen by fit (sha256:01)"
        );
        let mut out = String::new();
        wait_line(&mut out, 3.0, 3.0, &[]).unwrap();
        assert_eq!(out, "", "no wait, nothing said");
        wait_line(&mut out, 3.0, 33.0, &["WaitingForQuota".into(), "x".into()]).unwrap();
        assert_eq!(out, "        3s  waited 30s: WaitingForQuota; x\n");
    }
}
