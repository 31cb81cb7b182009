//! `wasq controller` — the built binary, as a cluster runs it — against a [`ControlPlane`],
//! with its admission webhooks registered as `deploy/base/webhooks.yaml` registers them, except
//! for how the API server reaches them: by URL on loopback (no Service routes here) with the CA
//! of a certificate made for `127.0.0.1`, served from `--webhook-cert-dir`.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::cluster::{ControlPlane, Server, free_port};

/// The namespace of the leader Lease.
pub const NAMESPACE: &str = "wasq-system";

/// How a replica runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Its identity in the Lease, and the name of its log (`<identity>.log` in the control
    /// plane's folder).
    pub identity: String,
    /// Serve the admission webhooks (`--no-webhooks` otherwise).
    pub webhooks: bool,
    /// Let wasq make and keep its webhook certificate (in its Secret, the CA written into the
    /// webhook configurations) for the Service's names, as a cluster runs it — which the API
    /// server here cannot call (no Service routes to loopback); else a certificate for
    /// `127.0.0.1` served from `--webhook-cert-dir`, for [`Wasq::register_webhooks`].
    pub own_certificate: bool,
    pub lease_duration_seconds: u32,
    /// More flags for `wasq controller`.
    pub extra_args: Vec<String>,
}

impl Options {
    pub fn new(identity: &str) -> Options {
        Options {
            identity: identity.into(),
            webhooks: true,
            own_certificate: false,
            lease_duration_seconds: 15,
            extra_args: Vec::new(),
        }
    }
}

/// One `wasq controller` process, killed (`SIGKILL`) when dropped.
pub struct Wasq {
    server: Server,
    /// Its `--listen` port: `/metrics`, `/healthz`, `/readyz`.
    pub http_port: u16,
    /// Its `--webhook-listen` port.
    pub webhook_port: u16,
    /// Its `--visibility-listen` port (the visibility API for the aggregation layer).
    pub visibility_port: u16,
    /// The CA of its webhook certificate (PEM).
    ca_pem: String,
}

