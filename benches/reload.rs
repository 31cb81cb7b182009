//! Hot-reload benchmarks (issue 4), a plain program (`harness = false`):
//!
//! 1. Reload latency: a ~90 KB preemption component is written into a watched directory; the
//!    time until a decision is made by the new version (debounce + read + compile + validate +
//!    smoke test + swap + next call). Repeated, alternating two versions.
//! 2. Scheduling cycle time while a reload compiles: Kueue's baseline shape (15,000 workloads,
//!    30 ClusterQueues) simulated with the three kueue-default plugins from a watched directory;
//!    the ordering plugin is replaced during the run. Cycle times inside the compile windows are
//!    compared with the median cycle of the whole run.
//!
//! Run: `cargo bench --bench reload`. Targets: reload under 200 ms for a 100 KB component; no
//! cycle during a reload slower than twice the median.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wasq::sim::{Limits, Scenario, Simulation};
use wasq::wasm::guests::{GuestProfile, build_repository_plugins};
use wasq::wasm::{Bindings, HostOptions, LiveBindings, LivePlugins, PluginSource, WasmEngine};

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn main() -> anyhow::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let built = build_repository_plugins(root, GuestProfile::Release)?;
    let engine = WasmEngine::new(false)?;
    let read = |name: &str| std::fs::read(built.plugins.join(format!("{name}.wasm")));
    latency(
        &engine,
        &read("kueue-default-preemption")?,
        &read("least-lost-work")?,
    )?;
    cycles_during_reload(&engine, &built.plugins, root)?;
    Ok(())
}

/// File written → new version published (the next cycle's snapshot, hence its first
/// decision, uses it).
fn latency(engine: &WasmEngine, a: &[u8], b: &[u8]) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("victim.wasm");
    std::fs::write(&file, a)?;
    let live = LivePlugins::open(engine.clone(), dir.path(), HostOptions::default())?;
    let _watch = live.watch()?;
    let mut samples = Vec::new();
    for round in 0..12 {
        let base = if round % 2 == 0 { b } else { a };
        // Different content each round (a custom section appended), so the compile cache
        // never short-cuts a reload.
        let mut bytes = base.to_vec();
        let marker = format!("round-{round}");
        bytes.extend_from_slice(&custom_section("wasq-bench", marker.as_bytes()));
        let digest_new = wasq::wasm::digest_of(&bytes);
        let written = Instant::now();
        std::fs::write(&file, &bytes)?;
        loop {
            let snap = live.snapshot();
            if let Some(p) = snap.get("victim")
                && p.info().digest == digest_new
            {
                // Published: the next cycle's snapshot, hence its first decision, uses it.
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
            anyhow::ensure!(
                written.elapsed() < Duration::from_secs(10),
                "reload never happened"
            );
        }
        samples.push(written.elapsed().as_secs_f64() * 1e3);
    }
    samples.sort_by(f64::total_cmp);
    println!(
        "reload latency, file written → new version published ({} KB component, debounce {} ms): median {:.1} ms, p90 {:.1} ms, max {:.1} ms over {} reloads",
        a.len() / 1024,
        wasq::wasm::reload::DEBOUNCE.as_millis(),
        percentile(&samples, 0.5),
        percentile(&samples, 0.9),
        samples.last().copied().unwrap_or(f64::NAN),
        samples.len()
    );
    Ok(())
}

/// A WebAssembly custom section (ignored by the runtime) to make each round's bytes unique.
fn custom_section(name: &str, payload: &[u8]) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    let mut body = Vec::new();
    leb(name.len(), &mut body);
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(payload);
    let mut out = vec![0u8];
    leb(body.len(), &mut out);
    out.extend(body);
    out
}

