"""Triage files with a three-way verdict (seed 004; contract §6, abstention view).

A triage file has one row per sample: a gold label (e.g. ``real`` / ``fake``, or 0 / 1), a
verdict that may abstain (``real`` / ``fake`` / ``uncertain``), and optionally a confidence,
a trial id, timing columns (``*_seconds``) and tool usage columns (``tool_count``,
``*_tool_count``, ``tool_seconds_total``). :func:`load_triage` reads and validates it;
:func:`triage_metrics` computes the seed 004 report. The classification metrics are
:func:`metrics_core.metrics.gate.abstention_metrics`: the gate's abstention view and triage files
are one implementation.

Sources: "contract §N" is section N of ``docs/CONTRACT.md``; "seed 004" is
``docs/seeds/004-triage-abstention-metrics.txt``.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from metrics_core.choices import (  # column names tried when the config names none
    CONFIDENCE_ALIASES,
    LABEL_ALIASES,
    PREDICTION_ALIASES,
    TRIAL_ALIASES,
)
from metrics_core.errors import InputError, InputErrors, first_listed
from metrics_core.evaluation.result import clean
from metrics_core.metrics.gate import ABSTAIN, PREDICT_NEG, PREDICT_POS, AbstentionMetrics
from metrics_core.metrics.gate import abstention_metrics as _abstention_metrics

__all__ = [
    "CONFIDENCE_ALIASES",
    "LABEL_ALIASES",
    "PREDICTION_ALIASES",
    "TRIAL_ALIASES",
    "AcrossTrials",
    "LatencyStats",
    "TriageConfig",
    "TriageData",
    "TriageReport",
    "detect_triage",
    "load_triage",
    "parse_triage",
    "triage_hint",
    "triage_metrics",
]

#: Columns that mark a candidates table (contract §2): a table with them is not a triage file.
_CANDIDATE_MARKERS = ("sent_uid", "sent_id", "p_has_evidence", "has_evidence")


@dataclass(frozen=True)
class TriageConfig:
    """How to read a triage file (seed 004). ``None`` columns are found by name.

    Attributes
    ----------
    label_column, prediction_column : str or None
        Gold label and verdict; by default the first of :data:`LABEL_ALIASES` /
        :data:`PREDICTION_ALIASES` present.
    positive_name, negative_name, abstain_name : str
        Class names in the file (compared case-insensitively): ``fake`` / ``real`` /
        ``uncertain``. Labels may also be 1 / 0, verdicts 1 / 0 / -1.
    confidence_column, trial_column : str or None
        Optional; by default ``confidence`` / ``trial`` (and aliases) when present.
    latency_columns : tuple of str or None
        Timing columns; by default every column whose name ends in ``_seconds``.
    tool_columns : tuple of str or None
        Tool usage columns; by default ``tool_count``, ``*_tool_count`` and
        ``tool_seconds_total``.
    """

    label_column: str | None = None
    prediction_column: str | None = None
    positive_name: str = "fake"
    negative_name: str = "real"
    abstain_name: str = "uncertain"
    confidence_column: str | None = None
    trial_column: str | None = None
    latency_columns: tuple[str, ...] | None = None
    tool_columns: tuple[str, ...] | None = None

    def __post_init__(self):
        names = [self.positive_name, self.negative_name, self.abstain_name]
        folded = [str(n).strip().lower() for n in names]
        if any(not n for n in folded) or len(set(folded)) != 3:
            raise ValueError("positive_name, negative_name and abstain_name must be three "
                             f"different non-empty names, got {names}")
        for name in ("latency_columns", "tool_columns"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, tuple(str(c) for c in value))

    def to_dict(self) -> dict:
        out = asdict(self)
        for name in ("latency_columns", "tool_columns"):
            if out[name] is not None:
                out[name] = list(out[name])
        return out


def _find(columns, wanted: str | None, aliases: tuple[str, ...]) -> str | None:
    if wanted is not None:
        return wanted if wanted in columns else None
    lower = {str(c).lower(): c for c in columns}
    for alias in aliases:
        if alias in columns:
            return alias
        if alias in lower:
            return lower[alias]
    return None


def _is_tool_column(name: str) -> bool:
    name = name.lower()
    return name == "tool_count" or name.endswith("_tool_count") or name == "tool_seconds_total"


@dataclass(frozen=True)
class _Columns:
    label: str
    prediction: str
    confidence: str | None
    trial: str | None
    latency: tuple[str, ...]
    tools: tuple[str, ...]


def _resolve_columns(frame: pd.DataFrame, config: TriageConfig, file: str | None) -> _Columns:
    columns = [str(c) for c in frame.columns]
    errors = []
    label = _find(columns, config.label_column, LABEL_ALIASES)
    prediction = _find(columns, config.prediction_column, PREDICTION_ALIASES)
    for role, found, wanted, aliases in (
            ("label", label, config.label_column, LABEL_ALIASES),
            ("prediction", prediction, config.prediction_column, PREDICTION_ALIASES)):
        if found is None:
            expected = repr(wanted) if wanted is not None else " or ".join(map(repr, aliases))
            errors.append(InputError(f"required {role} column is missing (expected {expected})",
                                     file=file, column=wanted or aliases[0],
                                     hint=f"columns found: {', '.join(columns)}"))
    optional = {}
    for role, wanted, aliases in (("confidence", config.confidence_column, CONFIDENCE_ALIASES),
                                  ("trial", config.trial_column, TRIAL_ALIASES)):
        optional[role] = _find(columns, wanted, aliases)
        if wanted is not None and optional[role] is None:
            errors.append(InputError(f"{role} column is missing", file=file, column=wanted,
                                     hint=f"columns found: {', '.join(columns)}"))
    listed = {}
    for role, wanted in (("latency", config.latency_columns), ("tools", config.tool_columns)):
        if wanted is None:
            if role == "latency":
                listed[role] = tuple(c for c in columns
                                     if c.lower().endswith("_seconds") and not _is_tool_column(c))
            else:
                listed[role] = tuple(c for c in columns if _is_tool_column(c))
        else:
            missing = [c for c in wanted if c not in columns]
            for c in missing:
                errors.append(InputError(f"{role} column is missing", file=file, column=c,
                                         hint=f"columns found: {', '.join(columns)}"))
            listed[role] = tuple(c for c in wanted if c in columns)
    InputErrors.raise_if_any(errors)
    return _Columns(label=label, prediction=prediction, confidence=optional["confidence"],
                    trial=optional["trial"], latency=listed["latency"], tools=listed["tools"])


# ------------------------------------------------------------------------------- loading
@dataclass(frozen=True, eq=False)
class TriageData:
    """A validated triage file: per-sample arrays (seed 004).

    ``y`` is 1 for the positive class (e.g. fake); ``pred`` is 1 / 0 / -1 (abstain).
    ``latency`` and ``tools`` map column names to float arrays (NaN = not recorded).
    """

    y: np.ndarray
    pred: np.ndarray
    confidence: np.ndarray | None
    trial: np.ndarray | None
    latency: dict
    tools: dict
    config: TriageConfig
    name: str | None = None
    columns: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.y.shape[0])


def _class_codes(series: pd.Series, mapping: dict[str, int], *, column: str, file: str | None,
                 expected: str) -> tuple[np.ndarray, InputError | None]:
    """Map names (case-insensitive) or numbers to codes; an InputError for the rest."""
    codes = np.zeros(len(series), dtype=np.int8)
    if pd.api.types.is_bool_dtype(series.dtype) or pd.api.types.is_numeric_dtype(series.dtype):
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
        numeric = {float(k): v for k, v in mapping.items() if _is_number(k)}
        bad = ~np.isin(values, list(numeric))
        for value, code in numeric.items():
            codes[values == value] = code
    else:
        text = series.astype("string").str.strip().str.lower()
        mapped = text.map(mapping)
        bad = mapped.isna().to_numpy()
        codes[~bad] = mapped[~bad].to_numpy(dtype=np.int64)
    if bad.any():
        found = sorted({_shown(v) for v in series[bad].tolist()})[:5]
        return codes, InputError.from_mask(bad, f"values must be {expected}", file=file,
                                           column=column, row_numbers=np.arange(1, len(bad) + 1),
                                           hint=f"found {', '.join(found)}")
    return codes, None


def _shown(value) -> str:
    """A cell as an error message quotes it: a missing or blank cell as ``(empty)``."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "(empty)"
    text = str(value)
    return text if text.strip() else "(empty)"


