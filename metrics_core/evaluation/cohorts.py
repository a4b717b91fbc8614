"""Cohorts: every per-group metric per cohort, disparities to the rest, weak segments (§9).

A cohort column (``site``, ``sex``, ``site*sex``; read by
:mod:`metrics_core.inputs.cohort_columns`) splits the queries into cohorts. For each cohort:

- every per-group metric of the registry, from the per-criterion table's own machinery
  (:func:`metrics_core.evaluation.tables.group_body` with the cohort codes as groups), with
  ``n``, ``n_positive`` and the small-cell flag (n or positives under 30); undefined stays NaN;
- for the disparity metrics (:data:`DISPARITY_METRICS`: AUROC, the confusion and gate rates,
  the Brier score, evidence recall and the ranking means at the reference K) the value of the
  rest of the data, the difference (and the ratio for rates), their bootstrap intervals, a
  p-value and its Holm adjustment across the cohorts of the column and the metrics. Every
  cohort of every column reads the same resamples: the run's post count matrix (posts are
  resampled, with all their queries), re-weighted, never one bootstrap per cohort. A cohort's
  statistic is a ratio of weighted sums (AUROC: of weighted pair counts), and the rest's is the
  whole data's minus the cohort's, so a resample costs one pass over the data per column.

The weak-segment search ranks the cohorts of every column and of every pair of columns (with
at least ``min_size`` queries) by how much worse than the rest each metric is, adjusting the
p-values for every segment tried (Holm).
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from metrics_core import registry
from metrics_core.metrics.curve_replicates import ScoreLayout
from metrics_core.metrics.uncertainty import Bootstrap, percentile_cis, weighted_int_quantiles

__all__ = ["DISPARITY_METRICS", "RATE_METRICS", "SMALL_CELL", "CohortResult", "Grouping",
           "add_to", "bootstrap_p_values", "cohort_tables", "evaluate_cohorts", "holm",
           "intersect"]

#: A cohort with fewer queries, or fewer positives, is a small cell (contract §9).
SMALL_CELL = 30
#: Metrics whose disparity to the rest is tested (the reference K's ranking means added).
DISPARITY_METRICS = ("auroc", "sensitivity", "specificity", "precision",
                     "screening_sensitivity", "false_flag_rate", "alert_precision", "brier",
                     "evidence_recall", "mrr")
#: Rates (a count over a count): their ratio to the rest is given too.
RATE_METRICS = frozenset({"sensitivity", "specificity", "precision", "screening_sensitivity",
                          "false_flag_rate", "alert_precision"})
#: Level of the flags and of the intervals.
ALPHA = 0.05
#: Default smallest segment of the weak-segment search (queries) and segments listed.
MIN_SEGMENT = 30
TOP_SEGMENTS = 10

COHORT_COLUMNS = ("column", "value", "metric", "estimate", "ci95", "n", "n_positive",
                  "rest_estimate", "difference", "difference_ci95", "ratio", "ratio_ci95",
                  "p_value", "p_adjusted", "flagged", "small", "defined")
WEAK_COLUMNS = ("metric", "segment", "columns", "estimate", "ci95", "n", "n_positive",
                "rest_estimate", "difference", "difference_ci95", "p_value", "p_adjusted",
                "flagged", "worse_by", "segments_tried")


class Grouping:
    """Cohort codes of the queries under a name: usable as a group label of
    :mod:`metrics_core.evaluation.tables` (hashable by its name, values and codes)."""

    def __init__(self, name: str, values: Sequence[str], codes: np.ndarray):
        self.name = str(name)
        self.values = tuple(str(v) for v in values)
        self.codes = np.ascontiguousarray(codes, dtype=np.int64)
        digest = hashlib.blake2b(self.codes.tobytes(), digest_size=16).hexdigest()
        self._key = (self.name, self.values, digest)

    @classmethod
    def of(cls, attribute) -> Grouping:
        return attribute if isinstance(attribute, Grouping) else cls(
            attribute.name, attribute.values, attribute.codes)

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other) -> bool:
        return isinstance(other, Grouping) and self._key == other._key

    def __repr__(self) -> str:
        return f"Grouping({self.name!r}, {len(self.values)} values)"

    def aligned(self, source, target) -> Grouping:
        """The codes of the queries of ``target`` (a data set whose queries are some of
        ``source``'s, e.g. a filtered run's)."""
        if target is source or target.n_queries == source.n_queries:
            return self
        keys = pd.Index(pd.Series(source.post_id.astype(str)) + "\x1f"
                        + pd.Series(source.criterion.astype(str)))
        rows = keys.get_indexer(pd.Series(target.post_id.astype(str)) + "\x1f"
                                + pd.Series(target.criterion.astype(str)))
        return Grouping(self.name, self.values, self.codes[rows])


def intersect(a: Grouping, b: Grouping) -> Grouping:
    """The cohorts of ``a*b`` (only the combinations that occur).

    >>> g = intersect(Grouping("s", ["x", "y"], np.array([0, 1, 1])),
    ...               Grouping("t", ["F", "M"], np.array([1, 1, 0])))
    >>> g.name, g.values, g.codes.tolist()
    ('s*t', ('x*M', 'y*F', 'y*M'), [0, 2, 1])
    """
    combined = a.codes * len(b.values) + b.codes
    used, local = np.unique(combined, return_inverse=True)
    values = [f"{a.values[u // len(b.values)]}*{b.values[u % len(b.values)]}"
              for u in used.tolist()]
    return Grouping(f"{a.name}*{b.name}", values, local)


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values (NaN stays NaN and does not count).

    >>> holm([0.01, 0.04, 0.03, float("nan")]).round(2).tolist()
    [0.03, 0.06, 0.06, nan]
    """
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = valid.size
    if m == 0:
        return out
    order = valid[np.argsort(p[valid], kind="stable")]
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out[order] = np.minimum(stepped, 1.0)
    return out


