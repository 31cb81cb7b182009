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
            fuel: None,
            quarantine_after: 5,
        }
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
