#!/usr/bin/env python3
"""examples/pytorch-core-api on 2 agents: a PyTorch CNN written against Determined's Core API,
trained with torch.distributed (gloo, DDP) through det's launcher, one process per agent; it
checkpoints on a pause, and a worker killed afterwards makes the trial restart from that
checkpoint and complete."""

import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, pids_with_args, wait_for  # noqa: E402

EXAMPLE = os.path.join(os.path.dirname(__file__), "../../examples/pytorch-core-api")
CONFIG = """
name = "pytorch-two-agents"
entrypoint = "/usr/bin/python3 -m determined.launch.torch_distributed /usr/bin/python3 train.py"
max_restarts = 1
[resources]
slots_per_trial = 2
[hyperparameters]
global_batch_size = 64
learning_rate = 0.003
channels = 8
train_limit = 6400
validation_limit = 500
[searcher]
name = "single"
metric = "validation_loss"
max_length = { batches = 300 }
"""


def trainers():
    """pids of the example's training processes (not the launcher's wrappers around them)."""
    found = []
    for pid in pids_with_args("train.py"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[1] == b"train.py":
                    found.append(pid)
        except (OSError, IndexError):
            pass
    return found


def rank_of(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            variables = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
        return int(variables.get(b"RANK", b"-1"))
    except OSError:
        return -1


class PytorchExampleTest(unittest.TestCase):
    def test_trains_on_two_agents_and_resumes_after_a_worker_kill(self):
        # The test command installs python3-torch (scripts/install-deps.sh --with-tests): without it
        # this test fails rather than passing untried.
        self.assertTrue(os.path.exists("/usr/lib/python3/dist-packages/torch"),
                        "needs Debian's python3-torch (scripts/install-deps.sh --with-tests)")
        c = Cluster(agents=2, slots="cpu:1").start()
        try:
            exp_id = c.submit_directory(CONFIG, EXAMPLE)
            trial_id = c.first_trial(exp_id)

            def trained():
                reports = c.get(f"/api/v1/trials/{trial_id}/metrics?group=training")["metrics"]
                return int(reports[-1]["total_batches"]) if reports else 0

            wait_for(lambda: trained() >= 20, 120, "the first training reports")
            c.post(f"/api/v1/experiments/{exp_id}/pause", {})
            wait_for(lambda: c.experiment(exp_id)["trials"][0]["state"] == "STATE_PAUSED", 120, "the trial to pause")
            self.assertTrue(c.experiment(exp_id)["trials"][0]["latest_checkpoint_uuid"])
            c.post(f"/api/v1/experiments/{exp_id}/activate", {})
            chief_continued = lambda: sum("[rank=0] continuing from checkpoint" in line for line in c.trial_logs(trial_id))
            wait_for(lambda: chief_continued() == 1, 120, "the resumed run to load the checkpoint")
            wait_for(lambda: any(rank_of(p) == 1 for p in trainers()), 120, "rank 1 to run again")
            (victim,) = [p for p in trainers() if rank_of(p) == 1]
            os.kill(victim, signal.SIGKILL)
            exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=300)
            logs = c.trial_logs(trial_id)
            self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED", logs[-40:])
            trial = exp["trials"][0]
            self.assertEqual(int(trial["restarts"]), 1)
            self.assertEqual(int(trial["total_batches"]), 300)
            # The run after the kill continued from a checkpoint too, not from batch 0.
            self.assertEqual(chief_continued(), 2, logs[-40:])
            self.assertGreater(trial["latest_validation"]["validation_accuracy"], 0.5)
        finally:
            c.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
