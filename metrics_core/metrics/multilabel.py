"""Per-post multi-label metrics over the criteria vector (contract §8, protocol ``all_queries``).

Each post is one multi-label instance: a vector with one 0/1 label per criterion (10 in the
reference data). :func:`post_matrix` arranges the per-query gold labels and a per-query decision
(:func:`decision_labels`: fixed threshold, screen-in or alert) into posts x criteria matrices
(:class:`PostLabels`: stored by present cell, so memory follows the number of queries), and
:func:`multilabel_metrics` computes exact match, Hamming score / loss and the four F1 averages.

Every F1 is ``2TP / (2TP + FP + FN)`` and 1.0 where that is 0 / 0 (no gold and no predicted
positive), i.e. scikit-learn's ``f1_score(..., zero_division=1.0)``.

**Missing cells.** A post may lack a criterion (its query is absent from the data); ``mask`` is
False there and such cells are left out of every count: exact match asks that all *present*
cells agree, Hamming loss is the error rate over present cells (pooled), per-post F1 uses the
post's present cells, per-criterion F1 the criterion's present cells. Posts (criteria) without
any present cell are left out of the averages over posts (criteria). With a complete matrix every
value equals scikit-learn's.

Sources: "contract §N" is section N of ``docs/CONTRACT.md``; "seed 003" is
``docs/seeds/003-evidence-pipeline-contract.txt``.
"""

from __future__ import annotations

import numpy as np

from metrics_core.choices import DECISION_RULES
from metrics_core.data.dataset import Dataset

__all__ = ["DECISION_RULES", "MULTILABEL_NAMES", "PostLabels", "decision_labels",
           "f1_from_counts", "multilabel_metrics", "multilabel_weighted", "post_matrix"]

#: The multi-label metrics of :func:`multilabel_metrics`, in report order.
MULTILABEL_NAMES = ("exact_match", "hamming_score", "hamming_loss", "micro_f1", "samples_f1",
                    "macro_f1", "weighted_f1")

# DECISION_RULES: the variant values (metrics_core.choices).

_NEG, _POS = 0, 2  # metrics_core.metrics.gate.GateState codes


def decision_labels(ds: Dataset, *, rule: str = "threshold", threshold: float = 0.5,
                    states=None) -> np.ndarray:
    """Per-query predicted 0/1 label under a decision rule (contract §8).

    Parameters
    ----------
    ds : Dataset
    rule : {"threshold", "screen_in", "alert"}
        ``"threshold"``: ``p_has_evidence ≥ threshold``; ``"screen_in"``: state ≠ NEG;
        ``"alert"``: state = POS.
    threshold : float in [0, 1], default 0.5
    states : array-like of int, shape (n_queries,)
        Gate states (0 NEG, 1 UNCERTAIN, 2 POS); required by the state rules.

    Returns
    -------
    ndarray of int8, shape (n_queries,)
    """
    if rule not in DECISION_RULES:
        raise ValueError(f"rule must be one of {DECISION_RULES}, got {rule!r}")
    if rule == "threshold":
        if not 0.0 <= float(threshold) <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {threshold!r}")
        return (np.asarray(ds.p) >= float(threshold)).astype(np.int8)
    if states is None:
        raise ValueError(f"states are required by the {rule!r} decision rule")
    states = np.asarray(states)
    if states.shape != (ds.n_queries,):
        raise ValueError(f"states must have one entry per query ({ds.n_queries}), "
                         f"got shape {states.shape}")
    if states.size and (states.min() < 0 or states.max() > 2):
        raise ValueError("states must hold gate states 0 (NEG), 1 (UNCERTAIN), 2 (POS)")
    if rule == "screen_in":
        return (states != _NEG).astype(np.int8)
    return (states == _POS).astype(np.int8)


