//! Command-line pieces of the `wasq` binary that are more than argument plumbing.

mod languages;
pub mod plugin;
pub mod policies;
pub mod progress;
pub mod watch;

/// Output format of reports.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Output {
    Table,
    Json,
}