def bootstrap_p_values(difference, replicates: np.ndarray) -> np.ndarray:
    """Two-sided p-value of "no difference" per column: the observed ``difference`` over the
    standard deviation of its resampled values (``replicates``, one row per resample, NaN
    left out; ddof 1), against the standard normal. NaN without two valid resamples or when
    they do not vary.

    >>> bootstrap_p_values(np.array([0.1]), np.array([[0.0], [0.1], [0.2]])).round(4).tolist()
    [0.3173]
    """
    r = np.asarray(replicates, dtype=np.float64)
    valid = ~np.isnan(r)
    n = valid.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(valid, r, 0.0).sum(axis=0) / n
        var = np.where(valid, (r - mean) ** 2, 0.0).sum(axis=0) / (n - 1)
        z = np.abs(np.asarray(difference, dtype=np.float64)) / np.sqrt(var)
    # 2 Φ(−|z|) = erfc(|z| / √2) (math's: no scipy.stats import on the way)
    p = np.array([math.erfc(v / math.sqrt(2.0)) if np.isfinite(v) else np.nan
                  for v in np.ravel(z)]).reshape(np.shape(z))
    return np.where((n > 1) & (var > 0) & np.isfinite(z), p, np.nan)


# --------------------------------------------------------------------- per-query sums
def _sum_columns(ds, inter) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(metric names, numerators, denominators): each metric of :data:`DISPARITY_METRICS`
    but AUROC as a ratio of per-query sums, ``(n_queries, S)`` float arrays."""
    y = ds.y.astype(np.float64)
    pred = inter.pred.astype(np.float64)
    alert = (inter.states == 2).astype(np.float64)
    passed = (inter.states != 0).astype(np.float64)
    ones = np.ones_like(y)
    cols = {"sensitivity": (pred * y, y), "specificity": ((1 - pred) * (1 - y), 1 - y),
            "precision": (pred * y, pred), "screening_sensitivity": (passed * y, y),
            "false_flag_rate": (alert * (1 - y), 1 - y), "alert_precision": (alert * y, alert),
            "brier": ((ds.p - y) ** 2, ones)}
    emask = inter.emask.astype(np.float64)
    cols["evidence_recall"] = (np.nan_to_num(inter.rec) * emask, emask)
    rmask = inter.rmask.astype(np.float64)
    for name in _ranking_names(inter):
        cols[name] = (np.nan_to_num(inter.rk[name]) * rmask, rmask)
    names = [n for n in _metric_names(inter) if n in cols]
    num = np.column_stack([cols[n][0] for n in names])
    den = np.column_stack([cols[n][1] for n in names])
    return names, num, den


def _ranking_names(inter) -> list[str]:
    ref = getattr(inter, "ref", None)
    out = [f"{family}@{ref}" for family in ("recall", "ndcg") if f"{family}@{ref}" in inter.rk]
    return out + (["mrr"] if "mrr" in inter.rk else [])


def _metric_names(inter) -> list[str]:
    """The disparity metrics in report order (the ranking ones at the reference K)."""
    ranking = _ranking_names(inter)
    out = []
    for name in DISPARITY_METRICS:
        if name == "mrr":
            out.extend(ranking)
        else:
            out.append(name)
    return out


def _ratio(num, den) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


# ------------------------------------------------------- the other metrics' intervals
def _extra_columns(ds, inter) -> tuple[list[str], np.ndarray]:
    """The per-group metrics without a disparity test whose value is a ratio (or a sum) of
    per-query sums: ``(names, sums)``, ``sums`` an ``(n_queries, 2 E)`` array (numerators,
    then denominators; a sum's denominator is 0). Their resampled values are the intervals of
    the cohorts table; :func:`_extra_values` adds the balanced accuracies and MCCs from the
    outcome counts."""
    y = ds.y.astype(np.float64)
    n = 1.0 - y
    pred = inter.pred.astype(np.float64)
    st = inter.states
    neg, unc, pos = ((st == s).astype(np.float64) for s in (0, 1, 2))
    answered = 1.0 - unc
    ones = np.ones_like(y)
    k = np.asarray(inter.k, dtype=np.float64)
    emask = inter.emask.astype(np.float64)
    zero = np.zeros_like(y)
    cols = {
        "tp": (pred * y, zero), "fp": (pred * n, zero), "tn": ((1 - pred) * n, zero),
        "fn": ((1 - pred) * y, zero), "fpr": (pred * n, n), "npv": ((1 - pred) * n, 1 - pred),
        "f1": (2 * pred * y, 2 * pred * y + pred * n + (1 - pred) * y),
        "neg_rate": (neg, ones), "uncertain_rate": (unc, ones), "pos_rate": (pos, ones),
        "review_rate": (unc + pos, ones), "alert_rate_per_1000": (1000 * pos, ones),
        "screening_fn_per_1000": (1000 * neg * y, ones), "workup_to_detection": (pos, pos * y),
        "coverage": (answered, ones), "abstain_rate": (unc, ones),
        "abstain_rate_pos": (unc * y, y), "abstain_rate_neg": (unc * n, n),
        "accuracy": (neg * n + pos * y, ones), "accuracy_answered": (neg * n + pos * y, answered),
        "precision_pos": (pos * y, pos), "recall_pos": (pos * y, answered * y),
        "f1_pos": (2 * pos * y, 2 * pos * y + pos * n + neg * y),
        "precision_neg": (neg * n, neg), "recall_neg": (neg * n, answered * n),
        "f1_neg": (2 * neg * n, 2 * neg * n + neg * y + pos * n),
        "slip_rate": (neg * y, y), "catch_rate": (pos * y, y), "pass_rate": (neg * n, n),
        "evidence_precision": (np.nan_to_num(inter.prec) * emask, emask),
        "mean_k": (k, ones), "workload": (k, zero), "workload_per_1000": (1000 * k, ones),
        # outcome counts for the balanced accuracies and MCCs
        "_neg_y": (neg * y, zero), "_neg_n": (neg * n, zero), "_pos_y": (pos * y, zero),
        "_pos_n": (pos * n, zero)}
    rmask = inter.rmask.astype(np.float64)
    for name, values in inter.rk.items():
        cols.setdefault(name, (np.nan_to_num(values) * rmask, rmask))
    cfg = inter.cfg
    from metrics_core.metrics.calibration import bin_matrix

    bins = bin_matrix(ds.y, ds.p, n_bins=cfg.n_bins, strategy=cfg.binning,
                      top_label=cfg.calibration_view == "top_label")  # the data's own edges
    n_bins = bins.shape[1] // 2
    for b in range(n_bins):  # per bin: queries, and the sum of y - p (ECE, MCE)
        cols[f"_bin{b}"] = (bins[:, b], zero)
        cols[f"_res{b}"] = (bins[:, n_bins + b], zero)
    whole_k = np.asarray(inter.k, dtype=np.int64)
    for value in range(int(whole_k.max()) + 1 if whole_k.size else 0):  # K's histogram
        cols[f"_k{value}"] = ((whole_k == value).astype(np.float64), zero)
    names = list(cols)
    return names, np.column_stack([cols[c][0] for c in names] + [cols[c][1] for c in names])


def _distinct_columns(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(distinct, where)``: the distinct columns of ``matrix`` (many metrics share a
    denominator) and each column's place among them (``distinct[:, where] == matrix``)."""
    seen: dict[bytes, int] = {}
    where = np.empty(matrix.shape[1], dtype=np.int64)
    keep = []
    for i in range(matrix.shape[1]):
        key = np.ascontiguousarray(matrix[:, i]).tobytes()
        if key not in seen:
            seen[key] = len(keep)
            keep.append(i)
        where[i] = seen[key]
    return matrix[:, keep], where


#: Ratios of two per-query sums' parts: name -> its numerator's and denominator's columns.
_SUMS_ONLY = frozenset({"tp", "fp", "tn", "fn", "workload", "_neg_y", "_neg_n", "_pos_y",
                        "_pos_n"})


def _extra_values(names: Sequence[str], sums: np.ndarray) -> dict[str, np.ndarray]:
    """Each extra metric's values from its sums (``(..., 2 E)``, the last axis as
    :func:`_extra_columns` lays it out): ratios, sums, and the balanced accuracies and MCCs
    of the outcome table at τ and of the gate's answered queries."""
    e = len(names)
    num, den = sums[..., :e], sums[..., e:]
    at = {name: i for i, name in enumerate(names)}
    out = {}
    for name, i in at.items():
        out[name] = (num[..., i] if name in _SUMS_ONLY or name.startswith(("_k", "_bin", "_res"))
                     else _ratio(num[..., i], den[..., i]))
    count = [i for name, i in at.items() if name.startswith("_bin")]
    if count:  # ECE and MCE from the bins' sums (the data's bin edges)
        from metrics_core.metrics.calibration import ece_from_sums, mce_from_sums

        residual = [i for name, i in at.items() if name.startswith("_res")]
        c, r = num[..., count], num[..., residual]
        flat_c, flat_r = c.reshape(-1, len(count)), r.reshape(-1, len(count))
        out["ece"] = ece_from_sums(flat_r, flat_c.sum(axis=1)).reshape(c.shape[:-1])
        out["mce"] = mce_from_sums(flat_c, flat_r).reshape(c.shape[:-1])
    histogram = [i for name, i in at.items() if name.startswith("_k")]
    if histogram:  # K's median and P90: numpy's linear quantiles of the weighted K values
        counts = num[..., histogram]
        flat = counts.reshape(-1, len(histogram))
        q = weighted_int_quantiles(np.arange(len(histogram)), (0.5, 0.9)).from_histogram(
            flat).reshape(*counts.shape[:-1], 2)
        empty = counts.sum(axis=-1) == 0
        out["median_k"] = np.where(empty, np.nan, q[..., 0])
        out["p90_k"] = np.where(empty, np.nan, q[..., 1])

    def balanced(tp, fn, tn, fp):
        return (_ratio(tp, tp + fn) + _ratio(tn, tn + fp)) / 2.0

    def mcc(tp, fp, tn, fn):
        with np.errstate(invalid="ignore"):
            scale = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        return _ratio(tp * tn - fp * fn, scale)

    tau = (out["tp"], out["fp"], out["tn"], out["fn"])
    gate = (out["_pos_y"], out["_pos_n"], out["_neg_n"], out["_neg_y"])  # tp, fp, tn, fn
    out["balanced_accuracy"] = balanced(tau[0], tau[3], tau[2], tau[1])
    out["mcc"] = mcc(*tau)
    out["balanced_accuracy_answered"] = balanced(gate[0], gate[3], gate[2], gate[1])
    out["mcc_answered"] = mcc(*gate)
    return {k: v for k, v in out.items() if not k.startswith("_")}


# ------------------------------------------------------------------ AUROC pair counts
class _PairCounts:
    """AUROC of each cohort and of its rest from weighted pair counts, for several columns.

    With ``U(A, B)`` the Mann-Whitney count of positives of A above negatives of B (ties one
    half), a cohort's is ``U(j, j)`` and the rest's ``U - U(j, ·) - U(·, j) + U(j, j)``:
    the cross counts of every column come from one cumulation of the whole data's weights,
    ``U(j, j)`` from the cohort's own rows. Exact in whole numbers (doubled)."""

    def __init__(self, layout: ScoreLayout, codes_in_order: Sequence[np.ndarray],
                 sizes: Sequence[int]):
        self.layout = layout
        ys = layout.ys
        run = np.searchsorted(layout.starts, np.arange(layout.n), side="right") - 1
        lo, hi = layout.edges[run], layout.edges[run + 1]
        self.pos_rows, self.neg_rows = np.flatnonzero(ys), np.flatnonzero(~ys)
        self.pos_columns = layout.columns[self.pos_rows]
        self.neg_columns = layout.columns[self.neg_rows]
        nb, pb = layout.negatives_before, layout.positives_before
        self.pos_lo, self.pos_hi = nb[lo[self.pos_rows]], nb[hi[self.pos_rows]]
        self.neg_lo, self.neg_hi = pb[lo[self.neg_rows]], pb[hi[self.neg_rows]]
        self.sizes = list(sizes)
        # per post: its positive (negative) queries in each cohort, for the cohorts' weights
        n_posts = int(layout.columns.max()) + 1 if layout.n else 0
        self.pos_by_post = np.zeros((n_posts, sum(self.sizes)))
        self.neg_by_post = np.zeros((n_posts, sum(self.sizes)))
        start = 0
        for c, g in zip(codes_in_order, self.sizes, strict=True):
            np.add.at(self.pos_by_post, (self.pos_columns, start + c[self.pos_rows]), 1.0)
            np.add.at(self.neg_by_post, (self.neg_columns, start + c[self.neg_rows]), 1.0)
            start += g
        self.pos_group = np.hstack([_indicator(c[self.pos_rows], g)
                                    for c, g in zip(codes_in_order, sizes, strict=True)]
                                   or [np.zeros((self.pos_rows.size, 0))])
        self.neg_group = np.hstack([_indicator(c[self.neg_rows], g)
                                    for c, g in zip(codes_in_order, sizes, strict=True)]
                                   or [np.zeros((self.neg_rows.size, 0))])
        # Per column: its negatives by cohort, then in the order of p; each positive's place
        # among its own cohort's negatives (below its tie run, and up to its end) and the
        # start of its cohort in that order.
        self.within = []
        # Per column also: the runs of its negatives (in that order) of one cohort and one tie
        # run of p, which see the same positives above them: each run's weight times the
        # positives' weight above it, summed per cohort, is 2 U(all, j).
        self.runs = []
        n1 = layout.n + 1
        for c in codes_in_order:
            neg_codes = c[self.neg_rows]
            perm = np.argsort(neg_codes, kind="stable")
            keys = neg_codes[perm] * n1 + self.neg_rows[perm]
            g_x = c[self.pos_rows] * n1
            self.within.append((self.neg_columns[perm],
                                np.searchsorted(keys, g_x + lo[self.pos_rows]),
                                np.searchsorted(keys, g_x + hi[self.pos_rows]),
                                np.searchsorted(keys, g_x)))
            codes, run_lo, run_hi = neg_codes[perm], self.neg_lo[perm], self.neg_hi[perm]
            new = np.r_[True, (codes[1:] != codes[:-1]) | (run_lo[1:] != run_lo[:-1])
                        | (run_hi[1:] != run_hi[:-1])] if codes.size else np.zeros(0, bool)
            starts = np.flatnonzero(new)
            run_codes = codes[starts]
            blocks = np.flatnonzero(np.r_[True, run_codes[1:] != run_codes[:-1]]) \
                if starts.size else starts
            self.runs.append((starts, run_lo[starts], run_hi[starts], blocks,
                              run_codes[blocks]))

    def replicates(self, weights) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per column: (cohort AUROC, rest AUROC), ``(b, g)`` each."""
        layout = self.layout
        pos, neg = layout.cumulative(weights)
        total_p, total_n = pos[:, -1].astype(np.float64), neg[:, -1].astype(np.float64)
        w_pos = np.take(weights, self.pos_columns, axis=1).astype(np.float64)
        # positives against every negative below them (ties one half), per positive row
        pos_terms = w_pos * (np.take(neg, self.pos_lo, axis=1)
                             + np.take(neg, self.pos_hi, axis=1))
        del neg
        twice_total = pos_terms.sum(axis=1)
        # the cohorts' weights of positives and negatives from the posts' weights (whole
        # numbers: the same sums as over the queries)
        by_post = weights.astype(np.float64)
        p_j = by_post @ self.pos_by_post
        n_j = by_post @ self.neg_by_post
        row = pos_terms @ self.pos_group  # 2 U(j, all)
        diag = np.empty_like(row)
        above = np.zeros_like(row)  # per cohort: its negatives times the positives above
        start = 0
        kind = np.int32 if int(np.iinfo(weights.dtype).max) * max(layout.n, 1) < 2**31 \
            else np.int64
        for (g, (columns, at_lo, at_hi, base), (starts, run_lo, run_hi, blocks, present)) in \
                zip(self.sizes, self.within, self.runs, strict=True):
            gathered = np.take(weights, columns, axis=1)
            cum = np.zeros((weights.shape[0], columns.size + 1), dtype=kind)
            np.cumsum(gathered, axis=1, dtype=kind, out=cum[:, 1:])
            terms = w_pos * (np.take(cum, at_lo, axis=1) + np.take(cum, at_hi, axis=1)
                             - 2.0 * np.take(cum, base, axis=1))
            diag[:, start:start + g] = terms @ self.pos_group[:, start:start + g]
            if starts.size:  # whole numbers: exact, in any order
                run_w = np.add.reduceat(gathered, starts, axis=1, dtype=np.int64)
                run_w *= np.take(pos, run_lo, axis=1) + np.take(pos, run_hi, axis=1)
                above[:, start + present] = np.add.reduceat(run_w, blocks, axis=1)
            start += g
        del pos
        col = 2 * total_p[:, None] * n_j - above  # 2 U(all, j)
        cohort = _ratio(diag / 2.0, p_j * n_j)
        rest = _ratio((twice_total[:, None] - row - col + diag) / 2.0,
                      (total_p[:, None] - p_j) * (total_n[:, None] - n_j))
        out, start = [], 0
        for g in self.sizes:
            out.append((cohort[:, start:start + g], rest[:, start:start + g]))
            start += g
        return out


def _indicator(codes: np.ndarray, g: int) -> np.ndarray:
    out = np.zeros((codes.size, g))
    out[np.arange(codes.size), codes] = 1.0
    return out


# ------------------------------------------------------------------ one pass over resamples
@dataclass
class _Column:
    grouping: Grouping
    posts: list  # per cohort: the posts it has queries of
    sums: list  # per cohort: (posts, 2S) per-post sums of its numerators and denominators
    extra: list | None = None  # per cohort: (posts, 2E) the same of _extra_columns


def _prepare(ds, grouping: Grouping, num_den: np.ndarray,
             extra: np.ndarray | None = None) -> _Column:
    g = len(grouping.values)
    posts, sums, extras = [], [], []
    for j in range(g):
        rows = np.flatnonzero(grouping.codes == j)
        used, local = np.unique(ds.post_code[rows], return_inverse=True)
        s = np.zeros((used.size, num_den.shape[1]))
        np.add.at(s, local, num_den[rows])
        posts.append(used)
        sums.append(s)
        if extra is not None:
            x = np.zeros((used.size, extra.shape[1]))
            np.add.at(x, local, extra[rows])
            extras.append(x)
    return _Column(grouping, posts, sums, extras if extra is not None else None)


def _replicates(ds, columns: list[_Column], pairs: _PairCounts, num_den, counts,
                n_metrics: int, progress) -> list[dict]:
    """Per column: the cohorts' and the rests' resampled values ``(R, g, S + 1)`` (AUROC
    last), from one pass over the post count matrix: its batches of resamples on
    :data:`WORKERS` threads (numpy works outside the interpreter's lock, so they share the
    cores), each batch's values in its own rows, so the values do not depend on which thread
    computed them."""
    from concurrent.futures import ThreadPoolExecutor

    from metrics_core.cpu_account import charged

    n_posts = int(ds.posts.size)
    totals_posts = np.zeros((n_posts, num_den.shape[1]))
    np.add.at(totals_posts, ds.post_code, num_den)

    def one(batch) -> list[tuple[np.ndarray, np.ndarray]]:
        cf = batch.astype(np.float64)
        whole = cf @ totals_posts
        aurocs = pairs.replicates(batch)
        out = []
        for col, (a, b) in zip(columns, aurocs, strict=True):
            g = len(col.grouping.values)
            cohort = np.empty((batch.shape[0], g, n_metrics + 1))
            rest = np.empty_like(cohort)
            extra = None if col.extra is None else np.empty(
                (batch.shape[0], g, col.extra[0].shape[1]))
            for j in range(g):
                own = cf[:, col.posts[j]]  # the cohort's posts' weights, gathered once
                s = own @ col.sums[j]
                cohort[:, j, :n_metrics] = _ratio(s[:, :n_metrics], s[:, n_metrics:])
                r = whole - s
                rest[:, j, :n_metrics] = _ratio(r[:, :n_metrics], r[:, n_metrics:])
                if extra is not None:
                    extra[:, j] = own @ col.extra[j]
            cohort[:, :, n_metrics], rest[:, :, n_metrics] = a, b
            out.append((cohort, rest, extra))
        return out

    store = [{"cohort": [], "rest": [], "extra": []} for _ in columns]
    done = 0
    total = counts.shape[0] if hasattr(counts, "shape") else None

    def keep(values, rows) -> None:
        nonlocal done
        for part, (cohort, rest, extra) in zip(store, values, strict=True):
            part["cohort"].append(cohort)
            part["rest"].append(rest)
            if extra is not None:
                part["extra"].append(extra)
        done += rows
        if progress is not None and total:
            progress(done, total)

    with ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="cohorts") as pool:
        pending = []
        for batch in _batches(counts):
            pending.append((pool.submit(charged(one), batch), batch.shape[0]))
            if len(pending) > WORKERS:  # at most one batch waiting per thread
                future, rows = pending.pop(0)
                keep(future.result(), rows)
        for future, rows in pending:
            keep(future.result(), rows)
    return [{k: np.concatenate(v, axis=0) if v else None for k, v in part.items()}
            for part in store]


#: Threads of the pass over the resamples (the machine's cores, at most 4).
WORKERS = max(1, min(4, os.cpu_count() or 1))


def _batches(counts, rows: int = 500):
    if isinstance(counts, Bootstrap):
        yield from counts.count_batches()
        return
    for start in range(0, counts.shape[0], rows):
        yield counts[start:start + rows]


# ---------------------------------------------------------------------------- tables
@dataclass(frozen=True)
class CohortResult:
    """The ``cohorts`` and ``weak_segments`` tables (columns :data:`COHORT_COLUMNS`,
    :data:`WEAK_COLUMNS`) and the equalised-odds view (screening sensitivity and false-flag
    rate per cohort side by side)."""

    cohorts: pd.DataFrame
    weak_segments: pd.DataFrame
    equalised_odds: pd.DataFrame


def _pair(lo, hi):
    if lo is None or hi is None or not (np.isfinite(lo) and np.isfinite(hi)):
        return None
    return [float(lo), float(hi)]


def _cis(matrix: np.ndarray) -> list:
    if matrix.shape[0] == 0:
        return [None] * matrix.shape[1]
    return [_pair(c.lo, c.hi) for c in percentile_cis(matrix, unit="post")]


def _point(ds, grouping, num_den, n_metrics, auroc) -> tuple:
    """(cohort values, rest values) ``(g, S + 1)`` on the data itself (weights 1)."""
    g = len(grouping.values)
    sums = np.zeros((g, num_den.shape[1]))
    np.add.at(sums, grouping.codes, num_den)
    whole = num_den.sum(axis=0)
    rest = whole[None, :] - sums
    a, b = auroc
    cohort_v = np.column_stack([_ratio(sums[:, :n_metrics], sums[:, n_metrics:]), a[0]])
    rest_v = np.column_stack([_ratio(rest[:, :n_metrics], rest[:, n_metrics:]), b[0]])
    return cohort_v, rest_v


def _disparity_rows(grouping, names, cohort_v, rest_v, reps, n, n_pos) -> list[dict]:
    g, _s = cohort_v.shape
    rows = []
    diff_reps = None if reps is None else reps["cohort"] - reps["rest"]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio_reps = None if reps is None else reps["cohort"] / reps["rest"]
        ratio_point = cohort_v / rest_v
    for i, name in enumerate(names):
        diff = cohort_v[:, i] - rest_v[:, i]
        if reps is not None:
            est_ci = _cis(reps["cohort"][:, :, i])
            diff_ci = _cis(diff_reps[:, :, i])
            p = bootstrap_p_values(diff, diff_reps[:, :, i])
            ratio_ci = _cis(np.where(np.isfinite(ratio_reps[:, :, i]), ratio_reps[:, :, i],
                                     np.nan)) if name in RATE_METRICS else [None] * g
        else:
            est_ci = diff_ci = ratio_ci = [None] * g
            p = np.full(g, np.nan)
        for j in range(g):
            defined = bool(np.isfinite(cohort_v[j, i]))
            both = defined and bool(np.isfinite(rest_v[j, i]))
            rows.append({
                "column": grouping.name, "value": grouping.values[j], "metric": name,
                "estimate": cohort_v[j, i] if defined else None,
                "ci95": est_ci[j] if defined else None, "n": int(n[j]),
                "n_positive": int(n_pos[j]),
                "rest_estimate": rest_v[j, i] if np.isfinite(rest_v[j, i]) else None,
                "difference": diff[j] if both else None,
                "difference_ci95": diff_ci[j] if both else None,
                "ratio": (ratio_point[j, i] if name in RATE_METRICS and both
                          and np.isfinite(ratio_point[j, i]) else None),
                "ratio_ci95": ratio_ci[j] if name in RATE_METRICS and both else None,
                "p_value": float(p[j]) if both and np.isfinite(p[j]) else None,
                "defined": defined})
    return rows


def _extra_intervals(grouping, body: pd.DataFrame, names, extra: np.ndarray,
                     replicates: np.ndarray | None) -> dict[str, list]:
    """metric -> one interval per cohort (None where no resample defines it), for the
    metrics of :func:`_extra_columns` the table shows. A metric is given intervals only if
    its value from the sums on the data itself is the table's value (the same definition)."""
    if replicates is None:
        return {}
    g = len(grouping.values)
    sums = np.zeros((g, extra.shape[1]))
    np.add.at(sums, grouping.codes, extra)
    point = _extra_values(names, sums)
    resampled = _extra_values(names, replicates)
    out = {}
    for name, values in point.items():
        if name not in body.columns:
            continue
        shown = body[name].to_numpy(dtype=np.float64, na_value=np.nan)
        if np.allclose(values, shown, rtol=1e-9, atol=1e-12, equal_nan=True):
            out[name] = _cis(np.where(np.isfinite(resampled[name]), resampled[name], np.nan))
    return out


def _other_rows(grouping, body: pd.DataFrame, names: set, n, n_pos,
                intervals: Mapping[str, list] | None = None) -> list[dict]:
    """The per-group metrics without a disparity test: the cohort's value and, where the
    resamples give it (``intervals``: metric -> one interval per cohort), its interval."""
    intervals = intervals or {}
    rows = []
    metrics = [c for c in body.columns if c not in ("n", "n_positive", "positive_rate",
                                                    "auroc_defined") and "_ci_" not in c
               and c not in names]
    data = body[metrics].to_numpy(dtype=np.float64, na_value=np.nan)
    for j, value in enumerate(grouping.values):
        for i, name in enumerate(metrics):
            v = data[j, i]
            defined = bool(np.isfinite(v))
            ci = intervals.get(name)
            rows.append({"column": grouping.name, "value": value, "metric": name,
                         "estimate": float(v) if defined else None,
                         "ci95": ci[j] if ci is not None and defined else None,
                         "n": int(n[j]), "n_positive": int(n_pos[j]), "rest_estimate": None,
                         "difference": None, "difference_ci95": None, "ratio": None,
                         "ratio_ci95": None, "p_value": None, "defined": defined})
    return rows


def _finish_column(rows: list[dict]) -> None:
    """Holm across the column's cohorts and metrics; the flags."""
    adjusted = holm([np.nan if r["p_value"] is None else r["p_value"] for r in rows])
    for r, adj in zip(rows, adjusted, strict=True):
        r["p_adjusted"] = None if np.isnan(adj) else float(adj)
        ci = r["difference_ci95"]
        r["flagged"] = bool(r["p_adjusted"] is not None and r["p_adjusted"] < ALPHA
                            and ci is not None and (ci[0] > 0 or ci[1] < 0))
        r["small"] = bool(r["n"] < SMALL_CELL or r["n_positive"] < SMALL_CELL)


def cohort_tables(ev, inter, groupings: Sequence, *, n_resamples: int | None = None,
                  seed: int | None = None, counts=None, min_size: int = MIN_SEGMENT,
                  top: int = TOP_SEGMENTS, weak: bool = True,
                  progress: Callable | None = None) -> CohortResult:
    """The cohort tables of one run (``ev`` the run's evaluator, ``inter`` its
    :class:`~metrics_core.evaluation.evaluator.Intermediate`).

    ``groupings``: cohort columns (objects with ``name``, ``values``, ``codes`` per query of
    ``ev``'s data set). ``counts``: the post count matrix to read (rows = resamples; default:
    the run's, ``metrics_core.evaluation.intervals.post_counts``); ``n_resamples=0`` leaves
    out the intervals and p-values. ``weak``: also search the weak segments over the columns
    and their pairs (``min_size`` queries at least; the ``top`` worst per metric listed).
    """
    from metrics_core.evaluation import tables

    ds, cfg = ev.ds, inter.cfg
    n_resamples = cfg.bootstrap if n_resamples is None else n_resamples
    seed = cfg.seed if seed is None else seed
    singles = [Grouping.of(g) for g in groupings]
    names, num, den = _sum_columns(ds, inter)
    n_metrics = len(names)
    num_den = np.column_stack([num, den])
    order = ev.p_order()
    layout = ScoreLayout(ds.p.take(order), ds.y.take(order), ds.post_code[order])
    segment_columns = list(singles)
    if weak:
        bases = [g for g in singles if "*" not in g.name]
        known = {g.name for g in singles}
        for i, a in enumerate(bases):
            for b in bases[i + 1:]:
                pair = intersect(a, b)
                if pair.name not in known:
                    segment_columns.append(pair)
    extra_names, extra = _extra_columns(ds, inter)
    distinct, where = _distinct_columns(extra)  # summed once each, then laid out again
    columns = [_prepare(ds, g, num_den, distinct if i < len(singles) else None)
               for i, g in enumerate(segment_columns)]
    pairs = _PairCounts(layout, [g.codes[order] for g in segment_columns],
                        [len(g.values) for g in segment_columns])
    point_auroc = pairs.replicates(np.ones((1, int(ds.posts.size)), dtype=np.int64))
    reps = None
    if n_resamples and ds.n_queries:
        if counts is None:
            if (n_resamples, seed) == (cfg.bootstrap, cfg.seed):
                from metrics_core.evaluation.intervals import post_counts
                counts = post_counts(ev, cfg)
            else:
                counts = Bootstrap(int(ds.posts.size), n_resamples=n_resamples, seed=seed)
        reps = _replicates(ds, columns, pairs, num_den, counts, n_metrics, progress)
    all_names = [*names, "auroc"]
    cohort_rows, weak_rows, odds = [], [], []
    for k, col in enumerate(columns):
        grouping = col.grouping
        g = len(grouping.values)
        n = np.bincount(grouping.codes, minlength=g)
        n_pos = np.bincount(grouping.codes, weights=ds.y, minlength=g).astype(np.int64)
        cohort_v, rest_v = _point(ds, grouping, num_den, n_metrics, point_auroc[k])
        rows = _disparity_rows(grouping, all_names, cohort_v, rest_v,
                               None if reps is None else reps[k], n, n_pos)
        if k < len(singles):
            body = tables.group_body(ev, inter, grouping)
            intervals = _extra_intervals(grouping, body, extra_names, extra,
                                         None if reps is None else reps[k]["extra"][..., where])
            rows += _other_rows(grouping, body, set(all_names), n, n_pos, intervals)
            _finish_column(rows)
            cohort_rows.extend(_ordered(rows, body.columns, all_names))
            odds.extend(_equalised_odds(grouping, rows))
        weak_rows.extend(r for r in rows if r["n"] >= min_size and r["metric"] in all_names)
    cohorts = pd.DataFrame(cohort_rows, columns=list(COHORT_COLUMNS))
    return CohortResult(cohorts, _weak_segments(weak_rows, top) if weak
                        else pd.DataFrame(columns=list(WEAK_COLUMNS)),
                        pd.DataFrame(odds))


def evaluate_cohorts(ev, cfg, attributes: Sequence, *, min_size: int = MIN_SEGMENT,
                     top: int = TOP_SEGMENTS, progress: Callable | None = None
                     ) -> CohortResult:
    """:func:`cohort_tables` of the run ``cfg`` of the evaluator ``ev`` (its filters applied;
    ``attributes`` per query of ``ev``'s data set), kept in ``ev`` per settings."""
    groupings = tuple(Grouping.of(a) for a in attributes)
    target = ev.for_filters(cfg.filters)
    aligned = tuple(g.aligned(ev.ds, target.ds) for g in groupings)

    def compute():
        return cohort_tables(target, target.intermediate(cfg), list(aligned),
                             min_size=min_size, top=top, progress=progress)

    return ev.cached(("cohorts", cfg, aligned, min_size, top), compute)


def add_to(evaluation, ev, cfg, attributes: Sequence, **kw) -> None:
    """Give ``evaluation`` (a run of ``ev`` with ``cfg``) its ``cohorts``,
    ``cohort_equalised_odds`` and ``weak_segments`` tables (built on first use)."""
    def result():
        return evaluate_cohorts(ev, cfg, attributes, **kw)

    evaluation.add_tables(cohorts=lambda: result().cohorts,
                          cohort_equalised_odds=lambda: result().equalised_odds,
                          weak_segments=lambda: result().weak_segments)


def _ordered(rows, body_columns, disparity) -> list[dict]:
    """Rows by cohort, then metric in report order (the disparity metrics first)."""
    place = {name: i for i, name in enumerate([*disparity, *body_columns])}
    values = {}
    for r in rows:
        values.setdefault(r["value"], len(values))
    return sorted(rows, key=lambda r: (values[r["value"]], place.get(r["metric"], 1 << 30)))


def _equalised_odds(grouping, rows) -> list[dict]:
    by = {(r["value"], r["metric"]): r for r in rows}
    out = []
    for value in grouping.values:
        sens, ffr = by.get((value, "screening_sensitivity")), by.get((value, "false_flag_rate"))
        out.append({"column": grouping.name, "value": value,
                    "screening_sensitivity": sens["estimate"], "screening_sensitivity_ci95":
                    sens["ci95"], "false_flag_rate": ffr["estimate"],
                    "false_flag_rate_ci95": ffr["ci95"], "n": sens["n"],
                    "n_positive": sens["n_positive"]})
    return out


def _weak_segments(rows: list[dict], top: int) -> pd.DataFrame:
    """The ``top`` segments per metric worst relative to the rest, Holm across every segment
    tried for that metric."""
    out = []
    by_metric: dict[str, list] = {}
    for r in rows:
        by_metric.setdefault(r["metric"], []).append(r)
    for metric, items in by_metric.items():
        higher = registry.spec(metric).higher_is_better
        if higher is None:
            continue
        sign = 1.0 if higher else -1.0
        tried = [r for r in items if r["difference"] is not None]
        adjusted = holm([np.nan if r["p_value"] is None else r["p_value"] for r in tried])
        ranked = []
        for r, adj in zip(tried, adjusted, strict=True):
            worse = -sign * r["difference"]
            if worse <= 0:
                continue
            ci = r["difference_ci95"]
            p_adj = None if np.isnan(adj) else float(adj)
            ranked.append({"metric": metric,
                           "segment": _segment_name(r["column"], r["value"]),
                           "columns": r["column"], "estimate": r["estimate"],
                           "ci95": r["ci95"], "n": r["n"], "n_positive": r["n_positive"],
                           "rest_estimate": r["rest_estimate"],
                           "difference": r["difference"],
                           "difference_ci95": ci, "p_value": r["p_value"],
                           "p_adjusted": p_adj,
                           "flagged": bool(p_adj is not None and p_adj < ALPHA
                                           and ci is not None and (ci[0] > 0 or ci[1] < 0)),
                           "worse_by": worse, "segments_tried": len(tried)})
        ranked.sort(key=lambda r: (not r["flagged"], -r["worse_by"]))
        out.extend(ranked[:top])
    return pd.DataFrame(out, columns=list(WEAK_COLUMNS))


def _segment_name(column: str, value: str) -> str:
    """``site*sex`` and ``S1*F`` -> ``site=S1, sex=F``."""
    cols, values = column.split("*"), value.split("*")
    if len(cols) != len(values):
        return f"{column}={value}"
    return ", ".join(f"{c}={v}" for c, v in zip(cols, values, strict=True))


def describe(result: CohortResult) -> Mapping[str, int]:
    """Counts for a summary line: cohorts, flagged disparities, weak segments flagged."""
    c = result.cohorts
    return {"cohorts": int(c[["column", "value"]].drop_duplicates().shape[0]) if len(c) else 0,
            "flagged": int(c["flagged"].sum()) if len(c) else 0,
            "weak_flagged": int(result.weak_segments["flagged"].sum())
            if len(result.weak_segments) else 0}
