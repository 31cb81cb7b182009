//! `wasq controller --record-trace FILE`: the cluster's traffic as a simulator `Trace`
//! (`docs/trace-format.md`), so last week's arrivals and run times can be replayed against
//! another policy (`wasq simulate --compare`).
//!
//! A Workload is written once, when its run ends: when it turns `Finished`, or when it is
//! deleted while admitted (its job was deleted). Its row says when it arrived (its
//! `creationTimestamp`, in seconds after the recorder started; one that arrived before is
//! written as arriving at 0), its LocalQueue, priority and podSets (the admitted counts, each
//! pod's requests as Kueue computes them), and how long it ran (from quota reservation to its
//! end). A Workload deleted before it was ever admitted has no run time and is left out
//! (counted in the log). Workloads already finished when the recorder starts are not written.
//!
//! The file is appended to, one JSON object per line; past `max_bytes` it is renamed
//! `FILE.1` (an older `FILE.1` becomes `FILE.2`, and so on up to [`KEEP`]) and a new file is
//! started. Each file is a trace on its own, with arrivals on the same clock.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::PodSpec;
use kube::core::DynamicObject;
use serde_json::{Value, json};

use crate::api::Quantity;
use crate::cluster::Millis;
use crate::k8s::schema::kinds::KueueKind;
use crate::k8s::sync::keys::key_of;
use crate::k8s::sync::mirror::{Observed, Source};

/// Rotated files kept besides the one written.
pub const KEEP: usize = 3;

#[derive(Debug)]
pub struct TraceRecorder {
    path: PathBuf,
    max_bytes: u64,
    /// When recording started (ms): arrival 0.
    epoch: Millis,
    file: std::fs::File,
    written: u64,
    /// Workloads written (or finished before recording started), until they are deleted.
    done: HashSet<String>,
    /// Workloads deleted before they were admitted.
    pub never_admitted: u64,
}

impl TraceRecorder {
    /// Appends to `path` (made if missing).
    pub fn open(path: &Path, max_bytes: u64, epoch: Millis) -> std::io::Result<TraceRecorder> {
        let file = open_append(path)?;
        let written = file.metadata()?.len();
        Ok(TraceRecorder {
            path: path.to_path_buf(),
            max_bytes,
            epoch,
            file,
            written,
            done: HashSet::new(),
            never_admitted: 0,
        })
    }

    /// Takes in what the controller observed (before its mirror does); `now` is the
    /// controller's clock. Write failures are logged, never fatal to the controller.
    pub fn observe(&mut self, ev: &Observed, now: Millis) {
        match ev {
            // Runs that ended before recording started are not written.
            Observed::Listed(Source::Kueue(KueueKind::Workload), objects) => {
                let ended = objects.iter().filter(|o| ended_at(o).is_some());
                self.done.extend(ended.map(key));
            }
            Observed::Applied(Source::Kueue(KueueKind::Workload), o) => self.record_if_finished(o),
            Observed::Deleted(Source::Kueue(KueueKind::Workload), o) => {
                let key = key(o);
                if !self.done.remove(&key) {
                    match reserved_at(o) {
                        Some(_) => self.write(o, ended_at(o).unwrap_or(now)),
                        None => self.never_admitted += 1,
                    }
                }
            }
            _ => {}
        }
    }

    fn record_if_finished(&mut self, o: &DynamicObject) {
        if let Some(end) = ended_at(o)
            && self.done.insert(key(o))
        {
            self.write(o, end);
        }
    }

    fn write(&mut self, o: &DynamicObject, end: Millis) {
        let Some(row) = row(o, end, self.epoch) else {
            return;
        };
        let mut line = row.to_string();
        line.push('\n');
        if let Err(error) = self.append(line.as_bytes()) {
            tracing::warn!(path = %self.path.display(), %error, "trace not written");
        }
    }

