"""What a run reports: metric records, consistency checks and the :class:`Evaluation` (§11).

``Evaluation.to_dict()`` is ``metrics_master.json``: the configuration (filters included), the
data summary, the run fingerprint, every :class:`MetricRecord`, the per-criterion and per-fold
tables, the fold summary, the γ sweep, the gate grid, the ranking distributions, the reliability
bins, the selected-K table and the consistency checks. The CLI, the dashboard and the exports
all read the same object.
"""

from __future__ import annotations

import json
import math
import secrets
import threading
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np
import pandas as pd

from metrics_core import registry
from metrics_core.config import threshold_provenance
from metrics_core.evaluation.inflight import ComputeOnce, in_background

__all__ = ["TABLES", "Check", "Evaluation", "MetricRecord", "clean", "frame_records"]

SCHEMA = "metrics_master/1"


@dataclass(frozen=True)
class MetricRecord:
    """One reported number (contract §11): what it is, on which subset, how sure we are.

    ``value`` is ``None`` when the metric is undefined and no convention applies; where a seed
    fixes a convention (one-class AUROC = 0.5) the value is that convention and ``defined`` is
    false. ``ci95`` is ``(lo, hi)`` or ``None``; ``ci_method`` says how it was computed and, for
    a bootstrap interval, ``ci_valid`` how many resamples gave a defined value. ``n`` is the
    number of cases the value rests on: a proportion's denominator (queries with evidence for
    a sensitivity, POS alerts for alert precision), the queries (or posts) a mean averages,
    the subset's queries otherwise. ``reason`` says why an undefined record is undefined.
    """

    name: str
    value: float | None
    subset: str
    n: int
    ci95: tuple[float, float] | None = None
    defined: bool = True
    interpretation: str = ""
    group: str = ""
    ci_method: str | None = None
    variant: str | None = None
    ci_valid: int | None = None
    reason: str | None = None

    @property
    def label(self) -> str:
        return registry.label(self.name)

    def to_dict(self) -> dict:
        return {"name": self.name, "value": clean(self.value), "subset": self.subset,
                "n": int(self.n),
                "ci95": None if self.ci95 is None else [clean(self.ci95[0]),
                                                         clean(self.ci95[1])],
                "defined": bool(self.defined), "interpretation": self.interpretation,
                "group": self.group, "ci_method": self.ci_method,
                "ci_valid_resamples": self.ci_valid, "variant": self.variant,
                "reason": self.reason}


@dataclass(frozen=True)
class Check:
    """One consistency check (contract §10): ``passed`` is ``None`` when it does not apply."""

    name: str
    passed: bool | None
    detail: str

    def to_dict(self) -> dict:
        return {"name": self.name, "passed": self.passed, "detail": self.detail}


