"""What every figure shares: the escaping of text, the layout, the colours and axes of counts.

Figures and traces are built without plotly's per-property validation (:data:`Figure`,
:data:`Scatter`, ...): that validation costs about four times the construction itself on every
slider move. Properties are therefore always given in their full form (titles as
``{"text": ...}``); the chart tests check the resulting figures.
"""

from __future__ import annotations

import math
import re
from functools import partial
from types import MappingProxyType

import plotly.graph_objects as go

from metrics_core import registry
from metrics_core.bidi import neutralise_bidi

__all__ = [
    "MAX_CURVE_POINTS",
    "STATE_COLOURS",
    "STATE_NAMES",
    "UNIT_RANGE",
    "Bar",
    "Box",
    "Figure",
    "Heatmap",
    "Scatter",
    "count_axis",
    "escape_plotly",
    "finite",
    "with_layout",
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
#: The colour of each gate state.
STATE_COLOURS = MappingProxyType({"NEG": "#4c78a8", "UNCERTAIN": "#f58518", "POS": "#e45756"})


#: A figure and its traces, built without plotly's validation (see the module's docstring).
Figure = partial(go.Figure, _validate=False)
Scatter = partial(go.Scatter, _validate=False)
Bar = partial(go.Bar, _validate=False)
Heatmap = partial(go.Heatmap, _validate=False)
Box = partial(go.Box, _validate=False)
#: The axis range of a share or a probability, with room for the markers at 0 and 1.
UNIT_RANGE = MappingProxyType({"range": [-0.01, 1.01]})


def with_layout(fig: go.Figure, title: str, x: str, y: str, *, xaxis: dict | None = None,
                yaxis: dict | None = None, **kwargs) -> go.Figure:
    """The figure's traces with the common layout, given whole (no incremental updates)."""
    layout = {"title": {"text": title}, "xaxis": {"title": {"text": x}, **(xaxis or {})},
              "yaxis": {"title": {"text": y}, **(yaxis or {})}, "height": 520,
              "margin": {"l": 60, "r": 20, "t": 60, "b": 150},
              "legend": {"orientation": "h", "yanchor": "top", "y": -0.2, "x": 0}, **kwargs}
    return Figure(data=fig.data, layout=layout)


def finite(value) -> bool:
    """Whether ``value`` is a number to draw (not ``None``, NaN or infinite)."""
    return value is not None and math.isfinite(float(value))


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

