// Small helpers to build pages: elements, tables, states, times.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (v !== undefined && v !== null && v !== false) el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : String(c));
  return el;
}

export const link = (href, text) => h("a", { href }, text);

// "STATE_RUNNING" -> "RUNNING"
export const stateName = (s) => String(s || "").replace(/^(STATE|TASK_STATE|CHECKPOINT_STATE)_/, "");
export const stateBadge = (s) => h("span", { class: `state ${stateName(s)}` }, stateName(s));

export function time(t) { return t ? new Date(t).toLocaleString() : ""; }

export function duration(start, end) {
  if (!start) return "";
  const s = Math.max(0, ((end ? new Date(end) : new Date()) - new Date(start)) / 1000);
  if (s < 60) return `${s.toFixed(0)} s`;
  if (s < 3600) return `${(s / 60).toFixed(1)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

export function num(x) {
  if (x === undefined || x === null || x === "") return "";
  const v = Number(x);
  if (!Number.isFinite(v)) return String(x);
  return Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(3) : String(+v.toFixed(4));
}

export function progressBar(p) {
  const pct = Math.round(Math.min(1, Math.max(0, p || 0)) * 100);
  return h("span", { title: `${pct}%` }, h("span", { class: "progress" }, h("span", { style: `width:${pct}%` })), ` ${pct}%`);
}

// A table from column specs {title, cell(row), sort?}; `onSort(key)` for sortable headers.
export function table(columns, rows, { onSort, sortKey, sortDesc, rowAttrs } = {}) {
  const head = h("tr", {}, columns.map((c) => {
    const arrow = c.sort && c.sort === sortKey ? (sortDesc ? " ▼" : " ▲") : "";
    return h("th", c.sort && onSort ? { class: "sortable", onclick: () => onSort(c.sort) } : {}, c.title + arrow);
  }));
  const body = rows.map((r) => h("tr", rowAttrs ? rowAttrs(r) : {}, columns.map((c) => h("td", {}, c.cell(r)))));
  return h("table", {}, h("thead", {}, head), h("tbody", {}, body));
}

export function errorBox(e) { return h("div", { class: "error" }, e.message || String(e)); }

export function notFound(what) {
  return h("div", { class: "panel", id: "not-found" }, h("h1", {}, "Not found"), h("p", {}, `${what} does not exist.`),
           link("/experiments", "Back to the experiments"));
}

// Runs `fn` every `ms` while the page is visible, until the returned function is called.
export function every(ms, fn) {
  const id = setInterval(() => { if (!document.hidden) fn(); }, ms);
  return () => clearInterval(id);
}
