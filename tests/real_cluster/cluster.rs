//! A real control plane for one test: etcd and kube-apiserver, as built by
//! `.ci/build-control-plane`, on free loopback ports with a throw-away folder; and, for a test
//! that runs pods ([`ControlPlane::run_pods`]), kube-controller-manager, kube-scheduler and
//! KWOK with fake nodes.
//!
//! The API server serves TLS with a certificate for `127.0.0.1` signed by a CA made here (wasq's
//! own webhook certificate code), authenticates an `admin` user in `system:masters` by a static
//! token, authorizes with RBAC, and signs service-account tokens with a key made here — what
//! controller-runtime's envtest sets up, plus a kubeconfig file for the processes that will need
//! one (`kubectl`, kube-controller-manager, kube-scheduler, kwok).
//!
//! Each server runs under a small `sh` that holds a pipe from this process: when the pipe
//! closes — at [`ControlPlane`]'s drop, or when the test process dies however it dies — the `sh`
//! kills the server, so no server outlives its test.

use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use k8s_openapi::api::core::v1::{Node, ServiceAccount};
use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::recorder::{self, StatusWrites};

/// The binaries `.ci/build-control-plane` makes.
const BINARIES: [&str; 6] = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "kwok",
];
/// Overrides where the binaries are looked for.
const BIN_ENV: &str = "WASQ_CONTROL_PLANE_BIN";
/// Set: each control plane's folder (data, certificates, every server's log) is kept.
const KEEP_ENV: &str = "WASQ_KEEP_CONTROL_PLANE";
/// The admin's kubeconfig, in the control plane's folder.
const KUBECONFIG: &str = "kubeconfig";
/// The CA that signed the API server's certificate, in the control plane's folder.
pub const CA: &str = "ca.crt";
/// The key service-account tokens are signed with, in the control plane's folder.
const SERVICE_ACCOUNT_KEY: &str = "service-account.key";
/// How long a server may take to become ready (a cold API server on two busy cores takes ~10 s).
const READY_WITHIN: Duration = Duration::from_secs(120);

/// The folder holding the control plane's binaries: `$WASQ_CONTROL_PLANE_BIN`, else the one
/// `.ci/build-control-plane` builds for the versions `.ci/control-plane` pins, in the toolchains'
/// cache (`$WASQ_TOOLCHAINS`, else `$XDG_CACHE_HOME/wasq/toolchains`, else
/// `~/.cache/wasq/toolchains`), keyed, as there, by the SHA-256 of `go.mod`, `go.sum`,
/// `etcd/main.go`, `crds.txt` and the script itself.
///
/// # Errors
/// When a binary is missing, naming the script that builds them.
pub fn bin_dir() -> Result<PathBuf> {
    let dir = match std::env::var_os(BIN_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => {
            let root = Path::new(env!("CARGO_MANIFEST_DIR"));
            let mut hash = Sha256::new();
            for file in [
                ".ci/control-plane/go.mod",
                ".ci/control-plane/go.sum",
                ".ci/control-plane/etcd/main.go",
                ".ci/control-plane/crds.txt",
                ".ci/build-control-plane",
            ] {
                let path = root.join(file);
                hash.update(std::fs::read(&path).with_context(|| path.display().to_string())?);
            }
            let key = hash.finalize()[..8].iter().fold(String::new(), |mut s, b| {
                let _ = write!(s, "{b:02x}");
                s
            });
            let toolchains = match std::env::var_os("WASQ_TOOLCHAINS") {
                Some(dir) => PathBuf::from(dir),
                None => std::env::var_os("XDG_CACHE_HOME")
                    .map(PathBuf::from)
                    .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                    .context("neither WASQ_TOOLCHAINS, XDG_CACHE_HOME nor HOME is set")?
                    .join("wasq/toolchains"),
            };
            toolchains.join("control-plane").join(key).join("bin")
        }
    };
    for binary in BINARIES {
        if !dir.join(binary).is_file() {
            bail!(
                "{} is missing: the real-cluster tests need the control plane that \
                 `.ci/build-control-plane` builds from the Go module proxy (run it once; \
                 or point {BIN_ENV} at a folder holding {})",
                dir.join(binary).display(),
                BINARIES.join(", ")
            );
        }
    }
    Ok(dir)
}

