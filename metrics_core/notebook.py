"""The notebook's one call: predictions in, the
:class:`~metrics_core.evaluation.result.Evaluation` out.

:func:`evaluate` is what ``metrics-core evaluate`` does, for a notebook or a script: the inputs
loaded, audited and fingerprinted by :func:`metrics_core.run.open_run` (the front ends' one
sequence), then evaluated by the run's
:class:`~metrics_core.evaluation.evaluator.Evaluator` with the settings given by name. The
result is the object the command line writes as ``metrics_master.json``
(``evaluation.to_json()``): the same numbers for the same settings.

>>> import pandas as pd
>>> queries = pd.DataFrame({"post_id": [1, 1, 2, 2], "criterion": ["A", "B", "A", "B"],
...                         "has_evidence": [1, 0, 0, 1],
...                         "p_has_evidence": [0.9, 0.2, 0.4, 0.7]})
>>> evaluation = evaluate(queries, bootstrap=0)
>>> evaluation.record("auroc").value
1.0
>>> verdicts = pd.DataFrame({"post_id": [2], "criterion": ["A"], "verdict": ["label_error"],
...                          "corrected_has_evidence": [1]})
>>> both = evaluate(queries, bootstrap=0, adjudications=verdicts)
>>> both.original.record("sensitivity").value, both.adjudicated.record("sensitivity").value
(1.0, 0.6666666666666666)
>>> evaluate(queries, tau_neg=2.0)
Traceback (most recent call last):
...
metrics_core.errors.SettingsError: tau_neg: must be a finite number within [0, 1]; got 2.0
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from metrics_core.evaluation.adjudicated import AdjudicatedRun
    from metrics_core.evaluation.result import Evaluation
    from metrics_core.inputs.limits import Limits

__all__ = ["evaluate"]

#: Settings that choose the queries evaluated (:class:`metrics_core.config.Filters`).
_FILTERS = ("fold", "split", "criteria")


def evaluate(queries, candidates=None, *, mapping: Mapping | None = None,
             limits: Limits | None = None, adjudications=None,
             exclude_ambiguous: bool = False, **settings) -> Evaluation | AdjudicatedRun:
    """Every metric of the contract on ``queries`` (and ``candidates``), as the command line's
    ``evaluate`` computes them.

    Parameters
    ----------
    queries, candidates : path, bytes or pandas.DataFrame
        A queries table and a candidates table, or one long table (contract §2), as
        :func:`metrics_core.inputs.loading.load` reads them (files by path: CSV, gzip CSV,
        Parquet or JSON Lines). A file is fingerprinted into ``evaluation.run["inputs"]``; a
        frame is not.
    mapping, limits
        Column names chosen by hand and input limits, as
        :func:`metrics_core.inputs.loading.load` takes them.
    **settings
        Any field of :class:`metrics_core.config.EvalConfig` by name (``tau_neg=0.05``,
        ``bootstrap=2000``, ``seed=1``, ``ks=(1, 5)``, ...; the defaults are the contract's, with
        10,000 bootstrap resamples), and ``fold``, ``split``, ``criteria`` to evaluate part of
        the data.
    adjudications : path, bytes or pandas.DataFrame, optional
        Reviewers' verdicts (the adjudication file of contract §14, as the app downloads it;
        a frame with its columns). Given, the result is an
        :class:`~metrics_core.evaluation.adjudicated.AdjudicatedRun`: ``.original`` (the
        evaluation without them, unchanged), ``.adjudicated`` (the same settings and
        resamples on the corrected gold), ``.differences()``, and ``.to_json()``, the
        document ``metrics-core evaluate --adjudications`` writes (the same numbers).
    exclude_ambiguous : bool
        With ``adjudications``: leave the queries with an ``ambiguous`` verdict out of the
        adjudicated gold (``--exclude-ambiguous``).

    Bad input raises :class:`metrics_core.InputError` naming the file, column, rule and rows;
    a bad setting :class:`metrics_core.SettingsError` naming it (both are ``ValueError``).
    """
    from metrics_core.config import EvalConfig, Filters
    from metrics_core.run import check_criterion_gates, open_run

    if exclude_ambiguous and adjudications is None:
        raise ValueError("exclude_ambiguous needs adjudications")

    known = {f.name for f in fields(EvalConfig)} - {"filters"}
    unknown = sorted(set(settings) - known - set(_FILTERS))
    if unknown:
        raise TypeError(f"evaluate() got unknown settings {', '.join(unknown)}; the settings "
                        f"are {', '.join(sorted(known))} and the filters "
                        f"{', '.join(_FILTERS)}")
    chosen = {k: settings.pop(k) for k in _FILTERS if k in settings}
    if "criteria" in chosen and isinstance(chosen["criteria"], list):
        chosen["criteria"] = tuple(chosen["criteria"])
    config = EvalConfig(**settings, filters=Filters(**chosen))
    run = open_run(queries, candidates, mapping=mapping, limits=limits)
    check_criterion_gates(config, run.dataset, given_by="criterion_gates")
    if adjudications is None:
        return run.evaluator.evaluate(config)
    from metrics_core.evaluation.adjudicated import evaluate_adjudicated

    checked, inputs = _adjudications(adjudications, run.dataset)
    return evaluate_adjudicated(run.evaluator, checked, config,
                                exclude_ambiguous=exclude_ambiguous, inputs=inputs)


def _adjudications(source, dataset):
    """The verdicts of ``source`` (a path, bytes or a frame) checked against ``dataset``, and
    the file's fingerprint (None for a frame), as ``--adjudications`` reads them."""
    import pandas as pd

    from metrics_core.inputs.adjudications import adjudications_of, read_adjudications

    if isinstance(source, pd.DataFrame):
        return adjudications_of(source.astype(object), dataset), None
    from metrics_core.run import fingerprint

    name = None if isinstance(source, bytes | bytearray) else Path(source).name
    inputs = fingerprint(source, name=name or "adjudications.csv")
    return read_adjudications(source, dataset, name=name), inputs
