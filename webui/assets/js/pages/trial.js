// One trial: training and validation charts for any metric (log scale, smoothing, drag to zoom
// into full resolution), a chart for each other metric group it reports (Core API's
// report_metrics, any name), profiler charts, hyperparameters, checkpoints, and its logs tailed
// live with search and filters.

import { ApiError, get, stream } from "../api.js";
import { LineChart } from "../charts.js";
import { h, link, notFound, num, stateBadge, table } from "../dom.js";
import { flatHparams, loadCheckpoints, metricNames } from "./shared.js";

const MAX_POINTS = 1000;
// Groups with places of their own on the page.
const OWN_PLACE = new Set(["training", "validation", "system", "timings"]);

// A chart of one metric of a group, with its picker and controls; live points come via add().
// `key` names its elements (a group's own name may hold any character).
class MetricPanel {
  constructor(trialId, group, names, title, key = group) {
    this.trialId = trialId;
    this.group = group;
    this.box = h("div", { class: "chart", id: `chart-${key}`, "data-group": group });
    this.chart = new LineChart(this.box, { title, onZoom: (lo, hi) => this.load(lo, hi) });
    this.picker = h("select", { id: `metric-${key}`, "data-group": group, onchange: () => { this.name = this.picker.value; this.load(); } });
    this.setNames(names);
    this.el = h("div", { class: "panel" },
      h("div", { class: "toolbar" }, h("label", {}, "Metric", this.picker),
        h("label", {}, h("input", { type: "checkbox", class: "log-scale", onchange: (e) => this.chart.setLog(e.target.checked) }), "log scale"),
        h("label", {}, "smoothing", h("input", { type: "range", min: 0, max: 0.99, step: 0.01, value: 0,
          oninput: (e) => this.chart.setSmoothing(Number(e.target.value)) })),
        h("button", { onclick: () => { this.chart.zoomed = false; this.load(); } }, "Whole range")),
      this.box);
  }
  setNames(names) {
    const list = [...names].sort();
    if (this.picker.dataset.names === list.join(",")) return;
    this.picker.dataset.names = list.join(",");
    if (!this.name || !list.includes(this.name)) this.name = list[0];
    this.picker.replaceChildren(...list.map((n) => h("option", { value: n, selected: n === this.name }, n)));
  }
  async load(start, end) {
    if (!this.name) return;
    const range = start === undefined ? "" : `&start_batches=${Math.max(0, start)}&end_batches=${end}`;
    const s = await get(`/api/v1/trials/${this.trialId}/metrics/series?group=${encodeURIComponent(this.group)}&name=${encodeURIComponent(this.name)}&max_points=${MAX_POINTS}${range}`);
    this.chart.series.clear();
    this.chart.set(this.name, s.batches || [], s.values || []);
    if (start === undefined) this.chart.rebuild();
  }
  add(report) {
    if (report.group === this.group && report.metrics && this.name in report.metrics && !this.chart.zoomed)
      this.chart.append(this.name, Number(report.total_batches), report.metrics[this.name]);
  }
}

