#!/usr/bin/env python3
"""A PyTorchTrial under det's Trainer beside the same model in a plain PyTorch loop, in one run.

What it measures: training samples/s of examples/pytorch-trial's Fashion-MNIST CNN (SGD with
momentum, gradient clipping, an epoch-stepped StepLR, dropout), on the first 12,800 training
images, trained for --batches batches of --batch-size:
  - plain:   PyTorch as a user writes it: torch's DataLoader (shuffle=True) over the same
             TensorDataset, zero_grad, forward, cross-entropy, backward, clip_grad_norm_, step,
             the scheduler stepped at each epoch's end, loss.item() every batch for a running
             mean printed every 100 batches;
  - trainer: FashionMNISTTrial through det.pytorch.Trainer.fit(max_length=Batch(n),
             reporting_period=Batch(100)), off the cluster: the same work plus det's loop (the
             resumable sharded data loader, metric windows read once per report, the report
             itself, preemption checks at each report).
Both clocks run from the start of the first batch's step to the end of the last one's and count
the batches after the first, so that neither counts its set-up or its first fetch. Validation
and checkpoints are left out of both (validation_period and checkpoint_period never
come due; the trainer's final checkpoint is written after its clock stops). Each variant runs
--repeats times, in pairs whose order alternates, after one warm-up run of each; the figure is
the median of the pairs' ratios of samples/s, trainer / plain (goal >= 0.97). Runs on the CPU, or on CUDA if torch sees one.

    /usr/bin/python3 bench/pytorch_trial_bench.py [--batches 300] [--batch-size 64] [--repeats 12]
"""

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../python"))
sys.path.insert(0, os.path.join(HERE, "../examples/pytorch-trial"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from determined import pytorch  # noqa: E402

import model_def  # noqa: E402
from data import fashion_mnist  # noqa: E402

TRAIN_LIMIT = 12_800


def hparams(batch_size):
    return {"global_batch_size": batch_size, "learning_rate": 0.05, "channels": 16, "dropout": 0.25,
            "train_limit": TRAIN_LIMIT, "validation_limit": 1000}


def plain(batches, batch_size):
    hp = hparams(batch_size)
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = model_def.Net(hp["channels"], hp["dropout"]).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=hp["learning_rate"], momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.9)
    loader = torch.utils.data.DataLoader(fashion_mnist("train", TRAIN_LIMIT), batch_size=batch_size, shuffle=True)
    trained, running = 0, []
    while trained < batches:
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            if trained == 0:
                started = time.perf_counter()  # as TimedTrial: from the first batch's step
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            running.append(loss.item())
            stopped = time.perf_counter()
            trained += 1
            if trained % 100 == 0:
                logging.debug("loss %f", sum(running) / len(running))
                running = []
            if trained == batches:
                break
        scheduler.step()
    return (batches - 1) * batch_size / (stopped - started)


class TimedTrial(model_def.FashionMNISTTrial):
    """Stops the clock when the last batch is trained, before the final checkpoint."""

    def train_batch(self, batch, epoch_idx, batch_idx):
        if batch_idx == 0:
            self.started = time.perf_counter()
        metrics = super().train_batch(batch, epoch_idx, batch_idx)
        self.stopped = time.perf_counter()
        return metrics

    def evaluate_batch(self, batch, batch_idx):
        return {"validation_loss": 0.0}


def trainer(batches, batch_size):
    torch.manual_seed(0)
    with pytorch.init(hparams=hparams(batch_size)) as context:
        trial = TimedTrial(context)
        trial.build_validation_data_loader = lambda: pytorch.DataLoader(fashion_mnist("t10k", batch_size),
                                                                        batch_size=batch_size)
        pytorch.Trainer(trial, context).fit(max_length=pytorch.Batch(batches), reporting_period=pytorch.Batch(100),
                                            checkpoint_policy="none")
    return (batches - 1) * batch_size / (trial.stopped - trial.started)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=12)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as storage:
        os.environ["XDG_DATA_HOME"] = storage  # the trainer's off-cluster checkpoints
        os.environ.pop("DET_MASTER", None)
        plain(50, args.batch_size)
        trainer(50, args.batch_size)
        figures = {"plain": [], "trainer": []}
        for i in range(args.repeats):
            # Pairs in alternating order: the machine's speed drifts over a run of minutes.
            for name in (("plain", "trainer") if i % 2 == 0 else ("trainer", "plain")):
                run = plain if name == "plain" else trainer
                figures[name].append(run(args.batches, args.batch_size))
    device = "cuda" if torch.cuda.is_available() else f"cpu ({torch.get_num_threads()} threads)"
    print(f"torch {torch.__version__} on {device}; {args.batches} batches of {args.batch_size}, {args.repeats} runs each")
    for name, values in figures.items():
        print(f"  {name:8s} median {statistics.median(values):9.0f} samples/s  (runs: {', '.join(f'{v:.0f}' for v in values)})")
    ratios = [t / p for t, p in zip(figures["trainer"], figures["plain"])]
    print(f"  trainer / plain, each pair: {', '.join(f'{r:.3f}' for r in ratios)}")
    print(f"  trainer / plain = {statistics.median(ratios):.3f}, the median pair (goal >= 0.97)")


if __name__ == "__main__":
    main()
