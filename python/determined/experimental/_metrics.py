"""Determined's TrialMetrics: one report of a metric group."""

import dataclasses
import datetime
from typing import Any, Dict, List, Optional


@dataclasses.dataclass
class TrialMetrics:
    trial_id: int
    trial_run_id: int
    steps_completed: int
    end_time: Optional[datetime.datetime]
    metrics: Dict[str, Any]
    group: str
    batch_metrics: Optional[List[Dict[str, Any]]] = None

    @property
    def total_batches(self) -> int:
        return self.steps_completed

    @classmethod
    def _from_json(cls, report: Dict[str, Any]) -> "TrialMetrics":
        metrics = dict(report.get("metrics") or {})
        metrics.pop("batches", None)  # det stores the step with the values; Determined does not
        return cls(trial_id=int(report.get("trial_id", 0)), trial_run_id=0,
                   steps_completed=int(report.get("total_batches", 0)), end_time=_time(report.get("time")),
                   metrics=metrics, group=report.get("group", ""))


def _time(text: Optional[str]) -> Optional[datetime.datetime]:
    """A protobuf timestamp ("2026-01-02T03:04:05.123456Z") as a datetime."""
    if not text:
        return None
    seconds = text.rstrip("Z").split(".")[0]
    return datetime.datetime.fromisoformat(seconds).replace(tzinfo=datetime.timezone.utc)
