"""Determined's Python API (the Core API, its launchers and ClusterInfo) for det.

Scripts written for Determined 0.38's Core API run unchanged on det: this package keeps
Determined's names and signatures and talks to det's master through det_core (det's own
standard-library client, on the PYTHONPATH of every Core API process det starts).
"""

from determined._info import ClusterInfo, TrialInfo, get_cluster_info


class InvalidHP(Exception):
    """Raised in a `with core.init()` block: the trial's hyperparameters cannot train, so the
    searcher replaces the trial instead of counting it as failed."""

    def __init__(self, msg: str = "...") -> None:
        if not isinstance(msg, str):
            raise TypeError(f"InvalidHP's message must be a string, not {type(msg).__name__}")
        super().__init__(msg)


class InvalidExperimentException(Exception):
    """The experiment's code or config cannot run: the message says what to change."""


# Determined's version whose API this package follows, marked as det's implementation of it.
__version__ = "0.38.0+det"

# Determined's standard format for the logging module (its log viewer filters by the level).
LOG_FORMAT = "%(levelname)s: [%(process)s] %(name)s: %(message)s"

from determined import core  # noqa: E402  (core imports InvalidHP from here)

__all__ = ["ClusterInfo", "InvalidExperimentException", "InvalidHP", "LOG_FORMAT", "TrialInfo", "core", "get_cluster_info"]
