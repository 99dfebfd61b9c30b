import enum
import logging
from typing import Any

from determined.core._distributed import DistributedContext

logger = logging.getLogger("determined.core")


class PreemptMode(enum.Enum):
    """WorkersAskChief: every process calls should_preempt() in step and gets the chief's answer.
    ChiefOnly: only the chief may call it. WorkersAskMaster: each process asks the master."""

    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHIEF_ONLY"
    WorkersAskMaster = "WORKERS_ASK_MASTER"


class PreemptContext:
    """Whether the trial must checkpoint and exit: det paused, preempted or stopped it (the
    searcher's decision included), or the process got SIGTERM."""

    def __init__(self, session: Any, distributed: DistributedContext,
                 preempt_mode: PreemptMode = PreemptMode.WorkersAskChief) -> None:
        self._session = session
        self._dist = distributed
        self._preempt_mode = PreemptMode(preempt_mode)

    def should_preempt(self, auto_ack: bool = True) -> bool:
        """True once the trial should save its state and exit. det needs no acknowledgement, so
        `auto_ack` changes nothing (see acknowledge_preemption_signal())."""
        if self._dist.rank == 0 or self._preempt_mode == PreemptMode.WorkersAskMaster:
            out = bool(self._session.should_preempt())
            if self._preempt_mode == PreemptMode.WorkersAskChief:
                self._dist.broadcast(out)
        else:
            if self._preempt_mode == PreemptMode.ChiefOnly:
                raise RuntimeError(
                    "PreemptContext was configured with preempt_mode=ChiefOnly but .should_preempt() "
                    f"was called from non-chief worker of rank={self._dist.get_rank()}"
                )
            out = self._dist.broadcast(None)
        logger.debug(f"should_preempt() -> {out}")
        return out

    def acknowledge_preemption_signal(self) -> None:
        """Nothing to send on det: its master remembers that it asked the run to stop, so an exit
        after the signal counts as preempted (to be continued), not as finished."""
