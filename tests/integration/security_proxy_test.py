#!/usr/bin/python3
"""Issue 35: task services on an origin of their own. det's users do not trust each other, and a
task's pages are whatever its owner put there. Checked against the master's state (its users and
tokens over REST) and what the service received, never its logs:

- a page mallory's task serves, opened by a logged-in admin in headless Chromium, reads no det token
  and changes nothing on the master with the admin's session, and the service gets no det header;
- the proxy listener takes only what opens that one task (its ticket, the cookie the ticket becomes),
  never a user's session or token, nor another task's ticket or cookie;
- a request the web UI's session cookie authenticates changes state only with the master's own Origin;
- the CLI's links and GET /api/v1/master name the proxy's address.
Runs under /usr/bin/python3 (Selenium)."""

import http.client
import json
import os
import sys
import unittest
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

sys.path.insert(0, os.path.dirname(__file__))
from cluster import simulated_config, wait_for  # noqa: E402
from security_test import TwoUsersCluster  # noqa: E402

HOSTILE_SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "attacks", "hostile_page_server.py")


def raw_request(url, method="GET", headers=None, body=None):
    """(status, headers, body) of one request, redirects not followed; a host under .localhost is
    reached at 127.0.0.1 (as browsers resolve it), with its name in the Host header."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection("127.0.0.1" if parts.hostname.endswith(".localhost") else parts.hostname,
                                      parts.port, timeout=30)
    headers = dict(headers or {})
    headers.setdefault("Host", parts.netloc)
    try:
        conn.request(method, parts.path + (f"?{parts.query}" if parts.query else ""),
                     body=None if body is None else json.dumps(body), headers=headers)
        r = conn.getresponse()
        return r.status, r.headers, r.read().decode(errors="replace")
    finally:
        conn.close()


class ProxyOriginTest(TwoUsersCluster):
    AGENT_ARGS = (f"--tensorboard={HOSTILE_SERVER}",)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        c = cls.cluster
        exp_id = c.submit(simulated_config("for mallory's pages", batches=5))
        c.wait_experiment(exp_id, {"STATE_COMPLETED"}, timeout=120)
        # Two services of mallory's (TensorBoards, whose program the agent was given: the hostile page).
        cls.tasks = [c.post("/api/v1/tensorboards", {"experiment_ids": [exp_id]}, token=cls.mallory)["tensorboard"]["id"]
                     for _ in range(2)]
        for task_id in cls.tasks:
            wait_for(lambda: c.get(f"/api/v1/tensorboards/{task_id}")["tensorboard"].get("ready"), 60,
                     f"task {task_id} to serve")

    def service_log(self, task_id):
        """What task `task_id`'s service recorded, read straight from it (not through the proxy)."""
        address = self.cluster.get(f"/api/v1/tensorboards/{task_id}")["tensorboard"]["service_address"]
        with urllib.request.urlopen(f"http://{address}/proxy/{task_id}/log", timeout=30) as r:
            return json.load(r)

    def session_cookie(self, username, password):
        """The HttpOnly session cookie a login sets, as (value, its Set-Cookie header)."""
        status, headers, body = raw_request(self.cluster.url + "/api/v1/auth/login", "POST",
                                            {"Content-Type": "application/json"},
                                            {"username": username, "password": password})
        self.assertEqual(status, 200, body)
        header = headers["Set-Cookie"]
        self.assertTrue(header.startswith("det_session="), header)
        return header.split(";")[0].split("=", 1)[1], header

    # -- (1) a hostile page in a victim's browser ------------------------------

    def test_a_a_tasks_page_in_an_admins_browser_reads_no_token_and_changes_nothing(self):
        c = self.cluster
        task_id = self.tasks[0]
        tokens_before = sorted(t["id"] for t in c.get("/api/v1/tokens")["tokens"])
        users_before = c.get("/api/v1/users")["users"]
        options = webdriver.ChromeOptions()
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
            options.add_argument(arg)
        options.binary_location = "/usr/bin/chromium"
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        try:
            # The admin logs in through the web UI, then opens mallory's task as a link from the UI would.
            driver.get(c.url + "/login")
            wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#username"), 15, "the login page")
            driver.find_element(By.CSS_SELECTOR, "#username").send_keys("admin")
            driver.find_element(By.CSS_SELECTOR, "#password").send_keys(c.admin_password)
            driver.find_element(By.CSS_SELECTOR, "#login").click()
            wait_for(lambda: driver.current_url.endswith("/experiments"), 15, "the experiments page")
            session = next(k["value"] for k in driver.get_cookies() if k["name"] == "det_session")
            self.assertEqual(driver.execute_script("return localStorage.length"), 0)
            driver.get(f"{c.url}/proxy/{task_id}/?master={urllib.parse.quote(c.url)}")
            wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#status") and
                     driver.find_element(By.CSS_SELECTOR, "#status").text == "done", 30, "the page's script to finish")
            # It runs on the proxy's origin, and the ticket is gone from the address bar.
            self.assertTrue(driver.current_url.startswith(c.proxy_origin(task_id) + f"/proxy/{task_id}/"),
                            driver.current_url)
            self.assertNotIn("det_proxy_token", driver.current_url)
            self.assertNotEqual(urllib.parse.urlsplit(driver.current_url).port, urllib.parse.urlsplit(c.url).port)
        finally:
            driver.quit()
        log = self.service_log(task_id)
        self.assertEqual(len(log["reports"]), 1, log["reports"])
        report = log["reports"][0]
        # Nothing of det's was readable by the page.
        self.assertEqual(report["tokens"], [], report)
        for place in report["found"].values():
            self.assertNotIn(session, place)
            self.assertNotIn("det_", place)
        # Nothing changed on the master.
        self.assertEqual(sorted(t["id"] for t in c.get("/api/v1/tokens")["tokens"]), tokens_before)
        self.assertEqual(c.get("/api/v1/users")["users"], users_before)
        self.assertTrue(next(u for u in users_before if u["username"] == "alice")["active"])
        # The service saw none of det's credentials.
        self.assertTrue(log["requests"])
        for request in log["requests"]:
            headers = {k.lower(): v for k, v in request["headers"].items()}
            self.assertNotIn("authorization", headers, request)
            self.assertNotIn("det_", headers.get("cookie", ""), request)
            self.assertNotIn(session, json.dumps(request), request)

    # -- (2) what the proxy listener takes -------------------------------------

    def test_b_the_proxy_takes_only_what_opens_that_one_task(self):
        c = self.cluster
        mine, other = self.tasks
        url = f"{c.proxy_origin(mine)}/proxy/{mine}/page"
        session, _ = self.session_cookie("mallory", self.PASSWORD)
        # A user's session or token is not taken here, as a header or a cookie; nor is nothing.
        for headers in ({}, {"Authorization": f"Bearer {self.mallory}"}, {"Authorization": f"Bearer {c.token}"},
                        {"Cookie": f"det_session={session}"}, {"Cookie": f"auth={self.mallory}"}):
            status, _, body = raw_request(url, headers=headers)
            self.assertEqual(status, 401, f"{headers}: {body}")
        # Alice, who does not own it, gets no ticket; mallory gets one, which opens this task only.
        self.assertEqual(c.status("POST", f"/api/v1/tasks/{mine}/proxy_ticket", {}, token=self.alice)[0], 403)
        ticket_url = c.post(f"/api/v1/tasks/{mine}/proxy_ticket", {}, token=self.mallory)["url"]
        self.assertTrue(ticket_url.startswith(c.proxy_origin(mine) + f"/proxy/{mine}/?det_proxy_token="), ticket_url)
        ticket = ticket_url.split("det_proxy_token=")[1]
        status, _, _ = raw_request(f"{c.proxy_origin(other)}/proxy/{other}/?det_proxy_token={ticket}")
        self.assertEqual(status, 401)
        self.assertEqual(raw_request(ticket_url)[0], 401, "a ticket opens once")  # spent on the other task above
        ticket_url = c.post(f"/api/v1/tasks/{mine}/proxy_ticket", {}, token=self.mallory)["url"]
        status, headers, _ = raw_request(ticket_url)
        self.assertEqual(status, 302)
        self.assertEqual(headers["Location"], f"/proxy/{mine}/")
        cookie = headers["Set-Cookie"]
        for attribute in (f"Path=/proxy/{mine}/", "HttpOnly", "SameSite=Lax"):
            self.assertIn(attribute, cookie)
        grant = cookie.split(";")[0]
        self.assertEqual(raw_request(ticket_url)[0], 401, "a ticket opens once")
        self.assertEqual(raw_request(url, headers={"Cookie": grant})[0], 200)
        # Its cookie under another task's name opens nothing there.
        other_name = grant.replace(mine, other)
        self.assertEqual(raw_request(f"{c.proxy_origin(other)}/proxy/{other}/page", headers={"Cookie": other_name})[0], 401)
        # A task's own token (DET_USER_TOKEN) opens no service: it speaks for its owner only to the REST API.
        script = "import os, time\nprint('TOKEN=' + os.environ['DET_USER_TOKEN'], flush=True)\ntime.sleep(600)\n"
        out = c.det("cmd", "run", "-d", "--", "/usr/bin/python3", "-c", script, token=self.mallory)
        self.assertEqual(out.returncode, 0, out.stderr)
        command_id = out.stdout.strip().splitlines()[-1]
        task_token = wait_for(lambda: next((e["text"].strip()[len("TOKEN="):] for e in c.get(
            f"/api/v1/tasks/{command_id}/logs?limit=1000")["logs"] if e["text"].startswith("TOKEN=")), None), 60,
            "the command's token in its log")
        code, sentence = c.status("POST", f"/api/v1/tasks/{mine}/proxy_ticket", {}, token=task_token)
        self.assertEqual(code, 403, sentence)
        self.assertIn("not a task's token", sentence)
        c.det("cmd", "kill", command_id, token=self.mallory)

    def test_c_a_logout_ends_the_grants_of_its_session(self):
        c = self.cluster
        mine = self.tasks[0]
        session = c.login("mallory", self.PASSWORD)
        opener = c.proxy_session(mine, token=session)
        with opener.open(f"{c.proxy_origin(mine)}/proxy/{mine}/page", timeout=30) as r:
            self.assertEqual(r.status, 200)
        c.post("/api/v1/auth/logout", {}, token=session)
        with self.assertRaises(urllib.error.HTTPError) as refused:
            opener.open(f"{c.proxy_origin(mine)}/proxy/{mine}/page", timeout=30)
        self.assertEqual(refused.exception.code, 401)

    def test_d_the_masters_proxy_path_sends_the_browser_on_with_a_ticket(self):
        c = self.cluster
        mine = self.tasks[0]
        # Without a login: the login page, which comes back here.
        status, headers, _ = raw_request(f"{c.url}/proxy/{mine}/page?x=1")
        self.assertEqual(status, 302)
        self.assertTrue(headers["Location"].startswith("/login?next=%2Fproxy%2F") or
                        headers["Location"].startswith("/login?next=/proxy/"), headers["Location"])
        # Alice's session cookie: refused; mallory's: the proxy's origin, with a ticket, the query kept.
        alice_session, _ = self.session_cookie("alice", "alice-password-12")
        self.assertEqual(raw_request(f"{c.url}/proxy/{mine}/", headers={"Cookie": f"det_session={alice_session}"})[0], 403)
        session, _ = self.session_cookie("mallory", self.PASSWORD)
        status, headers, _ = raw_request(f"{c.url}/proxy/{mine}/page?x=1", headers={"Cookie": f"det_session={session}"})
        self.assertEqual(status, 302)
        location = headers["Location"]
        self.assertTrue(location.startswith(f"{c.proxy_origin(mine)}/proxy/{mine}/page?x=1&det_proxy_token="), location)
        status, headers, _ = raw_request(location)
        self.assertEqual((status, headers["Location"]), (302, f"/proxy/{mine}/page?x=1"))
        # The master no longer relays anything itself.
        status, _, _ = raw_request(f"{c.url}/proxy/{mine}/page", "POST", {"Authorization": f"Bearer {self.mallory}"}, {})
        self.assertEqual(status, 404)

    # -- (3) the session cookie and cross-origin requests ----------------------

    def test_e_a_cookie_authenticated_change_needs_the_masters_own_origin(self):
        c = self.cluster
        session, set_cookie = self.session_cookie("mallory", self.PASSWORD)
        for attribute in ("HttpOnly", "SameSite=Strict", "Path=/"):
            self.assertIn(attribute, set_cookie)
        self.assertNotIn("Secure", set_cookie)  # plain HTTP here; tls_test's cluster has it
        cookie = {"Cookie": f"det_session={session}", "Content-Type": "application/json"}
        body = {"description": "csrf probe", "password": self.PASSWORD}
        proxy_origin = c.proxy_origin(self.tasks[0])

        def probes():
            return [t for t in c.get("/api/v1/tokens", token=self.mallory)["tokens"] if t["description"] == "csrf probe"]

        # Reads need no Origin, but a page of another origin gets none (a browser says so).
        status, _, me = raw_request(c.url + "/api/v1/me", headers=cookie)
        self.assertEqual((status, json.loads(me)["user"]["username"]), (200, "mallory"))
        self.assertEqual(raw_request(c.url + "/api/v1/me", headers=dict(cookie, **{"Sec-Fetch-Site": "same-origin"}))[0], 200)
        status, _, sentence = raw_request(c.url + "/api/v1/stream", headers=dict(cookie, **{"Sec-Fetch-Site": "same-site"}))
        self.assertEqual(status, 403, sentence)
        self.assertIn("not from a same-site page", sentence)
        for origin in (None, proxy_origin, "http://evil.example"):
            headers = dict(cookie, **({"Origin": origin} if origin else {}))
            status, _, sentence = raw_request(c.url + "/api/v1/tokens", "POST", headers, body)
            self.assertEqual(status, 403, f"Origin {origin}: {sentence}")
            self.assertIn("must come from the web UI", sentence)
        self.assertEqual(probes(), [])
        status, _, sentence = raw_request(c.url + "/api/v1/tokens", "POST", dict(cookie, Origin=c.url), body)
        self.assertEqual(status, 200, sentence)
        self.assertEqual(len(probes()), 1)
        # Bearer tokens need no Origin.
        self.assertEqual(c.status("POST", "/api/v1/tokens", body, token=self.mallory)[0], 200)
        self.assertEqual(len(probes()), 2)
        # A logout through the cookie clears it and ends the session.
        status, headers, _ = raw_request(c.url + "/api/v1/auth/logout", "POST", dict(cookie, Origin=c.url), {})
        self.assertEqual(status, 200)
        self.assertIn("Max-Age=0", headers["Set-Cookie"])
        self.assertEqual(raw_request(c.url + "/api/v1/me", headers=cookie)[0], 401)

    # -- (4) where clients find the proxy --------------------------------------

    def test_f_the_cli_and_the_master_name_the_proxys_address(self):
        c = self.cluster
        mine = self.tasks[0]
        proxy_url = c.get("/api/v1/master", token=None)["proxy_url"]
        self.assertTrue(proxy_url.startswith("http://127.0.0.1:"), proxy_url)
        self.assertNotEqual(int(proxy_url.rsplit(":", 1)[1]), c.http_port)
        with open(os.path.join(c.root, "ready.json")) as f:
            self.assertEqual(int(proxy_url.rsplit(":", 1)[1]), json.load(f)["proxy_port"])
        out = c.det("tensorboard", "open", mine, token=self.mallory)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip().splitlines()[-1], f"{c.url}/proxy/{mine}/")



