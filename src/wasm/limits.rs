//! Per-plugin limits and how the host enforces them: a memory cap that traps on growth
//! failure, a CPU deadline per call through epoch interruption, budgets of CPU per scheduling
//! cycle and per simulated run, and optional fuel for deterministic replay.
//!
//! The deadline counts the CPU time the calling thread spends in the call, read from the
//! thread's CPU clock: when the call starts, and each time an epoch deadline is reached
//! ([`CallClock`]). The first epoch deadline is the CPU deadline in ticks (a call cannot use
//! more CPU than the wall time it takes); when it is reached, the call runs on for as many
//! ticks as it has CPU time left, so a call descheduled by a busy machine is not timed out
//! for it, and one that computes is stopped within a tick of its CPU deadline. Either way a
//! call is stopped at [`WALL_FACTOR`] times its deadline in wall time. The thread's CPU clock
//! is a system call (about 0.2 µs here): read when a call starts and ends (the ends feed the
//! budgets) and at each epoch deadline reached, never per instruction. The deadline is set as
//! the host hands the filled request to the guest (`plugin::CallCx`), so the host's own work
//! of filling it is not counted against the plugin.

use std::time::Duration;

use serde::Deserialize;

/// Limits applied to every call of one plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Limits {
    /// Linear memory (all memories together) in bytes. Default 64 MiB.
    pub memory_bytes: u64,
    /// CPU time a call may take, in milliseconds (checked at 1 ms epoch ticks; a call is also
    /// stopped at [`WALL_FACTOR`] times this in wall time). Default 10 ms.
    pub deadline_ms: u64,
    /// Added to the deadline per item the call carries (workloads to key, heads to order,
    /// victim candidates, flavor options, topology domains to place on; ClusterQueues and
    /// cohorts for the catalog), in
    /// microseconds, whole milliseconds only. Default 5 µs: a call over 10,000 heads gets
    /// 60 ms, one over a few items the plain deadline.
    pub deadline_per_item_us: u64,
    /// CPU time all of the plugin's calls in one scheduling cycle may take together, in
    /// milliseconds. Past it the built-in policy decides the rest of that cycle's calls
    /// (fallbacks with reason `budget`; the plugin is not blamed for them). Default 500 ms.
    pub cycle_budget_ms: u64,
    /// CPU time all of the plugin's calls in one simulated run may take together, in
    /// milliseconds (`wasq simulate`, `wasq bench`; a controller runs until it is stopped and
    /// has no run). Past it the built-in policy decides the rest of the run. `None` (the
    /// default): no budget per run.
    pub run_budget_ms: Option<u64>,
    /// Fuel per call. `None` (the default) disables fuel metering; set it for replay that must
    /// stop at exactly the same instruction on every machine.
    pub fuel: Option<u64>,
    /// Failures (traps, timeouts, invalid answers) in a row after which the plugin is
    /// quarantined until its file changes: of all its calls, or of one of its functions — a
    /// success of one function does not forgive the failures of another. Default 5.
    pub quarantine_after: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            memory_bytes: 64 << 20,
            deadline_ms: 10,
            deadline_per_item_us: 5,
            cycle_budget_ms: 500,
            run_budget_ms: None,
            fuel: None,
            quarantine_after: 5,
        }
    }
}

/// Limits as a configuration writes them (`limits`, `pluginLimits.<name>`): each field given
/// replaces the one beneath it — a plugin's language defaults
/// ([`Language::default_limits`](super::language::Language::default_limits)), then `limits`,
/// then `pluginLimits.<name>`; a field not given keeps it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitsPatch {
    pub memory_bytes: Option<u64>,
    pub deadline_ms: Option<u64>,
    pub deadline_per_item_us: Option<u64>,
    pub cycle_budget_ms: Option<u64>,
    pub run_budget_ms: Option<u64>,
    pub fuel: Option<u64>,
    pub quarantine_after: Option<u32>,
}

