//! `Trace` files: one workload per JSONL line or CSV row, turned into [`WorkloadRecord`]s and
//! then into `Workload`s whose arrival, duration and class ride on the `sim.wasq.dev/*`
//! annotations.
//!
//! # Fields
//! | field       | required | meaning                                                                  |
//! |-------------|----------|--------------------------------------------------------------------------|
//! | `arrival`   | yes      | submission time on the virtual clock: `90s`, `200ms`, `1m30s`, or seconds as a number |
//! | `queue`     | yes      | the LocalQueue name                                                      |
//! | `podSets`   | yes      | the pod sets and their per-pod requests (see below)                      |
//! | `namespace` | no       | default: the Trace's `spec.namespace`, else `default`                    |
//! | `name`      | no       | default: `trace-<line>` (physical 1-based line number)                   |
//! | `priority`  | no       | integer `spec.priority`                                                  |
//! | `duration`  | no       | how long it runs once admitted (same syntax as `arrival`); default: forever |
//! | `class`     | no       | report class (`sim.wasq.dev/class`)                                      |
//!
//! # JSONL
//! One JSON object per line; blank lines are skipped. `podSets` is a list of
//! `{"name"?: "main", "count"?: 1, "requests"?: {"cpu": "1", "memory": "2Gi"}}` (a quantity may
//! also be a JSON number). An unnamed pod set is called `main` if it is the first, `main-<i>`
//! otherwise (`i` = 0-based index).
//! ```text
//! {"arrival": "1.5s", "queue": "lq", "priority": 10, "duration": "30s", "podSets": [{"count": 2, "requests": {"cpu": "1"}}]}
//! ```
//!
//! # CSV
//! A header row naming the columns (any order; `arrival`, `queue` and `podsets` must be among
//! them), then one row per workload. Blank lines and lines starting with `#` are skipped; an empty cell means "not
//! given". Cells may be double-quoted (`""` inside quotes is a quote); a row is one line.
//!
//! The `podsets` cell is `podset ("+" podset)*`, each pod set
//! `[name ":"] [count "x"] "{" resource "=" quantity (";" resource "=" quantity)* "}"`:
//! ```text
//! arrival,queue,priority,duration,class,podsets
//! 0s,lq,10,30s,small,{cpu=1}
//! 2s,lq,,1m,big,main:3x{cpu=1;memory=2Gi}+workers:2x{cpu=4}
//! ```
//! No part of the syntax uses a comma, so a `podsets` cell never needs quoting.
//!
//! # Errors
//! Each problem is reported as `file:line: field: message` (the field being e.g. `arrival`,
//! `podSets[0].requests.cpu` or `podsets[1].count`); every problem of a row is reported, and a
//! file's first 20.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::api::strict::suggest;
use crate::api::{self, names};

use super::duration::parse_millis;
use super::extensions::{PodSetRecord, WorkloadRecord};

/// Errors reported for one trace file before giving up on it.
const MAX_ERRORS: usize = 20;

/// How a trace file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    Jsonl,
    Csv,
}

impl TraceFormat {
    /// The format a file name implies (`.jsonl`/`.ndjson`, `.csv`).
    pub fn from_path(path: &Path) -> Option<TraceFormat> {
        match path.extension()?.to_str()? {
            "jsonl" | "ndjson" => Some(TraceFormat::Jsonl),
            "csv" => Some(TraceFormat::Csv),
            _ => None,
        }
    }
}

/// The `spec` of a `Trace` object.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// Relative to the directory of the manifest that holds the `Trace`.
    pub path: PathBuf,
    #[serde(default)]
    pub format: Option<TraceFormat>,
    /// Namespace of rows that name none (default `default`).
    #[serde(default)]
    pub namespace: Option<String>,
}

/// Why (part of) a trace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{}: cannot read trace: {source}", file.display())]
    Read {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: cannot tell the format from the file name; set spec.format to jsonl or csv", file.display())]
    UnknownFormat { file: PathBuf },
    #[error("{}:{line}: {}{message}", file.display(), field.as_deref().map(|f| format!("{f}: ")).unwrap_or_default())]
    Row {
        file: PathBuf,
        line: usize,
        /// The field, column or pod-set path at fault (`podSets[0].requests.cpu`).
        field: Option<String>,
        message: String,
    },
    #[error("{}: more than {MAX_ERRORS} errors, stopped at line {line}", file.display())]
    TooManyErrors { file: PathBuf, line: usize },
}

