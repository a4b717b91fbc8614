"""Bootstrap replicates of the statistics read along the score order (contract §4, §9).

AUROC, average precision, the ROC and precision-recall curves at grid points, the net-benefit
curve and the AUROC of each group (criterion) of every resample, in one pass over the
resamples' integer weights (bootstrap counts), with the rows laid out in the order of ``p``
ascending once for all resamples (:class:`ScoreLayout`).

Per batch of resamples: the positives' weights and the negatives' weights are gathered in
that order and cumulated (two integer cumulative sums, whose columns together cover each row
once); every statistic then reads them at a few places: the bounds of the runs of tied scores
that hold a positive (AUROC, AP), the positions of the decision thresholds (net benefit) and,
per resample and grid point, one binary search (the curves). No resample is sorted.

Every replicate equals, bit for bit, the straightforward computation on the resample's weights
(:func:`metrics_core.metrics.classification.auroc_auprc_weighted`, and the curve bands of
:mod:`metrics_core.metrics._reference`): the weights below a position are whole numbers, exact in
any order, and each division and each sum of fractions is the one those make, on the same
operands in the same order (``tests/test_curve_replicates.py``).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from metrics_core.metrics.uncertainty import divide

__all__ = ["ScoreLayout", "batch_replicates", "curve_replicates", "joined"]


class ScoreLayout:
    """Rows in the order of ``p`` ascending: labels and the runs of tied scores (data-only).

    ``ps``, ``ys``: the scores (ascending) and 0/1 labels in that order; ``columns``: where
    each of these rows is in the weight matrices read (default: column ``i`` is row ``i``).
    A *position* ``x`` in ``0..n`` stands for "the rows before the ``x``-th"; a group is a run
    of equal scores, starting at ``starts`` (``edges`` adds the end ``n``).
    ``positive_lo`` / ``positive_hi``: the positions around each group that holds a positive,
    score descending (the distinct positive scores of the AP sum, in its order).
    """

    def __init__(self, ps, ys, columns=None):
        self.ps = np.asarray(ps, dtype=np.float64)
        self.ys = ys = np.asarray(ys).astype(bool)
        self.n = int(self.ps.size)
        self.columns = columns = (np.arange(self.n) if columns is None
                                  else np.asarray(columns, dtype=np.int64))
        self.positive_columns = columns[ys]
        self.negative_columns = columns[~ys]
        #: positives (negatives) before each position 0..n: an index into their cumulation
        self.positives_before = np.r_[0, np.cumsum(ys)].astype(np.int64)
        self.negatives_before = np.arange(self.n + 1) - self.positives_before
        if self.n:
            self.starts = np.flatnonzero(np.r_[True, self.ps[1:] != self.ps[:-1]])
            positive = np.add.reduceat(ys.astype(np.int64), self.starts) > 0
        else:
            self.starts = np.zeros(0, dtype=np.int64)
            positive = np.zeros(0, dtype=bool)
        self.edges = np.r_[self.starts, self.n].astype(np.int64)
        groups = np.flatnonzero(positive)[::-1]
        self.positive_lo = self.edges[groups]
        self.positive_hi = self.edges[groups + 1]

    @property
    def n_groups(self) -> int:
        return int(self.starts.size)

    def subset(self, positions: np.ndarray) -> ScoreLayout:
        """The layout of some rows, ``positions`` ascending (still in the order of p)."""
        return ScoreLayout(self.ps[positions], self.ys[positions], self.columns[positions])

    def cumulative(self, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The positives' weights and the negatives' weights, each cumulated in the order of
        p: ``(b, n_pos + 1)`` and ``(b, n_neg + 1)`` integer arrays, column 0 zero. The weight
        of the positives (negatives) before position ``x`` is column
        ``positives_before[x]`` (``negatives_before[x]``). Exact: whole numbers."""
        b = weights.shape[0]
        bound = int(np.iinfo(weights.dtype).max) * max(self.n, 1)
        kind = np.int32 if bound < np.iinfo(np.int32).max else np.int64
        out = []
        for columns in (self.positive_columns, self.negative_columns):
            cum = np.empty((b, columns.size + 1), dtype=kind)
            cum[:, 0] = 0
            np.cumsum(np.take(weights, columns, axis=1), axis=1, dtype=kind, out=cum[:, 1:])
            out.append(cum)
        return out[0], out[1]

    def below(self, pos, neg, positions) -> tuple[np.ndarray, np.ndarray]:
        """The positives' and the negatives' weight before each of ``positions``, per
        resample (columns gathered from :meth:`cumulative`)."""
        return (np.take(pos, self.positives_before[positions], axis=1),
                np.take(neg, self.negatives_before[positions], axis=1))


