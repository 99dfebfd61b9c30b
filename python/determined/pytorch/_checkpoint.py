"""A trial's checkpoint in Determined's layout: state_dict.pth (models, optimizers, schedulers,
scaler, callbacks and every random state), trial_state.pkl (where training is, which is also
where its data loader resumes), load_data.json and code/ (to build the trial again with
load_trial_from_checkpoint_path)."""

import importlib
import inspect
import json
import logging
import os
import pathlib
import pickle
import random
import shutil
import sys
from typing import Any, Dict, List, Optional, Type

import numpy as np
import torch
import torch.nn as nn

from determined import core
from determined.pytorch._context import CheckpointLoadContext, PyTorchTrialContext

logger = logging.getLogger("determined.pytorch")

STATE_DICT = "state_dict.pth"
# state_dict.pth holds numpy's random state, which torch >= 2.6's default weights_only=True
# refuses; the file is the trial's own (or one its user chose to load).
_TRUSTED_LOAD: Dict[str, Any] = {"map_location": "cpu", "weights_only": False}
TRIAL_STATE = "trial_state.pkl"
LOAD_DATA = "load_data.json"
CODE = "code"


def _unwrapped(model: nn.Module) -> nn.Module:
    return model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model


def _rng_state() -> Dict[str, Any]:
    state = {"cpu_rng_state": torch.get_rng_state(), "np_rng_state": np.random.get_state(),
             "random_rng_state": random.getstate()}
    if torch.cuda.is_available():
        state["gpu_rng_state"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: Dict[str, Any]) -> None:
    torch.set_rng_state(state["cpu_rng_state"])
    np.random.set_state(state["np_rng_state"])
    random.setstate(state["random_rng_state"])
    if "gpu_rng_state" in state and torch.cuda.is_available():
        saved = state["gpu_rng_state"]
        torch.cuda.set_rng_state_all(saved[:torch.cuda.device_count()])


def _class_spec(trial_class: type) -> str:
    """"module:qualname", with a script run as __main__ named by its file."""
    module = trial_class.__module__
    if module == "__main__":
        module = pathlib.Path(inspect.getfile(trial_class)).stem
    return f"{module}:{trial_class.__qualname__}"


def _code_root(trial_class: type) -> pathlib.Path:
    """The directory the trial's top-level module is imported from."""
    path = pathlib.Path(inspect.getfile(trial_class)).resolve().parent
    module = trial_class.__module__
    for _ in range(module.count(".")):
        path = path.parent
    return path


def _copy_code(root: pathlib.Path, target: pathlib.Path) -> None:
    """The trial's Python sources (not its data), for load_trial_from_checkpoint_path."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                source = pathlib.Path(folder, name)
                destination = target / source.relative_to(root)
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, destination)


def save(path: pathlib.Path, context: PyTorchTrialContext, trial: Any, callbacks: Dict[str, Any],
         trial_state: Dict[str, Any]) -> None:
    """Writes the checkpoint's files into `path` (on the chief)."""
    state: Dict[str, Any] = {
        "models_state_dict": [_unwrapped(m).state_dict() for m in context._models],
        "optimizers_state_dict": [o.state_dict() for o in context._optimizers],
        "lr_schedulers_state_dict": [s.state_dict() for s in context._lr_schedulers],
        "callbacks": {name: cb.state_dict() for name, cb in callbacks.items()},
        "rng_state": _rng_state(),
    }
    if context._scaler is not None:
        state["scaler_state_dict"] = context._scaler.state_dict()
    for callback in callbacks.values():
        callback.on_checkpoint_save_start(state)
    torch.save(state, path / STATE_DICT)
    with open(path / TRIAL_STATE, "wb") as f:
        pickle.dump(trial_state, f)
    trial_class = type(trial)
    with open(path / LOAD_DATA, "w") as f:
        json.dump({"trial_type": "PyTorchTrial", "experiment_config": context.get_experiment_config(),
                   "hparams": context._hparams, "trial_cls_spec": _class_spec(trial_class), "is_trainer": True}, f)
    _copy_code(_code_root(trial_class), path / CODE)


def _load_model(model: nn.Module, state_dict: Dict[str, Any]) -> None:
    """Loads weights saved with or without DDP's "module." prefix."""
    try:
        model.load_state_dict(state_dict)
        return
    except RuntimeError as first:
        prefix = "module."
        if all(k.startswith(prefix) for k in state_dict):
            renamed = {k[len(prefix):]: v for k, v in state_dict.items()}
        else:
            renamed = {prefix + k: v for k, v in state_dict.items()}
        try:
            model.load_state_dict(renamed)
        except RuntimeError:
            raise first from None


