#!/usr/bin/env python3
"""What running each det user's work as its own Unix user costs a trial's start (issue 35 asks
for at most 20 ms). Two clusters run side by side, each one agent (cpu:1): one whose agent
switches to the run's owner's user (the default, --run-tasks-as=owner), and the baseline whose
agent runs everyone's work as itself (--run-tasks-as=agent-user). The same builtin:simulate
trial is submitted to each in turn, N times, alternating, so both see the same machine load.

Each run is measured from the submit to its first training report's own time: scheduling, the
worker's start (the uid switch and, on the first run of a user, its home), its connection and
its first batch. Prints the medians and their difference, for cold workers (--warm-workers=0,
the switch happens in the spawned child) or, with --warm, warm ones (the worker switches when
handed its run).

Usage: bench/trial_start_uid_bench.py [--runs 30] [--warm]   (DET_BIN_DIR: build/bin)
"""

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../tests/integration"))
os.environ.setdefault("DET_BIN_DIR", os.path.join(HERE, "../build/bin"))
from cluster import Cluster, simulated_config  # noqa: E402
import trial_start_bench  # noqa: E402


def simulated_start(name):
    return simulated_config(name, 5, seconds_per_batch=0.001, validation_period=5, scheduling_unit=1)


def one_start(c, n):
    """Seconds from submit to the first training metric's report time."""
    return trial_start_bench.one_start(c, n, simulated_start)["metric"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warm", action="store_true", help="with warm workers (default: every worker starts cold)")
    args = ap.parse_args()
    workers = () if args.warm else ("--warm-workers=0",)
    clusters = {"switch": Cluster(agents=1, slots="cpu:1", agent_args=("--run-tasks-as=owner",) + workers),
                "baseline": Cluster(agents=1, slots="cpu:1", agent_args=("--run-tasks-as=agent-user",) + workers)}
    try:
        for c in clusters.values():
            c.start()
            one_start(c, -1)  # the page cache, the first run's home
        samples = {name: [] for name in clusters}
        for n in range(args.runs):
            for name, c in (clusters.items() if n % 2 == 0 else reversed(list(clusters.items()))):
                samples[name].append(one_start(c, n))
                time.sleep(2.5 if args.warm else 0.2)  # a warm worker is replaced 0.5-2 s after a run
        switch, baseline = (statistics.median(samples[k]) * 1000 for k in ("switch", "baseline"))
        print(f"{'warm' if args.warm else 'cold'} workers, {args.runs} runs each, submit -> first report: "
              f"median {switch:.1f} ms switching users, {baseline:.1f} ms as the agent's user: "
              f"difference {switch - baseline:+.1f} ms")
    finally:
        for c in clusters.values():
            c.stop()


if __name__ == "__main__":
    main()
