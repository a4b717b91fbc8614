"""Curves thinned for drawing: the fewest real operating points that draw a ROC or PR curve
within a fraction of a pixel of its exact path (the figures' and the app's charts).

The kernels compute every point (:func:`metrics_core.metrics.classification.roc_points`,
:func:`~metrics_core.metrics.classification.pr_points`); what is drawn is chosen here, and kept
on the curve object (its ``drawn`` field), so a curve is thinned once.
"""

from __future__ import annotations

import math

import numpy as np

from metrics_core.metrics.classification import PrCurve, RocCurve, frozen_arrays

__all__ = ["DRAW_TOLERANCE", "DRAW_WHOLE", "downsample", "simplify"]


def downsample(curve, *, max_points: int = 2000):
    """A subset of a curve's points for drawing, keeping both endpoints (any curve size).

    Only existing points are kept (every drawn point is a real operating point with its
    threshold). The curve's path is cut into ``(max_points - 2) // 2`` pieces of equal length
    (in the unit square of the axes) and the first and last point of each piece are kept.
    Every dropped point lies on the path between two kept points no farther apart along the
    path than one piece, so it is within ``path_length / pieces`` of the drawn polyline: for a
    ROC curve (path length at most 2) and 2,000 points that is 0.002 of the axis, under one
    pixel of a 500-pixel chart.

    Parameters
    ----------
    curve : RocCurve or PrCurve
    max_points : int, default 2000
        At most this many points are kept (at least 4).

    Returns
    -------
    RocCurve or PrCurve
        Same type; unchanged when it already has at most ``max_points`` points.
    """
    if max_points < 4:
        raise ValueError(f"max_points must be at least 4, got {max_points}")
    if isinstance(curve, RocCurve):
        x, y = curve.fpr, curve.tpr
    elif isinstance(curve, PrCurve):
        x, y = curve.recall, curve.precision
    else:
        raise ValueError(f"curve must be a RocCurve or PrCurve, got {type(curve).__name__}")
    n = x.size
    if n <= max_points:
        return curve
    step = np.hypot(np.diff(np.nan_to_num(x)), np.diff(np.nan_to_num(y)))
    path = np.r_[0.0, np.cumsum(step)]
    pieces = (max_points - 2) // 2
    if path[-1] > 0:
        piece = np.minimum((path / path[-1] * pieces).astype(np.int64), pieces - 1)
    else:
        piece = np.zeros(n, dtype=np.int64)
    first = np.r_[True, piece[1:] != piece[:-1]]
    last = np.r_[piece[1:] != piece[:-1], True]
    keep = first | last
    keep[0] = keep[-1] = True
    return _points(curve, np.flatnonzero(keep))


def _points(curve, idx: np.ndarray):
    """The curve's points at the increasing indices ``idx``, each with its threshold (a PR
    curve's last point has none)."""
    if isinstance(curve, RocCurve):
        return RocCurve(*frozen_arrays(curve.fpr[idx], curve.tpr[idx], curve.thresholds[idx]))
    with_threshold = idx[idx < curve.thresholds.size]
    return PrCurve(*frozen_arrays(curve.precision[idx], curve.recall[idx],
                              curve.thresholds[with_threshold]))


#: How far (in axis units of the unit square) a drawn curve may leave the exact one: a quarter
#: of a pixel of a 500-pixel axis.
DRAW_TOLERANCE = 0.0005


#: Curves of up to this many points are drawn whole (every threshold can be hovered).
DRAW_WHOLE = 500
#: Plotly's line shape of a PR curve through its points (in the order of falling recall):
#: horizontal, then vertical, so the interval between two recall levels is drawn at the
#: precision of its upper end, as average precision counts it (vertical-then-horizontal drew
#: it at the precision of its lower end: a run with one tied score drawn at precision 1).
STEP_SHAPE = "hv"


