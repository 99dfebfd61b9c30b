"""A Core API trial for the container tests: reports what it sees of its environment, then
trains a little and checkpoints; with ALLOCATE_MB set it allocates that much first."""

import os

import det_core  # from det's bind-mounted client: this directory has no copy

ctx = det_core.Context()
megabytes = int(os.environ.get("ALLOCATE_MB", "0"))
if megabytes:
    hog = bytearray(megabytes * 1024 * 1024)
    hog[:] = b"x" * len(hog)

try:
    with open("/mnt/data/value.txt", "w") as f:
        f.write("changed")
    mount_read_only = 0
except OSError:
    mount_read_only = 1
with open("/mnt/data/value.txt") as f:
    mount_value = float(f.read())
facts = {
    "greeting_ok": 1.0 if os.environ.get("GREETING") == "hello" else 0.0,
    "mount_value": mount_value,
    "mount_read_only": float(mount_read_only),
    "in_image": 1.0 if os.path.exists("/usr/local/bin/det-image-python3") else 0.0,
}
steps = 0
for op in ctx.searcher_operations():
    while steps < op.length:
        steps += 1
        ctx.report_training_metrics(steps, dict(facts, loss=1.0 / steps))
    with ctx.checkpoint(steps) as path:
        with open(os.path.join(path, "state.txt"), "w") as f:
            f.write(str(steps))
    ctx.report_validation_metrics(steps, {"validation_loss": 1.0 / steps})
    op.report_completed(1.0 / steps)
