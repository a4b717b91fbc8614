"""Calibration of the no-evidence gate probability (contract §5), protocol ``all_queries``.

- :func:`reliability_bins`: the reliability-diagram table (per bin: count, mean confidence,
  observed frequency with its Wilson 95 % interval, gap) with ECE and MCE.
- :func:`ece`, :func:`mce`, :func:`brier` (= ``sklearn.metrics.brier_score_loss``).
- :func:`logistic_calibration`: calibration-in-the-large (observed / expected), calibration
  intercept (slope fixed at 1) and slope, with their intervals.
- :func:`top_label`: the top-label view of seed 004, (confidence ``max(p, 1 - p)``,
  correctness); every binning function also takes ``top_label=True`` to use it.
- :func:`ece_weighted`, :func:`mce_weighted`, :func:`brier_weighted`: one value per row-weight
  vector, for the bootstrap (contract §9); :func:`weighted_bin_sums` (:func:`bin_matrix`)
  gives the bin sums that ECE and MCE share (:func:`ece_from_sums`, :func:`mce_from_sums`).

**Bins.** ``strategy="uniform"`` (the default, contract §5): edges ``i / n_bins`` (computed
as that quotient, so the edge printed as 0.3 is the float 0.3, not the 0.30000000000000004 of
``np.linspace``); every bin is ``[lo, hi)`` except the last, which is closed, ``[lo, 1.0]``:
``p = 1.0`` is counted (seed 000's code drops it; that is a bug, not the contract).
``strategy="quantile"`` (equal mass): edges are ``numpy.quantile(p, i / n_bins)`` (linear
interpolation), so the outer edges are ``min(p)`` and ``max(p)``; bins are ``[lo, hi)`` with
the last closed, as above. Repeated edges (a score value holding more than one bin's share of
the data) are merged, so a table can have fewer than ``n_bins`` bins, and all rows tied at an
edge value fall in the bin that starts there. Empty bins (possible with uniform bins) have
count 0, ``nan`` statistics and are excluded from ECE and MCE.

ECE is ``sum_b (n_b / N) |observed_b - confidence_b|`` over non-empty bins; MCE is the largest
``|observed_b - confidence_b|``. Both are ``nan`` without data.

Sources: "contract §N" is section N of ``docs/CONTRACT.md``; "seed 000" is
``docs/seeds/000-metric-specification.txt``; "seed 004" is
``docs/seeds/004-triage-abstention-metrics.txt``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from metrics_core.choices import STRATEGIES
from metrics_core.metrics.classification import check_binary_inputs, check_weights, checked_order
from metrics_core.metrics.uncertainty import divide, wilson_interval

__all__ = [
    "LogisticCalibration",
    "ReliabilityTable",
    "bin_edges",
    "bin_matrix",
    "brier",
    "brier_weighted",
    "clipped_logit",
    "ece",
    "ece_from_sums",
    "ece_weighted",
    "empty_smoothed_curve",
    "logistic_calibration",
    "logistic_calibration_of_rows",
    "mce",
    "mce_from_sums",
    "mce_weighted",
    "reliability_bins",
    "smoothed_calibration",
    "smoothed_curve",
    "spline_knots_of",
    "top_label",
    "weighted_bin_sums",
]


@dataclass(frozen=True)
class ReliabilityTable:
    """Reliability-diagram data, one entry per bin (contract §5).

    ``count`` rows fall in ``[lo, hi)`` (the last bin is closed); ``positives`` of them have
    label 1 (or are correct, for top-label). ``mean_confidence`` is their mean ``p``,
    ``observed_frequency`` = ``positives / count`` with the Wilson interval
    ``[wilson_lo, wilson_hi]`` at ``level``, and ``gap = observed_frequency - mean_confidence``
    (negative: over-confident). Empty bins hold ``nan``. ``ece``/``mce`` summarise the
    non-empty bins; ``n`` is the number of rows.
    """

    lo: np.ndarray
    hi: np.ndarray
    count: np.ndarray
    positives: np.ndarray
    mean_confidence: np.ndarray
    observed_frequency: np.ndarray
    wilson_lo: np.ndarray
    wilson_hi: np.ndarray
    gap: np.ndarray
    ece: float
    mce: float
    n: int
    strategy: str = "uniform"
    top_label: bool = False
    level: float = 0.95

    @property
    def n_bins(self) -> int:
        return int(self.lo.size)


# ------------------------------------------------------------------------------ inputs
def _check_options(n_bins, strategy) -> None:
    if isinstance(n_bins, bool) or int(n_bins) != n_bins or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")


def top_label(y, p, *, threshold: float = 0.5):
    """Top-label view of a binary classifier (seed 004; contract §5 variant).

    The prediction is positive iff ``p >= threshold``; ``confidence`` is the probability the
    model gives its predicted class (``p`` or ``1 - p``; ``max(p, 1 - p)`` at the default
    threshold 0.5) and ``correct`` is 1 where the prediction equals ``y``. Feed the pair to the
    calibration functions as ``(correct, confidence)``, or pass ``top_label=True`` to them.

    Returns
    -------
    (confidence float64, correct int8)

    Examples
    --------
    >>> conf, correct = top_label([1, 0, 0], [0.8, 0.3, 0.6])
    >>> conf.tolist(), correct.tolist()
    ([0.8, 0.7, 0.6], [1, 1, 0])
    """
    y, p, _ = check_binary_inputs(y, p, probability=True)
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold!r}")
    predicted = p >= threshold
    confidence = np.where(predicted, p, 1.0 - p)
    correct = (predicted == (y == 1)).astype(np.int8)
    return confidence, correct


def _inputs(y, p, top: bool):
    y, p, _ = check_binary_inputs(y, p, probability=True)
    if top:
        p, y = top_label(y, p)
    return y, p


def bin_edges(p, *, n_bins: int = 10, strategy: str = "uniform") -> np.ndarray:
    """Bin edges, increasing, ``n_bins + 1`` of them or fewer for merged quantile edges (§5).

    Uniform: ``i / n_bins``. Quantile: ``numpy.quantile(p, i / n_bins)`` with repeated edges
    removed (at least one bin: ``[v, v]`` when every ``p`` equals ``v``).
    """
    _check_options(n_bins, strategy)
    if strategy == "uniform":
        return np.arange(n_bins + 1, dtype=np.float64) / n_bins
    p = np.asarray(p, dtype=np.float64)
    if p.size == 0:
        return np.array([0.0, 1.0])
    edges = np.unique(np.quantile(p, np.arange(n_bins + 1) / n_bins))
    if edges.size == 1:
        edges = np.repeat(edges, 2)
    return edges


def _bin_index(p: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin of every ``p``: ``edges[i] <= p < edges[i + 1]``, the last bin closed."""
    n_bins = edges.size - 1
    return np.clip(np.searchsorted(edges, p, side="right") - 1, 0, n_bins - 1)


