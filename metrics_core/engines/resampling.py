"""A bootstrap without a gather: Poisson(1) weights keyed by (seed, unit identity).

The in-memory engine draws each resample as a multinomial over the units in canonical order
(contract §9), which needs every unit in one process. Here each unit's weight in resample
``b`` is a Poisson(1) variate computed from a counter-based hash of ``(seed, unit key, b)``
alone (:func:`poisson_weights`), so a worker computes the weights of the units it holds,
without knowing the others, and the weights are the same whatever the partitioning and the
cluster. Statistics are weighted sums combined by addition (:class:`WeightedCounts` for the
rank metrics, integer count sums for the rates): with integer weights and integer counts every
sum is exact, so the intervals are identical whatever the partitioning, bit for bit.

The unit key is the post id (``bootstrap_unit = "post"``) or the (post id, criterion) pair
(``"query"``), hashed with BLAKE2b to 64 bits (:func:`unit_keys`).

AUROC's weighted bootstrap needs, per resample, the weighted class counts at each distinct
score: ``resamples x distinct scores`` numbers per partition. Above
:data:`WEIGHTED_SORT_LIMIT` of those, the AUROC interval is DeLong's (:func:`delong_interval`),
computed exactly from the merged unweighted score counts.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from metrics_core.engines.reductions import ScoreCounts

__all__ = ["WEIGHTED_SORT_LIMIT", "WeightedCounts", "auprc_of_weighted", "auroc_of_weighted",
           "delong_interval",
           "merge_weighted", "percentile_interval", "poisson_weights", "unit_keys",
           "weighted_counts"]

#: Above this many (resample, distinct score) cells the AUROC interval is DeLong's.
WEIGHTED_SORT_LIMIT = 50_000_000

_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
#: P(Poisson(1) <= k) for k = 0..19; the tail beyond 19 (< 1e-18) is cut.
_POISSON_CDF = np.cumsum([math.exp(-1) / math.factorial(k) for k in range(20)])


def unit_keys(*columns) -> np.ndarray:
    """64-bit keys of the units: BLAKE2b of the unit's identity (post id, or post id and
    criterion joined by a NUL), the same on every machine and in every partitioning."""
    parts = [np.asarray(c, dtype=object).astype(str) for c in columns]
    names = parts[0] if len(parts) == 1 else np.array(["\0".join(t) for t in zip(*parts,
                                                                                   strict=True)])
    return np.fromiter((int.from_bytes(hashlib.blake2b(n.encode(), digest_size=8).digest(),
                                       "little") for n in names.tolist()),
                       dtype=np.uint64, count=len(names))


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser (a bijection of 64-bit integers)."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def poisson_weights(seed: int, keys: np.ndarray, n_resamples: int, *,
                    start: int = 0) -> np.ndarray:
    """Poisson(1) weights, shape ``(n_resamples, len(keys))`` (int32): weight of unit ``j`` in
    resample ``start + b`` from ``hash(seed, keys[j], start + b)`` only."""
    keys = np.asarray(keys, dtype=np.uint64)
    with np.errstate(over="ignore"):
        base = _mix(np.uint64(seed & 0xFFFFFFFFFFFFFFFF) * _GOLDEN + np.uint64(1))
        b = np.arange(start, start + n_resamples, dtype=np.uint64)[:, None]
        h = _mix(_mix(keys[None, :] ^ base) + (b + np.uint64(1)) * _GOLDEN)
    u = (h >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    return np.searchsorted(_POISSON_CDF, u, side="right").astype(np.int32)


@dataclass(frozen=True)
class WeightedCounts:
    """Per resample, the weighted positives and negatives at each distinct score (ascending):
    ``pos`` and ``neg`` are ``(resamples, len(values))`` integer arrays."""

    values: np.ndarray
    pos: np.ndarray
    neg: np.ndarray


def weighted_counts(y, p, weights: np.ndarray) -> WeightedCounts:
    """The :class:`WeightedCounts` of one partition, ``weights`` ``(resamples, rows)``."""
    y = np.asarray(y)
    values, inverse = np.unique(np.asarray(p, dtype=np.float64), return_inverse=True)
    m = values.size
    b = weights.shape[0]
    keys = (np.arange(b, dtype=np.int64)[:, None] * (2 * m)
            + inverse[None, :] * 2 + (y[None, :] == 1)).ravel()
    sums = np.bincount(keys, weights=weights.ravel().astype(np.float64),
                       minlength=b * 2 * m).reshape(b, m, 2).astype(np.int64)
    return WeightedCounts(values, sums[:, :, 1], sums[:, :, 0])


def merge_weighted(*parts: WeightedCounts) -> WeightedCounts:
    """The union of partitions' weighted counts (exact: integer sums)."""
    parts = [p for p in parts if p.values.size] or list(parts[:1])
    if len(parts) == 1:
        return parts[0]
    values, inverse = np.unique(np.concatenate([p.values for p in parts]), return_inverse=True)
    b = parts[0].pos.shape[0]
    pos = np.zeros((b, values.size), dtype=np.int64)
    neg = np.zeros((b, values.size), dtype=np.int64)
    start = 0
    for part in parts:
        idx = inverse[start:start + part.values.size]
        start += part.values.size
        pos[:, idx] += part.pos
        neg[:, idx] += part.neg
    return WeightedCounts(values, pos, neg)


