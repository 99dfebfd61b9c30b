"""python3 -m determined.exec.harness MODULE:TRIAL_CLASS

The legacy entrypoint (`entrypoint: model_def:MyTrial`): imports the trial class from the
experiment's directory and trains it through the Trainer with what the experiment config says,
as Determined's harness does: searcher.max_length (or time_metric and max_time) is the length,
min_validation_period and min_checkpoint_period the periods, scheduling_unit the reporting
period, and optimizations.aggregation_frequency the gradient aggregation."""

import importlib
import logging
import os
import re
import sys
import warnings
from typing import Any, Dict

import determined as det

ENTRYPOINT = re.compile(r"^[a-zA-Z0-9_.]+:[a-zA-Z0-9_]+$")
USAGE = "usage: python3 -m determined.exec.harness MODULE:TRIAL_CLASS"

logger = logging.getLogger("determined.exec.harness")


def trial_class_from_entrypoint(entrypoint: str) -> type:
    """The class `entrypoint` names, imported from the current directory."""
    if not ENTRYPOINT.match(entrypoint):
        raise ValueError(f"{entrypoint!r} is not a legacy entrypoint MODULE:TRIAL_CLASS (such as model_def:MyTrial)")
    module_name, _, class_name = entrypoint.partition(":")
    sys.path.insert(0, os.getcwd())
    module = importlib.import_module(module_name)
    if not hasattr(module, class_name):
        raise ImportError(f"module {module_name} ({getattr(module, '__file__', '?')}) has no {class_name}")
    return getattr(module, class_name)


def _run_pytorch_trial(trial_class: type, info: det.ClusterInfo) -> None:
    from determined import pytorch

    warnings.warn("the model_def:TrialClass entrypoint is deprecated in Determined 0.38; call "
                  "pytorch.Trainer from a script instead", FutureWarning, stacklevel=2)
    config: Dict[str, Any] = info.trial._config
    hparams = info.trial.hparams
    global_batch_size = int(hparams.get("global_batch_size", 1))
    optimizations = config.get("optimizations", {})
    with pytorch.init(hparams=hparams, exp_conf=config,
                      aggregation_frequency=int(optimizations.get("aggregation_frequency", 1))) as context:
        trial = trial_class(context)
        length_of = pytorch.TrainUnit._from_length
        reporting = pytorch.Batch(int(config.get("scheduling_unit", 100)))
        pytorch.Trainer(trial, context).fit(
            checkpoint_period=length_of(config.get("min_checkpoint_period"), global_batch_size, "min_checkpoint_period"),
            validation_period=length_of(config.get("min_validation_period"), global_batch_size, "min_validation_period"),
            reporting_period=reporting,
            checkpoint_policy=config.get("checkpoint_policy", "best"),
            latest_checkpoint=info.latest_checkpoint,
            step_zero_validation=bool(config.get("perform_initial_validation", False)),
        )


def main(argv: list) -> int:
    if len(argv) != 1:
        print(USAGE, file=sys.stderr)
        return 2
    info = det.get_cluster_info()
    if info is None:
        print("determined.exec.harness runs a trial on det; locally, call pytorch.Trainer from a script", file=sys.stderr)
        return 2
    trial_class = trial_class_from_entrypoint(argv[0])
    from determined import pytorch

    if not (isinstance(trial_class, type) and issubclass(trial_class, pytorch.PyTorchTrial)):
        print(f"{argv[0]} is not a PyTorchTrial: det's legacy entrypoint runs PyTorchTrial classes only "
              "(TFKerasTrial and DeepSpeedTrial are not supported)", file=sys.stderr)
        return 1
    _run_pytorch_trial(trial_class, info)
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    sys.exit(main(sys.argv[1:]))
