#!/usr/bin/env python3
"""The Core API on a real cluster: examples/core-api (train.py on det_core.py) submitted with
its directory under adaptive_asha, the allocation token, and early exits."""

import json
import os
import signal
import sys
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, wait_for  # noqa: E402

EXAMPLE = os.path.join(os.path.dirname(__file__), "../../examples/core-api")


class CoreApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(agents=1, slots="cpu:3").start()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def submit_example(self, name, edits):
        """Submits examples/core-api/adaptive.toml with `edits` (old, new) applied, and the
        example directory as its model definition; returns the experiment id."""
        with open(os.path.join(EXAMPLE, "adaptive.toml")) as f:
            config = f.read()
        for old, new in edits:
            self.assertIn(old, config)
            config = config.replace(old, new)
        return self.cluster.submit_directory(config, EXAMPLE, name)

    def test_example_search_completes_with_metrics_and_checkpoints(self):
        c = self.cluster
        # Slow enough that the searcher's stops land before the trials end.
        exp_id = self.submit_example("adaptive.toml", [("[hyperparameters]", "[hyperparameters]\nstep_seconds = 0.02")])
        exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"}, timeout=300)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED", c.log("master"))
        trials = exp["trials"]
        self.assertEqual(len(trials), 6)
        for t in trials:
            self.assertEqual(t["state"], "STATE_COMPLETED", (t, c.trial_logs(t["id"])))
            self.assertIn("validation_loss", t["latest_validation"])
            self.assertTrue(t["latest_checkpoint_uuid"], (t, c.trial_logs(t["id"])))
            logs = c.trial_logs(t["id"])
            self.assertTrue(any("training to" in line for line in logs), logs)
        trained = sorted(int(t["total_batches"]) for t in trials)
        self.assertEqual(trained[-1], 90)
        # Trials the search stopped early were preempted through the API and checkpointed where
        # they stopped (whether any is stopped early depends on the order results arrive in).
        for t in trials:
            if int(t["total_batches"]) < 90:
                self.assertTrue(t["searcher_stopped"], t)
                self.assertTrue(any("preempted at step" in line for line in c.trial_logs(t["id"])))

    def test_a_process_outlives_a_master_restart_and_finishes_its_run(self):
        c = self.cluster
        exp_id = self.submit_example("restart.toml", [('name = "adaptive_asha"', 'name = "random"'),
                                                      ("max_trials = 6", "max_trials = 1"),
                                                      ("[hyperparameters]", "[hyperparameters]\nstep_seconds = 0.05")])
        trial_id = wait_for(lambda: [t["id"] for t in c.experiment(exp_id)["trials"]
                                     if int(t["total_batches"]) >= 20], 60, "the trial to train")[0]
        os.kill(c.master.pid, signal.SIGKILL)
        c.master.wait()
        time.sleep(1)  # the process keeps training, and retries what it reports
        c.start_master()
        exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"}, timeout=120)
        logs = c.trial_logs(trial_id)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED", logs[-10:])
        trial = exp["trials"][0]
        self.assertEqual(trial["restarts"], 0)
        self.assertEqual(int(trial["total_batches"]), 90)
        # The same process and run, taken back by the restarted master with its token.
        self.assertEqual(trial["runs"], 1, logs)
        steps = [int(m["total_batches"]) for m in c.get(f"/api/v1/trials/{trial_id}/metrics?group=validation")["metrics"]]
        self.assertEqual(steps, sorted(set(steps)))
        self.assertEqual(steps[-1], 90)

    def test_calls_without_the_run_token_are_refused(self):
        c = self.cluster
        exp_id = self.submit_example("long.toml", [('name = "adaptive_asha"', 'name = "random"'),
                                                   ("max_trials = 6", "max_trials = 1"),
                                                   ("max_length = { batches = 90 }", "max_length = { batches = 100000000 }")])
        trial_id = wait_for(lambda: [t["id"] for t in c.experiment(exp_id)["trials"]
                                     if int(t["total_batches"]) > 0], 60, "the trial to train")[0]
        body = json.dumps({"group": "training", "total_batches": 1, "metrics": {"loss": 1.0}}).encode()
        for token in ("wrong", ""):
            request = urllib.request.Request(f"{c.url}/api/v1/trials/{trial_id}/metrics", data=body, method="POST",
                                             headers={"Authorization": "Bearer " + token,
                                                      "Content-Type": "application/json"})
            with self.assertRaises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=10)
            self.assertEqual(refused.exception.code, 403)
            self.assertIn("allocation token", json.loads(refused.exception.read())["error"])
        self.assertEqual(c.det("experiment", "kill", str(exp_id)).returncode, 0)
        c.wait_experiment(exp_id, {"STATE_CANCELED"}, timeout=60)

    def test_profiling_samples_the_machine_while_the_process_trains(self):
        c = self.cluster
        exp_id = self.submit_example("profiled.toml", [
            ('name = "adaptive_asha"', 'name = "random"'), ("max_trials = 6", "max_trials = 1"),
            ("[hyperparameters]", "[profiling]\nenabled = true\n\n[hyperparameters]\nstep_seconds = 0.03")])
        exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=120)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED")
        trial_id = exp["trials"][0]["id"]
        system = c.get(f"/api/v1/trials/{trial_id}/metrics?group=system")["metrics"]
        self.assertGreaterEqual(len(system), 1)
        self.assertIn("cpu_util_percent", system[0]["metrics"])

    def test_invalid_hyperparameters_reported_by_the_process_are_replaced(self):
        c = self.cluster
        exp_id = self.submit_example("invalid.toml", [
            ('batch_size = { type = "categorical", vals = [8, 16, 32] }', 'batch_size = { type = "categorical", vals = [0, 16] }'),
            ('name = "adaptive_asha"', 'name = "random"'), ("max_trials = 6", "max_trials = 2"),
            ("max_length = { batches = 90 }", "max_length = { batches = 20 }")])
        exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=120)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED")
        invalid = [t for t in exp["trials"] if t["exit_reason"].startswith("invalid hyperparameters")]
        valid = [t for t in exp["trials"] if t["state"] == "STATE_COMPLETED"]
        self.assertTrue(invalid, [(t["hparams"], t["state"], t["exit_reason"], c.trial_logs(t["id"])) for t in exp["trials"]])
        self.assertEqual(len(valid), 2)
        self.assertTrue(all(json.loads(t["hparams"])["batch_size"] == 0 for t in invalid))


if __name__ == "__main__":
    unittest.main(verbosity=2)
