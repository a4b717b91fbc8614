"""Calibration: reliability diagram with Wilson bands and bin counts, ECE, MCE, Brier."""

import streamlit as st

from dashboard import charts, data, display
from metrics_core.config import VARIANT_LABELS

v = data.view()
c = v.config
display.page_header("Calibration", v, caption=(
    f"{VARIANT_LABELS['calibration_view'][c.calibration_view]}; {c.n_bins} "
    f"{VARIANT_LABELS['binning'][c.binning]} (change under *Calibration* in the sidebar)"))
ev = v.evaluation

cols = st.columns(3)
display.metric_tile(cols[0], ev, "ece", "ECE")
display.metric_tile(cols[1], ev, "mce", "MCE")
display.metric_tile(cols[2], ev, "brier", "Brier score")

top = c.calibration_view == "top_label"
display.plot(charts.reliability_figure(
    ev.reliability,
    title="Reliability diagram (top label)" if top else "Reliability diagram",
    x_title="Mean confidence max(p, 1 − p)" if top else "Mean predicted p_has_evidence",
    y_title="Share correct" if top else "Observed share with evidence"),
    key="reliability_chart")
st.subheader("Bins")
display.show_table(ev.reliability_frame(), key="reliability_table")
