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
    // Every chart is a figure of its own with one labelled SVG; both runs' charts, and the
    // distributions of times to admit, the admissions and preemptions and Jain's index of
    // both runs overlaid on the same axes.
    assert_eq!(
        html.matches("<svg").count(),
        html.matches("<figure>").count()
    );
    assert_eq!(
        html.matches("<svg role=\"img\" aria-label=\"").count(),
        html.matches("<svg").count()
    );
    for overlaid in [
        "Wait by LocalQueue, A (solid) and B (dashed) overlaid",
        "Admissions and preemptions over time, A (solid) and B (dashed) overlaid",
        "Jain&#39;s index of the ClusterQueues&#39; shares over time, A (solid) and B (dashed) \
         overlaid",
    ] {
        assert_eq!(
            html.matches(&format!("<figcaption>{overlaid}")).count(),
            1,
            "{overlaid}"
        );
    }
    for side_by_side in [
        "usage of default/cpu in team, stacked per ClusterQueue",
        "wait by LocalQueue (time pending, censored at the end)",
        "admissions, preemptions (by reason) and admission-check waits over time",
        "share of the tree&#39;s default/cpu (solid) vs weighted entitlement (dashed), per \
         ClusterQueue",
    ] {
        for run in ["A (preemption=builtin)", "B (preemption=min-runtime)"] {
            assert!(
                html.contains(&format!("<figcaption>{run}: {side_by_side}")),
                "{run}: {side_by_side}"
            );
        }
    }
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

/// Two cohorts of ten ClusterQueues (each its own LocalQueue), two classes of workloads that
/// borrow and preempt (shared with the report's unit tests).
const TWO_COHORTS: &str = include_str!("../manifests/report-two-cohorts.yaml");

/// Opens `page` in headless Chromium: the DOM it built, and its console messages.
fn render(browser: &Path, page: &Path) -> (String, Vec<String>) {
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
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    (String::from_utf8_lossy(&out.stdout).into_owned(), console)
}

#[test]
fn every_chart_of_a_report_renders_in_a_browser_without_errors() {
    let browser = chromium().expect(
        "headless Chromium is needed to check the HTML report: run .ci/ensure-chromium \
         (installs Debian's chromium package)",
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let shape = dir.path().join("two-cohorts.yaml");
    std::fs::write(&shape, TWO_COHORTS).expect("writes the shape");
    let plugins = built().plugins.clone();
    // Two cohort trees compared under two preemption policies: every usage, waits, timeline
    // and fair-sharing chart, and the overlays; then one run with admission checks.
    let pages = [
        (
            "compare.html",
            vec![
                "--plugins".to_string(),
                plugins.display().to_string(),
                "--compare".into(),
                "preemption=builtin".into(),
                "preemption=least-lost-work".into(),
                shape.display().to_string(),
            ],
            vec![
                "usage of default/cpu in all cohort trees, stacked per cohort tree",
                "usage of default/cpu in cohort-0, stacked per ClusterQueue (top 7 of 10 by \
                 peak, the rest together)",
                "default/cpu borrowed beyond nominal quota, ClusterQueues of cohort-0 (top 7 of \
                 10 by peak)",
                "wait by workload class (time pending, censored at the end)",
                "wait by LocalQueue (top 7 of 20 by p95, the rest together) (time pending, censored at \
                 the end)",
                "admissions, preemptions (by reason) and admission-check waits over time",
                "vs weighted entitlement (dashed), per ClusterQueue, 4 of 20 furthest from it",
                "Jain&#39;s index of the ClusterQueues&#39; shares over time (1 = equal)",
                "Wait by workload class, A (solid) and B (dashed) overlaid",
            ],
        ),
        (
            "checks.html",
            vec![
                root()
                    .join("examples/provisioning-retries.yaml")
                    .display()
                    .to_string(),
            ],
            vec![
                "run: usage of a100/nvidia.com/gpu in gpus, stacked per ClusterQueue",
                "run: workloads waiting for their admission checks",
            ],
        ),
    ];
    for (name, args, titles) in pages {
        let page = dir.path().join(name);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let html = simulate(&args, &page);
        assert_self_contained(&html);
        let charts = html.matches("<figure>").count();
        assert_eq!(
            html.matches("<svg").count(),
            charts,
            "{name}: one SVG per chart"
        );
        for title in titles {
            assert!(html.contains(title), "{name}: no chart {title:?}");
        }
        let (dom, console) = render(&browser, &page);
        // Every chart parsed as an SVG element, labelled, with its lines and axis labels, and
        // a table of its numbers.
        assert_eq!(dom.matches("<svg").count(), charts, "{name}: {dom}");
        assert_eq!(dom.matches("</svg>").count(), charts);
        assert_eq!(dom.matches("role=\"img\" aria-label=\"").count(), charts);
        assert_eq!(
            dom.matches("<summary>The numbers</summary>").count(),
            charts
        );
        assert!(dom.matches("<polyline").count() >= charts * 2);
        assert!(
            dom.matches("<polygon").count() >= 1,
            "{name}: a stacked chart"
        );
        assert!(dom.contains("virtual time (s)") && dom.contains("wait (s)"));
        // The page has no script: any console message is an error (a blocked resource, a
        // parse error reported by the browser).
        assert!(console.is_empty(), "{name}: {console:?}");
    }
}
