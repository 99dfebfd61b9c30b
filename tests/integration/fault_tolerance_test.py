#!/usr/bin/env python3
"""Fault tolerance with real processes: an agent killed with SIGKILL mid-trial (the trial
finishes on the other agent from its checkpoint, no restart counted), a hung agent that comes
back within agent_reconnect_wait (its worker is reattached and never restarted), and a worker
that fails once more than max_restarts allows."""

import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, simulated_config, wait_for  # noqa: E402

DONE = {"STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"}


def assert_continuous_metrics(test, c, trial_id, last):
    for group in ("training", "validation"):
        steps = [int(m["total_batches"]) for m in c.get(f"/api/v1/trials/{trial_id}/metrics?group={group}")["metrics"]]
        test.assertEqual(steps, sorted(set(steps)), f"{group} steps repeat or go back: {steps}")
        test.assertEqual(steps[-1], last, group)


class AgentLossTest(unittest.TestCase):
    """agent_reconnect_wait = 3 s: a dead agent's trial moves on quickly."""

    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(agents=2, slots="cpu:4",
                              master_config="[resource_manager]\nagent_reconnect_wait = 3\n").start()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def test_a_killed_agent_s_trial_finishes_elsewhere_without_a_restart(self):
        c = self.cluster
        exp_id = c.submit(simulated_config("agent-killed", 400), "killed.toml")
        trial_id = c.first_trial(exp_id)
        wait_for(lambda: int(c.experiment(exp_id)["trials"][0]["total_batches"]) >= 100, 60,
                 "100 batches and their checkpoint")
        agent_id, allocation = wait_for(lambda: c.agent_of(trial_id), 10, "the trial's agent")
        index = int(agent_id.split("-")[1])
        victim = c.agents[index]
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        self.addCleanup(c.restart_agent, index)
        wait_for(lambda: not c.agent_connected(agent_id), 10, "the master to notice the dead agent")
        exp = c.wait_experiment(exp_id, DONE, timeout=120, interval=0.5)
        trial = exp["trials"][0]
        logs = c.trial_logs(trial_id)
        self.assertEqual(trial["state"], "STATE_COMPLETED", logs[-10:])
        self.assertEqual(trial["restarts"], 0)
        self.assertEqual(int(trial["total_batches"]), 400)
        self.assertTrue(any("the run was lost" in l and "did not reconnect within 3 s" in l for l in logs), logs)
        self.assertTrue(any("Resuming from checkpoint" in l for l in logs), logs)
        self.assertEqual(trial["runs"], 2, logs)  # the second run ran on the agent that was left
        assert_continuous_metrics(self, c, trial_id, 400)

    def test_c_a_worker_cut_off_with_its_agent_cannot_report_over_its_successor(self):
        c = self.cluster
        exp_id = c.submit(simulated_config("partitioned", 1500, seconds_per_batch=0.01), "partitioned.toml")
        trial_id = c.first_trial(exp_id)
        wait_for(lambda: int(c.experiment(exp_id)["trials"][0]["total_batches"]) >= 50, 60, "training")
        agent_id, allocation = wait_for(lambda: c.agent_of(trial_id), 10, "the trial's agent")
        hung = c.agents[int(agent_id.split("-")[1])]
        os.kill(hung.pid, signal.SIGSTOP)  # the agent stops; its worker trains on
        try:
            wait_for(lambda: c.experiment(exp_id)["trials"][0]["runs"] >= 2 and
                     c.experiment(exp_id)["trials"][0]["state"] in ("STATE_STARTING", "STATE_RUNNING"),
                     30, "the trial's second run elsewhere once the agent is given up")
        finally:
            os.kill(hung.pid, signal.SIGCONT)
        exp = c.wait_experiment(exp_id, DONE, timeout=120, interval=0.5)
        trial = exp["trials"][0]
        logs = c.trial_logs(trial_id)
        self.assertEqual(trial["state"], "STATE_COMPLETED", logs[-10:])
        self.assertEqual(trial["restarts"], 0)
        # The first worker trained on ahead of the second run; its checkpoints (and reports) after
        # the second run began were refused, so no step was checkpointed by both runs.
        steps = [int(k["steps_completed"]) for k in c.get(f"/api/v1/trials/{trial_id}/checkpoints")["checkpoints"]]
        self.assertEqual(len(steps), len(set(steps)), sorted(steps))
        assert_continuous_metrics(self, c, trial_id, 1500)
        wait_for(lambda: c.agent_connected(agent_id), 30, "the agent to come back")

    def test_b_a_worker_that_fails_once_more_than_max_restarts_ends_in_error(self):
        c = self.cluster
        config = simulated_config("failing", 50, max_restarts=2).replace("[data]", '[data]\nnoise = "not a number"')
        exp_id = c.submit(config, "failing.toml")
        exp = c.wait_experiment(exp_id, DONE, timeout=120, interval=0.5)
        trial = exp["trials"][0]
        self.assertEqual(trial["state"], "STATE_ERROR")
        self.assertEqual(trial["restarts"], 2)
        self.assertIn("noise", trial["exit_reason"])
        self.assertEqual(trial["runs"], 3, c.trial_logs(trial["id"]))


class HungAgentTest(unittest.TestCase):
    """agent_reconnect_wait = 30 s: an agent hung for a few seconds gets its worker back."""

    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(agents=2, slots="cpu:4",
                              master_config="[resource_manager]\nagent_reconnect_wait = 30\n").start()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def test_a_hung_agent_that_returns_keeps_its_worker(self):
        c = self.cluster
        exp_id = c.submit(simulated_config("agent-hung", 600), "hung.toml")
        trial_id = c.first_trial(exp_id)
        wait_for(lambda: int(c.experiment(exp_id)["trials"][0]["total_batches"]) >= 50, 60, "training")
        agent_id, allocation = wait_for(lambda: c.agent_of(trial_id), 10, "the trial's agent")
        hung = c.agents[int(agent_id.split("-")[1])]
        os.kill(hung.pid, signal.SIGSTOP)
        try:
            # Heartbeats stop: the master gives up on the connection within seconds.
            wait_for(lambda: not c.agent_connected(agent_id), 20, "the master to notice the hung agent")
        finally:
            os.kill(hung.pid, signal.SIGCONT)
        wait_for(lambda: c.agent_connected(agent_id), 20, "the agent to reconnect")
        exp = c.wait_experiment(exp_id, DONE, timeout=120, interval=0.5)
        trial = exp["trials"][0]
        logs = c.trial_logs(trial_id)
        self.assertEqual(trial["state"], "STATE_COMPLETED", logs[-10:])
        self.assertEqual(trial["restarts"], 0)
        self.assertEqual(sum("container started" in l for l in logs), 1, logs)  # never restarted
        self.assertFalse(any("the run was lost" in l for l in logs), logs)
        self.assertIn(f"agent {agent_id} reconnected with 1 running containers", c.log("master"))
        assert_continuous_metrics(self, c, trial_id, 600)


if __name__ == "__main__":
    unittest.main(verbosity=2)
