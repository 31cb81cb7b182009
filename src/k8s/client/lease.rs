//! Leader election through a `coordination.k8s.io/v1` Lease, so that two replicas never both
//! schedule: a replica acquires the Lease when it is free or expired, renews it while it runs,
//! and stops (the process exits) if it cannot renew before the Lease expires.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};

use crate::k8s::Error;

/// A Lease held under one identity.
pub struct LeaseLock {
    api: Api<Lease>,
    name: String,
    identity: String,
    duration_seconds: i32,
}

impl LeaseLock {
    pub fn new(
        client: kube::Client,
        namespace: &str,
        name: &str,
        identity: &str,
        duration_seconds: i32,
    ) -> LeaseLock {
        LeaseLock {
            api: Api::namespaced(client, namespace),
            name: name.into(),
            identity: identity.into(),
            duration_seconds,
        }
    }

    fn error(&self, message: impl Into<String>) -> Error {
        Error::Lease {
            lease: self.name.clone(),
            message: message.into(),
        }
    }

    /// Acquires or renews the Lease at `now`. `Ok(true)`: this replica leads until
    /// `now + duration`; `Ok(false)`: another replica holds it (or won a race for it).
    pub async fn try_acquire_or_renew(&self, now: jiff::Timestamp) -> Result<bool, Error> {
        let current = match self.api.get_opt(&self.name).await? {
            Some(l) => l,
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.name.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(LeaseSpec {
                        holder_identity: Some(self.identity.clone()),
                        lease_duration_seconds: Some(self.duration_seconds),
                        acquire_time: Some(MicroTime(now)),
                        renew_time: Some(MicroTime(now)),
                        lease_transitions: Some(0),
                        ..LeaseSpec::default()
                    }),
                };
                return match self.api.create(&PostParams::default(), &lease).await {
                    Ok(_) => Ok(true),
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                    Err(e) => Err(e.into()),
                };
            }
        };
        let spec = current.spec.clone().unwrap_or_default();
        let mine = spec.holder_identity.as_deref() == Some(self.identity.as_str());
        let expires = spec.renew_time.as_ref().map(|t| {
            t.0 + jiff::SignedDuration::from_secs(i64::from(
                spec.lease_duration_seconds.unwrap_or(self.duration_seconds),
            ))
        });
        let held_by_other = !mine
            && spec
                .holder_identity
                .as_deref()
                .is_some_and(|h| !h.is_empty());
        if held_by_other && expires.is_some_and(|e| e > now) {
            return Ok(false);
        }
        let mut lease = current;
        let s = lease.spec.get_or_insert_with(LeaseSpec::default);
        if !mine {
            s.holder_identity = Some(self.identity.clone());
            s.acquire_time = Some(MicroTime(now));
            s.lease_transitions = Some(s.lease_transitions.unwrap_or(0) + 1);
        }
        s.lease_duration_seconds = Some(self.duration_seconds);
        s.renew_time = Some(MicroTime(now));
        // `replace` carries the resourceVersion read above: a concurrent change is a conflict.
        match self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Blocks until this replica leads.
    pub async fn acquire(&self, retry: std::time::Duration) {
        loop {
            match self.try_acquire_or_renew(jiff::Timestamp::now()).await {
                Ok(true) => {
                    tracing::info!(lease = %self.name, identity = %self.identity, "became the leader");
                    return;
                }
                Ok(false) => tracing::debug!(lease = %self.name, "another replica leads"),
                Err(e) => tracing::warn!(error = %e, "cannot read the leader lease"),
            }
            tokio::time::sleep(retry).await;
        }
    }

    /// Renews every `period`; returns (with an error) once leadership is lost, that is when the
    /// Lease could not be renewed for a whole lease duration or another replica took it.
    pub async fn keep(&self, period: std::time::Duration) -> Error {
        let mut last_renewed = std::time::Instant::now();
        let duration = std::time::Duration::from_secs(self.duration_seconds.max(1) as u64);
        loop {
            tokio::time::sleep(period).await;
            match self.try_acquire_or_renew(jiff::Timestamp::now()).await {
                Ok(true) => last_renewed = std::time::Instant::now(),
                Ok(false) => return self.error("taken by another replica"),
                Err(e) => tracing::warn!(error = %e, "cannot renew the leader lease"),
            }
            if last_renewed.elapsed() >= duration {
                return self.error("not renewed within its duration");
            }
        }
    }
}
