//! Every example under `examples/` loads and runs: none rots as the manifests' shape evolves.
//! (Kueue's performance shapes, `baseline` and `large-scale`, are only loaded here; their runs
//! are checked in `sim_inputs.rs` and benchmarked.)

use std::path::{Path, PathBuf};

use wasq::sim::{EventType, Limits, Scenario, Simulation};

#[test]
fn every_example_loads_and_admits_something() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("examples/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    for file in files {
        let scenario = Scenario::load(std::slice::from_ref(&file))
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        if name == "baseline.yaml" || name == "large-scale.yaml" {
            continue;
        }
        let mut sim = Simulation::new(scenario);
        sim.run(
            &Limits {
                until: Some(24 * 3600 * 1000),
                ..Limits::default()
            },
            None,
        );
        let r = sim.report();
        assert!(
            r.events.iter().any(|e| e.kind == EventType::Admitted),
            "{name} admits nothing"
        );
    }
}

#[test]
fn the_provisioning_retries_example_runs_as_its_comment_says() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/provisioning-retries.yaml");
    let mut sim = Simulation::new(Scenario::load(&[file]).unwrap());
    sim.run(&Limits::default(), None);
    let r = sim.report();
    let key = |w: &str| {
        r.workloads
            .iter()
            .find(|x| x.name.starts_with(w))
            .map(|x| format!("{}/{}", x.namespace, x.name))
            .unwrap()
    };
    let (finetune, eval) = (key("job-finetune-"), key("job-eval-"));
    let at = |w: &str, kind: EventType| -> Vec<f64> {
        r.events
            .iter()
            .filter(|e| e.workload == w && e.kind == kind)
            .map(|e| e.time)
            .collect()
    };
    assert_eq!(at(&finetune, EventType::QuotaReserved), [0.0, 240.0]);
    assert_eq!(at(&finetune, EventType::Evicted), [120.0]);
    assert_eq!(at(&finetune, EventType::Admitted), [360.0]);
    assert_eq!(at(&finetune, EventType::PodsReady), [540.0]);
    assert_eq!(at(&finetune, EventType::Finished), [4140.0]);
    assert_eq!(at(&eval, EventType::QuotaReserved), [120.0, 540.0]);
    assert_eq!(at(&eval, EventType::Admitted), [660.0]);
    assert_eq!(at(&eval, EventType::Finished), [1260.0]);
}

#[test]
fn the_tas_preemption_example_runs_as_its_comment_says() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tas-preemption.yaml");
    let mut sim = Simulation::new(Scenario::load(&[file]).unwrap());
    sim.run(&Limits::default(), None);
    let r = sim.report();
    let key = |w: &str| {
        r.workloads
            .iter()
            .find(|x| x.name.starts_with(w))
            .map(|x| format!("{}/{}", x.namespace, x.name))
            .unwrap()
    };
    let (a, b, urgent) = (
        key("job-warmup-a-"),
        key("job-warmup-b-"),
        key("job-urgent-train-"),
    );
    let at = |w: &str, kind: EventType| -> Vec<f64> {
        r.events
            .iter()
            .filter(|e| e.workload == w && e.kind == kind)
            .map(|e| e.time)
            .collect()
    };
    // warmup-a alone is preempted, by urgent-train, at 5m; warmup-b keeps running.
    let preempted: Vec<_> = r
        .events
        .iter()
        .filter(|e| e.kind == EventType::Preempted)
        .map(|e| {
            (
                e.time,
                e.workload.clone(),
                e.preemptor.clone(),
                e.reason.clone(),
            )
        })
        .collect();
    assert_eq!(
        preempted,
        [(
            300.0,
            a.clone(),
            Some(urgent.clone()),
            Some("InClusterQueue".to_string())
        )]
    );
    assert_eq!(at(&urgent, EventType::Admitted), [300.0]);
    assert_eq!(at(&urgent, EventType::Finished), [1500.0]);
    assert_eq!(at(&a, EventType::Admitted), [0.0, 1500.0]);
    assert_eq!(at(&b, EventType::Admitted), [0.0]);
    assert_eq!(at(&b, EventType::Finished), [2400.0]);
    // Requeued, warmup-a waits for a rack with 10 free GPUs.
    let waiting: Vec<_> = r
        .events
        .iter()
        .filter(|e| e.workload == a && e.kind == EventType::Inadmissible)
        .map(|e| (e.time, e.reason.clone()))
        .collect();
    assert_eq!(
        waiting,
        [(
            300.0,
            Some(
                r#"WaitingForQuota: couldn't assign flavors to pod set main: topology "racks" allows to fit only 8 out of 10 pod(s). Total nodes: 4; excluded: resource "nvidia.com/gpu": 2"#
                    .to_string()
            )
        )]
    );
    // urgent-train's 8 pods share one rack and one node.
    let spans = r
        .topology
        .placements
        .iter()
        .find(|p| p.workload.starts_with(&urgent))
        .map(|p| {
            p.domains_per_level
                .iter()
                .map(|(_, n)| *n)
                .collect::<Vec<_>>()
        });
    assert_eq!(spans, Some(vec![1, 1]));
}

#[test]
fn the_multikueue_example_runs_every_job_on_a_worker_and_survives_the_lost_region() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/multikueue/manager.yaml");
    let scenario = Scenario::load(&[file]).expect("loads");
    let mut f = wasq::sim::multikueue::Federation::new(scenario).expect("the workers load");
    f.run(&Limits::default(), None);
    let r = f.report();
    assert_eq!(r.summary.workloads, 10);
    assert!(
        r.manager.workloads.iter().all(|w| w.state == "finished"),
        "{:?}",
        r.manager
            .workloads
            .iter()
            .map(|w| (&w.name, w.state))
            .collect::<Vec<_>>()
    );
    let ran: u32 = r.workers.iter().map(|w| w.ran).sum();
    assert_eq!(ran, 10);
    // eu-west is lost from 50m to 70m: what ran there at 50m is dispatched again after
    // workerLostTimeout (5m), and us-east's own jobs ran there too.
    let eu = r.workers.iter().find(|w| w.name == "eu-west").unwrap();
    assert_eq!((eu.losses, eu.lost_seconds), (1, 1200.0));
    assert!(r.summary.dispatched_again > 0);
    for w in r.workloads.iter().filter(|w| w.attempts.len() > 1) {
        assert_eq!(w.attempts[0].outcome, Some("its worker was lost"), "{w:?}");
        assert_eq!(w.attempts[1].reserved_seconds, 3300.0, "{w:?}");
    }
    let us = r.workers.iter().find(|w| w.name == "us-east").unwrap();
    assert!(
        us.report
            .workloads
            .iter()
            .filter(|w| w.namespace == "research")
            .all(|w| w.state == "finished")
    );
}
