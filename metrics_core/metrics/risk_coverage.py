"""Risk–coverage of a classifier that may abstain (contract §6, abstention view; seed 004).

A selective classifier answers the samples it is most confident about and abstains on the
rest. Sweeping the confidence level from high to low gives the **risk–coverage curve**: at each
distinct level, coverage = answered / n and risk = errors among the answered (Geifman and
El-Yaniv 2017). Its area, **AURC** = Σ risk · Δcoverage over the levels (with no tied
confidences, the mean over k of the risk of the k most confident), summarises how well the
confidence ranks the errors last; the **optimal** curve answers every correct sample before
any error (risk 0 up to the accuracy, then ``(k − C) / k``), and **E-AURC** = AURC − optimal
AURC is the excess due to the ranking alone (Geifman, Uziel, El-Yaniv 2019).

Samples that abstain whatever the level (a triage verdict ``uncertain``) are never answered:
the curve ends at their complement's coverage and both areas are taken up to it.

- The gate (UNCERTAIN band as abstention): the prediction is ``p ≥ τ`` (the run's classification
  threshold) and the confidence ``|p − τ|``, so abstaining on the least confident first widens
  a band around τ; :func:`gate_risk_coverage`.
- The triage classifier: its verdicts with their confidence column; :func:`risk_coverage`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from metrics_core.metrics.classification import checked_order

__all__ = ["GATE_RESAMPLES", "RiskCoverage", "aurc_intervals", "digamma_of_whole",
           "gate_area_resamples", "gate_risk_coverage", "gate_risk_coverage_of_counts",
           "gate_section", "risk_coverage", "section_of"]

#: At most this many resamples for the gate's areas in a run (their cost grows with n).
GATE_RESAMPLES = 1000


@dataclass(frozen=True)
class RiskCoverage:
    """A risk–coverage curve (one point per distinct confidence level, most confident first)
    with AURC, the optimal AURC and their difference E-AURC; ``ci95`` holds the bootstrap
    percentile intervals of the three areas when computed (name -> (lo, hi))."""

    coverage: np.ndarray
    risk: np.ndarray
    aurc: float
    optimal_aurc: float
    n: int
    ci95: dict | None = None

    @property
    def excess_aurc(self) -> float:
        return self.aurc - self.optimal_aurc

    def to_dict(self, *, max_points: int | None = None) -> dict:
        """JSON-ready; ``max_points`` thins the curve's points (evenly by rank, the last kept)
        for writing only: the areas come from every point."""
        def f(x):
            return None if x is None or not math.isfinite(x) else float(x)

        keep = np.arange(self.coverage.size)
        if max_points is not None and keep.size > max_points:
            keep = np.unique(np.r_[np.linspace(0, keep.size - 1, max_points).astype(int),
                                   keep.size - 1])
        ci = self.ci95 or {}
        return {"aurc": f(self.aurc), "optimal_aurc": f(self.optimal_aurc),
                "excess_aurc": f(self.excess_aurc), "n": int(self.n),
                "ci95": {k: None if v is None else [f(v[0]), f(v[1])] for k, v in ci.items()}
                or None,
                "curve": {"coverage": [float(c) for c in self.coverage[keep]],
                          "risk": [float(r) for r in self.risk[keep]]}}


def _prepared(error, confidence, answered, order=None):
    """(error, the answered rows by confidence descending, the last position of each
    confidence level in that order). ``order``: that order, when the caller has it (every
    row answered); the rows of one level may come in any order, as the areas and the curve
    read sums of whole numbers up to each level's end only."""
    error = np.asarray(error, dtype=np.float64)
    confidence = np.asarray(confidence, dtype=np.float64)
    if error.shape != confidence.shape or error.ndim != 1:
        raise ValueError("error and confidence must be 1-D arrays of one length; got shapes "
                         f"{error.shape} and {confidence.shape}")
    if order is None:
        answered = (np.ones(error.size, dtype=bool) if answered is None
                    else np.asarray(answered, dtype=bool))
        if np.isnan(confidence[answered]).any():
            raise ValueError("confidence is undefined (NaN) for an answered sample")
        idx = np.flatnonzero(answered)
        order = idx[np.argsort(-confidence[idx], kind="stable")]
    c = confidence[order]
    ends = np.r_[np.flatnonzero(c[1:] != c[:-1]), c.size - 1] if c.size else np.array([], int)
    return error, order, ends


