// wasq dashboard: reads the view from the server it came from (server-sent events over
// fetch, so that a bearer token can go with them), renders it with DOM calls (no HTML from
// data), keeps keyboard focus across updates. No dependency, no request elsewhere.
"use strict";

const state = { view: null, detail: null, detailKey: null, token: sessionStorage.getItem("wasq-token") };

// An element: h("td", {class: "num"}, "3", child, ...). Text children become text nodes.
function h(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function table(caption, headers, rows, numeric) {
  const num = new Set(numeric || []);
  return h("table", {},
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, headers.map((t, i) => h("th", { scope: "col", class: num.has(i) ? "num" : null }, t)))),
    h("tbody", {}, rows.length
      ? rows.map((r) => h("tr", {}, r.map((c, i) => h(i === 0 ? "th" : "td", { scope: i === 0 ? "row" : null, class: num.has(i) ? "num" : null }, c))))
      : h("tr", {}, h("td", { colspan: headers.length, class: "muted" }, "None."))));
}

function time(t) {
  if (t === undefined || t === null) return "";
  if (state.view && state.view.clock === "wall") return new Date(t * 1000).toISOString().replace(".000Z", "Z");
  return "t=" + (Math.round(t * 10) / 10).toFixed(1) + "s";
}

function shortDigest(d) {
  if (!d) return "";
  const hex = d.replace(/^sha256:/, "");
  return hex.length > 12 ? hex.slice(0, 12) : hex;
}

function policyRef(ref) {
  // "name@digest" as the ClusterQueues list them.
  const at = ref.lastIndexOf("@");
  const name = at < 0 ? ref : ref.slice(0, at);
  const digest = at < 0 ? "" : ref.slice(at + 1);
  return h("span", { title: digest }, name, digest && digest !== "builtin" ? h("span", { class: "digest muted" }, " @" + shortDigest(digest)) : null);
}

function usageCell(r) {
  const max = Math.max(r.nominalMilli, r.usageMilli, 1);
  return h("span", {},
    h("meter", { min: 0, max, value: r.usageMilli, high: Math.max(r.nominalMilli, 1), "aria-label": `${r.resource} in ${r.flavor}: ${r.usage} of ${r.nominal}` }),
    `${r.usage} / ${r.nominal}`,
    r.borrowed !== "0" ? h("span", { class: "muted" }, ` (borrowing ${r.borrowed})`) : null);
}

function resourcesList(resources) {
  if (!resources.length) return h("span", { class: "muted" }, "no quota");
  return h("ul", { class: "tree root" }, resources.map((r) => h("li", {}, h("code", {}, `${r.flavor}/${r.resource} `), usageCell(r),
    r.borrowingLimit ? h("span", { class: "muted" }, ` borrowingLimit ${r.borrowingLimit}`) : null,
    r.lendingLimit ? h("span", { class: "muted" }, ` lendingLimit ${r.lendingLimit}`) : null)));
}

function workloadLink(ns, name) {
  return h("a", { href: `#/workloads/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`, id: `wl-${ns}-${name}` }, `${ns}/${name}`);
}

function queues(v) {
  const cqs = v.clusterQueues.map((q) => [
    h("a", { href: `#/workloads?clusterQueue=${encodeURIComponent(q.name)}`, id: `cq-${q.name}` }, q.name),
    q.cohort || h("span", { class: "muted" }, "none"),
    q.active ? "Active" : h("span", { class: "state state-Inactive", title: q.inactiveReason || "" }, "Inactive: " + (q.inactiveReason || "")),
    q.pending, q.holding,
    resourcesList(q.resources),
    q.weightedShare === undefined ? "" : q.weightedShare,
    h("ul", { class: "tree root" }, Object.entries(q.policies).map(([ext, ref]) => h("li", {}, ext + ": ", policyRef(ref)))),
  ]);
  const byName = new Map(v.cohorts.map((c) => [c.name, c]));
  const tree = (c) => h("li", {}, h("strong", {}, `Cohort ${c.name}`), " ", resourcesList(c.resources),
    h("ul", { class: "tree" },
      c.cohorts.map((n) => byName.get(n)).filter(Boolean).map(tree),
      c.clusterQueues.map((n) => {
        const q = v.clusterQueues.find((x) => x.name === n);
        return h("li", {}, `ClusterQueue ${n}`, q ? h("span", { class: "muted" }, ` — ${q.pending} pending, ${q.holding} holding quota`) : null);
      })));
  const roots = v.cohorts.filter((c) => !c.parent);
  return [
    h("h2", {}, "ClusterQueues"),
    table(`${v.clusterQueues.length} ClusterQueue(s): usage against nominal quota`, ["Name", "Cohort", "Active", "Pending", "Holding quota", "Usage / nominal", "Weighted share", "Policies"], cqs, [3, 4, 6]),
    h("h2", {}, "Cohorts"),
    roots.length ? h("ul", { class: "tree root", "aria-label": "Cohort tree" }, roots.map(tree)) : h("p", { class: "muted" }, "No cohorts."),
  ];
}

