//! `wasq bench`: one Kueue performance-test shape simulated twice in one process — with the
//! built-in native policies and with the given policy set (the kueue-default WASM plugins) —
//! with wall time, cycle and admission rates, peak memory, the WASM/native ratio, and the
//! virtual-clock figures Kueue's own performance test asserts, next to its thresholds.

use std::collections::BTreeMap;
use std::time::Instant;

use serde::Serialize;

use crate::sim::generate::{Generator, Shape};
use crate::sim::{Limits, Scenario, Simulation};
use crate::wasm::LiveBindings;

/// Kueue's published pass thresholds for a shape (configs/<shape>/rangespec.yaml).
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Thresholds {
    pub min_usage_percent: f64,
    pub max_mean_time_to_admit_seconds: [(&'static str, f64); 3],
}

pub fn thresholds(shape: Shape) -> Thresholds {
    match shape {
        Shape::Baseline => Thresholds {
            min_usage_percent: 50.0,
            max_mean_time_to_admit_seconds: [("large", 23.0), ("medium", 90.0), ("small", 260.0)],
        },
        Shape::LargeScale => Thresholds {
            min_usage_percent: 31.6,
            max_mean_time_to_admit_seconds: [("large", 128.0), ("medium", 308.0), ("small", 841.0)],
        },
    }
}

/// The figures of one run.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunFigures {
    pub policies: String,
    /// The simulation alone.
    pub wall_seconds: f64,
    /// CPU time the process spent during the simulation, in its own code (user) and in the
    /// kernel on its behalf (system: at ten times Kueue's large scale mostly zeroing the
    /// fresh pages the run grows into), or `None` where the platform does not report it.
    pub cpu_seconds: Option<CpuSeconds>,
    /// Generating the shape and building the cluster.
    pub load_seconds: f64,
    pub cycles: u64,
    pub cycles_per_second: f64,
    pub admissions: u64,
    pub admissions_per_second: f64,
    /// Peak resident memory of the process during this run (Linux `VmHWM`, reset before the
    /// run), or `None` where the platform does not report it.
    pub peak_memory_bytes: Option<u64>,
    pub workloads: usize,
    pub virtual_seconds: f64,
    /// Mean usage of nominal quota per ClusterQueue class, %.
    pub usage_percent: BTreeMap<String, f64>,
    /// Mean time-to-admit per workload class, virtual seconds.
    pub mean_time_to_admit_seconds: BTreeMap<String, f64>,
    /// Whether every Kueue threshold is met (`None` for a shape without thresholds).
    pub meets_kueue_thresholds: Option<bool>,
    /// Decisions the built-in made because a plugin failed in this run (should be 0).
    pub fallbacks: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BenchReport {
    /// `large-scale`, `large-scale x10`, `custom`, …
    pub shape: String,
    pub cluster_queues: usize,
    /// Kueue's thresholds for the shape it starts from; none for a custom shape.
    pub thresholds: Option<Thresholds>,
    pub native: RunFigures,
    pub wasm: RunFigures,
    /// WASM wall time / native wall time, fastest run of each.
    pub ratio: f64,
    /// Median WASM wall time / median native wall time (what the targets are stated in).
    pub median_ratio: f64,
    /// Every run's wall time (the simulation alone), in the order run.
    pub native_wall_seconds: Vec<f64>,
    pub wasm_wall_seconds: Vec<f64>,
    /// Every run's CPU time during the simulation, in the order run (empty where the platform
    /// does not report it).
    pub native_cpu_seconds: Vec<CpuSeconds>,
    pub wasm_cpu_seconds: Vec<CpuSeconds>,
    /// Every run's plugin fallbacks, in the order run: `native` and `wasm` hold the fastest
    /// run's figures only, and a fallback in any run is worth seeing.
    pub native_fallbacks: Vec<u64>,
    pub wasm_fallbacks: Vec<u64>,
    /// Whether every run, of both sides, made exactly the same decisions at the same virtual
    /// times.
    pub identical_decisions: bool,
    /// Runs per side; `native` and `wasm` are the fastest of each.
    pub repeat: usize,
}

/// Runs per side at `scale` when `largest` runs `repeat` times: as many more as `scale` is
/// smaller, at most ten times as many. A 1× run of Kueue's large-scale shape takes a tenth of
/// a 10× run and moves by ±20% from run to run where the 10× run moves by a few per cent, so
/// five of them made the scaling ratio move by whole units between commands.
pub fn repeats_at(repeat: usize, scale: u32, largest: u32) -> usize {
    let repeat = repeat.max(1);
    let times = largest.div_ceil(scale.max(1)).clamp(1, 10) as usize;
    repeat * times
}

/// The median of some wall times (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

pub fn shape_name(shape: Shape) -> &'static str {
    match shape {
        Shape::Baseline => "baseline",
        Shape::LargeScale => "large-scale",
    }
}

/// CPU time of the process, split as the kernel accounts it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuSeconds {
    pub user: f64,
    pub system: f64,
}

