"""Pure chart builders: computed results in, ``plotly.graph_objects.Figure`` out.

No Streamlit here (the app and the decision record draw the same figures) and no metric math:
every number drawn comes from :mod:`metrics_core`
(curves, reliability tables, gate grids, sweeps, per-query arrays). What a builder does itself
is display work only: thinning a long curve (with
:func:`metrics_core.report.thinning.simplify`, which keeps the fewest real points that draw
it within a quarter of a pixel of its exact path), counting K values
for a histogram and quartiles for a box, so a million queries never travel to the browser
while operating points stay exact. Titles and axis labels are set on every figure; the
synthetic-data label is shown by the page, not the chart.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Mapping, Sequence
from functools import partial
from types import MappingProxyType
from typing import NamedTuple

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from metrics_core import registry
from metrics_core.bidi import neutralise_bidi
from metrics_core.metrics.classification import PrCurve, RocCurve
from metrics_core.report.thinning import simplify

__all__ = [
    "MAX_CURVE_POINTS",
    "MOSTLY_BINARY_SHARE",
    "STATE_NAMES",
    "OperatingPoint",
    "count_axis",
    "curve_name",
    "decision_curve_figure",
    "distribution_figure",
    "escape_plotly",
    "folds_figure",
    "forest_figure",
    "gamma_sweep_figure",
    "gate_flow_figure",
    "gate_grid_heatmap",
    "k_histogram",
    "operating_point",
    "overlay_decision_figure",
    "overlay_pr_figure",
    "overlay_reliability_figure",
    "overlay_roc_figure",
    "per_criterion_figure",
    "point_markers",
    "pr_figure",
    "reliability_figure",
    "roc_figure",
    "threshold_text",
]

#: Characters plotly reads as markup, and the entities it turns back into them. Plotly decodes
#: only ``&lt;``, ``&gt;``, ``&amp;`` (and a few others) by name and every numeric entity:
#: ``&quot;`` would be shown as written, so quotes are numeric.
_PLOTLY_ENTITIES = MappingProxyType({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;",
                                     "'": "&#39;"})
_PLOTLY_MARKUP = re.compile("[&<>\"']")


def escape_plotly(text) -> str:
    """``text`` with ``<``, ``>``, ``&`` and quotes as entities plotly decodes (no live tag in
    a figure, and the text shown as written), bidirectional controls made visible. Escape
    once: an escaped text escaped again shows its entities.

    >>> escape_plotly('<a href="http://evil.example">x</a>')
    '&lt;a href=&#34;http://evil.example&#34;&gt;x&lt;/a&gt;'
    """
    return _PLOTLY_MARKUP.sub(lambda m: _PLOTLY_ENTITIES[m.group()], neutralise_bidi(text))


#: At most this many points are kept when a curve is drawn (fewer where fewer draw it within
#: ``thinning.DRAW_TOLERANCE``; the operating points are always exact).
MAX_CURVE_POINTS = 2000
#: Gate state codes (0, 1, 2) and their names (contract §6).
STATE_NAMES = registry.GATE_STATES
_STATE_COLOURS = {"NEG": "#4c78a8", "UNCERTAIN": "#f58518", "POS": "#e45756"}
POINT_SYMBOLS = ("circle", "diamond", "square", "triangle-up", "x")

GRID_METRICS = {name: registry.label(name) for name in (
    "screening_sensitivity", "alert_precision", "review_rate", "screening_fn_per_1000",
    "pos_rate", "neg_rate")}


class OperatingPoint(NamedTuple):
    """One threshold drawn on the ROC / PR curves: predicted positive iff ``p ≥ threshold``."""

    label: str
    threshold: float
    fpr: float
    tpr: float
    precision: float


# Figures and traces are built without plotly's per-property validation: that validation costs
# ~4x the construction itself on every slider move. Properties are therefore always given in
# their full form (titles as {"text": ...}); the chart tests check the resulting figures.
_Figure = partial(go.Figure, _validate=False)
_Scatter = partial(go.Scatter, _validate=False)
_Bar = partial(go.Bar, _validate=False)
_Heatmap = partial(go.Heatmap, _validate=False)
_Box = partial(go.Box, _validate=False)
_UNIT_RANGE = {"range": [-0.01, 1.01]}


def operating_point(label: str, confusion) -> OperatingPoint:
    """The point of a :class:`metrics_core.metrics.classification.Confusion` (undefined -> NaN)."""
    return OperatingPoint(label, float(confusion.threshold), float(confusion.fpr),
                          float(confusion.sensitivity), float(confusion.precision))


def _layout(fig: go.Figure, title: str, x: str, y: str, *, xaxis: dict | None = None,
            yaxis: dict | None = None, **kwargs) -> go.Figure:
    """The figure's traces with the common layout, given whole (no incremental updates)."""
    layout = {"title": {"text": title}, "xaxis": {"title": {"text": x}, **(xaxis or {})},
              "yaxis": {"title": {"text": y}, **(yaxis or {})}, "height": 520,
              "margin": {"l": 60, "r": 20, "t": 60, "b": 150},
              "legend": {"orientation": "h", "yanchor": "top", "y": -0.2, "x": 0}, **kwargs}
    return _Figure(data=fig.data, layout=layout)