/// The CRD file `name` of `.ci/control-plane/crds.txt` (the other job kinds' APIs,
/// ProvisioningRequest's), which `.ci/build-control-plane` puts in the `crds` folder beside
/// [`bin_dir`]'s.
///
/// # Errors
/// When it is not there, naming the script that puts it there.
pub fn crd_file(name: &str) -> Result<PathBuf> {
    let bin = bin_dir()?;
    let path = bin.parent().unwrap_or(&bin).join("crds").join(name);
    if !path.is_file() {
        bail!(
            "{} is missing: `.ci/build-control-plane` downloads the CRDs              .ci/control-plane/crds.txt pins (run it once)",
            path.display()
        );
    }
    Ok(path)
}

/// etcd and kube-apiserver (and the servers [`ControlPlane::run_pods`] adds), running until
/// dropped.
pub struct ControlPlane {
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// Stopped in this order at drop: the newest first, etcd last.
    servers: Vec<Server>,
    bin: PathBuf,
    apiserver_args: Vec<String>,
    etcd_port: u16,
    /// Data, certificates, the kubeconfig and each server's log (`<binary>.log`).
    dir: tempfile::TempDir,
}

impl ControlPlane {
    /// Starts etcd and kube-apiserver and waits until the API server's `/readyz` says ok.
    ///
    /// # Errors
    /// A missing binary, a server that exits or is not ready within two minutes (with the end of
    /// its log).
    pub async fn start() -> Result<ControlPlane> {
        let bin = bin_dir()?;
        // A port picked free can be taken by another test's server before ours binds it.
        let mut attempt = 1;
        loop {
            match ControlPlane::start_once(&bin).await {
                Err(e) if attempt < 3 && format!("{e:#}").contains("address already in use") => {
                    attempt += 1;
                }
                started => return started,
            }
        }
    }

