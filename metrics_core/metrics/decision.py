"""Decision support: thresholds found under a constraint, without leakage, and decision curves.

- :func:`find_threshold` answers "largest τ_neg with screening sensitivity ≥ 0.995", "smallest
  τ_pos with alert precision ≥ 0.90", "smallest τ with FPR ≤ 5 %" (the largest TPR there) or
  "largest τ_neg with missed positives per 1,000 ≤ 5" (the fewest reviews). The candidate
  thresholds are the observed probabilities and 0 and 1; the answer is exact: every candidate is
  evaluated from counts below it in the sorted probabilities (one binary search each).
- :func:`tune` applies targets overall or per criterion, optionally nested (thresholds chosen on
  the other folds and evaluated on the held-out one, or chosen on TUNE and reported on TEST), and
  gives each threshold a bootstrap interval that re-selects it inside every replicate, so the
  optimism of picking a threshold on the data it is reported on shows.
- :func:`decision_curve`: net benefit ``TP/N − FP/N · t / (1 − t)`` (positive iff p ≥ t) of the
  model, treat-all and treat-none, and the interventions avoided per 100 (TRIPOD+AI, §4).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import pandas as pd

from metrics_core.metrics.classification import checked_order
from metrics_core.metrics.risk_control import threshold_subsets
from metrics_core.metrics.uncertainty import bootstrap_cis
from metrics_core.progress import stage

__all__ = ["FINDERS", "Target", "TuneResult", "decision_curve", "find_threshold", "tune"]

#: What each target sets and which end of the feasible thresholds it prefers:
#: metric -> {operator: (parameter, prefer)}.
FINDERS = MappingProxyType({
    "screening_sensitivity": {">=": ("tau_neg", "largest")},
    "screening_fn_per_1000": {"<=": ("tau_neg", "largest")},
    "alert_precision": {">=": ("tau_pos", "smallest")},
    "sensitivity": {">=": ("threshold", "largest")},
    "specificity": {">=": ("threshold", "smallest")},
    "fpr": {"<=": ("threshold", "smallest")},
})
_TARGET = re.compile(r"^\s*([a-z_0-9]+)\s*(>=|<=)\s*([-+0-9.eE]+)\s*$")
DECISION_THRESHOLDS = tuple(np.round(np.arange(0.01, 0.995, 0.01), 2).tolist())


@dataclass(frozen=True)
class Target:
    """A constraint such as ``screening_sensitivity>=0.995`` and what it sets."""

    metric: str
    op: str
    value: float

    @classmethod
    def parse(cls, text: str) -> Target:
        """``"alert_precision>=0.9"`` -> Target (ValueError naming the known forms)."""
        m = _TARGET.match(text)
        if not m or m.group(1) not in FINDERS or m.group(2) not in FINDERS[m.group(1)]:
            known = ", ".join(f"{k}{op}x" for k, ops in FINDERS.items() for op in ops)
            raise ValueError(f"target {text!r} is not understood; known forms: {known}")
        value = float(m.group(3))
        if not math.isfinite(value):
            raise ValueError(f"target {text!r}: the value must be a finite number")
        return cls(m.group(1), m.group(2), value)

    @property
    def parameter(self) -> str:
        return FINDERS[self.metric][self.op][0]

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.value:g}"


def _candidates(p: np.ndarray) -> np.ndarray:
    return np.union1d(np.unique(p), [0.0, 1.0])


def _metric_at(metric: str, y, p_sorted_all, w_all, w_pos, cand) -> np.ndarray:
    """The metric at every candidate threshold from weighted counts below it.

    ``w_all`` / ``w_pos``: cumulative weights of all / positive queries in sorted-p order,
    shape (..., n + 1) with a leading 0.
    """
    below = np.searchsorted(p_sorted_all, cand, side="left")  # p < τ
    n, pos = w_all[..., -1:], w_pos[..., -1:]
    n_below, pos_below = w_all[..., below], w_pos[..., below]
    neg, neg_below = n - pos, n_below - pos_below
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "screening_sensitivity": (pos - pos_below) / pos,
            "screening_fn_per_1000": pos_below / n * 1000.0,
            "alert_precision": (pos - pos_below) / (n - n_below),
            "sensitivity": (pos - pos_below) / pos,
            "specificity": neg_below / neg,
            "fpr": (neg - neg_below) / neg,
        }[metric]


def _choose(values: np.ndarray, cand: np.ndarray, target: Target) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``values`` (one row per replicate): the chosen threshold and its value."""
    ok = values >= target.value - 1e-12 if target.op == ">=" else values <= target.value + 1e-12
    ok &= ~np.isnan(values)
    prefer = FINDERS[target.metric][target.op][1]
    idx = (cand.size - 1 - np.argmax(ok[..., ::-1], axis=-1)) if prefer == "largest" \
        else np.argmax(ok, axis=-1)
    feasible = ok.any(axis=-1)
    chosen = np.where(feasible, cand[idx], np.nan)
    achieved = np.where(feasible, np.take_along_axis(values, idx[..., None], -1)[..., 0], np.nan)
    return chosen, achieved


