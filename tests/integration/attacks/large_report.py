"""Not an attack: a trial's process sends one metrics report of more than 64 KiB (the most the
master reads before it knows who is calling), with its run's token, as a busy trial may."""

import det_core

ctx = det_core.Context()
ctx.report_training_metrics(1, {f"metric_{i:05d}": float(i) for i in range(5000)})
ctx.report_validation_metrics(1, {"loss": 1.0})
