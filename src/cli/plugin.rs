//! `wasq plugin …`: inspect components the way the host would load them, list a directory,
//! scaffold a new guest crate from the templates, and build guests.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Subcommand;

use wasq::wasm::guests::{GuestProfile, build_guests, build_repository_plugins};
use wasq::wasm::{HostOptions, PluginKind, Registry, WasmEngine, make_plugin};

use super::Output;
use super::languages::{self, Lang};

#[derive(Subcommand)]
pub enum PluginCommand {
    /// Load a component as the host would: report what it implements, its imports, size and
    /// compile time, or why the host refuses it (exit status 1). With `--against SCENARIO`,
    /// dry-run it there next to the built-in policy and list every decision where they differ,
    /// every refused answer and every fallback, to vet a plugin before binding it.
    #[command(
        after_help = "Examples:\n  wasq plugin check target/plugins/least-lost-work.wasm\n  wasq plugin check my-policy.wasm --policy-config policy.yaml -o json"
    )]
    Check {
        /// The component (`.wasm`) to load.
        file: PathBuf,
        /// How to print the result: a table for people, or JSON.
        #[arg(short, long, value_enum, default_value = "table")]
        output: Output,
        /// Manifest files (or directories) of a scenario to run the plugin against.
        #[arg(long, value_name = "SCENARIO", num_args = 1..)]
        against: Vec<PathBuf>,
        /// Policy configuration file whose limits, settings and exposed keys apply to the
        /// plugin (as `simulate` and `controller` would apply them); default limits without.
        /// (`--config` is the old name, kept for a release.)
        #[arg(long = "policy-config", alias = "config", value_name = "FILE")]
        config: Option<PathBuf>,
        #[command(flatten)]
        cache: super::policies::CacheArgs,
    },
    /// Every plugin of a directory: name, kind, digest, size, and whether it loads.
    #[command(
        after_help = "Examples:\n  wasq plugin list\n  wasq plugin list --plugins /etc/wasq/plugins -o json"
    )]
    List {
        /// The directory of `*.wasm` components to list (default: target/plugins in a source
        /// tree, else $XDG_DATA_HOME/wasq/plugins).
        #[arg(long, value_name = "DIR", default_value_os_t = super::default_plugins())]
        plugins: PathBuf,
        /// How to print the result: a table for people, or JSON.
        #[arg(short, long, value_enum, default_value = "table")]
        output: Output,
        #[command(flatten)]
        cache: super::policies::CacheArgs,
    },
    /// Scaffold a plugin in Rust, Python or JavaScript that builds with `wasq plugin build`
    /// and passes its own tests (`cargo test`, `pytest`, `node --test`). The SDK it builds
    /// against is written next to it, from this binary: no source tree or network needed.
    #[command(
        after_help = "Examples:\n  wasq plugin new fair-gpu --kind preemption\n  wasq plugin new night-owl --kind ordering --lang python --dir ~/policies\n  wasq plugin new spread --kind placement --lang javascript"
    )]
    New {
        /// Plugin name (the component is NAME.wasm): lowercase letters, digits, - and _.
        name: String,
        /// The extension point the plugin decides.
        #[arg(long, value_enum)]
        kind: PluginKind,
        /// The language to write it in.
        #[arg(long, value_enum, default_value = "rust")]
        lang: Lang,
        /// Parent directory of the new plugin.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// Rust only: depend on this wasq-policy-sdk crate instead of writing the SDK next to
        /// the new crate.
        #[arg(long, value_name = "PATH")]
        sdk: Option<PathBuf>,
    },
    /// Build plugins into components. Without PATH: this repository's plugins/ into
    /// target/plugins (and the test fixtures into target/plugin-fixtures); with PATH: the
    /// plugin there, in the language its manifest says (Cargo.toml: cargo for wasm32-wasip2;
    /// pyproject.toml: componentize-py; package.json: componentize-js), into --out.
    #[command(
        after_help = "Examples:\n  wasq plugin build                          # in the source tree: plugins/ into target/plugins\n  wasq plugin build ~/policies/night-owl --out ~/policies/built"
    )]
    Build {
        /// A plugin directory (or, for Rust, a workspace) to build.
        path: Option<PathBuf>,
        /// Where the components of PATH go (default: target/plugins in a source tree, else
        /// $XDG_DATA_HOME/wasq/plugins).
        #[arg(long, value_name = "DIR", default_value_os_t = super::default_plugins())]
        out: PathBuf,
    },
}

