//! The one-shot commands that read a cluster: `wasq snapshot`, `wasq migrate check` and
//! `wasq policy shadow-report` without `--from-report`.

use std::path::Path;

use anyhow::Context;

use wasq::k8s::client::connect::connect;

/// Runs `work` with a client of the cluster the kubeconfig (or the pod) reaches, on a runtime of
/// its own: the one-shot commands (`snapshot`, `migrate check`, `policy shadow-report`).
pub(crate) fn on_cluster<T, F>(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    work: impl FnOnce(kube::Client) -> F,
) -> anyhow::Result<T>
where
    F: std::future::Future<Output = anyhow::Result<T>>,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let client = connect(kubeconfig, context).await?;
        work(client).await
    })
}

/// `wasq snapshot`: the cluster's queueing state written into `dir` as a scenario; prints what
/// was written.
pub fn snapshot(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    dir: &Path,
) -> anyhow::Result<()> {
    let snapshot = on_cluster(kubeconfig, context, |client| async move {
        wasq::k8s::migrate::snapshot::take(&client).await
    })?;
    snapshot.write(dir)?;
    for (file, n) in snapshot.counts() {
        println!("{:>7}  {}", n, dir.join(file).display());
    }
    Ok(())
}

/// `wasq policy shadow-report`: the `QueuePolicy` `name` as the cluster holds it (status
/// included).
pub fn queue_policy(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    name: &str,
) -> anyhow::Result<wasq::api::policy::QueuePolicy> {
    on_cluster(kubeconfig, context, |client| async move {
        let api: kube::Api<kube::core::DynamicObject> =
            kube::Api::all_with(client, &wasq::k8s::policies::resource());
        let object = api
            .get_opt(name)
            .await
            .with_context(|| format!("reading QueuePolicy {name}"))?
            .ok_or_else(|| anyhow::anyhow!("QueuePolicy {name} not found"))?;
        wasq::api::policy::from_object(&serde_json::to_value(&object)?).map_err(|problems| {
            anyhow::anyhow!(
                "QueuePolicy {name}: {}",
                wasq::api::jobs::patch::problems_text(&problems)
            )
        })
    })
}

/// `wasq migrate check`: what wasq makes of the Kueue installation the kubeconfig reaches.
pub fn migrate_check(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    kueue_namespace: &str,
) -> anyhow::Result<wasq::k8s::migrate::Report> {
    on_cluster(kubeconfig, context, |client| async move {
        wasq::k8s::migrate::check(&client, kueue_namespace).await
    })
}
