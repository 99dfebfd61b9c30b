#!/usr/bin/env python3
"""Command start on a warm cluster: the time from starting `det cmd run -- echo started` to its
line reaching the user's terminal, p50/p95 over --runs runs (one agent, cpu:1, so each command
waits for the previous one's slot to be free). The baseline in the same run is the same command
line run by a local shell, the floor any launcher pays to start a process and read its line.

Usage: bench/task_start_bench.py [--runs 20]
"""

import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../tests/integration"))
os.environ.setdefault("DET_BIN_DIR", os.path.join(HERE, "../build/bin"))
from cluster import BIN, Cluster  # noqa: E402


def first_line_ms(args, env):
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    for line in proc.stdout:
        if line.strip() == "started":
            elapsed = (time.perf_counter() - start) * 1e3
            break
    else:
        raise AssertionError(f"{args} printed no 'started'")
    proc.wait()
    return elapsed


def percentiles(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2], xs[min(len(xs) - 1, int(len(xs) * 0.95))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    opts = parser.parse_args()
    c = Cluster(agents=1, slots="cpu:1").start()
    try:
        env = dict(os.environ, HOME=c.root, DET_USER_TOKEN=c.token)
        det = [os.path.join(BIN, "det"), "-m", c.url, "cmd", "run", "--", "echo", "started"]
        first_line_ms(det, env)  # warm: the agent's first task, the master's first task row
        runs = [first_line_ms(det, env) for _ in range(opts.runs)]
        local = [first_line_ms(["sh", "-c", "echo started"], env) for _ in range(opts.runs)]
        p50, p95 = percentiles(runs)
        l50, l95 = percentiles(local)
        print(f"det cmd run -> first line, {opts.runs} runs: p50 {p50:.0f} ms, p95 {p95:.0f} ms "
              f"(a local sh: p50 {l50:.1f} ms, p95 {l95:.1f} ms)")
    finally:
        c.stop()


if __name__ == "__main__":
    main()
