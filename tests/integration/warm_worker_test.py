#!/usr/bin/env python3
"""Warm workers: an agent's trial run is handed to a det-worker started before it and already
connected to the master (which then shows the run's command line), one per slot, replaced after
each run by one that preloads what that run wanted: LibTorch for builtin:mlp, nothing for
builtin:simulate; either kind takes either run. A config that sets environment variables, and any
run on an agent started with --warm-workers=0, start cold. Each run, warm or cold, is a process of
its own."""

import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, pids_with_args, simulated_config, synthetic_config, wait_for  # noqa: E402

TERMINAL = {"STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"}


def started_at(pid):
    """When the process started, in clock ticks since boot: comparable between processes only."""
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


class marker:
    """A process started now: what started before it started before the submit that follows."""

    def __enter__(self):
        self.process = subprocess.Popen(["sleep", "60"])
        return started_at(self.process.pid)

    def __exit__(self, *exc):
        self.process.kill()
        self.process.wait()


def connected_to_port(pid, port):
    """Whether the process holds an established TCP connection to 127.0.0.1:port."""
    sockets = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            sockets.add(target[8:-1])
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            remote, state, inode = fields[2], fields[3], fields[9]
            if state == "01" and inode in sockets and remote == f"0100007F:{port:04X}":
                return True
    return False


def waits_for_its_run(pid):
    """Whether the worker's main thread is blocked reading its stdin (read(0, ...): syscall 0 on
    x86-64), which a warm worker does only once it has preloaded, reached the master and said so."""
    with open(f"/proc/{pid}/syscall") as f:
        return f.read().split()[:2] == ["0", "0x0"]


def command_line_of(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return [a.decode() for a in f.read().split(b"\0") if a]


def parent_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def children_with_args(agent_pid, *args):
    """The agent's child processes whose command line has every one of `args` (other tests'
    agents may run workers with the same trial ids at the same time)."""
    found = []
    for pid in pids_with_args(*args):
        try:
            if parent_of(pid) == agent_pid:
                found.append(pid)
        except OSError:
            pass  # it ended meanwhile
    return found


class WarmWorkerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(agents=1, slots="cpu:1").start()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def worker_of(self, trial_id):
        """The pid, start time and command line of trial_id's worker, read together while it runs:
        a short run may end right after it is found, and an exited worker's command line is empty."""
        agent = self.cluster.agents[0].pid

        def running():
            for pid in children_with_args(agent, f"--trial={trial_id}"):
                try:
                    argv, start = command_line_of(pid), started_at(pid)
                except OSError:
                    continue  # reaped meanwhile
                if argv:
                    return pid, start, argv
            return None

        return wait_for(running, 30, f"trial {trial_id}'s worker")

    def waiting_workers(self, preload=None):
        args = ("--warm",) + ((f"--preload={preload}",) if preload else ())
        return children_with_args(self.cluster.agents[0].pid, *args)

    def ready_worker(self, preload):
        """A waiting worker that preloaded `preload` and is ready for a run."""
        return wait_for(lambda: [p for p in self.waiting_workers(preload) if waits_for_its_run(p)] or None, 30,
                        f"a warm worker with --preload={preload}, ready")

    def test_a_a_run_goes_to_a_worker_started_before_it_and_a_successor_follows(self):
        c = self.cluster
        waiting = self.ready_worker("libtorch")
        self.assertEqual(self.waiting_workers(), waiting)  # one per slot
        # It reached the master while it waited: its run's hello needs no connection of its own.
        self.assertTrue(connected_to_port(waiting[0], c.port))
        with marker() as submitted:
            exp_id = c.submit(synthetic_config("warm", 300), "warm.toml")
        trial_id = c.first_trial(exp_id)
        pid, start, argv = self.worker_of(trial_id)
        self.assertEqual(pid, waiting[0])
        self.assertLess(start, submitted)
        self.assertIn(f"--trial={trial_id}", argv)
        self.assertTrue(any(a.startswith("--allocation=") for a in argv), argv)
        successor = wait_for(lambda: [p for p in self.waiting_workers() if p != pid] or None, 30, "its successor")
        exp = c.wait_experiment(exp_id, TERMINAL, timeout=120)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED")
        self.assertEqual(int(exp["trials"][0]["total_batches"]), 300)
        # The next run gets the successor: a process of its own, never the one that ran before.
        exp_id = c.submit(synthetic_config("warm-again", 300), "warm-again.toml")
        self.assertEqual(self.worker_of(c.first_trial(exp_id))[0], successor[0])
        self.assertEqual(c.wait_experiment(exp_id, TERMINAL, timeout=120)["experiment"]["state"], "STATE_COMPLETED")

    def test_b_a_config_with_its_own_variables_starts_cold(self):
        c = self.cluster
        config = synthetic_config("own-variables", 300) + \
            '[environment]\nenvironment_variables = ["OMP_NUM_THREADS=1"]\n'
        waiting = wait_for(lambda: self.waiting_workers() or None, 30, "a warm worker")
        with marker() as submitted:
            exp_id = c.submit(config, "own-variables.toml")
        _, start, _ = self.worker_of(c.first_trial(exp_id))
        self.assertGreaterEqual(start, submitted)
        self.assertEqual(self.waiting_workers(), waiting)  # the warm worker still waits
        self.assertEqual(c.wait_experiment(exp_id, TERMINAL, timeout=120)["experiment"]["state"], "STATE_COMPLETED")

    def test_c_successors_preload_what_the_last_run_wanted_and_either_kind_takes_either_run(self):
        c = self.cluster
        # builtin:simulate needs no LibTorch, but takes the worker that preloaded it ...
        waiting = self.ready_worker("libtorch")
        exp_id = c.submit(simulated_config("simulated", 150, seconds_per_batch=0.02), "simulated.toml")
        pid = self.worker_of(c.first_trial(exp_id))[0]
        self.assertEqual(pid, waiting[0])
        # ... and its successor preloads nothing.
        successor = self.ready_worker("nothing")
        self.assertEqual(c.wait_experiment(exp_id, TERMINAL, timeout=120)["experiment"]["state"], "STATE_COMPLETED")
        # A LibTorch run handed to it loads LibTorch itself; its successor preloads LibTorch again.
        exp_id = c.submit(synthetic_config("after-simulated", 300), "after-simulated.toml")
        self.assertEqual(self.worker_of(c.first_trial(exp_id))[0], successor[0])
        exp = c.wait_experiment(exp_id, TERMINAL, timeout=120)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED")
        self.assertEqual(int(exp["trials"][0]["total_batches"]), 300)
        self.ready_worker("libtorch")


class NoWarmWorkerTest(unittest.TestCase):
    def test_an_agent_without_warm_workers_starts_every_run_cold(self):
        c = Cluster(agents=1, slots="cpu:1", agent_args=("--warm-workers=0",)).start()
        try:
            time.sleep(1)
            agent = c.agents[0].pid
            self.assertEqual(children_with_args(agent, "--warm"), [])
            with marker() as submitted:
                exp_id = c.submit(synthetic_config("cold", 300), "cold.toml")
            trial_id = c.first_trial(exp_id)
            pid = wait_for(lambda: (children_with_args(agent, f"--trial={trial_id}") or [None])[0], 30, "the worker")
            self.assertGreaterEqual(started_at(pid), submitted)
            self.assertEqual(c.wait_experiment(exp_id, TERMINAL, timeout=120)["experiment"]["state"], "STATE_COMPLETED")
        finally:
            c.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
