"""Several runs on one chart (``metrics-core compare`` and the app's Compare page): their ROC,
precision-recall, reliability and decision curves, and the differences to the reference."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from metrics_core.metrics.classification import PrCurve, RocCurve
from metrics_core.report.figures.style import (
    MAX_CURVE_POINTS,
    UNIT_RANGE,
    Figure,
    Scatter,
    escape_plotly,
    with_layout,
)
from metrics_core.report.thinning import STEP_SHAPE, simplify

__all__ = [
    "forest_figure",
    "overlay_decision_figure",
    "overlay_pr_figure",
    "overlay_reliability_figure",
    "overlay_roc_figure",
]

_RUN_COLOURS = ("#4c78a8", "#e45756", "#54a24b", "#f58518", "#b279a2", "#9d755d")


def overlay_roc_figure(curves: Mapping[str, RocCurve], aurocs: Mapping[str, float | None],
                       *, max_points: int = MAX_CURVE_POINTS) -> go.Figure:
    """The ROC curves of several runs on one chart (run names are shown as text)."""
    fig = Figure()
    fig.add_trace(Scatter(x=[0, 1], y=[0, 1], mode="lines", name="chance",
                          line={"dash": "dot", "color": "grey"}, hoverinfo="skip"))
    for i, (name, roc) in enumerate(curves.items()):
        shown = simplify(roc, max_points=max_points)
        auc = aurocs.get(name)
        label = escape_plotly(name) + ("" if auc is None else f" (AUROC {auc:.3f})")
        fig.add_trace(Scatter(x=shown.fpr, y=shown.tpr, mode="lines", name=label,
                              line={"color": _RUN_COLOURS[i % len(_RUN_COLOURS)]}))
    return with_layout(fig, "ROC curves of the runs", "False positive rate", "True positive rate",
                       xaxis=UNIT_RANGE, yaxis=UNIT_RANGE)


def overlay_decision_figure(curves: Mapping[str, pd.DataFrame]) -> go.Figure:
    """Net benefit of several runs, with treat-all and treat-none (same data, same axes)."""
    fig = Figure()
    first = next(iter(curves.values()))
    for i, (name, curve) in enumerate(curves.items()):
        fig.add_trace(Scatter(x=curve["threshold"], y=curve["net_benefit"], mode="lines",
                              name=escape_plotly(name),
                              line={"color": _RUN_COLOURS[i % len(_RUN_COLOURS)]}))
    fig.add_trace(Scatter(x=first["threshold"], y=first["net_benefit_treat_all"],
                          mode="lines", name="treat all", line={"dash": "dash", "color": "grey"}))
    fig.add_trace(Scatter(x=first["threshold"], y=first["net_benefit_treat_none"],
                          mode="lines", name="treat none", line={"dash": "dot", "color": "grey"}))
    top = max(float(np.nanmax(c["net_benefit"])) for c in curves.values())
    return with_layout(fig, "Decision curves of the runs", "Threshold probability", "Net benefit",
                       xaxis={"range": [0, 1]},
                       yaxis={"range": [min(-0.05, -abs(top) * 0.2), max(top * 1.1, 0.05)]})


def forest_figure(rows: pd.DataFrame, *, title: str) -> go.Figure:
    """Differences (run − reference) with their 95% intervals, one row per subset; a subset
    whose difference is undefined, or has no interval, says so in its label (no marker, or
    a marker without bars, is never left unexplained)."""
    diff = rows["difference"].to_numpy(dtype=float)
    lo = np.array([np.nan if c is None else c[0] for c in rows["ci95"]], dtype=float)
    hi = np.array([np.nan if c is None else c[1] for c in rows["ci95"]], dtype=float)
    labels = [escape_plotly(s) + (" (undefined)" if np.isnan(d) else
                                  " (no interval)" if np.isnan(a) else "")
              for s, d, a in zip(rows["subset"], diff, lo, strict=True)]
    fig = Figure()
    fig.add_trace(Scatter(x=diff, y=labels, mode="markers", name="difference",
                          marker={"size": 10, "color": "#4c78a8"},
                          error_x={"type": "data", "symmetric": False, "array": hi - diff,
                                   "arrayminus": diff - lo}))
    fig = with_layout(fig, title, "Difference (run − reference)", "",
                      yaxis={"autorange": "reversed"})
    fig.add_vline(x=0, line={"color": "grey", "dash": "dot"})
    return fig


def overlay_pr_figure(curves: Mapping[str, PrCurve], auprcs: Mapping[str, float | None],
                      baseline: float, *, max_points: int = MAX_CURVE_POINTS) -> go.Figure:
    """The precision-recall curves of several runs, with the positive rate as baseline."""
    fig = Figure()
    fig.add_trace(Scatter(x=[0, 1], y=[baseline, baseline], mode="lines",
                          name=f"positive rate {baseline:.3f}", hoverinfo="skip",
                          line={"dash": "dot", "color": "grey"}))
    for i, (name, pr) in enumerate(curves.items()):
        shown = simplify(pr, max_points=max_points)
        auc = auprcs.get(name)
        label = escape_plotly(name) + ("" if auc is None else f" (AUPRC {auc:.3f})")
        fig.add_trace(Scatter(x=shown.recall, y=shown.precision, mode="lines", name=label,
                              line={"shape": STEP_SHAPE,
                                    "color": _RUN_COLOURS[i % len(_RUN_COLOURS)]}))
    return with_layout(fig, "Precision-recall curves of the runs", "Recall", "Precision",
                       xaxis=UNIT_RANGE, yaxis=UNIT_RANGE)


def overlay_reliability_figure(tables: Mapping[str, object]) -> go.Figure:
    """Observed frequency against mean predicted probability per bin, one line per run."""
    fig = Figure()
    fig.add_trace(Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect calibration",
                          line={"dash": "dot", "color": "grey"}, hoverinfo="skip"))
    for i, (name, t) in enumerate(tables.items()):
        keep = np.asarray(t.count) > 0
        fig.add_trace(Scatter(x=np.asarray(t.mean_confidence)[keep],
                              y=np.asarray(t.observed_frequency)[keep], mode="lines+markers",
                              name=f"{escape_plotly(name)} (ECE {t.ece:.3f})",
                              line={"color": _RUN_COLOURS[i % len(_RUN_COLOURS)]}))
    return with_layout(fig, "Reliability of the runs", "Mean predicted probability",
                       "Observed share with evidence", xaxis=UNIT_RANGE, yaxis=UNIT_RANGE)
