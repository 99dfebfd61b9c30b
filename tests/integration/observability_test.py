#!/usr/bin/env python3
"""What charts and Prometheus read from a real cluster: a trial's metric as columns, downsampled on
the server with each bucket's extremes kept, whole when zoomed in, with 400s and 404s that say what
is wrong; and /prom/det-state-metrics, scraped with a long-lived token and linted by promtool."""

import json
import math
import os
import shutil
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, simulate, simulated_config, wait_for  # noqa: E402

REPORTS = 1200  # a training report per batch


def expected_extremes(points, first, last, buckets):
    """The points the server keeps: each equal-width bucket's smallest and largest value (ties to
    the earlier batch), as storage/database_series.cpp computes them."""
    chosen = {}
    for x, y in points:
        b = math.floor((x - first) * buckets / (last - first + 1))
        lo, hi = chosen.get(b, ((y, x), (y, x)))
        chosen[b] = (min(lo, (y, x)), max(hi, (y, x)))
    kept = set()
    for (ly, lx), (hy, hx) in chosen.values():
        kept.add((lx, ly))
        kept.add((hx, hy))
    return sorted(kept)


class ObservabilityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(agents=1, slots="cpu:2").start()
        c = cls.cluster
        cls.exp = c.submit(simulated_config("series", REPORTS, seconds_per_batch=0.0005, scheduling_unit=1,
                                            validation_period=100, checkpoint_period=600))
        c.wait_experiment(cls.exp, {"STATE_COMPLETED"}, timeout=300)
        cls.trial = c.first_trial(cls.exp)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def series(self, query, path=None):
        return self.cluster.get((path or f"/api/v1/trials/{self.trial}") + "/metrics/series?" + query)

    def test_a_long_series_keeps_each_buckets_extremes(self):
        raw = self.cluster.get(f"/api/v1/trials/{self.trial}/metrics?group=training&limit=100000")["metrics"]
        points = [(float(r["total_batches"]), r["metrics"]["loss"]) for r in raw]
        self.assertEqual(len(points), REPORTS)
        s = self.series("group=training&name=loss&max_points=100")
        self.assertTrue(s["downsampled"])
        self.assertEqual(int(s["points_in_range"]), REPORTS)
        got = list(zip(s["batches"], s["values"]))
        self.assertLessEqual(len(got), 100)
        self.assertEqual(got, expected_extremes(points, points[0][0], points[-1][0], 50))
        self.assertIn(min(points, key=lambda p: (p[1], p[0])), got)  # the lowest loss survives
        self.assertIn(max(points, key=lambda p: (p[1], p[0])), got)  # and the highest

    def test_a_zoomed_range_comes_whole(self):
        s = self.series("name=loss&start_batches=500&end_batches=560&max_points=100")
        self.assertFalse(s.get("downsampled", False))
        self.assertEqual(s["batches"], [float(b) for b in range(500, 561)])
        self.assertEqual(int(s["points_in_range"]), 61)

    def test_an_experiment_gives_every_trials_series(self):
        out = self.series("group=validation&name=validation_loss", path=f"/api/v1/experiments/{self.exp}")
        self.assertEqual(len(out["series"]), 1)
        self.assertEqual(out["series"][0]["batches"], [float(b) for b in range(100, REPORTS + 1, 100)])

    def test_bad_requests_say_what_is_wrong(self):
        c = self.cluster
        code, sentence = c.status("GET", f"/api/v1/trials/{self.trial}/metrics/series?group=training")
        self.assertEqual(code, 400)
        self.assertIn("name is required", sentence)
        code, sentence = c.status("GET", f"/api/v1/trials/{self.trial}/metrics/series?name=loss&max_points=1")
        self.assertEqual(code, 400)
        self.assertIn("max_points must be an integer from 2", sentence)
        code, sentence = c.status("GET", f"/api/v1/trials/{self.trial}/metrics/series?name=loss&start_batches=9&end_batches=3")
        self.assertEqual(code, 400)
        code, sentence = c.status("GET", "/api/v1/trials/999999/metrics/series?name=loss")
        self.assertEqual((code, sentence), (404, "trial 999999 not found"))
        code, sentence = c.status("GET", "/api/v1/experiments/999999/metrics/series?name=loss")
        self.assertEqual((code, sentence), (404, "experiment 999999 not found"))
        code, _ = c.status("GET", f"/api/v1/trials/{self.trial}/metrics/series?name=loss", token=None)
        self.assertEqual(code, 401)
        # A metric the trial never reported is an empty series, not an error.
        s = self.series("name=no_such_metric")
        self.assertEqual((int(s.get("points_in_range", 0)), s.get("batches", [])), (0, []))

    def stream_lines(self, query, count, timeout=20):
        """The first `count` lines of GET /api/v1/stream?query, as JSON."""
        req = urllib.request.Request(f"{self.cluster.url}/api/v1/stream?{query}",
                                     headers={"Authorization": f"Bearer {self.cluster.token}"})
        lines = []
        with urllib.request.urlopen(req, timeout=timeout) as r:
            self.assertEqual(r.headers["Content-Type"], "application/x-ndjson")
            while len(lines) < count:
                lines.append(json.loads(r.readline()))
        return lines

    def test_a_stream_resumes_after_its_cursor_without_repeating_a_report(self):
        c = self.cluster
        live = c.submit(simulated_config("live", 100000, seconds_per_batch=0.01, scheduling_unit=10))
        try:
            trial = c.first_trial(live)
            first = self.stream_lines(f"trial_id={trial}", 3)
            self.assertEqual(first[0]["type"], "hello")
            generation = first[0]["generation"]
            seen = [int(m["total_batches"]) for e in first if e["type"] == "metrics" for m in e["metrics"]]
            cursor = first[-1]["cursor"]
            # Dropped; meanwhile the trial reports on. The resumed stream starts right after the cursor.
            time.sleep(0.5)
            resumed = self.stream_lines(f"trial_id={trial}&after={cursor}&generation={generation}", 3)
            self.assertNotIn("hello", [e["type"] for e in resumed])
            later = [int(m["total_batches"]) for e in resumed if e["type"] == "metrics" for m in e["metrics"]
                     if m["group"] == "training"]
            self.assertTrue(later)
            if seen:  # the next training report after those already read, every 10 batches
                self.assertEqual(later[0], max(seen) + 10)
            self.assertEqual(later, sorted(set(later)))
            # A cursor of another master run is not resumed: the page reloads from REST.
            reset = self.stream_lines(f"trial_id={trial}&after={cursor}&generation=another-run", 1)
            self.assertEqual(reset[0]["type"], "reset")
        finally:
            c.post(f"/api/v1/experiments/{live}/kill", {})
        code, sentence = c.status("GET", "/api/v1/stream?experiment_id=999999")
        self.assertEqual((code, sentence), (404, "experiment 999999 not found"))

    def scrape(self, token):
        req = urllib.request.Request(self.cluster.url + "/prom/det-state-metrics",
                                     headers={"Authorization": f"Bearer {token}"} if token else {})
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.headers["Content-Type"], r.read().decode()

    def test_prometheus_scrape_with_a_token_passes_promtool(self):
        c = self.cluster
        running = c.submit(simulated_config("running", 100000, seconds_per_batch=0.01))
        try:
            c.post(f"/api/v1/experiments/{running}/labels", {"label": "nightly"})
            trial = c.first_trial(running)
            wait_for(lambda: c.agent_of(trial), 60, "the trial to hold a slot")
            allocation = c.agent_of(trial)[1]
            scrape_token = c.post("/api/v1/tokens", {"description": "prometheus"})["token"]
            content_type, text = self.scrape(scrape_token)
        finally:
            c.post(f"/api/v1/experiments/{running}/kill", {})
        self.assertEqual(content_type, "text/plain; version=0.0.4; charset=utf-8")
        lint = subprocess.run([shutil.which("promtool") or "/usr/bin/promtool", "check", "metrics"], input=text,
                              capture_output=True, text=True)
        self.assertEqual(lint.returncode, 0, lint.stdout + lint.stderr)
        lines = text.splitlines()
        self.assertIn(f'det_experiment_id_label{{experiment_id="{running}",label="nightly"}} 1', lines)
        self.assertIn(f'det_job_id_experiment_id{{job_id="{running}",experiment_id="{running}"}} 1', lines)
        self.assertIn(f'det_container_id_allocation_id{{container_id="agent-0/{allocation}",'
                      f'allocation_id="{allocation}"}} 1', lines)
        self.assertIn(f'det_allocation_id_task_id_task_actor{{allocation_id="{allocation}",task_id="{trial}",'
                      f'task_actor="/experiments/{running}/trials/{trial}",job_id="{running}"}} 1', lines)
        self.assertIn('det_agents{resource_pool="default",connected="true"} 1', lines)
        self.assertIn('det_slots_used{resource_pool="default"} 1', lines)
        self.assertIn('det_slots_free{resource_pool="default"} 1', lines)
        self.assertIn('det_trials{state="STATE_COMPLETED"} 1', lines)
        self.assertIn('det_experiments{state="STATE_COMPLETED"} 1', lines)
        ingested = next(l for l in lines if l.startswith("det_metric_reports_ingested_total "))
        self.assertGreaterEqual(float(ingested.split()[1]), REPORTS)
        self.assertTrue(any(l.startswith('det_http_request_duration_seconds_count{route="GET /api/v1/trials/(\\\\d+)/metrics/series"}')
                            for l in lines), [l for l in lines if "route=" in l][:5])
        self.assertTrue(any(l.startswith('det_scheduling_pass_seconds_count{resource_pool="default"}') for l in lines))
        self.assertTrue(any(l.startswith("det_persistence_commit_seconds_count ") for l in lines))

    def test_the_web_uis_files_are_served_and_nothing_beside_them(self):
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", self.cluster.http_port, timeout=10)
        for path, status in (("/assets/js/main.js", 200), ("/experiments/3", 200), ("/assets//etc/passwd", 404),
                             ("/assets/%2Fetc%2Fpasswd", 404), ("/assets/../../../etc/passwd", 404),
                             ("/assets/js/../../index.html", 404)):
            conn.request("GET", path)
            reply = conn.getresponse()
            body = reply.read()
            self.assertEqual(reply.status, status, path)
            self.assertNotIn(b"root:", body, path)

    def test_prometheus_needs_a_login(self):
        with self.assertRaises(urllib.error.HTTPError) as refused:
            self.scrape(None)
        self.assertEqual(refused.exception.code, 401)