def _finite(value) -> bool:
    return value is not None and math.isfinite(float(value))


def threshold_text(thresholds: np.ndarray) -> list[str]:
    """Hover text of a curve's points: the threshold each one is drawn at."""
    return ["all negative" if not np.isfinite(t) else f"p ≥ {t:.4g}" for t in thresholds]


# ------------------------------------------------------------------------- ROC and PR
def curve_name(curve: str, area: str, value: float | None) -> str:
    """Legend name of a curve: ``"ROC (AUROC 0.873)"``, or ``"ROC"`` when the area is
    undefined."""
    return curve if value is None or not _finite(value) else f"{curve} ({area} {value:.3f})"


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
        if not (_finite(xv) and _finite(yv)):
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
    fig = _Figure()
    if band is not None:
        fig.add_trace(_Scatter(x=np.r_[band["fpr"], band["fpr"][::-1]],
                               y=np.r_[band["tpr_hi"], band["tpr_lo"][::-1]], fill="toself",
                               mode="lines", line={"width": 0, "shape": "hv"},
                               fillcolor="rgba(76,120,168,0.2)", name="95% band",
                               hoverinfo="skip"))
    fig.add_trace(_Scatter(x=[0, 1], y=[0, 1], mode="lines", name="chance",
                             line={"dash": "dot", "color": "grey"}, hoverinfo="skip"))
    fig.add_trace(_Scatter(x=shown.fpr, y=shown.tpr, mode="lines", name=name,
                             line={"shape": "linear", "color": CURVE_COLOUR},
                             text=threshold_text(shown.thresholds),
                             hovertemplate="FPR %{x:.4f}<br>TPR %{y:.4f}<br>%{text}"))
    for pt, marker, name in point_markers(points, "fpr", "tpr"):
        fig.add_trace(_Scatter(
            x=[pt.fpr], y=[pt.tpr], mode="markers", name=name, marker=marker,
            hovertemplate=f"{name}<br>FPR %{{x:.4f}}<br>TPR %{{y:.4f}}<extra></extra>"))
    return _layout(fig, "ROC curve (all queries)", "False positive rate (1 − specificity)",
                   "True positive rate (sensitivity)", xaxis=_UNIT_RANGE, yaxis=_UNIT_RANGE)


def pr_figure(pr: PrCurve, baseline: float, *, points: Sequence[OperatingPoint] = (),
              auprc: float | None = None, max_points: int = MAX_CURVE_POINTS,
              band: pd.DataFrame | None = None) -> go.Figure:
    """Precision-recall curve with the positive-rate baseline and operating points, and the
    bootstrap band (``Evaluation.pr_band``) when given.

    The curve is drawn as a step (precision is constant between recall levels, as average
    precision counts it).
    """
    shown = simplify(pr, max_points=max_points)
    name = curve_name("PR", "AUPRC", auprc)
    fig = _Figure()
    if band is not None:
        defined = band.dropna()
        fig.add_trace(_Scatter(x=np.r_[defined["recall"], defined["recall"][::-1]],
                               y=np.r_[defined["precision_hi"], defined["precision_lo"][::-1]],
                               fill="toself", mode="lines", line={"width": 0, "shape": "vh"},
                               fillcolor="rgba(76,120,168,0.2)", name="95% band",
                               hoverinfo="skip"))
    fig.add_trace(_Scatter(x=[0, 1], y=[baseline, baseline], mode="lines",
                             name=f"positive rate {baseline:.3f} (random)",
                             line={"dash": "dot", "color": "grey"}, hoverinfo="skip"))
    thresholds = np.r_[shown.thresholds, np.inf][: shown.recall.size]
    fig.add_trace(_Scatter(x=shown.recall, y=shown.precision, mode="lines", name=name,
                             line={"shape": "vh", "color": CURVE_COLOUR},
                             text=threshold_text(thresholds),
                             hovertemplate="recall %{x:.4f}<br>precision %{y:.4f}<br>%{text}"))
    for pt, marker, name in point_markers(points, "tpr", "precision"):
        fig.add_trace(_Scatter(
            x=[pt.tpr], y=[pt.precision], mode="markers", name=name, marker=marker,
            hovertemplate=f"{name}<br>recall %{{x:.4f}}<br>precision %{{y:.4f}}"
                          "<extra></extra>"))
    return _layout(fig, "Precision-recall curve (all queries)", "Recall (sensitivity)",
                   "Precision (PPV)", xaxis=_UNIT_RANGE, yaxis=_UNIT_RANGE)