def _blank(series: pd.Series) -> np.ndarray:
    """Rows whose cell is missing or blank text (a CSV's empty cell read as text is ``""``)."""
    text = series.astype("string").str.strip()
    return (series.isna() | (text == "")).fillna(True).to_numpy(dtype=bool)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _numeric(frame: pd.DataFrame, column: str, *, file: str | None, low: float | None,
             high: float | None, rule: str) -> tuple[np.ndarray, InputError | None]:
    """A float column; an InputError naming the rows that are not numbers or out of range."""
    raw = frame[column]
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    not_number = np.isnan(values) & raw.notna().to_numpy()
    with np.errstate(invalid="ignore"):
        out = np.zeros(len(values), dtype=bool)
        if low is not None:
            out |= values < low
        if high is not None:
            out |= values > high
    bad = not_number | out
    if bad.any():
        return values, InputError.from_mask(bad, rule, file=file, column=column,
                                            row_numbers=np.arange(1, len(bad) + 1))
    return values, None


def parse_triage(frame: pd.DataFrame, *, name: str | None = None,
                 config: TriageConfig | None = None) -> TriageData:
    """Validate a triage table already in memory (see :func:`load_triage`)."""
    config = config or TriageConfig()
    cols = _resolve_columns(frame, config, name)
    pos, neg, abst = (config.positive_name.strip().lower(), config.negative_name.strip().lower(),
                      config.abstain_name.strip().lower())
    errors = []
    y, err = _class_codes(
        frame[cols.label], {pos: 1, neg: 0, "1": 1, "0": 0, "1.0": 1, "0.0": 0},
        column=cols.label, file=name,
        expected=f"{config.positive_name!r} / {config.negative_name!r} (or 1 / 0)")
    errors.append(err)
    pred, err = _class_codes(
        frame[cols.prediction],
        {pos: PREDICT_POS, neg: PREDICT_NEG, abst: ABSTAIN, "1": PREDICT_POS, "0": PREDICT_NEG,
         "-1": ABSTAIN, "1.0": PREDICT_POS, "0.0": PREDICT_NEG, "-1.0": ABSTAIN},
        column=cols.prediction, file=name,
        expected=f"{config.positive_name!r} / {config.negative_name!r} / "
                 f"{config.abstain_name!r} (or 1 / 0 / -1)")
    errors.append(err)
    confidence = None
    if cols.confidence is not None:
        confidence, err = _numeric(frame, cols.confidence, file=name, low=0.0, high=1.0,
                                   rule="confidence must be a number in [0, 1]")
        errors.append(err)
        if err is None:
            missing = np.isnan(confidence) & (pred != ABSTAIN)
            if missing.any():
                errors.append(InputError.from_mask(
                    missing, "confidence is missing on an answered row", file=name,
                    column=cols.confidence, row_numbers=np.arange(1, len(missing) + 1)))
    trial = None
    if cols.trial is not None:
        raw = frame[cols.trial]
        missing = _blank(raw)
        if missing.any():
            errors.append(InputError.from_mask(missing, "trial id is missing", file=name,
                                               column=cols.trial,
                                               row_numbers=np.arange(1, len(missing) + 1)))
        trial = raw.astype(str).to_numpy(dtype=object)
    latency = {}
    for c in cols.latency:
        latency[c], err = _numeric(frame, c, file=name, low=0.0, high=None,
                                   rule="latency must be a number of seconds >= 0")
        errors.append(err)
    tools = {}
    for c in cols.tools:
        tools[c], err = _numeric(frame, c, file=name, low=0.0, high=None,
                                 rule="tool usage must be a number >= 0")
        errors.append(err)
    InputErrors.raise_if_any([e for e in errors if e is not None])
    return TriageData(y=y, pred=pred, confidence=confidence, trial=trial, latency=latency,
                      tools=tools, config=config, name=name,
                      columns={"label": cols.label, "prediction": cols.prediction,
                               "confidence": cols.confidence, "trial": cols.trial,
                               "latency": list(cols.latency), "tools": list(cols.tools)})