    fn append(&mut self, line: &[u8]) -> std::io::Result<()> {
        if self.written > 0 && self.written + line.len() as u64 > self.max_bytes {
            self.rotate()?;
        }
        self.file.write_all(line)?;
        self.written += line.len() as u64;
        Ok(())
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        let numbered = |i: usize| {
            let mut name = self.path.as_os_str().to_owned();
            name.push(format!(".{i}"));
            PathBuf::from(name)
        };
        for i in (1..KEEP).rev() {
            let from = numbered(i);
            if from.exists() {
                std::fs::rename(&from, numbered(i + 1))?;
            }
        }
        std::fs::rename(&self.path, numbered(1))?;
        self.file = open_append(&self.path)?;
        self.written = 0;
        Ok(())
    }
}

fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}

fn key(o: &DynamicObject) -> String {
    key_of(
        o.metadata.namespace.as_deref(),
        o.metadata.name.as_deref().unwrap_or_default(),
    )
}

/// When a condition of `type_` turned True, if it is True.
fn condition_time(o: &DynamicObject, type_: &str) -> Option<Millis> {
    let conditions = o.data.get("status")?.get("conditions")?.as_array()?;
    let c = conditions.iter().find(|c| c["type"] == type_)?;
    if c["status"] != "True" {
        return None;
    }
    let t: jiff::Timestamp = c.get("lastTransitionTime")?.as_str()?.parse().ok()?;
    Some(t.as_millisecond())
}

fn ended_at(o: &DynamicObject) -> Option<Millis> {
    condition_time(o, "Finished")
}

fn reserved_at(o: &DynamicObject) -> Option<Millis> {
    condition_time(o, "QuotaReserved").or_else(|| condition_time(o, "Admitted"))
}

/// The trace row of a Workload whose run ended at `end`; `None` when it never held quota.
fn row(o: &DynamicObject, end: Millis, epoch: Millis) -> Option<Value> {
    let start = reserved_at(o)?;
    let spec = o.data.get("spec")?;
    let created = o
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(start, |t| t.0.as_millisecond());
    let admitted_counts = o
        .data
        .get("status")
        .and_then(|s| s.get("admission"))
        .and_then(|a| a.get("podSetAssignments"))
        .and_then(Value::as_array);
    let pod_sets: Vec<Value> = spec
        .get("podSets")?
        .as_array()?
        .iter()
        .map(|ps| {
            let name = ps["name"].as_str().unwrap_or("main");
            let count = admitted_counts
                .and_then(|a| a.iter().find(|p| p["name"] == name))
                .and_then(|p| p["count"].as_i64())
                .or_else(|| ps["count"].as_i64())
                .unwrap_or(1);
            let pod: PodSpec = ps
                .get("template")
                .and_then(|t| t.get("spec"))
                .and_then(|s| serde_json::from_value(s.clone()).ok())
                .unwrap_or_default();
            let requests: serde_json::Map<String, Value> = crate::cluster::pod_requests(&pod)
                .into_iter()
                .map(|(r, milli)| (r, Value::String(Quantity(milli).to_string())))
                .collect();
            json!({"name": name, "count": count, "requests": requests})
        })
        .collect();
    let mut row = json!({
        "arrival": seconds((created - epoch).max(0)),
        "namespace": o.metadata.namespace,
        "name": o.metadata.name,
        "queue": spec.get("queueName"),
        "duration": seconds((end - start).max(0)),
        "podSets": pod_sets,
    });
    if let Some(p) = spec.get("priority").filter(|p| !p.is_null()) {
        row["priority"] = p.clone();
    }
    Some(row)
}

/// Milliseconds as the trace's seconds (a number).
fn seconds(ms: Millis) -> Value {
    json!(ms as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file_is_rotated_and_the_oldest_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.jsonl");
        let mut r = TraceRecorder::open(&path, 10, 0).expect("opened");
        for i in 0..6 {
            r.append(format!("line-{i}\n").as_bytes()).expect("written");
        }
        let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
        // Each line (7 bytes) fills a file: the newest in t.jsonl, three older ones kept.
        assert_eq!(read("t.jsonl"), "line-5\n");
        assert_eq!(read("t.jsonl.1"), "line-4\n");
        assert_eq!(read("t.jsonl.3"), "line-2\n");
        assert!(!dir.path().join("t.jsonl.4").exists());
        // Reopened, it appends.
        let mut again = TraceRecorder::open(&path, 100, 0).expect("reopened");
        again.append(b"line-6\n").expect("written");
        assert_eq!(read("t.jsonl"), "line-5\nline-6\n");
    }
}
