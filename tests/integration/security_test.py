#!/usr/bin/env python3
"""Attacks on a shared cluster, as a user without admin rights would run them, each against the
master's state (does it still answer, what did it store, what did it send): configs built to
exhaust the master, paths built to exhaust its router, bodies sent before logging in, and
checkpoints that lead into the master's data directory."""

import concurrent.futures
import http.client
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from cluster import BIN, Cluster, parse_time, simulated_config, wait_for  # noqa: E402

ATTACKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "attacks")


def resident_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return 0


class TwoUsersCluster(unittest.TestCase):
    """A cluster of its own for the class, with mallory (the attacker) and alice, neither an admin."""

    MASTER_CONFIG = None
    AGENT_ARGS = ()  # more det-node --role=agent flags, e.g. --tensorboard=PROGRAM
    PASSWORD = "mallory-password-1"

    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(agents=1, slots="cpu:2", master_config=cls.MASTER_CONFIG, agent_args=cls.AGENT_ARGS).start()
        c = cls.cluster
        cls.mallory = c.add_user("mallory", cls.PASSWORD)
        cls.alice = c.add_user("alice", "alice-password-12")

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()


class SecurityTest(TwoUsersCluster):
    def assert_master_serves(self):
        c = self.cluster
        self.assertIsNone(c.master.poll(), c.log("master"))
        self.assertEqual(c.status("GET", "/api/v1/master")[0], 200)

    def test_a_yaml_number_of_200000_digits_is_a_400_not_a_crash(self):
        c = self.cluster
        config = "name: x\nentrypoint: builtin:simulate\nmax_restarts: " + "9" * 200000 + "\nsearcher:\n  name: single\n"
        status, sentence = c.status("POST", "/api/v1/preview-hp-search", {"config": config, "config_path": "exp.yaml"},
                                    token=self.mallory)
        self.assertEqual(status, 400, sentence)
        self.assertIn("exp.yaml", sentence)
        # Under the document limit, a scalar of 60,000 digits still parses without recursion.
        config = config.replace("9" * 200000, "9" * 60000)
        status, sentence = c.status("POST", "/api/v1/preview-hp-search", {"config": config, "config_path": "exp.yaml"},
                                    token=self.mallory)
        self.assertEqual(status, 400, sentence)
        self.assert_master_serves()

    def test_a_grid_of_billions_of_trials_is_a_400_before_anything_is_built(self):
        c = self.cluster
        config = """
name = "grid"
entrypoint = "builtin:simulate"
[hyperparameters]
a = { type = "double", minval = 0.0, maxval = 1.0, count = 4000000000 }
b = { type = "double", minval = 0.0, maxval = 1.0, count = 4000000000 }
[searcher]
name = "grid"
metric = "loss"
max_length = { batches = 1 }
"""
        before = resident_mib(c.master.pid)
        started = time.monotonic()
        for route in ("/api/v1/preview-hp-search", "/api/v1/experiments"):
            status, sentence = c.status("POST", route, {"config": config, "config_path": "grid.toml"}, token=self.mallory)
            self.assertEqual(status, 400, sentence)
            self.assertIn("max_grid_trials", sentence)
        self.assertLess(time.monotonic() - started, 5)
        self.assertLess(resident_mib(c.master.pid) - before, 100)  # it once grew by 16 GB in 20 s
        self.assert_master_serves()

    def test_a_path_of_a_million_digits_does_not_exhaust_the_router(self):
        c = self.cluster
        with socket.create_connection(("127.0.0.1", c.http_port), timeout=30) as s:
            try:  # the master drops the connection once the header passes 16 KiB, often mid-send
                s.sendall(b"GET /api/v1/trials/" + b"7" * 1_000_000 + b"/logs HTTP/1.1\r\nHost: x\r\n\r\n")
                s.recv(100)
            except OSError:
                pass
        # Within the header limit, a long id reaches the router, which matches it in one pass
        # (std::regex recursed a frame a character) and the route answers it.
        status, _ = c.status("GET", "/api/v1/trials/" + "7" * 12000 + "/logs", token=self.mallory)
        self.assertLess(status, 500)
        self.assert_master_serves()

    def test_a_body_before_logging_in_is_at_most_64_kib(self):
        c = self.cluster
        status, sentence = c.status("POST", "/api/v1/auth/login",
                                    {"username": "mallory", "password": "x" * (100 << 10)}, token=None)
        self.assertEqual(status, 413, sentence)
        self.assertIn("64 KiB", sentence)
        # Logged in, the same size is an ordinary request.
        status, sentence = c.status("POST", "/api/v1/preview-hp-search",
                                    {"config": "#" + "x" * (100 << 10) + "\nname = \"x\"", "config_path": "exp.toml"},
                                    token=self.mallory)
        self.assertEqual(status, 400, sentence)
        self.assert_master_serves()

    def test_a_large_body_on_a_trials_path_needs_its_run_token_or_a_login(self):
        # The check before such a body asks the trial, then the accounts actor, holding no handler
        # thread: made-up tokens sent together are all refused, and the master goes on answering.
        c = self.cluster
        body = {"steps_completed": 1, "metrics": {"loss": 0.5}, "padding": "x" * (100 << 10)}

        def post(i):
            return c.status("POST", "/api/v1/trials/1/metrics", body, token=None if i % 2 else f"made-up-{i}")

        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(post, range(48)))
        for status, sentence in answers:
            self.assertEqual(status, 413, sentence)
            self.assertIn("64 KiB", sentence)
        self.assert_master_serves()

    def test_large_bodies_in_flight_are_held_to_a_total(self):
        # Mallory starts uploads of 150 MiB each and sends them slowly: the master reserves room for
        # three (480 MiB in all) and answers a fourth with 503 at once, before reading it.
        c = self.cluster
        head = (f"POST /api/v1/experiments HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {self.mallory}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {150 << 20}\r\n\r\n{{").encode()
        uploads = []
        try:
            for _ in range(3):
                s = socket.create_connection(("127.0.0.1", c.http_port), timeout=10)
                s.sendall(head)
                uploads.append(s)
            time.sleep(1)  # each one's header read and its room reserved
            refused = socket.create_connection(("127.0.0.1", c.http_port), timeout=10)
            uploads.append(refused)
            refused.sendall(head)
            answer = refused.recv(4096).decode(errors="replace")
            self.assertTrue(answer.startswith("HTTP/1.1 503"), answer)
            self.assertIn("MiB of request bodies already", answer)
            self.assert_master_serves()
        finally:
            for s in uploads:
                s.close()
        # Given back when those connections end: a large body is read again.
        def accepted():
            s = socket.create_connection(("127.0.0.1", c.http_port), timeout=10)
            try:
                s.sendall(head)
                s.settimeout(1)
                try:
                    s.recv(4096)  # a 503, or the connection closed
                    return False
                except socket.timeout:
                    return True  # waiting for the body: nothing said
            finally:
                s.close()
        wait_for(accepted, 10, "the reserved room to be given back")

    def test_a_trials_report_past_64_kib_is_read_with_its_run_token(self):
        c = self.cluster
        path = os.path.join(c.root, "large-report.toml")
        with open(path, "w") as f:
            f.write('name = "large-report"\nentrypoint = "python3 large_report.py"\n'
                    '[searcher]\nname = "single"\nmetric = "loss"\nmax_length = { batches = 1 }\n')
        out = c.det("experiment", "create", path, ATTACKS, token=self.mallory)
        self.assertEqual(out.returncode, 0, out.stderr)
        exp = c.wait_experiment(int(out.stdout.split()[-1]), {"STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"},
                                timeout=120)
        trial = exp["trials"][0]
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED", c.trial_logs(trial["id"])[-10:])
        reports = c.get(f"/api/v1/trials/{trial['id']}/metrics?group=training")["metrics"]
        self.assertEqual(reports[0]["metrics"]["metric_04999"], 4999.0)

    def run_attack(self, name, script, hyperparameters):
        """Mallory's single-trial experiment of attacks/`script` with `hyperparameters` (TOML lines),
        run to its end; returns the experiment."""
        c = self.cluster
        config = f"""
name = "{name}"
entrypoint = "python3 {script}"
[hyperparameters]
{hyperparameters}
[searcher]
name = "single"
metric = "loss"
max_length = {{ batches = 1 }}
"""
        path = os.path.join(c.root, f"{name}.toml")
        with open(path, "w") as f:
            f.write(config)
        out = c.det("experiment", "create", path, ATTACKS, token=self.mallory)
        self.assertEqual(out.returncode, 0, out.stderr)
        return c.wait_experiment(int(out.stdout.split()[-1]), {"STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"},
                                 timeout=120)

    def run_thief(self, mode):
        """Mallory's trial records a checkpoint of `mode`; returns (its log line, the experiment)."""
        c = self.cluster
        exp = self.run_attack(f"thief-{mode}", "steal_through_checkpoint.py",
                              f'target = "{os.path.join(c.data_dir, "agent-token")}"\nmode = "{mode}"')
        trial = exp["trials"][0]
        line = wait_for(lambda: next((l for l in c.trial_logs(trial["id"]) if l.startswith(("RECORDED", "REFUSED"))),
                                     None), 30, "the thief's report")
        return line, exp

    def test_a_checkpoint_cannot_lead_a_download_into_the_masters_data(self):
        c = self.cluster
        secret = c.read_data_file("agent-token")
        for mode in ("file-link", "dir-link"):
            line, _ = self.run_thief(mode)
            self.assertTrue(line.startswith("RECORDED"), line)  # names are fine; the files are links
            recorded = json.loads(line.split(" ", 1)[1])
            url = f"{c.url}/api/v1/checkpoints/{recorded['uuid']}/files/{recorded['file']}"
            request = urllib.request.Request(url, headers={"Authorization": f"Bearer {self.alice}"})
            with self.assertRaises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=30).read()
            self.assertIn(refused.exception.code, (403, 404), mode)
            self.assertNotIn(secret, refused.exception.read().decode(errors="replace"))
        line, _ = self.run_thief("climbing-uuid")
        self.assertTrue(line.startswith("REFUSED"), line)
        self.assertIn("UUID", line)
        self.assert_master_serves()

    def test_the_master_writes_no_event_file_through_a_planted_link(self):
        c = self.cluster
        exp = self.run_attack("event-link", "plant_event_link.py", f'target = "{c.data_dir}"')
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED")
        self.assertIn("PLANTED", c.trial_logs(exp["trials"][0]["id"]))
        self.assertEqual([f for f in os.listdir(c.data_dir) if f.startswith("events.out.tfevents")], [])
        self.assert_master_serves()

    def test_the_cli_downloads_no_file_a_stored_name_would_put_outside_its_directory(self):
        # A row stored before names were checked (or by a master that passes one on) names a file
        # that climbs out of the directory `det checkpoint download` writes to.
        if not shutil.which("psql"):
            self.skipTest("psql is not installed")
        c = self.cluster
        exp = c.submit(simulated_config("climbing-name", 10, seconds_per_batch=0.001, checkpoint_period=10))
        exp_state = c.wait_experiment(exp, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=120)
        self.assertEqual(exp_state["experiment"]["state"], "STATE_COMPLETED")
        uuid = c.get(f"/api/v1/experiments/{exp}/checkpoints")["checkpoints"][0]["uuid"]
        edit = self.psql(passfile=os.path.join(c.data_dir, "postgres-password"),
                         sql=f"""UPDATE checkpoints SET resources = '{{"../escaped": 8}}' WHERE uuid = '{uuid}'""")
        self.assertEqual(edit.returncode, 0, edit.stderr)
        with tempfile.TemporaryDirectory() as where:
            out = c.det("checkpoint", "download", uuid, "-o", os.path.join(where, "inside"))
            self.assertEqual(out.returncode, 1, out.stdout)
            self.assertIn('names a file "../escaped" that is not a plain relative path', out.stderr)
            self.assertFalse(os.path.exists(os.path.join(where, "escaped")))

    # -- Host access: the policy in master.toml's [security], checked by the master at submission --

    def reaching_experiment(self, name, extra):
        return f"""
name = "{name}"
entrypoint = "python3 train.py"
[searcher]
name = "single"
metric = "loss"
max_length = {{ batches = 1 }}
{extra}"""

    def refused_everywhere(self, name, extra, command_extra=None):
        """Mallory submits `extra` in an experiment and a command; both are refused (403) and neither
        exists afterwards. Returns the experiment's sentence."""
        c = self.cluster
        status, sentence = c.status("POST", "/api/v1/experiments",
                                    {"config": self.reaching_experiment(name, extra), "config_path": f"{name}.toml"},
                                    token=self.mallory)
        self.assertEqual(status, 403, sentence)
        command = f'description = "{name}"\nentrypoint = "true"\n' + (command_extra or extra)
        status, command_sentence = c.status("POST", "/api/v1/commands",
                                            {"config": command, "config_path": f"{name}-cmd.toml"}, token=self.mallory)
        self.assertEqual(status, 403, command_sentence)
        experiments = c.get("/api/v1/experiments?limit=1000", token=self.mallory).get("experiments", [])
        self.assertNotIn(name, [e["name"] for e in experiments])
        commands = c.get("/api/v1/commands", token=self.mallory).get("commands", [])
        self.assertNotIn(name, [t.get("description") for t in commands])
        return sentence

    def test_a_bind_mount_of_the_masters_data_is_refused(self):
        c = self.cluster
        mount = f'[[bind_mounts]]\nhost_path = "{c.data_dir}"\ncontainer_path = "/mnt/master"\n'
        sentence = self.refused_everywhere("reach-data", mount)
        self.assertIn(f"bind_mounts[0].host_path {c.data_dir} is outside the host paths this master allows", sentence)
        self.assertIn("security.allowed_host_paths in master.toml", sentence)
        # Nor by climbing out of the checkpoint storage root, which mounts may name.
        climbing = os.path.join(c.data_dir, "checkpoints", "..")
        self.refused_everywhere("reach-climbing", mount.replace(c.data_dir, climbing))
        sentence = self.refused_everywhere("reach-storage", f'[checkpoint_storage]\nhost_path = "{c.data_dir}"\n',
                                           command_extra=mount)
        self.assertIn(f"checkpoint_storage.host_path {c.data_dir} is outside", sentence)
        # Beneath the storage root, a mount is an ordinary config.
        inside = mount.replace(c.data_dir, os.path.join(c.data_dir, "checkpoints", "datasets"))
        status, reply = c.status("POST", "/api/v1/experiments",
                                 {"config": self.reaching_experiment("inside", inside), "config_path": "inside.toml",
                                  "validate_only": True}, token=self.mallory)
        self.assertEqual(status, 200, reply)
        self.assert_master_serves()

    def test_adding_sys_admin_is_refused(self):
        for spelling in ("SYS_ADMIN", "CAP_SYS_ADMIN", "all"):
            with self.subTest(spelling):
                sentence = self.refused_everywhere(f"reach-{spelling.lower()}",
                                                   f'[environment]\nadd_capabilities = ["{spelling}"]\n')
                self.assertIn(f"environment.add_capabilities[0] {spelling} is not a capability this master lets "
                              "users add (security.allowed_capabilities in master.toml)", sentence)
        self.assert_master_serves()

    # -- The embedded PostgreSQL: a password, kept where only the master reads it -------------------

    def psql(self, *, passfile=None, as_user=None, sql="SELECT 1"):
        """`sql` run by psql on the master's database over its socket, with libpq's password file
        `passfile` or no password at all, as this user or as `as_user`."""
        c = self.cluster
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["PGPASSFILE"] = passfile or "/dev/null"
        argv = ["psql", "-w", "-h", os.path.join(c.data_dir, "run"), "-p", "5432", "-U", "postgres", "-d", "det",
                "-c", sql]
        if as_user:
            argv = ["runuser", "-u", as_user, "--"] + argv
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30, cwd="/")

    def test_the_embedded_database_wants_its_password(self):
        if not shutil.which("psql"):
            self.skipTest("psql is not installed")
        c = self.cluster
        without = self.psql()
        self.assertNotEqual(without.returncode, 0, without.stdout)
        password_file = os.path.join(c.data_dir, "postgres-password")
        with_password = self.psql(passfile=password_file)
        self.assertEqual(with_password.returncode, 0, with_password.stderr)
        if os.geteuid() == 0 and shutil.which("runuser"):
            as_nobody = self.psql(as_user="nobody")
            self.assertNotEqual(as_nobody.returncode, 0, as_nobody.stdout)
        self.assertEqual(stat.S_IMODE(os.stat(password_file).st_mode), 0o600)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(c.data_dir, "run")).st_mode), 0o700)
        # Group execute alone may be the ACL mask that lets the `postgres` user, and no one else, through;
        # others may only pass through to the default checkpoint root (trials run as their owners' users).
        self.assertEqual(stat.S_IMODE(os.stat(c.data_dir).st_mode) & 0o066, 0)
        self.assert_master_serves()