class PostLabels:
    """A posts x criteria 0/1 matrix stored by present cell (one cell per query).

    Real data sets have about ten criteria per post, but nothing stops a file from giving every
    query its own post and its own criterion; a dense matrix would then need posts x criteria
    cells. This one keeps only the present cells, so memory is proportional to the number of
    queries. :func:`multilabel_metrics` reads it directly; ``toarray`` / ``tolist`` give the
    dense form (missing cells 0) for small inspections, and ``np.asarray`` works too.

    Attributes
    ----------
    row, col : ndarray of int64, shape (n_cells,)
        Post and criterion index of every present cell; cells are unique.
    data : ndarray, shape (n_cells,)
        The cell values (int8 labels, or bool for a mask).
    shape : (int, int)
        ``(n_posts, n_criteria)``.
    """

    __slots__ = ("col", "data", "row", "shape")
    ndim = 2

    def __init__(self, row, col, data, shape) -> None:
        self.row = np.asarray(row, dtype=np.int64)
        self.col = np.asarray(col, dtype=np.int64)
        self.data = np.asarray(data)
        self.shape = (int(shape[0]), int(shape[1]))
        if not self.row.shape == self.col.shape == self.data.shape:
            raise ValueError("row, col and data must have the same length")

    def same_cells(self, other: PostLabels) -> bool:
        """Whether ``other`` stores exactly the same cells, in the same order."""
        return self.shape == other.shape and (
            (self.row is other.row and self.col is other.col)
            or (np.array_equal(self.row, other.row) and np.array_equal(self.col, other.col)))

    def toarray(self) -> np.ndarray:
        """The dense ``shape`` matrix; cells not stored hold 0 (False)."""
        out = np.zeros(self.shape, dtype=self.data.dtype)
        out[self.row, self.col] = self.data
        return out

    def tolist(self) -> list:
        return self.toarray().tolist()

    def __array__(self, dtype=None, copy=None):
        out = self.toarray()
        return out if dtype is None else out.astype(dtype)

    def __repr__(self) -> str:
        return f"PostLabels(shape={self.shape}, n_cells={self.data.size})"


def post_matrix(ds: Dataset, predicted) -> tuple[PostLabels, PostLabels, PostLabels]:
    """Posts x criteria matrices of gold and predicted labels (contract §8).

    Parameters
    ----------
    ds : Dataset
    predicted : array-like of 0/1, shape (n_queries,)
        Per-query decision, e.g. from :func:`decision_labels`.

    Returns
    -------
    Y, Yhat : PostLabels of int8, shape (n_posts, n_criteria)
        Gold ``has_evidence`` and prediction; rows follow ``ds.posts``, columns ``ds.criteria``.
        Stored sparsely (one cell per query); missing cells read as 0.
    mask : PostLabels of bool, shape (n_posts, n_criteria)
        False where a post has no query for the criterion.
    """
    predicted = np.asarray(predicted)
    if predicted.shape != (ds.n_queries,):
        raise ValueError(f"predicted must have one entry per query ({ds.n_queries}), "
                         f"got shape {predicted.shape}")
    if predicted.size and not np.isin(predicted, (0, 1)).all():
        raise ValueError("predicted must be 0/1")
    shape = (len(ds.posts), len(ds.criteria))
    rows = np.asarray(ds.post_code, dtype=np.int64)
    cols = np.asarray(ds.criterion_code, dtype=np.int64)
    Y = PostLabels(rows, cols, np.asarray(ds.y, dtype=np.int8), shape)
    Yhat = PostLabels(Y.row, Y.col, predicted.astype(np.int8), shape)
    mask = PostLabels(Y.row, Y.col, np.ones(rows.size, dtype=bool), shape)
    return Y, Yhat, mask


def f1_from_counts(tp, fp, fn) -> np.ndarray:
    """``2TP / (2TP + FP + FN)``, 1.0 where the denominator is 0 (contract §8)."""
    tp, fp, fn = (np.asarray(a, dtype=np.float64) for a in (tp, fp, fn))
    denom = 2 * tp + fp + fn
    return np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1.0), 1.0)