impl LimitsPatch {
    /// `base` with the fields this patch gives replaced.
    pub fn over(&self, base: Limits) -> Limits {
        Limits {
            memory_bytes: self.memory_bytes.unwrap_or(base.memory_bytes),
            deadline_ms: self.deadline_ms.unwrap_or(base.deadline_ms),
            deadline_per_item_us: self
                .deadline_per_item_us
                .unwrap_or(base.deadline_per_item_us),
            cycle_budget_ms: self.cycle_budget_ms.unwrap_or(base.cycle_budget_ms),
            run_budget_ms: self.run_budget_ms.or(base.run_budget_ms),
            fuel: self.fuel.or(base.fuel),
            quarantine_after: self.quarantine_after.unwrap_or(base.quarantine_after),
        }
    }
}

/// Every field given: these limits whatever the plugin's language.
impl From<Limits> for LimitsPatch {
    fn from(l: Limits) -> LimitsPatch {
        LimitsPatch {
            memory_bytes: Some(l.memory_bytes),
            deadline_ms: Some(l.deadline_ms),
            deadline_per_item_us: Some(l.deadline_per_item_us),
            cycle_budget_ms: Some(l.cycle_budget_ms),
            run_budget_ms: l.run_budget_ms,
            fuel: l.fuel,
            quarantine_after: Some(l.quarantine_after),
        }
    }
}

impl Limits {
    /// The deadline of a call carrying `items`, in milliseconds (at least 1).
    pub fn deadline_for(&self, items: usize) -> u64 {
        let extra = (items as u64).saturating_mul(self.deadline_per_item_us) / 1000;
        self.deadline_ms.saturating_add(extra).max(1)
    }
}

/// One epoch tick; deadlines are whole ticks.
pub const EPOCH_TICK: Duration = Duration::from_millis(1);

/// A call is stopped after this many times its deadline in epoch ticks (wall time), even if its
/// thread was off the CPU for most of it: the scheduler waits for a call, so a call is bounded
/// in wall time too.
pub const WALL_FACTOR: u64 = 10;

/// The CPU time the calling thread has used so far.
pub fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        t.tv_sec.max(0) as u64,
        t.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

/// The clock of one call: the thread's CPU time when it started, its CPU deadline, and the
/// epoch ticks it has run through.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallClock {
    cpu_start: Duration,
    deadline: Duration,
    /// Ticks passed at the epoch deadlines reached so far.
    ticks: u64,
    /// Ticks granted at the last epoch deadline (or at the start).
    granted: u64,
    /// Ticks after which the call is stopped whatever it did.
    wall_limit: u64,
    /// Whether the call was stopped by its wall-time bound rather than its CPU time.
    pub stopped_by_wall: bool,
}

impl CallClock {
    /// Starts the clock of a call whose deadline is `deadline_ms`; returns it with the ticks to
    /// the first epoch deadline.
    pub fn start(deadline_ms: u64) -> (CallClock, u64) {
        let clock = CallClock {
            cpu_start: thread_cpu(),
            deadline: Duration::from_millis(deadline_ms),
            ticks: 0,
            granted: deadline_ms,
            wall_limit: deadline_ms.saturating_mul(WALL_FACTOR),
            stopped_by_wall: false,
        };
        (clock, deadline_ms)
    }

    /// The CPU time the call has used so far.
    pub fn used(&self) -> Duration {
        thread_cpu().saturating_sub(self.cpu_start)
    }

    /// An epoch deadline was reached: `Some(ticks)` to run on for that many more ticks, `None`
    /// to stop the call (its CPU time is spent, or its wall time is up).
    pub fn on_deadline(&mut self) -> Option<u64> {
        self.ticks = self.ticks.saturating_add(self.granted);
        let used = self.used();
        if used >= self.deadline {
            return None;
        }
        if self.ticks >= self.wall_limit {
            self.stopped_by_wall = true;
            return None;
        }
        // Whole ticks of CPU time left, at least one.
        let left = (self.deadline - used)
            .as_micros()
            .div_ceil(EPOCH_TICK.as_micros());
        self.granted = (left as u64).clamp(1, self.wall_limit - self.ticks);
        Some(self.granted)
    }
}