function localQueues(v) {
  const rows = v.localQueues.map((q) => [
    h("a", { href: `#/workloads?localQueue=${encodeURIComponent(q.namespace + "/" + q.name)}`, id: `lq-${q.namespace}-${q.name}` }, `${q.namespace}/${q.name}`),
    q.clusterQueue, q.pending, q.holding,
    Object.entries(q.fairSharingUsage || {}).map(([r, u]) => `${r}: ${Math.round(u * 100) / 100}`).join(", "),
  ]);
  return [h("h2", {}, "LocalQueues"), table(`${v.localQueues.length} LocalQueue(s)`, ["LocalQueue", "ClusterQueue", "Pending", "Holding quota", "Admission fair sharing usage"], rows, [2, 3])];
}

function params() {
  const q = location.hash.split("?")[1] || "";
  return new URLSearchParams(q);
}

function workloads(v) {
  const p = params();
  const cq = p.get("clusterQueue");
  const lq = p.get("localQueue");
  const want = p.get("state") || "";
  const text = (p.get("q") || "").toLowerCase();
  const rows = v.workloads.filter((w) =>
    (!cq || w.clusterQueue === cq) &&
    (!lq || `${w.namespace}/${w.localQueue}` === lq) &&
    (!want || w.state === want) &&
    (!text || `${w.namespace}/${w.name}`.toLowerCase().includes(text)));
  const setParam = (k, val) => {
    const next = params();
    if (val) next.set(k, val); else next.delete(k);
    const s = next.toString();
    location.hash = "#/workloads" + (s ? "?" + s : "");
  };
  const search = h("input", { id: "filter-text", type: "search", value: p.get("q") || "" });
  search.addEventListener("change", () => setParam("q", search.value));
  const select = h("select", { id: "filter-state" }, ["", "Pending", "QuotaReserved", "Admitted", "Evicting", "Finished", "Inactive"].map((s) => h("option", { value: s, selected: s === want }, s || "any")));
  select.addEventListener("change", () => setParam("state", select.value));
  const scope = [cq && `ClusterQueue ${cq}`, lq && `LocalQueue ${lq}`].filter(Boolean).join(", ");
  return [
    h("h2", {}, "Workloads" + (scope ? ` of ${scope}` : "")),
    h("div", { class: "filters" },
      h("label", { for: "filter-text" }, "Name contains", search),
      h("label", { for: "filter-state" }, "State", select),
      scope ? h("a", { href: "#/workloads" }, "All workloads") : null),
    table(`${rows.length} workload(s)` + (v.workloadsOmitted ? `; ${v.workloadsOmitted} more not listed` : ""),
      ["Workload", "State", "Position in LocalQueue", "Position in ClusterQueue", "LocalQueue", "ClusterQueue", "Priority", "Why pending"],
      rows.map((w) => [workloadLink(w.namespace, w.name), h("span", { class: `state state-${w.state}` }, w.state),
        w.positionInLocalQueue ?? "", w.positionInClusterQueue ?? "", w.localQueue || "", w.clusterQueue || "", w.priority, w.reason || ""]),
      [2, 3, 6]),
  ];
}