pub fn run(command: PluginCommand) -> anyhow::Result<()> {
    match command {
        PluginCommand::Check {
            file,
            output,
            against,
            config,
            cache,
        } => {
            let engine = cache.engine(false)?;
            let options = match &config {
                Some(path) => wasq::wasm::PolicyConfig::load(path)?.host_options(),
                None => HostOptions::default(),
            };
            if against.is_empty() {
                check(&engine, &file, &options, output)
            } else {
                dry_run(engine, &file, &against, &options, output)
            }
        }
        PluginCommand::List {
            plugins,
            output,
            cache,
        } => list(cache.engine(false)?, &plugins, output),
        PluginCommand::New {
            name,
            kind,
            lang,
            dir,
            sdk,
        } => new(&name, kind, lang, &dir, sdk.as_deref()),
        PluginCommand::Build { path: None, .. } => {
            let built = build_repository_plugins(Path::new("."), GuestProfile::Release)?;
            outln!("plugins:  {}", built.plugins.display());
            outln!("fixtures: {}", built.fixtures.display());
            Ok(())
        }
        PluginCommand::Build {
            path: Some(path),
            out,
        } => {
            let files = match Lang::of_dir(&path)? {
                Lang::Rust => build_guests(
                    &path.join("Cargo.toml"),
                    &path.join("target"),
                    &out,
                    GuestProfile::Release,
                )?,
                Lang::Python => vec![languages::build_python(&path, &out)?],
                Lang::Javascript => vec![languages::build_javascript(&path, &out)?],
            };
            for f in files {
                outln!("{}", f.display());
            }
            Ok(())
        }
    }
}

fn check(
    engine: &WasmEngine,
    file: &Path,
    options: &HostOptions,
    output: Output,
) -> anyhow::Result<()> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    // Exactly what a load or reload does: compile, world, imports, smoke call.
    let plugin = make_plugin(engine, file, &bytes, options)?;
    let info = plugin.info();
    let limits = plugin.limits();
    match output {
        Output::Json => {
            let mut value = serde_json::to_value(info)?;
            value["limits"] = serde_json::to_value(limits)?;
            value["instance"] = serde_json::to_value(plugin.footprint())?;
            outln!("{}", serde_json::to_string_pretty(&value)?)
        }
        Output::Table => {
            outln!("plugin      {}", info.name);
            outln!(
                "implements  {} (wasq:policy@{}; this host speaks up to {})",
                info.kind,
                info.wit_version,
                wasq::wasm::WIT_VERSION
            );
            outln!(
                "language    {} (built by {})",
                info.language,
                info.language.toolchain()
            );
            outln!("digest      {}", info.digest);
            outln!("size        {} bytes", info.size);
            if info.from_cache {
                outln!(
                    "compile     {:.1} ms (loaded compiled from the cache)",
                    info.compile_ms
                );
            } else {
                outln!("compile     {:.1} ms", info.compile_ms);
            }
            outln!("exports     {}", info.exports.join(", "));
            outln!("imports     {}", info.imports.join("\n            "));
            let footprint = plugin.footprint();
            outln!(
                "instance    {:.1} MiB of memory, instantiated in {:.1} ms",
                footprint.memory_bytes as f64 / (1 << 20) as f64,
                footprint.instantiate_ms
            );
            let by = if limits == info.language.default_limits() {
                format!("{}'s defaults", info.language)
            } else {
                "configured".to_string()
            };
            outln!("limits      {} ({by})", describe_limits(&limits));
        }
    }
    Ok(())
}

/// The limits a plugin runs under, in one line.
fn describe_limits(l: &wasq::wasm::Limits) -> String {
    let run = l
        .run_budget_ms
        .map_or("none".to_string(), |ms| format!("{ms} ms"));
    let fuel = l.fuel.map_or("off".to_string(), |f| f.to_string());
    format!(
        "memory {} MiB, CPU deadline {} ms per call (+{} µs per item), CPU budget {} ms per \
         cycle and {run} per simulated run, fuel {fuel}, quarantine after {} failures in a row",
        l.memory_bytes >> 20,
        l.deadline_ms,
        l.deadline_per_item_us,
        l.cycle_budget_ms,
        l.quarantine_after
    )
}