def load_triage(source, *, name: str | None = None, config: TriageConfig | None = None,
                limits=None) -> TriageData:
    """Read and validate a triage file (CSV, CSV.gz, Parquet, JSON Lines; path or bytes).

    Labels, verdicts and trial ids are read as text (a trial ``"01"`` stays ``"01"``), so the
    command line and the app's upload key the trials alike. ``limits``: the reader's bounds
    (:func:`metrics_core.inputs.loading.read_table`).

    Raises
    ------
    InputError
        A missing column or a value outside its rule, naming file, column, rule and rows.
    """
    from metrics_core.inputs.loading import read_table

    config = config or TriageConfig()
    if name is None:
        path = source if isinstance(source, str | os.PathLike) else getattr(source, "name", None)
        name = Path(os.fspath(path)).name if isinstance(path, str | os.PathLike) else "<upload>"
    # Verdicts, labels and trial ids are read as text (ids such as "007" stay strings).
    text_columns = {c for c in (config.label_column, config.prediction_column,
                                config.trial_column) if c is not None}
    text_columns |= set(LABEL_ALIASES) | set(PREDICTION_ALIASES) | set(TRIAL_ALIASES)
    frame = read_table(source, name=name, string_columns=sorted(text_columns), limits=limits)
    return parse_triage(frame, name=name, config=config)