def multilabel_metrics(Y, Yhat, mask=None) -> dict[str, float]:
    """Exact match, Hamming and F1 averages over posts x criteria (contract §8).

    Parameters
    ----------
    Y, Yhat : array-like of 0/1, shape (n_posts, n_criteria)
    mask : array-like of bool, optional
        Present cells (default: all); see the module docstring for missing cells.

    Returns
    -------
    dict
        ``exact_match``, ``hamming_score``, ``hamming_loss``, ``micro_f1``, ``samples_f1``
        (mean of per-post F1; seed 003's "Macro F1"), ``macro_f1`` (mean over criteria),
        ``weighted_f1`` (criteria weighted by gold positives; without any gold positive the
        weights are all 0 and, as in scikit-learn, it falls back to ``macro_f1``), and the
        counts ``n_posts``, ``n_criteria``, ``n_cells``. NaN when no cell is present.

    Examples
    --------
    Y = [[1, 0], [0, 0]], Yhat = [[1, 1], [0, 0]]: exact match 1/2, Hamming loss 1/4,
    micro F1 = 2·1 / (2·1 + 1 + 0) = 2/3, samples F1 = (2/3 + 1) / 2 = 5/6,
    macro F1 = (1 + 0) / 2 = 1/2 (criterion 2 has FP = 1 and no gold), weighted F1 = 1·1 / 1 = 1.
    """
    row, col, y, yh, shape = _cells(Y, Yhat, mask)
    tp = y & yh
    fp = yh & ~y
    fn = y & ~yh
    wrong = fp | fn
    n_cells = int(row.size)
    nan = float("nan")
    n_posts, n_crit = shape
    post_cells = np.bincount(row, minlength=n_posts)
    crit_cells = np.bincount(col, minlength=n_crit)
    posts = post_cells > 0
    crits = crit_cells > 0
    out = {"n_posts": int(posts.sum()), "n_criteria": int(crits.sum()), "n_cells": n_cells}
    if n_cells == 0:
        out.update(dict.fromkeys(("exact_match", "hamming_score", "hamming_loss", "micro_f1",
                                  "samples_f1", "macro_f1", "weighted_f1"), nan))
        return out

    def per(index, size, values):
        return np.bincount(index[values], minlength=size)

    hamming_loss = int(wrong.sum()) / n_cells
    per_post = f1_from_counts(per(row, n_posts, tp), per(row, n_posts, fp),
                              per(row, n_posts, fn))
    per_crit = f1_from_counts(per(col, n_crit, tp), per(col, n_crit, fp),
                              per(col, n_crit, fn))
    support = per(col, n_crit, y)
    wrong_posts = per(row, n_posts, wrong) > 0
    out.update(
        exact_match=float((~wrong_posts)[posts].mean()),
        hamming_score=float(1.0 - hamming_loss),
        hamming_loss=float(hamming_loss),
        micro_f1=float(f1_from_counts(int(tp.sum()), int(fp.sum()), int(fn.sum()))),
        samples_f1=float(per_post[posts].mean()),
        macro_f1=float(per_crit[crits].mean()),
    )
    # Weighted by gold positives; with no gold positive at all every weight is 0 and
    # scikit-learn falls back to the unweighted mean (= macro F1).
    if support.sum() > 0:
        out["weighted_f1"] = float(np.sum(per_crit * support) / support.sum())
    else:
        out["weighted_f1"] = out["macro_f1"]
    return out


#: Posts x criteria x 5 up to which the per-criterion counts of :func:`multilabel_weighted`
#: are one dense product (else sparse: memory of about one cell per query).
DENSE_CELLS = 1 << 22


