//! Command-line pieces of the `wasq` binary that are more than argument plumbing.

/// `print!` to standard output; when its reader has gone (`wasq crds | head`), the process ends
/// quietly instead of panicking, as command-line tools do.
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::write_stdout(format_args!($($arg)*)) };
}

/// `println!` to standard output, as [`out!`].
macro_rules! outln {
    ($($arg:tt)*) => { $crate::cli::write_stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

pub mod cluster;
pub mod controller;
pub mod ctl;
pub mod dashboard;
pub mod explain;
mod languages;
pub mod plugin;
pub mod policies;
pub mod progress;
pub mod shadow_report;
pub mod watch;

/// The plugin directory when none is given: `target/plugins` in a source tree (where `wasq
/// plugin build` puts this repository's plugins), else `$XDG_DATA_HOME/wasq/plugins` (by
/// default `~/.local/share/wasq/plugins`), where an installed binary's user keeps theirs.
pub fn default_plugins() -> std::path::PathBuf {
    let in_tree = std::path::Path::new("target/plugins");
    if in_tree.is_dir() || std::path::Path::new("plugins/Cargo.toml").is_file() {
        return in_tree.to_path_buf();
    }
    let non_empty = |v: &str| {
        std::env::var_os(v)
            .filter(|s| !s.is_empty())
            .map(std::path::PathBuf::from)
    };
    non_empty("XDG_DATA_HOME")
        .or_else(|| non_empty("HOME").map(|h| h.join(".local/share")))
        .map_or_else(|| in_tree.to_path_buf(), |d| d.join("wasq/plugins"))
}

/// Output format of reports.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Output {
    Table,
    Json,
}

/// What [`out!`] and [`outln!`] write with.
pub fn write_stdout(args: std::fmt::Arguments) {
    use std::io::Write;
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: writing to standard output: {e}");
        std::process::exit(1);
    }
}