/// The process's CPU time so far (Linux `/proc/self/stat`, in clock ticks of 1/100 s: the
/// kernel's `USER_HZ`, fixed at 100 on the architectures Linux reports it for).
fn cpu_now() -> Option<CpuSeconds> {
    cpu_of_stat(&std::fs::read_to_string("/proc/self/stat").ok()?)
}

/// User and system time of a `/proc/PID/stat` line.
fn cpu_of_stat(stat: &str) -> Option<CpuSeconds> {
    // The command name (field 2) is parenthesised and may hold spaces: fields count from the
    // last ')'. utime and stime are fields 14 and 15, the 12th and 13th after it.
    let mut after = stat
        .get(stat.rfind(')')? + 1..)?
        .split_whitespace()
        .skip(11);
    let ticks = |f: Option<&str>| f?.parse::<u64>().ok().map(|t| t as f64 / 100.0);
    Some(CpuSeconds {
        user: ticks(after.next())?,
        system: ticks(after.next())?,
    })
}

/// Resets the peak-RSS counter (Linux); false elsewhere.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The process's peak resident memory (`VmHWM`, Linux).
pub(crate) fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Progress of one run: (virtual seconds, workloads finished, total). Made per run by a
/// [`NewProgress`]; dropped when the run ends.
pub type RunProgress<'a> = Box<dyn FnMut(f64, usize, usize) + 'a>;
/// Makes the progress of a run, given its label and workload count (the CLI's bar).
pub type NewProgress<'a> = &'a dyn Fn(&str, usize) -> Option<RunProgress<'a>>;

/// Kueue's thresholds for a generator: its base shape's, unless it replaced the classes.
fn generator_thresholds(generator: &Generator) -> Option<Thresholds> {
    let base = generator.base?;
    (base.config().sets == generator.config.sets).then(|| thresholds(base))
}

/// Runs `generator`'s shape once with `policies` (`None` = built-in) and returns its figures
/// and its decision lines. Peak memory includes generating and loading the shape; wall time
/// is the run alone (loading is `load_seconds`).
pub fn run_once(
    generator: &Generator,
    label: &str,
    policies: Option<LiveBindings>,
    progress: Option<NewProgress<'_>>,
) -> anyhow::Result<(RunFigures, Vec<String>)> {
    // What earlier runs freed and the allocator kept (a batch command keeps freed memory:
    // `wasq_alloc`) goes back first, so that the peak is this run's.
    wasq_alloc::release_freed();
    let peak_known = reset_peak();
    let load_start = Instant::now();
    let scenario = Scenario::generated(generator)?;
    let workloads = scenario.cluster.workloads.len();
    let mut sim = Simulation::new(scenario);
    if let Some(p) = policies {
        sim.use_policies(p)?;
    }
    let load_seconds = load_start.elapsed().as_secs_f64();
    let mut bar = progress.and_then(|p| p(label, workloads));
    let cpu_start = cpu_now();
    let start = Instant::now();
    sim.run(
        &Limits::default(),
        bar.as_mut()
            .map(|b| &mut **b as &mut dyn FnMut(f64, usize, usize)),
    );
    drop(bar);
    let wall = start.elapsed().as_secs_f64();
    let cpu_seconds = cpu_start.zip(cpu_now()).map(|(a, b)| CpuSeconds {
        user: b.user - a.user,
        system: b.system - a.system,
    });
    let peak = if peak_known { peak_rss() } else { None };
    let report = sim.into_report();
    let admissions = report
        .events
        .refs()
        .filter(|e| e.kind() == crate::sim::EventType::Admitted)
        .count() as u64;
    let t = generator_thresholds(generator);
    let usage_percent = report.summary.cluster_queue_classes.clone();
    let mean_time_to_admit_seconds: BTreeMap<String, f64> = report
        .summary
        .workload_classes
        .iter()
        .filter_map(|(k, c)| c.mean_time_to_admit_seconds.map(|v| (k.clone(), v)))
        .collect();
    let meets = t.map(|t| {
        usage_percent.values().all(|&u| u >= t.min_usage_percent)
            && t.max_mean_time_to_admit_seconds.iter().all(|(class, max)| {
                mean_time_to_admit_seconds
                    .get(*class)
                    .is_some_and(|v| v <= max)
            })
    });
    let figures = RunFigures {
        policies: label.to_string(),
        wall_seconds: wall,
        cpu_seconds,
        load_seconds,
        cycles: report.summary.cycles,
        cycles_per_second: report.summary.cycles as f64 / wall,
        admissions,
        admissions_per_second: admissions as f64 / wall,
        peak_memory_bytes: peak,
        workloads,
        virtual_seconds: report.summary.duration_seconds,
        usage_percent,
        mean_time_to_admit_seconds,
        meets_kueue_thresholds: meets,
        fallbacks: report.summary.fallbacks.iter().map(|f| f.count).sum(),
    };
    Ok((figures, report.decision_lines_without_policy()))
}