/// Cycle times of the baseline run with the ordering plugin replaced several times.
fn cycles_during_reload(engine: &WasmEngine, plugins: &Path, root: &Path) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    for name in [
        "kueue-default-ordering",
        "kueue-default-preemption",
        "kueue-default-flavors",
    ] {
        std::fs::copy(
            plugins.join(format!("{name}.wasm")),
            dir.path().join(format!("{name}.wasm")),
        )?;
    }
    let ordering = std::fs::read(plugins.join("kueue-default-ordering.wasm"))?;
    let live = LivePlugins::open(engine.clone(), dir.path(), HostOptions::default())?;
    let _watch = live.watch()?;
    let mut bindings = Bindings::default();
    for spec in [
        "ordering=kueue-default-ordering",
        "preemption=kueue-default-preemption",
        "flavor-assignment=kueue-default-flavors",
    ] {
        bindings.set(spec)?;
    }
    let scenario = Scenario::load(&[root.join("examples/baseline.yaml")])?;
    let mut sim = Simulation::new(scenario);
    sim.use_policies(LiveBindings::new(
        PluginSource::Live(live.clone()),
        bindings,
    ))?;

    // Reload windows: [file written, new version published].
    let windows: Arc<Mutex<Vec<(Instant, Instant)>>> = Arc::default();
    let writer = {
        let (live, windows, file) = (
            live.clone(),
            windows.clone(),
            dir.path().join("kueue-default-ordering.wasm"),
        );
        std::thread::spawn(move || -> anyhow::Result<()> {
            for round in 0..5 {
                std::thread::sleep(Duration::from_millis(400));
                let mut bytes = ordering.clone();
                bytes.extend_from_slice(&custom_section(
                    "wasq-bench",
                    format!("cycle-{round}").as_bytes(),
                ));
                let generation = live.generation();
                let start = Instant::now();
                std::fs::write(&file, &bytes)?;
                while live.generation() == generation {
                    std::thread::sleep(Duration::from_micros(200));
                    if start.elapsed() > Duration::from_secs(10) {
                        anyhow::bail!("reload never happened");
                    }
                }
                windows
                    .lock()
                    .expect("windows")
                    .push((start, Instant::now()));
            }
            Ok(())
        })
    };
    let mut cycles: Vec<(Instant, f64)> = Vec::new();
    let mut last = Instant::now();
    let mut record = |_: f64, _: usize, _: usize| {
        let now = Instant::now();
        cycles.push((now, (now - last).as_secs_f64() * 1e6));
        last = now;
    };
    let started = Instant::now();
    sim.run(&Limits::default(), Some(&mut record));
    let wall = started.elapsed();
    writer.join().expect("writer thread")?;
    let windows = windows.lock().expect("windows").clone();
    let mut all: Vec<f64> = cycles.iter().map(|&(_, us)| us).collect();
    all.sort_by(f64::total_cmp);
    let median = percentile(&all, 0.5);
    let mut during: Vec<f64> = cycles
        .iter()
        .filter(|(end, _)| windows.iter().any(|(a, b)| end >= a && end <= b))
        .map(|&(_, us)| us)
        .collect();
    during.sort_by(f64::total_cmp);
    let slow = during.iter().filter(|&&us| us > 2.0 * median).count();
    let outside: Vec<f64> = cycles
        .iter()
        .filter(|(end, _)| !windows.iter().any(|(a, b)| end >= a && end <= b))
        .map(|&(_, us)| us)
        .collect();
    let slow_outside = outside.iter().filter(|&&us| us > 2.0 * median).count();
    println!(
        "baseline with kueue-default plugins: {} cycles in {:.2} s; median cycle {:.1} µs, p99 {:.1} µs",
        all.len(),
        wall.as_secs_f64(),
        median,
        percentile(&all, 0.99)
    );
    println!(
        "during {} reloads ({} cycles inside the compile windows): median {:.1} µs, max {:.1} µs; {} cycles slower than 2× the run's median",
        windows.len(),
        during.len(),
        percentile(&during, 0.5),
        during.last().copied().unwrap_or(f64::NAN),
        slow
    );
    println!(
        "outside the compile windows: {} of {} cycles ({:.2}%) slower than 2× the median, against {:.2}% inside",
        slow_outside,
        outside.len(),
        100.0 * slow_outside as f64 / outside.len().max(1) as f64,
        100.0 * slow as f64 / during.len().max(1) as f64
    );
    Ok(())
}
