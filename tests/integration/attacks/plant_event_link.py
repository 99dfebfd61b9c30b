"""A Core API trial that makes its TensorBoard directory a symlink into the master's data
directory before its first report, for the master to write its event file through."""

import os

import det_core

ctx = det_core.Context()
parent = os.path.join(ctx.checkpoint_dir, "tensorboard", "experiment", str(ctx.experiment_id), "trial")
os.makedirs(parent, exist_ok=True)
os.symlink(ctx.hparams["target"], os.path.join(parent, str(ctx.trial_id)))
ctx.report_training_metrics(1, {"loss": 1.0})
ctx.report_validation_metrics(1, {"loss": 1.0})
print("PLANTED", flush=True)
