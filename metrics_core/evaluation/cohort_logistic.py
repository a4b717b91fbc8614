"""The calibration intercept of each cohort on every resample of posts (contract §9).

The intercept is a logistic maximum-likelihood fit (§5: ``logit P(y=1) = a + logit(p)``), so a
resample's value is no ratio of sums, and a fit per resample and cohort (10,000 × the cohorts)
is too slow; the percentile interval needs only two order statistics of the resampled values.

1. **A power series per resample.** Around the cohort's own intercept ``â`` the score of a
   resample, ``Σ w (y - σ(â + δ + x))`` (``x = logit(p)``), is a power series in the change
   ``δ`` whose coefficients ``Σ w σ⁽ᵏ⁾(â + x) / k!`` are linear in the weights: one product of
   the posts' weights with per-post sums gives them for every resample
   (:func:`moment_columns`, summed in the pass over the resamples as every other cohort
   sum). Newton's method on the series to :data:`ORDER` gives ``δ``; the change its last term
   makes, times :data:`MARGIN`, bounds the error. The series converges while ``|δ| < π``
   (σ's poles at ``iπ``); resamples beyond ``π / 2`` are fitted exactly.
2. **Exact where it matters.** The order statistics the interval reads can only be those of
   resamples whose bounds reach them; those resamples are fitted exactly (the cohort's
   queries weighted by the resample's counts, by
   :func:`metrics_core.metrics.calibration.logistic_calibration_of_rows`, the code of the
   point estimate; a fit that gives no value is left out, as one class is), until no bound
   reaches them (an exact fit beyond its approximation's bound widens every bound). The
   interval is then the percentile interval of the exact values.

The slope (``a + b·logit(p)``) has no such interval: its series in ``(δa, δb)`` converges
much more slowly (``δb·x`` is large where ``|x|`` is), and the cost is beyond the cohort
tables' time (contract §9).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from metrics_core.metrics import calibration

__all__ = ["ORDER", "ExactFits", "moment_columns", "resampled_intercepts"]

#: Order of the power series.
ORDER = 6
#: The bound on the error: the last term's change times this (widened ten times, and again,
#: whenever an exact fit finds an approximation beyond its bound).
MARGIN = 10.0
#: Most exact fits per cohort; beyond, the cohort's interval is left out (``None``).
MOST_EXACT = 400
#: Newton steps on the series (from δ = 0; the resamples' δ are small).
STEPS = 6


def _derivatives(order: int) -> list[np.poly1d]:
    """σ⁽ᵏ⁾ as a polynomial in μ = σ(η), k = 0 .. order (dμ/dη = μ(1 - μ))."""
    out = [np.poly1d([1.0, 0.0])]
    slope = np.poly1d([-1.0, 1.0, 0.0])
    for _ in range(order):
        out.append(np.polyder(out[-1]) * slope)
    return out


def _logit(p) -> np.ndarray:
    clipped = np.clip(np.asarray(p, dtype=np.float64), calibration.LOGIT_EPS,
                      1.0 - calibration.LOGIT_EPS)
    return np.log(clipped) - np.log1p(-clipped)


def moment_columns(ds, codes: np.ndarray, fitted: np.ndarray) -> np.ndarray:
    """``(n_queries, ORDER + 3)`` per-query terms whose weighted sums over a cohort's queries
    are its series' coefficients on a resample: the weight, ``y``, then
    ``σ⁽ᵏ⁾(â + x) / k!`` for k ≤ :data:`ORDER`, each query at its cohort's ``â``."""
    x = _logit(ds.p)
    mu = 1.0 / (1.0 + np.exp(-(np.nan_to_num(fitted[codes]) + x)))
    cols = [np.ones_like(x), np.asarray(ds.y, dtype=np.float64)]
    factorial = 1.0
    for k, d in enumerate(_derivatives(ORDER)):
        factorial *= max(k, 1)
        cols.append(d(mu) / factorial)
    return np.column_stack(cols)


