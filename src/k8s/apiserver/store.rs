//! The storage: every object of every served resource, one global resourceVersion counter
//! bumped by every write (as etcd's revision), and a bounded history of changes from which
//! watches resume and consistent lists are served at an older resourceVersion.
//!
//! Server-owned metadata is the store's: `resourceVersion`, `uid`, `creationTimestamp`,
//! `generation` (1 at create, bumped when anything but `metadata` and — for resources with a
//! status subresource — `status` changes) and `deletionTimestamp` (set by a delete while
//! finalizers remain; the object goes once an update empties them). A write that changes
//! nothing is a no-op: same resourceVersion, no watch event, as the API server does.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::Arc;

use serde_json::{Value, json};

use super::resources::Resource;
use super::status::ApiError;

/// What a change did to an object, as watch events name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeType {
    Added,
    Modified,
    Deleted,
}

/// One write, kept in the history.
#[derive(Debug, Clone)]
pub struct Change {
    pub rv: u64,
    pub resource: usize,
    pub namespace: String,
    pub name: String,
    pub kind: ChangeType,
    /// The object after the change (for a delete: its last state, at the delete's version).
    pub object: Value,
    /// The object before the change (`None` for a create).
    pub prev: Option<Value>,
}

/// The server's wall clock as an RFC 3339 timestamp (`creationTimestamp`, `deletionTimestamp`).
pub type Clock = Arc<dyn Fn() -> String + Send + Sync>;

/// The real clock, to the second as the API server writes timestamps.
pub fn system_clock() -> Clock {
    Arc::new(|| {
        jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string()
    })
}

/// How a patch body is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/strategic-merge-patch+json` and `application/apply-patch+yaml`, applied
    /// as merge patches (no list merge keys, no field ownership).
    MergeLike,
}

type Key = (usize, String, String);

/// A list's answer: the items, the resourceVersion it reflects and the continue token.
#[derive(Debug, Clone)]
pub struct Listed {
    pub items: Vec<Value>,
    pub rv: u64,
    pub continue_token: Option<String>,
}

pub struct Store {
    pub resources: Vec<Resource>,
    objects: BTreeMap<Key, Value>,
    rv: u64,
    history: VecDeque<Change>,
    capacity: usize,
    /// Watches and lists may start at any resourceVersion ≥ `floor`; older is `Expired`.
    floor: u64,
    uids: HashSet<String>,
    clock: Clock,
    /// Every change since the start, when auditing (tests); never compacted.
    audit: Option<Vec<Change>>,
}

fn meta(obj: &Value, field: &str) -> Option<String> {
    obj.get("metadata")?
        .get(field)?
        .as_str()
        .map(str::to_string)
}

fn set_meta(obj: &mut Value, field: &str, value: Value) {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    obj["metadata"][field] = value;
}

fn remove_meta(obj: &mut Value, field: &str) {
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove(field);
    }
}

/// The object without what does not count for `generation`.
fn spec_part(obj: &Value, status: bool) -> Value {
    let mut v = obj.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("metadata");
        if status {
            m.remove("status");
        }
    }
    v
}

/// Drops what the real server neither stores nor serves: an empty list of a built-in kind's
/// field that its Go type marks `omitempty`. Found so far (`tests/real_cluster/tas.rs`): a
/// pod's `spec.schedulingGates` once its last gate is removed is absent, not `[]`.
fn omit_empty(r: &Resource, obj: &mut Value) {
    if r.group.is_empty()
        && r.plural == "pods"
        && let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
        && spec
            .get("schedulingGates")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
    {
        spec.remove("schedulingGates");
    }
}

fn has_finalizers(obj: &Value) -> bool {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty())
}

impl Store {
    pub fn new(resources: Vec<Resource>, capacity: usize, clock: Clock) -> Store {
        Store {
            resources,
            objects: BTreeMap::new(),
            rv: 0,
            history: VecDeque::new(),
            capacity: capacity.max(1),
            floor: 0,
            uids: HashSet::new(),
            clock,
            audit: None,
        }
    }

    /// The latest resourceVersion.
    pub fn rv(&self) -> u64 {
        self.rv
    }