/// A problem with one field of a row.
#[derive(Debug)]
struct FieldError {
    field: String,
    message: String,
}

fn field_error(field: impl Into<String>, message: impl Into<String>) -> FieldError {
    FieldError {
        field: field.into(),
        message: message.into(),
    }
}

/// Reads the trace a `Trace` spec names; `base_dir` is the manifest file's directory. The file
/// is read one line at a time: only the records it stands for are kept, never its text.
pub fn load(spec: &TraceSpec, base_dir: &Path) -> Result<Vec<WorkloadRecord>, Vec<TraceError>> {
    let file = base_dir.join(&spec.path);
    let format = spec
        .format
        .or_else(|| TraceFormat::from_path(&file))
        .ok_or_else(|| vec![TraceError::UnknownFormat { file: file.clone() }])?;
    let read_error = |source| {
        vec![TraceError::Read {
            file: file.clone(),
            source,
        }]
    };
    let reader = std::fs::File::open(&file).map_err(read_error)?;
    let mut failed = None;
    let records = parse_lines(
        &file,
        format,
        Lines::new(
            std::io::BufReader::with_capacity(1 << 16, reader),
            &mut failed,
        ),
        spec.namespace.as_deref().unwrap_or("default"),
    );
    match failed {
        Some(source) => Err(read_error(source)),
        None => records,
    }
}

/// A reader's lines (without their `\n` or `\r\n`), one buffer reused; a read error ends them
/// and is left in `failed`.
struct Lines<'e, R> {
    reader: R,
    buf: String,
    failed: &'e mut Option<std::io::Error>,
}

impl<'e, R: std::io::BufRead> Lines<'e, R> {
    fn new(reader: R, failed: &'e mut Option<std::io::Error>) -> Self {
        Lines {
            reader,
            buf: String::new(),
            failed,
        }
    }

    /// The next line, borrowed until the following call.
    fn next_line(&mut self) -> Option<&str> {
        self.buf.clear();
        match self.reader.read_line(&mut self.buf) {
            Ok(0) => None,
            Ok(_) => {
                let line = self.buf.strip_suffix('\n').unwrap_or(&self.buf);
                Some(line.strip_suffix('\r').unwrap_or(line))
            }
            Err(e) => {
                *self.failed = Some(e);
                None
            }
        }
    }
}

/// A source of lines for [`parse_lines`]: a file read as it goes, or text in memory.
trait LineSource {
    fn next_line(&mut self) -> Option<&str>;
}

impl<R: std::io::BufRead> LineSource for Lines<'_, R> {
    fn next_line(&mut self) -> Option<&str> {
        Lines::next_line(self)
    }
}

impl LineSource for std::str::Lines<'_> {
    fn next_line(&mut self) -> Option<&str> {
        self.next()
    }
}

/// Parses trace text; `file` is only used in errors and `namespace` is the rows' default.
pub fn parse(
    file: &Path,
    format: TraceFormat,
    text: &str,
    namespace: &str,
) -> Result<Vec<WorkloadRecord>, Vec<TraceError>> {
    parse_lines(file, format, text.lines(), namespace)
}

/// Parses a trace one line at a time (see [`parse`]).
fn parse_lines(
    file: &Path,
    format: TraceFormat,
    mut lines: impl LineSource,
    namespace: &str,
) -> Result<Vec<WorkloadRecord>, Vec<TraceError>> {
    let mut records = Vec::new();
    let mut errors = Vec::new();
    let mut seen: HashMap<(String, String), usize> = HashMap::new();
    let mut columns: Option<Vec<String>> = None;
    let mut line = 0;
    while let Some(raw) = lines.next_line() {
        line += 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || (format == TraceFormat::Csv && trimmed.starts_with('#')) {
            continue;
        }
        if errors.len() >= MAX_ERRORS {
            errors.push(TraceError::TooManyErrors {
                file: file.to_path_buf(),
                line,
            });
            break;
        }
        let row_error = |field: Option<String>, message: String| TraceError::Row {
            file: file.to_path_buf(),
            line,
            field,
            message,
        };
        let cells = match format {
            TraceFormat::Jsonl => jsonl_cells(trimmed),
            TraceFormat::Csv => match &columns {
                None => {
                    match csv_header(trimmed) {
                        Ok(c) => columns = Some(c),
                        Err(e) => {
                            errors.push(row_error(Some(e.field), e.message));
                            break;
                        }
                    }
                    continue;
                }
                Some(columns) => csv_cells(columns, trimmed),
            },
        };
        let record = cells.and_then(|c| record(c, line, namespace).map_err(RowError::Fields));
        match record {
            Ok(r) => {
                let key = (r.namespace.clone(), r.name.clone());
                if let Some(first) = seen.insert(key, line) {
                    errors.push(row_error(
                        Some("name".into()),
                        format!(
                            "workload {}/{} is already defined on line {first}",
                            r.namespace, r.name
                        ),
                    ));
                } else {
                    records.push(r);
                }
            }
            Err(RowError::Whole(message)) => errors.push(row_error(None, message)),
            Err(RowError::Fields(errs)) => {
                errors.extend(
                    errs.into_iter()
                        .map(|e| row_error(Some(e.field), e.message)),
                );
            }
        }
    }
    if format == TraceFormat::Csv && columns.is_none() && errors.is_empty() {
        errors.push(TraceError::Row {
            file: file.to_path_buf(),
            line: 1,
            field: None,
            message: "missing the header row (e.g. arrival,queue,podsets)".into(),
        });
    }
    if errors.is_empty() {
        Ok(records)
    } else {
        Err(errors)
    }
}

