#!/usr/bin/env python3
"""A hyperparameter search on a real cluster: adaptive_asha over builtin:simulate
trials on 2 agents x 2 CPU slots, and its preview through the CLI."""

import json
import os
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, wait_for  # noqa: E402

ADAPTIVE = """
name = "simulated-adaptive"
entrypoint = "builtin:simulate"
max_restarts = 0
min_validation_period = { batches = 10 }

[hyperparameters]
learning_rate = { type = "log", minval = -4.0, maxval = -1.0 }
layers = { type = "int", minval = 1, maxval = 8 }
dropout = { type = "double", minval = 0.0, maxval = 0.5 }

[searcher]
name = "adaptive_asha"
metric = "validation_loss"
smaller_is_better = true
max_trials = 8
max_concurrent_trials = 4
time_metric = "batches"
max_time = 160

[data]
seconds_per_batch = 0.005

[reproducibility]
experiment_seed = 42
"""


class SearchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(agents=2, slots="cpu:2").start()
        cls.config = os.path.join(cls.cluster.root, "adaptive.toml")
        with open(cls.config, "w") as f:
            f.write(ADAPTIVE)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def test_preview_plans_every_trial(self):
        out = self.cluster.det("preview-search", self.config, "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        plan = json.loads(out.stdout)
        self.assertEqual(plan["searcher"], "adaptive_asha")
        self.assertEqual(sum(b["count"] for b in plan["trials"]), 8)
        lengths = [b["length"] for b in plan["trials"]]
        self.assertEqual(lengths, sorted(lengths))
        self.assertEqual(lengths[-1], 160)
        self.assertTrue(all(b["unit"] == "batches" for b in plan["trials"]))
        table = self.cluster.det("preview-search", self.config)
        self.assertIn("Total: 8 trials", table.stdout)

    def test_adaptive_asha_search_completes_and_stops_trials_early(self):
        c = self.cluster
        exp_id = c.submit(ADAPTIVE, "adaptive.toml")
        exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"},
                                timeout=300)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED", c.log("master"))
        trials = exp["trials"]
        self.assertEqual(len(trials), 8)
        self.assertTrue(all(t["state"] == "STATE_COMPLETED" for t in trials),
                        [(t["id"], t["state"], t["exit_reason"]) for t in trials])
        trained = sorted(int(t["total_batches"]) for t in trials)
        self.assertEqual(trained[-1], 160)
        self.assertLess(trained[0], 160, "the searcher stopped no trial early")
        for t in trials:  # exactly the trials that did not train the full length were stopped
            self.assertEqual(t["searcher_stopped"], int(t["total_batches"]) < 160, t)
        described = c.det("experiment", "describe", str(exp_id))
        self.assertEqual(described.returncode, 0, described.stderr)
        self.assertIn("Stopped by searcher", described.stdout)
        # Each trial's hyperparameters were sampled within their ranges.
        for t in trials:
            hp = json.loads(t["hparams"])
            self.assertTrue(1 <= hp["layers"] <= 8)
            self.assertTrue(1e-4 <= hp["learning_rate"] <= 1e-1)


    def test_asha_promotes_waiting_trials_that_free_their_slots(self):
        c = self.cluster
        config = ADAPTIVE.replace('name = "simulated-adaptive"', 'name = "simulated-asha"').replace(
            'name = "adaptive_asha"', 'name = "asha"\nnum_rungs = 2\ndivisor = 3').replace(
            "max_trials = 8", "max_trials = 6").replace("max_time = 160", "max_time = 60")
        exp_id = c.submit(config, "asha.toml")
        exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"},
                                timeout=300)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED", c.log("master"))
        trials = exp["trials"]
        self.assertEqual(len(trials), 6)
        self.assertTrue(all(t["state"] == "STATE_COMPLETED" for t in trials),
                        [(t["id"], t["state"], t["exit_reason"]) for t in trials])
        promoted = [t for t in trials if t.get("rung") == 1]
        waited = [t for t in trials if t.get("rung") == 0]
        self.assertTrue(promoted and waited, trials)
        self.assertEqual(len(promoted) + len(waited), 6)
        for t in promoted:
            self.assertEqual(int(t["total_batches"]), 60)
            self.assertFalse(t["searcher_stopped"], t)
            # Promoted, it continued from the checkpoint it saved at rung 0 rather than start over.
            self.assertTrue(any("Resuming from checkpoint" in line and "at batch 20" in line
                                for line in c.trial_logs(t["id"])), c.trial_logs(t["id"]))
        for t in waited:
            self.assertEqual(int(t["total_batches"]), 20)
            self.assertTrue(t["searcher_stopped"], t)
        # A trial the searcher has already ruled out when its run ends is stopped without waiting
        # (its decision can arrive before the worker's exit), so not every one of them waits.
        self.assertTrue(any("slots are free" in line for t in waited for line in c.trial_logs(t["id"])),
                        [c.trial_logs(t["id"]) for t in waited])
        described = c.det("experiment", "describe", str(exp_id))
        self.assertIn("Rung", described.stdout)

    def test_pbt_copies_the_best_trials_each_round(self):
        c = self.cluster
        config = ADAPTIVE.replace('name = "simulated-adaptive"', 'name = "simulated-pbt"').replace(
            """name = "adaptive_asha"
metric = "validation_loss"
smaller_is_better = true
max_trials = 8
max_concurrent_trials = 4
time_metric = "batches"
max_time = 160""", """name = "pbt"
metric = "validation_loss"
population_size = 4
num_rounds = 3
length_per_round = { batches = 20 }
replace_function = { truncate_fraction = 0.5 }
explore_function = { resample_probability = 0.2, perturb_factor = 0.2 }""")
        exp_id = c.submit(config, "pbt.toml")
        exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"},
                                timeout=300)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED", c.log("master"))
        trials = exp["trials"]
        self.assertEqual(len(trials), 4 + 2 * 2)
        copies = [t for t in trials if int(t.get("parent_trial_id", "0")) != 0]
        self.assertEqual(len(copies), 4)
        ids = {t["id"] for t in trials}
        for t in copies:
            self.assertIn(t["parent_trial_id"], ids)
            self.assertTrue(t["warm_start_checkpoint_uuid"], t)
            logs = c.trial_logs(t["id"])
            self.assertTrue(any("copied by PBT from trial" in line and "starts from checkpoint" in line
                                for line in logs), logs)
            self.assertTrue(any("Starting from the weights of checkpoint" in line for line in logs), logs)
        # Each trial trains whole rounds of its own: at most all three.
        trained = [int(t["total_batches"]) for t in trials]
        self.assertTrue(all(b in (20, 40, 60) for b in trained), trained)
        self.assertTrue(sum(1 for t in trials if t["searcher_stopped"]) >= 4, trials)

    def test_trials_with_invalid_hyperparameters_are_replaced(self):
        c = self.cluster
        config = """
name = "invalid-hparams"
entrypoint = "builtin:simulate"
[hyperparameters]
global_batch_size = { type = "int", minval = 0, maxval = 1 }
x = { type = "double", minval = 0.0, maxval = 1.0 }
[searcher]
name = "random"
metric = "validation_loss"
max_trials = 4
max_concurrent_trials = 4
max_length = { batches = 20 }
[reproducibility]
experiment_seed = 5
"""
        exp_id = c.submit(config, "invalid.toml")
        exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=120)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED")
        trials = exp["trials"]
        invalid = [t for t in trials if t["exit_reason"].startswith("invalid hyperparameters")]
        valid = [t for t in trials if t["state"] == "STATE_COMPLETED"]
        self.assertTrue(invalid, "seed 5 samples no batch size of 0")
        self.assertEqual(len(valid), 4)
        self.assertEqual(len(trials), 4 + len(invalid))
        self.assertTrue(all(json.loads(t["hparams"])["global_batch_size"] == 0 for t in invalid))
        self.assertTrue(all(t["restarts"] == 0 for t in invalid),
                        [(t["id"], t["restarts"], c.trial_logs(t["id"])) for t in invalid])


