//! The `wasq` command line: parses arguments, loads configuration, runs a driver, and is the
//! only place that prints for people.

use std::path::PathBuf;
use std::process::ExitCode;

#[macro_use]
mod cli;

/// mimalloc rather than glibc's malloc: at Kueue's large-scale shape it runs ≈ 5% fewer
/// instructions, and at ten times the shape it took 23,500–32,200 page faults where glibc took
/// 400,000 (BENCHMARKS.md, "Fresh plugin instances per bench run; mimalloc; the run's logs in
/// chunks (stop 38)"). The library, its tests and benches keep the system allocator. The batch
/// commands keep the memory they free ([`wasq_alloc`]).
#[global_allocator]
static ALLOCATOR: wasq_alloc::MiMalloc = wasq_alloc::MiMalloc;

use anyhow::Context;
use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

use cli::Output;
use cli::plugin::PluginCommand;
use cli::policies::PolicyArgs;
use wasq::sim::{Limits, Scenario, Simulation, duration::parse_millis};

#[derive(Parser)]
#[command(
    name = "wasq",
    version,
    long_version = long_version(),
    about = "A Kueue-compatible job-queueing controller with policies as sandboxed WebAssembly components"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run manifests on the embedded, deterministic cluster and report what the scheduler did.
    #[command(
        after_help = "Examples:\n  wasq simulate examples/baseline.yaml\n  wasq simulate examples/tas-racks.yaml -o json --report report.html\n  wasq simulate examples/reclaim-borrowed-quota.yaml --plugins target/plugins --compare preemption=builtin preemption=least-lost-work\n  wasq simulate cluster-now/ --policy ordering=demote-notebooks --plugins ./plugins\n  wasq simulate examples/gpu-cohort-borrowing.yaml --speed 10 --serve"
    )]
    Simulate {
        /// Manifest files, or directories whose *.yaml files are all read.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// How to print the result: a table for people, or JSON.
        #[arg(short, long, value_enum, default_value = "table")]
        output: Output,
        /// Stop after this many scheduling cycles (1 = exactly one cycle, as Kueue's unit tests).
        #[arg(long)]
        max_cycles: Option<u64>,
        /// Stop at this virtual time (e.g. 90s, 10m).
        #[arg(long, value_parser = parse_millis)]
        until: Option<i64>,
        /// Move the clock on after this many cycles at one instant that keep changing
        /// something (a livelock guard; default 1,000 + 10 per ClusterQueue).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        max_cycles_per_instant: Option<u64>,
        /// How many timeline events the table shows.
        #[arg(long, default_value_t = 60)]
        max_events: usize,
        #[command(flatten)]
        policies: PolicyArgs,
        /// Real time: run the virtual clock at N× wall time, watching --plugins for changes
        /// as the controller does (a swapped plugin decides from the next cycle on).
        #[arg(long, value_name = "N", conflicts_with = "watch")]
        speed: Option<f64>,
        /// Re-run whenever a plugin or manifest changes, printing how the decisions changed.
        #[arg(long)]
        watch: bool,
        /// Run the scenario under two policy bindings and print the difference: A and B are
        /// comma-separated EXT=NAME pairs applied over --policy/--config (e.g.
        /// `--compare ordering=builtin ordering=my-plugin,preemption=my-preemption`).
        #[arg(long, num_args = 2, value_names = ["A", "B"], conflicts_with_all = ["watch", "speed"])]
        compare: Option<Vec<String>>,
        /// LocalQueue label keys (e.g. team,cost-center) copied onto each workload, as the
        /// controller does: the report lists them per workload and sums usage per value.
        #[arg(long, value_delimiter = ',', value_name = "KEYS")]
        cost_attribution_labels: Vec<String>,
        /// Also write a self-contained HTML report with charts to FILE (with --compare: both
        /// runs, and the workloads whose fate differs).
        #[arg(long, value_name = "FILE", conflicts_with_all = ["watch", "speed"])]
        report: Option<PathBuf>,
        /// Run even when a bound plugin's file cannot be loaded: the built-in policy decides in
        /// its place (counted as fallbacks, reason `load-error`). Without it such a run fails,
        /// naming the file and the reason.
        #[arg(long)]
        allow_fallback: bool,
        /// Fail when a ClusterQueue or LocalQueue would be inactive in Kueue (a missing
        /// ResourceFlavor, AdmissionCheck or ClusterQueue) instead of warning and running.
        #[arg(long)]
        strict: bool,
        /// Serve the live dashboard of the simulated cluster on ADDR (default
        /// 127.0.0.1:8090; port 0 picks a free one): as it runs with --speed, and its end
        /// until Ctrl-C.
        #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8090", conflicts_with_all = ["watch", "compare"])]
        serve: Option<std::net::SocketAddr>,
    },
    /// Kueue's performance-test shape simulated twice in one process — built-in native policies,
    /// then the three kueue-default WASM plugins — with the WASM/native ratio.
    #[command(
        after_help = "Examples:\n  wasq bench --shape baseline --repeat 3\n  wasq bench --shape large-scale --scale 1,3,10 --repeat 5 -o json\n  wasq bench --driver controller --shape baseline\n  wasq bench --driver controller --shape baseline --kubeconfig perf-cluster.kubeconfig"
    )]
    Bench {
        /// Which of Kueue's performance-test shapes to generate.
        #[arg(long, value_enum, default_value = "baseline")]
        shape: wasq::sim::generate::Shape,
        /// Simulator driver: the shape's cohorts multiplied by N (10 = ten times the
        /// ClusterQueues and workloads, the same streams per ClusterQueue). Several scales
        /// (`1,3,10`) run in this process, interleaved round by round (see --repeat), with a
        /// table of how the wall time and memory grow from the first.
        #[arg(long, value_name = "N", value_delimiter = ',', default_value = "1")]
        scale: Vec<u32>,
        /// A manifest holding one `Generator` object (sim.wasq.dev/v1alpha1: a shape, scale,
        /// cohorts, queuesPerCohort, quota, classes) instead of --shape.
        #[arg(long, value_name = "FILE", conflicts_with = "shape")]
        generator: Option<PathBuf>,
        /// How to print the result: a table for people, or JSON.
        #[arg(short, long, value_enum, default_value = "table")]
        output: Output,
        /// Where kueue-default-ordering/-preemption/-flavors.wasm are (`wasq plugin build`;
        /// default: target/plugins in a source tree, else $XDG_DATA_HOME/wasq/plugins).
        #[arg(long, value_name = "DIR", default_value_os_t = cli::default_plugins())]
        plugins: PathBuf,
        /// Runs per side, alternating; the fastest of each is reported. With several scales,
        /// rounds: each runs the largest scale once per side and a smaller scale as many more
        /// times as it is smaller (at most ten times as many), so that each scale's median
        /// rests on about as much running time; the scales take turns within a round (forward,
        /// then backward in the next), so drift over the command weighs on all of them alike.
        #[arg(long, default_value_t = 1)]
        repeat: usize,
        /// Simulator driver: a policy configuration file for the WASM side (e.g. `limits:
        /// {deadlineMs: 200}`: one ordering call over 10,000 heads takes longer than the default
        /// 10 ms). (`--config` is the old name, kept for a release.)
        #[arg(long = "policy-config", alias = "config", value_name = "FILE")]
        config: Option<PathBuf>,
        /// Simulator driver: bind these plugins (`EXT=NAME`, repeatable) on the WASM side
        /// instead of the three kueue-default ones, the other extension points staying
        /// built-in: the cost of any plugin against the built-in on the same shape.
        #[arg(long = "policy", value_name = "EXT=NAME")]
        policy: Vec<String>,
        /// `simulator`: the shape on the virtual clock, native vs WASM policies. `controller`:
        /// the shape in real time through the controller against an in-process API server, or
        /// against a real cluster with --kubeconfig/--context.
        #[arg(long, value_enum, default_value = "simulator")]
        driver: BenchDriver,
        /// Controller driver: run in the cluster this kubeconfig reaches instead of the
        /// in-process API server (Kueue's CRDs installed, no Workload in it yet; the shape's
        /// objects are left there, as Kueue's performance runner leaves them).
        #[arg(long, value_name = "FILE")]
        kubeconfig: Option<PathBuf>,
        /// Controller driver: the kubeconfig context to use (implies a real cluster; default:
        /// its current-context).
        #[arg(long, value_name = "NAME")]
        context: Option<String>,
        /// Controller driver, with a cluster: measure the controller already running against
        /// it (Kueue's, for a side-by-side run) instead of running wasq's, reading its requests
        /// and process figures from its Prometheus metrics at this http:// URL.
        #[arg(long, value_name = "URL", requires = "kubeconfig")]
        controller_metrics: Option<String>,
        /// Controller driver: server-side latency of every API request of the in-process API
        /// server (e.g. 2ms).
        #[arg(long, default_value = "0ms", value_parser = parse_duration)]
        api_latency: std::time::Duration,
        /// Controller driver: multiplies arrival times and durations (0.1 = ten times faster);
        /// times to admit are reported in the shape's seconds.
        #[arg(long, default_value_t = 1.0)]
        time_scale: f64,
        /// Controller driver: wall time after which the run stops, finished or not.
        #[arg(long, default_value = "30m", value_parser = parse_duration)]
        time_limit: std::time::Duration,
        /// Controller driver: client-side requests per second (Kueue's default; 0: unpaced).
        #[arg(long, default_value_t = wasq::k8s::client::writer::DEFAULT_QPS)]
        kube_api_qps: f64,
        /// Controller driver: client-side burst (Kueue's default).
        #[arg(long, default_value_t = wasq::k8s::client::writer::DEFAULT_BURST)]
        kube_api_burst: u32,
        /// Controller driver: every workload pending when the controller starts, with quota for
        /// all of them (how fast a backlog is admitted).
        #[arg(long)]
        backlog: bool,
        /// Controller driver: the controller's `--pending-status-interval`.
        #[arg(long, default_value = "10s", value_parser = parse_duration)]
        pending_status_interval: std::time::Duration,
        /// Controller driver: a shadow policy (`EXT=NAME`, NAME a plugin in --plugins),
        /// asked the same questions as the policy that decides EXT and never acted on, as
        /// `wasq controller --shadow` runs it; its figures are reported. Repeatable.
        #[arg(long = "shadow", value_name = "EXT=NAME")]
        shadow: Vec<String>,
    },
    /// Inspect, list, scaffold and build policy plugins.
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// Run as the queueing controller of a Kubernetes cluster, in place of Kueue's controller.
    #[command(
        after_help = "Examples:\n  wasq controller --no-leader-elect --no-webhooks        # from a workstation, current kubeconfig\n  wasq controller --kubeconfig ~/.kube/prod --context east --plugins /etc/wasq/plugins\n  wasq controller --kueue-config kueue-config.yaml --record-trace /var/lib/wasq/trace.jsonl"
    )]
    Controller {
        #[command(flatten)]
        args: Box<cli::controller::ControllerArgs>,
        /// The plugin directory may be a mounted ConfigMap or volume.
        #[command(flatten)]
        policies: PolicyArgs,
    },
    /// Print Kueue's CustomResourceDefinitions (kueue.x-k8s.io), generated from wasq's types.
    #[command(after_help = "Examples:\n  wasq crds | kubectl apply --server-side -f -")]
    Crds,
    /// What kueuectl gives Kueue's users: list ClusterQueues, LocalQueues and Workloads with
    /// kueuectl's columns and pending positions, stop and resume them; describe a Workload with
    /// its decisions. Also runs as `kubectl wasq` (a copy or link of this binary named
    /// `kubectl-wasq` on PATH).
    #[command(
        after_help = "Examples:\n  wasq ctl list workloads -n team-a\n  wasq ctl list workload -A --status pending -o wide\n  wasq ctl list cq --active false\n  wasq ctl stop localqueue lq-a -n team-a --keep-already-running\n  wasq ctl resume workload job-sample-7d2f1 -n team-a\n  wasq ctl describe workload job-sample-7d2f1 -n team-a\n  kubectl wasq list lq -A"
    )]
    Ctl(cli::ctl::CtlArgs),
    /// One workload's story, in a simulator run (REPORT) or in a cluster (without REPORT, from
    /// the Workload's Events and conditions): when it waited and why, where it was admitted and
    /// which policies (name and digest) ordered it, chose its flavors and chose it as a victim,
    /// who preempted it, how it ended or what it waits for.
    #[command(
        after_help = "Examples:\n  wasq simulate examples/reclaim-borrowed-quota.yaml -o json > run.json\n  wasq explain research/research-sweep run.json\n  wasq explain job-sample-7d2f1 -n team-a\n  wasq explain team-a/job-sample-7d2f1 --context prod"
    )]
    Explain(cli::explain::ExplainArgs),
    /// Write a cluster's queueing state (Kueue objects, Workloads with their status, Namespaces,
    /// Nodes) into a directory the simulator runs as it is, e.g. `wasq snapshot -o now/` then
    /// `wasq simulate now/ --compare preemption=builtin preemption=my-plugin`.
    #[command(
        after_help = "Examples:\n  wasq snapshot -o now/\n  wasq snapshot --kubeconfig ~/.kube/prod --context east -o east/ && wasq simulate east/"
    )]
    Snapshot {
        /// The kubeconfig to reach the cluster with (default: $KUBECONFIG, else ~/.kube/config,
        /// else the in-cluster configuration), as with kubectl.
        #[arg(long, value_name = "FILE")]
        kubeconfig: Option<PathBuf>,
        /// The kubeconfig context to use (default: its current-context), as with kubectl.
        #[arg(long, value_name = "NAME")]
        context: Option<String>,
        /// The directory to write `<kind>.yaml` files into (made if missing; files of the same
        /// names are replaced).
        #[arg(short, long = "output-dir", value_name = "DIR")]
        output_dir: PathBuf,
    },
    /// QueuePolicy objects (policies.wasq.dev): how a shadow policy compares with the policy
    /// that decides.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Before replacing a running Kueue: what wasq would run as Kueue does, differently, or not
    /// at all, object by object, and what to do before switching (docs/deploy.md).
    #[command(subcommand)]
    Migrate(MigrateCommand),
    /// Print a shell completion script (e.g. `source <(wasq completion bash)`, or
    /// `wasq completion zsh > "${fpath[1]}/_wasq"`).
    #[command(
        after_help = "Examples:\n  wasq completion zsh > \"${fpath[1]}/_wasq\"\n  source <(wasq completion bash)\n  wasq completion fish > ~/.config/fish/completions/wasq.fish"
    )]
    Completion {
        /// The shell to complete in.
        shell: clap_complete::Shell,
    },
}

