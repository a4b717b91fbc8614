"""One pass over the resamples for every cohort of a column (contract §9): the per-query sums
each disparity metric is a ratio of, AUROC's weighted pair counts, and the replicates of the
cohorts and of the rest of the data, from the run's post count matrix re-weighted (never one
bootstrap per cohort). :mod:`metrics_core.evaluation.cohorts` turns them into its tables.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from metrics_core import registry
from metrics_core.evaluation import kernels
from metrics_core.evaluation.cohort_groups import DISPARITY_METRICS, Grouping
from metrics_core.evaluation.cohort_precision import PrecisionRuns
from metrics_core.metrics import outcomes
from metrics_core.metrics.curve_replicates import ScoreLayout
from metrics_core.metrics.uncertainty import Bootstrap, weighted_int_quantiles

__all__ = ["MULTILABEL_CRITERIA", "WORKERS", "PairCounts", "distinct_columns",
           "extra_columns", "extra_values", "group_sums", "multilabel_rest", "multilabel_sums",
           "multilabel_values", "one_blas_thread", "prepare",
           "ratio", "replicates", "sum_columns"]


def group_sums(values: np.ndarray, codes: np.ndarray, size: int,
               rows: np.ndarray | None = None) -> np.ndarray:
    """``(size, k)``: the rows of ``values`` (``(n, k)`` float) summed per code (``codes``
    per row; with ``rows``, only those rows of ``values``, ``codes`` one per row of
    ``rows``). The same floats as ``np.add.at`` (each group's rows added one after the
    other, in row order: a sparse indicator product), several times faster."""
    from scipy import sparse

    codes = np.asarray(codes, dtype=np.int64)
    if rows is not None:
        values = values[rows]
    indicator = sparse.csr_matrix((np.ones(codes.size), (codes, np.arange(codes.size))),
                                  shape=(size, codes.size))
    return np.asarray(indicator @ np.ascontiguousarray(values), dtype=np.float64)


# --------------------------------------------------------------------- per-query sums
def sum_columns(ev, inter) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(metric names, numerators, denominators): each metric of :data:`DISPARITY_METRICS`
    but AUROC as a ratio of per-query sums, ``(n_queries, S)`` float arrays, from its registry
    entry (:func:`metrics_core.evaluation.kernels.ratio_sums`)."""
    names = [n for n in _metric_names(inter) if kernels.ratio_sum(registry.spec(n))]
    num, den = kernels.ratio_sums(ev, inter, names)
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


def ratio(num, den) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


# ------------------------------------------------------- the other metrics' intervals
def extra_columns(ev, inter) -> tuple[list[str], np.ndarray]:
    """The per-group metrics of the cohorts table (those of the registry that apply per
    cohort) whose value comes from per-query sums: ``(names, sums)``, ``sums`` an
    ``(n_queries, 2 E)`` array (numerators, then denominators; a sum's denominator is 0).
    Their resampled values are the intervals of the cohorts table (:func:`extra_values`).
    From each registry entry: a ratio of sums or a sum (:func:`metrics_core.evaluation.kernels.
    ratio_sums`); a formula of the outcome cells (F1, MCC, balanced accuracy) from the
    queries' one-hot outcome tables (``_tau0`` .. ``_gate5``); ECE and MCE from the
    reliability bins' sums (the data's own edges: ``_bin``, ``_res``); K's median and P90 from
    K's histogram (``_k``); calibration in the large, ``Σ y / Σ p``."""
    ds = ev.ds
    specs = (*registry.counting(where="cohort"), *registry.kernels(where="cohort"))
    names = [name for spec in specs if kernels.ratio_sum(spec)
             for name in kernels.names(spec, inter)]
    num, den = kernels.ratio_sums(ev, inter, names)
    cols = {name: (num[:, i], den[:, i]) for i, name in enumerate(names)}
    zero = np.zeros(ds.n_queries)
    for table in {s.counting.table for s in specs
                  if s.counting is not None and s.counting.formula is not None}:
        cells = kernels.outcome_cells(ev, inter, table).reshape(-1, 6).astype(np.float64)
        for c in range(6):
            cols[f"_{table}{c}"] = (cells[:, c], zero)
    kernels_of = {s.kernel.source for s in specs if s.kernel is not None}
    if "reliability" in kernels_of:
        cfg = inter.cfg
        from metrics_core.metrics.calibration import bin_matrix

        bins = bin_matrix(ds.y, ds.p, n_bins=cfg.n_bins, strategy=cfg.binning,
                          top_label=cfg.calibration_view == "top_label")
        n_bins = bins.shape[1] // 2
        for b in range(n_bins):  # per bin: queries, and the sum of y - p (ECE, MCE)
            cols[f"_bin{b}"] = (bins[:, b], zero)
            cols[f"_res{b}"] = (bins[:, n_bins + b], zero)
    if "k" in kernels_of:
        whole_k = np.asarray(inter.k, dtype=np.int64)
        for value in range(int(whole_k.max()) + 1 if whole_k.size else 0):  # K's histogram
            cols[f"_k{value}"] = ((whole_k == value).astype(np.float64), zero)
    for spec in registry.kernels(where="cohort", source="logistic"):
        if spec.kernel.field == "in_the_large":  # observed over expected: Σ y / Σ p
            cols[spec.name] = (np.asarray(ds.y, dtype=np.float64),
                               np.asarray(ds.p, dtype=np.float64))
    names = list(cols)
    return names, np.column_stack([cols[c][0] for c in names] + [cols[c][1] for c in names])