def simplify(curve, *, tolerance: float = DRAW_TOLERANCE, max_points: int = 2000):
    """The fewest points of a curve that draw it within ``tolerance`` of its exact path
    (a curve of at most :data:`DRAW_WHOLE` points is returned as it is).

    Only existing points are kept, both endpoints always (every drawn point is a real
    operating point with its threshold). A ROC curve is drawn as straight segments: a point is
    dropped only when it lies within ``tolerance`` of the segment between the points kept on
    either side (the Ramer-Douglas-Peucker split). A PR curve is drawn as steps (horizontal,
    then vertical, in its order of falling recall: each recall interval at the precision of its
    upper end, as average precision counts it): between two
    kept points ``a`` and ``b`` the drawn path is one horizontal and one vertical segment, and
    the points between are dropped only when every corner of their exact steps lies within
    ``tolerance`` of it (the exact steps between two corners are axis-parallel segments, whose
    farthest point from such a path is one of their ends). Curves with undefined points (one
    class only) and results over ``max_points`` fall back to :func:`downsample`.

    >>> roc = RocCurve(np.array([0.0, 0.1, 0.2, 0.5, 1.0]), np.array([0.0, 0.3, 0.6, 0.9, 1.0]),
    ...                np.array([np.inf, 0.9, 0.7, 0.4, 0.1]))
    >>> simplify(roc).fpr.tolist()  # short: drawn whole
    [0.0, 0.1, 0.2, 0.5, 1.0]
    >>> x = np.linspace(0.0, 1.0, 1001)  # a straight line of 1,001 points: its two ends
    >>> simplify(RocCurve(x, x, np.linspace(1.0, 0.0, 1001))).fpr.tolist()
    [0.0, 1.0]
    """
    if isinstance(curve, RocCurve):
        x, y, steps = curve.fpr, curve.tpr, False
    elif isinstance(curve, PrCurve):
        x, y, steps = curve.recall, curve.precision, True
    else:
        raise ValueError(f"curve must be a RocCurve or PrCurve, got {type(curve).__name__}")
    key = (float(tolerance), int(max_points))
    if key not in curve.drawn:
        curve.drawn[key] = _simplified(curve, x, y, steps, tolerance, max_points)
    return curve.drawn[key]


def _simplified(curve, x: np.ndarray, y: np.ndarray, steps: bool, tolerance: float,
                max_points: int):
    n = x.size
    if n <= DRAW_WHOLE:
        return curve
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        return downsample(curve, max_points=max_points)
    base = _step_extremes(x, y) if steps else np.arange(n)
    x, y, n = x[base], y[base], base.size
    keep = np.zeros(n, dtype=bool)
    keep[0] = keep[-1] = True
    pending = [(0, n - 1)]
    while pending:
        a, b = pending.pop()
        if b - a < 2:
            continue
        off, at = (_step_offsets if steps else _segment_offsets)(x, y, a, b)
        worst = int(np.argmax(off))
        if off[worst] > tolerance:
            m = int(at[worst])
            keep[m] = True
            pending += [(a, m), (m, b)]
    idx = base[keep]
    if idx.size > max_points:
        return downsample(curve, max_points=max_points)
    return _points(curve, idx)


def _segment_offsets(x: np.ndarray, y: np.ndarray, a: int, b: int):
    """Distances of the points strictly between ``a`` and ``b`` from the straight segment
    ``a`` -> ``b``, and their indices."""
    xs, ys = x[a + 1:b], y[a + 1:b]
    dx, dy = x[b] - x[a], y[b] - y[a]
    length = math.hypot(dx, dy)
    if length == 0.0:
        return np.hypot(xs - x[a], ys - y[a]), np.arange(a + 1, b)
    t = np.clip(((xs - x[a]) * dx + (ys - y[a]) * dy) / (length * length), 0.0, 1.0)
    return np.hypot(xs - (x[a] + t * dx), ys - (y[a] + t * dy)), np.arange(a + 1, b)


def _step_extremes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the points a step path cannot do without: in every run of equal ``x`` (a
    vertical stretch of the path) its first and last point and those at its lowest and
    highest ``y``. The path through these covers exactly the same points (each run's
    vertical extent), so dropping the others changes nothing drawn."""
    n = x.size
    starts = np.r_[0, np.flatnonzero(x[1:] != x[:-1]) + 1]
    lengths = np.diff(np.r_[starts, n])
    low = np.repeat(np.minimum.reduceat(y, starts), lengths)
    high = np.repeat(np.maximum.reduceat(y, starts), lengths)
    needed = (y == low) | (y == high)
    needed[starts] = True
    needed[starts + lengths - 1] = True
    return np.flatnonzero(needed)


def _step_offsets(x: np.ndarray, y: np.ndarray, a: int, b: int):
    """Distances of the corners of the exact step path between points ``a`` and ``b`` (drawn
    horizontal-then-vertical) from the one step ``a`` -> ``b``, and the point index that
    splits the span at each corner (strictly between ``a`` and ``b``)."""
    j = np.arange(a, b)
    cx = np.r_[x[a + 1:b], x[j + 1]]  # the points between, then each step's corner (x_j+1, y_j)
    cy = np.r_[y[a + 1:b], y[j]]
    split = np.r_[np.arange(a + 1, b), np.clip(j, a + 1, b - 1)]
    lo_x, hi_x = min(x[a], x[b]), max(x[a], x[b])
    lo_y, hi_y = min(y[a], y[b]), max(y[a], y[b])
    to_h = np.hypot(np.maximum(np.maximum(lo_x - cx, cx - hi_x), 0.0), cy - y[a])
    to_v = np.hypot(cx - x[b], np.maximum(np.maximum(lo_y - cy, cy - hi_y), 0.0))
    return np.minimum(to_h, to_v), split
