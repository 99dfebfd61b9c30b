#!/usr/bin/env python3
"""What people write about experiments and how they find them: labels, name, description and
notes; archive and unarchive (ended experiments only); det experiment list's filters, sorting
and pages, with bad query parameters named; det experiment wait; workspaces and projects."""

import json
import os
import sys
import unittest
import urllib.error

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, simulated_config, wait_for  # noqa: E402


class CollaborationTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        c = cls.cluster = Cluster(agents=1, slots="cpu:1").start()
        cls.bob = c.add_user("bob", "bobs password")
        cls.carol = c.add_user("carol", "carols password")
        cls.short = c.submit(simulated_config("short", 20, seconds_per_batch=0.01))
        cls.long = c.submit(simulated_config("long", 1000000, seconds_per_batch=0.01))
        cls.bobs = int(c.post("/api/v1/experiments", {"config": simulated_config("bobs", 1000000)},
                              token=cls.bob)["experiment"]["id"])

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def ids(self, *args, token="admin"):
        out = self.cluster.det("experiment", "list", "--json", *args, token=token)
        self.assertEqual(out.returncode, 0, out.stderr)
        return [int(e["id"]) for e in json.loads(out.stdout).get("experiments", [])]

    def test_1_wait_returns_when_an_experiment_ends(self):
        c = self.cluster
        out = c.det("experiment", "wait", str(self.short), "--interval", "0.2", timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("COMPLETED", out.stdout)

    def test_2_labels_name_description_and_notes(self):
        c, e = self.cluster, self.long
        for args in (["label", "add", str(e), "baseline"], ["label", "add", str(e), "lr sweep"],
                     ["label", "add", str(e), "baseline"], ["set", "description", str(e), "the long one"],
                     ["set", "name", str(e), "long run"]):
            out = c.det("experiment", *args)
            self.assertEqual(out.returncode, 0, out.stderr)
        exp = c.experiment(e)["experiment"]
        self.assertEqual(exp["labels"], ["baseline", "lr sweep"])
        self.assertEqual((exp["name"], exp["description"]), ("long run", "the long one"))
        self.assertEqual(self.ids("--label", "lr sweep"), [e])
        self.assertEqual(c.det("experiment", "label", "remove", str(e), "lr sweep").returncode, 0)
        self.assertEqual(c.experiment(e)["experiment"]["labels"], ["baseline"])
        notes = "# Findings\n\nlr 0.1 diverges.\n"
        out = c.det("experiment", "notes", str(e), "--set", "-", input=notes)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, notes)
        self.assertEqual(c.experiment(e)["experiment"]["notes"], notes)
        # Only its owner or an admin writes about it.
        out = c.det("experiment", "label", "add", str(e), "mine", token=self.bob)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("owner (admin) or an admin", out.stderr)
        self.assertEqual(c.experiment(e)["experiment"]["labels"], ["baseline"])
        bad = c.det("experiment", "label", "add", str(e), "a,b")
        self.assertIn("no comma", bad.stderr)

    def test_3_filters_sorting_and_pages(self):
        c = self.cluster
        everyone = self.ids()
        self.assertEqual(everyone, sorted(everyone))
        self.assertEqual(self.ids("--desc"), sorted(everyone, reverse=True))
        self.assertEqual(self.ids("--user", "bob"), [self.bobs])
        wait_for(lambda: c.experiment(self.short)["experiment"]["state"] == "STATE_COMPLETED", 120, "short to complete")
        self.assertEqual(self.ids("--state", "COMPLETED"), [self.short])
        self.assertEqual(set(self.ids("--state", "COMPLETED", "--state", "ACTIVE")), set(everyone))
        self.assertEqual(self.ids("--limit", "2"), everyone[:2])
        self.assertEqual(self.ids("--limit", "2", "--offset", "2"), everyone[2:4])
        self.assertEqual(self.ids("--sort-by", "name", "--limit", "1"), [self.bobs])  # "bobs" < "long run" < "short"
        # A page says where it sits in the whole list; its rows leave the config to GET .../N.
        page = c.get("/api/v1/experiments?offset=1&limit=1")
        self.assertEqual(page["pagination"], {"offset": 1, "limit": 1, "start_index": 1, "end_index": 2,
                                              "total": len(everyone)})
        self.assertEqual(page["experiments"][0]["config"], "")
        self.assertIn("searcher", c.experiment(everyone[1])["experiment"]["config"])
        self.assertEqual(c.get("/api/v1/experiments?state=STATE_COMPLETED")["pagination"]["total"], 1)
        for query, sentence in (("state=RUNNING_FAST", "query parameter state"), ("archived=maybe", "query parameter archived"),
                                ("sort_by=size", "query parameter sort_by"), ("order_by=up", "query parameter order_by"),
                                ("limit=1001", "query parameter limit may be at most 1000")):
            with self.assertRaises(urllib.error.HTTPError) as caught:
                c.get("/api/v1/experiments?" + query)
            self.assertEqual(caught.exception.code, 400)
            self.assertIn(sentence, json.loads(caught.exception.read())["error"])

    def test_4_only_ended_experiments_are_archived_and_lists_hide_them(self):
        c, e = self.cluster, self.bobs
        out = c.det("experiment", "archive", str(e), token=self.bob)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("has not ended", out.stderr)
        self.assertFalse(c.experiment(e)["experiment"].get("archived", False))
        self.assertEqual(c.det("experiment", "kill", str(e), token=self.bob).returncode, 0)
        waited = c.det("experiment", "wait", str(e), "--interval", "0.2", token=self.bob, timeout=120)
        self.assertEqual(waited.returncode, 1)
        self.assertIn("CANCELED", waited.stdout)
        self.assertEqual(c.det("experiment", "archive", str(e), token=self.bob).returncode, 0)
        self.assertTrue(c.experiment(e)["experiment"]["archived"])
        self.assertNotIn(e, self.ids())
        self.assertIn(e, self.ids("--all"))
        self.assertEqual(self.ids("--all", "--user", "bob"), [e])
        self.assertEqual(c.det("experiment", "unarchive", str(e)).returncode, 0)  # an admin may too
        self.assertIn(e, self.ids())

    def test_5_workspaces_hold_projects_hold_experiments(self):
        c = self.cluster
        # Everything starts in Uncategorized/Uncategorized.
        self.assertEqual(c.experiment(self.short)["experiment"]["project"], "Uncategorized/Uncategorized")
        for args in (["workspace", "create", "vision"], ["project", "create", "vision", "mnist", "--description", "digits"]):
            out = c.det(*args, token=self.bob)
            self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("already has a project mnist", c.det("project", "create", "vision", "mnist").stderr)
        # bob's workspace and project take projects and experiments from bob (or an admin) only.
        refused = c.det("project", "create", "vision", "carols", token=self.carol)
        self.assertIn("workspace vision's owner (bob) or an admin", refused.stderr)
        vision = next(w["id"] for w in c.get("/api/v1/workspaces")["workspaces"] if w["name"] == "vision")
        mnist = c.get(f"/api/v1/workspaces/{vision}/projects")["projects"][0]["id"]
        code, error = c.status("POST", "/api/v1/experiments", {"config": simulated_config("carols", 5), "project_id": mnist},
                               token=self.carol)
        self.assertEqual(code, 403, error)
        self.assertIn("project vision/mnist's owner (bob)", error)
        self.assertIn("is taken", c.det("workspace", "create", "vision").stderr)
        path = os.path.join(c.root, "in-project.toml")
        with open(path, "w") as f:
            f.write(simulated_config("in-project", 5))
        out = c.det("experiment", "create", path, "--project", "vision/mnist", token=self.bob)
        self.assertEqual(out.returncode, 0, out.stderr)
        in_project = int(out.stdout.split()[2])
        self.assertEqual(c.experiment(in_project)["experiment"]["project"], "vision/mnist")
        self.assertEqual(self.ids("--project", "vision/mnist"), [in_project])
        # Only the experiment's owner (or an admin) moves it; anyone may read the project.
        refused = c.det("experiment", "move", str(self.long), "vision", "mnist", token=self.bob)
        self.assertIn("owner (admin) or an admin", refused.stderr)
        self.assertEqual(c.det("experiment", "move", str(self.long), "vision", "mnist").returncode, 0)
        self.assertEqual(set(self.ids("--project", "vision/mnist")), {in_project, self.long})
        notes = "Baselines first.\n"
        out = c.det("project", "notes", "vision", "mnist", "--set", "-", input=notes, token=self.bob)
        self.assertEqual(out.stdout, notes)
        self.assertIn("owner (bob) or an admin", c.det("project", "notes", "vision", "mnist", "--set", "-",
                                                           input="x", token=self.carol).stderr)
        # A project holding experiments, the default ones, and bad names are refused with nothing changed.
        self.assertIn("holds 2 experiments", c.det("project", "delete", "vision", "mnist", token=self.bob).stderr)
        self.assertIn("cannot be deleted", c.det("project", "delete", "Uncategorized", "Uncategorized").stderr)
        self.assertIn("cannot be deleted", c.det("workspace", "delete", "Uncategorized").stderr)
        self.assertIn("may not contain '/'", c.det("workspace", "create", "a/b").stderr)
        with self.assertRaises(urllib.error.HTTPError) as caught:
            c.post("/api/v1/experiments", {"config": simulated_config("nowhere", 5), "project_id": 999})
        self.assertIn("project_id: there is no project 999", json.loads(caught.exception.read())["error"])
        for exp in (in_project, self.long):
            self.assertEqual(c.det("experiment", "move", str(exp), "Uncategorized", "Uncategorized").returncode, 0)
        self.assertEqual(c.det("project", "delete", "vision", "mnist", token=self.bob).returncode, 0)
        self.assertEqual(c.det("workspace", "delete", "vision", token=self.bob).returncode, 0)
        self.assertNotIn("vision", [w["name"] for w in c.get("/api/v1/workspaces")["workspaces"]])


if __name__ == "__main__":
    unittest.main(verbosity=2)