def multilabel_weighted(Y, Yhat, mask=None):
    """Statistic for the bootstrap over posts: the metrics of :func:`multilabel_metrics` per
    row-weight vector over posts (contract §8, §9).

    Row ``r`` of ``statistic(W)`` (shape ``(b, 7)``, columns :data:`MULTILABEL_NAMES`) equals
    :func:`multilabel_metrics` on the posts repeated ``W[r, i]`` times; a criterion counts in
    ``macro_f1`` when one of its cells is drawn. One matrix product per per-post count.

    >>> s = multilabel_weighted([[1, 0], [0, 0]], [[1, 1], [0, 0]])
    >>> s(np.array([[1.0, 1.0], [2.0, 0.0]])).round(6).tolist()[0]
    [0.5, 0.75, 0.25, 0.666667, 0.833333, 0.5, 1.0]
    """
    row, col, y, yh, (n_posts, n_crit) = _cells(Y, Yhat, mask)
    tp, fp, fn = y & yh, yh & ~y, y & ~yh
    wrong = fp | fn

    def per_post(values):
        return np.bincount(row[values], minlength=n_posts).astype(np.float64)

    def post_by_crit(values):  # sparse posts x criteria counts: memory ~ one cell per query
        from scipy import sparse

        return sparse.csr_array((np.ones(int(values.sum())), (row[values], col[values])),
                                shape=(n_posts, n_crit))

    cells = np.bincount(row, minlength=n_posts).astype(np.float64)
    present = (cells > 0).astype(np.float64)
    exact = present * (per_post(wrong) == 0)
    post_f1 = present * f1_from_counts(per_post(tp), per_post(fp), per_post(fn))
    sums = np.stack([cells, present, exact, per_post(wrong), per_post(tp), per_post(fp),
                     per_post(fn), post_f1], axis=1)
    kinds = (tp, fp, fn, y, np.ones_like(y))
    # Resamples per step, so that the (resamples x criteria) arrays stay small.
    step = max(1, (1 << 21) // max(n_crit, 1))
    # Few posts x criteria: the five count matrices side by side as one dense matrix (counted
    # directly), one product per step (whole numbers: the same sums as the sparse products).
    dense = None
    if n_posts * n_crit * len(kinds) <= DENSE_CELLS:
        dense = np.zeros((n_posts, len(kinds) * n_crit))
        for j, values in enumerate(kinds):
            np.add.at(dense, (row[values], j * n_crit + col[values]), 1.0)
        by_crit = ()
    else:
        by_crit = [post_by_crit(a) for a in kinds]

    def per_criterion(weights):
        if dense is not None:
            c_tp, c_fp, c_fn, c_support, c_cells = (  # (the sparse products' layout: same sums)
                np.asfortranarray(c) for c in np.split(weights @ dense, len(kinds), axis=1))
        else:
            c_tp, c_fp, c_fn, c_support, c_cells = ((m.T @ weights.T).T for m in by_crit)
        crit_f1 = f1_from_counts(c_tp, c_fp, c_fn)
        drawn = c_cells > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            macro = np.where(drawn, crit_f1, 0.0).sum(1) / drawn.sum(1)
            support = c_support.sum(1)
            weighted = np.where(support > 0, (crit_f1 * c_support).sum(1) / support, macro)
        return macro, weighted

    def statistic(weights: np.ndarray) -> np.ndarray:
        weights = np.asarray(weights, dtype=np.float64)
        n_cells, n_present, n_exact, n_wrong, s_tp, s_fp, s_fn, s_f1 = (weights @ sums).T
        parts = [per_criterion(weights[i:i + step]) for i in range(0, weights.shape[0], step)]
        macro = np.concatenate([m for m, _ in parts]) if parts else np.empty(0)
        weighted = np.concatenate([w for _, w in parts]) if parts else np.empty(0)
        with np.errstate(invalid="ignore", divide="ignore"):
            loss = n_wrong / n_cells
            out = np.stack([n_exact / n_present, 1.0 - loss, loss,
                            f1_from_counts(s_tp, s_fp, s_fn), s_f1 / n_present, macro, weighted],
                           axis=1)
        out[n_cells <= 0] = np.nan
        return out

    statistic.names = MULTILABEL_NAMES
    return statistic


def _cells(Y, Yhat, mask):
    """(post index, criterion index, gold, predicted, shape) of the present cells.

    Dense inputs are validated and reduced to their present cells (row-major order); sparse
    :class:`PostLabels` inputs must share their cells, and every stored cell is present unless
    the mask says otherwise.
    """
    sparse = [isinstance(a, PostLabels) for a in (Y, Yhat)]
    if any(sparse):
        if not all(sparse) or not Y.same_cells(Yhat):
            raise ValueError("Y and Yhat must be 2-D of the same shape and, as PostLabels, "
                             "store the same cells")
        for name, a in (("Y", Y.data), ("Yhat", Yhat.data)):
            if a.size and not np.isin(a, (0, 1)).all():
                raise ValueError(f"{name} must be 0/1")
        present = np.ones(Y.data.size, dtype=bool)
        if mask is not None:
            if not isinstance(mask, PostLabels) or not Y.same_cells(mask):
                raise ValueError(f"mask must have the shape of Y {Y.shape} and, as "
                                 f"PostLabels, store the same cells")
            present = mask.data.astype(bool)
        return (Y.row[present], Y.col[present], Y.data[present].astype(bool),
                Yhat.data[present].astype(bool), Y.shape)
    Y = np.asarray(Y)
    Yhat = np.asarray(Yhat)
    if Y.ndim != 2 or Y.shape != Yhat.shape:
        raise ValueError(f"Y and Yhat must be 2-D of the same shape, got {Y.shape} and "
                         f"{Yhat.shape}")
    for name, a in (("Y", Y), ("Yhat", Yhat)):
        if a.size and not np.isin(a, (0, 1)).all():
            raise ValueError(f"{name} must be 0/1")
    mask = np.ones(Y.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if mask.shape != Y.shape:
        raise ValueError(f"mask must have the shape of Y {Y.shape}, got {mask.shape}")
    row, col = np.nonzero(mask)
    return (row.astype(np.int64), col.astype(np.int64), Y[row, col].astype(bool),
            Yhat[row, col].astype(bool), Y.shape)