def _auroc_ap(layout: ScoreLayout, pos: np.ndarray, neg: np.ndarray,
              want_ap: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """AUROC (and AP) per resample from the cumulations of :meth:`ScoreLayout.cumulative`.

    Over the groups holding a positive (score descending), with ``a`` the group's positive
    weight and ``N_lt`` / ``N_le`` the negative weight below / up to its score, twice the
    Mann-Whitney pair count is ``sum a (N_lt + N_le)`` (a tie counts one half), a sum of whole
    numbers; AUROC is half of it over ``P N``. AP is ``sum a · precision / P`` with ``precision
    = P_ge / (P_ge + N_ge)`` at the group's score, summed in the order and form of
    :func:`metrics_core.metrics.classification._auc_ap_from_blocks`.
    """
    p_total = pos[:, -1].astype(np.float64)
    n_total = neg[:, -1].astype(np.float64)
    p_lo, n_lo = (v.astype(np.float64) for v in layout.below(pos, neg, layout.positive_lo))
    p_hi, n_hi = layout.below(pos, neg, layout.positive_hi)
    a = p_hi - p_lo
    twice = (a * (n_lo + n_hi)).sum(axis=1)
    both = (p_total > 0) & (n_total > 0)
    auc = divide(twice / 2.0, p_total * n_total)
    auc[~both] = np.nan
    if not want_ap:
        return auc, None
    tp_at = p_total[:, None] - p_lo  # positive weight with score >= the group's
    predicted = tp_at + (n_total[:, None] - n_lo)
    # a > 0 gives predicted > 0 and the precision of divide; a == 0 a term of exactly 0
    # (its precision set to 0 / 1): the terms of np.where(a > 0, a * precision, 0)
    predicted[predicted == 0] = 1.0
    terms = a * (tp_at / predicted)
    ap = divide(terms.sum(axis=1), p_total)
    ap[~both] = np.nan
    return auc, ap


def _largest_at_most(grid: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Per resample and grid value ``g``: the largest whole ``K`` with ``K / total <= g`` in
    float64 (the division rounded as numpy rounds it); ``total > 0``."""
    g = grid[None, :]
    t = total[:, None]
    k = np.floor(g * t)
    while True:  # the product is within a unit or two of the answer
        up = (k + 1.0) / t <= g
        down = k / t > g
        if not (up.any() or down.any()):
            return k
        k = k + up - down


def _smallest_at_least(grid: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Per resample and grid value ``g``: the smallest whole ``L`` with ``L / total >= g``."""
    g = grid[None, :]
    t = total[:, None]
    k = np.ceil(g * t)
    while True:
        down = (k - 1.0) / t >= g
        up = k / t < g
        if not (up.any() or down.any()):
            return k
        k = k + up - down


def _first_position(layout: ScoreLayout, cum, rows, needles, *, positive: bool,
                    side: str) -> np.ndarray:
    """Per resample ``rows[i]`` and needle ``needles[i, j]``: the first position whose weight
    before it (of the positives, or the negatives) is ``>= needle`` (``side="left"``) or
    ``> needle`` (``"right"``); ``n + 1`` where none is. One binary search per resample in its
    cumulation, then the position just after the row that brings the weight there."""
    found = np.empty(needles.shape, dtype=np.int64)
    needles = needles.astype(cum.dtype)
    for i, r in enumerate(rows):
        found[i] = np.searchsorted(cum[r], needles[i], side=side)
    before = layout.positives_before if positive else layout.negatives_before
    return np.searchsorted(before, found, side="left")


def _roc_at(layout: ScoreLayout, pos, neg, grid: np.ndarray) -> np.ndarray:
    """TPR at each grid FPR per resample: the TPR of the ROC point with the largest FPR ``<=``
    the grid value (the rule of :func:`~metrics_core.metrics.classification.tpr_at_fpr`), 0 where
    only the origin qualifies; ``nan`` rows for a resample with one class.

    ``fpr <= g`` is ``N_ge <= K`` (:func:`_largest_at_most`), so the point is the first group
    whose negative weight below it reaches ``N - K``."""
    p_total, n_total = pos[:, -1].astype(np.float64), neg[:, -1].astype(np.float64)
    out = np.full((pos.shape[0], grid.size), np.nan)
    valid = np.flatnonzero((p_total > 0) & (n_total > 0))
    if not valid.size:
        return out
    need = n_total[valid, None] - _largest_at_most(grid, n_total[valid])
    need = np.clip(need, 0, n_total[valid, None] + 1)  # (the same searches)
    position = _first_position(layout, neg, valid, need, positive=False, side="left")
    first = np.searchsorted(layout.starts, position, side="left")  # first group from there
    found = first < layout.n_groups
    at = layout.edges[np.minimum(first, layout.n_groups - 1)]
    p_at = pos[valid[:, None], layout.positives_before[at]]
    p = p_total[valid, None]
    out[valid] = np.where(found, (p - p_at) / p, 0.0)
    return out


def _pr_at(layout: ScoreLayout, pos, neg, grid: np.ndarray) -> np.ndarray:
    """Precision at each grid recall per resample: the precision of the first operating point
    (highest threshold) with recall ``>=`` the grid value, not before the first drawn row;
    ``nan`` rows for a resample without positives (the rule of ``pr_band``)."""
    d = layout.n_groups
    p_total, n_total = pos[:, -1], neg[:, -1]
    out = np.full((pos.shape[0], grid.size), np.nan)
    valid = np.flatnonzero(p_total > 0)
    if not valid.size:
        return out
    p_f = p_total[valid].astype(np.float64)
    # recall >= g is P_ge >= L: the groups whose positive weight below them is <= P - L
    limit = np.clip(p_f[:, None] - _smallest_at_least(grid, p_f), -1, p_f[:, None])
    position = _first_position(layout, pos, valid, limit, positive=True, side="right")
    below = np.searchsorted(layout.starts, position, side="left")
    index = np.minimum(d - below, d - 1)  # in the curve's order (score descending)
    # the points that predict no drawn row: from the first position holding every weight
    drawn = np.maximum(
        _first_position(layout, pos, valid, p_total[valid, None], positive=True, side="left"),
        _first_position(layout, neg, valid, n_total[valid, None], positive=False,
                        side="left"))[:, 0]
    empty = d - np.searchsorted(layout.starts, drawn, side="left")
    index = np.maximum(index, empty[:, None])
    at = layout.edges[d - 1 - index]
    rows = valid[:, None]
    p_at = pos[rows, layout.positives_before[at]].astype(np.float64)
    n_at = neg[rows, layout.negatives_before[at]]
    tp = p_f[:, None] - p_at
    predicted = (p_f + n_total[valid])[:, None] - p_at - n_at
    out[valid] = tp / predicted
    return out


def _net_benefit_at(layout: ScoreLayout, pos, neg, thresholds: np.ndarray) -> np.ndarray:
    """Net benefit ``TP/N − FP/N · t / (1 − t)`` (positive iff ``p >= t``) per resample and
    threshold, in the form of :func:`metrics_core.metrics.decision.net_benefit`."""
    start = np.searchsorted(layout.ps, thresholds, side="left")
    p_total = pos[:, -1:].astype(np.float64)
    total = p_total + neg[:, -1:]
    p_below, n_below = layout.below(pos, neg, start)
    tp = p_total - p_below
    predicted = total - p_below - n_below
    fp = predicted - tp
    with np.errstate(invalid="ignore", divide="ignore"):
        return tp / total - fp / total * (thresholds / (1.0 - thresholds))


def curve_replicates(layout: ScoreLayout, batches: Iterable[np.ndarray], *,
                     groups: list[np.ndarray] | None = None, roc_grid=None, pr_grid=None,
                     thresholds=None, discrimination: bool = True) -> dict[str, np.ndarray]:
    """Every resample's score-ordered statistics, one batch of weights at a time.

    ``batches`` yield integer weight matrices ``(b, m)`` (bootstrap counts) whose columns
    ``layout`` knows (its ``columns``). Returns arrays with one row per resample: ``auroc`` and
    ``auprc`` (when ``discrimination``), ``auroc_by_group`` ``(R, len(groups))`` for
    ``groups`` (each the ascending positions of a group's rows in the layout), and ``roc`` /
    ``pr`` / ``net_benefit`` at ``roc_grid`` (FPR), ``pr_grid`` (recall) and ``thresholds``
    when given.
    """
    replicates = batch_replicates(layout, groups=groups, roc_grid=roc_grid, pr_grid=pr_grid,
                                  thresholds=thresholds, discrimination=discrimination)
    return joined([replicates(weights) for weights in batches])


def joined(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The replicates of consecutive batches (:func:`batch_replicates`), one array each."""
    names = list(parts[0]) if parts else []
    return {name: np.concatenate([part[name] for part in parts], axis=0) for name in names}


def batch_replicates(layout: ScoreLayout, *, groups: list[np.ndarray] | None = None,
                     roc_grid=None, pr_grid=None, thresholds=None,
                     discrimination: bool = True):
    """The function of one batch of weights that :func:`curve_replicates` applies to each:
    ``replicates(weights)`` -> name -> one row per resample of the batch. Each resample's
    values depend on its own weights only (not on the batch it comes in), so batches may be
    computed in any order, on any thread, and :func:`joined` in resample order."""
    subsets = [layout.subset(np.asarray(g, dtype=np.int64)) for g in (groups or [])]
    roc_grid = None if roc_grid is None else np.asarray(roc_grid, dtype=np.float64)
    pr_grid = None if pr_grid is None else np.asarray(pr_grid, dtype=np.float64)
    thresholds = None if thresholds is None else np.asarray(thresholds, dtype=np.float64)

    def replicates(weights: np.ndarray) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        pos, neg = layout.cumulative(weights)
        if discrimination:
            out["auroc"], out["auprc"] = _auroc_ap(layout, pos, neg)
        if roc_grid is not None:
            out["roc"] = _roc_at(layout, pos, neg, roc_grid)
        if pr_grid is not None:
            out["pr"] = _pr_at(layout, pos, neg, pr_grid)
        if thresholds is not None:
            out["net_benefit"] = _net_benefit_at(layout, pos, neg, thresholds)
        del pos, neg
        if subsets:
            by_group = np.empty((weights.shape[0], len(subsets)))
            for j, sub in enumerate(subsets):
                by_group[:, j] = _auroc_ap(sub, *sub.cumulative(weights), want_ap=False)[0]
            out["auroc_by_group"] = by_group
        return out

    return replicates
