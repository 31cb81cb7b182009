//! Per-plugin limits and how the host enforces them: a memory cap that traps on growth
//! failure, a CPU deadline per call through epoch interruption, and optional fuel for
//! deterministic replay.
//!
//! The deadline is counted in epoch ticks (wall time) but spent computing: a call that reaches
//! it is watched for one more tick ([`Overtime`]) and stopped only if its thread spent that
//! tick on the CPU. A call whose thread was descheduled (a busy host, a stolen vCPU) is not
//! timed out for it; one that loops is stopped one tick after its deadline. Either way a call
//! is stopped at [`WALL_FACTOR`] times its deadline. Reading a thread's CPU clock is a system
//! call (about 1 µs here), so it is read only past a deadline, never per call. The deadline
//! is set as the host hands the filled request to the guest (`plugin::CallCx`), so the host's
//! own work of filling it is not counted against the plugin.

use std::time::{Duration, Instant};

use serde::Deserialize;

/// Limits applied to every call of one plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
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
    /// Fuel per call. `None` (the default) disables fuel metering; set it for replay that must
    /// stop at exactly the same instruction on every machine.
    pub fuel: Option<u64>,
    /// Consecutive failures (traps, timeouts, invalid answers) after which the plugin is
    /// quarantined until its file changes. Default 5.
    pub quarantine_after: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            memory_bytes: 64 << 20,
            deadline_ms: 10,
            deadline_per_item_us: 5,
            fuel: None,
            quarantine_after: 5,
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
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        t.tv_sec.max(0) as u64,
        t.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

/// A call past its deadline: the thread's CPU clock and the wall clock when the tick being
/// watched began, and how many ticks past its deadline the call is.
#[derive(Debug, Clone, Copy)]
pub struct Overtime {
    cpu: Duration,
    wall: Instant,
    ticks: u64,
}

impl Overtime {
    /// The call reached its deadline of `deadline_ms` (ticks), or the tick watched before
    /// (`self`) ended: `Some` to watch one more tick, `None` to stop the call.
    pub fn on_deadline(watched: Option<Overtime>, deadline_ms: u64) -> Option<Overtime> {
        let ticks = match watched {
            None => 0,
            Some(o) => {
                let (cpu, wall) = (thread_cpu().saturating_sub(o.cpu), o.wall.elapsed());
                if computing(cpu, wall) {
                    return None;
                }
                o.ticks + 1
            }
        };
        if ticks >= deadline_ms.saturating_mul(WALL_FACTOR - 1) {
            return None;
        }
        Some(Overtime {
            cpu: thread_cpu(),
            wall: Instant::now(),
            ticks,
        })
    }
}

/// Whether a thread that used `cpu` over `wall` was computing: on the CPU at least half the
/// time.
fn computing(cpu: Duration, wall: Duration) -> bool {
    cpu.saturating_mul(2) >= wall
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
    use std::time::Duration;

    use super::{Limits, Overtime, WALL_FACTOR, computing};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_thread_is_computing_when_on_the_cpu_half_the_time() {
        assert!(computing(ms(1), ms(1)));
        assert!(computing(ms(1), ms(2)));
        assert!(!computing(Duration::from_micros(900), ms(2)));
        assert!(!computing(ms(0), ms(15)));
    }

    #[test]
    fn a_call_past_its_deadline_is_stopped_when_it_computes_not_when_it_waits() {
        // Reaching the deadline: one tick is watched.
        let watched = Overtime::on_deadline(None, 5).expect("watched");
        std::thread::sleep(ms(3));
        // Asleep through it: watched again.
        let mut watched = Overtime::on_deadline(Some(watched), 5).expect("asleep, not stopped");
        // Spinning through it: stopped. (Other tests share the CPUs: a spin descheduled for
        // more than half its tick is not computing, so it may take a few tries.)
        let stopped = (0..20).any(|_| {
            let t = std::time::Instant::now();
            let mut x = 0u64;
            while t.elapsed() < ms(3) {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            match Overtime::on_deadline(Some(watched), 5) {
                Some(w) => {
                    watched = w;
                    false
                }
                None => true,
            }
        });
        assert!(stopped, "a spinning call is stopped");
    }

    #[test]
    fn a_call_is_stopped_at_ten_times_its_deadline_whatever_it_did() {
        let deadline = 2;
        let mut watched = Overtime::on_deadline(None, deadline);
        let mut ticks = 0;
        while let Some(w) = watched {
            std::thread::sleep(ms(1));
            watched = Overtime::on_deadline(Some(w), deadline);
            ticks += 1;
        }
        // After the deadline's own ticks, nine times as many watched: ten times in all.
        assert_eq!(ticks, deadline * (WALL_FACTOR - 1));
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
