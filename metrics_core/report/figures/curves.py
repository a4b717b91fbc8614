"""The classifier's curves: ROC and precision-recall with their operating points, and the
decision curve (net benefit against the threshold probability).

A curve is thinned for display (:func:`metrics_core.report.thinning.simplify` keeps the fewest
real points that draw it within a quarter of a pixel of its exact path) so a million queries
never travel to the browser, while the operating points stay exact.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from metrics_core.metrics.classification import PrCurve, RocCurve
from metrics_core.report.figures.style import (
    MAX_CURVE_POINTS,
    UNIT_RANGE,
    Figure,
    Scatter,
    finite,
    with_layout,
)
from metrics_core.report.thinning import STEP_SHAPE, simplify

__all__ = [
    "CURVE_COLOUR",
    "POINT_COLOURS",
    "POINT_SIZES",
    "POINT_SYMBOLS",
    "OperatingPoint",
    "curve_name",
    "decision_curve_figure",
    "operating_point",
    "point_markers",
    "pr_figure",
    "roc_figure",
    "threshold_text",
]

POINT_SYMBOLS = ("circle", "diamond", "square", "triangle-up", "x")


class OperatingPoint(NamedTuple):
    """One threshold drawn on the ROC / PR curves: predicted positive iff ``p ≥ threshold``."""

    label: str
    threshold: float
    fpr: float
    tpr: float
    precision: float


def operating_point(label: str, confusion) -> OperatingPoint:
    """The point of a :class:`metrics_core.metrics.confusion.Confusion` (undefined -> NaN)."""
    return OperatingPoint(label, float(confusion.threshold), float(confusion.fpr),
                          float(confusion.sensitivity), float(confusion.precision))


def threshold_text(thresholds: np.ndarray) -> list[str]:
    """Hover text of a curve's points: the threshold each one is drawn at."""
    return ["all negative" if not np.isfinite(t) else f"p ≥ {t:.4g}" for t in thresholds]


# ------------------------------------------------------------------------- ROC and PR
def curve_name(curve: str, area: str, value: float | None) -> str:
    """Legend name of a curve: ``"ROC (AUROC 0.873)"``, or ``"ROC"`` when the area is
    undefined."""
    return curve if value is None or not finite(value) else f"{curve} ({area} {value:.3f})"


#: Marker sizes of the operating points, largest first: a later point drawn on the same spot
#: sits inside the earlier one, so coinciding points all stay visible.
POINT_SIZES = (22, 15, 9, 6, 4)
POINT_COLOURS = ("#4c78a8", "#e45756", "#54a24b", "#f58518", "#b279a2")
#: The colour of a single curve (the same blue as its band and as the Gate page's charts; the
#: app's theme would otherwise draw it in its primary red, the colour of the τ_pos marker).
CURVE_COLOUR = "#4c78a8"


def point_markers(points: Sequence[OperatingPoint], x: str, y: str):
    """(point, marker, legend name) of each drawable operating point.

    Each point has its own symbol, colour and size (decreasing, so a point drawn on top of
    another one is smaller and both show); a point at the same spot as an earlier one says so
    in its legend entry.
    """
    drawn: list[tuple[OperatingPoint, tuple[float, float]]] = []
    out = []
    for i, pt in enumerate(points):
        xv, yv = getattr(pt, x), getattr(pt, y)
        if not (finite(xv) and finite(yv)):
            continue
        spot = (float(xv), float(yv))
        same = [other.label for other, at in drawn
                if math.isclose(at[0], spot[0], abs_tol=1e-9)
                and math.isclose(at[1], spot[1], abs_tol=1e-9)]
        name = f"{pt.label} (p ≥ {pt.threshold:g})"
        if same:
            name += f", same point as {' and '.join(same)}"
        marker = {"size": POINT_SIZES[min(i, len(POINT_SIZES) - 1)],
                  "symbol": POINT_SYMBOLS[i % len(POINT_SYMBOLS)],
                  "color": POINT_COLOURS[i % len(POINT_COLOURS)],
                  "line": {"width": 1.5, "color": "black"}}
        drawn.append((pt, spot))
        out.append((pt, marker, name))
    return out


def roc_figure(roc: RocCurve, *, points: Sequence[OperatingPoint] = (),
               auroc: float | None = None, max_points: int = MAX_CURVE_POINTS,
               band: pd.DataFrame | None = None) -> go.Figure:
    """ROC curve (thinned for display) with the chance diagonal and operating points, and
    the bootstrap band (``Evaluation.roc_band``) when given."""
    shown = simplify(roc, max_points=max_points)
    name = curve_name("ROC", "AUROC", auroc)
    fig = Figure()
    if band is not None:
        fig.add_trace(Scatter(x=np.r_[band["fpr"], band["fpr"][::-1]],
                              y=np.r_[band["tpr_hi"], band["tpr_lo"][::-1]], fill="toself",
                              mode="lines", line={"width": 0, "shape": "hv"},
                              fillcolor="rgba(76,120,168,0.2)", name="95% band",
                              hoverinfo="skip"))
    fig.add_trace(Scatter(x=[0, 1], y=[0, 1], mode="lines", name="chance",
                            line={"dash": "dot", "color": "grey"}, hoverinfo="skip"))
    fig.add_trace(Scatter(x=shown.fpr, y=shown.tpr, mode="lines", name=name,
                            line={"shape": "linear", "color": CURVE_COLOUR},
                            text=threshold_text(shown.thresholds),
                            hovertemplate="FPR %{x:.4f}<br>TPR %{y:.4f}<br>%{text}"))
    for pt, marker, name in point_markers(points, "fpr", "tpr"):
        fig.add_trace(Scatter(
            x=[pt.fpr], y=[pt.tpr], mode="markers", name=name, marker=marker,
            hovertemplate=f"{name}<br>FPR %{{x:.4f}}<br>TPR %{{y:.4f}}<extra></extra>"))
    return with_layout(fig, "ROC curve (all queries)", "False positive rate (1 − specificity)",
                       "True positive rate (sensitivity)", xaxis=UNIT_RANGE, yaxis=UNIT_RANGE)


