"""How per-batch metrics become one value: Reducer's built-in reductions, and MetricReducer for
a trial's own (a full-dataset metric such as AUC), reduced on each process, then across them."""

import abc
import enum
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np


class Reducer(enum.Enum):
    """Reduces one metric's per-batch values; AVG across processes is weighted by batch counts."""

    AVG = 1
    SUM = 2
    MAX = 3
    MIN = 4


def _reduce(reducer: Reducer, values: Sequence[Any], weights: Optional[Sequence[int]] = None) -> Any:
    if reducer == Reducer.AVG:
        return float(np.average(np.asarray(values, dtype=np.float64), weights=weights, axis=0))
    if reducer == Reducer.SUM:
        return float(np.sum(np.asarray(values, dtype=np.float64), axis=0))
    if reducer == Reducer.MAX:
        return float(np.max(np.asarray(values, dtype=np.float64), axis=0))
    if reducer == Reducer.MIN:
        return float(np.min(np.asarray(values, dtype=np.float64), axis=0))
    raise ValueError(f"unknown reducer {reducer!r}")


class MetricReducer(abc.ABC):
    """A trial's own reduction: update it (from train_batch or evaluate_batch) with whatever it
    needs; per_slot_reduce() runs on every process and cross_slot_reduce() on the chief with all
    their results. With a name, the result is that one metric; without, a dict of metrics."""

    @abc.abstractmethod
    def reset(self) -> None:
        pass

    @abc.abstractmethod
    def per_slot_reduce(self) -> Any:
        pass

    @abc.abstractmethod
    def cross_slot_reduce(self, per_slot_metrics: List[Any]) -> Any:
        pass


class _SimpleReducer(MetricReducer):
    """A plain function of every value update() was given, on every process."""

    def __init__(self, reduce_fn: Callable[[List[Any]], Any]) -> None:
        self._reduce_fn = reduce_fn
        self._values: List[Any] = []

    def update(self, value: Any) -> None:
        self._values.append(value)

    def reset(self) -> None:
        self._values = []

    def per_slot_reduce(self) -> Any:
        return self._values

    def cross_slot_reduce(self, per_slot_metrics: List[Any]) -> Any:
        return self._reduce_fn([value for values in per_slot_metrics for value in values])


class _WrappedReducer:
    def __init__(self, reducer: MetricReducer, name: Optional[str], for_training: bool, for_validation: bool) -> None:
        self.reducer = reducer
        self.name = name
        self.for_training = for_training
        self.for_validation = for_validation


class _ReducerRegistry:
    """The reducers a context wrapped, reduced together at the end of a training window or a
    validation: one gather of every reducer's per-process result."""

    def __init__(self) -> None:
        self._wrapped: List[_WrappedReducer] = []

    def wrap(self, reducer: Any, name: Optional[str], for_training: bool, for_validation: bool) -> Any:
        if not for_training and not for_validation:
            raise ValueError("a reducer must be for training, for validation or both")
        if isinstance(reducer, MetricReducer):
            wrapped = reducer
        elif callable(reducer):
            wrapped = _SimpleReducer(reducer)
        else:
            raise TypeError(f"wrap_reducer takes a MetricReducer or a function of a list of values, not {reducer!r}")
        self._wrapped.append(_WrappedReducer(wrapped, name, for_training, for_validation))
        return wrapped

    def _of(self, for_training: bool) -> List[_WrappedReducer]:
        return [w for w in self._wrapped if (w.for_training if for_training else w.for_validation)]

    def reset(self, for_training: bool) -> None:
        for w in self._of(for_training):
            w.reducer.reset()

    def reduce(self, for_training: bool, gather: Callable[[Any], Optional[List[Any]]]) -> Dict[str, Any]:
        """Every process calls it; the chief gets the reduced metrics, the others {}."""
        wrapped = self._of(for_training)
        if not wrapped:
            return {}
        gathered = gather([w.reducer.per_slot_reduce() for w in wrapped])
        if gathered is None:
            return {}
        metrics: Dict[str, Any] = {}
        for i, w in enumerate(wrapped):
            result = w.reducer.cross_slot_reduce([per_process[i] for per_process in gathered])
            if w.name is not None:
                metrics[w.name] = result
            elif isinstance(result, dict):
                metrics.update(result)
            else:
                raise TypeError(f"a reducer wrapped without a name must return a dict of metrics, not {result!r}")
        return metrics
