"""How numbers, intervals, subsets and target verdicts are written: one wording for the app's
pages (:mod:`dashboard.display` shows it) and the decision record
(:mod:`metrics_core.report.decision_record`), so both say the same thing of the same run.

>>> fmt(13230, "count"), fmt(0.5983), fmt_interval(0.571, 0.624), fmt(None)
('13,230', '0.598', '[0.571, 0.624]', '—')
"""

from __future__ import annotations

import math
import operator
from types import MappingProxyType

import pandas as pd

from metrics_core import registry

__all__ = ["COUNT_COLUMNS", "KINDS", "UNDEFINED", "VERDICT_ORDER", "finite", "fmt",
           "fmt_interval", "kind_of", "no_interval_reason", "no_interval_words", "plain_subset",
           "undefined_reason", "verdict_frame", "verdict_summary"]

#: A target's verdicts, the misses first: not met / met on the whole 95% interval, undecided
#: when the interval straddles the target, and the two cases without a judgement.
VERDICT_ORDER = ("not met", "undecided", "met", "point estimate only", "not computed")

#: How an undefined or missing value is shown, in tiles, text and table cells.
UNDEFINED = "—"
#: Number kinds and their format: counts as integers with thousands separators, per-1,000
#: values and the spread of a count over folds to 1 decimal, rates, scores and mean K (whose
#: values on the γ sweep differ in the second decimal) to 3 decimals.
KINDS = ("count", "per_1000", "average", "score")

#: Registry units (metrics_core.registry.MetricSpec.unit) that are not rates or scores.
_UNIT_KINDS = MappingProxyType({"count": "count", "per_1000": "per_1000"})
#: Columns of the page tables that hold counts although they are no metric of the registry.
COUNT_COLUMNS = frozenset({
    "n", "count", "n_positive", "n_folds", "n_queries", "n_posts", "n_candidates", "K", "k",
    "TP", "FP", "TN", "FN", "tp", "fp", "tn", "fn", "selected_k", "n_gold", "rank",
    "position", "trials", "queries", "positives", "min_k", "max_k"})


def kind_of(name: str) -> str:
    """The number kind of a metric or table column (one of :data:`KINDS`).

    Metrics take it from their registry unit (``count``, ``per_1000``; every proportion,
    probability, correlation, ratio and number of sentences is a ``score``); other
    columns are counts when :data:`COUNT_COLUMNS` names them, scores otherwise.
    """
    try:
        unit = registry.spec(name).unit
    except KeyError:
        return "count" if name in COUNT_COLUMNS else "score"
    return _UNIT_KINDS.get(unit, "score")


def finite(value) -> float | None:
    """``value`` as a float, or None when it is missing, text or not finite."""
    if value is None or value is pd.NA or isinstance(value, str):
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def fmt(value, kind: str = "score") -> str:
    """A number as shown on every page: the one format of its ``kind`` (:data:`KINDS`).

    ``count`` -> ``13,230``; ``per_1000`` and ``average`` (mean or std of a count) -> ``4.5``;
    ``score`` (rates, proportions, scores, mean K) -> ``0.598``. None, NaN and infinities
    are :data:`UNDEFINED` (—).
    """
    if kind not in KINDS:
        raise ValueError(f"number kind must be one of {', '.join(KINDS)}, not {kind!r}")
    value = finite(value)
    if value is None:
        return UNDEFINED
    if kind == "count":
        return f"{round(value):,}"
    if kind in ("per_1000", "average"):
        return f"{value:,.1f}"
    return f"{value:.3f}"



def fmt_interval(lo, hi, kind: str = "score") -> str:
    """An interval in brackets, ``[0.571, 0.624]``; :data:`UNDEFINED` when an end is missing."""
    lo_text, hi_text = fmt(lo, kind), fmt(hi, kind)
    if UNDEFINED in (lo_text, hi_text):
        return UNDEFINED
    return f"[{lo_text}, {hi_text}]"


#: Metrics that need both classes (queries with and without evidence) to be defined.
_BOTH_CLASSES = frozenset({"auroc", "auprc", "mcc", "balanced_accuracy",
                           "calibration_intercept", "calibration_slope"})


def undefined_reason(record) -> str:
    """Why ``record`` shows as —: no queries, one class only, or a 0/0 ratio ('' if defined)."""
    if record.defined and finite(record.value) is not None:
        return ""
    if getattr(record, "reason", None):
        return f"undefined: {record.reason}"
    if not record.n:
        return "undefined: no queries in this subset"
    name = record.name or ""
    if name in _BOTH_CLASSES or name.startswith(("tpr@fpr=", "threshold@fpr=")):
        return "undefined: only one class present (needs queries with and without evidence)"
    return "undefined: 0/0 (no query in its denominator)"



