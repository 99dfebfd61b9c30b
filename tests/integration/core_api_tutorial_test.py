#!/usr/bin/env python3
"""Determined 0.38's Core API tutorial (examples/core-api-tutorial, our rewrite of its five stages)
submitted as YAML with `det submit`, as a Determined user would: searches without a length run
until the script exits, report their progress, pause and resume, and the config reaches the
process. Everything is checked in REST."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, wait_for  # noqa: E402

TUTORIAL = os.path.join(os.path.dirname(__file__), "../../examples/core-api-tutorial")
ENDED = {"STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"}


class CoreApiTutorialTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(agents=1, slots="cpu:2").start()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def submit(self, stage, edit=None):
        with open(os.path.join(TUTORIAL, stage + ".yaml")) as f:
            config = f.read()
        if edit:
            config = edit(config)
        return self.cluster.submit_directory(config, TUTORIAL, stage + ".yaml")

    def completed(self, exp_id, timeout=180):
        c = self.cluster
        exp = c.wait_experiment(exp_id, ENDED, timeout=timeout)
        logs = [line for t in exp["trials"] for line in c.trial_logs(t["id"])]
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED", logs[-30:])
        for t in exp["trials"]:
            self.assertEqual(t["state"], "STATE_COMPLETED", t)
        return exp

    def test_stage_0_a_plain_script_with_no_length_completes(self):
        exp = self.completed(self.submit("0_start"))
        self.assertEqual(len(exp["trials"]), 1)
        self.assertEqual(exp["experiment"]["progress"], 1.0)

    def test_stage_1_metrics_give_the_best_validation(self):
        exp = self.completed(self.submit("1_metrics"))
        trial = exp["trials"][0]
        self.assertEqual(trial["latest_validation"]["x"], 100)
        self.assertEqual(int(trial["total_batches"]), 100)
        self.assertEqual(exp["experiment"]["best_metric"], 100)

    def test_stage_2_reports_progress_pauses_and_resumes_from_its_checkpoint(self):
        c = self.cluster
        exp_id = self.submit("2_checkpoints")
        # The script's own report_progress is the experiment's progress: no length measures it.
        progress = wait_for(lambda: [p for p in [c.experiment(exp_id)["experiment"]["progress"]] if 0 < p < 1], 60,
                            "the experiment to show the trial's reported progress")[0]
        self.assertGreaterEqual(progress, 0.1)
        c.post(f"/api/v1/experiments/{exp_id}/pause", {})
        trial_id = c.first_trial(exp_id)
        paused = wait_for(lambda: [t for t in c.experiment(exp_id)["trials"] if t["state"] == "STATE_PAUSED"], 60,
                          "the trial to pause")[0]
        self.assertTrue(paused["latest_checkpoint_uuid"], c.trial_logs(trial_id)[-20:])
        trained_at_pause = int(paused["total_batches"])
        self.assertLess(trained_at_pause, 100)
        c.post(f"/api/v1/experiments/{exp_id}/activate", {})
        exp = self.completed(exp_id)
        trial = exp["trials"][0]
        # Two runs; the second went on from the checkpoint, so x counts each batch once.
        self.assertEqual(trial["runs"], 2)
        self.assertEqual(trial["latest_validation"]["x"], 100)
        self.assertEqual(exp["experiment"]["progress"], 1.0)
        self.assertEqual(exp["experiment"]["best_metric"], 100)

    def test_stage_3_a_search_with_time_metric_completes(self):
        exp = self.completed(self.submit("3_hpsearch"))
        self.assertEqual(len(exp["trials"]), 4)
        best = max(t["latest_validation"]["x"] for t in exp["trials"])
        self.assertEqual(exp["experiment"]["best_metric"], best)

    def test_stage_4_two_processes_train_to_the_one_operation_made_from_max_length(self):
        exp = self.completed(self.submit("4_distributed"))
        trial = exp["trials"][0]
        increment_by = int(trial["hparams"]["increment_by"]) if isinstance(trial["hparams"], dict) else None
        self.assertEqual(int(trial["total_batches"]), 100)
        if increment_by is not None:
            self.assertEqual(trial["latest_validation"]["x"], 100 * 2 * increment_by)

    def test_a_random_search_without_a_length_runs_each_trial_until_its_script_exits(self):
        def as_random(config):
            return (config.replace("name: core-api-stage-1", "name: core-api-random\nlabels: [tutorial, random]")
                    .replace("name: single", "name: random\n   max_trials: 2"))
        exp = self.completed(self.submit("1_metrics", as_random))
        self.assertEqual(len(exp["trials"]), 2)
        self.assertEqual(sorted(exp["experiment"]["labels"]), ["random", "tutorial"])
        self.assertEqual(exp["experiment"]["progress"], 1.0)

    def test_the_config_and_its_errors_as_a_determined_user_meets_them(self):
        c = self.cluster
        # A harness entrypoint without a length is refused, naming the file, line and column.
        path = os.path.join(c.root, "harness.yaml")
        text = "name: h\nentrypoint: builtin:mlp\n\n\nsearcher:\n  name: single\n  metric: x\n"
        with open(path, "w") as f:
            f.write(text)
        out = c.det("submit", path)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn(path + ":5:1: searcher: det's harness trains builtin: and plugin: trials", out.stderr)
        # The master names the file the same way when the YAML comes over REST.
        status = c.status("POST", "/api/v1/experiments",
                          {"config": text, "config_path": "harness.yaml"})
        self.assertEqual(status[0], 400)
        self.assertIn("harness.yaml:5:1: searcher:", status[1])
        # Determined's clients send the YAML without a path: its lines are still the YAML's.
        status = c.status("POST", "/api/v1/experiments", {"config": text})
        self.assertEqual(status[0], 400)
        self.assertIn("<request>.yaml:5:1: searcher: det's harness trains", status[1])


if __name__ == "__main__":
    unittest.main()
