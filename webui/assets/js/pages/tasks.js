// Commands, notebooks, shells and TensorBoards, with their state and the links that open them:
// /proxy/ID/ on the master, which sends the browser on to the proxy's own origin with a ticket
// for that task alone. Read every 2 s.

import { get, post } from "../api.js";
import { errorBox, every, h, stateBadge, table, time } from "../dom.js";

const KINDS = [["commands", "Command"], ["notebooks", "Notebook"], ["shells", "Shell"], ["tensorboards", "TensorBoard"]];

export async function render(page) {
  const box = h("div", { id: "tasks" });
  const message = h("div", { class: "error" });
  page.append(h("h1", {}, "Tasks"), message, box);
  async function load() {
    try {
      const lists = await Promise.all(KINDS.map(([plural]) => get(`/api/v1/${plural}`)));
      const rows = lists.flatMap((l, i) => (l[KINDS[i][0]] || []).map((t) => ({ ...t, plural: KINDS[i][0], kind: KINDS[i][1] })));
      rows.sort((a, b) => String(b.start_time || "").localeCompare(String(a.start_time || "")));
      box.replaceChildren(table([
        { title: "Kind", cell: (t) => t.kind }, { title: "ID", cell: (t) => h("code", {}, t.id) },
        { title: "Description", cell: (t) => t.description }, { title: "Owner", cell: (t) => t.owner },
        { title: "State", cell: (t) => stateBadge(t.state) }, { title: "Started", cell: (t) => time(t.start_time) },
        { title: "Open", cell: (t) => (t.ready && t.kind !== "Command" && t.kind !== "Shell" ? h("a", { href: t.proxy_path, target: "_blank", class: "open" }, "open") : "") },
        { title: "", cell: (t) => (t.state === "TASK_STATE_TERMINATED" ? t.exit_reason || "" :
          h("button", { onclick: async () => { try { await post(`/api/v1/${t.plural}/${t.id}/kill`); load(); } catch (e) { message.textContent = e.message; } } }, "Kill")) },
      ], rows, { rowAttrs: (t) => ({ "data-task": t.id }) }));
    } catch (e) {
      box.replaceChildren(errorBox(e));
    }
  }
  await load();
  return every(2000, load);
}
