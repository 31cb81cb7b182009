//! `wasq simulate --report FILE.html`: one self-contained page, every chart rendered by a real
//! browser (headless Chromium; `.ci/ensure-chromium` installs Debian's `chromium` when missing),
//! and with `--compare` exactly the workloads whose fate differs.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::plugins::built;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `wasq simulate` with `args`, its report written to `page`; the page's text.
fn simulate(args: &[&str], page: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_wasq"))
        .arg("simulate")
        .args(args)
        .arg("--report")
        .arg(page)
        .output()
        .expect("wasq runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(page).expect("the report is written")
}

/// The cells of the table row whose first cell is `first`.
fn row<'a>(html: &'a str, first: &str) -> Vec<&'a str> {
    let start = html
        .find(&format!("<tr><td>{first}</td>"))
        .unwrap_or_else(|| panic!("no row {first}"));
    let end = start + html[start..].find("</tr>").expect("row ends");
    html[start..end]
        .split("<td>")
        .skip(1)
        .map(|c| c.trim_end_matches("</td>"))
        .collect()
}

/// Nothing on the page is fetched: no script, no external reference.
fn assert_self_contained(html: &str) {
    for needle in ["<script", " src=", " href=", "@import", "url("] {
        assert!(!html.contains(needle), "the page contains {needle:?}");
    }
}

#[test]
fn compare_lists_exactly_the_workloads_whose_fate_differs_and_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let page = dir.path().join("compare.html");
    let scenario = root().join("tests/plugin-scenarios/min-runtime.yaml");
    let plugins = built().plugins.clone();
    let html = simulate(
        &[
            "--plugins",
            plugins.to_str().unwrap(),
            "--compare",
            "preemption=builtin",
            "preemption=min-runtime",
            scenario.to_str().unwrap(),
        ],
        &page,
    );
    assert_self_contained(&html);
    assert!(html.contains(
        "<h1>wasq simulation: A (preemption=builtin) vs B (preemption=min-runtime)</h1>"
    ));
    // Built-in: fresh-train is preempted and long-train keeps running; min-runtime the
    // reverse. Nobody else's fate differs.
    assert!(html.contains("<caption>2 workload(s)</caption>"), "{html}");
    let fresh = row(&html, "default/fresh-train");
    let long = row(&html, "default/long-train");
    assert!(
        fresh[1].contains("after being preempted at") && fresh[1].contains("InClusterQueue"),
        "{fresh:?}"
    );
    assert!(fresh[2].starts_with("admitted to team"), "{fresh:?}");
    assert!(long[1].starts_with("admitted to team"), "{long:?}");
    assert!(long[2].contains("after being preempted at"), "{long:?}");
    // Both runs' charts: usage, time to admit, the timeline and Jain's index each.
    assert_eq!(html.matches("<svg").count(), 8, "{html}");
    assert!(
        html.contains("min-runtime")
            && html.contains("<caption>B (preemption=min-runtime): plugins</caption>")
    );
}

/// The Chromium on this machine, if any.
fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            let out = Command::new("sh")
                .args(["-c", &format!("command -v {name}")])
                .output()
                .ok()?;
            let path = String::from_utf8(out.stdout).ok()?;
            (!path.trim().is_empty()).then(|| PathBuf::from(path.trim()))
        })
}

#[test]
fn every_chart_of_a_report_renders_in_a_browser_without_errors() {
    let browser = chromium().expect(
        "headless Chromium is needed to check the HTML report: run .ci/ensure-chromium \
         (installs Debian's chromium package)",
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let page = dir.path().join("report.html");
    let html = simulate(
        &[root()
            .join("examples/reclaim-borrowed-quota.yaml")
            .to_str()
            .unwrap()],
        &page,
    );
    assert_self_contained(&html);
    let charts = html.matches("<svg").count();
    assert!(charts >= 4, "{charts} charts");
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    // Every chart parsed as an SVG element with its lines and axis labels.
    assert_eq!(dom.matches("<svg").count(), charts, "{dom}");
    assert_eq!(dom.matches("</svg>").count(), charts);
    assert!(dom.matches("<polyline").count() >= charts * 2);
    assert!(dom.contains("virtual time (s)") && dom.contains("time to admit (s)"));
    // The page has no script: any console message is an error (a blocked resource, a parse
    // error reported by the browser).
    let stderr = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "{console:?}");
}
