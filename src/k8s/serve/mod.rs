//! What this process serves: `/metrics`, `/healthz`, `/readyz` and Kueue's pending-workloads
//! paths ([`http`], with [`metrics`] and `visibility`), the visibility API behind the
//! aggregation layer ([`aggregated`]) and the admission webhooks ([`webhook`]). Every endpoint
//! answers from [`Shared`], which the controller publishes after each pass; none calls into the
//! controller.

use std::sync::Arc;

pub mod aggregated;
pub mod dashboard;
pub mod http;
pub mod metrics;
mod plugin_metrics;
pub(crate) mod visibility;
pub mod webhook;

use visibility::Snapshot;

/// What the HTTP endpoints read.
#[derive(Debug, Default)]
pub struct Shared {
    /// Every watched source was listed and a pass ran.
    pub ready: bool,
    pub visibility: Snapshot,
    /// The webhooks are starting (certificate, CA bundle): not ready yet.
    pub webhooks_pending: bool,
    /// This replica schedules (it holds the Lease, or runs without election). A standby
    /// replica keeps its mirror and the webhooks' view current, and is ready once every source
    /// is listed, so that the webhooks are answered while the leader changes.
    pub leading: bool,
    /// What the admission webhooks read, refreshed after each pass.
    pub webhook: Arc<webhook::View>,
    /// What the shadow policies decided (`/apis/visibility.wasq.dev/v1alpha1/shadows`).
    pub shadows: Option<Arc<crate::policy::shadow::ShadowLog>>,
}
