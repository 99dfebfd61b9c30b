#!/usr/bin/env python3
"""Determined's Python SDK (determined.experimental.client) and the rest of `determined` that
scripts touch, on a real cluster: a Core API script written as Determined's docs teach reports a
metric group named "eval % top/1 & f1+ #2" and raises an alert; the SDK logs in (with a password, and
with the session `det user login` saved), creates experiments from a YAML file and from a dict,
lists them, gets the trial and its metrics, lists and downloads its checkpoint (a file in a
subdirectory too), registers it in a model and finds it through get_model, and pauses and kills an
experiment. Assertions read REST and the files on disk."""

import filecmp
import os
import sys
import tempfile
import unittest
import urllib.parse
from unittest import mock

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../python"))
from cluster import Cluster, wait_for  # noqa: E402
from determined.experimental import client  # noqa: E402

PROGRAM = os.path.join(os.path.dirname(__file__), "../data/programs/determined_sdk")
GROUP = "eval % top/1 & f1+ #2"
YAML = """
name: sdk experiment
entrypoint: python3 train.py
max_restarts: 0
searcher:
  name: single
  metric: validation_loss
  smaller_is_better: true
  max_length:
    batches: 3
"""
# A script that trains until it is stopped, for pause and kill.
ENDLESS = {"name": "sdk endless", "entrypoint": "python3 -c 'import time; time.sleep(3600)'", "max_restarts": 0,
           "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 1000}}}


def group_query(group):
    return urllib.parse.quote(group, safe="")


class DeterminedSdkTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(agents=1, slots="cpu:1").start()
        cls.tmp = tempfile.mkdtemp(dir=cls.cluster.root)
        # The SDK reads its saved logins where det's CLI writes them for this cluster.
        os.environ["XDG_CONFIG_HOME"] = os.path.join(cls.cluster.root, ".config")
        for name in ("DET_MASTER", "DET_USER", "DET_PASS", "DET_USER_TOKEN"):
            os.environ.pop(name, None)
        client.login(master=cls.cluster.url, user="admin", password=cls.cluster.admin_password)
        config = os.path.join(cls.tmp, "const.yaml")
        with open(config, "w") as f:
            f.write(YAML)
        cls.exp = client.create_experiment(config, PROGRAM)
        cls.final_state = cls.exp.wait(interval=0.2)
        cls.trial_id = int(cls.cluster.first_trial(cls.exp.id))

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def test_1_the_experiment_completes_and_is_listed(self):
        logs = self.cluster.trial_logs(self.trial_id)
        self.assertEqual(self.final_state, client.ExperimentState.COMPLETED, logs[-30:])
        listed = {e.id: e for e in client.list_experiments()}
        self.assertIn(self.exp.id, listed)
        self.assertEqual(listed[self.exp.id].name, "sdk experiment")
        self.assertEqual([e.id for e in client.list_experiments(states=[client.ExperimentState.COMPLETED])],
                         [self.exp.id])
        self.assertEqual(client.get_experiment(self.exp.id).config["searcher"]["metric"], "validation_loss")

    def test_2_the_trial_and_its_metric_groups(self):
        trial = client.get_trial(self.trial_id)
        self.assertEqual(trial.experiment_id, self.exp.id)
        self.assertEqual(trial.state, client.TrialState.COMPLETED)
        self.assertEqual([t.id for t in self.exp.list_trials()], [self.trial_id])
        # The odd group through REST, its name encoded in the query.
        reports = self.cluster.get(f"/api/v1/trials/{self.trial_id}/metrics?group={group_query(GROUP)}")["metrics"]
        self.assertEqual([int(r["total_batches"]) for r in reports], [1, 2, 3])
        self.assertEqual({r["group"] for r in reports}, {GROUP})
        self.assertEqual(reports[-1]["metrics"]["top 1 %"], 0.3)
        self.assertEqual(reports[-1]["metrics"]["<b>rate</b>"], 6.0)
        # Each group's latest report, which the trial's page draws a panel from.
        latest = {r["group"]: r for r in self.cluster.get(f"/api/v1/trials/{self.trial_id}/metrics/groups")["metrics"]}
        self.assertEqual(set(latest), {"training", "validation", GROUP})
        self.assertEqual(int(latest[GROUP]["total_batches"]), 3)
        # A generic group's names are not the trial's latest training metrics.
        rest_trial = self.cluster.get(f"/api/v1/trials/{self.trial_id}")["trial"]
        self.assertNotIn("top 1 %", rest_trial["latest_training"])
        self.assertIn("loss", rest_trial["latest_training"])
        # And through the SDK.
        self.assertEqual([m.steps_completed for m in trial.iter_metrics(GROUP)], [1, 2, 3])
        self.assertEqual(list(trial.iter_metrics(GROUP))[0].metrics, {"top 1 %": 0.1, "<b>rate</b>": 2.0})
        self.assertEqual(trial.metric_groups(), sorted([GROUP, "training", "validation"]))
        # Page by page when there are more reports than one page holds.
        with mock.patch("determined.experimental._trial._METRICS_PAGE", 2):
            self.assertEqual([m.steps_completed for m in trial.iter_metrics(GROUP)], [1, 2, 3])

    def test_3_the_alert_is_in_the_trials_logs_at_its_level(self):
        logs = self.cluster.get(f"/api/v1/trials/{self.trial_id}/logs?limit=10000")["logs"]
        alerts = [l["text"] for l in logs if l["stream"] == "alert"]
        self.assertEqual(alerts, ["WARNING: loss <fell>: to 0.3333333333333333 & below"])
        # Only a trial's own run may raise one, with a level Determined knows, of bounded size.
        path = f"/api/v1/trials/{self.trial_id}/alerts"
        status, why = self.cluster.status("POST", path, {"title": "t", "level": "warn"})
        self.assertGreaterEqual(status, 400)
        self.assertIn("trial", why)
        status, why = self.cluster.status("POST", path, {"title": "t", "level": "critical"})
        self.assertEqual((status, why), (400, 'an alert\'s level is debug, info, warn or error, not "critical"'))
        status, why = self.cluster.status("POST", path, {"title": "x" * 1025})
        self.assertEqual(status, 400)
        self.assertIn("at most 1024 bytes", why)

    def test_4_checkpoints_list_and_download(self):
        trial = client.get_trial(self.trial_id)
        checkpoints = self.exp.list_checkpoints()
        self.assertEqual(len(checkpoints), 1)
        best = self.exp.top_checkpoint()
        self.assertEqual(best.uuid, checkpoints[0].uuid)
        self.assertEqual([c.uuid for c in trial.list_checkpoints()], [best.uuid])
        self.assertEqual(trial.top_checkpoint().uuid, best.uuid)
        self.assertEqual(set(best.resources), {"weights.txt", "code dir/model 100%.py", "metadata.json"})
        target = os.path.join(self.tmp, "downloaded")
        self.assertEqual(best.download(target), target)
        stored = self.cluster.get(f"/api/v1/checkpoints/{best.uuid}")["checkpoint"]
        source = os.path.join(stored["storage_path"], best.uuid)
        for name in best.resources:
            self.assertTrue(filecmp.cmp(os.path.join(source, name), os.path.join(target, name), shallow=False), name)
        self.assertEqual(best.metadata["steps_completed"], 3)
        # det's CLI downloads the same files.
        cli_target = os.path.join(self.tmp, "cli")
        out = self.cluster.det("checkpoint", "download", best.uuid, "-o", cli_target)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertTrue(filecmp.cmp(os.path.join(source, "code dir/model 100%.py"),
                                    os.path.join(cli_target, "code dir/model 100%.py"), shallow=False))

    def test_5_a_registered_version_is_found_through_get_model(self):
        best = self.exp.top_checkpoint()
        model = client.create_model("sdk model", description="from the SDK")
        version = model.register_version(best.uuid)
        self.assertEqual(version.model_version, 1)
        found = client.get_model("sdk model")
        self.assertEqual(found.description, "from the SDK")
        versions = found.get_versions()
        self.assertEqual([(v.model_version, v.checkpoint.uuid) for v in versions], [(1, best.uuid)])
        self.assertEqual(found.get_version().checkpoint.uuid, best.uuid)
        with self.assertRaisesRegex(NotImplementedError, "by name"):
            client.get_model(1)

    def test_6_a_dict_config_pauses_activates_and_is_killed(self):
        exp = client.create_experiment(ENDLESS, PROGRAM)
        self.assertEqual(exp.name, "sdk endless")
        trial = exp.await_first_trial()
        wait_for(lambda: client.get_trial(trial.id).state == client.TrialState.RUNNING, 60, "the trial to run")
        exp.pause()
        wait_for(lambda: client.get_experiment(exp.id).state == client.ExperimentState.PAUSED, 60, "the pause")
        with self.assertRaisesRegex(ValueError, "paused"):
            exp.wait(interval=0.1)
        exp.activate()
        exp.kill()
        self.assertEqual(exp.wait(interval=0.2), client.ExperimentState.CANCELED)

    def test_7_logging_in_as_the_cli_did_and_refusals(self):
        c = self.cluster
        out = c.det("user", "login", "admin", token=None, input=c.admin_password + "\n")
        self.assertEqual(out.returncode, 0, out.stderr)
        saved = client.Determined(master=c.url)
        self.assertIn(self.exp.id, [e.id for e in saved.list_experiments()])
        with self.assertRaisesRegex(client.APIError, "no saved login of user bob"):
            client.Determined(master=c.url, user="bob")
        with self.assertRaisesRegex(NotImplementedError, "config templates"):
            saved.create_experiment(ENDLESS, template="t")
        with self.assertRaisesRegex(client.APIError, "searcher"):
            saved.create_experiment({"name": "bad", "entrypoint": "python3 train.py", "searcher": {"name": "nope"}})


if __name__ == "__main__":
    unittest.main(verbosity=2)
