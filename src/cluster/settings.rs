//! The scheduling settings of Kueue's controller `Configuration`, resolved against the
//! cluster's interned names: whether fair sharing is on (and its preemption strategies), and
//! admission fair sharing's clock and weights.

use crate::api::config::{Configuration, PreemptionStrategy};
use crate::quota::{Names, ResourceId};

use super::Millis;

/// What the configuration turns on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchedulingSettings {
    /// Fair sharing (`fairSharing` present): its preemption strategies, Kueue's default applied.
    pub fair_sharing: Option<Vec<PreemptionStrategy>>,
    /// Admission fair sharing (`admissionFairSharing` present).
    pub admission_fair_sharing: Option<AdmissionFairSharing>,
    /// `waitForPodsReady` (on by default, as in Kueue v1beta2).
    pub wait_for_pods_ready: Option<WaitForPodsReady>,
}

/// `waitForPodsReady`, resolved with Kueue's v1beta2 defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitForPodsReady {
    pub timeout: Millis,
    pub block_admission: bool,
    pub recovery_timeout: Millis,
    /// Order a requeued workload by its eviction time (else by its creation time).
    pub by_eviction_time: bool,
    pub backoff_limit_count: Option<i32>,
    pub backoff_base_seconds: i32,
    pub backoff_max_seconds: i32,
}

impl Default for WaitForPodsReady {
    fn default() -> Self {
        WaitForPodsReady {
            timeout: crate::api::config::DEFAULT_PODS_READY_TIMEOUT_MS,
            block_admission: false,
            recovery_timeout: crate::api::config::DEFAULT_PODS_READY_TIMEOUT_MS,
            by_eviction_time: true,
            backoff_limit_count: None,
            backoff_base_seconds: 60,
            backoff_max_seconds: 3600,
        }
    }
}

impl WaitForPodsReady {
    /// Kueue v1beta2's `waitForPodsReady` with what `c` sets; `None` when it is turned off.
    pub fn from_config(c: Option<&crate::api::config::WaitForPodsReadyConfig>) -> Option<Self> {
        let d = WaitForPodsReady::default();
        let Some(c) = c else {
            return Some(d);
        };
        if c.enable == Some(false) {
            return None;
        }
        let ms = |v: &Option<String>| {
            v.as_deref()
                .and_then(|s| crate::api::duration::parse_millis(s).ok())
        };
        let timeout = ms(&c.timeout).filter(|&t| t > 0).unwrap_or(d.timeout);
        let r = c.requeuing_strategy.clone().unwrap_or_default();
        Some(WaitForPodsReady {
            timeout,
            block_admission: c.block_admission.unwrap_or(false),
            recovery_timeout: ms(&c.recovery_timeout).unwrap_or(timeout),
            by_eviction_time: r.timestamp.unwrap_or_default()
                == crate::api::config::RequeuingTimestamp::Eviction,
            backoff_limit_count: r.backoff_limit_count,
            backoff_base_seconds: r.backoff_base_seconds.unwrap_or(d.backoff_base_seconds),
            backoff_max_seconds: r.backoff_max_seconds.unwrap_or(d.backoff_max_seconds),
        })
    }
}

/// `admissionFairSharing`, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionFairSharing {
    pub half_life: Millis,
    pub sampling_interval: Millis,
    /// Weight per resource, indexed by [`ResourceId`]; 1 for resources the file does not name.
    pub resource_weights: Vec<f64>,
}

impl AdmissionFairSharing {
    pub fn weight(&self, r: ResourceId) -> f64 {
        self.resource_weights.get(r.index()).copied().unwrap_or(1.0)
    }
}

impl SchedulingSettings {
    pub fn from_configuration(c: Option<&Configuration>, names: &Names) -> SchedulingSettings {
        let Some(c) = c else {
            return SchedulingSettings {
                wait_for_pods_ready: WaitForPodsReady::from_config(None),
                ..SchedulingSettings::default()
            };
        };
        let fair_sharing = c
            .fair_sharing_enabled()
            .then(|| c.fair_sharing.as_ref().map(|fs| fs.strategies()))
            .flatten();
        let admission_fair_sharing = c.admission_fair_sharing.as_ref().map(|afs| {
            let resource_weights = names
                .resources()
                .map(|(_, name)| afs.resource_weights.get(name).copied().unwrap_or(1.0))
                .collect();
            AdmissionFairSharing {
                half_life: afs.half_life_ms(),
                sampling_interval: afs.sampling_ms(),
                resource_weights,
            }
        });
        SchedulingSettings {
            fair_sharing,
            admission_fair_sharing,
            wait_for_pods_ready: WaitForPodsReady::from_config(c.wait_for_pods_ready.as_ref()),
        }
    }

    pub fn fair_sharing_enabled(&self) -> bool {
        self.fair_sharing.is_some()
    }
}
