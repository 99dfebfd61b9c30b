#!/usr/bin/env python3
"""Scale-up latency: submit -> first training metric of a one-trial experiment when the pool has
no agent and its process provider must start one, p50 over --runs runs, with its parts:

  launch         submit -> the instance's launch (the provisioner's pass after the request)
  register       launch -> its agent registered with the master
  schedule       registered -> the run placed on it
  worker start   placed -> the worker process started
  first metric   worker started -> its first training report stored

The baseline in the same run is the same experiment on a pool whose agent is already running.
Between runs the elastic pool goes back to 0 agents (max_idle_agent_period = 1s).

Usage: bench/elastic_bench.py [--runs 10]
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../tests/integration"))
os.environ.setdefault("DET_BIN_DIR", os.path.join(HERE, "../build/bin"))
from cluster import Cluster, parse_time, wait_for  # noqa: E402

EXPERIMENT = """
name = "first-metric"
entrypoint = "builtin:simulate"
max_restarts = 0
[hyperparameters]
x = 0.5
[searcher]
name = "single"
metric = "validation_loss"
max_length = { batches = 5 }
[data]
seconds_per_batch = 0.001
"""

ELASTIC = """
[resource_manager]
agent_reconnect_wait = "2s"
[[resource_pools]]
pool_name = "elastic"
[resource_pools.provider]
type = "process"
max_instances = 1
instance_slots = 1
max_idle_agent_period = "1s"
"""


def first_metric_time(c, exp_id):
    trials = c.experiment(exp_id)["trials"]
    return c.first_report_time(trials[0]["id"]) if trials else None


def log_time(c, trial_id, words):
    def find():
        for entry in c.get(f"/api/v1/trials/{trial_id}/logs?limit=1000")["logs"]:
            if words in entry["text"]:
                return parse_time(entry["time"])
        return None
    try:
        return wait_for(find, 10, f"trial {trial_id} to log '{words}'")
    except AssertionError:
        raise AssertionError(f"trial {trial_id} logged no '{words}': {c.trial_logs(trial_id)}")


def run_once(c, elastic):
    """Seconds from submit to the first metric, and its parts when `elastic`."""
    submitted = time.time()
    exp_id = c.submit(EXPERIMENT)
    instance = None
    while True:
        if elastic and instance is None:
            instances = c.get("/api/v1/provisioners")["provisioners"][0]["instances"]
            instance = instances[0] if instances else None
        metric = first_metric_time(c, exp_id)
        if metric:
            break
        time.sleep(0.01)
    total = metric - submitted
    c.wait_experiment(exp_id, {"STATE_COMPLETED"}, timeout=60)
    if not elastic:
        return total, None
    trial_id = c.first_trial(exp_id)
    agent = next(a for a in c.get("/api/v1/agents")["agents"] if a["id"] == instance["id"])
    launched = parse_time(instance["launch_time"])
    registered = parse_time(agent["registered_time"])
    placed = log_time(c, trial_id, "placed on")
    started = log_time(c, trial_id, "container started")
    parts = [launched - submitted, registered - launched, placed - registered, started - placed, metric - started]
    # Back to no agent before the next run.
    wait_for(lambda: not c.get("/api/v1/provisioners")["provisioners"][0]["instances"] and not c.connected_agents(),
             60, "the idle agent to be terminated")
    return total, parts


def p50(xs):
    return sorted(xs)[len(xs) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    opts = parser.parse_args()
    c = Cluster(agents=0, master_config=ELASTIC).start()
    try:
        elastic = [run_once(c, True) for _ in range(opts.runs)]
    finally:
        c.stop()
    c = Cluster(agents=1, slots="cpu:1").start()
    try:
        run_once(c, False)  # warm: the first experiment's rows
        static = [run_once(c, False)[0] for _ in range(opts.runs)]
    finally:
        c.stop()
    totals = [t for t, _ in elastic]
    names = ["launch", "register", "schedule", "worker start", "first metric"]
    parts = ", ".join(f"{name} {p50([p[i] for _, p in elastic]) * 1e3:.0f} ms" for i, name in enumerate(names))
    print(f"submit -> first metric, {opts.runs} runs, p50: {p50(totals) * 1e3:.0f} ms from 0 agents "
          f"({parts}); {p50(static) * 1e3:.0f} ms with an agent running; ratio {p50(totals) / p50(static):.2f}")


if __name__ == "__main__":
    main()
