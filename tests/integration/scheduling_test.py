#!/usr/bin/env python3
"""Scheduling on real clusters of 2 agents x cpu:4 running builtin:simulate trials: priority
without preemption (queue order, max_slots, gangs, job and agent commands), priority with
preemption (checkpoint, requeue, resume; backfilling) and fair share."""

import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, parse_time, simulate, wait_for  # noqa: E402

DONE = {"STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"}


def jobs(c):
    return {int(j["experiment_id"]): j for j in c.get("/api/v1/job-queues")["jobs"]}


def allocated(c, exp_id):
    job = jobs(c).get(exp_id)
    return int(job["allocated_slots"]) if job else 0


def first_start(c, trial_id):
    """When the trial's first container started, from its log's time."""
    logs = c.get(f"/api/v1/trials/{trial_id}/logs?limit=10000")["logs"]
    return min(parse_time(l["time"]) for l in logs if "container started" in l["text"])


class SchedulingCase(unittest.TestCase):
    MASTER = ""

    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(agents=2, slots="cpu:4", master_config=cls.MASTER).start()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def finished(self, exp_id, timeout=240):
        exp = self.cluster.wait_experiment(exp_id, DONE, timeout=timeout, interval=0.5)
        return exp

    def completed(self, exp_id, trials):
        exp = self.finished(exp_id)
        c = self.cluster
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED",
                         [(t["id"], t["state"], c.trial_logs(t["id"])[-5:]) for t in exp["trials"]])
        self.assertEqual(len(exp["trials"]), trials)
        return exp


