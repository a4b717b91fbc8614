"""Thresholds with a guarantee: Learn-then-Test risk control for the gate (contract §6).

The finder (:mod:`metrics_core.metrics.decision`) picks the threshold that meets a target *on
the data*. Here a threshold comes with a finite-sample, distribution-free statement about *new*
queries drawn like the calibration data (exchangeable with them):

    P( risk(τ̂) > α ) ≤ δ,

the probability taken over the draw of the calibration data (Angelopoulos, Bates, Candès,
Jordan, Lei 2021, "Learn then Test"). Each candidate τ is a null hypothesis ``risk(τ) > α``;
it is rejected with a valid p-value and a procedure that controls the family-wise error rate,
and τ̂ is chosen among the rejected.

- **Screening sensitivity ≥ s** (τ_neg; risk: missed positives among positives, α = 1 − s).
  The number of calibration positives below τ is Binomial(n_pos, risk(τ)) given n_pos, so
  the p-value is the binomial tail ``P(Bin(n_pos, α) ≤ k)`` (Hoeffding–Bentkus: the smaller of
  Hoeffding's bound and Bentkus's, which for a 0/1 loss is this binomial tail). The risk grows
  with τ, so the hypotheses are tested in a **fixed sequence** from τ = 0 upwards, at level δ
  each, stopping at the first that is not rejected. The p-value changes only at the calibration
  positives' scores, so testing every τ in [0, 1] and testing the observed scores give the
  same τ̂: the largest observed score whose p-value is ≤ δ.
- **Missed positives per 1,000 ≤ m** (τ_neg; risk: missed positives among all queries,
  α = m / 1000): the same, with n the number of queries.
- **Alert precision ≥ q** (τ_pos; risk: false alerts among alerts, α = 1 − q). Given the
  number of alerts at τ the false alerts are Binomial(n_alerts, risk(τ)): the same p-value,
  conditional on n_alerts. This risk is **not monotone** in τ in general, so a fixed sequence
  is not valid: the hypotheses are a fixed grid of thresholds (:data:`PRECISION_GRID`, chosen
  before the data, as a Bonferroni correction needs), each tested at δ / (grid size), and τ̂ is
  the smallest rejected one (the most alerts).
- **Both ends** (a gate): τ_neg ≤ τ_pos. When the guaranteed τ_neg is above the guaranteed
  τ_pos, τ_neg comes down to τ_pos: the missed-positive risk only falls as τ_neg falls, so the
  guarantee still holds.
- **Several guarantees** (targets, and with ``by="criterion"`` every criterion besides all
  queries): δ is split evenly across them (Bonferroni), so the probability that *any* of them
  fails is at most δ; each result states its ``delta_each``.
- **No threshold** above the trivial one (τ_neg = 0 clears no one; no τ_pos on the grid) can be
  guaranteed when the data are too few: the result is undefined with the reason and
  ``n_needed``, the smallest count that could give a guarantee (positives, queries or alerts
  at a threshold, with no miss or false alert among them).

The calibration data may be a part of the data (``calibrate_on="split=TUNE"`` or
``"fold=K"``); the metric is then also reported on the rest (held out), with a Wilson interval.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

__all__ = ["GUARANTEES", "PRECISION_GRID", "Guarantee", "GuaranteeResult", "GuaranteedThreshold",
           "ThresholdGuarantee", "floor_threshold", "guarantee", "guaranteed_threshold",
           "hb_p_value", "multiplicity", "n_needed", "threshold_subsets"]

#: What each guarantee sets: metric -> (operator, parameter, the risk it controls in words).
GUARANTEES = MappingProxyType({
    "screening_sensitivity": (">=", "tau_neg", "missed positives among positives"),
    "screening_fn_per_1000": ("<=", "tau_neg", "missed positives among all queries"),
    "alert_precision": (">=", "tau_pos", "false alerts among alerts"),
})
#: The thresholds τ_pos is tested at (fixed before the data: Bonferroni over them).
PRECISION_GRID = np.round(np.linspace(0.0, 0.99, 100), 2)
_FORM = re.compile(r"^\s*([A-Za-z_0-9]+)\s*(>=|<=)\s*([-+0-9.eE]+)\s*$")


def _known() -> str:
    return ", ".join(f"{m}{op}x" for m, (op, _, _) in GUARANTEES.items())


@dataclass(frozen=True)
class Guarantee:
    """A target to guarantee, e.g. ``screening_sensitivity>=0.99``.

    >>> g = Guarantee.parse("screening_sensitivity>=0.99")
    >>> g.parameter, round(g.alpha, 6)
    ('tau_neg', 0.01)
    """

    metric: str
    op: str
    value: float

    @classmethod
    def parse(cls, text: str) -> Guarantee:
        """``"alert_precision>=0.9"`` -> Guarantee; ValueError naming the valid forms and the
        allowed range of the value."""
        m = _FORM.match(str(text))
        if not m:
            raise ValueError(f"guarantee {text!r} is not of the form metric>=value; "
                             f"valid: {_known()}")
        metric, op = m.group(1).lower(), m.group(2)
        if metric not in GUARANTEES:
            raise ValueError(f"guarantee {text!r}: no guaranteed threshold for {metric!r}; "
                             f"valid: {_known()}")
        if op != GUARANTEES[metric][0]:
            raise ValueError(f"guarantee {text!r}: {metric} is guaranteed from one side only "
                             f"({metric}{GUARANTEES[metric][0]}x)")
        try:
            value = float(m.group(3))
        except ValueError:
            raise ValueError(f"guarantee {text!r}: {m.group(3)!r} is not a number") from None
        high = 1000.0 if metric == "screening_fn_per_1000" else 1.0
        if not (math.isfinite(value) and 0.0 < value < high):
            raise ValueError(f"guarantee {text!r}: the value must be within (0, {high:g}); "
                             f"got {m.group(3)}")
        return cls(metric, op, value)

    @property
    def parameter(self) -> str:
        return GUARANTEES[self.metric][1]

    @property
    def risk(self) -> str:
        return GUARANTEES[self.metric][2]

    @property
    def alpha(self) -> float:
        """The risk level guaranteed: 1 − target for a rate, target / 1000 per 1,000."""
        if self.metric == "screening_fn_per_1000":
            return self.value / 1000.0
        return round(1.0 - self.value, 12)

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.value:g}"


def hb_p_value(k, n, alpha: float) -> np.ndarray:
    """Hoeffding–Bentkus p-value of ``risk > alpha`` from ``k`` losses among ``n`` 0/1 losses:
    ``min(exp(−n·h(min(k/n, α), α)), P(Bin(n, α) ≤ k))`` with ``h(a, b)`` the Bernoulli
    relative entropy (Learn-then-Test, §3; for 0/1 losses Bentkus's bound is the binomial
    tail itself). 1 where ``n = 0`` (nothing to test).

    >>> float(hb_p_value(0, 230, 0.01)) < 0.1 < float(hb_p_value(0, 229, 0.01))
    True
    """
    from scipy.special import bdtr  # P(Bin(n, p) ≤ k); lighter to import than scipy.stats

    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.minimum(np.where(n > 0, k / n, 0.0), alpha)
        h = np.where(r > 0, r * np.log(r / alpha), 0.0) + np.where(
            r < 1, (1.0 - r) * np.log((1.0 - r) / (1.0 - alpha)), 0.0)
        hoeffding = np.exp(-n * h)
        tail = np.where(n > 0, bdtr(k.astype(np.int64), np.maximum(n, 1).astype(np.int64),
                                    alpha), 1.0)
    return np.where(n > 0, np.minimum(hoeffding, tail), 1.0)


def n_needed(alpha: float, delta: float, tests: int = 1) -> int | None:
    """The smallest count of 0/1 losses with none lost whose p-value ``(1 − α)^n`` is at most
    ``δ / tests``: below it no threshold can be guaranteed. None when α = 0 (no count does).

    >>> n_needed(0.01, 0.1)
    230
    """
    if alpha <= 0.0:
        return None
    return max(1, math.ceil(math.log(delta / tests) / math.log1p(-alpha) - 1e-12))


@dataclass(frozen=True)
class GuaranteedThreshold:
    """One guarantee on one calibration set: ``value`` (None when none can be guaranteed,
    ``reason`` then says why), the metric there, the count it was tested on and the count
    that could give a guarantee."""

    value: float | None
    calibration_value: float | None
    n: int
    n_needed: int | None
    method: str
    reason: str | None = None


def _method(g: Guarantee, grid_size: int) -> str:
    if g.parameter == "tau_neg":
        return ("Learn-then-Test: fixed-sequence testing over the observed thresholds (the "
                "risk grows with τ_neg), Hoeffding–Bentkus p-values (binomial tail)")
    return (f"Learn-then-Test: Bonferroni over a fixed grid of {grid_size} thresholds (the "
            "risk is not monotone in τ_pos), Hoeffding–Bentkus p-values (binomial tail, "
            "given the number of alerts)")


def guaranteed_threshold(y, p, target: Guarantee | str, *, delta: float,
                         grid=PRECISION_GRID) -> GuaranteedThreshold:
    """The threshold guaranteeing ``target`` with probability ≥ 1 − ``delta`` over the draw of
    the calibration data ``(y, p)`` (module docstring for the procedure).

    Positives at 0.2, 0.5, 0.7, 0.9 and 226 more at 0.95: 230 positives, so τ_neg = 0.2
    (none missed) has p-value 0.99^230 ≈ 0.0991 ≤ 0.1, τ_neg = 0.5 (one missed) ≈ 0.33.

    >>> y = np.ones(230); p = np.r_[0.2, 0.5, 0.7, 0.9, np.full(226, 0.95)]
    >>> guaranteed_threshold(y, p, "screening_sensitivity>=0.99", delta=0.1).value
    0.2
    """
    g = Guarantee.parse(target) if isinstance(target, str) else target
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be within (0, 1); got {delta}")
    y = np.asarray(y, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    grid = np.asarray(grid, dtype=np.float64)
    pos = y == 1
    method = _method(g, grid.size)
    if g.parameter == "tau_neg":
        scores = np.sort(p[pos])
        n = int(pos.sum()) if g.metric == "screening_sensitivity" else y.size
        cand = np.unique(p)
        missed = np.searchsorted(scores, cand, side="left")  # positives with p < τ
        ok = hb_p_value(missed, n, g.alpha) <= delta
        # p-values grow with τ: the rejected hypotheses are a prefix (fixed sequence).
        stop = int(np.argmin(ok)) if not ok.all() else ok.size
        need = n_needed(g.alpha, delta)
        if stop == 0:
            return GuaranteedThreshold(None, None, n, need, method, _too_few(g, n, need))
        tau = float(cand[stop - 1])
        k = int(missed[stop - 1])
        value = ((n - k) / n if g.metric == "screening_sensitivity" else 1000.0 * k / n)
        return GuaranteedThreshold(tau, value, n, need, method)
    above = p[None, :] >= grid[:, None] if p.size * grid.size <= 5_000_000 else None
    if above is not None:
        alerts = above.sum(axis=1)
        false = (above & ~pos[None, :]).sum(axis=1)
    else:
        order = np.sort(p)
        alerts = p.size - np.searchsorted(order, grid, side="left")
        neg = np.sort(p[~pos])
        false = neg.size - np.searchsorted(neg, grid, side="left")
    ok = hb_p_value(false, alerts, g.alpha) <= delta / grid.size
    need = n_needed(g.alpha, delta, grid.size)
    if not ok.any():
        return GuaranteedThreshold(None, None, int(alerts[0]), need, method,
                                   _too_few(g, int(alerts[0]), need))
    i = int(np.argmax(ok))
    return GuaranteedThreshold(float(grid[i]), float((alerts[i] - false[i]) / alerts[i]),
                               int(alerts[i]), need, method)


def _too_few(g: Guarantee, n: int, need: int | None) -> str:
    what = {"screening_sensitivity": "positives", "screening_fn_per_1000": "queries",
            "alert_precision": "alerts at one threshold"}[g.metric]
    loss = "false alert" if g.parameter == "tau_pos" else "miss"
    if need is None:
        return f"no threshold can guarantee {g} at any n"
    if n < need:
        return (f"no threshold can be guaranteed at this n ({n} {what}): at least {need} "
                f"{what} are needed, with no {loss} among them")
    return (f"no threshold can be guaranteed on these data: {g} is not reached with enough "
            f"margin ({n} {what}; {need} with no {loss} would be the least)")


@dataclass(frozen=True)
class GuaranteeResult:
    """One guarantee on one subset (all queries or a criterion), as the JSON writes it
    (contract §6, "Thresholds with a guarantee")."""

    target: str
    parameter: str
    value: float | None
    delta: float
    delta_each: float
    method: str
    n_calibration: int
    risk: str
    risk_bound: float
    subset: str
    calibration: str
    calibration_value: float | None
    n_needed: int | None
    n_tested: int
    held_out: dict | None
    reason: str | None = None
    note: str | None = None

    def to_dict(self) -> dict:
        return {"target": self.target, "parameter": self.parameter, "value": self.value,
                "defined": self.value is not None, "reason": self.reason, "note": self.note,
                "delta": self.delta, "delta_each": self.delta_each, "method": self.method,
                "n_calibration": self.n_calibration, "risk": self.risk,
                "risk_bound": self.risk_bound, "subset": self.subset,
                "calibration": self.calibration, "calibration_value": self.calibration_value,
                "n_needed": self.n_needed, "n_tested": self.n_tested,
                "held_out": self.held_out}

    @property
    def statement(self) -> str:
        """The guarantee in words (or why there is none)."""
        if self.value is None:
            return f"{self.target}: {self.reason}"
        name = "τ_neg" if self.parameter == "tau_neg" else "τ_pos"
        return (f"With {name} = {self.value:.6g} chosen this way, the probability that "
                f"{self.risk} on new queries exceeds {self.risk_bound:.6g} "
                f"({self.target}) is at most {self.delta_each:.3g}, over the draw of the "
                f"calibration data ({self.calibration}; exchangeable queries assumed)")


def _calibration_rows(ds, calibrate_on: str | None
                      ) -> tuple[np.ndarray, np.ndarray | None, str, str]:
    """(calibration mask, held-out mask or None, their descriptions) of ``calibrate_on``."""
    every = np.ones(ds.n_queries, dtype=bool)
    if calibrate_on is None:
        return every, None, "all queries", "none"
    key, sep, value = str(calibrate_on).partition("=")
    key, value = key.strip().lower(), value.strip()
    if not sep or key not in ("split", "fold") or not value:
        raise ValueError(f"calibrate_on {calibrate_on!r}: expected split=NAME (e.g. "
                         "split=TUNE) or fold=K")
    if key == "split":
        if ds.split is None:
            raise ValueError(f"calibrate_on {calibrate_on!r}: the queries have no split "
                             "column")
        labels = np.char.upper(ds.split.astype(str))
        cal = labels == value.upper()
        known = ", ".join(ds.splits or [])
    else:
        if ds.fold is None:
            raise ValueError(f"calibrate_on {calibrate_on!r}: the queries have no fold column")
        try:
            k = int(value)
        except ValueError:
            raise ValueError(f"calibrate_on {calibrate_on!r}: fold must be a whole number; "
                             f"got {value!r}") from None
        cal = ds.fold == k
        known = ", ".join(map(str, ds.folds or []))
    if not cal.any():
        raise ValueError(f"calibrate_on {calibrate_on!r}: no calibration data (no query has "
                         f"{key} {value}; the {key}s are {known})")
    rest = ~cal
    return (cal, (rest if rest.any() else None), f"{key} {value}",
            f"the queries not in {key} {value}")


def _held_out(y, p, g: Guarantee, tau: float, subset: str) -> dict:
    """The metric at ``tau`` on held-out rows, with its Wilson interval (undefined, with the
    reason, when its denominator is empty)."""
    from metrics_core.metrics.uncertainty import wilson_interval

    pos = y == 1
    if g.metric == "screening_sensitivity":
        k, n, scale = int((pos & (p >= tau)).sum()), int(pos.sum()), 1.0
        empty = "no positive query"
    elif g.metric == "screening_fn_per_1000":
        k, n, scale = int((pos & (p < tau)).sum()), int(y.size), 1000.0
        empty = "no query"
    else:
        k, n, scale = int((pos & (p >= tau)).sum()), int((p >= tau).sum()), 1.0
        empty = "no alert"
    if n == 0:
        return {"value": None, "defined": False, "reason": f"{empty} in the held-out data",
                "ci95": None, "subset": subset, "n": 0}
    lo, hi = wilson_interval(k, n)
    return {"value": scale * k / n, "defined": True, "reason": None,
            "ci95": [scale * lo, scale * hi], "subset": subset, "n": n,
            "met": bool(scale * k / n >= g.value if g.op == ">=" else scale * k / n <= g.value)}


def threshold_subsets(ds, by: str | None) -> list[tuple[str, np.ndarray]]:
    """``(subset name, query mask)`` of each subset thresholds are chosen on: all queries,
    and with ``by="criterion"`` each criterion too."""
    subsets = [("all_queries", np.ones(ds.n_queries, dtype=bool))]
    if by == "criterion":
        subsets += [(f"criterion {c}", ds.criterion == c) for c in ds.criteria]
    elif by is not None:
        raise ValueError(f"by must be 'criterion' or None; got {by!r}")
    return subsets


def guarantee(ds, targets, *, delta: float, by: str | None = None,
              calibrate_on: str | None = None, grid=PRECISION_GRID) -> list[GuaranteeResult]:
    """Guaranteed thresholds for ``targets`` on a :class:`Dataset`, overall or also
    ``by="criterion"``, calibrated on all queries or on ``calibrate_on`` (``"split=TUNE"``,
    ``"fold=K"``) with the metric on the rest held out. δ is split evenly over every
    (target, subset) pair; a gate's τ_neg comes down to its τ_pos when above it.
    """
    targets = [Guarantee.parse(t) if isinstance(t, str) else t for t in targets]
    if not targets:
        raise ValueError("no guarantee given")
    if not (isinstance(delta, (int, float)) and 0.0 < delta < 1.0):
        raise ValueError(f"delta must be within (0, 1); got {delta}")
    cal, rest, described, held_name = _calibration_rows(ds, calibrate_on)
    if sum(t.parameter == "tau_pos" for t in targets) > 1:
        raise ValueError("one alert_precision guarantee at a time (the thresholds each "
                         "guarantees need not overlap)")
    y, p = ds.y.astype(np.float64), ds.p.astype(np.float64)
    groups = threshold_subsets(ds, by)
    each = delta / (len(targets) * len(groups))
    out: list[GuaranteeResult] = []
    for subset, m in groups:
        found = [guaranteed_threshold(y[m & cal], p[m & cal], t, delta=each, grid=grid)
                 for t in targets]
        values = [f.value for f in found]
        negs = [v for t, v in zip(targets, values, strict=True)
                if t.parameter == "tau_neg" and v is not None]
        poss = [v for t, v in zip(targets, values, strict=True)
                if t.parameter == "tau_pos" and v is not None]
        tau_neg = min(negs) if negs else None
        tau_pos = poss[0] if poss else None
        for t, f in zip(targets, found, strict=True):
            value, note = f.value, None
            if value is not None and t.parameter == "tau_neg":
                if tau_neg is not None and value != tau_neg:
                    note = (f"τ_neg {value:.6g} alone; {tau_neg:.6g} meets every τ_neg "
                            "guarantee (the missed-positive risk only falls with τ_neg)")
                    value = tau_neg
                if tau_pos is not None and value > tau_pos:
                    note = (f"τ_neg {f.value:.6g} alone; {tau_pos:.6g} keeps τ_neg ≤ τ_pos "
                            "(the missed-positive risk only falls with τ_neg)")
                    value = tau_pos
            calibration_value = f.calibration_value
            if value is not None and value != f.value:
                calibration_value = _held_out(y[m & cal], p[m & cal], t, value,
                                              described)["value"]
            held = (None if rest is None or value is None or not (m & rest).any()
                    else _held_out(y[m & rest], p[m & rest], t, value, held_name))
            out.append(GuaranteeResult(
                str(t), t.parameter, value, float(delta), each, f.method,
                int((m & cal).sum()), t.risk, t.alpha, subset,
                described, calibration_value, f.n_needed, f.n, held, f.reason, note))
    return out


def multiplicity(results: list[GuaranteeResult]) -> dict:
    """How the guarantees of one :func:`guarantee` call share δ (Bonferroni: evenly over every
    (guarantee, subset) pair, so the probability that any of them fails is at most δ), as the
    JSON states it beside them.

    >>> out = multiplicity([GuaranteeResult("alert_precision>=0.9", "tau_pos", 0.5, 0.1, 0.05,
    ...     "m", 10, "r", 0.1, s, "all queries", 0.9, 10, 10, None) for s in
    ...     ("all_queries", "criterion A")])
    >>> out["tests"], out["delta_each"], out["subsets"]
    (2, 0.05, ['all_queries', 'criterion A'])
    """
    if not results:
        raise ValueError("no guarantee computed")
    targets = list(dict.fromkeys(r.target for r in results))
    subsets = list(dict.fromkeys(r.subset for r in results))
    delta, each, n = results[0].delta, results[0].delta_each, len(results)
    criteria = len(subsets) - 1
    where = ("all queries" if not criteria else
             f"all queries and {criteria} criteri{'on' if criteria == 1 else 'a'}")
    return {"correction": "bonferroni", "tests": n, "targets": targets, "subsets": subsets,
            "delta": delta, "delta_each": each,
            "statement": (f"δ = {delta:g} is split evenly over the {n} guarantee(s) computed "
                          f"together ({len(targets)} target(s) × {len(subsets)} subset(s): "
                          f"{where}), {each:.4g} each, so the probability that any of them "
                          f"fails is at most {delta:g} (Bonferroni)")}


def floor_threshold(value: float, parameter: str, digits: int = 6) -> float:
    """A guaranteed threshold as a setting holds it (``digits`` decimals) without losing the
    guarantee: τ_neg rounded *down* (a lower τ_neg clears fewer queries, so its missed-positive
    risk is no higher; rounding up could put a calibration positive below it), τ_pos as it is
    when it already has ``digits`` decimals (the grid's points do), else rounded up.

    >>> floor_threshold(0.1234567, "tau_neg"), floor_threshold(0.12, "tau_pos")
    (0.123456, 0.12)
    """
    step = 10.0 ** -digits
    out = round(value, digits)
    if parameter == "tau_neg":
        while out > value:  # compared as the gate compares: p < τ_neg
            out = round(out - step, digits)
    else:
        while out < value:
            out = round(out + step, digits)
    return out


#: Link form of a threshold set with a guarantee: field;target;delta;tests;calibration;n.
_LINK_PARTS = 6
#: The most calibration queries a guarantee records: 12 digits, as many as a link carries.
MAX_CALIBRATION_N = 999_999_999_999
#: The threshold fields a guarantee may set (the gate's ends and the per-criterion gates).
GUARANTEED_FIELDS = ("tau_neg", "tau_pos", "criterion_gates")


@dataclass(frozen=True)
class ThresholdGuarantee:
    """How a threshold was set with a guarantee: the provenance mark *found on data with a
    guarantee* of the dashboard's thresholds (contract §9), carried by its link and its
    settings.json and stated on every page and in the decision record.

    ``target`` (e.g. ``screening_sensitivity>=0.99``), ``delta`` (the chance that any of the
    guarantees computed together fails), ``tests`` (how many guarantees δ was split over:
    all queries and each criterion with Per criterion on), ``calibration`` (``all``,
    ``split=NAME`` or ``fold=K``: the calibration data) and ``n_calibration`` (its queries).
    The method follows from the target.

    >>> g = ThresholdGuarantee("screening_sensitivity>=0.99", 0.1, 1, "split=TUNE", 500)
    >>> ThresholdGuarantee.from_link(g.link("tau_neg")) == ("tau_neg", g)
    True
    >>> g.describe()
    'guaranteed: screening_sensitivity>=0.99, δ 0.1, calibrated on split TUNE'
    """

    target: str
    delta: float
    tests: int
    calibration: str
    n_calibration: int

    def __post_init__(self) -> None:
        g = Guarantee.parse(self.target)  # ValueError naming the valid forms
        object.__setattr__(self, "target", str(g))
        if not (isinstance(self.delta, int | float) and not isinstance(self.delta, bool)
                and 0.0 < self.delta < 1.0):
            raise ValueError(f"delta must be a number within (0, 1); got {self.delta!r}")
        if not (isinstance(self.tests, int) and not isinstance(self.tests, bool)
                and 1 <= self.tests <= 10_000):
            raise ValueError(f"tests must be a whole number within [1, 10000]; got "
                             f"{self.tests!r}")
        if not (isinstance(self.n_calibration, int) and not isinstance(self.n_calibration, bool)
                and 0 <= self.n_calibration <= MAX_CALIBRATION_N):
            # (at most 12 digits: what a link carries, so a guarantee read from a settings
            # file survives the link it is written to)
            raise ValueError(f"n_calibration must be a whole number within [0, "
                             f"{MAX_CALIBRATION_N}]; got {self.n_calibration!r}")
        key, sep, name = str(self.calibration).partition("=")
        if not (self.calibration == "all" or (sep and key in ("split", "fold") and name
                                              and len(name) <= 100)):
            raise ValueError(f"calibration must be 'all', 'split=NAME' or 'fold=K'; got "
                             f"{self.calibration!r}")
        if key == "fold" and not re.fullmatch(r"-?\d{1,18}", name):
            raise ValueError(f"calibration {self.calibration!r}: fold must be a whole number")

    @classmethod
    def of(cls, result: GuaranteeResult, tests: int | None = None) -> ThresholdGuarantee:
        """The mark of a :class:`GuaranteeResult` (``tests``: how many guarantees δ was split
        over; default: as the result's δ and δ each say)."""
        if tests is None:
            tests = max(1, round(result.delta / result.delta_each))
        key, _, name = result.calibration.partition(" ")
        calibration = "all" if result.calibration == "all queries" else f"{key}={name}"
        return cls(result.target, result.delta, tests, calibration, result.n_calibration)

    @property
    def parameter(self) -> str:
        return Guarantee.parse(self.target).parameter

    @property
    def delta_each(self) -> float:
        return self.delta / self.tests

    @property
    def method(self) -> str:
        return _method(Guarantee.parse(self.target), PRECISION_GRID.size)

    @property
    def calibration_text(self) -> str:
        """``all queries``, ``split TUNE``, ``fold 2``."""
        return "all queries" if self.calibration == "all" else \
            self.calibration.replace("=", " ", 1)

    def fits(self, field_name: str) -> bool:
        """Whether this guarantee can set ``field_name`` (τ_neg targets set τ_neg, τ_pos
        targets τ_pos, either the per-criterion gates)."""
        return field_name == "criterion_gates" or field_name == self.parameter

    def describe(self) -> str:
        """The mark as the thresholds line shows it."""
        return (f"guaranteed: {self.target}, δ {self.delta:g}"
                + (f" over {self.tests} guarantees" if self.tests > 1 else "")
                + f", calibrated on {self.calibration_text}")

    def sentence(self, field_name: str, value: float | None = None) -> str:
        """The record's statement of this guarantee for the threshold ``field_name``."""
        g = Guarantee.parse(self.target)
        name = {"tau_neg": "τ_neg", "tau_pos": "τ_pos"}.get(field_name,
                                                              "The per-criterion gates' "
                                                              + ("τ_neg" if g.parameter ==
                                                                 "tau_neg" else "τ_pos"))
        at = "" if value is None else f" = {value:g}"
        split = (f"; δ is split evenly over the {self.tests} guarantees computed together "
                 f"({self.delta_each:.3g} each), so the chance that any of them fails is at "
                 f"most {self.delta:g}" if self.tests > 1 else "")
        return (f"{name}{at} was found on data with a guarantee: the probability that "
                f"{g.risk} on new queries exceeds {g.alpha:.6g} ({self.target}) is at most "
                f"{self.delta_each:.3g}, over the draw of the calibration data "
                f"({self.calibration_text}, {self.n_calibration:,} queries; exchangeable "
                f"queries assumed){split}. Method: {self.method}.")

    def to_dict(self) -> dict:
        """The settings.json form (``method`` and ``delta_each`` written to be read; the
        method is the target's)."""
        return {"target": self.target, "delta": self.delta, "tests": self.tests,
                "delta_each": self.delta_each, "calibration": self.calibration,
                "n_calibration": self.n_calibration, "method": self.method}

    @classmethod
    def from_dict(cls, raw) -> ThresholdGuarantee:
        """A settings.json entry (ValueError naming the key and the rule)."""
        if not isinstance(raw, dict):
            raise ValueError(f"must be a JSON object with target, delta, tests, calibration "
                             f"and n_calibration; got {raw!r}")
        need = ("target", "delta", "tests", "calibration", "n_calibration")
        missing = [k for k in need if k not in raw]
        if missing:
            raise ValueError(f"misses {', '.join(missing)}")
        extra = sorted(set(raw) - {*need, "delta_each", "method"})
        if extra:
            raise ValueError(f"has keys a guarantee does not have: {', '.join(extra)}")
        if not isinstance(raw["target"], str) or not isinstance(raw["calibration"], str):
            raise ValueError("target and calibration must be text")
        return cls(raw["target"], raw["delta"], raw["tests"], raw["calibration"],
                   raw["n_calibration"])

    def link(self, field_name: str) -> str:
        """The link's form, ``field;target;delta;tests;calibration;n``."""
        return (f"{field_name};{self.target};{self.delta:g};{self.tests};{self.calibration};"
                f"{self.n_calibration}")

    @classmethod
    def from_link(cls, text: str) -> tuple[str, ThresholdGuarantee]:
        """``(field, guarantee)`` of a link's ``guaranteed=`` value (ValueError with the rule)."""
        parts = str(text).split(";")
        if len(parts) < _LINK_PARTS:
            raise ValueError("expected field;target;delta;tests;calibration;n")
        field_name, target, delta, tests = parts[:4]
        calibration, n = ";".join(parts[4:-1]), parts[-1]
        if field_name not in GUARANTEED_FIELDS:
            raise ValueError(f"{field_name!r} is no threshold a guarantee sets (one of "
                             f"{', '.join(GUARANTEED_FIELDS)})")
        try:
            delta_value = float(delta)
        except ValueError:
            raise ValueError(f"delta {delta!r} is not a number") from None
        if not (re.fullmatch(r"\d{1,6}", tests) and re.fullmatch(r"\d{1,12}", n)):
            raise ValueError("tests and n must be whole numbers")
        g = cls(target, delta_value, int(tests), calibration, int(n))
        if not g.fits(field_name):
            raise ValueError(f"{g.target} sets {g.parameter}, not {field_name}")
        return field_name, g