/// `wasq plugin check FILE --against SCENARIO`: the scenario run natively and with the plugin
/// bound to its extension point, and what differs.
fn dry_run(
    engine: WasmEngine,
    file: &Path,
    scenario: &[PathBuf],
    options: &HostOptions,
    output: Output,
) -> anyhow::Result<()> {
    use wasq::sim::{Limits, Scenario, Simulation};
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let plugin = make_plugin(&engine, file, &bytes, options)?;
    let (name, kind) = (plugin.info().name.clone(), plugin.info().kind);
    if kind == PluginKind::Dispatch {
        anyhow::bail!(
            "{}: --against compares the scheduler's decisions, and the simulator does not ask a \
             dispatch plugin yet; `wasq plugin check FILE` alone checks that it loads",
            file.display()
        );
    }
    let mut registry = Registry::empty(engine);
    registry.insert(plugin);
    let mut bindings = wasq::wasm::Bindings::default();
    bindings.set(&format!("{kind}={name}"))?;
    let loaded = Scenario::load(scenario).context("loading the scenario")?;
    let limits = Limits::default();
    let mut native = Simulation::new(loaded.clone());
    native.run(&limits, None);
    let mut with_plugin = Simulation::new(loaded);
    let (default, per_cq) = registry.bind(&with_plugin.scheduler.cluster, &bindings)?;
    with_plugin.scheduler.set_default_policies(default);
    for (cq, set) in per_cq {
        with_plugin.scheduler.set_cq_policies(cq, set);
    }
    with_plugin.run(&limits, None);
    let (a, b) = (native.report(), with_plugin.report());
    let differences = wasq::sim::compare::decision_differences(&a, &b);
    let status = registry.get(&name).map(|p| p.status()).unwrap_or_default();
    match output {
        Output::Json => {
            let value = serde_json::json!({
                "plugin": name,
                "kind": kind,
                "calls": status.calls,
                "differences": differences
                    .iter()
                    .map(|(side, line)| serde_json::json!({
                        "run": if *side == '-' { "builtin" } else { "plugin" },
                        "decision": line,
                    }))
                    .collect::<Vec<_>>(),
                "fallbacks": b.summary.fallbacks,
                "extraVictims": status.extra_victims,
            });
            outln!("{}", serde_json::to_string_pretty(&value)?);
        }
        Output::Table => {
            outln!("{name} ({kind}): {} calls", status.calls);
            if differences.is_empty() {
                outln!("decisions: identical to the built-in policy's");
            } else {
                outln!(
                    "decisions that differ (- built-in only, + {name} only): {}",
                    differences.len()
                );
                for (side, line) in &differences {
                    outln!("  {side} {}", line.trim());
                }
            }
            if b.summary.fallbacks.is_empty() {
                outln!("refused answers and failures: none");
            } else {
                outln!("refused answers and failures (the built-in decided instead):");
                for f in &b.summary.fallbacks {
                    outln!(
                        "  {:<15} x{:<5} {} (last: {})",
                        f.reason,
                        f.count,
                        f.extension,
                        f.last_error
                    );
                }
            }
            if status.extra_victims > 0 {
                outln!("victims beyond need: {}", status.extra_victims);
            }
        }
    }
    Ok(())
}

fn list(engine: WasmEngine, dir: &Path, output: Output) -> anyhow::Result<()> {
    let registry = Registry::load_dir(engine, dir, &HostOptions::default())
        .with_context(|| format!("reading {}", dir.display()))?;
    #[derive(serde::Serialize)]
    struct Row {
        name: String,
        kind: Option<PluginKind>,
        digest: Option<String>,
        size: Option<u64>,
        /// Loaded compiled from the disk cache rather than compiled.
        from_cache: bool,
        status: String,
    }
    let mut rows: Vec<Row> = registry
        .plugins()
        .map(|p| Row {
            name: p.info().name.clone(),
            kind: Some(p.kind()),
            digest: Some(p.info().digest.clone()),
            size: Some(p.info().size),
            from_cache: p.info().from_cache,
            status: "loaded".into(),
        })
        .chain(registry.failures().map(|(name, e)| Row {
            name: name.clone(),
            kind: None,
            digest: None,
            size: None,
            from_cache: false,
            status: format!("refused: {e}"),
        }))
        .collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    match output {
        Output::Json => outln!("{}", serde_json::to_string_pretty(&rows)?),
        Output::Table => {
            outln!(
                "{:<28} {:<18} {:<24} {:>8}  STATUS",
                "NAME",
                "KIND",
                "DIGEST",
                "SIZE"
            );
            for r in rows {
                outln!(
                    "{:<28} {:<18} {:<24} {:>8}  {}",
                    r.name,
                    r.kind.map_or("-".into(), |k| k.to_string()),
                    r.digest.unwrap_or_else(|| "-".into()),
                    r.size.map_or("-".into(), |s| s.to_string()),
                    r.status
                );
            }
        }
    }
    Ok(())
}

fn new(
    name: &str,
    kind: PluginKind,
    lang: Lang,
    parent: &Path,
    sdk: Option<&Path>,
) -> anyhow::Result<()> {
    languages::check_name(name, "wasq plugin new")?;
    if sdk.is_some() && lang != Lang::Rust {
        bail!("--sdk names a Rust SDK crate; a {lang} plugin gets its SDK written next to it");
    }
    let dir = parent.join(name);
    if dir.exists() {
        bail!("{} already exists", dir.display());
    }
    languages::scaffold(lang, kind, name, &dir, sdk)?;
    let d = dir.display();
    outln!("created {d} ({} plugin, {lang})", kind.as_str());
    match lang {
        Lang::Rust => outln!("  test:  cargo test --manifest-path {d}/Cargo.toml"),
        Lang::Python => outln!("  test:  python3 -m pytest {d}"),
        Lang::Javascript => outln!("  test:  node --test {d}"),
    }
    outln!("  build: wasq plugin build {d} --out my-plugins");
    outln!(
        "  run:   wasq simulate SCENARIO --plugins my-plugins --policy {}={name}",
        kind.as_str()
    );
    Ok(())
}