# ------------------------------------------------------------------------- calibration
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
    fig = _Figure()
    fig.add_trace(_Bar(x=(frame["lo"] + frame["hi"]) / 2, y=frame["count"],
                         width=(frame["hi"] - frame["lo"]) * 0.95, name="queries in bin",
                         marker={"color": "rgba(128,128,128,0.25)"}, yaxis="y2",
                         customdata=np.c_[frame["lo"], frame["hi"]],
                         hovertemplate="bin [%{customdata[0]:.3f}, %{customdata[1]:.3f}]"
                                       "<br>n = %{y}<extra></extra>"))
    fig.add_trace(_Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect calibration",
                             line={"dash": "dot", "color": "grey"}, hoverinfo="skip"))
    fig.add_trace(_Scatter(
        x=filled["mean_confidence"], y=filled["observed_frequency"], mode="lines+markers",
        name="observed (Wilson 95% CI)",
        error_y={"type": "data", "symmetric": False,
                 "array": filled["wilson_hi"] - filled["observed_frequency"],
                 "arrayminus": filled["observed_frequency"] - filled["wilson_lo"]},
        customdata=filled["count"],
        hovertemplate="confidence %{x:.3f}<br>observed %{y:.3f}<br>n = %{customdata}"
                      "<extra></extra>"))
    if smoothed is not None and len(smoothed):
        fig.add_trace(_Scatter(x=np.r_[smoothed["p"], smoothed["p"][::-1]],
                               y=np.r_[smoothed["hi"], smoothed["lo"][::-1]], fill="toself",
                               mode="lines", line={"width": 0},
                               fillcolor="rgba(31,78,121,0.15)", name="smoothed 95% band",
                               hoverinfo="skip"))
        fig.add_trace(_Scatter(x=smoothed["p"], y=smoothed["observed"], mode="lines",
                               name="smoothed (spline)",
                               line={"color": "#1f4e79", "dash": "dash"},
                               hovertemplate="p %{x:.3f}<br>observed %{y:.3f}<extra></extra>"))
    return _layout(fig, title, x_title, y_title, xaxis=_UNIT_RANGE, yaxis=_UNIT_RANGE,
                   yaxis2={"title": {"text": "Queries in bin"}, "overlaying": "y",
                           "side": "right", "showgrid": False,
                           **count_axis(float(np.max(frame["count"].to_numpy(), initial=0)))})


def _nice_step(top: float, ticks: int = 5) -> int:
    """An integer tick step of 1, 2 or 5 times a power of ten giving at most ``ticks`` steps
    up to ``top`` (at least 1: counts have no fractional ticks)."""
    if not top > ticks:
        return 1
    raw = top / ticks
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if factor * power >= raw:
            return int(factor * power)
    return int(10 * power)  # pragma: no cover - the loop always returns


def count_axis(top: float) -> dict:
    """Axis settings for counts: from 0, integer ticks with thousands separators
    (``1,000`` rather than ``1k``), a round step and head room above ``top``."""
    step = _nice_step(top)
    end = max(step, math.ceil(top * 1.05 / step) * step)
    return {"range": [0, end], "tick0": 0, "dtick": step, "tickmode": "linear",
            "tickformat": ",d", "rangemode": "tozero"}


def _reliability_frame(table) -> pd.DataFrame:
    if isinstance(table, pd.DataFrame):
        return table.reset_index(drop=True)
    columns = ("lo", "hi", "count", "mean_confidence", "observed_frequency", "wilson_lo",
               "wilson_hi")
    return pd.DataFrame({c: np.asarray(getattr(table, c)) for c in columns})


# ----------------------------------------------------------------------------- gate
def gate_grid_heatmap(grid: pd.DataFrame, current: tuple[float, float], *,
                      metric: str = "screening_sensitivity",
                      target: tuple[str, float] | None = None) -> go.Figure:
    """Heatmap of one gate metric over the (τ_neg, τ_pos) grid with the current choice marked.

    ``grid`` comes from :meth:`metrics_core.report.Evaluator.gate_grid` (cells with
    τ_neg > τ_pos are absent and stay blank). ``target`` is ``(operator, value)`` of the
    metric's target (e.g. ``(">=", 0.995)``): a contour line is drawn at the value and the
    cells that meet it are outlined; the legend says how many do.
    """
    table = grid.pivot_table(index="tau_pos", columns="tau_neg", values=metric,
                             aggfunc="first", dropna=False)
    title = GRID_METRICS.get(metric, metric)
    fig = _Figure()
    fig.add_trace(_Heatmap(
        x=table.columns.to_numpy(dtype=float), y=table.index.to_numpy(dtype=float),
        z=table.to_numpy(dtype=float), colorscale="Viridis", name=title,
        colorbar={"title": {"text": title.split(" (")[0]}},
        hovertemplate="τ_neg %{x:.3g}<br>τ_pos %{y:.3g}<br>" + title.split(" (")[0]
                      + " %{z:.4f}<extra></extra>"))
    if target is not None:
        _add_target_lines(fig, table, target)
    fig.add_trace(_Scatter(
        x=[float(current[0])], y=[float(current[1])], mode="markers",
        name=f"current (τ_neg {current[0]:g}, τ_pos {current[1]:g})",
        marker={"symbol": "x", "size": 14, "color": "white",
                "line": {"width": 2, "color": "black"}}))
    return _layout(fig, f"{title} over (τ_neg, τ_pos)", "τ_neg (screen-out threshold)",
                   "τ_pos (alert threshold)")