def _areas(w_sorted, e_sorted, ends, total):
    """AURC and optimal AURC for each row of weights (``w_sorted``: replicates x answered,
    in confidence order; ``total``: each replicate's whole weight, abstentions included)."""
    cw = np.cumsum(w_sorted, axis=1)[:, ends]
    ce = np.cumsum(w_sorted * e_sorted, axis=1)[:, ends]
    return _areas_of_levels(cw, ce, total)


def _areas_of_levels(cw, ce, total):
    """:func:`_areas` from the weight ``cw`` and the weighted errors ``ce`` answered up to the
    end of each confidence level (replicates x levels, most confident first)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = cw / total[:, None]
        risk = np.where(cw > 0, ce / cw, 0.0)
    dcov = np.diff(np.concatenate([np.zeros((cov.shape[0], 1)), cov], axis=1), axis=1)
    aurc = (risk * dcov).sum(axis=1)
    # optimal: the answered correct first, then the errors; over k = 1..A answered (weights
    # are whole counts): (1/N) Σ_{k=C+1..A} (k − C) / k = (1/N) [(A − C) − C (H_A − H_C)]
    a = cw[:, -1] if cw.shape[1] else np.zeros(cw.shape[0])
    errors = ce[:, -1] if cw.shape[1] else np.zeros(cw.shape[0])
    correct = a - errors
    harmonic = digamma_of_whole(a + 1.0) - digamma_of_whole(correct + 1.0)
    optimal = ((a - correct) - correct * harmonic) / total
    return aurc, optimal, cov, risk


#: Euler's constant γ = −ψ(1).
_EULER = 0.5772156649015329


def _digamma_small() -> tuple[float, ...]:
    """ψ(n) = H(n − 1) − γ for n = 1 .. 10, H added up term by term from 1/1 (a plain loop:
    the builtin sum compensates its rounding from Python 3.12 on)."""
    out, harmonic = [], 0.0
    for n in range(1, 11):
        out.append(harmonic - _EULER)
        harmonic += 1.0 / n
    return tuple(out)


_DIGAMMA_SMALL = _digamma_small()
#: B(2k) / 2k for k = 7 .. 1, the coefficients of ψ's asymptotic series in 1/x²
#: (Abramowitz and Stegun 6.3.18), highest order first.
_ASYMPTOTIC = (1 / 12, -691 / 32760, 1 / 132, -1 / 240, 1 / 252, -1 / 120, 1 / 12)


def digamma_of_whole(x) -> np.ndarray:
    """The digamma function ψ at whole numbers ``x`` ≥ 1 (the counts of :func:`_areas`).

    ψ(n) = H(n − 1) − γ up to 10; beyond, ψ(x) = ln x − 1/(2x) − Σ B(2k) / (2k x^(2k)) over
    k = 1 .. 7, evaluated in 1/x² by Horner's rule (ln from the standard library), which is
    scipy.special.digamma's evaluation there, equal to it bit for bit
    (tests/test_risk_coverage.py), without importing scipy.special (a tenth of a second of a
    run, for one function).

    >>> digamma_of_whole([1, 2, 11]).round(12).tolist()
    [-0.577215664902, 0.422784335098, 2.351752589067]
    """
    x = np.asarray(x, dtype=np.float64)
    if x.size and not (np.all(x >= 1) and np.all(x == np.floor(x))):
        raise ValueError("digamma_of_whole takes whole numbers >= 1")
    out = np.empty(x.shape)
    small = x <= 10
    out[small] = np.take(_DIGAMMA_SMALL, x[small].astype(np.intp) - 1)
    large = x[~small]
    z = 1.0 / (large * large)
    series = np.full(large.shape, _ASYMPTOTIC[0])
    for c in _ASYMPTOTIC[1:]:
        series = series * z + c
    series = np.where(large < 1e17, z * series, 0.0)
    logs = np.fromiter((math.log(v) for v in large.tolist()), dtype=np.float64,
                       count=large.size)
    out[~small] = logs - 0.5 / large - series
    return out


def _by_gate_confidence(p: np.ndarray, threshold: float, p_order: np.ndarray) -> np.ndarray:
    """The rows by ``|p − threshold|`` descending, from ``p_order`` (the rows by ``p``
    ascending): those at or above the threshold from the highest ``p`` down and those below
    from the lowest up are each in that order already (a difference with a constant is
    monotone in ``p``), so one merge of the two runs orders them (numpy's stable sort of
    floats, a merge sort, merges two runs in linear time). Rows of equal confidence may come
    in another order than a sort of the confidences would give them (see :func:`_prepared`).
    """
    split = int(np.searchsorted(p[p_order], threshold, side="left"))
    rows = np.concatenate([p_order[split:][::-1], p_order[:split]])
    return rows[np.argsort(-np.abs(p[rows] - threshold), kind="stable")]


def risk_coverage(error, confidence, *, answered=None) -> RiskCoverage:
    """The risk–coverage curve and its areas for 0/1 ``error`` ranked by ``confidence`` (most
    confident answered first); ``answered`` False marks samples that abstain at every level.

    Three samples, errors at the middle confidence: answered one by one, risk 0, 1/2, 1/3;
    AURC = (0 + 1/2 + 1/3) / 3 = 0.2778; optimal (the error last): (0 + 0 + 1/3) / 3 = 0.1111.

    >>> rc = risk_coverage([0, 1, 0], [0.9, 0.8, 0.7])
    >>> round(rc.aurc, 4), round(rc.optimal_aurc, 4), round(rc.excess_aurc, 4)
    (0.2778, 0.1111, 0.1667)
    """
    error, order, ends = _prepared(error, confidence, answered)
    if error.size == 0:
        raise ValueError("no sample to draw a risk–coverage curve from")
    w = np.ones((1, order.size))
    aurc, optimal, cov, risk = _areas(w, error[order][None, :], ends,
                                      np.array([float(error.size)]))
    return RiskCoverage(cov[0], risk[0], float(aurc[0]), float(optimal[0]), int(error.size))


def aurc_intervals(error, confidence, *, answered=None, n_resamples: int = 2000,
                   seed: int = 0) -> dict:
    """Percentile bootstrap intervals of AURC, optimal AURC and E-AURC (resampling samples;
    the ranking of each resample is the original one restricted to it, ties kept)."""
    error, order, ends = _prepared(error, confidence, answered)
    return _area_intervals(error, order, ends, n_resamples, seed)


def _area_intervals(error, order, ends, n_resamples: int, seed: int, counts=None) -> dict:
    """:func:`aurc_intervals` of the errors in confidence order (:func:`_prepared`).

    ``counts``: the count matrix of the same seed drawn before (rows ``0:n_resamples`` of a
    :class:`~metrics_core.metrics.uncertainty.DrawnCounts` or of an array of ``error.size``
    units: the first resamples of a longer draw are the draw of fewer), read instead of
    drawing again. With 0/1 errors each resample's answered weight and weighted errors up to
    each level are integer cumulative sums of its counts (the errors' and the others'
    columns, in confidence order), whole numbers equal to the float sums of the weights."""
    from metrics_core.metrics.uncertainty import (
        BATCH_ELEMENTS,
        Bootstrap,
        bootstrap_cis,
        percentile_cis,
    )

    n = int(error.size)
    e_sorted = error[order]
    whole = bool(np.isin(e_sorted, (0.0, 1.0)).all())
    if counts is None and not whole:
        def statistic(w):
            aurc, optimal, _, _ = _areas(w[:, order], e_sorted[None, :], ends, w.sum(axis=1))
            return np.stack([aurc, optimal, aurc - optimal], axis=1)

        cis = bootstrap_cis({"areas": statistic}, n, n_resamples=n_resamples,
                            seed=seed)["areas"]
    else:
        step = max(1, BATCH_ELEMENTS // max(n, 1))  # (bootstrap_cis's batches)
        if counts is None:
            batches = Bootstrap(n, n_resamples=n_resamples, seed=seed,
                                batch_size=step).count_batches()
        else:
            if counts.shape[1] != n or counts.shape[0] < n_resamples:
                raise ValueError(f"counts must have {n} columns and at least {n_resamples} "
                                 f"rows, got shape {counts.shape}")
            batches = (counts[i:min(i + step, n_resamples)]
                       for i in range(0, n_resamples, step))
        statistic = _whole_areas(e_sorted, order, ends) if whole else None
        parts = []
        for batch in batches:
            if statistic is not None:
                parts.append(statistic(batch))
            else:
                w = batch.astype(np.float64)
                aurc, optimal, _, _ = _areas(w[:, order], e_sorted[None, :], ends,
                                             w.sum(axis=1))
                parts.append(np.stack([aurc, optimal, aurc - optimal], axis=1))
        cis = percentile_cis(np.concatenate(parts) if parts else np.empty((0, 3)))
    return {name: ((c.lo, c.hi) if c.defined else None)
            for name, c in zip(("aurc", "optimal_aurc", "excess_aurc"), cis, strict=True)}


def _whole_areas(e_sorted, order, ends):
    """The areas of each row of integer counts (resample x unit) for 0/1 errors ``e_sorted``
    of the answered units ``order`` (confidence order): ``_areas`` of the float weights, from
    two integer cumulations (the errors' columns, the others'), read at each level's end."""
    wrong = e_sorted != 0
    wrong_columns, right_columns = order[wrong], order[~wrong]
    wrong_before = np.r_[0, np.cumsum(wrong)]  # errors among the first x answered units
    at = np.asarray(ends, dtype=np.int64) + 1
    wrong_at, right_at = wrong_before[at], at - wrong_before[at]

    def cumulated(w, columns, kind):
        cum = np.empty((w.shape[0], columns.size + 1), dtype=kind)
        cum[:, 0] = 0
        np.cumsum(np.take(w, columns, axis=1), axis=1, dtype=kind, out=cum[:, 1:])
        return cum

    def statistic(w):
        total = w.sum(axis=1, dtype=np.int64)
        kind = np.int32 if int(total.max(initial=0)) < np.iinfo(np.int32).max else np.int64
        # (read by indexing, as _areas reads its cumulations: the levels' axis first in
        # memory, the layout its sums over the levels have always been made in)
        ce = cumulated(w, wrong_columns, kind)[:, wrong_at]
        cw = ce + cumulated(w, right_columns, kind)[:, right_at]
        aurc, optimal, _, _ = _areas_of_levels(cw.astype(np.float64), ce.astype(np.float64),
                                               total.astype(np.float64))
        return np.stack([aurc, optimal, aurc - optimal], axis=1)

    return statistic