# ------------------------------------------------------------------------------ tables
def reliability_bins(y, p, *, n_bins: int = 10, strategy: str = "uniform",
                     top_label: bool = False, level: float = 0.95) -> ReliabilityTable:
    """Reliability-diagram table with ECE and MCE (contract §5).

    Parameters
    ----------
    y : array-like of 0/1
        Gold ``has_evidence`` (or correctness, with ``p`` a confidence).
    p : array-like of float in [0, 1]
        ``p_has_evidence`` (or a confidence).
    n_bins : int, default 10
    strategy : {"uniform", "quantile"}, default "uniform"
        Equal-width or equal-mass bins (see the module docstring for edges and ties).
    top_label : bool, default False
        Bin the top-label confidence ``max(p, 1 - p)`` against correctness (seed 004).
    level : float, default 0.95
        Level of the Wilson interval of each bin's observed frequency.

    Examples
    --------
    >>> t = reliability_bins([0, 1, 1, 1], [0.1, 0.15, 0.9, 1.0], n_bins=2)
    >>> t.count.tolist(), t.observed_frequency.tolist(), round(t.ece, 4)
    ([2, 2], [0.5, 1.0], 0.2125)
    """
    y, p = _inputs(y, p, top_label)
    edges = bin_edges(p, n_bins=n_bins, strategy=strategy)
    k = edges.size - 1
    idx = _bin_index(p, edges)
    count = np.bincount(idx, minlength=k).astype(np.int64)
    positives = np.bincount(idx, weights=y, minlength=k).round().astype(np.int64)
    sum_p = np.bincount(idx, weights=p, minlength=k)
    filled = count > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        confidence = np.where(filled, sum_p / count, np.nan)
        observed = np.where(filled, positives / count, np.nan)
    gap = observed - confidence
    w_lo, w_hi = wilson_interval(positives, count, level=level)
    n = int(y.size)
    if n:
        ece_value = float(np.sum(count[filled] / n * np.abs(gap[filled])))
        mce_value = float(np.max(np.abs(gap[filled])))
    else:
        ece_value = mce_value = float("nan")
    return ReliabilityTable(lo=edges[:-1], hi=edges[1:], count=count, positives=positives,
                            mean_confidence=confidence, observed_frequency=observed,
                            wilson_lo=np.asarray(w_lo), wilson_hi=np.asarray(w_hi), gap=gap,
                            ece=ece_value, mce=mce_value, n=n, strategy=strategy,
                            top_label=top_label, level=level)


