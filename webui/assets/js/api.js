// The REST API with the user's session: an HttpOnly cookie the login sets, which no script here
// (or on a task's page) can read; nothing is kept in localStorage. A 401 (no session, or one that
// expired) sends the browser to the login page, which brings it back afterwards.

// Ends the session on the master, which clears its cookie.
export async function signOut() {
  try { await fetch("/api/v1/auth/logout", { method: "POST", credentials: "same-origin" }); } catch { /* already out */ }
}

export class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

function toLogin() {
  const next = location.pathname + location.search;
  if (location.pathname !== "/login") location.assign(`/login?next=${encodeURIComponent(next)}`);
}

export async function api(method, path, body) {
  const headers = { "Content-Type": "application/json" };
  const res = await fetch(path, { method, headers, credentials: "same-origin",
                                  body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let data = {};
  try { data = text ? JSON.parse(text) : {}; } catch { data = { error: text }; }
  if (res.status === 401 && path !== "/api/v1/auth/login") {
    toLogin();
    throw new ApiError(401, data.error || "signed out");
  }
  if (!res.ok) throw new ApiError(res.status, data.error || `${method} ${path}: ${res.status}`);
  return data;
}

export const get = (path) => api("GET", path);
export const post = (path, body = {}) => api("POST", path, body);
export const patch = (path, body) => api("PATCH", path, body);

// GET /api/v1/stream, read line by line as it arrives. `onEvent` gets each StreamEvent; on a
// `reset` (a cursor the master no longer knows, or a master restart) `onReset` reloads from REST.
// A dropped stream reconnects after a second, resuming after the last cursor, so nothing is
// missed or repeated. Returns a function that stops it.
export function stream(query, onEvent, onReset) {
  let stopped = false, cursor = null, generation = null, controller = null;
  async function run() {
    while (!stopped) {
      controller = new AbortController();
      const params = new URLSearchParams(query);
      if (cursor !== null) { params.set("after", cursor); params.set("generation", generation); }
      try {
        const res = await fetch(`/api/v1/stream?${params}`, { credentials: "same-origin", signal: controller.signal });
        if (res.status === 401) { toLogin(); return; }
        if (!res.ok) throw new Error(`stream: ${res.status}`);
        const reader = res.body.getReader();
        const decoder = new TextDecoder();
        let buffered = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffered += decoder.decode(value, { stream: true });
          let end;
          while ((end = buffered.indexOf("\n")) >= 0) {
            const event = JSON.parse(buffered.slice(0, end));
            buffered = buffered.slice(end + 1);
            if (event.generation) generation = event.generation;
            if (event.type === "reset") await onReset();
            else if (event.type !== "hello" && event.type !== "heartbeat") onEvent(event);
            cursor = event.cursor;
          }
        }
      } catch (e) {
        if (stopped) return;
      }
      if (!stopped) await new Promise((r) => setTimeout(r, 1000));
    }
  }
  run();
  return () => { stopped = true; if (controller) controller.abort(); };
}