    /// The oldest resourceVersion a watch may start from.
    pub fn floor(&self) -> u64 {
        self.floor
    }

    pub fn set_clock(&mut self, clock: Clock) {
        self.clock = clock;
    }

    pub fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity.max(1);
        self.trim();
    }

    /// Keeps (or stops keeping) every change for [`Store::audit`].
    pub fn set_audit(&mut self, on: bool) {
        match (on, &self.audit) {
            (true, None) => self.audit = Some(Vec::new()),
            (false, _) => self.audit = None,
            _ => {}
        }
    }

    /// Every change since auditing started.
    pub fn audit(&self) -> &[Change] {
        self.audit.as_deref().unwrap_or_default()
    }

    /// Registers a resource (again: the same index), returning its index.
    pub fn register(&mut self, r: Resource) -> usize {
        if let Some(i) = self
            .resources
            .iter()
            .position(|x| x.group == r.group && x.version == r.version && x.plural == r.plural)
        {
            self.resources[i] = r;
            return i;
        }
        self.resources.push(r);
        self.resources.len() - 1
    }

    /// Drops the history: a watch or list from any earlier resourceVersion is now `Expired`.
    pub fn compact(&mut self) {
        self.history.clear();
        self.floor = self.rv;
    }

    fn trim(&mut self) {
        while self.history.len() > self.capacity {
            if let Some(c) = self.history.pop_front() {
                self.floor = c.rv;
            }
        }
    }

    fn key(&self, res: usize, ns: Option<&str>, name: &str) -> Key {
        let ns = if self.resources[res].namespaced {
            ns.unwrap_or_default()
        } else {
            ""
        };
        (res, ns.to_string(), name.to_string())
    }

    /// Bumps the counter, stamps the object and records the change.
    fn commit(&mut self, key: Key, kind: ChangeType, mut obj: Value, prev: Option<Value>) -> Value {
        self.rv += 1;
        set_meta(&mut obj, "resourceVersion", json!(self.rv.to_string()));
        if kind == ChangeType::Deleted {
            self.objects.remove(&key);
        } else {
            self.objects.insert(key.clone(), obj.clone());
        }
        let change = Change {
            rv: self.rv,
            resource: key.0,
            namespace: key.1,
            name: key.2,
            kind,
            object: obj.clone(),
            prev,
        };
        if let Some(audit) = &mut self.audit {
            audit.push(change.clone());
        }
        self.history.push_back(change);
        self.trim();
        obj
    }

    fn new_uid(&mut self, name: &str) -> String {
        // Deterministic for tests (`uid-<name>`), unique across re-creations.
        let mut uid = format!("uid-{name}");
        if self.uids.contains(&uid) {
            uid = format!("uid-{name}-{}", self.rv + 1);
        }
        self.uids.insert(uid.clone());
        uid
    }

    fn stamp_new(&mut self, res: usize, ns: Option<&str>, obj: &mut Value, name: &str) {
        let r = &self.resources[res];
        if obj.get("apiVersion").is_none_or(Value::is_null) {
            obj["apiVersion"] = json!(r.api_version());
        }
        if obj.get("kind").is_none_or(Value::is_null) {
            obj["kind"] = json!(r.kind);
        }
        set_meta(obj, "name", json!(name));
        if r.namespaced {
            set_meta(obj, "namespace", json!(ns.unwrap_or_default()));
        } else if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            // As the API server's `BeforeCreate`: a cluster-scoped object has no namespace
            // (kustomize's `namespace:` adds one to kinds it does not know).
            m.remove("namespace");
        }
        if meta(obj, "uid").is_none() {
            let uid = self.new_uid(name);
            set_meta(obj, "uid", json!(uid));
        }
        if meta(obj, "creationTimestamp").is_none() {
            set_meta(obj, "creationTimestamp", json!((self.clock)()));
        }
        if obj.pointer("/metadata/generation").is_none() {
            set_meta(obj, "generation", json!(1));
        }
    }

    /// Stores `obj` as it is (plus server-owned metadata it lacks), creating or replacing: how
    /// a test seeds the cluster or plays another actor's write. Watchers see ADDED or MODIFIED.
    pub fn put(&mut self, res: usize, ns: Option<&str>, mut obj: Value) -> Value {
        let name = meta(&obj, "name").unwrap_or_default();
        let key = self.key(res, ns, &name);
        let prev = self.objects.get(&key).cloned();
        if let Some(p) = &prev {
            for field in ["uid", "creationTimestamp"] {
                if meta(&obj, field).is_none()
                    && let Some(v) = p.pointer(&format!("/metadata/{field}"))
                {
                    set_meta(&mut obj, field, v.clone());
                }
            }
            let generation = p
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            let status = self.resources[res].status;
            let bumped = spec_part(p, status) != spec_part(&obj, status);
            set_meta(
                &mut obj,
                "generation",
                json!(generation + i64::from(bumped)),
            );
        } else {
            // Seeding names its objects' uids `uid-<name>` (as a test expects), unique or not.
            let uid = meta(&obj, "uid").unwrap_or_else(|| format!("uid-{name}"));
            self.uids.insert(uid.clone());
            set_meta(&mut obj, "uid", json!(uid));
        }
        self.stamp_new(res, ns, &mut obj, &name);
        let kind = if prev.is_some() {
            ChangeType::Modified
        } else {
            ChangeType::Added
        };
        self.commit(key, kind, obj, prev)
    }

    pub fn get(&self, res: usize, ns: Option<&str>, name: &str) -> Result<Value, ApiError> {
        self.objects
            .get(&self.key(res, ns, name))
            .cloned()
            .ok_or_else(|| ApiError::not_found(&self.resources[res], name))
    }

    /// Every object of `res` (in `ns`, or all), by namespace and name.
    pub fn objects(&self, res: usize, ns: Option<&str>) -> Vec<Value> {
        let mut out = Vec::new();
        self.visit(res, ns, |v| out.push(v.clone()));
        out
    }

    /// Shows `f` every object of `res` (in `ns`, or all), by namespace and name.
    pub fn visit(&self, res: usize, ns: Option<&str>, mut f: impl FnMut(&Value)) {
        let lo = (res, ns.unwrap_or_default().to_string(), String::new());
        self.objects
            .range(lo..)
            .take_while(|((r, n, _), _)| *r == res && ns.is_none_or(|ns| ns == n))
            .for_each(|(_, v)| f(v));
    }

    /// The objects of `res` (in `ns`) as they were at resourceVersion `at`.
    fn snapshot(
        &self,
        res: usize,
        ns: Option<&str>,
        at: u64,
    ) -> Result<BTreeMap<(String, String), Value>, ApiError> {
        if at < self.floor {
            return Err(ApiError::too_old(at, self.floor));
        }
        let mut out: BTreeMap<(String, String), Value> = self
            .objects
            .range((res, ns.unwrap_or_default().to_string(), String::new())..)
            .take_while(|((r, n, _), _)| *r == res && ns.is_none_or(|ns| ns == n))
            .map(|((_, n, name), v)| ((n.clone(), name.clone()), v.clone()))
            .collect();
        for c in self.history.iter().rev().take_while(|c| c.rv > at) {
            if c.resource != res || ns.is_some_and(|ns| ns != c.namespace) {
                continue;
            }
            let key = (c.namespace.clone(), c.name.clone());
            match (&c.kind, &c.prev) {
                (ChangeType::Added, _) | (_, None) => {
                    out.remove(&key);
                }
                (_, Some(prev)) => {
                    out.insert(key, prev.clone());
                }
            }
        }
        Ok(out)
    }

    /// LIST: at the latest resourceVersion, or exactly at `exact`; `limit` items a page, the
    /// next page from `continue_from` (a token from a previous page: the same snapshot).
    pub fn list(
        &self,
        res: usize,
        ns: Option<&str>,
        keep: &dyn Fn(&Value) -> bool,
        exact: Option<u64>,
        limit: Option<usize>,
        continue_from: Option<&str>,
    ) -> Result<Listed, ApiError> {
        let (at, after) = match continue_from {
            Some(token) => {
                let (at, ns, name) = decode_token(token)?;
                if at < self.floor {
                    return Err(ApiError::expired(
                        "The provided continue parameter is too old to display a consistent \
                         list result. You can start a new list without the continue parameter.",
                    ));
                }
                (at, Some((ns, name)))
            }
            None => (exact.unwrap_or(self.rv), None),
        };
        let snapshot = self.snapshot(res, ns, at)?;
        let mut items = Vec::new();
        let mut continue_token = None;
        let rest = match &after {
            Some(k) => snapshot.range::<(String, String), _>((
                std::ops::Bound::Excluded(k.clone()),
                std::ops::Bound::Unbounded,
            )),
            None => snapshot.range::<(String, String), _>(..),
        };
        let mut rest = rest.filter(|(_, v)| keep(v)).peekable();
        while let Some((k, v)) = rest.next() {
            items.push(v.clone());
            if limit.is_some_and(|l| l > 0 && items.len() >= l) && rest.peek().is_some() {
                continue_token = Some(encode_token(at, &k.0, &k.1));
                break;
            }
        }
        Ok(Listed {
            items,
            rv: at,
            continue_token,
        })
    }

    /// The changes after `cursor` (for resource `res`), or `Err(floor)` when the history no
    /// longer reaches back to it.
    pub fn changes_after(&self, res: usize, cursor: u64) -> Result<Vec<Change>, u64> {
        if cursor < self.floor {
            return Err(self.floor);
        }
        let start = self.history.partition_point(|c| c.rv <= cursor);
        Ok(self
            .history
            .range(start..)
            .filter(|c| c.resource == res)
            .cloned()
            .collect())
    }

    /// CREATE. `generateName` makes the name when there is none.
    pub fn create(
        &mut self,
        res: usize,
        ns: Option<&str>,
        mut obj: Value,
    ) -> Result<Value, ApiError> {
        let r = self.resources[res].clone();
        let name = match meta(&obj, "name").filter(|n| !n.is_empty()) {
            Some(n) => n,
            None => match meta(&obj, "generateName") {
                Some(prefix) => format!("{prefix}{}", suffix(self.rv + 1)),
                None => {
                    return Err(ApiError::invalid(
                        &r,
                        "",
                        "metadata.name: Required value: name or generateName is required",
                    ));
                }
            },
        };
        if let (true, Some(body_ns), Some(ns)) = (r.namespaced, meta(&obj, "namespace"), ns)
            && body_ns != ns
        {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        let key = self.key(res, ns, &name);
        if self.objects.contains_key(&key) {
            return Err(ApiError::already_exists(&r, &name));
        }
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "deletionTimestamp",
        ] {
            remove_meta(&mut obj, field);
        }
        if r.status
            && let Some(m) = obj.as_object_mut()
        {
            m.remove("status");
        }
        omit_empty(&r, &mut obj);
        self.stamp_new(res, ns, &mut obj, &name);
        Ok(self.commit(key, ChangeType::Added, obj, None))
    }

    /// UPDATE and PATCH: `change` makes the candidate from the stored object; then the
    /// resourceVersion precondition, the status subresource's rules, server-owned metadata,
    /// generation, and removal once a deleted object has no finalizers left.
    pub fn update(
        &mut self,
        res: usize,
        ns: Option<&str>,
        name: &str,
        status_write: bool,
        change: &dyn Fn(&Value) -> Result<Value, ApiError>,
    ) -> Result<Value, ApiError> {
        let r = self.resources[res].clone();
        let key = self.key(res, ns, name);
        let old = self
            .objects
            .get(&key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&r, name))?;
        let mut new = change(&old)?;
        if !new.is_object() {
            return Err(ApiError::bad_request("the object is not a JSON object"));
        }
        let old_rv = meta(&old, "resourceVersion");
        if let Some(rv) = meta(&new, "resourceVersion")
            && Some(&rv) != old_rv.as_ref()
        {
            return Err(ApiError::conflict(&r, name));
        }
        if r.status {
            let status = if status_write { &new } else { &old }
                .get("status")
                .cloned();
            if status_write {
                new = old.clone();
            }
            match status {
                Some(s) => new["status"] = s,
                None => {
                    if let Some(m) = new.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
        }
        for field in [
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "generation",
            "resourceVersion",
        ] {
            match old.pointer(&format!("/metadata/{field}")) {
                Some(v) => set_meta(&mut new, field, v.clone()),
                None => remove_meta(&mut new, field),
            }
        }
        for field in ["apiVersion", "kind"] {
            if let Some(v) = old.get(field) {
                new[field] = v.clone();
            }
        }
        omit_empty(&r, &mut new);
        if new == old {
            return Ok(old);
        }
        if spec_part(&old, r.status) != spec_part(&new, r.status) {
            let g = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            set_meta(&mut new, "generation", json!(g + 1));
        }
        if new.pointer("/metadata/deletionTimestamp").is_some() && !has_finalizers(&new) {
            return Ok(self.commit(key, ChangeType::Deleted, new, Some(old)));
        }
        Ok(self.commit(key, ChangeType::Modified, new, Some(old)))
    }

    /// DELETE, with the `preconditions` of DeleteOptions (`uid`, `resourceVersion`). An object
    /// with finalizers gets a `deletionTimestamp` and stays.
    pub fn delete(
        &mut self,
        res: usize,
        ns: Option<&str>,
        name: &str,
        preconditions: &Value,
    ) -> Result<Value, ApiError> {
        let r = self.resources[res].clone();
        let key = self.key(res, ns, name);
        let old = self
            .objects
            .get(&key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&r, name))?;
        for field in ["uid", "resourceVersion"] {
            if let Some(want) = preconditions.get(field).and_then(Value::as_str)
                && meta(&old, field).as_deref() != Some(want)
            {
                return Err(ApiError::conflict(&r, name));
            }
        }
        if has_finalizers(&old) {
            if old.pointer("/metadata/deletionTimestamp").is_some() {
                return Ok(old);
            }
            let mut new = old.clone();
            set_meta(&mut new, "deletionTimestamp", json!((self.clock)()));
            set_meta(&mut new, "deletionGracePeriodSeconds", json!(0));
            return Ok(self.commit(key, ChangeType::Modified, new, Some(old)));
        }
        Ok(self.commit(key, ChangeType::Deleted, old.clone(), Some(old)))
    }
}