def trial_state(path: pathlib.Path) -> Optional[Dict[str, Any]]:
    """Where training was when the checkpoint at `path` was saved (its trial_state.pkl)."""
    if not (path / TRIAL_STATE).exists():
        return None
    with open(path / TRIAL_STATE, "rb") as f:
        return pickle.load(f)


def load(path: pathlib.Path, context: PyTorchTrialContext, callbacks: Dict[str, Any], restore_training: bool) -> None:
    """Restores the checkpoint at `path` into the context's objects: the weights always; with
    `restore_training` also optimizers, schedulers, scaler, random state and callbacks."""
    state_path = path / STATE_DICT
    if not state_path.exists():
        raise FileNotFoundError(f"{path} is not a PyTorchTrial checkpoint: it has no {STATE_DICT}")
    state = torch.load(state_path, **_TRUSTED_LOAD)
    for callback in callbacks.values():
        callback.on_checkpoint_load_start(state)
    saved_models = state["models_state_dict"]
    if len(saved_models) != len(context._models):
        raise RuntimeError(f"the checkpoint holds {len(saved_models)} models and the trial wrapped "
                           f"{len(context._models)}: load it into a trial that wraps the same models")
    for model, saved in zip(context._models, saved_models):
        _load_model(_unwrapped(model), saved)
    if not restore_training:
        return
    for optimizer, saved in zip(context._optimizers, state["optimizers_state_dict"]):
        optimizer.load_state_dict(saved)
    for scheduler, saved in zip(context._lr_schedulers, state["lr_schedulers_state_dict"]):
        scheduler.load_state_dict(saved)
    if context._scaler is not None and "scaler_state_dict" in state:
        context._scaler.load_state_dict(state["scaler_state_dict"])
    _set_rng_state(state["rng_state"])
    for name, callback in callbacks.items():
        if name in state.get("callbacks", {}):
            callback.load_state_dict(state["callbacks"][name])
        else:
            logger.warning(f"the checkpoint holds no state for callback {name!r}")


def _import_trial_class(spec: str, code: pathlib.Path) -> type:
    module_name, _, qualname = spec.partition(":")
    sys.path.insert(0, str(code))
    try:
        target: Any = importlib.import_module(module_name)
    finally:
        sys.path.remove(str(code))
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def load_trial_from_checkpoint_path(path: str, trial_class: Optional[Type] = None,
                                    trial_kwargs: Optional[Dict[str, Any]] = None,
                                    torch_load_kwargs: Optional[Dict[str, Any]] = None) -> Any:
    """The trial a checkpoint was saved from, built again (from its code/ unless `trial_class`
    is given) with its hyperparameters and the checkpoint's weights, on the CPU and outside any
    training: for inference or analysis."""
    checkpoint = pathlib.Path(path)
    if not (checkpoint / LOAD_DATA).exists():
        raise FileNotFoundError(f"{checkpoint} holds no {LOAD_DATA}: it was not saved by a PyTorchTrial's trainer")
    with open(checkpoint / LOAD_DATA) as f:
        load_data = json.load(f)
    if trial_class is None:
        trial_class = _import_trial_class(load_data["trial_cls_spec"], checkpoint / CODE)
    session = core.Context(checkpoint=None, distributed=core.DummyDistributedContext())  # type: ignore[arg-type]
    context = CheckpointLoadContext(session, load_data.get("hparams"), load_data.get("experiment_config"))
    trial = trial_class(context, **(trial_kwargs or {}))
    state = torch.load(checkpoint / STATE_DICT, **(torch_load_kwargs or _TRUSTED_LOAD))
    for model, saved in zip(context._models, state["models_state_dict"]):
        _load_model(model, saved)
    return trial


def _searcher_metric_value(metrics: Dict[str, Any], name: str) -> float:
    if name not in metrics:
        raise RuntimeError(f"the searcher's metric {name!r} is not among the validation metrics {sorted(metrics)}")
    value = metrics[name]
    try:
        return float(value)
    except (TypeError, ValueError):
        raise RuntimeError(f"the searcher's metric {name!r} must be a scalar, not {value!r}") from None


__all__: List[str] = ["load_trial_from_checkpoint_path"]
