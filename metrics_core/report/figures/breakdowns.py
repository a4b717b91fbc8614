"""A metric broken down: per criterion, per fold, per cohort, and the per-query distribution."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from metrics_core.report.figures.style import (
    Bar,
    Box,
    Figure,
    Scatter,
    escape_plotly,
    finite,
    with_layout,
)

__all__ = [
    "MOSTLY_BINARY_SHARE",
    "cohort_forest_figure",
    "criterion_tick",
    "distribution_figure",
    "folds_figure",
    "per_criterion_figure",
]


def criterion_tick(code, name: str | None = None, *, width: int = 13) -> str:
    """A criterion's axis label: its code, and its name (when known) wrapped on lines of about
    ``width`` characters below it; both escaped (they come from the data).

    >>> criterion_tick("A.2", "Loss of interest or pleasure")
    'A.2<br>Loss of<br>interest or<br>pleasure'
    """
    if not name:
        return escape_plotly(code)
    lines = textwrap.wrap(str(name), width=width, break_long_words=False) or [""]
    return "<br>".join([escape_plotly(code), *(escape_plotly(line) for line in lines)])


def per_criterion_figure(table: pd.DataFrame, metric: str, *, label: str | None = None,
                         names: Mapping[str, str] | None = None) -> go.Figure:
    """Dot chart of ``metric`` per criterion with its 95% interval where the table has one.

    ``table`` is ``Evaluation.per_criterion`` (index: criteria, then ``micro`` / ``macro``
    rows, which are drawn as reference lines). Interval columns are ``{metric}_ci_lo`` /
    ``{metric}_ci_hi``. ``names`` maps a criterion's code to its name (the demo's
    :data:`metrics_core.demo.CRITERIA`): the axis and the hover show both.
    """
    label = label or metric
    names_of = names or {}
    body = table.drop(index=[i for i in ("micro", "macro") if i in table.index])
    # Criterion codes and names come from the data: escaped.
    ticks = [criterion_tick(i, names_of.get(str(i))) for i in body.index]
    hover = [escape_plotly(f"{i} {names_of[str(i)]}" if names_of.get(str(i)) else i)
             for i in body.index]
    values = body[metric].to_numpy(dtype=float)
    error = None
    lo_col, hi_col = f"{metric}_ci_lo", f"{metric}_ci_hi"
    if lo_col in body.columns and hi_col in body.columns:
        lo = body[lo_col].to_numpy(dtype=float)
        hi = body[hi_col].to_numpy(dtype=float)
        error = {"type": "data", "symmetric": False, "array": hi - values,
                 "arrayminus": values - lo}
    counts = body["n"] if "n" in body.columns else pd.Series(np.nan, index=body.index)
    custom = [[h, f"{round(float(c)):,}" if finite(c) else "—"]
              for h, c in zip(hover, counts, strict=True)]
    fig = Figure()
    fig.add_trace(Scatter(x=ticks, y=values, mode="markers", name=label, error_y=error,
                            marker={"size": 11}, customdata=custom or None,
                            hovertemplate="%{customdata[0]}<br>" + label + " %{y:.4f}"
                                          "<br>n = %{customdata[1]}<extra></extra>"))
    for row, dash in (("micro", "dash"), ("macro", "dot")):
        if row in table.index and finite(table.loc[row, metric]):
            value = float(table.loc[row, metric])
            fig.add_trace(Scatter(x=[ticks[0], ticks[-1]] if ticks else [], y=[value, value],
                                    mode="lines", name=f"{row} {value:.4f}",
                                    line={"dash": dash, "color": "grey"}))
    if names_of:  # names below the codes: the legend goes above the chart
        return with_layout(fig, f"{label} by criterion", "", label,
                           margin={"l": 60, "r": 20, "t": 100, "b": 110},
                           legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
                           xaxis={"tickangle": 0})
    return with_layout(fig, f"{label} by criterion", "Criterion", label)


#: A metric whose per-query values are exactly 0 or 1 at least this often is drawn as shares
#: (a box of such values is a flat line at 0 or 1 and says nothing).
MOSTLY_BINARY_SHARE = 0.8


def distribution_figure(values: Mapping[str, np.ndarray], *,
                        title: str = "Per-query distribution",
                        y_title: str = "Value per query",
                        intervals: Mapping[str, tuple[float, float] | None] | None = None,
                        binary_share: float = MOSTLY_BINARY_SHARE) -> go.Figure:
    """Per-query distribution of each metric, in one of two panels.

    ``values`` maps a metric name to its per-query values (NaN = undefined, left out).
    A metric whose values are mostly exactly 0 or 1 (share ≥ ``binary_share``) is drawn in the
    right panel as stacked shares of queries at 0, in between and at 1, with its mean and
    the mean's 95% interval from ``intervals`` (``name -> (lo, hi)``) when given; every other
    metric is a box (quartiles, mean and range, light for any n) in the left panel.
    """
    intervals = intervals or {}
    boxes, shares = [], []
    for name, v in values.items():
        v = np.asarray(v, dtype=float)
        v = v[np.isfinite(v)]
        if v.size == 0:
            continue
        zero, one = float(np.mean(v == 0)), float(np.mean(v == 1))
        (shares if zero + one >= binary_share else boxes).append((name, v, zero, one))
    split = 0.5 if boxes and shares else (1.0 if boxes else 0.0)
    fig = Figure()
    for name, v, _, _ in boxes:
        q1, median, q3 = np.percentile(v, [25, 50, 75])
        fig.add_trace(Box(name=name, x=[name], q1=[q1], median=[median], q3=[q3],
                          lowerfence=[v.min()], upperfence=[v.max()], mean=[v.mean()],
                          boxpoints=False, showlegend=False))
    names = [name for name, *_ in shares]
    parts = (("queries at 0", "#bab0ac", [z for *_, z, _ in shares]),
             ("queries in between", "#9ecae9", [1 - z - o for *_, z, o in shares]),
             ("queries at 1", "#4c78a8", [o for *_, o in shares]))
    for label, colour, share in parts:
        if not names:
            break
        fig.add_trace(Bar(x=names, y=share, name=label, marker={"color": colour},
                          xaxis="x2", yaxis="y2",
                          hovertemplate="%{x}<br>" + label + ": %{y:.1%}<extra></extra>"))
    if names:
        means = np.array([v.mean() for _, v, _, _ in shares])
        lo = np.array([(intervals.get(n) or (np.nan, np.nan))[0] for n in names], dtype=float)
        hi = np.array([(intervals.get(n) or (np.nan, np.nan))[1] for n in names], dtype=float)
        fig.add_trace(Scatter(
            x=names, y=means, mode="markers", name="mean (95% CI)", xaxis="x2", yaxis="y2",
            marker={"symbol": "diamond", "size": 12, "color": "black"},
            error_y={"type": "data", "symmetric": False, "array": hi - means,
                     "arrayminus": means - lo, "color": "black", "thickness": 2},
            hovertemplate="%{x}<br>mean %{y:.3f}<extra></extra>"))
    layout = {"barmode": "stack",
              "legend": {"orientation": "h", "yanchor": "top", "y": -0.2, "x": split}}
    if shares:
        layout["xaxis2"] = {"domain": [split + 0.06 if boxes else 0, 1], "anchor": "y2",
                            "title": {"text": "Mostly 0 / 1 per query: shares and mean"}}
        layout["yaxis2"] = {"domain": [0, 1], "anchor": "x2", "range": [0, 1.02],
                            "title": {"text": "Share of queries / mean"}}
    x_axis = {"domain": [0, max(split - 0.04, 0.01)]} if shares else {}
    if not boxes:
        x_axis["visible"] = False
    return with_layout(fig, title, "Metric (box: quartiles, mean dashed, whiskers min-max)",
                       y_title, xaxis=x_axis, yaxis={"visible": bool(boxes)}, **layout)


# ------------------------------------------------------------------------------ folds
def folds_figure(per_fold: pd.DataFrame, summary: pd.DataFrame, metric: str, *,
                 label: str | None = None) -> go.Figure:
    """The value of ``metric`` in each fold with the mean ± std over folds (and the pooled
    value when the summary has it).

    ``per_fold`` is ``Evaluation.per_fold`` (one row per fold, then ``mean`` / ``std`` /
    ``pooled`` rows, which are not drawn as folds); ``summary`` is ``Evaluation.fold_summary``
    (columns ``metric``, ``mean``, ``std``, ``pooled``), whose numbers are drawn as given.
    """
    label = label or metric
    row = summary[summary["metric"] == metric]
    if row.empty or metric not in per_fold.columns:
        raise ValueError(f"fold summary has no row for metric {metric!r} (or the per-fold "
                         "table no such column)")
    folds = per_fold.drop(index=[i for i in ("mean", "std", "pooled") if i in per_fold.index])
    names = [escape_plotly(f"fold {i}") for i in folds.index]
    values = folds[metric].to_numpy(dtype=float)
    mean, std = float(row["mean"].iloc[0]), float(row["std"].iloc[0])
    fig = Figure()
    if math.isfinite(mean):
        ends = [names[0], names[-1]] if names else []
        std_text = f" ± {std:.3f}" if math.isfinite(std) else ""
        if math.isfinite(std):
            fig.add_trace(Scatter(
                x=[*ends, *ends[::-1]], y=[mean + std, mean + std, mean - std, mean - std],
                fill="toself", mode="lines", line={"width": 0},
                fillcolor="rgba(245,133,24,0.2)", name="mean ± std (ddof = 0)",
                hoverinfo="skip"))
        fig.add_trace(Scatter(x=ends, y=[mean, mean], mode="lines",
                              name=f"mean {mean:.3f}{std_text}",
                              line={"color": "#f58518", "width": 2}))
    pooled = row["pooled"].iloc[0] if "pooled" in row else None
    if finite(pooled):
        fig.add_trace(Scatter(x=[names[0], names[-1]] if names else [],
                              y=[float(pooled)] * 2, mode="lines",
                              name=f"pooled {float(pooled):.3f}",
                              line={"color": "grey", "dash": "dot"}))
    # The folds last, so the band never covers a point.
    fig.add_trace(Scatter(x=names, y=values, mode="markers", name=f"{label} per fold",
                          marker={"size": 12, "color": "#4c78a8",
                                  "line": {"width": 1, "color": "black"}},
                          hovertemplate="%{x}<br>" + label + " %{y:.3f}<extra></extra>"))
    return with_layout(fig, f"{label} per fold (mean ± std over folds)", "Fold", label,
                       xaxis={"categoryorder": "array", "categoryarray": names})


def cohort_forest_figure(cohorts: pd.DataFrame, metric: str, *, overall: float | None,
                         label: str | None = None) -> go.Figure:
    """``metric`` in each cohort (rows of the ``cohorts`` table of
    :mod:`metrics_core.evaluation.cohorts`: ``column``, ``value``, ``estimate``, ``ci95``,
    ``flagged``, ``small``) with its 95% interval, one row per cohort, and the overall value
    as a reference line; flagged disparities in red, small cells hollow; undefined values are
    not drawn."""
    rows = cohorts[(cohorts["metric"] == metric) & cohorts["defined"].astype(bool)]
    labels = [escape_plotly(f"{c} = {v}") for c, v in zip(rows["column"], rows["value"],
                                                          strict=True)]
    est = rows["estimate"].to_numpy(dtype=float)
    lo = np.array([np.nan if c is None else c[0] for c in rows["ci95"]], dtype=float)
    hi = np.array([np.nan if c is None else c[1] for c in rows["ci95"]], dtype=float)
    flagged = rows["flagged"].to_numpy(dtype=bool)
    small = rows["small"].to_numpy(dtype=bool)
    fig = Figure()
    for name, mask, color in (("cohort", ~flagged, "#4c78a8"),
                              ("flagged disparity", flagged, "#d62728")):
        if not mask.any():
            continue
        fig.add_trace(Scatter(
            x=est[mask], y=[t for t, m in zip(labels, mask, strict=True) if m],
            mode="markers", name=name,
            marker={"size": 11, "color": color, "symbol": [
                "circle-open" if s else "circle" for s in small[mask]]},
            error_x={"type": "data", "symmetric": False, "array": (hi - est)[mask],
                     "arrayminus": (est - lo)[mask]}))
    label = label or metric
    fig = with_layout(fig, f"{label} per cohort (95% CI)", label, "",
                      yaxis={"autorange": "reversed", "categoryorder": "array",
                             "categoryarray": labels})
    if finite(overall):
        fig.add_vline(x=float(overall), line={"color": "grey", "dash": "dot"},
                      annotation_text=f"overall {float(overall):.3f}")
    return fig
