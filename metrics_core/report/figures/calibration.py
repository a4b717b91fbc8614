"""The reliability diagram: observed frequency against mean predicted probability per bin."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from metrics_core.report.figures.style import (
    UNIT_RANGE,
    Bar,
    Figure,
    Scatter,
    count_axis,
    with_layout,
)

__all__ = [
    "reliability_figure",
]


def reliability_figure(table, *, title: str = "Reliability diagram",
                       x_title: str = "Mean predicted probability",
                       y_title: str = "Observed frequency",
                       smoothed: pd.DataFrame | None = None) -> go.Figure:
    """Observed frequency vs mean confidence per bin, with Wilson 95% bands and bin counts.

    ``table`` is a :class:`metrics_core.metrics.calibration.ReliabilityTable` (or a frame with the
    same columns). Empty bins are not drawn. Bin counts are bars on a second y axis.
    """
    frame = _reliability_frame(table)
    filled = frame[frame["count"] > 0]
    fig = Figure()
    fig.add_trace(Bar(x=(frame["lo"] + frame["hi"]) / 2, y=frame["count"],
                        width=(frame["hi"] - frame["lo"]) * 0.95, name="queries in bin",
                        marker={"color": "rgba(128,128,128,0.25)"}, yaxis="y2",
                        customdata=np.c_[frame["lo"], frame["hi"]],
                        hovertemplate="bin [%{customdata[0]:.3f}, %{customdata[1]:.3f}]"
                                      "<br>n = %{y}<extra></extra>"))
    fig.add_trace(Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect calibration",
                            line={"dash": "dot", "color": "grey"}, hoverinfo="skip"))
    fig.add_trace(Scatter(
        x=filled["mean_confidence"], y=filled["observed_frequency"], mode="lines+markers",
        name="observed (Wilson 95% CI)",
        error_y={"type": "data", "symmetric": False,
                 "array": filled["wilson_hi"] - filled["observed_frequency"],
                 "arrayminus": filled["observed_frequency"] - filled["wilson_lo"]},
        customdata=filled["count"],
        hovertemplate="confidence %{x:.3f}<br>observed %{y:.3f}<br>n = %{customdata}"
                      "<extra></extra>"))
    if smoothed is not None and len(smoothed):
        fig.add_trace(Scatter(x=np.r_[smoothed["p"], smoothed["p"][::-1]],
                              y=np.r_[smoothed["hi"], smoothed["lo"][::-1]], fill="toself",
                              mode="lines", line={"width": 0},
                              fillcolor="rgba(31,78,121,0.15)", name="smoothed 95% band",
                              hoverinfo="skip"))
        fig.add_trace(Scatter(x=smoothed["p"], y=smoothed["observed"], mode="lines",
                              name="smoothed (spline)",
                              line={"color": "#1f4e79", "dash": "dash"},
                              hovertemplate="p %{x:.3f}<br>observed %{y:.3f}<extra></extra>"))
    return with_layout(fig, title, x_title, y_title, xaxis=UNIT_RANGE, yaxis=UNIT_RANGE,
                       yaxis2={"title": {"text": "Queries in bin"}, "overlaying": "y",
                               "side": "right", "showgrid": False,
                               **count_axis(float(np.max(frame["count"].to_numpy(), initial=0)))})


def _reliability_frame(table) -> pd.DataFrame:
    if isinstance(table, pd.DataFrame):
        return table.reset_index(drop=True)
    columns = ("lo", "hi", "count", "mean_confidence", "observed_frequency", "wilson_lo",
               "wilson_hi")
    return pd.DataFrame({c: np.asarray(getattr(table, c)) for c in columns})
