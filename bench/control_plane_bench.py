#!/usr/bin/env python3
"""Control-plane overhead, after Ray Tune's bookkeeping test scaled to this machine.

A random search of N builtin:simulate trials of S seconds each runs on A agents
x C CPU slots. Ideal = N * S / (A * C). Reported: the search's wall time (submit
to COMPLETED), its overhead over the ideal, and the same over a baseline measured
in this script: a plain pool of A*C processes running N one-trial-long `sleep`s,
i.e. what starting N processes costs this machine without det. The search's wall time runs from
the submit to the end the master records for the experiment (its end_time, on this machine's
clock), so that it does not include when a poll happens to see it; the poll-detected time is
printed too. The poll asks for the experiment list's one-line summaries once a second, not for the
experiment with its thousands of trials, which would load the master it measures. Also the CPU time
per trial of the master, its PostgreSQL, the agents and the trials' worker
processes (which the agents reap, so their time is the agents' children's), and
where a slot's time goes: from a trial's creation to its first training report
(scheduling, launch, process start, first batch), from there to its end, and the
rest of the wall time a slot spends between one trial's end and the next one's
creation, with percentiles (a mean hides whether every trial pays a little or a few pay a lot).

The search runs on a settled cluster: a warm-up search of four trials per slot runs first, so that
the agents' start-up is not counted (each agent starts its warm workers preloading LibTorch, about
0.5 s of CPU each: 16 of them at once on a 2-core machine delay the first waves of trials by
seconds). --cold submits the search as soon as the agents are connected instead.

Usage: bench/control_plane_bench.py [--trials 2000] [--seconds 1] [--agents 4] [--slots 4] [--cold]
"""

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../tests/integration"))
os.environ.setdefault("DET_BIN_DIR", os.path.join(HERE, "../build/bin"))
from cluster import Cluster, parse_time, wait_for  # noqa: E402

BATCHES = 100


def search_config(trials, seconds, slots):
    return f"""
name = "control-plane"
entrypoint = "builtin:simulate"
max_restarts = 0
[hyperparameters]
x = {{ type = "double", minval = -5.0, maxval = 5.0 }}
[searcher]
name = "random"
metric = "validation_loss"
max_trials = {trials}
max_concurrent_trials = {slots}
max_length = {{ batches = {BATCHES} }}
[data]
seconds_per_batch = {seconds / BATCHES}
[reproducibility]
experiment_seed = 3
"""


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid, children=False):
    """User + system CPU of a process, or of its reaped children, in seconds (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # After the command: state is field 3; utime, stime, cutime, cstime are fields 14 to 17.
    first = 13 if children else 11
    return (int(fields[first]) + int(fields[first + 1])) / CLOCK_TICKS


def postgres_cpu_seconds():
    total = 0.0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() == "postgres":
                        total += cpu_seconds(pid)
            except OSError:
                pass
    return total


def cpu_by_part(cluster):
    return {
        "master": cpu_seconds(cluster.master.pid),
        "postgres": postgres_cpu_seconds(),
        "agents": sum(cpu_seconds(a.pid) for a in cluster.agents),
        "workers": sum(cpu_seconds(a.pid, children=True) for a in cluster.agents),
    }


def process_pool_seconds(trials, seconds, width):
    start = time.monotonic()
    with ThreadPoolExecutor(width) as pool:
        list(pool.map(lambda _: subprocess.run(["sleep", str(seconds)], check=True), range(trials)))
    return time.monotonic() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--agents", type=int, default=4)
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--cold", action="store_true", help="submit as soon as the agents are connected")
    args = ap.parse_args()
    width = args.agents * args.slots
    ideal = args.trials * args.seconds / width

    baseline = process_pool_seconds(args.trials, args.seconds, width)
    print(f"baseline process pool: {baseline:.1f} s ({(baseline / ideal - 1) * 100:+.1f} % over "
          f"ideal {ideal:.1f} s)", flush=True)

    c = Cluster(agents=args.agents, slots=f"cpu:{args.slots}").start()
    try:
        if not args.cold:
            warm_up = time.monotonic()
            warm_up_id = c.submit(search_config(4 * width, args.seconds, width))
            c.wait_experiment(warm_up_id, {"STATE_COMPLETED"}, timeout=300, interval=1)
            print(f"warm-up search of {4 * width} trials: {time.monotonic() - warm_up:.1f} s "
                  f"(ideal {4 * args.seconds:.1f} s)", flush=True)
        cpu_before = cpu_by_part(c)
        start, submitted_at = time.monotonic(), time.time()
        exp_id = c.submit(search_config(args.trials, args.seconds, width))

        def ended():
            for e in c.get("/api/v1/experiments?limit=10")["experiments"]:
                if int(e["id"]) == exp_id and e["state"] in ("STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"):
                    return e
            return None
        wait_for(ended, args.trials * args.seconds * 4 + 120, f"experiment {exp_id} to end", 1)
        polled_wall = time.monotonic() - start
        cpu_after = cpu_by_part(c)
        exp = c.experiment(exp_id)
        wall = parse_time(exp["experiment"]["end_time"]) - submitted_at
        states = {}
        for t in exp["trials"]:
            states[t["state"]] = states.get(t["state"], 0) + 1
        print(f"det: experiment {exp['experiment']['state']}, trials {states}", flush=True)
        for t in exp["trials"]:  # what ended a trial that did not complete, and its last log lines
            if t["state"] != "STATE_COMPLETED":
                print(f"trial {t['id']} {t['state']}: {t.get('exit_reason', '')}", flush=True)
                print("\n".join(c.trial_logs(t["id"])[-15:]), flush=True)
        to_first, after_first, lifetimes = [], [], []
        for t in exp["trials"]:
            created, ended = parse_time(t["start_time"]), parse_time(t["end_time"])
            first = c.first_report_time(t["id"])
            lifetimes.append(ended - created)
            if first is not None:
                to_first.append(first - created)
                after_first.append(ended - first)
    finally:
        c.stop()
    print(f"trials={args.trials} slots={width} {'cold' if args.cold else 'settled'} ideal_s={ideal:.1f} det_wall_s={wall:.1f} "
          f"overhead_vs_ideal={(wall / ideal - 1) * 100:+.1f}% "
          f"baseline_s={baseline:.1f} overhead_vs_baseline={(wall / baseline - 1) * 100:+.1f}% "
          f"poll_detected_wall_s={polled_wall:.1f} ({(polled_wall / ideal - 1) * 100:+.1f}%)")
    per_trial = {part: (cpu_after[part] - cpu_before[part]) / args.trials * 1000 for part in cpu_after}
    print("cpu_ms_per_trial " + " ".join(f"{part}={ms:.1f}" for part, ms in per_trial.items()))
    mean = lambda xs: sum(xs) / len(xs) * 1000  # noqa: E731
    between = wall * width / args.trials * 1000 - mean(lifetimes)
    print(f"ms_per_trial created_to_first_report={mean(to_first):.1f} first_report_to_end={mean(after_first):.1f} "
          f"slot_idle_between_trials={between:.1f}")
    # A mean hides whether every trial pays a little or a few pay a lot (a stalled message).
    for name, xs in (("created_to_first_report", to_first), ("first_report_to_end", after_first)):
        xs = sorted(xs)
        print(f"{name}_ms p50={xs[len(xs) // 2] * 1000:.1f} p90={xs[len(xs) * 9 // 10] * 1000:.1f} "
              f"p99={xs[len(xs) * 99 // 100] * 1000:.1f} max={xs[-1] * 1000:.1f}")


if __name__ == "__main__":
    main()
