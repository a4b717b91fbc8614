"""Exact classification summaries combined by reduction, for engines that keep rows apart.

AUROC, AUPRC (average precision), the ROC / PR points and TPR@FPR depend on ``(y, p)`` only
through the number of positives and negatives at each distinct score. :class:`ScoreCounts`
holds those counts for one partition (the distinct scores ascending, positives and negatives
at each); :func:`merge_counts` combines two partitions' counts exactly (a union of sorted
values, counts added), so any tree of merges over the partitions gives the same counts as the
whole data set. :func:`counted_scores` turns the merged counts into the
:class:`~metrics_core.metrics.classification.CurveCounts` that the classification kernels
take in place of ``(y, p)``: the same code as in memory then gives the metrics, so they agree
with the in-memory engine exactly (integer counts below 2^53 are exact in float64).

The counts are as large as the number of distinct scores: small when ``p`` has few distinct
values (calibrated or rounded scores), at most the number of queries otherwise. Their size
is what crosses the network, never the rows.

:func:`tree_reduce` combines futures pairwise on a ``distributed`` cluster, so the client
receives the final summary only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from metrics_core.metrics.classification import CurveCounts

__all__ = ["ScoreCounts", "counted_scores", "merge_counts", "score_counts", "tree_reduce"]


@dataclass(frozen=True)
class ScoreCounts:
    """Positives and negatives at each distinct score of a partition (scores ascending)."""

    values: np.ndarray
    pos: np.ndarray
    neg: np.ndarray

    @property
    def n(self) -> int:
        return int(self.pos.sum() + self.neg.sum())

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes + self.pos.nbytes + self.neg.nbytes)


def score_counts(y, p) -> ScoreCounts:
    """The :class:`ScoreCounts` of labels ``y`` (0/1) and finite scores ``p``."""
    y = np.asarray(y)
    p = np.asarray(p, dtype=np.float64)
    if y.shape != p.shape:
        raise ValueError(f"y and p differ in length ({y.size} vs {p.size})")
    values, inverse = np.unique(p, return_inverse=True)
    total = np.bincount(inverse, minlength=values.size)
    positive = np.bincount(inverse[y == 1], minlength=values.size)
    return ScoreCounts(values, positive.astype(np.int64), (total - positive).astype(np.int64))


def merge_counts(*parts: ScoreCounts) -> ScoreCounts:
    """The counts of the union of partitions (exact, associative and commutative)."""
    parts = [p for p in parts if p.values.size] or list(parts[:1])
    if not parts:
        empty = np.empty(0, dtype=np.int64)
        return ScoreCounts(np.empty(0), empty, empty.copy())
    if len(parts) == 1:
        return parts[0]
    values, inverse = np.unique(np.concatenate([p.values for p in parts]),
                                return_inverse=True)
    pos = np.bincount(inverse, weights=np.concatenate([p.pos for p in parts]).astype(float),
                      minlength=values.size)
    neg = np.bincount(inverse, weights=np.concatenate([p.neg for p in parts]).astype(float),
                      minlength=values.size)
    return ScoreCounts(values, pos.astype(np.int64), neg.astype(np.int64))


def counted_scores(counts: ScoreCounts) -> CurveCounts:
    """Merged counts as the :class:`~metrics_core.metrics.classification.CurveCounts` that
    ``roc_auc``, ``average_precision``, ``roc_points``, ``pr_points`` and ``tpr_at_fpr`` take
    in place of ``(y, p)`` (no rows: no weighted kernels, no confusion sweeps)."""
    desc_pos = counts.pos[::-1].astype(np.int64)
    desc_neg = counts.neg[::-1].astype(np.int64)
    return CurveCounts(counts.values[::-1].astype(np.float64),
                       np.cumsum(desc_pos).astype(np.float64),
                       np.cumsum(desc_neg).astype(np.float64),
                       n_pos=int(desc_pos.sum()), n_neg=int(desc_neg.sum()))


def tree_reduce(client, futures: Iterable, combine: Callable, *, fan_in: int = 4,
                finish: Callable | None = None):
    """Combine ``futures`` on the cluster, ``fan_in`` at a time, and return the one result
    (``finish`` of it, run on the cluster too, when given).

    Only the final value is sent to the client; every intermediate stays on a worker, and only
    until it is combined: this function holds the only references to the futures once it has
    taken them, so pass them as an iterator (a generator of ``client.submit`` calls), not a
    list the caller keeps. A list kept by the caller keeps every unit's result in the
    workers' memory until the end (the reduced run's summaries, tens of MB each with
    resamples: the whole cluster's peak grew with the number of units).
    """
    layer = list(futures)
    del futures
    if not layer:
        raise ValueError("nothing to reduce")
    level = 0
    while len(layer) > 1:
        level += 1  # a merge runs before units still waiting (their results are freed sooner)
        layer = [client.submit(combine, *layer[i:i + fan_in], pure=False, priority=level)
                 if len(layer[i:i + fan_in]) > 1 else layer[i]
                 for i in range(0, len(layer), fan_in)]
    last = layer[0] if finish is None else client.submit(finish, layer[0], pure=False,
                                                         priority=level + 1)
    del layer
    return last.result()
