//! A Workload and the Events regarding it, read back for `describe workload` and `explain`:
//! the Events (`events.k8s.io/v1`) selected by the API server on `regarding.kind`,
//! `regarding.name` and `regarding.uid` (field selectors every API server serves for Events)
//! and checked again here, oldest first, with the policies wasq's annotations name
//! ([`decided_by`]). Events Kueue (or any recorder through `core/v1`) wrote read the same:
//! their deprecated fields stand in for the missing ones.

use anyhow::Context;
use kube::api::{Api, DynamicObject, ListParams};
use serde_json::Value;

use super::list::{str_at, timestamp};
use crate::k8s::client::events::decided_by;
use crate::k8s::schema::kinds::KueueKind;

/// Workload `namespace/name` as stored; kubectl's message when there is none.
pub(super) async fn workload(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> anyhow::Result<Value> {
    let api: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        namespace,
        &KueueKind::Workload.api_resource(),
    );
    match api.get_opt(name).await {
        Ok(Some(o)) => Ok(serde_json::to_value(o)?),
        Ok(None) => anyhow::bail!(
            "Error from server (NotFound): workloads.{} \"{name}\" not found",
            crate::api::GROUP
        ),
        Err(e) => Err(e).with_context(|| format!("reading workload {namespace}/{name}")),
    }
}

/// One Event regarding the Workload.
#[derive(Debug, Clone)]
pub(super) struct Recorded {
    /// When it first happened (`eventTime`, else `deprecatedFirstTimestamp`, else the object's
    /// creation).
    pub first: Option<jiff::Timestamp>,
    /// When it last happened, for a series (`series.lastObservedTime`, else
    /// `deprecatedLastTimestamp`).
    pub last: Option<jiff::Timestamp>,
    /// How many times (1 unless a series).
    pub count: i64,
    pub warning: bool,
    pub reason: String,
    /// `reportingController`, else `deprecatedSource.component`.
    pub from: String,
    pub note: String,
    /// wasq's annotations, by key (empty on Events wasq did not annotate).
    pub decided_by: std::collections::BTreeMap<String, String>,
    /// The Event as stored.
    pub object: Value,
}

impl Recorded {
    pub(super) fn of(object: Value) -> Recorded {
        let time = |pointer: &str| timestamp(object.pointer(pointer));
        let first = time("/eventTime")
            .or_else(|| time("/deprecatedFirstTimestamp"))
            .or_else(|| time("/metadata/creationTimestamp"));
        let last = time("/series/lastObservedTime").or_else(|| time("/deprecatedLastTimestamp"));
        let count = object
            .pointer("/series/count")
            .or_else(|| object.pointer("/deprecatedCount"))
            .and_then(Value::as_i64)
            .unwrap_or(1)
            .max(1);
        let from = match str_at(&object, "/reportingController") {
            "" => str_at(&object, "/deprecatedSource/component"),
            c => c,
        }
        .to_string();
        let decided_by = object
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .map(|a| {
                a.iter()
                    .filter(|(k, _)| k.starts_with(decided_by::PREFIX))
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        Recorded {
            first,
            last,
            count,
            warning: str_at(&object, "/type") == "Warning",
            reason: str_at(&object, "/reason").to_string(),
            from,
            note: str_at(&object, "/note").to_string(),
            decided_by,
            object,
        }
    }

    /// The annotation `key`, when present.
    pub fn policy(&self, key: &str) -> Option<&str> {
        self.decided_by.get(key).map(String::as_str)
    }

    /// What wasq's annotations say, for a person: `ordered by NAME@DIGEST, decided by …,
    /// placed by …` (a reservation), `preempted by NS/NAME, decided by …` (a preemption),
    /// `decided by …` (a wait); empty for an Event without them.
    pub fn policies(&self) -> String {
        let mut parts = Vec::new();
        if let Some(p) = self.policy(decided_by::PREEMPTOR) {
            parts.push(format!("preempted by {p}"));
        }
        if let Some(p) = self.policy(decided_by::ORDERING) {
            parts.push(format!("ordered by {p}"));
        }
        for key in [decided_by::FLAVOR_ASSIGNMENT, decided_by::PREEMPTION] {
            if let Some(p) = self.policy(key) {
                parts.push(format!("decided by {p}"));
            }
        }
        if let Some(p) = self.policy(decided_by::PLACEMENT) {
            parts.push(format!("placed by {p}"));
        }
        parts.join(", ")
    }
}

/// The Events regarding `workload`, oldest first (by first time, then by resourceVersion
/// where it is a number, as the API server's are).
pub(super) async fn events(
    client: &kube::Client,
    workload: &Value,
) -> anyhow::Result<Vec<Recorded>> {
    let namespace = str_at(workload, "/metadata/namespace");
    let name = str_at(workload, "/metadata/name");
    let uid = str_at(workload, "/metadata/uid");
    let mut fields = format!("regarding.kind=Workload,regarding.name={name}");
    if !uid.is_empty() {
        fields.push_str(&format!(",regarding.uid={uid}"));
    }
    let api: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), namespace);
    let list = api
        .list(&ListParams::default().fields(&fields))
        .await
        .with_context(|| format!("listing the events of workload {namespace}/{name}"))?;
    let mut events: Vec<Recorded> = list
        .items
        .into_iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        // Checked again: a server (or a double) that ignored a selector shows no stranger's.
        .filter(|e| {
            str_at(e, "/regarding/kind") == "Workload"
                && str_at(e, "/regarding/name") == name
                && (uid.is_empty() || str_at(e, "/regarding/uid") == uid)
        })
        .map(Recorded::of)
        .collect();
    let version = |r: &Recorded| {
        str_at(&r.object, "/metadata/resourceVersion")
            .parse::<u64>()
            .ok()
    };
    events.sort_by_key(|r| (r.first, version(r)));
    Ok(events)
}
