//! Command-line pieces of the `wasq` binary that are more than argument plumbing.

mod languages;
pub mod plugin;
pub mod policies;
pub mod progress;
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
