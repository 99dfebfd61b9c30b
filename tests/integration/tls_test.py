#!/usr/bin/env python3
"""TLS on a real cluster, with certificates made for it at run time: the master serves HTTPS and
TLS actor links; an agent shows a certificate the master's CA signed and checks the master's; a
trial (a C++ builtin and a Core API script) runs end to end; plain-text clients, peers without a
certificate the CA signed, and half-given settings are refused, and the master is unchanged."""

import http.client
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import BIN, Cluster, simulated_config  # noqa: E402

EXAMPLE = os.path.join(os.path.dirname(__file__), "../../examples/core-api")
ENDED = {"STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"}


class TlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(agents=1, slots="cpu:2", tls=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def rogue_peer(self, env):
        """det-rogue-peer against the actor port with `env` for its TLS variables."""
        c = self.cluster
        env = {k: v for k, v in os.environ.items() if not k.startswith("DET_")} | env
        return subprocess.run([os.path.join(BIN, "det-rogue-peer"), "127.0.0.1", str(c.port), "1", "1.0"],
                              capture_output=True, text=True, timeout=60, env=env)

    def test_a_trial_runs_end_to_end(self):
        c = self.cluster
        path = os.path.join(c.root, "sim.toml")
        with open(path, "w") as f:
            f.write(simulated_config("over-tls", 200, seconds_per_batch=0.005))
        out = c.det("submit", path)
        self.assertEqual(out.returncode, 0, out.stderr)
        exp_id = int(out.stdout.split()[-1])
        try:
            waited = c.det("experiment", "wait", str(exp_id), timeout=300)
        except subprocess.TimeoutExpired:
            self.fail(f"experiment {exp_id} did not end: {c.experiment(exp_id)}\n" + c.log("master") + c.log("agent-0"))
        self.assertEqual(waited.returncode, 0, waited.stderr + c.log("agent-0"))
        exp = c.experiment(exp_id)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED")
        trial = exp["trials"][0]
        self.assertEqual(int(trial["total_batches"]), 200)
        self.assertTrue(trial["latest_checkpoint_uuid"])
        self.assertEqual(len(c.get(f"/api/v1/trials/{trial['id']}/metrics?group=validation")["metrics"]), 4)
        self.assertTrue(c.trial_logs(trial["id"]))  # the agent's log stream crossed its TLS link too

    def test_a_core_api_trial_reports_over_https(self):
        c = self.cluster
        with open(os.path.join(EXAMPLE, "adaptive.toml")) as f:
            config = f.read().replace("max_trials = 6", "max_trials = 1")
        path = os.path.join(c.root, "core.toml")
        with open(path, "w") as f:
            f.write(config)
        out = c.det("submit", path, EXAMPLE)
        self.assertEqual(out.returncode, 0, out.stderr)
        exp = c.wait_experiment(int(out.stdout.split()[-1]), ENDED, timeout=300)
        trial = exp["trials"][0]
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED", c.trial_logs(trial["id"]))
        self.assertIn("validation_loss", trial["latest_validation"])
        self.assertTrue(trial["latest_checkpoint_uuid"])

    def test_plain_text_and_unknown_certificates_are_refused(self):
        c = self.cluster
        # REST: a plain request gets no HTTP answer at all.
        plain = http.client.HTTPConnection("127.0.0.1", c.http_port, timeout=10)
        with self.assertRaises((http.client.HTTPException, OSError)):
            plain.request("GET", "/api/v1/master")
            plain.getresponse()
        out = subprocess.run([os.path.join(BIN, "det"), "-m", f"http://127.0.0.1:{c.http_port}", "user", "whoami"],
                             capture_output=True, text=True, timeout=60, env=dict(os.environ, HOME=c.root))
        self.assertEqual(out.returncode, 1)
        self.assertIn("a master that serves HTTPS hangs up on http:// requests", out.stderr)
        # HTTPS without the CA that signed the master's certificate: the CLI does not trust it.
        env = {k: v for k, v in os.environ.items() if k != "DET_MASTER_CERT_FILE"} | {"HOME": c.root}
        out = subprocess.run([os.path.join(BIN, "det"), "-m", c.url, "user", "whoami"],
                             capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(out.returncode, 1)
        self.assertIn("the master's certificate is not one to trust: set DET_MASTER_CERT_FILE", out.stderr)

        # The actor port: a plain peer and one whose certificate the CA did not sign get no handle.
        out = self.rogue_peer({})
        self.assertEqual(out.returncode, 1, out.stdout)
        self.assertIn("cannot join the master: the master hung up during the handshake", out.stdout)
        stranger_cert, stranger_key = c.pki.self_signed("stranger")
        out = self.rogue_peer({"DET_MASTER_CERT_FILE": c.pki.ca, "DET_TLS_CERT_FILE": stranger_cert,
                               "DET_TLS_KEY_FILE": stranger_key})
        self.assertEqual(out.returncode, 1, out.stdout)
        self.assertIn("cannot join the master: the TLS handshake with the master failed", out.stdout)
        # A certificate the CA signed opens the link, and still admits no agent without the token.
        out = self.rogue_peer({"DET_MASTER_CERT_FILE": c.pki.ca, "DET_TLS_CERT_FILE": c.agent_cert,
                               "DET_TLS_KEY_FILE": c.agent_key})
        self.assertEqual(out.returncode, 0, out.stdout)
        lines = dict(line.split(": ", 1) for line in out.stdout.strip().splitlines())
        self.assertIn("presented no agent token", lines["agent without a token"])
        self.assertIn("presented a wrong agent token", lines["agent with a wrong token"])
        self.assertEqual([a["id"] for a in c.get("/api/v1/agents")["agents"]], ["agent-0"])

    def test_the_proxy_listener_speaks_tls_and_the_session_cookie_is_secure(self):
        c = self.cluster
        proxy_url = c.get("/api/v1/master", token=None)["proxy_url"]
        self.assertTrue(proxy_url.startswith("https://127.0.0.1:"), proxy_url)
        port = int(proxy_url.rsplit(":", 1)[1])
        plain = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        with self.assertRaises((http.client.HTTPException, OSError)):
            plain.request("GET", "/proxy/x/")
            plain.getresponse()
        secure = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=c.ssl_context)
        secure.request("GET", "/proxy/not-a-task/")
        self.assertEqual(secure.getresponse().status, 404)
        secure.close()
        login = http.client.HTTPSConnection("127.0.0.1", c.http_port, timeout=10, context=c.ssl_context)
        login.request("POST", "/api/v1/auth/login", body=json.dumps({"username": "admin", "password": c.admin_password}),
                      headers={"Content-Type": "application/json"})
        answer = login.getresponse()
        answer.read()
        login.close()
        self.assertEqual(answer.status, 200)
        for attribute in ("HttpOnly", "SameSite=Strict", "Secure"):
            self.assertIn(attribute, answer.headers["Set-Cookie"])

    def test_the_repl_joins_with_a_certificate_only(self):
        c = self.cluster
        refused = c.det("repl", "-c", "actors")
        self.assertEqual(refused.returncode, 1)
        self.assertIn("give --tls-cert and --tls-key", refused.stderr)
        actors = c.det("repl", "-c", "actors", "--tls-cert", c.agent_cert, "--tls-key", c.agent_key)
        self.assertEqual(actors.returncode, 0, actors.stderr)
        self.assertIn("agent-0", actors.stdout)

    def test_bad_tls_settings_are_refused_with_a_sentence(self):
        c = self.cluster
        master_cert = os.path.join(c.pki.directory, "master.pem")
        with tempfile.TemporaryDirectory(dir="/tmp") as scratch:
            for key, ca, sentence in [
                    (c.agent_key, c.pki.ca, f"security.tls.key: {c.agent_key} is not the private key of the certificate in "
                                            f"{master_cert}"),
                    (os.path.join(c.pki.directory, "master.key"), os.path.join(scratch, "missing.pem"),
                     f"security.tls.ca: {scratch}/missing.pem is not a readable PEM file of CA certificates")]:
                config = os.path.join(scratch, "master.toml")
                with open(config, "w") as f:
                    f.write(f'[security.tls]\ncert = "{master_cert}"\nkey = "{key}"\nca = "{ca}"\n')
                out = subprocess.run([os.path.join(BIN, "det-node"), "--role=master", "--config", config, "--data-dir",
                                      os.path.join(scratch, "data"), "--port=0", "--http-port=0", "--listen=127.0.0.1"],
                                     capture_output=True, text=True, timeout=60)
                self.assertEqual(out.returncode, 1, out.stdout)
                self.assertIn(sentence, out.stderr)
                # Refused before anything started: no database was made.
                self.assertFalse(os.path.exists(os.path.join(scratch, "data")))
        out = subprocess.run([os.path.join(BIN, "det-node"), "--role=agent", f"--master=127.0.0.1:{c.port}",
                              f"--agent-token-file={c.agent_token_file}", f"--master-ca={c.pki.ca}"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 1)
        self.assertIn("joining a master over TLS needs all of --master-ca, --tls-cert and --tls-key", out.stderr)
        self.assertEqual([a["id"] for a in c.get("/api/v1/agents")["agents"]], ["agent-0"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
