"""The parts of Determined 0.38's `determined.common.util` that training scripts use."""

import os

# The metric groups with a meaning of their own: "training" and "validation" are the trial's
# series (the searcher reads its metric from validation); any other name is a generic group
# (core_context.train.report_metrics(group, ...)), stored and charted as it is.
_LEGACY_TRAINING = "training"
_LEGACY_VALIDATION = "validation"
_INFERENCE = "inference"


def debug_mode() -> bool:
    """Whether DET_DEBUG asks for Determined's debug output."""
    return os.getenv("DET_DEBUG", "").lower() in ("true", "1", "yes")


def sizeof_fmt(val: float) -> str:
    """A byte count for people: 1536 -> '1.5KB'."""
    val = float(val)
    for unit in ("", "K", "M", "G", "T", "P", "E", "Z"):
        if abs(val) < 1024.0:
            return "%3.1f%sB" % (val, unit)
        val /= 1024.0
    return "%.1f%sB" % (val, "Y")