    async fn start_once(bin: &Path) -> Result<ControlPlane> {
        let dir = tempfile::Builder::new()
            .prefix("wasq-control-plane-")
            .disable_cleanup(std::env::var_os(KEEP_ENV).is_some())
            .tempdir()?;
        let root = dir.path();

        let (client_port, peer_port) = (free_port()?, free_port()?);
        let etcd_url = format!("http://127.0.0.1:{client_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        let mut etcd = Server::spawn(
            "etcd",
            &bin.join("etcd"),
            root,
            &[
                "--name=wasq-test".into(),
                format!("--data-dir={}", root.join("etcd").display()),
                format!("--listen-client-urls={etcd_url}"),
                format!("--advertise-client-urls={etcd_url}"),
                format!("--listen-peer-urls={peer_url}"),
                format!("--initial-advertise-peer-urls={peer_url}"),
                format!("--initial-cluster=wasq-test={peer_url}"),
                // A test's data is thrown away: no fsync (etcd's own tests do the same).
                "--unsafe-no-fsync=true".into(),
                "--log-level=warn".into(),
            ],
            &[],
        )?;
        let started = Instant::now();
        while !etcd_healthy(client_port) {
            etcd.still_running(started)?;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        let port = free_port()?;
        let url = format!("https://127.0.0.1:{port}");
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
        let names = ["127.0.0.1".to_string(), "localhost".to_string()];
        let certs =
            wasq::k8s::serve::webhook::certs::generate(&names, now - 3600, now + 7 * 86400)?;
        let token = random_hex(16)?;
        let write = |name: &str, text: &str| -> Result<PathBuf> {
            let path = root.join(name);
            std::fs::write(&path, text).with_context(|| path.display().to_string())?;
            Ok(path)
        };
        write(CA, &certs.ca_pem)?;
        let tls_cert = write("apiserver.crt", &certs.cert_pem)?;
        let tls_key = write("apiserver.key", &certs.key_pem)?;
        // Service-account tokens are signed with a key of their own; the public half checks them.
        let sa = rcgen::KeyPair::generate()?;
        let sa_key = write(SERVICE_ACCOUNT_KEY, &sa.serialize_pem())?;
        let sa_pub = write("service-account.pub", &sa.public_key_pem())?;
        // The aggregation layer's front proxy: the client certificate the API server presents to
        // extension API servers (wasq's visibility API), and the CA they check it with.
        let (proxy_ca, proxy_cert, proxy_key) = front_proxy(now)?;
        let proxy_ca = write("front-proxy-ca.crt", &proxy_ca)?;
        let proxy_cert = write("front-proxy-client.crt", &proxy_cert)?;
        let proxy_key = write("front-proxy-client.key", &proxy_key)?;
        let tokens = write(
            "tokens.csv",
            &format!("{token},admin,admin,\"system:masters\"\n"),
        )?;
        let apiserver_args = vec![
            format!("--etcd-servers={etcd_url}"),
            "--bind-address=127.0.0.1".into(),
            "--advertise-address=127.0.0.1".into(),
            format!("--secure-port={port}"),
            format!("--tls-cert-file={}", tls_cert.display()),
            format!("--tls-private-key-file={}", tls_key.display()),
            format!("--token-auth-file={}", tokens.display()),
            "--authorization-mode=RBAC".into(),
            format!("--service-account-issuer={url}"),
            format!("--service-account-key-file={}", sa_pub.display()),
            format!("--service-account-signing-key-file={}", sa_key.display()),
            // Only allocated from: no kube-proxy runs, nothing is ever sent to these.
            "--service-cluster-ip-range=10.0.0.0/24".into(),
            "--allow-privileged=true".into(),
            format!("--requestheader-client-ca-file={}", proxy_ca.display()),
            format!("--requestheader-allowed-names={FRONT_PROXY}"),
            "--requestheader-username-headers=X-Remote-User".into(),
            "--requestheader-group-headers=X-Remote-Group".into(),
            "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
            format!("--proxy-client-cert-file={}", proxy_cert.display()),
            format!("--proxy-client-key-file={}", proxy_key.display()),
            // Its own certificates (aggregator, loopback) go here, not into the work tree.
            format!("--cert-dir={}", root.join("apiserver-certs").display()),
        ];
        let mut apiserver = Server::spawn(
            "kube-apiserver",
            &bin.join("kube-apiserver"),
            root,
            &apiserver_args,
            &[],
        )?;
        let kubeconfig = write(KUBECONFIG, &kubeconfig_yaml(&url, &certs.ca_pem, &token))?;
        wait_ready(&kubeconfig, &mut apiserver).await?;
        Ok(ControlPlane {
            url,
            servers: vec![apiserver, etcd],
            bin: bin.to_path_buf(),
            apiserver_args,
            etcd_port: client_port,
            dir,
        })
    }

    /// Kills the API server (`SIGKILL`: every watch and request cut) and starts it again with
    /// the same flags, port and etcd; returns once it is ready. Its watch cache starts anew: a
    /// watch resumed from an earlier resourceVersion is answered `410 Gone` when etcd no longer
    /// holds it ([`ControlPlane::compact_etcd`]).
    ///
    /// # Errors
    /// The new API server exits or is not ready within two minutes.
    pub async fn restart_apiserver(&mut self) -> Result<()> {
        self.stop_apiserver()?;
        self.start_apiserver().await
    }

    /// Kills the API server (`SIGKILL`): the cluster is out of reach until
    /// [`ControlPlane::start_apiserver`].
    ///
    /// # Errors
    /// It does not run.
    pub fn stop_apiserver(&mut self) -> Result<()> {
        let at = self
            .servers
            .iter()
            .position(|s| s.name == "kube-apiserver")
            .context("the API server runs")?;
        drop(self.servers.remove(at));
        Ok(())
    }

    /// Starts the API server [`ControlPlane::stop_apiserver`] stopped, with the same flags, port
    /// and etcd; returns once it is ready.
    ///
    /// # Errors
    /// It exits or is not ready within two minutes.
    pub async fn start_apiserver(&mut self) -> Result<()> {
        let mut apiserver = Server::spawn(
            "kube-apiserver",
            &self.bin.join("kube-apiserver"),
            self.dir.path(),
            &self.apiserver_args,
            &[],
        )?;
        wait_ready(&self.kubeconfig(), &mut apiserver).await?;
        // Before etcd, as at the start: the servers stop in this order.
        let at = (self.servers.iter().position(|s| s.name == "etcd")).unwrap_or(self.servers.len());
        self.servers.insert(at, apiserver);
        Ok(())
    }

    /// Compacts etcd's history up to its current revision (as the API server does every five
    /// minutes) through etcd's JSON gateway; returns the revision.
    ///
    /// # Errors
    /// etcd does not answer as expected.
    pub fn compact_etcd(&self) -> Result<u64> {
        // Any range answers with the current revision in its header.
        let range = etcd_post(self.etcd_port, "/v3/kv/range", &json!({"key": "Lw=="}))?;
        let revision: u64 = range["header"]["revision"]
            .as_str()
            .context("etcd's header has a revision")?
            .parse()?;
        etcd_post(
            self.etcd_port,
            "/v3/kv/compaction",
            &json!({"revision": revision.to_string(), "physical": true}),
        )?;
        Ok(revision)
    }

    /// A new client for the admin user (one per test runtime: a client's connections belong
    /// to the runtime that made them).
    ///
    /// # Errors
    /// An unreadable kubeconfig (it was written by [`ControlPlane::start`]).
    pub async fn client(&self) -> Result<kube::Client> {
        client_for(&self.kubeconfig()).await
    }

    /// A new client for the admin user that records its status writes
    /// ([`crate::recorder`]).
    ///
    /// # Errors
    /// An unreadable kubeconfig (it was written by [`ControlPlane::start`]).
    pub async fn recording_client(&self) -> Result<(kube::Client, StatusWrites)> {
        recorder::client(config_for(&self.kubeconfig()).await?)
    }

    /// A kubeconfig for the admin user (for `kubectl` and the other control-plane processes).
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join(KUBECONFIG)
    }