_MEETS = MappingProxyType({">=": np.greater_equal, ">": np.greater, "<=": np.less_equal,
                           "<": np.less})


def _add_target_lines(fig: go.Figure, table: pd.DataFrame, target: tuple[str, float]) -> None:
    """The contour at the target value and the outline of the cells meeting the target."""
    op, value = target[0], float(target[1])
    if op not in _MEETS:
        raise ValueError(f"target operator must be one of {sorted(_MEETS)}, got {op!r}")
    x = table.columns.to_numpy(dtype=float)
    y = table.index.to_numpy(dtype=float)
    z = table.to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        meets = _MEETS[op](z, value) & np.isfinite(z)
    n_meet, n_cells = int(meets.sum()), int(np.isfinite(z).sum())
    fig.add_trace(go.Contour(
        x=x, y=y, z=z, name=f"target {op} {value:g} (line)", showscale=False,
        contours={"coloring": "none", "start": value, "end": value, "size": 1,
                  "showlabels": True, "labelfont": {"color": "black", "size": 12}},
        # Black dashes: the targets sit at the high (yellow) end of the colour scale.
        line={"color": "black", "width": 2, "dash": "dash"}, hoverinfo="skip",
        showlegend=True))
    # Outline of the meeting cells: the edges between a meeting and a non-meeting cell.
    xe, ye = _cell_edges(x), _cell_edges(y)
    sx: list[float | None] = []
    sy: list[float | None] = []
    padded = np.pad(meets, 1, constant_values=False)
    for i in range(meets.shape[0]):
        for j in range(meets.shape[1]):
            if not meets[i, j]:
                continue
            r, c = i + 1, j + 1
            if not padded[r - 1, c]:
                sx += [xe[j], xe[j + 1], None]
                sy += [ye[i], ye[i], None]
            if not padded[r + 1, c]:
                sx += [xe[j], xe[j + 1], None]
                sy += [ye[i + 1], ye[i + 1], None]
            if not padded[r, c - 1]:
                sx += [xe[j], xe[j], None]
                sy += [ye[i], ye[i + 1], None]
            if not padded[r, c + 1]:
                sx += [xe[j + 1], xe[j + 1], None]
                sy += [ye[i], ye[i + 1], None]
    fig.add_trace(_Scatter(
        x=sx, y=sy, mode="lines", line={"color": "#e45756", "width": 2},
        name=f"meets target {op} {value:g}: {n_meet:,} of {n_cells:,} cells",
        hoverinfo="skip"))


def _cell_edges(centres: np.ndarray) -> np.ndarray:
    """Cell boundaries halfway between neighbouring grid values (as the heatmap draws them)."""
    if centres.size == 1:
        return np.array([centres[0] - 0.025, centres[0] + 0.025])
    mid = (centres[1:] + centres[:-1]) / 2
    return np.r_[2 * centres[0] - mid[0], mid, 2 * centres[-1] - mid[-1]]


