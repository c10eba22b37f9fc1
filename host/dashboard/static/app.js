// The Sluice dashboard: one page, routed by the URL's hash, fed by the
// host's event stream (GET /api/v1/events, the status of GET
// /api/v1/pipeline after each batch) and its other API routes. Everything
// it shows comes from those routes; it keeps the last minutes of the
// status at one-second resolution to draw its charts.
"use strict";

(() => {
  performance.mark("sluice-script");
  const HISTORY = 300; // seconds of history the charts show
  const TOKEN_KEY = "sluice-token";
  const PHASES = [
    ["plan_seconds", "plan", "#6b8afd"],
    ["explore_seconds", "explore", "#f5a524"],
    ["useful_seconds", "useful", "#2f9e62"],
    ["abort_seconds", "abort", "#d64545"],
    ["finish_seconds", "finish", "#8e6bd8"],
    ["guest_seconds", "guest", "#98a2b3"],
  ];

  const meta = (name) => (document.querySelector(`meta[name="${name}"]`) || {}).content || "";
  const state = {
    token: sessionStorage.getItem(TOKEN_KEY) || "",
    version: meta("sluice-version"),
    started: Date.parse(meta("sluice-started")) || Date.now(),
    samples: [], // {t: seconds, st: status, early}, one per second, oldest first
    last: null, // the latest status
    page: null, // the page shown: {name, update()}
    graphKey: "",
    wantToken: null, // resolves when a token is entered
    swapResults: {}, // the last swap's or rollback's answer per operator
    cluster: null, // GET /api/v1/cluster's first answer; null when the host runs in no cluster
    charts: null, // uPlot: null until loadCharts asks for it, then "loading", "loaded"
  };

  // h makes an element: h("div", {class: "x"}, "text", child...). Text is
  // always set as text, never parsed as HTML.
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }
  const svg = (tag, attrs, ...children) => {
    const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v);
    }
    for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return el;
  };

  const fmt = (n) => {
    if (n === undefined || n === null || Number.isNaN(n)) return "–";
    if (Math.abs(n) >= 1e9) return (n / 1e9).toFixed(2) + "G";
    if (Math.abs(n) >= 1e6) return (n / 1e6).toFixed(2) + "M";
    if (Math.abs(n) >= 1e4) return (n / 1e3).toFixed(1) + "k";
    if (Number.isInteger(n)) return String(n);
    return n.toFixed(2);
  };
  const fmtSeconds = (s) => {
    if (s < 1e-3) return (s * 1e6).toFixed(0) + " µs";
    if (s < 1) return (s * 1e3).toFixed(1) + " ms";
    return s.toFixed(2) + " s";
  };
  const fmtDuration = (ms) => {
    let s = Math.floor(ms / 1000);
    const d = Math.floor(s / 86400); s -= d * 86400;
    const hh = Math.floor(s / 3600); s -= hh * 3600;
    const mm = Math.floor(s / 60); s -= mm * 60;
    return (d ? d + "d " : "") + (d || hh ? hh + "h " : "") + (d || hh || mm ? mm + "m " : "") + s + "s";
  };
  const short = (sha) => (sha || "").slice(0, 12);

  function notice(msg) {
    const n = document.getElementById("notice");
    n.hidden = !msg;
    n.textContent = msg || "";
  }

  // api calls a route with the token when one was given.
  async function api(path, opts = {}) {
    const headers = Object.assign({}, opts.headers || {});
    if (state.token) headers.Authorization = "Bearer " + state.token;
    const resp = await fetch(path, Object.assign({}, opts, { headers }));
    let body = null;
    const text = await resp.text();
    try { body = text ? JSON.parse(text) : null; } catch (e) { body = { error: text }; }
    return { ok: resp.ok, status: resp.status, body };
  }

  // --- the event stream ---------------------------------------------------

  // stream reads GET /api/v1/events for as long as the page is open, with
  // fetch rather than EventSource, which cannot send the token.
  async function stream() {
    for (;;) {
      try {
        const headers = state.token ? { Authorization: "Bearer " + state.token } : {};
        const resp = await fetch("api/v1/events", { headers, cache: "no-store" });
        if (resp.status === 401) {
          setConn("the host needs its token to be read (http.auth: all)");
          notice("This host asks for its API token for every read (http.auth: all): enter it above.");
          await new Promise((resolve) => { state.wantToken = resolve; });
          continue;
        }
        if (!resp.ok || !resp.body) throw new Error("HTTP " + resp.status);
        setConn("live");
        const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let i;
          while ((i = buf.indexOf("\n\n")) >= 0) {
            onEvent(buf.slice(0, i));
            buf = buf.slice(i + 2);
          }
        }
        setConn("the host closed the stream; reconnecting…");
      } catch (e) {
        setConn("disconnected (" + e.message + "); reconnecting…");
      }
      await new Promise((r) => setTimeout(r, 2000));
    }
  }

  function setConn(msg) {
    document.getElementById("conn").textContent =
      msg + (state.version ? " · sluice " + state.version : "");
  }

  function onEvent(text) {
    let name = "message", data = "";
    for (const line of text.split("\n")) {
      if (line.startsWith("event: ")) name = line.slice(7);
      else if (line.startsWith("data: ")) data += line.slice(6);
    }
    if (name !== "status") return;
    show(JSON.parse(data));
  }

  // show takes a status: the event stream's, or the one the page came
  // with (early: read some time before the page ran, so the stream's
  // first event replaces its sample rather than make a rate with it).
  function show(st, early) {
    if (!document.body.dataset.ready) performance.mark("sluice-first-status");
    const t = Math.floor(Date.now() / 1000);
    const last = state.samples[state.samples.length - 1];
    if (last && (last.t === t || last.early)) Object.assign(last, { t, st, early });
    else state.samples.push({ t, st, early });
    while (state.samples.length > HISTORY + 1) state.samples.shift();
    state.last = st;
    notice("");
    const pill = document.getElementById("job-state");
    pill.textContent = st.state;
    pill.className = "pill " + st.state;
    document.getElementById("pipeline-name").textContent = st.pipeline;
    if (state.page && state.page.update) state.page.update(st);
    if (!document.body.dataset.ready && state.page) {
      document.body.dataset.ready = "1";
      document.body.dataset.readyMs = String(Math.round(performance.now()));
      setTimeout(loadCharts, 0);
    }
  }

  // --- series ---------------------------------------------------------------

  // series derives one value per second from consecutive samples:
  // f(previous status, status, seconds between) for each pair.
  function series(f) {
    const xs = [], ys = [];
    const s = state.samples;
    // The current second is not over: its sample would read low.
    const n = s.length && s[s.length - 1].t >= Math.floor(Date.now() / 1000) ? s.length - 1 : s.length;
    for (let i = 1; i < n; i++) {
      const dt = s[i].t - s[i - 1].t;
      if (dt <= 0) continue;
      xs.push(s[i].t);
      const v = f(s[i - 1].st, s[i].st, dt);
      ys.push(v === undefined || Number.isNaN(v) ? null : v);
    }
    return [xs, ys];
  }
  const opOf = (st, name) => (st.operators || []).find((o) => o.name === name);

  // quantile of the batches a histogram difference counts, in seconds
  // (linear within a bucket, as Prometheus's histogram_quantile).
  function quantile(q, a, b) {
    if (!a || !b || !b.counts || !a.counts || a.counts.length !== b.counts.length) return null;
    const d = b.counts.map((c, i) => c - a.counts[i]);
    const total = d.reduce((x, y) => x + y, 0);
    if (total <= 0) return null;
    const rank = q * total;
    let cum = 0;
    for (let i = 0; i < d.length; i++) {
      if (cum + d[i] >= rank && d[i] > 0) {
        const lo = i === 0 ? 0 : b.bounds[i - 1];
        const hi = i < b.bounds.length ? b.bounds[i] : b.bounds[b.bounds.length - 1];
        return lo + (hi - lo) * ((rank - cum) / d[i]);
      }
      cum += d[i];
    }
    return b.bounds[b.bounds.length - 1];
  }

  // loadCharts loads the charts' library, uPlot, and draws the page again
  // once it is there. The page loads it after it has drawn its first
  // status rather than with the page: evaluating it (it sets up its number
  // and date formats) would delay that first drawing, and a chart has no
  // point to draw before the second status anyway.
  function loadCharts() {
    if (state.charts) return;
    state.charts = "loading";
    const script = h("script", { src: meta("sluice-charts") });
    script.addEventListener("load", () => {
      state.charts = "loaded";
      if (state.page && state.page.update && state.last) state.page.update(state.last);
    });
    script.addEventListener("error", () => {
      state.charts = null;
      notice("The charts' library did not load: reload the page to try again.");
    });
    document.head.append(script);
  }

  // chart is a live uPlot chart over some series; it draws nothing until
  // the library is loaded (loadCharts).
  function chart(id, title, unit, defs) {
    const box = h("div", { class: "chart", id, "data-points": "0" });
    const panel = h("div", { class: "panel" }, h("div", { class: "muted" }, title), box);
    let u = null;
    const colors = ["#2f6fde", "#2f9e62", "#d64545", "#f5a524", "#8e6bd8"];
    const update = () => {
      if (state.charts !== "loaded") return;
      const cols = defs.map((d) => series(d.f));
      const xs = cols.length ? cols[0][0] : [];
      const data = [xs, ...cols.map((c) => c[1])];
      box.dataset.points = String(xs.length);
      box.dataset.last = xs.length ? String(xs[xs.length - 1]) : "";
      if (!u) {
        const width = Math.max(300, box.clientWidth || 500);
        u = new uPlot({
          width, height: 180,
          legend: { show: true },
          cursor: { drag: { x: false, y: false } },
          scales: { x: { time: true } },
          axes: [{}, { values: (_, ticks) => ticks.map((v) => fmt(v) + unit), size: 60 }],
          series: [{}, ...defs.map((d, i) => ({ label: d.label, stroke: colors[i % colors.length], width: 1.5, spanGaps: false }))],
        }, data, box);
        if (!performance.getEntriesByName("sluice-first-chart").length) performance.mark("sluice-first-chart");
      } else {
        u.setData(data);
      }
    };
    return { el: panel, update };
  }

  // --- pages ---------------------------------------------------------------

  function card(k, id) {
    return h("div", { class: "card" }, h("div", { class: "k" }, k), h("div", { class: "v", id }, "–"));
  }
  const set = (id, v) => { const el = document.getElementById(id); if (el) el.textContent = v; };

  // health of an operator: bad when quarantined or the job failed, warn
  // during a trial, after a rollback or while records are dead-lettered.
  function health(st, prev, op) {
    if (st.state === "failed" || op.quarantined) return "bad";
    if (st.state !== "running") return "idle";
    const p = prev && opOf(prev, op.name);
    if (op.trial_batches > 0) return "warn";
    if (p && (op.dead_letters > p.dead_letters || op.rollbacks > p.rollbacks)) return "warn";
    return "ok";
  }

  function rateOf(name, kind, prev, st, dt) {
    if (!prev) return null;
    if (kind === "operator") {
      const a = opOf(prev, name), b = opOf(st, name);
      return a && b ? (b.records_out - a.records_out) / dt : null;
    }
    // A source: the records of the operators and sinks reading only it.
    const srcs = Object.keys(st.positions || {}).filter((k) => !k.startsWith("sink/"));
    if (srcs.length === 1) return (st.records_in - prev.records_in) / dt;
    const pa = (prev.positions || {})[name], pb = (st.positions || {})[name];
    return pa !== undefined && pb !== undefined ? (pb - pa) / dt : null;
  }

  // graphOf lists the nodes and edges of the pipeline a status describes.
  function graphOf(st) {
    const ops = new Set((st.operators || []).map((o) => o.name));
    const nodes = [], edges = [];
    const sources = new Set(Object.keys(st.positions || {}).filter((k) => !k.startsWith("sink/")));
    for (const o of st.operators || []) for (const i of o.inputs || []) if (!ops.has(i)) sources.add(i);
    for (const s of st.sinks || []) for (const i of s.inputs || []) if (!ops.has(i)) sources.add(i);
    for (const s of sources) nodes.push({ id: "source:" + s, name: s, kind: "source" });
    for (const o of st.operators || []) {
      nodes.push({ id: "operator:" + o.name, name: o.name, kind: "operator", sub: o.kind });
      for (const i of o.inputs || []) edges.push({ from: (ops.has(i) ? "operator:" : "source:") + i, to: "operator:" + o.name, src: i, srcKind: ops.has(i) ? "operator" : "source" });
    }
    for (const s of st.sinks || []) {
      nodes.push({ id: "sink:" + s.name, name: s.name, kind: "sink" });
      for (const i of s.inputs || []) edges.push({ from: (ops.has(i) ? "operator:" : "source:") + i, to: "sink:" + s.name, src: i, srcKind: ops.has(i) ? "operator" : "source" });
    }
    return { nodes, edges };
  }

  // drawGraph lays the graph out with dagre and draws it as SVG; it
  // returns a function that recolours it and relabels its rates.
  function drawGraph(box, st) {
    const { nodes, edges } = graphOf(st);
    const g = new dagre.graphlib.Graph();
    g.setGraph({ rankdir: "LR", nodesep: 30, ranksep: 80, marginx: 10, marginy: 10 });
    g.setDefaultEdgeLabel(() => ({}));
    for (const n of nodes) g.setNode(n.id, { width: 150, height: 48 });
    for (const e of edges) g.setEdge(e.from, e.to, { width: 70, height: 14, labelpos: "c" });
    dagre.layout(g);
    const gg = g.graph();
    const root = svg("svg", { width: gg.width, height: gg.height, viewBox: `0 0 ${gg.width} ${gg.height}`, role: "img", "aria-label": "pipeline graph" });
    root.append(svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
      svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#8b95a7" }))));
    const labels = [];
    for (const e of edges) {
      const ge = g.edge(e.from, e.to);
      const d = ge.points.map((p, i) => (i ? "L" : "M") + p.x.toFixed(1) + " " + p.y.toFixed(1)).join(" ");
      const label = svg("text", { x: ge.x, y: ge.y + 4, "text-anchor": "middle" }, "");
      labels.push({ e, label });
      root.append(svg("g", { class: "edge" }, svg("path", { d, "marker-end": "url(#arrow)" }), label));
    }
    const shapes = [];
    for (const n of nodes) {
      const gn = g.node(n.id);
      const sub = svg("text", { x: gn.x, y: gn.y + 14, "text-anchor": "middle", class: "sub" }, n.kind === "operator" ? n.sub : n.kind);
      const el = svg("g", { class: "node " + n.kind, "data-node": n.id },
        svg("rect", { x: gn.x - gn.width / 2, y: gn.y - gn.height / 2, width: gn.width, height: gn.height }),
        svg("text", { x: gn.x, y: gn.y - 2, "text-anchor": "middle" }, n.name), sub);
      if (n.kind === "operator") el.addEventListener("click", () => { location.hash = "#/operator/" + encodeURIComponent(n.name); });
      shapes.push({ n, el });
      root.append(el);
    }
    box.replaceChildren(root);
    return (st, prev, dt) => {
      for (const { e, label } of labels) {
        const r = rateOf(e.src, e.srcKind, prev, st, dt);
        label.textContent = r === null ? "" : fmt(r) + "/s";
      }
      for (const { n, el } of shapes) {
        let hl = st.state === "running" ? "ok" : st.state === "failed" ? "bad" : "idle";
        if (n.kind === "operator") hl = health(st, prev, opOf(st, n.name));
        el.setAttribute("class", "node " + n.kind + " " + hl);
      }
    };
  }

  function overview() {
    const graphBox = h("div", { class: "graph", id: "graph" });
    const sources = h("tbody");
    const thr = chart("chart-throughput", "Records per second", "", [
      { label: "in", f: (a, b, dt) => (b.records_in - a.records_in) / dt },
      { label: "out", f: (a, b, dt) => (b.records_out - a.records_out) / dt },
    ]);
    const lat = chart("chart-latency", "Batch latency (p50, p99)", "s", [
      { label: "p50", f: (a, b) => quantile(0.5, a.batch_seconds, b.batch_seconds) },
      { label: "p99", f: (a, b) => quantile(0.99, a.batch_seconds, b.batch_seconds) },
    ]);
    const el = h("div", {},
      h("h1", {}, "Overview"),
      h("div", { class: "panel", id: "cluster-link", hidden: true }),
      h("div", { class: "cards" }, card("records in", "t-in"), card("records out", "t-out"), card("dead letters", "t-dead"),
        card("batches", "t-batches"), card("uptime", "t-uptime"), card("version", "t-version")),
      h("div", { class: "panel" }, h("div", { class: "muted" }, "Pipeline (records per second on each edge; click an operator)"), graphBox),
      h("div", { class: "grid2" }, thr.el, lat.el),
      h("div", { class: "panel" }, h("div", { class: "muted" }, "Sources"),
        h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "source"), h("th", { class: "num" }, "committed position"), h("th", { class: "num" }, "lag"))), sources)));
    let recolour = null;
    return {
      el,
      update(st) {
        const s = state.samples, n = s.length;
        const prev = n > 1 ? s[n - 2].st : null, dt = n > 1 ? s[n - 1].t - s[n - 2].t : 1;
        const key = JSON.stringify([(st.operators || []).map((o) => [o.name, o.inputs]), st.sinks, Object.keys(st.positions || {})]);
        if (key !== state.graphKey || !recolour) {
          state.graphKey = key;
          recolour = drawGraph(graphBox, st);
        }
        recolour(st, prev, dt || 1);
        set("t-in", fmt(st.records_in));
        set("t-out", fmt(st.records_out));
        set("t-dead", fmt(st.dead_letters));
        set("t-batches", fmt(st.batches));
        set("t-uptime", fmtDuration(Date.now() - state.started));
        set("t-version", state.version || "–");
        sources.replaceChildren(...Object.entries(st.positions || {}).filter(([k]) => !k.startsWith("sink/")).map(([k, v]) =>
          h("tr", {}, h("td", {}, k), h("td", { class: "num" }, fmt(v)), h("td", { class: "num muted" }, "not reported by the source"))));
        thr.update();
        lat.update();
      },
    };
  }

  function operatorPage(name) {
    const head = h("div", { class: "cards" }, card("kind", "o-kind"), card("plugin", "o-plugin"), card("version", "o-version"),
      card("workers", "o-workers"), card("records in", "o-in"), card("records out", "o-out"), card("dead letters", "o-dead"),
      card("retries", "o-retries"), card("swaps / rollbacks", "o-swaps"), card("trial batches left", "o-trial"));
    const op = (st) => opOf(st, name) || {};
    const thr = chart("chart-op-throughput", "Records per second", "", [
      { label: "in", f: (a, b, dt) => (op(b).records_in - op(a).records_in) / dt },
      { label: "out", f: (a, b, dt) => (op(b).records_out - op(a).records_out) / dt },
    ]);
    const lat = chart("chart-op-latency", "Batch latency, p50 and p99 (the whole batch: every operator runs in each)", "s", [
      { label: "p50", f: (a, b) => quantile(0.5, a.batch_seconds, b.batch_seconds) },
      { label: "p99", f: (a, b) => quantile(0.99, a.batch_seconds, b.batch_seconds) },
    ]);
    const fail = chart("chart-op-failures", "Dead letters and retries per second", "", [
      { label: "dead letters", f: (a, b, dt) => (op(b).dead_letters - op(a).dead_letters) / dt },
      { label: "retries", f: (a, b, dt) => (op(b).retries - op(a).retries) / dt },
    ]);
    const workers = h("tbody");
    const txnBox = h("div", {});
    const el = h("div", {}, h("h1", {}, "Operator ", h("code", {}, name)), head,
      h("div", { class: "grid2" }, thr.el, lat.el, fail.el),
      h("div", { class: "panel" }, h("div", { class: "muted" }, "Workers"),
        h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "worker"), h("th", { class: "num" }, "records"), h("th", { class: "num" }, "busy"),
          h("th", { class: "num" }, "key groups"))), workers)),
      txnBox);
    let txn = null;
    return {
      el,
      update(st) {
        const o = opOf(st, name);
        if (!o) { notice("The pipeline has no operator " + name + "."); return; }
        set("o-kind", o.kind);
        set("o-plugin", o.plugin || "native");
        set("o-version", o.version || "–");
        set("o-workers", String(o.parallelism));
        set("o-in", fmt(o.records_in));
        set("o-out", fmt(o.records_out));
        set("o-dead", fmt(o.dead_letters));
        set("o-retries", fmt(o.retries));
        set("o-swaps", o.swaps + " / " + o.rollbacks);
        set("o-trial", String(o.trial_batches) + (o.quarantined ? " (quarantined)" : ""));
        workers.replaceChildren(...(o.workers || []).map((w) => h("tr", {}, h("td", {}, String(w.id)), h("td", { class: "num" }, fmt(w.records)),
          h("td", { class: "num" }, fmtSeconds(w.busy_seconds)), h("td", { class: "num" }, w.key_groups ? String(w.key_groups) : "–"))));
        thr.update(); lat.update(); fail.update();
        if (o.txn) {
          if (!txn) { txn = txnSection(name); txnBox.replaceChildren(txn.el); }
          txn.update(st, o);
        }
      },
      leave() { if (txn) txn.leave(); },
    };
  }

  // txnSection shows a transactional operator: outcomes, the time per
  // phase and the adaptive strategy's decisions.
  function txnSection(name) {
    const t = (st) => (opOf(st, name) || {}).txn || {};
    const outcomes = chart("chart-txn-outcomes", "Transactions per second", "", [
      { label: "committed", f: (a, b, dt) => (t(b).committed - t(a).committed) / dt },
      { label: "aborted", f: (a, b, dt) => (t(b).aborted - t(a).aborted) / dt },
      { label: "re-executions", f: (a, b, dt) => (t(b).re_executions - t(a).re_executions) / dt },
    ]);
    const bar = h("div", { class: "bar", id: "txn-phases" });
    const legend = h("div", { class: "legend" });
    const decisions = h("tbody");
    const decNote = h("div", { class: "muted" });
    const el = h("div", {}, h("h2", {}, "Transactions"),
      h("div", { class: "cards" }, card("strategy", "x-strategy"), card("ran the last batch", "x-running"), card("committed", "x-committed"),
        card("aborted", "x-aborted"), card("re-executions", "x-reexec"), card("failed batches", "x-failed"), card("switches", "x-switches")),
      h("div", { class: "grid2" }, outcomes.el,
        h("div", { class: "panel" }, h("div", { class: "muted" }, "Time by phase, summed over the scheduler's workers"), bar, legend)),
      h("div", { class: "panel" }, h("div", { class: "muted" }, "Strategy per batch: what each batch measured and the decision taken after it"), decNote,
        h("table", { id: "txn-decisions" }, h("thead", {}, h("tr", {}, ...["batch", "ran", "events", "ops", "skew", "abort ratio", "op cost", "events/s", "next", "rule"].map((x) => h("th", {}, x)))), decisions)),
      tpgViewer(name));
    let timer = null;
    const row = (r) => h("tr", {}, h("td", {}, String(r.batch)), h("td", {}, r.strategy), h("td", { class: "num" }, fmt(r.events)),
      h("td", { class: "num" }, fmt(r.ops)), h("td", { class: "num" }, fmt(r.skew)), h("td", { class: "num" }, fmt(r.abort_ratio)),
      h("td", { class: "num" }, fmt(r.op_cost_ns) + " ns"), h("td", { class: "num" }, fmt(r.events_per_second)),
      h("td", {}, r.decision ? r.decision.strategy : "–"), h("td", { class: "muted" }, r.decision ? r.decision.rule : ""));
    const poll = async () => {
      const r = await api("api/v1/operators/" + encodeURIComponent(name) + "/decisions?last=20");
      if (r.ok) {
        decNote.textContent = "";
        decisions.replaceChildren(...(r.body || []).slice().reverse().map(row));
      } else {
        decNote.textContent = "Only the last batch (the strategy is not adaptive, so no decisions are kept).";
        const last = state.last && t(state.last).last_batch;
        decisions.replaceChildren(...(last ? [row(last)] : []));
        clearInterval(timer);
        timer = null;
      }
    };
    timer = setInterval(poll, 2000);
    poll();
    return {
      el,
      update(st, o) {
        const x = o.txn;
        set("x-strategy", x.strategy);
        set("x-running", x.running || x.strategy);
        set("x-committed", fmt(x.committed));
        set("x-aborted", fmt(x.aborted));
        set("x-reexec", fmt(x.re_executions));
        set("x-failed", fmt(x.failed_batches));
        set("x-switches", fmt(x.adaptive_switches || 0));
        const total = PHASES.reduce((s, [k]) => s + (x[k] || 0), 0) || 1;
        bar.replaceChildren(...PHASES.map(([k, , c]) => { const s = h("span", { title: k }); s.style.width = ((100 * (x[k] || 0)) / total).toFixed(2) + "%"; s.style.background = c; return s; }));
        legend.replaceChildren(...PHASES.map(([k, l, c]) => { const i = h("i"); i.style.background = c; return h("span", {}, i, l + " " + fmtSeconds(x[k] || 0)); }));
        outcomes.update();
        if (!timer) {
          const last = x.last_batch;
          decisions.replaceChildren(...(last ? [row(last)] : []));
        }
      },
      leave() { clearInterval(timer); },
    };
  }

  // tpgViewer draws a sampled batch's task precedence graph: operations
  // as nodes (by transaction and key, coloured by the worker that ran
  // them, numbered by the order their units ran in), dependencies as
  // edges by kind; the wheel zooms and dragging pans.
  const EDGE_COLOURS = { temporal: "#2f6fde", parametric: "#2f9e62", nondet: "#d64545", logical: "#98a2b3" };
  const WORKER_COLOURS = ["#dbe7ff", "#d9f2e3", "#fde8c8", "#eadff9", "#fbdcdc", "#e4e7ec"];
  const TPG_DRAWN = 300; // operations laid out at most
  function tpgViewer(name) {
    const box = h("div", { class: "tpg", id: "tpg" }, h("div", { class: "muted" }, "Sampling a batch…"));
    const info = h("div", { class: "muted", id: "tpg-info" });
    const legend = h("div", { class: "legend" }, ...Object.entries(EDGE_COLOURS).map(([k, c]) => { const i = h("i"); i.style.background = c; return h("span", {}, i, k); }));
    let sample = null;
    const fetchOne = async () => {
      const r = await api("api/v1/operators/" + encodeURIComponent(name) + "/tpg");
      if (r.status === 200) { sample = r.body; draw(); return true; }
      if (r.status !== 202) { box.replaceChildren(h("div", { class: "muted" }, (r.body && r.body.error) || "no graph")); return true; }
      return false;
    };
    const poll = async () => { if (!(await fetchOne())) setTimeout(() => { if (box.isConnected) poll(); }, 1000); };
    const again = h("button", { id: "tpg-again", onclick: async () => { await api("api/v1/operators/" + encodeURIComponent(name) + "/tpg"); const old = sample; const wait = async () => { const r = await api("api/v1/operators/" + encodeURIComponent(name) + "/tpg"); if (r.status === 200 && JSON.stringify(r.body) !== JSON.stringify(old)) { sample = r.body; draw(); } else if (box.isConnected) setTimeout(wait, 1000); }; wait(); } }, "Sample another batch");
    function draw() {
      const t = sample, n = Math.min(t.ops.length, TPG_DRAWN);
      info.textContent = `${t.strategy}: ${t.txns} transactions, ${t.total_ops} operations, ${t.units} scheduling units` +
        (n < t.total_ops ? `; the first ${n} operations drawn` : "") + ". Each node: transaction.operation, its key, and #the place its unit ran in (worker by colour); aborted transactions outlined red.";
      const g = new dagre.graphlib.Graph({ multigraph: true });
      g.setGraph({ rankdir: "LR", nodesep: 8, ranksep: 40, marginx: 10, marginy: 10 });
      g.setDefaultEdgeLabel(() => ({}));
      for (let i = 0; i < n; i++) g.setNode(String(i), { width: 96, height: 34 });
      const edges = t.edges.filter((e) => e.from < n && e.to < n);
      edges.forEach((e, k) => g.setEdge(String(e.from), String(e.to), {}, String(k)));
      dagre.layout(g);
      const gg = g.graph();
      const root = svg("svg", { width: "100%", height: 480, viewBox: `0 0 ${gg.width} ${gg.height}`, role: "img", "aria-label": "task precedence graph" });
      const layer = svg("g", {});
      root.append(layer);
      edges.forEach((e, k) => {
        const ge = g.edge(String(e.from), String(e.to), String(k));
        const d = ge.points.map((p, i) => (i ? "L" : "M") + p.x.toFixed(1) + " " + p.y.toFixed(1)).join(" ");
        layer.append(svg("path", { d, class: "tpg-edge " + e.kind, stroke: EDGE_COLOURS[e.kind] || "#888", fill: "none", "stroke-width": 1.2, "stroke-dasharray": e.kind === "logical" ? "3 3" : "" }));
      });
      for (let i = 0; i < n; i++) {
        const o = t.ops[i], gn = g.node(String(i));
        const key = o.nondet ? "table " + o.table + " (nondet)" : o.key.length > 12 ? o.key.slice(0, 11) + "…" : o.key;
        const rect = svg("rect", { x: gn.x - 48, y: gn.y - 17, width: 96, height: 34, rx: 4, fill: WORKER_COLOURS[o.worker % WORKER_COLOURS.length], stroke: o.aborted ? "#d64545" : "#8b95a7", "stroke-width": o.aborted ? 2 : 1 });
        layer.append(svg("g", { class: "tpg-op", "data-unit": o.unit, "data-order": o.order },
          svg("title", {}, `transaction ${o.txn}, operation ${o.index}; key ${o.key} (table ${o.table}); unit ${o.unit}, ran ${o.order < 0 ? "never" : "#" + o.order} on worker ${o.worker}${o.aborted ? "; aborted" : ""}`),
          rect, svg("text", { x: gn.x, y: gn.y - 3, "text-anchor": "middle", "font-size": 10 }, `${o.txn}.${o.index} ${key}`),
          svg("text", { x: gn.x, y: gn.y + 11, "text-anchor": "middle", "font-size": 9, fill: "#667085" }, `u${o.unit} #${o.order} w${o.worker}`)));
      }
      // Zoom with the wheel, pan by dragging: the viewBox moves.
      let vb = [0, 0, gg.width, gg.height], drag = null;
      const apply = () => root.setAttribute("viewBox", vb.map((v) => v.toFixed(1)).join(" "));
      root.addEventListener("wheel", (ev) => {
        ev.preventDefault();
        const r = root.getBoundingClientRect(), f = ev.deltaY > 0 ? 1.2 : 1 / 1.2;
        const px = vb[0] + ((ev.clientX - r.left) / r.width) * vb[2], py = vb[1] + ((ev.clientY - r.top) / r.height) * vb[3];
        vb = [px - (px - vb[0]) * f, py - (py - vb[1]) * f, vb[2] * f, vb[3] * f];
        apply();
      }, { passive: false });
      root.addEventListener("pointerdown", (ev) => { drag = { x: ev.clientX, y: ev.clientY, vb: vb.slice() }; });
      root.addEventListener("pointermove", (ev) => {
        if (!drag) return;
        const r = root.getBoundingClientRect();
        vb = [drag.vb[0] - ((ev.clientX - drag.x) / r.width) * vb[2], drag.vb[1] - ((ev.clientY - drag.y) / r.height) * vb[3], vb[2], vb[3]];
        apply();
      });
      root.addEventListener("pointerup", () => { drag = null; });
      root.addEventListener("pointerleave", () => { drag = null; });
      apply();
      box.replaceChildren(root);
    }
    poll();
    return h("div", { class: "panel" }, h("div", { class: "muted" }, "Task precedence graph of a sampled batch (scroll to zoom, drag to pan)"), info, legend, box, h("div", {}, again));
  }

  function pluginsPage() {
    const modules = h("tbody");
    const ops = h("div", {});
    const el = h("div", {}, h("h1", {}, "Plugins"),
      h("p", { class: "muted" }, "Swapping and rolling back change the running pipeline: they need the host's API token (enter it above)."),
      ops,
      h("div", { class: "panel" }, h("div", { class: "muted" }, "Registry"),
        h("table", {}, h("thead", {}, h("tr", {}, ...["version", "sha256", "file", "ABI", "size", "language", "kinds", "stored"].map((x) => h("th", {}, x)))), modules)));
    const results = state.swapResults;
    const load = async () => {
      const r = await api("api/v1/plugins");
      if (!r.ok) {
        notice(r.status === 401 ? "The host needs its API token to list the plugins (http.auth: all)." : "Listing the plugins failed: " + ((r.body && r.body.error) || r.status));
        return;
      }
      const p = r.body;
      modules.replaceChildren(...(p.modules || []).map((m) => h("tr", {}, h("td", {}, m.version || "–"), h("td", { class: "mono", title: m.sha256 }, short(m.sha256)),
        h("td", {}, m.name), h("td", {}, String(m.abi_version)), h("td", { class: "num" }, fmt(m.size)), h("td", {}, m.language || "–"),
        h("td", {}, (m.kinds || []).join(", ")), h("td", {}, new Date(m.deployed).toLocaleString()))));
      ops.replaceChildren(...(p.operators || []).map((o) => operatorPlugins(o, results, load)));
    };
    load();
    return {
      el,
      update(st) {
        for (const o of st.operators || []) set("trial-" + o.name, trialText(o));
      },
    };
  }

  // trialText says where an operator's plugin stands in its trial, from
  // the operator's status.
  function trialText(o) {
    return o.trial_batches > 0 ? "on trial: " + o.trial_batches + " batches left" :
      o.quarantined ? "quarantined: waiting for a swap" : o.last_rollback ? "last automatic rollback: " + o.last_rollback : "no trial in progress";
  }

  function operatorPlugins(o, results, reload) {
    const file = h("input", { type: "file", accept: ".wasm", id: "swap-file-" + o.operator });
    const result = h("div", { class: "result", id: "swap-result-" + o.operator });
    const show = (r, what) => {
      if (r.ok) {
        result.className = "result ok";
        result.textContent = what + ": " + (r.body.from.version || short(r.body.from.sha256)) + " → " + (r.body.to.version || short(r.body.to.sha256));
      } else {
        result.className = "result err";
        result.textContent = what + " refused (" + r.status + "): " + ((r.body && r.body.error) || "");
      }
      results[o.operator] = [result.className, result.textContent];
    };
    if (results[o.operator]) [result.className, result.textContent] = results[o.operator];
    const swap = async () => {
      const f = file.files[0];
      if (!f) { result.className = "result err"; result.textContent = "choose a .wasm file first"; return; }
      result.className = "result"; result.textContent = "swapping…";
      const r = await api("api/v1/operators/" + encodeURIComponent(o.operator) + "/swap?file=" + encodeURIComponent(f.name),
        { method: "POST", body: f, headers: { "Content-Type": "application/wasm" } });
      show(r, "swapped");
      if (r.ok) reload();
    };
    const rollback = async () => {
      result.className = "result"; result.textContent = "rolling back…";
      const r = await api("api/v1/operators/" + encodeURIComponent(o.operator) + "/rollback", { method: "POST" });
      show(r, "rolled back");
      if (r.ok) reload();
    };
    return h("div", { class: "panel" },
      h("h2", {}, "Operator ", h("code", {}, o.operator), " runs ", o.current.version || "sha256:" + short(o.current.sha256)),
      // Filled at once from the last status (not at the next one), so
      // that the buttons below do not move under a pointer.
      h("div", { class: "muted", id: "trial-" + o.operator },
        trialText(((state.last && state.last.operators) || []).find((s) => s.name === o.operator) || {})),
      h("div", {}, file, " ", h("button", { class: "primary", id: "swap-" + o.operator, onclick: swap }, "Swap"), " ",
        h("button", { id: "rollback-" + o.operator, onclick: rollback, disabled: (o.previous || []).length === 0 }, "Roll back")),
      result,
      h("table", {}, h("thead", {}, h("tr", {}, ...["when", "reason", "module", "detail"].map((x) => h("th", {}, x)))),
        h("tbody", {}, ...(o.deployments || []).slice().reverse().map((d) => h("tr", {}, h("td", {}, new Date(d.at).toLocaleString()), h("td", {}, d.reason),
          h("td", { class: "mono" }, short(d.sha256)), h("td", { class: "muted" }, d.detail || ""))))));
  }

  // windowsPage shows event time: each source's watermark and its lag
  // behind the host's clock, and each windowed operator's or join's open
  // window slices, firings and late records.
  function windowsPage() {
    const sources = h("tbody", { id: "w-sources" });
    const ops = h("tbody", { id: "w-operators" });
    const note = h("div", { class: "muted" });
    const windowed = (st) => (st.operators || []).filter((o) => o.window);
    const sum = (st, k) => windowed(st).reduce((x, o) => x + (o.window[k] || 0), 0);
    const lag = chart("chart-watermark-lag", "Watermark lag behind the host's clock, per source", "s", []);
    let lagKey = "", lagChart = lag;
    const lagBox = h("div", {}, lag.el);
    const rates = chart("chart-window-rates", "Windows fired and late records per second (all operators)", "", [
      { label: "fired", f: (a, b, dt) => (sum(b, "firings") - sum(a, "firings")) / dt },
      { label: "late", f: (a, b, dt) => (sum(b, "late_records") - sum(a, "late_records")) / dt },
    ]);
    const when = (t) => (t ? new Date(t).toISOString().replace("T", " ").replace(/\.000Z$|Z$/, " UTC") : "none yet");
    const el = h("div", {}, h("h1", {}, "Windows"), note,
      h("div", { class: "panel" }, h("div", { class: "muted" }, "Sources: event time"),
        h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "source"), h("th", {}, "watermark"), h("th", { class: "num" }, "lag"), h("th", {}, "idle"))), sources)),
      h("div", { class: "panel" }, h("div", { class: "muted" }, "Windowed operators and joins (click one to open it)"),
        h("table", {}, h("thead", {}, h("tr", {}, ...["operator", "kind", "watermark", "open slices", "fired", "fired/s", "late records", "late/s"].map((x, i) =>
          h("th", { class: i > 2 ? "num" : undefined }, x)))), ops)),
      h("div", { class: "grid2" }, lagBox, rates.el));
    return {
      el,
      update(st) {
        const srcs = st.sources || [];
        const w = windowed(st);
        note.textContent = srcs.length || w.length ? "" : "This pipeline has no windowed operator or join: it keeps no event time.";
        const key = srcs.map((x) => x.name).join("\n");
        if (key !== lagKey) {
          lagKey = key;
          lagChart = chart("chart-watermark-lag", "Watermark lag behind the host's clock, per source", "s", srcs.map((x) => ({
            label: x.name, f: (a, b) => { const y = (b.sources || []).find((z) => z.name === x.name); return y && y.watermark ? y.watermark_lag_seconds : null; },
          })));
          lagBox.replaceChildren(lagChart.el);
        }
        sources.replaceChildren(...srcs.map((x) => h("tr", {}, h("td", {}, x.name), h("td", { class: "mono" }, when(x.watermark)),
          h("td", { class: "num" }, x.watermark ? fmtSeconds(x.watermark_lag_seconds) : "–"), h("td", {}, x.idle ? "idle" : ""))));
        const s = state.samples, n = s.length;
        const prev = n > 1 ? s[n - 2].st : null, dt = n > 1 ? s[n - 1].t - s[n - 2].t || 1 : 1;
        const per = (o, k) => { const p = prev && opOf(prev, o.name); return p && p.window ? fmt((o.window[k] - p.window[k]) / dt) : "–"; };
        ops.replaceChildren(...w.map((o) => h("tr", {}, h("td", {}, h("a", { href: "#/operator/" + encodeURIComponent(o.name) }, o.name)), h("td", {}, o.kind),
          h("td", { class: "mono" }, when(o.window.watermark)), h("td", { class: "num" }, fmt(o.window.open_slices)), h("td", { class: "num" }, fmt(o.window.firings)),
          h("td", { class: "num" }, per(o, "firings")), h("td", { class: "num" }, fmt(o.window.late_records)), h("td", { class: "num" }, per(o, "late_records")))));
        if (srcs.length) lagChart.update();
        rates.update();
      },
    };
  }

  // --- cluster ---------------------------------------------------------------

  // HOST_COLOURS colour the hosts of a cluster, in id order.
  const HOST_COLOURS = ["#2f6fde", "#2f9e62", "#d98e04", "#8e6bd8", "#d64545", "#0f9fb0", "#b5568f", "#6b7d2f"];

  // clusterPage shows the cluster the host runs in, from GET
  // /api/v1/cluster read every second: its hosts, the key groups each
  // owns, the migration in progress and the checkpoints; and a button that
  // starts a rebalance, which needs the token.
  function clusterPage() {
    const info = h("div", { class: "muted", id: "cl-info" }, "reading the cluster…");
    const hosts = h("tbody", { id: "cl-hosts" });
    const grid = h("div", { class: "kg-grid", id: "cl-groups" });
    const legend = h("div", { class: "legend", id: "cl-legend" });
    const mig = h("div", { id: "cl-migration" });
    const ckpts = h("tbody", { id: "cl-checkpoints" });
    const result = h("div", { class: "result", id: "rebalance-result" });
    const batch = h("input", { type: "number", min: "0", value: "8", id: "rebalance-batch", style: "width: 5em" });
    const rebalance = async () => {
      result.className = "result"; result.textContent = "starting a rebalance…";
      const r = await api("api/v1/cluster/rebalance", { method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ knobs: { batch: Math.max(0, parseInt(batch.value, 10) || 0) } }) });
      if (!r.ok) {
        result.className = "result err";
        result.textContent = "rebalance refused (" + r.status + "): " + ((r.body && r.body.error) || "");
        return;
      }
      result.className = "result ok";
      const m = r.body.migration;
      result.textContent = m ? "started migration " + m.id + ": " + m.steps.reduce((n, s) => n + s.length, 0) + " key groups in " + m.steps.length + " steps"
        : "the key groups are balanced already: nothing to migrate";
      load();
    };
    const body = h("div", {},
      h("div", { class: "cards" }, card("hosts live", "cl-live"), card("key groups", "cl-count"), card("unassigned", "cl-unassigned"), card("assignment revision", "cl-revision")),
      h("div", { class: "panel" }, h("div", { class: "muted" }, "Hosts"),
        h("table", {}, h("thead", {}, h("tr", {}, ...["host", "live", "lease age", "address", "groups", "key groups"].map((x, i) => h("th", { class: i === 4 ? "num" : undefined }, x)))), hosts)),
      h("div", { class: "panel" }, h("div", { class: "muted" }, "Key groups by owner (outlined: moving in the current step)"), legend, grid),
      h("div", { class: "panel" }, h("div", { class: "muted" }, "Migration"), mig,
        h("p", { class: "muted" }, "A rebalance leaves every live host within one key group of the others, moving the fewest; it needs the host's API token (enter it above)."),
        h("div", {}, "groups per step ", batch, " ", h("button", { class: "primary", id: "rebalance", onclick: rebalance }, "Rebalance")), result),
      h("div", { class: "panel" }, h("div", { class: "muted" }, "Checkpoints by the host that wrote them"),
        h("table", {}, h("thead", {}, h("tr", {}, ...["host", "key groups", "bytes", "newest"].map((x, i) => h("th", { class: i === 1 || i === 2 ? "num" : undefined }, x)))), ckpts)));
    body.hidden = true;
    const el = h("div", {}, h("h1", {}, "Cluster"), info, body);
    const show = (c) => {
      const colour = {};
      c.hosts.forEach((x, i) => { colour[x.id] = HOST_COLOURS[i % HOST_COLOURS.length]; });
      const owner = new Array(c.key_groups).fill("");
      for (const x of c.hosts) for (const g of x.key_groups) owner[g] = x.id;
      const moving = {};
      for (const mv of (c.migration && c.migration.moves) || []) moving[mv.group] = mv;
      info.textContent = "Pipeline " + c.pipeline + " on " + c.hosts.length + " hosts; this page is served by host " + (c.host || "–") +
        ". A host that has not renewed its lease for " + fmtSeconds(c.lease_seconds) + " is gone.";
      set("cl-live", String(c.hosts.filter((x) => x.live).length) + " of " + c.hosts.length);
      set("cl-count", fmt(c.key_groups));
      set("cl-unassigned", c.unassigned.length ? c.unassigned_ranges : "none");
      set("cl-revision", String(c.revision));
      hosts.replaceChildren(...c.hosts.map((x) => h("tr", { "data-host": x.id },
        h("td", {}, h("i", { class: "swatch", style: "background:" + colour[x.id] }), x.id, x.id === c.host ? " (this host)" : ""),
        h("td", {}, x.live ? "live" : "gone"), h("td", { class: "num" }, x.live ? fmtSeconds(x.lease_age_seconds) : "–"),
        h("td", { class: "mono" }, x.addr || "–"), h("td", { class: "num" }, String(x.groups)), h("td", { class: "mono" }, x.ranges || "none"))));
      legend.replaceChildren(...c.hosts.map((x) => h("span", {}, h("i", { style: "background:" + colour[x.id] }), x.id)),
        h("span", {}, h("i", { style: "background:#e4e7ec" }), "unassigned"));
      grid.replaceChildren(...owner.map((o, g) => h("span", {
        class: "kg" + (moving[g] ? " moving" : ""), "data-group": String(g), "data-owner": o,
        style: "background:" + (o ? colour[o] : "#e4e7ec"),
        title: "key group " + g + ": " + (o || "unassigned") + (moving[g] ? " (moving to " + moving[g].to + ", " + moving[g].state + ")" : ""),
      }, String(g))));
      const m = c.migration;
      if (!m) mig.replaceChildren(h("div", { id: "cl-migration-state" }, "None in progress."));
      else mig.replaceChildren(
        h("div", { id: "cl-migration-state" }, "Migration ", h("code", {}, m.id), ": step " + m.step + " of " + m.steps + ", " + m.state + "; " + m.groups_done + " of " + m.groups_total + " key groups moved"),
        h("div", { class: "bar" }, h("span", { style: "width:" + (m.groups_total ? 100 * m.groups_done / m.groups_total : 0) + "%; background: var(--ok)" })),
        h("table", {}, h("thead", {}, h("tr", {}, ...["key group", "from", "to", "state"].map((x) => h("th", {}, x)))),
          h("tbody", { id: "cl-moves" }, ...m.moves.map((mv) => h("tr", {}, h("td", {}, String(mv.group)), h("td", {}, mv.from || "none"), h("td", {}, mv.to),
            h("td", {}, mv.state + (mv.replicated ? " (replicated)" : "")))))));
      ckpts.replaceChildren(...(c.checkpoints.length ? c.checkpoints.map((x) => h("tr", {}, h("td", {}, x.host || "–"), h("td", { class: "num" }, fmt(x.count)),
        h("td", { class: "num" }, fmt(x.bytes)), h("td", {}, new Date(x.newest).toLocaleString()))) : [h("tr", {}, h("td", { colspan: "4", class: "muted" }, "none yet"))]));
    };
    let timer = null, stopped = false;
    const load = async () => {
      let r;
      try { r = await api("api/v1/cluster"); } catch (e) { info.textContent = "reading the cluster failed: " + e.message; return; }
      if (stopped) return;
      if (r.status === 404) {
        body.hidden = true;
        info.className = "unavailable panel";
        info.textContent = (r.body && r.body.error) || "This host does not run in cluster mode.";
        return;
      }
      if (!r.ok) {
        info.textContent = r.status === 401 ? "The host needs its API token to show the cluster (http.auth: all)." : "Reading the cluster failed: " + ((r.body && r.body.error) || r.status);
        return;
      }
      info.className = "muted";
      body.hidden = false;
      show(r.body);
      el.dataset.revision = String(r.body.revision);
    };
    load();
    timer = setInterval(load, 1000);
    return { el, leave() { stopped = true; clearInterval(timer); } };
  }

  // detectCluster shows the Cluster page's link, and the overview's, when
  // the host runs in cluster mode.
  async function detectCluster() {
    try {
      const r = await api("api/v1/cluster");
      state.cluster = r.ok ? r.body : null;
    } catch (e) {
      state.cluster = null;
    }
    document.querySelector('nav a[data-page="cluster"]').hidden = !state.cluster;
    clusterLink();
  }

  // clusterLink fills the overview's line about the cluster.
  function clusterLink() {
    const box = document.getElementById("cluster-link");
    if (!box) return;
    const c = state.cluster;
    box.hidden = !c;
    if (c) box.replaceChildren("This host (", c.host, ") runs the pipeline with " + (c.hosts.length - 1) + " other hosts: ", h("a", { href: "#/cluster" }, "see the cluster"), ".");
  }

  // --- doctor ----------------------------------------------------------------

  // STATE_COLOURS colour a worker's health as the latency guarantor judges
  // it, and OUTCOME_CLASS a decision's outcome.
  const STATE_COLOURS = { good: "var(--ok)", moderate: "var(--warn)", severe: "var(--bad)" };
  const OUTCOME_CLASS = { applied: "applied", kept: "kept", "rolled back": "rolled-back", failed: "failed" };

  // evidenceText writes measurements: "delay of count/1 180.0 ms, ...".
  const evidenceText = (ev) => (ev || []).map((e) => e.name + " " + (e.unit === "s" ? fmtSeconds(e.value) : fmt(e.value) + (e.unit ? " " + e.unit : ""))).join(", ");

  // actionText writes an action: "set-workers count 2 → 3", "move-groups
  // count: group 7 worker 1 → 0".
  function actionText(a) {
    let s = a.kind + (a.operator ? " " + a.operator : "");
    if (a.kind === "set-workers") return s + " " + a.from + " → " + a.to;
    const moves = (a.moves || []).map((m) => "group " + m.group + (m.from_host || m.to_host
      ? " " + (m.from_host || "none") + " → " + (m.to_host || "none") : " worker " + (m.from_worker || 0) + " → " + (m.to_worker || 0)));
    return moves.length ? s + ": " + moves.join(", ") : s;
  }

  // doctorPage shows the control plane, from GET /api/v1/control read
  // every two seconds: the job doctor's findings, each worker's health
  // coloured by its state, and the decisions, newest first, with their
  // evidence and outcome.
  function doctorPage() {
    const info = h("div", { class: "muted", id: "dr-info" }, "reading the control plane…");
    const findings = h("div", { id: "dr-findings" });
    const workers = h("tbody", { id: "dr-workers" });
    const decisions = h("ol", { class: "timeline", id: "dr-decisions" });
    const body = h("div", {},
      h("div", { class: "cards" }, card("rounds", "dr-rounds"), card("findings", "dr-nfindings"), card("severe workers", "dr-severe"), card("decisions", "dr-ndecisions")),
      h("div", { class: "panel" }, h("div", { class: "muted" }, "Findings: what no automatic action fixes"), findings),
      h("div", { class: "panel" }, h("div", { class: "muted" }, "Workers at the last round"),
        h("table", {}, h("thead", {}, h("tr", {}, ...["operator", "worker", "host", "key groups", "arrival/s", "service/s", "utilization", "delay", "predicted", "state"]
          .map((x, i) => h("th", { class: i === 3 || (i >= 4 && i <= 8) ? "num" : undefined }, x)))), workers)),
      h("div", { class: "panel" }, h("div", { class: "muted" }, "Decisions, newest first"), decisions));
    body.hidden = true;
    const el = h("div", {}, h("h1", {}, "Doctor"), info, body);
    const show = (c) => {
      info.textContent = "Policies " + (c.policies.length ? c.policies.join(", ") : "none") + " (highest priority first); " + c.rounds + " rounds" +
        (c.last_round ? ", the last at " + new Date(c.last_round).toLocaleTimeString() : "") +
        (c.locked_until && Date.parse(c.locked_until) > Date.now() ? "; no decision is applied before " + new Date(c.locked_until).toLocaleTimeString() : "") + ".";
      const ws = c.workers || [];
      set("dr-rounds", fmt(c.rounds));
      set("dr-nfindings", String(c.findings.length));
      set("dr-severe", String(ws.filter((w) => w.state === "severe").length) + " of " + ws.length);
      set("dr-ndecisions", String(c.decisions.length));
      findings.replaceChildren(...(c.findings.length ? c.findings.map((f) => h("div", { class: "finding", "data-cause": f.cause },
        h("div", {}, h("span", { class: "pill cause" }, f.cause), " ", h("b", {}, f.subject), ": ", f.summary),
        f.evidence && f.evidence.length ? h("div", { class: "muted" }, "evidence: " + evidenceText(f.evidence)) : null,
        h("div", {}, "recommendation: " + f.recommendation),
        f.since ? h("div", { class: "muted" }, "since " + new Date(f.since).toLocaleString()) : null))
        : [h("div", { class: "muted" }, "None: the job doctor finds nothing wrong.")]));
      workers.replaceChildren(...(ws.length ? ws.map((w) => h("tr", { "data-worker": w.operator + "/" + w.worker, "data-state": w.state },
        h("td", {}, w.operator), h("td", {}, String(w.worker)), h("td", {}, w.host || "–"), h("td", { class: "num" }, String(w.key_groups)),
        h("td", { class: "num" }, fmt(w.arrival_rate)), h("td", { class: "num" }, fmt(w.service_rate)), h("td", { class: "num" }, w.utilization.toFixed(2)),
        h("td", { class: "num" }, fmtSeconds(w.delay_seconds)), h("td", { class: "num" }, w.saturated ? "saturated" : fmtSeconds(w.predicted_seconds)),
        h("td", {}, h("span", { class: "pill state", style: "background:" + (STATE_COLOURS[w.state] || "var(--idle)") }, w.state))))
        : [h("tr", {}, h("td", { colspan: "10", class: "muted" }, "no round has measured a worker yet"))]));
      decisions.replaceChildren(...(c.decisions.length ? c.decisions.map((d) => h("li", { "data-id": String(d.id), class: "outcome-" + (OUTCOME_CLASS[d.outcome] || "other") },
        h("div", {}, h("span", { class: "mono" }, new Date(d.time).toLocaleTimeString()), " ", h("b", {}, d.policy), " ", h("code", {}, actionText(d.action)), " ",
          h("span", { class: "pill outcome" }, d.outcome), d.error ? h("span", { class: "err" }, " " + d.error) : null),
        h("div", {}, d.reason),
        h("div", { class: "muted" }, "trigger: " + d.trigger),
        d.evidence && d.evidence.length ? h("div", { class: "evidence" }, "evidence: " + evidenceText(d.evidence)) : null,
        d.predicted && d.predicted.length ? h("div", { class: "predicted" }, "predicted: " + evidenceText(d.predicted)) : null,
        d.observed && d.observed.length ? h("div", { class: "observed" }, "observed: " + evidenceText(d.observed)) : null,
        d.others && d.others.length ? h("div", { class: "muted" }, "not applied: " + d.others.join("; ")) : null))
        : [h("li", { class: "muted" }, "none yet")]));
    };
    let timer = null, stopped = false;
    const load = async () => {
      let r;
      try { r = await api("api/v1/control"); } catch (e) { info.textContent = "reading the control plane failed: " + e.message; return; }
      if (stopped) return;
      if (!r.ok) {
        info.textContent = r.status === 401 ? "The host needs its API token to show the control plane (http.auth: all)." : "Reading the control plane failed: " + ((r.body && r.body.error) || r.status);
        return;
      }
      if (!r.body.enabled) {
        body.hidden = true;
        info.className = "unavailable panel";
        info.textContent = "Control is off: add a control: section to the pipeline file (docs/control.md).";
        return;
      }
      info.className = "muted";
      body.hidden = false;
      show(r.body);
      el.dataset.rounds = String(r.body.rounds);
    };
    load();
    timer = setInterval(load, 2000);
    return { el, leave() { stopped = true; clearInterval(timer); } };
  }

  function unavailable(title, what) {
    return { el: h("div", {}, h("h1", {}, title), h("div", { class: "unavailable panel" }, "Not available in this version: " + what)) };
  }

  // --- routing ---------------------------------------------------------------

  function route() {
    if (state.page && state.page.leave) state.page.leave();
    notice("");
    const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
    let page, name = parts[0] || "overview";
    switch (name) {
      case "overview": page = overview(); break;
      case "operator": page = operatorPage(parts[1] || ""); break;
      case "plugins": page = pluginsPage(); break;
      case "windows": page = windowsPage(); break;
      case "cluster": page = clusterPage(); break;
      case "doctor": page = doctorPage(); break;
      default: page = unavailable("Not found", "no page " + name + ".");
    }
    page.name = name;
    state.page = page;
    state.graphKey = "";
    document.body.dataset.page = name;
    for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.page === name);
    document.getElementById("page").replaceChildren(page.el);
    clusterLink();
    if (state.last && page.update) page.update(state.last);
  }

  document.getElementById("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const input = document.getElementById("token");
    state.token = input.value.trim();
    input.value = "";
    input.placeholder = state.token ? "token set" : "API token";
    if (state.token) sessionStorage.setItem(TOKEN_KEY, state.token);
    else sessionStorage.removeItem(TOKEN_KEY);
    if (state.wantToken) { state.wantToken(); state.wantToken = null; }
    if (state.page && state.page.name === "plugins") route();
    if (!state.cluster) detectCluster();
  });
  if (state.token) document.getElementById("token").placeholder = "token set";
  window.addEventListener("hashchange", route);
  setInterval(() => { if (state.page && state.page.name === "overview") set("t-uptime", fmtDuration(Date.now() - state.started)); }, 1000);
  setConn("connecting…");
  route();
  // The page comes with the status when the host lets anyone read it
  // (not with http.auth: all): drawn at once, without waiting for the
  // event stream's first event.
  const first = document.getElementById("first-status");
  if (first && first.textContent.trim() !== "null") show(JSON.parse(first.textContent), true);
  detectCluster();
  stream();
})();
