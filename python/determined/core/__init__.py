"""Determined's Core API on det: core.init() and the contexts it builds."""

from determined.core._distributed import DistributedContext, DummyDistributedContext
from determined.core._checkpoint import CheckpointContext, DownloadMode
from determined.core._train import EarlyExitReason, TensorboardMode, TrainContext
from determined.core._searcher import SearcherContext, SearcherMode, SearcherOperation, Unit
from determined.core._preempt import PreemptContext, PreemptMode
from determined.core._context import Context, init

__all__ = [
    "CheckpointContext", "Context", "DistributedContext", "DownloadMode", "DummyDistributedContext",
    "EarlyExitReason", "PreemptContext", "PreemptMode", "SearcherContext", "SearcherMode",
    "SearcherOperation", "TensorboardMode", "TrainContext", "Unit", "init",
]
