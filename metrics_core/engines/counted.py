"""Values from counted data: what the reduced Dask run makes of sums instead of rows.

numpy's linear quantiles of counted values (:func:`counted_quantile`, :func:`hist_quantile`),
the calibration view's reliability bins and ECE / MCE (:func:`calibration_bins`,
:func:`reliability_values`) and the logistic calibration fits (:func:`logistic_fits`) from the
counts by distinct ``p`` (:class:`~metrics_core.engines.reductions.ScoreCounts`), the
multi-label metrics (§8) from the sums of their cells (:func:`multilabel_of_sums`). Each gives
the in-memory kernel's value on the rows the counts stand for (contract §5, §7, §8).
"""

from __future__ import annotations

import math

import numpy as np

from metrics_core.engines.reductions import ScoreCounts

__all__ = ["CRITERION_COLUMNS", "POST_COLUMNS", "add_hist", "calibration_bins",
           "calibration_rows", "counted_quantile", "f1_of_counts", "hist_quantile",
           "logistic_fits", "multilabel_of_sums", "reliability_values",
           "smoothed_calibration_of_counts"]


def counted_quantile(values: np.ndarray, counts: np.ndarray, fraction: float) -> float:
    """``numpy.quantile(rows, fraction)`` (linear) of the rows that are ``counts[i]`` times
    ``values[i]`` (``values`` ascending); ``nan`` when there is no row."""
    counts = np.asarray(counts)
    n = int(counts.sum())
    if n == 0:
        return math.nan
    cum = np.cumsum(counts)
    pos = (n - 1) * fraction
    lo = math.floor(pos)
    a = float(values[np.searchsorted(cum, lo, side="right")])
    b = float(values[np.searchsorted(cum, min(lo + 1, n - 1), side="right")])
    t = pos - lo
    return a + (b - a) * t if t < 0.5 else b - (b - a) * (1 - t)


def hist_quantile(hist: np.ndarray, q: float) -> float:
    """``numpy.percentile(values, q)`` (linear) of the integers whose counts are ``hist``
    (``hist[v]`` values equal to ``v``); ``nan`` when empty."""
    return counted_quantile(np.arange(len(hist)), hist, q / 100)


def calibration_rows(values, pos, neg, view: str):
    """(confidence, outcome-1 count, total) per distinct ``p`` for the calibration view:
    ``pos`` / ``neg`` may be ``(resamples, values)`` weighted counts."""
    total = pos + neg
    if view != "top_label":
        return values, pos, total
    predicted = values >= 0.5
    return np.where(predicted, values, 1.0 - values), np.where(predicted, pos, neg), total


def _bins(conf, total, n_bins: int, strategy: str):
    """Bin of every distinct confidence with the in-memory edges (contract §5), the number of
    bins."""
    idx, edges = _binned(conf, total, n_bins, strategy)
    return idx, edges.size - 1


def calibration_bins(counts: ScoreCounts, config):
    """``(confidence, outcome-1 count, total, bin, edges)`` of each distinct ``p`` in the
    calibration view, with the in-memory bins (contract §5)."""
    conf, ones, total = calibration_rows(counts.values, counts.pos, counts.neg,
                                          config.calibration_view)
    idx, edges = _binned(conf, total, config.n_bins, config.binning)
    return conf, ones, total, idx, edges


def _binned(conf, total, n_bins: int, strategy: str):
    """(bin of every distinct confidence, the edges)."""
    if strategy == "uniform":
        edges = np.arange(n_bins + 1, dtype=np.float64) / n_bins
    elif total.sum() == 0:
        edges = np.array([0.0, 1.0])
    else:
        order = np.argsort(conf, kind="stable")
        edges = np.unique([counted_quantile(conf[order], total[order], f)
                           for f in np.arange(n_bins + 1) / n_bins])
        if edges.size == 1:
            edges = np.repeat(edges, 2)
    k = edges.size - 1
    return np.clip(np.searchsorted(edges, conf, side="right") - 1, 0, k - 1), edges


def reliability_values(counts: ScoreCounts, config) -> tuple[float, float]:
    """ECE and MCE of the calibration view from the score counts (the in-memory bins)."""
    conf, ones, total = calibration_rows(counts.values, counts.pos, counts.neg,
                                          config.calibration_view)
    idx, k = _bins(conf, total, config.n_bins, config.binning)
    count = np.bincount(idx, weights=total, minlength=k)
    positives = np.bincount(idx, weights=ones, minlength=k)
    sum_p = np.bincount(idx, weights=conf * total, minlength=k)
    filled = count > 0
    n = count.sum()
    if not n:
        return math.nan, math.nan
    gap = np.abs(positives[filled] / count[filled] - sum_p[filled] / count[filled])
    return float(np.sum(count[filled] / n * gap)), float(np.max(gap))


