"""The one computation: every metric of a run, as records, tables and checks (contract §11).

The public entry points of the report, gathered from the modules that do the work:

- :class:`Evaluator` (:mod:`metrics_core.evaluation.evaluator`) caches the data-only parts of one
  data set;
  :meth:`Evaluator.evaluate` returns an :class:`Evaluation`.
- :class:`Evaluation`, :class:`MetricRecord`, :class:`Check`
  (:mod:`metrics_core.evaluation.records`); ``Evaluation.to_dict()`` is ``metrics_master.json``.
- The records are built one contract section at a time (:mod:`metrics_core.evaluation.sections`),
  the per-criterion and per-fold tables by :mod:`metrics_core.evaluation.tables`, the checks by
  :mod:`metrics_core.evaluation.checks`, the intervals by :mod:`metrics_core.evaluation.intervals`;
  what each metric is comes from :mod:`metrics_core.registry`.
"""

from __future__ import annotations

from metrics_core.config import EvalConfig
from metrics_core.data.dataset import Dataset
from metrics_core.evaluation.evaluator import Evaluator
from metrics_core.evaluation.records import Check, Evaluation, MetricRecord
from metrics_core.registry import describe as interpretation

__all__ = ["Check", "EvalConfig", "Evaluation", "Evaluator", "MetricRecord", "evaluate",
           "interpretation"]


def evaluate(dataset: Dataset, config: EvalConfig | None = None, *, audit=None) -> Evaluation:
    """One-shot :meth:`Evaluator.evaluate` (the CLI's entry point)."""
    return Evaluator(dataset, audit=audit).evaluate(config)