class ProxyHostTest(TwoUsersCluster):
    """proxy_host: each task at a host of its own (*.localhost resolves to this machine, as browsers
    and RFC 6761 have it), so that tasks share no origin with each other either."""

    MASTER_CONFIG = 'proxy_host = "*.localhost"\n'
    AGENT_ARGS = (f"--tensorboard={HOSTILE_SERVER}",)

    def test_a_task_is_served_at_its_own_host_only(self):
        c = self.cluster
        exp_id = c.submit(simulated_config("for a host per task", batches=5))
        c.wait_experiment(exp_id, {"STATE_COMPLETED"}, timeout=120)
        mine, other = [c.post("/api/v1/tensorboards", {"experiment_ids": [exp_id]}, token=self.mallory)["tensorboard"]["id"]
                       for _ in range(2)]
        for task_id in (mine, other):
            wait_for(lambda: c.get(f"/api/v1/tensorboards/{task_id}")["tensorboard"].get("ready"), 60, "it to serve")
        proxy_url = c.get("/api/v1/master", token=None)["proxy_url"]
        self.assertRegex(proxy_url, r"^http://\{task_id\}\.localhost:\d+$")
        port = int(proxy_url.rsplit(":", 1)[1])
        status, headers, _ = raw_request(f"{c.url}/proxy/{mine}/page", headers={"Authorization": f"Bearer {self.mallory}"})
        self.assertEqual(status, 302)
        ticket_url = headers["Location"]
        self.assertTrue(ticket_url.startswith(f"http://{mine}.localhost:{port}/proxy/{mine}/page?det_proxy_token="),
                        ticket_url)
        # The ticket at another task's host, or at the bare address, opens nothing.
        ticket_path = ticket_url.split(f":{port}", 1)[1]
        for host in (f"{other}.localhost:{port}", f"127.0.0.1:{port}"):
            status, _, sentence = raw_request(f"http://127.0.0.1:{port}{ticket_path}", headers={"Host": host})
            self.assertEqual(status, 404, sentence)
            self.assertIn("is served at its own host", sentence)
        status, headers, _ = raw_request(ticket_url)
        self.assertEqual(status, 302)
        grant = headers["Set-Cookie"].split(";")[0]
        self.assertEqual(raw_request(f"http://{mine}.localhost:{port}/proxy/{mine}/page", headers={"Cookie": grant})[0], 200)
        self.assertEqual(raw_request(f"http://{other}.localhost:{port}/proxy/{mine}/page",
                                     headers={"Cookie": grant})[0], 404)


if __name__ == "__main__":
    unittest.main()
