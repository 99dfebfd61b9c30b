"""Determined's `determined.common` on det: the names scripts import from it (util's metric
groups). The rest of Determined's common package (its REST bindings, storage managers, YAML
helpers) belongs to Determined's own CLI and harness, which det replaces with its own."""

from determined.common import util

__all__ = ["util"]