function policiesOf(step) {
  return (step.policies || []).map((p) => h("div", {}, `${p.extension}: `, h("strong", {}, p.name),
    p.digest && p.digest !== "builtin" ? h("span", { class: "digest" }, ` ${p.digest}`) : h("span", { class: "muted" }, " (built-in)")));
}

function workloadDetail(d) {
  if (!d) return [h("h2", {}, state.detailKey), h("p", { class: "muted" }, "Loading…")];
  if (d.error) return [h("h2", {}, state.detailKey), h("p", {}, d.error)];
  const preempted = d.history.filter((s) => s.kind === "Preempted");
  const last = preempted[preempted.length - 1];
  return [
    h("h2", {}, `Workload ${d.namespace}/${d.name}`),
    last ? h("p", { class: "note", id: "preempted-by" }, "Preempted at ", time(last.time), " by ",
      last.preemptor ? workloadLink(...last.preemptor.split("/")) : "another workload",
      last.message ? `: ${last.message}` : "", last.policies && last.policies[0] ? ` — victims chosen by ${last.policies[0].name}` : "") : null,
    h("dl", {},
      h("dt", {}, "State"), h("dd", { class: `state state-${d.state}` }, d.state),
      h("dt", {}, "LocalQueue"), h("dd", {}, d.localQueue || "none"),
      h("dt", {}, "ClusterQueue"), h("dd", {}, d.clusterQueue || "none"),
      h("dt", {}, "Priority"), h("dd", {}, d.priority),
      d.positionInLocalQueue !== undefined ? [h("dt", {}, "Position"), h("dd", {}, `${d.positionInLocalQueue} in its LocalQueue, ${d.positionInClusterQueue} in its ClusterQueue`)] : null,
      d.reason ? [h("dt", {}, "Why pending"), h("dd", {}, d.reason)] : null),
    table("PodSets", ["PodSet", "Count", "Requests per pod", "Flavors", "Domains per level"],
      d.podSets.map((p) => [p.name, p.count, Object.entries(p.requests).map(([r, q]) => `${r}: ${q}`).join(", "),
        Object.entries(p.flavors || {}).map(([r, f]) => `${r}: ${f}`).join(", "),
        (p.domainsPerLevel || []).map(([l, n]) => `${l}: ${n}`).join(", ")]), [1]),
    table("Decision history (oldest first)", ["Time", "Step", "ClusterQueue", "Details", "Decided by"],
      d.history.map((s) => [time(s.time), h("span", { class: `kind-${s.kind}` }, s.kind), s.clusterQueue || "",
        [s.message || "", s.preemptor ? h("div", {}, "preempted by ", workloadLink(...s.preemptor.split("/"))) : null, s.flavors ? h("div", {}, s.flavors) : null],
        policiesOf(s)])),
  ];
}

function topology(v) {
  if (!v.topology.length) return [h("h2", {}, "Topology"), h("p", { class: "muted" }, "No topology-aware flavors.")];
  return [h("h2", {}, "Topology"), v.topology.map((t) => [
    h("h3", {}, `Flavor ${t.flavor} (Topology ${t.topology}: ${t.levels.join(" › ")})`),
    table(`Domains of ${t.flavor}: used / allocatable` + (t.domainsOmitted ? `; ${t.domainsOmitted} more not listed` : ""),
      ["Domain", "Level", "Most used", "Resources"],
      t.domains.map((d) => [d.domain, d.level,
        h("span", {}, h("meter", { min: 0, max: 100, value: d.percent, "aria-label": `${d.domain}: ${Math.round(d.percent)}% used` }), `${Math.round(d.percent)}%`),
        Object.entries(d.resources).map(([r, [u, a]]) => `${r}: ${u} / ${a}`).join(", ")]), [2]),
  ])];
}

