//! Per-plugin limits and how the host enforces them: a memory cap that traps on growth
//! failure, a CPU deadline per call through epoch interruption, and optional fuel for
//! deterministic replay.

use std::time::Duration;

use serde::Deserialize;

/// Limits applied to every call of one plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Limits {
    /// Linear memory (all memories together) in bytes. Default 64 MiB.
    pub memory_bytes: u64,
    /// Wall-clock CPU deadline per call, in milliseconds (epoch ticks). Default 10 ms.
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
    use super::Limits;

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
