#!/usr/bin/env python3
"""Determined's Core API on a real cluster of 2 agents: a script written for `determined.core`
runs unchanged in a trial that spans both agents (one container each), with a distributed
context over them, metrics, searcher operations, a pause that preempts it and a checkpoint it
resumes from."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, wait_for  # noqa: E402

PROGRAM = os.path.join(os.path.dirname(__file__), "../data/programs/determined_trial")
CONFIG = """
name = "determined-core"
entrypoint = "python3 train.py"
max_restarts = 0
[resources]
slots_per_trial = 2
[hyperparameters]
x = 1
[searcher]
name = "single"
metric = "validation_loss"
max_length = { batches = 60 }
"""


class DeterminedCoreTest(unittest.TestCase):
    def test_a_determined_core_script_spans_two_agents_pauses_and_resumes(self):
        c = Cluster(agents=2, slots="cpu:1").start()
        try:
            exp_id = c.submit_directory(CONFIG, PROGRAM)
            trial_id = c.first_trial(exp_id)
            wait_for(lambda: c.get(f"/api/v1/trials/{trial_id}/metrics?group=training")["metrics"], 60,
                     "the first training report")
            self.assertEqual(c.post(f"/api/v1/experiments/{exp_id}/pause", {}), {})
            c.wait_experiment(exp_id, {"STATE_PAUSED"}, timeout=60)
            wait_for(lambda: c.experiment(exp_id)["trials"][0]["state"] == "STATE_PAUSED", 60, "the trial to pause")
            self.assertEqual(c.post(f"/api/v1/experiments/{exp_id}/activate", {}), {})
            exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=180)
            logs = c.trial_logs(trial_id)
            self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED", logs[-30:])
            trial = exp["trials"][0]
            self.assertEqual(int(trial["total_batches"]), 60)
            self.assertTrue(any("restored from step" in line for line in logs), logs)
            self.assertTrue(any("placed on agent-0, agent-1" in line or "placed on agent-1, agent-0" in line
                                for line in logs), logs)
            training = c.get(f"/api/v1/trials/{trial_id}/metrics?group=training")["metrics"]
            self.assertEqual(training[-1]["metrics"]["rank_sum"], 1.0)  # allgather over ranks 0 and 1
            self.assertEqual([int(m["total_batches"]) for m in training], list(range(1, 61)))  # each step once
            self.assertIn("validation_loss", trial["latest_validation"])
        finally:
            c.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