    /// Runs the pinned `kubectl` against this control plane, `stdin` fed to it: whether it
    /// succeeded and what it printed.
    ///
    /// # Errors
    /// It cannot be started.
    pub fn run_kubectl(&self, args: &[&str], stdin: Option<&str>) -> Result<Ran> {
        let mut child = Command::new(self.bin.join("kubectl"))
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        if let (Some(text), Some(mut input)) = (stdin, child.stdin.take()) {
            input.write_all(text.as_bytes())?;
        }
        let out = child.wait_with_output()?;
        Ok(Ran {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// [`ControlPlane::run_kubectl`] that must succeed: its standard output.
    ///
    /// # Errors
    /// It cannot be started or fails (with what it printed on standard error).
    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> Result<String> {
        let ran = self.run_kubectl(args, stdin)?;
        if !ran.ok {
            bail!("kubectl {}: {}", args.join(" "), ran.stderr);
        }
        Ok(ran.stdout)
    }

    /// The control plane's folder: its data, certificates and every server's log.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Starts what runs pods, for the tests that need them: kube-controller-manager (the Job,
    /// garbage-collector, service-account and node-lifecycle controllers), kube-scheduler, and
    /// KWOK playing the kubelet of `nodes` fake nodes, created as KWOK's docs show them
    /// ([`kwok_node`]); returns once every node is Ready and untainted and the `default`
    /// namespace has its ServiceAccount.
    ///
    /// KWOK runs with the stages of `kwok-stages.yaml`: a pod on a fake node becomes Running at
    /// once and, when a Job owns it, Succeeded after the delay its
    /// `pod-complete.stage.kwok.x-k8s.io/delay` annotation gives (one second without one).
    ///
    /// # Errors
    /// A server that exits, nodes not Ready or no ServiceAccount within two minutes.
    pub async fn run_pods(&mut self, nodes: usize) -> Result<()> {
        let nodes = (0..nodes)
            .map(|i| kwok_node(&format!("kwok-node-{i}")))
            .collect::<Result<Vec<_>>>()?;
        self.run_pods_on(nodes).await
    }

    /// [`ControlPlane::run_pods`] on the fake nodes given (made by [`kwok_node`], their labels
    /// or capacity changed).
    ///
    /// # Errors
    /// As [`ControlPlane::run_pods`].
    pub async fn run_pods_on(&mut self, nodes: Vec<Node>) -> Result<()> {
        let root = self.dir.path().to_path_buf();
        let kubeconfig = format!("--kubeconfig={}", self.kubeconfig().display());
        let controllers = Server::spawn(
            "kube-controller-manager",
            &self.bin.join("kube-controller-manager"),
            &root,
            &[
                kubeconfig.clone(),
                // `serviceaccount-controller` makes each namespace's `default` ServiceAccount,
                // without which the API server refuses a pod; `node-lifecycle-controller` lifts
                // the `not-ready` taint the API server puts on a new node once KWOK reports it
                // Ready (and renews its Lease).
                "--controllers=job-controller,garbage-collector-controller,\
                 serviceaccount-controller,serviceaccount-token-controller,\
                 root-ca-certificate-publisher-controller,node-lifecycle-controller"
                    .into(),
                format!(
                    "--service-account-private-key-file={}",
                    root.join(SERVICE_ACCOUNT_KEY).display()
                ),
                format!("--root-ca-file={}", root.join(CA).display()),
                "--leader-elect=false".into(),
                // No HTTPS endpoint (its health is not asked): no port to pick.
                "--secure-port=0".into(),
            ],
            &[],
        )?;
        self.servers.insert(0, controllers);
        let scheduler = Server::spawn(
            "kube-scheduler",
            &self.bin.join("kube-scheduler"),
            &root,
            &[
                kubeconfig.clone(),
                "--leader-elect=false".into(),
                "--secure-port=0".into(),
            ],
            &[],
        )?;
        self.servers.insert(0, scheduler);
        let stages = root.join("kwok-stages.yaml");
        std::fs::write(&stages, include_str!("kwok-stages.yaml"))?;
        let kwok = Server::spawn(
            "kwok",
            &self.bin.join("kwok"),
            &root,
            &[
                kubeconfig,
                format!("--config={}", stages.display()),
                "--manage-all-nodes=false".into(),
                "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake".into(),
                // Node Leases, as kwokctl runs it: the node lifecycle controller judges a node
                // by its Lease, which KWOK renews more often than it rewrites node status.
                "--node-lease-duration-seconds=40".into(),
            ],
            &[],
        )?;
        self.servers.insert(0, kwok);

        let client = self.client().await?;
        let api: Api<Node> = Api::all(client.clone());
        let count = nodes.len();
        for node in nodes {
            let name = node.metadata.name.clone().unwrap_or_default();
            api.create(&PostParams::default(), &node)
                .await
                .with_context(|| format!("creating node {name}"))?;
        }
        let accounts: Api<ServiceAccount> = Api::namespaced(client, "default");
        let started = Instant::now();
        loop {
            let ready = api
                .list(&ListParams::default())
                .await?
                .items
                .iter()
                .filter(|n| is_ready(n))
                .count();
            if ready == count && accounts.get_opt("default").await?.is_some() {
                return Ok(());
            }
            for server in &mut self.servers {
                server.still_running(started)?;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// A fake node as KWOK's docs show one ("Manage nodes and pods with kwok": the annotation
/// `kwok.x-k8s.io/node: fake` that KWOK manages by, the `type: kwok` label, the taint that keeps
/// real pods off it, 32 CPUs).
pub fn kwok_node(name: &str) -> Result<Node> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/role": "agent",
                "node-role.kubernetes.io/agent": "",
                "type": "kwok"
            },
            "name": name
        },
        "spec": {"taints": [{"effect": "NoSchedule", "key": "kwok.x-k8s.io/node", "value": "fake"}]},
        "status": {
            "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            "nodeInfo": {
                "architecture": "amd64", "bootID": "", "containerRuntimeVersion": "",
                "kernelVersion": "", "kubeProxyVersion": "fake", "kubeletVersion": "fake",
                "machineID": "", "operatingSystem": "linux", "osImage": "", "systemUUID": ""
            },
            "phase": "Running"
        }
    }))?)
}

