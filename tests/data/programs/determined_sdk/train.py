"""A Core API script written as Determined's docs teach it: training and validation metrics, a
generic metric group whose name holds spaces, '%', '/', '&', '+' and '#' (each means something in
a URL), an alert, and a checkpoint with a file in a subdirectory, for the SDK to list and download."""

import os

from determined import core
from determined.common import util

GROUP = "eval % top/1 & f1+ #2"

with core.init() as core_context:
    steps = 0
    for op in core_context.searcher.operations():
        while steps < op.length:
            steps += 1
            core_context.train.report_metrics(util._LEGACY_TRAINING, steps, {"loss": 1.0 / steps})
            core_context.train.report_metrics(GROUP, steps, {"top 1 %": steps / 10.0, "<b>rate</b>": 2.0 * steps})
            op.report_progress(steps)
        core_context.train.report_metrics(util._LEGACY_VALIDATION, steps, {"validation_loss": 1.0 / steps})
        core_context.alert(title="loss <fell>", description=f"to {1.0 / steps} & below", level="warn")
        with core_context.checkpoint.store_path({"steps_completed": steps}) as (path, _):
            with open(os.path.join(path, "weights.txt"), "w") as f:
                f.write(f"weights at {steps}\n")
            os.makedirs(os.path.join(path, "code dir"))
            with open(os.path.join(path, "code dir", "model 100%.py"), "w") as f:
                f.write("print('the model')\n")
        op.report_completed(1.0 / steps)