/// Which driver `wasq bench` runs the shape through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum BenchDriver {
    Simulator,
    Controller,
}

fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let ms = wasq::api::duration::parse_millis(s)?;
    u64::try_from(ms)
        .map(std::time::Duration::from_millis)
        .map_err(|_| format!("{s}: a duration cannot be negative"))
}

/// `wasq --version`: the release, the commit it was built from, the plugin contract it speaks
/// and the Kueue API it follows.
fn long_version() -> &'static str {
    static TEXT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "{}\ncommit:     {}\nwasq:policy {} (the WIT package plugins are built against)\n\
             kueue:      kueue.x-k8s.io/v1beta2 (Kueue's main branch after v0.19)",
            env!("CARGO_PKG_VERSION"),
            env!("WASQ_COMMIT"),
            wasq::wasm::WIT_VERSION,
        )
    });
    &TEXT
}

/// `wasq policy`.
#[derive(Subcommand)]
enum PolicyCommand {
    /// A shadow policy's agreement with the policy that decides, and where it differed: from
    /// the cluster (the QueuePolicy's status, which the leader keeps current), or from a
    /// simulator report (`--from-report`, written by `wasq simulate -o json`).
    #[command(
        after_help = "Examples:\n  wasq policy shadow-report fair-share-v2\n  wasq policy shadow-report fair-share-v2 --context east -o json\n  wasq simulate now/ trial.yaml -o json > run.json && wasq policy shadow-report fair-share-v2 --from-report run.json"
    )]
    ShadowReport {
        /// The QueuePolicy's name (in a simulator report: the shadow's name).
        name: String,
        /// A simulator report (`wasq simulate -o json`) to read instead of the cluster.
        #[arg(long, value_name = "FILE")]
        from_report: Option<PathBuf>,
        /// The kubeconfig to reach the cluster with (default: $KUBECONFIG, else ~/.kube/config,
        /// else the in-cluster configuration), as with kubectl.
        #[arg(long, value_name = "FILE", conflicts_with = "from_report")]
        kubeconfig: Option<PathBuf>,
        /// The kubeconfig context to use (default: its current-context), as with kubectl.
        #[arg(long, value_name = "NAME", conflicts_with = "from_report")]
        context: Option<String>,
        /// How to print the report: a table for people, or JSON.
        #[arg(short, long, value_enum, default_value = "table")]
        output: Output,
    },
}

