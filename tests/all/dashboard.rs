//! The dashboard (`wasq simulate --serve`): its HTTP answers, and the page in headless
//! Chromium driven by Playwright (`tests/dashboard/live.cjs`; `.ci/ensure-chromium` installs
//! Chromium and playwright-core): every section renders, the keyboard reaches every section,
//! an admission and a preemption arrive live without a reload, the preempted workload's
//! history names its preemptor and the plugin (and digest) that chose it, no console error,
//! no request leaves the dashboard's own address.
//!
//! `WASQ_DASHBOARD_SCREENSHOTS=docs cargo test --test all dashboard` refreshes the
//! screenshots the docs show.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use super::html_report::chromium;
use super::plugins::built;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A `wasq simulate --serve 127.0.0.1:0` that is killed when dropped, and its address.
struct Served {
    child: Child,
    address: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(args: &[&str]) -> Served {
    // Killed and waited for when dropped, also when this panics.
    let mut served = Served {
        child: Command::new(env!("CARGO_BIN_EXE_wasq"))
            .arg("simulate")
            .args(args)
            .args(["--serve", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("wasq runs"),
        address: String::new(),
    };
    let mut lines = BufReader::new(served.child.stderr.take().expect("stderr"));
    let mut said = String::new();
    loop {
        let mut line = String::new();
        if lines.read_line(&mut line).expect("reads stderr") == 0 {
            panic!("wasq ended without serving: {said}");
        }
        said.push_str(&line);
        // The run is over once it says so: the view is then the final one.
        if line.contains("the run is over") {
            served.address = said
                .split("http://")
                .nth(1)
                .and_then(|r| r.split('/').next())
                .expect("an address")
                .to_string();
            std::thread::spawn(move || std::io::copy(&mut lines, &mut std::io::sink()));
            return served;
        }
    }
}

/// One HTTP/1.0 request: status code, headers and body.
fn request(address: &str, method: &str, path: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(address).expect("connects");
    write!(s, "{method} {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").expect("writes");
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("reads");
    let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status");
    (status, head.to_lowercase(), body.to_string())
}

#[test]
fn the_dashboard_serves_the_final_view_its_details_and_refuses_writes() {
    let scenario = root().join("examples/tas-racks.yaml");
    let served = serve(&[scenario.to_str().unwrap()]);
    let (status, head, page) = request(&served.address, "GET", "/");
    assert_eq!(status, 200);
    assert!(head.contains("content-security-policy: default-src 'none'; script-src 'self'"));
    // Nothing on the page comes from elsewhere.
    assert!(
        page.contains("<script src=\"app.js\" defer></script>"),
        "{page}"
    );
    for needle in ["http:", "https:", "//"] {
        assert!(!page.contains(needle), "the page names {needle}");
    }
    let (status, _, body) = request(&served.address, "GET", "/api/view");
    assert_eq!(status, 200);
    let view: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(view["running"], false);
    assert_eq!(view["clock"], "virtual");
    // Every ClusterQueue and LocalQueue of the scenario, the TAS flavor's domains with their
    // allocatable capacity, and the placement policy bound.
    let cqs: Vec<&str> = view["clusterQueues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["name"].as_str().unwrap())
        .collect();
    assert!(!cqs.is_empty());
    let topology = view["topology"].as_array().expect("topology");
    assert!(!topology.is_empty(), "{view}");
    let domains = topology[0]["domains"].as_array().unwrap();
    assert!(
        domains.iter().any(|d| d["level"]
            != topology[0]["levels"]
                .as_array()
                .unwrap()
                .last()
                .unwrap()
                .clone()),
        "levels above nodes are listed"
    );
    assert!(view["clusterQueues"][0]["policies"]["placement"].is_string());
    // A listed workload's detail holds its history: it reserved quota, with the policy
    // that chose its flavors.
    let w = &view["workloads"][0];
    let path = format!(
        "/api/workloads/{}/{}",
        w["namespace"].as_str().unwrap(),
        w["name"].as_str().unwrap()
    );
    let (status, _, body) = request(&served.address, "GET", &path);
    assert_eq!(status, 200, "{body}");
    let detail: Value = serde_json::from_str(&body).unwrap();
    let steps = detail["history"].as_array().unwrap();
    let reserved = steps
        .iter()
        .find(|s| s["kind"] == "QuotaReserved")
        .unwrap_or_else(|| panic!("{detail}"));
    assert_eq!(reserved["policies"][0]["extension"], "flavor-assignment");
    let (status, _, body) = request(&served.address, "GET", "/api/workloads/none/such");
    assert_eq!(
        (status, body.as_str()),
        (404, "workload none/such is not in the dashboard's view")
    );
    let (status, _, _) = request(&served.address, "POST", "/api/view");
    assert_eq!(status, 405);
    let (status, _, _) = request(&served.address, "GET", "/etc/passwd");
    assert_eq!(status, 404);
}

/// Where `.ci/ensure-chromium` puts playwright-core.
pub(crate) fn playwright_core() -> PathBuf {
    let toolchains = std::env::var_os("WASQ_TOOLCHAINS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache")
                })
                .join("wasq/toolchains")
        });
    toolchains.join("browser/node_modules/playwright-core")
}