def ece(y, p, *, n_bins: int = 10, strategy: str = "uniform", top_label: bool = False) -> float:
    """Expected calibration error (contract §5): ``sum_b (n_b / N) |observed_b - conf_b|``.

    Default: 10 equal-width bins, the last closed. ``nan`` without data.

    Examples
    --------
    >>> round(ece([0, 1, 1, 1], [0.1, 0.15, 0.9, 1.0], n_bins=2), 4)  # (2|.5-.125|+2|1-.95|)/4
    0.2125
    """
    return reliability_bins(y, p, n_bins=n_bins, strategy=strategy, top_label=top_label).ece


def mce(y, p, *, n_bins: int = 10, strategy: str = "uniform", top_label: bool = False) -> float:
    """Maximum calibration error (contract §5): the largest bin gap ``|observed - conf|``."""
    return reliability_bins(y, p, n_bins=n_bins, strategy=strategy, top_label=top_label).mce


def brier(y, p) -> float:
    """Brier score ``mean((p - y)^2)`` = ``sklearn.metrics.brier_score_loss`` (contract §5).

    The top-label Brier score of seed 004 (confidence vs correctness) is the same number for a
    binary classifier. ``nan`` without data.
    """
    y, p, _ = check_binary_inputs(y, p, probability=True)
    if y.size == 0:
        return float("nan")
    return float(np.mean((p - y) ** 2))


# ----------------------------------------------------------------- weighted (bootstrap)
def bin_matrix(y, p, *, n_bins: int = 10, strategy: str = "uniform",
               top_label: bool = False) -> np.ndarray:
    """``(n, 2 k)``: one-hot bin membership (``k`` bins), then ``y - p`` in the row's bin.

    ``W @ bin_matrix`` gives every resample's weight ``count`` and ``residual`` ``sum w (y -
    p)`` per bin: the sums of :func:`ece_from_sums` and :func:`mce_from_sums`. Bin edges come
    from the full sample (quantile edges are not re-estimated per resample), so a row's bin is
    the same in every resample.
    """
    y, p = _inputs(y, p, top_label)
    edges = bin_edges(p, n_bins=n_bins, strategy=strategy)
    k = edges.size - 1
    onehot = np.zeros((y.size, 2 * k))
    rows = np.arange(y.size)
    idx = _bin_index(p, edges)
    onehot[rows, idx] = 1.0
    onehot[rows, k + idx] = y - p
    return onehot


def weighted_bin_sums(y, p, *, n_bins: int = 10, strategy: str = "uniform",
                      top_label: bool = False):
    """Statistic maker for the bootstrap: ``sums(W)`` gives, per resample and bin, the weight
    ``count`` and the ``residual`` ``sum w (y - p)``, and each resample's total weight: one
    matrix product with :func:`bin_matrix`, built here once."""
    onehot = bin_matrix(y, p, n_bins=n_bins, strategy=strategy, top_label=top_label)
    k = onehot.shape[1] // 2

    def sums(weights):
        w = check_weights(weights, onehot.shape[0], dtype=np.float64)
        out = w @ onehot
        return out[:, :k], out[:, k:], w.sum(axis=1)

    return sums


