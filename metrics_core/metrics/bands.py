"""Pointwise bootstrap bands of the ROC and PR curves (contract §9).

Every resample's curve comes from :func:`metrics_core.metrics.curve_replicates.curve_replicates`
on the one bootstrap's resamples (no resample sorted); the band is the percentile interval at
each grid point.
"""

from __future__ import annotations

import numpy as np

from metrics_core.metrics import classification

__all__ = ["pr_band", "roc_band"]


def _curve_band(y, p, name: str, *, n_resamples: int, seed: int, unit_of_row, n_units,
                grid) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pointwise percentile band of the ``name`` curve (``roc`` or ``pr``) over ``grid``, from
    the replicates of :func:`metrics_core.metrics.curve_replicates.curve_replicates` on the one
    bootstrap's resamples (equal to the literal computation per resample,
    :func:`metrics_core.metrics._reference.naive_roc_band` / ``naive_pr_band``)."""
    from metrics_core.metrics.curve_replicates import ScoreLayout, curve_replicates
    from metrics_core.metrics.uncertainty import Bootstrap, percentile_ci

    y = np.asarray(y, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    columns = order if unit_of_row is None else np.asarray(unit_of_row)[order]
    layout = ScoreLayout(p[order], y[order], columns)
    boot = Bootstrap(n_units or y.size, n_resamples=n_resamples, seed=seed,
                     batch_size=max(1, classification.CHUNK_ELEMENTS // max(y.size, 1)))
    values = curve_replicates(layout, boot.count_batches(), discrimination=False,
                              **{f"{name}_grid": grid})[name]
    cis = [percentile_ci(values[:, j]) for j in range(grid.size)]
    return grid, np.array([c.lo for c in cis]), np.array([c.hi for c in cis])


def roc_band(y, p, *, n_resamples: int, seed: int = 0, unit_of_row=None,
             n_units: int | None = None, grid=None) -> tuple[np.ndarray, np.ndarray,
                                                          np.ndarray]:
    """Pointwise percentile 95 % band of the ROC curve over a grid of FPR values (§9).

    In every bootstrap replicate (the one bootstrap of :mod:`metrics_core.metrics.uncertainty`) the
    weighted ROC curve is evaluated at each grid FPR as the TPR of its largest point with
    ``FPR ≤ grid`` (the rule of
    :func:`~metrics_core.metrics.classification.tpr_at_fpr`). Returns ``(grid, lo, hi)``.
    """
    grid = np.linspace(0.0, 1.0, 101) if grid is None else np.asarray(grid, dtype=np.float64)
    return _curve_band(y, p, "roc", n_resamples=n_resamples, seed=seed,
                       unit_of_row=unit_of_row, n_units=n_units, grid=grid)


def pr_band(y, p, *, n_resamples: int, seed: int = 0, unit_of_row=None,
            n_units: int | None = None, grid=None) -> tuple[np.ndarray, np.ndarray,
                                                         np.ndarray]:
    """Pointwise percentile 95 % band of the precision-recall curve over a recall grid (§9).

    In every bootstrap replicate the weighted PR curve is evaluated at each grid recall ``r``
    as the precision of its first operating point (highest threshold) with recall ``≥ r``:
    the step function whose area is average precision. Returns ``(grid, lo, hi)``; NaN where
    no replicate defines it.
    """
    grid = np.linspace(0.0, 1.0, 101) if grid is None else np.asarray(grid, dtype=np.float64)
    return _curve_band(y, p, "pr", n_resamples=n_resamples, seed=seed,
                       unit_of_row=unit_of_row, n_units=n_units, grid=grid)