def auroc_of_weighted(counts: WeightedCounts) -> np.ndarray:
    """AUROC of each resample (ties count one half; ``nan`` where a class has no weight)."""
    pos = counts.pos.astype(np.float64)
    neg = counts.neg.astype(np.float64)
    below = np.cumsum(neg, axis=1) - neg  # negatives strictly below each value
    pairs = np.sum(pos * (below + 0.5 * neg), axis=1)
    total = pos.sum(axis=1) * neg.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, pairs / np.where(total > 0, total, 1), np.nan)


def auprc_of_weighted(counts: WeightedCounts) -> np.ndarray:
    """Average precision (step-wise, as ``average_precision_score``) of each resample."""
    pos = counts.pos[:, ::-1].astype(np.float64)  # descending scores
    tps = np.cumsum(pos, axis=1)
    seen = tps + np.cumsum(counts.neg[:, ::-1].astype(np.float64), axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(seen > 0, tps / np.where(seen > 0, seen, 1), 0.0)
        total_pos = tps[:, -1] if tps.size else np.zeros(pos.shape[0])
        total_neg = seen[:, -1] - total_pos if tps.size else np.zeros(pos.shape[0])
        ap = np.sum(pos * precision, axis=1) / np.where(total_pos > 0, total_pos, 1)
    return np.where((total_pos > 0) & (total_neg > 0), ap, np.nan)


def percentile_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float] | None:
    """Percentile interval of the defined resample values (None when none is defined)."""
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    if not values.size:
        return None
    alpha = (1 - level) / 2
    lo, hi = np.quantile(values, [alpha, 1 - alpha])
    return float(lo), float(hi)


def delong_interval(counts: ScoreCounts, level: float = 0.95) -> tuple[float, float] | None:
    """DeLong's interval for AUROC from the score counts: AUC ± z sqrt(S10 / P + S01 / N),
    placements of each class computed per distinct score (exact, no rows needed); clipped to
    [0, 1]. None with one class."""
    from scipy.stats import norm

    pos = counts.pos.astype(np.float64)
    neg = counts.neg.astype(np.float64)
    n_pos, n_neg = pos.sum(), neg.sum()
    if n_pos == 0 or n_neg == 0:
        return None
    neg_below = np.cumsum(neg) - neg
    pos_above = n_pos - np.cumsum(pos)
    v10 = (neg_below + 0.5 * neg) / n_neg  # per positive at each value
    v01 = (pos_above + 0.5 * pos) / n_pos  # per negative at each value
    auc = float(np.sum(pos * v10) / n_pos)
    s10 = float(np.sum(pos * (v10 - auc) ** 2) / (n_pos - 1)) if n_pos > 1 else 0.0
    s01 = float(np.sum(neg * (v01 - auc) ** 2) / (n_neg - 1)) if n_neg > 1 else 0.0
    half = float(norm.ppf(0.5 + level / 2)) * math.sqrt(s10 / n_pos + s01 / n_neg)
    return max(0.0, auc - half), min(1.0, auc + half)