def distinct_columns(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def _columns_first(sums: np.ndarray) -> np.ndarray:
    """``sums`` ``(..., D)`` as ``(D, ...)``, each column's values contiguous (copied a block
    of rows at a time, the block's reads staying in cache; benchmarks/README.md)."""
    d = sums.shape[-1]
    flat = sums.reshape(-1, d)
    out = np.empty((d, flat.shape[0]), dtype=sums.dtype)
    step = max(1, (1 << 16) // max(1, d))
    for start in range(0, flat.shape[0], step):
        out[:, start:start + step] = flat[start:start + step].T
    return out.reshape(d, *sums.shape[:-1])


def extra_values(names: Sequence[str], sums: np.ndarray,
                 where: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Each extra metric's values from its sums (``(..., 2 E)``, the last axis as
    :func:`extra_columns` lays it out; with ``where``, the distinct columns of
    :func:`distinct_columns`, read in place rather than laid out again), by its registry
    entry: a ratio or a sum of the sums, a formula of the outcome table
    (:func:`metrics_core.metrics.outcomes.counted`), ECE / MCE of the bins' sums, K's
    median / P90 of its histogram."""
    e = len(names)
    place = np.arange(2 * e) if where is None else np.asarray(where, dtype=np.int64)
    columns = _columns_first(np.asarray(sums))  # a ratio's operands: each contiguous

    def num(i):  # several: as laid out in sums (the reductions over them in the same order)
        at = place[i]
        return columns[at] if np.ndim(at) == 0 else sums[..., at]

    def den(i):
        return columns[place[e + i]]

    at = {name: i for i, name in enumerate(names)}
    out = {}
    for name, i in at.items():
        if name.startswith("_"):
            continue
        out[name] = (num(i) if kernels.ratio_sum(registry.spec(name)) == "sum"
                     else ratio(num(i), den(i)))
    count = [i for name, i in at.items() if name.startswith("_bin")]
    if count:  # ECE and MCE from the bins' sums (the data's bin edges)
        from metrics_core.metrics.calibration import ece_from_sums, mce_from_sums

        residual = [i for name, i in at.items() if name.startswith("_res")]
        c, r = num(count), num(residual)
        flat_c, flat_r = c.reshape(-1, len(count)), r.reshape(-1, len(count))
        from_bins = {"ece": ece_from_sums(flat_r, flat_c.sum(axis=1)),
                     "mce": mce_from_sums(flat_c, flat_r)}
        for spec in registry.kernels(where="cohort", source="reliability"):
            out[spec.name] = from_bins[spec.kernel.field or spec.name].reshape(c.shape[:-1])
    histogram = [i for name, i in at.items() if name.startswith("_k")]
    if histogram:  # K's median and P90: numpy's linear quantiles of the weighted K values
        counts = num(histogram)
        flat = counts.reshape(-1, len(histogram))
        q = weighted_int_quantiles(np.arange(len(histogram)), (0.5, 0.9)).from_histogram(
            flat).reshape(*counts.shape[:-1], 2)
        empty = counts.sum(axis=-1) == 0
        for spec in registry.kernels(where="cohort", source="k"):
            if spec.kernel.reduce in ("median", "p90"):
                out[spec.name] = np.where(empty, np.nan,
                                          q[..., 0 if spec.kernel.reduce == "median" else 1])
    for spec in registry.counting(where="cohort"):
        if spec.counting.formula is None or f"_{spec.counting.table}0" not in at:
            continue
        start = at[f"_{spec.counting.table}0"]
        table = num(np.arange(start, start + 6))
        values, _ = outcomes.counted(table.reshape(-1, 3, 2), spec.counting)
        out[spec.name] = values.reshape(table.shape[:-1])
    return out


# ------------------------------------------------------------ the multi-label metrics
#: Criteria up to which macro and weighted F1 per cohort get intervals (their per-criterion
#: sums: five columns per criterion).
MULTILABEL_CRITERIA = 64


def multilabel_sums(ds, inter, grouping: Grouping, posts: Sequence[np.ndarray]
                    ) -> tuple[list, list, np.ndarray]:
    """``(own, delta, whole)``: per cohort, ``(posts of the cohort, K)`` per-post sums whose
    weighted totals give the multi-label metrics (§8) of the cohort's queries on a resample
    of posts (the terms of :func:`metrics_core.metrics.multilabel.multilabel_weighted`):
    cells, present, exact, wrong, TP, FP, FN, the post's F1, then (with at most
    :data:`MULTILABEL_CRITERIA` criteria) TP, FP, FN, gold and cells per criterion. The rest
    of the data's (:func:`multilabel_rest`): the sums of the other cohorts, but for the
    :data:`PER_POST` columns (no sums of the queries': a post split between cohorts is one
    post of the rest) ``whole`` ``(n_posts, 3)``, every query's, minus per cohort ``delta``
    on the cohort's posts (the whole post's terms minus those without the cohort's queries).
    ``posts``: each cohort's posts,
    as :func:`prepare` lists them (each with a query in the cohort: present)."""
    from metrics_core.metrics import multilabel

    cfg = inter.cfg
    yh = multilabel.decision_labels(ds, rule=cfg.multilabel_rule, threshold=cfg.threshold,
                                    states=inter.states).astype(bool)
    y = np.asarray(ds.y).astype(bool)
    n_crit = len(ds.criteria)
    by_crit = n_crit <= MULTILABEL_CRITERIA
    kinds = [np.ones_like(y), (yh & ~y) | (y & ~yh), y & yh, yh & ~y, y & ~yh]
    crit_kinds = [y & yh, yh & ~y, y & ~yh, y, np.ones_like(y)] if by_crit else []
    crit = np.asarray(ds.criterion_code, dtype=np.int64)

    def raw(rows, local, size) -> np.ndarray:  # per post: the kinds' counts (linear)
        out = np.zeros((size, len(kinds) + len(crit_kinds) * n_crit))
        for i, kind in enumerate(kinds):
            out[:, i] = np.bincount(local, weights=kind[rows], minlength=size)
        for i, kind in enumerate(crit_kinds):
            by = np.zeros((size, n_crit))
            np.add.at(by, (local, crit[rows]), kind[rows].astype(np.float64))
            out[:, len(kinds) + i * n_crit:len(kinds) + (i + 1) * n_crit] = by
        return out

    def terms(per: np.ndarray) -> np.ndarray:  # per post: the terms summed over posts
        cells, wrong, tp, fp, fn = per[:, :len(kinds)].T
        present = (cells > 0).astype(np.float64)
        return np.column_stack([cells, present, present * (wrong == 0), wrong, tp, fp, fn,
                                present * multilabel.f1_from_counts(tp, fp, fn),
                                per[:, len(kinds):]])

    every = np.arange(ds.n_queries)
    whole_raw = raw(every, np.asarray(ds.post_code, dtype=np.int64), int(ds.posts.size))
    own, delta = [], []
    for j, used in enumerate(posts):
        rows = np.flatnonzero(grouping.codes == j)
        local = np.searchsorted(used, ds.post_code[rows])
        mine = raw(rows, local, used.size)
        own.append(terms(mine))
        delta.append((terms(whole_raw[used]) - terms(whole_raw[used] - mine))[:, PER_POST])
    return own, delta, terms(whole_raw)[:, PER_POST]


#: The columns of :func:`multilabel_sums` that are no sums of the queries' (present, exact,
#: the post's F1): the rest's are every query's minus ``delta``; the others' are the sum
#: over the other cohorts.
PER_POST = np.array([1, 2, 7])


def multilabel_rest(own: np.ndarray, whole: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """The rest of the data's sums of :func:`multilabel_sums` per cohort, ``(..., g, K)``,
    from the cohorts' (``own``, ``(..., g, K)``: the cohorts split the queries), the whole
    data's :data:`PER_POST` columns (``whole``, ``(..., 3)``) and each cohort's ``delta``
    (``(..., g, 3)``, weighted like ``own``)."""
    rest = own.sum(axis=-2, keepdims=True) - own
    rest[..., PER_POST] = whole[..., None, :] - delta
    return rest


def multilabel_values(sums: np.ndarray, n_crit: int) -> dict[str, np.ndarray]:
    """The multi-label metrics from the weighted sums of :func:`multilabel_sums` (last axis),
    as :func:`~metrics_core.metrics.multilabel.multilabel_weighted` computes them; NaN without
    a cell (macro and weighted F1 also NaN beyond :data:`MULTILABEL_CRITERIA` criteria)."""
    from metrics_core.metrics import multilabel

    n_cells, n_present, n_exact, n_wrong, s_tp, s_fp, s_fn, s_f1 = np.moveaxis(
        sums[..., :8], -1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        loss = n_wrong / n_cells
        out = {"exact_match": n_exact / n_present, "hamming_score": 1.0 - loss,
               "hamming_loss": loss, "micro_f1": multilabel.f1_from_counts(s_tp, s_fp, s_fn),
               "samples_f1": s_f1 / n_present}
        if sums.shape[-1] > 8:
            c_tp, c_fp, c_fn, c_support, c_cells = np.split(sums[..., 8:], 5, axis=-1)
            crit_f1 = multilabel.f1_from_counts(c_tp, c_fp, c_fn)
            drawn = c_cells > 0
            macro = np.where(drawn, crit_f1, 0.0).sum(-1) / drawn.sum(-1)
            support = c_support.sum(-1)
            out["macro_f1"] = macro
            out["weighted_f1"] = np.where(support > 0,
                                          (crit_f1 * c_support).sum(-1) / support, macro)
    none = n_cells <= 0
    return {k: np.where(none, np.nan, v) for k, v in out.items()}


# ------------------------------------------------------------------ AUROC pair counts
class _Prefix:
    """Prefix sums of the weights of a sequence of items (each a post, ``columns``) at some
    of its positions (``positions``: ``x`` stands for "the items before the ``x``-th"), per
    resample: the items between two consecutive positions asked for are one segment, its
    weight one sparse product with the posts' weights, and the segments are cumulated.
    Whole numbers: exact, in any order."""

    def __init__(self, columns: np.ndarray, positions: np.ndarray, n_posts: int):
        from scipy import sparse

        positions = np.asarray(positions, dtype=np.int64)
        self.points = np.unique(np.r_[np.int64(0), positions])
        segment = np.searchsorted(self.points, np.arange(columns.size), side="right") - 1
        keep = np.arange(columns.size) < self.points[-1]  # items after the last: never read
        self.segments = sparse.csr_matrix(
            (np.ones(int(keep.sum()), dtype=np.int32), (segment[keep], columns[keep])),
            shape=(self.points.size - 1, n_posts))
        self.segments.sum_duplicates()

    def index(self, positions: np.ndarray) -> np.ndarray:
        """Rows of :meth:`values` for ``positions`` (each one of those asked for)."""
        return np.searchsorted(self.points, np.asarray(positions, dtype=np.int64))

    def values(self, by_post: np.ndarray) -> np.ndarray:
        """``(len(points), b)`` float64: the weight of the items before each point, per
        resample (``by_post``: the posts' weights, ``(n_posts, b)`` integers). Whole numbers
        below 2**53: exact."""
        out = np.zeros((self.points.size, by_post.shape[1]))
        if self.points.size > 1:
            segments = self.segments if by_post.dtype == self.segments.dtype \
                else self.segments.astype(by_post.dtype)
            np.cumsum(segments @ by_post, axis=0, out=out[1:])
        return out


def _pair_sum(cum: np.ndarray, lo: np.ndarray, hi: np.ndarray, tied: np.ndarray) -> np.ndarray:
    """``cum[lo] + cum[hi]`` (rows), read once where ``lo == hi`` (no tie: most rows)."""
    out = np.take(cum, lo, axis=0)
    out *= 2.0
    if tied.size:
        out[tied] += np.take(cum, hi[tied], axis=0) - np.take(cum, lo[tied], axis=0)
    return out


class PairCounts:
    """AUROC of each cohort and of its rest from weighted pair counts, for several columns.

    With ``U(A, B)`` the Mann-Whitney count of positives of A above negatives of B (ties one
    half), a cohort's is ``U(j, j)`` and the rest's ``U - U(j, ·) - U(·, j) + U(j, j)``:
    the cross counts of every column come from the whole data's cumulations, ``U(j, j)``
    from the cumulation of the column's negatives by cohort then score. A cumulation is read
    only where a positive (or a run of negatives between two positives) needs it
    (:class:`_Prefix`: segment sums of the posts' weights, then cumulated), so a resample
    costs a pass over the positives and the segments, not over every query. Exact in whole
    numbers (doubled)."""

    def __init__(self, layout: ScoreLayout, codes_in_order: Sequence[np.ndarray],
                 sizes: Sequence[int], precision_columns: int = 0,
                 targets: Sequence[float] = ()):
        self.layout = layout
        ys = layout.ys
        n_posts = int(layout.columns.max()) + 1 if layout.n else 0
        run = np.searchsorted(layout.starts, np.arange(layout.n), side="right") - 1
        lo, hi = layout.edges[run], layout.edges[run + 1]
        pos_rows, neg_rows = np.flatnonzero(ys), np.flatnonzero(~ys)
        self.pos_columns = layout.columns[pos_rows]
        neg_columns = layout.columns[neg_rows]
        nb, pb = layout.negatives_before, layout.positives_before
        pos_lo, pos_hi = nb[lo[pos_rows]], nb[hi[pos_rows]]
        neg_lo, neg_hi = pb[lo[neg_rows]], pb[hi[neg_rows]]
        self.sizes = list(sizes)
        # the whole data's negatives below each positive (its tie run, and up to its end)
        self.negatives = _Prefix(neg_columns, np.r_[pos_lo, pos_hi], n_posts)
        self.pos_at = _pair(self.negatives.index(pos_lo), self.negatives.index(pos_hi))
        self.neg_per_post = np.bincount(neg_columns, minlength=n_posts).astype(np.int64)
        # per post: its positive (negative) queries in each cohort, for the cohorts' weights
        self.pos_by_post = np.zeros((n_posts, sum(self.sizes)))
        self.neg_by_post = np.zeros((n_posts, sum(self.sizes)))
        start = 0
        for c, g in zip(codes_in_order, self.sizes, strict=True):
            np.add.at(self.pos_by_post, (self.pos_columns, start + c[pos_rows]), 1.0)
            np.add.at(self.neg_by_post, (neg_columns, start + c[neg_rows]), 1.0)
            start += g
        # (cohorts x positives) indicators, to sum a positive's terms per cohort
        self.pos_group_t = np.vstack([_indicator(c[pos_rows], g).T
                                      for c, g in zip(codes_in_order, sizes, strict=True)]
                                     or [np.zeros((0, pos_rows.size))])
        # Per column: its negatives by cohort, then in the order of p; each positive's place
        # among its own cohort's negatives (below its tie run, and up to its end) and the
        # start of its cohort in that order. And the runs of its negatives (in that order) of
        # one cohort between the same two positives, which see the same positives above
        # them: each run's weight times the positives' weight above it, summed per cohort,
        # is 2 U(all, j).
        self.within = []
        run_positions = []
        n1 = layout.n + 1
        for c, g in zip(codes_in_order, self.sizes, strict=True):
            neg_codes = c[neg_rows]
            perm = np.argsort(neg_codes, kind="stable")
            keys = neg_codes[perm] * n1 + neg_rows[perm]
            g_x = c[pos_rows] * n1
            at_lo = np.searchsorted(keys, g_x + lo[pos_rows])
            at_hi = np.searchsorted(keys, g_x + hi[pos_rows])
            base = np.searchsorted(keys, np.arange(g, dtype=np.int64) * n1)  # per cohort
            codes, run_lo, run_hi = neg_codes[perm], neg_lo[perm], neg_hi[perm]
            new = np.r_[True, (codes[1:] != codes[:-1]) | (run_lo[1:] != run_lo[:-1])
                        | (run_hi[1:] != run_hi[:-1])] if codes.size else np.zeros(0, bool)
            starts = np.flatnonzero(new)
            ends = np.r_[starts[1:], codes.size].astype(np.int64)
            run_codes = codes[starts]
            blocks = np.flatnonzero(np.r_[True, run_codes[1:] != run_codes[:-1]]) \
                if starts.size else starts
            prefix = _Prefix(neg_columns[perm], np.r_[at_lo, at_hi, base, starts, ends],
                             n_posts)
            self.within.append((prefix, _pair(prefix.index(at_lo), prefix.index(at_hi)),
                                prefix.index(base),
                                prefix.index(starts), prefix.index(ends), blocks,
                                run_codes[blocks], run_lo[starts], run_hi[starts]))
            run_positions.append(np.r_[run_lo[starts], run_hi[starts]])
        # the whole data's positives above each run (up to its tie run, and below its end)
        self.positives = _Prefix(
            self.pos_columns, np.concatenate(run_positions or [np.zeros(0, np.int64)]), n_posts)
        self.within = [(*w[:-2], _pair(self.positives.index(w[-2]),
                                       self.positives.index(w[-1]))) for w in self.within]
        # average precision and TPR at the FPR targets of the first precision_columns
        # columns' cohorts
        self.precision = PrecisionRuns(layout, list(codes_in_order)[:precision_columns],
                                       self.sizes[:precision_columns], targets) \
            if precision_columns else None

    def replicates(self, weights) -> list[tuple]:
        """Per column: (cohort AUROC, rest AUROC, ``(b, g)`` each, and for the precision
        columns the cohorts' ``(average precision (b, g), TPR at the FPR targets
        (b, g, targets))`` and the same of their rests (:class:`PrecisionRuns`), else
        None)."""
        bound = int(np.iinfo(weights.dtype).max) * max(self.layout.n, 1)
        by_post = np.ascontiguousarray(  # (posts, b)
            weights.T, dtype=np.int32 if bound < np.iinfo(np.int32).max else np.int64)
        w_pos = np.take(by_post, self.pos_columns, axis=0).astype(np.float64)  # (positives, b)
        total_p = w_pos.sum(axis=0)
        total_n = (self.neg_per_post @ by_post).astype(np.float64)
        # positives against every negative below them (ties one half), per positive
        pos_terms = _pair_sum(self.negatives.values(by_post), *self.pos_at)
        pos_terms *= w_pos
        twice_total = pos_terms.sum(axis=0)
        # the cohorts' weights of positives and negatives from the posts' weights (whole
        # numbers: the same sums as over the queries)
        weights_f = weights.astype(np.float64)
        p_j = weights_f @ self.pos_by_post
        n_j = weights_f @ self.neg_by_post
        row = (self.pos_group_t @ pos_terms).T  # 2 U(j, all)
        del pos_terms
        diag = np.empty_like(row)
        above = np.zeros_like(row)  # per cohort: its negatives times the positives above
        pos = self.positives.values(by_post)
        start = 0
        for g, (prefix, at, base, starts, ends, blocks, present, run_at) in \
                zip(self.sizes, self.within, strict=True):
            cum = prefix.values(by_post)
            terms = _pair_sum(cum, *at)
            terms *= w_pos
            # minus twice the negatives before the cohort's own, times its positives
            diag[:, start:start + g] = (self.pos_group_t[start:start + g] @ terms).T
            if base.size:
                diag[:, start:start + g] -= 2.0 * np.take(cum, base, axis=0).T \
                    * p_j[:, start:start + g]
            if starts.size:  # whole numbers: exact, in any order
                run_w = np.take(cum, ends, axis=0) - np.take(cum, starts, axis=0)
                run_w *= _pair_sum(pos, *run_at)
                above[:, start + present] = np.add.reduceat(run_w, blocks, axis=0).T
            start += g
        precisions = [] if self.precision is None else self.precision.values(
            by_post, p_j[:, :sum(self.precision.sizes)], n_j[:, :sum(self.precision.sizes)])
        col = 2 * total_p[:, None] * n_j - above  # 2 U(all, j)
        cohort = ratio(diag / 2.0, p_j * n_j)
        rest = ratio((twice_total[:, None] - row - col + diag) / 2.0,
                      (total_p[:, None] - p_j) * (total_n[:, None] - n_j))
        out, start = [], 0
        for k, g in enumerate(self.sizes):
            out.append((cohort[:, start:start + g], rest[:, start:start + g],
                        precisions[k] if k < len(precisions) else None))
            start += g
        return out


def _pair(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lo, hi, tied)`` for :func:`_pair_sum`: ``tied`` where the two differ."""
    return lo, hi, np.flatnonzero(lo != hi)


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
    extra: list | None = None  # per cohort: (posts, 2E) the same of extra_columns
    multilabel: list | None = None  # per cohort: (posts, K) of multilabel_sums
    multilabel_delta: list | None = None  # per cohort: the rest's (multilabel_sums)
    multilabel_whole: np.ndarray | None = None  # (n_posts, 3): every query's (PER_POST)
    logistic: list | None = None  # per cohort: (posts, L) of cohort_logistic.moment_columns


def prepare(ds, grouping: Grouping, num_den: np.ndarray,
            extra: np.ndarray | None = None, logistic: np.ndarray | None = None) -> _Column:
    g = len(grouping.values)
    posts, sums, extras, fits = [], [], [], []
    for j in range(g):
        rows = np.flatnonzero(grouping.codes == j)
        used, local = np.unique(ds.post_code[rows], return_inverse=True)
        posts.append(used)
        sums.append(group_sums(num_den, local, used.size, rows))
        if extra is not None:
            extras.append(group_sums(extra, local, used.size, rows))
        if logistic is not None:
            fits.append(group_sums(logistic, local, used.size, rows))
    return _Column(grouping, posts, sums, extras if extra is not None else None,
                   logistic=fits if logistic is not None else None)


def replicates(ds, columns: list[_Column], pairs: PairCounts, num_den, counts,
                n_metrics: int, progress) -> list[dict]:
    """Per column: the cohorts' and the rests' resampled values ``(R, g, S + 1)`` (AUROC
    last), from one pass over the post count matrix: its batches of resamples on
    :data:`WORKERS` threads (numpy works outside the interpreter's lock, so they share the
    cores), each batch's values in its own rows, so the values do not depend on which thread
    computed them: each batch's values written in place, in its own rows of the arrays
    returned."""
    from concurrent.futures import ThreadPoolExecutor

    from metrics_core.cpu_account import charged

    n_posts = int(ds.posts.size)
    totals_posts = group_sums(num_den, ds.post_code, n_posts)

    n_rows = counts.n_resamples if isinstance(counts, Bootstrap) else counts.shape[0]
    precision_columns = 0 if pairs.precision is None else len(pairs.precision.sizes)
    # every resample's values in place: each batch writes its own rows (no copy at the end)
    store = []
    for k, col in enumerate(columns):
        g = len(col.grouping.values)
        part = {"cohort": np.empty((n_rows, g, n_metrics + 1)),
                "rest": np.empty((n_rows, g, n_metrics + 1)),
                "extra": None if col.extra is None else np.empty(
                    (n_rows, g, col.extra[0].shape[1])),
                "multilabel": None, "multilabel_rest": None, "logistic": None if
                col.logistic is None else np.empty((n_rows, g, col.logistic[0].shape[1])),
                "auprc": np.empty((n_rows, g)) if k < precision_columns else None,
                "tpr": np.empty((n_rows, g, pairs.precision.targets.size))
                if k < precision_columns else None}
        # the rest of the data's, beside each cohort's
        part["auprc_rest"] = None if part["auprc"] is None else np.empty_like(part["auprc"])
        part["tpr_rest"] = None if part["tpr"] is None else np.empty_like(part["tpr"])
        if col.multilabel is not None:
            part["multilabel"] = np.empty((n_rows, g, col.multilabel[0].shape[1]))
            part["multilabel_rest"] = np.empty_like(part["multilabel"])
        store.append(part)

    # per column and cohort: its per-post sums side by side (sums, extra, logistic,
    # multilabel, the rest's multilabel), one product per cohort and batch
    parts = [[m for m in (col.sums, col.extra, col.logistic, col.multilabel,
                          col.multilabel_delta) if m is not None] for col in columns]
    stacked = [[np.hstack([m[j] for m in kinds]) for j in range(len(col.grouping.values))]
               for col, kinds in zip(columns, parts, strict=True)]
    edges = [np.cumsum([0] + [m[0].shape[1] for m in kinds]) if kinds and kinds[0] else None
             for kinds in parts]

    def one(batch, at: int) -> None:
        b = batch.shape[0]
        cf = batch.astype(np.float64)
        whole = cf @ totals_posts
        aurocs = pairs.replicates(batch)
        ml_whole = None
        for col, part, (a, r_a, precision), mats, edge in zip(
                columns, store, aurocs, stacked, edges, strict=True):
            g = len(col.grouping.values)
            cohort = part["cohort"][at:at + b]
            rest = part["rest"][at:at + b]
            extra = None if part["extra"] is None else part["extra"][at:at + b]
            ml = ml_delta = None
            if part["multilabel"] is not None:
                ml = part["multilabel"][at:at + b]
                ml_delta = np.empty((b, g, PER_POST.size))
                if ml_whole is None:  # every query's: the same for every column
                    ml_whole = cf @ col.multilabel_whole
            for j in range(g):
                # the cohort's posts' weights, gathered once, times all its sums at once
                both = cf[:, col.posts[j]] @ mats[j]
                pieces = iter(both[:, edge[i]:edge[i + 1]] for i in range(edge.size - 1))
                s = next(pieces)
                cohort[:, j, :n_metrics] = ratio(s[:, :n_metrics], s[:, n_metrics:])
                r = whole - s
                rest[:, j, :n_metrics] = ratio(r[:, :n_metrics], r[:, n_metrics:])
                if extra is not None:
                    extra[:, j] = next(pieces)
                if col.logistic is not None:
                    part["logistic"][at:at + b, j] = next(pieces)
                if ml is not None:
                    ml[:, j] = next(pieces)
                    ml_delta[:, j] = next(pieces)
            cohort[:, :, n_metrics], rest[:, :, n_metrics] = a, r_a
            if ml is not None:
                part["multilabel_rest"][at:at + b] = multilabel_rest(ml, ml_whole, ml_delta)
            if part["auprc"] is not None:
                (part["auprc"][at:at + b], part["tpr"][at:at + b],
                 part["auprc_rest"][at:at + b], part["tpr_rest"][at:at + b]) = precision

    done = 0
    total = counts.shape[0] if hasattr(counts, "shape") else None

    def keep(rows) -> None:
        nonlocal done
        done += rows
        if progress is not None and total:
            progress(done, total)

    with one_blas_thread(), \
            ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="cohorts") as pool:
        pending, at = [], 0
        for batch in _batches(counts):
            pending.append((pool.submit(charged(one), batch, at), batch.shape[0]))
            at += batch.shape[0]
            if len(pending) > WORKERS:  # at most one batch waiting per thread
                future, rows = pending.pop(0)
                future.result()
                keep(rows)
        for future, rows in pending:
            future.result()
            keep(rows)
    if not n_rows:
        return [dict.fromkeys(part) for part in store]
    return store


#: Threads of the pass over the resamples (the machine's cores, at most 4).
WORKERS = max(1, min(4, os.cpu_count() or 1))


def one_blas_thread():
    """The BLAS library on one thread while :data:`WORKERS` threads compute (the pass over
    the resamples, the columns' tables after it): the threads run the work already,
    and a product spread over every core by each of them only makes the cores wait on each
    other (and spin: the CPU time doubled on two cores). Without threadpoolctl, as it is."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - a dependency; the pass is the same without it
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _batches(counts, rows: int = 500):
    if isinstance(counts, Bootstrap):
        yield from counts.count_batches()
        return
    for start in range(0, counts.shape[0], rows):
        yield counts[start:start + rows]
