#!/usr/bin/env python3
"""Users, tokens and rights on a real cluster: every route but login and the version needs a
login; writes need the owner or an admin; sessions expire, are revoked by logout and password
changes; bad names and passwords are refused with nothing stored; the CLI logs in and keeps its
session in a 0600 file; agents need the agent token; a rogue CAF peer changes nothing."""

import json
import os
import stat
import subprocess
import sys
import time
import unittest
import urllib.error

sys.path.insert(0, os.path.dirname(__file__))
from cluster import BIN, Cluster, simulated_config, wait_for  # noqa: E402

PASSWORD = "correct horse battery"


class AuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        c = cls.cluster = Cluster(agents=1, slots="cpu:1").start()
        cls.alice = c.add_user("alice", PASSWORD)
        cls.bob = c.add_user("bob", PASSWORD)
        # alice's experiment trains for minutes, checkpointing often.
        config = simulated_config("alices", 100000, seconds_per_batch=0.01, checkpoint_period=20)
        cls.alices = int(c.post("/api/v1/experiments", {"config": config}, token=cls.alice)["experiment"]["id"])
        cls.trial = c.first_trial(cls.alices)
        wait_for(lambda: c.get(f"/api/v1/trials/{cls.trial}")["trial"]["state"] == "STATE_RUNNING", 60, "alice's trial to run")
        cls.checkpoint = wait_for(lambda: (c.get(f"/api/v1/trials/{cls.trial}/checkpoints").get("checkpoints") or [None])[0],
                                  60, "a checkpoint")["uuid"]

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def routes(self):
        """Every user route of the REST API, with a body where it takes one."""
        e, t, u = self.alices, self.trial, self.checkpoint
        return [
            ("GET", "/api/v1/experiments", None), ("GET", f"/api/v1/experiments/{e}", None),
            ("POST", "/api/v1/experiments", {"config": "name = 1"}),
            ("POST", "/api/v1/preview-hp-search", {"config": "name = 1"}),
            ("PATCH", f"/api/v1/experiments/{e}", {"resources": {"priority": 10}}),
            ("POST", f"/api/v1/experiments/{e}/kill", {}), ("POST", f"/api/v1/experiments/{e}/pause", {}),
            ("POST", f"/api/v1/experiments/{e}/activate", {}),
            ("GET", f"/api/v1/trials/{t}", None), ("GET", f"/api/v1/trials/{t}/metrics", None),
            ("GET", f"/api/v1/trials/{t}/logs", None), ("GET", f"/api/v1/experiments/{e}/checkpoints", None),
            ("GET", f"/api/v1/trials/{t}/checkpoints", None), ("GET", f"/api/v1/checkpoints/{u}", None),
            ("DELETE", f"/api/v1/checkpoints/{u}", None), ("GET", f"/api/v1/checkpoints/{u}/files/noise.txt", None),
            ("GET", "/api/v1/agents", None), ("POST", "/api/v1/agents/agent-0/disable", {}),
            ("POST", "/api/v1/agents/agent-0/slots/0/disable", {}), ("GET", "/api/v1/resource-pools", None),
            ("GET", "/api/v1/job-queues", None), ("GET", "/api/v1/me", None), ("GET", "/api/v1/users", None),
            ("POST", "/api/v1/users", {"username": "mallory", "password": PASSWORD}),
            ("PATCH", "/api/v1/users/alice", {"active": False}),
            ("POST", "/api/v1/users/alice/password", {"password": "x" * 12}),
            ("POST", "/api/v1/auth/logout", {}), ("POST", "/api/v1/tokens", {}), ("GET", "/api/v1/tokens", None),
            ("DELETE", "/api/v1/tokens/1", None),
        ]

    def test_1_every_route_needs_a_login(self):
        for method, path, body in self.routes():
            for token, sentence in ((None, "needs a login"), ("f" * 64, "not one this master issued")):
                code, error = self.cluster.status(method, path, body, token=token)
                self.assertEqual(code, 401, f"{method} {path} with token {token!r}: {error}")
                self.assertIn(sentence, error, f"{method} {path}")
        # A malformed header is named as such.
        req = urllib.request.Request(self.cluster.url + "/api/v1/experiments", headers={"Authorization": "Basic YWRtaW4="})
        with self.assertRaises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(req, timeout=30)
        self.assertEqual(caught.exception.code, 401)
        self.assertIn('must be \\"Bearer TOKEN\\"', caught.exception.read().decode())
        # The version alone is open; a user's token is no run token on Core API routes.
        self.assertEqual(self.cluster.status("GET", "/api/v1/master", token=None)[0], 200)
        self.assertEqual(self.cluster.status("POST", f"/api/v1/trials/{self.trial}/progress", {"progress": 0.5},
                                     token=self.alice)[0], 403)
        # Nothing the refused calls asked for happened.
        c = self.cluster
        self.assertEqual(c.get(f"/api/v1/experiments/{self.alices}")["experiment"]["state"], "STATE_ACTIVE")
        self.assertEqual(c.get(f"/api/v1/checkpoints/{self.checkpoint}")["checkpoint"]["state"], "CHECKPOINT_STATE_COMPLETED")
        self.assertNotIn("mallory", [u["username"] for u in c.get("/api/v1/users")["users"]])

    def test_2_writes_need_the_owner_or_an_admin(self):
        c, e = self.cluster, self.alices
        for method, path, body in [("PATCH", f"/api/v1/experiments/{e}", {"resources": {"priority": 10}}),
                                   ("POST", f"/api/v1/experiments/{e}/pause", {}),
                                   ("POST", f"/api/v1/experiments/{e}/kill", {}),
                                   ("DELETE", f"/api/v1/checkpoints/{self.checkpoint}", None)]:
            code, error = self.cluster.status(method, path, body, token=self.bob)
            self.assertEqual(code, 403, f"{method} {path}: {error}")
            self.assertIn("owner (alice) or an admin", error)
            self.assertIn("user bob is neither", error)
        for method, path, body in [("POST", "/api/v1/agents/agent-0/disable", {}),
                                   ("POST", "/api/v1/agents/agent-0/slots/0/enable", {}),
                                   ("POST", "/api/v1/users", {"username": "mallory", "password": PASSWORD}),
                                   ("PATCH", "/api/v1/users/alice", {"active": False}),
                                   ("POST", "/api/v1/users/alice/password", {"password": "x" * 12})]:
            code, error = self.cluster.status(method, path, body, token=self.bob)
            self.assertEqual(code, 403, f"{method} {path}: {error}")
            self.assertIn("needs an admin, and user bob is not one", error)
        self.assertEqual(c.get(f"/api/v1/experiments/{e}")["experiment"]["state"], "STATE_ACTIVE")
        self.assertTrue(all(s["enabled"] for a in c.get("/api/v1/agents")["agents"] for s in a["slots"]))
        # The owner may; so may an admin. Everyone logged in reads everything.
        self.assertEqual(self.cluster.status("PATCH", f"/api/v1/experiments/{e}", {"resources": {"priority": 10}}, token=self.alice)[0], 200)
        self.assertEqual(c.get(f"/api/v1/experiments/{e}", token=self.bob)["experiment"]["owner"], "alice")
        self.assertEqual(self.cluster.status("POST", f"/api/v1/experiments/{e}/pause", {})[0], 200)
        wait_for(lambda: c.get(f"/api/v1/experiments/{e}")["experiment"]["state"] == "STATE_PAUSED", 60, "the pause")
        self.assertEqual(self.cluster.status("POST", f"/api/v1/experiments/{e}/activate", {}, token=self.alice)[0], 200)
        self.assertEqual(c.get(f"/api/v1/trials/{self.trial}", token=self.bob)["trial"]["owner"], "alice")

    def test_3_sessions_end_by_logout_expiry_password_change_and_deactivation(self):
        c = self.cluster
        code, error = self.cluster.status("POST", "/api/v1/auth/login", {"username": "alice", "password": "wrong password"}, token=None)
        self.assertEqual((code, error), (401, 'unknown user or wrong password for "alice"'))
        self.assertEqual(self.cluster.status("POST", "/api/v1/auth/login", {"username": "nobody", "password": PASSWORD}, token=None)[0], 401)
        session = c.login("bob", PASSWORD)
        self.assertEqual(self.cluster.status("POST", "/api/v1/auth/logout", {}, token=session)[0], 200)
        code, error = self.cluster.status("GET", "/api/v1/me", token=session)
        self.assertEqual(code, 401)
        self.assertIn("revoked", error)
        short = c.post("/api/v1/tokens", {"lifespan_s": 1, "description": "short", "password": PASSWORD}, token=self.bob)["token"]
        self.assertEqual(c.get("/api/v1/me", token=short)["user"]["username"], "bob")
        time.sleep(1.5)
        code, error = self.cluster.status("GET", "/api/v1/me", token=short)
        self.assertEqual(code, 401)
        self.assertIn("expired", error)
        # A new password logs out bob's sessions and revokes his access tokens.
        session = c.login("bob", PASSWORD)
        lasting = c.post("/api/v1/tokens", {"description": "ci", "password": PASSWORD}, token=session)["token"]
        code, error = self.cluster.status("POST", "/api/v1/users/bob/password", {"password": PASSWORD + "!"}, token=session)
        self.assertEqual(code, 403)  # one's own password needs the current one
        self.assertIn("needs your current one", error)
        c.post("/api/v1/users/bob/password", {"password": PASSWORD + "!", "old_password": PASSWORD}, token=session)
        self.assertEqual(self.cluster.status("GET", "/api/v1/me", token=session)[0], 401)
        self.assertEqual(self.cluster.status("GET", "/api/v1/me", token=lasting)[0], 401)
        c.post("/api/v1/users/bob/password", {"password": PASSWORD})
        lasting = c.post("/api/v1/tokens", {"description": "ci", "password": PASSWORD}, token=c.login("bob", PASSWORD))["token"]
        code, error = self.cluster.status("POST", "/api/v1/auth/logout", {}, token=lasting)
        self.assertEqual(code, 400)  # an access token is revoked, not logged out
        self.assertIn("det token revoke", error)
        # A deactivated user's tokens stop working at once and it cannot log in.
        c.request("PATCH", "/api/v1/users/bob", {"active": False})
        code, error = self.cluster.status("GET", "/api/v1/me", token=lasting)
        self.assertEqual(code, 401)
        self.assertIn("deactivated", error)
        self.assertEqual(self.cluster.status("POST", "/api/v1/auth/login", {"username": "bob", "password": PASSWORD}, token=None)[0], 401)
        c.request("PATCH", "/api/v1/users/bob", {"active": True})
        self.assertEqual(c.get("/api/v1/me", token=lasting)["user"]["username"], "bob")
        # An admin lists everyone's access tokens (bob's included), never the tokens themselves.
        tokens = c.get("/api/v1/tokens")["tokens"]
        self.assertIn(("bob", "ci"), [(t["username"], t["description"]) for t in tokens])
        self.assertNotIn(lasting, json.dumps(tokens))

    def test_3b_failed_logins_make_their_address_wait(self):
        c = self.cluster
        c.post("/api/v1/users", {"username": "dave", "password": PASSWORD})
        for _ in range(5):
            self.assertEqual(c.status("POST", "/api/v1/auth/login", {"username": "dave", "password": "guess"}, token=None)[0], 401)
        code, error = c.status("POST", "/api/v1/auth/login", {"username": "dave", "password": PASSWORD}, token=None)
        self.assertEqual(code, 429)  # even the right password waits: guessing it costs time
        self.assertIn('too many failed logins as "dave"', error)
        # other users log in as before
        self.assertEqual(c.status("POST", "/api/v1/auth/login", {"username": "alice", "password": PASSWORD}, token=None)[0], 200)
        # A wrong current password in a password change counts as a failed login: a stolen session
        # cannot guess it faster than a login could.
        c.post("/api/v1/users", {"username": "erin", "password": PASSWORD})
        erin = c.login("erin", PASSWORD)
        change = {"old_password": "guess", "password": "another long password"}
        for _ in range(5):
            self.assertEqual(c.status("POST", "/api/v1/users/erin/password", change, token=erin)[0], 403)
        code, error = c.status("POST", "/api/v1/users/erin/password", dict(change, old_password=PASSWORD), token=erin)
        self.assertEqual(code, 429)
        self.assertIn('too many failed logins as "erin"', error)

    def test_4_bad_names_and_passwords_are_refused_and_nothing_is_stored(self):
        c = self.cluster
        before = c.get("/api/v1/users")["users"]
        for body, sentence in [({"username": "1234", "password": PASSWORD}, "may not be all digits"),
                               ({"username": "alice", "password": PASSWORD}, "the user name alice is taken"),
                               ({"username": "carol", "password": "short"}, "at least 8 characters"),
                               ({"username": "ca rol", "password": PASSWORD}, "only letters, digits")]:
            code, error = self.cluster.status("POST", "/api/v1/users", body)
            self.assertEqual(code, 400, error)
            self.assertIn(sentence, error)
        self.assertEqual(c.get("/api/v1/users")["users"], before)

    def test_5_cli_logs_in_keeps_a_private_session_and_manages_tokens(self):
        c = self.cluster
        env = dict(os.environ, HOME=c.root, DET_PASS=PASSWORD)
        env.pop("DET_USER_TOKEN", None)
        det = lambda *args: subprocess.run([os.path.join(BIN, "det"), "-m", c.url] + list(args), env=env,
                                           capture_output=True, text=True, timeout=60)
        out = det("user", "login", "alice")
        self.assertEqual(out.returncode, 0, out.stderr)
        store = os.path.join(c.root, ".config", "det", "auth.json")
        self.assertEqual(stat.S_IMODE(os.stat(store).st_mode), 0o600)
        self.assertIn("You are logged in as user alice", det("user", "whoami").stdout)
        admins = c.submit(simulated_config("admins", 10))
        alices = json.loads(det("experiment", "list", "--user", "alice", "--json").stdout)["experiments"]
        self.assertEqual([int(e["id"]) for e in alices], [self.alices])
        self.assertIn(admins, [int(e["id"]) for e in json.loads(det("experiment", "list", "--json").stdout)["experiments"]])
        c.post(f"/api/v1/experiments/{admins}/kill", {})
        created = det("token", "create", "--lifespan", "1h", "--description", "nightly")
        self.assertEqual(created.returncode, 0, created.stderr)
        token = created.stdout.strip()
        self.assertEqual(c.get("/api/v1/me", token=token)["user"]["username"], "alice")
        token_id = next(t["id"] for t in c.get("/api/v1/tokens", token=token)["tokens"] if t["description"] == "nightly")
        self.assertEqual(det("token", "revoke", str(token_id)).returncode, 0)
        self.assertEqual(self.cluster.status("GET", "/api/v1/me", token=token)[0], 401)
        users = det("user", "list")
        self.assertIn("bob", users.stdout)
        refused = det("user", "create", "mallory")
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("needs an admin", refused.stderr)
        self.assertEqual(det("user", "logout").returncode, 0)
        out = det("user", "whoami")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("needs a login", out.stderr)
        # An admin creates a user whose password comes on stdin, as a script would give it.
        created = c.det("user", "create", "carol", input=PASSWORD + "\n")
        self.assertEqual(created.returncode, 0, created.stderr)
        self.assertEqual(c.get("/api/v1/me", token=c.login("carol", PASSWORD))["user"]["username"], "carol")

    def test_6_secrets_on_disk_are_private(self):
        c = self.cluster
        for name in ("admin-password", "agent-token"):
            self.assertEqual(stat.S_IMODE(os.stat(os.path.join(c.data_dir, name)).st_mode), 0o600, name)

    def test_7_agents_need_the_agent_token(self):
        c = self.cluster
        bad = os.path.join(c.root, "wrong-token")
        with open(bad, "w") as f:
            f.write("0" * 64 + "\n")
        out = subprocess.run([os.path.join(BIN, "det-node"), "--role=agent", f"--master=127.0.0.1:{c.port}",
                              "--id=stray", f"--agent-token-file={bad}"], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 1)
        self.assertIn("wrong agent token", out.stderr)
        self.assertEqual([a["id"] for a in c.get("/api/v1/agents")["agents"]], ["agent-0"])

    def test_8_a_rogue_peer_changes_nothing(self):
        c = self.cluster
        trial = c.get(f"/api/v1/trials/{self.trial}")["trial"]
        agent = c.agent_of(self.trial)
        self.assertIsNotNone(agent)
        out = subprocess.run([os.path.join(BIN, "det-rogue-peer"), "127.0.0.1", str(c.port), str(self.trial), agent[1]],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = dict(l.split(": ", 1) for l in out.stdout.strip().splitlines())
        self.assertIn("presented no agent token", lines["agent without a token"])
        self.assertIn("presented a wrong agent token", lines["agent with a wrong token"])
        self.assertIn("allocation token is not the one of run", lines["forged worker hello"])
        self.assertIn("refused", lines["REPL question with a made-up token"])
        # A malformed message is dropped: the master is still there to refuse the same question.
        self.assertEqual(lines["REPL question after a malformed message"], lines["REPL question with a made-up token"])
        self.assertEqual(lines["directory registration"], "sent")
        self.assertEqual(lines["exit"], "sent")
        # The master is as it was: one agent, the trial's run unchanged, no "rogue" actor.
        self.assertEqual([a["id"] for a in c.get("/api/v1/agents")["agents"]], ["agent-0"])
        after = c.get(f"/api/v1/trials/{self.trial}")["trial"]
        self.assertEqual((after["state"], after.get("runs")), (trial["state"], trial.get("runs")))
        actors = c.det("repl", "-c", "actors")  # through the front gate: it took no exit
        self.assertEqual(actors.returncode, 0, actors.stderr)
        self.assertIn("agent", actors.stdout)
        self.assertNotIn("rogue", actors.stdout)
        # The REPL asks for an admin: bob is refused before anything is answered.
        refused = c.det("repl", "-c", "actors", token=c.login("bob", PASSWORD))
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("needs an admin", refused.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
