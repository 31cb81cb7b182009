//! `wasq ctl` (also run as `kubectl wasq`): kueuectl's `list`, `stop` and `resume`, and wasq's
//! `describe workload`, over the cluster the kubeconfig reaches (`wasq::k8s::ctl`).

use std::path::PathBuf;

use wasq::k8s::ctl::{
    Activation, DescribeOutput, DryRun, ListOptions, Listed, Output, Target, TargetKind,
    describe_workload, list, set_activation,
};

use super::cluster::on_cluster;

#[derive(clap::Args)]
pub struct CtlArgs {
    #[command(subcommand)]
    command: CtlCommand,
    /// The kubeconfig to reach the cluster with (default: $KUBECONFIG, else ~/.kube/config, else
    /// the in-cluster configuration), as with kubectl.
    #[arg(long, value_name = "FILE", global = true)]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current-context).
    #[arg(long, value_name = "NAME", global = true)]
    context: Option<String>,
    /// The namespace (default: the context's, else `default`).
    #[arg(short = 'n', long, value_name = "NAMESPACE", global = true)]
    namespace: Option<String>,
}

#[derive(clap::Subcommand)]
enum CtlCommand {
    /// List ClusterQueues, LocalQueues or Workloads with kueuectl's columns.
    #[command(subcommand, visible_alias = "ps")]
    List(ListCommand),
    /// Stop a Workload (`spec.active: false`) or a queue (`spec.stopPolicy: HoldAndDrain`, or
    /// `Hold` with --keep-already-running).
    #[command(subcommand)]
    Stop(StopCommand),
    /// Resume a Workload (`spec.active: true`) or a queue (`spec.stopPolicy: None`).
    #[command(subcommand)]
    Resume(ResumeCommand),
    /// Describe a Workload as kubectl describes objects, with its Decisions: the Events
    /// regarding it and the policies that decided each.
    #[command(subcommand)]
    Describe(DescribeCommand),
}

#[derive(clap::Subcommand)]
enum DescribeCommand {
    /// A Workload: where it queues, its status and position, podSets, admission, checks,
    /// conditions, and its Decisions (the Events regarding it, oldest first, each with the
    /// policies wasq's annotations name).
    #[command(
        visible_alias = "kwl",
        aliases = ["workloads", "kueueworkload", "kueueworkloads"],
        after_help = "Examples:\n  wasq ctl describe workload job-sample-7d2f1 -n team-a\n  wasq ctl describe kwl job-sample-7d2f1 -n team-a -o yaml"
    )]
    Workload {
        /// The Workload's name.
        name: String,
        /// Output: kubectl describe's text (the default), or the Workload and its Events as a
        /// `List` in `json` or `yaml`.
        #[arg(short, long, value_enum)]
        output: Option<DescribeFormat>,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum DescribeFormat {
    Json,
    Yaml,
}

#[derive(clap::Args)]
struct ListFlags {
    /// Every namespace.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// Label selector, passed to the server (e.g. `team=a`).
    #[arg(short = 'l', long)]
    selector: Option<String>,
    /// Field selector, passed to the server.
    #[arg(long)]
    field_selector: Option<String>,
    /// Output: kueuectl's table, `wide` (wasq's columns too), `json` or `yaml`.
    #[arg(short, long, value_enum, default_value = "table")]
    output: Format,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    Table,
    Wide,
    Json,
    Yaml,
}

#[derive(clap::Subcommand)]
enum ListCommand {
    /// ClusterQueues: NAME COHORT PENDING WORKLOADS ADMITTED WORKLOADS ACTIVE AGE.
    #[command(
        visible_alias = "cq",
        alias = "clusterqueues",
        after_help = "Examples:\n  wasq ctl list clusterqueues\n  wasq ctl list cq --active false -o wide"
    )]
    Clusterqueue {
        #[command(flatten)]
        flags: ListFlags,
        /// Only active (`true`) or inactive (`false`) ones.
        #[arg(long)]
        active: Option<bool>,
    },
    /// LocalQueues: NAME CLUSTERQUEUE PENDING WORKLOADS ADMITTED WORKLOADS AGE.
    #[command(
        visible_alias = "lq",
        alias = "localqueues",
        after_help = "Examples:\n  wasq ctl list localqueues -n team-a\n  wasq ctl list lq -A -c gpu-cq"
    )]
    Localqueue {
        #[command(flatten)]
        flags: ListFlags,
        /// Only those of this ClusterQueue.
        #[arg(short = 'c', long)]
        clusterqueue: Option<String>,
    },
    /// Workloads: NAME JOB TYPE JOB NAME LOCALQUEUE CLUSTERQUEUE STATUS POSITION IN QUEUE
    /// EXEC TIME AGE (positions from the visibility API).
    #[command(
        visible_alias = "kwl",
        aliases = ["workloads", "kueueworkload", "kueueworkloads"],
        after_help = "Examples:\n  wasq ctl list workloads -n team-a\n  wasq ctl list workload -A --status pending -o wide\n  wasq ctl list kwl -q lq-a -n team-a -o yaml"
    )]
    Workload {
        #[command(flatten)]
        flags: ListFlags,
        /// Only those admitted to this ClusterQueue.
        #[arg(short = 'c', long)]
        clusterqueue: Option<String>,
        /// Only those of this LocalQueue.
        #[arg(short = 'q', long)]
        localqueue: Option<String>,
        /// Only those in this state: all, pending, quotareserved, admitted, finished
        /// (repeatable).
        #[arg(long)]
        status: Vec<String>,
    },
}