/// `wasq migrate`.
#[derive(Subcommand)]
enum MigrateCommand {
    /// Read a running Kueue installation (its Configuration, feature gates, webhooks, flavors,
    /// cohorts, queues, admission checks, Topologies and Workloads) and report, object by object,
    /// `same`, `different` (with where the docs say how) or `unsupported`, and the `action`s to
    /// take before switching. Writes nothing. Exits 1 when something is unsupported.
    #[command(
        after_help = "Examples:\n  wasq migrate check\n  wasq migrate check --kubeconfig ~/.kube/prod --context east -o json"
    )]
    Check {
        /// The kubeconfig to reach the cluster with (default: $KUBECONFIG, else ~/.kube/config,
        /// else the in-cluster configuration), as with kubectl.
        #[arg(long, value_name = "FILE")]
        kubeconfig: Option<PathBuf>,
        /// The kubeconfig context to use (default: its current-context), as with kubectl.
        #[arg(long, value_name = "NAME")]
        context: Option<String>,
        /// The namespace Kueue's controller runs in.
        #[arg(long, value_name = "NAMESPACE", default_value = wasq::k8s::migrate::KUEUE_NAMESPACE)]
        kueue_namespace: String,
        /// How to print the findings.
        #[arg(short, long, value_enum, default_value = "table")]
        output: Output,
    },
}

