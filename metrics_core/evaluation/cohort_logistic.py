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

3. **The slope** (``logit P(y=1) = a + b·logit(p)``, §5) the same way, from the cohort's
   own fit ``(â, b̂)`` (:func:`slope_centres`): the two-parameter score of a resample at
   ``(â + δa, b̂ + δb)`` is a power series in ``(δa, δb)`` whose coefficients
   ``Σ w σ⁽ᵐ⁾(â + b̂x) xᵏ / m!`` are linear in the weights (:func:`slope_columns`, summed in
   the same pass as the intercept's). Newton's method on it to :data:`SLOPE_ORDER` from the
   one-step estimate gives ``δ``; the last two orders' terms, in absolute value, bound the
   error. Then the exact fits near the order statistics, as for the intercept (each exact
   fit of the value needed: the intercept's and the slope's resamples differ).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from metrics_core.metrics import calibration

__all__ = ["ORDER", "SLOPE_COLUMNS", "ExactFits", "moment_columns", "resampled_intercepts",
           "resampled_slopes", "slope_centres"]

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


def moment_columns(ds, codes: np.ndarray, fitted: np.ndarray,
                   centres: np.ndarray | None = None) -> np.ndarray:
    """``(n_queries, ORDER + 3)`` per-query terms whose weighted sums over a cohort's queries
    are its series' coefficients on a resample: the weight, ``y``, then
    ``σ⁽ᵏ⁾(â + x) / k!`` for k ≤ :data:`ORDER`, each query at its cohort's ``â``; with
    ``centres`` (the cohorts' slope fits, :func:`slope_centres`) the
    :data:`SLOPE_COLUMNS` of :func:`slope_columns` after them."""
    x = _logit(ds.p)
    mu = 1.0 / (1.0 + np.exp(-(np.nan_to_num(fitted[codes]) + x)))
    cols = [np.ones_like(x), np.asarray(ds.y, dtype=np.float64)]
    factorial = 1.0
    for k, d in enumerate(_derivatives(ORDER)):
        factorial *= max(k, 1)
        cols.append(d(mu) / factorial)
    if centres is not None:
        cols.extend(slope_columns(x, np.asarray(ds.y, dtype=np.float64), codes, centres).T)
    return np.column_stack(cols)


#: Order of the slope's series in ``(δa, δb)``.
SLOPE_ORDER = 8
#: Newton steps on the slope's series (from the one-step estimate).
SLOPE_STEPS = 4
#: The series' terms ``(m, k)``: ``σ⁽ᵐ⁾(η̂) xᵏ / m!`` for m ≤ :data:`SLOPE_ORDER`, k ≤ m + 1.
_TERMS = tuple((m, k) for m in range(SLOPE_ORDER + 1) for k in range(m + 2))
#: Per-query terms of the slope's series (:func:`slope_columns`): ``y``, ``y·x``, the terms.
SLOPE_COLUMNS = 2 + len(_TERMS)


def slope_columns(x: np.ndarray, y: np.ndarray, codes: np.ndarray,
                  centres: np.ndarray) -> np.ndarray:
    """``(n_queries, SLOPE_COLUMNS)``: ``y``, ``y·x``, then ``σ⁽ᵐ⁾(η̂) xᵏ / m!`` for
    m ≤ :data:`SLOPE_ORDER`, k ≤ m + 1, ``η̂ = â + b̂·x`` at each query's cohort's fit
    (``centres`` ``(g, 2)``)."""
    c = np.nan_to_num(centres)[codes]
    mu = 1.0 / (1.0 + np.exp(-(c[:, 0] + c[:, 1] * x)))
    out = np.empty((x.size, SLOPE_COLUMNS))
    out[:, 0], out[:, 1] = y, y * x
    powers = [np.ones_like(x)]
    for _ in range(SLOPE_ORDER + 1):
        powers.append(powers[-1] * x)
    factorial = 1.0
    i = 2
    for m, d in enumerate(_derivatives(SLOPE_ORDER)):
        factorial *= max(m, 1)
        s = d(mu) / factorial
        for k in range(m + 2):
            out[:, i] = s * powers[k]
            i += 1
    return out


def slope_centres(ds, codes: np.ndarray, g: int) -> np.ndarray:
    """``(g, 2)``: each cohort's ``(a, b)`` of ``logit P(y=1) = a + b·logit(p)`` on the data
    (Newton's method on all cohorts at once; NaN where a cohort has one class, a singular
    information or no convergence, as §5 leaves the slope undefined)."""
    x = _logit(ds.p)
    y = np.asarray(ds.y, dtype=np.float64)
    beta = np.zeros((g, 2))
    live = np.ones(g, dtype=bool)
    converged = np.zeros(g, dtype=bool)
    with np.errstate(all="ignore"):
        for _ in range(100):
            eta = beta[codes, 0] + beta[codes, 1] * x
            mu = 1.0 / (1.0 + np.exp(-eta))
            v = mu * (1.0 - mu)
            s = [np.bincount(codes, weights=w, minlength=g) for w in
                 (y - mu, (y - mu) * x, v, v * x, v * x * x)]
            step = _solve2(s[2], s[3], s[4], s[0], s[1])
            beta = np.where(live[:, None], beta + step, beta)
            bad = ~np.all(np.isfinite(beta), axis=1) | (np.abs(beta).max(axis=1) > 1e6)
            live &= ~bad
            converged |= live & (np.abs(step).max(axis=1) < 1e-10)
            live &= ~converged
            if not live.any():
                break
    return np.where(converged[:, None], beta, np.nan)


def _solve2(h00, h01, h11, g0, g1) -> np.ndarray:
    """``(..., 2)``: the solution of the symmetric 2 × 2 systems (NaN where singular)."""
    det = h00 * h11 - h01 * h01
    ok = det > 1e-12 * np.abs(h00 * h11)
    det = np.where(ok, det, np.nan)
    return np.stack([(h11 * g0 - h01 * g1) / det, (h00 * g1 - h01 * g0) / det], axis=-1)


def _solve(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(δ, bound)``: the change solving the series, and the change its last term makes."""
    n_k = np.ascontiguousarray(s[..., 2:])  # read on every step: not strided
    k = np.arange(ORDER + 1)
    dn_k = n_k[..., 1:] * k[1:]  # the derivative's coefficients
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
            df = -(dn_k * pw[..., :-1]).sum(-1)
            step = f / df
            d = d - step
        pw = powers(d)
        df = -(dn_k * pw[..., :-1]).sum(-1)
        bound = np.abs(n_k[..., -1] * pw[..., -1] / df) + np.abs(step)
    return d, bound


class ExactFits:
    """The calibration fits of a cohort's queries (``rows``) each counted as often as a
    resample draws its post, by the point estimate's code (its intercept and slope NaN where
    it gives none): one row per distinct clipped p, its events and trials the resample's.
    ``part``: the one fit made (``"intercept"`` or ``"slope"``; the other NaN), or both."""

    def __init__(self, ds, rows: np.ndarray, part: str | None = None):
        self.parts = ("intercept", "slope") if part is None else (part,)
        clipped = np.clip(np.asarray(ds.p[rows], dtype=np.float64), calibration.LOGIT_EPS,
                          1.0 - calibration.LOGIT_EPS)
        self.values, self.inverse = np.unique(clipped, return_inverse=True)
        self.y = np.asarray(ds.y[rows], dtype=np.float64)
        self.p = np.asarray(ds.p[rows], dtype=np.float64)

    def __call__(self, weights: np.ndarray) -> calibration.LogisticCalibration:
        w = np.asarray(weights, dtype=np.float64)
        size = self.values.size
        return calibration.logistic_calibration_of_rows(
            self.values, np.bincount(self.inverse, weights=w * self.y, minlength=size),
            np.bincount(self.inverse, weights=w, minlength=size),
            observed=float(np.sum(w * self.y)), expected=float(np.sum(w * self.p)),
            parts=self.parts)


def _exact_ends(v: np.ndarray, e: np.ndarray, unsure: np.ndarray,
                exact: Callable[[int], float]) -> np.ndarray | None:
    """One cohort's resampled values (``v``, NaN: left out), exact wherever the percentile
    interval's order statistics can be: ``unsure`` fitted exactly first, then every resample
    whose ``[v - e, v + e]`` reaches a bound of the two order statistics of either end, until
    none does (an exact value beyond its ``e`` widens every ``e`` ten times). None beyond
    :data:`MOST_EXACT` exact fits."""
    r_n = v.size
    if unsure.sum() > MOST_EXACT:
        return None
    done = np.zeros(r_n, dtype=bool)

    def refine(rows) -> bool:
        """Fit ``rows`` exactly; False when an approximation missed its bound."""
        held = True
        for r in rows.tolist():
            got = exact(r)
            if np.isfinite(v[r]) and np.isfinite(e[r]) and np.isfinite(got) \
                    and abs(got - v[r]) > e[r]:
                held = False
            v[r], e[r], done[r] = got, 0.0, True
        return held

    refine(np.flatnonzero(unsure))
    while True:
        if done.sum() > MOST_EXACT:
            return None
        finite = np.isfinite(v)
        n = int(finite.sum())
        if n < 2:
            return v
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
            return v
        if not refine(np.flatnonzero(want)):  # a bound missed: widen them all
            e[~done] *= 10.0


def resampled_intercepts(sums: np.ndarray, fitted: np.ndarray,
                         exact: Callable[[int, int], float]) -> np.ndarray:
    """``(R, g)``: each cohort's intercept per resample, exact at the order statistics the
    percentile interval reads (NaN: left out; a cohort's column all NaN where it has no
    interval). ``sums`` ``(R, g, ORDER + 3 [+ SLOPE_COLUMNS])``: :func:`moment_columns`
    summed per cohort on each resample; ``fitted`` the cohorts' intercepts; ``exact(r, j)``
    cohort j's exact intercept on resample r."""
    sums = sums[..., :ORDER + 3]
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
        got = _exact_ends(v, e, unsure, lambda r, j=j: exact(r, j))
        if got is not None:
            out[:, j] = got
    return out


def _polynomial(c: list, da: np.ndarray, db: np.ndarray) -> np.ndarray:
    """``Σ c[q][k] δaᵠ δbᵏ`` over q + k ≤ :data:`SLOPE_ORDER` (Horner's scheme in both;
    ``c[q][k]`` arrays that broadcast against ``δa``, e.g. several polynomials stacked)."""
    n = len(c)
    out = None
    for k in range(n - 1, -1, -1):
        inner = c[n - 1 - k][k].copy()  # the highest power of δa with δbᵏ
        for q in range(n - 2 - k, -1, -1):
            inner *= da
            inner += c[q][k]
        out = inner if out is None else out * db + inner
    return out


#: Resamples × cohorts per block of the slope's Newton solve (its coefficients' temporaries
#: a few megabytes whatever the resamples and cohorts; benchmarks/README.md).
SLOPE_BLOCK = 4096


def _solve_slope(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(δb, bound)``: Newton's method on the slope's series (from :func:`slope_columns`'
    sums ``s`` ``(R, ..., SLOPE_COLUMNS)``; from the one-step estimate), and what the series'
    last two orders change, their terms taken in absolute value (no cancellation trusted);
    a block of resamples at a time (:data:`SLOPE_BLOCK`)."""
    lead = s.shape[:-1]
    per = max(1, SLOPE_BLOCK // max(1, int(np.prod(lead[1:], dtype=np.int64))))
    db, bound = np.empty(lead), np.empty(lead)
    for start in range(0, lead[0], per):
        block = np.moveaxis(s[start:start + per], -1, 0).copy()  # each term contiguous
        db[start:start + per], bound[start:start + per] = _solve_slope_block(block)
    return db, bound


def _solve_slope_block(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_solve_slope` of one block, ``s`` ``(SLOPE_COLUMNS, ...)``. The score's two
    entries and the three distinct entries of its Jacobian are five polynomials in
    ``(δa, δb)`` evaluated together (stacked on a new first axis)."""
    from math import comb

    n = SLOPE_ORDER + 1
    shape = s.shape[1:]
    # the score's r-th entry: Σ_m Σ_k C(m, k) Σ w σ⁽ᵐ⁾ x^(k + r) / m! · δa^(m - k) δb^k;
    # stacked[q][k]: (score 0, score 1, ∂0/∂δa, ∂0/∂δb, ∂1/∂δb) of δaᵠ δbᵏ, q + k < n
    stacked = [[np.empty((5, *shape)) for k in range(n - q)] for q in range(n)]
    tail = [[np.zeros((2, *shape)) for k in range(n - q)] for q in range(n)]
    for i, (m, k) in enumerate(_TERMS):
        for r in (0, 1):
            if k - r < 0 or k - r > m:
                continue
            value = comb(m, k - r) * s[2 + i]
            stacked[m - (k - r)][k - r][r] = value
            if m >= SLOPE_ORDER - 1:
                tail[m - (k - r)][k - r][r] = np.abs(value)
    for q in range(n):
        for k in range(n - q):
            top = q + k == n - 1  # the derivative's term from beyond the series: none
            cell = stacked[q][k]
            if top:
                cell[2:] = 0.0
            else:
                np.multiply(stacked[q + 1][k][0], q + 1, out=cell[2])
                np.multiply(stacked[q][k + 1][0], k + 1, out=cell[3])
                np.multiply(stacked[q][k + 1][1], k + 1, out=cell[4])
    with np.errstate(all="ignore"):
        d = _solve2(stacked[1][0][0], stacked[0][1][0], stacked[0][1][1],
                    s[0] - stacked[0][0][0], s[1] - stacked[0][0][1])
        da, db = d[..., 0], d[..., 1]
        for _ in range(SLOPE_STEPS):
            f0, f1, j00, j01, j11 = _polynomial(stacked, da, db)
            step = _solve2(j00, j01, j11, s[0] - f0, s[1] - f1)
            da, db = da + step[..., 0], db + step[..., 1]
        t0, t1 = _polynomial(tail, np.abs(da), np.abs(db))
        det = np.abs(j00 * j11 - j01 * j01)
        bound = (np.abs(j01) * t0 + np.abs(j00) * t1) / det + np.abs(step[..., 1])
    return db, bound


def resampled_slopes(sums: np.ndarray, centres: np.ndarray,
                     exact: Callable[[int, int], float]) -> np.ndarray:
    """``(R, g)``: each cohort's calibration slope per resample, exact at the order
    statistics the percentile interval reads (NaN: left out, as a resample with one class or
    without an exact fit is; a cohort's column all NaN where it has no interval). ``sums``
    ``(R, g, ORDER + 3 + SLOPE_COLUMNS)``: :func:`moment_columns` with the slope's columns
    summed per cohort on each resample; ``centres`` ``(g, 2)`` the cohorts' ``(a, b)``
    (:func:`slope_centres`); ``exact(r, j)`` cohort j's exact slope on resample r."""
    two = (sums[..., 1] > 0) & (sums[..., 0] - sums[..., 1] > 0)
    delta, bound = _solve_slope(sums[..., ORDER + 3:])
    r_n, g = two.shape
    out = np.full((r_n, g), np.nan)
    for j in range(g):
        if not np.all(np.isfinite(centres[j])):
            continue
        v = np.where(two[:, j], centres[j, 1] + delta[:, j], np.nan)
        e = np.where(two[:, j], bound[:, j] + 1e-9 * (1.0 + np.abs(v)), np.nan)
        unsure = two[:, j] & ~(np.isfinite(v) & np.isfinite(e) & (e < 0.5))
        got = _exact_ends(v, e, unsure, lambda r, j=j: exact(r, j))
        if got is not None:
            out[:, j] = got
    return out