def detect_triage(frame: pd.DataFrame, *, config: TriageConfig | None = None) -> bool:
    """Whether ``frame`` looks like a triage file rather than a queries / candidates table.

    True when it has a label and a prediction column (by config or alias), no candidate or
    query-table columns (``sent_uid``, ``has_evidence``, ``p_has_evidence``), and among the
    predictions one of the configured three names (case-insensitive; a file without any
    abstention still qualifies), or numbers with -1 among them (1 / 0 alone could be any binary
    prediction). Blank, unknown or missing verdicts beside them do not make it something else:
    :func:`parse_triage` then names their rows.
    """
    config = config or TriageConfig()
    columns = [str(c) for c in frame.columns]
    if any(c.lower() in _CANDIDATE_MARKERS for c in columns):
        return False
    label = _find(columns, config.label_column, LABEL_ALIASES)
    prediction = _find(columns, config.prediction_column, PREDICTION_ALIASES)
    if label is None or prediction is None:
        return False
    values = frame[prediction].dropna()
    if values.empty:
        return False
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(
            values.dtype):
        return bool((values.astype(np.float64) == -1.0).any())
    found = set(values.astype("string").str.strip().str.lower().unique().tolist())
    names = {config.positive_name.strip().lower(), config.negative_name.strip().lower(),
             config.abstain_name.strip().lower()}
    return bool(found & names)


def triage_hint(frame: pd.DataFrame, *, name: str,
                config: TriageConfig | None = None) -> InputError | None:
    """Why a file with a triage file's label and prediction columns was not read as one
    (:func:`detect_triage`), as a problem to show beside the queries table's: None when it
    was, or when it lacks those columns or has a candidate table's."""
    config = config or TriageConfig()
    columns = [str(c) for c in frame.columns]
    label = _find(columns, config.label_column, LABEL_ALIASES)
    prediction = _find(columns, config.prediction_column, PREDICTION_ALIASES)
    if (label is None or prediction is None or detect_triage(frame, config=config)
            or any(c.lower() in _CANDIDATE_MARKERS for c in columns)):
        return None
    names = ", ".join(f"'{n}'" for n in (config.positive_name, config.negative_name,
                                          config.abstain_name))
    values = frame[prediction].dropna()
    found = list(dict.fromkeys(values.astype("string").str.strip().tolist()))
    shown = first_listed(found, 5)
    if values.empty:
        what = "has no verdict"
    elif pd.api.types.is_numeric_dtype(values.dtype):
        what = (f"holds the numbers {shown}, without -1 (an abstention): 1 and 0 alone could be "
                "any binary prediction")
    else:
        what = f"holds {shown}, none of the verdicts {names}"
    return InputError(
        f"read as a queries table: the file has a triage file's label ('{label}') and "
        f"prediction ('{prediction}') columns, but the prediction column {what}",
        file=name, column=prediction,
        hint=f"for a triage file, write the verdicts as {names} (or 1, 0 and -1 for an "
             "abstention)")