@dataclass(frozen=True, eq=False)
class Evaluation:
    """Everything one run reports; build it with :meth:`Evaluator.evaluate`."""

    config: object
    summary: dict
    records: tuple[MetricRecord, ...]
    checks: tuple[Check, ...]
    gate: object
    abstention: object
    confusion: object
    tpr_at_fpr: tuple
    roc: object
    pr: object
    reliability: object
    k: np.ndarray
    states: np.ndarray
    k_summary: object
    multilabel: dict
    ranking_summary: dict
    audit: object | None = None
    run: dict = field(default_factory=dict)
    #: How each threshold was chosen (:meth:`with_provenance`; None: every one pre-specified).
    provenance: dict | None = None
    _index: dict = field(default_factory=dict, repr=False)
    _tables: dict = field(default_factory=dict, repr=False)
    _once: ComputeOnce = field(default_factory=ComputeOnce, repr=False)

    # The tables are built on first use: a slider move that shows one page pays for one table.
    # Thread-safe: a table another thread is building is waited for, not built twice (after a
    # failure there, each caller builds it and gets the error in its own thread).
    def _table(self, name: str):
        tables = self._tables

        def stored(name):
            value = tables[name]
            return not callable(value), value

        return self._once.get(name, stored, lambda: tables[name](), tables.__setitem__)

    def prefetch(self, *names: str) -> threading.Thread:
        """Start building the tables ``names`` (in that order) on a helper thread, for a
        caller about to read every table (:meth:`to_json`): it builds the others meanwhile,
        and waits for one in the making. A failure is left to the caller that reads the
        table (it builds it again and gets the error)."""
        unknown = [n for n in names if n not in self._tables]
        if unknown:
            raise KeyError(f"no table {unknown[0]!r}; have: {', '.join(self._tables)}")
        return in_background([lambda name=name: self._table(name) for name in names],
                             "metrics_core-tables")

    def add_tables(self, **builders) -> None:
        """More tables of the document, each built on first use by ``builders[name]()``:
        ``cohorts`` and ``weak_segments`` (:mod:`metrics_core.evaluation.cohorts`) appear in
        :meth:`to_dict` when added."""
        self._tables.update(builders)

    def with_provenance(self, marks: dict | None, guarantees: dict | None = None
                        ) -> Evaluation:
        """A copy of this run whose document says how each threshold was chosen
        (:func:`metrics_core.config.threshold_provenance`: ``marks`` field -> pre-specified /
        exploratory / guaranteed, with the guaranteed fields' ``guarantees``); this one, which
        other readers may share, unchanged. Without it every threshold is pre-specified, as
        the command line's own runs are."""
        return replace(self, provenance=threshold_provenance(self.config, marks, guarantees))

    def with_tables(self, **builders) -> Evaluation:
        """A copy of this run with more tables (as :meth:`add_tables`), this one unchanged: a
        run shared by several readers (the app's sessions) written with one reader's tables.
        The tables built so far are shared; the others are built by each on first use."""
        return replace(self, _tables={**self._tables, **builders}, _once=ComputeOnce())

    @property
    def per_query(self) -> pd.DataFrame:
        """One row per query: labels, p, gate state, selected K, evidence hits, ranking values."""
        return self._table("per_query")

    @property
    def per_criterion(self) -> pd.DataFrame:
        """Every per-group metric per criterion, then ``micro`` (pooled) and ``macro`` rows.

        Undefined values are NaN and left out of the macro mean; ``attrs["n_groups"]`` says
        over how many criteria each macro value averages.
        """
        return self._table("per_criterion")

    @property
    def per_fold(self) -> pd.DataFrame | None:
        """Every per-group metric per fold, then ``mean``, ``std`` (ddof 0) and ``pooled``."""
        return self._table("per_fold")

    @property
    def fold_summary(self) -> pd.DataFrame | None:
        """Per metric: mean ± std over folds beside the pooled value and its 95 % CI."""
        return self._table("fold_summary")

    @property
    def gamma_sweep(self) -> pd.DataFrame:
        """Mean K, evidence recall / precision and workload over γ (seed 003 §8.2)."""
        return self._table("gamma_sweep")

    @property
    def gate_risk_coverage(self) -> dict | None:
        """The gate's risk–coverage curve, AURC and E-AURC with intervals (contract §6)."""
        return self._table("gate_risk_coverage") if "gate_risk_coverage" in self._tables \
            else None

    @property
    def decision_curve(self) -> pd.DataFrame:
        """Net benefit of the model, treat-all and treat-none on a 0.01 grid (with bands)."""
        return self._table("decision_curve")

    @property
    def roc_band(self) -> pd.DataFrame | None:
        """Pointwise 95 % bootstrap band of the ROC curve (None without resamples)."""
        return self._table("roc_band")

    @property
    def smoothed_calibration(self) -> pd.DataFrame:
        """Spline calibration curve of p with its pointwise 95 % band (§5)."""
        return self._table("smoothed_calibration")

    @property
    def pr_band(self) -> pd.DataFrame | None:
        """Pointwise 95 % bootstrap band of the PR curve over recall (None without resamples)."""
        return self._table("pr_band")

    @property
    def gate_grid(self) -> pd.DataFrame:
        """Screening, alert and workload metrics over the (τ_neg, τ_pos) grid (§6)."""
        return self._table("gate_grid")

    @property
    def targets(self) -> pd.DataFrame:
        """The run's targets (default: seed 003's): met only when the whole interval clears
        them."""
        from metrics_core.targets import target_table

        return target_table(self.records, self.config.targets)

    def record(self, name: str) -> MetricRecord:
        """The record called ``name`` (KeyError listing the names if there is none)."""
        if not self._index:
            self._index.update({r.name: r for r in self.records})
        try:
            return self._index[name]
        except KeyError:
            raise KeyError(f"no metric record {name!r}; have: "
                           f"{', '.join(r.name for r in self.records)}") from None

    def records_frame(self) -> pd.DataFrame:
        """The records as a table: name, value, ci_lo, ci_hi, subset, n, defined, ..."""
        rows = []
        for r in self.records:
            lo, hi = r.ci95 if r.ci95 is not None else (np.nan, np.nan)
            rows.append({"group": r.group, "name": r.name,
                         "value": np.nan if r.value is None else r.value,
                         "ci_lo": lo, "ci_hi": hi, "ci_method": r.ci_method,
                         "subset": r.subset, "n": r.n, "defined": r.defined,
                         "variant": r.variant, "interpretation": r.interpretation})
        return pd.DataFrame(rows)

    def to_frame(self) -> pd.DataFrame:
        """The records as a DataFrame, one row a record (:meth:`records_frame`): the
        ``metrics`` of ``metrics_master.json``, intervals as ``ci_lo`` / ``ci_hi``."""
        return self.records_frame()

    def table(self, name: str) -> pd.DataFrame | None:
        """A table of ``metrics_master.json`` as a DataFrame, by its key there (:data:`TABLES`,
        and ``per_query``); ``None`` where the run has none (``roc_band`` / ``pr_band``
        without resamples, ``per_fold`` / ``fold_summary`` without folds).

        ``table("per_criterion")`` has the criterion as a column, as the document has it.
        """
        if name == "per_query":
            return self.per_query
        if name in _OPTIONAL_TABLES and name in self._tables:
            return self._table(name)
        make = _TABLES.get(name)
        if make is None:
            raise KeyError(f"no table {name!r}; have: {', '.join(TABLES)}, per_query")
        return make(self)

    def reliability_frame(self) -> pd.DataFrame:
        t = self.reliability
        return pd.DataFrame({"lo": t.lo, "hi": t.hi, "count": t.count,
                             "mean_confidence": t.mean_confidence,
                             "observed_frequency": t.observed_frequency,
                             "wilson_lo": t.wilson_lo, "wilson_hi": t.wilson_hi, "gap": t.gap})

    def k_summary_frame(self) -> pd.DataFrame:
        """Selected-K statistics overall, by gate state and by has_evidence (§7)."""
        return self.k_summary.table()

    def ranking_frame(self) -> pd.DataFrame:
        """Mean, std, median, P25, P75 and n of every ranking metric (§3)."""
        return pd.DataFrame([{"name": name, "mean": s.mean, "std": s.std, "median": s.median,
                              "p25": s.p25, "p75": s.p75, "n": s.n}
                             for name, s in self.ranking_summary.items()])

    def to_dict(self) -> dict:
        """``metrics_master.json``: configuration, data summary, records, tables, checks."""
        return self._document(frame_records)

    def _document(self, table) -> dict:
        """The document with every table made by ``table(frame)`` (rows, or a placeholder)."""
        frame_records = table
        per_fold = self.per_fold
        out = {
            "schema": SCHEMA,
            "generated_by": self.run.get("generated_by"),
            "run": self.run,
            "config": self.config.to_dict(),
            **(self.provenance or threshold_provenance(self.config)),
            "dataset": self.summary,
            "metrics": [r.to_dict() for r in self.records],
            "tpr_at_fpr": [{"target_fpr": t.target, "tpr": t.tpr if t.defined else None,
                            "fpr": t.fpr if t.defined else None,
                            "threshold": t.threshold if t.defined else None,
                            "defined": bool(t.defined)} for t in self.tpr_at_fpr],
            "ranking_distribution": frame_records(self.ranking_frame()),
            "reliability": frame_records(self.reliability_frame()),
            "k_by_state": frame_records(self.k_summary_frame()),
            "gamma_sweep": frame_records(self.gamma_sweep),
            "gate_grid": frame_records(self.gate_grid),
            "decision_curve": frame_records(self.decision_curve),
            "roc_band": None if self.roc_band is None else frame_records(self.roc_band),
            "pr_band": None if self.pr_band is None else frame_records(self.pr_band),
            "smoothed_calibration": frame_records(self.smoothed_calibration),
            "per_criterion": frame_records(self.per_criterion.reset_index()),
            "per_criterion_macro_over": self.per_criterion.attrs.get("n_groups"),
            "per_fold": None if per_fold is None else frame_records(per_fold.reset_index()),
            "per_fold_mean_over": None if per_fold is None else per_fold.attrs.get("n_groups"),
            "fold_summary": None if self.fold_summary is None
            else frame_records(self.fold_summary),
            "targets": frame_records(self.targets),
            "consistency_checks": [c.to_dict() for c in self.checks],
            "gate_risk_coverage": self.gate_risk_coverage,
        }
        for name in _OPTIONAL_TABLES:  # present when the run declared them (cohorts)
            if name in self._tables:
                out[name] = frame_records(self._table(name))
        if self.audit is not None and hasattr(self.audit, "to_dict"):
            out["audit"] = self.audit.to_dict()
        return clean(out)

    def to_json(self, **kwargs) -> str:
        """:meth:`to_dict` as strict JSON. Tables are written row by row, so the whole document
        never exists as Python objects at once (a table of 20,000 criteria stays small)."""
        kwargs.setdefault("indent", 2)
        tables: list[pd.DataFrame] = []
        token = secrets.token_hex(8)  # no value in the data can collide with the placeholder

        def placeholder(frame: pd.DataFrame) -> str:
            tables.append(frame)
            return f"\x00table-{token} {len(tables) - 1}\x00"

        text = json.dumps(self._document(placeholder), allow_nan=False, **kwargs)
        pieces = text.split(f'"\\u0000table-{token} ')
        out = [pieces[0]]
        for piece in pieces[1:]:
            index, rest = piece.split('\\u0000"', 1)
            out.append(_rows_json(tables[int(index)]))
            out.append(rest)
        return "".join(out)