RANDOM = ADAPTIVE.replace('name = "adaptive_asha"', 'name = "random"').replace(
    "max_concurrent_trials = 4", "max_concurrent_trials = 2").replace(
    "max_trials = 8", "max_trials = 6").replace(
    "seconds_per_batch = 0.005", "seconds_per_batch = 0.01").replace(
    'time_metric = "batches"\nmax_time = 160', "max_length = { batches = 160 }")


class SearchRestoreTest(unittest.TestCase):
    """A master restarted in the middle of a search continues it from its snapshot."""

    def test_restarted_master_continues_the_search(self):
        self.restart_mid_search(crash=False)

    def test_master_killed_with_sigkill_continues_the_search(self):
        self.restart_mid_search(crash=True)

    def test_master_killed_before_a_snapshot_adopts_the_stored_trials(self):
        # Without a snapshot the search begins again and must take its stored trials back by
        # request id: none is created twice.
        self.restart_mid_search(crash=True, drop_snapshot=True)

    def restart_mid_search(self, crash, drop_snapshot=False):
        c = Cluster(agents=1, slots="cpu:2").start()
        try:
            exp_id = c.submit(RANDOM, "random.toml")
            wait_for(lambda: sum(t["state"] == "STATE_COMPLETED"
                                 for t in c.experiment(exp_id)["trials"]) >= 2 and any(
                t["state"] == "STATE_RUNNING" for t in c.experiment(exp_id)["trials"]),
                     60, "two finished trials and a running one")
            if crash:
                os.kill(c.master.pid, signal.SIGKILL)
                c.master.wait()
            else:
                c.stop_master()
            if drop_snapshot:  # the killed master's PostgreSQL still runs
                subprocess.run(["psql", "-h", os.path.join(c.data_dir, "run"), "-p", "5432",
                                "-U", "postgres", "-d", "det", "-v", "ON_ERROR_STOP=1", "-c",
                                f"DELETE FROM experiment_snapshots WHERE experiment_id = {exp_id}"],
                               check=True, capture_output=True,
                               env=dict(os.environ, PGPASSFILE=os.path.join(c.data_dir, "postgres-password")))
            c.start_master()
            exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=120)
            self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED", c.log("master"))
            # A trial the search asks for again is adopted, not created a second time (the
            # database's unique request id would refuse it, and the search count it failed).
            self.assertNotIn("the trial could not be stored", c.log("master"))
            trials = exp["trials"]
            self.assertEqual(sorted(int(t["request_id"]) for t in trials), [1, 2, 3, 4, 5, 6])
            self.assertTrue(all(t["state"] == "STATE_COMPLETED" for t in trials),
                            [(t["id"], t["state"], t["exit_reason"]) for t in trials])
            self.assertTrue(all(int(t["total_batches"]) == 160 for t in trials))
            restarted = [t for t in trials if any(
                "the master restarted" in l for l in c.trial_logs(t["id"]))]
            self.assertTrue(restarted, "no trial was running when the master stopped")
            for t in restarted:
                # Its worker outlived the master: the agent kept it, it said hello to the restarted
                # master (again, or for the first time if it was still starting), and that master
                # took the run back where it ran instead of starting another.
                # (Log lines the master buffered in its last 100 ms before SIGKILL are lost; the
                # trial's run count is stored with each run.)
                self.assertEqual(t["runs"], 1, c.trial_logs(t["id"]))
            for t in trials:
                # A restore costs no restart, and a resumed run's repeated steps are stored once:
                # every trial's metrics run from start to end without a step twice.
                self.assertEqual(t["restarts"], 0)
                for group in ("training", "validation"):
                    steps = [int(m["total_batches"]) for m in
                             c.get(f"/api/v1/trials/{t['id']}/metrics?group={group}")["metrics"]]
                    self.assertEqual(steps, sorted(set(steps)), (t["id"], group, steps))
                    self.assertEqual(steps[-1], 160, (t["id"], group, steps))
        finally:
            c.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
