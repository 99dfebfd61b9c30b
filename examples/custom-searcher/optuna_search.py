"""Drives a det experiment with Optuna's ask/tell interface (Debian's python3-optuna).

    DET_MASTER=http://127.0.0.1:8080 DET_USER_TOKEN=... \
        python3 optuna_search.py experiment.toml --trials 12 --searcher-dir searcher_dir

Each trial trains `half` batches and validates; Optuna's median pruner then closes it or lets it
train to `full` batches, and the result is told to Optuna. Up to `concurrent` trials run at once.
Started again with the same --searcher-dir, it continues the same experiment.
"""

import argparse
import logging
import pathlib
import pickle
import uuid
from typing import Dict, List

import optuna

from determined import searcher


class OptunaSearchMethod(searcher.SearchMethod):
    def __init__(self, trials: int, concurrent: int, half: int, full: int, seed: int = 0) -> None:
        self.trials, self.concurrent, self.half, self.full = trials, concurrent, half, full
        self.study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed),
                                         pruner=optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=0))
        self.asked: Dict[str, int] = {}  # request id -> Optuna trial number
        self.told: Dict[str, str] = {}   # request id -> how it ended in Optuna
        self.shut_down = False

    # -- helpers ---------------------------------------------------------------------------------
    def _create(self) -> searcher.Create:
        trial = self.study.ask()
        hparams = {"x": trial.suggest_float("x", -5.0, 5.0), "y": trial.suggest_float("y", -5.0, 5.0)}
        request_id = uuid.uuid4()
        self.asked[str(request_id)] = trial.number
        return searcher.Create(request_id=request_id, hparams=hparams)

    def _tell(self, request_id: uuid.UUID, state: optuna.trial.TrialState, value: float = None) -> None:
        key = str(request_id)
        if key in self.told or key not in self.asked:
            return
        self.told[key] = state.name
        self.study.tell(self.asked[key], value if state == optuna.trial.TrialState.COMPLETE else None, state=state)

    def _next(self) -> List[searcher.Operation]:
        """A new trial while fewer than `trials` were created; Shutdown once all have ended."""
        if len(self.asked) < self.trials:
            return [self._create()]
        if len(self.told) == self.trials and not self.shut_down:
            self.shut_down = True
            return [searcher.Shutdown()]
        return []

    # -- SearchMethod ----------------------------------------------------------------------------
    def initial_operations(self, searcher_state: searcher.SearcherState) -> List[searcher.Operation]:
        return [self._create() for _ in range(min(self.concurrent, self.trials))]

    def on_trial_created(self, searcher_state, request_id):
        return [searcher.ValidateAfter(request_id, self.half)]

    def on_validation_completed(self, searcher_state, request_id, metric, train_length):
        number = self.asked[str(request_id)]
        if train_length < self.full:
            # With one study in memory, Optuna numbers its trials as it identifies them.
            trial = optuna.trial.Trial(self.study, number)
            trial.report(metric, train_length)
            if trial.should_prune():
                self._tell(request_id, optuna.trial.TrialState.PRUNED)
                return [searcher.Close(request_id)]
            return [searcher.ValidateAfter(request_id, self.full)]
        self._tell(request_id, optuna.trial.TrialState.COMPLETE, metric)
        return [searcher.Close(request_id)]

    def on_trial_closed(self, searcher_state, request_id):
        self._tell(request_id, optuna.trial.TrialState.FAIL)  # closed without a result: counted as failed
        return self._next()

    def on_trial_exited_early(self, searcher_state, request_id, exited_reason):
        self._tell(request_id, optuna.trial.TrialState.FAIL)
        return []  # its on_trial_closed follows

    def progress(self, searcher_state: searcher.SearcherState) -> float:
        return len(self.told) / self.trials

    def save_method_state(self, path: pathlib.Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        with open(path / "optuna.pkl.tmp", "wb") as f:
            pickle.dump({"study": self.study, "asked": self.asked, "told": self.told, "shut_down": self.shut_down}, f)
        (path / "optuna.pkl.tmp").replace(path / "optuna.pkl")

    def load_method_state(self, path: pathlib.Path) -> None:
        saved_file = path / "optuna.pkl"
        if saved_file.exists():
            with open(saved_file, "rb") as f:
                saved = pickle.load(f)
            self.study, self.asked, self.told = saved["study"], saved["asked"], saved["told"]
            self.shut_down = saved.get("shut_down", False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", help="the experiment config (searcher.name = \"custom\")")
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--concurrent", type=int, default=3)
    parser.add_argument("--half", type=int, default=25, help="batches before the pruning check")
    parser.add_argument("--full", type=int, default=50, help="batches of a trial that is not pruned")
    parser.add_argument("--searcher-dir", default="searcher_dir")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    method = OptunaSearchMethod(args.trials, args.concurrent, args.half, args.full)
    runner = searcher.LocalSearchRunner(method, searcher_dir=args.searcher_dir)
    experiment_id = runner.run(args.config)
    study = method.study
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    print(f"experiment {experiment_id}: {len(study.trials)} trials, {len(complete)} complete, "
          f"best validation_loss {study.best_value:.4f} at {study.best_params}" if complete else
          f"experiment {experiment_id}: no trial completed")


if __name__ == "__main__":
    main()