/// A row's fields before interpretation. Scalars are text (JSON numbers written out).
#[derive(Default)]
struct Cells {
    arrival: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    queue: Option<String>,
    priority: Option<String>,
    duration: Option<String>,
    class: Option<String>,
    pod_sets: Option<PodSetsCell>,
    /// `podSets` (JSONL) or `podsets` (CSV), for errors.
    pod_sets_field: &'static str,
    /// Unknown or mistyped fields, reported with the interpretation's errors.
    errors: Vec<FieldError>,
}

enum PodSetsCell {
    Json(Value),
    Text(String),
}

enum RowError {
    /// The row as a whole is unreadable (not JSON, bad quoting, wrong number of cells).
    Whole(String),
    Fields(Vec<FieldError>),
}

const JSONL_FIELDS: &[&str] = &[
    "arrival",
    "namespace",
    "name",
    "queue",
    "priority",
    "podSets",
    "duration",
    "class",
];
const CSV_COLUMNS: &[&str] = &[
    "arrival",
    "namespace",
    "name",
    "queue",
    "priority",
    "podsets",
    "duration",
    "class",
];

fn jsonl_cells(text: &str) -> Result<Cells, RowError> {
    let object: Map<String, Value> = match serde_json::from_str(text) {
        Ok(Value::Object(o)) => o,
        Ok(_) => return Err(RowError::Whole("expected a JSON object".into())),
        Err(e) => return Err(RowError::Whole(format!("invalid JSON: {e}"))),
    };
    let mut cells = Cells {
        pod_sets_field: "podSets",
        ..Cells::default()
    };
    for (key, value) in object {
        if key == "podSets" {
            cells.pod_sets = Some(PodSetsCell::Json(value));
            continue;
        }
        let Some(slot) = cells.scalar(&key) else {
            cells
                .errors
                .push(field_error(&key, unknown("field", &key, JSONL_FIELDS)));
            continue;
        };
        match value {
            Value::Null => {}
            Value::String(s) => *slot = Some(s),
            Value::Number(n) => *slot = Some(n.to_string()),
            _ => cells
                .errors
                .push(field_error(&key, "must be a string or a number")),
        }
    }
    Ok(cells)
}

impl Cells {
    fn scalar(&mut self, key: &str) -> Option<&mut Option<String>> {
        Some(match key {
            "arrival" => &mut self.arrival,
            "namespace" => &mut self.namespace,
            "name" => &mut self.name,
            "queue" => &mut self.queue,
            "priority" => &mut self.priority,
            "duration" => &mut self.duration,
            "class" => &mut self.class,
            _ => return None,
        })
    }
}

/// `unknown field, did you mean "arrival"?`, or the list of what is allowed.
fn unknown(what: &str, key: &str, allowed: &[&str]) -> String {
    match suggest(key, allowed.iter().copied()) {
        Some(s) => format!("unknown {what}, did you mean {s:?}?"),
        None => format!("unknown {what}, expected one of {}", allowed.join(", ")),
    }
}

