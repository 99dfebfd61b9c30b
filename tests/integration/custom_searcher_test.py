#!/usr/bin/env python3
"""The custom searcher on a real cluster: examples/custom-searcher drives a search of 12
builtin:simulate trials with Optuna's ask/tell (Debian's python3-optuna) over REST, and the
master is killed with SIGKILL in the middle; the search goes on from what was committed and
ends with exactly the trials the client asked for. Bad operations are refused by name."""

import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(__file__))
from cluster import BIN, Cluster, wait_for  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
EXAMPLE = os.path.join(ROOT, "examples", "custom-searcher")
PYTHON_PACKAGE = os.path.join(BIN, "..", "share", "det", "python")


def terminal_trials(c, exp_id):
    return [t for t in c.experiment(exp_id)["trials"] if t["state"] in ("STATE_COMPLETED", "STATE_ERROR",
                                                                         "STATE_CANCELED")]


class CustomSearcherTest(unittest.TestCase):
    def test_optuna_drives_twelve_trials_through_a_master_kill(self):
        c = Cluster(agents=1, slots="cpu:3").start()
        runner = None
        try:
            searcher_dir = tempfile.mkdtemp(prefix="searcher-", dir=c.root)
            env = dict(os.environ, DET_MASTER=c.url, DET_USER_TOKEN=c.token, PYTHONPATH=PYTHON_PACKAGE,
                       PYTHONUNBUFFERED="1")
            with open(os.path.join(c.root, "runner.log"), "wb") as log:
                runner = subprocess.Popen(
                    ["/usr/bin/python3", os.path.join(EXAMPLE, "optuna_search.py"),
                     os.path.join(EXAMPLE, "experiment.toml"), "--trials", "12", "--searcher-dir", searcher_dir],
                    env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

            def runner_log():
                with open(os.path.join(c.root, "runner.log")) as f:
                    return f.read()

            exp_id = wait_for(lambda: (c.get("/api/v1/experiments")["experiments"] or [{}])[0].get("id"), 60,
                              "the runner to create its experiment")
            ended_before = wait_for(lambda: len(terminal_trials(c, exp_id)) >= 3 and len(terminal_trials(c, exp_id)),
                                    120, "3 trials to end")
            os.kill(c.master.pid, signal.SIGKILL)
            self.assertLess(ended_before, 10)  # killed in the middle of the search
            c.master.wait()
            c.start_master()

            self.assertEqual(runner.wait(timeout=300), 0, runner_log())
            exp = c.experiment(exp_id)
            self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED", runner_log())
            trials = exp["trials"]
            self.assertEqual(len(trials), 12, [t["hparams"] for t in trials])
            self.assertEqual({t["state"] for t in trials}, {"STATE_COMPLETED"})
            self.assertEqual(len({t["hparams"] for t in trials}), 12)  # every one Optuna's own sample
            self.assertEqual(sorted(int(t["request_id"]) for t in trials), list(range(1, 13)))
            lengths = sorted({int(t["total_batches"]) for t in trials})
            self.assertTrue(set(lengths) <= {25, 50}, lengths)  # pruned at 25, or trained to 50
            self.assertIn(50, lengths)
            self.assertIn("12 trials", runner_log())

            # The search is over: its events say so, and it takes no more operations.
            events = c.get(f"/api/v1/experiments/{exp_id}/searcher_events")["searcher_events"]
            self.assertEqual(events[-1]["experiment_inactive"]["experiment_state"], "STATE_COMPLETED")
            status, reply = c.status("POST", f"/api/v1/experiments/{exp_id}/searcher_operations",
                                     {"searcher_operations": [{"shut_down": {}}], "triggered_by_event": {"id": 1}})
            self.assertEqual(status, 400)
            self.assertIn("has ended", reply)
        finally:
            if runner and runner.poll() is None:
                os.killpg(runner.pid, signal.SIGKILL)
                runner.wait()
            c.stop()

    def test_reads_waiting_for_events_hold_none_of_the_gateways_threads(self):
        c = Cluster(agents=1, slots="cpu:1").start()
        try:
            exp_id = c.submit('name = "long poll"\nentrypoint = "builtin:simulate"\n'
                              '[searcher]\nname = "custom"\nmetric = "validation_loss"\nunit = "batches"\n'
                              '[data]\nseconds_per_batch = 0.1\n')
            events_path = f"/api/v1/experiments/{exp_id}/searcher_events"
            ops_path = f"/api/v1/experiments/{exp_id}/searcher_operations"

            def post(event_id, *operations):
                self.assertEqual(c.post(ops_path, {"searcher_operations": list(operations),
                                                   "triggered_by_event": {"id": event_id}}), {})

            initial = c.get(events_path)["searcher_events"][0]
            post(initial["id"], {"create_trial": {"request_id": "a", "hyperparams": "{\"x\": 1}"}})
            created = wait_for(lambda: c.get(events_path)["searcher_events"], 30, "the trial created event")[0]
            self.assertEqual(created["trial_created"]["request_id"], "a")
            # Trained for 8 s before its validation: nothing to read until then.
            post(created["id"], {"trial_operation": {"validate_after": {"request_id": "a", "length": 80}}})
            with ThreadPoolExecutor(48) as pool:  # more waiting reads than the gateway has handler threads (32)
                waiting = [pool.submit(c.get, events_path) for _ in range(48)]
                time.sleep(1)
                started = time.monotonic()
                self.assertEqual(c.experiment(exp_id)["experiment"]["id"], str(exp_id))
                self.assertLess(time.monotonic() - started, 3)  # answered while they all wait
                self.assertFalse(any(w.done() for w in waiting))
                for w in waiting:  # the validation's event answers every one of them
                    events = w.result(timeout=60)["searcher_events"]
                    self.assertIn("validation_completed", events[0], events)
        finally:
            c.stop()

    def test_bad_operations_are_refused_by_name(self):
        c = Cluster(agents=1, slots="cpu:1").start()
        try:
            with open(os.path.join(EXAMPLE, "experiment.toml")) as f:
                config = f.read()
            exp_id = c.submit(config)
            events = c.get(f"/api/v1/experiments/{exp_id}/searcher_events")["searcher_events"]
            self.assertEqual(len(events), 1)
            self.assertIn("initial_operations", events[0])
            path = f"/api/v1/experiments/{exp_id}/searcher_operations"
            status, reply = c.status("POST", path, {
                "searcher_operations": [{"create_trial": {"request_id": "a", "hyperparams": "{\"x\": 1}"}},
                                        {"trial_operation": {"validate_after": {"request_id": "b", "length": 10}}}],
                "triggered_by_event": {"id": 1}})
            self.assertEqual(status, 400)
            self.assertEqual(reply, "searcher operation 2: no trial was created with request id \"b\"")
            self.assertEqual(c.experiment(exp_id)["trials"], [])  # nothing of the refused post was carried out
            # The same post, fixed, creates the trial; posted again it changes nothing.
            good = {"searcher_operations": [{"create_trial": {"request_id": "a", "hyperparams": "{\"x\": 1}"}}],
                    "triggered_by_event": {"id": 1}}
            self.assertEqual(c.post(path, good), {})
            self.assertEqual(c.post(path, good), {})
            created = wait_for(lambda: c.get(f"/api/v1/experiments/{exp_id}/searcher_events")["searcher_events"], 30,
                               "the trial created event")
            self.assertEqual(created[0]["trial_created"]["request_id"], "a")
            self.assertEqual(len(c.experiment(exp_id)["trials"]), 1)
            # inspect searcher N in the REPL shows the queue.
            repl = c.det("repl", "-c", f"inspect searcher {exp_id}")
            self.assertIn("events not acknowledged: 1", repl.stdout, repl.stdout + repl.stderr)
            # Killed with its trial waiting for a length: the search ends CANCELED and says so.
            self.assertEqual(c.post(f"/api/v1/experiments/{exp_id}/kill", {}), {})
            c.wait_experiment(exp_id, {"STATE_CANCELED"}, timeout=60)
            events = c.get(f"/api/v1/experiments/{exp_id}/searcher_events")["searcher_events"]
            self.assertEqual(events[-1]["experiment_inactive"]["experiment_state"], "STATE_CANCELED")

            # Determined's YAML over REST, named by its path.
            other = c.post("/api/v1/experiments", {"config_path": "single.yaml", "config": (
                "entrypoint: builtin:simulate\nhyperparameters:\n  x: 1\n"
                "searcher:\n  name: single\n  metric: validation_loss\n  max_length:\n    batches: 5\n")})
            other = other["experiment"]["id"]
            status, reply = c.status("GET", f"/api/v1/experiments/{other}/searcher_events")
            self.assertEqual(status, 400)
            self.assertIn("single searcher, which has no searcher events", reply)
        finally:
            c.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