impl Wasq {
    /// Starts a replica against `plane` and waits until it answers `/healthz` (it may not lead:
    /// see [`Wasq::wait_ready`]).
    ///
    /// # Errors
    /// The process exits or does not answer within two minutes (with the end of its log).
    pub async fn start(plane: &ControlPlane, options: &Options) -> Result<Wasq> {
        let client = plane.client().await?;
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": NAMESPACE}}))?;
        match Api::<Namespace>::all(client)
            .create(&PostParams::default(), &ns)
            .await
        {
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            other => {
                other.context("creating the Lease's namespace")?;
            }
        }

        let (http_port, webhook_port, visibility_port) = (free_port()?, free_port()?, free_port()?);
        let mut args = vec![
            "controller".to_string(),
            format!("--listen=127.0.0.1:{http_port}"),
            format!("--webhook-listen=127.0.0.1:{webhook_port}"),
            format!("--visibility-listen=127.0.0.1:{visibility_port}"),
            format!("--namespace={NAMESPACE}"),
            format!("--identity={}", options.identity),
            format!(
                "--lease-duration-seconds={}",
                options.lease_duration_seconds
            ),
        ];
        if !options.webhooks {
            args.push("--no-webhooks".into());
        }
        args.extend(options.extra_args.iter().cloned());
        let mut ca_pem = String::new();
        if !options.own_certificate {
            let certs_dir = plane
                .dir()
                .join(format!("{}-webhook-certs", options.identity));
            std::fs::create_dir_all(&certs_dir)?;
            let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
            let certs = wasq::k8s::serve::webhook::certs::generate(
                &["127.0.0.1".into()],
                now - 3600,
                now + 86400,
            )?;
            for (name, text) in [
                ("ca.crt", &certs.ca_pem),
                ("tls.crt", &certs.cert_pem),
                ("tls.key", &certs.key_pem),
            ] {
                std::fs::write(certs_dir.join(name), text)?;
            }
            args.push(format!("--webhook-cert-dir={}", certs_dir.display()));
            ca_pem = certs.ca_pem;
        }
        let kubeconfig = plane.kubeconfig();
        let mut server = Server::spawn(
            &options.identity,
            &PathBuf::from(env!("CARGO_BIN_EXE_wasq")),
            plane.dir(),
            &args,
            &[
                ("KUBECONFIG", kubeconfig.as_os_str()),
                ("WASQ_LOG", std::ffi::OsStr::new("info")),
            ],
        )?;
        let started = Instant::now();
        while get(http_port, "/healthz").is_none_or(|(code, _)| code != 200) {
            server.still_running(started)?;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(Wasq {
            server,
            http_port,
            webhook_port,
            visibility_port,
            ca_pem,
        })
    }

    /// Waits until the replica says it is ready (`/readyz`: every source listed, a first pass
    /// done, the webhooks serving).
    ///
    /// # Errors
    /// The process exits, or is not ready within two minutes.
    pub async fn wait_ready(&mut self) -> Result<()> {
        let started = Instant::now();
        while get(self.http_port, "/readyz").is_none_or(|(code, _)| code != 200) {
            self.server.still_running(started)?;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(())
    }

    /// `Ok` while the process runs; else an error with the end of its log.
    ///
    /// # Errors
    /// As said.
    pub fn still_running(&mut self) -> Result<()> {
        self.server.still_running(Instant::now())
    }

    /// The warnings and errors it logged, but the one every control plane without the
    /// ProvisioningRequest CRD causes.
    pub fn warnings(&self) -> Vec<String> {
        let log = std::fs::read_to_string(self.server.log_path()).unwrap_or_default();
        log.lines()
            .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
            .filter(|l| !l.contains("ProvisioningRequest not served"))
            .map(str::to_string)
            .collect()
    }

    /// The end of its log, for a failure's message.
    pub fn log_tail(&self) -> String {
        self.server.log_tail(40)
    }

    /// A Prometheus counter or gauge of its `/metrics`, summed over every series whose name
    /// and labels start with `series` (`kueue_admitted_workloads_total`).
    pub fn metric(&self, series: &str) -> Option<f64> {
        let (code, body) = get(self.http_port, "/metrics")?;
        (code == 200).then(|| {
            body.lines()
                .filter(|l| l.starts_with(series))
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum()
        })
    }

    /// Registers the Mutating and Validating webhook configurations of
    /// `deploy/base/webhooks.yaml`, each webhook called at this replica's URL with its CA (a
    /// replica started without [`Options::own_certificate`]), and
    /// waits until the API server calls them (a queued Job created with `dryRun` comes back
    /// suspended).
    ///
    /// # Errors
    /// A configuration the server refuses, or webhooks not in effect within a minute.
    pub async fn register_webhooks(&self, client: &kube::Client) -> Result<()> {
        let docs = deploy_manifest()?;
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.ca_pem);
        for kind in [
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        ] {
            let mut config = docs
                .iter()
                .find(|d| d["kind"] == kind)
                .with_context(|| format!("deploy/base/webhooks.yaml has no {kind}"))?
                .clone();
            for webhook in config["webhooks"].as_array_mut().into_iter().flatten() {
                let path = webhook["clientConfig"]["service"]["path"]
                    .as_str()
                    .context("a webhook of deploy/base/webhooks.yaml has no service path")?
                    .to_string();
                webhook["clientConfig"] = json!({
                    "url": format!("https://127.0.0.1:{}{path}", self.webhook_port),
                    "caBundle": ca,
                });
            }
            let pp = PostParams::default();
            if kind == "MutatingWebhookConfiguration" {
                Api::<MutatingWebhookConfiguration>::all(client.clone())
                    .create(&pp, &serde_json::from_value(config)?)
                    .await
                    .with_context(|| format!("creating the {kind}"))?;
            } else {
                Api::<ValidatingWebhookConfiguration>::all(client.clone())
                    .create(&pp, &serde_json::from_value(config)?)
                    .await
                    .with_context(|| format!("creating the {kind}"))?;
            }
        }

        // The API server picks configurations up from its own watch: a queued Job created
        // before that would not be suspended.
        let probe: k8s_openapi::api::batch::v1::Job = serde_json::from_value(json!({
            "metadata": {"generateName": "webhook-probe-", "namespace": "default",
                         "labels": {"kueue.x-k8s.io/queue-name": "probe"}},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                     "containers": [{"name": "c", "image": "probe"}]}}}
        }))?;
        let jobs: Api<k8s_openapi::api::batch::v1::Job> =
            Api::namespaced(client.clone(), "default");
        let dry_run = PostParams {
            dry_run: true,
            ..PostParams::default()
        };
        let started = Instant::now();
        loop {
            let answer = jobs.create(&dry_run, &probe).await;
            if let Ok(job) = &answer
                && job.spec.as_ref().and_then(|s| s.suspend) == Some(true)
            {
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(60) {
                bail!(
                    "wasq's webhooks not in effect within 60s (last answer: {answer:?}); the end of its log:\n{}",
                    self.log_tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// `GET http://127.0.0.1:<port><path>`: the status code and body, `None` when nothing answers.
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let code = answer.split(' ').nth(1)?.parse().ok()?;
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Some((code, body.to_string()))
}

/// The documents of `deploy/base/webhooks.yaml`.
///
/// # Errors
/// When it is not YAML.
pub fn deploy_manifest() -> Result<Vec<Value>> {
    Ok(serde_saphyr::from_multiple(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/base/webhooks.yaml"
    )))?)
}