/// The command line; run as `kubectl-wasq` (`kubectl wasq …`), the words are `wasq ctl`'s.
fn arguments() -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let invoked = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_stem())
        .is_some_and(|stem| stem == "kubectl-wasq");
    if invoked {
        args.insert(1, "ctl".into());
    }
    args
}

fn main() -> ExitCode {
    let logs = tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("WASQ_LOG").unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        // Colours only on a terminal, and never with NO_COLOR set (no-color.org).
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        );
    // WASQ_LOG_FORMAT=json: one JSON object per line (for log pipelines).
    if std::env::var("WASQ_LOG_FORMAT").is_ok_and(|f| f == "json") {
        logs.json().init();
    } else {
        logs.init();
    }
    let cli = Cli::parse_from(arguments());
    // A batch run frees and reuses the same memory all through; returned to the kernel after
    // mimalloc's default second, it was zeroed again each time it came back (BENCHMARKS.md,
    // stop 52). Before any thread starts.
    if matches!(
        cli.command,
        Command::Simulate { .. } | Command::Bench { .. }
    ) {
        wasq_alloc::keep_freed_memory();
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of standard output went away (`wasq simulate -o json | head`).
        Err(e) if reader_gone(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Plugin(command) => cli::plugin::run(command),
        Command::Bench {
            shape,
            driver: BenchDriver::Controller,
            output,
            api_latency,
            time_scale,
            time_limit,
            kube_api_qps,
            kube_api_burst,
            backlog,
            pending_status_interval,
            scale,
            generator,
            plugins,
            config,
            policy,
            shadow,
            kubeconfig,
            context,
            controller_metrics,
            ..
        } => {
            if scale != [1] {
                anyhow::bail!(
                    "--scale applies to the simulator driver only (a --generator file has a scale)"
                );
            }
            let generator = match generator {
                Some(path) => load_generator(&path)?,
                None => wasq::sim::generate::Generator::scaled(shape, 1, None)?,
            };
            let cluster = (kubeconfig.is_some() || context.is_some()).then_some(
                wasq::bench::controller::Cluster {
                    kubeconfig,
                    context,
                },
            );
            // As `wasq controller` binds them: --policy (default built-in), --shadow. Without
            // either, a missing default plugin directory is no error: the built-in decides.
            let asked = !policy.is_empty() || !shadow.is_empty();
            let policies = PolicyArgs {
                plugins: (asked || plugins.is_dir()).then_some(plugins),
                policies: policy,
                shadows: shadow,
                config,
                ..PolicyArgs::default()
            }
            .load(false, false)?;
            let report = wasq::bench::controller::run(&wasq::bench::controller::Options {
                configure: Some(policies.configure_hook()),
                shadows: Some(policies.shadow_log.clone()),
                generator,
                cluster,
                external_metrics: controller_metrics,
                api_latency,
                time_scale,
                limit: time_limit,
                qps: kube_api_qps,
                burst: kube_api_burst,
                backlog,
                pending_status_interval,
            })?;
            match output {
                Output::Json => print_json(&report)?,
                Output::Table => out!("{}", report.to_table()),
            }
            Ok(())
        }
        Command::Bench {
            shape,
            scale,
            generator,
            output,
            plugins,
            repeat,
            config,
            policy,
            shadow,
            kubeconfig,
            context,
            controller_metrics,
            ..
        } => {
            if kubeconfig.is_some() || context.is_some() || controller_metrics.is_some() {
                anyhow::bail!(
                    "--kubeconfig, --context and --controller-metrics apply to the controller driver (--driver controller)"
                );
            }
            if !shadow.is_empty() {
                anyhow::bail!(
                    "--shadow applies to the controller driver (the simulator compares a shadow \
                     with `wasq simulate --shadow`)"
                );
            }
            if generator.is_some() && scale != [1] {
                anyhow::bail!("--scale multiplies --shape; a --generator file sets its own scale");
            }
            let generators = match generator {
                Some(path) => vec![load_generator(&path)?],
                None => scale
                    .iter()
                    .map(|&n| {
                        wasq::sim::generate::Generator::scaled(shape, n, None)
                            .with_context(|| format!("--scale {n}"))
                    })
                    .collect::<anyhow::Result<_>>()?,
            };
            let args = PolicyArgs {
                plugins: Some(plugins),
                policies: if policy.is_empty() {
                    vec![
                        "ordering=kueue-default-ordering".into(),
                        "preemption=kueue-default-preemption".into(),
                        "flavor-assignment=kueue-default-flavors".into(),
                    ]
                } else {
                    policy
                },
                shadows: Vec::new(),
                config,
                cache: Default::default(),
            };
            let policies = args.load(false, true)?;
            let progress = |label: &str, total: usize| {
                cli::progress::Bar::new(label, total).map(|bar| {
                    Box::new(move |t: f64, done: usize, _total: usize| bar.update(t, done))
                        as wasq::bench::simulator::RunProgress<'_>
                })
            };
            // Fresh instances per run: one run's guest state (its catalog, the usage it keeps,
            // its heap) does not carry into the next run's time.
            let wasm = || policies.fresh_bindings(policies.bindings.clone());
            if generators.len() == 1 {
                let report =
                    wasq::bench::simulator::bench(&generators[0], repeat, wasm, Some(&progress))?;
                match output {
                    Output::Json => print_json(&report)?,
                    Output::Table => out!("{}", report.to_table()),
                }
                return Ok(());
            }
            // One generator per scale (a `--generator` file comes alone, above).
            let report = wasq::bench::simulator::bench_scales(
                &generators,
                &scale,
                repeat,
                wasm,
                Some(&progress),
            )?;
            match output {
                Output::Json => print_json(&report)?,
                Output::Table => out!("{}", report.to_table()),
            }
            Ok(())
        }
        Command::Controller { args, policies } => {
            let mut policies = policies.load(true, false)?;
            let _watch = policies.watch()?;
            let objects = policies.cluster_objects();
            cli::controller::run(
                *args,
                policies.configure_hook(),
                cli::controller::PolicyHost {
                    plugins: Some(policies.source.clone()),
                    shadows: policies.shadow_log.clone(),
                    objects: Some(objects),
                },
            )
        }
        Command::Snapshot {
            kubeconfig,
            context,
            output_dir,
        } => cli::cluster::snapshot(kubeconfig.as_deref(), context.as_deref(), &output_dir),
        Command::Migrate(MigrateCommand::Check {
            kubeconfig,
            context,
            kueue_namespace,
            output,
        }) => {
            let report = cli::cluster::migrate_check(
                kubeconfig.as_deref(),
                context.as_deref(),
                &kueue_namespace,
            )?;
            match output {
                Output::Table => out!("{}", report.to_table()),
                Output::Json => print_json(&report)?,
            }
            let unsupported = report.count(wasq::k8s::migrate::Verdict::Unsupported);
            if unsupported > 0 {
                anyhow::bail!(
                    "{unsupported} thing(s) of this Kueue installation wasq does not run"
                );
            }
            Ok(())
        }
        Command::Policy(PolicyCommand::ShadowReport {
            name,
            from_report,
            kubeconfig,
            context,
            output,
        }) => {
            let report = match &from_report {
                Some(path) => cli::shadow_report::from_simulation(path, &name)?,
                None => cli::shadow_report::from_cluster(
                    kubeconfig.as_deref(),
                    context.as_deref(),
                    &name,
                )?,
            };
            match output {
                Output::Table => out!("{}", report.to_table()),
                Output::Json => print_json(&report)?,
            }
            Ok(())
        }
        Command::Completion { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "wasq", &mut std::io::stdout());
            Ok(())
        }
        Command::Ctl(args) => cli::ctl::run(args),
        Command::Explain(args) => cli::explain::run(args),
        Command::Crds => {
            let yaml = wasq::k8s::schema::crds::crds_yaml().context("printing the CRDs as YAML")?;
            out!("{yaml}");
            Ok(())
        }
        Command::Simulate {
            paths,
            output,
            max_cycles,
            until,
            max_cycles_per_instant,
            max_events,
            policies,
            speed,
            watch,
            compare,
            cost_attribution_labels,
            report: html,
            allow_fallback,
            strict,
            serve,
        } => {
            if speed.is_some_and(|s| !(s > 0.0 && s.is_finite())) {
                anyhow::bail!("--speed must be a positive number");
            }
            let limits = Limits {
                max_cycles,
                until,
                max_cycles_per_instant,
            };
            if watch {
                return cli::watch::run(&paths, &policies, limits);
            }
            let checked = Checked {
                strict,
                allow_fallback,
            };
            if let Some(specs) = compare {
                return compare_policies(
                    &paths,
                    &policies,
                    &specs,
                    limits,
                    output,
                    html.as_deref(),
                    checked,
                );
            }
            let mut policies = policies.load(speed.is_some(), true)?;
            let _watch = policies.watch()?;
            let scenario = policies.load_scenario(&paths, &cost_attribution_labels)?;
            policies.bind_scenario_objects(&scenario.policies, allow_fallback)?;
            checked.inactive(&scenario)?;
            policies.refuse_unloadable(&policies.bindings, &scenario.cluster, allow_fallback)?;
            if scenario.multikueue.is_some() {
                if serve.is_some() || speed.is_some() {
                    anyhow::bail!(
                        "--serve and --speed show one cluster; this scenario's \
                         MultiKueueClusters name worker manifests (sim.wasq.dev/manifests), \
                         which they do not show yet (--report FILE.html shows them all)"
                    );
                }
                let federation = run_federation(scenario, &limits, || policies.live_bindings())?;
                use wasq::sim::html::RunModel;
                let prepared = html.as_ref().map(|_| {
                    let workers: Vec<_> = (federation.workers.iter())
                        .map(|w| RunModel::prepare(&w.name, &w.sim))
                        .collect();
                    (RunModel::prepare("manager", &federation.manager), workers)
                });
                let report = federation.report();
                if let (Some(path), Some((manager, workers))) = (&html, prepared) {
                    write_html(
                        path,
                        &wasq::sim::html::federation(manager, workers, &report)?,
                    )?;
                }
                match output {
                    Output::Json => print_json(&report)?,
                    Output::Table => out!("{}", report.to_table(max_events)),
                }
                return Ok(());
            }
            let total = scenario.cluster.workloads.len();
            let mut sim = Simulation::new(scenario);
            sim.use_policies(policies.live_bindings())?;
            if let Some(speed) = speed {
                sim.pace(speed);
            }
            let title = format!(
                "wasq simulate {}",
                paths
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            let dashboard = serve.map(cli::dashboard::start).transpose()?;
            if let Some(d) = &dashboard {
                let board = d.board.clone();
                let title = title.clone();
                board.publish(wasq::sim::dashboard::view(&sim, &title, true));
                // Live: a view at most every quarter of a second of wall time.
                if speed.is_some() {
                    let mut last = std::time::Instant::now();
                    sim.observe(Box::new(move |sim| {
                        if last.elapsed() >= std::time::Duration::from_millis(250) {
                            board.publish(wasq::sim::dashboard::view(sim, &title, true));
                            last = std::time::Instant::now();
                        }
                    }));
                }
            }
            match cli::progress::Bar::new("simulate", total) {
                Some(bar) => {
                    let mut update = |t: f64, done: usize, _total: usize| bar.update(t, done);
                    sim.run(&limits, Some(&mut update));
                }
                None => sim.run(&limits, None),
            }
            // The page reads the simulation too (its usage log): that part is taken before the
            // report is made from it.
            let prepared = html
                .as_ref()
                .map(|_| wasq::sim::html::RunModel::prepare("run", &sim));
            if let Some(d) = &dashboard {
                d.board
                    .publish(wasq::sim::dashboard::view(&sim, &title, false));
            }
            let report = sim.take_report();
            if let (Some(path), Some(prepared)) = (&html, prepared) {
                write_html(path, &wasq::sim::html::single(prepared, &report)?)?;
            }
            match output {
                Output::Json => print_json(&report)?,
                Output::Table => out!("{}", report.to_table(max_events)),
            }
            if let Some(d) = dashboard {
                return d.until_interrupted();
            }
            // The process ends here. Freeing the simulation and its report, millions of
            // allocations at scale (4% of a 10x run for the simulation alone), would only
            // delay the exit.
            std::mem::forget(sim);
            std::mem::forget(report);
            Ok(())
        }
    }
}

