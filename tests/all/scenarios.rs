//! Scenario tests: every `tests/scenarios/*.yaml` is simulated and its outcome (final state and
//! admission of every workload, every preemption) must equal the lines of its `.expected` file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use wasq::sim::{EventType, Limits, Report, Scenario, Simulation};

/// Options a scenario asks for in a `# wasq-test: ...` header line.
pub fn limits_of(text: &str) -> Limits {
    let mut limits = Limits::default();
    for line in text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("# wasq-test:"))
    {
        let words: Vec<&str> = line.split_whitespace().collect();
        for pair in words.windows(2) {
            match pair[0] {
                "--max-cycles" => limits.max_cycles = pair[1].parse().ok(),
                "--until" => limits.until = wasq::sim::duration::parse_millis(pair[1]).ok(),
                "--max-cycles-per-instant" => limits.max_cycles_per_instant = pair[1].parse().ok(),
                _ => {}
            }
        }
    }
    limits
}

/// The outcome as canonical lines, the format of `.expected` files.
pub fn outcome_lines(report: &Report) -> BTreeSet<String> {
    let mut lines = BTreeSet::new();
    for w in &report.workloads {
        let key = format!("{}/{}", w.namespace, w.name);
        let line = match (&w.admission, w.state) {
            (Some(a), "admitted") => {
                let mut line = format!(
                    "{key} admitted {}",
                    w.cluster_queue.as_deref().unwrap_or("-")
                );
                for ps in &a.pod_set_assignments {
                    line.push_str(&format!(" | {} count={}", ps.name, ps.count));
                    for (r, f) in &ps.flavors {
                        line.push_str(&format!(" {r}={f}"));
                    }
                    if let Some(ta) = &ps.topology_assignment {
                        let domains = ta.domains().unwrap_or_default();
                        let placed: Vec<String> = domains
                            .iter()
                            .map(|d| format!("{}:{}", d.values.join("/"), d.count))
                            .collect();
                        line.push_str(&format!(" topology={}", placed.join(",")));
                    }
                }
                line
            }
            (_, state) => format!("{key} {state}"),
        };
        lines.insert(line);
    }
    for e in report
        .events
        .iter()
        .filter(|e| e.kind == EventType::Preempted)
    {
        lines.insert(format!(
            "preempted {} by {} {}",
            e.workload,
            e.preemptor.as_deref().unwrap_or("-"),
            e.reason.as_deref().unwrap_or("-")
        ));
    }
    lines
}

pub fn expected_lines(path: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| l.split(" #").next().unwrap_or("").trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

pub fn scenario_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/scenarios exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

/// Runs one scenario file and returns its report.
pub fn run_scenario(path: &Path) -> Result<Report, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let scenario = Scenario::load(&[path.to_path_buf()]).map_err(|e| e.to_string())?;
    let mut sim = Simulation::new(scenario);
    sim.run(&limits_of(&text), None);
    Ok(sim.report())
}

