"""The one computation: every metric of a run, as records, tables and checks (contract §11).

The public entry points of the report, gathered from the modules that do the work:

- :class:`Evaluator` (:mod:`metrics_core.evaluation.evaluator`) caches the data-only parts of one
  data set;
  :meth:`Evaluator.evaluate` returns an :class:`Evaluation`.
- :class:`Evaluation`, :class:`MetricRecord`, :class:`Check`
  (:mod:`metrics_core.evaluation.result`); ``Evaluation.to_dict()`` is ``metrics_master.json``.
- The records are built one contract section at a time (:mod:`metrics_core.evaluation.sections`),
  the per-criterion and per-fold tables by :mod:`metrics_core.evaluation.tables`, the checks by
  :mod:`metrics_core.evaluation.checks`, the intervals by :mod:`metrics_core.evaluation.intervals`;
  what each metric is comes from :mod:`metrics_core.registry`.
"""

from __future__ import annotations

import importlib

from metrics_core.config import EvalConfig
from metrics_core.data.dataset import Dataset
from metrics_core.evaluation.evaluator import Evaluator
from metrics_core.evaluation.result import Check, Evaluation, MetricRecord
from metrics_core.registry import describe as interpretation

#: The figures of an Evaluation (:mod:`metrics_core.report.evaluation_figures`), imported on
#: first use (PEP 562): importing the report imports no plotly until a figure is asked for.
FIGURES = ("decision_curve_figure", "gate_flow_figure", "k_histogram", "per_criterion_figure",
           "pr_figure", "reliability_figure", "roc_figure")

__all__ = ["FIGURES", "Check", "EvalConfig", "Evaluation", "Evaluator", "MetricRecord",
           "evaluate", "interpretation", *FIGURES]


def __getattr__(name: str):
    if name not in FIGURES:
        raise AttributeError(f"module 'metrics_core.report' has no attribute {name!r}")
    # (by name, as metrics_core's own exports: a module that imports the report for its
    # Evaluator, as compare does, imports no plotly)
    return getattr(importlib.import_module("metrics_core.report.evaluation_figures"), name)


def evaluate(dataset: Dataset, config: EvalConfig | None = None, *, audit=None) -> Evaluation:
    """One-shot :meth:`Evaluator.evaluate` (the CLI's entry point)."""
    return Evaluator(dataset, audit=audit).evaluate(config)