def _solve(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(δ, bound)``: the change solving the series, and the change its last term makes."""
    n_k = s[..., 2:]
    k = np.arange(ORDER + 1)
    d = np.zeros(s.shape[:-1])

    def powers(d):
        out = np.empty((*d.shape, ORDER + 1))
        out[..., 0] = 1.0
        for i in range(1, ORDER + 1):
            np.multiply(out[..., i - 1], d, out=out[..., i])
        return out

    with np.errstate(all="ignore"):
        for _ in range(STEPS):
            pw = powers(d)
            f = s[..., 1] - (n_k * pw).sum(-1)
            df = -(n_k[..., 1:] * k[1:] * pw[..., :-1]).sum(-1)
            step = f / df
            d = d - step
        pw = powers(d)
        df = -(n_k[..., 1:] * k[1:] * pw[..., :-1]).sum(-1)
        bound = np.abs(n_k[..., -1] * pw[..., -1] / df) + np.abs(step)
    return d, bound


class ExactFits:
    """The calibration intercept of a cohort's queries (``rows``) each counted as often as a
    resample draws its post, by the point estimate's code (NaN where it gives none): one row
    per distinct clipped p, its events and trials the resample's."""

    def __init__(self, ds, rows: np.ndarray):
        clipped = np.clip(np.asarray(ds.p[rows], dtype=np.float64), calibration.LOGIT_EPS,
                          1.0 - calibration.LOGIT_EPS)
        self.values, self.inverse = np.unique(clipped, return_inverse=True)
        self.y = np.asarray(ds.y[rows], dtype=np.float64)
        self.p = np.asarray(ds.p[rows], dtype=np.float64)

    def __call__(self, weights: np.ndarray) -> float:
        w = np.asarray(weights, dtype=np.float64)
        size = self.values.size
        return calibration.logistic_calibration_of_rows(
            self.values, np.bincount(self.inverse, weights=w * self.y, minlength=size),
            np.bincount(self.inverse, weights=w, minlength=size),
            observed=float(np.sum(w * self.y)), expected=float(np.sum(w * self.p))).intercept


def resampled_intercepts(sums: np.ndarray, fitted: np.ndarray,
                         exact: Callable[[int, int], float]) -> np.ndarray:
    """``(R, g)``: each cohort's intercept per resample, exact at the order statistics the
    percentile interval reads (NaN: left out; a cohort's column all NaN where it has no
    interval). ``sums`` ``(R, g, ORDER + 3)``: :func:`moment_columns` summed per cohort on
    each resample; ``fitted`` the cohorts' intercepts; ``exact(r, j)`` cohort j's exact
    intercept on resample r."""
    r_n, g, _ = sums.shape
    out = np.full((r_n, g), np.nan)
    two = (sums[..., 1] > 0) & (sums[..., 0] - sums[..., 1] > 0)
    delta, bound = _solve(sums)
    for j in range(g):
        if not np.isfinite(fitted[j]):
            continue
        v = np.where(two[:, j], fitted[j] + delta[:, j], np.nan)
        e = np.where(two[:, j], MARGIN * bound[:, j] + 1e-9 * (1.0 + np.abs(v)), np.nan)
        unsure = two[:, j] & ~((np.abs(delta[:, j]) < np.pi / 2) & np.isfinite(v)
                               & np.isfinite(e))
        if unsure.sum() > MOST_EXACT:
            continue
        done = np.zeros(r_n, dtype=bool)

        def refine(rows, v=v, e=e, done=done, j=j) -> bool:
            """Fit ``rows`` exactly; False when an approximation missed its bound."""
            held = True
            for r in rows.tolist():
                got = exact(r, j)
                if np.isfinite(v[r]) and np.isfinite(e[r]) and np.isfinite(got) \
                        and abs(got - v[r]) > e[r]:
                    held = False
                v[r], e[r], done[r] = got, 0.0, True
            return held

        refine(np.flatnonzero(unsure))
        complete = True
        while True:
            if done.sum() > MOST_EXACT:
                complete = False
                break
            finite = np.isfinite(v)
            n = int(finite.sum())
            if n < 2:
                break
            ranks = set()
            for q in (0.025, 0.975):
                pos = (n - 1) * q
                ranks |= {int(np.floor(pos)), int(np.ceil(pos))}
            low = np.sort(v[finite] - e[finite])
            high = np.sort(v[finite] + e[finite])
            want = np.zeros(r_n, dtype=bool)
            for k in ranks:
                want |= finite & ~done & (v - e <= high[k]) & (v + e >= low[k])
            if not want.any():
                break
            if not refine(np.flatnonzero(want)):  # a bound missed: widen them all
                e[~done] *= 10.0
        if complete:
            out[:, j] = v
    return out
