"""PyTorchTrialContext: what a PyTorchTrial is given to build its model, optimizers and data,
and through which it steps them so that the trainer can aggregate gradients, scale losses in
mixed precision and train data-parallel without the trial's code changing."""

import contextlib
import logging
import os
from typing import Any, Callable, Dict, Iterator, List, Optional, Union

import torch
import torch.nn as nn

from determined import core
from determined.pytorch._lr_scheduler import LRScheduler
from determined.pytorch._reducer import MetricReducer, _ReducerRegistry

logger = logging.getLogger("determined.pytorch")


def _training_device(distributed: core.DistributedContext) -> torch.device:
    """The process's GPU (its local rank among the slots it was given), else the CPU."""
    if torch.cuda.is_available():
        return torch.device("cuda", distributed.local_rank % torch.cuda.device_count())
    return torch.device("cpu")


class _Experimental:
    """context.experimental: switches Determined keeps apart from the stable API."""

    def __init__(self, context: "PyTorchTrialContext") -> None:
        self._context = context

    def use_amp(self) -> None:
        """Automatic mixed precision: wrapped models run their forward in autocast, backward()
        scales the loss and step_optimizer() unscales, clips and steps through a GradScaler
        (which does nothing on a CPU, where autocast uses bfloat16 and needs no scaling)."""
        if self._context._models:
            raise RuntimeError("call context.experimental.use_amp() before context.wrap_model()")
        enabled = self._context.device.type == "cuda"
        self._context.wrap_scaler(torch.cuda.amp.GradScaler(enabled=enabled))
        self._context._auto_amp = True

    def disable_auto_to_device(self) -> None:
        """Batches reach train_batch as the data loader gives them, not moved to the device."""
        self._context._auto_to_device = False

    def disable_dataset_reproducibility_checks(self) -> None:
        """The trial may return a plain torch DataLoader; it restarts its data on a resume."""
        self._context._reproducibility_checks = False