#[test]
fn the_simulators_dashboard_updates_live_in_a_browser() {
    let browser = chromium().expect("headless Chromium: run .ci/ensure-chromium");
    let driver = playwright_core();
    assert!(
        driver.join("package.json").is_file(),
        "playwright-core is not at {}: run .ci/ensure-chromium",
        driver.display()
    );
    let plugins = built().plugins.clone();
    let digest = wasq::wasm::digest_of(
        &std::fs::read(plugins.join("min-runtime.wasm")).expect("min-runtime is built"),
    );
    let scenario = "tests/plugin-scenarios/min-runtime.yaml";
    let screenshots = std::env::var("WASQ_DASHBOARD_SCREENSHOTS")
        .ok()
        .map(|d| root().join(d).display().to_string());
    // At 80× wall time: fresh-train is admitted about 10.5 s after the start, long-train is
    // preempted 0.75 s later (by min-runtime, which protects fresh-train).
    let expect = serde_json::json!({
        "admitted": "default/fresh-train",
        "preempted": "default/long-train",
        "screenshots": screenshots,
    });
    let out = Command::new("node")
        .arg(root().join("tests/dashboard/live.cjs"))
        .arg(expect.to_string())
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_wasq"))
        .args(["simulate", "--plugins"])
        .arg(&plugins)
        .args(["--policy", "preemption=min-runtime", "--speed", "80"])
        .args(["--shadow", "preemption=least-lost-work"])
        .arg(scenario)
        .args(["--serve", "127.0.0.1:0"])
        .current_dir(root())
        .env("CHROMIUM", &browser)
        .env("WASQ_PLAYWRIGHT_CORE", &driver)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).expect("the script's JSON");
    assert_eq!(seen["consoleErrors"], serde_json::json!([]), "{seen}");
    let address = seen["requests"][0].as_str().unwrap().to_string();
    let origin = &address[..address[7..].find('/').unwrap() + 8];
    assert!(origin.starts_with("http://127.0.0.1:"), "{origin}");
    for r in seen["requests"].as_array().unwrap() {
        assert!(
            r.as_str().unwrap().starts_with(origin),
            "a request left the dashboard: {r}"
        );
    }
    assert_eq!(
        seen["tabOrder"],
        serde_json::json!([
            "Skip to content",
            "ClusterQueues",
            "LocalQueues",
            "Workloads",
            "Topology",
            "Policies"
        ])
    );
    for (page, heading) in [
        ("queues", "ClusterQueues"),
        ("localqueues", "LocalQueues"),
        ("workloads", "Workloads"),
        ("topology", "Topology"),
        ("policies", "Policies"),
    ] {
        assert_eq!(seen["pages"][page]["current"], heading, "{seen}");
    }
    assert!(
        seen["pages"]["queues"]["captions"][0]
            .as_str()
            .unwrap()
            .starts_with("1 ClusterQueue(s)")
    );
    // Live: not admitted when the page opened, admitted later without a reload.
    assert_eq!(seen["live"]["admittedAtLoad"], false, "{seen}");
    assert!(
        seen["live"]["admitted"]
            .as_str()
            .unwrap()
            .contains("Admitted")
    );
    assert_eq!(seen["live"]["reloaded"], false);
    let note = seen["live"]["preemptedNote"].as_str().unwrap();
    assert!(
        note.contains("by default/urgent") && note.contains("victims chosen by min-runtime"),
        "{note}"
    );
    let history = seen["live"]["history"].as_array().unwrap();
    let preempted = history
        .iter()
        .find(|r| r[1] == "Preempted")
        .unwrap_or_else(|| panic!("{history:?}"));
    let decided_by = preempted[4].as_str().unwrap();
    assert!(
        decided_by.contains("preemption: min-runtime") && decided_by.contains(&digest),
        "{decided_by} (digest {digest})"
    );
    assert!(
        preempted[3]
            .as_str()
            .unwrap()
            .contains("preempted by default/urgent")
    );
}