/// Writes the HTML report, naming the file on failure.
fn write_html(path: &std::path::Path, page: &str) -> anyhow::Result<()> {
    std::fs::write(path, page).with_context(|| format!("writing {}", path.display()))
}

/// Writes a report as pretty JSON to stdout as it serializes (a large simulation's report is
/// never held as one string).
/// Whether `e` is a write to a closed pipe.
fn reader_gone(e: &anyhow::Error) -> bool {
    use std::io::ErrorKind::BrokenPipe;
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == BrokenPipe)
            || c.downcast_ref::<serde_json::Error>()
                .is_some_and(|e| e.io_error_kind() == Some(BrokenPipe))
    })
}

fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// The one `Generator` object of a manifest file (`wasq bench --generator`).
fn load_generator(path: &std::path::Path) -> anyhow::Result<wasq::sim::generate::Generator> {
    let manifests = wasq::api::load::load_paths(&[path.to_path_buf()])
        .with_context(|| format!("loading {}", path.display()))?;
    let [ext] = manifests.extensions.as_slice() else {
        anyhow::bail!(
            "{}: expected exactly one Generator object (sim.wasq.dev/v1alpha1), found {} simulator objects",
            path.display(),
            manifests.extensions.len()
        );
    };
    wasq::sim::extensions::generator_of(ext).with_context(|| format!("{}", path.display()))
}

