//! `wasq controller`: its options and the process around the library's controller (client,
//! discovery of job kinds, admission webhooks, the visibility API, leader election, watchers,
//! the HTTP endpoints), whose event loop is [`Controller::run`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use kube::core::{ApiResource, GroupVersionKind};

use wasq::api::jobs::{self, JobKind};
use wasq::k8s::client::connect::connect;
use wasq::k8s::client::lease::LeaseLock;
use wasq::k8s::client::writer::{self, Writer};
use wasq::k8s::controller::dashboard::Feed;
use wasq::k8s::controller::{Clock, Controller, provisioning, spawn_watchers};
use wasq::k8s::jobs::integration::{api_resource, reconciled};
use wasq::k8s::policies::PolicyReconciler;
use wasq::k8s::serve::dashboard::KubeAuthorizer;
use wasq::k8s::serve::metrics::Metrics;
use wasq::k8s::serve::webhook::provision::{CertSource, SecretSettings};
use wasq::k8s::serve::webhook::{self, Webhooks};
use wasq::k8s::serve::{aggregated, http};
use wasq::k8s::sync::core::Configure;
use wasq::k8s::sync::trace_recorder::TraceRecorder;

#[derive(clap::Args, Debug, Clone)]
pub struct ControllerArgs {
    /// The kubeconfig to reach the cluster with (default: $KUBECONFIG, else ~/.kube/config,
    /// else the in-cluster configuration), as with kubectl.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current-context), as with kubectl.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Address of /metrics, /healthz, /readyz and the pending-workloads visibility API.
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub listen: SocketAddr,
    /// Namespace of the leader Lease (default: $POD_NAMESPACE, else wasq-system).
    #[arg(long)]
    pub namespace: Option<String>,
    /// Run without leader election (a single replica only).
    #[arg(long)]
    pub no_leader_elect: bool,
    /// The Lease replicas elect their leader through (in the controller's namespace).
    #[arg(long, default_value = "wasq-controller")]
    pub lease_name: String,
    /// This replica's identity in the Lease (default: $HOSTNAME).
    #[arg(long)]
    pub identity: Option<String>,
    /// How long a leader holds the Lease without renewing it before another replica may take
    /// it over.
    #[arg(long, default_value_t = 15)]
    pub lease_duration_seconds: i32,
    /// More job kinds, as a YAML list in the shape of the built-in ones.
    #[arg(long)]
    pub integrations: Option<PathBuf>,
    /// Kinds to manage (e.g. Job,Pod,RayJob,RayCluster,JobSet); default: every built-in or
    /// configured kind whose API the cluster serves, and pod groups.
    #[arg(long, value_delimiter = ',')]
    pub frameworks: Vec<String>,
    /// Kueue's controller configuration file (`config.kueue.x-k8s.io/v1beta2` Configuration):
    /// its `fairSharing` and `admissionFairSharing` sections apply; the rest is ignored.
    #[arg(long, value_name = "FILE")]
    pub kueue_config: Option<PathBuf>,
    /// LocalQueue label keys (e.g. team,cost-center) copied onto each Workload and, at
    /// admission, into its job's pod templates, for cost attribution (OpenCost, Kubecost).
    #[arg(long, value_delimiter = ',', value_name = "KEYS")]
    pub cost_attribution_labels: Vec<String>,
    /// Append every Workload's run (arrival, queue, priority, podSets, run time) to FILE as a
    /// simulator trace (JSONL), to replay the cluster's traffic with `wasq simulate`.
    #[arg(long, value_name = "FILE")]
    pub record_trace: Option<PathBuf>,
    /// Start a new trace file past this size (e.g. 100Mi); the old one becomes FILE.1.
    #[arg(long, default_value = "100Mi", value_name = "SIZE", value_parser = parse_size)]
    pub record_trace_max_size: u64,
    /// Serve no admission webhooks (for clusters whose API server cannot reach the controller):
    /// queued jobs must then be created suspended and pods with the scheduling gate.
    #[arg(long)]
    pub no_webhooks: bool,
    /// Address of the HTTPS admission webhooks (the Service's port 443 points here).
    #[arg(long, default_value = "0.0.0.0:9443")]
    pub webhook_listen: SocketAddr,
    /// Address of the HTTPS visibility API the aggregation layer proxies to (the APIService
    /// `v1beta2.visibility.kueue.x-k8s.io`, as Kueue's visibility server on 8082), with the
    /// webhooks' certificate; `none`: not served. Needs the webhooks.
    #[arg(long, default_value = "0.0.0.0:8082", value_parser = parse_listen)]
    pub visibility_listen: Listen,
    /// The Service the API server calls the webhooks through; the certificate names
    /// `<service>.<namespace>.svc` and `<service>.<namespace>.svc.cluster.local`.
    #[arg(long, default_value = webhook::DEFAULT_SERVICE)]
    pub webhook_service: String,
    /// The `kubernetes.io/tls` Secret in --namespace keeping the CA and serving certificate,
    /// shared by the replicas (created and rotated by wasq).
    #[arg(long, default_value = webhook::DEFAULT_SECRET)]
    pub webhook_secret: String,
    /// Serve tls.crt and tls.key mounted in DIR (e.g. by cert-manager) instead of managing a
    /// certificate; wasq then writes no Secret and no caBundle.
    #[arg(long, value_name = "DIR")]
    pub webhook_cert_dir: Option<PathBuf>,
    /// Requests per second to the API server at most (Kueue's `clientConnection.qps`); 0 or
    /// less: unpaced.
    #[arg(long, default_value_t = writer::DEFAULT_QPS)]
    pub kube_api_qps: f64,
    /// Requests at once above the pace (Kueue's `clientConnection.burst`).
    #[arg(long, default_value_t = writer::DEFAULT_BURST)]
    pub kube_api_burst: u32,
    /// A pending Workload's `QuotaReserved=False` condition is rewritten when only its message
    /// changed at most this often (a new reason is written at once); 0s: at every change, as
    /// Kueue does.
    #[arg(long, default_value = "10s", value_parser = parse_interval)]
    pub pending_status_interval: Duration,
    /// A registry (`host[:port]`) whose `QueuePolicy` OCI modules are pulled over plain HTTP
    /// instead of HTTPS, like containerd's insecure registries. Repeatable.
    #[arg(long = "insecure-registry", value_name = "HOST")]
    pub insecure_registries: Vec<String>,
    /// Address of the read-only web dashboard (e.g. 127.0.0.1:8090, for `kubectl
    /// port-forward`); `none` (the default): not served. The leader's shows the scheduler.
    #[arg(long, default_value = "none", value_parser = parse_listen)]
    pub dashboard_listen: Listen,
    /// Who may read the dashboard: `kubernetes` — each request's bearer token is reviewed
    /// (TokenReview) and it sees what its user may list (SubjectAccessReview); `none` —
    /// everyone sees everything. `auto`: `none` on a loopback address, else `kubernetes`.
    #[arg(long, value_enum, default_value = "auto")]
    pub dashboard_auth: DashboardAuth,
    /// Do not act as a MultiKueue manager (another controller does). By default, as Kueue,
    /// wasq connects to the MultiKueueClusters (kubeconfig Secrets in the Configuration's
    /// `namespace`, else --namespace) and dispatches the Workloads behind a
    /// `kueue.x-k8s.io/multikueue` check to them.
    #[arg(long)]
    pub no_multikueue: bool,
    /// Where `locationType: Path` kubeconfigs of MultiKueueClusters must be (Kueue's
    /// `MultiKueueKubeConfigPathValidation`).
    #[arg(long, value_name = "DIR", default_value = wasq::api::multikueue::KUBECONFIG_PATH_PREFIX)]
    pub multikueue_kubeconfig_dir: PathBuf,
}

