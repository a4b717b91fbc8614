"""Baseline of the slider-latency benchmark: a bare Streamlit app, one slider, one plotly chart.

``streamlit run benchmarks/bare_app.py`` (from the repository root, so that
``.streamlit/config.toml`` applies to it as to the dashboard). The chart's data depend on the
slider: a fixed ROC-like curve and a marker at the chosen threshold, whose legend entry carries
the value (``threshold 0.51``), so the benchmark sees when the new chart is drawn. Nothing else
runs on a rerun: this is the floor of Streamlit's own slider -> rerun -> chart round trip.
"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

#: Legend name of the marker; the benchmark waits for ``f"{MARKER} {value:.2f}"``.
MARKER = "threshold"

st.set_page_config(page_title="Bare slider app", layout="wide")
threshold = st.slider("Threshold", 0.0, 1.0, 0.10, step=0.01, key="threshold")

x = np.linspace(0.0, 1.0, 201)
y = np.sqrt(x)
fig = go.Figure()
fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name="curve"))
fig.add_trace(go.Scatter(x=[threshold], y=[float(np.sqrt(threshold))], mode="markers",
                         name=f"{MARKER} {threshold:.2f}", marker={"size": 12}))
fig.update_layout(height=520, legend={"orientation": "h", "y": -0.2})
st.plotly_chart(fig, key="chart")