def ece_from_sums(residual: np.ndarray, total: np.ndarray) -> np.ndarray:
    """ECE per resample from :func:`weighted_bin_sums`: ``sum_b |residual_b| / total``."""
    return divide(np.abs(residual).sum(axis=1), total)


def mce_from_sums(count: np.ndarray, residual: np.ndarray) -> np.ndarray:
    """MCE per resample from :func:`weighted_bin_sums`: the largest ``|residual_b / count_b|``
    over the bins drawn in the resample (``nan`` when none is)."""
    gaps = np.abs(divide(residual, count))
    filled = count > 0
    out = np.full(count.shape[0], np.nan)
    any_filled = filled.any(axis=1)
    out[any_filled] = np.where(filled, gaps, -np.inf)[any_filled].max(axis=1)
    return out


def ece_weighted(y, p, weights, *, n_bins: int = 10, strategy: str = "uniform",
                 top_label: bool = False) -> np.ndarray:
    """ECE per row-weight vector (bootstrap, contract §5, §9); ``nan`` for a zero-weight row.

    Row ``r`` equals :func:`ece` on the sample with row ``i`` repeated ``weights[r, i]`` times,
    using the full sample's bin edges: ``ECE = sum_b |sum_{i in b} w_i (y_i - p_i)| / sum w``.
    """
    _, residual, total = weighted_bin_sums(y, p, n_bins=n_bins, strategy=strategy,
                                           top_label=top_label)(weights)
    return ece_from_sums(residual, total)


def mce_weighted(y, p, weights, *, n_bins: int = 10, strategy: str = "uniform",
                 top_label: bool = False) -> np.ndarray:
    """MCE per row-weight vector (bootstrap); bins empty in a resample are skipped."""
    count, residual, _ = weighted_bin_sums(y, p, n_bins=n_bins, strategy=strategy,
                                           top_label=top_label)(weights)
    return mce_from_sums(count, residual)


def brier_weighted(y, p, weights) -> np.ndarray:
    """Brier score per row-weight vector (bootstrap): ``W @ (p - y)^2 / W.sum(1)``."""
    y, p, _ = check_binary_inputs(y, p, probability=True)
    w = check_weights(weights, y.size, dtype=np.float64)
    return divide(w @ ((p - y) ** 2), w.sum(axis=1))


# ------------------------------------------------------------- logistic recalibration
#: Probabilities are clipped to [EPS, 1 - EPS] before the logit (p = 0 or 1 has no logit).
LOGIT_EPS = 1e-12


@dataclass(frozen=True)
class LogisticCalibration:
    """Calibration in the large, intercept and slope (contract §5, for clinicians).

    ``in_the_large`` = observed / expected events = Σy / Σp (1 = calibrated on average), with
    a Poisson interval ``exp(ln(O/E) ± z / √O)``. ``intercept`` is ``a`` of
    ``logit P(y=1) = a + logit(p)`` (slope fixed at 1; 0 = calibrated in the large), ``slope``
    is ``b`` of ``logit P(y=1) = a + b · logit(p)`` (1 = well spread; below 1 = too extreme);
    both are maximum-likelihood fits (Newton-Raphson) with Wald 95 % intervals. A value is NaN
    where it is undefined (one class, or a fit that does not converge, e.g. separation);
    ``reason`` says why.
    """

    in_the_large: float
    in_the_large_ci: tuple[float, float] | None
    intercept: float
    intercept_ci: tuple[float, float] | None
    slope: float
    slope_ci: tuple[float, float] | None
    reason: str = ""


