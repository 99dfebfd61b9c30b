"""The loop a Trainer runs for a PyTorchTrial: train batch by batch, stopping at boundaries to
report training metrics, validate, checkpoint and ask whether det preempts the trial."""

import inspect
import logging
import math
import pathlib
from typing import Any, Dict, List, Optional, Set

import torch
import torch.utils.data

import determined as det
from determined.pytorch import _checkpoint
from determined.pytorch._context import PyTorchTrialContext
from determined.pytorch._data import DataLoader, to_device
from determined.pytorch._reducer import Reducer, _reduce
from determined.pytorch._trainer_utils import Epoch, TrainUnit, _Boundary, _length_reached, _progress, _reached
from determined.pytorch._trial import PyTorchTrial, _is_overridden

logger = logging.getLogger("determined.pytorch")


def _metrics_of(output: Any) -> Dict[str, Any]:
    if isinstance(output, torch.Tensor):
        return {"loss": output}
    if not isinstance(output, dict):
        raise TypeError(f"train_batch must return a dict of metrics or a loss tensor, not {type(output).__name__}")
    return output


def _scalar(value: Any) -> Any:
    """A metric value kept for the window: a tensor stays on its device (read once, at the
    report, so that training never waits for the device to read a loss)."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"a training metric must be a scalar, not a tensor of shape {tuple(value.shape)}")
        return value.detach().reshape(())
    return value


def _mean(values: List[Any]) -> float:
    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    if len(tensors) == len(values):
        return float(torch.stack([t.double() for t in tensors]).mean().item())
    return float(sum(float(v) for v in values) / len(values))


def _repeated(loader: torch.utils.data.DataLoader) -> Any:
    """A plain torch loader's batches, epoch after epoch."""
    while True:
        yield from loader


