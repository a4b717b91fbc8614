"""The three-state gate and what follows it: the (τ_neg, τ_pos) grid, the flow of queries
through the gate, the risk–coverage curve, and the dynamic K (its histogram by gate state and
the γ sweep)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from metrics_core import registry
from metrics_core.report.figures.style import (
    STATE_COLOURS,
    STATE_NAMES,
    Bar,
    Figure,
    Heatmap,
    Scatter,
    count_axis,
    with_layout,
)

__all__ = [
    "GRID_METRICS",
    "gamma_sweep_figure",
    "gate_flow_figure",
    "gate_grid_heatmap",
    "k_histogram",
    "risk_coverage_figure",
]

#: The gate metrics the (τ_neg, τ_pos) grid can show, and their labels.
GRID_METRICS = MappingProxyType({name: registry.label(name) for name in (
    "screening_sensitivity", "alert_precision", "review_rate", "screening_fn_per_1000",
    "pos_rate", "neg_rate")})


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
    fig = Figure()
    fig.add_trace(Heatmap(
        x=table.columns.to_numpy(dtype=float), y=table.index.to_numpy(dtype=float),
        z=table.to_numpy(dtype=float), colorscale="Viridis", name=title,
        colorbar={"title": {"text": title.split(" (")[0]}},
        hovertemplate="τ_neg %{x:.3g}<br>τ_pos %{y:.3g}<br>" + title.split(" (")[0]
                      + " %{z:.4f}<extra></extra>"))
    if target is not None:
        _add_target_lines(fig, table, target)
    fig.add_trace(Scatter(
        x=[float(current[0])], y=[float(current[1])], mode="markers",
        name=f"current (τ_neg {current[0]:g}, τ_pos {current[1]:g})",
        marker={"symbol": "x", "size": 14, "color": "white",
                "line": {"width": 2, "color": "black"}}))
    return with_layout(fig, f"{title} over (τ_neg, τ_pos)", "τ_neg (screen-out threshold)",
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
    fig.add_trace(Scatter(
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
    fig = Figure()
    axes: dict[str, dict] = {}
    annotations = []
    n_panels = len(STATE_NAMES)
    gap = 0.1
    height = (1 - gap * (n_panels - 1)) / n_panels
    for code, name in enumerate(STATE_NAMES):
        counts = np.bincount(k[states == code], minlength=width)
        axis = "y" if code == 0 else f"y{code + 1}"
        fig.add_trace(Bar(x=values, y=counts, name=name, yaxis=axis,
                          marker={"color": STATE_COLOURS[name]},
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
    return with_layout(fig, "Selected K by gate state (one panel per state, own count axis)",
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
    fig = Figure()
    fig.add_trace(Scatter(
        x=sweep["workload_per_1000"], y=sweep["evidence_recall"], mode="lines",
        name="γ sweep (in order of γ)", line={"color": "lightgrey"}, hoverinfo="skip"))
    colours = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#b279a2", "#9d755d", "#72b7b2")
    for i, row in sweep.iterrows():
        current = bool(row.get("current", False))
        gamma = float(row["gamma"])
        fig.add_trace(Scatter(
            x=[row["workload_per_1000"]], y=[row["evidence_recall"]], mode="markers",
            name=f"γ = {gamma:g}" + (" (current)" if current else ""),
            marker={"size": 16 if current else 11, "symbol": "star" if current else "circle",
                    "color": colours[i % len(colours)], "line": {"width": 1, "color": "black"}},
            customdata=[[gamma, row["mean_k"]]],
            hovertemplate="γ %{customdata[0]:g}<br>sentences per 1,000 queries %{x:.1f}"
                          "<br>evidence recall %{y:.3f}<br>mean K %{customdata[1]:.2f}"
                          "<extra></extra>"))
    return with_layout(fig, "Evidence recall vs workload (γ sweep)",
                       "Sentences to read per 1,000 queries", "Evidence recall")


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
        colour += [STATE_COLOURS[states[i]], "rgba(228,87,86,0.35)", "rgba(76,120,168,0.35)"]
    fig = Figure(data=[go.Sankey(
        node={"label": labels, "pad": 18, "thickness": 16,
              "color": ["#888", *(STATE_COLOURS[s] for s in states), "#e45756", "#4c78a8"]},
        link={"source": source, "target": target, "value": value, "color": colour})])
    return with_layout(fig, "Queries through the gate to the gold outcome", "", "",
                       xaxis={"visible": False}, yaxis={"visible": False})


# ------------------------------------------------------------------------ risk–coverage
def risk_coverage_figure(curve: Mapping, *, title: str = "Risk–coverage") -> go.Figure:
    """The risk–coverage curve of a classifier that may abstain (contract §6), from the
    ``to_dict`` of :class:`metrics_core.metrics.risk_coverage.RiskCoverage` (a run's
    ``gate_risk_coverage``, a triage report's ``risk_coverage``), with the gate's own operating
    point when ``curve["gate"]`` holds one. The legend names AURC and E-AURC."""
    fig = Figure()
    aurc, excess = curve.get("aurc"), curve.get("excess_aurc")
    name = "model" if aurc is None else f"model (AURC {aurc:.4f}, E-AURC {excess:.4f})"
    fig.add_trace(Scatter(x=curve["curve"]["coverage"], y=curve["curve"]["risk"],
                          mode="lines", name=name, line={"color": "#4c78a8", "width": 2},
                          hovertemplate="coverage %{x:.3f}<br>risk %{y:.4f}<extra></extra>"))
    point = curve.get("gate")
    if point and point.get("risk") is not None:
        fig.add_trace(Scatter(x=[point["coverage"]], y=[point["risk"]], mode="markers",
                              name=f"gate (τ_neg {point['tau_neg']:g}, τ_pos "
                                   f"{point['tau_pos']:g})",
                              marker={"color": "#e45756", "size": 10, "symbol": "diamond"}))
    return with_layout(fig, title, "Coverage (share answered)", "Risk (errors among answered)",
                       xaxis={"range": [0, 1]})