# ------------------------------------------------------------------------------- metrics
@dataclass(frozen=True)
class LatencyStats:
    """Mean, median (p50) and 95th percentile (numpy linear) of a timing column (seed 004).

    Rows without a value are left out; ``n`` counts the rows used. NaN when none.
    """

    n: int
    mean: float
    p50: float
    p95: float

    @classmethod
    def of(cls, values: np.ndarray) -> LatencyStats:
        values = np.asarray(values, dtype=np.float64)
        values = values[~np.isnan(values)]
        if values.size == 0:
            return cls(0, math.nan, math.nan, math.nan)
        p50, p95 = np.percentile(values, [50, 95])
        return cls(int(values.size), float(values.mean()), float(p50), float(p95))


@dataclass(frozen=True)
class AcrossTrials:
    """Mean and sample standard deviation (ddof = 1) of a metric over trials (seed 004).

    Trials where the metric is undefined are left out (``n_trials`` counts the others);
    ``std`` is NaN with fewer than two.
    """

    mean: float
    std: float
    n_trials: int

    @classmethod
    def of(cls, values) -> AcrossTrials:
        values = np.asarray(values, dtype=np.float64)
        values = values[~np.isnan(values)]
        if values.size == 0:
            return cls(math.nan, math.nan, 0)
        std = float(np.std(values, ddof=1)) if values.size > 1 else math.nan
        return cls(float(values.mean()), std, int(values.size))


@dataclass(frozen=True, eq=False)
class TriageReport:
    """Seed 004 metrics of a triage file.

    Attributes
    ----------
    metrics : AbstentionMetrics
        Over all rows (all trials pooled).
    latency : dict
        Timing column -> :class:`LatencyStats`.
    tools : dict
        Tool column -> mean over rows with a value (``avg_<column>``).
    trials : dict
        Trial id -> :class:`AbstentionMetrics` of that trial (empty without a trial column).
    across_trials : dict
        Seed 004 key -> :class:`AcrossTrials` (mean ± std, ddof = 1) of the per-trial values.
    """

    name: str | None
    n: int
    config: TriageConfig
    metrics: AbstentionMetrics
    latency: dict
    tools: dict
    trials: dict
    across_trials: dict
    columns: dict = field(default_factory=dict)
    #: Risk–coverage of the answers ranked by their confidence (contract §6), or why not.
    risk_coverage: dict | None = None

    def _end_to_end(self) -> str | None:
        """The timing column of the end-to-end latency: ``total_seconds`` (or
        ``latency_seconds``, or the only timing column); ``None`` when none is."""
        for column in ("total_seconds", "latency_seconds"):
            if column in self.latency:
                return column
        return next(iter(self.latency)) if len(self.latency) == 1 else None

    @property
    def avg_latency_seconds(self) -> float:
        """Mean end-to-end latency: ``total_seconds`` (or the only timing column); else NaN
        (:attr:`avg_latency_reason` says why)."""
        column = self._end_to_end()
        return math.nan if column is None else self.latency[column].mean

    @property
    def avg_latency_reason(self) -> str | None:
        """Why :attr:`avg_latency_seconds` is undefined; ``None`` when it has a value."""
        column = self._end_to_end()
        if column is not None:
            return None if self.latency[column].n else f"no row has a value in {column!r}"
        if not self.latency:
            return "the file has no timing column (*_seconds)"
        return ("no end-to-end timing column (total_seconds) among "
                f"{', '.join(map(repr, self.latency))}")

    def metric_dict(self) -> dict:
        """Seed 004 keys -> values (class names substituted), with ``<key>_ci`` and counts."""
        cfg = self.config
        return self.metrics.as_dict(cfg.positive_name, cfg.negative_name)

    def to_dict(self) -> dict:
        """JSON-ready report (NaN -> None, tuples -> lists); ``undefined`` (overall and per
        trial) maps each metric without a value to the reason."""
        cfg = self.config
        out = {
            "schema": "triage/1",
            "source": self.name,
            "n": self.n,
            "config": cfg.to_dict(),
            "columns": self.columns,
            "classes": {"positive": cfg.positive_name, "negative": cfg.negative_name,
                        "abstain": cfg.abstain_name},
            "metrics": self.metric_dict(),
            "undefined": {**self.metrics.undefined(cfg.positive_name, cfg.negative_name),
                          **({} if self.avg_latency_reason is None
                             else {"avg_latency_seconds": self.avg_latency_reason})},
            "avg_latency_seconds": self.avg_latency_seconds,
            "latency": {c: asdict(s) for c, s in self.latency.items()},
            "tools": {f"avg_{c}": v for c, v in self.tools.items()},
            "trials": {t: {**m.as_dict(cfg.positive_name, cfg.negative_name, with_ci=False),
                           "undefined": m.undefined(cfg.positive_name, cfg.negative_name)}
                       for t, m in self.trials.items()},
            "across_trials": {k: asdict(v) for k, v in self.across_trials.items()},
            "risk_coverage": self.risk_coverage,
        }
        return clean(out)


