"""Custom searchers (Determined 0.19.6 to 0.37's determined.searcher): a SearchMethod written
in Python decides the search of an experiment whose searcher.name is "custom", run by a
LocalSearchRunner (which creates the experiment) or a RemoteSearchRunner (which drives one
created elsewhere), over det's REST API."""

from determined.searcher._search_method import (
    Close,
    Create,
    ExitedReason,
    Operation,
    Progress,
    SearcherState,
    SearchMethod,
    Shutdown,
    ValidateAfter,
)
from determined.searcher._search_runner import LocalSearchRunner, RemoteSearchRunner, SearchRunner
from determined.searcher._session import DetError, Session

__all__ = [
    "Close", "Create", "DetError", "ExitedReason", "LocalSearchRunner", "Operation", "Progress",
    "RemoteSearchRunner", "SearchMethod", "SearchRunner", "SearcherState", "Session", "Shutdown",
    "ValidateAfter",
]
