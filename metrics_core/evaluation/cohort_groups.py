"""The cohorts' vocabulary (contract §9): a grouping of the queries by a cohort column, the
levels and sizes of the cohort analysis, Holm's adjustment and the bootstrap p-value of a
difference. :mod:`metrics_core.evaluation.cohort_resamples` and
:mod:`metrics_core.evaluation.cohorts` build on it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["ALPHA", "COHORT_COLUMNS", "DISPARITY_METRICS", "MIN_SEGMENT", "RATE_METRICS",
           "SMALL_CELL", "TOP_SEGMENTS", "WEAK_COLUMNS", "Grouping", "bootstrap_p_values",
           "holm", "intersect"]


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
        ``source``'s, e.g. a filtered run's), with only the cohorts that have a query there
        (in their order): a cohort the filters left empty is no cohort of the run, as in a
        run on the filtered rows alone.

        >>> import types
        >>> src = types.SimpleNamespace(n_queries=3, post_id=np.array(["1", "1", "2"]),
        ...                             criterion=np.array(["A", "B", "A"]))
        >>> dst = types.SimpleNamespace(n_queries=1, post_id=np.array(["2"]),
        ...                             criterion=np.array(["A"]))
        >>> g = Grouping("site", ["x", "y", "z"], np.array([0, 0, 2])).aligned(src, dst)
        >>> g.values, g.codes.tolist()
        (('z',), [0])
        """
        if target is source or target.n_queries == source.n_queries:
            return self
        keys = pd.Index(pd.Series(source.post_id.astype(str)) + "\x1f"
                        + pd.Series(source.criterion.astype(str)))
        rows = keys.get_indexer(pd.Series(target.post_id.astype(str)) + "\x1f"
                                + pd.Series(target.criterion.astype(str)))
        used, local = np.unique(self.codes[rows], return_inverse=True)
        return Grouping(self.name, [self.values[u] for u in used.tolist()], local)


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
