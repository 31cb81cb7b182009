//! `wasq explain WORKLOAD [REPORT]`: one workload's story, from a simulator report
//! (`wasq::sim::explain`) or, without one, from the cluster the kubeconfig reaches
//! (`wasq::k8s::ctl::explain`).

use std::path::PathBuf;

use anyhow::Context;

use super::cluster::on_cluster;

#[derive(clap::Args)]
pub struct ExplainArgs {
    /// The workload: namespace/name, or a name — in a report, one only one workload has; in a
    /// cluster, a Workload of the namespace (-n).
    workload: String,
    /// A report of `wasq simulate -o json`; without one, the Workload and its Events are read
    /// from the cluster.
    report: Option<PathBuf>,
    /// The kubeconfig to reach the cluster with (default: $KUBECONFIG, else ~/.kube/config, else
    /// the in-cluster configuration), as with kubectl.
    #[arg(long, value_name = "FILE", conflicts_with = "report")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current-context).
    #[arg(long, value_name = "NAME", conflicts_with = "report")]
    context: Option<String>,
    /// The Workload's namespace in the cluster (default: the context's, else `default`).
    #[arg(short = 'n', long, value_name = "NAMESPACE", conflicts_with = "report")]
    namespace: Option<String>,
}

/// Runs `wasq explain`.
pub fn run(args: ExplainArgs) -> anyhow::Result<()> {
    let ExplainArgs {
        workload,
        report,
        kubeconfig,
        context,
        namespace,
    } = args;
    if let Some(report) = report {
        let text = std::fs::read_to_string(&report)
            .with_context(|| format!("reading {}", report.display()))?;
        let json: serde_json::Value = serde_json::from_str(&text).with_context(|| {
            format!(
                "{}: not a report of wasq simulate -o json",
                report.display()
            )
        })?;
        out!("{}", wasq::sim::explain::explain(&json, &workload)?);
        return Ok(());
    }
    let story = on_cluster(
        kubeconfig.as_deref(),
        context.as_deref(),
        |client| async move {
            let (namespace, name) = match (workload.split_once('/'), namespace) {
                (Some((ns, _)), Some(n)) if ns != n => {
                    anyhow::bail!("{workload} is in namespace {ns}, not {n}: give one or the other")
                }
                (Some((ns, name)), _) => (ns.to_string(), name.to_string()),
                (None, Some(n)) => (n, workload),
                (None, None) => (client.default_namespace().to_string(), workload),
            };
            wasq::k8s::ctl::explain(&client, &namespace, &name, jiff::Timestamp::now()).await
        },
    )?;
    out!("{story}");
    Ok(())
}
