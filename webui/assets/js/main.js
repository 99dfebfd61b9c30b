// The web UI's router: each path draws one page into <main>; links within the UI change the
// page without a reload, and a page's cleanup (its stream, its timers) runs when it is left.

import { get, signOut } from "./api.js";
import { errorBox, h } from "./dom.js";
import * as cluster from "./pages/cluster.js";
import * as experiment from "./pages/experiment.js";
import * as experiments from "./pages/experiments.js";
import * as login from "./pages/login.js";
import * as models from "./pages/models.js";
import * as tasks from "./pages/tasks.js";
import * as trial from "./pages/trial.js";

const routes = [
  [/^\/login$/, login, "login"],
  [/^\/(experiments)?$/, experiments, "experiments"],
  [/^\/experiments\/([^/]+)$/, experiment, "experiments"],
  [/^\/trials\/([^/]+)$/, trial, "experiments"],
  [/^\/cluster$/, cluster, "cluster"],
  [/^\/tasks$/, tasks, "tasks"],
  [/^\/models$/, models, "models"],
  [/^\/models\/([^/]+)$/, models, "models"],
];

let cleanup = null;
let me = null;

async function show() {
  if (cleanup) { cleanup(); cleanup = null; }
  const page = document.getElementById("page");
  page.innerHTML = "";
  const path = location.pathname;
  const found = routes.find(([re]) => re.test(path));
  const [re, module, section] = found || [null, null, null];
  document.querySelectorAll("#nav a[data-section]").forEach((a) => a.classList.toggle("active", a.dataset.section === section));
  document.getElementById("nav").style.display = module === login ? "none" : "";
  if (!module) { page.append(h("h1", {}, "Not found"), h("p", {}, `det has no page at ${path}.`)); return; }
  if (module !== login) {
    if (!me) {  // a 401 here (no session cookie) sends the browser to the login page
      try { me = (await get("/api/v1/me")).user; } catch (e) { if (e.status !== 401) page.append(errorBox(e)); return; }
      document.getElementById("whoami").textContent = me.username;
    }
  }
  const params = path.match(re).slice(1).map(decodeURIComponent);
  try {
    cleanup = (await module.render(page, params, { me })) || null;
  } catch (e) {
    if (e.status !== 401) page.append(errorBox(e));
  }
}

export function navigate(href) {
  history.pushState(null, "", href);
  show();
}

document.addEventListener("click", (e) => {
  const a = e.target.closest("a");
  if (!a || a.target || e.ctrlKey || e.metaKey || e.button !== 0) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || url.pathname.startsWith("/api/") || url.pathname.startsWith("/proxy/")) return;
  e.preventDefault();
  if (a.id === "logout") { signOut().then(() => { me = null; navigate(url.pathname + url.search); }); return; }
  navigate(url.pathname + url.search);
});
window.addEventListener("popstate", show);
show();
