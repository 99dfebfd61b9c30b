"""Sorting checkpoints as Determined's SDK does: by a validation metric, best first."""

import enum
from typing import Any, List, Optional, Union

from determined.experimental._checkpoint import Checkpoint


class OrderBy(enum.Enum):
    ASCENDING = ASC = "ORDER_BY_ASC"
    DESCENDING = DESC = "ORDER_BY_DESC"


class CheckpointSortBy(enum.Enum):
    UUID = "SORT_BY_UUID"
    TRIAL_ID = "SORT_BY_TRIAL_ID"
    BATCH_NUMBER = "SORT_BY_BATCH_NUMBER"
    END_TIME = "SORT_BY_END_TIME"
    STATE = "SORT_BY_STATE"
    SEARCHER_METRIC = "SORT_BY_SEARCHER_METRIC"


def sorted_checkpoints(checkpoints: List[Checkpoint], sort_by: Optional[Union[str, CheckpointSortBy]],
                       order_by: Optional[OrderBy], searcher_metric: str, smaller_is_better: bool,
                       max_results: Optional[int]) -> List[Checkpoint]:
    """`checkpoints` sorted as Determined sorts them; by a metric, those without it are left out."""
    if (sort_by is None) != (order_by is None):
        raise AssertionError("sort_by and order_by must be either both set, or neither.")
    if sort_by is None:
        sort_by, order_by = CheckpointSortBy.SEARCHER_METRIC, OrderBy.ASC if smaller_is_better else OrderBy.DESC
    descending = order_by == OrderBy.DESC
    if sort_by == CheckpointSortBy.SEARCHER_METRIC or isinstance(sort_by, str):
        metric = searcher_metric if sort_by == CheckpointSortBy.SEARCHER_METRIC else sort_by
        scored = [c for c in checkpoints if metric in _validation(c)]
        chosen = sorted(scored, key=lambda c: _validation(c)[metric], reverse=descending)
    else:
        keys = {CheckpointSortBy.UUID: lambda c: c.uuid,
                CheckpointSortBy.TRIAL_ID: lambda c: c.training.trial_id if c.training else 0,
                CheckpointSortBy.BATCH_NUMBER: lambda c: c.steps_completed or 0,
                CheckpointSortBy.END_TIME: lambda c: c.report_time or "",
                CheckpointSortBy.STATE: lambda c: c.state.value if c.state else ""}
        chosen = sorted(checkpoints, key=keys[CheckpointSortBy(sort_by)], reverse=descending)
    return chosen[:max_results] if max_results else chosen


def _validation(c: Checkpoint) -> Any:
    return c.training.validation_metrics.get("avgMetrics", {}) if c.training else {}