class ExperimentStreamTest(unittest.TestCase):
    """A cluster of its own: the experiment it runs would change the counts ObservabilityTest scrapes."""

    def test_an_experiment_stream_carries_the_reports_of_trials_created_after_it_opened(self):
        # One trial at a time: the second is created while the stream is open, and is known to it
        # only from the feed (no read of the experiment's trials after the stream opened).
        c = Cluster(agents=1).start()
        self.addCleanup(c.stop)
        config = simulate("sequential", 2, 40, seconds_per_batch=0.05).replace(
            "max_concurrent_trials = 2", "max_concurrent_trials = 1")
        exp = c.submit(config)
        req = urllib.request.Request(f"{c.url}/api/v1/stream?experiment_id={exp}",
                                     headers={"Authorization": f"Bearer {c.token}"})
        reporting = set()
        deadline = time.monotonic() + 120
        with urllib.request.urlopen(req, timeout=60) as r:
            self.assertEqual(json.loads(r.readline())["type"], "hello")
            while len(reporting) < 2 and time.monotonic() < deadline:
                event = json.loads(r.readline())
                if event["type"] == "metrics":
                    reporting.update(int(m["trial_id"]) for m in event["metrics"])
        trials = sorted(int(t["id"]) for t in c.get(f"/api/v1/experiments/{exp}")["trials"])
        self.assertEqual(len(trials), 2)
        self.assertEqual(sorted(reporting), trials)


if __name__ == "__main__":
    unittest.main()
