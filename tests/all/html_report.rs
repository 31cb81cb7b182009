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

/// The cells (`<td>`) of the first table row that begins with `first`: as a row header (the
/// headline's ClusterQueue, not among the cells), or else as a cell.
fn row<'a>(html: &'a str, first: &str) -> Vec<&'a str> {
    let start = [
        format!("<tr><th scope=\"row\">{first}</th>"),
        format!("<tr><td>{first}</td>"),
    ]
    .iter()
    .find_map(|m| html.find(m.as_str()))
    .unwrap_or_else(|| panic!("no row {first}"));
    let end = start + html[start..].find("</tr>").expect("row ends");
    html[start..end]
        .split("<td")
        .skip(1)
        .map(|c| c[c.find('>').expect("a cell") + 1..].trim_end_matches("</td>"))
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
    // What differs comes first: both runs' headline tables side by side with their
    // differences, then the workloads whose fate differs, then the overlays, then each
    // section side by side.
    let at = |needle: &str| html.find(needle).unwrap_or_else(|| panic!("no {needle:?}"));
    let order = [
        at("<h2>Per ClusterQueue, A and B</h2><div class=\"headline\""),
        at("<h2>Workloads whose fate differs</h2>"),
        at("<h2>A and B overlaid</h2>"),
        at("<h2>Backlog</h2>"),
    ];
    assert!(order.is_sorted(), "{order:?}");
    assert!(at("<figure>") > order[2], "no chart before the overlays");
    // Per figure: A, B and B − A.
    let team = row(&html, "team");
    assert_eq!(team.len(), 8 * 3, "{team:?}");
    assert_eq!(&team[..3], ["3", "3", "0"], "admitted");
    assert!(html.contains("<th scope=\"col\" class=\"run\">B − A</th>"));
    // Every chart is a figure of its own with one labelled SVG; both runs' charts, and the
    // backlog, the distributions of waits, the admissions, the preemptions and Jain's index of
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
        "Pending workloads, every ClusterQueue together, A (solid) and B (dashed)",
        "Wait by LocalQueue, cumulative, A (solid) and B (dashed)",
        "Admissions so far, A (solid) and B (dashed)",
        "Preemptions so far, A (solid) and B (dashed)",
        "Jain&#39;s index of the ClusterQueues&#39; shares over time, A (solid) and B (dashed)",
    ] {
        assert_eq!(
            html.matches(&format!("<figcaption>{overlaid}")).count(),
            1,
            "{overlaid}"
        );
    }
    for side_by_side in [
        "Usage of default/cpu in team, stacked per ClusterQueue",
        "Usage of default/cpu per ClusterQueue of team, against its own nominal quota",
        "Wait by LocalQueue (time pending, censored at the end)",
        "Admissions so far",
        "Preemptions so far, by reason",
        "Share of the tree&#39;s default/cpu (solid) vs weighted entitlement (dashed), per \
         ClusterQueue",
    ] {
        for run in ["A", "B"] {
            assert!(
                html.contains(&format!("<figcaption>{run}: {side_by_side}")),
                "{run}: {side_by_side}"
            );
        }
    }
    for run in ["A (preemption=builtin)", "B (preemption=min-runtime)"] {
        assert!(html.contains(&format!("<h3>{run}</h3>")), "{run}");
    }
    assert!(html.contains("<caption>B: Plugins</caption>"));
}

/// Every queue named in a chart's legend, with the colours of its samples there (the legend
/// draws an entry's sample, then its text).
fn legend_colours(html: &str) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut out: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for svg in html.split("<svg").skip(1) {
        let svg = &svg[..svg.find("</svg>").expect("svg ends")];
        let lines: Vec<&str> = svg.lines().collect();
        for (k, line) in lines.iter().enumerate() {
            // Legend text is drawn at x=32 of the legend's area, to the right of the plot.
            if !(line.starts_with("<text") && k + 1 < lines.len() && k > 0) {
                continue;
            }
            let name = lines[k + 1].trim();
            let queue = name.split(' ').next().unwrap_or(name);
            if !queue.starts_with("cq-") {
                continue;
            }
            let sample = lines[k - 1];
            let colour = ["stroke=\"", "fill=\""].iter().find_map(|attr| {
                let at = sample.find(attr)? + attr.len();
                Some(sample[at..at + 7].to_string())
            });
            if let Some(colour) = colour.filter(|c| c.starts_with('#')) {
                out.entry(queue.to_string()).or_default().push(colour);
            }
        }
    }
    out
}

