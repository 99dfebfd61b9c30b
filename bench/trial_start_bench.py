#!/usr/bin/env python3
"""Trial start on a warm cluster, with warm workers (the default: one per slot, LibTorch loaded
before the run) against the same cluster with none (--warm-workers=0: every run starts det-worker
cold), in the same run of this script.

Each of N builtin:mlp trials (synthetic data, a training report every batch) is submitted over
REST once the previous one ended; for each it measures, from the submit:
  start     the "container started" line the master logs when the agent reports the process
            (scheduling, and starting or handing over the worker)
  metric    the first training report's own time (the worker connects, loads the trial, trains
            its first batch, reports)
  readable  when polling GET /api/v1/trials/N/metrics first returned it (every 10 ms)
and prints p50, p95 and p99 of each, warm and cold.

Usage: bench/trial_start_bench.py [--runs 50]   (DET_BIN_DIR: build/bin)
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../tests/integration"))
os.environ.setdefault("DET_BIN_DIR", os.path.join(HERE, "../build/bin"))
from cluster import Cluster, parse_time, wait_for  # noqa: E402
from cluster_bench import mlp_config, percentile  # noqa: E402

TERMINAL = {"STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"}


def mlp_start(name):
    return mlp_config(name, 5, "synthetic", 1)


def one_start(c, n, config_of=mlp_start):
    """Seconds from submitting run `n` (its config `config_of(name)`) to its container's start, to
    its first training metric's report time, and to that metric being readable over REST."""
    submitted = time.time()
    exp_id = c.submit(config_of(f"start-{n}"), f"start-{n}.toml")
    trial_id = wait_for(lambda: (c.experiment(exp_id)["trials"] or [None])[0], 60, "the trial", interval=0.01)["id"]

    def first_report():
        reports = c.get(f"/api/v1/trials/{trial_id}/metrics?group=training&limit=1")["metrics"]
        return reports[0] if reports else None

    report = wait_for(first_report, 60, "the first training metric", interval=0.01)
    readable = time.time()
    exp = c.wait_experiment(exp_id, TERMINAL, timeout=120, interval=0.05)
    assert exp["experiment"]["state"] == "STATE_COMPLETED", exp
    logs = c.get(f"/api/v1/trials/{trial_id}/logs?limit=10000")["logs"]
    started = min(parse_time(l["time"]) for l in logs if "container started" in l["text"])
    return {"start": started - submitted, "metric": parse_time(report["time"]) - submitted,
            "readable": readable - submitted}


def measure(agent_args, runs):
    c = Cluster(agents=1, slots="cpu:1", agent_args=agent_args).start()
    try:
        one_start(c, -1)  # the page cache, the pool and the agent's first warm worker
        time.sleep(3)
        samples = []
        for n in range(runs):
            samples.append(one_start(c, n))
            time.sleep(2.5)  # the agent replaces a warm worker 2 s after handing it a run
        return samples
    finally:
        c.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args()
    for name, agent_args in (("warm", ()), ("cold", ("--warm-workers=0",))):
        samples = measure(agent_args, args.runs)
        parts = []
        for part in ("start", "metric", "readable"):
            values = [s[part] for s in samples]
            parts.append(f"{part} p50/p95/p99 {percentile(values, 50) * 1000:.0f}/{percentile(values, 95) * 1000:.0f}/"
                         f"{percentile(values, 99) * 1000:.0f} ms")
        print(f"{name} ({args.runs} runs): " + "; ".join(parts), flush=True)


if __name__ == "__main__":
    main()