/// Ready, and without the taints the API server and the node lifecycle controller put on a
/// node that is not (`node.kubernetes.io/not-ready`, `…/unreachable`): pods can land on it.
fn is_ready(node: &Node) -> bool {
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    let tainted = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|t| t.iter().any(|t| t.key.starts_with("node.kubernetes.io/")));
    ready && !tainted
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        // In order: the API server, then etcd, so that the API server does not spend its last
        // moments retrying etcd. The folder goes after (a field dropped after this).
        self.servers.clear();
    }
}

/// Waits until the API server's `/readyz` says ok.
async fn wait_ready(kubeconfig: &Path, apiserver: &mut Server) -> Result<()> {
    let client = client_for(kubeconfig).await?;
    let started = Instant::now();
    loop {
        let readyz = http::Request::get("/readyz").body(Vec::new())?;
        match client.request_text(readyz).await {
            Ok(body) if body.trim() == "ok" => return Ok(()),
            _ => apiserver.still_running(started)?,
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// POSTs `body` to etcd's JSON gateway at `path`; its answer.
fn etcd_post(port: u16, path: &str, body: &serde_json::Value) -> Result<serde_json::Value> {
    let body = serde_json::to_string(body)?;
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "POST {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let (head, json) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    if !head.starts_with("HTTP/1.0 200") && !head.starts_with("HTTP/1.1 200") {
        bail!("etcd answered {path} with {answer}");
    }
    Ok(serde_json::from_str(json)?)
}

async fn client_for(kubeconfig: &Path) -> Result<kube::Client> {
    Ok(kube::Client::try_from(config_for(kubeconfig).await?)?)
}

async fn config_for(kubeconfig: &Path) -> Result<kube::Config> {
    let kubeconfig = Kubeconfig::read_from(kubeconfig)?;
    Ok(kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?)
}

fn kubeconfig_yaml(url: &str, ca_pem: &str, token: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: wasq-test
  cluster:
    server: {url}
    certificate-authority-data: {ca}
users:
- name: admin
  user:
    token: {token}
contexts:
- name: wasq-test
  context:
    cluster: wasq-test
    user: admin
current-context: wasq-test
"
    )
}

/// What a kubectl run printed, and whether it succeeded.
pub struct Ran {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// The common name of the front proxy's client certificate.
const FRONT_PROXY: &str = "front-proxy-client";

/// A CA and a client certificate signed by it for [`FRONT_PROXY`], as kubeadm makes the front
/// proxy's: (CA, certificate, key), PEM.
fn front_proxy(now: i64) -> Result<(String, String, String)> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let at = |t: i64| time::OffsetDateTime::from_unix_timestamp(t);
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::default();
    ca.distinguished_name
        .push(DnType::CommonName, "front-proxy-ca");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca.not_before = at(now - 3600)?;
    ca.not_after = at(now + 7 * 86400)?;
    let ca_pem = ca.self_signed(&ca_key)?.pem();
    let key = KeyPair::generate()?;
    let mut client = CertificateParams::default();
    client
        .distinguished_name
        .push(DnType::CommonName, FRONT_PROXY);
    client.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    client.not_before = at(now - 3600)?;
    client.not_after = at(now + 7 * 86400)?;
    let cert = client.signed_by(&key, &Issuer::new(ca, ca_key))?;
    Ok((ca_pem, cert.pem(), key.serialize_pem()))
}

/// A port nothing listens on now (the kernel's pick), and never handed out before in this
/// process: the tests run side by side, each starting servers on ports picked so, and the kernel
/// may pick a port again once the probe's listener is closed. A race with another process
/// taking it before the server does is still possible, but shows as a start failure, not a
/// wrong answer.
pub fn free_port() -> Result<u16> {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut given = GIVEN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !given.contains(&port) {
            given.push(port);
            return Ok(port);
        }
    }
}

