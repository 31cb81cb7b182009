//! A real control plane for one test: etcd and kube-apiserver, as built by
//! `.ci/build-control-plane`, on free loopback ports with a throw-away folder.
//!
//! The API server serves TLS with a certificate for `127.0.0.1` signed by a CA made here (wasq's
//! own webhook certificate code), authenticates an `admin` user in `system:masters` by a static
//! token, authorizes with RBAC, and signs service-account tokens with a key made here — what
//! controller-runtime's envtest sets up, plus a kubeconfig file for the processes that will need
//! one (`kubectl`, kube-controller-manager, kube-scheduler, kwok).
//!
//! Each server runs under a small `sh` that holds a pipe from this process: when the pipe
//! closes — at [`ControlPlane`]'s drop, or when the test process dies however it dies — the `sh`
//! kills the server, so no etcd or API server outlives its test.

use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use kube::config::{KubeConfigOptions, Kubeconfig};
use sha2::{Digest, Sha256};

use crate::recorder::{self, StatusWrites};

/// The binaries `.ci/build-control-plane` makes.
const BINARIES: [&str; 5] = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
];
/// Overrides where the binaries are looked for.
const BIN_ENV: &str = "WASQ_CONTROL_PLANE_BIN";
/// The admin's kubeconfig, in the control plane's folder.
const KUBECONFIG: &str = "kubeconfig";
/// How long a server may take to become ready (a cold API server on two busy cores takes ~10 s).
const READY_WITHIN: Duration = Duration::from_secs(120);

/// The folder holding the control plane's binaries: `$WASQ_CONTROL_PLANE_BIN`, else the one
/// `.ci/build-control-plane` builds for the versions `.ci/control-plane` pins (keyed, as there,
/// by the SHA-256 of `go.mod`, `go.sum`, `etcd/main.go` and the script itself).
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
                ".ci/build-control-plane",
            ] {
                let path = root.join(file);
                hash.update(std::fs::read(&path).with_context(|| path.display().to_string())?);
            }
            let key = hash.finalize()[..8].iter().fold(String::new(), |mut s, b| {
                let _ = write!(s, "{b:02x}");
                s
            });
            root.join("target/control-plane").join(key).join("bin")
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

/// etcd and kube-apiserver, running until dropped.
pub struct ControlPlane {
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    servers: Vec<Server>,
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
            .tempdir()?;
        let root = dir.path();

        let (client_port, peer_port) = (free_port()?, free_port()?);
        let etcd_url = format!("http://127.0.0.1:{client_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        let mut etcd = Server::spawn(
            "etcd",
            bin,
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
        let certs = wasq::k8s::webhook::certs::generate(&names, now - 3600, now + 7 * 86400)?;
        let token = random_hex(16)?;
        let write = |name: &str, text: &str| -> Result<PathBuf> {
            let path = root.join(name);
            std::fs::write(&path, text).with_context(|| path.display().to_string())?;
            Ok(path)
        };
        let tls_cert = write("apiserver.crt", &certs.cert_pem)?;
        let tls_key = write("apiserver.key", &certs.key_pem)?;
        // Service-account tokens are signed with a key of their own; the public half checks them.
        let sa = rcgen::KeyPair::generate()?;
        let sa_key = write("service-account.key", &sa.serialize_pem())?;
        let sa_pub = write("service-account.pub", &sa.public_key_pem())?;
        let tokens = write(
            "tokens.csv",
            &format!("{token},admin,admin,\"system:masters\"\n"),
        )?;
        let mut apiserver = Server::spawn(
            "kube-apiserver",
            bin,
            root,
            &[
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
                // Its own certificates (aggregator, loopback) go here, not into the work tree.
                format!("--cert-dir={}", root.join("apiserver-certs").display()),
            ],
        )?;
        let kubeconfig = write(KUBECONFIG, &kubeconfig_yaml(&url, &certs.ca_pem, &token))?;
        let client = client_for(&kubeconfig).await?;
        let started = Instant::now();
        loop {
            let readyz = http::Request::get("/readyz").body(Vec::new())?;
            match client.request_text(readyz).await {
                Ok(body) if body.trim() == "ok" => break,
                _ => apiserver.still_running(started)?,
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok(ControlPlane {
            url,
            servers: vec![apiserver, etcd],
            dir,
        })
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
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        // In order: the API server, then etcd, so that the API server does not spend its last
        // moments retrying etcd. The folder goes after (a field dropped after this).
        self.servers.clear();
    }
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

/// A port nothing listens on now (the kernel's pick; a race with another process taking it
/// before the server does is possible but shows as a start failure, not a wrong answer).
fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
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

/// One server process under its lifeline `sh`.
struct Server {
    name: &'static str,
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
    fn spawn(name: &'static str, bin: &Path, dir: &Path, args: &[String]) -> Result<Server> {
        let log = dir.join(format!("{name}.log"));
        let out = std::fs::File::create(&log)?;
        let mut sh = Command::new("sh")
            .arg("-c")
            .arg(LIFELINE)
            .arg(name)
            .arg(bin.join(name))
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("starting {name}"))?;
        let lifeline = sh.stdin.take();
        Ok(Server {
            name,
            sh,
            lifeline,
            log,
        })
    }

    /// `Ok` while the server runs and `started` is less than [`READY_WITHIN`] ago; else an
    /// error with the end of its log.
    fn still_running(&mut self, started: Instant) -> Result<()> {
        let problem = match self.sh.try_wait()? {
            Some(status) => format!("exited ({status})"),
            None if started.elapsed() > READY_WITHIN => {
                format!("was not ready within {}s", READY_WITHIN.as_secs())
            }
            None => return Ok(()),
        };
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(30).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!(
            "{} {problem}; the end of {}:\n{}",
            self.name,
            self.log.display(),
            tail.join("\n")
        )
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
