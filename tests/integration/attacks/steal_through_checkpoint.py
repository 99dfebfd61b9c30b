"""A trial that records a checkpoint leading into the master's data directory: a symlink as one
of its files ("file-link"), its directory itself a symlink ("dir-link"), or a uuid that climbs
out of the storage ("climbing-uuid"). What the master answered is printed for the test."""

import json
import os
import uuid

import det_core

ctx = det_core.Context()
target = ctx.hparams["target"]  # a file of the master's data directory
mode = ctx.hparams["mode"]
name = str(uuid.uuid4())
directory = os.path.join(ctx.checkpoint_dir, name)
if mode == "file-link":
    os.makedirs(directory)
    os.symlink(target, os.path.join(directory, "stolen"))
    resources = {"stolen": 64}
elif mode == "dir-link":
    os.symlink(os.path.dirname(target), directory)
    resources = {os.path.basename(target): 64}
else:
    name = os.path.relpath(os.path.dirname(target), ctx.checkpoint_dir)
    resources = {os.path.basename(target): 64}
try:
    ctx._call("POST", f"/api/v1/trials/{ctx.trial_id}/checkpoints",
              {"uuid": name, "steps_completed": 1, "resources": resources})
    print("RECORDED " + json.dumps({"uuid": name, "file": next(iter(resources))}), flush=True)
except det_core.DetError as e:
    print("REFUSED " + str(e), flush=True)
ctx.report_validation_metrics(1, {"loss": 1.0})
