"""Three-state NE gate and its abstention view (contract §6, protocol ``all_queries``).

The gate turns ``p_has_evidence`` into a state: ``NEG`` if ``p < τ_neg``, ``UNCERTAIN`` if
``τ_neg ≤ p < τ_pos``, ``POS`` if ``p ≥ τ_pos``. :func:`gate_summary` reports the workload rates
and the screening / alert metrics of seed 003 with their targets.

The same gate is a classifier with abstention (seed 004): ``POS`` predicts positive, ``NEG``
predicts negative, ``UNCERTAIN`` abstains (:func:`states_to_prediction`).
:func:`abstention_metrics` computes the seed 004 metrics for any such three-way prediction; the
triage files of seed 004 (real / fake / uncertain) go through the very same function
(:mod:`metrics_core.triage`). Both views count outcomes with one kernel, :func:`outcome_table`,
so e.g. ``alert_precision`` is ``precision_pos`` and ``screening_fn_per_1000`` is
``FN / N × 1000`` by construction.

Every proportion carries a Wilson 95 % interval (contract §9); a per-1,000 value carries the
Wilson interval of its proportion, scaled by 1,000. Undefined values (0 / 0) are NaN and their
interval is ``None``.

Sources: "contract §N" is section N of ``docs/CONTRACT.md``; "seed 003" is
``docs/seeds/003-evidence-pipeline-contract.txt``; "seed 004" is
``docs/seeds/004-triage-abstention-metrics.txt``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import IntEnum
from functools import cached_property
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from metrics_core.metrics import calibration, outcomes
from metrics_core.metrics.confusion import Confusion
from metrics_core.metrics.uncertainty import wilson_interval

__all__ = [
    "ABSTAIN",
    "ABSTENTION_KEYS",
    "GATE_TARGETS",
    "PREDICT_NEG",
    "PREDICT_POS",
    "AbstentionMetrics",
    "GateOutcome",
    "GateState",
    "GateTarget",
    "PerThousand",
    "abstention_metrics",
    "assign_states",
    "gate_summary",
    "outcome_table",
    "per_thousand",
    "states_to_prediction",
]


class GateState(IntEnum):
    """Gate state codes as stored in the int8 state arrays (contract §6)."""

    NEG = 0
    UNCERTAIN = 1
    POS = 2


#: Predictions of the abstention view: 1 = predict positive, 0 = predict negative, -1 = abstain.
PREDICT_POS, PREDICT_NEG, ABSTAIN = 1, 0, -1

#: Seed 003 targets: (metric, target, comparison).
GATE_TARGETS = (
    ("screening_sensitivity", 0.995, ">="),
    ("screening_fn_per_1000", 5.0, "<="),
    ("alert_precision", 0.90, ">="),
)


def _check_threshold(name: str, value) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}") from None
    if not 0.0 <= value <= 1.0:  # also rejects nan
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return value


def assign_states(p, *, tau_neg: float, tau_pos: float) -> np.ndarray:
    """Gate state per query: NEG if p < τ_neg, UNCERTAIN if τ_neg ≤ p < τ_pos, else POS (§6).

    Parameters
    ----------
    p : array-like of float in [0, 1]
        ``p_has_evidence`` per query.
    tau_neg, tau_pos : float in [0, 1], τ_neg ≤ τ_pos
        With ``τ_neg = τ_pos`` no query is UNCERTAIN.

    Returns
    -------
    ndarray of int8
        :class:`GateState` codes (0 NEG, 1 UNCERTAIN, 2 POS), same shape as ``p``.

    Examples
    --------
    >>> assign_states([0.05, 0.1, 0.3, 0.6, 0.9], tau_neg=0.1, tau_pos=0.6).tolist()
    [0, 1, 1, 2, 2]
    """
    tau_neg = _check_threshold("tau_neg", tau_neg)
    tau_pos = _check_threshold("tau_pos", tau_pos)
    if tau_neg > tau_pos:
        raise ValueError(f"tau_neg must be <= tau_pos, got tau_neg={tau_neg}, tau_pos={tau_pos}")
    p = np.asarray(p, dtype=np.float64)
    bad = ~((p >= 0.0) & (p <= 1.0))
    if bad.any():
        raise ValueError(f"p must be a probability in [0, 1] (no nan); {int(bad.sum())} "
                         f"value(s) are not, first at index {int(np.flatnonzero(bad.ravel())[0])}")
    return ((p >= tau_neg).astype(np.int8) + (p >= tau_pos).astype(np.int8)).astype(np.int8)


def states_to_prediction(states) -> np.ndarray:
    """Abstention view of the gate: POS -> 1, NEG -> 0, UNCERTAIN -> -1 (abstain) (§6)."""
    states = _check_states(states)
    return np.array([PREDICT_NEG, ABSTAIN, PREDICT_POS], dtype=np.int8)[states]


def _check_states(states) -> np.ndarray:
    states = np.asarray(states)
    if states.ndim != 1:
        raise ValueError(f"states must be one-dimensional, got shape {states.shape}")
    if states.size and (not np.issubdtype(states.dtype, np.integer)
                        or states.min() < GateState.NEG or states.max() > GateState.POS):
        raise ValueError("states must hold gate states 0 (NEG), 1 (UNCERTAIN), 2 (POS)")
    return states.astype(np.int64, copy=False)


def _check_labels(y, n: int) -> np.ndarray:
    y = np.asarray(y)
    if y.shape != (n,):
        raise ValueError(f"y must have one 0/1 label per sample ({n}), got shape {y.shape}")
    if y.size and not np.isin(y, (0, 1)).all():
        raise ValueError("y must hold 0/1 labels")
    return y.astype(np.int64, copy=False)


def outcome_table(y, pred) -> np.ndarray:
    """Counts of (prediction, label): the one counting kernel of the gate and triage views.

    Parameters
    ----------
    y : array-like of 0/1
    pred : array-like of {-1, 0, 1}
        1 = predict positive, 0 = predict negative, -1 = abstain.

    Returns
    -------
    ndarray of int64, shape (3, 2)
        ``table[pred + 1, y]``: row 0 abstained, row 1 predicted negative, row 2 predicted
        positive; column 0 negatives, column 1 positives.
    """
    pred = np.asarray(pred)
    if pred.ndim != 1:
        raise ValueError(f"pred must be one-dimensional, got shape {pred.shape}")
    if pred.size and (not np.issubdtype(pred.dtype, np.integer)
                      or pred.min() < ABSTAIN or pred.max() > PREDICT_POS):
        raise ValueError("pred must hold 1 (positive), 0 (negative) or -1 (abstain)")
    y = _check_labels(y, pred.shape[0])
    return outcomes.outcome_counts(y, pred)[0]


def _wilson_all(fractions: dict[str, tuple[int, int, float]]) -> dict:
    """Wilson 95 % intervals of many ``k / n`` at once; ``None`` where ``n = 0``."""
    names = list(fractions)
    k = np.array([fractions[m][0] for m in names], dtype=np.int64)
    n = np.array([fractions[m][1] for m in names], dtype=np.int64)
    lo, hi = wilson_interval(k, n)
    return {m: (None if n[i] == 0 else (float(lo[i]) * fractions[m][2],
                                         float(hi[i]) * fractions[m][2]))
            for i, m in enumerate(names)}


def _ratio(k: int, n: int, scale: float = 1.0) -> float:
    return k / n * scale if n > 0 else math.nan


# ----------------------------------------------------------------------------- gate view
class GateTarget(NamedTuple):
    """One seed 003 target: ``passed`` is ``None`` when the metric is undefined."""

    metric: str
    value: float
    target: float
    comparison: str
    passed: bool | None


@dataclass(frozen=True)
class GateOutcome:
    """Workload, screening and alert metrics of the three-state gate (contract §6).

    Attributes
    ----------
    n, n_pos : int
        Queries and queries with evidence (``has_evidence = 1``).
    state_counts : tuple of int
        Queries per state, indexed by :class:`GateState` (NEG, UNCERTAIN, POS).
    label_counts : tuple of tuple of int
        ``label_counts[state][y]``: queries per state and gold label.
    neg_rate, uncertain_rate, pos_rate : float
        State shares of N.
    alert_rate_per_1000 : float
        POS / N × 1000.
    screening_sensitivity : float
        Positives not in NEG / positives (NaN without positives).
    screening_fn_per_1000 : float
        Positives in NEG / N × 1000.
    alert_precision : float
        Positives in POS / POS (NaN without POS).
    fractions : dict
        Metric name -> ``(k, n, scale)``: the counts behind each value.
    intervals : dict
        Metric name -> Wilson 95 % ``(lo, hi)`` (scaled like the value), ``None`` if undefined.
    """

    n: int
    n_pos: int
    state_counts: tuple[int, int, int]
    label_counts: tuple[tuple[int, int], ...]
    neg_rate: float
    uncertain_rate: float
    pos_rate: float
    alert_rate_per_1000: float
    screening_sensitivity: float
    screening_fn_per_1000: float
    alert_precision: float
    fractions: dict = field(repr=False)
    intervals: dict = field(repr=False)

    METRICS = ("neg_rate", "uncertain_rate", "pos_rate", "alert_rate_per_1000",
               "screening_sensitivity", "screening_fn_per_1000", "alert_precision")

    @property
    def count_neg(self) -> int:
        """Queries in state NEG."""
        return self.state_counts[GateState.NEG]

    @property
    def count_uncertain(self) -> int:
        """Queries in state UNCERTAIN."""
        return self.state_counts[GateState.UNCERTAIN]

    @property
    def count_pos(self) -> int:
        """Queries in state POS."""
        return self.state_counts[GateState.POS]

    @property
    def n_negative(self) -> int:
        """Queries without evidence (``has_evidence = 0``)."""
        return self.n - self.n_pos

    @property
    def missed(self) -> int:
        """Positives in NEG (screening false negatives)."""
        return self.label_counts[GateState.NEG][1]

    def count(self, state, y: int | None = None) -> int:
        """Queries in ``state`` (a :class:`GateState` or its name), optionally with label y."""
        s = GateState[state] if isinstance(state, str) else GateState(state)
        row = self.label_counts[s]
        return int(sum(row)) if y is None else int(row[int(y)])

    def ci(self, name: str) -> tuple[float, float] | None:
        """Wilson 95 % interval of metric ``name``; ``None`` when it is undefined."""
        if name not in self.intervals:
            raise KeyError(f"no gate metric {name!r}; have: {', '.join(self.METRICS)}")
        return self.intervals[name]

    def targets(self) -> list[GateTarget]:
        """Seed 003 targets: screening sensitivity ≥ 0.995, FN / 1000 ≤ 5, precision ≥ 0.90."""
        out = []
        for metric, target, comparison in GATE_TARGETS:
            value = getattr(self, metric)
            if math.isnan(value):
                passed = None
            elif comparison == ">=":
                passed = bool(value >= target)
            else:
                passed = bool(value <= target)
            out.append(GateTarget(metric, value, target, comparison, passed))
        return out

    def as_dict(self) -> dict:
        """Values, intervals (``<name>_ci``) and counts, JSON-ready apart from NaN."""
        out: dict = {"n": self.n, "n_pos": self.n_pos,
                     "count_neg": self.count_neg, "count_uncertain": self.count_uncertain,
                     "count_pos": self.count_pos, "missed": self.missed}
        for name in self.METRICS:
            out[name] = getattr(self, name)
            out[f"{name}_ci"] = self.intervals[name]
        return out


def gate_summary(y, states) -> GateOutcome:
    """Rates, screening and alert metrics of gate states (contract §6, ``all_queries``).

    Parameters
    ----------
    y : array-like of 0/1
        ``has_evidence`` per query.
    states : array-like of int
        :class:`GateState` codes from :func:`assign_states`.

    Examples
    --------
    y = (1, 1, 0, 0, 1, 0) with states (POS, UNCERTAIN, NEG, POS, NEG, UNCERTAIN): NEG 2,
    UNCERTAIN 2, POS 2; screening sensitivity = 2 / 3 (one positive in NEG), FN per 1000 =
    1 / 6 × 1000 = 166.7, alert precision = 1 / 2.

    >>> g = gate_summary([1, 1, 0, 0, 1, 0], [2, 1, 0, 2, 0, 1])
    >>> g.screening_sensitivity, g.alert_precision
    (0.6666666666666666, 0.5)
    """
    pred = states_to_prediction(states)
    table = outcome_table(y, pred)
    # rows of the outcome table -> gate states: abstain = UNCERTAIN, 0 = NEG, 1 = POS
    by_state = table[[1, 0, 2]]
    fractions = {name: _scalar(f) for name, f in outcomes.gate_fractions(table[None]).items()
                 if name in GateOutcome.METRICS}
    values = {name: _ratio(*f) for name, f in fractions.items()}
    return GateOutcome(
        n=int(table.sum()), n_pos=int(table[:, 1].sum()),
        state_counts=tuple(int(c) for c in by_state.sum(axis=1)),
        label_counts=tuple((int(a), int(b)) for a, b in by_state),
        fractions=fractions, intervals=_wilson_all(fractions), **values)


def _scalar(fraction) -> tuple[int, int, float]:
    k, n, scale = fraction
    return int(k[0]), int(n[0]), scale


@dataclass(frozen=True)
class PerThousand:
    """The gate in words: outcomes per 1,000 queries screened (contract §6).

    ``flagged`` = POS, ``sent_to_review`` = UNCERTAIN, ``auto_cleared`` = NEG, ``missed`` =
    queries with evidence that were auto-cleared; each per 1,000 queries (NaN when N = 0).
    """

    n: int
    flagged: float
    sent_to_review: float
    auto_cleared: float
    missed: float

    def sentence(self, unit: str = "queries") -> str:
        """E.g. ``"Per 1,000 queries screened: 52.0 flagged, …, 0.7 missed."``"""
        if self.n == 0:
            return f"No {unit} screened."
        return (f"Per 1,000 {unit} screened: {self.flagged:,.1f} flagged, "
                f"{self.sent_to_review:,.1f} sent to review, {self.auto_cleared:,.1f} "
                f"auto-cleared, {self.missed:,.1f} missed (evidence among the auto-cleared).")


def per_thousand(outcome: GateOutcome) -> PerThousand:
    """Flagged, sent to review, auto-cleared and missed per 1,000 queries (contract §6)."""
    n = outcome.n
    return PerThousand(n=n, flagged=_ratio(outcome.count_pos, n, 1000.0),
                       sent_to_review=_ratio(outcome.count_uncertain, n, 1000.0),
                       auto_cleared=_ratio(outcome.count_neg, n, 1000.0),
                       missed=_ratio(outcome.missed, n, 1000.0))


# ------------------------------------------------------------------------ abstention view
#: Abstention metrics: attribute name -> seed 004 key template ({pos} / {neg} = class names);
#: read-only.
ABSTENTION_KEYS = MappingProxyType({
    "coverage": "coverage",
    "abstain_rate": "abstain_rate",
    "abstain_rate_pos": "abstain_rate_{pos}",
    "abstain_rate_neg": "abstain_rate_{neg}",
    "coverage_pos": "coverage_{pos}",
    "coverage_neg": "coverage_{neg}",
    "accuracy": "accuracy",
    "accuracy_answered": "accuracy_answered",
    "precision_pos": "precision_{pos}",
    "recall_pos": "recall_{pos}",
    "f1_pos": "f1_{pos}",
    "precision_neg": "precision_{neg}",
    "recall_neg": "recall_{neg}",
    "f1_neg": "f1_{neg}",
    "balanced_accuracy": "balanced_accuracy",
    "mcc": "mcc",
    "slip_rate": "{pos}_slip_rate",
    "false_flag_rate": "{neg}_false_flag_rate",
    "catch_rate": "{pos}_catch_rate",
    "pass_rate": "{neg}_pass_rate",
    "ece": "ece",
    "brier": "brier",
})


@dataclass(frozen=True)
class AbstentionMetrics:
    """Seed 004 metrics of a classifier that may abstain (contract §6, abstention view).

    TP / FP / TN / FN count *answered* samples only; abstentions are counted apart
    (``abstain_pos``, ``abstain_neg``). ``accuracy`` counts abstentions as wrong,
    ``accuracy_answered`` does not. Per-class precision / recall / F1, balanced accuracy and MCC
    are over answered samples (seed 004: ``precision_neg = TN / (TN + FN)``,
    ``recall_neg = TN / (TN + FP)``); ``slip_rate = FN / N_pos``, ``false_flag_rate = FP /
    N_neg``, ``catch_rate = TP / N_pos``, ``pass_rate = TN / N_neg`` are over all samples of the
    class. ``ece`` (10 equal-width bins, top-label: confidence of the given answer vs whether
    it is correct) and ``brier`` (mean of (confidence - correct)²) are over answered samples
    and NaN without a confidence. Undefined values are NaN, and :meth:`reason` /
    :meth:`undefined` say why.

    The ratios of the answered samples are those of their :class:`Confusion` (:attr:`confusion`:
    ``precision_pos`` is its precision, ``recall_neg`` its specificity, ...), defined once in
    :mod:`metrics_core.metrics.confusion`.

    Attribute names are generic (``precision_pos``); :meth:`as_dict` gives the seed 004 keys
    with the class names substituted (``precision_fake``, ``fake_slip_rate``, ...).
    """

    n: int
    n_pos: int
    n_neg: int
    tp: int
    fp: int
    tn: int
    fn: int
    abstain_pos: int
    abstain_neg: int
    coverage: float
    abstain_rate: float
    abstain_rate_pos: float
    abstain_rate_neg: float
    coverage_pos: float
    coverage_neg: float
    accuracy: float
    accuracy_answered: float
    slip_rate: float
    false_flag_rate: float
    catch_rate: float
    pass_rate: float
    ece: float = math.nan
    brier: float = math.nan
    positive_name: str = "fake"
    negative_name: str = "real"
    fractions: dict = field(default_factory=dict, repr=False)
    intervals: dict = field(default_factory=dict, repr=False)

    @cached_property
    def confusion(self) -> Confusion:
        """The confusion counts of the answered samples (abstentions left out) and their
        ratios."""
        return Confusion(self.tp, self.fp, self.tn, self.fn)

    @property
    def precision_pos(self) -> float:
        return self.confusion.precision

    @property
    def recall_pos(self) -> float:
        return self.confusion.sensitivity

    @property
    def f1_pos(self) -> float:
        return self.confusion.f1

    @property
    def precision_neg(self) -> float:
        return self.confusion.npv

    @property
    def recall_neg(self) -> float:
        return self.confusion.specificity

    @property
    def f1_neg(self) -> float:
        return self.confusion.of_negative_class().f1

    @property
    def balanced_accuracy(self) -> float:
        return self.confusion.balanced_accuracy

    @property
    def mcc(self) -> float:
        return self.confusion.mcc

    @property
    def answered(self) -> int:
        return self.confusion.n

    @property
    def abstain(self) -> int:
        return self.abstain_pos + self.abstain_neg

    def ci(self, name: str) -> tuple[float, float] | None:
        """Wilson 95 % interval of a proportion (generic attribute name); ``None`` otherwise."""
        if name not in ABSTENTION_KEYS:
            raise KeyError(f"no abstention metric {name!r}; have: {', '.join(ABSTENTION_KEYS)}")
        return self.intervals.get(name)

    def reason(self, name: str, positive_name: str | None = None,
               negative_name: str | None = None) -> str | None:
        """Why metric ``name`` (generic attribute name) is undefined on these samples, in the
        class names; ``None`` when it has a value (an undefined value is never silent)."""
        if name not in ABSTENTION_KEYS:
            raise KeyError(f"no abstention metric {name!r}; have: {', '.join(ABSTENTION_KEYS)}")
        if not math.isnan(getattr(self, name)):
            return None
        return _why_undefined(self, name, positive_name or self.positive_name,
                              negative_name or self.negative_name)

    def undefined(self, positive_name: str | None = None,
                  negative_name: str | None = None) -> dict[str, str]:
        """Seed 004 key -> why it is undefined, for every undefined metric."""
        out = {}
        for name in ABSTENTION_KEYS:
            why = self.reason(name, positive_name, negative_name)
            if why is not None:
                out[self.key(name, positive_name, negative_name)] = why
        return out

    def key(self, name: str, positive_name: str | None = None,
            negative_name: str | None = None) -> str:
        """Seed 004 key of a generic attribute, e.g. ``slip_rate`` -> ``fake_slip_rate``."""
        return ABSTENTION_KEYS[name].format(pos=positive_name or self.positive_name,
                                            neg=negative_name or self.negative_name)

    def counts(self, positive_name: str | None = None,
               negative_name: str | None = None) -> dict[str, int]:
        pos = positive_name or self.positive_name
        neg = negative_name or self.negative_name
        return {"n": self.n, f"n_{pos}": self.n_pos, f"n_{neg}": self.n_neg,
                "tp": self.tp, "fp": self.fp, "tn": self.tn, "fn": self.fn,
                "answered": self.answered, "abstain": self.abstain,
                f"abstain_{pos}": self.abstain_pos, f"abstain_{neg}": self.abstain_neg}

    def as_dict(self, positive_name: str | None = None, negative_name: str | None = None, *,
                with_ci: bool = True) -> dict:
        """Seed 004 keys -> values, plus ``<key>_ci`` (Wilson ``(lo, hi)`` or ``None``) and counts.

        Class names default to the ones the metrics were computed with (``fake`` / ``real``).
        """
        out: dict = {}
        for name in ABSTENTION_KEYS:
            key = self.key(name, positive_name, negative_name)
            out[key] = getattr(self, name)
            if with_ci:
                out[f"{key}_ci"] = self.intervals.get(name)
        out.update(self.counts(positive_name, negative_name))
        return out


#: Metrics over all samples of one class (generic name -> "pos" / "neg").
_OF_CLASS = MappingProxyType({"abstain_rate_pos": "pos", "coverage_pos": "pos",
                              "slip_rate": "pos", "catch_rate": "pos",
                              "abstain_rate_neg": "neg", "coverage_neg": "neg",
                              "false_flag_rate": "neg", "pass_rate": "neg"})


def _why_undefined(m: AbstentionMetrics, name: str, pos: str, neg: str) -> str:
    """The reason an abstention metric is undefined (0/0), naming what the samples lack."""
    if m.n == 0:
        return "no samples"
    no_answer = "no answered sample (every sample abstained)"
    answered = {"pos": m.tp + m.fn, "neg": m.tn + m.fp}
    answers = {"pos": m.tp + m.fp, "neg": m.tn + m.fn}
    names = {"pos": pos, "neg": neg}

    def no_answered(side: str) -> str:
        count = m.n_pos if side == "pos" else m.n_neg
        return (f"no {names[side]} sample" if count == 0
                else f"every {names[side]} sample abstained")

    if name in _OF_CLASS:
        return f"no {names[_OF_CLASS[name]]} sample (0/0)"
    if name in ("accuracy_answered", "ece", "brier") and m.answered == 0:
        return no_answer
    if name in ("ece", "brier"):
        return "no confidence given"
    side = name.rsplit("_", 1)[-1]
    if name.startswith("recall_"):
        return f"{no_answered(side)} (0/0)"
    if name.startswith("precision_"):
        return f"no {names[side]} answer (0/0)"
    if name.startswith("f1_"):
        return f"no {names[side]} answer and {no_answered(side)} (0/0)"
    if name == "balanced_accuracy":
        lacking = [no_answered(s) for s in ("pos", "neg") if answered[s] == 0]
        return f"{'; '.join(lacking)} (needs answered samples of both classes)"
    if name == "mcc":
        lacking = [no_answered(s) for s in ("pos", "neg") if answered[s] == 0]
        lacking += [f"no {names[s]} answer" for s in ("pos", "neg") if answers[s] == 0]
        return (f"{'; '.join(lacking)} (needs answered samples of both classes and answers "
                "of both)")
    return "undefined on these samples (0/0)"


def abstention_metrics(y, pred, *, confidence=None, positive_name: str = "fake",
                       negative_name: str = "real") -> AbstentionMetrics:
    """Seed 004 metrics of a three-way prediction (contract §6, abstention view).

    Parameters
    ----------
    y : array-like of 0/1
        Gold labels (1 = positive class, e.g. fake / has evidence).
    pred : array-like of {1, 0, -1}
        1 = predict positive, 0 = predict negative, -1 = abstain. For the gate use
        ``states_to_prediction(states)``.
    confidence : array-like of float in [0, 1], optional
        Confidence of each given answer (its top-label probability), for ``ece`` and
        ``brier``; entries of abstained samples are ignored (and may be NaN).
    positive_name, negative_name : str
        Class names used by :meth:`AbstentionMetrics.as_dict`.

    Examples
    --------
    y = (1, 1, 1, 0, 0, 0, 0) and pred = (1, 0, -1, 1, 0, 0, -1): TP 1, FN 1, FP 1, TN 2,
    abstentions 1 + 1. coverage = 5 / 7, accuracy = 3 / 7, accuracy_answered = 3 / 5,
    precision_pos = 1 / 2, precision_neg = 2 / 3, slip_rate = 1 / 3, false_flag_rate = 1 / 4.

    >>> m = abstention_metrics([1, 1, 1, 0, 0, 0, 0], [1, 0, -1, 1, 0, 0, -1])
    >>> (m.tp, m.fn, m.fp, m.tn), round(m.accuracy_answered, 3), m.as_dict()["fake_slip_rate"]
    ((1, 1, 1, 2), 0.6, 0.3333333333333333)
    """
    table = outcome_table(y, pred)
    (abstain_neg, abstain_pos), (tn, fn), (fp, tp) = (tuple(int(v) for v in row) for row in table)
    fractions = {name: _scalar(f)
                 for name, f in outcomes.abstention_fractions(table[None]).items()}
    # The answered samples' ratios are properties of their confusion (contract §4).
    values = {name: _ratio(*f) for name, f in fractions.items()
              if name not in outcomes.ANSWERED_RATIOS}
    n = int(table.sum())
    n_pos, n_neg = tp + fn + abstain_pos, tn + fp + abstain_neg
    ece_value, brier_value = _calibration(y, pred, confidence)
    return AbstentionMetrics(
        n=n, n_pos=n_pos, n_neg=n_neg, tp=tp, fp=fp, tn=tn, fn=fn, abstain_pos=abstain_pos,
        abstain_neg=abstain_neg, ece=ece_value, brier=brier_value,
        positive_name=str(positive_name), negative_name=str(negative_name),
        fractions=fractions, intervals=_wilson_all(fractions), **values)


def _calibration(y, pred, confidence) -> tuple[float, float]:
    """Top-label ECE and Brier of the answered samples (seed 004); NaN without confidence."""
    if confidence is None:
        return math.nan, math.nan
    pred = np.asarray(pred)
    confidence = np.asarray(confidence, dtype=np.float64)
    if confidence.shape != pred.shape:
        raise ValueError(f"confidence must have one value per sample ({pred.shape[0]}), "
                         f"got shape {confidence.shape}")
    answered = pred != ABSTAIN
    conf = confidence[answered]
    bad = ~((conf >= 0) & (conf <= 1))
    if bad.any():
        raise ValueError("confidence must be in [0, 1] for every answered sample; "
                         f"{int(bad.sum())} value(s) are not")
    if conf.size == 0:
        return math.nan, math.nan
    correct = (pred[answered] == np.asarray(y)[answered]).astype(np.int8)
    return float(calibration.ece(correct, conf)), float(calibration.brier(correct, conf))
