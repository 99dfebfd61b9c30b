"""pytorch.init() and the Trainer: the entry points of Determined's Trainer API, which run a
PyTorchTrial's loop (see _trial_controller.py) on det's Core API."""

import contextlib
import logging
import os
import random
import sys
import warnings
from typing import Any, Dict, Iterator, Optional

import numpy as np
import torch
import torch.distributed

import determined as det
from determined import core
from determined.pytorch._context import PyTorchTrialContext
from determined.pytorch._trainer_utils import Batch, TrainUnit
from determined.pytorch._trial import PyTorchTrial

logger = logging.getLogger("determined.pytorch")

CHECKPOINT_POLICIES = ("best", "all", "none")


def _searcher_length(exp_conf: Dict[str, Any], global_batch_size: int) -> Optional[TrainUnit]:
    """The deprecated searcher.max_length as the training length; det also reads
    time_metric and max_time, the form Determined 0.38's configs give the same length in."""
    searcher = exp_conf.get("searcher", {})
    if searcher.get("max_length") is not None:
        length = searcher["max_length"]
        if isinstance(length, int):
            length = {"batches": length}
        warnings.warn("searcher.max_length is deprecated in Determined 0.38: pass max_length to Trainer.fit()",
                      FutureWarning, stacklevel=3)
        return TrainUnit._from_length(length, global_batch_size, "searcher.max_length")
    if searcher.get("max_time") is not None and searcher.get("time_metric") in ("batches", "epochs", "records"):
        return TrainUnit._from_length({searcher["time_metric"]: searcher["max_time"]}, global_batch_size,
                                      "searcher.max_time")
    return None


class Trainer:
    """Trains `trial` with `context` (from pytorch.init()): Trainer(trial, context).fit(...)."""

    def __init__(self, trial: PyTorchTrial, context: PyTorchTrialContext) -> None:
        if not isinstance(trial, PyTorchTrial):
            raise TypeError(f"Trainer trains a PyTorchTrial, not {type(trial).__name__}")
        self._trial = trial
        self._context = context
        self._info = context._core.info

    def fit(self, checkpoint_period: Optional[TrainUnit] = None, validation_period: Optional[TrainUnit] = None,
            max_length: Optional[TrainUnit] = None, reporting_period: TrainUnit = Batch(100),
            checkpoint_policy: str = "best", latest_checkpoint: Optional[str] = None,
            step_zero_validation: bool = False, test_mode: bool = False, profiling_enabled: bool = False) -> None:
        """Trains until max_length, validating every validation_period, checkpointing every
        checkpoint_period (and after validations, as checkpoint_policy says: "best", "all" or
        "none"), reporting training metrics every reporting_period; it resumes from
        `latest_checkpoint` (a checkpoint's storage id: det.get_cluster_info().latest_checkpoint)
        and stops, checkpointed, when det preempts the trial."""
        from determined.pytorch._trial_controller import TrialController

        on_cluster = self._info is not None
        if profiling_enabled:
            raise NotImplementedError("det has no profiler for trials; profile with torch.profiler in your code")
        if test_mode and on_cluster:
            raise ValueError("test_mode is for local runs only: det runs a trial to its length")
        if checkpoint_policy not in CHECKPOINT_POLICIES:
            raise ValueError(f"checkpoint_policy must be one of {', '.join(CHECKPOINT_POLICIES)}, not {checkpoint_policy!r}")
        for name, unit in (("checkpoint_period", checkpoint_period), ("validation_period", validation_period),
                           ("max_length", max_length), ("reporting_period", reporting_period)):
            if unit is not None and not isinstance(unit, TrainUnit):
                raise TypeError(f"{name} must be a pytorch.Batch or pytorch.Epoch, not {unit!r}")
        if max_length is None and on_cluster:
            hparams = self._context._hparams or {}
            max_length = _searcher_length(self._context.get_experiment_config(), int(hparams.get("global_batch_size", 1)))
        if max_length is None:
            raise ValueError("fit() needs max_length (pytorch.Batch(n) or pytorch.Epoch(n)): how long to train")
        if not on_cluster and checkpoint_policy == "best":
            checkpoint_policy = "all"  # no experiment to compare with, as in Determined
        if test_mode:
            max_length = Batch(1)
        never = Batch(sys.maxsize)
        TrialController(
            trial=self._trial, context=self._context, max_length=max_length,
            validation_period=validation_period or never, checkpoint_period=checkpoint_period or never,
            reporting_period=reporting_period, checkpoint_policy=checkpoint_policy,
            latest_checkpoint=latest_checkpoint, step_zero_validation=step_zero_validation, test_mode=test_mode,
        ).run()


def _torch_distributed() -> core.DistributedContext:
    """Joins the processes det's launcher started (torch.distributed's variables): NCCL on GPUs,
    Gloo on CPUs."""
    if not torch.distributed.is_initialized():
        if torch.cuda.is_available():
            # Each process's NCCL communicator on its own GPU, not every one on GPU 0.
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        torch.distributed.init_process_group(backend=backend)
    return core.DistributedContext.from_torch_distributed()


def _seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % (1 << 32))
    torch.manual_seed(seed)


@contextlib.contextmanager
def init(*, hparams: Optional[Dict[str, Any]] = None, exp_conf: Optional[Dict[str, Any]] = None,
         distributed: Optional[core.DistributedContext] = None, aggregation_frequency: int = 1,
         enable_tensorboard_logging: bool = True) -> Iterator[PyTorchTrialContext]:
    """The context a Trainer script builds its trial with:

        with det.pytorch.init(hparams=info.trial.hparams) as context:
            Trainer(MyTrial(context), context).fit(max_length=pytorch.Epoch(1))

    On det it joins the launcher's processes (`distributed` is not used), takes the experiment's
    config and seeds random, numpy and torch with the trial's seed; off det, it uses what it is
    given."""
    info = det.get_cluster_info()
    created_group = False
    steps_completed = 0
    if info is not None:
        if distributed is not None:
            logger.warning("on det, pytorch.init() joins the processes det's launcher started; `distributed` is not used")
        distributed = None
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            created_group = not torch.distributed.is_initialized()
            distributed = _torch_distributed()
        exp_conf = info.trial._config
        trial_seed = info.trial.trial_seed
        steps_completed = info.trial._steps_completed
        _seed(trial_seed)
    else:
        trial_seed = int((exp_conf or {}).get("reproducibility", {}).get("experiment_seed", 0))
    core_context = core.init(distributed=distributed, preempt_mode=core.PreemptMode.WorkersAskChief,
                             tensorboard_mode=core.TensorboardMode.MANUAL)
    try:
        with core_context:
            yield PyTorchTrialContext(core_context, trial_seed=trial_seed, hparams=hparams, exp_conf=exp_conf,
                                      aggregation_frequency=aggregation_frequency, steps_completed=steps_completed,
                                      enable_tensorboard_logging=enable_tensorboard_logging)
    finally:
        if created_group and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
