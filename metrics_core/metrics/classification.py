"""Classification metrics of the no-evidence gate on ``p_has_evidence`` (contract §4).

Protocol ``all_queries``: every function takes the gold labels ``y`` (0/1) and the scores ``p``
of all queries as plain arrays, so the evidence pipeline and the triage files share them.

- :func:`roc_auc`, :func:`average_precision`: equal to scikit-learn's ``roc_auc_score`` and
  ``average_precision_score`` (step-wise AP, not trapezoidal). With one class present the
  value is seed 000's convention (AUROC 0.5, AUPRC = positive rate) and the :class:`Score` is
  flagged ``defined=False``.
- :func:`roc_auc_weighted`, :func:`average_precision_weighted` (both at once:
  :func:`auroc_auprc_weighted`): the same numbers for a batch of row-weight vectors
  (bootstrap count matrices), one value per resample.
- :func:`roc_points`, :func:`pr_points`: the curves (thinned for drawing by
  :mod:`metrics_core.report.thinning`, their bootstrap bands in :mod:`metrics_core.metrics.bands`).
- :func:`tpr_at_fpr`: operating points at fixed false-positive rates (seed 000 §2.3).
- The confusion counts at ``p >= threshold`` and their ratios are
  :mod:`metrics_core.metrics.confusion`'s (on a :class:`PreparedScores` too).

Everything that depends only on the data (the sort by score, cumulative counts at every
distinct threshold) is held by a :class:`PreparedScores` from :func:`prepare`. Every function
here that takes ``(y, p)`` also takes a :class:`PreparedScores` in place of them (``p`` left
out), so a caller that computes several metrics on the same data sorts once, and a dashboard
that moves a threshold slider only pays for a binary search::

    prepared = prepare(y, p)
    auroc, auprc = roc_auc(prepared), average_precision(prepared)
    roc, ops = roc_points(prepared), tpr_at_fpr(prepared, targets=(0.01, 0.05))

Nothing is cached at module level: a :class:`PreparedScores` lives as long as its caller keeps
it, and data never passes from one caller (or dashboard session) to another.

Sources: "contract §N" is section N of ``docs/CONTRACT.md``; "seed 000" is
``docs/seeds/000-metric-specification.txt``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from metrics_core.metrics.uncertainty import divide

__all__ = [
    "CurveCounts",
    "PrCurve",
    "PreparedScores",
    "RocCurve",
    "Score",
    "TprAtFpr",
    "auroc_auprc_weighted",
    "average_precision",
    "average_precision_weighted",
    "check_binary_inputs",
    "pr_points",
    "prepare",
    "prepared_rows",
    "roc_auc",
    "roc_auc_weighted",
    "roc_points",
    "tpr_at_fpr",
]

#: Default FPR targets of ``tpr@fpr`` (contract §4).
FPR_TARGETS = (0.01, 0.03, 0.05, 0.10)

#: Weight-matrix elements processed at once by the weighted kernels (cache-sized chunks).
CHUNK_ELEMENTS = 1 << 20


# ------------------------------------------------------------------------------ results
@dataclass(frozen=True)
class Score:
    """A scalar metric value with its definedness (contract §4).

    ``defined=False`` means the metric is undefined on this data; ``value`` then holds the
    convention the contract prescribes (e.g. AUROC 0.5 with one class) or ``nan``, and
    ``reason`` says why (e.g. ``"one class"``).
    """

    value: float
    defined: bool = True
    reason: str | None = None


@dataclass(frozen=True)
class RocCurve:
    """ROC points, one per distinct threshold, as ``roc_curve(..., drop_intermediate=False)``.

    ``thresholds[0]`` is ``inf`` (nothing predicted positive: the point (0, 0)); the dashboard
    labels it "all negative". ``fpr`` (``tpr``) is ``nan`` throughout when there is no negative
    (positive) query.
    """

    fpr: np.ndarray
    tpr: np.ndarray
    thresholds: np.ndarray
    #: Thinned copies for drawing, by ``(tolerance, max_points)`` (kept by
    #: :func:`~metrics_core.report.thinning.simplify`: a chart redrawn on every slider move
    #: thins the same curve once).
    drawn: dict = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class PrCurve:
    """Precision-recall points as ``precision_recall_curve``: recall decreasing.

    ``precision``/``recall`` have one more entry than ``thresholds``: the last point is
    (recall 0, precision 1) and has no threshold. Where scikit-learn sets recall to 1 for data
    without positives (0/0), this curve reports ``nan``.
    """

    precision: np.ndarray
    recall: np.ndarray
    thresholds: np.ndarray
    #: Thinned copies for drawing, by ``(tolerance, max_points)`` (kept by
    #: :func:`~metrics_core.report.thinning.simplify`: a chart redrawn on every slider move
    #: thins the same curve once).
    drawn: dict = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class TprAtFpr:
    """TPR at the largest ROC index whose FPR is at most ``target`` (contract §4, seed 000 §2.3).

    ``threshold`` is that ROC point's threshold (``inf`` when only the (0, 0) point qualifies:
    "all negative"). Without negatives no index qualifies and the seed's fallback applies:
    ``tpr = 0.0``, ``threshold = 1.0``, ``fpr = nan``; without positives ``tpr`` is ``nan``.
    Both cases have ``defined=False``.
    """

    target: float
    tpr: float
    fpr: float
    threshold: float
    defined: bool = True


# ------------------------------------------------------------------------------- inputs
def check_binary_inputs(y, p, *, sample_weight=None, probability: bool = False,
                        y_name: str = "y", p_name: str = "p"):
    """Validate labels and scores; return ``(y int8, p float64, weight float64 | None)``.

    ``y`` must be 1-D with values in {0, 1}; ``p`` 1-D of the same length and finite (and in
    [0, 1] when ``probability``); ``sample_weight`` finite and non-negative. Raises
    ``ValueError`` naming the argument and the rule.
    """
    y_arr = np.asarray(y)
    p_arr = np.asarray(p)
    if y_arr.ndim != 1:
        raise ValueError(f"{y_name} must be 1-D, got shape {y_arr.shape}")
    if p_arr.shape != y_arr.shape:
        raise ValueError(f"{p_name} must have the shape of {y_name} {y_arr.shape}, "
                         f"got {p_arr.shape}")
    if y_arr.dtype.kind not in "biuf":
        raise ValueError(f"{y_name} must be 0/1 labels, got dtype {y_arr.dtype}")
    bad = (y_arr != 0) & (y_arr != 1)
    if bad.any():
        first = np.flatnonzero(bad)[:5].tolist()
        raise ValueError(f"{y_name} must be 0/1 labels; rows {first} are not")
    if p_arr.dtype.kind not in "biuf":
        raise ValueError(f"{p_name} must be numeric, got dtype {p_arr.dtype}")
    p_arr = p_arr.astype(np.float64, copy=False)
    finite = np.isfinite(p_arr)
    if not finite.all():
        first = np.flatnonzero(~finite)[:5].tolist()
        raise ValueError(f"{p_name} must be finite; rows {first} are not")
    if probability:
        outside = (p_arr < 0.0) | (p_arr > 1.0)
        if outside.any():
            first = np.flatnonzero(outside)[:5].tolist()
            raise ValueError(f"{p_name} must be probabilities in [0, 1]; rows {first} are not")
    w_arr = None
    if sample_weight is not None:
        w_arr = np.asarray(sample_weight, dtype=np.float64)
        if w_arr.shape != y_arr.shape:
            raise ValueError(f"sample_weight must have the shape of {y_name} {y_arr.shape}, "
                             f"got {w_arr.shape}")
        if not np.isfinite(w_arr).all() or (w_arr < 0).any():
            raise ValueError("sample_weight must be finite and non-negative")
    return y_arr.astype(np.int8, copy=False), p_arr, w_arr


def check_weights(weights, n: int, *, dtype=None) -> np.ndarray:
    """Bootstrap weights as a ``(b, n)`` numeric matrix (one row for a 1-D array), cast to
    ``dtype`` when given; a :class:`ValueError` naming the shape or dtype otherwise."""
    w = np.asarray(weights)
    if w.ndim == 1:
        w = w[None, :]
    if w.ndim != 2 or w.shape[1] != n:
        raise ValueError(f"weights must have shape (b, {n}), got {np.shape(weights)}")
    if w.dtype.kind not in "biuf":
        raise ValueError(f"weights must be numeric, got dtype {w.dtype}")
    return w if dtype is None else w.astype(dtype, copy=False)


# ------------------------------------------------------------------ data-only structure
class CurveCounts:
    """What the ROC and precision-recall kernels read: the distinct scores, descending
    (``thresholds``), the positives / negatives scoring at least each one (``tps`` / ``fps``,
    the points of scikit-learn's ``roc_curve``) and the class sizes.

    :class:`PreparedScores` builds them from the rows; an engine that keeps the rows apart
    builds them from counts merged over its partitions
    (:func:`metrics_core.engines.reductions.counted_scores`). :func:`roc_auc` and
    :func:`average_precision` (unweighted), :func:`roc_points`, :func:`pr_points` and
    :func:`tpr_at_fpr` take either in place of ``(y, p)``; what needs the rows (sample weights,
    the weighted kernels, confusion sweeps) takes a :class:`PreparedScores`.
    """

    def __init__(self, thresholds: np.ndarray, tps: np.ndarray, fps: np.ndarray, *,
                 n_pos: int, n_neg: int):
        self.n_pos = int(n_pos)
        self.n_neg = int(n_neg)
        self.n = self.n_pos + self.n_neg
        self.thresholds, self.tps, self.fps = frozen_arrays(thresholds, tps, fps)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n={self.n}, n_pos={self.n_pos}, n_neg={self.n_neg})"

    @cached_property
    def unweighted(self) -> tuple[float, float]:
        """(AUROC, AP) of the sample itself (``nan`` with one class), from the ROC points.

        AUROC is the trapezoidal area, summed in integer counts (exact below 2^53) and divided
        once by ``P N``; AP is ``sum_i (tps_i - tps_{i-1}) precision_i / P``, the step-wise sum
        of scikit-learn's ``average_precision_score``.
        """
        if self.n_pos == 0 or self.n_neg == 0:
            return float("nan"), float("nan")
        tps = np.r_[0.0, self.tps]
        fps = np.r_[0.0, self.fps]
        # Integer-valued terms and partial sums below 2^53: exact in any order, so numpy's sum
        # (no BLAS threads to wake) gives the same value as a dot product.
        twice_pairs = float(np.sum(np.diff(fps) * (tps[1:] + tps[:-1])))
        auc = twice_pairs / (2.0 * self.n_pos * self.n_neg)
        ap = float(np.dot(np.diff(tps), self.tps / (self.tps + self.fps))) / self.n_pos
        return auc, ap


class PreparedScores(CurveCounts):
    """Everything about ``(y, p)`` that does not depend on a threshold or a weight vector: the
    :class:`CurveCounts`, and the rows for the weighted kernels and the confusion sweeps.

    Build it with :func:`prepare` and pass it in place of ``(y, p)`` to :func:`roc_auc`,
    :func:`average_precision`, :func:`roc_points`, :func:`pr_points`, :func:`tpr_at_fpr`,
    :func:`~metrics_core.metrics.confusion.confusion_sweep`,
    :func:`~metrics_core.metrics.confusion.confusion_at` and the weighted kernels, so that the data
    are validated and sorted once for all of them.

    ``thresholds`` are the distinct scores, descending; ``tps``/``fps`` are the positives /
    negatives scoring at least each threshold (the points of scikit-learn's ``roc_curve``).
    They come from sorting the scores of each class once (value sorts, not an argsort of all
    rows) and counting by binary search. The block ids that map every row to the aggregates of
    the weighted AUROC / AP kernels are built on first use (bootstrap only). ``y`` and ``p``
    are read-only copies of the inputs: changing the caller's arrays later does not change a
    prepared object.

    ``order``, when the caller has one: an ordering of the rows by ``p`` ascending (as
    :func:`numpy.argsort`); the three sorts are then gathers along it. The sorted values are
    the same either way (rows of equal score are interchangeable here).
    """

    def __init__(self, y: np.ndarray, p: np.ndarray, order: np.ndarray | None = None):
        n = int(y.size)
        positive = y == 1
        if order is None:
            self.pos_sorted = np.sort(p[positive])  # ascending, for threshold sweeps
            self.neg_sorted = np.sort(p[~positive])
            both = np.sort(p)
        else:
            both = p.take(order)
            positive_in_order = positive.take(order)
            self.pos_sorted = both[positive_in_order]
            self.neg_sorted = both[~positive_in_order]
        n_pos = int(self.pos_sorted.size)
        first = np.flatnonzero(np.r_[both[:1] == both[:1], both[1:] != both[:-1]])
        distinct = both[first]  # ascending distinct scores
        # Rows scoring >= t: n minus the rows before t's first position; positives likewise
        # by binary search in the sorted positive scores (ascending needles).
        at_least = n - first
        tps = n_pos - np.searchsorted(self.pos_sorted, distinct, side="left")
        super().__init__(distinct[::-1].copy(),  # descending distinct scores
                         tps[::-1].astype(np.float64), (at_least - tps)[::-1].astype(np.float64),
                         n_pos=n_pos, n_neg=n - n_pos)
        self._y = np.array(y, dtype=np.int8)  # own copies: the blocks are built later
        self._p = np.array(p, dtype=np.float64)
        frozen_arrays(self._y, self._p, self.pos_sorted, self.neg_sorted)
        self._keys: tuple[int, np.ndarray] | None = None

    @property
    def y(self) -> np.ndarray:
        """The labels (int8, read-only copy)."""
        return self._y

    @property
    def p(self) -> np.ndarray:
        """The scores (float64, read-only copy)."""
        return self._p

    @cached_property
    def blocks(self) -> tuple[int, int, np.ndarray]:
        """``(m, n_blocks, block id of every row)`` for the weighted kernels.

        u_0 > u_1 > ... > u_{m-1}: distinct positive scores. Positive row -> its group g in
        [0, m). Negative row -> h = #{u > p} in [0, m] and t = (p == u_h); block m + 2 h + t.
        """
        y, p = self._y, self._p
        u_desc = self.pos_sorted[::-1]
        u_desc = u_desc[np.r_[True, u_desc[1:] != u_desc[:-1]]] if u_desc.size else u_desc
        m = int(u_desc.size)
        neg_u = -u_desc  # ascending
        h = np.searchsorted(neg_u, -p, side="left")  # #{u > p}
        tied = (h < m) & (u_desc[np.minimum(h, max(m - 1, 0))] == p) if m else np.zeros(
            self.n, dtype=bool)
        block = np.where(y == 1, h, m + 2 * h + tied)
        return m, 3 * m + 2, block.astype(np.int64)

    @property
    def m(self) -> int:
        return self.blocks[0]

    @property
    def n_blocks(self) -> int:
        return self.blocks[1]

    @property
    def block(self) -> np.ndarray:
        return self.blocks[2]

    def keys(self, rows: int) -> np.ndarray:
        """Flat bincount keys for a ``(rows, n)`` weight chunk (cached for the last size)."""
        if self._keys is None or self._keys[0] != rows:
            offsets = np.arange(rows, dtype=np.int64)[:, None] * self.n_blocks
            self._keys = (rows, (self.block[None, :] + offsets).ravel())
        return self._keys[1]

    def block_sums(self, weights: np.ndarray):
        """Per row of ``weights`` (at most a chunk): positive weight per positive group
        ``a`` (rows, m) and negative weight per block ``c_strict``, ``c_tie`` (rows, m + 1)."""
        rows = weights.shape[0]
        flat = np.ascontiguousarray(weights, dtype=np.float64).ravel()
        sums = np.bincount(self.keys(rows), weights=flat, minlength=rows * self.n_blocks)
        sums = sums.reshape(rows, self.n_blocks)
        neg = sums[:, self.m:].reshape(rows, self.m + 1, 2)
        return sums[:, :self.m], neg[:, :, 0], neg[:, :, 1]

    def auc_ap(self, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(AUROC, AP) per row of ``weights`` (b, n), chunk by chunk (cache-sized)."""
        b = weights.shape[0]
        auc = np.empty(b)
        ap = np.empty(b)
        step = max(1, CHUNK_ELEMENTS // max(self.n, 1))
        for start in range(0, b, step):
            stop = min(start + step, b)
            auc[start:stop], ap[start:stop] = _auc_ap_from_blocks(
                *self.block_sums(weights[start:stop]))
        return auc, ap


def prepare(y, p, *, order=None) -> PreparedScores:
    """Validate ``(y, p)`` and sort them once, for several metrics on the same data (§4).

    ``y`` are 0/1 labels and ``p`` finite scores of the same length (see
    :func:`check_binary_inputs`). The result can be passed in place of ``(y, p)`` to every
    function of this module that takes them; it holds copies, so it is unaffected by later
    changes to ``y`` or ``p``. ``order``: the rows ordered by ``p`` ascending, when the
    caller has that order already (then nothing is sorted again).

    Examples
    --------
    >>> prepared = prepare([1, 1, 0, 0, 1], [0.9, 0.7, 0.4, 0.2, 0.8])
    >>> prepared
    PreparedScores(n=5, n_pos=3, n_neg=2)
    >>> from metrics_core.metrics.confusion import confusion_at
    >>> roc_auc(prepared).value, confusion_at(prepared, threshold=0.75).tp
    (1.0, 2)
    """
    y, p, _ = check_binary_inputs(y, p)
    return PreparedScores(y, p, checked_order(order, p))


def checked_order(order, p: np.ndarray) -> np.ndarray | None:
    """A caller's ``order`` as an integer array ordering ``p`` ascending (ValueError
    otherwise); None stays None (the kernel sorts itself). Every kernel that takes ``order=``
    checks it here."""
    if order is None:
        return None
    order = np.asarray(order)
    if (order.shape != p.shape or order.dtype.kind not in "iu"
            or (order.size and (order.min() < 0 or order.max() >= order.size
                                or np.bincount(order, minlength=order.size).max() > 1))):
        raise ValueError("order must be a permutation of the rows of p")
    ranked = p.take(order)
    if np.any(ranked[1:] < ranked[:-1]):
        raise ValueError("order must sort p ascending")
    return order


def _prepared(y, p) -> CurveCounts:
    """``y`` when it is already a :class:`CurveCounts` (a :class:`PreparedScores`; ``p`` must
    be ``None``), else :func:`prepare` of ``(y, p)``."""
    if isinstance(y, CurveCounts):
        if p is not None:
            raise ValueError("pass either y and p, or a PreparedScores (from prepare(y, p)) "
                             "in place of y with p left out; got a PreparedScores and p")
        return y
    if p is None:
        raise ValueError("p is required unless y is a PreparedScores from prepare(y, p)")
    return prepare(y, p)


def prepared_rows(y, p, what: str) -> PreparedScores:
    """The :class:`PreparedScores` of ``(y, p)`` (``y`` itself when it is one, ``p`` left out)
    for ``what``, which needs the rows: a :class:`CurveCounts` without them is a TypeError."""
    s = _prepared(y, p)
    if not isinstance(s, PreparedScores):
        raise TypeError(f"{what} needs the rows of (y, p): pass them or prepare(y, p), not the "
                        f"counts of {s!r}")
    return s


def frozen_arrays(*arrays):
    for a in arrays:
        a.setflags(write=False)
    return arrays


# ------------------------------------------------------------------ AUROC / AP kernels
def _auc_ap_from_blocks(a, c_strict, c_tie):
    """AUROC and AP per resample from the block sums of :meth:`PreparedScores.block_sums`.

    With ``A_h`` the positive weight strictly above block ``h`` (scores > u_h) and ``C`` the
    negative weight of a block, the Mann-Whitney form of the trapezoidal ROC area is
    ``sum_h (C_strict[h] + C_tie[h]) A_h + 1/2 sum_h C_tie[h] a_h`` over ``P N`` (a tie is half
    a correctly ordered pair). AP is ``sum_g a_g prec_g / P`` with ``prec_g = A_{g+1} /
    (A_{g+1} + F_g)``, ``F_g`` the negative weight with score >= u_g: the step-wise sum over
    distinct thresholds of scikit-learn (thresholds without positives add no recall).
    """
    b, m = a.shape
    above = np.zeros((b, m + 1))
    np.cumsum(a, axis=1, out=above[:, 1:])  # above[:, h] = positive weight in groups < h
    n_pos = above[:, m]
    c_all = c_strict + c_tie
    n_neg = c_all.sum(axis=1)
    pairs = (c_all * above).sum(axis=1) + 0.5 * (c_tie[:, :m] * a).sum(axis=1)
    both = (n_pos > 0) & (n_neg > 0)
    auc = divide(pairs, n_pos * n_neg)
    tp_at = above[:, 1:]  # positive weight with score >= u_g
    fp_at = np.cumsum(c_all, axis=1)[:, :m]  # negative weight with score >= u_g
    precision = divide(tp_at, tp_at + fp_at)
    ap = divide(np.where(a > 0, a * np.nan_to_num(precision), 0.0).sum(axis=1), n_pos)
    auc[~both] = np.nan
    ap[~both] = np.nan
    return auc, ap


def _weighted(y, p, weights) -> tuple[np.ndarray, np.ndarray]:
    if weights is None:
        raise ValueError("weights are required: a (b, n) matrix of row weights")
    s = prepared_rows(y, p, "the weighted AUROC / AP")
    return s.auc_ap(check_weights(weights, s.n))


def auroc_auprc_weighted(y, p=None, weights=None) -> tuple[np.ndarray, np.ndarray]:
    """(AUROC, AP) per row-weight vector in one pass: :func:`roc_auc_weighted` and
    :func:`average_precision_weighted` share their block sums, so a bootstrap that needs both
    should call this once per batch, with the result of :func:`prepare` reused for every
    batch: ``auroc_auprc_weighted(prepared, weights=w)`` (contract §4, §9)."""
    return _weighted(y, p, weights)


def roc_auc_weighted(y, p=None, weights=None) -> np.ndarray:
    """AUROC per row-weight vector: one value per bootstrap resample (contract §4, §9).

    ``weights`` has shape ``(b, n)`` (e.g. bootstrap counts); row ``r`` equals
    ``roc_auc_score`` on the sample in which row ``i`` appears ``weights[r, i]`` times (or with
    that sample weight). ``nan`` where the weighted sample has one class. Pass a
    :class:`PreparedScores` in place of ``(y, p)`` (``roc_auc_weighted(prepared, weights=w)``)
    to sort the data once for every batch; each resample then costs one weighted bincount over
    its row.
    """
    auc, _ = _weighted(y, p, weights)
    return auc


def average_precision_weighted(y, p=None, weights=None) -> np.ndarray:
    """Average precision per row-weight vector (contract §4, §9); see :func:`roc_auc_weighted`.

    Equals ``average_precision_score`` on each materialised resample; ``nan`` with one class.
    """
    _, ap = _weighted(y, p, weights)
    return ap


def _score(y, p, sample_weight, metric: str) -> Score:
    """AUROC or AP of one (optionally weighted) sample, with the one-class convention."""
    s = _prepared(y, p) if sample_weight is None else prepared_rows(y, p, "sample_weight")
    w = None
    if sample_weight is not None:
        y = s.y
        _, _, w = check_binary_inputs(y, s.p, sample_weight=sample_weight)
    if s.n == 0:
        return Score(float("nan"), False, "no samples")
    if w is None:
        pos, total = float(s.n_pos), float(s.n)
    else:
        pos, total = float(w[y == 1].sum()), float(w.sum())
    if total == 0:
        return Score(float("nan"), False, "no samples")
    if pos == 0 or pos == total:
        return Score(0.5 if metric == "auroc" else pos / total, False, "one class")
    if w is None:
        auc, ap = s.unweighted
    else:
        auc, ap = (float(v[0]) for v in s.auc_ap(w[None, :]))
    return Score(auc if metric == "auroc" else ap)


def roc_auc(y, p=None, *, sample_weight=None) -> Score:
    """Area under the ROC curve, protocol ``all_queries`` (contract §4).

    Equals ``sklearn.metrics.roc_auc_score`` (ties count one half). With one class present the
    value is 0.5 (seed 000 §2.1) and ``defined`` is ``False`` with reason ``"one class"``.
    ``y`` may be a :class:`PreparedScores` in place of ``(y, p)``.

    Examples
    --------
    >>> roc_auc([1, 1, 0, 0, 1], [0.9, 0.7, 0.4, 0.2, 0.8])  # seed 000 §8
    Score(value=1.0, defined=True, reason=None)
    """
    return _score(y, p, sample_weight, "auroc")


def average_precision(y, p=None, *, sample_weight=None) -> Score:
    """Average precision (step-wise AUPRC), protocol ``all_queries`` (contract §4).

    Equals ``sklearn.metrics.average_precision_score``: ``sum_n (R_n - R_{n-1}) P_n`` over
    distinct thresholds. With one class present the value is the positive rate (seed 000
    §2.2) and ``defined`` is ``False``. ``y`` may be a :class:`PreparedScores` in place of
    ``(y, p)``.

    Examples
    --------
    >>> average_precision([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1]).value  # (1/1 + 2/3) / 2
    0.8333333333333333
    """
    return _score(y, p, sample_weight, "auprc")


# ------------------------------------------------------------------------------- curves
def roc_points(y, p=None) -> RocCurve:
    """All ROC points: ``sklearn.metrics.roc_curve(y, p, drop_intermediate=False)`` (§4).

    One point per distinct score plus the leading (0, 0) point at threshold ``inf``. ``y`` may
    be a :class:`PreparedScores` in place of ``(y, p)``.
    """
    s = _prepared(y, p)
    tps = np.r_[0.0, s.tps]
    fps = np.r_[0.0, s.fps]
    fpr = fps / fps[-1] if fps[-1] > 0 else np.full(fps.shape, np.nan)
    tpr = tps / tps[-1] if tps[-1] > 0 else np.full(tps.shape, np.nan)
    thresholds = np.r_[np.inf, s.thresholds]
    return RocCurve(*frozen_arrays(fpr, tpr, thresholds))


def pr_points(y, p=None) -> PrCurve:
    """All precision-recall points: ``sklearn.metrics.precision_recall_curve(y, p)`` (§4).

    Thresholds ascending; precision/recall end with the (recall 0, precision 1) point.
    Without positives recall is ``nan`` (undefined) rather than scikit-learn's 1. ``y`` may be
    a :class:`PreparedScores` in place of ``(y, p)``.
    """
    s = _prepared(y, p)
    precision = divide(s.tps, s.tps + s.fps)
    recall = s.tps / s.n_pos if s.n_pos > 0 else np.full(s.tps.shape, np.nan)
    return PrCurve(*frozen_arrays(np.r_[precision[::-1], 1.0], np.r_[recall[::-1], 0.0],
                              s.thresholds[::-1].copy()))


def tpr_at_fpr(y, p=None, targets=FPR_TARGETS) -> list[TprAtFpr]:
    """TPR at fixed FPR targets (contract §4, seed 000 §2.3).

    For each target T: the largest index of ``roc_curve(..., drop_intermediate=False)`` with
    ``fpr <= T``, its TPR, FPR and threshold. The threshold may be ``inf`` (the (0, 0) point:
    nothing predicted positive). Without negatives no index qualifies: TPR 0.0, threshold 1.0.
    ``y`` may be a :class:`PreparedScores` in place of ``(y, p)``
    (``tpr_at_fpr(prepared, targets=(0.01, 0.05))``).
    """
    targets = np.atleast_1d(np.asarray(targets, dtype=np.float64))
    if targets.ndim != 1 or not np.all((targets >= 0) & (targets <= 1)):
        raise ValueError(f"targets must be FPR values in [0, 1], got {targets.tolist()}")
    roc = roc_points(y, p)
    two_classes = not (np.isnan(roc.fpr[-1]) or np.isnan(roc.tpr[-1]))
    out = []
    for target in targets.tolist():
        if np.isnan(roc.fpr[-1]):
            out.append(TprAtFpr(target, 0.0, float("nan"), 1.0, False))
            continue
        i = int(np.searchsorted(roc.fpr, target, side="right")) - 1
        out.append(TprAtFpr(target, float(roc.tpr[i]), float(roc.fpr[i]),
                            float(roc.thresholds[i]), two_classes))
    return out