/// One shape's runs as they accumulate, both sides, in the order run: [`Runs::round`] runs
/// each side once, [`Runs::finish`] makes the report. [`bench`] runs one shape's rounds back
/// to back; [`bench_scales`] interleaves the rounds of several scales.
struct Runs<'g> {
    generator: &'g Generator,
    rounds: usize,
    native: Option<RunFigures>,
    wasm: Option<RunFigures>,
    native_walls: Vec<f64>,
    wasm_walls: Vec<f64>,
    native_cpu: Vec<CpuSeconds>,
    wasm_cpu: Vec<CpuSeconds>,
    native_fallbacks: Vec<u64>,
    wasm_fallbacks: Vec<u64>,
    reference: Option<Vec<String>>,
    identical: bool,
}

impl<'g> Runs<'g> {
    fn new(generator: &'g Generator) -> Runs<'g> {
        Runs {
            generator,
            rounds: 0,
            native: None,
            wasm: None,
            native_walls: Vec::new(),
            wasm_walls: Vec::new(),
            native_cpu: Vec::new(),
            wasm_cpu: Vec::new(),
            native_fallbacks: Vec::new(),
            wasm_fallbacks: Vec::new(),
            reference: None,
            identical: true,
        }
    }

    /// Runs each side once, WASM first if `wasm_first`; `wasm` makes the bindings of the WASM
    /// run. The decisions are compared with the first run's.
    fn round(
        &mut self,
        wasm_first: bool,
        wasm: &impl Fn() -> LiveBindings,
        progress: Option<NewProgress<'_>>,
    ) -> anyhow::Result<()> {
        let order = [wasm_first, !wasm_first];
        self.rounds += 1;
        for is_wasm in order {
            let (label, policies) = if is_wasm {
                ("plugins (WASM)", Some(wasm()))
            } else {
                ("builtin", None)
            };
            let (figures, lines) = run_once(self.generator, label, policies, progress)?;
            match &self.reference {
                Some(r) => self.identical &= *r == lines,
                None => self.reference = Some(lines),
            }
            let (walls, cpu, fallbacks, best) = if is_wasm {
                (
                    &mut self.wasm_walls,
                    &mut self.wasm_cpu,
                    &mut self.wasm_fallbacks,
                    &mut self.wasm,
                )
            } else {
                (
                    &mut self.native_walls,
                    &mut self.native_cpu,
                    &mut self.native_fallbacks,
                    &mut self.native,
                )
            };
            walls.push(figures.wall_seconds);
            cpu.extend(figures.cpu_seconds);
            fallbacks.push(figures.fallbacks);
            if best
                .as_ref()
                .is_none_or(|b| figures.wall_seconds < b.wall_seconds)
            {
                *best = Some(figures);
            }
        }
        Ok(())
    }

    /// The report of the rounds run; `None` before the first.
    fn finish(self) -> Option<BenchReport> {
        let (native, wasm) = (self.native?, self.wasm?);
        Some(BenchReport {
            shape: self.generator.name(),
            cluster_queues: self.generator.cluster_queues(),
            thresholds: generator_thresholds(self.generator),
            ratio: wasm.wall_seconds / native.wall_seconds,
            median_ratio: median(&self.wasm_walls) / median(&self.native_walls),
            native_wall_seconds: self.native_walls,
            wasm_wall_seconds: self.wasm_walls,
            native_cpu_seconds: self.native_cpu,
            wasm_cpu_seconds: self.wasm_cpu,
            native_fallbacks: self.native_fallbacks,
            wasm_fallbacks: self.wasm_fallbacks,
            identical_decisions: self.identical,
            repeat: self.rounds,
            native,
            wasm,
        })
    }
}

/// Both runs and their comparison, `repeat` rounds of each side once, in ABBA order (native
/// first in even rounds, WASM first in odd ones), so that whatever drifts over the process's
/// life (heap layout, a neighbour on the machine) weighs on both sides alike instead of always
/// on the side run second; each side reports its fastest run and the median of all, which
/// cancels drift and noise on a shared machine.
pub fn bench(
    generator: &Generator,
    repeat: usize,
    wasm: impl Fn() -> LiveBindings,
    progress: Option<NewProgress<'_>>,
) -> anyhow::Result<BenchReport> {
    let mut runs = Runs::new(generator);
    for round in 0..repeat.max(1) {
        runs.round(!round.is_multiple_of(2), &wasm, progress)?;
    }
    Ok(runs.finish().expect("at least one round"))
}

/// Several scales of one shape (`generators[k]` at `scales[k]`) in `repeat` rounds, the
/// scales interleaved: each round runs every scale in turn — as many of a smaller scale's
/// rounds as [`repeats_at`] gives it per run of the largest — forward in even rounds and
/// backward in odd ones. A machine that slows down or speeds up over the command then weighs
/// on every scale alike; run one scale after the other, the same drift went wholly into the
/// scaling ratio (the 10× runs of one command came minutes after its 1× runs).
///
/// Within a round a scale's sides alternate (ABBA), starting with native in rounds 0 and 1,
/// WASM in rounds 2 and 3, and so on: the run that comes right after the largest scale's (the
/// first of the next scale in a backward round) is native and WASM in turn, not always the
/// same side. Stop 48 had found a small run slower right after a large one.
pub fn bench_scales(
    generators: &[Generator],
    scales: &[u32],
    repeat: usize,
    wasm: impl Fn() -> LiveBindings,
    progress: Option<NewProgress<'_>>,
) -> anyhow::Result<ScalingReport> {
    assert_eq!(generators.len(), scales.len(), "one generator per scale");
    let largest = scales.iter().copied().max().unwrap_or(1);
    let mut runs: Vec<Runs<'_>> = generators.iter().map(Runs::new).collect();
    for round in 0..repeat.max(1) {
        let mut order: Vec<usize> = (0..scales.len()).collect();
        if !round.is_multiple_of(2) {
            order.reverse();
        }
        for k in order {
            for j in 0..repeats_at(1, scales[k], largest) {
                let wasm_first = !(round / 2 + j).is_multiple_of(2);
                runs[k].round(wasm_first, &wasm, progress)?;
            }
        }
    }
    Ok(ScalingReport {
        scales: scales.to_vec(),
        runs: runs
            .into_iter()
            .map(|r| r.finish().expect("at least one round per scale"))
            .collect(),
    })
}

/// `wasq bench` at several scales of one shape, in one process: each scale's report, and how
/// each figure grows from the first scale.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScalingReport {
    pub scales: Vec<u32>,
    pub runs: Vec<BenchReport>,
}

