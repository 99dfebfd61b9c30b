#!/usr/bin/env python3
"""Fault-tolerance benchmarks, each against a baseline measured in this script.

  agent loss     kill -9 of the agent running a trial: detection (until the master marks the
                 agent disconnected) and recovery (until the trial reports training again on the
                 other agent), with agent_reconnect_wait = 2 s. The baseline is a fresh trial's
                 submit -> first training report on the same cluster: what any new run costs.
                 The same for a hung agent (SIGSTOP), which only heartbeats reveal.
  master restart kill -9 of a master holding N non-terminal experiments (one queued trial each,
                 no agents) until every one is restored and queued in its pool again, against the
                 same restart with no experiments.

Usage: bench/fault_tolerance_bench.py [--experiments 1000] [--rounds 3]   (DET_BIN_DIR: build/bin)
"""

import argparse
import os
import signal
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../tests/integration"))
os.environ.setdefault("DET_BIN_DIR", os.path.join(HERE, "../build/bin"))
from cluster import Cluster, simulated_config, wait_for  # noqa: E402
from rest_load_bench import store_experiments  # noqa: E402


def paced_trial(name, batches):
    """10 ms batches, a checkpoint every 20, one validation at the end."""
    return simulated_config(name, batches, seconds_per_batch=0.01, checkpoint_period=20, validation_period=batches,
                            scheduling_unit=10)


def training_reports(c, trial_id):
    return c.get(f"/api/v1/trials/{trial_id}/metrics?group=training")["metrics"]


def fresh_start_seconds(c, n):
    start = time.monotonic()
    exp_id = c.submit(paced_trial(f"fresh-{n}", 20), f"fresh-{n}.toml")
    trial = c.first_trial(exp_id)
    wait_for(lambda: training_reports(c, trial), 60, "the first report", interval=0.01)
    took = time.monotonic() - start
    c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=60)
    return took


def agent_loss(c, n, sig):
    exp_id = c.submit(paced_trial(f"loss-{n}", 3000), f"loss-{n}.toml")
    trial = c.first_trial(exp_id)
    wait_for(lambda: len(training_reports(c, trial)) >= 3, 60, "training with a checkpoint")
    holder, _ = wait_for(lambda: c.agent_of(trial), 10, "the trial's agent")
    proc = c.agents[int(holder.split("-")[1])]
    start = time.monotonic()
    os.kill(proc.pid, sig)
    wait_for(lambda: not c.agent_connected(holder), 60, "the master to mark the agent", interval=0.01)
    detected = time.monotonic() - start
    wait_for(lambda: any(f"allocation {trial}.2" in l for l in c.trial_logs(trial)), 60, "a second run",
             interval=0.02)
    runs_before = len(training_reports(c, trial))
    wait_for(lambda: len(training_reports(c, trial)) > runs_before, 60, "training again", interval=0.01)
    recovered = time.monotonic() - start
    c.det("experiment", "kill", str(exp_id))
    if sig == signal.SIGSTOP:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    c.agents[int(holder.split("-")[1])] = None
    return detected, recovered, holder


def restart_seconds(c):
    os.kill(c.master.pid, signal.SIGKILL)
    c.master.wait()
    start = time.monotonic()
    c.start_master()
    return start


def master_restart(experiments):
    c = Cluster(agents=0).start()
    try:
        start = restart_seconds(c)
        wait_for(lambda: c.get("/api/v1/job-queues") is not None, 60, "the empty master", interval=0.01)
        empty = time.monotonic() - start
        t = time.monotonic()
        store_experiments(c, experiments)
        submitted = time.monotonic() - t
        wait_for(lambda: len(c.get("/api/v1/job-queues")["jobs"]) == experiments, 120, "every job queued")
        start = restart_seconds(c)
        wait_for(lambda: len(c.get("/api/v1/job-queues")["jobs"]) == experiments, 600,
                 "every experiment restored and queued", interval=0.05)
        full = time.monotonic() - start
        return empty, full, submitted
    finally:
        c.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--experiments", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", choices=["agent-loss", "master-restart"])
    args = ap.parse_args()

    for name, sig in [] if args.only == "master-restart" else (("kill -9", signal.SIGKILL), ("hung (SIGSTOP)", signal.SIGSTOP)):
        detected, recovered, fresh = [], [], []
        for r in range(args.rounds):
            c = Cluster(agents=2, slots="cpu:2", master_config="[resource_manager]\nagent_reconnect_wait = 2\n").start()
            try:
                fresh.append(fresh_start_seconds(c, r))
                d, rec, _ = agent_loss(c, r, sig)
                detected.append(d)
                recovered.append(rec)
            finally:
                c.agents = [a for a in c.agents if a is not None]
                c.stop()
        d, rec, f = statistics.median(detected), statistics.median(recovered), statistics.median(fresh)
        restart = rec - d - 2
        print(f"agent loss, {name}: detection {d:.2f} s, recovery {rec:.2f} s = detection + agent_reconnect_wait 2 s "
              f"+ {restart:.2f} s to train again elsewhere ({restart / f:.2f}x a fresh trial's start, {f:.2f} s); "
              f"medians of {args.rounds}", flush=True)

    if args.only == "agent-loss":
        return
    empty, full, submitted = master_restart(args.experiments)
    print(f"master restart: {args.experiments} non-terminal experiments restored and queued {full:.2f} s after "
          f"kill -9 + start, vs {empty:.2f} s with none (ratio {full / empty:.1f}); "
          f"submitting them took {submitted:.1f} s", flush=True)


if __name__ == "__main__":
    main()