/// Applies a patch body to an object.
pub fn apply_patch(
    kind: PatchKind,
    r: &Resource,
    name: &str,
    obj: &Value,
    body: &Value,
) -> Result<Value, ApiError> {
    let mut out = obj.clone();
    match kind {
        PatchKind::Merge | PatchKind::MergeLike => {
            // The precondition is the body's resourceVersion, not the merged result's.
            remove_meta(&mut out, "resourceVersion");
            json_patch::merge(&mut out, body);
            if meta(&out, "resourceVersion").is_none()
                && let Some(rv) = meta(obj, "resourceVersion")
            {
                set_meta(&mut out, "resourceVersion", json!(rv));
            }
        }
        PatchKind::Json => {
            let ops: json_patch::Patch = serde_json::from_value(body.clone())
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            json_patch::patch(&mut out, &ops)
                .map_err(|e| ApiError::invalid(r, name, e.to_string()))?;
        }
    }
    Ok(out)
}

/// `generateName`'s five characters, from the resourceVersion (deterministic, distinct).
fn suffix(n: u64) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut x = n.wrapping_mul(2_654_435_761) % 14_348_907; // 27^5
    (0..5)
        .map(|_| {
            let c = ALPHABET[(x % 27) as usize] as char;
            x /= 27;
            c
        })
        .collect()
}

fn encode_token(rv: u64, ns: &str, name: &str) -> String {
    use base64::Engine;
    let raw = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{ns}/{name}")});
    base64::engine::general_purpose::STANDARD.encode(raw.to_string())
}

fn decode_token(token: &str) -> Result<(u64, String, String), ApiError> {
    use base64::Engine;
    let bad = || ApiError::bad_request(format!("continue key is not valid: {token}"));
    let raw = base64::engine::general_purpose::STANDARD
        .decode(token)
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let rv = v["rv"].as_u64().ok_or_else(bad)?;
    let (ns, name) = v["start"]
        .as_str()
        .and_then(|s| s.split_once('/'))
        .ok_or_else(bad)?;
    Ok((rv, ns.to_string(), name.to_string()))
}