#[derive(clap::Args)]
struct Named {
    /// The object's name.
    name: String,
    /// `none`, `client` (nothing sent) or `server` (checked by the server, not kept).
    #[arg(long, value_enum, default_value = "none")]
    dry_run: DryRunArg,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum DryRunArg {
    None,
    Client,
    Server,
}

#[derive(clap::Subcommand)]
enum StopCommand {
    /// A Workload: `spec.active: false`.
    #[command(
        visible_alias = "kwl",
        aliases = ["kueueworkload", "kueueworkloads"],
        after_help = "Examples:\n  wasq ctl stop workload job-sample-7d2f1 -n team-a\n  wasq ctl stop kwl job-sample-7d2f1 -n team-a --dry-run server"
    )]
    Workload(Named),
    /// A LocalQueue: no more admissions; its admitted workloads evicted unless
    /// --keep-already-running.
    #[command(
        visible_alias = "lq",
        after_help = "Examples:\n  wasq ctl stop localqueue lq-a -n team-a\n  wasq ctl stop lq lq-a -n team-a --keep-already-running"
    )]
    Localqueue {
        #[command(flatten)]
        named: Named,
        /// `Hold` instead of `HoldAndDrain`.
        #[arg(long)]
        keep_already_running: bool,
    },
    /// A ClusterQueue, as a LocalQueue.
    #[command(
        visible_alias = "cq",
        after_help = "Examples:\n  wasq ctl stop clusterqueue gpu-cq\n  wasq ctl stop cq gpu-cq --keep-already-running"
    )]
    Clusterqueue {
        #[command(flatten)]
        named: Named,
        /// `Hold` instead of `HoldAndDrain`.
        #[arg(long)]
        keep_already_running: bool,
    },
}

#[derive(clap::Subcommand)]
enum ResumeCommand {
    /// A Workload: `spec.active: true`.
    #[command(
        visible_alias = "kwl",
        aliases = ["kueueworkload", "kueueworkloads"],
        after_help = "Examples:\n  wasq ctl resume workload job-sample-7d2f1 -n team-a"
    )]
    Workload(Named),
    /// A LocalQueue: `spec.stopPolicy: None`.
    #[command(
        visible_alias = "lq",
        after_help = "Examples:\n  wasq ctl resume localqueue lq-a -n team-a"
    )]
    Localqueue(Named),
    /// A ClusterQueue: `spec.stopPolicy: None`.
    #[command(
        visible_alias = "cq",
        after_help = "Examples:\n  wasq ctl resume clusterqueue gpu-cq"
    )]
    Clusterqueue(Named),
}

