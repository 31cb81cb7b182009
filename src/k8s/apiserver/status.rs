//! Failures as the API server reports them: a `Status` object (`kind: Status`, `code`,
//! `reason`, `message`, `details`) with the HTTP status of the same code.

use serde_json::{Value, json};

use super::resources::Resource;

/// A refused request.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: String,
    pub message: String,
    /// `details`, when an object is named.
    pub details: Option<Box<Details>>,
}

/// A `Status`'s `details`: the object's name, its resource's group and plural (`kind`).
#[derive(Debug, Clone, PartialEq)]
pub struct Details {
    pub name: String,
    pub group: String,
    pub kind: String,
}

impl ApiError {
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason: reason.into(),
            message: message.into(),
            details: None,
        }
    }

    fn about(mut self, r: &Resource, name: &str) -> Self {
        self.details = Some(Box::new(Details {
            name: name.into(),
            group: r.group.clone(),
            kind: r.plural.clone(),
        }));
        self
    }

    pub fn not_found(r: &Resource, name: &str) -> Self {
        ApiError::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", r.qualified()),
        )
        .about(r, name)
    }

    /// A path naming no served resource.
    pub fn no_route() -> Self {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    pub fn already_exists(r: &Resource, name: &str) -> Self {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", r.qualified()),
        )
        .about(r, name)
    }

    /// A stale `resourceVersion` or a failed precondition.
    pub fn conflict(r: &Resource, name: &str) -> Self {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; \
                 please apply your changes to the latest version and try again",
                r.qualified()
            ),
        )
        .about(r, name)
    }

    pub fn invalid(r: &Resource, name: &str, message: impl Into<String>) -> Self {
        ApiError::new(422, "Invalid", message).about(r, name)
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", message)
    }

    /// 410 `Expired` (a continue token older than the history kept).
    pub fn expired(message: impl Into<String>) -> Self {
        ApiError::new(410, "Expired", message)
    }

    /// A resourceVersion (of a list or a watch) older than the history kept, which starts at
    /// `floor`.
    pub fn too_old(requested: u64, floor: u64) -> Self {
        ApiError::expired(format!("too old resource version: {requested} ({floor})"))
    }

    pub fn internal(message: impl Into<String>) -> Self {
        ApiError::new(500, "InternalError", message)
    }

    /// An error injected by a test: the reason the API server gives that code.
    pub fn injected(code: u16) -> Self {
        let reason = match code {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            409 => "Conflict",
            410 => "Expired",
            422 => "Invalid",
            429 => "TooManyRequests",
            504 => "Timeout",
            503 => "ServiceUnavailable",
            _ => "InternalError",
        };
        ApiError::new(code, reason, "injected failure")
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": self.message, "reason": self.reason, "code": self.code,
        });
        if let Some(d) = &self.details {
            status["details"] = json!({"name": d.name, "group": d.group, "kind": d.kind});
        }
        status
    }
}