# ------------------------------------------------------------------------- dynamic-K
def k_histogram(k: np.ndarray, states: np.ndarray) -> go.Figure:
    """How many queries got each K, one panel per gate state, each with its own count axis.

    Separate panels keep a tall bar (NEG queries at K = 0) from flattening the UNCERTAIN and
    POS bars; the panels share the K axis and each count axis starts at 0 (counts are exact).
    """
    k = np.asarray(k, dtype=np.int64)
    states = np.asarray(states)
    width = int(k.max(initial=0)) + 1
    values = np.arange(width)
    fig = _Figure()
    axes: dict[str, dict] = {}
    annotations = []
    n_panels = len(STATE_NAMES)
    gap = 0.1
    height = (1 - gap * (n_panels - 1)) / n_panels
    for code, name in enumerate(STATE_NAMES):
        counts = np.bincount(k[states == code], minlength=width)
        axis = "y" if code == 0 else f"y{code + 1}"
        fig.add_trace(_Bar(x=values, y=counts, name=name, yaxis=axis,
                           marker={"color": _STATE_COLOURS[name]},
                           hovertemplate=f"{name}<br>K = %{{x}}<br>%{{y:,}} queries"
                                         "<extra></extra>"))
        top = 1 - code * (height + gap)
        axes["yaxis" if code == 0 else f"yaxis{code + 1}"] = {
            "domain": [max(0.0, round(top - height, 6)), min(1.0, round(top, 6))],
            "anchor": "x",
            "title": {"text": "Queries"}, **count_axis(float(counts.max(initial=0)))}
        annotations.append({"text": f"<b>{name}</b>: {int(counts.sum()):,} queries",
                            "xref": "paper", "yref": "paper", "x": 0, "y": top,
                            "xanchor": "left", "yanchor": "bottom", "showarrow": False})
    yaxis = axes.pop("yaxis")
    return _layout(fig, "Selected K by gate state (one panel per state, own count axis)",
                   "Selected K (sentences extracted)", "Queries",
                   xaxis={"dtick": 1, "anchor": f"y{n_panels}"},
                   yaxis=yaxis, annotations=annotations, height=640, **axes)


def gamma_sweep_figure(sweep: pd.DataFrame) -> go.Figure:
    """Evidence recall against workload per 1,000 queries for each γ (current one marked).

    ``sweep`` comes from :meth:`metrics_core.report.Evaluator.gamma_sweep`. Each γ is its own
    legend entry (no text on the chart, which would overlap when points are close); the line
    joins the γ values in order.
    """
    sweep = sweep.sort_values("gamma").reset_index(drop=True)
    fig = _Figure()
    fig.add_trace(_Scatter(
        x=sweep["workload_per_1000"], y=sweep["evidence_recall"], mode="lines",
        name="γ sweep (in order of γ)", line={"color": "lightgrey"}, hoverinfo="skip"))
    colours = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#b279a2", "#9d755d", "#72b7b2")
    for i, row in sweep.iterrows():
        current = bool(row.get("current", False))
        gamma = float(row["gamma"])
        fig.add_trace(_Scatter(
            x=[row["workload_per_1000"]], y=[row["evidence_recall"]], mode="markers",
            name=f"γ = {gamma:g}" + (" (current)" if current else ""),
            marker={"size": 16 if current else 11, "symbol": "star" if current else "circle",
                    "color": colours[i % len(colours)], "line": {"width": 1, "color": "black"}},
            customdata=[[gamma, row["mean_k"]]],
            hovertemplate="γ %{customdata[0]:g}<br>sentences per 1,000 queries %{x:.1f}"
                          "<br>evidence recall %{y:.3f}<br>mean K %{customdata[1]:.2f}"
                          "<extra></extra>"))
    return _layout(fig, "Evidence recall vs workload (γ sweep)",
                   "Sentences to read per 1,000 queries", "Evidence recall")


