"""The one counting kernel of the gate, its abstention view and the confusion metrics (§4, §6).

:func:`outcome_counts` counts (prediction, label) pairs per group in one ``bincount``: a
``(groups, 3, 2)`` table whose rows are abstained / predicted negative / predicted positive
and whose columns are negatives / positives. Every gate, abstention and confusion metric is a
ratio of cells of that table (:func:`gate_fractions`, :func:`abstention_fractions`,
:func:`confusion_cells`), computed for all groups at once; the overall value is the
single-group case, so the per-criterion, per-fold and overall numbers come from the same
formulas. Proportions carry Wilson intervals (:func:`with_intervals`, contract §9).

>>> t = outcome_counts([1, 1, 0, 0, 1, 0], [1, -1, 0, 1, 0, -1])
>>> t.shape, t[0].tolist()
((1, 3, 2), [[1, 1], [1, 1], [1, 1]])
>>> v = with_intervals(gate_fractions(t))
>>> float(v["screening_sensitivity"][0][0]), float(v["alert_precision"][0][0])
(0.6666666666666666, 0.5)
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

from metrics_core.metrics.confusion import confusion_fractions, confusion_rates
from metrics_core.metrics.uncertainty import wilson_interval
from metrics_core.registry import Counting

__all__ = [
    "ANSWERED_RATIOS",
    "FORMULAS",
    "abstention_fractions",
    "abstention_ratios",
    "cell_sum",
    "confusion_cells",
    "counted",
    "gate_fractions",
    "outcome_counts",
    "ratio",
    "with_intervals",
]

#: A fraction: (numerator counts, denominator counts, scale), arrays over groups.
Fraction = tuple[np.ndarray, np.ndarray, float]


def outcome_counts(y, pred, groups=None, n_groups: int | None = None) -> np.ndarray:
    """Counts of (prediction, label) per group: ``table[g, pred + 1, y]``, int64.

    ``pred`` holds 1 (positive / POS), 0 (negative / NEG) or -1 (abstain / UNCERTAIN);
    ``groups`` (optional) the group code of every row, ``0 <= code < n_groups``.
    """
    y, pred = _integers(y), _integers(pred)
    cell = pred.astype(np.intp)  # one array of bincount's index type, updated in place
    cell += 1
    cell *= 2
    cell += y
    if groups is None:
        return np.bincount(cell, minlength=6).reshape(1, 3, 2)
    groups = _integers(groups)
    n_groups = int(groups.max()) + 1 if n_groups is None else int(n_groups)
    key = groups.astype(np.intp)
    key *= 6
    key += cell
    return np.bincount(key, minlength=6 * n_groups).reshape(n_groups, 3, 2)


def _integers(values) -> np.ndarray:
    """``values`` as an integer array: as given when it is one (no widening copy)."""
    values = np.asarray(values)
    return values if values.dtype.kind in "iub" else values.astype(np.int64)


def ratio(k, n, scale: float = 1.0) -> np.ndarray:
    """``k / n × scale`` with NaN where ``n = 0`` (undefined, never a silent 0)."""
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    out = np.full(np.broadcast(k, n).shape, np.nan)
    np.divide(k * scale, n, out=out, where=n > 0)
    return out


def gate_fractions(table: np.ndarray) -> dict[str, Fraction]:
    """Gate metrics of outcome tables with rows abstain = UNCERTAIN, 0 = NEG, 1 = POS (§6)."""
    n = table.sum(axis=(1, 2))
    n_pos = table[:, :, 1].sum(axis=1)
    unc, neg, pos = (table[:, r].sum(axis=1) for r in range(3))
    missed = table[:, 1, 1]
    return {
        "neg_rate": (neg, n, 1.0),
        "uncertain_rate": (unc, n, 1.0),
        "pos_rate": (pos, n, 1.0),
        "review_rate": (unc + pos, n, 1.0),
        "alert_rate_per_1000": (pos, n, 1000.0),
        "screening_sensitivity": (n_pos - missed, n_pos, 1.0),
        "screening_fn_per_1000": (missed, n, 1000.0),
        "alert_precision": (table[:, 2, 1], pos, 1.0),
    }


def confusion_cells(table: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(tp, fp, tn, fn)`` of the answered rows of outcome tables."""
    return table[:, 2, 1], table[:, 2, 0], table[:, 1, 0], table[:, 1, 1]


#: The abstention view's per-class precision and recall over the answered rows, and the
#: confusion ratio each one is (:func:`~metrics_core.metrics.confusion.confusion_fractions`).
ANSWERED_RATIOS = MappingProxyType({"precision_pos": "precision", "recall_pos": "sensitivity",
                                    "precision_neg": "npv", "recall_neg": "specificity"})


