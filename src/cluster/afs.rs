//! Admission fair sharing (Kueue's KEP-4136): per LocalQueue, the resources it consumed,
//! decayed with a half-life and sampled on its own clock, plus an entry penalty for
//! each admission since the last sample. The core owns this bookkeeping; ordering policies
//! read it ([`LqUsage::weighted`], or the raw figures) and never change it.
//!
//! Kueue: every `usageSamplingInterval` the LocalQueue controller sets
//! `consumed = consumed·(1−α) + admittedNow·α` with `α = 1 − 0.5^(elapsed/halfLife)` (α = 0 when
//! the half-life is 0); each admission adds `requests·α(sampling, halfLife)` as a penalty, which
//! the next sample folds into the consumed resources (where it decays like the rest). A LocalQueue's usage is
//! `Σ_r weight_r·(consumed_r + penalty_r) / lqWeight` (+∞ when the weight is ≤ 0), resources in
//! units (1 CPU = 1), as Kueue's `AsApproximateFloat64`.
//!
//! The first sample is taken at the first scheduling cycle; later ones every interval after it,
//! whatever the scheduler does (`Scheduler::sample_local_queue_usage_until`, called by the
//! simulator before its clock moves and by the controller every pass). Usage only changes at
//! events, and samples of an unchanged usage at equal intervals decay as one sample over their
//! whole span (`(1−α)ⁿ = 0.5^(n·interval/halfLife)`), so the last sample before each event
//! stands for all of them, with `elapsed` the time since the previous one.

use super::{AdmissionFairSharing, LqId, Millis};
use crate::quota::ResourceId;

/// Decayed usage per LocalQueue, indexed by [`LqId`] then [`ResourceId`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LqUsage {
    consumed: Vec<Vec<f64>>,
    penalty: Vec<Vec<f64>>,
    last_sample: Option<Millis>,
    /// What changed since the last [`LqUsage::take_changed`] (orderings that read it re-key
    /// the workloads of those LocalQueues).
    changed: Changed,
}

/// LocalQueues whose usage changed.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Changed {
    #[default]
    Nothing,
    /// These LocalQueues (an admission's penalty).
    Some(Vec<LqId>),
    /// Every LocalQueue (a sample, a seed, a remap).
    All,
}

impl Changed {
    pub fn includes(&self, lq: LqId) -> bool {
        match self {
            Changed::Nothing => false,
            Changed::Some(lqs) => lqs.contains(&lq),
            Changed::All => true,
        }
    }

    fn add(&mut self, lq: LqId) {
        match self {
            Changed::Nothing => *self = Changed::Some(vec![lq]),
            Changed::Some(lqs) if !lqs.contains(&lq) => lqs.push(lq),
            Changed::Some(_) | Changed::All => {}
        }
    }
}

fn alpha(elapsed: Millis, half_life: Millis) -> f64 {
    if half_life <= 0 {
        return 0.0;
    }
    1.0 - 0.5f64.powf(elapsed as f64 / half_life as f64)
}

fn slot(table: &mut Vec<Vec<f64>>, lq: LqId, r: ResourceId) -> &mut f64 {
    if table.len() <= lq.index() {
        table.resize(lq.index() + 1, Vec::new());
    }
    let row = &mut table[lq.index()];
    if row.len() <= r.index() {
        row.resize(r.index() + 1, 0.0);
    }
    &mut row[r.index()]
}

impl LqUsage {
    /// What changed since the previous call.
    pub fn take_changed(&mut self) -> Changed {
        std::mem::take(&mut self.changed)
    }

    /// When the last sample was taken.
    pub fn last_sample(&self) -> Option<Millis> {
        self.last_sample
    }

    /// Whether a sample is due at `now`.
    pub fn due(&self, now: Millis, afs: &AdmissionFairSharing) -> bool {
        self.last_sample
            .is_none_or(|last| now - last >= afs.sampling_interval)
    }

    /// Takes a sample: `admitted` is what each LocalQueue holds now, in milli-units:
    /// `consumed = (consumed + penalty)·(1−α) + admitted·α`, penalties cleared.
    pub fn sample(
        &mut self,
        now: Millis,
        afs: &AdmissionFairSharing,
        admitted: &[(LqId, ResourceId, i64)],
    ) {
        let Some(last) = self.last_sample.replace(now) else {
            // The first sample starts the clock; Kueue's LocalQueues start with nothing consumed.
            self.changed = Changed::All;
            return;
        };
        let a = alpha(now - last, afs.half_life);
        // Penalties settle into the history (Kueue adds them to the consumed resources when
        // it accounts the admission) and decay with it.
        for (lq, row) in std::mem::take(&mut self.penalty).into_iter().enumerate() {
            for (r, p) in row.into_iter().enumerate() {
                *slot(&mut self.consumed, LqId(lq as u32), ResourceId(r as u32)) += p;
            }
        }
        for row in &mut self.consumed {
            for v in row.iter_mut() {
                *v *= 1.0 - a;
            }
        }
        for &(lq, r, v) in admitted {
            *slot(&mut self.consumed, lq, r) += v as f64 / 1000.0 * a;
        }
        self.changed = Changed::All;
    }

    /// Kueue's entry penalty for an admission from `lq` requesting `requests` (milli-units).
    pub fn add_penalty(
        &mut self,
        lq: LqId,
        requests: &[(ResourceId, i64)],
        afs: &AdmissionFairSharing,
    ) {
        let a = alpha(afs.sampling_interval, afs.half_life);
        if a == 0.0 {
            return;
        }
        for &(r, v) in requests {
            *slot(&mut self.penalty, lq, r) += v as f64 / 1000.0 * a;
        }
        self.changed.add(lq);
    }