class PriorityTest(SchedulingCase):
    # A short reconnect wait: a pool refuses requests it can never hold only once that much time
    # has passed since it started.
    MASTER = """
[resource_manager]
agent_reconnect_wait = 3
[[resource_pools]]
pool_name = "default"
description = "two agents, no preemption"
[resource_pools.scheduler]
type = "priority"
"""

    def test_1_higher_priority_runs_before_the_rest_of_a_queue(self):
        c = self.cluster
        low = c.submit(simulate("low", trials=12, batches=60, priority=60), "low.toml")
        wait_for(lambda: allocated(c, low) == 8, 60, "the low-priority job to fill the 8 slots")
        high = c.submit(simulate("high", trials=8, batches=30, priority=10), "high.toml")
        wait_for(lambda: high in jobs(c), 30, "the high-priority job to queue")
        self.assertEqual(jobs(c)[high]["state"], "QUEUED")
        high_exp = self.completed(high, 8)
        low_exp = self.completed(low, 12)
        # Without preemption nothing was interrupted, and the high-priority trials all started
        # before the low job's last four, which waited behind them.
        low_starts = sorted(first_start(c, t["id"]) for t in low_exp["trials"])
        high_starts = [first_start(c, t["id"]) for t in high_exp["trials"]]
        self.assertLess(max(high_starts), low_starts[8])
        for t in low_exp["trials"]:
            self.assertFalse(any("preempted" in l for l in c.trial_logs(t["id"])))

    def test_2_max_slots_caps_an_experiment_and_can_be_changed(self):
        c = self.cluster
        exp_id = c.submit(simulate("capped", trials=6, batches=80, max_slots=2), "capped.toml")
        wait_for(lambda: allocated(c, exp_id) == 2, 60, "two trials to run")
        seen = 0
        for _ in range(10):
            seen = max(seen, allocated(c, exp_id))
            time.sleep(0.1)
        self.assertEqual(seen, 2)
        out = c.det("experiment", "set", "max-slots", str(exp_id), "3")
        self.assertEqual(out.returncode, 0, out.stderr)
        wait_for(lambda: allocated(c, exp_id) == 3, 60, "a third trial to start")
        self.assertEqual(int(jobs(c)[exp_id]["max_slots"]), 3)
        self.completed(exp_id, 6)

    def test_3_gangs_on_one_agent_and_across_two(self):
        c = self.cluster
        exp_id = c.submit(simulate("gang", trials=1, batches=100, slots_per_trial=4), "gang.toml")
        wait_for(lambda: allocated(c, exp_id) == 4, 60, "the 4-slot trial to start")
        slots = c.get("/api/v1/agents")["agents"]
        holders = {(a["id"], s.get("allocation_id", "")) for a in slots for s in a["slots"] if s.get("allocation_id")}
        self.assertEqual(len(holders), 1, holders)  # one agent, one allocation
        agent = holders.pop()[0]
        self.assertEqual(sum(1 for a in slots if a["id"] == agent for s in a["slots"] if s.get("allocation_id")), 4)
        self.completed(exp_id, 1)

        # 8 slots take both agents whole: one worker on each, training together.
        wide = c.submit(simulate("wide", trials=1, batches=150, slots_per_trial=8), "wide.toml")
        wait_for(lambda: allocated(c, wide) == 8, 60, "the 8-slot trial to start")
        agents = c.get("/api/v1/agents")["agents"]
        holders = {a["id"] for a in agents for s in a["slots"] if s.get("allocation_id")}
        self.assertEqual(len(holders), 2, agents)
        exp = self.completed(wide, 1)
        logs = "\n".join(c.trial_logs(exp["trials"][0]["id"]))
        self.assertIn("worker 0 of 2 connected to the others", logs)
        self.assertIn("worker 1 of 2 connected to the others", logs)

        # 6 slots fit neither one agent nor whole agents of one size: a clear error, not a queue.
        odd = c.submit(simulate("odd", trials=1, batches=10, slots_per_trial=6), "odd.toml")
        trial = self.finished(odd)["trials"][0]
        self.assertEqual(trial["state"], "STATE_ERROR")
        self.assertIn("the trial needs 6 slots, which pool default cannot give", trial["exit_reason"])
        self.assertIn("2 with 4 slots", trial["exit_reason"])

        # A Core API trial spans agents as Determined's launcher does: its entrypoint runs once on
        # each, told its place (DET_CONTAINER_RANK, DET_CONTAINER_ADDRS).
        command = simulate("command", trials=1, batches=10, slots_per_trial=8).replace(
            'entrypoint = "builtin:simulate"',
            'entrypoint = "sh -c \'echo container $DET_CONTAINER_RANK of $DET_CONTAINER_ADDRS\'"')
        trial = self.finished(c.submit(command, "command.toml"))["trials"][0]
        self.assertEqual(trial["state"], "STATE_COMPLETED", c.trial_logs(trial["id"]))
        logs = c.trial_logs(trial["id"])
        self.assertTrue(any("placed on agent-0, agent-1" in line or "placed on agent-1, agent-0" in line
                            for line in logs), logs)
        for rank in (0, 1):
            self.assertTrue(any(f"container {rank} of 127.0.0.1,127.0.0.1" in line for line in logs), logs)

    def test_4_job_list_and_update(self):
        c = self.cluster
        blocker = c.submit(simulate("blocker", trials=8, batches=100), "blocker.toml")
        wait_for(lambda: allocated(c, blocker) == 8, 60, "the blocker to fill the slots")
        queued = c.submit(simulate("queued", trials=2, batches=10), "queued.toml")
        wait_for(lambda: queued in jobs(c), 30, "the second job to queue")
        out = c.det("job", "list")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("QUEUED", out.stdout)
        self.assertIn("SCHEDULED", out.stdout)
        out = c.det("job", "update", str(queued), "--priority", "5", "--weight", "2")
        self.assertEqual(out.returncode, 0, out.stderr)
        job = jobs(c)[queued]
        self.assertEqual((job["priority"], job["weight"]), (5, 2))
        out = c.det("job", "update", str(queued), "--priority", "0")
        self.assertNotEqual(out.returncode, 0)
        out = c.det("experiment", "set", "priority", str(queued), "100")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("between 1 and 99", out.stderr)
        out = c.det("resource-pool", "list")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("two agents, no preemption", out.stdout)
        self.assertIn("priority (default 42, no preemption)", out.stdout)
        for exp_id in (blocker, queued):
            c.det("experiment", "kill", str(exp_id))
            self.finished(exp_id)

    def test_5_disabled_agents_and_slots_take_no_new_trials(self):
        c = self.cluster
        out = c.det("agent", "disable", "agent-1", "--drain")
        self.assertEqual(out.returncode, 0, out.stderr)
        out = c.det("slot", "disable", "agent-0", "0")
        self.assertEqual(out.returncode, 0, out.stderr)
        out = c.det("agent", "list")
        self.assertIn("no (draining)", out.stdout)
        self.assertNotEqual(c.det("slot", "disable", "agent-0", "9").returncode, 0)
        self.assertNotEqual(c.det("agent", "disable", "nobody").returncode, 0)
        try:
            exp_id = c.submit(simulate("narrow", trials=5, batches=60), "narrow.toml")
            wait_for(lambda: allocated(c, exp_id) == 3, 60, "three trials to run")
            time.sleep(0.5)
            self.assertEqual(allocated(c, exp_id), 3)  # agent-0's slots 1-3 only
            agents = c.get("/api/v1/agents")["agents"]
            used = {(a["id"], s["id"]) for a in agents for s in a["slots"] if s.get("allocation_id")}
            self.assertTrue(used <= {("agent-0", 1), ("agent-0", 2), ("agent-0", 3)}, used)
        finally:
            c.det("agent", "enable", "agent-1")
            c.det("slot", "enable", "agent-0", "0")
        wait_for(lambda: allocated(c, exp_id) in (0, 5) or jobs(c).get(exp_id, {}).get("queued_tasks", 0) == 0,
                 60, "the queued trials to start once the agent is back")
        self.completed(exp_id, 5)