impl ScalingReport {
    pub fn to_table(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        for r in &self.runs {
            out.push_str(&r.to_table());
            out.push('\n');
        }
        let (Some(first), Some(&base)) = (self.runs.first(), self.scales.first()) else {
            return out;
        };
        let _ = writeln!(
            out,
            "Scaling (median wall time of the simulation alone; x = times the {base}x figure)"
        );
        let _ = writeln!(
            out,
            "{:>6} {:>10} {:>9} {:>10} {:>9} {:>7} {:>9} {:>9} {:>11} {:>11}",
            "scale",
            "native",
            "x",
            "wasm",
            "x",
            "ratio",
            "cycles/s",
            "peak MiB",
            "B/workload",
            "wasm MiB"
        );
        let (n0, w0) = (
            median(&first.native_wall_seconds),
            median(&first.wasm_wall_seconds),
        );
        for (scale, r) in self.scales.iter().zip(&self.runs) {
            let (n, w) = (median(&r.native_wall_seconds), median(&r.wasm_wall_seconds));
            let peak = r.native.peak_memory_bytes.unwrap_or(0);
            let _ = writeln!(
                out,
                "{:>5}x {:>9.2}s {:>8.2}x {:>9.2}s {:>8.2}x {:>7.3} {:>9.0} {:>9.0} {:>11.0} {:>11.0}",
                scale,
                n,
                n / n0,
                w,
                w / w0,
                r.median_ratio,
                r.native.cycles as f64 / n,
                peak as f64 / 1048576.0,
                peak as f64 / r.native.workloads.max(1) as f64,
                r.wasm.peak_memory_bytes.unwrap_or(0) as f64 / 1048576.0,
            );
        }
        self.cpu_table(&mut out);
        out
    }