    /// Starts the ledger from recorded figures (consumed resources in units, and when they were
    /// sampled), as a restarted controller reads them from LocalQueue status.
    pub fn seed(&mut self, consumed: &[(LqId, ResourceId, f64)], last_sample: Option<Millis>) {
        for &(lq, r, v) in consumed {
            *slot(&mut self.consumed, lq, r) = v;
        }
        if last_sample.is_some() {
            self.last_sample = last_sample;
        }
        self.changed = Changed::All;
    }

    /// The same ledger under other ids (a rebuilt cluster): entries whose LocalQueue or
    /// resource no longer exists are dropped.
    pub fn remap(
        &self,
        lq: impl Fn(LqId) -> Option<LqId>,
        resource: impl Fn(ResourceId) -> Option<ResourceId>,
    ) -> LqUsage {
        let mut out = LqUsage {
            consumed: Vec::new(),
            penalty: Vec::new(),
            last_sample: self.last_sample,
            changed: Changed::All,
        };
        for (from, to) in [(&self.consumed, 0), (&self.penalty, 1)] {
            for (l, row) in from.iter().enumerate() {
                let Some(new_lq) = lq(LqId(l as u32)) else {
                    continue;
                };
                for (r, &v) in row.iter().enumerate() {
                    if let Some(new_r) = resource(ResourceId(r as u32)) {
                        let table = if to == 0 {
                            &mut out.consumed
                        } else {
                            &mut out.penalty
                        };
                        *slot(table, new_lq, new_r) += v;
                    }
                }
            }
        }
        out
    }

    /// Consumed (decayed) resources of a LocalQueue, in units, indexed by resource.
    pub fn consumed(&self, lq: LqId) -> &[f64] {
        self.consumed.get(lq.index()).map_or(&[], Vec::as_slice)
    }

    /// Penalties of admissions not yet sampled, in units, indexed by resource.
    pub fn penalty(&self, lq: LqId) -> &[f64] {
        self.penalty.get(lq.index()).map_or(&[], Vec::as_slice)
    }

    /// Kueue's LocalQueue usage: weighted consumed plus penalty, divided by the LocalQueue's
    /// weight (milli-units); +∞ for a weight ≤ 0.
    pub fn weighted(&self, lq: LqId, afs: &AdmissionFairSharing, lq_weight_milli: i64) -> f64 {
        if lq_weight_milli <= 0 {
            return f64::INFINITY;
        }
        let (c, p) = (self.consumed(lq), self.penalty(lq));
        let n = c.len().max(p.len());
        let total: f64 = (0..n)
            .map(|i| {
                let v = c.get(i).copied().unwrap_or(0.0) + p.get(i).copied().unwrap_or(0.0);
                afs.weight(ResourceId(i as u32)) * v
            })
            .sum();
        total / (lq_weight_milli as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn afs() -> AdmissionFairSharing {
        AdmissionFairSharing {
            half_life: 60_000,
            sampling_interval: 60_000,
            resource_weights: vec![1.0, 2.0],
        }
    }

    #[test]
    fn a_remapped_ledger_keeps_the_figures_under_the_new_ids() {
        let a = afs();
        let mut u = LqUsage::default();
        u.sample(0, &a, &[]);
        u.sample(60_000, &a, &[(LqId(0), ResourceId(1), 4000)]);
        u.add_penalty(LqId(1), &[(ResourceId(0), 2000)], &a);
        // LocalQueue 0 becomes 1, LocalQueue 1 is gone; resources swap ids.
        let m = u.remap(
            |lq| (lq == LqId(0)).then_some(LqId(1)),
            |r| Some(ResourceId(1 - r.0)),
        );
        assert_eq!(m.consumed(LqId(1)), &[2.0, 0.0]);
        assert!(m.penalty(LqId(0)).is_empty());
        assert_eq!(m.last_sample(), Some(60_000));
        assert_eq!(m.clone().take_changed(), Changed::All);
    }

    #[test]
    fn consumed_decays_by_half_each_half_life_towards_current_usage() {
        let (a, lq, cpu) = (afs(), LqId(0), ResourceId(0));
        let mut u = LqUsage::default();
        u.sample(0, &a, &[]);
        u.sample(60_000, &a, &[(lq, cpu, 4000)]);
        assert_eq!(u.consumed(lq)[0], 2.0); // 0·½ + 4·½
        u.sample(120_000, &a, &[(lq, cpu, 4000)]);
        assert_eq!(u.consumed(lq)[0], 3.0); // 2·½ + 4·½
        u.sample(240_000, &a, &[]);
        assert_eq!(u.consumed(lq)[0], 0.75); // two half-lives with nothing admitted
    }

    #[test]
    fn penalties_count_at_once_and_settle_into_the_history() {
        let (a, lq) = (afs(), LqId(1));
        let mut u = LqUsage::default();
        u.sample(0, &a, &[]);
        assert_eq!(u.take_changed(), Changed::All);
        u.add_penalty(lq, &[(ResourceId(0), 2000), (ResourceId(1), 1000)], &a);
        // α(60s, 60s) = ½: penalty cpu 1, gpu 0.5 (weight 2) → 2; weight 0.5 doubles it.
        assert_eq!(u.weighted(lq, &a, 500), 4.0);
        assert_eq!(u.weighted(lq, &a, 0), f64::INFINITY);
        assert_eq!(u.take_changed(), Changed::Some(vec![lq]));
        u.sample(60_000, &a, &[]);
        assert_eq!(u.take_changed(), Changed::All);
        assert_eq!(u.take_changed(), Changed::Nothing);
        // Settled into the history and halved: cpu 0.5, gpu 0.25 (weight 2).
        assert!(u.penalty(lq).is_empty());
        assert_eq!(u.weighted(lq, &a, 1000), 1.0);
    }
}