fn csv_header(text: &str) -> Result<Vec<String>, FieldError> {
    let columns = split_csv(text).map_err(|m| field_error("header", m))?;
    for (i, c) in columns.iter().enumerate() {
        if !CSV_COLUMNS.contains(&c.as_str()) {
            return Err(field_error(
                format!("column {} ({c:?})", i + 1),
                unknown("column", c, CSV_COLUMNS),
            ));
        }
        if columns[..i].contains(c) {
            return Err(field_error(c.as_str(), "column appears twice"));
        }
    }
    if let Some(missing) = ["arrival", "queue", "podsets"]
        .into_iter()
        .find(|r| !columns.iter().any(|c| c == r))
    {
        return Err(field_error(
            "header",
            format!("missing the required column {missing:?}"),
        ));
    }
    Ok(columns)
}

fn csv_cells(columns: &[String], text: &str) -> Result<Cells, RowError> {
    let values = split_csv(text).map_err(RowError::Whole)?;
    if values.len() != columns.len() {
        return Err(RowError::Whole(format!(
            "{} cells, but the header names {} columns",
            values.len(),
            columns.len()
        )));
    }
    let mut cells = Cells {
        pod_sets_field: "podsets",
        ..Cells::default()
    };
    for (column, value) in columns.iter().zip(values) {
        if value.is_empty() {
            continue;
        }
        if column == "podsets" {
            cells.pod_sets = Some(PodSetsCell::Text(value));
        } else if let Some(slot) = cells.scalar(column) {
            *slot = Some(value);
        }
    }
    Ok(cells)
}

/// Splits one CSV line into trimmed cells; `"..."` quotes a cell, `""` inside it is a quote.
fn split_csv(line: &str) -> Result<Vec<String>, String> {
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut quoted = false;
    let mut was_quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => cell.push(c),
            (false, ',') => {
                cells.push(std::mem::take(&mut cell).trim().to_string());
                was_quoted = false;
            }
            (false, '"') if cell.trim().is_empty() && !was_quoted => {
                cell.clear();
                quoted = true;
                was_quoted = true;
            }
            (false, '"') => return Err("unexpected '\"' inside an unquoted cell".into()),
            (false, c) if was_quoted && !c.is_whitespace() => {
                return Err("text after a closing quote".into());
            }
            (false, c) => cell.push(c),
        }
    }
    if quoted {
        return Err("unterminated quoted cell".into());
    }
    cells.push(cell.trim().to_string());
    Ok(cells)
}

/// Interprets a row's cells; every field problem is reported.
fn record(
    mut cells: Cells,
    line: usize,
    namespace: &str,
) -> Result<WorkloadRecord, Vec<FieldError>> {
    let mut errors = std::mem::take(&mut cells.errors);
    // A mistyped field was reported already; it is not also "required".
    let reported: Vec<String> = errors.iter().map(|e| e.field.clone()).collect();
    let required = |field: &str, errors: &mut Vec<FieldError>| {
        if !reported.iter().any(|f| f == field) {
            errors.push(field_error(field, "required"));
        }
    };
    let duration = |field: &str, v: Option<&str>, errors: &mut Vec<FieldError>| {
        v.and_then(|s| {
            parse_millis(s)
                .map_err(|m| errors.push(field_error(field, m)))
                .ok()
        })
    };
    let arrival = duration("arrival", cells.arrival.as_deref(), &mut errors);
    if cells.arrival.is_none() {
        required("arrival", &mut errors);
    }
    let run = duration("duration", cells.duration.as_deref(), &mut errors);
    let namespace = cells.namespace.unwrap_or_else(|| namespace.to_string());
    let name = cells.name.unwrap_or_else(|| format!("trace-{line}"));
    let queue = cells.queue.unwrap_or_default();
    let checks = [
        ("namespace", names::dns_label(&namespace)),
        ("name", names::dns_subdomain(&name)),
        ("queue", names::dns_subdomain(&queue)),
    ];
    for (field, check) in checks {
        match check {
            Err(_) if field == "queue" && queue.is_empty() => required("queue", &mut errors),
            Err(m) => errors.push(field_error(field, m)),
            Ok(()) => {}
        }
    }
    let priority = cells.priority.as_deref().and_then(|p| {
        p.parse::<i32>()
            .map_err(|_| errors.push(field_error("priority", "must be a 32-bit integer")))
            .ok()
    });
    let pod_sets = match cells.pod_sets {
        None => {
            required(cells.pod_sets_field, &mut errors);
            Ok(Vec::new())
        }
        Some(PodSetsCell::Json(v)) => json_pod_sets(v),
        Some(PodSetsCell::Text(s)) => text_pod_sets(&s),
    };
    match (pod_sets, arrival) {
        (Ok(pod_sets), Some(arrival)) if errors.is_empty() => Ok(WorkloadRecord {
            namespace,
            name,
            queue,
            priority,
            arrival,
            duration: run,
            class: cells.class,
            pod_sets,
        }),
        (pod_sets, _) => {
            errors.extend(pod_sets.err().into_iter().flatten());
            Err(errors)
        }
    }
}