def logistic_fits(counts: ScoreCounts):
    """The logistic calibration (§5) from the counts: one row per distinct clipped ``p``."""
    from metrics_core.metrics import calibration

    total = counts.pos + counts.neg
    clipped = np.clip(counts.values, calibration.LOGIT_EPS, 1.0 - calibration.LOGIT_EPS)
    values, inverse = np.unique(clipped, return_inverse=True)
    return calibration.logistic_calibration_of_rows(
        values, np.bincount(inverse, weights=counts.pos, minlength=values.size),
        np.bincount(inverse, weights=total, minlength=values.size),
        observed=float(counts.pos.sum()), expected=float(np.sum(counts.values * total)))



def smoothed_calibration_of_counts(counts: ScoreCounts, *, n_knots: int = 5,
                                   n_points: int = 101, level: float = 0.95):
    """:func:`metrics_core.metrics.calibration.smoothed_calibration` from the counts by
    distinct ``p`` (contract §5): the fit already runs on one row per distinct clipped ``p``
    (events, trials: its likelihood is the sum over the queries'), and the two things it reads
    from every query are numpy's linear quantiles of the counted values, the knots (of
    ``logit(p)``, ascending with ``p``) and the grid's ends (the 1st and 99th percentiles of
    ``p``). The same rows, knots and ends give the same curve, bit for bit."""
    from metrics_core.metrics import calibration

    total = counts.pos + counts.neg
    n, n_events = int(total.sum()), int(counts.pos.sum())
    if n < 20 or n_events in (0, n):
        return calibration.empty_smoothed_curve()
    clipped = np.clip(counts.values, calibration.LOGIT_EPS, 1.0 - calibration.LOGIT_EPS)
    values, inverse = np.unique(clipped, return_inverse=True)
    if values.size < n_knots + 2:
        return calibration.empty_smoothed_curve()
    events = np.bincount(inverse, weights=counts.pos, minlength=values.size)
    trials = np.bincount(inverse, weights=total, minlength=values.size)
    logits = calibration.clipped_logit(counts.values)

    def quantiles(sorted_values, percents):  # np.percentile's fractions: q / 100
        fractions = np.true_divide(np.asarray(percents, dtype=np.float64), 100)
        return np.array([counted_quantile(sorted_values, total, f) for f in fractions])

    knots_at = quantiles(logits, 100 * np.linspace(0.0, 1.0, n_knots))
    knots = calibration.spline_knots_of(knots_at)
    lo_p, hi_p = quantiles(counts.values, [1, 99])
    return calibration.smoothed_curve(values, events, trials, knots, (lo_p, hi_p),
                                      n_points=n_points, level=level)


#: Per-post multi-label sums: cells, wrong cells, TP, FP, FN, has a cell, no wrong cell, F1.
POST_COLUMNS = ("cells", "wrong", "tp", "fp", "fn", "has", "exact", "f1")
#: Per-criterion multi-label sums: TP, FP, FN, gold positives, cells.
CRITERION_COLUMNS = ("tp", "fp", "fn", "support", "cells")


def f1_of_counts(tp, fp, fn):
    """``2TP / (2TP + FP + FN)``, 1 where that is 0 / 0 (contract §8)."""
    tp, fp, fn = (np.asarray(a, dtype=np.float64) for a in (tp, fp, fn))
    denom = 2 * tp + fp + fn
    return np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1.0), 1.0)



def multilabel_of_sums(posts: np.ndarray, criteria: dict) -> dict:
    """The §8 metrics from the summed per-post (:data:`POST_COLUMNS`) and per-criterion
    (:data:`CRITERION_COLUMNS`) sums; a leading resample axis is kept when there is one."""
    posts = np.asarray(posts, dtype=np.float64)
    crit = np.stack([criteria[c] for c in sorted(criteria)], axis=-2) if criteria else None
    cells, wrong, tp, fp, fn, has, exact, f1 = np.moveaxis(posts, -1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        hamming = wrong / cells
        out = {"exact_match": exact / has, "hamming_score": 1.0 - hamming,
               "hamming_loss": hamming, "micro_f1": f1_of_counts(tp, fp, fn),
               "samples_f1": f1 / has}
        c_tp, c_fp, c_fn, support, c_cells = np.moveaxis(crit, -1, 0)
        per_crit = f1_of_counts(c_tp, c_fp, c_fn)
        drawn = c_cells > 0
        macro = np.sum(np.where(drawn, per_crit, 0.0), axis=-1) / drawn.sum(axis=-1)
        total = support.sum(axis=-1)
        weighted = np.where(total > 0, np.sum(per_crit * support, axis=-1)
                            / np.where(total > 0, total, 1.0), macro)
    out.update(macro_f1=macro, weighted_f1=weighted)
    undefined = cells == 0
    return {k: np.where(undefined, np.nan, v) for k, v in out.items()}



def add_hist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    width = max(a.shape[-1], b.shape[-1])
    pad = [(0, 0)] * (a.ndim - 1)
    return (np.pad(a, [*pad, (0, width - a.shape[-1])])
            + np.pad(b, [*pad, (0, width - b.shape[-1])]))