def _sorted(y, p):
    order = np.argsort(p, kind="stable")
    return order, p[order], y[order]


def find_threshold(y, p, target: Target | str) -> tuple[float | None, float | None]:
    """The exact threshold meeting ``target`` and the value it achieves (None if infeasible).

    >>> find_threshold([0, 0, 1, 1, 1], [0.1, 0.4, 0.35, 0.8, 0.9], "screening_sensitivity>=1")
    (0.35, 1.0)
    >>> find_threshold([0, 0, 1, 1, 1], [0.1, 0.4, 0.35, 0.8, 0.9], "alert_precision>=1")
    (0.8, 1.0)
    """
    target = Target.parse(target) if isinstance(target, str) else target
    y = np.asarray(y, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    _, ps, ys = _sorted(y, p)
    cum_all = np.concatenate([[0.0], np.cumsum(np.ones_like(ys))])
    cum_pos = np.concatenate([[0.0], np.cumsum(ys)])
    cand = _candidates(p)
    chosen, achieved = _choose(_metric_at(target.metric, ys, ps, cum_all, cum_pos, cand),
                               cand, target)
    return (None, None) if np.isnan(chosen) else (float(chosen), float(achieved))


@dataclass(frozen=True)
class TuneResult:
    """One target's threshold on one subset, with its re-selected bootstrap interval.

    ``value`` is ``None`` when no threshold (or no gate with τ_neg ≤ τ_pos) meets the targets;
    ``reason`` then says why. ``achieved`` is the target's metric at ``value`` on the rows it
    is reported on: the subset itself, or the held-out fold / TEST split (``evaluated_on``),
    where ``met`` says whether it still meets the target. ``note`` tells when the gate's pair
    differs from the thresholds each target would get alone.
    """

    target: str
    parameter: str
    value: float | None
    achieved: float | None
    subset: str
    n: int
    ci95: tuple[float, float] | None = None
    evaluated_on: str | None = None
    met: bool | None = None
    reason: str | None = None
    note: str | None = None

    def to_dict(self) -> dict:
        def clean(v):
            return None if v is None or not math.isfinite(v) else float(v)

        return {"target": self.target, "parameter": self.parameter, "value": clean(self.value),
                "achieved": clean(self.achieved), "feasible": self.value is not None,
                "defined": self.value is not None, "met": self.met, "reason": self.reason,
                "note": self.note,
                "ci95": None if self.ci95 is None else [clean(v) for v in self.ci95],
                "subset": self.subset, "n": int(self.n), "evaluated_on": self.evaluated_on}


_GATE = ("tau_neg", "tau_pos")


def _feasible(values: np.ndarray, target: Target) -> np.ndarray:
    ok = values >= target.value - 1e-12 if target.op == ">=" else values <= target.value + 1e-12
    return ok & ~np.isnan(values)


def _first(mask: np.ndarray) -> np.ndarray:
    """Index of the first True along the last axis (-1 where none)."""
    return np.where(mask.any(axis=-1), np.argmax(mask, axis=-1), -1)


def _last(mask: np.ndarray) -> np.ndarray:
    """Index of the last True along the last axis (-1 where none)."""
    size = mask.shape[-1]
    return np.where(mask.any(axis=-1), size - 1 - np.argmax(mask[..., ::-1], axis=-1), -1)


def _select(targets: list[Target], values: list[np.ndarray]) -> list[np.ndarray]:
    """The candidate index each target sets (-1: none), for every row of ``values``.

    ``values[i]`` holds target i's metric at every candidate threshold (ascending), one row
    per replicate. A ``threshold`` target is chosen alone, at its preferred end. The gate's
    targets are chosen together, as one gate: τ_neg meets every τ_neg target, τ_pos every
    τ_pos target, and τ_neg ≤ τ_pos. Among such pairs: the smallest τ_pos, then the largest
    τ_neg not above it (exact over the candidates). When the two ends chosen alone already
    satisfy τ_neg ≤ τ_pos this is that pair; otherwise τ_neg comes down to where the gate
    allows it (with τ_neg's targets' feasible values closed downwards, as screening
    sensitivity and missed positives per 1,000 are, τ_neg = τ_pos). When one end meets its
    targets nowhere, the other is chosen alone (the first has no threshold, with the reason).
    """
    shape = values[0].shape
    size = shape[-1]
    out: list[np.ndarray] = [np.full(shape[:-1], -1)] * len(targets)
    neg_ok, pos_ok = np.ones(shape, dtype=bool), np.ones(shape, dtype=bool)
    neg, pos = [], []
    for i, t in enumerate(targets):
        ok = _feasible(values[i], t)
        if t.parameter == "tau_neg":
            neg.append(i)
            neg_ok &= ok
        elif t.parameter == "tau_pos":
            pos.append(i)
            pos_ok &= ok
        else:
            out[i] = _last(ok) if FINDERS[t.metric][t.op][1] == "largest" else _first(ok)
    index = np.arange(size)
    a, b = _last(neg_ok), _first(pos_ok)  # each end alone
    if neg and pos:  # where both ends exist, one gate
        lowest = _first(neg_ok)[..., None]
        both = (a >= 0) & (b >= 0)
        b = np.where(both, _first(pos_ok & (index >= lowest)), b)
        a = np.where(both, _last(neg_ok & (index <= b[..., None]) & (b[..., None] >= 0)), a)
    for i in neg:
        out[i] = a
    for i in pos:
        out[i] = b
    return out


def _values(targets, ps, ys, cum_all, cum_pos, cand) -> list[np.ndarray]:
    return [_metric_at(t.metric, ys, ps, cum_all, cum_pos, cand) for t in targets]


def _why_none(targets: list[Target], values: list[np.ndarray], cand, i: int) -> str:
    """Why target ``i`` has no threshold on these rows (one row of ``values``)."""
    t = targets[i]
    if t.parameter not in _GATE:
        return f"no threshold meets {t}"
    same = [j for j, u in enumerate(targets) if u.parameter == t.parameter]
    alone = np.logical_and.reduce([_feasible(values[j], targets[j]) for j in same])
    if not alone.any():
        return "no " + ("τ_neg" if t.parameter == "tau_neg" else "τ_pos") + " meets " + \
            " and ".join(str(targets[j]) for j in same)
    neg = [j for j, u in enumerate(targets) if u.parameter == "tau_neg"]
    pos = [j for j, u in enumerate(targets) if u.parameter == "tau_pos"]
    neg_ok = np.logical_and.reduce([_feasible(values[j], targets[j]) for j in neg])
    pos_ok = np.logical_and.reduce([_feasible(values[j], targets[j]) for j in pos])
    return (f"no valid gate (τ_neg ≤ τ_pos) meets the targets: the smallest τ_neg meeting "
            f"{' and '.join(str(targets[j]) for j in neg)} is "
            f"{cand[np.argmax(neg_ok)]:.6g}, the largest τ_pos meeting "
            f"{' and '.join(str(targets[j]) for j in pos)} is "
            f"{cand[len(cand) - 1 - np.argmax(pos_ok[::-1])]:.6g}")


def _choose_on(y, p, targets) -> list[tuple[float | None, float | None, str | None, str | None]]:
    """``(threshold, achieved, reason, note)`` of every target on rows ``(y, p)``."""
    _, ps, ys = _sorted(y, p)
    cum_all = np.concatenate([[0.0], np.cumsum(np.ones_like(ys))])
    cum_pos = np.concatenate([[0.0], np.cumsum(ys)])
    cand = _candidates(p)
    values = _values(targets, ps, ys, cum_all, cum_pos, cand)
    chosen = _select(targets, values)
    out = []
    for i, t in enumerate(targets):
        idx = int(chosen[i])
        if idx < 0:
            out.append((None, None, _why_none(targets, values, cand, i), None))
            continue
        note = None
        if t.parameter in _GATE:
            alone = int(_select([t], [values[i]])[0])
            if alone != idx:
                note = (f"{'τ_neg' if t.parameter == 'tau_neg' else 'τ_pos'} "
                        f"{cand[alone]:.6g} alone; {cand[idx]:.6g} keeps τ_neg ≤ τ_pos with "
                        "the other targets met")
        out.append((float(cand[idx]), float(values[i][idx]), None, note))
    return out


def _reselected_cis(y, p, targets, n_resamples, seed,
                    progress=None) -> list[tuple[float, float] | None]:
    """Percentile interval of each threshold re-chosen (jointly) inside every replicate."""
    order, ps, ys = _sorted(y, p)
    cand = _candidates(p)

    def statistic(w):
        ws = w[:, order]
        cum_all = np.concatenate([np.zeros((w.shape[0], 1)), np.cumsum(ws, axis=1)], axis=1)
        cum_pos = np.concatenate([np.zeros((w.shape[0], 1)), np.cumsum(ws * ys, axis=1)], axis=1)
        chosen = _select(targets, _values(targets, ps, ys, cum_all, cum_pos, cand))
        return np.stack([np.where(c >= 0, cand[np.maximum(c, 0)], np.nan) for c in chosen],
                        axis=1)

    cis = bootstrap_cis({"t": statistic}, y.size, n_resamples=n_resamples, seed=seed,
                        progress=progress)["t"]
    return [(c.lo, c.hi) if c.defined else None for c in cis]


def _evaluate_at(y, p, target: Target, threshold: float) -> float:
    _, ps, ys = _sorted(y, p)
    cum_all = np.concatenate([[0.0], np.cumsum(np.ones_like(ys))])
    cum_pos = np.concatenate([[0.0], np.cumsum(ys)])
    return float(_metric_at(target.metric, ys, ps, cum_all, cum_pos, np.array([threshold]))[0])


def _met(target: Target, value: float | None) -> bool | None:
    if value is None or not math.isfinite(value):
        return None
    return bool(_feasible(np.array([value]), target)[0])


def tune(ds, targets, *, by: str | None = None, nested: str | None = None,
         bootstrap: int = 0, seed: int = 0, progress=None) -> list[TuneResult]:
    """Thresholds for ``targets`` on a :class:`Dataset`, overall or ``by="criterion"``.

    The gate's targets (τ_neg: screening sensitivity, missed positives per 1,000; τ_pos: alert
    precision) are met together by one gate with τ_neg ≤ τ_pos (:func:`_select`), or get no
    threshold with the reason; a ``threshold`` target (sensitivity, specificity, FPR at τ) is
    met alone. ``nested="folds"``: for each fold, choose on the other folds and evaluate on
    it (one result per fold and target, ``evaluated_on`` names it, ``met`` says whether the
    held-out value still meets the target); ``nested="split"``: choose on TUNE, report TEST.
    ``bootstrap`` resamples (of the rows the thresholds are chosen on) give each threshold an
    interval that re-selects the gate in every replicate; ``progress(done, total)`` is called
    during each (:mod:`metrics_core.progress`).
    """
    targets = [Target.parse(t) if isinstance(t, str) else t for t in targets]
    y, p = ds.y.astype(np.float64), ds.p.astype(np.float64)
    groups = threshold_subsets(ds, by)
    out: list[TuneResult] = []
    for subset, m in groups:
        pairs = ([(None, m, m)] if nested is None else _held_out_pairs(ds, m, nested))
        for name, train, test in pairs:
            chosen = _choose_on(y[train], p[train], targets)
            cis = (_reselected_cis(y[train], p[train], targets, bootstrap, seed,
                                   stage(progress, f"bootstrap of the thresholds ({subset}"
                                                   f"{'' if name is None else ', ' + name})"))
                   if bootstrap and any(c[0] is not None for c in chosen)
                   else [None] * len(targets))
            for t, (value, achieved, reason, note), ci in zip(targets, chosen, cis,
                                                              strict=True):
                if name is not None and value is not None:
                    achieved = _evaluate_at(y[test], p[test], t, value)
                out.append(TuneResult(str(t), t.parameter, value, achieved, subset,
                                      int(test.sum()), ci if value is not None else None,
                                      evaluated_on=name, met=_met(t, achieved),
                                      reason=reason, note=note))
    return out


def _held_out_pairs(ds, m, nested) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """``(name, choose-on rows, held-out rows)`` within mask ``m``: each fold held out in turn
    (``nested="folds"``), or TEST held out with TUNE to choose on (``nested="split"``)."""
    if nested == "folds":
        if ds.fold is None:
            raise ValueError("nested='folds' needs a fold column")
        return [(f"fold {f}", m & (ds.fold != f), m & (ds.fold == f))
                for f in np.unique(ds.fold[m])]
    if nested == "split":
        if ds.split is None:
            raise ValueError("nested='split' needs a split column (TUNE / TEST)")
        split = np.char.upper(ds.split.astype(str))
        pairs = [("split TEST", m & (split == "TUNE"), m & (split == "TEST"))]
        if not pairs[0][1].any() or not pairs[0][2].any():
            raise ValueError("nested='split' needs both TUNE and TEST rows")
        return pairs
    raise ValueError(f"nested must be 'folds', 'split' or None; got {nested!r}")


def decision_curve(y, p, thresholds=DECISION_THRESHOLDS, *, order=None,
                   sample_weight=None) -> pd.DataFrame:
    """Net benefit of the model, treat-all and treat-none at each threshold probability.

    ``net_benefit = TP/N − FP/N · t / (1 − t)`` with positive iff ``p ≥ t``;
    ``interventions_avoided_per_100 = (NB_model − NB_all) / (t / (1 − t)) × 100``.
    ``order``: the rows ordered by ``p`` ascending, when the caller has it (the counts are
    sums of whole numbers, the same in any such order). ``sample_weight``: each row's count
    (rows standing for that many queries: the reduced Dask run's counts by distinct ``p``).

    >>> dc = decision_curve([1, 0, 1, 0], [0.9, 0.2, 0.6, 0.7], [0.5])
    >>> float(dc["net_benefit"][0]), float(dc["net_benefit_treat_all"][0])
    (0.25, 0.0)
    """
    y = np.asarray(y, dtype=np.float64)
    t = np.asarray(thresholds, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    w = np.ones((1, y.size)) if sample_weight is None else \
        np.asarray(sample_weight, dtype=np.float64)[None, :]
    nb, prevalence = net_benefit(y, p, t, w, checked_order(order, p))
    odds = t / (1.0 - t)
    treat_all = prevalence - (1.0 - prevalence) * odds
    return pd.DataFrame({"threshold": t, "net_benefit": nb[0], "net_benefit_treat_all": treat_all,
                         "net_benefit_treat_none": 0.0,
                         "interventions_avoided_per_100": (nb[0] - treat_all) / odds * 100.0})


def net_benefit(y, p, t, w, order=None) -> tuple[np.ndarray, float]:
    """Net benefit at thresholds ``t`` for each row of weights ``w`` (replicates x queries);
    ``order``: the rows ordered by ``p`` ascending (sorted here when None)."""
    if order is None:
        order = np.argsort(p, kind="stable")
    ps, ys = p[order], y[order]
    ws = w[:, order]
    # weights of queries with p >= t: suffix sums in sorted order
    tail_all = np.concatenate([np.cumsum(ws[:, ::-1], axis=1)[:, ::-1],
                               np.zeros((w.shape[0], 1))], axis=1)
    tail_pos = np.concatenate([np.cumsum((ws * ys)[:, ::-1], axis=1)[:, ::-1],
                               np.zeros((w.shape[0], 1))], axis=1)
    start = np.searchsorted(ps, t, side="left")
    n = tail_all[:, :1]
    tp, pred = tail_pos[:, start], tail_all[:, start]
    fp = pred - tp
    with np.errstate(invalid="ignore", divide="ignore"):
        nb = tp / n - fp / n * (t / (1.0 - t))
    prevalence = float(tail_pos[0, 0] / tail_all[0, 0]) if w.shape[0] == 1 and n[0, 0] else 0.0
    return nb, prevalence


def decision_curve_bands(y, p, *, n_resamples: int, seed: int, unit_of_row=None,
                         n_units: int | None = None, thresholds=DECISION_THRESHOLDS,
                         order=None) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap band (lo, hi) of the model's net benefit at each threshold
    (``order``: as for :func:`decision_curve`), from the replicates of
    :func:`metrics_core.metrics.curve_replicates.curve_replicates` (each resample's net benefit as
    :func:`net_benefit` computes it on the resample's weights)."""
    from metrics_core.metrics.curve_replicates import ScoreLayout, curve_replicates
    from metrics_core.metrics.uncertainty import Bootstrap, percentile_ci

    y = np.asarray(y, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    t = np.asarray(thresholds, dtype=np.float64)
    order = np.argsort(p, kind="stable") if order is None else checked_order(order, p)
    columns = order if unit_of_row is None else np.asarray(unit_of_row)[order]
    boot = Bootstrap(n_units or y.size, n_resamples=n_resamples, seed=seed,
                     batch_size=max(1, (1 << 20) // max(y.size, 1)))
    values = curve_replicates(ScoreLayout(p[order], y[order], columns), boot.count_batches(),
                              discrimination=False, thresholds=t)["net_benefit"]
    cis = [percentile_ci(values[:, j]) for j in range(t.size)]
    return np.array([c.lo for c in cis]), np.array([c.hi for c in cis])


# ----------------------------------------------------------------- deployment prevalence
#: Reprojected metrics: name -> (numerator cells, denominator cells, scale); cells are
#: (row, label) of the outcome table, rows 0 UNCERTAIN / abstain, 1 NEG / negative, 2 POS.
_REPROJECTED = MappingProxyType({
    "alert_precision": (((2, 1),), ((2, 0), (2, 1)), 1.0),
    "auto_cleared_npv": (((1, 0),), ((1, 0), (1, 1)), 1.0),
    "alert_rate_per_1000": (((2, 0), (2, 1)), None, 1000.0),
    "review_per_1000": (((0, 0), (0, 1)), None, 1000.0),
    "auto_cleared_per_1000": (((1, 0), (1, 1)), None, 1000.0),
    "screening_fn_per_1000": (((1, 1),), None, 1000.0),
})


def reproject(y, pred, prevalence: float) -> pd.DataFrame:
    """Predictive values and per-1,000 workload at a deployment prevalence ``prevalence``.

    Sensitivity-like rates (the share of positives, and of negatives, in each row of the
    outcome table) do not depend on prevalence; predictive values and workload do. Each metric
    is recomputed with positives weighted ``π / π₀`` and negatives ``(1 − π) / (1 − π₀)``
    (π₀ the data's prevalence), e.g. alert precision = s·π / (s·π + f·(1 − π)) with
    s = P(POS | positive), f = P(POS | negative).

    The interval is conservative: the metric at the ends of the two class-conditional Wilson
    intervals (it is monotone in each), so it covers the joint
    uncertainty of the rates. ``pred`` is 1 (POS), 0 (NEG) or -1 (UNCERTAIN), as in
    :func:`metrics_core.metrics.outcomes.outcome_counts`; a two-state prediction has no UNCERTAIN
    row.

    Positives: 1 of 2 POS (s = 1/2); negatives: 1 of 4 POS (f = 1/4). At π = 0.5 the alert
    precision is 0.25 / (0.25 + 0.125) = 2/3; at the data's π₀ = 1/3 it is 1/2.

    >>> t = reproject([1, 1, 0, 0, 0, 0], [1, 0, 1, 0, 0, -1], 0.5)
    >>> [round(float(t.loc["alert_precision", c]), 9) for c in ("deployment", "data")]
    [0.666666667, 0.5]
    """
    from metrics_core.metrics.outcomes import outcome_counts
    from metrics_core.metrics.uncertainty import wilson_interval

    if not 0.0 < prevalence < 1.0:
        raise ValueError(f"prevalence must be within (0, 1); got {prevalence}")
    table = outcome_counts(y, pred)[0].astype(np.float64)  # (3 rows, 2 labels)
    n_label = table.sum(axis=0)
    if (n_label == 0).any():
        raise ValueError("both classes are needed to reproject to another prevalence")
    pi0 = n_label[1] / n_label.sum()
    rates = table / n_label  # P(row | label)
    lo, hi = (np.asarray(b) for b in wilson_interval(table.astype(np.int64),
                                                    np.broadcast_to(n_label, table.shape)
                                                    .astype(np.int64)))

    def value(r, pi, name):
        num_cells, den_cells, scale = _REPROJECTED[name]
        weight = np.array([1.0 - pi, pi])

        def mass(cells):
            return sum(r[row, label] * weight[label] for row, label in cells)

        den = 1.0 if den_cells is None else mass(den_cells)
        return math.nan if den == 0 else scale * mass(num_cells) / den

    rows = []
    for name in _REPROJECTED:
        at_data = value(rates, pi0, name)
        at_target = value(rates, prevalence, name)
        # Metric is monotone in each cell rate: try the corners of the Wilson boxes.
        cells = sorted({c for group in _REPROJECTED[name][:2] if group for c in group})
        corners = []
        for mask in range(1 << len(cells)):
            r = rates.copy()
            for bit, (row, label) in enumerate(cells):
                r[row, label] = (hi if mask >> bit & 1 else lo)[row, label]
            corners.append(value(r, prevalence, name))
        corners = [c for c in corners if not math.isnan(c)]
        rows.append({"metric": name, "data": at_data, "deployment": at_target,
                     "ci_lo": min(corners) if corners else math.nan,
                     "ci_hi": max(corners) if corners else math.nan})
    out = pd.DataFrame(rows).set_index("metric")
    out.attrs.update(data_prevalence=float(pi0), deployment_prevalence=float(prevalence))
    return out


def _metric_of_decisions(metric: str, y: np.ndarray, d: np.ndarray) -> float:
    """A finder metric of 0/1 decisions ``d`` (positive / screened in / alert iff 1)."""
    tp = float(np.sum(d & (y == 1)))
    fp = float(np.sum(d & (y == 0)))
    fn = float(np.sum(~d & (y == 1)))
    tn = float(np.sum(~d & (y == 0)))
    num, den = {
        "screening_sensitivity": (tp, tp + fn), "sensitivity": (tp, tp + fn),
        "screening_fn_per_1000": (1000.0 * fn, tp + fp + fn + tn),
        "alert_precision": (tp, tp + fp), "specificity": (tn, tn + fp),
        "fpr": (fp, fp + tn)}[metric]
    return num / den if den > 0 else math.nan


def nested_summary(ds, target: Target | str, nested: str, *, by_criterion: bool = False
                   ) -> pd.DataFrame:
    """Leakage-free evaluation of a threshold finder: one row per held-out fold (or the TEST
    split) with the threshold chosen without it and the value it achieves on it, then
    ``mean ± std`` over folds (ddof = 1) and the **pooled** value (every held-out query decided
    with its own fold's threshold, all held-out queries counted together).

    With ``by_criterion`` each criterion gets its own thresholds (chosen on its own queries of
    the other folds); the pooled row then pools every criterion's held-out decisions.
    """
    target = Target.parse(target) if isinstance(target, str) else target
    y, p = ds.y.astype(np.int64), ds.p.astype(np.float64)
    groups = ([ds.criterion == c for c in ds.criteria] if by_criterion
              else [np.ones(ds.n_queries, dtype=bool)])
    decided = np.zeros(ds.n_queries, dtype=bool)
    held = np.zeros(ds.n_queries, dtype=bool)
    rows: dict[str, dict] = {}  # held-out name -> its rows (all groups) and thresholds
    for m in groups:
        for name, train, test in _held_out_pairs(ds, m, nested):
            value, _ = find_threshold(y[train], p[train], target)
            held |= test
            if value is not None:
                decided[test] = p[test] >= value
            row = rows.setdefault(name, {"test": np.zeros(ds.n_queries, dtype=bool),
                                         "thresholds": []})
            row["test"] |= test
            row["thresholds"].append(value)
    out = []
    for name, row in rows.items():
        test = row["test"]
        values = [t for t in row["thresholds"] if t is not None]
        out.append({"held_out": name, "n": int(test.sum()),
                    target.parameter: values[0] if len(row["thresholds"]) == 1 and values
                    else (None if not values else float(np.mean(values))),
                    "achieved": _metric_of_decisions(target.metric, y[test], decided[test])})
    frame = pd.DataFrame(out)
    achieved = frame["achieved"].to_numpy(dtype=float)
    ok = achieved[np.isfinite(achieved)]
    summary = pd.DataFrame([
        {"held_out": "mean ± std over folds", "n": int(frame["n"].sum()),
         target.parameter: None, "achieved": float(ok.mean()) if ok.size else math.nan,
         "std": float(ok.std(ddof=1)) if ok.size > 1 else math.nan},
        {"held_out": "pooled", "n": int(held.sum()), target.parameter: None,
         "achieved": _metric_of_decisions(target.metric, y[held], decided[held])}])
    return pd.concat([frame, summary], ignore_index=True)

