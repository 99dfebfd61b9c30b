#!/usr/bin/env python3
"""Light routes while slow reads are in flight (issue 37): 64 GETs of trial metrics are held by a
psql session's lock on the metrics table, then GET /api/v1/master and GET /api/v1/experiments/1
are each asked `--samples` times, one after another. Reported per build and route: p50, p99 and
how many took longer than `--give-up` seconds (a handler pool held by the slow reads answers
nothing until they end). `--baseline-bin-dir` measures another build first in the same run.

Usage: bench/slow_readers_bench.py [--bin-dir DIR] [--baseline-bin-dir DIR] [--samples 200] [--give-up 2]
"""

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../tests/integration"))
os.environ.setdefault("DET_BIN_DIR", os.path.join(HERE, "../build/bin"))
import cluster as cluster_module  # noqa: E402
from slow_readers_test import LIGHT_ROUTES, SlowReadersTest  # noqa: E402


def measure(bin_dir, samples, give_up):
    cluster_module.BIN = bin_dir
    test = SlowReadersTest("test_light_routes_answer_while_64_reads_wait_on_a_locked_table")
    test.setUp()
    try:
        psql, _, readers = test.hold_metric_reads(600)
        out = {}
        for path in LIGHT_ROUTES:
            answers = [test.timed_get(path, give_up) for _ in range(samples)]
            seconds = sorted(s if status == 200 else float("inf") for status, s in answers)
            out[path] = {"p50_ms": 1e3 * statistics.median(seconds),
                         "p99_ms": 1e3 * seconds[int(0.99 * (len(seconds) - 1))],
                         "unanswered": sum(1 for s in seconds if s == float("inf"))}
        test.release(psql, readers, 600)
        return out
    finally:
        test.doCleanups()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", default=os.environ["DET_BIN_DIR"])
    ap.add_argument("--baseline-bin-dir")
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--give-up", type=float, default=2.0)
    args = ap.parse_args()
    builds = ([("baseline", args.baseline_bin_dir)] if args.baseline_bin_dir else []) + [("this build", args.bin_dir)]
    results = {name: measure(os.path.abspath(d), args.samples, args.give_up) for name, d in builds}
    for name, routes in results.items():
        for path, r in routes.items():
            print(f"{name:11} {path:24} p50 {r['p50_ms']:8.1f} ms  p99 {r['p99_ms']:8.1f} ms  "
                  f"unanswered within {args.give_up:g} s: {r['unanswered']}/{args.samples}")


if __name__ == "__main__":
    main()
