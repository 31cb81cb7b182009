//! What a test asks of the double besides serving: latency on every request and more on
//! chosen ones, failures of chosen requests, and the log of requests received with counters
//! per verb and resource.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

/// One request as the double received it.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub method: String,
    /// Path and query.
    pub uri: String,
    pub content_type: String,
    /// The JSON body (`Null` when empty, or when bodies are not recorded).
    pub body: Value,
}

impl Recorded {
    /// `METHOD path` without the query, for compact assertions.
    pub fn line(&self) -> String {
        format!(
            "{} {}",
            self.method,
            self.uri.split('?').next().unwrap_or_default()
        )
    }
}

/// A failure armed for the next `times` requests with this method whose path ends with
/// `suffix`.
#[derive(Debug, Clone)]
struct Failure {
    method: String,
    suffix: String,
    code: u16,
    times: usize,
}

/// Extra latency armed for the next `times` requests with this method whose path ends with
/// `suffix`.
#[derive(Debug, Clone)]
struct Delay {
    method: String,
    suffix: String,
    latency: Duration,
    times: usize,
}

#[derive(Debug, Default)]
pub struct Faults {
    pub latency: Duration,
    failures: Vec<Failure>,
    delays: Vec<Delay>,
    pub record: bool,
    pub log: Vec<Recorded>,
    /// (verb, resource[/subresource]) → requests; verbs as the API server's audit names them
    /// (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`).
    pub counts: BTreeMap<(String, String), u64>,
}

impl Faults {
    pub fn new() -> Faults {
        Faults {
            record: true,
            ..Faults::default()
        }
    }

    pub fn fail(&mut self, method: &str, suffix: &str, code: u16, times: usize) {
        self.failures.push(Failure {
            method: method.to_ascii_uppercase(),
            suffix: suffix.into(),
            code,
            times,
        });
    }

    /// The code to fail this request with, if one is armed for it (consumed).
    pub fn take_failure(&mut self, method: &str, path: &str) -> Option<u16> {
        let i = self
            .failures
            .iter()
            .position(|f| f.method == method && path.ends_with(f.suffix.as_str()))?;
        let code = self.failures[i].code;
        self.failures[i].times -= 1;
        if self.failures[i].times == 0 {
            self.failures.remove(i);
        }
        Some(code)
    }

    pub fn delay(&mut self, method: &str, suffix: &str, latency: Duration, times: usize) {
        self.delays.push(Delay {
            method: method.to_ascii_uppercase(),
            suffix: suffix.into(),
            latency,
            times,
        });
    }

    /// The latency this request gets: the latency of every request, plus a delay armed for it
    /// (consumed).
    pub fn take_latency(&mut self, method: &str, path: &str) -> Duration {
        let Some(i) = self
            .delays
            .iter()
            .position(|d| d.method == method && path.ends_with(d.suffix.as_str()))
        else {
            return self.latency;
        };
        let extra = self.delays[i].latency;
        self.delays[i].times -= 1;
        if self.delays[i].times == 0 {
            self.delays.remove(i);
        }
        self.latency + extra
    }

    /// Failures still armed.
    pub fn armed(&self) -> usize {
        self.failures.iter().map(|f| f.times).sum()
    }

    pub fn count(&mut self, verb: &str, resource: &str) {
        *self
            .counts
            .entry((verb.to_string(), resource.to_string()))
            .or_default() += 1;
    }
}