def plain_subset(subset: str) -> str:
    """A record's subset in words: ``all_queries @ τ=0.5`` -> ``all queries at τ=0.5``,
    ``positives_only`` -> ``queries with evidence``. The protocol's formula (the record's
    ``variant``) stays out of the cell: it is under Help & glossary and in the exports."""
    return (subset.replace("positives_only", "queries with evidence")
            .replace("all_queries", "all queries").replace(" @ ", " at "))


def no_interval_reason(r) -> str:
    """Why a record has no interval."""
    unit = registry.spec(r.name).unit if r.name else ""
    if unit == "count":
        return "none: a count of these data"
    if r.name.startswith("threshold@"):
        return "a threshold chosen on these data"
    if not r.defined:
        return "undefined"
    return "not computed (bootstrap off)"


def no_interval_words(r) -> str:
    """Why a record has no interval, in words for a sentence."""
    if r is None:
        return "not in this run"
    reason = no_interval_reason(r)
    return {"not computed (bootstrap off)": "bootstrap intervals are off"}.get(reason, reason)



_TARGET_OPS = MappingProxyType({">=": (operator.ge, "≥"), ">": (operator.gt, ">"),
                                "<=": (operator.le, "≤"), "<": (operator.lt, "<")})


def verdict_frame(evaluation) -> pd.DataFrame:
    """The run's targets judged on their intervals: one row per target with ``verdict`` (a
    key of :data:`VERDICT_ORDER`), the value and interval as shown, the target and why.

    The values and intervals are those of the library's targets table
    (:attr:`~metrics_core.evaluation.result.Evaluation.targets`, the run's own targets in their
    order); only the comparison with the target is made here: *met* when the whole interval clears
    it, *not met* when the whole interval misses it, *undecided* when it straddles it, *point
    estimate only* when the run has no interval (no judgement is made), *not computed* with
    the reason when the value is undefined or not in the run.
    """
    from metrics_core.targets import parse_target

    columns = ["label", "verdict", "shown", "ci95", "target", "detail", "metric", "value",
               "ci95_lo", "ci95_hi", "n"]
    table = evaluation.targets
    if not len(table):
        return pd.DataFrame(columns=columns)
    parsed = [parse_target(t) for t in evaluation.config.targets]
    if len(parsed) != len(table) or any(
            name != m for (name, _, _), m in zip(parsed, table["metric"], strict=False)):
        parsed = [parse_target(f"{m}{t.replace(' ', '')}")
                  for m, t in zip(table["metric"], table["target"], strict=True)]
    rows = []
    for (name, op, bound), r in zip(parsed, table.to_dict("records"), strict=True):
        holds, symbol = _TARGET_OPS[op]
        kind = kind_of(name)
        target = f"{symbol} {fmt(bound, kind) if kind == 'count' else f'{bound:g}'}"
        value, lo, hi = finite(r["value"]), finite(r["ci_lo"]), finite(r["ci_hi"])
        try:
            record = evaluation.record(name)
        except KeyError:
            record = None
        if record is not None and value is not None and undefined_reason(record):
            value = None  # a convention value (one-class AUROC 0.5) is no estimate
        if value is None:
            verdict = "not computed"
            detail = ("not computed in this run" if record is None
                      else undefined_reason(record) or "undefined")
        elif lo is None or hi is None:
            verdict = "point estimate only"
            side = "clears" if holds(value, bound) else "misses"
            why = no_interval_words(record)
            detail = f"the point estimate {side} it; no 95% interval: {why}"
        elif holds(lo, bound) and holds(hi, bound):
            verdict, detail = "met", "the whole 95% interval clears it"
        elif not holds(lo, bound) and not holds(hi, bound):
            verdict, detail = "not met", "the whole 95% interval misses it"
        else:
            verdict = "undecided"
            detail = (f"the 95% interval straddles it (the point estimate "
                      f"{'clears' if holds(value, bound) else 'misses'} it)")
        rows.append({"label": registry.label(name), "verdict": verdict,
                     "shown": fmt(value, kind), "ci95": fmt_interval(lo, hi, kind),
                     "target": target, "detail": detail, "metric": name, "value": value,
                     "ci95_lo": lo, "ci95_hi": hi, "n": r.get("n")})
    return pd.DataFrame(rows, columns=columns)


def verdict_summary(verdicts: pd.DataFrame) -> str:
    """``3 of 8 targets met, 1 not met, ...`` (the verdicts present: met first, then as in
    :data:`VERDICT_ORDER`)."""
    counts = verdicts["verdict"].value_counts()
    order = ["met", *(v for v in VERDICT_ORDER if v != "met")]
    parts = [f"{int(counts[v])} {v}" for v in order if v in counts.index]
    if not parts:
        return "No targets set."
    first, *rest = parts
    n = len(verdicts)
    return (f"{first.split(' ', 1)[0]} of {n} target{'s' if n != 1 else ''} "
            f"{first.split(' ', 1)[1]}" + "".join(f", {p}" for p in rest) + ".")