    /// The native runs' CPU time by scale: what the process's own code took (user) and what
    /// the kernel did for it (system), each against the first scale; wall time beyond both is
    /// time off the CPU.
    fn cpu_table(&self, out: &mut String) {
        use std::fmt::Write;
        let medians = |r: &BenchReport| {
            let v = &r.native_cpu_seconds;
            let user: Vec<f64> = v.iter().map(|c| c.user).collect();
            let system: Vec<f64> = v.iter().map(|c| c.system).collect();
            (!v.is_empty()).then(|| (median(&user), median(&system)))
        };
        let Some((u0, s0)) = self.runs.first().and_then(medians) else {
            return;
        };
        let _ = writeln!(
            out,
            "Native CPU time during the simulation (medians; user = its own code, system = the \
             kernel for it)"
        );
        let _ = writeln!(
            out,
            "{:>6} {:>9} {:>8} {:>9} {:>8} {:>9}",
            "scale", "user", "x", "system", "x", "off-CPU"
        );
        // Ticks are 10 ms: a first scale's system time may read 0.
        let times = |a: f64, b: f64| {
            if b > 0.0 {
                format!("{:.2}x", a / b)
            } else {
                "-".to_string()
            }
        };
        for (scale, r) in self.scales.iter().zip(&self.runs) {
            let Some((u, sys)) = medians(r) else {
                continue;
            };
            let wall = median(&r.native_wall_seconds);
            let _ = writeln!(
                out,
                "{:>5}x {:>8.2}s {:>8} {:>8.2}s {:>8} {:>8.2}s",
                scale,
                u,
                times(u, u0),
                sys,
                times(sys, s0),
                (wall - u - sys).max(0.0),
            );
        }
    }
}

