"""Determined 0.38's SearcherContext, deprecated there: operations() no longer asks the master but
yields ONE operation made from the experiment config's searcher.max_length (None when there is
none), and warns with a FutureWarning. A script decides how long it trains and exits when done.

det's own searchers that lengthen a trial over several operations (asha's promotions, pbt's
rounds, a custom searcher's client) have no place in that model: for them, and for a process det
could not hand the config to, operations() still follows the master's operations one by one.
"""

import enum
import logging
import warnings
from typing import Any, Dict, Iterator, Optional

import determined as det
from determined.core._distributed import DistributedContext

logger = logging.getLogger("determined.core")

# det's searchers whose trials train to several lengths, each one the master's operation.
_SEARCHERS_THAT_LENGTHEN_TRIALS = ("asha", "pbt", "custom")

_DEPRECATED = ("SearcherContext.operations() was deprecated in Determined 0.38.0 and will be removed in a "
               "future version.  Instead, you should set your training length directly in your training code.")


class Unit(enum.Enum):
    EPOCHS = "EPOCHS"
    RECORDS = "RECORDS"
    BATCHES = "BATCHES"


class SearcherMode(enum.Enum):
    """WorkersAskChief: every process iterates operations() in step; the chief tells the others.
    ChiefOnly: only the chief may call operations()."""

    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHIEF_ONLY"


def _max_length(config: Dict[str, Any]) -> Optional[int]:
    """searcher.max_length as a number: {"batches": 100} and Determined's unitless 100 are 100."""
    length = (config.get("searcher") or {}).get("max_length")
    if isinstance(length, dict):
        return next(iter(length.values()), None)
    return length


def _units(config: Dict[str, Any]) -> Optional[Unit]:
    """The unit searcher.max_length (or a custom searcher's unit) names; None for a unitless one."""
    searcher = config.get("searcher") or {}
    names = {"records": Unit.RECORDS, "epochs": Unit.EPOCHS, "batches": Unit.BATCHES}
    if "unit" in searcher:
        return names.get(searcher["unit"])
    length = searcher.get("max_length")
    if isinstance(length, dict) and len(length) == 1:
        return names.get(next(iter(length)))
    return None


class SearcherOperation:
    """Train until the trial's total length reaches `length` (None: as long as the script
    decides), report validation metrics, then report_completed()."""

    def __init__(self, length: Optional[int], is_chief: bool, session: Any = None, det_op: Any = None) -> None:
        self._length = length
        self._is_chief = is_chief
        self._session = session  # reports the progress of an operation made from the config
        self._det_op = det_op  # the master's operation, when operations() follows the master
        self._completed = False

    @property
    def length(self) -> Optional[int]:
        return self._length

    def report_progress(self, length: float) -> None:
        """Progress in the operation's unit, for the web UI and the search's progress."""
        if not self._is_chief:
            raise RuntimeError("you must only call op.report_progress() from the chief worker")
        if self._completed and length != self._length:
            raise RuntimeError("you must not call op.report_progress() after op.report_completed()")
        if self._det_op is not None:
            self._det_op.report_progress(length)
            return
        if not self._length:
            raise RuntimeError("this operation has no length (the config sets no searcher.max_length) to measure "
                               "progress against; report the share trained with "
                               "core_context.train.report_progress() instead")
        self._session.report_progress(min(1.0, max(0.0, length / self._length)))

    def report_completed(self, searcher_metric: Any) -> None:
        """The operation is done. The searcher reads its metric from the validation metrics."""
        if not self._is_chief:
            raise RuntimeError("you must only call op.report_completed() from the chief worker")
        if self._completed:
            raise RuntimeError("you may only call op.report_completed() once")
        if self._det_op is not None:
            self._det_op.report_completed(searcher_metric)
        self._completed = True


class SearcherContext:
    """The operations of this trial: one made from searcher.max_length, as in Determined 0.38."""

    def __init__(self, session: Any, distributed: DistributedContext) -> None:
        self._session = session
        self._dist = distributed
        info = det.get_cluster_info()
        # {} when det could not pass the config: the master's operations are what is known then.
        self._config: Dict[str, Any] = info.trial._config if info is not None else {}

    def _follows_master(self) -> bool:
        name = (self._config.get("searcher") or {}).get("name")
        return name is None or name in _SEARCHERS_THAT_LENGTHEN_TRIALS

    def operations(self, searcher_mode: SearcherMode = SearcherMode.WorkersAskChief,
                   auto_ack: bool = True) -> Iterator[SearcherOperation]:
        """Yields each operation; each must be completed before the next is asked for.
        (`auto_ack` is accepted as Determined does, which also ignores it.)"""
        warnings.warn(_DEPRECATED, FutureWarning, stacklevel=2)
        yield from self._operations(SearcherMode(searcher_mode))

    def _operations(self, searcher_mode: SearcherMode) -> Iterator[SearcherOperation]:
        tell_workers = searcher_mode == SearcherMode.WorkersAskChief
        if self._dist.rank == 0:
            for op in self._chief_operations():
                if tell_workers:
                    self._dist.broadcast(("op", op.length))
                yield op
                if not op._completed:
                    raise RuntimeError("you must call op.report_completed() on each operation")
            if tell_workers:
                self._dist.broadcast(None)
            return
        if not tell_workers:
            raise RuntimeError("you cannot call searcher.operations(searcher_mode=ChiefOnly) from a non-chief worker.")
        while True:
            told = self._dist.broadcast(None)
            if told is None:
                return
            yield SearcherOperation(told[1], False)

    def _chief_operations(self) -> Iterator[SearcherOperation]:
        if self._follows_master():
            for det_op in self._session.searcher_operations():
                yield SearcherOperation(det_op.length, True, det_op=det_op)
            return
        yield SearcherOperation(_max_length(self._config), True, session=self._session)

    def acknowledge_out_of_ops(self) -> None:
        """Nothing to acknowledge on det (Determined 0.38 ignores it too)."""

    def get_configured_units(self) -> Optional[Unit]:
        """The unit of searcher.max_length; None for a unitless one or none. Following the
        master, the unit of its current operation (None once it has none)."""
        if not self._follows_master():
            return _units(self._config)
        det_op = next(iter(self._session.searcher_operations()), None)
        return Unit(det_op.unit.upper()) if det_op is not None and det_op.unit else None
