//! What a plugin's store holds: its identity (for logs), the memory limiter, and the host
//! import it may call (`log`, routed into `tracing`).

use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::{HasSelf, Linker};

use super::bindings::{host, types};
use super::limits::{CallClock, MemoryCap};

/// Longest log line kept, in bytes once escaped; longer lines are cut.
const MAX_LINE: usize = 4096;
/// Lines kept per call; the rest are dropped.
const MAX_LINES_PER_CALL: u32 = 1000;

/// Per-store data.
pub struct State {
    pub plugin: Arc<str>,
    pub digest: Arc<str>,
    pub limiter: MemoryCap,
    /// Lines logged during the current call.
    pub lines: u32,
    /// The last error-level line (a panic message, through the SDK's panic hook): reported
    /// with the trap that usually follows.
    pub last_error: Option<String>,
    /// The current call's deadline in milliseconds, its name and how many items it carries
    /// (reported when it is exceeded).
    pub deadline_ms: u64,
    pub call: &'static str,
    pub items: usize,
    /// The current call's CPU clock (see [`CallClock`]); `None` until a call is armed.
    pub clock: Option<CallClock>,
    /// CPU time of the calls armed before the current one since [`State::take_spent`].
    spent: Duration,
}

impl State {
    pub fn new(plugin: Arc<str>, digest: Arc<str>, memory_bytes: u64) -> State {
        State {
            plugin,
            digest,
            limiter: MemoryCap {
                max_bytes: memory_bytes,
                used: 0,
                refused: false,
            },
            lines: 0,
            last_error: None,
            deadline_ms: 0,
            call: "instantiate",
            items: 0,
            clock: None,
            spent: Duration::ZERO,
        }
    }

    /// Stops the current call's clock, keeping the CPU time it counted.
    pub fn charge_clock(&mut self) {
        if let Some(clock) = self.clock.take() {
            self.spent += clock.used();
        }
    }

    /// The CPU time of the calls armed since the last time this was asked.
    pub fn take_spent(&mut self) -> Duration {
        self.charge_clock();
        std::mem::take(&mut self.spent)
    }

    /// Defines the `wasq:policy/host` import.
    pub fn add_host(linker: &mut Linker<State>) -> wasmtime::Result<()> {
        host::add_to_linker::<State, HasSelf<State>>(linker, |s| s)
    }
}

impl types::Host for State {}

impl host::Host for State {
    fn log(&mut self, level: types::Level, message: String) {
        self.lines = self.lines.saturating_add(1);
        if self.lines > MAX_LINES_PER_CALL {
            return;
        }
        // Escaped before anything stores or prints it: a plugin's line stays one line of
        // visible text in the log, the fallback's error and the reports (`text::escape`).
        let message = super::text::escape_cut(&message, MAX_LINE);
        let (plugin, digest) = (&*self.plugin, &*self.digest);
        match level {
            types::Level::Trace => {
                tracing::trace!(target: "wasq::plugin", plugin, digest, "{message}")
            }
            types::Level::Debug => {
                tracing::debug!(target: "wasq::plugin", plugin, digest, "{message}")
            }
            types::Level::Info => {
                tracing::info!(target: "wasq::plugin", plugin, digest, "{message}")
            }
            types::Level::Warn => {
                tracing::warn!(target: "wasq::plugin", plugin, digest, "{message}")
            }
            types::Level::Error => {
                tracing::error!(target: "wasq::plugin", plugin, digest, "{message}");
                self.last_error = Some(message);
            }
        }
    }
}