def _newton(X: np.ndarray, y: np.ndarray, offset: np.ndarray, *, trials=None,
            max_iter: int = 100,
            tol: float = 1e-10) -> tuple[np.ndarray, np.ndarray] | None:
    """Logistic maximum likelihood with an offset; (coefficients, covariance) or None.

    ``trials``: each row stands for that many observations, ``y`` of them events."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _newton_steps(X, y, offset, trials, max_iter, tol)


def _newton_steps(X, y, offset, trials, max_iter, tol):
    # The design has one or two columns: the Hessian and gradient entries are plain sums over
    # the rows (numpy's pairwise summation), not BLAS products, whose worker threads cost
    # more than the arithmetic on a shared machine. A column of ones is not multiplied.
    cols = [np.ascontiguousarray(X[:, j]) for j in range(X.shape[1])]
    ones = [bool(np.all(c == 1.0)) for c in cols]
    k = len(cols)

    def linear(beta):
        eta = offset + beta[0] if ones[0] else offset + beta[0] * cols[0]
        for j in range(1, k):
            eta += beta[j] if ones[j] else beta[j] * cols[j]
        return eta

    def times(a, j):
        return a if ones[j] else a * cols[j]

    def information(w):
        out = np.empty((k, k))
        for i in range(k):
            wi = times(w, i)
            for j in range(i, k):
                out[i, j] = out[j, i] = np.sum(times(wi, j))
        return out

    def weight(mu):
        return mu * (1.0 - mu) if trials is None else trials * mu * (1.0 - mu)

    beta = np.zeros(k)
    for _ in range(max_iter):
        mu = 1.0 / (1.0 + np.exp(-linear(beta)))
        resid = y - (mu if trials is None else trials * mu)
        hessian = information(weight(mu))
        gradient = np.array([np.sum(times(resid, j)) for j in range(k)])
        try:
            step = np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError:
            return None
        beta = beta + step
        if not np.all(np.isfinite(beta)) or np.abs(beta).max() > 1e6:
            return None
        if np.abs(step).max() < tol:
            mu = 1.0 / (1.0 + np.exp(-linear(beta)))
            try:
                covariance = np.linalg.inv(information(weight(mu)))
            except np.linalg.LinAlgError:
                return None
            # An information matrix so near singular that its inverse has a variance that is
            # not positive (p on two values at the clipping bounds): no standard error exists.
            variance = np.diag(covariance)
            if not (np.all(np.isfinite(covariance)) and np.all(variance > 0)):
                return None
            return beta, covariance
    return None


def _distinct_rows(y: np.ndarray, p: np.ndarray, order: np.ndarray | None = None):
    """One row per distinct p (clipped to [LOGIT_EPS, 1 - LOGIT_EPS]): (p, events, trials).
    A logistic likelihood over these rows equals the one over the queries. ``order``: the
    rows ordered by ``p`` ascending, when the caller has it (clipping keeps that order)."""
    # Value sorts and binary searches instead of np.unique's argsort: at 1M queries ~3x faster.
    clipped = np.clip(p, LOGIT_EPS, 1.0 - LOGIT_EPS)
    ordered = np.sort(clipped) if order is None else clipped.take(order)
    first = np.flatnonzero(np.r_[ordered[:1] == ordered[:1], ordered[1:] != ordered[:-1]])
    values = ordered[first]
    trials = np.diff(np.append(first, ordered.size)).astype(np.float64)
    # y holds 0 / 1: events are counts
    with_event = (np.sort(clipped[y == 1]) if order is None
                  else ordered[y.take(order) == 1])
    events = (np.searchsorted(with_event, values, side="right")
              - np.searchsorted(with_event, values, side="left")).astype(np.float64)
    return values, events, trials


def logistic_calibration(y, p, *, level: float = 0.95,
                         order=None) -> LogisticCalibration:
    """Calibration-in-the-large, intercept and slope of ``p`` against ``y`` (all queries).
    ``order``: the rows ordered by ``p`` ascending, when the caller has it (nothing is
    sorted again).

    >>> c = logistic_calibration([0, 1, 1, 0, 1, 0, 1, 0],
    ...                          [0.2, 0.7, 0.4, 0.6, 0.9, 0.3, 0.5, 0.1])
    >>> round(c.in_the_large, 4), round(c.intercept, 4), round(c.slope, 4)
    (1.0811, 0.2004, 1.8176)
    """
    y, p, _ = check_binary_inputs(y, p, probability=True)
    y = y.astype(np.float64)
    observed, expected = float(y.sum()), float(p.sum())
    if y.size == 0 or observed in (0.0, float(y.size)):
        return logistic_calibration_of_rows(np.empty(0), np.empty(0), np.empty(0),
                                            observed=observed, expected=expected, level=level)
    return logistic_calibration_of_rows(*_distinct_rows(y, p, checked_order(order, p)),
                                        observed=observed, expected=expected, level=level)


def logistic_calibration_of_rows(values, events, trials, *, observed: float, expected: float,
                                 level: float = 0.95,
                                 parts: tuple[str, ...] = ("intercept", "slope")
                                 ) -> LogisticCalibration:
    """:func:`logistic_calibration` from one row per distinct clipped ``p`` (ascending):
    ``events`` positives among ``trials`` queries, with ``observed`` = the positives and
    ``expected`` = the sum of ``p`` over all queries (engines that hold counts, not rows).
    ``parts``: the fits made (``"intercept"``, ``"slope"``); one left out is NaN without an
    interval."""
    unknown = set(parts) - {"intercept", "slope"}
    if unknown:
        raise ValueError(f"parts: {sorted(unknown)} is none of 'intercept', 'slope'")
    from metrics_core.metrics.uncertainty import normal_quantile

    z = normal_quantile(level)
    oe = observed / expected if expected > 0 else float("nan")
    oe_ci = None
    if observed > 0 and expected > 0:
        half = z / np.sqrt(observed)
        oe_ci = (float(oe * np.exp(-half)), float(oe * np.exp(half)))
    nan = float("nan")
    if not np.sum(trials) or observed in (0.0, float(np.sum(trials))):
        return LogisticCalibration(oe, oe_ci, nan, None, nan, None, "one class present")
    logit = np.log(values) - np.log1p(-values)
    ones = np.ones((values.size, 1))
    fit_a = _newton(ones, events, logit, trials=trials) if "intercept" in parts else None
    fit_b = _newton(np.column_stack([ones, logit]), events, np.zeros(values.size),
                    trials=trials) if "slope" in parts else None

    def estimate(fit, j):
        if fit is None:
            return nan, None
        value, se = float(fit[0][j]), float(np.sqrt(fit[1][j, j]))
        return value, (value - z * se, value + z * se)

    a, a_ci = estimate(fit_a, 0)
    b, b_ci = estimate(fit_b, 1)
    made = [fit for fit, part in ((fit_a, "intercept"), (fit_b, "slope")) if part in parts]
    reason = "" if all(fit is not None for fit in made) else "the fit did not converge"
    return LogisticCalibration(oe, oe_ci, a, a_ci, b, b_ci, reason)


# ------------------------------------------------------------- smoothed calibration curve
def spline_knots(x: np.ndarray, n_knots: int = 5, degree: int = 3) -> np.ndarray:
    """Knot vector of a cubic B-spline of ``x``: ``n_knots`` knots at the quantiles of ``x``
    (0 %, 25 %, ..., 100 % for five) and ``degree`` more on each side, spaced as the outer
    interval (the construction of scikit-learn's ``SplineTransformer(knots="quantile")``).

    >>> spline_knots(np.arange(9.0)).tolist()
    [-6.0, -4.0, -2.0, 0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]
    """
    return spline_knots_of(np.percentile(x, 100 * np.linspace(0.0, 1.0, n_knots)), degree)


def spline_knots_of(base: np.ndarray, degree: int = 3) -> np.ndarray:
    """:func:`spline_knots` from its base knots (the quantiles of ``x``)."""
    low, high = base[1] - base[0], base[-1] - base[-2]
    return np.r_[np.linspace(base[0] - degree * low, base[0] - low, degree), base,
                 np.linspace(base[-1] + high, base[-1] + degree * high, degree)]


def bspline_basis(x: np.ndarray, knots: np.ndarray, degree: int = 3) -> np.ndarray:
    """B-spline basis functions of ``degree`` on ``knots`` at ``x``, one row per value,
    ``len(knots) - degree - 1`` columns (de Boor's triangle: only the ``degree + 1`` functions
    that are non-zero on a value's knot interval are computed).

    Only for ``x`` inside the knots' base range ``knots[degree] .. knots[-degree - 1]`` (as
    every value it is given here is).

    >>> b = bspline_basis(np.array([0.5, 2.0, 4.0]), spline_knots(np.arange(5.0)))
    >>> b.sum(axis=1).round(12).tolist()  # a partition of unity
    [1.0, 1.0, 1.0]
    >>> b[1].round(4).tolist()  # at a knot: 1/6, 2/3, 1/6
    [0.0, 0.0, 0.1667, 0.6667, 0.1667, 0.0, 0.0]
    """
    x = np.asarray(x, dtype=np.float64)
    t = np.asarray(knots, dtype=np.float64)
    n_basis = t.size - degree - 1
    # The knot interval t[i] <= x < t[i + 1] of each value (the last one closed on the right).
    i = np.clip(np.searchsorted(t, x, side="right") - 1, degree, n_basis - 1)
    values = [np.ones_like(x)]
    left, right = [None], [None]
    for j in range(1, degree + 1):
        left.append(x - t[i + 1 - j])
        right.append(t[i + j] - x)
        saved = np.zeros_like(x)
        for r in range(j):
            temp = values[r] / (right[r + 1] + left[j - r])
            values[r] = saved + right[r + 1] * temp
            saved = left[j - r] * temp
        values.append(saved)
    out = np.zeros((x.size, n_basis))
    rows = np.arange(x.size)
    for r in range(degree + 1):
        out[rows, i - degree + r] = values[r]
    return out


def _logistic_fit(x: np.ndarray, events: np.ndarray, trials: np.ndarray, start: np.ndarray,
                  *, max_iter: int = 200,
                  tol: float = 1e-9) -> tuple[np.ndarray, np.ndarray] | None:
    """Unpenalised logistic maximum likelihood of ``events`` out of ``trials`` at each row of
    a design ``x`` with its intercept column, by Newton's method from ``start``:
    (coefficients, fitted probabilities), or None when they do not settle. A step that lowers
    the likelihood is halved until it does not (sparse tails make full steps overshoot); a
    rank-deficient design (repeated knots) takes minimum-norm steps. Separated data (a tail
    without events) have no maximum: the fit stops where the likelihood stops rising, with
    that tail's fitted risk near 0 or 1 (the caller leaves such points out)."""

    def log_likelihood(eta):
        return float(np.sum(events * eta - trials * np.logaddexp(0.0, eta)))

    beta = np.asarray(start, dtype=np.float64).copy()
    eta = x @ beta
    current = log_likelihood(eta)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for _ in range(max_iter):
            mu = 1.0 / (1.0 + np.exp(-eta))
            information = x.T @ (x * (trials * mu * (1.0 - mu))[:, None])
            step = np.linalg.lstsq(information, x.T @ (events - trials * mu), rcond=None)[0]
            for _ in range(60):
                trial = x @ (beta + step)
                value = log_likelihood(trial)
                if value >= current - 1e-12 * abs(current):
                    break
                step = step / 2.0
            gain = value - current
            beta, eta, current = beta + step, trial, value
            if not np.all(np.isfinite(beta)):
                return None
            # Settled: the step is negligible, or the likelihood no longer rises (under
            # separation it only creeps towards its supremum while coefficients run off).
            if (np.abs(step).max() <= tol * max(1.0, np.abs(beta).max())
                    or gain <= 1e-13 * abs(current)):
                return beta, 1.0 / (1.0 + np.exp(-eta))
    return None


#: Largest |logit| of a smoothed-calibration point that is drawn (fitted risk 1e-13).
_ESTIMABLE_LOGIT = 30.0


def smoothed_calibration(y, p, *, n_knots: int = 5, n_points: int = 101,
                         level: float = 0.95, order=None):
    """Flexible calibration curve: observed risk as a smooth function of predicted risk.

    An unpenalised logistic regression of ``y`` on a cubic B-spline of ``logit(p)``
    (``n_knots`` knots at quantiles, the basis of scikit-learn's
    ``SplineTransformer(knots="quantile", include_bias=False)``; maximum likelihood by
    Newton's method), evaluated on ``n_points`` values of ``p`` between its 1st and 99th
    percentiles (no extrapolation into the tails), with a pointwise Wald band from the model's
    covariance ``(Xᵀ W X)⁻¹``. Beside the binned reliability diagram it shows the same
    calibration without depending on bin edges. The tests check it against statsmodels' GLM on
    scikit-learn's spline basis.

    Returns columns ``p``, ``observed`` (fitted P(y = 1 | p)), ``lo``, ``hi``; empty when one
    class is absent, fewer than 20 queries are given, p takes fewer distinct values than the
    spline has coefficients (``n_knots + 2``) or the fit does not converge. Where a tail of p
    holds no event (or no non-event) the curve does not exist (separation: the fitted risk
    runs to 0 or 1); grid points with a fitted risk beyond 1e-13 of 0 or 1 are left out.
    ``order``: the rows ordered by ``p`` ascending, when the caller has it.
    """
    y = np.asarray(y, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    if y.size < 20 or y.min() == y.max():
        return empty_smoothed_curve()
    values, events, trials = _distinct_rows(y, p, checked_order(order, p))
    if values.size < n_knots + 2:  # fewer distinct values than the spline's coefficients
        return empty_smoothed_curve()
    knots = spline_knots(clipped_logit(p), n_knots)
    lo_p, hi_p = np.percentile(p, [1, 99])
    return smoothed_curve(values, events, trials, knots, (lo_p, hi_p), n_points=n_points,
                          level=level)


def clipped_logit(values):
    """logit of ``values`` clipped to [LOGIT_EPS, 1 - LOGIT_EPS]."""
    clipped = np.clip(values, LOGIT_EPS, 1 - LOGIT_EPS)
    return np.log(clipped / (1 - clipped))


def empty_smoothed_curve():
    """:func:`smoothed_calibration`'s empty frame (no curve), with its columns."""
    import pandas as pd

    return pd.DataFrame({c: np.empty(0) for c in ("p", "observed", "lo", "hi")})


def smoothed_curve(values, events, trials, knots, p_range, *, n_points: int = 101,
                   level: float = 0.95):
    """The fit and curve of :func:`smoothed_calibration` from its distinct rows (``values``:
    the distinct clipped ``p``, ascending; ``events`` / ``trials`` at each), the spline's
    ``knots`` (:func:`spline_knots` of every query's logit) and ``p_range``, the 1st and 99th
    percentiles of every query's ``p`` (the grid's ends): whoever gives these, rows or
    counts, gets the same curve."""
    import pandas as pd

    from metrics_core.metrics.uncertainty import normal_quantile

    empty = empty_smoothed_curve()
    logit = clipped_logit
    # The basis without its last function (include_bias=False), beside an intercept.
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.c_[np.ones(values.size), bspline_basis(logit(values), knots)[:, :-1]]
    if not np.isfinite(x).all():  # knots so tied that a data value has no interval
        return empty
    # Start from the identity, observed = p: the spline reproduces logit(p) with the knots'
    # Greville averages as coefficients (the last one is the intercept, as the basis sums to 1).
    greville = np.convolve(knots[1:-1], np.ones(3) / 3, mode="valid")
    try:
        fit = _logistic_fit(x, events, trials, np.r_[greville[-1], greville[:-1] - greville[-1]])
    except np.linalg.LinAlgError:
        fit = None
    if fit is None:
        return empty
    beta, fitted = fit
    covariance = np.linalg.pinv(x.T @ (x * (trials * fitted * (1 - fitted))[:, None]))
    lo_p, hi_p = p_range
    grid = np.linspace(lo_p, hi_p, n_points)
    with np.errstate(divide="ignore", invalid="ignore"):
        xg = np.c_[np.ones(n_points), bspline_basis(logit(grid), knots)[:, :-1]]
    if not np.isfinite(xg).all():
        return empty
    eta = xg @ beta
    # A tail with no events (or no non-events) has no maximum-likelihood curve: the fit runs
    # its coefficients off towards ±∞ there, and a Wald band is meaningless. Such points
    # (fitted risk below 1e-13 or above 1 - 1e-13; every data value's logit is within ±27.6)
    # are left out rather than drawn as certain.
    keep = np.abs(eta) <= _ESTIMABLE_LOGIT
    grid, xg, eta = grid[keep], xg[keep], eta[keep]
    se = np.sqrt(np.einsum("ij,jk,ik->i", xg, covariance, xg))
    z = normal_quantile(level)

    def expit(values):
        with np.errstate(over="ignore"):
            return 1.0 / (1.0 + np.exp(-values))

    return pd.DataFrame({"p": grid, "observed": expit(eta), "lo": expit(eta - z * se),
                         "hi": expit(eta + z * se)})
