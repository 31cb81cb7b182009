//! What the simulator keeps of each workload from its arrival to its finish — when it arrived,
//! how long it runs, when its pods become ready, when it finishes, when it first reserved quota
//! and was first admitted, what it was last told while pending, whether it has admission
//! checks — as one record of one cache line per workload.
//!
//! These were nine tables by workload id, and a reservation read or wrote six of them. At
//! ten times Kueue's large-scale shape (500,000 workloads) each table's hot lines — one per
//! ClusterQueue whose workloads were being admitted — no longer stayed in the cache together,
//! so a reservation took a miss per table where the 1× run took none; in one record it takes
//! one.

use crate::cluster::Millis;

/// An `Option<Millis>` in eight bytes: `i64::MIN`, a time no run reaches, is none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct At(Millis);

impl At {
    const NONE: At = At(Millis::MIN);

    fn of(t: Option<Millis>) -> At {
        t.map_or(At::NONE, |t| {
            debug_assert_ne!(t, Millis::MIN, "a time the simulator makes");
            At(t)
        })
    }

    fn get(self) -> Option<Millis> {
        (self != At::NONE).then_some(self.0)
    }
}

/// One workload's record (see the module).
#[derive(Debug, Clone, Copy)]
#[repr(align(64))]
pub(crate) struct Life {
    /// When it is submitted (virtual time).
    pub(crate) arrival: Millis,
    duration: At,
    ready_after: At,
    finish_at: At,
    first_admitted: At,
    first_reserved: At,
    /// Last (message, parked) reported while pending, to report changes only; the message as
    /// its index among the timeline's texts.
    last_pending: Option<(u32, bool)>,
    pub(crate) finished: bool,
    /// A rejected admission check or the requeue limit deactivated it.
    pub(crate) deactivated: bool,
    /// Its admission-check states (`Simulation::wl_checks`) are not empty: its last
    /// reservation came with checks. Without, they need neither starting nor resetting.
    pub(crate) has_checks: bool,
    /// A MultiKueue manager removed this copy of its workload (it may create it again).
    pub(crate) removed: bool,
}

const _: () = assert!(size_of::<Life>() == 64);

impl Life {
    /// A workload arriving at `arrival` that runs `duration` once its pods are ready, which
    /// takes `ready_after` (`None`: they never are).
    pub(crate) fn new(
        arrival: Millis,
        duration: Option<Millis>,
        ready_after: Option<Millis>,
    ) -> Life {
        Life {
            arrival,
            duration: At::of(duration),
            ready_after: At::of(ready_after),
            finish_at: At::NONE,
            first_admitted: At::NONE,
            first_reserved: At::NONE,
            last_pending: None,
            finished: false,
            deactivated: false,
            has_checks: false,
            removed: false,
        }
    }

    /// How long it runs once its pods are ready (`None`: until the end).
    pub(crate) fn duration(&self) -> Option<Millis> {
        self.duration.get()
    }

    /// How long its pods take to become ready once admitted (`None`: never).
    pub(crate) fn ready_after(&self) -> Option<Millis> {
        self.ready_after.get()
    }

    /// When it finishes, while it is running with a finish scheduled.
    pub(crate) fn finish_at(&self) -> Option<Millis> {
        self.finish_at.get()
    }

    pub(crate) fn set_finish_at(&mut self, at: Option<Millis>) {
        self.finish_at = At::of(at);
    }

    /// When it was first admitted, if it was.
    pub(crate) fn first_admitted(&self) -> Option<Millis> {
        self.first_admitted.get()
    }

    /// Records an admission at `now`, unless it was admitted before.
    pub(crate) fn admitted(&mut self, now: Millis) {
        if self.first_admitted == At::NONE {
            self.first_admitted = At::of(Some(now));
        }
    }

    /// When it first reserved quota, if it did.
    pub(crate) fn first_reserved(&self) -> Option<Millis> {
        self.first_reserved.get()
    }

    /// Records a reservation at `now`, unless it reserved before.
    pub(crate) fn reserved(&mut self, now: Millis) {
        if self.first_reserved == At::NONE {
            self.first_reserved = At::of(Some(now));
        }
    }

    pub(crate) fn last_pending(&self) -> Option<(u32, bool)> {
        self.last_pending
    }

    pub(crate) fn set_last_pending(&mut self, said: Option<(u32, bool)>) {
        self.last_pending = said;
    }
}

#[cfg(test)]
mod tests {
    use super::Life;

    /// Every field reads back what was set, the first admission and reservation only once, and
    /// a zero or negative time is a time, not none.
    #[test]
    fn fields_read_back() {
        let mut life = Life::new(-5, Some(0), None);
        assert_eq!(
            (life.arrival, life.duration(), life.ready_after()),
            (-5, Some(0), None)
        );
        assert_eq!((life.first_admitted(), life.first_reserved()), (None, None));
        life.reserved(10);
        life.reserved(20);
        life.admitted(30);
        life.admitted(40);
        assert_eq!(
            (life.first_reserved(), life.first_admitted()),
            (Some(10), Some(30))
        );
        life.set_finish_at(Some(0));
        assert_eq!(life.finish_at(), Some(0));
        life.set_finish_at(None);
        assert_eq!(life.finish_at(), None);
        life.set_last_pending(Some((3, true)));
        assert_eq!(life.last_pending(), Some((3, true)));
    }
}
