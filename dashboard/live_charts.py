"""ROC and precision-recall charts that follow a slider: Vega-Lite specifications whose curves
stay drawn while only the operating points change.

A plotly chart in Streamlit is drawn anew whenever its figure changes: every move of the gate
slider re-created both figures in the browser, curves and all (75 ms of the ~200 ms a move
took). A Vega-Lite chart whose specification is unchanged has its named data sets updated in
place instead, and only those whose bytes changed. Here the specification and the data sets of
the curve, its band and its reference line depend on the evaluation only; the operating
points, a data set of at most three rows, are all that a slider move sends and redraws.

What is drawn is what :func:`metrics_core.report.figures.curves.roc_figure` and
:func:`metrics_core.report.figures.curves.pr_figure` draw (the same thinned curve, band,
reference line, operating points, names and legend entries); those plotly figures remain the ones
exported to files.

The frames that depend on the evaluation only are made once per curve and band (kept while
those objects live) and serialised once (:func:`dashboard.chart_data.arrow_datasets`): a move
builds and serialises the three rows of its operating points alone, where it used to rebuild
and serialise every curve's hover texts.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

import numpy as np
import pandas as pd

from dashboard.chart_data import ByObject
from metrics_core.metrics.classification import PrCurve, RocCurve
from metrics_core.report.figures.curves import (
    POINT_COLOURS,
    POINT_SIZES,
    POINT_SYMBOLS,
    OperatingPoint,
    curve_name,
    point_markers,
    threshold_text,
)
from metrics_core.report.figures.style import MAX_CURVE_POINTS
from metrics_core.report.thinning import simplify

__all__ = ["pr_chart", "roc_chart"]


#: Plotly marker symbols -> Vega symbol shapes.
_SHAPES = MappingProxyType({"circle": "circle", "diamond": "diamond", "square": "square",
                            "triangle-up": "triangle-up", "x": "cross"})
_CURVE = "#4c78a8"
_BAND = "rgba(76,120,168,0.2)"
_REFERENCE = "grey"
#: Off the drawn area (marks are clipped to it): where an undefined operating point goes.
_OFF = -1.0


def _kept(kept: ByObject | None, obj, key, make):
    """``make()``, kept in ``kept`` by ``obj`` and ``key`` when given."""
    return make() if kept is None else kept.get(obj, key, make)


def _points(points: Sequence[OperatingPoint], x: str, y: str) -> pd.DataFrame:
    """One row per operating point: position, legend name and drawing order.

    Every point has a row, so the i-th point keeps the i-th colour, symbol and size whatever
    the others are (the scales map the names in this order). A point that cannot be drawn
    (an undefined coordinate) sits off the drawn area and its legend entry says why.
    """
    drawn = point_markers(points, x, y)  # the drawable points, in order, with their names
    rows = []
    for i, pt in enumerate(points):
        name = None
        if drawn and drawn[0][0] is pt:
            name = drawn.pop(0)[2]
        if name is None:
            rows.append({"x": _OFF, "y": _OFF, "order": i,
                         "name": f"{pt.label} (p ≥ {pt.threshold:g}): undefined, not drawn"})
        else:
            rows.append({"x": float(getattr(pt, x)), "y": float(getattr(pt, y)),
                         "order": i, "name": name})
    return pd.DataFrame(rows, columns=["x", "y", "name", "order"])


def _spec(title: str, x_title: str, y_title: str, *, curve: pd.DataFrame, curve_label: str,
          interpolate: str, band_interpolate: str, band: pd.DataFrame | None,
          reference: pd.DataFrame, reference_label: str, points: pd.DataFrame, x_name: str,
          y_name: str) -> dict:
    """The layered specification; ``datasets`` holds the frames (Streamlit sends them apart)."""
    series = [label for label, present in (("95% band", band is not None),
                                            (reference_label, True), (curve_label, True))
              if present]
    colours = [c for c, present in ((_BAND, band is not None), (_REFERENCE, True),
                                    (_CURVE, True)) if present]
    legend_colour = {"field": "series", "type": "nominal", "title": None,
                     "scale": {"domain": series, "range": colours},
                     "legend": {"orient": "top", "direction": "horizontal"}}
    by_name = {"field": "name", "type": "nominal", "title": None,
               "sort": {"field": "order", "op": "min"}}
    unit = {"domain": [-0.01, 1.01], "nice": False, "zero": False}
    x = {"field": "x", "type": "quantitative", "title": x_title, "scale": unit}
    y = {"field": "y", "type": "quantitative", "title": y_title, "scale": unit}
    layers = []
    datasets = {"curve": curve, "reference": reference, "points": points}
    if band is not None:
        datasets["band"] = band
        layers.append({"data": {"name": "band"},
                       "mark": {"type": "area", "interpolate": band_interpolate, "opacity": 1},
                       "encoding": {"x": x, "y": {**y, "field": "lo"}, "y2": {"field": "hi"},
                                    "color": legend_colour}})
    layers += [
        {"data": {"name": "reference"}, "mark": {"type": "line", "strokeDash": [2, 3]},
         "encoding": {"x": x, "y": y, "color": legend_colour}},
        {"data": {"name": "curve"}, "mark": {"type": "line", "interpolate": interpolate},
         "encoding": {"x": x, "y": y, "color": legend_colour}},
        # The curve's points, invisible, carry its hover text (threshold and coordinates).
        {"data": {"name": "curve"}, "mark": {"type": "point", "opacity": 0, "size": 30},
         "encoding": {"x": x, "y": y, "tooltip": [
             {"field": "x", "type": "quantitative", "title": x_name, "format": ".4f"},
             {"field": "y", "type": "quantitative", "title": y_name, "format": ".4f"},
             {"field": "threshold", "type": "nominal", "title": "threshold"}]}},
        {"data": {"name": "points"},
         "mark": {"type": "point", "filled": True, "opacity": 1, "stroke": "black",
                  "strokeWidth": 1.5, "clip": True},
         "encoding": {
             "x": x, "y": y,
             # fill (not colour): a scale and legend of their own, apart from the lines'
             "fill": {**by_name, "scale": {"range": list(POINT_COLOURS)}},
             "shape": {**by_name, "scale": {"range": [_SHAPES[s] for s in POINT_SYMBOLS]}},
             "size": {**by_name, "scale": {"range": [d * d for d in POINT_SIZES]}},
             "tooltip": [{"field": "name", "type": "nominal", "title": "point"},
                         {"field": "x", "type": "quantitative", "title": x_name,
                          "format": ".4f"},
                         {"field": "y", "type": "quantitative", "title": y_name,
                          "format": ".4f"}]}},
    ]
    return {"title": {"text": title, "anchor": "start"}, "height": 520,
            # SVG: every legend entry is text in the page (read by the browser tests).
            "usermeta": {"embedOptions": {"renderer": "svg"}},
            "datasets": datasets, "layer": layers,
            "config": {"legend": {"orient": "bottom", "direction": "vertical", "labelLimit": 0,
                                  "symbolStrokeWidth": 1.5}}}


def _chance() -> pd.DataFrame:
    """The ROC chart's chance line."""
    return pd.DataFrame({"x": [0.0, 1.0], "y": [0.0, 1.0], "series": "chance"})


