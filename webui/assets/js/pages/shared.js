// What the experiment and trial pages share: hyperparameters flattened, metric names of trials,
// and the checkpoints table.

import { get, post } from "../api.js";
import { errorBox, h, num, stateBadge, table, time } from "../dom.js";

// {"model": {"layers": 2}, "lr": 0.1} -> {"model.layers": 2, "lr": 0.1}
export function flatHparams(json) {
  const out = {};
  const walk = (v, name) => {
    if (v !== null && typeof v === "object" && !Array.isArray(v)) for (const [k, x] of Object.entries(v)) walk(x, name ? `${name}.${k}` : k);
    else out[name] = Array.isArray(v) ? JSON.stringify(v) : v;
  };
  try { walk(JSON.parse(json || "{}"), ""); } catch { /* shown as nothing */ }
  return out;
}

export function metricNames(trials) {
  const names = { training: new Set(), validation: new Set() };
  for (const t of trials) {
    Object.keys(t.latest_training || {}).forEach((k) => names.training.add(k));
    Object.keys(t.latest_validation || {}).forEach((k) => names.validation.add(k));
  }
  for (const s of Object.values(names)) { s.delete("batches"); s.delete("epochs"); }
  return names;
}

// A checkpoint's files as download links, and a form that registers it as a model's version.
export function checkpointsTable(checkpoints, { withTrial = false } = {}) {
  const columns = [
    { title: "UUID", cell: (c) => h("code", {}, c.uuid) },
    ...(withTrial ? [{ title: "Trial", cell: (c) => h("a", { href: `/trials/${c.trial_id}` }, c.trial_id) }] : []),
    { title: "Batches", cell: (c) => c.steps_completed },
    { title: "State", cell: (c) => stateBadge(c.state) },
    { title: "Validation", cell: (c) => Object.entries(c.validation_metrics || {}).map(([k, v]) => `${k} ${num(v)}`).join(", ") },
    { title: "Saved", cell: (c) => time(c.report_time) },
    { title: "Files", cell: (c) => Object.keys(c.resources || {}).map((f) =>
      h("a", { href: "#", class: "download", onclick: (e) => { e.preventDefault(); download(c.uuid, f); } }, f, " ")) },
    { title: "Register", cell: (c) => register(c) },
  ];
  return table(columns, checkpoints, { rowAttrs: (c) => ({ "data-checkpoint": c.uuid }) });
}

// Downloads go through fetch, which carries the session cookie, and save the blob under its name.
async function download(uuid, file) {
  const res = await fetch(`/api/v1/checkpoints/${uuid}/files/${encodeURIComponent(file)}`, { credentials: "same-origin" });
  if (!res.ok) { alert(`download failed: ${res.status}`); return; }
  const a = document.createElement("a");
  a.href = URL.createObjectURL(await res.blob());
  a.download = file;
  a.click();
  URL.revokeObjectURL(a.href);
}

function register(c) {
  if (c.state !== "CHECKPOINT_STATE_COMPLETED") return "";
  const model = h("input", { placeholder: "model", size: 10, class: "register-model" });
  const out = h("span", { class: "muted" });
  return h("span", {}, model, h("button", { class: "register", onclick: async () => {
    out.textContent = "";
    try {
      const v = (await post(`/api/v1/models/${encodeURIComponent(model.value)}/versions`, { checkpoint_uuid: c.uuid })).version;
      out.replaceChildren(h("a", { href: `/models/${encodeURIComponent(v.model_name)}` }, ` version ${v.version}`));
    } catch (e) {
      out.replaceChildren(errorBox(e));
    }
  } }, "Register"), out);
}

export async function loadCheckpoints(path, container, opts) {
  try {
    container.replaceChildren(checkpointsTable((await get(path)).checkpoints || [], opts));
  } catch (e) {
    container.replaceChildren(errorBox(e));
  }
}
