#!/usr/bin/env python3
"""Trials whose slots span agents, on a real cluster of 2 agents x cpu:2: a 4-slot builtin:mlp
trial trains data-parallel as one worker per agent (the agents share this host, so the workers
exchange through shared memory; rendezvous through the master), and a worker of such a run killed
mid-run takes its run down with it; the trial resumes from its latest checkpoint on both agents
again. A run told DET_SHM_DISABLE=1 exchanges over Gloo's TCP instead, as workers on different
hosts do."""

import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, pids_with_args, simulated_config, synthetic_config, wait_for  # noqa: E402

DONE = {"STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"}
# What workers on different hosts use, for a run whose workers share one.
OVER_TCP = '\n[environment]\nenvironment_variables = ["DET_SHM_DISABLE=1"]\n'


def across_agents(config, slots=4, checkpoint_period=None):
    extra = f"min_checkpoint_period = {{ batches = {checkpoint_period} }}\n" if checkpoint_period else ""
    return config.replace("[hyperparameters]", f"{extra}[resources]\nslots_per_trial = {slots}\n\n[hyperparameters]", 1)


def worker_pid(allocation_id, rank):
    """The pid of the det-worker running `rank` of the allocation, if any."""
    pids = pids_with_args(f"--allocation={allocation_id}", f"--rank={rank}")
    return pids[0] if pids else None


class DistributedTrialTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(agents=2, slots="cpu:2").start()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def test_a_four_slot_mlp_trains_as_one_worker_per_agent(self):
        c = self.cluster
        exp_id = c.submit(across_agents(synthetic_config("mlp-across-agents", batches=300), checkpoint_period=100),
                          "mlp.toml")
        exp = c.wait_experiment(exp_id, DONE, timeout=180, interval=0.5)
        trial = exp["trials"][0]
        logs = c.trial_logs(trial["id"])
        self.assertEqual(trial["state"], "STATE_COMPLETED", logs[-15:])
        self.assertEqual(int(trial["total_batches"]), 300)
        for rank in (0, 1):
            self.assertTrue(any(f"worker {rank} of 2 connected to the others over shared memory" in l for l in logs), logs)
            self.assertTrue(any(f"Process {rank} of 2: training on its share of each batch" in l for l in logs), logs)
        # The chief alone reports: one validation per period, one checkpoint per period.
        validations = c.get(f"/api/v1/trials/{trial['id']}/metrics?group=validation")["metrics"]
        self.assertEqual([int(m["total_batches"]) for m in validations], [100, 200, 300])
        self.assertGreater(validations[-1]["metrics"]["validation_accuracy"], 0.5)
        steps = sorted(int(k["steps_completed"]) for k in c.get(f"/api/v1/trials/{trial['id']}/checkpoints")["checkpoints"])
        self.assertEqual(steps, [100, 200, 300])

    def test_b_a_killed_worker_takes_its_run_down_and_the_trial_resumes_from_its_checkpoint(self):
        c = self.cluster
        exp_id = c.submit(simulated_config("killed-worker", 500, seconds_per_batch=0.01, max_restarts=1,
                                           validation_period=100, slots_per_trial=4), "killed.toml")
        trial_id = c.first_trial(exp_id)
        wait_for(lambda: int(c.experiment(exp_id)["trials"][0]["total_batches"]) >= 100, 60,
                 "100 batches and their checkpoints")
        pid = wait_for(lambda: worker_pid(f"{trial_id}.1", 1), 10, "the second worker of the first run")
        os.kill(pid, signal.SIGKILL)
        exp = c.wait_experiment(exp_id, DONE, timeout=120, interval=0.5)
        trial = exp["trials"][0]
        logs = c.trial_logs(trial_id)
        self.assertEqual(trial["state"], "STATE_COMPLETED", logs[-15:])
        self.assertEqual(trial["restarts"], 1)  # the worker's death is the trial's failure
        self.assertEqual(int(trial["total_batches"]), 500)
        self.assertTrue(any("trial failed: on agent " in l and "one of the run's 2: the worker was killed by signal 9" in l
                            for l in logs), logs)
        self.assertTrue(any("Resuming from checkpoint" in l for l in logs), logs)
        self.assertEqual(sum("worker 1 of 2 connected to the others" in l for l in logs), 2, logs)
        steps = [int(m["total_batches"]) for m in c.get(f"/api/v1/trials/{trial_id}/metrics?group=validation")["metrics"]]
        self.assertEqual(steps, [100, 200, 300, 400, 500])

    def test_c_a_master_killed_mid_run_takes_back_both_workers(self):
        c = self.cluster
        # Over Gloo: the TCP path of workers on different hosts, through a master restart.
        exp_id = c.submit(simulated_config("master-killed", 800, seconds_per_batch=0.01, validation_period=100,
                                           slots_per_trial=4) + OVER_TCP, "restart.toml")
        trial_id = c.first_trial(exp_id)
        wait_for(lambda: int(c.experiment(exp_id)["trials"][0]["total_batches"]) >= 100, 60, "training")
        workers = [worker_pid(f"{trial_id}.1", rank) for rank in (0, 1)]
        self.assertTrue(all(workers), workers)
        os.kill(c.master.pid, signal.SIGKILL)
        c.master.wait()
        c.start_master()
        # The same two workers still train under the restarted master.
        self.assertEqual([worker_pid(f"{trial_id}.1", rank) for rank in (0, 1)], workers)
        exp = c.wait_experiment(exp_id, DONE, timeout=120, interval=0.5)
        trial = exp["trials"][0]
        self.assertEqual(trial["state"], "STATE_COMPLETED", c.trial_logs(trial_id)[-15:])
        # The restored trial took its run back on both agents: no second run, no restart, and the
        # same two workers trained to the end.
        self.assertEqual(trial["runs"], 1)
        self.assertEqual(trial["restarts"], 0)
        self.assertEqual(int(trial["total_batches"]), 800)
        logs = c.trial_logs(trial_id)
        self.assertTrue(any("the master restarted: waiting up to" in l for l in logs), logs)
        for rank in (0, 1):
            self.assertTrue(any(f"worker {rank} of 2 connected to the others over Gloo" in l for l in logs), logs)
        steps = [int(m["total_batches"]) for m in c.get(f"/api/v1/trials/{trial_id}/metrics?group=validation")["metrics"]]
        self.assertEqual(steps, [100, 200, 300, 400, 500, 600, 700, 800])


if __name__ == "__main__":
    unittest.main(verbosity=2)
