#!/usr/bin/env python3
"""Determined's PyTorch API on a real cluster, with examples/pytorch-trial's Fashion-MNIST
PyTorchTrial and its configs as a Determined user writes them (`python3 train.py`, YAML): a
Trainer search under adaptive ASHA paused and resumed bit-exactly, data-parallel training on
2 agents, and the legacy `model_def:FashionMNISTTrial` entrypoint. The trials run on Debian's
python3-torch: /usr/bin comes first on the cluster's PATH, so `python3` is /usr/bin/python3."""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, wait_for  # noqa: E402

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../examples/pytorch-trial")
DONE = {"STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"}


def example_config(name, edits):
    """examples/pytorch-trial/NAME with each (old, new) of `edits` replaced."""
    with open(os.path.join(EXAMPLE, name)) as f:
        text = f.read()
    for old, new in edits:
        assert old in text, (name, old)
        text = text.replace(old, new)
    return text


# Small enough for a test: 3,200 training images (100 batches of 32 an epoch), 320 to validate.
SMALL = [("global_batch_size: 64", "global_batch_size: 32\n  train_limit: 3200\n  validation_limit: 320")]


def require_torch():
    """The test command installs python3-torch (scripts/install-deps.sh --with-tests): without it this
    suite fails rather than passing untried."""
    found = subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True)
    if found.returncode != 0:
        raise RuntimeError("needs Debian's python3-torch (scripts/install-deps.sh --with-tests): "
                           + found.stderr.decode(errors="replace").strip().splitlines()[-1])


class PytorchTrialTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_torch()
        os.environ["PATH"] = "/usr/bin:" + os.environ.get("PATH", "")
        os.environ["FASHION_MNIST_DIR"] = "/usr/share/datasets/fashion-mnist"

    def series(self, c, trial_id, group, metric):
        reports = c.get(f"/api/v1/trials/{trial_id}/metrics?group={group}")["metrics"]
        return {int(r["total_batches"]): r["metrics"][metric] for r in reports}

    def run_search(self, c, config, pause_after=None):
        """The experiment's trials (by learning rate) once it ends; with `pause_after`, the
        experiment is paused when its first trial has trained that many batches, and activated
        again once its trials have stopped."""
        exp_id = c.submit_directory(config, EXAMPLE, "adaptive.yaml")
        if pause_after is not None:
            trial_id = c.first_trial(exp_id)
            wait_for(lambda: len(self.series(c, trial_id, "training", "loss")) >= pause_after, 180,
                     "the first trial to train")
            c.post(f"/api/v1/experiments/{exp_id}/pause", {})
            wait_for(lambda: all(t["state"] in ("STATE_PAUSED", "STATE_COMPLETED") for t in c.experiment(exp_id)["trials"]),
                     120, "the trials to stop")
            c.post(f"/api/v1/experiments/{exp_id}/activate", {})
        exp = c.wait_experiment(exp_id, DONE, timeout=600)
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED", c.log("master")[-3000:])
        return {json.loads(t["hparams"])["learning_rate"]: t for t in exp["trials"]}

    def test_a_trainer_search_paused_and_resumed_trains_exactly_as_one_not_paused(self):
        c = Cluster(agents=1, slots="cpu:1").start()
        try:
            config = example_config("adaptive.yaml", SMALL + [
                ("max_trials: 16", "max_trials: 2"), ("max_concurrent_trials: 2", "max_concurrent_trials: 1"),
                ("max_time: 1874", "max_time: 200"), ("validation_batches: 200", "validation_batches: 50\n  reporting_batches: 1"),
                ("channels:\n    type: categorical\n    vals: [8, 16, 32]", "channels: 4"),
            ]) + "reproducibility:\n  experiment_seed: 7\n"
            whole = self.run_search(c, config)
            paused = self.run_search(c, config, pause_after=30)
            self.assertEqual(sorted(whole), sorted(paused))
            for rate, trial in whole.items():
                other = paused[rate]
                self.assertEqual(int(trial["total_batches"]), int(other["total_batches"]))
                losses = self.series(c, trial["id"], "training", "loss")
                self.assertEqual(len(losses), int(trial["total_batches"]))  # one report a batch
                self.assertEqual(self.series(c, other["id"], "training", "loss"), losses)
                self.assertEqual(self.series(c, other["id"], "validation", "validation_loss"),
                                 self.series(c, trial["id"], "validation", "validation_loss"))
            first = min(paused.values(), key=lambda t: int(t["id"]))
            self.assertGreaterEqual(int(first["runs"]), 2, first)  # it was paused, and resumed
        finally:
            c.stop()

    def test_data_parallel_training_on_two_agents(self):
        c = Cluster(agents=2, slots="cpu:1").start()
        try:
            config = example_config("distributed.yaml", [
                ("global_batch_size: 128", "global_batch_size: 64\n  train_limit: 2560\n  validation_limit: 320")])
            exp_id = c.submit_directory(config, EXAMPLE, "distributed.yaml")
            exp = c.wait_experiment(exp_id, DONE, timeout=300)
            trial = exp["trials"][0]
            self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED", c.trial_logs(trial["id"])[-30:])
            self.assertEqual(int(trial["total_batches"]), 40)  # one epoch of 2,560 in global batches of 64
            self.assertIn("accuracy", trial["latest_validation"])
            # Both processes trained: the launcher runs one per agent and DDP needs both.
            logs = c.trial_logs(trial["id"])
            self.assertEqual({rank for rank in ("[rank=0]", "[rank=1]") if any(rank in line for line in logs)},
                             {"[rank=0]", "[rank=1]"})
            checkpoint = c.get(f"/api/v1/checkpoints/{trial['latest_checkpoint_uuid']}")["checkpoint"]
            for name in ("state_dict.pth", "trial_state.pkl", "load_data.json", "code/model_def.py"):
                self.assertIn(name, checkpoint["resources"])
            # The checkpoint builds the trial again, with its weights, outside det.
            path = os.path.join(checkpoint["storage_path"], checkpoint["uuid"])
            loaded = subprocess.run(["/usr/bin/python3", "-c", (
                "import sys; sys.path.insert(0, sys.argv[1]); from determined import pytorch; "
                "t = pytorch.load_trial_from_checkpoint_path(sys.argv[2]); print(type(t).__name__, t.model.fc.out_features)"),
                os.path.join(EXAMPLE, "../../python"), path], capture_output=True, text=True)
            self.assertEqual(loaded.stdout.split(), ["FashionMNISTTrial", "10"], loaded.stderr)
        finally:
            c.stop()

    def test_the_legacy_entrypoint_trains_the_trial_class(self):
        c = Cluster(agents=1, slots="cpu:1").start()
        try:
            config = example_config("legacy.yaml", SMALL + [
                ("scheduling_unit: 100", "scheduling_unit: 10"), ("batches: 300", "batches: 30"),
                ("batches: 937", "batches: 60")])
            exp_id = c.submit_directory(config, EXAMPLE, "legacy.yaml")
            exp = c.wait_experiment(exp_id, DONE, timeout=300)
            trial = exp["trials"][0]
            self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED", c.trial_logs(trial["id"])[-30:])
            self.assertEqual(sorted(self.series(c, trial["id"], "training", "loss")), [10, 20, 30, 40, 50, 60])
            self.assertEqual(sorted(self.series(c, trial["id"], "validation", "validation_loss")), [30, 60])
            self.assertTrue(trial["latest_checkpoint_uuid"])
        finally:
            c.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