export async function render(page, [id]) {
  let trial;
  try {
    trial = (await get(`/api/v1/trials/${encodeURIComponent(id)}`)).trial;
  } catch (e) {
    if (e instanceof ApiError && (e.status === 404 || e.status === 400)) { page.append(notFound(`Trial ${id}`)); return; }
    throw e;
  }
  const header = h("div", {});
  const names = metricNames([trial]);
  const training = new MetricPanel(id, "training", names.training, "Training");
  const validation = new MetricPanel(id, "validation", names.validation, "Validation");
  const groups = h("div", { class: "grid2", id: "metric-groups" });
  const groupPanels = new Map();  // group name -> MetricPanel
  const profiler = h("div", { class: "grid2", id: "profiler" });
  const hparams = h("div", {});
  const checkpoints = h("div", { id: "checkpoints" });
  const search = h("input", { id: "log-search", placeholder: "search", size: 24 });
  const streamFilter = h("select", { id: "log-stream" }, ["", "stdout", "stderr", "master", "alert"].map((s) => h("option", { value: s }, s || "every stream")));
  const agentFilter = h("select", { id: "log-agent" }, h("option", { value: "" }, "every agent (rank)"));
  const logs = h("pre", { id: "logs" });
  page.append(header,
    h("div", { class: "grid2" }, training.el, validation.el),
    groups,
    h("h2", {}, "Profiler"), profiler,
    h("h2", {}, "Hyperparameters"), hparams,
    h("h2", {}, "Checkpoints"), checkpoints,
    h("h2", {}, "Logs"), h("div", { class: "toolbar" }, search, streamFilter, agentFilter), logs);

  function drawHeader() {
    header.replaceChildren(
      h("h1", {}, `Trial ${trial.id} `, stateBadge(trial.state)),
      h("div", { class: "muted" }, "Experiment ", link(`/experiments/${trial.experiment_id}`, trial.experiment_id),
        ` · ${trial.total_batches || 0} of ${trial.target_batches || "?"} batches · ${trial.restarts || 0} restarts`,
        trial.exit_reason ? ` · ${trial.exit_reason}` : ""));
    hparams.replaceChildren(table([{ title: "Name", cell: ([k]) => k }, { title: "Value", cell: ([, v]) => String(v) }],
                                  Object.entries(flatHparams(trial.hparams))));
  }

  // Every other group the trial reported gets a panel, named by the group, once it appears.
  async function drawGroups() {
    const latest = (await get(`/api/v1/trials/${id}/metrics/groups`)).metrics || [];
    for (const report of latest) {
      if (OWN_PLACE.has(report.group)) continue;
      const names = Object.keys(report.metrics || {}).filter((k) => k !== "batches" && k !== "epochs");
      let panel = groupPanels.get(report.group);
      if (!panel) {
        panel = new MetricPanel(id, report.group, names, report.group, `group-${groupPanels.size}`);
        groupPanels.set(report.group, panel);
        groups.append(panel.el);
        panel.load();
      } else {
        panel.setNames(names);
      }
    }
  }

  async function drawProfiler() {
    profiler.replaceChildren();
    for (const group of ["system", "timings"]) {
      const first = (await get(`/api/v1/trials/${id}/metrics?group=${group}&limit=1`)).metrics || [];
      if (!first.length) continue;
      const box = h("div", { class: "panel chart", id: `profiler-${group}` });
      profiler.append(box);
      const chart = new LineChart(box, { title: group === "system" ? "System metrics" : "Timings (seconds)", height: 240 });
      for (const name of Object.keys(first[0].metrics).filter((k) => k !== "batches" && k !== "epochs")) {
        const s = await get(`/api/v1/trials/${id}/metrics/series?group=${group}&name=${encodeURIComponent(name)}&max_points=500`);
        chart.set(name, s.batches || [], s.values || []);
      }
      chart.rebuild();
    }
    if (!profiler.childElementCount) profiler.append(h("span", { class: "muted" }, "No profiling data: set [profiling] enabled = true."));
  }

  // Logs: every line is kept; the filters choose which are shown.
  const lines = [];
  let lastLogId = 0;
  const agents = new Set();
  function shown(l) {
    const q = search.value.toLowerCase();
    return (!streamFilter.value || l.stream === streamFilter.value) && (!agentFilter.value || l.agent_id === agentFilter.value) &&
           (!q || l.text.toLowerCase().includes(q));
  }
  function lineEl(l) { return h("div", { class: `log-${l.stream}`, "data-id": l.id }, l.text); }
  function redrawLogs() { logs.replaceChildren(...lines.filter(shown).map(lineEl)); logs.scrollTop = logs.scrollHeight; }
  for (const el of [search, streamFilter, agentFilter]) el.addEventListener("input", redrawLogs);
  let fetchingLogs = false;
  async function moreLogs() {
    if (fetchingLogs) return;
    fetchingLogs = true;
    try {
      for (;;) {
        const page = (await get(`/api/v1/trials/${id}/logs?after_id=${lastLogId}&limit=1000`)).logs || [];
        const atBottom = logs.scrollTop + logs.clientHeight >= logs.scrollHeight - 4;
        for (const l of page) {
          lines.push(l);
          lastLogId = Math.max(lastLogId, Number(l.id));
          if (l.agent_id && !agents.has(l.agent_id)) { agents.add(l.agent_id); agentFilter.append(h("option", { value: l.agent_id }, l.agent_id)); }
          if (shown(l)) logs.append(lineEl(l));
        }
        if (atBottom) logs.scrollTop = logs.scrollHeight;
        if (page.length < 1000) break;
      }
    } finally {
      fetchingLogs = false;
    }
  }

  async function refresh() {
    trial = (await get(`/api/v1/trials/${id}`)).trial;
    drawHeader();
    const n = metricNames([trial]);
    training.setNames(n.training);
    validation.setNames(n.validation);
    loadCheckpoints(`/api/v1/trials/${id}/checkpoints`, checkpoints);
    drawGroups();
  }

  drawHeader();
  await Promise.all([training.load(), validation.load(), moreLogs(), drawGroups()]);
  loadCheckpoints(`/api/v1/trials/${id}/checkpoints`, checkpoints);
  drawProfiler();

  let timer = null;
  const stop = stream({ trial_id: id }, (event) => {
    if (event.type === "metrics") {
      for (const r of event.metrics) {
        training.add(r);
        validation.add(r);
        if (groupPanels.has(r.group)) groupPanels.get(r.group).add(r);
      }
    } else if (event.type === "changed") {
      if ((event.trials_with_logs || []).length) moreLogs();
      if ((event.trials || []).length) { clearTimeout(timer); timer = setTimeout(refresh, 250); }
    }
  }, async () => { await refresh(); await Promise.all([training.load(), validation.load(), moreLogs()]); });
  return () => { stop(); clearTimeout(timer); };
}
