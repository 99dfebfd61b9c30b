#!/usr/bin/env python3
"""Logistic regression on generated data, trained through det's Core API (det_core.py).

Hyperparameters: learning_rate, batch_size; `noise_features` adds that many useless inputs;
`step_seconds` slows every step down, to watch a search unfold.
Each batch is one step; the trial validates (log loss on a held-out set) every 10 steps and when
the searcher's operation is reached, so that ASHA can stop it early; it checkpoints at the end and
whenever it is preempted, and continues from
DET_LATEST_CHECKPOINT when it is restarted, paused and activated, or promoted.
"""

import json
import math
import os
import random
import sys
import time

import det_core

ctx = det_core.Context()
hp = ctx.hparams
learning_rate = float(hp.get("learning_rate", 0.1))
batch_size = int(hp.get("batch_size", 16))
features = 2 + int(hp.get("noise_features", 0))
step_seconds = float(hp.get("step_seconds", 0))
if batch_size < 1:
    print(f"batch_size must be positive, got {batch_size}", file=sys.stderr)
    ctx.report_early_exit("INVALID_HP")
    sys.exit(1)


def sample(rng, n):
    """Two classes, separable along the first two inputs; the rest is noise."""
    points = []
    for _ in range(n):
        label = rng.random() < 0.5
        x = [rng.gauss(1.0 if label else -1.0, 1.0), rng.gauss(0.5 if label else -0.5, 1.0)]
        x += [rng.gauss(0.0, 1.0) for _ in range(features - 2)]
        points.append((x, 1.0 if label else 0.0))
    return points


def predict(w, b, x):
    z = b + sum(wi * xi for wi, xi in zip(w, x))
    return 1.0 / (1.0 + math.exp(-max(min(z, 30.0), -30.0)))


def log_loss(w, b, data):
    eps = 1e-9
    return -sum(y * math.log(predict(w, b, x) + eps) + (1 - y) * math.log(1 - predict(w, b, x) + eps)
                for x, y in data) / len(data)


validation = sample(random.Random(12345), 500)
rng = random.Random(ctx.seed)
w, b, steps = [0.0] * features, 0.0, 0
if ctx.latest_checkpoint:
    with open(os.path.join(ctx.latest_checkpoint, "state.json")) as f:
        state = json.load(f)
    w, b = state["w"], state["b"]
    if not ctx.warm_start:
        steps = state["steps"]
        rng.setstate((state["rng"][0], tuple(state["rng"][1]), state["rng"][2]))
    print(f"continuing from {ctx.latest_checkpoint} at step {steps}")


def save():
    with ctx.checkpoint(steps) as path:
        with open(os.path.join(path, "state.json"), "w") as f:
            json.dump({"w": w, "b": b, "steps": steps, "rng": rng.getstate()}, f)


for op in ctx.searcher_operations():
    print(f"training to {op.length} {op.unit} with learning rate {learning_rate}")
    while steps < op.length:
        batch = sample(rng, batch_size)
        grad_w, grad_b = [0.0] * features, 0.0
        for x, y in batch:
            error = predict(w, b, x) - y
            grad_w = [g + error * xi for g, xi in zip(grad_w, x)]
            grad_b += error
        w = [wi - learning_rate * g / batch_size for wi, g in zip(w, grad_w)]
        b -= learning_rate * grad_b / batch_size
        steps += 1
        time.sleep(step_seconds)
        if steps % 10 == 0:
            ctx.report_training_metrics(steps, {"loss": log_loss(w, b, batch)})
            op.report_progress(steps)
            if steps < op.length:
                ctx.report_validation_metrics(steps, {"validation_loss": log_loss(w, b, validation)})
        if ctx.should_preempt():
            save()
            print(f"preempted at step {steps}")
            sys.exit(0)
    loss = log_loss(w, b, validation)
    ctx.report_validation_metrics(steps, {"validation_loss": loss})
    op.report_completed(loss)
    print(f"validation loss {loss:.4f} at step {steps}")
save()