class TrialController:
    def __init__(self, *, trial: PyTorchTrial, context: PyTorchTrialContext, max_length: TrainUnit,
                 validation_period: TrainUnit, checkpoint_period: TrainUnit, reporting_period: TrainUnit,
                 checkpoint_policy: str, latest_checkpoint: Optional[str], step_zero_validation: bool,
                 test_mode: bool) -> None:
        self.trial = trial
        self.context = context
        self.core = context._core
        self.dist = context.distributed
        self.is_chief = self.dist.rank == 0
        self.max_length = max_length
        self.validation_period = validation_period
        self.checkpoint_period = checkpoint_period
        self.reporting_period = reporting_period
        self.checkpoint_policy = checkpoint_policy
        self.latest_checkpoint = latest_checkpoint
        self.step_zero_validation = step_zero_validation
        self.test_mode = test_mode
        self.callbacks = trial.build_callbacks()
        self.batches_trained = 0
        self.epochs_trained = 0
        self.last_validation: Optional[int] = None
        self.last_checkpoint: Optional[int] = None
        self.best_validation: Optional[float] = None
        self.window: Dict[str, List[Any]] = {}
        searcher = context.get_experiment_config().get("searcher", {})
        self.searcher_metric: Optional[str] = searcher.get("metric")
        self.smaller_is_better = bool(searcher.get("smaller_is_better", True))
        info = self.core.info
        self.trial_id = info.trial.trial_id if info is not None else 0
        # Checked on every process before training: the chief alone failing at its first validation
        # would leave the others waiting on it in a collective.
        if checkpoint_policy == "best" and self.searcher_metric is None:
            raise det.InvalidExperimentException(
                "checkpoint_policy \"best\" needs the searcher's metric, and the experiment config names none")
        if _is_overridden(trial, "evaluate_batch") == _is_overridden(trial, "evaluate_full_dataset"):
            raise det.InvalidExperimentException(
                f"{type(trial).__name__} must define exactly one of evaluate_batch and evaluate_full_dataset")

    # Data.
    def _loader(self, loader: Any, repeat: bool, skip: int, sharded: bool) -> torch.utils.data.DataLoader:
        if isinstance(loader, DataLoader):
            return loader.get_data_loader(repeat=repeat, skip=skip, num_replicas=self.dist.size if sharded else 1,
                                          rank=self.dist.rank if sharded else 0, seed=self.context.get_trial_seed())
        if isinstance(loader, torch.utils.data.DataLoader) and not self.context._reproducibility_checks:
            return loader
        raise RuntimeError(
            "the trial's data loaders must be det.pytorch.DataLoader, which resumes where a run stopped; to use a "
            f"{type(loader).__name__}, call context.experimental.disable_dataset_reproducibility_checks()")

    def _to_device(self, batch: Any) -> Any:
        return to_device(batch, self.context.device) if self.context._auto_to_device else batch

    # Checkpoints.
    def _restore(self) -> None:
        """Continues from latest_checkpoint: the trial's own (counters, optimizer and random
        state too) or another trial's (a warm start: the weights only)."""
        if self.latest_checkpoint is None:
            return
        with self.core.checkpoint.restore_path(self.latest_checkpoint) as path:
            path = pathlib.Path(path)
            state = _checkpoint.trial_state(path)
            own = state is not None and state.get("trial_id") == self.trial_id
            _checkpoint.load(path, self.context, self.callbacks, restore_training=own)
        if not own:
            logger.info(f"warm start from checkpoint {self.latest_checkpoint}: its weights only")
            return
        self.batches_trained = int(state["batches_trained"])
        self.epochs_trained = int(state["epochs_trained"])
        self.last_validation = state.get("last_val")
        self.last_checkpoint = self.batches_trained
        self.best_validation = state.get("best_val")
        logger.info(f"resuming from checkpoint {self.latest_checkpoint} at batch {self.batches_trained}")

    def _trial_state(self) -> Dict[str, Any]:
        return {"trial_id": self.trial_id, "last_ckpt": self.last_checkpoint, "step_id": self.batches_trained,
                "last_val": self.last_validation, "batches_trained": self.batches_trained,
                "epochs_trained": self.epochs_trained, "best_val": self.best_validation}

    def _checkpoint(self) -> None:
        self.last_checkpoint = self.batches_trained
        if not self.is_chief:
            return
        metadata = {"determined_version": det.__version__, "steps_completed": self.batches_trained,
                    "framework": f"torch-{torch.__version__}", "format": "pickle"}
        with self.core.checkpoint.store_path(metadata) as (path, storage_id):
            _checkpoint.save(pathlib.Path(path), self.context, self.trial, self.callbacks, self._trial_state())
            for callback in self.callbacks.values():
                callback.on_checkpoint_write_end(str(path))
        for callback in self.callbacks.values():
            callback.on_checkpoint_upload_end(storage_id)

    # Metrics.
    def _report_training(self) -> None:
        """The window's training metrics, averaged over its batches and the processes, with the
        reducers' results; reducers start a new window."""
        means = {name: _mean(values) for name, values in self.window.items()}
        count = len(next(iter(self.window.values()), []))
        self.window = {}
        reduced = self.context._reducers.reduce(True, self.dist.gather)
        self.context._reducers.reset(True)
        gathered = self.dist.gather(means)
        if not self.is_chief or count == 0:
            return
        metrics: Dict[str, Any] = {name: sum(m[name] for m in gathered) / len(gathered) for name in means}
        metrics.update(reduced)
        for callback in self.callbacks.values():
            callback.on_training_workload_end(metrics, None)
        metrics.update(batches=self.batches_trained, epochs=self.epochs_trained)
        self.core.train.report_training_metrics(steps_completed=self.batches_trained, metrics=metrics)

    def _report_progress(self) -> None:
        if not self.is_chief:
            return
        epochs = self.batches_trained / self.epoch_len
        progress = _progress(self.max_length, self.batches_trained, epochs)
        if progress is not None:
            self.core.train.report_progress(progress)

    # Validation.
    def _evaluate_batches(self) -> Dict[str, Any]:
        loader = self._loader(self.validation_loader, repeat=False, skip=0, sharded=True)
        takes_index = "batch_idx" in inspect.signature(self.trial.evaluate_batch).parameters
        values: Dict[str, List[Any]] = {}
        batches = 0
        for batch_idx, batch in enumerate(loader):
            batch = self._to_device(batch)
            out = (self.trial.evaluate_batch(batch=batch, batch_idx=batch_idx) if takes_index
                   else self.trial.evaluate_batch(batch=batch))
            if not isinstance(out, dict):
                raise TypeError(f"evaluate_batch must return a dict of metrics, not {type(out).__name__}")
            for name, value in out.items():
                values.setdefault(name, []).append(float(value.item()) if isinstance(value, torch.Tensor) else value)
            batches += 1
            if self.test_mode:
                break
        if batches == 0:
            raise RuntimeError(f"process {self.dist.rank} has no validation batches: the validation data has fewer "
                               f"batches than the {self.dist.size} processes")
        reducers = self.trial.evaluation_reducer()

        def reducer_of(name: str) -> Reducer:
            if isinstance(reducers, dict):
                if set(reducers) != set(values):
                    raise ValueError(f"evaluation_reducer() names {sorted(reducers)}, but evaluate_batch returns "
                                     f"{sorted(values)}")
                return reducers[name]
            return reducers

        per_process = {name: _reduce(reducer_of(name), vs) for name, vs in values.items()}
        gathered = self.dist.gather((per_process, batches))
        if not self.is_chief:
            return {}
        counts = [n for _, n in gathered]
        return {name: _reduce(reducer_of(name), [m[name] for m, _ in gathered],
                              counts if reducer_of(name) == Reducer.AVG else None)
                for name in per_process}

    def _validate(self) -> None:
        self.last_validation = self.batches_trained
        for callback in self.callbacks.values():
            callback.on_validation_start()
        for model in self.context._models:
            model.eval()
        self.context._reducers.reset(False)
        with torch.no_grad():
            if _is_overridden(self.trial, "evaluate_full_dataset"):
                metrics = {}
                if self.is_chief:
                    loader = self._loader(self.validation_loader, repeat=False, skip=0, sharded=False)
                    metrics = self.trial.evaluate_full_dataset(data_loader=loader)
                    if not isinstance(metrics, dict):
                        raise TypeError("evaluate_full_dataset must return a dict of metrics")
            else:
                metrics = self._evaluate_batches()
            metrics.update(self.context._reducers.reduce(False, self.dist.gather))
        for model in self.context._models:
            model.train()
        for callback in self.callbacks.values():
            callback.on_validation_end(metrics)
        improved = self._is_best(metrics) if self.is_chief else False
        if self.is_chief:
            metrics.update(batches=self.batches_trained, epochs=self.epochs_trained)
            self.core.train.report_validation_metrics(steps_completed=self.batches_trained, metrics=metrics)
        policy = self.checkpoint_policy
        if policy == "all" or (policy == "best" and self.dist.broadcast(improved)):
            if self.last_checkpoint != self.batches_trained:
                self._checkpoint()

    def _is_best(self, metrics: Dict[str, Any]) -> bool:
        if self.checkpoint_policy != "best":
            return False
        value = _checkpoint._searcher_metric_value(metrics, self.searcher_metric)
        best = self.best_validation
        if best is None or (value < best if self.smaller_is_better else value > best):
            self.best_validation = value
            return True
        return False

    # The loop.
    def _should_stop(self) -> bool:
        """det preempts the trial (a pause, the searcher, the scheduler) or the trial asks to
        stop; every process asks in step."""
        preempt = self.core.preempt.should_preempt() if self.core.preempt is not None else False
        requested = any(self.dist.allgather(self.context._stop_requested))
        return preempt or requested

    def _train_batch(self, iterator: Any) -> bool:
        """Trains one batch; returns whether an epoch ended with it."""
        context = self.context
        batch_idx = self.batches_trained
        epoch_idx = batch_idx // self.epoch_len
        context._current_batch_idx = batch_idx
        if batch_idx % self.epoch_len == 0:
            for callback in self.callbacks.values():
                callback.on_training_epoch_start(epoch_idx)
        batch = self._to_device(next(iterator))
        metrics = _metrics_of(self.trial.train_batch(batch=batch, epoch_idx=epoch_idx, batch_idx=batch_idx))
        if self.window and set(metrics) != set(self.window):
            raise ValueError(f"train_batch returned metrics {sorted(metrics)} after {sorted(self.window)}: "
                             "every batch must return the same metric names")
        for name, value in metrics.items():
            self.window.setdefault(name, []).append(_scalar(value))
        if context._is_sync_batch():
            if context._auto_amp and context._scaler is not None:
                context._scaler.update()
            agg = context._aggregation_frequency
            for scheduler in context._lr_schedulers:
                for _ in range(scheduler._steps_after_batch(batch_idx, agg, lambda b: b // self.epoch_len)):
                    scheduler.step()
        self.batches_trained += 1
        epoch_ended = self.batches_trained % self.epoch_len == 0
        if epoch_ended:
            for callback in self.callbacks.values():
                callback.on_training_epoch_end(epoch_idx)
            self.epochs_trained += 1
        return epoch_ended

    def run(self) -> None:
        latest = self.latest_checkpoint
        for callback in self.callbacks.values():
            callback.on_trial_startup(self.context._steps_completed, latest)
        self.training_loader = self.trial.build_training_data_loader()
        self.validation_loader = self.trial.build_validation_data_loader()
        self._restore()
        self.context._steps_completed = self.batches_trained
        training = self._loader(self.training_loader, repeat=True, skip=self.batches_trained, sharded=True)
        self.epoch_len = self.dist.broadcast(len(training) if self.is_chief else None)
        self.context._epoch_len = self.epoch_len
        iterator = iter(training) if isinstance(self.training_loader, DataLoader) else _repeated(training)
        for callback in self.callbacks.values():
            callback.on_training_start()
        try:
            self._loop(iterator)
        except det.InvalidHP:
            if self.last_checkpoint != self.batches_trained:
                self._checkpoint()
            raise
        finally:
            self.context._current_batch_idx = None
            for callback in self.callbacks.values():
                callback.on_trial_shutdown()

    def _loop(self, iterator: Any) -> None:
        if self.step_zero_validation and self.batches_trained == 0 and self.last_validation is None:
            self._validate()
        while not _length_reached(self.max_length, self.batches_trained, self.epochs_trained):
            epoch_ended = self._train_batch(iterator)
            due: Set[_Boundary] = set()
            if _length_reached(self.max_length, self.batches_trained, self.epochs_trained):
                due.add(_Boundary.TRAIN)
            for boundary, unit in ((_Boundary.VALIDATE, self.validation_period),
                                   (_Boundary.CHECKPOINT, self.checkpoint_period),
                                   (_Boundary.REPORT, self.reporting_period)):
                if _reached(unit, self.batches_trained, self.epochs_trained, epoch_ended):
                    due.add(boundary)
            if not due:
                continue
            self._report_training()
            self._report_progress()
            if _Boundary.VALIDATE in due and self.last_validation != self.batches_trained:
                self._validate()
            if _Boundary.CHECKPOINT in due and self.last_checkpoint != self.batches_trained:
                self._checkpoint()
            if self._should_stop():
                if self.last_checkpoint != self.batches_trained:
                    self._checkpoint()
                logger.info(f"stopped at batch {self.batches_trained}, checkpointed")
                return
        if self.last_validation != self.batches_trained:
            self._validate()
        if self.last_checkpoint != self.batches_trained:
            self._checkpoint()