fn default_pod_set_name(index: usize) -> String {
    if index == 0 {
        api::default_pod_set_name()
    } else {
        format!("{}-{index}", api::default_pod_set_name())
    }
}

fn json_pod_sets(value: Value) -> Result<Vec<PodSetRecord>, Vec<FieldError>> {
    let Value::Array(items) = value else {
        return Err(vec![field_error("podSets", "must be a list of pod sets")]);
    };
    let mut errors = Vec::new();
    let mut out = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let at = format!("podSets[{i}]");
        let Value::Object(obj) = item else {
            errors.push(field_error(at, "must be an object"));
            continue;
        };
        let mut ps = PodSetRecord {
            name: default_pod_set_name(i),
            count: 1,
            requests: BTreeMap::new(),
        };
        for (key, v) in obj {
            let field = format!("{at}.{key}");
            match (key.as_str(), v) {
                ("name", Value::String(s)) => ps.name = s,
                ("count", Value::Number(n)) => match n.as_i64().and_then(|c| i32::try_from(c).ok())
                {
                    Some(c) => ps.count = c,
                    None => errors.push(field_error(field, "must be a 32-bit integer")),
                },
                ("requests", Value::Object(reqs)) => {
                    for (r, q) in reqs {
                        let q = match q {
                            Value::String(s) => s,
                            Value::Number(n) => n.to_string(),
                            _ => {
                                errors.push(field_error(
                                    format!("{field}.{r}"),
                                    "must be a quantity",
                                ));
                                continue;
                            }
                        };
                        ps.requests.insert(r, q);
                    }
                }
                ("name" | "count" | "requests", _) => {
                    let what = match key.as_str() {
                        "name" => "a string",
                        "count" => "an integer",
                        _ => "a map of resource name to quantity",
                    };
                    errors.push(field_error(field, format!("must be {what}")));
                }
                _ => errors.push(field_error(
                    field,
                    unknown("field", &key, &["name", "count", "requests"]),
                )),
            }
        }
        out.push((at, ps));
    }
    finish_pod_sets(out, errors, "podSets")
}

fn text_pod_sets(text: &str) -> Result<Vec<PodSetRecord>, Vec<FieldError>> {
    let mut errors = Vec::new();
    let mut out = Vec::new();
    let mut rest = text.trim();
    let mut i = 0;
    while !rest.is_empty() {
        let at = format!("podsets[{i}]");
        let parsed = one_text_pod_set(rest, i);
        match parsed {
            Ok((ps, tail)) => {
                out.push((at.clone(), ps));
                rest = tail.trim_start();
                if let Some(next) = rest.strip_prefix('+') {
                    rest = next.trim_start();
                    if rest.is_empty() {
                        errors.push(field_error("podsets", "expected a pod set after '+'"));
                    }
                } else if !rest.is_empty() {
                    errors.push(field_error(
                        at,
                        format!("expected '+' or the end, found {rest:?}"),
                    ));
                    break;
                }
            }
            Err(m) => {
                errors.push(field_error(
                    at,
                    format!("{m}; expected [name:][count x]{{resource=quantity;...}}"),
                ));
                break;
            }
        }
        i += 1;
    }
    if out.is_empty() && errors.is_empty() {
        errors.push(field_error("podsets", "at least one pod set is required"));
    }
    finish_pod_sets(out, errors, "podsets")
}

/// Parses `[name:][count x]{r=q;...}` at the start of `text`; returns the rest.
fn one_text_pod_set(text: &str, index: usize) -> Result<(PodSetRecord, &str), String> {
    let open = text.find('{').ok_or("missing '{'")?;
    let close = open + text[open..].find('}').ok_or("missing '}'")?;
    let head = text[..open].trim();
    let (name, count) = match head.split_once(':') {
        Some((n, c)) => (n.trim().to_string(), c.trim()),
        None => (default_pod_set_name(index), head),
    };
    let count = match count {
        "" => 1,
        c => c
            .strip_suffix('x')
            .and_then(|n| n.trim().parse().ok())
            .ok_or_else(|| format!("invalid count {c:?} (write e.g. 3x)"))?,
    };
    let mut requests = BTreeMap::new();
    for pair in text[open + 1..close]
        .split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        let (r, q) = pair
            .split_once('=')
            .ok_or_else(|| format!("invalid request {pair:?} (write resource=quantity)"))?;
        requests.insert(r.trim().to_string(), q.trim().to_string());
    }
    Ok((
        PodSetRecord {
            name,
            count,
            requests,
        },
        &text[close + 1..],
    ))
}

