#!/usr/bin/env python3
"""End to end: a master and an agent as processes on loopback, driven through
the det CLI and the REST API."""

import os
import re
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import BIN, Cluster, synthetic_config, wait_for  # noqa: E402


class ClusterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(agents=1).start()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def test_1_submit_follow_completes_with_metrics(self):
        c = self.cluster
        path = os.path.join(c.root, "synthetic.toml")
        with open(path, "w") as f:
            f.write(synthetic_config(batches=300))
        out = c.det("submit", path, "--follow")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr + c.log("master"))
        exp_id = int(re.search(r"Created experiment (\d+)", out.stdout).group(1))
        exp = c.experiment(exp_id)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED")
        self.assertEqual(len(exp["trials"]), 1)
        trial = exp["trials"][0]
        self.assertEqual(trial["state"], "STATE_COMPLETED")
        self.assertEqual(int(trial["total_batches"]), 300)
        validation = c.get(f"/api/v1/trials/{trial['id']}/metrics?group=validation")["metrics"]
        self.assertEqual([int(m["total_batches"]) for m in validation], [100, 200, 300])
        self.assertGreater(validation[-1]["metrics"]["validation_accuracy"], 0.3)
        training = c.get(f"/api/v1/trials/{trial['id']}/metrics?group=training")["metrics"]
        self.assertGreaterEqual(len(training), 3)
        self.assertIn("loss", training[0]["metrics"])
        logs = c.trial_logs(trial["id"])
        self.assertTrue(any("training builtin:mlp" in l for l in logs), logs)
        listed = c.det("experiment", "list")
        self.assertIn("synthetic", listed.stdout)
        described = c.det("trial", "describe", trial["id"], "--json")
        self.assertEqual(described.returncode, 0, described.stderr)
        self.assertIn("validation_accuracy", described.stdout)

    def test_2_bad_config_is_refused_and_nothing_is_stored(self):
        c = self.cluster
        before = len(c.get("/api/v1/experiments").get("experiments", []))
        path = os.path.join(c.root, "bad.toml")
        with open(path, "w") as f:
            f.write(synthetic_config().replace('max_length', 'max_lenght'))
        out = c.det("submit", path)
        self.assertEqual(out.returncode, 1)
        self.assertIn("bad.toml:", out.stderr)
        self.assertIn("searcher.max_lenght", out.stderr)
        after = len(c.get("/api/v1/experiments").get("experiments", []))
        self.assertEqual(before, after)

    def test_2b_determined_yaml_config_runs_as_it_is(self):
        c = self.cluster
        yaml = """# As Determined's users write it
name: from-yaml
entrypoint: builtin:simulate
max_restarts: 0
hyperparameters:
  x:
    type: double
    minval: 0.0
    maxval: 1.0
searcher:
  name: random
  metric: validation_loss
  smaller_is_better: yes
  max_trials: 2
  max_length:
    batches: 20
data:
  seconds_per_batch: 0.001
"""
        path = os.path.join(c.root, "determined.yaml")
        with open(path, "w") as f:
            f.write(yaml)
        out = c.det("submit", path)
        self.assertEqual(out.returncode, 0, out.stderr)
        exp_id = int(out.stdout.split()[-1])
        exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=120)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED")
        self.assertEqual(len(exp["trials"]), 2)
        shown = c.det("experiment", "describe", str(exp_id), "--yaml")
        self.assertIn("name: \"from-yaml\"", shown.stdout)
        self.assertIn("max_trials: 2", shown.stdout)
        stored = c.det("experiment", "describe", str(exp_id), "--toml")
        self.assertIn("name = 'from-yaml'", stored.stdout)
        with open(path, "w") as f:
            f.write(yaml.replace("max_trials: 2", "max_trails: 2"))
        bad = c.det("submit", path)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("determined.yaml:14:3: searcher.max_trails: unknown key", bad.stderr)

    def test_3_killed_worker_ends_trial_in_error_and_agent_keeps_serving(self):
        c = self.cluster
        exp_id = c.submit(synthetic_config(name="doomed", batches=10_000_000, max_restarts=0))
        trial_id = wait_for(lambda: [t["id"] for t in c.experiment(exp_id)["trials"]
                                     if t["state"] == "STATE_RUNNING"], 60, "a running trial")[0]
        started = wait_for(lambda: [l for l in c.trial_logs(trial_id) if "container started" in l],
                           30, "the container start log line")
        pid = int(re.search(r"pid (\d+)", started[0]).group(1))
        os.kill(pid, signal.SIGKILL)
        exp = c.wait_experiment(exp_id, {"STATE_ERROR"}, timeout=60)
        self.assertEqual(exp["trials"][0]["state"], "STATE_ERROR")
        self.assertIn("SIGKILL", exp["trials"][0]["exit_reason"])
        self.assertTrue(any("SIGKILL" in l for l in c.trial_logs(trial_id)))
        self.assertEqual(len(c.connected_agents()), 1)
        # The agent still takes work.
        again = c.submit(synthetic_config(name="after-crash", batches=50, validation_period=0))
        self.assertEqual(c.wait_experiment(again, {"STATE_COMPLETED", "STATE_ERROR"})
                         ["experiment"]["state"], "STATE_COMPLETED")

    def test_3b_worker_that_throws_ends_trial_in_error_with_its_message(self):
        c = self.cluster
        exp_id = c.submit(synthetic_config(name="bad-dataset").replace(
            'dataset = "synthetic"', 'dataset = "mnist-9000"'))
        exp = c.wait_experiment(exp_id, {"STATE_ERROR", "STATE_COMPLETED"}, timeout=60)
        self.assertEqual(exp["experiment"]["state"], "STATE_ERROR")
        trial = exp["trials"][0]
        self.assertIn("mnist-9000", trial["exit_reason"])
        self.assertIn("exited with code 1", trial["exit_reason"])
        self.assertTrue(any(l.startswith("error:") and "mnist-9000" in l
                            for l in c.trial_logs(trial["id"])))

    def test_4_kill_an_experiment(self):
        c = self.cluster
        exp_id = c.submit(synthetic_config(name="killed", batches=10_000_000))
        wait_for(lambda: any(t["state"] == "STATE_RUNNING" for t in c.experiment(exp_id)["trials"]),
                 60, "a running trial")
        out = c.det("experiment", "kill", str(exp_id))
        self.assertEqual(out.returncode, 0, out.stderr)
        exp = c.wait_experiment(exp_id, {"STATE_CANCELED"}, timeout=60)
        self.assertEqual(exp["trials"][0]["state"], "STATE_CANCELED")

    def test_4b_pause_releases_slots_and_activate_resumes(self):
        c = self.cluster
        config = synthetic_config(name="paused", batches=400).replace(
            'entrypoint = "builtin:mlp"', 'entrypoint = "builtin:simulate"').replace(
            '[data]', '[data]\nseconds_per_batch = 0.01')
        exp_id = c.submit(config)
        wait_for(lambda: any(t["state"] == "STATE_RUNNING" for t in c.experiment(exp_id)["trials"]),
                 60, "a running trial")
        self.assertEqual(c.det("experiment", "pause", str(exp_id)).returncode, 0)
        wait_for(lambda: c.experiment(exp_id)["trials"][0]["state"] == "STATE_PAUSED", 30,
                 "the trial to pause")
        self.assertEqual(c.experiment(exp_id)["experiment"]["state"], "STATE_PAUSED")
        slots = c.get("/api/v1/agents")["agents"][0]["slots"]
        self.assertTrue(all(not s.get("allocation_id") for s in slots), slots)
        out = c.det("experiment", "activate", str(exp_id))
        self.assertEqual(out.returncode, 0, out.stderr)
        exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=60)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED")
        self.assertEqual(int(exp["trials"][0]["total_batches"]), 400)
        self.assertEqual(exp["trials"][0]["runs"], 2)  # the pause ended the first run
        self.assertEqual(exp["trials"][0]["restarts"], 0)
        ended = c.det("experiment", "pause", str(exp_id))
        self.assertEqual(ended.returncode, 1)
        self.assertIn("cannot be paused", ended.stderr)

    def test_4c_activate_before_the_pause_took_effect_resumes(self):
        c = self.cluster
        config = synthetic_config(name="pause-race", batches=200).replace(
            'entrypoint = "builtin:mlp"', 'entrypoint = "builtin:simulate"').replace(
            '[data]', '[data]\nseconds_per_batch = 0.01')
        exp_id = c.submit(config)
        wait_for(lambda: any(t["state"] == "STATE_RUNNING" for t in c.experiment(exp_id)["trials"]),
                 60, "a running trial")
        self.assertEqual(c.det("experiment", "pause", str(exp_id)).returncode, 0)
        self.assertEqual(c.det("experiment", "activate", str(exp_id)).returncode, 0)
        exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=60)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED")
        self.assertEqual(int(exp["trials"][0]["total_batches"]), 200)

    def test_5_repl_inspects_live_actors(self):
        c = self.cluster
        out = c.det("repl", "-c", "actors", "-c", "inspect pool default", "-c", "inspect agent agent-0",
                    "-c", "inspect persistence rows")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"pool\s+default\s+\d+")
        self.assertRegex(out.stdout, r"trials created: \d+")
        self.assertIn("scheduler: priority without preemption, best fit", out.stdout)
        self.assertIn("hostname:", out.stdout)
        agents = c.det("agent", "list")
        self.assertIn("agent-0", agents.stdout)

    def test_5b_agent_for_an_unknown_pool_is_refused(self):
        c = self.cluster
        out = subprocess.run([os.path.join(BIN, "det-node"), "--role=agent",
                              f"--master=127.0.0.1:{c.port}", "--pool=nope", "--id=stray",
                              f"--agent-token-file={c.agent_token_file}"],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 1)
        self.assertIn('resource pool "nope"', out.stderr)
        self.assertEqual([a["id"] for a in c.connected_agents()], ["agent-0"])

    def test_6_master_restart_keeps_history_and_agents_return(self):
        c = self.cluster
        done_id = c.submit(synthetic_config(name="history", batches=50, validation_period=0))
        self.assertEqual(c.wait_experiment(done_id, {"STATE_COMPLETED", "STATE_ERROR"})
                         ["experiment"]["state"], "STATE_COMPLETED")
        before = c.get("/api/v1/experiments")["experiments"]
        c.stop_master()
        c.start_master()
        after = c.get("/api/v1/experiments")["experiments"]
        self.assertEqual([e["id"] for e in before], [e["id"] for e in after])
        trial = c.experiment(done_id)["trials"][0]
        self.assertEqual(trial["state"], "STATE_COMPLETED")
        self.assertTrue(c.get(f"/api/v1/trials/{trial['id']}/metrics")["metrics"])
        self.assertTrue(c.trial_logs(trial["id"]))
        wait_for(lambda: len(c.connected_agents()) == 1, 30, "the agent to re-register")


if __name__ == "__main__":
    unittest.main(verbosity=2)