def gate_risk_coverage(y, p, *, threshold: float = 0.5, n_resamples: int = 0,
                       seed: int = 0, p_order=None, counts=None) -> RiskCoverage:
    """The gate's risk–coverage: predict positive iff ``p ≥ threshold``, abstain on the least
    confident first (confidence ``|p − threshold|``: a band around the threshold that widens),
    with bootstrap intervals of the areas when ``n_resamples`` > 0. ``p_order``: the rows by
    ``p`` ascending, when the caller has it (the confidence order is then merged from it, not
    sorted); the values are the same. ``counts``: the count matrix of ``seed`` over the rows,
    drawn before (at least ``n_resamples`` rows), read instead of drawing again."""
    y = np.asarray(y, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    error = ((p >= threshold).astype(np.float64) != y).astype(np.float64)
    confidence = np.abs(p - threshold)
    order = None
    if p_order is not None:
        if np.isnan(p).any():
            raise ValueError("confidence is undefined (NaN) for an answered sample")
        order = _by_gate_confidence(p, threshold, checked_order(p_order, p))
    error, order, ends = _prepared(error, confidence, None, order)
    if error.size == 0:
        raise ValueError("no sample to draw a risk–coverage curve from")
    aurc, optimal, cov, risk = _areas(np.ones((1, order.size)), error[order][None, :], ends,
                                      np.array([float(error.size)]))
    out = RiskCoverage(cov[0], risk[0], float(aurc[0]), float(optimal[0]), int(error.size))
    if n_resamples:
        out = RiskCoverage(out.coverage, out.risk, out.aurc, out.optimal_aurc, out.n,
                           _area_intervals(error, order, ends, n_resamples, seed, counts))
    return out


def _gate_levels(values: np.ndarray, threshold: float):
    """For distinct scores ``values``: whether each is predicted positive, the order of the
    scores by confidence ``|p − threshold|`` (most confident first, stable) and the last
    position of each distinct confidence level in that order (:func:`_prepared`'s ``ends``)."""
    values = np.asarray(values, dtype=np.float64)
    confidence = np.abs(values - threshold)
    order = np.argsort(-confidence, kind="stable")
    c = confidence[order]
    ends = np.r_[np.flatnonzero(c[1:] != c[:-1]), c.size - 1] if c.size \
        else np.array([], int)
    return values >= threshold, order, ends


def _levels_of_counts(positive, order, ends, pos, neg):
    """(answered, errors) up to the end of each level from the class counts at each distinct
    score (``pos`` / ``neg``: one row, or one per resample): a score's errors are its
    negatives when it is predicted positive, its positives otherwise."""
    pos = np.atleast_2d(np.asarray(pos, dtype=np.float64))
    neg = np.atleast_2d(np.asarray(neg, dtype=np.float64))
    errors = np.where(positive, neg, pos)
    cw = np.cumsum((pos + neg)[:, order], axis=1)[:, ends]
    ce = np.cumsum(errors[:, order], axis=1)[:, ends]
    return cw, ce


def gate_risk_coverage_of_counts(values, pos, neg, *, threshold: float = 0.5) -> RiskCoverage:
    """:func:`gate_risk_coverage` (without intervals) from the positives ``pos`` and negatives
    ``neg`` at each distinct score ``values``.

    All queries at one score share their confidence and their prediction, and the curve has
    one point per distinct confidence level (the queries of a level are answered together,
    whatever their order within it): the answered and the errors up to each level are sums of
    whole counts, exact in float64, so the curve and the areas equal the per-query ones bit for
    bit (tests/test_risk_coverage.py).

    >>> rc = gate_risk_coverage_of_counts([0.1, 0.6, 0.9], [0, 1, 1], [1, 1, 0])
    >>> want = gate_risk_coverage([0, 1, 0, 1], [0.1, 0.6, 0.6, 0.9])
    >>> rc.aurc == want.aurc, rc.coverage.tolist() == want.coverage.tolist()
    (True, True)
    """
    positive, order, ends = _gate_levels(values, threshold)
    cw, ce = _levels_of_counts(positive, order, ends, pos, neg)
    n = int(np.sum(pos) + np.sum(neg))
    if n == 0:
        raise ValueError("no sample to draw a risk–coverage curve from")
    aurc, optimal, cov, risk = _areas_of_levels(cw, ce, np.array([float(n)]))
    return RiskCoverage(cov[0], risk[0], float(aurc[0]), float(optimal[0]), n)


def gate_area_resamples(values, pos, neg, *, threshold: float = 0.5) -> np.ndarray:
    """``(resamples, 3)`` AURC, optimal AURC and E-AURC of the gate's curve for each row of
    weighted class counts ``pos`` / ``neg`` ``(resamples, distinct scores)`` (whole numbers:
    a Poisson bootstrap's), NaN where a resample holds no weight."""
    positive, order, ends = _gate_levels(values, threshold)
    out = []
    for start in range(0, np.shape(pos)[0], 64):  # a few resamples at a time
        p, q = pos[start:start + 64], neg[start:start + 64]
        cw, ce = _levels_of_counts(positive, order, ends, p, q)
        total = np.sum(p, axis=1, dtype=np.float64) + np.sum(q, axis=1, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):  # a resample without weight
            aurc, optimal, _, _ = _areas_of_levels(cw, ce, total)
        out.append(np.stack([aurc, optimal, aurc - optimal], axis=1))
    return np.concatenate(out) if out else np.empty((0, 3))


def gate_section(ds, cfg, abstention, *, p_order=None, counts=None) -> dict:
    """The gate's risk–coverage for a run's JSON (``metrics_master.json``,
    ``gate_risk_coverage``): the curve around the run's threshold τ (at most 500 points
    written), its areas with intervals from min(bootstrap, :data:`GATE_RESAMPLES`) resamples,
    and the gate's own operating point (coverage = answered share; risk = errors among the
    NEG and POS answers). ``counts``: the run's count matrix of the queries (same seed, at
    least that many resamples), when drawn already: its first rows are these resamples."""
    if ds.n_queries == 0:
        return {"defined": False, "reason": "no query"}
    n_boot = min(int(cfg.bootstrap), GATE_RESAMPLES)
    curve = gate_risk_coverage(ds.y, ds.p, threshold=cfg.threshold, n_resamples=n_boot,
                               seed=cfg.seed, p_order=p_order, counts=counts)
    return section_of(curve, cfg, n_boot, coverage=abstention.coverage,
                      accuracy_answered=abstention.accuracy_answered)


def section_of(curve: RiskCoverage, cfg, n_resamples: int, *, coverage: float,
               accuracy_answered: float | None) -> dict:
    """:func:`gate_section` of a curve computed elsewhere (the reduced Dask run's, from the
    counts by distinct ``p``), with the gate's coverage and accuracy over its answers."""
    accuracy = accuracy_answered
    point = {"tau_neg": cfg.tau_neg, "tau_pos": cfg.tau_pos,
             "coverage": float(coverage),
             "risk": None if accuracy is None or not math.isfinite(accuracy)
             else float(1.0 - accuracy)}
    return {"defined": True, "reason": None, "threshold": cfg.threshold,
            "confidence": "|p − τ| (abstain on a band around τ that widens)",
            "n_resamples": n_resamples, **curve.to_dict(max_points=500), "gate": point}
