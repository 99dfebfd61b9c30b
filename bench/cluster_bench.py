#!/usr/bin/env python3
"""Cluster benchmarks, each a ratio against a baseline measured in this script.

  harness overhead   samples/s of builtin:mlp trained inside det (worker process,
                     metric reports to the master) / the same model, data and
                     batch size in a bare LibTorch loop (bench_mlp_bare).
  trial start        submit -> first training metric on a warm cluster, p50 and
                     p95 over N runs, and p50 / the bare loop's process start to
                     its first trained batch.

Usage: bench/cluster_bench.py [--batches 3000] [--rounds 7] [--runs 20]
(DET_BIN_DIR defaults to build/bin.)
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../tests/integration"))
os.environ.setdefault("DET_BIN_DIR", os.path.join(HERE, "../build/bin"))
from cluster import BIN, Cluster, parse_time, wait_for  # noqa: E402

REPORT_PERIOD = 100


def mlp_config(name, batches, dataset, report_period):
    return f"""
name = "{name}"
entrypoint = "builtin:mlp"
max_restarts = 0
scheduling_unit = {report_period}
[hyperparameters]
global_batch_size = 64
[searcher]
name = "single"
metric = "validation_accuracy"
smaller_is_better = false
max_length = {{ batches = {batches} }}
[data]
dataset = "{dataset}"
validation_limit = 1000
[reproducibility]
experiment_seed = 1
"""


def bare_samples_per_second(batches):
    out = subprocess.run([os.path.join(BIN, "bench_mlp_bare"), "--batches", str(batches),
                          "--dataset", "fashion-mnist", "--batch-size", "64",
                          "--warmup", str(REPORT_PERIOD)],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().split("=")[1])


def det_samples_per_second(c, batches):
    exp_id = c.submit(mlp_config("overhead", batches, "fashion-mnist", REPORT_PERIOD))
    # Polled slowly: the poller's requests would otherwise compete with training for the cores.
    exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=900, interval=2)
    assert exp["experiment"]["state"] == "STATE_COMPLETED", exp
    # Same window as the bare loop's: from the end of the first report period to the last batch.
    return c.training_samples_per_second(exp["trials"][0]["id"])


def harness_overhead(c, batches, rounds):
    # Each det run is bracketed by a bare run before and after it, so that
    # the drift of a shared machine's speed hits both sides of a ratio alike.
    ratios = []
    for r in range(rounds):
        before = bare_samples_per_second(batches)
        inside = det_samples_per_second(c, batches)
        after = bare_samples_per_second(batches)
        bare = (before + after) / 2
        ratios.append(inside / bare)
        print(f"  round {r + 1}: bare {before:.0f} / {after:.0f} samples/s, inside det "
              f"{inside:.0f} samples/s, ratio {inside / bare:.3f}", flush=True)
    return statistics.median(ratios)


def bare_start_seconds():
    start = time.time()
    subprocess.run([os.path.join(BIN, "bench_mlp_bare"), "--batches", "1", "--dataset", "synthetic",
                    "--batch-size", "64"], capture_output=True, check=True)
    return time.time() - start


def trial_start_seconds(c):
    submitted = time.time()
    exp_id = c.submit(mlp_config("start", 20, "synthetic", 1))

    def first_report():
        trials = c.experiment(exp_id)["trials"]
        if not trials:
            return None
        reports = c.get(f"/api/v1/trials/{trials[0]['id']}/metrics?group=training")["metrics"]
        return reports[0] if reports else None

    report = wait_for(first_report, 60, "the first training metric")
    c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=120)
    return parse_time(report["time"]) - submitted


def percentile(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    c = Cluster(agents=1).start()
    try:
        print("harness overhead (fashion-mnist MLP, batch 64):", flush=True)
        ratio = harness_overhead(c, args.batches, args.rounds)
        print(f"harness_overhead_ratio={ratio:.3f} (median of {args.rounds})", flush=True)

        print(f"trial start latency over {args.runs} runs:", flush=True)
        trial_start_seconds(c)  # warms the cluster: pool, agent, page cache
        starts = [trial_start_seconds(c) for _ in range(args.runs)]
        bare = statistics.median(bare_start_seconds() for _ in range(5))
        p50, p95 = percentile(starts, 50), percentile(starts, 95)
        print(f"trial_start_p50_ms={p50 * 1000:.0f} trial_start_p95_ms={p95 * 1000:.0f} "
              f"bare_process_to_first_batch_ms={bare * 1000:.0f} ratio_p50={p50 / bare:.2f}")
    finally:
        c.stop()


if __name__ == "__main__":
    main()