/// Who may read the dashboard (`--dashboard-auth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DashboardAuth {
    Auto,
    Kubernetes,
    None,
}

/// A listening address, or none (`none`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listen(pub Option<SocketAddr>);

fn parse_listen(s: &str) -> Result<Listen, String> {
    if s == "none" {
        return Ok(Listen(None));
    }
    s.parse()
        .map(|a| Listen(Some(a)))
        .map_err(|e| format!("{s}: {e} (an address such as 0.0.0.0:8082, or none)"))
}

fn parse_size(s: &str) -> Result<u64, String> {
    let q: wasq::api::Quantity = s.parse().map_err(|e| format!("{s}: {e}"))?;
    u64::try_from(q.0 / 1000)
        .ok()
        .filter(|&b| b > 0)
        .ok_or_else(|| format!("{s}: a size must be positive"))
}

fn parse_interval(s: &str) -> Result<Duration, String> {
    let ms = wasq::api::duration::parse_millis(s)?;
    u64::try_from(ms)
        .map(Duration::from_millis)
        .map_err(|_| format!("{s}: a duration cannot be negative"))
}

fn wanted(frameworks: &[String], kind: &str) -> bool {
    frameworks.is_empty() || frameworks.iter().any(|f| f.eq_ignore_ascii_case(kind))
}