impl BenchReport {
    pub fn to_table(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let (n, w) = (&self.native, &self.wasm);
        let mb = |b: Option<u64>| {
            b.map_or("-".to_string(), |b| {
                format!("{:.0} MiB", b as f64 / 1048576.0)
            })
        };
        let _ = writeln!(
            out,
            "shape {} ({} ClusterQueues, {} workloads), fastest of {} run(s) per side",
            self.shape, self.cluster_queues, n.workloads, self.repeat
        );
        let runs = |v: &[f64]| {
            v.iter()
                .map(|s| format!("{s:.2}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let _ = writeln!(out, "{:<28} {:>16} {:>16}", "", "native", "wasm");
        let rows: [(&str, String, String); 6] = [
            (
                "generate + load",
                format!("{:.2} s", n.load_seconds),
                format!("{:.2} s", w.load_seconds),
            ),
            (
                "wall time",
                format!("{:.2} s", n.wall_seconds),
                format!("{:.2} s", w.wall_seconds),
            ),
            ("cycles", n.cycles.to_string(), w.cycles.to_string()),
            (
                "cycles/s",
                format!("{:.0}", n.cycles_per_second),
                format!("{:.0}", w.cycles_per_second),
            ),
            (
                "admissions/s",
                format!("{:.0}", n.admissions_per_second),
                format!("{:.0}", w.admissions_per_second),
            ),
            (
                "peak memory",
                mb(n.peak_memory_bytes),
                mb(w.peak_memory_bytes),
            ),
        ];
        for (k, a, b) in rows {
            let _ = writeln!(out, "{k:<28} {a:>16} {b:>16}");
        }
        // Summed over every run, not the fastest run's alone.
        let total = |v: &[u64]| v.iter().sum::<u64>().to_string();
        let _ = writeln!(
            out,
            "{:<28} {:>16} {:>16}",
            if self.repeat > 1 {
                "plugin fallbacks, all runs"
            } else {
                "plugin fallbacks"
            },
            total(&self.native_fallbacks),
            total(&self.wasm_fallbacks),
        );
        let _ = writeln!(
            out,
            "{:<28} {:>16} {:>16}",
            "wall time, median",
            format!("{:.2} s", median(&self.native_wall_seconds)),
            format!("{:.2} s", median(&self.wasm_wall_seconds)),
        );
        if self.repeat > 1 {
            let _ = writeln!(
                out,
                "{:<28} {:>16} {:>16}",
                "every run, s",
                runs(&self.native_wall_seconds),
                runs(&self.wasm_wall_seconds)
            );
        }
        let _ = writeln!(out, "WASM/native wall-time ratio  {:.3}", self.ratio);
        let _ = writeln!(
            out,
            "  of the medians              {:.3}",
            self.median_ratio
        );
        let _ = writeln!(
            out,
            "identical decisions          {}",
            self.identical_decisions
        );
        let Some(thresholds) = self.thresholds else {
            return out;
        };
        let _ = writeln!(out, "\nOn the virtual clock (Kueue's thresholds beside):");
        for (class, u) in &n.usage_percent {
            let _ = writeln!(
                out,
                "  usage, ClusterQueue class {class:<8} {u:>7.1}% {:>7.1}%   (>= {}%)",
                w.usage_percent.get(class).copied().unwrap_or(f64::NAN),
                thresholds.min_usage_percent
            );
        }
        for (class, max) in thresholds.max_mean_time_to_admit_seconds {
            let _ = writeln!(
                out,
                "  mean time-to-admit, {class:<8} {:>7.1}s {:>7.1}s   (<= {max}s)",
                n.mean_time_to_admit_seconds
                    .get(class)
                    .copied()
                    .unwrap_or(f64::NAN),
                w.mean_time_to_admit_seconds
                    .get(class)
                    .copied()
                    .unwrap_or(f64::NAN),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_time_is_read_after_the_command_name() {
        // A command name may hold spaces and parentheses; utime and stime are 14th and 15th.
        let line = "4242 (wasq (x) y) R 1 4242 4242 0 -1 4194304 9478 0 3 0 702 336 0 0 20 0 3 0";
        assert_eq!(
            cpu_of_stat(line),
            Some(CpuSeconds {
                user: 7.02,
                system: 3.36
            })
        );
        assert_eq!(cpu_of_stat("4242 (wasq) R 1 2"), None);
    }

    use std::cell::RefCell;
    use std::sync::Arc;

    use super::{
        CpuSeconds, NewProgress, RunProgress, bench, bench_scales, cpu_of_stat, median, repeats_at,
    };
    use crate::sim::Scenario;
    use crate::sim::generate::{ClassSpec, GeneratorObjectSpec, Shape};
    use crate::wasm::{Bindings, LiveBindings, PluginSource, Registry, WasmEngine};

    /// A small shape: one cohort of two queues (times `scale`), three small workloads each.
    fn small(scale: Option<u32>) -> crate::sim::generate::Generator {
        GeneratorObjectSpec {
            shape: Some(Shape::LargeScale),
            seed: Some(7),
            scale,
            cohorts: Some(1),
            queues_per_cohort: Some(2),
            quota: None,
            classes: Some(vec![ClassSpec {
                name: "small".into(),
                count: 3,
                interval: "1s".into(),
                runtime: "5s".into(),
                priority: 0,
                cpu: 1,
            }]),
        }
        .validate()
        .expect("a valid shape")
    }

    fn no_plugins() -> impl Fn() -> LiveBindings {
        let engine = WasmEngine::new(false).expect("engine");
        let registry = Arc::new(Registry::empty(engine));
        move || LiveBindings::new(PluginSource::Fixed(registry.clone()), Bindings::default())
    }

    /// Runs alternate ABBA, so drift over the process's life does not always fall on the side
    /// run second; both sides still decide alike.
    #[test]
    fn runs_alternate_abba() {
        let generator = small(None);
        let labels = RefCell::new(Vec::new());
        let record = |label: &str, _: usize| -> Option<RunProgress<'_>> {
            labels.borrow_mut().push(label.starts_with("builtin"));
            None
        };
        let progress: NewProgress<'_> = &record;
        let report = bench(&generator, 4, no_plugins(), Some(progress)).expect("bench");
        // true = native.
        assert_eq!(
            labels.into_inner(),
            [true, false, false, true, true, false, false, true]
        );
        assert!(report.identical_decisions);
        assert_eq!(report.native_wall_seconds.len(), 4);
        assert_eq!(report.wasm_wall_seconds.len(), 4);
    }

    /// Scales take turns round by round (forward, then backward), a smaller one running as
    /// many more rounds as it is smaller, its sides in ABBA order from a side that changes
    /// every second round.
    #[test]
    fn scales_interleave_round_by_round() {
        let generators = [small(Some(1)), small(Some(2))];
        let sizes = generators.each_ref().map(|g| {
            Scenario::generated(g)
                .expect("generated")
                .cluster
                .workloads
                .len()
        });
        assert_eq!(sizes[1], 2 * sizes[0], "scale 2 doubles the workloads");
        let runs = RefCell::new(Vec::new());
        let record = |label: &str, workloads: usize| -> Option<RunProgress<'_>> {
            let scale = if workloads == sizes[0] { 1 } else { 2 };
            runs.borrow_mut().push((
                scale,
                if label.starts_with("builtin") {
                    'N'
                } else {
                    'W'
                },
            ));
            None
        };
        let progress: NewProgress<'_> = &record;
        let report =
            bench_scales(&generators, &[1, 2], 4, no_plugins(), Some(progress)).expect("bench");
        let expected = [
            // Round 0, forward: scale 1 twice (ABBA), then scale 2 once.
            (1, 'N'),
            (1, 'W'),
            (1, 'W'),
            (1, 'N'),
            (2, 'N'),
            (2, 'W'),
            // Round 1, backward: scale 2, then scale 1, each native first again (rounds 0
            // and 1 start native, 2 and 3 WASM).
            (2, 'N'),
            (2, 'W'),
            (1, 'N'),
            (1, 'W'),
            (1, 'W'),
            (1, 'N'),
            // Round 2, forward, WASM first.
            (1, 'W'),
            (1, 'N'),
            (1, 'N'),
            (1, 'W'),
            (2, 'W'),
            (2, 'N'),
            // Round 3, backward: what follows scale 2 is WASM now, where round 1 had native.
            (2, 'W'),
            (2, 'N'),
            (1, 'W'),
            (1, 'N'),
            (1, 'N'),
            (1, 'W'),
        ];
        assert_eq!(runs.into_inner(), expected);
        assert_eq!(report.scales, [1, 2]);
        let counts: Vec<_> = report
            .runs
            .iter()
            .map(|r| {
                (
                    r.repeat,
                    r.native_wall_seconds.len(),
                    r.wasm_wall_seconds.len(),
                )
            })
            .collect();
        assert_eq!(counts, [(8, 8, 8), (4, 4, 4)]);
        assert!(report.runs.iter().all(|r| r.identical_decisions));
        assert_eq!(report.runs[1].native.workloads, sizes[1]);
    }

    #[test]
    fn smaller_scales_run_more_times() {
        assert_eq!(repeats_at(5, 1, 10), 50);
        assert_eq!(repeats_at(5, 3, 10), 20);
        assert_eq!(repeats_at(5, 10, 10), 5);
        assert_eq!(repeats_at(3, 1, 1), 3);
        // At most ten times as many; at least one run.
        assert_eq!(repeats_at(2, 1, 40), 20);
        assert_eq!(repeats_at(0, 10, 10), 1);
    }

    /// `wasq_alloc` names mimalloc's purge delay by its index in `mimalloc.h`: the option
    /// there reads its documented default (1,000 ms), which its neighbours do not have. Nothing
    /// in the library's tests sets it (only the binary's `main` does).
    #[test]
    fn the_allocator_option_is_the_purge_delay() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        assert_eq!(
            wasq_alloc::purge_delay(),
            Some(std::time::Duration::from_secs(1))
        );
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[7.5]), 7.5);
        assert!(median(&[]).is_nan());
    }
}
