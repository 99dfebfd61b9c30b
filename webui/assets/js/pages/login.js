// The login page: a session for the REST API (the master keeps it in an HttpOnly cookie), then
// back where the user was going; a task's service (/proxy/...) is left to the master, which sends
// the browser on to the proxy's origin.

import { api } from "../api.js";
import { h } from "../dom.js";
import { navigate } from "../main.js";

export function render(page) {
  const user = h("input", { id: "username", placeholder: "user name", autocomplete: "username" });
  const password = h("input", { id: "password", type: "password", placeholder: "password", autocomplete: "current-password" });
  const error = h("div", { class: "error", id: "login-error" });
  const form = h("form", { class: "login panel", onsubmit: async (e) => {
    e.preventDefault();
    error.textContent = "";
    try {
      await api("POST", "/api/v1/auth/login", { username: user.value, password: password.value });
      const next = new URLSearchParams(location.search).get("next");
      if (next && next.startsWith("/proxy/")) { location.assign(next); return; }
      navigate(next && next.startsWith("/") && !next.startsWith("/login") ? next : "/experiments");
    } catch (err) {
      error.textContent = err.message;
    }
  } }, h("h1", {}, "Log in to det"), user, password, h("button", { type: "submit", id: "login" }, "Log in"), error);
  page.append(form);
  user.focus();
}