/// What `wasq simulate` checks of a loaded scenario before it runs.
#[derive(Debug, Clone, Copy)]
struct Checked {
    /// `--strict`: what Kueue would report inactive is an error, not a warning.
    strict: bool,
    /// `--allow-fallback`: a bound plugin that cannot load is replaced by the built-in.
    allow_fallback: bool,
}

impl Checked {
    /// Warns of each ClusterQueue and LocalQueue Kueue would report inactive, or with
    /// `--strict` fails naming them all.
    fn inactive(self, scenario: &Scenario) -> anyhow::Result<()> {
        let inactive = wasq::sim::report::inactive_objects(&scenario.cluster);
        if self.strict && !inactive.is_empty() {
            let lines: Vec<String> = inactive.iter().map(|o| format!("  {o}")).collect();
            anyhow::bail!(
                "--strict: {} object(s) would be inactive in Kueue:\n{}",
                inactive.len(),
                lines.join("\n")
            );
        }
        for o in &inactive {
            tracing::warn!("{o}; its workloads stay pending");
        }
        Ok(())
    }
}

/// A MultiKueue scenario: the manager and its workers, each cluster with its own bindings.
fn run_federation(
    scenario: Scenario,
    limits: &Limits,
    bindings: impl FnMut() -> wasq::wasm::LiveBindings,
) -> anyhow::Result<wasq::sim::multikueue::Federation> {
    let mut federation =
        wasq::sim::multikueue::Federation::new(scenario).context("loading the worker clusters")?;
    federation.use_policies(bindings)?;
    if let Some(why) = federation.unplayable_dispatcher() {
        anyhow::bail!(why);
    }
    federation.run(limits, None);
    Ok(federation)
}

