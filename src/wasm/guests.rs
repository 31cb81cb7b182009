//! Building guest crates into components with the normal Rust toolchain: `cargo build
//! --release --target wasm32-wasip2`, then copying each component to `<crate-name>.wasm`.
//! Used by `wasq plugin build`, the tests and the benchmarks; the repository's own plugins land
//! in `target/plugins/` and the misbehaving test fixtures in `target/plugin-fixtures/`. The
//! tests build theirs with [`GuestProfile::Test`] into `target/test-plugins/` and
//! `target/test-plugin-fixtures/`, so that what the benchmarks read is always the release build.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

/// The target guests are built for.
pub const GUEST_TARGET: &str = "wasm32-wasip2";

/// The cargo profile guests are built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestProfile {
    /// `release`: what is shipped and benchmarked (plugins/Cargo.toml: LTO, one codegen unit).
    Release,
    /// `test-guests` (plugins/Cargo.toml): release without LTO and with parallel codegen, for
    /// the tests, which need the same behaviour sooner rather than the fastest code. Only the
    /// repository's `plugins/` workspace defines it.
    Test,
}

impl GuestProfile {
    /// The profile's name, which is also its directory under the target's.
    fn name(self) -> &'static str {
        match self {
            GuestProfile::Release => "release",
            GuestProfile::Test => "test-guests",
        }
    }

    /// What the repository's output directories are prefixed with (`target/{prefix}plugins/`).
    fn out_prefix(self) -> &'static str {
        match self {
            GuestProfile::Release => "",
            GuestProfile::Test => "test-",
        }
    }
}

/// Where the repository's plugins and fixtures land after [`build_repository_plugins`].
pub struct BuiltPlugins {
    pub plugins: PathBuf,
    pub fixtures: PathBuf,
}

/// Builds the guest crate or workspace at `manifest` into `target_dir` with `profile` and
/// copies every component to `out` (crate `a_b` → `a-b.wasm`); returns the copied files.
pub fn build_guests(
    manifest: &Path,
    target_dir: &Path,
    out: &Path,
    profile: GuestProfile,
) -> anyhow::Result<Vec<PathBuf>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(&cargo)
        .args([
            "build",
            "--profile",
            profile.name(),
            "--target",
            GUEST_TARGET,
            "--manifest-path",
        ])
        .arg(manifest)
        .arg("--target-dir")
        .arg(target_dir)
        // The caller's build settings are for the host, not for guests.
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        // CI lints the host's crates while building them (.ci/run), not the guests.
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CLIPPY_ARGS")
        .status()
        .with_context(|| format!("running {} build", cargo.to_string_lossy()))?;
    if !status.success() {
        bail!(
            "building {} for {GUEST_TARGET} failed ({status}); is the target installed? \
             (rustup target add {GUEST_TARGET})",
            manifest.display()
        );
    }
    let built = target_dir.join(GUEST_TARGET).join(profile.name());
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut copied = Vec::new();
    for entry in
        std::fs::read_dir(&built).with_context(|| format!("reading {}", built.display()))?
    {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "wasm") {
            continue;
        }
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().replace('_', "-"))
            .unwrap_or_default();
        let dest = out.join(format!("{stem}.wasm"));
        copy_if_changed(&path, &dest)?;
        copied.push(dest);
    }
    copied.sort();
    Ok(copied)
}

/// Copies through a temporary file and a rename, and only when the content differs, so that a
/// directory being watched never sees a half-written or needlessly rewritten plugin.
fn copy_if_changed(from: &Path, to: &Path) -> anyhow::Result<()> {
    let bytes = std::fs::read(from).with_context(|| format!("reading {}", from.display()))?;
    if std::fs::read(to).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    let tmp = to.with_extension("wasm.tmp");
    std::fs::write(&tmp, &bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, to).with_context(|| format!("renaming to {}", to.display()))?;
    Ok(())
}

/// Builds `plugins/` of the repository at `root`: policies to `target/plugins/`, fixtures
/// (crates named `fixture-*`) to `target/plugin-fixtures/`; with [`GuestProfile::Test`], to
/// `target/test-plugins/` and `target/test-plugin-fixtures/`.
pub fn build_repository_plugins(
    root: &Path,
    profile: GuestProfile,
) -> anyhow::Result<BuiltPlugins> {
    let target = root.join("target");
    let prefix = profile.out_prefix();
    let staging = target
        .join("wasm-guests")
        .join(format!("{}-out", profile.name()));
    let files = build_guests(
        &root.join("plugins").join("Cargo.toml"),
        &target.join("wasm-guests"),
        &staging,
        profile,
    )?;
    let result = BuiltPlugins {
        plugins: target.join(format!("{prefix}plugins")),
        fixtures: target.join(format!("{prefix}plugin-fixtures")),
    };
    for dir in [&result.plugins, &result.fixtures] {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    for file in files {
        let name = file.file_name().unwrap_or_default();
        let dir = if name.to_string_lossy().starts_with("fixture-") {
            &result.fixtures
        } else {
            &result.plugins
        };
        copy_if_changed(&file, &dir.join(name))?;
    }
    Ok(result)
}
