//! `wasq simulate --watch`: the policy author's edit-build-see loop. Runs the scenario, then
//! re-runs it whenever a plugin or a manifest changes and prints how the decisions changed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Context;
use notify_debouncer_full::new_debouncer;
use notify_debouncer_full::notify::RecursiveMode;

use wasq::sim::{Limits, Simulation};
use wasq::wasm::PluginSource;
use wasq::wasm::reload::is_change;

use super::policies::PolicyArgs;

pub fn run(paths: &[PathBuf], policies: &PolicyArgs, limits: Limits) -> anyhow::Result<()> {
    let policies = policies.load(true, true)?;
    let (tx, rx) = mpsc::channel();
    let mut debouncer = new_debouncer(
        Duration::from_millis(200),
        None,
        move |result: notify_debouncer_full::DebounceEventResult| {
            // Reading the files (each run does) is not a change.
            let changed = match result {
                Ok(events) => events.iter().any(|e| is_change(&e.event.kind)),
                Err(_) => true,
            };
            if changed {
                let _ = tx.send(());
            }
        },
    )?;
    let mut watched = BTreeSet::new();
    for p in paths {
        // Watch directories, not files: editors and `cargo` replace files by renaming.
        let dir = if p.is_dir() {
            p.clone()
        } else {
            p.parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_path_buf()
        };
        watched.insert(dir);
    }
    if let PluginSource::Live(live) = &policies.source {
        watched.insert(live.snapshot().dir().to_path_buf());
    }
    for dir in &watched {
        debouncer
            .watch(dir, RecursiveMode::NonRecursive)
            .with_context(|| format!("watching {}", dir.display()))?;
    }
    eprintln!(
        "watching {} (Ctrl-C to stop)",
        watched
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut previous: Option<Vec<String>> = None;
    let mut run = 0;
    loop {
        run += 1;
        if let PluginSource::Live(live) = &policies.source {
            for change in live.rescan() {
                eprintln!("plugin change: {}", serde_json::to_string(&change)?);
            }
        }
        match simulate(paths, &policies, &limits) {
            Ok(lines) => {
                match &previous {
                    None => {
                        outln!("run {run}: {} decisions", lines.len());
                        for l in &lines {
                            outln!("  {l}");
                        }
                    }
                    Some(before) => print_diff(run, before, &lines),
                }
                previous = Some(lines);
            }
            Err(e) => eprintln!("run {run}: {e:#}"),
        }
        // Wait for a change, then drain the burst.
        if rx.recv().is_err() {
            return Ok(());
        }
        while rx.recv_timeout(Duration::from_millis(100)).is_ok() {}
    }
}

fn simulate(
    paths: &[PathBuf],
    policies: &super::policies::Policies,
    limits: &Limits,
) -> anyhow::Result<Vec<String>> {
    let mut scenario = policies.load_scenario(paths, &[])?;
    let scenario_policies = std::mem::take(&mut scenario.policies);
    let mut sim = Simulation::new(scenario);
    // Every run starts from fresh plugin instances and health: a plugin quarantined in one run
    // is not quarantined in the next, and guest state does not leak between runs.
    let live = policies.fresh_bindings(policies.bindings.clone());
    let live = match policies.scenario_objects(&scenario_policies, false)? {
        Some(objects) => live.with_objects(objects),
        None => live,
    };
    sim.use_policies(live)?;
    sim.run(limits, None);
    Ok(sim.report().decision_lines())
}

fn print_diff(run: usize, before: &[String], after: &[String]) {
    let old: BTreeSet<&String> = before.iter().collect();
    let new: BTreeSet<&String> = after.iter().collect();
    let removed: Vec<_> = before.iter().filter(|l| !new.contains(l)).collect();
    let added: Vec<_> = after.iter().filter(|l| !old.contains(l)).collect();
    if removed.is_empty() && added.is_empty() {
        outln!("run {run}: no decision changed");
        return;
    }
    outln!(
        "run {run}: {} decisions no longer made, {} new",
        removed.len(),
        added.len()
    );
    for l in removed {
        outln!("- {l}");
    }
    for l in added {
        outln!("+ {l}");
    }
}
