//! `admission.k8s.io/v1` AdmissionReview: the request the API server sends and the response
//! wasq answers with (the request's uid echoed, `allowed`, a `status` when denied, a base64
//! JSON Patch when mutating, and warnings).

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `apiVersion` of every review wasq reads and writes.
pub const API_VERSION: &str = "admission.k8s.io/v1";

/// The envelope, both ways.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionReview {
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<AdmissionRequest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<AdmissionResponse>,
}

/// Group, version and kind (or resource) of the object under review.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupVersionKind {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
}

/// What the API server asks about. Fields wasq does not read are ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest {
    pub uid: String,
    #[serde(default)]
    pub kind: GroupVersionKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_resource: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_object: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
}

impl AdmissionRequest {
    pub fn is_create(&self) -> bool {
        self.operation == "CREATE"
    }

    pub fn is_update(&self) -> bool {
        self.operation == "UPDATE"
    }
}

/// The `status` of a denied request (a `metav1.Status` subset).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    pub code: u16,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    pub message: String,
}

/// wasq's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    pub uid: String,
    pub allowed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<String>,
    /// Base64 of the JSON Patch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// What a webhook decided, before it is tied to a request's uid.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// `Some` denies with this status.
    pub denied: Option<Status>,
    /// JSON Patch operations (mutating webhooks only; empty = no change).
    pub patch: Vec<Value>,
    pub warnings: Vec<String>,
}

impl Verdict {
    pub fn allow() -> Verdict {
        Verdict::default()
    }

    pub fn patch(ops: Vec<Value>) -> Verdict {
        Verdict {
            patch: ops,
            ..Verdict::default()
        }
    }

    /// Refused as invalid (422), the API server's answer to an object that breaks a rule.
    pub fn invalid(message: impl Into<String>) -> Verdict {
        Verdict::deny(422, "Invalid", message)
    }

    pub fn deny(code: u16, reason: &str, message: impl Into<String>) -> Verdict {
        Verdict {
            denied: Some(Status {
                code,
                reason: reason.to_string(),
                message: message.into(),
            }),
            ..Verdict::default()
        }
    }

    pub fn with_warning(mut self, warning: impl Into<String>) -> Verdict {
        self.warnings.push(warning.into());
        self
    }

    /// The response to the request with this `uid`.
    pub fn respond(self, uid: &str) -> AdmissionResponse {
        let allowed = self.denied.is_none();
        let patch = (allowed && !self.patch.is_empty()).then(|| {
            base64::engine::general_purpose::STANDARD.encode(Value::Array(self.patch).to_string())
        });
        AdmissionResponse {
            uid: uid.to_string(),
            allowed,
            status: self.denied,
            patch_type: patch.as_ref().map(|_| "JSONPatch".to_string()),
            patch,
            warnings: self.warnings,
        }
    }
}

/// Wraps a response in the review envelope.
pub fn review_of(response: AdmissionResponse) -> AdmissionReview {
    AdmissionReview {
        api_version: API_VERSION.into(),
        kind: "AdmissionReview".into(),
        request: None,
        response: Some(response),
    }
}

/// Decodes the JSON Patch of a response (tests and logs).
pub fn decoded_patch(response: &AdmissionResponse) -> Option<Value> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(response.patch.as_deref()?)
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_response_echoes_the_uid_and_encodes_the_patch_as_base64_json_patch() {
        let ops = vec![json!({"op": "add", "path": "/spec/suspend", "value": true})];
        let r = Verdict::patch(ops.clone()).respond("abc-123");
        let text = serde_json::to_value(review_of(r.clone())).unwrap();
        assert_eq!(text["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(text["kind"], "AdmissionReview");
        assert_eq!(text["response"]["uid"], "abc-123");
        assert_eq!(text["response"]["allowed"], true);
        assert_eq!(text["response"]["patchType"], "JSONPatch");
        assert_eq!(
            text["response"]["patch"],
            "W3sib3AiOiJhZGQiLCJwYXRoIjoiL3NwZWMvc3VzcGVuZCIsInZhbHVlIjp0cnVlfV0="
        );
        assert_eq!(decoded_patch(&r), Some(Value::Array(ops)));
        assert!(text["response"].get("status").is_none());
    }

    #[test]
    fn a_denial_carries_code_and_message_and_no_patch() {
        let v = Verdict {
            patch: vec![json!({"op": "add", "path": "/x", "value": 1})],
            ..Verdict::invalid("spec.x: bad")
        }
        .with_warning("careful");
        let r = serde_json::to_value(v.respond("u")).unwrap();
        assert_eq!(
            r,
            json!({"uid": "u", "allowed": false, "warnings": ["careful"],
                   "status": {"code": 422, "reason": "Invalid", "message": "spec.x: bad"}})
        );
    }

    #[test]
    fn an_allowed_review_without_changes_has_no_patch_fields() {
        let r = serde_json::to_value(Verdict::allow().respond("u")).unwrap();
        assert_eq!(r, json!({"uid": "u", "allowed": true}));
    }
}