class PyTorchTrialContext:
    """Given to a PyTorchTrial's __init__ (and by pytorch.init() to a Trainer's script)."""

    def __init__(self, core_context: core.Context, *, trial_seed: int, hparams: Optional[Dict[str, Any]],
                 exp_conf: Optional[Dict[str, Any]], aggregation_frequency: int = 1, steps_completed: int = 0,
                 managed_training: bool = True, enable_tensorboard_logging: bool = True) -> None:
        if aggregation_frequency < 1:
            raise ValueError(f"aggregation_frequency must be at least 1, not {aggregation_frequency}")
        self._core = core_context
        self.distributed = core_context.distributed
        self._trial_seed = trial_seed
        self._hparams = hparams
        self._exp_conf = exp_conf or {}
        self._aggregation_frequency = aggregation_frequency
        self._steps_completed = steps_completed
        self._managed_training = managed_training
        self._enable_tensorboard_logging = enable_tensorboard_logging
        self.device = _training_device(self.distributed) if managed_training else torch.device("cpu")
        self.experimental = _Experimental(self)
        self._models: List[nn.Module] = []
        self._optimizers: List[torch.optim.Optimizer] = []
        self._average_aggregated: Dict[int, bool] = {}  # by id(optimizer)
        self._lr_schedulers: List[LRScheduler] = []
        self._scaler: Optional[Any] = None
        self._auto_amp = False
        self._auto_to_device = True
        self._reproducibility_checks = True
        self._reducers = _ReducerRegistry()
        self._stop_requested = False
        self._tensorboard_writer: Any = None
        self._current_batch_idx: Optional[int] = None
        self._epoch_len: Optional[int] = None

    # What the trial wrapped, in wrap order (Determined's public lists).
    @property
    def models(self) -> List[nn.Module]:
        return self._models

    @property
    def optimizers(self) -> List[torch.optim.Optimizer]:
        return self._optimizers

    @property
    def lr_schedulers(self) -> List[LRScheduler]:
        return self._lr_schedulers

    # What the trial is.
    def get_hparams(self) -> Dict[str, Any]:
        if self._hparams is None:
            raise ValueError("this context has no hyperparameters: pass hparams= to det.pytorch.init() "
                             "(on det, det.get_cluster_info().trial.hparams)")
        return self._hparams

    def get_hparam(self, name: str) -> Any:
        hparams = self.get_hparams()
        if name not in hparams:
            raise ValueError(f"the trial has no hyperparameter {name!r}; it has {sorted(hparams)}")
        return hparams[name]

    def get_experiment_config(self) -> Dict[str, Any]:
        return self._exp_conf

    def get_data_config(self) -> Dict[str, Any]:
        return self._exp_conf.get("data", {})

    def get_experiment_id(self) -> int:
        info = self._core.info
        return info.trial.experiment_id if info is not None else 0

    def get_trial_id(self) -> int:
        info = self._core.info
        return info.trial.trial_id if info is not None else 0

    def get_trial_seed(self) -> int:
        return self._trial_seed

    def get_initial_batch(self) -> int:
        return self._steps_completed

    def get_global_batch_size(self) -> int:
        return self._batch_sizes()[1]

    def get_per_slot_batch_size(self) -> int:
        return self._batch_sizes()[0]

    def _batch_sizes(self) -> "tuple[int, int]":
        """(per slot, global): the hparam global_batch_size split over the processes, rounded
        down to a multiple of their count, as Determined does."""
        hparams = self._hparams or {}
        if "global_batch_size" not in hparams:
            raise ValueError("get_global_batch_size() reads the hyperparameter global_batch_size, which this trial "
                             "does not have; add it to the experiment's hyperparameters")
        global_size = int(hparams["global_batch_size"])
        size = self.distributed.size
        if global_size < size:
            raise ValueError(f"global_batch_size {global_size} is smaller than the {size} processes training the trial")
        per_slot = global_size // size
        return per_slot, per_slot * size

    # Where training is.
    def _is_sync_batch(self, batch_idx: Optional[int] = None) -> bool:
        index = self._current_batch_idx if batch_idx is None else batch_idx
        return index is None or (index + 1) % self._aggregation_frequency == 0

    def current_train_batch(self) -> int:
        if self._current_batch_idx is None:
            raise RuntimeError("current_train_batch() is known only while the trainer trains")
        return self._current_batch_idx

    def current_train_epoch(self) -> int:
        return self.current_train_batch() // self._epoch_length()

    def is_epoch_start(self) -> bool:
        return self.current_train_batch() % self._epoch_length() == 0

    def is_epoch_end(self) -> bool:
        return (self.current_train_batch() + 1) % self._epoch_length() == 0

    def _epoch_length(self) -> int:
        if self._epoch_len is None:
            raise RuntimeError("epochs are known only while the trainer trains")
        return self._epoch_len

    # What the trial trains.
    def wrap_model(self, model: nn.Module) -> nn.Module:
        """The model on this process's device; with several processes (det's launcher), in
        DistributedDataParallel, which starts every process from the chief's weights."""
        if not self._managed_training:
            self._models.append(model)
            return model
        model = model.to(self.device)
        if self._auto_amp:
            model.forward = torch.autocast(self.device.type)(model.forward)  # type: ignore[method-assign]
        if self.distributed.size > 1 and os.environ.get("USE_TORCH_DISTRIBUTED"):
            device_ids = [self.device.index] if self.device.type == "cuda" else None
            model = nn.parallel.DistributedDataParallel(model, device_ids=device_ids)
        self._models.append(model)
        return model

    def wrap_optimizer(self, optimizer: torch.optim.Optimizer, backward_passes_per_step: int = 1,
                       fp16_compression: Optional[bool] = None,
                       average_aggregated_gradients: Optional[bool] = None) -> torch.optim.Optimizer:
        """The optimizer as it is (DDP averages gradients across processes); recorded so that
        checkpoints hold its state and step_optimizer() averages aggregated gradients."""
        if backward_passes_per_step != 1:
            raise ValueError("backward_passes_per_step is Horovod's, which det does not run; "
                             "use optimizations.aggregation_frequency or det.pytorch.init(aggregation_frequency=...)")
        if fp16_compression:
            raise ValueError("fp16_compression is Horovod's gradient compression, which det does not run")
        if average_aggregated_gradients is None:
            average_aggregated_gradients = self._exp_conf.get("optimizations", {}).get("average_aggregated_gradients", True)
        self._average_aggregated[id(optimizer)] = bool(average_aggregated_gradients)
        self._optimizers.append(optimizer)
        return optimizer

    def wrap_lr_scheduler(self, lr_scheduler: Any, step_mode: LRScheduler.StepMode, frequency: int = 1) -> Any:
        """The scheduler as it is; the trainer steps it as step_mode says, and checkpoints it."""
        self._lr_schedulers.append(LRScheduler(lr_scheduler, step_mode, frequency))
        return lr_scheduler

    def wrap_scaler(self, scaler: Any) -> Any:
        """A GradScaler the trial drives itself (scale, unscale_, step via step_optimizer(scaler=),
        update); it is checkpointed. Once, before wrap_model()."""
        if self._scaler is not None:
            raise RuntimeError("a trial wraps one GradScaler")
        if self._models:
            raise RuntimeError("call context.wrap_scaler() before context.wrap_model()")
        self._scaler = scaler
        return scaler

    def wrap_reducer(self, reducer: Union[Callable, MetricReducer], name: Optional[str] = None,
                     for_training: bool = True, for_validation: bool = True) -> Any:
        """A metric reduced the trial's way; reset before each training window and validation."""
        return self._reducers.wrap(reducer, name, for_training, for_validation)

    def configure_apex_amp(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("det does not run NVIDIA apex (deprecated in Determined too); "
                                  "use context.experimental.use_amp() or wrap_scaler() with torch.autocast")

    def set_profiler(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("det does not run the PyTorch profiler for a trial; profile with torch.profiler "
                                  "in your code and write its traces under core_context.train.get_tensorboard_path()")

    def to_device(self, data: Any) -> Any:
        from determined.pytorch._data import to_device

        return to_device(data, self.device)

    # Steps, called from train_batch.
    def _ddp_models(self) -> List[nn.parallel.DistributedDataParallel]:
        return [m for m in self._models if isinstance(m, nn.parallel.DistributedDataParallel)]

    def backward(self, loss: torch.Tensor, gradient: Optional[torch.Tensor] = None, retain_graph: bool = False,
                 create_graph: bool = False) -> None:
        """loss.backward(), scaled under use_amp(); on a batch that does not step (aggregation),
        DDP does not communicate."""
        if self._auto_amp and self._scaler is not None:
            loss = self._scaler.scale(loss)
        with contextlib.ExitStack() as no_sync:
            if not self._is_sync_batch():
                for model in self._ddp_models():
                    no_sync.enter_context(model.no_sync())
            loss.backward(gradient=gradient, retain_graph=retain_graph, create_graph=create_graph)

    def step_optimizer(self, optimizer: torch.optim.Optimizer, clip_grads: Optional[Callable[[Iterator], None]] = None,
                       auto_zero_grads: bool = True, scaler: Optional[Any] = None) -> None:
        """Steps on every aggregation_frequency-th batch only, on the summed gradients divided by
        that frequency; clip_grads gets the parameters first (unscaled under use_amp())."""
        if self._aggregation_frequency > 1 and not auto_zero_grads:
            raise ValueError("gradient aggregation needs auto_zero_grads=True: the trainer sums gradients across "
                             "batches and zeroes them after each step")
        if id(optimizer) not in self._average_aggregated:
            raise ValueError("step_optimizer() takes an optimizer returned by context.wrap_optimizer()")
        if not self._is_sync_batch():
            return
        parameters = [p for group in optimizer.param_groups for p in group["params"]]
        if self._aggregation_frequency > 1 and self._average_aggregated[id(optimizer)]:
            for p in parameters:
                if p.grad is not None:
                    p.grad.div_(self._aggregation_frequency)
        scaler = scaler or (self._scaler if self._auto_amp else None)
        if clip_grads is not None:
            if scaler is not None and self._auto_amp:
                scaler.unscale_(optimizer)
            clip_grads(parameters)
        if scaler is not None:
            scaler.step(optimizer)
        else:
            optimizer.step()
        if auto_zero_grads:
            optimizer.zero_grad()

    # Stopping and logging.
    def set_stop_requested(self, stop_requested: bool) -> None:
        """True: the trainer checkpoints and ends the trial after this batch, as completed."""
        if not isinstance(stop_requested, bool):
            raise TypeError("set_stop_requested() takes a bool")
        self._stop_requested = stop_requested

    def get_stop_requested(self) -> bool:
        return self._stop_requested

    def get_tensorboard_path(self) -> Any:
        return self._core.train.get_tensorboard_path()

    def get_tensorboard_writer(self) -> Any:
        """A SummaryWriter into the trial's TensorBoard directory (`det tensorboard` shows it)."""
        if self._tensorboard_writer is None:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError as e:
                raise RuntimeError(f"get_tensorboard_writer() needs the tensorboard package: {e}") from None
            self._tensorboard_writer = SummaryWriter(str(self.get_tensorboard_path()))
        return self._tensorboard_writer


class CheckpointLoadContext(PyTorchTrialContext):
    """The context load_trial_from_checkpoint_path() builds a trial with: nothing is moved to a
    device or wrapped in DDP, so that the caller decides where the model runs."""

    def __init__(self, core_context: core.Context, hparams: Optional[Dict[str, Any]],
                 exp_conf: Optional[Dict[str, Any]]) -> None:
        super().__init__(core_context, trial_seed=0, hparams=hparams, exp_conf=exp_conf, managed_training=False)