#[test]
fn every_scenario_matches_its_expected_outcome() {
    let files = scenario_files();
    assert!(
        files.len() >= 20,
        "expected the scenario suite, found {} files",
        files.len()
    );
    let mut failures = Vec::new();
    for path in &files {
        let expected = expected_lines(&path.with_extension("expected"));
        let actual = match run_scenario(path) {
            Ok(report) => outcome_lines(&report),
            Err(e) => {
                failures.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        if expected != actual {
            let missing: Vec<_> = expected.difference(&actual).collect();
            let extra: Vec<_> = actual.difference(&expected).collect();
            failures.push(format!(
                "{}:\n  expected but missing: {missing:#?}\n  got but not expected: {extra:#?}",
                path.file_name().unwrap_or_default().to_string_lossy()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} scenarios differ:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

/// What `workload` was told each time it went back to its queue: (cycle, parked, reason and
/// message).
fn told(report: &Report, workload: &str) -> Vec<(u64, bool, String)> {
    report
        .events
        .iter()
        .filter(|e| e.workload == workload)
        .filter(|e| matches!(e.kind, EventType::Requeued | EventType::Inadmissible))
        .map(|e| {
            let said = e.reason.clone().unwrap_or_default();
            (e.cycle, e.kind == EventType::Inadmissible, said)
        })
        .collect()
}

fn scenario(name: &str) -> Report {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/scenarios/{name}.yaml"));
    run_scenario(&path).expect("runs")
}

/// Two heads of a cohort that each fit the cycle's snapshot by borrowing: the second, no longer
/// fitting beside the first, is skipped with Kueue's message and not parked; tried again, it
/// does not fit at all and is parked with its flavor-assignment reasons.
#[test]
fn a_head_that_no_longer_fits_after_another_is_skipped_then_parked() {
    let report = scenario("sched-no-longer-fits-after-another");
    assert_eq!(
        told(&report, "default/b"),
        vec![
            (
                1,
                false,
                "WaitingForQuota: Workload no longer fits after processing another workload".into()
            ),
            (
                2,
                true,
                "WaitingForQuota: couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor \
                 default, 2 more needed"
                    .into()
            ),
        ]
    );
}

/// A preemptor whose targets an earlier entry of the cycle took, and which would still need
/// another victim with the cycle's victims gone, is computed again without them (they are no
/// candidates any more) and preempts that other victim in the same cycle (Kueue's
/// RecomputeAssignmentUponPreemptionTargetsOverlap, "new_targets").
#[test]
fn a_preemptor_whose_targets_were_taken_and_still_falls_short_preempts_another_victim() {
    let report = scenario("preempt-overlapping-targets-still-short");
    let b = told(&report, "default/b");
    assert_eq!(
        b[0],
        (
            1,
            false,
            "WaitingForPreemptedWorkloads: couldn't assign flavors to pod set main: insufficient \
             unused quota for cpu in flavor default, 2 more needed. Pending the preemption of 1 \
             workload(s)"
                .into()
        )
    );
    let preempted_by_b: Vec<(u64, String)> = report
        .events
        .iter()
        .filter(|e| e.kind == EventType::Preempted && e.preemptor.as_deref() == Some("default/b"))
        .map(|e| (e.cycle, e.workload.clone()))
        .collect();
    assert_eq!(preempted_by_b, vec![(1, "default/w".to_string())]);
}

/// A preemptor whose targets an earlier entry of the same cycle took is asked again with that
/// cycle's victims gone; it fits there, so it waits for the preemption with Kueue's reason and
/// message rather than being told its targets overlap (which it is when the victims' quota is
/// left in).
#[test]
fn a_preemptor_whose_targets_were_taken_fits_once_the_cycles_victims_are_gone() {
    let report = scenario("preempt-overlapping-targets-fit-after");
    let waits: Vec<(u64, Option<String>)> = report
        .events
        .iter()
        .filter(|e| e.workload == "default/b" && e.kind == EventType::Requeued)
        .map(|e| (e.cycle, e.reason.clone()))
        .collect();
    assert_eq!(
        waits,
        vec![(
            1,
            Some(
                "WaitingForPreemptedWorkloads: Workload has overlapping preemption targets with \
                 another workload, but will fit after these preemptions complete"
                    .into()
            )
        )]
    );
}

/// A preempted workload's finish is cancelled and, once it runs again, comes its full duration
/// after the second admission. `life-priority-preemption-readmit` with `low` running 60s: low
/// is admitted at 0 (finish due at 60s), preempted at 10s, admitted again at 40s when high
/// finishes, and finishes at 100s — not at the 60s of its first run.
#[test]
fn a_preempted_workloads_finish_is_cancelled_and_scheduled_anew() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios/life-priority-preemption-readmit.yaml");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "metadata: {namespace: default, name: low}",
        "metadata:\n  namespace: default\n  name: low\n  annotations: {sim.wasq.dev/duration: 60s}",
    );
    let m = wasq::api::load::load_str(&path, &text).expect("loads");
    let mut sim = Simulation::new(Scenario::from_manifests(m).unwrap());
    sim.run(&Limits::default(), None);
    let report = sim.report();
    let times = |kind: EventType| -> Vec<f64> {
        report
            .events
            .iter()
            .filter(|e| e.workload == "default/low" && e.kind == kind)
            .map(|e| e.time)
            .collect()
    };
    assert_eq!(times(EventType::Admitted), [0.0, 40.0]);
    assert_eq!(times(EventType::Finished), [100.0]);
}

/// The reason of a workload no flavor takes is Kueue's tier (UnadmittedWorkloadsObservability):
/// the least severe over a resource group's flavors, the most severe over groups. (StrictFIFO:
/// the head stays at the head, not parked.)
#[test]
fn a_workload_no_flavor_takes_gets_kueues_reason_and_message() {
    assert_eq!(
        told(&scenario("reason-exceeds-max-quota-beats-taint"), "sales/new-job2"),
        vec![(
            1,
            false,
            "ExceedsMaxQuota: couldn't assign flavors to pod set main: insufficient quota for cpu in flavor on-demand, previously considered podsets requests (0) + current podset request (10) > maximum capacity (5), untolerated taint {key val NoSchedule <nil>} in flavor spot-tainted".into()
        )]
    );
    assert_eq!(
        told(&scenario("reason-no-matching-flavor"), "sales/new-job3"),
        vec![(
            1,
            false,
            "NoMatchingFlavor: couldn't assign flavors to pod set main: untolerated taint {key val NoSchedule <nil>} in flavor spot-tainted, untolerated taint {key val2 NoSchedule <nil>} in flavor spot-tainted-2".into()
        )]
    );
}