async fn served(client: &kube::Client, ar: &ApiResource) -> bool {
    let gvk = GroupVersionKind::gvk(&ar.group, &ar.version, &ar.kind);
    kube::discovery::oneshot::pinned_kind(client, &gvk)
        .await
        .is_ok()
}

/// What the controller's policies come from, besides the `configure` hook that binds them.
pub struct PolicyHost {
    /// The plugin directory (`wasq_plugin_*` metrics).
    pub plugins: Option<wasq::wasm::PluginSource>,
    /// What every shadow decided (`wasq_policy_shadow_*` metrics, QueuePolicy status).
    pub shadows: Arc<wasq::policy::shadow::ShadowLog>,
    /// The cluster's `QueuePolicy` objects, kept current by a [`PolicyReconciler`]
    /// (the `configure` hook binds them).
    pub objects: Option<Arc<wasq::wasm::PolicyObjects>>,
}

/// `wasq controller`: runs until interrupted or until leadership is lost. `configure` binds
/// policies to every scheduler the controller builds (the same hook the simulator uses).
pub fn run(args: ControllerArgs, configure: Configure, host: PolicyHost) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(run_async(args, configure, host))
}

async fn run_async(
    args: ControllerArgs,
    configure: Configure,
    host: PolicyHost,
) -> anyhow::Result<()> {
    let PolicyHost {
        plugins,
        shadows,
        objects,
    } = host;
    let client = connect(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
    let mut kinds: Vec<JobKind> = jobs::builtin();
    if let Some(path) = &args.integrations {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        kinds.extend(jobs::parse(&text).with_context(|| format!("loading {}", path.display()))?);
    }
    let pod_groups = wanted(&args.frameworks, "Pod");
    let mut enabled = Vec::new();
    // Kinds without a suspend flag: their pods are gated by the webhooks and admitted as pod
    // groups, so the job reconciler does not watch them.
    let mut through_pods = Vec::new();
    for kind in kinds {
        if !wanted(&args.frameworks, &kind.spec.kind) {
            continue;
        }
        if !reconciled(&kind) && !pod_groups {
            tracing::info!(kind = %kind.spec.kind, "managed through its pods, and pods are not managed (--frameworks); integration off");
            continue;
        }
        if served(&client, &api_resource(&kind)).await {
            tracing::info!(kind = %kind.spec.kind, api_version = %kind.spec.api_version, "managing jobs of this kind");
            if reconciled(&kind) {
                enabled.push(kind);
            } else {
                through_pods.push(kind);
            }
        } else {
            tracing::info!(kind = %kind.spec.kind, api_version = %kind.spec.api_version, "API not served; integration off");
        }
    }
    let pod_groups = wanted(&args.frameworks, "Pod");
    let identity = args
        .identity
        .clone()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "wasq".into());
    let namespace = args
        .namespace
        .clone()
        .or_else(|| std::env::var("POD_NAMESPACE").ok())
        .unwrap_or_else(|| "wasq-system".into());
    let role = if args.no_leader_elect {
        "standalone"
    } else {
        "leader"
    };
    let mut metrics = Metrics::new(role);
    let dashboard_plugins = plugins.clone();
    if let Some(source) = plugins {
        metrics.register_plugins(source, shadows.clone(), objects.clone());
    }
    // Every replica keeps the QueuePolicy modules current; the leader writes their status.
    let (leading_tx, leading_rx) = tokio::sync::watch::channel(false);
    if let Some(objects) = &objects {
        let reconciler = Arc::new(PolicyReconciler::new(
            client.clone(),
            &namespace,
            objects.clone(),
            shadows.clone(),
            args.insecure_registries.clone(),
        ));
        tokio::spawn(reconciler.run(leading_rx));
    }
    let metrics = Arc::new(metrics);
    let clock: Clock = Arc::new(|| jiff::Timestamp::now().as_millisecond());
    let writer = Writer::new(client.clone(), Some(identity.clone()))
        .with_rate_limit(args.kube_api_qps, args.kube_api_burst);
    let mut controller = Controller::new(
        writer,
        enabled,
        pod_groups,
        metrics.clone(),
        clock,
        configure,
    );
    controller.set_refresh_interval(Duration::from_secs(1));
    controller.set_pending_status_interval(args.pending_status_interval);
    controller.set_attribution_labels(args.cost_attribution_labels.clone());
    if served(&client, &provisioning::resource()).await {
        tracing::info!(
            "ProvisioningRequest API served; running Kueue's ProvisioningRequest admission check"
        );
        controller.set_provisioning_requests(true);
    } else {
        tracing::warn!(
            "autoscaling.x-k8s.io/v1 ProvisioningRequest not served; checks of kueue.x-k8s.io/provisioning-request stay Pending (the check is not active)"
        );
    }
    if let Some(path) = &args.kueue_config {
        controller.mirror.configuration = Some(wasq::api::config::load_file(path)?);
    }
    if !args.no_multikueue {
        let config = controller.mirror.configuration.clone().unwrap_or_default();
        let options = wasq::k8s::multikueue::Options {
            origin: config.multi_kueue().origin().to_string(),
            namespace: config.namespace().unwrap_or(&namespace).to_string(),
            kubeconfig_dir: args.multikueue_kubeconfig_dir.clone(),
        };
        tracing::info!(origin = %options.origin, namespace = %options.namespace,
            "running as a MultiKueue manager: connecting to MultiKueueClusters");
        controller.set_multikueue(options);
    }
    if let Some(path) = &args.record_trace {
        let started = jiff::Timestamp::now().as_millisecond();
        let recorder = TraceRecorder::open(path, args.record_trace_max_size, started)
            .with_context(|| format!("opening the trace {}", path.display()))?;
        controller.set_trace_recorder(recorder);
    }

    if let Ok(mut s) = controller.shared.write() {
        s.shadows = Some(shadows.clone());
    }
    let shared = controller.shared.clone();
    let listen = args.listen;
    let server_metrics = metrics.clone();
    tokio::spawn(async move {
        if let Err(e) = http::serve(listen, shared, server_metrics).await {
            tracing::error!(error = %e, "the HTTP server stopped");
        }
    });

    if !args.no_webhooks {
        let source = match &args.webhook_cert_dir {
            Some(dir) => CertSource::Dir(dir.clone()),
            None => CertSource::Secret(SecretSettings::new(
                &namespace,
                &args.webhook_secret,
                &args.webhook_service,
            )),
        };
        if let Ok(mut s) = controller.shared.write() {
            s.webhooks_pending = true;
        }
        let webhooks = Arc::new(Webhooks::new(
            controller
                .kinds()
                .iter()
                .chain(&through_pods)
                .cloned()
                .collect(),
            pod_groups,
            controller.shared.clone(),
        ));
        let (addr, certificate) =
            webhook::start(client.clone(), webhooks, args.webhook_listen, source)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        tracing::info!(%addr, "admission webhooks ready");
        if let Listen(Some(listen)) = args.visibility_listen {
            // Kueue's visibility API through the aggregation layer; without a front proxy (or
            // the right to read its settings) only this is off.
            match aggregated::start(
                client.clone(),
                listen,
                certificate,
                controller.shared.clone(),
                metrics.clone(),
            )
            .await
            {
                Ok(addr) => tracing::info!(%addr, "visibility API served to the aggregation layer"),
                Err(e) => tracing::warn!(
                    error = %format!("{e:#}"),
                    "the visibility API is not served to the aggregation layer"
                ),
            }
        }
        if let Ok(mut s) = controller.shared.write() {
            s.webhooks_pending = false;
        }
    }

    if let Listen(Some(listen)) = args.dashboard_listen {
        let kubernetes = match args.dashboard_auth {
            DashboardAuth::Kubernetes => true,
            DashboardAuth::None => false,
            DashboardAuth::Auto => !listen.ip().is_loopback(),
        };
        let auth: Arc<dyn wasq::dashboard::Authorize> = if kubernetes {
            Arc::new(KubeAuthorizer::new(client.clone()))
        } else {
            Arc::new(wasq::dashboard::Open)
        };
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("binding the dashboard to {listen}"))?;
        let address = listener.local_addr()?;
        let board = wasq::dashboard::Board::new();
        tokio::spawn(wasq::dashboard::serve(listener, board.clone(), auth));
        controller.set_dashboard(Feed::new(board, dashboard_plugins, objects.clone()));
        tracing::info!(%address, kubernetes_auth = kubernetes, "dashboard at http://{address}/");
    }

    // Every replica watches, so that a standby's webhooks answer from a current view while
    // the leader changes; only the leader schedules and writes.
    let rx = spawn_watchers(&client, &controller);
    let (acquired_tx, acquired) = tokio::sync::oneshot::channel::<()>();
    let lease = (!args.no_leader_elect).then(|| {
        LeaseLock::new(
            client.clone(),
            &namespace,
            &args.lease_name,
            &identity,
            args.lease_duration_seconds,
        )
    });
    let period = Duration::from_secs((args.lease_duration_seconds.max(3) / 3) as u64);
    // Resolves (with the error) once leadership is lost; never without election.
    let leadership = async move {
        match lease {
            Some(lock) => {
                lock.acquire(Duration::from_secs(2)).await;
                let _ = acquired_tx.send(());
                lock.keep(period).await
            }
            None => {
                let _ = acquired_tx.send(());
                std::future::pending().await
            }
        }
    };
    let leading = async {
        let _ = acquired.await;
        tracing::info!("leading: scheduling from now on");
        let _ = leading_tx.send(true);
    };
    let end = async move {
        tokio::select! {
            err = leadership => Err(anyhow::Error::from(err).context("stopping: leadership lost")),
            _ = tokio::signal::ctrl_c() => {
                tracing::info!("interrupted; stopping");
                Ok(())
            }
        }
    };
    let stopped = controller
        .run(rx, Duration::from_secs(1), leading, end)
        .await;
    if stopped.is_ok() {
        // Events already recorded go out, if the API server answers in time.
        let _ = tokio::time::timeout(Duration::from_secs(5), controller.settled()).await;
    }
    stopped
}