def roc_chart(roc: RocCurve, *, points: Sequence[OperatingPoint] = (),
              auroc: float | None = None, max_points: int = MAX_CURVE_POINTS,
              band: pd.DataFrame | None = None, kept: ByObject | None = None) -> dict:
    """The ROC chart of :func:`metrics_core.report.figures.curves.roc_figure` as a Vega-Lite
    specification; ``kept``: where the frames of the curve and band are kept while they live
    (:func:`dashboard.chart_data.session_store`), so the next call with them reuses the frames."""
    label = curve_name("ROC", "AUROC", auroc)

    def make_curve():
        shown = simplify(roc, max_points=max_points)
        return pd.DataFrame({"x": shown.fpr, "y": shown.tpr,
                             "threshold": threshold_text(shown.thresholds), "series": label})

    curve = _kept(kept, roc, ("roc", label, max_points), make_curve)
    lines = None if band is None else _kept(kept, band, "roc_band", lambda: pd.DataFrame({
        "x": band["fpr"].to_numpy(), "lo": band["tpr_lo"].to_numpy(),
        "hi": band["tpr_hi"].to_numpy(), "series": "95% band"}))
    reference = _kept(kept, roc, "chance", _chance)
    return _spec("ROC curve (all queries)", "False positive rate (1 − specificity)",
                 "True positive rate (sensitivity)", curve=curve, curve_label=label,
                 interpolate="linear", band_interpolate="step-after", band=lines,
                 reference=reference, reference_label="chance",
                 points=_points(points, "fpr", "tpr"), x_name="FPR", y_name="TPR")


def pr_chart(pr: PrCurve, baseline: float, *, points: Sequence[OperatingPoint] = (),
             auprc: float | None = None, max_points: int = MAX_CURVE_POINTS,
             band: pd.DataFrame | None = None, kept: ByObject | None = None) -> dict:
    """The precision-recall chart of :func:`metrics_core.report.figures.curves.pr_figure` as a
    Vega-Lite specification (precision drawn as steps: vertical, then horizontal); ``kept`` as in
    :func:`roc_chart`."""
    label = curve_name("PR", "AUPRC", auprc)

    def make_curve():
        shown = simplify(pr, max_points=max_points)
        thresholds = np.r_[shown.thresholds, np.inf][: shown.recall.size]
        return pd.DataFrame({"x": shown.recall, "y": shown.precision,
                             "threshold": threshold_text(thresholds), "series": label})

    def make_band():
        defined = band.dropna()
        return pd.DataFrame({"x": defined["recall"].to_numpy(),
                             "lo": defined["precision_lo"].to_numpy(),
                             "hi": defined["precision_hi"].to_numpy(), "series": "95% band"})

    curve = _kept(kept, pr, ("pr", label, max_points), make_curve)
    lines = None if band is None else _kept(kept, band, "pr_band", make_band)
    reference_label = f"positive rate {baseline:.3f} (random)"
    reference = _kept(kept, pr, ("pr_reference", reference_label), lambda: pd.DataFrame(
        {"x": [0.0, 1.0], "y": [baseline, baseline], "series": reference_label}))
    return _spec("Precision-recall curve (all queries)", "Recall (sensitivity)",
                 "Precision (PPV)", curve=curve, curve_label=label, interpolate="step-before",
                 band_interpolate="step-before", band=lines, reference=reference,
                 reference_label=reference_label, points=_points(points, "tpr", "precision"),
                 x_name="recall", y_name="precision")
