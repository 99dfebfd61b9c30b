#!/usr/bin/env python3
"""The model registry, and what it protects: versions number max + 1 and point at COMPLETED
checkpoints, registered checkpoints survive GC, an experiment whose checkpoint is registered
cannot be deleted; det experiment delete removes files and rows, det experiment fork starts from
an experiment's config and model definition."""

import json
import os
import sys
import unittest
import urllib.error

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, simulated_config, wait_for  # noqa: E402

# GC keeps nothing at the end unless something protects it.
KEEP_NOTHING = "\n[checkpoint_storage]\nsave_experiment_best = 0\nsave_trial_best = 0\nsave_trial_latest = 0\n"


class RegistryTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        c = cls.cluster = Cluster(agents=1, slots="cpu:1").start()
        cls.bob = c.add_user("bob", "bobs password")
        # Trains slowly enough that a checkpoint is registered before it ends.
        cls.exp = c.submit(simulated_config("registered", 200, seconds_per_batch=0.02, checkpoint_period=20) + KEEP_NOTHING)
        trial = c.first_trial(cls.exp)
        def two_checkpoints():
            found = c.get(f"/api/v1/trials/{trial}/checkpoints").get("checkpoints", [])
            return found[:2] if len(found) >= 2 else None
        checkpoints = wait_for(two_checkpoints, 120, "two checkpoints")
        cls.first, cls.second = checkpoints[0]["uuid"], checkpoints[1]["uuid"]

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def test_1_versions_point_at_completed_checkpoints_and_survive_gc(self):
        c = self.cluster
        out = c.det("model", "create", "mnist-mlp", "--description", "the MLP", "--labels", "prod,mlp")
        self.assertEqual(out.returncode, 0, out.stderr)
        for name, sentence in (("1234", "may not be all digits"), ("mnist-mlp", "is taken")):
            code, error = self.cluster.status("POST", "/api/v1/models", {"name": name})
            self.assertEqual(code, 400)
            self.assertIn(sentence, error)
        out = c.det("model", "register-version", "mnist-mlp", self.first, "--metadata", '{"accuracy": 0.9}')
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("as version 1", out.stdout)
        out = c.det("model", "register-version", "mnist-mlp", self.second, "--name", "better")
        self.assertIn("as version 2", out.stdout)
        code, error = self.cluster.status("POST", "/api/v1/models/mnist-mlp/versions", {"checkpoint_uuid": self.first},
                                  token=self.bob)
        self.assertEqual(code, 403)
        self.assertIn("owner (admin) or an admin", error)
        # bob's own model cannot pin admin's checkpoint: that would keep it (and its experiment) for good.
        self.assertEqual(self.cluster.status("POST", "/api/v1/models", {"name": "bobs"}, token=self.bob)[0], 200)
        code, error = self.cluster.status("POST", "/api/v1/models/bobs/versions", {"checkpoint_uuid": self.first},
                                          token=self.bob)
        self.assertEqual(code, 403)
        self.assertIn("only its owner or an admin may register it", error)
        code, error = self.cluster.status("POST", "/api/v1/models/mnist-mlp/versions",
                                  {"checkpoint_uuid": self.first, "metadata": "[1]"})
        self.assertEqual(code, 400)
        self.assertIn("JSON object", error)
        # The experiment ends; GC keeps nothing but the registered checkpoints.
        c.wait_experiment(self.exp, {"STATE_COMPLETED"}, timeout=180)
        def collected():
            states = {k["uuid"]: k["state"] for k in c.get(f"/api/v1/experiments/{self.exp}/checkpoints")["checkpoints"]}
            return states if list(states.values()).count("CHECKPOINT_STATE_DELETED") == len(states) - 2 else None
        states = wait_for(collected, 60, "GC to run")
        self.assertEqual(states[self.first], "CHECKPOINT_STATE_COMPLETED")
        self.assertEqual(states[self.second], "CHECKPOINT_STATE_COMPLETED")
        deleted = next(u for u, s in states.items() if s == "CHECKPOINT_STATE_DELETED")
        code, error = self.cluster.status("POST", "/api/v1/models/mnist-mlp/versions", {"checkpoint_uuid": deleted})
        self.assertEqual(code, 400)
        self.assertIn("only a COMPLETED checkpoint can be registered", error)
        model = c.get("/api/v1/models/mnist-mlp")
        self.assertEqual([v["version"] for v in model["versions"]], [1, 2])
        self.assertEqual(model["model"]["labels"], ["prod", "mlp"])
        self.assertEqual(json.loads(model["versions"][0]["metadata"]), {"accuracy": 0.9})
        # A registered checkpoint cannot be deleted by hand either.
        code, error = self.cluster.status("DELETE", f"/api/v1/checkpoints/{self.first}")
        self.assertEqual(code, 400)
        self.assertIn("is version 1 of model mnist-mlp", error)
        # Download the latest version's files.
        target = os.path.join(c.root, "downloaded")
        out = c.det("model", "download", "mnist-mlp", "-o", target)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertTrue(os.listdir(target))

    def test_2_delete_is_refused_while_registered_then_removes_everything(self):
        c = self.cluster
        c.wait_experiment(self.exp, {"STATE_COMPLETED"}, timeout=180)
        code, error = self.cluster.status("DELETE", f"/api/v1/experiments/{self.exp}", token=self.bob)
        self.assertEqual(code, 403)
        code, error = self.cluster.status("DELETE", f"/api/v1/experiments/{self.exp}")
        self.assertEqual(code, 400)
        self.assertIn("of model mnist-mlp: delete the model", error)
        self.assertEqual(c.experiment(self.exp)["experiment"]["state"], "STATE_COMPLETED")
        paths = [os.path.join(k["storage_path"], k["uuid"])
                 for k in c.get(f"/api/v1/experiments/{self.exp}/checkpoints")["checkpoints"]]
        self.assertEqual(c.det("model", "delete", "mnist-mlp").returncode, 0)
        out = c.det("experiment", "delete", str(self.exp))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(self.cluster.status("GET", f"/api/v1/experiments/{self.exp}")[0], 404)
        self.assertEqual(c.get(f"/api/v1/experiments/{self.exp}/checkpoints").get("checkpoints", []), [])
        self.assertFalse(any(os.path.exists(p) for p in paths))
        # A running experiment is refused.
        running = c.submit(simulated_config("running", 1000000))
        code, error = self.cluster.status("DELETE", f"/api/v1/experiments/{running}")
        self.assertEqual(code, 400)
        self.assertIn("only an ended experiment can be deleted", error)
        c.post(f"/api/v1/experiments/{running}/kill", {})

    def test_3_fork_takes_the_config_with_overrides_and_records_its_parent(self):
        c = self.cluster
        parent = c.submit(simulated_config("parent", 10))
        c.wait_experiment(parent, {"STATE_COMPLETED"}, timeout=120)
        out = c.det("experiment", "fork", str(parent))
        self.assertEqual(out.returncode, 0, out.stderr)
        child = int(out.stdout.split()[2])
        exp = c.experiment(child)["experiment"]
        self.assertEqual((exp["parent_id"], exp["name"]), (str(parent), "parent"))
        self.assertEqual(exp["config"], c.experiment(parent)["experiment"]["config"])
        override = os.path.join(c.root, "override.toml")
        with open(override, "w") as f:
            f.write(simulated_config("overridden", 5))
        out = c.det("experiment", "fork", str(parent), "--config", override)
        self.assertEqual(out.returncode, 0, out.stderr)
        forked = c.experiment(int(out.stdout.split()[2]))["experiment"]
        self.assertEqual(forked["name"], "overridden")
        c.wait_experiment(int(forked["id"]), {"STATE_COMPLETED"}, timeout=120)
        code, error = self.cluster.status("POST", "/api/v1/experiments", {"parent_id": 999999})
        self.assertEqual(code, 404)
        self.assertIn("parent_id: experiment 999999 not found", error)

    def test_4_a_continued_trial_resumes_at_its_checkpoints_step(self):
        c = self.cluster
        parent = c.submit(simulated_config("to-continue", 40, checkpoint_period=20, validation_period=20))
        c.wait_experiment(parent, {"STATE_COMPLETED"}, timeout=120)
        trial = c.first_trial(parent)
        steps = max(int(k["steps_completed"]) for k in c.get(f"/api/v1/trials/{trial}/checkpoints")["checkpoints"])
        self.assertEqual(steps, 40)
        out = c.det("experiment", "continue", str(parent), "--max-length", "80")
        self.assertEqual(out.returncode, 0, out.stderr)
        child = int(out.stdout.split()[2])
        done = c.wait_experiment(child, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=120)
        self.assertEqual(done["experiment"]["state"], "STATE_COMPLETED")
        self.assertEqual(done["experiment"]["name"], f"to-continue (continues trial {trial})")
        self.assertEqual(done["experiment"]["parent_id"], str(parent))
        continued = done["trials"][0]
        self.assertEqual(json.loads(continued["hparams"]), json.loads(c.get(f"/api/v1/trials/{trial}")["trial"]["hparams"]))
        reports = c.get(f"/api/v1/trials/{continued['id']}/metrics?group=training")["metrics"]
        self.assertGreater(min(int(r["total_batches"]) for r in reports), steps)  # from its step, not from 0
        self.assertEqual(int(continued["total_batches"]), 80)
        code, error = self.cluster.status("POST", f"/api/v1/trials/{trial}/continue", {"max_length": 0})
        self.assertEqual(code, 400)
        self.assertIn("max_length must be positive", error)


if __name__ == "__main__":
    unittest.main(verbosity=2)
