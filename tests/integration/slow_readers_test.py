#!/usr/bin/env python3
"""Issue 37: no HTTP handler thread waits on an actor. 64 reads of trial metrics are held in
flight by a lock a psql session keeps on the metrics table (more than the server's 32 handler
threads); meanwhile GET /api/v1/master and GET /api/v1/experiments/1 still answer within 50 ms,
and once the lock goes every held read is answered."""

import http.client
import os
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, simulated_config, wait_for  # noqa: E402

HELD = 64
LIGHT_BOUND_S = 0.050
LIGHT_ROUTES = ("/api/v1/master", "/api/v1/experiments/1")


class SlowReadersTest(unittest.TestCase):
    def setUp(self):
        self.cluster = Cluster(agents=0).start()
        self.addCleanup(self.cluster.stop)

    def lock_metrics(self):
        """A psql session holding the metrics table in ACCESS EXCLUSIVE mode until it is told to go."""
        c = self.cluster
        psql = subprocess.Popen(
            ["psql", "-h", os.path.join(c.data_dir, "run"), "-p", "5432", "-U", "postgres", "-d", "det",
             "-v", "ON_ERROR_STOP=1", "-qAt"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=dict(os.environ, PGPASSFILE=os.path.join(c.data_dir, "postgres-password")))
        self.addCleanup(lambda: psql.poll() is None and psql.kill())
        psql.stdin.write("BEGIN; LOCK TABLE metrics IN ACCESS EXCLUSIVE MODE; SELECT 'locked';\n")
        psql.stdin.flush()
        self.assertEqual(psql.stdout.readline().strip(), "locked", psql.stderr.read() if psql.poll() else "")
        return psql

    def timed_get(self, path, timeout):
        """(status, seconds) of one GET on a connection of its own."""
        c = self.cluster
        conn = http.client.HTTPConnection("127.0.0.1", c.http_port, timeout=timeout)
        began = time.monotonic()
        try:
            conn.request("GET", path, headers={"Authorization": f"Bearer {c.token}"})
            reply = conn.getresponse()
            reply.read()
            return reply.status, time.monotonic() - began
        except OSError:
            return None, time.monotonic() - began
        finally:
            conn.close()

    def hold_metric_reads(self, timeout):
        """An experiment (id 1) stored, the light routes warmed (the token is looked up once, then
        cached), the metrics table locked and HELD reads of it sent; returns the lock's psql, the
        list each read's (status, seconds) lands in and their threads."""
        self.assertEqual(self.cluster.submit(simulated_config("light", 10)), 1)
        for path in LIGHT_ROUTES:
            self.timed_get(path, 5)
        psql = self.lock_metrics()
        held = [None] * HELD
        def read_metrics(i):
            # Each its own page, so that no two share one read (master/http/read_coalescer.hpp).
            held[i] = self.timed_get(f"/api/v1/trials/1/metrics?offset={i}", timeout)
        readers = [threading.Thread(target=read_metrics, args=(i,)) for i in range(HELD)]
        for t in readers:
            t.start()
        # The held reads are in: PostgreSQL shows the master's metric reads waiting on the lock.
        wait_for(lambda: self.waiting_on_lock() >= 1, 30, "a metric read waiting on the lock")
        return psql, held, readers

    @staticmethod
    def release(psql, readers, timeout):
        """Ends the lock and waits for the held reads."""
        psql.stdin.write("ROLLBACK;\n")
        psql.stdin.close()
        psql.wait(30)
        for t in readers:
            t.join(timeout)

    def test_light_routes_answer_while_64_reads_wait_on_a_locked_table(self):
        psql, held, readers = self.hold_metric_reads(120)
        time.sleep(0.5)
        self.assertTrue(all(h is None for h in held), f"reads answered through the lock: {held}")
        light = {path: [self.timed_get(path, 5) for _ in range(20)] for path in LIGHT_ROUTES}
        for path, answers in light.items():
            self.assertTrue(all(status == 200 for status, _ in answers), f"{path}: {answers}")
            seconds = sorted(s for _, s in answers)
            # The 19th of 20: one outlier (a scheduler hiccup on a busy 2-core machine) may pass.
            self.assertLess(seconds[-2], LIGHT_BOUND_S, f"{path} took {seconds} s while {HELD} reads were held")
        self.assertTrue(all(h is None for h in held), "the lock was held throughout")
        self.release(psql, readers, 150)
        self.assertEqual([h[0] for h in held], [200] * HELD, held)

    def waiting_on_lock(self):
        """Sessions waiting on a lock now (pg_stat_activity)."""
        c = self.cluster
        out = subprocess.run(
            ["psql", "-h", os.path.join(c.data_dir, "run"), "-p", "5432", "-U", "postgres", "-d", "det", "-qAt", "-c",
             "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"],
            capture_output=True, text=True, check=True,
            env=dict(os.environ, PGPASSFILE=os.path.join(c.data_dir, "postgres-password")))
        return int(out.stdout.strip())


if __name__ == "__main__":
    unittest.main(verbosity=2)