def triage_metrics(data: TriageData) -> TriageReport:
    """Seed 004 report: abstention metrics, latency, tool usage, per-trial mean ± std.

    The classification metrics are :func:`metrics_core.metrics.gate.abstention_metrics` over all
    rows; with a trial column they are also computed per trial and summarised as mean ± std with
    ddof = 1 (contract §9).
    """
    cfg = data.config
    names = {"positive_name": cfg.positive_name, "negative_name": cfg.negative_name}
    overall = _abstention_metrics(data.y, data.pred, confidence=data.confidence, **names)
    latency = {c: LatencyStats.of(v) for c, v in data.latency.items()}
    tools = {}
    for c, v in data.tools.items():
        v = v[~np.isnan(v)]
        tools[c] = float(v.mean()) if v.size else math.nan
    trials: dict = {}
    across: dict = {}
    if data.trial is not None:
        ids = pd.unique(pd.Series(data.trial))
        for t in _sorted_ids(ids):  # loop over trials (a handful)
            rows = data.trial == t
            conf = None if data.confidence is None else data.confidence[rows]
            trials[str(t)] = _abstention_metrics(data.y[rows], data.pred[rows],
                                                 confidence=conf, **names)
        per_trial = [m.as_dict(cfg.positive_name, cfg.negative_name, with_ci=False)
                     for m in trials.values()]
        if per_trial:
            across = {key: AcrossTrials.of([d[key] for d in per_trial])
                      for key in per_trial[0]}
    return TriageReport(name=data.name, n=data.n, config=cfg, metrics=overall,
                        latency=latency, tools=tools, trials=trials, across_trials=across,
                        columns=dict(data.columns), risk_coverage=_risk_coverage(data))


#: Resamples of the risk–coverage areas' intervals (triage files are small).
RISK_COVERAGE_RESAMPLES = 2000


def _risk_coverage(data: TriageData) -> dict:
    """The answers ranked by confidence, abstentions never answered
    (:mod:`metrics_core.metrics.risk_coverage`): the curve, AURC, optimal AURC and E-AURC with
    bootstrap intervals; undefined, with the reason, without a usable confidence."""
    from metrics_core.metrics import risk_coverage as rcov

    answered = data.pred != ABSTAIN
    if data.confidence is None:
        return {"defined": False, "reason": "the file has no confidence column"}
    missing = int(np.isnan(data.confidence[answered]).sum())
    if missing:
        return {"defined": False, "reason": f"{missing} answered rows have no confidence"}
    if not answered.any():
        return {"defined": False, "reason": "every row abstains"}
    error = (data.pred != data.y).astype(np.float64)
    curve = rcov.risk_coverage(error, data.confidence, answered=answered)
    ci = rcov.aurc_intervals(error, data.confidence, answered=answered,
                             n_resamples=RISK_COVERAGE_RESAMPLES, seed=0)
    return {"defined": True, "reason": None, "n_resamples": RISK_COVERAGE_RESAMPLES,
            **rcov.RiskCoverage(curve.coverage, curve.risk, curve.aurc, curve.optimal_aurc,
                                curve.n, ci).to_dict()}


def _sorted_ids(ids) -> list:
    """Trial ids in natural order (numbers as numbers)."""
    def key(t):
        text = str(t)
        try:
            return (0, float(text), text)
        except ValueError:
            return (1, 0.0, text)
    return sorted(ids, key=key)