# ------------------------------------------------------------------------- breakdowns
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
    custom = [[h, f"{round(float(c)):,}" if _finite(c) else "—"]
              for h, c in zip(hover, counts, strict=True)]
    fig = _Figure()
    fig.add_trace(_Scatter(x=ticks, y=values, mode="markers", name=label, error_y=error,
                             marker={"size": 11}, customdata=custom or None,
                             hovertemplate="%{customdata[0]}<br>" + label + " %{y:.4f}"
                                           "<br>n = %{customdata[1]}<extra></extra>"))
    for row, dash in (("micro", "dash"), ("macro", "dot")):
        if row in table.index and _finite(table.loc[row, metric]):
            value = float(table.loc[row, metric])
            fig.add_trace(_Scatter(x=[ticks[0], ticks[-1]] if ticks else [], y=[value, value],
                                     mode="lines", name=f"{row} {value:.4f}",
                                     line={"dash": dash, "color": "grey"}))
    if names_of:  # names below the codes: the legend goes above the chart
        return _layout(fig, f"{label} by criterion", "", label,
                       margin={"l": 60, "r": 20, "t": 100, "b": 110},
                       legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
                       xaxis={"tickangle": 0})
    return _layout(fig, f"{label} by criterion", "Criterion", label)


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
    fig = _Figure()
    for name, v, _, _ in boxes:
        q1, median, q3 = np.percentile(v, [25, 50, 75])
        fig.add_trace(_Box(name=name, x=[name], q1=[q1], median=[median], q3=[q3],
                           lowerfence=[v.min()], upperfence=[v.max()], mean=[v.mean()],
                           boxpoints=False, showlegend=False))
    names = [name for name, *_ in shares]
    parts = (("queries at 0", "#bab0ac", [z for *_, z, _ in shares]),
             ("queries in between", "#9ecae9", [1 - z - o for *_, z, o in shares]),
             ("queries at 1", "#4c78a8", [o for *_, o in shares]))
    for label, colour, share in parts:
        if not names:
            break
        fig.add_trace(_Bar(x=names, y=share, name=label, marker={"color": colour},
                           xaxis="x2", yaxis="y2",
                           hovertemplate="%{x}<br>" + label + ": %{y:.1%}<extra></extra>"))
    if names:
        means = np.array([v.mean() for _, v, _, _ in shares])
        lo = np.array([(intervals.get(n) or (np.nan, np.nan))[0] for n in names], dtype=float)
        hi = np.array([(intervals.get(n) or (np.nan, np.nan))[1] for n in names], dtype=float)
        fig.add_trace(_Scatter(
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
    return _layout(fig, title, "Metric (box: quartiles, mean dashed, whiskers min-max)",
                   y_title, xaxis=x_axis, yaxis={"visible": bool(boxes)}, **layout)


# ---------------------------------------------------------------------- decision curve
def decision_curve_figure(curve: pd.DataFrame, *, tau_pos: float | None = None) -> go.Figure:
    """Net benefit of the model, treat-all and treat-none against the threshold probability.

    ``curve`` is ``Evaluation.decision_curve``; its band columns (``net_benefit_ci_lo`` /
    ``_hi``) are drawn when present; ``tau_pos`` is marked with a vertical line.
    """
    fig = _Figure()
    t = curve["threshold"]
    if "net_benefit_ci_lo" in curve:
        fig.add_trace(_Scatter(x=np.r_[t, t[::-1]],
                               y=np.r_[curve["net_benefit_ci_hi"],
                                       curve["net_benefit_ci_lo"][::-1]],
                               fill="toself", mode="lines", line={"width": 0},
                               fillcolor="rgba(76,120,168,0.2)", name="model 95% band",
                               hoverinfo="skip"))
    fig.add_trace(_Scatter(x=t, y=curve["net_benefit"], mode="lines", name="model",
                           line={"color": "#4c78a8", "width": 2},
                           hovertemplate="threshold %{x:.2f}<br>net benefit %{y:.4f}"
                                         "<extra></extra>"))
    fig.add_trace(_Scatter(x=t, y=curve["net_benefit_treat_all"], mode="lines",
                           name="treat all", line={"color": "#f58518", "dash": "dash"}))
    fig.add_trace(_Scatter(x=t, y=curve["net_benefit_treat_none"], mode="lines",
                           name="treat none", line={"color": "grey", "dash": "dot"}))
    finite = curve["net_benefit"].to_numpy(dtype=float)
    top = float(np.nanmax(finite)) if np.isfinite(finite).any() else 0.0
    fig = _layout(fig, "Decision curve", "Threshold probability", "Net benefit",
                  xaxis={"range": [0, 1]},
                  yaxis={"range": [min(-0.05, -abs(top) * 0.2), max(top * 1.1, 0.05)]})
    if tau_pos is not None:
        fig.add_vline(x=tau_pos, line={"color": "#e45756", "dash": "dash"},
                      annotation={"text": f"τ_pos = {tau_pos:g}"})
    return fig


# ------------------------------------------------------------------------ compare runs
_RUN_COLOURS = ("#4c78a8", "#e45756", "#54a24b", "#f58518", "#b279a2", "#9d755d")


def overlay_roc_figure(curves: Mapping[str, RocCurve], aurocs: Mapping[str, float | None],
                       *, max_points: int = MAX_CURVE_POINTS) -> go.Figure:
    """The ROC curves of several runs on one chart (run names are shown as text)."""
    fig = _Figure()
    fig.add_trace(_Scatter(x=[0, 1], y=[0, 1], mode="lines", name="chance",
                           line={"dash": "dot", "color": "grey"}, hoverinfo="skip"))
    for i, (name, roc) in enumerate(curves.items()):
        shown = simplify(roc, max_points=max_points)
        auc = aurocs.get(name)
        label = escape_plotly(name) + ("" if auc is None else f" (AUROC {auc:.3f})")
        fig.add_trace(_Scatter(x=shown.fpr, y=shown.tpr, mode="lines", name=label,
                               line={"color": _RUN_COLOURS[i % len(_RUN_COLOURS)]}))
    return _layout(fig, "ROC curves of the runs", "False positive rate", "True positive rate",
                   xaxis=_UNIT_RANGE, yaxis=_UNIT_RANGE)


def overlay_decision_figure(curves: Mapping[str, pd.DataFrame]) -> go.Figure:
    """Net benefit of several runs, with treat-all and treat-none (same data, same axes)."""
    fig = _Figure()
    first = next(iter(curves.values()))
    for i, (name, curve) in enumerate(curves.items()):
        fig.add_trace(_Scatter(x=curve["threshold"], y=curve["net_benefit"], mode="lines",
                               name=escape_plotly(name),
                               line={"color": _RUN_COLOURS[i % len(_RUN_COLOURS)]}))
    fig.add_trace(_Scatter(x=first["threshold"], y=first["net_benefit_treat_all"],
                           mode="lines", name="treat all", line={"dash": "dash", "color": "grey"}))
    fig.add_trace(_Scatter(x=first["threshold"], y=first["net_benefit_treat_none"],
                           mode="lines", name="treat none", line={"dash": "dot", "color": "grey"}))
    top = max(float(np.nanmax(c["net_benefit"])) for c in curves.values())
    return _layout(fig, "Decision curves of the runs", "Threshold probability", "Net benefit",
                   xaxis={"range": [0, 1]},
                   yaxis={"range": [min(-0.05, -abs(top) * 0.2), max(top * 1.1, 0.05)]})


def forest_figure(rows: pd.DataFrame, *, title: str) -> go.Figure:
    """Differences (run − reference) with their 95% intervals, one row per subset."""
    labels = [escape_plotly(s) for s in rows["subset"]]
    diff = rows["difference"].to_numpy(dtype=float)
    lo = np.array([np.nan if c is None else c[0] for c in rows["ci95"]], dtype=float)
    hi = np.array([np.nan if c is None else c[1] for c in rows["ci95"]], dtype=float)
    fig = _Figure()
    fig.add_trace(_Scatter(x=diff, y=labels, mode="markers", name="difference",
                           marker={"size": 10, "color": "#4c78a8"},
                           error_x={"type": "data", "symmetric": False, "array": hi - diff,
                                    "arrayminus": diff - lo}))
    fig = _layout(fig, title, "Difference (run − reference)", "",
                  yaxis={"autorange": "reversed"})
    fig.add_vline(x=0, line={"color": "grey", "dash": "dot"})
    return fig


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
    fig = _Figure()
    for name, mask, color in (("cohort", ~flagged, "#4c78a8"),
                              ("flagged disparity", flagged, "#d62728")):
        if not mask.any():
            continue
        fig.add_trace(_Scatter(
            x=est[mask], y=[t for t, m in zip(labels, mask, strict=True) if m],
            mode="markers", name=name,
            marker={"size": 11, "color": color, "symbol": [
                "circle-open" if s else "circle" for s in small[mask]]},
            error_x={"type": "data", "symmetric": False, "array": (hi - est)[mask],
                     "arrayminus": (est - lo)[mask]}))
    label = label or metric
    fig = _layout(fig, f"{label} per cohort (95% CI)", label, "",
                  yaxis={"autorange": "reversed", "categoryorder": "array",
                         "categoryarray": labels})
    if _finite(overall):
        fig.add_vline(x=float(overall), line={"color": "grey", "dash": "dot"},
                      annotation_text=f"overall {float(overall):.3f}")
    return fig


def overlay_pr_figure(curves: Mapping[str, PrCurve], auprcs: Mapping[str, float | None],
                      baseline: float, *, max_points: int = MAX_CURVE_POINTS) -> go.Figure:
    """The precision-recall curves of several runs, with the positive rate as baseline."""
    fig = _Figure()
    fig.add_trace(_Scatter(x=[0, 1], y=[baseline, baseline], mode="lines",
                           name=f"positive rate {baseline:.3f}", hoverinfo="skip",
                           line={"dash": "dot", "color": "grey"}))
    for i, (name, pr) in enumerate(curves.items()):
        shown = simplify(pr, max_points=max_points)
        auc = auprcs.get(name)
        label = escape_plotly(name) + ("" if auc is None else f" (AUPRC {auc:.3f})")
        fig.add_trace(_Scatter(x=shown.recall, y=shown.precision, mode="lines", name=label,
                               line={"shape": "vh",
                                     "color": _RUN_COLOURS[i % len(_RUN_COLOURS)]}))
    return _layout(fig, "Precision-recall curves of the runs", "Recall", "Precision",
                   xaxis=_UNIT_RANGE, yaxis=_UNIT_RANGE)


def overlay_reliability_figure(tables: Mapping[str, object]) -> go.Figure:
    """Observed frequency against mean predicted probability per bin, one line per run."""
    fig = _Figure()
    fig.add_trace(_Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect calibration",
                           line={"dash": "dot", "color": "grey"}, hoverinfo="skip"))
    for i, (name, t) in enumerate(tables.items()):
        keep = np.asarray(t.count) > 0
        fig.add_trace(_Scatter(x=np.asarray(t.mean_confidence)[keep],
                               y=np.asarray(t.observed_frequency)[keep], mode="lines+markers",
                               name=f"{escape_plotly(name)} (ECE {t.ece:.3f})",
                               line={"color": _RUN_COLOURS[i % len(_RUN_COLOURS)]}))
    return _layout(fig, "Reliability of the runs", "Mean predicted probability",
                   "Observed share with evidence", xaxis=_UNIT_RANGE, yaxis=_UNIT_RANGE)


def gate_flow_figure(gate) -> go.Figure:
    """The flow of queries through the gate to the gold outcome (STARD-style), as a Sankey
    diagram: all queries -> NEG / UNCERTAIN / POS -> with / without evidence (exact counts)."""
    states = list(STATE_NAMES)
    labels = [f"all queries ({gate.n:,})",
              *(f"{s} ({sum(c):,})" for s, c in zip(states, gate.label_counts, strict=True)),
              f"with evidence ({gate.n_pos:,})", f"without evidence ({gate.n - gate.n_pos:,})"]
    source, target, value, colour = [], [], [], []
    for i, (neg, pos) in enumerate(gate.label_counts):
        source += [0, 1 + i, 1 + i]
        target += [1 + i, 4, 5]
        value += [neg + pos, pos, neg]
        colour += [_STATE_COLOURS[states[i]], "rgba(228,87,86,0.35)", "rgba(76,120,168,0.35)"]
    fig = _Figure(data=[go.Sankey(
        node={"label": labels, "pad": 18, "thickness": 16,
              "color": ["#888", *(_STATE_COLOURS[s] for s in states), "#e45756", "#4c78a8"]},
        link={"source": source, "target": target, "value": value, "color": colour})])
    return _layout(fig, "Queries through the gate to the gold outcome", "", "",
                   xaxis={"visible": False}, yaxis={"visible": False})


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
    fig = _Figure()
    if math.isfinite(mean):
        ends = [names[0], names[-1]] if names else []
        std_text = f" ± {std:.3f}" if math.isfinite(std) else ""
        if math.isfinite(std):
            fig.add_trace(_Scatter(
                x=[*ends, *ends[::-1]], y=[mean + std, mean + std, mean - std, mean - std],
                fill="toself", mode="lines", line={"width": 0},
                fillcolor="rgba(245,133,24,0.2)", name="mean ± std (ddof = 0)",
                hoverinfo="skip"))
        fig.add_trace(_Scatter(x=ends, y=[mean, mean], mode="lines",
                               name=f"mean {mean:.3f}{std_text}",
                               line={"color": "#f58518", "width": 2}))
    pooled = row["pooled"].iloc[0] if "pooled" in row else None
    if _finite(pooled):
        fig.add_trace(_Scatter(x=[names[0], names[-1]] if names else [],
                               y=[float(pooled)] * 2, mode="lines",
                               name=f"pooled {float(pooled):.3f}",
                               line={"color": "grey", "dash": "dot"}))
    # The folds last, so the band never covers a point.
    fig.add_trace(_Scatter(x=names, y=values, mode="markers", name=f"{label} per fold",
                           marker={"size": 12, "color": "#4c78a8",
                                   "line": {"width": 1, "color": "black"}},
                           hovertemplate="%{x}<br>" + label + " %{y:.3f}<extra></extra>"))
    return _layout(fig, f"{label} per fold (mean ± std over folds)", "Fold", label,
                   xaxis={"categoryorder": "array", "categoryarray": names})


# ------------------------------------------------------------------------ risk–coverage
def risk_coverage_figure(curve: Mapping, *, title: str = "Risk–coverage") -> go.Figure:
    """The risk–coverage curve of a classifier that may abstain (contract §6), from the
    ``to_dict`` of :class:`metrics_core.metrics.risk_coverage.RiskCoverage` (a run's
    ``gate_risk_coverage``, a triage report's ``risk_coverage``), with the gate's own operating
    point when ``curve["gate"]`` holds one. The legend names AURC and E-AURC."""
    fig = _Figure()
    aurc, excess = curve.get("aurc"), curve.get("excess_aurc")
    name = "model" if aurc is None else f"model (AURC {aurc:.4f}, E-AURC {excess:.4f})"
    fig.add_trace(_Scatter(x=curve["curve"]["coverage"], y=curve["curve"]["risk"],
                           mode="lines", name=name, line={"color": "#4c78a8", "width": 2},
                           hovertemplate="coverage %{x:.3f}<br>risk %{y:.4f}<extra></extra>"))
    point = curve.get("gate")
    if point and point.get("risk") is not None:
        fig.add_trace(_Scatter(x=[point["coverage"]], y=[point["risk"]], mode="markers",
                               name=f"gate (τ_neg {point['tau_neg']:g}, τ_pos "
                                    f"{point['tau_pos']:g})",
                               marker={"color": "#e45756", "size": 10, "symbol": "diamond"}))
    return _layout(fig, title, "Coverage (share answered)", "Risk (errors among answered)",
                   xaxis={"range": [0, 1]})
