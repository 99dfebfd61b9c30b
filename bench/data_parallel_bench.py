#!/usr/bin/env python3
"""Data-parallel scaling across agents: builtin:mlp trained by one worker on one agent (the
baseline) and by two workers on two agents (slots_per_trial = 2: each its half of every batch,
gradients averaged through shared memory, the agents being on one host), same model, data and
global batch, alternated in one cluster. Prints samples/s of each and their ratio; 2.0 would be
perfect scaling.

The ceiling comes from the same run: two independent one-worker trials at once, one per agent, each
on half the global batch (what each worker of the data-parallel run computes, without the
exchange), against one alone on the whole batch. No data-parallel run can scale better than that:
on a machine whose cores are shared it is under 2, and where half a batch trains at fewer samples/s
than a whole one (small batches) it is under 2 too.

Every worker gets one LibTorch thread (OMP_NUM_THREADS=1 reaches the workers through the
agents), so that one worker uses one core and two use two, as one slot per core would.

The gradients (2.1 MB for this model) form one bucket, averaged once the backward pass is done
(det::gradient_averager); small batches pay the exchange on a shorter step: the bench runs a small
and a large global batch.

Usage: bench/data_parallel_bench.py [--batches 600] [--rounds 3] [--batch-sizes 512,2048]
(DET_BIN_DIR defaults to build/bin.)
"""

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../tests/integration"))
os.environ.setdefault("DET_BIN_DIR", os.path.join(HERE, "../build/bin"))
os.environ["OMP_NUM_THREADS"] = "1"
from cluster import Cluster  # noqa: E402

REPORT_PERIOD = 50


def mlp_config(slots, batches, batch_size):
    return f"""
name = "data-parallel-{slots}"
entrypoint = "builtin:mlp"
max_restarts = 0
scheduling_unit = {REPORT_PERIOD}
[resources]
slots_per_trial = {slots}
[hyperparameters]
global_batch_size = {batch_size}
hidden_sizes = [512, 256]
optimizer = "sgd"
learning_rate = 0.05
[searcher]
name = "single"
metric = "validation_accuracy"
smaller_is_better = false
max_length = {{ batches = {batches} }}
[data]
dataset = "synthetic"
synthetic_train_size = 16384
synthetic_val_size = 1000
[reproducibility]
experiment_seed = 1
"""


def samples_per_second(c, slots, batches, batch_size, experiments=1):
    """Samples/s of `experiments` experiments of `slots` slots run at once, added up."""
    ids = [c.submit(mlp_config(slots, batches, batch_size), f"dp{slots}.toml") for _ in range(experiments)]
    total = 0.0
    for exp_id in ids:
        # Polled slowly: the poller's requests would otherwise compete with training for the cores.
        exp = c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=900, interval=2)
        assert exp["experiment"]["state"] == "STATE_COMPLETED", exp
        # From the end of the first report period (start-up and rendezvous excluded) to the last batch.
        total += c.training_samples_per_second(exp["trials"][0]["id"])
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch-sizes", default="512,2048")
    args = ap.parse_args()
    c = Cluster(agents=2, slots="cpu:1").start()
    try:
        for batch_size in (int(b) for b in args.batch_sizes.split(",")):
            print(f"global batch {batch_size}:", flush=True)
            ratios, ceilings = [], []
            for r in range(args.rounds):
                alone = samples_per_second(c, 1, args.batches, batch_size)
                together = samples_per_second(c, 2, args.batches, batch_size)
                independent = samples_per_second(c, 1, args.batches, batch_size // 2, experiments=2)
                ratios.append(together / alone)
                ceilings.append(independent / alone)
                print(f"  round {r + 1}: one worker {alone:.0f} samples/s, two workers on two agents "
                      f"{together:.0f} samples/s, ratio {together / alone:.2f}; two independent "
                      f"one-worker trials on half the batch {independent:.0f} samples/s, ceiling "
                      f"{independent / alone:.2f}",
                      flush=True)
            print(f"data_parallel_ratio_batch_{batch_size}={statistics.median(ratios):.2f} "
                  f"machine_ceiling={statistics.median(ceilings):.2f} "
                  f"(medians of {args.rounds}; 2.0 is perfect)", flush=True)
    finally:
        c.stop()


if __name__ == "__main__":
    main()
