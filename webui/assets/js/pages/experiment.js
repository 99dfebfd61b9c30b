// One experiment: its state and actions, description and notes, learning curves of any metric
// across its trials (live from the stream), hyperparameter views (parallel coordinates, a scatter
// per hyperparameter, ASHA's rungs), its trials, checkpoints and config.

import { ApiError, get, patch, post, stream } from "../api.js";
import { LineChart, scatterChart } from "../charts.js";
import { errorBox, h, link, notFound, num, progressBar, stateBadge, stateName, table, time } from "../dom.js";
import { parallelCoordinates } from "../parallel_coordinates.js";
import { flatHparams, loadCheckpoints, metricNames } from "./shared.js";

const MAX_POINTS = 1000;

export async function render(page, [id]) {
  let data;
  try {
    data = await get(`/api/v1/experiments/${encodeURIComponent(id)}`);
  } catch (e) {
    if (e instanceof ApiError && (e.status === 404 || e.status === 400)) { page.append(notFound(`Experiment ${id}`)); return; }
    throw e;
  }
  const header = h("div", {});
  const message = h("div", { class: "error", id: "action-error" });
  const about = h("div", { class: "panel" });
  const tabs = h("div", { class: "tabs" });
  const body = h("div", {});
  page.append(header, message, about, tabs, body);

  const metricSelect = h("select", { id: "curve-metric" });
  const curve = h("div", { class: "chart", id: "learning-curve" });
  const chart = new LineChart(curve, { title: "Learning curve", height: 320 });
  const parcoords = h("canvas", { class: "parcoords", id: "parallel-coordinates" });
  const scatters = h("div", { class: "grid2", id: "scatters" });
  const rungs = h("div", { id: "rungs" });
  const trialsBox = h("div", { id: "trials" });
  const checkpoints = h("div", { id: "checkpoints" });
  let selected = null;  // [group, name] of the curve

  const views = {
    Visualization: h("div", {},
      h("div", { class: "toolbar" }, h("label", {}, "Metric", metricSelect),
        h("label", {}, h("input", { type: "checkbox", id: "curve-log", onchange: (e) => chart.setLog(e.target.checked) }), "log scale"),
        h("label", {}, "smoothing", h("input", { type: "range", min: 0, max: 0.99, step: 0.01, value: 0,
          oninput: (e) => chart.setSmoothing(Number(e.target.value)) }))),
      curve, h("h2", {}, "Hyperparameters against the searcher metric"), parcoords, scatters, rungs),
    Trials: trialsBox,
    Checkpoints: checkpoints,
    Config: h("pre", { id: "config" }),
  };
  const show = (name) => {
    tabs.querySelectorAll("button").forEach((b) => b.classList.toggle("active", b.textContent === name));
    body.replaceChildren(views[name]);
    if (name === "Checkpoints") loadCheckpoints(`/api/v1/experiments/${id}/checkpoints`, checkpoints, { withTrial: true });
    if (name === "Visualization") { chart.rebuild(); drawHparams(); }
  };
  for (const name of Object.keys(views)) tabs.append(h("button", { id: `tab-${name.toLowerCase()}`, onclick: () => show(name) }, name));

  function act(verb, body) {
    return async () => {
      message.textContent = "";
      try {
        const out = await post(verb === "fork" ? "/api/v1/experiments" : `/api/v1/experiments/${id}/${verb}`, body);
        if (verb === "fork") location.assign(`/experiments/${out.experiment.id}`);
        else refresh();
      } catch (e) {
        message.textContent = e.message;
      }
    };
  }

  function drawHeader() {
    const e = data.experiment;
    header.replaceChildren(
      h("h1", {}, `Experiment ${e.id}: ${e.name} `, stateBadge(e.state)),
      h("div", { class: "toolbar" },
        h("span", { class: "muted" }, `${e.owner} · ${e.project} · ${e.searcher} on ${e.metric} · started ${time(e.start_time)} · `),
        progressBar(stateName(e.state) === "COMPLETED" ? 1 : e.progress),
        h("span", { class: "spacer" }),
        h("button", { id: "action-pause", onclick: act("pause") }, "Pause"),
        h("button", { id: "action-activate", onclick: act("activate") }, "Activate"),
        h("button", { id: "action-kill", onclick: act("kill") }, "Kill"),
        h("button", { id: "action-archive", onclick: act(e.archived ? "unarchive" : "archive") }, e.archived ? "Unarchive" : "Archive"),
        h("button", { id: "action-fork", onclick: act("fork", { parent_id: e.id }) }, "Fork")));
    views.Config.textContent = e.config;
  }

  function drawAbout() {
    const e = data.experiment;
    const description = h("input", { id: "description", value: e.description || "", size: 60 });
    const notes = h("textarea", { id: "notes", rows: 3, cols: 80 }, e.notes || "");
    const saved = h("span", { class: "muted" });
    about.replaceChildren(
      h("div", { class: "toolbar" }, h("label", {}, "Description", description)),
      h("div", { class: "toolbar" }, h("label", {}, "Notes", notes)),
      h("div", { class: "toolbar" }, h("button", { id: "save-notes", onclick: async () => {
        saved.textContent = "";
        try { await patch(`/api/v1/experiments/${id}`, { description: description.value, notes: notes.value }); saved.textContent = "saved"; }
        catch (err) { saved.replaceChildren(errorBox(err)); }
      } }, "Save"), saved),
      h("div", { class: "muted" }, "Labels: ", (e.labels || []).join(", ") || "none"));
  }

  function drawTrials() {
    const names = Object.keys(Object.assign({}, ...data.trials.map((t) => flatHparams(t.hparams))));
    const metric = data.experiment.metric;
    const columns = [
      { title: "Trial", cell: (t) => link(`/trials/${t.id}`, t.id) },
      { title: "State", cell: (t) => stateBadge(t.state) },
      ...names.map((n) => ({ title: n, cell: (t) => num(flatHparams(t.hparams)[n]) })),
      { title: `Latest ${metric}`, cell: (t) => num((t.latest_validation || {})[metric]) },
      { title: "Latest training", cell: (t) => Object.entries(t.latest_training || {})
          .filter(([k]) => k !== "batches" && k !== "epochs").map(([k, v]) => `${k} ${num(v)}`).join(", ") },
      { title: "Batches", cell: (t) => `${t.total_batches || 0} / ${t.target_batches || "?"}` },
      { title: "Restarts", cell: (t) => t.restarts || 0 },
      { title: "Rung", cell: (t) => (t.rung === undefined ? "" : t.rung) },
    ];
    trialsBox.replaceChildren(table(columns, data.trials, { rowAttrs: (t) => ({ "data-trial": t.id }) }));
  }

  function drawMetricPicker() {
    const names = metricNames(data.trials);
    const options = [];
    for (const group of ["validation", "training"]) for (const n of [...names[group]].sort()) options.push([group, n]);
    if (!selected) selected = options.find(([g, n]) => g === "validation" && n === data.experiment.metric) || options[0] || null;
    const current = selected ? selected.join("/") : "";
    if (metricSelect.dataset.options === options.map((o) => o.join("/")).join(",")) return;
    metricSelect.dataset.options = options.map((o) => o.join("/")).join(",");
    metricSelect.replaceChildren(...options.map(([g, n]) => h("option", { value: `${g}/${n}`, selected: `${g}/${n}` === current }, `${n} (${g})`)));
    metricSelect.onchange = () => { selected = metricSelect.value.split("/"); loadCurve(); };
  }

  async function loadCurve() {
    if (!selected) return;
    const [group, name] = selected;
    chart.series.clear();
    const out = await get(`/api/v1/experiments/${id}/metrics/series?group=${group}&name=${encodeURIComponent(name)}&max_points=${MAX_POINTS}`);
    for (const s of out.series || []) if ((s.batches || []).length) chart.set(`trial ${s.trial_id}`, s.batches, s.values);
    chart.rebuild();
  }

  function drawHparams() {
    const metric = data.experiment.metric;
    const rows = data.trials.map((t) => ({ ...flatHparams(t.hparams), [metric]: (t.latest_validation || {})[metric] }));
    const dims = [...Object.keys(Object.assign({}, ...data.trials.map((t) => flatHparams(t.hparams)))), metric];
    parallelCoordinates(parcoords, dims, rows, { smallerIsBetter: data.experiment.smaller_is_better });
    scatters.replaceChildren();
    for (const d of dims.slice(0, -1)) {
      const values = [...new Set(rows.map((r) => r[d]))];
      const numeric = values.every((v) => typeof v === "number");
      const points = rows.filter((r) => r[metric] !== undefined)
        .map((r) => ({ x: numeric ? r[d] : values.indexOf(r[d]), y: r[metric] }));
      const box = h("div", { class: "panel scatter", "data-hparam": d });
      scatters.append(box);
      scatterChart(box, numeric ? d : `${d} (${values.join(", ")})`, points, { xLabel: d, yLabel: metric });
    }
    drawRungs();
  }

  function drawRungs() {
    if (!/halving|asha/.test(data.experiment.searcher)) { rungs.replaceChildren(); return; }
    const byRung = new Map();
    for (const t of data.trials) if (t.rung !== undefined) (byRung.get(t.rung) || byRung.set(t.rung, []).get(t.rung)).push(t);
    const rows = [...byRung.entries()].sort((a, b) => a[0] - b[0]);
    rungs.replaceChildren(h("h2", {}, "Rungs"), table([
      { title: "Rung", cell: ([r]) => r },
      { title: "Trials", cell: ([, ts]) => ts.length },
      { title: "Stopped here by the searcher", cell: ([, ts]) => ts.filter((t) => t.searcher_stopped)
          .map((t) => h("span", {}, link(`/trials/${t.id}`, t.id), ` at ${t.total_batches} `)) },
      { title: "Still training", cell: ([, ts]) => ts.filter((t) => stateName(t.state) === "RUNNING").map((t) => link(`/trials/${t.id}`, `${t.id} `)) },
    ], rows));
  }

  async function refresh() {
    try {
      data = await get(`/api/v1/experiments/${id}`);
    } catch (e) {
      message.textContent = e.message;
      return;
    }
    drawHeader();
    drawTrials();
    drawMetricPicker();
    if (body.firstChild === views.Visualization) drawHparams();
  }

  drawHeader();
  drawAbout();
  drawTrials();
  drawMetricPicker();
  show("Visualization");
  await loadCurve();

  let timer = null;
  const stop = stream({ experiment_id: id }, (event) => {
    if (event.type === "metrics" && selected) {
      const [group, name] = selected;
      for (const r of event.metrics) if (r.group === group && r.metrics && name in r.metrics)
        chart.append(`trial ${r.trial_id}`, Number(r.total_batches), r.metrics[name]);
    } else if (event.type === "changed") {
      clearTimeout(timer);
      timer = setTimeout(refresh, 250);
    }
  }, async () => { await refresh(); await loadCurve(); });
  return () => { stop(); clearTimeout(timer); };
}
