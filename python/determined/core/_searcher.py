import enum
from typing import Any, Iterator, Optional

from determined.core._distributed import DistributedContext


class Unit(enum.Enum):
    EPOCHS = "EPOCHS"
    RECORDS = "RECORDS"
    BATCHES = "BATCHES"


class SearcherMode(enum.Enum):
    """WorkersAskChief: every process iterates operations() in step; the chief asks the master
    and tells the others. ChiefOnly: only the chief may call operations()."""

    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHIEF_ONLY"


class SearcherOperation:
    """Train until the trial's total length reaches `length` (in the searcher's unit), report
    validation metrics there, then report_completed()."""

    def __init__(self, length: int, is_chief: bool, det_op: Any = None) -> None:
        self._length = length
        self._is_chief = is_chief
        self._det_op = det_op  # det_core's operation, on the chief
        self._completed = False

    @property
    def length(self) -> int:
        return self._length

    def report_progress(self, length: float) -> None:
        """Progress in the operation's unit, for the web UI."""
        if not self._is_chief:
            raise RuntimeError("you must only call op.report_progress() from the chief worker")
        if self._completed and length != self._length:
            raise RuntimeError("you must not call op.report_progress() after op.report_completed()")
        self._det_op.report_progress(length)

    def report_completed(self, searcher_metric: Any) -> None:
        """The operation is done; det checks that validation metrics were reported at `length`."""
        if not self._is_chief:
            raise RuntimeError("you must only call op.report_completed() from the chief worker")
        if self._completed:
            raise RuntimeError("you may only call op.report_completed() once")
        self._det_op.report_completed(searcher_metric)
        self._completed = True


class SearcherContext:
    """The operations det's searcher gives this trial, one after another (an adaptive search
    lengthens a promising trial), until it has no more for it."""

    def __init__(self, session: Any, distributed: DistributedContext) -> None:
        self._session = session
        self._dist = distributed

    def operations(self, searcher_mode: SearcherMode = SearcherMode.WorkersAskChief,
                   auto_ack: bool = True) -> Iterator[SearcherOperation]:
        """Yields each operation; each must be completed before the next is asked for.
        (`auto_ack` is accepted as Determined does, which also ignores it.)"""
        searcher_mode = SearcherMode(searcher_mode)
        tell_workers = searcher_mode == SearcherMode.WorkersAskChief
        if self._dist.rank == 0:
            for det_op in self._session.searcher_operations():
                op = SearcherOperation(det_op.length, True, det_op)
                if tell_workers:
                    self._dist.broadcast(op.length)
                yield op
                if not op._completed:
                    raise RuntimeError("you must call op.report_completed() on each operation")
            if tell_workers:
                self._dist.broadcast(None)
            return
        if not tell_workers:
            raise RuntimeError("you cannot call searcher.operations(searcher_mode=ChiefOnly) from a non-chief worker.")
        while True:
            length = self._dist.broadcast(None)
            if length is None:
                return
            yield SearcherOperation(length, False)

    def acknowledge_out_of_ops(self) -> None:
        """Nothing to acknowledge on det (Determined 0.38 ignores it too)."""

    def get_configured_units(self) -> Optional[Unit]:
        """The searcher's unit, as det's current operation states it; None once it has none."""
        det_op = next(iter(self._session.searcher_operations()), None)
        return Unit(det_op.unit.upper()) if det_op is not None else None