/// Checks names, counts and quantities of parsed pod sets.
fn finish_pod_sets(
    sets: Vec<(String, PodSetRecord)>,
    mut errors: Vec<FieldError>,
    field: &str,
) -> Result<Vec<PodSetRecord>, Vec<FieldError>> {
    if sets.is_empty() && errors.is_empty() {
        errors.push(field_error(field, "at least one pod set is required"));
    }
    for (i, (at, ps)) in sets.iter().enumerate() {
        if let Err(m) = names::dns_label(&ps.name) {
            errors.push(field_error(format!("{at}.name"), m));
        }
        if sets[..i].iter().any(|(_, other)| other.name == ps.name) {
            errors.push(field_error(
                format!("{at}.name"),
                format!("pod set {:?} appears twice", ps.name),
            ));
        }
        if ps.count < 1 {
            errors.push(field_error(format!("{at}.count"), "must be at least 1"));
        }
        for (r, q) in &ps.requests {
            let at = format!("{at}.requests.{r}");
            if let Err(m) = names::qualified_name(r) {
                errors.push(field_error(&at, format!("invalid resource name: {m}")));
            }
            match q.parse::<api::Quantity>() {
                Ok(v) if v.milli() < 0 => errors.push(field_error(&at, "must not be negative")),
                Ok(_) => {}
                Err(e) => errors.push(field_error(&at, e.to_string())),
            }
        }
    }
    if errors.is_empty() {
        Ok(sets.into_iter().map(|(_, ps)| ps).collect())
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_cells_split_with_quotes() {
        assert_eq!(
            split_csv(r#"a, "b,c" ,"d""e""#).unwrap(),
            ["a", "b,c", "d\"e"]
        );
        assert!(split_csv(r#"a,"b"#).is_err());
        assert!(split_csv(r#"a,b"c"#).is_err());
    }

    #[test]
    fn text_pod_sets_parse() {
        let sets = text_pod_sets("main:3x{cpu=1;memory=2Gi}+workers:2x{cpu=4}").unwrap();
        assert_eq!(sets.len(), 2);
        assert_eq!((sets[0].name.as_str(), sets[0].count), ("main", 3));
        assert_eq!(sets[0].requests["memory"], "2Gi");
        assert_eq!((sets[1].name.as_str(), sets[1].count), ("workers", 2));
        let sets = text_pod_sets("{cpu=1}+2x{cpu=2}").unwrap();
        assert_eq!((sets[1].name.as_str(), sets[1].count), ("main-1", 2));
        assert!(text_pod_sets("main:3{cpu=1}").is_err());
        assert!(text_pod_sets("{cpu=1}+").is_err());
        assert!(text_pod_sets("{cpu=lots}").is_err());
    }

    /// The file is read line by line: CRLF endings and a last line without one read as the
    /// text's lines do, and an unreadable line is a read error naming the file.
    #[test]
    fn load_reads_lines_as_parse_does() {
        let dir = tempfile::tempdir().unwrap();
        let text = "{\"arrival\": 1, \"queue\": \"lq\", \"podSets\": [{}]}\r\n\r\n\
                    {\"arrival\": \"2s\", \"queue\": \"lq\", \"podSets\": [{\"count\": 2}]}";
        std::fs::write(dir.path().join("a.jsonl"), text).unwrap();
        let spec = |path: &str| TraceSpec {
            path: path.into(),
            format: None,
            namespace: Some("ns".into()),
        };
        let loaded = load(&spec("a.jsonl"), dir.path()).unwrap();
        let parsed = parse(Path::new("a.jsonl"), TraceFormat::Jsonl, text, "ns").unwrap();
        assert_eq!(loaded, parsed);
        assert_eq!(loaded.len(), 2);
        assert_eq!(loaded[1].name, "trace-3");

        std::fs::write(dir.path().join("b.jsonl"), b"{}\n\xff\xfe\n").unwrap();
        let errors = load(&spec("b.jsonl"), dir.path()).unwrap_err();
        assert!(
            matches!(&errors[..], [TraceError::Read { file, .. }] if file.ends_with("b.jsonl")),
            "{errors:?}"
        );
    }
}