class PreemptionTest(SchedulingCase):
    MASTER = """
[resource_manager.scheduler]
type = "priority"
[resource_manager.scheduler.priority]
preemption = true
"""

    def test_1_preempted_trials_checkpoint_requeue_and_resume(self):
        c = self.cluster
        low = c.submit(simulate("low", trials=8, batches=300, priority=60), "low.toml")
        wait_for(lambda: allocated(c, low) == 8, 60, "the low-priority job to fill the slots")
        # Preempted once they have trained a while, so that they have something to resume.
        wait_for(lambda: all(int(t["total_batches"]) > 0 for t in c.experiment(low)["trials"]), 60,
                 "every low-priority trial to report training")
        high = c.submit(simulate("high", trials=4, batches=20, priority=10), "high.toml")
        self.completed(high, 4)
        low_exp = self.completed(low, 8)
        preempted = [t for t in low_exp["trials"] if any("preempted by the scheduler" in l
                                                         for l in c.trial_logs(t["id"]))]
        self.assertEqual(len(preempted), 4)
        for t in low_exp["trials"]:
            self.assertEqual(t["restarts"], 0)  # preemption is not a failure
            self.assertEqual(int(t["total_batches"]), 300)
        for t in preempted:
            logs = c.trial_logs(t["id"])
            self.assertTrue(any("back in the queue, to continue from checkpoint" in l for l in logs), logs)
            self.assertTrue(any("Resuming from checkpoint" in l for l in logs), logs)

    def test_2_preemptible_trials_backfill_behind_a_blocked_gang(self):
        c = self.cluster
        # Two 3-slot trials leave one free slot on each agent.
        holder = c.submit(simulate("holder", trials=2, batches=150, slots_per_trial=3, priority=10), "holder.toml")
        wait_for(lambda: allocated(c, holder) == 6, 60, "the 3-slot trials to start")
        blocked = c.submit(simulate("blocked", trials=1, batches=10, slots_per_trial=4, priority=10), "blocked.toml")
        wait_for(lambda: blocked in jobs(c), 30, "the 4-slot trial to queue")
        filler = c.submit(simulate("filler", trials=2, batches=400, priority=50), "filler.toml")
        wait_for(lambda: allocated(c, filler) == 2, 60, "the lower priority to backfill the free slots")
        self.assertEqual(jobs(c)[filler]["state"], "SCHEDULED_BACKFILLED")
        self.assertEqual(jobs(c)[blocked]["state"], "QUEUED")
        self.completed(holder, 2)
        self.completed(blocked, 1)
        # It took a backfilled slot back rather than wait for the fillers to end.
        fillers = c.experiment(filler)["trials"]
        self.assertTrue(any("preempted by the scheduler" in l for t in fillers for l in c.trial_logs(t["id"])))
        c.det("experiment", "kill", str(filler))
        self.finished(filler)


class FairShareTest(SchedulingCase):
    MASTER = """
[resource_manager.scheduler]
type = "fair_share"
"""

    def test_fair_share_splits_the_slots_by_weight(self):
        c = self.cluster
        light = c.submit(simulate("light", trials=8, batches=200, weight=1), "light.toml")
        wait_for(lambda: allocated(c, light) == 8, 60, "the first job to take every slot")
        heavy = c.submit(simulate("heavy", trials=8, batches=40, weight=3), "heavy.toml")
        wait_for(lambda: allocated(c, heavy) == 6 and allocated(c, light) == 2, 60,
                 "the slots to be split 6:2 by weight")
        self.completed(heavy, 8)
        light_exp = self.completed(light, 8)
        for t in light_exp["trials"]:
            self.assertEqual(t["restarts"], 0)
            self.assertEqual(int(t["total_batches"]), 200)


if __name__ == "__main__":
    unittest.main(verbosity=2)
