// The dashboard in headless Chromium, driven by Playwright (playwright-core, installed by
// .ci/ensure-chromium), against a dashboard that a command serves, or one already served:
//
//   node live.cjs EXPECT_JSON -- COMMAND ARGS...
//   node live.cjs EXPECT_JSON --url URL
//
// The browser starts first; then the command, which must print `dashboard at http://ADDR/` on
// standard error (wasq simulate --serve). With --url, `ready` is printed on standard error once
// the page is open and checked, for the test to make the admission and the preemption happen.
// What the page showed is printed as JSON on standard output for the Rust test to assert; a
// wait that times out fails with its reason. EXPECT_JSON names what to wait for:
//   {"admitted": "ns/name", "preempted": "ns/name", "screenshots": "DIR or null"}
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");
const { chromium } = require(process.env.WASQ_PLAYWRIGHT_CORE || "playwright-core");

const [expectJson, mode, command, ...args] = process.argv.slice(2);
if ((mode !== "--" && mode !== "--url") || !command) {
  console.error("usage: node live.cjs EXPECT_JSON -- COMMAND ARGS... | --url URL");
  process.exit(2);
}
const expect = JSON.parse(expectJson);
const TIMEOUT = 60_000;

function served(child) {
  return new Promise((resolve, reject) => {
    let err = "";
    const timer = setTimeout(() => reject(new Error(`no dashboard address after 60 s:\n${err}`)), TIMEOUT);
    child.stderr.on("data", (d) => {
      err += d;
      const m = /dashboard at (http:\/\/[^\s/]+\/)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on("exit", (code) => reject(new Error(`the command exited (${code}) before serving:\n${err}`)));
  });
}

// The text of the workloads table's row of `key`, or null.
async function rowText(page, key) {
  return page.evaluate((key) => {
    for (const tr of document.querySelectorAll("main tbody tr")) {
      const head = tr.querySelector("th");
      if (head && head.textContent.trim() === key) return tr.textContent;
    }
    return null;
  }, key);
}

async function main() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu"],
  });
  const child = mode === "--" ? spawn(command, args, { stdio: ["ignore", "ignore", "pipe"] }) : null;
  const out = { consoleErrors: [], requests: [], tabOrder: [], pages: {}, live: {}, screenshots: [] };
  try {
    const url = child ? await served(child) : command;
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(TIMEOUT);
    page.on("console", (m) => { if (m.type() === "error") out.consoleErrors.push(m.text()); });
    page.on("pageerror", (e) => out.consoleErrors.push(String(e)));
    page.on("request", (r) => out.requests.push(r.url()));
    await page.goto(url + "#/queues");
    await page.waitForSelector("main table");
    await page.evaluate(() => { window.__loadedOnce = true; });
    // Keyboard, from the page as it loads: the skip link, then every section in order; Enter
    // opens the focused one.
    for (let i = 0; i < 6; i++) {
      await page.keyboard.press("Tab");
      out.tabOrder.push(await page.evaluate(() => document.activeElement.textContent.trim()));
    }
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => location.hash === "#/policies");
    out.live.admittedAtLoad = ((await rowTextOn(page, url, expect.admitted)) || "").includes("Admitted");
    if (!child) process.stderr.write("ready\n");
    // Every section renders a heading and at least one table or a "none" line.
    for (const [hash, heading] of [["queues", "ClusterQueues"], ["localqueues", "LocalQueues"], ["workloads", "Workloads"], ["topology", "Topology"], ["policies", "Policies"]]) {
      await page.click(`nav a[href="#/${hash}"]`);
      await page.waitForFunction((h) => document.querySelector("main h2") && document.querySelector("main h2").textContent.startsWith(h), heading);
      out.pages[hash] = await page.evaluate(() => ({
        heading: document.querySelector("main h2").textContent,
        tables: document.querySelectorAll("main table").length,
        captions: [...document.querySelectorAll("main caption")].map((c) => c.textContent),
        current: document.querySelector('nav a[aria-current="page"]').textContent,
      }));
    }

    // Live: the admission, then the preemption, arrive without a reload.
    await page.click('nav a[href="#/workloads"]');
    await page.waitForFunction((key) => {
      for (const tr of document.querySelectorAll("main tbody tr")) {
        const th = tr.querySelector("th");
        if (th && th.textContent.trim() === key && tr.textContent.includes("Admitted")) return true;
      }
      return false;
    }, expect.admitted);
    out.live.admitted = await rowText(page, expect.admitted);
    // The preempted workload's detail, opened from the keyboard: its history names who
    // preempted it and the policy (and digest) that chose it as a victim.
    const [ns, name] = expect.preempted.split("/");
    await page.focus(`#wl-${ns}-${name}`);
    await page.keyboard.press("Enter");
    await page.waitForSelector("#preempted-by");
    out.live.preemptedNote = await page.textContent("#preempted-by");
    out.live.history = await page.evaluate(() => {
      const t = [...document.querySelectorAll("main table")].find((t) => t.caption && t.caption.textContent.startsWith("Decision history"));
      return t ? [...t.tBodies[0].rows].map((r) => [...r.cells].map((c) => c.textContent.trim())) : [];
    });
    out.live.reloaded = !(await page.evaluate(() => window.__loadedOnce === true));
    if (expect.screenshots) {
      // The pages as the run left them, for the docs.
      await page.waitForFunction(() => /^Final/.test(document.getElementById("status").textContent));
      await page.reload();
      await page.waitForSelector("#preempted-by");
      await shoot(page, "dashboard-workload.png", out);
      for (const hash of ["queues", "workloads", "policies"]) {
        await page.click(`nav a[href="#/${hash}"]`);
        await page.waitForFunction((h) => document.querySelector(`nav a[href="#/${h}"][aria-current="page"]`), hash);
        await shoot(page, `dashboard-${hash}.png`, out);
      }
    }
    await page.close();
  } finally {
    if (child) child.kill("SIGINT");
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
}

async function shoot(page, name, out) {
  const file = path.join(expect.screenshots, name);
  await page.screenshot({ path: file, fullPage: true });
  out.screenshots.push(file);
}

// The row of `key` on the workloads page (going there and back).
async function rowTextOn(page, url, key) {
  await page.goto(url + "#/workloads");
  await page.waitForSelector("main table");
  return rowText(page, key);
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