function policies(v) {
  const rows = v.policies.map((p) => [
    p.name, p.extension, p.mode, p.builtin ? h("span", { class: "muted" }, "built-in") : h("span", { class: "digest" }, p.digest),
    p.clusterQueues.join(", "), p.calls,
    Object.entries(p.fallbacks).map(([r, n]) => `${r}: ${n}`).join(", ") || "none",
    p.quarantined ? h("span", { class: "state state-Inactive" }, "quarantined") : "",
    p.shadow ? `${p.shadow.agree} of ${p.shadow.decisions} agree, ${p.shadow.differ} differ` : "",
  ]);
  const diffs = v.policies.filter((p) => p.shadow && p.shadow.differences.length).map((p) =>
    table(`${p.name}: latest decisions that differ from the enforced policy`, ["Workload", "Extension", "Enforced", "Shadow"],
      p.shadow.differences.map((d) => [d.workload, d.extension, d.enforced, d.shadow])));
  return [h("h2", {}, "Policies"), table(`${v.policies.length} policy binding(s)`, ["Policy", "Extension point", "Mode", "Digest", "ClusterQueues", "Calls", "Fallbacks by reason", "", "Shadow agreement"], rows, [5]), diffs];
}

function route() {
  const path = (location.hash || "#/queues").slice(1).split("?")[0];
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return parts.length ? parts : ["queues"];
}

function render() {
  const v = state.view;
  if (!v) return;
  document.getElementById("title").textContent = v.title || "wasq";
  document.title = `${v.title || "wasq"} — wasq dashboard`;
  const [page, ns, name] = route();
  for (const a of document.querySelectorAll("nav a")) {
    if (a.getAttribute("href") === `#/${page}`) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  let content;
  if (page === "workloads" && ns && name) content = workloadDetail(state.detailKey === `${ns}/${name}` ? state.detail : null);
  else if (page === "workloads") content = workloads(v);
  else if (page === "localqueues") content = localQueues(v);
  else if (page === "topology") content = topology(v);
  else if (page === "policies") content = policies(v);
  else content = queues(v);
  const main = document.getElementById("main");
  const focused = main.contains(document.activeElement) && document.activeElement.id;
  main.replaceChildren(...[content].flat(Infinity).filter(Boolean));
  if (focused) {
    const again = document.getElementById(focused);
    if (again) again.focus();
  }
}

function headers() {
  return state.token ? { Authorization: `Bearer ${state.token}` } : {};
}

async function loadDetail() {
  const [page, ns, name] = route();
  if (page !== "workloads" || !ns || !name) return;
  const key = `${ns}/${name}`;
  const r = await fetch(`api/workloads/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`, { headers: headers() });
  const detail = r.ok ? await r.json() : { error: await r.text() };
  if (`${route()[1]}/${route()[2]}` !== key) return;
  state.detailKey = key;
  state.detail = detail;
  render();
}

function setStatus(text) {
  document.getElementById("status").textContent = text;
}

function showLogin(message) {
  const form = document.getElementById("login");
  form.hidden = false;
  setStatus(message);
  document.getElementById("token").focus();
}

// Reads the server-sent events of api/events; each `view` event replaces the view.
async function connect() {
  let response;
  try {
    response = await fetch("api/events", { headers: headers() });
  } catch (e) {
    setStatus("Disconnected; retrying…");
    setTimeout(connect, 2000);
    return;
  }
  if (response.status === 401) {
    showLogin(state.token ? "That token may not read this dashboard." : "Sign in to see the dashboard.");
    return;
  }
  if (!response.ok || !response.body) {
    setStatus(`The server answered ${response.status}; retrying…`);
    setTimeout(connect, 2000);
    return;
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (e) {
      break;
    }
    if (chunk.done) break;
    buffer += chunk.value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const message = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = message.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
      if (!data) continue;
      state.view = JSON.parse(data);
      const v = state.view;
      setStatus(`${v.running ? "Live" : "Final"} view ${v.version} at ${time(v.now)}`);
      render();
      loadDetail();
    }
  }
  setStatus("Reconnecting…");
  setTimeout(connect, 1000);
}

document.getElementById("login").addEventListener("submit", (e) => {
  e.preventDefault();
  state.token = document.getElementById("token").value.trim();
  sessionStorage.setItem("wasq-token", state.token);
  document.getElementById("login").hidden = true;
  connect();
});

// A new section (not a new filter) takes the focus to its content, as a page load would.
let shownPath = route().join("/");
window.addEventListener("hashchange", () => {
  state.detail = null;
  render();
  loadDetail();
  const path = route().join("/");
  if (path !== shownPath) document.getElementById("main").focus();
  shownPath = path;
});

connect();