def _indexed(frame: pd.DataFrame | None) -> pd.DataFrame | None:
    return None if frame is None else frame.reset_index()


#: The tables of ``metrics_master.json`` by their keys there, each made from an Evaluation
#: (:meth:`Evaluation.table`).
_TABLES = MappingProxyType({
    "metrics": Evaluation.records_frame,
    "tpr_at_fpr": lambda e: pd.DataFrame(
        [{"target_fpr": t.target, "tpr": t.tpr if t.defined else np.nan,
          "fpr": t.fpr if t.defined else np.nan,
          "threshold": t.threshold if t.defined else np.nan, "defined": bool(t.defined)}
         for t in e.tpr_at_fpr]),
    "ranking_distribution": Evaluation.ranking_frame,
    "reliability": Evaluation.reliability_frame,
    "k_by_state": Evaluation.k_summary_frame,
    "gamma_sweep": lambda e: e.gamma_sweep,
    "gate_grid": lambda e: e.gate_grid,
    "decision_curve": lambda e: e.decision_curve,
    "roc_band": lambda e: e.roc_band,
    "pr_band": lambda e: e.pr_band,
    "smoothed_calibration": lambda e: e.smoothed_calibration,
    "per_criterion": lambda e: _indexed(e.per_criterion),
    "per_fold": lambda e: _indexed(e.per_fold),
    "fold_summary": lambda e: e.fold_summary,
    "targets": lambda e: e.targets,
    "consistency_checks": lambda e: pd.DataFrame([c.to_dict() for c in e.checks]),
})
#: The names :meth:`Evaluation.table` takes (with ``per_query``).
TABLES = tuple(_TABLES)


