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
            return SchedulingSettings::default();
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
        }
    }

    pub fn fair_sharing_enabled(&self) -> bool {
        self.fair_sharing.is_some()
    }
}
