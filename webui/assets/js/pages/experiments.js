// Experiments: a page of the list with filters, sorting and batch actions, redrawn whenever an
// experiment on the cluster changes (the unscoped stream).

import { get, post, stream } from "../api.js";
import { duration, errorBox, h, link, num, progressBar, stateBadge, stateName, table, time } from "../dom.js";

const PAGE = 100;
const STATES = ["", "ACTIVE", "RUNNING", "PAUSED", "STOPPING_CANCELED", "STOPPING_COMPLETED", "COMPLETED", "CANCELED", "ERROR"];

export async function render(page) {
  const q = { state: "", user: "", label: "", project_id: "", archived: "false", sort_by: "id", order_by: "desc", offset: 0 };
  const selected = new Set();
  const results = h("div", { id: "experiments" });
  const message = h("div", { class: "error", id: "action-error" });
  const field = (key, el) => { el.value = q[key]; el.addEventListener("change", () => { q[key] = el.value; q.offset = 0; load(); }); return el; };
  const bar = h("div", { class: "toolbar" },
    h("label", {}, "State", field("state", h("select", { id: "filter-state" }, STATES.map((s) => h("option", { value: s }, s || "any"))))),
    h("label", {}, "Owner", field("user", h("input", { id: "filter-user", size: 10 }))),
    h("label", {}, "Label", field("label", h("input", { id: "filter-label", size: 10 }))),
    h("label", {}, "Project id", field("project_id", h("input", { id: "filter-project", size: 4 }))),
    h("label", {}, "Archived", field("archived", h("select", { id: "filter-archived" },
      h("option", { value: "false" }, "hidden"), h("option", { value: "true" }, "only"), h("option", { value: "any" }, "shown")))),
    h("span", { class: "spacer" }),
    ...["kill", "pause", "activate", "archive"].map((verb) =>
      h("button", { id: `batch-${verb}`, onclick: () => batch(verb) }, verb[0].toUpperCase() + verb.slice(1))));
  const pager = h("div", { class: "toolbar" });
  page.append(h("h1", {}, "Experiments"), bar, message, results, pager);

  async function batch(verb) {
    message.textContent = "";
    const failures = [];
    for (const id of selected) {
      try { await post(`/api/v1/experiments/${id}/${verb}`); } catch (e) { failures.push(`experiment ${id}: ${e.message}`); }
    }
    message.textContent = failures.join("; ");
    load();
  }

  let loading = false, again = false;
  async function load() {
    if (loading) { again = true; return; }
    loading = true;
    try {
      const params = new URLSearchParams({ sort_by: q.sort_by, order_by: q.order_by, offset: q.offset, limit: PAGE, archived: q.archived });
      for (const k of ["user", "label", "project_id"]) if (q[k]) params.set(k, q[k]);
      if (q.state) params.set("state", `STATE_${q.state}`);
      const list = (await get(`/api/v1/experiments?${params}`)).experiments || [];
      draw(list);
    } catch (e) {
      results.replaceChildren(errorBox(e));
    } finally {
      loading = false;
      if (again) { again = false; load(); }
    }
  }

  function sortBy(key) {
    q.order_by = q.sort_by === key && q.order_by === "asc" ? "desc" : "asc";
    q.sort_by = key;
    load();
  }

  function draw(list) {
    const columns = [
      { title: "", cell: (e) => h("input", { type: "checkbox", class: "select", "data-id": e.id, checked: selected.has(e.id),
        onchange: (ev) => (ev.target.checked ? selected.add(e.id) : selected.delete(e.id)) }) },
      { title: "ID", sort: "id", cell: (e) => link(`/experiments/${e.id}`, e.id) },
      { title: "Name", sort: "name", cell: (e) => link(`/experiments/${e.id}`, e.name || "(unnamed)") },
      { title: "Owner", sort: "owner", cell: (e) => e.owner },
      { title: "Project", cell: (e) => e.project },
      { title: "Labels", cell: (e) => (e.labels || []).join(", ") },
      { title: "State", sort: "state", cell: (e) => stateBadge(e.state) },
      { title: "Progress", cell: (e) => progressBar(stateName(e.state) === "COMPLETED" ? 1 : e.progress) },
      { title: "Best metric", cell: (e) => (e.best_metric === undefined ? "" : `${num(e.best_metric)} (${e.metric})`) },
      { title: "Trials", cell: (e) => e.num_trials },
      { title: "Started", sort: "start_time", cell: (e) => time(e.start_time) },
      { title: "Duration", cell: (e) => duration(e.start_time, e.end_time) },
    ];
    results.replaceChildren(table(columns, list, { onSort: sortBy, sortKey: q.sort_by, sortDesc: q.order_by === "desc",
      rowAttrs: (e) => ({ "data-experiment": e.id }) }));
    pager.replaceChildren(
      h("button", { disabled: q.offset === 0, onclick: () => { q.offset = Math.max(0, q.offset - PAGE); load(); } }, "Previous"),
      h("span", { class: "muted" }, `${q.offset + 1}–${q.offset + list.length}`),
      h("button", { id: "next-page", disabled: list.length < PAGE, onclick: () => { q.offset += PAGE; load(); } }, "Next"));
  }

  await load();
  let timer = null;
  const stop = stream({}, () => { clearTimeout(timer); timer = setTimeout(load, 250); }, load);
  return () => { stop(); clearTimeout(timer); };
}