#: Tables of the document that only some runs have (:meth:`Evaluation.add_tables`).
_OPTIONAL_TABLES = ("cohorts", "cohort_equalised_odds", "weak_segments")


def clean(obj):
    """JSON-safe: NaN / inf -> None, numpy scalars -> Python, tuples -> lists."""
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [clean(v) for v in obj.tolist()]
    if isinstance(obj, np.bool_ | bool):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        value = float(obj)
        return value if math.isfinite(value) else None
    return obj


def frame_records(frame: pd.DataFrame) -> list[dict]:
    return [clean(row) for row in frame.to_dict(orient="records")]


def _rows_json(frame: pd.DataFrame) -> str:
    """A table as a JSON array of row objects, one line a row: each column's values made
    JSON-safe at once (:func:`clean`; a float column's by one pass over its Python floats),
    then each row written by one encoder."""
    columns = [str(c) for c in frame.columns]
    if frame.attrs:  # pandas copies attrs into every column it hands out: drop them once
        frame = frame.copy(deep=False)
        frame.attrs = {}
    cleaned = [_column_values(frame.iloc[:, k]) for k in range(len(columns))]
    encode = json.JSONEncoder(allow_nan=False).encode  # json.dumps(row, allow_nan=False)
    rows = ((encode(dict(zip(columns, values, strict=True)))
             for values in zip(*cleaned, strict=True))
            if columns else ("{}" for _ in range(len(frame))))
    return "[\n" + ",\n".join(rows) + "\n]"


def _column_values(column: pd.Series) -> list:
    """The values of ``column`` as :func:`clean` makes them: a numpy float column's Python
    floats with None for NaN and infinities, a numpy integer or boolean column's Python
    numbers, any other column's values cleaned one by one."""
    values = column.to_numpy() if isinstance(column.dtype, np.dtype) else None
    if values is not None and values.dtype.kind == "f":
        return [v if math.isfinite(v) else None for v in values.tolist()]
    if values is not None and values.dtype.kind in "iub":
        return values.tolist()
    return [clean(v) for v in column]