def pr_figure(pr: PrCurve, baseline: float, *, points: Sequence[OperatingPoint] = (),
              auprc: float | None = None, max_points: int = MAX_CURVE_POINTS,
              band: pd.DataFrame | None = None) -> go.Figure:
    """Precision-recall curve with the positive-rate baseline and operating points, and the
    bootstrap band (``Evaluation.pr_band``) when given.

    The curve is drawn as a step (precision is constant between recall levels, as average
    precision counts it: :data:`STEP_SHAPE`).
    """
    shown = simplify(pr, max_points=max_points)
    name = curve_name("PR", "AUPRC", auprc)
    fig = Figure()
    if band is not None:
        defined = band.dropna()
        fig.add_trace(Scatter(x=np.r_[defined["recall"], defined["recall"][::-1]],
                              y=np.r_[defined["precision_hi"], defined["precision_lo"][::-1]],
                              fill="toself", mode="lines", line={"width": 0, "shape": "vh"},
                              fillcolor="rgba(76,120,168,0.2)", name="95% band",
                              hoverinfo="skip"))
    fig.add_trace(Scatter(x=[0, 1], y=[baseline, baseline], mode="lines",
                            name=f"positive rate {baseline:.3f} (random)",
                            line={"dash": "dot", "color": "grey"}, hoverinfo="skip"))
    thresholds = np.r_[shown.thresholds, np.inf][: shown.recall.size]
    fig.add_trace(Scatter(x=shown.recall, y=shown.precision, mode="lines", name=name,
                            line={"shape": STEP_SHAPE, "color": CURVE_COLOUR},
                            text=threshold_text(thresholds),
                            hovertemplate="recall %{x:.4f}<br>precision %{y:.4f}<br>%{text}"))
    for pt, marker, name in point_markers(points, "tpr", "precision"):
        fig.add_trace(Scatter(
            x=[pt.tpr], y=[pt.precision], mode="markers", name=name, marker=marker,
            hovertemplate=f"{name}<br>recall %{{x:.4f}}<br>precision %{{y:.4f}}"
                          "<extra></extra>"))
    return with_layout(fig, "Precision-recall curve (all queries)", "Recall (sensitivity)",
                       "Precision (PPV)", xaxis=UNIT_RANGE, yaxis=UNIT_RANGE)


# ---------------------------------------------------------------------- decision curve
def decision_curve_figure(curve: pd.DataFrame, *, tau_pos: float | None = None) -> go.Figure:
    """Net benefit of the model, treat-all and treat-none against the threshold probability.

    ``curve`` is ``Evaluation.decision_curve``; its band columns (``net_benefit_ci_lo`` /
    ``_hi``) are drawn when present; ``tau_pos`` is marked with a vertical line.
    """
    fig = Figure()
    t = curve["threshold"]
    if "net_benefit_ci_lo" in curve:
        fig.add_trace(Scatter(x=np.r_[t, t[::-1]],
                              y=np.r_[curve["net_benefit_ci_hi"],
                                      curve["net_benefit_ci_lo"][::-1]],
                              fill="toself", mode="lines", line={"width": 0},
                              fillcolor="rgba(76,120,168,0.2)", name="model 95% band",
                              hoverinfo="skip"))
    fig.add_trace(Scatter(x=t, y=curve["net_benefit"], mode="lines", name="model",
                          line={"color": "#4c78a8", "width": 2},
                          hovertemplate="threshold %{x:.2f}<br>net benefit %{y:.4f}"
                                        "<extra></extra>"))
    fig.add_trace(Scatter(x=t, y=curve["net_benefit_treat_all"], mode="lines",
                          name="treat all", line={"color": "#f58518", "dash": "dash"}))
    fig.add_trace(Scatter(x=t, y=curve["net_benefit_treat_none"], mode="lines",
                          name="treat none", line={"color": "grey", "dash": "dot"}))
    finite = curve["net_benefit"].to_numpy(dtype=float)
    top = float(np.nanmax(finite)) if np.isfinite(finite).any() else 0.0
    fig = with_layout(fig, "Decision curve", "Threshold probability", "Net benefit",
                      xaxis={"range": [0, 1]},
                      yaxis={"range": [min(-0.05, -abs(top) * 0.2), max(top * 1.1, 0.05)]})
    if tau_pos is not None:
        fig.add_vline(x=tau_pos, line={"color": "#e45756", "dash": "dash"},
                      annotation={"text": f"τ_pos = {tau_pos:g}"})
    return fig