/// The store's resource limiter: caps memory and table growth and remembers that it refused,
/// so that the resulting trap can be reported as "out of memory" rather than a generic trap.
#[derive(Debug)]
pub struct MemoryCap {
    pub max_bytes: u64,
    /// Bytes of every memory of the store together.
    pub used: u64,
    pub refused: bool,
}

impl wasmtime::ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self.used - (current as u64).min(self.used) + desired as u64;
        if total > self.max_bytes {
            self.refused = true;
            // Trap rather than let the guest see a failed `memory.grow` (which Rust guests turn
            // into an opaque `unreachable`).
            return Err(wasmtime::Error::msg(format!(
                "memory limit of {} bytes reached (wanted {total} in all)",
                self.max_bytes
            )));
        }
        self.used = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }

    // A plugin component has a handful of core instances, memories and tables; these caps
    // keep a crafted component from multiplying the memory cap.
    fn instances(&self) -> usize {
        64
    }

    fn memories(&self) -> usize {
        4
    }

    fn tables(&self) -> usize {
        64
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::{CallClock, Limits, LimitsPatch, WALL_FACTOR};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn spin(d: Duration) {
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < d {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
    }

    #[test]
    fn a_call_that_waits_is_given_its_cpu_time_back() {
        let (mut clock, first) = CallClock::start(5);
        assert_eq!(first, 5, "the first deadline is the CPU deadline in ticks");
        // Off the CPU for the whole first deadline: granted (about) the whole deadline again.
        std::thread::sleep(ms(5));
        let granted = clock.on_deadline().expect("asleep, not stopped");
        assert!((4..=5).contains(&granted), "granted {granted}");
        assert!(!clock.stopped_by_wall);
    }

    #[test]
    fn a_call_that_computes_is_stopped_at_its_cpu_deadline() {
        let (mut clock, _) = CallClock::start(3);
        // Spinning: at each epoch deadline the CPU time left shrinks until none is left. (The
        // test machine may deschedule the spin: then it takes a few more deadlines.)
        let mut deadlines = 0;
        loop {
            spin(ms(2));
            deadlines += 1;
            if clock.on_deadline().is_none() {
                break;
            }
            assert!(deadlines < 40, "a spinning call is stopped");
        }
        assert!(clock.used() >= ms(3));
        assert!(!clock.stopped_by_wall);
    }

    #[test]
    fn a_call_is_stopped_at_ten_times_its_deadline_whatever_it_did() {
        let deadline = 2;
        let (mut clock, mut granted) = CallClock::start(deadline);
        let mut ticks = 0;
        loop {
            // Asleep through every tick granted: no CPU time used.
            std::thread::sleep(ms(granted));
            ticks += granted;
            match clock.on_deadline() {
                Some(g) => granted = g,
                None => break,
            }
        }
        assert!(clock.stopped_by_wall);
        assert_eq!(ticks, deadline * WALL_FACTOR);
    }

    #[test]
    fn a_patch_replaces_only_the_fields_it_gives() {
        let base = Limits {
            memory_bytes: 512 << 20,
            deadline_ms: 200,
            ..Limits::default()
        };
        let patch = LimitsPatch {
            deadline_ms: Some(50),
            fuel: Some(7),
            ..LimitsPatch::default()
        };
        let l = patch.over(base);
        assert_eq!(
            (l.memory_bytes, l.deadline_ms, l.fuel),
            (512 << 20, 50, Some(7))
        );
        assert_eq!(LimitsPatch::default().over(base), base);
        assert_eq!(
            LimitsPatch::from(Limits::default()).over(base),
            Limits::default()
        );
    }

    #[test]
    fn the_deadline_grows_with_the_items_a_call_carries() {
        let l = Limits::default();
        assert_eq!(l.deadline_for(0), 10);
        // Whole milliseconds only: a small call keeps the plain deadline.
        assert_eq!(l.deadline_for(150), 10);
        assert_eq!(l.deadline_for(200), 11);
        assert_eq!(l.deadline_for(10_000), 60);
        let none = Limits {
            deadline_ms: 0,
            deadline_per_item_us: 0,
            ..Limits::default()
        };
        assert_eq!(none.deadline_for(1_000_000), 1, "at least one tick");
    }
}
