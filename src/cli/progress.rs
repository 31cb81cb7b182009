//! The progress bar of long simulations: workloads finished, rate and ETA, on stderr only when
//! it is a terminal (hidden otherwise, so that tests and CI logs stay clean).

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// Runs with fewer workloads than this end too fast for a bar.
const MIN_WORKLOADS: usize = 1_000;

/// A bar cleared when dropped.
pub struct Bar(ProgressBar);

impl Bar {
    /// A bar for `total` workloads labelled `label`, or `None` when stderr is not a terminal or
    /// the run is short.
    pub fn new(label: &str, total: usize) -> Option<Bar> {
        if total < MIN_WORKLOADS || !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = ProgressBar::new(total as u64);
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix} {elapsed_precise} [{bar:30}] {human_pos}/{human_len} finished \
                 ({per_sec}, ETA {eta}) virtual {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_prefix(label.to_string());
        Some(Bar(bar))
    }

    /// Called after every cycle: virtual seconds and workloads finished so far.
    pub fn update(&self, virtual_seconds: f64, finished: usize) {
        let pos = finished as u64;
        if pos != self.0.position() {
            self.0.set_position(pos);
            self.0.set_message(format!("{virtual_seconds:.0}s"));
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}