def open_stream(c, token, source="127.0.0.1"):
    """An open GET /api/v1/stream of `token`'s user: (connection, response)."""
    conn = http.client.HTTPConnection("127.0.0.1", c.http_port, timeout=30, source_address=(source, 0))
    conn.request("GET", "/api/v1/stream", headers={"Authorization": f"Bearer {token}"})
    return conn, conn.getresponse()


def login_from(c, source, username, password):
    """(status, the error's sentence or the reply) of a login sent from the local address `source`
    (any of 127.0.0.0/8)."""
    conn = http.client.HTTPConnection("127.0.0.1", c.http_port, timeout=30, source_address=(source, 0))
    try:
        conn.request("POST", "/api/v1/auth/login", json.dumps({"username": username, "password": password}),
                     {"Content-Type": "application/json"})
        response = conn.getresponse()
        reply = json.loads(response.read() or b"{}")
        return response.status, reply.get("error", reply)
    finally:
        conn.close()


class TokenAndStreamTest(TwoUsersCluster):
    """Tokens, logins and event streams, attacked by users without admin rights: a stolen session or
    a task's DET_USER_TOKEN made into a lasting token, tokens that outlive a password change,
    a task kept from its idle_timeout by strangers, guesses spread over addresses, and streams
    without end."""

    MASTER_CONFIG = '[security]\nmax_token_lifespan = "2d"\n'

    def test_b_a_session_alone_cannot_mint_a_lasting_token(self):
        c = self.cluster
        code, sentence = c.status("POST", "/api/v1/tokens", {"description": "stolen"}, token=self.mallory)
        self.assertEqual(code, 403, sentence)
        self.assertIn("needs the password of user mallory again", sentence)
        code, sentence = c.status("POST", "/api/v1/tokens", {"description": "stolen", "password": "a guess"},
                                  token=self.mallory)
        self.assertEqual(code, 403, sentence)
        self.assertNotIn("stolen", [t["description"] for t in c.get("/api/v1/tokens")["tokens"]])
        created = c.post("/api/v1/tokens", {"description": "ci", "password": self.PASSWORD}, token=self.mallory)
        self.assertEqual(c.get("/api/v1/me", token=created["token"])["user"]["username"], "mallory")
        # An admin needs no password; det token create asks a user for it (DET_PASS in scripts).
        self.assertEqual(c.status("POST", "/api/v1/tokens", {"description": "admin's"})[0], 200)
        env = dict(os.environ, HOME=c.root, DET_USER_TOKEN=self.mallory, DET_PASS=self.PASSWORD)
        out = subprocess.run([os.path.join(BIN, "det"), "-m", c.url, "token", "create", "--lifespan", "1h"], env=env,
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(c.get("/api/v1/me", token=out.stdout.strip())["user"]["username"], "mallory")

    def test_b_a_token_lasts_at_most_security_max_token_lifespan(self):
        c = self.cluster
        ten_years = {"description": "for ever", "lifespan_s": 10 * 365 * 86400, "password": self.PASSWORD}
        for token in (self.mallory, c.token):
            code, sentence = c.status("POST", "/api/v1/tokens", ten_years, token=token)
            self.assertEqual(code, 400, sentence)
            self.assertIn("at most 2d (security.max_token_lifespan in master.toml)", sentence)
        self.assertNotIn("for ever", [t["description"] for t in c.get("/api/v1/tokens")["tokens"]])
        # Without a lifespan, the default (30 days) is cut to the cap.
        info = c.post("/api/v1/tokens", {"description": "default", "password": self.PASSWORD}, token=self.mallory)["info"]
        lasts = parse_time(info["expires_at"]) - parse_time(info["created_at"])
        self.assertAlmostEqual(lasts, 2 * 86400, delta=5)

    def test_c_a_tasks_token_cannot_create_tokens_or_users_and_ends_with_its_task(self):
        c = self.cluster
        # An admin's command: whoever reads its environment holds its DET_USER_TOKEN.
        script = "import os, time\nprint('TOKEN=' + os.environ['DET_USER_TOKEN'], flush=True)\ntime.sleep(600)\n"
        out = c.det("cmd", "run", "-d", "--", "/usr/bin/python3", "-c", script)
        self.assertEqual(out.returncode, 0, out.stderr)
        task_id = out.stdout.strip().splitlines()[-1]
        stolen = wait_for(lambda: next((l[len("TOKEN="):] for l in self.task_logs(task_id) if l.startswith("TOKEN=")),
                                       None), 60, "the command's token in its log")
        self.assertEqual(c.get("/api/v1/me", token=stolen)["user"]["username"], "admin")  # it acts for its owner
        for path, body in [("/api/v1/tokens", {"description": "kept", "password": c.admin_password}),
                           ("/api/v1/users", {"username": "intruder", "password": "intruder-password", "admin": True}),
                           ("/api/v1/users/alice/password", {"password": "taken-over-password"})]:
            code, sentence = c.status("POST", path, body, token=stolen)
            self.assertEqual(code, 403, f"{path}: {sentence}")
            self.assertIn("not a task's token (DET_USER_TOKEN)", sentence)
        self.assertNotIn("intruder", [u["username"] for u in c.get("/api/v1/users")["users"]])
        self.assertNotIn("kept", [t["description"] for t in c.get("/api/v1/tokens")["tokens"]])
        # Nor revoke its owner's logins.
        logins = [t["id"] for t in c.get("/api/v1/tokens")["tokens"] if t["kind"] != "TOKEN_KIND_TASK"]
        self.assertTrue(logins)
        for login in logins:
            code, sentence = c.status("DELETE", f"/api/v1/tokens/{login}", None, token=stolen)
            self.assertEqual(code, 403, sentence)
        self.assertEqual(c.status("GET", "/api/v1/me")[0], 200)
        self.assertEqual(c.status("POST", "/api/v1/auth/login", {"username": "alice", "password": "alice-password-12"},
                                  token=None)[0], 200)
        kinds = [t["kind"] for t in c.get("/api/v1/tokens")["tokens"] if t["description"] == f"the token of task {task_id}"]
        self.assertEqual(kinds, ["TOKEN_KIND_TASK"])
        # It ends with its task, within a second of it.
        self.assertEqual(c.det("cmd", "kill", task_id).returncode, 0)
        wait_for(lambda: c.get(f"/api/v1/commands/{task_id}")["command"]["state"] == "TASK_STATE_TERMINATED", 60,
                 "the command to end")
        wait_for(lambda: c.status("GET", "/api/v1/me", token=stolen)[0] == 401, 3, "its token to stop working")

    def task_logs(self, task_id):
        logs = self.cluster.get(f"/api/v1/tasks/{task_id}/logs?limit=100000")["logs"]
        return [e["text"].rstrip("\n") for e in logs if e["stream"] == "stdout"]

    def test_d_a_password_change_ends_every_session_and_token(self):
        c = self.cluster
        c.post("/api/v1/users", {"username": "pat", "password": "pat-password-12"})
        session = c.login("pat", "pat-password-12")
        token = c.post("/api/v1/tokens", {"description": "pat's", "password": "pat-password-12"}, token=session)["token"]
        other_session = c.login("pat", "pat-password-12")
        c.post("/api/v1/users/pat/password", {"password": "pat-password-13", "old_password": "pat-password-12"},
               token=session)
        for old in (session, token, other_session):
            self.assertEqual(c.status("GET", "/api/v1/me", token=old)[0], 401)
        tokens = [t for t in c.get("/api/v1/tokens")["tokens"] if t["description"] == "pat's"]
        self.assertTrue(tokens[0]["revoked"])
        self.assertEqual(c.get("/api/v1/me", token=c.login("pat", "pat-password-13"))["user"]["username"], "pat")

    def test_e_requests_a_stranger_sends_do_not_keep_a_task_from_its_idle_timeout(self):
        c = self.cluster
        out = c.det("notebook", "start", "-c", "idle_timeout=4", timeout=180, token=self.mallory)
        self.assertEqual(out.returncode, 0, out.stderr + c.log("agent-0"))
        task_id = out.stdout.strip().splitlines()[-1].split("/proxy/")[1].split("/")[0]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            # On the proxy's listener, with nothing or alice's session; and a ticket alice asks for.
            for token in (None, self.alice):
                request = urllib.request.Request(f"{c.proxy_origin(task_id)}/proxy/{task_id}/api", headers=(
                    {"Authorization": f"Bearer {token}"} if token else {}))
                with self.assertRaises(urllib.error.HTTPError) as refused:
                    urllib.request.urlopen(request, timeout=30)
                self.assertIn(refused.exception.code, (401, 403, 404))
            self.assertIn(c.status("POST", f"/api/v1/tasks/{task_id}/proxy_ticket", {}, token=self.alice)[0], (403, 404))
            time.sleep(0.5)
        notebook = c.get(f"/api/v1/notebooks/{task_id}")["notebook"]
        self.assertEqual(notebook["state"], "TASK_STATE_TERMINATED")
        self.assertIn("without use", notebook["exit_reason"])

    def test_f_the_admin_password_is_only_in_its_file(self):
        c = self.cluster
        with open(os.path.join(c.root, "master.log"), errors="replace") as f:
            self.assertNotIn(c.admin_password, f.read())
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(c.data_dir, "admin-password")).st_mode), 0o600)

    def test_g_guesses_spread_over_addresses_make_the_account_wait(self):
        c = self.cluster
        c.post("/api/v1/users", {"username": "frank", "password": "frank-password-12"})
        self.assertEqual(login_from(c, "127.0.0.8", "frank", "frank-password-12")[0], 200)  # frank's own machine
        # Four guesses from each of five addresses: no address reaches its own limit (5).
        for address in range(2, 7):
            for _ in range(4):
                self.assertEqual(login_from(c, f"127.0.0.{address}", "frank", "a guess")[0], 401)
        code, sentence = login_from(c, "127.0.0.7", "frank", "frank-password-12")
        self.assertEqual(code, 429, sentence)
        self.assertIn('too many failed logins as "frank" from all addresses together', sentence)
        self.assertEqual(login_from(c, "127.0.0.7", "alice", "alice-password-12")[0], 200)  # other users as before
        # The strangers' guesses do not lock frank out of the machine he logs in from.
        self.assertEqual(login_from(c, "127.0.0.8", "frank", "frank-password-12")[0], 200)

    def test_h_a_user_holds_at_most_16_streams_and_they_end_with_the_token(self):
        c = self.cluster
        c.post("/api/v1/users", {"username": "sam", "password": "sam-password-12"})
        session, other_session = c.login("sam", "sam-password-12"), c.login("sam", "sam-password-12")
        streams = [open_stream(c, session) for _ in range(16)]
        try:
            for _, response in streams:
                self.assertEqual(response.status, 200)
                self.assertEqual(json.loads(response.readline())["type"], "hello")
            for token in (session, other_session):  # the quota is the user's, not the token's
                conn, response = open_stream(c, token)
                self.assertEqual(response.status, 429)
                self.assertIn("16 event streams", json.loads(response.read())["error"])
                conn.close()
            conn, response = open_stream(c, self.alice)  # other users are not affected
            self.assertEqual(response.status, 200)
            conn.close()
            # A logout revokes the session: its streams end within a second, and their slots are free.
            c.post("/api/v1/auth/logout", {}, token=session)
            revoked = time.monotonic()
            for _, response in streams:
                while response.readline():
                    pass
            self.assertLess(time.monotonic() - revoked, 1.5)
            conn, response = open_stream(c, other_session)
            self.assertEqual(response.status, 200)
            conn.close()
        finally:
            for conn, _ in streams:
                conn.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
