//! Why a policy gave no usable answer. Every variant makes the scheduler fall back to the
//! built-in policy for that one decision.

/// A failed policy call or a refused answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The plugin trapped (a panic, `unreachable`, a bad memory access, ...).
    #[error("trap: {0}")]
    Trap(String),
    /// The call ran past its CPU deadline: `deadline_ms` for `call` carrying `items`
    /// workloads, heads, candidates or options (the deadline grows with them); or, `by_wall`,
    /// past ten times that in wall time without using it.
    #[error(
        "{} of {deadline_ms} ms exceeded by {call} carrying {items} items",
        if *by_wall { "wall-time bound (10x the CPU deadline)" } else { "CPU deadline" }
    )]
    Timeout {
        deadline_ms: u64,
        call: &'static str,
        items: usize,
        by_wall: bool,
    },
    /// The plugin's calls used up their CPU budget for this scheduling cycle (`run`: for
    /// this simulated run): the built-in decides until the next one. Not the plugin's failure.
    #[error(
        "{} budget of {budget_ms} ms of CPU used up; the built-in decides the rest of the {}",
        if *run { "run" } else { "cycle" }, if *run { "run" } else { "cycle" }
    )]
    OverBudget { budget_ms: u64, run: bool },
    /// The plugin tried to grow its memory past the limit.
    #[error("memory limit of {0} bytes reached")]
    OutOfMemory(u64),
    /// The call used up its fuel.
    #[error("fuel limit of {0} exhausted")]
    OutOfFuel(u64),
    /// The answer is malformed or would be more aggressive than allowed.
    #[error("invalid answer: {0}")]
    Invalid(#[from] super::verify::InvalidAnswer),
    /// The plugin is quarantined after repeated failures, until its file changes.
    #[error("quarantined after {0} consecutive failures")]
    Quarantined(u32),
    /// The plugin could not be loaded or instantiated.
    #[error("unavailable: {0}")]
    Unavailable(String),
}

impl PolicyError {
    /// A short, stable label for counters and metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            PolicyError::Trap(_) => "trap",
            PolicyError::Timeout { .. } => "timeout",
            PolicyError::OverBudget { .. } => "budget",
            PolicyError::OutOfMemory(_) => "out-of-memory",
            PolicyError::OutOfFuel(_) => "out-of-fuel",
            PolicyError::Invalid(_) => "invalid-answer",
            PolicyError::Quarantined(_) => "quarantined",
            PolicyError::Unavailable(_) => "load-error",
        }
    }
}