/// The Chromium on this machine, if any.
pub(crate) fn chromium() -> Option<PathBuf> {
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
    // Two cohort trees compared under two preemption policies, min-runtime shadowing both:
    // every usage, waits, timeline and fair-sharing chart, the overlays and the shadows'
    // tables; then one run with admission checks.
    let pages = [
        (
            "compare.html",
            vec![
                "--plugins".to_string(),
                plugins.display().to_string(),
                "--shadow".into(),
                "preemption=min-runtime".into(),
                "--compare".into(),
                "preemption=builtin".into(),
                "preemption=least-lost-work".into(),
                shape.display().to_string(),
            ],
            vec![
                "<h2>Shadow policies</h2>",
                "<caption>A: Shadow policies</caption>",
                "<caption>B: min-runtime: where it differs from the enforced policy",
                "A: Pending workloads, stacked per ClusterQueue (top 7 of 20 by peak, the rest \
                 together)",
                "A: Usage of default/cpu in all cohort trees, stacked per cohort tree",
                "A: Usage of default/cpu in cohort-0, stacked per ClusterQueue (top 7 of 10 by \
                 peak, the rest together)",
                "A: Usage of default/cpu per ClusterQueue of cohort-0, against its own nominal \
                 quota (top 7 of 10 by peak against it)",
                "A: Wait by workload class (time pending, censored at the end)",
                "A: Wait by LocalQueue (top 7 of 20 by p95, the rest together) (time pending, \
                 censored at the end)",
                "A: Admissions so far",
                "A: Preemptions so far, by reason",
                "vs weighted entitlement (dashed), per ClusterQueue, 4 of 20 furthest from it",
                "B: Jain&#39;s index of the ClusterQueues&#39; shares over time (1 = equal)",
                "Wait by workload class, cumulative, A (solid) and B (dashed)",
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
                "<figcaption>Usage of a100/nvidia.com/gpu in gpus, stacked per ClusterQueue",
                "<figcaption>Workloads waiting for their admission checks",
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
        // The headline table first, then the charts.
        let headline = dom
            .find("<div class=\"headline\"")
            .expect("a headline table");
        assert!(headline < dom.find("<figure>").expect("charts"), "{name}");
        assert!(dom.contains("<th scope=\"row\">all ClusterQueues</th>"));
        // Axes in lengths of time, not raw seconds.
        assert!(dom.contains("virtual time") && dom.contains("wait"));
        let ticks: Vec<&str> = dom
            .split("</text>")
            .filter_map(|t| t.rsplit('>').next())
            .map(str::trim)
            .filter(|t| t.ends_with('s') || t.ends_with('m') || t.ends_with('h'))
            .filter(|t| t.chars().next().is_some_and(|c| c.is_ascii_digit()))
            .collect();
        assert!(!ticks.is_empty(), "{name}: no tick in a unit of time");
        assert!(
            !dom.contains(">\n10.0\n</text>") && !dom.contains(">\n1800.0\n</text>"),
            "{name}: raw seconds on an axis"
        );
        // A queue in one colour on every chart it is in.
        let colours = legend_colours(&dom);
        for (queue, seen) in &colours {
            assert!(
                seen.iter().all(|c| c == &seen[0]),
                "{name}: {queue}: {seen:?}"
            );
        }
        if name == "compare.html" {
            assert!(colours.values().any(|seen| seen.len() >= 4), "{colours:?}");
            // Each run's shadow, asked every preemption question, in a table the browser
            // kept: its figures and its agreement.
            let shadow = row(&dom, "min-runtime");
            assert_eq!(shadow.len(), 9, "{shadow:?}");
            assert_eq!(shadow[1], "preemption");
            assert!(shadow[8].ends_with('%'), "{shadow:?}");
            for run in ["A", "B"] {
                let caption = format!("<caption>{run}: Shadow policies</caption>");
                assert!(dom.contains(&caption), "{caption}");
            }
        }
        // The page has no script: any console message is an error (a blocked resource, a
        // parse error reported by the browser).
        assert!(console.is_empty(), "{name}: {console:?}");
    }
}