/// `wasq simulate --compare A B`: the scenario loaded once, run under each binding.
fn compare_policies(
    paths: &[PathBuf],
    policies: &PolicyArgs,
    specs: &[String],
    limits: Limits,
    output: Output,
    html: Option<&std::path::Path>,
    checked: Checked,
) -> anyhow::Result<()> {
    let [a, b] = specs else {
        anyhow::bail!("--compare takes two bindings, A and B");
    };
    let mut policies = policies.load(false, true)?;
    let (bindings_a, bindings_b) = (policies.bindings_with(a)?, policies.bindings_with(b)?);
    let scenario = policies.load_scenario(paths, &[])?;
    policies.bind_scenario_objects(&scenario.policies, checked.allow_fallback)?;
    checked.inactive(&scenario)?;
    for bindings in [&bindings_a, &bindings_b] {
        policies.refuse_unloadable(bindings, &scenario.cluster, checked.allow_fallback)?;
    }
    if scenario.multikueue.is_some() {
        if html.is_some() {
            anyhow::bail!(
                "--report with --compare shows one cluster per run; this scenario's \
                 MultiKueueClusters name worker manifests (sim.wasq.dev/manifests), which it \
                 does not show yet (without --compare, --report shows them all)"
            );
        }
        let run = |bindings: &wasq::wasm::Bindings| {
            run_federation(scenario.clone(), &limits, || {
                policies.fresh_bindings(bindings.clone())
            })
            .map(|f| f.report())
        };
        let (report_a, report_b) = (run(&bindings_a)?, run(&bindings_b)?);
        let comparison = wasq::sim::multikueue::report::compare((a, &report_a), (b, &report_b));
        match output {
            Output::Json => print_json(&comparison)?,
            Output::Table => out!("{}", comparison.to_table()),
        }
        return Ok(());
    }
    let sim_a = wasq::sim::compare::run(&scenario, &limits, policies.fresh_bindings(bindings_a))?;
    let sim_b = wasq::sim::compare::run(&scenario, &limits, policies.fresh_bindings(bindings_b))?;
    let comparison = wasq::sim::compare::compare_runs((a, &sim_a), (b, &sim_b));
    if let Some(path) = html {
        use wasq::sim::html::RunModel;
        let prepared_a = RunModel::prepare(&format!("A ({a})"), &sim_a);
        let prepared_b = RunModel::prepare(&format!("B ({b})"), &sim_b);
        let (report_a, report_b) = (sim_a.into_report(), sim_b.into_report());
        let page = wasq::sim::html::compared((prepared_a, &report_a), (prepared_b, &report_b))?;
        write_html(path, &page)?;
    }
    match output {
        Output::Json => print_json(&comparison)?,
        Output::Table => out!("{}", comparison.to_table()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    /// Every argument of every command says what it is for in `--help`.
    #[test]
    fn every_argument_has_help() {
        fn walk(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in command.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in command.get_subcommands() {
                if sub.get_about().is_none() && sub.get_long_about().is_none() {
                    missing.push(format!("{path} {} (the command)", sub.get_name()));
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "wasq", &mut missing);
        assert!(missing.is_empty(), "no help for: {missing:#?}");
    }

    /// Every command that runs something shows how in an Examples section of its `--help`.
    #[test]
    fn every_command_has_examples() {
        fn walk(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for sub in command.get_subcommands() {
                let path = format!("{path} {}", sub.get_name());
                if sub.has_subcommands() {
                    walk(sub, &path, missing);
                } else if !sub
                    .get_after_help()
                    .is_some_and(|h| h.to_string().starts_with("Examples:\n  wasq "))
                {
                    missing.push(path);
                }
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "wasq", &mut missing);
        assert!(missing.is_empty(), "no examples for: {missing:#?}");
    }

    #[test]
    fn the_long_version_names_the_commit_the_contract_and_kueue() {
        let text = super::long_version();
        assert!(text.starts_with(env!("CARGO_PKG_VERSION")), "{text}");
        assert!(text.contains("commit:"), "{text}");
        assert!(
            text.contains(&format!("wasq:policy {}", wasq::wasm::WIT_VERSION)),
            "{text}"
        );
        assert!(text.contains("kueue.x-k8s.io/v1beta2"), "{text}");
    }
}
