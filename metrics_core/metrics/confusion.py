"""Confusion counts at a threshold and their ratios (contract §4).

- :func:`confusion_fractions` and :func:`confusion_rates` are the one definition of the ratios
  of confusion counts (sensitivity, specificity, FPR, precision, NPV, F1, MCC, balanced
  accuracy), vectorised, with 0/0 undefined (NaN), never 0;
- :class:`Confusion` holds the counts at one threshold and their ratios (undefined ones as a
  :class:`~metrics_core.metrics.classification.Score` with ``defined=False`` and a reason);
  the gate's and triage's abstention view
  (:class:`metrics_core.metrics.gate.AbstentionMetrics`) holds the :class:`Confusion` of its
  answered samples;
- :func:`confusion_sweep` and :func:`confusion_at` count at ``p >= threshold`` on the sorted
  scores of a :class:`~metrics_core.metrics.classification.PreparedScores` (a binary search per
  threshold).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

import numpy as np

from metrics_core.metrics.classification import Score, frozen_arrays, prepared_rows
from metrics_core.metrics.uncertainty import divide

__all__ = [
    "RATE_NAMES",
    "Confusion",
    "ConfusionSweep",
    "confusion_at",
    "confusion_fractions",
    "confusion_from_counts",
    "confusion_rates",
    "confusion_sweep",
]

#: Ratios reported for a confusion matrix (contract §4), in display order.
RATE_NAMES = ("sensitivity", "specificity", "fpr", "precision", "npv", "f1", "mcc",
              "balanced_accuracy")

_UNDEFINED_REASON = MappingProxyType({
    "sensitivity": "no positives (0/0)",
    "specificity": "no negatives (0/0)",
    "fpr": "no negatives (0/0)",
    "precision": "no predicted positives (0/0)",
    "npv": "no predicted negatives (0/0)",
    "f1": "no positives and no predicted positives (0/0)",
    "mcc": "a class or a prediction is absent (0/0)",
    "balanced_accuracy": "one class (0/0)",
})


def confusion_fractions(tp, fp, tn, fn) -> dict[str, tuple]:
    """The ratios of confusion counts that are a count over a count, as ``(numerator,
    denominator)`` in the type of the counts (integers keep their Wilson intervals) (§4).

    sensitivity = TP / (TP + FN); specificity = TN / (TN + FP); fpr = FP / (TN + FP);
    precision = TP / (TP + FP); npv = TN / (TN + FN); f1 = 2 TP / (2 TP + FP + FN).

    >>> confusion_fractions(3, 1, 5, 2)["precision"]
    (3, 4)
    """
    return {
        "sensitivity": (tp, tp + fn),
        "specificity": (tn, tn + fp),
        "fpr": (fp, tn + fp),
        "precision": (tp, tp + fp),
        "npv": (tn, tn + fn),
        "f1": (2 * tp, 2 * tp + fp + fn),
    }


def confusion_rates(tp, fp, tn, fn) -> dict[str, np.ndarray]:
    """The ratios of confusion counts, vectorised; ``nan`` where a ratio is 0/0 (§4, §10).

    The ratios of :func:`confusion_fractions`, and mcc = (TP TN - FP FN) / sqrt((TP + FP)(TP +
    FN)(TN + FP)(TN + FN)) (undefined, not 0 as in scikit-learn, when a factor is 0);
    balanced_accuracy = (sensitivity + specificity) / 2. Every other module computing these
    ratios calls this function.
    """
    tp, fp, tn, fn = (np.asarray(v, dtype=np.float64) for v in (tp, fp, tn, fn))
    rates = {name: divide(k, n) for name, (k, n) in confusion_fractions(tp, fp, tn, fn).items()}
    rates["mcc"] = divide(tp * tn - fp * fn,
                          np.sqrt((tp + fp) * (tp + fn)) * np.sqrt((tn + fp) * (tn + fn)))
    rates["balanced_accuracy"] = (rates["sensitivity"] + rates["specificity"]) / 2.0
    return rates


@dataclass(frozen=True)
class Confusion:
    """Confusion counts at one threshold (positive iff ``p >= threshold``) and their ratios.

    Ratios are properties returning ``float`` (``nan`` when 0/0); :meth:`metrics` returns them
    as :class:`Score` with ``defined=False`` and a reason for the undefined ones (contract §4).
    """

    tp: int
    fp: int
    tn: int
    fn: int
    threshold: float | None = None
    _rates: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        for name in ("tp", "fp", "tn", "fn"):
            value = getattr(self, name)
            if int(value) != value or value < 0:
                raise ValueError(f"{name} must be a non-negative integer count, got {value!r}")
            object.__setattr__(self, name, int(value))
        rates = confusion_rates(self.tp, self.fp, self.tn, self.fn)
        object.__setattr__(self, "_rates", {k: float(v) for k, v in rates.items()})

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.tn + self.fn

    @property
    def n_pos(self) -> int:
        return self.tp + self.fn

    @property
    def n_neg(self) -> int:
        return self.tn + self.fp

    @property
    def n_pred_pos(self) -> int:
        return self.tp + self.fp

    @property
    def sensitivity(self) -> float:
        return self._rates["sensitivity"]

    @property
    def specificity(self) -> float:
        return self._rates["specificity"]

    @property
    def fpr(self) -> float:
        return self._rates["fpr"]

    @property
    def precision(self) -> float:
        return self._rates["precision"]

    @property
    def ppv(self) -> float:
        return self._rates["precision"]

    @property
    def npv(self) -> float:
        return self._rates["npv"]

    @property
    def f1(self) -> float:
        return self._rates["f1"]

    @property
    def mcc(self) -> float:
        return self._rates["mcc"]

    @property
    def balanced_accuracy(self) -> float:
        return self._rates["balanced_accuracy"]

    def rates(self) -> dict[str, float]:
        """All ratios of :data:`RATE_NAMES` as floats (``nan`` when undefined)."""
        return dict(self._rates)

    def of_negative_class(self) -> Confusion:
        """The same counts with the negative class as the positive one (its F1 is the
        negative class's F1)."""
        return Confusion(self.tn, self.fn, self.tp, self.fp, self.threshold)

    def metrics(self) -> dict[str, Score]:
        """All ratios as :class:`Score`, undefined ones with their reason."""
        return {name: Score(value) if not np.isnan(value)
                else Score(value, False, _UNDEFINED_REASON[name])
                for name, value in self._rates.items()}

    def counts(self) -> dict[str, int]:
        return {"tp": self.tp, "fp": self.fp, "tn": self.tn, "fn": self.fn, "n": self.n,
                "n_pos": self.n_pos, "n_neg": self.n_neg}


def confusion_from_counts(tp, fp, tn, fn, *, threshold: float | None = None) -> Confusion:
    """A :class:`Confusion` from counts, for code that counts outcomes itself (gate, triage)."""
    return Confusion(tp, fp, tn, fn, threshold)


@dataclass(frozen=True)
class ConfusionSweep:
    """Confusion counts at many thresholds (arrays aligned with ``thresholds``)."""

    thresholds: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    tn: np.ndarray
    fn: np.ndarray

    @cached_property
    def _rate_arrays(self) -> dict[str, np.ndarray]:
        return confusion_rates(self.tp, self.fp, self.tn, self.fn)

    def rates(self) -> dict[str, np.ndarray]:
        """Ratios per threshold (``nan`` where 0/0), see :func:`confusion_rates`."""
        return dict(self._rate_arrays)

    def at(self, i: int) -> Confusion:
        """The :class:`Confusion` of the ``i``-th threshold."""
        return Confusion(int(self.tp[i]), int(self.fp[i]), int(self.tn[i]), int(self.fn[i]),
                         float(self.thresholds[i]))


def confusion_sweep(y, p=None, thresholds=None) -> ConfusionSweep:
    """Confusion counts at every threshold of ``thresholds`` (positive iff ``p >= t``) (§4).

    The scores of each class are sorted once (pass a :class:`PreparedScores` in place of
    ``(y, p)`` to reuse that sort: ``confusion_sweep(prepared, thresholds=[0.1, 0.5])``); each
    threshold is a binary search, so a grid of thresholds for a dashboard costs almost nothing.
    """
    if thresholds is None:
        raise ValueError("thresholds are required: a 1-D array of numbers")
    s = prepared_rows(y, p, "a confusion sweep")
    t = np.atleast_1d(np.asarray(thresholds, dtype=np.float64))
    if t.ndim != 1 or np.isnan(t).any():
        raise ValueError("thresholds must be a 1-D array of numbers (no nan)")
    fn = np.searchsorted(s.pos_sorted, t, side="left").astype(np.int64)
    tn = np.searchsorted(s.neg_sorted, t, side="left").astype(np.int64)
    tp = s.n_pos - fn
    fp = s.n_neg - tn
    return ConfusionSweep(*frozen_arrays(t.copy(), tp, fp, tn, fn))


def confusion_at(y, p=None, *, threshold: float = 0.5) -> Confusion:
    """Confusion counts and ratios at ``threshold``: positive iff ``p >= threshold`` (§4).

    ``y`` may be a :class:`PreparedScores` in place of ``(y, p)``.

    Examples
    --------
    >>> c = confusion_at([1, 1, 0, 0, 1], [0.9, 0.7, 0.4, 0.2, 0.8], threshold=0.75)
    >>> (c.tp, c.fp, c.tn, c.fn), c.sensitivity
    ((2, 0, 2, 1), 0.6666666666666666)
    """
    if threshold is None or np.isnan(threshold):
        raise ValueError(f"threshold must be a number, got {threshold!r}")
    return confusion_sweep(y, p, thresholds=[threshold]).at(0)
