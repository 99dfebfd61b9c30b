import contextlib
import json
import logging
import os
import sys
import types
from typing import Any, Dict, Iterator, Literal, Optional, Union

import determined as det
from determined.core._checkpoint import CheckpointContext
from determined.core._distributed import DistributedContext, DummyDistributedContext
from determined.core._preempt import PreemptContext, PreemptMode
from determined.core._searcher import SearcherContext
from determined.core._train import EarlyExitReason, TensorboardMode, TrainContext

logger = logging.getLogger("determined.core")


class Context:
    """The Core API: .checkpoint, .distributed, .preempt, .searcher, .train and .info (None off
    det). Build it with `with core.init() as core_context:`."""

    def __init__(
        self,
        checkpoint: CheckpointContext,
        distributed: Optional[DistributedContext] = None,
        preempt: Optional[PreemptContext] = None,
        train: Optional[TrainContext] = None,
        searcher: Optional[SearcherContext] = None,
        info: Optional[det.ClusterInfo] = None,
        _session: Any = None,
    ) -> None:
        self.checkpoint = checkpoint
        self.distributed = distributed or DummyDistributedContext()
        self.preempt = preempt
        self.train = train
        self.searcher = searcher
        self.info = info
        self._session = _session

    def __enter__(self) -> "Context":
        return self

    def alert(
        self,
        title: Optional[str] = None,
        description: Optional[str] = None,
        level: Optional[Literal["warn", "info", "debug", "error"]] = "info",
    ) -> None:
        """Raises an alert about this trial. Determined sends it to the experiment's custom
        webhooks; det has none, so the master writes it into the trial's logs at its level, in
        the stream "alert" (the trial's page, `det trial logs`, GET /api/v1/trials/{id}/logs)."""
        if self.info is None:
            raise ValueError("Workload alerting only works on determined-managed experiment.")
        if self.info.trial is None:
            raise ValueError("alert() only works for trial type of task.")
        level = level or "info"
        if level not in ("warn", "info", "debug", "error"):
            raise ValueError(f"an alert's level is 'debug', 'info', 'warn' or 'error', not {level!r}")
        self._session.alert(title or "", description or "", level)

    def close(self, exc_type: Optional[type] = None, exc_val: Optional[BaseException] = None,
              exc_tb: Optional[types.TracebackType] = None) -> None:
        self.distributed.close()
        if self._session is not None:
            self._session.close()

    def __exit__(self, exc_type: Optional[type], exc_val: Optional[BaseException],
                 exc_tb: Optional[types.TracebackType]) -> None:
        invalid_hp = isinstance(exc_val, det.InvalidHP)
        if invalid_hp:
            self.train.report_early_exit(EarlyExitReason.INVALID_HP)
        self.close(exc_type, exc_val, exc_tb)
        if invalid_hp:
            logger.info("InvalidHP detected, converting InvalidHP to exit(0)")
            sys.exit(0)


class _OffClusterOperation:
    """Off det, the search is one operation of length 1, as in Determined."""

    length = 1
    unit = "epochs"

    def report_progress(self, length: float) -> None:
        logger.info(f"progress report: {length}/{self.length}")

    def report_completed(self, searcher_metric: Any) -> None:
        logger.info(f"SearcherOperation Complete: searcher_metric={searcher_metric}")


class _OffCluster:
    """What det_core.Context does, for a process not on det: reports are logged and checkpoints
    are directories under a local `checkpoint_dir`."""

    def __init__(self, checkpoint_dir: str) -> None:
        self.checkpoint_dir = checkpoint_dir
        self.latest_checkpoint: Optional[str] = None

    def report_metrics(self, group: str, steps_completed: int, metrics: Dict[str, float]) -> None:
        logger.debug(f"off-cluster: {group} metrics at {steps_completed}: {metrics}")

    def report_progress(self, progress: float) -> None:
        logger.debug(f"off-cluster: progress {progress}")

    def report_early_exit(self, reason: str) -> None:
        logger.info(f"off-cluster: early exit ({reason})")

    def searcher_operations(self) -> Iterator[_OffClusterOperation]:
        yield _OffClusterOperation()

    def should_preempt(self) -> bool:
        return False

    def close(self) -> None:
        pass

    @contextlib.contextmanager
    def checkpoint(self, steps_completed: int, metadata: Optional[Dict[str, Any]] = None,
                   checkpoint_uuid: str = "") -> Iterator[str]:
        path = os.path.join(self.checkpoint_dir, checkpoint_uuid)
        os.makedirs(path)
        yield path
        with open(os.path.join(path, "metadata.json"), "w") as f:
            json.dump(metadata or {}, f, indent=2)
        self.latest_checkpoint = path
        logger.info(f"saved checkpoint {checkpoint_uuid} in {path}")


def _off_cluster_storage(checkpoint_storage: Optional[Union[str, Dict[str, Any]]]) -> str:
    """A directory for checkpoints off det: `checkpoint_storage` when it is a path, else
    Determined's default, the user's data directory."""
    if checkpoint_storage is None:
        data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
        path = os.path.join(data, "determined")
        logger.info(f"no storage_manager provided; storing checkpoints in {path}")
        return path
    if isinstance(checkpoint_storage, str) and "://" not in checkpoint_storage:
        return checkpoint_storage
    raise NotImplementedError(
        "det's Core API stores checkpoints in directories only; checkpoint_storage must be a path, "
        f"not {checkpoint_storage!r}"
    )


def init(
    *,
    distributed: Optional[DistributedContext] = None,
    checkpoint_storage: Optional[Union[str, Dict[str, Any]]] = None,
    preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
    tensorboard_mode: TensorboardMode = TensorboardMode.AUTO,
) -> Context:
    """The Core API for this process: use as `with core.init() as core_context:`.

    `distributed` is needed when the trial runs several processes (a launcher's); with one
    process a size-1 context is used. Off det (no ClusterInfo) reports are logged and
    checkpoints go to `checkpoint_storage`, a directory.
    """
    info = det.get_cluster_info()
    if info is None:
        session: Any = _OffCluster(_off_cluster_storage(checkpoint_storage))
        tensorboard_path = os.path.join(session.checkpoint_dir, "tensorboard")
    else:
        if checkpoint_storage is not None:
            raise NotImplementedError(
                "on det a trial's checkpoints go to its experiment's checkpoint_storage, where the "
                "master records them; set it in the experiment config instead of core.init()"
            )
        if distributed is None and (len(info.container_addrs) > 1 or int(os.environ.get("WORLD_SIZE", "1")) > 1):
            raise ValueError("you must provide a valid DistributedContext for a multi-slot task")
        # Imported here: det puts det_core on every trial's PYTHONPATH, but off det this package
        # works without it.
        import det_core

        session = det_core.Context()
        # det's layout, where `det tensorboard` and the master's own event files are.
        tensorboard_path = os.path.join(session.checkpoint_dir, "tensorboard", "experiment",
                                        str(info.trial.experiment_id), "trial", str(info.trial.trial_id))
    distributed = distributed or DummyDistributedContext()
    return Context(
        checkpoint=CheckpointContext(session, distributed),
        distributed=distributed,
        preempt=PreemptContext(session, distributed, preempt_mode),
        train=TrainContext(session, tensorboard_mode, tensorboard_path),
        searcher=SearcherContext(session, distributed),
        info=info,
        _session=session,
    )
