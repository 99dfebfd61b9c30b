#!/usr/bin/env python3
"""Checkpoints on a real cluster: a killed worker and a paused trial continue
from their latest checkpoint, GC keeps what the policy asks for at experiment
end, and the CLI lists, describes, downloads and deletes checkpoints."""

import json
import os
import re
import shutil
import signal
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, wait_for  # noqa: E402


def simulate_config(name, searcher, length=200, seconds_per_batch=0.01, max_restarts=1,
                    checkpoint_period=20, validation_period=50, extra=""):
    return f"""
name = "{name}"
entrypoint = "builtin:simulate"
max_restarts = {max_restarts}
min_validation_period = {{ batches = {validation_period} }}
min_checkpoint_period = {{ batches = {checkpoint_period} }}
{extra}
[hyperparameters]
x = {{ type = "double", minval = 0.0, maxval = 1.0 }}

[searcher]
metric = "validation_loss"
{searcher}
max_length = {{ batches = {length} }}

[data]
seconds_per_batch = {seconds_per_batch}
noise = 0.01

[reproducibility]
experiment_seed = 11
"""


class CheckpointTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(agents=1, slots="cpu:2").start()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def running_trial_with_checkpoint(self, exp_id):
        c = self.cluster

        def found():
            for t in c.experiment(exp_id)["trials"]:
                if t["state"] == "STATE_RUNNING" and c.get(f"/api/v1/trials/{t['id']}/checkpoints").get("checkpoints"):
                    return t["id"]
            return None

        return wait_for(found, 60, "a running trial with a checkpoint")

    def test_killed_worker_continues_from_its_latest_checkpoint(self):
        c = self.cluster
        exp_id = c.submit(simulate_config("killed", 'name = "single"', length=300))
        trial_id = self.running_trial_with_checkpoint(exp_id)
        started = [l for l in c.trial_logs(trial_id) if "container started" in l]
        os.kill(int(re.search(r"pid (\d+)", started[0]).group(1)), signal.SIGKILL)
        exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=120)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED", c.log("master"))
        trial = exp["trials"][0]
        self.assertEqual(trial["restarts"], 1)
        self.assertEqual(int(trial["total_batches"]), 300)
        logs = c.trial_logs(trial_id)
        self.assertTrue(any("continues from checkpoint" in l for l in logs), logs)
        resumed = [l for l in logs if "Resuming from checkpoint" in l]
        self.assertEqual(len(resumed), 1, logs)
        at = int(re.search(r"at batch (\d+)", resumed[0]).group(1))
        self.assertGreater(at, 0)
        self.assertEqual(at % 20, 0)

    def test_paused_trial_continues_from_the_checkpoint_it_saved_on_stopping(self):
        c = self.cluster
        exp_id = c.submit(simulate_config("paused", 'name = "single"', length=300, checkpoint_period=1000))
        trial_id = wait_for(lambda: [t["id"] for t in c.experiment(exp_id)["trials"]
                                     if int(t["total_batches"]) >= 50], 60, "some training")[0]
        self.assertEqual(c.det("experiment", "pause", str(exp_id)).returncode, 0)
        wait_for(lambda: c.experiment(exp_id)["trials"][0]["state"] == "STATE_PAUSED", 60, "the trial to pause")
        checkpoints = c.get(f"/api/v1/trials/{trial_id}/checkpoints")["checkpoints"]
        self.assertEqual(len(checkpoints), 1)  # saved on the graceful stop, not on a period
        self.assertEqual(c.det("experiment", "activate", str(exp_id)).returncode, 0)
        exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=120)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED")
        resumed = [l for l in c.trial_logs(trial_id) if "Resuming from checkpoint" in l]
        self.assertEqual(len(resumed), 1)
        self.assertIn(f"at batch {checkpoints[0]['steps_completed']}", resumed[0])

    def test_a_missing_checkpoint_fails_its_trial_clearly_and_the_agent_serves_on(self):
        c = self.cluster
        exp_id = c.submit(simulate_config("lost", 'name = "single"', length=300, checkpoint_period=1000,
                                          max_restarts=0))
        trial_id = wait_for(lambda: [t["id"] for t in c.experiment(exp_id)["trials"]
                                     if int(t["total_batches"]) >= 50], 60, "some training")[0]
        self.assertEqual(c.det("experiment", "pause", str(exp_id)).returncode, 0)
        wait_for(lambda: c.experiment(exp_id)["trials"][0]["state"] == "STATE_PAUSED", 60, "the trial to pause")
        saved = c.get(f"/api/v1/trials/{trial_id}/checkpoints")["checkpoints"][0]
        shutil.rmtree(os.path.join(saved["storage_path"], saved["uuid"]))
        self.assertEqual(c.det("experiment", "activate", str(exp_id)).returncode, 0)
        exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=60)
        trial = exp["trials"][0]
        self.assertEqual(trial["state"], "STATE_ERROR")
        self.assertIn(f"Checkpoint {saved['storage_path']}/{saved['uuid']} is missing", trial["exit_reason"])
        self.assertEqual(len(c.connected_agents()), 1)

    def test_gc_keeps_the_best_and_latest_and_the_cli_manages_checkpoints(self):
        c = self.cluster
        exp_id = c.submit(simulate_config("gc", 'name = "random"\nmax_trials = 2', seconds_per_batch=0.001,
                                          checkpoint_period=50))
        exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=120)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED")
        trial_ids = [t["id"] for t in exp["trials"]]

        def expected_kept(checkpoints, trial_id):
            mine = [x for x in checkpoints if x["trial_id"] == trial_id]
            latest = max(mine, key=lambda x: int(x["steps_completed"]))
            best = min((x for x in mine if "validation_loss" in x.get("validation_metrics", {})),
                       key=lambda x: x["validation_metrics"]["validation_loss"])
            return {latest["uuid"], best["uuid"]}

        def collected():
            # The collector marks checkpoints deleted one at a time: wait for all of them, and
            # fail by timeout when GC keeps the wrong ones.
            checkpoints = c.get(f"/api/v1/experiments/{exp_id}/checkpoints").get("checkpoints", [])
            if len(checkpoints) != 8:
                return None
            for trial_id in trial_ids:
                kept = {x["uuid"] for x in checkpoints
                        if x["trial_id"] == trial_id and x["state"] == "CHECKPOINT_STATE_COMPLETED"}
                if kept != expected_kept(checkpoints, trial_id):
                    return None
            return checkpoints

        everything = wait_for(collected, 30, "GC to keep each trial's best and latest")
        self.assertEqual(len(everything), 8)  # 50, 100, 150, 200 for each trial
        for x in everything:
            on_disk = os.path.isdir(os.path.join(x["storage_path"], x["uuid"]))
            self.assertEqual(on_disk, x["state"] == "CHECKPOINT_STATE_COMPLETED", x)

        listed = c.det("experiment", "list-checkpoints", str(exp_id), "--best", "1", "--json")
        self.assertEqual(listed.returncode, 0, listed.stderr)
        best = json.loads(listed.stdout)["checkpoints"]
        self.assertEqual(len(best), 1)

        trial_id = exp["trials"][0]["id"]
        with tempfile.TemporaryDirectory() as out:
            got = c.det("trial", "download", str(trial_id), "--latest", "-o", out)
            self.assertEqual(got.returncode, 0, got.stderr)
            with open(os.path.join(out, "metadata.json")) as f:
                self.assertEqual(json.load(f)["batches"], 200)
            self.assertTrue(os.path.exists(os.path.join(out, "noise.txt")))

        uuid = best[0]["uuid"]
        described = c.det("checkpoint", "describe", uuid)
        self.assertEqual(described.returncode, 0, described.stderr)
        self.assertIn("metadata.json", described.stdout)
        self.assertEqual(c.det("checkpoint", "delete", uuid).returncode, 0)
        after = c.get(f"/api/v1/checkpoints/{uuid}")["checkpoint"]
        self.assertEqual(after["state"], "CHECKPOINT_STATE_DELETED")
        self.assertFalse(os.path.exists(os.path.join(after["storage_path"], uuid)))
        missing = c.det("checkpoint", "describe", "00000000-0000-4000-8000-000000000000")
        self.assertEqual(missing.returncode, 1)
        self.assertIn("not found", missing.stderr)


    def test_trials_warm_start_from_the_source_trials_latest_checkpoint(self):
        c = self.cluster
        source = c.submit(simulate_config("source", 'name = "single"', length=60, seconds_per_batch=0.001))
        exp = c.wait_experiment(source, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=60)
        source_trial = exp["trials"][0]
        latest = source_trial["latest_checkpoint_uuid"]
        self.assertTrue(latest)
        warm = c.submit(simulate_config("warm", f'name = "random"\nmax_trials = 2\nsource_trial_id = {source_trial["id"]}',
                                        length=40, seconds_per_batch=0.001))
        exp = c.wait_experiment(warm, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=60)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED")
        for t in exp["trials"]:
            self.assertEqual(t["warm_start_checkpoint_uuid"], latest)
            self.assertEqual(int(t["total_batches"]), 40)  # its own length, counted from 0
            self.assertTrue(any(f"Starting from the weights of checkpoint" in line and latest in line
                                for line in c.trial_logs(t["id"])))

        # A restarted master keeps the warm start for the trials the search creates afterwards.
        later = c.submit(simulate_config("warm-restart", f'name = "random"\nmax_trials = 3\nmax_concurrent_trials = 1\n'
                                                         f'source_trial_id = {source_trial["id"]}',
                                         length=40, seconds_per_batch=0.02))
        wait_for(lambda: any(t["state"] == "STATE_COMPLETED" for t in c.experiment(later)["trials"]), 60,
                 "the first warm-started trial to finish")
        # At least one of the 3 trials is yet to be created by the restarted master.
        created_before = {t["id"] for t in c.experiment(later)["trials"]}
        self.assertLess(len(created_before), 3)
        os.kill(c.master.pid, signal.SIGKILL)
        c.master.wait()
        c.start_master()
        exp = c.wait_experiment(later, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=120)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED")
        self.assertEqual(len(exp["trials"]), 3)
        for t in exp["trials"]:
            self.assertEqual(t["warm_start_checkpoint_uuid"], latest)
        # A trial that was starting when the master was killed may have lost its first log lines
        # with the master's last 100 ms of buffered logs; those created afterwards log in full.
        for t in (t for t in exp["trials"] if t["id"] not in created_before):
            self.assertTrue(any("Starting from the weights of checkpoint" in line and latest in line
                                for line in c.trial_logs(t["id"])), c.trial_logs(t["id"]))

        path = os.path.join(c.root, "no-source.toml")
        with open(path, "w") as f:
            f.write(simulate_config("no-source", 'name = "single"\nsource_checkpoint_uuid = "00000000-0000-4000-8000-000000000000"'))
        refused = c.det("submit", path)
        self.assertEqual(refused.returncode, 1)
        self.assertIn("searcher.source_checkpoint_uuid: there is no checkpoint", refused.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
