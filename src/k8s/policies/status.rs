//! A QueuePolicy's status as operators read it: conditions `Loaded` and `Ready` (their
//! transition times kept while their status holds), the live digest and since when, how many
//! ClusterQueues it applies to, calls, fallbacks by reason and extra victims of its live
//! module, and for a shadow its agreement with the policy that decides and its latest
//! differing decisions. Written with a merge patch to `/status`, only when it changed.

use std::collections::BTreeMap;

use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::core::DynamicObject;

use super::POLICY_STATUS_MANAGER;
use crate::api::Condition;
use crate::api::policy::{
    LOADED, PolicyMode, QueuePolicy, QueuePolicyStatus, READY, ShadowDifference, ShadowStatus,
};
use crate::k8s::schema::kinds::KueueKind;
use crate::k8s::status::conditions;
use crate::policy::shadow::{Figures, ShadowLog};
use crate::wasm::PolicyObjects;
use crate::wasm::objects::ObjectStatus;

/// What a pass of status writes reads once for every object.
pub struct Reads<'a> {
    /// What the plugin host says of each object.
    pub known: BTreeMap<String, ObjectStatus>,
    /// The labels of every ClusterQueue.
    pub cluster_queues: Vec<BTreeMap<String, String>>,
    /// Every shadow's figures, and the log they come from (its latest differences).
    pub figures: BTreeMap<String, Figures>,
    pub shadows: &'a ShadowLog,
    pub now: jiff::Timestamp,
}

/// The status `policy` should have now. `None` when the host does not know the object yet.
pub fn build(policy: &QueuePolicy, reads: &Reads<'_>) -> Option<QueuePolicyStatus> {
    let now = reads.now;
    let name = policy.metadata.name.as_deref()?;
    let state = reads.known.get(name)?;
    let old = policy.status.clone().unwrap_or_default();
    let mut conditions_now = old.conditions.clone();
    for (type_, verdict) in [(LOADED, &state.loaded), (READY, &state.ready)] {
        let mut c: Condition = conditions::condition(
            type_,
            verdict.ok,
            verdict.reason,
            &verdict.message,
            now.as_millisecond(),
        );
        c.observed_generation = state.generation;
        conditions::set(&mut conditions_now, c);
    }
    let selector = policy.spec.cluster_queue_selector.as_ref();
    let mut status = QueuePolicyStatus {
        conditions: conditions_now,
        observed_generation: state.generation,
        cluster_queues: reads
            .cluster_queues
            .iter()
            .filter(|labels| crate::wasm::objects::selects(selector, labels))
            .count() as u32,
        ..QueuePolicyStatus::default()
    };
    if let Some((plugin, digest, since)) = &state.live {
        // The time it went live in this process; kept as written while the module is the same.
        status.live_since = if old.digest.as_deref() == Some(digest.as_str()) {
            old.live_since.clone()
        } else {
            None
        }
        .or_else(|| Some(since.to_string()));
        status.digest = Some(digest.clone());
        let s = plugin.status();
        status.calls = s.calls;
        status.fallbacks = s
            .failures
            .iter()
            .map(|(reason, n)| (reason.to_string(), *n))
            .collect();
        if s.over_budget > 0 {
            status.fallbacks.insert("budget".into(), s.over_budget);
        }
        status.extra_victims = s.extra_victims;
    }
    if policy.spec.mode == PolicyMode::Shadow {
        let figures = reads.figures.get(name).cloned().unwrap_or_default();
        status.shadow = Some(shadow_status(&figures, reads.shadows, name));
    }
    Some(status)
}

/// A shadow's figures as its status says them.
pub fn shadow_status(f: &Figures, shadows: &ShadowLog, name: &str) -> ShadowStatus {
    ShadowStatus {
        decisions: f.decisions,
        agree: f.agree,
        differ: f.differ,
        invalid: f.invalid,
        fallback: f.fallback,
        skipped: f.skipped,
        agreement: agreement(f.agree, f.decisions),
        recent_differences: shadows
            .recent(name)
            .into_iter()
            .map(|(at, d)| ShadowDifference {
                time: jiff::Timestamp::try_from(at).ok().map(|t| t.to_string()),
                workload: d.workload,
                enforced: d.enforced,
                shadow: d.shadow,
            })
            .collect(),
    }
}

/// `agree / decisions` with one decimal (`99.5%`), empty before the first decision.
pub fn agreement(agree: u64, decisions: u64) -> String {
    if decisions == 0 {
        return String::new();
    }
    format!("{:.1}%", agree as f64 * 100.0 / decisions as f64)
}

/// Writes the status of every object in `listed` whose status changed.
pub async fn write(
    client: &kube::Client,
    listed: &[QueuePolicy],
    objects: &PolicyObjects,
    shadows: &ShadowLog,
) -> anyhow::Result<()> {
    if listed.is_empty() {
        return Ok(());
    }
    let queues: Api<DynamicObject> =
        Api::all_with(client.clone(), &KueueKind::ClusterQueue.api_resource());
    let reads = Reads {
        cluster_queues: queues
            .list_metadata(&ListParams::default())
            .await?
            .items
            .into_iter()
            .map(|cq| cq.metadata.labels.unwrap_or_default())
            .collect(),
        known: objects.statuses(),
        figures: shadows.figures(),
        shadows,
        now: jiff::Timestamp::now(),
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &super::resource());
    for policy in listed {
        let Some(status) = build(policy, &reads) else {
            continue;
        };
        if policy.status.as_ref() == Some(&status) {
            continue;
        }
        let name = policy.metadata.name.as_deref().unwrap_or_default();
        // A merge patch keeps what it does not name: fields gone since (a shadow's figures
        // after promotion, a digest no longer live) are written as null.
        let mut new = serde_json::to_value(&status)?;
        if let (Some(old), Some(new)) = (
            serde_json::to_value(&policy.status)?.as_object(),
            new.as_object_mut(),
        ) {
            for key in old.keys() {
                new.entry(key.clone()).or_insert(serde_json::Value::Null);
            }
        }
        let body = serde_json::json!({ "status": new });
        if let Err(e) = api
            .patch_status(
                name,
                &PatchParams {
                    field_manager: Some(POLICY_STATUS_MANAGER.into()),
                    ..PatchParams::default()
                },
                &Patch::Merge(&body),
            )
            .await
        {
            tracing::warn!(policy = name, error = %e, "writing QueuePolicy status failed");
        }
    }
    Ok(())
}
