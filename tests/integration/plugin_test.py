#!/usr/bin/env python3
"""The Trial API on a real cluster: examples/plugin-trial's CnnTrial, built by the test suite,
submitted with its model directory as a user would; a wrong class name and invalid
hyperparameters become clear trial errors."""

import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster  # noqa: E402

EXAMPLE = os.path.join(os.path.dirname(__file__), "../../examples/plugin-trial")
PLUGIN = os.environ["DET_PLUGIN_LIBRARY"]


class PluginTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(agents=1, slots="cpu:2").start()
        # The model directory as a user has it after building: sources plus build/libcnn_trial.so.
        cls.model_dir = os.path.join(cls.cluster.root, "plugin-trial")
        os.makedirs(os.path.join(cls.model_dir, "build"))
        for name in ("cnn_trial.cpp", "CMakeLists.txt"):
            shutil.copy(os.path.join(EXAMPLE, name), cls.model_dir)
        shutil.copy(PLUGIN, os.path.join(cls.model_dir, "build", "libcnn_trial.so"))

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def submit(self, name, edits):
        with open(os.path.join(EXAMPLE, "const.toml")) as f:
            config = f.read()
        config = config.replace("max_length = { batches = 300 }", "max_length = { batches = 40 }").replace(
            "min_validation_period = { batches = 100 }", "min_validation_period = { batches = 20 }").replace(
            "train_limit = 20000", "train_limit = 2000").replace("validation_limit = 2000", "validation_limit = 500")
        for old, new in edits:
            config = config.replace(old, new)
        exp_id = self.cluster.submit_directory(config, self.model_dir, name)
        return self.cluster.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=300)

    def test_the_example_cnn_trains_validates_and_checkpoints(self):
        exp = self.submit("cnn.toml", [])
        trial = exp["trials"][0]
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED", self.cluster.trial_logs(trial["id"]))
        self.assertEqual(int(trial["total_batches"]), 40)
        self.assertGreater(trial["latest_validation"]["validation_accuracy"], 0.3)
        self.assertTrue(trial["latest_checkpoint_uuid"])
        metrics = self.cluster.get(f"/api/v1/trials/{trial['id']}/metrics?group=validation")["metrics"]
        self.assertEqual([int(m["total_batches"]) for m in metrics], [20, 40])
        logs = self.cluster.trial_logs(trial["id"])
        self.assertTrue(any("CnnTrial: 2000 training images" in l for l in logs))
        # on_validation_end ran after each of the two validations.
        self.assertEqual(sum("CnnTrial: best validation accuracy so far" in l for l in logs), 2)

    def test_profiling_reports_system_metrics_and_timings(self):
        exp = self.submit("profiled.toml", [("max_length = { batches = 40 }", "max_length = { batches = 150 }"),
                                             ("[hyperparameters]", "[profiling]\nenabled = true\n\n[hyperparameters]")])
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED")
        trial_id = exp["trials"][0]["id"]
        system = self.cluster.get(f"/api/v1/trials/{trial_id}/metrics?group=system")["metrics"]
        self.assertTrue(system, "no system sample")
        self.assertTrue(all(0 <= m["metrics"]["cpu_util_percent"] <= 100 for m in system))
        timings = self.cluster.get(f"/api/v1/trials/{trial_id}/metrics?group=timings")["metrics"]
        names = set().union(*(m["metrics"].keys() for m in timings))
        self.assertTrue({"train_batch", "evaluate", "checkpoint_save"} <= names, names)
        described = self.cluster.det("trial", "describe", str(trial_id), "--profile")
        self.assertEqual(described.returncode, 0, described.stderr)
        self.assertIn("System metrics", described.stdout)
        self.assertIn("cpu_util_percent", described.stdout)
        self.assertIn("train_batch", described.stdout)

    def test_a_class_the_library_does_not_export_is_a_clear_error(self):
        exp = self.submit("wrong-class.toml", [(":CnnTrial", ":NoSuchTrial"), ("max_restarts = 1", "max_restarts = 0")])
        trial = exp["trials"][0]
        self.assertEqual(trial["state"], "STATE_ERROR")
        self.assertIn("exports no trial named NoSuchTrial", trial["exit_reason"])

    def test_hyperparameters_the_trial_rejects_end_it_as_invalid(self):
        exp = self.submit("invalid.toml", [("channels = 16", "channels = 0")])
        trial = exp["trials"][0]
        self.assertEqual(trial["state"], "STATE_ERROR")
        self.assertTrue(trial["exit_reason"].startswith("invalid hyperparameters: channels must be at least 1"),
                        trial["exit_reason"])
        # What a restarted master's search reads: the outcome its worker reported, not the sentence.
        self.assertEqual(trial["outcome"], "WORKER_OUTCOME_INVALID_HYPERPARAMETERS")
        self.assertEqual(trial["restarts"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