fn random_hex(bytes: usize) -> Result<String> {
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut buf)?;
    Ok(buf.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    }))
}

/// Whether etcd answers `/health` with `"health":"true"`.
fn etcd_healthy(port: u16) -> bool {
    let ask = || -> std::io::Result<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        stream.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer)?;
        Ok(answer)
    };
    ask().is_ok_and(|a| a.contains("\"health\":\"true\""))
}

/// One server process under its lifeline `sh`: killed (`SIGKILL`) when dropped.
pub struct Server {
    name: String,
    sh: Child,
    /// Closing it makes the `sh` kill the server.
    lifeline: Option<ChildStdin>,
    log: PathBuf,
}

/// Runs `"$@"` with its standard input from /dev/null and waits for it; a background reader of
/// the inherited pipe (fd 3) kills it when the pipe closes. The `sh` exits with the server.
const LIFELINE: &str = r#"exec 3<&0
"$@" 3<&- </dev/null &
pid=$!
(read -r _ <&3; kill -9 "$pid" 2>/dev/null) &
wait "$pid""#;

impl Server {
    /// Starts `program` with `args` and `env` in `dir`, its output into `dir/<name>.log`.
    ///
    /// # Errors
    /// When `sh` cannot be started or the log created.
    pub fn spawn(
        name: &str,
        program: &Path,
        dir: &Path,
        args: &[String],
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Result<Server> {
        let log = dir.join(format!("{name}.log"));
        // Appended to: a server started again (the API server's restart) keeps the first log.
        let out = std::fs::File::options()
            .create(true)
            .append(true)
            .open(&log)?;
        let mut sh = Command::new("sh")
            .arg("-c")
            .arg(LIFELINE)
            .arg(name)
            .arg(program)
            .args(args)
            .envs(env.iter().copied())
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("starting {name}"))?;
        let lifeline = sh.stdin.take();
        Ok(Server {
            name: name.to_string(),
            sh,
            lifeline,
            log,
        })
    }

    /// `Ok` while the server runs and `started` is less than [`READY_WITHIN`] ago; else an
    /// error with the end of its log.
    ///
    /// # Errors
    /// As said.
    pub fn still_running(&mut self, started: Instant) -> Result<()> {
        let problem = match self.sh.try_wait()? {
            Some(status) => format!("exited ({status})"),
            None if started.elapsed() > READY_WITHIN => {
                format!("was not ready within {}s", READY_WITHIN.as_secs())
            }
            None => return Ok(()),
        };
        bail!(
            "{} {problem}; the end of {}:\n{}",
            self.name,
            self.log.display(),
            self.log_tail(30)
        )
    }

    /// Its log: standard output and error.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The last `lines` lines of the server's log.
    pub fn log_tail(&self, lines: usize) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(lines).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.lifeline.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.sh.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.sh.kill();
        let _ = self.sh.wait();
    }
}