def abstention_fractions(table: np.ndarray) -> dict[str, Fraction]:
    """Proportions of the abstention view (seed 004): TP / FP / TN / FN count answered rows."""
    tp, fp, tn, fn = confusion_cells(table)
    abstain_neg, abstain_pos = table[:, 0, 0], table[:, 0, 1]
    n = table.sum(axis=(1, 2))
    n_pos, n_neg = tp + fn + abstain_pos, tn + fp + abstain_neg
    answered = tp + fp + tn + fn
    of_answered = confusion_fractions(tp, fp, tn, fn)
    return {
        "coverage": (answered, n, 1.0),
        "abstain_rate": (abstain_pos + abstain_neg, n, 1.0),
        "abstain_rate_pos": (abstain_pos, n_pos, 1.0),
        "abstain_rate_neg": (abstain_neg, n_neg, 1.0),
        "coverage_pos": (tp + fn, n_pos, 1.0),
        "coverage_neg": (tn + fp, n_neg, 1.0),
        "accuracy": (tp + tn, n, 1.0),
        "accuracy_answered": (tp + tn, answered, 1.0),
        **{name: (*of_answered[rate], 1.0) for name, rate in ANSWERED_RATIOS.items()},
        "slip_rate": (fn, n_pos, 1.0),
        "false_flag_rate": (fp, n_neg, 1.0),
        "catch_rate": (tp, n_pos, 1.0),
        "pass_rate": (tn, n_neg, 1.0),
    }


def abstention_ratios(table: np.ndarray) -> dict[str, np.ndarray]:
    """Ratios of the abstention view that are not proportions: F1 of each class, MCC,
    balanced accuracy over answered rows (the confusion kernel, contract §4)."""
    tp, fp, tn, fn = confusion_cells(table)
    positive = confusion_rates(tp, fp, tn, fn)
    negative = confusion_rates(tn, fn, tp, fp)  # the negative class as "positive"
    return {"f1_pos": positive["f1"], "f1_neg": negative["f1"], "mcc": positive["mcc"],
            "balanced_accuracy": positive["balanced_accuracy"]}


def with_intervals(fractions: dict[str, Fraction]) -> dict[str, tuple[np.ndarray, ...]]:
    """``name -> (value, lo, hi)`` arrays: the ratio and its scaled Wilson 95 % interval."""
    out = {}
    for name, (k, n, scale) in fractions.items():
        lo, hi = wilson_interval(np.asarray(k), np.asarray(n))
        out[name] = (ratio(k, n, scale), np.asarray(lo) * scale, np.asarray(hi) * scale)
    return out


#: Where each cell of :data:`metrics_core.registry.CELLS` lies in an outcome table
#: ``table[:, pred + 1, y]``.
_CELL_INDEX = MappingProxyType({"tp": (2, 1), "fp": (2, 0), "tn": (1, 0), "fn": (1, 1),
                                "abstain_pos": (0, 1), "abstain_neg": (0, 0)})


def cell_sum(table: np.ndarray, cells) -> np.ndarray:
    """The sum of ``cells`` (names of :data:`metrics_core.registry.CELLS`) per group."""
    rows, columns = zip(*(_CELL_INDEX[c] for c in cells), strict=True)
    return table[:, list(rows), list(columns)].sum(axis=1)


#: The named ratios of the answered cells that a :class:`~metrics_core.registry.Counting`
#: may name (contract §4; ``f1_neg``: F1 with the negative class as the positive one).
FORMULAS = MappingProxyType({
    "f1": lambda tp, fp, tn, fn: confusion_rates(tp, fp, tn, fn)["f1"],
    "mcc": lambda tp, fp, tn, fn: confusion_rates(tp, fp, tn, fn)["mcc"],
    "balanced_accuracy": lambda tp, fp, tn, fn: confusion_rates(
        tp, fp, tn, fn)["balanced_accuracy"],
    "f1_neg": lambda tp, fp, tn, fn: confusion_rates(tn, fn, tp, fp)["f1"],
})


def counted(table: np.ndarray, counting: Counting) -> tuple[np.ndarray, Fraction | None]:
    """A counting metric of outcome tables ``(groups, 3, 2)``: its value per group, and its
    fraction ``(k, n, scale)`` when it is a ratio of sums of cells (None for a count or a
    named formula). NaN where the denominator is 0 (undefined, never a silent 0).

    >>> t = outcome_counts([1, 1, 0, 0, 1, 0], [1, -1, 0, 1, 1, -1])
    >>> value, (k, n, _) = counted(t, Counting("gate", ("tp", "fp"), ("tp",)))
    >>> float(value[0]), int(k[0]), int(n[0])
    (1.5, 3, 2)
    """
    if counting.formula is not None:
        return FORMULAS[counting.formula](*confusion_cells(table)), None
    k = cell_sum(table, counting.cells("numerator"))
    if not counting.denominator:
        return k.astype(np.float64) * counting.scale, None
    n = cell_sum(table, counting.cells("denominator"))
    return ratio(k, n, counting.scale), (k, n, counting.scale)