/// Runs a `wasq ctl` command.
pub fn run(args: CtlArgs) -> anyhow::Result<()> {
    let CtlArgs {
        command,
        kubeconfig,
        context,
        namespace,
    } = args;
    on_cluster(
        kubeconfig.as_deref(),
        context.as_deref(),
        |client| async move {
            let namespace = namespace.unwrap_or_else(|| client.default_namespace().to_string());
            match command {
                CtlCommand::List(what) => {
                    let (listed, flags, options) = list_options(what, &namespace);
                    let output = match flags.output {
                        Format::Table => Output::Table,
                        Format::Wide => Output::Wide,
                        Format::Json => Output::Json,
                        Format::Yaml => Output::Yaml,
                    };
                    let listing =
                        list(&client, listed, &options, output, jiff::Timestamp::now()).await?;
                    out!("{}", listing.stdout);
                    eprint!("{}", listing.stderr);
                }
                CtlCommand::Stop(what) => {
                    let (kind, named, keep) = match what {
                        StopCommand::Workload(named) => (TargetKind::Workload, named, false),
                        StopCommand::Localqueue {
                            named,
                            keep_already_running,
                        } => (TargetKind::LocalQueue, named, keep_already_running),
                        StopCommand::Clusterqueue {
                            named,
                            keep_already_running,
                        } => (TargetKind::ClusterQueue, named, keep_already_running),
                    };
                    let activation = Activation::Stop {
                        keep_already_running: keep,
                    };
                    activate(&client, kind, named, &namespace, activation).await?;
                }
                CtlCommand::Resume(what) => {
                    let (kind, named) = match what {
                        ResumeCommand::Workload(named) => (TargetKind::Workload, named),
                        ResumeCommand::Localqueue(named) => (TargetKind::LocalQueue, named),
                        ResumeCommand::Clusterqueue(named) => (TargetKind::ClusterQueue, named),
                    };
                    activate(&client, kind, named, &namespace, Activation::Resume).await?;
                }
                CtlCommand::Describe(DescribeCommand::Workload { name, output }) => {
                    let output = match output {
                        None => DescribeOutput::Text,
                        Some(DescribeFormat::Json) => DescribeOutput::Json,
                        Some(DescribeFormat::Yaml) => DescribeOutput::Yaml,
                    };
                    let text = describe_workload(
                        &client,
                        &namespace,
                        &name,
                        output,
                        jiff::Timestamp::now(),
                    )
                    .await?;
                    out!("{text}");
                }
            }
            Ok(())
        },
    )
}

async fn activate(
    client: &kube::Client,
    kind: TargetKind,
    named: Named,
    namespace: &str,
    activation: Activation,
) -> anyhow::Result<()> {
    let target = Target {
        kind,
        namespace: namespace.to_string(),
        name: named.name,
    };
    let dry_run = match named.dry_run {
        DryRunArg::None => DryRun::None,
        DryRunArg::Client => DryRun::Client,
        DryRunArg::Server => DryRun::Server,
    };
    outln!(
        "{}",
        set_activation(client, &target, activation, dry_run).await?
    );
    Ok(())
}

fn list_options(what: ListCommand, namespace: &str) -> (Listed, ListFlags, ListOptions) {
    let base = |flags: &ListFlags| ListOptions {
        namespace: (!flags.all_namespaces).then(|| namespace.to_string()),
        selector: flags.selector.clone(),
        field_selector: flags.field_selector.clone(),
        ..ListOptions::default()
    };
    match what {
        ListCommand::Clusterqueue { flags, active } => {
            let options = ListOptions {
                active,
                ..base(&flags)
            };
            (Listed::ClusterQueues, flags, options)
        }
        ListCommand::Localqueue {
            flags,
            clusterqueue,
        } => {
            let options = ListOptions {
                cluster_queue: clusterqueue,
                ..base(&flags)
            };
            (Listed::LocalQueues, flags, options)
        }
        ListCommand::Workload {
            flags,
            clusterqueue,
            localqueue,
            status,
        } => {
            let options = ListOptions {
                cluster_queue: clusterqueue,
                local_queue: localqueue,
                statuses: status,
                ..base(&flags)
            };
            (Listed::Workloads, flags, options)
        }
    }
}
